//! Memory builtins: `tl.load` / `tl.store` (pointer tiles with masks, or block
//! pointers with boundary checks), `tl.make_block_ptr` / `tl.advance`, and the
//! atomics (`tl.atomic_add`, ..., `tl.atomic_cas`).

use super::args::{axis_norm, bind, const_ints, shape_arg, Bound};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::expr::{Args, Kwargs};
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::{format_val, Val};
use crate::ir::{AtomicOp, CacheHints, DType, Elem, Op, Padding, Type, Value};

/// `tl.advance(base, offsets)`: a block pointer moved by `offsets`.
pub(super) fn advance(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let p = t.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
    let ty = t.ty(p);
    if !ty.is_block_ptr() {
        return Err(err(
            ErrorKind::Type,
            format!("tl.advance needs a block pointer (from tl.make_block_ptr), got {ty}"),
            b.span_of(0),
        ));
    }
    let deltas = t.scalar_list(&b.req(1)?.0.clone(), b.span_of(1), DType::I32, "offsets")?;
    if deltas.len() != ty.rank() {
        return Err(err(
            ErrorKind::Shape,
            format!(
                "tl.advance got {} offsets for a block pointer of rank {}",
                deltas.len(),
                ty.rank()
            ),
            b.span_of(1),
        ));
    }
    Ok(Val::T(t.b.push1(
        Op::Advance { ptr: p, deltas },
        ty,
        b.span,
    )))
}

/// `tl.atomic_add(pointer, val, mask=None, sem=None, scope=None)` and the other
/// read-modify-write atomics: `op` applied at each pointer, returning the old values.
pub(super) fn atomic_rmw(t: &mut Tracer<'_>, b: &Bound, op: AtomicOp) -> Result<Val> {
    let (f, span) = (b.fname.as_str(), b.span);
    let (p, pointee) = t.pointer_tile(&b.req(0)?.0.clone(), b.span_of(0), f)?;
    if pointee.is_fp8() {
        return Err(err(
            ErrorKind::Type,
            format!(
                "tl.{f} on {} memory is not supported (atomics need 16 bits or more, as in Triton)",
                pointee.triton_name()
            ),
            span,
        ));
    }
    let v = t.materialize(&b.req(1)?.0.clone(), pointee, b.span_of(1))?;
    let mut shape = t.shape(p);
    let vshape = t.shape(v);
    shape = t.broadcast_shapes(&shape, &vshape, span)?;
    let mask = match b.get(2) {
        Some((m, ms)) => {
            let m = t.tensor_of(m, *ms)?;
            let m = t.as_i1(m, *ms)?;
            let mshape = t.shape(m);
            shape = t.broadcast_shapes(&shape, &mshape, *ms)?;
            Some(m)
        }
        None => None,
    };
    let p = t.broadcast_to(p, &shape, span)?;
    let v = t.broadcast_to(v, &shape, span)?;
    let mask = match mask {
        Some(m) => Some(t.broadcast_to(m, &shape, span)?),
        None => None,
    };
    let ty = t.ty(p).with_dtype(pointee);
    Ok(Val::T(t.b.push1(
        Op::Atomic {
            op,
            ptr: p,
            value: v,
            mask,
        },
        ty,
        span,
    )))
}

/// `tl.atomic_cas(pointer, cmp, val, sem=None, scope=None)`.
pub(super) fn atomic_cas(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (f, span) = (b.fname.as_str(), b.span);
    let (p, pointee) = t.pointer_tile(&b.req(0)?.0.clone(), b.span_of(0), f)?;
    if pointee.is_fp8() {
        return Err(err(
            ErrorKind::Type,
            format!("tl.atomic_cas on {} memory is not supported (atomics need 16 bits or more, as in Triton)", pointee.triton_name()),
            span,
        ));
    }
    let c = t.materialize(&b.req(1)?.0.clone(), pointee, b.span_of(1))?;
    let v = t.materialize(&b.req(2)?.0.clone(), pointee, b.span_of(2))?;
    let mut shape = t.shape(p);
    for x in [c, v] {
        let s = t.shape(x);
        shape = t.broadcast_shapes(&shape, &s, span)?;
    }
    let p = t.broadcast_to(p, &shape, span)?;
    let c = t.broadcast_to(c, &shape, span)?;
    let v = t.broadcast_to(v, &shape, span)?;
    let ty = t.ty(p).with_dtype(pointee);
    Ok(Val::T(t.b.push1(
        Op::AtomicCas {
            ptr: p,
            cmp: c,
            value: v,
        },
        ty,
        span,
    )))
}

