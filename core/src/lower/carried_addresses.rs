//! Pass (Thread IR, targets with global addresses): the global addresses of a loop's
//! asynchronous copies are carried across the loop as 64-bit registers.
//!
//! A pipelined loop copies its next operand tiles from indices that advance by a
//! loop-invariant step each trip:
//!
//! ```text
//! for ... {
//!   x = add c, s                 // c: x of the previous trip; s: loop-invariant
//!   async_copy s0[..] <- a[x]
//!   ...
//!   c = x
//! }
//! ```
//!
//! On PTX each such copy turned its 32-bit index into an address on the spot (a
//! widening multiply-add, `IMAD.WIDE`). `ptxas` computes those just before each
//! `cp.async` into a few reused registers, so every address waited for the copy two
//! before it to release its register, and the copies of a K step issued one by one:
//! tutorial 03's 128x256x64 f16 matmul spent about 5% of its K step there against
//! Triton's compile of the same source, which carries 64-bit pointers (Nsight Compute
//! and hand-edited PTX, BENCHMARKS.md, twenty-third session). Here each copy reads
//! instead a carried [`BYTE_ADDRESS`], set before the loop from `c`'s first value and
//! advanced by the step in bytes at the end of the body:
//!
//! ```text
//! a = (address a) + (i64(c) + i64(s)) << log2(size)    // before the loop
//! b = i64(s) << log2(size)
//! for ... {
//!   ...
//!   async_copy s0[..] <- &[a]
//!   ...
//!   a = add a, b                                        // last statement of the body
//! }
//! ```
//!
//! A byte address rather than an element index ([`crate::thread_ir::FLAT`]): the
//! address of an index is a 64-bit shift, two instructions a copy on every trip
//! (`SHF.L.U64.HI` and `IMAD.SHL`), 24 of a 128x256x64 f16 K step's 128 (Triton's
//! compile of the same step has 117).
//!
//! A second form serves a flattened persistent loop (`flatten_loops.rs`), whose copies
//! read `x = add r, o`: `r` the tile's place (row offsets times the stride), written
//! before the loop and again in a branch when the tile changes, `o` the K step's offset,
//! computed every trip. There each write of `r` is followed by a 64-bit base
//! `b = (address buf) + (r << log2(size))`, and the copy reads `b + (o << log2(size))`:
//! a 64-bit add a copy, with no widening multiply on the index just computed (`r` must
//! be written only by plain assignments, in the loop only inside branches).
//!
//! What qualifies: a copy anywhere in a `For` body whose buffer is a parameter of the
//! copy's element size, whose index `x` is assigned once in the kernel, at the body's
//! top level, as `add c, s` (either order) of integers, where `s` is not written in
//! the loop and `c`'s only write in the loop is the top-level `c = x`. Then `x` is
//! `c + s` on every trip with `c` the previous trip's `x`, so `a` holds `x`'s address on
//! every trip. The integer chain stays for anything else that reads it (masks, checks);
//! value numbering removes it where nothing does. An index that wraps around 32 bits
//! addresses no buffer either way, so in-bounds copies read the same elements.

use crate::ir::{BinaryOp, Const, DType};
use crate::thread_ir::{
    count_writes, is_address, writes_in, Expr, ParamKind, Reg, RegTy, Stmt, ThreadKernel,
    BYTE_ADDRESS,
};
use std::collections::HashMap;

/// Carries the addresses of qualifying copies (see the module documentation); returns
/// how many copies now read a carried address.
pub fn carry_copy_addresses(k: &mut ThreadKernel) -> usize {
    let mut writes = vec![0u32; k.regs.len()];
    count_writes(&k.body, &mut writes);
    let mut body = std::mem::take(&mut k.body);
    let n = walk(&mut body, k, &writes);
    let based = base_branch_offsets(&mut body, k, &writes);
    k.body = body;
    n + based
}

