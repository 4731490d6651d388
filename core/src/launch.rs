//! What a launch hands the compiler: argument kinds for specialization, constexpr
//! values, runtime scalars, and the grid.
//!
//! Specialization follows Triton's JIT: a kernel is traced once per distinct
//! [`SpecKey`]: the dtype of every pointer and scalar argument, the value of every
//! constexpr, and for integer scalars and pointers whether they are divisible by 16
//! (elements for integers, bytes for pointer addresses). Integer scalars equal to 1 are
//! specialized as constants (a stride of 1 makes a dimension provably contiguous). A
//! scalar passed positionally to a `tl.constexpr` parameter is in the key by value; a
//! tensor descriptor by its dtype, alignment, block shape and the specialization of
//! its shape and strides.

use crate::ir::DType;
use std::fmt;

/// A compile-time constant supplied at launch (`BLOCK=1024`) or known while tracing.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    DType(DType),
    None,
    Tuple(Vec<ConstValue>),
}

impl ConstValue {
    /// A hashable, exact key (floats by their bits).
    pub fn key(&self) -> String {
        match self {
            ConstValue::Float(f) => format!("f{:x}", f.to_bits()),
            other => format!("{other}"),
        }
    }
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Int(i) => write!(f, "{i}"),
            ConstValue::Float(x) => write!(f, "{x:?}"),
            ConstValue::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            ConstValue::Str(s) => write!(f, "{s:?}"),
            ConstValue::DType(d) => write!(f, "tl.{}", d.triton_name()),
            ConstValue::None => write!(f, "None"),
            ConstValue::Tuple(items) => {
                let parts: Vec<String> = items.iter().map(|i| i.to_string()).collect();
                if parts.len() == 1 {
                    write!(f, "({},)", parts[0])
                } else {
                    write!(f, "({})", parts.join(", "))
                }
            }
        }
    }
}

impl From<i64> for ConstValue {
    fn from(v: i64) -> Self {
        ConstValue::Int(v)
    }
}
impl From<i32> for ConstValue {
    fn from(v: i32) -> Self {
        ConstValue::Int(v as i64)
    }
}
impl From<u32> for ConstValue {
    fn from(v: u32) -> Self {
        ConstValue::Int(v as i64)
    }
}
impl From<usize> for ConstValue {
    fn from(v: usize) -> Self {
        ConstValue::Int(v as i64)
    }
}
impl From<f64> for ConstValue {
    fn from(v: f64) -> Self {
        ConstValue::Float(v)
    }
}
impl From<f32> for ConstValue {
    fn from(v: f32) -> Self {
        ConstValue::Float(v as f64)
    }
}
impl From<bool> for ConstValue {
    fn from(v: bool) -> Self {
        ConstValue::Bool(v)
    }
}
impl From<DType> for ConstValue {
    fn from(v: DType) -> Self {
        ConstValue::DType(v)
    }
}
impl From<&str> for ConstValue {
    fn from(v: &str) -> Self {
        ConstValue::Str(v.to_string())
    }
}

/// A runtime scalar argument, typed.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ScalarValue {
    Bool(bool),
    /// An integer of the given dtype (bits of u64 kept in the i64).
    Int(DType, i64),
    /// A float of the given dtype.
    Float(DType, f64),
}

impl ScalarValue {
    pub fn dtype(&self) -> DType {
        match self {
            ScalarValue::Bool(_) => DType::I1,
            ScalarValue::Int(d, _) | ScalarValue::Float(d, _) => *d,
        }
    }
}

/// What the compiler needs to know about one positional launch argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    /// A buffer: its element type, and whether its address is 16-byte aligned.
    Ptr { dtype: DType, aligned16: bool },
    /// A runtime scalar (its value is not part of the key, but is available so that a
    /// scalar passed to a constexpr parameter can be folded).
    Scalar(ScalarValue),
    /// A tensor descriptor (Triton's host-side `TensorDescriptor`): a buffer of `dtype`
    /// seen as a tensor of `shape` with `strides` (elements), read and written in
    /// blocks of `block_shape`. The block shape is part of the key, the shape and
    /// strides are runtime values (specialized like integer scalars: equal to 1,
    /// divisible by 16). It feeds `1 + 2 * rank` runtime values, in this order: the
    /// buffer, the shape, the strides.
    Descriptor {
        dtype: DType,
        aligned16: bool,
        shape: Vec<i64>,
        strides: Vec<i64>,
        block_shape: Vec<u32>,
    },
}

