//! Checked mode on the GPUs: the sites a checked kernel tests, the record its threads
//! report into, and the diagnostic a launch turns the record into; also the print
//! buffer of `tl.device_print`.
//!
//! With [`crate::lower::expand::ExpandOptions::checked`], the expansion gives the kernel
//! hidden parameters after its own: the length in elements of every buffer
//! parameter's view (an `i32` each, `tw_len_<name>`), then `tw_checks`, a small `i32`
//! buffer (the record). Every global load, store, atomic and asynchronous copy tests
//! its element index against the view's length: an enabled lane outside it is masked
//! off (the access is never performed) and reported. `tl.device_assert`, false
//! `multiple_of` / `max_contiguous` / `max_constancy` hints and block pointers whose
//! declared shape reaches past their buffer are tested and reported the same way.
//!
//! The record has two slots of [`SLOT_WORDS`] words, one for the first error and one
//! for the first warning (a false hint no access is widened with, which cannot change
//! a result). A thread that finds a violation claims the slot with a compare-and-swap
//! of word 0 from 0 to `site + 1` (the first claim wins; later ones are dropped) and
//! fills in the program id, the element's row-major index in the site's tile, and two
//! 64-bit values (see [`CheckKind`] for what they hold). The host zeroes the record
//! before a launch and reads it after; [`diagnose`] makes the diagnostic the
//! interpreter would give for the same violation (the same message; on a GPU, which of
//! several violations is reported first is the hardware's choice).
//!
//! A kernel that calls `tl.device_print` gets the same hidden parameters, checked mode
//! or not, and after them `tw_prints`, the print buffer ([`PRINT_WORDS`]): each printed
//! element claims an entry with an atomic add; [`print_lines`] turns the buffer into
//! the interpreter's lines.

use crate::diag::{Diagnostic, ErrorKind, SourceFile, Span};
use std::sync::Arc;

/// Words in one slot of the record.
pub const SLOT_WORDS: u32 = 16;
/// The error slot's first word.
pub const ERROR_SLOT: u32 = 0;
/// The warning slot's first word.
pub const WARNING_SLOT: u32 = SLOT_WORDS;
/// Words in the record.
pub const RECORD_WORDS: u32 = 2 * SLOT_WORDS;

/// Word offsets inside a slot.
pub mod word {
    /// `site + 1`; 0 while the slot is free.
    pub const SITE: u32 = 0;
    /// `tl.program_id(0..3)`.
    pub const PID: u32 = 1;
    /// Row-major index of the element in the site's tile.
    pub const ELEMENT: u32 = 4;
    /// The first value, low then high 32 bits.
    pub const VALUE: u32 = 5;
    /// The second value, low then high 32 bits.
    pub const VALUE2: u32 = 7;
    /// Block pointers: the declared shape (up to [`super::MAX_REPORTED_RANK`] dims),
    /// then the strides, as `i32`.
    pub const EXTRA: u32 = 9;
}

/// Dimensions of a block pointer's shape and strides the record holds.
pub const MAX_REPORTED_RANK: usize = 3;

/// Which rule a false hint broke along one dimension.
#[derive(Clone, Debug, PartialEq)]
pub enum HintRule {
    /// A run of consecutive values starts at a value that is not a multiple of this.
    MultipleOf(i64),
    /// Groups of this many values along the dimension are not consecutive.
    Contiguous(i64),
    /// Groups of this many values along the dimension are not equal.
    Constancy(i64),
}

/// What a site tests.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckKind {
    /// A load, store or atomic (`what`) through buffer parameter `param`: `VALUE` is
    /// the element index found outside the view.
    Access { what: &'static str, param: u32 },
    /// `tl.device_assert(cond, message)`: the element where it is false.
    Assert { message: String },
    /// A hint on a tile: `VALUE` is the offending element's value, `VALUE2` the one
    /// before it along the dimension. `widens`: whether the lowering widens a memory
    /// access with this hint (an error; otherwise a warning).
    Hint {
        name: &'static str,
        rule: HintRule,
        widens: bool,
    },
    /// A block pointer into buffer parameter `param`, of `rank` dimensions: `VALUE`
    /// is the element index its declared extent reaches outside the view.
    BlockPtr { param: u32, rank: u32 },
}

