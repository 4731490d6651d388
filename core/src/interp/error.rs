//! Errors the interpreter reports: runtime errors located at the op's source line and
//! the program id, launch errors, and internal errors (malformed IR).

use crate::diag::{Diagnostic, ErrorKind, Span};
use crate::ir::Kernel;

/// A runtime error: `"{what} in kernel `k` (line L), program (x, y, z): {detail}"`,
/// pointing at `span`.
pub fn runtime(k: &Kernel, span: Span, pid: [u32; 3], what: &str, detail: &str) -> Diagnostic {
    let line = k.line_of(span);
    let msg = format!(
        "{what} in kernel `{}` (line {line}), program ({}, {}, {}): {detail}",
        k.name, pid[0], pid[1], pid[2]
    );
    Diagnostic::new(ErrorKind::Runtime, msg)
        .at(span, what)
        .with_source(&k.source)
}

/// A launch error (bad arguments).
pub fn launch(k: &Kernel, msg: String) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::Launch,
        format!("launch of kernel `{}`: {msg}", k.name),
    )
    .at(k.span, "")
    .with_source(&k.source)
}

/// Malformed IR that the verifier would reject.
pub fn internal(k: &Kernel, span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::internal(format!("interpreter: {} (kernel `{}`)", msg.into(), k.name))
        .at(span, "")
        .with_source(&k.source)
        .with_note("this is a bug in tilewise or in the IR given to the interpreter")
}

/// An out-of-bounds lane found by the memory layer, before it is located.
#[derive(Clone, Debug)]
pub struct Oob {
    /// Flat index of the lane in the tile.
    pub lane: usize,
    /// The element index relative to the buffer view.
    pub index: i64,
    /// The view's length in elements.
    pub len: usize,
    /// The root parameter.
    pub param: u32,
}
