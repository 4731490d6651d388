//! The wgpu context: adapter choice, device creation, and what the device can do.
//!
//! [`WgpuContext::new`] builds one instance, device and queue for the process:
//!
//! - **Backends** come from `WGPU_BACKEND`, a comma-separated list of `vulkan` (`vk`),
//!   `metal` (`mtl`), `dx12` (`d3d12`) and `gl` (`gles`, `opengl`); an unknown name is
//!   an error, not a silent fallback. Unset, the primary backends (Vulkan, Metal, DX12)
//!   are tried.
//! - **Adapters** are enumerated, those without compute shaders dropped, then filtered by
//!   `WGPU_ADAPTER_NAME` (a case-insensitive substring of the adapter name) and ranked
//!   discrete GPU > integrated GPU > virtual GPU > CPU (enumeration order breaks ties).
//!   The first adapter that yields a device wins.
//! - **The device** is requested with the adapter's own limits (not WebGPU's defaults:
//!   a kernel may use all the workgroup memory the hardware has) and the intersection of
//!   the adapter's features with [`WANTED_FEATURES`]: `SHADER_F16`, `SUBGROUP`,
//!   `SUBGROUP_BARRIER`, `TIMESTAMP_QUERY`, `IMMEDIATES`, `PIPELINE_CACHE` and
//!   `EXPERIMENTAL_COOPERATIVE_MATRIX` (the last with wgpu's experimental features
//!   enabled; [`Capabilities::coop_configs`] says which configurations the lowering
//!   uses).
//!
//! What the device can do is summarised in [`Capabilities`], which the lowering reads
//! (f16 or packed u32? subgroup ops? how much workgroup memory?) and which
//! [`crate::validate_wgsl`] turns into naga's validation capabilities. With no usable
//! adapter, `new` returns a [`Diagnostic`] saying why; it never panics.
//!
//! wgpu reports some errors out of band (a validation error while encoding or
//! submitting). The context installs an uncaptured-error handler that records them, and
//! the next synchronization turns them into an internal-error diagnostic instead of the
//! default handler's panic.

use std::sync::{Arc, Mutex};

use tilewise_core::ir::DType;
pub use tilewise_core::lower::expand::CoopConfig;
use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::dispatch::Batch;
use crate::pipeline::PipelineCache;

/// Features tilewise requests when the adapter has them; none is required.
pub const WANTED_FEATURES: wgpu::Features = wgpu::Features::SHADER_F16
    .union(wgpu::Features::SUBGROUP)
    .union(wgpu::Features::SUBGROUP_BARRIER)
    .union(wgpu::Features::TIMESTAMP_QUERY)
    .union(wgpu::Features::IMMEDIATES)
    .union(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    .union(wgpu::Features::PIPELINE_CACHE);

/// What a device can do, as the lowering and the runtime need it.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    /// `SHADER_F16`: WGSL `enable f16;` works (else f16 travels packed in u32).
    pub f16: bool,
    /// `SUBGROUP`: WGSL subgroup builtins and operations work.
    pub subgroups: bool,
    /// `SUBGROUP_BARRIER`: `subgroupBarrier()` works.
    pub subgroup_barrier: bool,
    /// Smallest subgroup size the adapter may use (meaningful when `subgroups`).
    pub min_subgroup_size: u32,
    /// Largest subgroup size the adapter may use (meaningful when `subgroups`).
    pub max_subgroup_size: u32,
    /// `TIMESTAMP_QUERY`: GPU timestamps around compute passes.
    pub timestamps: bool,
    /// `IMMEDIATES`: immediate data (push constants) up to `max_immediate_size` bytes.
    pub immediates: bool,
    pub max_immediate_size: u32,
    pub max_bindings_per_bind_group: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    pub max_uniform_buffers_per_shader_stage: u32,
    pub max_storage_buffer_binding_size: u64,
    pub max_uniform_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    /// Storage-buffer binding offsets must be multiples of this (bytes).
    pub min_storage_buffer_offset_alignment: u32,
    /// Uniform-buffer binding offsets must be multiples of this (bytes).
    pub min_uniform_buffer_offset_alignment: u32,
    /// Bytes of `var<workgroup>` one workgroup may declare.
    pub max_compute_workgroup_storage_size: u32,
    /// Product of the three workgroup-size dimensions.
    pub max_compute_invocations_per_workgroup: u32,
    /// Per-dimension workgroup size (x, y, z).
    pub max_compute_workgroup_size: [u32; 3],
    /// Workgroups per dispatch dimension: the lowering folds a larger 1-D grid into 2-D.
    pub max_compute_workgroups_per_dimension: u32,
    /// The cooperative-matrix products the lowering may use (see
    /// [`Capabilities::coop_configs`]); empty without
    /// `EXPERIMENTAL_COOPERATIVE_MATRIX`.
    pub coop_matrix: Vec<CoopConfig>,
    /// Whether whole-program reductions combine across threads with subgroup
    /// builtins (subgroups of exactly 32 invocations needed). Off unless
    /// `TILEWISE_WGPU_SUBGROUP_REDUCE=1`: on the H200 through Vulkan it made softmax
    /// 15% faster but layer norm 12% and the causal softmax 6% slower (BENCHMARKS.md).
    pub subgroup_reduce: bool,
    /// naga validation capabilities matching the device's features.
    pub naga: naga::valid::Capabilities,
}

