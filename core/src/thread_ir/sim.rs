//! A CPU simulator of the Thread IR: runs a lowered kernel thread by thread, in
//! lockstep, so the shared lowering can be checked against the interpreter without a
//! GPU (in CI, on every kernel the tests run).
//!
//! Every register holds one value per thread (a `threads`-long vector, reusing the
//! interpreter's representation and arithmetic). Statements run for all active
//! threads before the next one starts; an `If` on a per-thread condition narrows the
//! active set. A barrier reached by only part of the program is reported as a lowering
//! bug, as are reads of unassigned registers, out-of-bounds accesses and races on shared
//! memory between two barriers (see [`Races`]), which lockstep execution would
//! otherwise hide. Asynchronous copies land when their group is waited for, TMA copies
//! when their barrier's phase is (`sim/tma.rs`); until then their destinations hold
//! poison.

mod coop;
mod tma;
mod wgmma;

use super::{Expr, MmaKind, ParamKind, Reg, Special, Stmt, ThreadKernel, BYTE_ADDRESS, FLAT};
use crate::diag::{Diagnostic, ErrorKind, Result};
use crate::interp::arith;
use crate::interp::memory::{gather_into, scatter_from};
use crate::interp::schedule::{self, Baton, Handle};
use crate::interp::value::Data;
use crate::interp::{HostBuffer, RtArg};
use crate::ir::{AtomicOp, BinaryOp, Const, DType};
use crate::launch::{Grid, ScalarValue};

/// Runs `k` over `grid`; `args[i]` feeds parameter `i`.
pub fn simulate(
    k: &ThreadKernel,
    grid: Grid,
    args: &[RtArg],
    buffers: &mut [HostBuffer],
) -> Result<()> {
    let filled = tma::with_tensor_map_slots(&k.params, args);
    let args = filled.as_deref().unwrap_or(args);
    if args.len() != k.params.len() {
        return Err(Diagnostic::new(
            ErrorKind::Launch,
            format!("{} arguments for {} parameters", args.len(), k.params.len()),
        ));
    }
    if grid.total() == 0 {
        return Ok(());
    }
    let limit = schedule::step_limit();
    let baton = Baton {
        bufs: buffers,
        writes: 0,
        reads: 0,
        steps: 0,
    };
    if !has_while(&k.body) {
        let mut baton = baton;
        for i in 0..grid.total() {
            let (b, r) = run_program(k, grid, args, limit, grid.pid(i), baton, None);
            r?;
            baton = b;
        }
        return Ok(());
    }
    let deadlock = |span: crate::diag::Span, stuck: &[[u32; 3]]| {
        let progs: Vec<String> = stuck
            .iter()
            .map(|p| format!("({}, {}, {})", p[0], p[1], p[2]))
            .collect();
        let line = k
            .source
            .as_ref()
            .map(|src| format!(" at line {}", src.line_col(span.start).0))
            .unwrap_or_default();
        let d = Diagnostic::new(
            ErrorKind::Runtime,
            format!(
                "no program can progress in kernel `{}`: program{} {} wait{} in the loop{line} for memory that no other program will change",
                k.name,
                if progs.len() == 1 { "" } else { "s" },
                progs.join(", "),
                if progs.len() == 1 { "s" } else { "" },
            ),
        )
        .with_note("every other program has finished or waits too (a lock never released, a flag never set)");
        match &k.source {
            Some(src) => d.at(span, "waiting here").with_source(src),
            None => d,
        }
    };
    schedule::run_interleaved(
        grid,
        baton,
        |pid, b, h| run_program(k, grid, args, limit, pid, b, Some(h)),
        &deadlock,
    )
}

/// Whether a body has a `While` (then programs may wait for each other).
fn has_while(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::While { .. } => true,
        Stmt::If {
            then_body,
            else_body,
            ..
        } => has_while(then_body) || has_while(else_body),
        Stmt::For { body, .. } => has_while(body),
        _ => false,
    })
}

/// Runs one program with the launch's memory in `baton`; returns the memory.
fn run_program<'a>(
    k: &'a ThreadKernel,
    grid: Grid,
    args: &'a [RtArg],
    step_limit: Option<u64>,
    pid: [u32; 3],
    baton: Baton<'a>,
    handle: Option<Handle<'a>>,
) -> (Baton<'a>, Result<()>) {
    let t = k.threads as usize;
    let mut s = Sim {
        k,
        t,
        pid,
        grid: grid.0,
        args,
        buffers: baton.bufs,
        regs: vec![None; k.regs.len()],
        frags: vec![None; k.frags.len()],
        branch_depth: 0,
        shared: k
            .shared
            .iter()
            .map(|a| Data::zeros(a.dtype, a.len as usize))
            .collect(),
        lanes_of_expr_dst: 1,
        copies_open: vec![],
        copies_committed: Default::default(),
        wgmma: wgmma::WgmmaState::of(&k.body),
        mbarriers: Default::default(),
        races: Races::of(k),
        overlay_peers: overlay_peers(k),
        writes: baton.writes,
        reads: baton.reads,
        steps: baton.steps,
        step_limit,
        handle,
    };
    let r = s.run(&k.body, &vec![true; t]);
    let back = Baton {
        bufs: std::mem::take(&mut s.buffers),
        writes: s.writes,
        reads: s.reads,
        steps: s.steps,
    };
    (back, r)
}

struct Sim<'a> {
    k: &'a ThreadKernel,
    t: usize,
    pid: [u32; 3],
    grid: [u32; 3],
    args: &'a [RtArg],
    buffers: &'a mut [HostBuffer],
    regs: Vec<Option<Data>>,
    /// Each fragment variable's value in every subgroup (`size * size`, row-major).
    frags: Vec<Option<Vec<Vec<f64>>>>,
    /// `If`s around the statement running (cooperative-matrix statements stay out).
    branch_depth: u32,
    shared: Vec<Data>,
    /// Lanes of the register the expression being evaluated is assigned to.
    lanes_of_expr_dst: u8,
    /// Asynchronous copies issued since the last commit: (array, element, value,
    /// issuing thread).
    copies_open: Vec<PendingCopy>,
    /// Committed groups of asynchronous copies not yet waited for, oldest first. The
    /// program's threads issue, commit and wait together (lockstep), so one queue
    /// serves them all.
    copies_committed: std::collections::VecDeque<Vec<PendingCopy>>,
    /// Warpgroup MMAs in flight and the fences they need (`sim/wgmma.rs`).
    wgmma: wgmma::WgmmaState,
    /// Transaction barriers and the TMA copies pending on them (`sim/tma.rs`).
    mbarriers: tma::MbarrierState,
    races: Races,
    /// Per shared array, the others sharing its memory ([`SharedArray::overlays`]):
    /// a write to one poisons what it covers of the others.
    overlay_peers: Vec<Vec<u32>>,
    /// Global writes that changed memory, global reads, loop iterations (all programs;
    /// see `interp::schedule`).
    writes: u64,
    reads: u64,
    steps: u64,
    step_limit: Option<u64>,
    /// The scheduler, when programs are interleaved (the kernel has a `While`).
    handle: Option<Handle<'a>>,
}