/// One tested place of the source.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckSite {
    pub span: Span,
    pub kind: CheckKind,
    /// The shape of the tile `ELEMENT` indexes (empty for a scalar).
    pub shape: Vec<u32>,
}

/// The checks of a kernel lowered in checked mode, or of a kernel that prints (then
/// with [`Checks::print_buffer`]).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Checks {
    pub sites: Vec<CheckSite>,
    /// `(buffer parameter, parameter holding its view's length)`, for every buffer
    /// parameter of the kernel.
    pub lens: Vec<(u32, u32)>,
    /// The parameter of the record buffer.
    pub record: u32,
    /// `tl.device_print`: the parameter of the print buffer (see [`PRINT_WORDS`]),
    /// when the kernel prints.
    pub print_buffer: Option<u32>,
    /// What each print entry's site is.
    pub prints: Vec<PrintSite>,
}

/// Words of the print buffer: word 0 counts the entries claimed (also those that did
/// not fit), then entries of [`PRINT_ENTRY_WORDS`] words.
pub const PRINT_WORDS: u32 = 1 << 20;
/// Words of one print entry: site, program id (3), element, value (low, high).
pub const PRINT_ENTRY_WORDS: u32 = 7;

/// One operand of one `tl.device_print`.
#[derive(Clone, Debug, PartialEq)]
pub struct PrintSite {
    pub span: Span,
    /// The label printed before each value (the prefix, with the operand's number
    /// when the print has several).
    pub label: String,
    pub shape: Vec<u32>,
    /// How the value words decode.
    pub value: PrintValue,
    pub hex: bool,
}

/// How a print entry's value is stored.
#[derive(Clone, Debug, PartialEq)]
pub enum PrintValue {
    /// A signed integer (sign-extended to 64 bits).
    Int,
    /// An unsigned integer (zero-extended).
    Uint,
    /// An f32 (low word; f16 and bf16 widened to it).
    F32,
    /// An f64 (both words).
    F64,
    /// An element offset into buffer parameter `param`.
    Ptr { param: u32 },
}

impl Checks {
    /// The length parameter of buffer parameter `buffer`.
    pub fn len_param(&self, buffer: u32) -> Option<u32> {
        self.lens
            .iter()
            .find(|(b, _)| *b == buffer)
            .map(|(_, l)| *l)
    }
}

/// What a launch of a checked kernel needs besides the kernel: which hidden
/// parameters to fill and how to read the record back.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedKernel {
    pub kernel: String,
    pub checks: Checks,
    /// Every parameter's name, hidden ones included.
    pub params: Vec<String>,
    /// The tensor map parameters (the launcher builds them; no argument feeds them).
    pub tensor_maps: Vec<u32>,
    pub source: Option<Arc<SourceFile>>,
}

/// A hidden argument of a checked launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HiddenArg {
    /// The view length of the kernel's parameter `of` (an `i32`, saturated).
    LenOf(u32),
    /// The record buffer ([`RECORD_WORDS`] `i32`s, zeroed before the launch).
    Record,
    /// The print buffer ([`PRINT_WORDS`] `i32`s, word 0 zeroed before the launch).
    Prints,
}

impl CheckedKernel {
    /// The checked-mode part of `k` (`None` when it was not lowered checked).
    pub fn of(k: &super::ThreadKernel) -> Option<CheckedKernel> {
        Some(CheckedKernel {
            kernel: k.name.clone(),
            checks: k.checks.clone()?,
            params: k.params.iter().map(|p| p.name.clone()).collect(),
            tensor_maps: (0..k.params.len() as u32)
                .filter(|&p| matches!(k.params[p as usize].kind, super::ParamKind::TensorMap(_)))
                .collect(),
            source: k.source.clone(),
        })
    }

    /// What parameter `p` receives, for `p` past the kernel's own parameters.
    pub fn hidden(&self, p: u32) -> Option<HiddenArg> {
        if p == self.checks.record {
            return Some(HiddenArg::Record);
        }
        if Some(p) == self.checks.print_buffer {
            return Some(HiddenArg::Prints);
        }
        self.checks
            .lens
            .iter()
            .find(|(_, l)| *l == p)
            .map(|(b, _)| HiddenArg::LenOf(*b))
    }

