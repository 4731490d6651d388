//! Triton's own tutorials, verbatim: every `@triton.jit` kernel of 01-vector-add,
//! 02-fused-softmax, 03-matrix-multiplication, 04-low-memory-dropout, 05-layer-norm,
//! 06-fused-attention, 08-grouped-gemm and 09-persistent-matmul, launched as the
//! tutorial's host code launches it (argument order, strides, grids, constexprs,
//! `num_warps`; autotuned kernels through the source's own `@triton.autotune`), on
//! random inputs with poisoned outputs, against float64 references, on the
//! interpreter, the simulators of the WGSL (with and without cooperative matrices),
//! PTX and sm_90 (`wgmma`) lowerings, and on
//! wgpu and CUDA when present.
//!
//! The tutorial files are not part of tilewise: the test reads them from the directory
//! in `TILEWISE_TRITON_TUTORIALS` (files named as in Triton's `python/tutorials/`) and,
//! without it, says on stderr that it did not run. Each file is parsed whole; the host
//! code (torch, benchmarks, classes) is not traced.
//!
//! - `TILEWISE_TUTORIALS_ONLY=01,06`: only those tutorials (by number).
//! - `TILEWISE_TUTORIALS_EXECUTORS=interp,sim,sim-ptx,sim-hopper,sim-coop,wgpu,cuda`: only those
//!   executors (the default is all of them; wgpu and CUDA where present).
//!
//! On wgpu a kernel may be refused for the adapter's limits (lavapipe's 32 KiB of
//! workgroup memory) or for a construct WGSL lacks; the refusal must be such an error,
//! named on stderr, never a wrong answer. Every result line goes to stderr as
//! `TUTORIAL <nn> <kernel> [<case>] on <executor>: ok|refused (...)`.

mod common;

use common::{cuda_device, matmul_ref, softmax_ref, wgpu_device, Rng};
use std::path::PathBuf;
use tilewise::half::f16;
use tilewise::{
    Buffer, Config, Device, DeviceKind, Diagnostic, ErrorKind, Module, TensorDescriptor,
};

const ENV_DIR: &str = "TILEWISE_TRITON_TUTORIALS";

/// The tutorial file `file` as a module, or `None` (with a note on stderr) when the
/// directory is not given or the tutorial is not selected.
fn tutorial(number: &str, file: &str) -> Option<Module> {
    let Some(dir) = std::env::var_os(ENV_DIR).map(PathBuf::from) else {
        eprintln!(
            "triton_tutorials: NOT RUN: {ENV_DIR} is not set (it names a directory holding \
             Triton's python/tutorials/*.py files, which are not part of tilewise)"
        );
        return None;
    };
    if let Ok(only) = std::env::var("TILEWISE_TUTORIALS_ONLY") {
        if !only.split(',').any(|t| t.trim() == number) {
            eprintln!(
                "triton_tutorials: tutorial {number} not selected by TILEWISE_TUTORIALS_ONLY"
            );
            return None;
        }
    }
    let path = dir.join(file);
    match Module::from_file(&path) {
        Ok(m) => Some(m),
        Err(e) => panic!("{} does not parse:\n{}", path.display(), e.render()),
    }
}

/// An executor with the label the result lines use.
struct Exec {
    label: &'static str,
    dev: Device,
}

fn executors() -> Vec<Exec> {
    let wanted = std::env::var("TILEWISE_TUTORIALS_EXECUTORS").ok();
    let on = |label: &str| {
        wanted
            .as_deref()
            .is_none_or(|w| w.split(',').any(|x| x.trim() == label))
    };
    let mut out = vec![];
    let mut add = |label: &'static str, dev: Option<Device>| {
        if let Some(dev) = dev.filter(|_| on(label)) {
            out.push(Exec { label, dev });
        }
    };
    add("interp", Some(Device::interpreter()));
    add("sim", Some(Device::simulator()));
    add("sim-ptx", Some(Device::simulator_ptx()));
    add("sim-hopper", Some(Device::simulator_hopper()));
    add("sim-coop", Some(Device::simulator_coop()));
    if on("wgpu") {
        add("wgpu", wgpu_device());
    }
    if on("cuda") {
        add("cuda", cuda_device());
    }
    out
}

/// Whether `e` is wgpu refusing a kernel for the adapter's limits or for a construct
/// WGSL lacks (both are `Backend` errors that say so), or the autotuner finding that
/// every configuration was refused so or ruled out by the kernel's static assertions
/// (one note per configuration), rather than a failure.
fn is_wgpu_refusal(e: &Diagnostic) -> bool {
    let refusal = |msg: &str| {
        msg.contains("the adapter's")
            || msg.contains("cannot run on the WGSL backend")
            || msg.contains("WGSL")
    };
    match e.kind {
        ErrorKind::Backend => refusal(&e.message),
        // Configurations a kernel's own `tl.static_assert` rules out are skipped too,
        // as Triton's autotuner skips them.
        ErrorKind::Launch => {
            e.message.contains("configurations runs on")
                && e.notes.iter().any(|n| refusal(n))
                && e.notes
                    .iter()
                    .all(|n| refusal(n) || n.ends_with("static_assert failed"))
        }
        _ => false,
    }
}

/// Whether `e` is the WGSL lowering refusing pointers as data, or wgpu refusing a
/// buffer's address.
fn is_address_refusal(e: &Diagnostic) -> bool {
    e.kind == ErrorKind::Backend
        && (e.message.contains("needs global memory addresses")
            || e.message.contains("address is not available on wgpu"))
}

