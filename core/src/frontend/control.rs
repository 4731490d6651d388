//! Control flow: `if`, `for` and `while`.
//!
//! A condition or range that is a compile-time value is evaluated while tracing: only
//! the taken branch is traced, `tl.static_range` loops are unrolled. Runtime control
//! flow becomes structured IR ops:
//! - `if` on a runtime scalar becomes `Op::If`; its results are the names assigned in
//!   either branch that were defined before, or defined in both branches.
//! - `for` over `range`/`tl.range` becomes `Op::For`. Its loop-carried values are the
//!   names assigned in the body that were defined before the loop and may change
//!   there; they are found by tracing the body without keeping the IR ("dry runs",
//!   repeated with the names found so far opaque until no name is added: `o1 = o0;
//!   o0 = x` carries both), then the body is traced for real with those names bound
//!   to block arguments.
//! - `while` becomes `Op::While` the same way.
//!
//! A carried name or branch result whose type differs between the paths is an error
//! naming the variable and both types.

use super::parse::span_of;
use super::tracer::{err, unsupported, Env, Tracer, RET};
use super::value::{literal_dtype, Val};
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{Block, DType, Inst, Op, Type, Value};
use rustpython_parser::ast::{self, Expr};

impl Tracer<'_> {
    /// A scalar `i1` from a runtime condition; tiles are rejected with advice.
    pub fn scalar_cond(&mut self, c: &Val, span: Span, construct: &str) -> Result<Value> {
        let x = self.tensor_of(c, span)?;
        let ty = self.ty(x);
        if ty.is_block_ptr() || !ty.is_scalar() {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "`{construct}` needs a scalar condition, but this condition is {}",
                    self.describe(c)
                ),
                span,
            )
            .with_note("a tile has one truth value per element; use tl.where(cond, a, b) to select per element, or pass the condition as `mask=` to tl.load / tl.store"));
        }
        self.as_i1(x, span)
    }

    pub fn exec_if(&mut self, i: &ast::StmtIf, tail: bool) -> Result<()> {
        let cspan = span_of(&*i.test);
        let c = self.eval(&i.test)?;
        if let Some(t) = c.truthy() {
            return if t {
                self.exec_block(&i.body, tail)
            } else {
                self.exec_block(&i.orelse, tail)
            };
        }
        let cond = self.scalar_cond(&c, cspan, "if")?;
        let before = self.env.clone();
        self.b.begin_block(vec![]);
        self.exec_block(&i.body, tail)?;
        let mut then_block = self.b.end_block();
        let then_env = std::mem::replace(&mut self.env, before.clone());
        self.b.begin_block(vec![]);
        self.exec_block(&i.orelse, tail)?;
        let mut else_block = self.b.end_block();
        let else_env = std::mem::replace(&mut self.env, before.clone());
        let span = span_of(i);

        // Names that become results.
        let mut names: Vec<String> = then_env
            .keys()
            .chain(else_env.keys())
            .filter(|n| {
                let (t, e, b) = (then_env.get(*n), else_env.get(*n), before.get(*n));
                match b {
                    Some(b) => !t.is_some_and(|t| t.same(b)) || !e.is_some_and(|e| e.same(b)),
                    None => t.is_some() && e.is_some(),
                }
            })
            .cloned()
            .collect();
        names.sort();
        names.dedup();
        if then_env.contains_key(RET) != else_env.contains_key(RET) {
            return Err(err(
                ErrorKind::Unsupported,
                "early `return` is not supported: a runtime `if` must return in both branches or in neither",
                span,
            ));
        }
        let mut then_vals = vec![];
        let mut else_vals = vec![];
        let mut result_names = vec![];
        let mut templates = vec![];
        for n in &names {
            let (Some(t), Some(e)) = (
                then_env.get(n).or(before.get(n)),
                else_env.get(n).or(before.get(n)),
            ) else {
                continue;
            };
            if t.same(e) && t.is_constexpr() {
                self.env.insert(n.clone(), t.clone());
                continue;
            }
            let (mut tl, mut el) = (vec![], vec![]);
            leaves(t, &mut tl);
            leaves(e, &mut el);
            if tl.len() != el.len() || !same_structure(t, e) {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "`{}` has a different structure in the two branches of this `if`",
                        pretty(n)
                    ),
                    span,
                ));
            }
            let start = then_vals.len();
            for (a, b) in tl.iter().zip(&el) {
                let (va, vb) = self.merge_pair(a, b, n, span)?;
                then_vals.push(va);
                else_vals.push(vb);
            }
            result_names.push((n.clone(), start, then_vals.len()));
            templates.push(t.clone());
        }
        push_yield(&mut then_block, then_vals.clone(), span);
        push_yield(&mut else_block, else_vals, span);
        let types: Vec<Type> = then_vals.iter().map(|v| self.ty(*v)).collect();
        let results = self.b.push(
            Op::If {
                cond,
                then_block,
                else_block,
            },
            types,
            span,
        );
        for ((n, s, e), tpl) in result_names.iter().zip(templates) {
            let mut it = results[*s..*e].iter().copied();
            let v = rebuild(&tpl, &mut it);
            if n == RET {
                self.env.insert(n.clone(), v);
            } else {
                self.bind(n, v);
            }
        }
        Ok(())
    }

    /// Two values that must meet at a join: materialized (literals in the outer block,
    /// which precedes the op) and checked to have one type.
    fn merge_pair(&mut self, a: &Val, b: &Val, name: &str, span: Span) -> Result<(Value, Value)> {
        let target = |s: &Self, v: &Val, other: &Val| -> Option<DType> {
            match (v, other) {
                (v, Val::T(o)) if v.is_number() && s.b.ty(*o).is_scalar() => s.b.ty(*o).dtype(),
                (v, _) => literal_dtype(v),
            }
        };
        let va = match a {
            Val::T(x) => *x,
            v if v.is_number() => {
                let d = target(self, a, b).unwrap_or(DType::I32);
                self.materialize(v, d, span)?
            }
            other => {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "`{}` is {} in one branch and changes in the other",
                        pretty(name),
                        self.describe(other)
                    ),
                    span,
                ))
            }
        };
        let vb = match b {
            Val::T(x) => *x,
            v if v.is_number() => {
                let d = target(self, b, a).unwrap_or(DType::I32);
                self.materialize(v, d, span)?
            }
            other => {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "`{}` is {} in one branch and changes in the other",
                        pretty(name),
                        self.describe(other)
                    ),
                    span,
                ))
            }
        };
        let (ta, tb) = (self.ty(va), self.ty(vb));
        if ta != tb {
            return Err(err(
                ErrorKind::Type,
                format!("`{}` has type {ta} in the `if` branch but {tb} in the `else` branch; both branches must agree", pretty(name)),
                span,
            ));
        }
        Ok((va, vb))
    }

    pub fn exec_for(&mut self, f: &ast::StmtFor) -> Result<()> {
        let span = span_of(f);
        let header = Span::new(span.start, span_of(&*f.iter).end);
        if !f.orelse.is_empty() {
            return Err(unsupported("`for ... else`", header));
        }
        let Expr::Call(call) = &*f.iter else {
            return Err(err(
                ErrorKind::Unsupported,
                "a `for` loop must iterate over range(...), tl.range(...) or tl.static_range(...)",
                span_of(&*f.iter),
            ));
        };
        let func = self.eval(&call.func)?;
        let kind = match &func {
            Val::Builtin(n) if n == "range" => "range",
            Val::Builtin(n) if n == "tl.range" => "tl.range",
            Val::Builtin(n) if n == "tl.static_range" => "tl.static_range",
            _ => {
                return Err(err(ErrorKind::Unsupported, "a `for` loop must iterate over range(...), tl.range(...) or tl.static_range(...)", span_of(&*f.iter)));
            }
        };
        let mut bounds = vec![];
        for a in &call.args {
            bounds.push((self.eval(a)?, span_of(a)));
        }
        let mut num_stages = None;
        let mut flatten = None;
        for k in &call.keywords {
            let v = self.eval(&k.value)?;
            match k.arg.as_ref().map(|a| a.as_str()) {
                Some("num_stages") if kind == "tl.range" => match v {
                    Val::Int(n) if n >= 0 => num_stages = Some(n as u32),
                    Val::None => {}
                    _ => {
                        return Err(err(
                            ErrorKind::Static,
                            "num_stages must be a non-negative constexpr int",
                            span_of(&k.value),
                        ))
                    }
                },
                Some("flatten") if kind == "tl.range" => match v {
                    Val::Bool(b) => flatten = Some(b),
                    Val::Int(n) => flatten = Some(n != 0),
                    Val::None => {}
                    _ => {
                        return Err(err(
                            ErrorKind::Static,
                            "flatten must be a constexpr bool",
                            span_of(&k.value),
                        ))
                    }
                },
                Some(
                    "loop_unroll_factor"
                    | "disallow_acc_multi_buffer"
                    | "warp_specialize"
                    | "disable_licm",
                ) if kind == "tl.range" => {}
                Some(other) => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("{kind}() got an unexpected keyword argument `{other}`"),
                        span_of(&k.value),
                    ))
                }
                None => return Err(unsupported("`**kwargs`", span_of(&k.value))),
            }
        }
        let (lo, hi, step) = match bounds.len() {
            1 => (
                (Val::Int(0), header),
                bounds[0].clone(),
                (Val::Int(1), header),
            ),
            2 => (bounds[0].clone(), bounds[1].clone(), (Val::Int(1), header)),
            3 => (bounds[0].clone(), bounds[1].clone(), bounds[2].clone()),
            n => {
                return Err(err(
                    ErrorKind::Argument,
                    format!("{kind}() takes 1 to 3 arguments, {n} given"),
                    span_of(&*f.iter),
                ))
            }
        };
        if kind == "tl.static_range" {
            let all_const = [&lo, &hi, &step]
                .iter()
                .all(|(v, _)| matches!(v, Val::Int(_) | Val::Bool(_)));
            if !all_const {
                return Err(err(
                    ErrorKind::Static,
                    "tl.static_range bounds must be compile-time constants",
                    span_of(&*f.iter),
                ));
            }
            return self.unroll(f, as_int(&lo.0), as_int(&hi.0), as_int(&step.0), header);
        }
        self.runtime_for(f, lo, hi, step, (num_stages, flatten), header)
    }

    fn unroll(&mut self, f: &ast::StmtFor, lo: i64, hi: i64, step: i64, span: Span) -> Result<()> {
        if step == 0 {
            return Err(err(ErrorKind::Static, "range step must not be zero", span));
        }
        let mut i = lo;
        let mut count = 0u32;
        while (step > 0 && i < hi) || (step < 0 && i > hi) {
            count += 1;
            if count > 4096 {
                return Err(err(
                    ErrorKind::Unsupported,
                    "tl.static_range with more than 4096 iterations",
                    span,
                ));
            }
            self.assign(&f.target, Val::Int(i))?;
            self.exec_block(&f.body, false)?;
            i = i
                .checked_add(step)
                .ok_or_else(|| err(ErrorKind::Static, "range overflow", span))?;
        }
        Ok(())
    }

    /// Names assigned by `body` that were defined before and may hold another value
    /// on a later trip: the body is traced without keeping the IR ("dry runs") until
    /// no name is added. A first run finds the names the first trip changes; each next
    /// run binds the names found so far to opaque values (what a later trip starts
    /// with), so that a name copied from one of them is found too (`prev = cur` before
    /// `cur = ...`, or a chain `o2 = o1; o1 = o0; o0 = x`, one link a run). A name that
    /// holds the same value after every trip (`BLOCK = 16` again) is not carried.
    fn carried_names(
        &mut self,
        before: &Env,
        exclude: &str,
        trace: &mut dyn FnMut(&mut Self) -> Result<()>,
    ) -> Result<Vec<String>> {
        let mut names: Vec<String> = vec![];
        let mut types: Vec<Option<Type>> = vec![];
        loop {
            self.dry += 1;
            // The names found so far start the trip as opaque values of their types
            // (a name whose type is not known yet keeps its value: the real trace
            // reports it).
            let opaque: Vec<(String, Type)> = names
                .iter()
                .zip(&types)
                .filter_map(|(n, t)| {
                    let t = t.clone().or_else(|| self.carried_type(before.get(n)?))?;
                    Some((n.clone(), t))
                })
                .collect();
            let args = self
                .b
                .begin_block(opaque.iter().map(|(_, t)| t.clone()).collect());
            for ((n, _), a) in opaque.iter().zip(args) {
                self.bind(n, Val::T(a));
            }
            let r = trace(self);
            self.b.end_block();
            self.dry -= 1;
            let after = std::mem::replace(&mut self.env, before.clone());
            r?;
            let mut found: Vec<String> = before
                .iter()
                .filter(|(n, v)| {
                    n.as_str() != exclude
                        && !names.contains(n)
                        && after.get(*n).is_some_and(|a| !a.same(v))
                })
                .map(|(n, _)| n.clone())
                .collect();
            // Types each carried name has at the end of the run, for literal inits.
            let type_after = |t: &Self, n: &String| {
                after.get(n).and_then(|v| match v {
                    Val::T(x) => Some(t.ty(*x)),
                    _ => None,
                })
            };
            types = names.iter().map(|n| type_after(self, n)).collect();
            if found.is_empty() {
                break;
            }
            found.sort();
            for n in found {
                types.push(type_after(self, &n));
                names.push(n);
            }
        }
        // Sorted, as the loop's results are.
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].cmp(&names[b]));
        self.dry_types = order.iter().map(|&i| types[i].clone()).collect();
        Ok(order.into_iter().map(|i| names[i].clone()).collect())
    }

    /// The type a carried name of value `v` has in the loop (a number: a scalar of its
    /// literal type); `None` for values that cannot be carried.
    fn carried_type(&self, v: &Val) -> Option<Type> {
        match v {
            Val::T(x) => Some(self.ty(*x)),
            v if v.is_number() => Some(Type::scalar(literal_dtype(v).unwrap_or(DType::I32))),
            _ => None,
        }
    }

    /// Initial IR values of carried names.
    fn carried_inits(&mut self, names: &[String], span: Span) -> Result<Vec<Value>> {
        let mut inits = vec![];
        let dry_types = std::mem::take(&mut self.dry_types);
        for (i, n) in names.iter().enumerate() {
            let v = self.env.get(n).cloned().unwrap_or(Val::None);
            let x = match &v {
                Val::T(x) => *x,
                v if v.is_number() => {
                    let d = match dry_types.get(i).cloned().flatten() {
                        Some(t) if t.is_scalar() => t.dtype().or(literal_dtype(v)).unwrap_or(DType::I32),
                        _ => literal_dtype(v).unwrap_or(DType::I32),
                    };
                    self.materialize(v, d, span)?
                }
                other => {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("`{n}` is {} and is reassigned in a runtime loop; only tensors and numbers can be loop-carried", self.describe(other)),
                        span,
                    ))
                }
            };
            inits.push(x);
        }
        Ok(inits)
    }

    /// The values to yield for the carried names, checked against their types.
    fn carried_yields(
        &mut self,
        names: &[String],
        types: &[Type],
        span: Span,
    ) -> Result<Vec<Value>> {
        let mut out = vec![];
        for (n, t) in names.iter().zip(types) {
            let v = self.env.get(n).cloned().unwrap_or(Val::None);
            let x = match &v {
                v if v.is_number() => self.materialize(v, t.dtype().unwrap_or(DType::I32), span)?,
                Val::T(x) => *x,
                other => {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("`{n}` becomes {} inside the loop", self.describe(other)),
                        span,
                    ))
                }
            };
            let got = self.ty(x);
            if &got != t {
                return Err(err(
                    ErrorKind::Type,
                    format!("loop-carried variable `{n}` has type {t} before the loop but type {got} at the end of the loop body; its type must not change"),
                    span,
                )
                .with_note(format!("cast it explicitly, e.g. `{n} = ({n}).to(...)`, so both types agree")));
            }
            out.push(x);
        }
        Ok(out)
    }

    fn runtime_for(
        &mut self,
        f: &ast::StmtFor,
        lo: (Val, Span),
        hi: (Val, Span),
        step: (Val, Span),
        (num_stages, flatten): (Option<u32>, Option<bool>),
        span: Span,
    ) -> Result<()> {
        // Bounds: one integer dtype (i64 if any bound is, else i32).
        let mut dt = DType::I32;
        for (v, s) in [&lo, &hi, &step] {
            let d = match v {
                Val::T(x) => self
                    .b
                    .ty(*x)
                    .dtype()
                    .filter(|d| d.is_int() && self.b.ty(*x).is_scalar()),
                v => literal_dtype(v).filter(|d| d.is_int()),
            };
            let Some(d) = d else {
                return Err(err(
                    ErrorKind::Type,
                    format!(
                        "loop bounds must be integer scalars, got {}",
                        self.describe(v)
                    ),
                    *s,
                ));
            };
            if d.bits() == 64 {
                dt = DType::I64;
            }
        }
        if let Val::Int(0) = step.0 {
            return Err(err(
                ErrorKind::Static,
                "range step must not be zero",
                step.1,
            ));
        }
        let lower = self.materialize(&lo.0, dt, lo.1)?;
        let upper = self.materialize(&hi.0, dt, hi.1)?;
        let stepv = self.materialize(&step.0, dt, step.1)?;
        let target_name = match &*f.target {
            Expr::Name(n) => n.id.to_string(),
            other => {
                return Err(unsupported(
                    "a loop target that is not a plain name",
                    span_of(other),
                ))
            }
        };
        let before = self.env.clone();
        // Discover the carried names.
        let body = &f.body;
        let tn = target_name.clone();
        let names = self.carried_names(&before, &target_name, &mut |t: &mut Self| {
            let iv = t.b.begin_block(vec![Type::scalar(dt)]);
            t.bind(&tn, Val::T(iv[0]));
            let r = t.exec_block(body, false);
            t.b.end_block();
            r
        })?;
        let inits = self.carried_inits(&names, span)?;
        let types: Vec<Type> = inits.iter().map(|v| self.ty(*v)).collect();
        let mut arg_types = vec![Type::scalar(dt)];
        arg_types.extend(types.iter().cloned());
        let args = self.b.begin_block(arg_types);
        self.bind(&target_name, Val::T(args[0]));
        for (n, a) in names.iter().zip(&args[1..]) {
            self.bind(n, Val::T(*a));
        }
        self.exec_block(&f.body, false)?;
        let yields = self.carried_yields(&names, &types, span)?;
        self.b.push0(Op::Yield(yields), span);
        let body = self.b.end_block();
        self.env = before;
        let results = self.b.push(
            Op::For {
                lower,
                upper,
                step: stepv,
                init: inits,
                body,
                num_stages,
                flatten,
            },
            types,
            span,
        );
        for (n, r) in names.iter().zip(results) {
            self.bind(n, Val::T(r));
        }
        Ok(())
    }

    pub fn exec_while(&mut self, w: &ast::StmtWhile) -> Result<()> {
        let span = span_of(w);
        let cspan = span_of(&*w.test);
        let header = Span::new(span.start, cspan.end);
        if !w.orelse.is_empty() {
            return Err(unsupported("`while ... else`", header));
        }
        // The condition is traced once, in the loop's before-block, on the carried
        // values (a counter `i = 0` becomes a runtime value there, as in Triton): never
        // before the loop, where its side effects (an atomic) would run once more.
        let before = self.env.clone();
        let body = &w.body;
        let names =
            self.carried_names(&before, "", &mut |t: &mut Self| t.exec_block(body, false))?;
        let inits = self.carried_inits(&names, header)?;
        let types: Vec<Type> = inits.iter().map(|v| self.ty(*v)).collect();
        // before-block: evaluate the condition on the carried values.
        let bargs = self.b.begin_block(types.clone());
        for (n, a) in names.iter().zip(&bargs) {
            self.bind(n, Val::T(*a));
        }
        let c = self.eval(&w.test)?;
        match c.truthy() {
            Some(false) => {
                self.b.end_block();
                self.env = before;
                return Ok(());
            }
            Some(true) => {
                self.b.end_block();
                self.env = before;
                return Err(err(ErrorKind::Unsupported, "`while` on a condition that is always true (a compile-time constant) would never end; `break` is not supported", cspan));
            }
            None => {}
        }
        let cond = self.scalar_cond(&c, cspan, "while")?;
        self.b.push0(
            Op::Condition {
                cond,
                args: bargs.clone(),
            },
            cspan,
        );
        let before_block = self.b.end_block();
        // after-block: the body.
        let aargs = self.b.begin_block(types.clone());
        for (n, a) in names.iter().zip(&aargs) {
            self.bind(n, Val::T(*a));
        }
        self.exec_block(&w.body, false)?;
        let yields = self.carried_yields(&names, &types, header)?;
        self.b.push0(Op::Yield(yields), header);
        let after_block = self.b.end_block();
        self.env = before;
        let results = self.b.push(
            Op::While {
                init: inits,
                before: before_block,
                after: after_block,
            },
            types,
            header,
        );
        for (n, r) in names.iter().zip(results) {
            self.bind(n, Val::T(r));
        }
        Ok(())
    }
}