/// The second form (a flattened persistent loop's copies): a copy whose index is
/// `x = add r, o` at its loop body's top level, where `r` is written in the loop only
/// inside a branch (the tile's place, recomputed when the tile changes) and by plain
/// assignments everywhere, reads `b + (o << log2(size))`, with the 64-bit base
/// `b = (address buf) + (r << log2(size))` assigned after every write of `r`: a 64-bit
/// add a copy a trip instead of a widening multiply-add on the spot. Returns how many
/// copies it rewrote.
fn base_branch_offsets(body: &mut Vec<Stmt>, k: &mut ThreadKernel, writes: &[u32]) -> usize {
    // Registers every write of which is a plain assignment.
    let mut assigned = vec![0u32; k.regs.len()];
    fn count_assigns(body: &[Stmt], n: &mut [u32]) {
        for s in body {
            if let Stmt::Assign { dst, .. } = s {
                if let Some(c) = n.get_mut(dst.0 as usize) {
                    *c += 1;
                }
            }
            for b in s.bodies() {
                count_assigns(b, n);
            }
        }
    }
    count_assigns(body, &mut assigned);
    let plain = |r: Reg| {
        let a = assigned.get(r.0 as usize).copied().unwrap_or(0);
        a > 0 && a == writes_of(writes, r)
    };
    // (x, r, o, buf) for every qualifying copy.
    let mut found: Vec<(Reg, Reg, Reg, u32)> = vec![];
    fn find(
        body: &[Stmt],
        k: &ThreadKernel,
        writes: &[u32],
        plain: &dyn Fn(Reg) -> bool,
        found: &mut Vec<(Reg, Reg, Reg, u32)>,
    ) {
        for s in body {
            for b in s.bodies() {
                find(b, k, writes, plain, found);
            }
            let Stmt::For { body: lb, iv, .. } = s else {
                continue;
            };
            let top: HashMap<Reg, u32> = {
                let mut m = HashMap::new();
                for t in lb.iter() {
                    for r in t.writes() {
                        *m.entry(r).or_insert(0) += 1;
                    }
                }
                m
            };
            let in_loop = writes_in(lb);
            for t in lb.iter() {
                let Stmt::AsyncCopy {
                    arr, buf, index, ..
                } = t
                else {
                    continue;
                };
                if is_address(*buf) || copy_unit(k, *arr, *buf).is_none() {
                    continue;
                }
                let Some(Expr::Binary(BinaryOp::Add, p, q)) = top_level_def(lb, writes, *index)
                else {
                    continue;
                };
                let ty = k.reg_ty(*index);
                if ty.lanes != 1 || !matches!(ty.dtype, DType::I32 | DType::I64) {
                    continue;
                }
                for (r, o) in [(*p, *q), (*q, *p)] {
                    let written_here = in_loop.get(&r).copied().unwrap_or(0);
                    if r != *iv
                        && k.reg_ty(r) == ty
                        && k.reg_ty(o) == ty
                        && plain(r)
                        && written_here > 0
                        && !top.contains_key(&r)
                    {
                        if !found.iter().any(|f| f.0 == *index && f.3 == *buf) {
                            found.push((*index, r, o, *buf));
                        }
                        break;
                    }
                }
            }
        }
    }
    find(body, k, writes, &plain, &mut found);
    if found.is_empty() {
        return 0;
    }
    // One base a (r, buf): assigned after every write of r.
    let mut bases: HashMap<(Reg, u32), Reg> = HashMap::new();
    for &(_, r, _, buf) in &found {
        bases
            .entry((r, buf))
            .or_insert_with(|| new_reg(k, DType::I64));
    }
    fn shift_of(k: &ThreadKernel, buf: u32) -> i64 {
        match k.params[buf as usize].kind {
            ParamKind::Buffer { dtype, .. } => dtype.size_bytes().trailing_zeros() as i64,
            _ => 0,
        }
    }
    /// `dst = (address buf) + (i64(r) << shift)`, appended to `out`.
    fn base_of(k: &mut ThreadKernel, out: &mut Vec<Stmt>, dst: Reg, r: Reg, buf: u32) {
        let shift = shift_of(k, buf);
        let w = widened(k, out, r);
        let bytes = shifted_left(k, out, w, shift);
        let a = new_reg(k, DType::I64);
        out.push(Stmt::Assign {
            dst: a,
            expr: Expr::Address(buf),
        });
        out.push(Stmt::Assign {
            dst,
            expr: Expr::Binary(BinaryOp::Add, a, bytes),
        });
    }
    fn after_writes(body: &mut Vec<Stmt>, k: &mut ThreadKernel, bases: &HashMap<(Reg, u32), Reg>) {
        let mut i = 0;
        while i < body.len() {
            for b in body[i].bodies_mut() {
                after_writes(b, k, bases);
            }
            let mut extra = vec![];
            if let Stmt::Assign { dst, .. } = &body[i] {
                let dst = *dst;
                for (&(r, buf), &b) in bases.iter() {
                    if r == dst {
                        base_of(k, &mut extra, b, r, buf);
                    }
                }
            }
            let m = extra.len();
            for (j, s) in extra.into_iter().enumerate() {
                body.insert(i + 1 + j, s);
            }
            i += 1 + m;
        }
    }
    after_writes(body, k, &bases);
    // Each copy reads `base + (o << shift)`, computed after x's definition.
    let mut addrs: HashMap<(Reg, u32), Reg> = HashMap::new();
    fn rewrite(
        body: &mut Vec<Stmt>,
        k: &mut ThreadKernel,
        found: &[(Reg, Reg, Reg, u32)],
        bases: &HashMap<(Reg, u32), Reg>,
        addrs: &mut HashMap<(Reg, u32), Reg>,
    ) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < body.len() {
            for b in body[i].bodies_mut() {
                n += rewrite(b, k, found, bases, addrs);
            }
            let mut extra = vec![];
            if let Stmt::Assign { dst, .. } = &body[i] {
                let x = *dst;
                for &(fx, r, o, buf) in found {
                    if fx != x || addrs.contains_key(&(x, buf)) {
                        continue;
                    }
                    let shift = shift_of(k, buf);
                    let w = widened(k, &mut extra, o);
                    let bytes = shifted_left(k, &mut extra, w, shift);
                    let a = new_reg(k, DType::I64);
                    extra.push(Stmt::Assign {
                        dst: a,
                        expr: Expr::Binary(BinaryOp::Add, bases[&(r, buf)], bytes),
                    });
                    addrs.insert((x, buf), a);
                }
            }
            if let Stmt::AsyncCopy { buf, index, .. } = &mut body[i] {
                if let Some(&a) = addrs.get(&(*index, *buf)) {
                    *buf = BYTE_ADDRESS;
                    *index = a;
                    n += 1;
                }
            }
            let m = extra.len();
            for (j, s) in extra.into_iter().enumerate() {
                body.insert(i + 1 + j, s);
            }
            i += 1 + m;
        }
        n
    }
    rewrite(body, k, &found, &bases, &mut addrs)
}

