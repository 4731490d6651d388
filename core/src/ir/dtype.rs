//! Element types of the tile IR.
//!
//! A [`DType`] is the type of one element of a tile: a boolean (`i1`), a signed or
//! unsigned integer, or a floating-point number. The names follow the tile IR's text
//! form (`i32`, `f16`, `bf16`); [`DType::triton_name`] gives the spelling the Triton
//! dialect uses (`tl.int32`, `tl.float16`).

use std::fmt;

/// The element type of a tile or scalar.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum DType {
    /// Boolean; masks and comparison results.
    I1,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    /// OCP E4M3FN (`tl.float8e4nv`): bias 7, no infinities, max 448; a storage and
    /// `dot`-operand type (see [`crate::ir::fp8`]).
    F8E4M3,
    /// E5M2 (`tl.float8e5`): bias 15, IEEE infinities and NaNs, max 57344.
    F8E5M2,
}

/// The three kinds Triton orders for its scalar promotion rule (bool < int < float).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Bool,
    Int,
    Float,
}

impl DType {
    /// Every element type, in declaration order.
    pub const ALL: [DType; 15] = [
        DType::I1,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::F8E4M3,
        DType::F8E5M2,
    ];

    /// Width in bits (1 for `i1`).
    pub fn bits(self) -> u32 {
        match self {
            DType::I1 => 1,
            DType::I8 | DType::U8 | DType::F8E4M3 | DType::F8E5M2 => 8,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 16,
            DType::I32 | DType::U32 | DType::F32 => 32,
            DType::I64 | DType::U64 | DType::F64 => 64,
        }
    }

    /// Bytes one element occupies in a buffer (`i1` is stored as one byte).
    pub fn size_bytes(self) -> usize {
        match self {
            DType::I1 => 1,
            other => (other.bits() / 8) as usize,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::F8E4M3 | DType::F8E5M2
        )
    }

    /// The 8-bit floats: storage and `dot` operands only (arithmetic goes through a
    /// wider float).
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::F8E4M3 | DType::F8E5M2)
    }

    /// Integers, including `i1`.
    pub fn is_int(self) -> bool {
        !self.is_float()
    }

    pub fn is_bool(self) -> bool {
        self == DType::I1
    }

    /// Signed integers (`i1` counts as signed, as in Triton).
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            DType::I1 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        )
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    pub fn kind(self) -> Kind {
        if self.is_bool() {
            Kind::Bool
        } else if self.is_float() {
            Kind::Float
        } else {
            Kind::Int
        }
    }

    /// Mantissa bits (without the implicit one) of a float type.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            DType::F16 => 10,
            DType::BF16 => 7,
            DType::F32 => 23,
            DType::F64 => 52,
            DType::F8E4M3 => 3,
            DType::F8E5M2 => 2,
            _ => 0,
        }
    }

    /// The integer type of the same width and the given signedness.
    pub fn int_of_width(bits: u32, signed: bool) -> Option<DType> {
        Some(match (bits, signed) {
            (1, _) => DType::I1,
            (8, true) => DType::I8,
            (16, true) => DType::I16,
            (32, true) => DType::I32,
            (64, true) => DType::I64,
            (8, false) => DType::U8,
            (16, false) => DType::U16,
            (32, false) => DType::U32,
            (64, false) => DType::U64,
            _ => return None,
        })
    }

    /// The IR's short name: `i1`, `i32`, `u8`, `f16`, `bf16`, ...
    pub fn name(self) -> &'static str {
        match self {
            DType::I1 => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
        }
    }

    /// Triton's spelling: `int1`, `int32`, `uint8`, `float16`, `bfloat16`, ...
    pub fn triton_name(self) -> &'static str {
        match self {
            DType::I1 => "int1",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F8E4M3 => "float8e4nv",
            DType::F8E5M2 => "float8e5",
        }
    }

    /// Parses either spelling (`f32`, `float32`, `fp32`, `bf16`, `bfloat16`, `int1`, ...).
    pub fn from_name(name: &str) -> Option<DType> {
        Some(match name {
            "i1" | "int1" | "bool" => DType::I1,
            "i8" | "int8" => DType::I8,
            "i16" | "int16" => DType::I16,
            "i32" | "int32" => DType::I32,
            "i64" | "int64" => DType::I64,
            "u8" | "uint8" => DType::U8,
            "u16" | "uint16" => DType::U16,
            "u32" | "uint32" => DType::U32,
            "u64" | "uint64" => DType::U64,
            "f16" | "fp16" | "float16" => DType::F16,
            "bf16" | "bfloat16" => DType::BF16,
            "f32" | "fp32" | "float32" => DType::F32,
            "f64" | "fp64" | "float64" => DType::F64,
            "f8e4m3" | "fp8e4nv" | "float8e4nv" => DType::F8E4M3,
            "f8e5m2" | "fp8e5" | "float8e5" => DType::F8E5M2,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `x` rounded to f32 to odd: toward zero, with the last bit set when inexact. Rounding
/// that to a format with at least two fewer significand bits (f16, bf16) gives the
/// correctly rounded result of `x` (no double-rounding error).
fn f32_round_to_odd(x: f64) -> f32 {
    let f = x as f32;
    if x.is_nan() || f as f64 == x {
        return f;
    }
    if f.is_infinite() {
        return f32::from_bits(f32::MAX.to_bits() | (f.to_bits() & 0x8000_0000));
    }
    let toward_zero = if (f as f64).abs() > x.abs() {
        f32::from_bits(f.to_bits() - 1)
    } else {
        f
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// `x` correctly rounded (to nearest, ties to even) to f16. `half::f16::from_f64`
/// misrounds some values (-16267.99977 gives -16272 for -16264).
pub fn f16_from_f64(x: f64) -> half::f16 {
    half::f16::from_f32(f32_round_to_odd(x))
}

/// `x` correctly rounded (to nearest, ties to even) to bf16. `half::bf16::from_f64`
/// misrounds some values, even f32 ones (`f32::from_bits(0x37428001)`).
pub fn bf16_from_f64(x: f64) -> half::bf16 {
    half::bf16::from_f32(f32_round_to_odd(x))
}

#[cfg(test)]
mod rounding_tests {
    use super::*;

    /// Exact nearest-even rounding of `x` to `bits` significand bits, by brute force
    /// over the two neighbours (normal range only).
    fn nearest(x: f64, bits: i32) -> f64 {
        let e = x.abs().log2().floor() as i32;
        let ulp = 2f64.powi(e - bits + 1);
        let lo = (x / ulp).floor() * ulp;
        let hi = lo + ulp;
        let (dl, dh) = (x - lo, hi - x);
        if dl < dh || (dl == dh && ((lo / ulp) as i64) % 2 == 0) {
            lo
        } else {
            hi
        }
    }

    #[test]
    fn narrow_rounding_is_correct_where_half_is_not() {
        assert_eq!(f16_from_f64(-16267.999775210257).to_f32(), -16264.0);
        assert_eq!(
            bf16_from_f64(f32::from_bits(0x3742_8001) as f64).to_bits(),
            0x3743
        );
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let e = (s >> 52) % 20;
            let x = f64::from_bits((s & 0x800f_ffff_ffff_ffff) | ((1023 - 10 + e) << 52));
            assert_eq!(f16_from_f64(x).to_f64(), nearest(x, 11), "f16 of {x:e}");
            assert_eq!(bf16_from_f64(x).to_f64(), nearest(x, 8), "bf16 of {x:e}");
        }
    }
}