fn as_int(v: &Val) -> i64 {
    match v {
        Val::Int(i) => *i,
        Val::Bool(b) => *b as i64,
        _ => 0,
    }
}

fn pretty(name: &str) -> &str {
    if name == RET {
        "the return value"
    } else {
        name
    }
}

fn push_yield(block: &mut Block, vals: Vec<Value>, span: Span) {
    block.insts.push(Inst {
        op: Op::Yield(vals),
        results: vec![],
        span,
    });
}

/// The runtime-or-number leaves of a (possibly nested tuple) value.
fn leaves(v: &Val, out: &mut Vec<Val>) {
    match v {
        Val::Tuple(items, _) => items.iter().for_each(|i| leaves(i, out)),
        other => out.push(other.clone()),
    }
}

fn same_structure(a: &Val, b: &Val) -> bool {
    match (a, b) {
        (Val::Tuple(x, _), Val::Tuple(y, _)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_structure(p, q))
        }
        (Val::Tuple(..), _) | (_, Val::Tuple(..)) => false,
        _ => true,
    }
}

fn rebuild(tpl: &Val, it: &mut impl Iterator<Item = Value>) -> Val {
    match tpl {
        Val::Tuple(items, list) => {
            Val::Tuple(items.iter().map(|i| rebuild(i, it)).collect(), *list)
        }
        _ => it.next().map(Val::T).unwrap_or(Val::None),
    }
}
