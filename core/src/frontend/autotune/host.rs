//! The evaluator's state, [`Host`]: the module's globals (and those poisoned by a
//! top-level statement that failed), the step and nesting bounds, frames and their scopes,
//! running the module's top-level statements as an import would, `import`, and looking up
//! and binding names.

use super::builtins::{builtin_named, UNSUPPORTED_BUILTINS};
use super::paths::resolve;
use super::touched::Touched;
use super::values::{Scope, V};
use super::HostTarget;
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::frontend::parse::{ParsedModule, TopLevel};
use crate::frontend::tracer::{err, MAX_NESTING};
use rustpython_parser::ast::Stmt;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Evaluation steps (statements, loop iterations, calls, elements built) allowed for one
/// top-level statement, one decorator or one prune call.
const STEP_LIMIT: u64 = 1_000_000;

/// How a statement or block ended.
pub(super) enum Flow<'a> {
    Normal,
    Break,
    Continue,
    Return(V<'a>),
}

/// The scopes the code being run sees: its locals, the enclosing functions' scopes, and
/// the names it declares `global` or `nonlocal`.
pub(super) struct Frame<'a> {
    /// `None` at module level (names go to the globals).
    pub(super) locals: Option<Scope<'a>>,
    pub(super) closure: Vec<Scope<'a>>,
    pub(super) globals: Vec<String>,
    pub(super) nonlocals: Vec<String>,
}

impl<'a> Frame<'a> {
    pub(super) fn module() -> Frame<'a> {
        Frame {
            locals: None,
            closure: vec![],
            globals: vec![],
            nonlocals: vec![],
        }
    }

    /// The enclosing scopes a function or comprehension defined here sees.
    pub(super) fn captured(&self) -> Vec<Scope<'a>> {
        let mut c = self.closure.clone();
        c.extend(self.locals.clone());
        c
    }

    pub(super) fn child(&self) -> Frame<'a> {
        Frame {
            locals: Some(Rc::new(RefCell::new(HashMap::new()))),
            closure: self.captured(),
            globals: vec![],
            nonlocals: vec![],
        }
    }
}

/// The evaluator: one module's globals, evaluated for one target.
pub(super) struct Host<'a> {
    pub(super) m: &'a ParsedModule,
    pub(super) target: HostTarget,
    pub(super) globals: HashMap<String, V<'a>>,
    /// Globals set by top-level statements that failed, with the failure.
    poisoned: HashMap<String, Diagnostic>,
    pub(super) steps: u64,
    nesting: u32,
}

impl<'a> Host<'a> {
    pub(super) fn new(m: &'a ParsedModule, target: &HostTarget) -> Host<'a> {
        let file = m.source.name.rsplit(['/', '\\']).next().unwrap_or("");
        let stem = file.strip_suffix(".py").unwrap_or(file);
        let mut globals = HashMap::new();
        globals.insert("__name__".to_string(), V::str(stem));
        globals.insert("__file__".to_string(), V::str(&m.source.name));
        Host {
            m,
            target: target.clone(),
            globals,
            poisoned: HashMap::new(),
            steps: 0,
            nesting: 0,
        }
    }

    pub(super) fn step(&mut self, span: Span) -> Result<()> {
        self.charge(1, span)
    }

    pub(super) fn charge(&mut self, n: u64, span: Span) -> Result<()> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > STEP_LIMIT {
            return Err(err(
                ErrorKind::Unsupported,
                format!(
                    "configuration code ran for more than {STEP_LIMIT} steps (an endless loop?)"
                ),
                span,
            ));
        }
        Ok(())
    }

    pub(super) fn nested<T>(
        &mut self,
        span: Span,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        if self.nesting >= MAX_NESTING {
            return Err(err(
                ErrorKind::Unsupported,
                format!("configuration code nests statements, expressions and calls more than {MAX_NESTING} levels deep (unbounded recursion?)"),
                span,
            ));
        }
        self.nesting += 1;
        let r = f(self);
        self.nesting -= 1;
        r
    }

    // --- the module -------------------------------------------------------------

