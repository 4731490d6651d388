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
        native_f16: caps.f16,
        ..ExpandOptions::wgsl(num_warps)
    }
}

/// Lowers `kernel` for a device with `caps` and prints it as WGSL, within the device's
/// workgroup memory where a smaller plan fits: each plan first moves its layout
/// conversions and cross-thread reductions in rounds of bounded scratch
/// (`ExpandOptions::scratch_bytes`); then a cooperative-matrix dot reads its
/// accumulator back one fragment a round instead of several, then takes the FMA form,
/// then the K tiles of the dots fed by loads are split into 2, 4, ... slices
/// (`ExpandOptions::k_slices`, while that lowers the need; WGSL has no shared-memory
/// rings to shorten first). The kernel's `notes` say what was chosen and why. A kernel
/// that still does not fit is returned as is; creating its pipeline says how much it
/// needs.
pub fn compile(kernel: &Kernel, caps: &Capabilities, num_warps: u32) -> Result<WgslKernel> {
    compile_with(kernel, caps, &WgslOptions::new(num_warps))
}

/// What a WGSL compilation is for, beyond the device's capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WgslOptions {
    /// Warps (of 32 invocations) per program (`num_warps`).
    pub num_warps: u32,
    /// Checked mode (`tilewise_core::thread_ir::checks`): the kernel takes the hidden
    /// parameters [`WgslKernel::checked`] describes.
    pub checked: bool,
    /// The pipelining depth of `dot` loops that do not give their own (Triton's
    /// `num_stages`); `None`: by tile size.
    pub num_stages: Option<u32>,
}

impl WgslOptions {
    /// `num_warps` warps, unchecked, the default pipelining.
    pub fn new(num_warps: u32) -> WgslOptions {
        WgslOptions {
            num_warps,
            checked: false,
            num_stages: None,
        }
    }
}

/// As [`compile`], with every option.
pub fn compile_with(
    kernel: &Kernel,
    caps: &Capabilities,
    options: &WgslOptions,
) -> Result<WgslKernel> {
    let limit = caps.max_compute_workgroup_storage_size;
    let first = ExpandOptions {
        checked: options.checked,
        num_stages: options.num_stages,
        ..expand_options(caps, options.num_warps)
    };
    let attempts = [
        (first.clone(), None),
        (
            ExpandOptions {
                coop_scratch_bytes: 0,
                ..first.clone()
            },
            Some("cooperative-matrix accumulators read back one fragment a round"),
        ),
        (
            ExpandOptions {
                coop_matrix: vec![],
                ..first
            },
            Some("dots as FMAs: the cooperative-matrix form does not fit"),
        ),
    ];
    let mut tried: Vec<u32> = vec![];
    let mut last = None;
    for (options, why) in attempts {
        let (mut printed, options) = print_fitting(kernel, caps, options)?;
        let uses_coop = printed.uses_coop;
        let why = why.map(|why| {
            format!(
                "{why} (the adapter allows {limit} bytes of workgroup memory; the larger plans \
                 need {})",
                list(&tried)
            )
        });
        printed.kernel.notes.extend(why.clone());
        if printed.kernel.workgroup_bytes <= limit {
            return Ok(total(printed.kernel));
        }
        tried.push(printed.kernel.workgroup_bytes);
        last = Some((printed.kernel, options, why));
        if !uses_coop {
            break;
        }
    }
    let Some((mut best, mut options, why)) = last else {
        return Err(tilewise_core::Diagnostic::internal(
            "no WGSL compile attempt ran",
        ));
    };
    // Still over: halve the K tiles while that lowers the need.
    let mut split_needs = vec![best.workgroup_bytes];
    while options.k_slices < MAX_K_SLICES {
        options.k_slices *= 2;
        let (printed, fitted) = print_fitting(
            kernel,
            caps,
            ExpandOptions {
                scratch_bytes: None,
                ..options.clone()
            },
        )?;
        let mut printed = printed.kernel;
        if printed.workgroup_bytes >= best.workgroup_bytes {
            break;
        }
        options = fitted;
        printed.notes.extend(why.clone());
        printed.notes.push(format!(
            "K tiles split into up to {} slices (the adapter allows {limit} bytes of workgroup \
             memory; the larger slices need {})",
            options.k_slices,
            list(&split_needs)
        ));
        split_needs.push(printed.workgroup_bytes);
        let fits = printed.workgroup_bytes <= limit;
        best = printed;
        if fits {
            break;
        }
    }
    Ok(total(best))
}

/// A printed kernel and whether its dots took the cooperative-matrix form.
struct Printed {
    kernel: WgslKernel,
    uses_coop: bool,
}

/// Lowers and prints `kernel` for `options`; where it needs more workgroup memory than
/// the adapter allows, again with its layout conversions and cross-thread reductions
/// moved in rounds of at most a quarter, then a sixteenth, of the limit
/// (`ExpandOptions::scratch_bytes`), while that lowers the need. The first plan that
/// fits, else the one needing least, with the options that made it.
fn print_fitting(
    kernel: &Kernel,
    caps: &Capabilities,
    options: ExpandOptions,
) -> Result<(Printed, ExpandOptions)> {
    let limit = caps.max_compute_workgroup_storage_size;
    let print = |options: &ExpandOptions| -> Result<Printed> {
        let thread = tilewise_core::lower::to_thread_ir(kernel, options)?;
        Ok(Printed {
            uses_coop: !thread.frags.is_empty(),
            kernel: print_wgsl(&thread, caps)?,
        })
    };
    let mut best = print(&options)?;
    let mut best_options = options.clone();
    let whole = best.kernel.workgroup_bytes;
    for bound in [limit / 4, limit / 16] {
        if best.kernel.workgroup_bytes <= limit || bound == 0 {
            break;
        }
        let bounded = ExpandOptions {
            scratch_bytes: Some(bound),
            ..options.clone()
        };
        let mut printed = print(&bounded)?;
        if printed.kernel.workgroup_bytes >= best.kernel.workgroup_bytes {
            break;
        }
        printed.kernel.notes.push(format!(
            "layout conversions and reductions move through at most {bound} bytes of \
             workgroup memory a round (the adapter allows {limit} bytes; whole tiles need \
             {whole})"
        ));
        best = printed;
        best_options = bounded;
    }
    Ok((best, best_options))
}

/// The most slices a K tile is split into (the form of each dot stops it sooner).
const MAX_K_SLICES: u32 = 64;

/// `kernel` with its workgroup memory in its notes.
fn total(mut kernel: WgslKernel) -> WgslKernel {
    kernel.notes.push(format!(
        "{} bytes of workgroup memory",
        kernel.workgroup_bytes
    ));
    kernel
}

fn list(bytes: &[u32]) -> String {
    bytes
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
