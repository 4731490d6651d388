//! The evaluator's common diagnostics: integer overflow, type errors, missing
//! arguments and arity, unknown attributes and missing dict keys.

use super::repr::py_repr;
use super::values::{describe, V};
use crate::diag::{Diagnostic, ErrorKind, Span};
use crate::frontend::tracer::err;

pub(super) fn overflow(span: Span) -> Diagnostic {
    err(
        ErrorKind::Unsupported,
        "integer overflow: configuration code is evaluated with 64-bit integers",
        span,
    )
}

pub(super) fn type_err(msg: impl Into<String>, span: Span) -> Diagnostic {
    err(ErrorKind::Type, msg, span)
}

pub(super) fn missing(fname: &str, what: &str, span: Span) -> Diagnostic {
    err(
        ErrorKind::Argument,
        format!("`{fname}` is missing the argument `{what}`"),
        span,
    )
}

pub(super) fn arity(fname: &str, want: &str, got: usize, span: Span) -> Diagnostic {
    err(
        ErrorKind::Argument,
        format!("`{fname}` takes {want} arguments, {got} given"),
        span,
    )
}

pub(super) fn no_attr(v: &V, name: &str, span: Span) -> Diagnostic {
    err(
        ErrorKind::Name,
        format!(
            "{} has no attribute `{name}` in configuration code",
            describe(v)
        ),
        span,
    )
}

pub(super) fn key_error(key: &V, span: Span) -> Diagnostic {
    err(
        ErrorKind::Runtime,
        format!("key {} is not in the dict", py_repr(key)),
        span,
    )
}
