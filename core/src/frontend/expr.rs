//! Expressions: names, attributes, subscripts, calls and Python operators.
//!
//! Operators on two compile-time values fold in Rust with Python semantics (`//` and
//! `%` floor). Otherwise they emit IR with Triton's semantics: promotion and
//! broadcasting through `semantic.rs`, truncating integer `//` and `%`, true division
//! per Triton's `truediv`, pointer arithmetic as `AddPtr`.

use super::parse::span_of;
use super::semantic::computation_type;
use super::tracer::{err, unsupported, Tracer};
use super::value::{format_val, Namespace, Val};
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{BinaryOp, CmpPred, DType, Elem, Op, Type, UnaryOp, Value};
use rustpython_parser::ast::{self, BoolOp, CmpOp, Constant, Expr, Operator};

/// Positional arguments with their spans.
pub type Args = Vec<(Val, Span)>;
/// Keyword arguments with their spans.
pub type Kwargs = Vec<(String, Val, Span)>;

fn op_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

fn cmp_symbol(op: CmpPred) -> &'static str {
    match op {
        CmpPred::Eq => "==",
        CmpPred::Ne => "!=",
        CmpPred::Lt => "<",
        CmpPred::Le => "<=",
        CmpPred::Gt => ">",
        CmpPred::Ge => ">=",
    }
}

