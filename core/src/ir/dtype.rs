//! Element types of the tile IR.
//!
//! A [`DType`] is the type of one element of a tile: a boolean (`i1`), a signed or
//! unsigned integer, or a floating-point number. The names follow the tile IR's text
//! form (`i32`, `f16`, `bf16`); [`DType::triton_name`] gives the spelling the Triton
//! dialect uses (`tl.int32`, `tl.float16`).

use std::fmt;

/// The element type of a tile or scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    pub const ALL: [DType; 13] = [
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
    ];

    /// Width in bits (1 for `i1`).
    pub fn bits(self) -> u32 {
        match self {
            DType::I1 => 1,
            DType::I8 | DType::U8 => 8,
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
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
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
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
