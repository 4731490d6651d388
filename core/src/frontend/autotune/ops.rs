//! Python's operators on values: binary arithmetic (with Python's floor division and
//! modulo, sequence concatenation and repetition, and 64-bit overflow as an error), unary
//! operators, `==`, ordering, membership and identity.

use super::containers::{dict_pos, dict_set};
use super::errors::{overflow, type_err};
use super::host::Host;
use super::values::{describe, int_of, num_f, num_i, truthy, DictRef, V};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::tracer::err;
use rustpython_parser::ast::{CmpOp, Operator, UnaryOp};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

fn py_floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn py_mod(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

fn repeat<'a>(items: &[V<'a>], n: u64) -> Vec<V<'a>> {
    if items.is_empty() {
        return vec![];
    }
    let mut out = Vec::with_capacity(items.len() * n as usize);
    for _ in 0..n {
        out.extend(items.iter().cloned());
    }
    out
}

fn op_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

pub(super) fn unary<'a>(op: UnaryOp, v: V<'a>, span: Span) -> Result<V<'a>> {
    match (op, &v) {
        (UnaryOp::Not, _) => Ok(V::Bool(!truthy(&v))),
        (UnaryOp::USub, V::Float(f)) => Ok(V::Float(-f)),
        (UnaryOp::UAdd, V::Float(f)) => Ok(V::Float(*f)),
        (UnaryOp::USub, _) if num_i(&v).is_some() => num_i(&v)
            .and_then(i64::checked_neg)
            .map(V::Int)
            .ok_or_else(|| overflow(span)),
        (UnaryOp::UAdd, _) if num_i(&v).is_some() => Ok(V::Int(num_i(&v).unwrap_or(0))),
        (UnaryOp::Invert, _) if num_i(&v).is_some() => Ok(V::Int(!num_i(&v).unwrap_or(0))),
        _ => Err(type_err(
            format!("bad operand for a unary operator: {}", describe(&v)),
            span,
        )),
    }
}

/// Python `==`. Comparing a torch dtype with a `triton.language` one is an error: Python
/// says they differ, which is never what the author meant.
pub(super) fn py_eq<'a>(a: &V<'a>, b: &V<'a>, span: Span) -> Result<bool> {
    Ok(match (a, b) {
        (V::None, V::None) => true,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Int(_) | V::Bool(_) | V::Float(_), V::Int(_) | V::Bool(_) | V::Float(_)) => {
            match (num_i(a), num_i(b)) {
                (Some(x), Some(y)) => x == y,
                _ => num_f(a) == num_f(b),
            }
        }
        (V::List(x), V::List(y)) => seq_eq(&x.borrow(), &y.borrow(), span)?,
        (V::Tuple(x), V::Tuple(y)) => seq_eq(x, y, span)?,
        (V::Dict(x), V::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                let Some((_, w)) = y.iter().find(|(k2, _)| py_eq(k, k2, span).unwrap_or(false))
                else {
                    return Ok(false);
                };
                if !py_eq(v, w, span)? {
                    return Ok(false);
                }
            }
            true
        }
        (V::Range(a1, b1, s1), V::Range(a2, b2, s2)) => (a1, b1, s1) == (a2, b2, s2),
        (V::DType(x, fx), V::DType(y, fy)) => {
            if fx != fy {
                return Err(type_err(
                    "comparing a torch dtype with a triton.language dtype: in Triton they are never equal (a tensor's `.dtype` is a torch dtype; compare it with `torch.float16` and the like)",
                    span,
                ));
            }
            x == y
        }
        (V::Config(x), V::Config(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            py_eq(&x.kwargs, &y.kwargs, span)?
                && x.num_warps.unwrap_or(4) == y.num_warps.unwrap_or(4)
                && x.num_stages.unwrap_or(3) == y.num_stages.unwrap_or(3)
        }
        (V::Target, V::Target) | (V::DeviceProperties, V::DeviceProperties) => true,
        (V::Func(x), V::Func(y)) => Rc::ptr_eq(x, y),
        (V::Builtin(x), V::Builtin(y)) => x == y,
        (V::Path(x), V::Path(y)) => x == y,
        (V::Jit(x), V::Jit(y)) => x == y,
        _ => false,
    })
}

