//! The Thread IR: what one thread of a program instance does.
//!
//! # Contract
//!
//! - One program instance of the tile IR is one workgroup (WGSL) or CTA (PTX) of
//!   [`ThreadKernel::threads`] threads. Every tile has been distributed over the
//!   threads by a layout (see `lower::layout`), so values here are per-thread
//!   **registers**: scalars, or short vectors for vectorized global accesses.
//! - Registers are typed virtual registers. Most are assigned once; loop-carried state
//!   (an accumulator, a loop-carried block pointer offset) is a register assigned before
//!   a loop and again at the end of its body. Printers declare each register once.
//! - Control flow is structured: [`Stmt::For`], [`Stmt::If`], [`Stmt::While`].
//!   [`Stmt::Barrier`] appears only where every thread of the program reaches it
//!   (uniform control flow); the lowering guarantees this.
//! - Global memory is reached through buffer parameters and an element index,
//!   `buf[index]`, or, for pointers made from addresses (pointers as data), through
//!   [`FLAT`]: `index` is then the address divided by the access's element size, or
//!   through [`BYTE_ADDRESS`]: `index` is the address itself (copies whose addresses
//!   are carried across a loop). A load with a mask never reads memory where the mask
//!   is false (the printer selects or branches; it never relies on robust buffer
//!   access); a masked store writes nothing there.
//! - Shared memory is a list of typed arrays ([`ThreadKernel::shared`]), indexed in
//!   elements; the lowering pads or swizzles indices against bank conflicts.
//! - Semantics of arithmetic are the tile IR's (`ir::ops`): C division, wrapping
//!   integers, shifts past the width give 0 or the sign, minnum/maxnum, saturating
//!   float-to-int casts. Printers must emit code with exactly these semantics.
//! - From the `math` pass on (`lower::math`), the functions no target has are written
//!   out: no `erf`, `tanh` or `pow` below f64, `exp` / `log` only where the options say
//!   they are native, `sin` / `cos` only of arguments reduced to about `[-pi, pi]`, and
//!   f16 / bf16 registers are only moved, cast and compared (their arithmetic is in f32,
//!   except f16 on a target that computes it natively).

pub mod checks;
mod parse;
mod print;
mod scopes;
pub mod sim;
pub mod tma;
pub mod uniformity;
pub mod verify;
mod visit;
pub use visit::{count_writes, renumber_shared_arrays, writes_in};
mod wgmma;

pub use parse::parse;
pub use print::print;
pub use scopes::{bindings, Binding};
pub use wgmma::{SmemMatrix, WgmmaA, WgmmaShape};

/// Builders shared by the unit tests of the Thread IR passes.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Expr, Param, ParamKind, Reg, RegTy, Stmt, ThreadKernel};
    use crate::ir::DType;

    /// `r{dst} = expr`.
    pub fn assign(dst: u32, expr: Expr) -> Stmt {
        Stmt::Assign {
            dst: Reg(dst),
            expr,
        }
    }

    /// A 32-thread kernel of `body` over `nregs` i32 registers, with one written i32
    /// buffer `out` (parameter 0).
    pub fn i32_kernel(nregs: usize, body: Vec<Stmt>) -> ThreadKernel {
        ThreadKernel {
            name: "t".into(),
            params: vec![Param {
                name: "out".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::I32,
                    written: true,
                },
            }],
            threads: 32,
            shared: vec![],
            regs: vec![RegTy::scalar(DType::I32); nregs],
            frags: vec![],
            body,
            notes: vec![],
            source: None,
            checks: None,
        }
    }
}

use crate::ir::{AtomicOp, BinaryOp, CmpPred, Const, DType, UnaryOp};

/// A virtual register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reg(pub u32);

impl std::fmt::Display for Reg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "r{}", self.0)
    }
}

/// The type of a register: a scalar, or a vector of 2 or 4 lanes (for wide accesses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RegTy {
    pub dtype: DType,
    /// 1 for a scalar; 2 or 4 for a vector.
    pub lanes: u8,
}

