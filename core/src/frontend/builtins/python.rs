//! Python's builtins in a kernel: `isinstance`, `len`, `int` / `float` / `bool`,
//! `min` / `max`, and `triton.next_power_of_2`; and the errors for those a kernel
//! cannot call (`print`, `range` outside a `for`, `getattr`, ...).

use super::args::{const_int, Bound};
use super::Call;
use crate::diag::{ErrorKind, Result};
use crate::frontend::expr::Args;
use crate::frontend::tracer::{err, unsupported, Tracer};
use crate::frontend::value::Val;
use crate::ir::{BinaryOp, DType};

/// `range`, `tl.range` and `tl.static_range` are only iterables of a `for` loop
/// (`control.rs`); called anywhere else, they are an error.
pub(super) fn range_outside_for(_: &mut Tracer<'_>, c: Call) -> Result<Val> {
    Err(err(
        ErrorKind::Unsupported,
        format!(
            "{}(...) can only be used as the iterable of a `for` loop",
            c.name
        ),
        c.span,
    ))
}

/// `print`: not in a kernel.
pub(super) fn print(_: &mut Tracer<'_>, c: Call) -> Result<Val> {
    Err(err(
        ErrorKind::Unsupported,
        "`print` is not supported in a kernel; use tl.static_print (at compile time) or tl.device_print (at run time)",
        c.span,
    ))
}

/// `getattr`, `enumerate`, `zip`: not in a kernel.
pub(super) fn unsupported_builtin(_: &mut Tracer<'_>, c: Call) -> Result<Val> {
    Err(unsupported(&format!("`{}`", c.name), c.span))
}

/// `triton.jit`: not in a kernel.
pub(super) fn jit_in_kernel(_: &mut Tracer<'_>, c: Call) -> Result<Val> {
    Err(unsupported("`triton.jit` inside a kernel", c.span))
}

/// `isinstance(obj, classinfo)` for the classes a kernel knows: `tl.tensor`,
/// `tl.tensor_descriptor`, `tl.constexpr`, `tl.dtype`, `int`, `float`, `bool`, or a
/// tuple of them.
pub(super) fn isinstance(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (v, _) = b.req(0)?.clone();
    let (c, cs) = b.req(1)?.clone();
    let classes = match c {
        Val::Tuple(items, _) => items,
        other => vec![other],
    };
    let mut any = false;
    for c in &classes {
        let is = match c {
            Val::Builtin(n) => match n.as_str() {
                "tl.tensor_descriptor" | "tl.tensor_descriptor_base" => {
                    matches!(v, Val::Desc(_))
                }
                "tl.tensor" => matches!(v, Val::T(_)),
                "tl.constexpr" => v.is_constexpr() && !matches!(v, Val::Desc(_)),
                "tl.dtype" => matches!(
                    v,
                    Val::DType(_) | Val::PtrType(_) | Val::OtherDType(_) | Val::BlockType(..)
                ),
                "int" => matches!(v, Val::Int(_) | Val::Bool(_)),
                "float" => matches!(v, Val::Float(_)),
                "bool" => matches!(v, Val::Bool(_)),
                other => return Err(err(ErrorKind::Unsupported, format!("isinstance(..., {other}) is not supported in a kernel; it knows tl.tensor, tl.tensor_descriptor, tl.constexpr, tl.dtype, int, float and bool"), cs)),
            },
            other => {
                return Err(err(
                    ErrorKind::Unsupported,
                    format!(
                        "isinstance(..., {}) is not supported in a kernel",
                        t.describe(other)
                    ),
                    cs,
                ))
            }
        };
        any |= is;
    }
    Ok(Val::Bool(any))
}

/// `len(obj)` of a tuple, a string, or a tile (its first dimension).
pub(super) fn len(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    match &b.req(0)?.0 {
        Val::Tuple(items, _) => Ok(Val::Int(items.len() as i64)),
        Val::Str(s) => Ok(Val::Int(s.len() as i64)),
        Val::T(x) => Ok(Val::Int(t.shape(*x).first().copied().unwrap_or(0) as i64)),
        other => Err(err(
            ErrorKind::Type,
            format!("len() of {}", other.describe(None)),
            b.span,
        )),
    }
}

