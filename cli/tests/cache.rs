//! The persistent cache across processes, as a user meets it through `tilewise run`:
//! a second process reads the compiled kernel instead of compiling it, processes racing
//! on one empty cache all succeed and leave one whole entry, damaged and foreign entries
//! are ignored and rewritten, `TILEWISE_CACHE=0` writes nothing, and `tilewise cache`
//! lists and clears. Runs on every GPU executor present (wgpu: lavapipe in CI; CUDA
//! where there is a driver); without one a test says so on stderr, and
//! `TILEWISE_REQUIRE_WGPU=1` / `TILEWISE_REQUIRE_CUDA=1` turn that into a failure.

mod common;

use common::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MATMUL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
"#;

/// A scratch directory of this test (removed when dropped).
fn scratch(tag: &str) -> Scratch {
    let dir = Scratch::dir(&format!("tilewise-cache-{tag}"));
    std::fs::write(dir.join("mm.py"), MATMUL).unwrap();
    dir
}

/// `tilewise run` of the 48x40x72 f16 product (ragged edges: every mask matters) on
/// `device`, checked against the interpreter, with the cache in `cache` and debug logs.
fn command(dir: &Path, cache: &Path, device: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilewise"));
    c.args(["run", "mm.py", "--kernel", "mm", "--grid", "3,3"])
        .args([
            "--arg",
            "f16[3456]",
            "--arg",
            "f16[2880]",
            "--arg",
            "f32[1920]=0",
        ])
        .args(["--arg", "48", "--arg", "40", "--arg", "72"])
        .args([
            "--constexpr",
            "BM=16",
            "--constexpr",
            "BN=16",
            "--constexpr",
            "BK=32",
        ])
        .args(["--device", device, "--check", "--tol", "1e-3"])
        .current_dir(dir)
        .env("TILEWISE_CACHE_DIR", cache)
        .env_remove("TILEWISE_CACHE")
        .env("RUST_LOG", "tilewise=debug");
    c
}

fn run(mut c: Command) -> (bool, String, String) {
    let out: Output = c.output().expect("running tilewise");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The log line a fresh compile writes, and the one a cache hit writes, per device.
fn compiled_and_read(device: &str) -> (&'static str, &'static str) {
    match device {
        "wgpu" => ("lowered and printed WGSL", "read the cached WGSL"),
        _ => (
            "lowered and printed PTX",
            "loaded from the persistent cache",
        ),
    }
}

/// The GPU executors present: each probed by one run; missing ones said on stderr (or a
/// failure where the environment requires them).
fn gpu_devices(dir: &Path) -> Vec<&'static str> {
    let mut found = vec![];
    for (device, require) in [
        ("wgpu", "TILEWISE_REQUIRE_WGPU"),
        ("cuda", "TILEWISE_REQUIRE_CUDA"),
    ] {
        let mut c = command(dir, &dir.join("probe-cache"), device);
        c.env("TILEWISE_CACHE", "0");
        let (ok, _, err) = run(c);
        if ok {
            found.push(device);
        } else if std::env::var(require).is_ok_and(|v| v == "1") {
            panic!("{require}=1 but `--device {device}` failed:\n{err}");
        } else {
            eprintln!(
                "note: no {device} executor here; its persistent-cache tests are skipped:\n{err}"
            );
        }
    }
    found
}

fn entries(cache: &Path, kind: &str) -> Vec<PathBuf> {
    let dir = cache.join("v1").join(kind);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_second_process_reads_the_compiled_kernel() {
    let dir = scratch("second");
    for device in gpu_devices(&dir) {
        let cache = dir.join(format!("cache-{device}"));
        let (compiled, read) = compiled_and_read(device);
        let (ok, out, err) = run(command(&dir, &cache, device));
        assert!(ok, "{device}: {err}");
        assert!(out.contains("every buffer matches"), "{device}: {out}");
        assert!(err.contains(compiled), "{device}: {err}");
        assert!(err.contains(&format!("cache: stored ({device})")), "{err}");
        assert_eq!(entries(&cache, device).len(), 1, "{device}");

        let (ok, out, err) = run(command(&dir, &cache, device));
        assert!(ok, "{device}: {err}");
        assert!(out.contains("every buffer matches"), "{device}: {out}");
        assert!(err.contains(read), "{device}: {err}");
        assert!(!err.contains(compiled), "{device} compiled again: {err}");
        assert!(err.contains(&format!("cache: hit ({device})")), "{err}");

        // `tilewise cache` lists the entry, `--clear` removes it.
        let mut c = Command::new(env!("CARGO_BIN_EXE_tilewise"));
        c.arg("cache").env("TILEWISE_CACHE_DIR", &cache);
        let (ok, out, err) = run(c);
        assert!(ok, "{err}");
        assert!(out.contains(&cache.display().to_string()), "{out}");
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(device) && l.contains("1 entries")),
            "{out}"
        );
        let mut c = Command::new(env!("CARGO_BIN_EXE_tilewise"));
        c.args(["cache", "--clear"])
            .env("TILEWISE_CACHE_DIR", &cache);
        assert!(run(c).0);
        assert!(entries(&cache, device).is_empty());
    }
}

