//! The typing and error-bound rules of fuzz programs: [`infer`] gives an expression's
//! [`Info`] from its operands' (or says why the expression is not allowed), [`check`]
//! runs it over a whole program, loops to a fixed point and branches merged.

use crate::program::*;
use std::collections::HashMap;
use tilewise::DType;

pub fn precision(dt: DType) -> i32 {
    match dt {
        DType::F16 => 11,
        DType::BF16 => 8,
        DType::F64 => 53,
        _ => 24,
    }
}

fn max_finite(dt: DType) -> f64 {
    match dt {
        DType::F16 => 65504.0,
        DType::BF16 => 3.0e38,
        _ => 3.0e38,
    }
}

fn min_quantum(dt: DType) -> i32 {
    match dt {
        DType::F16 => -24,
        DType::BF16 => -133,
        _ => -149,
    }
}

/// Whether values of magnitude up to `mag` on the grid `2^q` are exact in `dt`.
pub fn fits(mag: f64, q: i32, dt: DType) -> bool {
    mag < max_finite(dt) / 2.0 && q >= min_quantum(dt) && mag < 2f64.powi(q + precision(dt))
}

/// One unit in the last place at magnitude `mag`.
pub fn ulp(mag: f64, dt: DType) -> f64 {
    mag.max(2f64.powi(-14)) * 2f64.powi(1 - precision(dt))
}

/// Why a program is not valid.
#[derive(Clone, Debug)]
pub struct Invalid(pub String);

fn bad<T>(m: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(m.into()))
}

