//! Evaluating expressions: names, displays, subscripts and slices, comparisons,
//! boolean and conditional expressions, f-strings and comprehensions; and iterating over a
//! value.

use super::containers::{dict_pos, dict_set, index, range_len, slice};
use super::errors::{key_error, type_err};
use super::host::{Frame, Host};
use super::ops::{compare, unary};
use super::repr::{py_repr, py_str};
use super::values::{constant, describe, truthy, DictRef, Site, V};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::parse::span_of;
use crate::frontend::tracer::err;
use rustpython_parser::ast::{self, BoolOp, Expr};
use std::cell::RefCell;
use std::rc::Rc;

/// The items of an iteration: a range is stepped through, anything else is listed.
pub(super) enum It<'a> {
    Items(std::vec::IntoIter<V<'a>>),
    Range(i64, i64, i64),
}

impl<'a> Iterator for It<'a> {
    type Item = V<'a>;
    fn next(&mut self) -> Option<V<'a>> {
        match self {
            It::Items(i) => i.next(),
            It::Range(cur, stop, step) => {
                if (*step > 0 && *cur < *stop) || (*step < 0 && *cur > *stop) {
                    let v = *cur;
                    *cur = cur.saturating_add(*step);
                    Some(V::Int(v))
                } else {
                    None
                }
            }
        }
    }
}

impl<'a> Host<'a> {
    // --- iteration ----------------------------------------------------------------

