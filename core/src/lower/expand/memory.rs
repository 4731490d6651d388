//! Global memory: loads, stores and atomics through pointer tiles.
//!
//! A pointer tile is a root buffer parameter and element offsets. Each register of the
//! aligned (offset, mask, value) triple becomes one access. Replicated layouts (several
//! threads, or registers, holding the same element) store and update memory from one
//! owner only: duplicate plain stores would be harmless, duplicate atomics would not.
//!
//! A thread's run of registers along the last dimension moves as one wide access
//! (`ExpandOptions::vector_bytes`) where the axis analysis proves it contiguous,
//! aligned and uniformly masked; where only the user's hints say so, the access tests
//! them at run time and falls back to one access an element. The lanes of a wide load
//! are recorded as extracted from its vector (`packing.rs`). A load staged for a `dot`
//! (`ir::Staging`) goes into the next slot of its shared-memory ring, by asynchronous
//! copies where they fit.

use super::checked::AccessSite;

/// The masks of a tested access and the report to emit after it.
type Guarded = (Vec<Option<Reg>>, Vec<Stmt>);
use super::dist::Dist;
use super::shared_tile::SharedTile;
use super::{Expander, HeldTiles, Ring, TVal, STAGED_STORE_NOTE};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Op, Staging};
use crate::ir::{BinaryOp, Block, CmpPred, DType, Inst, Type, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, ParamKind, Reg, RegTy, Stmt};