/// Broadcasts two shapes (numpy rules, equal ranks).
pub fn broadcast(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    if a.is_empty() {
        return Some(b.to_vec());
    }
    if b.is_empty() {
        return Some(a.to_vec());
    }
    if a.len() != b.len() {
        return None;
    }
    a.iter()
        .zip(b)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn is_float(dt: DType) -> bool {
    dt.is_float()
}

/// The integer magnitude bound of a dtype (wrapping arithmetic stays in it).
pub fn int_range(dt: DType) -> f64 {
    match dt {
        DType::I1 => 1.0,
        DType::I8 => 128.0,
        DType::I16 => 32768.0,
        DType::I64 => 9.3e18,
        _ => 2147483648.0,
    }
}

/// A float result computed exactly from exact operands and rounded once: the same bits
/// everywhere (`err` 0), on the grid when it fits.
fn rounded(shape: Vec<u32>, dtype: DType, mag: f64, err: f64, grid: Option<i32>) -> Info {
    let grid = grid.filter(|&q| err == 0.0 && fits(mag, q, dtype));
    let err = if err > 0.0 {
        err + ulp(mag, dtype)
    } else {
        0.0
    };
    Info {
        shape,
        dtype,
        mag: mag.min(max_finite(dtype)),
        err,
        grid,
    }
}

/// An approximate function's result: `abs` error plus the operand's error times the
/// function's largest slope.
fn approx(x: &Info, mag: f64, slope: f64, abs: f64) -> Info {
    Info {
        shape: x.shape.clone(),
        dtype: x.dtype,
        mag,
        err: x.err * slope + abs + ulp(mag, x.dtype),
        grid: None,
    }
}

/// A `tl.dot` without an accumulator: the compiler folds `x + tl.dot(a, b)` into
/// `tl.dot(a, b, x)` where the product has no other use (`lower/fold_dot_add.rs`), so
/// an add of it is allowed the error of either form.
#[derive(Clone, Debug)]
pub struct Product {
    pub a: Var,
    pub b: Var,
    pub precision: Option<&'static str>,
}

/// The product `e` defines, if it is a `tl.dot` without an accumulator.
pub fn product_of(e: &Expr) -> Option<Product> {
    match e {
        Expr::Dot {
            a,
            b,
            acc: None,
            precision,
        } => Some(Product {
            a: *a,
            b: *b,
            precision: *precision,
        }),
        _ => None,
    }
}

/// The information of `e`'s result, or why `e` is not allowed on these operands.
/// `products`: the variables defined by a `tl.dot` without an accumulator.
pub fn infer(
    e: &Expr,
    info: &[Option<Info>],
    p: &Program,
    products: &HashMap<Var, Product>,
) -> Result<Info, Invalid> {
    let get = |v: Var| -> Result<Info, Invalid> {
        info.get(v)
            .cloned()
            .flatten()
            .ok_or_else(|| Invalid(format!("v{v} is not defined here")))
    };
    Ok(match e {
        Expr::Load { input, shape, .. } | Expr::BlockLoad { input, shape, .. } => {
            let Some(b) = p.inputs.get(*input) else {
                return bad("no such input");
            };
            input_info(b.dtype, shape.clone())
        }
        Expr::Full {
            shape,
            value,
            dtype,
        } => Info {
            shape: shape.clone(),
            dtype: *dtype,
            mag: value.abs(),
            err: 0.0,
            grid: is_float(*dtype).then_some(-3),
        },
        Expr::Arange(n) => Info {
            shape: vec![*n],
            dtype: DType::I32,
            mag: *n as f64,
            err: 0.0,
            grid: None,
        },
        Expr::Scalar(s) => Info {
            shape: vec![],
            dtype: DType::I32,
            mag: match s {
                Scalar::ProgramId => p.grid as f64,
                Scalar::Arg(k) => p.scalars.get(*k).map_or(0.0, |v| v.unsigned_abs() as f64),
                Scalar::LoopIndex(_) => 16.0,
            },
            err: 0.0,
            grid: None,
        },
        Expr::Unary(op, x) => unary(*op, &get(*x)?)?,
        Expr::Binary(op, a, b) => {
            let mut sum = binary(*op, &get(*a)?, &get(*b)?)?;
            // `x + dot(a, b)` may run as `dot(a, b, x)`: x joins the product's sum.
            if *op == Binary::Add && is_float(sum.dtype) {
                for (d, x) in [(*a, *b), (*b, *a)] {
                    let Some(pr) = products.get(&d) else {
                        continue;
                    };
                    let acc = get(x)?.with(sum.shape.clone());
                    let Ok(fused) = dot(&get(pr.a)?, &get(pr.b)?, Some(acc), pr.precision) else {
                        continue;
                    };
                    if !(sum.exact() && fused.exact()) {
                        sum.err = sum.err.max(fused.err).max(f64::MIN_POSITIVE);
                        sum.grid = None;
                        sum.mag = sum.mag.max(fused.mag);
                    }
                }
            }
            sum
        }
        Expr::Random(kind, x, _) => {
            let x = get(*x)?;
            if x.dtype != DType::I32 || !x.exact() {
                return bad("random offsets must be exact int32");
            }
            let (dtype, mag, err) = match kind {
                RandomKind::Randint => (DType::I32, int_range(DType::I32), 0.0),
                RandomKind::Rand => (DType::F32, 1.0, 0.0),
                // |n| <= sqrt(-2 ln 1e-7) < 5.7; the devices' log/sin/cos differ by ulps.
                RandomKind::Randn => (DType::F32, 5.7, 1e-4),
            };
            Info {
                shape: x.shape.clone(),
                dtype,
                mag,
                err,
                grid: None,
            }
        }
        Expr::Cmp(_, a, b) => {
            let (a, b) = (get(*a)?, get(*b)?);
            if a.dtype != b.dtype || !a.exact() || !b.exact() {
                return bad("comparison of inexact or mixed operands");
            }
            let Some(shape) = broadcast(&a.shape, &b.shape) else {
                return bad("shapes");
            };
            Info {
                shape,
                dtype: DType::I1,
                mag: 1.0,
                err: 0.0,
                grid: None,
            }
        }
        Expr::Where(c, a, b) => {
            let (c, a, b) = (get(*c)?, get(*a)?, get(*b)?);
            if c.dtype != DType::I1 || a.dtype != b.dtype {
                return bad("where types");
            }
            let Some(shape) = broadcast(&c.shape, &a.shape).and_then(|s| broadcast(&s, &b.shape))
            else {
                return bad("shapes");
            };
            Info {
                shape,
                dtype: a.dtype,
                mag: a.mag.max(b.mag),
                err: a.err.max(b.err),
                grid: match (a.grid, b.grid) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    _ => None,
                },
            }
        }
        Expr::Cast(x, to) => cast(&get(*x)?, *to)?,
        Expr::ExpandDims(x, axis) => {
            let x = get(*x)?;
            if *axis > x.shape.len() || x.shape.len() >= 3 {
                return bad("expand_dims axis");
            }
            let mut s = x.shape.clone();
            s.insert(*axis, 1);
            x.with(s)
        }
        Expr::BroadcastTo(x, shape) => {
            let x = get(*x)?;
            if broadcast(&x.shape, shape).as_deref() != Some(shape.as_slice()) {
                return bad("broadcast_to");
            }
            x.with(shape.clone())
        }
        Expr::Permute(x, perm) => {
            let x = get(*x)?;
            let mut sorted = perm.clone();
            sorted.sort();
            if sorted != (0..x.shape.len()).collect::<Vec<_>>() || perm.len() < 2 {
                return bad("permutation");
            }
            x.with(perm.iter().map(|&d| x.shape[d]).collect())
        }
        Expr::Join(a, b) | Expr::Interleave(a, b) => {
            let (a, b) = (get(*a)?, get(*b)?);
            if a.dtype != b.dtype {
                return bad("join types");
            }
            let Some(mut shape) = broadcast(&a.shape, &b.shape) else {
                return bad("shapes");
            };
            match e {
                Expr::Join(..) if shape.len() < 3 => shape.push(2),
                Expr::Interleave(..) if !shape.is_empty() => {
                    *shape.last_mut().expect("a last dimension") *= 2
                }
                _ => return bad("join rank"),
            }
            Info {
                shape,
                dtype: a.dtype,
                mag: a.mag.max(b.mag),
                err: a.err.max(b.err),
                grid: match (a.grid, b.grid) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    _ => None,
                },
            }
        }
        Expr::Split(x, half) => {
            let x = get(*x)?;
            if x.shape.last() != Some(&2) || *half > 1 {
                return bad("split of a last dimension other than 2");
            }
            let mut s = x.shape.clone();
            s.pop();
            x.with(s)
        }
        Expr::Reshape(x, shape) => {
            let x = get(*x)?;
            if shape.iter().product::<u32>() != x.numel() || x.shape.is_empty() {
                return bad("reshape size");
            }
            x.with(shape.clone())
        }
        Expr::Reduce {
            kind,
            value,
            axis,
            keep_dims,
            dtype,
        } => reduce(*kind, &get(*value)?, *axis, *keep_dims, *dtype)?,
        Expr::Scan {
            kind,
            value,
            axis,
            dtype,
            ..
        } => scan(*kind, &get(*value)?, *axis, *dtype)?,
        Expr::Dot {
            a,
            b,
            acc,
            precision,
        } => dot(&get(*a)?, &get(*b)?, acc.map(get).transpose()?, *precision)?,
        Expr::Atomic {
            op,
            out,
            value,
            unique,
        } => {
            let x = get(*value)?;
            let Some(o) = p.outputs.get(*out) else {
                return bad("no such output");
            };
            if o.dtype != x.dtype || !o.atomic {
                return bad("atomic output dtype");
            }
            let float = is_float(x.dtype);
            let adds = x.numel() as f64 * p.grid as f64;
            let exact_sum = x.exact()
                && x.grid
                    .is_some_and(|q| fits(x.mag * adds + 2.0, q.min(-3), DType::F32));
            let ok = match op {
                AtomicOp::Add => !float || exact_sum,
                AtomicOp::Max | AtomicOp::Min => true,
                AtomicOp::And | AtomicOp::Or | AtomicOp::Xor => !float,
                AtomicOp::Xchg => *unique,
            };
            if !ok || !matches!(x.dtype, DType::I32 | DType::F32) || x.shape.is_empty() {
                return bad("atomic operation");
            }
            // The old value: the output's initial data, or (contended) any order's.
            let mut old = input_info(x.dtype, x.shape.clone());
            if !unique {
                old.err = f64::INFINITY;
            }
            old
        }
    })
}

