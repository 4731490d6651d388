//! `tilewise run` on a kernel with `@triton.autotune`, as a Triton user's file has it:
//! configurations from a helper function and a comprehension, a key, a prune function
//! reading the arguments, and a grid written over the block size. The GPU executors
//! tune (the configuration doing 128 times the work loses) and a second process reuses
//! the choice from the persistent cache; the interpreter takes the first configuration
//! the prune function keeps; `--check` compares with the interpreter under the chosen
//! configuration; a `--constexpr` the configurations set is refused.

mod common;

use common::Scratch;
use std::path::Path;
use std::process::Command;

const TUNED: &str = r#"
import triton
import triton.language as tl

def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"

def configs():
    base = [triton.Config({"BLOCK": b, "REPEAT": 128}, num_warps=4) for b in (128, 256)]
    if is_cuda():
        base.append(triton.Config({"BLOCK": 256, "REPEAT": 1}, num_warps=4))
    return base

def prune(configs, named_args, **kwargs):
    # Small problems keep blocks of 128 only.
    if named_args["n"] < 1000:
        return [c for c in configs if c.kwargs["BLOCK"] == 128]
    return configs

@triton.autotune(configs=configs(), key=["n"], prune_configs_by={"early_config_prune": prune})
@triton.jit
def scale(x_ptr, out_ptr, n, zero, BLOCK: tl.constexpr, REPEAT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for r in range(REPEAT):
        acc += tl.load(x_ptr + offs + r * zero, mask=mask, other=0)
    tl.store(out_ptr + offs, acc * 3 // REPEAT, mask=mask)
"#;

fn scratch(tag: &str) -> Scratch {
    let dir = Scratch::dir(&format!("tilewise-cli-tune-{tag}"));
    std::fs::write(dir.join("tuned.py"), TUNED).unwrap();
    dir
}

fn run(dir: &Path, device: &str, n: usize, extra: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilewise"))
        .args(["run", "tuned.py", "--kernel", "scale"])
        .args(["--grid", "cdiv(n, BLOCK)"])
        .args([
            "--arg",
            &format!("i32[{n}]"),
            "--arg",
            &format!("i32[{n}]=0"),
        ])
        .args(["--arg", &n.to_string(), "--arg", "0"])
        .args(["--device", device, "--check"])
        .args(extra)
        .current_dir(dir)
        .env("TILEWISE_CACHE_DIR", dir.join("cache"))
        .env_remove("TILEWISE_CACHE")
        .env("RUST_LOG", "tilewise=info")
        .output()
        .expect("running tilewise");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cpu_takes_the_first_configuration_the_prune_function_keeps() {
    let dir = scratch("interp");
    let (ok, out, err) = run(&dir, "interp", 700, &[]);
    assert!(ok, "{err}");
    assert!(out.contains("every buffer matches"), "{out}");
    assert!(
        err.contains("runs with BLOCK=128, REPEAT=128, num_warps=4"),
        "{err}"
    );
    let (ok, _, err) = run(&dir, "interp", 5000, &[]);
    assert!(ok, "{err}");
    assert!(err.contains("runs with BLOCK=128, REPEAT=128"), "{err}");
}

#[test]
fn gpus_tune_and_a_second_process_reuses_the_choice() {
    let dir = scratch("gpu");
    for (device, require) in [
        ("wgpu", "TILEWISE_REQUIRE_WGPU"),
        ("cuda", "TILEWISE_REQUIRE_CUDA"),
    ] {
        let (ok, out, err) = run(&dir, device, 100_000, &[]);
        if !ok && !std::env::var(require).is_ok_and(|v| v == "1") {
            eprintln!("note: no {device} executor here; its autotuning test is skipped:\n{err}");
            continue;
        }
        assert!(ok, "{device}: {err}");
        assert!(out.contains("every buffer matches"), "{device}: {out}");
        assert!(
            err.contains("runs with BLOCK=256, REPEAT=1"),
            "{device}: {err}"
        );
        assert!(err.contains("autotune: `scale` chose"), "{device}: {err}");
        let (ok, _, err) = run(&dir, device, 100_000, &[]);
        assert!(ok, "{device}: {err}");
        assert!(err.contains("chosen in an earlier run"), "{device}: {err}");
        assert!(
            !err.contains("autotune: `scale` chose"),
            "{device} tuned again: {err}"
        );
    }
}

#[test]
fn constexprs_the_configurations_set_are_refused_unless_tuning_is_off() {
    let dir = scratch("refuse");
    let (ok, _, err) = run(&dir, "interp", 100, &["--constexpr", "BLOCK=64"]);
    assert!(!ok);
    assert!(
        err.contains("set by the kernel's @triton.autotune"),
        "{err}"
    );
    let (ok, out, err) = run(
        &dir,
        "interp",
        100,
        &[
            "--constexpr",
            "BLOCK=64",
            "--constexpr",
            "REPEAT=2",
            "--no-autotune",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("every buffer matches"), "{out}");
    assert!(!err.contains("runs with"), "{err}");
}
