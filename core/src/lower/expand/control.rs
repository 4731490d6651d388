//! Structured control flow: `for`, `while` and `if`, and the values they carry.
//!
//! Each loop-carried or branch-merged value gets slots: registers of its own (a
//! pointer tile keeps its root; a staged tile, its ring slot register; a
//! cooperative-matrix accumulator, fragments of its own), assigned before the loop or
//! in each branch and read after it. A carried tile lives in its initial value's
//! layout, except: a uniform first value of a data tile takes the layout the yielded
//! value will have (a dot's accumulator layout, else the canonical one), and of a
//! pointer tile the canonical layout; a pointer tile whose staged copies want another
//! layout ([`Expander::staged_layout_for`]: runs along K for a K-major `b`) or whose
//! accesses are wider in another layout ([`Expander::wider_access_layout`]) takes that
//! one, its first value recomputed in it where it can be; the accumulator of a cooperative-matrix dot stays in fragments.
//! The yielded values are stored into the slots as a parallel copy at the end of the
//! body; a 16-bit tile that comes whole from wide loads is carried packed
//! (`packing.rs`).
//!
//! A `while` forwards the values of its `condition` into slots of their own (the
//! after-block's arguments and the results). An `if`'s result slots take the layout
//! the then-branch predicts, and no cooperative-matrix operation runs inside a branch.
//! Warpgroup dots whose accumulator is carried by a `for` and used by nothing else
//! accumulate into the carried registers in place, their last group waited for after
//! the loop.

use super::dist::{self, Dist};
use super::{dot, dot_coop, remat, Expander, TVal};
use crate::diag::{Diagnostic, ErrorKind, Result};
use crate::ir::ops::Op;
use crate::ir::{Block, DType, Inst, Type, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg, Stmt};

