//! The dot plan (warpgroup form): `dot` on Hopper's warpgroup MMA
//! ([`ExpandOptions::wgmma`](super::ExpandOptions), PTX `wgmma.mma_async` on sm_90a).
//!
//! The program's warps form warpgroups of four; the `M x N` accumulator tile is split
//! into `wg_m x wg_n` warpgroup tiles (along M first, 64 rows at least), each a column
//! of `m64 x n` instruction tiles with `n` the warpgroup tile's width (up to 256), its
//! accumulators in registers ([`LinearLayout::wgmma_accumulator`]). Both operands sit in
//! shared memory in the swizzled layout ([`SwizzledTile`]): `a` K-major, `b` N-major
//! (`imm-trans-b`), so row-major tiles go in as they are, 16-byte chunks at a time,
//! by the pipeline's asynchronous copies or by stores. An operand read from memory
//! contiguous along its first dimension ([`Transposed`]) is stored so instead, and
//! copied so: `a` M-major (`imm-trans-a`, f16 and bf16), `b` K-major. Each K step of 16 issues one
//! `wgmma` per instruction tile of the warpgroup, its operands described by matrix
//! descriptors ([`SmemMatrix`]) whose start moves along K inside a swizzled row (the
//! hardware applies the swizzle to the resulting addresses).
//!
//! tf32 with a row-major `b` runs as `C^T = B^T A^T` ([`WgmmaPlan::swapped`]): `b`'s
//! columns are read from a padded ring into registers as the instruction's `a`
//! ([`WgmmaA::Regs`]), in two register sets a K step, each half its own group, so that
//! a set is loaded while the other's group runs.
//!
//! Ordering: the operands' writers wait for their copies and meet at a barrier
//! (operands stored from registers, and ring slots a load filled with stores, are
//! fenced by their writers with `fence.proxy.async` first: the generic proxy's writes
//! are not the async proxy's); a
//! `wgmma.fence` orders the accumulators' last ordinary writes; the K steps form one
//! group, committed and waited for before anything reads the accumulators or the
//! operands' slots are refilled.

use super::dot::Transposed;
use super::shared_tile::{SharedTile, SwizzledTile};
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Op, Precision};
use crate::ir::{BinaryOp, DType, Inst, StagedLayout};
use crate::lower::expand::dist::Dist;
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg, SmemMatrix, Stmt, WgmmaA, WgmmaShape};

/// How a dot runs on warpgroup MMA.
#[derive(Clone, Debug)]
pub(crate) struct WgmmaPlan {
    pub input: DType,
    /// Warpgroups along M and N.
    pub wg_m: u32,
    pub wg_n: u32,
    /// The swizzle widths of `a` (K-major; M-major where `a_m_major`) and `b` (N-major;
    /// K-major for tf32 or a `b` contiguous along K), in bytes.
    pub a_bytes: u32,
    pub b_bytes: u32,
    /// Whether `b` is stored K-major (transposed): tf32 has no N-major form, and a `b`
    /// contiguous along K in memory is copied 16 bytes at a time so.
    pub b_k_major: bool,
    /// Whether `a` is stored M-major (`imm-trans-a`; f16 and bf16): an `a` contiguous
    /// along M in memory (`x.T`) is copied 16 bytes at a time so.
    pub a_m_major: bool,
    /// The product runs as `C^T = B^T A^T` ([`ExpandOptions::wgmma_register_a`], tf32
    /// with a row-major `b`): `b` is staged padded row-major and each warpgroup reads
    /// its rows of `B^T` into registers as the instruction's `a`
    /// ([`WgmmaShape::a_coord`]); `a` is staged K-major (swizzled `a_bytes`) and read as
    /// the instruction's `b`. `wg_m` and `wg_n` then split N and M (the instruction's M
    /// and N), and the accumulators hold `C^T` in the warpgroup layout, transposed.
    pub swapped: bool,
    pub layout: LinearLayout,
}

