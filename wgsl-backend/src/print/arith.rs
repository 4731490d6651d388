//! Arithmetic: constants, unary and binary operations, comparisons and casts, each
//! with the tile IR's semantics (division by zero, shift widths, NaN on the bits,
//! saturating conversions), and the wrapping of 8- and 16-bit integers and rounding of
//! emulated f16 and bf16 after each operation.

use super::Printer;
use tilewise_core::ir::{BinaryOp, CmpPred, Const, DType, UnaryOp};
use tilewise_core::{Diagnostic, Result};

impl Printer<'_> {
    /// Wraps or rounds a freshly computed value of `dt` held in its register type.
    pub(super) fn fix(&self, dt: DType, e: String) -> String {
        match dt {
            DType::I8 => format!("(({e}) << 24u) >> 24u"),
            DType::I16 => format!("(({e}) << 16u) >> 16u"),
            DType::U8 => format!("(({e}) & 0xffu)"),
            DType::U16 => format!("(({e}) & 0xffffu)"),
            DType::BF16 => format!("tw_bf16({e})"),
            DType::F16 if !self.f16 => format!("tw_f16({e})"),
            _ => e,
        }
    }

    fn is_f16_native(&self, dt: DType) -> bool {
        dt == DType::F16 && self.f16
    }

    pub(super) fn constant(&self, dt: DType, c: Const) -> String {
        let f = |x: f64| -> String {
            let x32 = x as f32;
            if x32.is_nan() {
                "bitcast<f32>(0x7fc00000u)".into()
            } else if x32.is_infinite() {
                if x32 > 0.0 {
                    "bitcast<f32>(0x7f800000u)".into()
                } else {
                    "bitcast<f32>(0xff800000u)".into()
                }
            } else {
                format!("bitcast<f32>({:#x}u)", x32.to_bits())
            }
        };
        match (dt, c) {
            (DType::I1, Const::Bool(b)) => b.to_string(),
            (DType::I1, Const::Int(i)) => (i != 0).to_string(),
            (DType::I1, Const::Float(x)) => (x != 0.0).to_string(),
            (d, c) if d.is_float() => {
                let x = match c {
                    Const::Float(x) => x,
                    Const::Int(i) => i as f64,
                    Const::Bool(b) => b as i64 as f64,
                };
                // Narrow constants are rounded once, from the exact value, as the
                // interpreter rounds them (not through f32).
                let x = match d {
                    DType::F16 => tilewise_core::ir::f16_from_f64(x).to_f64(),
                    DType::BF16 => tilewise_core::ir::bf16_from_f64(x).to_f64(),
                    _ => x,
                };
                let v = f(x);
                if self.is_f16_native(d) {
                    format!("f16({v})")
                } else {
                    v
                }
            }
            (d, c) => {
                let i = match c {
                    Const::Int(i) => i,
                    Const::Bool(b) => b as i64,
                    Const::Float(x) => x as i64,
                };
                if d.is_unsigned_int() {
                    format!("{}u", i as u32)
                } else {
                    format!("bitcast<i32>({:#x}u)", i as i32 as u32)
                }
            }
        }
    }

    /// `erf`, `tanh` and `pow` reached the printer: `lower::math` writes them out (and
    /// WGSL has no f64), so only a lowering bug gets here.
    fn not_lowered(&self, op: &str) -> Diagnostic {
        Diagnostic::internal(format!(
            "`{op}` reached the WGSL printer in `{}` (lower::math writes it out)",
            self.k.name
        ))
    }

    pub(super) fn unary(&self, op: UnaryOp, dt: DType, x: &str) -> Result<String> {
        let is_float = dt.is_float();
        let e = match op {
            UnaryOp::Neg if dt.is_unsigned_int() => format!("(0u - {x})"),
            UnaryOp::Neg => format!("(-{x})"),
            UnaryOp::Not if dt == DType::I1 => format!("(!{x})"),
            UnaryOp::Not => format!("(~{x})"),
            UnaryOp::Abs if dt.is_unsigned_int() => x.to_string(),
            UnaryOp::Abs => format!("abs({x})"),
            UnaryOp::Exp => format!("exp({x})"),
            UnaryOp::Exp2 => format!("exp2({x})"),
            UnaryOp::Log => format!("log({x})"),
            UnaryOp::Log2 => format!("log2({x})"),
            UnaryOp::Sqrt => format!("sqrt({x})"),
            UnaryOp::Rsqrt => format!("inverseSqrt({x})"),
            UnaryOp::Sin => format!("sin({x})"),
            UnaryOp::Cos => format!("cos({x})"),
            UnaryOp::Floor => format!("floor({x})"),
            UnaryOp::Ceil => format!("ceil({x})"),
            UnaryOp::Tanh | UnaryOp::Erf => return Err(self.not_lowered(op.name())),
        };
        Ok(if is_float || !matches!(op, UnaryOp::Not) {
            self.fix(dt, e)
        } else {
            e
        })
    }

    pub(super) fn binary(&self, op: BinaryOp, dt: DType, a: &str, b: &str) -> Result<String> {
        let signed = dt.is_signed_int() && dt != DType::I1;
        let e = match op {
            BinaryOp::Add => format!("({a} + {b})"),
            // `x - x` is folded to 0 by drivers that assume NaN and infinity away
            // (lavapipe): NaN unless `x` is finite.
            BinaryOp::Sub if dt.is_float() && a == b => {
                let t = self.rty(dt);
                format!("select({t}(0), {t}(bitcast<f32>(0x7fc00000u)), !tw_isfinite(f32({a})))")
            }
            BinaryOp::Sub => format!("({a} - {b})"),
            BinaryOp::Mul => format!("({a} * {b})"),
            BinaryOp::Div if dt.is_float() => format!("({a} / {b})"),
            BinaryOp::Div if signed => format!("tw_idiv({a}, {b})"),
            BinaryOp::Div => format!("tw_udiv({a}, {b})"),
            BinaryOp::Rem if dt.is_float() => format!("({a} % {b})"),
            BinaryOp::Rem if signed => format!("tw_irem({a}, {b})"),
            BinaryOp::Rem => format!("tw_urem({a}, {b})"),
            BinaryOp::And if dt == DType::I1 => format!("({a} && {b})"),
            BinaryOp::Or if dt == DType::I1 => format!("({a} || {b})"),
            BinaryOp::Xor if dt == DType::I1 => format!("({a} != {b})"),
            BinaryOp::And => format!("({a} & {b})"),
            BinaryOp::Or => format!("({a} | {b})"),
            BinaryOp::Xor => format!("({a} ^ {b})"),
            BinaryOp::Shl => {
                let w = dt.bits();
                let zero = if signed { "0" } else { "0u" };
                format!(
                    "select({a} << (bitcast<u32>({b}) % 32u), {zero}, bitcast<u32>({b}) >= {w}u)"
                )
            }
            BinaryOp::Shr if signed => {
                format!("select({a} >> (bitcast<u32>({b}) % 32u), {a} >> 31u, bitcast<u32>({b}) >= {}u)", dt.bits())
            }
            BinaryOp::Shr => format!("select({a} >> ({b} % 32u), 0u, {b} >= {}u)", dt.bits()),
            // The high half of the unsigned product (8 and 16 bits are held in 32).
            BinaryOp::MulHi if dt.bits() == 32 && signed => {
                format!("bitcast<i32>(tw_mulhi(bitcast<u32>({a}), bitcast<u32>({b})))")
            }
            BinaryOp::MulHi if dt.bits() == 32 => format!("tw_mulhi({a}, {b})"),
            BinaryOp::MulHi => {
                let m = (1u32 << dt.bits()) - 1;
                let t = self.rty(dt);
                format!(
                    "{t}(((bitcast<u32>({a}) & {m}u) * (bitcast<u32>({b}) & {m}u)) >> {}u)",
                    dt.bits()
                )
            }
            BinaryOp::Min if self.is_f16_native(dt) => format!("tw_minh({a}, {b})"),
            BinaryOp::Max if self.is_f16_native(dt) => format!("tw_maxh({a}, {b})"),
            BinaryOp::Min if dt.is_float() => format!("tw_minf({a}, {b})"),
            BinaryOp::Max if dt.is_float() => format!("tw_maxf({a}, {b})"),
            BinaryOp::Min if dt == DType::I1 => format!("({a} && {b})"),
            BinaryOp::Max if dt == DType::I1 => format!("({a} || {b})"),
            // Integers as a compare and a select, not min()/max(): NVIDIA's Vulkan
            // driver (580.159, H200) computed `max(-a, -b, ...)` without the negation, as
            // its PTX compiler does (found by the fuzzer).
            BinaryOp::Min | BinaryOp::Max => {
                let cmp = if op == BinaryOp::Min { "<" } else { ">" };
                format!("select({b}, {a}, {a} {cmp} {b})")
            }
            BinaryOp::Pow => return Err(self.not_lowered("pow")),
        };
        Ok(if dt == DType::I1 { e } else { self.fix(dt, e) })
    }

    pub(super) fn cmp(&self, p: CmpPred, dt: DType, a: &str, b: &str) -> String {
        if dt == DType::I1 && !matches!(p, CmpPred::Eq | CmpPred::Ne) {
            let (a, b) = (
                format!("select(0u, 1u, {a})"),
                format!("select(0u, 1u, {b})"),
            );
            return self.cmp(p, DType::U32, &a, &b);
        }
        let o = Self::cmp_op(p);
        if dt.is_float() {
            // WGSL lets a driver assume NaN away (NVIDIA's folds `x != x` to false):
            // test NaN on the bits, so every comparison follows IEEE.
            let nan = format!("{} || {}", self.isnan(dt, a), self.isnan(dt, b));
            return if p == CmpPred::Ne {
                format!("({nan} || {a} != {b})")
            } else {
                format!("(!({nan}) && {a} {o} {b})")
            };
        }
        format!("({a} {o} {b})")
    }

    /// A NaN test of `x` on its bits.
    fn isnan(&self, dt: DType, x: &str) -> String {
        if self.is_f16_native(dt) {
            format!("tw_isnanh({x})")
        } else {
            format!("tw_isnan({x})")
        }
    }

    fn cmp_op(p: CmpPred) -> &'static str {
        match p {
            CmpPred::Eq => "==",
            CmpPred::Ne => "!=",
            CmpPred::Lt => "<",
            CmpPred::Le => "<=",
            CmpPred::Gt => ">",
            CmpPred::Ge => ">=",
        }
    }

    pub(super) fn cast(&self, from: DType, to: DType, x: &str, bitcast: bool) -> Result<String> {
        if bitcast {
            return Ok(match (from.bits(), to.bits()) {
                (32, 32) => format!("bitcast<{}>({x})", self.rty(to)),
                (16, 16) | (8, 8) => {
                    // Through the raw bits.
                    let bits = self.packed_bits(from, x);
                    let mask = if from.bits() == 8 { "0xffu" } else { "0xffffu" };
                    let raw = format!("(({bits}) & {mask})");
                    match to {
                        DType::BF16 => format!("bitcast<f32>({raw} << 16u)"),
                        DType::F16 if self.f16 => format!("f16(unpack2x16float({raw}).x)"),
                        DType::F16 => format!("unpack2x16float({raw}).x"),
                        DType::I8 => format!("((bitcast<i32>({raw}) << 24u) >> 24u)"),
                        DType::I16 => format!("((bitcast<i32>({raw}) << 16u) >> 16u)"),
                        _ => raw,
                    }
                }
                _ => return Err(Diagnostic::internal(format!("bitcast {from} -> {to}"))),
            });
        }
        let t = self.rty(to);
        Ok(match (from.is_float(), to.is_float(), from, to) {
            (_, _, f, t2) if f == t2 => x.to_string(),
            (_, _, _, DType::I1) if from.is_float() => {
                let f = self.rty(from);
                format!("({x} != {f}(0) || {})", self.isnan(from, x))
            }
            (_, _, DType::I1, _) if to.is_float() => {
                self.fix(to, format!("select({t}(0), {t}(1), {x})"))
            }
            (_, _, DType::I1, _) => format!("select({t}(0), {t}(1), {x})"),
            (_, _, _, DType::I1) => format!("({x} != {t}(0))", t = self.rty(from)),
            (true, true, _, _) => {
                let widened = if self.is_f16_native(from) {
                    format!("f32({x})")
                } else {
                    x.to_string()
                };
                if self.is_f16_native(to) {
                    format!("tw_to_f16({widened})")
                } else {
                    self.fix(to, widened)
                }
            }
            (true, false, _, _) => {
                let w = if self.is_f16_native(from) {
                    format!("f32({x})")
                } else {
                    x.to_string()
                };
                let v = if to.is_unsigned_int() {
                    format!("tw_f2u({w})")
                } else {
                    format!("tw_f2i({w})")
                };
                // Saturate to narrow integer ranges too.
                match to {
                    DType::I8 => format!("clamp({v}, -128, 127)"),
                    DType::I16 => format!("clamp({v}, -32768, 32767)"),
                    DType::U8 => format!("min({v}, 255u)"),
                    DType::U16 => format!("min({v}, 65535u)"),
                    _ => v,
                }
            }
            (false, true, _, _) => self.fix(to, format!("{t}({x})")),
            (false, false, _, _) => self.fix(to, format!("bitcast<{t}>({x})")),
        })
    }
}