/// Input data: floats are multiples of 1/8 in [-2, 2], integers in a small range.
pub fn input_info(dtype: DType, shape: Vec<u32>) -> Info {
    Info {
        shape,
        dtype,
        mag: if is_float(dtype) {
            2.0
        } else if dtype == DType::I1 {
            1.0
        } else {
            100.0
        },
        err: 0.0,
        grid: is_float(dtype).then_some(-3),
    }
}

fn unary(op: Unary, x: &Info) -> Result<Info, Invalid> {
    let float = is_float(x.dtype);
    let s = x.shape.clone();
    Ok(match (op, float) {
        (Unary::Neg, _) if x.dtype != DType::I1 => Info {
            mag: if float { x.mag } else { int_range(x.dtype) },
            ..x.clone()
        },
        (Unary::Abs, _) if x.dtype != DType::I1 => Info {
            mag: if float { x.mag } else { int_range(x.dtype) },
            ..x.clone()
        },
        (Unary::Not, false) if x.dtype != DType::I1 => Info {
            mag: int_range(x.dtype),
            ..x.clone()
        },
        (Unary::Exp, true) if x.mag <= 8.0 => {
            let m = x.mag.exp();
            approx(x, m, m, m * 1e-5)
        }
        (Unary::LogAbs1, true) => approx(x, (x.mag + 1.0).ln(), 1.0, 1e-5 * (x.mag + 2.0)),
        (Unary::SqrtAbs, true) => {
            let m = x.mag.sqrt();
            let mut i = approx(x, m, 0.0, 4.0 * ulp(m, x.dtype));
            i.err += x.err.sqrt();
            i
        }
        (Unary::RsqrtAbs1, true) => approx(x, 1.0, 0.5, 1e-5),
        (Unary::Sin | Unary::Cos, true) if x.mag <= 4.0 => approx(x, 1.0, 1.0, 1e-3),
        (Unary::Floor | Unary::Ceil, true) if x.exact() => Info {
            shape: s,
            dtype: x.dtype,
            mag: x.mag + 1.0,
            err: 0.0,
            grid: Some(0).filter(|&q| fits(x.mag + 1.0, q, x.dtype)),
        },
        (Unary::Erf, true) => approx(x, 1.0, 1.2, 1e-4),
        // Rounding to fp8 is exact and deterministic (nearest even, saturating): the
        // same on every executor for the same input; an inexact input may land one
        // fp8 step away.
        (Unary::Fp8E4 | Unary::Fp8E5, true) if x.dtype != DType::F64 => {
            let (max, m) = if op == Unary::Fp8E4 {
                (448.0, 3)
            } else {
                (57344.0, 2)
            };
            Info {
                shape: s,
                dtype: x.dtype,
                mag: x.mag.min(max),
                err: if x.err == 0.0 {
                    0.0
                } else {
                    x.err + (x.mag + x.err).max(2f64.powi(-6)) * 2f64.powi(-m)
                },
                grid: None,
            }
        }
        (Unary::Sigmoid, true) if x.mag <= 16.0 => approx(x, 1.0, 0.25, 1e-4),
        _ => return bad(format!("{op:?} on {}", x.dtype)),
    })
}

