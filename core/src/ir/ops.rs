//! The operations of the tile IR: the one table where each op is declared.
//!
//! Typing rules are stated per op. Common rules, checked by the verifier:
//! - elementwise ops (`Unary`, `Binary`, `Cmp`, `Select`, `Fma`, `Cast`, `AddPtr`) take
//!   operands of exactly the result's shape: the front end inserts `Splat` / `Broadcast`
//!   and `Cast` first, so no op broadcasts or promotes implicitly;
//! - integer ops take their signedness from the operand dtype (`Div`, `Rem`, `Shr`,
//!   comparisons);
//! - integer `Div` and `Rem` truncate toward zero (C semantics); float `Rem` is C `fmod`;
//!   integer arithmetic wraps; shifts by at least the bit width give 0 (`Shl`, unsigned
//!   `Shr`) or the sign fill (signed `Shr`);
//! - a masked-off lane of a load or store never touches memory.
//!
//! How each op lowers for the GPUs is the shared lowering's (core/src/lower/), not
//! stated here.

use super::kernel::Block;
use super::{DType, Value};

/// A compile-time constant element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Const {
    Bool(bool),
    /// Any integer dtype; the bits are reinterpreted for unsigned 64-bit values.
    Int(i64),
    Float(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// Arithmetic negation (wrapping for integers).
    Neg,
    /// Bitwise not for integers, logical not for `i1`.
    Not,
    Abs,
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Floor,
    Ceil,
    Erf,
    Tanh,
}

impl UnaryOp {
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Not => "not",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Log => "log",
            UnaryOp::Log2 => "log2",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Erf => "erf",
            UnaryOp::Tanh => "tanh",
        }
    }

    /// Ops defined on floats only.
    pub fn float_only(self) -> bool {
        !matches!(self, UnaryOp::Neg | UnaryOp::Not | UnaryOp::Abs)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// Float division, or integer division truncating toward zero.
    Div,
    /// C remainder (sign of the dividend) for integers, `fmod` for floats.
    Rem,
    And,
    Or,
    Xor,
    Shl,
    /// Arithmetic for signed, logical for unsigned integers.
    Shr,
    /// Minimum; for floats, NaN loses to a number (`minnum`), as `tl.minimum`'s default.
    Min,
    /// Maximum; for floats, NaN loses to a number (`maxnum`).
    Max,
    /// Float power.
    Pow,
    /// The high half of the double-width product of two integers taken as unsigned
    /// (`tl.umulhi`, for every integer dtype as in Triton).
    MulHi,
}

impl BinaryOp {
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Rem => "rem",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
            BinaryOp::Shl => "shl",
            BinaryOp::Shr => "shr",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Pow => "pow",
            BinaryOp::MulHi => "mulhi",
        }
    }

    /// Ops defined on integers only.
    pub fn int_only(self) -> bool {
        matches!(
            self,
            BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
                | BinaryOp::Shl
                | BinaryOp::Shr
                | BinaryOp::MulHi
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpPred {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpPred {
    pub fn name(self) -> &'static str {
        match self {
            CmpPred::Eq => "eq",
            CmpPred::Ne => "ne",
            CmpPred::Lt => "lt",
            CmpPred::Le => "le",
            CmpPred::Gt => "gt",
            CmpPred::Ge => "ge",
        }
    }
}

/// Values `padding_option` may give to out-of-bounds lanes of a block-pointer load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// No padding requested: out-of-bounds lanes are zero when checked.
    None,
    Zero,
    Nan,
}

/// The block pointer a load's pointer tile and mask came from (kept by `block_ptr`
/// where the target has a tensor memory accelerator): base pointer, `shape` and
/// `strides` (scalars of the index type) and `offsets` (i32 scalars), outermost
/// dimension first. The pointer tile and mask say the same; the expansion may copy the
/// tile as one box instead (out-of-bound elements read as zero, so only loads that pad
/// with zeros keep one).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorBox {
    /// The base, then the shape, the strides and the offsets (`1 + 3 * rank` values).
    pub parts: Vec<Value>,
}

impl TensorBox {
    pub fn rank(&self) -> usize {
        (self.parts.len() - 1) / 3
    }

    pub fn base(&self) -> Value {
        self.parts[0]
    }

    pub fn shape(&self) -> &[Value] {
        &self.parts[1..1 + self.rank()]
    }

    pub fn strides(&self) -> &[Value] {
        &self.parts[1 + self.rank()..1 + 2 * self.rank()]
    }