/// Runs `case` on every executor; it returns a note for the result line (its numeric
/// checks panic). A tilewise error fails the test, except a refusal on wgpu.
fn on_each(number: &str, what: &str, case: impl Fn(&Device) -> tilewise::Result<String>) {
    for Exec { label, dev } in executors() {
        match case(&dev) {
            Ok(note) => eprintln!("TUTORIAL {number} {what} on {label}: ok ({note})"),
            Err(e) if dev.kind() == DeviceKind::Wgpu && is_wgpu_refusal(&e) => {
                let why = e.notes.first().unwrap_or(&e.message);
                eprintln!("TUTORIAL {number} {what} on {label}: refused ({why})")
            }
            // The WGSL lowering (on the simulator as on wgpu) has no addresses: pointers
            // as data are refused by name.
            Err(e) if matches!(label, "sim" | "sim-coop") && is_address_refusal(&e) => {
                eprintln!(
                    "TUTORIAL {number} {what} on {label}: refused ({})",
                    e.message
                )
            }
            Err(e) => panic!("tutorial {number}: {what} on {label}:\n{}", e.render()),
        }
    }
}

/// Largest error relative to the largest reference magnitude; panics (naming the first
/// bad element) at `tol` or above, or on a length mismatch or a non-finite value.
#[track_caller]
fn close(what: &str, got: &[f64], want: &[f64], tol: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0f64, |m, w| m.max(w.abs())).max(1e-30);
    let mut worst = 0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let e = (g - w).abs() / scale;
        if !g.is_finite() || e >= tol {
            panic!("{what}: element {i}: got {g}, want {w} (scale {scale:e}, tolerance {tol:e})");
        }
        worst = worst.max(e);
    }
    worst
}

fn f16s(v: &[f32]) -> Vec<f16> {
    v.iter().map(|&x| f16::from_f32(x)).collect()
}

