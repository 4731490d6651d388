//! Property tests of the language semantics against plain-Rust models: broadcasting,
//! dtype promotion (Triton's rules), and C integer division.

mod common;

use common::{device, err, filled, line_col_of, module, ok, Rng};
use proptest::prelude::*;
use tilewise::half::{bf16, f16};
use tilewise::{Buffer, DType, Device, ErrorKind};

// ------------------------------------------------------------------ broadcasting

const BCAST: &str = "import triton
import triton.language as tl


@triton.jit
def bcast_kernel(out_ptr, A0: tl.constexpr, A1: tl.constexpr, B0: tl.constexpr, B1: tl.constexpr,
                 RANK_B: tl.constexpr, EXPLICIT: tl.constexpr, O0: tl.constexpr, O1: tl.constexpr):
    # a[i, j] = 16 * i + j, shape (A0, A1)
    a = tl.expand_dims(tl.arange(0, A0), 1) * 16 + tl.expand_dims(tl.arange(0, A1), 0)
    if RANK_B == 1:
        # b[j] = 1000 * j, shape (B1,)
        b = tl.arange(0, B1) * 1000
    else:
        # b[i, j] = 100000 * i + 1000 * j, shape (B0, B1)
        b = tl.expand_dims(tl.arange(0, B0), 1) * 100000 + tl.expand_dims(tl.arange(0, B1), 0) * 1000
    if EXPLICIT:
        a, b = tl.broadcast(a, b)
    c = a + b
    offs = tl.expand_dims(tl.arange(0, O0), 1) * O1 + tl.expand_dims(tl.arange(0, O1), 0)
    tl.store(out_ptr + offs, c)
";

