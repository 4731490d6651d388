//! Rematerialization: recomputing index arithmetic in the layout that needs it.
//!
//! `rows[:, None] * stride + cols[None, :]` broadcasts values built from `arange`,
//! constants and scalars. Moving such a value between layouts through shared memory
//! costs two barriers; recomputing it where it is needed costs a few integer ops,
//! because its elements are functions of their coordinates. [`Expander::remat`] walks
//! back through `arange`, `expand_dims`, `broadcast`, `permute`, hints and elementwise
//! ops and re-emits the value directly in the target layout; anything else (a load, a
//! reduction, a loop-carried value) stops the walk and the caller falls back to a
//! conversion. Results are memoized per (value, layout, dimension map).
//! [`Expander::remat_ptr`] does the same for the offsets of a pointer tile, through
//! `addptr`.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::Result;
use crate::ir::ops::Op;
use crate::ir::Value;
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg};

/// For each dimension of a value, the dimension of the target layout it follows, or
/// `None` when the value has size 1 there (coordinate 0).
pub(crate) type DimMap = Vec<Option<usize>>;

impl Expander<'_> {
    /// The registers of `v` in `target`, where `v`'s dimension `i` follows the target's
    /// dimension `dims[i]`; `None` when `v` cannot be recomputed.
    pub(crate) fn remat(
        &mut self,
        v: Value,
        target: &LinearLayout,
        dims: &DimMap,
        depth: u32,
    ) -> Result<Option<Vec<Reg>>> {
        let n = target.num_regs() as usize;
        match self.vals.get(&v) {
            Some(TVal::Data(Dist::Uniform(r))) => return Ok(Some(vec![*r; n])),
            Some(TVal::Data(Dist::Regs { layout, regs }))
                if layout == target && dims.iter().enumerate().all(|(i, d)| *d == Some(i)) =>
            {
                return Ok(Some(regs.clone()))
            }
            Some(TVal::Data(_)) => {}
            _ => return Ok(None),
        }
        if depth > 48 {
            return Ok(None);
        }
        let key = (v, target.clone(), dims.clone());
        if let Some((r, _)) = self.remat_memo.get(&key) {
            return Ok(Some(r.clone()));
        }
        let Some(op) = self.defs.get(&v).cloned() else {
            return Ok(None);
        };
        let dtype = self.dtype(v);
        let out: Option<Vec<Reg>> = match &op {
            Op::Arange { start, .. } => match dims.first().copied().flatten() {
                Some(d) => Some(self.coordinates(target, d, *start)?),
                None => {
                    let c = self.int_const(crate::ir::DType::I32, *start);
                    Some(vec![c; n])
                }
            },
            op if moves_coordinates(op) => {
                let (inner_v, inner) = through(op, dims, self);
                self.remat(inner_v, target, &inner, depth + 1)?
            }
            Op::Reshape(inner_v) => {
                match unit_dims_only(&self.shape(*inner_v), &self.shape(v), dims) {
                    Some(inner) => self.remat(*inner_v, target, &inner, depth + 1)?,
                    None => None,
                }
            }
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Cmp { .. }
            | Op::Select { .. }
            | Op::Fma { .. }
            | Op::Cast { .. } => {
                let operands = op.operands();
                let mut regs = vec![];
                for o in &operands {
                    match self.remat(*o, target, dims, depth + 1)? {
                        Some(r) => regs.push(r),
                        None => return Ok(None),
                    }
                }
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let r: Vec<Reg> = regs.iter().map(|x| x[i]).collect();
                    let e = match &op {
                        Op::Unary { op, .. } => Expr::Unary(*op, r[0]),
                        Op::Binary { op, .. } => Expr::Binary(*op, r[0], r[1]),
                        Op::Cmp { pred, .. } => Expr::Cmp(*pred, r[0], r[1]),
                        Op::Select { .. } => Expr::Select {
                            cond: r[0],
                            on_true: r[1],
                            on_false: r[2],
                        },
                        Op::Fma { .. } => Expr::Fma(r[0], r[1], r[2]),
                        Op::Cast { bitcast, .. } => Expr::Cast {
                            value: r[0],
                            bitcast: *bitcast,
                        },
                        _ => unreachable!(),
                    };
                    out.push(self.assign(dtype, e));
                }
                Some(out)
            }
            _ => None,
        };
        if let Some(r) = &out {
            let level = self.stmts.len();
            self.remat_memo.insert(key, (r.clone(), level));
        }
        Ok(out)
    }
}

