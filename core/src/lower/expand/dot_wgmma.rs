//! The dot plan (warpgroup form): `dot` on Hopper's warpgroup MMA
//! ([`ExpandOptions::wgmma`](super::ExpandOptions), PTX `wgmma.mma_async` on sm_90a).
//!
//! The program's warps form warpgroups of four; the `M x N` accumulator tile is split
//! into `wg_m x wg_n` warpgroup tiles (along M first, 64 rows at least), each a column
//! of `m64 x n` instruction tiles with `n` the warpgroup tile's width (up to 256), its
//! accumulators in registers ([`LinearLayout::wgmma_accumulator`]). Both operands sit in
//! shared memory in the swizzled layout ([`SwizzledTile`]): `a` K-major, `b` N-major
//! (`imm-trans-b`), so row-major tiles go in as they are, 16-byte chunks at a time,
//! by the pipeline's asynchronous copies or by stores. Each K step of 16 issues one
//! `wgmma` per instruction tile of the warpgroup, its operands described by matrix
//! descriptors ([`SmemMatrix`]) whose start moves along K inside a swizzled row (the
//! hardware applies the swizzle to the resulting addresses).
//!
//! Ordering: the operands' writers wait for their copies and meet at a barrier
//! (operands stored from registers, and ring slots a load filled with stores, are
//! fenced by their writers with `fence.proxy.async` first: the generic proxy's writes
//! are not the async proxy's); a
//! `wgmma.fence` orders the accumulators' last ordinary writes; the K steps form one
//! group, committed and waited for before anything reads the accumulators or the
//! operands' slots are refilled.

use super::shared_tile::{SharedTile, SwizzledTile};
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Op, Precision};
use crate::ir::{BinaryOp, DType, Inst, StagedLayout};
use crate::lower::expand::dist::Dist;
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, SmemMatrix, Stmt, WgmmaShape};

/// How a dot runs on warpgroup MMA.
#[derive(Clone, Debug)]
pub(crate) struct WgmmaPlan {
    pub input: DType,
    /// Warpgroups along M and N.
    pub wg_m: u32,
    pub wg_n: u32,
    /// The swizzle widths of `a` (K-major) and `b` (N-major; K-major for tf32 or a `b`
    /// contiguous along K), in bytes.
    pub a_bytes: u32,
    pub b_bytes: u32,
    /// Whether `b` is stored K-major (transposed): tf32 has no N-major form, and a `b`
    /// contiguous along K in memory is copied 16 bytes at a time so.
    pub b_k_major: bool,
    pub layout: LinearLayout,
}

impl WgmmaPlan {
    /// The staged layout of operand `operand`.
    pub(crate) fn staged(&self, operand: u8) -> StagedLayout {
        if operand == 0 {
            StagedLayout::Swizzled {
                bytes: self.a_bytes,
                transposed: false,
            }
        } else {
            StagedLayout::Swizzled {
                bytes: self.b_bytes,
                transposed: self.b_k_major,
            }
        }
    }
}

/// The warpgroup plan for a dot of `[m, k] x [k, n]` with inputs `ta`, `tb` and
/// accumulator `acc` under `opt`, or `None` where it does not apply: f16 or bf16 inputs
/// (or f32 at tf32 precision) into f32, whole warpgroups, `m` a multiple of 64, `k`
/// of 16 (8 for tf32) and `n` of 16, and every warpgroup given a tile of at least 64
/// rows and whole swizzle blocks of `b`. `b_k_major`: `b` comes from memory contiguous
/// along K (a transposed view): it is staged K-major, so that its copies move 16 bytes
/// (where that plan does not apply, the N-major one is used).
pub(crate) fn wgmma_plan(
    opt: &super::ExpandOptions,
    types: (DType, DType, DType),
    precision: Precision,
    mnk: (u32, u32, u32),
    b_k_major: bool,
) -> Option<WgmmaPlan> {
    let plan = |k_major| plan_with(opt, types, precision, mnk, k_major);
    if b_k_major {
        plan(true).or_else(|| plan(false))
    } else {
        plan(false)
    }
}

