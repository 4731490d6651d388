//! The PTX backend's one compile entry: a tile-IR kernel, the target and what the
//! device allows in, a printed PTX module out. The facade's CUDA device,
//! `Compiled::ptx_for`, the simulator of this lowering and the benchmarks all go
//! through here, so that they run the same code (the ring budget included).

use crate::print::{ask_blocks_per_sm, print_ptx, PtxKernel, PtxTarget};
use std::collections::HashSet;
use tilewise_core::ir::Kernel;
use tilewise_core::lower::expand::{
    ExpandOptions, DEFAULT_RING_BUDGET, STAGED_AHEAD_NOTE, STAGED_STORE_NOTE,
};
use tilewise_core::thread_ir::{Reg, Stmt, ThreadKernel};
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
    /// Whether [`compile`] may give up the warpgroup rings' extra slot where that lets
    /// two blocks share a multiprocessor (asking ptxas for it with `.minnctapersm`).
    /// The CUDA device turns it off for a kernel whose two-block plan the driver's
    /// JIT could only fit by spilling registers.
    pub occupancy_rule: bool,
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
            occupancy_rule: true,
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
        // Warpgroup MMA is sm_90a's alone (not in sm_100's PTX); tf32 too, for large
        // tiles (`ExpandOptions::wgmma_tf32`).
        wgmma: options.target.sm == 90,
        wgmma_tf32: options.target.sm == 90,
        // tf32 with a row-major `b` as `C^T = B^T A^T`, `a` of the instruction in
        // registers; `TILEWISE_WGMMA_TF32=held` keeps the transpose through registers.
        wgmma_register_a: options.target.sm == 90
            && std::env::var("TILEWISE_WGMMA_TF32").map_or(true, |v| v != "held"),
        // Copies by the tensor memory accelerator (not in checked mode: there every
        // access is tested where the program makes it).
        tma: options.target.sm == 90 && !options.checked,
        ..ExpandOptions::ptx(options.num_warps)
    }
}

/// Lowers `kernel` for `options` and prints it as PTX. Where the device's shared
/// memory is known and the kernel needs more, the warpgroup rings give up their extra
/// slot (`ExpandOptions::ring_slack`), stores staged through shared memory move in
/// smaller rounds (down to 8 KiB of the tile a round) and then are no longer staged,
/// then the pipelines' rings shrink (fewer
/// stages, then none: loads go through registers), then layout conversions and
/// reductions move in rounds of bounded scratch (`ExpandOptions::scratch_bytes`), then
/// the K tiles of the dots fed by
/// loads are split into 2, 4, ... slices (`ExpandOptions::k_slices`, while that lowers
/// the need) before it fails, with the need and the limit in the message; the notes
/// say what was given up.
pub fn compile(kernel: &Kernel, options: &PtxOptions) -> Result<PtxKernel> {
    compile_with_thread_ir(kernel, options).map(|(_, ptx)| ptx)
}

