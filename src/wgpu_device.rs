//! The WGSL backend as a [`Backend`]: kernels are lowered to Thread IR by the shared
//! lowering, printed as WGSL, validated by naga and run by wgpu.

use crate::buffer::BufferId;
use crate::checked::run_checked;
use crate::device::{Backend, BoundArg, CompiledCache, DeviceKind, LaunchOptions};
use crate::disk_cache::{DiskCache, Entry};
use crate::slots::Slots;
use std::sync::{Arc, Mutex};
use tilewise_core::frontend::Specialized;
use tilewise_core::ir::DType;
use tilewise_core::launch::{Grid, ScalarValue, SpecKey};
use tilewise_core::{Diagnostic, ErrorKind, Result};
use tilewise_wgsl::{
    BufferArg, GpuBuffer, KernelPipeline, KernelSpec, Launch, WgpuContext, WgslKernel,
};

struct Compiled {
    wgsl: WgslKernel,
    pipeline: Arc<KernelPipeline>,
}

pub(crate) struct WgpuBackend {
    ctx: WgpuContext,
    buffers: Slots<(GpuBuffer, DType, usize)>,
    compiled: CompiledCache<Compiled>,
    /// Kernels launched since the last synchronization that succeeded: named in an
    /// error the device reports later.
    in_flight: Mutex<Vec<String>>,
    /// Checked launches' record and warnings.
    checked: crate::checked::CheckedState,
    /// The persistent cache, unless the environment turned it off.
    disk: Option<DiskCache>,
}

fn poisoned() -> Diagnostic {
    Diagnostic::internal("a wgpu backend lock is poisoned")
}

impl WgpuBackend {
    pub fn new(ctx: WgpuContext) -> Self {
        let disk = DiskCache::from_environment();
        if let (Some(d), Some(k)) = (&disk, ctx.driver_cache_key()) {
            let data = d.get(DRIVER_CACHE, &k);
            let bytes = data.as_ref().and_then(|e| e.section("data"));
            if ctx.attach_driver_cache(bytes) {
                log::debug!(
                    "wgpu: the driver's pipeline cache starts from {} bytes on disk",
                    bytes.map_or(0, |b| b.len())
                );
            }
        }
        WgpuBackend {
            disk,
            ctx,
            buffers: Slots::new("wgpu buffer"),
            compiled: CompiledCache::default(),
            in_flight: Mutex::new(vec![]),
            checked: Default::default(),
        }
    }

