//! Shrinking: a failing program made small while it still fails the same way.
//!
//! Greedy and deterministic: try each simplification (fewer programs and warps,
//! a statement removed, an expression replaced by a constant or by one of its operands,
//! a loop run once or removed, a branch replaced by one arm), keep the first one after
//! which the executor still disagrees in the same way (`check` must accept it, so
//! tolerances stay honest), and start again until nothing helps, within
//! `TILEWISE_FUZZ_SHRINK_SECONDS` (90 by default).

use crate::exec::{differ, Executor, Mismatch};
use crate::program::*;
use std::time::{Duration, Instant};

/// Whether `m` is the same kind of failure as `first`.
fn same_kind(first: &Mismatch, m: &Mismatch) -> bool {
    match (first, m) {
        (Mismatch::Reference(_), Mismatch::Reference(e)) => !e.starts_with("invalid program"),
        (Mismatch::Error(_), Mismatch::Error(_)) => true,
        (Mismatch::Value { .. }, Mismatch::Value { .. }) => true,
        _ => false,
    }
}

/// The smallest failing program found (and its mismatch), within a time budget.
pub fn shrink(p: &Program, exec: &Executor, first: Mismatch) -> (Program, Mismatch) {
    let budget = std::env::var("TILEWISE_FUZZ_SHRINK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(90);
    let deadline = Instant::now() + Duration::from_secs(budget);
    let mut best = p.clone();
    let mut best_m = first.clone();
    'outer: while Instant::now() < deadline {
        for cand in candidates(&best) {
            if Instant::now() >= deadline {
                break 'outer;
            }
            let cand = prune(cand);
            if cand == best || check(&cand).is_err() {
                continue;
            }
            if let Some(m) = differ(&cand, exec) {
                if same_kind(&first, &m) {
                    best = cand;
                    best_m = m;
                    continue 'outer;
                }
            }
        }
        break;
    }
    (best, best_m)
}

/// A statement's position: indices into nested blocks (for a loop, its body; for a
/// branch, 0 the then arm and 1 the else arm, then the index).
type Path = Vec<usize>;

fn paths(body: &[Stmt], prefix: &mut Path, out: &mut Vec<Path>) {
    for (i, s) in body.iter().enumerate() {
        prefix.push(i);
        out.push(prefix.clone());
        match s {
            Stmt::For { body, .. } | Stmt::While { body, .. } => paths(body, prefix, out),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                prefix.push(0);
                paths(then_body, prefix, out);
                prefix.pop();
                prefix.push(1);
                paths(else_body, prefix, out);
                prefix.pop();
            }
            _ => {}
        }
        prefix.pop();
    }
}

/// The block holding the statement at `path`, and its index there.
fn block_of<'a>(body: &'a mut Vec<Stmt>, path: &[usize]) -> (&'a mut Vec<Stmt>, usize) {
    if path.len() == 1 {
        return (body, path[0]);
    }
    match &mut body[path[0]] {
        Stmt::For { body, .. } | Stmt::While { body, .. } => block_of(body, &path[1..]),
        Stmt::If {
            then_body,
            else_body,
            ..
        } => {
            let arm = if path[1] == 0 { then_body } else { else_body };
            block_of(arm, &path[2..])
        }
        _ => unreachable!("a path through a plain statement"),
    }
}

fn operands(e: &Expr) -> Vec<Var> {
    match e {
        Expr::Unary(_, x)
        | Expr::Random(_, x, _)
        | Expr::Cast(x, _)
        | Expr::ExpandDims(x, _)
        | Expr::BroadcastTo(x, _)
        | Expr::Permute(x, _)
        | Expr::Reshape(x, _)
        | Expr::Split(x, _) => vec![*x],
        Expr::Join(a, b) | Expr::Interleave(a, b) => vec![*a, *b],
        Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) => vec![*a, *b],
        Expr::Where(c, a, b) => vec![*c, *a, *b],
        Expr::Reduce { value, .. } | Expr::Scan { value, .. } | Expr::Atomic { value, .. } => {
            vec![*value]
        }
        Expr::Dot { a, b, acc, .. } => [Some(*a), Some(*b), *acc].into_iter().flatten().collect(),
        Expr::Load { access, .. } => access.shift.map(|(v, _)| v).into_iter().collect(),
        Expr::BlockLoad { row_offset, .. } => row_offset.iter().copied().collect(),
        _ => vec![],
    }
}

