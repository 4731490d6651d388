//! The tracer: an abstract interpreter over a jit function's AST.
//!
//! It keeps an environment of [`Val`]s, evaluates compile-time values in Rust and emits
//! tile IR through [`KernelBuilder`] for everything that happens at run time. This
//! file holds the state, the name environment, statement execution and the inlining
//! of calls to other jit functions; control flow is in `control.rs`, expressions in
//! `expr.rs`, the `tl` library in `builtins/` and `reduce.rs`.
//!
//! `return` is only allowed as the last statement of a function body (or at the end
//! of both branches of an `if` that is itself last): its value is kept under the
//! pseudo-name `$ret`, so that a runtime `if` merges returns like any other name.

use super::parse::{span_of, ParsedModule};
use super::value::{Namespace, Val};
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::ir::KernelBuilder;
use rustpython_parser::ast::{self, Expr, Stmt};
use std::collections::HashMap;

/// The pseudo-name holding a function's return value.
pub const RET: &str = "$ret";

/// Shorthand for a diagnostic at a span.
pub fn err(kind: ErrorKind, msg: impl Into<String>, span: Span) -> Diagnostic {
    Diagnostic::new(kind, msg).at(span, "")
}

pub fn unsupported(what: &str, span: Span) -> Diagnostic {
    err(
        ErrorKind::Unsupported,
        format!("{what} is not supported in a jit function"),
        span,
    )
}

pub type Env = HashMap<String, Val>;

/// How deeply statements and expressions may nest, jit calls included: the tracer
/// recurses once a level, so a 1000-term `1 + 1 + ... + 1` overflowed the 2 MiB stack
/// of a test thread. A level takes about 4 KiB of stack in a release build and 13 KiB
/// unoptimized, so 100 levels fit a 2 MiB thread either way; real kernels nest a few
/// dozen.
pub const MAX_NESTING: u32 = 100;

pub struct Tracer<'m> {
    pub m: &'m ParsedModule,
    pub b: KernelBuilder,
    pub env: Env,
    pub globals: Env,
    /// > 0 while tracing a loop body only to discover its carried names.
    pub dry: u32,
    /// Inlining depth of jit-function calls.
    pub depth: u32,
    /// Statements and expressions being traced, nested (see [`MAX_NESTING`]).
    pub nesting: u32,
    pub prints: Vec<String>,
    /// Types of carried names at the end of the last dry run (for literal inits).
    pub dry_types: Vec<Option<crate::ir::Type>>,
}