impl Expander<'_> {
    pub(crate) fn memory(&mut self, inst: &Inst) -> Result<()> {
        match &inst.op {
            Op::Load {
                ptr,
                mask,
                stage: Some(stage),
                tensor_box,
                ..
            } => {
                let v =
                    self.staged_load(*ptr, *mask, *stage, tensor_box.as_ref(), inst.results[0])?;
                self.set(inst.results[0], v);
            }
            Op::Load {
                ptr, mask, other, ..
            } => {
                let v = self.load(*ptr, *mask, *other, inst.results[0])?;
                self.set(inst.results[0], TVal::Data(v));
            }
            Op::Store {
                ptr, value, mask, ..
            } => self.store(*ptr, *value, *mask)?,
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
            } => {
                let (op, v) = (*op, *value);
                let out = self.atomic(
                    *ptr,
                    &[v],
                    *mask,
                    inst.results[0],
                    move |dst, buf, index, vals, mask| Stmt::Atomic {
                        dst,
                        op,
                        buf,
                        index,
                        value: vals[0],
                        mask,
                    },
                )?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::AtomicCas { ptr, cmp, value } => {
                let out = self.atomic(
                    *ptr,
                    &[*cmp, *value],
                    None,
                    inst.results[0],
                    |dst, buf, index, vals, mask| {
                        let cas = Stmt::AtomicCas {
                            dst,
                            buf,
                            index,
                            cmp: vals[0],
                            value: vals[1],
                        };
                        // `mask` is the owner predicate of a replicated (or scalar)
                        // operand: only the owner may swap, or a replica could win the
                        // race and leave the owner, whose result is shared, a stale
                        // old value.
                        match mask {
                            Some(cond) => Stmt::If {
                                cond,
                                then_body: vec![cas],
                                else_body: vec![],
                            },
                            None => cas,
                        }
                    },
                )?;
                self.set(inst.results[0], TVal::Data(out));
            }
            _ => unreachable!("memory() called on a non-memory op"),
        }
        Ok(())
    }

    fn pointer(&self, ptr: Value) -> Result<(u32, Dist)> {
        match self.get(ptr)? {
            TVal::Ptr { root, off } => Ok((*root, off.clone())),
            TVal::Data(_) | TVal::Staged { .. } | TVal::Frags(_) => {
                Err(Diagnostic::internal("memory access through a non-pointer"))
            }
        }
    }

    fn mark_written(&mut self, root: u32) {
        if let Some(p) = self.out.params.get_mut(root as usize) {
            if let ParamKind::Buffer { written, .. } = &mut p.kind {
                *written = true;
            }
        }
    }

    fn opt_dist(&self, v: Option<Value>) -> Result<Option<Dist>> {
        v.map(|v| self.data(v)).transpose()
    }

    /// For a pointer tile of type `ty` in `layout`: the blocked layout whose threads
    /// hold the widest runs its element type allows along the last dimension, where
    /// `layout`'s runs are shorter (else `None`).
    pub(super) fn wider_access_layout(
        &self,
        ty: &Type,
        layout: &LinearLayout,
    ) -> Option<LinearLayout> {
        let Some(crate::ir::Elem::Ptr(dt)) = ty.elem() else {
            return None;
        };
        let shape = ty.shape();
        let lanes = self.opt.wide_lanes(dt);
        let rank = shape.len();
        if rank == 0 || lanes < 2 || shape[rank - 1] < lanes {
            return None;
        }
        let last = rank - 1;
        let run = layout
            .reg_bases()
            .iter()
            .enumerate()
            .take_while(|(i, b)| (0..rank).all(|d| b[d] == if d == last { 1 << i } else { 0 }))
            .count();
        if (1u32 << run) >= lanes {
            return None;
        }
        let order: Vec<u32> = (0..rank as u32).rev().collect();
        LinearLayout::default_blocked(shape, &order, lanes, self.opt.warp_size, self.opt.num_warps)
            .ok()
    }

    /// Whether the pointer tile `ptr` (rank 2) is proven contiguous along its first
    /// dimension by at least 16 bytes and not along its last.
    pub(super) fn contiguous_along_first(&self, ptr: Value, dtype: DType) -> bool {
        let info = self.axis_proven.get(self.k, ptr);
        info.contiguity.len() == 2
            && info.contiguity[0] * dtype.size_bytes() as u64 >= 16
            && info.contiguity[1] == 1
    }

    /// A blocked layout of `shape` (rank 2) whose registers run along the first
    /// dimension, 16 bytes a thread: for copies of a tile contiguous along it.
    fn first_dim_access_layout(&self, shape: &[u32], dtype: DType) -> Option<LinearLayout> {
        let lanes = self.opt.wide_lanes(dtype);
        if shape.len() != 2 || lanes < 2 || shape[0] < lanes {
            return None;
        }
        LinearLayout::default_blocked(
            shape,
            &[0, 1],
            lanes,
            self.opt.warp_size,
            self.opt.num_warps,
        )
        .ok()
    }

    /// For a `[rows, cols]` operand tile stored transposed (contiguous along `rows`) from
    /// memory contiguous along `cols`: runs of `run` rows in each thread's registers
    /// (one 16-byte chunk of a stored row), lanes along `cols` (so that the loads of one
    /// register are coalesced), then warps along `rows`. `None` where the tile is too
    /// small for it.
    fn transposing_layout(&self, shape: &[u32], run: u32) -> Option<LinearLayout> {
        let (ws, nw) = (self.opt.warp_size, self.opt.num_warps);
        if shape.len() != 2 || shape[0] < run || shape[1] < ws {
            return None;
        }
        let warps_rows = (shape[0] / run).min(nw);
        LinearLayout::blocked(
            shape,
            &[run, 1],
            &[1, ws],
            &[warps_rows, nw / warps_rows],
            &[1, 0],
        )
        .ok()
        .filter(|l| !l.is_replicated())
    }

    /// For a pointer tile `arg` carried by a loop whose body is `body`: the layout the
    /// copies of its staged loads want, where one of the body's staged loads reads
    /// through it (by `addptr` or a hint), so that the carried tile lives in that
    /// layout and its copies need no conversion (a carried tile cannot be recomputed in
    /// another layout inside the loop). A tile stored transposed (`b` K-major) takes
    /// runs along its first dimension where memory is contiguous along it
    /// ([`Self::first_dim_access_layout`]), else the layout its loads transpose through
    /// registers in ([`Self::transposing_layout`]). So does the tile through which a
    /// cooperative-matrix dot's transposed operand is loaded (`transposed_loads`: an
    /// `a` in runs along M, a `b` along K).
    pub(super) fn staged_layout_for(&self, body: &Block, arg: Value) -> Option<LinearLayout> {
        body.insts.iter().find_map(|inst| {
            let Op::Load { ptr, stage, .. } = &inst.op else {
                return None;
            };
            let transposed = self.transposed_loads.contains(&inst.results[0]);
            if stage.is_none() && !transposed {
                return None;
            }
            let ptr: Value = *ptr;
            let mut v = ptr;
            while v != arg {
                v = match self.defs.get(&v)? {
                    Op::AddPtr { ptr, .. } => *ptr,
                    Op::Hint { value, .. } => *value,
                    _ => return None,
                };
            }
            let (shape, dtype) = (self.shape(inst.results[0]), self.dtype(inst.results[0]));
            if self.shape(arg) != shape {
                return None;
            }
            let Some(stage) = stage.as_ref().filter(|_| !transposed) else {
                return self.first_dim_access_layout(&shape, dtype);
            };
            let tile = SharedTile::of(stage.layout, stage.operand, &shape, dtype);
            if tile.transposed() && self.contiguous_along_first(ptr, dtype) {
                return self.first_dim_access_layout(&shape, dtype);
            }
            match tile {
                SharedTile::Swizzled(t) if t.transposed => {
                    self.transposing_layout(&shape, 16 / t.elem)
                }
                _ => None,
            }
        })
    }

    /// How many consecutive registers of `layout` one access may cover for a tile of
    /// `dtype` through `ptr`: a power of two, 1 when nothing is proven. The registers
    /// must be a run along the last dimension, the addresses contiguous and aligned to
    /// the whole access, and `uniform` (mask, `other`, stored value's mask) constant
    /// over the run.
    fn vector_width(
        &self,
        ptr: Value,
        uniform: &[Option<Value>],
        layout: Option<&LinearLayout>,
        dtype: DType,
        hints: bool,
    ) -> usize {
        let rank = layout.map_or(0, |l| l.rank());
        if rank == 0 {
            return 1;
        }
        self.vector_width_along(rank - 1, ptr, uniform, layout, dtype, hints)
    }

    /// [`Self::vector_width`] for a run along dimension `last` (the first dimension for
    /// a tile stored transposed).
    fn vector_width_along(
        &self,
        last: usize,
        ptr: Value,
        uniform: &[Option<Value>],
        layout: Option<&LinearLayout>,
        dtype: DType,
        hints: bool,
    ) -> usize {
        let axis = if hints { &self.axis } else { &self.axis_proven };
        let Some(layout) = layout else { return 1 };
        let max_lanes = self.opt.wide_lanes(dtype);
        if max_lanes < 2 {
            return 1;
        }
        let rank = layout.rank();
        if rank <= last {
            return 1;
        }
        let mut run = 0;
        for (i, b) in layout.reg_bases().iter().enumerate() {
            let unit: Vec<u32> = (0..rank)
                .map(|d| if d == last { 1 << i } else { 0 })
                .collect();
            if *b != unit {
                break;
            }
            run += 1;
        }
        let info = axis.get(self.k, ptr);
        let mut width = (1u64 << run)
            .min(info.contiguity[last])
            .min(info.divisibility[last])
            .min(max_lanes as u64);
        for v in uniform.iter().flatten() {
            width = width.min(axis.get(self.k, *v).constancy[last]);
        }
        let width = if width == 0 {
            1
        } else {
            1 << (63 - width.leading_zeros())
        };
        width.min(8) as usize
    }

    /// At run time, whether registers `first .. first + width` of `index` are one
    /// aligned run (`index[first]` a multiple of `width`, then `+1` steps) and each of
    /// `uniform` (masks, `other`) is the same over them: the facts a wide access took
    /// from the user's hints.
    fn hint_check(
        &mut self,
        index: &[Reg],
        uniform: &[Vec<Reg>],
        first: usize,
        width: usize,
    ) -> Reg {
        let i0 = index[first];
        let low = self.int_const(DType::I32, width as i64 - 1);
        let rem = self.assign(DType::I32, Expr::Binary(BinaryOp::And, i0, low));
        let zero = self.int_const(DType::I32, 0);
        let mut ok = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, rem, zero));
        for j in 1..width {
            let step = self.int_const(DType::I32, j as i64);
            let want = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, i0, step));
            let same = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, index[first + j], want));
            ok = self.assign(DType::I1, Expr::Binary(BinaryOp::And, ok, same));
            for u in uniform {
                let same = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, u[first + j], u[first]));
                ok = self.assign(DType::I1, Expr::Binary(BinaryOp::And, ok, same));
            }
        }
        ok
    }

    fn load(
        &mut self,
        ptr: Value,
        mask: Option<Value>,
        other: Option<Value>,
        result: Value,
    ) -> Result<Dist> {
        let (root, off) = self.pointer(ptr)?;
        let mask_d = self.opt_dist(mask)?;
        let dtype = self.dtype(result);
        if self.transposed_loads.contains(&result) {
            if let Some((off, mask_d)) = self.in_first_dim_runs(ptr, &off, mask)? {
                return self.load_at(root, off, mask_d, (ptr, mask, other), dtype);
            }
        }
        self.load_at(root, off, mask_d, (ptr, mask, other), dtype)
    }

    /// A load's addresses and mask recomputed in runs along the tile's first dimension
    /// ([`Self::first_dim_access_layout`]), where its addresses are in another layout
    /// and both can be recomputed (`other`, a constant where the pipeline stages, joins
    /// them in [`Self::load_at`]).
    fn in_first_dim_runs(
        &mut self,
        ptr: Value,
        off: &Dist,
        mask: Option<Value>,
    ) -> Result<Option<(Dist, Option<Dist>)>> {
        let Dist::Regs { layout, .. } = off else {
            return Ok(None);
        };
        let shape = self.shape(ptr);
        let Some(runs) =
            self.first_dim_access_layout(&shape, self.k.ty(ptr).dtype().unwrap_or(DType::F32))
        else {
            return Ok(None);
        };
        let dims: super::remat::DimMap = (0..runs.rank()).map(Some).collect();
        // A carried pointer tile is in the runs already (`staged_layout_for`).
        let regs = match off {
            Dist::Regs { regs, .. } if *layout == runs => regs.clone(),
            _ => match self.remat_ptr(ptr, &runs, &dims, 0)? {
                Some(regs) => regs,
                None => return Ok(None),
            },
        };
        let mask_d = match mask {
            Some(m) => match self.remat(m, &runs, &dims, 0)? {
                Some(r) => Some(Dist::Regs {
                    layout: runs.clone(),
                    regs: r,
                }),
                None => return Ok(None),
            },
            None => None,
        };
        Ok(Some((Dist::Regs { layout: runs, regs }, mask_d)))
    }

    /// [`Self::load`] with the addresses (`off` into buffer `root`) and the mask already
    /// in hand, in the layout the caller chose; `values` are the load's pointer, mask
    /// and `other`, for what the analyses prove of them.
    fn load_at(
        &mut self,
        root: u32,
        off: Dist,
        mask: Option<Dist>,
        values: (Value, Option<Value>, Option<Value>),
        dtype: DType,
    ) -> Result<Dist> {
        let (ptr, mask_v, other_v) = values;
        let mut dists = vec![off];
        let other = self.opt_dist(other_v)?;
        dists.extend(mask.iter().cloned());
        dists.extend(other.iter().cloned());
        let (layout, regs) = self.align(&dists)?;
        let n = layout.as_ref().map(|l| l.num_regs() as usize).unwrap_or(1);
        let mut out = Vec::with_capacity(n);
        let mi = mask.is_some() as usize;
        // Each register's own mask, as the user gave it.
        let given: Vec<Option<Reg>> = (0..n).map(|i| mask.as_ref().map(|_| regs[1][i])).collect();
        // The load of register `i` under mask `m`: a masked-off lane without `other`
        // reads zero. With a vector destination it loads the run starting at `i`.
        let load_of = |x: &mut Self, i: usize, m: Option<Reg>| -> Expr {
            let o = other.as_ref().map(|_| regs[1 + mi][i]);
            let other = match (m, o) {
                (Some(_), None) => Some(x.zero_of(dtype)),
                (_, o) => o,
            };
            Expr::Load {
                buf: root,
                index: regs[0][i],
                mask: m,
                other,
            }
        };
        // Checked mode: the registers `at` tested (`lanes` elements each) and masked
        // off outside the view; the identity otherwise.
        let guard = |x: &mut Self, at: &[usize], lanes: usize| -> Result<Guarded> {
            let index: Vec<Reg> = at.iter().map(|&i| regs[0][i]).collect();
            let masks: Vec<Option<Reg>> = at.iter().map(|&i| given[i]).collect();
            x.guard_access(
                AccessSite {
                    what: "load",
                    root,
                    layout: layout.as_ref(),
                    index: &index,
                    at: Some(at),
                    lanes: lanes as u32,
                },
                &masks,
            )
        };
        let uniform = [mask_v, other_v];
        // Runs along the dimension the layout's registers step along first (the last
        // one, except for a K-major `b` loaded in runs along K).
        let along = layout.as_ref().map_or(0, run_dimension);
        let width = self.vector_width_along(along, ptr, &uniform, layout.as_ref(), dtype, true);
        let proven = self.vector_width_along(along, ptr, &uniform, layout.as_ref(), dtype, false);
        if width > 1 {
            // One test a vector: its run is contiguous (proven, or checked below).
            let starts: Vec<usize> = (0..n).step_by(width).collect();
            let (wide_masks, report) = guard(self, &starts, width)?;
            for (g, &first) in starts.iter().enumerate() {
                let group: Vec<Reg> = (0..width).map(|_| self.new_reg(dtype)).collect();
                // Hints are promises: a wide access that relies on one checks it first
                // and falls back to one access an element.
                let check =
                    (width > proven).then(|| self.hint_check(&regs[0], &regs[1..], first, width));
                self.open();
                let vector = self.new_reg_ty(RegTy {
                    dtype,
                    lanes: width as u8,
                });
                let expr = load_of(self, first, wide_masks[g]);
                self.emit(Stmt::Assign { dst: vector, expr });
                for (lane, &dst) in group.iter().enumerate() {
                    self.emit(Stmt::Assign {
                        dst,
                        expr: Expr::Extract {
                            vector,
                            lane: lane as u8,
                        },
                    });
                }
                let wide = self.close();
                match check {
                    None => {
                        wide.into_iter().for_each(|s| self.emit(s));
                        for (lane, &r) in group.iter().enumerate() {
                            self.extracted.insert(r, (vector, lane as u8));
                        }
                    }
                    Some(ok) => {
                        self.open();
                        let lanes: Vec<usize> = (first..first + width).collect();
                        let (masks, lane_report) = guard(self, &lanes, 1)?;
                        for (j, &dst) in group.iter().enumerate() {
                            let expr = load_of(self, first + j, masks[j]);
                            self.emit(Stmt::Assign { dst, expr });
                        }
                        lane_report.into_iter().for_each(|s| self.emit(s));
                        let narrow = self.close();
                        self.emit(Stmt::If {
                            cond: ok,
                            then_body: wide,
                            else_body: narrow,
                        });
                    }
                }
                out.extend(group);
            }
            report.into_iter().for_each(|s| self.emit(s));
            return Ok(Dist::Regs {
                layout: layout.expect("wide accesses need a layout"),
                regs: out,
            });
        }
        let all: Vec<usize> = (0..n).collect();
        let (masks, report) = guard(self, &all, 1)?;
        for (i, m) in masks.into_iter().enumerate() {
            let expr = load_of(self, i, m);
            out.push(self.assign(dtype, expr));
        }
        report.into_iter().for_each(|s| self.emit(s));
        Ok(match layout {
            None => Dist::Uniform(out[0]),
            Some(layout) => Dist::Regs { layout, regs: out },
        })
    }

    /// A `dot` operand load staged in shared memory (`ir::Staging`): into the ring's
    /// next slot, in the layout the `dot` reads ([`SharedTile`]), by asynchronous
    /// copies of 4 to 16 bytes where the addresses allow (masked-off elements are
    /// zero-filled), else by a load through registers and shared stores.
    /// Either way the thread then commits a copy group, so that every staged load is
    /// one group (what `Staging::pending` counts).
    fn staged_load(
        &mut self,
        ptr: Value,
        mask: Option<Value>,
        stage: Staging,
        tensor_box: Option<&crate::ir::ops::TensorBox>,
        result: Value,
    ) -> Result<TVal> {
        let shape = self.shape(result);
        let dtype = self.dtype(result);
        let tile = SharedTile::of(stage.layout, stage.operand, &shape, dtype);
        let slot_len = tile.len(&shape);
        // By the tensor memory accelerator where the block pointer allows it
        // (`memory_tma.rs`).
        let tma = match &tile {
            SharedTile::Swizzled(t) => self.tma_copy_of(tensor_box, t, dtype),
            _ => None,
        };
        let ring = match self.rings.get(&stage.ring) {
            Some(r) => r.clone(),
            None => {
                let name = format!(
                    "ring{}_{}",
                    stage.ring,
                    ["a", "b"][stage.operand as usize & 1]
                );
                // Slots are whole multiples of the alignment (swizzled tiles are made
                // of whole 8-row groups).
                let arr =
                    self.shared_array_aligned(&name, dtype, slot_len * stage.stages, tile.align());
                let bytes = slot_len * stage.stages * dtype.size_bytes() as u32;
                self.note(
                    self.span,
                    format!(
                        "dot operand {} staged by {} in a ring of {} stages ({bytes} bytes)",
                        ["a", "b"][stage.operand as usize & 1],
                        if tma.is_some() {
                            "the tensor memory accelerator (TMA)"
                        } else {
                            "asynchronous copies"
                        },
                        stage.stages
                    ),
                );
                let bars = tma
                    .is_some()
                    .then(|| self.tma_ring_barriers(&name, stage.stages));
                let next = self.new_reg(DType::I32);
                let zero = self.int_const(DType::I32, 0);
                self.emit(Stmt::Assign {
                    dst: next,
                    expr: Expr::Copy(zero),
                });
                let ring = Ring {
                    arr,
                    stages: stage.stages,
                    slot_len,
                    next,
                    pending: stage.pending,
                    slack: stage.slack,
                    bars,
                };
                self.rings.insert(stage.ring, ring.clone());
                ring
            }
        };
        // Before the loop's in-place warpgroup dot, the previous iterations' groups of
        // every warpgroup may still read the slot this copy refills: each waits for its
        // own (unless the ring has a slot to spare: then they are complete) and all
        // meet at a barrier.
        if self.awaiting_in_place {
            if !stage.slack {
                self.emit(Stmt::WgmmaWait { pending: 0 });
            }
            self.emit(Stmt::Barrier);
        }
        // This load's slot, and the next one's (a TMA ring counts to twice its slots:
        // the second half's phases have parity 1).
        let slot = self.assign(DType::I32, Expr::Copy(ring.next));
        let one = self.int_const(DType::I32, 1);
        let bumped = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, slot, one));
        let period = ring.stages * if ring.bars.is_some() { 2 } else { 1 };
        let stages = self.int_const(DType::I32, period as i64);
        let wrap = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, bumped, stages));
        let zero = self.int_const(DType::I32, 0);
        self.emit(Stmt::Assign {
            dst: ring.next,
            expr: Expr::Select {
                cond: wrap,
                on_true: zero,
                on_false: bumped,
            },
        });
        if ring.bars.is_some() {
            let Some(copy) = tma else {
                return Err(Diagnostic::internal(
                    "a load of a TMA ring that TMA cannot copy",
                ));
            };
            let (index, _) = self.tma_slot_parity(&ring, slot);
            let len = self.int_const(DType::I32, ring.slot_len as i64);
            let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, index, len));
            self.tma_copies(&copy, &ring, index, base)?;
            // An empty group keeps the count of groups `Staging::pending` relies on
            // where another ring of the loop is filled by `cp.async`.
            self.emit(Stmt::AsyncCommit);
            return Ok(TVal::Staged {
                ring: stage.ring,
                slot,
            });
        }
        let len = self.int_const(DType::I32, ring.slot_len as i64);
        let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, slot, len));
        let (root, mut off) = self.pointer(ptr)?;
        // A tile stored transposed (`b` K-major) from memory contiguous along its first
        // dimension (K) is copied in runs along K: its pointer tile is recomputed in a
        // layout whose registers run along K.
        let along_k = tile.transposed() && self.contiguous_along_first(ptr, dtype);
        // A swizzled tile stored transposed from memory contiguous along its last
        // dimension (tf32's row-major `b`) would take one copy an element, each a
        // warp's 32 lanes writing a few banks. Instead it goes through registers: each
        // thread loads a run of 16 bytes' worth of rows (lanes along the contiguous
        // dimension, so each load is coalesced) and stores each column's run as one
        // 16-byte chunk of the stored row.
        let transposing = match tile {
            SharedTile::Swizzled(t) if t.transposed && !along_k => {
                self.transposing_layout(&shape, 16 / t.elem)
            }
            _ => None,
        };
        // Copies move 16 bytes where the tile allows: a pointer tile in a layout of
        // shorter runs (a loop's first tiles, before the carried ones take the wide
        // layout) is recomputed in the wide one.
        if let Dist::Regs { layout, .. } = &off {
            let wider = if let Some(t) = &transposing {
                Some(t.clone()).filter(|t| t != layout)
            } else if along_k {
                self.first_dim_access_layout(&shape, dtype)
                    .filter(|l| l != layout)
            } else {
                self.wider_access_layout(&self.k.ty(ptr).clone(), layout)
            };
            if let Some(wide) = wider {
                let dims: super::remat::DimMap = (0..wide.rank()).map(Some).collect();
                if let Some(regs) = self.remat_ptr(ptr, &wide, &dims, 0)? {
                    off = Dist::Regs { layout: wide, regs };
                }
            }
        }
        let mut mask_d = self.opt_dist(mask)?;
        // A mask in another layout than the addresses (a carried pointer tile in its
        // wide layout, a mask built from `arange`) is recomputed in theirs where it can
        // be, instead of moving through shared memory every iteration.
        if let (Dist::Regs { layout, .. }, Some(Dist::Regs { layout: ml, .. }), Some(m)) =
            (&off, &mask_d, mask)
        {
            if layout != ml {
                let dims: super::remat::DimMap = (0..layout.rank()).map(Some).collect();
                let target = layout.clone();
                if let Some(regs) = self.remat(m, &target, &dims, 0)? {
                    mask_d = Some(Dist::Regs {
                        layout: target,
                        regs,
                    });
                }
            }
        }
        let mut dists = vec![off];
        dists.extend(mask_d.iter().cloned());
        let (layout, regs) = self.align(&dists)?;
        let size = dtype.size_bytes() as u32;
        // Stored transposed, a thread's run along the last dimension is not contiguous
        // in shared memory: one element a copy, unless the runs go along the first
        // dimension (then up to a 16-byte chunk of the stored row).
        let mut width = if along_k {
            self.vector_width_along(0, ptr, &[mask], layout.as_ref(), dtype, false) as u32
        } else if tile.transposed() {
            1
        } else {
            self.vector_width(ptr, &[mask], layout.as_ref(), dtype, false) as u32
        };
        let contiguous = if along_k {
            16 / dtype.size_bytes() as u32
        } else {
            tile.contiguous()
        };
        while width > contiguous {
            width /= 2;
        }
        // The copies' tile, for locating a reported element (in the load's layout,
        // which the copies' registers follow before any transposition).
        let view_for_checks = layout.clone();
        let transposed_through_registers = transposing.is_some() && layout == transposing;
        match layout {
            Some(layout)
                if !transposed_through_registers && [4, 8, 16].contains(&(width * size)) =>
            {
                let idx = self.tile_indices(&layout, &shape, &tile, Some(base))?;
                let view = if tile.transposed() {
                    layout.permute(&[1, 0])
                } else {
                    layout
                };
                // Where the layout replicates the tile (more threads or registers than
                // elements), only the first holder of an element copies it.
                let (owner, first_copy) = self.ownership(Some(&view));
                // Checked mode: each copy's elements inside the view (the runs are
                // proven contiguous), or the copy zero-fills and reports.
                let starts: Vec<usize> = (0..idx.len()).step_by(width as usize).collect();
                let given: Vec<Option<Reg>> = starts
                    .iter()
                    .map(|&f| mask_d.as_ref().map(|_| regs[1][f]))
                    .collect();
                let first_index: Vec<Reg> = starts.iter().map(|&f| regs[0][f]).collect();
                let (guarded, report) = if self.opt.checked {
                    let l = view_for_checks.clone();
                    self.guard_access(
                        AccessSite {
                            what: "load",
                            root,
                            layout: l.as_ref(),
                            index: &first_index,
                            at: Some(&starts),
                            lanes: width,
                        },
                        &given,
                    )?
                } else {
                    (given, vec![])
                };
                self.open();
                for (g, first) in (0..idx.len()).step_by(width as usize).enumerate() {
                    if !first_copy[first] {
                        continue;
                    }
                    self.emit(Stmt::AsyncCopy {
                        arr: ring.arr,
                        shared_index: idx[first],
                        buf: root,
                        index: regs[0][first],
                        lanes: width as u8,
                        mask: guarded[g],
                    });
                }
                let copies = self.close();
                match owner {
                    None => copies.into_iter().for_each(|c| self.emit(c)),
                    Some(cond) => self.emit(Stmt::If {
                        cond,
                        then_body: copies,
                        else_body: vec![],
                    }),
                }
                report.into_iter().for_each(|s| self.emit(s));
            }
            _ if transposed_through_registers => {
                let mut regs = regs.into_iter();
                let layout = view_for_checks.expect("a transposing layout");
                let off = Dist::Regs {
                    layout: layout.clone(),
                    regs: regs.next().expect("addresses"),
                };
                let m = regs.next().map(|regs| Dist::Regs {
                    layout: layout.clone(),
                    regs,
                });
                // With the loads two or more iterations ahead, a tile is stored one or
                // two staged loads later than it is loaded (held tiles, a queue of
                // registers), so that its loads have that many iterations to arrive
                // instead of being waited for here. Stored `h` loads later, a tile is
                // still stored before its `dot` while `h` is less than the prefetch
                // distance, and its slot was read `h + 1` or more dots before
                // (complete). Two only where a tile is at most 16 registers a thread.
                let ahead = (stage.stages - 1 - stage.slack as u32) as usize;
                let level = self.loops.len();
                let regs_per_tile = layout.num_regs() as usize;
                let depth = ahead
                    .saturating_sub(1)
                    .min((32 / regs_per_tile.max(1)).clamp(1, 2));
                if depth == 0 {
                    let d = self.load_at(root, off, m, (ptr, mask, None), dtype)?;
                    self.stage_into(ring.arr, Some(base), &d, &shape, tile, dtype)?;
                    self.emit(Stmt::FenceProxyAsync);
                } else {
                    let mut q = match self.held_tiles.get(&stage.ring) {
                        Some(q) if q.layout == layout && q.entries.len() == depth => q.clone(),
                        _ => HeldTiles {
                            entries: (0..depth)
                                .map(|_| {
                                    let regs =
                                        (0..regs_per_tile).map(|_| self.new_reg(dtype)).collect();
                                    (regs, self.new_reg(DType::I32))
                                })
                                .collect(),
                            layout,
                            count: 0,
                            level,
                        },
                    };
                    // Tiles held over from a loop this one follows (their stages are past
                    // that loop's end) are dropped.
                    if q.level > level {
                        q.count = 0;
                    }
                    // The oldest held tile is stored before this tile's loads are
                    // issued (H200 run 66: issuing the loads first, with both tiles
                    // live, took the 256x128x32 tf32 product from 0.689x cuBLAS to
                    // 0.514x).
                    if q.count == depth {
                        let (regs, slot) = q.entries[0].clone();
                        let held = Dist::Regs {
                            layout: q.layout.clone(),
                            regs,
                        };
                        self.stage_into(ring.arr, Some(slot), &held, &shape, tile, dtype)?;
                        self.emit(Stmt::FenceProxyAsync);
                        for p in 1..depth {
                            let (to, from) = (q.entries[p - 1].clone(), q.entries[p].clone());
                            for (&dst, &src) in to.0.iter().zip(&from.0).chain([(&to.1, &from.1)]) {
                                self.emit(Stmt::Assign {
                                    dst,
                                    expr: Expr::Copy(src),
                                });
                            }
                        }
                        q.count -= 1;
                    }
                    let d = self.load_at(root, off, m, (ptr, mask, None), dtype)?;
                    let Dist::Regs { regs: loaded, .. } = &d else {
                        return Err(Diagnostic::internal("a transposed tile without registers"));
                    };
                    if loaded.len() != regs_per_tile {
                        return Err(Diagnostic::internal("a held tile of another size"));
                    }
                    let (regs, slot) = q.entries[q.count].clone();
                    for (&dst, &src) in regs.iter().zip(loaded).chain([(&slot, &base)]) {
                        self.emit(Stmt::Assign {
                            dst,
                            expr: Expr::Copy(src),
                        });
                    }
                    q.count += 1;
                    q.level = level;
                    self.held_tiles.insert(stage.ring, q);
                }
            }
            _ => {
                let d = self.load(ptr, mask, None, result)?;
                self.stage_into(ring.arr, Some(base), &d, &shape, tile, dtype)?;
                // `wgmma` reads the ring through the async proxy: each thread fences
                // its own stores (the barrier before the dot orders the rest).
                if matches!(stage.layout, crate::ir::StagedLayout::Swizzled { .. }) {
                    self.emit(Stmt::FenceProxyAsync);
                }
            }
        }
        self.emit(Stmt::AsyncCommit);
        Ok(TVal::Staged {
            ring: stage.ring,
            slot,
        })
    }

    /// For a layout with replication, the predicate "this thread is the first holder"
    /// (None when every thread-level copy is distinct), and which registers are first
    /// copies.
    pub(crate) fn ownership(&mut self, layout: Option<&LinearLayout>) -> (Option<Reg>, Vec<bool>) {
        let Some(layout) = layout else {
            // A scalar: every thread holds it; thread 0 owns it.
            let tid = self.assign(
                DType::I32,
                Expr::Special(crate::thread_ir::Special::ThreadId),
            );
            let zero = self.int_const(DType::I32, 0);
            let own = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, tid, zero));
            return (Some(own), vec![true]);
        };
        let mut pred: Option<Reg> = None;
        let sources = [
            (self.lane, layout.lane_bases().to_vec()),
            (self.warp, layout.warp_bases().to_vec()),
        ];
        for (src, bases) in sources {
            for (bit, b) in bases.iter().enumerate() {
                if b.iter().any(|&x| x != 0) {
                    continue;
                }
                let mask = self.int_const(DType::I32, 1 << bit);
                let v = self.assign(DType::I32, Expr::Binary(BinaryOp::And, src, mask));
                let zero = self.int_const(DType::I32, 0);
                let is0 = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, v, zero));
                pred = Some(match pred {
                    None => is0,
                    Some(p) => self.assign(DType::I1, Expr::Binary(BinaryOp::And, p, is0)),
                });
            }
        }
        let dup_bits: u32 = layout
            .reg_bases()
            .iter()
            .enumerate()
            .filter(|(_, b)| b.iter().all(|&x| x == 0))
            .fold(0, |m, (i, _)| m | 1 << i);
        let first = (0..layout.num_regs()).map(|r| r & dup_bits == 0).collect();
        (pred, first)
    }

    fn and_masks(&mut self, a: Option<Reg>, b: Option<Reg>) -> Option<Reg> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.assign(DType::I1, Expr::Binary(BinaryOp::And, a, b))),
            (a, None) => a,
            (None, b) => b,
        }
    }

    /// Where [`ExpandOptions::staged_stores`](super::ExpandOptions::staged_stores)
    /// allows: a computed tile `vd` (a dot's accumulator) whose layout stores narrower
    /// vectors than the pointer tile's own layout (`off`), moved into that layout through
    /// shared memory (`through_shared_in_vectors`), with the mask recomputed there. A
    /// `wgmma` accumulator stores 4 bytes (f16) a thread a row, each warp's store
    /// touching 8 rows: tutorial 09's 128x256 f16 epilogue issued 64 such stores a
    /// thread, and half of the kernel's warp samples at K = 512 waited on them (Nsight
    /// Compute, run 86); in the pointer's layout they are 16-byte stores of whole rows.
    /// f32 accumulators store 8 bytes a thread a row (whole sectors): staged only in
    /// tiles above [`ExpandOptions::staged_pairs_above`](super::ExpandOptions::staged_pairs_above),
    /// 64 KiB (tutorial 03's 128x256 f32 epilogue, 64 such stores a thread:
    /// 229.9 -> 226.6 us at 4096^3 f16 on the H200, run 106), not in smaller ones
    /// (attention's f32 output), where the shared memory costs more than it saves.
    /// Tiles above
    /// [`ExpandOptions::staged_store_bytes`](super::ExpandOptions::staged_store_bytes)
    /// move in rounds. `None` where it does not apply or would not pay (runs of 16
    /// bytes already, small tiles, a mask that cannot be recomputed, checked mode).
    fn staged_for_wide_store(
        &mut self,
        ptr: Value,
        mask_v: Option<Value>,
        vd: &Dist,
        off: &Dist,
        dtype: DType,
    ) -> Result<Option<(Dist, Option<Dist>)>> {
        let (
            Dist::Regs {
                layout: vl,
                regs: vregs,
            },
            Dist::Regs { layout: ol, .. },
        ) = (vd, off)
        else {
            return Ok(None);
        };
        let size = dtype.size_bytes() as u32;
        let bytes = ol.shape().iter().product::<u32>() * size;
        let bound = self
            .opt
            .scratch_bytes
            .unwrap_or(u32::MAX)
            .min(self.opt.staged_store_bytes);
        if !self.opt.staged_stores
            || self.opt.checked
            || ol.rank() != 2
            || !matches!(size, 2 | 4)
            || self.out.reg_ty(vregs[0]).dtype != dtype
            || bytes < 4096
        {
            return Ok(None);
        }
        // The pointer tile's layout with the widest runs (16 bytes a thread; the
        // canonical layout gives 8 for 16-bit elements).
        let ol = self
            .wider_access_layout(self.k.ty(ptr), ol)
            .unwrap_or_else(|| ol.clone());
        let narrow = self.vector_width(ptr, &[mask_v], Some(vl), dtype, false) as u32;
        let wide = self.vector_width(ptr, &[mask_v], Some(&ol), dtype, false) as u32;
        // Only where the narrow stores waste sectors (a quad of a `wgmma` or `mma.sync`
        // accumulator covers 16 bytes of a row in 16-bit elements, half a sector), or
        // issue many (8-byte runs in a tile above 64 KiB).
        let pays = narrow * size < 8 || (narrow * size == 8 && bytes > self.opt.staged_pairs_above);
        if wide <= narrow || wide * size < 16 || !pays {
            return Ok(None);
        }
        let (vl, vregs) = (vl.clone(), vregs.clone());
        let dims: super::remat::DimMap = (0..ol.rank()).map(Some).collect();
        let mask = match mask_v {
            Some(m) => match self.remat(m, &ol, &dims, 0)? {
                Some(regs) => Some(Dist::Regs {
                    layout: ol.clone(),
                    regs,
                }),
                None => return Ok(None),
            },
            None => None,
        };
        let Some((regs, rounds)) = self.through_shared_in_vectors(&vregs, &vl, &ol, bound)? else {
            return Ok(None);
        };
        let shape = ol.shape();
        let span = self.span;
        self.note(
            span,
            format!(
                "{STAGED_STORE_NOTE}: a {}x{} {dtype} tile, {} bytes a thread{}",
                shape[0],
                shape[1],
                wide * size,
                if rounds > 1 {
                    format!(", in {rounds} rounds")
                } else {
                    String::new()
                }
            ),
        );
        Ok(Some((Dist::Regs { layout: ol, regs }, mask)))
    }

    fn store(&mut self, ptr: Value, value: Value, mask: Option<Value>) -> Result<()> {
        let (root, off) = self.pointer(ptr)?;
        self.mark_written(root);
        let dtype = match self.k.ty(ptr).elem() {
            Some(crate::ir::Elem::Ptr(d)) => d,
            _ => return Err(Diagnostic::internal("store through a non-pointer")),
        };
        let mut vd = self.data(value)?;
        let mask_v = mask;
        let mut mask = self.opt_dist(mask)?;
        let mut staged_now = false;
        if let Some((staged, staged_mask)) =
            self.staged_for_wide_store(ptr, mask_v, &vd, &off, dtype)?
        {
            vd = staged;
            staged_now = true;
            if staged_mask.is_some() {
                mask = staged_mask;
            }
        }
        // A computed value (a dot's accumulator) is stored from its own layout, with
        // the addresses and mask recomputed there instead of moving the value; a staged
        // one recomputes them too, even in the pointer's own layout (whose offsets may
        // have been moved there: tutorial 03's row offsets, a 128x1 tile broadcast).
        let mut aligned = None;
        if let Dist::Regs {
            layout: vl,
            regs: vregs,
        } = &vd
        {
            let off_layout = match &off {
                Dist::Regs { layout, .. } => Some(layout.clone()),
                Dist::Uniform(_) => None,
            };
            if off_layout.as_ref().is_some_and(|l| l != vl || staged_now) {
                let dims: super::remat::DimMap = (0..vl.rank()).map(Some).collect();
                let offs = self.remat_ptr(ptr, vl, &dims, 0)?;
                let m = match mask_v {
                    Some(m) => self.remat(m, vl, &dims, 0)?.map(Some),
                    None => Some(None),
                };
                if let (Some(offs), Some(m)) = (offs, m) {
                    let mut regs = vec![offs, vregs.clone()];
                    regs.extend(m);
                    aligned = Some((Some(vl.clone()), regs));
                }
            }
        }
        let (layout, regs) = match aligned {
            Some(a) => a,
            None => {
                let mut dists = vec![off, vd];
                dists.extend(mask.iter().cloned());
                self.align(&dists)?
            }
        };
        let (own, first) = self.ownership(layout.as_ref());
        // Each register's own mask, as the user gave it.
        let given: Vec<Option<Reg>> = (0..first.len())
            .map(|i| mask.as_ref().map(|_| regs[2][i]))
            .collect();
        // The store of `value` at register `i`'s address, under mask `m` and ownership.
        let store_of = |x: &mut Self, i: usize, value: Reg, m: Option<Reg>| -> Stmt {
            Stmt::Store {
                buf: root,
                index: regs[0][i],
                value,
                mask: x.and_masks(m, own),
            }
        };
        // Checked mode: the registers `at` tested (`lanes` elements each) and masked
        // off outside the view; the identity otherwise.
        let guard = |x: &mut Self, at: &[usize], lanes: usize| -> Result<Guarded> {
            let index: Vec<Reg> = at.iter().map(|&i| regs[0][i]).collect();
            let masks: Vec<Option<Reg>> = at.iter().map(|&i| given[i]).collect();
            x.guard_access(
                AccessSite {
                    what: "store",
                    root,
                    layout: layout.as_ref(),
                    index: &index,
                    at: Some(at),
                    lanes: lanes as u32,
                },
                &masks,
            )
        };
        let width = self.vector_width(ptr, &[mask_v], layout.as_ref(), dtype, true);
        let proven = self.vector_width(ptr, &[mask_v], layout.as_ref(), dtype, false);
        if width > 1 {
            // One test a vector: its run is contiguous (proven, or checked below).
            let starts: Vec<usize> = (0..first.len())
                .step_by(width)
                .filter(|&i| first[i])
                .collect();
            let (wide_masks, report) = guard(self, &starts, width)?;
            for (g, &start) in starts.iter().enumerate() {
                let check = (width > proven).then(|| {
                    let masks: Vec<Vec<Reg>> = regs.iter().skip(2).cloned().collect();
                    self.hint_check(&regs[0], &masks, start, width)
                });
                let lanes: Vec<Reg> = (start..start + width)
                    .map(|i| self.cast_to(regs[1][i], dtype))
                    .collect();
                self.open();
                let vector = self.new_reg_ty(RegTy {
                    dtype,
                    lanes: width as u8,
                });
                self.emit(Stmt::Assign {
                    dst: vector,
                    expr: Expr::Construct(lanes.clone()),
                });
                let st = store_of(self, start, vector, wide_masks[g]);
                self.emit(st);
                let wide = self.close();
                match check {
                    None => wide.into_iter().for_each(|s| self.emit(s)),
                    Some(ok) => {
                        self.open();
                        let at: Vec<usize> = (start..start + width).collect();
                        let (masks, lane_report) = guard(self, &at, 1)?;
                        for (j, &v) in lanes.iter().enumerate() {
                            let st = store_of(self, start + j, v, masks[j]);
                            self.emit(st);
                        }
                        lane_report.into_iter().for_each(|s| self.emit(s));
                        let narrow = self.close();
                        self.emit(Stmt::If {
                            cond: ok,
                            then_body: wide,
                            else_body: narrow,
                        });
                    }
                }
            }
            report.into_iter().for_each(|s| self.emit(s));
            return Ok(());
        }
        let owned: Vec<usize> = (0..first.len()).filter(|&i| first[i]).collect();
        let (masks, report) = guard(self, &owned, 1)?;
        for (k, &i) in owned.iter().enumerate() {
            let v = self.cast_to(regs[1][i], dtype);
            let st = store_of(self, i, v, masks[k]);
            self.emit(st);
        }
        report.into_iter().for_each(|s| self.emit(s));
        Ok(())
    }

    /// Emits an atomic per owned register; replicas receive the owner's result through
    /// shared memory.
    fn atomic(
        &mut self,
        ptr: Value,
        operands: &[Value],
        mask: Option<Value>,
        result: Value,
        make: impl Fn(Reg, u32, Reg, &[Reg], Option<Reg>) -> Stmt,
    ) -> Result<Dist> {
        let (root, off) = self.pointer(ptr)?;
        self.mark_written(root);
        let dtype = self.dtype(result);
        let mut dists = vec![off];
        for o in operands {
            dists.push(self.data(*o)?);
        }
        let mask = self.opt_dist(mask)?;
        dists.extend(mask.iter().cloned());
        let (layout, mut regs) = self.align(&dists)?;
        let (own, first) = self.ownership(layout.as_ref());
        // Checked mode: lanes outside the view are masked off (and reported).
        let has_mask = mask.is_some() || self.opt.checked;
        let mut report = vec![];
        if self.opt.checked {
            let k = 1 + operands.len();
            let given: Vec<Option<Reg>> = (0..first.len())
                .map(|i| mask.as_ref().map(|_| regs[k][i]))
                .collect();
            let (g, r) = self.guard_access(
                AccessSite {
                    what: "atomic",
                    root,
                    layout: layout.as_ref(),
                    index: &regs[0],
                    at: None,
                    lanes: 1,
                },
                &given,
            )?;
            regs.truncate(k);
            regs.push(g.into_iter().map(|m| m.expect("a guarded mask")).collect());
            report = r;
        }
        let mut out = vec![];
        if layout.is_none() {
            // One thread performs a scalar atomic for the whole program: the
            // program's earlier writes, by every thread, come first (a lock's release
            // after the guarded stores, a flag after its data).
            self.emit(Stmt::StorageBarrier);
        }
        for (i, is_first) in first.iter().enumerate() {
            let dst = self.new_reg(dtype);
            let zero = self.zero_of(dtype);
            self.emit(Stmt::Assign {
                dst,
                expr: Expr::Copy(zero),
            });
            if *is_first {
                let m = has_mask.then(|| regs[1 + operands.len()][i]);
                let m = self.and_masks(m, own);
                let vals: Vec<Reg> = (0..operands.len())
                    .map(|k| self.cast_to(regs[1 + k][i], dtype))
                    .collect();
                self.emit(make(dst, root, regs[0][i], &vals, m));
            }
            out.push(dst);
        }
        report.into_iter().for_each(|s| self.emit(s));
        let replicated = own.is_some() || first.iter().any(|f| !f);
        Ok(match layout {
            None => {
                // Thread 0 did the update; share its result.
                let arr = self.scratch_for(dtype, 1);
                let zero = self.int_const(DType::I32, 0);
                self.emit(Stmt::Barrier);
                let t = own.expect("scalar ownership");
                self.emit(Stmt::If {
                    cond: t,
                    then_body: vec![Stmt::SharedStore {
                        arr,
                        index: zero,
                        value: out[0],
                    }],
                    else_body: vec![],
                });
                self.emit(Stmt::Barrier);
                Dist::Uniform(self.assign(dtype, Expr::SharedLoad { arr, index: zero }))
            }
            Some(layout) if replicated => {
                // Owners publish their results; every holder reads them back.
                let numel: u32 = layout.shape().iter().product();
                let arr = self.scratch_for(dtype, numel);
                let idx = self.linear_indices(&layout, layout.shape())?;
                self.emit(Stmt::Barrier);
                let mut publish = vec![];
                for (i, is_first) in first.iter().enumerate() {
                    if *is_first {
                        publish.push(Stmt::SharedStore {
                            arr,
                            index: idx[i],
                            value: out[i],
                        });
                    }
                }
                match own {
                    Some(t) => self.emit(Stmt::If {
                        cond: t,
                        then_body: publish,
                        else_body: vec![],
                    }),
                    None => publish.into_iter().for_each(|s| self.emit(s)),
                }
                self.emit(Stmt::Barrier);
                let regs = idx
                    .iter()
                    .map(|&i| self.assign(dtype, Expr::SharedLoad { arr, index: i }))
                    .collect();
                Dist::Regs { layout, regs }
            }
            Some(layout) => Dist::Regs { layout, regs: out },
        })
    }
}

/// The dimension `layout`'s first register steps along by one element (the last
/// dimension where it steps along none, or has one register).
fn run_dimension(layout: &LinearLayout) -> usize {
    let rank = layout.rank();
    layout
        .reg_bases()
        .first()
        .and_then(|b| (0..rank).find(|&d| b[d] == 1 && (0..rank).all(|e| e == d || b[e] == 0)))
        .unwrap_or(rank.saturating_sub(1))
}
