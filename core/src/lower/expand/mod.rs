//! Pass: tile IR (block pointers already lowered) to Thread IR.
//!
//! Each tile value becomes a [`Dist`]: either one register shared by every element
//! (`Uniform`: constants, splats, scalars, broadcasts of those) or a linear layout with
//! one register per layout register. Pointer tiles are a root buffer parameter plus a
//! `Dist` of integer element offsets; a pointer whose root is not one kernel argument is
//! a compile error. The files:
//! - [`dist`]: distributed values, thread coordinates, layout conversions through
//!   shared memory, broadcasting;
//! - [`memory`]: loads, stores, atomics;
//! - [`reduce`]: reductions and scans;
//! - [`dot`]: the dot plan;
//! - this file: the driver, elementwise ops and structured control flow.

// Registers of several operands are walked in parallel by index throughout.
#![allow(clippy::needless_range_loop)]

mod checked;
mod dist;
pub(crate) mod dot;
mod dot_coop;
pub(crate) mod dot_wgmma;
mod memory;
mod reduce;
mod remat;
pub(crate) mod shared_tile;

use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::ir::ops::{Const, Op};
use crate::ir::{Block, DType, Elem, Inst, Kernel, Type, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{
    Expr, Param, ParamKind, Reg, RegTy, SharedArray, Special, Stmt, ThreadKernel,
};
use dist::Dist;
use std::collections::HashMap;

/// [`ExpandOptions::ring_budget`] where the device is not known: less than every sm_80+
/// GPU's opt-in per-block maximum (163 KiB on the A100, 227 KiB on the H100/H200), with
/// room left for the kernel's other shared arrays.
pub const DEFAULT_RING_BUDGET: u32 = 160 * 1024;

/// Knobs of the expansion.
#[derive(Clone, Debug)]
pub struct ExpandOptions {
    /// Warps per program (`num_warps`).
    pub num_warps: u32,
    /// Threads per warp in the layouts (32 on every backend; on WGSL a logical grouping).
    pub warp_size: u32,
    /// The backend's name, for error messages.
    pub backend: &'static str,
    /// Whether `dot` may use warp-level tensor-core instructions ([`Stmt::Mma`]):
    /// f16/bf16 inputs and f32 inputs at tf32 precision, with f32 accumulators.
    pub mma: bool,
    /// Whether `dot` may use warpgroup MMA ([`Stmt::Wgmma`], sm_90a): f16/bf16 inputs
    /// with f32 accumulators, operands in swizzled shared memory (`dot_wgmma.rs`).
    pub wgmma: bool,
    /// Whether f32 dots at tf32 precision also take the warpgroup form (`b` stored
    /// K-major, as tf32 `wgmma` requires: its copies go 4 bytes at a time). Off by
    /// default: on the H200 it ran at 0.24x cuBLAS, slower than `mma.sync` (0.53x).
    pub wgmma_tf32: bool,
    /// The widest global access in bytes (16 for `ld.global.v4.b32`); 0 or 4 keeps
    /// every access scalar. Wide accesses are used where the axis analysis proves a
    /// thread's run of elements contiguous, aligned and uniformly masked.
    pub vector_bytes: u32,
    /// Whether wide accesses may move 16-bit elements (packed two to a word); else only
    /// 32-bit elements are vectorized.
    pub wide_16bit: bool,
    /// Whether wide accesses may move f16 elements as native vectors (WGSL
    /// `vec4<f16>` with `SHADER_F16`), where `wide_16bit` is off.
    pub wide_f16: bool,
    /// The most elements one wide access moves (4 on WGSL: `vec4`; 8 on PTX).
    pub max_lanes: u32,
    /// Whether reductions combine across the lanes of a warp with butterfly shuffles
    /// ([`crate::thread_ir::Expr::ShuffleXor`]) instead of shared memory.
    pub warp_shuffle: bool,
    /// Whether the tensor-core operands of a pipelined `dot` may be copied to shared
    /// memory asynchronously ([`Stmt::AsyncCopy`], PTX `cp.async`) into a ring of
    /// `num_stages` buffers, instead of being prefetched into registers.
    pub async_copies: bool,
    /// The shared memory, in bytes, the rings of one pipelined loop may take (fewer
    /// stages, down to 2, or the register prefetch where they would not fit).
    pub ring_budget: u32,
    /// The cooperative-matrix products the device runs on its matrix units (WGSL
    /// `coop_mat`, from the adapter's list): a `dot` whose input and accumulator types
    /// one of them takes, with tile sides multiples of its size, is computed as
    /// fragments per subgroup ([`crate::thread_ir::Stmt::CoopMulAdd`]). Only for
    /// devices whose subgroups are exactly `warp_size` (32) threads; empty elsewhere.
    pub coop_matrix: Vec<CoopConfig>,
    /// Whether whole-program reductions may combine across threads with subgroup
    /// builtins ([`crate::thread_ir::Expr::SubgroupReduce`]): a device whose subgroups
    /// are exactly `warp_size` threads (WGSL with `SUBGROUP`), without warp shuffles.
    pub subgroup_reduce: bool,
    /// The shared memory, in bytes, through which a cooperative-matrix accumulator
    /// reaches the threads (rounds of as many fragments a subgroup as fit; at least
    /// one).
    pub coop_scratch_bytes: u32,
    /// Whether the device has 64-bit integers. Without them (WGSL), 64-bit address
    /// arithmetic is narrowed to 32 bits where that is exact ([`crate::lower::narrow_i64`]).
    pub native_i64: bool,
    /// Checked mode (`thread_ir::checks`): every global access tested against its
    /// buffer view's length, `device_assert`, hints and block pointers tested, the
    /// first violation reported through a record buffer.
    pub checked: bool,
    /// Whether f16 arithmetic runs natively (WGSL with `SHADER_F16`). Without it,
    /// [`crate::lower::math`] computes each f16 operation in f32 and rounds the result
    /// to f16; bf16 arithmetic is always computed that way.
    pub native_f16: bool,
    /// Whether `exp` and `log` are instructions of the target (WGSL). Without them
    /// (PTX has only `ex2` and `lg2`), [`crate::lower::math`] writes them in base 2.
    pub native_exp_log: bool,
    /// The software-pipelining depth of `dot` loops that do not give their own
    /// (`tl.range(..., num_stages=)`): the launch's `num_stages` (Triton's config
    /// option); `None` chooses by tile size, 1 turns pipelining off.
    pub num_stages: Option<u32>,
}

/// A cooperative-matrix product a device offers: `size x size x size`, fragments of
/// `input` into accumulators of `acc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopConfig {
    pub size: u32,
    pub input: DType,
    pub acc: DType,
}

impl ExpandOptions {
    /// How the WGSL backend lowers: 16-byte accesses of 32-bit elements (`vec4`), the
    /// FMA dot. (16-bit elements stay scalar: moved packed in `u32` words, each one
    /// decoded and re-encoded, the f16 matmul ran 3x slower on the H200.)
    pub fn wgsl(num_warps: u32) -> Self {
        ExpandOptions {
            num_warps,
            warp_size: 32,
            backend: "WGSL",
            mma: false,
            wgmma: false,
            wgmma_tf32: false,
            vector_bytes: 16,
            wide_16bit: false,
            wide_f16: false,
            max_lanes: 4,
            warp_shuffle: false,
            async_copies: false,
            ring_budget: DEFAULT_RING_BUDGET,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            native_i64: false,
            checked: false,
            num_stages: None,
            native_f16: false,
            native_exp_log: true,
        }
    }

    /// How the PTX backend lowers: 16-byte accesses, tensor-core dots fed by
    /// asynchronous copies.
    pub fn ptx(num_warps: u32) -> Self {
        ExpandOptions {
            num_warps,
            warp_size: 32,
            backend: "PTX",
            mma: true,
            wgmma: false,
            wgmma_tf32: false,
            vector_bytes: 16,
            wide_16bit: true,
            wide_f16: true,
            max_lanes: 8,
            warp_shuffle: true,
            async_copies: true,
            ring_budget: DEFAULT_RING_BUDGET,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            native_i64: true,
            checked: false,
            num_stages: None,
            native_f16: false,
            native_exp_log: false,
        }
    }
}

