//! Pass (Thread IR): shared arrays whose lifetimes do not overlap share memory.
//!
//! The expansion gives every staged `dot` operand, layout conversion and reduction its
//! own shared array, so a kernel with several dots (attention) asks for the sum of
//! them. This pass lets arrays of one dtype take turns in one array when a barrier
//! separates their uses, as Triton's allocator reuses shared memory by liveness.
//!
//! Lifetimes are intervals of statement positions in a block, computed bottom-up:
//! an array used only inside one `For` body is placed there first; seen from the
//! block around the loop, the loop's arrays (merged or not) occupy the loop statement
//! alone. `If` and `While` statements are not entered (their arrays occupy the whole
//! statement). Two arrays of a block may share when a barrier directly in that block
//! lies strictly between the last statement using the first and the first statement
//! using the second; in a loop body also around the back edge (between the second's
//! last use and the first's first use of the next trip), since the body repeats.
//! Destinations of asynchronous copies (the pipelined rings) share only across a
//! drain (a barrier right after waiting for every copy, as after each pipelined loop):
//! the rings of consecutive loops (causal attention's two) take turns in one memory.
//! Rings the tensor memory accelerator fills (and their barriers) take over only the
//! memory of other such rings: their copies write through the asynchronous proxy, which
//! is not ordered after ordinary stores and copies to the same memory without a proxy
//! fence in every writing thread. Likewise a ring that asynchronous copies fill and
//! `wgmma` reads with no ordinary store of its own (so no writer fences the async
//! proxy before the reads) takes over no memory that ordinary stores wrote: those
//! writes would reach the `wgmma` unfenced (fuzzer seed 880076: a reduction's scratch
//! under a tf32 operand ring, reported by the simulator).
//! Merging is greedy by start position, per dtype (WGSL's workgroup arrays are typed),
//! or across dtypes where shared memory is one byte space (`overlay`, PTX): an array
//! of another dtype then overlays the slot's first array
//! ([`SharedArray::overlays`]), as tutorial 03's f32 epilogue, staged after the loop,
//! takes over the f16 rings' memory. The simulator's race detector checks the result
//! on every kernel the tests run, overlays byte for byte.

use crate::thread_ir::{renumber_shared_arrays, SharedArray, Stmt, ThreadKernel};
use std::collections::BTreeMap;

/// A group of original arrays that share one array.
#[derive(Clone, Debug)]
struct Slot {
    members: Vec<u32>,
    dtype: crate::ir::DType,
    /// The most bytes a member takes.
    bytes: u64,
    /// The strictest alignment of the members.
    align: u32,
    /// Destinations of asynchronous copies never share.
    fixed: bool,
    /// Every member is filled by the tensor memory accelerator (or holds its barriers).
    tma: bool,
    /// The members are transaction barriers (`mbarrier`s): their memory is never
    /// repurposed for data, nor data memory for them (PTX wants an `mbarrier.inval`
    /// before a barrier's memory holds anything else).
    bars: bool,
    /// Some member is written by ordinary stores.
    generic: bool,
}

/// Per array: a destination of asynchronous copies (`fixed`), and of TMA copies or
/// their barriers (`tma`).
struct Marks {
    fixed: Vec<bool>,
    tma: Vec<bool>,
    /// Written by ordinary stores (`SharedStore`, `CoopStore`).
    generic: Vec<bool>,
    /// Transaction barriers (`MbarrierInit`, a TMA copy's barrier array).
    bars: Vec<bool>,
    /// Read by `wgmma`.
    wgmma_read: Vec<bool>,
}

impl Marks {
    /// Read by `wgmma` with no proxy fence of its own writers before: an asynchronous
    /// copies' destination no ordinary store writes.
    fn unfenced_wgmma_operand(&self, a: usize) -> bool {
        self.wgmma_read[a] && self.fixed[a] && !self.generic[a]
    }
}