impl WgmmaPlan {
    /// The staged layout of operand `operand`.
    pub(crate) fn staged(&self, operand: u8) -> StagedLayout {
        if operand == 1 && self.swapped {
            return StagedLayout::Padded;
        }
        if operand == 0 {
            StagedLayout::Swizzled {
                bytes: self.a_bytes,
                transposed: self.a_m_major,
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
/// rows and whole swizzle blocks of `b`. `transposed`: the operands that come from
/// memory contiguous along their first dimension: they are staged so (`a` M-major, `b`
/// K-major), so that their copies move 16 bytes; where such a plan does not apply,
/// the ordinary form of that operand is used.
pub(crate) fn wgmma_plan(
    opt: &super::ExpandOptions,
    types: (DType, DType, DType),
    precision: Precision,
    mnk: (u32, u32, u32),
    transposed: Transposed,
) -> Option<WgmmaPlan> {
    let t = transposed;
    let mut tries = vec![t];
    for next in [
        Transposed { a: false, ..t },
        Transposed { b: false, ..t },
        Transposed::default(),
    ] {
        if !tries.contains(&next) {
            tries.push(next);
        }
    }
    tries
        .into_iter()
        .find_map(|t| plan_with(opt, types, precision, mnk, t))
}

fn plan_with(
    opt: &super::ExpandOptions,
    (ta, tb, acc): (DType, DType, DType),
    precision: Precision,
    (m, n, k): (u32, u32, u32),
    wanted: Transposed,
) -> Option<WgmmaPlan> {
    let tf32 = opt.wgmma_tf32 && ta == DType::F32 && precision == Precision::Tf32;
    let k_major_wanted = wanted.b;
    // tf32 reads `a` K-major only.
    let a_m_major = wanted.a;
    if tf32 && a_m_major {
        return None;
    }
    if tf32 && !k_major_wanted && opt.wgmma_register_a {
        return swapped_plan(opt, (ta, tb, acc), (m, n, k));
    }
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
    // An M-major `a`'s stored rows are K's, M long (each instruction tile's 64 rows
    // start a whole swizzle block: `m` is a multiple of 64, so the width is 128).
    let a_bytes = SwizzledTile::width_for(if a_m_major { m } else { k } * elem)?;
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
        a_m_major,
        swapped: false,
        layout,
    })
}

/// The plan of a tf32 dot as `C^T = B^T A^T` (see [`WgmmaPlan::swapped`]): the
/// instruction's M is the dot's `n` (64 a warpgroup at least), its N the dot's `m`
/// (8 to 256 a warpgroup), `k` a multiple of 8; warpgroups split `n` first.
fn swapped_plan(
    opt: &super::ExpandOptions,
    (ta, tb, acc): (DType, DType, DType),
    (m, n, k): (u32, u32, u32),
) -> Option<WgmmaPlan> {
    if !opt.wgmma
        || ta != tb
        || acc != DType::F32
        || opt.warp_size != 32
        || !opt.num_warps.is_multiple_of(4)
        || !n.is_multiple_of(WgmmaShape::M)
        || !m.is_multiple_of(8)
        || !k.is_multiple_of(8)
    {
        return None;
    }
    let a_bytes = SwizzledTile::width_for(k * ta.size_bytes() as u32)?;
    let groups = opt.num_warps / 4;
    let (mut wg_m, mut wg_n) = (1u32, 1u32);
    while wg_m * wg_n < groups {
        if n / (wg_m * 2) >= WgmmaShape::M {
            wg_m *= 2;
        } else if (m / (wg_n * 2)).is_multiple_of(8) && m / (wg_n * 2) >= 8 {
            wg_n *= 2;
        } else {
            return None;
        }
    }
    if m / wg_n > 256 {
        return None;
    }
    let layout = LinearLayout::wgmma_accumulator(n, m, wg_m, wg_n, opt.num_warps)
        .ok()?
        .permute(&[1, 0]);
    Some(WgmmaPlan {
        input: ta,
        wg_m,
        wg_n,
        a_bytes,
        b_bytes: 0,
        b_k_major: false,
        a_m_major: false,
        swapped: true,
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
        let SharedTile::Swizzled(za) = tile_a else {
            return Err(Diagnostic::internal("wgmma operand a not swizzled"));
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
        // The instruction's M and N: the dot's, or (swapped) its N and M.
        let (inst_m, inst_n) = if plan.swapped { (n, m) } else { (m, n) };
        let (rows_wg, cols_wg) = (inst_m / plan.wg_m, inst_n / plan.wg_n);
        let tiles_m = rows_wg / WgmmaShape::M;
        let shape = WgmmaShape { input, n: cols_wg };
        self.note(
            inst.span,
            format!(
                "dot {m}x{n}x{k} on warpgroup MMA (wgmma m64n{cols_wg}k{}.{}), {}x{} warpgroup tiles, {}",
                shape.k(),
                shape.input_name(),
                plan.wg_m,
                plan.wg_n,
                if plan.swapped {
                    format!(
                        "as C^T = B^T A^T: b's rows read into registers, a swizzled {} bytes",
                        plan.a_bytes
                    )
                } else {
                    format!(
                        "operands swizzled {}/{} bytes{}{}",
                        plan.a_bytes,
                        plan.b_bytes,
                        if plan.a_m_major { " (a M-major)" } else { "" },
                        if plan.b_k_major { " (b K-major)" } else { "" }
                    )
                }
            ),
        );
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
        let regs = shape.regs() as usize;
        // The groups this dot commits (the swapped form: one a half of the K steps).
        let mut groups = 1;
        if plan.swapped {
            let SharedTile::Strided { stride, .. } = tile_b else {
                return Err(Diagnostic::internal("swapped wgmma's b not padded"));
            };
            groups = self.wgmma_swapped(
                &accs,
                (za, arr_a, a_slot),
                (stride, arr_b, b_slot),
                (shape, tiles_m, rows_wg, cols_wg, plan.wg_m, k),
                zero_acc,
            );
        } else {
            let SharedTile::Swizzled(zb) = tile_b else {
                return Err(Diagnostic::internal("wgmma operand b not swizzled"));
            };
            // Each warpgroup's first row of `a` and first column of `b` (whole 8-row
            // groups and whole column blocks, so no swizzle enters the offsets).
            let (a_first, b_first) = (za.tile_offset(rows_wg, 0), zb.tile_offset(0, cols_wg));
            let (a_off, b_off) = self.warpgroup_offsets(plan.wg_m, a_first, b_first);
            let add = |x: &mut Self, off, slot: Option<crate::thread_ir::Reg>| match slot {
                Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, off, s)),
                None => off,
            };
            let a_base = add(self, a_off, a_slot);
            let b_base = add(self, b_off, b_slot);
            self.emit(Stmt::WgmmaFence);
            for kk in (0..k).step_by(shape.k() as usize) {
                // `b`: rows kk.. of the warpgroup's first column block (N-major), or its
                // first rows at column kk (K-major, tf32).
                let b = if plan.b_k_major {
                    k_major(&zb, arr_b, b_base, 0, kk)
                } else {
                    mn_major(&zb, arr_b, b_base, 0, kk)
                };
                for t in 0..tiles_m {
                    // `a`: row 64t of the warpgroup's rows, column kk (the start inside a
                    // swizzled row, unswizzled: the hardware swizzles the addresses), or
                    // (M-major) row kk at column 64t, a whole block.
                    let a = if plan.a_m_major {
                        mn_major(&za, arr_a, a_base, t * WgmmaShape::M, kk)
                    } else {
                        k_major(&za, arr_a, a_base, t * WgmmaShape::M, kk)
                    };
                    let first = t as usize * regs;
                    self.emit(Stmt::Wgmma {
                        shape,
                        acc: accs[first..first + regs].to_vec(),
                        a: WgmmaA::Shared(a),
                        b,
                        zero_acc: if kk == 0 { zero_acc } else { None },
                    });
                }
            }
        }
        self.emit(Stmt::WgmmaCommit);
        if in_place {
            // This dot's groups stay in flight into the next iteration (the previous
            // iteration's are complete: their operand slots are refilled after this
            // point and the barrier, and the loop's exit waits for the last).
            self.emit(Stmt::WgmmaWait { pending: groups });
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

    /// Each warpgroup's offsets into its two operands, `first_m * gm` and
    /// `first_n * gn`, with `(gm, gn)` its place among `wg_m x wg_n` warpgroups (M
    /// first), computed once at the kernel's start.
    fn warpgroup_offsets(&mut self, wg_m: u32, first_m: u32, first_n: u32) -> (Reg, Reg) {
        let log_wg_m = wg_m.trailing_zeros();
        self.hoist(|x| {
            let c = |x: &mut Self, v: u32| x.int_const(DType::I32, v as i64);
            let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
            let (warp, two) = (x.warp, c(x, 2));
            let group = bin(x, BinaryOp::Shr, warp, two);
            let mask = c(x, wg_m - 1);
            let gm = bin(x, BinaryOp::And, group, mask);
            let sh = c(x, log_wg_m);
            let gn = bin(x, BinaryOp::Shr, group, sh);
            let s = c(x, first_m);
            let m_off = bin(x, BinaryOp::Mul, gm, s);
            let s = c(x, first_n);
            let n_off = bin(x, BinaryOp::Mul, gn, s);
            (m_off, n_off)
        })
    }

    /// The K loop of a swapped warpgroup dot ([`WgmmaPlan::swapped`]): the
    /// instruction's `a` (rows of `B^T`: columns of the row-major `b` tile of `stride`
    /// elements a row) loaded into registers, its `b` the K-major `a` tile. Returns the
    /// groups it commits (all but the last, which the caller commits).
    fn wgmma_swapped(
        &mut self,
        accs: &[Reg],
        (za, arr_a, a_slot): (SwizzledTile, u32, Option<Reg>),
        (stride, arr_b, b_slot): (u32, u32, Option<Reg>),
        (shape, tiles_m, rows_wg, cols_wg, wg_m, k): (WgmmaShape, u32, u32, u32, u32, u32),
        zero_acc: Option<Reg>,
    ) -> u32 {
        let regs = shape.regs() as usize;
        // The warpgroup's first column of `b` (the instruction's M) and first row of `a`
        // (its N).
        let (b_off, a_off) = self.warpgroup_offsets(wg_m, rows_wg, za.tile_offset(cols_wg, 0));
        // The thread's element of `b` for register 0 of the first K step and tile:
        // row q, column 16 (warp % 4) + g (`WgmmaShape::a_coord`).
        let thread = self.hoist(|x| {
            let c = |x: &mut Self, v: u32| x.int_const(DType::I32, v as i64);
            let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
            let (lane, warp) = (x.lane, x.warp);
            let two = c(x, 2);
            let g = bin(x, BinaryOp::Shr, lane, two);
            let three = c(x, 3);
            let q = bin(x, BinaryOp::And, lane, three);
            let wq = bin(x, BinaryOp::And, warp, three);
            let sixteen = c(x, 16);
            let w16 = bin(x, BinaryOp::Mul, wq, sixteen);
            let col = bin(x, BinaryOp::Add, w16, g);
            let st = c(x, stride);
            let row = bin(x, BinaryOp::Mul, q, st);
            let at = bin(x, BinaryOp::Add, row, col);
            bin(x, BinaryOp::Add, at, b_off)
        });
        let add = |x: &mut Self, off, slot: Option<Reg>| match slot {
            Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, off, s)),
            None => off,
        };
        let b_base = add(self, thread, b_slot);
        let a_base = add(self, a_off, a_slot);
        let f32_ty = crate::thread_ir::RegTy {
            dtype: DType::F32,
            lanes: 1,
        };
        // The K steps in two halves, each its own group with its own registers: a
        // half's registers are loaded while the other half's group runs. Before they
        // are loaded again, every group but the latest (the other half's) is complete,
        // so none reading them is in flight (in place, the previous iteration's are).
        let steps: Vec<u32> = (0..k).step_by(shape.k() as usize).collect();
        let halves = if steps.len() >= 2 { 2 } else { 1 };
        for (h, half) in steps.chunks(steps.len() / halves).enumerate() {
            self.emit(Stmt::WgmmaWait {
                pending: (halves - 1) as u32,
            });
            let frags =
                self.wgmma_a_fragments(half, tiles_m, (stride, arr_b, b_base), shape, f32_ty);
            self.emit(Stmt::WgmmaFence);
            let mut frag = frags.into_iter();
            for &kk in half {
                let b = k_major(&za, arr_a, a_base, 0, kk);
                for t in 0..tiles_m {
                    let first = t as usize * regs;
                    self.emit(Stmt::Wgmma {
                        shape,
                        acc: accs[first..first + regs].to_vec(),
                        a: WgmmaA::Regs(frag.next().unwrap_or_default()),
                        b,
                        zero_acc: if kk == 0 { zero_acc } else { None },
                    });
                }
            }
            if h + 1 < halves {
                self.emit(Stmt::WgmmaCommit);
            }
        }
        halves as u32
    }

    /// The instruction's `a` registers for K steps `steps` and `tiles_m` tiles of 64
    /// rows (in that order), loaded from the row-major `b` tile (`stride` elements a
    /// row) of array `arr` at the thread's element `base`.
    fn wgmma_a_fragments(
        &mut self,
        steps: &[u32],
        tiles_m: u32,
        (stride, arr_b, b_base): (u32, u32, Reg),
        shape: WgmmaShape,
        f32_ty: crate::thread_ir::RegTy,
    ) -> Vec<Vec<Reg>> {
        let mut frags = vec![];
        for &kk in steps {
            for t in 0..tiles_m {
                let regs: Vec<Reg> = (0..shape.a_regs())
                    .map(|i| {
                        // Register i: row + 8 (i & 1), column + 4 (i >> 1) of the
                        // instruction's `a`: column, row of `b`.
                        let (r, c) = (8 * (i & 1), 4 * (i >> 1));
                        let off = (kk + c) * stride + t * WgmmaShape::M + r;
                        let o = self.int_const(DType::I32, off as i64);
                        let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, b_base, o));
                        let dst = self.new_reg_ty(f32_ty);
                        self.emit(Stmt::Assign {
                            dst,
                            expr: Expr::SharedLoad { arr: arr_b, index },
                        });
                        dst
                    })
                    .collect();
                frags.push(regs);
            }
        }
        frags
    }
}