impl RegTy {
    pub fn scalar(dtype: DType) -> RegTy {
        RegTy { dtype, lanes: 1 }
    }
}

impl std::fmt::Display for RegTy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lanes == 1 {
            write!(f, "{}", self.dtype)
        } else {
            write!(f, "vec{}<{}>", self.lanes, self.dtype)
        }
    }
}

/// The `buf` of a global access through an address rather than a buffer parameter
/// (a pointer loaded from memory or cast from an integer): its `index` counts elements
/// of the access's type from address 0, so the byte address is `index * size`.
/// Targets without global addresses (WGSL) never see it: the lowering refuses the cast
/// that makes such a pointer.
pub const FLAT: u32 = u32::MAX - 1;

/// The `buf` of a global access whose `index` (an `i64`) is the byte address of its
/// first element, a multiple of the element's size: what `lower::carried_addresses`
/// advances across a loop, so that no shift turns an element index into an address
/// on each trip. Targets with global addresses only, as [`FLAT`].
pub const BYTE_ADDRESS: u32 = u32::MAX - 2;

/// Whether `buf` is an address ([`FLAT`] or [`BYTE_ADDRESS`]) rather than a buffer
/// parameter.
pub fn is_address(buf: u32) -> bool {
    buf == FLAT || buf == BYTE_ADDRESS
}

/// A kernel parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A global buffer of `dtype` elements; `written` when the kernel stores or does
    /// atomics through it (read-only bindings otherwise).
    Buffer { dtype: DType, written: bool },
    /// A scalar argument.
    Scalar { dtype: DType },
    /// A tensor map ([`tma::TensorMap`]) the host builds from other arguments at
    /// launch; no argument feeds it (launchers skip it when they pair arguments with
    /// parameters). Targets with TMA only.
    TensorMap(tma::TensorMap),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

/// A workgroup-shared array.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedArray {
    pub name: String,
    pub dtype: DType,
    pub len: u32,
    /// The alignment of its first element in bytes (16, or the 256 to 1024 a swizzled
    /// `wgmma` operand needs: the hardware's swizzle reads absolute address bits).
    pub align: u32,
    /// The array of another dtype whose memory this one takes over (it starts where
    /// that one starts and is no larger), a barrier apart in lifetime
    /// (`lower::shared_reuse`, on backends whose shared memory is one byte space: PTX).
    /// Always an earlier array that overlays none.
    pub overlays: Option<u32>,
}

/// Values only the hardware knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// Linear thread index within the program, `0..threads`.
    ThreadId,
    /// `tl.program_id(axis)`.
    ProgramId(u8),
    /// `tl.num_programs(axis)`.
    NumPrograms(u8),
    /// The index of the thread's subgroup (WGSL `subgroup_id`), `0..threads / 32`:
    /// which fragments of a cooperative-matrix dot it works on. Only lowerings for
    /// subgroups of exactly 32 threads use it; which threads share a subgroup is not
    /// known, so nothing else may depend on it.
    SubgroupId,
    /// The thread's index within its subgroup (WGSL `subgroup_invocation_id`).
    SubgroupInvocationId,
}

/// The combination a [`Expr::SubgroupReduce`] applies: `Add` on integers and floats,
/// `Max` / `Min` on integers only (float NaN and signed zeros are the lowering's to
/// handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubgroupOp {
    Add,
    Max,
    Min,
}