impl Capabilities {
    /// Capabilities of a device with `features`, `limits` and `downlevel` flags.
    pub fn from_wgpu(
        features: wgpu::Features,
        limits: &wgpu::Limits,
        downlevel: wgpu::DownlevelFlags,
        info: &wgpu::AdapterInfo,
        coop: &[wgpu::CooperativeMatrixProperties],
    ) -> Capabilities {
        let mut naga = wgpu_naga_bridge::features_to_naga_capabilities(features, downlevel);
        let subgroups = features.contains(wgpu::Features::SUBGROUP);
        naga.set(naga::valid::Capabilities::SUBGROUP, subgroups);
        naga.set(
            naga::valid::Capabilities::SUBGROUP_BARRIER,
            features.contains(wgpu::Features::SUBGROUP_BARRIER),
        );
        Capabilities {
            f16: features.contains(wgpu::Features::SHADER_F16),
            subgroups,
            subgroup_barrier: features.contains(wgpu::Features::SUBGROUP_BARRIER),
            min_subgroup_size: info.subgroup_min_size,
            max_subgroup_size: info.subgroup_max_size,
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            immediates: features.contains(wgpu::Features::IMMEDIATES),
            max_immediate_size: limits.max_immediate_size,
            max_bindings_per_bind_group: limits.max_bindings_per_bind_group,
            max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
            max_uniform_buffers_per_shader_stage: limits.max_uniform_buffers_per_shader_stage,
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_uniform_buffer_binding_size: limits.max_uniform_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
            min_uniform_buffer_offset_alignment: limits.min_uniform_buffer_offset_alignment,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size: [
                limits.max_compute_workgroup_size_x,
                limits.max_compute_workgroup_size_y,
                limits.max_compute_workgroup_size_z,
            ],
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            coop_matrix: Self::coop_configs(features, info, coop),
            subgroup_reduce: features.contains(wgpu::Features::SUBGROUP)
                && info.subgroup_min_size == 32
                && info.subgroup_max_size == 32
                && std::env::var("TILEWISE_WGPU_SUBGROUP_REDUCE").as_deref() == Ok("1"),
            naga,
        }
    }