/// Applies the pass to every `For` in `body`, innermost first.
fn walk(body: &mut Vec<Stmt>, k: &mut ThreadKernel, writes: &[u32]) -> usize {
    let mut carried = 0;
    let mut i = 0;
    while i < body.len() {
        for b in body[i].bodies_mut() {
            carried += walk(b, k, writes);
        }
        if let Stmt::For { .. } = &body[i] {
            let (before, n) = carry_in_loop(&mut body[i], k, writes);
            carried += n;
            let m = before.len();
            for (j, s) in before.into_iter().enumerate() {
                body.insert(i + j, s);
            }
            i += m;
        }
        i += 1;
    }
    carried
}

/// How many times `r` is written in the kernel, as counted before the pass. Registers
/// the pass made while rewriting an inner loop are not counted: they read as written
/// too often to qualify (an outer loop of that inner loop sees them).
fn writes_of(writes: &[u32], r: Reg) -> u32 {
    writes.get(r.0 as usize).copied().unwrap_or(u32::MAX)
}

fn new_reg(k: &mut ThreadKernel, dtype: DType) -> Reg {
    k.regs.push(RegTy::scalar(dtype));
    Reg(k.regs.len() as u32 - 1)
}

/// The buffer parameters a copy may read through a carried address: those whose
/// element has the size of the shared array's element (the copy's unit).
fn copy_unit(k: &ThreadKernel, arr: u32, buf: u32) -> Option<DType> {
    let ParamKind::Buffer { dtype, .. } = k.params.get(buf as usize)?.kind else {
        return None;
    };
    let sdt = k.shared.get(arr as usize)?.dtype;
    (sdt.size_bytes() == dtype.size_bytes() && dtype.size_bytes().is_power_of_two())
        .then_some(dtype)
}

