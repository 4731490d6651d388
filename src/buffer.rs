//! Device buffers and sub-range views of them.

use crate::device::Device;
use std::ops::Range;
use std::sync::Arc;
use tilewise_core::ir::DType;

/// A backend's identifier of an allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct BufferId(pub usize);

struct Allocation {
    device: Device,
    id: BufferId,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.device.backend.free(self.id);
    }
}

/// Typed elements on a device. Clones share the allocation, freed with the last one.
#[derive(Clone)]
pub struct Buffer {
    alloc: Arc<Allocation>,
    dtype: DType,
    len: usize,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Buffer({} x {} on {})",
            self.len,
            self.dtype,
            self.alloc.device.name()
        )
    }
}

impl Buffer {
    pub(crate) fn new(device: Device, id: BufferId, dtype: DType, len: usize) -> Buffer {
        Buffer {
            alloc: Arc::new(Allocation { device, id }),
            dtype,
            len,
        }
    }

    pub(crate) fn id(&self) -> BufferId {
        self.alloc.id
    }

    /// The device address of the first element, for kernels that take pointers as
    /// data: write it into a table (an `int64` buffer) and the kernel casts it back
    /// with `tl.load(table + i).to(tl.pointer_type(tl.float16))`, as Triton's grouped
    /// GEMM does with `tensor.data_ptr()`. The driver's address on CUDA; on the
    /// interpreter and simulators an address of their own (`tilewise_core::address`)
    /// that only their kernels understand; an error on wgpu (WGSL has no addresses).
    /// Valid while the buffer lives.
    pub fn address(&self) -> crate::Result<u64> {
        self.alloc.device.backend.address(self.alloc.id)
    }

    /// Whether `other` is this allocation (a clone of the same buffer).
    pub fn same_allocation(&self, other: &Buffer) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    pub fn device(&self) -> &Device {
        &self.alloc.device
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A view of elements `range` (clamped to the buffer): binding it passes a pointer to
    /// its first element, and accesses are bounds-checked against the view.
    pub fn slice(&self, range: Range<usize>) -> BufferView {
        let start = range.start.min(self.len);
        let end = range.end.clamp(start, self.len);
        BufferView {
            buffer: self.clone(),
            offset: start,
            len: end - start,
        }
    }

    /// The whole buffer as a view.
    pub fn view(&self) -> BufferView {
        self.slice(0..self.len)
    }
}

/// Elements `[offset, offset + len)` of a [`Buffer`].
#[derive(Clone, Debug)]
pub struct BufferView {
    pub(crate) buffer: Buffer,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

impl From<&Buffer> for BufferView {
    fn from(b: &Buffer) -> BufferView {
        b.view()
    }
}

impl From<&BufferView> for BufferView {
    fn from(v: &BufferView) -> BufferView {
        v.clone()
    }
}

impl BufferView {
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }
    pub fn offset(&self) -> usize {
        self.offset
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of the view's first element (see [`Buffer::address`]).
    pub fn address(&self) -> crate::Result<u64> {
        Ok(self.buffer.address()? + (self.offset * self.buffer.dtype.size_bytes()) as u64)
    }
}
