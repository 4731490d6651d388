//! Software pipelining of the loads that feed a `dot` (`num_stages >= 2`, the default).
//!
//! In a `for` loop whose body loads the operands of a `dot`, the loads of later
//! iterations are issued ahead, so that their global-memory latency overlaps the
//! tensor-core work instead of stalling every K step. Two forms:
//!
//! **Register prefetch** (WGSL, and PTX loops that cannot be staged): the loads of
//! iteration `i + 1` are issued in iteration `i`, after the `dot`, and carried to the
//! next iteration in registers (`num_stages - 1` iterations ahead, with the lookahead
//! below, where the loop asks for 3 or more stages):
//!
//! ```text
//! for iv, carried:                      a0 = load(ptr(lower, init), mask & lower < upper)
//!     a = load(ptr(iv, carried))   =>   for iv, carried, a:
//!     acc = dot(a, ..)                      acc = dot(a, ..)
//!     yield carried'                        a' = load(ptr(iv + step, carried'), mask & iv + step < upper)
//!                                           yield carried', a'
//! ```
//!
//! **Staged in shared memory** ([`ExpandOptions::async_copies`], PTX, tensor-core dots):
//! with `S = num_stages` (by default 3, or 4 for small tiles), the loads run `D = S - 1` iterations ahead and are
//! marked with a [`Staging`]: the expansion copies each tile asynchronously (`cp.async`)
//! into slot `i mod S` of a ring of `S` shared buffers, and the `dot` waits for its own
//! iteration's copies, passes one barrier and reads its operands from the ring. The loop
//! carries `D` tiles a load (slot numbers after expansion, no registers) and, for
//! `D >= 2`, a lookahead copy of the carried values the loads' addresses depend on
//! (their state `D - 1` iterations ahead, advanced by cloning the pure instructions that
//! compute their yielded values). Reading only those lookahead values, the copies of
//! the later iteration are issued right after the instruction that uses this
//! iteration's tiles (the `dot`), ahead of the rest of the body: in a flattened
//! persistent loop ([`crate::lower::flatten_loops`]) the epilogue under a tile's last K
//! step then runs with the next tile's copies in flight (the other forms issue them
//! at the end of the body). The ring size is capped by a shared-memory budget
//! ([`ExpandOptions::ring_budget`]). For warpgroup dots (`wgmma`) the ring gets one slot
//! more where the budget allows and [`ExpandOptions::ring_slack`] is on
//! ([`Staging::slack`]), so that the copies after a `dot`
//! left in flight refill the slot read two iterations before.
//!
//! The address, mask and `other` of each pipelined load are recomputed for the later
//! iteration by cloning the pure instructions they depend on (the slice) with the
//! induction variable advanced and the carried values replaced; the extra guard
//! `iv < upper` keeps the prefetches past the last iteration from touching memory. Only
//! loops with a constant positive step and slices made of pure tile arithmetic are
//! transformed; `num_stages=1` opts out. Values are unchanged: the same loads happen,
//! earlier, and the extra prefetches are fully masked.

use crate::diag::Result;
use crate::ir::ops::{BinaryOp, CmpPred, Const, Op, Staging};
use crate::ir::{Block, DType, Inst, Kernel, Type, Value};
use crate::lower::axis_info::AxisAnalysis;
use crate::lower::expand::dot::{staged_form, Transposed};
use crate::lower::expand::shared_tile::SharedTile;
use crate::lower::expand::ExpandOptions;
use crate::lower::rewrite::{copy_inst, rewrite, Ctx, Hook};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};

/// Stages when the loop does not say (`tl.range(..., num_stages=)`), for rings of
/// `slot_bytes` a stage: 4 where the ring stays within 80 KiB (small tiles, as in skinny
/// products: deeper prefetch, and still two or more programs an SM), else 3 (Triton's
/// default). On the H200: 4 stages took the 16x8192^2 tf32 product from 113 to 86 us
/// and the 64x8192^2 one from 150 to 125, while the 128x128x32 tf32 tile (36 KiB a
/// stage) lost 8% with 4. `TILEWISE_NUM_STAGES` (2 to 8) overrides it, for tuning.
fn default_stages(slot_bytes: u32) -> u32 {
    forced_stages().unwrap_or(if 4 * slot_bytes <= 80 * 1024 { 4 } else { 3 })
}

