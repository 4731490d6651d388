//! The names a top-level statement binds or may mutate, found without running it: when
//! the statement fails, these are the globals marked, so that only a later use of one
//! reports the failure.

use rustpython_parser::ast::{self, Expr, Stmt};

/// Names a top-level statement binds or may mutate: when it fails, they are marked.
#[derive(Default)]
pub(super) struct Touched {
    /// Assigned, deleted, defined or imported.
    pub(super) bound: Vec<String>,
    /// The receiver of a method call or of an item or attribute store, or passed by
    /// name to a call: marked only where their value is mutable (a list, dict, config).
    pub(super) mutated: Vec<String>,
}

impl Touched {
    fn block(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    pub(super) fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::FunctionDef(d) => self.bound.push(d.name.to_string()),
            Stmt::AsyncFunctionDef(d) => self.bound.push(d.name.to_string()),
            Stmt::ClassDef(c) => self.bound.push(c.name.to_string()),
            Stmt::Assign(a) => {
                for t in &a.targets {
                    self.target(t);
                }
                self.expr(&a.value);
            }
            Stmt::AnnAssign(a) => {
                self.target(&a.target);
                if let Some(v) = &a.value {
                    self.expr(v);
                }
            }
            Stmt::AugAssign(a) => {
                self.target(&a.target);
                self.expr(&a.value);
            }
            Stmt::For(f) => {
                self.target(&f.target);
                self.expr(&f.iter);
                self.block(&f.body);
                self.block(&f.orelse);
            }
            Stmt::While(w) => {
                self.expr(&w.test);
                self.block(&w.body);
                self.block(&w.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                self.block(&i.body);
                self.block(&i.orelse);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.expr(&item.context_expr);
                    if let Some(t) = &item.optional_vars {
                        self.target(t);
                    }
                }
                self.block(&w.body);
            }
            Stmt::Try(t) => {
                self.block(&t.body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.bound.push(n.to_string());
                    }
                    self.block(&h.body);
                }
                self.block(&t.orelse);
                self.block(&t.finalbody);
            }
            Stmt::Expr(e) => self.expr(&e.value),
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.target(t);
                }
            }
            Stmt::Import(i) => {
                for a in &i.names {
                    let n = a.asname.as_ref().unwrap_or(&a.name);
                    self.bound
                        .push(n.as_str().split('.').next().unwrap_or("").to_string());
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    self.bound
                        .push(a.asname.as_ref().unwrap_or(&a.name).to_string());
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.expr(v);
                }
            }
            Stmt::Assert(a) => self.expr(&a.test),
            _ => {}
        }
    }

    fn target(&mut self, e: &Expr) {
        match e {
            Expr::Name(n) => self.bound.push(n.id.to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.target(x)),
            Expr::List(l) => l.elts.iter().for_each(|x| self.target(x)),
            Expr::Starred(s) => self.target(&s.value),
            Expr::Subscript(s) => {
                self.base(&s.value);
                self.expr(&s.slice);
            }
            Expr::Attribute(a) => self.base(&a.value),
            _ => {}
        }
    }

    fn base(&mut self, e: &Expr) {
        match e {
            Expr::Name(n) => self.mutated.push(n.id.to_string()),
            Expr::Subscript(s) => self.base(&s.value),
            Expr::Attribute(a) => self.base(&a.value),
            other => self.expr(other),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Call(c) => {
                if let Expr::Attribute(a) = &*c.func {
                    self.base(&a.value);
                } else {
                    self.expr(&c.func);
                }
                for a in &c.args {
                    match a {
                        Expr::Name(n) => self.mutated.push(n.id.to_string()),
                        other => self.expr(other),
                    }
                }
                for k in &c.keywords {
                    match &k.value {
                        Expr::Name(n) => self.mutated.push(n.id.to_string()),
                        other => self.expr(other),
                    }
                }
            }
            Expr::NamedExpr(n) => {
                self.target(&n.target);
                self.expr(&n.value);
            }
            Expr::BoolOp(b) => b.values.iter().for_each(|x| self.expr(x)),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::UnaryOp(u) => self.expr(&u.operand),
            Expr::IfExp(i) => {
                self.expr(&i.test);
                self.expr(&i.body);
                self.expr(&i.orelse);
            }
            Expr::Compare(c) => {
                self.expr(&c.left);
                c.comparators.iter().for_each(|x| self.expr(x));
            }
            Expr::List(l) => l.elts.iter().for_each(|x| self.expr(x)),
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.expr(x)),
            Expr::Dict(d) => {
                d.keys.iter().flatten().for_each(|x| self.expr(x));
                d.values.iter().for_each(|x| self.expr(x));
            }
            Expr::ListComp(c) => {
                self.expr(&c.elt);
                self.gens(&c.generators);
            }
            Expr::GeneratorExp(g) => {
                self.expr(&g.elt);
                self.gens(&g.generators);
            }
            Expr::DictComp(d) => {
                self.expr(&d.key);
                self.expr(&d.value);
                self.gens(&d.generators);
            }
            Expr::Subscript(s) => {
                self.expr(&s.value);
                self.expr(&s.slice);
            }
            Expr::Attribute(a) => self.expr(&a.value),
            Expr::Starred(s) => self.expr(&s.value),
            Expr::JoinedStr(j) => j.values.iter().for_each(|x| self.expr(x)),
            Expr::FormattedValue(f) => self.expr(&f.value),
            _ => {}
        }
    }

    fn gens(&mut self, gens: &[ast::Comprehension]) {
        for g in gens {
            self.expr(&g.iter);
            g.ifs.iter().for_each(|x| self.expr(x));
        }
    }
}
