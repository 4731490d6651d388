//! tilewise-wgsl: the WGSL backend's runtime on wgpu (Vulkan, Metal, DX12, GL).
//!
//! [`compile()`] lowers a kernel with the options the device's capabilities allow and
//! prints its Thread IR as a WGSL compute shader; the rest validates it and runs it:
//!
//! - [`context`]: [`WgpuContext`] picks an adapter (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`,
//!   discrete GPUs first), opens a device with the adapter's own limits and the useful
//!   optional features, and summarises them as [`Capabilities`].
//! - [`memory`]: [`GpuBuffer`] storage buffers, uploads and read-back.
//! - [`validate`]: [`validate_wgsl`] runs naga on every generated module; a rejection is
//!   a tilewise-bug diagnostic naming the kernel and pointing at the WGSL line.
//! - [`pipeline`]: the binding contract ([`KernelLayout`]), resource-limit checks
//!   ([`ResourceUsage`]) and the pipeline cache keyed by specialization.
//! - [`dispatch`]: [`Launch`]es batched in one command encoder until a read, a write or
//!   [`WgpuContext::synchronize`]; the parameter block and sub-range binding through
//!   element base offsets.
//! - [`timing`]: GPU timestamps around launches for the benchmark harness and the
//!   autotuner.
//! - [`mod@translate`]: the WGSL as SPIR-V, MSL or HLSL through naga's back ends (the
//!   portability checks in CI).
//!
//! Every failure is a [`tilewise_core::Diagnostic`]: `Backend` for what the device
//! cannot do (no adapter, a limit exceeded), `Launch` for bad arguments, `Internal`
//! for generated code that naga or wgpu rejects. Nothing here panics on a missing GPU.

pub mod compile;
pub mod context;
pub mod dispatch;
pub mod memory;
pub mod pipeline;
pub mod print;
pub mod timing;
pub mod translate;
pub mod validate;

pub use compile::{compile, compile_with, expand_options, WgslOptions};
pub use context::{parse_backends, Capabilities, CoopConfig, WgpuContext, WANTED_FEATURES};
pub use dispatch::{param_block, BufferArg, Launch, MAX_BATCH};
pub use memory::GpuBuffer;
pub use pipeline::{
    cache_key, KernelLayout, KernelPipeline, KernelSpec, PipelineCache, ResourceUsage,
    StorageBinding, UniformLayout,
};
pub use print::{print_wgsl, WgslKernel};
pub use timing::GpuTiming;
pub use translate::{translate, Language, Translated};
pub use validate::{validate_wgsl, ValidModule};

/// The wgpu and naga this crate is built against.
pub use naga;
pub use wgpu;