#[test]
fn processes_racing_on_one_empty_cache_all_succeed() {
    let dir = scratch("race");
    for device in gpu_devices(&dir) {
        let cache = dir.join(format!("cache-{device}"));
        let children: Vec<_> = (0..6)
            .map(|_| {
                let mut c = command(&dir, &cache, device);
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                c.spawn().expect("spawning tilewise")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{device}: {stderr}");
            assert!(
                stdout.contains("every buffer matches"),
                "{device}: {stdout}"
            );
            assert!(
                !stderr.contains("ignoring"),
                "{device}: a torn entry was read: {stderr}"
            );
        }
        // One whole entry, no temporary file left, and the next process hits it.
        let files = entries(&cache, device);
        assert_eq!(files.len(), 1, "{device}: {files:?}");
        let (ok, _, err) = run(command(&dir, &cache, device));
        assert!(ok, "{err}");
        assert!(err.contains(compiled_and_read(device).1), "{device}: {err}");
    }
}

#[test]
fn damaged_and_foreign_entries_are_ignored_and_rewritten() {
    let dir = scratch("damaged");
    for device in gpu_devices(&dir) {
        let cache = dir.join(format!("cache-{device}"));
        let (compiled, read) = compiled_and_read(device);
        assert!(run(command(&dir, &cache, device)).0);
        let file = entries(&cache, device).pop().expect("an entry");
        let good = std::fs::read(&file).unwrap();
        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x5a;
        let damages: [(&str, Vec<u8>); 4] = [
            ("truncated", good[..good.len() / 2].to_vec()),
            ("one byte flipped", flipped),
            ("empty", vec![]),
            (
                "foreign",
                b"PK\x03\x04 not a tilewise cache entry".repeat(40),
            ),
        ];
        for (what, bytes) in damages {
            std::fs::write(&file, &bytes).unwrap();
            let (ok, out, err) = run(command(&dir, &cache, device));
            assert!(ok, "{device}, {what}: {err}");
            assert!(
                out.contains("every buffer matches"),
                "{device}, {what}: {out}"
            );
            assert!(err.contains(compiled), "{device}, {what}: {err}");
            if !bytes.is_empty() {
                assert!(err.contains("ignoring"), "{device}, {what}: {err}");
            }
            // Rewritten whole: the next process reads it.
            assert_eq!(std::fs::read(&file).unwrap().len(), good.len(), "{what}");
            let (ok, _, err) = run(command(&dir, &cache, device));
            assert!(ok && err.contains(read), "{device}, {what}: {err}");
        }
    }
}

#[test]
fn cache_off_writes_nothing() {
    let dir = scratch("off");
    for device in gpu_devices(&dir) {
        let cache = dir.join(format!("cache-{device}"));
        for _ in 0..2 {
            let mut c = command(&dir, &cache, device);
            c.env("TILEWISE_CACHE", "0");
            let (ok, _, err) = run(c);
            assert!(ok, "{err}");
            assert!(err.contains(compiled_and_read(device).0), "{err}");
        }
        assert!(
            !cache.exists(),
            "{device}: TILEWISE_CACHE=0 wrote {cache:?}"
        );
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_tilewise"));
    c.arg("cache").env("TILEWISE_CACHE", "0");
    let (ok, out, _) = run(c);
    assert!(ok && out.contains("off"), "{out}");
}