impl ArgSpec {
    /// The part of this argument that belongs to the specialization key.
    pub fn key(&self) -> String {
        let mut out = String::new();
        self.write_key(&mut out);
        out
    }

    /// Appends [`ArgSpec::key`] to `out` (the launch path builds keys without
    /// intermediate strings).
    pub fn write_key(&self, out: &mut String) {
        use std::fmt::Write;
        let aligned = |a: bool| if a { ":16" } else { "" };
        match self {
            ArgSpec::Ptr { dtype, aligned16 } => {
                let _ = write!(out, "*{dtype}{}", aligned(*aligned16));
            }
            ArgSpec::Scalar(ScalarValue::Int(d, 1)) if !d.is_bool() => {
                let _ = write!(out, "{d}=1");
            }
            ArgSpec::Scalar(ScalarValue::Int(d, v)) => {
                let _ = write!(out, "{d}{}", aligned(v % 16 == 0));
            }
            ArgSpec::Scalar(s) => {
                let _ = write!(out, "{}", s.dtype());
            }
            ArgSpec::Descriptor { .. } => out.push_str(&self.descriptor_key()),
        }
    }

    /// Whether `self` and `other` give the same key ([`ArgSpec::write_key`], or the
    /// exact value where `folded`, see [`SpecKey::with_prefix`]), compared without
    /// building it: the launch path's check that a launch specializes as the last one.
    pub fn same_key(&self, other: &ArgSpec, folded: bool) -> bool {
        // A scalar's part of the key: dtype and `=1` / `:16` / nothing.
        let class = |s: &ScalarValue| match s {
            ScalarValue::Int(d, 1) if !d.is_bool() => (*d, 1),
            ScalarValue::Int(d, v) => (*d, if v % 16 == 0 { 16 } else { 0 }),
            other => (other.dtype(), 0),
        };
        match (self, other) {
            (
                ArgSpec::Ptr {
                    dtype: a,
                    aligned16: x,
                },
                ArgSpec::Ptr {
                    dtype: b,
                    aligned16: y,
                },
            ) => a == b && x == y,
            (ArgSpec::Scalar(a), ArgSpec::Scalar(b)) if folded => match (a, b) {
                (ScalarValue::Float(d, x), ScalarValue::Float(e, y)) => {
                    d == e && x.to_bits() == y.to_bits()
                }
                _ => a == b,
            },
            (ArgSpec::Scalar(a), ArgSpec::Scalar(b)) => class(a) == class(b),
            (ArgSpec::Descriptor { .. }, ArgSpec::Descriptor { .. }) => self.key() == other.key(),
            _ => false,
        }
    }

    fn descriptor_key(&self) -> String {
        match self {
            ArgSpec::Descriptor {
                dtype,
                aligned16,
                shape,
                strides,
                block_shape,
            } => {
                let it = ArgSpec::descriptor_index_dtype(shape, strides);
                let int = |v: &i64| ArgSpec::Scalar(ScalarValue::Int(it, *v)).key();
                let s: Vec<String> = shape.iter().map(int).collect();
                let t: Vec<String> = strides.iter().map(int).collect();
                let b: Vec<String> = block_shape.iter().map(|d| d.to_string()).collect();
                format!(
                    "desc<*{dtype}{}, [{}], [{}], [{}]>",
                    if *aligned16 { ":16" } else { "" },
                    s.join(","),
                    t.join(","),
                    b.join(",")
                )
            }
            _ => String::new(),
        }
    }

    /// The dtype of a descriptor's shape and stride values: i32 where every one fits
    /// (so that a backend without 64-bit integers takes it), else i64.
    pub fn descriptor_index_dtype(shape: &[i64], strides: &[i64]) -> DType {
        if shape
            .iter()
            .chain(strides)
            .all(|&v| i32::try_from(v).is_ok())
        {
            DType::I32
        } else {
            DType::I64
        }
    }

