//! The WGSL backend's one compile entry: a tile-IR kernel and the device's
//! capabilities in, a printed WGSL kernel out. The lowering options come from the
//! capabilities (never from the backend's name): cooperative-matrix dots where the
//! adapter lists fragments the kernel's dots can use, the FMA form elsewhere. The
//! facade, `Compiled::wgsl()` and the simulator of this lowering all go through here,
//! so that they run the same code. naga validates the module when its pipeline is
//! created ([`crate::WgpuContext::pipeline`]), or through [`crate::validate_wgsl`].

use crate::context::Capabilities;
use crate::print::{print_wgsl, WgslKernel};
use tilewise_core::ir::Kernel;
use tilewise_core::lower::expand::ExpandOptions;
use tilewise_core::Result;

/// How the shared lowering runs for a device with `caps`, `num_warps` warps (of 32
/// invocations) per program: fragment dots where the adapter lists cooperative
/// matrices, subgroup reductions where the capabilities ask for them
/// ([`Capabilities::subgroup_reduce`]), f16 moved as `vec4<f16>` where it is native.
pub fn expand_options(caps: &Capabilities, num_warps: u32) -> ExpandOptions {
    ExpandOptions {
        coop_matrix: caps.coop_matrix.clone(),
        subgroup_reduce: caps.subgroup_reduce,
        wide_f16: caps.f16,
        ..ExpandOptions::wgsl(num_warps)
    }
}

/// Lowers `kernel` for a device with `caps` and prints it as WGSL.
pub fn compile(kernel: &Kernel, caps: &Capabilities, num_warps: u32) -> Result<WgslKernel> {
    let thread = tilewise_core::lower::to_thread_ir(kernel, &expand_options(caps, num_warps))?;
    print_wgsl(&thread, caps)
}