    /// The error and warning a launch reported in `record`; `view_lens[p]` is the view
    /// length of parameter `p` (0 for scalars).
    pub fn diagnose(
        &self,
        record: &[i32],
        view_lens: &[usize],
    ) -> (Option<Diagnostic>, Option<Diagnostic>) {
        diagnose(
            &self.checks,
            record,
            &RecordContext {
                kernel: &self.kernel,
                source: self.source.as_ref(),
                params: &self.params,
                view_lens,
            },
        )
    }
}

/// The lines a print buffer holds, as the interpreter prints them
/// (`pid (x, y, z) idx (i, j) label: value`): by program, in the order each program
/// printed, each print's elements in order; then a note of entries that did not fit.
pub fn print_lines(checked: &CheckedKernel, words: &[i32]) -> Vec<String> {
    let Some(&claimed) = words.first() else {
        return vec![];
    };
    let claimed = claimed.max(0) as usize;
    let fit = (words.len().saturating_sub(1)) / PRINT_ENTRY_WORDS as usize;
    let n = claimed.min(fit);
    let entry =
        |i: usize| &words[1 + i * PRINT_ENTRY_WORDS as usize..][..PRINT_ENTRY_WORDS as usize];
    let mut order: Vec<usize> = (0..n).collect();
    let pid = |e: &[i32]| (e[3], e[2], e[1]);
    // By program, then in claim order; runs of one print sorted by element.
    order.sort_by_key(|&i| (pid(entry(i)), i));
    let mut start = 0;
    while start < order.len() {
        let (p, site) = (pid(entry(order[start])), entry(order[start])[0]);
        let mut end = start + 1;
        while end < order.len() && pid(entry(order[end])) == p && entry(order[end])[0] == site {
            end += 1;
        }
        order[start..end].sort_by_key(|&i| (entry(i)[4], i));
        start = end;
    }
    let mut lines = Vec::with_capacity(n + 1);
    for i in order {
        let e = entry(i);
        let Some(site) = checked.checks.prints.get(e[0] as usize) else {
            continue;
        };
        let bits = (e[5] as u32 as u64) | ((e[6] as u32 as u64) << 32);
        let text = match &site.value {
            PrintValue::Int | PrintValue::Uint if site.hex => format!("0x{:x}", bits as i64),
            PrintValue::Int | PrintValue::Uint => (bits as i64).to_string(),
            PrintValue::F32 | PrintValue::F64 => {
                let f = if site.value == PrintValue::F32 {
                    f32::from_bits(bits as u32) as f64
                } else {
                    f64::from_bits(bits)
                };
                if site.hex {
                    format!("0x{:x}", f.to_bits())
                } else {
                    format!("{f}")
                }
            }
            PrintValue::Ptr { param } => format!(
                "{}+{}",
                checked
                    .params
                    .get(*param as usize)
                    .map_or("*", String::as_str),
                bits as i64
            ),
        };
        lines.push(format!(
            "pid ({}, {}, {}) idx {} {}: {text}",
            e[1],
            e[2],
            e[3],
            fmt_index(e[4].max(0) as usize, &site.shape),
            site.label
        ));
    }
    if claimed > n {
        lines.push(format!(
            "({} more device_print values of kernel `{}` did not fit in the print buffer)",
            claimed - n,
            checked.kernel
        ));
    }
    lines
}

/// What a launch needs to turn a record into a diagnostic.
pub struct RecordContext<'a> {
    pub kernel: &'a str,
    pub source: Option<&'a Arc<SourceFile>>,
    /// Parameter names (the Thread IR kernel's, in order).
    pub params: &'a [String],
    /// Each parameter's view length in elements (0 for scalars).
    pub view_lens: &'a [usize],
}

fn value_at(slot: &[i32], at: u32) -> i64 {
    let lo = slot[at as usize] as u32 as u64;
    let hi = slot[at as usize + 1] as u32 as u64;
    (lo | (hi << 32)) as i64
}

