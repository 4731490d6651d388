//! Staged `dot` operands copied by the tensor memory accelerator (TMA, sm_90).
//!
//! A staged load that came from a block pointer (or a tensor descriptor) keeps the
//! pointer's parts ([`TensorBox`]). Where the target has TMA ([`ExpandOptions::tma`]),
//! the ring is the `wgmma` form (swizzled, not transposed), and the specialization
//! proves what the hardware needs (a 16-byte aligned base buffer parameter, a
//! contiguous innermost dimension, outer strides multiples of 16 bytes; shape and
//! strides parameters or constants, so the host can build the map from the launch's
//! arguments), the tile is copied by one thread as boxes of the ring's swizzled blocks
//! ([`TensorMap`], a hidden parameter), completing on a transaction barrier per slot.
//! Elements outside the tensor are zero-filled by the hardware, which is what the
//! block pointer's boundary check and zero padding say.
//!
//! Phases: a TMA ring's `next` register counts loads modulo twice the slots, so a
//! staged tile's register says both its slot (`c mod S`) and the parity of its
//! barrier's phase (`c >= S`): the `k`-th load into the ring fills slot `k mod S`, the
//! `k div S`-th phase of that slot's barrier. The barriers are initialised where the
//! ring is first filled (before each run of the loop, so a persistent kernel's next
//! tile starts from phase 0), and the loop's exit waits for the prefetches past its end,
//! so nothing is in flight when they are initialised again or the program ends.
//!
//! [`ExpandOptions::tma`]: super::ExpandOptions::tma

