//! The performance cases of Triton's own tutorials, run from the tutorial files
//! verbatim: 06-fused-attention's `_attn_fwd` (its benchmark's f16 shapes: batch 4,
//! 32 heads, causal and not) and 09-persistent-matmul's `matmul_kernel_persistent`
//! (its benchmark's f16 8192 x 8192 products), both through the source's own
//! `@triton.autotune` configurations. The files are not part of tilewise: the
//! directory comes from `--tutorials DIR` or `TILEWISE_TRITON_TUTORIALS`, and without
//! it the cases are skipped with a note. Results are checked against float64 on sampled
//! rows (attention) or elements (matmul). `bench/reference_tutorials.py` times Triton on
//! the same kernels and shapes (one JSON object a case).

use super::{record, CaseRun};
use crate::measured::Measured;
use crate::references::check;
use tilewise::half::f16;
use tilewise::{Config, DeviceKind, Module, Result};

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The environment variable naming the tutorial directory (as for the test).
pub const ENV_DIR: &str = "TILEWISE_TRITON_TUTORIALS";

static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Sets the tutorial directory from `--tutorials` (else the environment); once.
pub fn set_dir(given: Option<PathBuf>) {
    let _ = DIR.set(given.or_else(|| std::env::var_os(ENV_DIR).map(PathBuf::from)));
}

/// The tutorial directory, if one was given.
pub fn dir() -> Option<&'static Path> {
    DIR.get_or_init(|| std::env::var_os(ENV_DIR).map(PathBuf::from))
        .as_deref()
}

fn module(file: &str) -> Result<Module> {
    let dir = dir().expect("tutorial cases are only selected with a directory");
    Module::from_file(dir.join(file))
}

/// Streaming multiprocessors of the device, for the persistent kernel's `NUM_SMS`
/// (the tutorial asks torch): the H200's 132 on CUDA, a few elsewhere.
fn num_sms(kind: DeviceKind) -> u32 {
    if kind == DeviceKind::Cuda {
        132
    } else {
        4
    }
}

fn f16s(v: &[f32]) -> Vec<f16> {
    v.iter().map(|&x| f16::from_f32(x)).collect()
}

/// 06's `_attn_fwd` on (batch, heads, n_ctx, head_dim) f16 q, k, v; sm_scale 1.3 as in
/// the tutorial's benchmark.
pub(super) fn attention(
    cx: &mut CaseRun,
    row: &mut Measured,
    (z, h, n, d): (usize, usize, usize, usize),
    causal: bool,
) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = module("06-fused-attention.py")?.kernel("_attn_fwd")?;
    let tuner = kern.autotuner(dev)?.expect("_attn_fwd is autotuned");
    let len = z * h * n * d;
    let (q, k, v) = (cx.rng.vec(len), cx.rng.vec(len), cx.rng.vec(len));
    let (q, k, v) = (f16s(&q), f16s(&k), f16s(&v));
    let (qb, kb, vb) = (dev.upload(&q)?, dev.upload(&k)?, dev.upload(&v)?);
    let o = dev.upload(&vec![f16::NAN; len])?;
    let lse = dev.upload(&vec![f32::NAN; z * h * n])?;
    let sm_scale = 1.3f32;
    let strides: [tilewise::Arg; 4] = [h * n * d, n * d, d, 1].map(|s| (s as i32).into());
    let launch = || -> Result<Config> {
        let mut l = tuner
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
            l = l.args(strides.clone());
        }
        l.arg(z as i32)
            .arg(h as i32)
            .constexpr("N_CTX", n)
            .constexpr("HEAD_DIM", d)
            .constexpr("CAUSAL", causal)
            .run()
    };
    let used = launch()?;
    // Sampled rows against float64.
    let got = dev.download::<f16>(&o)?;
    let mut samples = vec![];
    for _ in 0..8 {
        let (head, i) = (cx.rng.index(z * h), cx.rng.index(n));
        let at = |j: usize, c: usize| head * n * d + j * d + c;
        let last = if causal { i } else { n - 1 };
        let s: Vec<f64> = (0..=last)
            .map(|j| {
                sm_scale as f64
                    * (0..d)
                        .map(|c| q[at(i, c)].to_f64() * k[at(j, c)].to_f64())
                        .sum::<f64>()
            })
            .collect();
        let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = s.iter().map(|x| (x - mx).exp()).sum();
        for c in 0..d {
            let want: f64 = (0..=last)
                .map(|j| (s[j] - mx).exp() / sum * v[at(j, c)].to_f64())
                .sum();
            samples.push((got[at(i, c)].to_f64(), want));
        }
    }
    let err = check(&name, samples.into_iter(), 2e-2)?;
    let t = crate::timing::time(reps, dev, &mut || launch().map(|_| ()))?;
    let mut flops = 4.0 * (z * h * n * n * d) as f64;
    if causal {
        flops *= 0.5;
    }
    let bytes = (4 * len * 2 + z * h * n * 4) as f64;
    record(row, t, flops, bytes, err);
    row.notes.push(("block_m", used.int("BLOCK_M") as f64));
    row.notes.push(("block_n", used.int("BLOCK_N") as f64));
    row.notes.push(("num_warps", used.num_warps as f64));
    Ok(())
}

