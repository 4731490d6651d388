//! Pass: tile IR (block pointers already lowered) to Thread IR.
//!
//! Each tile value becomes a [`Dist`]: either one register shared by every element
//! (`Uniform`: constants, splats, scalars, broadcasts of those) or a linear layout with
//! one register per layout register. Pointer tiles are a root buffer parameter plus a
//! `Dist` of integer element offsets; a pointer whose root is not one kernel argument is
//! a compile error. The files:
//! - this file: [`ExpandOptions`], the lowered values ([`TVal`]), the [`Expander`]
//!   and its state, statement and register builders, the kernel prologue, and the
//!   dispatch of each instruction to its lowering;
//! - [`dist`]: distributed values, thread coordinates, layout conversions through
//!   shared memory, operand alignment, splats and broadcasts, free layout changes
//!   (`expand_dims`, `reshape`, `permute`);
//! - [`elementwise`]: elementwise ops, and pointer arithmetic (`addptr`, `select`);
//! - [`remat`]: recomputing index arithmetic in another layout instead of moving it;
//! - [`control`]: `for`, `while`, `if`, and the registers of carried values;
//! - [`packing`]: values kept in the vector registers of their wide loads (staging
//!   stores, loop-carried 16-bit tiles kept packed);
//! - [`memory`]: loads, stores, atomics, staged (asynchronous) loads into rings;
//! - [`reduce`]: reductions and scans;
//! - [`dot`]: the dot plan, its FMA and `mma.sync` forms and the staging of operands;
//!   [`dot_coop`]: the cooperative-matrix form; [`dot_wgmma`]: the warpgroup form;
//!   [`shared_tile`]: how a staged operand lies in shared memory;
//! - [`checked`]: checked mode (bounds tests, `device_assert`, hint and block-pointer
//!   checks, `device_print`).

// Registers of several operands are walked in parallel by index throughout.
#![allow(clippy::needless_range_loop)]

mod address;
mod checked;
mod control;
mod dist;
pub(crate) mod dot;
pub(crate) mod dot_coop;
pub(crate) mod dot_wgmma;
mod elementwise;
mod memory;
mod memory_tma;
mod packing;
mod reduce;
mod remat;
pub(crate) mod shared_tile;

