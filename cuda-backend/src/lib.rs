//! tilewise-cuda: the PTX backend.
//!
//! - [`mod@compile`]: the backend's compile entry (the lowering options for a target and
//!   device, lower, print).
//! - [`mod@print`]: the PTX printer, Thread IR in, one PTX module out (no LLVM, no NVRTC).
//! - [`ptxas`]: offline checks of PTX with NVIDIA's ptxas (registers, spills, errors).
//! - [`driver`]: the CUDA driver runtime (memory, modules, launches, events), loaded
//!   dynamically so that everything builds and fails cleanly without CUDA.
//! - [`cublas`]: cuBLAS reference GEMMs for the benchmarks.

pub mod compile;
pub mod cublas;
pub mod driver;
pub mod print;
pub mod ptxas;

pub use compile::{compile, compile_with_thread_ir, expand_options, PtxOptions};
pub use cublas::{Cublas, GemmPrecision};
pub use driver::{
    lost_in_process, mark_context_lost, CudaRuntime, DeviceMemory, Event, KernelArg,
    LoadedFunction, TensorMapBytes, TensorMapRequest,
};
pub use print::{encode_scalar, print_ptx, PtxKernel, PtxParam, PtxTarget, MIN_BLOCKS_DIRECTIVE};
pub use ptxas::{assemble, find_ptxas, PtxasReport};
