//! Builtins that create values: program ids, `tl.arange`, `tl.zeros` / `tl.full` and
//! their `_like` forms, casts (`tl.cast`, also `x.to(...)`), and type values
//! (`tl.pointer_type`, `tl.constexpr`).

use super::args::{const_dtype, const_int, shape_arg, Bound};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::Val;
use crate::ir::{Const, DType, Elem, Op, Type, Value};

/// The axis of `tl.program_id` / `tl.num_programs`: 0, 1 or 2.
fn grid_axis(b: &Bound) -> Result<u8> {
    let a = const_int(&b.req(0)?.0, b.span_of(0), "the axis")?;
    if !(0..3).contains(&a) {
        return Err(err(
            ErrorKind::Argument,
            format!("{} axis must be 0, 1 or 2, got {a}", b.fname),
            b.span_of(0),
        ));
    }
    Ok(a as u8)
}

/// `tl.program_id(axis)`.
pub(super) fn program_id(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let axis = grid_axis(b)?;
    let op = Op::ProgramId { axis };
    Ok(Val::T(t.b.push1(op, Type::scalar(DType::I32), b.span)))
}

/// `tl.num_programs(axis)`.
pub(super) fn num_programs(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let axis = grid_axis(b)?;
    let op = Op::NumPrograms { axis };
    Ok(Val::T(t.b.push1(op, Type::scalar(DType::I32), b.span)))
}

/// `tl.arange(start, end)`.
pub(super) fn arange(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let span = b.span;
    let start = const_int(&b.req(0)?.0, b.span_of(0), "arange's start")?;
    let end = const_int(&b.req(1)?.0, b.span_of(1), "arange's end")?;
    if end <= start {
        return Err(err(
            ErrorKind::Shape,
            format!("tl.arange's end must be greater than its start, got arange({start}, {end})"),
            span,
        ));
    }
    // Checked: `arange(-2**63, 2**62)` must not overflow.
    let n = end.checked_sub(start).unwrap_or(i64::MAX);
    if n & (n - 1) != 0 || n > (1 << 20) {
        return Err(err(ErrorKind::Shape, format!("tl.arange's range must be a power of 2, got arange({start}, {end}) with {n} elements"), span)
            .with_note("pad the range to the next power of two (triton.next_power_of_2) and mask the extra lanes"));
    }
    if i32::try_from(start).is_err() || i32::try_from(end).is_err() {
        return Err(err(
            ErrorKind::Shape,
            "tl.arange bounds must fit in int32",
            span,
        ));
    }
    Ok(Val::T(t.b.push1(
        Op::Arange { start, end },
        Type::tile(DType::I32, vec![n as u32]),
        span,
    )))
}

/// `tl.zeros(shape, dtype)`.
pub(super) fn zeros(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let shape = shape_arg(&b.req(0)?.0, b.span_of(0))?;
    let dt = const_dtype(&b.req(1)?.0, b.span_of(1))?;
    t.full(&shape, &Val::Int(0), dt, b.span)
}

/// `tl.full(shape, value, dtype)`.
pub(super) fn full(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let shape = shape_arg(&b.req(0)?.0, b.span_of(0))?;
    let dt = const_dtype(&b.req(2)?.0, b.span_of(2))?;
    let value = b.req(1)?.0.clone();
    t.full(&shape, &value, dt, b.span)
}

/// `tl.zeros_like(input, dtype=None)`.
pub(super) fn zeros_like(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    full_like_of(t, b, Val::Int(0), 1)
}

/// `tl.full_like(input, value, dtype=None)`.
pub(super) fn full_like(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let value = b.req(1)?.0.clone();
    full_like_of(t, b, value, 2)
}

/// A tile of `value` with the shape of argument 0 and the dtype of argument
/// `dtype_at`, by default argument 0's.
fn full_like_of(t: &mut Tracer<'_>, b: &Bound, value: Val, dtype_at: usize) -> Result<Val> {
    let (x, d) = t.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), &b.fname)?;
    let dt = match b.get(dtype_at) {
        Some((v, s)) => const_dtype(v, *s)?,
        None => d,
    };
    let shape = t.shape(x);
    t.full(&shape, &value, dt, b.span)
}