impl ExpandOptions {
    /// The most elements of `dtype` one wide access may move (1: scalar accesses only).
    pub fn wide_lanes(&self, dtype: DType) -> u32 {
        let size = dtype.size_bytes() as u32;
        let wide = dtype != DType::I1
            && (size == 4
                || (size == 2 && (self.wide_16bit || (dtype == DType::F16 && self.wide_f16))));
        if wide {
            (self.vector_bytes / size).min(self.max_lanes).max(1)
        } else {
            1
        }
    }
}

impl Default for ExpandOptions {
    fn default() -> Self {
        ExpandOptions {
            num_warps: 4,
            warp_size: 32,
            backend: "GPU",
            mma: false,
            wgmma: false,
            wgmma_tf32: false,
            vector_bytes: 0,
            wide_16bit: false,
            wide_f16: false,
            max_lanes: 4,
            warp_shuffle: false,
            async_copies: false,
            ring_budget: DEFAULT_RING_BUDGET,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            native_i64: true,
            checked: false,
            num_stages: None,
            native_f16: false,
            native_exp_log: true,
        }
    }
}

/// A lowered tile value.
#[derive(Clone, Debug)]
pub(crate) enum TVal {
    Data(Dist),
    /// A pointer tile: buffer parameter `root` plus element offsets.
    Ptr {
        root: u32,
        off: Dist,
    },
    /// A `dot` operand tile staged in shared memory (see `ir::Staging`): slot `slot` of
    /// ring `ring` ([`Expander::rings`]).
    Staged {
        ring: u32,
        slot: Reg,
    },
    /// A `dot` accumulator held as cooperative-matrix fragments (see `dot_coop.rs`);
    /// any use but another such `dot`'s accumulator or a loop's carried value reads it
    /// back into registers first.
    Frags(dot_coop::CoopAcc),
}

/// A ring of shared-memory tiles that staged loads fill and `dot`s read.
#[derive(Clone, Debug)]
pub(crate) struct Ring {
    /// The shared array: `stages` slots of `slot_len` elements.
    pub arr: u32,
    pub stages: u32,
    pub slot_len: u32,
    /// The slot the next staged load of the ring fills (a loop-carried register).
    pub next: Reg,
    /// Copy groups a `dot` may leave in flight (`ir::Staging::pending`).
    pub pending: u32,
    /// A slot more than the prefetch distance needs (`ir::Staging::slack`).
    pub slack: bool,
}

/// Lowers `kernel` (after `block_ptr`) to Thread IR.
pub fn expand(kernel: &Kernel, options: &ExpandOptions) -> Result<ThreadKernel> {
    let mut x = Expander::new(kernel, options);
    x.hoist(|x| x.prologue())?;
    x.block(&kernel.body)?;
    let main = x.stmts.pop().unwrap_or_default();
    let mut body = std::mem::take(&mut x.hoisted);
    body.extend(main);
    let mut tk = x.out;
    tk.body = body;
    Ok(tk)
}

pub(crate) struct Expander<'k> {
    pub k: &'k Kernel,
    pub opt: ExpandOptions,
    pub out: ThreadKernel,
    /// Open statement lists; the last receives new statements.
    pub stmts: Vec<Vec<Stmt>>,
    pub vals: HashMap<Value, TVal>,
    /// Tile-IR parameter index -> Thread IR parameter index.
    pub param_index: Vec<u32>,
    pub lane: Reg,
    pub warp: Reg,
    /// Per (layout, dim): the thread-dependent part of the coordinate.
    pub thread_part: HashMap<(LinearLayout, usize), Reg>,
    /// The op defining each instruction result (for rematerialization).
    pub defs: HashMap<Value, Op>,
    /// Values recomputed in a layout, by (value, layout, dimension map).
    /// Values recomputed in a layout, by (value, layout, dimension map), with the depth
    /// of the statement list they were emitted in (valid while it is open).
    pub remat_memo: HashMap<(Value, LinearLayout, remat::DimMap), (Vec<Reg>, usize)>,
    /// Statements placed at kernel entry: thread ids, parameters, thread coordinates.
    /// They depend only on the thread, so every later use is dominated by them.
    pub hoisted: Vec<Stmt>,
    /// Layouts seen per shape, tried first when a broadcast picks its result layout.
    pub seen_layouts: HashMap<Vec<u32>, Vec<LinearLayout>>,
    /// Scratch shared arrays per dtype (index into `out.shared`).
    pub scratch: HashMap<DType, u32>,
    /// Span of the instruction being expanded, for errors.
    pub span: Span,
    /// Registers that are lane `.1` of vector register `.0` (from wide loads), so that
    /// a wide store of the same lanes reuses the vector.
    pub extracted: HashMap<Reg, (Reg, u8)>,
    /// Loop-carried 16-bit tiles kept packed: the slot's first register -> the group
    /// width and one vector register a group. The slot's own registers are extracted
    /// from the vectors at the top of each iteration and after the loop.
    pub packed_slots: HashMap<Reg, (usize, Vec<Reg>)>,
    /// What is known about integer and pointer tiles (for wide accesses), taking the
    /// user's hints as facts.
    pub axis: crate::lower::axis_info::AxisAnalysis,
    /// The same, from proven facts only: a wide access that needs the hints checks
    /// them at run time.
    pub axis_proven: crate::lower::axis_info::AxisAnalysis,
    /// The shared-memory rings of staged `dot` operands, by `ir::Staging::ring`.
    pub rings: HashMap<u32, Ring>,
    /// Scratch arrays of cooperative-matrix accumulators, by (dtype, fragment size,
    /// fragments per round).
    coop_scratch: HashMap<(DType, u32, u32), u32>,
    /// `if` branches being lowered around the current instruction (fragments stay out
    /// of them).
    pub(crate) if_depth: u32,
    /// Checked mode: the register holding each buffer parameter's view length.
    pub(crate) check_lens: HashMap<u32, Reg>,
    /// How many times each value is an operand (in any block).
    uses: HashMap<Value, usize>,
    /// Warpgroup dots of the loop being lowered that accumulate in place into the
    /// loop-carried registers and leave their group in flight (`dot_wgmma.rs`).
    pub(crate) in_place_dots: std::collections::HashSet<Value>,
    /// Whether the loop body being lowered has such a dot not yet lowered: a staged
    /// copy before it must first wait for the previous iteration's group.
    pub(crate) awaiting_in_place: bool,
    /// Whether a warpgroup group may still be in flight (completed by a wait after
    /// the loop).
    pub(crate) wgmma_in_flight: bool,
}

impl<'k> Expander<'k> {
    fn new(k: &'k Kernel, opt: &ExpandOptions) -> Self {
        Expander {
            k,
            opt: opt.clone(),
            out: ThreadKernel {
                name: k.name.clone(),
                params: vec![],
                threads: opt.num_warps * opt.warp_size,
                shared: vec![],
                regs: vec![],
                frags: vec![],
                body: vec![],
                notes: vec![],
                source: Some(k.source.clone()),
                checks: None,
            },
            stmts: vec![vec![]],
            vals: HashMap::new(),
            param_index: vec![],
            lane: Reg(0),
            warp: Reg(0),
            thread_part: HashMap::new(),
            extracted: HashMap::new(),
            packed_slots: HashMap::new(),
            axis: crate::lower::axis_info::AxisAnalysis::new(k, true),
            axis_proven: crate::lower::axis_info::AxisAnalysis::new(k, false),
            rings: HashMap::new(),
            coop_scratch: HashMap::new(),
            if_depth: 0,
            check_lens: HashMap::new(),
            uses: {
                let mut uses = HashMap::new();
                k.walk(&mut |inst| {
                    for v in inst.op.operands() {
                        *uses.entry(v).or_insert(0) += 1;
                    }
                });
                uses
            },
            in_place_dots: Default::default(),
            awaiting_in_place: false,
            wgmma_in_flight: false,
            defs: {
                let mut defs = HashMap::new();
                k.walk(&mut |inst| {
                    if let [r] = inst.results.as_slice() {
                        defs.insert(*r, inst.op.clone());
                    }
                });
                defs
            },
            remat_memo: HashMap::new(),
            hoisted: vec![],
            seen_layouts: HashMap::new(),
            scratch: HashMap::new(),
            span: k.span,
        }
    }

