//! The evaluator's values: [`V`], a Python value as configuration code sees it (with
//! the function, config and call-argument objects it holds), what a value is called in a
//! message, and the conversions between values and literals, [`HostArg`]s, [`ConstValue`]s
//! and [`TuneConfig`]s; also truthiness and reading numbers out of values.

use super::builtins::Builtin;
use super::containers::range_len;
use super::errors::{overflow, type_err};
use super::{HostArg, TuneConfig};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::tracer::err;
use crate::ir::DType;
use crate::launch::ConstValue;
use rustpython_parser::ast::{self, Constant, Expr};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Which library a dtype value comes from: `torch.float16` and `tl.float16` differ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Flavor {
    Torch,
    Triton,
}

pub(super) type Scope<'a> = Rc<RefCell<HashMap<String, V<'a>>>>;

pub(super) type DictRef<'a> = Rc<RefCell<Vec<(V<'a>, V<'a>)>>>;

/// A Python value.
#[derive(Clone)]
pub(super) enum V<'a> {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<V<'a>>>>),
    Tuple(Rc<Vec<V<'a>>>),
    /// Insertion-ordered entries; keys are hashable values.
    Dict(DictRef<'a>),
    Range(i64, i64, i64),
    DType(DType, Flavor),
    /// A tensor launch argument: dtype and element count.
    Tensor(DType, usize),
    /// A tensor or descriptor argument as a `pre_hook` sees it, which records what the
    /// hook does to it.
    HookArg(Rc<RefCell<HookArgObj<'a>>>),
    Config(Rc<RefCell<ConfigObj<'a>>>),
    /// `get_current_target()`.
    Target,
    /// `torch.cuda.get_device_properties(..)`.
    DeviceProperties,
    Func(Rc<Func<'a>>),
    Builtin(Builtin),
    /// A bound method: receiver and method name.
    Method(Rc<(V<'a>, &'static str)>),
    /// A module or an attribute of one the evaluator does not know (`torch.cuda`).
    Path(Rc<str>),
    /// A jit function (not callable on the host).
    Jit(Rc<str>),
    /// The value of `triton.autotune(...)`, the decorator.
    Autotune(Rc<AutotuneCall<'a>>),
}

impl<'a> V<'a> {
    pub(super) fn str(s: &str) -> V<'a> {
        V::Str(s.into())
    }
    pub(super) fn list(items: Vec<V<'a>>) -> V<'a> {
        V::List(Rc::new(RefCell::new(items)))
    }
    pub(super) fn tuple(items: Vec<V<'a>>) -> V<'a> {
        V::Tuple(Rc::new(items))
    }
    pub(super) fn dict(items: Vec<(V<'a>, V<'a>)>) -> V<'a> {
        V::Dict(Rc::new(RefCell::new(items)))
    }
}

/// A `triton.Config` object.
pub(super) struct ConfigObj<'a> {
    /// The meta-parameter dict (a `V::Dict`, shared as in Python).
    pub(super) kwargs: V<'a>,
    pub(super) num_warps: Option<u32>,
    pub(super) num_stages: Option<u32>,
    /// `pre_hook=`, where given (not `None`).
    pub(super) pre_hook: Option<Rc<Func<'a>>>,
    /// Where the config was made.
    pub(super) span: Span,
}

/// A launch argument handed to a config's `pre_hook` (`nargs["name"]`).
pub(super) struct HookArgObj<'a> {
    /// The parameter.
    pub(super) name: String,
    pub(super) dtype: DType,
    pub(super) numel: usize,
    /// A host descriptor's shape, strides and `.block_shape` (a list value, so that
    /// the hook may assign it or change it in place).
    pub(super) descriptor: Option<(Vec<i64>, Vec<i64>, V<'a>)>,
    /// Whether the hook called `.zero_()` on it.
    pub(super) zeroed: bool,
}

/// The definition a function value was made from.
#[derive(Clone, Copy)]
pub(super) enum Site<'a> {
    Def(&'a ast::StmtFunctionDef),
    Lambda(&'a ast::ExprLambda),
}

/// A function written in configuration code (`def` or `lambda`).
pub(super) struct Func<'a> {
    pub(super) name: Rc<str>,
    pub(super) site: Site<'a>,
    /// Default values of the positional parameters, then of the keyword-only ones.
    pub(super) defaults: Vec<Option<V<'a>>>,
    /// The scopes of the enclosing functions, outermost first.
    pub(super) closure: Vec<Scope<'a>>,
    pub(super) span: Span,
}

impl<'a> Func<'a> {
    pub(super) fn args(&self) -> &'a ast::Arguments {
        match self.site {
            Site::Def(d) => &d.args,
            Site::Lambda(l) => &l.args,
        }
    }
}

/// The arguments of a `triton.autotune(...)` call, read by `Host::interpret`.
pub(super) struct AutotuneCall<'a> {
    pub(super) args: Vec<A<'a>>,
    pub(super) kwargs: Vec<(String, A<'a>)>,
}

/// A call argument: its value, the value's span, the span of the whole argument
/// (`key=[...]`), and its expression when it was one.
#[derive(Clone)]
pub(super) struct A<'a> {
    pub(super) v: V<'a>,
    pub(super) span: Span,
    pub(super) at: Span,
    pub(super) expr: Option<&'a Expr>,
}

pub(super) fn type_name(v: &V) -> &'static str {
    match v {
        V::None => "NoneType",
        V::Bool(_) => "bool",
        V::Int(_) => "int",
        V::Float(_) => "float",
        V::Str(_) => "str",
        V::List(_) => "list",
        V::Tuple(_) => "tuple",
        V::Dict(_) => "dict",
        V::Range(..) => "range",
        V::DType(_, Flavor::Torch) => "torch.dtype",
        V::DType(_, Flavor::Triton) => "triton.language.dtype",
        V::Tensor(..) => "tensor",
        V::HookArg(a) if a.borrow().descriptor.is_some() => "TensorDescriptor",
        V::HookArg(_) => "tensor",
        V::Config(_) => "triton.Config",
        V::Target => "GPUTarget",
        V::DeviceProperties => "torch.cuda._CudaDeviceProperties",
        V::Func(_) => "function",
        V::Builtin(_) => "builtin function",
        V::Method(_) => "method",
        V::Path(_) => "module",
        V::Jit(_) => "JITFunction",
        V::Autotune(_) => "autotune decorator",
    }
}

pub(super) fn describe(v: &V) -> String {
    match v {
        V::Path(p) => format!("`{p}`"),
        V::Func(f) => format!("the function `{}`", f.name),
        V::Builtin(b) => format!("`{}`", b.name()),
        V::Jit(n) => format!("the jit function `{n}`"),
        other => format!("a `{}`", type_name(other)),
    }
}

pub(super) fn host_arg<'a>(a: &HostArg) -> V<'a> {
    match a {
        HostArg::Int(i) => V::Int(*i),
        HostArg::Float(f) => V::Float(*f),
        HostArg::Bool(b) => V::Bool(*b),
        HostArg::Tensor { dtype, numel } => V::Tensor(*dtype, *numel),
        HostArg::Descriptor {
            dtype,
            numel,
            shape,
            strides,
            block_shape,
        } => V::HookArg(Rc::new(RefCell::new(HookArgObj {
            name: String::new(),
            dtype: *dtype,
            numel: *numel,
            descriptor: Some((
                shape.clone(),
                strides.clone(),
                V::list(block_shape.iter().map(|&b| V::Int(b as i64)).collect()),
            )),
            zeroed: false,
        }))),
        HostArg::None => V::None,
    }
}

pub(super) fn const_value<'a>(c: &ConstValue) -> V<'a> {
    match c {
        ConstValue::Int(i) => V::Int(*i),
        ConstValue::Float(f) => V::Float(*f),
        ConstValue::Bool(b) => V::Bool(*b),
        ConstValue::Str(s) => V::str(s),
        ConstValue::DType(d) => V::DType(*d, Flavor::Triton),
        ConstValue::None => V::None,
        ConstValue::Tuple(items) => V::tuple(items.iter().map(const_value).collect()),
    }
}

pub(super) fn to_const(v: &V) -> Option<ConstValue> {
    Some(match v {
        V::Int(i) => ConstValue::Int(*i),
        V::Float(f) => ConstValue::Float(*f),
        V::Bool(b) => ConstValue::Bool(*b),
        V::Str(s) => ConstValue::Str(s.to_string()),
        V::None => ConstValue::None,
        V::DType(d, Flavor::Triton) => ConstValue::DType(*d),
        V::Tuple(items) => ConstValue::Tuple(items.iter().map(to_const).collect::<Option<_>>()?),
        _ => return None,
    })
}

/// `c` as a `triton.Config` object; `pre_hook` is its hook made live again.
pub(super) fn config_value<'a>(
    c: &TuneConfig,
    pre_hook: Option<Rc<Func<'a>>>,
    span: Span,
) -> V<'a> {
    let kwargs = c
        .constexprs
        .iter()
        .map(|(n, v)| (V::str(n), const_value(v)))
        .collect();
    V::Config(Rc::new(RefCell::new(ConfigObj {
        kwargs: V::dict(kwargs),
        num_warps: c.num_warps,
        num_stages: c.num_stages,
        pre_hook,
        span,
    })))
}