/// Merges shared arrays of `k` where their lifetimes allow, across dtypes too where
/// `overlay`; returns the bytes saved.
pub fn reuse_shared(k: &mut ThreadKernel, overlay: bool) -> u64 {
    if k.shared.len() < 2 {
        return 0;
    }
    let mut marks = Marks {
        fixed: vec![false; k.shared.len()],
        tma: vec![false; k.shared.len()],
        generic: vec![false; k.shared.len()],
        wgmma_read: vec![false; k.shared.len()],
        bars: vec![false; k.shared.len()],
    };
    mark_async_targets(&k.body, &mut marks);
    let mut inserts = vec![];
    let cx = Cx {
        k,
        marks: &marks,
        overlay,
    };
    let slots = block_slots(&cx, &k.body, &[], false, &[], &mut inserts);
    // Arrays no statement uses (none in practice) keep their own slot.
    let mut placed = vec![false; k.shared.len()];
    for s in &slots {
        for &m in &s.members {
            placed[m as usize] = true;
        }
    }
    let mut slots = slots;
    for (i, a) in k.shared.iter().enumerate() {
        if !placed[i] {
            slots.push(Slot {
                members: vec![i as u32],
                dtype: a.dtype,
                bytes: array_bytes(a),
                align: a.align,
                fixed: true,
                tma: marks.tma[i],
                bars: marks.bars[i],
                generic: marks.generic[i],
            });
        }
    }
    if slots.len() == k.shared.len() {
        return 0;
    }
    slots.sort_by_key(|s| s.members.iter().copied().min());
    let before = k.shared_bytes();
    let mut map = vec![0u32; k.shared.len()];
    let mut shared: Vec<SharedArray> = vec![];
    for s in &slots {
        // One array for the members of the slot's dtype, holding the slot's bytes; one
        // overlaying it for each other dtype's members.
        let host = shared.len() as u32;
        let mut dtypes = vec![s.dtype];
        for &m in &s.members {
            let dt = k.shared[m as usize].dtype;
            if !dtypes.contains(&dt) {
                dtypes.push(dt);
            }
        }
        for (g, &dt) in dtypes.iter().enumerate() {
            let group: Vec<u32> = s
                .members
                .iter()
                .copied()
                .filter(|&m| k.shared[m as usize].dtype == dt)
                .collect();
            let at = shared.len() as u32;
            for &m in &group {
                map[m as usize] = at;
            }
            let name = |m: &u32| k.shared[*m as usize].name.as_str();
            let size = dt.size_bytes() as u64;
            let (len, align) = if g == 0 {
                (s.bytes.div_ceil(size), s.align)
            } else {
                let bytes = group
                    .iter()
                    .map(|&m| array_bytes(&k.shared[m as usize]))
                    .max();
                let align = group.iter().map(|&m| k.shared[m as usize].align).max();
                (bytes.unwrap_or(0).div_ceil(size), align.unwrap_or(16))
            };
            shared.push(SharedArray {
                name: group.iter().map(name).collect::<Vec<_>>().join("+"),
                dtype: dt,
                len: len as u32,
                align,
                overlays: (g > 0).then_some(host),
            });
        }
    }
    k.shared = shared;
    renumber_shared_arrays(&mut k.body, &map);
    insert_barriers(&mut k.body, inserts);
    let after = k.shared_bytes();
    if after < before {
        k.notes.push(format!(
            "shared memory: {after} bytes after reuse by lifetime ({before} without)"
        ));
    }
    before.saturating_sub(after)
}

/// Bytes of array `a`.
fn array_bytes(a: &SharedArray) -> u64 {
    a.len as u64 * a.dtype.size_bytes() as u64
}

/// What every block's placement reads: the kernel, its arrays' marks, and whether
/// arrays of different dtypes may share (one byte space).
struct Cx<'a> {
    k: &'a ThreadKernel,
    marks: &'a Marks,
    overlay: bool,
}