/// A right-hand side.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A constant of the destination's type.
    Const(Const),
    Special(Special),
    /// The value of scalar parameter `i`.
    Param(u32),
    /// The address of buffer parameter `i`'s first element, a 64-bit integer (a
    /// pointer cast to an integer; targets with global addresses only).
    Address(u32),
    Copy(Reg),
    Unary(UnaryOp, Reg),
    Binary(BinaryOp, Reg, Reg),
    Cmp(CmpPred, Reg, Reg),
    Select {
        cond: Reg,
        on_true: Reg,
        on_false: Reg,
    },
    Fma(Reg, Reg, Reg),
    /// Conversion to the destination's dtype (see `ir::Op::Cast`).
    Cast {
        value: Reg,
        bitcast: bool,
    },
    /// `buf[index]` (a vector of the destination's lanes starting there when wide;
    /// the lowering proved alignment). With a mask, `other` where it is false and no
    /// memory access.
    Load {
        buf: u32,
        index: Reg,
        mask: Option<Reg>,
        other: Option<Reg>,
    },
    /// `shared[arr][index]`; with a vector destination, the destination's lanes
    /// consecutive elements starting there (`index` a multiple of the lane count).
    SharedLoad {
        arr: u32,
        index: Reg,
    },
    /// Lane `lane` of a vector register.
    Extract {
        vector: Reg,
        lane: u8,
    },
    /// A vector from scalar registers.
    Construct(Vec<Reg>),
    /// The value of scalar register `value` in the thread whose id is this thread's
    /// XOR `mask` (`mask` < 32, so the partner is in the same warp of 32): a butterfly
    /// step of a warp reduction (PTX `shfl.sync.bfly`). Every thread of the warp
    /// executes it together, so only in uniform control flow.
    ShuffleXor {
        value: Reg,
        mask: u32,
    },
    /// `value` combined by `op` over every thread of this thread's subgroup, the same
    /// result in each (WGSL `subgroupAdd` / `subgroupMax` / `subgroupMin`). Which
    /// threads share a subgroup is not known: the lowering only combines values that
    /// belong together whatever the grouping. Every thread of the program executes it
    /// together (uniform control flow, never inside an `If`).
    SubgroupReduce {
        op: SubgroupOp,
        value: Reg,
    },
    /// `value`, which the lowering guarantees is the same in every thread of each warp
    /// (a butterfly reduction's result: both partners of each step compute one value):
    /// a copy that tells the uniformity analysis so, which cannot follow the butterfly.
    /// The simulator checks the claim.
    WarpUniform(Reg),
}

