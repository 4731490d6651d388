//! Argument helpers shared by the builtins: binding a call's arguments to Triton's
//! parameter names ([`bind`] into a [`Bound`]), and reading compile-time arguments
//! (ints, dtypes, tile shapes, axes).

use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::expr::{Args, Kwargs};
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::Val;
use crate::ir::DType;

/// Arguments bound to parameter names.
pub struct Bound {
    pub fname: String,
    pub vals: Vec<Option<(Val, Span)>>,
    pub span: Span,
}

impl Bound {
    pub fn get(&self, i: usize) -> Option<&(Val, Span)> {
        self.vals
            .get(i)
            .and_then(|v| v.as_ref())
            .filter(|(v, _)| !matches!(v, Val::None))
    }
    pub fn req(&self, i: usize) -> Result<&(Val, Span)> {
        self.vals.get(i).and_then(|v| v.as_ref()).ok_or_else(|| {
            err(
                ErrorKind::Argument,
                format!("{}() is missing an argument", self.fname),
                self.span,
            )
        })
    }
    pub fn span_of(&self, i: usize) -> Span {
        self.get(i).map(|(_, s)| *s).unwrap_or(self.span)
    }
}

/// Binds `args` / `kwargs` to `names`; the first `required` are mandatory.
pub fn bind(
    fname: &str,
    args: Args,
    kwargs: Kwargs,
    names: &[&str],
    required: usize,
    span: Span,
) -> Result<Bound> {
    if args.len() > names.len() {
        return Err(err(
            ErrorKind::Argument,
            format!(
                "{fname}() takes at most {} arguments, but {} were given",
                names.len(),
                args.len()
            ),
            span,
        ));
    }
    let mut vals: Vec<Option<(Val, Span)>> = vec![None; names.len()];
    for (i, a) in args.into_iter().enumerate() {
        vals[i] = Some(a);
    }
    for (k, v, s) in kwargs {
        let Some(i) = names.iter().position(|n| *n == k) else {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() got an unexpected keyword argument `{k}`"),
                s,
            ));
        };
        if vals[i].is_some() {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() got multiple values for argument `{k}`"),
                s,
            ));
        }
        vals[i] = Some((v, s));
    }
    for (i, n) in names.iter().enumerate().take(required) {
        if vals[i].is_none() {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() missing required argument `{n}`"),
                span,
            ));
        }
    }
    Ok(Bound {
        fname: fname.to_string(),
        vals,
        span,
    })
}

pub fn const_int(v: &Val, span: Span, what: &str) -> Result<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Bool(b) => Ok(*b as i64),
        other => Err(err(
            ErrorKind::Static,
            format!(
                "{what} must be a compile-time constant int (tl.constexpr), got {}",
                other.describe(None)
            ),
            span,
        )),
    }
}

pub fn const_ints(v: &Val, span: Span, what: &str) -> Result<Vec<i64>> {
    match v {
        Val::Tuple(items, _) => items.iter().map(|i| const_int(i, span, what)).collect(),
        other => Ok(vec![const_int(other, span, what)?]),
    }
}

pub fn const_dtype(v: &Val, span: Span) -> Result<DType> {
    match v {
        Val::DType(d) => Ok(*d),
        Val::OtherDType(n) => Err(err(
            ErrorKind::Unsupported,
            format!("tl.{n} is not supported by tilewise (it is an AMD or pre-Hopper Triton format); use tl.float8e4nv or tl.float8e5"),
            span,
        )),
        Val::Str(s) => DType::from_name(s)
            .ok_or_else(|| err(ErrorKind::Type, format!("unknown dtype {s:?}"), span)),
        other => Err(err(
            ErrorKind::Type,
            format!(
                "expected a dtype such as tl.float32, got {}",
                other.describe(None)
            ),
            span,
        )),
    }
}

pub fn shape_arg(v: &Val, span: Span) -> Result<Vec<u32>> {
    let dims = const_ints(v, span, "a shape")?;
    let dims = dims
        .iter()
        .map(|&d| {
            u32::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                err(
                    ErrorKind::Shape,
                    format!("shape dimensions must be positive, got {d}"),
                    span,
                )
            })
        })
        .collect::<Result<Vec<u32>>>()?;
    check_shape(&dims, span)?;
    Ok(dims)
}

/// Triton's limit on the elements of one tile (`TRITON_MAX_TENSOR_NUMEL`).
pub const MAX_TILE_ELEMS: u64 = 1 << 20;

/// A tile shape given by the user (`tl.zeros`, `tl.full`, `tl.reshape`,
/// `tl.broadcast_to`, a block pointer's `block_shape`) has power-of-two dimensions and
/// at most [`MAX_TILE_ELEMS`] elements, as in Triton: the lowering's layouts assume
/// the first, and the second keeps a typo from allocating gigabytes in the interpreter.
pub fn check_shape(dims: &[u32], span: Span) -> Result<()> {
    if let Some(d) = dims.iter().find(|d| !d.is_power_of_two()) {
        return Err(err(
            ErrorKind::Shape,
            format!("tile dimensions must be powers of 2, got {d} in shape {dims:?}"),
            span,
        )
        .with_note("pad the dimension to the next power of two (triton.next_power_of_2) and mask the extra lanes"));
    }
    let n = dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    if n > MAX_TILE_ELEMS {
        return Err(err(
            ErrorKind::Shape,
            format!("a tile of shape {dims:?} has {n} elements, more than the limit of {MAX_TILE_ELEMS}"),
            span,
        ));
    }
    Ok(())
}

/// `axis` (negative counts from the end) as an index into a tile of rank `rank`.
pub fn axis_norm(axis: i64, rank: usize, span: Span) -> Result<u32> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r.max(1) && !(r == 0 && a == 0) || (r > 0 && a >= r) {
        return Err(err(
            ErrorKind::Shape,
            format!("axis {axis} is out of range for a tile of rank {rank}"),
            span,
        ));
    }
    Ok(a as u32)
}

impl Tracer<'_> {
    pub fn axis(&self, axis: i64, rank: usize, span: Span) -> Result<u32> {
        axis_norm(axis, rank, span)
    }
}
