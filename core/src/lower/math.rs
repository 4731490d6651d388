//! Thread IR pass: the math the targets have no instruction for, written once in
//! operations every target has, so that both printers emit the same approximations and
//! the simulator checks them.
//!
//! After this pass (the verifier checks it, `thread_ir::verify`):
//!
//! - **Narrow floats** (`f16`, `bf16`) are never computed in: each arithmetic statement
//!   on them (unary, binary, `fma`) becomes casts of its operands to f32, the statement
//!   in f32, and a cast of the result back, which rounds to nearest even once per
//!   operation as the interpreter does. The exception is f16 on a target that computes
//!   it natively ([`ExpandOptions::native_f16`]: WGSL with `SHADER_F16`), whose basic
//!   arithmetic stays f16; the functions below are still computed in f32 there.
//! - **`erf`**: a Taylor series below 1, Abramowitz-Stegun 7.1.26 above.
//! - **`tanh`**: an odd Taylor series below 0.55, `1 - 2 / (2^(2|x| log2 e) + 1)` with
//!   the sign of `x` above (no target's own `tanh` is used: WGSL's may overflow to NaN
//!   for large arguments on some drivers, PTX has only a low-precision one).
//! - **`pow(a, b)`**: `2^(b log2 |a|)`, negated for a negative base and an odd integer
//!   exponent, NaN for a negative base and a non-integer exponent, 1 for `b == 0`
//!   (WGSL's `pow` is undefined for negative bases).
//! - **`sin` / `cos`**: the argument reduced to one period around 0,
//!   `x - k 2pi` with `k` the integer nearest `x / 2pi` and `2pi` split in two parts
//!   so that the product is nearly exact; the remaining `sin` / `cos` statements take
//!   arguments within about `[-pi, pi]`, where the targets' own (PTX `sin.approx`)
//!   are accurate.
//! - **`exp` / `log`** on targets without them ([`ExpandOptions::native_exp_log`] off:
//!   PTX has only `ex2` and `lg2`): `2^(x log2 e)` and `log2(x) ln 2`.
//!
//! f64 statements are left alone: no target computes these functions in f64, and the
//! printers reject them with their own diagnostic.

use super::expand::ExpandOptions;
use crate::ir::{BinaryOp, CmpPred, Const, DType, UnaryOp};
use crate::thread_ir::{Expr, Reg, RegTy, Stmt, ThreadKernel};

/// Rewrites `k` as the module documentation says, for a target with `opt`.
pub fn lower_math(k: &mut ThreadKernel, opt: &ExpandOptions) {
    let body = std::mem::take(&mut k.body);
    let mut pass = MathLowering {
        regs: &mut k.regs,
        opt,
    };
    k.body = pass.block(body);
}

/// Whether a statement computing `expr` into a `dtype` register is arithmetic that the
/// pass widens to f32 on a target with `opt` (see the module documentation).
pub fn computes_narrow_float(dtype: DType, expr: &Expr, opt: &ExpandOptions) -> bool {
    let arithmetic = matches!(expr, Expr::Unary(..) | Expr::Binary(..) | Expr::Fma(..));
    let native = dtype == DType::F16 && opt.native_f16 && !needs_expansion(expr);
    arithmetic && matches!(dtype, DType::F16 | DType::BF16) && !native
}

/// Whether `expr` (on floats) is one of the functions this pass writes out.
fn needs_expansion(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Unary(
            UnaryOp::Erf | UnaryOp::Tanh | UnaryOp::Sin | UnaryOp::Cos,
            _
        ) | Expr::Binary(BinaryOp::Pow, _, _)
    )
}

struct MathLowering<'a> {
    regs: &'a mut Vec<RegTy>,
    opt: &'a ExpandOptions,
}