/// `tl.cast(input, dtype, fp_downcast_rounding=None, bitcast=False)`, also `x.to(...)`.
pub(super) fn cast(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let span = b.span;
    let v = b.req(0)?.0.clone();
    if let Some((r, rs)) = b.get(2) {
        match r {
            Val::None => {}
            Val::Str(m) if m == "rtne" => {}
            Val::Str(m) if m == "rtz" => {
                return Err(err(
                    ErrorKind::Unsupported,
                    "fp_downcast_rounding=\"rtz\" is not supported yet: tilewise rounds float downcasts to nearest, ties to even",
                    *rs,
                ))
            }
            other => {
                return Err(err(
                    ErrorKind::Argument,
                    format!(
                        "fp_downcast_rounding must be \"rtne\" or \"rtz\", got {}",
                        t.describe(other)
                    ),
                    *rs,
                ))
            }
        }
    }
    if let Val::PtrType(target) = &b.req(1)?.0 {
        return pointer_cast(t, &v, *target, span).map(Val::T);
    }
    let dt = const_dtype(&b.req(1)?.0, b.span_of(1))?;
    let bitcast = b
        .get(3)
        .map(|(v, _)| v.truthy().unwrap_or(false))
        .unwrap_or(false);
    if let Val::T(x) = &v {
        if t.ty(*x).elem().is_some_and(|e| e.is_ptr()) && !bitcast {
            return pointer_to_int(t, *x, dt, span).map(Val::T);
        }
    }
    let x = if v.is_number() && !bitcast {
        t.materialize(&v, dt, span)?
    } else {
        t.tensor_of(&v, span)?
    };
    if bitcast {
        return Ok(Val::T(t.bitcast(x, dt, span)?));
    }
    Ok(Val::T(t.cast_checked(x, dt, span)?))
}

/// `x.to(tl.pointer_type(target))`: the identity on a pointer to `target`, a
/// reinterpretation of any other pointer, and an address made a pointer from a 64-bit
/// integer (pointers as data: an address a host wrote into a table).
fn pointer_cast(t: &mut Tracer<'_>, v: &Val, target: DType, span: Span) -> Result<Value> {
    let x = if v.is_number() {
        t.materialize(v, DType::I64, span)?
    } else {
        t.tensor_of(v, span)?
    };
    let ty = t.ty(x);
    let shape = ty.shape().to_vec();
    match ty.elem() {
        Some(Elem::Ptr(d)) if d == target => Ok(x),
        Some(Elem::Ptr(_)) => Ok(t.push_cast(x, Type::ptr(target, shape), span)),
        Some(Elem::Data(DType::I64 | DType::U64)) => {
            Ok(t.push_cast(x, Type::ptr(target, shape), span))
        }
        _ => Err(err(
            ErrorKind::Type,
            format!(
                "cannot cast {} to pointer<{}>: an address is a 64-bit integer (tl.int64 or tl.uint64)",
                t.describe(v),
                target.triton_name()
            ),
            span,
        )),
    }
}

/// `ptr.to(tl.int64)`: a pointer's address as a 64-bit integer.
fn pointer_to_int(t: &mut Tracer<'_>, x: Value, dt: DType, span: Span) -> Result<Value> {
    if !matches!(dt, DType::I64 | DType::U64) {
        return Err(err(
            ErrorKind::Type,
            format!(
                "cannot cast a pointer to {}: an address converts to tl.int64 or tl.uint64",
                dt.triton_name()
            ),
            span,
        ));
    }
    let shape = t.ty(x).shape().to_vec();
    Ok(t.push_cast(x, Type::tile(dt, shape), span))
}

/// `tl.pointer_type(element_ty, address_space=1, const=False)`.
pub(super) fn pointer_type(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (e, es) = b.req(0)?;
    match e {
        Val::DType(d) => Ok(Val::PtrType(*d)),
        Val::PtrType(_) => Err(err(
            ErrorKind::Unsupported,
            "a pointer to pointers (`tl.pointer_type` of a pointer type) is not supported yet",
            *es,
        )),
        other => Err(err(
            ErrorKind::Type,
            format!(
                "tl.pointer_type needs a dtype such as tl.float32, got {}",
                t.describe(other)
            ),
            *es,
        )),
    }
}

/// `tl.constexpr(value)`: the value itself, which must be known at compile time.
pub(super) fn constexpr(_: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let v = b.req(0)?.0.clone();
    if !v.is_constexpr() {
        return Err(err(
            ErrorKind::Static,
            "tl.constexpr(...) of a runtime value",
            b.span,
        ));
    }
    Ok(v)
}

impl Tracer<'_> {
    /// A tile of `shape` and `dt` filled with `value` (a number or a runtime scalar).
    fn full(&mut self, shape: &[u32], value: &Val, dt: DType, span: Span) -> Result<Val> {
        if value.is_number() {
            let c = self.lit_const(value, dt, span)?;
            return Ok(Val::T(self.konst(c, Type::tile(dt, shape.to_vec()), span)));
        }
        let x = self.materialize(value, dt, span)?;
        if !self.ty(x).is_scalar() {
            return Err(err(
                ErrorKind::Shape,
                "tl.full's value must be a scalar",
                span,
            ));
        }
        Ok(Val::T(self.broadcast_to(x, shape, span)?))
    }

    pub fn zero_const(&mut self, dt: DType, shape: Vec<u32>, span: Span) -> Value {
        let c = if dt.is_float() {
            Const::Float(0.0)
        } else if dt.is_bool() {
            Const::Bool(false)
        } else {
            Const::Int(0)
        };
        self.konst(c, Type::tile(dt, shape), span)
    }
}
