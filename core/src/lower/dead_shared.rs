//! Pass (Thread IR): shared arrays that nothing reads, and barriers that order nothing.
//!
//! Expansion moves a value between layouts through a shared array. Where every reader
//! was rematerialized instead (the value recomputed in the layout that needs it, see
//! `expand::remat`) and value numbering then removed the unused loads, the stores, the
//! array and the barriers around them remain: tutorial 03's epilogue kept 512 bytes of
//! row offsets that nothing read, which took the 128x256x64 f16 matmul past 144 KiB of
//! shared memory, where the H200 runs a K step 6% slower (run 53).
//!
//! - A store that a later store of its block overwrites (same array, same index
//!   register) before anything reads the array is removed: expansion reuses one scratch
//!   array per dtype for conversion after conversion.
//! - A `SharedStore` that no read of its array can follow is removed: one scratch
//!   array serves every conversion of a dtype, so a conversion in one branch whose
//!   readers were rematerialized kept its stores (and two barriers, each time the
//!   branch ran) as long as a conversion elsewhere read the array; tutorial 09's
//!   epilogue, run once a tile inside the flattened loop, was one. Control flow is
//!   structured: what may follow a statement is the rest of its block, the rest of
//!   each enclosing block, and the whole body of each enclosing loop (its back edge);
//!   the other branch of an enclosing `if` is not.
//! - Plain stores (`SharedStore`, `CoopStore`) to an array that no statement reads are
//!   removed, then the array (the others renumbered), then the registers only they
//!   read. Destinations of asynchronous copies stay: the waits count their groups.
//! - A barrier with nothing but register arithmetic since the previous barrier of its
//!   block is removed: that barrier already ordered everything before both with
//!   everything after both.
//!
//! Runs after value numbering (which removes dead loads) and before shared reuse.

use crate::thread_ir::{renumber_shared_arrays, Expr, Stmt, ThreadKernel};

/// Removes unread shared arrays with their stores, and redundant barriers; returns
/// the shared bytes freed.
pub fn remove_dead_shared(k: &mut ThreadKernel) -> u64 {
    let before = k.shared_bytes();
    let mut read = vec![false; k.shared.len()];
    let mut async_target = vec![false; k.shared.len()];
    mark(&k.body, &mut read, &mut async_target);
    let dead: Vec<bool> = (0..k.shared.len())
        .map(|a| !read[a] && !async_target[a])
        .collect();
    let mut overwritten = remove_overwritten_stores(&mut k.body);
    overwritten |= remove_unobserved_stores(&mut k.body, &vec![false; k.shared.len()]);
    if dead.iter().any(|d| *d) {
        remove_stores(&mut k.body, &dead);
        let mut map = vec![u32::MAX; k.shared.len()];
        let mut kept = vec![];
        for (i, a) in k.shared.iter().enumerate() {
            if !dead[i] {
                map[i] = kept.len() as u32;
                kept.push(a.clone());
            }
        }
        k.shared = kept;
        renumber_shared_arrays(&mut k.body, &map);
    }
    if overwritten || dead.iter().any(|d| *d) {
        super::value_numbering::remove_dead(&mut k.body, k.regs.len());
    }
    remove_redundant_barriers(&mut k.body);
    before - k.shared_bytes()
}

fn mark(body: &[Stmt], read: &mut [bool], async_target: &mut [bool]) {
    for s in body {
        match s {
            Stmt::SharedStore { .. } | Stmt::CoopStore { .. } => {}
            Stmt::AsyncCopy { arr, .. } => async_target[*arr as usize] = true,
            other => {
                for a in other.shared_arrays() {
                    read[a as usize] = true;
                }
            }
        }
        for b in s.bodies() {
            mark(b, read, async_target);
        }
    }
}

fn remove_stores(body: &mut Vec<Stmt>, dead: &[bool]) {
    body.retain(|s| match s {
        Stmt::SharedStore { arr, .. } | Stmt::CoopStore { arr, .. } => !dead[*arr as usize],
        _ => true,
    });
    for s in body.iter_mut() {
        for b in s.bodies_mut() {
            remove_stores(b, dead);
        }
    }
}

/// Whether `s` (not its nested bodies) reads shared array contents: every access but
/// plain stores and the asynchronous copies' writes.
fn reads_shared(s: &Stmt) -> Vec<u32> {
    match s {
        Stmt::SharedStore { .. } | Stmt::CoopStore { .. } | Stmt::AsyncCopy { .. } => vec![],
        other => other.shared_arrays(),
    }
}

/// Marks in `out` every array a statement of `body` (nested bodies included) reads.
fn arrays_read(body: &[Stmt], out: &mut [bool]) {
    for s in body {
        for a in reads_shared(s) {
            out[a as usize] = true;
        }
        for b in s.bodies() {
            arrays_read(b, out);
        }
    }
}