/// A statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// The statements that follow in this list, up to the next `Loc`, come from the
    /// tile-IR instruction at this source span (within [`ThreadKernel::source`]):
    /// printers write the source line beside them and name it in their errors.
    Loc(crate::diag::Span),
    /// `dst = expr`.
    Assign { dst: Reg, expr: Expr },
    /// `buf[index] = value` where `mask` (if any) is true; a vector `value` writes its
    /// lanes to consecutive elements from `index` (aligned to the whole vector).
    Store {
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    },
    /// `shared[arr][index] = value`.
    SharedStore { arr: u32, index: Reg, value: Reg },
    /// Atomic read-modify-write; `dst` receives the old value.
    Atomic {
        dst: Reg,
        op: AtomicOp,
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    },
    /// Compare-and-swap; `dst` receives the old value.
    AtomicCas {
        dst: Reg,
        buf: u32,
        index: Reg,
        cmp: Reg,
        value: Reg,
    },
    /// Workgroup barrier with shared-memory ordering.
    Barrier,
    /// Workgroup barrier that also orders global memory among the program's threads
    /// (PTX `bar.sync` does both; WGSL `storageBarrier()`): `tl.debug_barrier()`, and
    /// before an atomic one thread performs for the whole program (a lock's release
    /// must follow every thread's writes). Uniform control flow only, as `Barrier`.
    StorageBarrier,
    /// `shared[arr][shared_index + l] = buf[index + l]` for `l < lanes` (4, 8 or 16
    /// bytes, both addresses aligned to the whole copy), asynchronously (PTX
    /// `cp.async`): where `mask` is false, zeros are written and global memory is not
    /// read. The copy belongs to the thread's next [`Stmt::AsyncCommit`] group and is
    /// complete after an [`Stmt::AsyncWait`] that leaves that group out of its pending
    /// ones; other threads see it after a following barrier. Until then the
    /// destination's contents are undefined.
    AsyncCopy {
        arr: u32,
        shared_index: Reg,
        buf: u32,
        index: Reg,
        lanes: u8,
        mask: Option<Reg>,
    },
    /// Closes the group of this thread's asynchronous copies issued since the last
    /// commit (PTX `cp.async.commit_group`).
    AsyncCommit,
    /// Waits until at most `pending` of this thread's committed copy groups (the most
    /// recent ones) are incomplete (PTX `cp.async.wait_group`).
    AsyncWait { pending: u32 },
    /// Initialises the transaction barrier `shared[arr][index]` (an `i64` array, PTX
    /// `mbarrier.init`) for `count` arrivals a phase, its current phase numbered 0, and
    /// makes the initialisation visible to the asynchronous proxy; other threads may
    /// use it after a following barrier. Nothing may be pending on it.
    MbarrierInit { arr: u32, index: Reg, count: u32 },
    /// Arrives on barrier `shared[arr][index]` and adds `bytes` to the transactions its
    /// current phase waits for (PTX `mbarrier.arrive.expect_tx`): the phase completes
    /// when its arrivals are in and the copies completing on it have delivered that
    /// many bytes.
    MbarrierArriveTx { arr: u32, index: Reg, bytes: u32 },
    /// Waits until the phase of barrier `shared[arr][index]` whose number has parity
    /// `parity` (0 or 1) has completed (PTX `mbarrier.try_wait.parity` in a loop); the
    /// shared memory that phase's copies wrote is then visible to the thread.
    MbarrierWait { arr: u32, index: Reg, parity: Reg },
    /// Copies the box of tensor map parameter `map` ([`tma::TensorMap`]) at element
    /// coordinates `coords` (innermost first, each may lie outside the tensor: those
    /// elements are written as zeros and memory is not read) into shared array `arr`
    /// from element `shared_index` on, laid out as [`tma::TensorMap::smem_byte_offset`]
    /// says (the first element aligned to the swizzle's repeat), asynchronously:
    /// complete, and its bytes counted, on barrier `shared[bar_arr][bar_index]` (PTX
    /// `cp.async.bulk.tensor`). Issued by one thread; until the barrier's phase
    /// completes the destination is undefined.
    TmaLoad {
        arr: u32,
        shared_index: Reg,
        map: u32,
        coords: Vec<Reg>,
        bar_arr: u32,
        bar_index: Reg,
    },
    /// A warp-wide load of `dst.len()` (1, 2 or 4) matrices of 8 rows of 16 bytes from
    /// shared array `arr` (PTX `ldmatrix`): lane `8i + r` gives in `index` the element
    /// index of row `r` of matrix `i`. Of 16-bit elements (8x8), lane `l` (`g = l / 4`,
    /// `t = l % 4`) receives in `dst[i]` (2 packed elements) row `g`, columns `2t` and
    /// `2t + 1` of matrix `i`, or with `trans` rows `2t` and `2t + 1` of column `g`; of
    /// 32-bit elements (8x4, no `trans`), row `g`, column `t`: the mma fragment
    /// layouts. Uniform control flow only.
    LdMatrix {
        dst: Vec<Reg>,
        arr: u32,
        index: Reg,
        trans: bool,
    },
    /// `dst` = the zero matrix (a `C` fragment), for the whole subgroup.
    CoopZero { dst: Frag },
    /// Loads fragment `dst` from shared array `arr`, row-major: element `(r, c)` from
    /// `shared[arr][index + r * stride + c]` (WGSL `coopLoadT`), 16-byte aligned (the
    /// first element and the stride). `index` is uniform within each subgroup; every
    /// invocation of the subgroup executes it together. Cooperative-matrix statements
    /// appear only in uniform control flow and never inside an `If` (loops are fine).
    /// With `column_major`, element `(r, c)` is `shared[arr][index + c * stride + r]`
    /// (WGSL `coopLoad`): a `B` fragment from a tile stored `[N][K]`.
    CoopLoad {
        dst: Frag,
        arr: u32,
        index: Reg,
        stride: u32,
        column_major: bool,
    },
    /// Stores fragment `src` to shared array `arr`, row-major (WGSL `coopStoreT`), as
    /// [`Stmt::CoopLoad`] reads it.
    CoopStore {
        src: Frag,
        arr: u32,
        index: Reg,
        stride: u32,
    },
    /// `dst = a @ b + c` on the subgroup's fragments (WGSL `coopMultiplyAdd`): exact
    /// products, summed and rounded once to `c`'s dtype.
    CoopMulAdd {
        dst: Frag,
        a: Frag,
        b: Frag,
        c: Frag,
    },
    /// `dst = src` (a loop-carried accumulator).
    CoopCopy { dst: Frag, src: Frag },
    /// A warp-wide matrix multiply-accumulate on tensor cores, `d = a @ b + c` over one
    /// tile of `kind`'s shape, run by the 32 lanes of each warp together (so only in
    /// uniform control flow). Each lane holds the fragment elements [`MmaKind`] lists.
    Mma {
        kind: MmaKind,
        d: Vec<Reg>,
        a: Vec<Reg>,
        b: Vec<Reg>,
        c: Vec<Reg>,
    },
    /// Warpgroup matrix multiply-accumulate (sm_90a `wgmma.mma_async`), issued by each
    /// warpgroup (128 consecutive threads, all present: uniform control flow) together:
    /// `acc += a @ b` over one `m64 x n x k16` tile, `b` read from shared memory as its
    /// descriptor describes ([`SmemMatrix`]), `a` likewise or from the warpgroup's
    /// registers ([`WgmmaA`]; the registers, like the accumulators, must not be written
    /// until the group completes, and writes before need a [`Stmt::WgmmaFence`] between),
    /// `acc` the lane's accumulator
    /// registers in [`WgmmaShape::acc_coord`]'s layout. Asynchronous: it joins the
    /// warpgroup's open group ([`Stmt::WgmmaCommit`]); `acc` is undefined, and the
    /// operands' shared memory must not change, until a [`Stmt::WgmmaWait`] completes
    /// the group. Shared memory written by ordinary stores or copies is visible to it
    /// only after a [`Stmt::FenceProxyAsync`] and a barrier; `acc` written by anything
    /// else since the last [`Stmt::WgmmaFence`] may not be read. With `zero_acc` (an
    /// `i1` register, program-uniform) true, the accumulators' old values are ignored:
    /// `acc = a @ b` (PTX's scale-d 0), the reset of a flattened persistent loop.
    Wgmma {
        shape: WgmmaShape,
        acc: Vec<Reg>,
        a: WgmmaA,
        b: SmemMatrix,
        zero_acc: Option<Reg>,
    },
    /// Orders the thread's earlier register accesses before the following `wgmma`s
    /// (PTX `wgmma.fence`).
    WgmmaFence,
    /// Closes the warpgroup's open group of `wgmma`s (PTX `wgmma.commit_group`).
    WgmmaCommit,
    /// Waits until at most `pending` of the warpgroup's committed `wgmma` groups (the
    /// most recent) are incomplete (PTX `wgmma.wait_group`).
    WgmmaWait { pending: u32 },
    /// Makes the thread's earlier shared-memory writes visible to the asynchronous proxy
    /// (`wgmma`'s operand reads) once a barrier follows (PTX
    /// `fence.proxy.async.shared::cta`).
    FenceProxyAsync,
    /// `for iv in range(lower, upper, step)`: `iv` is assigned each trip.
    For {
        iv: Reg,
        lower: Reg,
        upper: Reg,
        step: Reg,
        body: Vec<Stmt>,
    },
    If {
        cond: Reg,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    /// Runs `cond_body`, then exits when `cond` is false, else runs `body` and repeats.
    While {
        cond_body: Vec<Stmt>,
        cond: Reg,
        body: Vec<Stmt>,
        /// The tile-IR loop's source span (diagnostics: a program waiting forever).
        span: crate::diag::Span,
    },
}