impl<'m> Tracer<'m> {
    pub fn new(m: &'m ParsedModule, b: KernelBuilder) -> Tracer<'m> {
        let mut t = Tracer {
            m,
            b,
            env: Env::new(),
            globals: Env::new(),
            dry: 0,
            depth: 0,
            nesting: 0,
            prints: vec![],
            dry_types: vec![],
        };
        t.init_globals();
        t
    }

    fn init_globals(&mut self) {
        let mut g = Env::new();
        g.insert("tl".into(), Val::Module(Namespace::Tl));
        g.insert("triton".into(), Val::Module(Namespace::Triton));
        g.insert("tilewise".into(), Val::Module(Namespace::Triton));
        g.insert("libdevice".into(), Val::Module(Namespace::Tl));
        for (name, ns) in &self.m.imports {
            g.insert(name.clone(), Val::Module(*ns));
        }
        for name in &self.m.non_jit {
            g.insert(name.clone(), Val::NonJit(name.clone()));
        }
        for f in &self.m.jit {
            g.insert(f.name.clone(), Val::Jit(f.name.clone()));
        }
        self.globals = g;
        // Top-level constants (`BLOCK = 128`, `X: tl.constexpr = tl.constexpr(3)`): keep
        // those that evaluate to compile-time values without emitting IR.
        for (name, e) in &self.m.globals {
            if self.m.jit_index.contains_key(name) {
                continue;
            }
            self.env.clear();
            if let Ok(v) = self.eval(e) {
                if v.is_constexpr() {
                    self.globals.insert(name.clone(), v);
                }
            }
        }
        self.env.clear();
    }

    pub fn lookup(&self, name: &str, span: Span) -> Result<Val> {
        if let Some(v) = self.env.get(name).or_else(|| self.globals.get(name)) {
            return Ok(v.clone());
        }
        let builtin = matches!(
            name,
            "range"
                | "min"
                | "max"
                | "len"
                | "int"
                | "float"
                | "bool"
                | "abs"
                | "print"
                | "isinstance"
                | "getattr"
                | "enumerate"
                | "zip"
        );
        if builtin {
            return Ok(Val::Builtin(name.to_string()));
        }
        if name == "True" || name == "False" {
            return Ok(Val::Bool(name == "True"));
        }
        Err(err(
            ErrorKind::Name,
            format!("undefined name `{name}`"),
            span,
        ))
    }

    /// Binds a name; runtime values get it as their IR name.
    pub fn bind(&mut self, name: &str, v: Val) {
        if let Val::T(x) = &v {
            self.b.set_name(*x, name);
        }
        self.env.insert(name.to_string(), v);
    }

    /// Assigns `v` to an assignment target (names, tuples of targets).
    pub fn assign(&mut self, target: &Expr, v: Val) -> Result<()> {
        match target {
            Expr::Name(n) => {
                self.bind(n.id.as_str(), v);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let Val::Tuple(items, _) = v else {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "cannot unpack {} into {} names",
                            self.describe(&v),
                            elts.len()
                        ),
                        span_of(target),
                    ));
                };
                if items.len() != elts.len() {
                    return Err(err(
                        ErrorKind::Argument,
                        format!(
                            "cannot unpack a tuple of {} values into {} names",
                            items.len(),
                            elts.len()
                        ),
                        span_of(target),
                    ));
                }
                for (t, item) in elts.iter().zip(items) {
                    self.assign(t, item)?;
                }
                Ok(())
            }
            Expr::Subscript(_) => Err(unsupported(
                "assignment to a subscript (tiles are immutable values)",
                span_of(target),
            )),
            Expr::Attribute(_) => Err(unsupported("assignment to an attribute", span_of(target))),
            Expr::Starred(_) => Err(unsupported("starred assignment", span_of(target))),
            _ => Err(err(
                ErrorKind::Syntax,
                "invalid assignment target",
                span_of(target),
            )),
        }
    }

    /// Executes a statement list. `tail`: the list ends the function body, so a final
    /// `return` is allowed.
    pub fn exec_block(&mut self, stmts: &[Stmt], tail: bool) -> Result<()> {
        for (i, s) in stmts.iter().enumerate() {
            let last = tail && i + 1 == stmts.len();
            if self.env.contains_key(RET) {
                return Err(unsupported("code after `return`", span_of(s)));
            }
            self.exec(s, last)?;
        }
        Ok(())
    }

    /// Evaluates an expression (expr.rs), refusing to nest deeper than [`MAX_NESTING`].
    pub fn eval(&mut self, e: &Expr) -> Result<Val> {
        self.nested(span_of(e), |t| t.eval_unguarded(e))
    }

    fn exec(&mut self, s: &Stmt, tail: bool) -> Result<()> {
        self.nested(span_of(s), |t| t.exec_unguarded(s, tail))
    }

    fn nested<T>(&mut self, span: Span, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.nesting >= MAX_NESTING {
            return Err(err(
                ErrorKind::Unsupported,
                format!("statements and expressions nested more than {MAX_NESTING} levels deep"),
                span,
            ));
        }
        self.nesting += 1;
        let r = f(self);
        self.nesting -= 1;
        r
    }

    fn exec_unguarded(&mut self, s: &Stmt, tail: bool) -> Result<()> {
        let span = span_of(s);
        match s {
            Stmt::Expr(e) => {
                self.eval(&e.value)?;
                Ok(())
            }
            Stmt::Assign(a) => {
                let v = self.eval(&a.value)?;
                for t in &a.targets {
                    self.assign(t, v.clone())?;
                }
                Ok(())
            }
            Stmt::AnnAssign(a) => match &a.value {
                Some(value) => {
                    let v = self.eval(value)?;
                    self.assign(&a.target, v)
                }
                None => Ok(()),
            },
            Stmt::AugAssign(a) => {
                let cur = self.eval(&a.target)?;
                let rhs = self.eval(&a.value)?;
                let v = self.binop(a.op, cur, rhs, span)?;
                self.assign(&a.target, v)
            }
            Stmt::Pass(_) => Ok(()),
            Stmt::Return(r) => {
                if !tail {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "early `return` is not supported: `return` must be the last statement of the function (or end both branches of a final `if`)",
                        span,
                    ));
                }
                let v = match &r.value {
                    Some(e) => self.eval(e)?,
                    None => Val::None,
                };
                self.env.insert(RET.into(), v);
                Ok(())
            }
            Stmt::If(i) => self.exec_if(i, tail),
            Stmt::For(f) => self.exec_for(f),
            Stmt::While(w) => self.exec_while(w),
            Stmt::Assert(a) => self.exec_assert(a, span),
            Stmt::Break(_) => Err(unsupported("`break`", span)),
            Stmt::Continue(_) => Err(unsupported("`continue`", span)),
            Stmt::With(_) | Stmt::AsyncWith(_) => Err(unsupported("`with`", span)),
            Stmt::Try(_) | Stmt::TryStar(_) => Err(unsupported("`try`", span)),
            Stmt::Raise(_) => Err(unsupported("`raise`", span)),
            Stmt::Global(_) => Err(unsupported("`global`", span)),
            Stmt::Nonlocal(_) => Err(unsupported("`nonlocal`", span)),
            Stmt::Delete(_) => Err(unsupported("`del`", span)),
            Stmt::Match(_) => Err(unsupported("`match`", span)),
            Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) => {
                Err(unsupported("a nested function definition", span))
            }
            Stmt::ClassDef(_) => Err(unsupported("a class definition", span)),
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                Err(unsupported("`import` inside a kernel", span))
            }
            Stmt::AsyncFor(_) => Err(unsupported("`async for`", span)),
            Stmt::TypeAlias(_) => Err(unsupported("a type alias", span)),
        }
    }

    fn exec_assert(&mut self, a: &ast::StmtAssert, span: Span) -> Result<()> {
        let c = self.eval(&a.test)?;
        let msg = match &a.msg {
            Some(m) => match self.eval(m)? {
                Val::Str(s) => s,
                other => super::value::format_val(&other, &|v| self.fmt_type(v)),
            },
            None => String::new(),
        };
        match c.truthy() {
            Some(true) => Ok(()),
            Some(false) => {
                let m = if msg.is_empty() {
                    "assertion failed".to_string()
                } else {
                    format!("assertion failed: {msg}")
                };
                Err(err(ErrorKind::Static, m, span))
            }
            None => {
                let x = self.tensor_of(&c, span_of(&*a.test))?;
                let cond = self.as_i1(x, span)?;
                self.b
                    .push0(crate::ir::Op::DeviceAssert { cond, message: msg }, span);
                Ok(())
            }
        }
    }

    /// Inlines a call to the jit function `name`.
    pub fn call_jit(
        &mut self,
        name: &str,
        args: Vec<(Val, Span)>,
        kwargs: Vec<(String, Val, Span)>,
        span: Span,
    ) -> Result<Val> {
        let Some(&idx) = self.m.jit_index.get(name) else {
            return Err(err(
                ErrorKind::Name,
                format!("no jit function `{name}`"),
                span,
            ));
        };
        let m = self.m;
        let f = &m.jit[idx];
        if self.depth >= 64 {
            return Err(err(
                ErrorKind::Unsupported,
                format!("call depth limit reached calling `{name}` (recursion is not supported)"),
                span,
            ));
        }
        if args.len() > f.params.len() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "`{name}` takes {} arguments but {} were given",
                    f.params.len(),
                    args.len()
                ),
                span,
            )
            .with_secondary(f.span, "defined here"));
        }
        let mut bound: Vec<Option<Val>> = vec![None; f.params.len()];
        for (i, (v, _)) in args.into_iter().enumerate() {
            bound[i] = Some(v);
        }
        for (k, v, kspan) in kwargs {
            let Some(i) = f.params.iter().position(|p| p.name == k) else {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{name}` has no parameter named `{k}`"),
                    kspan,
                )
                .with_secondary(f.span, "defined here"));
            };
            if bound[i].is_some() {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{name}` got multiple values for parameter `{k}`"),
                    kspan,
                ));
            }
            bound[i] = Some(v);
        }
        // Evaluate defaults in the callee's (global) scope.
        let saved = std::mem::take(&mut self.env);
        let result = (|| -> Result<Val> {
            let mut env = Env::new();
            for (p, b) in f.params.iter().zip(bound) {
                let v = match (b, &p.default) {
                    (Some(v), _) => v,
                    (None, Some(d)) => {
                        self.env.clear();
                        self.eval(d)?
                    }
                    (None, None) => {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("missing argument `{}` in call to `{name}`", p.name),
                            span,
                        )
                        .with_secondary(f.span, "defined here"));
                    }
                };
                // A callee's `tl.constexpr` annotation does not make a runtime argument
                // an error: Triton decides constexpr-ness from the argument (the
                // attention tutorial passes tiles to constexpr-annotated parameters). A
                // use that needs a constant says so where it is.
                env.insert(p.name.clone(), v);
            }
            self.env = env;
            for (k, v) in self.env.clone() {
                if let Val::T(x) = v {
                    self.b.set_name(x, &k);
                }
            }
            self.depth += 1;
            let r = self.exec_block(&f.def.body, true);
            self.depth -= 1;
            r?;
            Ok(self.env.remove(RET).unwrap_or(Val::None))
        })();
        self.env = saved;
        result.map_err(|d| {
            if d.primary.is_none() {
                d.at(span, "")
            } else {
                d
            }
        })
    }
}
