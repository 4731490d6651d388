//! The dot plan (cooperative-matrix form): `dot` on the matrix units of a device that
//! offers cooperative matrices ([`ExpandOptions::coop_matrix`](super::ExpandOptions),
//! WGSL `coop_mat16x16` through `wgpu_cooperative_matrix`).
//!
//! The accumulator tile `M x N` is split into `warps_m x warps_n` warp tiles, as the
//! `mma.sync` form splits it; each subgroup (of exactly 32 threads, numbered by
//! `Special::SubgroupId`) owns the `size x size` fragments of its warp tile and keeps
//! them across the K loop as fragment variables ([`TVal::Frags`], carried by loops
//! like registers). Both operands are staged row-major in shared memory, padded as for
//! tensor cores ([`super::shared_tile::SharedTile`]); for each K step of `size`, a subgroup
//! loads the A fragments of its rows and the B fragments of its columns once and issues
//! one multiply-add per accumulator fragment.
//!
//! Fragments cannot be read element by element. Where the program uses the
//! accumulator otherwise (an epilogue, a store, a rescale), the fragments go through a
//! shared scratch array to the threads, in rounds of a few fragments per subgroup, into
//! [`LinearLayout::coop_accumulator`]: subgroup `s` stores to slot `s`, and thread `t`
//! reads slot `t / 32`. Which threads form a subgroup is not known, but the layout
//! only relates a thread to a slot, so it holds for any grouping. Accumulators that
//! start as registers (other than zeros) go the other way.

use super::dist::Dist;
use super::{CoopConfig, Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Op, Precision};
use crate::ir::{BinaryOp, DType, Inst, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Frag, FragRole, FragTy, Reg, Special, Stmt};

/// How a cooperative-matrix dot tiles its accumulator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CoopTile {
    pub m: u32,
    pub n: u32,
    pub config: CoopConfig,
    pub warps_m: u32,
    pub warps_n: u32,
    pub layout: LinearLayout,
}

impl CoopTile {
    /// Fragments along M and N of one warp tile.
    fn tiles(&self) -> (u32, u32) {
        let s = self.config.size;
        (self.m / self.warps_m / s, self.n / self.warps_n / s)
    }

    fn frag_ty(&self, role: FragRole) -> FragTy {
        FragTy {
            role,
            dtype: if role == FragRole::C {
                self.config.acc
            } else {
                self.config.input
            },
            size: self.config.size,
        }
    }
}

/// An accumulator held as fragments: `frags[mi * tiles_n + nj]` is fragment `(mi, nj)`
/// of each subgroup's warp tile.
#[derive(Clone, Debug)]
pub(crate) struct CoopAcc {
    pub frags: Vec<Frag>,
    pub tile: CoopTile,
}

/// Warps along M and N for an `m x n` tile of `size` fragments: split the dimension
/// with more fragments per warp, as long as a warp keeps at least one.
fn coop_warps(m: u32, n: u32, size: u32, num_warps: u32) -> (u32, u32) {
    let (mut wm, mut wn) = (1, 1);
    while wm * wn < num_warps {
        let can_m = m / (wm * 2) >= size;
        let can_n = n / (wn * 2) >= size;
        if can_m && (!can_n || m / wm >= n / wn) {
            wm *= 2;
        } else if can_n {
            wn *= 2;
        } else {
            break;
        }
    }
    (wm, wn)
}

/// The cooperative-matrix configuration a dot of `[m, k] x [k, n]` with inputs of
/// `ta`, `tb` and accumulator `acc` uses under `opt` (the largest fragments that
/// divide the tile), or `None`. Products of the matrix units are exact for f16 inputs
/// and f32 ones alike, so any `precision` is honoured.
pub(crate) fn coop_config(
    opt: &super::ExpandOptions,
    (ta, tb, acc): (DType, DType, DType),
    _precision: Precision,
    (m, n, k): (u32, u32, u32),
) -> Option<CoopConfig> {
    if opt.warp_size != 32 || ta != tb {
        return None;
    }
    opt.coop_matrix
        .iter()
        .filter(|c| {
            c.input == ta
                && c.acc == acc
                && c.size.is_power_of_two()
                && c.size * c.size >= 32
                && m % c.size == 0
                && n % c.size == 0
                && k % c.size == 0
        })
        .max_by_key(|c| c.size)
        .copied()
}

