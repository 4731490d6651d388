//! Distributed values: registers per layout, thread coordinates, and moving values
//! between layouts (free register renaming where [`LinearLayout::register_map`] allows,
//! shared memory otherwise): aligning the operands of an op to one layout, splats and
//! broadcasts, and the layout changes that move nothing (`expand_dims`, `reshape`,
//! `permute`).

use super::{remat, Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Const, Op};
use crate::ir::{BinaryOp, DType, Inst, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg, RegTy, Stmt};

/// A tile distributed over the threads of a program.
#[derive(Clone, Debug)]
pub(crate) enum Dist {
    /// Every element equals this register (constants, splats, scalars).
    Uniform(Reg),
    /// `regs[i]` holds the element at `layout`'s register `i` in each thread.
    Regs {
        layout: LinearLayout,
        regs: Vec<Reg>,
    },
}

/// The dtype of a distributed value's registers.
pub(crate) fn dist_dtype(x: &Expander, d: &Dist) -> DType {
    let r = match d {
        Dist::Uniform(r) => *r,
        Dist::Regs { regs, .. } => regs.first().copied().unwrap_or(Reg(0)),
    };
    x.out.reg_ty(r).dtype
}

impl Expander<'_> {
    /// The thread-dependent part of coordinate `dim` of `layout` (XOR of the lane and
    /// warp bases selected by this thread's bits), computed once per kernel.
    pub(crate) fn thread_coord(&mut self, layout: &LinearLayout, dim: usize) -> Reg {
        if let Some(r) = self.thread_part.get(&(layout.clone(), dim)) {
            return *r;
        }
        // Computed once at kernel entry, so that every use, in any block, sees it.
        self.hoist(|x| x.thread_coord_here(layout, dim))
    }

    fn thread_coord_here(&mut self, layout: &LinearLayout, dim: usize) -> Reg {
        let mut acc: Option<Reg> = None;
        let sources = [
            (self.lane, layout.lane_bases().to_vec()),
            (self.warp, layout.warp_bases().to_vec()),
        ];
        for (src, bases) in sources {
            for (bit, base) in bases.iter().enumerate() {
                let b = base[dim];
                if b == 0 {
                    continue;
                }
                let sh = self.int_const(DType::I32, bit as i64);
                let shifted = self.assign(DType::I32, Expr::Binary(BinaryOp::Shr, src, sh));
                let one = self.int_const(DType::I32, 1);
                let bitv = self.assign(DType::I32, Expr::Binary(BinaryOp::And, shifted, one));
                let scale = self.int_const(DType::I32, b as i64);
                let term = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, bitv, scale));
                acc = Some(match acc {
                    None => term,
                    Some(a) => self.assign(DType::I32, Expr::Binary(BinaryOp::Xor, a, term)),
                });
            }
        }
        let r = acc.unwrap_or_else(|| self.int_const(DType::I32, 0));
        self.thread_part.insert((layout.clone(), dim), r);
        r
    }

    /// Whether every base of `dim` is zero or a distinct power of two (then XOR is +).
    fn disjoint_bits(layout: &LinearLayout, dim: usize) -> bool {
        let mut seen = 0u32;
        for b in layout
            .reg_bases()
            .iter()
            .chain(layout.lane_bases())
            .chain(layout.warp_bases())
        {
            let v = b[dim];
            if v == 0 {
                continue;
            }
            if !v.is_power_of_two() || seen & v != 0 {
                return false;
            }
            seen |= v;
        }
        true
    }

    /// Registers holding coordinate `dim` (+ `start`) of each layout register, as i32.
    pub(crate) fn coordinates(
        &mut self,
        layout: &LinearLayout,
        dim: usize,
        start: i64,
    ) -> Result<Vec<Reg>> {
        let t = self.thread_coord(layout, dim);
        let add = Self::disjoint_bits(layout, dim);
        let mut out = Vec::with_capacity(layout.num_regs() as usize);
        for r in 0..layout.num_regs() {
            let part = layout.apply(r, 0, 0)[dim] as i64;
            let reg = if add {
                let c = self.int_const(DType::I32, part + start);
                self.assign(DType::I32, Expr::Binary(BinaryOp::Add, t, c))
            } else {
                let c = self.int_const(DType::I32, part);
                let x = self.assign(DType::I32, Expr::Binary(BinaryOp::Xor, t, c));
                let s = self.int_const(DType::I32, start);
                self.assign(DType::I32, Expr::Binary(BinaryOp::Add, x, s))
            };
            out.push(reg);
        }
        Ok(out)
    }

    /// Row-major linear index into a tile of `shape` of each register's coordinate,
    /// ignoring dimensions where `shape` is 1.
    pub(crate) fn linear_indices(
        &mut self,
        layout: &LinearLayout,
        shape: &[u32],
    ) -> Result<Vec<Reg>> {
        let n = layout.num_regs() as usize;
        let mut acc: Vec<Option<Reg>> = vec![None; n];
        let mut stride = 1i64;
        for d in (0..shape.len()).rev() {
            if shape[d] > 1 {
                let coords = self.coordinates(layout, d, 0)?;
                let s = self.int_const(DType::I32, stride);
                for (i, c) in coords.into_iter().enumerate() {
                    let term = if stride == 1 {
                        c
                    } else {
                        self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, c, s))
                    };
                    acc[i] = Some(match acc[i] {
                        None => term,
                        Some(a) => self.assign(DType::I32, Expr::Binary(BinaryOp::Add, a, term)),
                    });
                }
            }
            stride *= shape[d] as i64;
        }
        let zero = self.int_const(DType::I32, 0);
        Ok(acc.into_iter().map(|a| a.unwrap_or(zero)).collect())
    }

    /// The scratch shared array for `dtype`, grown to at least `len` elements.
    pub(crate) fn scratch_for(&mut self, dtype: DType, len: u32) -> u32 {
        if let Some(&i) = self.scratch.get(&dtype) {
            let a = &mut self.out.shared[i as usize];
            a.len = a.len.max(len);
            return i;
        }
        let i = self.shared_array(&format!("scratch_{dtype}"), dtype, len);
        self.scratch.insert(dtype, i);
        i
    }

    /// Moves the registers `regs` of a 2-D tile from layout `from` to layout `to`
    /// through a shared array of its own, in vectors: each thread writes the runs of
    /// consecutive elements its registers hold in `from` and reads back those of `to`
    /// (16 bytes where `to` holds 16 contiguous bytes a thread). Rows are padded by the
    /// bytes the threads writing one row together cover, so that the rows one write
    /// instruction touches start in different banks (a `wgmma` accumulator's f16 pairs:
    /// 8 rows of a warp at 4 bytes a lane, conflict-free with 16 bytes of padding).
    /// A tile of more than `bound` bytes moves in rounds over
    /// coordinate bits that registers alone decide in both layouts (as
    /// [`Self::through_shared`]; none inside a vector), each round behind its own
    /// barriers. Returns the registers in `to` and the number of rounds; `None` where
    /// the tile is not 2-D or no such rounds bring it within `bound`.
    pub(crate) fn through_shared_in_vectors(
        &mut self,
        regs: &[Reg],
        from: &LinearLayout,
        to: &LinearLayout,
        bound: u32,
    ) -> Result<Option<(Vec<Reg>, u32)>> {
        let shape = from.shape().to_vec();
        if shape.len() != 2 || to.shape() != shape.as_slice() {
            return Ok(None);
        }
        let dtype = self.out.reg_ty(regs[0]).dtype;
        let size = dtype.size_bytes().max(1) as u32;
        // Consecutive register bits along the last dimension from its first bit: the
        // run a thread holds (capped at 16 bytes).
        let run = |l: &LinearLayout| -> u32 {
            let mut n = 0;
            for b in l.reg_bases() {
                if b[0] == 0 && b[1] == 1 << n && (2u32 << n) * size <= 16 {
                    n += 1;
                } else {
                    break;
                }
            }
            1 << n
        };
        let (w_in, w_out) = (run(from), run(to));
        // The runs are whole vectors only where no other basis moves along the row by
        // less than a run.
        let aligned = |l: &LinearLayout, w: u32| {
            let n = w.trailing_zeros() as usize;
            l.reg_bases()[n..]
                .iter()
                .chain(l.lane_bases())
                .chain(l.warp_bases())
                .all(|b| b[1] % w == 0)
        };
        if regs.len() != from.num_regs() as usize || !aligned(from, w_in) || !aligned(to, w_out) {
            return Ok(None);
        }
        // Lane bits continuing the run along the row: the threads writing one row.
        let mut along = w_in;
        for b in from.lane_bases() {
            if b[0] == 0 && b[1] == along {
                along *= 2;
            } else {
                break;
            }
        }
        let pad = (along * size).max(16) / size;
        let pad = pad.next_multiple_of(w_in.max(w_out));
        // Rounds: the most significant register-only bits (rows first) until one
        // round's part of the tile (its padding aside) is within the bound.
        let array_bytes = |rows: u32, cols: u32| rows as u64 * cols as u64 * size as u64;
        let mut candidates: Vec<(usize, u32)> = from
            .register_only_bits()
            .into_iter()
            .filter(|b| to.register_only_bits().contains(b))
            .filter(|&(d, bit)| shape[d] > 1 && (d == 0 || 1 << bit >= w_in.max(w_out)))
            .collect();
        candidates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut bits = vec![];
        let mut dims = [shape[0], shape[1]];
        for b in candidates {
            if array_bytes(dims[0], dims[1]) <= bound as u64 {
                break;
            }
            dims[b.0] /= 2;
            bits.push(b);
        }
        if array_bytes(dims[0], dims[1]) > bound as u64 {
            return Ok(None);
        }
        let (from_c, to_c) = (from.without_bits(&bits), to.without_bits(&bits));
        let padded = [dims[0], dims[1] + pad];
        let arr = self.shared_array(&format!("staged_{dtype}"), dtype, padded[0] * padded[1]);
        let widx = self.linear_indices(&from_c, &padded)?;
        let ridx = self.linear_indices(&to_c, &padded)?;
        let vector = |x: &mut Self, w: u32| {
            x.new_reg_ty(RegTy {
                dtype,
                lanes: w as u8,
            })
        };
        let mut out: Vec<Option<Reg>> = vec![None; ridx.len()];
        for round in 0..1u32 << bits.len() {
            self.emit(Stmt::Barrier);
            for i in (0..regs.len()).step_by(w_in as usize) {
                if from.bits_of_register(i as u32, &bits) != round {
                    continue;
                }
                let value = if w_in == 1 {
                    regs[i]
                } else {
                    let v = vector(self, w_in);
                    self.emit(Stmt::Assign {
                        dst: v,
                        expr: Expr::Construct(regs[i..i + w_in as usize].to_vec()),
                    });
                    v
                };
                self.emit(Stmt::SharedStore {
                    arr,
                    index: widx[i],
                    value,
                });
            }
            self.emit(Stmt::Barrier);
            for i in (0..ridx.len()).step_by(w_out as usize) {
                if to.bits_of_register(i as u32, &bits) != round {
                    continue;
                }
                if w_out == 1 {
                    out[i] = Some(self.assign(
                        dtype,
                        Expr::SharedLoad {
                            arr,
                            index: ridx[i],
                        },
                    ));
                    continue;
                }
                let v = vector(self, w_out);
                self.emit(Stmt::Assign {
                    dst: v,
                    expr: Expr::SharedLoad {
                        arr,
                        index: ridx[i],
                    },
                });
                for lane in 0..w_out as u8 {
                    out[i + lane as usize] =
                        Some(self.assign(dtype, Expr::Extract { vector: v, lane }));
                }
            }
        }
        let rounds = 1u32 << bits.len();
        out.into_iter()
            .map(|r| r.ok_or_else(|| Diagnostic::internal("a register missed by every round")))
            .collect::<Result<Vec<_>>>()
            .map(|regs| Some((regs, rounds)))
    }

    /// Moves `src` (in layout `from`) into layout `to` through shared memory; `to`'s
    /// coordinates are mapped into `from`'s shape by dropping dimensions where `from`
    /// has size 1 (broadcast). Where the tile is larger than
    /// [`ExpandOptions::scratch_bytes`](super::ExpandOptions::scratch_bytes), it moves in
    /// rounds (see [`Self::round_bits`]), each behind its own pair of barriers.
    fn through_shared(
        &mut self,
        regs: &[Reg],
        from: &LinearLayout,
        to: &LinearLayout,
    ) -> Result<Vec<Reg>> {
        let dtype = self.out.reg_ty(regs[0]).dtype;
        let shape = from.shape().to_vec();
        let numel: u32 = shape.iter().product();
        let bits = self.round_bits(&[from, to], &shape, dtype.size_bytes().max(1) as u32);
        let (from_c, to_c) = (from.without_bits(&bits), to.without_bits(&bits));
        let arr = self.scratch_for(dtype, numel >> bits.len());
        let widx = self.linear_indices(&from_c, from_c.shape())?;
        let ridx = self.linear_indices(&to_c, from_c.shape())?;
        let mut out: Vec<Option<Reg>> = vec![None; ridx.len()];
        for round in 0..1u32 << bits.len() {
            self.emit(Stmt::Barrier);
            for (r, (v, i)) in regs.iter().zip(&widx).enumerate() {
                if from.bits_of_register(r as u32, &bits) == round {
                    self.emit(Stmt::SharedStore {
                        arr,
                        index: *i,
                        value: *v,
                    });
                }
            }
            self.emit(Stmt::Barrier);
            for (r, i) in ridx.iter().enumerate() {
                if to.bits_of_register(r as u32, &bits) == round {
                    out[r] = Some(self.assign(dtype, Expr::SharedLoad { arr, index: *i }));
                }
            }
        }
        out.into_iter()
            .map(|r| r.ok_or_else(|| Diagnostic::internal("a register missed by every round")))
            .collect()
    }

    /// The coordinate bits over which a transfer of a tile of `shape` (`elem_bytes` of
    /// scratch an element) through shared memory goes in rounds so that one round's
    /// scratch stays within
    /// [`ExpandOptions::scratch_bytes`](super::ExpandOptions::scratch_bytes): bits that
    /// registers alone decide in every one of `layouts`
    /// ([`LinearLayout::register_only_bits`]), most significant (row-major) first, as
    /// few as are needed. Empty where the tile fits, there is no bound, or no bit
    /// qualifies; fewer than needed where too few do (the scratch is then larger than
    /// the bound, and the kernel's need says so).
    pub(crate) fn round_bits(
        &self,
        layouts: &[&LinearLayout],
        shape: &[u32],
        elem_bytes: u32,
    ) -> Vec<(usize, u32)> {
        let bytes = shape.iter().product::<u32>() as u64 * elem_bytes as u64;
        let Some(bound) = self.opt.scratch_bytes else {
            return vec![];
        };
        if bytes <= bound as u64 || layouts.is_empty() {
            return vec![];
        }
        let mut common: Vec<(usize, u32)> = layouts[0]
            .register_only_bits()
            .into_iter()
            .filter(|&(d, _)| shape.get(d).is_some_and(|&s| s > 1))
            .filter(|b| {
                layouts[1..]
                    .iter()
                    .all(|l| l.register_only_bits().contains(b))
            })
            .collect();
        common.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let mut chosen = vec![];
        for b in common {
            if bytes >> chosen.len() <= bound as u64 {
                break;
            }
            chosen.push(b);
        }
        chosen
    }

    /// The registers of `d` in layout `target`.
    pub(crate) fn in_layout(&mut self, d: &Dist, target: &LinearLayout) -> Result<Vec<Reg>> {
        match d {
            Dist::Uniform(r) => Ok(vec![*r; target.num_regs() as usize]),
            Dist::Regs { layout, regs } if layout == target => Ok(regs.clone()),
            Dist::Regs { layout, regs } => {
                if layout.shape() != target.shape() {
                    return Err(Diagnostic::internal(format!(
                        "layout conversion between shapes {:?} and {:?}",
                        layout.shape(),
                        target.shape()
                    )));
                }
                if let Some(map) = layout.register_map(target, |c| c.to_vec()) {
                    return Ok(map.into_iter().map(|i| regs[i as usize]).collect());
                }
                self.through_shared(regs, layout, target)
            }
        }
    }

    /// The registers of value `v` (lowered as `d`) in layout `target`: recomputed
    /// there where `v` is index arithmetic ([`Self::remat`]: `split`'s coordinate tile,
    /// an `arange` broadcast), moved otherwise.
    pub(crate) fn value_in_layout(
        &mut self,
        v: Value,
        d: &Dist,
        target: &LinearLayout,
    ) -> Result<Vec<Reg>> {
        if let Dist::Regs { layout, .. } = d {
            if layout != target && layout.shape() == target.shape() {
                let dims: remat::DimMap = (0..target.rank()).map(Some).collect();
                if let Some(regs) = self.remat(v, target, &dims, 0)? {
                    return Ok(regs);
                }
            }
        }
        self.in_layout(d, target)
    }

    /// Brings several values into one layout (the first distributed operand's).
    pub(crate) fn align(
        &mut self,
        dists: &[Dist],
    ) -> Result<(Option<LinearLayout>, Vec<Vec<Reg>>)> {
        let target = dists.iter().find_map(|d| match d {
            Dist::Regs { layout, .. } => Some(layout.clone()),
            Dist::Uniform(_) => None,
        });
        let Some(target) = target else {
            return Ok((
                None,
                dists
                    .iter()
                    .map(|d| match d {
                        Dist::Uniform(r) => vec![*r],
                        Dist::Regs { .. } => unreachable!(),
                    })
                    .collect(),
            ));
        };
        let mut out = vec![];
        for d in dists {
            out.push(self.in_layout(d, &target)?);
        }
        Ok((Some(target), out))
    }

    /// Broadcasts a distributed value to `shape` (same rank, size-1 dims expand).
    fn broadcast_dist(&mut self, d: Dist, shape: &[u32]) -> Result<Dist> {
        let Dist::Regs { layout, regs } = d else {
            return Ok(d);
        };
        if layout.shape() == shape {
            return Ok(Dist::Regs { layout, regs });
        }
        let src_shape = layout.shape().to_vec();
        let project = |c: &[u32]| -> Vec<u32> {
            c.iter()
                .zip(&src_shape)
                .map(|(&x, &s)| if s == 1 { 0 } else { x })
                .collect()
        };
        let mut candidates = self.seen_layouts.get(shape).cloned().unwrap_or_default();
        candidates.push(self.canonical(shape)?);
        for cand in &candidates {
            if let Some(map) = layout.register_map(cand, project) {
                let regs = map.into_iter().map(|i| regs[i as usize]).collect();
                return Ok(Dist::Regs {
                    layout: cand.clone(),
                    regs,
                });
            }
        }
        let target = self.canonical(shape)?;
        let regs = self.through_shared(&regs, &layout, &target)?;
        Ok(Dist::Regs {
            layout: target,
            regs,
        })
    }

    /// `Splat` / `Broadcast` of a lowered value to `shape`.
    pub(crate) fn broadcast(&mut self, v: TVal, shape: &[u32]) -> Result<TVal> {
        Ok(match v {
            TVal::Data(d) => TVal::Data(self.broadcast_dist(d, shape)?),
            TVal::Ptr { root, off } => TVal::Ptr {
                root,
                off: self.broadcast_dist(off, shape)?,
            },
            TVal::Staged { .. } | TVal::Frags(_) => {
                return Err(Diagnostic::internal(
                    "broadcast of a staged dot operand or of fragments",
                ))
            }
        })
    }

    /// `Splat` / `Broadcast` of `x` to the shape of `inst`'s result.
    pub(super) fn splat_or_broadcast(&mut self, inst: &Inst, x: Value) -> Result<()> {
        let shape = self.shape(inst.results[0]);
        let v = self.get(x)?.clone();
        // Index arithmetic is recomputed in the result's layout rather than moved
        // through shared memory.
        if let (TVal::Data(Dist::Regs { layout, .. }), Op::Broadcast(_)) = (&v, &inst.op) {
            if layout.shape() != shape.as_slice() {
                let target = self.canonical(&shape)?;
                let src = self.shape(x);
                let free = layout
                    .register_map(&target, |c| {
                        c.iter()
                            .zip(&src)
                            .map(|(&x, &s)| if s == 1 { 0 } else { x })
                            .collect()
                    })
                    .is_some();
                let dims: remat::DimMap = src
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| if s == 1 { None } else { Some(i) })
                    .collect();
                if !free {
                    if let Some(regs) = self.remat(x, &target, &dims, 0)? {
                        self.set(
                            inst.results[0],
                            TVal::Data(Dist::Regs {
                                layout: target,
                                regs,
                            }),
                        );
                        return Ok(());
                    }
                }
            }
        }
        let out = self.broadcast(v, &shape)?;
        self.set(inst.results[0], out);
        Ok(())
    }

    /// The same registers under the layout `f` makes of `v`'s (`expand_dims`,
    /// `reshape`, `permute`: free).
    pub(super) fn map_layout(&self, v: TVal, f: impl Fn(&LinearLayout) -> LinearLayout) -> TVal {
        let m = |d: Dist| match d {
            Dist::Uniform(r) => Dist::Uniform(r),
            Dist::Regs { layout, regs } => Dist::Regs {
                layout: f(&layout),
                regs,
            },
        };
        match v {
            TVal::Data(d) => TVal::Data(m(d)),
            TVal::Ptr { root, off } => TVal::Ptr { root, off: m(off) },
            other @ (TVal::Staged { .. } | TVal::Frags(_)) => other,
        }
    }

    /// A constant register of `dtype`.
    pub(crate) fn zero_of(&mut self, dtype: DType) -> Reg {
        let c = if dtype.is_float() {
            Const::Float(0.0)
        } else if dtype.is_bool() {
            Const::Bool(false)
        } else {
            Const::Int(0)
        };
        self.constant(dtype, c)
    }
}
