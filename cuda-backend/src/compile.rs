//! The PTX backend's one compile entry: a tile-IR kernel, the target and what the
//! device allows in, a printed PTX module out. The facade's CUDA device,
//! `Compiled::ptx_for`, the simulator of this lowering and the benchmarks all go
//! through here, so that they run the same code (the ring budget included).

use crate::print::{print_ptx, PtxKernel, PtxTarget};
use tilewise_core::ir::Kernel;
use tilewise_core::lower::expand::{ExpandOptions, DEFAULT_RING_BUDGET};
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// What a PTX compilation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxOptions {
    pub target: PtxTarget,
    /// Warps per program (`num_warps`).
    pub num_warps: u32,
    /// Shared memory a block may opt into on the device, in bytes; `None` where the
    /// device is not known (`DEFAULT_RING_BUDGET` then caps the rings).
    pub max_shared_per_block: Option<u32>,
    /// Checked mode (`tilewise_core::thread_ir::checks`): accesses tested against
    /// their buffers, asserts and hints tested, violations reported through a record.
    pub checked: bool,
    /// The pipelining depth of `dot` loops that do not give their own (Triton's
    /// `num_stages`); `None`: by tile size.
    pub num_stages: Option<u32>,
}

impl PtxOptions {
    /// For `target` and `num_warps`, the device not known.
    pub fn new(target: PtxTarget, num_warps: u32) -> PtxOptions {
        PtxOptions {
            target,
            num_warps,
            max_shared_per_block: None,
            checked: false,
            num_stages: None,
        }
    }
}

/// How the shared lowering runs for `options`: rings of staged dot operands get 90%
/// of what a block may opt into (204 KiB on the H200, 147 KiB on the A100, 89 KiB on
/// consumer Ampere and Ada: four stages of a 128x256x64 f16 tile fit the H200);
/// [`compile`] shortens them where the whole kernel then does not fit.
pub fn expand_options(options: &PtxOptions) -> ExpandOptions {
    ExpandOptions {
        ring_budget: options
            .max_shared_per_block
            .map_or(DEFAULT_RING_BUDGET, |b| b / 10 * 9),
        checked: options.checked,
        num_stages: options.num_stages,
        // Warpgroup MMA is sm_90a's alone (not in sm_100's PTX).
        wgmma: options.target.sm == 90,
        ..ExpandOptions::ptx(options.num_warps)
    }
}

/// Lowers `kernel` for `options` and prints it as PTX. Where the device's shared
/// memory is known and the kernel needs more, the pipelines' rings shrink (fewer
/// stages, then none: loads go through registers) before it fails, with the need and
/// the limit in the message; the notes say what was given up.
pub fn compile(kernel: &Kernel, options: &PtxOptions) -> Result<PtxKernel> {
    let mut expand = expand_options(options);
    let mut needs: Vec<u32> = vec![];
    loop {
        let thread = tilewise_core::lower::to_thread_ir(kernel, &expand)?;
        let mut ptx = print_ptx(&thread, options.target)?;
        let Some(limit) = options.max_shared_per_block else {
            return Ok(ptx);
        };
        if ptx.shared_bytes <= limit {
            if !needs.is_empty() {
                ptx.notes.push(format!(
                    "pipelines shortened to fit {limit} bytes of shared memory a block                      (ring budget {} bytes; the longer plans needed {})",
                    expand.ring_budget,
                    needs.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
            ptx.notes
                .push(format!("{} bytes of shared memory", ptx.shared_bytes));
            return Ok(ptx);
        }
        if expand.ring_budget == 0 {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "kernel `{}` needs {} bytes of shared memory a block, more than the {limit} this device allows, even without pipelined loads and with arrays sharing memory by lifetime; use smaller blocks",
                    ptx.name, ptx.shared_bytes
                ),
            ));
        }
        needs.push(ptx.shared_bytes);
        // Give the rings less by what is over, and at least a quarter less each time.
        let over = ptx.shared_bytes - limit;
        expand.ring_budget = expand
            .ring_budget
            .saturating_sub(over.max(expand.ring_budget / 4).max(1));
    }
}
