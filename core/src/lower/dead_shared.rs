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
    let overwritten = remove_overwritten_stores(&mut k.body);
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
}
