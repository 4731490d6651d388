//! The text form of the tile IR.
//!
//! ```text
//! kernel @add(%0: ptr<f32> x_ptr, %1: i32 n [div 16]) {
//!   %2 = program_id 0 : i32
//!   %3 = arange 0, 1024 : tile<1024xi32>
//!   %4 = for %5 = %lo to %hi step %s iter(%6 = %init) : (tile<64x64xf32>) {
//!     yield %7
//!   }
//! }
//! ```
//! One instruction a line: results, the op name, its attributes, its operands, and
//! `:` with the result types. Line comments `// line N` give the source line of the
//! instruction's span (none for an instruction without a span).
//!
//! Every spelling is a keyword of the text form, never a Rust `Debug` rendering, and
//! the form is lossless up to spans and value names: [`super::parse`] reads it back
//! (print, parse, print is the identity). In particular:
//! - constants: `true` / `false`, integers in decimal (`u64` ones unsigned), floats in
//!   Rust's shortest round-trip spelling (`1.0`, `0.1`, `1e-7`), `inf`, `-inf`, `nan`
//!   (`-nan`, or `nan(0x<bits>)` for any other NaN, so that every f64 comes back);
//! - strings (`device_print` prefixes, `device_assert` messages) in double quotes with
//!   `\\`, `\"`, `\n`, `\r`, `\t`, `\0` and `\u{..}` (other control characters) escaped;
//! - `load ... boundary_check [0, 1] padding zero` (`none`, `zero`, `nan`), then the
//!   cache hints when given: `cache_modifier ".cg"`, `eviction_policy "evict_last"`,
//!   `volatile` (also on `store`); `device_print ... hex`;
//! - reduction combiners `add`, `mul`, `max`, `min`, `argmax`, `argmin`, or a
//!   `combine(%a, %b) { ... }` region.

use super::ops::{CacheHints, Combiner, Const, HintKind, Op, Padding};
use super::{Block, DType, Inst, Kernel, Value};
use std::fmt::Write;

/// Prints a kernel in the text form.
pub fn print(kernel: &Kernel) -> String {
    let mut p = Printer {
        k: kernel,
        out: String::new(),
    };
    let params: Vec<String> = kernel
        .params
        .iter()
        .map(|prm| {
            let div = if prm.divisibility > 1 {
                format!(" [div {}]", prm.divisibility)
            } else {
                String::new()
            };
            format!("{}: {} {}{}", prm.value, prm.ty, prm.name, div)
        })
        .collect();
    let _ = writeln!(p.out, "kernel @{}({}) {{", kernel.name, params.join(", "));
    p.block_body(&kernel.body, 1);
    p.out.push_str("}\n");
    p.out
}

struct Printer<'a> {
    k: &'a Kernel,
    out: String,
}

fn list(vals: &[Value]) -> String {
    vals.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The spelling of a constant (of a tile of `dtype`, `None` for pointers).
pub(crate) fn const_spelling(c: Const, dtype: Option<DType>) -> String {
    match c {
        Const::Bool(b) => b.to_string(),
        Const::Int(i) if dtype == Some(DType::U64) => (i as u64).to_string(),
        Const::Int(i) => i.to_string(),
        Const::Float(f) if f.is_infinite() && f > 0.0 => "inf".into(),
        Const::Float(f) if f.is_infinite() => "-inf".into(),
        Const::Float(f) if f.is_nan() => {
            if f.to_bits() == f64::NAN.to_bits() {
                "nan".into()
            } else if f.to_bits() == (-f64::NAN).to_bits() {
                "-nan".into()
            } else {
                format!("nan(0x{:016x})", f.to_bits())
            }
        }
        // Rust's shortest spelling that parses back to the same f64.
        Const::Float(f) => format!("{f:?}"),
    }
}

/// The keyword of a `padding_option`.
pub(crate) fn padding_name(p: Padding) -> &'static str {
    match p {
        Padding::None => "none",
        Padding::Zero => "zero",
        Padding::Nan => "nan",
    }
}

/// The keyword of a built-in combiner; `None` for a region.
pub(crate) fn combiner_name(c: &Combiner) -> Option<&'static str> {
    Some(match c {
        Combiner::Add => "add",
        Combiner::Mul => "mul",
        Combiner::Max => "max",
        Combiner::Min => "min",
        Combiner::ArgMax => "argmax",
        Combiner::ArgMin => "argmin",
        Combiner::Region(_) => return None,
    })
}