/// `TILEWISE_NUM_STAGES` (2 to 8), where set.
fn forced_stages() -> Option<u32> {
    std::env::var("TILEWISE_NUM_STAGES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|s| (2..=8).contains(s))
}

struct Env<'a> {
    defs: HashMap<Value, Op>,
    opt: &'a ExpandOptions,
    /// Proven contiguity (no hints): which `b` tiles are contiguous along K.
    axis: AxisAnalysis,
    /// The next ring id.
    rings: Cell<u32>,
}

/// Pipelines the operand loads of `dot`s in loops (see the module documentation).
pub fn pipeline_dot_loads(kernel: &Kernel, opt: &ExpandOptions) -> Result<Kernel> {
    let mut defs: HashMap<Value, Op> = HashMap::new();
    kernel.walk(&mut |inst| {
        if let [r] = inst.results.as_slice() {
            defs.insert(*r, inst.op.clone());
        }
    });
    let env = Env {
        defs,
        opt,
        axis: AxisAnalysis::new(kernel, false),
        rings: Cell::new(0),
    };
    let identity = |t: &Type| vec![t.clone()];
    rewrite(kernel, &identity, &mut |ctx, inst| {
        pipeline_for(ctx, inst, &env)
    })
}

/// Ops a slice may clone: pure, cheap, no memory; nested blocks only in an `if` whose
/// branches are such ops too (a flattened loop's prologue for the next tile,
/// `flatten_loops.rs`).
fn pure(op: &Op) -> bool {
    match op {
        Op::If {
            then_block,
            else_block,
            ..
        } => [then_block, else_block].iter().all(|b| {
            b.insts
                .iter()
                .all(|i| matches!(i.op, Op::Yield(_)) || pure(&i.op))
        }),
        op => op.is_elementwise_or_index(),
    }
}

/// Every value `op` reads, in its nested blocks too (those defined there are found
/// in no body, and ignored).
fn reads(op: &Op) -> Vec<Value> {
    let mut out = op.operands();
    for b in op.blocks() {
        b.walk(&mut |i| out.extend(i.op.operands()));
    }
    out
}

/// What a loop's pipelining does.
struct Plan {
    /// The body instructions (indices) of the loads to pipeline.
    loads: Vec<usize>,
    /// The body instructions their operands depend on, in body order.
    slice: Vec<usize>,
    /// How many iterations ahead the loads run.
    distance: u32,
    /// With staging: each load's [`Staging`].
    staging: Option<Vec<Staging>>,
    /// For `distance >= 2`: the carried values (body argument positions, from 1) the
    /// slice reads, whose lookahead copies the loop carries, and the body instructions
    /// that compute their yielded values (in body order).
    ahead: Vec<usize>,
    ahead_slice: Vec<usize>,
}

/// The body instructions `roots` depend on (through pure instructions only) and the
/// carried arguments they read; `None` if an impure instruction is reached.
fn slice_of(
    body: &Block,
    index_of: &HashMap<Value, usize>,
    roots: impl IntoIterator<Item = Value>,
) -> Option<(HashSet<usize>, HashSet<usize>)> {
    let (mut insts, mut args) = (HashSet::new(), HashSet::new());
    let mut work: Vec<Value> = roots.into_iter().collect();
    while let Some(v) = work.pop() {
        if let Some(&i) = index_of.get(&v) {
            if insts.insert(i) {
                let op = &body.insts[i].op;
                if !pure(op) {
                    return None;
                }
                work.extend(reads(op));
            }
        } else if let Some(j) = body.args.iter().position(|a| *a == v) {
            if j > 0 {
                args.insert(j);
            }
        }
    }
    Some((insts, args))
}

fn sorted(s: HashSet<usize>) -> Vec<usize> {
    let mut v: Vec<usize> = s.into_iter().collect();
    v.sort_unstable();
    v
}

