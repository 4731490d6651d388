//! Compute pipelines: the binding contract, resource-limit checks, and the cache.
//!
//! A kernel's pipeline has one bind group (group 0) with an explicit layout
//! ([`KernelLayout`]):
//!
//! - binding `i` for `i in 0..storage.len()`: a storage buffer, `read_only` or
//!   read-write per [`StorageBinding`], one per pointer argument in argument order;
//! - binding `storage.len()` (the last), when [`KernelLayout::uniform`] is set: one
//!   uniform buffer holding the parameter block described in [`crate::dispatch`]
//!   (element base offsets of the storage bindings, then the scalar arguments).
//!
//! Before a pipeline is created the WGSL is validated with naga
//! ([`crate::validate_wgsl`]) and its resource use is checked against the device:
//! storage bindings against `max_storage_buffers_per_shader_stage`, declared
//! `var<workgroup>` bytes (naga's layouter, each variable rounded up to 16 bytes as
//! WebGPU counts them) against `max_compute_workgroup_storage_size`, the workgroup size
//! against `max_compute_invocations_per_workgroup` and `max_compute_workgroup_size_*`.
//! Each violation is a backend error naming the limit and both numbers. Anything wgpu
//! still rejects after that is caught with error scopes and reported as an internal
//! error, never a panic.
//!
//! Pipelines are cached by the specialization key plus a hash of the source, the
//! entry point and the layout: the same specialization never compiles twice.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::context::{Capabilities, WgpuContext};
use crate::validate::{validate_wgsl, ValidModule};

/// One storage-buffer binding (one pointer argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct StorageBinding {
    /// `var<storage, read>` when true, `var<storage, read_write>` when false.
    pub read_only: bool,
    /// Size in bytes of the logical element the kernel indexes (2 for f16 even when it
    /// is packed in u32): base offsets in the parameter block count these.
    pub element_size: u32,
}

/// The parameter block (the uniform buffer at the last binding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct UniformLayout {
    /// The block starts with one u32 element base offset per storage binding.
    pub base_offsets: bool,
    /// Bytes of scalar arguments, laid out by the lowering with WGSL uniform rules.
    pub scalar_bytes: u32,
}

/// The bindings of a kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct KernelLayout {
    pub storage: Vec<StorageBinding>,
    pub uniform: Option<UniformLayout>,
}

impl KernelLayout {
    /// Binding index of the parameter block.
    pub fn uniform_binding(&self) -> u32 {
        self.storage.len() as u32
    }
}

/// What to compile.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec<'a> {
    /// The specialization key (kernel, argument dtypes, constexprs).
    pub key: &'a str,
    /// The kernel's name, for messages.
    pub kernel_name: &'a str,
    /// The compute entry point in `source`.
    pub entry_point: &'a str,
    /// The generated WGSL.
    pub source: &'a str,
    pub layout: &'a KernelLayout,
}

/// What a validated module uses of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceUsage {
    pub workgroup_size: [u32; 3],
    /// Bytes of `var<workgroup>` the entry point uses, each variable rounded up to 16.
    pub workgroup_memory: u32,
    /// Storage-buffer bindings (the larger of the layout's and the module's count).
    pub storage_buffers: u32,
}