impl MathLowering<'_> {
    fn block(&mut self, body: Vec<Stmt>) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(body.len());
        for mut s in body {
            for b in s.bodies_mut() {
                let inner = std::mem::take(b);
                *b = self.block(inner);
            }
            match s {
                Stmt::Assign { dst, expr } => self.assign(dst, expr, &mut out),
                other => out.push(other),
            }
        }
        out
    }

    fn assign(&mut self, dst: Reg, expr: Expr, out: &mut Vec<Stmt>) {
        let ty = self.regs[dst.0 as usize];
        if ty.lanes != 1 {
            out.push(Stmt::Assign { dst, expr });
            return;
        }
        if computes_narrow_float(ty.dtype, &expr, self.opt) {
            self.widened(dst, expr, out);
            return;
        }
        let mut e = Emitter {
            regs: self.regs,
            out,
        };
        match (ty.dtype, expr) {
            (DType::F32, Expr::Unary(UnaryOp::Erf, x)) => {
                let r = e.erf(x);
                e.copy(dst, r);
            }
            (DType::F32, Expr::Unary(UnaryOp::Tanh, x)) => {
                let r = e.tanh(x);
                e.copy(dst, r);
            }
            (DType::F32, Expr::Unary(op @ (UnaryOp::Sin | UnaryOp::Cos), x)) => {
                let y = e.reduce_period(x);
                e.out.push(Stmt::Assign {
                    dst,
                    expr: Expr::Unary(op, y),
                });
            }
            (DType::F32, Expr::Unary(UnaryOp::Exp, x)) if !self.opt.native_exp_log => {
                let log2e = e.c(std::f32::consts::LOG2_E);
                let t = e.bin(BinaryOp::Mul, x, log2e);
                e.out.push(Stmt::Assign {
                    dst,
                    expr: Expr::Unary(UnaryOp::Exp2, t),
                });
            }
            (DType::F32, Expr::Unary(UnaryOp::Log, x)) if !self.opt.native_exp_log => {
                let l = e.un(UnaryOp::Log2, x);
                let ln2 = e.c(std::f32::consts::LN_2);
                e.out.push(Stmt::Assign {
                    dst,
                    expr: Expr::Binary(BinaryOp::Mul, l, ln2),
                });
            }
            (DType::F32, Expr::Binary(BinaryOp::Pow, a, b)) => {
                let r = e.pow(a, b);
                e.copy(dst, r);
            }
            (_, expr) => e.out.push(Stmt::Assign { dst, expr }),
        }
    }

    /// `dst = expr` on a narrow float: the operands cast to f32, `expr` computed there
    /// (and expanded), the result cast back (rounded).
    fn widened(&mut self, dst: Reg, expr: Expr, out: &mut Vec<Stmt>) {
        let widen = |r: Reg, regs: &mut Vec<RegTy>, out: &mut Vec<Stmt>| {
            let w = new_reg(regs, DType::F32);
            out.push(Stmt::Assign {
                dst: w,
                expr: Expr::Cast {
                    value: r,
                    bitcast: false,
                },
            });
            w
        };
        let wide = match expr {
            Expr::Unary(op, x) => Expr::Unary(op, widen(x, self.regs, out)),
            Expr::Binary(op, a, b) => {
                let a = widen(a, self.regs, out);
                let b = if b == a { a } else { widen(b, self.regs, out) };
                Expr::Binary(op, a, b)
            }
            Expr::Fma(a, b, c) => Expr::Fma(
                widen(a, self.regs, out),
                widen(b, self.regs, out),
                widen(c, self.regs, out),
            ),
            other => unreachable!("computes_narrow_float admits only arithmetic: {other:?}"),
        };
        let t = new_reg(self.regs, DType::F32);
        self.assign(t, wide, out);
        out.push(Stmt::Assign {
            dst,
            expr: Expr::Cast {
                value: t,
                bitcast: false,
            },
        });
    }
}

fn new_reg(regs: &mut Vec<RegTy>, dtype: DType) -> Reg {
    regs.push(RegTy::scalar(dtype));
    Reg(regs.len() as u32 - 1)
}

