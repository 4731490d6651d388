//! Reductions and scans.
//!
//! A reduction along `axis` first combines, inside each thread, the registers that hold
//! the same output element; then, where the backend has warp shuffles
//! (`ExpandOptions::warp_shuffle`), the lanes of a warp along `axis` combine by a
//! butterfly (one `ShuffleXor` a lane bit, every lane ends with the warp's result);
//! then, when lanes (without shuffles) or warps of the layout also run along `axis`,
//! each thread publishes its partial result to shared memory, and after a barrier
//! every thread folds the partials of the output elements it holds in partner order
//! (where that is at most 64 reads a thread), else the partials are combined by a
//! tree (log2 of the partner count halving steps, each behind a barrier, done by one
//! replica of each thread) and every thread reads the results of the output elements
//! it holds. The result has the operand's
//! slice layout, so `x - tl.max(x, 1)[:, None]` broadcasts back without moving data.
//!
//! A scan moves the operand into a layout blocked along the scanned axis: an axis of
//! up to 64 elements sits whole in each thread, which scans it in order; a longer one
//! is split in runs over lanes and then warps, each thread scans its run, publishes
//! the run's total to shared memory and, after a barrier, puts the combined totals of
//! the runs before it (in scan order) in front of its values. The combine's operand
//! order is kept throughout, so it only needs to be associative.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{Combiner, Op};
use crate::ir::{BinaryOp, CmpPred, DType, Inst};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg, Stmt};

