//! The tensor memory accelerator (TMA, Hopper's `cp.async.bulk.tensor`) in the Thread IR:
//! the tensor map a kernel takes as a parameter ([`TensorMap`]: what the host encodes
//! with `cuTensorMapEncodeTiled` from the other arguments at launch), and the box a
//! [`super::Stmt::TmaLoad`] copies, written from the PTX ISA ("Tensor Data Movement":
//! tiled mode, out-of-bound elements zero-filled, the 32/64/128-byte swizzles) and the
//! CUDA driver's description of `cuTensorMapEncodeTiled`, so that the simulator writes
//! shared memory as the hardware does.

use crate::ir::DType;

/// A value the host knows at launch: a scalar parameter's value, or a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Extent {
    Param(u32),
    Const(i64),
}

impl std::fmt::Display for Extent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Extent::Param(p) => write!(f, "p{p}"),
            Extent::Const(c) => write!(f, "{c}"),
        }
    }
}

/// A tensor map parameter: buffer parameter `buffer`'s elements from its first one seen
/// as a tensor of `dtype` with extents `dims` and element strides `strides` (both
/// innermost dimension first; the innermost is contiguous, so `strides[0]` is the
/// stride of dimension 1), copied in boxes of `box_dims` with a `swizzle`-byte swizzle
/// (0 for none). The host checks at launch what the hardware requires (a 16-byte
/// aligned address, strides multiples of 16 bytes, extents from 1 to 2^32) and refuses
/// a launch that breaks it; the lowering only emits maps whose specialization
/// guarantees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TensorMap {
    pub buffer: u32,
    pub dtype: DType,
    pub dims: Vec<Extent>,
    pub strides: Vec<Extent>,
    pub box_dims: Vec<u32>,
    pub swizzle: u32,
}

impl TensorMap {
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Bytes one box fills in shared memory (out-of-bound elements included: they are
    /// written as zeros), which is what a copy completes on its barrier.
    pub fn box_bytes(&self) -> u32 {
        self.box_dims.iter().product::<u32>() * self.dtype.size_bytes() as u32
    }

    /// The byte offset in shared memory, from the box's start, of the box element at
    /// `index` (innermost first): rows of `box_dims[0]` elements one after the other,
    /// 16-byte chunk `c` of each 128-byte line `l` moved to `c ^ (l % 8)` under a
    /// 128-byte swizzle (`c ^ (l / 2 % 4)` and `c ^ (l / 4 % 2)` for 64 and 32 bytes,
    /// whose patterns repeat every 512 and 256 bytes): the swizzle XORs address bits 7..
    /// into bits 4.., as the matrix descriptors read it.
    pub fn smem_byte_offset(&self, index: &[u32]) -> u32 {
        let mut linear = 0u32;
        for d in (0..self.rank()).rev() {
            linear = linear * self.box_dims[d] + index[d];
        }
        let byte = linear * self.dtype.size_bytes() as u32;
        match self.swizzle {
            0 => byte,
            s => {
                let mask = s / 16 - 1;
                byte ^ (((byte >> 7) & mask) << 4)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Extent, TensorMap};
    use crate::ir::DType;

    fn map(swizzle: u32, inner: u32) -> TensorMap {
        TensorMap {
            buffer: 0,
            dtype: DType::F16,
            dims: vec![Extent::Const(1024), Extent::Const(1024)],
            strides: vec![Extent::Const(1024)],
            box_dims: vec![inner, 64],
            swizzle,
        }
    }

    /// Spot values of the PTX ISA's swizzle figures: under a 128-byte swizzle, row 1's
    /// first 16-byte chunk lands in chunk 1, row 9's in chunk 1 too (the pattern repeats
    /// every 8 rows); under 64 bytes (two rows a 128-byte line), rows 2 and 3 XOR 1.
    #[test]
    fn swizzles_move_chunks_as_the_ptx_isa_draws_them() {
        let m = map(128, 64);
        assert_eq!(m.smem_byte_offset(&[0, 1]), 128 + 16);
        assert_eq!(m.smem_byte_offset(&[8, 1]), 128);
        assert_eq!(m.smem_byte_offset(&[0, 9]), 9 * 128 + 16);
        assert_eq!(m.smem_byte_offset(&[56, 7]), 7 * 128);
        let m = map(64, 32);
        assert_eq!(m.smem_byte_offset(&[0, 1]), 64);
        assert_eq!(m.smem_byte_offset(&[0, 2]), 128 + 16);
        assert_eq!(m.smem_byte_offset(&[8, 3]), 3 * 64);
        let m = map(0, 32);
        assert_eq!(m.smem_byte_offset(&[3, 2]), (2 * 32 + 3) * 2);
        assert_eq!(m.box_bytes(), 32 * 64 * 2);
    }
}
