//! Which registers hold the same value in every thread of a program (or of a warp),
//! and so which control flow every thread takes together: what the verifier needs to
//! check that collective statements (barriers, warp shuffles, subgroup builtins,
//! tensor-core and cooperative-matrix statements) sit in uniform control flow.
//!
//! A forward analysis to a fixed point over the lattice `Program` > `Warp` >
//! `Thread`. Constants, scalar parameters and program ids are uniform in the program;
//! the thread id is not; `tid >> k` (k at least 5) and `tid / (32 m)` are uniform in
//! each warp of 32, as are the subgroup id and subgroup reductions (subgroups are
//! warps where the lowering uses them). Arithmetic, loads and shared loads are as
//! uniform as their operands; atomics, shuffles and matrix fragments are per thread.
//! A register assigned under control flow is at most as uniform as that control flow
//! (its conditions and loop bounds), and one assigned several times (loop-carried) at
//! most as uniform as each assignment.

use super::{Expr, Reg, Special, Stmt, ThreadKernel};
use crate::ir::{BinaryOp, Const};

/// How widely a value is shared: by every thread of the program, by the threads of
/// each warp of 32, or not at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Uniformity {
    Thread,
    Warp,
    Program,
}

/// The uniformity of every register of `k`.
pub fn uniformity(k: &ThreadKernel) -> Vec<Uniformity> {
    let mut writes = vec![0u32; k.regs.len()];
    let mut single = vec![None; k.regs.len()];
    single_assignments(&k.body, &mut writes, &mut single);
    let mut a = Analysis {
        regs: vec![Uniformity::Program; k.regs.len()],
        single,
        changed: true,
    };
    while a.changed {
        a.changed = false;
        a.body(&k.body, Uniformity::Program);
    }
    a.regs
}

/// Registers whose assignment turns per-thread values into one value per warp (the
/// warp index `tid >> k`, `tid / (32 m)`), where that assignment runs in control flow
/// every lane of a warp takes: the places where a backend can tell its assembler that
/// the value is warp-uniform (PTX: a `shfl.sync.idx` from lane 0), so that what is
/// computed from it (addresses of warp-owned tiles, `wgmma` descriptors) can live in
/// uniform registers.
pub fn warp_index_registers(k: &ThreadKernel) -> Vec<bool> {
    let regs = uniformity(k);
    let mut out = vec![false; regs.len()];
    mark_warp_indices(&k.body, &regs, &mut out);
    out
}

fn mark_warp_indices(body: &[Stmt], regs: &[Uniformity], out: &mut [bool]) {
    let of = |r: &Reg| regs.get(r.0 as usize).copied();
    for s in body {
        if let Stmt::Assign {
            dst,
            expr: Expr::Binary(BinaryOp::Shr | BinaryOp::Div, a, _),
        } = s
        {
            if of(dst) == Some(Uniformity::Warp) && of(a) == Some(Uniformity::Thread) {
                out[dst.0 as usize] = true;
            }
        }
        for b in s.bodies() {
            mark_warp_indices(b, regs, out);
        }
    }
}

/// `single[r]`: the expression of `r`'s assignment where `r` is written exactly once.
fn single_assignments<'a>(body: &'a [Stmt], writes: &mut [u32], single: &mut [Option<&'a Expr>]) {
    for s in body {
        for w in s.writes() {
            if let Some(n) = writes.get_mut(w.0 as usize) {
                *n += 1;
                single[w.0 as usize] = None;
                if let (Stmt::Assign { expr, .. }, 1) = (s, *n) {
                    single[w.0 as usize] = Some(expr);
                }
            }
        }
        for b in s.bodies() {
            single_assignments(b, writes, single);
        }
    }
}

struct Analysis<'a> {
    regs: Vec<Uniformity>,
    single: Vec<Option<&'a Expr>>,
    changed: bool,
}

