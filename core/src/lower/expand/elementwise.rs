//! Elementwise ops: one expression a register, over operands aligned to one layout
//! ([`Expander::align`]), a broadcast operand taken anew from its smaller source; and
//! the elementwise ops of pointer tiles (`addptr`, `select` between pointers of one
//! argument), which compute element offsets.

use super::dist::{self, Dist};
use super::{Expander, TVal};
use crate::diag::{Diagnostic, ErrorKind, Result};
use crate::ir::ops::Op;
use crate::ir::{DType, Value};
use crate::thread_ir::{Expr, Reg};

impl Expander<'_> {
    /// The operands of an elementwise op, a broadcast one taken anew from its smaller
    /// source in the layout of the first other distributed operand (converting the
    /// source, not the broadcast tile: `acc + bias[None, :]` with a dot's accumulator
    /// moves 64 elements, not 128x64, through shared memory).
    fn elementwise_operands(&mut self, operands: &[Value]) -> Result<Vec<Dist>> {
        let mut dists: Vec<Dist> = operands
            .iter()
            .map(|v| self.data(*v))
            .collect::<Result<_>>()?;
        let source = |x: &Self, v: Value| match x.defs.get(&v) {
            Some(Op::Broadcast(s)) if x.shape(*s) != x.shape(v) => Some(*s),
            _ => None,
        };
        let target = operands.iter().zip(&dists).find_map(|(v, d)| match d {
            Dist::Regs { layout, .. } if source(self, *v).is_none() => Some(layout.clone()),
            _ => None,
        });
        let Some(target) = target else {
            return Ok(dists);
        };
        for (i, v) in operands.iter().enumerate() {
            let Some(src) = source(self, *v) else {
                continue;
            };
            match (&dists[i], self.get(src)?) {
                (Dist::Regs { layout, .. }, TVal::Data(Dist::Regs { .. })) if *layout != target => {
                }
                _ => continue,
            }
            let src_shape = self.shape(src);
            let proj = target.project_onto(&src_shape);
            let map = proj.register_map(&target, |c| {
                c.iter()
                    .zip(&src_shape)
                    .map(|(&x, &s)| if s == 1 { 0 } else { x })
                    .collect()
            });
            let Some(map) = map else { continue };
            let d = self.data(src)?;
            let regs = self.in_layout(&d, &proj)?;
            dists[i] = Dist::Regs {
                layout: target.clone(),
                regs: map.into_iter().map(|j| regs[j as usize]).collect(),
            };
        }
        Ok(dists)
    }

    /// Applies an elementwise expression to aligned operands.
    pub fn elementwise(
        &mut self,
        operands: &[Value],
        f: impl Fn(usize, &[Reg]) -> Expr,
        dtype: DType,
    ) -> Result<Dist> {
        let dists = self.elementwise_operands(operands)?;
        let (layout, regs) = self.align(&dists)?;
        match layout {
            None => {
                let r: Vec<Reg> = regs.iter().map(|v| v[0]).collect();
                Ok(Dist::Uniform(self.assign(dtype, f(0, &r))))
            }
            Some(layout) => {
                let n = layout.num_regs() as usize;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let r: Vec<Reg> = regs.iter().map(|v| v[i]).collect();
                    out.push(self.assign(dtype, f(i, &r)));
                }
                Ok(Dist::Regs { layout, regs: out })
            }
        }
    }

    pub(super) fn select_ptr(&mut self, cond: Value, a: Value, b: Value) -> Result<TVal> {
        let (TVal::Ptr { root: ra, off: oa }, TVal::Ptr { root: rb, off: ob }) =
            (self.get(a)?.clone(), self.get(b)?.clone())
        else {
            return Err(Diagnostic::internal(
                "select of pointers without pointer operands",
            ));
        };
        if ra != rb {
            return Err(self.err(
                ErrorKind::Backend,
                "a pointer that may point into two different arguments cannot be compiled: WGSL and PTX kernels address each argument separately",
            ));
        }
        let c = self.data(cond)?;
        let dt = dist::dist_dtype(self, &oa);
        let (layout, regs) = self.align(&[c, oa, ob])?;
        let off = match layout {
            None => Dist::Uniform(self.assign(
                dt,
                Expr::Select {
                    cond: regs[0][0],
                    on_true: regs[1][0],
                    on_false: regs[2][0],
                },
            )),
            Some(layout) => {
                let n = layout.num_regs() as usize;
                let mut out = vec![];
                for i in 0..n {
                    out.push(self.assign(
                        dt,
                        Expr::Select {
                            cond: regs[0][i],
                            on_true: regs[1][i],
                            on_false: regs[2][i],
                        },
                    ));
                }
                Dist::Regs { layout, regs: out }
            }
        };
        Ok(TVal::Ptr { root: ra, off })
    }

    pub(super) fn add_ptr(&mut self, ptr: Value, offset: Value) -> Result<TVal> {
        let TVal::Ptr { root, off } = self.get(ptr)?.clone() else {
            return Err(Diagnostic::internal("addptr of a non-pointer"));
        };
        let add = self.data(offset)?;
        let (dp, da) = (dist::dist_dtype(self, &off), self.dtype(offset));
        let dt = if dp.bits() >= da.bits() { dp } else { da };
        // An offset in another layout than the pointer's is recomputed in the
        // pointer's where it is index arithmetic (`(k + rk)[None, :] * M`, in a loop),
        // rather than moved through shared memory.
        let add = match (&off, &add) {
            (Dist::Regs { layout, .. }, Dist::Regs { layout: la, .. }) if la != layout => {
                let layout = layout.clone();
                let regs = self.value_in_layout(offset, &add, &layout)?;
                Dist::Regs { layout, regs }
            }
            _ => add,
        };
        let (layout, regs) = self.align(&[off, add])?;
        let sum = |x: &mut Self, a: Reg, b: Reg| -> Reg {
            let a = x.cast_to(a, dt);
            let b = x.cast_to(b, dt);
            x.assign(dt, Expr::Binary(crate::ir::BinaryOp::Add, a, b))
        };
        let off = match layout {
            None => Dist::Uniform(sum(self, regs[0][0], regs[1][0])),
            Some(layout) => {
                let mut out = vec![];
                for i in 0..layout.num_regs() as usize {
                    out.push(sum(self, regs[0][i], regs[1][i]));
                }
                Dist::Regs { layout, regs: out }
            }
        };
        Ok(TVal::Ptr { root, off })
    }
}
