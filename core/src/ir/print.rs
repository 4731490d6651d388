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
//! `:` with the result types. Line comments `// line N` give the source line.

use super::ops::{fmt_const, Combiner, HintKind, Op};
use super::{Block, Inst, Kernel, Value};
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
                    fmt_const(*c, self.k.ty(inst.results[0]).dtype())
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
                stage,
                ..
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
                    let _ = write!(
                        self.out,
                        " boundary_check {} padding {padding:?}",
                        dims(boundary_check)
                    );
                }
            }
            Op::Store {
                ptr,
                value,
                mask,
                boundary_check,
                ..
            } => {
                let _ = write!(self.out, "store {ptr}, {value}");
                if let Some(m) = mask {
                    let _ = write!(self.out, " mask {m}");
                }
                if !boundary_check.is_empty() {
                    let _ = write!(self.out, " boundary_check {}", dims(boundary_check));
                }
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
                        let _ = writeln!(self.out, " : {tys}");
                        return;
                    }
                    other => {
                        let _ = write!(self.out, " {}", format!("{other:?}").to_lowercase());
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
            Op::DevicePrint { prefix, values, .. } => {
                let _ = write!(self.out, "device_print {prefix:?} {}", list(values));
            }
            Op::DeviceAssert { cond, message } => {
                let _ = write!(self.out, "device_assert {cond}, {message:?}");
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
                    "check_block_ptr {base}, shape {}, strides {}",
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
            } => {
                let iter: Vec<String> = body.args[1..]
                    .iter()
                    .zip(init)
                    .map(|(a, i)| format!("{a} = {i}"))
                    .collect();
                let stages = num_stages
                    .map(|s| format!(" num_stages {s}"))
                    .unwrap_or_default();
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
                let _ = write!(self.out, "{name} {ops}");
            }
        }
        if !inst.results.is_empty() {
            let _ = write!(self.out, " : {}", self.types(&inst.results));
        }
        self.line_end(inst);
    }

    fn line_end(&mut self, inst: &Inst) {
        if !inst.span.is_none() {
            let _ = write!(self.out, "  // line {}", self.k.line_of(inst.span));
        }
        self.out.push('\n');
    }
}
