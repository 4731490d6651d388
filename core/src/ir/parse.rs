//! The parser of the tile IR's text form: the inverse of [`super::print`].
//!
//! [`parse`] reads one kernel as [`super::print`] writes it (the grammar is the
//! printer's, op by op) and rebuilds the [`Kernel`]: printing the result gives the
//! same text, byte for byte. Malformed text gives a [`Diagnostic`] of kind
//! [`ErrorKind::Syntax`] whose message names the line and column of the IR text and
//! what was expected there (its span points into the IR text too); no input panics.
//!
//! What the text form does not carry comes back as follows:
//! - **Spans.** The printer writes only each instruction's source line, as a trailing
//!   `// line N`. The parsed kernel's [`SourceFile`] is synthetic: named
//!   `<tile ir @NAME>`, its text is as many empty lines as the largest `N`, and an
//!   instruction with `// line N` gets the span of the (empty) line `N`, from its first
//!   byte to its newline, so `Kernel::line_of` gives `N` back. An instruction without
//!   the comment gets [`Span::NONE`], for which the printer writes none. Parameters
//!   and the kernel itself get [`Span::NONE`].
//! - **Value names** (`ValueData::name`): parameters keep theirs (printed in the
//!   header); other values have none.
//! - **Value numbers** are kept: `%N` is `Value(N)`. Slots of the value arena the text
//!   never mentions (values a pass left unused) are filled with unused `i1` scalars.
//! - **Block-argument types** the text leaves implicit are those of what feeds them:
//!   a `for` induction variable has the type of its lower bound, `iter` arguments that
//!   of their initial values, a `while` after-block's arguments the `while`'s result
//!   types, a combine region's arguments the element types of the reduced operands
//!   (twice).
//!
//! The parser checks syntax and what it needs to build the kernel: every value is
//! defined once and before its uses (in text order), results match the op's arity and
//! the listed types. Scoping and typing rules are [`super::verify`]'s.

use super::ops::{
    AtomicOp, BinaryOp, CacheHints, CmpPred, Combiner, Const, HintKind, Op, Padding, Precision,
    StagedLayout, Staging, TensorBox, UnaryOp,
};
use super::{Block, DType, Elem, Inst, Kernel, Param, Type, Value, ValueData, ValueDef};
use crate::diag::{Diagnostic, ErrorKind, Result, SourceFile, Span};

/// The parser's results: errors boxed, which keeps the frames of its recursion small.
type R<T> = std::result::Result<T, Box<Diagnostic>>;

/// An op as read: the op, the number of results it has (`None`: any), and the result
/// types when the op's syntax carries them before the end of the line.
type ParsedOp = (Op, Option<usize>, Option<Vec<Type>>);

/// Nested blocks deeper than this are refused (the parser recurses per block).
const MAX_DEPTH: usize = 100;
/// `// line N` comments above this are refused (the synthetic source has `N` lines).
const MAX_LINE: u32 = 1 << 22;

/// Parses the text form of one kernel (as [`super::print`] writes it).
pub fn parse(text: &str) -> Result<Kernel> {
    let mut p = Parser {
        src: text,
        pos: 0,
        values: vec![],
        value_limit: text.len().saturating_add(1 << 16),
        depth: 0,
        max_line: 0,
    };
    if text.len() >= u32::MAX as usize {
        return Err(*p.err_at(0, "the tile IR text is too long (4 GiB or more)"));
    }
    p.kernel().map_err(|e| *e)
}