fn binary(op: Binary, a: &Info, b: &Info) -> Result<Info, Invalid> {
    if a.dtype != b.dtype {
        return bad("mixed dtypes");
    }
    let Some(shape) = broadcast(&a.shape, &b.shape) else {
        return bad("shapes");
    };
    let dt = a.dtype;
    if dt == DType::I1 {
        return match op {
            Binary::And | Binary::Or | Binary::Xor => Ok(Info { shape, ..a.clone() }),
            _ => bad("bool arithmetic"),
        };
    }
    if !is_float(dt) {
        let int_ok = !matches!(op, Binary::SafeDiv);
        if !int_ok {
            return bad("int division");
        }
        return Ok(Info {
            shape,
            dtype: dt,
            mag: match op {
                Binary::Min | Binary::Max => a.mag.max(b.mag),
                Binary::Add | Binary::Sub => (a.mag + b.mag).min(int_range(dt)),
                Binary::Mul => (a.mag * b.mag).min(int_range(dt)),
                Binary::FloorDiv | Binary::Mod => a.mag.max(b.mag),
                Binary::MulHi if dt.bits() < 32 => return bad("umulhi of a narrow integer"),
                _ => int_range(dt),
            },
            err: 0.0,
            grid: None,
        });
    }
    let grid = |q: Option<i32>| q;
    Ok(match op {
        Binary::Add | Binary::Sub => {
            let q = match (a.grid, b.grid) {
                (Some(x), Some(y)) => Some(x.min(y)),
                _ => None,
            };
            if a.mag + b.mag > max_finite(dt) / 4.0 {
                return bad("overflow");
            }
            rounded(shape, dt, a.mag + b.mag, a.err + b.err, grid(q))
        }
        Binary::Mul => {
            let q = match (a.grid, b.grid) {
                (Some(x), Some(y)) => Some(x + y),
                _ => None,
            };
            let mag = a.mag * b.mag;
            if mag > max_finite(dt) / 4.0 {
                return bad("overflow");
            }
            let exact_product = q.is_some_and(|q| fits(mag, q, dt));
            // A product that rounds may be fused into a following add (WGSL lets drivers
            // contract): allow its rounding error downstream.
            let err = a.err * b.mag + b.err * a.mag + a.err * b.err;
            let mut i = rounded(shape, dt, mag, err, grid(q));
            if !exact_product {
                i.err += ulp(mag, dt);
            }
            i
        }
        Binary::SafeDiv => {
            // Division is not correctly rounded on every driver (Vulkan allows 2.5 ulp).
            let mag = a.mag;
            Info {
                shape,
                dtype: dt,
                mag,
                err: a.err + a.mag * b.err + 4.0 * ulp(mag, dt),
                grid: None,
            }
        }
        Binary::Min | Binary::Max => Info {
            shape,
            dtype: dt,
            mag: a.mag.max(b.mag),
            err: a.err.max(b.err),
            grid: match (a.grid, b.grid) {
                (Some(x), Some(y)) => Some(x.min(y)),
                _ => None,
            },
        },
        _ => return bad("float bitwise"),
    })
}

