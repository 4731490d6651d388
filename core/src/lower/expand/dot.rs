//! The dot plan (portable FMA form).
//!
//! `acc + a @ b` with `a: [M, K]`, `b: [K, N]`: both operands are written to shared
//! memory (`a` K-major, `[K][M]`; `b` row-major), a barrier, then every thread updates
//! the accumulator registers of its micro-tile: for each `k`, it reads the `a` values of
//! its rows and the `b` values of its columns once (four consecutive ones a vector
//! load where its layout has runs of four) and issues one fused multiply-add per
//! accumulator. The
//! accumulator layout gives each thread a `TM x TN` block (up to 8x8), with lanes along
//! N so that a warp reads consecutive `b` columns (conflict-free) and broadcasts `a`.
//! Products are formed in the accumulator's type: exact for f16 and bf16 inputs into
//! f32.
//!
//! The tensor-core form ([`ExpandOptions::mma`](super::ExpandOptions), PTX): f16/bf16
//! inputs (and f32 inputs at tf32 precision) with f32 accumulators, in the `mma.sync`
//! accumulator layout ([`LinearLayout::mma_accumulator`]). `a` is staged row-major with
//! rows padded by 16 bytes and read with `ldmatrix.x4`, conflict-free: the four
//! registers of a 16x16 tile of 16-bit inputs, or of a 16x8 tile of tf32 inputs (8x4
//! matrices of 32-bit words). `b` is staged
//! row-major with rows padded by 8 elements and read with `ldmatrix.trans` (16-bit
//! inputs: one instruction for the fragments of two 16x8 tiles) or with conflict-free
//! scalar loads (tf32); a 16-bit `b` staged from memory contiguous along K lies K-major
//! (`[N][K]`, rows padded by 16 bytes) and is read with `ldmatrix` without `.trans`. Staging stores are 16 bytes wide where the operand's layout has
//! runs along K or N, reusing the words of wide global loads. Then for each K step of
//! the instruction, each warp loads its fragments and issues one [`Stmt::Mma`] per
//! 16x8 tile of its warp tile.

use super::dist::Dist;
use super::shared_tile::SharedTile;
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Op, Precision, StagedLayout};
use crate::ir::{BinaryOp, DType, Inst};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, MmaKind, Reg, RegTy, Stmt};
use std::collections::BTreeMap;

/// How a dot is computed.
pub(crate) enum DotPlan {
    /// Fused multiply-adds over a blocked accumulator layout.
    Fma(LinearLayout),
    /// Tensor cores, `warps_m x warps_n` warp tiles.
    Mma {
        kind: MmaKind,
        layout: LinearLayout,
        warps_m: u32,
        warps_n: u32,
    },
    /// Cooperative-matrix fragments per subgroup (`dot_coop.rs`).
    Coop(super::dot_coop::CoopTile),
    /// Warpgroup MMA (`dot_wgmma.rs`).
    Wgmma(super::dot_wgmma::WgmmaPlan),
}

impl DotPlan {
    /// The layout of the dot's result in registers (for the cooperative-matrix form,
    /// once read back from its fragments).
    pub(crate) fn layout(&self) -> &LinearLayout {
        match self {
            DotPlan::Fma(l) | DotPlan::Mma { layout: l, .. } => l,
            DotPlan::Coop(t) => &t.layout,
            DotPlan::Wgmma(p) => &p.layout,
        }
    }
}

/// Which of a dot's operands come from memory contiguous along their first dimension
/// (a transposed view): `a` along M (`x.T @ w`), `b` along K (`x @ w.T`). Such an
/// operand is copied 16 bytes at a time along that dimension where the dot's form can
/// read it stored so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Transposed {
    pub a: bool,
    pub b: bool,
}

/// The shared layout a dot of `[m, k] x [k, n]` reads its staged operand `operand`
/// in: swizzled for `wgmma` (MN-major `a` and K-major `b` where `transposed` says
/// they come from memory so), padded row-major for `mma.sync` (`b` K-major where it
/// comes so, 16-bit `a` M-major likewise) and cooperative matrices, the FMA form
/// otherwise.
pub(crate) fn staged_form(
    opt: &super::ExpandOptions,
    types: (DType, DType, DType),
    precision: Precision,
    mnk: (u32, u32, u32),
    operand: u8,
    transposed: Transposed,
) -> StagedLayout {
    if let Some(plan) = super::dot_wgmma::wgmma_plan(opt, types, precision, mnk, transposed) {
        return plan.staged(operand);
    }
    if let Some(kind) = mma_kind(opt, types, precision, mnk) {
        // A 16-bit `b` contiguous along K is stored K-major: copied 16 bytes at a time
        // along K, read by `ldmatrix` without `.trans` (tf32 reads `b` by scalar loads
        // from the row-major form); a 16-bit `a` contiguous along M is stored M-major,
        // read by `ldmatrix.trans`.
        let wanted = if operand == 0 {
            transposed.a
        } else {
            transposed.b
        };
        if wanted && kind.pack() == 2 {
            StagedLayout::PaddedTransposed
        } else {
            StagedLayout::Padded
        }
    } else if super::dot_coop::coop_config(opt, types, precision, mnk).is_some() {
        StagedLayout::Padded
    } else {
        StagedLayout::Fma
    }
}

