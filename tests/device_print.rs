//! `tl.device_print` on every executor prints what the interpreter prints: the same
//! lines (`pid (x, y, z) idx (i) label: value`), by program, each print's elements in
//! order. The prints go to stdout, so the test runs itself as a child process for each
//! executor and compares the child's output with the interpreter's.

mod common;

use common::{cuda_device, module, ok, wgpu_device};
use tilewise::Device;

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def show(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.device_print("pair", offs, x * 2.0)
    tl.device_print("bits", offs * 3, hex=True)
    tl.device_print("first", tl.sum(offs, axis=0))
"#;

/// Which executor the child runs on.
const CHILD: &str = "TILEWISE_TEST_PRINT_CHILD";

fn executor(name: &str) -> Option<Device> {
    match name {
        "interpreter" => Some(Device::interpreter()),
        "simulator" => Some(Device::simulator()),
        "simulator_ptx" => Some(Device::simulator_ptx()),
        "simulator_coop" => Some(Device::simulator_coop()),
        "wgpu" => wgpu_device(),
        "cuda" => cuda_device(),
        _ => None,
    }
}

/// In a child process: runs the printing kernel on the executor `CHILD` names,
/// between markers.
#[test]
fn print_child() {
    let Ok(name) = std::env::var(CHILD) else {
        return;
    };
    let Some(dev) = executor(&name) else {
        println!("NO DEVICE");
        return;
    };
    let m = module("print.py", SRC);
    let x: Vec<f32> = (0..16).map(|i| i as f32 * 0.25 - 1.0).collect();
    let xb = ok(dev.upload(&x));
    println!("BEGIN PRINTS");
    ok(ok(m.kernel("show"))
        .launch(&dev, 2)
        .arg(&xb)
        .constexpr("BLOCK", 8)
        .run());
    ok(dev.synchronize());
    println!("END PRINTS");
}

/// The persistent cache of this test's children (fresh for each run of the test).
fn cache_dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("tilewise-device-print-{}", std::process::id()))
}

fn prints_of(name: &str) -> Option<Vec<String>> {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "print_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, name)
        .env("TILEWISE_CACHE_DIR", cache_dir())
        .env_remove("TILEWISE_CACHE")
        .output()
        .expect("running the test binary");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{name}: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if text.contains("NO DEVICE") {
        return None;
    }
    let lines: Vec<String> = text
        .lines()
        .skip_while(|l| !l.contains("BEGIN PRINTS"))
        .skip(1)
        .take_while(|l| !l.contains("END PRINTS"))
        .map(str::to_string)
        .collect();
    Some(lines)
}

#[test]
fn device_print_prints_as_the_interpreter_does() {
    let _ = std::fs::remove_dir_all(cache_dir());
    let want = prints_of("interpreter").expect("the interpreter");
    assert_eq!(want.len(), 2 * (8 + 16 + 8 + 1), "{want:#?}");
    assert!(
        want.contains(&"pid (1, 0, 0) idx (4) x: 2".to_string()),
        "{want:#?}"
    );
    assert!(
        want.contains(&"pid (0, 0, 0) idx (2) bits: 0x6".to_string()),
        "{want:#?}"
    );
    for name in [
        "simulator",
        "simulator_ptx",
        "simulator_coop",
        "wgpu",
        "cuda",
    ] {
        // Twice: the second child finds the first one's persistent cache (a kernel
        // with prints must keep its print buffer then too).
        for run in ["cold", "warm"] {
            match prints_of(name) {
                Some(got) => assert_eq!(got, want, "{name}, {run} cache"),
                None => eprintln!("SKIPPED ({name}): no device"),
            }
        }
    }
}