fn py_floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn py_mod(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

fn num_f(v: &Val) -> Option<f64> {
    match v {
        Val::Bool(b) => Some(*b as i64 as f64),
        Val::Int(i) => Some(*i as f64),
        Val::Float(f) => Some(*f),
        _ => None,
    }
}

fn num_i(v: &Val) -> Option<i64> {
    match v {
        Val::Bool(b) => Some(*b as i64),
        Val::Int(i) => Some(*i),
        _ => None,
    }
}

impl Tracer<'_> {
    /// [`Tracer::eval`] without its nesting guard (tracer.rs).
    pub(super) fn eval_unguarded(&mut self, e: &Expr) -> Result<Val> {
        let span = span_of(e);
        match e {
            Expr::Constant(c) => const_val(&c.value, span),
            Expr::Name(n) => self.lookup(n.id.as_str(), span),
            Expr::Attribute(a) => {
                let v = self.eval(&a.value)?;
                self.getattr(v, a.attr.as_str(), span)
            }
            Expr::Subscript(s) => {
                let v = self.eval(&s.value)?;
                self.subscript(v, &s.slice, span)
            }
            Expr::Call(c) => {
                let f = self.eval(&c.func)?;
                let mut args = vec![];
                for a in &c.args {
                    if let Expr::Starred(st) = a {
                        match self.eval(&st.value)? {
                            Val::Tuple(items, _) => {
                                args.extend(items.into_iter().map(|i| (i, span_of(a))))
                            }
                            other => {
                                return Err(err(
                                    ErrorKind::Type,
                                    format!("cannot unpack {} with `*`", self.describe(&other)),
                                    span_of(a),
                                ))
                            }
                        }
                    } else {
                        args.push((self.eval(a)?, span_of(a)));
                    }
                }
                let mut kwargs = vec![];
                for k in &c.keywords {
                    let Some(name) = &k.arg else {
                        return Err(unsupported("`**kwargs`", span_of(&k.value)));
                    };
                    kwargs.push((name.to_string(), self.eval(&k.value)?, span_of(&k.value)));
                }
                self.call(f, args, kwargs, span)
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left)?;
                let r = self.eval(&b.right)?;
                self.binop(b.op, l, r, span)
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand)?;
                self.unop(u.op, v, span)
            }
            Expr::BoolOp(b) => self.boolop(b, span),
            Expr::Compare(c) => self.compare(c, span),
            Expr::IfExp(i) => {
                let c = self.eval(&i.test)?;
                match c.truthy() {
                    Some(true) => self.eval(&i.body),
                    Some(false) => self.eval(&i.orelse),
                    None => {
                        let cond = self.scalar_cond(&c, span_of(&*i.test), "a if cond else b")?;
                        let a = self.eval(&i.body)?;
                        let b = self.eval(&i.orelse)?;
                        self.where_(Val::T(cond), a, b, span)
                    }
                }
            }
            Expr::Tuple(t) => Ok(Val::Tuple(self.eval_all(&t.elts)?, false)),
            Expr::List(t) => Ok(Val::Tuple(self.eval_all(&t.elts)?, true)),
            Expr::JoinedStr(j) => {
                let mut s = String::new();
                for part in &j.values {
                    match self.eval(part)? {
                        Val::Str(x) => s.push_str(&x),
                        other => s.push_str(&format_val(&other, &|v| self.fmt_type(v))),
                    }
                }
                Ok(Val::Str(s))
            }
            Expr::FormattedValue(f) => {
                let v = self.eval(&f.value)?;
                Ok(Val::Str(format_val(&v, &|x| self.fmt_type(x))))
            }
            Expr::Lambda(_) => Err(unsupported("`lambda`", span)),
            Expr::ListComp(_) => Err(unsupported("a list comprehension", span)),
            Expr::SetComp(_) => Err(unsupported("a set comprehension", span)),
            Expr::DictComp(_) => Err(unsupported("a dict comprehension", span)),
            Expr::GeneratorExp(_) => Err(unsupported("a generator expression", span)),
            Expr::Dict(_) => Err(unsupported("a dict", span)),
            Expr::Set(_) => Err(unsupported("a set", span)),
            Expr::Await(_) => Err(unsupported("`await`", span)),
            Expr::Yield(_) | Expr::YieldFrom(_) => Err(unsupported("`yield`", span)),
            Expr::NamedExpr(_) => Err(unsupported("the walrus operator `:=`", span)),
            Expr::Starred(_) => Err(unsupported("a starred expression here", span)),
            Expr::Slice(_) => Err(unsupported("a slice here", span)),
        }
    }

    fn eval_all(&mut self, es: &[Expr]) -> Result<Vec<Val>> {
        es.iter().map(|e| self.eval(e)).collect()
    }

    pub fn getattr(&mut self, v: Val, attr: &str, span: Span) -> Result<Val> {
        match &v {
            Val::Module(Namespace::Tl) => {
                if let Some(d) = DType::from_name(attr) {
                    return Ok(Val::DType(d));
                }
                Ok(match attr {
                    "math" | "extra" | "libdevice" | "cuda" | "language" | "core" | "standard"
                    | "random" => Val::Module(Namespace::Tl),
                    "float8e4b15" => Val::OtherDType("float8e4b15"),
                    "float8e4b8" => Val::OtherDType("float8e4b8"),
                    "float8e5b16" => Val::OtherDType("float8e5b16"),
                    _ => Val::Builtin(format!("tl.{attr}")),
                })
            }
            Val::Module(Namespace::Triton) => Ok(match attr {
                "language" => Val::Module(Namespace::Tl),
                "cdiv" | "next_power_of_2" | "jit" => Val::Builtin(format!("triton.{attr}")),
                _ => {
                    return Err(err(
                        ErrorKind::Name,
                        format!("unknown attribute `triton.{attr}` in a kernel"),
                        span,
                    ))
                }
            }),
            Val::T(x) => {
                let ty = self.ty(*x);
                match attr {
                    "shape" => Ok(Val::Tuple(ty.shape().iter().map(|&d| Val::Int(d as i64)).collect(), true)),
                    "dtype" => match ty.elem() {
                        Some(Elem::Data(d)) => Ok(Val::DType(d)),
                        Some(Elem::Ptr(d)) => Ok(Val::PtrType(d)),
                        None => Err(err(ErrorKind::Type, "a block pointer has no `dtype`; its element type is fixed by its base pointer", span)),
                    },
                    "numel" => Ok(Val::Int(ty.numel() as i64)),
                    "ndim" => Ok(Val::Int(ty.rank() as i64)),
                    // Triton's `x.type`: the dtype itself for a scalar, a block type
                    // (element type and shape) for a tile.
                    "type" => {
                        let elem = match ty.elem() {
                            Some(Elem::Data(d)) => Val::DType(d),
                            Some(Elem::Ptr(d)) => Val::PtrType(d),
                            None => return Err(err(ErrorKind::Type, "a block pointer's `type` is not available; use the base pointer's `dtype`", span)),
                        };
                        if ty.rank() == 0 {
                            Ok(elem)
                        } else {
                            Ok(Val::BlockType(Box::new(elem), ty.shape().iter().map(|&d| d as i64).collect()))
                        }
                    }
                    "T" => self.call_builtin("tl.trans", vec![(v.clone(), span)], vec![], span),
                    _ => Ok(Val::Method(Box::new(v.clone()), attr.to_string())),
                }
            }
            Val::PtrType(d) => match attr {
                "element_ty" => Ok(Val::DType(*d)),
                "scalar" => Ok(v.clone()),
                "address_space" => Ok(Val::Int(1)),
                "primitive_bitwidth" => Ok(Val::Int(64)),
                "name" => Ok(Val::Str(format!("pointer<{}>", d.triton_name()))),
                _ if TYPE_PREDICATES.contains(&attr) => {
                    Ok(Val::Method(Box::new(v.clone()), attr.to_string()))
                }
                _ => Err(err(
                    ErrorKind::Name,
                    format!("a pointer type has no attribute `{attr}`"),
                    span,
                )),
            },
            Val::BlockType(elem, shape) => match attr {
                "element_ty" | "scalar" => Ok((**elem).clone()),
                "shape" => Ok(Val::Tuple(
                    shape.iter().map(|&d| Val::Int(d)).collect(),
                    true,
                )),
                "numel" => Ok(Val::Int(shape.iter().product())),
                "nbytes" => Ok(Val::Int(
                    shape.iter().product::<i64>()
                        * match &**elem {
                            Val::DType(d) => (d.bits() as i64).max(8) / 8,
                            _ => 8,
                        },
                )),
                _ if TYPE_PREDICATES.contains(&attr) || attr == "get_block_shapes" => {
                    Ok(Val::Method(Box::new(v.clone()), attr.to_string()))
                }
                _ => Err(err(
                    ErrorKind::Name,
                    format!("a block type has no attribute `{attr}`"),
                    span,
                )),
            },
            Val::DType(d) => match attr {
                "primitive_bitwidth" | "int_bitwidth" => Ok(Val::Int(d.bits() as i64)),
                "fp_mantissa_width" => Ok(Val::Int(d.mantissa_bits() as i64)),
                "element_ty" | "scalar" => Ok(Val::DType(*d)),
                "name" => Ok(Val::Str(d.triton_name().to_string())),
                _ => Ok(Val::Method(Box::new(v.clone()), attr.to_string())),
            },
            Val::Jit(_) if attr == "fn" => Ok(v.clone()),
            Val::OtherDType(n) => match attr {
                "primitive_bitwidth" => Ok(Val::Int(8)),
                "name" => Ok(Val::Str(n.to_string())),
                _ if TYPE_PREDICATES.contains(&attr) => {
                    Ok(Val::Method(Box::new(v.clone()), attr.to_string()))
                }
                _ => Err(err(
                    ErrorKind::Name,
                    format!("tl.{n} has no attribute `{attr}` in tilewise"),
                    span,
                )),
            },
            Val::Desc(d) => {
                let d = (**d).clone();
                self.descriptor_attr(&d, &v, attr, span)
            }
            // A Python number is a scalar tensor to Triton once assigned (`i = 0` in a
            // loop), so `i.to(tl.int64)` works there.
            other if other.is_number() && attr == "to" => {
                Ok(Val::Method(Box::new(v.clone()), attr.to_string()))
            }
            other => Err(err(
                ErrorKind::Name,
                format!("{} has no attribute `{attr}`", self.describe(other)),
                span,
            )),
        }
    }

    fn subscript(&mut self, v: Val, slice: &Expr, span: Span) -> Result<Val> {
        match v {
            Val::Tuple(items, list) => {
                if let Expr::Slice(s) = slice {
                    let get = |t: &mut Self, e: &Option<Box<Expr>>| -> Result<Option<i64>> {
                        match e {
                            None => Ok(None),
                            Some(e) => match t.eval(e)? {
                                Val::Int(i) => Ok(Some(i)),
                                Val::None => Ok(None),
                                other => Err(err(
                                    ErrorKind::Static,
                                    format!(
                                        "tuple slice bounds must be constexpr ints, got {}",
                                        t.describe(&other)
                                    ),
                                    span_of(&**e),
                                )),
                            },
                        }
                    };
                    let (lo, hi, st) = (
                        get(self, &s.lower)?,
                        get(self, &s.upper)?,
                        get(self, &s.step)?,
                    );
                    if st.unwrap_or(1) != 1 {
                        return Err(unsupported("a tuple slice with a step", span));
                    }
                    let n = items.len() as i64;
                    let norm = |i: i64| if i < 0 { (i + n).max(0) } else { i.min(n) };
                    let (a, b) = (
                        norm(lo.unwrap_or(0)) as usize,
                        norm(hi.unwrap_or(n)) as usize,
                    );
                    return Ok(Val::Tuple(
                        if a < b { items[a..b].to_vec() } else { vec![] },
                        list,
                    ));
                }
                let idx = self.eval(slice)?;
                let Some(i) = num_i(&idx) else {
                    return Err(err(
                        ErrorKind::Static,
                        format!(
                            "a tuple index must be a constexpr int, got {}",
                            self.describe(&idx)
                        ),
                        span_of(slice),
                    ));
                };
                let n = items.len() as i64;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("tuple index {i} out of range for a tuple of {n} elements"),
                        span_of(slice),
                    ));
                }
                Ok(items[j as usize].clone())
            }
            Val::T(x) => {
                let parts: Vec<&Expr> = match slice {
                    Expr::Tuple(t) => t.elts.iter().collect(),
                    other => vec![other],
                };
                let ty = self.ty(x);
                if ty.is_block_ptr() {
                    return Err(err(
                        ErrorKind::Type,
                        "a block pointer cannot be indexed; use tl.load",
                        span,
                    ));
                }
                let mut cur = x;
                let mut src_dim = 0usize;
                let mut out_axis = 0u32;
                for p in parts {
                    match p {
                        Expr::Constant(c) if matches!(c.value, Constant::None) => {
                            let mut s = self.shape(cur);
                            s.insert(out_axis as usize, 1);
                            let t = self.ty(cur).with_shape(s);
                            cur = self.b.push1(Op::ExpandDims { value: cur, axis: out_axis }, t, span);
                            out_axis += 1;
                        }
                        Expr::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none() => {
                            if src_dim >= ty.rank() {
                                return Err(err(ErrorKind::Shape, format!("too many `:` indices for a tile of rank {}", ty.rank()), span_of(p)));
                            }
                            src_dim += 1;
                            out_axis += 1;
                        }
                        other => {
                            return Err(err(
                                ErrorKind::Unsupported,
                                "only `None` and `:` can index a tile (as in x[:, None]); element indexing and slicing are not supported",
                                span_of(other),
                            ))
                        }
                    }
                }
                Ok(Val::T(cur))
            }
            other => Err(err(
                ErrorKind::Type,
                format!("{} cannot be indexed", self.describe(&other)),
                span,
            )),
        }
    }

    pub fn call(&mut self, f: Val, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        match f {
            Val::Builtin(name) => self.call_builtin(&name, args, kwargs, span),
            Val::Jit(name) => self.call_jit(&name, args, kwargs, span),
            Val::NonJit(name) => Err(err(
                ErrorKind::Unsupported,
                format!("`{name}` is a plain Python function; a kernel can only call functions decorated with @triton.jit"),
                span,
            )),
            Val::Method(recv, name) => self.call_method(*recv, &name, args, kwargs, span),
            other => Err(err(ErrorKind::Type, format!("{} is not callable", self.describe(&other)), span)),
        }
    }

    fn call_method(
        &mut self,
        recv: Val,
        name: &str,
        args: Args,
        kwargs: Kwargs,
        span: Span,
    ) -> Result<Val> {
        if let Val::Desc(d) = &recv {
            let d = (**d).clone();
            return self.descriptor_method(&d, name, args, kwargs, span);
        }
        if let Val::BlockType(_, shape) = &recv {
            if name == "get_block_shapes" {
                return Ok(Val::Tuple(
                    shape.iter().map(|&d| Val::Int(d)).collect(),
                    false,
                ));
            }
        }
        if let Val::OtherDType(_) = recv {
            return Ok(Val::Bool(matches!(name, "is_fp8" | "is_floating")));
        }
        if let Val::PtrType(_) | Val::BlockType(..) = recv {
            // Triton's type predicates on pointer and block types; the dtype
            // predicates (`is_floating`, ...) are false on both.
            let r = match name {
                "is_ptr" => matches!(recv, Val::PtrType(_)),
                "is_block" => matches!(recv, Val::BlockType(..)),
                _ if TYPE_PREDICATES.contains(&name) => false,
                _ => {
                    return Err(err(
                        ErrorKind::Name,
                        format!("{} has no method `{name}`", self.describe(&recv)),
                        span,
                    ))
                }
            };
            return Ok(Val::Bool(r));
        }
        if let Val::DType(d) = recv {
            let r = match name {
                "is_ptr" | "is_block" | "is_fp8e4b15" | "is_fp8e4b8" | "is_fp8e5b16" => false,
                "is_fp8" => d.is_fp8(),
                "is_fp8e4nv" => d == DType::F8E4M3,
                "is_fp8e5" => d == DType::F8E5M2,
                "is_standard_floating" => d.is_float() && !d.is_fp8(),
                "is_floating" => d.is_float(),
                "is_int" => d.is_int(),
                "is_int_signed" => d.is_signed_int(),
                "is_int_unsigned" => d.is_unsigned_int(),
                "is_bool" | "is_int1" => d.is_bool(),
                "is_fp16" => d == DType::F16,
                "is_bf16" => d == DType::BF16,
                "is_fp32" => d == DType::F32,
                "is_fp64" => d == DType::F64,
                _ => {
                    return Err(err(
                        ErrorKind::Name,
                        format!("dtype has no method `{name}`"),
                        span,
                    ))
                }
            };
            return Ok(Val::Bool(r));
        }
        if name == "to" {
            let mut a = vec![(recv, span)];
            a.extend(args);
            return self.call_builtin("tl.cast", a, kwargs, span);
        }
        let mut a = vec![(recv, span)];
        a.extend(args);
        self.call_builtin(&format!("tl.{name}"), a, kwargs, span)
    }

    /// A Python binary operator.
    pub fn binop(&mut self, op: Operator, a: Val, b: Val, span: Span) -> Result<Val> {
        if a.is_number() && b.is_number() {
            return fold_binop(op, &a, &b, span);
        }
        if let (Val::Tuple(x, l), Val::Tuple(y, _), Operator::Add) = (&a, &b, op) {
            let mut v = x.clone();
            v.extend(y.iter().cloned());
            return Ok(Val::Tuple(v, *l));
        }
        if let (Val::Str(x), Val::Str(y), Operator::Add) = (&a, &b, op) {
            return Ok(Val::Str(format!("{x}{y}")));
        }
        let sym = op_symbol(op);
        let (ea, eb) = (self.elem_of(&a, span)?, self.elem_of(&b, span)?);
        // Pointer arithmetic.
        if ea.is_ptr() || eb.is_ptr() {
            return match (op, ea, eb) {
                (Operator::Add, Elem::Ptr(_), Elem::Data(d)) if d.is_int() => self.add_ptr(&a, &b, false, span),
                (Operator::Add, Elem::Data(d), Elem::Ptr(_)) if d.is_int() => self.add_ptr(&b, &a, false, span),
                (Operator::Sub, Elem::Ptr(_), Elem::Data(d)) if d.is_int() => self.add_ptr(&a, &b, true, span),
                _ => Err(err(ErrorKind::Type, format!("operator `{sym}` is not defined for {ea} and {eb}; a pointer only supports `+` and `-` with an integer offset"), span)),
            };
        }
        if let (Elem::Data(da), Elem::Data(db)) = (ea, eb) {
            if da.is_fp8() || db.is_fp8() {
                let div = matches!(op, Operator::Div | Operator::Mod | Operator::FloorDiv);
                if let Ok(dt) = computation_type(da, a.is_number(), db, b.is_number(), div) {
                    if dt.is_fp8() {
                        return Err(err(
                            ErrorKind::Type,
                            format!(
                                "`{sym}` on {} values is not supported: fp8 is a storage and dot-operand type (Triton cannot lower fp8 arithmetic either); convert first (x.to(tl.float32))",
                                dt.triton_name()
                            ),
                            span,
                        ));
                    }
                }
            }
        }
        let bin = |t: &mut Self, op: BinaryOp, x, y| -> Val {
            let ty = t.ty(x);
            if ty.dtype() == Some(DType::I1) {
                return t.bool_arith(op, x, y, span);
            }
            Val::T(t.b.push1(Op::Binary { op, lhs: x, rhs: y }, ty, span))
        };
        match op {
            Operator::Add | Operator::Sub | Operator::Mult => {
                let (x, y, _) = self.promote_pair(&a, &b, false, span, sym)?;
                let o = match op {
                    Operator::Add => BinaryOp::Add,
                    Operator::Sub => BinaryOp::Sub,
                    _ => BinaryOp::Mul,
                };
                Ok(bin(self, o, x, y))
            }
            Operator::Div => {
                let (mut x, mut y, dt) = self.promote_pair(&a, &b, true, span, sym)?;
                // promote_pair already made both operands one dtype; int/int is f32.
                if dt.is_int() {
                    x = self.cast(x, DType::F32, span);
                    y = self.cast(y, DType::F32, span);
                }
                Ok(bin(self, BinaryOp::Div, x, y))
            }
            Operator::FloorDiv => {
                let (x, y, dt) = self.promote_pair(&a, &b, true, span, sym)?;
                if dt.is_float() {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "`//` needs integer operands, got {}; use tl.floor(a / b)",
                            dt.triton_name()
                        ),
                        span,
                    ));
                }
                Ok(bin(self, BinaryOp::Div, x, y))
            }
            Operator::Mod => {
                let (x, y, _) = self.promote_pair(&a, &b, true, span, sym)?;
                Ok(bin(self, BinaryOp::Rem, x, y))
            }
            Operator::Pow => {
                let (mut x, mut y, dt) = self.promote_pair(&a, &b, false, span, sym)?;
                if dt.is_int() {
                    x = self.cast(x, DType::F32, span);
                    y = self.cast(y, DType::F32, span);
                }
                Ok(bin(self, BinaryOp::Pow, x, y))
            }
            Operator::BitAnd
            | Operator::BitOr
            | Operator::BitXor
            | Operator::LShift
            | Operator::RShift => {
                let (ea, eb) = (ea.dtype(), eb.dtype());
                if ea.is_some_and(DType::is_float) || eb.is_some_and(DType::is_float) {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "bitwise operator `{sym}` needs integer operands, got {} and {}",
                            ea.map(|d| d.triton_name()).unwrap_or("?"),
                            eb.map(|d| d.triton_name()).unwrap_or("?")
                        ),
                        span,
                    ));
                }
                let (x, y, _) = self.promote_pair(&a, &b, false, span, sym)?;
                let o = match op {
                    Operator::BitAnd => BinaryOp::And,
                    Operator::BitOr => BinaryOp::Or,
                    Operator::BitXor => BinaryOp::Xor,
                    Operator::LShift => BinaryOp::Shl,
                    _ => BinaryOp::Shr,
                };
                Ok(bin(self, o, x, y))
            }
            Operator::MatMult => Err(err(
                ErrorKind::Unsupported,
                "the `@` operator is not supported; use tl.dot(a, b)",
                span,
            )),
        }
    }

    /// Arithmetic on booleans (`mask + mask`) is arithmetic modulo 2, as the
    /// interpreter computes it: spelled with the bitwise ops every backend has (the
    /// WGSL printer wrote `bool + bool`, which naga rejects, and the PTX printer
    /// refused `//`, `%` and shifts of i1). `+`/`-` are xor, `*` and `//` (a zero
    /// divisor gives 0) are and, `%` is 0, shifts by 1 clear and by 0 keep.
    fn bool_arith(&mut self, op: BinaryOp, x: Value, y: Value, span: Span) -> Val {
        let ty = self.ty(x);
        let (op, lhs, rhs) = match op {
            BinaryOp::Add | BinaryOp::Sub => (BinaryOp::Xor, x, y),
            BinaryOp::Mul | BinaryOp::Div => (BinaryOp::And, x, y),
            BinaryOp::Rem => (BinaryOp::Xor, x, x),
            BinaryOp::Shl | BinaryOp::Shr => {
                let value = y;
                let not_y = self.b.push1(
                    Op::Unary {
                        op: UnaryOp::Not,
                        value,
                    },
                    ty.clone(),
                    span,
                );
                (BinaryOp::And, x, not_y)
            }
            op => (op, x, y),
        };
        Val::T(self.b.push1(Op::Binary { op, lhs, rhs }, ty, span))
    }

    fn add_ptr(&mut self, p: &Val, off: &Val, negate: bool, span: Span) -> Result<Val> {
        let p = self.tensor_of(p, span)?;
        let mut o = self.tensor_of(off, span)?;
        if negate {
            let t = self.ty(o);
            o = self.b.push1(
                Op::Unary {
                    op: UnaryOp::Neg,
                    value: o,
                },
                t,
                span,
            );
        }
        let (p, o) = self.broadcast_pair(p, o, span)?;
        let t = self.ty(p);
        Ok(Val::T(self.b.push1(
            Op::AddPtr { ptr: p, offset: o },
            t,
            span,
        )))
    }

    /// Comparison of two values (compile-time fold, or `Cmp` after promotion).
    pub fn cmp(&mut self, pred: CmpPred, a: Val, b: Val, span: Span) -> Result<Val> {
        if a.is_number() && b.is_number() {
            let r = match (num_i(&a), num_i(&b)) {
                (Some(x), Some(y)) => cmp_ord(pred, x.cmp(&y)),
                _ => {
                    let (x, y) = (num_f(&a).unwrap_or(0.0), num_f(&b).unwrap_or(0.0));
                    match pred {
                        CmpPred::Eq => x == y,
                        CmpPred::Ne => x != y,
                        CmpPred::Lt => x < y,
                        CmpPred::Le => x <= y,
                        CmpPred::Gt => x > y,
                        CmpPred::Ge => x >= y,
                    }
                }
            };
            return Ok(Val::Bool(r));
        }
        if a.is_constexpr() && b.is_constexpr() {
            let eq = a.same(&b);
            return match pred {
                CmpPred::Eq => Ok(Val::Bool(eq)),
                CmpPred::Ne => Ok(Val::Bool(!eq)),
                _ => Err(err(
                    ErrorKind::Type,
                    format!(
                        "cannot order {} and {}",
                        self.describe(&a),
                        self.describe(&b)
                    ),
                    span,
                )),
            };
        }
        let sym = cmp_symbol(pred);
        let (ea, eb) = (self.elem_of(&a, span)?, self.elem_of(&b, span)?);
        let (x, y) = if ea.is_ptr() || eb.is_ptr() {
            if ea != eb {
                return Err(err(
                    ErrorKind::Type,
                    format!("cannot compare {ea} and {eb} with `{sym}`"),
                    span,
                ));
            }
            let x = self.tensor_of(&a, span)?;
            let y = self.tensor_of(&b, span)?;
            self.broadcast_pair(x, y, span)?
        } else {
            // Triton compares an fp8 tile with a Python float in f32 (the float becomes
            // an f32 tensor first) and rejects a Python int.
            let fp8 = |e: Elem| e.dtype().is_some_and(DType::is_fp8);
            let (a, b) = match (&a, &b) {
                (n, _) | (_, n) if n.is_number() && (fp8(ea) || fp8(eb)) => {
                    if !matches!(n, Val::Float(_)) {
                        return Err(err(
                            ErrorKind::Type,
                            format!("cannot compare an fp8 value with the integer {}; use a float (x {sym} 0.0)", format_val(n, &|_| String::new())),
                            span,
                        ));
                    }
                    let f32_of = |t: &mut Self, v: &Val| -> Result<Val> {
                        Ok(match v {
                            Val::Float(_) => Val::T(t.materialize(v, DType::F32, span)?),
                            other => other.clone(),
                        })
                    };
                    (f32_of(self, &a)?, f32_of(self, &b)?)
                }
                _ => (a, b),
            };
            let (x, y, _) = self.promote_pair(&a, &b, false, span, sym)?;
            (x, y)
        };
        let t = self.ty(x).with_dtype(DType::I1);
        Ok(Val::T(self.b.push1(
            Op::Cmp {
                pred,
                lhs: x,
                rhs: y,
            },
            t,
            span,
        )))
    }

    fn compare(&mut self, c: &ast::ExprCompare, span: Span) -> Result<Val> {
        let mut left = self.eval(&c.left)?;
        let mut acc: Option<Val> = None;
        for (op, right_e) in c.ops.iter().zip(&c.comparators) {
            let right = self.eval(right_e)?;
            let r = match op {
                CmpOp::Is | CmpOp::IsNot => {
                    if !(left.is_constexpr() && right.is_constexpr()) {
                        return Err(err(ErrorKind::Unsupported, "`is` / `is not` only compare compile-time values (such as `x is None`)", span));
                    }
                    let same = left.same(&right);
                    Val::Bool(if matches!(op, CmpOp::Is) { same } else { !same })
                }
                CmpOp::In | CmpOp::NotIn => match &right {
                    Val::Tuple(items, _) if left.is_constexpr() => {
                        let found = items.iter().any(|i| i.same(&left));
                        Val::Bool(if matches!(op, CmpOp::In) {
                            found
                        } else {
                            !found
                        })
                    }
                    _ => return Err(unsupported("`in` on runtime values", span)),
                },
                CmpOp::Eq => self.cmp(CmpPred::Eq, left.clone(), right.clone(), span)?,
                CmpOp::NotEq => self.cmp(CmpPred::Ne, left.clone(), right.clone(), span)?,
                CmpOp::Lt => self.cmp(CmpPred::Lt, left.clone(), right.clone(), span)?,
                CmpOp::LtE => self.cmp(CmpPred::Le, left.clone(), right.clone(), span)?,
                CmpOp::Gt => self.cmp(CmpPred::Gt, left.clone(), right.clone(), span)?,
                CmpOp::GtE => self.cmp(CmpPred::Ge, left.clone(), right.clone(), span)?,
            };
            acc = Some(match acc {
                None => r,
                Some(prev) => self.logical(true, prev, r, span)?,
            });
            left = right;
        }
        Ok(acc.unwrap_or(Val::Bool(true)))
    }

    /// `and` / `or` of two already evaluated values (runtime scalars only).
    fn logical(&mut self, is_and: bool, a: Val, b: Val, span: Span) -> Result<Val> {
        if let (Some(x), Some(y)) = (a.truthy(), b.truthy()) {
            return Ok(if is_and {
                if x {
                    b
                } else {
                    a
                }
            } else if x {
                a
            } else {
                let _ = y;
                b
            });
        }
        let word = if is_and { "and" } else { "or" };
        let x = self.scalar_cond(&a, span, word)?;
        let y = self.scalar_cond(&b, span, word)?;
        let op = if is_and { BinaryOp::And } else { BinaryOp::Or };
        Ok(Val::T(self.b.push1(
            Op::Binary { op, lhs: x, rhs: y },
            Type::scalar(DType::I1),
            span,
        )))
    }

    fn boolop(&mut self, b: &ast::ExprBoolOp, span: Span) -> Result<Val> {
        let is_and = matches!(b.op, BoolOp::And);
        let mut acc: Option<Val> = None;
        for e in &b.values {
            // Short-circuit on compile-time values, as Python does.
            if let Some(prev) = &acc {
                if let Some(t) = prev.truthy() {
                    if (is_and && !t) || (!is_and && t) {
                        return Ok(prev.clone());
                    }
                }
            }
            let v = self.eval(e)?;
            acc = Some(match acc {
                None => v,
                Some(prev) => match prev.truthy() {
                    Some(_) => v,
                    None => self.logical(is_and, prev, v, span)?,
                },
            });
        }
        let v = acc.unwrap_or(Val::Bool(is_and));
        if !v.is_constexpr() {
            // A lone runtime operand after constant ones: still must be a scalar.
            if let Val::T(x) = &v {
                if !self.ty(*x).is_scalar() {
                    return Err(self
                        .scalar_cond(&v, span, if is_and { "and" } else { "or" })
                        .err()
                        .unwrap_or_else(|| err(ErrorKind::Shape, "", span)));
                }
            }
        }
        Ok(v)
    }

    pub fn unop(&mut self, op: ast::UnaryOp, v: Val, span: Span) -> Result<Val> {
        match (op, &v) {
            (ast::UnaryOp::UAdd, _) if v.is_number() => Ok(v),
            (ast::UnaryOp::USub, Val::Int(i)) => i
                .checked_neg()
                .map(Val::Int)
                .ok_or_else(|| err(ErrorKind::Static, "integer overflow", span)),
            (ast::UnaryOp::USub, Val::Float(f)) => Ok(Val::Float(-f)),
            (ast::UnaryOp::USub, Val::Bool(b)) => Ok(Val::Int(-(*b as i64))),
            (ast::UnaryOp::Invert, Val::Int(i)) => Ok(Val::Int(!i)),
            (ast::UnaryOp::Invert, Val::Bool(b)) => Ok(Val::Int(!(*b as i64))),
            (ast::UnaryOp::Not, _) if v.is_constexpr() => {
                Ok(Val::Bool(!v.truthy().unwrap_or(false)))
            }
            (ast::UnaryOp::Not, _) => {
                let c = self.scalar_cond(&v, span, "not")?;
                Ok(Val::T(self.b.push1(
                    Op::Unary {
                        op: UnaryOp::Not,
                        value: c,
                    },
                    Type::scalar(DType::I1),
                    span,
                )))
            }
            (ast::UnaryOp::UAdd, Val::T(_)) => Ok(v),
            (ast::UnaryOp::USub, Val::T(x)) => {
                let t = self.ty(*x);
                if t.dtype().is_none() {
                    return Err(err(
                        ErrorKind::Type,
                        format!("unary `-` is not defined on {t}"),
                        span,
                    ));
                }
                if t.dtype() == Some(DType::I1) {
                    // -x == x modulo 2 (see `bool_arith`).
                    return Ok(v);
                }
                self.no_fp8(*x, "unary `-`", span)?;
                Ok(Val::T(self.b.push1(
                    Op::Unary {
                        op: UnaryOp::Neg,
                        value: *x,
                    },
                    t,
                    span,
                )))
            }
            (ast::UnaryOp::Invert, Val::T(x)) => {
                let t = self.ty(*x);
                match t.dtype() {
                    Some(d) if d.is_int() => Ok(Val::T(self.b.push1(
                        Op::Unary {
                            op: UnaryOp::Not,
                            value: *x,
                        },
                        t,
                        span,
                    ))),
                    _ => Err(err(
                        ErrorKind::Type,
                        format!("`~` needs an integer operand, got {t}"),
                        span,
                    )),
                }
            }
            _ => Err(err(
                ErrorKind::Type,
                format!("unary operator is not defined on {}", self.describe(&v)),
                span,
            )),
        }
    }
}

