//! Shared helpers for the integration tests: a small deterministic RNG, poisoned
//! outputs, float64 reference implementations and comparison helpers.

#![allow(dead_code)]

use std::sync::OnceLock;
use tilewise::{Buffer, Device, Diagnostic, Module};

/// The executor every test runs on: the reference interpreter.
pub fn device() -> Device {
    Device::interpreter()
}

/// Parses a source file, panicking with the rendered diagnostic if it fails.
pub fn module(name: &str, src: &str) -> Module {
    match Module::parse(name, src) {
        Ok(m) => m,
        Err(e) => panic!("{name} failed to parse:\n{}", e.render()),
    }
}

/// Unwraps a tilewise result, showing the rendered diagnostic on failure.
#[track_caller]
pub fn ok<T>(r: Result<T, Diagnostic>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("unexpected error:\n{}", e.render()),
    }
}

/// Unwraps an expected error.
#[track_caller]
pub fn err<T>(r: Result<T, Diagnostic>) -> Diagnostic {
    match r {
        Ok(_) => panic!("expected an error, got Ok"),
        Err(e) => e,
    }
}

/// xorshift64* — small, deterministic, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// `n` f32 values uniform in [lo, hi).
    pub fn vec_f32(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi) as f32).collect()
    }

    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % ((hi - lo + 1) as u64)) as i64
    }
}

/// The value a poisoned f32 output starts with: NaN, so any element the kernel fails
/// to write makes every comparison fail.
pub const POISON_F32: f32 = f32::NAN;

/// A sentinel for outputs that must stay untouched: distinctive and finite, so an
/// equality check proves the kernel never wrote there.
pub const SENTINEL_F32: f32 = -7777.25;

/// Uploads `n` copies of `v`.
pub fn filled<T: tilewise::Element>(dev: &Device, n: usize, v: T) -> Buffer {
    ok(dev.upload(&vec![v; n]))
}

/// An f32 output of `n` elements, poisoned with NaN.
pub fn poisoned_f32(dev: &Device, n: usize) -> Buffer {
    filled(dev, n, POISON_F32)
}

/// Converts to f64 for the references.
pub fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

/// Largest element-wise error relative to the largest reference magnitude; NaN or a
/// length mismatch counts as infinite error.
pub fn max_rel_err(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    let mut worst = 0.0f64;
    for (g, w) in got.iter().zip(want) {
        let g = *g as f64;
        if !g.is_finite() {
            return f64::INFINITY;
        }
        worst = worst.max((g - w).abs() / scale);
    }
    worst
}

/// Asserts `max_rel_err(got, want) < tol`, naming the first bad element.
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f64], tol: f64) {
    let e = max_rel_err(got, want);
    if e.is_nan() || e >= tol {
        let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
        let bad = got
            .iter()
            .zip(want)
            .position(|(g, w)| {
                let e = (*g as f64 - w).abs() / scale;
                e.is_nan() || e >= tol
            })
            .unwrap_or(0);
        panic!(
            "{what}: max relative error {e:e} >= {tol:e} (len got {} want {}); first bad index {bad}: got {:?}, want {:?}",
            got.len(),
            want.len(),
            got.get(bad),
            want.get(bad)
        );
    }
}

/// Row-major (M, K) x (K, N) in f64.
pub fn matmul_ref(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let av = a[i * k + p];
            for j in 0..n {
                c[i * n + j] += av * b[p * n + j];
            }
        }
    }
    c
}

/// Row-wise softmax of a row-major (rows, cols) matrix in f64.
pub fn softmax_ref(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; rows * cols];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..cols {
            out[r * cols + c] = (row[c] - m).exp() / s;
        }
    }
    out
}

/// Layer-norm forward in f64: (y, mean, rstd).
pub fn layer_norm_ref(
    x: &[f64],
    w: &[f64],
    b: &[f64],
    rows: usize,
    cols: usize,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut y = vec![0.0; rows * cols];
    let mut means = vec![0.0; rows];
    let mut rstds = vec![0.0; rows];
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mean = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for c in 0..cols {
            y[r * cols + c] = (row[c] - mean) * rstd * w[c] + b[c];
        }
        means[r] = mean;
        rstds[r] = rstd;
    }
    (y, means, rstds)
}

/// silu(g) * u in f64.
pub fn swiglu_ref(g: &[f64], u: &[f64]) -> Vec<f64> {
    g.iter()
        .zip(u)
        .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
        .collect()
}

/// The 1-based (line, column) of the `nth` (0-based) occurrence of `needle` in `src`.
pub fn line_col_of(src: &str, needle: &str, nth: usize) -> (u32, u32) {
    let (idx, _) = src
        .match_indices(needle)
        .nth(nth)
        .unwrap_or_else(|| panic!("`{needle}` (occurrence {nth}) not in source"));
    let before = &src[..idx];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = src[line_start..idx].chars().count() as u32 + 1;
    (line, col)
}

/// A device that may be absent: `None` with a note on stderr, or a failure when the
/// environment variable `require` is `1` (CI and the device runs set them).
pub fn optional_device(
    cell: &'static OnceLock<Option<Device>>,
    leg: &str,
    require: &str,
    open: fn() -> tilewise::Result<Device>,
) -> Option<Device> {
    cell.get_or_init(|| match open() {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var(require).as_deref() == Ok("1") {
                panic!("{require}=1 but the {leg} leg has no device: {e}");
            }
            eprintln!("SKIPPED ({leg} leg): {e}");
            None
        }
    })
    .clone()
}

pub fn wgpu_device() -> Option<Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    optional_device(&DEV, "wgpu", "TILEWISE_REQUIRE_WGPU", Device::wgpu)
}

pub fn cuda_device() -> Option<Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    optional_device(&DEV, "cuda", "TILEWISE_REQUIRE_CUDA", || Device::cuda(0))
}

/// Triton's tutorial matmul as kernel `mm(a_ptr, b_ptr, c_ptr, M, N, K, BM, BN, BK)`:
/// pointer tiles carried through the loop and advanced by `BK`, the last K step masked,
/// `step` (one line) accumulating `tl.dot(a, b)` into `acc`, such as
/// `acc += tl.dot(a, b)`.
pub fn tutorial_matmul(step: &str) -> String {
    format!(
        r#"
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        {step}
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"#
    )
}
