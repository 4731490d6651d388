//! Warpgroup MMA in the simulator: `wgmma` reads its operands where the hardware reads
//! them ([`SmemMatrix::byte_offset`], the PTX ISA's canonical layouts and swizzles, not
//! the lowering's own layout code), and completes asynchronously.
//!
//! What the simulator holds the lowering to:
//! - Each warpgroup (threads `128g .. 128g + 128`) issues together, all present, with a
//!   descriptor base uniform in the warpgroup; arrays aligned to the swizzle's repeat.
//! - A product is exact, summed and rounded once to f32 with the accumulator.
//! - Results land at the `wgmma_wait` that completes their group; reading an
//!   accumulator before is reported, as is writing shared memory an in-flight `wgmma`
//!   reads. A wait completes only its own warpgroup's groups: the operands' reads
//!   count as the warpgroup's until the wait, so another warpgroup's write before the
//!   next barrier is a race (lockstep execution would otherwise hide it; the H200
//!   showed it).
//! - An `a` read from registers is read at issue; its registers, like the
//!   accumulators, may not be written until the group completes, and a write before
//!   the `wgmma` needs a `wgmma_fence` between (reported otherwise).
//! - Shared memory written by ordinary stores since the last `fence_proxy_async` is
//!   invisible to `wgmma` (reported); asynchronous copies (`cp.async`) are visible
//!   after their wait and a barrier, without a proxy fence (what Triton's fence
//!   insertion relies on, and the H200 confirms). An accumulator written by another
//!   statement since the last `wgmma_fence` is reported.

use super::{bug, ints, Sim};
use crate::diag::Result;
use crate::interp::value::{round1, Data};
use crate::ir::DType;
use crate::thread_ir::{Reg, SmemMatrix, Stmt, WgmmaA, WgmmaShape};
use std::collections::{HashMap, HashSet, VecDeque};

/// One issued `wgmma`: its accumulators' values once complete, and the shared elements
/// it reads until then.
struct Issued {
    results: Vec<(Reg, Data)>,
    /// The `a` registers it reads (none for an `a` in shared memory).
    a_regs: Vec<u32>,
    /// (array, element, first thread of the reading warpgroup).
    reads: Vec<(u32, usize, usize)>,
}

/// The program's warpgroup-MMA state (all warpgroups issue in lockstep).
#[derive(Default)]
pub(super) struct WgmmaState {
    /// Every register some `wgmma` accumulates into or reads `a` from.
    acc_regs: HashSet<u32>,
    /// Those registers written by other statements since the last `wgmma_fence`.
    touched: HashSet<u32>,
    /// `a` registers read by in-flight `wgmma`s (with multiplicity).
    a_in_flight: HashMap<u32, u32>,
    /// Issued since the last commit.
    open: Vec<Issued>,
    /// Committed groups not yet complete, oldest first.
    committed: VecDeque<Vec<Issued>>,
    /// The latest value of each accumulator with a result in flight.
    logical: HashMap<u32, Data>,
    /// Shared elements read by in-flight `wgmma`s (with multiplicity).
    in_flight: HashMap<(u32, usize), u32>,
    /// Arrays written by ordinary stores since the last `fence_proxy_async`.
    unfenced: HashSet<u32>,
}

impl WgmmaState {
    /// The state for a kernel whose body is `body`.
    pub(super) fn of(body: &[Stmt]) -> WgmmaState {
        fn walk(b: &[Stmt], out: &mut HashSet<u32>) {
            for s in b {
                if let Stmt::Wgmma { acc, a, .. } = s {
                    out.extend(acc.iter().map(|r| r.0));
                    if let WgmmaA::Regs(regs) = a {
                        out.extend(regs.iter().map(|r| r.0));
                    }
                }
                for inner in s.bodies() {
                    walk(inner, out);
                }
            }
        }
        let mut acc_regs = HashSet::new();
        walk(body, &mut acc_regs);
        WgmmaState {
            acc_regs,
            ..Default::default()
        }
    }

