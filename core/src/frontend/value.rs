//! Trace-time values: what a Python name is bound to while a jit function is traced.
//!
//! Like Triton's code generator, the tracer evaluates everything it can at trace time.
//! A [`Val`] is either a compile-time value (a Python number, string, dtype, tuple, a
//! module or function reference: "constexprs") or a runtime value, an SSA
//! [`Value`] of the tile IR being built. Python number literals have a Triton dtype
//! ([`literal_dtype`]) that only matters once they meet a runtime value.

use crate::ir::{DType, Type, Value};
use crate::launch::{ConstValue, ScalarValue};
use std::fmt::Write;

/// A namespace a name can refer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    /// `triton.language` (also `tl.math`, `libdevice`): the tile functions and dtypes.
    Tl,
    /// `triton` / `tilewise`: `cdiv`, `next_power_of_2`, `jit`, `language`.
    Triton,
}

/// A value while tracing.
#[derive(Clone, Debug)]
pub enum Val {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    DType(DType),
    /// The `dtype` of a pointer value: `pointer_type<elem>`, with `.element_ty`.
    PtrType(DType),
    /// The `type` of a tile (Triton's `block_type`): its element type (a `DType` or a
    /// `PtrType`) and its shape; `.element_ty`, `.scalar`, `.shape`, `.numel`.
    BlockType(Box<Val>, Vec<i64>),
    /// A tuple (or, with `true`, a list such as `x.shape`).
    Tuple(Vec<Val>, bool),
    /// A runtime value of the tile IR.
    T(Value),
    Module(Namespace),
    /// A library function, by its qualified name (`tl.load`, `range`, `triton.cdiv`).
    Builtin(String),
    /// A `@jit` function of the module.
    Jit(String),
    /// A plain Python function of the module (not callable from a kernel).
    NonJit(String),
    /// A method bound to a receiver (`x.to`, `x.sum`).
    Method(Box<Val>, String),
    /// A tensor descriptor (`tl.make_tensor_descriptor`, or a descriptor argument).
    Desc(Box<Descriptor>),
    /// A Triton dtype tilewise has no storage for (`tl.float8e4b15`, `tl.float8e4b8`,
    /// `tl.float8e5b16`): it compares and answers `is_fp8()`, and any use that needs
    /// the type is an error.
    OtherDType(&'static str),
}

/// A tensor descriptor: a scalar pointer seen as a tensor of `shape` with `strides`,
/// accessed in blocks of `block_shape` (out-of-bounds elements read as zero and are
/// not written).
#[derive(Clone, Debug)]
pub struct Descriptor {
    /// The base pointer (a scalar pointer value).
    pub base: Val,
    pub dtype: DType,
    /// Numbers or runtime integer scalars, one a dimension.
    pub shape: Vec<Val>,
    pub strides: Vec<Val>,
    pub block_shape: Vec<i64>,
}

impl Val {
    /// Whether this is a Python number (the `is_scalar` of Triton's promotion rules).
    pub fn is_number(&self) -> bool {
        matches!(self, Val::Bool(_) | Val::Int(_) | Val::Float(_))
    }

    pub fn is_constexpr(&self) -> bool {
        !matches!(self, Val::T(_))
    }

