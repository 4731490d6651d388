//! Reads the Thread IR's text form (see `print.rs`) back into a [`ThreadKernel`]:
//! `print(&parse(&print(&k))?)` is `print(&k)`, byte for byte, and the parsed kernel
//! equals `k` but for [`ThreadKernel::source`], which the text does not hold (it is
//! `None`; spans come back as the byte ranges printed, so attaching the source again
//! restores the diagnostics that point into it).
//!
//! Errors are [`Diagnostic`]s of kind [`ErrorKind::Syntax`] located in the text
//! (`Diagnostic::line_col`, and `render` shows the line): what was expected and what
//! was found. Malformed text never panics; nesting deeper than [`MAX_DEPTH`] and
//! register numbers past [`MAX_REGS`] are errors.
//!
//! # Grammar
//!
//! One item a line; `name` is an identifier or a quoted string, `reg` is `rN`, `ty` a
//! dtype or `vecN<dtype>`, `[..]` optional, `*` repeated.
//!
//! ```text
//! thread_kernel @name(name: [mut] buffer<dtype>, name: dtype, ...) threads N {
//!   note "text"
//!   shared sN name: [dtype; len] align A
//!   frag fN: coopSxS<dtype, a|b|c>
//!   reg rA, rB..=rC, ...: ty
//!   checks record name [prints name] {
//!     len name: name
//!     site N [@start..end] access load|store|atomic name [dims]
//!     site N [@start..end] assert "message" [dims]
//!     site N [@start..end] hint multiple_of|max_contiguous|max_constancy
//!                               multiple_of|contiguous|constancy K [widens] [dims]
//!     site N [@start..end] block_ptr name rank R [dims]
//!     print N [@start..end] "label" int|uint|f32|f64|ptr name [hex] [dims]
//!   }
//!   statements
//! }
//! ```
//!
//! Statements:
//!
//! ```text
//! reg: ty = expr
//! reg: ty = atomic add|max|min|and|or|xor|xchg name[reg], reg [mask reg]
//! reg: ty = atomic_cas name[reg], reg, reg
//! store name[reg] = reg [mask reg]          store sN[reg] = reg
//! barrier    barrier.storage
//! async_copy xL sN[reg] <- name[reg] [mask reg]    async_commit    async_wait N
//! {reg, ...}[: ty] = ldmatrix[.trans] sN[reg]
//! {reg, ...}[: ty] = mma.m16n8k16.f16|m16n8k16.bf16|m16n8k8.tf32 {regs}, {regs}, {regs}
//! wgmma m64nNkK.f16|bf16|tf32 {regs} += matrix|{regs} @ matrix [zero_acc reg]
//!     matrix: sN[reg + offset] swizzle S lbo L sbo S k|mn   ({regs}: `a` in registers)
//! wgmma_fence    wgmma_commit    wgmma_wait N    fence_proxy_async
//! fN = coop_zero coopSxS<dtype, role>
//! fN = coop_load coopSxS<dtype, role> sN[reg] stride N
//! coop_store sN[reg] stride N <- fN
//! fN = coop_mul_add fA, fB, fC               fN = fM
//! for reg: ty = reg to reg step reg { ... }
//! if reg { ... } [else { ... }]
//! while [@start..end] { ... } (reg) do { ... }
//! ```
//!
//! Expressions: `const C` (`true`, `false`, integers, floats in Rust's spelling, `inf`,
//! `-inf`, `nan`, `nan(0xBITS)`), `thread_id`, `program_id(A)`, `num_programs(A)`,
//! `subgroup_id`, `subgroup_invocation_id`, `param name`, `reg` (a copy), a unary op
//! and a register, a binary op and two, `cmp pred a, b`, `select c, a, b`,
//! `fma a, b, c`, `cast reg`, `bitcast reg`, `load name[reg] [mask reg] [other reg]`,
//! `load sN[reg]`, `extract reg.L`, `vector(regs)`, `shuffle.xor reg, M`,
//! `subgroup.add|max|min reg`.

use super::checks::{CheckKind, CheckSite, Checks, HintRule, PrintSite, PrintValue};
use super::print::{frag_role_name, hint_rule, is_numbered, special_name, subgroup_op_name};
use super::{
    Expr, Frag, FragRole, FragTy, MmaKind, Param, ParamKind, Reg, RegTy, SharedArray, SmemMatrix,
    Special, Stmt, SubgroupOp, ThreadKernel, WgmmaA, WgmmaShape,
};
use crate::diag::{Diagnostic, ErrorKind, Result, SourceFile, Span};
use crate::ir::{AtomicOp, BinaryOp, CmpPred, Const, DType, UnaryOp};
use std::collections::HashMap;

/// How deep statements may nest.
const MAX_DEPTH: usize = 200;

/// Registers a parsed kernel may have.
const MAX_REGS: u32 = 1 << 22;

/// Parses the text form of a Thread IR kernel (what [`print`](fn@super::print) writes).
pub fn parse(text: &str) -> Result<ThreadKernel> {
    let toks = lex(text).map_err(|(span, msg)| error(text, span, msg))?;
    let mut p = Parser {
        toks,
        pos: 0,
        params: vec![],
        param_names: HashMap::new(),
        shared: vec![],
        frags: vec![],
        regs: vec![],
        untyped_uses: HashMap::new(),
        declared: 0,
        depth: 0,
    };
    p.kernel().map_err(|(span, msg)| error(text, span, msg))
}

/// A located message, made a [`Diagnostic`] at the end.
type PResult<T> = std::result::Result<T, (Span, String)>;

fn error(text: &str, span: Span, msg: String) -> Diagnostic {
    let span = Span {
        start: span.start,
        end: span.end.max(span.start + 1),
    };
    Diagnostic::new(ErrorKind::Syntax, format!("Thread IR: {msg}"))
        .at(span, "here")
        .with_source(&SourceFile::new("<thread IR>", text))
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// A number as written (decimal or `0x` hex, maybe signed, maybe a float).
    Num(String),
    Str(String),
    Punct(char),
    Newline,
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    span: Span,
}

fn lex(text: &str) -> PResult<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut out = vec![];
    let mut i = 0usize;
    let at = |a: usize, b: usize| Span {
        start: a as u32,
        end: b as u32,
    };
    if text.len() >= u32::MAX as usize {
        return Err((at(0, 0), "the text is too long".into()));
    }
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'\n' => {
                i += 1;
                out.push(Token {
                    tok: Tok::Newline,
                    span: at(start, i),
                });
                continue;
            }
            b'"' => {
                let (s, end) = lex_string(text, i)?;
                i = end;
                out.push(Token {
                    tok: Tok::Str(s),
                    span: at(start, i),
                });
                continue;
            }
            _ => {}
        }
        let digit_at = |j: usize| bytes.get(j).is_some_and(|b| b.is_ascii_digit());
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(text[start..i].to_string()),
                span: at(start, i),
            });
        } else if c.is_ascii_digit() || (c == b'-' && digit_at(i + 1)) {
            if c == b'-' {
                i += 1;
            }
            if bytes[i] == b'0' && matches!(bytes.get(i + 1), Some(b'x')) {
                i += 2;
                while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                    i += 1;
                }
            } else {
                while digit_at(i) {
                    i += 1;
                }
                if bytes.get(i) == Some(&b'.') && digit_at(i + 1) {
                    i += 1;
                    while digit_at(i) {
                        i += 1;
                    }
                }
                if matches!(bytes.get(i), Some(b'e' | b'E')) {
                    let sign = usize::from(matches!(bytes.get(i + 1), Some(b'-' | b'+')));
                    if digit_at(i + 1 + sign) {
                        i += 1 + sign;
                        while digit_at(i) {
                            i += 1;
                        }
                    }
                }
            }
            out.push(Token {
                tok: Tok::Num(text[start..i].to_string()),
                span: at(start, i),
            });
        } else if b"@()[]{}<>,:;=.+-?*&".contains(&c) {
            i += 1;
            out.push(Token {
                tok: Tok::Punct(c as char),
                span: at(start, i),
            });
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err((
                at(start, start + ch.len_utf8()),
                format!("unexpected character `{}`", ch.escape_default()),
            ));
        }
    }
    out.push(Token {
        tok: Tok::Eof,
        span: at(text.len(), text.len()),
    });
    Ok(out)
}

