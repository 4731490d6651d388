//! Attributes and methods of values: reading an attribute (module paths, config and
//! target fields, a tensor argument's `.dtype`), setting a config's fields, and the methods
//! of lists, tuples, dicts, strings, configs and tensor arguments.

use super::containers::{dict_pos, dict_set, index, seq_search};
use super::errors::{arity, key_error, no_attr, overflow, type_err};
use super::host::Host;
use super::paths::resolve;
use super::values::{describe, int_of, truthy, DictRef, Flavor, A, V};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::tracer::err;
use std::cell::RefCell;
use std::rc::Rc;

impl<'a> Host<'a> {
    pub(super) fn set_attr(
        &mut self,
        base: &V<'a>,
        name: &str,
        v: V<'a>,
        span: Span,
    ) -> Result<()> {
        if let V::HookArg(a) = base {
            let mut a = a.borrow_mut();
            if let (Some(d), "block_shape") = (a.descriptor.as_mut(), name) {
                let items = match &v {
                    V::List(l) => l.borrow().clone(),
                    V::Tuple(t) => t.to_vec(),
                    other => {
                        return Err(type_err(
                            format!(
                                "a descriptor's `block_shape` must be a list of ints, not {}",
                                describe(other)
                            ),
                            span,
                        ))
                    }
                };
                d.2 = V::list(items);
                return Ok(());
            }
        }
        if let V::Config(c) = base {
            let mut c = c.borrow_mut();
            match name {
                "kwargs" if matches!(v, V::Dict(_)) => {
                    c.kwargs = v;
                    return Ok(());
                }
                "num_warps" | "num_stages" => {
                    let n = match v {
                        V::None => None,
                        V::Int(i) => Some(u32::try_from(i).map_err(|_| {
                            type_err(format!("`{name}` must be a non-negative int"), span)
                        })?),
                        other => {
                            return Err(type_err(
                                format!("`{name}` must be an int, not {}", describe(&other)),
                                span,
                            ))
                        }
                    };
                    if name == "num_warps" {
                        c.num_warps = n;
                    } else {
                        c.num_stages = n;
                    }
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(err(
            ErrorKind::Unsupported,
            format!(
                "setting `.{name}` on {} is not supported in configuration code",
                describe(base)
            ),
            span,
        ))
    }

    pub(super) fn getattr(&mut self, v: V<'a>, name: &str, span: Span) -> Result<V<'a>> {
        const LIST: &[&str] = &[
            "append", "extend", "insert", "pop", "copy", "index", "count", "remove", "reverse",
            "sort", "clear",
        ];
        const DICT: &[&str] = &[
            "get",
            "items",
            "keys",
            "values",
            "copy",
            "update",
            "pop",
            "setdefault",
        ];
        const STR: &[&str] = &[
            "startswith",
            "endswith",
            "lower",
            "upper",
            "join",
            "strip",
            "split",
            "replace",
        ];
        const TUPLE: &[&str] = &["index", "count"];
        let method = |table: &[&'static str]| table.iter().copied().find(|m| *m == name);
        let found = match &v {
            V::Path(p) => return Ok(resolve(&format!("{p}.{name}"))),
            V::Config(c) => {
                let c = c.borrow();
                return match name {
                    "kwargs" => Ok(c.kwargs.clone()),
                    "num_warps" => Ok(V::Int(c.num_warps.unwrap_or(4) as i64)),
                    "num_stages" => Ok(V::Int(c.num_stages.unwrap_or(3) as i64)),
                    "num_ctas" => Ok(V::Int(1)),
                    "pre_hook" => Ok(c.pre_hook.clone().map_or(V::None, V::Func)),
                    "maxnreg" | "ir_override" => Ok(V::None),
                    "all_kwargs" => {
                        drop(c);
                        Ok(V::Method(Rc::new((v, "all_kwargs"))))
                    }
                    _ => Err(no_attr(&v, name, span)),
                };
            }
            V::Target => {
                return match name {
                    "backend" => Ok(V::str(&self.target.backend)),
                    "arch" => Ok(V::Int(self.target.arch as i64)),
                    "warp_size" => Ok(V::Int(self.target.warp_size as i64)),
                    _ => Err(no_attr(&v, name, span)),
                }
            }
            V::DeviceProperties => {
                return match name {
                    "multi_processor_count" => Ok(V::Int(self.target.multiprocessors as i64)),
                    "major" => Ok(V::Int((self.target.arch / 10) as i64)),
                    "minor" => Ok(V::Int((self.target.arch % 10) as i64)),
                    "warp_size" => Ok(V::Int(self.target.warp_size as i64)),
                    _ => Err(no_attr(&v, name, span)),
                }
            }
            V::HookArg(a) => {
                let o = a.borrow();
                return match (&o.descriptor, name) {
                    (Some(d), "block_shape") => Ok(d.2.clone()),
                    (Some(d), "shape") => Ok(V::list(d.0.iter().map(|&x| V::Int(x)).collect())),
                    (Some(d), "strides") => Ok(V::list(d.1.iter().map(|&x| V::Int(x)).collect())),
                    (Some(_), "base") => Ok(V::Tensor(o.dtype, o.numel)),
                    (Some(_), _) => Err(err(
                        ErrorKind::Unsupported,
                        format!("a tensor descriptor's `.{name}` is not known to configuration code (it has .block_shape, .shape, .strides and .base)"),
                        span,
                    )),
                    (None, "zero_") => {
                        drop(o);
                        Ok(V::Method(Rc::new((v, "zero_"))))
                    }
                    (None, _) => {
                        let t = V::Tensor(o.dtype, o.numel);
                        drop(o);
                        self.getattr(t, name, span)
                    }
                };
            }
            V::Tensor(d, _) => match name {
                "dtype" => return Ok(V::DType(*d, Flavor::Torch)),
                "element_size" => Some("element_size"),
                "numel" => Some("numel"),
                _ => {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("a tensor argument's `.{name}` is not known to configuration code (it has .dtype, .element_size() and .numel(), and in a pre_hook .zero_())"),
                        span,
                    ))
                }
            },
            V::DType(d, Flavor::Torch) if name == "itemsize" => {
                return Ok(V::Int(d.size_bytes() as i64))
            }
            V::DType(d, Flavor::Triton) if name == "primitive_bitwidth" => {
                return Ok(V::Int(d.bits() as i64))
            }
            V::Func(f) if name == "__name__" => return Ok(V::str(&f.name)),
            V::List(_) => method(LIST),
            V::Dict(_) => method(DICT),
            V::Str(_) => method(STR),
            V::Tuple(_) => method(TUPLE),
            _ => None,
        };
        match found {
            Some(m) => Ok(V::Method(Rc::new((v, m)))),
            None => Err(no_attr(&v, name, span)),
        }
    }

    pub(super) fn call_method(
        &mut self,
        recv: &V<'a>,
        name: &'static str,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        if let V::List(l) = recv {
            if name == "sort" {
                let p = Self::bind("list.sort", &["key", "reverse"], vec![], kwargs, span)?;
                if !args.is_empty() {
                    return Err(arity("list.sort", "0 positional", args.len(), span));
                }
                let [key, rev] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let key = key.map(|k| k.v).filter(|k| !matches!(k, V::None));
                let rev = rev.is_some_and(|r| truthy(&r.v));
                let items = l.borrow().clone();
                let sorted = self.sort(items, key, rev, span)?;
                *l.borrow_mut() = sorted;
                return Ok(V::None);
            }
        }
        if let Some((k, a)) = kwargs.first() {
            return Err(err(
                ErrorKind::Argument,
                format!("`.{name}()` got an unexpected keyword argument `{k}`"),
                a.at,
            ));
        }
        let n = args.len();
        let vals: Vec<V<'a>> = args.into_iter().map(|a| a.v).collect();
        let want = |k: usize| -> Result<()> {
            if n == k {
                Ok(())
            } else {
                Err(arity(&format!(".{name}"), &k.to_string(), n, span))
            }
        };
        match recv {
            V::List(l) => match name {
                "append" => {
                    want(1)?;
                    self.step(span)?;
                    l.borrow_mut().push(vals[0].clone());
                    Ok(V::None)
                }
                "extend" => {
                    want(1)?;
                    let items = self.seq(vals[0].clone(), span)?;
                    self.charge(items.len() as u64, span)?;
                    l.borrow_mut().extend(items);
                    Ok(V::None)
                }
                "insert" => {
                    want(2)?;
                    let len = l.borrow().len() as i64;
                    let i = int_of(&vals[0], span)?;
                    let i = if i < 0 { (i + len).max(0) } else { i.min(len) };
                    l.borrow_mut().insert(i as usize, vals[1].clone());
                    Ok(V::None)
                }
                "pop" => {
                    let len = l.borrow().len();
                    let i = match vals.as_slice() {
                        [] if len > 0 => len - 1,
                        [] => return Err(err(ErrorKind::Runtime, "pop from empty list", span)),
                        [i] => index(i, len, span)?,
                        _ => return Err(arity(".pop", "at most 1", n, span)),
                    };
                    Ok(l.borrow_mut().remove(i))
                }
                "copy" => {
                    want(0)?;
                    Ok(V::list(l.borrow().clone()))
                }
                "clear" => {
                    want(0)?;
                    l.borrow_mut().clear();
                    Ok(V::None)
                }
                "reverse" => {
                    want(0)?;
                    l.borrow_mut().reverse();
                    Ok(V::None)
                }
                "index" | "count" | "remove" => {
                    want(1)?;
                    let items = l.borrow().clone();
                    let r = seq_search(name, &items, &vals[0], span)?;
                    if name == "remove" {
                        if let V::Int(i) = r {
                            l.borrow_mut().remove(i as usize);
                        }
                        return Ok(V::None);
                    }
                    Ok(r)
                }
                _ => Err(no_attr(recv, name, span)),
            },
            V::Tuple(t) => {
                want(1)?;
                seq_search(name, t, &vals[0], span)
            }
            V::Dict(d) => match name {
                "get" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".get", "1 or 2", n, span));
                    }
                    let pos = dict_pos(d, &vals[0], span)?;
                    Ok(match pos {
                        Some(p) => d.borrow()[p].1.clone(),
                        None => vals.get(1).cloned().unwrap_or(V::None),
                    })
                }
                "items" | "keys" | "values" => {
                    want(0)?;
                    Ok(V::list(
                        d.borrow()
                            .iter()
                            .map(|(k, v)| match name {
                                "items" => V::tuple(vec![k.clone(), v.clone()]),
                                "keys" => k.clone(),
                                _ => v.clone(),
                            })
                            .collect(),
                    ))
                }
                "copy" => {
                    want(0)?;
                    Ok(V::dict(d.borrow().clone()))
                }
                "update" => {
                    want(1)?;
                    self.dict_update(d, vals[0].clone(), span)?;
                    Ok(V::None)
                }
                "pop" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".pop", "1 or 2", n, span));
                    }
                    match dict_pos(d, &vals[0], span)? {
                        Some(p) => Ok(d.borrow_mut().remove(p).1),
                        None => vals
                            .get(1)
                            .cloned()
                            .ok_or_else(|| key_error(&vals[0], span)),
                    }
                }
                "setdefault" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".setdefault", "1 or 2", n, span));
                    }
                    match dict_pos(d, &vals[0], span)? {
                        Some(p) => Ok(d.borrow()[p].1.clone()),
                        None => {
                            let v = vals.get(1).cloned().unwrap_or(V::None);
                            dict_set(d, vals[0].clone(), v.clone(), span)?;
                            Ok(v)
                        }
                    }
                }
                _ => Err(no_attr(recv, name, span)),
            },
            V::Str(s) => {
                let arg_str = |i: usize| -> Result<Rc<str>> {
                    match vals.get(i) {
                        Some(V::Str(x)) => Ok(x.clone()),
                        Some(other) => Err(type_err(
                            format!("`.{name}()` needs a str, not {}", describe(other)),
                            span,
                        )),
                        None => Err(arity(&format!(".{name}"), "more", n, span)),
                    }
                };
                match name {
                    "startswith" | "endswith" => {
                        want(1)?;
                        let pats: Vec<Rc<str>> = match &vals[0] {
                            V::Tuple(t) => t
                                .iter()
                                .map(|x| match x {
                                    V::Str(p) => Ok(p.clone()),
                                    other => Err(type_err(
                                        format!("`.{name}()` needs strs, not {}", describe(other)),
                                        span,
                                    )),
                                })
                                .collect::<Result<_>>()?,
                            _ => vec![arg_str(0)?],
                        };
                        Ok(V::Bool(pats.iter().any(|p| {
                            if name == "startswith" {
                                s.starts_with(&**p)
                            } else {
                                s.ends_with(&**p)
                            }
                        })))
                    }
                    "lower" => {
                        want(0)?;
                        Ok(V::Str(s.to_lowercase().into()))
                    }
                    "upper" => {
                        want(0)?;
                        Ok(V::Str(s.to_uppercase().into()))
                    }
                    "strip" => {
                        want(0)?;
                        Ok(V::str(s.trim()))
                    }
                    "split" => {
                        let parts: Vec<V> = match n {
                            0 => s.split_whitespace().map(V::str).collect(),
                            1 => {
                                let sep = arg_str(0)?;
                                if sep.is_empty() {
                                    return Err(err(ErrorKind::Runtime, "empty separator", span));
                                }
                                s.split(&*sep).map(V::str).collect()
                            }
                            _ => return Err(arity(".split", "at most 1", n, span)),
                        };
                        Ok(V::list(parts))
                    }
                    "replace" => {
                        want(2)?;
                        let (a, b) = (arg_str(0)?, arg_str(1)?);
                        Ok(V::Str(s.replace(&*a, &b).into()))
                    }
                    "join" => {
                        want(1)?;
                        let mut parts = vec![];
                        for x in self.seq(vals[0].clone(), span)? {
                            match x {
                                V::Str(p) => parts.push(p.to_string()),
                                other => {
                                    return Err(type_err(
                                        format!("`.join()` needs strs, not {}", describe(&other)),
                                        span,
                                    ))
                                }
                            }
                        }
                        Ok(V::Str(parts.join(s).into()))
                    }
                    _ => Err(no_attr(recv, name, span)),
                }
            }
            V::Config(c) => {
                want(0)?;
                let c = c.borrow();
                let mut entries = match &c.kwargs {
                    V::Dict(d) => d.borrow().clone(),
                    _ => vec![],
                };
                let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
                entries.push((V::str("num_warps"), V::Int(c.num_warps.unwrap_or(4) as i64)));
                entries.push((V::str("num_ctas"), V::Int(1)));
                entries.push((
                    V::str("num_stages"),
                    V::Int(c.num_stages.unwrap_or(3) as i64),
                ));
                for (k, v) in entries {
                    dict_set(&out, k, v, span)?;
                }
                Ok(V::Dict(out))
            }
            V::HookArg(a) if name == "zero_" => {
                want(0)?;
                a.borrow_mut().zeroed = true;
                Ok(recv.clone())
            }
            V::Tensor(d, numel) => {
                want(0)?;
                Ok(V::Int(if name == "numel" {
                    i64::try_from(*numel).map_err(|_| overflow(span))?
                } else {
                    d.size_bytes() as i64
                }))
            }
            _ => Err(no_attr(recv, name, span)),
        }
    }
}
