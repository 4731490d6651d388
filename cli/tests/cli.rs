//! The `tilewise` command line, run as a user runs it: each subcommand's output and
//! exit status, errors included.

use std::process::Command;

fn tilewise(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilewise"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running tilewise");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SOFTMAX: &str = "../shaders/fused_softmax.py";
const SIGNATURE: &str = "out:*f32:16, x:*f32:16, rs:i32:16, os:i32:16, rows:i32, cols:i32";

#[test]
fn devices_lists_the_cpu_executors_and_the_pick() {
    let (ok, out, err) = tilewise(&["devices"]);
    assert!(ok, "{err}");
    for want in [
        "interpreter (CPU)",
        "simulator (CPU, PTX lowering)",
        "CUDA",
        "wgpu adapters",
        "Device::best(): ",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

#[test]
fn compile_emits_every_artifact() {
    for (emit, want) in [
        ("ir", "softmax_kernel"),
        ("thread-ir", "thread_kernel @softmax_kernel"),
        ("thread-ir-ptx", "thread_kernel @softmax_kernel"),
        ("wgsl", "@compute"),
        ("ptx", ".target sm_90"),
    ] {
        let (ok, out, err) = tilewise(&[
            "compile",
            SOFTMAX,
            "--kernel",
            "softmax_kernel",
            "--signature",
            SIGNATURE,
            "--constexpr",
            "BLOCK_SIZE=1024",
            "--sm",
            "90",
            "--emit",
            emit,
        ]);
        assert!(ok, "{emit}: {err}");
        assert!(out.contains(want), "{emit}: no `{want}` in:\n{out}");
    }
}

#[test]
fn compile_checked_adds_the_hidden_parameters_and_writes_a_file() {
    let dir = std::env::temp_dir().join(format!("tilewise-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("softmax.tir");
    let base = [
        "compile",
        SOFTMAX,
        "--kernel",
        "softmax_kernel",
        "--signature",
        SIGNATURE,
        "--constexpr",
        "BLOCK_SIZE=1024",
        "--emit",
        "thread-ir",
    ];
    let (ok, plain, err) = tilewise(&base);
    assert!(ok, "{err}");
    assert!(!plain.contains("tw_checks"), "{plain}");
    let mut checked = base.to_vec();
    checked.extend(["--checked", "-o", path.to_str().unwrap()]);
    let (ok, out, err) = tilewise(&checked);
    assert!(ok, "{err}");
    assert!(out.is_empty(), "{out}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("tw_checks") && text.contains("tw_len_input_ptr"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compile_errors_are_the_librarys_diagnostics() {
    // Too few parameters: the library's located launch error.
    let (ok, _, err) = tilewise(&[
        "compile",
        SOFTMAX,
        "--kernel",
        "softmax_kernel",
        "--signature",
        "out:*f32, x:*f32",
        "--constexpr",
        "BLOCK_SIZE=1024",
    ]);
    assert!(!ok);
    assert!(
        err.contains("missing launch argument for parameter `input_row_stride`"),
        "{err}"
    );
    assert!(err.contains("fused_softmax.py:10"), "{err}");
    // An unknown kernel, a bad signature, a bad constexpr.
    for (args, want) in [
        (vec!["--kernel", "nope", "--signature", SIGNATURE], "nope"),
        (
            vec!["--kernel", "softmax_kernel", "--signature", "x:*f33"],
            "unknown type `f33`",
        ),
        (
            vec![
                "--kernel",
                "softmax_kernel",
                "--signature",
                SIGNATURE,
                "--constexpr",
                "BLOCK_SIZE",
            ],
            "expected NAME=VALUE",
        ),
    ] {
        let mut all = vec!["compile", SOFTMAX];
        all.extend(args);
        let (ok, _, err) = tilewise(&all);
        assert!(!ok, "{all:?}");
        assert!(err.contains(want), "{all:?}: {err}");
    }
}

#[test]
fn every_subcommand_shows_an_example() {
    for sub in ["devices", "compile", "run"] {
        let (ok, out, err) = tilewise(&[sub, "--help"]);
        assert!(ok, "{err}");
        assert!(out.contains("Example"), "{sub}: {out}");
        assert!(out.contains(&format!("tilewise {sub}")), "{sub}: {out}");
    }
}

const ADD: &str = r#"
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"#;

/// The kernel in a file of its own for test `tag` (tests run in parallel).
fn add_file(tag: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("tilewise-cli-{tag}-{}.py", std::process::id()));
    std::fs::write(&path, ADD).unwrap();
    path
}

#[test]
fn run_checks_against_the_interpreter_on_the_simulators() {
    let file = add_file("check");
    for device in ["interp", "sim", "sim-ptx"] {
        let (ok, out, err) = tilewise(&[
            "run",
            file.to_str().unwrap(),
            "--kernel",
            "add_kernel",
            "--grid",
            "4",
            "--arg",
            "f32[1000]",
            "--arg",
            "f32[1000]",
            "--arg",
            "f32[1000]=-1",
            "--arg",
            "1000",
            "--constexpr",
            "BLOCK=256",
            "--device",
            device,
            "--check",
        ]);
        assert!(ok, "{device}: {err}");
        assert!(
            out.contains("every buffer matches the interpreter"),
            "{device}: {out}"
        );
        assert!(
            out.contains("argument 2 (1000 elements)"),
            "{device}: {out}"
        );
    }
}

#[test]
fn run_checked_reports_an_out_of_bounds_load_with_its_line() {
    let file = add_file("checked");
    // n says 1100 but the buffers hold 1000: the mask does not keep the loads in.
    let (ok, _, err) = tilewise(&[
        "run",
        file.to_str().unwrap(),
        "--kernel",
        "add_kernel",
        "--grid",
        "5",
        "--arg",
        "f32[1000]",
        "--arg",
        "f32[1000]",
        "--arg",
        "f32[1000]",
        "--arg",
        "1100",
        "--constexpr",
        "BLOCK=256",
        "--device",
        "sim",
        "--checked",
    ]);
    assert!(!ok);
    assert!(
        err.contains("out-of-bounds load in kernel `add_kernel` (line 9)"),
        "{err}"
    );
    assert!(
        err.contains("element index 1000 of a buffer of 1000 elements"),
        "{err}"
    );
}

#[test]
fn run_rejects_bad_arguments() {
    let file = add_file("bad");
    for (arg, want) in [("f33[4]", "unknown dtype"), ("f32[x]", "not a length")] {
        let (ok, _, err) = tilewise(&[
            "run",
            file.to_str().unwrap(),
            "--kernel",
            "add_kernel",
            "--arg",
            arg,
        ]);
        assert!(!ok);
        assert!(err.contains(want), "{arg}: {err}");
    }
}
