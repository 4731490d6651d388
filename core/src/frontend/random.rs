//! `tl.random`: Triton's counter-based random numbers, traced into ordinary tile IR.
//!
//! Triton generates random numbers with Philox4x32 (Salmon et al., "Parallel random
//! numbers: as easy as 1, 2, 3", the Random123 generator): a counter of four 32-bit
//! words and a key of two, `n_rounds` rounds (10 by default) of multiplications by two
//! odd constants whose high halves (`tl.umulhi`) and low halves are mixed back into the
//! counter, the key bumped by two Weyl constants after every round. Nothing here is a
//! primitive of the IR: every function expands at trace time into `mulhi`, `mul`, `xor`,
//! casts and float math, so the interpreter, the simulators and both backends compute
//! it with the ops they already check, and `rand` / `randint` are bit-exact with Triton
//! for the same seed and offsets.
//!
//! The conventions are Triton's current ones (3.4 and later): the seed is taken as a
//! 64-bit value (signed seeds sign-extend) whose low and high words are the key; the
//! counter is `(offset_lo, offset_hi, 0, 0)` with `offset_hi` the upper word of a 64-bit
//! offset (0 for narrower offsets), so the 32-bit generator serves every offset type.
//! Uniform floats take the first output word, reinterpret it as a signed integer, fold
//! negatives onto non-negatives (`-s - 1`) and scale by `4.6566127342e-10` in f32, which
//! keeps them below 1. Normals are Box-Muller on two uniforms (`u1` clamped to 1e-7);
//! they use the device's `log`, `sqrt`, `sin` and `cos`, so they agree with Triton to a
//! few ulps rather than bit for bit.
//!
//! Where it matters to WGSL (which has no 64-bit integers), 32-bit seeds and offsets
//! never go through a 64-bit value.

use super::builtins::{bind, const_int, Bound};
use super::expr::{Args, Kwargs};
use super::tracer::{err, Tracer};
use super::value::Val;
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{BinaryOp, CmpPred, Const, DType, Op, Type, UnaryOp, Value};

/// Philox4x32's round multipliers and key increments.
const ROUND_A: u32 = 0xD251_1F53;
const ROUND_B: u32 = 0xCD9E_8D57;
const KEY_A: u32 = 0x9E37_79B9;
const KEY_B: u32 = 0xBB67_AE85;
/// Triton's default number of rounds.
const N_ROUNDS_DEFAULT: i64 = 10;
/// The scales from a folded signed integer to [0, 1): written as Triton writes them,
/// rounded to f32 when used.
const SCALE_32: f64 = 4.6566127342e-10;
const SCALE_64: f64 = 1.0842020432385337e-19;