    /// Whether a register read is allowed: not an accumulator awaiting its result.
    pub(super) fn check_read(&self, r: Reg) -> Result<()> {
        if !self.logical.is_empty() && self.logical.contains_key(&r.0) {
            return Err(bug(format!(
                "{r} is read while a wgmma's result into it is in flight (no wgmma_wait)"
            )));
        }
        Ok(())
    }

    /// An ordinary write of register `r`.
    pub(super) fn note_reg_write(&mut self, r: Reg) -> Result<()> {
        if self.acc_regs.is_empty() || !self.acc_regs.contains(&r.0) {
            return Ok(());
        }
        if self.logical.contains_key(&r.0) {
            return Err(bug(format!(
                "{r} is written while a wgmma's result into it is in flight"
            )));
        }
        if self.a_in_flight.contains_key(&r.0) {
            return Err(bug(format!(
                "{r} is written while a wgmma reading it as `a` is in flight"
            )));
        }
        self.touched.insert(r.0);
        Ok(())
    }

    /// A write of element `e` of shared array `arr`: a store (`generic`: `wgmma` sees
    /// it only after a proxy fence) or an asynchronous copy (seen after its wait and a
    /// barrier, as Triton relies on).
    pub(super) fn note_shared_write(&mut self, arr: u32, e: usize, generic: bool) -> Result<()> {
        if self.acc_regs.is_empty() {
            return Ok(());
        }
        if generic {
            self.unfenced.insert(arr);
        }
        if !self.in_flight.is_empty() && self.in_flight.contains_key(&(arr, e)) {
            return Err(bug(format!(
                "element {e} of shared array {arr} is written while a wgmma reading it is in flight"
            )));
        }
        Ok(())
    }
}