fn cast(x: &Info, to: DType) -> Result<Info, Invalid> {
    let from = x.dtype;
    let s = x.shape.clone();
    Ok(match (is_float(from), is_float(to)) {
        _ if from == to => x.clone(),
        (true, true) => {
            if x.mag > max_finite(to) / 4.0 {
                return bad("cast overflow");
            }
            if x.grid.is_some_and(|q| fits(x.mag, q, to)) {
                Info {
                    dtype: to,
                    ..x.clone()
                }
            } else {
                rounded(s, to, x.mag, x.err, None)
            }
        }
        (true, false) => {
            if !x.exact() {
                return bad("float to int of an inexact value");
            }
            Info {
                shape: s,
                dtype: to,
                mag: if to == DType::I1 {
                    1.0
                } else {
                    x.mag.min(int_range(to))
                },
                err: 0.0,
                grid: None,
            }
        }
        (false, true) => {
            let q = (x.mag < 2f64.powi(precision(to))).then_some(0);
            if x.mag > max_finite(to) / 4.0 {
                return bad("cast overflow");
            }
            rounded(s, to, x.mag, 0.0, q)
        }
        (false, false) => Info {
            shape: s,
            dtype: to,
            mag: if to == DType::I1 {
                1.0
            } else {
                x.mag.min(int_range(to))
            },
            err: 0.0,
            grid: None,
        },
    })
}

fn reduce(
    kind: Reduction,
    x: &Info,
    axis: Option<usize>,
    keep_dims: bool,
    dtype: DType,
) -> Result<Info, Invalid> {
    if x.shape.is_empty() || axis.is_some_and(|a| a >= x.shape.len()) {
        return bad("reduce axis");
    }
    let n: u32 = match axis {
        Some(a) => x.shape[a],
        None => x.numel(),
    };
    let shape: Vec<u32> = match (axis, keep_dims) {
        (Some(a), false) => {
            let mut s = x.shape.clone();
            s.remove(a);
            s
        }
        (Some(a), true) => {
            let mut s = x.shape.clone();
            s[a] = 1;
            s
        }
        (None, false) => vec![],
        (None, true) => vec![1; x.shape.len()],
    };
    let float = is_float(x.dtype);
    let n = n as f64;
    Ok(match kind {
        Reduction::ArgMax | Reduction::ArgMin => {
            if !x.exact() || x.dtype == DType::I1 || dtype != DType::I32 {
                return bad("argmax of inexact values");
            }
            Info {
                shape,
                dtype,
                mag: n,
                err: 0.0,
                grid: None,
            }
        }
        Reduction::Max | Reduction::Min => {
            if dtype != x.dtype || x.dtype == DType::I1 {
                return bad("max dtype");
            }
            x.with(shape)
        }
        Reduction::XorSum | Reduction::CustomFirst => {
            if float || dtype != x.dtype || x.dtype == DType::I1 {
                return bad("integer reduction");
            }
            Info {
                shape,
                dtype,
                mag: int_range(dtype),
                err: 0.0,
                grid: None,
            }
        }
        Reduction::Sum | Reduction::CustomAdd => {
            if x.dtype == DType::I1 {
                return bad("sum of bools");
            }
            if !float {
                if is_float(dtype) || dtype.bits() < 32 {
                    return bad("int sum dtype");
                }
                return Ok(Info {
                    shape,
                    dtype,
                    mag: int_range(dtype),
                    err: 0.0,
                    grid: None,
                });
            }
            if dtype != DType::F32 && !(kind == Reduction::CustomAdd && dtype == x.dtype) {
                return bad("float sum dtype");
            }
            // Triton sums in the operand's dtype (`tl.sum` of f16 or bf16 is not widened),
            // rounding each partial on a GPU: exact only where every partial sum is.
            let acc = x.dtype;
            let mag = n * x.mag;
            if mag > max_finite(acc) / 4.0 {
                return bad("overflow");
            }
            match x.grid {
                Some(q) if x.exact() && fits(mag, q, acc) => Info {
                    shape,
                    dtype,
                    mag,
                    err: 0.0,
                    grid: Some(q),
                },
                _ => Info {
                    shape,
                    dtype,
                    mag,
                    err: n * x.err + 2.0 * n * n * x.mag * ulp(1.0, acc),
                    grid: None,
                },
            }
        }
    })
}

fn scan(kind: ScanKind, x: &Info, axis: usize, dtype: DType) -> Result<Info, Invalid> {
    if axis >= x.shape.len() || x.dtype == DType::I1 {
        return bad("scan axis");
    }
    let n = x.shape[axis] as f64;
    let float = is_float(x.dtype);
    Ok(match kind {
        ScanKind::Cumprod | ScanKind::CustomFirst => {
            if float || dtype != x.dtype {
                return bad("integer scan");
            }
            Info {
                mag: int_range(dtype),
                ..x.clone()
            }
        }
        ScanKind::Cumsum | ScanKind::CustomAdd => {
            if !float {
                if dtype != DType::I32 {
                    return bad("int scan dtype");
                }
                return Ok(Info {
                    dtype,
                    mag: int_range(dtype),
                    err: 0.0,
                    grid: None,
                    ..x.clone()
                });
            }
            if dtype != DType::F32 {
                return bad("float scan dtype");
            }
            // Accumulated in the operand's dtype, as `tl.sum`.
            let acc = x.dtype;
            let mag = n * x.mag;
            if mag > max_finite(acc) / 4.0 {
                return bad("overflow");
            }
            match x.grid {
                Some(q) if x.exact() && fits(mag, q, acc) => Info {
                    dtype,
                    mag,
                    err: 0.0,
                    grid: Some(q),
                    ..x.clone()
                },
                _ => Info {
                    dtype,
                    mag,
                    err: n * x.err + 2.0 * n * n * x.mag * ulp(1.0, acc),
                    grid: None,
                    ..x.clone()
                },
            }
        }
    })
}

