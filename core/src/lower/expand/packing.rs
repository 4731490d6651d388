//! Packing: values kept in the vector registers of the wide loads that produced them.
//!
//! A wide load (`memory.rs`) fills one vector register and extracts its lanes into
//! scalar registers; [`Expander::extracted`] records, for each such register, the
//! vector and lane it came from. Code that would rebuild the vector reuses it instead:
//! - staging stores of `dot` operands write the loaded vector as it is
//!   ([`Expander::vector_of`]; a new vector is constructed from the lanes otherwise);
//! - a loop-carried 16-bit tile whose first value comes whole from wide loads is kept
//!   packed ([`Expander::packed_slots`]): vector registers carry it across iterations,
//!   the slot's scalar registers are extracted from them at the top of each iteration
//!   and after the loop, and each new value is copied in as whole vectors (or built
//!   from scalars), so that the words reach shared memory as loaded: no conversions,
//!   half the registers.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::DType;
use crate::thread_ir::{Expr, Reg, RegTy, Stmt};

impl Expander<'_> {
    /// When `init` (a loop-carried tile's first value) comes whole from wide 16-bit
    /// loads, keeps `slot` packed: vector registers carry it, so that the words go to
    /// shared memory as loaded (no conversions, half the registers).
    pub(super) fn pack_slot(&mut self, slot: &TVal, init: &TVal) {
        let (
            TVal::Data(Dist::Regs { layout, regs }),
            TVal::Data(Dist::Regs {
                layout: il,
                regs: ir,
            }),
        ) = (slot, init)
        else {
            return;
        };
        if layout != il || self.out.reg_ty(regs[0]).dtype.size_bytes() != 2 {
            return;
        }
        if let Some((width, vectors)) = self.packed_groups(ir) {
            let fresh = vectors
                .iter()
                .map(|v| self.new_reg_ty(self.out.reg_ty(*v)))
                .collect();
            self.packed_slots.insert(regs[0], (width, fresh));
        }
    }

    /// The vectors `regs` were extracted from, a group of `width` consecutive
    /// registers a vector, lanes in order; `None` unless all of them are.
    fn packed_groups(&self, regs: &[Reg]) -> Option<(usize, Vec<Reg>)> {
        let &(first, _) = self.extracted.get(regs.first()?)?;
        let width = self.out.reg_ty(first).lanes as usize;
        if width < 2 || !regs.len().is_multiple_of(width) {
            return None;
        }
        regs.chunks(width)
            .map(|group| {
                let &(v, _) = self.extracted.get(&group[0])?;
                let in_order = group
                    .iter()
                    .enumerate()
                    .all(|(j, r)| self.extracted.get(r) == Some(&(v, j as u8)));
                (in_order && self.out.reg_ty(v).lanes as usize == width).then_some(v)
            })
            .collect::<Option<Vec<Reg>>>()
            .map(|vs| (width, vs))
    }

    /// Re-reads a packed slot's registers from its vectors (and records them as
    /// extracted, so staging stores reuse the vectors).
    pub(super) fn unpack_slot(&mut self, slot: &TVal) {
        let TVal::Data(Dist::Regs { regs, .. }) = slot else {
            return;
        };
        let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() else {
            return;
        };
        for (g, v) in vectors.iter().enumerate() {
            for j in 0..width {
                let dst = regs[g * width + j];
                self.emit(Stmt::Assign {
                    dst,
                    expr: Expr::Extract {
                        vector: *v,
                        lane: j as u8,
                    },
                });
                self.extracted.insert(dst, (*v, j as u8));
            }
        }
    }

    /// Copies `v` into `slot` when the slot is packed (into its vectors: copied from
    /// another packed slot or from the wide loads `v` was extracted from, else built
    /// from `v`'s registers); returns whether it was.
    pub(super) fn store_packed(&mut self, slot: &TVal, v: &TVal) -> Result<bool> {
        let TVal::Data(Dist::Regs { layout, regs }) = slot else {
            return Ok(false);
        };
        let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() else {
            return Ok(false);
        };
        let TVal::Data(vd) = v else {
            return Err(Diagnostic::internal("carried value changes kind"));
        };
        let src = self.in_layout(vd, layout)?;
        let dtype = self.out.reg_ty(regs[0]).dtype;
        // From another packed slot, from wide loads, or built from scalars.
        let from = match self.packed_slots.get(&src[0]).cloned() {
            Some((w, vs)) if w == width => Some(vs),
            _ => self
                .packed_groups(&src)
                .filter(|(w, _)| *w == width)
                .map(|(_, vs)| vs),
        };
        for (g, dst) in vectors.iter().enumerate() {
            let expr = match &from {
                Some(vs) => Expr::Copy(vs[g]),
                None => Expr::Construct(
                    src[g * width..(g + 1) * width]
                        .iter()
                        .map(|r| self.cast_to(*r, dtype))
                        .collect(),
                ),
            };
            self.emit(Stmt::Assign { dst: *dst, expr });
        }
        Ok(true)
    }

    /// Packs `tmp`, a fresh slot like `slot`, as `slot` is packed (with vectors of its
    /// own).
    pub(super) fn pack_like(&mut self, tmp: &TVal, slot: &TVal) {
        if let (TVal::Data(Dist::Regs { regs, .. }), TVal::Data(Dist::Regs { regs: t, .. })) =
            (slot, tmp)
        {
            if let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() {
                let fresh = vectors
                    .iter()
                    .map(|v| self.new_reg_ty(self.out.reg_ty(*v)))
                    .collect();
                self.packed_slots.insert(t[0], (width, fresh));
            }
        }
    }

    /// A vector register holding `lanes`: the wide load they were extracted from when
    /// they are its lanes in order, else a new vector built from them.
    pub(super) fn vector_of(&mut self, lanes: &[Reg], dtype: DType) -> Reg {
        if let Some(&(v, 0)) = self.extracted.get(&lanes[0]) {
            let same = lanes
                .iter()
                .enumerate()
                .all(|(i, r)| self.extracted.get(r) == Some(&(v, i as u8)));
            let ty = self.out.reg_ty(v);
            if same && ty.lanes as usize == lanes.len() && ty.dtype == dtype {
                return v;
            }
        }
        let v = self.new_reg_ty(RegTy {
            dtype,
            lanes: lanes.len() as u8,
        });
        let parts = lanes.iter().map(|&r| self.cast_to(r, dtype)).collect();
        self.emit(Stmt::Assign {
            dst: v,
            expr: Expr::Construct(parts),
        });
        v
    }
}
