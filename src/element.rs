//! Host element types that buffers can be uploaded from and downloaded to.

use tilewise_core::ir::DType;

/// A Rust type that maps to one tilewise [`DType`] and to its little-endian bytes.
pub trait Element: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    /// Appends the element's little-endian bytes.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads an element from exactly `DTYPE.size_bytes()` little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! numeric_element {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(bytes);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}

numeric_element! {
    f32 => F32, f64 => F64, half::f16 => F16, half::bf16 => BF16,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
}

impl Element for bool {
    const DTYPE: DType = DType::I1;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

/// Encodes a slice as little-endian bytes.
pub fn to_bytes<T: Element>(data: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * T::DTYPE.size_bytes());
    for &x in data {
        x.write_le(&mut out);
    }
    out
}

/// Decodes little-endian bytes.
pub fn from_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(T::DTYPE.size_bytes())
        .map(T::read_le)
        .collect()
}

/// An 8-bit float, OCP E4M3FN (Triton's `tl.float8e4nv`), by its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct F8E4M3(pub u8);

/// An 8-bit float, E5M2 (Triton's `tl.float8e5`), by its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct F8E5M2(pub u8);

macro_rules! fp8_element {
    ($($t:ident => $d:ident, $f:ident);* $(;)?) => {$(
        impl $t {
            /// `x` rounded to nearest (ties to even), saturated to the largest finite
            /// value; NaN stays NaN (`tilewise::core::ir::fp8`).
            pub fn from_f32(x: f32) -> Self {
                $t(tilewise_core::ir::fp8::$f.encode(x as f64))
            }
            /// The exact value.
            pub fn to_f32(self) -> f32 {
                tilewise_core::ir::fp8::$f.decode(self.0) as f32
            }
        }
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn write_le(self, out: &mut Vec<u8>) {
                out.push(self.0);
            }
            fn read_le(bytes: &[u8]) -> Self {
                $t(bytes[0])
            }
        }
    )*};
}

fp8_element! {
    F8E4M3 => F8E4M3, E4M3;
    F8E5M2 => F8E5M2, E5M2;
}
