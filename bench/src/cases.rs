//! The benchmark cases: each builds random inputs, runs a kernel of the library, checks
//! it against a float64 reference computed here (on sampled outputs for large sizes),
//! then times it: one warm-up, then batches of back-to-back launches ended by one
//! synchronization, reporting the median time per launch.

use crate::report::Measured;
use crate::Suite;
use std::time::Instant;
use tilewise::half::f16;
use tilewise::{Device, DeviceKind, Kernel, Module, Result};

const VECTOR_ADD: &str = include_str!("../../shaders/vector_add.py");
const SOFTMAX: &str = include_str!("../../shaders/fused_softmax.py");
const MATMUL_BLOCK_PTR: &str = include_str!("../../shaders/matmul_block_ptr.py");
const MATMUL: &str = include_str!("../../shaders/matmul.py");
const LAYER_NORM: &str = include_str!("../../shaders/layer_norm.py");

/// A case to run.
#[derive(Clone, Debug)]
pub enum Case {
    /// The plain device buffer copy of `n` f32: the bandwidth reference.
    Copy { n: usize },
    /// f32 vector add of `n` elements.
    VectorAdd { n: usize },
    /// Row softmax of a `rows x cols` f32 matrix.
    Softmax { rows: usize, cols: usize },
    /// Layer-norm forward (Triton tutorial 05) of a `rows x cols` f32 matrix.
    LayerNorm { rows: usize, cols: usize },
    /// f32 block-pointer matmul `m x n x k` with `(BM, BN, BK)` blocks.
    MatmulF32 {
        m: usize,
        n: usize,
        k: usize,
        block: (u32, u32, u32),
    },
    /// Source text to validated WGSL for the block-pointer matmul (64x64x32), on the
    /// host: parse, trace, lower, print, naga validation.
    CompileMatmul,
    /// Grouped matmul with f16 inputs, f32 accumulation and f32 output.
    MatmulF16 {
        m: usize,
        n: usize,
        k: usize,
        block: (u32, u32, u32),
    },
}

impl Case {
    pub fn name(&self) -> String {
        match self {
            Case::Copy { .. } => "copy f32 (reference)".into(),
            Case::CompileMatmul => "compile matmul to WGSL".into(),
            Case::VectorAdd { .. } => "vector add f32".into(),
            Case::Softmax { .. } => "softmax f32".into(),
            Case::LayerNorm { .. } => "layer norm fwd f32".into(),
            Case::MatmulF32 { block, .. } => {
                format!("matmul f32 bp {}x{}x{}", block.0, block.1, block.2)
            }
            Case::MatmulF16 { block, .. } => {
                format!("matmul f16->f32 {}x{}x{}", block.0, block.1, block.2)
            }
        }
    }

    fn size(&self) -> String {
        match self {
            Case::Copy { n } | Case::VectorAdd { n } => format!("{n}"),
            Case::CompileMatmul => "64x64x32".into(),
            Case::Softmax { rows, cols } | Case::LayerNorm { rows, cols } => {
                format!("{rows}x{cols}")
            }
            Case::MatmulF32 { m, n, k, .. } | Case::MatmulF16 { m, n, k, .. } => {
                format!("{m}x{n}x{k}")
            }
        }
    }
}

/// The cases of a suite for a device, at `size` or the device's default size.
pub fn select(suite: Suite, size: Option<usize>, smoke: bool, gpu: bool) -> Vec<Case> {
    let pick = |gpu_default: usize, cpu_default: usize, tiny: usize| {
        if smoke {
            tiny
        } else {
            size.unwrap_or(if gpu { gpu_default } else { cpu_default })
        }
    };
    let mut cases = vec![];
    let want = |s: Suite| suite == s || suite == Suite::All;
    if want(Suite::VectorAdd) {
        let n = pick(1 << 28, 1 << 20, 1000);
        cases.push(Case::Copy { n });
        cases.push(Case::VectorAdd { n });
    }
    if want(Suite::Softmax) {
        let s = pick(8192, 1024, 37);
        cases.push(Case::Softmax { rows: s, cols: s });
    }
    if want(Suite::LayerNorm) {
        let rows = pick(4096, 256, 7);
        let cols = pick(8192, 1024, 300);
        cases.push(Case::LayerNorm { rows, cols });
    }
    if want(Suite::Matmul) {
        let s = pick(4096, 512, 70);
        // Smoke runs use blocks that fit WebGPU's default 16 KiB of workgroup memory.
        let block = if smoke { (32, 32, 16) } else { (64, 64, 32) };
        cases.push(Case::MatmulF32 {
            m: s,
            n: s,
            k: s,
            block,
        });
        if gpu || smoke {
            cases.push(Case::MatmulF16 {
                m: s,
                n: s,
                k: s,
                block,
            });
        }
        cases.push(Case::CompileMatmul);
    }
    cases
}