fn dot(a: &Info, b: &Info, acc: Option<Info>, precision: Option<&str>) -> Result<Info, Invalid> {
    if a.shape.len() != 2 || b.shape.len() != 2 || a.shape[1] != b.shape[0] {
        return bad("dot shapes");
    }
    if a.dtype != b.dtype || a.shape.iter().chain(&b.shape).any(|&d| d < 16) {
        return bad("dot operands");
    }
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    let shape = vec![m, n];
    if a.dtype == DType::I8 {
        if precision.is_some() || acc.as_ref().is_some_and(|c| c.dtype != DType::I32) {
            return bad("int dot");
        }
        return Ok(Info {
            shape,
            dtype: DType::I32,
            mag: int_range(DType::I32),
            err: 0.0,
            grid: None,
        });
    }
    if !matches!(a.dtype, DType::F16 | DType::BF16 | DType::F32) {
        return bad("dot dtype");
    }
    if (precision.is_some()) != (a.dtype == DType::F32) {
        return bad("precision only for f32");
    }
    if let Some(c) = &acc {
        if c.dtype != DType::F32 || c.shape != shape {
            return bad("dot accumulator");
        }
    }
    // Operands as the multiplier reads them: tf32 keeps 11 significant bits.
    let in_bits = if precision == Some("tf32") { 11 } else { 24 };
    let operand_exact =
        |x: &Info| x.exact() && x.grid.is_some_and(|q| x.mag < 2f64.powi(q + in_bits));
    let kf = k as f64;
    let mag = kf * a.mag * b.mag + acc.as_ref().map_or(0.0, |c| c.mag);
    if mag > 1e30 {
        return bad("overflow");
    }
    let acc_exact = acc.as_ref().is_none_or(|c| c.exact() && c.grid.is_some());
    let q = match (a.grid, b.grid) {
        (Some(x), Some(y)) => {
            let q = x + y;
            Some(acc.as_ref().and_then(|c| c.grid).map_or(q, |g| g.min(q)))
        }
        _ => None,
    };
    if operand_exact(a)
        && operand_exact(b)
        && acc_exact
        && q.is_some_and(|q| fits(mag, q, DType::F32))
    {
        return Ok(Info {
            shape,
            dtype: DType::F32,
            mag,
            err: 0.0,
            grid: q,
        });
    }
    // Rounded operands (tf32: relative 2^-11) and sums in any order.
    let rel_in = if in_bits == 11 {
        2f64.powi(-10)
    } else {
        2f64.powi(-23)
    };
    let err = kf * (a.err * b.mag + b.err * a.mag + 2.0 * rel_in * a.mag * b.mag)
        + 2.0 * kf * mag * ulp(1.0, DType::F32)
        + acc.as_ref().map_or(0.0, |c| c.err);
    Ok(Info {
        shape,
        dtype: DType::F32,
        mag,
        err,
        grid: None,
    })
}

/// What [`check`] found: every variable's information (at its last assignment) and
/// the error each output may have.
pub struct Checked {
    /// The variables visible at the end of the program.
    pub info: Vec<Option<Info>>,
    /// Every variable's type, wherever it is defined (for printing and shrinking).
    pub seen: Vec<Option<Info>>,
    pub out_err: Vec<f64>,
    /// What atomics wrote to each output so far (merged): a later atomic's old value
    /// may be it (in a loop, the previous trip's), not the initial data.
    pub out_stored: Vec<Option<Info>>,
    /// The variables defined by a `tl.dot` without an accumulator.
    pub products: HashMap<Var, Product>,
}

/// Merges what two paths stored (either may have run).
fn merge_stored(a: &mut [Option<Info>], b: &[Option<Info>]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = match (x.take(), y) {
            (Some(p), Some(q)) => merge(&p, q).or(Some(p)),
            (p, q) => p.or_else(|| q.clone()),
        };
    }
}