/// Rewrites the qualifying copies of one loop; returns the statements to put before it
/// and how many copies it rewrote.
fn carry_in_loop(for_stmt: &mut Stmt, k: &mut ThreadKernel, writes: &[u32]) -> (Vec<Stmt>, usize) {
    let Stmt::For { iv, body, .. } = for_stmt else {
        return (vec![], 0);
    };
    let mut in_loop = writes_in(body);
    *in_loop.entry(*iv).or_insert(0) += 1;
    let written_in_loop = |r: Reg| in_loop.get(&r).copied().unwrap_or(0);
    // Top-level `x = add c, s` with x written once in the kernel, s loop-invariant.
    let mut steps: HashMap<Reg, (Reg, Reg)> = HashMap::new();
    for s in body.iter() {
        let Stmt::Assign {
            dst: x,
            expr: Expr::Binary(BinaryOp::Add, a, b),
        } = s
        else {
            continue;
        };
        let ty = k.reg_ty(*x);
        if writes_of(writes, *x) != 1
            || ty.lanes != 1
            || !matches!(ty.dtype, DType::I32 | DType::I64)
        {
            continue;
        }
        for (c, st) in [(*a, *b), (*b, *a)] {
            if k.reg_ty(c) == ty && k.reg_ty(st) == ty && invariant(body, &in_loop, writes, st, 0) {
                steps.insert(*x, (c, st));
                break;
            }
        }
    }
    // ... whose c is written in the loop only by a top-level `c = x`.
    steps.retain(|x, (c, _)| {
        written_in_loop(*c) == 1
            && body.iter().any(
                |s| matches!(s, Stmt::Assign { dst, expr: Expr::Copy(v) } if dst == c && v == x),
            )
    });
    if steps.is_empty() {
        return (vec![], 0);
    }
    // The copies that read them, keyed by (index, buffer).
    let mut wanted: Vec<(Reg, u32)> = vec![];
    collect_copies(body, &steps, k, &mut wanted);
    if wanted.is_empty() {
        return (vec![], 0);
    }
    let mut before = vec![];
    let mut latch = vec![];
    let mut carried: HashMap<(Reg, u32), Reg> = HashMap::new();
    let mut wide_steps: HashMap<Reg, Reg> = HashMap::new();
    let mut byte_steps: HashMap<(Reg, i64), Reg> = HashMap::new();
    for (x, buf) in wanted {
        let (c, s) = steps[&x];
        let unit = match k.params[buf as usize].kind {
            ParamKind::Buffer { dtype, .. } => dtype,
            _ => continue,
        };
        let s64 = match wide_steps.get(&s) {
            Some(r) => *r,
            None => {
                let s_before = hoisted(body, &in_loop, k, &mut before, s);
                let r = widened(k, &mut before, s_before);
                wide_steps.insert(s, r);
                r
            }
        };
        let c64 = widened(k, &mut before, c);
        let shift = unit.size_bytes().trailing_zeros() as i64;
        // The step in bytes, once per (step, element size).
        let step_bytes = match byte_steps.get(&(s, shift)) {
            Some(r) => *r,
            None => {
                let r = shifted_left(k, &mut before, s64, shift);
                byte_steps.insert((s, shift), r);
                r
            }
        };
        let base = new_reg(k, DType::I64);
        before.push(Stmt::Assign {
            dst: base,
            expr: Expr::Address(buf),
        });
        let first = new_reg(k, DType::I64);
        before.push(Stmt::Assign {
            dst: first,
            expr: Expr::Binary(BinaryOp::Add, c64, s64),
        });
        let first_bytes = shifted_left(k, &mut before, first, shift);
        let a = new_reg(k, DType::I64);
        before.push(Stmt::Assign {
            dst: a,
            expr: Expr::Binary(BinaryOp::Add, base, first_bytes),
        });
        latch.push(Stmt::Assign {
            dst: a,
            expr: Expr::Binary(BinaryOp::Add, a, step_bytes),
        });
        carried.insert((x, buf), a);
    }
    let n = rewrite_copies(body, &carried);
    body.extend(latch);
    (before, n)
}