/// Removes each `SharedStore` of `body` (and of its nested bodies) after which no
/// statement reading its array can run; `later` marks the arrays read by what may run
/// after `body` (the enclosing blocks' rest and loop bodies). Returns whether any was
/// removed.
fn remove_unobserved_stores(body: &mut Vec<Stmt>, later: &[bool]) -> bool {
    let mut live = later.to_vec();
    let mut dead = vec![false; body.len()];
    let mut removed = false;
    for i in (0..body.len()).rev() {
        let s = &mut body[i];
        if let Stmt::SharedStore { arr, .. } = s {
            dead[i] = !live[*arr as usize];
            continue;
        }
        for a in reads_shared(s) {
            live[a as usize] = true;
        }
        let mut inside = vec![false; live.len()];
        for b in s.bodies() {
            arrays_read(b, &mut inside);
        }
        // A loop's body runs again after any of its statements: its reads follow them.
        let looped = matches!(s, Stmt::For { .. } | Stmt::While { .. });
        let nested_later: Vec<bool> = live
            .iter()
            .zip(&inside)
            .map(|(l, r)| *l || (looped && *r))
            .collect();
        for b in s.bodies_mut() {
            removed |= remove_unobserved_stores(b, &nested_later);
        }
        for (l, r) in live.iter_mut().zip(&inside) {
            *l |= *r;
        }
    }
    if dead.iter().any(|d| *d) {
        removed = true;
        let mut i = 0;
        body.retain(|_| {
            i += 1;
            !dead[i - 1]
        });
    }
    removed
}

/// Removes each `SharedStore` that a later store of its block overwrites (same array,
/// same index register) before any statement reads that array or reassigns the index:
/// scratch arrays are reused by conversion after conversion, and one whose readers
/// were rematerialized leaves stores the next conversion overwrites. Statements with
/// nested bodies end the search. Returns whether any was removed.
fn remove_overwritten_stores(body: &mut Vec<Stmt>) -> bool {
    let mut dead = vec![false; body.len()];
    for (i, s) in body.iter().enumerate() {
        let Stmt::SharedStore { arr, index, .. } = s else {
            continue;
        };
        for later in &body[i + 1..] {
            match later {
                Stmt::SharedStore {
                    arr: a, index: x, ..
                } if a == arr && x == index => {
                    dead[i] = true;
                    break;
                }
                Stmt::SharedStore { .. } | Stmt::Barrier | Stmt::Loc(_) => {}
                other => {
                    if !other.bodies().is_empty()
                        || other.shared_arrays().contains(arr)
                        || other.writes().contains(index)
                    {
                        break;
                    }
                }
            }
        }
    }
    let removed = dead.iter().any(|d| *d);
    let mut i = 0;
    body.retain(|_| {
        i += 1;
        !dead[i - 1]
    });
    let mut nested = false;
    for s in body.iter_mut() {
        for b in s.bodies_mut() {
            nested |= remove_overwritten_stores(b);
        }
    }
    removed || nested
}

/// Whether `s` only computes registers (no memory, no communication between threads,
/// no nested control flow).
fn register_only(s: &Stmt) -> bool {
    match s {
        Stmt::Loc(_) => true,
        Stmt::Assign { expr, .. } => !matches!(
            expr,
            Expr::Load { .. }
                | Expr::SharedLoad { .. }
                | Expr::ShuffleXor { .. }
                | Expr::SubgroupReduce { .. }
        ),
        _ => false,
    }
}