/// The tensor-core instructions, named after PTX's `mma.sync` shapes. In lane `l` of a
/// warp, with `g = l / 4` and `t = l % 4` (PTX ISA, "Matrix fragments for mma"):
///
/// - `M16N8K16` (f16 or bf16 inputs, f32 accumulators): `a` is 4 registers of 2
///   packed inputs, `a[i]` holding row `g + 8 * (i & 1)`, columns `2t + 8 * (i >> 1)`
///   and the next; `b` is 2 registers of 2, `b[i]` holding rows `2t + 8i` and the
///   next of column `g`.
/// - `M16N8K8` (tf32 inputs from f32 registers): `a[i]` is row `g + 8 * (i & 1)`,
///   column `t + 4 * (i >> 1)`; `b[i]` row `t + 4i` of column `g`. The tensor core
///   reads the inputs' top 19 bits (tf32).
/// - Accumulators (both): 4 f32 registers, `c[i]` at row `g + 8 * (i >> 1)`, column
///   `2t + (i & 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MmaKind {
    F16M16N8K16,
    Bf16M16N8K16,
    Tf32M16N8K8,
}

impl MmaKind {
    /// The input element type.
    pub fn input(self) -> DType {
        match self {
            MmaKind::F16M16N8K16 => DType::F16,
            MmaKind::Bf16M16N8K16 => DType::BF16,
            MmaKind::Tf32M16N8K8 => DType::F32,
        }
    }