/// A string in double quotes: `\\`, `\"`, `\n`, `\r`, `\t` and `\0` escaped, other
/// control characters as `\u{..}`; everything else as it is.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn dims(d: &[u32]) -> String {
    format!(
        "[{}]",
        d.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

impl Printer<'_> {
    fn block_body(&mut self, b: &Block, depth: usize) {
        for inst in &b.insts {
            self.inst(inst, depth);
        }
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn types(&self, vals: &[Value]) -> String {
        vals.iter()
            .map(|v| self.k.ty(*v).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn nested(&mut self, header: &str, b: &Block, depth: usize) {
        let _ = writeln!(self.out, "{header} {{");
        self.block_body(b, depth + 1);
        self.indent(depth);
        self.out.push('}');
    }

    fn inst(&mut self, inst: &Inst, depth: usize) {
        self.indent(depth);
        if !inst.results.is_empty() {
            let _ = write!(self.out, "{} = ", list(&inst.results));
        }
        let name = inst.op.name();
        let ops = list(&inst.op.operands());
        match &inst.op {
            Op::Const(c) => {
                let _ = write!(
                    self.out,
                    "const {}",
                    const_spelling(*c, self.k.ty(inst.results[0]).dtype())
                );
            }
            Op::ProgramId { axis } | Op::NumPrograms { axis } => {
                let _ = write!(self.out, "{name} {axis}");
            }
            Op::Arange { start, end } => {
                let _ = write!(self.out, "arange {start}, {end}");
            }
            Op::ExpandDims { value, axis } => {
                let _ = write!(self.out, "expand_dims {value}, axis {axis}");
            }
            Op::Permute { value, perm } => {
                let _ = write!(self.out, "permute {value}, {}", dims(perm));
            }
            Op::Cmp { pred, lhs, rhs } => {
                let _ = write!(self.out, "cmp {} {lhs}, {rhs}", pred.name());
            }
            Op::MakeBlockPtr {
                base,
                shape,
                strides,
                offsets,
                order,
            } => {
                let _ = write!(
                    self.out,
                    "make_block_ptr {base}, shape ({}), strides ({}), offsets ({}), order {}",
                    list(shape),
                    list(strides),
                    list(offsets),
                    dims(order)
                );
            }
            Op::Load {
                ptr,
                mask,
                other,
                boundary_check,
                padding,
                hints,
                stage,
                tensor_box,
            } => {
                let _ = write!(self.out, "load {ptr}");
                if let Some(m) = mask {
                    let _ = write!(self.out, " mask {m}");
                }
                if let Some(o) = other {
                    let _ = write!(self.out, " other {o}");
                }
                if let Some(s) = stage {
                    let _ = write!(
                        self.out,
                        " staged ring {} stages {} operand {}{} pending {}{}",
                        s.ring,
                        s.stages,
                        s.operand,
                        s.layout.spelling(),
                        s.pending,
                        if s.slack { " slack" } else { "" }
                    );
                }
                if !boundary_check.is_empty() {
                    let _ = write!(self.out, " boundary_check {}", dims(boundary_check));
                }
                if !boundary_check.is_empty() || *padding != Padding::None {
                    let _ = write!(self.out, " padding {}", padding_name(*padding));
                }
                if let Some(b) = tensor_box {
                    let _ = write!(self.out, " box ({})", list(&b.parts));
                }
                self.cache_hints(hints);
            }
            Op::Store {
                ptr,
                value,
                mask,
                boundary_check,
                hints,
            } => {
                let _ = write!(self.out, "store {ptr}, {value}");
                if let Some(m) = mask {
                    let _ = write!(self.out, " mask {m}");
                }
                if !boundary_check.is_empty() {
                    let _ = write!(self.out, " boundary_check {}", dims(boundary_check));
                }
                self.cache_hints(hints);
            }
            Op::Atomic { op, .. } => {
                let _ = write!(self.out, "atomic {} {ops}", op.name());
            }
            Op::Dot { precision, .. } => {
                let _ = write!(self.out, "dot {ops} precision {}", precision.name());
            }
            Op::Reduce {
                operands,
                axis,
                combiner,
            }
            | Op::Scan {
                operands,
                axis,
                combiner,
                ..
            } => {
                let rev = matches!(&inst.op, Op::Scan { reverse: true, .. });
                let _ = write!(
                    self.out,
                    "{name} {}, axis {axis}{}",
                    list(operands),
                    if rev { " reverse" } else { "" }
                );
                match combiner {
                    Combiner::Region(b) => {
                        let header = format!(" combine({})", list(&b.args));
                        let tys = self.types(&inst.results);
                        self.nested(&header, b, depth);
                        let _ = write!(self.out, " : {tys}");
                        self.line_end(inst);
                        return;
                    }
                    other => {
                        let _ = write!(self.out, " {}", combiner_name(other).unwrap_or(""));
                    }
                }
            }
            Op::Hint { value, hint } => {
                let (k, d) = match hint {
                    HintKind::MultipleOf(d) => ("multiple_of", d),
                    HintKind::MaxContiguous(d) => ("max_contiguous", d),
                    HintKind::MaxConstancy(d) => ("max_constancy", d),
                };
                let _ = write!(self.out, "hint {k} {} {value}", dims(d));
            }
            Op::DevicePrint {
                prefix,
                values,
                hex,
            } => {
                let _ = write!(self.out, "device_print {}", quote(prefix));
                if !values.is_empty() {
                    let _ = write!(self.out, " {}", list(values));
                }
                if *hex {
                    self.out.push_str(" hex");
                }
            }
            Op::DeviceAssert { cond, message } => {
                let _ = write!(self.out, "device_assert {cond}, {}", quote(message));
            }
            Op::Barrier => {
                let _ = write!(self.out, "barrier");
            }
            Op::CheckBlockPtr {
                base,
                shape,
                strides,
            } => {
                let _ = write!(
                    self.out,
                    "check_block_ptr {base}, shape ({}), strides ({})",
                    list(shape),
                    list(strides)
                );
            }
            Op::For {
                lower,
                upper,
                step,
                init,
                body,
                num_stages,
                flatten,
            } => {
                let iter: Vec<String> = body.args[1..]
                    .iter()
                    .zip(init)
                    .map(|(a, i)| format!("{a} = {i}"))
                    .collect();
                let mut stages = num_stages
                    .map(|s| format!(" num_stages {s}"))
                    .unwrap_or_default();
                if let Some(f) = flatten {
                    stages += &format!(" flatten {f}");
                }
                let header = format!(
                    "for {} = {lower} to {upper} step {step} iter({}){stages} : ({})",
                    body.args[0],
                    iter.join(", "),
                    self.types(&inst.results)
                );
                self.nested(&header, body, depth);
                self.line_end(inst);
                return;
            }
            Op::If {
                cond,
                then_block,
                else_block,
            } => {
                let header = format!("if {cond} : ({})", self.types(&inst.results));
                self.nested(&header, then_block, depth);
                self.nested(" else", else_block, depth);
                self.line_end(inst);
                return;
            }
            Op::While {
                init,
                before,
                after,
            } => {
                let iter: Vec<String> = before
                    .args
                    .iter()
                    .zip(init)
                    .map(|(a, i)| format!("{a} = {i}"))
                    .collect();
                let header = format!(
                    "while iter({}) : ({})",
                    iter.join(", "),
                    self.types(&inst.results)
                );
                self.nested(&header, before, depth);
                let header = format!(" do({})", list(&after.args));
                self.nested(&header, after, depth);
                self.line_end(inst);
                return;
            }
            _ => {
                self.out.push_str(name);
                if !ops.is_empty() {
                    let _ = write!(self.out, " {ops}");
                }
            }
        }
        if !inst.results.is_empty() {
            let _ = write!(self.out, " : {}", self.types(&inst.results));
        }
        self.line_end(inst);
    }

    fn cache_hints(&mut self, hints: &CacheHints) {
        if let Some(c) = &hints.cache_modifier {
            let _ = write!(self.out, " cache_modifier {}", quote(c));
        }
        if let Some(e) = &hints.eviction_policy {
            let _ = write!(self.out, " eviction_policy {}", quote(e));
        }
        if hints.volatile {
            self.out.push_str(" volatile");
        }
    }

    fn line_end(&mut self, inst: &Inst) {
        if !inst.span.is_none() {
            let _ = write!(self.out, "  // line {}", self.k.line_of(inst.span));
        }
        self.out.push('\n');
    }
}
