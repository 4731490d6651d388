//! Pass: `acc + dot(a, b, 0)` becomes `dot(a, b, acc)`.
//!
//! Triton code often accumulates a product with `acc += tl.dot(a, b)` rather than
//! `acc = tl.dot(a, b, acc)`. Traced as written, the dot starts from a zero tile and an
//! element-wise add follows it: the product needs registers of its own beside the
//! accumulator's, and on the tensor-core forms the add must wait for the product
//! (`wgmma` cannot keep a group in flight into the next K step, `mma.sync` and
//! cooperative matrices add a pass over the fragment). Folded, the dot accumulates
//! into `acc` itself, as `tl.dot(a, b, acc)` would.
//!
//! The rewrite applies where the dot's accumulator is a constant zero (a `const` tile
//! or the splat of a zero scalar), the dot's result is used by the add alone, and both
//! are in the same block; the fused dot takes the add's place (the dot is pure, and
//! its operands are defined before it). Either operand order of the add is taken.
//!
//! Integer dots (wrapping) give the same result. Float dots sum their products in an
//! order that is the executor's (`interp/dot.rs` sums along K from the accumulator; a
//! tensor core sums in its own order and precision), and the fold adds `acc` into
//! that sum rather than after it: the result can differ in rounding, as it does in
//! Triton, which makes the same rewrite (`CombineDotAddFPattern`). The interpreter,
//! the reference, runs the kernel as traced.

use super::rewrite::{rewrite, Hook};
use crate::diag::Result;
use crate::ir::ops::{BinaryOp, Const, Op};
use crate::ir::{Block, Kernel, Value};
use std::collections::{HashMap, HashSet};

/// Folds each `add` of a zero-accumulator `dot` used by it alone into the dot.
/// Returns the kernel unchanged (a copy) where there is nothing to fold.
pub fn fold_dot_adds(kernel: &Kernel) -> Result<Kernel> {
    let folds = find_folds(kernel);
    if folds.is_empty() {
        return Ok(kernel.clone());
    }
    let dots: HashSet<Value> = folds.values().map(|f| f.dot).collect();
    let expand = |t: &crate::ir::Type| vec![t.clone()];
    rewrite(kernel, &expand, &mut |ctx, inst| {
        if let [r] = inst.results.as_slice() {
            // The dot moves to its add.
            if dots.contains(r) {
                return Ok(Hook::Done);
            }
            if let Some(f) = folds.get(r) {
                let op = Op::Dot {
                    a: ctx.one(f.a)?,
                    b: ctx.one(f.b)?,
                    acc: ctx.one(f.acc)?,
                    precision: f.precision,
                };
                let ty = ctx.old.ty(*r).clone();
                let v = ctx.b.push1(op, ty, f.span);
                ctx.set(*r, vec![v]);
                return Ok(Hook::Done);
            }
        }
        Ok(Hook::Copy)
    })
}

/// The dot an `add` (keyed by its result) takes in.
struct Fold {
    /// The folded dot's result (no longer computed on its own).
    dot: Value,
    a: Value,
    b: Value,
    /// The add's other operand, the fused dot's accumulator.
    acc: Value,
    precision: crate::ir::ops::Precision,
    /// The dot's location (the fused dot is the user's `tl.dot`).
    span: crate::diag::Span,
}

fn find_folds(kernel: &Kernel) -> HashMap<Value, Fold> {
    let mut uses: HashMap<Value, u32> = HashMap::new();
    let mut zero_scalars: HashSet<Value> = HashSet::new();
    let mut zeros: HashSet<Value> = HashSet::new();
    kernel.walk(&mut |inst| {
        for v in inst.op.operands() {
            *uses.entry(v).or_default() += 1;
        }
        let [r] = inst.results.as_slice() else {
            return;
        };
        match &inst.op {
            Op::Const(Const::Int(0)) => {
                zeros.insert(*r);
                zero_scalars.insert(*r);
            }
            Op::Const(Const::Float(x)) if *x == 0.0 => {
                zeros.insert(*r);
                zero_scalars.insert(*r);
            }
            Op::Splat(x) if zero_scalars.contains(x) => {
                zeros.insert(*r);
            }
            _ => {}
        }
    });
    let mut folds = HashMap::new();
    in_block(&kernel.body, &uses, &zeros, &mut folds);
    folds
}

/// Finds the folds of `block` (a dot and its add in this block), then of the blocks
/// nested in it.
fn in_block(
    block: &Block,
    uses: &HashMap<Value, u32>,
    zeros: &HashSet<Value>,
    folds: &mut HashMap<Value, Fold>,
) {
    // The zero-accumulator dots of this block used once, by their result.
    let mut dots: HashMap<Value, &crate::ir::Inst> = HashMap::new();
    for inst in &block.insts {
        match (&inst.op, inst.results.as_slice()) {
            (Op::Dot { acc, .. }, [r]) if zeros.contains(acc) && uses.get(r) == Some(&1) => {
                dots.insert(*r, inst);
            }
            (
                Op::Binary {
                    op: BinaryOp::Add,
                    lhs,
                    rhs,
                },
                [r],
            ) => {
                // `acc + dot`, else `dot + acc` (not a dot added to itself).
                let pick = [(*rhs, *lhs), (*lhs, *rhs)]
                    .into_iter()
                    .find(|(d, other)| d != other && dots.contains_key(d));
                if let Some((d, other)) = pick {
                    let dot = dots.remove(&d).expect("found above");
                    if let Op::Dot {
                        a, b, precision, ..
                    } = &dot.op
                    {
                        folds.insert(
                            *r,
                            Fold {
                                dot: d,
                                a: *a,
                                b: *b,
                                acc: other,
                                precision: *precision,
                                span: dot.span,
                            },
                        );
                    }
                }
            }
            _ => {}
        }
        for nested in inst.op.blocks() {
            in_block(nested, uses, zeros, folds);
        }
    }
}
