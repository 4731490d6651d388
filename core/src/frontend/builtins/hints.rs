//! Compiler-hint builtins: `tl.multiple_of`, `tl.max_contiguous`, `tl.max_constancy`,
//! `tl.assume` and `tl.debug_barrier`.

use super::args::{const_ints, Bound};
use crate::diag::{ErrorKind, Result};
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::Val;
use crate::ir::{Elem, HintKind, Op};

/// `tl.multiple_of(input, values)`, `tl.max_contiguous` and `tl.max_constancy`: a hint
/// op carrying `kind` of the positive `values`, on an integer or pointer tile.
pub(super) fn value_hint(
    t: &mut Tracer<'_>,
    b: &Bound,
    kind: fn(Vec<u32>) -> HintKind,
) -> Result<Val> {
    let x = t.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
    let vals = const_ints(&b.req(1)?.0, b.span_of(1), "the hint value")?;
    let vals: Vec<u32> = vals
        .iter()
        .map(|&v| {
            u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| {
                err(
                    ErrorKind::Argument,
                    format!("hint values must be positive, got {v}"),
                    b.span_of(1),
                )
            })
        })
        .collect::<Result<_>>()?;
    let ty = t.ty(x);
    // Integer tiles, or pointer tiles (Triton's `multiple_of` on pointers
    // counts bytes).
    let pointers = matches!(ty.elem(), Some(Elem::Ptr(_))) && !ty.is_block_ptr();
    if !pointers && ty.dtype().is_none_or(|d| !d.is_int()) {
        return Err(err(
            ErrorKind::Type,
            format!("tl.{} needs an integer or pointer tile, got {ty}", b.fname),
            b.span_of(0),
        ));
    }
    let hint = kind(vals);
    Ok(Val::T(t.b.push1(Op::Hint { value: x, hint }, ty, b.span)))
}

/// `tl.assume(cond)`: a promise for the optimizer. tilewise derives nothing from it
/// (so it cannot change a result); a constant false one is an error.
pub(super) fn assume(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (c, cs) = b.req(0)?.clone();
    match c.truthy() {
        Some(false) => Err(err(
            ErrorKind::Static,
            "tl.assume of a condition that is false",
            cs,
        )),
        _ => {
            if let Val::T(x) = &c {
                t.as_i1(*x, cs)?;
            }
            Ok(Val::None)
        }
    }
}

/// `tl.debug_barrier()`: a barrier among the program's threads.
pub(super) fn debug_barrier(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    t.b.push0(Op::Barrier, b.span);
    Ok(Val::None)
}