    /// The adapter's cooperative-matrix configurations the lowering can use: square
    /// shapes WGSL spells (`coop_mat8x8`, `coop_mat16x16`), f16 or f32 inputs, f16 or
    /// f32 accumulators without saturation, on a device with `SHADER_F16` and
    /// subgroups of exactly 32 invocations (the lowering numbers fragments by subgroup).
    /// `TILEWISE_WGPU_COOP=0` turns them off (the FMA form then runs every dot).
    pub fn coop_configs(
        features: wgpu::Features,
        info: &wgpu::AdapterInfo,
        coop: &[wgpu::CooperativeMatrixProperties],
    ) -> Vec<CoopConfig> {
        let usable = features.contains(
            wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
                | wgpu::Features::SHADER_F16
                | wgpu::Features::SUBGROUP,
        ) && info.subgroup_min_size == 32
            && info.subgroup_max_size == 32
            && std::env::var("TILEWISE_WGPU_COOP").as_deref() != Ok("0");
        if !usable {
            return vec![];
        }
        let dtype = |t: wgpu::CooperativeScalarType| match t {
            wgpu::CooperativeScalarType::F16 => Some(DType::F16),
            wgpu::CooperativeScalarType::F32 => Some(DType::F32),
            _ => None,
        };
        let mut out: Vec<CoopConfig> = coop
            .iter()
            .filter(|p| {
                p.m_size == p.n_size
                    && p.n_size == p.k_size
                    && matches!(p.m_size, 8 | 16)
                    && !p.saturating_accumulation
            })
            .filter_map(|p| {
                Some(CoopConfig {
                    size: p.m_size,
                    input: dtype(p.ab_type)?,
                    acc: dtype(p.cr_type)?,
                })
            })
            .collect();
        out.sort_by_key(|c| (c.size, c.input.size_bytes(), c.acc.size_bytes()));
        out.dedup();
        out
    }

    /// WebGPU's default limits with the given optional features: for validating
    /// generated WGSL without a device (snapshot tests, CI without an adapter).
    pub fn offline(f16: bool, subgroups: bool) -> Capabilities {
        let mut features = wgpu::Features::empty();
        features.set(wgpu::Features::SHADER_F16, f16);
        features.set(wgpu::Features::SUBGROUP, subgroups);
        let mut info = wgpu::AdapterInfo::new(wgpu::DeviceType::Other, wgpu::Backend::Noop);
        if subgroups {
            info.subgroup_min_size = 4;
            info.subgroup_max_size = 128;
        }
        Capabilities::from_wgpu(
            features,
            &wgpu::Limits::default(),
            wgpu::DownlevelFlags::all(),
            &info,
            &[],
        )
    }

    /// As [`Capabilities::offline`] with f16 and subgroups of 32, for a device that
    /// offers the cooperative matrices of the H200 through Vulkan (16x16x16, f16
    /// inputs, f16 or f32 accumulators) and reduces through subgroups: the fragment
    /// form of `dot` and subgroup reductions, for validation and the simulator without
    /// such a device.
    pub fn offline_coop() -> Capabilities {
        let f16 = |acc| CoopConfig {
            size: 16,
            input: DType::F16,
            acc,
        };
        Capabilities {
            subgroup_reduce: true,
            ..Self::offline_with_coop(&[f16(DType::F16), f16(DType::F32)])
        }
    }

    /// As [`Capabilities::offline`] with f16 and subgroups of 32, for a device that
    /// lists the cooperative-matrix configurations `listed` (Apple GPUs through Metal:
    /// 8x8, f16 or f32).
    pub fn offline_with_coop(listed: &[CoopConfig]) -> Capabilities {
        let features = wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        let mut info = wgpu::AdapterInfo::new(wgpu::DeviceType::Other, wgpu::Backend::Noop);
        info.subgroup_min_size = 32;
        info.subgroup_max_size = 32;
        let scalar = |d: DType| {
            if d == DType::F16 {
                wgpu::CooperativeScalarType::F16
            } else {
                wgpu::CooperativeScalarType::F32
            }
        };
        let listed: Vec<_> = listed
            .iter()
            .map(|c| wgpu::CooperativeMatrixProperties {
                m_size: c.size,
                n_size: c.size,
                k_size: c.size,
                ab_type: scalar(c.input),
                cr_type: scalar(c.acc),
                saturating_accumulation: false,
            })
            .collect();
        Capabilities::from_wgpu(
            features,
            &wgpu::Limits::default(),
            wgpu::DownlevelFlags::all(),
            &info,
            &listed,
        )
    }
}