/// Runs `infer` over the whole program, or says which rule an edit broke.
pub fn check(p: &Program) -> Result<Checked, Invalid> {
    let mut c = Checked {
        info: vec![None; p.num_vars],
        seen: vec![None; p.num_vars],
        out_err: vec![0.0; p.outputs.len()],
        out_stored: vec![None; p.outputs.len()],
        products: HashMap::new(),
    };
    check_block(&p.body, &mut c, p, 0, false)?;
    Ok(c)
}

fn merge(a: &Info, b: &Info) -> Option<Info> {
    (a.shape == b.shape && a.dtype == b.dtype).then(|| Info {
        shape: a.shape.clone(),
        dtype: a.dtype,
        mag: a.mag.max(b.mag),
        err: a.err.max(b.err),
        grid: match (a.grid, b.grid) {
            (Some(x), Some(y)) => Some(x.min(y)),
            _ => None,
        },
    })
}

/// `loops`: enclosing loops (the next loop's index is `i{loops}`); `nested`: inside a
/// loop or a branch, where the fuzzer does not store.
fn check_block(
    body: &[Stmt],
    c: &mut Checked,
    p: &Program,
    loops: usize,
    nested: bool,
) -> Result<(), Invalid> {
    for s in body {
        let info = &mut c.info;
        match s {
            Stmt::Let(v, e) => {
                if let Expr::Scalar(Scalar::LoopIndex(d)) = e {
                    if *d >= loops {
                        return bad("loop index outside its loop");
                    }
                }
                let mut i = infer(e, info, p, &c.products)?;
                if let Some(pr) = product_of(e) {
                    c.products.insert(*v, pr);
                }
                if i.shape.iter().product::<u32>() > 16384 {
                    return bad("tile too large");
                }
                // An atomic writes its value: its output may differ as the value does,
                // and a later atomic (this one, in a loop) reads it back.
                if let Expr::Atomic { out, value, .. } = e {
                    let x = info.get(*value).cloned().flatten();
                    let err = x.as_ref().map_or(0.0, |x| x.err);
                    c.out_err[*out] = c.out_err[*out].max(err);
                    if let Some(stored) = &c.out_stored[*out] {
                        let stored = stored.with(i.shape.clone());
                        i = merge(&i, &stored).unwrap_or(i);
                    }
                    if let Some(x) = x {
                        let mut one = vec![None; c.out_stored.len()];
                        one[*out] = Some(x);
                        merge_stored(&mut c.out_stored, &one);
                    }
                }
                let info = &mut c.info;
                info[*v] = Some(i.clone());
                c.seen[*v] = Some(i);
            }
            Stmt::Store { out, value, .. } => {
                let Some(i) = info.get(*value).cloned().flatten() else {
                    return bad("store of an undefined variable");
                };
                let Some(o) = p.outputs.get(*out) else {
                    return bad("no such output");
                };
                if o.dtype != i.dtype
                    || o.atomic
                    || nested
                    || i.numel() as usize * p.grid as usize > o.len
                {
                    return bad("store output");
                }
                c.out_err[*out] = c.out_err[*out].max(i.err);
            }
            Stmt::For {
                carried,
                body,
                next,
                depth: d,
                ..
            }
            | Stmt::While {
                carried,
                body,
                next,
                depth: d,
                ..
            } => {
                if *d != loops {
                    return bad("loop depth");
                }
                // Iterate the carried information to a fixed point (errors grow each
                // trip: bound the trips as the generator does, 4 at most).
                let before = info.clone();
                let mut state: Vec<Info> = carried
                    .iter()
                    .map(|&c| info[c].clone().ok_or_else(|| Invalid("carried".into())))
                    .collect::<Result<_, _>>()?;
                for _ in 0..5 {
                    let mut inner = Checked {
                        info: before.clone(),
                        seen: c.seen.clone(),
                        out_err: c.out_err.clone(),
                        out_stored: c.out_stored.clone(),
                        products: c.products.clone(),
                    };
                    for (&v, st) in carried.iter().zip(&state) {
                        inner.info[v] = Some(st.clone());
                    }
                    check_block(body, &mut inner, p, loops + 1, true)?;
                    c.seen = inner.seen;
                    for (o, e) in c.out_err.iter_mut().zip(&inner.out_err) {
                        *o = o.max(*e);
                    }
                    merge_stored(&mut c.out_stored, &inner.out_stored);
                    let inner = inner.info;
                    let mut new_state = vec![];
                    for (st, &n) in state.iter().zip(next) {
                        let Some(ni) = inner.get(n).cloned().flatten() else {
                            return bad("loop result undefined");
                        };
                        let Some(m) = merge(st, &ni) else {
                            return bad("loop-carried type changes");
                        };
                        new_state.push(m);
                    }
                    state = new_state;
                }
                // A variable from before the loop that the body reassigns is carried
                // by the traced loop: the model must carry it too.
                if assigned(body)
                    .iter()
                    .any(|v| before[*v].is_some() && !carried.contains(v))
                {
                    return bad("a loop reassigns a variable it does not carry");
                }
                // Values defined in the body are not visible after it.
                c.info = before;
                for (&v, st) in carried.iter().zip(state) {
                    c.info[v] = Some(st);
                }
            }
            Stmt::If {
                carried,
                then_body,
                then_next,
                else_body,
                else_next,
                ..
            } => {
                let before = info.clone();
                let mut t = Checked {
                    info: before.clone(),
                    seen: c.seen.clone(),
                    out_err: c.out_err.clone(),
                    out_stored: c.out_stored.clone(),
                    products: c.products.clone(),
                };
                check_block(then_body, &mut t, p, loops, true)?;
                let mut e = Checked {
                    info: before.clone(),
                    seen: t.seen,
                    out_err: c.out_err.clone(),
                    out_stored: c.out_stored.clone(),
                    products: c.products.clone(),
                };
                check_block(else_body, &mut e, p, loops, true)?;
                c.seen = e.seen;
                for (o, (a, b)) in c.out_err.iter_mut().zip(t.out_err.iter().zip(&e.out_err)) {
                    *o = o.max(*a).max(*b);
                }
                merge_stored(&mut c.out_stored, &t.out_stored);
                merge_stored(&mut c.out_stored, &e.out_stored);
                let (t, e) = (t.info, e.info);
                if assigned(then_body)
                    .iter()
                    .chain(&assigned(else_body))
                    .any(|v| before[*v].is_some() && !carried.contains(v))
                {
                    return bad("a branch reassigns a variable it does not merge");
                }
                let info = &mut c.info;
                *info = before;
                for ((&v, &tn), &en) in carried.iter().zip(then_next).zip(else_next) {
                    let (Some(a), Some(b)) = (t[tn].clone(), e[en].clone()) else {
                        return bad("branch result undefined");
                    };
                    let Some(m) = merge(&a, &b) else {
                        return bad("branches disagree in type");
                    };
                    if info[v]
                        .as_ref()
                        .is_none_or(|i| i.shape != m.shape || i.dtype != m.dtype)
                    {
                        return bad("merged variable type");
                    }
                    info[v] = Some(m);
                }
            }
        }
    }
    Ok(())
}