/// `r` as an `i64`: itself, or a cast to a fresh register appended to `out`.
fn widened(k: &mut ThreadKernel, out: &mut Vec<Stmt>, r: Reg) -> Reg {
    if k.reg_ty(r).dtype == DType::I64 {
        return r;
    }
    let w = new_reg(k, DType::I64);
    out.push(Stmt::Assign {
        dst: w,
        expr: Expr::Cast {
            value: r,
            bitcast: false,
        },
    });
    w
}

/// `r << shift` (an `i64`) in a fresh register assigned in `before`; `r` for 0.
fn shifted_left(k: &mut ThreadKernel, before: &mut Vec<Stmt>, r: Reg, shift: i64) -> Reg {
    if shift == 0 {
        return r;
    }
    let sh = new_reg(k, DType::I64);
    before.push(Stmt::Assign {
        dst: sh,
        expr: Expr::Const(Const::Int(shift)),
    });
    let out = new_reg(k, DType::I64);
    before.push(Stmt::Assign {
        dst: out,
        expr: Expr::Binary(BinaryOp::Shl, r, sh),
    });
    out
}

/// The single top-level assignment of `r` in `body`, if `r` is written once in the
/// kernel and that is it.
fn top_level_def<'a>(body: &'a [Stmt], writes: &[u32], r: Reg) -> Option<&'a Expr> {
    if writes_of(writes, r) != 1 {
        return None;
    }
    body.iter().find_map(|s| match s {
        Stmt::Assign { dst, expr } if *dst == r => Some(expr),
        _ => None,
    })
}

/// Whether `r` has the same value on every trip of the loop whose body is `body` (and
/// before it): not written in the loop, or computed once at the body's top level by a
/// pure expression of such registers (the steps `ptxas` would hoist; `b`'s step is
/// `BLOCK_K * stride_bk`, recomputed in the body).
fn invariant(
    body: &[Stmt],
    in_loop: &HashMap<Reg, u32>,
    writes: &[u32],
    r: Reg,
    depth: u32,
) -> bool {
    if in_loop.get(&r).copied().unwrap_or(0) == 0 {
        return true;
    }
    if depth > 8 {
        return false;
    }
    match top_level_def(body, writes, r) {
        Some(e) if e.is_pure() => e
            .operands()
            .into_iter()
            .all(|o| invariant(body, in_loop, writes, o, depth + 1)),
        _ => false,
    }
}

/// A register holding invariant `r`'s value before the loop: `r` itself where the loop
/// does not write it, else its definition recomputed (recursively) into fresh registers
/// appended to `before`.
fn hoisted(
    body: &[Stmt],
    in_loop: &HashMap<Reg, u32>,
    k: &mut ThreadKernel,
    before: &mut Vec<Stmt>,
    r: Reg,
) -> Reg {
    if in_loop.get(&r).copied().unwrap_or(0) == 0 {
        return r;
    }
    let expr = body
        .iter()
        .find_map(|s| match s {
            Stmt::Assign { dst, expr } if *dst == r => Some(expr.clone()),
            _ => None,
        })
        .expect("an invariant register written in the loop has a top-level definition");
    let mut map = HashMap::new();
    for o in expr.operands() {
        let h = hoisted(body, in_loop, k, before, o);
        map.insert(o, h);
    }
    let ty = k.reg_ty(r);
    k.regs.push(ty);
    let fresh = Reg(k.regs.len() as u32 - 1);
    let mut expr = expr;
    expr.map_operands(&mut |o| map.get(&o).copied().unwrap_or(o));
    before.push(Stmt::Assign { dst: fresh, expr });
    fresh
}

fn collect_copies(
    body: &[Stmt],
    steps: &HashMap<Reg, (Reg, Reg)>,
    k: &ThreadKernel,
    out: &mut Vec<(Reg, u32)>,
) {
    for s in body {
        if let Stmt::AsyncCopy {
            arr, buf, index, ..
        } = s
        {
            if !is_address(*buf)
                && steps.contains_key(index)
                && copy_unit(k, *arr, *buf).is_some()
                && !out.contains(&(*index, *buf))
            {
                out.push((*index, *buf));
            }
        }
        for b in s.bodies() {
            collect_copies(b, steps, k, out);
        }
    }
}