/// Inserts the barriers the merges rely on: `(path, position)`, the path the statement
/// indices of the `For` loops leading to the block.
fn insert_barriers(body: &mut Vec<Stmt>, mut inserts: Vec<(Vec<usize>, usize)>) {
    // Deepest and latest first, so that no insertion moves another's position.
    inserts.sort_by(|a, b| b.cmp(a));
    inserts.dedup();
    for (path, pos) in inserts {
        let mut block = &mut *body;
        for &i in &path {
            match &mut block[i] {
                Stmt::For { body, .. } => block = body,
                _ => unreachable!("barrier paths go through loops"),
            }
        }
        block.insert(pos, Stmt::Barrier);
    }
}

fn mark_async_targets(body: &[Stmt], marks: &mut Marks) {
    for s in body {
        match s {
            Stmt::AsyncCopy { arr, .. } => marks.fixed[*arr as usize] = true,
            Stmt::SharedStore { arr, .. } | Stmt::CoopStore { arr, .. } => {
                marks.generic[*arr as usize] = true
            }
            Stmt::Wgmma { a, b, .. } => {
                if let Some(m) = a.shared() {
                    marks.wgmma_read[m.arr as usize] = true;
                }
                marks.wgmma_read[b.arr as usize] = true;
            }
            // Copies by the tensor memory accelerator and their barriers.
            Stmt::TmaLoad { arr, bar_arr, .. } => {
                for a in [*arr, *bar_arr] {
                    marks.fixed[a as usize] = true;
                    marks.tma[a as usize] = true;
                }
                marks.bars[*bar_arr as usize] = true;
            }
            Stmt::MbarrierInit { arr, .. } => {
                marks.fixed[*arr as usize] = true;
                marks.tma[*arr as usize] = true;
                marks.bars[*arr as usize] = true;
            }
            _ => {}
        }
        for b in s.bodies() {
            mark_async_targets(b, marks);
        }
    }
}

/// Every shared array a statement uses, its nested bodies included.
fn arrays_within(s: &Stmt, out: &mut Vec<u32>) {
    out.extend(s.shared_arrays());
    for b in s.bodies() {
        for t in b {
            arrays_within(t, out);
        }
    }
}