/// `int(x)`, `float(x)`, `bool(x)`: folded on constants (and strings), a cast to
/// int32, float32 or int1 on tiles.
pub(super) fn convert(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let name = b.fname.as_str();
    let (v, s) = b.req(0)?.clone();
    match (name, &v) {
        ("float", Val::Str(x)) => match x.trim().to_ascii_lowercase().as_str() {
            "inf" | "+inf" | "infinity" => Ok(Val::Float(f64::INFINITY)),
            "-inf" | "-infinity" => Ok(Val::Float(f64::NEG_INFINITY)),
            "nan" | "+nan" | "-nan" => Ok(Val::Float(f64::NAN)),
            other => other.parse::<f64>().map(Val::Float).map_err(|_| {
                err(
                    ErrorKind::Type,
                    format!("could not convert {x:?} to float"),
                    s,
                )
            }),
        },
        ("float", v) if v.is_number() => Ok(Val::Float(number_as_f64(v))),
        ("int", Val::Float(f)) if f.is_finite() => Ok(Val::Int(f.trunc() as i64)),
        ("int", Val::Int(i)) => Ok(Val::Int(*i)),
        ("int", Val::Bool(b)) => Ok(Val::Int(*b as i64)),
        ("int", Val::Str(x)) => x
            .trim()
            .parse::<i64>()
            .map(Val::Int)
            .map_err(|_| err(ErrorKind::Type, format!("invalid int literal {x:?}"), s)),
        ("bool", v) if v.is_constexpr() => Ok(Val::Bool(v.truthy().unwrap_or(false))),
        (_, Val::T(x)) => {
            let d = match name {
                "int" => DType::I32,
                "float" => DType::F32,
                _ => DType::I1,
            };
            if d == DType::I1 {
                Ok(Val::T(t.as_i1(*x, s)?))
            } else {
                Ok(Val::T(t.cast_checked(*x, d, s)?))
            }
        }
        _ => Err(err(
            ErrorKind::Type,
            format!("{name}() of {}", v.describe(None)),
            s,
        )),
    }
}

/// `min(a, b, ...)` / `max(...)`, or of one tuple: folded on numbers, elementwise
/// `minimum` / `maximum` on tiles.
pub(super) fn min_max(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let (name, args, kwargs, span) = (c.name, c.args, c.kwargs, c.span);
    if args.len() == 1 {
        if let Val::Tuple(items, _) = &args[0].0 {
            let s = args[0].1;
            let items: Args = items.iter().map(|i| (i.clone(), s)).collect();
            return t.call_builtin(name, items, kwargs, span);
        }
    }
    if args.is_empty() || !kwargs.is_empty() {
        return Err(err(
            ErrorKind::Argument,
            format!("{name}() needs at least one positional argument and no keywords"),
            span,
        ));
    }
    let mut acc = args[0].0.clone();
    for (v, _) in args.iter().skip(1) {
        acc = if acc.is_number() && v.is_number() {
            let (a, b) = (number_as_f64(&acc), number_as_f64(v));
            let pick_second = if name == "min" { b < a } else { b > a };
            if pick_second {
                v.clone()
            } else {
                acc
            }
        } else {
            let op = if name == "min" {
                BinaryOp::Min
            } else {
                BinaryOp::Max
            };
            t.elementwise2(op, acc, v.clone(), span)?
        };
    }
    Ok(acc)
}

/// `triton.next_power_of_2(n)` / `tl.next_power_of_2`, of a compile-time int.
pub(super) fn next_power_of_2(_: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let n = const_int(&b.req(0)?.0, b.span_of(0), "next_power_of_2's argument")?;
    if n <= 1 {
        return Ok(Val::Int(1));
    }
    let p = (n as u64)
        .checked_next_power_of_two()
        .filter(|p| *p <= i64::MAX as u64);
    p.map(|p| Val::Int(p as i64))
        .ok_or_else(|| err(ErrorKind::Static, "next_power_of_2 overflow", b.span))
}

/// A Python number (int, bool or float) as an `f64`.
fn number_as_f64(v: &Val) -> f64 {
    match v {
        Val::Int(i) => *i as f64,
        Val::Bool(b) => *b as i64 as f64,
        Val::Float(f) => *f,
        _ => 0.0,
    }
}