/// An asynchronous copy's element: (array, element, value, issuing thread).
type PendingCopy = (u32, usize, Data, usize);

/// No thread.
const NONE: u32 = u32::MAX;
/// Several threads.
const MANY: u32 = u32::MAX - 1;

/// Who touched a shared element in the current barrier interval.
#[derive(Clone, Copy)]
struct Touch {
    /// The interval the writer and reader fields describe.
    epoch: u32,
    writer: u32,
    reader: u32,
    /// The thread whose asynchronous copy into the element is in flight.
    pending: u32,
}

impl Default for Touch {
    fn default() -> Self {
        Touch {
            epoch: u32::MAX,
            writer: NONE,
            reader: NONE,
            pending: NONE,
        }
    }
}

/// Race detection over shared memory: lockstep execution runs every thread's access
/// of a statement before the next statement, which hides orderings a GPU may take.
/// Between two barriers an element written (to a new value) by one thread and read
/// or written by another is a race; so is any access to the destination of an
/// asynchronous copy in flight, and such a copy issued over an element another thread
/// read in the same interval.
/// Arrays that overlay one another ([`SharedArray::overlays`]) are tracked together,
/// in granules of their smallest element, so that an access through one races with
/// accesses through the others to the same bytes.
struct Races {
    epoch: u32,
    /// Per array that overlays none: its memory's granules.
    touch: Vec<Vec<Touch>>,
    /// Per array: the array whose granules it uses, and granules per element.
    place: Vec<(u32, u32)>,
}

/// The arrays sharing memory with each shared array of `k`.
fn overlay_peers(k: &ThreadKernel) -> Vec<Vec<u32>> {
    let root = |i: usize| k.shared[i].overlays.unwrap_or(i as u32);
    (0..k.shared.len())
        .map(|i| {
            (0..k.shared.len())
                .filter(|&j| j != i && root(j) == root(i))
                .map(|j| j as u32)
                .collect()
        })
        .collect()
}

impl Races {
    fn of(k: &ThreadKernel) -> Races {
        let n = k.shared.len();
        let root = |i: usize| k.shared[i].overlays.unwrap_or(i as u32) as usize;
        let size = |i: usize| k.shared[i].dtype.size_bytes();
        // The smallest element of each memory, and its length in those granules.
        let mut granule = vec![usize::MAX; n];
        for i in 0..n {
            granule[root(i)] = granule[root(i)].min(size(i));
        }
        let mut len = vec![0usize; n];
        for i in 0..n {
            let g = granule[root(i)];
            len[root(i)] = len[root(i)].max((k.shared[i].len as usize * size(i)).div_ceil(g));
        }
        Races {
            epoch: 0,
            touch: len.iter().map(|&l| vec![Touch::default(); l]).collect(),
            place: (0..n)
                .map(|i| (root(i) as u32, (size(i) / granule[root(i)]) as u32))
                .collect(),
        }
    }

    /// The granules of element `e` of `arr`: its memory and their range.
    fn granules(&self, arr: u32, e: usize) -> (usize, std::ops::Range<usize>) {
        let (root, per) = self.place[arr as usize];
        let per = per as usize;
        (root as usize, e * per..(e + 1) * per)
    }

    fn at(&mut self, root: usize, g: usize) -> &mut Touch {
        let epoch = self.epoch;
        let t = &mut self.touch[root][g];
        if t.epoch != epoch {
            *t = Touch {
                epoch,
                pending: t.pending,
                ..Touch::default()
            };
        }
        t
    }

    /// Element `e` of `arr` no longer has a copy in flight (the asynchronous proxy
    /// wrote it).
    fn landed(&mut self, arr: u32, e: usize) {
        let (root, gs) = self.granules(arr, e);
        for g in gs {
            self.at(root, g).pending = NONE;
        }
    }

    fn read(&mut self, arr: u32, e: usize, tid: usize) -> std::result::Result<(), String> {
        self.each(arr, e, |t| t.read(e, tid as u32))
    }

    /// A write that changes the element's value.
    fn write(&mut self, arr: u32, e: usize, tid: usize) -> std::result::Result<(), String> {
        self.each(arr, e, |t| t.write(e, tid as u32))
    }

    fn issue(&mut self, arr: u32, e: usize, tid: usize) -> std::result::Result<(), String> {
        self.each(arr, e, |t| t.issue(e, tid as u32))
    }

    fn land(&mut self, arr: u32, e: usize, tid: usize) -> std::result::Result<(), String> {
        self.landed(arr, e);
        self.write(arr, e, tid)
    }

    /// `f` on each granule of element `e` of `arr`.
    fn each(
        &mut self,
        arr: u32,
        e: usize,
        mut f: impl FnMut(&mut Touch) -> std::result::Result<(), String>,
    ) -> std::result::Result<(), String> {
        let (root, gs) = self.granules(arr, e);
        gs.into_iter().try_for_each(|g| f(self.at(root, g)))
    }
}

/// The race rules on one granule, touched for element `e` by thread `tid`.
impl Touch {
    fn read(&mut self, e: usize, tid: u32) -> std::result::Result<(), String> {
        if self.pending != NONE {
            return Err(format!(
                "thread {tid} reads element {e} while thread {}'s asynchronous copy into it is in flight",
                self.pending
            ));
        }
        if self.writer != NONE && self.writer != tid {
            return Err(format!(
                "thread {tid} reads element {e} that thread {} wrote since the last barrier",
                self.writer
            ));
        }
        self.reader = match self.reader {
            NONE => tid,
            r if r == tid => tid,
            _ => MANY,
        };
        Ok(())
    }

    fn write(&mut self, e: usize, tid: u32) -> std::result::Result<(), String> {
        if self.pending != NONE && self.pending != tid {
            return Err(format!(
                "thread {tid} writes element {e} while thread {}'s asynchronous copy into it is in flight",
                self.pending
            ));
        }
        if self.writer != NONE && self.writer != tid {
            return Err(format!(
                "threads {} and {tid} write different values to element {e} between two barriers",
                self.writer
            ));
        }
        if self.reader != NONE && self.reader != tid {
            return Err(format!(
                "thread {tid} writes element {e} that another thread read since the last barrier"
            ));
        }
        self.writer = tid;
        Ok(())
    }

