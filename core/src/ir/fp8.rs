//! The 8-bit float formats and their exact conversions (the reference the lowering's
//! integer sequences and the interpreter agree with).
//!
//! Two formats, as Triton has them on Hopper: `float8e4nv` (OCP E4M3FN: 4 exponent
//! bits, bias 7, 3 mantissa bits, no infinities, NaN `S.1111.111`, max 448) and
//! `float8e5` (E5M2: bias 15, 2 mantissa bits, infinities `S.11111.00`, NaNs with a
//! non-zero mantissa, max 57344). Conversions to fp8 round to nearest, ties to even,
//! and saturate: a finite value beyond the largest finite one, and an infinity, become
//! the largest finite value of its sign (PTX's `cvt.rn.satfinite`, what Triton emits on
//! sm_90); every NaN becomes the canonical `0x7f` (its sign and payload are not kept,
//! so that every executor gives the same code). Subnormals are kept. Conversions from
//! fp8 are exact (a NaN code widens to a NaN of its sign).
//!
//! Moving an fp8 value (loads, stores, `where`, broadcasts) keeps its code, NaN codes
//! included, as the GPUs move bytes: [`Format::decode`] tags a NaN's f64 payload with
//! its code and [`Format::store_code`] gives it back, while conversions
//! ([`Format::encode`], [`Format::round`]) make every NaN canonical.

use super::DType;

/// An 8-bit float format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    pub exp_bits: u32,
    pub man_bits: u32,
    pub bias: i32,
    /// Infinities and NaNs as in IEEE 754 (E5M2); otherwise only `S.1111.111` is NaN.
    pub ieee_specials: bool,
}

pub const E4M3: Format = Format {
    exp_bits: 4,
    man_bits: 3,
    bias: 7,
    ieee_specials: false,
};

pub const E5M2: Format = Format {
    exp_bits: 5,
    man_bits: 2,
    bias: 15,
    ieee_specials: true,
};

/// The f64 NaN a NaN code decodes to: a quiet NaN with this marker and the code in its
/// payload (the sign bit set for negative codes).
const NAN_TAG: u64 = 0x7ff8_0000_0000_0100;

impl Format {
    /// The format of an fp8 dtype.
    pub fn of(dtype: DType) -> Option<Format> {
        match dtype {
            DType::F8E4M3 => Some(E4M3),
            DType::F8E5M2 => Some(E5M2),
            _ => None,
        }
    }

    /// The code of the largest finite value (`0x7e` for E4M3, `0x7b` for E5M2).
    pub fn max_code(self) -> u8 {
        if self.ieee_specials {
            (((1u32 << self.exp_bits) - 2) << self.man_bits | ((1 << self.man_bits) - 1)) as u8
        } else {
            0x7e
        }
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        self.decode(self.max_code())
    }

    /// The smallest exponent of a normal number.
    fn emin(self) -> i32 {
        1 - self.bias
    }

    /// The value of a code (exact).
    pub fn decode(self, code: u8) -> f64 {
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let e = ((code >> self.man_bits) as u32) & ((1 << self.exp_bits) - 1);
        let m = (code as u32) & ((1 << self.man_bits) - 1);
        let top = (1u32 << self.exp_bits) - 1;
        let nan_mantissa = if self.ieee_specials {
            m != 0
        } else {
            m == (1 << self.man_bits) - 1
        };
        if e == top && nan_mantissa {
            return f64::from_bits(NAN_TAG | code as u64 | ((code as u64 & 0x80) << 56));
        }
        if self.ieee_specials && e == top {
            return sign * f64::INFINITY;
        }
        let scale = |p: i32| 2f64.powi(p);
        if e == 0 {
            sign * m as f64 * scale(self.emin() - self.man_bits as i32)
        } else {
            sign * (1.0 + m as f64 / (1u32 << self.man_bits) as f64) * scale(e as i32 - self.bias)
        }
    }