impl Sim<'_> {
    /// Runs a warpgroup statement (see the module documentation).
    pub(super) fn wgmma_stmt(&mut self, s: &Stmt, active: &[bool]) -> Result<()> {
        match s {
            Stmt::WgmmaFence => self.wgmma.touched.clear(),
            Stmt::FenceProxyAsync => self.wgmma.unfenced.clear(),
            Stmt::WgmmaCommit => {
                let group = std::mem::take(&mut self.wgmma.open);
                self.wgmma.committed.push_back(group);
            }
            Stmt::WgmmaWait { pending } => {
                if active.iter().any(|a| !a) {
                    return Err(bug("wgmma_wait reached by only part of the program"));
                }
                while self.wgmma.committed.len() > *pending as usize {
                    let group = self.wgmma.committed.pop_front().unwrap_or_default();
                    for issued in group {
                        for (r, v) in issued.results {
                            self.regs[r.0 as usize] = Some(v);
                        }
                        for r in issued.a_regs {
                            if let Some(n) = self.wgmma.a_in_flight.get_mut(&r) {
                                *n -= 1;
                                if *n == 0 {
                                    self.wgmma.a_in_flight.remove(&r);
                                }
                            }
                        }
                        for (arr, e, tid) in issued.reads {
                            // The read ends here, for the warpgroup that waits: a
                            // write by another warpgroup's thread before the next
                            // barrier races with it (each warpgroup waits for its
                            // own groups only).
                            self.races.read(arr, e, tid).map_err(|err| {
                                bug(format!(
                                    "shared-memory race with a wgmma completing at its wait in `{}`: {err}",
                                    self.k.shared[arr as usize].name
                                ))
                            })?;
                            let at = (arr, e);
                            if let Some(n) = self.wgmma.in_flight.get_mut(&at) {
                                *n -= 1;
                                if *n == 0 {
                                    self.wgmma.in_flight.remove(&at);
                                }
                            }
                        }
                    }
                }
                // Accumulators still awaited keep their latest value in flight.
                let mut still: HashSet<u32> = HashSet::new();
                for issued in self
                    .wgmma
                    .committed
                    .iter()
                    .flatten()
                    .chain(&self.wgmma.open)
                {
                    still.extend(issued.results.iter().map(|(r, _)| r.0));
                }
                self.wgmma.logical.retain(|r, _| still.contains(r));
            }
            Stmt::Wgmma {
                shape,
                acc,
                a,
                b,
                zero_acc,
            } => {
                if active.iter().any(|a| !a) || !self.t.is_multiple_of(128) {
                    return Err(bug(
                        "wgmma reached by only part of a warpgroup (or the program is not whole warpgroups)",
                    ));
                }
                let zero = match zero_acc {
                    Some(z) => {
                        let v = ints(self.reg(*z)?)?;
                        if v.iter().any(|x| *x != v[0]) {
                            return Err(bug("wgmma's zero_acc differs within the program"));
                        }
                        v[0] != 0
                    }
                    None => false,
                };
                self.wgmma(*shape, acc, a, b, zero)?;
            }
            _ => return Err(bug("not a warpgroup statement")),
        }
        Ok(())
    }

    /// The `rows x cols` matrix operand `m` describes for warpgroup `g`, element
    /// `(i, j)` at `i * cols + j`, with the shared elements read; `mn_of` gives the
    /// `(mn, k)` coordinates of `(i, j)`.
    fn wgmma_operand(
        &mut self,
        m: &SmemMatrix,
        g: usize,
        (rows, cols): (u32, u32),
        mn_of: impl Fn(u32, u32) -> (u32, u32),
        input: DType,
        reads: &mut Vec<(u32, usize, usize)>,
    ) -> Result<Vec<f64>> {
        let arr = &self.k.shared[m.arr as usize];
        if arr.dtype != input {
            return Err(bug(format!(
                "wgmma reads `{}` of {} as {input}",
                arr.name, arr.dtype
            )));
        }
        if m.swizzle != 0 && arr.align < 8 * m.swizzle {
            return Err(bug(format!(
                "wgmma operand `{}` is aligned to {} bytes, its {}-byte swizzle repeats every {}",
                arr.name,
                arr.align,
                m.swizzle,
                8 * m.swizzle
            )));
        }
        if self.wgmma.unfenced.contains(&m.arr) {
            return Err(bug(format!(
                "wgmma reads `{}`, written since the last fence_proxy_async",
                arr.name
            )));
        }
        let base = ints(self.reg(m.base)?)?.to_vec();
        let first = base[128 * g];
        if base[128 * g..128 * (g + 1)].iter().any(|&x| x != first) {
            return Err(bug("wgmma descriptor base differs within a warpgroup"));
        }
        let elem = input.size_bytes() as u32;
        let start = (first + m.offset as i64) * elem as i64;
        if start < 0 || start % 16 != 0 {
            return Err(bug(format!(
                "wgmma matrix start {start} bytes into `{}`: negative or not 16-byte aligned",
                arr.name
            )));
        }
        let len = self.shared[m.arr as usize].len();
        let tid = 128 * g;
        let mut out = vec![0f64; (rows * cols) as usize];
        for i in 0..rows {
            for j in 0..cols {
                let (mn, k) = mn_of(i, j);
                let byte = m.byte_offset(start as u32, mn, k, elem);
                let e = (byte / elem) as usize;
                if e >= len {
                    return Err(bug(format!(
                        "wgmma reads byte {byte} of `{}` ({len} elements)",
                        self.k.shared[m.arr as usize].name
                    )));
                }
                self.races.read(m.arr, e, tid).map_err(|err| {
                    bug(format!(
                        "shared-memory race in a wgmma reading `{}`: {err}",
                        self.k.shared[m.arr as usize].name
                    ))
                })?;
                let v = match &self.shared[m.arr as usize] {
                    Data::F(v) => v[e],
                    Data::I(_) => return Err(bug("wgmma operand of integers")),
                };
                out[(i * cols + j) as usize] = v;
                reads.push((m.arr, e, tid));
            }
        }
        Ok(out)
    }

    /// The `64 x k` matrix `a` registers `regs` hold in warpgroup `g` (element `(i, j)`
    /// at `i * k + j`), in [`WgmmaShape::a_coord`]'s layout.
    fn wgmma_register_operand(
        &mut self,
        shape: WgmmaShape,
        regs: &[Reg],
        g: usize,
    ) -> Result<Vec<f64>> {
        if regs.len() != shape.a_regs() as usize || shape.input != DType::F32 {
            return Err(bug(
                "wgmma with `a` in registers: only tf32, four registers",
            ));
        }
        if let Some(r) = regs.iter().find(|r| self.wgmma.touched.contains(&r.0)) {
            return Err(bug(format!(
                "wgmma reads `a` from {r}, written since the last wgmma_fence"
            )));
        }
        let k = shape.k();
        let mut out = vec![f64::NAN; (WgmmaShape::M * k) as usize];
        for (i, r) in regs.iter().enumerate() {
            let v = match self.reg(*r)? {
                Data::F(v) => v.clone(),
                Data::I(_) => return Err(bug("wgmma `a` register holds integers")),
            };
            for t in 0..128u32 {
                let (row, col) = shape.a_coord(t, i as u32);
                out[(row * k + col) as usize] = v[128 * g + t as usize];
            }
        }
        Ok(out)
    }

    fn wgmma(
        &mut self,
        shape: WgmmaShape,
        acc: &[Reg],
        a: &WgmmaA,
        b: &SmemMatrix,
        zero: bool,
    ) -> Result<()> {
        if acc.len() != shape.regs() as usize {
            return Err(bug("wgmma with the wrong number of accumulators"));
        }
        if let Some(r) = acc.iter().find(|r| self.wgmma.touched.contains(&r.0)) {
            return Err(bug(format!(
                "wgmma accumulates into {r}, written by another statement since the last wgmma_fence"
            )));
        }
        let (m, n, k) = (WgmmaShape::M, shape.n, shape.k());
        // The accumulators' current values (the latest result in flight, else the
        // register; zero where `zero_acc` holds, whatever the registers hold).
        let mut cur: Vec<Vec<f64>> = vec![];
        for r in acc {
            if zero {
                cur.push(vec![0.0; self.t]);
                continue;
            }
            let d = match self.wgmma.logical.get(&r.0) {
                Some(d) => d,
                None => self.reg(*r)?,
            };
            match d {
                Data::F(v) => cur.push(v.clone()),
                Data::I(_) => return Err(bug("wgmma accumulator holds integers")),
            }
        }
        let mut reads = vec![];
        for g in 0..self.t / 128 {
            // `a` is m x k (row i of M, column j of K); `b` is k x n.
            let mut am = match a {
                WgmmaA::Shared(a) => {
                    self.wgmma_operand(a, g, (m, k), |i, j| (i, j), shape.input, &mut reads)?
                }
                WgmmaA::Regs(regs) => self.wgmma_register_operand(shape, regs, g)?,
            };
            let mut bm =
                self.wgmma_operand(b, g, (k, n), |i, j| (j, i), shape.input, &mut reads)?;
            // The tensor core reads tf32 inputs' top 19 bits.
            if shape.input == DType::F32 {
                for x in am.iter_mut().chain(bm.iter_mut()) {
                    *x = f32::from_bits((*x as f32).to_bits() & 0xffff_e000) as f64;
                }
            }
            for t in 0..128u32 {
                let th = 128 * g + t as usize;
                for (i, v) in cur.iter_mut().enumerate() {
                    let (r, c) = shape.acc_coord(t, i as u32);
                    let dot: f64 = (0..k)
                        .map(|x| am[(r * k + x) as usize] * bm[(x * n + c) as usize])
                        .sum();
                    v[th] = round1(DType::F32, dot + v[th]);
                }
            }
        }
        let mut results = vec![];
        for (r, v) in acc.iter().zip(cur) {
            let d = Data::F(v);
            self.wgmma.logical.insert(r.0, d.clone());
            results.push((*r, d));
        }
        for &(arr, e, _) in &reads {
            *self.wgmma.in_flight.entry((arr, e)).or_insert(0) += 1;
        }
        let a_regs: Vec<u32> = match a {
            WgmmaA::Regs(regs) => regs.iter().map(|r| r.0).collect(),
            WgmmaA::Shared(_) => vec![],
        };
        for r in &a_regs {
            *self.wgmma.a_in_flight.entry(*r).or_insert(0) += 1;
        }
        self.wgmma.open.push(Issued {
            results,
            a_regs,
            reads,
        });
        Ok(())
    }
}