/// A small deterministic generator of uniform floats in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
    fn index(&mut self, n: usize) -> usize {
        ((self.next() + 1.0) * 0.5 * n as f32) as usize % n
    }
}

fn kernel(src: &str, file: &str, name: &str) -> Result<Kernel> {
    Module::parse(file, src)?.kernel(name)
}

/// Median seconds per launch: `batch` launches back to back, one synchronization.
fn time(reps: usize, dev: &Device, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    launch()?; // warm-up (specialization, pipeline creation, caches)
    dev.synchronize()?;
    // GPUs queue launches: time a batch and divide, so that the submission and the
    // wait at the end are amortized (`TILEWISE_BENCH_BATCH` overrides the size).
    let default_batch = if dev.kind() == DeviceKind::Wgpu {
        50
    } else {
        1
    };
    let batch = std::env::var("TILEWISE_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_batch);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..batch {
            launch()?;
        }
        dev.synchronize()?;
        times.push(t.elapsed().as_secs_f64() / batch as f64);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn fail(case: &Case, what: String) -> tilewise::Diagnostic {
    tilewise::Diagnostic::new(
        tilewise::ErrorKind::Runtime,
        format!("{} gave a wrong result: {what}", case.name()),
    )
}

/// Largest relative error of sampled outputs, scaled by the reference's magnitude.
fn check_samples(case: &Case, samples: &[(f64, f64)], tol: f64) -> Result<f64> {
    let scale = samples
        .iter()
        .fold(0f64, |m, (_, w)| m.max(w.abs()))
        .max(1e-30);
    let mut worst = 0f64;
    for (g, w) in samples {
        let e = (g - w).abs() / scale;
        if !e.is_finite() || e > tol {
            return Err(fail(
                case,
                format!("{g} where the reference is {w} (tolerance {tol:.0e})"),
            ));
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

/// Reference samples of C = A @ B (both row-major, f64 accumulation).
fn matmul_samples(
    rng: &mut Rng,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> Vec<(f64, f64)> {
    (0..256)
        .map(|_| {
            let (i, j) = (rng.index(m), rng.index(n));
            let want: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            (c[i * n + j] as f64, want)
        })
        .collect()
}

pub fn run(case: &Case, dev: &Device, reps: usize) -> Result<Measured> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (seconds, flops, bytes, err) = match *case {
        Case::CompileMatmul => {
            let compile = || -> Result<()> {
                let kern = kernel(
                    MATMUL_BLOCK_PTR,
                    "matmul_block_ptr.py",
                    "matmul_block_ptr_kernel",
                )?;
                let host = Device::interpreter();
                let (a, c) = (host.zeros::<f32>(16)?, host.zeros::<f32>(16)?);
                let mut launch = kern.launch(&host, 1).arg(&a).arg(&a).arg(&c);
                for v in [4096i32, 4096, 4096, 4096, 1, 4096, 1, 4096, 1] {
                    launch = launch.arg(v);
                }
                let compiled = launch
                    .constexpr("BLOCK_M", 64)
                    .constexpr("BLOCK_N", 64)
                    .constexpr("BLOCK_K", 32)
                    .compile()?;
                compiled.wgsl().map(|_| ())
            };
            compile()?;
            let mut times = vec![];
            for _ in 0..reps.max(3) {
                let t = Instant::now();
                compile()?;
                times.push(t.elapsed().as_secs_f64());
            }
            times.sort_by(f64::total_cmp);
            (times[times.len() / 2], 0.0, 0.0, 0.0)
        }
        Case::Copy { n } => {
            let x = rng.vec(n);
            let (src, dst) = (dev.upload(&x)?, dev.upload(&vec![f32::NAN; n])?);
            dev.copy(&src, &dst)?;
            let got = dev.download::<f32>(&dst)?;
            if got != x {
                return Err(fail(case, "the copy differs from its source".into()));
            }
            (
                time(reps, dev, || dev.copy(&src, &dst))?,
                0.0,
                8.0 * n as f64,
                0.0,
            )
        }
        Case::VectorAdd { n } => {
            let kern = kernel(VECTOR_ADD, "vector_add.py", "add_kernel")?;
            let (x, y) = (rng.vec(n), rng.vec(n));
            let (dx, dy) = (dev.upload(&x)?, dev.upload(&y)?);
            let dout = dev.upload(&vec![f32::NAN; n])?;
            let launch = || {
                kern.launch(dev, (n as u32).div_ceil(1024))
                    .arg(&dx)
                    .arg(&dy)
                    .arg(&dout)
                    .arg(n as i32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .run()
            };
            launch()?;
            let got = dev.download::<f32>(&dout)?;
            let samples: Vec<(f64, f64)> = (0..n)
                .map(|i| (got[i] as f64, x[i] as f64 + y[i] as f64))
                .collect();
            let err = check_samples(case, &samples, 1e-6)?;
            (time(reps, dev, launch)?, n as f64, 12.0 * n as f64, err)
        }
        Case::Softmax { rows, cols } => {
            let kern = kernel(SOFTMAX, "fused_softmax.py", "softmax_kernel")?;
            let x = rng.vec(rows * cols);
            let dx = dev.upload(&x)?;
            let dout = dev.upload(&vec![f32::NAN; rows * cols])?;
            let block = cols.next_power_of_two() as u32;
            let launch = || {
                kern.launch(dev, rows as u32)
                    .arg(&dout)
                    .arg(&dx)
                    .arg(cols as i32)
                    .arg(cols as i32)
                    .arg(rows as i32)
                    .arg(cols as i32)
                    .constexpr("BLOCK_SIZE", block)
                    // Triton's tutorial uses 16 warps for 8192-wide rows; our reduction
                    // reads every partner's partial in every thread, so 4 warps is
                    // faster until the reduction becomes a tree (see BENCHMARKS.md).
                    .num_warps(4)
                    .run()
            };
            launch()?;
            let got = dev.download::<f32>(&dout)?;
            let mut samples = vec![];
            for _ in 0..16.min(rows) {
                let r = rng.index(rows);
                let row = &x[r * cols..(r + 1) * cols];
                let mx = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
                let sum: f64 = row.iter().map(|&v| (v as f64 - mx).exp()).sum();
                for c in 0..cols {
                    samples.push((got[r * cols + c] as f64, (row[c] as f64 - mx).exp() / sum));
                }
            }
            let err = check_samples(case, &samples, 1e-5)?;
            (
                time(reps, dev, launch)?,
                0.0,
                8.0 * (rows * cols) as f64,
                err,
            )
        }
        Case::LayerNorm { rows, cols } => {
            let kern = kernel(LAYER_NORM, "layer_norm.py", "_layer_norm_fwd_fused")?;
            let (x, w, b) = (rng.vec(rows * cols), rng.vec(cols), rng.vec(cols));
            let (dx, dw, db) = (dev.upload(&x)?, dev.upload(&w)?, dev.upload(&b)?);
            let dy = dev.upload(&vec![f32::NAN; rows * cols])?;
            let (dmean, drstd) = (
                dev.upload(&vec![f32::NAN; rows])?,
                dev.upload(&vec![f32::NAN; rows])?,
            );
            let launch = || {
                kern.launch(dev, rows as u32)
                    .arg(&dx)
                    .arg(&dy)
                    .arg(&dw)
                    .arg(&db)
                    .arg(&dmean)
                    .arg(&drstd)
                    .arg(cols as i32)
                    .arg(cols as i32)
                    .arg(1e-5f32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .run()
            };
            launch()?;
            let y = dev.download::<f32>(&dy)?;
            let mut samples = vec![];
            for _ in 0..8.min(rows) {
                let r = rng.index(rows);
                let row = &x[r * cols..(r + 1) * cols];
                let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
                let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
                let rstd = 1.0 / (var + 1e-5).sqrt();
                for c in 0..cols {
                    let want = (row[c] as f64 - mean) * rstd * w[c] as f64 + b[c] as f64;
                    samples.push((y[r * cols + c] as f64, want));
                }
            }
            let err = check_samples(case, &samples, 1e-4)?;
            // X read twice for the statistics and once to normalize, Y written once.
            (
                time(reps, dev, launch)?,
                0.0,
                4.0 * 4.0 * (rows * cols) as f64,
                err,
            )
        }
        Case::MatmulF32 { m, n, k, block } => {
            let kern = kernel(
                MATMUL_BLOCK_PTR,
                "matmul_block_ptr.py",
                "matmul_block_ptr_kernel",
            )?;
            let (a, b) = (rng.vec(m * k), rng.vec(k * n));
            let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
            let dc = dev.upload(&vec![f32::NAN; m * n])?;
            let grid = [(m as u32).div_ceil(block.0), (n as u32).div_ceil(block.1)];
            let launch = || {
                kern.launch(dev, grid)
                    .arg(&da)
                    .arg(&db)
                    .arg(&dc)
                    .arg(m as i32)
                    .arg(n as i32)
                    .arg(k as i32)
                    .arg(k as i32)
                    .arg(1i32)
                    .arg(n as i32)
                    .arg(1i32)
                    .arg(n as i32)
                    .arg(1i32)
                    .constexpr("BLOCK_M", block.0)
                    .constexpr("BLOCK_N", block.1)
                    .constexpr("BLOCK_K", block.2)
                    .run()
            };
            launch()?;
            let c = dev.download::<f32>(&dc)?;
            let err = check_samples(case, &matmul_samples(&mut rng, &a, &b, &c, m, n, k), 1e-5)?;
            let bytes = 4.0 * (m * k + k * n + m * n) as f64;
            (
                time(reps, dev, launch)?,
                2.0 * (m * n * k) as f64,
                bytes,
                err,
            )
        }
        Case::MatmulF16 { m, n, k, block } => {
            let kern = kernel(MATMUL, "matmul.py", "matmul_kernel")?;
            let a: Vec<f16> = rng.vec(m * k).into_iter().map(f16::from_f32).collect();
            let b: Vec<f16> = rng.vec(k * n).into_iter().map(f16::from_f32).collect();
            let (da, db) = (dev.upload(&a)?, dev.upload(&b)?);
            let dc = dev.upload(&vec![f32::NAN; m * n])?;
            let grid = (m as u32).div_ceil(block.0) * (n as u32).div_ceil(block.1);
            let launch = || {
                kern.launch(dev, grid)
                    .arg(&da)
                    .arg(&db)
                    .arg(&dc)
                    .arg(m as i32)
                    .arg(n as i32)
                    .arg(k as i32)
                    .arg(k as i32)
                    .arg(1i32)
                    .arg(n as i32)
                    .arg(1i32)
                    .arg(n as i32)
                    .arg(1i32)
                    .constexpr("BLOCK_SIZE_M", block.0)
                    .constexpr("BLOCK_SIZE_N", block.1)
                    .constexpr("BLOCK_SIZE_K", block.2)
                    .constexpr("GROUP_SIZE_M", 8)
                    .run()
            };
            launch()?;
            let c = dev.download::<f32>(&dc)?;
            let af: Vec<f32> = a.iter().map(|x| x.to_f32()).collect();
            let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
            let err = check_samples(case, &matmul_samples(&mut rng, &af, &bf, &c, m, n, k), 1e-4)?;
            let bytes = (2 * (m * k + k * n) + 4 * m * n) as f64;
            (
                time(reps, dev, launch)?,
                2.0 * (m * n * k) as f64,
                bytes,
                err,
            )
        }
    };
    Ok(Measured {
        case: case.name(),
        device: dev.name(),
        size: case.size(),
        seconds,
        flops,
        bytes,
        max_rel_err: err,
    })
}
