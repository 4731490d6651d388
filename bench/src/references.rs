//! What the cases are checked and compared against: the float64 CPU references
//! ([`softmax_f64`], [`layer_norm_f64`], sampled matmul outputs), [`check`], which
//! fails a case whose result is off by more than its tolerance, and on CUDA the cuBLAS
//! GEMMs measured next to the matmul cases ([`CudaRefs`], [`gemm_reference`]).

use crate::inputs::Rng;
use crate::measured::{Measured, Role};
use crate::timing::{time, Rotation};
use tilewise::cuda::{Cublas, CudaRuntime, DeviceMemory, GemmPrecision};
use tilewise::Result;

/// The CUDA runtime and cuBLAS handle of the references (their own stream and events).
pub struct CudaRefs {
    pub rt: CudaRuntime,
    pub blas: Cublas,
}

impl CudaRefs {
    pub fn new(ordinal: usize) -> Result<CudaRefs> {
        let rt = CudaRuntime::new(ordinal)?;
        let blas = Cublas::new(&rt)?;
        Ok(CudaRefs { rt, blas })
    }
}

/// The case name of the cuBLAS GEMM of precision `p`.
pub fn gemm_name(p: GemmPrecision) -> &'static str {
    match p {
        GemmPrecision::F32 => "cuBLAS f32 (ieee)",
        GemmPrecision::Tf32 => "cuBLAS tf32",
        GemmPrecision::F16 => "cuBLAS f16",
        GemmPrecision::F16F32Out => "cuBLAS f16->f32",
        GemmPrecision::Bf16 => "cuBLAS bf16",
        GemmPrecision::Bf16F32Out => "cuBLAS bf16->f32",
    }
}

/// The softmax of `row` in float64: the reference of the softmax cases.
pub fn softmax_f64(row: &[f32]) -> Vec<f64> {
    let mx = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let e: Vec<f64> = row.iter().map(|&v| (v as f64 - mx).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| v / sum).collect()
}

/// The layer norm of `row` in float64, with weights `w`, biases `b` and `eps` added to
/// the variance: the reference of the layer-norm case.
pub fn layer_norm_f64(row: &[f32], w: &[f32], b: &[f32], eps: f64) -> Vec<f64> {
    let cols = row.len();
    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
    let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
    let rstd = 1.0 / (var + eps).sqrt();
    (0..cols)
        .map(|c| (row[c] as f64 - mean) * rstd * w[c] as f64 + b[c] as f64)
        .collect()
}

/// The error of a case whose result is wrong.
pub fn fail(case: &str, what: String) -> tilewise::Diagnostic {
    tilewise::Diagnostic::new(
        tilewise::ErrorKind::Runtime,
        format!("{case} gave a wrong result: {what}"),
    )
}

/// Set by `--unchecked`: [`check`] passes everything and reports NaN.
pub static UNCHECKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Largest error of (got, want) pairs, relative to the reference's largest magnitude; an
/// error above `tol` or a non-finite value fails the case.
pub fn check(case: &str, pairs: impl Iterator<Item = (f64, f64)> + Clone, tol: f64) -> Result<f64> {
    if UNCHECKED.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(f64::NAN);
    }
    let scale = pairs
        .clone()
        .fold(0f64, |m, (_, w)| m.max(w.abs()))
        .max(1e-30);
    let mut worst = 0f64;
    for (g, w) in pairs {
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
pub fn matmul_samples(
    rng: &mut Rng,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    (m, n, k): (usize, usize, usize),
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

/// One cuBLAS GEMM on the references' stream, rotating through the same number of
/// buffer sets as the case, outputs poisoned first, timed like the kernels (events,
/// warm-up, median of batches). The results stay in the sets' `c` for checking.
pub fn gemm_reference(
    refs: &CudaRefs,
    p: GemmPrecision,
    sets: &[(DeviceMemory, DeviceMemory, DeviceMemory)],
    (m, n, k): (usize, usize, usize),
    reps: usize,
) -> Result<Measured> {
    let poison: Vec<u8> = std::iter::repeat_n(f32::NAN.to_le_bytes(), m * n)
        .flatten()
        .collect();
    for (_, _, c) in sets {
        refs.rt.write(c, 0, &poison)?;
    }
    // The checked results are these first GEMMs'; the timed ones overwrite them with
    // the same values.
    for (a, b, c) in sets {
        refs.blas.gemm(p, m, n, k, a, b, c)?;
    }
    let mut rot = Rotation::new(sets.len());
    let mut gemm = || {
        let (a, b, c) = &sets[rot.advance()];
        refs.blas.gemm(p, m, n, k, a, b, c)
    };
    let t = time(reps, &refs.rt, &mut gemm)?;
    Ok(Measured {
        case: gemm_name(p).into(),
        device: String::new(),
        size: String::new(),
        seconds: t.seconds,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 0.0,
        max_rel_err: 0.0,
        timer: t.timer,
        role: Role::Reference,
        reference: None,
        roofline: true,
        notes: vec![("batch", t.batch as f64), ("input_sets", sets.len() as f64)],
    })
}
