//! The PTX backend as a [`Backend`]: kernels are lowered to Thread IR by the shared
//! lowering, printed as PTX, JIT-compiled by the CUDA driver (with the persistent
//! cache on, linked to a cubin that is stored there and loaded from it next time) and
//! launched on one stream. Launches queue; reads and [`Backend::synchronize`] wait.

use crate::buffer::BufferId;
use crate::checked::run_checked;
use crate::device::{Backend, BoundArg, CompiledCache, DeviceKind, LaunchOptions};
use crate::disk_cache::{DiskCache, Entry};
use crate::slots::Slots;
use std::mem::ManuallyDrop;
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

/// The CUDA errors after which a context cannot be used again (the driver's "sticky"
/// errors: a kernel faulted, trapped or was killed).
const STICKY: [&str; 9] = [
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
];

pub(crate) struct CudaBackend {
    /// Dropped with the backend unless the device was lost (then its handles are
    /// leaked: the context they belonged to is gone).
    rt: ManuallyDrop<CudaRuntime>,
    target: PtxTarget,
    buffers: Slots<(DeviceMemory, DType, usize)>,
    /// The start event of the timed region, if one is open.
    timer: Mutex<Option<Event>>,
    compiled: CompiledCache<Compiled>,
    /// Kernels launched since the last synchronization that succeeded: where a fault
    /// found at the next one came from.
    in_flight: Mutex<Vec<String>>,
    /// After a sticky error: the diagnostic every later call returns.
    lost: Mutex<Option<Diagnostic>>,
    /// Checked launches' record and warnings.
    checked: crate::checked::CheckedState,
    /// The persistent cache, unless the environment turned it off.
    disk: Option<DiskCache>,
    /// 16 zero bytes: what the tensor map of an empty tensor points at (allocated
    /// when one is first needed).
    zeros: Mutex<Option<DeviceMemory>>,
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
        let target = PtxTarget {
            sm: target_override(sm.min(90))?.unwrap_or(sm.min(90)),
        };
        log::info!(
            "cuda: device {} is {} (sm_{sm}); kernels are printed for {}",
            rt.ordinal(),
            rt.name(),
            target.name()
        );
        Ok(CudaBackend {
            rt: ManuallyDrop::new(rt),
            target,
            buffers: Slots::new("CUDA buffer"),
            timer: Mutex::new(None),
            compiled: CompiledCache::default(),
            in_flight: Mutex::new(vec![]),
            lost: Mutex::new(None),
            checked: Default::default(),
            disk: DiskCache::from_environment(),
            zeros: Mutex::new(None),
        })
    }

    /// An error when the context was lost to a sticky error earlier (here, or through
    /// another handle of the same GPU, after which the context was reset).
    fn alive(&self) -> Result<()> {
        let mut lost = self.lost.lock().map_err(|_| poisoned())?;
        if lost.is_none() && !self.rt.is_current() {
            *lost = Some(Diagnostic::new(
                ErrorKind::Runtime,
                format!(
                    "the CUDA device `{}` is lost: its context was reset after a kernel faulted on another handle of the same GPU",
                    self.rt.name()
                ),
            ).with_note("its buffers are gone; use the device `Device::cuda(n)` opened since"));
            self.leak();
        }
        match &*lost {
            Some(d) => Err(d.clone()),
            None => Ok(()),
        }
    }

    /// Forgets every handle of the lost context (buffers, modules, the timer): freeing
    /// them later could free what a fresh context has been given since.
    fn leak(&self) {
        self.buffers.leak_all();
        if let Some(z) = self.zeros.lock().ok().and_then(|mut z| z.take()) {
            // (Not freed: its context is gone.)
            std::mem::forget(z);
        }
        for v in self.compiled.drain() {
            std::mem::forget(v);
        }
        if let Ok(mut t) = self.timer.lock() {
            if let Some(e) = t.take() {
                std::mem::forget(e);
            }
        }
    }

    /// Passes `r` through; a sticky error loses the device: it is recorded (with the
    /// kernels that may have caused it) and returned by every later call, and
    /// `Device::cuda` opens a fresh context for this GPU from then on.
    fn watch<T>(&self, r: Result<T>) -> Result<T> {
        let e = match r {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if !STICKY.iter().any(|s| e.message.contains(s)) {
            return Err(e);
        }
        let kernels = std::mem::take(&mut *self.in_flight.lock().map_err(|_| poisoned())?);
        let culprit = match kernels.as_slice() {
            [] => String::new(),
            [k] => format!(" while kernel `{k}` ran"),
            ks => format!(
                " while one of the kernels {} ran",
                ks.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let lost = Diagnostic::new(
            ErrorKind::Runtime,
            format!(
                "the CUDA device `{}` is lost{culprit}: {}",
                self.rt.name(),
                e.message
            ),
        )
        .with_note(
            "the driver cannot use this context again; its buffers are gone. `Device::cuda(n)` opens a fresh context",
        )
        .with_note("run the kernel on a checked device (`Device::checked`, `TILEWISE_CHECKED=1`) to find the line");
        tilewise_cuda::mark_context_lost(self.rt.ordinal());
        *self.lost.lock().map_err(|_| poisoned())? = Some(lost.clone());
        self.leak();
        Err(lost)
    }

    fn compile(
        &self,
        key: &SpecKey,
        spec: &Specialized,
        launch: &LaunchOptions,
    ) -> Result<Arc<Compiled>> {
        let (num_warps, checked) = (launch.num_warps, launch.checked);
        if let Some(c) = self.compiled.get(key, launch) {
            return Ok(c);
        }
        let spec_key = key;
        let key = format!("{}{}", key.0, launch.key_suffix());
        let start = std::time::Instant::now();
        let options = tilewise_cuda::PtxOptions {
            max_shared_per_block: Some(self.rt.max_shared_per_block_optin()),
            checked,
            num_stages: launch.num_stages,
            ..tilewise_cuda::PtxOptions::new(self.target, num_warps)
        };
        // Checked kernels stay out of the persistent cache (their checks' decoding
        // holds source spans): checked mode is for debugging runs.
        let disk = self
            .disk
            .as_ref()
            .filter(|_| !checked && !crate::kernel_files::overriding());
        let disk_key = disk.map(|_| self.disk_key(&key));
        let (ptx, function) = match disk
            .zip(disk_key.as_ref())
            .and_then(|(d, k)| self.load_cached(d, k))
        {
            Some(hit) => hit,
            None => {
                let mut lowered = std::time::Duration::ZERO;
                // Kernels with hidden parameters (`tl.device_print` outside checked
                // mode too) are not stored either.
                let stored = |ptx: &PtxKernel| {
                    disk.filter(|_| ptx.checked.is_none())
                        .zip(disk_key.as_ref())
                };
                let mut build = |options: &tilewise_cuda::PtxOptions| -> Result<_> {
                    let begin = std::time::Instant::now();
                    let mut ptx = tilewise_cuda::compile(&spec.kernel, options)?;
                    ptx.source = crate::kernel_files::dump_and_override(
                        &ptx.name,
                        std::mem::take(&mut ptx.source),
                        "ptx",
                    );
                    lowered += begin.elapsed();
                    let (function, cubin) = if stored(&ptx).is_some() {
                        let (cubin, log) =
                            self.watch(self.rt.link_cubin(&ptx.source, &ptx.entry))?;
                        let function = self.watch(self.rt.load_cubin(&cubin, &ptx.entry, log))?;
                        (function, Some(cubin))
                    } else {
                        (
                            self.watch(self.rt.load_module(&ptx.source, &ptx.entry))?,
                            None,
                        )
                    };
                    Ok((ptx, function, cubin))
                };
                let (mut ptx, mut function, mut cubin) = build(&options)?;
                // Two blocks a multiprocessor were planned by an estimate of the
                // registers; where the JIT could only keep to it by spilling, the
                // one-block plan is taken instead.
                if ptx.source.contains(tilewise_cuda::MIN_BLOCKS_DIRECTIVE)
                    && function.local_bytes() > 0
                {
                    let spilled = function.local_bytes();
                    (ptx, function, cubin) = build(&tilewise_cuda::PtxOptions {
                        occupancy_rule: false,
                        ..options
                    })?;
                    ptx.notes.push(format!(
                        "one block a multiprocessor: the two-block plan needed {spilled} bytes \
                         of local memory a thread in the driver's JIT"
                    ));
                }
                if let (Some((d, k)), Some(cubin)) = (stored(&ptx), cubin) {
                    store_cached(d, k, &ptx, cubin);
                }
                log::debug!(
                    "cuda: `{}` ({num_warps} warps{}, {}): lowered and printed PTX in {:.2} ms, \
                     driver JIT in {:.2} ms, {} bytes of shared memory",
                    ptx.name,
                    if checked { ", checked" } else { "" },
                    ptx.arch,
                    lowered.as_secs_f64() * 1e3,
                    (start.elapsed().saturating_sub(lowered)).as_secs_f64() * 1e3,
                    ptx.shared_bytes
                );
                for note in &ptx.notes {
                    log::debug!("cuda: `{}`: {note}", ptx.name);
                }
                (ptx, function)
            }
        };
        if ptx.shared_bytes > 48 * 1024 {
            function.set_max_dynamic_shared(ptx.shared_bytes)?;
        }
        let c = Arc::new(Compiled { ptx, function });
        self.compiled.insert(spec_key, launch, c.clone());
        Ok(c)
    }

    /// The persistent cache's key of a specialization compiled here: the compiler, the
    /// specialization and options, and this GPU and driver.
    fn disk_key(&self, key: &str) -> String {
        let (major, minor) = self.rt.compute_capability();
        format!(
            "compiler {}\nspecialization {key}\ntarget {}\ngpu {} sm_{major}{minor}, driver {}, {} bytes of shared memory\nTILEWISE_NUM_STAGES {}",
            crate::disk_cache::COMPILER_ID,
            self.target.name(),
            self.rt.name(),
            self.rt.driver_version(),
            self.rt.max_shared_per_block_optin(),
            std::env::var("TILEWISE_NUM_STAGES").unwrap_or_default(),
        )
    }

    /// A kernel from the persistent cache, loaded: `None` on a miss, and on an entry
    /// that does not decode or load (logged; the caller compiles and stores anew).
    fn load_cached(&self, disk: &DiskCache, key: &str) -> Option<(PtxKernel, LoadedFunction)> {
        let start = std::time::Instant::now();
        let entry = disk.get("cuda", key)?;
        let decoded = (|| {
            let ptx: PtxKernel = serde_json::from_slice(entry.section("kernel")?).ok()?;
            Some((ptx, entry.section("cubin")?))
        })();
        let Some((ptx, cubin)) = decoded else {
            log::warn!("cache: a CUDA entry without a readable kernel; compiling anew");
            return None;
        };
        match self.rt.load_cubin(cubin, &ptx.entry, String::new()) {
            Ok(function) => {
                log::debug!(
                    "cuda: `{}` loaded from the persistent cache in {:.2} ms",
                    ptx.name,
                    start.elapsed().as_secs_f64() * 1e3
                );
                Some((ptx, function))
            }
            Err(e) => {
                log::warn!(
                    "cache: the driver refused the cached image of `{}` ({}); compiling anew",
                    ptx.name,
                    e.message
                );
                None
            }
        }
    }
}

/// Stores a compiled kernel (its launch description, PTX included, and the driver's
/// image) in the persistent cache.
fn store_cached(disk: &DiskCache, key: &str, ptx: &PtxKernel, cubin: Vec<u8>) {
    match serde_json::to_vec(ptx) {
        Ok(meta) => disk.put(
            "cuda",
            key,
            &Entry::default().with("kernel", meta).with("cubin", cubin),
        ),
        Err(e) => log::warn!("cache: cannot serialize `{}`: {e}", ptx.name),
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let lost = self.lost.get_mut().map_or(true, |l| l.is_some());
        if !lost && self.rt.is_current() {
            // SAFETY: dropped once, here; nothing uses the runtime afterwards.
            unsafe { ManuallyDrop::drop(&mut self.rt) };
        } else {
            self.leak();
        }
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

    fn compute_capability(&self) -> Option<u32> {
        let (major, minor) = self.rt.compute_capability();
        Some(major * 10 + minor)
    }

    fn multiprocessor_count(&self) -> Option<u32> {
        Some(self.rt.multiprocessor_count())
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId> {
        self.alive()?;
        let mem = self.watch(self.rt.alloc_zeroed(len * dtype.size_bytes()))?;
        self.buffers.insert((mem, dtype, len))
    }

    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()> {
        self.alive()?;
        let bufs = self.buffers.lock()?;
        let (mem, _, _) = bufs.get(id)?;
        self.watch(self.rt.write(mem, 0, bytes))
    }

    fn read(&self, id: BufferId) -> Result<Vec<u8>> {
        self.alive()?;
        let bufs = self.buffers.lock()?;
        let (mem, dtype, len) = bufs.get(id)?;
        let mut bytes = self.watch(self.rt.read(mem))?;
        self.in_flight.lock().map_err(|_| poisoned())?.clear();
        bytes.truncate(len * dtype.size_bytes());
        Ok(bytes)
    }

    fn free(&self, id: BufferId) {
        self.buffers.remove(id);
    }

    fn address(&self, id: BufferId) -> Result<u64> {
        let bufs = self.buffers.lock()?;
        let (mem, _, _) = bufs.get(id)?;
        Ok(mem.address())
    }

    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()> {
        self.alive()?;
        let bufs = self.buffers.lock()?;
        let (s, _, _) = bufs.get(src)?;
        let (d, _, _) = bufs.get(dst)?;
        self.watch(self.rt.copy(s, d, bytes))
    }

    fn take_warnings(&self) -> Vec<Diagnostic> {
        self.checked.take_warnings()
    }

    fn prepare(&self, key: &SpecKey, spec: &Specialized, options: &LaunchOptions) -> Result<()> {
        self.alive()?;
        self.compile(key, spec, options).map(|_| ())
    }

    fn launch(
        &self,
        key: &SpecKey,
        spec: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        options: &LaunchOptions,
    ) -> Result<()> {
        self.alive()?;
        if grid.total() == 0 {
            return Ok(());
        }
        let compiled = self.compile(key, spec, options)?;
        match &compiled.ptx.checked {
            Some(ck) => run_checked(self, &self.checked, ck, args, |full| {
                self.launch_compiled(&compiled, spec, grid, full)
            }),
            None => self.launch_compiled(&compiled, spec, grid, args),
        }
    }

    fn synchronize(&self) -> Result<()> {
        self.alive()?;
        self.watch(self.rt.synchronize())?;
        self.in_flight.lock().map_err(|_| poisoned())?.clear();
        Ok(())
    }

    fn timer_begin(&self) -> Result<bool> {
        self.alive()?;
        let start = self.watch(self.rt.record_event())?;
        *self.timer.lock().map_err(|_| poisoned())? = Some(start);
        Ok(true)
    }

    fn timer_end(&self) -> Result<Option<f64>> {
        self.alive()?;
        let start = self
            .timer
            .lock()
            .map_err(|_| poisoned())?
            .take()
            .ok_or_else(|| Diagnostic::internal("timer_end without timer_begin"))?;
        let end = self.watch(self.rt.record_event())?;
        self.synchronize()?;
        Ok(Some(
            self.watch(self.rt.elapsed_ms(&start, &end))? as f64 * 1e-3,
        ))
    }
}

/// `TILEWISE_CUDA_TARGET` (`sm_80`, `sm_86`, `sm_89` or `sm_90`, or the number
/// alone): print kernels for an older target than the device's `native` one, to run
/// the Ampere (`mma.sync`) path on a Hopper GPU. `None` when unset; an error for a
/// target the backend does not print or that the device cannot run.
fn target_override(native: u32) -> Result<Option<u32>> {
    match std::env::var("TILEWISE_CUDA_TARGET") {
        Ok(value) => parse_target(&value, native).map(Some),
        Err(_) => Ok(None),
    }
}

/// A `TILEWISE_CUDA_TARGET` value for a device whose own target is `sm_{native}`.
fn parse_target(value: &str, native: u32) -> Result<u32> {
    let sm = value
        .trim()
        .strip_prefix("sm_")
        .unwrap_or(value.trim())
        .parse::<u32>()
        .ok()
        .filter(|sm| [80, 86, 89, 90].contains(sm));
    match sm {
        Some(sm) if sm <= native => {
            log::info!("cuda: TILEWISE_CUDA_TARGET asks for sm_{sm}");
            Ok(sm)
        }
        Some(sm) => Err(Diagnostic::new(
            ErrorKind::Backend,
            format!("TILEWISE_CUDA_TARGET=sm_{sm} is newer than this device (sm_{native})"),
        )),
        None => Err(Diagnostic::new(
            ErrorKind::Backend,
            format!("TILEWISE_CUDA_TARGET={value:?} is not one of sm_80, sm_86, sm_89, sm_90"),
        )),
    }
}

impl CudaBackend {
    /// The tensor map parameter `m`, encoded from the arguments of the parameters
    /// before it (`kargs`, built from `args`).
    fn tensor_map_arg(
        &self,
        m: &tilewise_core::thread_ir::tma::TensorMap,
        kargs: &[KernelArg],
        args: &[BoundArg],
        compiled: &Compiled,
    ) -> Result<KernelArg> {
        use tilewise_core::thread_ir::tma::Extent;
        let bad = || {
            Diagnostic::internal(format!(
                "tensor map of `{}` reads a parameter that is not before it",
                compiled.ptx.name
            ))
        };
        // Parameter index -> argument index: tensor maps before it take none.
        let arg_of = |p: u32| -> Option<&BoundArg> {
            let maps = compiled.ptx.params[..p as usize]
                .iter()
                .filter(|q| matches!(q, PtxParam::TensorMap(_)))
                .count();
            args.get(p as usize - maps)
        };
        let value = |e: &Extent| -> Result<i64> {
            match e {
                Extent::Const(c) => Ok(*c),
                Extent::Param(p) => match arg_of(*p) {
                    Some(BoundArg::Scalar(tilewise_core::launch::ScalarValue::Int(_, v))) => Ok(*v),
                    _ => Err(bad()),
                },
            }
        };
        let address = match kargs.get(m.buffer as usize) {
            Some(KernelArg::U64(a)) => *a,
            _ => return Err(bad()),
        };
        let size = m.dtype.size_bytes() as i64;
        let to_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut dims: Vec<u64> = m
            .dims
            .iter()
            .map(|e| value(e).map(to_u64))
            .collect::<Result<_>>()?;
        let mut strides: Vec<u64> = m
            .strides
            .iter()
            .map(|e| value(e).map(|s| to_u64(s.saturating_mul(size))))
            .collect::<Result<_>>()?;
        // An empty tensor (an extent of 0, or negative) reads as zeros everywhere; a map
        // cannot say so, so it describes one element of 16 zero bytes instead: every
        // box reads that element as zero and the rest as out of bounds.
        let mut address = address;
        if dims.contains(&0) {
            let mut zeros = self.zeros.lock().map_err(|_| poisoned())?;
            if zeros.is_none() {
                *zeros = Some(self.watch(self.rt.alloc_zeroed(16))?);
            }
            address = zeros.as_ref().map_or(0, |z| z.address());
            dims.iter_mut().for_each(|d| *d = 1);
            strides.iter_mut().for_each(|s| *s = 16);
        }
        let bytes = self.rt.encode_tensor_map(&tilewise_cuda::TensorMapRequest {
            address,
            dtype: m.dtype,
            dims: &dims,
            strides: &strides,
            box_dims: &m.box_dims,
            swizzle: m.swizzle,
        });
        Ok(KernelArg::TensorMap(Box::new(bytes.map_err(|e| {
            e.with_note(format!("in a launch of `{}`", compiled.ptx.name))
        })?)))
    }

    /// Launches a compiled kernel with `args` (its hidden ones included when checked).
    fn launch_compiled(
        &self,
        compiled: &Compiled,
        spec: &Specialized,
        grid: Grid,
        args: &[BoundArg],
    ) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let mut kargs = Vec::with_capacity(compiled.ptx.params.len());
        // Tensor maps take no argument: the arguments pair with the other parameters.
        let mut next_arg = 0;
        for (p, param) in compiled.ptx.params.iter().enumerate() {
            if let PtxParam::TensorMap(m) = param {
                kargs.push(self.tensor_map_arg(
                    m,
                    &kargs,
                    &args[..next_arg.min(args.len())],
                    compiled,
                )?);
                continue;
            }
            let arg = args.get(next_arg);
            next_arg += 1;
            let bad = || {
                Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "argument {p} of `{}` does not match the compiled kernel",
                        spec.kernel.name
                    ),
                )
            };
            kargs.push(match (param, arg) {
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
        {
            // Consecutive launches of one kernel are named once.
            let mut in_flight = self.in_flight.lock().map_err(|_| poisoned())?;
            if in_flight.last() != Some(&spec.kernel.name) {
                in_flight.push(spec.kernel.name.clone());
            }
        }
        self.watch(self.rt.launch(
            &compiled.function,
            grid.0,
            [compiled.ptx.threads, 1, 1],
            compiled.ptx.shared_bytes,
            &kargs,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_target;

    #[test]
    fn cuda_target_overrides_are_older_known_targets() {
        assert_eq!(parse_target("sm_80", 90).unwrap(), 80);
        assert_eq!(parse_target(" 86 ", 90).unwrap(), 86);
        assert_eq!(parse_target("sm_90", 90).unwrap(), 90);
        let newer = parse_target("sm_90", 86).unwrap_err();
        assert!(
            newer.message.contains("newer than this device (sm_86)"),
            "{}",
            newer.message
        );
        for bad in ["sm_75", "ampere", "", "sm_100"] {
            let e = parse_target(bad, 90).unwrap_err();
            assert!(
                e.message.contains("is not one of sm_80"),
                "{bad}: {}",
                e.message
            );
        }
    }
}