    /// The code of `x`: rounded to nearest, ties to even, saturated to the largest
    /// finite value; every NaN is `0x7f`.
    pub fn encode(self, x: f64) -> u8 {
        if x.is_nan() {
            return 0x7f;
        }
        let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs();
        if a == 0.0 {
            return sign;
        }
        let max = self.max();
        if a >= max {
            return self.max_code() | sign;
        }
        // The spacing of representable values at `a` (subnormals share emin's).
        let exp = a.log2().floor() as i32;
        // log2 can be off by one near powers of two: correct it.
        let exp = if 2f64.powi(exp) > a {
            exp - 1
        } else if 2f64.powi(exp + 1) <= a {
            exp + 1
        } else {
            exp
        };
        let q = 2f64.powi(exp.max(self.emin()) - self.man_bits as i32);
        let r = ((a / q).round_ties_even() * q).min(max);
        if r == 0.0 {
            return sign;
        }
        let sub = 2f64.powi(self.emin());
        let code = if r < sub {
            (r / 2f64.powi(self.emin() - self.man_bits as i32)) as u32
        } else {
            let e = r.log2().floor() as i32;
            let e = if 2f64.powi(e) > r { e - 1 } else { e };
            let m = ((r / 2f64.powi(e) - 1.0) * (1u32 << self.man_bits) as f64) as u32;
            (((e + self.bias) as u32) << self.man_bits) | m
        };
        code as u8 | sign
    }

    /// `x` rounded to the format (as a value; NaN canonical).
    pub fn round(self, x: f64) -> f64 {
        self.decode(self.encode(x))
    }

    /// The code to store for an interpreter value: a NaN that came from a code (see
    /// [`Format::decode`]) gets that code back, an infinity its code, anything else
    /// [`Format::encode`]s.
    pub fn store_code(self, x: f64) -> u8 {
        let bits = x.to_bits() & !(1u64 << 63);
        if x.is_nan() && bits & !0xff == NAN_TAG {
            return bits as u8;
        }
        // An infinity in fp8 data came from an infinity's code (conversions saturate).
        if x.is_infinite() && self.ieee_specials {
            let inf = (((1u32 << self.exp_bits) - 1) << self.man_bits) as u8;
            return inf | if x < 0.0 { 0x80 } else { 0 };
        }
        self.encode(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        for f in [E4M3, E5M2] {
            for c in 0..=255u8 {
                let v = f.decode(c);
                assert_eq!(f.store_code(v), c, "{f:?} code {c:#x} moves unchanged");
                if v.is_nan() {
                    assert_eq!(f.encode(v) & 0x7f, 0x7f);
                    continue;
                }
                if v.is_infinite() {
                    assert_eq!(f.encode(v), f.max_code() | (c & 0x80));
                    continue;
                }
                assert_eq!(f.encode(v), c, "{f:?} code {c:#x} = {v}");
            }
        }
    }

    #[test]
    fn limits_and_ties() {
        assert_eq!(E4M3.max(), 448.0);
        assert_eq!(E5M2.max(), 57344.0);
        assert_eq!(E4M3.decode(1), 2f64.powi(-9));
        assert_eq!(E5M2.decode(1), 2f64.powi(-16));
        assert_eq!(E5M2.decode(0x7c), f64::INFINITY);
        // Between 1 and 1.125 (E4M3): the tie goes to the even code, 1.
        assert_eq!(E4M3.round(1.0625), 1.0);
        assert_eq!(E4M3.round(1.1875), 1.25);
        // Saturation: beyond max, and infinities.
        assert_eq!(E4M3.round(1e9), 448.0);
        assert_eq!(E4M3.round(f64::NEG_INFINITY), -448.0);
        assert_eq!(E5M2.round(f64::INFINITY), 57344.0);
        // Half the smallest subnormal is a tie: to zero (even).
        assert_eq!(E4M3.round(2f64.powi(-10)), 0.0);
        assert_eq!(E4M3.round(1.5 * 2f64.powi(-10)), 2f64.powi(-9));
        assert!(E4M3.encode(-0.0) == 0x80);
    }
}