impl Tracer<'_> {
    /// The random-number builtins (`tl.randint`, `tl.rand`, ...) and `tl.umulhi`;
    /// `None` for every other name.
    pub fn call_random(
        &mut self,
        f: &str,
        args: &Args,
        kwargs: &Kwargs,
        span: Span,
    ) -> Result<Option<Val>> {
        let (args, kwargs) = (args.clone(), kwargs.clone());
        let rounds = |t: &mut Self, b: &Bound, i: usize| -> Result<u32> {
            let n = match b.get(i) {
                Some((v, s)) => const_int(v, *s, "n_rounds")?,
                None => N_ROUNDS_DEFAULT,
            };
            if !(0..=64).contains(&n) {
                return Err(err(
                    ErrorKind::Argument,
                    format!("n_rounds must be between 0 and 64, got {n}"),
                    b.get(i).map(|x| x.1).unwrap_or(span),
                ));
            }
            let _ = t;
            Ok(n as u32)
        };
        let tuple = |vs: Vec<Value>| Val::Tuple(vs.into_iter().map(Val::T).collect(), false);
        let v = match f {
            "umulhi" => {
                let b = bind(f, args, kwargs, &["x", "y"], 2, span)?;
                let (x, y, _) = self.promote_pair(
                    &b.req(0)?.0.clone(),
                    &b.req(1)?.0.clone(),
                    false,
                    span,
                    "umulhi",
                )?;
                let d = self.ty(x).dtype();
                if !matches!(d, Some(DType::I32 | DType::U32 | DType::I64 | DType::U64)) {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "tl.umulhi needs int32, uint32, int64 or uint64 operands, got {}",
                            self.ty(x)
                        ),
                        span,
                    ));
                }
                Val::T(self.bin(BinaryOp::MulHi, x, y, span))
            }
            "randint" | "randint4x" | "rand" | "rand4x" | "randn" | "randn4x" => {
                let b = bind(f, args, kwargs, &["seed", "offset", "n_rounds"], 2, span)?;
                let n = rounds(self, &b, 2)?;
                let (seed, ss) = b.req(0)?.clone();
                let (offset, os) = b.req(1)?.clone();
                let words = self.randint4x(&seed, ss, &offset, os, n, span)?;
                match f {
                    "randint" => Val::T(words[0]),
                    "randint4x" => tuple(words.to_vec()),
                    "rand" => Val::T(self.uniform(words[0], span)),
                    "rand4x" => {
                        let u: Vec<Value> = words.iter().map(|&w| self.uniform(w, span)).collect();
                        tuple(u)
                    }
                    "randn" => {
                        let (u1, u2) = (self.uniform(words[0], span), self.uniform(words[1], span));
                        Val::T(self.box_muller(u1, u2, span).0)
                    }
                    _ => {
                        let u: Vec<Value> = words.iter().map(|&w| self.uniform(w, span)).collect();
                        let (n1, n2) = self.box_muller(u[0], u[1], span);
                        let (n3, n4) = self.box_muller(u[2], u[3], span);
                        tuple(vec![n1, n2, n3, n4])
                    }
                }
            }
            "philox" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["seed", "c0", "c1", "c2", "c3", "n_rounds"],
                    5,
                    span,
                )?;
                let n = rounds(self, &b, 5)?;
                let (seed, ss) = b.req(0)?.clone();
                let key = self.philox_key(&seed, ss)?;
                let mut c = Vec::new();
                for i in 1..5 {
                    let (v, s) = b.req(i)?.clone();
                    let x = self.int_tensor(&v, s, "a Philox counter")?;
                    if self.ty(x).dtype().map(DType::bits) != Some(32) {
                        return Err(err(
                            ErrorKind::Type,
                            format!(
                                "tilewise's tl.philox takes 32-bit counters, got {}",
                                self.ty(x)
                            ),
                            s,
                        ));
                    }
                    c.push(self.bitcast(x, DType::U32, s)?);
                }
                tuple(self.philox(c.try_into().unwrap(), key, n, span)?.to_vec())
            }
            "uint_to_uniform_float" | "uint32_to_uniform_float" => {
                let b = bind(f, args, kwargs, &["x"], 1, span)?;
                let (v, s) = b.req(0)?.clone();
                let x = self.int_tensor(&v, s, "tl.uint_to_uniform_float")?;
                Val::T(self.uniform(x, span))
            }
            "pair_uniform_to_normal" => {
                let b = bind(f, args, kwargs, &["u1", "u2"], 2, span)?;
                let mut u = Vec::new();
                for i in 0..2 {
                    let (v, s) = b.req(i)?.clone();
                    let x = self.tensor_of(&v, s)?;
                    u.push(self.cast_checked(x, DType::F32, s)?);
                }
                let (u1, u2) = self.broadcast_pair(u[0], u[1], span)?;
                let (n1, n2) = self.box_muller(u1, u2, span);
                tuple(vec![n1, n2])
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// An integer tile (a Python int becomes an int32 one, as `tl.to_tensor` does).
    fn int_tensor(&mut self, v: &Val, s: Span, what: &str) -> Result<Value> {
        let x = self.tensor_of(v, s)?;
        match self.ty(x).dtype() {
            Some(d) if d.is_int() && d != DType::I1 => Ok(x),
            _ => Err(err(
                ErrorKind::Type,
                format!("{what} must be an integer, got {}", self.describe(v)),
                s,
            )),
        }
    }

    /// A binary op on two operands of the same dtype, broadcast to one shape.
    fn bin(&mut self, op: BinaryOp, x: Value, y: Value, span: Span) -> Value {
        let (x, y) = self
            .broadcast_pair(x, y, span)
            .expect("operands of the random-number expansion broadcast");
        let ty = self.ty(x);
        self.b.push1(Op::Binary { op, lhs: x, rhs: y }, ty, span)
    }

    /// A scalar constant of `dtype`.
    fn scalar(&mut self, c: Const, dtype: DType, span: Span) -> Value {
        self.konst(c, Type::scalar(dtype), span)
    }

    fn u32c(&mut self, k: u32, span: Span) -> Value {
        self.scalar(Const::Int(k as i64), DType::U32, span)
    }

    /// The key words `(seed_lo, seed_hi)` of a seed taken as a 64-bit value.
    fn philox_key(&mut self, seed: &Val, s: Span) -> Result<[Value; 2]> {
        let literal = match seed {
            Val::Int(v) => Some(*v),
            Val::Bool(b) => Some(*b as i64),
            _ => None,
        };
        if let Some(v) = literal {
            let bits = v as u64;
            return Ok([self.u32c(bits as u32, s), self.u32c((bits >> 32) as u32, s)]);
        }
        let x = self.int_tensor(seed, s, "the seed")?;
        let d = self.ty(x).dtype().unwrap();
        Ok(match d.bits() {
            64 => {
                let x = self.bitcast(x, DType::U64, s)?;
                let sh = self.scalar(Const::Int(32), DType::U64, s);
                let hi = self.bin(BinaryOp::Shr, x, sh, s);
                [self.cast(x, DType::U32, s), self.cast(hi, DType::U32, s)]
            }
            _ if d.is_unsigned_int() => [self.cast(x, DType::U32, s), self.u32c(0, s)],
            _ => {
                // Sign extension to 64 bits: the high word is all ones for a negative seed.
                let x = self.cast(x, DType::I32, s);
                let sh = self.scalar(Const::Int(31), DType::I32, s);
                let sign = self.bin(BinaryOp::Shr, x, sh, s);
                [
                    self.bitcast(x, DType::U32, s)?,
                    self.bitcast(sign, DType::U32, s)?,
                ]
            }
        })
    }

    /// Triton's `randint4x`: the four Philox words for counter
    /// `(offset_lo, offset_hi, 0, 0)`.
    fn randint4x(
        &mut self,
        seed: &Val,
        ss: Span,
        offset: &Val,
        os: Span,
        n_rounds: u32,
        span: Span,
    ) -> Result<[Value; 4]> {
        let key = self.philox_key(seed, ss)?;
        let off = self.int_tensor(offset, os, "the offset")?;
        let d = self.ty(off).dtype().unwrap();
        let lo = self.cast(off, DType::U32, os);
        let zero = self.u32c(0, span);
        let hi = if d.bits() == 64 {
            let sh = self.scalar(Const::Int(32), d, os);
            let h = self.bin(BinaryOp::Shr, off, sh, os);
            self.cast(h, DType::U32, os)
        } else {
            zero
        };
        let shape = self.shape(lo);
        let zeros = self.broadcast_to(zero, &shape, span)?;
        let hi = self.broadcast_to(hi, &shape, span)?;
        self.philox([lo, hi, zeros, zeros], key, n_rounds, span)
    }

    /// Philox4x32 with `n_rounds` rounds: counter `c`, key `k`, all uint32.
    fn philox(
        &mut self,
        c: [Value; 4],
        k: [Value; 2],
        n_rounds: u32,
        span: Span,
    ) -> Result<[Value; 4]> {
        let [mut c0, mut c1, mut c2, mut c3] = c;
        // One shape for the counter words, the key broadcast to it.
        let mut shape = self.shape(c0);
        for &w in &[c1, c2, c3, k[0], k[1]] {
            shape = self.broadcast_shapes(&shape, &self.shape(w), span)?;
        }
        let bc = |t: &mut Self, v: Value| t.broadcast_to(v, &shape, span);
        c0 = bc(self, c0)?;
        c1 = bc(self, c1)?;
        c2 = bc(self, c2)?;
        c3 = bc(self, c3)?;
        let (mut k0, mut k1) = (bc(self, k[0])?, bc(self, k[1])?);
        let (ra, rb) = (self.u32c(ROUND_A, span), self.u32c(ROUND_B, span));
        let (ka, kb) = (self.u32c(KEY_A, span), self.u32c(KEY_B, span));
        for _ in 0..n_rounds {
            let (p, q) = (c0, c2);
            let hb = self.bin(BinaryOp::MulHi, rb, q, span);
            let x = self.bin(BinaryOp::Xor, hb, c1, span);
            let n0 = self.bin(BinaryOp::Xor, x, k0, span);
            let ha = self.bin(BinaryOp::MulHi, ra, p, span);
            let x = self.bin(BinaryOp::Xor, ha, c3, span);
            let n2 = self.bin(BinaryOp::Xor, x, k1, span);
            c1 = self.bin(BinaryOp::Mul, rb, q, span);
            c3 = self.bin(BinaryOp::Mul, ra, p, span);
            c0 = n0;
            c2 = n2;
            k0 = self.bin(BinaryOp::Add, k0, ka, span);
            k1 = self.bin(BinaryOp::Add, k1, kb, span);
        }
        Ok([c0, c1, c2, c3])
    }

    /// Triton's `uint_to_uniform_float`: an integer word to a float32 in [0, 1).
    fn uniform(&mut self, x: Value, span: Span) -> Value {
        let d = self.ty(x).dtype().unwrap_or(DType::U32);
        let (signed, scale) = if d.bits() == 64 {
            (DType::I64, SCALE_64)
        } else {
            (DType::I32, SCALE_32)
        };
        let s = if d.bits() == signed.bits() {
            self.bitcast(x, signed, span)
                .expect("same-width integer bitcast")
        } else {
            self.cast(x, signed, span)
        };
        // Negatives fold onto non-negatives: -s - 1 == !s.
        let zero = self.scalar(Const::Int(0), signed, span);
        let ones = self.scalar(Const::Int(-1), signed, span);
        let neg = {
            let (a, z) = self
                .broadcast_pair(s, zero, span)
                .expect("scalar broadcast");
            let ty = self.ty(a).with_dtype(DType::I1);
            self.b.push1(
                Op::Cmp {
                    pred: CmpPred::Lt,
                    lhs: a,
                    rhs: z,
                },
                ty,
                span,
            )
        };
        let flipped = self.bin(BinaryOp::Xor, s, ones, span);
        let ty = self.ty(s);
        let folded = self.b.push1(
            Op::Select {
                cond: neg,
                on_true: flipped,
                on_false: s,
            },
            ty,
            span,
        );
        let f = self.cast(folded, DType::F32, span);
        let k = self.scalar(Const::Float(scale as f32 as f64), DType::F32, span);
        self.bin(BinaryOp::Mul, f, k, span)
    }

    /// Triton's `pair_uniform_to_normal`: Box-Muller on two f32 uniforms.
    fn box_muller(&mut self, u1: Value, u2: Value, span: Span) -> (Value, Value) {
        let f = |t: &mut Self, x: f64| t.scalar(Const::Float(x as f32 as f64), DType::F32, span);
        let un = |t: &mut Self, op: UnaryOp, x: Value| {
            let ty = t.ty(x);
            t.b.push1(Op::Unary { op, value: x }, ty, span)
        };
        let eps = f(self, 1.0e-7);
        let u1 = self.bin(BinaryOp::Max, eps, u1, span);
        let two_pi = f(self, std::f64::consts::TAU);
        let th = self.bin(BinaryOp::Mul, two_pi, u2, span);
        let m2 = f(self, -2.0);
        let l = un(self, UnaryOp::Log, u1);
        let x = self.bin(BinaryOp::Mul, m2, l, span);
        let r = un(self, UnaryOp::Sqrt, x);
        let (c, s) = (un(self, UnaryOp::Cos, th), un(self, UnaryOp::Sin, th));
        (
            self.bin(BinaryOp::Mul, r, c, span),
            self.bin(BinaryOp::Mul, r, s, span),
        )
    }
}