    pub fn offsets(&self) -> &[Value] {
        &self.parts[1 + 2 * self.rank()..]
    }
}

/// `cache_modifier` / `eviction_policy` hints; accepted and kept for the backends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CacheHints {
    pub cache_modifier: Option<String>,
    pub eviction_policy: Option<String>,
    pub volatile: bool,
}

/// How a staged `dot` operand lies in shared memory, fixed by the `dot`'s plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StagedLayout {
    /// The FMA form: `a` K-major (`[K][M]`), `b` row-major, unpadded.
    Fma,
    /// Warp-level tensor cores (`mma.sync`, cooperative matrices): both row-major,
    /// rows padded (`ldmatrix` without bank conflicts).
    Padded,
    /// Warp-level tensor cores with an operand contiguous along its first dimension in
    /// memory (`a` along M: `x.T @ w`; `b` along K: `x @ w.T`): stored transposed (`a`
    /// `[K][M]`, `b` `[N][K]`, rows padded by 16 bytes) so that its copies move 16
    /// bytes along that dimension; `mma.sync` reads it by `ldmatrix` with `.trans`
    /// (`a`) or without (`b`), cooperative matrices column-major.
    PaddedTransposed,
    /// Warpgroup MMA (`wgmma`): stored row-major (`a` K-major, `b` N-major) or, with
    /// `transposed`, as the transposed tile (`b` K-major: tf32 has no N-major form), in
    /// blocks of `bytes`-wide rows (32, 64 or 128) along the stored rows, 16-byte
    /// chunks swizzled by the row within each group of eight
    /// (`lower::expand::shared_tile::SwizzledTile`).
    Swizzled { bytes: u32, transposed: bool },
}

impl StagedLayout {
    /// The text form's spelling (after `operand N`): empty for the FMA form.
    pub fn spelling(self) -> String {
        match self {
            StagedLayout::Fma => String::new(),
            StagedLayout::Padded => " mma".into(),
            StagedLayout::PaddedTransposed => " mmat".into(),
            StagedLayout::Swizzled { bytes, transposed } => {
                format!(" swizzle{bytes}{}", if transposed { "t" } else { "" })
            }
        }
    }
}

/// Where a pipelined `dot` operand load lands (set by `lower::pipeline`): a slot of a
/// ring of `stages` shared-memory tiles, filled by asynchronous copies (PTX
/// `cp.async`) issued `stages - 1` iterations ahead of the `dot` that reads them.
/// Masked-off elements are zero (the pass stages only loads whose `other` is absent or
/// zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Staging {
    /// The ring, unique in the kernel; every load of one ring has the same shape.
    pub ring: u32,
    /// Slots in the ring: `num_stages`, one more with `slack`; at least 2.
    pub stages: u32,
    /// Which operand of the `dot` the tile is: 0 for `a` (`[M, K]`), 1 for `b`
    /// (`[K, N]`); with `layout`, it fixes the shared layout the `dot` reads.
    pub operand: u8,
    /// The shared layout the `dot`'s plan reads the operand in.
    pub layout: StagedLayout,
    /// How many of a thread's copy groups may still be in flight when the `dot` of an
    /// iteration starts: the copies issued for the later iterations already in flight.
    pub pending: u32,
    /// Whether the ring has one slot more than the prefetch distance needs, so that a
    /// copy refills the slot read two iterations before: a `wgmma` that leaves its
    /// group in flight then needs no barrier before the copies that follow it.
    pub slack: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
    And,
    Or,
    Xor,
    Xchg,
}

impl AtomicOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Max => "max",
            AtomicOp::Min => "min",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Xchg => "xchg",
        }
    }
}

/// `input_precision` of a `dot` with f32 inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// Tensor-core tf32 (Triton's default for f32 inputs).
    Tf32,
    /// Three tf32 products, close to f32 accuracy.
    Tf32x3,
    /// Plain f32 fused multiply-add.
    Ieee,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Tf32 => "tf32",
            Precision::Tf32x3 => "tf32x3",
            Precision::Ieee => "ieee",
        }
    }
}

/// How a reduction or scan combines two elements.
#[derive(Clone, Debug, PartialEq)]
pub enum Combiner {
    Add,
    Mul,
    Max,
    Min,
    /// Over `(value, index)` operand pairs: the larger value, ties to the smaller index.
    ArgMax,
    /// Over `(value, index)` operand pairs: the smaller value, ties to the smaller index.
    ArgMin,
    /// A user combine function: the block takes `2n` scalar arguments (the `n`
    /// accumulated values, then the `n` incoming values) and yields `n` scalars.
    Region(Box<Block>),
}