/// How `body`'s dot operand loads are pipelined; `None` when nothing qualifies.
fn plan(kernel: &Kernel, body: &Block, num_stages: Option<u32>, env: &Env) -> Option<Plan> {
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
    loads.sort_unstable();
    let roots = loads
        .iter()
        .flat_map(|&l| body.insts[l].op.operands())
        .collect::<Vec<_>>();
    let (slice, read_args) = slice_of(body, &index_of, roots)?;
    let mut plan = Plan {
        loads,
        slice: sorted(slice),
        distance: 1,
        staging: None,
        ahead: vec![],
        ahead_slice: vec![],
    };
    let ring = staged_operands(kernel, body, &plan.loads, env).and_then(|operands| {
        // The ring: `stages` slots, within the budget.
        let slot_bytes: u32 = plan
            .loads
            .iter()
            .zip(&operands)
            .map(|(&l, &(operand, layout))| {
                let ty = kernel.ty(body.insts[l].results[0]);
                let dt = ty.dtype().unwrap_or(DType::F32);
                SharedTile::of(layout, operand, ty.shape(), dt).len(ty.shape())
                    * dt.size_bytes() as u32
            })
            .sum();
        let mut stages = num_stages
            .unwrap_or_else(|| default_stages(slot_bytes))
            .max(2);
        while stages > 2 && stages * slot_bytes > env.opt.ring_budget {
            stages -= 1;
        }
        (stages * slot_bytes <= env.opt.ring_budget).then_some((operands, stages, slot_bytes))
    });
    let Some((operands, stages, slot_bytes)) = ring else {
        // In registers: `num_stages - 1` tiles a load in flight, where the loop (or
        // `TILEWISE_NUM_STAGES`) asks for more than 2 stages; one ahead by default.
        let stages = num_stages.or_else(forced_stages).unwrap_or(2);
        plan.distance = deepen(&mut plan, body, &index_of, read_args, stages) - 1;
        return Some(plan);
    };
    let stages = deepen(&mut plan, body, &index_of, read_args, stages);
    plan.distance = stages - 1;
    let pending = (plan.distance - 1) * plan.loads.len() as u32;
    // Warpgroup MMA keeps one group in flight into the next iteration: a slot more
    // than the distance needs (where the budget has it) lets the copies after the dot
    // refill the slot read two iterations before, with no barrier between. (Only
    // the warpgroup form swizzles an operand; its swapped tf32 form stages `b` padded.)
    let wgmma = operands
        .iter()
        .any(|(_, l)| matches!(l, crate::ir::StagedLayout::Swizzled { .. }));
    let slack = wgmma
        && env.opt.ring_slack
        && stages < 8
        && (stages + 1) * slot_bytes <= env.opt.ring_budget;
    let slots = if slack { stages + 1 } else { stages };
    plan.staging = Some(
        operands
            .iter()
            .map(|&(operand, layout)| {
                let ring = env.rings.get();
                env.rings.set(ring + 1);
                Staging {
                    ring,
                    stages: slots,
                    operand,
                    layout,
                    pending,
                    slack,
                }
            })
            .collect(),
    );
    Some(plan)
}

/// The stages a plan can have: `stages`, where it is below 3 or the lookahead of the
/// carried values exists (then recorded in `plan`), else 2.
fn deepen(
    plan: &mut Plan,
    body: &Block,
    index_of: &HashMap<Value, usize>,
    read_args: HashSet<usize>,
    stages: u32,
) -> u32 {
    if stages < 3 {
        return stages.max(2);
    }
    match lookahead(body, index_of, read_args) {
        Some((ahead, ahead_slice)) => {
            plan.ahead = ahead;
            plan.ahead_slice = ahead_slice;
            stages
        }
        None => 2,
    }
}

