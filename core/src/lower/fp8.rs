//! Pass: 8-bit floats become their codes (`u8`) and integer arithmetic.
//!
//! No GPU backend has fp8 arithmetic on every target (WGSL has none at all), and the
//! front end only lets fp8 values be stored, loaded, moved (`where`, broadcasts,
//! reshapes), compared, converted and fed to `dot` (as f16). So after block pointers
//! are lowered, every fp8 value becomes the `u8` holding its code, and the few ops that
//! look at the value are spelled in 32-bit integer and f32 arithmetic every backend
//! has:
//!
//! - conversion from fp8: the code's sign, exponent and mantissa placed into an f32
//!   (normal numbers), or the mantissa times the smallest subnormal (subnormals, exact
//!   in f32); E4M3's `S.1111.111` and E5M2's exponent 31 give NaN and infinities;
//! - conversion to fp8 (from f16, bf16 and f32, through f32, which holds them exactly):
//!   round to nearest, ties to even, on the f32 bit pattern (for normal results the
//!   carry of the rounding runs into the exponent by itself; subnormal results shift
//!   the mantissa with its implicit one), then saturation to the largest finite code
//!   (infinities included), the sign put back, every NaN to `0x7f`: exactly
//!   [`crate::ir::fp8::Format::encode`], which the interpreter uses;
//! - comparisons, `minimum` and `maximum`: on the converted f32 values (exact).
//!
//! Parameters that point to fp8 become pointers to `u8` (the same bytes).

use super::rewrite::{rewrite, Ctx, Hook};
use crate::diag::{Diagnostic, Result, Span};
use crate::ir::fp8::Format;
use crate::ir::ops::{BinaryOp, CmpPred, Const, Op};
use crate::ir::{DType, Elem, Inst, Kernel, Type, Value};

/// Rewrites every fp8 value of `kernel` into its code; a kernel without fp8 comes
/// back unchanged.
pub fn lower_fp8(kernel: &Kernel) -> Result<Kernel> {
    let mut any = false;
    kernel.walk(&mut |i| {
        any |= i.results.iter().any(|r| elem_fp8(kernel.ty(*r)).is_some());
    });
    any |= kernel.params.iter().any(|p| elem_fp8(&p.ty).is_some());
    if !any {
        return Ok(kernel.clone());
    }
    rewrite(kernel, &codes, &mut hook)
}

/// The fp8 dtype of a type's elements (data or pointee), if any.
fn elem_fp8(t: &Type) -> Option<DType> {
    match t {
        Type::Tile {
            elem: Elem::Data(d) | Elem::Ptr(d),
            ..
        } if d.is_fp8() => Some(*d),
        Type::BlockPtr { pointee, .. } if pointee.is_fp8() => Some(*pointee),
        _ => None,
    }
}

/// What a type becomes: fp8 elements as `u8` codes.
fn codes(t: &Type) -> Vec<Type> {
    vec![match t {
        Type::Tile {
            elem: Elem::Data(d),
            shape,
        } if d.is_fp8() => Type::Tile {
            elem: Elem::Data(DType::U8),
            shape: shape.clone(),
        },
        Type::Tile {
            elem: Elem::Ptr(d),
            shape,
        } if d.is_fp8() => Type::Tile {
            elem: Elem::Ptr(DType::U8),
            shape: shape.clone(),
        },
        Type::BlockPtr {
            pointee,
            block_shape,
        } if pointee.is_fp8() => Type::BlockPtr {
            pointee: DType::U8,
            block_shape: block_shape.clone(),
        },
        other => other.clone(),
    }]
}

fn dtype_of(ctx: &Ctx, v: Value) -> Option<DType> {
    ctx.old.ty(v).dtype()
}

