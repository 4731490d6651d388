//! Interpreter: elementwise arithmetic of every dtype against plain Rust references,
//! C integer division, shifts, comparisons, casts, unary math.

#![allow(clippy::type_complexity, clippy::needless_range_loop)]

mod interp_support;
use half::{bf16, f16};
use interp_support::*;
use tilewise_core::interp::HostBuffer;
use tilewise_core::ir::*;

const N: u32 = 64;

/// out[i] = op(a[i], b[i]) over N lanes; `out_dt` is the result dtype.
fn binary_kernel(dt: DType, f: impl FnOnce(&mut K, Value, Value) -> Value) -> Kernel {
    let mut k = K::new("binop");
    let a = k.ptr_param("a", dt);
    let b = k.ptr_param("b", dt);
    let ar = k.arange(0, N as i64);
    let pa = k.addptr(a, ar);
    let pb = k.addptr(b, ar);
    let x = k.load(pa, None, None);
    let y = k.load(pb, None, None);
    let r = f(&mut k, x, y);
    let odt = k.dt(r);
    let o = k.ptr_param("o", odt);
    let po = k.addptr(o, ar);
    k.store(po, r, None);
    k.finish()
}

fn run_binary(k: &Kernel, a: HostBuffer, b: HostBuffer, out: HostBuffer) -> HostBuffer {
    let mut bufs = vec![a, b, out];
    let args = [whole(0, &bufs[0]), whole(1, &bufs[1]), whole(2, &bufs[2])];
    run(k, 1, &args, &mut bufs).unwrap();
    bufs.pop().unwrap()
}

const INT_OPS: [BinaryOp; 13] = [
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
    BinaryOp::MulHi,
];

macro_rules! int_case {
    ($name:ident, $t:ty, $bits:expr) => {
        #[test]
        fn $name() {
            let mut rng = Rng::new($bits as u64 * 7 + 1);
            let a: Vec<$t> = (0..N).map(|_| rng.next_u64() as $t).collect();
            let mut b: Vec<$t> = (0..N).map(|_| rng.next_u64() as $t).collect();
            // Small divisors, zeros, -1, and shift amounts around the width.
            for i in 0..N as usize {
                match i % 8 {
                    0 => b[i] = 0 as $t,
                    1 => b[i] = (!0u64) as $t,
                    2 => b[i] = (rng.i(1, 9)) as $t,
                    3 => b[i] = ($bits - 1) as $t,
                    4 => b[i] = $bits as $t,
                    _ => {}
                }
            }
            for op in INT_OPS {
                let k = binary_kernel(<$t as HostElem>::DT, |k, x, y| k.bin(op, x, y));
                let out = run_binary(&k, buf(&a), buf(&b), buf(&vec![0x5A as $t; N as usize]));
                let got: Vec<$t> = read(&out);
                for i in 0..N as usize {
                    let (x, y) = (a[i], b[i]);
                    let want: $t = match op {
                        BinaryOp::Add => x.wrapping_add(y),
                        BinaryOp::Sub => x.wrapping_sub(y),
                        BinaryOp::Mul => x.wrapping_mul(y),
                        BinaryOp::Div => {
                            if y == 0 {
                                0
                            } else {
                                x.wrapping_div(y)
                            }
                        }
                        BinaryOp::Rem => {
                            if y == 0 {
                                0
                            } else {
                                x.wrapping_rem(y)
                            }
                        }
                        BinaryOp::And => x & y,
                        BinaryOp::Or => x | y,
                        BinaryOp::Xor => x ^ y,
                        BinaryOp::Shl => {
                            if (y as i128) < 0 || (y as i128) >= $bits {
                                0
                            } else {
                                x << (y as u32)
                            }
                        }
                        BinaryOp::Shr => {
                            if (y as i128) < 0 || (y as i128) >= $bits {
                                if (x as i128) < 0 {
                                    (!0u64) as $t
                                } else {
                                    0
                                }
                            } else {
                                x >> (y as u32)
                            }
                        }
                        BinaryOp::Min => x.min(y),
                        BinaryOp::Max => x.max(y),
                        // The unsigned double-width product's upper half.
                        BinaryOp::MulHi => {
                            let m = u128::MAX >> (128 - $bits);
                            ((((x as u128) & m) * ((y as u128) & m)) >> $bits) as $t
                        }
                        _ => unreachable!(),
                    };
                    assert_eq!(got[i], want, "{} {:?}({x}, {y})", stringify!($t), op);
                }
            }
            // Comparisons into i1 buffers.
            for pred in [
                CmpPred::Eq,
                CmpPred::Ne,
                CmpPred::Lt,
                CmpPred::Le,
                CmpPred::Gt,
                CmpPred::Ge,
            ] {
                let k = binary_kernel(<$t as HostElem>::DT, |k, x, y| k.cmp(pred, x, y));
                let out = run_binary(
                    &k,
                    buf(&a),
                    buf(&a
                        .iter()
                        .zip(&b)
                        .enumerate()
                        .map(|(i, (&x, &y))| if i % 3 == 0 { x } else { y })
                        .collect::<Vec<$t>>()),
                    HostBuffer {
                        dtype: DType::I1,
                        bytes: vec![7; N as usize],
                    },
                );
                for i in 0..N as usize {
                    let (x, y) = (a[i], if i % 3 == 0 { a[i] } else { b[i] });
                    let want = match pred {
                        CmpPred::Eq => x == y,
                        CmpPred::Ne => x != y,
                        CmpPred::Lt => x < y,
                        CmpPred::Le => x <= y,
                        CmpPred::Gt => x > y,
                        CmpPred::Ge => x >= y,
                    };
                    assert_eq!(out.bytes[i], want as u8, "{pred:?}({x}, {y})");
                }
            }
        }
    };
}

