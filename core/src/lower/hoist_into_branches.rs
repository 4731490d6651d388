//! Pass (Thread IR): arithmetic on a branch's carried results runs in the branch.
//!
//! A loop that keeps a value until something changes computes it in an `if` and
//! carries it otherwise:
//!
//! ```text
//! for ... {
//!   if wrap { m = f(...) } else { m = c }     // c: m of the previous trip
//!   h = g(m, invariants)                      // every trip
//!   ...
//!   c = m
//! }
//! ```
//!
//! `h` then has the same value on every trip the `else` branch runs, so it need only be
//! computed where `m` changes: at the end of the `then` branch, and once before the
//! loop from `c`'s first value. The flattened persistent matmul (`flatten_loops`) is
//! this loop: a tile's row and column offsets, their bounds masks and their products
//! with the strides were computed again on every K step from the tile's carried place
//! (tutorial 09's kernel: about 50 instructions a thread a step of the ~160 of its
//! loop), where the loop over K alone had them hoisted by `ptxas`.
//!
//! What moves: top-level pure assignments after the `if` (arithmetic, comparisons,
//! selects, casts, constants, parameters, thread ids; no memory, no shuffles) whose
//! register is assigned nowhere else in the kernel and whose operands are the `if`'s
//! carried results, registers the loop does not write, or registers already moved.
//! A carried result `m` is a register the two branches assign once each (and nothing
//! else does), the `else` branch as a copy of a register `c` that the loop body
//! assigns once, at its top level after the `if`, from `m` (through copies). Moving
//! changes no value any statement reads, on any trip, the loop's first included.

use crate::thread_ir::{count_writes, writes_in, Expr, Reg, Stmt, ThreadKernel};
use std::collections::HashMap;

/// Moves arithmetic on carried branch results into the branches (see the module
/// documentation); returns how many assignments moved.
pub fn hoist_into_branches(k: &mut ThreadKernel) -> usize {
    let mut writes = vec![0u32; k.regs.len()];
    count_writes(&k.body, &mut writes);
    walk(&mut k.body, &mut writes)
}

/// Applies the pass to every `For` in `body`, innermost first.
fn walk(body: &mut Vec<Stmt>, writes: &mut [u32]) -> usize {
    let mut moved = 0;
    let mut i = 0;
    while i < body.len() {
        for b in body[i].bodies_mut() {
            moved += walk(b, writes);
        }
        if let Stmt::For { .. } = &body[i] {
            let before = hoist_in_loop(&mut body[i], writes);
            moved += before.len();
            let n = before.len();
            // The moved registers are now assigned twice (before the loop, in the
            // branch): enclosing loops must not take them for single assignments.
            for s in &before {
                for r in s.writes() {
                    writes[r.0 as usize] += 1;
                }
            }
            // The first values, computed from the carried registers' initial ones.
            for (j, s) in before.into_iter().enumerate() {
                body.insert(i + j, s);
            }
            i += n;
        }
        i += 1;
    }
    moved
}

/// The single top-level assignment of `r` in `branch`, if `branch` writes `r` exactly
/// once and there.
fn assignment_in(branch: &[Stmt], r: Reg) -> Option<&Expr> {
    let mut n = vec![];
    for s in branch {
        if s.writes().contains(&r) {
            n.push(s);
        }
    }
    let mut nested = 0u32;
    for s in branch {
        for b in s.bodies() {
            nested += writes_in(b).get(&r).copied().unwrap_or(0);
        }
    }
    match (n.as_slice(), nested) {
        ([Stmt::Assign { expr, .. }], 0) => Some(expr),
        _ => None,
    }
}