/// Compiler hints on an integer tile; they change no value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HintKind {
    MultipleOf(Vec<u32>),
    MaxContiguous(Vec<u32>),
    MaxConstancy(Vec<u32>),
}

/// One operation. Results are listed in the enclosing [`super::Inst`].
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A constant, splatted to the result type's shape. Lowers to a literal.
    Const(Const),
    /// `tl.program_id(axis)`: i32 scalar.
    ProgramId {
        axis: u8,
    },
    /// `tl.num_programs(axis)`: i32 scalar.
    NumPrograms {
        axis: u8,
    },
    /// `tl.arange(start, end)`: 1-D i32 tile `[start, end)`; `end - start` a power of two.
    Arange {
        start: i64,
        end: i64,
    },
    /// A scalar copied to every element of the result's shape.
    Splat(Value),
    /// Same rank; each size-1 dimension of the operand expands to the result's size.
    Broadcast(Value),
    /// A size-1 dimension inserted at `axis`.
    ExpandDims {
        value: Value,
        axis: u32,
    },
    /// Row-major reinterpretation to the result's shape (same element count).
    Reshape(Value),
    /// Result dimension `i` is operand dimension `perm[i]` (`tl.trans`, `tl.permute`).
    Permute {
        value: Value,
        perm: Vec<u32>,
    },
    Unary {
        op: UnaryOp,
        value: Value,
    },
    Binary {
        op: BinaryOp,
        lhs: Value,
        rhs: Value,
    },
    /// Comparison of two same-typed tiles; `i1` result.
    Cmp {
        pred: CmpPred,
        lhs: Value,
        rhs: Value,
    },
    /// `tl.where(cond, on_true, on_false)`; `cond` is `i1` of the result's shape.
    Select {
        cond: Value,
        on_true: Value,
        on_false: Value,
    },
    /// `a * b + c`, rounded once.
    Fma {
        a: Value,
        b: Value,
        c: Value,
    },
    /// Conversion to the result's dtype: value conversion (float to int truncates and
    /// saturates, NaN gives 0; int to float rounds to nearest even; to `i1` is `!= 0`),
    /// or with `bitcast` a reinterpretation of the bits (same width).
    Cast {
        value: Value,
        bitcast: bool,
    },
    /// Pointer tile plus an integer offset tile, in elements.
    AddPtr {
        ptr: Value,
        offset: Value,
    },
    /// `tl.make_block_ptr`: `base` is a scalar pointer; `shape`, `strides`, `offsets`
    /// are scalars, one each per dimension (i64 shape and strides, i32 offsets);
    /// `order` lists the dimensions fastest first. The block shape is in the type.
    MakeBlockPtr {
        base: Value,
        shape: Vec<Value>,
        strides: Vec<Value>,
        offsets: Vec<Value>,
        order: Vec<u32>,
    },
    /// `tl.advance`: a block pointer with `deltas` (i32 scalars) added to its offsets.
    Advance {
        ptr: Value,
        deltas: Vec<Value>,
    },
    /// Gathers through a pointer tile or a block pointer. With a pointer tile, `mask`
    /// and `other` (both of the result's shape) select lanes; with a block pointer,
    /// `boundary_check` lists the dimensions whose out-of-range lanes are masked and
    /// filled per `padding`.
    Load {
        ptr: Value,
        mask: Option<Value>,
        other: Option<Value>,
        boundary_check: Vec<u32>,
        padding: Padding,
        hints: CacheHints,
        /// Set by the pipelining pass (never by the front end) on a load that feeds a
        /// `dot` on a backend with asynchronous copies: the tile goes straight to
        /// shared memory (see [`Staging`]). The value is the same as without it.
        stage: Option<Staging>,
        /// The block pointer the load came from ([`TensorBox`]), where kept.
        tensor_box: Option<TensorBox>,
    },
    /// Scatters `value` through a pointer tile (with `mask`) or a block pointer (with
    /// `boundary_check`). No results.
    Store {
        ptr: Value,
        value: Value,
        mask: Option<Value>,
        boundary_check: Vec<u32>,
        hints: CacheHints,
    },
    /// Read-modify-write of each unmasked lane; the result holds the old values.
    Atomic {
        op: AtomicOp,
        ptr: Value,
        value: Value,
        mask: Option<Value>,
    },
    /// Compare-and-swap of each lane; the result holds the old values.
    AtomicCas {
        ptr: Value,
        cmp: Value,
        value: Value,
    },
    /// `a[M,K] @ b[K,N] + acc[M,N]`; the result has `acc`'s type (f32 for f16, bf16 and
    /// f32 inputs, f64 for f64, i32 for i8). Lowers to the dot plan.
    Dot {
        a: Value,
        b: Value,
        acc: Value,
        precision: Precision,
    },
    /// Reduces each operand along `axis` (removed from the shape) with `combiner`.
    /// One result per operand.
    Reduce {
        operands: Vec<Value>,
        axis: u32,
        combiner: Combiner,
    },
    /// Inclusive scan of each operand along `axis`; `reverse` scans from the end.
    Scan {
        operands: Vec<Value>,
        axis: u32,
        reverse: bool,
        combiner: Combiner,
    },
    /// A compiler hint; the result equals the operand.
    Hint {
        value: Value,
        hint: HintKind,
    },
    /// `tl.device_print(prefix, values...)`. No results.
    DevicePrint {
        prefix: String,
        values: Vec<Value>,
        hex: bool,
    },
    /// `tl.device_assert(cond, msg)`: fails the launch where `cond` is false.
    DeviceAssert {
        cond: Value,
        message: String,
    },
    /// `tl.debug_barrier()`: every thread of the program reaches it, and the program's
    /// memory accesses before it (global memory included) happen before those after
    /// it. A no-op for whole-tile semantics (the interpreter); on a GPU, threads of a
    /// program may otherwise see each other's global writes late or not at all.
    Barrier,
    /// Checked mode only (`lower::block_ptr` emits it for the GPU lowerings): the block
    /// pointer made from `base` with `shape` and `strides` must stay inside the buffer
    /// view `base` points into, as the checked interpreter requires of
    /// `make_block_ptr`. No results.
    CheckBlockPtr {
        base: Value,
        shape: Vec<Value>,
        strides: Vec<Value>,
    },
    /// `for iv in range(lower, upper, step)` with loop-carried values. The body's block
    /// arguments are the induction variable, then one per carried value; the body ends
    /// with `Yield` of the next carried values; the results are the final ones.
    /// `num_stages` is the software-pipelining depth the user asked for; `flatten`
    /// what they said of flattening a nest this loop heads (`tl.range(..., flatten=)`:
    /// `Some(false)` keeps it a nest, see `lower::flatten_loops`).
    For {
        lower: Value,
        upper: Value,
        step: Value,
        init: Vec<Value>,
        body: Block,
        num_stages: Option<u32>,
        flatten: Option<bool>,
    },
    /// Scalar `i1` condition; both blocks end with `Yield` of the results.
    If {
        cond: Value,
        then_block: Block,
        else_block: Block,
    },
    /// `while`: `before` takes the carried values and ends with `Condition`; when true
    /// `after` runs with the forwarded values and yields the next carried values; the
    /// results are the forwarded values when the condition fails.
    While {
        init: Vec<Value>,
        before: Block,
        after: Block,
    },
    /// Ends a `For` body, `If` branch, `While` after-block or combine region.
    Yield(Vec<Value>),
    /// Ends a `While` before-block.
    Condition {
        cond: Value,
        args: Vec<Value>,
    },
}