    /// `(m, n, k)`.
    pub fn shape(self) -> (u32, u32, u32) {
        match self {
            MmaKind::Tf32M16N8K8 => (16, 8, 8),
            _ => (16, 8, 16),
        }
    }

    /// Input elements packed in one register (2 for f16/bf16, 1 for tf32).
    pub fn pack(self) -> u32 {
        match self {
            MmaKind::Tf32M16N8K8 => 1,
            _ => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            MmaKind::F16M16N8K16 => "m16n8k16.f16",
            MmaKind::Bf16M16N8K16 => "m16n8k16.bf16",
            MmaKind::Tf32M16N8K8 => "m16n8k8.tf32",
        }
    }

    /// The (row, column) of element `e` of input register `i` of `a`, for lane `lane`.
    pub fn a_coord(self, lane: u32, i: u32, e: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        match self {
            MmaKind::Tf32M16N8K8 => (g + 8 * (i & 1), t + 4 * (i >> 1)),
            _ => (g + 8 * (i & 1), 2 * t + 8 * (i >> 1) + e),
        }
    }

    /// The (row, column) of element `e` of input register `i` of `b`, for lane `lane`.
    pub fn b_coord(self, lane: u32, i: u32, e: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        match self {
            MmaKind::Tf32M16N8K8 => (t + 4 * i, g),
            _ => (2 * t + 8 * i + e, g),
        }
    }

    /// The (row, column) of accumulator register `i`, for lane `lane`.
    pub fn c_coord(self, lane: u32, i: u32) -> (u32, u32) {
        let (g, t) = (lane / 4, lane % 4);
        (g + 8 * (i >> 1), 2 * t + (i & 1))
    }
}

/// A cooperative-matrix fragment variable: a `size x size` matrix held by one
/// subgroup together (WGSL `coop_mat16x16<T, R>`), which no single invocation can
/// read. Each subgroup (of 32 threads, numbered by [`Special::SubgroupId`]) owns its
/// own value of every fragment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frag(pub u32);

impl std::fmt::Display for Frag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "f{}", self.0)
    }
}

/// A fragment's role in `coopMultiplyAdd(a, b, c)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragRole {
    A,
    B,
    C,
}

/// The type of a fragment variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragTy {
    pub role: FragRole,
    pub dtype: DType,
    /// Rows and columns (8 or 16).
    pub size: u32,
}

impl std::fmt::Display for FragTy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "coop{}x{}<{}, {:?}>",
            self.size, self.size, self.dtype, self.role
        )
    }
}

