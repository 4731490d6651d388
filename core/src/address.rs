//! The address space of the executors without real device addresses.
//!
//! Triton kernels may treat pointers as data: a host writes device addresses into a
//! table, the kernel loads one and casts it back (`x.to(tl.pointer_type(tl.float16))`),
//! or casts a pointer to `int64`. On CUDA an address is the driver's. The interpreter
//! and the Thread IR simulators have host buffers instead, so they give each buffer
//! its own window of a flat 64-bit space: buffer `b`'s byte `o` is at
//! `(b + 1) << 40 | o`. Address 0 (and anything below `1 << 40`) is in no buffer, so a
//! null pointer is caught on use. Both executors decode with [`decode`], so a table
//! written by the host works on either.

/// The bits of a buffer's byte offset: 1 TiB a buffer.
pub const OFFSET_BITS: u32 = 40;

/// The address of byte `byte` of host buffer `buffer`.
pub fn encode(buffer: usize, byte: u64) -> u64 {
    ((buffer as u64 + 1) << OFFSET_BITS) | (byte & ((1 << OFFSET_BITS) - 1))
}

/// The host buffer and byte offset of `address`; `None` below the first buffer's window.
pub fn decode(address: u64) -> Option<(usize, u64)> {
    let window = address >> OFFSET_BITS;
    if window == 0 {
        return None;
    }
    Some(((window - 1) as usize, address & ((1 << OFFSET_BITS) - 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_null() {
        for (b, o) in [(0usize, 0u64), (0, 12), (7, (1 << 40) - 1), (65_535, 4096)] {
            assert_eq!(decode(encode(b, o)), Some((b, o)));
        }
        assert_eq!(decode(0), None);
        assert_eq!(decode((1 << 40) - 1), None);
    }
}