/// What an op does besides computing its results: what dead-code elimination keeps
/// and what may be reordered or duplicated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing: removable when unused.
    None,
    /// Reads global memory (loads): removable when unused, not movable across writes.
    Reads,
    /// Writes memory, reports, or synchronizes (stores, atomics, prints, asserts,
    /// checks, barriers): never removed.
    Writes,
}

/// Pushes a reference to each direct operand of `$op` onto `$v`, in order: one listing
/// for [`Op::operands`] and [`Op::operands_mut`] (match ergonomics give `&Value` or
/// `&mut Value` by how `$op` is borrowed).
macro_rules! operand_refs {
    ($op:expr, $v:ident) => {
        match $op {
            Op::Const(_)
            | Op::ProgramId { .. }
            | Op::NumPrograms { .. }
            | Op::Arange { .. }
            | Op::Barrier => {}
            Op::Splat(x) | Op::Broadcast(x) | Op::Reshape(x) => $v.push(x),
            Op::ExpandDims { value, .. }
            | Op::Permute { value, .. }
            | Op::Unary { value, .. }
            | Op::Cast { value, .. }
            | Op::Hint { value, .. } => $v.push(value),
            Op::Binary { lhs, rhs, .. } | Op::Cmp { lhs, rhs, .. } => {
                $v.push(lhs);
                $v.push(rhs);
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                $v.push(cond);
                $v.push(on_true);
                $v.push(on_false);
            }
            Op::Fma { a, b, c } => {
                $v.push(a);
                $v.push(b);
                $v.push(c);
            }
            Op::AddPtr { ptr, offset } => {
                $v.push(ptr);
                $v.push(offset);
            }
            Op::MakeBlockPtr {
                base,
                shape,
                strides,
                offsets,
                ..
            } => {
                $v.push(base);
                $v.extend(shape);
                $v.extend(strides);
                $v.extend(offsets);
            }
            Op::Advance { ptr, deltas } => {
                $v.push(ptr);
                $v.extend(deltas);
            }
            Op::Load {
                ptr,
                mask,
                other,
                tensor_box,
                ..
            } => {
                $v.push(ptr);
                $v.extend(mask);
                $v.extend(other);
                if let Some(TensorBox { parts }) = tensor_box {
                    $v.extend(parts);
                }
            }
            Op::Store {
                ptr, value, mask, ..
            }
            | Op::Atomic {
                ptr, value, mask, ..
            } => {
                $v.push(ptr);
                $v.push(value);
                $v.extend(mask);
            }
            Op::AtomicCas { ptr, cmp, value } => {
                $v.push(ptr);
                $v.push(cmp);
                $v.push(value);
            }
            Op::Dot { a, b, acc, .. } => {
                $v.push(a);
                $v.push(b);
                $v.push(acc);
            }
            Op::Reduce { operands, .. } | Op::Scan { operands, .. } => $v.extend(operands),
            Op::DevicePrint { values, .. } => $v.extend(values),
            Op::DeviceAssert { cond, .. } => $v.push(cond),
            Op::CheckBlockPtr {
                base,
                shape,
                strides,
            } => {
                $v.push(base);
                $v.extend(shape);
                $v.extend(strides);
            }
            Op::For {
                lower,
                upper,
                step,
                init,
                ..
            } => {
                $v.push(lower);
                $v.push(upper);
                $v.push(step);
                $v.extend(init);
            }
            Op::If { cond, .. } => $v.push(cond),
            Op::While { init, .. } => $v.extend(init),
            Op::Yield(vals) => $v.extend(vals),
            Op::Condition { cond, args } => {
                $v.push(cond);
                $v.extend(args);
            }
        }
    };
}

