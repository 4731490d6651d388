//! tilewise-fuzz: the differential fuzzer.
//!
//! Random, well-typed tile programs ([`generate()`]) are written out as Triton source
//! ([`Program::source`]) and run on every executor: the interpreter as the reference,
//! the simulators of the GPU lowerings (WGSL, PTX, sm_90's PTX, cooperative matrices),
//! wgpu, CUDA, and ptxas as an assembler check. Outputs are compared per dtype, exactly
//! where the program's values are exact by construction and within a tolerance
//! derived from the operations otherwise
//! ([`program::Info`]). A program that disagrees is shrunk to a small one
//! ([`shrink::shrink`]) and printed with the seed that reproduces it.
//!
//! `cargo run --release -p tilewise-fuzz -- --count 1000` runs a batch; `--help` says
//! more. The CI batch is `fuzz/tests/ci_batch.rs`.

pub mod exec;
pub mod generate;
mod print;
pub mod program;
mod rules;
pub mod shrink;

pub use exec::{run_batch, BatchReport, Executor, Failure};
pub use generate::{generate, Options};
pub use program::Program;
