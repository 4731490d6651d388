//! Typing rules of the Triton dialect: literal materialization, casts, broadcasting
//! and dtype promotion (Triton's `semantic.py`: `computation_type_impl`,
//! `broadcast_impl_value`, `binary_op_type_checking_impl`).
//!
//! The tile IR promotes and broadcasts nothing implicitly, so every binary operation
//! goes through [`Tracer::promote_pair`], which picks the computation dtype, turns
//! Python literals into constants of that dtype, casts runtime operands, and splats or
//! broadcasts both to their common shape.

use super::tracer::{err, Tracer};
use super::value::{literal_dtype, Val};
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{fmt_shape, Const, DType, Elem, Op, Type, Value};

/// `[4, 8]`-style shape text for messages.
pub fn shape_text(s: &[u32]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Triton's `integer_promote_impl`.
pub fn integer_promote(a: DType, b: DType) -> DType {
    let (aw, bw) = (a.bits(), b.bits());
    let (asg, bsg) = (a.is_signed_int(), b.is_signed_int());
    if asg == bsg {
        return if aw >= bw { a } else { b };
    }
    // Different signedness: the unsigned one wins if it is at least as wide.
    let (u, s) = if asg { (b, a) } else { (a, b) };
    if u.bits() >= s.bits() {
        u
    } else {
        s
    }
}

/// Triton's `computation_type_impl`: the dtype a binary op computes in.
/// `a_lit` / `b_lit` say whether the operand is a Python number literal.
pub fn computation_type(
    a: DType,
    a_lit: bool,
    b: DType,
    b_lit: bool,
    div_or_mod: bool,
) -> std::result::Result<DType, String> {
    use DType::*;
    // 0) A literal of a lower or equal kind does not participate.
    if a_lit != b_lit {
        let (lit, tensor) = if a_lit { (a, b) } else { (b, a) };
        if lit.kind() <= tensor.kind() {
            if div_or_mod && matches!(tensor, F16 | BF16) {
                return Ok(F32);
            }
            return Ok(tensor);
        }
    }
    if a == F64 || b == F64 {
        return Ok(F64);
    }
    // `/` and `%` with an fp8 operand compute in f32 (Triton since its PR 10883).
    if div_or_mod && (a.is_fp8() || b.is_fp8()) {
        return Ok(F32);
    }
    if a == F32 || b == F32 {
        return Ok(F32);
    }
    if a == F16 || b == F16 {
        return Ok(if div_or_mod { F32 } else { F16 });
    }
    if a == BF16 && b == BF16 {
        return Ok(if div_or_mod { F32 } else { BF16 });
    }
    if a == BF16 || b == BF16 {
        return Ok(F32);
    }
    // fp8 with fp8: the same format stays (and only data movement is allowed on it);
    // two formats meet in f16, which holds both exactly.
    if a.is_fp8() && b.is_fp8() {
        return Ok(if a == b { a } else { F16 });
    }
    if a.is_fp8() || b.is_fp8() {
        return Err(format!(
            "unexpected types {} and {}: an fp8 value meets an integer only through a float (x.to(tl.float32))",
            a.triton_name(),
            b.triton_name()
        ));
    }
    if div_or_mod && a.is_signed_int() != b.is_signed_int() && !a.is_bool() && !b.is_bool() {
        return Err(format!(
            "Cannot use /, //, or % with {} and {} because they have different signedness; cast one of them first",
            a.triton_name(),
            b.triton_name()
        ));
    }
    Ok(integer_promote(a, b))
}

impl Tracer<'_> {
    pub fn ty(&self, v: Value) -> Type {
        self.b.ty(v).clone()
    }

    pub fn shape(&self, v: Value) -> Vec<u32> {
        self.b.ty(v).shape().to_vec()
    }

    pub fn konst(&mut self, c: Const, ty: Type, span: Span) -> Value {
        self.b.push1(Op::Const(c), ty, span)
    }

    /// The constant a Python number becomes in `dtype`.
    pub fn lit_const(&self, v: &Val, dtype: DType, span: Span) -> Result<Const> {
        let c = match (v, dtype) {
            (Val::Bool(b), DType::I1) => Const::Bool(*b),
            (Val::Int(i), DType::I1) => Const::Bool(*i != 0),
            (Val::Float(f), DType::I1) => Const::Bool(*f != 0.0),
            (Val::Bool(b), d) if d.is_float() => Const::Float(if *b { 1.0 } else { 0.0 }),
            (Val::Int(i), d) if d.is_float() => Const::Float(*i as f64),
            (Val::Float(f), d) if d.is_float() => Const::Float(*f),
            (Val::Bool(b), _) => Const::Int(*b as i64),
            (Val::Int(i), d) => {
                if *i < 0 && d.is_unsigned_int() {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "cannot use the negative constant {i} as an unsigned {}",
                            d.triton_name()
                        ),
                        span,
                    ));
                }
                Const::Int(*i)
            }
            (Val::Float(f), _) => Const::Int(if f.is_nan() { 0 } else { f.trunc() as i64 }),
            (other, _) => {
                return Err(err(
                    ErrorKind::Type,
                    format!("expected a number, got {}", self.describe(other)),
                    span,
                ))
            }
        };
        Ok(c)
    }

    pub fn describe(&self, v: &Val) -> String {
        match v {
            Val::T(x) => v.describe(Some(self.b.ty(*x))),
            other => other.describe(None),
        }
    }

    /// Turns a number literal or runtime value into an IR value.
    pub fn tensor_of(&mut self, v: &Val, span: Span) -> Result<Value> {
        match v {
            Val::T(x) => Ok(*x),
            Val::Bool(_) | Val::Int(_) | Val::Float(_) => {
                let dt = literal_dtype(v).unwrap_or(DType::I32);
                let c = self.lit_const(v, dt, span)?;
                Ok(self.konst(c, Type::scalar(dt), span))
            }
            other => Err(err(
                ErrorKind::Type,
                format!(
                    "expected a tensor or a number, got {}",
                    self.describe(other)
                ),
                span,
            )),
        }
    }

    /// A runtime data value (not a pointer or block pointer).
    /// A data tile for a computation (`what`): fp8 is rejected (see [`Self::no_fp8`]).
    pub fn data_tensor(&mut self, v: &Val, span: Span, what: &str) -> Result<(Value, DType)> {
        let (x, d) = self.data_tensor_any(v, span, what)?;
        self.no_fp8(x, what, span)?;
        Ok((x, d))
    }

    /// A data tile of any dtype, fp8 included.
    pub fn data_tensor_any(&mut self, v: &Val, span: Span, what: &str) -> Result<(Value, DType)> {
        let x = self.tensor_of(v, span)?;
        match self.b.ty(x).dtype() {
            Some(d) => Ok((x, d)),
            None => Err(err(
                ErrorKind::Type,
                format!("{what} needs numbers, not {}", self.describe(v)),
                span,
            )),
        }
    }

    /// A number literal as a constant of `dtype`, or a runtime value cast to `dtype`.
    pub fn materialize(&mut self, v: &Val, dtype: DType, span: Span) -> Result<Value> {
        if v.is_number() {
            let c = self.lit_const(v, dtype, span)?;
            return Ok(self.konst(c, Type::scalar(dtype), span));
        }
        let x = self.tensor_of(v, span)?;
        self.cast_checked(x, dtype, span)
    }

    /// Value conversion to `dtype` (no-op when equal).
    pub fn cast(&mut self, v: Value, dtype: DType, span: Span) -> Value {
        let ty = self.ty(v);
        if ty.dtype() == Some(dtype) {
            return v;
        }
        self.b.push1(
            Op::Cast {
                value: v,
                bitcast: false,
            },
            ty.with_dtype(dtype),
            span,
        )
    }

    /// A cast to `ty` between pointers, or between pointers and 64-bit addresses
    /// (pointers as data; the front end checked the element types).
    pub fn push_cast(&mut self, v: Value, ty: Type, span: Span) -> Value {
        self.b.push1(
            Op::Cast {
                value: v,
                bitcast: false,
            },
            ty,
            span,
        )
    }

    /// [`Self::cast`], rejecting pointers and block pointers.
    pub fn cast_checked(&mut self, v: Value, dtype: DType, span: Span) -> Result<Value> {
        let ty = self.ty(v);
        let Some(from) = ty.dtype() else {
            return Err(err(
                ErrorKind::Type,
                format!("cannot convert a value of type {ty} to {dtype}"),
                span,
            ));
        };
        // fp8 converts to and from f16, bf16 and f32 (and the other fp8), as in Triton.
        if from != dtype && (from.is_fp8() || dtype.is_fp8()) {
            let other = if from.is_fp8() { dtype } else { from };
            if !matches!(other, DType::F16 | DType::BF16 | DType::F32) && !other.is_fp8() {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "cannot convert {} to {}: fp8 converts only to and from float16, bfloat16 and float32 (go through one of them)",
                        from.triton_name(),
                        dtype.triton_name()
                    ),
                    span,
                ));
            }
        }
        Ok(self.cast(v, dtype, span))
    }

    /// Rejects fp8 operands of `what` (only storage, casts, `where`, `minimum` /
    /// `maximum`, comparisons and `dot` take them).
    pub fn no_fp8(&self, x: Value, what: &str, span: Span) -> Result<()> {
        match self.b.ty(x).dtype() {
            Some(d) if d.is_fp8() => Err(err(
                ErrorKind::Type,
                format!(
                    "{what} of {} values is not supported: fp8 is a storage and dot-operand type; convert first (x.to(tl.float32))",
                    d.triton_name()
                ),
                span,
            )),
            _ => Ok(()),
        }
    }

    pub fn bitcast(&mut self, v: Value, dtype: DType, span: Span) -> Result<Value> {
        let ty = self.ty(v);
        let Some(src) = ty.dtype() else {
            return Err(err(
                ErrorKind::Type,
                format!("cannot bitcast a value of type {ty}"),
                span,
            ));
        };
        if src == dtype {
            return Ok(v);
        }
        if src.bits() != dtype.bits() {
            return Err(err(
                ErrorKind::Type,
                format!(
                    "cannot bitcast {} to {}: they have different bit widths ({} and {})",
                    src.triton_name(),
                    dtype.triton_name(),
                    src.bits(),
                    dtype.bits()
                ),
                span,
            ));
        }
        Ok(self.b.push1(
            Op::Cast {
                value: v,
                bitcast: true,
            },
            ty.with_dtype(dtype),
            span,
        ))
    }

    /// The broadcast of two shapes (Triton's rule: the shorter gets leading 1s, then
    /// each dimension must agree or be 1).
    pub fn broadcast_shapes(&self, a: &[u32], b: &[u32], span: Span) -> Result<Vec<u32>> {
        if a.is_empty() {
            return Ok(b.to_vec());
        }
        if b.is_empty() {
            return Ok(a.to_vec());
        }
        let rank = a.len().max(b.len());
        let pad = |s: &[u32]| -> Vec<u32> {
            let mut v = vec![1; rank - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (pa, pb) = (pad(a), pad(b));
        let mut out = Vec::with_capacity(rank);
        for (i, (&x, &y)) in pa.iter().zip(&pb).enumerate() {
            if x == y || y == 1 {
                out.push(x);
            } else if x == 1 {
                out.push(y);
            } else {
                return Err(err(
                    ErrorKind::Shape,
                    format!(
                        "cannot broadcast shapes {} and {}: incompatible dimensions at index {i}: {x} and {y}",
                        shape_text(a),
                        shape_text(b)
                    ),
                    span,
                )
                .with_note("two dimensions broadcast when they are equal or one of them is 1; use x[:, None] / x[None, :] to add a dimension"));
            }
        }
        Ok(out)
    }

    /// Splats or broadcasts `v` to `shape`.
    pub fn broadcast_to(&mut self, v: Value, shape: &[u32], span: Span) -> Result<Value> {
        let ty = self.ty(v);
        let cur = ty.shape().to_vec();
        if cur == shape {
            return Ok(v);
        }
        if ty.is_block_ptr() {
            return Err(err(
                ErrorKind::Type,
                "a block pointer cannot be broadcast".to_string(),
                span,
            ));
        }
        if cur.is_empty() {
            return Ok(self
                .b
                .push1(Op::Splat(v), ty.with_shape(shape.to_vec()), span));
        }
        let target = self.broadcast_shapes(&cur, shape, span)?;
        if target != shape {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "cannot broadcast a tile of shape {} to shape {}",
                    shape_text(&cur),
                    shape_text(shape)
                ),
                span,
            ));
        }
        let mut x = v;
        let mut s = cur;
        while s.len() < shape.len() {
            s.insert(0, 1);
            x = self.b.push1(
                Op::ExpandDims { value: x, axis: 0 },
                ty.with_shape(s.clone()),
                span,
            );
        }
        if s != shape {
            x = self
                .b
                .push1(Op::Broadcast(x), ty.with_shape(shape.to_vec()), span);
        }
        Ok(x)
    }

    /// The element of an operand (literals by their literal dtype).
    pub fn elem_of(&self, v: &Val, span: Span) -> Result<Elem> {
        match v {
            Val::T(x) => match self.b.ty(*x).elem() {
                Some(e) => Ok(e),
                None => Err(err(
                    ErrorKind::Type,
                    "arithmetic is not defined on block pointers; use tl.advance".to_string(),
                    span,
                )),
            },
            other => match literal_dtype(other) {
                Some(d) => Ok(Elem::Data(d)),
                None => Err(err(
                    ErrorKind::Type,
                    format!(
                        "expected a tensor or a number, got {}",
                        self.describe(other)
                    ),
                    span,
                )),
            },
        }
    }

    /// Promotes two data operands to their computation dtype and common shape.
    pub fn promote_pair(
        &mut self,
        a: &Val,
        b: &Val,
        div_or_mod: bool,
        span: Span,
        op: &str,
    ) -> Result<(Value, Value, DType)> {
        let (ea, eb) = (self.elem_of(a, span)?, self.elem_of(b, span)?);
        let (Elem::Data(da), Elem::Data(db)) = (ea, eb) else {
            return Err(err(
                ErrorKind::Type,
                format!("operator `{op}` is not defined on pointers ({ea} and {eb})"),
                span,
            ));
        };
        let dt = computation_type(da, a.is_number(), db, b.is_number(), div_or_mod)
            .map_err(|m| err(ErrorKind::Type, m, span))?;
        let (x, y) = self.promote_to(a, b, dt, span)?;
        Ok((x, y, dt))
    }

    /// Materializes both operands in `dt` and broadcasts them to a common shape.
    pub fn promote_to(
        &mut self,
        a: &Val,
        b: &Val,
        dt: DType,
        span: Span,
    ) -> Result<(Value, Value)> {
        let x = self.materialize(a, dt, span)?;
        let y = self.materialize(b, dt, span)?;
        self.broadcast_pair(x, y, span)
    }

    pub fn broadcast_pair(&mut self, x: Value, y: Value, span: Span) -> Result<(Value, Value)> {
        let (sx, sy) = (self.shape(x), self.shape(y));
        let s = self.broadcast_shapes(&sx, &sy, span)?;
        let x = self.broadcast_to(x, &s, span)?;
        let y = self.broadcast_to(y, &s, span)?;
        Ok((x, y))
    }

    /// Converts a runtime condition to `i1` (`!= 0` for numbers).
    pub fn as_i1(&mut self, x: Value, span: Span) -> Result<Value> {
        let ty = self.ty(x);
        match ty.dtype() {
            Some(DType::I1) => Ok(x),
            Some(d) => {
                let zero = if d.is_float() {
                    Const::Float(0.0)
                } else {
                    Const::Int(0)
                };
                let z = self.konst(zero, Type::scalar(d), span);
                let z = self.broadcast_to(z, ty.shape(), span)?;
                Ok(self.b.push1(
                    Op::Cmp {
                        pred: crate::ir::CmpPred::Ne,
                        lhs: x,
                        rhs: z,
                    },
                    ty.with_dtype(DType::I1),
                    span,
                ))
            }
            None => Err(err(
                ErrorKind::Type,
                format!("a value of type {ty} cannot be used as a condition"),
                span,
            )),
        }
    }

    pub fn fmt_type(&self, v: Value) -> String {
        let t = self.b.ty(v);
        match t {
            Type::Tile { elem, shape } if !shape.is_empty() => {
                format!("{}[{}]", elem, fmt_shape(shape).replace('x', ", "))
            }
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promotion_table() {
        // literal of lower/equal kind does not participate
        assert_eq!(computation_type(F16, false, F32, true, false), Ok(F16));
        assert_eq!(computation_type(F16, false, I32, true, true), Ok(F32));
        assert_eq!(computation_type(I8, false, I32, true, false), Ok(I8));
        assert_eq!(computation_type(I32, false, F32, true, false), Ok(F32));
        assert_eq!(computation_type(F16, false, BF16, false, false), Ok(F16));
        assert_eq!(computation_type(BF16, false, BF16, false, false), Ok(BF16));
        assert_eq!(computation_type(BF16, false, BF16, false, true), Ok(F32));
        assert_eq!(computation_type(F16, false, F64, false, false), Ok(F64));
        assert_eq!(computation_type(I32, false, U32, false, false), Ok(U32));
        assert_eq!(computation_type(I64, false, U32, false, false), Ok(I64));
        assert_eq!(computation_type(I8, false, I16, false, false), Ok(I16));
        assert!(computation_type(I32, false, U32, false, true)
            .unwrap_err()
            .contains("different signedness"));
    }
}
