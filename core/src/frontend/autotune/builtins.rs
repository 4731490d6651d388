//! The functions configuration code may call that are not written in it: Python
//! builtins (`len`, `range`, `sorted`, `zip`, ...), `triton.Config`, `triton.autotune`,
//! `triton.cdiv`, `triton.next_power_of_2`, the target query, `itertools.product`, the
//! `math` functions and `functools.lru_cache`; with the builtins named only to be refused.

use super::containers::{dict_set, range_len};
use super::errors::{arity, missing, overflow, type_err};
use super::host::Host;
use super::ops::order;
use super::repr::{py_repr, py_str};
use super::values::{
    describe, float_to_int, int_of, num_f, truthy, AutotuneCall, ConfigObj, DictRef, A, V,
};
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::frontend::tracer::err;
use rustpython_parser::ast::Operator;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

/// A function configuration code may call that is not written in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Builtin {
    Len,
    Min,
    Max,
    Range,
    List,
    Tuple,
    Dict,
    Int,
    Float,
    Bool,
    Str,
    Repr,
    Abs,
    Sorted,
    Reversed,
    Enumerate,
    Zip,
    Any,
    All,
    Sum,
    Filter,
    Map,
    Print,
    Round,
    Config,
    Autotune,
    NextPow2,
    Cdiv,
    GetTarget,
    DeviceProperties,
    DeviceCapability,
    Product,
    Ceil,
    Floor,
    Log2,
    Sqrt,
    Prod,
    Gcd,
    Cache,
    Constexpr,
}

impl Builtin {
    pub(super) fn name(self) -> &'static str {
        match self {
            Builtin::Len => "len",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Range => "range",
            Builtin::List => "list",
            Builtin::Tuple => "tuple",
            Builtin::Dict => "dict",
            Builtin::Int => "int",
            Builtin::Float => "float",
            Builtin::Bool => "bool",
            Builtin::Str => "str",
            Builtin::Repr => "repr",
            Builtin::Abs => "abs",
            Builtin::Sorted => "sorted",
            Builtin::Reversed => "reversed",
            Builtin::Enumerate => "enumerate",
            Builtin::Zip => "zip",
            Builtin::Any => "any",
            Builtin::All => "all",
            Builtin::Sum => "sum",
            Builtin::Filter => "filter",
            Builtin::Map => "map",
            Builtin::Print => "print",
            Builtin::Round => "round",
            Builtin::Config => "triton.Config",
            Builtin::Autotune => "triton.autotune",
            Builtin::NextPow2 => "triton.next_power_of_2",
            Builtin::Cdiv => "triton.cdiv",
            Builtin::GetTarget => "get_current_target",
            Builtin::DeviceProperties => "torch.cuda.get_device_properties",
            Builtin::DeviceCapability => "torch.cuda.get_device_capability",
            Builtin::Product => "itertools.product",
            Builtin::Ceil => "math.ceil",
            Builtin::Floor => "math.floor",
            Builtin::Log2 => "math.log2",
            Builtin::Sqrt => "math.sqrt",
            Builtin::Prod => "math.prod",
            Builtin::Gcd => "math.gcd",
            Builtin::Cache => "functools.lru_cache",
            Builtin::Constexpr => "tl.constexpr",
        }
    }
}

/// Python builtins looked up by name.
pub(super) fn builtin_named(name: &str) -> Option<Builtin> {
    Some(match name {
        "len" => Builtin::Len,
        "min" => Builtin::Min,
        "max" => Builtin::Max,
        "range" => Builtin::Range,
        "list" => Builtin::List,
        "tuple" => Builtin::Tuple,
        "dict" => Builtin::Dict,
        "int" => Builtin::Int,
        "float" => Builtin::Float,
        "bool" => Builtin::Bool,
        "str" => Builtin::Str,
        "repr" => Builtin::Repr,
        "abs" => Builtin::Abs,
        "sorted" => Builtin::Sorted,
        "reversed" => Builtin::Reversed,
        "enumerate" => Builtin::Enumerate,
        "zip" => Builtin::Zip,
        "any" => Builtin::Any,
        "all" => Builtin::All,
        "sum" => Builtin::Sum,
        "filter" => Builtin::Filter,
        "map" => Builtin::Map,
        "print" => Builtin::Print,
        "round" => Builtin::Round,
        _ => return None,
    })
}

