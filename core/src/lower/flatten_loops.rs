//! Flattening a loop over tiles whose body runs one inner loop of `dot`s (a persistent
//! matmul: `for tile in tl.range(pid, tiles, NUM_SMS)` around `for k in range(k_tiles)`)
//! into a single loop over (tile, k), so that the pipeliner's prefetches run across
//! tiles: the next tile's first operands are copied while the current tile's last
//! products and its epilogue run, instead of the pipeline draining and filling again
//! at every tile. Triton does the same for `tl.range(..., flatten=True)`.
//!
//! ```text
//! for i in range(lo, hi, s), C:              if lo_k < hi_k:   (the inner loop runs)
//!     P(i, C)              (pure)                for _ in range(0, n_i * n_k), C, i = lo, kk = 0, X:
//!     X' = for k in range(lo_k, hi_k, s_k), X0:      P(i, C)*; k = lo_k + kk * s_k
//!         B(i, k, X)                                  X = select(kk == 0, X0, X)
//!     E(i, C, X')          (anything)                 X = B(i, k, X)
//!     yield Y                                         C = if kk == n_k - 1 { E(i, C, X); yield Y } else { yield C }
//!                                                     i, kk = the next (tile, k)
//!                                                     yield C, i, kk, X
//!                                            else:  the outer loop with X' = X0 (no inner loop)
//! ```
//! (*: P's scalars are carried, below.)
//!
//! The counters are carried (no division per iteration), and the flat loop counts in
//! `i64` so that its trip count, a product, cannot overflow. The prologue's instructions
//! that do not depend on the tile are hoisted out, those only the epilogue reads move
//! into its branch; of the rest, the scalars (where the tile lies: `_compute_pid`'s
//! divisions) are carried and computed again in an `if` only when the tile changes,
//! and the tiles (offsets) are computed every iteration from them, in the layout
//! their users take (carrying them cost 90 registers and spills on sm_90). The inner
//! loop's initial values `X0` may depend on the tile (block pointers made per tile); a zero accumulator, as every persistent matmul has, is
//! hoisted, and the expansion of warpgroup dots turns its select into the MMA's own
//! "do not accumulate" flag.
//!
//! A loop the user marked `tl.range(..., flatten=False)` keeps its nest; others
//! (`flatten=True`, or nothing said) flatten where they qualify.
//!
//! Only where the backend stages `dot` operands by asynchronous copies
//! ([`ExpandOptions::async_copies`]): there the prefetch across tiles pays; the register
//! prefetch gains little and the cooperative-matrix form may not run an epilogue in a
//! branch (`expand/control.rs`). Only when the inner loop's bounds do not depend on the
//! tile, the inner step is a positive constant and the outer one too (or the number
//! of programs, as grid-stride loops have), the induction variables
//! are `i32`, the prologue is pure arithmetic (`Op::is_elementwise_or_index`), and the
//! inner loop's body has a `dot` fed by a load (what the pipeliner stages); other
//! nests are left as they are. Values are unchanged: the same instructions run for the
//! same (tile, k) pairs in the same order.

use crate::diag::{Result, Span};
use crate::ir::ops::{BinaryOp, CmpPred, Const, Op};
use crate::ir::{Block, DType, Inst, Kernel, Type, Value};
use crate::lower::expand::ExpandOptions;
use crate::lower::rewrite::{copy_inst, rewrite, Ctx, Hook};
use std::collections::{HashMap, HashSet};

