//! Devices: where buffers live and kernels run.
//!
//! A [`Device`] is a cheap handle to one executor. Each executor implements the
//! crate-private [`Backend`] trait; the interpreter is always available, the GPU
//! backends add theirs. [`Device::best`] picks the best one present.

use crate::buffer::{Buffer, BufferId};
use crate::element::{from_bytes, to_bytes, Element};
use crate::interp_device::SimLowering;
use std::fmt;
use std::sync::Arc;
use tilewise_core::frontend::Specialized;
use tilewise_core::ir::DType;
use tilewise_core::launch::{Grid, ScalarValue, SpecKey};
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// Which executor a device is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// The reference interpreter on the CPU.
    Interpreter,
    /// The Thread IR simulator on the CPU: runs the GPU lowering without a GPU.
    Simulator,
    /// A GPU (or software rasterizer) reached through wgpu, running WGSL.
    Wgpu,
    /// An NVIDIA GPU through the CUDA driver, running PTX.
    Cuda,
}

/// A launch argument after binding, in kernel parameter order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BoundArg {
    /// Elements `[offset, offset + len)` of a buffer.
    Buffer {
        id: BufferId,
        offset: usize,
        len: usize,
    },
    Scalar(ScalarValue),
}

/// What an executor provides.
/// How a launch runs a specialization, beyond its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LaunchOptions {
    /// Warps per program the GPU lowering distributes tiles over.
    pub num_warps: u32,
    /// The pipelining depth of `dot` loops that do not give their own; `None`: by
    /// tile size.
    pub num_stages: Option<u32>,
    /// Checked mode (see [`Device::checked`]).
    pub checked: bool,
}

impl LaunchOptions {
    /// The options' part of a compiled-kernel cache key.
    pub fn key_suffix(&self) -> String {
        format!(
            "#nw{}#ns{}#c{}",
            self.num_warps,
            self.num_stages.map_or("-".to_string(), |s| s.to_string()),
            self.checked as u8
        )
    }
}

/// A backend's compiled kernels by specialization key and launch options. Looked up on
/// every launch without building a key string.
pub(crate) struct CompiledCache<T> {
    inner: std::sync::Mutex<CacheInner<T>>,
}

struct CacheInner<T> {
    map: std::collections::HashMap<String, OptionsList<T>>,
    /// The last entry found or stored: a launch of the same kernel as the last one
    /// compares two strings instead of hashing one.
    last: Option<(SpecKey, LaunchOptions, Arc<T>)>,
}

/// The compiled forms of one specialization, by launch options.
type OptionsList<T> = Vec<(LaunchOptions, Arc<T>)>;

impl<T> Default for CompiledCache<T> {
    fn default() -> Self {
        CompiledCache {
            inner: std::sync::Mutex::new(CacheInner {
                map: Default::default(),
                last: None,
            }),
        }
    }
}

impl<T> CompiledCache<T> {
    pub fn get(&self, key: &SpecKey, options: &LaunchOptions) -> Option<Arc<T>> {
        let mut inner = self.inner.lock().ok()?;
        if let Some((k, o, v)) = &inner.last {
            if o == options && k.0 == key.0 {
                return Some(v.clone());
            }
        }
        let found = inner
            .map
            .get(&key.0)?
            .iter()
            .find(|(o, _)| o == options)
            .map(|(_, v)| v.clone())?;
        inner.last = Some((key.clone(), *options, found.clone()));
        Some(found)
    }

    pub fn insert(&self, key: &SpecKey, options: &LaunchOptions, value: Arc<T>) {
        if let Ok(mut inner) = self.inner.lock() {
            let list = inner.map.entry(key.0.clone()).or_default();
            list.retain(|(o, _)| o != options);
            list.push((*options, value.clone()));
            inner.last = Some((key.clone(), *options, value));
        }
    }