/// Warps along M and N for an `m x n` tensor-core tile: split the dimension with more
/// 16x8 fragments per warp, as long as a warp keeps at least one fragment.
fn mma_warps(m: u32, n: u32, num_warps: u32) -> (u32, u32) {
    let (mut wm, mut wn) = (1, 1);
    while wm * wn < num_warps {
        let can_m = m / (wm * 2) >= 16;
        let can_n = n / (wn * 2) >= 8;
        if can_m && (!can_n || m / wm / 16 >= n / wn / 8) {
            wm *= 2;
        } else if can_n {
            wn *= 2;
        } else {
            break;
        }
    }
    (wm, wn)
}

/// The tensor-core instruction a dot of `[m, k] x [k, n]` with inputs of `ta` and `tb`,
/// accumulator `acc` and `precision` uses under `opt`; `None` for the FMA form.
pub(crate) fn mma_kind(
    opt: &super::ExpandOptions,
    (ta, tb, acc): (DType, DType, DType),
    precision: Precision,
    (m, n, k): (u32, u32, u32),
) -> Option<MmaKind> {
    let kind = match (ta, precision) {
        (DType::F16, _) => MmaKind::F16M16N8K16,
        (DType::BF16, _) => MmaKind::Bf16M16N8K16,
        (DType::F32, Precision::Tf32) => MmaKind::Tf32M16N8K8,
        _ => return None,
    };
    let (fm, fn_, fk) = kind.shape();
    (opt.mma
        && ta == tb
        && acc == DType::F32
        && opt.warp_size == 32
        && m % fm == 0
        && n % fn_ == 0
        && k % fk == 0)
        .then_some(kind)
}