/// The K-major matrix of swizzled tile `z` (rows along M or N, K along its columns)
/// from row `row` on at column `kk` (the start inside a swizzled row, unswizzled: the
/// hardware swizzles the addresses), `base` elements into array `arr`.
fn k_major(z: &SwizzledTile, arr: u32, base: Reg, row: u32, kk: u32) -> SmemMatrix {
    let (block, within) = (kk / z.block_cols(), kk % z.block_cols());
    SmemMatrix {
        arr,
        base,
        offset: block * z.rows * z.block_cols() + row * z.block_cols() + within,
        swizzle: z.bytes,
        lbo: 16,
        sbo: 8 * z.bytes,
        mn_major: false,
    }
}

/// The MN-major matrix of swizzled tile `z` (stored rows along K, M or N along its
/// columns) from column `col` (the first of a block) on at row `kk`: blocks of columns
/// lie `lbo` apart, groups of 8 rows `sbo`.
fn mn_major(z: &SwizzledTile, arr: u32, base: Reg, col: u32, kk: u32) -> SmemMatrix {
    SmemMatrix {
        arr,
        base,
        offset: (col / z.block_cols()) * z.rows * z.block_cols() + kk * z.block_cols(),
        swizzle: z.bytes,
        lbo: z.block_bytes(),
        sbo: 8 * z.bytes,
        mn_major: true,
    }
}