fn rewrite_copies(body: &mut [Stmt], carried: &HashMap<(Reg, u32), Reg>) -> usize {
    let mut n = 0;
    for s in body.iter_mut() {
        if let Stmt::AsyncCopy { buf, index, .. } = s {
            if let Some(a) = carried.get(&(*index, *buf)) {
                *buf = BYTE_ADDRESS;
                *index = *a;
                n += 1;
            }
        }
        for b in s.bodies_mut() {
            n += rewrite_copies(b, carried);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{HostBuffer, RtArg};
    use crate::thread_ir::{parse, print};

    /// Four trips; trip t copies `x[t * 32 + 32 + tid]` through shared memory to
    /// `y[t * 32 + tid]`. The copy's index advances by `s = 32 * 1`, computed in the
    /// body from invariants (as `BLOCK_K * stride` is).
    const COPIES: &str = "thread_kernel @k(x: buffer<f32>, y: mut buffer<f32>) threads 32 {
  shared s0 stage: [f32; 32] align 16
  r0: i32 = thread_id
  r1: i32 = const 0
  r2: i32 = const 4
  r3: i32 = const 1
  r4: i32 = const 32
  r5: i32 = const 0
  r6: i32 = r0
  for r7: i32 = r1 to r2 step r3 {
    r8: i32 = mul r4, r3
    r9: i32 = add r6, r8
    async_copy x1 s0[r0] <- x[r9]
    async_commit
    async_wait 0
    barrier
    r10: f32 = load s0[r0]
    r11: i32 = mul r7, r4
    r12: i32 = add r11, r0
    store y[r12] = r10
    barrier
    r6: i32 = r9
  }
}
";

    /// `k` on 256 elements of `x` (`x[i] = 1.5 i`) and 128 of `y`, poisoned: `y`.
    fn simulated(k: &ThreadKernel) -> crate::diag::Result<Vec<f32>> {
        let xs: Vec<u8> = (0..256)
            .flat_map(|i| (i as f32 * 1.5).to_le_bytes())
            .collect();
        let buffer = |bytes: Vec<u8>| HostBuffer {
            dtype: DType::F32,
            bytes,
        };
        let mut bufs = vec![buffer(xs), buffer(vec![0xff; 4 * 128])];
        let view = |buffer: usize, len: usize| RtArg::Buffer {
            buffer,
            offset: 0,
            len,
        };
        let args = [view(0, 256), view(1, 128)];
        crate::thread_ir::sim::simulate(k, crate::launch::Grid([1, 1, 1]), &args, &mut bufs)?;
        Ok(bufs[1]
            .bytes
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn run(k: &ThreadKernel) -> Vec<f32> {
        simulated(k).unwrap()
    }

    #[test]
    fn a_copy_reads_a_carried_address() {
        let mut k = parse(COPIES).unwrap();
        let want = run(&k);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(*w, (i + 32) as f32 * 1.5);
        }
        assert_eq!(carry_copy_addresses(&mut k), 1);
        let text = print(&k);
        assert!(text.contains("<- &["), "{text}");
        let opts = crate::lower::expand::ExpandOptions::ptx(1);
        crate::thread_ir::verify::verify(&k, &opts, "carried_addresses").unwrap();
        assert_eq!(run(&k), want);
        // The step is computed once before the loop as well, and added at the end.
        let body_end = text.rfind("r6: i32 = r9").unwrap();
        let advance = text.rfind("add r").unwrap();
        assert!(advance > body_end, "{text}");
    }

    /// Loads and stores through byte addresses (`&[..]`): thread t moves `x[t + 3]` to
    /// `y[t]`; a byte address that is not a multiple of the element's size is an error.
    #[test]
    fn byte_addresses_reach_the_element_they_name() {
        let src = "thread_kernel @k(x: buffer<f32>, y: mut buffer<f32>) threads 32 {
  r0: i32 = thread_id
  r1: i64 = cast r0
  r2: i64 = const 2
  r3: i64 = shl r1, r2
  r4: i64 = address x
  r5: i64 = add r4, r3
  r9: i64 = const 12
  r10: i64 = add r5, r9
  r6: f32 = load &[r10]
  r7: i64 = address y
  r8: i64 = add r7, r3
  store &[r8] = r6
}";
        let k = parse(src).unwrap();
        let opts = crate::lower::expand::ExpandOptions::ptx(1);
        crate::thread_ir::verify::verify(&k, &opts, "test").unwrap();
        assert_eq!(print(&parse(&print(&k)).unwrap()), print(&k));
        let got = run(&k);
        for (i, g) in got.iter().enumerate() {
            let want = if i < 32 {
                (i + 3) as f32 * 1.5
            } else {
                f32::from_bits(!0)
            };
            assert_eq!(g.to_bits(), want.to_bits(), "element {i}");
        }
        let k = parse(&src.replace("const 12", "const 13")).unwrap();
        let err = simulated(&k).unwrap_err();
        assert!(err.to_string().contains("misaligned access"), "{err}");
    }

    /// A flattened loop's copy: two trips a tile; the tile's place `r6` is recomputed
    /// in a branch when the tile changes, and trip t copies `x[place + k * 32]` =
    /// `x[t * 32 + tid]` to `y[t * 32 + tid]`.
    const PLACED: &str = "thread_kernel @k(x: buffer<f32>, y: mut buffer<f32>) threads 32 {
  shared s0 stage: [f32; 32] align 16
  r0: i32 = thread_id
  r1: i32 = const 0
  r2: i32 = const 4
  r3: i32 = const 1
  r4: i32 = const 32
  r5: i32 = const 64
  r13: i32 = const 2
  r6: i32 = mul r0, r3
  for r7: i32 = r1 to r2 step r3 {
    r8: i32 = rem r7, r13
    r14: i1 = cmp eq r8, r1
    if r14 {
      r15: i32 = div r7, r13
      r16: i32 = mul r15, r5
      r6: i32 = add r16, r0
    }
    r9: i32 = mul r8, r4
    r10: i32 = add r6, r9
    async_copy x1 s0[r0] <- x[r10]
    async_commit
    async_wait 0
    barrier
    r11: f32 = load s0[r0]
    r12: i32 = mul r7, r4
    r17: i32 = add r12, r0
    store y[r17] = r11
    barrier
  }
}
";

    #[test]
    fn a_copy_offset_from_a_place_set_in_a_branch_reads_a_byte_address() {
        let mut k = parse(PLACED).unwrap();
        let want = run(&k);
        for (i, w) in want.iter().enumerate() {
            assert_eq!(*w, i as f32 * 1.5);
        }
        assert_eq!(carry_copy_addresses(&mut k), 1);
        let text = print(&k);
        assert!(text.contains("<- &["), "{text}");
        let opts = crate::lower::expand::ExpandOptions::ptx(1);
        crate::thread_ir::verify::verify(&k, &opts, "carried_addresses").unwrap();
        assert_eq!(run(&k), want);
        // The place written at the body's top level is not a place of a branch.
        let src = PLACED.replace(
            "    r9: i32 = mul r8, r4\n",
            "    r6: i32 = add r6, r1\n    r9: i32 = mul r8, r4\n",
        );
        let mut k = parse(&src).unwrap();
        let want = run(&k);
        assert_eq!(carry_copy_addresses(&mut k), 0, "{}", print(&k));
        assert_eq!(run(&k), want);
    }

    #[test]
    fn copies_whose_index_does_not_advance_by_an_invariant_stay() {
        for src in [
            // The step depends on the trip.
            COPIES.replace("r8: i32 = mul r4, r3", "r8: i32 = mul r4, r7"),
            // The carried register is not the index.
            COPIES.replace("    r6: i32 = r9\n", "    r6: i32 = r12\n"),
            // The carried register is written a second time in the loop.
            COPIES.replace("    r6: i32 = r9\n", "    r6: i32 = r9\n    r6: i32 = r0\n"),
            // The index is the carried register itself.
            COPIES.replace("<- x[r9]", "<- x[r6]"),
        ] {
            let mut k = parse(&src).unwrap();
            let want = run(&k);
            assert_eq!(carry_copy_addresses(&mut k), 0, "{}", print(&k));
            assert_eq!(run(&k), want);
        }
    }
}
