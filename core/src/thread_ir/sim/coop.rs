//! Cooperative-matrix statements in the simulator: every subgroup of 32 threads holds
//! its own value of each fragment variable, a `size x size` matrix. Which threads form
//! subgroup `s` (`Special::SubgroupId`) is a fixed permutation of the thread ids, not
//! `32s..32s + 32`, so that a lowering that assumes a grouping fails here.
//!
//! A product is defined as the interpreter computes a dot: exact products, summed and
//! rounded once to the accumulator's dtype. Loads and stores take part in race
//! detection as the subgroup as a whole (an identity no single thread has), so that a
//! thread's store read by a fragment load, or a fragment store read by a thread,
//! without a barrier between them is reported even within one subgroup: WGSL orders
//! neither.

use super::{bug, ints, set1, Sim};
use crate::diag::Result;
use crate::interp::value::{round1, Data};
use crate::thread_ir::{Frag, Stmt};

impl Sim<'_> {
    fn frag(&self, f: Frag) -> Result<&Vec<Vec<f64>>> {
        self.frags
            .get(f.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| bug(format!("fragment {f} read before assignment")))
    }

    /// Thread `i`'s place in the subgroups: subgroup `slot / 32`, invocation `slot %
    /// 32`. The simulator groups threads by a fixed permutation, not as `i / 32`: which
    /// threads share a subgroup is not known, and the lowering must not depend on it.
    pub(super) fn subgroup_slot(&self, i: usize) -> usize {
        (i * 37) % self.t
    }

    /// The threads of subgroup `w`.
    pub(super) fn subgroup_members(&self, w: usize) -> Vec<usize> {
        (0..self.t)
            .filter(|&i| self.subgroup_slot(i) / 32 == w)
            .collect()
    }

    /// The shared-memory element index subgroup `w` passes, checked uniform.
    fn subgroup_index(&self, index: crate::thread_ir::Reg, w: usize) -> Result<i64> {
        let idx = ints(self.reg(index)?)?;
        let members = self.subgroup_members(w);
        let first = idx[members[0]];
        if members.iter().any(|&i| idx[i] != first) {
            return Err(bug(format!(
                "cooperative-matrix index {index} differs within subgroup {w}"
            )));
        }
        Ok(first)
    }

    /// `value` reduced by `op` over each thread's subgroup.
    pub(super) fn subgroup_reduce(
        &self,
        op: crate::thread_ir::SubgroupOp,
        value: crate::thread_ir::Reg,
        dt: crate::ir::DType,
        active: &[bool],
    ) -> Result<Data> {
        use crate::thread_ir::SubgroupOp;
        if active.iter().any(|a| !a) || !self.t.is_multiple_of(32) {
            return Err(bug("a subgroup reduction in divergent control flow"));
        }
        let v = self.reg(value)?;
        let mut out = Data::zeros(dt, self.t);
        for w in 0..self.t / 32 {
            let members = self.subgroup_members(w);
            let r = match v {
                Data::F(x) => {
                    if op != SubgroupOp::Add {
                        return Err(bug("subgroup max/min of floats"));
                    }
                    // The hardware's order is unknown; any is within the tolerance a
                    // float sum has.
                    Data::F(vec![round1(dt, members.iter().map(|&i| x[i]).sum())])
                }
                Data::I(x) => {
                    let it = members.iter().map(|&i| x[i]);
                    let r = match op {
                        SubgroupOp::Add => it.fold(0i64, |a, b| a.wrapping_add(b)),
                        SubgroupOp::Max => it.max().unwrap_or(0),
                        SubgroupOp::Min => it.min().unwrap_or(0),
                    };
                    Data::I(vec![crate::interp::value::wrap1(dt, r)])
                }
            };
            for &i in &members {
                set1(&mut out, i, &r);
            }
        }
        Ok(out)
    }

    /// Fragment memory must be 16-byte aligned, its rows too (SPIR-V's cooperative
    /// matrices ask it; NVIDIA's Vulkan driver silently dropped a misaligned store).
    fn check_aligned(&self, arr: u32, base: i64, stride: u32) -> Result<()> {
        let size = self.k.shared[arr as usize].dtype.size_bytes() as i64;
        if (base * size) % 16 != 0 || (stride as i64 * size) % 16 != 0 {
            return Err(bug(format!(
                "cooperative-matrix access to array {arr} at element {base}, rows {stride} \
                 apart: not 16-byte aligned"
            )));
        }
        Ok(())
    }

    /// The element of shared array `arr` at `(r, c)` of a row-major fragment at `base`.
    fn coop_element(&self, arr: u32, base: i64, stride: u32, r: u32, c: u32) -> Result<usize> {
        let j = base + (r * stride + c) as i64;
        let len = self.shared[arr as usize].len();
        if j < 0 || j as usize >= len {
            return Err(bug(format!(
                "cooperative-matrix access to element {j} outside array {arr} of {len}"
            )));
        }
        Ok(j as usize)
    }

    pub(super) fn coop(&mut self, s: &Stmt) -> Result<()> {
        if self.branch_depth > 0 {
            // The lowering keeps fragments out of branches: naga cannot prove a branch
            // uniform, and fragments assigned in one were lost on the H200.
            return Err(bug("cooperative-matrix statement inside an `if`"));
        }
        let subgroups = self.t / 32;
        match s {
            Stmt::CoopZero { dst } => {
                let n = self.k.frag_ty(*dst).size as usize;
                self.frags[dst.0 as usize] = Some(vec![vec![0.0; n * n]; subgroups]);
            }
            Stmt::CoopCopy { dst, src } => {
                let v = self.frag(*src)?.clone();
                self.frags[dst.0 as usize] = Some(v);
            }
            Stmt::CoopLoad {
                dst,
                arr,
                index,
                stride,
                column_major,
            } => {
                let ty = self.k.frag_ty(*dst);
                if self.k.shared[*arr as usize].dtype != ty.dtype {
                    return Err(bug(format!(
                        "{dst} of {ty} loaded from an array of another type"
                    )));
                }
                let mut out = vec![];
                for w in 0..subgroups {
                    let base = self.subgroup_index(*index, w)?;
                    self.check_aligned(*arr, base, *stride)?;
                    let mut m = vec![0.0; (ty.size * ty.size) as usize];
                    for r in 0..ty.size {
                        for c in 0..ty.size {
                            let (sr, sc) = if *column_major { (c, r) } else { (r, c) };
                            let j = self.coop_element(*arr, base, *stride, sr, sc)?;
                            let Data::F(v) = &self.shared[*arr as usize] else {
                                return Err(bug("cooperative-matrix load of integers"));
                            };
                            m[(r * ty.size + c) as usize] = v[j];
                            self.races.read(*arr, j, self.t + w).map_err(|e| {
                                bug(format!("shared-memory race in a fragment load: {e}"))
                            })?;
                        }
                    }
                    out.push(m);
                }
                self.frags[dst.0 as usize] = Some(out);
            }
            Stmt::CoopStore {
                src,
                arr,
                index,
                stride,
            } => {
                let ty = self.k.frag_ty(*src);
                let adt = self.k.shared[*arr as usize].dtype;
                if adt != ty.dtype {
                    return Err(bug(format!(
                        "{src} of {ty} stored to an array of another type"
                    )));
                }
                let vals = self.frag(*src)?.clone();
                for (w, m) in vals.iter().enumerate() {
                    let base = self.subgroup_index(*index, w)?;
                    self.check_aligned(*arr, base, *stride)?;
                    for r in 0..ty.size {
                        for c in 0..ty.size {
                            let j = self.coop_element(*arr, base, *stride, r, c)?;
                            self.races.write(*arr, j, self.t + w).map_err(|e| {
                                bug(format!("shared-memory race in a fragment store: {e}"))
                            })?;
                            if let Data::F(v) = &mut self.shared[*arr as usize] {
                                v[j] = m[(r * ty.size + c) as usize];
                            }
                            self.overlay_written(*arr, j);
                        }
                    }
                }
            }
            Stmt::CoopMulAdd { dst, a, b, c } => {
                let (ta, tb, tc) = (self.k.frag_ty(*a), self.k.frag_ty(*b), self.k.frag_ty(*c));
                let n = tc.size as usize;
                if ta.size != tc.size || tb.size != tc.size || self.k.frag_ty(*dst) != tc {
                    return Err(bug("cooperative multiply-add of mismatched fragments"));
                }
                let (av, bv, cv) = (self.frag(*a)?, self.frag(*b)?, self.frag(*c)?);
                let out = (0..subgroups)
                    .map(|w| {
                        let mut d = vec![0.0; n * n];
                        for r in 0..n {
                            for col in 0..n {
                                let dot: f64 =
                                    (0..n).map(|x| av[w][r * n + x] * bv[w][x * n + col]).sum();
                                d[r * n + col] = round1(tc.dtype, dot + cv[w][r * n + col]);
                            }
                        }
                        d
                    })
                    .collect();
                self.frags[dst.0 as usize] = Some(out);
            }
            _ => return Err(bug("not a cooperative-matrix statement")),
        }
        Ok(())
    }
}
