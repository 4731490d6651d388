//! Executing statements: blocks and control flow (`if`, `for`, `while`, `break`,
//! `return`), assignment to names, items and unpacked targets, augmented assignment, `del`,
//! `def`, `assert` and `raise`; anything else is refused at the statement.

use super::builtins::Builtin;
use super::containers::{dict_pos, dict_set, index};
use super::errors::{key_error, type_err};
use super::host::{Flow, Frame, Host};
use super::repr::py_str;
use super::values::{describe, truthy, Site, V};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::parse::span_of;
use crate::frontend::tracer::err;
use rustpython_parser::ast::{self, Expr, Operator, Stmt};

impl<'a> Host<'a> {
    pub(super) fn exec_block(&mut self, body: &'a [Stmt], f: &mut Frame<'a>) -> Result<Flow<'a>> {
        for s in body {
            let flow = self.exec(s, f)?;
            if !matches!(flow, Flow::Normal) {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    pub(super) fn exec(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(s);
        self.step(span)?;
        self.nested(span, |h| h.exec_inner(s, f))
    }

    fn exec_inner(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(s);
        match s {
            Stmt::Expr(e) => {
                self.eval(&e.value, f)?;
            }
            Stmt::Assign(a) => {
                let v = self.eval(&a.value, f)?;
                for t in &a.targets {
                    self.assign(t, v.clone(), f)?;
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let v = self.eval(v, f)?;
                    self.assign(&a.target, v, f)?;
                }
            }
            Stmt::AugAssign(a) => self.aug_assign(a, f)?,
            Stmt::If(i) => {
                let t = self.eval(&i.test, f)?;
                let body = if truthy(&t) { &i.body } else { &i.orelse };
                return self.exec_block(body, f);
            }
            Stmt::For(fo) => return self.exec_for(fo, f),
            Stmt::While(w) => loop {
                self.step(span)?;
                let t = self.eval(&w.test, f)?;
                if !truthy(&t) {
                    return self.exec_block(&w.orelse, f);
                }
                match self.exec_block(&w.body, f)? {
                    Flow::Break => break,
                    Flow::Return(v) => return Ok(Flow::Return(v)),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            Stmt::Break(_) => return Ok(Flow::Break),
            Stmt::Continue(_) => return Ok(Flow::Continue),
            Stmt::Return(r) => {
                let v = match &r.value {
                    Some(e) => self.eval(e, f)?,
                    None => V::None,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Pass(_) => {}
            Stmt::FunctionDef(d) => {
                let mut v = self.make_func(Site::Def(d), f)?;
                for dec in d.decorator_list.iter().rev() {
                    let dv = self.eval(dec, f)?;
                    v = match dv {
                        V::Builtin(Builtin::Cache) => v,
                        other => {
                            return Err(err(
                                ErrorKind::Unsupported,
                                format!(
                                    "the decorator {} on `{}` cannot be evaluated",
                                    describe(&other),
                                    d.name
                                ),
                                span_of(dec),
                            ))
                        }
                    };
                }
                self.store(d.name.as_str(), v, f);
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.import(s, f)?,
            Stmt::Global(g) => f.globals.extend(g.names.iter().map(|n| n.to_string())),
            Stmt::Nonlocal(n) => f.nonlocals.extend(n.names.iter().map(|n| n.to_string())),
            Stmt::Assert(a) => {
                let t = self.eval(&a.test, f)?;
                if !truthy(&t) {
                    let msg = match &a.msg {
                        Some(m) => {
                            let m = self.eval(m, f)?;
                            format!(": {}", py_str(&m))
                        }
                        None => String::new(),
                    };
                    return Err(err(
                        ErrorKind::Runtime,
                        format!("assertion failed in configuration code{msg}"),
                        span,
                    ));
                }
            }
            Stmt::Raise(_) => {
                let text = self
                    .m
                    .source
                    .text
                    .get(span.start as usize..span.end as usize)
                    .unwrap_or("raise");
                return Err(err(
                    ErrorKind::Runtime,
                    format!("configuration code raised an exception: `{text}`"),
                    span,
                ));
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.delete(t, f)?;
                }
            }
            other => {
                let what = match other {
                    Stmt::ClassDef(_) => "class definitions are",
                    Stmt::AsyncFunctionDef(_) | Stmt::AsyncFor(_) | Stmt::AsyncWith(_) => {
                        "async code is"
                    }
                    Stmt::With(_) => "`with` statements are",
                    Stmt::Try(_) | Stmt::TryStar(_) => "`try` statements are",
                    Stmt::Match(_) => "`match` statements are",
                    _ => "this statement is",
                };
                return Err(err(
                    ErrorKind::Unsupported,
                    format!("{what} not supported in configuration code"),
                    span,
                ));
            }
        }
        Ok(Flow::Normal)
    }

    fn exec_for(&mut self, fo: &'a ast::StmtFor, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(fo);
        let it = self.eval(&fo.iter, f)?;
        let items = self.iter(it, span_of(&*fo.iter))?;
        for item in items {
            self.step(span)?;
            self.assign(&fo.target, item, f)?;
            match self.exec_block(&fo.body, f)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return(v) => return Ok(Flow::Return(v)),
                Flow::Normal | Flow::Continue => {}
            }
        }
        self.exec_block(&fo.orelse, f)
    }

    pub(super) fn assign(&mut self, target: &'a Expr, v: V<'a>, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(target);
        match target {
            Expr::Name(n) => {
                self.store(n.id.as_str(), v, f);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let items = self.seq(v, span)?;
                let star = elts.iter().position(|e| matches!(e, Expr::Starred(_)));
                match star {
                    None => {
                        if items.len() != elts.len() {
                            return Err(err(
                                ErrorKind::Runtime,
                                format!(
                                    "cannot unpack {} values into {} names",
                                    items.len(),
                                    elts.len()
                                ),
                                span,
                            ));
                        }
                        for (t, x) in elts.iter().zip(items) {
                            self.assign(t, x, f)?;
                        }
                    }
                    Some(si) => {
                        let after = elts.len() - si - 1;
                        if items.len() < si + after {
                            return Err(err(
                                ErrorKind::Runtime,
                                format!(
                                    "cannot unpack {} values into {} or more names",
                                    items.len(),
                                    elts.len() - 1
                                ),
                                span,
                            ));
                        }
                        let mid = items.len() - after;
                        for (t, x) in elts[..si].iter().zip(items[..si].iter()) {
                            self.assign(t, x.clone(), f)?;
                        }
                        let Expr::Starred(st) = &elts[si] else {
                            unreachable!("position found a starred target")
                        };
                        self.assign(&st.value, V::list(items[si..mid].to_vec()), f)?;
                        for (t, x) in elts[si + 1..].iter().zip(items[mid..].iter()) {
                            self.assign(t, x.clone(), f)?;
                        }
                    }
                }
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                self.set_item(&base, key, v, span)
            }
            Expr::Attribute(a) => {
                let base = self.eval(&a.value, f)?;
                self.set_attr(&base, a.attr.as_str(), v, span)
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this assignment target is not supported in configuration code",
                span,
            )),
        }
    }

    fn set_item(&mut self, base: &V<'a>, key: V<'a>, v: V<'a>, span: Span) -> Result<()> {
        match base {
            V::List(l) => {
                let len = l.borrow().len();
                let i = index(&key, len, span)?;
                l.borrow_mut()[i] = v;
                Ok(())
            }
            V::Dict(d) => dict_set(d, key, v, span),
            other => Err(type_err(
                format!("{} does not support item assignment", describe(other)),
                span,
            )),
        }
    }

    fn delete(&mut self, t: &'a Expr, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(t);
        match t {
            Expr::Name(n) => {
                let name = n.id.as_str();
                let removed = match &f.locals {
                    Some(l) if !f.globals.iter().any(|g| g == name) => {
                        l.borrow_mut().remove(name).is_some()
                    }
                    _ => self.globals.remove(name).is_some(),
                };
                if !removed {
                    return Err(err(
                        ErrorKind::Name,
                        format!("name `{name}` is not defined"),
                        span,
                    ));
                }
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                match &base {
                    V::List(l) => {
                        let len = l.borrow().len();
                        let i = index(&key, len, span)?;
                        l.borrow_mut().remove(i);
                        Ok(())
                    }
                    V::Dict(d) => {
                        let pos = dict_pos(d, &key, span)?;
                        match pos {
                            Some(p) => {
                                d.borrow_mut().remove(p);
                                Ok(())
                            }
                            None => Err(key_error(&key, span)),
                        }
                    }
                    other => Err(type_err(
                        format!("{} does not support item deletion", describe(other)),
                        span,
                    )),
                }
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this `del` target is not supported in configuration code",
                span,
            )),
        }
    }

    fn aug_assign(&mut self, a: &'a ast::StmtAugAssign, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(a);
        let rhs = self.eval(&a.value, f)?;
        match &*a.target {
            Expr::Name(n) => {
                let cur = self.lookup(n.id.as_str(), span_of(&*a.target), f)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.store(n.id.as_str(), v, f);
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                let cur = self.get_item(&base, &key, span)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.set_item(&base, key, v, span)
            }
            Expr::Attribute(at) => {
                let base = self.eval(&at.value, f)?;
                let cur = self.getattr(base.clone(), at.attr.as_str(), span)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.set_attr(&base, at.attr.as_str(), v, span)
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this assignment target is not supported in configuration code",
                span,
            )),
        }
    }

    /// `cur op= rhs`: lists extend and repeat in place, as in Python.
    fn inplace(&mut self, op: Operator, cur: V<'a>, rhs: V<'a>, span: Span) -> Result<V<'a>> {
        if let V::List(l) = &cur {
            match op {
                Operator::Add => {
                    let extra = self.seq(rhs, span)?;
                    self.charge(extra.len() as u64, span)?;
                    l.borrow_mut().extend(extra);
                    return Ok(cur);
                }
                Operator::Mult => {
                    let n = self.binop(Operator::Mult, cur.clone(), rhs, span)?;
                    if let V::List(new) = n {
                        let items = new.borrow().clone();
                        *l.borrow_mut() = items;
                    }
                    return Ok(cur);
                }
                _ => {}
            }
        }
        self.binop(op, cur, rhs, span)
    }
}