    /// Every entry, removed.
    pub fn drain(&self) -> Vec<Arc<T>> {
        self.inner
            .lock()
            .map(|mut inner| {
                inner.last = None;
                inner
                    .map
                    .drain()
                    .flat_map(|(_, v)| v)
                    .map(|(_, c)| c)
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub(crate) trait Backend: Send + Sync {
    fn name(&self) -> String;
    fn kind(&self) -> DeviceKind;
    /// What a wgpu device can do (`None` for the other executors).
    fn wgpu_capabilities(&self) -> Option<&tilewise_wgsl::Capabilities> {
        None
    }
    /// A CUDA device's compute capability times ten (90 for sm_90).
    fn compute_capability(&self) -> Option<u32> {
        None
    }
    /// A CUDA device's streaming multiprocessors.
    fn multiprocessor_count(&self) -> Option<u32> {
        None
    }
    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId>;
    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()>;
    fn read(&self, id: BufferId) -> Result<Vec<u8>>;
    fn free(&self, id: BufferId);
    /// The address of allocation `id`'s first byte, for kernels that take pointers as
    /// data (tables of addresses): the driver's on CUDA, `tilewise_core::address`'s on
    /// the CPU executors; an error where kernels have no addresses (WGSL).
    fn address(&self, id: BufferId) -> Result<u64>;
    /// Runs a specialization; `key` identifies it together with `options`.
    fn launch(
        &self,
        key: &SpecKey,
        kernel: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        options: &LaunchOptions,
    ) -> Result<()>;
    /// Compiles a specialization for [`Backend::launch`] without running it (where
    /// the executor compiles at all): what a later launch with the same key and
    /// options finds compiled. Safe to call from several threads at once.
    fn prepare(&self, key: &SpecKey, kernel: &Specialized, options: &LaunchOptions) -> Result<()> {
        let _ = (key, kernel, options);
        Ok(())
    }
    /// Copies `bytes` bytes from the start of `src` to the start of `dst` (queued after
    /// earlier launches): the plain buffer copy the benchmarks measure bandwidth with.
    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()>;
    /// Warnings the executor collected since the last call (checked mode's false
    /// hints that cannot change a result).
    fn take_warnings(&self) -> Vec<Diagnostic> {
        vec![]
    }
    /// Waits for queued work (no-op for synchronous executors).
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    /// Starts a region timed by the GPU's own timers; `false` when the executor has
    /// none (the caller then times on the host).
    fn timer_begin(&self) -> Result<bool> {
        Ok(false)
    }
    /// Ends the region [`Backend::timer_begin`] started, waits for its work, and
    /// returns its device time in seconds.
    fn timer_end(&self) -> Result<Option<f64>> {
        Ok(None)
    }
}

/// A handle to an executor. Clones share it.
#[derive(Clone)]
pub struct Device {
    pub(crate) backend: Arc<dyn Backend>,
    /// Launches through this handle run in checked mode ([`Device::checked`]).
    pub(crate) checked: bool,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.name())
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Device) -> bool {
        Arc::ptr_eq(&self.backend, &other.backend)
    }
}

impl Device {
    fn of(backend: Arc<dyn Backend>) -> Device {
        Device {
            backend,
            checked: false,
        }
    }

    /// This device in checked mode: the same executor and buffers, and every launch
    /// through the returned handle checked. On the GPUs and the simulators, every
    /// load, store and atomic the mask does not keep in bounds is tested against its
    /// buffer view, as are block pointers' declared shapes, `multiple_of` /
    /// `max_contiguous` / `max_constancy` hints and `tl.device_assert`; the first
    /// violation fails the launch with the located diagnostic the checked interpreter
    /// gives (the offending access is never performed), and a launch waits for its
    /// kernel. On the interpreter, the same as [`Device::interpreter_checked`].
    /// `TILEWISE_CHECKED=1` in the environment turns it on for every device;
    /// [`crate::Launch::checked`] for one launch.
    pub fn checked(&self) -> Device {
        Device {
            backend: self.backend.clone(),
            checked: true,
        }
    }

    /// Whether launches through this handle are checked (by [`Device::checked`] or
    /// `TILEWISE_CHECKED`).
    pub fn is_checked(&self) -> bool {
        self.checked || crate::checked::checked_by_environment()
    }

    /// The reference interpreter.
    pub fn interpreter() -> Device {
        Device::of(Arc::new(crate::interp_device::InterpreterBackend::new(
            false,
        )))
    }

    /// The warnings of this device's launches since the last call: in checked mode,
    /// false `multiple_of` / `max_contiguous` / `max_constancy` hints that no memory
    /// access is widened with (they cannot change a result; the others are errors).
    /// Each is a located diagnostic; each hint is reported once.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        self.backend.take_warnings()
    }

    /// The interpreter in checked mode: it also reports false `multiple_of` /
    /// `max_contiguous` / `max_constancy` hints and block pointers that reach past
    /// their buffer. A false hint that no memory access is widened with is a warning
    /// ([`Device::take_warnings`]), the others errors.
    pub fn interpreter_checked() -> Device {
        Device::of(Arc::new(crate::interp_device::InterpreterBackend::new(
            true,
        )))
    }

    /// The simulator of the WGSL backend's lowering (for a device without f16,
    /// subgroups or cooperative matrices): kernels go through the same lowering as the
    /// WGSL backend (layouts, shared memory, barriers) and run thread by thread on the
    /// CPU. Slow; for checking the lowering where there is no GPU. Its device has
    /// little workgroup memory: layout conversions and reductions move in rounds of at
    /// most 512 bytes (`ExpandOptions::scratch_bytes`), as the WGSL and PTX backends
    /// plan them for a kernel that does not fit otherwise.
    pub fn simulator() -> Device {
        Device::of(Arc::new(
            crate::interp_device::InterpreterBackend::simulator(SimLowering::Wgsl),
        ))
    }

    /// The simulator of the PTX backend's lowering: as [`Device::simulator`], with the
    /// tensor-core form of `dot` (`mma.sync` fragments, simulated exactly, tf32 inputs
    /// truncated as the hardware does).
    pub fn simulator_ptx() -> Device {
        Device::of(Arc::new(
            crate::interp_device::InterpreterBackend::simulator(SimLowering::Ptx),
        ))
    }

    /// The simulator of the PTX backend's lowering for Hopper (sm_90a): `dot`s whose
    /// types and tile fit take the warpgroup form (`wgmma` reading swizzled shared
    /// memory through matrix descriptors, as the hardware reads them, completing
    /// asynchronously), simulated exactly, so CI checks that lowering without an H100
    /// or H200. Unlike the device, it stages stores through shared memory from tiles of
    /// 4 KiB, f32 accumulators included, in rounds of at most 2 KiB
    /// (`ExpandOptions::staged_pairs_above`, `staged_store_bytes`), so that the
    /// suites' and the fuzzer's small tiles check the staged epilogue and its rounds.
    pub fn simulator_hopper() -> Device {
        Device::of(Arc::new(
            crate::interp_device::InterpreterBackend::simulator(SimLowering::PtxHopper),
        ))
    }

    /// The simulator of the WGSL backend's lowering for a device with cooperative
    /// matrices (16x16x16 f16 fragments into f32 or f16, as the H200 lists through
    /// Vulkan): `dot`s whose types and tile fit take the fragment form, simulated
    /// exactly (exact products, one rounding to the accumulator's type per
    /// multiply-add), so CI checks that lowering without such a GPU.
    pub fn simulator_coop() -> Device {
        Device::of(Arc::new(
            crate::interp_device::InterpreterBackend::simulator(SimLowering::WgslCoop),
        ))
    }

    /// A GPU through wgpu (Vulkan, Metal, DX12): the adapter `WGPU_BACKEND` and
    /// `WGPU_ADAPTER_NAME` select, discrete GPUs first. An error when none is found.
    pub fn wgpu() -> Result<Device> {
        let ctx = tilewise_wgsl::WgpuContext::new()?;
        Ok(Device::of(Arc::new(crate::wgpu_device::WgpuBackend::new(
            ctx,
        ))))
    }

    /// An NVIDIA GPU through the CUDA driver (PTX backend): device `ordinal`, sm_80 or
    /// newer. An error, never a panic, when there is no driver or no such device.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        match tilewise_cuda::CudaRuntime::new(ordinal) {
            Ok(rt) => Ok(Device::of(Arc::new(crate::cuda_device::CudaBackend::new(
                rt,
            )?))),
            // The driver gives this process no new context after a fault: the device
            // opens in a worker process instead.
            Err(e) if tilewise_cuda::lost_in_process(ordinal) => {
                log::warn!(
                    "cuda: device {ordinal} was lost to a fault in this process; opening it in a worker process"
                );
                Device::isolated(&format!("cuda:{ordinal}")).map_err(|w| {
                    let e = e.with_note(format!(
                        "a worker process could not take over: {}",
                        w.message
                    ));
                    w.notes.into_iter().fold(e, |e, n| e.with_note(n))
                })
            }
            Err(e) => Err(e),
        }
    }

    /// The best device present: an NVIDIA GPU through CUDA, else a real GPU through
    /// wgpu, else the interpreter (a software adapter such as lavapipe does not count
    /// as a GPU). `TILEWISE_DEVICE=interp|wgpu|cuda` forces one.
    /// A GPU device in a worker process (`device`: `cuda:N`, `cuda` for device 0, or
    /// `wgpu`): a kernel that ruins its context there (a CUDA fault) loses that device
    /// only, and this process goes on; a new isolated device starts a new worker. Needs
    /// the `tilewise` executable (`TILEWISE_WORKER`, next to this executable, or on
    /// `PATH`). Buffers cross the process boundary by pipe: for robustness, not speed.
    pub fn isolated(device: &str) -> Result<Device> {
        Ok(Device::of(Arc::new(crate::worker::WorkerBackend::start(
            device,
        )?)))
    }

    pub fn best() -> Device {
        let choice = std::env::var("TILEWISE_DEVICE").unwrap_or_default();
        if choice == "interp" {
            log::info!("Device::best: the interpreter (TILEWISE_DEVICE=interp)");
            return Device::interpreter();
        }
        if choice.is_empty() || choice == "cuda" {
            match Device::cuda(0) {
                Ok(dev) => {
                    log::info!("Device::best: {} (CUDA first)", dev.name());
                    return dev;
                }
                Err(e) => log::debug!("Device::best: no CUDA device: {}", e.message),
            }
        }
        match tilewise_wgsl::WgpuContext::new() {
            Ok(ctx) => {
                let backend = crate::wgpu_device::WgpuBackend::new(ctx);
                if choice == "wgpu" || !backend.is_software() {
                    let dev = Device::of(Arc::new(backend));
                    log::info!("Device::best: {} (a GPU through wgpu)", dev.name());
                    return dev;
                }
                log::debug!(
                    "Device::best: passing over {}: a software adapter (TILEWISE_DEVICE=wgpu takes it)",
                    backend.name()
                );
            }
            Err(e) => log::debug!("Device::best: no wgpu adapter: {}", e.message),
        }
        log::info!("Device::best: the interpreter (no GPU found)");
        Device::interpreter()
    }

    /// A human-readable name ("interpreter (CPU)", the adapter's name, ...), with
    /// "(checked)" after it for a handle in checked mode.
    pub fn name(&self) -> String {
        if self.checked && self.backend.kind() != DeviceKind::Interpreter {
            format!("{} (checked)", self.backend.name())
        } else {
            self.backend.name()
        }
    }

    pub fn kind(&self) -> DeviceKind {
        self.backend.kind()
    }

    /// A CUDA device's compute capability times ten (90 for the H200's sm_90); `None`
    /// on the other executors.
    pub fn compute_capability(&self) -> Option<u32> {
        self.backend.compute_capability()
    }

    /// A CUDA device's streaming multiprocessors (what a persistent kernel's grid is
    /// sized by); `None` elsewhere.
    pub fn multiprocessor_count(&self) -> Option<u32> {
        self.backend.multiprocessor_count()
    }

    /// For a wgpu device, what it can do: features, limits, subgroup sizes, the
    /// cooperative-matrix products `dot` may use. `None` for the other executors.
    pub fn wgpu_capabilities(&self) -> Option<tilewise_wgsl::Capabilities> {
        self.backend.wgpu_capabilities().cloned()
    }

    /// Allocates `len` zeroed elements of `dtype`.
    pub fn alloc(&self, dtype: DType, len: usize) -> Result<Buffer> {
        let id = self.backend.alloc(dtype, len)?;
        Ok(Buffer::new(self.clone(), id, dtype, len))
    }

    /// Allocates `len` zeroed elements of `T`.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer> {
        self.alloc(T::DTYPE, len)
    }

    /// Copies `data` into a new buffer.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<Buffer> {
        let buf = self.alloc(T::DTYPE, data.len())?;
        self.backend.write(buf.id(), &to_bytes(data))?;
        Ok(buf)
    }

    /// Overwrites a buffer with `data` (same length and element type).
    pub fn write<T: Element>(&self, buffer: &Buffer, data: &[T]) -> Result<()> {
        self.check_owner(buffer)?;
        check_dtype::<T>(buffer)?;
        if data.len() != buffer.len() {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "cannot write {} elements into a buffer of {}",
                    data.len(),
                    buffer.len()
                ),
            ));
        }
        self.backend.write(buffer.id(), &to_bytes(data))
    }

    /// Copies a buffer back to the host, waiting for queued work first.
    pub fn download<T: Element>(&self, buffer: &Buffer) -> Result<Vec<T>> {
        self.check_owner(buffer)?;
        check_dtype::<T>(buffer)?;
        self.backend.synchronize()?;
        Ok(from_bytes(&self.backend.read(buffer.id())?))
    }

    /// Copies the whole of `src` into `dst` (same dtype and length), after the launches
    /// queued so far.
    pub fn copy(&self, src: &Buffer, dst: &Buffer) -> Result<()> {
        self.check_owner(src)?;
        self.check_owner(dst)?;
        if src.dtype() != dst.dtype() || src.len() != dst.len() {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "cannot copy {} x {} into {} x {}",
                    src.len(),
                    src.dtype(),
                    dst.len(),
                    dst.dtype()
                ),
            ));
        }
        self.backend
            .copy(src.id(), dst.id(), src.len() * src.dtype().size_bytes())
    }

    /// Waits until every launch queued so far has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.backend.synchronize()
    }

    /// Runs `work` (which queues launches and copies on this device) and returns the
    /// device time it took in seconds, measured by the GPU's own timers (CUDA events
    /// around the work; on wgpu, timestamps at the start and end of every compute pass,
    /// first start to last end, after waiting for earlier work), after waiting for it.
    /// `None` when this executor has no GPU timers (the CPU executors, an adapter
    /// without timestamp queries, a region that ran no kernel); the work still ran, and
    /// the caller times it on the host.
    pub fn time_on_device(&self, work: impl FnOnce() -> Result<()>) -> Result<Option<f64>> {
        if !self.backend.timer_begin()? {
            work()?;
            return Ok(None);
        }
        let result = work();
        let time = self.backend.timer_end();
        result?;
        time
    }

    pub(crate) fn check_owner(&self, buffer: &Buffer) -> Result<()> {
        if buffer.device() != self {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "a buffer of device `{}` was used on device `{}`",
                    buffer.device().name(),
                    self.name()
                ),
            ));
        }
        Ok(())
    }
}

fn check_dtype<T: Element>(buffer: &Buffer) -> Result<()> {
    if buffer.dtype() != T::DTYPE {
        return Err(Diagnostic::new(
            ErrorKind::Launch,
            format!("buffer holds {} elements, not {}", buffer.dtype(), T::DTYPE),
        ));
    }
    Ok(())
}
