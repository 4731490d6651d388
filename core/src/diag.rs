//! Diagnostics: the one error type of tilewise, with source spans.
//!
//! Every error a user can cause (a syntax error, a shape mismatch at trace time, a bad
//! launch, an out-of-bounds access found by the interpreter) is a [`Diagnostic`]: a
//! category, a message, an optional primary [`Span`] with a label, notes, and the
//! [`SourceFile`] the spans point into. [`Diagnostic::render`] draws it the way rustc
//! does (file, line, column, the source line, a caret under the span); `Display` is
//! that rendering. Nothing in the library panics on user input: errors flow back as
//! `Result<_, Diagnostic>`.

use std::fmt;
use std::sync::Arc;

/// A source text with its name, shared by every span that points into it.
#[derive(Debug, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// Byte offset of the start of each line.
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<SourceFile> {
        let text = text.into();
        let mut line_starts = vec![0u32];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        Arc::new(SourceFile {
            name: name.into(),
            text,
            line_starts,
        })
    }

    /// One-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        let offset = offset.min(self.text.len() as u32);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line] as usize;
        let end = (offset as usize).max(start);
        let col = self
            .text
            .get(start..end)
            .map(|s| s.chars().count())
            .unwrap_or(end - start);
        (line as u32 + 1, col as u32 + 1)
    }

    /// The byte offset where one-based `line` starts, if the text has it.
    pub fn line_start(&self, line: u32) -> Option<u32> {
        self.line_starts.get(line.checked_sub(1)? as usize).copied()
    }

    /// The text of a one-based line, without its newline.
    pub fn line_text(&self, line: u32) -> &str {
        let i = (line.max(1) - 1) as usize;
        let Some(&start) = self.line_starts.get(i) else {
            return "";
        };
        let end = self
            .line_starts
            .get(i + 1)
            .map(|&e| e as usize)
            .unwrap_or(self.text.len());
        self.text[start as usize..end].trim_end_matches(['\n', '\r'])
    }
}

/// A byte range in a [`SourceFile`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub const NONE: Span = Span { start: 0, end: 0 };

    pub fn new(start: u32, end: u32) -> Span {
        Span {
            start,
            end: end.max(start),
        }
    }

    pub fn is_none(&self) -> bool {
        *self == Span::NONE
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self.is_none() {
            return other;
        }
        if other.is_none() {
            return self;
        }
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// What went wrong, broadly; tests and callers match on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    /// The source does not parse as Python.
    Syntax,
    /// A name, function or attribute that does not exist.
    Name,
    /// Wrong dtype or an operation the dtype does not allow.
    Type,
    /// Shapes that do not broadcast, non-power-of-two ranges, wrong ranks.
    Shape,
    /// Wrong number or kind of arguments to a call or a launch.
    Argument,
    /// A Python or Triton construct tilewise does not support (the message says which).
    Unsupported,
    /// `tl.static_assert` failed, or a value that must be constant is not.
    Static,
    /// A bad launch: grid, buffers, devices.
    Launch,
    /// An error while a kernel runs: out-of-bounds access, failed `device_assert`.
    Runtime,
    /// A backend cannot compile or run the kernel (unsupported type, resource limit).
    Backend,
    /// A bug in tilewise itself; please report it.
    Internal,
}

impl ErrorKind {
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::Syntax => "syntax error",
            ErrorKind::Name => "name error",
            ErrorKind::Type => "type error",
            ErrorKind::Shape => "shape error",
            ErrorKind::Argument => "argument error",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Static => "static check failed",
            ErrorKind::Launch => "launch error",
            ErrorKind::Runtime => "runtime error",
            ErrorKind::Backend => "backend error",
            ErrorKind::Internal => "internal error",
        }
    }
}

/// A labelled span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

/// The error type of tilewise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: ErrorKind,
    pub message: String,
    /// Where it happened; the caret goes here.
    pub primary: Option<Label>,
    /// Other places worth showing (where a value came from, the callee's definition).
    pub secondary: Vec<Label>,
    pub notes: Vec<String>,
    pub source: Option<Arc<SourceFile>>,
}