fn hook(ctx: &mut Ctx, inst: &Inst) -> Result<Hook> {
    let span = inst.span;
    let result_fp8 = inst
        .results
        .first()
        .and_then(|r| dtype_of(ctx, *r))
        .and_then(Format::of);
    match &inst.op {
        Op::Const(c) if result_fp8.is_some() => {
            let f = result_fp8.unwrap();
            let x = match c {
                Const::Float(x) => *x,
                Const::Int(i) => *i as f64,
                Const::Bool(b) => *b as i64 as f64,
            };
            let shape = ctx.old.ty(inst.results[0]).shape().to_vec();
            let v = ctx.b.push1(
                Op::Const(Const::Int(f.encode(x) as i64)),
                Type::tile(DType::U8, shape),
                span,
            );
            ctx.set(inst.results[0], vec![v]);
            Ok(Hook::Done)
        }
        Op::Cast { value, bitcast } => {
            let from = dtype_of(ctx, *value);
            let to = dtype_of(ctx, inst.results[0]);
            let (Some(from), Some(to)) = (from, to) else {
                return Ok(Hook::Copy);
            };
            if !from.is_fp8() && !to.is_fp8() {
                return Ok(Hook::Copy);
            }
            let x = ctx.one(*value)?;
            let shape = ctx.old.ty(*value).shape().to_vec();
            let mut e = Emit {
                ctx,
                shape: &shape,
                span,
            };
            let out = if *bitcast {
                // Bits stay bits: fp8 codes are u8.
                let code = |d: DType| if d.is_fp8() { DType::U8 } else { d };
                e.cast(x, code(to), true)
            } else {
                let f = match Format::of(from) {
                    Some(f) => e.decode(x, f),
                    None => e.cast(x, DType::F32, false),
                };
                match Format::of(to) {
                    Some(t) => e.encode(f, t),
                    None => e.cast(f, to, false),
                }
            };
            ctx.set(inst.results[0], vec![out]);
            Ok(Hook::Done)
        }
        Op::Cmp { pred, lhs, rhs } if dtype_of(ctx, *lhs).is_some_and(DType::is_fp8) => {
            let f = Format::of(dtype_of(ctx, *lhs).unwrap()).unwrap();
            let (a, b) = (ctx.one(*lhs)?, ctx.one(*rhs)?);
            let shape = ctx.old.ty(inst.results[0]).shape().to_vec();
            let mut e = Emit {
                ctx,
                shape: &shape,
                span,
            };
            let (x, y) = (e.decode(a, f), e.decode(b, f));
            let c = e.cmp(*pred, x, y);
            ctx.set(inst.results[0], vec![c]);
            Ok(Hook::Done)
        }
        Op::Binary {
            op: op @ (BinaryOp::Min | BinaryOp::Max),
            lhs,
            rhs,
        } if result_fp8.is_some() => {
            let f = result_fp8.unwrap();
            let (a, b) = (ctx.one(*lhs)?, ctx.one(*rhs)?);
            let shape = ctx.old.ty(inst.results[0]).shape().to_vec();
            let mut e = Emit {
                ctx,
                shape: &shape,
                span,
            };
            let (x, y) = (e.decode(a, f), e.decode(b, f));
            let m = e.bin(*op, x, y, DType::F32);
            let code = e.encode(m, f);
            ctx.set(inst.results[0], vec![code]);
            Ok(Hook::Done)
        }
        Op::Binary { .. } | Op::Unary { .. } | Op::Reduce { .. } | Op::Scan { .. }
            if result_fp8.is_some() =>
        {
            Err(Diagnostic::internal(format!(
                "fp8 lowering: `{}` on fp8 values reached the lowering (the front end allows only storage, casts, comparisons, where, minimum/maximum and dot)",
                inst.op.name()
            )))
        }
        _ => Ok(Hook::Copy),
    }
}

/// Emits elementwise code over tiles of one shape.
struct Emit<'c, 'a, 's> {
    ctx: &'c mut Ctx<'a>,
    shape: &'s [u32],
    span: Span,
}