/// One wgpu device and queue, with the pipeline cache and the pending command batch.
pub struct WgpuContext {
    // Kept alive for the device's lifetime.
    _instance: wgpu::Instance,
    _adapter: wgpu::Adapter,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    caps: Capabilities,
    pub(crate) pipelines: PipelineCache,
    /// The driver's pipeline cache (Vulkan), once attached
    /// ([`WgpuContext::attach_driver_cache`]): pipelines are created through it.
    pub(crate) driver_cache: std::sync::OnceLock<wgpu::PipelineCache>,
    /// The uniform buffer every launch's parameter block goes to.
    pub(crate) params: crate::dispatch::ParamArena,
    pub(crate) batch: Mutex<Batch>,
    /// Errors wgpu raised out of band, reported at the next synchronization.
    pub(crate) uncaptured: Arc<Mutex<Vec<String>>>,
    /// Why the device was lost, once it was (the device-lost callback).
    pub(crate) lost: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for WgpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WgpuContext")
            .field("adapter", &self.info.name)
            .field("backend", &self.info.backend)
            .finish_non_exhaustive()
    }
}

/// Parses `WGPU_BACKEND`: a comma-separated list of backend names.
pub fn parse_backends(value: &str) -> Result<wgpu::Backends> {
    let mut backends = wgpu::Backends::empty();
    for name in value.split(',').map(|s| s.trim().to_ascii_lowercase()) {
        backends |= match name.as_str() {
            "" => continue,
            "vulkan" | "vk" => wgpu::Backends::VULKAN,
            "metal" | "mtl" => wgpu::Backends::METAL,
            "dx12" | "d3d12" => wgpu::Backends::DX12,
            "gl" | "gles" | "opengl" => wgpu::Backends::GL,
            other => {
                return Err(Diagnostic::new(
                    ErrorKind::Backend,
                    format!("WGPU_BACKEND=`{value}`: unknown backend `{other}`"),
                )
                .with_note("expected a comma-separated list of vulkan, metal, dx12, gl"))
            }
        };
    }
    if backends.is_empty() {
        return Err(Diagnostic::new(
            ErrorKind::Backend,
            format!("WGPU_BACKEND=`{value}` names no backend"),
        )
        .with_note("expected a comma-separated list of vulkan, metal, dx12, gl"));
    }
    Ok(backends)
}

fn type_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// `vulkan, metal` rather than bitflags' debug form.
fn backend_names(backends: wgpu::Backends) -> String {
    let names = [
        (wgpu::Backends::VULKAN, "vulkan"),
        (wgpu::Backends::METAL, "metal"),
        (wgpu::Backends::DX12, "dx12"),
        (wgpu::Backends::GL, "gl"),
    ];
    let list: Vec<&str> = names
        .iter()
        .filter(|(b, _)| backends.contains(*b))
        .map(|(_, n)| *n)
        .collect();
    list.join(", ")
}

fn describe(info: &wgpu::AdapterInfo) -> String {
    format!(
        "\"{}\" ({:?}, {:?})",
        info.name, info.backend, info.device_type
    )
}

impl WgpuContext {
    /// The name under which this adapter's driver pipeline cache can be stored
    /// (wgpu's `pipeline_cache_key`: vendor and device), or `None` where the device has
    /// no pipeline caches (every backend but Vulkan, or a driver without the feature).
    pub fn driver_cache_key(&self) -> Option<String> {
        if !self
            .device
            .features()
            .contains(wgpu::Features::PIPELINE_CACHE)
        {
            return None;
        }
        wgpu::util::pipeline_cache_key(&self.info)
            .map(|k| format!("{k} driver {} {}", self.info.driver, self.info.driver_info))
    }