fn seq_eq<'a>(x: &[V<'a>], y: &[V<'a>], span: Span) -> Result<bool> {
    if x.len() != y.len() {
        return Ok(false);
    }
    for (a, b) in x.iter().zip(y) {
        if !py_eq(a, b, span)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Python ordering; `None` where the values are unordered (NaN).
pub(super) fn order<'a>(a: &V<'a>, b: &V<'a>, span: Span) -> Result<Option<Ordering>> {
    match (a, b) {
        (V::Int(_) | V::Bool(_) | V::Float(_), V::Int(_) | V::Bool(_) | V::Float(_)) => {
            Ok(match (num_i(a), num_i(b)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => num_f(a).partial_cmp(&num_f(b)),
            })
        }
        (V::Str(x), V::Str(y)) => Ok(Some(x.cmp(y))),
        (V::List(x), V::List(y)) => seq_order(&x.borrow(), &y.borrow(), span),
        (V::Tuple(x), V::Tuple(y)) => seq_order(x, y, span),
        _ => Err(type_err(
            format!("{} and {} cannot be ordered", describe(a), describe(b)),
            span,
        )),
    }
}

fn seq_order<'a>(x: &[V<'a>], y: &[V<'a>], span: Span) -> Result<Option<Ordering>> {
    for (a, b) in x.iter().zip(y) {
        if !py_eq(a, b, span)? {
            return order(a, b, span);
        }
    }
    Ok(Some(x.len().cmp(&y.len())))
}