impl ResourceUsage {
    /// Measures the entry point `entry_point` of `valid`.
    pub fn of(
        kernel_name: &str,
        valid: &ValidModule,
        entry_point: &str,
        layout: &KernelLayout,
    ) -> Result<ResourceUsage> {
        let module = &valid.module;
        let (index, ep) = module
            .entry_points
            .iter()
            .enumerate()
            .find(|(_, ep)| ep.name == entry_point && ep.stage == naga::ShaderStage::Compute)
            .ok_or_else(|| {
                Diagnostic::internal(format!(
                    "tilewise bug: the WGSL generated for kernel `{kernel_name}` has no \
                     compute entry point `{entry_point}`"
                ))
            })?;
        if ep.workgroup_size_overrides.is_some() {
            return Err(Diagnostic::internal(format!(
                "tilewise bug: kernel `{kernel_name}` sizes its workgroup with override \
                 constants, which the runtime does not set"
            )));
        }
        let uses = valid.info.get_entry_point(index);
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).map_err(|e| {
            Diagnostic::internal(format!(
                "tilewise bug: cannot lay out the types of kernel `{kernel_name}`: {e}"
            ))
        })?;
        let mut workgroup_memory: u64 = 0;
        let mut module_storage = 0u32;
        for (handle, var) in module.global_variables.iter() {
            if uses[handle].is_empty() {
                continue;
            }
            match var.space {
                naga::AddressSpace::WorkGroup => {
                    let size = layouter[var.ty].size as u64;
                    workgroup_memory += size.div_ceil(16) * 16;
                }
                naga::AddressSpace::Storage { .. } => module_storage += 1,
                _ => {}
            }
        }
        Ok(ResourceUsage {
            workgroup_size: ep.workgroup_size,
            workgroup_memory: workgroup_memory.min(u32::MAX as u64) as u32,
            storage_buffers: module_storage.max(layout.storage.len() as u32),
        })
    }

    /// A backend error naming the first device limit this usage exceeds.
    pub fn check(&self, kernel_name: &str, caps: &Capabilities) -> Result<()> {
        let over = |limit: &str, need: u64, have: u64, what: &str| {
            Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "kernel `{kernel_name}` needs {need} {what}, but the adapter's \
                     {limit} is {have}"
                ),
            ))
        };
        if self.storage_buffers > caps.max_storage_buffers_per_shader_stage {
            return over(
                "max_storage_buffers_per_shader_stage",
                self.storage_buffers as u64,
                caps.max_storage_buffers_per_shader_stage as u64,
                "storage-buffer bindings (one per pointer argument)",
            );
        }
        if self.workgroup_memory > caps.max_compute_workgroup_storage_size {
            return over(
                "max_compute_workgroup_storage_size",
                self.workgroup_memory as u64,
                caps.max_compute_workgroup_storage_size as u64,
                "bytes of workgroup memory",
            );
        }
        let invocations: u64 = self.workgroup_size.iter().map(|&x| x as u64).product();
        if invocations > caps.max_compute_invocations_per_workgroup as u64 {
            return over(
                "max_compute_invocations_per_workgroup",
                invocations,
                caps.max_compute_invocations_per_workgroup as u64,
                "invocations per workgroup",
            );
        }
        for (axis, (&size, &max)) in ["x", "y", "z"].iter().zip(
            self.workgroup_size
                .iter()
                .zip(&caps.max_compute_workgroup_size),
        ) {
            if size > max {
                return over(
                    &format!("max_compute_workgroup_size_{axis}"),
                    size as u64,
                    max as u64,
                    &format!("invocations along workgroup {axis}"),
                );
            }
        }
        Ok(())
    }
}

/// A launch's storage bindings: buffer, offset and size of each, in binding order.
pub(crate) type BindingsKey = Vec<(wgpu::Buffer, u64, u64)>;

/// A compiled kernel.
#[derive(Debug)]
pub struct KernelPipeline {
    pub(crate) name: String,
    pub(crate) cache_key: String,
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) bind_group_layout: wgpu::BindGroupLayout,
    pub(crate) layout: KernelLayout,
    pub(crate) usage: ResourceUsage,
    /// Bind groups by storage bindings (buffer, offset, size), reused by launches on
    /// the same buffers (see `dispatch.rs`).
    pub(crate) bind_groups: Mutex<HashMap<BindingsKey, wgpu::BindGroup>>,
}

impl KernelPipeline {
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The cache key: specialization key plus source hash.
    pub fn cache_key(&self) -> &str {
        &self.cache_key
    }
    pub fn layout(&self) -> &KernelLayout {
        &self.layout
    }
    pub fn usage(&self) -> &ResourceUsage {
        &self.usage
    }
}

/// Compiled pipelines by cache key.
#[derive(Debug, Default)]
pub struct PipelineCache {
    map: Mutex<HashMap<String, Arc<KernelPipeline>>>,
}