/// The carried arguments the loads' addresses read, closed under "its yielded value
/// reads", and the body instructions computing their yielded values; `None` when one
/// of those is not pure.
fn lookahead(
    body: &Block,
    index_of: &HashMap<Value, usize>,
    read_args: HashSet<usize>,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let Some(Op::Yield(yields)) = body.insts.last().map(|i| &i.op) else {
        return None;
    };
    let mut args = read_args;
    loop {
        let roots: Vec<Value> = args.iter().map(|&j| yields[j - 1]).collect();
        let (insts, more) = slice_of(body, index_of, roots)?;
        if more.is_subset(&args) {
            return Some((sorted(args), sorted(insts)));
        }
        args.extend(more);
    }
}

/// Whether a value is a zero constant (through splats and broadcasts): what a masked
/// asynchronous copy writes.
pub(crate) fn is_zero(defs: &HashMap<Value, Op>, v: Value) -> bool {
    match defs.get(&v) {
        Some(Op::Const(Const::Int(0))) | Some(Op::Const(Const::Bool(false))) => true,
        Some(Op::Const(Const::Float(f))) => *f == 0.0 && f.is_sign_positive(),
        Some(Op::Splat(x)) | Some(Op::Broadcast(x)) => is_zero(defs, *x),
        _ => false,
    }
}

/// Each load's operand position and whether its `dot` runs on tensor cores, when every
/// load can be staged in shared memory: the backend copies asynchronously, each load
/// is used once, as an operand of a `dot` (whose other operand is staged too or comes
/// from registers), with no `other` but zero.
fn staged_operands(
    kernel: &Kernel,
    body: &Block,
    loads: &[usize],
    env: &Env,
) -> Option<Vec<(u8, crate::ir::StagedLayout)>> {
    if !env.opt.async_copies {
        return None;
    }
    let mut uses: HashMap<Value, usize> = HashMap::new();
    fn count(b: &Block, uses: &mut HashMap<Value, usize>) {
        for inst in &b.insts {
            for v in inst.op.operands() {
                *uses.entry(v).or_default() += 1;
            }
            for nested in inst.op.blocks() {
                count(nested, uses);
            }
        }
    }
    count(body, &mut uses);
    let loaded: Vec<Value> = loads.iter().map(|&l| body.insts[l].results[0]).collect();
    let mut operands = vec![];
    for (&l, &v) in loads.iter().zip(&loaded) {
        let Op::Load { other, .. } = &body.insts[l].op else {
            return None;
        };
        if other.is_some_and(|o| !is_zero(&env.defs, o)) || uses.get(&v) != Some(&1) {
            return None;
        }
        let dot = body.insts.iter().find_map(|inst| match &inst.op {
            Op::Dot {
                a, b, precision, ..
            } if *a == v || *b == v => Some((inst, *a, *b, *precision)),
            _ => None,
        })?;
        let (inst, a, b, precision) = dot;
        // The other operand may come from registers (attention's `q` and `p`): the dot
        // stages it by stores, as it does without rings.
        if a == b {
            return None;
        }
        let (sa, sb) = (kernel.ty(a).shape(), kernel.ty(b).shape());
        let dt = |x: Value| kernel.ty(x).dtype().unwrap_or(DType::F32);
        let types = (dt(a), dt(b), dt(inst.results[0]));
        let operand = if a == v { 0 } else { 1 };
        let along_first = |x: Value| {
            loads
                .iter()
                .find(|&&l| body.insts[l].results[0] == x)
                .is_some_and(|&l| contiguous_along_first(kernel, &body.insts[l], env))
        };
        let transposed = Transposed {
            a: along_first(a),
            b: along_first(b),
        };
        let layout = staged_form(
            env.opt,
            types,
            precision,
            (sa[0], sb[1], sa[1]),
            operand,
            transposed,
        );
        operands.push((operand, layout));
    }
    Some(operands)
}

/// Whether the 2-D tile `load` reads is contiguous in memory along its first dimension
/// and not along its second (a transposed view: `b.T` of a row-major `(N, K)` matrix as
/// the `[K, N]` operand, `x.T` of a `(K, M)` one as the `[M, K]` operand), by at least
/// 16 bytes: staged transposed, it is copied 16 bytes at a time.
fn contiguous_along_first(kernel: &Kernel, load: &Inst, env: &Env) -> bool {
    let Op::Load { ptr, .. } = &load.op else {
        return false;
    };
    let shape = kernel.ty(load.results[0]).shape();
    let size = kernel
        .ty(load.results[0])
        .dtype()
        .map_or(4, |d| d.size_bytes() as u64);
    if shape.len() != 2 {
        return false;
    }
    let info = env.axis.get(kernel, *ptr);
    info.contiguity[0] * size >= 16 && info.contiguity[1] == 1
}