impl Expander<'_> {
    /// The loads that feed a cooperative-matrix dot's operands from memory contiguous
    /// along their first dimension (`a` along M: `x.T @ w`; `b` along K: `x @ w.T`): the
    /// operand itself, or where it is carried by a loop (the pipeline's register
    /// prefetch), its initial and yielded values when both are such loads. They load in
    /// runs along that dimension, coalesced, where the canonical layout reads one
    /// element a thread per strided address.
    pub(crate) fn transposed_operand_loads(&self) -> std::collections::HashSet<Value> {
        let mut out = std::collections::HashSet::new();
        if self.opt.coop_matrix.is_empty() {
            return out;
        }
        let along_first = |v: Value| match self.defs.get(&v) {
            Some(Op::Load {
                ptr, stage: None, ..
            }) => self.contiguous_along_first(*ptr, self.dtype(v)),
            _ => false,
        };
        // Loop-carried values: body argument -> (initial value, yielded value).
        let mut carried = std::collections::HashMap::new();
        self.k.walk(&mut |inst| {
            if let Op::For { init, body, .. } = &inst.op {
                let yields = match body.insts.last().map(|i| &i.op) {
                    Some(Op::Yield(vals)) => vals.clone(),
                    _ => vec![],
                };
                for (i, arg) in body.args.iter().skip(1).enumerate() {
                    if let (Some(&a), Some(&y)) = (init.get(i), yields.get(i)) {
                        carried.insert(*arg, (a, y));
                    }
                }
            }
        });
        self.k.walk(&mut |inst| {
            let Op::Dot {
                a, b, precision, ..
            } = &inst.op
            else {
                return;
            };
            let (sa, sb) = (self.shape(*a), self.shape(*b));
            let types = (self.dtype(*a), self.dtype(*b), self.dtype(inst.results[0]));
            if coop_config(&self.opt, types, *precision, (sa[0], sb[1], sa[1])).is_none() {
                return;
            }
            for operand in [*a, *b] {
                if along_first(operand) {
                    out.insert(operand);
                } else if let Some(&(init, yielded)) = carried.get(&operand) {
                    if along_first(init) && along_first(yielded) {
                        out.insert(init);
                        out.insert(yielded);
                    }
                }
            }
        });
        out
    }

    /// The cooperative-matrix tiling of `inst` (a dot), if it takes that form.
    pub(crate) fn coop_tile(&self, inst: &Inst) -> Result<Option<CoopTile>> {
        let Op::Dot {
            a, b, precision, ..
        } = &inst.op
        else {
            return Ok(None);
        };
        // Not inside an `if` (see `if_op`): such a dot takes another form.
        if self.if_depth > 0 {
            return Ok(None);
        }
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let types = (self.dtype(*a), self.dtype(*b), self.dtype(inst.results[0]));
        let Some(config) = coop_config(&self.opt, types, *precision, (m, n, k)) else {
            return Ok(None);
        };
        let (warps_m, warps_n) = coop_warps(m, n, config.size, self.opt.num_warps);
        let layout = LinearLayout::coop_accumulator(
            m,
            n,
            config.size,
            (warps_m, warps_n),
            self.opt.num_warps,
        )
        .map_err(|e| Diagnostic::internal(format!("cooperative-matrix layout: {e}")))?;
        Ok(Some(CoopTile {
            m,
            n,
            config,
            warps_m,
            warps_n,
            layout,
        }))
    }

    fn new_frag(&mut self, ty: FragTy) -> Frag {
        self.out.frags.push(ty);
        Frag(self.out.frags.len() as u32 - 1)
    }

    /// Fresh accumulator fragments of `tile`.
    pub(crate) fn fresh_frags(&mut self, tile: &CoopTile) -> CoopAcc {
        let (tm, tn) = tile.tiles();
        let ty = tile.frag_ty(FragRole::C);
        CoopAcc {
            frags: (0..tm * tn).map(|_| self.new_frag(ty)).collect(),
            tile: tile.clone(),
        }
    }

    /// Whether tile value `v` is zeros (a splat of the constant 0).
    pub(crate) fn is_zero_tile(&self, v: Value) -> bool {
        crate::lower::pipeline::is_zero(&self.defs, v)
    }

    /// Sets `dst`'s fragments to `v`: zeros without memory traffic, fragments by
    /// copies, registers through the scratch array.
    pub(crate) fn store_frags(&mut self, dst: &CoopAcc, v: &TVal, zero: bool) -> Result<()> {
        if zero {
            for &f in &dst.frags {
                self.emit(Stmt::CoopZero { dst: f });
            }
            return Ok(());
        }
        match v {
            TVal::Frags(src) if src.tile == dst.tile => {
                for (&d, &s) in dst.frags.iter().zip(&src.frags) {
                    self.emit(Stmt::CoopCopy { dst: d, src: s });
                }
                Ok(())
            }
            TVal::Frags(src) => {
                let d = self.materialize(src)?;
                self.frags_from_regs(dst, &d)
            }
            TVal::Data(d) => self.frags_from_regs(dst, d),
            _ => Err(Diagnostic::internal(
                "a cooperative-matrix accumulator from a pointer",
            )),
        }
    }

    /// The scratch array for `tile`'s fragments and how many fragments per subgroup a
    /// round moves.
    fn coop_scratch(&mut self, tile: &CoopTile) -> (u32, u32) {
        let (tm, tn) = tile.tiles();
        let s = tile.config.size;
        let dt = tile.config.acc;
        let per_frag = self.opt.num_warps * s * s * dt.size_bytes() as u32;
        let mut per_round = tm * tn;
        while per_round > 1 && per_round * per_frag > self.opt.coop_scratch_bytes {
            per_round /= 2;
        }
        let key = (dt, s, per_round);
        if let Some(&arr) = self.coop_scratch.get(&key) {
            return (arr, per_round);
        }
        let arr = self.shared_array("coop_c", dt, self.opt.num_warps * per_round * s * s);
        self.coop_scratch.insert(key, arr);
        (arr, per_round)
    }

    /// `(subgroup slot base, thread slot base)` in the scratch array: the first element
    /// of subgroup `SubgroupId`'s slot, and of thread `tid`'s own elements in the slot
    /// of warp `tid / 32` (lane `l` holds elements `l * per_lane..` of a fragment).
    fn scratch_bases(&mut self, slot: u32, per_lane: u32) -> (Reg, Reg) {
        self.hoist(|x| {
            let sg = x.assign(DType::I32, Expr::Special(Special::SubgroupId));
            let c = x.int_const(DType::I32, slot as i64);
            let sg_base = x.assign(DType::I32, Expr::Binary(BinaryOp::Mul, sg, c));
            let (lane, warp) = (x.lane, x.warp);
            let w = x.assign(DType::I32, Expr::Binary(BinaryOp::Mul, warp, c));
            let pl = x.int_const(DType::I32, per_lane as i64);
            let l = x.assign(DType::I32, Expr::Binary(BinaryOp::Mul, lane, pl));
            let t_base = x.assign(DType::I32, Expr::Binary(BinaryOp::Add, w, l));
            (sg_base, t_base)
        })
    }

    /// The accumulator's values in registers of [`CoopTile::layout`].
    pub(crate) fn materialize(&mut self, acc: &CoopAcc) -> Result<Dist> {
        let tile = &acc.tile;
        let s = tile.config.size;
        let dt = tile.config.acc;
        let fe = s * s;
        let per_lane = fe / 32;
        let (arr, per_round) = self.coop_scratch(tile);
        let (sg_base, t_base) = self.scratch_bases(per_round * fe, per_lane);
        let mut regs = vec![Reg(0); acc.frags.len() * per_lane as usize];
        for (round, frags) in acc.frags.chunks(per_round as usize).enumerate() {
            for (f, &frag) in frags.iter().enumerate() {
                let o = self.int_const(DType::I32, (f as u32 * fe) as i64);
                let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, sg_base, o));
                self.emit(Stmt::CoopStore {
                    src: frag,
                    arr,
                    index,
                    stride: s,
                });
            }
            self.emit(Stmt::Barrier);
            for f in 0..frags.len() {
                let frag = round * per_round as usize + f;
                for e in 0..per_lane {
                    let o = self.int_const(DType::I32, (f as u32 * fe + e) as i64);
                    let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, t_base, o));
                    regs[frag * per_lane as usize + e as usize] =
                        self.assign(dt, Expr::SharedLoad { arr, index });
                }
            }
            // The next round (or a later use of the scratch) overwrites it.
            self.emit(Stmt::Barrier);
        }
        Ok(Dist::Regs {
            layout: tile.layout.clone(),
            regs,
        })
    }

    /// Loads `dst`'s fragments from registers `d` (converted to the tile's layout).
    fn frags_from_regs(&mut self, dst: &CoopAcc, d: &Dist) -> Result<()> {
        let tile = &dst.tile;
        let s = tile.config.size;
        let dt = tile.config.acc;
        let fe = s * s;
        let per_lane = fe / 32;
        let src = self.in_layout(d, &tile.layout)?;
        let (arr, per_round) = self.coop_scratch(tile);
        let (sg_base, t_base) = self.scratch_bases(per_round * fe, per_lane);
        for (round, frags) in dst.frags.chunks(per_round as usize).enumerate() {
            for f in 0..frags.len() {
                let frag = round * per_round as usize + f;
                for e in 0..per_lane {
                    let o = self.int_const(DType::I32, (f as u32 * fe + e) as i64);
                    let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, t_base, o));
                    let value = self.cast_to(src[frag * per_lane as usize + e as usize], dt);
                    self.emit(Stmt::SharedStore { arr, index, value });
                }
            }
            self.emit(Stmt::Barrier);
            for (f, &frag) in frags.iter().enumerate() {
                let o = self.int_const(DType::I32, (f as u32 * fe) as i64);
                let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, sg_base, o));
                self.emit(Stmt::CoopLoad {
                    dst: frag,
                    arr,
                    index,
                    stride: s,
                    column_major: false,
                });
            }
            self.emit(Stmt::Barrier);
        }
        Ok(())
    }

    /// The cooperative-matrix dot (see the module documentation).
    pub(crate) fn dot_coop(&mut self, inst: &Inst, tile: CoopTile) -> Result<()> {
        let Op::Dot { a, b, acc, .. } = &inst.op else {
            return Err(Diagnostic::internal("dot_coop of a non-dot"));
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let k = sa[1];
        let s = tile.config.size;
        let input = tile.config.input;
        // The accumulator's fragments: its own when it is one already (a loop-carried
        // accumulator), else new ones set from it.
        let c = match self.get(*acc)? {
            TVal::Frags(f) if f.tile == tile => f.clone(),
            other => {
                let other = other.clone();
                let c = self.fresh_frags(&tile);
                let zero = self.is_zero_tile(*acc);
                self.store_frags(&c, &other, zero)?;
                c
            }
        };
        use super::shared_tile::SharedTile;
        use crate::ir::StagedLayout;
        // An operand loaded in runs along its first dimension (memory contiguous along
        // it: `a` along M, `x.T @ w`; `b` along K, `x @ w.T`) is stored as it lies,
        // `[K][M]` or `[N][K]`, and its fragments read column-major.
        let in_first_dim_runs = |x: &Self, v| -> Result<bool> {
            Ok(match x.get(v)? {
                TVal::Data(Dist::Regs { layout, .. }) => {
                    layout.rank() == 2 && layout.reg_bases().first() == Some(&vec![1, 0])
                }
                _ => false,
            })
        };
        let (a_m_major, b_k_major) = (in_first_dim_runs(self, *a)?, in_first_dim_runs(self, *b)?);
        let form = |t| {
            if t {
                StagedLayout::PaddedTransposed
            } else {
                StagedLayout::Padded
            }
        };
        let tile_a = SharedTile::of(form(a_m_major), 0, &sa, input);
        let tile_b = SharedTile::of(form(b_k_major), 1, &sb, input);
        let (sa_stride, sb_stride) = (tile_a.stride(), tile_b.stride());
        let (staged_a, staged_b) = self.staged_operands(*a, *b)?;
        let in_regs = staged_a.is_none() || staged_b.is_none();
        let (arr_a, a_slot) = self.dot_operand(*a, staged_a, &sa, tile_a, "coop_a", input)?;
        let (arr_b, b_slot) = self.dot_operand(*b, staged_b, &sb, tile_b, "coop_b", input)?;
        if in_regs {
            self.emit(Stmt::Barrier);
        }
        let (tm, tn) = tile.tiles();
        let (wm, wn) = (tile.m / tile.warps_m, tile.n / tile.warps_n);
        let (warps_m, warps_n) = (tile.warps_m, tile.warps_n);
        self.note(
            inst.span,
            format!(
                "dot {}x{}x{} on cooperative matrices ({s}x{s} {} -> {}), {warps_m}x{warps_n} \
                 warp tiles of {tm}x{tn} fragments",
                tile.m, tile.n, k, input, tile.config.acc
            ),
        );
        // The first element of the subgroup's rows of A and columns of B.
        let (a_base, b_base) = self.hoist(|x| {
            let c = |x: &mut Self, v: i64| x.int_const(DType::I32, v);
            let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
            let sg = x.assign(DType::I32, Expr::Special(Special::SubgroupId));
            let mask_n = c(x, warps_n as i64 - 1);
            let warp_n = bin(x, BinaryOp::And, sg, mask_n);
            let sh = c(x, warps_n.trailing_zeros() as i64);
            let wsh = bin(x, BinaryOp::Shr, sg, sh);
            let mask_m = c(x, warps_m as i64 - 1);
            let warp_m = bin(x, BinaryOp::And, wsh, mask_m);
            // The subgroup's first row of A: a stored column of an M-major tile.
            let rows = c(x, (wm * if a_m_major { 1 } else { sa_stride }) as i64);
            let ab = bin(x, BinaryOp::Mul, warp_m, rows);
            // The subgroup's first column of B: a stored row of a K-major tile.
            let cols = c(x, (wn * if b_k_major { sb_stride } else { 1 }) as i64);
            let bb = bin(x, BinaryOp::Mul, warp_n, cols);
            (ab, bb)
        });
        let add = |x: &mut Self, base: Reg, slot: Option<Reg>| match slot {
            Some(s) => x.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, s)),
            None => base,
        };
        let a_base = add(self, a_base, a_slot);
        let b_base = add(self, b_base, b_slot);
        let a_frags: Vec<Frag> = (0..tm)
            .map(|_| self.new_frag(tile.frag_ty(FragRole::A)))
            .collect();
        let b_frags: Vec<Frag> = (0..tn)
            .map(|_| self.new_frag(tile.frag_ty(FragRole::B)))
            .collect();
        let d = self.fresh_frags(&tile);
        let load =
            |x: &mut Self, dst: Frag, arr: u32, base: Reg, off: u32, stride: u32, cm: bool| {
                let o = x.int_const(DType::I32, off as i64);
                let index = x.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, o));
                x.emit(Stmt::CoopLoad {
                    dst,
                    arr,
                    index,
                    stride,
                    column_major: cm,
                });
            };
        for kk in (0..k).step_by(s as usize) {
            for (mi, &f) in a_frags.iter().enumerate() {
                let off = if a_m_major {
                    kk * sa_stride + mi as u32 * s
                } else {
                    mi as u32 * s * sa_stride + kk
                };
                load(self, f, arr_a, a_base, off, sa_stride, a_m_major);
            }
            for (nj, &f) in b_frags.iter().enumerate() {
                let off = if b_k_major {
                    nj as u32 * s * sb_stride + kk
                } else {
                    kk * sb_stride + nj as u32 * s
                };
                load(self, f, arr_b, b_base, off, sb_stride, b_k_major);
            }
            for mi in 0..tm as usize {
                for nj in 0..tn as usize {
                    let i = mi * tn as usize + nj;
                    let src = if kk == 0 { c.frags[i] } else { d.frags[i] };
                    self.emit(Stmt::CoopMulAdd {
                        dst: d.frags[i],
                        a: a_frags[mi],
                        b: b_frags[nj],
                        c: src,
                    });
                }
            }
        }
        self.set(inst.results[0], TVal::Frags(d));
        Ok(())
    }
}