    /// How many runtime values the argument feeds (a descriptor: buffer, shape,
    /// strides).
    pub fn parts(&self) -> usize {
        match self {
            ArgSpec::Descriptor { shape, .. } => 1 + 2 * shape.len(),
            _ => 1,
        }
    }
}

/// The specialization key: the kernel is traced again when any part of it changes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpecKey(pub String);

impl SpecKey {
    /// The key of a launch whose positional arguments all go to runtime parameters
    /// (see [`SpecKey::with_prefix`] for scalars passed to constexpr parameters).
    pub fn new(kernel: &str, args: &[ArgSpec], constexprs: &[(String, ConstValue)]) -> SpecKey {
        SpecKey::with_prefix("", kernel, args, &[], constexprs)
    }

    /// `prefix` then the key, built in one string (this runs on every launch).
    /// `folded[i]` says that positional argument `i` goes to a `tl.constexpr`
    /// parameter: a scalar's value is then folded into the kernel, so the whole value
    /// is part of the key (not only its dtype and divisibility).
    pub fn with_prefix(
        prefix: &str,
        kernel: &str,
        args: &[ArgSpec],
        folded: &[bool],
        constexprs: &[(String, ConstValue)],
    ) -> SpecKey {
        let mut out = String::with_capacity(prefix.len() + kernel.len() + 16 * args.len() + 24);
        out.push_str(prefix);
        out.push_str(kernel);
        out.push('(');
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            match a {
                ArgSpec::Scalar(s) if folded.get(i) == Some(&true) => {
                    use std::fmt::Write;
                    let _ = match s {
                        ScalarValue::Bool(b) => write!(out, "constexpr {b}"),
                        ScalarValue::Int(d, v) => write!(out, "constexpr {d} {v}"),
                        ScalarValue::Float(d, f) => write!(out, "constexpr {d} {:#x}", f.to_bits()),
                    };
                }
                _ => a.write_key(&mut out),
            }
        }
        out.push_str(")[");
        // Constexprs sorted by `name=value` text, as the key has always been.
        let mut cs: Vec<String> = constexprs
            .iter()
            .map(|(n, v)| format!("{n}={}", v.key()))
            .collect();
        cs.sort_unstable();
        for (i, c) in cs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(c);
        }
        out.push(']');
        SpecKey(out)
    }
}

/// A launch grid of one to three dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grid(pub [u32; 3]);

impl Grid {
    pub fn total(&self) -> u64 {
        self.0.iter().map(|&d| d as u64).product()
    }

    /// The program id of the `i`-th program in launch order (x fastest, then y, z).
    pub fn pid(&self, i: u64) -> [u32; 3] {
        let [gx, gy, _] = self.0.map(|d| d.max(1) as u64);
        [
            (i % gx) as u32,
            (i / gx % gy) as u32,
            (i / (gx * gy)) as u32,
        ]
    }
}

impl From<u32> for Grid {
    fn from(x: u32) -> Self {
        Grid([x, 1, 1])
    }
}
impl From<[u32; 1]> for Grid {
    fn from(x: [u32; 1]) -> Self {
        Grid([x[0], 1, 1])
    }
}
impl From<[u32; 2]> for Grid {
    fn from(x: [u32; 2]) -> Self {
        Grid([x[0], x[1], 1])
    }
}
impl From<[u32; 3]> for Grid {
    fn from(x: [u32; 3]) -> Self {
        Grid(x)
    }
}
impl From<(u32,)> for Grid {
    fn from(x: (u32,)) -> Self {
        Grid([x.0, 1, 1])
    }
}
impl From<(u32, u32)> for Grid {
    fn from(x: (u32, u32)) -> Self {
        Grid([x.0, x.1, 1])
    }
}
impl From<(u32, u32, u32)> for Grid {
    fn from(x: (u32, u32, u32)) -> Self {
        Grid([x.0, x.1, x.2])
    }
}
