//! The registers a Thread IR expression or statement reads and writes, and the shared
//! arrays a statement accesses, for analyses and rewrites (`scopes.rs`, `verify.rs`,
//! `lower/value_numbering.rs`, `lower/shared_reuse.rs`). Nested bodies are not
//! included: a walker visits them itself ([`Stmt::bodies`]).

use super::{Expr, Reg, Stmt, WgmmaA};
use std::collections::HashMap;

impl Expr {
    /// Whether the expression computes its value from its operands alone (no memory,
    /// no other threads): such an assignment may move or be recomputed.
    pub fn is_pure(&self) -> bool {
        matches!(
            self,
            Expr::Const(_)
                | Expr::Special(_)
                | Expr::Param(_)
                | Expr::Address(_)
                | Expr::Copy(_)
                | Expr::Unary(..)
                | Expr::Binary(..)
                | Expr::Cmp(..)
                | Expr::Select { .. }
                | Expr::Fma(..)
                | Expr::Cast { .. }
                | Expr::Extract { .. }
                | Expr::Construct(_)
        )
    }

    /// The registers the expression reads.
    pub fn operands(&self) -> Vec<Reg> {
        let mut out = vec![];
        let mut e = self.clone();
        e.map_operands(&mut |r| {
            out.push(r);
            r
        });
        out
    }

    /// Replaces every register the expression reads by `f` of it.
    pub fn map_operands(&mut self, f: &mut impl FnMut(Reg) -> Reg) {
        match self {
            Expr::Const(_) | Expr::Special(_) | Expr::Param(_) | Expr::Address(_) => {}
            Expr::Copy(a)
            | Expr::WarpUniform(a)
            | Expr::Unary(_, a)
            | Expr::Cast { value: a, .. } => *a = f(*a),
            Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) => {
                *a = f(*a);
                *b = f(*b);
            }
            Expr::Select {
                cond,
                on_true,
                on_false,
            } => {
                *cond = f(*cond);
                *on_true = f(*on_true);
                *on_false = f(*on_false);
            }
            Expr::Fma(a, b, c) => {
                *a = f(*a);
                *b = f(*b);
                *c = f(*c);
            }
            Expr::Load {
                index, mask, other, ..
            } => {
                *index = f(*index);
                if let Some(m) = mask {
                    *m = f(*m);
                }
                if let Some(o) = other {
                    *o = f(*o);
                }
            }
            Expr::SharedLoad { index, .. } => *index = f(*index),
            Expr::Extract { vector, .. } => *vector = f(*vector),
            Expr::Construct(parts) => {
                for p in parts {
                    *p = f(*p);
                }
            }
            Expr::ShuffleXor { value, .. } | Expr::SubgroupReduce { value, .. } => {
                *value = f(*value)
            }
        }
    }
}