    /// Creates the driver's pipeline cache from `data` (what
    /// [`WgpuContext::driver_cache_data`] returned in an earlier process; `None` for an
    /// empty one); pipelines created from now on go through it. Data the driver does
    /// not recognize (another driver version, a damaged file) is dropped by the driver
    /// (wgpu's `fallback`): the cache starts empty. False where there is no pipeline
    /// cache or one was attached already.
    pub fn attach_driver_cache(&self, data: Option<&[u8]>) -> bool {
        if self.driver_cache_key().is_none() || self.driver_cache.get().is_some() {
            return false;
        }
        // SAFETY: wgpu requires the data to come from `PipelineCache::get_data` of a
        // compatible adapter; the caller stores it under `driver_cache_key` with a
        // checksum, and `fallback: true` makes the driver validate its header and
        // ignore data it did not produce.
        let cache = unsafe {
            self.device
                .create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                    label: Some("tilewise"),
                    data,
                    fallback: true,
                })
        };
        self.driver_cache.set(cache).is_ok()
    }

    /// The driver pipeline cache's contents now, to store for the next process.
    pub fn driver_cache_data(&self) -> Option<Vec<u8>> {
        self.driver_cache.get()?.get_data()
    }
}

impl WgpuContext {
    /// Opens the best adapter the environment allows (see the module docs).
    pub fn new() -> Result<WgpuContext> {
        let backends = match std::env::var("WGPU_BACKEND") {
            Ok(v) if !v.trim().is_empty() => parse_backends(&v)?,
            _ => wgpu::Backends::PRIMARY,
        };
        let name_filter = std::env::var("WGPU_ADAPTER_NAME")
            .ok()
            .filter(|s| !s.trim().is_empty());
        Self::with_options(backends, name_filter.as_deref())
    }