    pub(super) fn iter(&mut self, v: V<'a>, span: Span) -> Result<It<'a>> {
        Ok(match v {
            V::Range(a, b, s) => It::Range(a, b, s),
            other => It::Items(self.seq(other, span)?.into_iter()),
        })
    }

    pub(super) fn seq(&mut self, v: V<'a>, span: Span) -> Result<Vec<V<'a>>> {
        Ok(match v {
            V::List(l) => l.borrow().clone(),
            V::Tuple(t) => t.to_vec(),
            V::Dict(d) => d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            V::Str(s) => s.chars().map(|c| V::Str(c.to_string().into())).collect(),
            V::Range(a, b, s) => {
                let n = range_len(a, b, s);
                self.charge(n, span)?;
                It::Range(a, b, s).collect()
            }
            other => {
                return Err(type_err(
                    format!("cannot iterate over {}", describe(&other)),
                    span,
                ))
            }
        })
    }

    // --- expressions ----------------------------------------------------------------

    pub(super) fn eval(&mut self, e: &'a Expr, f: &mut Frame<'a>) -> Result<V<'a>> {
        self.nested(span_of(e), |h| h.eval_inner(e, f))
    }

    fn eval_inner(&mut self, e: &'a Expr, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(e);
        match e {
            Expr::Constant(c) => constant(&c.value, span),
            Expr::Name(n) => self.lookup(n.id.as_str(), span, f),
            Expr::Attribute(a) => {
                let v = self.eval(&a.value, f)?;
                self.getattr(v, a.attr.as_str(), span)
            }
            Expr::Subscript(s) => self.eval_subscript(s, f),
            Expr::Call(c) => self.eval_call(c, f),
            Expr::BinOp(b) => {
                let l = self.eval(&b.left, f)?;
                let r = self.eval(&b.right, f)?;
                self.binop(b.op, l, r, span)
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand, f)?;
                unary(u.op, v, span)
            }
            Expr::BoolOp(b) => {
                let mut last = V::None;
                for (i, x) in b.values.iter().enumerate() {
                    last = self.eval(x, f)?;
                    let t = truthy(&last);
                    let done = match b.op {
                        BoolOp::And => !t,
                        BoolOp::Or => t,
                    };
                    if done || i + 1 == b.values.len() {
                        break;
                    }
                }
                Ok(last)
            }
            Expr::Compare(c) => self.eval_compare(c, f),
            Expr::IfExp(i) => {
                let t = self.eval(&i.test, f)?;
                if truthy(&t) {
                    self.eval(&i.body, f)
                } else {
                    self.eval(&i.orelse, f)
                }
            }
            Expr::List(l) => Ok(V::list(self.elements(&l.elts, f)?)),
            Expr::Tuple(t) => Ok(V::tuple(self.elements(&t.elts, f)?)),
            Expr::Dict(d) => self.eval_dict(d, f),
            Expr::ListComp(c) => Ok(V::list(self.comp_list(&c.elt, &c.generators, f)?)),
            Expr::GeneratorExp(g) => Ok(V::list(self.comp_list(&g.elt, &g.generators, f)?)),
            Expr::DictComp(d) => self.eval_dict_comp(d, f),
            Expr::Lambda(l) => self.make_func(Site::Lambda(l), f),
            Expr::NamedExpr(n) => {
                let v = self.eval(&n.value, f)?;
                self.assign(&n.target, v.clone(), f)?;
                Ok(v)
            }
            Expr::JoinedStr(j) => {
                let mut s = String::new();
                for part in &j.values {
                    match self.eval(part, f)? {
                        V::Str(x) => s.push_str(&x),
                        other => s.push_str(&py_str(&other)),
                    }
                }
                Ok(V::Str(s.into()))
            }
            Expr::FormattedValue(fv) => {
                if fv.format_spec.is_some() {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "format specifications in f-strings are not supported in configuration code",
                        span,
                    ));
                }
                let v = self.eval(&fv.value, f)?;
                Ok(match fv.conversion {
                    ast::ConversionFlag::Repr => V::Str(py_repr(&v).into()),
                    _ => V::Str(py_str(&v).into()),
                })
            }
            Expr::Starred(_) => Err(err(
                ErrorKind::Unsupported,
                "`*` unpacking is only supported in calls and list or tuple displays",
                span,
            )),
            _ => Err(err(
                ErrorKind::Unsupported,
                "this expression is not supported in configuration code",
                span,
            )),
        }
    }

    fn elements(&mut self, elts: &'a [Expr], f: &mut Frame<'a>) -> Result<Vec<V<'a>>> {
        let mut out = vec![];
        for x in elts {
            if let Expr::Starred(st) = x {
                let v = self.eval(&st.value, f)?;
                let items = self.seq(v, span_of(x))?;
                out.extend(items);
            } else {
                out.push(self.eval(x, f)?);
            }
        }
        self.charge(out.len() as u64, Span::NONE)?;
        Ok(out)
    }

    fn eval_dict(&mut self, d: &'a ast::ExprDict, f: &mut Frame<'a>) -> Result<V<'a>> {
        let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
        for (k, v) in d.keys.iter().zip(&d.values) {
            match k {
                Some(k) => {
                    let kv = self.eval(k, f)?;
                    let vv = self.eval(v, f)?;
                    dict_set(&out, kv, vv, span_of(k))?;
                }
                None => {
                    let other = self.eval(v, f)?;
                    let V::Dict(o) = other else {
                        return Err(type_err(
                            format!("cannot unpack {} with `**`", describe(&other)),
                            span_of(v),
                        ));
                    };
                    let entries = o.borrow().clone();
                    for (kk, vv) in entries {
                        dict_set(&out, kk, vv, span_of(v))?;
                    }
                }
            }
        }
        Ok(V::Dict(out))
    }

    fn eval_subscript(&mut self, s: &'a ast::ExprSubscript, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(s);
        let base = self.eval(&s.value, f)?;
        if let Expr::Slice(sl) = &*s.slice {
            let mut part = |e: &'a Option<Box<Expr>>, h: &mut Self| -> Result<Option<i64>> {
                match e {
                    None => Ok(None),
                    Some(x) => match h.eval(x, f)? {
                        V::None => Ok(None),
                        V::Int(i) => Ok(Some(i)),
                        V::Bool(b) => Ok(Some(b as i64)),
                        other => Err(type_err(
                            format!("slice indices must be ints, not {}", describe(&other)),
                            span_of(&**x),
                        )),
                    },
                }
            };
            let lo = part(&sl.lower, self)?;
            let hi = part(&sl.upper, self)?;
            let st = part(&sl.step, self)?;
            return slice(&base, lo, hi, st, span);
        }
        let key = self.eval(&s.slice, f)?;
        self.get_item(&base, &key, span)
    }

    pub(super) fn get_item(&mut self, base: &V<'a>, key: &V<'a>, span: Span) -> Result<V<'a>> {
        match base {
            V::List(l) => {
                let l = l.borrow();
                Ok(l[index(key, l.len(), span)?].clone())
            }
            V::Tuple(t) => Ok(t[index(key, t.len(), span)?].clone()),
            V::Str(s) => {
                let chars: Vec<char> = s.chars().collect();
                let i = index(key, chars.len(), span)?;
                Ok(V::Str(chars[i].to_string().into()))
            }
            V::Range(a, b, st) => {
                let n = range_len(*a, *b, *st) as usize;
                let i = index(key, n, span)?;
                Ok(V::Int(a + st * i as i64))
            }
            V::Dict(d) => {
                let pos = dict_pos(d, key, span)?;
                match pos {
                    Some(p) => Ok(d.borrow()[p].1.clone()),
                    None => Err(key_error(key, span)),
                }
            }
            other => Err(type_err(
                format!(
                    "{} is not subscriptable in configuration code",
                    describe(other)
                ),
                span,
            )),
        }
    }

    fn eval_compare(&mut self, c: &'a ast::ExprCompare, f: &mut Frame<'a>) -> Result<V<'a>> {
        let mut left = self.eval(&c.left, f)?;
        for (op, r) in c.ops.iter().zip(&c.comparators) {
            let right = self.eval(r, f)?;
            let span = span_of(&*c.left).to(span_of(r));
            if !compare(*op, &left, &right, span)? {
                return Ok(V::Bool(false));
            }
            left = right;
        }
        Ok(V::Bool(true))
    }

    /// Runs the generators of a comprehension, calling `body` for each binding.
    fn comprehension(
        &mut self,
        gens: &'a [ast::Comprehension],
        f: &mut Frame<'a>,
        body: &mut dyn FnMut(&mut Self, &mut Frame<'a>) -> Result<()>,
    ) -> Result<()> {
        let Some(first) = gens.first() else {
            return Ok(());
        };
        // The first iterable is evaluated in the enclosing scope, the rest in the
        // comprehension's own.
        let it = self.eval(&first.iter, f)?;
        let mut cf = f.child();
        self.comp_level(gens, 0, Some(it), &mut cf, body)
    }

    fn comp_level(
        &mut self,
        gens: &'a [ast::Comprehension],
        i: usize,
        first: Option<V<'a>>,
        cf: &mut Frame<'a>,
        body: &mut dyn FnMut(&mut Self, &mut Frame<'a>) -> Result<()>,
    ) -> Result<()> {
        let g = &gens[i];
        let span = span_of(&g.target).to(span_of(&g.iter));
        let it = match first {
            Some(v) => v,
            None => self.eval(&g.iter, cf)?,
        };
        let items = self.iter(it, span_of(&g.iter))?;
        for item in items {
            self.step(span)?;
            self.assign(&g.target, item, cf)?;
            let mut keep = true;
            for cond in &g.ifs {
                let c = self.eval(cond, cf)?;
                if !truthy(&c) {
                    keep = false;
                    break;
                }
            }
            if !keep {
                continue;
            }
            if i + 1 == gens.len() {
                body(self, cf)?;
            } else {
                self.nested(span, |h| h.comp_level(gens, i + 1, None, cf, body))?;
            }
        }
        Ok(())
    }

    fn comp_list(
        &mut self,
        elt: &'a Expr,
        gens: &'a [ast::Comprehension],
        f: &mut Frame<'a>,
    ) -> Result<Vec<V<'a>>> {
        let mut out = vec![];
        self.comprehension(gens, f, &mut |h, cf| {
            out.push(h.eval(elt, cf)?);
            Ok(())
        })?;
        Ok(out)
    }

    fn eval_dict_comp(&mut self, d: &'a ast::ExprDictComp, f: &mut Frame<'a>) -> Result<V<'a>> {
        let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
        let kspan = span_of(&*d.key);
        self.comprehension(&d.generators, f, &mut |h, cf| {
            let k = h.eval(&d.key, cf)?;
            let v = h.eval(&d.value, cf)?;
            dict_set(&out, k, v, kspan)
        })?;
        Ok(V::Dict(out))
    }
}
