//! Elementwise arithmetic: unary and binary ops, comparisons, `fma`, casts, `where`.
//!
//! Each function matches on the op and dtype once and then runs a tight loop over whole
//! tiles. Float results are computed in f64 and rounded to the dtype (exact for `+ - * /
//! sqrt` of f32/f16/bf16); integer results wrap to the dtype's width.
//!
//! Integer semantics (C, as Triton): `Div` and `Rem` truncate toward zero; **division
//! or remainder by zero gives 0** (GPUs give an unspecified value; the interpreter picks
//! 0 and never traps); `i32::MIN / -1` wraps. Shifts by at least the width (or by a
//! negative amount) give 0, or the sign fill for signed `Shr`. Float `Min`/`Max` are
//! `minnum`/`maxnum`: a NaN loses to a number.

use super::value::{round1, round_f, wrap1, wrap_i, Data};
use crate::ir::{BinaryOp, CmpPred, DType, UnaryOp};
use half::{bf16, f16};

fn map_f(a: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    a.iter().map(|&x| f(x)).collect()
}

fn zip_f(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

fn map_i(a: &[i64], f: impl Fn(i64) -> i64) -> Vec<i64> {
    a.iter().map(|&x| f(x)).collect()
}

fn zip_i(a: &[i64], b: &[i64], f: impl Fn(i64, i64) -> i64) -> Vec<i64> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// `erf` in f64 (about 1e-13 absolute error): the Maclaurin series below 3, the
/// continued fraction of `erfc` above.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    let r = if ax < 3.0 {
        let x2 = ax * ax;
        let (mut term, mut sum, mut n) = (ax, ax, 0.0f64);
        while term.abs() > 1e-17 * sum.abs() {
            n += 1.0;
            term *= -x2 / n;
            sum += term / (2.0 * n + 1.0);
            if n > 200.0 {
                break;
            }
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if ax < 27.0 {
        // erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        let mut f = ax;
        for k in (1..=80).rev() {
            f = ax + (k as f64 / 2.0) / f;
        }
        1.0 - (-ax * ax).exp() / (f * std::f64::consts::PI.sqrt())
    } else {
        1.0
    };
    if x < 0.0 {
        -r
    } else {
        r
    }
}

/// An elementwise unary op on a tile of `dt`.
pub fn unary(op: UnaryOp, dt: DType, x: &Data) -> Result<Data, String> {
    match x {
        Data::F(a) => {
            let mut v = match op {
                UnaryOp::Neg => map_f(a, |x| -x),
                UnaryOp::Abs => map_f(a, f64::abs),
                UnaryOp::Exp => map_f(a, f64::exp),
                UnaryOp::Exp2 => map_f(a, f64::exp2),
                UnaryOp::Log => map_f(a, f64::ln),
                UnaryOp::Log2 => map_f(a, f64::log2),
                UnaryOp::Sqrt => map_f(a, f64::sqrt),
                UnaryOp::Rsqrt => map_f(a, |x| 1.0 / x.sqrt()),
                UnaryOp::Sin => map_f(a, f64::sin),
                UnaryOp::Cos => map_f(a, f64::cos),
                UnaryOp::Floor => map_f(a, f64::floor),
                UnaryOp::Ceil => map_f(a, f64::ceil),
                UnaryOp::Erf => map_f(a, erf),
                UnaryOp::Tanh => map_f(a, f64::tanh),
                UnaryOp::Not => return Err(format!("`not` of a {dt} tile")),
            };
            round_f(dt, &mut v);
            Ok(Data::F(v))
        }
        Data::I(a) => {
            let mut v = match op {
                UnaryOp::Neg => map_i(a, i64::wrapping_neg),
                UnaryOp::Not => map_i(a, |x| !x),
                UnaryOp::Abs if dt.is_unsigned_int() || dt == DType::I1 => a.clone(),
                UnaryOp::Abs => map_i(a, i64::wrapping_abs),
                _ => return Err(format!("`{}` of an integer ({dt}) tile", op.name())),
            };
            wrap_i(dt, &mut v);
            Ok(Data::I(v))
        }
    }
}

/// An elementwise binary op on two tiles of `dt`.
pub fn binary(op: BinaryOp, dt: DType, a: &Data, b: &Data) -> Result<Data, String> {
    use BinaryOp as B;
    match (a, b) {
        (Data::F(a), Data::F(b)) => {
            let mut v = match op {
                B::Add => zip_f(a, b, |x, y| x + y),
                B::Sub => zip_f(a, b, |x, y| x - y),
                B::Mul => zip_f(a, b, |x, y| x * y),
                B::Div => zip_f(a, b, |x, y| x / y),
                B::Rem => zip_f(a, b, |x, y| x % y),
                B::Min => zip_f(a, b, f64::min),
                B::Max => zip_f(a, b, f64::max),
                B::Pow => zip_f(a, b, f64::powf),
                _ => return Err(format!("`{}` of float ({dt}) tiles", op.name())),
            };
            round_f(dt, &mut v);
            Ok(Data::F(v))
        }
        (Data::I(a), Data::I(b)) => {
            let bits = dt.bits() as i64;
            let u64_ = dt == DType::U64;
            let unsigned = dt.is_unsigned_int();
            let mut v = match op {
                B::Add => zip_i(a, b, i64::wrapping_add),
                B::Sub => zip_i(a, b, i64::wrapping_sub),
                B::Mul => zip_i(a, b, i64::wrapping_mul),
                B::Div if u64_ => zip_i(a, b, |x, y| {
                    if y == 0 {
                        0
                    } else {
                        ((x as u64) / (y as u64)) as i64
                    }
                }),
                B::Div => zip_i(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_div(y) }),
                B::Rem if u64_ => zip_i(a, b, |x, y| {
                    if y == 0 {
                        0
                    } else {
                        ((x as u64) % (y as u64)) as i64
                    }
                }),
                B::Rem => zip_i(a, b, |x, y| if y == 0 { 0 } else { x.wrapping_rem(y) }),
                B::And => zip_i(a, b, |x, y| x & y),
                B::Or => zip_i(a, b, |x, y| x | y),
                B::Xor => zip_i(a, b, |x, y| x ^ y),
                B::Shl => zip_i(a, b, |x, y| {
                    if y < 0 || y >= bits {
                        0
                    } else {
                        x.wrapping_shl(y as u32)
                    }
                }),
                // Values of unsigned dtypes narrower than 64 bits are stored
                // non-negative, so an arithmetic shift of the i64 is a logical one.
                B::Shr if u64_ => zip_i(a, b, |x, y| {
                    if !(0..64).contains(&y) {
                        0
                    } else {
                        ((x as u64) >> y) as i64
                    }
                }),
                B::Shr if unsigned => {
                    zip_i(a, b, |x, y| if y < 0 || y >= bits { 0 } else { x >> y })
                }
                B::Shr => zip_i(a, b, |x, y| {
                    if y < 0 || y >= bits {
                        if x < 0 {
                            -1
                        } else {
                            0
                        }
                    } else {
                        x >> y
                    }
                }),
                B::Min if u64_ => zip_i(a, b, |x, y| (x as u64).min(y as u64) as i64),
                B::Max if u64_ => zip_i(a, b, |x, y| (x as u64).max(y as u64) as i64),
                B::Min => zip_i(a, b, i64::min),
                B::Max => zip_i(a, b, i64::max),
                B::MulHi => {
                    let mask = u128::MAX >> (128 - bits);
                    zip_i(a, b, |x, y| {
                        let (x, y) = (x as u128 & mask, y as u128 & mask);
                        ((x * y) >> bits) as i64
                    })
                }
                B::Pow => return Err(format!("`pow` of integer ({dt}) tiles")),
            };
            wrap_i(dt, &mut v);
            Ok(Data::I(v))
        }
        _ => Err("operands of different representations".into()),
    }
}