fn fmt_index(i: usize, shape: &[u32]) -> String {
    let mut idx = vec![0usize; shape.len()];
    let mut i = i;
    for d in (0..shape.len()).rev() {
        let s = shape[d].max(1) as usize;
        idx[d] = i % s;
        i /= s;
    }
    let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// The diagnostics of a record read back after a launch: the error (if a thread
/// reported one) and the warning (if any).
pub fn diagnose(
    checks: &Checks,
    record: &[i32],
    cx: &RecordContext,
) -> (Option<Diagnostic>, Option<Diagnostic>) {
    let slot = |at: u32| -> Option<Diagnostic> {
        let s = record.get(at as usize..(at + SLOT_WORDS) as usize)?;
        let site = (s[word::SITE as usize] as u32).checked_sub(1)?;
        Some(match checks.sites.get(site as usize) {
            Some(site) => describe(site, s, cx),
            None => Diagnostic::internal(format!(
                "checked kernel `{}` reported site {site}, which it does not have",
                cx.kernel
            )),
        })
    };
    (slot(ERROR_SLOT), slot(WARNING_SLOT))
}

fn describe(site: &CheckSite, s: &[i32], cx: &RecordContext) -> Diagnostic {
    let pid = [
        s[word::PID as usize],
        s[word::PID as usize + 1],
        s[word::PID as usize + 2],
    ];
    let element = s[word::ELEMENT as usize].max(0) as usize;
    let value = value_at(s, word::VALUE);
    let value2 = value_at(s, word::VALUE2);
    let name = |p: u32| cx.params.get(p as usize).map_or("?", String::as_str);
    let len = |p: u32| cx.view_lens.get(p as usize).copied().unwrap_or(0);
    let at = fmt_index(element, &site.shape);
    let (what, detail, notes): (String, String, Vec<String>) = match &site.kind {
        CheckKind::Access { what, param } => (
            format!("out-of-bounds {what}"),
            format!(
                "element index {value} of a buffer of {} elements (argument `{}`)",
                len(*param),
                name(*param)
            ),
            vec![
                format!(
                    "at lane {at} of the {} tile",
                    crate::ir::fmt_shape(&site.shape)
                ),
                "mask the access (mask=, boundary_check=) or fix the offsets".into(),
            ],
        ),
        CheckKind::Assert { message } => (
            "device assertion failed".into(),
            format!("`{message}` is false at element {at}"),
            vec![],
        ),
        CheckKind::Hint { name, rule, widens } => {
            let why = match rule {
                HintRule::MultipleOf(k) => format!("starts a run and is not a multiple of {k}"),
                HintRule::Contiguous(g) => {
                    format!("breaks the run of {g} consecutive values (previous is {value2})")
                }
                HintRule::Constancy(g) => {
                    format!("breaks the group of {g} equal values (previous is {value2})")
                }
            };
            let note = if *widens {
                "the GPU lowerings use this hint to widen a memory access, so its results could change"
            } else {
                "reported as a warning: no memory access is widened with this hint, so it cannot change a result"
            };
            (
                format!("false `{name}` hint"),
                format!("element {at} is {value}, which {why}"),
                vec![note.into()],
            )
        }
        CheckKind::BlockPtr { param, rank } => {
            let r = (*rank as usize).min(MAX_REPORTED_RANK);
            let extra = |k: usize| s[word::EXTRA as usize + k];
            let (shape, strides): (Vec<i32>, Vec<i32>) = if (*rank as usize) <= MAX_REPORTED_RANK {
                (
                    (0..r).map(extra).collect(),
                    (0..r).map(|d| extra(MAX_REPORTED_RANK + d)).collect(),
                )
            } else {
                (vec![], vec![])
            };
            (
                "block pointer reaches past its buffer".into(),
                format!(
                    "its declared shape {shape:?} with strides {strides:?} covers element index {value}, \
                     outside a buffer of {} elements (argument `{}`)",
                    len(*param),
                    name(*param)
                ),
                vec![],
            )
        }
    };
    let line = cx
        .source
        .map(|src| src.line_col(site.span.start).0)
        .unwrap_or(0);
    let mut d = Diagnostic::new(
        ErrorKind::Runtime,
        format!(
            "{what} in kernel `{}` (line {line}), program ({}, {}, {}): {detail}",
            cx.kernel, pid[0], pid[1], pid[2]
        ),
    )
    .at(site.span, what);
    if let Some(src) = cx.source {
        d = d.with_source(src);
    }
    for n in notes {
        d = d.with_note(n);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_record_reports_nothing() {
        let checks = Checks::default();
        let cx = RecordContext {
            kernel: "k",
            source: None,
            params: &[],
            view_lens: &[],
        };
        let (e, w) = diagnose(&checks, &[0; RECORD_WORDS as usize], &cx);
        assert!(e.is_none() && w.is_none());
    }

    #[test]
    fn an_access_record_names_the_index_lane_and_argument() {
        let src = SourceFile::new("k.py", "def k(x):\n    tl.load(x + offs)\n");
        let checks = Checks {
            sites: vec![CheckSite {
                span: Span::new(14, 30),
                kind: CheckKind::Access {
                    what: "load",
                    param: 0,
                },
                shape: vec![4, 8],
            }],
            lens: vec![(0, 1)],
            record: 2,
            ..Checks::default()
        };
        let mut rec = vec![0i32; RECORD_WORDS as usize];
        rec[0] = 1;
        rec[1..4].copy_from_slice(&[3, 0, 0]);
        rec[4] = 13; // (1, 5)
        rec[5] = 1 << 28; // the index, low word
        let cx = RecordContext {
            kernel: "k",
            source: Some(&src),
            params: &["x".into(), "tw_len_x".into(), "tw_checks".into()],
            view_lens: &[1000, 0, 0],
        };
        let (e, w) = diagnose(&checks, &rec, &cx);
        let e = e.expect("an error");
        assert!(w.is_none());
        assert_eq!(
            e.message,
            "out-of-bounds load in kernel `k` (line 2), program (3, 0, 0): element index 268435456 of a buffer of 1000 elements (argument `x`)"
        );
        assert!(e.render().contains("at lane (1, 5) of the 4x8 tile"));
    }

    /// Entries claimed out of order come out by program, each print's elements in
    /// order; entries past the buffer are counted, not printed.
    #[test]
    fn print_lines_are_ordered_by_program_then_element() {
        let site = |label: &str| PrintSite {
            span: Span::new(0, 0),
            label: label.into(),
            shape: vec![4],
            value: PrintValue::Int,
            hex: false,
        };
        let ck = CheckedKernel {
            kernel: "k".into(),
            checks: Checks {
                prints: vec![site("a"), site("b")],
                print_buffer: Some(0),
                ..Checks::default()
            },
            params: vec![],
            tensor_maps: vec![],
            source: None,
        };
        let entry = |site: i32, pid: i32, el: i32, v: i64| {
            vec![site, pid, 0, 0, el, v as i32, (v >> 32) as i32]
        };
        let mut words = vec![5];
        words.extend(entry(1, 0, 0, 7));
        words.extend(entry(0, 1, 1, -3));
        words.extend(entry(0, 0, 1, 5_000_000_000));
        words.extend(entry(0, 0, 0, 4));
        words.extend(entry(1, 1, 0, 9));
        let lines = print_lines(&ck, &words);
        assert_eq!(
            lines,
            vec![
                "pid (0, 0, 0) idx (0) b: 7",
                "pid (0, 0, 0) idx (0) a: 4",
                "pid (0, 0, 0) idx (1) a: 5000000000",
                "pid (1, 0, 0) idx (1) a: -3",
                "pid (1, 0, 0) idx (0) b: 9",
            ]
        );
        words[0] = 9;
        let lines = print_lines(&ck, &words);
        assert_eq!(lines.len(), 6);
        assert!(lines[5].contains("4 more device_print values"), "{lines:?}");
    }

    #[test]
    fn negative_values_survive_the_split_into_words() {
        let mut s = vec![0i32; SLOT_WORDS as usize];
        let v = -5_000_000_000i64;
        s[word::VALUE as usize] = v as i32;
        s[word::VALUE as usize + 1] = (v >> 32) as i32;
        assert_eq!(value_at(&s, word::VALUE), v);
    }
}