impl Op {
    /// The op's name in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Const(_) => "const",
            Op::ProgramId { .. } => "program_id",
            Op::NumPrograms { .. } => "num_programs",
            Op::Arange { .. } => "arange",
            Op::Splat(_) => "splat",
            Op::Broadcast(_) => "broadcast",
            Op::ExpandDims { .. } => "expand_dims",
            Op::Reshape(_) => "reshape",
            Op::Permute { .. } => "permute",
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.name(),
            Op::Cmp { .. } => "cmp",
            Op::Select { .. } => "select",
            Op::Fma { .. } => "fma",
            Op::Cast { bitcast: false, .. } => "cast",
            Op::Cast { bitcast: true, .. } => "bitcast",
            Op::AddPtr { .. } => "addptr",
            Op::MakeBlockPtr { .. } => "make_block_ptr",
            Op::Advance { .. } => "advance",
            Op::Load { .. } => "load",
            Op::Store { .. } => "store",
            Op::Atomic { .. } => "atomic",
            Op::AtomicCas { .. } => "atomic_cas",
            Op::Dot { .. } => "dot",
            Op::Reduce { .. } => "reduce",
            Op::Scan { .. } => "scan",
            Op::Hint { .. } => "hint",
            Op::DevicePrint { .. } => "device_print",
            Op::DeviceAssert { .. } => "device_assert",
            Op::CheckBlockPtr { .. } => "check_block_ptr",
            Op::Barrier => "barrier",
            Op::For { .. } => "for",
            Op::If { .. } => "if",
            Op::While { .. } => "while",
            Op::Yield(_) => "yield",
            Op::Condition { .. } => "condition",
        }
    }

    /// The value operands, in order (not those of nested blocks).
    pub fn operands(&self) -> Vec<Value> {
        let mut v: Vec<&Value> = Vec::new();
        operand_refs!(self, v);
        v.into_iter().copied().collect()
    }

    /// The value operands, in the order of [`Op::operands`], to replace in place (a
    /// pass that copies an op with new operands clones it and maps these).
    pub fn operands_mut(&mut self) -> Vec<&mut Value> {
        let mut v: Vec<&mut Value> = Vec::new();
        operand_refs!(self, v);
        v
    }

    /// The operand list whose values flow into nested blocks' arguments or out of them
    /// (loop-carried initial values, yields, a reduction's operands): a pass that
    /// replaces one value by several (a block pointer by its parts) expands this list,
    /// where every other operand maps to exactly one value.
    pub fn carried_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Op::For { init, .. } | Op::While { init, .. } => Some(init),
            Op::Yield(vals) => Some(vals),
            Op::Condition { args, .. } => Some(args),
            Op::Reduce { operands, .. } | Op::Scan { operands, .. } => Some(operands),
            _ => None,
        }
    }

    /// What the op does besides computing its results (see [`Effect`]).
    pub fn effect(&self) -> Effect {
        match self {
            Op::Store { .. }
            | Op::Atomic { .. }
            | Op::AtomicCas { .. }
            | Op::DevicePrint { .. }
            | Op::DeviceAssert { .. }
            | Op::CheckBlockPtr { .. }
            | Op::Barrier => Effect::Writes,
            Op::Load { .. } => Effect::Reads,
            _ => Effect::None,
        }
    }

    /// Cheap per-element or index arithmetic without memory or nested blocks: what a
    /// pass may clone freely (the pipeliner's prefetch slices, rematerialization).
    pub fn is_elementwise_or_index(&self) -> bool {
        matches!(
            self,
            Op::Const(_)
                | Op::ProgramId { .. }
                | Op::NumPrograms { .. }
                | Op::Arange { .. }
                | Op::Splat(_)
                | Op::Broadcast(_)
                | Op::ExpandDims { .. }
                | Op::Reshape(_)
                | Op::Permute { .. }
                | Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Fma { .. }
                | Op::Cast { .. }
                | Op::AddPtr { .. }
                | Op::Hint { .. }
        )
    }

    /// Structured control flow and region-carrying ops: copied block by block, never
    /// by mapping operands alone.
    pub fn is_structured(&self) -> bool {
        matches!(
            self,
            Op::For { .. }
                | Op::If { .. }
                | Op::While { .. }
                | Op::Yield(_)
                | Op::Condition { .. }
                | Op::Reduce { .. }
                | Op::Scan { .. }
        )
    }

    /// Nested blocks, in order.
    pub fn blocks(&self) -> Vec<&Block> {
        match self {
            Op::For { body, .. } => vec![body],
            Op::If {
                then_block,
                else_block,
                ..
            } => vec![then_block, else_block],
            Op::While { before, after, .. } => vec![before, after],
            Op::Reduce {
                combiner: Combiner::Region(b),
                ..
            }
            | Op::Scan {
                combiner: Combiner::Region(b),
                ..
            } => vec![b],
            _ => vec![],
        }
    }

    /// Nested blocks, in order, mutably.
    pub fn blocks_mut(&mut self) -> Vec<&mut Block> {
        match self {
            Op::For { body, .. } => vec![body],
            Op::If {
                then_block,
                else_block,
                ..
            } => vec![then_block, else_block],
            Op::While { before, after, .. } => vec![before, after],
            Op::Reduce {
                combiner: Combiner::Region(b),
                ..
            }
            | Op::Scan {
                combiner: Combiner::Region(b),
                ..
            } => vec![b],
            _ => vec![],
        }
    }

    pub fn is_terminator(&self) -> bool {
        matches!(self, Op::Yield(_) | Op::Condition { .. })
    }
}

/// Used by [`Op::Const`] printing.
pub fn fmt_const(c: Const, dtype: Option<DType>) -> String {
    match c {
        Const::Bool(b) => b.to_string(),
        Const::Int(i) if dtype == Some(DType::U64) => (i as u64).to_string(),
        Const::Int(i) => i.to_string(),
        Const::Float(f) if f.is_infinite() && f > 0.0 => "inf".into(),
        Const::Float(f) if f.is_infinite() => "-inf".into(),
        Const::Float(f) if f.is_nan() => "nan".into(),
        Const::Float(f) => format!("{f:?}"),
    }
}