const UNARY: [UnaryOp; 15] = [
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

const BINARY: [BinaryOp; 14] = [
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

const CMP: [CmpPred; 6] = [
    CmpPred::Eq,
    CmpPred::Ne,
    CmpPred::Lt,
    CmpPred::Le,
    CmpPred::Gt,
    CmpPred::Ge,
];

const ATOMIC: [AtomicOp; 7] = [
    AtomicOp::Add,
    AtomicOp::Max,
    AtomicOp::Min,
    AtomicOp::And,
    AtomicOp::Or,
    AtomicOp::Xor,
    AtomicOp::Xchg,
];

const PRECISION: [Precision; 3] = [Precision::Tf32, Precision::Tf32x3, Precision::Ieee];

const PADDING: [Padding; 3] = [Padding::None, Padding::Zero, Padding::Nan];

/// Fails to compile when an enum above gains a variant, so that the tables stay whole.
#[allow(dead_code)]
fn tables_are_complete(u: UnaryOp, b: BinaryOp, c: CmpPred, a: AtomicOp, p: Precision) {
    use UnaryOp as U;
    match u {
        U::Neg | U::Not | U::Abs | U::Exp | U::Exp2 | U::Log | U::Log2 | U::Sqrt => {}
        U::Rsqrt | U::Sin | U::Cos | U::Floor | U::Ceil | U::Erf | U::Tanh => {}
    }
    use BinaryOp as B;
    match b {
        B::Add | B::Sub | B::Mul | B::Div | B::Rem | B::And | B::Or => {}
        B::Xor | B::Shl | B::Shr | B::Min | B::Max | B::Pow | B::MulHi => {}
    }
    use CmpPred as C;
    match c {
        C::Eq | C::Ne | C::Lt | C::Le | C::Gt | C::Ge => {}
    }
    use AtomicOp as A;
    match a {
        A::Add | A::Max | A::Min | A::And | A::Or | A::Xor | A::Xchg => {}
    }
    match p {
        Precision::Tf32 | Precision::Tf32x3 | Precision::Ieee => {}
    }
}

/// The built-in combiners by keyword.
fn combiner_from_name(name: &str) -> Option<Combiner> {
    Some(match name {
        "add" => Combiner::Add,
        "mul" => Combiner::Mul,
        "max" => Combiner::Max,
        "min" => Combiner::Min,
        "argmax" => Combiner::ArgMax,
        "argmin" => Combiner::ArgMin,
        _ => return None,
    })
}

fn dtype_from_name(name: &str) -> Option<DType> {
    DType::ALL.into_iter().find(|d| d.name() == name)
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A value name seen in the text (`%N`) and where.
#[derive(Clone, Copy)]
struct Name {
    value: Value,
    pos: usize,
}

struct Parser<'a> {
    src: &'a str,
    /// Byte offset of the next character; always on a character boundary.
    pos: usize,
    /// The value arena as defined so far (`None`: not defined yet).
    values: Vec<Option<ValueData>>,
    /// Value numbers at or above this are refused (they would size the arena).
    value_limit: usize,
    /// Nested blocks open.
    depth: usize,
    /// The largest `// line N` seen.
    max_line: u32,
}

impl<'a> Parser<'a> {
    // ---- errors ----

    fn err_at(&self, pos: usize, msg: impl Into<String>) -> Box<Diagnostic> {
        let src = SourceFile::new("<tile ir>", self.src);
        let pos = pos.min(self.src.len());
        let (line, col) = src.line_col(pos as u32);
        let width = self.src[pos..]
            .chars()
            .next()
            .filter(|c| *c != '\n')
            .map_or(1, char::len_utf8);
        let d = Diagnostic::new(
            ErrorKind::Syntax,
            format!("tile IR line {line}, column {col}: {}", msg.into()),
        )
        .at(Span::new(pos as u32, (pos + width) as u32), "")
        .with_source(&src);
        Box::new(d)
    }

    /// What is at the current position, for "expected X, found Y".
    fn found(&self) -> String {
        let rest = &self.src[self.pos..];
        match rest.chars().next() {
            None => "the end of the text".into(),
            Some('\n') | Some('\r') => "the end of the line".into(),
            Some(c) if is_ident_char(c) || c == '%' || c == '-' => {
                let word: String = rest
                    .chars()
                    .enumerate()
                    .take_while(|&(i, ch)| {
                        is_ident_char(ch) || (i == 0 && (ch == '%' || ch == '-'))
                    })
                    .map(|(_, ch)| ch)
                    .take(40)
                    .collect();
                format!("`{word}`")
            }
            Some(c) => format!("`{c}`"),
        }
    }

    fn expected(&self, what: &str) -> Box<Diagnostic> {
        self.err_at(self.pos, format!("expected {what}, found {}", self.found()))
    }

    // ---- characters ----

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    /// Skips spaces and tabs (not newlines).
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ') | Some('\t')) {
            self.pos += 1;
        }
    }

    /// Skips whitespace, newlines included.
    fn skip_ws_lines(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.pos += 1;
        }
    }

    /// Whether the text goes on with `s` (after spaces); consumes it if so.
    fn eat(&mut self, s: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> R<()> {
        if self.eat(s) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    /// Whether the next word (after spaces) is the keyword `kw`; consumes it if so.
    fn eat_kw(&mut self, kw: &str) -> bool {
        self.skip_ws();
        let rest = self.rest();
        if rest.starts_with(kw) && !rest[kw.len()..].starts_with(is_ident_char) {
            self.pos += kw.len();
            true
        } else {
            false
        }
    }

    fn expect_kw(&mut self, kw: &str) -> R<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{kw}`")))
        }
    }

    /// A word of letters, digits and underscores.
    fn ident(&mut self, what: &str) -> R<(&'a str, usize)> {
        self.skip_ws();
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !is_ident_char(c))
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.expected(what));
        }
        self.pos += len;
        let src = self.src;
        Ok((&src[start..start + len], start))
    }

    /// An unsigned decimal number that fits `T`.
    fn uint<T: TryFrom<u64>>(&mut self, what: &str) -> R<T> {
        self.skip_ws();
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.expected(what));
        }
        self.pos += len;
        self.src[start..self.pos]
            .parse::<u64>()
            .ok()
            .and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| self.err_at(start, format!("{what} out of range")))
    }

    /// A signed decimal number.
    fn int(&mut self, what: &str) -> R<i64> {
        self.skip_ws();
        let start = self.pos;
        let neg = self.rest().starts_with('-');
        if neg {
            self.pos += 1;
        }
        let len = self
            .rest()
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(self.rest().len());
        if len == 0 {
            self.pos = start;
            return Err(self.expected(what));
        }
        self.pos += len;
        self.src[start..self.pos]
            .parse::<i64>()
            .map_err(|_| self.err_at(start, format!("{what} out of range")))
    }

    /// A double-quoted string with the printer's escapes.
    fn string(&mut self, what: &str) -> R<String> {
        self.skip_ws();
        if self.peek() != Some('"') {
            return Err(self.expected(what));
        }
        self.pos += 1;
        let mut out = String::new();
        loop {
            let at = self.pos;
            match self.bump() {
                None | Some('\n') => {
                    return Err(self.err_at(at, "unterminated string (expected `\"`)"))
                }
                Some('"') => return Ok(out),
                Some('\\') => {
                    match self.bump() {
                        Some('\\') => out.push('\\'),
                        Some('"') => out.push('"'),
                        Some('\'') => out.push('\''),
                        Some('n') => out.push('\n'),
                        Some('r') => out.push('\r'),
                        Some('t') => out.push('\t'),
                        Some('0') => out.push('\0'),
                        Some('u') => {
                            let bad = |p: &Self| {
                                p.err_at(at, "invalid `\\u{...}` escape (expected hex digits)")
                            };
                            if self.bump() != Some('{') {
                                return Err(bad(self));
                            }
                            let start = self.pos;
                            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                                self.pos += 1;
                            }
                            let digits = &self.src[start..self.pos];
                            let c = (digits.len() <= 6)
                                .then(|| u32::from_str_radix(digits, 16).ok())
                                .flatten()
                                .and_then(char::from_u32);
                            match (c, self.bump()) {
                                (Some(c), Some('}')) => out.push(c),
                                _ => return Err(bad(self)),
                            }
                        }
                        _ => return Err(self.err_at(
                            at,
                            "unknown escape (expected one of `\\\\ \\\" \\n \\r \\t \\0 \\u{..}`)",
                        )),
                    }
                }
                Some(c) => out.push(c),
            }
        }
    }

    /// `[a, b, ...]` of unsigned numbers.
    fn dims(&mut self, what: &str) -> R<Vec<u32>> {
        if !self.eat("[") {
            return Err(self.expected(what));
        }
        let mut out = vec![];
        if self.eat("]") {
            return Ok(out);
        }
        loop {
            out.push(self.uint("a number")?);
            if self.eat("]") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.expected("`,` or `]`"));
            }
        }
    }

    // ---- values ----

    /// `%N`, not yet checked for being defined.
    fn name(&mut self, what: &str) -> R<Name> {
        self.skip_ws();
        let pos = self.pos;
        if self.peek() != Some('%') {
            return Err(self.expected(what));
        }
        self.pos += 1;
        if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos = pos;
            return Err(self.expected(what));
        }
        let n: u32 = self.uint("a value number")?;
        if n as usize >= self.value_limit {
            return Err(self.err_at(
                pos,
                format!(
                    "value number %{n} is too large for a text of {} bytes",
                    self.src.len()
                ),
            ));
        }
        Ok(Name {
            value: Value(n),
            pos,
        })
    }

    /// A use of a value, which must be defined already.
    fn use_value(&mut self) -> R<Value> {
        let n = self.name("a value (`%N`)")?;
        if self.defined(n.value).is_none() {
            return Err(self.err_at(n.pos, format!("{} is not defined before this use", n.value)));
        }
        Ok(n.value)
    }

    fn defined(&self, v: Value) -> Option<&ValueData> {
        self.values.get(v.0 as usize).and_then(Option::as_ref)
    }

    fn ty_of(&self, v: Value) -> Type {
        self.defined(v)
            .map(|d| d.ty.clone())
            .unwrap_or(Type::scalar(DType::I1))
    }

    /// Defines the value `n` names.
    fn define(&mut self, n: Name, ty: Type, def: ValueDef, name: Option<String>) -> R<()> {
        let i = n.value.0 as usize;
        if self.values.len() <= i {
            self.values.resize(i + 1, None);
        }
        if self.values[i].is_some() {
            return Err(self.err_at(n.pos, format!("{} is defined twice", n.value)));
        }
        self.values[i] = Some(ValueData { ty, def, name });
        Ok(())
    }

    /// Values separated by commas; stops before a comma not followed by a value.
    fn values_list(&mut self) -> R<Vec<Value>> {
        let mut out = vec![self.use_value()?];
        loop {
            let save = self.pos;
            if self.eat(",") {
                self.skip_ws();
                if self.peek() == Some('%') {
                    out.push(self.use_value()?);
                    continue;
                }
            }
            self.pos = save;
            return Ok(out);
        }
    }

    /// Values if the text goes on with one, else none.
    fn opt_values_list(&mut self) -> R<Vec<Value>> {
        self.skip_ws();
        if self.peek() == Some('%') {
            self.values_list()
        } else {
            Ok(vec![])
        }
    }

    /// `(%a, %b, ...)`, possibly empty.
    fn paren_values(&mut self) -> R<Vec<Value>> {
        self.expect("(")?;
        if self.eat(")") {
            return Ok(vec![]);
        }
        let v = self.values_list()?;
        self.expect(")")?;
        Ok(v)
    }

    /// `(%a, %b, ...)` of names being defined, possibly empty.
    fn paren_names(&mut self) -> R<Vec<Name>> {
        self.expect("(")?;
        let mut out = vec![];
        if self.eat(")") {
            return Ok(out);
        }
        loop {
            out.push(self.name("a value (`%N`)")?);
            if self.eat(")") {
                return Ok(out);
            }
            if !self.eat(",") {
                return Err(self.expected("`,` or `)`"));
            }
        }
    }

    /// `iter(%a = %x, ...)`: the carried block arguments (defined here, with the types
    /// of their initial values) and the initial values.
    fn iter_args(&mut self) -> R<(Vec<Value>, Vec<Value>)> {
        self.expect_kw("iter")?;
        self.expect("(")?;
        let (mut args, mut init) = (vec![], vec![]);
        if self.eat(")") {
            return Ok((args, init));
        }
        loop {
            let a = self.name("a block argument (`%N`)")?;
            self.expect("=")?;
            let i = self.use_value()?;
            let ty = self.ty_of(i);
            self.define(a, ty, ValueDef::BlockArg, None)?;
            args.push(a.value);
            init.push(i);
            if self.eat(")") {
                return Ok((args, init));
            }
            if !self.eat(",") {
                return Err(self.expected("`,` or `)`"));
            }
        }
    }

    // ---- types ----

    fn dtype(&mut self) -> R<DType> {
        let (name, pos) = self.ident("an element type")?;
        dtype_from_name(name)
            .ok_or_else(|| self.err_at(pos, format!("expected an element type, found `{name}`")))
    }

    /// `f32` or `ptr<f32>`.
    fn elem(&mut self) -> R<Elem> {
        if self.eat_kw("ptr") {
            self.expect("<")?;
            let d = self.dtype()?;
            self.expect(">")?;
            Ok(Elem::Ptr(d))
        } else {
            Ok(Elem::Data(self.dtype()?))
        }
    }

    fn ty(&mut self) -> R<Type> {
        self.skip_ws();
        if self.eat_kw("tile") {
            self.expect("<")?;
            let mut shape = vec![];
            loop {
                shape.push(self.uint("a dimension")?);
                if self.rest().starts_with('x') {
                    self.pos += 1;
                } else {
                    return Err(self.expected("`x`"));
                }
                if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    break;
                }
            }
            let elem = self.elem()?;
            self.expect(">")?;
            Ok(Type::Tile { elem, shape })
        } else if self.eat_kw("block_ptr") {
            self.expect("<")?;
            let pointee = self.dtype()?;
            self.expect(",")?;
            self.skip_ws();
            let mut block_shape = vec![];
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                loop {
                    block_shape.push(self.uint("a dimension")?);
                    if self.rest().starts_with('x') {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
            }
            self.expect(">")?;
            Ok(Type::BlockPtr {
                pointee,
                block_shape,
            })
        } else {
            self.skip_ws();
            if !self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                return Err(self.expected("a type"));
            }
            Ok(Type::Tile {
                elem: self.elem()?,
                shape: vec![],
            })
        }
    }

    /// Types separated by commas (at least one).
    fn types(&mut self) -> R<Vec<Type>> {
        let mut out = vec![self.ty()?];
        while self.eat(",") {
            out.push(self.ty()?);
        }
        Ok(out)
    }

    /// `(T, ...)`, possibly empty.
    fn paren_types(&mut self) -> R<Vec<Type>> {
        self.expect("(")?;
        if self.eat(")") {
            return Ok(vec![]);
        }
        let t = self.types()?;
        self.expect(")")?;
        Ok(t)
    }

    // ---- structure ----

    fn kernel(&mut self) -> R<Kernel> {
        self.skip_ws_lines();
        self.expect_kw("kernel")?;
        self.expect("@")?;
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| !(is_ident_char(c) || c == '.'))
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.expected("the kernel's name"));
        }
        self.pos += len;
        let name = self.src[start..self.pos].to_string();
        self.expect("(")?;
        let mut params = vec![];
        if !self.eat(")") {
            loop {
                params.push(self.param(params.len() as u32)?);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.expected("`,` or `)`"));
                }
            }
        }
        self.expect("{")?;
        self.newline()?;
        let mut body = Block::default();
        self.block_body(&mut body)?;
        self.expect("}")?;
        self.skip_ws_lines();
        if self.pos < self.src.len() {
            return Err(self.expected("the end of the text after the kernel"));
        }
        let text = "\n".repeat(self.max_line as usize);
        let source = SourceFile::new(format!("<tile ir @{name}>"), text);
        let values = std::mem::take(&mut self.values)
            .into_iter()
            .map(|v| {
                v.unwrap_or(ValueData {
                    ty: Type::scalar(DType::I1),
                    def: ValueDef::Result,
                    name: None,
                })
            })
            .collect();
        Ok(Kernel {
            name,
            params,
            values,
            body,
            source,
            span: Span::NONE,
        })
    }

    /// `%N: TYPE NAME [div D]`.
    fn param(&mut self, index: u32) -> R<Param> {
        let n = self.name("a parameter (`%N: type name`)")?;
        self.expect(":")?;
        let ty = self.ty()?;
        self.skip_ws();
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ')' | '[' | '{'))
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.expected("the parameter's name"));
        }
        self.pos += len;
        let name = self.src[start..self.pos].to_string();
        let mut divisibility = 1;
        if self.eat("[") {
            self.expect_kw("div")?;
            let at = self.pos;
            divisibility = self.uint("a divisibility")?;
            if divisibility == 0 {
                return Err(self.err_at(at, "divisibility must be at least 1"));
            }
            self.expect("]")?;
        }
        self.define(n, ty.clone(), ValueDef::Param(index), Some(name.clone()))?;
        Ok(Param {
            name,
            ty,
            value: n.value,
            span: Span::NONE,
            divisibility,
        })
    }

    /// The end of a line: spaces, then a newline or the end of the text.
    fn newline(&mut self) -> R<()> {
        self.skip_ws();
        if self.rest().starts_with("\r\n") {
            self.pos += 2;
            Ok(())
        } else if self.rest().starts_with('\n') {
            self.pos += 1;
            Ok(())
        } else if self.pos == self.src.len() {
            Ok(())
        } else {
            Err(self.expected("the end of the line"))
        }
    }

    /// The end of an instruction: an optional `// line N`, then the end of the line.
    /// Returns the instruction's span.
    fn line_end(&mut self) -> R<Span> {
        self.skip_ws();
        let mut span = Span::NONE;
        if self.rest().starts_with("//") {
            self.pos += 2;
            self.expect_kw("line")?;
            let at = self.pos;
            let line: u32 = self.uint("a line number")?;
            if line == 0 || line > MAX_LINE {
                return Err(self.err_at(at, format!("line number {line} out of range")));
            }
            self.max_line = self.max_line.max(line);
            span = Span::new(line - 1, line);
        }
        self.newline()?;
        Ok(span)
    }

    /// Instructions up to (not including) the `}` that closes the block.
    fn block_body(&mut self, block: &mut Block) -> R<()> {
        loop {
            self.skip_ws_lines();
            match self.peek() {
                Some('}') => return Ok(()),
                None => return Err(self.expected("an instruction or `}`")),
                _ => {
                    let inst = self.inst()?;
                    block.insts.push(inst);
                }
            }
        }
    }

    /// `{`, a newline, the instructions, `}`: a nested block whose arguments are
    /// already defined.
    fn nested(&mut self, args: Vec<Value>) -> R<Block> {
        let at = self.pos;
        self.expect("{")?;
        if self.depth >= MAX_DEPTH {
            return Err(self.err_at(at, format!("blocks nested deeper than {MAX_DEPTH}")));
        }
        self.depth += 1;
        self.newline()?;
        let mut block = Block {
            args,
            insts: vec![],
        };
        self.block_body(&mut block)?;
        self.expect("}")?;
        self.depth -= 1;
        Ok(block)
    }

    /// `: T, ...` for `n` results (nothing when there are none).
    fn result_types(&mut self, n: usize) -> R<Vec<Type>> {
        if n == 0 {
            return Ok(vec![]);
        }
        self.expect(":")?;
        self.types()
    }

    fn inst(&mut self) -> R<Inst> {
        let (results, name, op_pos) = self.inst_head()?;
        // Control flow is parsed apart from the rest, and the instruction's head and
        // tail in functions of their own, which keeps the frames of the recursion
        // (instruction, block, instruction) small.
        let parsed = match name {
            "for" => self.for_op(),
            "if" => self.if_op(),
            "while" => self.while_op(),
            "reduce" | "scan" => self.reduce_op(name == "scan", results.len()),
            _ => self.simple_op(name, op_pos),
        };
        self.inst_tail(results, name, op_pos, parsed?)
    }

    /// The results, `=`, and the op's name.
    fn inst_head(&mut self) -> R<(Vec<Name>, &'a str, usize)> {
        let mut results: Vec<Name> = vec![];
        self.skip_ws();
        if self.peek() == Some('%') {
            loop {
                results.push(self.name("a result (`%N`)")?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("=")?;
        }
        let (name, op_pos) = self.ident("an operation")?;
        Ok((results, name, op_pos))
    }

    /// Checks the results against the op, reads their types (unless the op had them)
    /// and the end of the line, and defines them.
    fn inst_tail(
        &mut self,
        results: Vec<Name>,
        name: &str,
        op_pos: usize,
        (op, arity, types): ParsedOp,
    ) -> R<Inst> {
        let nres = results.len();
        if let Some(n) = arity {
            if n != nres {
                let at = results.first().map_or(op_pos, |r| r.pos);
                return Err(
                    self.err_at(at, format!("`{name}` here has {n} result(s), found {nres}"))
                );
            }
        }
        let at = self.pos;
        let types = match types {
            Some(t) => t,
            None => self.result_types(nres)?,
        };
        if types.len() != nres {
            return Err(self.err_at(at, format!("{nres} result(s) but {} type(s)", types.len())));
        }
        let span = self.line_end()?;
        for (r, t) in results.iter().zip(types) {
            self.define(*r, t, ValueDef::Result, None)?;
        }
        Ok(Inst {
            op,
            results: results.iter().map(|r| r.value).collect(),
            span,
        })
    }

    /// An op without nested blocks (after its name), with its number of results.
    fn simple_op(&mut self, name: &str, op_pos: usize) -> R<ParsedOp> {
        let mut arity = 1;
        let op = match name {
            "const" => Op::Const(self.constant()?),
            "program_id" => Op::ProgramId {
                axis: self.uint("an axis")?,
            },
            "num_programs" => Op::NumPrograms {
                axis: self.uint("an axis")?,
            },
            "arange" => {
                let start = self.int("a number")?;
                self.expect(",")?;
                let end = self.int("a number")?;
                Op::Arange { start, end }
            }
            "splat" => Op::Splat(self.use_value()?),
            "broadcast" => Op::Broadcast(self.use_value()?),
            "reshape" => Op::Reshape(self.use_value()?),
            "expand_dims" => {
                let value = self.use_value()?;
                self.expect(",")?;
                self.expect_kw("axis")?;
                let axis = self.uint("an axis")?;
                Op::ExpandDims { value, axis }
            }
            "permute" => {
                let value = self.use_value()?;
                self.expect(",")?;
                let perm = self.dims("a permutation (`[...]`)")?;
                Op::Permute { value, perm }
            }
            "cmp" => {
                const WHAT: &str = "a comparison (`eq`, `ne`, `lt`, `le`, `gt`, `ge`)";
                let (p, at) = self.ident(WHAT)?;
                let Some(pred) = CMP.into_iter().find(|c| c.name() == p) else {
                    return Err(self.err_at(at, format!("expected {WHAT}, found `{p}`")));
                };
                let lhs = self.use_value()?;
                self.expect(",")?;
                let rhs = self.use_value()?;
                Op::Cmp { pred, lhs, rhs }
            }
            "select" => {
                let [cond, on_true, on_false] = self.n_values()?;
                Op::Select {
                    cond,
                    on_true,
                    on_false,
                }
            }
            "fma" => {
                let [a, b, c] = self.n_values()?;
                Op::Fma { a, b, c }
            }
            "cast" | "bitcast" => Op::Cast {
                value: self.use_value()?,
                bitcast: name == "bitcast",
            },
            "addptr" => {
                let [ptr, offset] = self.n_values()?;
                Op::AddPtr { ptr, offset }
            }
            "make_block_ptr" => {
                let base = self.use_value()?;
                let shape = self.keyword_values("shape")?;
                let strides = self.keyword_values("strides")?;
                let offsets = self.keyword_values("offsets")?;
                self.expect(",")?;
                self.expect_kw("order")?;
                let order = self.dims("an order (`[...]`)")?;
                Op::MakeBlockPtr {
                    base,
                    shape,
                    strides,
                    offsets,
                    order,
                }
            }
            "advance" => {
                let mut v = self.values_list()?;
                let ptr = v.remove(0);
                Op::Advance { ptr, deltas: v }
            }
            "load" => self.load()?,
            "store" => {
                arity = 0;
                let [ptr, value] = self.n_values()?;
                let mask = if self.eat_kw("mask") {
                    Some(self.use_value()?)
                } else {
                    None
                };
                let boundary_check = if self.eat_kw("boundary_check") {
                    self.dims("dimensions (`[...]`)")?
                } else {
                    vec![]
                };
                let hints = self.cache_hints()?;
                Op::Store {
                    ptr,
                    value,
                    mask,
                    boundary_check,
                    hints,
                }
            }
            "atomic" => {
                const WHAT: &str =
                    "an atomic operation (`add`, `max`, `min`, `and`, `or`, `xor`, `xchg`)";
                let (o, at) = self.ident(WHAT)?;
                let Some(op) = ATOMIC.into_iter().find(|a| a.name() == o) else {
                    return Err(self.err_at(at, format!("expected {WHAT}, found `{o}`")));
                };
                let at = self.pos;
                let v = self.values_list()?;
                let (ptr, value, mask) = match v[..] {
                    [ptr, value] => (ptr, value, None),
                    [ptr, value, m] => (ptr, value, Some(m)),
                    _ => {
                        return Err(self.err_at(
                            at,
                            format!("`atomic` takes 2 or 3 operands, found {}", v.len()),
                        ))
                    }
                };
                Op::Atomic {
                    op,
                    ptr,
                    value,
                    mask,
                }
            }
            "atomic_cas" => {
                let [ptr, cmp, value] = self.n_values()?;
                Op::AtomicCas { ptr, cmp, value }
            }
            "dot" => {
                const WHAT: &str = "a precision (`tf32`, `tf32x3`, `ieee`)";
                let [a, b, acc] = self.n_values()?;
                self.expect_kw("precision")?;
                let (p, at) = self.ident(WHAT)?;
                let Some(precision) = PRECISION.into_iter().find(|x| x.name() == p) else {
                    return Err(self.err_at(at, format!("expected {WHAT}, found `{p}`")));
                };
                Op::Dot {
                    a,
                    b,
                    acc,
                    precision,
                }
            }
            "hint" => {
                const WHAT: &str = "a hint (`multiple_of`, `max_contiguous`, `max_constancy`)";
                let (k, at) = self.ident(WHAT)?;
                let d = self.dims("dimensions (`[...]`)")?;
                let hint = match k {
                    "multiple_of" => HintKind::MultipleOf(d),
                    "max_contiguous" => HintKind::MaxContiguous(d),
                    "max_constancy" => HintKind::MaxConstancy(d),
                    _ => return Err(self.err_at(at, format!("expected {WHAT}, found `{k}`"))),
                };
                let value = self.use_value()?;
                Op::Hint { value, hint }
            }
            "device_print" => {
                arity = 0;
                let prefix = self.string("a string (`\"...\"`)")?;
                let values = self.opt_values_list()?;
                let hex = self.eat_kw("hex");
                Op::DevicePrint {
                    prefix,
                    values,
                    hex,
                }
            }
            "device_assert" => {
                arity = 0;
                let cond = self.use_value()?;
                self.expect(",")?;
                let message = self.string("a string (`\"...\"`)")?;
                Op::DeviceAssert { cond, message }
            }
            "barrier" => {
                arity = 0;
                Op::Barrier
            }
            "check_block_ptr" => {
                arity = 0;
                let base = self.use_value()?;
                let shape = self.keyword_values("shape")?;
                let strides = self.keyword_values("strides")?;
                Op::CheckBlockPtr {
                    base,
                    shape,
                    strides,
                }
            }
            "yield" => {
                arity = 0;
                Op::Yield(self.opt_values_list()?)
            }
            "condition" => {
                arity = 0;
                let mut v = self.values_list()?;
                let cond = v.remove(0);
                Op::Condition { cond, args: v }
            }
            _ => {
                if let Some(op) = UNARY.into_iter().find(|u| u.name() == name) {
                    Op::Unary {
                        op,
                        value: self.use_value()?,
                    }
                } else if let Some(op) = BINARY.into_iter().find(|b| b.name() == name) {
                    let [lhs, rhs] = self.n_values()?;
                    Op::Binary { op, lhs, rhs }
                } else {
                    return Err(self.err_at(op_pos, format!("unknown operation `{name}`")));
                }
            }
        };
        Ok((op, Some(arity), None))
    }

    /// `, KW (%a, %b, ...)`.
    fn keyword_values(&mut self, kw: &str) -> R<Vec<Value>> {
        self.expect(",")?;
        self.expect_kw(kw)?;
        self.paren_values()
    }

    /// `for %iv = %lo to %hi step %s iter(%a = %x, ...) [num_stages N] [flatten B] : (T, ...) {`
    /// ... `}` (after `for`).
    fn for_op(&mut self) -> R<ParsedOp> {
        let iv = self.name("the induction variable (`%N`)")?;
        self.expect("=")?;
        let lower = self.use_value()?;
        self.expect_kw("to")?;
        let upper = self.use_value()?;
        self.expect_kw("step")?;
        let step = self.use_value()?;
        let ty = self.ty_of(lower);
        self.define(iv, ty, ValueDef::BlockArg, None)?;
        let (carried, init) = self.iter_args()?;
        let num_stages = if self.eat_kw("num_stages") {
            Some(self.uint("a number of stages")?)
        } else {
            None
        };
        let flatten = if self.eat_kw("flatten") {
            if self.eat_kw("true") {
                Some(true)
            } else {
                self.expect_kw("false")?;
                Some(false)
            }
        } else {
            None
        };
        self.expect(":")?;
        let at = self.pos;
        let tys = self.paren_types()?;
        if tys.len() != init.len() {
            return Err(self.err_at(
                at,
                format!(
                    "a `for` carrying {} value(s) has as many result types, found {}",
                    init.len(),
                    tys.len()
                ),
            ));
        }
        let mut args = vec![iv.value];
        args.extend(carried);
        let body = self.nested(args)?;
        let op = Op::For {
            lower,
            upper,
            step,
            init,
            body,
            num_stages,
            flatten,
        };
        Ok((op, Some(tys.len()), Some(tys)))
    }

    /// `if %c : (T, ...) {` ... `} else {` ... `}` (after `if`).
    fn if_op(&mut self) -> R<ParsedOp> {
        let cond = self.use_value()?;
        self.expect(":")?;
        let tys = self.paren_types()?;
        let then_block = self.nested(vec![])?;
        self.expect_kw("else")?;
        let else_block = self.nested(vec![])?;
        let op = Op::If {
            cond,
            then_block,
            else_block,
        };
        Ok((op, Some(tys.len()), Some(tys)))
    }

    /// `while iter(%a = %x, ...) : (T, ...) {` ... `} do(%b, ...) {` ... `}` (after
    /// `while`).
    fn while_op(&mut self) -> R<ParsedOp> {
        let (before_args, init) = self.iter_args()?;
        self.expect(":")?;
        let tys = self.paren_types()?;
        let before = self.nested(before_args)?;
        self.expect_kw("do")?;
        let at = self.pos;
        let names = self.paren_names()?;
        if names.len() != tys.len() {
            return Err(self.err_at(
                at,
                format!(
                    "the after-block of a `while` with {} result(s) takes as many arguments, found {}",
                    tys.len(),
                    names.len()
                ),
            ));
        }
        for (n, t) in names.iter().zip(&tys) {
            self.define(*n, t.clone(), ValueDef::BlockArg, None)?;
        }
        let after = self.nested(names.iter().map(|n| n.value).collect())?;
        let op = Op::While {
            init,
            before,
            after,
        };
        Ok((op, Some(tys.len()), Some(tys)))
    }

    /// `%a, ..., axis N [reverse] COMBINER` or `... combine(%x, ...) {` ... `} : T, ...`
    /// (after `reduce` or `scan`).
    fn reduce_op(&mut self, scan: bool, nres: usize) -> R<ParsedOp> {
        let operands = self.values_list()?;
        self.expect(",")?;
        self.expect_kw("axis")?;
        let axis = self.uint("an axis")?;
        let reverse = scan && self.eat_kw("reverse");
        let mut types = None;
        let combiner = if self.eat_kw("combine") {
            let at = self.pos;
            let names = self.paren_names()?;
            if names.len() != 2 * operands.len() {
                return Err(self.err_at(
                    at,
                    format!(
                        "a combine region over {} operand(s) takes {} arguments, found {}",
                        operands.len(),
                        2 * operands.len(),
                        names.len()
                    ),
                ));
            }
            let mut args = vec![];
            for (i, n) in names.iter().enumerate() {
                let o = operands[i % operands.len()];
                let ty = match self.ty_of(o) {
                    Type::Tile { elem, .. } => Type::Tile {
                        elem,
                        shape: vec![],
                    },
                    Type::BlockPtr { .. } => {
                        return Err(self.err_at(
                            at,
                            format!("{o} is a block pointer, which has no elements to combine"),
                        ))
                    }
                };
                self.define(*n, ty, ValueDef::BlockArg, None)?;
                args.push(n.value);
            }
            let block = self.nested(args)?;
            types = Some(self.result_types(nres)?);
            Combiner::Region(Box::new(block))
        } else {
            const WHAT: &str =
                "a combiner (`add`, `mul`, `max`, `min`, `argmax`, `argmin`) or `combine(...)`";
            let (c, at) = self.ident(WHAT)?;
            match combiner_from_name(c) {
                Some(c) => c,
                None => return Err(self.err_at(at, format!("expected {WHAT}, found `{c}`"))),
            }
        };
        let arity = operands.len();
        let op = if scan {
            Op::Scan {
                operands,
                axis,
                reverse,
                combiner,
            }
        } else {
            Op::Reduce {
                operands,
                axis,
                combiner,
            }
        };
        Ok((op, Some(arity), types))
    }

    /// `N` comma-separated values.
    fn n_values<const N: usize>(&mut self) -> R<[Value; N]> {
        let mut out = [Value(0); N];
        for (i, slot) in out.iter_mut().enumerate() {
            if i > 0 {
                self.expect(",")?;
            }
            *slot = self.use_value()?;
        }
        Ok(out)
    }

    /// A constant: `true`, `false`, an integer, or a float (`1.5`, `1e-7`, `inf`,
    /// `-inf`, `nan`, `-nan`, `nan(0x<bits>)`).
    fn constant(&mut self) -> R<Const> {
        self.skip_ws();
        let start = self.pos;
        let len = self
            .rest()
            .find(|c: char| c.is_whitespace())
            .unwrap_or(self.rest().len());
        let tok = &self.src[start..start + len];
        let bad = |p: &Self| {
            p.err_at(
                start,
                format!(
                    "expected a constant (`true`, `false`, an integer or a float), found {}",
                    if tok.is_empty() {
                        p.found()
                    } else {
                        format!("`{tok}`")
                    }
                ),
            )
        };
        let c = match tok {
            "true" => Const::Bool(true),
            "false" => Const::Bool(false),
            "inf" => Const::Float(f64::INFINITY),
            "-inf" => Const::Float(f64::NEG_INFINITY),
            "nan" => Const::Float(f64::NAN),
            "-nan" => Const::Float(-f64::NAN),
            _ if tok.starts_with("nan(0x") && tok.ends_with(')') => {
                let hex = &tok[6..tok.len() - 1];
                match u64::from_str_radix(hex, 16) {
                    Ok(bits) if !hex.starts_with('+') && f64::from_bits(bits).is_nan() => {
                        Const::Float(f64::from_bits(bits))
                    }
                    _ => return Err(bad(self)),
                }
            }
            _ => {
                let digits = tok.strip_prefix('-').unwrap_or(tok);
                if digits.is_empty() || !digits.starts_with(|c: char| c.is_ascii_digit()) {
                    return Err(bad(self));
                }
                if digits.bytes().all(|b| b.is_ascii_digit()) {
                    match tok.parse::<i64>() {
                        Ok(i) => Const::Int(i),
                        // u64 constants above i64::MAX, kept as their bits.
                        Err(_) => match tok.parse::<u64>() {
                            Ok(u) => Const::Int(u as i64),
                            Err(_) => return Err(bad(self)),
                        },
                    }
                } else if digits
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
                {
                    match tok.parse::<f64>() {
                        Ok(f) if f.is_finite() => Const::Float(f),
                        _ => return Err(bad(self)),
                    }
                } else {
                    return Err(bad(self));
                }
            }
        };
        self.pos += len;
        Ok(c)
    }

    /// The rest of a `load` (after the op name).
    fn load(&mut self) -> R<Op> {
        let ptr = self.use_value()?;
        let mask = if self.eat_kw("mask") {
            Some(self.use_value()?)
        } else {
            None
        };
        let other = if self.eat_kw("other") {
            Some(self.use_value()?)
        } else {
            None
        };
        let stage = if self.eat_kw("staged") {
            self.expect_kw("ring")?;
            let ring = self.uint("a ring number")?;
            self.expect_kw("stages")?;
            let stages = self.uint("a number of stages")?;
            self.expect_kw("operand")?;
            let operand = self.uint("an operand number")?;
            let layout = if self.eat_kw("pending") {
                StagedLayout::Fma
            } else {
                let (l, at) = self.ident(
                    "a staged layout (`mma`, `mmat`, `swizzleN`, `swizzleNt`) or `pending`",
                )?;
                let layout = if l == "mma" {
                    Some(StagedLayout::Padded)
                } else if l == "mmat" {
                    Some(StagedLayout::PaddedTransposed)
                } else {
                    l.strip_prefix("swizzle").and_then(|rest| {
                        let (digits, transposed) = match rest.strip_suffix('t') {
                            Some(d) => (d, true),
                            None => (rest, false),
                        };
                        let ok = !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit())
                            && !(digits.len() > 1 && digits.starts_with('0'));
                        let bytes = digits.parse::<u32>().ok().filter(|_| ok)?;
                        Some(StagedLayout::Swizzled { bytes, transposed })
                    })
                };
                let Some(layout) = layout else {
                    return Err(self.err_at(
                        at,
                        format!("expected a staged layout (`mma`, `mmat`, `swizzleN`, `swizzleNt`) or `pending`, found `{l}`"),
                    ));
                };
                self.expect_kw("pending")?;
                layout
            };
            let pending = self.uint("a number of pending groups")?;
            let slack = self.eat_kw("slack");
            Some(Staging {
                ring,
                stages,
                operand,
                layout,
                pending,
                slack,
            })
        } else {
            None
        };
        let boundary_check = if self.eat_kw("boundary_check") {
            self.dims("dimensions (`[...]`)")?
        } else {
            vec![]
        };
        let padding = if self.eat_kw("padding") {
            let (p, at) = self.ident("a padding (`none`, `zero`, `nan`)")?;
            match PADDING
                .into_iter()
                .find(|x| super::print::padding_name(*x) == p)
            {
                Some(p) => p,
                None => {
                    return Err(self.err_at(
                        at,
                        format!("expected a padding (`none`, `zero`, `nan`), found `{p}`"),
                    ));
                }
            }
        } else {
            Padding::None
        };
        let tensor_box = if self.eat_kw("box") {
            let at = self.pos;
            let parts = self.paren_values()?;
            if parts.len() % 3 != 1 || parts.len() < 4 {
                return Err(self.err_at(at, format!(
                    "a load's `box` lists a base, then the shape, strides and offsets of each dimension; {} values do not",
                    parts.len()
                )));
            }
            Some(TensorBox { parts })
        } else {
            None
        };
        let hints = self.cache_hints()?;
        Ok(Op::Load {
            ptr,
            mask,
            other,
            boundary_check,
            padding,
            hints,
            stage,
            tensor_box,
        })
    }

    fn cache_hints(&mut self) -> R<CacheHints> {
        let mut h = CacheHints::default();
        if self.eat_kw("cache_modifier") {
            h.cache_modifier = Some(self.string("a string (`\"...\"`)")?);
        }
        if self.eat_kw("eviction_policy") {
            h.eviction_policy = Some(self.string("a string (`\"...\"`)")?);
        }
        h.volatile = self.eat_kw("volatile");
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::print;

    fn roundtrip(text: &str) -> Kernel {
        let k = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(print(&k), text);
        k
    }

    #[test]
    fn every_form_round_trips() {
        let text = r#"kernel @k(%0: ptr<f32> x_ptr [div 4], %1: i32 n [div 16], %2: i64 d.shape0) {
  %3 = program_id 0 : i32  // line 3
  %4 = num_programs 2 : i32
  %5 = arange 0, 8 : tile<8xi32>  // line 4
  %6 = const 1.5 : f32  // line 5
  %7 = const -inf : f32
  %8 = const nan(0x7ff0000000000001) : f64
  %9 = const -nan : f64
  %10 = const 18446744073709551615 : u64
  %11 = const true : i1
  %12 = const 1e-7 : f32
  %13 = splat %0 : tile<8xptr<f32>>
  %14 = addptr %13, %5 : tile<8xptr<f32>>
  %15 = splat %1 : tile<8xi32>
  %16 = cmp lt %5, %15 : tile<8xi1>
  %17 = load %14 mask %16 cache_modifier ".cg" volatile : tile<8xf32>
  %18 = expand_dims %17, axis 1 : tile<8x1xf32>
  %19 = broadcast %18 : tile<8x4xf32>
  %20 = permute %19, [1, 0] : tile<4x8xf32>
  %21 = reshape %20 : tile<32xf32>
  %22 = exp %17 : tile<8xf32>
  %23 = mulhi %5, %5 : tile<8xi32>
  %24 = select %16, %17, %22 : tile<8xf32>
  %25 = fma %17, %22, %24 : tile<8xf32>
  %26 = bitcast %25 : tile<8xi32>
  %27 = hint multiple_of [8] %5 : tile<8xi32>
  %28 = atomic add %14, %17, %16 : tile<8xf32>
  %29 = atomic_cas %0, %6, %6 : f32
  %30 = reduce %17, axis 0 max : f32
  %31, %32 = reduce %17, %5, axis 0 combine(%33, %34, %35, %36) {
    %37 = add %33, %35 : f32
    %38 = min %34, %36 : i32
    yield %37, %38
  } : f32, i32  // line 9
  %39 = scan %5, axis 0 reverse add : tile<8xi32>
  %40 = make_block_ptr %0, shape (%2, %2), strides (%2, %2), offsets (%1, %1), order [1, 0] : block_ptr<f32, 8x4>
  check_block_ptr %0, shape (%2, %2), strides (%2, %2)
  %41 = advance %40, %1, %1 : block_ptr<f32, 8x4>
  %42 = load %41 boundary_check [0, 1] padding nan : tile<8x4xf32>
  store %41, %42 boundary_check [1] eviction_policy "evict_last"
  %43 = const 0 : i32
  %46 = for %44 = %43 to %1 step %1 iter(%45 = %6) num_stages 3 : (f32) {
    %47 = add %45, %6 : f32
    yield %47  // line 12
  }  // line 11
  %48 = cmp gt %1, %43 : i1
  %49 = if %48 : (f32) {
    yield %6
  } else {
    yield %46
  }  // line 14
  if %48 : () {
    barrier
    yield
  } else {
    yield  // line 2
  }
  %53 = while iter(%50 = %1) : (i32) {
    %51 = cmp lt %50, %43 : i1
    condition %51, %50
  } do(%52) {
    yield %52
  }
  device_print "x: \"q\"\n" %17, %53 hex
  device_print "end"
  device_assert %48, "bad\ttab \u{1}"
  store %14, %17 mask %16
}
"#;
        let k = roundtrip(text);
        assert_eq!(k.params[2].name, "d.shape0");
        assert_eq!(k.line_of(k.body.insts[0].span), 3);
        assert!(k.body.insts[1].span.is_none());
        crate::ir::verify::verify(&k).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn staged_loads_and_dots_round_trip() {
        let text = "kernel @k(%0: ptr<f16> a, %1: ptr<f16> b) {
  %2 = splat %0 : tile<16x16xptr<f16>>
  %3 = load %2 staged ring 0 stages 3 operand 0 pending 1 : tile<16x16xf16>
  %4 = load %2 staged ring 1 stages 3 operand 1 mma pending 1 slack : tile<16x16xf16>
  %5 = load %2 staged ring 2 stages 2 operand 1 swizzle128t pending 0 : tile<16x16xf16>
  %6 = const 0.0 : tile<16x16xf32>
  %7 = dot %3, %4, %6 precision ieee : tile<16x16xf32>
  %8 = load %2 staged ring 3 stages 3 operand 1 mmat pending 1 : tile<16x16xf16>
}
";
        let k = roundtrip(text);
        let Op::Load { stage: Some(s), .. } = &k.body.insts[6].op else {
            panic!()
        };
        assert_eq!(s.layout, StagedLayout::PaddedTransposed);
        let Op::Load { stage: Some(s), .. } = &k.body.insts[3].op else {
            panic!()
        };
        assert_eq!(
            s.layout,
            StagedLayout::Swizzled {
                bytes: 128,
                transposed: true
            }
        );
    }

    #[test]
    fn unused_value_numbers_are_placeholders() {
        let k = roundtrip("kernel @k() {\n  %5 = const 0 : i32\n}\n");
        assert_eq!(k.values.len(), 6);
        assert_eq!(k.values[5].ty, Type::scalar(DType::I32));
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("parsed: {text}"),
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Syntax);
                e.message
            }
        }
    }

    #[test]
    fn errors_name_line_and_column() {
        let m = error("kernel @k() {\n  %1 = add %0, %0 : i32\n}\n");
        assert!(m.starts_with("tile IR line 2, column 12:"), "{m}");
        assert!(m.contains("%0 is not defined"), "{m}");
        let m = error("kernel @k(%0: i32 n) {\n  %1 = frob %0 : i32\n}\n");
        assert!(m.starts_with("tile IR line 2, column 8:"), "{m}");
        let m = error("kernel @k(%0: tile<4xq32> n) {\n}\n");
        assert!(m.starts_with("tile IR line 1, column 22:"), "{m}");
        let m = error("kernel @k(%0: i32 n) {\n  %1 = neg %0 : i32\n");
        assert!(
            m.contains("line 3, column 1:") && m.contains("expected"),
            "{m}"
        );
    }

    #[test]
    fn hostile_inputs_give_errors() {
        for text in [
            "",
            "kernel",
            "kernel @k(%99999999999: i32 n) {\n}\n",
            "kernel @k(%4000000000: i32 n) {\n}\n",
            "kernel @k() {\n  %0 = const 1 : i32  // line 0\n}\n",
            "kernel @k() {\n  %0 = const 1 : i32  // line 99999999\n}\n",
            "kernel @k() {\n  %0 = const 1 : i32\n  %0 = const 1 : i32\n}\n",
            "kernel @k() {\n  %0 = const 1\n}\n",
            "kernel @k() {\n  const 1 : i32\n}\n",
            "kernel @k() {\n  %0, %1 = const 1 : i32, i32\n}\n",
            "kernel @k() {\n  %0 = const 1 : i32, i32\n}\n",
            "kernel @k() {\n  %0 = const nan(0x1) : f32\n}\n",
            "kernel @k() {\n  %0 = const 1x : f32\n}\n",
            "kernel @k() {\n  device_print \"abc\n}\n",
            "kernel @k() {\n  device_print \"a\\u{110000}\"\n}\n",
            "kernel @k() {\n  device_print \"é\\q\"\n}\n",
            "kernel @k() {\n  %0 = const 1 : tile<4x>\n}\n",
            "kernel @k() {\n}\nkernel @j() {\n}\n",
        ] {
            let _ = error(text);
        }
        let deep = format!(
            "kernel @k(%0: i1 c) {{\n{}",
            "if %0 : () {\n".repeat(MAX_DEPTH + 1)
        );
        assert!(error(&deep).contains("nested deeper"));
    }

    #[test]
    fn deepest_nesting_parses() {
        let mut text = String::from("kernel @k(%0: i1 c) {\n");
        for d in 1..=MAX_DEPTH {
            text += &format!("{}if %0 : () {{\n", "  ".repeat(d));
        }
        for d in (1..=MAX_DEPTH).rev() {
            let pad = "  ".repeat(d);
            text += &format!("{pad}  yield\n{pad}}} else {{\n{pad}  yield\n{pad}}}\n");
        }
        text += "}\n";
        // On a thread with half the default test stack: a margin for debug builds.
        let k = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || parse(&text).map(|k| (print(&k) == text, k)))
            .unwrap()
            .join()
            .unwrap();
        let (same, _) = k.unwrap_or_else(|e| panic!("{e}"));
        assert!(same);
    }

    #[test]
    fn truncated_text_never_panics() {
        let text = "kernel @k(%0: ptr<f32> x [div 4], %1: i32 n) {
  %2 = arange 0, 8 : tile<8xi32>  // line 3
  %3 = splat %0 : tile<8xptr<f32>>
  %4 = addptr %3, %2 : tile<8xptr<f32>>
  %5 = load %4 : tile<8xf32>
  %6, %7 = reduce %5, %2, axis 0 combine(%8, %9, %10, %11) {
    yield %8, %9
  } : f32, i32  // line 9
  device_print \"é: \" %6
}
";
        for (i, _) in text.char_indices() {
            let _ = parse(&text[..i]);
        }
        roundtrip(text);
    }
}