use super::shared_tile::SwizzledTile;
use super::{Dist, Expander, Ring, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::TensorBox;
use crate::ir::{BinaryOp, CmpPred, DType, Op, Value, ValueDef};
use crate::thread_ir::tma::{Extent, TensorMap};
use crate::thread_ir::{Expr, Param, ParamKind, Reg, Special, Stmt};

/// How one staged load is copied: the map (its parameter once declared) and the
/// tile's origin (outermost first).
pub(crate) struct TmaCopy {
    pub map: TensorMap,
    pub origin: Vec<Value>,
    /// The base's offset from its buffer parameter, in elements, and the log2 of the
    /// elements in 16 bytes: the third coordinate is the offset shifted right by it.
    pub shift: Option<(Value, u32)>,
    /// Strips of the swizzled tile, each one box: elements between their starts in
    /// shared memory, and columns between them in the tensor.
    pub strips: u32,
    pub strip_len: u32,
    pub strip_cols: u32,
}

impl Expander<'_> {
    /// How a staged load with `bx` into `tile` of `dtype` is copied by TMA; `None`
    /// where the target, the tile or the specialization does not allow it.
    pub(crate) fn tma_copy_of(
        &self,
        bx: Option<&TensorBox>,
        tile: &SwizzledTile,
        dtype: DType,
    ) -> Option<TmaCopy> {
        let bx = bx.filter(|_| self.opt.tma)?;
        // f32 (tf32) tiles of 64 rows or more, where `b` is not transposed through
        // registers ([`ExpandOptions::wgmma_register_a`]): the tf32 product's `a` by
        // TMA took 256x128x32 blocks from 0.74x to 0.86x cuBLAS and left 128x256x32
        // and 64-row tiles as they were, while 16-row tiles lost 7% (H200, run 94).
        // With `b` transposed through registers it gained 1.5% with 256x128x32 blocks
        // and lost 23% with 128x256x32 ones (run 68).
        //
        // [`ExpandOptions::wgmma_register_a`]: super::ExpandOptions::wgmma_register_a
        let f32_ok = self.opt.wgmma_register_a && tile.rows >= 64;
        if bx.rank() != 2 || tile.transposed || tile.rows > 256 || (dtype == DType::F32 && !f32_ok)
        {
            return None;
        }
        let elem = dtype.size_bytes() as u64;
        // The base: a buffer parameter, 16-byte aligned by the specialization, or one
        // plus a scalar offset that is a multiple of 16 bytes (a batch's or a head's
        // matrix, as attention's `V + qvk_offset`): a third dimension of 16-byte steps
        // then moves the box there, the first two keeping the block pointer's bounds.
        let base = self.loop_invariant_origin(bx.base());
        let (base, shift) = match (self.k.value(base).def, self.defs.get(&base)) {
            (ValueDef::Param(_), _) => (base, None),
            (ValueDef::Result, Some(Op::AddPtr { ptr, offset }))
                if self.k.ty(*offset).rank() == 0 =>
            {
                (self.loop_invariant_origin(*ptr), Some(*offset))
            }
            _ => return None,
        };
        let ValueDef::Param(p) = self.k.value(base).def else {
            return None;
        };
        let buffer = self.param_index[p as usize];
        let aligned = |v: Value| self.axis_proven.get(self.k, v).divisibility[0] * elem >= 16;
        if !aligned(base) || shift.is_some_and(|s| !aligned(s)) {
            return None;
        }
        // The innermost dimension contiguous; the outer stride a multiple of 16 bytes.
        let (strides, shape) = (bx.strides(), bx.shape());
        if self.axis_proven.get(self.k, strides[1]).constant != Some(1)
            && self.host_extent(strides[1]) != Some(Extent::Const(1))
            || !aligned(strides[0])
        {
            return None;
        }
        let extent = |v: Value| self.host_extent(v);
        let mut map = TensorMap {
            buffer,
            dtype,
            dims: vec![extent(shape[1])?, extent(shape[0])?],
            strides: vec![extent(strides[0])?],
            box_dims: vec![tile.block_cols(), tile.rows],
            swizzle: tile.bytes,
        };
        let per_step = (16 / elem) as u32;
        if shift.is_some() {
            // 2^31 steps: any offset a program can name.
            map.dims.push(Extent::Const(1 << 31));
            map.strides.push(Extent::Const(per_step as i64));
            map.box_dims.push(1);
        }
        Some(TmaCopy {
            map,
            origin: bx.offsets().to_vec(),
            shift: shift.map(|s| (s, per_step.trailing_zeros())),
            strips: tile.cols / tile.block_cols(),
            strip_len: tile.rows * tile.block_cols(),
            strip_cols: tile.block_cols(),
        })
    }

    /// The value a loop-carried argument always holds where every loop around it
    /// yields it unchanged (a block pointer's base, shape and strides are carried as
    /// parts), else `v`.
    fn loop_invariant_origin(&self, v: Value) -> Value {
        fn find(b: &crate::ir::Block, v: Value) -> Option<Value> {
            for inst in &b.insts {
                if let Op::For { init, body, .. } = &inst.op {
                    if let Some(i) = body.args.iter().skip(1).position(|a| *a == v) {
                        let yields = match body.insts.last().map(|i| &i.op) {
                            Some(Op::Yield(y)) => y,
                            _ => return None,
                        };
                        return (yields.get(i) == Some(&v)).then(|| init[i]);
                    }
                }
                for nested in inst.op.blocks() {
                    if let Some(x) = find(nested, v) {
                        return Some(x);
                    }
                }
            }
            None
        }
        match self.k.value(v).def {
            ValueDef::BlockArg => match find(&self.k.body, v) {
                Some(init) => self.loop_invariant_origin(init),
                None => v,
            },
            _ => v,
        }
    }

    /// A scalar the host knows at launch: a parameter or a constant (through casts
    /// between integer types and loops that carry it unchanged).
    fn host_extent(&self, v: Value) -> Option<Extent> {
        let v = self.loop_invariant_origin(v);
        match self.k.value(v).def {
            ValueDef::Param(p) => {
                let ty = self.k.ty(v);
                (ty.rank() == 0 && ty.dtype().is_some_and(|d| d.is_int()))
                    .then(|| Extent::Param(self.param_index[p as usize]))
            }
            ValueDef::BlockArg => None,
            ValueDef::Result => match self.defs.get(&v)? {
                Op::Const(crate::ir::ops::Const::Int(c)) => Some(Extent::Const(*c)),
                Op::Cast {
                    value,
                    bitcast: false,
                } if self.k.ty(*value).dtype().is_some_and(|d| d.is_int()) => {
                    self.host_extent(*value)
                }
                _ => None,
            },
        }
    }

    /// The parameter of tensor map `m` (one per distinct map).
    fn tensor_map_param(&mut self, m: &TensorMap) -> u32 {
        if let Some(i) = self
            .out
            .params
            .iter()
            .position(|p| matches!(&p.kind, ParamKind::TensorMap(x) if x == m))
        {
            return i as u32;
        }
        let name = format!("tensor_map{}", self.out.params.len());
        self.out.params.push(Param {
            name,
            kind: ParamKind::TensorMap(m.clone()),
        });
        self.out.params.len() as u32 - 1
    }

    /// The transaction barriers of a new TMA ring of `stages` slots, initialised here
    /// by thread 0 (then a barrier, before any thread waits on them).
    pub(crate) fn tma_ring_barriers(&mut self, name: &str, stages: u32) -> u32 {
        let bars = self.shared_array_aligned(&format!("{name}_full"), DType::I64, stages, 8);
        let own = self.thread_zero();
        self.open();
        for s in 0..stages {
            let index = self.int_const(DType::I32, s as i64);
            self.emit(Stmt::MbarrierInit {
                arr: bars,
                index,
                count: 1,
            });
        }
        let inits = self.close();
        self.emit(Stmt::If {
            cond: own,
            then_body: inits,
            else_body: vec![],
        });
        self.emit(Stmt::Barrier);
        bars
    }

    fn thread_zero(&mut self) -> Reg {
        let tid = self.assign(DType::I32, Expr::Special(Special::ThreadId));
        let zero = self.int_const(DType::I32, 0);
        self.assign(DType::I1, Expr::Cmp(CmpPred::Eq, tid, zero))
    }

    /// A TMA ring's load counter `c` (`0 .. 2 * stages`) as its slot and the parity
    /// of the slot barrier's phase.
    pub(crate) fn tma_slot_parity(&mut self, ring: &Ring, c: Reg) -> (Reg, Reg) {
        let stages = self.int_const(DType::I32, ring.stages as i64);
        let zero = self.int_const(DType::I32, 0);
        let one = self.int_const(DType::I32, 1);
        let second = self.assign(DType::I1, Expr::Cmp(CmpPred::Ge, c, stages));
        let back = self.assign(
            DType::I32,
            Expr::Select {
                cond: second,
                on_true: stages,
                on_false: zero,
            },
        );
        let slot = self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, c, back));
        let parity = self.assign(
            DType::I32,
            Expr::Select {
                cond: second,
                on_true: one,
                on_false: zero,
            },
        );
        (slot, parity)
    }

    /// Thread 0 announces the tile's bytes on its slot's barrier and copies each strip
    /// as one box into the slot starting at element `base`.
    pub(crate) fn tma_copies(
        &mut self,
        copy: &TmaCopy,
        ring: &Ring,
        slot: Reg,
        base: Reg,
    ) -> Result<()> {
        let bars = ring
            .bars
            .ok_or_else(|| Diagnostic::internal("a TMA copy into a ring without barriers"))?;
        let map = self.tensor_map_param(&copy.map);
        let origin: Vec<Reg> = copy
            .origin
            .iter()
            .map(|&v| match self.data(v)? {
                Dist::Uniform(r) => Ok(r),
                Dist::Regs { .. } => {
                    Err(Diagnostic::internal("a block pointer offset in registers"))
                }
            })
            .collect::<Result<_>>()?;
        let step = match copy.shift {
            Some((offset, log2)) => {
                let Dist::Uniform(r) = self.data(offset)? else {
                    return Err(Diagnostic::internal(
                        "a block pointer's base offset in registers",
                    ));
                };
                let r = if self.out.reg_ty(r).dtype == DType::I32 {
                    r
                } else {
                    self.assign(
                        DType::I32,
                        Expr::Cast {
                            value: r,
                            bitcast: false,
                        },
                    )
                };
                let k = self.int_const(DType::I32, log2 as i64);
                Some(self.assign(DType::I32, Expr::Binary(BinaryOp::Shr, r, k)))
            }
            None => None,
        };
        let own = self.thread_zero();
        self.open();
        self.emit(Stmt::MbarrierArriveTx {
            arr: bars,
            index: slot,
            bytes: copy.map.box_bytes() * copy.strips,
        });
        for s in 0..copy.strips {
            let (dst, col) = if s == 0 {
                (base, origin[1])
            } else {
                let len = self.int_const(DType::I32, (s * copy.strip_len) as i64);
                let cols = self.int_const(DType::I32, (s * copy.strip_cols) as i64);
                (
                    self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, len)),
                    self.assign(DType::I32, Expr::Binary(BinaryOp::Add, origin[1], cols)),
                )
            };
            self.emit(Stmt::TmaLoad {
                arr: ring.arr,
                shared_index: dst,
                map,
                coords: [col, origin[0]].into_iter().chain(step).collect(),
                bar_arr: bars,
                bar_index: slot,
            });
        }
        let copies = self.close();
        self.emit(Stmt::If {
            cond: own,
            then_body: copies,
            else_body: vec![],
        });
        Ok(())
    }

    /// Every thread waits for the phase of the TMA-staged tile `c` of `ring`.
    pub(crate) fn tma_wait(&mut self, ring: &Ring, c: Reg) -> Result<()> {
        let bars = ring
            .bars
            .ok_or_else(|| Diagnostic::internal("a TMA wait on a ring without barriers"))?;
        let (slot, parity) = self.tma_slot_parity(ring, c);
        self.emit(Stmt::MbarrierWait {
            arr: bars,
            index: slot,
            parity,
        });
        Ok(())
    }

    /// After a loop: waits for the TMA copies of the staged tiles it carried out (the
    /// prefetches past its end), so that none is in flight afterwards.
    pub(crate) fn tma_drain(&mut self, carried: &[TVal]) -> Result<()> {
        for s in carried {
            if let TVal::Staged { ring, slot } = s {
                let r = self.rings.get(ring).cloned();
                if let Some(r) = r.filter(|r| r.bars.is_some()) {
                    self.tma_wait(&r, *slot)?;
                }
            }
        }
        Ok(())
    }
}
