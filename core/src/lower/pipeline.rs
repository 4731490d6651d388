//! Software pipelining of the loads that feed a `dot` (`num_stages >= 2`, the default).
//!
//! In a `for` loop whose body loads the operands of a `dot`, the loads of iteration
//! `i + 1` are issued in iteration `i`, before the `dot`, so that their global-memory
//! latency overlaps the tensor-core work instead of stalling every K step:
//!
//! ```text
//! for iv, carried:                      a0 = load(ptr(lower, init), mask & lower < upper)
//!     a = load(ptr(iv, carried))   =>   for iv, carried, a:
//!     acc = dot(a, ..)                      acc = dot(a, ..)
//!     yield carried'                        a' = load(ptr(iv + step, carried'), mask & iv + step < upper)
//!                                           yield carried', a'
//! ```
//!
//! The address, mask and `other` of each pipelined load are recomputed for the next
//! iteration by cloning the pure instructions they depend on (the slice) with the
//! induction variable advanced and the carried values replaced by the yielded ones;
//! the extra guard keeps the prefetch past the last iteration from touching memory.
//! Only loops with a constant positive step and slices made of pure tile arithmetic
//! are transformed; `num_stages=1` opts out. Values are unchanged: the same loads
//! happen, earlier, and the one extra prefetch is fully masked.

use crate::diag::Result;
use crate::ir::ops::{BinaryOp, CmpPred, Const, Op};
use crate::ir::{Block, DType, Inst, Kernel, Type, Value};
use crate::lower::rewrite::{copy_inst, rewrite, Ctx, Hook};
use std::collections::{HashMap, HashSet};

/// Pipelines the operand loads of `dot`s in loops (see the module documentation).
pub fn pipeline_dot_loads(kernel: &Kernel) -> Result<Kernel> {
    let mut defs: HashMap<Value, Op> = HashMap::new();
    kernel.walk(&mut |inst| {
        if let [r] = inst.results.as_slice() {
            defs.insert(*r, inst.op.clone());
        }
    });
    let identity = |t: &Type| vec![t.clone()];
    rewrite(kernel, &identity, &mut |ctx, inst| {
        pipeline_for(ctx, inst, &defs)
    })
}