fn remove_redundant_barriers(body: &mut Vec<Stmt>) {
    // Whether a barrier of this block precedes, with only register arithmetic since.
    let mut ordered = false;
    body.retain(|s| {
        if matches!(s, Stmt::Barrier) {
            let redundant = ordered;
            ordered = true;
            !redundant
        } else {
            ordered &= register_only(s);
            true
        }
    });
    for s in body.iter_mut() {
        for b in s.bodies_mut() {
            remove_redundant_barriers(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread_ir::{parse, print};

    #[test]
    fn unread_array_its_stores_and_the_barriers_around_them_go() {
        let mut k = parse(
            "thread_kernel @k(x: mut buffer<f32>) threads 32 {
  shared s0 dead: [f32; 32] align 16
  shared s1 live: [f32; 32] align 16
  r0: i32 = thread_id
  r1: f32 = cast r0
  r2: f32 = add r1, r1
  barrier
  store s0[r0] = r2
  barrier
  store s1[r0] = r1
  barrier
  r3: i32 = const 1
  barrier
  r4: f32 = load s1[r0]
  store x[r0] = r4
}
",
        )
        .unwrap();
        assert_eq!(remove_dead_shared(&mut k), 128);
        let text = print(&k);
        assert_eq!(k.shared.len(), 1, "{text}");
        assert!(
            !text.contains("add r1, r1"),
            "the stored value's computation stays:\n{text}"
        );
        assert!(
            text.contains("load s0[r0]"),
            "the live array is renumbered:\n{text}"
        );
        assert_eq!(text.matches("barrier").count(), 2, "{text}");
        // Still right (and race-free) on the simulator: thread t stores t.
        let out = crate::thread_ir::sim::run_on_f32_buffer(&k, 32).unwrap();
        for (t, got) in out.into_iter().enumerate() {
            assert_eq!(got, t as f32);
        }
    }

    #[test]
    fn stores_the_next_conversion_overwrites_go() {
        // One scratch array, two conversions: the first's readers are gone, the
        // second's remain. Thread t ends up storing t + 1 (its neighbour's t).
        let mut k = parse(
            "thread_kernel @k(x: mut buffer<f32>) threads 32 {
  shared s0 scratch: [f32; 32] align 16
  r0: i32 = thread_id
  r1: f32 = cast r0
  r2: f32 = mul r1, r1
  r3: i32 = const 1
  r4: i32 = add r0, r3
  r5: i32 = const 31
  r6: i32 = and r4, r5
  barrier
  store s0[r0] = r2
  barrier
  store s0[r0] = r1
  barrier
  r7: f32 = load s0[r6]
  store x[r0] = r7
}
",
        )
        .unwrap();
        assert_eq!(remove_dead_shared(&mut k), 0);
        let text = print(&k);
        assert!(!text.contains("mul r1, r1"), "{text}");
        assert_eq!(text.matches("store s0").count(), 1, "{text}");
        assert_eq!(text.matches("barrier").count(), 2, "{text}");
        let out = crate::thread_ir::sim::run_on_f32_buffer(&k, 32).unwrap();
        for (t, got) in out.into_iter().enumerate() {
            let want = ((t + 1) % 32) as f32;
            assert_eq!(got, want);
        }
    }

    #[test]
    fn a_branch_store_read_only_in_the_other_branch_goes() {
        // s0 is read in the else branch; the then branch's conversion lost its
        // readers. Its stores and their barriers go, the else branch's stay.
        let mut k = parse(
            "thread_kernel @k(x: mut buffer<f32>) threads 32 {
  shared s0 scratch: [f32; 32] align 16
  r0: i32 = thread_id
  r1: f32 = cast r0
  r2: i32 = const 16
  r3: i1 = cmp lt r0, r2
  r4: i32 = const 31
  r5: i32 = sub r4, r0
  r8: i1 = const 1
  if r8 {
    r6: f32 = mul r1, r1
    barrier
    store s0[r0] = r6
    barrier
    store x[r0] = r1
  } else {
    barrier
    store s0[r0] = r1
    barrier
    r7: f32 = load s0[r5]
    store x[r0] = r7
  }
}
",
        )
        .unwrap();
        remove_dead_shared(&mut k);
        let text = print(&k);
        assert_eq!(text.matches("store s0").count(), 1, "{text}");
        assert!(!text.contains("mul r1, r1"), "{text}");
        assert_eq!(text.matches("barrier").count(), 3, "{text}");
        let out = crate::thread_ir::sim::run_on_f32_buffer(&k, 32).unwrap();
        for (t, got) in out.into_iter().enumerate() {
            assert_eq!(got, t as f32);
        }
    }

    #[test]
    fn a_store_read_earlier_in_its_loop_stays() {
        // The load at the top of the body reads the previous trip's store (the back
        // edge), and a load after the loop reads the last one: both keep it; a store
        // in a branch that nothing after can read goes.
        let mut k = parse(
            "thread_kernel @k(x: mut buffer<f32>) threads 32 {
  shared s0 carried: [f32; 32] align 16
  shared s1 once: [f32; 32] align 16
  r0: i32 = thread_id
  r1: f32 = cast r0
  r2: i32 = const 0
  r3: i32 = const 3
  r4: i32 = const 1
  r5: i32 = const 31
  r6: i32 = sub r5, r0
  barrier
  store s0[r0] = r1
  store s1[r0] = r1
  for r7: i32 = r2 to r3 step r4 {
    barrier
    r8: f32 = load s0[r6]
    barrier
    store s0[r0] = r8
    r9: i1 = cmp eq r7, r3
    if r9 {
      store s1[r0] = r8
    }
  }
  barrier
  r10: f32 = load s1[r6]
  store x[r0] = r10
}
",
        )
        .unwrap();
        remove_dead_shared(&mut k);
        let text = print(&k);
        assert_eq!(text.matches("store s0").count(), 2, "{text}");
        assert_eq!(text.matches("store s1").count(), 2, "{text}");
        let out = crate::thread_ir::sim::run_on_f32_buffer(&k, 32).unwrap();
        for (t, got) in out.into_iter().enumerate() {
            assert_eq!(got, (31 - t) as f32);
        }
    }
}