use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::ir::ops::{Const, Op};
use crate::ir::{Block, DType, Elem, Inst, Kernel, Value};
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
    /// Whether f32 dots at tf32 precision also take the warpgroup form (tf32 `wgmma`
    /// reads shared operands K-major only: a row-major `b` runs as `C^T = B^T A^T`
    /// with [`Self::wgmma_register_a`], else it is transposed through registers, only
    /// for tiles of 128x256 or more, see `dot_wgmma::plan_with`). The CUDA backend sets
    /// it with `wgmma` (sm_90a); off in the plain PTX options.
    pub wgmma_tf32: bool,
    /// Whether a tf32 `wgmma` whose `b` is row-major in memory runs as `C^T = B^T A^T`
    /// instead (`dot_wgmma::WgmmaPlan::swapped`): `b` staged row-major and read into
    /// registers as the instruction's `a`, `a` staged K-major as its `b`, so that no
    /// tile is transposed on its way to shared memory. The CUDA backend sets it with
    /// `wgmma_tf32` (`TILEWISE_WGMMA_TF32=held` turns it off, for comparison).
    pub wgmma_register_a: bool,
    /// Whether staged `wgmma` operands loaded through block pointers (and tensor
    /// descriptors) may be copied by the tensor memory accelerator ([`Stmt::TmaLoad`],
    /// sm_90): one thread copies a tile's box, tracked by a transaction barrier, where
    /// the specialization proves the tensor map valid (`memory_tma.rs`).
    pub tma: bool,
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
    /// Whether a computed tile (a dot's accumulator) whose layout stores narrower
    /// vectors than its pointer tile's own layout goes through shared memory into that
    /// layout, to be stored 16 bytes a thread (a GPU whose stores cost by the lines a
    /// warp's store touches, with shared memory to spare: PTX).
    pub staged_stores: bool,
    /// The most of the tile, in bytes, one round of a staged store
    /// ([`Self::staged_stores`]) holds in shared memory: a larger tile moves in rounds
    /// over coordinate bits that registers alone decide (each behind its own barriers).
    /// The CUDA backend halves it where a kernel does not fit the device's shared
    /// memory, before it shortens the pipelines.
    pub staged_store_bytes: u32,
    /// Stores of 8 bytes a thread (an f32 accumulator's pairs) are staged
    /// ([`Self::staged_stores`]) only in tiles above this many bytes, where their
    /// number costs more than the shared memory ([`DEFAULT_STAGED_PAIRS_ABOVE`]); narrower
    /// stores are staged in tiles of 4 KiB or more.
    pub staged_pairs_above: u32,
    /// Whether shared arrays of different dtypes may take turns in one memory
    /// ([`crate::thread_ir::SharedArray::overlays`]): a device whose shared memory is one
    /// byte space (PTX), not WGSL's typed workgroup arrays.
    pub shared_overlays: bool,
    /// Whether the tensor-core operands of a pipelined `dot` may be copied to shared
    /// memory asynchronously ([`Stmt::AsyncCopy`], PTX `cp.async`) into a ring of
    /// `num_stages` buffers, instead of being prefetched into registers.
    pub async_copies: bool,
    /// The shared memory, in bytes, the rings of one pipelined loop may take (fewer
    /// stages, down to 2, or the register prefetch where they would not fit).
    pub ring_budget: u32,
    /// Whether the rings of warpgroup dots may take one slot more than their stages
    /// where the budget allows (`lower::pipeline`, `Staging::slack`). The CUDA backend
    /// gives it up first where a kernel does not fit the device's shared memory.
    pub ring_slack: bool,
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
    /// The most shared memory, in bytes, that one layout conversion or one
    /// cross-thread reduction uses at once: a larger tile moves in rounds, a subset of
    /// each thread's registers at a time (those sharing the value of some coordinate
    /// bits that registers alone decide), each round behind its own barriers. `None`:
    /// whole tiles at once (fewest barriers); the backends set a bound when a kernel
    /// does not fit the device's shared memory otherwise.
    pub scratch_bytes: Option<u32>,
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
    /// Whether global memory has addresses a kernel may compute with (PTX): pointers
    /// as data, casts between pointers and integers. Without them (WGSL) those casts
    /// are refused by name.
    pub global_addresses: bool,
    /// The software-pipelining depth of `dot` loops that do not give their own
    /// (`tl.range(..., num_stages=)`): the launch's `num_stages` (Triton's config
    /// option); `None` chooses by tile size, 1 turns pipelining off.
    pub num_stages: Option<u32>,
    /// Into how many slices (a power of two) the K tile of each `dot` fed by loads is
    /// split, its operands staged a slice at a time in less shared memory
    /// ([`crate::lower::split_k_tile`]); fewer where a slice would change the dot's
    /// form. 1 (the default) leaves dots whole; the backends raise it when a kernel
    /// does not fit the device's shared memory otherwise.
    pub k_slices: u32,
    /// Whether a dot operand computed before a loop is staged in shared memory once,
    /// ahead of the loop (the default), rather than every trip: fewer stores, but its
    /// array is held across the loop. The PTX backend turns it off where holding it
    /// would let fewer blocks share a multiprocessor.
    pub stage_invariant_operands_once: bool,
}

/// [`ExpandOptions::staged_store_bytes`] unless a backend says otherwise: a 128x256
/// tile of 16-bit elements in one round, of f32 in two.
pub const DEFAULT_STAGED_STORE_BYTES: u32 = 64 * 1024;

/// [`ExpandOptions::staged_pairs_above`] unless a backend says otherwise: on the H200
/// staging tutorial 03's 128x256 f32 accumulator took 4096^3 f16 from 229.9 to 226.6 us
/// (run 106), and attention's 64 KiB f32 outputs stay as they are.
pub const DEFAULT_STAGED_PAIRS_ABOVE: u32 = 64 * 1024;