/// A scalar of `ty`: `x + n * step` (n >= 0).
fn ahead_of(
    ctx: &mut Ctx,
    x: Value,
    step: Value,
    n: u32,
    ty: &Type,
    span: crate::diag::Span,
) -> Value {
    if n == 0 {
        return x;
    }
    let d = if n == 1 {
        step
    } else {
        let k = ctx
            .b
            .push1(Op::Const(Const::Int(n as i64)), ty.clone(), span);
        ctx.b.push1(
            Op::Binary {
                op: BinaryOp::Mul,
                lhs: k,
                rhs: step,
            },
            ty.clone(),
            span,
        )
    };
    ctx.b.push1(
        Op::Binary {
            op: BinaryOp::Add,
            lhs: x,
            rhs: d,
        },
        ty.clone(),
        span,
    )
}

/// Maps the body's arguments to `iv` and `args` (every carried position).
fn bind_args(ctx: &mut Ctx, body: &Block, iv: Value, args: &[Value]) {
    ctx.set(body.args[0], vec![iv]);
    for (a, v) in body.args[1..].iter().zip(args) {
        ctx.set(*a, vec![*v]);
    }
}

/// The yielded values of the lookahead positions for the iteration at `iv` whose
/// carried values are `args`.
fn advance(
    ctx: &mut Ctx,
    body: &Block,
    plan: &Plan,
    iv: Value,
    args: &[Value],
) -> Result<Vec<Value>> {
    bind_args(ctx, body, iv, args);
    let mut nothing = |_: &mut Ctx, _: &Inst| Ok(Hook::Copy);
    for &i in &plan.ahead_slice {
        copy_inst(ctx, &body.insts[i], &mut nothing)?;
    }
    let Some(Op::Yield(yields)) = body.insts.last().map(|i| &i.op) else {
        return Err(crate::diag::Diagnostic::internal(
            "pipelined loop without a yield",
        ));
    };
    plan.ahead.iter().map(|&j| ctx.one(yields[j - 1])).collect()
}

/// Emits the pipelined loads for the iteration at `iv` (a new scalar value), with the
/// body's arguments mapped to `args`: the slice is cloned, then each load with its mask
/// also requiring `iv < upper`.
fn emit_loads(
    ctx: &mut Ctx,
    body: &Block,
    plan: &Plan,
    iv: Value,
    args: &[Value],
    upper: Value,
) -> Result<Vec<Value>> {
    bind_args(ctx, body, iv, args);
    let mut nothing = |_: &mut Ctx, _: &Inst| Ok(Hook::Copy);
    for &i in &plan.slice {
        copy_inst(ctx, &body.insts[i], &mut nothing)?;
    }
    let span = body.insts[plan.loads[0]].span;
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
    for (n, &l) in plan.loads.iter().enumerate() {
        let inst = &body.insts[l];
        let Op::Load {
            ptr,
            mask,
            other,
            padding,
            hints,
            tensor_box,
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
                stage: plan.staging.as_ref().map(|s| s[n]),
                tensor_box: match tensor_box {
                    Some(b) => Some(crate::ir::ops::TensorBox {
                        parts: b.parts.iter().map(|&v| ctx.one(v)).collect::<Result<_>>()?,
                    }),
                    None => None,
                },
            },
            ty,
            span,
        ));
    }
    Ok(out)
}