fn plan_with(
    opt: &super::ExpandOptions,
    (ta, tb, acc): (DType, DType, DType),
    precision: Precision,
    (m, n, k): (u32, u32, u32),
    k_major_wanted: bool,
) -> Option<WgmmaPlan> {
    let tf32 = opt.wgmma_tf32 && ta == DType::F32 && precision == Precision::Tf32;
    // A tf32 `b` not contiguous along K is transposed through registers, its loads
    // waited for a ring load later (`memory.rs`): a K step of a smaller tile than
    // 128x256 does not cover them, and `mma.sync` is faster there (H200, run 59:
    // 64x64 0.33x against 0.68x, 128x128 0.46x; 128x256 0.64x and 256x128 0.69x
    // against 0.53x).
    if tf32 && !k_major_wanted && m * n < 128 * 256 {
        return None;
    }
    let input_ok =
        (matches!(ta, DType::F16 | DType::BF16) || tf32) && ta == tb && acc == DType::F32;
    if !opt.wgmma || !input_ok || opt.warp_size != 32 || !opt.num_warps.is_multiple_of(4) {
        return None;
    }
    let shape_k = WgmmaShape { input: ta, n: 8 }.k();
    if !m.is_multiple_of(WgmmaShape::M) || !k.is_multiple_of(shape_k) || !n.is_multiple_of(16) {
        return None;
    }
    let elem = ta.size_bytes() as u32;
    let a_bytes = SwizzledTile::width_for(k * elem)?;
    // tf32 reads `b` K-major (as does a `b` contiguous along K): its stored rows are
    // N's, K long.
    let b_k_major = tf32 || k_major_wanted;
    let b_bytes = SwizzledTile::width_for(if b_k_major { k } else { n } * elem)?;
    let groups = opt.num_warps / 4;
    let (mut wg_m, mut wg_n) = (1u32, 1u32);
    while wg_m * wg_n < groups {
        let half_n = n / (wg_n * 2);
        if m / (wg_m * 2) >= WgmmaShape::M {
            wg_m *= 2;
        } else if half_n >= 16 && half_n.is_multiple_of(if b_k_major { 8 } else { b_bytes / elem })
        {
            wg_n *= 2;
        } else {
            return None;
        }
    }
    if n / wg_n > 256 {
        return None;
    }
    let layout = LinearLayout::wgmma_accumulator(m, n, wg_m, wg_n, opt.num_warps).ok()?;
    Some(WgmmaPlan {
        input: ta,
        wg_m,
        wg_n,
        a_bytes,
        b_bytes,
        b_k_major,
        layout,
    })
}