/// The start of the note the lowering writes for a store staged through shared memory
/// ([`ExpandOptions::staged_stores`]).
pub const STAGED_STORE_NOTE: &str = "stored through shared memory in wide vectors";

/// The note the lowering writes for a dot operand staged ahead of its loop
/// ([`ExpandOptions::stage_invariant_operands_once`]).
pub const STAGED_AHEAD_NOTE: &str = "staged once, ahead of its loop";

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
            wgmma_register_a: false,
            tma: false,
            vector_bytes: 16,
            wide_16bit: false,
            wide_f16: false,
            max_lanes: 4,
            warp_shuffle: false,
            staged_stores: false,
            staged_store_bytes: DEFAULT_STAGED_STORE_BYTES,
            staged_pairs_above: DEFAULT_STAGED_PAIRS_ABOVE,
            shared_overlays: false,
            async_copies: false,
            ring_budget: DEFAULT_RING_BUDGET,
            ring_slack: true,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            scratch_bytes: None,
            native_i64: false,
            checked: false,
            num_stages: None,
            k_slices: 1,
            stage_invariant_operands_once: true,
            native_f16: false,
            native_exp_log: true,
            global_addresses: false,
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
            wgmma_register_a: false,
            tma: false,
            vector_bytes: 16,
            wide_16bit: true,
            wide_f16: true,
            max_lanes: 8,
            warp_shuffle: true,
            staged_stores: true,
            staged_store_bytes: DEFAULT_STAGED_STORE_BYTES,
            staged_pairs_above: DEFAULT_STAGED_PAIRS_ABOVE,
            shared_overlays: true,
            async_copies: true,
            ring_budget: DEFAULT_RING_BUDGET,
            ring_slack: true,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            scratch_bytes: None,
            native_i64: true,
            checked: false,
            num_stages: None,
            k_slices: 1,
            stage_invariant_operands_once: true,
            native_f16: false,
            native_exp_log: false,
            global_addresses: true,
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
            wgmma_register_a: false,
            tma: false,
            vector_bytes: 0,
            wide_16bit: false,
            wide_f16: false,
            max_lanes: 4,
            warp_shuffle: false,
            staged_stores: false,
            staged_store_bytes: DEFAULT_STAGED_STORE_BYTES,
            staged_pairs_above: DEFAULT_STAGED_PAIRS_ABOVE,
            shared_overlays: false,
            async_copies: false,
            ring_budget: DEFAULT_RING_BUDGET,
            ring_slack: true,
            coop_matrix: vec![],
            subgroup_reduce: false,
            coop_scratch_bytes: 8 * 1024,
            scratch_bytes: None,
            native_i64: true,
            checked: false,
            num_stages: None,
            k_slices: 1,
            stage_invariant_operands_once: true,
            native_f16: false,
            native_exp_log: true,
            global_addresses: true,
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