impl Tracer<'_> {
    /// A pointer tile operand of a memory op, and its pointee.
    fn pointer_tile(&mut self, v: &Val, s: Span, f: &str) -> Result<(Value, DType)> {
        let x = self.tensor_of(v, s)?;
        match self.ty(x).elem() {
            Some(Elem::Ptr(d)) => Ok((x, d)),
            _ => Err(err(
                ErrorKind::Type,
                format!("tl.{f} needs a pointer, got {}", self.describe(v)),
                s,
            )),
        }
    }

    fn hints(&self, b: &Bound, cache: usize, evict: usize, volatile: Option<usize>) -> CacheHints {
        let s = |i: usize| match b.get(i) {
            Some((Val::Str(x), _)) if !x.is_empty() => Some(x.clone()),
            _ => None,
        };
        CacheHints {
            cache_modifier: s(cache),
            eviction_policy: s(evict),
            volatile: volatile
                .and_then(|i| b.get(i))
                .is_some_and(|(v, _)| v.truthy().unwrap_or(false)),
        }
    }

    fn boundary_check(&self, b: &Bound, i: usize, rank: usize) -> Result<Vec<u32>> {
        match b.get(i) {
            None => Ok(vec![]),
            Some((v, s)) => {
                let mut dims: Vec<u32> = const_ints(v, *s, "boundary_check")?
                    .iter()
                    .map(|&d| axis_norm(d, rank, *s))
                    .collect::<Result<_>>()?;
                dims.sort();
                dims.dedup();
                Ok(dims)
            }
        }
    }

    pub fn load(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.load",
            args,
            kwargs,
            &[
                "pointer",
                "mask",
                "other",
                "boundary_check",
                "padding_option",
                "cache_modifier",
                "eviction_policy",
                "volatile",
            ],
            1,
            span,
        )?;
        let (pv, ps) = b.req(0)?.clone();
        let p = self.tensor_of(&pv, ps)?;
        let pty = self.ty(p);
        let hints = self.hints(&b, 5, 6, Some(7));
        let padding = match b.get(4) {
            None => Padding::None,
            Some((Val::Str(s), _)) if s.is_empty() => Padding::None,
            Some((Val::Str(s), _)) if s == "zero" => Padding::Zero,
            Some((Val::Str(s), _)) if s == "nan" => Padding::Nan,
            Some((v, s)) => {
                return Err(err(
                    ErrorKind::Argument,
                    format!(
                        "padding_option must be \"zero\" or \"nan\", got {}",
                        format_val(v, &|_| String::new())
                    ),
                    *s,
                )
                .with_note(
                    "to pad with another value, load with a mask and `other=`, or use tl.where",
                ));
            }
        };
        if let Type::BlockPtr {
            pointee,
            block_shape,
        } = &pty
        {
            if b.get(1).is_some() || b.get(2).is_some() {
                return Err(err(ErrorKind::Argument, "`mask` and `other` cannot be used with a block pointer; use boundary_check and padding_option", span));
            }
            let bc = self.boundary_check(&b, 3, block_shape.len())?;
            let ty = Type::tile(*pointee, block_shape.clone());
            return Ok(Val::T(self.b.push1(
                Op::Load {
                    ptr: p,
                    mask: None,
                    other: None,
                    boundary_check: bc,
                    padding,
                    hints,
                    stage: None,
                    tensor_box: None,
                },
                ty,
                span,
            )));
        }
        let Some(Elem::Ptr(pointee)) = pty.elem() else {
            return Err(err(
                ErrorKind::Type,
                format!("tl.load needs a pointer, got {}", self.describe(&pv)),
                ps,
            ));
        };
        if b.get(3).is_some() {
            return Err(err(ErrorKind::Argument, "boundary_check only applies to block pointers (tl.make_block_ptr); use `mask=` with a pointer tile", b.span_of(3)));
        }
        let mut p = p;
        let mask = match b.get(1) {
            Some((m, ms)) => {
                let m = self.tensor_of(m, *ms)?;
                let m = self.as_i1(m, *ms)?;
                let (pp, mm) = self.broadcast_pair(p, m, span)?;
                p = pp;
                Some(mm)
            }
            None => None,
        };
        let other = match b.get(2) {
            Some((o, os)) => {
                if mask.is_none() {
                    return Err(err(
                        ErrorKind::Argument,
                        "`other` cannot be given without `mask`",
                        *os,
                    ));
                }
                let o = self.materialize(o, pointee, *os)?;
                let shape = self.shape(p);
                Some(self.broadcast_to(o, &shape, *os)?)
            }
            None => None,
        };
        let ty = self.ty(p).with_dtype(pointee);
        Ok(Val::T(self.b.push1(
            Op::Load {
                ptr: p,
                mask,
                other,
                boundary_check: vec![],
                padding: Padding::None,
                hints,
                stage: None,
                tensor_box: None,
            },
            ty,
            span,
        )))
    }

    pub fn store(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.store",
            args,
            kwargs,
            &[
                "pointer",
                "value",
                "mask",
                "boundary_check",
                "cache_modifier",
                "eviction_policy",
            ],
            2,
            span,
        )?;
        let (pv, ps) = b.req(0)?.clone();
        let (vv, vs) = b.req(1)?.clone();
        let p = self.tensor_of(&pv, ps)?;
        let pty = self.ty(p);
        let hints = self.hints(&b, 4, 5, None);
        if let Type::BlockPtr {
            pointee,
            block_shape,
        } = &pty
        {
            if b.get(2).is_some() {
                return Err(err(
                    ErrorKind::Argument,
                    "`mask` cannot be used with a block pointer; use boundary_check",
                    b.span_of(2),
                ));
            }
            let bc = self.boundary_check(&b, 3, block_shape.len())?;
            let v = self.materialize(&vv, *pointee, vs)?;
            let v = self.broadcast_to(v, block_shape, vs)?;
            self.b.push0(
                Op::Store {
                    ptr: p,
                    value: v,
                    mask: None,
                    boundary_check: bc,
                    hints,
                },
                span,
            );
            return Ok(Val::None);
        }
        let Some(Elem::Ptr(pointee)) = pty.elem() else {
            return Err(err(
                ErrorKind::Type,
                format!("tl.store needs a pointer, got {}", self.describe(&pv)),
                ps,
            ));
        };
        if b.get(3).is_some() {
            return Err(err(ErrorKind::Argument, "boundary_check only applies to block pointers (tl.make_block_ptr); use `mask=` with a pointer tile", b.span_of(3)));
        }
        let v = self.materialize(&vv, pointee, vs)?;
        let mut shape = self.shape(p);
        let vshape = self.shape(v);
        shape = self.broadcast_shapes(&shape, &vshape, span)?;
        let mask = match b.get(2) {
            Some((m, ms)) => {
                let m = self.tensor_of(m, *ms)?;
                let m = self.as_i1(m, *ms)?;
                let mshape = self.shape(m);
                shape = self.broadcast_shapes(&shape, &mshape, span)?;
                Some(m)
            }
            None => None,
        };
        let p = self.broadcast_to(p, &shape, span)?;
        let v = self.broadcast_to(v, &shape, vs)?;
        let mask = match mask {
            Some(m) => Some(self.broadcast_to(m, &shape, span)?),
            None => None,
        };
        self.b.push0(
            Op::Store {
                ptr: p,
                value: v,
                mask,
                boundary_check: vec![],
                hints,
            },
            span,
        );
        Ok(Val::None)
    }

    /// A tuple of scalars, each converted to `dt`.
    fn scalar_list(&mut self, v: &Val, s: Span, dt: DType, what: &str) -> Result<Vec<Value>> {
        let items = match v {
            Val::Tuple(items, _) => items.clone(),
            other => vec![other.clone()],
        };
        let mut out = vec![];
        for i in &items {
            let x = self.materialize(i, dt, s)?;
            if !self.ty(x).is_scalar() {
                return Err(err(
                    ErrorKind::Shape,
                    format!("each of {what} must be a scalar, got {}", self.describe(i)),
                    s,
                ));
            }
            out.push(x);
        }
        Ok(out)
    }

    pub fn make_block_ptr(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.make_block_ptr",
            args,
            kwargs,
            &[
                "base",
                "shape",
                "strides",
                "offsets",
                "block_shape",
                "order",
            ],
            6,
            span,
        )?;
        let (base_v, bs) = b.req(0)?.clone();
        let base = self.tensor_of(&base_v, bs)?;
        let bty = self.ty(base);
        let pointee = match bty.elem() {
            Some(Elem::Ptr(d)) if bty.is_scalar() => d,
            _ => {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "tl.make_block_ptr's base must be a scalar pointer, got {}",
                        self.describe(&base_v)
                    ),
                    bs,
                ))
            }
        };
        let shape = self.scalar_list(&b.req(1)?.0.clone(), b.span_of(1), DType::I64, "shape")?;
        let strides =
            self.scalar_list(&b.req(2)?.0.clone(), b.span_of(2), DType::I64, "strides")?;
        let offsets =
            self.scalar_list(&b.req(3)?.0.clone(), b.span_of(3), DType::I32, "offsets")?;
        let block_shape = shape_arg(&b.req(4)?.0, b.span_of(4))?;
        let order = const_ints(&b.req(5)?.0, b.span_of(5), "order")?;
        let rank = block_shape.len();
        for (n, len, i) in [
            ("shape", shape.len(), 1),
            ("strides", strides.len(), 2),
            ("offsets", offsets.len(), 3),
            ("order", order.len(), 5),
        ] {
            if len != rank {
                return Err(err(
                    ErrorKind::Shape,
                    format!(
                        "tl.make_block_ptr: `{n}` has {len} entries but block_shape has {rank}"
                    ),
                    b.span_of(i),
                ));
            }
        }
        let order: Vec<u32> = order
            .iter()
            .map(|&o| axis_norm(o, rank, b.span_of(5)))
            .collect::<Result<_>>()?;
        let mut sorted = order.clone();
        sorted.sort();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "tl.make_block_ptr: order {order:?} is not a permutation of the dimensions"
                ),
                b.span_of(5),
            ));
        }
        let ty = Type::BlockPtr {
            pointee,
            block_shape,
        };
        Ok(Val::T(self.b.push1(
            Op::MakeBlockPtr {
                base,
                shape,
                strides,
                offsets,
                order,
            },
            ty,
            span,
        )))
    }
}