impl Expander<'_> {
    /// The warpgroup dot (see the module documentation).
    pub(crate) fn dot_wgmma(&mut self, inst: &Inst, plan: WgmmaPlan) -> Result<()> {
        let Op::Dot { a, b, acc, .. } = &inst.op else {
            return Err(Diagnostic::internal("dot_wgmma of a non-dot"));
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let input = plan.input;
        let tile_a = SharedTile::of(plan.staged(0), 0, &sa, input);
        let tile_b = SharedTile::of(plan.staged(1), 1, &sb, input);
        let (SharedTile::Swizzled(za), SharedTile::Swizzled(zb)) = (tile_a, tile_b) else {
            return Err(Diagnostic::internal("wgmma operands not swizzled"));
        };
        // In place: a loop's carried accumulator only this dot uses, operands in rings.
        let (ring_a, ring_b) = (self.staged(*a)?, self.staged(*b)?);
        let slack = ring_a.iter().chain(&ring_b).all(|(r, _)| r.slack);
        let in_place = self.in_place_dots.contains(&inst.results[0])
            && ring_a.is_some()
            && ring_b.is_some()
            && matches!(self.get(*acc)?, TVal::Data(Dist::Regs { layout, .. }) if *layout == plan.layout);
        let accs = match (in_place, self.get(*acc)?) {
            (true, TVal::Data(Dist::Regs { regs, .. })) => regs.clone(),
            _ => self.accumulators(*acc, &plan.layout, DType::F32)?,
        };
        if in_place {
            self.awaiting_in_place = false;
        }
        // Rings filled by `cp.async` are visible to `wgmma` after the wait and the
        // barrier (a slot filled by stores was fenced by its writers).
        let (staged_a, staged_b) = self.staged_operands(*a, *b)?;
        let in_regs = staged_a.is_none() || staged_b.is_none();
        let (arr_a, a_slot) = self.dot_operand(*a, staged_a, &sa, tile_a, "wgmma_a", input)?;
        let (arr_b, b_slot) = self.dot_operand(*b, staged_b, &sb, tile_b, "wgmma_b", input)?;
        if in_regs {
            self.emit(Stmt::FenceProxyAsync);
            self.emit(Stmt::Barrier);
        }
        let (rows_wg, cols_wg) = (m / plan.wg_m, n / plan.wg_n);
        let tiles_m = rows_wg / WgmmaShape::M;
        let shape = WgmmaShape { input, n: cols_wg };
        self.note(
            inst.span,
            format!(
                "dot {m}x{n}x{k} on warpgroup MMA (wgmma m64n{cols_wg}k{}.{}), {}x{} warpgroup tiles, operands swizzled {}/{} bytes{}",
                shape.k(),
                shape.input_name(),
                plan.wg_m,
                plan.wg_n,
                plan.a_bytes,
                plan.b_bytes,
                if plan.b_k_major { " (b K-major)" } else { "" }
            ),
        );
        // Each warpgroup's first row of `a` and first column of `b` (whole 8-row
        // groups and whole column blocks, so no swizzle enters the offsets).
        let (a_first, b_first) = (za.tile_offset(rows_wg, 0), zb.tile_offset(0, cols_wg));
        let (wg_m, log_wg_m) = (plan.wg_m, plan.wg_m.trailing_zeros());
        let (a_off, b_off) = self.hoist(|x| {
            let c = |x: &mut Self, v: u32| x.int_const(DType::I32, v as i64);
            let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
            let (warp, two) = (x.warp, c(x, 2));
            let group = bin(x, BinaryOp::Shr, warp, two);
            let mask = c(x, wg_m - 1);
            let gm = bin(x, BinaryOp::And, group, mask);
            let sh = c(x, log_wg_m);
            let gn = bin(x, BinaryOp::Shr, group, sh);
            let s = c(x, a_first);
            let a_off = bin(x, BinaryOp::Mul, gm, s);
            let s = c(x, b_first);
            let b_off = bin(x, BinaryOp::Mul, gn, s);
            (a_off, b_off)
        });
        let add = |x: &mut Self, off, slot: Option<crate::thread_ir::Reg>| match slot {
            Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, off, s)),
            None => off,
        };
        let a_base = add(self, a_off, a_slot);
        let b_base = add(self, b_off, b_slot);
        let regs = shape.regs() as usize;
        // A reset accumulator (a flattened loop's new tile): the first K step ignores
        // the registers where the condition holds.
        let zero_acc = match self.wgmma_resets.get(acc) {
            Some(c) => match self.data(*c)? {
                Dist::Uniform(r) => Some(r),
                _ => {
                    return Err(Diagnostic::internal(
                        "wgmma reset condition is not a scalar",
                    ))
                }
            },
            None => None,
        };
        self.emit(Stmt::WgmmaFence);
        for kk in (0..k).step_by(shape.k() as usize) {
            // `b`: rows kk.. of the warpgroup's first column block (N-major), or its
            // first rows at column kk (K-major, tf32).
            let b = if plan.b_k_major {
                let (block, within) = (kk / zb.block_cols(), kk % zb.block_cols());
                SmemMatrix {
                    arr: arr_b,
                    base: b_base,
                    offset: block * zb.rows * zb.block_cols() + within,
                    swizzle: zb.bytes,
                    lbo: 16,
                    sbo: 8 * zb.bytes,
                    mn_major: false,
                }
            } else {
                SmemMatrix {
                    arr: arr_b,
                    base: b_base,
                    offset: kk * zb.block_cols(),
                    swizzle: zb.bytes,
                    lbo: zb.block_bytes(),
                    sbo: 8 * zb.bytes,
                    mn_major: true,
                }
            };
            for t in 0..tiles_m {
                // `a`: row 64t of the warpgroup's rows, column kk (the start inside a
                // swizzled row, unswizzled: the hardware swizzles the addresses).
                let (block, within) = (kk / za.block_cols(), kk % za.block_cols());
                let a = SmemMatrix {
                    arr: arr_a,
                    base: a_base,
                    offset: block * za.rows * za.block_cols()
                        + t * WgmmaShape::M * za.block_cols()
                        + within,
                    swizzle: za.bytes,
                    lbo: 16,
                    sbo: 8 * za.bytes,
                    mn_major: false,
                };
                let first = t as usize * regs;
                self.emit(Stmt::Wgmma {
                    shape,
                    acc: accs[first..first + regs].to_vec(),
                    a,
                    b,
                    zero_acc: if kk == 0 { zero_acc } else { None },
                });
            }
        }
        self.emit(Stmt::WgmmaCommit);
        if in_place {
            // This group stays in flight into the next iteration (the previous one
            // is complete: its operand slots are refilled after this point and the
            // barrier, and the loop's exit waits for the last).
            self.emit(Stmt::WgmmaWait { pending: 1 });
            // A warpgroup's wait covers its own groups only: the slot the next copies
            // refill may still be read by another warpgroup's previous group until
            // every warpgroup has passed its wait. With a slot to spare, the copies
            // refill the slot of two iterations before, which every warpgroup's wait
            // completed before this iteration's first barrier.
            if !slack {
                self.emit(Stmt::Barrier);
            }
            self.wgmma_in_flight = true;
        } else {
            self.emit(Stmt::WgmmaWait { pending: 0 });
            self.wgmma_in_flight = false;
        }
        self.set(
            inst.results[0],
            TVal::Data(Dist::Regs {
                layout: plan.layout,
                regs: accs,
            }),
        );
        Ok(())
    }
}