fn wide16(v: &[f16]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn wide32(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn get16(dev: &Device, b: &Buffer) -> tilewise::Result<Vec<f64>> {
    Ok(wide16(&dev.download::<f16>(b)?))
}

fn get32(dev: &Device, b: &Buffer) -> tilewise::Result<Vec<f64>> {
    Ok(wide32(&dev.download::<f32>(b)?))
}

fn nan16(dev: &Device, n: usize) -> tilewise::Result<Buffer> {
    dev.upload(&vec![f16::NAN; n])
}

fn nan32(dev: &Device, n: usize) -> tilewise::Result<Buffer> {
    dev.upload(&vec![f32::NAN; n])
}

/// The configuration the source's `@triton.autotune` lists first (after the
/// tutorial's own filters): for kernels whose host code builds arguments from the
/// chosen configuration itself (09's descriptors, 08's grid), as the tutorial's host
/// helper does.
fn first_config(module: &Module, kernel: &str, dev: &Device) -> tilewise::Result<Config> {
    let tuner = module.kernel(kernel)?.autotuner(dev)?;
    let tuner = tuner.unwrap_or_else(|| panic!("{kernel} has no @triton.autotune"));
    Ok(tuner.configs()[0].clone())
}

// ---------------------------------------------------------------------------------
// 01: vector addition.

#[test]
fn t01_vector_add() {
    let Some(m) = tutorial("01", "01-vector-add.py") else {
        return;
    };
    let mut rng = Rng::new(101);
    let n = 10_000 + 3;
    let x = rng.vec_f32(n, 0.0, 1.0);
    let y = rng.vec_f32(n, 0.0, 1.0);
    on_each("01", "add_kernel", |dev| {
        let k = m.kernel("add_kernel")?;
        let (xb, yb) = (dev.upload(&x)?, dev.upload(&y)?);
        let out = nan32(dev, n + 64)?;
        // add(x, y): grid = cdiv(n, BLOCK_SIZE), BLOCK_SIZE=1024.
        k.launch(dev, n.div_ceil(1024) as u32)
            .arg(&xb)
            .arg(&yb)
            .arg(&out)
            .arg(n as i32)
            .constexpr("BLOCK_SIZE", 1024)
            .run()?;
        let got = dev.download::<f32>(&out)?;
        for i in 0..n {
            assert_eq!(got[i], x[i] + y[i], "add_kernel element {i}");
        }
        assert!(
            got[n..].iter().all(|v| v.is_nan()),
            "add_kernel stored past n"
        );
        Ok("exact".into())
    });
}

// ---------------------------------------------------------------------------------
// 02: fused softmax, persistent over rows.

#[test]
fn t02_fused_softmax() {
    let Some(m) = tutorial("02", "02-fused-softmax.py") else {
        return;
    };
    let mut rng = Rng::new(102);
    // The tutorial's unit test has 781 columns; fewer rows, and fewer programs than
    // rows so that each program loops (the tutorial launches NUM_SM * occupancy).
    let (rows, cols, programs) = (45usize, 781usize, 16u32);
    let x = rng.vec_f32(rows * cols, -4.0, 4.0);
    let want = softmax_ref(&wide32(&x), rows, cols);
    on_each("02", "softmax_kernel", |dev| {
        let k = m.kernel("softmax_kernel")?;
        let xb = dev.upload(&x)?;
        let y = nan32(dev, rows * cols)?;
        // softmax(x): BLOCK_SIZE = next_power_of_2(n_cols), num_warps = 8,
        // num_stages = 4 (the H200 has more than 200 KB of shared memory).
        k.launch(dev, programs)
            .arg(&y)
            .arg(&xb)
            .arg(cols as i32)
            .arg(cols as i32)
            .arg(rows as i32)
            .arg(cols as i32)
            .constexpr("BLOCK_SIZE", cols.next_power_of_two())
            .constexpr("num_stages", 4)
            .num_warps(8)
            .run()?;
        let e = close("softmax_kernel", &get32(dev, &y)?, &want, 1e-5);
        Ok(format!("max rel err {e:.1e}"))
    });
}

// ---------------------------------------------------------------------------------
// 03: matrix multiplication (autotuned, grouped ordering, fused activation).

#[test]
fn t03_matmul() {
    let Some(m) = tutorial("03", "03-matrix-multiplication.py") else {
        return;
    };
    let mut rng = Rng::new(103);
    // Ragged in M, N and K for every configuration's blocks.
    let (mm, nn, kk) = (200usize, 136usize, 100usize);
    let a = f16s(&rng.vec_f32(mm * kk, -1.0, 1.0));
    let b = f16s(&rng.vec_f32(kk * nn, -1.0, 1.0));
    let plain = matmul_ref(&wide16(&a), &wide16(&b), mm, nn, kk);
    for activation in ["", "leaky_relu"] {
        let want: Vec<f64> = plain
            .iter()
            .map(|&v| {
                if activation == "leaky_relu" && v < 0.0 {
                    0.01 * v
                } else {
                    v
                }
            })
            .collect();
        let what = format!("matmul_kernel [ACTIVATION={activation:?}]");
        on_each("03", &what, |dev| {
            let tuner = m
                .kernel("matmul_kernel")?
                .autotuner(dev)?
                .expect("autotuned");
            let tuner = tuner.timing(2.0, 10.0);
            let (ab, bb) = (dev.upload(&a)?, dev.upload(&b)?);
            let c = nan16(dev, mm * nn)?;
            // matmul(a, b): grid = cdiv(M, BM) * cdiv(N, BN); row-major strides.
            let used = tuner
                .launch(dev, move |c: &Config| {
                    ((mm.div_ceil(c.int("BLOCK_SIZE_M") as usize)
                        * nn.div_ceil(c.int("BLOCK_SIZE_N") as usize)) as u32)
                        .into()
                })
                .arg(&ab)
                .arg(&bb)
                .arg(&c)
                .args([mm, nn, kk, kk, 1, nn, 1, nn, 1].map(|v| (v as i32).into()))
                .constexpr("ACTIVATION", activation)
                .run()?;
            let e = close(&what, &get16(dev, &c)?, &want, 1e-2);
            Ok(format!("{used}; max rel err {e:.1e}"))
        });
    }
}

// ---------------------------------------------------------------------------------
// 04: low-memory dropout.

#[test]
fn t04_dropout() {
    let Some(m) = tutorial("04", "04-low-memory-dropout.py") else {
        return;
    };
    let mut rng = Rng::new(104);
    let n = 3000 + 7;
    let p = 0.5f32;
    let x = rng.vec_f32(n, -2.0, 2.0);
    let keep: Vec<i32> = (0..n).map(|_| (rng.unit() > p as f64) as i32).collect();
    on_each("04", "_dropout", |dev| {
        let k = m.kernel("_dropout")?;
        let (xb, kb) = (dev.upload(&x)?, dev.upload(&keep)?);
        let out = nan32(dev, n)?;
        k.launch(dev, n.div_ceil(1024) as u32)
            .arg(&xb)
            .arg(&kb)
            .arg(&out)
            .arg(n as i32)
            .arg(p)
            .constexpr("BLOCK_SIZE", 1024)
            .run()?;
        let got = dev.download::<f32>(&out)?;
        for i in 0..n {
            let want = if keep[i] != 0 { x[i] / (1.0 - p) } else { 0.0 };
            assert_eq!(got[i], want, "_dropout element {i}");
        }
        Ok("exact".into())
    });
    // Seeded: every output is 0 or x / (1 - p); the same seed gives the same mask on
    // every executor (the interpreter's is the reference), another seed another mask;
    // about 1 - p of the elements are kept.
    let seeded = |dev: &Device, seed: i32| -> tilewise::Result<Vec<f32>> {
        let k = m.kernel("_seeded_dropout")?;
        let xb = dev.upload(&x)?;
        let out = nan32(dev, n)?;
        k.launch(dev, n.div_ceil(1024) as u32)
            .arg(&xb)
            .arg(&out)
            .arg(n as i32)
            .arg(p)
            .arg(seed)
            .constexpr("BLOCK_SIZE", 1024)
            .run()?;
        dev.download::<f32>(&out)
    };
    let reference = seeded(&Device::interpreter(), 123).expect("interpreter");
    on_each("04", "_seeded_dropout", |dev| {
        let a = seeded(dev, 123)?;
        let b = seeded(dev, 123)?;
        let c = seeded(dev, 512)?;
        let mut kept = 0;
        for i in 0..n {
            let scaled = x[i] / (1.0 - p);
            assert!(
                a[i] == 0.0 || a[i] == scaled,
                "element {i}: {} from {}",
                a[i],
                x[i]
            );
            kept += (a[i] != 0.0) as usize;
        }
        assert_eq!(a, b, "the same seed gave another mask");
        assert_ne!(a, c, "seeds 123 and 512 gave the same mask");
        assert_eq!(a, reference, "the mask differs from the interpreter's");
        let frac = kept as f64 / n as f64;
        assert!(
            (frac - 0.5).abs() < 0.05,
            "kept {frac} of the elements, not about 1 - p"
        );
        Ok(format!("kept {frac:.3}"))
    });
}

// ---------------------------------------------------------------------------------
// 05: layer norm, forward and backward (a spin lock per group of rows).

#[test]
fn t05_layer_norm() {
    let Some(m) = tutorial("05", "05-layer-norm.py") else {
        return;
    };
    let mut rng = Rng::new(105);
    // 200 rows of 1100: GROUP_SIZE_M is 128 (N <= 4096), so rows share locks and the
    // partial sums accumulate; BLOCK_SIZE 2048 masks 948 columns.
    let (rows, cols, eps) = (200usize, 1100usize, 1e-5f32);
    let block = cols.next_power_of_two().min(65536 / 2);
    let num_warps = (block as u32 / 256).clamp(1, 8);
    let group = match cols {
        c if c <= 1024 => 256,
        c if c <= 4096 => 128,
        c if c <= 8192 => 96,
        _ => 64,
    };
    let x = f16s(&rng.vec_f32(rows * cols, -3.3, -1.3));
    let w = f16s(&rng.vec_f32(cols, 0.0, 1.0));
    let bias = f16s(&rng.vec_f32(cols, 0.0, 1.0));
    let dy = f16s(&rng.vec_f32(rows * cols, -0.1, 0.1));
    let (x64, w64, b64, dy64) = (wide16(&x), wide16(&w), wide16(&bias), wide16(&dy));
    let (y_ref, mean_ref, rstd_ref) =
        common::layer_norm_ref(&x64, &w64, &b64, rows, cols, eps as f64);
    // Backward in f64: dx, dw, db.
    let mut dx_ref = vec![0.0; rows * cols];
    let (mut dw_ref, mut db_ref) = (vec![0.0; cols], vec![0.0; cols]);
    for r in 0..rows {
        let s = r * cols;
        let xhat: Vec<f64> = (0..cols)
            .map(|c| (x64[s + c] - mean_ref[r]) * rstd_ref[r])
            .collect();
        let wdy: Vec<f64> = (0..cols).map(|c| w64[c] * dy64[s + c]).collect();
        let c1 = xhat.iter().zip(&wdy).map(|(a, b)| a * b).sum::<f64>() / cols as f64;
        let c2 = wdy.iter().sum::<f64>() / cols as f64;
        for c in 0..cols {
            dx_ref[s + c] = (wdy[c] - (xhat[c] * c1 + c2)) * rstd_ref[r];
            dw_ref[c] += dy64[s + c] * xhat[c];
            db_ref[c] += dy64[s + c];
        }
    }
    on_each("05", "_layer_norm_fwd_fused", |dev| {
        let k = m.kernel("_layer_norm_fwd_fused")?;
        let (xb, wb, bb) = (dev.upload(&x)?, dev.upload(&w)?, dev.upload(&bias)?);
        let y = nan16(dev, rows * cols)?;
        let (mean, rstd) = (nan32(dev, rows)?, nan32(dev, rows)?);
        k.launch(dev, rows as u32)
            .arg(&xb)
            .arg(&y)
            .arg(&wb)
            .arg(&bb)
            .arg(&mean)
            .arg(&rstd)
            .arg(cols as i32)
            .arg(cols as i32)
            .arg(eps)
            .constexpr("BLOCK_SIZE", block)
            .num_warps(num_warps)
            .run()?;
        let e = close("y", &get16(dev, &y)?, &y_ref, 1e-2);
        close("mean", &get32(dev, &mean)?, &mean_ref, 1e-5);
        close("rstd", &get32(dev, &rstd)?, &rstd_ref, 1e-4);
        Ok(format!("max rel err {e:.1e}"))
    });
    let mean32: Vec<f32> = mean_ref.iter().map(|&v| v as f32).collect();
    let rstd32: Vec<f32> = rstd_ref.iter().map(|&v| v as f32).collect();
    on_each(
        "05",
        "_layer_norm_bwd_dx_fused + _layer_norm_bwd_dwdb",
        |dev| {
            let kdx = m.kernel("_layer_norm_bwd_dx_fused")?;
            let kdw = m.kernel("_layer_norm_bwd_dwdb")?;
            let (xb, wb, dyb) = (dev.upload(&x)?, dev.upload(&w)?, dev.upload(&dy)?);
            let (mb, vb) = (dev.upload(&mean32)?, dev.upload(&rstd32)?);
            let locks = dev.zeros::<i32>(2 * group)?;
            let (pdw, pdb) = (
                dev.zeros::<f16>(group * cols)?,
                dev.zeros::<f16>(group * cols)?,
            );
            let (dw, db) = (nan16(dev, cols)?, nan16(dev, cols)?);
            let dx = nan16(dev, rows * cols)?;
            kdx.launch(dev, rows as u32)
                .arg(&dx)
                .arg(&dyb)
                .arg(&pdw)
                .arg(&pdb)
                .arg(&xb)
                .arg(&wb)
                .arg(&mb)
                .arg(&vb)
                .arg(&locks)
                .arg(cols as i32)
                .arg(cols as i32)
                .constexpr("BLOCK_SIZE_N", block)
                .constexpr("GROUP_SIZE_M", group)
                .num_warps(num_warps)
                .run()?;
            kdw.launch(dev, cols.div_ceil(128) as u32)
                .arg(&pdw)
                .arg(&pdb)
                .arg(&dw)
                .arg(&db)
                .arg(group.min(rows) as i32)
                .arg(cols as i32)
                .constexpr("BLOCK_SIZE_M", 32)
                .constexpr("BLOCK_SIZE_N", 128)
                .run()?;
            let e = close("dx", &get16(dev, &dx)?, &dx_ref, 1e-2);
            // The partial sums are rounded to f16 at each of up to two accumulations.
            close("dw", &get16(dev, &dw)?, &dw_ref, 1e-2);
            close("db", &get16(dev, &db)?, &db_ref, 1e-2);
            let locks_after = dev.download::<i32>(&locks)?;
            assert!(
                locks_after[..group].iter().all(|&l| l == 0),
                "a lock left held"
            );
            Ok(format!("dx max rel err {e:.1e}"))
        },
    );
}

// ---------------------------------------------------------------------------------
// 06: fused attention, forward (block pointers; host descriptors) and backward.

/// Float64 attention over `heads` heads of (n, d) row-major q, k, v (Triton's
/// (Z, H, N_CTX, HEAD_DIM) contiguous layout): the output, the base-2 log-sum-exp of
/// the scaled logits per row (the kernels' `M`), and, given `d_out`, dq, dk, dv.
struct AttnRef {
    o: Vec<f64>,
    lse2: Vec<f64>,
    dq: Vec<f64>,
    dk: Vec<f64>,
    dv: Vec<f64>,
}

#[allow(clippy::too_many_arguments)]
fn attention_ref(
    q: &[f64],
    k: &[f64],
    v: &[f64],
    d_out: &[f64],
    heads: usize,
    n: usize,
    d: usize,
    scale: f64,
    causal: bool,
) -> AttnRef {
    let len = heads * n * d;
    let mut r = AttnRef {
        o: vec![0.0; len],
        lse2: vec![0.0; heads * n],
        dq: vec![0.0; len],
        dk: vec![0.0; len],
        dv: vec![0.0; len],
    };
    for h in 0..heads {
        let at = |i: usize, c: usize| h * n * d + i * d + c;
        let mut p = vec![0.0; n * n];
        for i in 0..n {
            let mut row: Vec<f64> = (0..n)
                .map(|j| {
                    if causal && j > i {
                        f64::NEG_INFINITY
                    } else {
                        scale * (0..d).map(|c| q[at(i, c)] * k[at(j, c)]).sum::<f64>()
                    }
                })
                .collect();
            let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = row.iter().map(|s| (s - mx).exp()).sum();
            r.lse2[h * n + i] = (mx + sum.ln()) / std::f64::consts::LN_2;
            for (j, s) in row.iter_mut().enumerate() {
                p[i * n + j] = (*s - mx).exp() / sum;
            }
            for c in 0..d {
                r.o[at(i, c)] = (0..n).map(|j| p[i * n + j] * v[at(j, c)]).sum();
            }
        }
        // dS = P * (dO V^T - rowsum(dO * O)); dQ = scale dS K; dK = scale dS^T Q; dV = P^T dO.
        for i in 0..n {
            let delta: f64 = (0..d).map(|c| d_out[at(i, c)] * r.o[at(i, c)]).sum();
            for j in 0..n {
                let pij = p[i * n + j];
                if pij == 0.0 {
                    continue;
                }
                let dp: f64 = (0..d).map(|c| d_out[at(i, c)] * v[at(j, c)]).sum();
                let ds = pij * (dp - delta);
                for c in 0..d {
                    r.dq[at(i, c)] += scale * ds * k[at(j, c)];
                    r.dk[at(j, c)] += scale * ds * q[at(i, c)];
                    r.dv[at(j, c)] += pij * d_out[at(i, c)];
                }
            }
        }
    }
    r
}

#[test]
fn t06_attention_forward() {
    let Some(m) = tutorial("06", "06-fused-attention.py") else {
        return;
    };
    // (Z, H, N_CTX, HEAD_DIM) = (2, 2, 128, 64): two query blocks per head of the first
    // configuration's 64 rows. sm_scale 0.5 as in the tutorial's test.
    let (z, h, n, d, sm_scale) = (2usize, 2usize, 128usize, 64usize, 0.5f32);
    let len = z * h * n * d;
    let mut rng = Rng::new(106);
    let q = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let k = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let v = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let zeros = vec![0.0; len];
    for causal in [false, true] {
        let r = attention_ref(
            &wide16(&q),
            &wide16(&k),
            &wide16(&v),
            &zeros,
            z * h,
            n,
            d,
            sm_scale as f64,
            causal,
        );
        let what = format!("_attn_fwd [CAUSAL={causal}]");
        on_each("06", &what, |dev| {
            let tuner = m.kernel("_attn_fwd")?.autotuner(dev)?.expect("autotuned");
            let tuner = tuner.timing(2.0, 10.0);
            let (qb, kb, vb) = (dev.upload(&q)?, dev.upload(&k)?, dev.upload(&v)?);
            let o = nan16(dev, len)?;
            let lse = nan32(dev, z * h * n)?;
            // Contiguous (Z, H, N_CTX, HEAD_DIM) strides, four times.
            let strides = [h * n * d, n * d, d, 1];
            let mut launch = tuner
                .launch(dev, move |c: &Config| {
                    [
                        n.div_ceil(c.int("BLOCK_M") as usize) as u32,
                        (z * h) as u32,
                        1,
                    ]
                    .into()
                })
                .arg(&qb)
                .arg(&kb)
                .arg(&vb)
                .arg(sm_scale)
                .arg(&lse)
                .arg(&o);
            for _ in 0..4 {
                launch = launch.args(strides.map(|s| (s as i32).into()));
            }
            let used = launch
                .arg(z as i32)
                .arg(h as i32)
                .constexpr("N_CTX", n)
                .constexpr("HEAD_DIM", d)
                .constexpr("CAUSAL", causal)
                .run()?;
            let e = close(&what, &get16(dev, &o)?, &r.o, 1e-2);
            close("M", &get32(dev, &lse)?, &r.lse2, 1e-3);
            Ok(format!("{used}; max rel err {e:.1e}"))
        });
    }
    // The host-descriptor variant, as the tutorial runs it on sm_90: descriptors over
    // (Z * H * N_CTX, HEAD_DIM) with the configuration's block shapes (its pre_hook).
    // Its `offset_y = off_z + off_h * N_CTX` is right for Z = 1 only: one batch.
    let (z, h) = (1usize, 4usize);
    let len = z * h * n * d;
    let (q, k, v) = (&q[..len], &k[..len], &v[..len]);
    let zeros = vec![0.0; len];
    for causal in [false, true] {
        let r = attention_ref(
            &wide16(q),
            &wide16(k),
            &wide16(v),
            &zeros,
            z * h,
            n,
            d,
            sm_scale as f64,
            causal,
        );
        let what = format!("_attn_fwd_tma [STAGE={}]", if causal { 3 } else { 1 });
        on_each("06", &what, |dev| {
            // As the tutorial launches it: descriptors with a dummy [1, 1] block, which
            // the configurations' `pre_hook=_tma_pre_hook` sizes per configuration.
            let tuner = m
                .kernel("_attn_fwd_tma")?
                .autotuner(dev)?
                .expect("autotuned");
            let tuner = tuner.timing(2.0, 10.0);
            let (qb, kb, vb) = (dev.upload(q)?, dev.upload(k)?, dev.upload(v)?);
            let o = nan16(dev, len)?;
            let lse = nan32(dev, z * h * n)?;
            let y_dim = (z * h * n) as i64;
            let desc =
                |b: &Buffer| TensorDescriptor::new(b, &[y_dim, d as i64], &[d as i64, 1], &[1, 1]);
            let launch = tuner
                .launch(dev, move |c: &Config| {
                    [
                        n.div_ceil(c.int("BLOCK_M") as usize) as u32,
                        (z * h) as u32,
                        1,
                    ]
                    .into()
                })
                .arg(sm_scale)
                .arg(&lse)
                .arg(z as i32)
                .arg(h as i32)
                .arg(desc(&qb))
                .arg(desc(&kb))
                .arg(desc(&vb))
                .arg(desc(&o))
                .constexpr("N_CTX", n)
                .constexpr("HEAD_DIM", d)
                .constexpr("FP8_OUTPUT", false)
                .constexpr("STAGE", if causal { 3 } else { 1 });
            let c = launch.run()?;
            let e = close(&what, &get16(dev, &o)?, &r.o, 1e-2);
            close("M", &get32(dev, &lse)?, &r.lse2, 1e-3);
            Ok(format!("{c}; max rel err {e:.1e}"))
        });
    }
}

#[test]
fn t06_attention_backward() {
    let Some(m) = tutorial("06", "06-fused-attention.py") else {
        return;
    };
    // The tutorial's backward is causal; N_CTX must be a multiple of BLOCK_N1 (128)
    // and of PRE_BLOCK (128). Two blocks per head.
    let (z, h, n, d, sm_scale) = (1usize, 2usize, 256usize, 64usize, 0.5f32);
    let len = z * h * n * d;
    let mut rng = Rng::new(116);
    let q = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let k = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let v = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let d_out = f16s(&rng.vec_f32(len, -1.0, 1.0));
    let r = attention_ref(
        &wide16(&q),
        &wide16(&k),
        &wide16(&v),
        &wide16(&d_out),
        z * h,
        n,
        d,
        sm_scale as f64,
        true,
    );
    // The forward's outputs, as the backward receives them: o in f16, M in f32.
    let o16: Vec<f16> = r.o.iter().map(|&x| f16::from_f64(x)).collect();
    let lse32: Vec<f32> = r.lse2.iter().map(|&x| x as f32).collect();
    // The host code pre-scales k by sm_scale / ln 2 (a torch f16 multiply).
    let arg_k: Vec<f16> = k
        .iter()
        .map(|x| f16::from_f64(x.to_f64() * (sm_scale as f64 * std::f64::consts::LOG2_E)))
        .collect();
    let delta_ref: Vec<f64> = (0..z * h * n)
        .map(|row| {
            (0..d)
                .map(|c| o16[row * d + c].to_f64() * d_out[row * d + c].to_f64())
                .sum()
        })
        .collect();
    on_each("06", "_attn_bwd_preprocess + _attn_bwd", |dev| {
        let pre = m.kernel("_attn_bwd_preprocess")?;
        let bwd = m.kernel("_attn_bwd")?;
        let (ob, dob) = (dev.upload(&o16)?, dev.upload(&d_out)?);
        let delta = nan32(dev, z * h * n)?;
        pre.launch(dev, [(n / 128) as u32, (z * h) as u32])
            .arg(&ob)
            .arg(&dob)
            .arg(&delta)
            .arg(z as i32)
            .arg(h as i32)
            .arg(n as i32)
            .constexpr("BLOCK_M", 128)
            .constexpr("HEAD_DIM", d)
            .run()?;
        close("delta", &get32(dev, &delta)?, &delta_ref, 1e-5);
        let (qb, kb, vb) = (dev.upload(&q)?, dev.upload(&arg_k)?, dev.upload(&v)?);
        let lse = dev.upload(&lse32)?;
        let (dq, dk, dv) = (nan16(dev, len)?, nan16(dev, len)?, nan16(dev, len)?);
        bwd.launch(dev, [(n / 128) as u32, 1, (z * h) as u32])
            .arg(&qb)
            .arg(&kb)
            .arg(&vb)
            .arg(sm_scale)
            .arg(&dob)
            .arg(&dq)
            .arg(&dk)
            .arg(&dv)
            .arg(&lse)
            .arg(&delta)
            .args([h * n * d, n * d, d, 1].map(|s| (s as i32).into()))
            .arg(h as i32)
            .arg(n as i32)
            .constexpr("BLOCK_M1", 32)
            .constexpr("BLOCK_N1", 128)
            .constexpr("BLOCK_M2", 128)
            .constexpr("BLOCK_N2", 32)
            .constexpr("BLK_SLICE_FACTOR", 2)
            .constexpr("HEAD_DIM", d)
            .num_warps(4)
            .num_stages(5)
            .run()?;
        let e = close("dq", &get16(dev, &dq)?, &r.dq, 2e-2);
        close("dk", &get16(dev, &dk)?, &r.dk, 2e-2);
        close("dv", &get16(dev, &dv)?, &r.dv, 2e-2);
        Ok(format!("dq max rel err {e:.1e}"))
    });
}

// ---------------------------------------------------------------------------------
// 08: grouped GEMM. The kernels read the matrices' device addresses from int64 tables
// (pointers as data): `Buffer::address`.

#[test]
fn t08_grouped_gemm() {
    let Some(m) = tutorial("08", "08-grouped-gemm.py") else {
        return;
    };
    // Full tiles only ("assume full tile for now"): every size a multiple of 128.
    let sizes = [
        (256usize, 128usize, 128usize),
        (128, 256, 64),
        (128, 128, 256),
    ];
    let mut rng = Rng::new(108);
    let mats: Vec<(Vec<f16>, Vec<f16>)> = sizes
        .iter()
        .map(|&(mm, nn, kk)| {
            (
                f16s(&rng.vec_f32(mm * kk, 0.0, 1.0)),
                f16s(&rng.vec_f32(kk * nn, 0.0, 1.0)),
            )
        })
        .collect();
    let wants: Vec<Vec<f64>> = sizes
        .iter()
        .zip(&mats)
        .map(|(&(mm, nn, kk), (a, b))| matmul_ref(&wide16(a), &wide16(b), mm, nn, kk))
        .collect();
    // Both kernels: the pointer one with B as (K, N), the descriptor one with B as (N, K).
    for tma in [false, true] {
        let name = if tma {
            "grouped_matmul_tma_kernel"
        } else {
            "grouped_matmul_kernel"
        };
        on_each("08", name, |dev| {
            let c = first_config(&m, name, dev)?;
            let mut bufs = vec![];
            let (mut a_addr, mut b_addr, mut c_addr) = (vec![], vec![], vec![]);
            let (mut g_sizes, mut g_lds) = (vec![], vec![]);
            for (&(mm, nn, kk), (a, b)) in sizes.iter().zip(&mats) {
                let b_dev: Vec<f16> = if tma {
                    (0..nn * kk).map(|i| b[(i % kk) * nn + i / kk]).collect()
                } else {
                    b.clone()
                };
                let (ab, bb, cb) = (dev.upload(a)?, dev.upload(&b_dev)?, nan16(dev, mm * nn)?);
                a_addr.push(ab.address()? as i64);
                b_addr.push(bb.address()? as i64);
                c_addr.push(cb.address()? as i64);
                g_sizes.extend([mm as i32, nn as i32, kk as i32]);
                g_lds.extend([kk as i32, if tma { kk } else { nn } as i32, nn as i32]);
                bufs.push((ab, bb, cb));
            }
            let kern = m.kernel(name)?;
            let num_sm = if tma { 4 } else { c.int("NUM_SM") as u32 };
            let mut launch = kern
                .launch(dev, num_sm)
                .arg(&dev.upload(&a_addr)?)
                .arg(&dev.upload(&b_addr)?)
                .arg(&dev.upload(&c_addr)?)
                .arg(&dev.upload(&g_sizes)?)
                .arg(&dev.upload(&g_lds)?)
                .arg(sizes.len() as i32)
                .num_warps(c.num_warps);
            for (n, v) in &c.constexprs {
                launch = launch.constexpr(n, v.clone());
            }
            if tma {
                launch = launch.constexpr("FP8", false).constexpr("NUM_SM", num_sm);
            }
            launch.run()?;
            let mut worst = 0f64;
            for (g, ((_, _, cb), want)) in bufs.iter().zip(&wants).enumerate() {
                worst = worst.max(close(
                    &format!("{name} gemm {g}"),
                    &get16(dev, cb)?,
                    want,
                    1e-2,
                ));
            }
            Ok(format!("{c}; max rel err {worst:.1e}"))
        });
    }
}

// ---------------------------------------------------------------------------------
// 09: persistent matmul: the naive, persistent, host-descriptor and device-descriptor
// kernels, with B stored transposed (N, K) as the tutorial's `b.T.contiguous()`.

#[test]
fn t09_persistent_matmul() {
    let Some(m) = tutorial("09", "09-persistent-matmul.py") else {
        return;
    };
    let mut rng = Rng::new(109);
    // Ragged in M, N and K for the 128-wide blocks; NUM_SMS below the tile count so that
    // the persistent kernels loop.
    let (mm, nn, kk, num_sms) = (200usize, 136usize, 100usize, 3u32);
    let a = f16s(&rng.vec_f32(mm * kk, -1.0, 1.0));
    let bt = f16s(&rng.vec_f32(nn * kk, -1.0, 1.0)); // (N, K)
    let b: Vec<f16> = (0..kk * nn).map(|i| bt[(i % nn) * kk + i / nn]).collect(); // (K, N)
    let want = matmul_ref(&wide16(&a), &wide16(&b), mm, nn, kk);
    // matmul(a, b.T) and matmul_persistent(a, b.T): B's view (K, N) with strides (1, K).
    for name in ["matmul_kernel", "matmul_kernel_persistent"] {
        on_each("09", name, |dev| {
            let tuner = m.kernel(name)?.autotuner(dev)?.expect("autotuned");
            let tuner = tuner.timing(2.0, 10.0);
            let (ab, bb) = (dev.upload(&a)?, dev.upload(&bt)?);
            let c = nan16(dev, mm * nn)?;
            let persistent = name.ends_with("persistent");
            let mut launch = tuner
                .launch(dev, move |c: &Config| {
                    let tiles = (mm.div_ceil(c.int("BLOCK_SIZE_M") as usize)
                        * nn.div_ceil(c.int("BLOCK_SIZE_N") as usize))
                        as u32;
                    if persistent {
                        tiles.min(num_sms)
                    } else {
                        tiles
                    }
                    .into()
                })
                .arg(&ab)
                .arg(&bb)
                .arg(&c)
                .args([mm, nn, kk, kk, 1, 1, kk, nn, 1].map(|v| (v as i32).into()));
            if persistent {
                launch = launch.constexpr("NUM_SMS", num_sms);
            }
            let used = launch.run()?;
            let e = close(name, &get16(dev, &c)?, &want, 1e-2);
            Ok(format!("{used}; max rel err {e:.1e}"))
        });
    }
    // matmul_tma(a, b): host descriptors (the tutorial's TMA helper fills them with the
    // configuration's block shapes).
    on_each("09", "matmul_kernel_tma", |dev| {
        let c = first_config(&m, "matmul_kernel_tma", dev)?;
        let (bm, bn, bk) = (
            c.int("BLOCK_SIZE_M") as u32,
            c.int("BLOCK_SIZE_N") as u32,
            c.int("BLOCK_SIZE_K") as u32,
        );
        let (ab, bb) = (dev.upload(&a)?, dev.upload(&bt)?);
        let cb = nan16(dev, mm * nn)?;
        let (m_, n_, k_) = (mm as i64, nn as i64, kk as i64);
        let kern = m.kernel("matmul_kernel_tma")?;
        let mut launch = kern
            .launch(
                dev,
                (mm.div_ceil(bm as usize) * nn.div_ceil(bn as usize)) as u32,
            )
            .arg(TensorDescriptor::new(&ab, &[m_, k_], &[k_, 1], &[bm, bk]))
            .arg(TensorDescriptor::new(&bb, &[n_, k_], &[k_, 1], &[bn, bk]))
            .arg(TensorDescriptor::new(&cb, &[m_, n_], &[n_, 1], &[bm, bn]))
            .arg(mm as i32)
            .arg(nn as i32)
            .arg(kk as i32)
            .constexpr("FP8_OUTPUT", false)
            .constexpr("WARP_SPECIALIZE", false)
            .num_warps(c.num_warps);
        for (name, value) in &c.constexprs {
            launch = launch.constexpr(name, value.clone());
        }
        if let Some(s) = c.num_stages {
            launch = launch.num_stages(s);
        }
        launch.run()?;
        let e = close("matmul_kernel_tma", &get16(dev, &cb)?, &want, 1e-2);
        Ok(format!("{c}; max rel err {e:.1e}"))
    });
    // matmul_tma_persistent(a, b) with and without the epilogue subtile (the C
    // descriptor's block is half as wide with it).
    for subtile in [true, false] {
        let what = format!("matmul_kernel_tma_persistent [EPILOGUE_SUBTILE={subtile}]");
        on_each("09", &what, |dev| {
            let tuner = m.kernel("matmul_kernel_tma_persistent")?.autotuner(dev)?;
            let c = tuner
                .expect("autotuned")
                .configs()
                .iter()
                .find(|c| c.int("EPILOGUE_SUBTILE") == subtile as i64)
                .expect("a configuration")
                .clone();
            let (bm, bn, bk) = (
                c.int("BLOCK_SIZE_M") as u32,
                c.int("BLOCK_SIZE_N") as u32,
                c.int("BLOCK_SIZE_K") as u32,
            );
            let store_bn = if subtile { bn / 2 } else { bn };
            let (ab, bb) = (dev.upload(&a)?, dev.upload(&bt)?);
            let cb = nan16(dev, mm * nn)?;
            let (m_, n_, k_) = (mm as i64, nn as i64, kk as i64);
            let tiles = (mm.div_ceil(bm as usize) * nn.div_ceil(bn as usize)) as u32;
            let kern = m.kernel("matmul_kernel_tma_persistent")?;
            let mut launch = kern
                .launch(dev, tiles.min(num_sms))
                .arg(TensorDescriptor::new(&ab, &[m_, k_], &[k_, 1], &[bm, bk]))
                .arg(TensorDescriptor::new(&bb, &[n_, k_], &[k_, 1], &[bn, bk]))
                .arg(TensorDescriptor::new(
                    &cb,
                    &[m_, n_],
                    &[n_, 1],
                    &[bm, store_bn],
                ))
                .arg(mm as i32)
                .arg(nn as i32)
                .arg(kk as i32)
                .constexpr("FP8_OUTPUT", false)
                .constexpr("NUM_SMS", num_sms)
                .constexpr("WARP_SPECIALIZE", false)
                .num_warps(c.num_warps);
            for (name, value) in &c.constexprs {
                launch = launch.constexpr(name, value.clone());
            }
            if let Some(s) = c.num_stages {
                launch = launch.num_stages(s);
            }
            launch.run()?;
            let e = close(&what, &get16(dev, &cb)?, &want, 1e-2);
            Ok(format!("{c}; max rel err {e:.1e}"))
        });
    }
    // matmul_descriptor_persistent(a, b): descriptors made in the kernel; autotuned.
    on_each("09", "matmul_kernel_descriptor_persistent", |dev| {
        let tuner = m
            .kernel("matmul_kernel_descriptor_persistent")?
            .autotuner(dev)?
            .expect("autotuned")
            .timing(2.0, 10.0);
        let (ab, bb) = (dev.upload(&a)?, dev.upload(&bt)?);
        let cb = nan16(dev, mm * nn)?;
        let used = tuner
            .launch(dev, move |c: &Config| {
                let tiles = (mm.div_ceil(c.int("BLOCK_SIZE_M") as usize)
                    * nn.div_ceil(c.int("BLOCK_SIZE_N") as usize))
                    as u32;
                tiles.min(num_sms).into()
            })
            .arg(&ab)
            .arg(&bb)
            .arg(&cb)
            .arg(mm as i32)
            .arg(nn as i32)
            .arg(kk as i32)
            .constexpr("NUM_SMS", num_sms)
            .constexpr("WARP_SPECIALIZE", false)
            .run()?;
        let e = close(
            "matmul_kernel_descriptor_persistent",
            &get16(dev, &cb)?,
            &want,
            1e-2,
        );
        Ok(format!("{used}; max rel err {e:.1e}"))
    });
}