impl Expander<'_> {
    /// The element offsets of pointer tile `v` recomputed in `target` (see [`Expander::remat`]).
    pub(crate) fn remat_ptr(
        &mut self,
        v: Value,
        target: &LinearLayout,
        dims: &DimMap,
        depth: u32,
    ) -> Result<Option<Vec<Reg>>> {
        let n = target.num_regs() as usize;
        match self.vals.get(&v) {
            Some(TVal::Ptr {
                off: Dist::Uniform(r),
                ..
            }) => return Ok(Some(vec![*r; n])),
            Some(TVal::Ptr { .. }) => {}
            _ => return Ok(None),
        }
        if depth > 48 {
            return Ok(None);
        }
        let Some(op) = self.defs.get(&v).cloned() else {
            return Ok(None);
        };
        Ok(match &op {
            Op::AddPtr { ptr, offset } => {
                let (Some(a), Some(b)) = (
                    self.remat_ptr(*ptr, target, dims, depth + 1)?,
                    self.remat(*offset, target, dims, depth + 1)?,
                ) else {
                    return Ok(None);
                };
                let (da, db) = (self.out.reg_ty(a[0]).dtype, self.out.reg_ty(b[0]).dtype);
                let dt = if da.bits() >= db.bits() { da } else { db };
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let x = self.cast_to(a[i], dt);
                    let y = self.cast_to(b[i], dt);
                    out.push(self.assign(dt, Expr::Binary(crate::ir::BinaryOp::Add, x, y)));
                }
                Some(out)
            }
            op if moves_coordinates(op) => {
                let (inner_v, inner) = through(op, dims, self);
                self.remat_ptr(inner_v, target, &inner, depth + 1)?
            }
            _ => None,
        })
    }
}

/// Whether `op` only moves coordinates (`expand_dims`, `broadcast`, `permute`, hints).
fn moves_coordinates(op: &Op) -> bool {
    matches!(
        op,
        Op::ExpandDims { .. } | Op::Broadcast(_) | Op::Permute { .. } | Op::Hint { .. }
    )
}

/// For a reshape from `from` to `to` that only inserts or removes dimensions of size 1
/// (`arange(2).reshape(1, 1, 2)`, an `expand_dims` in another spelling): the dimension
/// map its operand is needed under; `None` for a reshape that regroups elements.
fn unit_dims_only(from: &[u32], to: &[u32], dims: &DimMap) -> Option<DimMap> {
    let kept = |s: &[u32]| -> Vec<usize> { (0..s.len()).filter(|&i| s[i] != 1).collect() };
    let (kf, kt) = (kept(from), kept(to));
    if kf.len() != kt.len() || kf.iter().zip(&kt).any(|(&i, &j)| from[i] != to[j]) {
        return None;
    }
    let mut inner: DimMap = vec![None; from.len()];
    for (&i, &j) in kf.iter().zip(&kt) {
        inner[i] = dims[j];
    }
    Some(inner)
}

/// For an op that only moves coordinates: its operand, and the dimension map the
/// operand is needed under.
fn through(op: &Op, dims: &DimMap, x: &Expander) -> (Value, DimMap) {
    match op {
        Op::ExpandDims { value, axis } => {
            let mut inner = dims.clone();
            inner.remove(*axis as usize);
            (*value, inner)
        }
        Op::Broadcast(v) => {
            let inner = dims
                .iter()
                .zip(x.shape(*v))
                .map(|(d, s)| if s == 1 { None } else { *d })
                .collect();
            (*v, inner)
        }
        Op::Permute { value, perm } => {
            let mut inner: DimMap = vec![None; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inner[p as usize] = dims[i];
            }
            (*value, inner)
        }
        Op::Hint { value, .. } => (*value, dims.clone()),
        other => unreachable!("`{}` does not only move coordinates", other.name()),
    }
}