/// A comparison; 0/1 results.
pub fn cmp(pred: CmpPred, dt: DType, a: &Data, b: &Data) -> Result<Data, String> {
    fn go<T: Copy + PartialOrd>(p: CmpPred, a: &[T], b: &[T]) -> Vec<i64> {
        let it = a.iter().zip(b);
        match p {
            CmpPred::Eq => it.map(|(x, y)| (x == y) as i64).collect(),
            CmpPred::Ne => it.map(|(x, y)| (x != y) as i64).collect(),
            CmpPred::Lt => it.map(|(x, y)| (x < y) as i64).collect(),
            CmpPred::Le => it.map(|(x, y)| (x <= y) as i64).collect(),
            CmpPred::Gt => it.map(|(x, y)| (x > y) as i64).collect(),
            CmpPred::Ge => it.map(|(x, y)| (x >= y) as i64).collect(),
        }
    }
    Ok(Data::I(match (a, b) {
        (Data::F(a), Data::F(b)) => go(pred, a, b),
        (Data::I(a), Data::I(b)) if dt == DType::U64 => {
            let ua: Vec<u64> = a.iter().map(|&x| x as u64).collect();
            let ub: Vec<u64> = b.iter().map(|&x| x as u64).collect();
            go(pred, &ua, &ub)
        }
        (Data::I(a), Data::I(b)) => go(pred, a, b),
        _ => return Err("operands of different representations".into()),
    }))
}

