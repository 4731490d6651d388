//! The tile IR: typed SSA over tiles, with structured control flow.
//!
//! # Contract
//!
//! - A **value** is a tile (static shape, one element type; rank 0 is a scalar) or a
//!   block pointer. Each value is defined once: by a kernel parameter, a block argument,
//!   or an instruction result. Types are in [`Kernel::values`].
//! - A **kernel** is specialized: constexpr parameters are folded into the body, so
//!   every shape is a number. Its remaining parameters are pointers (scalar pointer
//!   tiles) and scalars, in launch order.
//! - **Evaluation order** is program order; every program instance of the grid runs the
//!   body independently. Nested blocks (`For`, `If`, `While`, combine regions) end with
//!   a terminator (`Yield`, `Condition`) that passes values out.
//! - **Scoping** is lexical: a value is visible after its definition in its block and in
//!   blocks nested inside. Nothing flows out of a nested block except through its
//!   terminator.
//! - **No implicit broadcasting or promotion**: ops state their typing rule in
//!   [`ops`]; the front end makes shapes and dtypes agree before it emits an op.
//! - Every instruction carries the [`crate::diag::Span`] of the source that made it.
//!
//! The text form ([`print()`], read back by [`parse()`]) writes values as `%N`, types
//! as `tile<64x32xf32>`, `ptr<f16>`, `block_ptr<f16, 64x32>`; [`verify`] checks the
//! invariants above.

mod dtype;
pub mod fp8;
mod kernel;
pub mod ops;
mod parse;
mod print;
mod types;
pub mod verify;

pub use dtype::{bf16_from_f64, f16_from_f64, DType, Kind};
pub use kernel::{Block, Inst, Kernel, KernelBuilder, Param, Value, ValueData, ValueDef};
pub use ops::{
    AtomicOp, BinaryOp, CacheHints, CmpPred, Combiner, Const, HintKind, Op, Padding, Precision,
    StagedLayout, Staging, UnaryOp,
};
pub use parse::parse;
pub use print::print;
pub use types::{fmt_shape, Elem, Shape, Type};