/// Appends f32 statements to `out`, each into a fresh register.
struct Emitter<'a> {
    regs: &'a mut Vec<RegTy>,
    out: &'a mut Vec<Stmt>,
}

impl Emitter<'_> {
    fn push(&mut self, dtype: DType, expr: Expr) -> Reg {
        let dst = new_reg(self.regs, dtype);
        self.out.push(Stmt::Assign { dst, expr });
        dst
    }

    fn copy(&mut self, dst: Reg, src: Reg) {
        self.out.push(Stmt::Assign {
            dst,
            expr: Expr::Copy(src),
        });
    }

    /// An f32 constant (`v` exactly, as an f32).
    fn c(&mut self, v: f32) -> Reg {
        self.push(DType::F32, Expr::Const(Const::Float(v as f64)))
    }

    fn un(&mut self, op: UnaryOp, x: Reg) -> Reg {
        self.push(DType::F32, Expr::Unary(op, x))
    }

    fn bin(&mut self, op: BinaryOp, a: Reg, b: Reg) -> Reg {
        self.push(DType::F32, Expr::Binary(op, a, b))
    }

    fn fma(&mut self, a: Reg, b: Reg, c: Reg) -> Reg {
        self.push(DType::F32, Expr::Fma(a, b, c))
    }

    fn cmp(&mut self, pred: CmpPred, a: Reg, b: Reg) -> Reg {
        self.push(DType::I1, Expr::Cmp(pred, a, b))
    }

    fn and(&mut self, a: Reg, b: Reg) -> Reg {
        self.push(DType::I1, Expr::Binary(BinaryOp::And, a, b))
    }

    fn select(&mut self, cond: Reg, on_true: Reg, on_false: Reg) -> Reg {
        self.push(
            DType::F32,
            Expr::Select {
                cond,
                on_true,
                on_false,
            },
        )
    }

    /// `coeffs[0] z^(n-1) + ... + coeffs[n-1]` by Horner's rule in fused multiply-adds.
    fn horner(&mut self, z: Reg, coeffs: &[f64]) -> Reg {
        let mut s = self.c(coeffs[0] as f32);
        for &k in &coeffs[1..] {
            let k = self.c(k as f32);
            s = self.fma(s, z, k);
        }
        s
    }

    /// `-v` where `cond`, else `v`.
    fn negate_where(&mut self, cond: Reg, v: Reg) -> Reg {
        let n = self.un(UnaryOp::Neg, v);
        self.select(cond, n, v)
    }

    /// `erf(x)`: a Taylor series below 1, Abramowitz-Stegun 7.1.26 above.
    fn erf(&mut self, x: Reg) -> Reg {
        let a = self.un(UnaryOp::Abs, x);
        let z = self.bin(BinaryOp::Mul, x, x);
        // Series: x 2/sqrt(pi) sum (-1)^n z^n / (n! (2n+1)), Horner in z.
        let series = self.horner(
            z,
            &[
                1.0 / 76204800.0,
                -1.0 / 6894720.0,
                1.0 / 685440.0,
                -1.0 / 75600.0,
                1.0 / 9360.0,
                -1.0 / 1320.0,
                1.0 / 216.0,
                -1.0 / 42.0,
                1.0 / 10.0,
                -1.0 / 3.0,
                1.0,
            ],
        );
        let s = self.bin(BinaryOp::Mul, series, x);
        let two_over_sqrt_pi = self.c(std::f32::consts::FRAC_2_SQRT_PI);
        let small_value = self.bin(BinaryOp::Mul, s, two_over_sqrt_pi);
        // Tail: 1 - poly(t) exp(-a^2), t = 1 / (1 + p a).
        let (p, one) = (self.c(0.3275911), self.c(1.0));
        let denominator = self.fma(a, p, one);
        let t = self.bin(BinaryOp::Div, one, denominator);
        let poly = self.horner(
            t,
            &[
                1.061405429,
                -1.453152027,
                1.421413741,
                -0.284496736,
                0.254829592,
            ],
        );
        let poly = self.bin(BinaryOp::Mul, poly, t);
        let a2 = self.bin(BinaryOp::Mul, a, a);
        let minus_log2e = self.c(-std::f32::consts::LOG2_E);
        let exponent = self.bin(BinaryOp::Mul, a2, minus_log2e);
        let decay = self.un(UnaryOp::Exp2, exponent);
        let minus_poly = self.un(UnaryOp::Neg, poly);
        let tail = self.fma(minus_poly, decay, one);
        let zero = self.c(0.0);
        let negative = self.cmp(CmpPred::Lt, x, zero);
        let large_value = self.negate_where(negative, tail);
        let small = self.cmp(CmpPred::Lt, a, one);
        self.select(small, small_value, large_value)
    }

    /// `tanh(x)`: an odd Taylor series below 0.55, `1 - 2 / (e^(2|x|) + 1)` with the
    /// sign of `x` above (saturating to 1 for large `|x|`).
    fn tanh(&mut self, x: Reg) -> Reg {
        let a = self.un(UnaryOp::Abs, x);
        let z = self.bin(BinaryOp::Mul, x, x);
        // tanh(x) = x (1 - z/3 + 2z^2/15 - 17z^3/315 + 62z^4/2835 - 1382z^5/155925
        //            + 21844z^6/6081075 - 929569z^7/638512875 + ...), Horner in z.
        let series = self.horner(
            z,
            &[
                -929569.0 / 638512875.0,
                21844.0 / 6081075.0,
                -1382.0 / 155925.0,
                62.0 / 2835.0,
                -17.0 / 315.0,
                2.0 / 15.0,
                -1.0 / 3.0,
                1.0,
            ],
        );
        let small_value = self.bin(BinaryOp::Mul, series, x);
        let two_log2e = self.c(2.0 * std::f32::consts::LOG2_E);
        let exponent = self.bin(BinaryOp::Mul, a, two_log2e);
        let e2a = self.un(UnaryOp::Exp2, exponent);
        let one = self.c(1.0);
        let denominator = self.bin(BinaryOp::Add, e2a, one);
        let inverse = self.bin(BinaryOp::Div, one, denominator);
        let minus_two = self.c(-2.0);
        let magnitude = self.fma(inverse, minus_two, one);
        let zero = self.c(0.0);
        let negative = self.cmp(CmpPred::Lt, x, zero);
        let large_value = self.negate_where(negative, magnitude);
        let bound = self.c(0.55);
        let small = self.cmp(CmpPred::Lt, a, bound);
        self.select(small, small_value, large_value)
    }

    /// `pow(a, b)`: `2^(b log2 |a|)`, negated for a negative base and an odd integer
    /// exponent, NaN for a negative base and a non-integer exponent, 1 for `b == 0`.
    fn pow(&mut self, a: Reg, b: Reg) -> Reg {
        let magnitude = self.un(UnaryOp::Abs, a);
        let log = self.un(UnaryOp::Log2, magnitude);
        let exponent = self.bin(BinaryOp::Mul, log, b);
        let power = self.un(UnaryOp::Exp2, exponent);
        let zero = self.c(0.0);
        let negative_base = self.cmp(CmpPred::Lt, a, zero);
        let b_floor = self.un(UnaryOp::Floor, b);
        let integer = self.cmp(CmpPred::Eq, b_floor, b);
        // Odd: b / 2 is not an integer (every float above 2^24 is even).
        let half = self.c(0.5);
        let b_half = self.bin(BinaryOp::Mul, b, half);
        let half_floor = self.un(UnaryOp::Floor, b_half);
        let odd = self.cmp(CmpPred::Ne, half_floor, b_half);
        let odd_integer = self.and(odd, integer);
        let flips = self.and(odd_integer, negative_base);
        let signed = self.negate_where(flips, power);
        let fraction = self.push(DType::I1, Expr::Unary(UnaryOp::Not, integer));
        let undefined = self.and(negative_base, fraction);
        let nan = self.c(f32::NAN);
        let defined = self.select(undefined, nan, signed);
        let zero_exponent = self.cmp(CmpPred::Eq, b, zero);
        let one = self.c(1.0);
        self.select(zero_exponent, one, defined)
    }

    /// `x - k 2pi` with `k` the integer nearest `x / 2pi`: within about `[-pi, pi]`.
    fn reduce_period(&mut self, x: Reg) -> Reg {
        let inv_two_pi = self.c(1.0 / std::f32::consts::TAU);
        let turns = self.bin(BinaryOp::Mul, x, inv_two_pi);
        // Nearest integer: floor(turns + 1/2); from 2^23 on every f32 is an integer
        // (and adding 1/2 would round).
        let half = self.c(0.5);
        let shifted = self.bin(BinaryOp::Add, turns, half);
        let nearest = self.un(UnaryOp::Floor, shifted);
        let magnitude = self.un(UnaryOp::Abs, turns);
        let big = self.c(8388608.0);
        let integral = self.cmp(CmpPred::Ge, magnitude, big);
        let k = self.select(integral, turns, nearest);
        let minus_k = self.un(UnaryOp::Neg, k);
        // 2pi = TAU_HI + TAU_LO, TAU_HI the f32 nearest 2pi.
        let tau_hi = self.c(std::f32::consts::TAU);
        let tau_lo = self.c((std::f64::consts::TAU - std::f32::consts::TAU as f64) as f32);
        let y = self.fma(minus_k, tau_hi, x);
        self.fma(minus_k, tau_lo, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::arith;
    use crate::interp::value::Data;

    /// Lowers `dst = expr` on registers of `ty` (operands `r0..r{n}` holding `inputs`)
    /// with `opt`, then evaluates the statements with the simulator's arithmetic.
    fn eval(expr: Expr, ty: DType, inputs: &[f64], opt: &ExpandOptions) -> (f64, usize) {
        let mut regs: Vec<RegTy> = inputs.iter().map(|_| RegTy::scalar(ty)).collect();
        let dst = new_reg(&mut regs, ty);
        let mut k = ThreadKernel {
            name: "t".into(),
            params: vec![],
            threads: 1,
            shared: vec![],
            regs,
            frags: vec![],
            body: vec![Stmt::Assign { dst, expr }],
            notes: vec![],
            source: None,
            checks: None,
        };
        lower_math(&mut k, opt);
        let mut vals: Vec<Option<Data>> = vec![None; k.regs.len()];
        for (i, x) in inputs.iter().enumerate() {
            vals[i] = Some(Data::F(vec![*x]));
        }
        let dt = |r: &Reg| k.regs[r.0 as usize].dtype;
        for s in &k.body {
            let Stmt::Assign { dst, expr } = s else {
                panic!("the pass wrote a statement that is not an assignment: {s:?}")
            };
            let v = |r: &Reg| vals[r.0 as usize].clone().expect("read before assigned");
            let d = dt(dst);
            let out = match expr {
                Expr::Const(Const::Float(x)) => Data::F(vec![crate::interp::value::round1(d, *x)]),
                Expr::Copy(r) => v(r),
                Expr::Unary(op, r) => arith::unary(*op, d, &v(r)).unwrap(),
                Expr::Binary(op, a, b) => arith::binary(*op, dt(a), &v(a), &v(b)).unwrap(),
                Expr::Cmp(p, a, b) => arith::cmp(*p, dt(a), &v(a), &v(b)).unwrap(),
                Expr::Fma(a, b, c) => arith::fma(d, &v(a), &v(b), &v(c)).unwrap(),
                Expr::Cast { value, bitcast } => {
                    arith::cast(dt(value), d, &v(value), *bitcast).unwrap()
                }
                Expr::Select {
                    cond,
                    on_true,
                    on_false,
                } => {
                    let Data::I(c) = v(cond) else { panic!() };
                    match (v(on_true), v(on_false)) {
                        (Data::F(a), Data::F(b)) => Data::F(arith::select(&c, &a, &b)),
                        (Data::I(a), Data::I(b)) => Data::I(arith::select(&c, &a, &b)),
                        _ => panic!("select of mixed representations"),
                    }
                }
                other => panic!("unexpected expression {other:?}"),
            };
            vals[dst.0 as usize] = Some(out);
        }
        let Some(Data::F(r)) = &vals[dst.0 as usize] else {
            panic!("no float result")
        };
        (r[0], k.body.len())
    }

    fn ptx() -> ExpandOptions {
        ExpandOptions::ptx(4)
    }

    /// Edge values and a spread of random ones (a fixed-seed xorshift).
    fn samples(scale: f64) -> Vec<f64> {
        let mut v = vec![
            0.0, -0.0, 0.25, -0.5, 0.54, 0.56, 0.99, 1.0, 1.01, -1.5, 3.0, 9.0,
        ];
        let mut s = 0x9e3779b97f4a7c15u64;
        for _ in 0..2000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            v.push(((u * 2.0 - 1.0) * scale) as f32 as f64);
        }
        v
    }

    fn unary(op: UnaryOp, x: f64) -> f64 {
        eval(Expr::Unary(op, Reg(0)), DType::F32, &[x], &ptx()).0
    }

    #[test]
    fn erf_tanh_within_f32_error() {
        for x in samples(6.0) {
            let e = unary(UnaryOp::Erf, x);
            assert!((e - arith::erf(x)).abs() <= 2e-6, "erf({x}) = {e}");
            let t = unary(UnaryOp::Tanh, x);
            assert!(
                (t - x.tanh()).abs() <= 2e-6 * x.tanh().abs().max(1e-30) + 1e-7,
                "tanh({x}) = {t}"
            );
        }
        for (x, e, t) in [
            (f64::INFINITY, 1.0, 1.0),
            (f64::NEG_INFINITY, -1.0, -1.0),
            (100.0, 1.0, 1.0),
            (-100.0, -1.0, -1.0),
        ] {
            assert_eq!(unary(UnaryOp::Erf, x), e);
            assert_eq!(unary(UnaryOp::Tanh, x), t);
        }
        assert!(unary(UnaryOp::Tanh, -0.0).is_sign_negative());
        assert!(unary(UnaryOp::Erf, f64::NAN).is_nan() && unary(UnaryOp::Tanh, f64::NAN).is_nan());
    }

    #[test]
    fn sin_cos_reduced_to_one_period() {
        for x in samples(1000.0).into_iter().chain(samples(3.0)) {
            for (op, f) in [
                (UnaryOp::Sin, f64::sin as fn(f64) -> f64),
                (UnaryOp::Cos, f64::cos),
            ] {
                let y = unary(op, x);
                assert!((y - f(x)).abs() <= 1e-4, "{op:?}({x}) = {y}, not {}", f(x));
            }
        }
        // Far from 0 the reduction stays within a period (f32 cannot do better).
        for x in samples(1e6) {
            let want = (x as f32 as f64).sin();
            let y = unary(UnaryOp::Sin, x);
            assert!((y - want).abs() <= 0.1, "sin({x}) = {y}, not {want}");
        }
    }

    #[test]
    fn pow_signs_and_special_cases() {
        let pow = |a: f64, b: f64| {
            eval(
                Expr::Binary(BinaryOp::Pow, Reg(0), Reg(1)),
                DType::F32,
                &[a, b],
                &ptx(),
            )
            .0
        };
        for (a, b, want) in [
            (-2.0, 3.0, -8.0),
            (-2.0, 2.0, 4.0),
            (2.0, 0.5, std::f64::consts::SQRT_2),
            (0.0, 2.0, 0.0),
            (f64::NAN, 0.0, 1.0),
            (-3.0, 0.0, 1.0),
            (4.0, -0.5, 0.5),
        ] {
            let r = pow(a, b);
            assert!((r - want).abs() <= 1e-6 * want.abs(), "pow({a}, {b}) = {r}");
        }
        assert!(pow(-2.0, 0.5).is_nan());
        for (a, b) in samples(8.0).into_iter().zip(samples(4.0).into_iter().rev()) {
            let (a, b) = (a.abs(), b);
            let want = (a as f32 as f64).powf(b);
            let r = pow(a, b);
            if want.is_finite() && want > 1e-30 && want < 1e30 {
                assert!(
                    (r - want).abs() <= 2e-6 * want * (1.0 + b.abs()),
                    "pow({a}, {b}) = {r}, not {want}"
                );
            }
        }
    }

    #[test]
    fn exp_log_through_base_two_only_without_native() {
        let wgsl = ExpandOptions::wgsl(4);
        let (_, native) = eval(Expr::Unary(UnaryOp::Exp, Reg(0)), DType::F32, &[1.5], &wgsl);
        assert_eq!(native, 1, "a native exp stays one statement");
        let (e, n) = eval(
            Expr::Unary(UnaryOp::Exp, Reg(0)),
            DType::F32,
            &[1.5],
            &ptx(),
        );
        assert!(n > 1 && (e - 1.5f64.exp()).abs() < 1e-5);
        let (l, _) = eval(
            Expr::Unary(UnaryOp::Log, Reg(0)),
            DType::F32,
            &[10.0],
            &ptx(),
        );
        assert!((l - 10f64.ln()).abs() < 1e-6);
    }

    /// Narrow floats: computed in f32 and rounded once, as the interpreter rounds one
    /// operation; native f16 stays one statement.
    #[test]
    fn narrow_floats_round_once_per_operation() {
        let xs = samples(70000.0);
        for dt in [DType::F16, DType::BF16] {
            for w in xs.windows(3).take(500) {
                let inputs: Vec<f64> = w
                    .iter()
                    .map(|x| crate::interp::value::round1(dt, *x))
                    .collect();
                for expr in [
                    Expr::Binary(BinaryOp::Add, Reg(0), Reg(1)),
                    Expr::Binary(BinaryOp::Mul, Reg(0), Reg(1)),
                    Expr::Binary(BinaryOp::Div, Reg(0), Reg(1)),
                    Expr::Fma(Reg(0), Reg(1), Reg(2)),
                    Expr::Unary(UnaryOp::Sqrt, Reg(2)),
                ] {
                    let want = match &expr {
                        Expr::Binary(op, _, _) => arith::binary(
                            *op,
                            dt,
                            &Data::F(vec![inputs[0]]),
                            &Data::F(vec![inputs[1]]),
                        ),
                        Expr::Fma(..) => {
                            let d = |i: usize| Data::F(vec![inputs[i]]);
                            arith::fma(dt, &d(0), &d(1), &d(2))
                        }
                        _ => arith::unary(UnaryOp::Sqrt, dt, &Data::F(vec![inputs[2]])),
                    }
                    .unwrap();
                    let Data::F(want) = want else { panic!() };
                    let (got, _) = eval(expr.clone(), dt, &inputs, &ptx());
                    assert!(
                        got.to_bits() == want[0].to_bits() || (got.is_nan() && want[0].is_nan()),
                        "{dt} {expr:?} of {inputs:?}: {got}, not {}",
                        want[0]
                    );
                }
            }
        }
        let native = ExpandOptions {
            native_f16: true,
            ..ExpandOptions::wgsl(4)
        };
        let add = Expr::Binary(BinaryOp::Add, Reg(0), Reg(1));
        assert_eq!(eval(add.clone(), DType::F16, &[1.0, 2.0], &native).1, 1);
        assert_eq!(eval(add, DType::BF16, &[1.0, 2.0], &native).1, 4);
        let (s, n) = eval(
            Expr::Unary(UnaryOp::Sin, Reg(0)),
            DType::F16,
            &[100.0],
            &native,
        );
        assert!(
            n > 3 && (s - 100f64.sin()).abs() < 1e-3,
            "f16 sin is reduced in f32"
        );
    }
}
