//! The interpreter as a [`Backend`]: buffers are host memory, launches run at once.
//! The same backend hosts the simulators of the GPU lowerings (`SimLowering`: WGSL
//! with and without cooperative matrices, PTX for sm_80 and for sm_90a), which run the
//! Thread IR the GPU backends would print, thread by thread.

use crate::buffer::BufferId;
use crate::checked::run_checked;
use crate::device::{Backend, BoundArg, DeviceKind, LaunchOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilewise_core::frontend::Specialized;
use tilewise_core::interp::{self, HostBuffer, Options, RtArg};
use tilewise_core::ir::DType;
use tilewise_core::launch::{Grid, SpecKey};
use tilewise_core::lower::{expand::ExpandOptions, to_thread_ir};
use tilewise_core::thread_ir::checks::CheckedKernel;
use tilewise_core::thread_ir::sim::simulate;
use tilewise_core::thread_ir::ThreadKernel;
use tilewise_core::{Diagnostic, Result};

/// Which backend's lowering the simulator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SimLowering {
    /// The WGSL backend's, for a device without cooperative matrices (FMA dots).
    Wgsl,
    /// The WGSL backend's for a device with 16x16 f16 cooperative matrices (the H200
    /// through Vulkan): fragment dots.
    WgslCoop,
    /// The PTX backend's (`mma.sync` dots, asynchronous copies).
    Ptx,
    /// The PTX backend's for sm_90a (`wgmma` dots).
    PtxHopper,
}

pub(crate) struct InterpreterBackend {
    checked: bool,
    /// Run the GPU lowering in the Thread IR simulator instead of interpreting.
    simulate: bool,
    /// The lowering the simulator runs.
    lowering: SimLowering,
    lowered: Mutex<HashMap<SpecKey, Arc<ThreadKernel>>>,
    /// Slot `i` holds buffer `i`; freed slots are emptied and reused.
    buffers: Mutex<Vec<Option<HostBuffer>>>,
    /// Checked mode's warnings not yet taken ([`crate::Device::take_warnings`]):
    /// the interpreter's, and the simulators' with their record.
    warnings: tilewise_core::interp::Warnings,
    /// The simulators' checked launches: the record (warnings go to `warnings`).
    checked_state: crate::checked::CheckedState,
}

impl InterpreterBackend {
    pub fn new(checked: bool) -> Self {
        let warnings = tilewise_core::interp::Warnings::default();
        InterpreterBackend {
            checked,
            simulate: false,
            lowering: SimLowering::Wgsl,
            lowered: Mutex::default(),
            buffers: Mutex::new(vec![]),
            warnings: warnings.clone(),
            checked_state: crate::checked::CheckedState::with_warnings(warnings),
        }
    }

    /// The simulator of a GPU lowering (see [`crate::Device::simulator`]).
    pub fn simulator(lowering: SimLowering) -> Self {
        let warnings = tilewise_core::interp::Warnings::default();
        InterpreterBackend {
            checked: false,
            simulate: true,
            lowering,
            lowered: Mutex::default(),
            buffers: Mutex::new(vec![]),
            warnings: warnings.clone(),
            checked_state: crate::checked::CheckedState::with_warnings(warnings),
        }
    }

