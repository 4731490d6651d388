//! The fuzzer's program model: a kernel as a list of statements over typed tile
//! variables, and what the fuzzer knows of each variable ([`Info`]).
//!
//! The generator and the shrinker both edit this model; `rules.rs` ([`check`]) derives
//! every variable's information from the statements, so a shrunk program keeps honest
//! tolerances, and an edit that breaks a rule (a comparison of inexact values, say) is
//! rejected rather than compared wrongly; `print.rs` writes the Triton source.

use tilewise::DType;

pub use crate::print::row_major;
pub use crate::rules::{
    broadcast, check, fits, infer, input_info, int_range, precision, ulp, Checked, Invalid,
};

/// A variable: printed `v{n}`; defined once by a `Let`, except loop-carried and
/// branch-merged variables, which their statements reassign.
pub type Var = usize;

/// What the fuzzer knows of a variable's values.
///
/// `err` bounds the absolute difference allowed between two executors (0: the same
/// bits). For floats, `mag` bounds the magnitude of finite values and `grid`, when
/// known, says every value is a multiple of `2^grid` that the dtype holds exactly: a
/// sum of such values is exact in any order while it stays representable, which is
/// what lets reductions and dots be compared exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    pub shape: Vec<u32>,
    pub dtype: DType,
    pub mag: f64,
    pub err: f64,
    pub grid: Option<i32>,
}

impl Info {
    pub fn numel(&self) -> u32 {
        self.shape.iter().product()
    }
    pub fn exact(&self) -> bool {
        self.err == 0.0
    }
    pub(crate) fn with(&self, shape: Vec<u32>) -> Info {
        Info {
            shape,
            ..self.clone()
        }
    }
}

/// The float dtypes' significand bits.
/// Where a scalar comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    ProgramId,
    /// A runtime `i32` argument (`s{n}`).
    Arg(usize),
    /// The induction variable of the enclosing loop at this depth (`i{n}`).
    LoopIndex(usize),
}

/// How a load or store walks memory: element `(c_0, .., c_r)` of the tile is at
/// `pid * span + shift + Σ c_d * strides[d]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub strides: Vec<u32>,
    /// Elements between programs.
    pub span: u32,
    /// `(var, scale)`: the scalar `i32` variable `var` times `scale`, added to every
    /// offset (loops).
    pub shift: Option<(Var, u32)>,
    /// `lin < s{n}` (the tile's row-major index against a runtime bound).
    pub ragged: Option<usize>,
    /// Printed as a pointer tile made before the loop whose index `shift` is and
    /// advanced by the scale at the end of each trip (`p += k`, as a K loop carries its
    /// pointers), where the load lies in that loop's body (not in a loop nested in it);
    /// else the index times the scale is added on the spot. The same addresses either way.
    pub carried: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Zero,
    Nan,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    Neg,
    Abs,
    Not,
    Exp,
    /// `log(abs(x) + 1)`
    LogAbs1,
    /// `sqrt(abs(x))`
    SqrtAbs,
    /// `rsqrt(abs(x) + 1)`
    RsqrtAbs1,
    Sin,
    Cos,
    Floor,
    Ceil,
    Erf,
    Sigmoid,
    /// Rounded to `tl.float8e4nv` and back (`x.to(tl.float8e4nv).to(x.dtype)`).
    Fp8E4,
    /// Rounded to `tl.float8e5` and back.
    Fp8E5,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    /// `a / (abs(b) + 1)` for floats.
    SafeDiv,
    FloorDiv,
    Mod,
    Min,
    Max,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    /// `tl.umulhi` (32- and 64-bit integers).
    MulHi,
}

