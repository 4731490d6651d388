//! tilewise: Triton-dialect tile kernels, compiled for any GPU and run on the CPU.
//!
//! ```no_run
//! use tilewise::{Device, Module};
//! # fn main() -> tilewise::Result<()> {
//! let src = r#"
//! import triton
//! import triton.language as tl
//!
//! @triton.jit
//! def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
//!     offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
//!     mask = offs < n
//!     x = tl.load(x_ptr + offs, mask=mask)
//!     y = tl.load(y_ptr + offs, mask=mask)
//!     tl.store(out_ptr + offs, x + y, mask=mask)
//! "#;
//! let module = Module::parse("add.py", src)?;
//! let kernel = module.kernel("add_kernel")?;
//! let dev = Device::best();
//! let n = 1000;
//! let x = dev.upload(&vec![1.0f32; n])?;
//! let y = dev.upload(&vec![2.0f32; n])?;
//! let out = dev.zeros::<f32>(n)?;
//! kernel
//!     .launch(&dev, (n as u32).div_ceil(256))
//!     .arg(&x).arg(&y).arg(&out).arg(n as i32)
//!     .constexpr("BLOCK", 256)
//!     .run()?;
//! assert_eq!(dev.download::<f32>(&out)?, vec![3.0; n]);
//! # Ok(()) }
//! ```
//!
//! Errors are [`Diagnostic`]s: a kind, a message, and a source span rendered with a
//! caret under the offending code. Nothing here panics on user input.

mod autotune;
mod buffer;
mod checked;
mod cuda_device;
mod device;
pub mod disk_cache;
mod element;
mod interp_device;
mod kernel;
pub mod kernel_files;
mod slots;
mod wgpu_device;
pub mod worker;

pub use autotune::{ArgValue, Autotuner, Config, PreHook, Progress, TunedLaunch};
pub use buffer::{Buffer, BufferView};
pub use device::{Device, DeviceKind};
pub use element::{Element, F8E4M3, F8E5M2};
pub use kernel::{Arg, Compiled, Kernel, Launch, Module, TensorDescriptor};
pub use tilewise_core::frontend::PreHookAction;
pub use tilewise_core::ir::DType;
pub use tilewise_core::launch::{ConstValue, Grid};
pub use tilewise_core::{Diagnostic, ErrorKind, Result};
pub use {half, tilewise_core as core, tilewise_cuda as cuda, tilewise_wgsl as wgsl};