impl Stmt {
    /// Replaces every register the statement itself reads (not those of nested
    /// bodies) by `f` of it.
    pub fn map_reads(&mut self, f: &mut impl FnMut(Reg) -> Reg) {
        match self {
            Stmt::Assign { expr, .. } => expr.map_operands(f),
            Stmt::Store {
                index, value, mask, ..
            }
            | Stmt::Atomic {
                index, value, mask, ..
            } => {
                *index = f(*index);
                *value = f(*value);
                if let Some(m) = mask {
                    *m = f(*m);
                }
            }
            Stmt::SharedStore { index, value, .. } => {
                *index = f(*index);
                *value = f(*value);
            }
            Stmt::AtomicCas {
                index, cmp, value, ..
            } => {
                *index = f(*index);
                *cmp = f(*cmp);
                *value = f(*value);
            }
            Stmt::Loc(_)
            | Stmt::Barrier
            | Stmt::StorageBarrier
            | Stmt::AsyncCommit
            | Stmt::AsyncWait { .. }
            | Stmt::WgmmaFence
            | Stmt::WgmmaCommit
            | Stmt::WgmmaWait { .. }
            | Stmt::FenceProxyAsync => {}
            Stmt::Wgmma {
                acc,
                a,
                b,
                zero_acc,
                ..
            } => {
                for r in acc.iter_mut() {
                    *r = f(*r);
                }
                match a {
                    WgmmaA::Shared(m) => m.base = f(m.base),
                    WgmmaA::Regs(regs) => {
                        for r in regs.iter_mut() {
                            *r = f(*r);
                        }
                    }
                }
                b.base = f(b.base);
                if let Some(z) = zero_acc {
                    *z = f(*z);
                }
            }
            Stmt::AsyncCopy {
                shared_index,
                index,
                mask,
                ..
            } => {
                *shared_index = f(*shared_index);
                *index = f(*index);
                if let Some(m) = mask {
                    *m = f(*m);
                }
            }
            Stmt::LdMatrix { index, .. }
            | Stmt::CoopLoad { index, .. }
            | Stmt::CoopStore { index, .. }
            | Stmt::MbarrierInit { index, .. }
            | Stmt::MbarrierArriveTx { index, .. } => *index = f(*index),
            Stmt::MbarrierWait { index, parity, .. } => {
                *index = f(*index);
                *parity = f(*parity);
            }
            Stmt::TmaLoad {
                shared_index,
                coords,
                bar_index,
                ..
            } => {
                *shared_index = f(*shared_index);
                for c in coords.iter_mut() {
                    *c = f(*c);
                }
                *bar_index = f(*bar_index);
            }
            Stmt::CoopZero { .. } | Stmt::CoopMulAdd { .. } | Stmt::CoopCopy { .. } => {}
            Stmt::Mma { a, b, c, .. } => {
                for r in a.iter_mut().chain(b.iter_mut()).chain(c.iter_mut()) {
                    *r = f(*r);
                }
            }
            Stmt::For {
                lower, upper, step, ..
            } => {
                *lower = f(*lower);
                *upper = f(*upper);
                *step = f(*step);
            }
            Stmt::If { cond, .. } => *cond = f(*cond),
            // The condition is read between the two bodies; callers that care about
            // the order handle `While` themselves.
            Stmt::While { cond, .. } => *cond = f(*cond),
        }
    }

    /// The registers the statement itself reads (not those of nested bodies).
    pub fn reads(&self) -> Vec<Reg> {
        let mut out = vec![];
        let mut s = self.shallow();
        s.map_reads(&mut |r| {
            out.push(r);
            r
        });
        out
    }

    /// The registers the statement itself writes (a `For`'s induction variable
    /// included, nested bodies not).
    pub fn writes(&self) -> Vec<Reg> {
        match self {
            Stmt::Assign { dst, .. } | Stmt::Atomic { dst, .. } | Stmt::AtomicCas { dst, .. } => {
                vec![*dst]
            }
            Stmt::LdMatrix { dst, .. } => dst.clone(),
            Stmt::Mma { d, .. } => d.clone(),
            Stmt::Wgmma { acc, .. } => acc.clone(),
            Stmt::For { iv, .. } => vec![*iv],
            _ => vec![],
        }
    }

    /// Visits the shared array indices the statement itself (not its nested bodies)
    /// reads or writes; `f` may change them.
    pub fn map_shared_arrays(&mut self, f: &mut impl FnMut(&mut u32)) {
        match self {
            Stmt::Assign {
                expr: Expr::SharedLoad { arr, .. },
                ..
            }
            | Stmt::SharedStore { arr, .. }
            | Stmt::AsyncCopy { arr, .. }
            | Stmt::LdMatrix { arr, .. }
            | Stmt::CoopLoad { arr, .. }
            | Stmt::CoopStore { arr, .. }
            | Stmt::MbarrierInit { arr, .. }
            | Stmt::MbarrierArriveTx { arr, .. }
            | Stmt::MbarrierWait { arr, .. } => f(arr),
            Stmt::Wgmma { a, b, .. } => {
                if let WgmmaA::Shared(m) = a {
                    f(&mut m.arr);
                }
                f(&mut b.arr);
            }
            Stmt::TmaLoad { arr, bar_arr, .. } => {
                f(arr);
                f(bar_arr);
            }
            _ => {}
        }
    }

