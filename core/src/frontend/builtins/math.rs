//! Elementwise math builtins, with Triton's promotion and broadcasting: the float
//! functions (`tl.exp`, `tl.sqrt`, ..., `tl.sigmoid`), `tl.where`, `tl.minimum` /
//! `tl.maximum` / `tl.clamp`, `tl.fdiv` / `tl.div_rn`, `tl.pow`, `tl.fma`, `abs`
//! (Python's and `tl.abs`) and `cdiv` (`triton.cdiv`, `tl.cdiv`).

use super::args::{bind, Bound};
use super::Call;
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::semantic::computation_type;
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::Val;
use crate::ir::{BinaryOp, DType, Elem, Op, UnaryOp};
use rustpython_parser::ast::Operator;

/// A float function of one argument (`tl.exp`, `tl.log`, `tl.sqrt`, ...): see
/// [`Tracer::math1`].
pub(super) fn float_math(t: &mut Tracer<'_>, b: &Bound, op: UnaryOp) -> Result<Val> {
    let (v, s) = b.req(0)?.clone();
    t.math1(op, &v, s, b.span)
}

/// `tl.sigmoid(x)`: `1 / (1 + exp(-x))`.
pub(super) fn sigmoid(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let span = b.span;
    let (v, s) = b.req(0)?.clone();
    let neg = t.unop(rustpython_parser::ast::UnaryOp::USub, v, s)?;
    let e = t.math1(UnaryOp::Exp, &neg, s, span)?;
    let d = t.binop(Operator::Add, Val::Int(1), e, span)?;
    t.binop(Operator::Div, Val::Int(1), d, span)
}

/// `tl.where(condition, x, y)`.
pub(super) fn where_(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (c, x, y) = (
        b.req(0)?.0.clone(),
        b.req(1)?.0.clone(),
        b.req(2)?.0.clone(),
    );
    t.where_(c, x, y, b.span)
}

/// `tl.minimum(x, y, propagate_nan=...)` / `tl.maximum`.
pub(super) fn min_max(t: &mut Tracer<'_>, b: &Bound, op: BinaryOp) -> Result<Val> {
    t.elementwise2(op, b.req(0)?.0.clone(), b.req(1)?.0.clone(), b.span)
}

/// `tl.clamp(x, min, max, propagate_nan=...)`.
pub(super) fn clamp(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let lo = t.elementwise2(
        BinaryOp::Max,
        b.req(0)?.0.clone(),
        b.req(1)?.0.clone(),
        b.span,
    )?;
    t.elementwise2(BinaryOp::Min, lo, b.req(2)?.0.clone(), b.span)
}

/// `tl.fdiv(x, y, ieee_rounding=False)` / `tl.div_rn(x, y)`: true division.
pub(super) fn div(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    t.binop(
        Operator::Div,
        b.req(0)?.0.clone(),
        b.req(1)?.0.clone(),
        b.span,
    )
}

/// `tl.pow(x, y)`.
pub(super) fn pow(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    t.binop(
        Operator::Pow,
        b.req(0)?.0.clone(),
        b.req(1)?.0.clone(),
        b.span,
    )
}

/// `tl.fma(x, y, z)`: the three promoted together and broadcast.
pub(super) fn fma(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let span = b.span;
    let vals = [
        b.req(0)?.0.clone(),
        b.req(1)?.0.clone(),
        b.req(2)?.0.clone(),
    ];
    let mut dt: Option<(DType, bool)> = None;
    for v in &vals {
        let Elem::Data(d) = t.elem_of(v, span)? else {
            return Err(err(ErrorKind::Type, "tl.fma needs numbers", span));
        };
        dt = Some(match dt {
            None => (d, v.is_number()),
            Some((p, pl)) => {
                let r = computation_type(p, pl, d, v.is_number(), false)
                    .map_err(|m| err(ErrorKind::Type, m, span))?;
                (r, pl && v.is_number())
            }
        });
    }
    let dt = dt.map(|d| d.0).unwrap_or(DType::F32);
    let mut xs = vec![];
    for v in &vals {
        xs.push(t.materialize(v, dt, span)?);
    }
    let mut shape: Vec<u32> = vec![];
    for x in &xs {
        let s = t.shape(*x);
        shape = t.broadcast_shapes(&shape, &s, span)?;
    }
    for x in xs.iter_mut() {
        *x = t.broadcast_to(*x, &shape, span)?;
    }
    let ty = t.ty(xs[0]);
    Ok(Val::T(t.b.push1(
        Op::Fma {
            a: xs[0],
            b: xs[1],
            c: xs[2],
        },
        ty,
        span,
    )))
}