/// Staged tiles loaded into registers and stored into their ring slots by a later
/// staged load of the ring (`memory.rs`, tiles transposed through registers): a queue
/// of `entries` (each the tile's registers and its slot's first element, reassigned
/// by every load of the ring), oldest first, `count` of them filled at this point of
/// the expansion, and the loop depth of the load that filled the last.
#[derive(Clone, Debug)]
pub(crate) struct HeldTiles {
    pub layout: LinearLayout,
    pub entries: Vec<(Vec<Reg>, Reg)>,
    pub count: usize,
    pub level: usize,
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
    /// Filled by the tensor memory accelerator: the array of the slots' transaction
    /// barriers; `next` then counts loads modulo `2 * stages` (`memory_tma.rs`).
    pub bars: Option<u32>,
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
    /// The statement list (its depth in `stmts`) and source line of the last
    /// [`Stmt::Loc`] emitted, so that one line's instructions share one.
    located: Option<(usize, u32)>,
    /// Registers that are lane `.1` of vector register `.0` (from wide loads and packed
    /// slots), so that a wide shared-memory store of the same lanes reuses the vector
    /// (`packing.rs`).
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
    /// Tiles loaded and not yet stored, by ring ([`HeldTiles`]).
    pub(crate) held_tiles: HashMap<u32, HeldTiles>,
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
    /// Resets of in-place warpgroup accumulators: `select(splat(c), 0, carried)` feeding
    /// such a dot (a flattened persistent loop's new tile, `lower/flatten_loops.rs`)
    /// takes the carried registers as they are, and the dot's first MMA ignores them
    /// where `c` holds (`Stmt::Wgmma::zero_acc`). By the select's result, `c`.
    pub(crate) wgmma_resets: HashMap<Value, Value>,
    /// The `for` loops being lowered, outermost first (`dot.rs` stages a dot operand
    /// computed before a loop once, ahead of it).
    pub(crate) loops: Vec<LoopFrame>,
    /// Dot operands staged ahead of a loop: by (value, staged tile, dtype), the array
    /// and the depth of the statement list the stores went into (valid while it is
    /// open, as `remat_memo`).
    pub(crate) hoisted_operands: HashMap<(Value, String, DType), (u32, usize)>,
    /// Operands of the instruction being lowered that are held as fragments and were
    /// read back into registers just before it (in the current statement list).
    pub(crate) materialized_now: Vec<Value>,
    /// Loads of a cooperative-matrix dot's operands from memory contiguous along their
    /// first dimension (`a` along M, `b` along K), directly or through a loop-carried
    /// value all of whose loads are such (the pipeline's prefetch): loaded in runs along
    /// that dimension and staged `[K][M]` or `[N][K]`
    /// ([`Expander::transposed_operand_loads`]).
    pub(crate) transposed_loads: std::collections::HashSet<Value>,
}

/// A `for` loop being lowered.
pub(crate) struct LoopFrame {
    /// The depth in `Expander::stmts` of the statement list the loop goes into.
    pub level: usize,
    /// Every value its body defines (block arguments and results, nested ones too).
    pub defined: std::collections::HashSet<Value>,
}

impl<'k> Expander<'k> {
    fn new(k: &'k Kernel, opt: &ExpandOptions) -> Self {
        let mut x = Self::bare(k, opt);
        x.transposed_loads = x.transposed_operand_loads();
        x
    }

