//! Software routines in f32 for the functions PTX has no instruction for: `erf`,
//! `tanh` and `pow` (the unary and binary operations call them; f64 is refused there).

use super::arith::f32_lit;
use super::{Class, Printer};

impl Printer<'_> {
    /// `erf(x)` in f32: a Taylor series below 1, Abramowitz-Stegun 7.1.26 above.
    pub(super) fn erf(&mut self, out: &str, x: &str) {
        let (a, z, s, e, u, y) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let small = self.tmp(Class::Pred);
        let neg = self.tmp(Class::Pred);
        let lit = |v: f64| f32_lit(v as f32);
        self.ins(format!("abs.f32 {a}, {x};"));
        self.ins(format!("mul.rn.f32 {z}, {x}, {x};"));
        // Series: x * 2/sqrt(pi) * sum (-1)^n z^n / (n! (2n+1)), Horner in z.
        let coeffs = [
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
        ];
        self.ins(format!("mov.b32 {s}, {};", lit(coeffs[0])));
        for c in &coeffs[1..] {
            self.ins(format!("fma.rn.f32 {s}, {s}, {z}, {};", lit(*c)));
        }
        self.ins(format!("mul.rn.f32 {s}, {s}, {x};"));
        self.ins(format!(
            "mul.rn.f32 {s}, {s}, {};",
            lit(std::f64::consts::FRAC_2_SQRT_PI)
        ));
        // Tail: 1 - poly(t) * exp(-a^2), t = 1 / (1 + p a).
        self.ins(format!(
            "fma.rn.f32 {u}, {a}, {}, 0f3F800000;",
            lit(0.3275911)
        ));
        self.ins(format!("rcp.rn.f32 {u}, {u};"));
        self.ins(format!("mov.b32 {y}, {};", lit(1.061405429)));
        for c in [-1.453152027, 1.421413741, -0.284496736, 0.254829592] {
            self.ins(format!("fma.rn.f32 {y}, {y}, {u}, {};", lit(c)));
        }
        self.ins(format!("mul.rn.f32 {y}, {y}, {u};"));
        self.ins(format!("mul.rn.f32 {e}, {a}, {a};"));
        self.ins(format!(
            "mul.rn.f32 {e}, {e}, {};",
            f32_lit(-std::f32::consts::LOG2_E)
        ));
        self.ins(format!("ex2.approx.f32 {e}, {e};"));
        self.ins(format!("neg.f32 {y}, {y};"));
        self.ins(format!("fma.rn.f32 {y}, {y}, {e}, 0f3F800000;"));
        self.ins(format!("setp.lt.f32 {neg}, {x}, 0f00000000;"));
        self.ins(format!("@{neg} neg.f32 {y}, {y};"));
        self.ins(format!("setp.lt.f32 {small}, {a}, 0f3F800000;"));
        self.ins(format!("selp.b32 {out}, {s}, {y}, {small};"));
    }

    /// `tanh(x)` in f32: an odd Taylor series below 0.55, `1 - 2 / (exp(2|x|) + 1)`
    /// with the sign of `x` above.
    pub(super) fn tanh(&mut self, out: &str, x: &str) {
        let (a, z, s, e) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let small = self.tmp(Class::Pred);
        let lit = |v: f64| f32_lit(v as f32);
        self.ins(format!("abs.f32 {a}, {x};"));
        self.ins(format!("mul.rn.f32 {z}, {x}, {x};"));
        // tanh(x) = x (1 - z/3 + 2z^2/15 - 17z^3/315 + 62z^4/2835 - 1382z^5/155925
        //            + 21844z^6/6081075 - 929569z^7/638512875 + ...), Horner in z.
        let series = [
            -929569.0 / 638512875.0,
            21844.0 / 6081075.0,
            -1382.0 / 155925.0,
            62.0 / 2835.0,
            -17.0 / 315.0,
            2.0 / 15.0,
            -1.0 / 3.0,
            1.0,
        ];
        self.ins(format!("mov.b32 {s}, {};", lit(series[0])));
        for c in &series[1..] {
            self.ins(format!("fma.rn.f32 {s}, {s}, {z}, {};", lit(*c)));
        }
        self.ins(format!("mul.rn.f32 {s}, {s}, {x};"));
        // Large: 1 - 2 / (2^(2|x| log2 e) + 1), saturating to 1 for big |x|.
        self.ins(format!(
            "mul.rn.f32 {e}, {a}, {};",
            f32_lit(2.0 * std::f32::consts::LOG2_E)
        ));
        self.ins(format!("ex2.approx.f32 {e}, {e};"));
        self.ins(format!("add.rn.f32 {e}, {e}, 0f3F800000;"));
        self.ins(format!("rcp.rn.f32 {e}, {e};"));
        self.ins(format!("fma.rn.f32 {e}, {e}, 0fC0000000, 0f3F800000;"));
        self.ins(format!("copysign.f32 {e}, {x}, {e};"));
        self.ins(format!("setp.lt.f32 {small}, {a}, {};", lit(0.55)));
        self.ins(format!("selp.b32 {out}, {s}, {e}, {small};"));
    }

    /// `pow(a, b)` in f32: `2^(b log2 |a|)`, negated for a negative base and an odd
    /// integer exponent, NaN for a negative base and a non-integer exponent, 1 for
    /// `b == 0`.
    pub(super) fn pow(&mut self, out: &str, a: &str, b: &str) {
        let (l, bi, half, r) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let (neg, isint, odd, zero) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        self.ins(format!("abs.f32 {l}, {a};"));
        self.ins(format!("lg2.approx.f32 {l}, {l};"));
        self.ins(format!("mul.rn.f32 {l}, {l}, {b};"));
        self.ins(format!("ex2.approx.f32 {r}, {l};"));
        self.ins(format!("setp.lt.f32 {neg}, {a}, 0f00000000;"));
        self.ins(format!("cvt.rzi.f32.f32 {bi}, {b};"));
        self.ins(format!("setp.eq.f32 {isint}, {bi}, {b};"));
        // Odd: b/2 is not an integer (every float above 2^24 is even).
        self.ins(format!("mul.rn.f32 {half}, {b}, 0f3F000000;"));
        self.ins(format!("cvt.rzi.f32.f32 {bi}, {half};"));
        self.ins(format!("setp.ne.f32 {odd}, {bi}, {half};"));
        self.ins(format!("and.pred {odd}, {odd}, {isint};"));
        self.ins(format!("and.pred {odd}, {odd}, {neg};"));
        self.ins(format!("@{odd} neg.f32 {r}, {r};"));
        self.ins(format!("not.pred {isint}, {isint};"));
        self.ins(format!("and.pred {neg}, {neg}, {isint};"));
        self.ins(format!("@{neg} mov.b32 {r}, 0f7FC00000;"));
        self.ins(format!("setp.eq.f32 {zero}, {b}, 0f00000000;"));
        self.ins(format!("selp.b32 {out}, 0f3F800000, {r}, {zero};"));
    }
}
