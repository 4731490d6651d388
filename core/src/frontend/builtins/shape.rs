//! Shape builtins: `tl.expand_dims`, `tl.broadcast_to` / `tl.broadcast`,
//! `tl.reshape` / `tl.view`, `tl.trans` / `tl.permute`. (`tl.join`, `tl.split`,
//! `tl.interleave` and `tl.cat` are in `join.rs`.)

use super::args::{axis_norm, bind, check_shape, const_ints, shape_arg, Bound};
use super::Call;
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::expr::{Args, Kwargs};
use crate::frontend::semantic::shape_text;
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::Val;
use crate::ir::{Op, Value};

/// `tl.expand_dims(input, axis)`; `axis` may be a tuple.
pub(super) fn expand_dims(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let mut x = t.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
    let mut axes = const_ints(&b.req(1)?.0, b.span_of(1), "the axis")?;
    let new_rank = t.shape(x).len() + axes.len();
    for a in axes.iter_mut() {
        *a = axis_norm(*a, new_rank, b.span_of(1))? as i64;
    }
    axes.sort();
    for a in axes {
        let mut s = t.shape(x);
        s.insert(a as usize, 1);
        let ty = t.ty(x).with_shape(s);
        x = t.b.push1(
            Op::ExpandDims {
                value: x,
                axis: a as u32,
            },
            ty,
            b.span,
        );
    }
    Ok(Val::T(x))
}

/// `tl.broadcast_to(input, shape)`; the shape may also be given as varargs.
pub(super) fn broadcast_to(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let (x, shape) = t.value_and_shape(
        c.short_name(),
        c.args,
        c.kwargs,
        &["input", "shape"],
        c.span,
    )?;
    Ok(Val::T(t.broadcast_to(x, &shape, c.span)?))
}

/// `tl.broadcast(input, other)`: both broadcast to their common shape.
pub(super) fn broadcast(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let x = t.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
    let y = t.tensor_of(&b.req(1)?.0.clone(), b.span_of(1))?;
    let (x, y) = t.broadcast_pair(x, y, b.span)?;
    Ok(Val::Tuple(vec![Val::T(x), Val::T(y)], false))
}

/// `tl.reshape(input, shape, can_reorder=False)` and `tl.view`; the shape may also be
/// given as varargs.
pub(super) fn reshape(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let span = c.span;
    let (x, shape) = t.value_and_shape(
        c.short_name(),
        c.args,
        c.kwargs,
        &["input", "shape", "can_reorder"],
        span,
    )?;
    let ty = t.ty(x);
    let n: u64 = shape.iter().map(|&d| d as u64).product();
    if n != ty.numel() as u64 {
        return Err(err(
            ErrorKind::Shape,
            format!(
                "cannot reshape a tile of shape {} ({} elements) to {} ({n} elements)",
                shape_text(ty.shape()),
                ty.numel(),
                shape_text(&shape)
            ),
            span,
        ));
    }
    if ty.shape() == shape.as_slice() {
        return Ok(Val::T(x));
    }
    Ok(Val::T(t.b.push1(
        Op::Reshape(x),
        ty.with_shape(shape),
        span,
    )))
}

/// `tl.trans(input, *dims)` and `tl.permute(input, *dims)`: the dimension order as a
/// tuple, as varargs, or as `dims=`; none reverses the two axes of a rank-2 tile.
pub(super) fn permute(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let (f, args, kwargs, span) = (c.short_name(), c.args, c.kwargs, c.span);
    let Some((first, fs)) = args.first().cloned() else {
        let b = bind(f, args, kwargs, &["input", "dims"], 1, span)?;
        let (v, s) = b.req(0)?.clone();
        let dims = match b.get(1) {
            Some((d, ds)) => Some(const_ints(d, *ds, "dims")?),
            None => None,
        };
        return t.permute(&v, s, dims, f, span);
    };
    let mut dims: Vec<i64> = vec![];
    for (v, s) in args.iter().skip(1) {
        dims.extend(const_ints(v, *s, "dims")?);
    }
    for (k, v, s) in &kwargs {
        if k == "dims" {
            dims.extend(const_ints(v, *s, "dims")?);
        } else {
            return Err(err(
                ErrorKind::Argument,
                format!("{f}() got an unexpected keyword argument `{k}`"),
                *s,
            ));
        }
    }
    t.permute(
        &first,
        fs,
        if dims.is_empty() { None } else { Some(dims) },
        f,
        span,
    )
}

impl Tracer<'_> {
    fn value_and_shape(
        &mut self,
        f: &str,
        args: Args,
        kwargs: Kwargs,
        names: &[&str],
        span: Span,
    ) -> Result<(Value, Vec<u32>)> {
        // Shape as a tuple or as varargs: reshape(x, (2, 8)) or reshape(x, 2, 8).
        if args.len() > 2 || (args.len() == 2 && matches!(args[1].0, Val::Int(_))) {
            let (v, s) = args[0].clone();
            let x = self.tensor_of(&v, s)?;
            let mut dims = vec![];
            for (d, ds) in args.iter().skip(1) {
                dims.extend(shape_arg(d, *ds)?);
            }
            check_shape(&dims, span)?;
            return Ok((x, dims));
        }
        let b = bind(f, args, kwargs, names, 2, span)?;
        let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
        let shape = shape_arg(&b.req(1)?.0, b.span_of(1))?;
        Ok((x, shape))
    }

    fn permute(
        &mut self,
        v: &Val,
        s: Span,
        dims: Option<Vec<i64>>,
        f: &str,
        span: Span,
    ) -> Result<Val> {
        let x = self.tensor_of(v, s)?;
        let shape = self.shape(x);
        let rank = shape.len();
        let perm: Vec<u32> = match dims {
            None if rank == 2 => vec![1, 0],
            None if rank < 2 => return Ok(Val::T(x)),
            None => {
                return Err(err(
                    ErrorKind::Argument,
                    format!("tl.{f} of a rank-{rank} tile needs the dimension order"),
                    span,
                ))
            }
            Some(d) => d
                .iter()
                .map(|&a| axis_norm(a, rank, span))
                .collect::<Result<_>>()?,
        };
        let mut sorted = perm.clone();
        sorted.sort();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            return Err(err(
                ErrorKind::Argument,
                format!("tl.{f} dims {perm:?} are not a permutation of 0..{rank}"),
                span,
            ));
        }
        let new_shape: Vec<u32> = perm.iter().map(|&p| shape[p as usize]).collect();
        let ty = self.ty(x).with_shape(new_shape);
        Ok(Val::T(self.b.push1(
            Op::Permute { value: x, perm },
            ty,
            span,
        )))
    }
}