    fn issue(&mut self, e: usize, tid: u32) -> std::result::Result<(), String> {
        if self.pending != NONE {
            return Err(format!(
                "thread {tid} copies into element {e} while thread {}'s copy into it is in flight",
                self.pending
            ));
        }
        if self.reader != NONE && self.reader != tid {
            return Err(format!(
                "thread {tid} copies into element {e} that another thread read since the last barrier"
            ));
        }
        self.pending = tid;
        Ok(())
    }
}

/// Whether element `i` of `a` and element `j` of `b` hold the same bits.
fn same1(a: &Data, i: usize, b: &Data, j: usize) -> bool {
    match (a, b) {
        (Data::F(x), Data::F(y)) => x[i].to_bits() == y[j].to_bits(),
        (Data::I(x), Data::I(y)) => x[i] == y[j],
        _ => false,
    }
}

/// What an asynchronous copy's destination holds until the copy is waited for: reading
/// it earlier is a lowering bug the results show.
fn poison(dt: DType) -> Data {
    if dt.is_float() {
        Data::F(vec![f64::NAN])
    } else {
        Data::I(vec![0x5eed])
    }
}

fn bug(msg: impl Into<String>) -> Diagnostic {
    Diagnostic::internal(format!("Thread IR simulator: {}", msg.into()))
}

fn splat_i(v: i64, n: usize) -> Data {
    Data::I(vec![v; n])
}

fn get1(d: &Data, i: usize) -> Data {
    match d {
        Data::F(v) => Data::F(vec![v[i]]),
        Data::I(v) => Data::I(vec![v[i]]),
    }
}

fn set1(d: &mut Data, i: usize, x: &Data) {
    match (d, x) {
        (Data::F(v), Data::F(x)) => v[i] = x[0],
        (Data::I(v), Data::I(x)) => v[i] = x[0],
        _ => {}
    }
}

fn ints(d: &Data) -> Result<&[i64]> {
    match d {
        Data::I(v) => Ok(v),
        Data::F(_) => Err(bug("integer register holds floats")),
    }
}

