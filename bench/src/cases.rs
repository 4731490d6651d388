//! The benchmark cases: each builds random inputs, runs a kernel of the library, checks
//! it against a float64 reference computed here, then times it.

use crate::report::Measured;
use crate::Suite;
use std::time::Instant;
use tilewise::{Device, Kernel, Module, Result};

const VECTOR_ADD: &str = include_str!("../../shaders/vector_add.py");
const SOFTMAX: &str = include_str!("../../shaders/fused_softmax.py");
const MATMUL_BLOCK_PTR: &str = include_str!("../../shaders/matmul_block_ptr.py");

/// A case to run.
pub enum Case {
    /// f32 block-pointer matmul, `m x n x k`, with the given block sizes.
    Matmul {
        m: usize,
        n: usize,
        k: usize,
        block: (u32, u32, u32),
    },
    /// f32 vector add of `n` elements.
    VectorAdd { n: usize },
    /// Row softmax of a `rows x cols` f32 matrix.
    Softmax { rows: usize, cols: usize },
}

impl Case {
    pub fn name(&self) -> String {
        match self {
            Case::Matmul { block, .. } => {
                format!("matmul f32 bp {}x{}x{}", block.0, block.1, block.2)
            }
            Case::VectorAdd { .. } => "vector add f32".into(),
            Case::Softmax { .. } => "softmax f32".into(),
        }
    }

    fn size(&self) -> String {
        match self {
            Case::Matmul { m, n, k, .. } => format!("{m}x{n}x{k}"),
            Case::VectorAdd { n } => format!("{n}"),
            Case::Softmax { rows, cols } => format!("{rows}x{cols}"),
        }
    }
}

/// The cases of a suite at a size (interpreter-sized defaults).
pub fn select(suite: Suite, size: Option<usize>, smoke: bool) -> Vec<Case> {
    let pick = |default: usize, tiny: usize| if smoke { tiny } else { size.unwrap_or(default) };
    let mut cases = vec![];
    if matches!(suite, Suite::Matmul | Suite::All) {
        let s = pick(512, 70);
        cases.push(Case::Matmul {
            m: s,
            n: s,
            k: s,
            block: (64, 64, 32),
        });
    }
    if matches!(suite, Suite::VectorAdd | Suite::All) {
        cases.push(Case::VectorAdd {
            n: pick(1 << 20, 1000),
        });
    }
    if matches!(suite, Suite::Softmax | Suite::All) {
        let s = pick(1024, 37);
        cases.push(Case::Softmax { rows: s, cols: s });
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
}

fn max_rel_err(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0f64, |m, x| m.max(x.abs())).max(1e-30);
    got.iter()
        .zip(want)
        .map(|(&g, &w)| (g as f64 - w).abs() / scale)
        .fold(
            0f64,
            |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) },
        )
}

fn kernel(src: &str, file: &str, name: &str) -> Result<Kernel> {
    Module::parse(file, src)?.kernel(name)
}

/// Runs `launch` once to check, then `reps` times to time; returns the median seconds.
fn time(reps: usize, dev: &Device, mut launch: impl FnMut() -> Result<()>) -> Result<f64> {
    launch()?; // warm-up (specialization, caches)
    dev.synchronize()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        launch()?;
        dev.synchronize()?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

fn check(err: f64, tol: f64, case: &Case) -> Result<()> {
    if err <= tol {
        Ok(())
    } else {
        Err(tilewise::Diagnostic::new(
            tilewise::ErrorKind::Runtime,
            format!(
                "{} gave a wrong result: max relative error {err:.3e} > {tol:.0e}",
                case.name()
            ),
        ))
    }
}

pub fn run(case: &Case, dev: &Device, reps: usize) -> Result<Measured> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (seconds, flops, bytes, err) = match *case {
        Case::Matmul { m, n, k, block } => {
            let kern = kernel(
                MATMUL_BLOCK_PTR,
                "matmul_block_ptr.py",
                "matmul_block_ptr_kernel",
            )?;
            let (a, b) = (rng.vec(m * k), rng.vec(k * n));
            let mut want = vec![0f64; m * n];
            for i in 0..m {
                for p in 0..k {
                    let av = a[i * k + p] as f64;
                    for j in 0..n {
                        want[i * n + j] += av * b[p * n + j] as f64;
                    }
                }
            }
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
            let err = max_rel_err(&dev.download::<f32>(&dc)?, &want);
            check(err, 1e-5, case)?;
            (
                time(reps, dev, launch)?,
                2.0 * (m * n * k) as f64,
                4.0 * (m * k + k * n + m * n) as f64,
                err,
            )
        }
        Case::VectorAdd { n } => {
            let kern = kernel(VECTOR_ADD, "vector_add.py", "add_kernel")?;
            let (x, y) = (rng.vec(n), rng.vec(n));
            let want: Vec<f64> = x
                .iter()
                .zip(&y)
                .map(|(a, b)| *a as f64 + *b as f64)
                .collect();
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
            let err = max_rel_err(&dev.download::<f32>(&dout)?, &want);
            check(err, 1e-6, case)?;
            (time(reps, dev, launch)?, n as f64, 12.0 * n as f64, err)
        }
        Case::Softmax { rows, cols } => {
            let kern = kernel(SOFTMAX, "fused_softmax.py", "softmax_kernel")?;
            let x = rng.vec(rows * cols);
            let mut want = vec![0f64; rows * cols];
            for r in 0..rows {
                let row = &x[r * cols..(r + 1) * cols];
                let mx = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
                let sum: f64 = row.iter().map(|&v| (v as f64 - mx).exp()).sum();
                for c in 0..cols {
                    want[r * cols + c] = (row[c] as f64 - mx).exp() / sum;
                }
            }
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
                    .run()
            };
            launch()?;
            let err = max_rel_err(&dev.download::<f32>(&dout)?, &want);
            check(err, 1e-5, case)?;
            (
                time(reps, dev, launch)?,
                0.0,
                8.0 * (rows * cols) as f64,
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