fn candidates(p: &Program) -> Vec<Program> {
    let mut out = vec![];
    if p.grid > 1 {
        out.push(Program {
            grid: 1,
            ..p.clone()
        });
    }
    for nw in [1, 2, 4] {
        if nw < p.num_warps {
            out.push(Program {
                num_warps: nw,
                ..p.clone()
            });
        }
    }
    let info = check(p).map(|c| c.seen).unwrap_or_default();
    let mut all = vec![];
    paths(&p.body, &mut vec![], &mut all);
    for path in &all {
        // Remove it.
        let mut q = p.clone();
        let (b, i) = block_of(&mut q.body, path);
        let removed = b.remove(i);
        if !matches!(removed, Stmt::Store { .. }) || count_stores(&q.body) > 0 {
            out.push(q);
        }
        let mut q = p.clone();
        let (b, i) = block_of(&mut q.body, path);
        match b[i].clone() {
            Stmt::Let(v, e) => {
                let Some(iv) = info.get(v).cloned().flatten() else {
                    continue;
                };
                if !matches!(e, Expr::Full { .. }) {
                    b[i] = Stmt::Let(
                        v,
                        Expr::Full {
                            shape: iv.shape.clone(),
                            value: 1.0,
                            dtype: iv.dtype,
                        },
                    );
                    out.push(q.clone());
                }
                for x in operands(&e) {
                    let same = info
                        .get(x)
                        .cloned()
                        .flatten()
                        .is_some_and(|ix| ix.shape == iv.shape);
                    if same {
                        let mut r = p.clone();
                        let (b, i) = block_of(&mut r.body, path);
                        b[i] = Stmt::Let(v, Expr::Cast(x, iv.dtype));
                        out.push(r);
                    }
                }
            }
            Stmt::For { trip, .. } | Stmt::While { trip, .. } if trip != Trip::Const(1) => {
                match &mut b[i] {
                    Stmt::For { trip, .. } | Stmt::While { trip, .. } => *trip = Trip::Const(1),
                    _ => unreachable!(),
                }
                out.push(q);
            }
            Stmt::If {
                carried,
                then_body,
                then_next,
                else_body,
                else_next,
                ..
            } => {
                for (arm, next) in [(then_body, then_next), (else_body, else_next)] {
                    let mut r = p.clone();
                    let (b, i) = block_of(&mut r.body, path);
                    let mut inlined = arm.clone();
                    for (&c, &n) in carried.iter().zip(&next) {
                        let Some(ic) = info.get(c).cloned().flatten() else {
                            continue;
                        };
                        inlined.push(Stmt::Let(c, Expr::Cast(n, ic.dtype)));
                    }
                    b.splice(i..=i, inlined);
                    out.push(r);
                }
            }
            _ => {}
        }
    }
    out
}

fn count_stores(body: &[Stmt]) -> usize {
    body.iter()
        .filter(|s| matches!(s, Stmt::Store { .. }))
        .count()
}

/// Removes definitions nobody reads, until none is left.
fn prune(mut p: Program) -> Program {
    loop {
        let mut used = vec![false; p.num_vars];
        mark(&p.body, &mut used);
        let before = p.clone();
        sweep(&mut p.body, &used);
        if p == before {
            return p;
        }
    }
}

fn mark(body: &[Stmt], used: &mut [bool]) {
    for s in body {
        match s {
            Stmt::Let(_, e) => {
                for v in operands(e) {
                    used[v] = true;
                }
            }
            Stmt::Store { value, .. } => used[*value] = true,
            Stmt::For {
                carried,
                body,
                next,
                ..
            }
            | Stmt::While {
                carried,
                body,
                next,
                ..
            } => {
                for &v in carried.iter().chain(next) {
                    used[v] = true;
                }
                mark(body, used);
            }
            Stmt::If {
                carried,
                then_body,
                then_next,
                else_body,
                else_next,
                ..
            } => {
                for &v in carried.iter().chain(then_next).chain(else_next) {
                    used[v] = true;
                }
                mark(then_body, used);
                mark(else_body, used);
            }
        }
    }
}

fn sweep(body: &mut Vec<Stmt>, used: &[bool]) {
    body.retain(|s| match s {
        // Atomics write memory: they stay while their output is compared.
        Stmt::Let(v, e) => used[*v] || matches!(e, Expr::Atomic { .. }),
        _ => true,
    });
    for s in body.iter_mut() {
        match s {
            Stmt::For { body, .. } | Stmt::While { body, .. } => sweep(body, used),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                sweep(then_body, used);
                sweep(else_body, used);
            }
            _ => {}
        }
    }
}