/// [`compile`], with the Thread IR the PTX was printed from (which the simulator runs).
pub fn compile_with_thread_ir(
    kernel: &Kernel,
    options: &PtxOptions,
) -> Result<(ThreadKernel, PtxKernel)> {
    let mut expand = expand_options(options);
    let mut needs: Vec<u32> = vec![];
    // With the rings gone: the need of each K split tried (whole tiles first).
    let mut split_needs: Vec<u32> = vec![];
    // The need of each scratch bound tried (unbounded first).
    let mut scratch_needs: Vec<u32> = vec![];
    // The need of each staged-store round tried (the largest first).
    let mut staged_needs: Vec<u32> = vec![];
    // The need with the warpgroup rings' extra slot, where it was given up.
    let mut slack_need: Option<u32> = None;
    loop {
        let mut thread = tilewise_core::lower::to_thread_ir(kernel, &expand)?;
        let mut ptx = print_ptx(&thread, options.target)?;
        let Some(limit) = options.max_shared_per_block else {
            return Ok((thread, ptx));
        };
        // Giving up the extra slot changed nothing where no ring had one.
        if slack_need == Some(ptx.shared_bytes) {
            slack_need = None;
        }
        if ptx.shared_bytes <= limit {
            // Operands staged once ahead of their loops hold their memory across it:
            // where staging them every trip instead lets more blocks share a
            // multiprocessor, that plan is taken (attention's `q` at 128x64, d 64).
            let staged_ahead = thread.notes.iter().any(|n| n.contains(STAGED_AHEAD_NOTE));
            if staged_ahead && expand.stage_invariant_operands_once {
                let each_trip = ExpandOptions {
                    stage_invariant_operands_once: false,
                    ..expand.clone()
                };
                let t = tilewise_core::lower::to_thread_ir(kernel, &each_trip)?;
                let p = print_ptx(&t, options.target)?;
                let (now, then) = (
                    blocks_per_sm(ptx.shared_bytes, limit),
                    blocks_per_sm(p.shared_bytes, limit),
                );
                if p.shared_bytes <= limit && then > now {
                    let held = ptx.shared_bytes;
                    (thread, ptx, expand) = (t, p, each_trip);
                    ptx.notes.push(format!(
                        "loop-invariant dot operands staged every trip: {then} blocks a \
                         multiprocessor instead of {now} ({} bytes of shared memory, not {held})",
                        ptx.shared_bytes
                    ));
                }
            }
            // The warpgroup rings' extra slot saves a barrier a K step; where giving it
            // up lets a second block share the multiprocessor (its shared memory, and
            // the registers by an estimate that `.minnctapersm` then holds ptxas to),
            // the other block's copies and products cover that barrier and more
            // (128x128x64, 8 warps, 3 stages: 279 -> 246 us at 4096^3, run 124).
            if expand.ring_slack && slack_need.is_none() && options.occupancy_rule {
                let now = blocks_per_sm(ptx.shared_bytes, limit);
                if blocks_by_registers(&thread) > now {
                    let lean = ExpandOptions {
                        ring_slack: false,
                        ..expand.clone()
                    };
                    let t = tilewise_core::lower::to_thread_ir(kernel, &lean)?;
                    let p = print_ptx(&t, options.target)?;
                    let then = blocks_per_sm(p.shared_bytes, limit).min(blocks_by_registers(&t));
                    if p.shared_bytes <= limit && then > now {
                        let held = ptx.shared_bytes;
                        (thread, ptx) = (t, p);
                        ask_blocks_per_sm(&mut ptx, then);
                        ptx.notes.push(format!(
                            "warpgroup rings without their extra slot: {then} blocks a \
                             multiprocessor instead of {now} ({} bytes of shared memory, \
                             not {held}; `.minnctapersm {then}`)",
                            ptx.shared_bytes
                        ));
                    }
                }
            }
            if let Some(need) = slack_need {
                ptx.notes.push(format!(
                    "warpgroup rings without their extra slot, to fit {limit} bytes of \
                     shared memory a block (with it, the kernel needed {need})"
                ));
            }
            let staged = thread.notes.iter().any(|n| n.contains(STAGED_STORE_NOTE));
            if !staged_needs.is_empty() {
                ptx.notes.push(if staged {
                    format!(
                        "stores staged through shared memory in rounds of at most {} bytes \
                         of the tile to fit {limit} bytes a block (the larger rounds needed {})",
                        expand.staged_store_bytes,
                        list(&staged_needs)
                    )
                } else {
                    format!(
                        "stores not staged through shared memory, to fit {limit} bytes a \
                         block (staged, the kernel needed {})",
                        list(&staged_needs)
                    )
                });
            }
            if !needs.is_empty() {
                ptx.notes.push(format!(
                    "pipelines shortened to fit {limit} bytes of shared memory a block \
                     (ring budget {} bytes; the longer plans needed {})",
                    expand.ring_budget,
                    list(&needs)
                ));
            }
            if let (Some(bound), false) = (expand.scratch_bytes, scratch_needs.is_empty()) {
                ptx.notes.push(format!(
                    "layout conversions and reductions move through at most {bound} bytes of \
                     shared memory a round to fit {limit} bytes a block (the larger rounds \
                     needed {})",
                    list(&scratch_needs)
                ));
            }
            if !split_needs.is_empty() {
                ptx.notes.push(format!(
                    "K tiles split into up to {} slices to fit {limit} bytes of shared memory \
                     a block (the larger slices needed {})",
                    expand.k_slices,
                    list(&split_needs)
                ));
            }
            ptx.notes
                .push(format!("{} bytes of shared memory", ptx.shared_bytes));
            return Ok((thread, ptx));
        }
        // First the warpgroup rings' extra slot (a barrier's worth of overlap), then
        // staged stores: smaller rounds, then none (the pipeline matters more).
        if expand.ring_slack {
            slack_need = Some(ptx.shared_bytes);
            expand.ring_slack = false;
            continue;
        }
        if expand.staged_stores && thread.notes.iter().any(|n| n.contains(STAGED_STORE_NOTE)) {
            staged_needs.push(ptx.shared_bytes);
            if expand.staged_store_bytes > MIN_STAGED_STORE_BYTES {
                expand.staged_store_bytes /= 2;
            } else {
                expand.staged_stores = false;
            }
            continue;
        }
        if expand.ring_budget > 0 {
            needs.push(ptx.shared_bytes);
            // Give the rings less by what is over, and at least a quarter less each time.
            let over = ptx.shared_bytes - limit;
            expand.ring_budget = expand
                .ring_budget
                .saturating_sub(over.max(expand.ring_budget / 4).max(1));
            continue;
        }
        // Without rings: layout conversions and reductions in rounds of at most a
        // quarter, then a sixteenth, of the limit (kept for the K splits: what the
        // rounds save can decide whether a split fits).
        if split_needs.is_empty() && expand.scratch_bytes != Some(limit / 16) {
            scratch_needs.push(ptx.shared_bytes);
            expand.scratch_bytes = Some(match expand.scratch_bytes {
                None => limit / 4,
                Some(_) => limit / 16,
            });
            continue;
        }
        // Then halve the K tiles while that lowers the need (a dot keeps its form, so
        // its slices stop at the instruction's K).
        let helped = split_needs.last().is_none_or(|&b| ptx.shared_bytes < b);
        if helped && expand.k_slices < MAX_K_SLICES {
            split_needs.push(ptx.shared_bytes);
            expand.k_slices *= 2;
            continue;
        }
        let (need, slices) = match split_needs.last() {
            Some(&b) if !helped => (b, expand.k_slices / 2),
            _ => (ptx.shared_bytes, expand.k_slices),
        };
        let split = if slices > 1 {
            format!("with the K tiles of its dots split into up to {slices} slices")
        } else {
            "with the K tiles of its dots split where a dot allows it (none helped)".to_string()
        };
        return Err(Diagnostic::new(
            ErrorKind::Backend,
            format!(
                "kernel `{}` needs {need} bytes of shared memory a block, more than the {limit} this device allows, even without pipelined loads, with layout conversions and reductions in rounds, {split}, and with arrays sharing memory by lifetime; use smaller blocks",
                ptx.name
            ),
        ));
    }
}

