//! Launches: bind groups, the parameter block, and batching in one command encoder.
//!
//! [`WgpuContext::launch`] records one dispatch (its own compute pass and bind group)
//! into a command encoder the context holds behind a mutex. Nothing is submitted until
//! a read-back, a write, [`WgpuContext::flush`] / [`WgpuContext::synchronize`], or
//! [`MAX_BATCH`] launches have been recorded: many small launches cost one submission.
//! wgpu orders passes in one encoder and inserts the barriers between them, so a launch
//! sees the writes of every launch recorded before it.
//!
//! ## The parameter block
//!
//! When the kernel has a uniform binding ([`KernelLayout::uniform`]), each launch's
//! block goes into the context's parameter arena, one uniform buffer bound with a
//! dynamic offset: a batch's blocks are staged at consecutive aligned offsets
//! (`min_uniform_buffer_offset_alignment`) and written with one `write_buffer` just
//! before the batch is submitted (queue order puts the write after the previous batch's
//! reads), so a launch creates no buffer. The bind group then depends only on the
//! storage bindings and is cached per pipeline (evicted when a buffer is released,
//! [`WgpuContext::release`]): a launch on the same buffers as an earlier one creates
//! nothing. A block is laid out as
//!
//! ```text
//! byte 0                  u32 base[0], base[1], ... base[n-1]    (if base_offsets)
//! byte scalar_offset()    the scalar arguments, as the lowering laid them out
//! size                    rounded up to 16 bytes, at least 16
//! ```
//!
//! where `n` is the number of storage bindings and `scalar_offset()` is `4n` rounded up
//! to 16, at least 16 (0 without base offsets). The scalars start with the launch grid
//! (one 16-byte word). In WGSL this is, e.g. for two pointers and one scalar:
//!
//! ```text
//! struct Params { bases: array<vec4<u32>, 1>, words: array<vec4<u32>, 2> }
//! @group(0) @binding(2) var<uniform> P: Params;
//! ... b0[P.bases[0][0] + i] ... bitcast<i32>(P.words[1][0]) ...
//! ```
//!
//! [`param_block`] builds the bytes; the lowering and the runtime share it.
//!
//! ## Sub-range binding
//!
//! WebGPU requires storage-binding offsets to be multiples of
//! `min_storage_buffer_offset_alignment` (256 bytes on most devices), but a pointer
//! argument may start anywhere a tensor view starts. The choice: the runtime binds the
//! buffer from the offset rounded *down* to that alignment, and passes the remainder,
//! in elements of the binding's `element_size`, as `base[i]` in the parameter block;
//! kernels compiled with `base_offsets` index `buf[base_i + offset]`. This keeps one
//! compiled pipeline for every offset (no recompilation, no copies) at the cost of one
//! uniform load and add per access. A kernel compiled without base offsets accepts only
//! aligned offsets and says so otherwise. The byte offset must be a multiple of the
//! element size. The bound size is rounded up to 16 bytes within the allocation (which
//! is rounded to 16 bytes), so that a binding declared `array<vec4<T>>` for wide
//! accesses covers its last elements; kernels must not rely on `arrayLength`: tilewise
//! passes sizes as scalars.
//!
//! ## Limits
//!
//! A workgroup count above `max_compute_workgroups_per_dimension` (65535 by default)
//! is a backend error: the lowering folds large 1-D grids into 2-D (see
//! [`crate::Capabilities::max_compute_workgroups_per_dimension`]). A binding larger than
//! `max_storage_buffer_binding_size` is a backend error too. A buffer bound twice in
//! one launch must be bound read-write both times (WebGPU forbids a read-only and a
//! read-write view of one buffer in one dispatch): the launch reports such aliasing
//! as an error instead of letting wgpu fail later.

use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::context::WgpuContext;
use crate::memory::GpuBuffer;
use crate::pipeline::{KernelLayout, KernelPipeline};

