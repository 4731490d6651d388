//! Generated kernels as files (`TILEWISE_KERNEL_DUMP_DIR`, `TILEWISE_KERNEL_OVERRIDE_DIR`),
//! through `tilewise run` as a user meets them: a run dumps its kernel under a stable
//! name, an edited copy of that file runs in its place (even with the kernel in the
//! persistent cache), and an override written for other generated code is not applied.
//! Runs on every GPU executor present (wgpu: lavapipe in CI; CUDA where there is a
//! driver); without one a test says so on stderr, and `TILEWISE_REQUIRE_WGPU=1` /
//! `TILEWISE_REQUIRE_CUDA=1` turn that into a failure.

mod common;

use common::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `out = x * 2.5`: the constant is easy to find in WGSL and PTX and to change.
const SCALE: &str = r#"
import triton
import triton.language as tl

@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.5, mask=mask)
"#;

/// 2.5 and 4.0 as f32 bit patterns, in the spellings the backends print.
const TWO_AND_A_HALF: [&str; 2] = ["0x40200000", "0f40200000"];
const FOUR: [&str; 2] = ["0x40800000", "0f40800000"];

fn scratch(tag: &str) -> Scratch {
    let dir = Scratch::dir(&format!("tilewise-kfiles-{tag}"));
    std::fs::write(dir.join("scale.py"), SCALE).unwrap();
    let x: Vec<f32> = (0..1000).map(|i| i as f32 - 300.0).collect();
    npyz::to_file_1d(dir.join("x.npy"), x).unwrap();
    dir
}

/// `tilewise run` of `scale` on 1000 elements on `device`, saving its buffers in
/// `dir/out`, with `env` set; (success, stdout, stderr).
fn run(dir: &Path, device: &str, env: &[(&str, &Path)]) -> (bool, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilewise"));
    c.args(["run", "scale.py", "--kernel", "scale", "--grid", "4"])
        .args(["--arg", "x.npy", "--arg", "f32[1000]=-1", "--arg", "1000"])
        .args(["--constexpr", "BLOCK=256", "--device", device])
        .args(["--save", "out"])
        .current_dir(dir)
        .env("RUST_LOG", "tilewise=info")
        .env("TILEWISE_CACHE_DIR", dir.join("cache"))
        .env_remove("TILEWISE_CACHE")
        .env_remove("TILEWISE_KERNEL_DUMP_DIR")
        .env_remove("TILEWISE_KERNEL_OVERRIDE_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("running tilewise");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn output(dir: &Path) -> Vec<f32> {
    let bytes = std::fs::read(dir.join("out").join("arg1.npy")).unwrap();
    npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The GPU executors present, each probed by one plain run.
fn gpu_devices(dir: &Path) -> Vec<(&'static str, &'static str)> {
    let mut found = vec![];
    for (device, ext, require) in [
        ("wgpu", "wgsl", "TILEWISE_REQUIRE_WGPU"),
        ("cuda", "ptx", "TILEWISE_REQUIRE_CUDA"),
    ] {
        let (ok, _, err) = run(dir, device, &[]);
        if ok {
            found.push((device, ext));
        } else if std::env::var(require).is_ok_and(|v| v == "1") {
            panic!("{require}=1 but `--device {device}` failed:\n{err}");
        } else {
            eprintln!("note: no {device} executor here; its kernel-file tests are skipped:\n{err}");
        }
    }
    found
}

#[test]
fn dumped_kernels_can_be_edited_and_run_in_place_of_the_generated_ones() {
    let dir = scratch("override");
    let x: Vec<f32> = (0..1000).map(|i| i as f32 - 300.0).collect();
    for (device, ext) in gpu_devices(&dir) {
        let (dump, over) = (
            dir.join(format!("dump-{device}")),
            dir.join(format!("over-{device}")),
        );
        // The dump: one file, named by kernel and hash, holding the generated kernel;
        // the run also fills the persistent cache.
        let (ok, _, err) = run(&dir, device, &[("TILEWISE_KERNEL_DUMP_DIR", &dump)]);
        assert!(ok, "{device}: {err}");
        assert_eq!(output(&dir), x.iter().map(|v| v * 2.5).collect::<Vec<_>>());
        let dumped = files(&dump);
        assert_eq!(dumped.len(), 1, "{device}: {dumped:?}");
        let name = dumped[0].file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with("scale-") && name.ends_with(&format!(".{ext}")),
            "{device}: {name}"
        );
        let text = std::fs::read_to_string(&dumped[0]).unwrap();
        let constant = TWO_AND_A_HALF
            .iter()
            .position(|c| text.contains(c))
            .unwrap_or_else(|| panic!("{device}: 2.5 not found in\n{text}"));
        // A second dump of the same kernel has the same name.
        let (ok, _, err) = run(&dir, device, &[("TILEWISE_KERNEL_DUMP_DIR", &dump)]);
        assert!(ok, "{device}: {err}");
        assert_eq!(files(&dump), dumped, "{device}: the name is stable");

        // The edited kernel runs in place of the generated one, although the
        // generated one is in the persistent cache, and the log says so.
        std::fs::create_dir_all(&over).unwrap();
        let edited = text.replace(TWO_AND_A_HALF[constant], FOUR[constant]);
        std::fs::write(over.join(&name), &edited).unwrap();
        let (ok, _, err) = run(&dir, device, &[("TILEWISE_KERNEL_OVERRIDE_DIR", &over)]);
        assert!(ok, "{device}: {err}");
        assert!(err.contains("in place of the generated"), "{device}: {err}");
        assert_eq!(output(&dir), x.iter().map(|v| v * 4.0).collect::<Vec<_>>());

        // An override written for other generated code (another name) is not applied.
        std::fs::remove_file(over.join(&name)).unwrap();
        let stale = name.replace("scale-", "scale-0");
        std::fs::write(over.join(stale), &edited).unwrap();
        let (ok, _, err) = run(&dir, device, &[("TILEWISE_KERNEL_OVERRIDE_DIR", &over)]);
        assert!(ok, "{device}: {err}");
        assert!(
            !err.contains("in place of the generated"),
            "{device}: {err}"
        );
        assert_eq!(output(&dir), x.iter().map(|v| v * 2.5).collect::<Vec<_>>());
    }
}
