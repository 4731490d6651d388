//! The `tilewise` command line, run as a user runs it: each subcommand's output and
//! exit status, errors included.

mod common;

use common::Scratch;
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

/// `tilewise compile` of tutorial 03's matmul (f16 in, f32 out, aligned) with blocks
/// `(bm, bn, bk)`, `GROUP_SIZE_M=8` and `extra`; (success, stdout, stderr).
fn compile_matmul(block: (u32, u32, u32), extra: &[&str]) -> (bool, String, String) {
    let constexprs = [
        format!("BLOCK_SIZE_M={}", block.0),
        format!("BLOCK_SIZE_N={}", block.1),
        format!("BLOCK_SIZE_K={}", block.2),
        "GROUP_SIZE_M=8".to_string(),
    ];
    let mut args = vec![
        "compile",
        "../shaders/matmul.py",
        "--kernel",
        "matmul_kernel",
        "--signature",
        "a:*f16:16, b:*f16:16, c:*f32:16, M:i32:16, N:i32:16, K:i32:16, sam:i32:16, \
         sak:i32:1, sbk:i32:16, sbn:i32:1, scm:i32:16, scn:i32:1",
    ];
    for c in &constexprs {
        args.extend(["--constexpr", c]);
    }
    args.extend_from_slice(extra);
    tilewise(&args)
}

/// The offline device's limits steer the plan: tutorial 03's 128x256x32 tile on 8 warps
/// stages 27 KiB for its fragments, more than WebGPU's default 16 KiB of workgroup
/// storage (the FMA form, in rounds, then) and less than the H200's 48 KiB.
#[test]
fn compile_workgroup_storage_sets_the_devices_limit() {
    let wgsl = |extra: &[&str]| {
        let mut args = vec!["--num-warps", "8", "--emit", "wgsl", "--coop"];
        args.extend_from_slice(extra);
        let (ok, out, err) = compile_matmul((128, 256, 32), &args);
        assert!(ok, "{extra:?}: {err}");
        out
    };
    let default = wgsl(&[]);
    assert!(!default.contains("coopMultiplyAdd"), "{default}");
    let h200 = wgsl(&["--workgroup-storage", "49152"]);
    assert!(h200.contains("coopMultiplyAdd"), "{h200}");
    let (ok, _, err) = tilewise(&[
        "compile",
        "x.py",
        "--kernel",
        "k",
        "--signature",
        "",
        "--workgroup-storage",
        "lots",
    ]);
    assert!(!ok && err.contains("--workgroup-storage"), "{err}");
}