fn contains<'a>(container: &V<'a>, x: &V<'a>, span: Span) -> Result<bool> {
    match container {
        V::List(l) => {
            for y in l.borrow().iter() {
                if py_eq(x, y, span)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        V::Tuple(t) => {
            for y in t.iter() {
                if py_eq(x, y, span)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        V::Dict(d) => Ok(dict_pos(d, x, span)?.is_some()),
        V::Str(s) => match x {
            V::Str(sub) => Ok(s.contains(&**sub)),
            other => Err(type_err(
                format!(
                    "`in <str>` needs a str on the left, not {}",
                    describe(other)
                ),
                span,
            )),
        },
        V::Range(a, b, s) => Ok(match num_i(x) {
            Some(v) => {
                let inside = if *s > 0 {
                    v >= *a && v < *b
                } else {
                    v <= *a && v > *b
                };
                inside && (v as i128 - *a as i128) % (*s as i128) == 0
            }
            None => false,
        }),
        other => Err(type_err(
            format!("`in` is not supported on {}", describe(other)),
            span,
        )),
    }
}

pub(super) fn compare<'a>(op: CmpOp, a: &V<'a>, b: &V<'a>, span: Span) -> Result<bool> {
    Ok(match op {
        CmpOp::Eq => py_eq(a, b, span)?,
        CmpOp::NotEq => !py_eq(a, b, span)?,
        CmpOp::Lt => order(a, b, span)? == Some(Ordering::Less),
        CmpOp::LtE => matches!(order(a, b, span)?, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => order(a, b, span)? == Some(Ordering::Greater),
        CmpOp::GtE => matches!(
            order(a, b, span)?,
            Some(Ordering::Greater | Ordering::Equal)
        ),
        CmpOp::In => contains(b, a, span)?,
        CmpOp::NotIn => !contains(b, a, span)?,
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (a, b) {
                (V::None, V::None) | (V::Target, V::Target) => true,
                (V::Bool(x), V::Bool(y)) => x == y,
                (V::List(x), V::List(y)) => Rc::ptr_eq(x, y),
                (V::Dict(x), V::Dict(y)) => Rc::ptr_eq(x, y),
                (V::Config(x), V::Config(y)) => Rc::ptr_eq(x, y),
                (V::Func(x), V::Func(y)) => Rc::ptr_eq(x, y),
                (V::DType(x, fx), V::DType(y, fy)) => x == y && fx == fy,
                (V::Int(x), V::Int(y)) => x == y,
                (V::Str(x), V::Str(y)) => x == y,
                _ => false,
            };
            same == (op == CmpOp::Is)
        }
    })
}

impl<'a> Host<'a> {
    pub(super) fn binop(&mut self, op: Operator, l: V<'a>, r: V<'a>, span: Span) -> Result<V<'a>> {
        use Operator::*;
        // Sequences.
        match (&l, &r, op) {
            (V::Str(a), V::Str(b), Add) => return Ok(V::Str(format!("{a}{b}").into())),
            (V::List(a), V::List(b), Add) => {
                let mut v = a.borrow().clone();
                v.extend(b.borrow().iter().cloned());
                self.charge(v.len() as u64, span)?;
                return Ok(V::list(v));
            }
            (V::Tuple(a), V::Tuple(b), Add) => {
                let mut v = a.to_vec();
                v.extend(b.iter().cloned());
                self.charge(v.len() as u64, span)?;
                return Ok(V::tuple(v));
            }
            (V::Dict(a), V::Dict(b), BitOr) => {
                let out: DictRef<'a> = Rc::new(RefCell::new(a.borrow().clone()));
                let entries = b.borrow().clone();
                for (k, v) in entries {
                    dict_set(&out, k, v, span)?;
                }
                return Ok(V::Dict(out));
            }
            (V::Str(_) | V::List(_) | V::Tuple(_), V::Int(_) | V::Bool(_), Mult)
            | (V::Int(_) | V::Bool(_), V::Str(_) | V::List(_) | V::Tuple(_), Mult) => {
                let (seq, n) = if matches!(l, V::Int(_) | V::Bool(_)) {
                    (&r, &l)
                } else {
                    (&l, &r)
                };
                let n = int_of(n, span)?.max(0) as u64;
                return match seq {
                    V::Str(s) => {
                        self.charge(n.saturating_mul(s.len() as u64), span)?;
                        Ok(V::Str(s.repeat(n as usize).into()))
                    }
                    V::List(x) => {
                        let items = x.borrow().clone();
                        self.charge(n.saturating_mul(items.len() as u64), span)?;
                        Ok(V::list(repeat(&items, n)))
                    }
                    V::Tuple(x) => {
                        self.charge(n.saturating_mul(x.len() as u64), span)?;
                        Ok(V::tuple(repeat(x, n)))
                    }
                    _ => unreachable!("matched a sequence"),
                };
            }
            _ => {}
        }
        let bad = || {
            type_err(
                format!(
                    "unsupported operand types for {}: {} and {}",
                    op_symbol(op),
                    describe(&l),
                    describe(&r)
                ),
                span,
            )
        };
        // Bitwise operators keep bools bools.
        if let (V::Bool(a), V::Bool(b)) = (&l, &r) {
            match op {
                BitAnd => return Ok(V::Bool(a & b)),
                BitOr => return Ok(V::Bool(a | b)),
                BitXor => return Ok(V::Bool(a ^ b)),
                _ => {}
            }
        }
        if let (Some(a), Some(b)) = (num_i(&l), num_i(&r)) {
            let zero = || err(ErrorKind::Runtime, "division by zero", span);
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mult => a.checked_mul(b),
                FloorDiv => {
                    if b == 0 {
                        return Err(zero());
                    }
                    py_floordiv(a, b)
                }
                Mod => {
                    if b == 0 {
                        return Err(zero());
                    }
                    py_mod(a, b)
                }
                Div => {
                    if b == 0 {
                        return Err(zero());
                    }
                    return Ok(V::Float(a as f64 / b as f64));
                }
                Pow => {
                    if b < 0 {
                        if a == 0 {
                            return Err(zero());
                        }
                        return Ok(V::Float((a as f64).powf(b as f64)));
                    }
                    u32::try_from(b).ok().and_then(|e| a.checked_pow(e))
                }
                LShift => {
                    if b < 0 {
                        return Err(err(ErrorKind::Runtime, "negative shift count", span));
                    }
                    if a == 0 {
                        Some(0)
                    } else {
                        u32::try_from(b)
                            .ok()
                            .and_then(|s| a.checked_shl(s))
                            .filter(|x| x >> b == a)
                    }
                }
                RShift => {
                    if b < 0 {
                        return Err(err(ErrorKind::Runtime, "negative shift count", span));
                    }
                    Some(a >> b.min(63))
                }
                BitAnd => Some(a & b),
                BitOr => Some(a | b),
                BitXor => Some(a ^ b),
                MatMult => return Err(bad()),
            };
            return v.map(V::Int).ok_or_else(|| overflow(span));
        }
        let (Some(a), Some(b)) = (num_f(&l), num_f(&r)) else {
            return Err(bad());
        };
        let zero = || err(ErrorKind::Runtime, "float division by zero", span);
        Ok(V::Float(match op {
            Add => a + b,
            Sub => a - b,
            Mult => a * b,
            Div => {
                if b == 0.0 {
                    return Err(zero());
                }
                a / b
            }
            FloorDiv | Mod => {
                if b == 0.0 {
                    return Err(zero());
                }
                let mut m = a % b;
                if m != 0.0 && ((m < 0.0) != (b < 0.0)) {
                    m += b;
                }
                if op == Mod {
                    m
                } else {
                    ((a - m) / b).round()
                }
            }
            Pow => {
                if a == 0.0 && b < 0.0 {
                    return Err(zero());
                }
                if a < 0.0 && b.fract() != 0.0 {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "a negative number to a fractional power is complex",
                        span,
                    ));
                }
                a.powf(b)
            }
            _ => return Err(bad()),
        }))
    }
}
