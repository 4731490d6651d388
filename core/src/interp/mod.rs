//! The reference interpreter: runs a specialized tile-IR kernel over every program of
//! the grid, on host buffers, with the semantics of a GPU run.
//!
//! (Skeleton: the API below is the contract the facade and the tests use.)

use crate::diag::Result;
use crate::ir::{DType, Kernel};
use crate::launch::{Grid, ScalarValue};

/// A host buffer: raw little-endian bytes of `dtype` elements (`i1` one byte each).
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    pub dtype: DType,
    pub bytes: Vec<u8>,
}

impl HostBuffer {
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size_bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A runtime argument of a launch, in kernel parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RtArg {
    /// Elements `[offset, offset + len)` of `buffers[buffer]`.
    Buffer {
        buffer: usize,
        offset: usize,
        len: usize,
    },
    Scalar(ScalarValue),
}

/// Interpreter options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Checked mode: also report false `multiple_of` / `max_contiguous` hints and block
    /// pointers whose declared extent reaches past their buffer.
    pub checked: bool,
}

/// Runs `kernel` over `grid`. `args[i]` feeds `kernel.params[i]`.
pub fn run(
    kernel: &Kernel,
    grid: Grid,
    args: &[RtArg],
    buffers: &mut [HostBuffer],
    options: &Options,
) -> Result<()> {
    let _ = (kernel, grid, args, buffers, options);
    Err(crate::Diagnostic::internal("interpreter not built yet"))
}