impl Diagnostic {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            kind,
            message: message.into(),
            primary: None,
            secondary: vec![],
            notes: vec![],
            source: None,
        }
    }

    pub fn internal(message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(ErrorKind::Internal, message)
    }

    /// Points the diagnostic at `span` with a label (may be empty).
    pub fn at(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        if !span.is_none() {
            self.primary = Some(Label {
                span,
                text: label.into(),
            });
        }
        self
    }

    /// Points at `span` unless a location is already set.
    pub fn or_at(self, span: Span) -> Diagnostic {
        if self.primary.is_some() {
            self
        } else {
            self.at(span, "")
        }
    }

    pub fn with_secondary(mut self, span: Span, label: impl Into<String>) -> Diagnostic {
        if !span.is_none() {
            self.secondary.push(Label {
                span,
                text: label.into(),
            });
        }
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Attaches the source the spans point into (kept if one is already attached).
    pub fn with_source(mut self, source: &Arc<SourceFile>) -> Diagnostic {
        if self.source.is_none() {
            self.source = Some(source.clone());
        }
        self
    }

    /// One-based (line, column) of the primary span, if there is one and a source.
    pub fn line_col(&self) -> Option<(u32, u32)> {
        let (src, label) = (self.source.as_ref()?, self.primary.as_ref()?);
        Some(src.line_col(label.span.start))
    }

    /// The primary span's source line number, if any.
    pub fn line(&self) -> Option<u32> {
        self.line_col().map(|(l, _)| l)
    }

    /// Renders the diagnostic as rustc does: a header, `--> file:line:col`, the source
    /// line with carets under the span and the label, then notes. Plain ASCII, no colour.
    pub fn render(&self) -> String {
        let mut out = format!("error[{}]: {}\n", self.kind.title(), self.message);
        if let (Some(src), Some(primary)) = (&self.source, &self.primary) {
            let mut labels = vec![(primary, '^')];
            labels.extend(self.secondary.iter().map(|l| (l, '-')));
            let (line, col) = src.line_col(primary.span.start);
            let width = labels
                .iter()
                .map(|(l, _)| src.line_col(l.span.start).0.to_string().len())
                .max()
                .unwrap_or(1);
            let pad = " ".repeat(width);
            out.push_str(&format!("{pad}--> {}:{line}:{col}\n", src.name));
            out.push_str(&format!("{pad} |\n"));
            for (label, mark) in labels {
                let (l, c) = src.line_col(label.span.start);
                let text = src.line_text(l);
                let (end_line, end_col) = src.line_col(label.span.end);
                let line_chars = text.chars().count() as u32;
                let last = if end_line == l {
                    end_col.max(c + 1)
                } else {
                    line_chars + 1
                };
                let len = last.saturating_sub(c).max(1) as usize;
                out.push_str(&format!("{l:>width$} | {text}\n"));
                let marks = mark.to_string().repeat(len);
                let gap = " ".repeat(c as usize - 1);
                let sep = if label.text.is_empty() { "" } else { " " };
                out.push_str(&format!("{pad} | {gap}{marks}{sep}{}\n", label.text));
            }
        } else if let Some(src) = &self.source {
            out.push_str(&format!(" --> {}\n", src.name));
        }
        for note in &self.notes {
            out.push_str(&format!(" = note: {note}\n"));
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl std::error::Error for Diagnostic {}

/// The result type used throughout tilewise.
pub type Result<T, E = Diagnostic> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_caret_under_span() {
        let src = SourceFile::new("k.py", "def f():\n    c = a + b\n");
        let start = src.text.find("a + b").unwrap() as u32;
        let d = Diagnostic::new(ErrorKind::Shape, "incompatible dimensions 4 and 8")
            .at(Span::new(start, start + 5), "shapes (4,) and (8,)")
            .with_source(&src);
        assert_eq!(d.line_col(), Some((2, 9)));
        let r = d.render();
        assert!(r.contains("--> k.py:2:9"), "{r}");
        assert!(r.contains("2 |     c = a + b"), "{r}");
        assert!(r.contains("  |         ^^^^^ shapes (4,) and (8,)"), "{r}");
    }
}
