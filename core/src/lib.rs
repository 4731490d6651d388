//! tilewise-core: the middle end of tilewise.
//!
//! - [`diag`]: the one diagnostic type, with source spans.
//! - [`address`]: the flat address space of the CPU executors (pointers as data).
//! - [`launch`]: launch arguments, constexprs, specialization keys, grids.
//! - [`ir`]: the tile IR (typed SSA over tiles), its text form and verifier.
//! - [`frontend`]: parses Triton-dialect Python and traces jit functions to tile IR,
//!   specialized per launch.
//! - [`interp`]: the reference interpreter, which runs tile IR on host buffers.
//! - [`lower`]: the shared lowering of both GPU backends, tile IR to Thread IR.
//! - [`thread_ir`]: the Thread IR (what one thread does), its text form, verifier and
//!   CPU simulator.

pub mod address;
pub mod diag;
pub mod ir;
pub mod launch;

pub use diag::{Diagnostic, ErrorKind, Result, SourceFile, Span};
pub mod frontend;
pub mod interp;
pub mod lower;
pub mod thread_ir;