    /// Passes `r` through; an error the device reports out of band (validation, a
    /// lost device) names the kernels queued since the last synchronization.
    fn watch<T>(&self, r: Result<T>) -> Result<T> {
        let e = match r {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let kernels = std::mem::take(&mut *self.in_flight.lock().map_err(|_| poisoned())?);
        Err(match kernels.as_slice() {
            [] => e,
            [k] => e.with_note(format!("reported after kernel `{k}` was queued")),
            ks => e.with_note(format!(
                "reported after the kernels {} were queued",
                ks.iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        })
    }

    pub fn is_software(&self) -> bool {
        self.ctx.adapter_info().device_type == tilewise_wgsl::wgpu::DeviceType::Cpu
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
        let key = &SpecKey(format!("{}{}", key.0, launch.key_suffix()));
        let start = std::time::Instant::now();
        // Checked kernels stay out of the persistent cache (their checks' decoding
        // holds source spans).
        let disk = self
            .disk
            .as_ref()
            .filter(|_| !checked && !crate::kernel_files::overriding());
        let disk_key = disk.map(|_| self.disk_key(&key.0));
        let cached = disk.zip(disk_key.as_ref()).and_then(|(d, k)| {
            let entry = d.get("wgpu", k)?;
            let decoded = entry
                .section("kernel")
                .and_then(|b| serde_json::from_slice::<WgslKernel>(b).ok());
            if decoded.is_none() {
                log::warn!("cache: a wgpu entry without a readable kernel; compiling anew");
            }
            decoded
        });
        let from_disk = cached.is_some();
        let mut wgsl = match cached {
            Some(w) => w,
            None => tilewise_wgsl::compile_with(
                &spec.kernel,
                self.ctx.capabilities(),
                &tilewise_wgsl::WgslOptions {
                    num_warps,
                    checked,
                    num_stages: launch.num_stages,
                },
            )?,
        };
        let lowered = start.elapsed();
        wgsl.source = crate::kernel_files::dump_and_override(
            &wgsl.name,
            std::mem::take(&mut wgsl.source),
            "wgsl",
        );
        let pipeline = self.ctx.pipeline(&KernelSpec {
            key: &key.0,
            kernel_name: &wgsl.name,
            entry_point: &wgsl.entry_point,
            source: &wgsl.source,
            layout: &wgsl.layout,
        })?;
        log::debug!(
            "wgpu: `{}` ({num_warps} warps{}): {} WGSL ({} bytes) in {:.2} ms, \
             pipeline created in {:.2} ms",
            wgsl.name,
            if checked { ", checked" } else { "" },
            if from_disk {
                "read the cached"
            } else {
                "lowered and printed"
            },
            wgsl.source.len(),
            lowered.as_secs_f64() * 1e3,
            (start.elapsed() - lowered).as_secs_f64() * 1e3
        );
        // Kernels with hidden parameters (`tl.device_print` outside checked mode too)
        // are not stored either.
        if let (Some(d), Some(k), false, None) = (disk, &disk_key, from_disk, &wgsl.checked) {
            match serde_json::to_vec(&wgsl) {
                Ok(meta) => d.put("wgpu", k, &Entry::default().with("kernel", meta)),
                Err(e) => log::warn!("cache: cannot serialize `{}`: {e}", wgsl.name),
            }
        }
        if !from_disk {
            self.store_driver_cache();
        }
        let c = Arc::new(Compiled { wgsl, pipeline });
        self.compiled.insert(spec_key, launch, c.clone());
        Ok(c)
    }

    /// The persistent cache's key of a specialization compiled here: the compiler, the
    /// specialization and options, and this adapter, driver and capabilities.
    fn disk_key(&self, key: &str) -> String {
        let info = self.ctx.adapter_info();
        format!(
            "compiler {}\nspecialization {key}\nadapter {} ({:?}, vendor {:#x}, device {:#x}), driver {} {}\ncapabilities {:?}\nTILEWISE_NUM_STAGES {}",
            crate::disk_cache::COMPILER_ID,
            info.name,
            info.backend,
            info.vendor,
            info.device,
            info.driver,
            info.driver_info,
            self.ctx.capabilities(),
            std::env::var("TILEWISE_NUM_STAGES").unwrap_or_default(),
        )
    }

    /// Stores the driver's pipeline cache (after a pipeline was compiled anew).
    fn store_driver_cache(&self) {
        let (Some(d), Some(k)) = (&self.disk, self.ctx.driver_cache_key()) else {
            return;
        };
        if let Some(data) = self.ctx.driver_cache_data() {
            d.put(DRIVER_CACHE, &k, &Entry::default().with("data", data));
        }
    }
}

/// The persistent cache's kind for the driver's pipeline caches.
const DRIVER_CACHE: &str = "wgpu-driver-pipelines";

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        let info = self.ctx.adapter_info();
        format!("wgpu: {} ({:?})", info.name, info.backend)
    }

    fn kind(&self) -> DeviceKind {
        DeviceKind::Wgpu
    }

    fn wgpu_capabilities(&self) -> Option<&tilewise_wgsl::Capabilities> {
        Some(self.ctx.capabilities())
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId> {
        let bytes = (len * dtype.size_bytes()).max(4) as u64;
        let buf = self.ctx.create_buffer(bytes)?;
        // Fresh buffers read as zero, like the interpreter's.
        self.ctx.write_buffer(&buf, 0, &vec![0u8; bytes as usize])?;
        self.buffers.insert((buf, dtype, len))
    }

    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let (buf, _, _) = bufs.get(id)?;
        self.ctx.write_buffer(buf, 0, bytes)
    }

    fn read(&self, id: BufferId) -> Result<Vec<u8>> {
        let bufs = self.buffers.lock()?;
        let (buf, dtype, len) = bufs.get(id)?;
        let mut bytes = self.watch(self.ctx.read_buffer(buf))?;
        bytes.truncate(len * dtype.size_bytes());
        Ok(bytes)
    }

    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let (s, _, _) = bufs.get(src)?;
        let (d, _, _) = bufs.get(dst)?;
        if bytes.is_multiple_of(16) && bytes > 0 {
            // A compute-shader copy (16 bytes a thread): the bandwidth a kernel can
            // reach. Drivers may run vkCmdCopyBuffer on a slower copy engine.
            let pipeline = self.ctx.pipeline(&KernelSpec {
                key: "tilewise-copy-vec4",
                kernel_name: "copy",
                entry_point: "main",
                source: COPY_WGSL,
                layout: &copy_layout(),
            })?;
            let words = (bytes / 16) as u32;
            let max = self.ctx.capabilities().max_compute_workgroups_per_dimension;
            let workgroups = WgslKernel::workgroups([words.div_ceil(256), 1, 1], max)?;
            let mut params = [0u8; 16];
            params[..4].copy_from_slice(&words.to_le_bytes());
            params[4..8].copy_from_slice(&workgroups[0].to_le_bytes());
            let buffers = [
                BufferArg::range(s, 0, bytes as u64),
                BufferArg::range(d, 0, bytes as u64),
            ];
            return self.ctx.launch(&Launch {
                pipeline: &pipeline,
                buffers: &buffers,
                scalars: &params,
                workgroups,
            });
        }
        // Launches recorded before must run first.
        self.ctx.flush()?;
        let mut enc = self
            .ctx
            .device()
            .create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(s.raw(), 0, d.raw(), 0, (bytes as u64).div_ceil(4) * 4);
        self.ctx.queue().submit([enc.finish()]);
        Ok(())
    }