/// The variables a block assigns: its definitions and what its loops and branches
/// carry.
fn assigned(body: &[Stmt]) -> Vec<Var> {
    let mut out = vec![];
    for s in body {
        match s {
            Stmt::Let(v, _) => out.push(*v),
            Stmt::Store { .. } => {}
            Stmt::For { carried, body, .. } | Stmt::While { carried, body, .. } => {
                out.extend(carried);
                out.extend(assigned(body));
            }
            Stmt::If {
                carried,
                then_body,
                else_body,
                ..
            } => {
                out.extend(carried);
                out.extend(assigned(then_body));
                out.extend(assigned(else_body));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `v0 = 1.0; for: v1 = atomic_max(out0, v0); v0 = v1 * v1 + v0`: from the second
    /// trip on, the atomic's old value is what the first stored, not the output's
    /// initial data (fuzz seed 326151 on the H200 claimed such a result exact).
    #[test]
    fn an_atomic_in_a_loop_reads_back_what_it_stored() {
        let shape = vec![16];
        let p = Program {
            addressed: false,
            seed: 0,
            num_warps: 1,
            grid: 1,
            inputs: vec![],
            outputs: vec![Output {
                dtype: DType::F32,
                len: 16,
                atomic: true,
            }],
            scalars: vec![],
            body: vec![
                Stmt::Let(
                    0,
                    Expr::Full {
                        shape: shape.clone(),
                        value: 1.0,
                        dtype: DType::F32,
                    },
                ),
                Stmt::For {
                    depth: 0,
                    trip: Trip::Const(4),
                    stages: None,
                    carried: vec![0],
                    body: vec![
                        Stmt::Let(
                            1,
                            Expr::Atomic {
                                op: AtomicOp::Max,
                                out: 0,
                                value: 0,
                                unique: true,
                            },
                        ),
                        Stmt::Let(2, Expr::Binary(Binary::Mul, 1, 1)),
                        Stmt::Let(3, Expr::Binary(Binary::Add, 2, 0)),
                    ],
                    next: vec![3],
                },
            ],
            num_vars: 4,
        };
        let c = check(&p).unwrap_or_else(|e| panic!("{}", e.0));
        let old = c.seen[1].clone().unwrap();
        let input = input_info(DType::F32, shape);
        assert!(
            old.mag > input.mag && old.grid < input.grid,
            "old value {old:?}, initial data {input:?}"
        );
    }
}