    /// Structural identity (floats by bits, runtime values by SSA id).
    pub fn same(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::None, Val::None) => true,
            (Val::Bool(a), Val::Bool(b)) => a == b,
            (Val::Int(a), Val::Int(b)) => a == b,
            (Val::Float(a), Val::Float(b)) => a.to_bits() == b.to_bits(),
            (Val::Str(a), Val::Str(b)) => a == b,
            (Val::DType(a), Val::DType(b)) | (Val::PtrType(a), Val::PtrType(b)) => a == b,
            (Val::BlockType(a, sa), Val::BlockType(b, sb)) => sa == sb && a.same(b),
            (Val::Tuple(a, la), Val::Tuple(b, lb)) => {
                la == lb && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y))
            }
            (Val::T(a), Val::T(b)) => a == b,
            (Val::Module(a), Val::Module(b)) => a == b,
            (Val::Builtin(a), Val::Builtin(b))
            | (Val::Jit(a), Val::Jit(b))
            | (Val::NonJit(a), Val::NonJit(b)) => a == b,
            (Val::Method(a, n), Val::Method(b, m)) => n == m && a.same(b),
            (Val::OtherDType(a), Val::OtherDType(b)) => a == b,
            (Val::Desc(a), Val::Desc(b)) => {
                let all = |x: &[Val], y: &[Val]| {
                    x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.same(q))
                };
                a.base.same(&b.base)
                    && a.dtype == b.dtype
                    && a.block_shape == b.block_shape
                    && all(&a.shape, &b.shape)
                    && all(&a.strides, &b.strides)
            }
            _ => false,
        }
    }

    /// A short description for error messages.
    pub fn describe(&self, ty: Option<&Type>) -> String {
        match self {
            Val::None => "None".into(),
            Val::Bool(b) => format!("the constant {}", if *b { "True" } else { "False" }),
            Val::Int(i) => format!("the constant {i}"),
            Val::Float(f) => format!("the constant {f:?}"),
            Val::Str(s) => format!("the string {s:?}"),
            Val::DType(d) => format!("the dtype tl.{}", d.triton_name()),
            Val::PtrType(d) => format!("the pointer type pointer<{}>", d.triton_name()),
            Val::BlockType(..) => {
                format!("the block type {}", format_val(self, &|_| String::new()))
            }
            Val::Tuple(..) => "a tuple".into(),
            Val::T(_) => match ty {
                Some(t) if t.is_scalar() => format!("a runtime scalar of type {t}"),
                Some(t) => format!("a tile of type {t}"),
                None => "a runtime value".into(),
            },
            Val::Module(_) => "a module".into(),
            Val::Builtin(n) => format!("the function `{n}`"),
            Val::Jit(n) => format!("the jit function `{n}`"),
            Val::NonJit(n) => format!("the Python function `{n}`"),
            Val::Method(_, n) => format!("the method `{n}`"),
            Val::OtherDType(n) => format!("the dtype tl.{n} (which tilewise does not support)"),
            Val::Desc(d) => format!(
                "a tensor descriptor of {} with block shape {:?}",
                d.dtype.triton_name(),
                d.block_shape
            ),
        }
    }

    /// Python truthiness of a compile-time value (`None` for runtime values).
    pub fn truthy(&self) -> Option<bool> {
        Some(match self {
            Val::None => false,
            Val::Bool(b) => *b,
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::Tuple(v, _) => !v.is_empty(),
            Val::T(_) => return None,
            _ => true,
        })
    }

    pub fn from_const(c: &ConstValue) -> Val {
        match c {
            ConstValue::Int(i) => Val::Int(*i),
            ConstValue::Float(f) => Val::Float(*f),
            ConstValue::Bool(b) => Val::Bool(*b),
            ConstValue::Str(s) => Val::Str(s.clone()),
            ConstValue::DType(d) => Val::DType(*d),
            ConstValue::None => Val::None,
            ConstValue::Tuple(items) => {
                Val::Tuple(items.iter().map(Val::from_const).collect(), false)
            }
        }
    }

    pub fn from_scalar(s: &ScalarValue) -> Val {
        match s {
            ScalarValue::Bool(b) => Val::Bool(*b),
            ScalarValue::Int(_, v) => Val::Int(*v),
            ScalarValue::Float(_, f) => Val::Float(*f),
        }
    }
}