impl Sim<'_> {
    /// Element `e` of shared array `arr` was written: what it covers of the arrays
    /// overlaying the same memory no longer holds their values.
    fn overlay_written(&mut self, arr: u32, e: usize) {
        if self.overlay_peers[arr as usize].is_empty() {
            return;
        }
        let size = self.k.shared[arr as usize].dtype.size_bytes();
        let (from, to) = (e * size, (e + 1) * size);
        for &p in &self.overlay_peers[arr as usize] {
            let pdt = self.k.shared[p as usize].dtype;
            let ps = pdt.size_bytes();
            let a = &mut self.shared[p as usize];
            for j in from / ps..to.div_ceil(ps).min(a.len()) {
                set1(a, j, &poison(pdt));
            }
        }
    }

    /// Reads one element of a global buffer.
    fn load_global(&mut self, b: usize, dt: DType, e: usize, out: &mut Data) {
        self.reads += 1;
        gather_into(&self.buffers[b].bytes, dt, &[e], out);
    }

    /// Writes one element of a global buffer, counting writes that change it.
    fn store_global(&mut self, b: usize, dt: DType, e: usize, v: &Data) {
        let w = dt.size_bytes();
        let bytes = &mut self.buffers[b].bytes;
        let before: Vec<u8> = bytes[e * w..e * w + w].to_vec();
        scatter_from(bytes, dt, &[e], v);
        if bytes[e * w..e * w + w] != before[..] {
            self.writes += 1;
        }
    }

    /// Counts a loop iteration against `TILEWISE_STEP_LIMIT`.
    fn step(&mut self) -> Result<()> {
        self.steps += 1;
        match self.step_limit {
            Some(limit) if self.steps > limit => Err(Diagnostic::new(
                ErrorKind::Runtime,
                format!(
                    "step limit reached in kernel `{}`, program ({}, {}, {}): the launch ran more than {limit} loop iterations (TILEWISE_STEP_LIMIT)",
                    self.k.name, self.pid[0], self.pid[1], self.pid[2]
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Hands the memory to the scheduler until another program has changed it.
    fn wait_for_others(&mut self, loop_span: crate::diag::Span) -> Result<()> {
        let Some(handle) = &self.handle else {
            return Ok(());
        };
        let baton = Baton {
            bufs: std::mem::take(&mut self.buffers),
            writes: self.writes,
            reads: self.reads,
            steps: self.steps,
        };
        match handle.wait(baton, loop_span) {
            Some(b) => {
                self.buffers = b.bufs;
                self.writes = b.writes;
                self.reads = b.reads;
                self.steps = b.steps;
                Ok(())
            }
            None => Err(Diagnostic::new(
                ErrorKind::Runtime,
                "the launch stopped while this program waited",
            )),
        }
    }

    fn reg(&self, r: Reg) -> Result<&Data> {
        self.wgmma.check_read(r)?;
        self.regs
            .get(r.0 as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| bug(format!("{r} read before assignment")))
    }

    fn dt(&self, r: Reg) -> DType {
        self.k.reg_ty(r).dtype
    }

    /// Writes `val` (lane `l` of thread `i` at `i * lanes + l`) for the active threads.
    fn write(&mut self, dst: Reg, val: Data, active: &[bool]) {
        let lanes = self.k.reg_ty(dst).lanes as usize;
        let slot = &mut self.regs[dst.0 as usize];
        match slot {
            None => *slot = Some(val),
            Some(old) => {
                for (i, a) in active.iter().enumerate() {
                    if *a {
                        for l in 0..lanes {
                            let j = i * lanes + l;
                            set1(old, j, &get1(&val, j));
                        }
                    }
                }
            }
        }
    }

    /// `d = a @ b + c` for every warp, from the lanes' fragments (see `MmaKind`).
    fn mma(&mut self, kind: MmaKind, d: &[Reg], a: &[Reg], b: &[Reg], c: &[Reg]) -> Result<()> {
        let (m, n, k) = kind.shape();
        let (m, n, k) = (m as usize, n as usize, k as usize);
        let pack = kind.pack() as usize;
        if !self.t.is_multiple_of(32) {
            return Err(bug("mma in a program that is not whole warps"));
        }
        let floats = |s: &Self, r: Reg| -> Result<Vec<f64>> {
            match s.reg(r)? {
                Data::F(v) => Ok(v.clone()),
                Data::I(_) => Err(bug("mma operand holds integers")),
            }
        };
        let (av, bv, cv): (Vec<_>, Vec<_>, Vec<_>) = (
            a.iter().map(|&r| floats(self, r)).collect::<Result<_>>()?,
            b.iter().map(|&r| floats(self, r)).collect::<Result<_>>()?,
            c.iter().map(|&r| floats(self, r)).collect::<Result<_>>()?,
        );
        // The tensor core reads tf32 inputs' top 19 bits.
        let input = |x: f64| -> f64 {
            if kind == MmaKind::Tf32M16N8K8 {
                f32::from_bits((x as f32).to_bits() & 0xffff_e000) as f64
            } else {
                x
            }
        };
        let mut out = vec![vec![0f64; self.t]; d.len()];
        for w in 0..self.t / 32 {
            let (mut am, mut bm, mut cm) =
                (vec![0f64; m * k], vec![0f64; k * n], vec![0f64; m * n]);
            for lane in 0..32u32 {
                let th = w * 32 + lane as usize;
                for (i, v) in av.iter().enumerate() {
                    for e in 0..pack {
                        let (r, col) = kind.a_coord(lane, i as u32, e as u32);
                        am[r as usize * k + col as usize] = input(v[th * pack + e]);
                    }
                }
                for (i, v) in bv.iter().enumerate() {
                    for e in 0..pack {
                        let (r, col) = kind.b_coord(lane, i as u32, e as u32);
                        bm[r as usize * n + col as usize] = input(v[th * pack + e]);
                    }
                }
                for (i, v) in cv.iter().enumerate() {
                    let (r, col) = kind.c_coord(lane, i as u32);
                    cm[r as usize * n + col as usize] = v[th];
                }
            }
            for lane in 0..32u32 {
                let th = w * 32 + lane as usize;
                for (i, o) in out.iter_mut().enumerate() {
                    let (r, col) = kind.c_coord(lane, i as u32);
                    let (r, col) = (r as usize, col as usize);
                    let dot: f64 = (0..k).map(|x| am[r * k + x] * bm[x * n + col]).sum();
                    o[th] = crate::interp::value::round1(DType::F32, dot + cm[r * n + col]);
                }
            }
        }
        for (r, v) in d.iter().zip(out) {
            self.regs[r.0 as usize] = Some(Data::F(v));
        }
        Ok(())
    }

    fn uniform(&self, r: Reg, active: &[bool]) -> Result<i64> {
        let v = ints(self.reg(r)?)?;
        let mut it = active.iter().zip(v).filter(|(a, _)| **a).map(|(_, x)| *x);
        let first = it.next().unwrap_or(0);
        if it.any(|x| x != first) {
            return Err(bug(format!("{r} should be uniform across the program")));
        }
        Ok(first)
    }

    /// The buffer view of parameter `p` and the absolute element index of `i`; for
    /// [`FLAT`], element `i` of `access` elements from address 0 (`crate::address`).
    fn element(&self, p: u32, i: i64, access: DType) -> Result<(usize, usize, DType)> {
        if p == FLAT {
            return self.flat_element(i, access);
        }
        let dtype = match self.k.params.get(p as usize).map(|x| &x.kind) {
            Some(ParamKind::Buffer { dtype, .. }) => *dtype,
            _ => return Err(bug(format!("parameter {p} is not a buffer"))),
        };
        match self.args.get(p as usize) {
            Some(RtArg::Buffer {
                buffer,
                offset,
                len,
            }) => {
                if i < 0 || i as usize >= *len {
                    return Err(Diagnostic::new(
                        ErrorKind::Runtime,
                        format!(
                            "out-of-bounds access in kernel `{}` (lowered), program {:?}: element index {i} of a buffer of {len} elements (argument `{}`)",
                            self.k.name, self.pid, self.k.params[p as usize].name
                        ),
                    ));
                }
                Ok((*buffer, offset + i as usize, dtype))
            }
            _ => Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("argument {p} is not a buffer"),
            )),
        }
    }

    /// An access's `(buf, index)` with a [`BYTE_ADDRESS`] made a [`FLAT`] element index
    /// of `access` elements (a byte address that is not a multiple of the element's
    /// size is an error, as on the GPU); other accesses as they are.
    fn in_elements(&self, buf: u32, i: i64, access: DType) -> Result<(u32, i64)> {
        if buf != BYTE_ADDRESS {
            return Ok((buf, i));
        }
        let size = access.size_bytes() as i64;
        if i.rem_euclid(size) != 0 {
            return Err(Diagnostic::new(
                ErrorKind::Runtime,
                format!(
                    "misaligned access in kernel `{}` (lowered), program {:?}: address {i:#x} of a {access}",
                    self.k.name, self.pid
                ),
            ));
        }
        Ok((FLAT, i.div_euclid(size)))
    }

    /// The host buffer and element index of the access to `access` element `i` of the
    /// flat address space: an address outside every buffer is an error, as the
    /// interpreter's.
    fn flat_element(&self, i: i64, access: DType) -> Result<(usize, usize, DType)> {
        let size = access.size_bytes() as u64;
        let address = (i as u64).wrapping_mul(size);
        match crate::address::decode(address) {
            Some((b, byte)) if b < self.buffers.len() && byte + size <= self.buffers[b].bytes.len() as u64 => {
                Ok((b, (byte / size) as usize, access))
            }
            _ => Err(Diagnostic::new(
                ErrorKind::Runtime,
                format!(
                    "out-of-bounds access in kernel `{}` (lowered), program {:?}: address {address:#x} ({access}) is in no buffer of this launch",
                    self.k.name, self.pid
                ),
            )),
        }
    }

    fn eval(&mut self, dt: DType, e: &Expr, active: &[bool]) -> Result<Data> {
        let t = self.t;
        Ok(match e {
            Expr::Const(c) => match (c, dt.is_float()) {
                (Const::Float(f), true) => Data::F(vec![crate::interp::value::round1(dt, *f); t]),
                (Const::Int(i), true) => Data::F(vec![*i as f64; t]),
                (Const::Bool(b), _) => splat_i(*b as i64, t),
                (Const::Int(i), false) => splat_i(crate::interp::value::wrap1(dt, *i), t),
                (Const::Float(f), false) => splat_i(*f as i64, t),
            },
            Expr::Special(Special::ThreadId) => Data::I((0..t as i64).collect()),
            Expr::Special(Special::ProgramId(a)) => splat_i(self.pid[*a as usize] as i64, t),
            Expr::Special(Special::NumPrograms(a)) => splat_i(self.grid[*a as usize] as i64, t),
            Expr::Special(Special::SubgroupId) => Data::I(
                (0..t)
                    .map(|i| (self.subgroup_slot(i) / 32) as i64)
                    .collect(),
            ),
            Expr::Special(Special::SubgroupInvocationId) => Data::I(
                (0..t)
                    .map(|i| (self.subgroup_slot(i) % 32) as i64)
                    .collect(),
            ),
            Expr::SubgroupReduce { op, value } => self.subgroup_reduce(*op, *value, dt, active)?,
            Expr::Param(p) => match self.args.get(*p as usize) {
                Some(RtArg::Scalar(ScalarValue::Int(_, v))) => {
                    splat_i(crate::interp::value::wrap1(dt, *v), t)
                }
                Some(RtArg::Scalar(ScalarValue::Bool(b))) => splat_i(*b as i64, t),
                Some(RtArg::Scalar(ScalarValue::Float(_, f))) => {
                    Data::F(vec![crate::interp::value::round1(dt, *f); t])
                }
                _ => return Err(bug(format!("parameter {p} is not a scalar"))),
            },
            Expr::Address(p) => {
                let size = match self.k.params.get(*p as usize).map(|x| &x.kind) {
                    Some(ParamKind::Buffer { dtype, .. }) => dtype.size_bytes() as u64,
                    _ => return Err(bug(format!("address of parameter {p}, not a buffer"))),
                };
                match self.args.get(*p as usize) {
                    Some(RtArg::Buffer { buffer, offset, .. }) => splat_i(
                        crate::address::encode(*buffer, *offset as u64 * size) as i64,
                        t,
                    ),
                    _ => return Err(bug(format!("parameter {p} is not bound to a buffer"))),
                }
            }
            Expr::Copy(r) => self.reg(*r)?.clone(),
            Expr::WarpUniform(r) => {
                // The lowering's claim, checked: one value in each warp's active
                // threads.
                let v = self.reg(*r)?.clone();
                for i in (0..t).filter(|&i| active[i]) {
                    let first = (i & !31..(i | 31).min(t - 1) + 1).find(|&j| active[j]);
                    let bits = |j: usize| match &v {
                        Data::F(x) => x[j].to_bits() as i64,
                        Data::I(x) => x[j],
                    };
                    if first.is_some_and(|j| bits(j) != bits(i)) {
                        return Err(bug(format!(
                            "{r} differs between threads {} and {i} of one warp, though marked warp-uniform",
                            first.unwrap_or(i)
                        )));
                    }
                }
                v
            }
            Expr::Unary(op, r) => arith::unary(*op, dt, self.reg(*r)?).map_err(bug)?,
            Expr::Binary(op, a, b) => {
                arith::binary(*op, self.dt(*a), self.reg(*a)?, self.reg(*b)?).map_err(bug)?
            }
            Expr::Cmp(p, a, b) => {
                arith::cmp(*p, self.dt(*a), self.reg(*a)?, self.reg(*b)?).map_err(bug)?
            }
            Expr::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = ints(self.reg(*cond)?)?.to_vec();
                match (self.reg(*on_true)?, self.reg(*on_false)?) {
                    (Data::F(a), Data::F(b)) => Data::F(arith::select(&c, a, b)),
                    (Data::I(a), Data::I(b)) => Data::I(arith::select(&c, a, b)),
                    _ => return Err(bug("select of mixed representations")),
                }
            }
            Expr::Fma(a, b, c) => {
                arith::fma(dt, self.reg(*a)?, self.reg(*b)?, self.reg(*c)?).map_err(bug)?
            }
            Expr::Cast { value, bitcast } => {
                arith::cast(self.dt(*value), dt, self.reg(*value)?, *bitcast).map_err(bug)?
            }
            Expr::Load {
                buf,
                index,
                mask,
                other,
            } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let m = match mask {
                    Some(m) => Some(ints(self.reg(*m)?)?.to_vec()),
                    None => None,
                };
                let lanes = self.lanes_of_expr_dst.max(1) as usize;
                let mut out = Data::zeros(dt, t * lanes);
                if let Some(o) = other {
                    let o = self.reg(*o)?.clone();
                    for i in 0..t {
                        for l in 0..lanes {
                            set1(&mut out, i * lanes + l, &get1(&o, i));
                        }
                    }
                }
                for i in 0..t {
                    if !active[i] || m.as_ref().is_some_and(|m| m[i] == 0) {
                        continue;
                    }
                    let (buf, ix) = self.in_elements(*buf, idx[i], dt)?;
                    if lanes > 1 && ix % lanes as i64 != 0 {
                        return Err(bug(format!("misaligned {lanes}-wide load at {ix}")));
                    }
                    for l in 0..lanes {
                        let (b, e, bdt) = self.element(buf, ix + l as i64, dt)?;
                        let mut one = Data::zeros(bdt, 1);
                        self.load_global(b, bdt, e, &mut one);
                        set1(&mut out, i * lanes + l, &one);
                    }
                }
                out
            }
            Expr::SharedLoad { arr, index } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let a = &self.shared[*arr as usize];
                let lanes = self.lanes_of_expr_dst.max(1) as usize;
                let mut out = Data::zeros(dt, t * lanes);
                for i in 0..t {
                    if active[i] {
                        let j = idx[i];
                        if j < 0
                            || j as usize + lanes > a.len()
                            || !(j as usize).is_multiple_of(lanes)
                        {
                            return Err(bug(format!(
                                "shared index {j} ({lanes} lanes) outside array {arr} of {} or misaligned",
                                a.len()
                            )));
                        }
                        for l in 0..lanes {
                            set1(&mut out, i * lanes + l, &get1(a, j as usize + l));
                        }
                    }
                }
                let name = &self.k.shared[*arr as usize].name;
                for i in (0..t).filter(|&i| active[i]) {
                    for l in 0..lanes {
                        self.races
                            .read(*arr, idx[i] as usize + l, i)
                            .map_err(|e| bug(format!("shared-memory race in `{name}`: {e}")))?;
                    }
                }
                out
            }
            Expr::Extract { vector, lane } => {
                let lanes = self.k.reg_ty(*vector).lanes as usize;
                let v = self.reg(*vector)?;
                let mut out = Data::zeros(dt, t);
                for i in 0..t {
                    set1(&mut out, i, &get1(v, i * lanes + *lane as usize));
                }
                out
            }
            Expr::ShuffleXor { value, mask } => {
                if *mask >= 32 {
                    return Err(bug(format!("shuffle mask {mask} leaves the warp")));
                }
                let v = self.reg(*value)?;
                let mut out = Data::zeros(dt, t);
                for i in 0..t {
                    if !active[i] {
                        continue;
                    }
                    // Like `shfl.sync` with a full member mask: the whole warp takes part.
                    let warp = i & !31;
                    if (warp..(warp + 32).min(t)).any(|j| !active[j]) {
                        return Err(bug("a warp shuffle in divergent control flow"));
                    }
                    let j = i ^ *mask as usize;
                    if j >= t {
                        return Err(bug(format!("shuffle partner {j} of {t} threads")));
                    }
                    set1(&mut out, i, &get1(v, j));
                }
                out
            }
            Expr::Construct(parts) => {
                let lanes = parts.len();
                let mut out = Data::zeros(dt, t * lanes);
                for (l, p) in parts.iter().enumerate() {
                    let v = self.reg(*p)?;
                    for i in 0..t {
                        set1(&mut out, i * lanes + l, &get1(v, i));
                    }
                }
                out
            }
        })
    }

    fn run(&mut self, body: &[Stmt], active: &[bool]) -> Result<()> {
        for s in body {
            self.stmt(s, active)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, active: &[bool]) -> Result<()> {
        let t = self.t;
        match s {
            Stmt::Assign { dst, expr } => {
                let lanes = self.k.reg_ty(*dst).lanes;
                if lanes != 1
                    && !matches!(
                        expr,
                        Expr::SharedLoad { .. }
                            | Expr::Load { .. }
                            | Expr::Construct(_)
                            | Expr::Copy(_)
                    )
                {
                    return Err(bug("vector registers are only simulated for shared loads"));
                }
                self.lanes_of_expr_dst = lanes;
                let v = self.eval(self.dt(*dst), expr, active)?;
                self.lanes_of_expr_dst = 1;
                self.wgmma.note_reg_write(*dst)?;
                self.write(*dst, v, active);
            }
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            } => {
                if active.iter().any(|a| !a) || !self.t.is_multiple_of(32) {
                    return Err(bug("ldmatrix reached by part of a warp"));
                }
                let idx = ints(self.reg(*index)?)?.to_vec();
                // Elements in a lane's 32-bit word: 2 of 16 bits, or 1 of 32.
                let per = match self.k.shared[*arr as usize].dtype.size_bytes() {
                    2 => 2u32,
                    4 if !*trans => 1,
                    _ => return Err(bug("ldmatrix of an unsupported element type")),
                };
                let a = &self.shared[*arr as usize];
                let n = self.t * per as usize;
                let mut outs = vec![Data::zeros(self.dt(dst[0]), n); dst.len()];
                for w in 0..self.t / 32 {
                    for (i, out) in outs.iter_mut().enumerate() {
                        let row = |r: u32| idx[w * 32 + 8 * i + r as usize];
                        for lane in 0..32u32 {
                            let (g, t) = (lane / 4, lane % 4);
                            for e in 0..per {
                                let (r, c) = if *trans {
                                    (per * t + e, g)
                                } else {
                                    (g, per * t + e)
                                };
                                let j = row(r) + c as i64;
                                if j < 0 || j as usize >= a.len() {
                                    return Err(bug(format!(
                                        "ldmatrix index {j} outside array {arr} of {}",
                                        a.len()
                                    )));
                                }
                                let th = w * 32 + lane as usize;
                                set1(out, th * per as usize + e as usize, &get1(a, j as usize));
                                self.races.read(*arr, j as usize, th).map_err(|e| {
                                    bug(format!("shared-memory race in ldmatrix: {e}"))
                                })?;
                            }
                        }
                    }
                }
                for (r, v) in dst.iter().zip(outs) {
                    self.regs[r.0 as usize] = Some(v);
                }
            }
            Stmt::CoopZero { .. }
            | Stmt::CoopLoad { .. }
            | Stmt::CoopStore { .. }
            | Stmt::CoopMulAdd { .. }
            | Stmt::CoopCopy { .. } => {
                if active.iter().any(|a| !a) || !self.t.is_multiple_of(32) {
                    return Err(bug(
                        "cooperative-matrix statement reached by only part of a subgroup",
                    ));
                }
                self.coop(s)?;
            }
            Stmt::Wgmma { .. }
            | Stmt::WgmmaFence
            | Stmt::WgmmaCommit
            | Stmt::WgmmaWait { .. }
            | Stmt::FenceProxyAsync => self.wgmma_stmt(s, active)?,
            Stmt::MbarrierInit { .. }
            | Stmt::MbarrierArriveTx { .. }
            | Stmt::MbarrierWait { .. }
            | Stmt::TmaLoad { .. } => self.tma_stmt(s, active)?,
            Stmt::Mma { kind, d, a, b, c } => {
                if active.iter().any(|a| !a) {
                    return Err(bug("mma reached by only part of the program"));
                }
                self.mma(*kind, d, a, b, c)?;
            }
            Stmt::Store {
                buf,
                index,
                value,
                mask,
            } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let m = mask
                    .map(|m| self.reg(m).and_then(|d| ints(d).map(|v| v.to_vec())))
                    .transpose()?;
                let vals = self.reg(*value)?.clone();
                let lanes = self.k.reg_ty(*value).lanes as usize;
                for i in 0..t {
                    if !active[i] || m.as_ref().is_some_and(|m| m[i] == 0) {
                        continue;
                    }
                    let (buf, ix) = self.in_elements(*buf, idx[i], self.dt(*value))?;
                    if lanes > 1 && ix % lanes as i64 != 0 {
                        return Err(bug(format!("misaligned {lanes}-wide store at {ix}")));
                    }
                    for l in 0..lanes {
                        let (b, e, bdt) = self.element(buf, ix + l as i64, self.dt(*value))?;
                        let v =
                            arith::cast(self.dt(*value), bdt, &get1(&vals, i * lanes + l), false)
                                .map_err(bug)?;
                        self.store_global(b, bdt, e, &v);
                    }
                }
            }
            Stmt::AsyncCopy {
                arr,
                shared_index,
                buf,
                index,
                lanes,
                mask,
            } => {
                let sidx = ints(self.reg(*shared_index)?)?.to_vec();
                let idx = ints(self.reg(*index)?)?.to_vec();
                let m = mask
                    .map(|m| self.reg(m).and_then(|d| ints(d).map(|v| v.to_vec())))
                    .transpose()?;
                let lanes = *lanes as usize;
                let sdt = self.k.shared[*arr as usize].dtype;
                let len = self.shared[*arr as usize].len();
                for i in 0..t {
                    if !active[i] {
                        continue;
                    }
                    let j = sidx[i];
                    if j < 0 || j as usize + lanes > len || !(j as usize).is_multiple_of(lanes) {
                        return Err(bug(format!(
                            "async copy to shared index {j} ({lanes} lanes) outside array {arr} of {len} or misaligned"
                        )));
                    }
                    let live = m.as_ref().is_none_or(|m| m[i] != 0);
                    let (buf, ix) = if live {
                        self.in_elements(*buf, idx[i], sdt)?
                    } else {
                        (*buf, 0)
                    };
                    if live && ix % lanes as i64 != 0 {
                        return Err(bug(format!("misaligned {lanes}-wide async copy from {ix}")));
                    }
                    for l in 0..lanes {
                        let v = if live {
                            let (b, e, bdt) = self.element(buf, ix + l as i64, sdt)?;
                            let mut one = Data::zeros(bdt, 1);
                            self.load_global(b, bdt, e, &mut one);
                            arith::cast(bdt, sdt, &one, false).map_err(bug)?
                        } else {
                            Data::zeros(sdt, 1)
                        };
                        let at = j as usize + l;
                        self.races.issue(*arr, at, i).map_err(|e| {
                            bug(format!(
                                "shared-memory race in `{}`: {e}",
                                self.k.shared[*arr as usize].name
                            ))
                        })?;
                        self.wgmma.note_shared_write(*arr, at, false)?;
                        set1(&mut self.shared[*arr as usize], at, &poison(sdt));
                        self.overlay_written(*arr, at);
                        self.copies_open.push((*arr, at, v, i));
                    }
                }
            }
            Stmt::AsyncCommit => {
                let group = std::mem::take(&mut self.copies_open);
                self.copies_committed.push_back(group);
            }
            Stmt::AsyncWait { pending } => {
                if active.iter().any(|a| !a) {
                    return Err(bug("async wait reached by only part of the program"));
                }
                while self.copies_committed.len() > *pending as usize {
                    let group = self.copies_committed.pop_front().unwrap_or_default();
                    for (arr, at, v, tid) in group {
                        self.races.land(arr, at, tid).map_err(|e| {
                            bug(format!(
                                "shared-memory race in `{}`: {e}",
                                self.k.shared[arr as usize].name
                            ))
                        })?;
                        self.wgmma.note_shared_write(arr, at, false)?;
                        set1(&mut self.shared[arr as usize], at, &v);
                        self.overlay_written(arr, at);
                    }
                }
            }
            Stmt::SharedStore { arr, index, value } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let vals = self.reg(*value)?.clone();
                let lanes = self.k.reg_ty(*value).lanes as usize;
                let mut written = vec![];
                let overlaid = !self.overlay_peers[*arr as usize].is_empty();
                let a = &mut self.shared[*arr as usize];
                for i in 0..t {
                    if active[i] {
                        let j = idx[i];
                        if j < 0
                            || j as usize + lanes > a.len()
                            || !(j as usize).is_multiple_of(lanes)
                        {
                            return Err(bug(format!(
                                "shared store index {j} ({lanes} lanes) outside array {arr} of {} or misaligned",
                                a.len()
                            )));
                        }
                        for l in 0..lanes {
                            let at = j as usize + l;
                            self.wgmma.note_shared_write(*arr, at, true)?;
                            if !same1(a, at, &vals, i * lanes + l) {
                                self.races.write(*arr, at, i).map_err(|e| {
                                    bug(format!(
                                        "shared-memory race in `{}`: {e}",
                                        self.k.shared[*arr as usize].name
                                    ))
                                })?;
                            }
                            set1(a, at, &get1(&vals, i * lanes + l));
                            if overlaid {
                                written.push(at);
                            }
                        }
                    }
                }
                for at in written {
                    self.overlay_written(*arr, at);
                }
            }
            Stmt::Atomic {
                dst,
                op,
                buf,
                index,
                value,
                mask,
            } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let m = mask
                    .map(|m| self.reg(m).and_then(|d| ints(d).map(|v| v.to_vec())))
                    .transpose()?;
                let vals = self.reg(*value)?.clone();
                let dt = self.dt(*dst);
                let mut old_all = self.regs[dst.0 as usize]
                    .clone()
                    .unwrap_or_else(|| Data::zeros(dt, t));
                for i in 0..t {
                    if !active[i] || m.as_ref().is_some_and(|m| m[i] == 0) {
                        continue;
                    }
                    let (buf, ix) = self.in_elements(*buf, idx[i], dt)?;
                    let (b, e, bdt) = self.element(buf, ix, dt)?;
                    let mut old = Data::zeros(bdt, 1);
                    self.load_global(b, bdt, e, &mut old);
                    let v = get1(&vals, i);
                    let new = match op {
                        AtomicOp::Xchg => v.clone(),
                        AtomicOp::Add => {
                            arith::binary(BinaryOp::Add, bdt, &old, &v).map_err(bug)?
                        }
                        AtomicOp::Max => {
                            arith::binary(BinaryOp::Max, bdt, &old, &v).map_err(bug)?
                        }
                        AtomicOp::Min => {
                            arith::binary(BinaryOp::Min, bdt, &old, &v).map_err(bug)?
                        }
                        AtomicOp::And => {
                            arith::binary(BinaryOp::And, bdt, &old, &v).map_err(bug)?
                        }
                        AtomicOp::Or => arith::binary(BinaryOp::Or, bdt, &old, &v).map_err(bug)?,
                        AtomicOp::Xor => {
                            arith::binary(BinaryOp::Xor, bdt, &old, &v).map_err(bug)?
                        }
                    };
                    self.store_global(b, bdt, e, &new);
                    set1(&mut old_all, i, &old);
                }
                self.regs[dst.0 as usize] = Some(old_all);
            }
            Stmt::AtomicCas {
                dst,
                buf,
                index,
                cmp,
                value,
            } => {
                let idx = ints(self.reg(*index)?)?.to_vec();
                let (cmps, vals) = (self.reg(*cmp)?.clone(), self.reg(*value)?.clone());
                let dt = self.dt(*dst);
                let mut old_all = self.regs[dst.0 as usize]
                    .clone()
                    .unwrap_or_else(|| Data::zeros(dt, t));
                for i in 0..t {
                    if !active[i] {
                        continue;
                    }
                    let (buf, ix) = self.in_elements(*buf, idx[i], dt)?;
                    let (b, e, bdt) = self.element(buf, ix, dt)?;
                    let mut old = Data::zeros(bdt, 1);
                    self.load_global(b, bdt, e, &mut old);
                    if old == get1(&cmps, i) {
                        self.store_global(b, bdt, e, &get1(&vals, i));
                    }
                    set1(&mut old_all, i, &old);
                }
                self.regs[dst.0 as usize] = Some(old_all);
            }
            Stmt::Loc(_) => {}
            Stmt::Barrier | Stmt::StorageBarrier => {
                if active.iter().any(|a| !a) {
                    return Err(bug(
                        "barrier reached by only part of the program (divergent control flow)",
                    ));
                }
                self.races.epoch += 1;
            }
            Stmt::For {
                iv,
                lower,
                upper,
                step,
                body,
            } => {
                let (lo, hi, st) = (
                    self.uniform(*lower, active)?,
                    self.uniform(*upper, active)?,
                    self.uniform(*step, active)?,
                );
                if st == 0 {
                    return Err(Diagnostic::new(
                        ErrorKind::Runtime,
                        "range() step must not be zero",
                    ));
                }
                let mut i = lo;
                while (st > 0 && i < hi) || (st < 0 && i > hi) {
                    self.write(*iv, splat_i(i, t), active);
                    self.run(body, active)?;
                    i += st;
                }
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = ints(self.reg(*cond)?)?.to_vec();
                let on: Vec<bool> = active.iter().zip(&c).map(|(a, c)| *a && *c != 0).collect();
                let off: Vec<bool> = active.iter().zip(&c).map(|(a, c)| *a && *c == 0).collect();
                self.branch_depth += 1;
                if on.iter().any(|x| *x) {
                    self.run(then_body, &on)?;
                }
                if off.iter().any(|x| *x) {
                    self.run(else_body, &off)?;
                }
                self.branch_depth -= 1;
            }
            Stmt::While {
                cond_body,
                cond,
                body,
                span,
            } => loop {
                self.step()?;
                let (writes, reads) = (self.writes, self.reads);
                // The program's state (its registers), kept only while programs are
                // interleaved.
                let state = self.handle.as_ref().map(|_| self.regs.clone());
                self.run(cond_body, active)?;
                let c = ints(self.reg(*cond)?)?.to_vec();
                let on: Vec<bool> = active.iter().zip(&c).map(|(a, c)| *a && *c != 0).collect();
                if !on.iter().any(|x| *x) {
                    break;
                }
                if on != active {
                    return Err(bug("while condition diverges across the program"));
                }
                self.run(body, &on)?;
                // An iteration that read memory, changed none and left every register
                // as it found it would repeat itself exactly until another program
                // writes: a spin-wait; let the others run.
                if self.writes == writes
                    && self.reads > reads
                    && state.is_some_and(|s| s == self.regs)
                {
                    self.wait_for_others(*span)?;
                }
            },
        }
        Ok(())
    }
}