fn cmp_ord(pred: CmpPred, o: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match pred {
        CmpPred::Eq => o == Equal,
        CmpPred::Ne => o != Equal,
        CmpPred::Lt => o == Less,
        CmpPred::Le => o != Greater,
        CmpPred::Gt => o == Greater,
        CmpPred::Ge => o != Less,
    }
}

/// A Python literal.
pub fn const_val(c: &Constant, span: Span) -> Result<Val> {
    Ok(match c {
        Constant::None => Val::None,
        Constant::Bool(b) => Val::Bool(*b),
        Constant::Str(s) => Val::Str(s.clone()),
        Constant::Int(i) => match i.to_string().parse::<i64>() {
            Ok(v) => Val::Int(v),
            Err(_) => {
                return Err(err(
                    ErrorKind::Unsupported,
                    format!("the integer {i} does not fit in 64 bits"),
                    span,
                ))
            }
        },
        Constant::Float(f) => Val::Float(*f),
        Constant::Tuple(items) => Val::Tuple(
            items
                .iter()
                .map(|i| const_val(i, span))
                .collect::<Result<_>>()?,
            false,
        ),
        Constant::Bytes(_) => return Err(unsupported("a bytes literal", span)),
        Constant::Complex { .. } => return Err(unsupported("a complex number", span)),
        Constant::Ellipsis => return Err(unsupported("`...`", span)),
    })
}