impl Expander<'_> {
    /// Registers that hold a loop-carried or branch-merged value, with its layout.
    fn carried_slot(&mut self, ty: &Type, like: &TVal) -> Result<TVal> {
        let dt = ty.dtype();
        Ok(match like {
            TVal::Data(d) => TVal::Data(self.fresh_like(d, dt.unwrap_or(DType::I32))),
            TVal::Ptr { root, off } => {
                let odt = dist::dist_dtype(self, off);
                TVal::Ptr {
                    root: *root,
                    off: self.fresh_like(off, odt),
                }
            }
            TVal::Staged { ring, .. } => TVal::Staged {
                ring: *ring,
                slot: self.new_reg(DType::I32),
            },
            TVal::Frags(f) => TVal::Frags(self.fresh_frags(&f.tile)),
        })
    }

    /// Copies `v` into the registers of `slot` (converting layouts as needed).
    fn store_into(&mut self, slot: &TVal, v: &TVal) -> Result<()> {
        match (slot, v) {
            (TVal::Frags(dst), _) => return self.store_frags(dst, v, false),
            (_, TVal::Frags(src)) => {
                let d = TVal::Data(self.materialize(src)?);
                return self.store_into(slot, &d);
            }
            _ => {}
        }
        if self.store_packed(slot, v)? {
            return Ok(());
        }
        let (sd, vd) = match (slot, v) {
            (TVal::Data(s), TVal::Data(v)) => (s, v),
            (TVal::Staged { ring: a, slot: dst }, TVal::Staged { ring: b, slot: src }) => {
                if a != b {
                    return Err(Diagnostic::internal("a carried staged tile changes rings"));
                }
                self.emit(Stmt::Assign {
                    dst: *dst,
                    expr: Expr::Copy(*src),
                });
                return Ok(());
            }
            (TVal::Ptr { root: a, off: s }, TVal::Ptr { root: b, off: v }) => {
                if a != b {
                    return Err(self.err(
                        ErrorKind::Backend,
                        "a loop-carried or branch-merged pointer must stay within one argument for WGSL and PTX",
                    ));
                }
                (s, v)
            }
            _ => return Err(Diagnostic::internal("carried value changes kind")),
        };
        match sd {
            Dist::Uniform(dst) => {
                let src = match vd {
                    Dist::Uniform(r) => *r,
                    Dist::Regs { regs, .. } => regs[0],
                };
                let src = self.cast_to(src, self.out.reg_ty(*dst).dtype);
                self.emit(Stmt::Assign {
                    dst: *dst,
                    expr: Expr::Copy(src),
                });
            }
            Dist::Regs { layout, regs } => {
                let src = self.in_layout(vd, layout)?;
                for (d, s) in regs.iter().zip(src) {
                    self.emit(Stmt::Assign {
                        dst: *d,
                        expr: Expr::Copy(s),
                    });
                }
            }
        }
        Ok(())
    }

    /// Copies several values into slots as a parallel copy (through temporaries when a
    /// source is itself one of the destinations).
    fn parallel_store(&mut self, slots: &[TVal], vals: &[TVal]) -> Result<()> {
        // A value already in its slot's registers (a dot accumulating in place) stays:
        // no copy, and none may read it while its warpgroup group is in flight.
        let same = |slot: &TVal, v: &TVal| {
            matches!(
                (slot, v),
                (TVal::Data(Dist::Regs { regs: a, layout: la }), TVal::Data(Dist::Regs { regs: b, layout: lb }))
                    if a == b && la == lb
            )
        };
        let keep: Vec<bool> = slots.iter().zip(vals).map(|(s, v)| same(s, v)).collect();
        let (slots, vals): (Vec<TVal>, Vec<TVal>) = slots
            .iter()
            .zip(vals)
            .zip(&keep)
            .filter(|(_, k)| !**k)
            .map(|((s, v), _)| (s.clone(), v.clone()))
            .unzip();
        let (slots, vals) = (&slots[..], &vals[..]);
        let mut staged = vec![];
        for (slot, v) in slots.iter().zip(vals) {
            let tmp = self.carried_slot_like(slot)?;
            self.pack_like(&tmp, slot);
            self.store_into(&tmp, v)?;
            staged.push(tmp);
        }
        for (slot, tmp) in slots.iter().zip(&staged) {
            self.store_into(slot, tmp)?;
        }
        Ok(())
    }

    fn carried_slot_like(&mut self, slot: &TVal) -> Result<TVal> {
        let dt_of = |x: &Self, d: &Dist| dist::dist_dtype(x, d);
        Ok(match slot {
            TVal::Data(d) => {
                let dt = dt_of(self, d);
                TVal::Data(self.fresh_like(d, dt))
            }
            TVal::Ptr { root, off } => {
                let dt = dt_of(self, off);
                TVal::Ptr {
                    root: *root,
                    off: self.fresh_like(off, dt),
                }
            }
            TVal::Staged { ring, .. } => TVal::Staged {
                ring: *ring,
                slot: self.new_reg(DType::I32),
            },
            TVal::Frags(f) => TVal::Frags(self.fresh_frags(&f.tile)),
        })
    }

    fn fresh_like(&mut self, d: &Dist, dt: DType) -> Dist {
        match d {
            Dist::Uniform(_) => Dist::Uniform(self.new_reg(dt)),
            Dist::Regs { layout, regs } => Dist::Regs {
                layout: layout.clone(),
                regs: regs.iter().map(|_| self.new_reg(dt)).collect(),
            },
        }
    }

    /// Picks the layout a carried value lives in: its initial value's, unless that is
    /// uniform and the body makes it distributed (an accumulator), then the layout the
    /// body's yielded value will have.
    fn carried_layouts(
        &mut self,
        inits: &[Value],
        yields: &[Value],
        tys: &[Type],
        (body, args): (&Block, &[Value]),
    ) -> Result<Vec<TVal>> {
        let mut slots = vec![];
        for (i, init) in inits.iter().enumerate() {
            let iv = self.get(*init)?.clone();
            let ty = &tys[i];
            // An accumulator of a cooperative-matrix dot stays in fragments.
            if let Some(tile) = match yields.get(i) {
                Some(y) => self.coop_tile_of(*y)?,
                None => None,
            } {
                let slot = match &iv {
                    TVal::Frags(f) if f.tile == tile => self.fresh_frags(&f.tile),
                    _ => self.fresh_frags(&tile),
                };
                let zero = self.is_zero_tile(*init);
                self.store_frags(&slot, &iv, zero)?;
                slots.push(TVal::Frags(slot));
                continue;
            }
            let wider = match &iv {
                TVal::Ptr {
                    off: Dist::Regs { layout, .. },
                    ..
                } => args
                    .get(i)
                    .and_then(|a| self.staged_layout_for(body, *a))
                    .filter(|t| t != layout)
                    .or_else(|| self.wider_access_layout(ty, layout)),
                _ => None,
            };
            let like = match (&iv, yields.get(i)) {
                (TVal::Data(Dist::Uniform(_)), Some(y)) if !ty.is_scalar() => {
                    let layout = self.predict_layout(*y)?;
                    let n = layout.num_regs() as usize;
                    TVal::Data(Dist::Regs {
                        layout,
                        regs: vec![Reg(0); n],
                    })
                }
                (
                    TVal::Ptr {
                        root,
                        off: Dist::Uniform(_),
                    },
                    _,
                ) if !ty.is_scalar() => {
                    let layout = self.canonical(ty.shape())?;
                    let n = layout.num_regs() as usize;
                    TVal::Ptr {
                        root: *root,
                        off: Dist::Regs {
                            layout,
                            regs: vec![Reg(0); n],
                        },
                    }
                }
                // A carried pointer tile lives in the layout its accesses are widest in
                // (16 bytes a thread along the last dimension: 8 halves on PTX, where
                // the canonical layout gives 4), so that its loads and asynchronous
                // copies move whole 16-byte vectors; its first value converts once,
                // before the loop.
                (
                    TVal::Ptr {
                        root,
                        off: Dist::Regs { regs, .. },
                    },
                    _,
                ) if wider.is_some() => {
                    let layout = wider.clone().expect("checked by the guard");
                    let n = layout.num_regs() as usize;
                    TVal::Ptr {
                        root: *root,
                        off: Dist::Regs {
                            layout,
                            regs: vec![regs[0]; n],
                        },
                    }
                }
                _ => iv.clone(),
            };
            let slot = self.carried_slot(ty, &like)?;
            self.pack_slot(&slot, &iv);
            // A pointer tile given a wider layout than its first value's is recomputed
            // in it (its offsets are functions of their coordinates) rather than
            // moved through shared memory.
            let iv = match (&slot, &iv, wider.is_some()) {
                (
                    TVal::Ptr {
                        off: Dist::Regs { layout, .. },
                        ..
                    },
                    TVal::Ptr { root, .. },
                    true,
                ) => {
                    let dims: remat::DimMap = (0..layout.rank()).map(Some).collect();
                    let layout = layout.clone();
                    match self.remat_ptr(*init, &layout, &dims, 0)? {
                        Some(regs) => TVal::Ptr {
                            root: *root,
                            off: Dist::Regs { layout, regs },
                        },
                        None => iv,
                    }
                }
                _ => iv,
            };
            self.store_into(&slot, &iv)?;
            slots.push(slot);
        }
        Ok(slots)
    }

    /// The layout a value will have, without lowering it: a dot's accumulator layout,
    /// or the canonical layout of its shape.
    fn predict_layout(&self, v: Value) -> Result<LinearLayout> {
        let shape = self.shape(v);
        if let Some(layout) = self.dot_layout_through_elementwise(v, 3)? {
            return Ok(layout);
        }
        self.canonical(&shape)
    }

    /// The layout of the dot `v` is computed from through up to `depth` elementwise ops
    /// of its shape (`acc + tl.dot(a, b)`, `acc * alpha + tl.dot(p, v)`): an
    /// accumulator carried in it takes the dot's result without moving it between
    /// threads each trip.
    fn dot_layout_through_elementwise(&self, v: Value, depth: u32) -> Result<Option<LinearLayout>> {
        if let Some(dot) = self.defining_dot(v) {
            return Ok(Some(self.dot_plan(&dot)?.layout().clone()));
        }
        if depth == 0 {
            return Ok(None);
        }
        let operands = match self.defs.get(&v) {
            Some(Op::Binary { lhs, rhs, .. }) => vec![*lhs, *rhs],
            Some(Op::Unary { value, .. }) | Some(Op::Cast { value, .. }) => vec![*value],
            Some(Op::Fma { a, b, c }) => vec![*a, *b, *c],
            Some(Op::Select {
                on_true, on_false, ..
            }) => vec![*on_true, *on_false],
            _ => return Ok(None),
        };
        let shape = self.shape(v);
        for o in operands {
            if self.shape(o) == shape {
                if let Some(l) = self.dot_layout_through_elementwise(o, depth - 1)? {
                    return Ok(Some(l));
                }
            }
        }
        Ok(None)
    }

    /// The cooperative-matrix tiling `v` will be held in: that of the dot defining it.
    fn coop_tile_of(&self, v: Value) -> Result<Option<dot_coop::CoopTile>> {
        let mut found = None;
        self.k.walk(&mut |inst| {
            if inst.results.contains(&v) {
                found = Some(inst.clone());
            }
        });
        let Some(inst) = found else { return Ok(None) };
        match &inst.op {
            Op::Dot { .. } => self.coop_tile(&inst),
            // Fragments never live in a branch (see `if_op`).
            _ => Ok(None),
        }
    }

    fn defining_dot(&self, v: Value) -> Option<Inst> {
        let mut found = None;
        self.k.walk(&mut |inst| {
            if inst.results.contains(&v) && matches!(inst.op, Op::Dot { .. }) {
                found = Some(inst.clone());
            }
        });
        found
    }

    fn terminator(b: &Block) -> (Vec<Value>, Option<Value>) {
        match b.insts.last().map(|i| &i.op) {
            Some(Op::Yield(v)) => (v.clone(), None),
            Some(Op::Condition { cond, args }) => (args.clone(), Some(*cond)),
            _ => (vec![], None),
        }
    }

    pub(super) fn for_loop(&mut self, inst: &Inst) -> Result<()> {
        let Op::For {
            lower,
            upper,
            step,
            init,
            body,
            ..
        } = &inst.op
        else {
            unreachable!()
        };
        let scalar = |x: &Self, v: Value| -> Result<Reg> {
            match x.data(v)? {
                Dist::Uniform(r) => Ok(r),
                _ => Err(Diagnostic::internal("loop bound is not a scalar")),
            }
        };
        let (lo, hi, st) = (
            scalar(self, *lower)?,
            scalar(self, *upper)?,
            scalar(self, *step)?,
        );
        let (yields, _) = Self::terminator(body);
        let tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        let slots = self.carried_layouts(init, &yields, &tys, (body, &body.args[1..]))?;
        let iv = self.new_reg(self.out.reg_ty(lo).dtype);
        self.vals
            .insert(body.args[0], TVal::Data(Dist::Uniform(iv)));
        for (a, s) in body.args[1..].iter().zip(&slots) {
            self.set(*a, s.clone());
        }
        let mut args = vec![];
        collect_args(body, &mut args);
        let mut defined: std::collections::HashSet<Value> = args.into_iter().collect();
        body.walk(&mut |i| defined.extend(i.results.iter().copied()));
        self.loops.push(super::LoopFrame {
            level: self.stmts.len() - 1,
            defined,
        });
        self.open();
        for s in &slots {
            self.unpack_slot(s);
        }
        let in_place = self.in_place_candidates(body, &yields);
        self.in_place_resets(body, &in_place);
        let outer = (
            std::mem::replace(&mut self.in_place_dots, in_place),
            std::mem::replace(&mut self.awaiting_in_place, false),
            std::mem::replace(&mut self.wgmma_in_flight, false),
        );
        self.awaiting_in_place = !self.in_place_dots.is_empty();
        self.block(body)?;
        let ys: Vec<TVal> = yields
            .iter()
            .map(|y| self.get(*y).cloned())
            .collect::<Result<_>>()?;
        self.parallel_store(&slots, &ys)?;
        let body_stmts = self.close();
        self.loops.pop();
        self.span = inst.span;
        self.emit(Stmt::For {
            iv,
            lower: lo,
            upper: hi,
            step: st,
            body: body_stmts,
        });
        // The last iteration's warpgroup group completes before anything reads the
        // accumulators.
        if self.wgmma_in_flight {
            self.emit(Stmt::WgmmaWait { pending: 0 });
        }
        (
            self.in_place_dots,
            self.awaiting_in_place,
            self.wgmma_in_flight,
        ) = outer;
        if slots.iter().any(|s| matches!(s, TVal::Staged { .. })) {
            // Nothing may still be copying into the rings once the loop is done (the
            // prefetches past the end are empty, or, by TMA, read what lies past the
            // loop's tiles and are waited for), and no later write may race with the
            // last iteration's reads.
            self.tma_drain(&slots)?;
            self.emit(Stmt::AsyncWait { pending: 0 });
            self.emit(Stmt::Barrier);
        }
        for s in &slots {
            self.unpack_slot(s);
        }
        for (r, s) in inst.results.iter().zip(slots) {
            self.set(*r, s);
        }
        Ok(())
    }

    /// Records the resets of `in_place` dots' accumulators (see
    /// [`Expander::wgmma_resets`]).
    fn in_place_resets(&mut self, body: &Block, in_place: &std::collections::HashSet<Value>) {
        for inst in &body.insts {
            if let Op::Dot { acc, .. } = &inst.op {
                if !in_place.contains(&inst.results[0]) {
                    continue;
                }
                if let Some((c, _)) = self.reset_of(*acc) {
                    self.wgmma_resets.insert(*acc, c);
                }
            }
        }
    }

    /// `v = select(splat(c), 0, carried)`: `(c, carried)`.
    pub(super) fn reset_of(&self, v: Value) -> Option<(Value, Value)> {
        let Some(Op::Select {
            cond,
            on_true,
            on_false,
        }) = self.defs.get(&v)
        else {
            return None;
        };
        let Some(Op::Splat(c)) = self.defs.get(cond) else {
            return None;
        };
        crate::lower::pipeline::is_zero(&self.defs, *on_true).then_some((*c, *on_false))
    }

    /// The dots of a loop `body` (yielding `yields`) that may accumulate in place into
    /// their carried registers: a top-level dot whose accumulator is a carried value
    /// used by it alone (directly, or through a reset `select(splat(c), 0, carried)`
    /// used by the dot alone), and whose result the yield reads once, at the same
    /// position, and nothing else but instructions inside an `if` (an epilogue, which
    /// waits for the group at its branch's start: `if_branches`).
    fn in_place_candidates(
        &self,
        body: &Block,
        yields: &[Value],
    ) -> std::collections::HashSet<Value> {
        let mut out = std::collections::HashSet::new();
        if !self.opt.wgmma {
            return out;
        }
        for (i, y) in yields.iter().enumerate() {
            let Some(carried) = body.args.get(i + 1) else {
                continue;
            };
            let dot = body
                .insts
                .iter()
                .find(|inst| inst.results.first() == Some(y));
            if let Some(
                inst @ Inst {
                    op: Op::Dot { a, b, acc, .. },
                    ..
                },
            ) = dot
            {
                let alone = |v: &Value| self.uses.get(v).copied() == Some(1);
                let wgmma = matches!(self.dot_plan(inst), Ok(dot::DotPlan::Wgmma(_)));
                let from_carried = acc == carried
                    || self
                        .reset_of(*acc)
                        .is_some_and(|(_, x)| x == *carried && alone(acc));
                let yielded_once = yields.iter().filter(|v| *v == y).count() == 1;
                // Other reads only inside `if`s (an epilogue, which waits at its
                // branch's start): every other instruction reads nothing of it.
                let read_outside_ifs = body.insts.iter().any(|i| match &i.op {
                    Op::Yield(_) | Op::If { .. } => false,
                    op => {
                        let mut reads = op.operands();
                        for b in op.blocks() {
                            b.walk(&mut |n| reads.extend(n.op.operands()));
                        }
                        reads.contains(y)
                    }
                });
                if wgmma
                    && from_carried
                    && a != acc
                    && b != acc
                    && a != carried
                    && b != carried
                    && alone(carried)
                    && yielded_once
                    && !read_outside_ifs
                {
                    out.insert(*y);
                }
            }
        }
        out
    }

    pub(super) fn if_op(&mut self, inst: &Inst) -> Result<()> {
        let Op::If {
            cond,
            then_block,
            else_block,
        } = &inst.op
        else {
            unreachable!()
        };
        let Dist::Uniform(c) = self.data(*cond)? else {
            return Err(Diagnostic::internal("if condition is not a scalar"));
        };
        // No cooperative-matrix operation runs in a branch: naga cannot prove one
        // uniform, and fragments assigned in a branch were lost on the H200 (fuzz seed
        // 310017). Accumulators the branches use are read into registers here, and dots
        // inside take another form (`coop_tile`).
        let mut used = vec![];
        for b in [then_block, else_block] {
            b.walk(&mut |i| used.extend(i.op.operands()));
        }
        let mut saved = vec![];
        for v in used {
            if saved.iter().any(|(s, _)| *s == v) {
                continue;
            }
            if let Some(TVal::Frags(f)) = self.vals.get(&v) {
                let f = f.clone();
                let d = self.materialize(&f)?;
                saved.push((v, TVal::Frags(f)));
                self.vals.insert(v, TVal::Data(d));
            }
        }
        self.if_depth += 1;
        let r = self.if_branches(inst, c);
        self.if_depth -= 1;
        for (v, t) in saved {
            self.vals.insert(v, t);
        }
        r
    }

    fn if_branches(&mut self, inst: &Inst, c: Reg) -> Result<()> {
        let Op::If {
            then_block,
            else_block,
            ..
        } = &inst.op
        else {
            unreachable!()
        };
        let (ty, _) = Self::terminator(then_block);
        let (ey, _) = Self::terminator(else_block);
        let tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        // Result slots take the layout the then-branch predicts.
        let mut slots = vec![];
        for (i, t) in tys.iter().enumerate() {
            let like = if t.is_scalar() {
                TVal::Data(Dist::Uniform(Reg(0)))
            } else {
                let layout = self.predict_layout(ty[i])?;
                let n = layout.num_regs() as usize;
                let d = Dist::Regs {
                    layout,
                    regs: vec![Reg(0); n],
                };
                if t.elem().is_some_and(|e| e.is_ptr()) {
                    TVal::Ptr {
                        root: u32::MAX,
                        off: d,
                    }
                } else {
                    TVal::Data(d)
                }
            };
            slots.push(like);
        }
        let mut then_stmts = vec![];
        let mut else_stmts = vec![];
        let mut real_slots: Vec<Option<TVal>> = vec![None; tys.len()];
        // Each branch starts with the warpgroup state before the `if` (a branch may
        // wait for an in-place dot's group), and the state after it is that one.
        let in_flight = self.wgmma_in_flight;
        for (branch, yields, out) in [
            (then_block, &ty, &mut then_stmts),
            (else_block, &ey, &mut else_stmts),
        ] {
            self.wgmma_in_flight = in_flight;
            self.open();
            // A branch that reads an in-place dot's result (a flattened loop's
            // epilogue) waits for its group first thing: ptxas serializes every
            // `wgmma` of the function (C7514) when the wait comes later in the branch.
            if in_flight && !self.in_place_dots.is_empty() {
                let mut reads = vec![];
                branch.walk(&mut |i| reads.extend(i.op.operands()));
                if reads.iter().any(|v| self.in_place_dots.contains(v)) {
                    self.emit(Stmt::WgmmaWait { pending: 0 });
                    self.wgmma_in_flight = false;
                }
            }
            self.block(branch)?;
            for (i, y) in yields.iter().enumerate() {
                let yv = self.get(*y)?.clone();
                if real_slots[i].is_none() {
                    let mut like = slots[i].clone();
                    if let (TVal::Ptr { root, .. }, TVal::Ptr { root: yr, .. }) = (&mut like, &yv) {
                        *root = *yr;
                    }
                    let slot = self.carried_slot(&tys[i], &like)?;
                    real_slots[i] = Some(slot);
                }
                let slot = real_slots[i].clone().expect("slot");
                self.store_into(&slot, &yv)?;
            }
            *out = self.close();
        }
        self.wgmma_in_flight = in_flight;
        self.span = inst.span;
        self.emit(Stmt::If {
            cond: c,
            then_body: then_stmts,
            else_body: else_stmts,
        });
        for (r, s) in inst.results.iter().zip(real_slots) {
            let s = s.ok_or_else(|| Diagnostic::internal("if result without a yield"))?;
            self.set(*r, s);
        }
        Ok(())
    }

    pub(super) fn while_loop(&mut self, inst: &Inst) -> Result<()> {
        let Op::While {
            init,
            before,
            after,
        } = &inst.op
        else {
            unreachable!()
        };
        let tys: Vec<Type> = before.args.iter().map(|a| self.k.ty(*a).clone()).collect();
        let (after_yields, _) = Self::terminator(after);
        let slots = self.carried_layouts(init, &after_yields, &tys, (before, &before.args))?;
        for (a, s) in before.args.iter().zip(&slots) {
            self.set(*a, s.clone());
        }
        self.open();
        for s in &slots {
            self.unpack_slot(s);
        }
        self.block(before)?;
        let (fwd, cond) = Self::terminator(before);
        let cond = cond.ok_or_else(|| Diagnostic::internal("while without condition"))?;
        let Dist::Uniform(c) = self.data(cond)? else {
            return Err(Diagnostic::internal("while condition is not a scalar"));
        };
        // The forwarded values become the after-block's arguments and the results.
        let res_tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        let mut fslots = vec![];
        for (i, f) in fwd.iter().enumerate() {
            let fv = self.get(*f)?.clone();
            let slot = self.carried_slot(&res_tys[i], &fv)?;
            self.store_into(&slot, &fv)?;
            fslots.push(slot);
        }
        let cond_body = self.close();
        for (a, s) in after.args.iter().zip(&fslots) {
            self.set(*a, s.clone());
        }
        self.open();
        for s in &fslots {
            self.unpack_slot(s);
        }
        self.block(after)?;
        let ys: Vec<TVal> = after_yields
            .iter()
            .map(|y| self.get(*y).cloned())
            .collect::<Result<_>>()?;
        self.parallel_store(&slots, &ys)?;
        let body = self.close();
        self.span = inst.span;
        self.emit(Stmt::While {
            cond_body,
            cond: c,
            body,
            span: inst.span,
        });
        for s in &fslots {
            self.unpack_slot(s);
        }
        for (r, s) in inst.results.iter().zip(fslots) {
            self.set(*r, s);
        }
        Ok(())
    }
}

/// The block arguments of `block` and of every block nested in it.
fn collect_args(block: &Block, out: &mut Vec<Value>) {
    out.extend(block.args.iter().copied());
    for inst in &block.insts {
        for nested in inst.op.blocks() {
            collect_args(nested, out);
        }
    }
}