/// The string literal starting at byte `start` (a `"`): its value and the byte after it.
fn lex_string(text: &str, start: usize) -> PResult<(String, usize)> {
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    let span = |a: usize, b: usize| Span {
        start: (start + 1 + a) as u32,
        end: (start + 1 + b) as u32,
    };
    while let Some((j, c)) = chars.next() {
        match c {
            '"' => return Ok((out, start + 2 + j)),
            '\n' => break,
            '\\' => {
                let bad = |k: usize| (span(j, k), "unknown escape in a string".to_string());
                match chars.next() {
                    Some((_, '\\')) => out.push('\\'),
                    Some((_, '"')) => out.push('"'),
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 'r')) => out.push('\r'),
                    Some((_, 't')) => out.push('\t'),
                    Some((k, 'u')) => {
                        let rest = &text[start + 1 + k + 1..];
                        let close = rest.find('}').filter(|_| rest.starts_with('{'));
                        let Some(close) = close else {
                            return Err(bad(k + 1));
                        };
                        let code = u32::from_str_radix(&rest[1..close], 16)
                            .ok()
                            .and_then(char::from_u32);
                        let Some(ch) = code else {
                            return Err(bad(k + 1 + close + 1));
                        };
                        out.push(ch);
                        for _ in 0..=close {
                            chars.next();
                        }
                    }
                    Some((k, _)) => return Err(bad(k + 1)),
                    None => break,
                }
            }
            c => out.push(c),
        }
    }
    Err((
        Span {
            start: start as u32,
            end: start as u32 + 1,
        },
        "unterminated string".into(),
    ))
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    params: Vec<Param>,
    param_names: HashMap<String, u32>,
    shared: Vec<SharedArray>,
    frags: Vec<FragTy>,
    /// `regs[r]`: the type of register `r`, once known.
    regs: Vec<Option<RegTy>>,
    /// Where each register was first mentioned before it had a type.
    untyped_uses: HashMap<u32, Span>,
    /// Registers declared by `reg` lines so far.
    declared: u32,
    depth: usize,
}

/// The words that name access sites ([`CheckKind::Access`]).
const ACCESS_KINDS: [&str; 3] = ["load", "store", "atomic"];
/// The hints checked mode tests ([`CheckKind::Hint`]).
const HINT_NAMES: [&str; 3] = ["multiple_of", "max_contiguous", "max_constancy"];

const UNARY_OPS: [UnaryOp; 15] = [
    UnaryOp::Neg,
    UnaryOp::Not,
    UnaryOp::Abs,
    UnaryOp::Exp,
    UnaryOp::Exp2,
    UnaryOp::Log,
    UnaryOp::Log2,
    UnaryOp::Sqrt,
    UnaryOp::Rsqrt,
    UnaryOp::Sin,
    UnaryOp::Cos,
    UnaryOp::Floor,
    UnaryOp::Ceil,
    UnaryOp::Erf,
    UnaryOp::Tanh,
];
const BINARY_OPS: [BinaryOp; 14] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::And,
    BinaryOp::Or,
    BinaryOp::Xor,
    BinaryOp::Shl,
    BinaryOp::Shr,
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::Pow,
    BinaryOp::MulHi,
];
const CMP_PREDS: [CmpPred; 6] = [
    CmpPred::Eq,
    CmpPred::Ne,
    CmpPred::Lt,
    CmpPred::Le,
    CmpPred::Gt,
    CmpPred::Ge,
];
const ATOMIC_OPS: [AtomicOp; 7] = [
    AtomicOp::Add,
    AtomicOp::Max,
    AtomicOp::Min,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Xchg,
];
const MMA_KINDS: [MmaKind; 3] = [
    MmaKind::F16M16N8K16,
    MmaKind::Bf16M16N8K16,
    MmaKind::Tf32M16N8K8,
];
const SUBGROUP_OPS: [SubgroupOp; 3] = [SubgroupOp::Add, SubgroupOp::Max, SubgroupOp::Min];
const FRAG_ROLES: [FragRole; 3] = [FragRole::A, FragRole::B, FragRole::C];

impl Parser {
    // --- tokens -------------------------------------------------------------------

    fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        &self.toks[(self.pos + ahead).min(self.toks.len() - 1)].tok
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn describe(t: &Tok) -> String {
        match t {
            Tok::Ident(s) | Tok::Num(s) => format!("`{s}`"),
            Tok::Str(_) => "a string".into(),
            Tok::Punct(c) => format!("`{c}`"),
            Tok::Newline => "the end of the line".into(),
            Tok::Eof => "the end of the text".into(),
        }
    }