/// `a * b + c` rounded once (f32 via `f32::mul_add`; f16/bf16 through f64, whose
/// product is exact; integers wrap).
pub fn fma(dt: DType, a: &Data, b: &Data, c: &Data) -> Result<Data, String> {
    match (a, b, c) {
        (Data::F(a), Data::F(b), Data::F(c)) => {
            let it = a.iter().zip(b).zip(c);
            let mut v: Vec<f64> = match dt {
                DType::F32 => it
                    .map(|((&x, &y), &z)| (x as f32).mul_add(y as f32, z as f32) as f64)
                    .collect(),
                _ => it.map(|((&x, &y), &z)| x.mul_add(y, z)).collect(),
            };
            round_f(dt, &mut v);
            Ok(Data::F(v))
        }
        (Data::I(a), Data::I(b), Data::I(c)) => {
            let mut v: Vec<i64> = a
                .iter()
                .zip(b)
                .zip(c)
                .map(|((&x, &y), &z)| x.wrapping_mul(y).wrapping_add(z))
                .collect();
            wrap_i(dt, &mut v);
            Ok(Data::I(v))
        }
        _ => Err("operands of different representations".into()),
    }
}

/// `where(cond, t, f)`.
pub fn select<T: Copy>(cond: &[i64], t: &[T], f: &[T]) -> Vec<T> {
    cond.iter()
        .zip(t.iter().zip(f))
        .map(|(&c, (&x, &y))| if c != 0 { x } else { y })
        .collect()
}

/// Float to integer: truncation toward zero, saturating, NaN to 0; `i1` is `!= 0`.
#[inline]
pub fn f2i(x: f64, to: DType) -> i64 {
    match to {
        DType::I1 => (x != 0.0) as i64,
        DType::I8 => x as i8 as i64,
        DType::I16 => x as i16 as i64,
        DType::I32 => x as i32 as i64,
        DType::I64 => x as i64,
        DType::U8 => x as u8 as i64,
        DType::U16 => x as u16 as i64,
        DType::U32 => x as u32 as i64,
        _ => x as u64 as i64,
    }
}

/// Integer (of `from`) to float `to`, rounding to nearest even.
#[inline]
pub fn i2f(x: i64, from: DType, to: DType) -> f64 {
    let unsigned64 = from == DType::U64;
    match to {
        DType::F32 if unsigned64 => (x as u64) as f32 as f64,
        DType::F32 => x as f32 as f64,
        _ if unsigned64 => round1(to, (x as u64) as f64),
        _ => round1(to, x as f64),
    }
}