    /// Runs the first `upto` top-level statements, as importing the module would.
    pub(super) fn run_module(&mut self, upto: usize) {
        let m = self.m;
        for t in &m.top_level[..upto] {
            self.steps = 0;
            match t {
                TopLevel::Jit(i) => {
                    let name = &m.jit[*i].name;
                    self.poisoned.remove(name);
                    self.globals
                        .insert(name.clone(), V::Jit(name.as_str().into()));
                }
                TopLevel::Stmt(s) => {
                    let mut f = Frame::module();
                    if let Err(d) = self.exec(s, &mut f) {
                        let mut names = Touched::default();
                        names.stmt(s);
                        let mut all = names.bound;
                        for n in names.mutated {
                            if matches!(
                                self.globals.get(&n),
                                Some(V::List(_) | V::Dict(_) | V::Config(_))
                            ) {
                                all.push(n);
                            }
                        }
                        for n in all {
                            self.globals.remove(&n);
                            self.poisoned.insert(n, d.clone());
                        }
                    }
                }
            }
        }
    }

    pub(super) fn import(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<()> {
        match s {
            Stmt::Import(i) => {
                for a in &i.names {
                    let path = a.name.as_str();
                    match &a.asname {
                        Some(n) => self.store(n.as_str(), resolve(path), f),
                        None => {
                            let first = path.split('.').next().unwrap_or(path);
                            self.store(first, resolve(first), f)
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let level = i.level.as_ref().map_or(0, |l| l.to_u32()) as usize;
                let module = format!(
                    "{}{}",
                    ".".repeat(level),
                    i.module.as_ref().map_or("", |m| m.as_str())
                );
                for a in &i.names {
                    if a.name.as_str() == "*" {
                        continue;
                    }
                    let bound = a.asname.as_ref().unwrap_or(&a.name);
                    let path = if module.ends_with('.') || module.is_empty() {
                        format!("{module}{}", a.name.as_str())
                    } else {
                        format!("{module}.{}", a.name.as_str())
                    };
                    self.store(bound.as_str(), resolve(&path), f);
                }
            }
            _ => {}
        }
        Ok(())
    }

    // --- names ------------------------------------------------------------------

    pub(super) fn lookup(&mut self, name: &str, span: Span, f: &Frame<'a>) -> Result<V<'a>> {
        if let Some(l) = &f.locals {
            if !f.globals.iter().any(|g| g == name) {
                if let Some(v) = l.borrow().get(name) {
                    return Ok(v.clone());
                }
            }
        }
        for s in f.closure.iter().rev() {
            if let Some(v) = s.borrow().get(name) {
                return Ok(v.clone());
            }
        }
        if let Some(v) = self.globals.get(name) {
            return Ok(v.clone());
        }
        if let Some(d) = self.poisoned.get(name) {
            return Err(d
                .clone()
                .with_secondary(span, format!("`{name}` is used here"))
                .with_note(format!(
                    "`{name}` is set by a top-level statement that could not be evaluated"
                )));
        }
        if let Some(b) = builtin_named(name) {
            return Ok(V::Builtin(b));
        }
        if UNSUPPORTED_BUILTINS.contains(&name) {
            return Err(err(
                ErrorKind::Unsupported,
                format!("the Python builtin `{name}` is not supported in configuration code"),
                span,
            ));
        }
        Err(err(
            ErrorKind::Name,
            format!("name `{name}` is not defined"),
            span,
        ))
    }

    pub(super) fn store(&mut self, name: &str, v: V<'a>, f: &mut Frame<'a>) {
        if f.nonlocals.iter().any(|n| n == name) {
            for s in f.closure.iter().rev() {
                if s.borrow().contains_key(name) {
                    s.borrow_mut().insert(name.to_string(), v);
                    return;
                }
            }
        }
        match &f.locals {
            Some(l) if !f.globals.iter().any(|g| g == name) => {
                l.borrow_mut().insert(name.to_string(), v);
            }
            _ => {
                self.poisoned.remove(name);
                self.globals.insert(name.to_string(), v);
            }
        }
    }
}