impl PipelineCache {
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn get(&self, key: &str) -> Option<Arc<KernelPipeline>> {
        self.map.lock().ok()?.get(key).cloned()
    }
    /// Every pipeline.
    pub(crate) fn all(&self) -> Vec<Arc<KernelPipeline>> {
        self.map
            .lock()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
    fn insert(&self, key: String, p: Arc<KernelPipeline>) {
        if let Ok(mut m) = self.map.lock() {
            m.insert(key, p);
        }
    }
}

/// The runtime checks wgpu adds to a tilewise kernel on `backend`. By default naga
/// clamps every index into a fixed-size array (workgroup memory included) and bounds
/// every loop with a counter. On Vulkan, where the device's robust buffer access (a
/// required Vulkan feature, which wgpu enables) already keeps storage accesses inside
/// their buffers, tilewise turns the bounds checks off: its workgroup indices are its
/// own, computed from layouts and checked in range by the simulator, and the clamps
/// cost the cooperative-matrix matmul 11-21% on the H200 (BENCHMARKS.md, run 76).
/// Loop bounding goes where every loop is a counted `for` (they end by construction);
/// a kernel whose text says `loop` or `while` anywhere (tilewise prints a `while` and a
/// compare-and-swap retry as `loop`; a hand-written override may use either) keeps it.
/// Elsewhere (Metal, DX12, GL) everything stays checked: their buffers have no such
/// guarantee. An override (`TILEWISE_KERNEL_OVERRIDE_DIR`) gets the same policy, so its
/// workgroup indices must stay in range as the generated kernel's do.
pub fn runtime_checks(backend: wgpu::Backend, source: &str) -> wgpu::ShaderRuntimeChecks {
    let mut checks = wgpu::ShaderRuntimeChecks::checked();
    if backend == wgpu::Backend::Vulkan {
        checks.bounds_checks = false;
        checks.force_loop_bounding = source.contains("loop") || source.contains("while");
    }
    checks
}

/// The cache key of `spec`: its specialization key and a hash of everything compiled.
pub fn cache_key(spec: &KernelSpec<'_>) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    spec.source.hash(&mut h);
    spec.entry_point.hash(&mut h);
    spec.layout.hash(&mut h);
    format!("{}#{:016x}", spec.key, h.finish())
}

impl WgpuContext {
    /// The pipeline for `spec`, compiled on first use and cached.
    pub fn pipeline(&self, spec: &KernelSpec<'_>) -> Result<Arc<KernelPipeline>> {
        let key = cache_key(spec);
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(p);
        }
        let p = Arc::new(self.compile(spec, key.clone())?);
        self.pipelines.insert(key, p.clone());
        Ok(p)
    }

    /// Number of cached pipelines.
    pub fn cached_pipelines(&self) -> usize {
        self.pipelines.len()
    }

    fn compile(&self, spec: &KernelSpec<'_>, cache_key: String) -> Result<KernelPipeline> {
        let caps = self.capabilities();
        let valid = validate_wgsl(spec.kernel_name, spec.source, caps)?;
        let usage = ResourceUsage::of(spec.kernel_name, &valid, spec.entry_point, spec.layout)?;
        usage.check(spec.kernel_name, caps)?;

        let mut entries: Vec<wgpu::BindGroupLayoutEntry> = spec
            .layout
            .storage
            .iter()
            .enumerate()
            .map(|(i, s)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: s.read_only,
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        if spec.layout.uniform.is_some() {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: spec.layout.uniform_binding(),
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: wgpu::BufferSize::new(spec.layout.uniform_size() as u64),
                },
                count: None,
            });
        }

        let device = &self.device;
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(spec.kernel_name),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(spec.kernel_name),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(spec.kernel_name),
            source: wgpu::ShaderSource::Wgsl(spec.source.into()),
        };
        let checks = runtime_checks(self.adapter_info().backend, spec.source);
        let module = if checks.bounds_checks && checks.force_loop_bounding {
            device.create_shader_module(desc)
        } else {
            // SAFETY: `runtime_checks` drops only checks whose job is done otherwise:
            // buffer bounds by the Vulkan device's robust buffer access, workgroup indices
            // by construction (the simulator reports any out of range in CI), and loop
            // bounding where every loop is a counted `for`.
            unsafe { device.create_shader_module_trusted(desc, checks) }
        };
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(spec.kernel_name),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(spec.entry_point),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: self.driver_cache.get(),
        });
        let internal = pollster::block_on(internal.pop());
        let validation = pollster::block_on(validation.pop());
        if let Some(e) = validation.or(internal) {
            return Err(Diagnostic::internal(format!(
                "tilewise bug: wgpu could not create the pipeline of kernel `{}`: {e}",
                spec.kernel_name
            ))
            .with_note("naga accepted the WGSL; the bind group layout or the driver did not"));
        }
        Ok(KernelPipeline {
            name: spec.kernel_name.to_string(),
            cache_key,
            pipeline,
            bind_group_layout,
            layout: spec.layout.clone(),
            usage,
            bind_groups: Mutex::new(HashMap::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::runtime_checks;

    #[test]
    fn vulkan_drops_bounds_checks_and_bounds_only_loops_that_may_not_end() {
        let counted = "for (r1 = r0; r1 < r2; r1 = r1 + r3) { }";
        let c = runtime_checks(wgpu::Backend::Vulkan, counted);
        assert!(!c.bounds_checks && !c.force_loop_bounding);
        assert!(c.int_div_checks, "divisions stay guarded");
        for spin in ["loop { if (x) { break; } }", "while (x) { }"] {
            let c = runtime_checks(wgpu::Backend::Vulkan, spin);
            assert!(!c.bounds_checks && c.force_loop_bounding, "{spin}");
        }
        for backend in [wgpu::Backend::Metal, wgpu::Backend::Dx12, wgpu::Backend::Gl] {
            let c = runtime_checks(backend, counted);
            assert!(c.bounds_checks && c.force_loop_bounding, "{backend:?}");
        }
    }
}
