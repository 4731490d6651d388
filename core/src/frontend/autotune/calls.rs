//! Functions written in configuration code and calls: making a function value
//! (`def`, `lambda`, defaults, closures), evaluating a call's arguments (`*` and `**`
//! unpacking), dispatching on the callee, and binding arguments to parameters.

use super::errors::type_err;
use super::host::{Flow, Frame, Host};
use super::values::{describe, Func, Scope, Site, A, V};
use super::OwnedFn;
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::parse::span_of;
use crate::frontend::tracer::err;
use rustpython_parser::ast::{self, Expr};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

impl<'a> Host<'a> {
    pub(super) fn make_func(&mut self, site: Site<'a>, f: &mut Frame<'a>) -> Result<V<'a>> {
        let (name, args, span): (Rc<str>, &'a ast::Arguments, Span) = match site {
            Site::Def(d) => (d.name.as_str().into(), &d.args, span_of(d)),
            Site::Lambda(l) => ("<lambda>".into(), &l.args, span_of(l)),
        };
        let mut defaults = vec![];
        for p in args
            .posonlyargs
            .iter()
            .chain(&args.args)
            .chain(&args.kwonlyargs)
        {
            defaults.push(match &p.default {
                Some(d) => Some(self.eval(d, f)?),
                None => None,
            });
        }
        Ok(V::Func(Rc::new(Func {
            name,
            site,
            defaults,
            closure: f.captured(),
            span,
        })))
    }

    /// A prune function kept by a declaration, made again in this module's globals.
    pub(super) fn owned_func(&mut self, def: &'a OwnedFn) -> Result<Rc<Func<'a>>> {
        let site = match def {
            OwnedFn::Def(d) => Site::Def(d),
            OwnedFn::Lambda(l) => Site::Lambda(l),
        };
        match self.make_func(site, &mut Frame::module())? {
            V::Func(f) => Ok(f),
            _ => unreachable!("make_func makes functions"),
        }
    }

    pub(super) fn eval_call(&mut self, c: &'a ast::ExprCall, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(c);
        let callee = self.eval(&c.func, f)?;
        let mut args = vec![];
        for a in &c.args {
            let aspan = span_of(a);
            if let Expr::Starred(st) = a {
                let v = self.eval(&st.value, f)?;
                for x in self.seq(v, aspan)? {
                    args.push(A {
                        v: x,
                        span: aspan,
                        at: aspan,
                        expr: None,
                    });
                }
            } else {
                let v = self.eval(a, f)?;
                args.push(A {
                    v,
                    span: aspan,
                    at: aspan,
                    expr: Some(a),
                });
            }
        }
        let mut kwargs: Vec<(String, A<'a>)> = vec![];
        for k in &c.keywords {
            let kspan = span_of(k);
            let vspan = span_of(&k.value);
            let v = self.eval(&k.value, f)?;
            match &k.arg {
                Some(name) => kwargs.push((
                    name.to_string(),
                    A {
                        v,
                        span: vspan,
                        at: kspan,
                        expr: Some(&k.value),
                    },
                )),
                None => {
                    let V::Dict(d) = &v else {
                        return Err(type_err(
                            format!("cannot unpack {} with `**`", describe(&v)),
                            kspan,
                        ));
                    };
                    for (kk, vv) in d.borrow().iter() {
                        let V::Str(name) = kk else {
                            return Err(type_err("keywords must be strings", kspan));
                        };
                        kwargs.push((
                            name.to_string(),
                            A {
                                v: vv.clone(),
                                span: vspan,
                                at: kspan,
                                expr: None,
                            },
                        ));
                    }
                }
            }
        }
        self.call(callee, args, kwargs, span)
    }

    fn call(
        &mut self,
        callee: V<'a>,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        self.step(span)?;
        match callee {
            V::Func(func) => self.call_func(&func, args, kwargs, span),
            V::Builtin(b) => self.call_builtin(b, args, kwargs, span),
            V::Method(m) => {
                let (recv, name) = (&m.0, m.1);
                self.call_method(recv, name, args, kwargs, span)
            }
            V::Path(p) => Err(err(
                ErrorKind::Unsupported,
                format!("`{p}(...)` cannot be evaluated: tilewise evaluates configuration code without Python and does not know this function"),
                span,
            )
            .with_note("configuration code may use Python builtins, triton.Config, triton.cdiv, triton.next_power_of_2, triton.runtime.driver.active.get_current_target(), torch.cuda.get_device_capability(), torch.cuda.get_device_properties(..), itertools.product, math and functions of this file")),
            V::Jit(n) => Err(err(
                ErrorKind::Unsupported,
                format!("the jit function `{n}` cannot be called from configuration code"),
                span,
            )),
            other => Err(type_err(
                format!("{} is not callable", describe(&other)),
                span,
            )),
        }
    }

    pub(super) fn call_func(
        &mut self,
        func: &Rc<Func<'a>>,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let a = func.args();
        let npos = a.posonlyargs.len() + a.args.len();
        let nkw = a.kwonlyargs.len();
        let name = &func.name;
        let mut slots: Vec<Option<V<'a>>> = vec![None; npos + nkw];
        let mut extra = vec![];
        for (i, x) in args.into_iter().enumerate() {
            if i < npos {
                slots[i] = Some(x.v);
            } else if a.vararg.is_some() {
                extra.push(x.v);
            } else {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{name}` takes {npos} positional arguments but more were given"),
                    span,
                ));
            }
        }
        let mut extra_kw = vec![];
        for (k, x) in kwargs {
            let idx = a
                .args
                .iter()
                .position(|p| p.def.arg.as_str() == k)
                .map(|i| a.posonlyargs.len() + i)
                .or_else(|| {
                    a.kwonlyargs
                        .iter()
                        .position(|p| p.def.arg.as_str() == k)
                        .map(|i| npos + i)
                });
            match idx {
                Some(i) => {
                    if slots[i].is_some() {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("`{name}` got multiple values for argument `{k}`"),
                            span,
                        ));
                    }
                    slots[i] = Some(x.v);
                }
                None if a.kwarg.is_some() => extra_kw.push((V::str(&k), x.v)),
                None => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{name}` got an unexpected keyword argument `{k}`"),
                        span,
                    ))
                }
            }
        }
        let scope: Scope<'a> = Rc::new(RefCell::new(HashMap::new()));
        let params = a.posonlyargs.iter().chain(&a.args).chain(&a.kwonlyargs);
        for (i, p) in params.enumerate() {
            let v = match slots[i].take().or_else(|| func.defaults[i].clone()) {
                Some(v) => v,
                None => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{name}` is missing the argument `{}`", p.def.arg),
                        span,
                    ))
                }
            };
            scope.borrow_mut().insert(p.def.arg.to_string(), v);
        }
        if let Some(va) = &a.vararg {
            scope
                .borrow_mut()
                .insert(va.arg.to_string(), V::tuple(extra));
        }
        if let Some(kw) = &a.kwarg {
            scope
                .borrow_mut()
                .insert(kw.arg.to_string(), V::dict(extra_kw));
        }
        let mut frame = Frame {
            locals: Some(scope),
            closure: func.closure.clone(),
            globals: vec![],
            nonlocals: vec![],
        };
        let site = func.site;
        self.nested(span, |h| match site {
            Site::Def(d) => match h.exec_block(&d.body, &mut frame)? {
                Flow::Return(v) => Ok(v),
                _ => Ok(V::None),
            },
            Site::Lambda(l) => h.eval(&l.body, &mut frame),
        })
    }

    /// Binds a builtin's arguments to its parameter `names`.
    pub(super) fn bind(
        fname: &str,
        names: &[&str],
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<Vec<Option<A<'a>>>> {
        let mut out: Vec<Option<A<'a>>> = vec![None; names.len()];
        if args.len() > names.len() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "`{fname}` takes at most {} positional arguments, {} given",
                    names.len(),
                    args.len()
                ),
                span,
            ));
        }
        for (i, a) in args.into_iter().enumerate() {
            out[i] = Some(a);
        }
        for (k, a) in kwargs {
            let Some(i) = names.iter().position(|n| *n == k) else {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{fname}` got an unexpected keyword argument `{k}`"),
                    a.at,
                ));
            };
            if out[i].is_some() {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{fname}` got multiple values for argument `{k}`"),
                    a.at,
                ));
            }
            out[i] = Some(a);
        }
        Ok(out)
    }

    /// Calls `f` with positional values.
    pub(super) fn call1(&mut self, f: V<'a>, xs: Vec<V<'a>>, span: Span) -> Result<V<'a>> {
        let args = xs
            .into_iter()
            .map(|v| A {
                v,
                span,
                at: span,
                expr: None,
            })
            .collect();
        self.call(f, args, vec![], span)
    }
}