pub(super) fn constant<'a>(c: &Constant, span: Span) -> Result<V<'a>> {
    Ok(match c {
        Constant::None => V::None,
        Constant::Bool(b) => V::Bool(*b),
        Constant::Str(s) => V::str(s),
        Constant::Int(i) => match i.to_string().parse::<i64>() {
            Ok(v) => V::Int(v),
            Err(_) => return Err(overflow(span)),
        },
        Constant::Float(f) => V::Float(*f),
        Constant::Tuple(items) => V::tuple(
            items
                .iter()
                .map(|i| constant(i, span))
                .collect::<Result<_>>()?,
        ),
        _ => {
            return Err(err(
                ErrorKind::Unsupported,
                "this literal is not supported in configuration code",
                span,
            ))
        }
    })
}

pub(super) fn truthy(v: &V) -> bool {
    match v {
        V::None => false,
        V::Bool(b) => *b,
        V::Int(i) => *i != 0,
        V::Float(f) => *f != 0.0,
        V::Str(s) => !s.is_empty(),
        V::List(l) => !l.borrow().is_empty(),
        V::Tuple(t) => !t.is_empty(),
        V::Dict(d) => !d.borrow().is_empty(),
        V::Range(a, b, s) => range_len(*a, *b, *s) > 0,
        _ => true,
    }
}

pub(super) fn num_i(v: &V) -> Option<i64> {
    match v {
        V::Bool(b) => Some(*b as i64),
        V::Int(i) => Some(*i),
        _ => None,
    }
}

pub(super) fn num_f(v: &V) -> Option<f64> {
    match v {
        V::Bool(b) => Some(*b as i64 as f64),
        V::Int(i) => Some(*i as f64),
        V::Float(f) => Some(*f),
        _ => None,
    }
}

pub(super) fn int_of(v: &V, span: Span) -> Result<i64> {
    num_i(v).ok_or_else(|| type_err(format!("expected an int, found {}", describe(v)), span))
}

pub(super) fn float_to_int<'a>(f: f64, span: Span) -> Result<V<'a>> {
    if !f.is_finite() || f.abs() >= 9.223_372_036_854_776e18 {
        return Err(overflow(span));
    }
    Ok(V::Int(f as i64))
}