impl Analysis<'_> {
    fn of(&self, r: Reg) -> Uniformity {
        self.regs
            .get(r.0 as usize)
            .copied()
            .unwrap_or(Uniformity::Thread)
    }

    fn lower(&mut self, r: Reg, u: Uniformity) {
        if let Some(slot) = self.regs.get_mut(r.0 as usize) {
            if u < *slot {
                *slot = u;
                self.changed = true;
            }
        }
    }

    fn all(&self, regs: &[Reg]) -> Uniformity {
        regs.iter()
            .map(|r| self.of(*r))
            .min()
            .unwrap_or(Uniformity::Program)
    }

    /// `tid >> k` with k >= 5, or `tid / (32 m)`: one value per warp.
    fn warp_index(&self, op: BinaryOp, a: Reg, b: Reg) -> bool {
        let is_tid = self.assigned_special(a) == Some(Special::ThreadId);
        let c = self.constant(b);
        is_tid
            && match (op, c) {
                (BinaryOp::Shr, Some(k)) => k >= 5,
                (BinaryOp::Div, Some(d)) => d > 0 && d % 32 == 0,
                _ => false,
            }
    }

    fn assigned_special(&self, r: Reg) -> Option<Special> {
        match self.single.get(r.0 as usize).copied().flatten() {
            Some(Expr::Special(s)) => Some(*s),
            _ => None,
        }
    }

    fn constant(&self, r: Reg) -> Option<i64> {
        match self.single.get(r.0 as usize).copied().flatten() {
            Some(Expr::Const(Const::Int(i))) => Some(*i),
            _ => None,
        }
    }

    fn expr(&self, e: &Expr) -> Uniformity {
        match e {
            Expr::Const(_) | Expr::Param(_) | Expr::Address(_) => Uniformity::Program,
            Expr::Special(Special::ProgramId(_) | Special::NumPrograms(_)) => Uniformity::Program,
            Expr::Special(Special::SubgroupId) => Uniformity::Warp,
            Expr::Special(Special::ThreadId | Special::SubgroupInvocationId) => Uniformity::Thread,
            Expr::Binary(op, a, b) if self.warp_index(*op, *a, *b) => Uniformity::Warp,
            Expr::ShuffleXor { .. } => Uniformity::Thread,
            Expr::SubgroupReduce { value, .. } | Expr::WarpUniform(value) => {
                self.of(*value).max(Uniformity::Warp)
            }
            other => self.all(&other.operands()),
        }
    }

    fn body(&mut self, body: &[Stmt], control: Uniformity) {
        for s in body {
            match s {
                Stmt::Assign { dst, expr } => {
                    let u = self.expr(expr).min(control);
                    self.lower(*dst, u);
                }
                Stmt::For {
                    iv,
                    lower,
                    upper,
                    step,
                    body,
                } => {
                    let bounds = self.all(&[*lower, *upper, *step]).min(control);
                    self.lower(*iv, bounds);
                    self.body(body, bounds);
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let inner = self.of(*cond).min(control);
                    self.body(then_body, inner);
                    self.body(else_body, inner);
                }
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    ..
                } => {
                    // Whether a thread runs the condition again depends on the
                    // condition itself.
                    let inner = self.of(*cond).min(control);
                    self.body(cond_body, inner);
                    self.body(body, inner);
                }
                other => {
                    for w in other.writes() {
                        self.lower(w, Uniformity::Thread);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_ir::parse;

    #[test]
    fn thread_warp_and_program_values() {
        let k = parse(
            "thread_kernel @k(x: buffer<f32>, n: i32) threads 64 {
  r0: i32 = thread_id
  r1: i32 = const 5
  r2: i32 = shr r0, r1
  r3: i32 = param n
  r4: i32 = add r3, r1
  r5: i32 = add r0, r3
  r6: i1 = cmp lt r5, r3
  if r6 {
    r7: i32 = add r3, r3
  } else {
  }
  r8: f32 = load x[r4]
}
",
        )
        .unwrap();
        let u = uniformity(&k);
        assert_eq!(u[0], Uniformity::Thread);
        assert_eq!(u[2], Uniformity::Warp);
        assert_eq!(u[4], Uniformity::Program);
        assert_eq!(u[5], Uniformity::Thread);
        assert_eq!(
            u[7],
            Uniformity::Thread,
            "assigned under a per-thread branch"
        );
        assert_eq!(u[8], Uniformity::Program, "a load at a uniform index");
    }

    #[test]
    fn warp_indices_are_the_warp_uniform_shifts_of_the_thread_id() {
        let k = parse(
            "thread_kernel @k(n: i32) threads 128 {
  r0: i32 = thread_id
  r1: i32 = const 5
  r2: i32 = shr r0, r1
  r3: i32 = const 64
  r4: i32 = div r0, r3
  r5: i32 = const 4
  r6: i32 = shr r0, r5
  r7: i32 = shr r2, r1
  r8: i1 = cmp lt r0, r3
  if r8 {
    r9: i32 = shr r0, r1
  } else {
  }
  r10: i1 = cmp lt r2, r5
  if r10 {
    r11: i32 = shr r0, r1
  } else {
  }
}
",
        )
        .unwrap();
        let w = warp_index_registers(&k);
        assert!(w[2] && w[4], "tid >> 5 and tid / 64");
        assert!(!w[6], "tid >> 4 differs within a warp");
        assert!(!w[7], "already warp-uniform operand: nothing to broadcast");
        assert!(!w[9], "under a per-thread branch not every lane runs it");
        assert!(
            w[11],
            "under a warp-uniform branch every lane of the warp does"
        );
    }
}