/// Launches recorded before the batch is submitted on its own.
pub const MAX_BATCH: usize = 1024;

/// Cached bind groups per pipeline before the cache starts over.
const BIND_GROUPS_PER_PIPELINE: usize = 64;

/// The uniform buffer parameter blocks are written to, bound with dynamic offsets.
pub(crate) struct ParamArena {
    pub(crate) buffer: wgpu::Buffer,
    /// Offsets are multiples of this (`min_uniform_buffer_offset_alignment`).
    pub(crate) align: u64,
    pub(crate) capacity: u64,
}

impl ParamArena {
    /// Room for a full batch of blocks of up to 256 bytes, and at least one block of
    /// the largest size a uniform binding may have.
    pub(crate) fn new(device: &wgpu::Device, limits: &wgpu::Limits) -> ParamArena {
        let align = (limits.min_uniform_buffer_offset_alignment as u64).max(16);
        let capacity = (MAX_BATCH as u64 * align.max(256))
            .max(limits.max_uniform_buffer_binding_size.min(1 << 20))
            .min(limits.max_buffer_size);
        let buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise parameter blocks"),
            size: capacity,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        ParamArena {
            buffer,
            align,
            capacity,
        }
    }
}

/// The pending command encoder.
#[derive(Default)]
pub(crate) struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    launches: usize,
    /// The parameter blocks of the batch's launches, at their arena offsets: written
    /// to the arena with one `write_buffer` when the batch is submitted.
    params: Vec<u8>,
    /// The open timed region, if any (see `timing.rs`).
    pub(crate) timing: Option<crate::timing::TimingRegion>,
}

impl Batch {
    pub(crate) fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.encoder.get_or_insert_with(|| new_encoder(device))
    }
}

fn new_encoder(device: &wgpu::Device) -> wgpu::CommandEncoder {
    device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("tilewise batch"),
    })
}

/// A buffer (or a byte range of one) passed to a pointer argument.
#[derive(Clone, Copy, Debug)]
pub struct BufferArg<'a> {
    pub buffer: &'a GpuBuffer,
    /// Byte offset of the view.
    pub offset: u64,
    /// Byte length of the view; `None` runs to the end of the buffer.
    pub size: Option<u64>,
}

impl<'a> BufferArg<'a> {
    pub fn whole(buffer: &'a GpuBuffer) -> BufferArg<'a> {
        BufferArg {
            buffer,
            offset: 0,
            size: None,
        }
    }

    pub fn range(buffer: &'a GpuBuffer, offset: u64, size: u64) -> BufferArg<'a> {
        BufferArg {
            buffer,
            offset,
            size: Some(size),
        }
    }
}

impl<'a> From<&'a GpuBuffer> for BufferArg<'a> {
    fn from(b: &'a GpuBuffer) -> Self {
        BufferArg::whole(b)
    }
}

/// One dispatch.
#[derive(Clone, Copy, Debug)]
pub struct Launch<'a> {
    pub pipeline: &'a KernelPipeline,
    /// One per storage binding, in binding order.
    pub buffers: &'a [BufferArg<'a>],
    /// The scalar arguments' bytes (exactly `UniformLayout::scalar_bytes`).
    pub scalars: &'a [u8],
    /// Workgroups along x, y, z.
    pub workgroups: [u32; 3],
}

impl KernelLayout {
    /// Byte offset of the scalar arguments in the parameter block.
    pub fn scalar_offset(&self) -> u32 {
        match self.uniform {
            // The shader's `bases` array has at least one word of 16 bytes, even for a
            // kernel without buffers (its scalars were read 16 bytes past where they
            // were written, and the short block failed the next launch's validation).
            Some(u) if u.base_offsets => (4 * self.storage.len() as u32).div_ceil(16).max(1) * 16,
            _ => 0,
        }
    }

