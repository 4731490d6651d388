//! Pass: fold round-trip integer casts and remove dead code.
//!
//! `cast(cast(x: i32 -> i64) -> i32)` is `x`, and an integer constant cast to another
//! integer type is a constant of that type: the front end widens block-pointer shapes
//! and strides to i64 (Triton's types), and the block-pointer pass narrows them back
//! when the target indexes with i32. Once folded, the widening casts are dead, and dead
//! code elimination removes every instruction without side effects whose results are
//! unused (loads are kept only when used; stores, atomics, prints, asserts and control
//! flow that contains them stay). Without this, WGSL would see i64 values it cannot
//! express.

use super::rewrite::{rewrite, Hook};
use crate::diag::Result;
use crate::ir::ops::{Const, Op};
use crate::ir::{Block, Inst, Kernel, Type, Value};
use std::collections::{HashMap, HashSet};

/// Folds round-trip casts, then removes dead code.
pub fn simplify(kernel: &Kernel) -> Result<Kernel> {
    let folded = fold_casts(kernel)?;
    eliminate_dead_code(&folded)
}

fn fold_casts(kernel: &Kernel) -> Result<Kernel> {
    let mut def: HashMap<Value, Op> = HashMap::new();
    kernel.walk(&mut |inst| {
        if let (Op::Cast { .. } | Op::Const(_), [r]) = (&inst.op, inst.results.as_slice()) {
            def.insert(*r, inst.op.clone());
        }
    });
    let expand = |t: &Type| vec![t.clone()];
    rewrite(kernel, &expand, &mut |ctx, inst| {
        if let Op::Cast {
            value,
            bitcast: false,
        } = &inst.op
        {
            // An integer constant converted to another integer type: a constant.
            if let Some(Op::Const(Const::Int(c))) = def.get(value) {
                let to = ctx.old.ty(inst.results[0]).clone();
                if let Some(d) = to.dtype().filter(|d| d.is_int() && !d.is_bool()) {
                    let bits = d.bits();
                    let wrapped = if bits == 64 {
                        *c
                    } else if d.is_signed_int() {
                        (*c << (64 - bits)) >> (64 - bits)
                    } else {
                        *c & ((1i64 << bits) - 1)
                    };
                    let v = ctx.b.push1(Op::Const(Const::Int(wrapped)), to, inst.span);
                    ctx.set(inst.results[0], vec![v]);
                    return Ok(Hook::Done);
                }
            }
            if let Some(Op::Cast {
                value: inner,
                bitcast: false,
            }) = def.get(value)
            {
                let (src, mid, dst) = (
                    ctx.old.ty(*inner),
                    ctx.old.ty(*value),
                    ctx.old.ty(inst.results[0]),
                );
                let widening_int = |a: &Type, b: &Type| match (a.dtype(), b.dtype()) {
                    (Some(x), Some(y)) => {
                        x.is_int()
                            && y.is_int()
                            && !x.is_bool()
                            && y.bits() >= x.bits()
                            && (y.bits() > x.bits() || x == y)
                    }
                    _ => false,
                };
                if src == dst && widening_int(src, mid) {
                    let v = ctx.one(*inner)?;
                    ctx.set(inst.results[0], vec![v]);
                    return Ok(Hook::Done);
                }
            }
        }
        Ok(Hook::Copy)
    })
}

/// Whether an op has effects beyond its results (never removed).
fn has_effects(op: &Op) -> bool {
    op.effect() == crate::ir::ops::Effect::Writes
}

fn block_has_effects(b: &Block) -> bool {
    b.insts
        .iter()
        .any(|i| has_effects(&i.op) || i.op.blocks().into_iter().any(block_has_effects))
}

fn eliminate_dead_code(kernel: &Kernel) -> Result<Kernel> {
    let mut k = kernel.clone();
    loop {
        let mut used: HashSet<Value> = HashSet::new();
        k.walk(&mut |inst| used.extend(inst.op.operands()));
        let mut removed = false;
        fn prune(b: &mut Block, used: &HashSet<Value>, removed: &mut bool) {
            b.insts.retain(|inst: &Inst| {
                let dead = !inst.results.is_empty()
                    && inst.results.iter().all(|r| !used.contains(r))
                    && !has_effects(&inst.op)
                    && !inst.op.blocks().into_iter().any(block_has_effects)
                    && !inst.op.is_terminator();
                if dead {
                    *removed = true;
                }
                !dead
            });
            for inst in &mut b.insts {
                for nested in inst.op.blocks_mut() {
                    prune(nested, used, removed);
                }
            }
        }
        prune(&mut k.body, &used, &mut removed);
        if !removed {
            return Ok(k);
        }
    }
}
