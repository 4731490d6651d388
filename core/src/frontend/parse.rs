//! Parsing: Python source to the jit functions of a module.
//!
//! The whole file is parsed with `rustpython-parser`; a syntax error anywhere is an
//! [`ErrorKind::Syntax`] diagnostic at the parser's location. Only functions decorated
//! `@triton.jit`, `@tilewise.jit` or `@jit` (with or without call arguments) are kept
//! for tracing; other top-level functions are remembered by name (so that calling one
//! from a kernel gives a clear error), imports bind module aliases, and simple
//! top-level assignments are kept as candidate global constants. The tracer skips
//! everything else (host code, `if __name__ == "__main__":`); every top-level statement
//! is also kept, in order, in [`ParsedModule::top_level`] for the host-side evaluator of
//! `@triton.autotune` (`autotune/`).

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
    /// Every top-level statement in source order (host functions, imports, module
    /// code); a jit function appears as its index in `jit`.
    pub top_level: Vec<TopLevel>,
}

/// One top-level statement of a module.
pub enum TopLevel {
    /// The jit function `jit[i]`.
    Jit(usize),
    /// Any other statement, kept whole.
    Stmt(Stmt),
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

pub(super) fn dotted(e: &Expr) -> Option<String> {
    match e {
        Expr::Name(n) => Some(n.id.to_string()),
        Expr::Attribute(a) => Some(format!("{}.{}", dotted(&a.value)?, a.attr.as_str())),
        _ => None,
    }
}

pub(super) fn is_jit_decorator(e: &Expr) -> bool {
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
        | "triton.language.random"
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

/// Nesting limits checked before parsing. The parser's AST, its `Clone` and `Drop`,
/// and the tracer all recurse once a level, so a source nested thousands of levels
/// deep (10 000 terms of `1 + 1 + ...`) overflowed the stack, which aborts the process
/// rather than panicking. The first two are CPython's own limits.
const MAX_BRACKETS: usize = 200;
const MAX_INDENT: usize = 100;
/// Operators, brackets and keywords in one logical line, and `elif`s in a file: each
/// may nest the AST one level deeper.
const MAX_LINE_OPERATORS: usize = 1000;
const MAX_ELIF: usize = 500;

/// Skips the string literal whose opening quote is at `i`; returns the index after it
/// (an unterminated one-line string stops before its newline).
fn skip_string(b: &[u8], mut i: usize) -> usize {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    i += if triple { 3 } else { 1 };
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            c if c == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) => {
                return i + if triple { 3 } else { 1 };
            }
            b'\n' if !triple => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// Rejects sources nested deeper than [`MAX_BRACKETS`], [`MAX_INDENT`],
/// [`MAX_LINE_OPERATORS`] or [`MAX_ELIF`] allow, with a syntax error at the token
/// that goes past the limit. A linear scan over the bytes (strings and comments
/// skipped); it only ever over-counts.
fn check_nesting(source: &Arc<SourceFile>) -> Result<()> {
    let b = source.text.as_bytes();
    let fail = |at: usize, msg: String| {
        Err(Diagnostic::new(ErrorKind::Syntax, msg)
            .at(Span::new(at as u32, (at + 1).min(b.len()) as u32), "here")
            .with_source(source))
    };
    let (mut i, mut brackets, mut ops, mut elifs) = (0usize, 0usize, 0usize, 0usize);
    let mut indents: Vec<usize> = vec![0];
    let mut line_start = true;
    while i < b.len() {
        if line_start {
            line_start = false;
            let (mut j, mut width) = (i, 0usize);
            while j < b.len() && matches!(b[j], b' ' | b'\t' | b'\x0c') {
                width = match b[j] {
                    b'\t' => (width / 8 + 1) * 8,
                    b' ' => width + 1,
                    _ => 0,
                };
                j += 1;
            }
            if j < b.len() && !matches!(b[j], b'\n' | b'\r' | b'#') {
                while indents.last().is_some_and(|&t| t > width) {
                    indents.pop();
                }
                if indents.last().is_none_or(|&t| t < width) {
                    indents.push(width);
                }
                if indents.len() > MAX_INDENT + 1 {
                    return fail(
                        j,
                        format!("too many levels of indentation (more than {MAX_INDENT})"),
                    );
                }
            }
            i = j;
            continue;
        }
        let start = i;
        i += 1;
        match b[start] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' | b'"' => i = skip_string(b, start),
            // A line continuation: the newline after it does not end the line.
            b'\\' => {
                i += if b.get(i..i + 2) == Some(b"\r\n") {
                    2
                } else {
                    1
                };
            }
            b'\n' | b'\r' if brackets == 0 => {
                ops = 0;
                line_start = true;
            }
            b'(' | b'[' | b'{' => {
                brackets += 1;
                ops += 1;
                if brackets > MAX_BRACKETS {
                    return fail(
                        start,
                        format!("too many nested brackets (more than {MAX_BRACKETS})"),
                    );
                }
            }
            b')' | b']' | b'}' => brackets = brackets.saturating_sub(1),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<' | b'>'
            | b'=' | b'!' | b'.' | b':' => ops += 1,
            c if c.is_ascii_digit() => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.')
                {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                match &b[start..i] {
                    b"elif" => {
                        elifs += 1;
                        if elifs > MAX_ELIF {
                            return fail(
                                start,
                                format!("more than {MAX_ELIF} `elif` branches in one file"),
                            );
                        }
                    }
                    b"if" | b"else" | b"not" | b"and" | b"or" | b"in" | b"is" | b"for"
                    | b"lambda" | b"await" | b"yield" => ops += 1,
                    _ => {}
                }
            }
            _ => {}
        }
        if ops > MAX_LINE_OPERATORS {
            return fail(start, format!("a line nests more than {MAX_LINE_OPERATORS} operators, brackets and keywords; split it into several statements"));
        }
    }
    Ok(())
}

pub fn parse_module(name: &str, text: &str) -> Result<ParsedModule> {
    let source = SourceFile::new(name, text);
    check_nesting(&source)?;
    let suite = ast::Suite::parse(text, name).map_err(|e| syntax_error(e, &source))?;
    let mut m = ParsedModule {
        source: source.clone(),
        jit: vec![],
        jit_index: HashMap::new(),
        non_jit: vec![],
        imports: HashMap::new(),
        globals: vec![],
        top_level: vec![],
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
                    m.top_level.push(TopLevel::Jit(m.jit.len()));
                    m.jit_index.insert(name.clone(), m.jit.len());
                    m.jit.push(JitFn {
                        name,
                        def,
                        params,
                        span,
                    });
                } else {
                    m.non_jit.push(def.name.to_string());
                    m.top_level.push(TopLevel::Stmt(Stmt::FunctionDef(def)));
                }
            }
            other => {
                match &other {
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
                m.top_level.push(TopLevel::Stmt(other));
            }
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
        // Every top-level statement is kept in order, jit functions by index.
        let kinds: Vec<&str> = m
            .top_level
            .iter()
            .map(|t| match t {
                TopLevel::Jit(0) => "k",
                TopLevel::Jit(_) => "k2",
                TopLevel::Stmt(Stmt::FunctionDef(_)) => "def",
                TopLevel::Stmt(Stmt::If(_)) => "if",
                TopLevel::Stmt(_) => "import",
            })
            .collect();
        assert_eq!(
            kinds,
            ["import", "import", "import", "k", "k2", "def", "if"]
        );
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