fn float_bits(x: f64, dt: DType) -> i64 {
    if let Some(f) = crate::ir::fp8::Format::of(dt) {
        return f.store_code(x) as i64;
    }
    match dt {
        DType::F16 => crate::ir::f16_from_f64(x).to_bits() as i64,
        DType::BF16 => crate::ir::bf16_from_f64(x).to_bits() as i64,
        DType::F32 => (x as f32).to_bits() as i64,
        _ => x.to_bits() as i64,
    }
}

fn bits_float(x: i64, dt: DType) -> f64 {
    if let Some(f) = crate::ir::fp8::Format::of(dt) {
        return f.decode(x as u8);
    }
    match dt {
        DType::F16 => f16::from_bits(x as u16).to_f64(),
        DType::BF16 => bf16::from_bits(x as u16).to_f64(),
        DType::F32 => f32::from_bits(x as u32) as f64,
        _ => f64::from_bits(x as u64),
    }
}

/// A value conversion (`bitcast == false`) or bit reinterpretation between dtypes.
pub fn cast(from: DType, to: DType, x: &Data, bitcast: bool) -> Result<Data, String> {
    if bitcast {
        if from.bits() != to.bits() {
            return Err(format!("bitcast from {from} to {to}: widths differ"));
        }
        return Ok(match x {
            Data::F(a) if to.is_float() => {
                Data::F(map_f(a, |v| bits_float(float_bits(v, from), to)))
            }
            Data::F(a) => Data::I(a.iter().map(|&v| wrap1(to, float_bits(v, from))).collect()),
            Data::I(a) if to.is_float() => Data::F(a.iter().map(|&v| bits_float(v, to)).collect()),
            Data::I(a) => Data::I(map_i(a, |v| wrap1(to, v))),
        });
    }
    Ok(match x {
        Data::F(a) if to.is_float() => {
            let mut v = a.clone();
            round_f(to, &mut v);
            Data::F(v)
        }
        Data::F(a) => Data::I(a.iter().map(|&v| f2i(v, to)).collect()),
        Data::I(a) if to.is_float() => Data::F(a.iter().map(|&v| i2f(v, from, to)).collect()),
        Data::I(a) if to == DType::I1 => Data::I(map_i(a, |v| (v != 0) as i64)),
        Data::I(a) => Data::I(map_i(a, |v| wrap1(to, v))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        let cases = [
            (0.0, 0.0),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (2.0, 0.9953222650189527),
            (3.5, 0.9999992569016276),
            (-1.0, -0.8427007929497149),
        ];
        for (x, want) in cases {
            assert!(
                (erf(x) - want).abs() < 1e-13,
                "erf({x}) = {} want {want}",
                erf(x)
            );
        }
    }

    #[test]
    fn c_division() {
        let a = Data::I(vec![7, -7, 7, -7, 5, i32::MIN as i64]);
        let b = Data::I(vec![2, 2, -2, -2, 0, -1]);
        assert_eq!(
            binary(BinaryOp::Div, DType::I32, &a, &b).unwrap(),
            Data::I(vec![3, -3, -3, 3, 0, i32::MIN as i64])
        );
        assert_eq!(
            binary(BinaryOp::Rem, DType::I32, &a, &b).unwrap(),
            Data::I(vec![1, -1, 1, -1, 0, 0])
        );
    }

    #[test]
    fn casts_saturate() {
        let x = Data::F(vec![f64::NAN, 1e10, -1e10, -3.7, 3.7]);
        assert_eq!(
            cast(DType::F32, DType::I32, &x, false).unwrap(),
            Data::I(vec![0, i32::MAX as i64, i32::MIN as i64, -3, 3])
        );
        assert_eq!(
            cast(DType::F32, DType::U8, &x, false).unwrap(),
            Data::I(vec![0, 255, 0, 0, 3])
        );
        let y = Data::F(vec![1.0]);
        assert_eq!(
            cast(DType::F32, DType::I32, &y, true).unwrap(),
            Data::I(vec![0x3f80_0000])
        );
        assert_eq!(
            cast(DType::I32, DType::U32, &Data::I(vec![-1]), true).unwrap(),
            Data::I(vec![u32::MAX as i64])
        );
    }
}