/// A lowered kernel, ready for a printer.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadKernel {
    pub name: String,
    pub params: Vec<Param>,
    /// Threads per program instance.
    pub threads: u32,
    pub shared: Vec<SharedArray>,
    /// `regs[r]` is the type of register `r`.
    pub regs: Vec<RegTy>,
    /// `frags[f]` is the type of fragment variable `f` (cooperative-matrix dots).
    pub frags: Vec<FragTy>,
    pub body: Vec<Stmt>,
    /// What the lowering chose where it had a choice (each `dot`'s form and tiling),
    /// for the compiled kernel's description.
    pub notes: Vec<String>,
    /// The source the spans in statements refer to.
    pub source: Option<std::sync::Arc<crate::diag::SourceFile>>,
    /// Checked mode (or `tl.device_print`): the hidden parameters, what the kernel
    /// tests and where it reports (`None` for an unchecked kernel that does not print).
    pub checks: Option<checks::Checks>,
}

impl ThreadKernel {
    pub fn reg_ty(&self, r: Reg) -> RegTy {
        self.regs[r.0 as usize]
    }

    pub fn frag_ty(&self, f: Frag) -> FragTy {
        self.frags[f.0 as usize]
    }

    /// The source line `span` starts on, if the kernel has its source.
    pub fn line_of(&self, span: crate::diag::Span) -> Option<u32> {
        match &self.source {
            Some(src) if !span.is_none() => Some(src.line_col(span.start).0),
            _ => None,
        }
    }

    /// `d` pointed at `span` (a [`Stmt::Loc`]'s) unless it has a location already, with
    /// the kernel's source: a printer's error names the user's line.
    pub fn locate(
        &self,
        d: crate::diag::Diagnostic,
        span: crate::diag::Span,
    ) -> crate::diag::Diagnostic {
        let d = d.or_at(span);
        match &self.source {
            Some(src) => d.with_source(src),
            None => d,
        }
    }

    /// Bytes of shared memory the kernel declares.
    pub fn shared_bytes(&self) -> u64 {
        self.shared
            .iter()
            .filter(|a| a.overlays.is_none())
            .map(|a| a.len as u64 * a.dtype.size_bytes() as u64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::MmaKind;

    /// Lane 5 (groupID 1, threadID_in_group 1) against the fragment figures of the PTX
    /// ISA ("Matrix fragments for mma.m16n8k16 / m16n8k8"), written out by hand.
    #[test]
    fn fragment_coordinates_follow_the_ptx_isa() {
        let f16 = MmaKind::F16M16N8K16;
        assert_eq!(
            (0..4)
                .flat_map(|i| (0..2).map(move |e| f16.a_coord(5, i, e)))
                .collect::<Vec<_>>(),
            vec![
                (1, 2),
                (1, 3),
                (9, 2),
                (9, 3),
                (1, 10),
                (1, 11),
                (9, 10),
                (9, 11)
            ]
        );
        assert_eq!(
            (0..2)
                .flat_map(|i| (0..2).map(move |e| f16.b_coord(5, i, e)))
                .collect::<Vec<_>>(),
            vec![(2, 1), (3, 1), (10, 1), (11, 1)]
        );
        let tf32 = MmaKind::Tf32M16N8K8;
        assert_eq!(
            (0..4).map(|i| tf32.a_coord(5, i, 0)).collect::<Vec<_>>(),
            vec![(1, 1), (9, 1), (1, 5), (9, 5)]
        );
        assert_eq!(
            (0..2).map(|i| tf32.b_coord(5, i, 0)).collect::<Vec<_>>(),
            vec![(1, 1), (5, 1)]
        );
        for kind in [f16, tf32] {
            assert_eq!(
                (0..4).map(|i| kind.c_coord(5, i)).collect::<Vec<_>>(),
                vec![(1, 2), (1, 3), (9, 2), (9, 3)]
            );
        }
    }
}