    fn address(&self, _: BufferId) -> Result<u64> {
        Err(Diagnostic::new(
            ErrorKind::Backend,
            "a buffer's address is not available on wgpu: WGSL kernels reach memory only through their buffer arguments, so pointers as data (tables of addresses) need CUDA or a CPU executor",
        ))
    }

    fn free(&self, id: BufferId) {
        if let Ok(bufs) = self.buffers.lock() {
            if let Ok((buf, _, _)) = bufs.get(id) {
                self.ctx.release(buf);
            }
        }
        self.buffers.remove(id);
    }

    fn take_warnings(&self) -> Vec<Diagnostic> {
        self.checked.take_warnings()
    }

    fn prepare(&self, key: &SpecKey, spec: &Specialized, options: &LaunchOptions) -> Result<()> {
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
        if grid.total() == 0 {
            return Ok(());
        }
        let compiled = self.compile(key, spec, options)?;
        match &compiled.wgsl.checked {
            Some(ck) => run_checked(self, &self.checked, ck, args, |full| {
                self.launch_compiled(&compiled, spec, grid, full)
            }),
            None => self.launch_compiled(&compiled, spec, grid, args),
        }
    }

    fn synchronize(&self) -> Result<()> {
        self.watch(self.ctx.synchronize())?;
        self.in_flight.lock().map_err(|_| poisoned())?.clear();
        Ok(())
    }

    fn timer_begin(&self) -> Result<bool> {
        self.ctx.begin_timing()
    }

    /// The span of the region's compute passes (first start to last end), as CUDA
    /// events measure a stream; `None` when it recorded no pass.
    fn timer_end(&self) -> Result<Option<f64>> {
        let timing = self.ctx.end_timing()?;
        if let (Some(t), true) = (timing, std::env::var_os("TILEWISE_DEBUG_TIMER").is_some()) {
            eprintln!(
                "wgpu timer: {} passes, span {:.1} us, busy {:.1} us",
                t.launches,
                t.span_ns / 1e3,
                t.busy_ns / 1e3
            );
        }
        Ok(timing.map(|t| t.span_ns * 1e-9))
    }
}

/// The copy kernel behind [`Backend::copy`]: one 16-byte word a thread.
impl WgpuBackend {
    /// Launches a compiled kernel with `args` (its hidden ones included when checked).
    fn launch_compiled(
        &self,
        compiled: &Compiled,
        spec: &Specialized,
        grid: Grid,
        args: &[BoundArg],
    ) -> Result<()> {
        let bufs = self.buffers.lock()?;
        let mut buffer_args = Vec::with_capacity(compiled.wgsl.buffer_params.len());
        for &p in &compiled.wgsl.buffer_params {
            match args.get(p) {
                Some(BoundArg::Buffer { id, offset, len }) => {
                    let (buf, dtype, _) = bufs.get(*id)?;
                    let es = dtype.size_bytes() as u64;
                    buffer_args.push(BufferArg::range(buf, *offset as u64 * es, *len as u64 * es));
                }
                _ => {
                    return Err(Diagnostic::new(
                        ErrorKind::Launch,
                        format!("argument {p} of `{}` must be a buffer", spec.kernel.name),
                    ))
                }
            }
        }
        let scalars = compiled
            .wgsl
            .encode_scalars(grid.0, |p| match args.get(p) {
                Some(BoundArg::Scalar(s)) => Some(*s),
                _ => None::<ScalarValue>,
            })?;
        let max = self.ctx.capabilities().max_compute_workgroups_per_dimension;
        let workgroups = WgslKernel::workgroups(grid.0, max)?;
        {
            // Consecutive launches of one kernel are named once.
            let mut in_flight = self.in_flight.lock().map_err(|_| poisoned())?;
            if in_flight.last() != Some(&spec.kernel.name) {
                in_flight.push(spec.kernel.name.clone());
            }
        }
        self.watch(self.ctx.launch(&Launch {
            pipeline: &compiled.pipeline,
            buffers: &buffer_args,
            scalars: &scalars,
            workgroups,
        }))
    }
}

const COPY_WGSL: &str = "
struct Params { bases: array<vec4<u32>, 1>, words: vec4<u32> }
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@group(0) @binding(2) var<uniform> P: Params;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let i = (wg.x + wg.y * P.words.y) * 256u + t;
  if (i < P.words.x) { dst[P.bases[0].y + i] = src[P.bases[0].x + i]; }
}
";

fn copy_layout() -> tilewise_wgsl::KernelLayout {
    use tilewise_wgsl::{StorageBinding, UniformLayout};
    tilewise_wgsl::KernelLayout {
        storage: vec![
            StorageBinding {
                read_only: true,
                element_size: 16,
            },
            StorageBinding {
                read_only: false,
                element_size: 16,
            },
        ],
        uniform: Some(UniformLayout {
            base_offsets: true,
            scalar_bytes: 16,
        }),
    }
}