/// The loads `plan.distance` iterations after the one at `iv`, and for a distance of
/// two or more the lookahead values advanced once more (what the loop carries next).
/// `carried` are the carried values the loads read at distance 1 (the next
/// iteration's); from 2 on the loads read only the lookahead values `look`.
#[allow(clippy::too_many_arguments)]
fn prefetch(
    ctx: &mut Ctx,
    body: &Block,
    plan: &Plan,
    iv: Value,
    carried: &[Value],
    look: &[Value],
    (step, upper, iv_ty): (Value, Value, &Type),
    span: crate::diag::Span,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let distance = plan.distance;
    if distance == 1 {
        let next_iv = ahead_of(ctx, iv, step, 1, iv_ty, span);
        return Ok((
            vec![],
            emit_loads(ctx, body, plan, next_iv, carried, upper)?,
        ));
    }
    // The lookahead holds the carried values of iteration `iv + (D - 1) step`; advance
    // them once more for the loads `D` iterations ahead.
    let mut st = carried.to_vec();
    for (&j, v) in plan.ahead.iter().zip(look) {
        st[j - 1] = *v;
    }
    let iv_last = ahead_of(ctx, iv, step, distance - 1, iv_ty, span);
    let adv = advance(ctx, body, plan, iv_last, &st)?;
    for (&j, v) in plan.ahead.iter().zip(&adv) {
        st[j - 1] = *v;
    }
    let next_iv = ahead_of(ctx, iv, step, distance, iv_ty, span);
    let next = emit_loads(ctx, body, plan, next_iv, &st, upper)?;
    Ok((adv, next))
}