    fn lower(
        &self,
        key: &SpecKey,
        spec: &Specialized,
        launch: &LaunchOptions,
    ) -> Result<Arc<ThreadKernel>> {
        let key = &SpecKey(format!("{}{}", key.0, launch.key_suffix()));
        let (num_warps, checked) = (launch.num_warps, launch.checked);
        if let Some(k) = self.lowered.lock().ok().and_then(|m| m.get(key).cloned()) {
            return Ok(k);
        }
        // The lowering of the backend simulated, named as the simulator in errors.
        let base = match self.lowering {
            SimLowering::Ptx => tilewise_cuda::expand_options(&tilewise_cuda::PtxOptions::new(
                tilewise_cuda::PtxTarget::BASELINE,
                num_warps,
            )),
            // Staged stores from 4 KiB tiles, f32 ones included, in rounds of at most
            // 16 KiB: the small tiles of the suites and the fuzzer take the staged
            // epilogue and its rounds, which the device gives only f32 tiles above
            // 64 KiB.
            SimLowering::PtxHopper => ExpandOptions {
                staged_pairs_above: SIM_STAGED_PAIRS_ABOVE,
                staged_store_bytes: SIM_STAGED_STORE_BYTES,
                ..tilewise_cuda::expand_options(&tilewise_cuda::PtxOptions::new(
                    tilewise_cuda::PtxTarget { sm: 90 },
                    num_warps,
                ))
            },
            // A WGSL device without f16, subgroups or cooperative matrices, and with
            // little workgroup memory: layout conversions and reductions move in
            // rounds of at most 512 bytes, the plan such a device gets, so that the
            // suites and the fuzzer check it (the other lowerings move whole tiles).
            SimLowering::Wgsl => ExpandOptions {
                scratch_bytes: Some(SIM_SCRATCH_BYTES),
                ..tilewise_wgsl::expand_options(
                    &tilewise_wgsl::Capabilities::offline(false, false),
                    num_warps,
                )
            },
            SimLowering::WgslCoop => tilewise_wgsl::expand_options(
                &tilewise_wgsl::Capabilities::offline_coop(),
                num_warps,
            ),
        };
        let options = ExpandOptions {
            backend: "simulated GPU",
            checked,
            num_stages: launch.num_stages,
            ..base
        };
        let k = Arc::new(to_thread_ir(&spec.kernel, &options)?);
        for note in &k.notes {
            log::debug!(
                "simulator ({:?} lowering): `{}`: {note}",
                self.lowering,
                k.name
            );
        }
        if let Ok(mut m) = self.lowered.lock() {
            m.insert(key.clone(), k.clone());
        }
        Ok(k)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Option<HostBuffer>>> {
        self.buffers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The scratch bound of the WGSL lowering's simulator (`ExpandOptions::scratch_bytes`).
const SIM_SCRATCH_BYTES: u32 = 512;

/// The Hopper simulator's `ExpandOptions::staged_pairs_above` and `staged_store_bytes`.
const SIM_STAGED_PAIRS_ABOVE: u32 = 4 * 1024;
const SIM_STAGED_STORE_BYTES: u32 = 16 * 1024;

fn missing(id: BufferId) -> Diagnostic {
    Diagnostic::internal(format!("interpreter buffer {} does not exist", id.0))
}

impl Backend for InterpreterBackend {
    fn name(&self) -> String {
        if self.simulate {
            let lowering = match self.lowering {
                SimLowering::Ptx => "PTX",
                SimLowering::PtxHopper => "PTX for sm_90a (warpgroup MMA)",
                SimLowering::Wgsl => "WGSL",
                SimLowering::WgslCoop => "WGSL with cooperative matrices",
            };
            format!("simulator (CPU, {lowering} lowering)")
        } else if self.checked {
            "interpreter (CPU, checked)".into()
        } else {
            "interpreter (CPU)".into()
        }
    }

    fn kind(&self) -> DeviceKind {
        if self.simulate {
            DeviceKind::Simulator
        } else {
            DeviceKind::Interpreter
        }
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId> {
        let buf = HostBuffer {
            dtype,
            bytes: vec![0; len * dtype.size_bytes()],
        };
        let mut bufs = self.lock();
        if let Some(i) = bufs.iter().position(Option::is_none) {
            bufs[i] = Some(buf);
            Ok(BufferId(i))
        } else {
            bufs.push(Some(buf));
            Ok(BufferId(bufs.len() - 1))
        }
    }

    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()> {
        let mut bufs = self.lock();
        let buf = bufs
            .get_mut(id.0)
            .and_then(Option::as_mut)
            .ok_or_else(|| missing(id))?;
        // The facade writes whole buffers; checked launches may reset a prefix.
        let n = bytes.len().min(buf.bytes.len());
        buf.bytes[..n].copy_from_slice(&bytes[..n]);
        Ok(())
    }

    fn read(&self, id: BufferId) -> Result<Vec<u8>> {
        let bufs = self.lock();
        let buf = bufs
            .get(id.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| missing(id))?;
        Ok(buf.bytes.clone())
    }

    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()> {
        let mut bufs = self.lock();
        let data = bufs
            .get(src.0)
            .and_then(Option::as_ref)
            .ok_or_else(|| missing(src))?
            .bytes[..bytes]
            .to_vec();
        let d = bufs
            .get_mut(dst.0)
            .and_then(Option::as_mut)
            .ok_or_else(|| missing(dst))?;
        d.bytes[..bytes].copy_from_slice(&data);
        Ok(())
    }

    fn address(&self, id: BufferId) -> Result<u64> {
        match self.lock().get(id.0) {
            Some(Some(_)) => Ok(tilewise_core::address::encode(id.0, 0)),
            _ => Err(missing(id)),
        }
    }

    fn free(&self, id: BufferId) {
        if let Some(slot) = self.lock().get_mut(id.0) {
            *slot = None;
        }
    }

    fn take_warnings(&self) -> Vec<tilewise_core::Diagnostic> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn launch(
        &self,
        key: &SpecKey,
        kernel: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        options: &LaunchOptions,
    ) -> Result<()> {
        let checked = options.checked;
        if !self.simulate {
            return self.run(None, kernel, grid, args, checked);
        }
        let lowered = self.lower(key, kernel, options)?;
        match CheckedKernel::of(&lowered) {
            Some(ck) => run_checked(self, &self.checked_state, &ck, args, |full| {
                self.run(Some(&lowered), kernel, grid, full, false)
            }),
            None => self.run(Some(&lowered), kernel, grid, args, false),
        }
    }
}

impl InterpreterBackend {
    /// Interprets `kernel`, or simulates `lowered`, with `args` (the interpreter in
    /// checked mode where this backend or `checked` asks).
    fn run(
        &self,
        lowered: Option<&ThreadKernel>,
        kernel: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        checked: bool,
    ) -> Result<()> {
        let mut bufs = self.lock();
        // The executors index a slice by buffer id (`tilewise_core::address` encodes
        // the id): move the buffers into one, freed slots empty, and back.
        let live: Vec<bool> = bufs.iter().map(Option::is_some).collect();
        let mut dense: Vec<HostBuffer> = bufs
            .iter_mut()
            .map(|b| {
                b.take().unwrap_or(HostBuffer {
                    dtype: DType::U8,
                    bytes: vec![],
                })
            })
            .collect();
        let rt: Result<Vec<RtArg>> = args
            .iter()
            .map(|a| match *a {
                BoundArg::Buffer { id, offset, len } => match live.get(id.0) {
                    Some(true) => Ok(RtArg::Buffer {
                        buffer: id.0,
                        offset,
                        len,
                    }),
                    _ => Err(missing(id)),
                },
                BoundArg::Scalar(s) => Ok(RtArg::Scalar(s)),
            })
            .collect();
        let options = Options {
            checked: self.checked || checked,
            warnings: Some(self.warnings.clone()),
        };
        let result = rt.and_then(|rt| match lowered {
            Some(k) => simulate(k, grid, &rt, &mut dense),
            None => interp::run(&kernel.kernel, grid, &rt, &mut dense, &options),
        });
        for ((slot, b), alive) in bufs.iter_mut().zip(dense).zip(live) {
            if alive {
                *slot = Some(b);
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ConstValue, Device, Module};
    use tilewise_core::lower::expand::STAGED_STORE_NOTE;

    /// f32 accumulators below the device's 64 KiB: the Hopper simulator stages them
    /// anyway (a 64x64 tile whole, a 64x128 one in two rounds), and stays exact.
    #[test]
    fn hopper_simulator_stages_small_f32_tiles_in_rounds() {
        for (bn, staged) in [
            (64u32, "a 64x64 f32 tile, 16 bytes a thread"),
            (128, "a 64x128 f32 tile, 16 bytes a thread, in 2 rounds"),
        ] {
            staged_small_tile(bn, staged);
        }
    }

    fn staged_small_tile(bn: u32, staged: &str) {
        let module =
            Module::from_file(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/matmul.py")).unwrap();
        let kernel = module.kernel("matmul_kernel").unwrap();
        let (m, n, k) = (96usize, 176usize, 64usize);
        // Small integers in f16: every product and sum exact, in any order.
        let val = |i: usize| half::f16::from_f32(((i * 7 + 3) % 9) as f32 - 4.0);
        let a: Vec<half::f16> = (0..m * k).map(val).collect();
        let b: Vec<half::f16> = (0..k * n).map(|i| val(i * 5 + 1)).collect();
        let run = |dev: &Device| -> (Vec<f32>, crate::Compiled) {
            let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
            let dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
            let mut l = kernel
                .launch(dev, (m as u32).div_ceil(64) * (n as u32).div_ceil(bn))
                .arg(&da)
                .arg(&db)
                .arg(&dc);
            for x in [m, n, k, k, 1, n, 1, n, 1] {
                l = l.arg(x as i32);
            }
            let l = l
                .constexpr("BLOCK_SIZE_M", ConstValue::from(64u32))
                .constexpr("BLOCK_SIZE_N", ConstValue::from(bn))
                .constexpr("BLOCK_SIZE_K", ConstValue::from(32u32))
                .constexpr("GROUP_SIZE_M", ConstValue::from(2u32));
            let compiled = l.compile().unwrap();
            l.run().unwrap_or_else(|e| panic!("{}: {e}", dev.name()));
            (dev.download::<f32>(&dc).unwrap(), compiled)
        };
        let (want, compiled) = run(&Device::interpreter());
        let backend = InterpreterBackend::simulator(SimLowering::PtxHopper);
        let options = LaunchOptions {
            num_warps: 4,
            num_stages: None,
            checked: false,
        };
        let lowered = backend
            .lower(&SpecKey("t".into()), &compiled.spec, &options)
            .unwrap();
        assert!(
            lowered
                .notes
                .iter()
                .any(|n| n.contains(STAGED_STORE_NOTE) && n.ends_with(staged)),
            "{:?}",
            lowered.notes
        );
        let (got, _) = run(&Device::simulator_hopper());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.to_bits(), w.to_bits(), "element {i}: {g} != {w}");
        }
    }
}