/// NumPy's rule on two shapes (right-aligned; equal or one of them 1).
fn broadcast_shape(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let rank = a.len().max(b.len());
    let pad = |s: &[u32]| -> Vec<u32> {
        std::iter::repeat_n(1, rank - s.len())
            .chain(s.iter().copied())
            .collect()
    };
    let (a, b) = (pad(a), pad(b));
    a.iter()
        .zip(&b)
        .map(|(&x, &y)| match (x, y) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn pow2() -> impl Strategy<Value = u32> {
    prop_oneof![Just(1u32), Just(2), Just(4), Just(8)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn broadcasting_matches_numpy(a0 in pow2(), a1 in pow2(), b0 in pow2(), b1 in pow2(),
                                  rank_b in 1u32..=2, explicit in any::<bool>()) {
        let a_shape = [a0, a1];
        let b_shape: Vec<u32> = if rank_b == 1 { vec![b1] } else { vec![b0, b1] };
        let dev = device();
        let m = module("bcast.py", BCAST);
        let k = ok(m.kernel("bcast_kernel"));
        let want_shape = broadcast_shape(&a_shape, &b_shape);
        let (o0, o1) = match &want_shape { Some(s) => (s[0], s[1]), None => (1, 1) };
        let out = filled(&dev, (o0 * o1) as usize, i32::MIN);
        let r = k.launch(&dev, 1).arg(&out)
            .constexpr("A0", a0).constexpr("A1", a1).constexpr("B0", b0).constexpr("B1", b1)
            .constexpr("RANK_B", rank_b).constexpr("EXPLICIT", explicit)
            .constexpr("O0", o0).constexpr("O1", o1)
            .run();
        match want_shape {
            Some(_) => {
                if let Err(e) = &r { panic!("{a_shape:?} + {b_shape:?} should broadcast:\n{}", e.render()); }
                let got: Vec<i32> = ok(dev.download(&out));
                let b_full = if rank_b == 1 { [1, b1] } else { [b0, b1] };
                for i in 0..o0 {
                    for j in 0..o1 {
                        let (ai, aj) = (if a0 == 1 { 0 } else { i }, if a1 == 1 { 0 } else { j });
                        let (bi, bj) = (if b_full[0] == 1 { 0 } else { i }, if b_full[1] == 1 { 0 } else { j });
                        let want = (16 * ai + aj + 100000 * bi + 1000 * bj) as i32;
                        prop_assert_eq!(got[(i * o1 + j) as usize], want, "({}, {}) of {:?} + {:?}", i, j, a_shape, b_shape);
                    }
                }
            }
            None => {
                let e = err(r);
                prop_assert_eq!(e.kind, ErrorKind::Shape, "{}", e.render());
                prop_assert!(e.line_col().is_some(), "{}", e.render());
                prop_assert_eq!(ok(dev.download::<i32>(&out)), vec![i32::MIN]);
            }
        }
    }
}

// ------------------------------------------------------------------ promotion

const PROMOTE: &str = "import triton
import triton.language as tl


@triton.jit
def promote_kernel(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    c = a + b
    tl.static_print(c.dtype)
    tl.store(out_ptr + offs, c)


@triton.jit
def literal_kernel(a_ptr, out_ptr, LIT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    c = a + LIT
    tl.static_print(c.dtype)
    tl.store(out_ptr + offs, c)


@triton.jit
def floordiv_kernel(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(out_ptr + offs, a // b)
";

const PROMO_TYPES: [DType; 8] = [
    DType::I8,
    DType::U8,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
];

/// Triton's promotion of two tensor dtypes (computation_type_impl), for `+`.
/// `div_or_mod` selects the rules of `/`, `//` and `%`; `None` is a type error.
fn promote(a: DType, b: DType, div_or_mod: bool) -> Option<DType> {
    use DType::*;
    let either = |d| a == d || b == d;
    if either(F64) {
        return Some(F64);
    }
    if either(F32) {
        return Some(F32);
    }
    if either(F16) {
        return Some(if div_or_mod { F32 } else { F16 });
    }
    if a == BF16 && b == BF16 {
        return Some(if div_or_mod { F32 } else { BF16 });
    }
    if either(BF16) {
        return Some(F32);
    }
    // Both integers.
    let (sa, sb) = (a.is_signed_int(), b.is_signed_int());
    if div_or_mod && sa != sb {
        return None;
    }
    Some(if sa == sb {
        if a.bits() >= b.bits() {
            a
        } else {
            b
        }
    } else {
        let (u, s) = if sa { (b, a) } else { (a, b) };
        if u.bits() >= s.bits() {
            u
        } else {
            s
        }
    })
}

/// Uploads `vals` (exact small integers) as `dtype`.
fn upload_as(dev: &Device, dtype: DType, vals: &[i64]) -> Buffer {
    let r = match dtype {
        DType::I8 => dev.upload(&vals.iter().map(|&v| v as i8).collect::<Vec<_>>()),
        DType::U8 => dev.upload(&vals.iter().map(|&v| v as u8).collect::<Vec<_>>()),
        DType::I32 => dev.upload(&vals.iter().map(|&v| v as i32).collect::<Vec<_>>()),
        DType::U32 => dev.upload(&vals.iter().map(|&v| v as u32).collect::<Vec<_>>()),
        DType::I64 => dev.upload(vals),
        DType::F16 => dev.upload(
            &vals
                .iter()
                .map(|&v| f16::from_f64(v as f64))
                .collect::<Vec<_>>(),
        ),
        DType::BF16 => dev.upload(
            &vals
                .iter()
                .map(|&v| bf16::from_f64(v as f64))
                .collect::<Vec<_>>(),
        ),
        DType::F32 => dev.upload(&vals.iter().map(|&v| v as f32).collect::<Vec<_>>()),
        DType::F64 => dev.upload(&vals.iter().map(|&v| v as f64).collect::<Vec<_>>()),
        other => panic!("no upload for {other}"),
    };
    ok(r)
}

/// Downloads as `dtype`, each element widened to i128 bits-preserving for integers
/// (as the unsigned or signed value) or to f64 (as an integer-valued float).
fn download_as(dev: &Device, dtype: DType, buf: &Buffer) -> Vec<f64> {
    match dtype {
        DType::I8 => ok(dev.download::<i8>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::U8 => ok(dev.download::<u8>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::I32 => ok(dev.download::<i32>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::U32 => ok(dev.download::<u32>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::I64 => ok(dev.download::<i64>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::F16 => ok(dev.download::<f16>(buf))
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        DType::BF16 => ok(dev.download::<bf16>(buf))
            .into_iter()
            .map(|v| v.to_f64())
            .collect(),
        DType::F32 => ok(dev.download::<f32>(buf))
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::F64 => ok(dev.download::<f64>(buf)).into_iter().collect(),
        other => panic!("no download for {other}"),
    }
}

/// The exact integer `v` as stored in `dtype`: wrapped for integers.
fn wrap_to(dtype: DType, v: i64) -> f64 {
    match dtype {
        DType::I8 => v as i8 as f64,
        DType::U8 => v as u8 as f64,
        DType::I32 => v as i32 as f64,
        DType::U32 => v as u32 as f64,
        DType::I64 => v as f64,
        _ => v as f64,
    }
}

/// The dtype a `tl.static_print(x.dtype)` line names, accepting either spelling
/// (`f32`, `fp32`, `float32`, `tl.float32`); `None` if it names none or several.
fn printed_dtype(line: &str) -> Option<DType> {
    let found: Vec<DType> = line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter_map(DType::from_name)
        .collect();
    match found.as_slice() {
        [d] => Some(*d),
        [d, rest @ ..] if rest.iter().all(|r| r == d) => Some(*d),
        _ => None,
    }
}

/// Values that are exact in every type of PROMO_TYPES (and whose sums are too).
fn small_values(dtype: DType, rng: &mut Rng, n: usize) -> Vec<i64> {
    (0..n)
        .map(|_| {
            if dtype.is_unsigned_int() {
                rng.int(0, 100)
            } else {
                rng.int(-50, 50)
            }
        })
        .collect()
}

fn check_promotion(ta: DType, tb: DType, seed: u64) -> Result<(), TestCaseError> {
    let want = promote(ta, tb, false).expect("+ always promotes");
    let dev = device();
    let m = module("promote.py", PROMOTE);
    let k = ok(m.kernel("promote_kernel"));
    let mut rng = Rng::new(seed);
    let (va, vb) = (
        small_values(ta, &mut rng, 16),
        small_values(tb, &mut rng, 16),
    );
    let (a, b) = (upload_as(&dev, ta, &va), upload_as(&dev, tb, &vb));
    // Poison: a value no sum reaches in any type (sums are integers in [-100, 200]).
    let poison: Vec<i64> = vec![if want.is_float() { 1000 } else { 121 }; 16];
    let out = upload_as(&dev, want, &poison);
    let launch = k
        .launch(&dev, 1)
        .arg(&a)
        .arg(&b)
        .arg(&out)
        .constexpr("BLOCK", 16);
    let compiled = ok(launch.compile());
    let prints = compiled.static_prints();
    prop_assert_eq!(prints.len(), 1, "{:?}", prints);
    prop_assert_eq!(
        printed_dtype(&prints[0]),
        Some(want),
        "{} + {}: printed {:?}",
        ta,
        tb,
        prints[0]
    );
    ok(launch.run());
    let got = download_as(&dev, want, &out);
    for i in 0..16 {
        // Operands are converted to `want` first: exact for these values, or wrapped.
        let exact = wrap_to(ta, va[i]) as i64 + wrap_to(tb, vb[i]) as i64;
        let expect = if want.is_float() {
            wrap_to(ta, va[i]) + wrap_to(tb, vb[i])
        } else {
            wrap_to(want, exact)
        };
        prop_assert_eq!(
            got[i],
            expect,
            "{} + {} at {}: {} + {}",
            ta,
            tb,
            i,
            va[i],
            vb[i]
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn promotion_follows_triton(ia in 0usize..8, ib in 0usize..8, seed in any::<u64>()) {
        check_promotion(PROMO_TYPES[ia], PROMO_TYPES[ib], seed)?;
    }
}

#[test]
fn promotion_table_is_complete() {
    // Every pair, once, deterministically (the proptest samples them).
    for (i, &ta) in PROMO_TYPES.iter().enumerate() {
        for &tb in &PROMO_TYPES {
            check_promotion(ta, tb, i as u64 + 1).unwrap();
        }
    }
}

#[test]
fn promotion_model_sanity() {
    use DType::*;
    assert_eq!(promote(I8, U8, false), Some(U8));
    assert_eq!(promote(U8, I32, false), Some(I32));
    assert_eq!(promote(U32, I32, false), Some(U32));
    assert_eq!(promote(I64, U32, false), Some(I64));
    assert_eq!(promote(BF16, I32, false), Some(F32));
    assert_eq!(promote(BF16, F16, false), Some(F16));
    assert_eq!(promote(BF16, BF16, false), Some(BF16));
    assert_eq!(promote(F16, F16, true), Some(F32));
    assert_eq!(promote(I32, U32, true), None);
}

#[test]
fn literals_do_not_participate_unless_of_a_higher_kind() {
    let dev = device();
    let m = module("promote.py", PROMOTE);
    let k = ok(m.kernel("literal_kernel"));
    let cases: [(DType, tilewise::ConstValue, DType, f64); 6] = [
        (DType::I8, 1i64.into(), DType::I8, 1.0),
        (DType::U8, 3i64.into(), DType::U8, 3.0),
        (DType::I8, 1.5f64.into(), DType::F32, 1.5),
        (DType::F16, 2.0f64.into(), DType::F16, 2.0),
        (DType::BF16, 2i64.into(), DType::BF16, 2.0),
        (DType::I32, true.into(), DType::I32, 1.0),
    ];
    let mut rng = Rng::new(5);
    for (ta, lit, want, litv) in cases {
        let va = small_values(ta, &mut rng, 16);
        let a = upload_as(&dev, ta, &va);
        let out = upload_as(&dev, want, &[121; 16]);
        let launch = k
            .launch(&dev, 1)
            .arg(&a)
            .arg(&out)
            .constexpr("LIT", lit.clone())
            .constexpr("BLOCK", 16);
        let compiled = ok(launch.compile());
        assert_eq!(
            printed_dtype(&compiled.static_prints()[0]),
            Some(want),
            "{ta} + {lit}: {:?}",
            compiled.static_prints()
        );
        ok(launch.run());
        let got = download_as(&dev, want, &out);
        for i in 0..16 {
            assert_eq!(got[i], va[i] as f64 + litv, "{ta} + {lit} at {i}");
        }
    }
}

#[test]
fn mixed_signedness_floordiv_is_a_type_error() {
    let dev = device();
    let m = module("promote.py", PROMOTE);
    let k = ok(m.kernel("floordiv_kernel"));
    let a = upload_as(&dev, DType::I32, &[7; 16]);
    let b = upload_as(&dev, DType::U32, &[2; 16]);
    let out = upload_as(&dev, DType::I32, &[0; 16]);
    let e = err(k
        .launch(&dev, 1)
        .arg(&a)
        .arg(&b)
        .arg(&out)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.render());
    assert_eq!(
        e.line_col(),
        Some(line_col_of(PROMOTE, "a // b", 0)),
        "{}",
        e.render()
    );
    // Same signedness is fine.
    let b = upload_as(&dev, DType::I32, &[2; 16]);
    ok(k.launch(&dev, 1)
        .arg(&a)
        .arg(&b)
        .arg(&out)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(ok(dev.download::<i32>(&out)), vec![3; 16]);
}

// ------------------------------------------------------------------ C division

const DIVMOD: &str = "import triton
import triton.language as tl


@triton.jit
def divmod_kernel(a_ptr, b_ptr, q_ptr, r_ptr, d, qs_ptr, rs_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    b = tl.load(b_ptr + offs)
    tl.store(q_ptr + offs, a // b)
    tl.store(r_ptr + offs, a % b)
    # Tile by runtime scalar.
    tl.store(qs_ptr + offs, a // d)
    tl.store(rs_ptr + offs, a % d)
";

fn nonzero_i32() -> impl Strategy<Value = i32> {
    prop_oneof![1i32..=i32::MAX, i32::MIN..=-1, -20i32..=-1, 1i32..=20]
}

fn dividend() -> impl Strategy<Value = i32> {
    prop_oneof![any::<i32>(), -1000i32..=1000]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn integer_division_truncates_like_c(
        pairs in proptest::collection::vec((dividend(), nonzero_i32()), 16),
        d in nonzero_i32(),
    ) {
        // i32::MIN / -1 overflows (undefined in C): keep it out.
        let pairs: Vec<(i32, i32)> =
            pairs.into_iter().map(|(a, b)| if a == i32::MIN && b == -1 { (a, 1) } else { (a, b) }).collect();
        let d = if d == -1 { 1 } else { d };
        let a: Vec<i32> = pairs.iter().map(|p| p.0).map(|v| if v == i32::MIN && d == -1 { 0 } else { v }).collect();
        let b: Vec<i32> = pairs.iter().map(|p| p.1).collect();
        let dev = device();
        let m = module("divmod.py", DIVMOD);
        let k = ok(m.kernel("divmod_kernel"));
        let (ab, bb) = (ok(dev.upload(&a)), ok(dev.upload(&b)));
        let bufs: Vec<Buffer> = (0..4).map(|_| filled(&dev, 16, 0x5A5A_5A5Ai32)).collect();
        ok(k.launch(&dev, 1)
            .arg(&ab).arg(&bb).arg(&bufs[0]).arg(&bufs[1]).arg(d).arg(&bufs[2]).arg(&bufs[3])
            .constexpr("BLOCK", 16)
            .run());
        let got: Vec<Vec<i32>> = bufs.iter().map(|b| ok(dev.download::<i32>(b))).collect();
        for i in 0..16 {
            prop_assert_eq!(got[0][i], a[i] / b[i], "{} // {}", a[i], b[i]);
            prop_assert_eq!(got[1][i], a[i] % b[i], "{} % {}", a[i], b[i]);
            prop_assert_eq!(got[2][i], a[i] / d, "{} // {}", a[i], d);
            prop_assert_eq!(got[3][i], a[i] % d, "{} % {}", a[i], d);
        }
    }
}

#[test]
fn division_by_negative_examples() {
    // The cases where C and Python disagree, spelled out.
    let dev = device();
    let m = module("divmod.py", DIVMOD);
    let k = ok(m.kernel("divmod_kernel"));
    let a: Vec<i32> = [-7, 7, -7, 7, -1, 1, -8, 8, 0, -5, 5, -9, 9, -3, 3, 100].to_vec();
    let b: Vec<i32> = [2, -2, -2, 2, 2, -2, 3, -3, 5, 5, -5, 4, -4, 7, -7, -9].to_vec();
    let (ab, bb) = (ok(dev.upload(&a)), ok(dev.upload(&b)));
    let bufs: Vec<Buffer> = (0..4).map(|_| filled(&dev, 16, 0x5A5A_5A5Ai32)).collect();
    ok(k.launch(&dev, 1)
        .arg(&ab)
        .arg(&bb)
        .arg(&bufs[0])
        .arg(&bufs[1])
        .arg(-3i32)
        .arg(&bufs[2])
        .arg(&bufs[3])
        .constexpr("BLOCK", 16)
        .run());
    let q = ok(dev.download::<i32>(&bufs[0]));
    let r = ok(dev.download::<i32>(&bufs[1]));
    assert_eq!(&q[..4], &[-3, -3, 3, 3]);
    assert_eq!(&r[..4], &[-1, 1, -1, 1]);
    let qs = ok(dev.download::<i32>(&bufs[2]));
    let rs = ok(dev.download::<i32>(&bufs[3]));
    for i in 0..16 {
        assert_eq!(
            (q[i], r[i]),
            (a[i] / b[i], a[i] % b[i]),
            "{} / {}",
            a[i],
            b[i]
        );
        assert_eq!((qs[i], rs[i]), (a[i] / -3, a[i] % -3), "{} / -3", a[i]);
    }
}

// ------------------------------------------------------------ loop-carried variables

/// One statement of a generated loop body over the variables `v0..v4`.
#[derive(Clone, Debug)]
enum Assign {
    /// `v{dst} = v{src}`
    Copy(usize, usize),
    /// `v{dst} = v{src} + c`
    AddConst(usize, usize, i32),
    /// `v{dst} = v{a} * 2 - v{b}`
    Combine(usize, usize, usize),
    /// `v{dst} = i + c` (the loop counter)
    Counter(usize, i32),
}

const VARS: usize = 5;

impl Assign {
    fn python(&self) -> String {
        match self {
            Assign::Copy(d, s) => format!("v{d} = v{s}"),
            Assign::AddConst(d, s, c) => format!("v{d} = v{s} + {c}"),
            Assign::Combine(d, a, b) => format!("v{d} = v{a} * 2 - v{b}"),
            Assign::Counter(d, c) => format!("v{d} = i + {c}"),
        }
    }

    /// Python's meaning on `v` (32-bit wrapping, as the kernel's i32 values).
    fn apply(&self, v: &mut [i32; VARS], i: i32) {
        match *self {
            Assign::Copy(d, s) => v[d] = v[s],
            Assign::AddConst(d, s, c) => v[d] = v[s].wrapping_add(c),
            Assign::Combine(d, a, b) => v[d] = v[a].wrapping_mul(2).wrapping_sub(v[b]),
            Assign::Counter(d, c) => v[d] = i.wrapping_add(c),
        }
    }
}

fn assign() -> impl Strategy<Value = Assign> {
    let var = 0..VARS;
    prop_oneof![
        (var.clone(), var.clone()).prop_map(|(d, s)| Assign::Copy(d, s)),
        (var.clone(), var.clone(), -3i32..=3).prop_map(|(d, s, c)| Assign::AddConst(d, s, c)),
        (var.clone(), var.clone(), var.clone()).prop_map(|(d, a, b)| Assign::Combine(d, a, b)),
        (var, -2i32..=2).prop_map(|(d, c)| Assign::Counter(d, c)),
    ]
}

/// The kernel: the variables start as Python numbers (several equal, so that a copy
/// on the first trip leaves a value unchanged), the body runs `n` times in a `for`
/// (`WHILE` false) or a `while` on its own counter, and every variable is stored.
fn loop_kernel(inits: &[i32; VARS], body: &[Assign], while_loop: bool) -> String {
    let mut src = String::from(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef carried(out_ptr, n):\n",
    );
    for (k, x) in inits.iter().enumerate() {
        src += &format!("    v{k} = {x}\n");
    }
    let indent = if while_loop {
        src += "    i = 0\n    while i < n:\n";
        "        "
    } else {
        src += "    for i in range(n):\n";
        "        "
    };
    for a in body {
        src += &format!("{indent}{}\n", a.python());
    }
    if while_loop {
        src += "        i += 1\n";
    }
    for k in 0..VARS {
        src += &format!("    tl.store(out_ptr + {k}, v{k})\n");
    }
    src
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Every variable assigned in a loop and defined before it holds, after the loop,
    /// what Python's semantics give, however the body copies values between them
    /// (`o1 = o0; o0 = x` carries both: the first trip leaves `o1` as it was). Before
    /// the fix, names whose first trip left their value unchanged (a copy of an equal
    /// number, of a name assigned later in the body) were not carried.
    #[test]
    fn loop_carried_variables_follow_python(
        inits in proptest::array::uniform5(prop_oneof![Just(0i32), Just(1), -2i32..=2]),
        body in proptest::collection::vec(assign(), 1..9),
        trips in 0i32..6,
        while_loop in any::<bool>(),
    ) {
        let mut want = inits;
        for i in 0..trips {
            for a in &body {
                a.apply(&mut want, i);
            }
        }
        let src = loop_kernel(&inits, &body, while_loop);
        let dev = device();
        let m = module("carried.py", &src);
        let k = ok(m.kernel("carried"));
        let out = filled(&dev, VARS, 0x5A5A_5A5Ai32);
        ok(k.launch(&dev, 1).arg(&out).arg(trips).run());
        let got = ok(dev.download::<i32>(&out));
        prop_assert_eq!(&got[..], &want[..], "{}", src);
    }
}