/// 09's `matmul_kernel_persistent` on f16 (M, K) x (K, N), B stored (N, K) as the
/// tutorial's `b.T.contiguous()` and passed as its transposed view.
pub(super) fn persistent_matmul(
    cx: &mut CaseRun,
    row: &mut Measured,
    (m, n, k): (usize, usize, usize),
) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = module("09-persistent-matmul.py")?.kernel("matmul_kernel_persistent")?;
    let tuner = kern
        .autotuner(dev)?
        .expect("matmul_kernel_persistent is autotuned");
    let a = f16s(&cx.rng.vec(m * k));
    let bt = f16s(&cx.rng.vec(n * k));
    let (ab, bb) = (dev.upload(&a)?, dev.upload(&bt)?);
    let c = dev.upload(&vec![f16::NAN; m * n])?;
    let sms = num_sms(dev.kind());
    let launch = || -> Result<Config> {
        tuner
            .launch(dev, move |c: &Config| {
                let tiles = m.div_ceil(c.int("BLOCK_SIZE_M") as usize)
                    * n.div_ceil(c.int("BLOCK_SIZE_N") as usize);
                (tiles as u32).min(sms).into()
            })
            .arg(&ab)
            .arg(&bb)
            .arg(&c)
            .args([m, n, k, k, 1, 1, k, n, 1].map(|v| (v as i32).into()))
            .constexpr("NUM_SMS", sms)
            .run()
    };
    let used = launch()?;
    let got = dev.download::<f16>(&c)?;
    let mut samples = vec![];
    for _ in 0..64 {
        let (i, j) = (cx.rng.index(m), cx.rng.index(n));
        let want: f64 = (0..k)
            .map(|p| a[i * k + p].to_f64() * bt[j * k + p].to_f64())
            .sum();
        samples.push((got[i * n + j].to_f64(), want));
    }
    let err = check(&name, samples.into_iter(), 1e-2)?;
    let t = crate::timing::time(reps, dev, &mut || launch().map(|_| ()))?;
    record(
        row,
        t,
        2.0 * (m * n * k) as f64,
        (2 * (m * k + n * k + m * n)) as f64,
        err,
    );
    row.notes.push(("block_m", used.int("BLOCK_SIZE_M") as f64));
    row.notes.push(("block_n", used.int("BLOCK_SIZE_N") as f64));
    row.notes.push(("block_k", used.int("BLOCK_SIZE_K") as f64));
    row.notes.push(("num_warps", used.num_warps as f64));
    row.notes.push(("num_sms", sms as f64));
    Ok(())
}