    /// Size in bytes of the parameter block (0 without one).
    pub fn uniform_size(&self) -> u32 {
        match self.uniform {
            Some(u) => ((self.scalar_offset() + u.scalar_bytes).div_ceil(16) * 16).max(16),
            None => 0,
        }
    }
}

/// The parameter block of a launch: base offsets then scalars (see the module docs).
pub fn param_block(layout: &KernelLayout, bases: &[u32], scalars: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; layout.uniform_size() as usize];
    if layout.uniform.is_some_and(|u| u.base_offsets) {
        for (i, b) in bases.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&b.to_le_bytes());
        }
    }
    let at = layout.scalar_offset() as usize;
    out[at..at + scalars.len()].copy_from_slice(scalars);
    out
}

fn launch_error(kernel: &str, msg: String) -> Diagnostic {
    Diagnostic::new(ErrorKind::Launch, format!("launching `{kernel}`: {msg}"))
}

/// Where one buffer argument is bound.
struct Bound {
    offset: u64,
    size: u64,
    base: u32,
}

impl WgpuContext {
    pub(crate) fn lock_batch(&self) -> Result<std::sync::MutexGuard<'_, Batch>> {
        self.batch
            .lock()
            .map_err(|_| Diagnostic::internal("the wgpu command batch lock is poisoned"))
    }

    /// Launches recorded and not yet submitted.
    pub fn pending_launches(&self) -> usize {
        self.batch.lock().map(|b| b.launches).unwrap_or(0)
    }

    /// Records `launch` into the pending batch.
    pub fn launch(&self, launch: &Launch<'_>) -> Result<()> {
        self.record(launch)
    }

    fn bind(&self, launch: &Launch<'_>, i: usize, arg: &BufferArg<'_>) -> Result<Bound> {
        let p = launch.pipeline;
        let caps = self.capabilities();
        let spec = p.layout.storage[i];
        let base_offsets = p.layout.uniform.is_some_and(|u| u.base_offsets);
        let len = arg.buffer.len();
        let size = arg.size.unwrap_or(len.saturating_sub(arg.offset));
        if arg.offset.checked_add(size).is_none_or(|e| e > len) {
            return Err(launch_error(
                &p.name,
                format!(
                    "argument {i}: view of {size} bytes at offset {} overruns a buffer of \
                     {len} bytes",
                    arg.offset
                ),
            ));
        }
        let elem = spec.element_size.max(1) as u64;
        if !arg.offset.is_multiple_of(elem) {
            return Err(launch_error(
                &p.name,
                format!(
                    "argument {i}: byte offset {} is not a multiple of the element size {elem}",
                    arg.offset
                ),
            ));
        }
        let align = caps.min_storage_buffer_offset_alignment.max(4) as u64;
        let bind_offset = if base_offsets {
            arg.offset - arg.offset % align
        } else if !arg.offset.is_multiple_of(align) {
            return Err(launch_error(
                &p.name,
                format!(
                    "argument {i}: byte offset {} is not a multiple of the adapter's \
                     min_storage_buffer_offset_alignment ({align}) and the kernel was \
                     compiled without base offsets",
                    arg.offset
                ),
            ));
        } else {
            arg.offset
        };
        let allocated = arg.buffer.allocated();
        let (bind_offset, bind_size) = if size == 0 {
            // Nothing is accessed: bind a valid minimal range.
            (0, 4.min(allocated))
        } else {
            // Whole 16-byte words (allocations are rounded to 16 bytes), so that a view
            // as `array<vec4<T>>` covers the last elements.
            let end = (arg.offset + size).div_ceil(16) * 16;
            (bind_offset, end.min(allocated) - bind_offset)
        };
        if bind_size > caps.max_storage_buffer_binding_size {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "launching `{}`: argument {i} binds {bind_size} bytes, but the adapter's \
                     max_storage_buffer_binding_size is {}",
                    p.name, caps.max_storage_buffer_binding_size
                ),
            ));
        }
        let base = if base_offsets {
            let b = (arg.offset - bind_offset) / elem;
            u32::try_from(b).map_err(|_| {
                launch_error(
                    &p.name,
                    format!("argument {i}: base offset {b} exceeds u32"),
                )
            })?
        } else {
            0
        };
        Ok(Bound {
            offset: bind_offset,
            size: bind_size,
            base,
        })
    }

    fn record(&self, launch: &Launch<'_>) -> Result<()> {
        let p = launch.pipeline;
        let caps = self.capabilities();
        let layout = &p.layout;
        if launch.buffers.len() != layout.storage.len() {
            return Err(launch_error(
                &p.name,
                format!(
                    "expected {} buffer arguments, got {}",
                    layout.storage.len(),
                    launch.buffers.len()
                ),
            ));
        }
        let scalar_bytes = layout.uniform.map_or(0, |u| u.scalar_bytes) as usize;
        if launch.scalars.len() != scalar_bytes {
            return Err(launch_error(
                &p.name,
                format!(
                    "expected {scalar_bytes} bytes of scalar arguments, got {}",
                    launch.scalars.len()
                ),
            ));
        }
        let max = caps.max_compute_workgroups_per_dimension;
        for (axis, &n) in ["x", "y", "z"].iter().zip(&launch.workgroups) {
            if n > max {
                return Err(Diagnostic::new(
                    ErrorKind::Backend,
                    format!(
                        "launching `{}`: {n} workgroups along {axis}, but the adapter's \
                         max_compute_workgroups_per_dimension is {max}",
                        p.name
                    ),
                )
                .with_note("large 1-D grids must be folded into 2-D by the lowering"));
            }
        }
        // Aliasing: one buffer twice, once read-only, is a WebGPU usage conflict.
        for (i, a) in launch.buffers.iter().enumerate() {
            for (j, b) in launch.buffers.iter().enumerate().skip(i + 1) {
                if a.buffer.buffer == b.buffer.buffer
                    && layout.storage[i].read_only != layout.storage[j].read_only
                {
                    return Err(Diagnostic::new(
                        ErrorKind::Backend,
                        format!(
                            "launching `{}`: arguments {i} and {j} are the same buffer, bound \
                             once read-only and once read-write, which WebGPU forbids",
                            p.name
                        ),
                    )
                    .with_note("compile aliased pointer arguments as read-write"));
                }
            }
        }
        let bound: Vec<Bound> = launch
            .buffers
            .iter()
            .enumerate()
            .map(|(i, a)| self.bind(launch, i, a))
            .collect::<Result<_>>()?;
        if launch.workgroups.contains(&0) {
            return Ok(());
        }

        let block = layout.uniform.map(|_| {
            let bases: Vec<u32> = bound.iter().map(|b| b.base).collect();
            param_block(layout, &bases, launch.scalars)
        });
        if let Some(b) = &block {
            if b.len() as u64 > caps.max_uniform_buffer_binding_size {
                return Err(Diagnostic::new(
                    ErrorKind::Backend,
                    format!(
                        "launching `{}`: the parameter block is {} bytes, but the adapter's \
                         max_uniform_buffer_binding_size is {}",
                        p.name,
                        b.len(),
                        caps.max_uniform_buffer_binding_size
                    ),
                ));
            }
        }
        let bind_group = self.bind_group(p, launch, &bound);

        let full = {
            let mut guard = self.lock_batch()?;
            let mut batch = &mut *guard;
            // The block's offset in the arena; a full arena submits the batch first.
            let offset = match &block {
                Some(b) => {
                    let align = self.params.align;
                    let mut at = (batch.params.len() as u64).div_ceil(align) * align;
                    if at + b.len() as u64 > self.params.capacity {
                        drop(guard);
                        self.flush()?;
                        guard = self.lock_batch()?;
                        batch = &mut *guard;
                        at = 0;
                    }
                    batch.params.resize(at as usize, 0);
                    batch.params.extend_from_slice(b);
                    Some(at as u32)
                }
                None => None,
            };
            let encoder = batch
                .encoder
                .get_or_insert_with(|| new_encoder(&self.device));
            let timestamp_writes = batch.timing.as_mut().map(|t| t.next_pass(&self.device));
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(&p.name),
                    timestamp_writes,
                });
                pass.set_pipeline(&p.pipeline);
                match offset {
                    Some(o) => pass.set_bind_group(0, &bind_group, &[o]),
                    None => pass.set_bind_group(0, &bind_group, &[]),
                }
                let [x, y, z] = launch.workgroups;
                pass.dispatch_workgroups(x, y, z);
            }
            batch.launches += 1;
            batch.launches >= MAX_BATCH
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// The bind group of `launch`'s storage bindings (and the parameter arena), from
    /// the pipeline's cache or created and cached.
    fn bind_group(
        &self,
        p: &KernelPipeline,
        launch: &Launch<'_>,
        bound: &[Bound],
    ) -> wgpu::BindGroup {
        let key: Vec<(wgpu::Buffer, u64, u64)> = launch
            .buffers
            .iter()
            .zip(bound)
            .map(|(a, b)| (a.buffer.buffer.clone(), b.offset, b.size))
            .collect();
        if let Some(bg) = p.bind_groups.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return bg;
        }
        let mut entries: Vec<wgpu::BindGroupEntry<'_>> = key
            .iter()
            .enumerate()
            .map(|(i, (buffer, offset, size))| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer,
                    offset: *offset,
                    size: wgpu::BufferSize::new(*size),
                }),
            })
            .collect();
        if p.layout.uniform.is_some() {
            entries.push(wgpu::BindGroupEntry {
                binding: p.layout.uniform_binding(),
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &self.params.buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(p.layout.uniform_size() as u64),
                }),
            });
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&p.name),
            layout: &p.bind_group_layout,
            entries: &entries,
        });
        if let Ok(mut m) = p.bind_groups.lock() {
            // Bounded: a program binding ever new buffers does not keep them alive.
            if m.len() >= BIND_GROUPS_PER_PIPELINE {
                m.clear();
            }
            m.insert(key, bind_group.clone());
        }
        bind_group
    }

    /// Forgets the cached bind groups that hold `buffer` (called when it is freed, so
    /// that the cache does not keep its memory alive).
    pub fn release(&self, buffer: &GpuBuffer) {
        for p in self.pipelines.all() {
            if let Ok(mut m) = p.bind_groups.lock() {
                m.retain(|k, _| !k.iter().any(|(b, _, _)| *b == buffer.buffer));
            }
        }
    }

    /// Submits the pending batch without waiting for it.
    pub fn flush(&self) -> Result<()> {
        {
            // Submitted under the batch's lock: batches reach the queue in the order
            // their launches were recorded, whichever threads record and flush them
            // (taking a batch and submitting it after the lock was released let a later
            // batch overtake it: a launch ran before the copies recorded ahead of it).
            let mut batch = self.lock_batch()?;
            batch.launches = 0;
            let params = std::mem::take(&mut batch.params);
            if let Some(encoder) = batch.encoder.take() {
                if !params.is_empty() {
                    self.queue.write_buffer(&self.params.buffer, 0, &params);
                }
                self.queue.submit([encoder.finish()]);
            }
        }
        self.take_uncaptured()
    }

    /// Submits the pending batch and waits until the device has finished all work.
    pub fn synchronize(&self) -> Result<()> {
        self.flush()?;
        self.wait()
    }

    /// Waits for all submitted work (and map callbacks).
    pub(crate) fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| {
                Diagnostic::new(ErrorKind::Backend, format!("waiting for the device: {e}"))
            })?;
        self.take_uncaptured()
    }
}