impl Expander<'_> {
    /// Combines two tuples of scalar registers with `c`.
    fn combine(&mut self, c: &Combiner, dts: &[DType], a: &[Reg], b: &[Reg]) -> Result<Vec<Reg>> {
        let bin = |x: &mut Self, op: BinaryOp| -> Vec<Reg> {
            vec![x.assign(dts[0], Expr::Binary(op, a[0], b[0]))]
        };
        Ok(match c {
            Combiner::Add => bin(self, BinaryOp::Add),
            Combiner::Mul => bin(self, BinaryOp::Mul),
            Combiner::Max => bin(self, BinaryOp::Max),
            Combiner::Min => bin(self, BinaryOp::Min),
            Combiner::ArgMax | Combiner::ArgMin => {
                let better = if matches!(c, Combiner::ArgMax) {
                    CmpPred::Gt
                } else {
                    CmpPred::Lt
                };
                let strictly = self.assign(DType::I1, Expr::Cmp(better, b[0], a[0]));
                let eq = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, b[0], a[0]));
                let lower_idx = self.assign(DType::I1, Expr::Cmp(CmpPred::Lt, b[1], a[1]));
                let tie = self.assign(DType::I1, Expr::Binary(BinaryOp::And, eq, lower_idx));
                let mut take = self.assign(DType::I1, Expr::Binary(BinaryOp::Or, strictly, tie));
                if dts[0].is_float() {
                    // NaN loses: take b when a is NaN and b is not.
                    let a_nan = self.assign(DType::I1, Expr::Cmp(CmpPred::Ne, a[0], a[0]));
                    let b_num = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, b[0], b[0]));
                    let nan_case =
                        self.assign(DType::I1, Expr::Binary(BinaryOp::And, a_nan, b_num));
                    take = self.assign(DType::I1, Expr::Binary(BinaryOp::Or, take, nan_case));
                }
                let v = self.assign(
                    dts[0],
                    Expr::Select {
                        cond: take,
                        on_true: b[0],
                        on_false: a[0],
                    },
                );
                let i = self.assign(
                    dts[1],
                    Expr::Select {
                        cond: take,
                        on_true: b[1],
                        on_false: a[1],
                    },
                );
                vec![v, i]
            }
            Combiner::Region(block) => {
                for (i, arg) in block.args.iter().enumerate() {
                    let r = if i < a.len() { a[i] } else { b[i - a.len()] };
                    self.set(*arg, TVal::Data(Dist::Uniform(r)));
                }
                let saved = self.span;
                self.block(block)?;
                self.span = saved;
                let Some(Op::Yield(ys)) = block.insts.last().map(|i| &i.op) else {
                    return Err(Diagnostic::internal("combine region without yield"));
                };
                let mut out = vec![];
                for (k, y) in ys.iter().enumerate() {
                    match self.data(*y)? {
                        Dist::Uniform(r) => out.push(self.cast_to(r, dts[k])),
                        Dist::Regs { .. } => {
                            return Err(Diagnostic::internal("combine region yields a tile"))
                        }
                    }
                }
                out
            }
        })
    }

    /// Operands as registers of one non-uniform layout.
    fn operands_in_layout(
        &mut self,
        operands: &[crate::ir::Value],
    ) -> Result<(LinearLayout, Vec<Vec<Reg>>)> {
        let dists: Vec<Dist> = operands
            .iter()
            .map(|v| self.data(*v))
            .collect::<Result<_>>()?;
        let layout = match dists.iter().find_map(|d| match d {
            Dist::Regs { layout, .. } => Some(layout.clone()),
            Dist::Uniform(_) => None,
        }) {
            Some(l) => l,
            None => self.canonical(&self.shape(operands[0]))?,
        };
        let mut regs = vec![];
        for (v, d) in operands.iter().zip(&dists) {
            regs.push(self.value_in_layout(*v, d, &layout)?);
        }
        Ok((layout, regs))
    }

    pub(crate) fn reduce(&mut self, inst: &Inst) -> Result<()> {
        let Op::Reduce {
            operands,
            axis,
            combiner,
        } = &inst.op
        else {
            unreachable!()
        };
        let axis = *axis as usize;
        let dts: Vec<DType> = operands.iter().map(|v| self.dtype(*v)).collect();
        let (mut layout, mut regs) = self.operands_in_layout(operands)?;
        // Lanes and warps must run purely along or purely across `axis`.
        let mixed = layout
            .lane_bases()
            .iter()
            .chain(layout.warp_bases())
            .chain(layout.reg_bases())
            .any(|b| b[axis] != 0 && b.iter().enumerate().any(|(d, &x)| d != axis && x != 0));
        if mixed {
            let target = self.canonical(layout.shape())?;
            for r in regs.iter_mut() {
                *r = self.in_layout(
                    &Dist::Regs {
                        layout: layout.clone(),
                        regs: r.clone(),
                    },
                    &target,
                )?;
            }
            layout = target;
        }
        let sliced = layout.slice(axis);
        // 1. In-thread: registers that differ only in bits along `axis` combine.
        let axis_reg_bits: u32 = layout
            .reg_bases()
            .iter()
            .enumerate()
            .filter(|(_, b)| b[axis] != 0)
            .fold(0, |m, (i, _)| m | 1 << i);
        // Registers whose basis is zero are copies of others (replication, such as the
        // dropped axis of an earlier reduction): only first copies take part, or a
        // thread would combine the same element twice.
        let copy_reg_bits: u32 = layout
            .reg_bases()
            .iter()
            .enumerate()
            .filter(|(_, b)| b.iter().all(|&x| x == 0))
            .fold(0, |m, (i, _)| m | 1 << i);
        let rep_of = |r: u32| (r & !axis_reg_bits & !copy_reg_bits) as usize;
        let n = layout.num_regs();
        let mut partial: Vec<Option<Vec<Reg>>> = vec![None; n as usize];
        for r in (0..n).filter(|r| r & copy_reg_bits == 0) {
            let rep = rep_of(r);
            let vals: Vec<Reg> = regs.iter().map(|op| op[r as usize]).collect();
            partial[rep] = Some(match partial[rep].take() {
                None => vals,
                Some(acc) => self.combine(combiner, &dts, &acc, &vals)?,
            });
        }
        // 2. Across the lanes of a warp, by shuffles.
        let mut lane_axis: Vec<usize> = (0..layout.lane_bases().len())
            .filter(|&b| layout.lane_bases()[b][axis] != 0)
            .collect();
        // After a butterfly, the lanes that differ only in these bits hold the same
        // partials: one of them takes part in the shared-memory tree.
        let mut shuffled_lanes = 0u32;
        if self.opt.warp_shuffle && !lane_axis.is_empty() {
            // Integer add/mul/min/max and float add/mul give the same result in either
            // operand order; otherwise (float min/max and signed zeros, argmin/argmax
            // and NaN, custom combiners) both partners order the operands by lane, so
            // that they compute the same value.
            let commutative = match combiner {
                Combiner::Add | Combiner::Mul => true,
                Combiner::Max | Combiner::Min => !dts[0].is_float(),
                _ => false,
            };
            for &b in &lane_axis {
                let upper = if commutative {
                    None
                } else {
                    let sh = self.int_const(DType::I32, b as i64);
                    let v = self.assign(DType::I32, Expr::Binary(BinaryOp::Shr, self.lane, sh));
                    let one = self.int_const(DType::I32, 1);
                    let bit = self.assign(DType::I32, Expr::Binary(BinaryOp::And, v, one));
                    let zero = self.zero_i32();
                    Some(self.assign(DType::I1, Expr::Cmp(CmpPred::Ne, bit, zero)))
                };
                for r in reps_of(&partial) {
                    let own = partial[r].take().expect("rep");
                    let other: Vec<Reg> = own
                        .iter()
                        .zip(&dts)
                        .map(|(&v, &d)| {
                            self.assign(
                                d,
                                Expr::ShuffleXor {
                                    value: v,
                                    mask: 1 << b,
                                },
                            )
                        })
                        .collect();
                    let (lo, hi) = match upper {
                        None => (own, other),
                        Some(up) => {
                            let pick = |x: &mut Self, t: &[Reg], f: &[Reg]| -> Vec<Reg> {
                                t.iter()
                                    .zip(f)
                                    .zip(&dts)
                                    .map(|((&t, &f), &d)| {
                                        x.assign(
                                            d,
                                            Expr::Select {
                                                cond: up,
                                                on_true: t,
                                                on_false: f,
                                            },
                                        )
                                    })
                                    .collect()
                            };
                            (pick(self, &other, &own), pick(self, &own, &other))
                        }
                    };
                    partial[r] = Some(self.combine(combiner, &dts, &lo, &hi)?);
                }
                shuffled_lanes |= 1 << b;
            }
            // Where every lane bit was shuffled or holds a replica, every thread of a
            // warp now holds the same values: said so, for the uniformity analysis
            // (a branch on the result may hold collective statements).
            let lanes_agree =
                layout.lane_bases().iter().enumerate().all(|(b, basis)| {
                    shuffled_lanes >> b & 1 == 1 || basis.iter().all(|&x| x == 0)
                });
            if lanes_agree {
                for r in reps_of(&partial) {
                    let regs = partial[r].take().expect("rep");
                    let marked = regs
                        .iter()
                        .zip(&dts)
                        .map(|(&v, &d)| self.assign(d, Expr::WarpUniform(v)))
                        .collect();
                    partial[r] = Some(marked);
                }
            }
            lane_axis.clear();
        }
        // 2b. Whole-program reductions on WGSL: across subgroups by builtins.
        if lane_axis.len() == layout.lane_bases().len() {
            if let Some(done) = self.reduce_by_subgroups(&layout, axis, combiner, &dts, &partial)? {
                partial = done;
                lane_axis.clear();
            }
        }
        // 3. Across threads, through shared memory.
        let warp_axis: Vec<usize> = (0..layout.warp_bases().len())
            .filter(|&b| layout.warp_bases()[b][axis] != 0)
            .collect();
        let warp_axis = if lane_axis.is_empty() && self.subgroup_reduced(&layout, axis) {
            vec![]
        } else {
            warp_axis
        };
        let partners = 1u32 << (lane_axis.len() + warp_axis.len());
        let reps = reps_of(&partial);
        if partners > 1 {
            // Partials of many output elements may go in rounds (see `round_bits`): the
            // output elements sharing one value of some register-held coordinate bits.
            let elem_bytes = partners
                * dts
                    .iter()
                    .map(|d| d.size_bytes().max(1) as u32)
                    .sum::<u32>();
            let bits = self.round_bits(&[&sliced], sliced.shape(), elem_bytes);
            let compact = sliced.without_bits(&bits);
            let out_numel: u32 = compact.shape().iter().product::<u32>().max(1);
            let out_idx = self.linear_indices(&compact, compact.shape())?;
            // This thread's partner id: its bits along `axis`, packed.
            let pid = self.packed_thread_bits(&lane_axis, &warp_axis);
            let p = self.int_const(DType::I32, partners as i64);
            let arrays: Vec<u32> = dts
                .iter()
                .map(|&d| self.scratch_for_reduce(d, out_numel * partners))
                .collect();
            // Only the first of replicated threads takes part in the tree: two replicas
            // updating the same slot would combine a partial twice.
            let (mut owner, _) = self.ownership(Some(&layout));
            if shuffled_lanes != 0 {
                let m = self.int_const(DType::I32, shuffled_lanes as i64);
                let v = self.assign(DType::I32, Expr::Binary(BinaryOp::And, self.lane, m));
                let zero = self.zero_i32();
                let first = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, v, zero));
                owner = Some(match owner {
                    None => first,
                    Some(o) => self.assign(DType::I1, Expr::Binary(BinaryOp::And, o, first)),
                });
            }
            let bases: Vec<Option<Reg>> = (0..n as usize)
                .map(|r| {
                    partial[r].as_ref().map(|_| {
                        self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, out_idx[r], p))
                    })
                })
                .collect();
            let load = |x: &mut Self, index: Reg| -> Vec<Reg> {
                arrays
                    .iter()
                    .zip(&dts)
                    .map(|(arr, d)| x.assign(*d, Expr::SharedLoad { arr: *arr, index }))
                    .collect()
            };
            for round in 0..1u32 << bits.len() {
                let reps: Vec<usize> = reps
                    .iter()
                    .copied()
                    .filter(|&r| sliced.bits_of_register(r as u32, &bits) == round)
                    .collect();
                self.emit(Stmt::Barrier);
                for &r in &reps {
                    let base = bases[r].expect("rep base");
                    let slot = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, pid));
                    let vals = partial[r].clone().expect("rep");
                    for (j, arr) in arrays.iter().enumerate() {
                        self.emit(Stmt::SharedStore {
                            arr: *arr,
                            index: slot,
                            value: vals[j],
                        });
                    }
                }
                // Few partners: after one barrier every thread folds its outputs'
                // slots in partner order itself (broadcast reads), where a tree would
                // take log2(P) more barriers.
                if partners as usize * reps.len() <= DIRECT_FOLD_READS {
                    self.emit(Stmt::Barrier);
                    for &r in &reps {
                        let base = bases[r].expect("rep base");
                        let mut acc = load(self, base);
                        for q in 1..partners {
                            let off = self.int_const(DType::I32, q as i64);
                            let index =
                                self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, off));
                            let v = load(self, index);
                            acc = self.combine(combiner, &dts, &acc, &v)?;
                        }
                        partial[r] = Some(acc);
                    }
                    continue;
                }
                // A tree over the partners: log2(P) halving steps, each behind a
                // barrier; partner `pid < s` combines slots `pid` and `pid + s` into
                // slot `pid`.
                let mut step = partners / 2;
                while step >= 1 {
                    self.emit(Stmt::Barrier);
                    let sc = self.int_const(DType::I32, step as i64);
                    let mut active = self.assign(DType::I1, Expr::Cmp(CmpPred::Lt, pid, sc));
                    if let Some(o) = owner {
                        active = self.assign(DType::I1, Expr::Binary(BinaryOp::And, active, o));
                    }
                    self.open();
                    for &r in &reps {
                        let base = bases[r].expect("rep base");
                        let lo = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, pid));
                        let hi = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, lo, sc));
                        let a = load(self, lo);
                        let b = load(self, hi);
                        let c = self.combine(combiner, &dts, &a, &b)?;
                        for (j, arr) in arrays.iter().enumerate() {
                            self.emit(Stmt::SharedStore {
                                arr: *arr,
                                index: lo,
                                value: c[j],
                            });
                        }
                    }
                    let body = self.close();
                    self.emit(Stmt::If {
                        cond: active,
                        then_body: body,
                        else_body: vec![],
                    });
                    step /= 2;
                }
                self.emit(Stmt::Barrier);
                for &r in &reps {
                    let base = bases[r].expect("rep base");
                    partial[r] = Some(load(self, base));
                }
            }
        }
        // Results: every register of the slice layout reads its representative.
        for (j, res) in inst.results.iter().enumerate() {
            let regs_out: Vec<Reg> = (0..n)
                .map(|r| partial[rep_of(r)].as_ref().expect("rep")[j])
                .collect();
            let d = if sliced.rank() == 0 {
                Dist::Uniform(regs_out[0])
            } else {
                Dist::Regs {
                    layout: sliced.clone(),
                    regs: regs_out,
                }
            };
            let d = self.cast_dist(d, self.dtype(*res));
            self.set(*res, TVal::Data(d));
        }
        Ok(())
    }

    /// Whether a reduction along `axis` of `layout` combines through subgroup builtins
    /// (see [`Self::reduce_by_subgroups`]): the device's subgroups are exactly
    /// `warp_size` threads, the reduction is not inside a branch, and every lane and
    /// warp basis runs along `axis` (every thread of the program contributes to every
    /// output element it holds, none twice): then any grouping of threads into
    /// subgroups combines values of the same output elements.
    fn subgroup_reduced(&self, layout: &LinearLayout, axis: usize) -> bool {
        self.opt.subgroup_reduce
            && !self.opt.warp_shuffle
            && self.if_depth == 0
            && layout
                .lane_bases()
                .iter()
                .chain(layout.warp_bases())
                .all(|b| b[axis] != 0 && b.iter().enumerate().all(|(d, &x)| d == axis || x == 0))
    }

    /// Step 2 of a whole-program reduction where the device has subgroups (WGSL
    /// `subgroupAdd` / `subgroupMax` / `subgroupMin`): each thread's partials combine
    /// over its subgroup, the first invocation of each subgroup publishes them to
    /// shared memory (slot `subgroup_id`), and after a barrier every thread combines
    /// the `num_warps` published partials in slot order. Integer add, min and max and
    /// float add map to the builtins; float min and max go through integer keys that
    /// order floats as numbers, NaN last (`maxnum`: a NaN loses unless all are), so the
    /// builtins' NaN behaviour never matters. `None` where the plan does not apply.
    #[allow(clippy::type_complexity)]
    fn reduce_by_subgroups(
        &mut self,
        layout: &LinearLayout,
        axis: usize,
        combiner: &Combiner,
        dts: &[DType],
        partial: &[Option<Vec<Reg>>],
    ) -> Result<Option<Vec<Option<Vec<Reg>>>>> {
        use crate::thread_ir::{Special, SubgroupOp};
        if dts.len() != 1 || !self.subgroup_reduced(layout, axis) {
            return Ok(None);
        }
        let dt = dts[0];
        let (op, float_key) = match (combiner, dt) {
            (Combiner::Add, DType::F32 | DType::I32 | DType::U32) => (SubgroupOp::Add, false),
            (Combiner::Max, DType::I32 | DType::U32) => (SubgroupOp::Max, false),
            (Combiner::Min, DType::I32 | DType::U32) => (SubgroupOp::Min, false),
            (Combiner::Max, DType::F32) => (SubgroupOp::Max, true),
            (Combiner::Min, DType::F32) => (SubgroupOp::Min, true),
            _ => return Ok(None),
        };
        let c = |x: &mut Self, v: i64| x.int_const(DType::I32, v);
        // The key of a float: its bits as i32, the magnitude bits flipped when
        // negative (order-preserving and an involution); NaN the worst of all.
        let nan_key = if op == SubgroupOp::Max {
            i32::MIN
        } else {
            i32::MAX
        } as i64;
        let flip = |x: &mut Self, bits: Reg| -> Reg {
            let sh = c(x, 31);
            let sign = x.assign(DType::I32, Expr::Binary(BinaryOp::Shr, bits, sh));
            let m = c(x, 0x7fff_ffff);
            let mask = x.assign(DType::I32, Expr::Binary(BinaryOp::And, sign, m));
            x.assign(DType::I32, Expr::Binary(BinaryOp::Xor, bits, mask))
        };
        let mut reduced: Vec<Option<Vec<Reg>>> = vec![None; partial.len()];
        for r in reps_of(partial) {
            let v = partial[r].as_ref().expect("rep")[0];
            let t = if float_key {
                let bits = self.assign(
                    DType::I32,
                    Expr::Cast {
                        value: v,
                        bitcast: true,
                    },
                );
                let key = flip(self, bits);
                let is_nan = self.assign(DType::I1, Expr::Cmp(CmpPred::Ne, v, v));
                let nk = c(self, nan_key);
                let key = self.assign(
                    DType::I32,
                    Expr::Select {
                        cond: is_nan,
                        on_true: nk,
                        on_false: key,
                    },
                );
                let k = self.assign(DType::I32, Expr::SubgroupReduce { op, value: key });
                let bits = flip(self, k);
                let f = self.assign(
                    DType::F32,
                    Expr::Cast {
                        value: bits,
                        bitcast: true,
                    },
                );
                let all_nan = self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, k, nk));
                let nan = self.constant(DType::F32, crate::ir::Const::Float(f64::NAN));
                self.assign(
                    DType::F32,
                    Expr::Select {
                        cond: all_nan,
                        on_true: nan,
                        on_false: f,
                    },
                )
            } else {
                self.assign(dt, Expr::SubgroupReduce { op, value: v })
            };
            reduced[r] = Some(vec![t]);
        }
        let nsub = self.opt.num_warps;
        if nsub == 1 {
            return Ok(Some(reduced));
        }
        let sliced = layout.slice(axis);
        let out_numel: u32 = sliced.shape().iter().product::<u32>().max(1);
        let out_idx = self.linear_indices(&sliced, sliced.shape())?;
        let arr = self.scratch_for_reduce(dt, out_numel * nsub);
        let (sg, first) = self.hoist(|x| {
            let sg = x.assign(DType::I32, Expr::Special(Special::SubgroupId));
            let sgi = x.assign(DType::I32, Expr::Special(Special::SubgroupInvocationId));
            let zero = x.int_const(DType::I32, 0);
            (sg, x.assign(DType::I1, Expr::Cmp(CmpPred::Eq, sgi, zero)))
        });
        let n = c(self, nsub as i64);
        let reps = reps_of(&reduced);
        // The scratch may still be read by an earlier reduction.
        self.emit(Stmt::Barrier);
        self.open();
        for &r in &reps {
            let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, out_idx[r], n));
            let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, sg));
            let value = reduced[r].as_ref().expect("rep")[0];
            self.emit(Stmt::SharedStore { arr, index, value });
        }
        let body = self.close();
        self.emit(Stmt::If {
            cond: first,
            then_body: body,
            else_body: vec![],
        });
        self.emit(Stmt::Barrier);
        for &r in &reps {
            let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, out_idx[r], n));
            let mut acc: Option<Vec<Reg>> = None;
            for s in 0..nsub {
                let o = c(self, s as i64);
                let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, o));
                let v = vec![self.assign(dt, Expr::SharedLoad { arr, index })];
                acc = Some(match acc {
                    None => v,
                    Some(a) => self.combine(combiner, dts, &a, &v)?,
                });
            }
            reduced[r] = acc;
        }
        Ok(Some(reduced))
    }

    /// The given lane bits, then warp bits, of this thread packed into one index (bit
    /// `k` of the result is the `k`-th bit listed): a thread's position among the
    /// threads that share an axis. At least one bit must be given.
    fn packed_thread_bits(&mut self, lane_bits: &[usize], warp_bits: &[usize]) -> Reg {
        let mut packed: Option<Reg> = None;
        let mut k = 0;
        for (src, bits) in [(self.lane, lane_bits), (self.warp, warp_bits)] {
            for &b in bits {
                let sh = self.int_const(DType::I32, b as i64);
                let v = self.assign(DType::I32, Expr::Binary(BinaryOp::Shr, src, sh));
                let one = self.int_const(DType::I32, 1);
                let bit = self.assign(DType::I32, Expr::Binary(BinaryOp::And, v, one));
                let to = self.int_const(DType::I32, k);
                let placed = self.assign(DType::I32, Expr::Binary(BinaryOp::Shl, bit, to));
                packed = Some(match packed {
                    None => placed,
                    Some(p) => self.assign(DType::I32, Expr::Binary(BinaryOp::Or, p, placed)),
                });
                k += 1;
            }
        }
        packed.expect("at least one thread bit")
    }

    fn zero_i32(&mut self) -> Reg {
        self.int_const(DType::I32, 0)
    }

    fn scratch_for_reduce(&mut self, dtype: DType, len: u32) -> u32 {
        // Each operand of a multi-operand reduction needs its own array, even when two
        // share a dtype: key the extra ones by a distinct name.
        let name = format!("reduce_{dtype}_{}", self.out.shared.len());
        self.shared_array(&name, dtype, len)
    }

    fn cast_dist(&mut self, d: Dist, dtype: DType) -> Dist {
        match d {
            Dist::Uniform(r) => Dist::Uniform(self.cast_to(r, dtype)),
            Dist::Regs { layout, regs } => {
                let regs = regs.into_iter().map(|r| self.cast_to(r, dtype)).collect();
                Dist::Regs { layout, regs }
            }
        }
    }

    pub(crate) fn scan(&mut self, inst: &Inst) -> Result<()> {
        let Op::Scan {
            operands,
            axis,
            reverse,
            combiner,
        } = &inst.op
        else {
            unreachable!()
        };
        let axis = *axis as usize;
        let dts: Vec<DType> = operands.iter().map(|v| self.dtype(*v)).collect();
        let shape = self.shape(operands[0]);
        let mut order = vec![axis as u32];
        order.extend(
            (0..shape.len() as u32)
                .rev()
                .filter(|&d| d as usize != axis),
        );
        // A short axis sits whole in each thread. A long one is split in runs across
        // the threads (lanes, then warps, along the axis): each thread scans its run,
        // then adds the combined totals of the runs before it (`scan_across_threads`).
        // Giving every thread a 4096-element axis unrolled 4096 combines a thread, and
        // drivers took minutes to compile it (found by the fuzzer).
        let threads = self.opt.warp_size * self.opt.num_warps;
        let run = if shape[axis] <= SCAN_IN_THREAD {
            shape[axis]
        } else {
            (shape[axis] / threads).max(SCAN_IN_THREAD.min(shape[axis] / 2).max(1))
        };
        let target = LinearLayout::default_blocked(
            &shape,
            &order,
            run,
            self.opt.warp_size,
            self.opt.num_warps,
        )
        .map_err(|e| Diagnostic::internal(format!("scan layout: {e}")))?;
        let mut regs = vec![];
        for v in operands {
            let d = self.data(*v)?;
            regs.push(self.in_layout(&d, &target)?);
        }
        // Group registers by their coordinate off the axis; order each group along it.
        let n = target.num_regs();
        let mut groups: std::collections::BTreeMap<Vec<u32>, Vec<(u32, u32)>> = Default::default();
        for r in 0..n {
            let mut c = target.apply(r, 0, 0);
            let along = c[axis];
            c[axis] = 0;
            groups.entry(c).or_default().push((along, r));
        }
        let mut out: Vec<Vec<Reg>> = vec![vec![Reg(0); n as usize]; operands.len()];
        for (_, mut members) in groups {
            members.sort();
            if *reverse {
                members.reverse();
            }
            let mut acc: Option<Vec<Reg>> = None;
            let mut last_along: Option<u32> = None;
            for (along, r) in members {
                // Replicated registers hold the same element: reuse, never combine twice.
                if last_along == Some(along) {
                    let prev = acc.clone().expect("scan accumulator");
                    for (j, v) in prev.iter().enumerate() {
                        out[j][r as usize] = *v;
                    }
                    continue;
                }
                last_along = Some(along);
                let vals: Vec<Reg> = regs.iter().map(|op| op[r as usize]).collect();
                let next = match acc {
                    None => vals,
                    Some(a) => self.combine(combiner, &dts, &a, &vals)?,
                };
                for (j, v) in next.iter().enumerate() {
                    out[j][r as usize] = *v;
                }
                acc = Some(next);
            }
        }
        self.scan_across_threads(&target, axis, *reverse, combiner, &dts, &mut out)?;
        for (j, res) in inst.results.iter().enumerate() {
            let d = Dist::Regs {
                layout: target.clone(),
                regs: out[j].clone(),
            };
            self.set(*res, TVal::Data(d));
        }
        Ok(())
    }

    /// The second half of a scan whose axis spans threads: `out` holds each thread's
    /// scan of its own run along `axis` (lanes, then warps, continue the axis, in that
    /// order). Every thread publishes its run's total to shared memory; after a
    /// barrier it combines, in scan order, the totals of the runs before its own (a
    /// loop of as many steps as it has predecessors) and puts that prefix in front of
    /// each of its values. The combine keeps its operand order, so it needs only to
    /// be associative.
    fn scan_across_threads(
        &mut self,
        layout: &LinearLayout,
        axis: usize,
        reverse: bool,
        combiner: &Combiner,
        dts: &[DType],
        out: &mut [Vec<Reg>],
    ) -> Result<()> {
        let lane_bits: Vec<usize> = (0..layout.lane_bases().len())
            .filter(|&b| layout.lane_bases()[b][axis] != 0)
            .collect();
        let warp_bits: Vec<usize> = (0..layout.warp_bases().len())
            .filter(|&b| layout.warp_bases()[b][axis] != 0)
            .collect();
        let parts = 1u32 << (lane_bits.len() + warp_bits.len());
        if parts == 1 {
            return Ok(());
        }
        // This thread's run index along the axis: its lane bits, then its warp bits
        // (blocked along the axis first, so this is the order of the runs).
        let pos = self.packed_thread_bits(&lane_bits, &warp_bits);
        let sliced = layout.slice(axis);
        let rows: u32 = sliced.shape().iter().product::<u32>().max(1);
        let row_idx = self.linear_indices(&sliced, sliced.shape())?;
        let p = self.int_const(DType::I32, parts as i64);
        let arrays: Vec<u32> = dts
            .iter()
            .map(|&d| self.scratch_for_reduce(d, rows * parts))
            .collect();
        // Each row's registers in scan order; the last is the run's total.
        let n = layout.num_regs();
        let mut groups: std::collections::BTreeMap<Vec<u32>, Vec<(u32, u32)>> = Default::default();
        for r in 0..n {
            let mut c = layout.apply(r, 0, 0);
            let along = c[axis];
            c[axis] = 0;
            groups.entry(c).or_default().push((along, r));
        }
        let mut members: Vec<Vec<u32>> = vec![];
        for (_, mut g) in groups {
            g.sort();
            g.dedup_by_key(|(along, _)| *along);
            if reverse {
                g.reverse();
            }
            members.push(g.into_iter().map(|(_, r)| r).collect());
        }
        self.emit(Stmt::Barrier);
        let mut bases = vec![];
        for m in &members {
            let first = m[0] as usize;
            let last = *m.last().expect("run") as usize;
            let base = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, row_idx[first], p));
            let slot = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, pos));
            for (j, arr) in arrays.iter().enumerate() {
                self.emit(Stmt::SharedStore {
                    arr: *arr,
                    index: slot,
                    value: out[j][last],
                });
            }
            bases.push(base);
        }
        self.emit(Stmt::Barrier);
        // The runs before this one, in scan order: 0..pos forward, parts-1 down to
        // pos+1 in reverse.
        let zero = self.int_const(DType::I32, 0);
        let one = self.int_const(DType::I32, 1);
        let last_part = self.int_const(DType::I32, parts as i64 - 1);
        let (count, has_prefix) = if reverse {
            let c = self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, last_part, pos));
            let h = self.assign(DType::I1, Expr::Cmp(CmpPred::Lt, pos, last_part));
            (c, h)
        } else {
            let h = self.assign(DType::I1, Expr::Cmp(CmpPred::Gt, pos, zero));
            (pos, h)
        };
        // Fresh result registers (the in-thread results may be the operand's own
        // registers), holding the in-thread scan until a prefix goes in front.
        let mut results: Vec<Vec<Vec<Reg>>> = vec![];
        for m in &members {
            let mut per_run = vec![];
            for &r in m {
                let regs: Vec<Reg> = (0..dts.len())
                    .map(|j| {
                        let fresh = self.new_reg(dts[j]);
                        self.emit(Stmt::Assign {
                            dst: fresh,
                            expr: Expr::Copy(out[j][r as usize]),
                        });
                        fresh
                    })
                    .collect();
                per_run.push(regs);
            }
            results.push(per_run);
        }
        for (g, m) in members.iter().enumerate() {
            let base = bases[g];
            // The first predecessor in scan order starts the prefix.
            let first_slot = if reverse {
                self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, last_part))
            } else {
                base
            };
            let acc: Vec<Reg> = dts.iter().map(|&d| self.new_reg(d)).collect();
            self.open();
            for (j, arr) in arrays.iter().enumerate() {
                let v = self.assign(
                    dts[j],
                    Expr::SharedLoad {
                        arr: *arr,
                        index: first_slot,
                    },
                );
                self.emit(Stmt::Assign {
                    dst: acc[j],
                    expr: Expr::Copy(v),
                });
            }
            // Steps 1..count: the next predecessor each. The loop runs over every
            // possible step (a uniform bound) and each thread takes the ones it has.
            let iv = self.new_reg(DType::I32);
            let all = self.int_const(DType::I32, parts as i64);
            self.open();
            let take = self.assign(DType::I1, Expr::Cmp(CmpPred::Lt, iv, count));
            self.open();
            let slot = if reverse {
                self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, first_slot, iv))
            } else {
                self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, iv))
            };
            let vals: Vec<Reg> = arrays
                .iter()
                .zip(dts)
                .map(|(arr, &d)| {
                    self.assign(
                        d,
                        Expr::SharedLoad {
                            arr: *arr,
                            index: slot,
                        },
                    )
                })
                .collect();
            let next = self.combine(combiner, dts, &acc, &vals)?;
            for (j, v) in next.iter().enumerate() {
                self.emit(Stmt::Assign {
                    dst: acc[j],
                    expr: Expr::Copy(*v),
                });
            }
            let taken = self.close();
            self.emit(Stmt::If {
                cond: take,
                then_body: taken,
                else_body: vec![],
            });
            let steps = self.close();
            self.emit(Stmt::For {
                iv,
                lower: one,
                upper: all,
                step: one,
                body: steps,
            });
            // The prefix goes in front of every value of the run.
            for (&r, res) in m.iter().zip(&results[g]) {
                let mine: Vec<Reg> = (0..dts.len()).map(|j| out[j][r as usize]).collect();
                let with = self.combine(combiner, dts, &acc, &mine)?;
                for (j, v) in with.iter().enumerate() {
                    self.emit(Stmt::Assign {
                        dst: res[j],
                        expr: Expr::Copy(*v),
                    });
                }
            }
            let body = self.close();
            self.emit(Stmt::If {
                cond: has_prefix,
                then_body: body,
                else_body: vec![],
            });
        }
        for (m, res) in members.iter().zip(&results) {
            for (&r, regs) in m.iter().zip(res) {
                for (j, &x) in regs.iter().enumerate() {
                    out[j][r as usize] = x;
                }
            }
        }
        // Replicated registers of a run read their first copy's result.
        for r in 0..n {
            let c = layout.apply(r, 0, 0);
            if let Some(first) = (0..r).find(|&q| layout.apply(q, 0, 0) == c) {
                for o in out.iter_mut() {
                    o[r as usize] = o[first as usize];
                }
            }
        }
        // The scratch array may be reused by the next reduction or scan.
        self.emit(Stmt::Barrier);
        Ok(())
    }
}

/// Scans whose axis is at most this long run whole in each thread.
const SCAN_IN_THREAD: u32 = 64;

/// The registers holding a partial result (one per output element a thread holds).
/// The most shared-memory reads a thread makes to fold its outputs' partner slots
/// itself (partners times its outputs in the round) instead of going through a tree.
const DIRECT_FOLD_READS: usize = 64;

fn reps_of(partial: &[Option<Vec<Reg>>]) -> Vec<usize> {
    (0..partial.len())
        .filter(|&r| partial[r].is_some())
        .collect()
}