#[test]
fn compile_num_stages_sets_the_pipeline_depth() {
    let thread_ir = |stages: Option<&str>| {
        let mut args = vec!["--sm", "90", "--emit", "thread-ir-ptx"];
        if let Some(s) = stages {
            args.extend(["--num-stages", s]);
        }
        let (ok, out, err) = compile_matmul((64, 64, 32), &args);
        assert!(ok, "{err}");
        out
    };
    // The ring the lowering chose, from the kernel's notes.
    let depth = |text: &str| -> u32 {
        let at = text.find("in a ring of ").expect(text) + "in a ring of ".len();
        text[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let (two, five) = (depth(&thread_ir(Some("2"))), depth(&thread_ir(Some("5"))));
    assert!(
        two < five,
        "--num-stages 2 gave a ring of {two}, 5 one of {five}"
    );
    let (ok, _, err) = tilewise(&[
        "compile",
        SOFTMAX,
        "--kernel",
        "softmax_kernel",
        "--signature",
        SIGNATURE,
        "--constexpr",
        "BLOCK_SIZE=1024",
        "--num-stages",
        "9",
    ]);
    assert!(
        !ok && err.contains("--num-stages") && err.contains("1..=8"),
        "{err}"
    );
}

#[test]
fn compile_checked_adds_the_hidden_parameters_and_writes_a_file() {
    let dir = Scratch::dir("tilewise-cli");
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
    for sub in ["devices", "compile", "run", "cache", "bench"] {
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
fn add_file(tag: &str) -> Scratch {
    Scratch::file(&format!("tilewise-cli-{tag}"), "py", ADD)
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

/// `.npy` inputs (f32 and i32 files, a bf16 conversion) and `--save`: the saved sum is
/// the files' sum, in the kernel's output type; the interpreter agrees (`--check`); a
/// file of a type tilewise has no counterpart for is a clear error.
#[test]
fn run_reads_and_saves_npy_files() {
    let dir = Scratch::dir("tilewise-cli-npy");
    let x: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..1000).map(|i| 1000.0 - i as f32).collect();
    let (xp, yp) = (dir.join("x.npy"), dir.join("y.npy"));
    npyz::to_file_1d(&xp, x.clone()).unwrap();
    npyz::to_file_1d(&yp, y.clone()).unwrap();
    let file = add_file("npy");
    let out_dir = dir.join("out");
    let run = |args: &[&str]| {
        let mut all = vec![
            "run",
            file.to_str().unwrap(),
            "--kernel",
            "add_kernel",
            "--grid",
            "4",
        ];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--arg", "1000", "--constexpr", "BLOCK=256"]);
        tilewise(&all)
    };
    let (ok, out, err) = run(&[
        "--arg",
        xp.to_str().unwrap(),
        "--arg",
        yp.to_str().unwrap(),
        "--arg",
        "f32[1000]=-1",
        "--device",
        "sim",
        "--check",
        "--save",
        out_dir.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("every buffer matches the interpreter"),
        "{out}"
    );
    let read = |p: &std::path::Path| -> Vec<f32> {
        let bytes = std::fs::read(p).unwrap();
        npyz::NpyFile::new(&bytes[..]).unwrap().into_vec().unwrap()
    };
    let sum = read(&out_dir.join("arg2.npy"));
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_eq!(sum, want);
    assert_eq!(
        read(&out_dir.join("arg0.npy")),
        x,
        "inputs are saved as given"
    );
    // An i32 file feeds an i32 kernel buffer; a bf16 conversion of an f32 file, saved
    // back as f32 with a note.
    let ip = dir.join("i.npy");
    npyz::to_file_1d(&ip, (0..1000).collect::<Vec<i32>>()).unwrap();
    let bf = format!("bf16@{}", xp.to_str().unwrap());
    let (ok, out, err) = run(&[
        "--arg",
        ip.to_str().unwrap(),
        "--arg",
        &bf,
        "--arg",
        "f32[1000]=0",
        "--device",
        "interp",
        "--save",
        out_dir.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("bf16 buffer written as f32"), "{err}");
    assert!(out.contains("saved argument 1"), "{out}");
    let sum = read(&out_dir.join("arg2.npy"));
    assert_eq!(sum[10], 10.0 + 2.5, "{:?}", &sum[..12]);
    // A complex file has no tilewise type.
    let cp = dir.join("c.npy");
    let header = "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let pad = 64 - (10 + header.len() + 1) % 64;
    let h = format!("{header}{}\n", " ".repeat(pad));
    bytes.extend((h.len() as u16).to_le_bytes());
    bytes.extend(h.as_bytes());
    bytes.extend([0u8; 16]);
    std::fs::write(&cp, bytes).unwrap();
    let (ok, _, err) = run(&[
        "--arg",
        cp.to_str().unwrap(),
        "--arg",
        yp.to_str().unwrap(),
        "--arg",
        "f32[1000]=0",
        "--device",
        "interp",
    ]);
    assert!(!ok);
    assert!(err.contains("has no tilewise element type"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_runs_the_harness() {
    let (ok, out, err) = tilewise(&[
        "bench",
        "--device",
        "interp",
        "--suite",
        "vector-add",
        "--smoke",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("vector add f32"), "{out}");
    assert!(out.contains("ref: copy f32"), "{out}");
    let (ok, _, err) = tilewise(&["bench", "--suite", "nonsense"]);
    assert!(!ok);
    assert!(err.contains("nonsense"), "{err}");
}