    /// Runs `f` with new statements going to the kernel-entry list.
    pub fn hoist<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let saved = std::mem::replace(&mut self.stmts, vec![std::mem::take(&mut self.hoisted)]);
        let r = f(self);
        self.hoisted = self.close();
        self.stmts = saved;
        r
    }

    /// Opens a nested statement list.
    pub fn open(&mut self) {
        self.stmts.push(vec![]);
    }

    /// Closes the innermost statement list; what was computed inside is forgotten.
    pub fn close(&mut self) -> Vec<Stmt> {
        let depth = self.stmts.len();
        self.remat_memo.retain(|_, (_, level)| *level < depth);
        self.stmts.pop().unwrap_or_default()
    }

    /// A located error.
    pub fn err(&self, kind: ErrorKind, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::new(kind, msg)
            .at(self.span, "")
            .with_source(&self.k.source)
    }

    pub fn unsupported(&self, what: &str) -> Diagnostic {
        self.err(
            ErrorKind::Backend,
            format!(
                "{what} is not supported by the {} backend yet",
                self.opt.backend
            ),
        )
    }

    pub fn new_reg(&mut self, dtype: DType) -> Reg {
        self.new_reg_ty(RegTy::scalar(dtype))
    }

    pub fn new_reg_ty(&mut self, ty: RegTy) -> Reg {
        self.out.regs.push(ty);
        Reg(self.out.regs.len() as u32 - 1)
    }

    /// Records what the lowering chose for the instruction at `span` (the compiled
    /// kernel's description).
    pub(crate) fn note(&mut self, span: crate::diag::Span, text: String) {
        let line = format!("line {}: {text}", self.k.line_of(span));
        if !self.out.notes.contains(&line) {
            self.out.notes.push(line);
        }
    }

    pub fn emit(&mut self, s: Stmt) {
        self.stmts.last_mut().expect("open statement list").push(s);
    }

    /// `dst = expr` into a fresh register of `dtype`.
    pub fn assign(&mut self, dtype: DType, expr: Expr) -> Reg {
        let dst = self.new_reg(dtype);
        self.emit(Stmt::Assign { dst, expr });
        dst
    }

    pub fn constant(&mut self, dtype: DType, c: Const) -> Reg {
        self.assign(dtype, Expr::Const(c))
    }

    pub fn int_const(&mut self, dtype: DType, v: i64) -> Reg {
        self.constant(dtype, Const::Int(v))
    }

    /// Declares a shared array; returns its index.
    pub fn shared_array(&mut self, name: &str, dtype: DType, len: u32) -> u32 {
        self.shared_array_aligned(name, dtype, len, 16)
    }

    /// A new shared array whose first element is aligned to `align` bytes.
    pub fn shared_array_aligned(&mut self, name: &str, dtype: DType, len: u32, align: u32) -> u32 {
        self.out.shared.push(SharedArray {
            name: name.to_string(),
            dtype,
            len,
            align,
        });
        self.out.shared.len() as u32 - 1
    }

    fn prologue(&mut self) -> Result<()> {
        for p in &self.k.params {
            let kind = match p.ty.elem() {
                Some(Elem::Ptr(d)) => ParamKind::Buffer {
                    dtype: d,
                    written: false,
                },
                Some(Elem::Data(d)) => ParamKind::Scalar { dtype: d },
                None => return Err(Diagnostic::internal("block pointer parameter")),
            };
            self.param_index.push(self.out.params.len() as u32);
            self.out.params.push(Param {
                name: p.name.clone(),
                kind,
            });
        }
        self.hidden_params();
        let tid = self.assign(DType::I32, Expr::Special(Special::ThreadId));
        let ws = self.opt.warp_size;
        let mask = self.int_const(DType::I32, ws as i64 - 1);
        self.lane = self.assign(
            DType::I32,
            Expr::Binary(crate::ir::BinaryOp::And, tid, mask),
        );
        let shift = self.int_const(DType::I32, ws.trailing_zeros() as i64);
        self.warp = self.assign(
            DType::I32,
            Expr::Binary(crate::ir::BinaryOp::Shr, tid, shift),
        );
        for (i, p) in self.k.params.iter().enumerate() {
            let tp = self.param_index[i];
            let v = match p.ty.elem() {
                Some(Elem::Ptr(_)) => TVal::Ptr {
                    root: tp,
                    off: Dist::Uniform(self.int_const(DType::I32, 0)),
                },
                Some(Elem::Data(d)) => TVal::Data(Dist::Uniform(self.assign(d, Expr::Param(tp)))),
                None => unreachable!(),
            };
            self.vals.insert(p.value, v);
        }
        Ok(())
    }

    pub fn get(&self, v: Value) -> Result<&TVal> {
        self.vals
            .get(&v)
            .ok_or_else(|| Diagnostic::internal(format!("expand: {v} used before definition")))
    }

    pub fn data(&self, v: Value) -> Result<Dist> {
        match self.get(v)? {
            TVal::Data(d) => Ok(d.clone()),
            TVal::Ptr { .. } => Err(Diagnostic::internal(format!(
                "expand: {v} is a pointer where data was expected"
            ))),
            TVal::Staged { .. } => Err(Diagnostic::internal(format!(
                "expand: {v} is staged in shared memory for a dot, but used as data"
            ))),
            TVal::Frags(_) => Err(Diagnostic::internal(format!(
                "expand: {v} is held in cooperative-matrix fragments, but used as data"
            ))),
        }
    }

    pub fn dtype(&self, v: Value) -> DType {
        self.k.ty(v).dtype().unwrap_or(DType::I32)
    }

    pub fn shape(&self, v: Value) -> Vec<u32> {
        self.k.ty(v).shape().to_vec()
    }

    pub fn set(&mut self, v: Value, t: TVal) {
        if let TVal::Data(Dist::Regs { layout, .. })
        | TVal::Ptr {
            off: Dist::Regs { layout, .. },
            ..
        } = &t
        {
            let seen = self
                .seen_layouts
                .entry(layout.shape().to_vec())
                .or_default();
            if !seen.contains(layout) {
                seen.push(layout.clone());
            }
        }
        self.vals.insert(v, t);
    }

    /// The default layout for a tile shape.
    pub fn canonical(&self, shape: &[u32]) -> Result<LinearLayout> {
        let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
        let vec = shape.last().copied().unwrap_or(1).min(4);
        LinearLayout::default_blocked(shape, &order, vec, self.opt.warp_size, self.opt.num_warps)
            .map_err(|e| Diagnostic::internal(format!("layout for {shape:?}: {e}")))
    }

    pub(crate) fn block(&mut self, b: &Block) -> Result<()> {
        for inst in &b.insts {
            self.span = inst.span;
            self.inst(inst)?;
        }
        Ok(())
    }

    /// Lowers `inst`, reading its operands that are cooperative-matrix accumulators
    /// back into registers first (for this use only: the registers are assigned here,
    /// which need not dominate later uses). Control flow carries them as they are, and
    /// a dot takes its accumulator as fragments.
    fn inst(&mut self, inst: &Inst) -> Result<()> {
        if matches!(
            inst.op,
            Op::For { .. } | Op::While { .. } | Op::If { .. } | Op::Yield(_) | Op::Condition { .. }
        ) {
            return self.inst_regs(inst);
        }
        let keep = match &inst.op {
            Op::Dot { a, b, acc, .. } if a != acc && b != acc => Some(*acc),
            _ => None,
        };
        let mut saved = vec![];
        for v in inst.op.operands() {
            if Some(v) == keep || saved.iter().any(|(s, _)| *s == v) {
                continue;
            }
            if let Some(TVal::Frags(f)) = self.vals.get(&v) {
                let f = f.clone();
                let d = self.materialize(&f)?;
                saved.push((v, TVal::Frags(f)));
                self.vals.insert(v, TVal::Data(d));
            }
        }
        let r = self.inst_regs(inst);
        for (v, t) in saved {
            self.vals.insert(v, t);
        }
        r
    }

    fn inst_regs(&mut self, inst: &Inst) -> Result<()> {
        let res = inst.results.first().copied();
        match &inst.op {
            Op::Const(c) => {
                let r = res.ok_or_else(|| Diagnostic::internal("const without result"))?;
                let reg = self.constant(self.dtype(r), *c);
                self.set(r, TVal::Data(Dist::Uniform(reg)));
            }
            Op::ProgramId { axis } => {
                let reg = self.assign(DType::I32, Expr::Special(Special::ProgramId(*axis)));
                self.set(inst.results[0], TVal::Data(Dist::Uniform(reg)));
            }
            Op::NumPrograms { axis } => {
                let reg = self.assign(DType::I32, Expr::Special(Special::NumPrograms(*axis)));
                self.set(inst.results[0], TVal::Data(Dist::Uniform(reg)));
            }
            Op::Arange { start, end } => {
                let layout = self.canonical(&[(*end - *start) as u32])?;
                let regs = self.coordinates(&layout, 0, *start)?;
                self.set(inst.results[0], TVal::Data(Dist::Regs { layout, regs }));
            }
            Op::Splat(x) | Op::Broadcast(x) => {
                let shape = self.shape(inst.results[0]);
                let v = self.get(*x)?.clone();
                // Index arithmetic is recomputed in the result's layout rather than
                // moved through shared memory.
                if let (TVal::Data(Dist::Regs { layout, .. }), Op::Broadcast(_)) = (&v, &inst.op) {
                    if layout.shape() != shape.as_slice() {
                        let target = self.canonical(&shape)?;
                        let src = self.shape(*x);
                        let free = layout
                            .register_map(&target, |c| {
                                c.iter()
                                    .zip(&src)
                                    .map(|(&x, &s)| if s == 1 { 0 } else { x })
                                    .collect()
                            })
                            .is_some();
                        let dims: remat::DimMap = src
                            .iter()
                            .enumerate()
                            .map(|(i, &s)| if s == 1 { None } else { Some(i) })
                            .collect();
                        if !free {
                            if let Some(regs) = self.remat(*x, &target, &dims, 0)? {
                                self.set(
                                    inst.results[0],
                                    TVal::Data(Dist::Regs {
                                        layout: target,
                                        regs,
                                    }),
                                );
                                return Ok(());
                            }
                        }
                    }
                }
                let out = self.broadcast(v, &shape)?;
                self.set(inst.results[0], out);
            }
            Op::ExpandDims { value, axis } => {
                let v = self.get(*value)?.clone();
                let out = self.map_layout(v, |l| l.expand_dims(*axis as usize));
                self.set(inst.results[0], out);
            }
            Op::Reshape(value) => {
                let shape = self.shape(inst.results[0]);
                let v = self.get(*value)?.clone();
                let out = self.map_layout(v, |l| l.reshape(&shape));
                self.set(inst.results[0], out);
            }
            Op::Permute { value, perm } => {
                let v = self.get(*value)?.clone();
                let out = self.map_layout(v, |l| l.permute(perm));
                self.set(inst.results[0], out);
            }
            Op::Unary { op, value } => {
                let dt = self.dtype(inst.results[0]);
                let out = self.elementwise(&[*value], |_, r| Expr::Unary(*op, r[0]), dt)?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::Binary { op, lhs, rhs } => {
                let dt = self.dtype(inst.results[0]);
                let out =
                    self.elementwise(&[*lhs, *rhs], |_, r| Expr::Binary(*op, r[0], r[1]), dt)?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::Cmp { pred, lhs, rhs } => {
                let out = self.elementwise(
                    &[*lhs, *rhs],
                    |_, r| Expr::Cmp(*pred, r[0], r[1]),
                    DType::I1,
                )?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                if self.k.ty(*on_true).elem().is_some_and(|e| e.is_ptr()) {
                    let out = self.select_ptr(*cond, *on_true, *on_false)?;
                    self.set(inst.results[0], out);
                } else {
                    let dt = self.dtype(inst.results[0]);
                    let out = self.elementwise(
                        &[*cond, *on_true, *on_false],
                        |_, r| Expr::Select {
                            cond: r[0],
                            on_true: r[1],
                            on_false: r[2],
                        },
                        dt,
                    )?;
                    self.set(inst.results[0], TVal::Data(out));
                }
            }
            Op::Fma { a, b, c } => {
                let dt = self.dtype(inst.results[0]);
                let out =
                    self.elementwise(&[*a, *b, *c], |_, r| Expr::Fma(r[0], r[1], r[2]), dt)?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::Cast { value, bitcast } => {
                let dt = self.dtype(inst.results[0]);
                let bc = *bitcast;
                let out = self.elementwise(
                    &[*value],
                    |_, r| Expr::Cast {
                        value: r[0],
                        bitcast: bc,
                    },
                    dt,
                )?;
                self.set(inst.results[0], TVal::Data(out));
            }
            Op::Hint { value, hint } => {
                self.check_hint(inst, *value, hint)?;
                let v = self.get(*value)?.clone();
                self.set(inst.results[0], v);
            }
            Op::AddPtr { ptr, offset } => {
                let out = self.add_ptr(*ptr, *offset)?;
                self.set(inst.results[0], out);
            }
            Op::Load { .. } | Op::Store { .. } | Op::Atomic { .. } | Op::AtomicCas { .. } => {
                self.memory(inst)?
            }
            Op::Reduce { .. } => self.reduce(inst)?,
            Op::Scan { .. } => self.scan(inst)?,
            Op::Dot { .. } => self.dot(inst)?,
            Op::For { .. } => self.for_loop(inst)?,
            Op::If { .. } => self.if_op(inst)?,
            Op::While { .. } => self.while_loop(inst)?,
            Op::Yield(_) | Op::Condition { .. } => {} // handled by the enclosing op
            Op::DeviceAssert { cond, message } => self.device_assert(*cond, message)?,
            Op::Barrier => self.emit(Stmt::StorageBarrier),
            Op::CheckBlockPtr {
                base,
                shape,
                strides,
            } => self.check_block_ptr(*base, shape, strides)?,
            Op::DevicePrint {
                prefix,
                values,
                hex,
            } => self.device_print(values, prefix, *hex)?,
            Op::MakeBlockPtr { .. } | Op::Advance { .. } => {
                return Err(Diagnostic::internal(
                    "block pointers must be lowered before expansion",
                ))
            }
        }
        Ok(())
    }

    /// The operands of an elementwise op, a broadcast one taken anew from its smaller
    /// source in the layout of the first other distributed operand (converting the
    /// source, not the broadcast tile: `acc + bias[None, :]` with a dot's accumulator
    /// moves 64 elements, not 128x64, through shared memory).
    fn elementwise_operands(&mut self, operands: &[Value]) -> Result<Vec<Dist>> {
        let mut dists: Vec<Dist> = operands
            .iter()
            .map(|v| self.data(*v))
            .collect::<Result<_>>()?;
        let source = |x: &Self, v: Value| match x.defs.get(&v) {
            Some(Op::Broadcast(s)) if x.shape(*s) != x.shape(v) => Some(*s),
            _ => None,
        };
        let target = operands.iter().zip(&dists).find_map(|(v, d)| match d {
            Dist::Regs { layout, .. } if source(self, *v).is_none() => Some(layout.clone()),
            _ => None,
        });
        let Some(target) = target else {
            return Ok(dists);
        };
        for (i, v) in operands.iter().enumerate() {
            let Some(src) = source(self, *v) else {
                continue;
            };
            match (&dists[i], self.get(src)?) {
                (Dist::Regs { layout, .. }, TVal::Data(Dist::Regs { .. })) if *layout != target => {
                }
                _ => continue,
            }
            let src_shape = self.shape(src);
            let proj = target.project_onto(&src_shape);
            let map = proj.register_map(&target, |c| {
                c.iter()
                    .zip(&src_shape)
                    .map(|(&x, &s)| if s == 1 { 0 } else { x })
                    .collect()
            });
            let Some(map) = map else { continue };
            let d = self.data(src)?;
            let regs = self.in_layout(&d, &proj)?;
            dists[i] = Dist::Regs {
                layout: target.clone(),
                regs: map.into_iter().map(|j| regs[j as usize]).collect(),
            };
        }
        Ok(dists)
    }

    /// Applies an elementwise expression to aligned operands.
    pub fn elementwise(
        &mut self,
        operands: &[Value],
        f: impl Fn(usize, &[Reg]) -> Expr,
        dtype: DType,
    ) -> Result<Dist> {
        let dists = self.elementwise_operands(operands)?;
        let (layout, regs) = self.align(&dists)?;
        match layout {
            None => {
                let r: Vec<Reg> = regs.iter().map(|v| v[0]).collect();
                Ok(Dist::Uniform(self.assign(dtype, f(0, &r))))
            }
            Some(layout) => {
                let n = layout.num_regs() as usize;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let r: Vec<Reg> = regs.iter().map(|v| v[i]).collect();
                    out.push(self.assign(dtype, f(i, &r)));
                }
                Ok(Dist::Regs { layout, regs: out })
            }
        }
    }

    fn map_layout(&self, v: TVal, f: impl Fn(&LinearLayout) -> LinearLayout) -> TVal {
        let m = |d: Dist| match d {
            Dist::Uniform(r) => Dist::Uniform(r),
            Dist::Regs { layout, regs } => Dist::Regs {
                layout: f(&layout),
                regs,
            },
        };
        match v {
            TVal::Data(d) => TVal::Data(m(d)),
            TVal::Ptr { root, off } => TVal::Ptr { root, off: m(off) },
            other @ (TVal::Staged { .. } | TVal::Frags(_)) => other,
        }
    }

    fn select_ptr(&mut self, cond: Value, a: Value, b: Value) -> Result<TVal> {
        let (TVal::Ptr { root: ra, off: oa }, TVal::Ptr { root: rb, off: ob }) =
            (self.get(a)?.clone(), self.get(b)?.clone())
        else {
            return Err(Diagnostic::internal(
                "select of pointers without pointer operands",
            ));
        };
        if ra != rb {
            return Err(self.err(
                ErrorKind::Backend,
                "a pointer that may point into two different arguments cannot be compiled: WGSL and PTX kernels address each argument separately",
            ));
        }
        let c = self.data(cond)?;
        let dt = dist::dist_dtype(self, &oa);
        let (layout, regs) = self.align(&[c, oa, ob])?;
        let off = match layout {
            None => Dist::Uniform(self.assign(
                dt,
                Expr::Select {
                    cond: regs[0][0],
                    on_true: regs[1][0],
                    on_false: regs[2][0],
                },
            )),
            Some(layout) => {
                let n = layout.num_regs() as usize;
                let mut out = vec![];
                for i in 0..n {
                    out.push(self.assign(
                        dt,
                        Expr::Select {
                            cond: regs[0][i],
                            on_true: regs[1][i],
                            on_false: regs[2][i],
                        },
                    ));
                }
                Dist::Regs { layout, regs: out }
            }
        };
        Ok(TVal::Ptr { root: ra, off })
    }

    fn add_ptr(&mut self, ptr: Value, offset: Value) -> Result<TVal> {
        let TVal::Ptr { root, off } = self.get(ptr)?.clone() else {
            return Err(Diagnostic::internal("addptr of a non-pointer"));
        };
        let add = self.data(offset)?;
        let (dp, da) = (dist::dist_dtype(self, &off), self.dtype(offset));
        let dt = if dp.bits() >= da.bits() { dp } else { da };
        let (layout, regs) = self.align(&[off, add])?;
        let sum = |x: &mut Self, a: Reg, b: Reg| -> Reg {
            let a = x.cast_to(a, dt);
            let b = x.cast_to(b, dt);
            x.assign(dt, Expr::Binary(crate::ir::BinaryOp::Add, a, b))
        };
        let off = match layout {
            None => Dist::Uniform(sum(self, regs[0][0], regs[1][0])),
            Some(layout) => {
                let mut out = vec![];
                for i in 0..layout.num_regs() as usize {
                    out.push(sum(self, regs[0][i], regs[1][i]));
                }
                Dist::Regs { layout, regs: out }
            }
        };
        Ok(TVal::Ptr { root, off })
    }

    /// `r` converted to `dtype` (no-op when it already is).
    pub fn cast_to(&mut self, r: Reg, dtype: DType) -> Reg {
        if self.out.reg_ty(r).dtype == dtype {
            r
        } else {
            self.assign(
                dtype,
                Expr::Cast {
                    value: r,
                    bitcast: false,
                },
            )
        }
    }

    // ----- structured control flow -----

    /// Registers that hold a loop-carried or branch-merged value, with its layout.
    fn carried_slot(&mut self, ty: &Type, like: &TVal) -> Result<TVal> {
        let dt = ty.dtype();
        let fresh = |x: &mut Self, d: &Dist, dt: DType| -> Dist {
            match d {
                Dist::Uniform(_) => Dist::Uniform(x.new_reg(dt)),
                Dist::Regs { layout, regs } => Dist::Regs {
                    layout: layout.clone(),
                    regs: regs.iter().map(|_| x.new_reg(dt)).collect(),
                },
            }
        };
        Ok(match like {
            TVal::Data(d) => TVal::Data(fresh(self, d, dt.unwrap_or(DType::I32))),
            TVal::Ptr { root, off } => {
                let odt = dist::dist_dtype(self, off);
                TVal::Ptr {
                    root: *root,
                    off: fresh(self, off, odt),
                }
            }
            TVal::Staged { ring, .. } => TVal::Staged {
                ring: *ring,
                slot: self.new_reg(DType::I32),
            },
            TVal::Frags(f) => TVal::Frags(self.fresh_frags(&f.tile)),
        })
    }

    /// When `init` (a loop-carried tile's first value) comes whole from wide 16-bit
    /// loads, keeps `slot` packed: vector registers carry it, so that the words go to
    /// shared memory as loaded (no conversions, half the registers).
    fn pack_slot(&mut self, slot: &TVal, init: &TVal) {
        let (
            TVal::Data(Dist::Regs { layout, regs }),
            TVal::Data(Dist::Regs {
                layout: il,
                regs: ir,
            }),
        ) = (slot, init)
        else {
            return;
        };
        if layout != il || self.out.reg_ty(regs[0]).dtype.size_bytes() != 2 {
            return;
        }
        if let Some((width, vectors)) = self.packed_groups(ir) {
            let fresh = vectors
                .iter()
                .map(|v| self.new_reg_ty(self.out.reg_ty(*v)))
                .collect();
            self.packed_slots.insert(regs[0], (width, fresh));
        }
    }

    /// The vectors `regs` were extracted from, a group of `width` consecutive
    /// registers a vector, lanes in order; `None` unless all of them are.
    fn packed_groups(&self, regs: &[Reg]) -> Option<(usize, Vec<Reg>)> {
        let &(first, _) = self.extracted.get(regs.first()?)?;
        let width = self.out.reg_ty(first).lanes as usize;
        if width < 2 || !regs.len().is_multiple_of(width) {
            return None;
        }
        regs.chunks(width)
            .map(|group| {
                let &(v, _) = self.extracted.get(&group[0])?;
                let in_order = group
                    .iter()
                    .enumerate()
                    .all(|(j, r)| self.extracted.get(r) == Some(&(v, j as u8)));
                (in_order && self.out.reg_ty(v).lanes as usize == width).then_some(v)
            })
            .collect::<Option<Vec<Reg>>>()
            .map(|vs| (width, vs))
    }

    /// Re-reads a packed slot's registers from its vectors (and records them as
    /// extracted, so staging stores reuse the vectors).
    fn unpack_slot(&mut self, slot: &TVal) {
        let TVal::Data(Dist::Regs { regs, .. }) = slot else {
            return;
        };
        let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() else {
            return;
        };
        for (g, v) in vectors.iter().enumerate() {
            for j in 0..width {
                let dst = regs[g * width + j];
                self.emit(Stmt::Assign {
                    dst,
                    expr: Expr::Extract {
                        vector: *v,
                        lane: j as u8,
                    },
                });
                self.extracted.insert(dst, (*v, j as u8));
            }
        }
    }

    /// Copies `v` into the registers of `slot` (converting layouts as needed).
    fn store_into(&mut self, slot: &TVal, v: &TVal) -> Result<()> {
        match (slot, v) {
            (TVal::Frags(dst), _) => return self.store_frags(dst, v, false),
            (_, TVal::Frags(src)) => {
                let d = TVal::Data(self.materialize(src)?);
                return self.store_into(slot, &d);
            }
            _ => {}
        }
        if let TVal::Data(Dist::Regs { layout, regs }) = slot {
            if let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() {
                let TVal::Data(vd) = v else {
                    return Err(Diagnostic::internal("carried value changes kind"));
                };
                let src = self.in_layout(vd, layout)?;
                let dtype = self.out.reg_ty(regs[0]).dtype;
                // From another packed slot, from wide loads, or built from scalars.
                let from = match self.packed_slots.get(&src[0]).cloned() {
                    Some((w, vs)) if w == width => Some(vs),
                    _ => self
                        .packed_groups(&src)
                        .filter(|(w, _)| *w == width)
                        .map(|(_, vs)| vs),
                };
                for (g, dst) in vectors.iter().enumerate() {
                    let expr = match &from {
                        Some(vs) => Expr::Copy(vs[g]),
                        None => Expr::Construct(
                            src[g * width..(g + 1) * width]
                                .iter()
                                .map(|r| self.cast_to(*r, dtype))
                                .collect(),
                        ),
                    };
                    self.emit(Stmt::Assign { dst: *dst, expr });
                }
                return Ok(());
            }
        }
        let (sd, vd) = match (slot, v) {
            (TVal::Data(s), TVal::Data(v)) => (s, v),
            (TVal::Staged { ring: a, slot: dst }, TVal::Staged { ring: b, slot: src }) => {
                if a != b {
                    return Err(Diagnostic::internal("a carried staged tile changes rings"));
                }
                self.emit(Stmt::Assign {
                    dst: *dst,
                    expr: Expr::Copy(*src),
                });
                return Ok(());
            }
            (TVal::Ptr { root: a, off: s }, TVal::Ptr { root: b, off: v }) => {
                if a != b {
                    return Err(self.err(
                        ErrorKind::Backend,
                        "a loop-carried or branch-merged pointer must stay within one argument for WGSL and PTX",
                    ));
                }
                (s, v)
            }
            _ => return Err(Diagnostic::internal("carried value changes kind")),
        };
        match sd {
            Dist::Uniform(dst) => {
                let src = match vd {
                    Dist::Uniform(r) => *r,
                    Dist::Regs { regs, .. } => regs[0],
                };
                let src = self.cast_to(src, self.out.reg_ty(*dst).dtype);
                self.emit(Stmt::Assign {
                    dst: *dst,
                    expr: Expr::Copy(src),
                });
            }
            Dist::Regs { layout, regs } => {
                let src = self.in_layout(vd, layout)?;
                for (d, s) in regs.iter().zip(src) {
                    self.emit(Stmt::Assign {
                        dst: *d,
                        expr: Expr::Copy(s),
                    });
                }
            }
        }
        Ok(())
    }

    /// Copies several values into slots as a parallel copy (through temporaries when a
    /// source is itself one of the destinations).
    fn parallel_store(&mut self, slots: &[TVal], vals: &[TVal]) -> Result<()> {
        // A value already in its slot's registers (a dot accumulating in place) stays:
        // no copy, and none may read it while its warpgroup group is in flight.
        let same = |slot: &TVal, v: &TVal| {
            matches!(
                (slot, v),
                (TVal::Data(Dist::Regs { regs: a, layout: la }), TVal::Data(Dist::Regs { regs: b, layout: lb }))
                    if a == b && la == lb
            )
        };
        let keep: Vec<bool> = slots.iter().zip(vals).map(|(s, v)| same(s, v)).collect();
        let (slots, vals): (Vec<TVal>, Vec<TVal>) = slots
            .iter()
            .zip(vals)
            .zip(&keep)
            .filter(|(_, k)| !**k)
            .map(|((s, v), _)| (s.clone(), v.clone()))
            .unzip();
        let (slots, vals) = (&slots[..], &vals[..]);
        let mut staged = vec![];
        for (slot, v) in slots.iter().zip(vals) {
            let tmp = self.carried_slot_like(slot)?;
            if let (TVal::Data(Dist::Regs { regs, .. }), TVal::Data(Dist::Regs { regs: t, .. })) =
                (slot, &tmp)
            {
                if let Some((width, vectors)) = self.packed_slots.get(&regs[0]).cloned() {
                    let fresh = vectors
                        .iter()
                        .map(|v| self.new_reg_ty(self.out.reg_ty(*v)))
                        .collect();
                    self.packed_slots.insert(t[0], (width, fresh));
                }
            }
            self.store_into(&tmp, v)?;
            staged.push(tmp);
        }
        for (slot, tmp) in slots.iter().zip(&staged) {
            self.store_into(slot, tmp)?;
        }
        Ok(())
    }

    fn carried_slot_like(&mut self, slot: &TVal) -> Result<TVal> {
        let dt_of = |x: &Self, d: &Dist| dist::dist_dtype(x, d);
        Ok(match slot {
            TVal::Data(d) => {
                let dt = dt_of(self, d);
                TVal::Data(self.fresh_like(d, dt))
            }
            TVal::Ptr { root, off } => {
                let dt = dt_of(self, off);
                TVal::Ptr {
                    root: *root,
                    off: self.fresh_like(off, dt),
                }
            }
            TVal::Staged { ring, .. } => TVal::Staged {
                ring: *ring,
                slot: self.new_reg(DType::I32),
            },
            TVal::Frags(f) => TVal::Frags(self.fresh_frags(&f.tile)),
        })
    }

    /// For a pointer tile of type `ty` in `layout`: the blocked layout whose threads
    /// hold the widest runs its element type allows along the last dimension, where
    /// `layout`'s runs are shorter (else `None`).
    fn wider_access_layout(&self, ty: &Type, layout: &LinearLayout) -> Option<LinearLayout> {
        let Some(crate::ir::Elem::Ptr(dt)) = ty.elem() else {
            return None;
        };
        let shape = ty.shape();
        let lanes = self.opt.wide_lanes(dt);
        let rank = shape.len();
        if rank == 0 || lanes < 2 || shape[rank - 1] < lanes {
            return None;
        }
        let last = rank - 1;
        let run = layout
            .reg_bases()
            .iter()
            .enumerate()
            .take_while(|(i, b)| (0..rank).all(|d| b[d] == if d == last { 1 << i } else { 0 }))
            .count();
        if (1u32 << run) >= lanes {
            return None;
        }
        let order: Vec<u32> = (0..rank as u32).rev().collect();
        LinearLayout::default_blocked(shape, &order, lanes, self.opt.warp_size, self.opt.num_warps)
            .ok()
    }

    fn fresh_like(&mut self, d: &Dist, dt: DType) -> Dist {
        match d {
            Dist::Uniform(_) => Dist::Uniform(self.new_reg(dt)),
            Dist::Regs { layout, regs } => Dist::Regs {
                layout: layout.clone(),
                regs: regs.iter().map(|_| self.new_reg(dt)).collect(),
            },
        }
    }

    /// Picks the layout a carried value lives in: its initial value's, unless that is
    /// uniform and the body makes it distributed (an accumulator), then the layout the
    /// body's yielded value will have.
    fn carried_layouts(
        &mut self,
        inits: &[Value],
        yields: &[Value],
        tys: &[Type],
    ) -> Result<Vec<TVal>> {
        let mut slots = vec![];
        for (i, init) in inits.iter().enumerate() {
            let iv = self.get(*init)?.clone();
            let ty = &tys[i];
            // An accumulator of a cooperative-matrix dot stays in fragments.
            if let Some(tile) = match yields.get(i) {
                Some(y) => self.coop_tile_of(*y)?,
                None => None,
            } {
                let slot = match &iv {
                    TVal::Frags(f) if f.tile == tile => self.fresh_frags(&f.tile),
                    _ => self.fresh_frags(&tile),
                };
                let zero = self.is_zero_tile(*init);
                self.store_frags(&slot, &iv, zero)?;
                slots.push(TVal::Frags(slot));
                continue;
            }
            let wider = match &iv {
                TVal::Ptr {
                    off: Dist::Regs { layout, .. },
                    ..
                } => self.wider_access_layout(ty, layout),
                _ => None,
            };
            let like = match (&iv, yields.get(i)) {
                (TVal::Data(Dist::Uniform(_)), Some(y)) if !ty.is_scalar() => {
                    let layout = self.predict_layout(*y)?;
                    let dt = ty.dtype().unwrap_or(DType::F32);
                    let n = layout.num_regs() as usize;
                    let _ = dt;
                    TVal::Data(Dist::Regs {
                        layout,
                        regs: vec![Reg(0); n],
                    })
                }
                (
                    TVal::Ptr {
                        root,
                        off: Dist::Uniform(_),
                    },
                    _,
                ) if !ty.is_scalar() => {
                    let layout = self.canonical(ty.shape())?;
                    let n = layout.num_regs() as usize;
                    TVal::Ptr {
                        root: *root,
                        off: Dist::Regs {
                            layout,
                            regs: vec![Reg(0); n],
                        },
                    }
                }
                // A carried pointer tile lives in the layout its accesses are widest in
                // (16 bytes a thread along the last dimension: 8 halves on PTX, where
                // the canonical layout gives 4), so that its loads and asynchronous
                // copies move whole 16-byte vectors; its first value converts once,
                // before the loop.
                (
                    TVal::Ptr {
                        root,
                        off: Dist::Regs { regs, .. },
                    },
                    _,
                ) if wider.is_some() => {
                    let layout = wider.clone().expect("checked by the guard");
                    let n = layout.num_regs() as usize;
                    TVal::Ptr {
                        root: *root,
                        off: Dist::Regs {
                            layout,
                            regs: vec![regs[0]; n],
                        },
                    }
                }
                _ => iv.clone(),
            };
            let slot = self.carried_slot(ty, &like)?;
            self.pack_slot(&slot, &iv);
            // A pointer tile given a wider layout than its first value's is recomputed
            // in it (its offsets are functions of their coordinates) rather than
            // moved through shared memory.
            let iv = match (&slot, &iv, wider.is_some()) {
                (
                    TVal::Ptr {
                        off: Dist::Regs { layout, .. },
                        ..
                    },
                    TVal::Ptr { root, .. },
                    true,
                ) => {
                    let dims: remat::DimMap = (0..layout.rank()).map(Some).collect();
                    let layout = layout.clone();
                    match self.remat_ptr(*init, &layout, &dims, 0)? {
                        Some(regs) => TVal::Ptr {
                            root: *root,
                            off: Dist::Regs { layout, regs },
                        },
                        None => iv,
                    }
                }
                _ => iv,
            };
            self.store_into(&slot, &iv)?;
            slots.push(slot);
        }
        Ok(slots)
    }

    /// The layout a value will have, without lowering it: a dot's accumulator layout,
    /// or the canonical layout of its shape.
    fn predict_layout(&self, v: Value) -> Result<LinearLayout> {
        let shape = self.shape(v);
        if let Some(dot) = self.defining_dot(v) {
            return Ok(self.dot_plan(&dot)?.layout().clone());
        }
        self.canonical(&shape)
    }

    /// The cooperative-matrix tiling `v` will be held in: that of the dot defining it.
    fn coop_tile_of(&self, v: Value) -> Result<Option<dot_coop::CoopTile>> {
        let mut found = None;
        self.k.walk(&mut |inst| {
            if inst.results.contains(&v) {
                found = Some(inst.clone());
            }
        });
        let Some(inst) = found else { return Ok(None) };
        match &inst.op {
            Op::Dot { .. } => self.coop_tile(&inst),
            // Fragments never live in a branch (see `if_op`).
            _ => Ok(None),
        }
    }

    fn defining_dot(&self, v: Value) -> Option<Inst> {
        let mut found = None;
        self.k.walk(&mut |inst| {
            if inst.results.contains(&v) && matches!(inst.op, Op::Dot { .. }) {
                found = Some(inst.clone());
            }
        });
        found
    }

    fn terminator(b: &Block) -> (Vec<Value>, Option<Value>) {
        match b.insts.last().map(|i| &i.op) {
            Some(Op::Yield(v)) => (v.clone(), None),
            Some(Op::Condition { cond, args }) => (args.clone(), Some(*cond)),
            _ => (vec![], None),
        }
    }

    fn for_loop(&mut self, inst: &Inst) -> Result<()> {
        let Op::For {
            lower,
            upper,
            step,
            init,
            body,
            ..
        } = &inst.op
        else {
            unreachable!()
        };
        let scalar = |x: &Self, v: Value| -> Result<Reg> {
            match x.data(v)? {
                Dist::Uniform(r) => Ok(r),
                _ => Err(Diagnostic::internal("loop bound is not a scalar")),
            }
        };
        let (lo, hi, st) = (
            scalar(self, *lower)?,
            scalar(self, *upper)?,
            scalar(self, *step)?,
        );
        let (yields, _) = Self::terminator(body);
        let tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        let slots = self.carried_layouts(init, &yields, &tys)?;
        let iv = self.new_reg(self.out.reg_ty(lo).dtype);
        self.vals
            .insert(body.args[0], TVal::Data(Dist::Uniform(iv)));
        for (a, s) in body.args[1..].iter().zip(&slots) {
            self.set(*a, s.clone());
        }
        self.open();
        for s in &slots {
            self.unpack_slot(s);
        }
        let in_place = self.in_place_candidates(body, &yields);
        let outer = (
            std::mem::replace(&mut self.in_place_dots, in_place),
            std::mem::replace(&mut self.awaiting_in_place, false),
            std::mem::replace(&mut self.wgmma_in_flight, false),
        );
        self.awaiting_in_place = !self.in_place_dots.is_empty();
        self.block(body)?;
        let ys: Vec<TVal> = yields
            .iter()
            .map(|y| self.get(*y).cloned())
            .collect::<Result<_>>()?;
        self.parallel_store(&slots, &ys)?;
        let body_stmts = self.close();
        self.span = inst.span;
        self.emit(Stmt::For {
            iv,
            lower: lo,
            upper: hi,
            step: st,
            body: body_stmts,
        });
        // The last iteration's warpgroup group completes before anything reads the
        // accumulators.
        if self.wgmma_in_flight {
            self.emit(Stmt::WgmmaWait { pending: 0 });
        }
        (
            self.in_place_dots,
            self.awaiting_in_place,
            self.wgmma_in_flight,
        ) = outer;
        if slots.iter().any(|s| matches!(s, TVal::Staged { .. })) {
            // Nothing may still be copying into the rings once the loop is done (the
            // prefetches past the end are empty), and no later write may race with
            // the last iteration's reads.
            self.emit(Stmt::AsyncWait { pending: 0 });
            self.emit(Stmt::Barrier);
        }
        for s in &slots {
            self.unpack_slot(s);
        }
        for (r, s) in inst.results.iter().zip(slots) {
            self.set(*r, s);
        }
        Ok(())
    }

    /// The dots of a loop `body` (yielding `yields`) that may accumulate in place into
    /// their carried registers: a top-level dot whose accumulator is a carried value
    /// used by it alone, and whose result only the yield reads, at the same position.
    fn in_place_candidates(
        &self,
        body: &Block,
        yields: &[Value],
    ) -> std::collections::HashSet<Value> {
        let mut out = std::collections::HashSet::new();
        if !self.opt.wgmma {
            return out;
        }
        for (i, y) in yields.iter().enumerate() {
            let Some(carried) = body.args.get(i + 1) else {
                continue;
            };
            let dot = body
                .insts
                .iter()
                .find(|inst| inst.results.first() == Some(y));
            if let Some(
                inst @ Inst {
                    op: Op::Dot { a, b, acc, .. },
                    ..
                },
            ) = dot
            {
                let alone = |v: &Value| self.uses.get(v).copied() == Some(1);
                let wgmma = matches!(self.dot_plan(inst), Ok(dot::DotPlan::Wgmma(_)));
                if wgmma && acc == carried && a != acc && b != acc && alone(acc) && alone(y) {
                    out.insert(*y);
                }
            }
        }
        out
    }

    fn if_op(&mut self, inst: &Inst) -> Result<()> {
        let Op::If {
            cond,
            then_block,
            else_block,
        } = &inst.op
        else {
            unreachable!()
        };
        let Dist::Uniform(c) = self.data(*cond)? else {
            return Err(Diagnostic::internal("if condition is not a scalar"));
        };
        // No cooperative-matrix operation runs in a branch: naga cannot prove one
        // uniform, and fragments assigned in a branch were lost on the H200 (fuzz seed
        // 310017). Accumulators the branches use are read into registers here, and dots
        // inside take another form (`coop_tile`).
        let mut used = vec![];
        for b in [then_block, else_block] {
            b.walk(&mut |i| used.extend(i.op.operands()));
        }
        let mut saved = vec![];
        for v in used {
            if saved.iter().any(|(s, _)| *s == v) {
                continue;
            }
            if let Some(TVal::Frags(f)) = self.vals.get(&v) {
                let f = f.clone();
                let d = self.materialize(&f)?;
                saved.push((v, TVal::Frags(f)));
                self.vals.insert(v, TVal::Data(d));
            }
        }
        self.if_depth += 1;
        let r = self.if_branches(inst, c);
        self.if_depth -= 1;
        for (v, t) in saved {
            self.vals.insert(v, t);
        }
        r
    }

    fn if_branches(&mut self, inst: &Inst, c: Reg) -> Result<()> {
        let Op::If {
            then_block,
            else_block,
            ..
        } = &inst.op
        else {
            unreachable!()
        };
        let (ty, _) = Self::terminator(then_block);
        let (ey, _) = Self::terminator(else_block);
        let tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        // Result slots take the layout the then-branch predicts.
        let mut slots = vec![];
        for (i, t) in tys.iter().enumerate() {
            let like = if t.is_scalar() {
                TVal::Data(Dist::Uniform(Reg(0)))
            } else {
                let layout = self.predict_layout(ty[i])?;
                let n = layout.num_regs() as usize;
                let d = Dist::Regs {
                    layout,
                    regs: vec![Reg(0); n],
                };
                if t.elem().is_some_and(|e| e.is_ptr()) {
                    TVal::Ptr {
                        root: u32::MAX,
                        off: d,
                    }
                } else {
                    TVal::Data(d)
                }
            };
            slots.push(like);
        }
        let mut then_stmts = vec![];
        let mut else_stmts = vec![];
        let mut real_slots: Vec<Option<TVal>> = vec![None; tys.len()];
        for (branch, yields, out) in [
            (then_block, &ty, &mut then_stmts),
            (else_block, &ey, &mut else_stmts),
        ] {
            self.open();
            self.block(branch)?;
            for (i, y) in yields.iter().enumerate() {
                let yv = self.get(*y)?.clone();
                if real_slots[i].is_none() {
                    let mut like = slots[i].clone();
                    if let (TVal::Ptr { root, .. }, TVal::Ptr { root: yr, .. }) = (&mut like, &yv) {
                        *root = *yr;
                    }
                    let slot = self.carried_slot(&tys[i], &like)?;
                    real_slots[i] = Some(slot);
                }
                let slot = real_slots[i].clone().expect("slot");
                self.store_into(&slot, &yv)?;
            }
            *out = self.close();
        }
        self.span = inst.span;
        self.emit(Stmt::If {
            cond: c,
            then_body: then_stmts,
            else_body: else_stmts,
        });
        for (r, s) in inst.results.iter().zip(real_slots) {
            let s = s.ok_or_else(|| Diagnostic::internal("if result without a yield"))?;
            self.set(*r, s);
        }
        Ok(())
    }

    fn while_loop(&mut self, inst: &Inst) -> Result<()> {
        let Op::While {
            init,
            before,
            after,
        } = &inst.op
        else {
            unreachable!()
        };
        let tys: Vec<Type> = before.args.iter().map(|a| self.k.ty(*a).clone()).collect();
        let (after_yields, _) = Self::terminator(after);
        let slots = self.carried_layouts(init, &after_yields, &tys)?;
        for (a, s) in before.args.iter().zip(&slots) {
            self.set(*a, s.clone());
        }
        self.open();
        for s in &slots {
            self.unpack_slot(s);
        }
        self.block(before)?;
        let (fwd, cond) = Self::terminator(before);
        let cond = cond.ok_or_else(|| Diagnostic::internal("while without condition"))?;
        let Dist::Uniform(c) = self.data(cond)? else {
            return Err(Diagnostic::internal("while condition is not a scalar"));
        };
        // The forwarded values become the after-block's arguments and the results.
        let res_tys: Vec<Type> = inst.results.iter().map(|r| self.k.ty(*r).clone()).collect();
        let mut fslots = vec![];
        for (i, f) in fwd.iter().enumerate() {
            let fv = self.get(*f)?.clone();
            let slot = self.carried_slot(&res_tys[i], &fv)?;
            self.store_into(&slot, &fv)?;
            fslots.push(slot);
        }
        let cond_body = self.close();
        for (a, s) in after.args.iter().zip(&fslots) {
            self.set(*a, s.clone());
        }
        self.open();
        for s in &fslots {
            self.unpack_slot(s);
        }
        self.block(after)?;
        let ys: Vec<TVal> = after_yields
            .iter()
            .map(|y| self.get(*y).cloned())
            .collect::<Result<_>>()?;
        self.parallel_store(&slots, &ys)?;
        let body = self.close();
        self.span = inst.span;
        self.emit(Stmt::While {
            cond_body,
            cond: c,
            body,
            span: inst.span,
        });
        for s in &fslots {
            self.unpack_slot(s);
        }
        for (r, s) in inst.results.iter().zip(fslots) {
            self.set(*r, s);
        }
        Ok(())
    }
}