/// Flattens the loop nests described in the module documentation; a note (`line N:
/// ...`) says which.
pub fn flatten_tile_loops(kernel: &Kernel, opt: &ExpandOptions) -> Result<(Kernel, Vec<String>)> {
    if !opt.async_copies {
        return Ok((kernel.clone(), vec![]));
    }
    let mut defs: HashMap<Value, Op> = HashMap::new();
    kernel.walk(&mut |inst| {
        if let [r] = inst.results.as_slice() {
            defs.insert(*r, inst.op.clone());
        }
    });
    let identity = |t: &Type| vec![t.clone()];
    let mut notes = vec![];
    let k = rewrite(
        kernel,
        &identity,
        &mut |ctx, inst| match nest_of(kernel, &defs, inst, opt) {
            Some(nest) => {
                notes.push(format!(
                    "line {}: the loop over tiles and its loop at line {} run as one loop, so \
                     that the dot's operands are prefetched across tiles",
                    kernel.line_of(inst.span),
                    kernel.line_of(nest.body.insts[nest.inner].span)
                ));
                flatten(ctx, inst, &nest)?;
                Ok(Hook::Done)
            }
            None => Ok(Hook::Copy),
        },
    )?;
    Ok((k, notes))
}

/// A loop nest that flattens: the outer loop's body, where its inner loop is, and what
/// becomes of each prologue instruction.
struct Nest<'a> {
    body: &'a Block,
    /// The index of the inner loop in `body`.
    inner: usize,
    /// The inner loop's step.
    inner_step: i64,
    /// Per prologue instruction (before `inner`): where it goes.
    place: Vec<Place>,
    /// The scalars of `Place::Body` instructions that the inner loop or a tile of the
    /// prologue reads: carried by the flat loop and computed again only when the tile
    /// changes (the divisions that find a tile's place). The prologue's tiles are
    /// computed every iteration from them (elementwise, in the layout their users
    /// want: carried tiles cost registers, H200 run 81). `None` where a scalar is
    /// computed from a tile: then every iteration computes the whole prologue.
    frontier: Option<Vec<Value>>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    /// Before the nest: it does not depend on the tile.
    Hoisted,
    /// In the flat loop's body: the inner loop reads it.
    Body,
    /// In the epilogue's branch: only the epilogue reads it.
    Epilogue,
}

fn const_int(defs: &HashMap<Value, Op>, v: Value) -> Option<i64> {
    match defs.get(&v) {
        Some(Op::Const(Const::Int(s))) => Some(*s),
        _ => None,
    }
}