int_case!(int_ops_i8, i8, 8);
int_case!(int_ops_i16, i16, 16);
int_case!(int_ops_i32, i32, 32);
int_case!(int_ops_i64, i64, 64);
int_case!(int_ops_u8, u8, 8);
int_case!(int_ops_u16, u16, 16);
int_case!(int_ops_u32, u32, 32);
int_case!(int_ops_u64, u64, 64);

#[test]
fn c_division_semantics() {
    let a: Vec<i32> = vec![7, -7, 7, -7, 0, i32::MIN, i32::MIN, 5];
    let b: Vec<i32> = vec![2, 2, -2, -2, 3, -1, 1, 0];
    let a: Vec<i32> = a.iter().cycle().take(N as usize).copied().collect();
    let b: Vec<i32> = b.iter().cycle().take(N as usize).copied().collect();
    let k = binary_kernel(DType::I32, |k, x, y| k.bin(BinaryOp::Div, x, y));
    let got: Vec<i32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0i32; N as usize])));
    assert_eq!(&got[..8], &[3, -3, -3, 3, 0, i32::MIN, i32::MIN, 0]);
    let k = binary_kernel(DType::I32, |k, x, y| k.bin(BinaryOp::Rem, x, y));
    let got: Vec<i32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0i32; N as usize])));
    assert_eq!(&got[..8], &[1, -1, 1, -1, 0, 0, 0, 0]);
}

const FLOAT_OPS: [BinaryOp; 8] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::Min,
    BinaryOp::Max,
    BinaryOp::Pow,
];

fn f64_op(op: BinaryOp, x: f64, y: f64) -> f64 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Rem => x % y,
        BinaryOp::Min => x.min(y),
        BinaryOp::Max => x.max(y),
        BinaryOp::Pow => x.powf(y),
        _ => unreachable!(),
    }
}

fn float_inputs(rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let mut a: Vec<f64> = (0..N).map(|_| rng.f(-8.0, 8.0)).collect();
    let mut b: Vec<f64> = (0..N).map(|_| rng.f(-8.0, 8.0)).collect();
    a[0] = f64::NAN;
    b[1] = f64::NAN;
    b[2] = 0.0;
    a[3] = f64::INFINITY;
    (a, b)
}

fn same(x: f64, y: f64) -> bool {
    x == y || (x.is_nan() && y.is_nan())
}

#[test]
fn f32_ops_match_f32_arithmetic() {
    let mut rng = Rng::new(11);
    let (a, b) = float_inputs(&mut rng);
    let a: Vec<f32> = a.iter().map(|&x| x as f32).collect();
    let b: Vec<f32> = b.iter().map(|&x| x as f32).collect();
    for op in FLOAT_OPS {
        let k = binary_kernel(DType::F32, |k, x, y| k.bin(op, x, y));
        let got: Vec<f32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0f32; N as usize])));
        for i in 0..N as usize {
            let (x, y) = (a[i], b[i]);
            let want = match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Rem => x % y,
                BinaryOp::Min => x.min(y),
                BinaryOp::Max => x.max(y),
                _ => (x as f64).powf(y as f64) as f32,
            };
            assert!(
                same(got[i] as f64, want as f64),
                "{op:?}({x}, {y}) = {} want {want}",
                got[i]
            );
        }
    }
}