/// Python arithmetic on two numbers.
fn fold_binop(op: Operator, a: &Val, b: &Val, span: Span) -> Result<Val> {
    let overflow = || {
        err(
            ErrorKind::Static,
            "integer overflow in a constexpr expression",
            span,
        )
    };
    let divzero = || {
        err(
            ErrorKind::Static,
            "division by zero in a constexpr expression",
            span,
        )
    };
    let floats = matches!(a, Val::Float(_)) || matches!(b, Val::Float(_));
    if !floats {
        let (x, y) = (num_i(a).unwrap_or(0), num_i(b).unwrap_or(0));
        let both_bool = matches!((a, b), (Val::Bool(_), Val::Bool(_)));
        return Ok(match op {
            Operator::Add => Val::Int(x.checked_add(y).ok_or_else(overflow)?),
            Operator::Sub => Val::Int(x.checked_sub(y).ok_or_else(overflow)?),
            Operator::Mult => Val::Int(x.checked_mul(y).ok_or_else(overflow)?),
            Operator::Div => {
                if y == 0 {
                    return Err(divzero());
                }
                Val::Float(x as f64 / y as f64)
            }
            Operator::FloorDiv => {
                if y == 0 {
                    return Err(divzero());
                }
                Val::Int(py_floordiv(x, y).ok_or_else(overflow)?)
            }
            Operator::Mod => {
                if y == 0 {
                    return Err(divzero());
                }
                Val::Int(py_mod(x, y).ok_or_else(overflow)?)
            }
            Operator::Pow => {
                if y >= 0 {
                    let e = u32::try_from(y).map_err(|_| overflow())?;
                    Val::Int(x.checked_pow(e).ok_or_else(overflow)?)
                } else {
                    Val::Float((x as f64).powf(y as f64))
                }
            }
            Operator::LShift => Val::Int(if (0..64).contains(&y) {
                x.checked_shl(y as u32).ok_or_else(overflow)?
            } else {
                return Err(overflow());
            }),
            Operator::RShift => Val::Int(if (0..64).contains(&y) {
                x >> y
            } else {
                if x < 0 {
                    -1
                } else {
                    0
                }
            }),
            Operator::BitAnd if both_bool => Val::Bool(x & y != 0),
            Operator::BitOr if both_bool => Val::Bool(x | y != 0),
            Operator::BitXor if both_bool => Val::Bool(x ^ y != 0),
            Operator::BitAnd => Val::Int(x & y),
            Operator::BitOr => Val::Int(x | y),
            Operator::BitXor => Val::Int(x ^ y),
            Operator::MatMult => {
                return Err(err(
                    ErrorKind::Unsupported,
                    "the `@` operator is not supported",
                    span,
                ))
            }
        });
    }
    let (x, y) = (num_f(a).unwrap_or(0.0), num_f(b).unwrap_or(0.0));
    Ok(Val::Float(match op {
        Operator::Add => x + y,
        Operator::Sub => x - y,
        Operator::Mult => x * y,
        Operator::Div => {
            if y == 0.0 {
                return Err(divzero());
            }
            x / y
        }
        Operator::FloorDiv => {
            if y == 0.0 {
                return Err(divzero());
            }
            (x / y).floor()
        }
        Operator::Mod => {
            if y == 0.0 {
                return Err(divzero());
            }
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        Operator::Pow => x.powf(y),
        _ => {
            return Err(err(
                ErrorKind::Type,
                format!("operator `{}` needs integer operands", op_symbol(op)),
                span,
            ))
        }
    }))
}

/// Triton's type predicates, callable on every type object.
const TYPE_PREDICATES: &[&str] = &[
    "is_fp8e4nv",
    "is_fp8e5",
    "is_fp8e4b15",
    "is_fp8e4b8",
    "is_fp8e5b16",
    "is_standard_floating",
    "is_ptr",
    "is_block",
    "is_floating",
    "is_int",
    "is_int_signed",
    "is_int_unsigned",
    "is_bool",
    "is_int1",
    "is_fp16",
    "is_bf16",
    "is_fp32",
    "is_fp64",
    "is_fp8",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_floor_semantics_on_constexprs() {
        assert_eq!(py_floordiv(-7, 2), Some(-4));
        assert_eq!(py_mod(-7, 2), Some(1));
        assert_eq!(py_mod(7, -2), Some(-1));
        let v = fold_binop(Operator::FloorDiv, &Val::Int(-7), &Val::Int(2), Span::NONE).unwrap();
        assert!(v.same(&Val::Int(-4)));
        let v = fold_binop(Operator::Div, &Val::Int(7), &Val::Int(2), Span::NONE).unwrap();
        assert!(v.same(&Val::Float(3.5)));
    }
}