/// The smallest round of a staged store the shared-memory fitting tries before it
/// stores from the accumulator's own layout.
const MIN_STAGED_STORE_BYTES: u32 = 8 * 1024;

/// How many blocks needing `shared` bytes of shared memory fit one multiprocessor
/// whose blocks may each opt into `limit` bytes (the multiprocessor has 1 KiB more,
/// and each block reserves 1 KiB: 228 KiB and 227 KiB on the H100 and H200).
fn blocks_per_sm(shared: u32, limit: u32) -> u32 {
    (limit + 1024) / (shared + 1024)
}

/// Registers a thread is assumed to need beside its `wgmma` accumulators (addresses,
/// loop state, temporaries): tutorial 03 at 128x128x64 with 8 warps holds 64
/// accumulators and ptxas gives it 105 registers.
const REGISTERS_BESIDE_ACCUMULATORS: u32 = 64;

/// How many blocks of `k` the 64 K registers and 2,048 threads of a multiprocessor
/// hold, by the estimate of [`REGISTERS_BESIDE_ACCUMULATORS`] (sm_80 to sm_90 alike);
/// 0 for a kernel without `wgmma` (no ring of it has a slot to give up, so the rule
/// does not lower it again).
fn blocks_by_registers(k: &ThreadKernel) -> u32 {
    fn accumulators(body: &[Stmt], acc: &mut HashSet<Reg>) {
        for s in body {
            if let Stmt::Wgmma { acc: regs, .. } = s {
                acc.extend(regs.iter().copied());
            }
            for b in s.bodies() {
                accumulators(b, acc);
            }
        }
    }
    let mut acc = HashSet::new();
    accumulators(&k.body, &mut acc);
    if acc.is_empty() {
        return 0;
    }
    let per_thread = acc.len() as u32 + REGISTERS_BESIDE_ACCUMULATORS;
    let threads = k.threads.max(1);
    (65536 / (threads * per_thread)).min(2048 / threads)
}

/// The most slices a K tile is split into (the form of each dot stops it sooner).
const MAX_K_SLICES: u32 = 64;

fn list(bytes: &[u32]) -> String {
    bytes
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