    /// An error at the next token: `expected {what}, found ...`.
    fn expected<T>(&self, what: &str) -> PResult<T> {
        let t = self.peek();
        Err((
            t.span,
            format!("expected {what}, found {}", Self::describe(&t.tok)),
        ))
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek().tok == Tok::Punct(c)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if s == w)
    }

    fn punct(&mut self, c: char) -> PResult<Span> {
        if self.is_punct(c) {
            Ok(self.next().span)
        } else {
            self.expected(&format!("`{c}`"))
        }
    }

    fn word(&mut self, w: &str) -> PResult<Span> {
        if self.is_word(w) {
            Ok(self.next().span)
        } else {
            self.expected(&format!("`{w}`"))
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.is_word(w);
        if yes {
            self.next();
        }
        yes
    }

    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let s = s.clone();
                Ok((s, self.next().span))
            }
            _ => self.expected(what),
        }
    }

    /// A name: an identifier or a quoted string.
    fn name(&mut self, what: &str) -> PResult<(String, Span)> {
        match &self.peek().tok {
            Tok::Ident(s) | Tok::Str(s) => {
                let s = s.clone();
                Ok((s, self.next().span))
            }
            _ => self.expected(what),
        }
    }

    fn string(&mut self, what: &str) -> PResult<String> {
        match &self.peek().tok {
            Tok::Str(s) => {
                let s = s.clone();
                self.next();
                Ok(s)
            }
            _ => self.expected(what),
        }
    }

    fn end_of_line(&mut self) -> PResult<()> {
        match self.peek().tok {
            Tok::Newline => {
                self.next();
                Ok(())
            }
            _ => self.expected("the end of the line"),
        }
    }

    fn skip_newlines(&mut self) {
        while self.peek().tok == Tok::Newline {
            self.next();
        }
    }

    /// A decimal number that fits `T`.
    fn number<T: std::str::FromStr>(&mut self, what: &str) -> PResult<T> {
        if let Tok::Num(s) = &self.peek().tok {
            if s.bytes().all(|b| b.is_ascii_digit()) {
                if let Ok(v) = s.parse::<T>() {
                    self.next();
                    return Ok(v);
                }
            }
        }
        self.expected(what)
    }

    fn u32(&mut self, what: &str) -> PResult<u32> {
        self.number::<u32>(what)
    }

    fn i64(&mut self, what: &str) -> PResult<i64> {
        if let Tok::Num(s) = &self.peek().tok {
            if let Ok(v) = s.parse::<i64>() {
                self.next();
                return Ok(v);
            }
        }
        self.expected(what)
    }

    /// `{n}` from an identifier `{prefix}{n}`.
    fn numbered(&mut self, prefix: char, what: &str) -> PResult<(u32, Span)> {
        if let Tok::Ident(s) = &self.peek().tok {
            if is_numbered(s, prefix) {
                if let Ok(n) = s[1..].parse::<u32>() {
                    return Ok((n, self.next().span));
                }
            }
        }
        self.expected(what)
    }

    fn is_numbered_word(&self, prefix: char) -> bool {
        matches!(&self.peek().tok, Tok::Ident(s) if is_numbered(s, prefix))
    }

    // --- kernel -------------------------------------------------------------------

    fn kernel(&mut self) -> PResult<ThreadKernel> {
        self.skip_newlines();
        let head = self.word("thread_kernel")?;
        self.punct('@')?;
        let (name, _) = self.name("the kernel's name")?;
        self.punct('(')?;
        if !self.is_punct(')') {
            loop {
                self.param()?;
                if !self.is_punct(',') {
                    break;
                }
                self.next();
            }
        }
        self.punct(')')?;
        self.word("threads")?;
        let threads = self.u32("the number of threads")?;
        self.punct('{')?;
        self.end_of_line()?;
        let mut notes = vec![];
        let mut checks = None;
        loop {
            self.skip_newlines();
            if self.is_word("note") {
                self.next();
                notes.push(self.string("a note (a string)")?);
                self.end_of_line()?;
            } else if self.is_word("shared") {
                self.shared_decl()?;
            } else if self.is_word("frag") {
                self.frag_decl()?;
            } else if self.is_word("reg") {
                self.reg_decl()?;
            } else if self.is_word("checks") {
                if checks.is_some() {
                    return self.expected("one `checks` block");
                }
                checks = Some(self.checks()?);
            } else {
                break;
            }
        }
        let body = self.body()?;
        self.punct('}')?;
        self.skip_newlines();
        if self.peek().tok != Tok::Eof {
            return self.expected("the end of the text after the kernel's `}`");
        }
        let regs = self.register_table(head)?;
        Ok(ThreadKernel {
            name,
            params: std::mem::take(&mut self.params),
            threads,
            shared: std::mem::take(&mut self.shared),
            regs,
            frags: std::mem::take(&mut self.frags),
            body,
            notes,
            source: None,
            checks,
        })
    }

    /// Every register's type, checked: each one mentioned has one, and they are
    /// numbered without gaps.
    fn register_table(&self, head: Span) -> PResult<Vec<RegTy>> {
        let mut untyped: Vec<(&u32, &Span)> = self
            .untyped_uses
            .iter()
            .filter(|(r, _)| self.regs.get(**r as usize).is_none_or(|t| t.is_none()))
            .collect();
        untyped.sort_by_key(|(_, s)| s.start);
        if let Some((r, span)) = untyped.first() {
            return Err((
                **span,
                format!("register r{r} has no type: no statement types it and no `reg` line declares it"),
            ));
        }
        self.regs
            .iter()
            .enumerate()
            .map(|(r, t)| {
                t.ok_or_else(|| {
                    (
                        head,
                        format!(
                            "register r{r} is missing: registers are numbered from r0 without gaps (declare unused ones with `reg`)"
                        ),
                    )
                })
            })
            .collect()
    }

    fn param(&mut self) -> PResult<()> {
        let (name, span) = self.name("a parameter name")?;
        self.punct(':')?;
        let kind = if self.is_word("mut") || self.is_word("buffer") {
            let written = self.eat_word("mut");
            self.word("buffer")?;
            self.punct('<')?;
            let dtype = self.dtype()?;
            self.punct('>')?;
            ParamKind::Buffer { dtype, written }
        } else if self.eat_word("tensor_map") {
            self.tensor_map()?
        } else {
            ParamKind::Scalar {
                dtype: self.dtype()?,
            }
        };
        let index = self.params.len() as u32;
        if self.param_names.insert(name.clone(), index).is_some() {
            return Err((span, format!("parameter `{name}` is declared twice")));
        }
        self.params.push(Param { name, kind });
        Ok(())
    }

    /// `tensor_map<dtype> of BUFFER dims(E, ..) strides(E, ..) box(N, ..) swizzle N`,
    /// each `E` a constant or a scalar parameter's name (after `tensor_map`).
    fn tensor_map(&mut self) -> PResult<ParamKind> {
        use super::tma::{Extent, TensorMap};
        self.punct('<')?;
        let dtype = self.dtype()?;
        self.punct('>')?;
        self.word("of")?;
        let buffer = self.param_ref("the tensor map's buffer parameter")?;
        let list = |p: &mut Self, word: &str| -> PResult<Vec<Extent>> {
            p.word(word)?;
            p.punct('(')?;
            let mut out = vec![];
            while !p.is_punct(')') {
                if !out.is_empty() {
                    p.punct(',')?;
                }
                out.push(if matches!(p.peek().tok, Tok::Num(_)) {
                    Extent::Const(p.i64("an extent")?)
                } else {
                    Extent::Param(p.param_ref("a scalar parameter")?)
                });
            }
            p.punct(')')?;
            Ok(out)
        };
        let dims = list(self, "dims")?;
        let strides = list(self, "strides")?;
        let box_dims = list(self, "box")?
            .into_iter()
            .map(|e| match e {
                Extent::Const(c) => u32::try_from(c).ok(),
                Extent::Param(_) => None,
            })
            .collect::<Option<Vec<u32>>>();
        let Some(box_dims) = box_dims else {
            return self.expected("constant box extents");
        };
        self.word("swizzle")?;
        let swizzle = self.u32("the swizzle width in bytes")?;
        Ok(ParamKind::TensorMap(TensorMap {
            buffer,
            dtype,
            dims,
            strides,
            box_dims,
            swizzle,
        }))
    }

    fn dtype(&mut self) -> PResult<DType> {
        if let Tok::Ident(s) = &self.peek().tok {
            if let Some(d) = DType::from_name(s).filter(|d| d.name() == s) {
                self.next();
                return Ok(d);
            }
        }
        self.expected("a dtype (`i32`, `f16`, ...)")
    }

    fn reg_ty(&mut self) -> PResult<RegTy> {
        if let Tok::Ident(s) = &self.peek().tok {
            if let Some(n) = s.strip_prefix("vec") {
                if let Ok(lanes) = n.parse::<u8>() {
                    if lanes != 1 && n.bytes().all(|b| b.is_ascii_digit()) {
                        self.next();
                        self.punct('<')?;
                        let dtype = self.dtype()?;
                        self.punct('>')?;
                        return Ok(RegTy { dtype, lanes });
                    }
                }
            }
        }
        if let Tok::Ident(_) = &self.peek().tok {
            return Ok(RegTy::scalar(self.dtype()?));
        }
        self.expected("a register type (a dtype or `vecN<dtype>`)")
    }

    fn shared_decl(&mut self) -> PResult<()> {
        self.word("shared")?;
        let want = self.shared.len() as u32;
        let (n, span) = self.numbered('s', "a shared array (`sN`)")?;
        if n != want {
            return Err((
                span,
                format!("expected `s{want}`: shared arrays are declared in order"),
            ));
        }
        let (name, _) = self.name("the shared array's name")?;
        self.punct(':')?;
        self.punct('[')?;
        let dtype = self.dtype()?;
        self.punct(';')?;
        let len = self.u32("the array's length")?;
        self.punct(']')?;
        self.word("align")?;
        let align = self.u32("the array's alignment in bytes")?;
        let overlays = if self.is_word("overlays") {
            self.word("overlays")?;
            Some(self.numbered('s', "the overlaid shared array (`sN`)")?.0)
        } else {
            None
        };
        self.end_of_line()?;
        self.shared.push(SharedArray {
            name,
            dtype,
            len,
            align,
            overlays,
        });
        Ok(())
    }

    fn frag_decl(&mut self) -> PResult<()> {
        self.word("frag")?;
        let want = self.frags.len() as u32;
        let (n, span) = self.numbered('f', "a fragment (`fN`)")?;
        if n != want {
            return Err((
                span,
                format!("expected `f{want}`: fragments are declared in order"),
            ));
        }
        self.punct(':')?;
        let ty = self.frag_ty()?;
        self.end_of_line()?;
        self.frags.push(ty);
        Ok(())
    }

    /// `coopSxS<dtype, role>`.
    fn frag_ty(&mut self) -> PResult<FragTy> {
        let size = match &self.peek().tok {
            Tok::Ident(s) => s
                .strip_prefix("coop")
                .and_then(|d| d.split_once('x'))
                .filter(|(a, b)| a == b && a.bytes().all(|c| c.is_ascii_digit()))
                .and_then(|(a, _)| a.parse::<u32>().ok()),
            _ => None,
        };
        let Some(size) = size else {
            return self.expected("a fragment type (`coop16x16<f16, a>`)");
        };
        self.next();
        self.punct('<')?;
        let dtype = self.dtype()?;
        self.punct(',')?;
        let role = match &self.peek().tok {
            Tok::Ident(s) => FRAG_ROLES.into_iter().find(|r| frag_role_name(*r) == s),
            _ => None,
        };
        let Some(role) = role else {
            return self.expected("a fragment role (`a`, `b` or `c`)");
        };
        self.next();
        self.punct('>')?;
        Ok(FragTy { role, dtype, size })
    }

    /// `reg rA, rB..=rC: ty`.
    fn reg_decl(&mut self) -> PResult<()> {
        self.word("reg")?;
        let mut runs = vec![];
        loop {
            let (a, span) = self.numbered('r', "a register (`rN`)")?;
            let b = if self.is_punct('.') {
                self.punct('.')?;
                self.punct('.')?;
                self.punct('=')?;
                let (b, end) = self.numbered('r', "the last register of the range")?;
                if b < a {
                    return Err((end, format!("r{b} comes before r{a}")));
                }
                b
            } else {
                a
            };
            runs.push((a, b, span));
            if !self.is_punct(',') {
                break;
            }
            self.next();
        }
        self.punct(':')?;
        let ty = self.reg_ty()?;
        self.end_of_line()?;
        for (a, b, span) in runs {
            // Each register is declared once: more declarations than registers are
            // refused before they cost time.
            self.declared = self.declared.saturating_add(b - a + 1);
            if b >= MAX_REGS || self.declared > MAX_REGS {
                return Err((span, format!("more than {MAX_REGS} registers")));
            }
            for r in a..=b {
                self.define(Reg(r), ty, span)?;
            }
        }
        Ok(())
    }

    // --- checks -------------------------------------------------------------------

    fn param_ref(&mut self, what: &str) -> PResult<u32> {
        let (name, span) = self.name(what)?;
        match self.param_names.get(&name) {
            Some(i) => Ok(*i),
            None => Err((span, format!("no parameter is named `{name}`"))),
        }
    }

    /// A global access's buffer: a parameter, `*` for an address in elements
    /// ([`super::FLAT`]) or `&` for one in bytes ([`super::BYTE_ADDRESS`]).
    fn buffer_ref(&mut self, what: &str) -> PResult<u32> {
        if self.is_punct('*') {
            self.next();
            return Ok(super::FLAT);
        }
        if self.is_punct('&') {
            self.next();
            return Ok(super::BYTE_ADDRESS);
        }
        self.param_ref(what)
    }

    fn checks(&mut self) -> PResult<Checks> {
        self.word("checks")?;
        self.word("record")?;
        let record = self.param_ref("the record's parameter")?;
        let print_buffer = if self.eat_word("prints") {
            Some(self.param_ref("the print buffer's parameter")?)
        } else {
            None
        };
        self.punct('{')?;
        self.end_of_line()?;
        let mut c = Checks {
            record,
            print_buffer,
            ..Checks::default()
        };
        loop {
            self.skip_newlines();
            if self.is_punct('}') {
                self.next();
                self.end_of_line()?;
                return Ok(c);
            } else if self.eat_word("len") {
                let b = self.param_ref("a buffer parameter")?;
                self.punct(':')?;
                let l = self.param_ref("its length's parameter")?;
                c.lens.push((b, l));
            } else if self.eat_word("site") {
                let site = self.site(c.sites.len() as u32)?;
                c.sites.push(site);
            } else if self.eat_word("print") {
                let p = self.print_site(c.prints.len() as u32)?;
                c.prints.push(p);
            } else {
                return self.expected("`len`, `site`, `print` or `}`");
            }
            self.end_of_line()?;
        }
    }

    fn sequence(&mut self, want: u32, what: &str) -> PResult<()> {
        let span = self.peek().span;
        let n = self.u32(&format!("the {what}'s number"))?;
        if n != want {
            return Err((
                span,
                format!("expected {what} {want}: they are listed in order"),
            ));
        }
        Ok(())
    }

    fn opt_span(&mut self) -> PResult<Span> {
        if !self.is_punct('@') {
            return Ok(Span::NONE);
        }
        self.next();
        let start = self.u32("a byte offset")?;
        self.punct('.')?;
        self.punct('.')?;
        let end = self.u32("a byte offset")?;
        Ok(Span { start, end })
    }

    fn shape(&mut self) -> PResult<Vec<u32>> {
        self.punct('[')?;
        let mut dims = vec![];
        if !self.is_punct(']') {
            loop {
                dims.push(self.u32("a dimension")?);
                if !self.is_punct(',') {
                    break;
                }
                self.next();
            }
        }
        self.punct(']')?;
        Ok(dims)
    }

    fn site(&mut self, want: u32) -> PResult<CheckSite> {
        self.sequence(want, "site")?;
        let span = self.opt_span()?;
        let (kind, _) = self.ident("a site kind (`access`, `assert`, `hint`, `block_ptr`)")?;
        let kind = match kind.as_str() {
            "access" => {
                let what = match &self.peek().tok {
                    Tok::Ident(s) => ACCESS_KINDS.into_iter().find(|w| w == s),
                    _ => None,
                };
                let Some(what) = what else {
                    return self.expected("`load`, `store` or `atomic`");
                };
                self.next();
                let param = self.param_ref("a buffer parameter")?;
                CheckKind::Access { what, param }
            }
            "assert" => CheckKind::Assert {
                message: self.string("the assertion's message")?,
            },
            "hint" => {
                let name = match &self.peek().tok {
                    Tok::Ident(s) => HINT_NAMES.into_iter().find(|w| w == s),
                    _ => None,
                };
                let Some(name) = name else {
                    return self.expected("`multiple_of`, `max_contiguous` or `max_constancy`");
                };
                self.next();
                let (rule, span) = self.ident("a hint rule")?;
                let k = self.i64("the rule's number")?;
                let rule = [
                    HintRule::MultipleOf(k),
                    HintRule::Contiguous(k),
                    HintRule::Constancy(k),
                ]
                .into_iter()
                .find(|r| hint_rule(r).0 == rule)
                .ok_or((
                    span,
                    format!("expected `multiple_of`, `contiguous` or `constancy`, found `{rule}`"),
                ))?;
                let widens = self.eat_word("widens");
                CheckKind::Hint { name, rule, widens }
            }
            "block_ptr" => {
                let param = self.param_ref("a buffer parameter")?;
                self.word("rank")?;
                let rank = self.u32("the rank")?;
                CheckKind::BlockPtr { param, rank }
            }
            _ => {
                self.pos -= 1;
                return self.expected("a site kind (`access`, `assert`, `hint`, `block_ptr`)");
            }
        };
        let shape = self.shape()?;
        Ok(CheckSite { span, kind, shape })
    }

    fn print_site(&mut self, want: u32) -> PResult<PrintSite> {
        self.sequence(want, "print")?;
        let span = self.opt_span()?;
        let label = self.string("the print's label")?;
        let (v, _) = self.ident("a value kind (`int`, `uint`, `f32`, `f64`, `ptr`)")?;
        let value = match v.as_str() {
            "int" => PrintValue::Int,
            "uint" => PrintValue::Uint,
            "f32" => PrintValue::F32,
            "f64" => PrintValue::F64,
            "ptr" => PrintValue::Ptr {
                param: self.buffer_ref("a buffer parameter")?,
            },
            _ => {
                self.pos -= 1;
                return self.expected("a value kind (`int`, `uint`, `f32`, `f64`, `ptr`)");
            }
        };
        let hex = self.eat_word("hex");
        let shape = self.shape()?;
        Ok(PrintSite {
            span,
            label,
            shape,
            value,
            hex,
        })
    }

    // --- registers, arrays, fragments ----------------------------------------------

    fn slot(&mut self, r: Reg, span: Span) -> PResult<&mut Option<RegTy>> {
        if r.0 >= MAX_REGS {
            return Err((span, format!("more than {MAX_REGS} registers")));
        }
        if self.regs.len() <= r.0 as usize {
            self.regs.resize(r.0 as usize + 1, None);
        }
        Ok(&mut self.regs[r.0 as usize])
    }

    /// Gives `r` the type `ty` (which it must not have differently).
    fn define(&mut self, r: Reg, ty: RegTy, span: Span) -> PResult<()> {
        let slot = self.slot(r, span)?;
        match slot {
            Some(old) if *old != ty => Err((span, format!("{r} is {old}, not {ty}"))),
            _ => {
                *slot = Some(ty);
                Ok(())
            }
        }
    }

    /// A register that is read (or written without a type here).
    fn reg(&mut self) -> PResult<Reg> {
        let (n, span) = self.numbered('r', "a register (`rN`)")?;
        let r = Reg(n);
        if self.slot(r, span)?.is_none() {
            self.untyped_uses.entry(n).or_insert(span);
        }
        Ok(r)
    }

    /// A register written with its type: `rN: ty`.
    fn typed_reg(&mut self) -> PResult<Reg> {
        let (n, span) = self.numbered('r', "a register (`rN`)")?;
        self.punct(':')?;
        let ty = self.reg_ty()?;
        self.define(Reg(n), ty, span)?;
        Ok(Reg(n))
    }

    /// `{r1, r2, ...}`.
    fn reg_list(&mut self) -> PResult<(Vec<Reg>, Vec<Span>)> {
        self.punct('{')?;
        let mut regs = vec![];
        let mut spans = vec![];
        if !self.is_punct('}') {
            loop {
                spans.push(self.peek().span);
                regs.push(self.reg()?);
                if !self.is_punct(',') {
                    break;
                }
                self.next();
            }
        }
        self.punct('}')?;
        Ok((regs, spans))
    }

    fn shared_ref(&mut self) -> PResult<u32> {
        let (n, span) = self.numbered('s', "a shared array (`sN`)")?;
        if n as usize >= self.shared.len() {
            return Err((span, format!("shared array s{n} is not declared")));
        }
        Ok(n)
    }

    fn frag_ref(&mut self) -> PResult<Frag> {
        let (n, span) = self.numbered('f', "a fragment (`fN`)")?;
        if n as usize >= self.frags.len() {
            return Err((span, format!("fragment f{n} is not declared")));
        }
        Ok(Frag(n))
    }

    /// `[reg]`.
    fn index(&mut self) -> PResult<Reg> {
        self.punct('[')?;
        let r = self.reg()?;
        self.punct(']')?;
        Ok(r)
    }

    fn opt_mask(&mut self) -> PResult<Option<Reg>> {
        if self.eat_word("mask") {
            Ok(Some(self.reg()?))
        } else {
            Ok(None)
        }
    }

    // --- statements ---------------------------------------------------------------

    /// Statements up to a `}` (not consumed).
    fn body(&mut self) -> PResult<Vec<Stmt>> {
        if self.depth >= MAX_DEPTH {
            return Err((
                self.peek().span,
                format!("statements nest deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let mut out = vec![];
        loop {
            self.skip_newlines();
            if self.is_punct('}') || self.peek().tok == Tok::Eof {
                break;
            }
            out.push(self.stmt()?);
        }
        self.depth -= 1;
        Ok(out)
    }

    /// `{` NL body `}`; the `}` is consumed, not what follows it.
    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.punct('{')?;
        self.end_of_line()?;
        let body = self.body()?;
        self.punct('}')?;
        Ok(body)
    }

    /// The transaction-barrier and TMA statements (after their keyword), out of line so
    /// that the recursive statement parser's frame stays small.
    #[inline(never)]
    fn tma_stmt(&mut self, word: &str) -> PResult<Stmt> {
        Ok(match word {
            "mbarrier_init" => {
                let arr = self.shared_ref()?;
                let index = self.index()?;
                self.word("count")?;
                Stmt::MbarrierInit {
                    arr,
                    index,
                    count: self.u32("the arrival count")?,
                }
            }
            "mbarrier_arrive_tx" => {
                let arr = self.shared_ref()?;
                let index = self.index()?;
                self.word("bytes")?;
                Stmt::MbarrierArriveTx {
                    arr,
                    index,
                    bytes: self.u32("the transaction bytes")?,
                }
            }
            "mbarrier_wait" => {
                let arr = self.shared_ref()?;
                let index = self.index()?;
                self.word("parity")?;
                Stmt::MbarrierWait {
                    arr,
                    index,
                    parity: self.reg()?,
                }
            }
            "tma_load" => {
                let arr = self.shared_ref()?;
                let shared_index = self.index()?;
                self.punct('<')?;
                self.punct('-')?;
                let map = self.param_ref("a tensor map parameter")?;
                self.punct('[')?;
                let mut coords = vec![self.reg()?];
                while self.is_punct(',') {
                    self.next();
                    coords.push(self.reg()?);
                }
                self.punct(']')?;
                self.word("bar")?;
                let bar_arr = self.shared_ref()?;
                let bar_index = self.index()?;
                Stmt::TmaLoad {
                    arr,
                    shared_index,
                    map,
                    coords,
                    bar_arr,
                    bar_index,
                }
            }
            _ => unreachable!("a TMA keyword"),
        })
    }

    fn stmt(&mut self) -> PResult<Stmt> {
        if self.is_numbered_word('r') {
            return self.assign();
        }
        if self.is_numbered_word('f') {
            return self.frag_stmt();
        }
        if self.is_punct('{') {
            return self.list_stmt();
        }
        let Tok::Ident(word) = self.peek().tok.clone() else {
            return self.expected("a statement");
        };
        let word_span = self.next().span;
        let s = match word.as_str() {
            "store" => {
                if self.is_numbered_word('s') {
                    let arr = self.shared_ref()?;
                    let index = self.index()?;
                    self.punct('=')?;
                    let value = self.reg()?;
                    Stmt::SharedStore { arr, index, value }
                } else {
                    let buf = self.buffer_ref("a buffer parameter or a shared array")?;
                    let index = self.index()?;
                    self.punct('=')?;
                    let value = self.reg()?;
                    let mask = self.opt_mask()?;
                    Stmt::Store {
                        buf,
                        index,
                        value,
                        mask,
                    }
                }
            }
            "barrier" => {
                if self.is_punct('.') {
                    self.next();
                    self.word("storage")?;
                    Stmt::StorageBarrier
                } else {
                    Stmt::Barrier
                }
            }
            "async_copy" => {
                let (lanes, _) = self.lanes()?;
                let arr = self.shared_ref()?;
                let shared_index = self.index()?;
                self.punct('<')?;
                self.punct('-')?;
                let buf = self.buffer_ref("a buffer parameter")?;
                let index = self.index()?;
                let mask = self.opt_mask()?;
                Stmt::AsyncCopy {
                    arr,
                    shared_index,
                    buf,
                    index,
                    lanes,
                    mask,
                }
            }
            "loc" => Stmt::Loc(self.opt_span()?),
            "mbarrier_init" | "mbarrier_arrive_tx" | "mbarrier_wait" | "tma_load" => {
                self.tma_stmt(&word)?
            }
            "async_commit" => Stmt::AsyncCommit,
            "async_wait" => Stmt::AsyncWait {
                pending: self.u32("the number of pending groups")?,
            },
            "wgmma" => self.wgmma()?,
            "wgmma_fence" => Stmt::WgmmaFence,
            "wgmma_commit" => Stmt::WgmmaCommit,
            "wgmma_wait" => Stmt::WgmmaWait {
                pending: self.u32("the number of pending groups")?,
            },
            "fence_proxy_async" => Stmt::FenceProxyAsync,
            "coop_store" => {
                let arr = self.shared_ref()?;
                let index = self.index()?;
                self.word("stride")?;
                let stride = self.u32("the stride")?;
                self.punct('<')?;
                self.punct('-')?;
                let src = self.frag_ref()?;
                Stmt::CoopStore {
                    src,
                    arr,
                    index,
                    stride,
                }
            }
            "for" => {
                let iv = self.typed_reg()?;
                self.punct('=')?;
                let lower = self.reg()?;
                self.word("to")?;
                let upper = self.reg()?;
                self.word("step")?;
                let step = self.reg()?;
                let body = self.block()?;
                Stmt::For {
                    iv,
                    lower,
                    upper,
                    step,
                    body,
                }
            }
            "if" => {
                let cond = self.reg()?;
                let then_body = self.block()?;
                let else_body = if self.eat_word("else") {
                    self.block()?
                } else {
                    vec![]
                };
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                }
            }
            "while" => {
                let span = self.opt_span()?;
                let cond_body = self.block()?;
                self.punct('(')?;
                let cond = self.reg()?;
                self.punct(')')?;
                self.word("do")?;
                let body = self.block()?;
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    span,
                }
            }
            _ => return Err((word_span, format!("expected a statement, found `{word}`"))),
        };
        self.end_of_line()?;
        Ok(s)
    }

    /// `xL`: the lanes of an asynchronous copy.
    fn lanes(&mut self) -> PResult<(u8, Span)> {
        if let Tok::Ident(s) = &self.peek().tok {
            if let Some(n) = s.strip_prefix('x') {
                if n.bytes().all(|b| b.is_ascii_digit()) {
                    if let Ok(l) = n.parse::<u8>() {
                        return Ok((l, self.next().span));
                    }
                }
            }
        }
        self.expected("the copy's lanes (`x4`)")
    }

    /// `rN: ty = ...`: an assignment or an atomic.
    fn assign(&mut self) -> PResult<Stmt> {
        let dst = self.typed_reg()?;
        self.punct('=')?;
        let s = if self.eat_word("atomic") {
            let op = match &self.peek().tok {
                Tok::Ident(s) => ATOMIC_OPS.into_iter().find(|o| o.name() == s),
                _ => None,
            };
            let Some(op) = op else {
                return self.expected("an atomic operation (`add`, `max`, ...)");
            };
            self.next();
            let buf = self.buffer_ref("a buffer parameter")?;
            let index = self.index()?;
            self.punct(',')?;
            let value = self.reg()?;
            let mask = self.opt_mask()?;
            Stmt::Atomic {
                dst,
                op,
                buf,
                index,
                value,
                mask,
            }
        } else if self.eat_word("atomic_cas") {
            let buf = self.buffer_ref("a buffer parameter")?;
            let index = self.index()?;
            self.punct(',')?;
            let cmp = self.reg()?;
            self.punct(',')?;
            let value = self.reg()?;
            Stmt::AtomicCas {
                dst,
                buf,
                index,
                cmp,
                value,
            }
        } else {
            Stmt::Assign {
                dst,
                expr: self.expr()?,
            }
        };
        self.end_of_line()?;
        Ok(s)
    }

    /// `fN = ...`.
    fn frag_stmt(&mut self) -> PResult<Stmt> {
        let dst = self.frag_ref()?;
        self.punct('=')?;
        let s = if self.is_word("coop_zero") || self.is_word("coop_load") {
            let load = self.eat_word("coop_load");
            if !load {
                self.next();
            }
            let span = self.peek().span;
            let ty = self.frag_ty()?;
            let declared = self.frags[dst.0 as usize];
            if ty != declared {
                return Err((
                    span,
                    format!("{dst} is declared with another type (`frag {dst}`)"),
                ));
            }
            if load {
                let arr = self.shared_ref()?;
                let index = self.index()?;
                self.word("stride")?;
                let stride = self.u32("the stride")?;
                let column_major = self.eat_word("column_major");
                Stmt::CoopLoad {
                    dst,
                    arr,
                    index,
                    stride,
                    column_major,
                }
            } else {
                Stmt::CoopZero { dst }
            }
        } else if self.eat_word("coop_mul_add") {
            let a = self.frag_ref()?;
            self.punct(',')?;
            let b = self.frag_ref()?;
            self.punct(',')?;
            let c = self.frag_ref()?;
            Stmt::CoopMulAdd { dst, a, b, c }
        } else if self.is_numbered_word('f') {
            Stmt::CoopCopy {
                dst,
                src: self.frag_ref()?,
            }
        } else {
            return self.expected("`coop_zero`, `coop_load`, `coop_mul_add` or a fragment");
        };
        self.end_of_line()?;
        Ok(s)
    }

    /// `{regs}[: ty] = ldmatrix ...` or `... = mma ...`.
    fn list_stmt(&mut self) -> PResult<Stmt> {
        let (dst, spans) = self.reg_list()?;
        if self.is_punct(':') {
            self.next();
            let ty = self.reg_ty()?;
            for (r, span) in dst.iter().zip(spans) {
                self.define(*r, ty, span)?;
            }
        }
        self.punct('=')?;
        let s = if self.eat_word("ldmatrix") {
            let trans = if self.is_punct('.') {
                self.next();
                self.word("trans")?;
                true
            } else {
                false
            };
            let arr = self.shared_ref()?;
            let index = self.index()?;
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            }
        } else if self.eat_word("mma") {
            self.punct('.')?;
            let span = self.peek().span;
            let (shape, _) = self.ident("an mma shape (`m16n8k16`)")?;
            self.punct('.')?;
            let (input, _) = self.ident("an mma input type")?;
            let name = format!("{shape}.{input}");
            let Some(kind) = MMA_KINDS.into_iter().find(|k| k.name() == name) else {
                return Err((
                    span,
                    format!("expected `m16n8k16.f16`, `m16n8k16.bf16` or `m16n8k8.tf32`, found `{name}`"),
                ));
            };
            let (a, _) = self.reg_list()?;
            self.punct(',')?;
            let (b, _) = self.reg_list()?;
            self.punct(',')?;
            let (c, _) = self.reg_list()?;
            Stmt::Mma {
                kind,
                d: dst,
                a,
                b,
                c,
            }
        } else {
            return self.expected("`ldmatrix` or `mma`");
        };
        self.end_of_line()?;
        Ok(s)
    }

    /// `wgmma m64nNkK.input {acc} += a @ b` (after `wgmma`).
    fn wgmma(&mut self) -> PResult<Stmt> {
        let span = self.peek().span;
        let (shape, _) = self.ident("a wgmma shape (`m64n128k16`)")?;
        let nk = shape
            .strip_prefix("m64n")
            .and_then(|s| s.split_once('k'))
            .and_then(|(n, k)| Some((n.parse::<u32>().ok()?, k.parse::<u32>().ok()?)));
        let Some((n, k)) = nk else {
            return Err((
                span,
                format!("expected a wgmma shape (`m64n128k16`), found `{shape}`"),
            ));
        };
        self.punct('.')?;
        let input = match &self.peek().tok {
            Tok::Ident(s) if s == "f16" => DType::F16,
            Tok::Ident(s) if s == "bf16" => DType::BF16,
            Tok::Ident(s) if s == "tf32" => DType::F32,
            _ => return self.expected("`f16`, `bf16` or `tf32`"),
        };
        self.next();
        let shape = WgmmaShape { input, n };
        if shape.k() != k {
            return Err((
                span,
                format!(
                    "`{}` inputs take k{}, not k{k}",
                    shape.input_name(),
                    shape.k()
                ),
            ));
        }
        let (acc, _) = self.reg_list()?;
        self.punct('+')?;
        self.punct('=')?;
        // `a`: a register list `{%r1, ..}` or a shared matrix.
        let a = if self.is_punct('{') {
            WgmmaA::Regs(self.reg_list()?.0)
        } else {
            WgmmaA::Shared(self.smem_matrix()?)
        };
        self.punct('@')?;
        let b = self.smem_matrix()?;
        let zero_acc = if matches!(&self.peek().tok, Tok::Ident(s) if s == "zero_acc") {
            self.next();
            Some(self.reg()?)
        } else {
            None
        };
        Ok(Stmt::Wgmma {
            shape,
            acc,
            a,
            b,
            zero_acc,
        })
    }

    /// `sN[reg + offset] swizzle S lbo L sbo S k|mn`.
    fn smem_matrix(&mut self) -> PResult<SmemMatrix> {
        let arr = self.shared_ref()?;
        self.punct('[')?;
        let base = self.reg()?;
        self.punct('+')?;
        let offset = self.u32("an element offset")?;
        self.punct(']')?;
        self.word("swizzle")?;
        let swizzle = self.u32("the swizzle in bytes")?;
        self.word("lbo")?;
        let lbo = self.u32("the leading-dimension byte offset")?;
        self.word("sbo")?;
        let sbo = self.u32("the stride-dimension byte offset")?;
        let mn_major = if self.eat_word("mn") {
            true
        } else if self.eat_word("k") {
            false
        } else {
            return self.expected("`k` or `mn` (the operand's major-ness)");
        };
        Ok(SmemMatrix {
            arr,
            base,
            offset,
            swizzle,
            lbo,
            sbo,
            mn_major,
        })
    }

    // --- expressions --------------------------------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        if self.is_numbered_word('r') {
            return Ok(Expr::Copy(self.reg()?));
        }
        let Tok::Ident(word) = self.peek().tok.clone() else {
            return self.expected("an expression");
        };
        let word_span = self.next().span;
        if let Some(op) = UNARY_OPS.into_iter().find(|o| o.name() == word) {
            return Ok(Expr::Unary(op, self.reg()?));
        }
        if let Some(op) = BINARY_OPS.into_iter().find(|o| o.name() == word) {
            let a = self.reg()?;
            self.punct(',')?;
            return Ok(Expr::Binary(op, a, self.reg()?));
        }
        for s in [
            Special::ThreadId,
            Special::SubgroupId,
            Special::SubgroupInvocationId,
        ] {
            if special_name(s) == word {
                return Ok(Expr::Special(s));
            }
        }
        Ok(match word.as_str() {
            "const" => Expr::Const(self.constant()?),
            "program_id" | "num_programs" => {
                self.punct('(')?;
                let axis = self.number::<u8>("an axis")?;
                self.punct(')')?;
                Expr::Special(if word == "program_id" {
                    Special::ProgramId(axis)
                } else {
                    Special::NumPrograms(axis)
                })
            }
            "param" => Expr::Param(self.param_ref("a parameter")?),
            "address" => Expr::Address(self.param_ref("a buffer parameter")?),
            "cmp" => {
                let pred = match &self.peek().tok {
                    Tok::Ident(s) => CMP_PREDS.into_iter().find(|p| p.name() == s),
                    _ => None,
                };
                let Some(pred) = pred else {
                    return self.expected("a comparison (`eq`, `ne`, `lt`, `le`, `gt`, `ge`)");
                };
                self.next();
                let a = self.reg()?;
                self.punct(',')?;
                Expr::Cmp(pred, a, self.reg()?)
            }
            "select" => {
                let cond = self.reg()?;
                self.punct(',')?;
                let on_true = self.reg()?;
                self.punct(',')?;
                let on_false = self.reg()?;
                Expr::Select {
                    cond,
                    on_true,
                    on_false,
                }
            }
            "fma" => {
                let a = self.reg()?;
                self.punct(',')?;
                let b = self.reg()?;
                self.punct(',')?;
                Expr::Fma(a, b, self.reg()?)
            }
            "cast" | "bitcast" => Expr::Cast {
                value: self.reg()?,
                bitcast: word == "bitcast",
            },
            "load" => {
                if self.is_numbered_word('s') {
                    let arr = self.shared_ref()?;
                    Expr::SharedLoad {
                        arr,
                        index: self.index()?,
                    }
                } else {
                    let buf = self.buffer_ref("a buffer parameter or a shared array")?;
                    let index = self.index()?;
                    let mask = self.opt_mask()?;
                    let other = if self.eat_word("other") {
                        Some(self.reg()?)
                    } else {
                        None
                    };
                    Expr::Load {
                        buf,
                        index,
                        mask,
                        other,
                    }
                }
            }
            "extract" => {
                let vector = self.reg()?;
                self.punct('.')?;
                Expr::Extract {
                    vector,
                    lane: self.number::<u8>("a lane")?,
                }
            }
            "vector" => {
                self.punct('(')?;
                let mut parts = vec![];
                if !self.is_punct(')') {
                    loop {
                        parts.push(self.reg()?);
                        if !self.is_punct(',') {
                            break;
                        }
                        self.next();
                    }
                }
                self.punct(')')?;
                Expr::Construct(parts)
            }
            "warp_uniform" => Expr::WarpUniform(self.reg()?),
            "shuffle" => {
                self.punct('.')?;
                self.word("xor")?;
                let value = self.reg()?;
                self.punct(',')?;
                Expr::ShuffleXor {
                    value,
                    mask: self.u32("a lane mask")?,
                }
            }
            "subgroup" => {
                self.punct('.')?;
                let op = match &self.peek().tok {
                    Tok::Ident(s) => SUBGROUP_OPS.into_iter().find(|o| subgroup_op_name(*o) == s),
                    _ => None,
                };
                let Some(op) = op else {
                    return self.expected("`add`, `max` or `min`");
                };
                self.next();
                Expr::SubgroupReduce {
                    op,
                    value: self.reg()?,
                }
            }
            _ => return Err((word_span, format!("expected an expression, found `{word}`"))),
        })
    }

    /// A constant: `true`, `false`, an integer, a float, `inf`, `-inf`, `nan`,
    /// `nan(0xBITS)`.
    fn constant(&mut self) -> PResult<Const> {
        let t = self.peek().clone();
        let what = "a constant";
        match &t.tok {
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.next();
                Ok(Const::Bool(s == "true"))
            }
            Tok::Ident(s) if s == "inf" => {
                self.next();
                Ok(Const::Float(f64::INFINITY))
            }
            Tok::Punct('-') if matches!(self.peek_at(1), Tok::Ident(s) if s == "inf") => {
                self.next();
                self.next();
                Ok(Const::Float(f64::NEG_INFINITY))
            }
            Tok::Ident(s) if s == "nan" => {
                self.next();
                if !self.is_punct('(') {
                    return Ok(Const::Float(f64::NAN));
                }
                self.next();
                let bits = match &self.peek().tok {
                    Tok::Num(h) => h
                        .strip_prefix("0x")
                        .and_then(|h| u64::from_str_radix(h, 16).ok())
                        .filter(|b| f64::from_bits(*b).is_nan()),
                    _ => None,
                };
                let Some(bits) = bits else {
                    return self.expected("the bits of a NaN (`0x7ff8000000000001`)");
                };
                self.next();
                self.punct(')')?;
                Ok(Const::Float(f64::from_bits(bits)))
            }
            Tok::Num(s) if !s.contains("0x") => {
                let c = if s.contains(['.', 'e', 'E']) {
                    s.parse::<f64>().ok().map(Const::Float)
                } else {
                    s.parse::<i128>()
                        .ok()
                        .filter(|v| *v >= i64::MIN as i128 && *v <= u64::MAX as i128)
                        .map(|v| Const::Int(v as i64))
                };
                match c {
                    Some(c) => {
                        self.next();
                        Ok(c)
                    }
                    None => self.expected(what),
                }
            }
            _ => self.expected(what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lookup tables list every variant: a new one fails to compile here until it
    /// is listed (and printed).
    #[test]
    fn tables_are_complete() {
        for op in UNARY_OPS {
            match op {
                UnaryOp::Neg
                | UnaryOp::Not
                | UnaryOp::Abs
                | UnaryOp::Exp
                | UnaryOp::Exp2
                | UnaryOp::Log
                | UnaryOp::Log2
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Erf
                | UnaryOp::Tanh => {}
            }
        }
        for op in BINARY_OPS {
            match op {
                BinaryOp::Add
                | BinaryOp::Sub
                | BinaryOp::Mul
                | BinaryOp::Div
                | BinaryOp::Rem
                | BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
                | BinaryOp::Shl
                | BinaryOp::Shr
                | BinaryOp::Min
                | BinaryOp::Max
                | BinaryOp::Pow
                | BinaryOp::MulHi => {}
            }
        }
        for p in CMP_PREDS {
            match p {
                CmpPred::Eq
                | CmpPred::Ne
                | CmpPred::Lt
                | CmpPred::Le
                | CmpPred::Gt
                | CmpPred::Ge => {}
            }
        }
        for op in ATOMIC_OPS {
            match op {
                AtomicOp::Add
                | AtomicOp::Max
                | AtomicOp::Min
                | AtomicOp::And
                | AtomicOp::Or
                | AtomicOp::Xor
                | AtomicOp::Xchg => {}
            }
        }
        for k in MMA_KINDS {
            match k {
                MmaKind::F16M16N8K16 | MmaKind::Bf16M16N8K16 | MmaKind::Tf32M16N8K8 => {}
            }
        }
        for s in [Special::ThreadId] {
            match s {
                Special::ThreadId
                | Special::ProgramId(_)
                | Special::NumPrograms(_)
                | Special::SubgroupId
                | Special::SubgroupInvocationId => {}
            }
        }
        // Names are distinct within each table.
        let names: Vec<&str> = UNARY_OPS
            .iter()
            .map(|o| o.name())
            .chain(BINARY_OPS.iter().map(|o| o.name()))
            .collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n}");
        }
    }

    #[test]
    fn strings_round_trip() {
        for s in ["", "plain", "a \"b\" \\ c\nd\te\r", "\u{1}\u{7f}é", "{}"] {
            let q = super::super::print::quote(s);
            let (back, end) = lex_string(&q, 0).unwrap();
            assert_eq!(back, s);
            assert_eq!(end, q.len());
        }
    }
}