/// Ops a slice may clone: pure, cheap, no memory and no nested blocks.
fn pure(op: &Op) -> bool {
    matches!(
        op,
        Op::Const(_)
            | Op::ProgramId { .. }
            | Op::NumPrograms { .. }
            | Op::Arange { .. }
            | Op::Splat(_)
            | Op::Broadcast(_)
            | Op::ExpandDims { .. }
            | Op::Reshape(_)
            | Op::Permute { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::Cast { .. }
            | Op::AddPtr { .. }
            | Op::Hint { .. }
    )
}

/// The loads of `body` to pipeline, and the body instructions their operands depend
/// on (in body order); `None` when nothing qualifies.
fn plan(body: &Block) -> Option<(Vec<usize>, Vec<usize>)> {
    let index_of: HashMap<Value, usize> = body
        .insts
        .iter()
        .enumerate()
        .flat_map(|(i, inst)| inst.results.iter().map(move |r| (*r, i)))
        .collect();
    let mut loads = vec![];
    for inst in &body.insts {
        if let Op::Dot { a, b, .. } = &inst.op {
            for v in [a, b] {
                if let Some(&i) = index_of.get(v) {
                    if let Op::Load { boundary_check, .. } = &body.insts[i].op {
                        if boundary_check.is_empty() && !loads.contains(&i) {
                            loads.push(i);
                        }
                    }
                }
            }
        }
    }
    if loads.is_empty() {
        return None;
    }
    let mut slice: HashSet<usize> = HashSet::new();
    let mut work: Vec<Value> = vec![];
    for &l in &loads {
        work.extend(body.insts[l].op.operands());
    }
    while let Some(v) = work.pop() {
        if let Some(&i) = index_of.get(&v) {
            if slice.insert(i) {
                let op = &body.insts[i].op;
                if !pure(op) {
                    return None;
                }
                work.extend(op.operands());
            }
        }
    }
    let mut slice: Vec<usize> = slice.into_iter().collect();
    slice.sort_unstable();
    loads.sort_unstable();
    Some((loads, slice))
}

/// Emits the pipelined loads for the iteration at `iv` (a new scalar value), with the
/// body's arguments mapped to `args`: the slice is cloned, then each load with its mask
/// also requiring `iv < upper`.
fn emit_loads(
    ctx: &mut Ctx,
    body: &Block,
    (loads, slice): (&[usize], &[usize]),
    iv: Value,
    args: &[Value],
    upper: Value,
) -> Result<Vec<Value>> {
    ctx.set(body.args[0], vec![iv]);
    for (a, v) in body.args[1..].iter().zip(args) {
        ctx.set(*a, vec![*v]);
    }
    let mut nothing = |_: &mut Ctx, _: &Inst| Ok(Hook::Copy);
    for &i in slice {
        copy_inst(ctx, &body.insts[i], &mut nothing)?;
    }
    let span = body.insts[loads[0]].span;
    let live = ctx.b.push1(
        Op::Cmp {
            pred: CmpPred::Lt,
            lhs: iv,
            rhs: upper,
        },
        Type::scalar(DType::I1),
        span,
    );
    let mut out = vec![];
    for &l in loads {
        let inst = &body.insts[l];
        let Op::Load {
            ptr,
            mask,
            other,
            padding,
            hints,
            ..
        } = &inst.op
        else {
            unreachable!("plan() picks loads")
        };
        let ty = ctx.old.ty(inst.results[0]).clone();
        let shape = ty.shape().to_vec();
        let live_tile = ctx
            .b
            .push1(Op::Splat(live), Type::tile(DType::I1, shape.clone()), span);
        let mask = match mask {
            Some(m) => {
                let m = ctx.one(*m)?;
                ctx.b.push1(
                    Op::Binary {
                        op: BinaryOp::And,
                        lhs: m,
                        rhs: live_tile,
                    },
                    Type::tile(DType::I1, shape),
                    span,
                )
            }
            None => live_tile,
        };
        let other = other.map(|o| ctx.one(o)).transpose()?;
        let ptr = ctx.one(*ptr)?;
        out.push(ctx.b.push1(
            Op::Load {
                ptr,
                mask: Some(mask),
                other,
                boundary_check: vec![],
                padding: *padding,
                hints: hints.clone(),
            },
            ty,
            span,
        ));
    }
    Ok(out)
}

fn pipeline_for(ctx: &mut Ctx, inst: &Inst, defs: &HashMap<Value, Op>) -> Result<Hook> {
    let Op::For {
        lower,
        upper,
        step,
        init,
        body,
        num_stages,
    } = &inst.op
    else {
        return Ok(Hook::Copy);
    };
    let positive_step = matches!(defs.get(step), Some(Op::Const(Const::Int(s))) if *s > 0);
    if *num_stages == Some(1) || !positive_step || body.args.is_empty() {
        return Ok(Hook::Copy);
    }
    let Some((loads, slice)) = plan(body) else {
        return Ok(Hook::Copy);
    };
    let (lower_n, upper_n, step_n) = (ctx.one(*lower)?, ctx.one(*upper)?, ctx.one(*step)?);
    let init_n: Vec<Value> = init.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
    // Prologue: the first iteration's loads.
    let first = emit_loads(ctx, body, (&loads, &slice), lower_n, &init_n, upper_n)?;
    // The loop, carrying the loaded tiles.
    let load_tys: Vec<Type> = loads
        .iter()
        .map(|&l| ctx.old.ty(body.insts[l].results[0]).clone())
        .collect();
    let mut arg_tys: Vec<Type> = body.args.iter().map(|a| ctx.old.ty(*a).clone()).collect();
    arg_tys.extend(load_tys.iter().cloned());
    let new_args = ctx.b.begin_block(arg_tys);
    let n = body.args.len();
    for (a, v) in body.args.iter().zip(&new_args) {
        ctx.set(*a, vec![*v]);
    }
    let current: HashMap<usize, Value> = loads
        .iter()
        .copied()
        .zip(new_args[n..].iter().copied())
        .collect();
    let mut hook = |c: &mut Ctx, i: &Inst| pipeline_for(c, i, defs);
    for (i, body_inst) in body.insts.iter().enumerate() {
        if let Some(&cur) = current.get(&i) {
            ctx.set(body_inst.results[0], vec![cur]);
            continue;
        }
        if let Op::Yield(vals) = &body_inst.op {
            let yielded: Vec<Value> = vals.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
            let iv_ty = ctx.old.ty(body.args[0]).clone();
            let next_iv = ctx.b.push1(
                Op::Binary {
                    op: BinaryOp::Add,
                    lhs: new_args[0],
                    rhs: step_n,
                },
                iv_ty,
                body_inst.span,
            );
            let next = emit_loads(ctx, body, (&loads, &slice), next_iv, &yielded, upper_n)?;
            let mut all = yielded;
            all.extend(next);
            ctx.b.push0(Op::Yield(all), body_inst.span);
            continue;
        }
        match hook(ctx, body_inst)? {
            Hook::Done => {}
            Hook::Copy => copy_inst(ctx, body_inst, &mut hook)?,
        }
    }
    let new_body = ctx.b.end_block();
    let mut result_tys: Vec<Type> = inst
        .results
        .iter()
        .map(|r| ctx.old.ty(*r).clone())
        .collect();
    result_tys.extend(load_tys);
    let mut init_all = init_n;
    init_all.extend(first);
    let results = ctx.b.push(
        Op::For {
            lower: lower_n,
            upper: upper_n,
            step: step_n,
            init: init_all,
            body: new_body,
            num_stages: *num_stages,
        },
        result_tys,
        inst.span,
    );
    for (old, new) in inst.results.iter().zip(results) {
        ctx.set(*old, vec![new]);
    }
    Ok(Hook::Done)
}