/// Python builtins the evaluator does not implement (a clearer error than "not defined").
pub(super) const UNSUPPORTED_BUILTINS: &[&str] = &[
    "hasattr",
    "getattr",
    "setattr",
    "isinstance",
    "issubclass",
    "type",
    "set",
    "frozenset",
    "open",
    "iter",
    "next",
    "hash",
    "id",
    "object",
    "super",
    "vars",
    "globals",
    "locals",
    "eval",
    "exec",
    "input",
    "format",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "bin",
    "oct",
    "callable",
    "bytes",
    "complex",
    "slice",
];

impl<'a> Host<'a> {
    pub(super) fn call_builtin(
        &mut self,
        b: Builtin,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let fname = b.name();
        // Builtins with keyword arguments first.
        match b {
            Builtin::Config => return self.make_config(args, kwargs, span),
            Builtin::Autotune => return Ok(V::Autotune(Rc::new(AutotuneCall { args, kwargs }))),
            Builtin::Print => return Ok(V::None),
            Builtin::Min | Builtin::Max => return self.min_max(b, args, kwargs, span),
            Builtin::Sorted => {
                let p = Self::bind(fname, &["iterable", "key", "reverse"], args, kwargs, span)?;
                let [it, key, rev] = <[Option<A>; 3]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let items = self.seq(it.v, it.span)?;
                let key = key.map(|k| k.v).filter(|k| !matches!(k, V::None));
                let rev = rev.is_some_and(|r| truthy(&r.v));
                return Ok(V::list(self.sort(items, key, rev, span)?));
            }
            Builtin::Dict => {
                if args.len() > 1 {
                    return Err(arity(fname, "at most 1", args.len(), span));
                }
                let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
                if let Some(a) = args.into_iter().next() {
                    self.dict_update(&out, a.v, a.span)?;
                }
                for (k, a) in kwargs {
                    dict_set(&out, V::str(&k), a.v, a.span)?;
                }
                return Ok(V::Dict(out));
            }
            Builtin::Enumerate => {
                let p = Self::bind(fname, &["iterable", "start"], args, kwargs, span)?;
                let [it, start] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let start = match start {
                    Some(s) => int_of(&s.v, s.span)?,
                    None => 0,
                };
                let items = self.seq(it.v, it.span)?;
                let mut out = vec![];
                for (i, x) in items.into_iter().enumerate() {
                    let n = start.checked_add(i as i64).ok_or_else(|| overflow(span))?;
                    out.push(V::tuple(vec![V::Int(n), x]));
                }
                return Ok(V::list(out));
            }
            Builtin::Sum | Builtin::Prod => {
                let p = Self::bind(fname, &["iterable", "start"], args, kwargs, span)?;
                let [it, start] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let (op, init) = if b == Builtin::Sum {
                    (Operator::Add, V::Int(0))
                } else {
                    (Operator::Mult, V::Int(1))
                };
                let mut acc = start.map(|s| s.v).unwrap_or(init);
                for x in self.seq(it.v, it.span)? {
                    acc = self.binop(op, acc, x, span)?;
                }
                return Ok(acc);
            }
            Builtin::Product => {
                let mut repeat = 1i64;
                for (k, a) in kwargs {
                    if k != "repeat" {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("`{fname}` got an unexpected keyword argument `{k}`"),
                            a.at,
                        ));
                    }
                    repeat = int_of(&a.v, a.span)?;
                }
                let mut pools = vec![];
                for a in args {
                    pools.push(self.seq(a.v, a.span)?);
                }
                let pools: Vec<Vec<V<'a>>> = (0..repeat.max(0))
                    .flat_map(|_| pools.iter().cloned())
                    .collect();
                let mut out: Vec<Vec<V<'a>>> = vec![vec![]];
                for pool in &pools {
                    let n = (out.len() as u64).saturating_mul(pool.len() as u64);
                    self.charge(n, span)?;
                    let mut next = vec![];
                    for prefix in &out {
                        for x in pool {
                            let mut t = prefix.clone();
                            t.push(x.clone());
                            next.push(t);
                        }
                    }
                    out = next;
                }
                return Ok(V::list(out.into_iter().map(V::tuple).collect()));
            }
            Builtin::Cache => {
                if let [a] = args.as_slice() {
                    if matches!(a.v, V::Func(_)) && kwargs.is_empty() {
                        return Ok(a.v.clone());
                    }
                }
                return Ok(V::Builtin(Builtin::Cache));
            }
            Builtin::Round => {
                let p = Self::bind(fname, &["number", "ndigits"], args, kwargs, span)?;
                let [x, nd] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(x) = x else {
                    return Err(missing(fname, "number", span));
                };
                let nd = nd.filter(|n| !matches!(n.v, V::None));
                return match (&x.v, nd) {
                    (V::Int(i), _) => Ok(V::Int(*i)),
                    (V::Bool(b), _) => Ok(V::Int(*b as i64)),
                    (V::Float(f), None) => float_to_int(f.round_ties_even(), x.span),
                    (V::Float(f), Some(n)) => {
                        let n = int_of(&n.v, n.span)?.clamp(-300, 300) as i32;
                        let p = 10f64.powi(n);
                        Ok(V::Float((f * p).round_ties_even() / p))
                    }
                    (other, _) => Err(type_err(
                        format!("`round` needs a number, not {}", describe(other)),
                        x.span,
                    )),
                };
            }
            Builtin::Filter | Builtin::Map => {
                if !kwargs.is_empty() || args.len() < 2 {
                    return Err(arity(fname, "2", args.len(), span));
                }
                let mut it = args.into_iter();
                let func = it.next().map(|a| a.v).unwrap_or(V::None);
                let mut lists = vec![];
                for a in it {
                    lists.push(self.seq(a.v, a.span)?);
                }
                if b == Builtin::Filter {
                    if lists.len() != 1 {
                        return Err(arity(fname, "2", lists.len() + 1, span));
                    }
                    let mut out = vec![];
                    for x in lists.pop().unwrap_or_default() {
                        let keep = match &func {
                            V::None => truthy(&x),
                            f => {
                                let r = self.call1(f.clone(), vec![x.clone()], span)?;
                                truthy(&r)
                            }
                        };
                        if keep {
                            out.push(x);
                        }
                    }
                    return Ok(V::list(out));
                }
                let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                let mut out = vec![];
                for i in 0..n {
                    let xs = lists.iter().map(|l| l[i].clone()).collect();
                    out.push(self.call1(func.clone(), xs, span)?);
                }
                return Ok(V::list(out));
            }
            _ => {}
        }
        if let Some((k, a)) = kwargs.first() {
            return Err(err(
                ErrorKind::Argument,
                format!("`{fname}` got an unexpected keyword argument `{k}`"),
                a.at,
            ));
        }
        let n = args.len();
        let mut args = args.into_iter();
        let mut next = || args.next();
        match b {
            Builtin::Len => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let len = match &a.v {
                    V::List(l) => l.borrow().len() as u64,
                    V::Tuple(t) => t.len() as u64,
                    V::Dict(d) => d.borrow().len() as u64,
                    V::Str(s) => s.chars().count() as u64,
                    V::Range(x, y, z) => range_len(*x, *y, *z),
                    other => {
                        return Err(type_err(
                            format!("{} has no len()", describe(other)),
                            a.span,
                        ))
                    }
                };
                Ok(V::Int(len as i64))
            }
            Builtin::Range => {
                let mut v = vec![];
                while let Some(a) = next() {
                    v.push(int_of(&a.v, a.span)?);
                }
                let (a, b, s) = match v.as_slice() {
                    [b] => (0, *b, 1),
                    [a, b] => (*a, *b, 1),
                    [a, b, s] => (*a, *b, *s),
                    _ => return Err(arity(fname, "1 to 3", n, span)),
                };
                if s == 0 {
                    return Err(err(
                        ErrorKind::Runtime,
                        "`range` step must not be zero",
                        span,
                    ));
                }
                Ok(V::Range(a, b, s))
            }
            Builtin::List | Builtin::Tuple | Builtin::Reversed => {
                let items = match (next(), next()) {
                    (None, None) if b != Builtin::Reversed => vec![],
                    (Some(a), None) => self.seq(a.v, a.span)?,
                    _ => return Err(arity(fname, "1", n, span)),
                };
                Ok(match b {
                    Builtin::List => V::list(items),
                    Builtin::Tuple => V::tuple(items),
                    _ => V::list(items.into_iter().rev().collect()),
                })
            }
            Builtin::Zip => {
                let mut lists = vec![];
                while let Some(a) = next() {
                    lists.push(self.seq(a.v, a.span)?);
                }
                let len = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                Ok(V::list(
                    (0..len)
                        .map(|i| V::tuple(lists.iter().map(|l| l[i].clone()).collect()))
                        .collect(),
                ))
            }
            Builtin::Any | Builtin::All => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let items = self.seq(a.v, a.span)?;
                Ok(V::Bool(if b == Builtin::Any {
                    items.iter().any(truthy)
                } else {
                    items.iter().all(truthy)
                }))
            }
            Builtin::Int => match (next(), next()) {
                (None, None) => Ok(V::Int(0)),
                (Some(a), None) => match &a.v {
                    V::Int(i) => Ok(V::Int(*i)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => float_to_int(f.trunc(), a.span),
                    V::Str(s) => s
                        .trim()
                        .replace('_', "")
                        .parse::<i64>()
                        .map(V::Int)
                        .map_err(|_| {
                            err(
                                ErrorKind::Runtime,
                                format!("invalid literal for int(): {}", py_repr(&a.v)),
                                a.span,
                            )
                        }),
                    other => Err(type_err(
                        format!("`int()` of {} is not supported", describe(other)),
                        a.span,
                    )),
                },
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Float => match (next(), next()) {
                (None, None) => Ok(V::Float(0.0)),
                (Some(a), None) => match &a.v {
                    V::Str(s) => {
                        let t = s.trim().to_ascii_lowercase();
                        let f = match t.as_str() {
                            "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
                            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                            "nan" => Some(f64::NAN),
                            _ => t.parse::<f64>().ok(),
                        };
                        f.map(V::Float).ok_or_else(|| {
                            err(
                                ErrorKind::Runtime,
                                format!("could not convert string to float: {}", py_repr(&a.v)),
                                a.span,
                            )
                        })
                    }
                    other => num_f(other).map(V::Float).ok_or_else(|| {
                        type_err(
                            format!("`float()` of {} is not supported", describe(other)),
                            a.span,
                        )
                    }),
                },
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Bool => match (next(), next()) {
                (None, None) => Ok(V::Bool(false)),
                (Some(a), None) => Ok(V::Bool(truthy(&a.v))),
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Str | Builtin::Repr => match (next(), next()) {
                (None, None) if b == Builtin::Str => Ok(V::str("")),
                (Some(a), None) => Ok(V::Str(
                    if b == Builtin::Str {
                        py_str(&a.v)
                    } else {
                        py_repr(&a.v)
                    }
                    .into(),
                )),
                _ => Err(arity(fname, "1", n, span)),
            },
            Builtin::Abs => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                match &a.v {
                    V::Int(i) => i.checked_abs().map(V::Int).ok_or_else(|| overflow(span)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => Ok(V::Float(f.abs())),
                    other => Err(type_err(
                        format!("bad operand for abs(): {}", describe(other)),
                        a.span,
                    )),
                }
            }
            Builtin::NextPow2 => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let x = int_of(&a.v, a.span)?;
                if x <= 0 {
                    return Ok(V::Int(0));
                }
                (x as u64)
                    .checked_next_power_of_two()
                    .and_then(|p| i64::try_from(p).ok())
                    .map(V::Int)
                    .ok_or_else(|| overflow(span))
            }
            Builtin::Cdiv => {
                let [Some(x), Some(y), None] = [next(), next(), next()] else {
                    return Err(arity(fname, "2", n, span));
                };
                let s = self.binop(Operator::Add, x.v, y.v.clone(), span)?;
                let s = self.binop(Operator::Sub, s, V::Int(1), span)?;
                self.binop(Operator::FloorDiv, s, y.v, span)
            }
            Builtin::GetTarget => {
                if n != 0 {
                    return Err(arity(fname, "0", n, span));
                }
                Ok(V::Target)
            }
            // The device argument (an index, "cuda", a device) names the launch's
            // device: configuration code is evaluated for one.
            Builtin::DeviceProperties | Builtin::DeviceCapability => {
                if n > 1 {
                    return Err(arity(fname, "0 or 1", n, span));
                }
                if self.target.backend != "cuda" {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!(
                            "`{fname}(...)` on a {} target: torch.cuda describes CUDA devices",
                            self.target.backend
                        ),
                        span,
                    ));
                }
                Ok(match b {
                    Builtin::DeviceProperties => V::DeviceProperties,
                    _ => V::Tuple(Rc::new(vec![
                        V::Int((self.target.arch / 10) as i64),
                        V::Int((self.target.arch % 10) as i64),
                    ])),
                })
            }
            Builtin::Ceil | Builtin::Floor => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                match &a.v {
                    V::Int(i) => Ok(V::Int(*i)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => float_to_int(
                        if b == Builtin::Ceil {
                            f.ceil()
                        } else {
                            f.floor()
                        },
                        a.span,
                    ),
                    other => Err(type_err(
                        format!("`{fname}` needs a number, not {}", describe(other)),
                        a.span,
                    )),
                }
            }
            Builtin::Log2 | Builtin::Sqrt => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let Some(x) = num_f(&a.v) else {
                    return Err(type_err(
                        format!("`{fname}` needs a number, not {}", describe(&a.v)),
                        a.span,
                    ));
                };
                let bad = if b == Builtin::Log2 {
                    x <= 0.0
                } else {
                    x < 0.0
                };
                if bad {
                    return Err(err(ErrorKind::Runtime, "math domain error", a.span));
                }
                Ok(V::Float(if b == Builtin::Log2 {
                    x.log2()
                } else {
                    x.sqrt()
                }))
            }
            Builtin::Gcd => {
                let mut g: i64 = 0;
                while let Some(a) = next() {
                    let mut x = int_of(&a.v, a.span)?.unsigned_abs();
                    let mut y = g.unsigned_abs();
                    while y != 0 {
                        (x, y) = (y, x % y);
                    }
                    g = i64::try_from(x).map_err(|_| overflow(span))?;
                }
                Ok(V::Int(g))
            }
            Builtin::Constexpr => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                Ok(a.v)
            }
            _ => Err(Diagnostic::internal(format!(
                "builtin `{fname}` dispatched twice"
            ))),
        }
    }

    fn min_max(
        &mut self,
        b: Builtin,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let fname = b.name();
        let (mut key, mut default) = (None, None);
        for (k, a) in kwargs {
            match k.as_str() {
                "key" => key = Some(a.v).filter(|k| !matches!(k, V::None)),
                "default" => default = Some(a.v),
                _ => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{fname}` got an unexpected keyword argument `{k}`"),
                        a.at,
                    ))
                }
            }
        }
        let items = match args.len() {
            0 => return Err(arity(fname, "at least 1", 0, span)),
            1 => {
                let a = args.into_iter().next().expect("one argument");
                self.seq(a.v, a.span)?
            }
            _ => args.into_iter().map(|a| a.v).collect(),
        };
        if items.is_empty() {
            return default.ok_or_else(|| {
                err(
                    ErrorKind::Runtime,
                    format!("`{fname}` of an empty sequence"),
                    span,
                )
            });
        }
        let mut best: Option<(V<'a>, V<'a>)> = None;
        for x in items {
            let k = match &key {
                Some(f) => self.call1(f.clone(), vec![x.clone()], span)?,
                None => x.clone(),
            };
            let better = match &best {
                None => true,
                Some((bk, _)) => {
                    let o = order(&k, bk, span)?;
                    if b == Builtin::Min {
                        o == Some(Ordering::Less)
                    } else {
                        o == Some(Ordering::Greater)
                    }
                }
            };
            if better {
                best = Some((k, x));
            }
        }
        Ok(best.map(|(_, x)| x).unwrap_or(V::None))
    }

    pub(super) fn sort(
        &mut self,
        items: Vec<V<'a>>,
        key: Option<V<'a>>,
        reverse: bool,
        span: Span,
    ) -> Result<Vec<V<'a>>> {
        self.charge(items.len() as u64, span)?;
        let mut keyed = vec![];
        for x in items {
            let k = match &key {
                Some(f) => self.call1(f.clone(), vec![x.clone()], span)?,
                None => x.clone(),
            };
            keyed.push((k, x));
        }
        let mut failure = None;
        keyed.sort_by(|(a, _), (b, _)| {
            let (a, b) = if reverse { (b, a) } else { (a, b) };
            match order(a, b, span) {
                Ok(o) => o.unwrap_or(Ordering::Equal),
                Err(d) => {
                    failure.get_or_insert(d);
                    Ordering::Equal
                }
            }
        });
        match failure {
            Some(d) => Err(d),
            None => Ok(keyed.into_iter().map(|(_, x)| x).collect()),
        }
    }

    pub(super) fn dict_update(&mut self, d: &DictRef<'a>, from: V<'a>, span: Span) -> Result<()> {
        if let V::Dict(o) = &from {
            let entries = o.borrow().clone();
            for (k, v) in entries {
                dict_set(d, k, v, span)?;
            }
            return Ok(());
        }
        for pair in self.seq(from, span)? {
            let kv = self.seq(pair, span)?;
            let [k, v] = <[V; 2]>::try_from(kv)
                .map_err(|_| type_err("dictionary update sequence elements must be pairs", span))?;
            dict_set(d, k, v, span)?;
        }
        Ok(())
    }

    fn make_config(
        &mut self,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        const NAMES: [&str; 7] = [
            "kwargs",
            "num_warps",
            "num_stages",
            "num_ctas",
            "maxnreg",
            "pre_hook",
            "ir_override",
        ];
        let fname = "triton.Config";
        let mut known = vec![];
        for (k, a) in kwargs {
            if !NAMES.contains(&k.as_str()) {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`triton.Config` has no keyword argument `{k}`"),
                    a.at,
                )
                .with_note("triton.Config takes kwargs, num_warps, num_stages, num_ctas, maxnreg, pre_hook and ir_override"));
            }
            known.push((k, a));
        }
        let p = Self::bind(fname, &NAMES, args, known, span)?;
        let mut p = p.into_iter();
        let kw = p.next().flatten();
        let count = |a: Option<A<'a>>, what: &str, min: i64| -> Result<Option<u32>> {
            let Some(a) = a else { return Ok(None) };
            match &a.v {
                V::None => Ok(None),
                V::Int(i) if *i >= min && *i <= u32::MAX as i64 => Ok(Some(*i as u32)),
                other => Err(type_err(
                    format!(
                        "`{what}` must be an int of at least {min}, not {}",
                        py_repr(other)
                    ),
                    a.at,
                )),
            }
        };
        let num_warps = count(p.next().flatten(), "num_warps", 1)?;
        let num_stages = count(p.next().flatten(), "num_stages", 0)?;
        if let Some(a) = p.next().flatten() {
            if !matches!(a.v, V::None | V::Int(1)) {
                return Err(err(
                    ErrorKind::Unsupported,
                    format!("`num_ctas={}` is not supported: tilewise launches one program per thread block (num_ctas=1)", py_repr(&a.v)),
                    a.at,
                ));
            }
        }
        if let Some(a) = p.next().flatten() {
            if !matches!(a.v, V::None) {
                return Err(err(
                    ErrorKind::Unsupported,
                    "`maxnreg=` in triton.Config is not supported by tilewise",
                    a.at,
                ));
            }
        }
        let pre_hook = match p.next().flatten() {
            None => None,
            Some(a) => match a.v {
                V::None => None,
                V::Func(f) => Some(f),
                other => {
                    return Err(type_err(
                        format!(
                            "`pre_hook` must be a function of this file, not {}",
                            describe(&other)
                        ),
                        a.at,
                    ))
                }
            },
        };
        if let Some(a) = p.next().flatten() {
            if !matches!(a.v, V::None) {
                return Err(err(
                    ErrorKind::Unsupported,
                    "`ir_override=` in triton.Config is not supported by tilewise",
                    a.at,
                ));
            }
        }
        let Some(kw) = kw else {
            return Err(missing(fname, "kwargs", span));
        };
        if !matches!(kw.v, V::Dict(_)) {
            return Err(type_err(
                format!(
                    "the meta-parameters of triton.Config must be a dict, not {}",
                    describe(&kw.v)
                ),
                kw.span,
            ));
        }
        Ok(V::Config(Rc::new(RefCell::new(ConfigObj {
            kwargs: kw.v,
            num_warps,
            num_stages,
            pre_hook,
            span,
        }))))
    }
}
