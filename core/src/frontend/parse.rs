//! Parsing: Python source to the jit functions of a module.
//!
//! The whole file is parsed with `rustpython-parser`; a syntax error anywhere is an
//! [`ErrorKind::Syntax`] diagnostic at the parser's location. Only functions decorated
//! `@triton.jit`, `@tilewise.jit` or `@jit` (with or without call arguments) are kept
//! for tracing; other top-level functions are remembered by name (so that calling one
//! from a kernel gives a clear error), imports bind module aliases, and simple
//! top-level assignments are kept as candidate global constants. Everything else
//! (host code, `if __name__ == "__main__":`) is skipped.

use super::value::Namespace;
use crate::diag::{Diagnostic, ErrorKind, Result, SourceFile, Span};
use rustpython_parser::ast::{self, Expr, Ranged, Stmt};
use rustpython_parser::Parse;
use std::collections::HashMap;
use std::sync::Arc;

/// The span of an AST node.
pub fn span_of(node: &impl Ranged) -> Span {
    let r = node.range();
    Span::new(u32::from(r.start()), u32::from(r.end()))
}

/// A jit function as parsed.
pub struct JitFn {
    pub name: String,
    pub def: ast::StmtFunctionDef,
    /// Parameters in declaration order (positional-only, regular, keyword-only).
    pub params: Vec<ParsedParam>,
    /// Span of the `def name(...)` header line.
    pub span: Span,
}

pub struct ParsedParam {
    pub name: String,
    pub constexpr: bool,
    pub default: Option<Expr>,
    pub span: Span,
}

/// Everything the tracer needs from a parsed file.
pub struct ParsedModule {
    pub source: Arc<SourceFile>,
    pub jit: Vec<JitFn>,
    pub jit_index: HashMap<String, usize>,
    pub non_jit: Vec<String>,
    /// Top-level import aliases.
    pub imports: HashMap<String, Namespace>,
    /// Top-level `NAME = expr` / `NAME: ann = expr` statements, in order.
    pub globals: Vec<(String, Expr)>,
}

/// Whether `e` names `triton.language.constexpr` (or `tl.constexpr`, `constexpr`).
pub fn is_constexpr_annotation(e: &Expr) -> bool {
    match e {
        Expr::Attribute(a) => a.attr.as_str() == "constexpr",
        Expr::Name(n) => n.id.as_str() == "constexpr",
        Expr::Constant(c) => matches!(&c.value, ast::Constant::Str(s) if s.contains("constexpr")),
        _ => false,
    }
}

fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr.as_str())),
        _ => None,
    }
}

fn is_jit_decorator(e: &Expr) -> bool {
    let target = match e {
        Expr::Call(c) => &c.func,
        other => other,
    };
    matches!(
        dotted(target).as_deref(),
        Some("triton.jit" | "tilewise.jit" | "jit")
    )
}

fn namespace_of_module(path: &str) -> Option<Namespace> {
    match path {
        "triton" | "tilewise" => Some(Namespace::Triton),
        "triton.language"
        | "tilewise.language"
        | "triton.language.math"
        | "triton.language.extra.libdevice"
        | "triton.language.extra.cuda.libdevice"
        | "triton.language.extra" => Some(Namespace::Tl),
        _ => None,
    }
}

fn collect_imports(stmt: &Stmt, imports: &mut HashMap<String, Namespace>) {
    match stmt {
        Stmt::Import(i) => {
            for alias in &i.names {
                let path = alias.name.as_str();
                match &alias.asname {
                    Some(a) => {
                        if let Some(ns) = namespace_of_module(path) {
                            imports.insert(a.to_string(), ns);
                        }
                    }
                    None => {
                        let first = path.split('.').next().unwrap_or(path);
                        if let Some(ns) = namespace_of_module(first) {
                            imports.insert(first.to_string(), ns);
                        }
                    }
                }
            }
        }
        Stmt::ImportFrom(f) => {
            let Some(module) = &f.module else { return };
            for alias in &f.names {
                let full = format!("{}.{}", module.as_str(), alias.name.as_str());
                let bound = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                if let Some(ns) = namespace_of_module(&full) {
                    imports.insert(bound, ns);
                }
            }
        }
        _ => {}
    }
}