/// The nest `inst` heads, where it flattens.
fn nest_of<'a>(
    kernel: &Kernel,
    defs: &HashMap<Value, Op>,
    inst: &'a Inst,
    opt: &ExpandOptions,
) -> Option<Nest<'a>> {
    let Op::For {
        step,
        body,
        init,
        flatten,
        ..
    } = &inst.op
    else {
        return None;
    };
    // `tl.range(..., flatten=False)`: the user keeps the nest.
    if *flatten == Some(false) {
        return None;
    }
    let i32_ty = Type::scalar(DType::I32);
    if body.args.first().map(|a| kernel.ty(*a)) != Some(&i32_ty) {
        return None;
    }
    // A positive step: a constant, or the number of programs (a grid-stride loop).
    let positive = const_int(defs, *step).is_some_and(|s| s > 0)
        || matches!(defs.get(step), Some(Op::NumPrograms { .. }));
    if !positive {
        return None;
    }
    // The body: pure prologue, one inner loop, anything after it.
    let inner = body
        .insts
        .iter()
        .position(|i| !i.op.is_elementwise_or_index())?;
    let Op::For {
        lower: k_lower,
        upper: k_upper,
        step: k_step,
        init: k_init,
        body: k_body,
        num_stages,
        ..
    } = &body.insts[inner].op
    else {
        return None;
    };
    let stages = num_stages.or(opt.num_stages);
    if stages == Some(1) || k_body.args.first().map(|a| kernel.ty(*a)) != Some(&i32_ty) {
        return None;
    }
    let inner_step = const_int(defs, *k_step).filter(|s| *s > 0)?;
    // A dot fed by a load of the inner body: what the pipeliner stages.
    let loaded: HashSet<Value> = k_body
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::Load { .. }))
        .flat_map(|i| i.results.iter().copied())
        .collect();
    let fed = k_body
        .insts
        .iter()
        .any(|i| matches!(&i.op, Op::Dot { a, b, .. } if loaded.contains(a) || loaded.contains(b)));
    // The carried values of both loops are selected between (data, not pointers).
    let data = |v: &Value| kernel.ty(*v).dtype().is_some();
    if !fed || !k_init.iter().all(data) || !init.iter().all(data) {
        return None;
    }
    // Which prologue instructions depend on the tile (the outer body's arguments).
    let mut varies: HashSet<Value> = body.args.iter().copied().collect();
    let mut place = vec![];
    for p in &body.insts[..inner] {
        if p.op.operands().iter().any(|v| varies.contains(v)) {
            varies.extend(p.results.iter().copied());
            place.push(Place::Epilogue);
        } else {
            place.push(Place::Hoisted);
        }
    }
    // The inner loop's bounds may not.
    if varies.contains(k_lower) || varies.contains(k_upper) {
        return None;
    }
    // The varying prologue instructions the inner loop reads (through others).
    let mut needed: HashSet<Value> = HashSet::new();
    body.insts[inner].op.operands().into_iter().for_each(|v| {
        needed.insert(v);
    });
    k_body.walk(&mut |i| needed.extend(i.op.operands()));
    let mut read_by_inner = needed.clone();
    for (n, p) in body.insts[..inner].iter().enumerate().rev() {
        if place[n] == Place::Epilogue && p.results.iter().any(|r| needed.contains(r)) {
            place[n] = Place::Body;
            needed.extend(p.op.operands());
        }
    }
    let body_insts: Vec<&Inst> = body.insts[..inner]
        .iter()
        .zip(&place)
        .filter(|(_, q)| **q == Place::Body)
        .map(|(p, _)| p)
        .collect();
    let scalar = |i: &Inst| i.results.iter().all(|r| kernel.ty(*r).is_scalar());
    let tiles: HashSet<Value> = body_insts
        .iter()
        .filter(|i| !scalar(i))
        .flat_map(|i| i.results.iter().copied())
        .collect();
    for i in body_insts.iter().filter(|i| !scalar(i)) {
        read_by_inner.extend(i.op.operands());
    }
    let scalars_from_tiles = body_insts
        .iter()
        .filter(|i| scalar(i))
        .any(|i| i.op.operands().iter().any(|v| tiles.contains(v)));
    let mut frontier: Vec<Value> = body_insts
        .iter()
        .filter(|i| scalar(i))
        .flat_map(|i| i.results.iter().copied())
        .filter(|r| read_by_inner.contains(r))
        .collect();
    frontier.sort();
    let frontier = (!scalars_from_tiles).then_some(frontier);
    Some(Nest {
        body,
        inner,
        inner_step,
        place,
        frontier,
    })
}

/// Small builder helpers over the rewrite context.
struct Emit<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    span: Span,
}

impl Emit<'_, '_> {
    fn int(&mut self, v: i64, dt: DType) -> Value {
        self.ctx
            .b
            .push1(Op::Const(Const::Int(v)), Type::scalar(dt), self.span)
    }

    fn bin(&mut self, op: BinaryOp, lhs: Value, rhs: Value, dt: DType) -> Value {
        self.ctx
            .b
            .push1(Op::Binary { op, lhs, rhs }, Type::scalar(dt), self.span)
    }

    fn cmp(&mut self, pred: CmpPred, lhs: Value, rhs: Value) -> Value {
        self.ctx.b.push1(
            Op::Cmp { pred, lhs, rhs },
            Type::scalar(DType::I1),
            self.span,
        )
    }

    fn select(&mut self, cond: Value, on_true: Value, on_false: Value, ty: &Type) -> Value {
        let cond = if ty.is_scalar() {
            cond
        } else {
            self.ctx.b.push1(
                Op::Splat(cond),
                Type::tile(DType::I1, ty.shape()),
                self.span,
            )
        };
        self.ctx.b.push1(
            Op::Select {
                cond,
                on_true,
                on_false,
            },
            ty.clone(),
            self.span,
        )
    }

