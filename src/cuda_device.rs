//! The PTX backend as a [`Backend`]: kernels are lowered to Thread IR by the shared
//! lowering, printed as PTX, JIT-compiled by the CUDA driver and launched on one
//! stream. Launches queue; reads and [`Backend::synchronize`] wait.

use crate::buffer::BufferId;
use crate::device::{Backend, BoundArg, DeviceKind};
use crate::slots::Slots;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilewise_core::frontend::Specialized;
use tilewise_core::ir::DType;
use tilewise_core::launch::{Grid, SpecKey};
use tilewise_core::{Diagnostic, ErrorKind, Result};
use tilewise_cuda::{
    encode_scalar, CudaRuntime, DeviceMemory, Event, KernelArg, LoadedFunction, PtxKernel,
    PtxParam, PtxTarget,
};

struct Compiled {
    ptx: PtxKernel,
    function: LoadedFunction,
}

pub(crate) struct CudaBackend {
    rt: CudaRuntime,
    target: PtxTarget,
    buffers: Slots<(DeviceMemory, DType, usize)>,
    /// The start event of the timed region, if one is open.
    timer: Mutex<Option<Event>>,
    compiled: Mutex<HashMap<String, Arc<Compiled>>>,
}

fn poisoned() -> Diagnostic {
    Diagnostic::internal("a CUDA backend lock is poisoned")
}

impl CudaBackend {
    pub fn new(rt: CudaRuntime) -> Result<Self> {
        let (major, minor) = rt.compute_capability();
        let sm = major * 10 + minor;
        if sm < 80 {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "{} is sm_{sm}; the PTX backend needs sm_80 (Ampere) or newer",
                    rt.name()
                ),
            ));
        }
        // PTX for sm_90 runs on later GPUs through the driver's JIT.
        let target = PtxTarget { sm: sm.min(90) };
        Ok(CudaBackend {
            rt,
            target,
            buffers: Slots::new("CUDA buffer"),
            timer: Mutex::new(None),
            compiled: Mutex::new(HashMap::new()),
        })
    }

    fn compile(&self, key: &SpecKey, spec: &Specialized, num_warps: u32) -> Result<Arc<Compiled>> {
        let key = format!("{}#nw{num_warps}", key.0);
        if let Some(c) = self.compiled.lock().map_err(|_| poisoned())?.get(&key) {
            return Ok(c.clone());
        }
        let options = tilewise_cuda::PtxOptions {
            max_shared_per_block: Some(self.rt.max_shared_per_block_optin()),
            ..tilewise_cuda::PtxOptions::new(self.target, num_warps)
        };
        let ptx = tilewise_cuda::compile(&spec.kernel, &options)?;
        let function = self.rt.load_module(&ptx.source, &ptx.entry)?;
        if ptx.shared_bytes > 48 * 1024 {
            function.set_max_dynamic_shared(ptx.shared_bytes)?;
        }
        let c = Arc::new(Compiled { ptx, function });
        self.compiled
            .lock()
            .map_err(|_| poisoned())?
            .insert(key, c.clone());
        Ok(c)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        let (major, minor) = self.rt.compute_capability();
        format!("cuda: {} (sm_{major}{minor})", self.rt.name())
    }

    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId> {
        let mem = self.rt.alloc_zeroed(len * dtype.size_bytes())?;
        self.buffers.insert((mem, dtype, len))
    }

    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let (mem, _, _) = bufs.get(id)?;
        self.rt.write(mem, 0, bytes)
    }

    fn read(&self, id: BufferId) -> Result<Vec<u8>> {
        let bufs = self.buffers.lock()?;
        let (mem, dtype, len) = bufs.get(id)?;
        let mut bytes = self.rt.read(mem)?;
        bytes.truncate(len * dtype.size_bytes());
        Ok(bytes)
    }

    fn free(&self, id: BufferId) {
        self.buffers.remove(id);
    }

    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let (s, _, _) = bufs.get(src)?;
        let (d, _, _) = bufs.get(dst)?;
        self.rt.copy(s, d, bytes)
    }

    fn launch(
        &self,
        key: &SpecKey,
        spec: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        num_warps: u32,
    ) -> Result<()> {
        if grid.total() == 0 {
            return Ok(());
        }
        let compiled = self.compile(key, spec, num_warps)?;
        let bufs = self.buffers.lock()?;
        let mut kargs = Vec::with_capacity(compiled.ptx.params.len());
        for (p, param) in compiled.ptx.params.iter().enumerate() {
            let bad = || {
                Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "argument {p} of `{}` does not match the compiled kernel",
                        spec.kernel.name
                    ),
                )
            };
            kargs.push(match (param, args.get(p)) {
                (PtxParam::Buffer { .. }, Some(BoundArg::Buffer { id, offset, .. })) => {
                    let (mem, dtype, _) = bufs.get(*id)?;
                    KernelArg::U64(mem.address() + (*offset * dtype.size_bytes()) as u64)
                }
                (PtxParam::Word { dtype }, Some(BoundArg::Scalar(s))) => {
                    KernelArg::U32(encode_scalar(*dtype, *s) as u32)
                }
                (PtxParam::DoubleWord { dtype }, Some(BoundArg::Scalar(s))) => {
                    KernelArg::U64(encode_scalar(*dtype, *s))
                }
                _ => return Err(bad()),
            });
        }
        self.rt.launch(
            &compiled.function,
            grid.0,
            [compiled.ptx.threads, 1, 1],
            compiled.ptx.shared_bytes,
            &kargs,
        )
    }

    fn synchronize(&self) -> Result<()> {
        self.rt.synchronize()
    }

    fn timer_begin(&self) -> Result<bool> {
        let start = self.rt.record_event()?;
        *self.timer.lock().map_err(|_| poisoned())? = Some(start);
        Ok(true)
    }

    fn timer_end(&self) -> Result<Option<f64>> {
        let start = self
            .timer
            .lock()
            .map_err(|_| poisoned())?
            .take()
            .ok_or_else(|| Diagnostic::internal("timer_end without timer_begin"))?;
        let end = self.rt.record_event()?;
        self.rt.synchronize()?;
        Ok(Some(self.rt.elapsed_ms(&start, &end)? as f64 * 1e-3))
    }
}