impl Emit<'_, '_, '_> {
    fn ty(&self, d: DType) -> Type {
        Type::tile(d, self.shape.to_vec())
    }

    fn konst(&mut self, d: DType, c: Const) -> Value {
        let t = self.ty(d);
        self.ctx.b.push1(Op::Const(c), t, self.span)
    }

    fn u(&mut self, x: u32) -> Value {
        self.konst(DType::U32, Const::Int(x as i64))
    }

    fn bin(&mut self, op: BinaryOp, a: Value, b: Value, d: DType) -> Value {
        let t = self.ty(d);
        self.ctx
            .b
            .push1(Op::Binary { op, lhs: a, rhs: b }, t, self.span)
    }

    /// An op on u32 values with a constant right operand.
    fn uk(&mut self, op: BinaryOp, a: Value, k: u32) -> Value {
        let k = self.u(k);
        self.bin(op, a, k, DType::U32)
    }

    fn cmp(&mut self, pred: CmpPred, a: Value, b: Value) -> Value {
        let t = self.ty(DType::I1);
        self.ctx.b.push1(
            Op::Cmp {
                pred,
                lhs: a,
                rhs: b,
            },
            t,
            self.span,
        )
    }

    fn cmpk(&mut self, pred: CmpPred, a: Value, k: u32) -> Value {
        let k = self.u(k);
        self.cmp(pred, a, k)
    }

    fn select(&mut self, c: Value, a: Value, b: Value, d: DType) -> Value {
        let t = self.ty(d);
        self.ctx.b.push1(
            Op::Select {
                cond: c,
                on_true: a,
                on_false: b,
            },
            t,
            self.span,
        )
    }

    fn cast(&mut self, x: Value, to: DType, bitcast: bool) -> Value {
        if self.ctx.b.ty(x).dtype() == Some(to) {
            return x;
        }
        let t = self.ty(to);
        self.ctx
            .b
            .push1(Op::Cast { value: x, bitcast }, t, self.span)
    }

    /// The f32 value of fp8 codes `c` (u8).
    fn decode(&mut self, c: Value, f: Format) -> Value {
        let m_bits = f.man_bits;
        let top = (1u32 << f.exp_bits) - 1;
        let c = self.cast(c, DType::U32, false);
        let sign = self.uk(BinaryOp::And, c, 0x80);
        let sign = self.uk(BinaryOp::Shl, sign, 24);
        let e = self.uk(BinaryOp::Shr, c, m_bits);
        let e = self.uk(BinaryOp::And, e, top);
        let m = self.uk(BinaryOp::And, c, (1 << m_bits) - 1);
        // Normal: exponent rebiased, mantissa moved to the top of f32's.
        let en = self.uk(BinaryOp::Add, e, (127 - f.bias) as u32);
        let en = self.uk(BinaryOp::Shl, en, 23);
        let mn = self.uk(BinaryOp::Shl, m, 23 - m_bits);
        let normal = self.bin(BinaryOp::Or, en, mn, DType::U32);
        // Subnormal: m times the smallest subnormal, exact in f32.
        let mf = self.cast(m, DType::F32, false);
        let unit = 2f64.powi(1 - f.bias - m_bits as i32);
        let unit = self.konst(DType::F32, Const::Float(unit));
        let sub = self.bin(BinaryOp::Mul, mf, unit, DType::F32);
        let sub = self.cast(sub, DType::U32, true);
        let is_sub = self.cmpk(CmpPred::Eq, e, 0);
        let mag = self.select(is_sub, sub, normal, DType::U32);
        let nan = self.u(0x7fc0_0000);
        let mag = if f.ieee_specials {
            let special = self.cmpk(CmpPred::Eq, e, top);
            let zero_m = self.cmpk(CmpPred::Eq, m, 0);
            let inf = self.u(0x7f80_0000);
            let s = self.select(zero_m, inf, nan, DType::U32);
            self.select(special, s, mag, DType::U32)
        } else {
            let low = self.uk(BinaryOp::And, c, 0x7f);
            let is_nan = self.cmpk(CmpPred::Eq, low, 0x7f);
            self.select(is_nan, nan, mag, DType::U32)
        };
        let bits = self.bin(BinaryOp::Or, mag, sign, DType::U32);
        self.cast(bits, DType::F32, true)
    }

    /// The fp8 codes (u8) of f32 values `x`: round to nearest even, saturate, sign
    /// kept; every NaN to `0x7f`.
    fn encode(&mut self, x: Value, f: Format) -> Value {
        let m_bits = f.man_bits;
        let bias = f.bias as u32;
        let b = self.cast(x, DType::U32, true);
        let sign = self.uk(BinaryOp::Shr, b, 24);
        let sign = self.uk(BinaryOp::And, sign, 0x80);
        let a = self.uk(BinaryOp::And, b, 0x7fff_ffff);
        let e8 = self.uk(BinaryOp::Shr, a, 23);
        // Normal results: round the f32 pattern at the fp8 mantissa's last bit.
        let sh = 23 - m_bits;
        let odd = self.uk(BinaryOp::Shr, a, sh);
        let odd = self.uk(BinaryOp::And, odd, 1);
        let r = self.uk(BinaryOp::Add, a, (1 << (sh - 1)) - 1);
        let r = self.bin(BinaryOp::Add, r, odd, DType::U32);
        let r = self.uk(BinaryOp::Shr, r, sh);
        let normal = self.uk(BinaryOp::Sub, r, (127 - bias) << m_bits);
        // Subnormal results: the mantissa with its implicit one, shifted to units of
        // the smallest subnormal (at most 31: nothing of a 24-bit mantissa survives).
        let mant = self.uk(BinaryOp::And, a, 0x7f_ffff);
        let mant = self.uk(BinaryOp::Or, mant, 0x80_0000);
        let k = self.u(sh + 127 + 1 - bias);
        let s = self.bin(BinaryOp::Sub, k, e8, DType::U32);
        let s = self.uk(BinaryOp::Min, s, 31);
        let one = self.u(1);
        let s1 = self.uk(BinaryOp::Sub, s, 1);
        let half = self.bin(BinaryOp::Shl, one, s1, DType::U32);
        let half = self.uk(BinaryOp::Sub, half, 1);
        let odd = self.bin(BinaryOp::Shr, mant, s, DType::U32);
        let odd = self.uk(BinaryOp::And, odd, 1);
        let t = self.bin(BinaryOp::Add, mant, half, DType::U32);
        let t = self.bin(BinaryOp::Add, t, odd, DType::U32);
        let sub = self.bin(BinaryOp::Shr, t, s, DType::U32);
        let is_normal = self.cmpk(CmpPred::Ge, e8, 127 + 1 - bias);
        let code = self.select(is_normal, normal, sub, DType::U32);
        let code = self.uk(BinaryOp::Min, code, f.max_code() as u32);
        let code = self.bin(BinaryOp::Or, code, sign, DType::U32);
        let is_nan = self.cmpk(CmpPred::Gt, a, 0x7f80_0000);
        let nan = self.u(0x7f);
        let code = self.select(is_nan, nan, code, DType::U32);
        self.cast(code, DType::U8, false)
    }
}
