//! `dot`: the tile matrix multiply `a[M,K] @ b[K,N] + acc[M,N]`.
//!
//! Operands are converted once to contiguous row-major arrays of the accumulation type
//! (f32 for f16/bf16/f32 inputs, f64 when an input is f64, i64 with wrapping for
//! integer inputs such as i8), then multiplied by a register-blocked i-k-j kernel: four
//! rows of C are updated together from one row of B, so the innermost loop over `j` is
//! a contiguous multiply-add the compiler vectorizes. The result is rounded to `acc`'s
//! dtype. `input_precision` is ignored: the reference computes every f32 product in full
//! f32 (tf32 on a GPU differs within the conformance tolerance).

use super::value::{round_f, wrap_i, Data};
use crate::ir::DType;

/// C[m,n] += A[m,k] @ B[k,n], row-major, for float element types.
fn gemm<T>(m: usize, n: usize, k: usize, a: &[T], b: &[T], c: &mut [T])
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    const MR: usize = 4;
    let mut i = 0;
    while i + MR <= m {
        let rows = &mut c[i * n..(i + MR) * n];
        let (c0, rest) = rows.split_at_mut(n);
        let (c1, rest) = rest.split_at_mut(n);
        let (c2, c3) = rest.split_at_mut(n);
        for p in 0..k {
            let (a0, a1, a2, a3) = (
                a[i * k + p],
                a[(i + 1) * k + p],
                a[(i + 2) * k + p],
                a[(i + 3) * k + p],
            );
            let br = &b[p * n..p * n + n];
            for j in 0..n {
                let bv = br[j];
                c0[j] = c0[j] + a0 * bv;
                c1[j] = c1[j] + a1 * bv;
                c2[j] = c2[j] + a2 * bv;
                c3[j] = c3[j] + a3 * bv;
            }
        }
        i += MR;
    }
    while i < m {
        let cr = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let av = a[i * k + p];
            let br = &b[p * n..p * n + n];
            for j in 0..n {
                cr[j] = cr[j] + av * br[j];
            }
        }
        i += 1;
    }
}

/// Integer GEMM with wrapping arithmetic.
fn gemm_i(m: usize, n: usize, k: usize, a: &[i64], b: &[i64], c: &mut [i64]) {
    for i in 0..m {
        let cr = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let av = a[i * k + p];
            let br = &b[p * n..p * n + n];
            for j in 0..n {
                cr[j] = cr[j].wrapping_add(av.wrapping_mul(br[j]));
            }
        }
    }
}

/// `a @ b + acc` with shapes `[m,k] x [k,n] + [m,n]`; the result has dtype `out`.
pub fn dot(
    (m, n, k): (usize, usize, usize),
    (a, adt): (&Data, DType),
    (b, bdt): (&Data, DType),
    acc: &Data,
    out: DType,
) -> Result<Data, String> {
    if a.len() != m * k || b.len() != k * n || acc.len() != m * n {
        return Err(format!("dot operand sizes do not match {m}x{k} @ {k}x{n}"));
    }
    match (a, b) {
        (Data::F(a), Data::F(b)) if adt == DType::F64 || bdt == DType::F64 || out == DType::F64 => {
            let mut c: Vec<f64> = match acc {
                Data::F(c) => c.clone(),
                Data::I(c) => c.iter().map(|&x| x as f64).collect(),
            };
            gemm(m, n, k, a, b, &mut c);
            round_f(out, &mut c);
            Ok(Data::F(c))
        }
        (Data::F(a), Data::F(b)) => {
            let a32: Vec<f32> = a.iter().map(|&x| x as f32).collect();
            let b32: Vec<f32> = b.iter().map(|&x| x as f32).collect();
            let mut c: Vec<f32> = match acc {
                Data::F(c) => c.iter().map(|&x| x as f32).collect(),
                Data::I(c) => c.iter().map(|&x| x as f32).collect(),
            };
            gemm(m, n, k, &a32, &b32, &mut c);
            let mut r: Vec<f64> = c.into_iter().map(f64::from).collect();
            if out.is_float() {
                round_f(out, &mut r);
                Ok(Data::F(r))
            } else {
                Err(format!("dot of float inputs into {out}"))
            }
        }
        (Data::I(a), Data::I(b)) => {
            let mut c: Vec<i64> = match acc {
                Data::I(c) => c.clone(),
                Data::F(_) => return Err(format!("dot of integer inputs into {out}")),
            };
            gemm_i(m, n, k, a, b, &mut c);
            wrap_i(out, &mut c);
            Ok(Data::I(c))
        }
        _ => Err("dot of a float and an integer tile".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_gemm_matches_naive() {
        let (m, n, k) = (7, 5, 3);
        let a: Vec<f64> = (0..m * k).map(|i| (i % 7) as f64 - 3.0).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i % 5) as f64 * 0.5).collect();
        let acc: Vec<f64> = (0..m * n).map(|i| i as f64).collect();
        let r = dot(
            (m, n, k),
            (&Data::F(a.clone()), DType::F32),
            (&Data::F(b.clone()), DType::F32),
            &Data::F(acc.clone()),
            DType::F32,
        )
        .unwrap();
        let Data::F(r) = r else { panic!() };
        for i in 0..m {
            for j in 0..n {
                let want: f64 =
                    acc[i * n + j] + (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum::<f64>();
                assert_eq!(r[i * n + j], want);
            }
        }
    }
}
