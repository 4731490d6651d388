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

/// No program can progress: every unfinished program waits in a loop for memory that
/// no running program will change.
pub fn deadlock(k: &Kernel, span: Span, programs: &[String]) -> Diagnostic {
    let line = k.line_of(span);
    let shown: Vec<&str> = programs.iter().take(8).map(String::as_str).collect();
    let more = if programs.len() > 8 {
        format!(" and {} more", programs.len() - 8)
    } else {
        String::new()
    };
    Diagnostic::new(
        ErrorKind::Runtime,
        format!(
            "no program can progress in kernel `{}`: program{} {}{more} wait{} in the loop at line {line} for memory that no other program will change",
            k.name,
            if programs.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if programs.len() == 1 { "s" } else { "" },
        ),
    )
    .at(span, "waiting here")
    .with_source(&k.source)
    .with_note("every other program has finished or waits too (a lock never released, a flag never set)")
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