    /// Every adapter wgpu finds among `WGPU_BACKEND`'s backends (the primary ones when
    /// unset, as [`WgpuContext::new`] looks),
    /// with whether it can run compute shaders, in enumeration order (what
    /// `tilewise devices` lists; [`WgpuContext::new`] picks among the able ones).
    pub fn adapters() -> Result<Vec<(wgpu::AdapterInfo, bool)>> {
        let backends = match std::env::var("WGPU_BACKEND") {
            Ok(v) if !v.trim().is_empty() => parse_backends(&v)?,
            _ => wgpu::Backends::PRIMARY,
        };
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));
        Ok(adapters
            .iter()
            .map(|a| {
                let compute = a
                    .get_downlevel_capabilities()
                    .flags
                    .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS);
                (a.get_info(), compute)
            })
            .collect())
    }

    /// Opens the best adapter among `backends` whose name contains `name_filter`
    /// (case-insensitive), ignoring the environment.
    pub fn with_options(
        backends: wgpu::Backends,
        name_filter: Option<&str>,
    ) -> Result<WgpuContext> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = backends;
        let instance = wgpu::Instance::new(desc);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));

        let mut rejected: Vec<String> = vec![];
        let mut candidates: Vec<(wgpu::Adapter, wgpu::AdapterInfo)> = vec![];
        for adapter in adapters {
            let info = adapter.get_info();
            let downlevel = adapter.get_downlevel_capabilities();
            if !downlevel
                .flags
                .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            {
                rejected.push(format!("{}: no compute shaders", describe(&info)));
                continue;
            }
            if let Some(filter) = name_filter {
                if !info.name.to_lowercase().contains(&filter.to_lowercase()) {
                    rejected.push(format!(
                        "{}: name does not contain WGPU_ADAPTER_NAME=`{filter}`",
                        describe(&info)
                    ));
                    continue;
                }
            }
            candidates.push((adapter, info));
        }
        // Stable: enumeration order breaks ties.
        candidates.sort_by_key(|(_, info)| type_rank(info.device_type));
        for r in &rejected {
            log::debug!("wgpu: skipped adapter {r}");
        }
        for (_, info) in &candidates {
            log::debug!("wgpu: candidate adapter {}", describe(info));
        }

        if candidates.is_empty() {
            let mut d = Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "no usable wgpu adapter found (backends tried: {})",
                    backend_names(backends)
                ),
            );
            for r in &rejected {
                d = d.with_note(format!("skipped adapter {r}"));
            }
            return Err(d.with_note(
                "on Linux without a GPU, install Mesa's lavapipe \
                 (`apt-get install mesa-vulkan-drivers`); \
                 WGPU_BACKEND and WGPU_ADAPTER_NAME select the backend and adapter",
            ));
        }

        let mut failures = vec![];
        for (adapter, info) in candidates {
            let features = adapter.features() & WANTED_FEATURES;
            let limits = adapter.limits();
            let coop = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
            let request = wgpu::DeviceDescriptor {
                label: Some("tilewise"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: if coop {
                    // SAFETY: wgpu's experimental features may misbehave where the
                    // driver does; tilewise only uses cooperative matrices in the
                    // shapes the adapter lists (and `TILEWISE_WGPU_COOP=0` avoids
                    // them).
                    unsafe { wgpu::ExperimentalFeatures::enabled() }
                } else {
                    wgpu::ExperimentalFeatures::disabled()
                },
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            };
            match pollster::block_on(adapter.request_device(&request)) {
                Ok((device, queue)) => {
                    let downlevel = adapter.get_downlevel_capabilities().flags;
                    let caps = Capabilities::from_wgpu(
                        device.features(),
                        &device.limits(),
                        downlevel,
                        &info,
                        &if coop {
                            adapter.cooperative_matrix_properties()
                        } else {
                            vec![]
                        },
                    );
                    let uncaptured = Arc::new(Mutex::new(Vec::new()));
                    let sink = uncaptured.clone();
                    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                        if let Ok(mut v) = sink.lock() {
                            v.push(e.to_string());
                        }
                    }));
                    log::info!(
                        "wgpu: using {} (discrete GPUs first, then integrated, virtual, CPU; \
                         f16 {}, subgroups {}, cooperative-matrix products {}, timestamps {})",
                        describe(&info),
                        caps.f16,
                        caps.subgroups,
                        caps.coop_matrix.len(),
                        caps.timestamps
                    );
                    let lost = Arc::new(Mutex::new(None));
                    let lost_sink = lost.clone();
                    device.set_device_lost_callback(move |reason, message| {
                        if let Ok(mut l) = lost_sink.lock() {
                            l.get_or_insert(format!("{reason:?}: {message}"));
                        }
                    });
                    let params = crate::dispatch::ParamArena::new(&device, &device.limits());
                    return Ok(WgpuContext {
                        params,
                        _instance: instance,
                        _adapter: adapter,
                        device,
                        queue,
                        info,
                        caps,
                        pipelines: PipelineCache::default(),
                        driver_cache: std::sync::OnceLock::new(),
                        batch: Mutex::new(Batch::default()),
                        uncaptured,
                        lost,
                    });
                }
                Err(e) => {
                    log::warn!("wgpu: {} could not create a device: {e}", describe(&info));
                    failures.push(format!("{}: {e}", describe(&info)))
                }
            }
        }
        let mut d = Diagnostic::new(ErrorKind::Backend, "no wgpu adapter could create a device");
        for f in failures {
            d = d.with_note(f);
        }
        Err(d)
    }

    /// The chosen adapter: name, backend, device type, driver.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// What the device can do.
    pub fn capabilities(&self) -> &Capabilities {
        &self.caps
    }

    /// The wgpu device, for callers that need more than this crate offers.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Why the device was lost, if it was: every later call fails with it.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }

    /// Errors wgpu raised out of band since the last check, as one internal error; a
    /// lost device as a runtime error.
    pub(crate) fn take_uncaptured(&self) -> Result<()> {
        if let Some(why) = self.lost() {
            return Err(Diagnostic::new(
                ErrorKind::Runtime,
                format!(
                    "the wgpu device on {} is lost ({why})",
                    describe(&self.info)
                ),
            )
            .with_note("its buffers are gone; `Device::wgpu()` opens a fresh device"));
        }
        let errors: Vec<String> = match self.uncaptured.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(_) => return Ok(()),
        };
        if errors.is_empty() {
            return Ok(());
        }
        let mut d = Diagnostic::new(
            ErrorKind::Internal,
            format!(
                "wgpu reported an error on {}: {}",
                describe(&self.info),
                errors[0]
            ),
        );
        for e in &errors[1..] {
            d = d.with_note(format!("also: {e}"));
        }
        Err(d.with_note("this is a tilewise bug; please report it"))
    }
}