fn pipeline_for(ctx: &mut Ctx, inst: &Inst, env: &Env) -> Result<Hook> {
    let Op::For {
        lower,
        upper,
        step,
        init,
        body,
        num_stages,
        flatten,
    } = &inst.op
    else {
        return Ok(Hook::Copy);
    };
    let positive_step = matches!(env.defs.get(step), Some(Op::Const(Const::Int(s))) if *s > 0);
    // The loop's own `num_stages`, else the launch's (Triton's `num_stages` config).
    let stages = num_stages.or(env.opt.num_stages);
    if stages == Some(1) || !positive_step || body.args.is_empty() {
        return Ok(Hook::Copy);
    }
    let Some(plan) = plan(ctx.old, body, stages, env) else {
        return Ok(Hook::Copy);
    };
    let span = inst.span;
    let distance = plan.distance;
    let iv_ty = ctx.old.ty(body.args[0]).clone();
    let (lower_n, upper_n, step_n) = (ctx.one(*lower)?, ctx.one(*upper)?, ctx.one(*step)?);
    let init_n: Vec<Value> = init.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
    // Prologue: the loads of the first `distance` iterations; the carried values the
    // loads read advanced alongside (the lookahead).
    let mut state = init_n.clone();
    let mut first: Vec<Vec<Value>> = vec![];
    for d in 0..distance {
        if d > 0 {
            let iv_prev = ahead_of(ctx, lower_n, step_n, d - 1, &iv_ty, span);
            let next = advance(ctx, body, &plan, iv_prev, &state)?;
            for (&j, v) in plan.ahead.iter().zip(next) {
                state[j - 1] = v;
            }
        }
        let iv_d = ahead_of(ctx, lower_n, step_n, d, &iv_ty, span);
        first.push(emit_loads(ctx, body, &plan, iv_d, &state, upper_n)?);
    }
    // The loop, carrying the lookahead values and `distance` tiles a load.
    let load_tys: Vec<Type> = plan
        .loads
        .iter()
        .map(|&l| ctx.old.ty(body.insts[l].results[0]).clone())
        .collect();
    let n = body.args.len() - 1;
    let ahead_tys: Vec<Type> = if distance >= 2 {
        plan.ahead
            .iter()
            .map(|&j| ctx.old.ty(body.args[j]).clone())
            .collect()
    } else {
        vec![]
    };
    let mut arg_tys: Vec<Type> = body.args.iter().map(|a| ctx.old.ty(*a).clone()).collect();
    arg_tys.extend(ahead_tys.iter().cloned());
    for t in &load_tys {
        arg_tys.extend((0..distance).map(|_| t.clone()));
    }
    let new_args = ctx.b.begin_block(arg_tys);
    let look_args: Vec<Value> = new_args[1 + n..1 + n + ahead_tys.len()].to_vec();
    let tile_arg =
        |l: usize, d: u32| new_args[1 + n + ahead_tys.len() + l * distance as usize + d as usize];
    for (a, v) in body.args.iter().zip(&new_args) {
        ctx.set(*a, vec![*v]);
    }
    let current: HashMap<usize, Value> = plan
        .loads
        .iter()
        .enumerate()
        .map(|(l, &i)| (i, tile_arg(l, 0)))
        .collect();
    // Where the later iteration's copies are issued: at the end of the body, or, for
    // copies into shared rings two or more iterations ahead (whose addresses read only
    // the lookahead values), right after the instruction that uses this iteration's
    // tiles (the `dot`), ahead of what else the body does: in a flattened persistent
    // loop, the epilogue under the tile's last K step, which then runs with the next
    // tile's copies already in flight.
    let early_at = (distance >= 2 && plan.staging.is_some())
        .then(|| {
            let loaded: HashSet<Value> = plan
                .loads
                .iter()
                .map(|&l| body.insts[l].results[0])
                .collect();
            body.insts
                .iter()
                .rposition(|i| reads(&i.op).iter().any(|v| loaded.contains(v)))
        })
        .flatten()
        .filter(|&i| i + 1 < body.insts.len());
    let current_args: Vec<Value> = new_args[1..=n].to_vec();
    let mut issued: Option<(Vec<Value>, Vec<Value>)> = None;
    let mut hook = |c: &mut Ctx, i: &Inst| pipeline_for(c, i, env);
    for (i, body_inst) in body.insts.iter().enumerate() {
        if let Some(&cur) = current.get(&i) {
            ctx.set(body_inst.results[0], vec![cur]);
            continue;
        }
        if let Op::Yield(vals) = &body_inst.op {
            let yielded: Vec<Value> = vals.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
            let mut all = yielded.clone();
            let (adv, next) = match issued.take() {
                Some(done) => done,
                None => prefetch(
                    ctx,
                    body,
                    &plan,
                    new_args[0],
                    &yielded,
                    &look_args,
                    (step_n, upper_n, &iv_ty),
                    body_inst.span,
                )?,
            };
            all.extend(adv);
            for (l, v) in next.into_iter().enumerate() {
                all.extend((1..distance).map(|d| tile_arg(l, d)));
                all.push(v);
            }
            ctx.b.push0(Op::Yield(all), body_inst.span);
            continue;
        }
        match hook(ctx, body_inst)? {
            Hook::Done => {}
            Hook::Copy => copy_inst(ctx, body_inst, &mut hook)?,
        }
        if early_at == Some(i) {
            // Cloning the slices rebinds the body's values; the rest of the body
            // reads this iteration's.
            let saved = ctx.snapshot();
            issued = Some(prefetch(
                ctx,
                body,
                &plan,
                new_args[0],
                &current_args,
                &look_args,
                (step_n, upper_n, &iv_ty),
                body.insts.last().map_or(span, |y| y.span),
            )?);
            ctx.restore(saved);
        }
    }
    let new_body = ctx.b.end_block();
    let mut result_tys: Vec<Type> = inst
        .results
        .iter()
        .map(|r| ctx.old.ty(*r).clone())
        .collect();
    result_tys.extend(ahead_tys);
    for t in &load_tys {
        result_tys.extend((0..distance).map(|_| t.clone()));
    }
    let mut init_all = init_n;
    if distance >= 2 {
        init_all.extend(plan.ahead.iter().map(|&j| state[j - 1]));
    }
    for l in 0..plan.loads.len() {
        init_all.extend(first.iter().map(|tiles| tiles[l]));
    }
    let results = ctx.b.push(
        Op::For {
            lower: lower_n,
            upper: upper_n,
            step: step_n,
            init: init_all,
            body: new_body,
            num_stages: *num_stages,
            flatten: *flatten,
        },
        result_tys,
        span,
    );
    for (old, new) in inst.results.iter().zip(results) {
        ctx.set(*old, vec![new]);
    }
    Ok(Hook::Done)
}