    /// The trip count of `range(lo, hi, s)` (`s > 0`), in i32.
    fn trips(&mut self, lo: Value, hi: Value, s: Value) -> Value {
        let i32 = DType::I32;
        let runs = self.cmp(CmpPred::Lt, lo, hi);
        let span = self.bin(BinaryOp::Sub, hi, lo, i32);
        let one = self.int(1, i32);
        let before_last = self.bin(BinaryOp::Sub, span, one, i32);
        let full = self.bin(BinaryOp::Div, before_last, s, i32);
        let n = self.bin(BinaryOp::Add, full, one, i32);
        let zero = self.int(0, i32);
        self.select(runs, n, zero, &Type::scalar(i32))
    }
}

fn copy_all(ctx: &mut Ctx, insts: &[Inst]) -> Result<()> {
    let mut nothing = |_: &mut Ctx, _: &Inst| Ok(Hook::Copy);
    for i in insts {
        copy_inst(ctx, i, &mut nothing)?;
    }
    Ok(())
}

fn yields(block: &Block) -> &[Value] {
    match block.insts.last().map(|i| &i.op) {
        Some(Op::Yield(v)) => v,
        _ => &[],
    }
}

fn mapped(ctx: &Ctx, vals: &[Value]) -> Result<Vec<Value>> {
    vals.iter().map(|v| ctx.one(*v)).collect()
}

fn types(ctx: &Ctx, vals: &[Value]) -> Vec<Type> {
    vals.iter().map(|v| ctx.old.ty(*v).clone()).collect()
}