/// The slots of a block: arrays (or inner loops' slots) placed by their lifetimes in
/// this block. `cyclic`: the block is a loop body; `path`: the positions of the loops
/// leading to it. In a block whose threads are known to run it together (it has a
/// barrier of its own), two slots of one dtype whose uses do not overlap but lack a
/// barrier between them share anyway, with a barrier inserted before the second's first
/// use (recorded in `inserts`; `insert_barriers` places them). `pinned`: arrays also
/// used outside the loops around this block (a dot operand staged ahead of its loop),
/// which share nothing here: their memory must hold across the trips.
#[allow(clippy::too_many_arguments)]
fn block_slots(
    cx: &Cx<'_>,
    body: &[Stmt],
    pinned: &[u32],
    cyclic: bool,
    path: &[usize],
    inserts: &mut Vec<(Vec<usize>, usize)>,
) -> Vec<Slot> {
    let (k, marks) = (cx.k, cx.marks);
    // Which statements of this block each array (or inner slot) is used by.
    let mut uses: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    let mut inner: Vec<(Slot, usize)> = vec![];
    let mut inner_members: Vec<bool> = vec![false; k.shared.len()];
    let mut barriers = vec![];
    // Barriers right after a wait for every asynchronous copy (`AsyncWait { pending: 0
    // }`, as after a pipelined loop): past one, no copy still writes any array.
    let mut drains = vec![];
    for (i, s) in body.iter().enumerate() {
        if matches!(s, Stmt::Barrier | Stmt::StorageBarrier) {
            barriers.push(i);
            if i > 0 && matches!(body[i - 1], Stmt::AsyncWait { pending: 0 }) {
                drains.push(2 * i);
            }
        }
        if let Stmt::For { body: b, .. } = s {
            // Arrays used only inside this loop are placed in its body first.
            let mut here = vec![];
            arrays_within(s, &mut here);
            let mut outside = vec![];
            for (j, t) in body.iter().enumerate() {
                if j != i {
                    arrays_within(t, &mut outside);
                }
            }
            let local: Vec<u32> = here
                .iter()
                .copied()
                .filter(|a| !outside.contains(a))
                .collect();
            let inner_path: Vec<usize> = path.iter().copied().chain([i]).collect();
            let mut inner_pinned = pinned.to_vec();
            inner_pinned.extend(here.iter().copied().filter(|a| !local.contains(a)));
            for slot in block_slots(cx, b, &inner_pinned, true, &inner_path, inserts) {
                if slot.members.iter().all(|m| local.contains(m)) {
                    for &m in &slot.members {
                        inner_members[m as usize] = true;
                    }
                    inner.push((slot, i));
                }
            }
        }
        let mut here = vec![];
        arrays_within(s, &mut here);
        for a in here {
            let e = uses.entry(a).or_insert((i, i));
            e.0 = e.0.min(i);
            e.1 = e.1.max(i);
        }
    }
    // Candidates: inner slots at their loop's position, and this block's own arrays.
    let mut cands: Vec<(Slot, usize, usize)> = inner.into_iter().map(|(s, i)| (s, i, i)).collect();
    for (&a, &(first, last)) in &uses {
        if inner_members[a as usize] {
            continue;
        }
        let arr = &k.shared[a as usize];
        cands.push((
            Slot {
                members: vec![a],
                dtype: arr.dtype,
                bytes: array_bytes(arr),
                align: arr.align,
                fixed: marks.fixed[a as usize] || pinned.contains(&a),
                tma: marks.tma[a as usize],
                bars: marks.bars[a as usize],
                generic: marks.generic[a as usize],
            },
            first,
            last,
        ));
    }
    cands.sort_by_key(|c| (c.1, c.2));
    // Barrier positions in half steps: `2p` a barrier at statement `p`, `2i - 1` one
    // inserted before statement `i`.
    let mut barriers: Vec<usize> = barriers.iter().map(|&p| 2 * p).collect();
    let uniform = !barriers.is_empty();
    let separated =
        |b: &[usize], from: usize, to: usize| b.iter().any(|&p| 2 * from < p && p < 2 * to);
    let around =
        |b: &[usize], last: usize, first: usize| b.iter().any(|&p| p > 2 * last || p < 2 * first);
    // Greedy: each slot keeps (first start, last end) of what it holds.
    let mut out: Vec<(Slot, usize, usize)> = vec![];
    for (c, first, last) in cands {
        // (A pinned array, marked fixed, is in a loop body: it never shares.)
        // A slot holding a copy destination (a pipeline's ring) is taken over only past
        // a drain: its last copies have landed and every thread has passed them. In a
        // loop body (rings live across the trips) they never share.
        let unfenced = c
            .members
            .iter()
            .any(|&m| marks.unfenced_wgmma_operand(m as usize));
        let can_share = |b: &[usize], s: &Slot, s_first: usize, s_last: usize| {
            (s.dtype == c.dtype || cx.overlay)
                && s.bars == c.bars
                && (!c.tma || s.tma)
                && (!unfenced || !s.generic)
                && if s.fixed || c.fixed {
                    !cyclic
                        && (!s.fixed || separated(&drains, s_last, first))
                        && separated(b, s_last, first)
                } else {
                    separated(b, s_last, first) && (!cyclic || around(b, last, s_first))
                }
        };
        let mut fit = out
            .iter()
            .position(|(s, s_first, s_last)| can_share(&barriers, s, *s_first, *s_last));
        if fit.is_none() && !c.fixed && uniform && first > 0 {
            // With a barrier before this slot's first use.
            let mut with = barriers.clone();
            with.push(2 * first - 1);
            fit = out.iter().position(|(s, s_first, s_last)| {
                *s_last < first && !s.fixed && can_share(&with, s, *s_first, *s_last)
            });
            if fit.is_some() {
                barriers = with;
                inserts.push((path.to_vec(), first));
            }
        }
        match fit {
            Some(j) => {
                let (s, _, s_last) = &mut out[j];
                s.members.extend(&c.members);
                s.bytes = s.bytes.max(c.bytes);
                s.align = s.align.max(c.align);
                s.fixed |= c.fixed;
                s.tma &= c.tma;
                s.generic |= c.generic;
                *s_last = last;
            }
            None => out.push((c, first, last)),
        }
    }
    out.into_iter().map(|(s, _, _)| s).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinaryOp, Const, DType};
    use crate::thread_ir::testing::assign;
    use crate::thread_ir::{Expr, Param, ParamKind, Reg, RegTy, Special};

    /// Thread `t` writes `t` to array 0, reads its neighbour's, writes that to array 1,
    /// reads its neighbour's again and stores it: `(t + 2) % 32`. `middle`: a barrier
    /// between the last use of array 0 and the first of array 1; `in_loop`: the whole
    /// body inside a loop of two trips, `leading`: a barrier at the top of that body.
    fn kernel(middle: bool, in_loop: bool, leading: bool) -> ThreadKernel {
        let i = RegTy::scalar(DType::I32);
        let f = RegTy::scalar(DType::F32);
        let mut body = vec![];
        if leading {
            body.push(Stmt::Barrier);
        }
        body.extend([
            assign(
                5,
                Expr::Cast {
                    value: Reg(0),
                    bitcast: false,
                },
            ),
            Stmt::SharedStore {
                arr: 0,
                index: Reg(0),
                value: Reg(5),
            },
            Stmt::Barrier,
            assign(
                6,
                Expr::SharedLoad {
                    arr: 0,
                    index: Reg(4),
                },
            ),
        ]);
        if middle {
            body.push(Stmt::Barrier);
        }
        body.extend([
            Stmt::SharedStore {
                arr: 1,
                index: Reg(0),
                value: Reg(6),
            },
            Stmt::Barrier,
            assign(
                7,
                Expr::SharedLoad {
                    arr: 1,
                    index: Reg(4),
                },
            ),
            Stmt::Store {
                buf: 0,
                index: Reg(0),
                value: Reg(7),
                mask: None,
            },
        ]);
        let mut top = vec![
            assign(0, Expr::Special(Special::ThreadId)),
            assign(1, Expr::Const(Const::Int(1))),
            assign(2, Expr::Binary(BinaryOp::Add, Reg(0), Reg(1))),
            assign(3, Expr::Const(Const::Int(31))),
            assign(4, Expr::Binary(BinaryOp::And, Reg(2), Reg(3))),
        ];
        if in_loop {
            top.extend([
                assign(8, Expr::Const(Const::Int(0))),
                assign(9, Expr::Const(Const::Int(2))),
                Stmt::For {
                    iv: Reg(10),
                    lower: Reg(8),
                    upper: Reg(9),
                    step: Reg(1),
                    body,
                },
            ]);
        } else {
            top.extend(body);
        }
        let array = |name: &str| SharedArray {
            name: name.into(),
            dtype: DType::F32,
            len: 32,
            align: 16,
            overlays: None,
        };
        ThreadKernel {
            name: "t".into(),
            params: vec![Param {
                name: "out".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::F32,
                    written: true,
                },
            }],
            threads: 32,
            shared: vec![array("a"), array("b")],
            regs: vec![i, i, i, i, i, f, f, f, i, i, i],
            frags: vec![],
            body: top,
            notes: vec![],
            source: None,
            checks: None,
        }
    }

    fn run(k: &ThreadKernel) -> crate::diag::Result<Vec<f32>> {
        crate::thread_ir::sim::run_on_f32_buffer(k, 32)
    }

    fn barriers(body: &[Stmt]) -> usize {
        body.iter()
            .map(|s| {
                matches!(s, Stmt::Barrier) as usize
                    + s.bodies().iter().map(|b| barriers(b)).sum::<usize>()
            })
            .sum()
    }

    #[test]
    fn arrays_separated_by_a_barrier_share() {
        let want: Vec<f32> = (0..32).map(|t| ((t + 2) % 32) as f32).collect();
        for (middle, in_loop, leading, shares, inserted) in [
            // Without the middle barrier, one is inserted (the block has barriers of
            // its own, so its threads run it together).
            (false, false, false, true, true),
            (true, false, false, true, false),
            // In a loop the body repeats: array 1's last use and array 0's first use
            // of the next trip need a barrier between them too.
            (true, true, false, false, false),
            (true, true, true, true, false),
            (false, true, true, true, true),
        ] {
            let mut k = kernel(middle, in_loop, leading);
            let before = barriers(&k.body);
            let saved = reuse_shared(&mut k, false);
            let what = format!("{middle} {in_loop} {leading}");
            assert_eq!(k.shared.len(), if shares { 1 } else { 2 }, "{what}");
            assert_eq!(saved, if shares { 128 } else { 0 });
            assert_eq!(barriers(&k.body), before + inserted as usize, "{what}");
            assert_eq!(run(&k).unwrap(), want, "{what}");
        }
    }

    /// Arrays overlaying one memory race byte for byte in the simulator: an f32 array
    /// laid over an f16 one (its 4-byte elements over two of the other's) without the
    /// barrier between their uses is reported; with it the result is right.
    #[test]
    fn overlaid_arrays_race_byte_for_byte_in_the_simulator() {
        let want: Vec<f32> = (0..32).map(|t| ((t + 2) % 32) as f32).collect();
        for middle in [false, true] {
            let mut k = kernel(middle, false, false);
            k.shared[0].dtype = DType::F16;
            k.shared[0].len = 64;
            k.shared[1].overlays = Some(0);
            crate::thread_ir::verify::verify(
                &k,
                &crate::lower::expand::ExpandOptions::ptx(1),
                "test",
            )
            .unwrap();
            match run(&k) {
                Ok(got) => {
                    assert!(middle, "no race reported without the barrier");
                    assert_eq!(got, want);
                }
                Err(e) => {
                    assert!(!middle, "{e}");
                    assert!(e.to_string().contains("race"), "{e}");
                }
            }
        }
    }

    /// Transaction barriers keep memory of their own: the verifier refuses an overlay
    /// on an `mbarrier` array.
    #[test]
    fn transaction_barriers_are_never_overlaid() {
        let mut k = kernel(true, false, false);
        k.shared[0].dtype = DType::I64;
        k.shared[1].overlays = Some(0);
        k.body.insert(
            1,
            Stmt::MbarrierInit {
                arr: 0,
                index: Reg(0),
                count: 1,
            },
        );
        let e = crate::thread_ir::verify::verify(
            &k,
            &crate::lower::expand::ExpandOptions::ptx(1),
            "test",
        )
        .expect_err("an overlaid barrier");
        assert!(e.message.contains("transaction barriers"), "{}", e.message);
    }

    /// What the barrier rule prevents: the two arrays in one without the middle
    /// barrier is a race, which the simulator reports.
    #[test]
    fn sharing_without_a_barrier_is_a_race_the_simulator_reports() {
        let mut k = kernel(false, false, false);
        renumber_shared_arrays(&mut k.body, &[0, 0]);
        k.shared.truncate(1);
        let e = run(&k).expect_err("a race");
        assert!(e.to_string().contains("race"), "{e}");
    }
}