#[test]
fn half_and_double_ops_round_like_the_dtype() {
    let mut rng = Rng::new(12);
    let (a, b) = float_inputs(&mut rng);
    for op in FLOAT_OPS {
        // f16
        let (ah, bh): (Vec<f16>, Vec<f16>) = (
            a.iter()
                .map(|&x| tilewise_core::ir::f16_from_f64(x))
                .collect(),
            b.iter()
                .map(|&x| tilewise_core::ir::f16_from_f64(x))
                .collect(),
        );
        let k = binary_kernel(DType::F16, |k, x, y| k.bin(op, x, y));
        let got: Vec<f16> = read(&run_binary(
            &k,
            buf(&ah),
            buf(&bh),
            buf(&[f16::ZERO; N as usize]),
        ));
        for i in 0..N as usize {
            let want = tilewise_core::ir::f16_from_f64(f64_op(op, ah[i].to_f64(), bh[i].to_f64()));
            assert!(same(got[i].to_f64(), want.to_f64()), "f16 {op:?}");
        }
        // bf16
        let (ab, bb): (Vec<bf16>, Vec<bf16>) = (
            a.iter()
                .map(|&x| tilewise_core::ir::bf16_from_f64(x))
                .collect(),
            b.iter()
                .map(|&x| tilewise_core::ir::bf16_from_f64(x))
                .collect(),
        );
        let k = binary_kernel(DType::BF16, |k, x, y| k.bin(op, x, y));
        let got: Vec<bf16> = read(&run_binary(
            &k,
            buf(&ab),
            buf(&bb),
            buf(&[bf16::ZERO; N as usize]),
        ));
        for i in 0..N as usize {
            let want = tilewise_core::ir::bf16_from_f64(f64_op(op, ab[i].to_f64(), bb[i].to_f64()));
            assert!(same(got[i].to_f64(), want.to_f64()), "bf16 {op:?}");
        }
        // f64
        let k = binary_kernel(DType::F64, |k, x, y| k.bin(op, x, y));
        let got: Vec<f64> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0f64; N as usize])));
        for i in 0..N as usize {
            assert!(same(got[i], f64_op(op, a[i], b[i])), "f64 {op:?}");
        }
    }
}

#[test]
fn float_min_max_nan_loses() {
    let a = [f32::NAN, 1.0, f32::NAN, -0.5].repeat(16);
    let b = [2.0, f32::NAN, f32::NAN, 3.0].repeat(16);
    let k = binary_kernel(DType::F32, |k, x, y| k.bin(BinaryOp::Max, x, y));
    let got: Vec<f32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0f32; N as usize])));
    assert_eq!(got[0], 2.0);
    assert_eq!(got[1], 1.0);
    assert!(got[2].is_nan());
    assert_eq!(got[3], 3.0);
}

#[test]
fn fma_select_and_unary_math_f32() {
    let mut rng = Rng::new(13);
    let a: Vec<f32> = (0..N).map(|_| rng.f(0.1, 4.0) as f32).collect();
    let b: Vec<f32> = (0..N).map(|_| rng.f(-3.0, 3.0) as f32).collect();
    let k = binary_kernel(DType::F32, |k, x, y| {
        let f = k.push1(
            Op::Fma { a: x, b: y, c: y },
            Type::tile(DType::F32, vec![N]),
        );
        let c = k.cmp(CmpPred::Gt, y, x);
        k.select(c, f, x)
    });
    let got: Vec<f32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0f32; N as usize])));
    for i in 0..N as usize {
        let want = if b[i] > a[i] {
            a[i].mul_add(b[i], b[i])
        } else {
            a[i]
        };
        assert_eq!(got[i], want);
    }
    let unary: [(UnaryOp, fn(f64) -> f64); 13] = [
        (UnaryOp::Exp, f64::exp),
        (UnaryOp::Exp2, f64::exp2),
        (UnaryOp::Log, f64::ln),
        (UnaryOp::Log2, f64::log2),
        (UnaryOp::Sqrt, f64::sqrt),
        (UnaryOp::Rsqrt, |x| 1.0 / x.sqrt()),
        (UnaryOp::Sin, f64::sin),
        (UnaryOp::Cos, f64::cos),
        (UnaryOp::Floor, f64::floor),
        (UnaryOp::Ceil, f64::ceil),
        (UnaryOp::Tanh, f64::tanh),
        (UnaryOp::Abs, f64::abs),
        (UnaryOp::Neg, |x| -x),
    ];
    for (op, f) in unary {
        let k = binary_kernel(DType::F32, |k, x, _| k.un(op, x));
        let got: Vec<f32> = read(&run_binary(&k, buf(&a), buf(&b), buf(&[0f32; N as usize])));
        for i in 0..N as usize {
            let want = f(a[i] as f64);
            let tol = want.abs() * 2.0f64.powi(-23);
            assert!(
                (got[i] as f64 - want).abs() <= tol,
                "{op:?}({}) = {} want {want}",
                a[i],
                got[i]
            );
        }
    }
    // erf against a few known values via f64 inputs.
    let k = binary_kernel(DType::F64, |k, x, _| k.un(UnaryOp::Erf, x));
    let xs = [0.5f64, -1.0, 2.0, 4.0].repeat(16);
    let got: Vec<f64> = read(&run_binary(
        &k,
        buf(&xs),
        buf(&xs),
        buf(&[0f64; N as usize]),
    ));
    let want = [
        0.5204998778130465,
        -0.8427007929497149,
        0.9953222650189527,
        0.9999999845827421,
    ];
    for i in 0..4 {
        assert!(
            (got[i] - want[i]).abs() < 1e-13,
            "erf({}) = {}",
            xs[i],
            got[i]
        );
    }
}