/// Tests' shortcut: runs `k` as one program whose only parameter is an f32 buffer of
/// `len` elements (poisoned with NaN bits first) and returns the buffer.
#[cfg(test)]
pub(crate) fn run_on_f32_buffer(k: &ThreadKernel, len: usize) -> Result<Vec<f32>> {
    let mut bufs = vec![crate::interp::HostBuffer {
        dtype: crate::ir::DType::F32,
        bytes: vec![0xff; 4 * len],
    }];
    let args = [crate::interp::RtArg::Buffer {
        buffer: 0,
        offset: 0,
        len,
    }];
    simulate(k, crate::launch::Grid([1, 1, 1]), &args, &mut bufs)?;
    Ok(bufs[0]
        .bytes
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::BinaryOp;
    use crate::thread_ir::{Param, RegTy, SharedArray};

    /// `ldmatrix` of 32-bit words as the PTX ISA defines it for `.b16` (each lane gets
    /// the 4 bytes at row `l / 4`, bytes `4 (l % 4)`..): lane `l` reads row `l / 4`,
    /// word `l % 4` of each 8x4 matrix.
    #[test]
    fn ldmatrix_of_32_bit_words() {
        let f = RegTy::scalar(DType::F32);
        let i = RegTy::scalar(DType::I32);
        // r0 tid, r1 tid as f32, r2 = 32, r3 = tid + 32, r4 = f32(tid + 32),
        // r5 row = lane & 7, r6 matrix = lane >> 3, r7 = 8, r8 = 4, r9 = row * 8,
        // r10 = matrix * 4, r11 = index, r12/r13 the two matrices, r14 = 2,
        // r15 = tid * 2, r16 = tid * 2 + 1, r17 = 1, r18 = 3, r19 = 7.
        let regs = vec![i, f, i, i, f, i, i, i, i, i, i, i, f, f, i, i, i, i, i, i];
        let a = crate::thread_ir::testing::assign;
        let c = |v: i64| Expr::Const(Const::Int(v));
        let bin = |op, x: u32, y: u32| Expr::Binary(op, Reg(x), Reg(y));
        let body = vec![
            a(0, Expr::Special(Special::ThreadId)),
            a(
                1,
                Expr::Cast {
                    value: Reg(0),
                    bitcast: false,
                },
            ),
            a(2, c(32)),
            a(3, bin(BinaryOp::Add, 0, 2)),
            a(
                4,
                Expr::Cast {
                    value: Reg(3),
                    bitcast: false,
                },
            ),
            Stmt::SharedStore {
                arr: 0,
                index: Reg(0),
                value: Reg(1),
            },
            Stmt::SharedStore {
                arr: 0,
                index: Reg(3),
                value: Reg(4),
            },
            Stmt::Barrier,
            a(19, c(7)),
            a(18, c(3)),
            a(5, bin(BinaryOp::And, 0, 19)),
            a(6, bin(BinaryOp::Shr, 0, 18)),
            a(7, c(8)),
            a(8, c(4)),
            a(9, bin(BinaryOp::Mul, 5, 7)),
            a(10, bin(BinaryOp::Mul, 6, 8)),
            a(11, bin(BinaryOp::Add, 9, 10)),
            Stmt::LdMatrix {
                dst: vec![Reg(12), Reg(13)],
                arr: 0,
                index: Reg(11),
                trans: false,
            },
            a(14, c(2)),
            a(17, c(1)),
            a(15, bin(BinaryOp::Mul, 0, 14)),
            a(16, bin(BinaryOp::Add, 15, 17)),
            Stmt::Store {
                buf: 0,
                index: Reg(15),
                value: Reg(12),
                mask: None,
            },
            Stmt::Store {
                buf: 0,
                index: Reg(16),
                value: Reg(13),
                mask: None,
            },
        ];
        let k = ThreadKernel {
            name: "ldmatrix32".into(),
            params: vec![Param {
                name: "out".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::F32,
                    written: true,
                },
            }],
            threads: 32,
            shared: vec![SharedArray {
                name: "s".into(),
                dtype: DType::F32,
                len: 64,
                align: 16,
                overlays: None,
            }],
            regs,
            frags: vec![],
            body,
            notes: vec![],
            source: None,
            checks: None,
        };
        let mut bufs = vec![HostBuffer {
            dtype: DType::F32,
            bytes: vec![0xff; 64 * 4],
        }];
        let args = [RtArg::Buffer {
            buffer: 0,
            offset: 0,
            len: 64,
        }];
        simulate(&k, Grid([1, 1, 1]), &args, &mut bufs).unwrap();
        let got: Vec<f32> = bufs[0]
            .bytes
            .chunks_exact(4)
            .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        for l in 0..32usize {
            let (g, t) = (l / 4, l % 4);
            for m in 0..2 {
                // Row g of the 8x8 array, columns 4m..4m+3: word t.
                assert_eq!(
                    got[l * 2 + m],
                    (g * 8 + 4 * m + t) as f32,
                    "lane {l} matrix {m}"
                );
            }
        }
    }
}