impl Expander<'_> {
    /// How `inst` (a dot) is computed, and its accumulator layout.
    /// The shared layout the pipeline gave the loads of `v` (a staged load, or a loop's
    /// carried tile whose first value is one), if any.
    pub(crate) fn staged_layout_of(&self, v: crate::ir::Value) -> Option<StagedLayout> {
        if let Some(Op::Load {
            stage: Some(stage), ..
        }) = self.defs.get(&v)
        {
            return Some(stage.layout);
        }
        let mut found = None;
        self.k.walk(&mut |inst| {
            if let Op::For { init, body, .. } = &inst.op {
                // The body's arguments: the induction variable, then the carried values.
                if let Some(i) = body.args.iter().skip(1).position(|a| *a == v) {
                    found = init.get(i).copied();
                }
            }
        });
        match found.and_then(|i| self.defs.get(&i)) {
            Some(Op::Load {
                stage: Some(stage), ..
            }) => Some(stage.layout),
            _ => None,
        }
    }

    pub(crate) fn dot_plan(&self, inst: &Inst) -> Result<DotPlan> {
        let Op::Dot {
            a, b, precision, ..
        } = &inst.op
        else {
            return Err(Diagnostic::internal("dot_plan of a non-dot"));
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let types = (self.dtype(*a), self.dtype(*b), self.dtype(inst.results[0]));
        // Operands the pipeline staged transposed (`a` M-major, `b` K-major: tiles
        // contiguous along their first dimension) keep that plan.
        let staged_transposed = |v| {
            matches!(
                self.staged_layout_of(v),
                Some(StagedLayout::Swizzled {
                    transposed: true,
                    ..
                })
            )
        };
        let transposed = Transposed {
            a: staged_transposed(*a),
            b: staged_transposed(*b),
        };
        if let Some(plan) =
            super::dot_wgmma::wgmma_plan(&self.opt, types, *precision, (m, n, k), transposed)
        {
            return Ok(DotPlan::Wgmma(plan));
        }
        if let Some(kind) = mma_kind(&self.opt, types, *precision, (m, n, k)) {
            let (warps_m, warps_n) = mma_warps(m, n, self.opt.num_warps);
            let layout = LinearLayout::mma_accumulator(m, n, warps_m, warps_n, self.opt.num_warps)
                .map_err(|e| Diagnostic::internal(format!("mma layout: {e}")))?;
            return Ok(DotPlan::Mma {
                kind,
                layout,
                warps_m,
                warps_n,
            });
        }
        if let Some(tile) = self.coop_tile(inst)? {
            return Ok(DotPlan::Coop(tile));
        }
        Ok(DotPlan::Fma(self.dot_layout(m, n)?))
    }

    /// The accumulator layout of an `m x n` dot.
    pub(crate) fn dot_layout(&self, m: u32, n: u32) -> Result<LinearLayout> {
        let threads = self.opt.num_warps * self.opt.warp_size;
        let per_thread = (m * n / threads).max(1);
        // Split the per-thread block as evenly as possible, N-major, up to 8x8.
        let mut tn = 1u32;
        let mut tm = 1u32;
        while tm * tn < per_thread && (tn < 8 || tm < 8) {
            if tn <= tm && tn < 8 && tn * 2 <= n {
                tn *= 2;
            } else if tm < 8 && tm * 2 <= m {
                tm *= 2;
            } else if tn < 8 && tn * 2 <= n {
                tn *= 2;
            } else {
                break;
            }
        }
        let lanes_n = (n / tn).clamp(1, self.opt.warp_size);
        let lanes_m = (self.opt.warp_size / lanes_n).max(1);
        let warps_m = (m / (tm * lanes_m)).clamp(1, self.opt.num_warps);
        let warps_n = (self.opt.num_warps / warps_m).max(1);
        LinearLayout::blocked(
            &[m, n],
            &[tm, tn],
            &[lanes_m, lanes_n],
            &[warps_m, warps_n],
            &[1, 0],
        )
        .map_err(|e| Diagnostic::internal(format!("dot layout {m}x{n}: {e}")))
    }

    /// Fresh accumulator registers of `acc_dt` in `layout`, initialized from `acc`.
    pub(crate) fn accumulators(
        &mut self,
        acc: crate::ir::Value,
        layout: &LinearLayout,
        acc_dt: DType,
    ) -> Result<Vec<Reg>> {
        let init = self.data(acc)?;
        let init = self.in_layout(&init, layout)?;
        Ok(init
            .iter()
            .map(|&r| {
                let d = self.new_reg(acc_dt);
                let r = self.cast_to(r, acc_dt);
                self.emit(Stmt::Assign {
                    dst: d,
                    expr: Expr::Copy(r),
                });
                d
            })
            .collect())
    }

    /// Writes an operand of `shape` to a new shared array in `tile`'s layout.
    fn stage_tile(
        &mut self,
        d: &Dist,
        shape: &[u32],
        tile: SharedTile,
        name: &str,
        dtype: DType,
    ) -> Result<u32> {
        let arr = self.shared_array_aligned(name, dtype, tile.len(shape), tile.align());
        self.stage_into(arr, None, d, shape, tile, dtype)?;
        Ok(arr)
    }

    /// Writes an operand of `shape` to shared array `arr` from element `base` (0 when
    /// `None`) on, in `tile`'s layout.
    pub(crate) fn stage_into(
        &mut self,
        arr: u32,
        base: Option<Reg>,
        d: &Dist,
        shape: &[u32],
        tile: SharedTile,
        dtype: DType,
    ) -> Result<()> {
        let layout = match d {
            Dist::Regs { layout, .. } => layout.clone(),
            Dist::Uniform(_) => self.canonical(shape)?,
        };
        let regs = self.in_layout(d, &layout)?;
        let idx = self.tile_indices(&layout, shape, &tile, base)?;
        // Runs of registers along the contiguous dimension go out as one wide store
        // (padded rows and swizzled chunks keep them aligned); a swizzled tile stored
        // transposed is contiguous along the operand's first dimension, in chunks.
        let width = match tile {
            SharedTile::Swizzled(t) if t.transposed => {
                self.stage_width(&layout, 0, 16 / t.elem, dtype)
            }
            // Stored rows `stride` apart hold runs along the first dimension.
            SharedTile::Strided {
                transpose: true,
                stride,
            } => self.stage_width(&layout, 0, 1 << stride.trailing_zeros(), dtype),
            _ => self.stage_width(&layout, layout.rank() - 1, tile.contiguous(), dtype),
        };
        for (first, group) in regs.chunks(width).enumerate() {
            let index = idx[first * width];
            if width == 1 {
                let value = self.cast_to(group[0], dtype);
                self.emit(Stmt::SharedStore { arr, index, value });
                continue;
            }
            let vector = self.vector_of(group, dtype);
            self.emit(Stmt::SharedStore {
                arr,
                index,
                value: vector,
            });
        }
        Ok(())
    }

    /// The ring and slot of a staged operand (`None` when it is in registers).
    pub(crate) fn staged(&self, v: crate::ir::Value) -> Result<Option<(super::Ring, Reg)>> {
        match self.get(v)? {
            TVal::Staged { ring, slot } => {
                let r = self.rings.get(ring).ok_or_else(|| {
                    Diagnostic::internal(format!("staged operand of unknown ring {ring}"))
                })?;
                Ok(Some((r.clone(), *slot)))
            }
            _ => Ok(None),
        }
    }

    /// The staged operands of a dot (ring and slot, `None` for one in registers),
    /// after the wait for this iteration's copies (leaving the later iterations' in
    /// flight) and a barrier: it makes every thread's copies visible and orders the
    /// previous iteration's reads before the next copies into their slot (or, without
    /// staging, before this iteration's stores).
    #[allow(clippy::type_complexity)]
    pub(super) fn staged_operands(
        &mut self,
        a: crate::ir::Value,
        b: crate::ir::Value,
    ) -> Result<(Option<(super::Ring, Reg)>, Option<(super::Ring, Reg)>)> {
        let (staged_a, staged_b) = (self.staged(a)?, self.staged(b)?);
        let pending = staged_a
            .iter()
            .chain(&staged_b)
            .filter(|(r, _)| r.bars.is_none())
            .map(|(r, _)| r.pending)
            .min();
        if let Some(pending) = pending {
            self.emit(Stmt::AsyncWait { pending });
        }
        // Rings filled by the tensor memory accelerator: each thread waits for its
        // slot's barrier phase (which also makes the copies visible to it).
        for (r, c) in staged_a.iter().chain(&staged_b) {
            if r.bars.is_some() {
                self.tma_wait(r, *c)?;
            }
        }
        self.emit(Stmt::Barrier);
        Ok((staged_a, staged_b))
    }

    /// An operand's shared array and, when staged, the register holding its
    /// slot's first element: staged tiles are read where their copies put them, others
    /// are stored to a new array now, or, where computed before the loop being lowered,
    /// once ahead of it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn dot_operand(
        &mut self,
        v: crate::ir::Value,
        staged: Option<(super::Ring, Reg)>,
        shape: &[u32],
        tile: SharedTile,
        name: &str,
        input: DType,
    ) -> Result<(u32, Option<Reg>)> {
        match staged {
            Some((ring, slot)) => {
                let slot = if ring.bars.is_some() {
                    self.tma_slot_parity(&ring, slot).0
                } else {
                    slot
                };
                let len = self.int_const(DType::I32, ring.slot_len as i64);
                let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, slot, len));
                Ok((ring.arr, Some(base)))
            }
            None => {
                // An operand computed before a loop (attention's `q`) is staged once,
                // ahead of the outermost loop it does not change in, not every trip
                // (not a product kept as fragments: read back here, its registers
                // exist only from here on).
                let outside = self
                    .loops
                    .iter()
                    .find(|l| !l.defined.contains(&v))
                    .filter(|_| {
                        self.opt.stage_invariant_operands_once
                            && !self.materialized_now.contains(&v)
                    });
                let Some(level) = outside.map(|l| l.level) else {
                    let d = self.data(v)?;
                    return Ok((self.stage_tile(&d, shape, tile, name, input)?, None));
                };
                let key = (v, format!("{tile:?}"), input);
                if let Some(&(arr, _)) = self.hoisted_operands.get(&key) {
                    return Ok((arr, None));
                }
                let arr = self.emit_at_level(level, |x| {
                    let d = x.data(v)?;
                    x.stage_tile(&d, shape, tile, name, input)
                })?;
                self.hoisted_operands.insert(key, (arr, level + 1));
                let span = self.span;
                self.note(
                    span,
                    format!(
                        "dot operand {} {}",
                        if name.ends_with("_a") { "a" } else { "b" },
                        super::STAGED_AHEAD_NOTE
                    ),
                );
                Ok((arr, None))
            }
        }
    }

    /// How many consecutive registers of `layout` (a run along dimension `last`) one
    /// shared store may cover where runs of `contiguous` elements stay together: at
    /// most 16 bytes, and only where the wide accesses are enabled.
    fn stage_width(
        &self,
        layout: &LinearLayout,
        last: usize,
        contiguous: u32,
        dtype: DType,
    ) -> usize {
        let max_lanes = self.opt.wide_lanes(dtype);
        if max_lanes < 2 {
            return 1;
        }
        let mut run = 1u32;
        for (i, b) in layout.reg_bases().iter().enumerate() {
            let unit = (0..layout.rank()).all(|d| b[d] == if d == last { 1 << i } else { 0 });
            if !unit {
                break;
            }
            run <<= 1;
        }
        run.min(max_lanes).min(contiguous).max(1) as usize
    }

    /// The tensor-core dot (see the module documentation).
    fn dot_mma(
        &mut self,
        inst: &Inst,
        kind: MmaKind,
        layout: LinearLayout,
        warps_m: u32,
        warps_n: u32,
    ) -> Result<()> {
        let Op::Dot { a, b, acc, .. } = &inst.op else {
            unreachable!()
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let input = kind.input();
        let accs = self.accumulators(*acc, &layout, DType::F32)?;
        // `b` staged K-major by the pipeline (`[N][K]`) is read as it lies; `a` staged
        // M-major (`[K][M]`) through `ldmatrix.trans`.
        let transposed = |v| {
            self.staged_layout_of(v) == Some(StagedLayout::PaddedTransposed) && kind.pack() == 2
        };
        let (a_m_major, b_k_major) = (transposed(*a), transposed(*b));
        let form = |t| {
            if t {
                StagedLayout::PaddedTransposed
            } else {
                StagedLayout::Padded
            }
        };
        let b_form = form(b_k_major);
        let tile_a = SharedTile::of(form(a_m_major), 0, &sa, input);
        let tile_b = SharedTile::of(b_form, 1, &sb, input);
        let (sa_stride, sb_stride) = (tile_a.stride(), tile_b.stride());
        // Operands in registers are stored after the barrier, then another.
        let (staged_a, staged_b) = self.staged_operands(*a, *b)?;
        let in_regs = staged_a.is_none() || staged_b.is_none();
        let (arr_a, a_slot) = self.dot_operand(*a, staged_a, &sa, tile_a, "mma_a", input)?;
        let (arr_b, b_slot) = self.dot_operand(*b, staged_b, &sb, tile_b, "mma_b", input)?;
        if in_regs {
            self.emit(Stmt::Barrier);
        }
        let (wm, wn) = (m / warps_m, n / warps_n);
        let (fm, fn_, fk) = kind.shape();
        let pack = kind.pack();
        self.note(
            inst.span,
            format!(
                "dot {m}x{n}x{k} on tensor cores (mma.sync.{}), {warps_m}x{warps_n} warp tiles",
                kind.name()
            ),
        );
        // Each lane's base index in A and B: row (warp row + g), column t * pack.
        let (a_base, b_base) = self.hoist(|x| {
            let c = |x: &mut Self, v: i64| x.int_const(DType::I32, v);
            let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
            let (lane, warp) = (x.lane, x.warp);
            let two = c(x, 2);
            let g = bin(x, BinaryOp::Shr, lane, two);
            let three = c(x, 3);
            let t = bin(x, BinaryOp::And, lane, three);
            let mask_n = c(x, warps_n as i64 - 1);
            let warp_n = bin(x, BinaryOp::And, warp, mask_n);
            let sh = c(x, warps_n.trailing_zeros() as i64);
            let wsh = bin(x, BinaryOp::Shr, warp, sh);
            let mask_m = c(x, warps_m as i64 - 1);
            let warp_m = bin(x, BinaryOp::And, wsh, mask_m);
            // A: the `ldmatrix` row lane `8i + r` points at.
            let s = c(x, wm as i64);
            let row0 = bin(x, BinaryOp::Mul, warp_m, s);
            // The row and column lane `8i + r` points an `ldmatrix.x4` at, relative to
            // a 16-row tile: row r + 8 (i & 1), column (16 bytes) * (i >> 1).
            let row_elems = 16 / input.size_bytes() as i64;
            // With `rows_first`, matrix `i` is instead row r + 8 (i >> 1), column
            // (16 bytes) * (i & 1): the order of a K-major `b`'s two 16x8 tiles.
            let ldmatrix_lane = |x: &mut Self, rows_first: bool| -> (Reg, Reg) {
                let (three, seven, one, eight) = (c(x, 3), c(x, 7), c(x, 1), c(x, 8));
                let i = bin(x, BinaryOp::Shr, lane, three);
                let r = bin(x, BinaryOp::And, lane, seven);
                let i_lo = bin(x, BinaryOp::And, i, one);
                let i_hi = bin(x, BinaryOp::Shr, i, one);
                let (i_row, i_col) = if rows_first {
                    (i_hi, i_lo)
                } else {
                    (i_lo, i_hi)
                };
                let r8 = bin(x, BinaryOp::Mul, i_row, eight);
                let row = bin(x, BinaryOp::Add, r, r8);
                let w = c(x, row_elems);
                (row, bin(x, BinaryOp::Mul, i_col, w))
            };
            let ldmatrix_row = |x: &mut Self| ldmatrix_lane(x, false);
            // A goes through `ldmatrix` for every input type (tf32: 8x4 matrices of
            // 32-bit words, the m16n8k8 A fragment a0..a3 in one instruction).
            let ab = if a_m_major {
                // M-major (`[K][M]`): lane `8i + r` points at stored row (a `k`)
                // r + 8 (i >> 1), column (an `m`) 8 (i & 1); `.trans` hands each
                // thread the elements of the `[M][K]` fragment.
                let (k, m) = ldmatrix_lane(x, true);
                let m = bin(x, BinaryOp::Add, row0, m);
                let st = c(x, sa_stride as i64);
                let off = bin(x, BinaryOp::Mul, k, st);
                bin(x, BinaryOp::Add, off, m)
            } else {
                let (r, col) = ldmatrix_row(x);
                let row = bin(x, BinaryOp::Add, row0, r);
                let st = c(x, sa_stride as i64);
                let off = bin(x, BinaryOp::Mul, row, st);
                bin(x, BinaryOp::Add, off, col)
            };
            // B (row-major, K x N): the column of the warp's tile, then per lane
            // tf32: row t, column g; 16-bit: the `ldmatrix` row lane `8i + r` points
            // at, row r + 8 (i & 1), column 8 (i >> 1).
            let s = c(x, wn as i64);
            let col0 = bin(x, BinaryOp::Mul, warp_n, s);
            if b_k_major {
                // K-major (`[N][K]`): the stored row (an `n`) lane `8i + r` points at.
                let (r, k) = ldmatrix_lane(x, true);
                let n = bin(x, BinaryOp::Add, col0, r);
                let st = c(x, sb_stride as i64);
                let off = bin(x, BinaryOp::Mul, n, st);
                return (ab, bin(x, BinaryOp::Add, off, k));
            }
            let (row, col) = if pack == 1 {
                (t, bin(x, BinaryOp::Add, col0, g))
            } else {
                let (r, c) = ldmatrix_row(x);
                (r, bin(x, BinaryOp::Add, col0, c))
            };
            let st = c(x, sb_stride as i64);
            let off = bin(x, BinaryOp::Mul, row, st);
            let bb = bin(x, BinaryOp::Add, off, col);
            (ab, bb)
        });
        let add = |x: &mut Self, base: Reg, slot: Option<Reg>| match slot {
            Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, s)),
            None => base,
        };
        let a_base = add(self, a_base, a_slot);
        let b_base = add(self, b_base, b_slot);
        let (tiles_m, tiles_n) = (wm / fm, wn / fn_);
        let frag_ty = RegTy {
            dtype: input,
            lanes: pack as u8,
        };
        let load = |x: &mut Self, arr: u32, base: Reg, off: u32| {
            let o = x.int_const(DType::I32, off as i64);
            let idx = x.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, o));
            let dst = x.new_reg_ty(frag_ty);
            x.emit(Stmt::Assign {
                dst,
                expr: Expr::SharedLoad { arr, index: idx },
            });
            dst
        };
        for kk in (0..k).step_by(fk as usize) {
            let mut a_frags = vec![];
            for mi in 0..tiles_m {
                // One `ldmatrix.x4` gives the four A registers of a 16-row tile:
                // matrices (rows 0-7 | 8-15) x (the first | second 16 bytes of the K
                // step), in a0..a3 order.
                let off = if a_m_major {
                    kk * sa_stride + mi * fm
                } else {
                    mi * fm * sa_stride + kk
                };
                let o = self.int_const(DType::I32, off as i64);
                let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, a_base, o));
                let dst: Vec<Reg> = (0..4).map(|_| self.new_reg_ty(frag_ty)).collect();
                self.emit(Stmt::LdMatrix {
                    dst: dst.clone(),
                    arr: arr_a,
                    index,
                    trans: a_m_major,
                });
                a_frags.push(dst);
            }
            let mut b_frags = vec![];
            if pack == 1 {
                for nj in 0..tiles_n {
                    let regs: Vec<Reg> = (0..2)
                        .map(|i| {
                            let (k0, _) = kind.b_coord(0, i, 0);
                            let off = (kk + k0) * sb_stride + nj * fn_;
                            load(self, arr_b, b_base, off)
                        })
                        .collect();
                    b_frags.push(regs);
                }
            } else {
                // One `ldmatrix.trans` gives the B fragments of two 16x8 tiles (x4),
                // or of the last one (x2); stored K-major, one `ldmatrix` (the
                // fragments are the stored rows as they lie).
                let mut nj = 0;
                while nj < tiles_n {
                    let count = if nj + 1 < tiles_n { 4 } else { 2 };
                    let off = if b_k_major {
                        nj * fn_ * sb_stride + kk
                    } else {
                        kk * sb_stride + nj * fn_
                    };
                    let o = self.int_const(DType::I32, off as i64);
                    let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, b_base, o));
                    let dst: Vec<Reg> = (0..count).map(|_| self.new_reg_ty(frag_ty)).collect();
                    self.emit(Stmt::LdMatrix {
                        dst: dst.clone(),
                        arr: arr_b,
                        index,
                        trans: !b_k_major,
                    });
                    for pair in dst.chunks(2) {
                        b_frags.push(pair.to_vec());
                    }
                    nj += count as u32 / 2;
                }
            }
            for (mi, af) in a_frags.iter().enumerate() {
                for (nj, bf) in b_frags.iter().enumerate() {
                    let first = (mi * tiles_n as usize + nj) * 4;
                    let c: Vec<Reg> = accs[first..first + 4].to_vec();
                    self.emit(Stmt::Mma {
                        kind,
                        d: c.clone(),
                        a: af.clone(),
                        b: bf.clone(),
                        c,
                    });
                }
            }
        }
        self.set(
            inst.results[0],
            TVal::Data(Dist::Regs { layout, regs: accs }),
        );
        Ok(())
    }

    /// Whether the FMA dot may read a thread's coordinates along `dim` of `layout`
    /// four at a time: 32-bit inputs (16-bit ones where wide accesses move them), a
    /// dimension of a multiple of 4, every thread's part of the coordinate a multiple
    /// of 4, and the register parts whole runs of four.
    fn fma_vector_runs(&self, layout: &LinearLayout, dim: usize, dt: DType, extent: u32) -> bool {
        if self.opt.wide_lanes(dt) < 4 {
            return false;
        }
        if !extent.is_multiple_of(4) {
            return false;
        }
        let aligned = |bases: &[Vec<u32>]| bases.iter().all(|b| b[dim].is_multiple_of(4));
        if !aligned(layout.lane_bases()) || !aligned(layout.warp_bases()) {
            return false;
        }
        let coords: std::collections::BTreeSet<u32> = (0..layout.num_regs())
            .map(|r| layout.apply(r, 0, 0)[dim])
            .collect();
        coords
            .iter()
            .all(|c| (c & !3..(c & !3) + 4).all(|x| coords.contains(&x)))
    }

    /// The FMA dot's operand values at one `k`, by register-part coordinate: element
    /// `base + coord` of shared array `arr` for each coordinate in `regs` (its
    /// register), converted to `acc_dt`; four consecutive coordinates a vector load
    /// where `vector`.
    fn fma_operand_reads(
        &mut self,
        arr: u32,
        base: Reg,
        regs: &BTreeMap<u32, Reg>,
        vector: bool,
        dt: DType,
        acc_dt: DType,
    ) -> BTreeMap<u32, Reg> {
        let mut out = BTreeMap::new();
        for (&c, &reg) in regs {
            if vector && c % 4 != 0 {
                continue;
            }
            let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, reg));
            if !vector {
                let v = self.assign(dt, Expr::SharedLoad { arr, index });
                out.insert(c, self.cast_to(v, acc_dt));
                continue;
            }
            let v = self.new_reg_ty(RegTy {
                dtype: dt,
                lanes: 4,
            });
            self.emit(Stmt::Assign {
                dst: v,
                expr: Expr::SharedLoad { arr, index },
            });
            for lane in 0..4u8 {
                let x = self.assign(dt, Expr::Extract { vector: v, lane });
                out.insert(c + lane as u32, self.cast_to(x, acc_dt));
            }
        }
        out
    }

    pub(crate) fn dot(&mut self, inst: &Inst) -> Result<()> {
        let layout = match self.dot_plan(inst)? {
            DotPlan::Mma {
                kind,
                layout,
                warps_m,
                warps_n,
            } => return self.dot_mma(inst, kind, layout, warps_m, warps_n),
            DotPlan::Coop(tile) => return self.dot_coop(inst, tile),
            DotPlan::Wgmma(plan) => return self.dot_wgmma(inst, plan),
            DotPlan::Fma(layout) => layout,
        };
        let Op::Dot { a, b, acc, .. } = &inst.op else {
            unreachable!()
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let (ta, tb) = (self.dtype(*a), self.dtype(*b));
        let acc_dt = self.dtype(inst.results[0]);
        let per_thread = layout.num_regs();
        self.note(
            inst.span,
            format!("dot {m}x{n}x{k} as FMAs, {per_thread} accumulators a thread"),
        );
        // Accumulator registers, updated in place by the k loop.
        let accs = self.accumulators(*acc, &layout, acc_dt)?;
        // `a` is staged K-major (`[k][m]`), `b` row-major (`[k][n]`), so that a thread's
        // rows of `a` and columns of `b` at one `k` are consecutive elements: read four
        // at a time where the layout gives a thread runs of four. (No padding: it would
        // take the 64x64x32 f32 tile past WebGPU's default 16 KiB of workgroup memory.)
        // Operands in registers of 16-bit floats into f32 are converted as they are
        // stored (exact), so that the loop reads f32 words four at a time.
        let (staged_a, staged_b) = self.staged_operands(*a, *b)?;
        let widen = |staged: bool, t: DType| {
            if !staged && t.is_float() && t.size_bytes() == 2 && acc_dt == DType::F32 {
                DType::F32
            } else {
                t
            }
        };
        let (ta, tb) = (widen(staged_a.is_some(), ta), widen(staged_b.is_some(), tb));
        let vec_a = self.fma_vector_runs(&layout, 0, ta, m);
        let vec_b = self.fma_vector_runs(&layout, 1, tb, n);
        let (la, lb) = (
            SharedTile::of(StagedLayout::Fma, 0, &sa, ta),
            SharedTile::of(StagedLayout::Fma, 1, &sb, tb),
        );
        let in_regs = staged_a.is_none() || staged_b.is_none();
        let (arr_a, a_slot) = self.dot_operand(*a, staged_a, &sa, la, "dot_a", ta)?;
        let (arr_b, b_slot) = self.dot_operand(*b, staged_b, &sb, lb, "dot_b", tb)?;
        if in_regs {
            self.emit(Stmt::Barrier);
        }
        let a_stride = la.stride();
        // Rows and columns of this thread's registers; registers sharing a register-part
        // coordinate share the same row (column) register.
        let rows = self.coordinates(&layout, 0, 0)?;
        let cols = self.coordinates(&layout, 1, 0)?;
        let n_regs = layout.num_regs();
        let mut row_of: BTreeMap<u32, Reg> = BTreeMap::new();
        let mut col_of: BTreeMap<u32, Reg> = BTreeMap::new();
        for r in 0..n_regs {
            let c = layout.apply(r, 0, 0);
            row_of.entry(c[0]).or_insert(rows[r as usize]);
            col_of.entry(c[1]).or_insert(cols[r as usize]);
        }
        let first_reg_of_dup: Vec<bool> = {
            let mut seen = std::collections::HashSet::new();
            (0..n_regs)
                .map(|r| seen.insert(layout.apply(r, 0, 0)))
                .collect()
        };
        let (zero, one, kend) = (
            self.int_const(DType::I32, 0),
            self.int_const(DType::I32, 1),
            self.int_const(DType::I32, k as i64),
        );
        let iv = self.new_reg(DType::I32);
        self.open();
        let ac = self.int_const(DType::I32, a_stride as i64);
        let a_row = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, iv, ac));
        let nc = self.int_const(DType::I32, lb.stride() as i64);
        let b_row = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, iv, nc));
        let slot = |x: &mut Self, row: Reg, slot: Option<Reg>| match slot {
            Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, row, s)),
            None => row,
        };
        let a_row = slot(self, a_row, a_slot);
        let b_row = slot(self, b_row, b_slot);
        let a_val = self.fma_operand_reads(arr_a, a_row, &row_of, vec_a, ta, acc_dt);
        let b_val = self.fma_operand_reads(arr_b, b_row, &col_of, vec_b, tb, acc_dt);
        for r in 0..n_regs {
            if !first_reg_of_dup[r as usize] {
                continue;
            }
            let c = layout.apply(r, 0, 0);
            let (x, y) = (a_val[&c[0]], b_val[&c[1]]);
            let acc = accs[r as usize];
            self.emit(Stmt::Assign {
                dst: acc,
                expr: Expr::Fma(x, y, acc),
            });
        }
        let body = self.close();
        self.emit(Stmt::For {
            iv,
            lower: zero,
            upper: kend,
            step: one,
            body,
        });
        // Replicated registers copy their first instance.
        let mut out = accs.clone();
        let mut first_of: std::collections::HashMap<Vec<u32>, Reg> = Default::default();
        for r in 0..n_regs {
            let c = layout.apply(r, 0, 0);
            let e = *first_of.entry(c).or_insert(accs[r as usize]);
            out[r as usize] = e;
        }
        self.set(
            inst.results[0],
            TVal::Data(Dist::Regs { layout, regs: out }),
        );
        Ok(())
    }
}