/// Moves what it can in the loop `for_stmt`; returns the assignments to put before it.
fn hoist_in_loop(for_stmt: &mut Stmt, writes: &[u32]) -> Vec<Stmt> {
    let Stmt::For { iv, body, .. } = for_stmt else {
        return vec![];
    };
    let iv = *iv;
    // Writes inside the loop (its induction variable counts as one).
    let mut in_loop = writes_in(body);
    *in_loop.entry(iv).or_insert(0) += 1;
    // The top-level copy `r = x` of the body after statement `from`: (its position, x).
    let copy_of = |body: &[Stmt], from: usize, r: Reg| -> Option<(usize, Reg)> {
        body.iter()
            .enumerate()
            .skip(from)
            .find_map(|(j, s)| match s {
                Stmt::Assign {
                    dst,
                    expr: Expr::Copy(x),
                } if *dst == r => Some((j, *x)),
                _ => None,
            })
    };
    let mut before = vec![];
    let mut i = 0;
    while i < body.len() {
        let Stmt::If {
            then_body,
            else_body,
            ..
        } = &body[i]
        else {
            i += 1;
            continue;
        };
        // The carried results: m -> c.
        let mut carried: HashMap<Reg, Reg> = HashMap::new();
        // The copies that carry them (left in place).
        let mut chains: Vec<Reg> = vec![];
        for s in else_body {
            let Stmt::Assign {
                dst: m,
                expr: Expr::Copy(c),
            } = s
            else {
                continue;
            };
            let (m, c) = (*m, *c);
            let once = |r: Reg| in_loop.get(&r).copied().unwrap_or(0);
            if writes[m.0 as usize] != 2
                || assignment_in(then_body, m).is_none()
                || assignment_in(else_body, m).is_none()
                || once(c) != 1
            {
                continue;
            }
            // c's one write in the loop: top-level, after the if, a chain of copies from
            // m, each after the one it reads (else c would lag a trip behind m).
            let (mut r, mut at) = (c, body.len());
            let mut chain = vec![];
            let resolved = loop {
                match copy_of(body, i + 1, r) {
                    Some((j, x)) if j < at && x == m => break true,
                    Some((j, x))
                        if j < at
                            && once(x) == 1
                            && writes[x.0 as usize] == 1
                            && chain.len() < 8 =>
                    {
                        (r, at) = (x, j);
                        chain.push(x);
                    }
                    _ => break false,
                }
            };
            if resolved {
                carried.insert(m, c);
                chains.extend(chain);
            }
        }
        if carried.is_empty() {
            i += 1;
            continue;
        }
        // What may move: pure, single-assignment, operands stable between trips that
        // take the else branch.
        let mut moved_regs: Vec<Reg> = vec![];
        let mut take = vec![false; body.len()];
        for (j, s) in body.iter().enumerate().skip(i + 1) {
            let Stmt::Assign { dst, expr } = s else {
                continue;
            };
            if !expr.is_pure() || writes[dst.0 as usize] != 1 || chains.contains(dst) {
                continue;
            }
            let stable = |r: &Reg| {
                carried.contains_key(r) || !in_loop.contains_key(r) || moved_regs.contains(r)
            };
            if expr.operands().iter().all(stable) {
                take[j] = true;
                moved_regs.push(*dst);
            }
        }
        // Only what reads a carried result (directly or not) is worth moving; constants
        // and invariants alone stay where they are.
        let mut derived: Vec<Reg> = vec![];
        for (j, s) in body.iter().enumerate() {
            if !take[j] {
                continue;
            }
            let Stmt::Assign { dst, expr } = s else {
                continue;
            };
            if expr
                .operands()
                .iter()
                .any(|r| carried.contains_key(r) || derived.contains(r))
            {
                derived.push(*dst);
            }
        }
        // Constants and invariants a moved statement reads move with it (they have
        // one assignment, which must precede every use).
        let mut needed: Vec<Reg> = derived.clone();
        for (j, s) in body.iter().enumerate().rev() {
            if let Stmt::Assign { dst, expr } = s {
                if take[j] && needed.contains(dst) {
                    needed.extend(expr.operands());
                }
            }
        }
        for (j, s) in body.iter().enumerate() {
            if let Stmt::Assign { dst, .. } = s {
                take[j] &= needed.contains(dst);
            }
        }
        if derived.is_empty() {
            i += 1;
            continue;
        }
        let mut moving = vec![];
        let mut j = 0;
        body.retain(|s| {
            j += 1;
            if take[j - 1] {
                moving.push(s.clone());
                false
            } else {
                true
            }
        });
        // Before the loop: the same statements on the carried registers' first values.
        for s in &moving {
            let mut s = s.clone();
            if let Stmt::Assign { expr, .. } = &mut s {
                expr.map_operands(&mut |r| carried.get(&r).copied().unwrap_or(r));
            }
            before.push(s);
        }
        if let Stmt::If { then_body, .. } = &mut body[i] {
            then_body.extend(moving);
        }
        i += 1;
    }
    before
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_ir::{parse, print};

    /// A loop whose `if` recomputes `m` every fourth trip and carries it otherwise;
    /// `h = m * 3 + t` is stored every trip.
    const CARRIED: &str = "thread_kernel @k(x: mut buffer<f32>) threads 32 {
  r0: i32 = thread_id
  r1: i32 = const 0
  r2: i32 = const 8
  r3: i32 = const 1
  r4: i32 = const 3
  r5: i32 = const 4
  r6: i32 = const 100
  r18: i32 = mul r0, r2
  r7: i32 = r6
  for r8: i32 = r1 to r2 step r3 {
    r9: i32 = rem r8, r5
    r10: i1 = cmp eq r9, r1
    if r10 {
      r11: i32 = add r8, r6
      r12: i32 = r11
    } else {
      r12: i32 = r7
    }
    r13: i32 = mul r12, r4
    r14: i32 = add r13, r0
    r15: f32 = cast r14
    r16: i32 = add r18, r8
    store x[r16] = r15
    r17: i32 = r12
    r7: i32 = r17
  }
}
";

    #[test]
    fn arithmetic_on_a_carried_result_moves_into_the_branch() {
        let mut k = parse(CARRIED).unwrap();
        let want = crate::thread_ir::sim::run_on_f32_buffer(&k, 256).unwrap();
        assert_eq!(hoist_into_branches(&mut k), 3, "{}", print(&k));
        let text = print(&k);
        // Computed before the loop from r7 and in the branch from r12, not per trip.
        assert_eq!(text.matches("mul r7, r4").count(), 1, "{text}");
        assert_eq!(text.matches("mul r12, r4").count(), 1, "{text}");
        let then_at = text.find("if r10").unwrap();
        let else_at = text.find("} else {").unwrap();
        let mul_at = text.find("mul r12, r4").unwrap();
        assert!(then_at < mul_at && mul_at < else_at, "{text}");
        crate::thread_ir::verify::verify(
            &k,
            &crate::lower::expand::ExpandOptions::default(),
            "hoist_into_branches",
        )
        .unwrap();
        let got = crate::thread_ir::sim::run_on_f32_buffer(&k, 256).unwrap();
        assert_eq!(got, want);
        // Trip t stores (t - t % 4 + 100) * 3 + thread.
        for (i, g) in got.iter().enumerate() {
            let (thread, trip) = (i / 8, i % 8);
            assert_eq!(*g, ((trip - trip % 4 + 100) * 3 + thread) as f32);
        }
    }

    #[test]
    fn a_result_not_carried_from_the_previous_trip_stays() {
        for src in [
            // The else branch copies a register the loop does not carry.
            CARRIED.replace("r12: i32 = r7\n", "r12: i32 = r6\n"),
            // The carried register is not the branch's result.
            CARRIED.replace("r17: i32 = r12", "r17: i32 = r13"),
            // The branch's result is written a third time.
            CARRIED.replace(
                "    r17: i32 = r12\n",
                "    r17: i32 = r12\n    r12: i32 = r9\n",
            ),
        ] {
            let mut k = parse(&src).unwrap();
            let want = crate::thread_ir::sim::run_on_f32_buffer(&k, 256).unwrap();
            assert_eq!(hoist_into_branches(&mut k), 0, "{}", print(&k));
            let got = crate::thread_ir::sim::run_on_f32_buffer(&k, 256).unwrap();
            assert_eq!(got, want);
        }
    }
}