/// The Triton dtype of a Python number literal: bools are `i1`; ints are `i32` when they
/// fit, else `u32`, else `i64` (Triton 3's rule); floats are `f32`.
pub fn literal_dtype(v: &Val) -> Option<DType> {
    Some(match v {
        Val::Bool(_) => DType::I1,
        Val::Int(i) => {
            if i32::try_from(*i).is_ok() {
                DType::I32
            } else if (0..(1i64 << 32)).contains(i) {
                DType::U32
            } else {
                DType::I64
            }
        }
        Val::Float(_) => DType::F32,
        _ => return None,
    })
}

/// Formats a compile-time value the way Python's `print` would (for `tl.static_print`).
/// Runtime values print their IR type.
pub fn format_val(v: &Val, ty_of: &dyn Fn(Value) -> String) -> String {
    let mut s = String::new();
    match v {
        Val::None => s.push_str("None"),
        Val::Bool(b) => s.push_str(if *b { "True" } else { "False" }),
        Val::Int(i) => {
            let _ = write!(s, "{i}");
        }
        Val::Float(f) => {
            let _ = write!(s, "{}", py_float(*f));
        }
        Val::Str(x) => s.push_str(x),
        Val::DType(d) => s.push_str(d.triton_name()),
        Val::PtrType(d) => {
            let _ = write!(s, "pointer<{}>", d.triton_name());
        }
        Val::OtherDType(n) => s.push_str(n),
        Val::Desc(d) => {
            let dims: Vec<String> = d.block_shape.iter().map(|x| x.to_string()).collect();
            let _ = write!(
                s,
                "tensor_descriptor<{}, [{}]>",
                d.dtype.triton_name(),
                dims.join(", ")
            );
        }
        Val::BlockType(elem, shape) => {
            let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            let _ = write!(s, "<[{}], {}>", dims.join(", "), format_val(elem, ty_of));
        }
        Val::Tuple(items, list) => {
            let parts: Vec<String> = items
                .iter()
                .map(|i| match i {
                    Val::Str(x) => format!("'{x}'"),
                    other => format_val(other, ty_of),
                })
                .collect();
            if *list {
                let _ = write!(s, "[{}]", parts.join(", "));
            } else if parts.len() == 1 {
                let _ = write!(s, "({},)", parts[0]);
            } else {
                let _ = write!(s, "({})", parts.join(", "));
            }
        }
        Val::T(x) => s.push_str(&ty_of(*x)),
        Val::Module(Namespace::Tl) => s.push_str("<module 'triton.language'>"),
        Val::Module(Namespace::Triton) => s.push_str("<module 'triton'>"),
        Val::Builtin(n) | Val::Jit(n) | Val::NonJit(n) => {
            let _ = write!(s, "<function {n}>");
        }
        Val::Method(_, n) => {
            let _ = write!(s, "<method {n}>");
        }
    }
    s
}

/// Python's float repr for the common cases (`1.0`, `0.5`, `inf`, `nan`).
pub fn py_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{f:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_dtypes_follow_triton() {
        assert_eq!(literal_dtype(&Val::Int(5)), Some(DType::I32));
        assert_eq!(literal_dtype(&Val::Int(-(1 << 31))), Some(DType::I32));
        assert_eq!(literal_dtype(&Val::Int(1 << 31)), Some(DType::U32));
        assert_eq!(literal_dtype(&Val::Int(1 << 32)), Some(DType::I64));
        assert_eq!(literal_dtype(&Val::Int(-(1 << 31) - 1)), Some(DType::I64));
        assert_eq!(literal_dtype(&Val::Float(1.5)), Some(DType::F32));
        assert_eq!(literal_dtype(&Val::Bool(true)), Some(DType::I1));
    }

    #[test]
    fn shapes_print_as_lists() {
        let v = Val::Tuple(vec![Val::Int(4), Val::Int(1)], true);
        assert_eq!(format_val(&v, &|_| String::new()), "[4, 1]");
        let t = Val::Tuple(vec![Val::Int(4)], false);
        assert_eq!(format_val(&t, &|_| String::new()), "(4,)");
    }
}