/// Emits the flattened nest in place of the outer loop `inst`.
fn flatten(ctx: &mut Ctx, inst: &Inst, nest: &Nest) -> Result<()> {
    let Op::For {
        lower,
        upper,
        step,
        init,
        ..
    } = &inst.op
    else {
        unreachable!("nest_of takes loops")
    };
    let body = nest.body;
    let Op::For {
        lower: k_lower,
        upper: k_upper,
        init: k_init,
        body: k_body,
        num_stages,
        ..
    } = &body.insts[nest.inner].op
    else {
        unreachable!("nest_of checks the inner loop")
    };
    let prologue = &body.insts[..nest.inner];
    let epilogue = &body.insts[nest.inner + 1..body.insts.len().saturating_sub(1)];
    let in_place = |p: Place| -> Vec<Inst> {
        prologue
            .iter()
            .zip(&nest.place)
            .filter(|(_, q)| **q == p)
            .map(|(i, _)| i.clone())
            .collect()
    };
    let span = inst.span;
    let (i32, i64) = (DType::I32, DType::I64);
    // Before the nest: what does not depend on the tile, and the trip counts.
    copy_all(ctx, &in_place(Place::Hoisted))?;
    let (lo, hi) = (ctx.one(*lower)?, ctx.one(*upper)?);
    let (k_lo, k_hi) = (ctx.one(*k_lower)?, ctx.one(*k_upper)?);
    let c_init = mapped(ctx, init)?;
    let outer_step = ctx.one(*step)?;
    let body_insts = in_place(Place::Body);
    let map_tile = |ctx: &mut Ctx, tile: Value, cs: &[Value]| {
        ctx.set(body.args[0], vec![tile]);
        for (a, v) in body.args[1..].iter().zip(cs) {
            ctx.set(*a, vec![*v]);
        }
    };
    let mut e = Emit { ctx, span };
    let inner_step = e.int(nest.inner_step, i32);
    let n_tiles = e.trips(lo, hi, outer_step);
    let n_k = e.trips(k_lo, k_hi, inner_step);
    let inner_runs = e.cmp(CmpPred::Lt, k_lo, k_hi);
    let c_tys = types(e.ctx, init);
    let x_tys = types(e.ctx, k_init);

    // Then: the flat loop.
    e.ctx.b.begin_block(vec![]);
    let wide_tiles = e.ctx.b.push1(
        Op::Cast {
            value: n_tiles,
            bitcast: false,
        },
        Type::scalar(i64),
        span,
    );
    let wide_k = e.ctx.b.push1(
        Op::Cast {
            value: n_k,
            bitcast: false,
        },
        Type::scalar(i64),
        span,
    );
    let total = e.bin(BinaryOp::Mul, wide_tiles, wide_k, i64);
    let (zero64, one64) = (e.int(0, i64), e.int(1, i64));
    let (zero, one) = (e.int(0, i32), e.int(1, i32));
    let last_k = e.bin(BinaryOp::Sub, n_k, one, i32);
    // The first tile's prologue (pure: harmless where no tile runs): the inner loop's
    // first initial values, and the frontier's.
    map_tile(e.ctx, lo, &c_init);
    copy_all(e.ctx, &body_insts)?;
    let x_init = mapped(e.ctx, k_init)?;
    let frontier = nest.frontier.as_deref().unwrap_or(&[]);
    let f_init = mapped(e.ctx, frontier)?;
    let f_tys = types(e.ctx, frontier);
    let (nc, nx) = (init.len(), k_init.len());
    let mut arg_tys = vec![Type::scalar(i64)];
    arg_tys.extend(c_tys.iter().cloned());
    arg_tys.extend([Type::scalar(i32), Type::scalar(i32)]);
    arg_tys.extend(x_tys.iter().cloned());
    arg_tys.extend(f_tys.iter().cloned());
    let args = e.ctx.b.begin_block(arg_tys);
    let (cs, tile, kk, xs, fs) = (
        args[1..1 + nc].to_vec(),
        args[1 + nc],
        args[2 + nc],
        args[3 + nc..3 + nc + nx].to_vec(),
        args[3 + nc + nx..].to_vec(),
    );
    map_tile(e.ctx, tile, &cs);
    let set_frontier = |ctx: &mut Ctx, fs: &[Value]| {
        for (old, new) in frontier.iter().zip(fs) {
            ctx.set(*old, vec![*new]);
        }
    };
    if nest.frontier.is_some() {
        set_frontier(e.ctx, &fs);
        let tiles: Vec<Inst> = body_insts
            .iter()
            .filter(|i| i.results.iter().any(|r| !e.ctx.old.ty(*r).is_scalar()))
            .cloned()
            .collect();
        copy_all(e.ctx, &tiles)?;
    } else {
        copy_all(e.ctx, &body_insts)?;
    }
    let x0 = mapped(e.ctx, k_init)?;
    // The inner iteration: its index, and its carried values reset at a tile's start.
    let k_offset = e.bin(BinaryOp::Mul, kk, inner_step, i32);
    let k_iv = e.bin(BinaryOp::Add, k_lo, k_offset, i32);
    let first = e.cmp(CmpPred::Eq, kk, zero);
    e.ctx.set(k_body.args[0], vec![k_iv]);
    for ((a, x), (x0, ty)) in k_body.args[1..].iter().zip(&xs).zip(x0.iter().zip(&x_tys)) {
        let v = e.select(first, *x0, *x, ty);
        e.ctx.set(*a, vec![v]);
    }
    copy_all(e.ctx, &k_body.insts[..k_body.insts.len().saturating_sub(1)])?;
    let x_next = mapped(e.ctx, yields(k_body))?;
    let last = e.cmp(CmpPred::Eq, kk, last_k);
    // The epilogue, at a tile's last inner iteration.
    e.ctx.b.begin_block(vec![]);
    for (r, v) in body.insts[nest.inner].results.iter().zip(&x_next) {
        e.ctx.set(*r, vec![*v]);
    }
    if nest.frontier.is_some() {
        // What the epilogue reads of the prologue, again (once a tile).
        copy_all(e.ctx, &body_insts)?;
    }
    copy_all(e.ctx, &in_place(Place::Epilogue))?;
    copy_all(e.ctx, epilogue)?;
    let y = mapped(e.ctx, yields(body))?;
    e.ctx.b.push0(Op::Yield(y), span);
    let then_block = e.ctx.b.end_block();
    e.ctx.b.begin_block(vec![]);
    e.ctx.b.push0(Op::Yield(cs.clone()), span);
    let else_block = e.ctx.b.end_block();
    let c_next = e.ctx.b.push(
        Op::If {
            cond: last,
            then_block,
            else_block,
        },
        c_tys.clone(),
        span,
    );
    // The next (tile, k).
    let kk1 = e.bin(BinaryOp::Add, kk, one, i32);
    let wrap = e.cmp(CmpPred::Eq, kk1, n_k);
    let kk_next = e.select(wrap, zero, kk1, &Type::scalar(i32));
    let tile1 = e.bin(BinaryOp::Add, tile, outer_step, i32);
    let tile_next = e.select(wrap, tile1, tile, &Type::scalar(i32));
    // The frontier of the next tile, computed when the tile changes.
    let f_next = if nest.frontier.is_some() {
        e.ctx.b.begin_block(vec![]);
        map_tile(e.ctx, tile_next, &c_next);
        copy_all(e.ctx, &body_insts)?;
        let next = mapped(e.ctx, frontier)?;
        e.ctx.b.push0(Op::Yield(next), span);
        let then_block = e.ctx.b.end_block();
        e.ctx.b.begin_block(vec![]);
        e.ctx.b.push0(Op::Yield(fs.clone()), span);
        let else_block = e.ctx.b.end_block();
        e.ctx.b.push(
            Op::If {
                cond: wrap,
                then_block,
                else_block,
            },
            f_tys.clone(),
            span,
        )
    } else {
        vec![]
    };
    let mut carried = c_next;
    carried.extend([tile_next, kk_next]);
    carried.extend(x_next);
    carried.extend(f_next);
    e.ctx.b.push0(Op::Yield(carried), span);
    let flat_body = e.ctx.b.end_block();
    let mut flat_init = c_init.clone();
    flat_init.extend([lo, zero]);
    flat_init.extend(x_init.iter().copied());
    flat_init.extend(f_init.iter().copied());
    let mut flat_tys = c_tys.clone();
    flat_tys.extend([Type::scalar(i32), Type::scalar(i32)]);
    flat_tys.extend(x_tys.iter().cloned());
    flat_tys.extend(f_tys.iter().cloned());
    let flat = e.ctx.b.push(
        Op::For {
            lower: zero64,
            upper: total,
            step: one64,
            init: flat_init,
            body: flat_body,
            num_stages: *num_stages,
            flatten: None,
        },
        flat_tys,
        span,
    );
    e.ctx.b.push0(Op::Yield(flat[..nc].to_vec()), span);
    let then_block = e.ctx.b.end_block();

    // Else: the inner loop does not run; the outer loop without it.
    e.ctx.b.begin_block(vec![]);
    let args = e.ctx.b.begin_block(types(e.ctx, &body.args));
    for (a, v) in body.args.iter().zip(&args) {
        e.ctx.set(*a, vec![*v]);
    }
    let varying: Vec<Inst> = prologue
        .iter()
        .zip(&nest.place)
        .filter(|(_, q)| **q != Place::Hoisted)
        .map(|(i, _)| i.clone())
        .collect();
    copy_all(e.ctx, &varying)?;
    let x0 = mapped(e.ctx, k_init)?;
    for (r, v) in body.insts[nest.inner].results.iter().zip(&x0) {
        e.ctx.set(*r, vec![*v]);
    }
    copy_all(e.ctx, epilogue)?;
    let y = mapped(e.ctx, yields(body))?;
    e.ctx.b.push0(Op::Yield(y), span);
    let outer_body = e.ctx.b.end_block();
    let plain = e.ctx.b.push(
        Op::For {
            lower: lo,
            upper: hi,
            step: outer_step,
            init: c_init,
            body: outer_body,
            num_stages: None,
            flatten: None,
        },
        c_tys.clone(),
        span,
    );
    e.ctx.b.push0(Op::Yield(plain), span);
    let else_block = e.ctx.b.end_block();
    let results = e.ctx.b.push(
        Op::If {
            cond: inner_runs,
            then_block,
            else_block,
        },
        c_tys,
        span,
    );
    for (old, new) in inst.results.iter().zip(results) {
        e.ctx.set(*old, vec![new]);
    }
    Ok(())
}