/// Triton's Philox random numbers of an int32 offset tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomKind {
    /// `tl.randint`, bitcast to int32.
    Randint,
    /// `tl.rand`: f32 in [0, 1), exact.
    Rand,
    /// `tl.randn`: f32, through the device's `log`, `sqrt`, `sin`, `cos`.
    Randn,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    Sum,
    Max,
    Min,
    ArgMax,
    ArgMin,
    XorSum,
    /// `tl.reduce` with `_comb_add`.
    CustomAdd,
    /// `tl.reduce` with `_comb_first_nonzero` (associative, not commutative): not
    /// generated, since a reduction's combine function must also be commutative (its
    /// order across registers, lanes and warps is the lowering's, as in Triton).
    CustomFirst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    Cumsum,
    Cumprod,
    CustomAdd,
    CustomFirst,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
    And,
    Or,
    Xor,
    Xchg,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Load {
        input: usize,
        shape: Vec<u32>,
        access: Access,
        other: f64,
    },
    /// A 2-D block-pointer load of a `rows x cols` view with row stride `stride` (runtime
    /// bounds `s{rows_arg}`, `s{cols_arg}`), checked on both dimensions.
    BlockLoad {
        input: usize,
        shape: Vec<u32>,
        span: u32,
        stride: u32,
        rows_arg: usize,
        cols_arg: usize,
        padding: Padding,
        /// The block's offsets: rows advanced by a loop index when present.
        row_offset: Option<Var>,
        /// Written as a tensor descriptor's `load` (zero padding only; the same
        /// semantics).
        descriptor: bool,
        /// Every program reads the same view, from the input's first element (`in{i}`
        /// itself, not `in{i} + pid * span`): the form whose tiles the tensor memory
        /// accelerator copies on sm_90 (a dot operand in a loop).
        shared_base: bool,
    },
    Full {
        shape: Vec<u32>,
        value: f64,
        dtype: DType,
    },
    /// `tl.arange(0, n)`
    Arange(u32),
    Scalar(Scalar),
    Unary(Unary, Var),
    Binary(Binary, Var, Var),
    /// `tl.rand*(seed, offsets)` with a literal seed and an int32 offset tile.
    Random(RandomKind, Var, i64),
    Cmp(Cmp, Var, Var),
    Where(Var, Var, Var),
    Cast(Var, DType),
    ExpandDims(Var, usize),
    BroadcastTo(Var, Vec<u32>),
    Permute(Var, Vec<usize>),
    Reshape(Var, Vec<u32>),
    /// `tl.join(a, b)`: a new last dimension of 2.
    Join(Var, Var),
    /// `tl.interleave(a, b)`: the last dimension doubled, alternating.
    Interleave(Var, Var),
    /// Half `.1` (0 or 1) of `tl.split(x)` (last dimension 2).
    Split(Var, usize),
    Reduce {
        kind: Reduction,
        value: Var,
        axis: Option<usize>,
        keep_dims: bool,
        dtype: DType,
    },
    Scan {
        kind: ScanKind,
        value: Var,
        axis: usize,
        reverse: bool,
        dtype: DType,
    },
    Dot {
        a: Var,
        b: Var,
        acc: Option<Var>,
        /// `input_precision` for f32 operands: "tf32", "tf32x3" or "ieee".
        precision: Option<&'static str>,
    },
    /// An atomic on output `out` at `pid * numel + lin` (`unique`: its old value is the
    /// output's initial content) or at `lin % 4` (contended: the old value is unused).
    Atomic {
        op: AtomicOp,
        out: usize,
        value: Var,
        unique: bool,
    },
}

/// A loop's trip count.
#[derive(Clone, Debug, PartialEq)]
pub enum Trip {
    Const(u32),
    Arg(usize),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let(Var, Expr),
    /// `tl.store(out{out} + pid * numel + lin, v, mask=lin < s{ragged})`
    Store {
        out: usize,
        value: Var,
        ragged: Option<usize>,
    },
    /// `for i{depth} in range(trip)`: `carried[k] = next[k]` at the end of the body.
    For {
        depth: usize,
        trip: Trip,
        stages: Option<u32>,
        carried: Vec<Var>,
        body: Vec<Stmt>,
        next: Vec<Var>,
    },
    /// `i{depth} = 0; while i{depth} < trip: ...; i{depth} += 1`.
    While {
        depth: usize,
        trip: Trip,
        carried: Vec<Var>,
        body: Vec<Stmt>,
        next: Vec<Var>,
    },
    /// `if s{arg} > threshold` (or `pid % 2 == 0` when `arg` is None).
    If {
        arg: Option<usize>,
        threshold: i32,
        carried: Vec<Var>,
        then_body: Vec<Stmt>,
        then_next: Vec<Var>,
        else_body: Vec<Stmt>,
        else_next: Vec<Var>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Buffer {
    pub dtype: DType,
    pub len: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub dtype: DType,
    pub len: usize,
    /// Atomic targets start from random data (their old values are read); other
    /// outputs are poisoned.
    pub atomic: bool,
}

/// A generated kernel and its launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub seed: u64,
    pub num_warps: u32,
    pub grid: u32,
    pub inputs: Vec<Buffer>,
    pub outputs: Vec<Output>,
    /// Runtime `i32` arguments `s0, s1, ...`.
    pub scalars: Vec<i32>,
    pub body: Vec<Stmt>,
    /// The number of variables (`v0 .. v{n-1}`).
    pub num_vars: usize,
    /// The kernel takes its buffers as addresses (pointers as data): one `int64` table
    /// `addrs` replaces `in0.., out0..`, which the kernel loads and casts back to
    /// pointers first. Executors without addresses (the WGSL lowering) refuse it.
    pub addressed: bool,
}

impl Program {
    /// The same program with every load's offsets added on the spot
    /// ([`Access::carried`] off): the form every program had before carried pointer
    /// tiles were generated (the seeds kept from then are checked in it).
    pub fn without_carried_pointers(&self) -> Program {
        fn clear(body: &mut [Stmt]) {
            for st in body {
                match st {
                    Stmt::Let(_, Expr::Load { access, .. }) => access.carried = false,
                    Stmt::For { body, .. } | Stmt::While { body, .. } => clear(body),
                    Stmt::If {
                        then_body,
                        else_body,
                        ..
                    } => {
                        clear(then_body);
                        clear(else_body);
                    }
                    _ => {}
                }
            }
        }
        let mut p = self.clone();
        clear(&mut p.body);
        p
    }
}