/// Python's `abs(x)` and `tl.abs(x)` (each named as called in its errors): folded on
/// constants, the identity on unsigned and bool tiles.
pub(super) fn abs(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let span = c.span;
    let b = bind(c.name, c.args, c.kwargs, &["x"], 1, span)?;
    let (v, s) = b.req(0)?.clone();
    match v {
        Val::Int(i) => Ok(Val::Int(i.checked_abs().unwrap_or(i))),
        Val::Float(f) => Ok(Val::Float(f.abs())),
        Val::Bool(b) => Ok(Val::Int(b as i64)),
        other => {
            let (x, d) = t.data_tensor(&other, s, "abs")?;
            if d.is_unsigned_int() || d.is_bool() {
                return Ok(Val::T(x));
            }
            let ty = t.ty(x);
            Ok(Val::T(t.b.push1(
                Op::Unary {
                    op: UnaryOp::Abs,
                    value: x,
                },
                ty,
                span,
            )))
        }
    }
}

/// `triton.cdiv(x, div)` / `tl.cdiv`: ceiling division, folded on constants.
pub(super) fn cdiv(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let span = b.span;
    let (x, y) = (b.req(0)?.0.clone(), b.req(1)?.0.clone());
    if x.is_number() && y.is_number() {
        let (Val::Int(a), Val::Int(d)) = (&x, &y) else {
            return Err(err(ErrorKind::Type, "cdiv needs integers", span));
        };
        if *d == 0 {
            return Err(err(ErrorKind::Static, "cdiv by zero", span));
        }
        let q = a.div_euclid(*d);
        return Ok(Val::Int(if a.rem_euclid(*d) != 0 && *d > 0 {
            q + 1
        } else {
            -((-a).div_euclid(*d))
        }));
    }
    let s1 = t.binop(Operator::Add, x, y.clone(), span)?;
    let s2 = t.binop(Operator::Sub, s1, Val::Int(1), span)?;
    t.binop(Operator::FloorDiv, s2, y, span)
}

impl Tracer<'_> {
    /// `tl.where(cond, x, y)`.
    pub fn where_(&mut self, c: Val, x: Val, y: Val, span: Span) -> Result<Val> {
        let cv = self.tensor_of(&c, span)?;
        let cv = self.as_i1(cv, span)?;
        let (a, b, _) = self.promote_pair(&x, &y, false, span, "where")?;
        let s = self.shape(a);
        let cs = self.shape(cv);
        let shape = self.broadcast_shapes(&cs, &s, span)?;
        let cv = self.broadcast_to(cv, &shape, span)?;
        let a = self.broadcast_to(a, &shape, span)?;
        let b = self.broadcast_to(b, &shape, span)?;
        let ty = self.ty(a);
        Ok(Val::T(self.b.push1(
            Op::Select {
                cond: cv,
                on_true: a,
                on_false: b,
            },
            ty,
            span,
        )))
    }

    /// Promoted elementwise binary op (`minimum`, `maximum`).
    pub fn elementwise2(&mut self, op: BinaryOp, a: Val, b: Val, span: Span) -> Result<Val> {
        let (x, y, _) = self.promote_pair(&a, &b, false, span, op.name())?;
        let ty = self.ty(x);
        Ok(Val::T(self.b.push1(
            Op::Binary { op, lhs: x, rhs: y },
            ty,
            span,
        )))
    }

    /// A float-only math function: ints go through f32; f16 / bf16 compute in f32
    /// and are cast back (as Triton's libdevice path).
    pub fn math1(&mut self, op: UnaryOp, v: &Val, s: Span, span: Span) -> Result<Val> {
        let (x, d) = self.data_tensor(v, s, &format!("tl.{}", op.name()))?;
        let (x, back) = match d {
            DType::F32 | DType::F64 => (x, None),
            DType::F16 | DType::BF16 => (self.cast(x, DType::F32, span), Some(d)),
            _ => (self.cast(x, DType::F32, span), None),
        };
        let ty = self.ty(x);
        let r = self.b.push1(Op::Unary { op, value: x }, ty, span);
        Ok(Val::T(match back {
            Some(d) => self.cast(r, d, span),
            None => r,
        }))
    }
}