fn cast_kernel(from: DType, to: DType, bitcast: bool) -> Kernel {
    let mut k = K::new("cast");
    let a = k.ptr_param("a", from);
    let o = k.ptr_param("o", to);
    let ar = k.arange(0, N as i64);
    let pa = k.addptr(a, ar);
    let x = k.load(pa, None, None);
    let c = k.cast(x, to, bitcast);
    let po = k.addptr(o, ar);
    k.store(po, c, None);
    k.finish()
}

fn run_cast(k: &Kernel, a: HostBuffer, out: HostBuffer) -> HostBuffer {
    let mut bufs = vec![a, out];
    let args = [whole(0, &bufs[0]), whole(1, &bufs[1])];
    run(k, 1, &args, &mut bufs).unwrap();
    bufs.pop().unwrap()
}

#[test]
fn casts_truncate_saturate_and_round() {
    let mut rng = Rng::new(21);
    let mut xs: Vec<f32> = (0..N).map(|_| rng.f(-1e10, 1e10) as f32).collect();
    xs[..8].copy_from_slice(&[
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -3.99,
        3.99,
        -0.5,
        255.5,
        1e10,
    ]);
    let got: Vec<i32> = read(&run_cast(
        &cast_kernel(DType::F32, DType::I32, false),
        buf(&xs),
        buf(&[7i32; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], xs[i] as i32, "f32 {} -> i32", xs[i]);
    }
    let got: Vec<u8> = read(&run_cast(
        &cast_kernel(DType::F32, DType::U8, false),
        buf(&xs),
        buf(&[7u8; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], xs[i] as u8, "f32 {} -> u8", xs[i]);
    }
    let got: Vec<f16> = read(&run_cast(
        &cast_kernel(DType::F32, DType::F16, false),
        buf(&xs),
        buf(&[f16::ZERO; N as usize]),
    ));
    for i in 0..N as usize {
        assert!(same(got[i].to_f64(), f16::from_f32(xs[i]).to_f64()));
    }
    // int -> float rounds to nearest even; int -> narrower int wraps.
    let is: Vec<i64> = (0..N as i64)
        .map(|i| {
            if i < 4 {
                [i64::MAX, (1 << 53) + 1, -(1 << 40) - 3, 16_777_217][i as usize]
            } else {
                rng.next_u64() as i64
            }
        })
        .collect();
    let got: Vec<f32> = read(&run_cast(
        &cast_kernel(DType::I64, DType::F32, false),
        buf(&is),
        buf(&[0f32; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], is[i] as f32);
    }
    let got: Vec<i8> = read(&run_cast(
        &cast_kernel(DType::I64, DType::I8, false),
        buf(&is),
        buf(&[0i8; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], is[i] as i8);
    }
    let us: Vec<u64> = is.iter().map(|&x| x as u64).collect();
    let got: Vec<f64> = read(&run_cast(
        &cast_kernel(DType::U64, DType::F64, false),
        buf(&us),
        buf(&[0f64; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], us[i] as f64);
    }
    // to i1 is != 0
    let got = run_cast(
        &cast_kernel(DType::F32, DType::I1, false),
        buf(&xs),
        HostBuffer {
            dtype: DType::I1,
            bytes: vec![9; N as usize],
        },
    );
    for i in 0..N as usize {
        assert_eq!(got.bytes[i], (xs[i] != 0.0) as u8);
    }
    // bitcast f32 <-> u32
    let got: Vec<u32> = read(&run_cast(
        &cast_kernel(DType::F32, DType::U32, true),
        buf(&xs),
        buf(&[0u32; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i], xs[i].to_bits());
    }
    let bits: Vec<i32> = (0..N).map(|_| rng.next_u64() as i32).collect();
    let got: Vec<f32> = read(&run_cast(
        &cast_kernel(DType::I32, DType::F32, true),
        buf(&bits),
        buf(&[0f32; N as usize]),
    ));
    for i in 0..N as usize {
        assert_eq!(got[i].to_bits(), bits[i] as u32);
    }
}
