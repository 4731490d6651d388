//! Device memory: storage buffers, uploads and read-back.
//!
//! A [`GpuBuffer`] is a wgpu buffer with usage `STORAGE | COPY_SRC | COPY_DST` and a
//! logical length in bytes. The allocation is the length rounded up to 16 bytes (at
//! least 16): wgpu copies and maps in units of 4 bytes, and a binding viewed as
//! `array<vec4<T>>` (wide accesses) must cover its last, partial vector. The padding is
//! never returned.
//!
//! Ordering: uploads and read-backs are ordered with the launches recorded before them.
//! `queue.write_buffer` runs at the start of the next submission, ahead of any command
//! buffer in it, so a write first submits the pending batch (without waiting) when one
//! is open. A read appends a copy into a staging buffer to the pending batch, submits
//! it, maps the staging buffer and polls the device until the map completes.
//!
//! Writes and reads move whole 16-byte units. Unaligned writes (an offset or an end not
//! on a 16-byte boundary, e.g. one f16 in the middle of a buffer) read the edge units
//! back first, so the bytes around the written range are preserved.

use std::sync::mpsc;

use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::context::WgpuContext;

/// The unit of allocations, writes and read-backs in bytes (wgpu's copy granularity is
/// 4). Allocations are rounded up to 16 bytes: a binding viewed as `array<vec4<T>>` (wide
/// accesses) then always covers its last, partial vector.
const ALIGN: u64 = 16;

fn round_up(x: u64, to: u64) -> u64 {
    x.div_ceil(to) * to
}

/// A storage buffer on the device.
#[derive(Debug, Clone)]
pub struct GpuBuffer {
    pub(crate) buffer: wgpu::Buffer,
    len: u64,
}

impl GpuBuffer {
    /// Logical length in bytes (what was asked for).
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Allocated size in bytes: the length rounded up to 16, at least 16.
    pub fn allocated(&self) -> u64 {
        self.buffer.size()
    }

    /// The wgpu buffer.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

impl WgpuContext {
    /// A zero-initialised storage buffer of `len` bytes.
    pub fn create_buffer(&self, len: u64) -> Result<GpuBuffer> {
        let size = round_up(len.max(1), ALIGN);
        let caps = self.capabilities();
        if size > caps.max_buffer_size {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "a buffer of {len} bytes exceeds the adapter's max_buffer_size ({} bytes)",
                    caps.max_buffer_size
                ),
            ));
        }
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise storage"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Ok(GpuBuffer { buffer, len })
    }

    /// A storage buffer holding `data`.
    pub fn create_buffer_init(&self, data: &[u8]) -> Result<GpuBuffer> {
        let buf = self.create_buffer(data.len() as u64)?;
        self.write_buffer(&buf, 0, data)?;
        Ok(buf)
    }

    /// A storage buffer holding `data` (any plain-old-data element type).
    pub fn create_buffer_from<T: bytemuck::Pod>(&self, data: &[T]) -> Result<GpuBuffer> {
        self.create_buffer_init(bytemuck::cast_slice(data))
    }

    /// Writes `data` at byte `offset`, ordered after every launch recorded so far.
    pub fn write_buffer(&self, buf: &GpuBuffer, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&e| e <= buf.len)
            .ok_or_else(|| {
                Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "write of {} bytes at offset {offset} overruns a buffer of {} bytes",
                        data.len(),
                        buf.len
                    ),
                )
            })?;
        if data.is_empty() {
            return Ok(());
        }
        let start = offset - offset % ALIGN;
        let stop = round_up(end, ALIGN);
        let mut staged;
        let bytes: &[u8] = if start == offset && (stop == end || end == buf.len) {
            // Aligned, or the tail is only allocation padding.
            staged = data.to_vec();
            staged.resize((stop - start) as usize, 0);
            &staged
        } else {
            // Preserve the bytes that share a word with the edges of the range.
            let hi = stop.min(buf.len);
            staged = self.read_buffer_range(buf, start, hi - start)?;
            staged.resize((stop - start) as usize, 0);
            let at = (offset - start) as usize;
            staged[at..at + data.len()].copy_from_slice(data);
            &staged
        };
        self.flush()?;
        self.queue.write_buffer(&buf.buffer, start, bytes);
        Ok(())
    }

    /// Writes `data` at element offset `elem_offset` (elements of `T`).
    pub fn write_slice<T: bytemuck::Pod>(
        &self,
        buf: &GpuBuffer,
        elem_offset: u64,
        data: &[T],
    ) -> Result<()> {
        let offset = elem_offset * std::mem::size_of::<T>() as u64;
        self.write_buffer(buf, offset, bytemuck::cast_slice(data))
    }

    /// Reads the whole buffer back (exactly `len()` bytes), after every recorded launch.
    pub fn read_buffer(&self, buf: &GpuBuffer) -> Result<Vec<u8>> {
        self.read_buffer_range(buf, 0, buf.len)
    }

    /// Reads the buffer back as elements of `T` (the length must be a multiple).
    pub fn read_vec<T: bytemuck::Pod>(&self, buf: &GpuBuffer) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>() as u64;
        if size == 0 || !buf.len.is_multiple_of(size) {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "a buffer of {} bytes does not hold whole elements of {size} bytes",
                    buf.len
                ),
            ));
        }
        let bytes = self.read_buffer(buf)?;
        Ok(bytemuck::pod_collect_to_vec(&bytes))
    }

    /// Reads `len` bytes at byte `offset`, after every recorded launch.
    pub fn read_buffer_range(&self, buf: &GpuBuffer, offset: u64, len: u64) -> Result<Vec<u8>> {
        if offset.checked_add(len).is_none_or(|e| e > buf.len) {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "read of {len} bytes at offset {offset} overruns a buffer of {} bytes",
                    buf.len
                ),
            ));
        }
        if len == 0 {
            return Ok(vec![]);
        }
        let start = offset - offset % ALIGN;
        let size = round_up(offset + len, ALIGN) - start;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise read-back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        {
            let mut batch = self.lock_batch()?;
            let encoder = batch.encoder(&self.device);
            encoder.copy_buffer_to_buffer(&buf.buffer, start, &staging, 0, size);
        }
        self.flush()?;
        let (tx, rx) = mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        let mapped = rx.recv().map_err(|_| {
            Diagnostic::new(ErrorKind::Backend, "read-back: the map callback never ran")
        })?;
        mapped.map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!("read-back: mapping failed: {e}"),
            )
        })?;
        let at = (offset - start) as usize;
        let out = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| Diagnostic::new(ErrorKind::Backend, format!("read-back: {e}")))?;
            view[at..at + len as usize].to_vec()
        };
        staging.unmap();
        Ok(out)
    }
}