    /// The shared arrays the statement itself (not its nested bodies) accesses.
    pub fn shared_arrays(&self) -> Vec<u32> {
        match self {
            Stmt::Assign {
                expr: Expr::SharedLoad { arr, .. },
                ..
            }
            | Stmt::SharedStore { arr, .. }
            | Stmt::AsyncCopy { arr, .. }
            | Stmt::LdMatrix { arr, .. }
            | Stmt::CoopLoad { arr, .. }
            | Stmt::CoopStore { arr, .. }
            | Stmt::MbarrierInit { arr, .. }
            | Stmt::MbarrierArriveTx { arr, .. }
            | Stmt::MbarrierWait { arr, .. } => vec![*arr],
            Stmt::Wgmma { a, b, .. } => a
                .shared()
                .map(|m| m.arr)
                .into_iter()
                .chain([b.arr])
                .collect(),
            Stmt::TmaLoad { arr, bar_arr, .. } => vec![*arr, *bar_arr],
            _ => vec![],
        }
    }

    /// The nested bodies of the statement, in program order.
    pub fn bodies(&self) -> Vec<&Vec<Stmt>> {
        match self {
            Stmt::For { body, .. } => vec![body],
            Stmt::If {
                then_body,
                else_body,
                ..
            } => vec![then_body, else_body],
            Stmt::While {
                cond_body, body, ..
            } => vec![cond_body, body],
            _ => vec![],
        }
    }

    /// The nested bodies of the statement, mutably, in program order.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<Stmt>> {
        match self {
            Stmt::For { body, .. } => vec![body],
            Stmt::If {
                then_body,
                else_body,
                ..
            } => vec![then_body, else_body],
            Stmt::While {
                cond_body, body, ..
            } => vec![cond_body, body],
            _ => vec![],
        }
    }

    /// The statement without its nested bodies (cheap to clone).
    fn shallow(&self) -> Stmt {
        match self {
            Stmt::For {
                iv,
                lower,
                upper,
                step,
                ..
            } => Stmt::For {
                iv: *iv,
                lower: *lower,
                upper: *upper,
                step: *step,
                body: vec![],
            },
            Stmt::If { cond, .. } => Stmt::If {
                cond: *cond,
                then_body: vec![],
                else_body: vec![],
            },
            Stmt::While { cond, span, .. } => Stmt::While {
                cond_body: vec![],
                cond: *cond,
                body: vec![],
                span: *span,
            },
            other => other.clone(),
        }
    }
}

/// Renames the shared arrays `body` uses, nested bodies included: array `a` becomes
/// `map[a]` (the passes that merge or remove arrays).
pub fn renumber_shared_arrays(body: &mut [Stmt], map: &[u32]) {
    for s in body {
        s.map_shared_arrays(&mut |a| *a = map[*a as usize]);
        for b in s.bodies_mut() {
            renumber_shared_arrays(b, map);
        }
    }
}

/// Adds to `n[r]` the number of statements of `body`, nested bodies included, that
/// write register `r` (`n` has a slot a register of the kernel).
pub fn count_writes(body: &[Stmt], n: &mut [u32]) {
    for s in body {
        for r in s.writes() {
            n[r.0 as usize] += 1;
        }
        for b in s.bodies() {
            count_writes(b, n);
        }
    }
}

/// The registers `body` writes, nested bodies included, with how many statements write
/// each.
pub fn writes_in(body: &[Stmt]) -> HashMap<Reg, u32> {
    fn walk(body: &[Stmt], out: &mut HashMap<Reg, u32>) {
        for s in body {
            for r in s.writes() {
                *out.entry(r).or_insert(0) += 1;
            }
            for b in s.bodies() {
                walk(b, out);
            }
        }
    }
    let mut out = HashMap::new();
    walk(body, &mut out);
    out
}
