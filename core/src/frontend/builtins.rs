//! The `tl` library (creation, shape, math, memory, hints, printing), Python's
//! builtins (`min`, `max`, `len`, `int`, `float`) and `triton.cdiv` /
//! `triton.next_power_of_2`, with Triton's argument names and semantics.
//! Reductions, scans and `dot` are in `reduce.rs`.

use super::expr::{Args, Kwargs};
use super::semantic::shape_text;
use super::tracer::{err, unsupported, Tracer};
use super::value::{format_val, Val};
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{
    AtomicOp, BinaryOp, CacheHints, Const, DType, Elem, HintKind, Op, Padding, Type, UnaryOp, Value,
};
use rustpython_parser::ast::Operator;

/// Arguments bound to parameter names.
pub struct Bound {
    pub fname: String,
    pub vals: Vec<Option<(Val, Span)>>,
    pub span: Span,
}

impl Bound {
    pub fn get(&self, i: usize) -> Option<&(Val, Span)> {
        self.vals
            .get(i)
            .and_then(|v| v.as_ref())
            .filter(|(v, _)| !matches!(v, Val::None))
    }
    pub fn req(&self, i: usize) -> Result<&(Val, Span)> {
        self.vals.get(i).and_then(|v| v.as_ref()).ok_or_else(|| {
            err(
                ErrorKind::Argument,
                format!("{}() is missing an argument", self.fname),
                self.span,
            )
        })
    }
    pub fn span_of(&self, i: usize) -> Span {
        self.get(i).map(|(_, s)| *s).unwrap_or(self.span)
    }
}

/// Binds `args` / `kwargs` to `names`; the first `required` are mandatory.
pub fn bind(
    fname: &str,
    args: Args,
    kwargs: Kwargs,
    names: &[&str],
    required: usize,
    span: Span,
) -> Result<Bound> {
    if args.len() > names.len() {
        return Err(err(
            ErrorKind::Argument,
            format!(
                "{fname}() takes at most {} arguments, but {} were given",
                names.len(),
                args.len()
            ),
            span,
        ));
    }
    let mut vals: Vec<Option<(Val, Span)>> = vec![None; names.len()];
    for (i, a) in args.into_iter().enumerate() {
        vals[i] = Some(a);
    }
    for (k, v, s) in kwargs {
        let Some(i) = names.iter().position(|n| *n == k) else {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() got an unexpected keyword argument `{k}`"),
                s,
            ));
        };
        if vals[i].is_some() {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() got multiple values for argument `{k}`"),
                s,
            ));
        }
        vals[i] = Some((v, s));
    }
    for (i, n) in names.iter().enumerate().take(required) {
        if vals[i].is_none() {
            return Err(err(
                ErrorKind::Argument,
                format!("{fname}() missing required argument `{n}`"),
                span,
            ));
        }
    }
    Ok(Bound {
        fname: fname.to_string(),
        vals,
        span,
    })
}

pub fn const_int(v: &Val, span: Span, what: &str) -> Result<i64> {
    match v {
        Val::Int(i) => Ok(*i),
        Val::Bool(b) => Ok(*b as i64),
        other => Err(err(
            ErrorKind::Static,
            format!(
                "{what} must be a compile-time constant int (tl.constexpr), got {}",
                other.describe(None)
            ),
            span,
        )),
    }
}

pub fn const_ints(v: &Val, span: Span, what: &str) -> Result<Vec<i64>> {
    match v {
        Val::Tuple(items, _) => items.iter().map(|i| const_int(i, span, what)).collect(),
        other => Ok(vec![const_int(other, span, what)?]),
    }
}

pub fn const_dtype(v: &Val, span: Span) -> Result<DType> {
    match v {
        Val::DType(d) => Ok(*d),
        Val::OtherDType(n) => Err(err(
            ErrorKind::Unsupported,
            format!("tl.{n} is not supported by tilewise (it is an AMD or pre-Hopper Triton format); use tl.float8e4nv or tl.float8e5"),
            span,
        )),
        Val::Str(s) => DType::from_name(s)
            .ok_or_else(|| err(ErrorKind::Type, format!("unknown dtype {s:?}"), span)),
        other => Err(err(
            ErrorKind::Type,
            format!(
                "expected a dtype such as tl.float32, got {}",
                other.describe(None)
            ),
            span,
        )),
    }
}

pub fn shape_arg(v: &Val, span: Span) -> Result<Vec<u32>> {
    let dims = const_ints(v, span, "a shape")?;
    let dims = dims
        .iter()
        .map(|&d| {
            u32::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                err(
                    ErrorKind::Shape,
                    format!("shape dimensions must be positive, got {d}"),
                    span,
                )
            })
        })
        .collect::<Result<Vec<u32>>>()?;
    check_shape(&dims, span)?;
    Ok(dims)
}

/// Triton's limit on the elements of one tile (`TRITON_MAX_TENSOR_NUMEL`).
pub const MAX_TILE_ELEMS: u64 = 1 << 20;

/// A tile shape given by the user (`tl.zeros`, `tl.full`, `tl.reshape`,
/// `tl.broadcast_to`, a block pointer's `block_shape`) has power-of-two dimensions and
/// at most [`MAX_TILE_ELEMS`] elements, as in Triton: the lowering's layouts assume
/// the first, and the second keeps a typo from allocating gigabytes in the interpreter.
pub fn check_shape(dims: &[u32], span: Span) -> Result<()> {
    if let Some(d) = dims.iter().find(|d| !d.is_power_of_two()) {
        return Err(err(
            ErrorKind::Shape,
            format!("tile dimensions must be powers of 2, got {d} in shape {dims:?}"),
            span,
        )
        .with_note("pad the dimension to the next power of two (triton.next_power_of_2) and mask the extra lanes"));
    }
    let n = dims.iter().fold(1u64, |n, &d| n.saturating_mul(d as u64));
    if n > MAX_TILE_ELEMS {
        return Err(err(
            ErrorKind::Shape,
            format!("a tile of shape {dims:?} has {n} elements, more than the limit of {MAX_TILE_ELEMS}"),
            span,
        ));
    }
    Ok(())
}

fn axis_norm(axis: i64, rank: usize, span: Span) -> Result<u32> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r.max(1) && !(r == 0 && a == 0) || (r > 0 && a >= r) {
        return Err(err(
            ErrorKind::Shape,
            format!("axis {axis} is out of range for a tile of rank {rank}"),
            span,
        ));
    }
    Ok(a as u32)
}