/// Converts a parser error to a diagnostic.
fn syntax_error(e: rustpython_parser::ParseError, source: &Arc<SourceFile>) -> Diagnostic {
    let off = u32::from(e.offset);
    let end = (off + 1).min(source.text.len() as u32).max(off);
    Diagnostic::new(
        ErrorKind::Syntax,
        format!("invalid Python syntax: {}", e.error),
    )
    .at(Span::new(off, end), "here")
    .with_source(source)
}

/// Span of `def name(` .. end of that line, for a function definition.
fn def_span(def: &ast::StmtFunctionDef, source: &SourceFile) -> Span {
    let whole = span_of(def);
    let text = &source.text;
    let start = whole.start as usize;
    let slice = text.get(start..whole.end as usize).unwrap_or("");
    let needle = format!("def {}", def.name.as_str());
    let off = slice.find(&needle).map(|o| start + o).unwrap_or(start);
    let line_end = text
        .get(off..)
        .and_then(|t| t.find('\n'))
        .map(|e| off + e)
        .unwrap_or(text.len());
    Span::new(off as u32, line_end.max(off + 1).min(text.len()) as u32)
}

pub fn parse_module(name: &str, text: &str) -> Result<ParsedModule> {
    let source = SourceFile::new(name, text);
    let suite = ast::Suite::parse(text, name).map_err(|e| syntax_error(e, &source))?;
    let mut m = ParsedModule {
        source: source.clone(),
        jit: vec![],
        jit_index: HashMap::new(),
        non_jit: vec![],
        imports: HashMap::new(),
        globals: vec![],
    };
    for stmt in suite {
        collect_imports(&stmt, &mut m.imports);
        match stmt {
            Stmt::FunctionDef(def) => {
                if def.decorator_list.iter().any(is_jit_decorator) {
                    let mut params = vec![];
                    let a = &def.args;
                    for p in a.posonlyargs.iter().chain(&a.args).chain(&a.kwonlyargs) {
                        params.push(ParsedParam {
                            name: p.def.arg.to_string(),
                            constexpr: p
                                .def
                                .annotation
                                .as_deref()
                                .is_some_and(is_constexpr_annotation),
                            default: p.default.as_deref().cloned(),
                            span: span_of(&p.def),
                        });
                    }
                    let span = def_span(&def, &source);
                    let name = def.name.to_string();
                    m.jit_index.insert(name.clone(), m.jit.len());
                    m.jit.push(JitFn {
                        name,
                        def,
                        params,
                        span,
                    });
                } else {
                    m.non_jit.push(def.name.to_string());
                }
            }
            Stmt::Assign(a) => {
                if let [Expr::Name(n)] = a.targets.as_slice() {
                    m.globals.push((n.id.to_string(), (*a.value).clone()));
                }
            }
            Stmt::AnnAssign(a) => {
                if let (Expr::Name(n), Some(v)) = (&*a.target, &a.value) {
                    m.globals.push((n.id.to_string(), (**v).clone()));
                }
            }
            _ => {}
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_jit_functions_and_skips_host_code() {
        let src = "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, N: tl.constexpr = 4):\n    pass\n\n@triton.jit(debug=True)\ndef k2(a):\n    pass\n\ndef host():\n    k[(1,)](torch.zeros(4))\n\nif __name__ == '__main__':\n    host()\n";
        let m = parse_module("t.py", src).unwrap();
        let names: Vec<&str> = m.jit.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["k", "k2"]);
        assert!(m.jit[0].params[1].constexpr);
        assert!(m.jit[0].params[1].default.is_some());
        assert_eq!(m.non_jit, ["host"]);
        assert_eq!(m.imports.get("tl"), Some(&Namespace::Tl));
        let (line, _) = m.source.line_col(m.jit[0].span.start);
        assert_eq!(line, 6);
    }

    #[test]
    fn syntax_errors_have_locations() {
        let e = parse_module("t.py", "@triton.jit\ndef k(:\n    pass\n")
            .err()
            .unwrap();
        assert_eq!(e.kind, ErrorKind::Syntax);
        assert_eq!(e.line(), Some(2));
    }
}