    fn bare(k: &'k Kernel, opt: &ExpandOptions) -> Self {
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
            held_tiles: HashMap::new(),
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
            wgmma_resets: HashMap::new(),
            loops: vec![],
            hoisted_operands: HashMap::new(),
            materialized_now: vec![],
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
            located: None,
            transposed_loads: Default::default(),
        }
    }

    /// Runs `f` with new statements going to the kernel-entry list.
    pub fn hoist<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.located = None;
        let saved = std::mem::replace(&mut self.stmts, vec![std::mem::take(&mut self.hoisted)]);
        let r = f(self);
        self.hoisted = self.close();
        self.stmts = saved;
        r
    }

    /// Runs `f` with new statements going to the end of the open statement list at
    /// depth `level` (an enclosing one: ahead of the loop being lowered there).
    pub(crate) fn emit_at_level<T>(&mut self, level: usize, f: impl FnOnce(&mut Self) -> T) -> T {
        let inner = self.stmts.split_off(level + 1);
        self.located = None;
        let r = f(self);
        self.stmts.extend(inner);
        self.located = None;
        r
    }

    /// Opens a nested statement list.
    pub fn open(&mut self) {
        self.stmts.push(vec![]);
        self.located = None;
    }

    /// Closes the innermost statement list; what was computed inside is forgotten.
    pub fn close(&mut self) -> Vec<Stmt> {
        self.located = None;
        let depth = self.stmts.len();
        self.remat_memo.retain(|_, (_, level)| *level < depth);
        self.hoisted_operands.retain(|_, (_, level)| *level < depth);
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
            overlays: None,
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
            self.locate(inst.span);
            self.inst(inst)?;
        }
        Ok(())
    }

    /// Marks the statements that follow in the current list as coming from the
    /// instruction at `span` ([`Stmt::Loc`]), once per source line and list.
    fn locate(&mut self, span: Span) {
        if span.is_none() {
            return;
        }
        let line = self.k.line_of(span);
        let list = self.stmts.len();
        if self.located != Some((list, line)) {
            self.located = Some((list, line));
            self.emit(Stmt::Loc(span));
        }
    }

    /// Lowers `inst`, reading its operands that are cooperative-matrix accumulators
    /// back into registers first (for this use only: the registers are assigned here,
    /// which need not dominate later uses). Control flow carries them as they are, and
    /// a dot takes its accumulator as fragments.
    fn inst(&mut self, inst: &Inst) -> Result<()> {
        self.await_in_place_reads(inst);
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
        self.materialized_now = saved.iter().map(|(v, _)| *v).collect();
        let r = self.inst_regs(inst);
        self.materialized_now.clear();
        for (v, t) in saved {
            self.vals.insert(v, t);
        }
        r
    }

    /// A flattened loop's reset `select(splat(c), 0, carried)` (`lower/flatten_loops.rs`)
    /// of a carried tile nothing else reads: the carried registers are zeroed in a
    /// branch, taken once a tile, and become the select's result, instead of a select
    /// a register every iteration. (In-place warpgroup accumulators take
    /// `wgmma_resets` instead.) Whether it applied.
    fn branch_reset(&mut self, inst: &Inst) -> Result<bool> {
        let r = inst.results[0];
        let Some((c, carried)) = self.reset_of(r) else {
            return Ok(false);
        };
        let dt = self.dtype(r);
        if self.uses.get(&carried).copied() != Some(1)
            || self.k.value(carried).def != crate::ir::ValueDef::BlockArg
            || !matches!(dt, DType::F32 | DType::I32)
        {
            return Ok(false);
        }
        let (Dist::Uniform(cond), TVal::Data(Dist::Regs { regs, layout })) =
            (self.data(c)?, self.get(carried)?.clone())
        else {
            return Ok(false);
        };
        if regs.iter().any(|x| self.out.reg_ty(*x).dtype != dt) {
            return Ok(false);
        }
        let zero = match dt {
            DType::F32 => self.constant(dt, Const::Float(0.0)),
            _ => self.int_const(dt, 0),
        };
        self.open();
        for x in &regs {
            self.emit(Stmt::Assign {
                dst: *x,
                expr: Expr::Copy(zero),
            });
        }
        let then_body = self.close();
        self.emit(Stmt::If {
            cond,
            then_body,
            else_body: vec![],
        });
        self.set(r, TVal::Data(Dist::Regs { layout, regs }));
        Ok(true)
    }

    /// Completes the warpgroup group in flight before `inst` reads the result of an
    /// in-place dot. Only reads inside an `if` make a dot in place, and `if_branches`
    /// waits at the start of a branch that reads (starting each branch with the state
    /// before the `if`, and leaving that state after it); this is the rule's safety net
    /// for any other read.
    fn await_in_place_reads(&mut self, inst: &Inst) {
        if !self.wgmma_in_flight
            || self.in_place_dots.is_empty()
            || matches!(inst.op, Op::Yield(_) | Op::If { .. })
        {
            return;
        }
        let mut reads = inst.op.operands();
        for b in inst.op.blocks() {
            b.walk(&mut |i| reads.extend(i.op.operands()));
        }
        if reads.iter().any(|v| self.in_place_dots.contains(v)) {
            self.emit(Stmt::WgmmaWait { pending: 0 });
            self.wgmma_in_flight = false;
        }
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
            Op::Splat(x) | Op::Broadcast(x) => self.splat_or_broadcast(inst, *x)?,
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
            Op::Select { on_false, .. } if self.wgmma_resets.contains_key(&inst.results[0]) => {
                // An in-place accumulator's reset: the MMA ignores the registers.
                let carried = self.get(*on_false)?.clone();
                self.set(inst.results[0], carried);
            }
            Op::Select { .. } if self.branch_reset(inst)? => {}
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
            Op::Cast { value, .. }
                if self.k.ty(*value).elem().is_some_and(|e| e.is_ptr())
                    || self
                        .k
                        .ty(inst.results[0])
                        .elem()
                        .is_some_and(|e| e.is_ptr()) =>
            {
                self.pointer_cast(inst, *value)?
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
}