impl Tracer<'_> {
    pub fn axis(&self, axis: i64, rank: usize, span: Span) -> Result<u32> {
        axis_norm(axis, rank, span)
    }

    pub fn call_builtin(
        &mut self,
        name: &str,
        args: Args,
        kwargs: Kwargs,
        span: Span,
    ) -> Result<Val> {
        let short = name.strip_prefix("tl.").unwrap_or(name);
        if name.starts_with("tl.") {
            if let Some(v) = self.call_reduce(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_random(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_descriptor(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_join(short, &args, &kwargs, span)? {
                return Ok(v);
            }
        }
        let t = |v: &Val| v.clone();
        match name {
            "range" | "tl.range" | "tl.static_range" => Err(err(ErrorKind::Unsupported, format!("{name}(...) can only be used as the iterable of a `for` loop"), span)),
            "print" => Err(err(ErrorKind::Unsupported, "`print` is not supported in a kernel; use tl.static_print (at compile time) or tl.device_print (at run time)", span)),
            "isinstance" => {
                let b = bind(name, args, kwargs, &["obj", "classinfo"], 2, span)?;
                let (v, _) = b.req(0)?.clone();
                let (c, cs) = b.req(1)?.clone();
                let classes = match c {
                    Val::Tuple(items, _) => items,
                    other => vec![other],
                };
                let mut any = false;
                for c in &classes {
                    let is = match c {
                        Val::Builtin(n) => match n.as_str() {
                            "tl.tensor_descriptor" | "tl.tensor_descriptor_base" => matches!(v, Val::Desc(_)),
                            "tl.tensor" => matches!(v, Val::T(_)),
                            "tl.constexpr" => v.is_constexpr() && !matches!(v, Val::Desc(_)),
                            "tl.dtype" => matches!(v, Val::DType(_) | Val::PtrType(_) | Val::OtherDType(_) | Val::BlockType(..)),
                            "int" => matches!(v, Val::Int(_) | Val::Bool(_)),
                            "float" => matches!(v, Val::Float(_)),
                            "bool" => matches!(v, Val::Bool(_)),
                            other => return Err(err(ErrorKind::Unsupported, format!("isinstance(..., {other}) is not supported in a kernel; it knows tl.tensor, tl.tensor_descriptor, tl.constexpr, tl.dtype, int, float and bool"), cs)),
                        },
                        other => return Err(err(ErrorKind::Unsupported, format!("isinstance(..., {}) is not supported in a kernel", self.describe(other)), cs)),
                    };
                    any |= is;
                }
                Ok(Val::Bool(any))
            }
            "getattr" | "enumerate" | "zip" => Err(unsupported(&format!("`{name}`"), span)),
            "triton.jit" => Err(unsupported("`triton.jit` inside a kernel", span)),
            "len" => {
                let b = bind("len", args, kwargs, &["obj"], 1, span)?;
                match &b.req(0)?.0 {
                    Val::Tuple(items, _) => Ok(Val::Int(items.len() as i64)),
                    Val::Str(s) => Ok(Val::Int(s.len() as i64)),
                    Val::T(x) => Ok(Val::Int(self.shape(*x).first().copied().unwrap_or(0) as i64)),
                    other => Err(err(ErrorKind::Type, format!("len() of {}", other.describe(None)), span)),
                }
            }
            "int" | "float" | "bool" => {
                let b = bind(name, args, kwargs, &["x"], 1, span)?;
                let (v, s) = b.req(0)?.clone();
                match (name, &v) {
                    ("float", Val::Str(x)) => match x.trim().to_ascii_lowercase().as_str() {
                        "inf" | "+inf" | "infinity" => Ok(Val::Float(f64::INFINITY)),
                        "-inf" | "-infinity" => Ok(Val::Float(f64::NEG_INFINITY)),
                        "nan" | "+nan" | "-nan" => Ok(Val::Float(f64::NAN)),
                        other => other.parse::<f64>().map(Val::Float).map_err(|_| err(ErrorKind::Type, format!("could not convert {x:?} to float"), s)),
                    },
                    ("float", v) if v.is_number() => Ok(Val::Float(match v { Val::Int(i) => *i as f64, Val::Bool(b) => *b as i64 as f64, Val::Float(f) => *f, _ => 0.0 })),
                    ("int", Val::Float(f)) if f.is_finite() => Ok(Val::Int(f.trunc() as i64)),
                    ("int", Val::Int(i)) => Ok(Val::Int(*i)),
                    ("int", Val::Bool(b)) => Ok(Val::Int(*b as i64)),
                    ("int", Val::Str(x)) => x.trim().parse::<i64>().map(Val::Int).map_err(|_| err(ErrorKind::Type, format!("invalid int literal {x:?}"), s)),
                    ("bool", v) if v.is_constexpr() => Ok(Val::Bool(v.truthy().unwrap_or(false))),
                    (_, Val::T(x)) => {
                        let d = match name { "int" => DType::I32, "float" => DType::F32, _ => DType::I1 };
                        if d == DType::I1 { Ok(Val::T(self.as_i1(*x, s)?)) } else { Ok(Val::T(self.cast_checked(*x, d, s)?)) }
                    }
                    _ => Err(err(ErrorKind::Type, format!("{name}() of {}", v.describe(None)), s)),
                }
            }
            "abs" | "tl.abs" => {
                let b = bind(name, args, kwargs, &["x"], 1, span)?;
                let (v, s) = b.req(0)?.clone();
                match v {
                    Val::Int(i) => Ok(Val::Int(i.checked_abs().unwrap_or(i))),
                    Val::Float(f) => Ok(Val::Float(f.abs())),
                    Val::Bool(b) => Ok(Val::Int(b as i64)),
                    other => {
                        let (x, d) = self.data_tensor(&other, s, "abs")?;
                        if d.is_unsigned_int() || d.is_bool() {
                            return Ok(Val::T(x));
                        }
                        let ty = self.ty(x);
                        Ok(Val::T(self.b.push1(Op::Unary { op: UnaryOp::Abs, value: x }, ty, span)))
                    }
                }
            }
            "min" | "max" => {
                if args.len() == 1 {
                    if let Val::Tuple(items, _) = &args[0].0 {
                        let s = args[0].1;
                        let items: Args = items.iter().map(|i| (i.clone(), s)).collect();
                        return self.call_builtin(name, items, kwargs, span);
                    }
                }
                if args.is_empty() || !kwargs.is_empty() {
                    return Err(err(ErrorKind::Argument, format!("{name}() needs at least one positional argument and no keywords"), span));
                }
                let mut acc = args[0].0.clone();
                for (v, _) in args.iter().skip(1) {
                    acc = if acc.is_number() && v.is_number() {
                        let pick_second = match (acc_f(&acc), acc_f(v)) {
                            (a, b) if name == "min" => b < a,
                            (a, b) => b > a,
                        };
                        if pick_second { v.clone() } else { acc }
                    } else {
                        let op = if name == "min" { BinaryOp::Min } else { BinaryOp::Max };
                        self.elementwise2(op, acc, v.clone(), span)?
                    };
                }
                Ok(acc)
            }
            "triton.cdiv" | "tl.cdiv" => {
                let b = bind("cdiv", args, kwargs, &["x", "div"], 2, span)?;
                let (x, y) = (t(&b.req(0)?.0), t(&b.req(1)?.0));
                if x.is_number() && y.is_number() {
                    let (Val::Int(a), Val::Int(d)) = (&x, &y) else {
                        return Err(err(ErrorKind::Type, "cdiv needs integers", span));
                    };
                    if *d == 0 {
                        return Err(err(ErrorKind::Static, "cdiv by zero", span));
                    }
                    let q = a.div_euclid(*d);
                    return Ok(Val::Int(if a.rem_euclid(*d) != 0 && *d > 0 { q + 1 } else { -((-a).div_euclid(*d)) }));
                }
                let s1 = self.binop(Operator::Add, x, y.clone(), span)?;
                let s2 = self.binop(Operator::Sub, s1, Val::Int(1), span)?;
                self.binop(Operator::FloorDiv, s2, y, span)
            }
            "triton.next_power_of_2" | "tl.next_power_of_2" => {
                let b = bind("next_power_of_2", args, kwargs, &["n"], 1, span)?;
                let n = const_int(&b.req(0)?.0, b.span_of(0), "next_power_of_2's argument")?;
                if n <= 1 {
                    return Ok(Val::Int(1));
                }
                let p = (n as u64).checked_next_power_of_two().filter(|p| *p <= i64::MAX as u64);
                p.map(|p| Val::Int(p as i64)).ok_or_else(|| err(ErrorKind::Static, "next_power_of_2 overflow", span))
            }
            "tl.constexpr" => {
                let b = bind("constexpr", args, kwargs, &["value"], 1, span)?;
                let v = b.req(0)?.0.clone();
                if !v.is_constexpr() {
                    return Err(err(ErrorKind::Static, "tl.constexpr(...) of a runtime value", span));
                }
                Ok(v)
            }
            _ => self.call_tl(short, name, args, kwargs, span),
        }
    }

    fn call_tl(
        &mut self,
        f: &str,
        full: &str,
        args: Args,
        kwargs: Kwargs,
        span: Span,
    ) -> Result<Val> {
        if !full.starts_with("tl.") {
            return Err(err(
                ErrorKind::Name,
                format!("unknown function `{full}`"),
                span,
            ));
        }
        match f {
            "program_id" | "num_programs" => {
                let b = bind(f, args, kwargs, &["axis"], 1, span)?;
                let a = const_int(&b.req(0)?.0, b.span_of(0), "the axis")?;
                if !(0..3).contains(&a) {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("{f} axis must be 0, 1 or 2, got {a}"),
                        b.span_of(0),
                    ));
                }
                let op = if f == "program_id" {
                    Op::ProgramId { axis: a as u8 }
                } else {
                    Op::NumPrograms { axis: a as u8 }
                };
                Ok(Val::T(self.b.push1(op, Type::scalar(DType::I32), span)))
            }
            "arange" => {
                let b = bind(f, args, kwargs, &["start", "end"], 2, span)?;
                let start = const_int(&b.req(0)?.0, b.span_of(0), "arange's start")?;
                let end = const_int(&b.req(1)?.0, b.span_of(1), "arange's end")?;
                if end <= start {
                    return Err(err(ErrorKind::Shape, format!("tl.arange's end must be greater than its start, got arange({start}, {end})"), span));
                }
                // Checked: `arange(-2**63, 2**62)` must not overflow.
                let n = end.checked_sub(start).unwrap_or(i64::MAX);
                if n & (n - 1) != 0 || n > (1 << 20) {
                    return Err(err(ErrorKind::Shape, format!("tl.arange's range must be a power of 2, got arange({start}, {end}) with {n} elements"), span)
                        .with_note("pad the range to the next power of two (triton.next_power_of_2) and mask the extra lanes"));
                }
                if i32::try_from(start).is_err() || i32::try_from(end).is_err() {
                    return Err(err(
                        ErrorKind::Shape,
                        "tl.arange bounds must fit in int32",
                        span,
                    ));
                }
                Ok(Val::T(self.b.push1(
                    Op::Arange { start, end },
                    Type::tile(DType::I32, vec![n as u32]),
                    span,
                )))
            }
            "zeros" | "full" => {
                let names: &[&str] = if f == "zeros" {
                    &["shape", "dtype"]
                } else {
                    &["shape", "value", "dtype"]
                };
                let b = bind(f, args, kwargs, names, names.len(), span)?;
                let shape = shape_arg(&b.req(0)?.0, b.span_of(0))?;
                let di = names.len() - 1;
                let dt = const_dtype(&b.req(di)?.0, b.span_of(di))?;
                let value = if f == "zeros" {
                    Val::Int(0)
                } else {
                    b.req(1)?.0.clone()
                };
                self.full(&shape, &value, dt, span)
            }
            "zeros_like" | "full_like" => {
                let names: &[&str] = if f == "zeros_like" {
                    &["input", "dtype"]
                } else {
                    &["input", "value", "dtype"]
                };
                let b = bind(
                    f,
                    args,
                    kwargs,
                    names,
                    if f == "zeros_like" { 1 } else { 2 },
                    span,
                )?;
                let (x, d) = self.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                let di = names.len() - 1;
                let dt = match b.get(di) {
                    Some((v, s)) => const_dtype(v, *s)?,
                    None => d,
                };
                let value = if f == "zeros_like" {
                    Val::Int(0)
                } else {
                    b.req(1)?.0.clone()
                };
                let shape = self.shape(x);
                self.full(&shape, &value, dt, span)
            }
            "cast" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "dtype", "fp_downcast_rounding", "bitcast"],
                    2,
                    span,
                )?;
                let v = b.req(0)?.0.clone();
                if let Some((r, rs)) = b.get(2) {
                    match r {
                        Val::None => {}
                        Val::Str(m) if m == "rtne" => {}
                        Val::Str(m) if m == "rtz" => {
                            return Err(err(
                                ErrorKind::Unsupported,
                                "fp_downcast_rounding=\"rtz\" is not supported yet: tilewise rounds float downcasts to nearest, ties to even",
                                *rs,
                            ))
                        }
                        other => {
                            return Err(err(
                                ErrorKind::Argument,
                                format!("fp_downcast_rounding must be \"rtne\" or \"rtz\", got {}", self.describe(other)),
                                *rs,
                            ))
                        }
                    }
                }
                if let Val::PtrType(target) = &b.req(1)?.0 {
                    // A pointer cast: the identity when the element type is the same;
                    // pointers as data (int64 <-> pointer, reinterpretation) are not there yet.
                    if let Val::T(x) = &v {
                        if let Some(Elem::Ptr(d)) = self.ty(*x).elem() {
                            if d == *target {
                                return Ok(v);
                            }
                        }
                    }
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!(
                            "casting {} to pointer<{}> is not supported yet (pointers as data)",
                            self.describe(&v),
                            target.triton_name()
                        ),
                        span,
                    ));
                }
                let dt = const_dtype(&b.req(1)?.0, b.span_of(1))?;
                let bitcast = b
                    .get(3)
                    .map(|(v, _)| v.truthy().unwrap_or(false))
                    .unwrap_or(false);
                let x = if v.is_number() && !bitcast {
                    self.materialize(&v, dt, span)?
                } else {
                    self.tensor_of(&v, span)?
                };
                if bitcast {
                    return Ok(Val::T(self.bitcast(x, dt, span)?));
                }
                Ok(Val::T(self.cast_checked(x, dt, span)?))
            }
            "expand_dims" => {
                let b = bind(f, args, kwargs, &["input", "axis"], 2, span)?;
                let mut x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let mut axes = const_ints(&b.req(1)?.0, b.span_of(1), "the axis")?;
                let new_rank = self.shape(x).len() + axes.len();
                for a in axes.iter_mut() {
                    *a = axis_norm(*a, new_rank, b.span_of(1))? as i64;
                }
                axes.sort();
                for a in axes {
                    let mut s = self.shape(x);
                    s.insert(a as usize, 1);
                    let ty = self.ty(x).with_shape(s);
                    x = self.b.push1(
                        Op::ExpandDims {
                            value: x,
                            axis: a as u32,
                        },
                        ty,
                        span,
                    );
                }
                Ok(Val::T(x))
            }
            "broadcast_to" => {
                let (x, shape) =
                    self.value_and_shape(f, args, kwargs, &["input", "shape"], span)?;
                Ok(Val::T(self.broadcast_to(x, &shape, span)?))
            }
            "broadcast" => {
                let b = bind(f, args, kwargs, &["input", "other"], 2, span)?;
                let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let y = self.tensor_of(&b.req(1)?.0.clone(), b.span_of(1))?;
                let (x, y) = self.broadcast_pair(x, y, span)?;
                Ok(Val::Tuple(vec![Val::T(x), Val::T(y)], false))
            }
            "reshape" | "view" => {
                let (x, shape) = self.value_and_shape(
                    f,
                    args,
                    kwargs,
                    &["input", "shape", "can_reorder"],
                    span,
                )?;
                let ty = self.ty(x);
                let n: u64 = shape.iter().map(|&d| d as u64).product();
                if n != ty.numel() as u64 {
                    return Err(err(
                        ErrorKind::Shape,
                        format!(
                            "cannot reshape a tile of shape {} ({} elements) to {} ({n} elements)",
                            shape_text(ty.shape()),
                            ty.numel(),
                            shape_text(&shape)
                        ),
                        span,
                    ));
                }
                if ty.shape() == shape.as_slice() {
                    return Ok(Val::T(x));
                }
                Ok(Val::T(self.b.push1(
                    Op::Reshape(x),
                    ty.with_shape(shape),
                    span,
                )))
            }
            "trans" | "permute" => {
                let Some((first, fs)) = args.first().cloned() else {
                    let b = bind(f, args, kwargs, &["input", "dims"], 1, span)?;
                    let (v, s) = b.req(0)?.clone();
                    let dims = match b.get(1) {
                        Some((d, ds)) => Some(const_ints(d, *ds, "dims")?),
                        None => None,
                    };
                    return self.permute(&v, s, dims, f, span);
                };
                let mut dims: Vec<i64> = vec![];
                for (v, s) in args.iter().skip(1) {
                    dims.extend(const_ints(v, *s, "dims")?);
                }
                for (k, v, s) in &kwargs {
                    if k == "dims" {
                        dims.extend(const_ints(v, *s, "dims")?);
                    } else {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("{f}() got an unexpected keyword argument `{k}`"),
                            *s,
                        ));
                    }
                }
                self.permute(
                    &first,
                    fs,
                    if dims.is_empty() { None } else { Some(dims) },
                    f,
                    span,
                )
            }
            "where" => {
                let b = bind(f, args, kwargs, &["condition", "x", "y"], 3, span)?;
                let (c, x, y) = (
                    b.req(0)?.0.clone(),
                    b.req(1)?.0.clone(),
                    b.req(2)?.0.clone(),
                );
                self.where_(c, x, y, span)
            }
            "minimum" | "maximum" => {
                let b = bind(f, args, kwargs, &["x", "y", "propagate_nan"], 2, span)?;
                let op = if f == "minimum" {
                    BinaryOp::Min
                } else {
                    BinaryOp::Max
                };
                self.elementwise2(op, b.req(0)?.0.clone(), b.req(1)?.0.clone(), span)
            }
            "clamp" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["x", "min", "max", "propagate_nan"],
                    3,
                    span,
                )?;
                let lo = self.elementwise2(
                    BinaryOp::Max,
                    b.req(0)?.0.clone(),
                    b.req(1)?.0.clone(),
                    span,
                )?;
                self.elementwise2(BinaryOp::Min, lo, b.req(2)?.0.clone(), span)
            }
            "exp" | "exp2" | "log" | "log2" | "sqrt" | "sqrt_rn" | "rsqrt" | "sin" | "cos"
            | "floor" | "ceil" | "erf" | "tanh" => {
                let b = bind(f, args, kwargs, &["x"], 1, span)?;
                let op = match f {
                    "exp" => UnaryOp::Exp,
                    "exp2" => UnaryOp::Exp2,
                    "log" => UnaryOp::Log,
                    "log2" => UnaryOp::Log2,
                    "sqrt" | "sqrt_rn" => UnaryOp::Sqrt,
                    "rsqrt" => UnaryOp::Rsqrt,
                    "sin" => UnaryOp::Sin,
                    "cos" => UnaryOp::Cos,
                    "floor" => UnaryOp::Floor,
                    "ceil" => UnaryOp::Ceil,
                    "erf" => UnaryOp::Erf,
                    _ => UnaryOp::Tanh,
                };
                let (v, s) = b.req(0)?.clone();
                self.math1(op, &v, s, span)
            }
            "sigmoid" => {
                let b = bind(f, args, kwargs, &["x"], 1, span)?;
                let (v, s) = b.req(0)?.clone();
                let neg = self.unop(rustpython_parser::ast::UnaryOp::USub, v, s)?;
                let e = self.math1(UnaryOp::Exp, &neg, s, span)?;
                let d = self.binop(Operator::Add, Val::Int(1), e, span)?;
                self.binop(Operator::Div, Val::Int(1), d, span)
            }
            "fdiv" | "div_rn" => {
                let b = bind(f, args, kwargs, &["x", "y", "ieee_rounding"], 2, span)?;
                self.binop(
                    Operator::Div,
                    b.req(0)?.0.clone(),
                    b.req(1)?.0.clone(),
                    span,
                )
            }
            "pow" => {
                let b = bind(f, args, kwargs, &["x", "y"], 2, span)?;
                self.binop(
                    Operator::Pow,
                    b.req(0)?.0.clone(),
                    b.req(1)?.0.clone(),
                    span,
                )
            }
            "fma" => {
                let b = bind(f, args, kwargs, &["x", "y", "z"], 3, span)?;
                let vals = [
                    b.req(0)?.0.clone(),
                    b.req(1)?.0.clone(),
                    b.req(2)?.0.clone(),
                ];
                let mut dt: Option<(DType, bool)> = None;
                for v in &vals {
                    let Elem::Data(d) = self.elem_of(v, span)? else {
                        return Err(err(ErrorKind::Type, "tl.fma needs numbers", span));
                    };
                    dt = Some(match dt {
                        None => (d, v.is_number()),
                        Some((p, pl)) => {
                            let r =
                                super::semantic::computation_type(p, pl, d, v.is_number(), false)
                                    .map_err(|m| err(ErrorKind::Type, m, span))?;
                            (r, pl && v.is_number())
                        }
                    });
                }
                let dt = dt.map(|d| d.0).unwrap_or(DType::F32);
                let mut xs = vec![];
                for v in &vals {
                    xs.push(self.materialize(v, dt, span)?);
                }
                let mut shape: Vec<u32> = vec![];
                for x in &xs {
                    let s = self.shape(*x);
                    shape = self.broadcast_shapes(&shape, &s, span)?;
                }
                for x in xs.iter_mut() {
                    *x = self.broadcast_to(*x, &shape, span)?;
                }
                let ty = self.ty(xs[0]);
                Ok(Val::T(self.b.push1(
                    Op::Fma {
                        a: xs[0],
                        b: xs[1],
                        c: xs[2],
                    },
                    ty,
                    span,
                )))
            }
            "load" => self.load(args, kwargs, span),
            "store" => self.store(args, kwargs, span),
            "make_block_ptr" => self.make_block_ptr(args, kwargs, span),
            "advance" => {
                let b = bind(f, args, kwargs, &["base", "offsets"], 2, span)?;
                let p = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let ty = self.ty(p);
                if !ty.is_block_ptr() {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "tl.advance needs a block pointer (from tl.make_block_ptr), got {ty}"
                        ),
                        b.span_of(0),
                    ));
                }
                let deltas =
                    self.scalar_list(&b.req(1)?.0.clone(), b.span_of(1), DType::I32, "offsets")?;
                if deltas.len() != ty.rank() {
                    return Err(err(
                        ErrorKind::Shape,
                        format!(
                            "tl.advance got {} offsets for a block pointer of rank {}",
                            deltas.len(),
                            ty.rank()
                        ),
                        b.span_of(1),
                    ));
                }
                Ok(Val::T(self.b.push1(
                    Op::Advance { ptr: p, deltas },
                    ty,
                    span,
                )))
            }
            "atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or"
            | "atomic_xor" | "atomic_xchg" => {
                let op = match f {
                    "atomic_add" => AtomicOp::Add,
                    "atomic_max" => AtomicOp::Max,
                    "atomic_min" => AtomicOp::Min,
                    "atomic_and" => AtomicOp::And,
                    "atomic_or" => AtomicOp::Or,
                    "atomic_xor" => AtomicOp::Xor,
                    _ => AtomicOp::Xchg,
                };
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["pointer", "val", "mask", "sem", "scope"],
                    2,
                    span,
                )?;
                let (p, pointee) = self.pointer_tile(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                if pointee.is_fp8() {
                    return Err(err(
                        ErrorKind::Type,
                        format!("tl.{f} on {} memory is not supported (atomics need 16 bits or more, as in Triton)", pointee.triton_name()),
                        span,
                    ));
                }
                let v = self.materialize(&b.req(1)?.0.clone(), pointee, b.span_of(1))?;
                let mut shape = self.shape(p);
                let vshape = self.shape(v);
                shape = self.broadcast_shapes(&shape, &vshape, span)?;
                let mask = match b.get(2) {
                    Some((m, ms)) => {
                        let m = self.tensor_of(m, *ms)?;
                        let m = self.as_i1(m, *ms)?;
                        let mshape = self.shape(m);
                        shape = self.broadcast_shapes(&shape, &mshape, *ms)?;
                        Some(m)
                    }
                    None => None,
                };
                let p = self.broadcast_to(p, &shape, span)?;
                let v = self.broadcast_to(v, &shape, span)?;
                let mask = match mask {
                    Some(m) => Some(self.broadcast_to(m, &shape, span)?),
                    None => None,
                };
                let ty = self.ty(p).with_dtype(pointee);
                Ok(Val::T(self.b.push1(
                    Op::Atomic {
                        op,
                        ptr: p,
                        value: v,
                        mask,
                    },
                    ty,
                    span,
                )))
            }
            "atomic_cas" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["pointer", "cmp", "val", "sem", "scope"],
                    3,
                    span,
                )?;
                let (p, pointee) = self.pointer_tile(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                if pointee.is_fp8() {
                    return Err(err(
                        ErrorKind::Type,
                        format!("tl.atomic_cas on {} memory is not supported (atomics need 16 bits or more, as in Triton)", pointee.triton_name()),
                        span,
                    ));
                }
                let c = self.materialize(&b.req(1)?.0.clone(), pointee, b.span_of(1))?;
                let v = self.materialize(&b.req(2)?.0.clone(), pointee, b.span_of(2))?;
                let mut shape = self.shape(p);
                for x in [c, v] {
                    let s = self.shape(x);
                    shape = self.broadcast_shapes(&shape, &s, span)?;
                }
                let p = self.broadcast_to(p, &shape, span)?;
                let c = self.broadcast_to(c, &shape, span)?;
                let v = self.broadcast_to(v, &shape, span)?;
                let ty = self.ty(p).with_dtype(pointee);
                Ok(Val::T(self.b.push1(
                    Op::AtomicCas {
                        ptr: p,
                        cmp: c,
                        value: v,
                    },
                    ty,
                    span,
                )))
            }
            "multiple_of" | "max_contiguous" | "max_constancy" => {
                let b = bind(f, args, kwargs, &["input", "values"], 2, span)?;
                let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let vals = const_ints(&b.req(1)?.0, b.span_of(1), "the hint value")?;
                let vals: Vec<u32> = vals
                    .iter()
                    .map(|&v| {
                        u32::try_from(v).ok().filter(|v| *v > 0).ok_or_else(|| {
                            err(
                                ErrorKind::Argument,
                                format!("hint values must be positive, got {v}"),
                                b.span_of(1),
                            )
                        })
                    })
                    .collect::<Result<_>>()?;
                let ty = self.ty(x);
                // Integer tiles, or pointer tiles (Triton's `multiple_of` on pointers
                // counts bytes).
                let pointers = matches!(ty.elem(), Some(Elem::Ptr(_))) && !ty.is_block_ptr();
                if !pointers && ty.dtype().is_none_or(|d| !d.is_int()) {
                    return Err(err(
                        ErrorKind::Type,
                        format!("tl.{f} needs an integer or pointer tile, got {ty}"),
                        b.span_of(0),
                    ));
                }
                let hint = match f {
                    "multiple_of" => HintKind::MultipleOf(vals),
                    "max_contiguous" => HintKind::MaxContiguous(vals),
                    _ => HintKind::MaxConstancy(vals),
                };
                Ok(Val::T(self.b.push1(Op::Hint { value: x, hint }, ty, span)))
            }
            "pointer_type" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["element_ty", "address_space", "const"],
                    1,
                    span,
                )?;
                let (e, es) = b.req(0)?;
                match e {
                    Val::DType(d) => Ok(Val::PtrType(*d)),
                    Val::PtrType(_) => Err(err(
                        ErrorKind::Unsupported,
                        "a pointer to pointers (`tl.pointer_type` of a pointer type) is not supported yet",
                        *es,
                    )),
                    other => Err(err(
                        ErrorKind::Type,
                        format!("tl.pointer_type needs a dtype such as tl.float32, got {}", self.describe(other)),
                        *es,
                    )),
                }
            }
            "static_assert" => {
                let b = bind(f, args, kwargs, &["cond", "msg"], 1, span)?;
                let (c, cs) = b.req(0)?.clone();
                let msg = match b.get(1) {
                    Some((Val::Str(s), _)) => s.clone(),
                    Some((v, _)) => format_val(v, &|x| self.fmt_type(x)),
                    None => String::new(),
                };
                match c.truthy() {
                    Some(true) => Ok(Val::None),
                    Some(false) => Err(err(ErrorKind::Static, if msg.is_empty() { "static_assert failed".to_string() } else { format!("static_assert failed: {msg}") }, span)),
                    None => Err(err(ErrorKind::Static, "tl.static_assert needs a compile-time condition; use tl.device_assert for runtime checks", cs)),
                }
            }
            "static_print" => {
                if let Some((k, _, s)) = kwargs.iter().find(|(k, _, _)| k != "sep" && k != "end") {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("static_print() got an unexpected keyword argument `{k}`"),
                        *s,
                    ));
                }
                let parts: Vec<String> = args
                    .iter()
                    .map(|(v, _)| format_val(v, &|x| self.fmt_type(x)))
                    .collect();
                let line = parts.join(" ");
                if self.dry == 0 {
                    println!("{line}");
                    self.prints.push(line);
                }
                Ok(Val::None)
            }
            "device_print" => {
                let mut hex = false;
                for (k, v, s) in &kwargs {
                    match k.as_str() {
                        "hex" => hex = v.truthy().unwrap_or(false),
                        _ => {
                            return Err(err(
                                ErrorKind::Argument,
                                format!("device_print() got an unexpected keyword argument `{k}`"),
                                *s,
                            ))
                        }
                    }
                }
                let mut it = args.into_iter();
                let prefix = match it.next() {
                    Some((Val::Str(s), _)) => s,
                    Some((_, s)) => {
                        return Err(err(
                            ErrorKind::Type,
                            "device_print's first argument must be a string prefix",
                            s,
                        ))
                    }
                    None => {
                        return Err(err(
                            ErrorKind::Argument,
                            "device_print() missing the prefix",
                            span,
                        ))
                    }
                };
                let mut values = vec![];
                for (v, s) in it {
                    values.push(self.tensor_of(&v, s)?);
                }
                self.b.push0(
                    Op::DevicePrint {
                        prefix,
                        values,
                        hex,
                    },
                    span,
                );
                Ok(Val::None)
            }
            "device_assert" => {
                let b = bind(f, args, kwargs, &["cond", "msg", "mask"], 1, span)?;
                let (c, cs) = b.req(0)?.clone();
                let msg = match b.get(1) {
                    Some((Val::Str(s), _)) => s.clone(),
                    _ => String::new(),
                };
                if let Some(t) = c.truthy() {
                    if !t {
                        return Err(err(
                            ErrorKind::Static,
                            format!("device_assert on a condition that is always false: {msg}"),
                            cs,
                        ));
                    }
                    return Ok(Val::None);
                }
                let x = self.tensor_of(&c, cs)?;
                let cond = self.as_i1(x, cs)?;
                self.b.push0(Op::DeviceAssert { cond, message: msg }, span);
                Ok(Val::None)
            }
            "debug_barrier" => {
                bind(f, args, kwargs, &[], 0, span)?;
                self.b.push0(Op::Barrier, span);
                Ok(Val::None)
            }
            // `tl.assume(cond)`: a promise for the optimizer. tilewise derives nothing
            // from it (so it cannot change a result); a constant false one is an error.
            "assume" => {
                let b = bind(f, args, kwargs, &["cond"], 1, span)?;
                let (c, cs) = b.req(0)?.clone();
                match c.truthy() {
                    Some(false) => Err(err(
                        ErrorKind::Static,
                        "tl.assume of a condition that is false",
                        cs,
                    )),
                    _ => {
                        if let Val::T(x) = &c {
                            self.as_i1(*x, cs)?;
                        }
                        Ok(Val::None)
                    }
                }
            }
            _ => Err(err(
                ErrorKind::Name,
                format!("unknown function `tl.{f}`"),
                span,
            )),
        }
    }

    fn value_and_shape(
        &mut self,
        f: &str,
        args: Args,
        kwargs: Kwargs,
        names: &[&str],
        span: Span,
    ) -> Result<(Value, Vec<u32>)> {
        // Shape as a tuple or as varargs: reshape(x, (2, 8)) or reshape(x, 2, 8).
        if args.len() > 2 || (args.len() == 2 && matches!(args[1].0, Val::Int(_))) {
            let (v, s) = args[0].clone();
            let x = self.tensor_of(&v, s)?;
            let mut dims = vec![];
            for (d, ds) in args.iter().skip(1) {
                dims.extend(shape_arg(d, *ds)?);
            }
            check_shape(&dims, span)?;
            return Ok((x, dims));
        }
        let b = bind(f, args, kwargs, names, 2, span)?;
        let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
        let shape = shape_arg(&b.req(1)?.0, b.span_of(1))?;
        Ok((x, shape))
    }

    fn permute(
        &mut self,
        v: &Val,
        s: Span,
        dims: Option<Vec<i64>>,
        f: &str,
        span: Span,
    ) -> Result<Val> {
        let x = self.tensor_of(v, s)?;
        let shape = self.shape(x);
        let rank = shape.len();
        let perm: Vec<u32> = match dims {
            None if rank == 2 => vec![1, 0],
            None if rank < 2 => return Ok(Val::T(x)),
            None => {
                return Err(err(
                    ErrorKind::Argument,
                    format!("tl.{f} of a rank-{rank} tile needs the dimension order"),
                    span,
                ))
            }
            Some(d) => d
                .iter()
                .map(|&a| axis_norm(a, rank, span))
                .collect::<Result<_>>()?,
        };
        let mut sorted = perm.clone();
        sorted.sort();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            return Err(err(
                ErrorKind::Argument,
                format!("tl.{f} dims {perm:?} are not a permutation of 0..{rank}"),
                span,
            ));
        }
        let new_shape: Vec<u32> = perm.iter().map(|&p| shape[p as usize]).collect();
        let ty = self.ty(x).with_shape(new_shape);
        Ok(Val::T(self.b.push1(
            Op::Permute { value: x, perm },
            ty,
            span,
        )))
    }

    fn full(&mut self, shape: &[u32], value: &Val, dt: DType, span: Span) -> Result<Val> {
        if value.is_number() {
            let c = self.lit_const(value, dt, span)?;
            return Ok(Val::T(self.konst(c, Type::tile(dt, shape.to_vec()), span)));
        }
        let x = self.materialize(value, dt, span)?;
        if !self.ty(x).is_scalar() {
            return Err(err(
                ErrorKind::Shape,
                "tl.full's value must be a scalar",
                span,
            ));
        }
        Ok(Val::T(self.broadcast_to(x, shape, span)?))
    }

    /// `tl.where(cond, x, y)`.
    pub fn where_(&mut self, c: Val, x: Val, y: Val, span: Span) -> Result<Val> {
        let cv = self.tensor_of(&c, span)?;
        let cv = self.as_i1(cv, span)?;
        let (a, b, _) = self.promote_pair(&x, &y, false, span, "where")?;
        let s = self.shape(a);
        let cs = self.shape(cv);
        let shape = self.broadcast_shapes(&cs, &s, span)?;
        let cv = self.broadcast_to(cv, &shape, span)?;
        let a = self.broadcast_to(a, &shape, span)?;
        let b = self.broadcast_to(b, &shape, span)?;
        let ty = self.ty(a);
        Ok(Val::T(self.b.push1(
            Op::Select {
                cond: cv,
                on_true: a,
                on_false: b,
            },
            ty,
            span,
        )))
    }

    /// Promoted elementwise binary op (`minimum`, `maximum`).
    pub fn elementwise2(&mut self, op: BinaryOp, a: Val, b: Val, span: Span) -> Result<Val> {
        let (x, y, _) = self.promote_pair(&a, &b, false, span, op.name())?;
        let ty = self.ty(x);
        Ok(Val::T(self.b.push1(
            Op::Binary { op, lhs: x, rhs: y },
            ty,
            span,
        )))
    }

    /// A float-only math function: ints go through f32; f16 / bf16 compute in f32
    /// and are cast back (as Triton's libdevice path).
    pub fn math1(&mut self, op: UnaryOp, v: &Val, s: Span, span: Span) -> Result<Val> {
        let (x, d) = self.data_tensor(v, s, &format!("tl.{}", op.name()))?;
        let (x, back) = match d {
            DType::F32 | DType::F64 => (x, None),
            DType::F16 | DType::BF16 => (self.cast(x, DType::F32, span), Some(d)),
            _ => (self.cast(x, DType::F32, span), None),
        };
        let ty = self.ty(x);
        let r = self.b.push1(Op::Unary { op, value: x }, ty, span);
        Ok(Val::T(match back {
            Some(d) => self.cast(r, d, span),
            None => r,
        }))
    }

    /// A pointer tile operand of a memory op, and its pointee.
    fn pointer_tile(&mut self, v: &Val, s: Span, f: &str) -> Result<(Value, DType)> {
        let x = self.tensor_of(v, s)?;
        match self.ty(x).elem() {
            Some(Elem::Ptr(d)) => Ok((x, d)),
            _ => Err(err(
                ErrorKind::Type,
                format!("tl.{f} needs a pointer, got {}", self.describe(v)),
                s,
            )),
        }
    }

    fn hints(&self, b: &Bound, cache: usize, evict: usize, volatile: Option<usize>) -> CacheHints {
        let s = |i: usize| match b.get(i) {
            Some((Val::Str(x), _)) if !x.is_empty() => Some(x.clone()),
            _ => None,
        };
        CacheHints {
            cache_modifier: s(cache),
            eviction_policy: s(evict),
            volatile: volatile
                .and_then(|i| b.get(i))
                .is_some_and(|(v, _)| v.truthy().unwrap_or(false)),
        }
    }

    fn boundary_check(&self, b: &Bound, i: usize, rank: usize) -> Result<Vec<u32>> {
        match b.get(i) {
            None => Ok(vec![]),
            Some((v, s)) => {
                let mut dims: Vec<u32> = const_ints(v, *s, "boundary_check")?
                    .iter()
                    .map(|&d| axis_norm(d, rank, *s))
                    .collect::<Result<_>>()?;
                dims.sort();
                dims.dedup();
                Ok(dims)
            }
        }
    }

    pub fn load(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.load",
            args,
            kwargs,
            &[
                "pointer",
                "mask",
                "other",
                "boundary_check",
                "padding_option",
                "cache_modifier",
                "eviction_policy",
                "volatile",
            ],
            1,
            span,
        )?;
        let (pv, ps) = b.req(0)?.clone();
        let p = self.tensor_of(&pv, ps)?;
        let pty = self.ty(p);
        let hints = self.hints(&b, 5, 6, Some(7));
        let padding = match b.get(4) {
            None => Padding::None,
            Some((Val::Str(s), _)) if s.is_empty() => Padding::None,
            Some((Val::Str(s), _)) if s == "zero" => Padding::Zero,
            Some((Val::Str(s), _)) if s == "nan" => Padding::Nan,
            Some((v, s)) => {
                return Err(err(
                    ErrorKind::Argument,
                    format!(
                        "padding_option must be \"zero\" or \"nan\", got {}",
                        format_val(v, &|_| String::new())
                    ),
                    *s,
                )
                .with_note(
                    "to pad with another value, load with a mask and `other=`, or use tl.where",
                ));
            }
        };
        if let Type::BlockPtr {
            pointee,
            block_shape,
        } = &pty
        {
            if b.get(1).is_some() || b.get(2).is_some() {
                return Err(err(ErrorKind::Argument, "`mask` and `other` cannot be used with a block pointer; use boundary_check and padding_option", span));
            }
            let bc = self.boundary_check(&b, 3, block_shape.len())?;
            let ty = Type::tile(*pointee, block_shape.clone());
            return Ok(Val::T(self.b.push1(
                Op::Load {
                    ptr: p,
                    mask: None,
                    other: None,
                    boundary_check: bc,
                    padding,
                    hints,
                    stage: None,
                },
                ty,
                span,
            )));
        }
        let Some(Elem::Ptr(pointee)) = pty.elem() else {
            return Err(err(
                ErrorKind::Type,
                format!("tl.load needs a pointer, got {}", self.describe(&pv)),
                ps,
            ));
        };
        if b.get(3).is_some() {
            return Err(err(ErrorKind::Argument, "boundary_check only applies to block pointers (tl.make_block_ptr); use `mask=` with a pointer tile", b.span_of(3)));
        }
        let mut p = p;
        let mask = match b.get(1) {
            Some((m, ms)) => {
                let m = self.tensor_of(m, *ms)?;
                let m = self.as_i1(m, *ms)?;
                let (pp, mm) = self.broadcast_pair(p, m, span)?;
                p = pp;
                Some(mm)
            }
            None => None,
        };
        let other = match b.get(2) {
            Some((o, os)) => {
                if mask.is_none() {
                    return Err(err(
                        ErrorKind::Argument,
                        "`other` cannot be given without `mask`",
                        *os,
                    ));
                }
                let o = self.materialize(o, pointee, *os)?;
                let shape = self.shape(p);
                Some(self.broadcast_to(o, &shape, *os)?)
            }
            None => None,
        };
        let ty = self.ty(p).with_dtype(pointee);
        Ok(Val::T(self.b.push1(
            Op::Load {
                ptr: p,
                mask,
                other,
                boundary_check: vec![],
                padding: Padding::None,
                hints,
                stage: None,
            },
            ty,
            span,
        )))
    }

    pub fn store(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.store",
            args,
            kwargs,
            &[
                "pointer",
                "value",
                "mask",
                "boundary_check",
                "cache_modifier",
                "eviction_policy",
            ],
            2,
            span,
        )?;
        let (pv, ps) = b.req(0)?.clone();
        let (vv, vs) = b.req(1)?.clone();
        let p = self.tensor_of(&pv, ps)?;
        let pty = self.ty(p);
        let hints = self.hints(&b, 4, 5, None);
        if let Type::BlockPtr {
            pointee,
            block_shape,
        } = &pty
        {
            if b.get(2).is_some() {
                return Err(err(
                    ErrorKind::Argument,
                    "`mask` cannot be used with a block pointer; use boundary_check",
                    b.span_of(2),
                ));
            }
            let bc = self.boundary_check(&b, 3, block_shape.len())?;
            let v = self.materialize(&vv, *pointee, vs)?;
            let v = self.broadcast_to(v, block_shape, vs)?;
            self.b.push0(
                Op::Store {
                    ptr: p,
                    value: v,
                    mask: None,
                    boundary_check: bc,
                    hints,
                },
                span,
            );
            return Ok(Val::None);
        }
        let Some(Elem::Ptr(pointee)) = pty.elem() else {
            return Err(err(
                ErrorKind::Type,
                format!("tl.store needs a pointer, got {}", self.describe(&pv)),
                ps,
            ));
        };
        if b.get(3).is_some() {
            return Err(err(ErrorKind::Argument, "boundary_check only applies to block pointers (tl.make_block_ptr); use `mask=` with a pointer tile", b.span_of(3)));
        }
        let v = self.materialize(&vv, pointee, vs)?;
        let mut shape = self.shape(p);
        let vshape = self.shape(v);
        shape = self.broadcast_shapes(&shape, &vshape, span)?;
        let mask = match b.get(2) {
            Some((m, ms)) => {
                let m = self.tensor_of(m, *ms)?;
                let m = self.as_i1(m, *ms)?;
                let mshape = self.shape(m);
                shape = self.broadcast_shapes(&shape, &mshape, span)?;
                Some(m)
            }
            None => None,
        };
        let p = self.broadcast_to(p, &shape, span)?;
        let v = self.broadcast_to(v, &shape, vs)?;
        let mask = match mask {
            Some(m) => Some(self.broadcast_to(m, &shape, span)?),
            None => None,
        };
        self.b.push0(
            Op::Store {
                ptr: p,
                value: v,
                mask,
                boundary_check: vec![],
                hints,
            },
            span,
        );
        Ok(Val::None)
    }

    /// A tuple of scalars, each converted to `dt`.
    fn scalar_list(&mut self, v: &Val, s: Span, dt: DType, what: &str) -> Result<Vec<Value>> {
        let items = match v {
            Val::Tuple(items, _) => items.clone(),
            other => vec![other.clone()],
        };
        let mut out = vec![];
        for i in &items {
            let x = self.materialize(i, dt, s)?;
            if !self.ty(x).is_scalar() {
                return Err(err(
                    ErrorKind::Shape,
                    format!("each of {what} must be a scalar, got {}", self.describe(i)),
                    s,
                ));
            }
            out.push(x);
        }
        Ok(out)
    }

    pub fn make_block_ptr(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.make_block_ptr",
            args,
            kwargs,
            &[
                "base",
                "shape",
                "strides",
                "offsets",
                "block_shape",
                "order",
            ],
            6,
            span,
        )?;
        let (base_v, bs) = b.req(0)?.clone();
        let base = self.tensor_of(&base_v, bs)?;
        let bty = self.ty(base);
        let pointee = match bty.elem() {
            Some(Elem::Ptr(d)) if bty.is_scalar() => d,
            _ => {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "tl.make_block_ptr's base must be a scalar pointer, got {}",
                        self.describe(&base_v)
                    ),
                    bs,
                ))
            }
        };
        let shape = self.scalar_list(&b.req(1)?.0.clone(), b.span_of(1), DType::I64, "shape")?;
        let strides =
            self.scalar_list(&b.req(2)?.0.clone(), b.span_of(2), DType::I64, "strides")?;
        let offsets =
            self.scalar_list(&b.req(3)?.0.clone(), b.span_of(3), DType::I32, "offsets")?;
        let block_shape = shape_arg(&b.req(4)?.0, b.span_of(4))?;
        let order = const_ints(&b.req(5)?.0, b.span_of(5), "order")?;
        let rank = block_shape.len();
        for (n, len, i) in [
            ("shape", shape.len(), 1),
            ("strides", strides.len(), 2),
            ("offsets", offsets.len(), 3),
            ("order", order.len(), 5),
        ] {
            if len != rank {
                return Err(err(
                    ErrorKind::Shape,
                    format!(
                        "tl.make_block_ptr: `{n}` has {len} entries but block_shape has {rank}"
                    ),
                    b.span_of(i),
                ));
            }
        }
        let order: Vec<u32> = order
            .iter()
            .map(|&o| axis_norm(o, rank, b.span_of(5)))
            .collect::<Result<_>>()?;
        let mut sorted = order.clone();
        sorted.sort();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "tl.make_block_ptr: order {order:?} is not a permutation of the dimensions"
                ),
                b.span_of(5),
            ));
        }
        let ty = Type::BlockPtr {
            pointee,
            block_shape,
        };
        Ok(Val::T(self.b.push1(
            Op::MakeBlockPtr {
                base,
                shape,
                strides,
                offsets,
                order,
            },
            ty,
            span,
        )))
    }

    pub fn zero_const(&mut self, dt: DType, shape: Vec<u32>, span: Span) -> Value {
        let c = if dt.is_float() {
            Const::Float(0.0)
        } else if dt.is_bool() {
            Const::Bool(false)
        } else {
            Const::Int(0)
        };
        self.konst(c, Type::tile(dt, shape), span)
    }
}

fn acc_f(v: &Val) -> f64 {
    match v {
        Val::Int(i) => *i as f64,
        Val::Bool(b) => *b as i64 as f64,
        Val::Float(f) => *f,
        _ => 0.0,
    }
}
