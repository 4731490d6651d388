//! Robustness of the front end and of launches (the "differential fuzzer" issue): random
//! and mutated source text and random launch arguments never panic; every outcome is
//! `Ok` or a [`Diagnostic`] whose rendering does not panic either, and none is an
//! [`ErrorKind::Internal`] error.
//!
//! Four property tests, each over a fixed seed (CI is reproducible):
//!
//! - `mutated_kernels_never_panic`: real kernels (`shaders/*.py` and the inline ones
//!   below: loops, reductions, block pointers, `dot`, atomics, `while`, jit helpers)
//!   mutated at the line, token and byte level (lines and spans deleted, duplicated,
//!   swapped or re-indented; identifiers, numbers, dtypes and operators replaced from
//!   pools of hostile values; random unicode inserted; truncation), then parsed; every
//!   jit function is compiled with arguments inferred from its signature (sometimes
//!   perturbed), its WGSL (validated by naga) and PTX are generated, and, where the
//!   program is sure to end quickly, it runs on the interpreter (plain and checked) and
//!   the WGSL and PTX simulators.
//! - `random_launches_never_panic`: the unmutated kernels launched with random
//!   arguments: too few or too many, every dtype, scalars for pointers and back, empty
//!   buffers and slices, missing / repeated / unknown / ill-typed constexprs,
//!   non-power-of-two sizes, `num_warps` of 0, 3 or 64, grids with zero or huge
//!   dimensions (launches of more than 64 programs are only compiled;
//!   `huge_grids_are_rejected_or_fail_fast` launches them).
//! - `random_text_never_panics`: arbitrary unicode and Python-ish token soup, alone or
//!   as the body of a jit function, through `Module::parse` and tracing.
//! - `generated_kernels_never_panic`: kernels built from a small grammar of Triton-ish
//!   expressions and statements (most parse and many trace, so tracing and the
//!   executors see far more than the token soup reaches).
//!
//! Regular `#[test]`s after them pin the launch rules and each problem the fuzzing
//! found.
//!
//! Runaway programs are avoided rather than timed out: a mutant runs only when no line
//! that decides a loop's trip count was touched (see [`loop_safe`]), every tile of its
//! traced IR is small and its scalar arguments are small; huge grids only go to a
//! kernel that fails in its first program. Each property still runs in a forked child
//! with a timeout per case, so a hang or an abort (stack overflow, out of memory) fails
//! with its input instead of stalling or killing the run.
//!
//! More cases (any seed is as reproducible as the default one); keep-going mode prints
//! every finding instead of stopping at the first; overflow checks and debug
//! assertions in the library find more (the `atomic_cas` finding below needed them):
//!
//! ```sh
//! PROPTEST_CASES=5000 cargo test --release --test robustness
//! PROPTEST_CASES=5000 PROPTEST_RNG_SEED=12345 cargo test --release --test robustness
//! TILEWISE_FUZZ_KEEP_GOING=1 PROPTEST_CASES=20000 cargo test --release --test robustness \
//!     --config 'profile.release.package.tilewise-core.overflow-checks=true' \
//!     --config 'profile.release.package.tilewise-core.debug-assertions=true' \
//!     -- --nocapture 2>&1 | grep -A30 FOUND
//! ```

mod common;

use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngSeed};
use std::panic::{catch_unwind, AssertUnwindSafe};
use tilewise::core::launch::ScalarValue;
use tilewise::{Arg, ConstValue, DType, Device, Diagnostic, ErrorKind, Grid, Kernel, Module};

// ---------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------

/// Cases a property runs by default; `PROPTEST_CASES` overrides it.
const DEFAULT_CASES: u32 = 1024;
/// The seed used unless `PROPTEST_RNG_SEED` names another.
const DEFAULT_SEED: u64 = 0x7111_E715_E000_0001;

/// `TILEWISE_FUZZ_KEEP_GOING=1`: print every panic and internal error on stderr and
/// carry on, to collect many findings from one long run.
fn keep_going() -> bool {
    std::env::var_os("TILEWISE_FUZZ_KEEP_GOING").is_some()
}

fn config(cases_scale: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES * cases_scale);
    let seed = std::env::var("PROPTEST_RNG_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    ProptestConfig {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 200,
        // A case that hangs or aborts (stack overflow, out of memory) fails with its
        // input instead of stalling or killing the whole run. Keep-going mode runs in
        // process (a timeout would fork).
        fork: !keep_going(),
        timeout: if keep_going() { 0 } else { 60_000 },
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// The kernels mutated and launched
// ---------------------------------------------------------------------------------------

const HEADER: &str = "import triton\nimport triton.language as tl\n\n\n";

/// Loops, reductions (sum, max, argmax, cumsum), a row walked in chunks.
const ROW_STATS: &str = r#"
@triton.jit
def row_stats(x_ptr, out_ptr, idx_ptr, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    best = tl.full([BLOCK], -float("inf"), tl.float32)
    for off in range(0, n_cols, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += x
        best = tl.maximum(best, x)
    total = tl.sum(acc, axis=0)
    i = tl.argmax(best, axis=0)
    tl.store(out_ptr + row, total + tl.max(best, axis=0))
    tl.store(idx_ptr + row, i.to(tl.float32))
    c = tl.cumsum(acc, axis=0)
    tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), c)
"#;

/// Block pointers carried through a loop, boundary checks, padding.
const BLOCK_COPY: &str = r#"
@triton.jit
def block_copy(src_ptr, dst_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(base=src_ptr, shape=(M, N), strides=(stride_m, 1),
                            offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                            order=(1, 0))
    dst = tl.make_block_ptr(base=dst_ptr, shape=(M, N), strides=(stride_m, 1),
                            offsets=(pid * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_N),
                            order=(1, 0))
    for _ in range(0, tl.cdiv(N, BLOCK_N)):
        t = tl.load(src, boundary_check=(0, 1), padding_option="zero")
        tl.store(dst, tl.trans(tl.trans(t)) * 2.0, boundary_check=(0, 1))
        src = tl.advance(src, (0, BLOCK_N))
        dst = tl.advance(dst, (0, BLOCK_N))
"#;

/// `dot` in f16 and f32, broadcasting, `reshape`, `where`.
const SMALL_DOT: &str = r#"
@triton.jit
def small_dot(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    idx = r[:, None] * BLOCK + r[None, :]
    a = tl.load(a_ptr + idx)
    b = tl.load(b_ptr + idx)
    c = tl.dot(a.to(tl.float16), b.to(tl.float16))
    c = tl.dot(a, b, c, input_precision="ieee")
    c = tl.where(c > 0, c, 0.0)
    flat = tl.reshape(c, (BLOCK * BLOCK,))
    tl.store(c_ptr + tl.arange(0, BLOCK * BLOCK), flat)
"#;

/// Atomics: add with a mask, max on a scalar, compare-and-swap, exchange.
const ATOMICS: &str = r#"
@triton.jit
def histogram(x_ptr, hist_ptr, flag_ptr, n, BINS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    b = (x * BINS).to(tl.int32) % BINS
    tl.atomic_add(hist_ptr + b, 1.0, mask=m)
    tl.atomic_max(hist_ptr + BINS, tl.max(x, axis=0))
    old = tl.atomic_cas(flag_ptr, 0, 1)
    tl.atomic_xchg(flag_ptr + 1, old + pid)
    tl.atomic_min(flag_ptr + 2 + tl.arange(0, 2), pid)
"#;

/// `while`, `if` on scalars and constexprs, `static_range`, jit helpers, `tl.reduce`,
/// `tl.associative_scan`.
const CONTROL: &str = r#"
@triton.jit
def _combine(a, b):
    return a + b


@triton.jit
def _bump(x, by: tl.constexpr = 1):
    return x + by


@triton.jit
def control(x_ptr, y_ptr, n, steps, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    i = 0
    while i < steps:
        x = x * 0.5 + 1.0
        i += 1
    if FLAG:
        x = _bump(x, 2)
    else:
        x = x - 1
    for j in tl.static_range(3):
        x = tl.where(x > j, x, -x)
    if n > 4:
        x = x * 2
    tl.static_assert(BLOCK > 0)
    s = tl.reduce(x, 0, _combine)
    c = tl.associative_scan(x, 0, _combine)
    tl.store(y_ptr + offs, c + s, mask=offs < n)
"#;

/// A kernel, the words that decide its loops' trip counts, and how to launch it.
struct Base {
    name: &'static str,
    source: String,
    /// Identifiers that appear in loop bounds or conditions (beyond `for`, `while`,
    /// `range`): a mutated line holding one of them may make a loop run away.
    loop_words: &'static [&'static str],
    /// The grid of a plausible launch.
    grid: [u32; 3],
}

fn bases() -> Vec<Base> {
    let inline = |s: &str| format!("{HEADER}{s}");
    vec![
        Base {
            name: "vector_add.py",
            source: include_str!("../shaders/vector_add.py").into(),
            loop_words: &[],
            grid: [2, 1, 1],
        },
        Base {
            name: "fused_softmax.py",
            source: include_str!("../shaders/fused_softmax.py").into(),
            loop_words: &[],
            grid: [2, 1, 1],
        },
        Base {
            name: "layer_norm.py",
            source: include_str!("../shaders/layer_norm.py").into(),
            loop_words: &["N", "BLOCK_SIZE", "off"],
            grid: [2, 1, 1],
        },
        Base {
            name: "matmul.py",
            source: include_str!("../shaders/matmul.py").into(),
            loop_words: &["K", "BLOCK_SIZE_K", "k"],
            grid: [1, 1, 1],
        },
        Base {
            name: "matmul_block_ptr.py",
            source: include_str!("../shaders/matmul_block_ptr.py").into(),
            loop_words: &["K", "BLOCK_K"],
            grid: [1, 1, 1],
        },
        Base {
            name: "swiglu.py",
            source: include_str!("../shaders/swiglu.py").into(),
            loop_words: &[],
            grid: [2, 1, 1],
        },
        Base {
            name: "row_stats.py",
            source: inline(ROW_STATS),
            loop_words: &["n_cols", "BLOCK", "off"],
            grid: [2, 1, 1],
        },
        Base {
            name: "block_copy.py",
            source: inline(BLOCK_COPY),
            loop_words: &["N", "BLOCK_N"],
            grid: [2, 1, 1],
        },
        Base {
            name: "small_dot.py",
            source: inline(SMALL_DOT),
            loop_words: &[],
            grid: [1, 1, 1],
        },
        Base {
            name: "histogram.py",
            source: inline(ATOMICS),
            loop_words: &[],
            grid: [2, 1, 1],
        },
        Base {
            name: "control.py",
            source: inline(CONTROL),
            loop_words: &["i", "steps"],
            grid: [1, 1, 1],
        },
    ]
}

// ---------------------------------------------------------------------------------------
// Launch arguments
// ---------------------------------------------------------------------------------------

/// Elements of every buffer a plausible launch binds: enough for every base kernel at
/// the default sizes (16x16 tiles, two programs).
const BUF_LEN: usize = 1024;

/// What a launch binds to one parameter.
#[derive(Clone, Debug)]
enum ArgPlan {
    Buffer {
        dtype: DType,
        len: usize,
        offset: usize,
    },
    Scalar(ScalarValue),
}

fn int(v: i64) -> ArgPlan {
    ArgPlan::Scalar(ScalarValue::Int(DType::I32, v))
}

fn f32_buffer() -> ArgPlan {
    ArgPlan::Buffer {
        dtype: DType::F32,
        len: BUF_LEN,
        offset: 0,
    }
}

/// The plausible argument for a parameter of the base kernels, by name.
fn plausible_arg(name: &str) -> Option<ArgPlan> {
    const BUFFERS: &[&str] = &[
        "x_ptr",
        "y_ptr",
        "output_ptr",
        "out_ptr",
        "idx_ptr",
        "input_ptr",
        "a_ptr",
        "b_ptr",
        "c_ptr",
        "gate_ptr",
        "up_ptr",
        "src_ptr",
        "dst_ptr",
        "hist_ptr",
        "X",
        "Y",
        "W",
        "B",
        "Mean",
        "Rstd",
    ];
    if BUFFERS.contains(&name) {
        return Some(f32_buffer());
    }
    if name == "flag_ptr" {
        return Some(ArgPlan::Buffer {
            dtype: DType::I32,
            len: 8,
            offset: 0,
        });
    }
    if name == "eps" {
        return Some(ArgPlan::Scalar(ScalarValue::Float(DType::F32, 1e-5)));
    }
    let v = match name {
        "n_elements" | "n" => 40,
        "n_rows" => 2,
        "n_cols" | "N" | "M" | "K" => 16,
        "steps" => 3,
        "stride_ak" | "stride_bn" | "stride_cn" => 1,
        s if s.contains("stride") => 16,
        _ => return None,
    };
    Some(int(v))
}

/// The plausible value of a constexpr of the base kernels, by name.
fn plausible_constexpr(name: &str) -> Option<ConstValue> {
    Some(match name {
        "GROUP_SIZE_M" => ConstValue::Int(1),
        "BINS" => ConstValue::Int(8),
        "FLAG" => ConstValue::Bool(true),
        "ACTIVATION" => ConstValue::Str(String::new()),
        n if n.starts_with("BLOCK") => ConstValue::Int(16),
        _ => return None,
    })
}

/// Scalars small enough to bound every loop of the base kernels.
const SMALL_INTS: &[i64] = &[0, 1, -1, 2, 3, 5, 16, 17, 31, 64];
/// Hostile integers: only for launches that never reach a loop.
const HUGE_INTS: &[i64] = &[
    i32::MAX as i64,
    i32::MIN as i64,
    i32::MAX as i64 + 1,
    u32::MAX as i64,
    i64::MAX,
    i64::MIN,
    1 << 40,
];
const DTYPES: &[DType] = &[
    DType::I1,
    DType::I8,
    DType::I16,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
];

fn pick<'a, T>(rng: &mut common::Rng, xs: &'a [T]) -> &'a T {
    &xs[rng.next_u64() as usize % xs.len()]
}

fn chance(rng: &mut common::Rng, one_in: u64) -> bool {
    rng.next_u64().is_multiple_of(one_in)
}

fn random_scalar(rng: &mut common::Rng, huge: bool) -> ScalarValue {
    let dtype = *pick(rng, DTYPES);
    let v = if huge && chance(rng, 2) {
        *pick(rng, HUGE_INTS)
    } else {
        *pick(rng, SMALL_INTS)
    };
    // Without `huge`, values stay small whatever the dtype: a float or an unsigned
    // integer used as a loop bound must not be huge (-1 as u32 is 2^32 - 1).
    let floats: &[f64] = if huge {
        &[0.5, -0.0, f64::NAN, f64::INFINITY, 1e300]
    } else {
        &[0.5, -0.0, f64::NAN, -1e300]
    };
    match dtype {
        DType::I1 => ScalarValue::Bool(v & 1 == 1),
        d if d.is_float() => ScalarValue::Float(
            d,
            if chance(rng, 2) {
                v as f64
            } else {
                *pick(rng, floats)
            },
        ),
        d if d.is_unsigned_int() && !huge => ScalarValue::Int(d, v.abs()),
        d => ScalarValue::Int(d, v),
    }
}

fn random_buffer(rng: &mut common::Rng) -> ArgPlan {
    let dtype = if chance(rng, 2) {
        DType::F32
    } else {
        *pick(rng, DTYPES)
    };
    let len = *pick(rng, &[BUF_LEN, BUF_LEN, 0, 1, 17, 255]);
    let offset = *pick(rng, &[0, 0, 0, 1, 3, 4, 2000]);
    ArgPlan::Buffer { dtype, len, offset }
}

fn random_constexpr(rng: &mut common::Rng, loop_safe: bool) -> ConstValue {
    match rng.next_u64() % 12 {
        0 => ConstValue::Float(*pick(rng, &[16.0, 0.5, f64::NAN])),
        1 => ConstValue::Bool(chance(rng, 2)),
        2 => ConstValue::Str(pick(rng, &["", "leaky_relu", "é"]).to_string()),
        3 => ConstValue::DType(*pick(rng, DTYPES)),
        4 => ConstValue::None,
        5 => ConstValue::Tuple(vec![ConstValue::Int(16), ConstValue::Int(3)]),
        6 if !loop_safe => ConstValue::Int(*pick(rng, HUGE_INTS)),
        6 => ConstValue::Int(1 << 20),
        _ => ConstValue::Int(*pick(rng, &[16, 16, 32, 1, 2, 0, -16, 3, 12, 24, 48, 64])),
    }
}

/// A launch: grid, positional arguments, constexprs, warps.
#[derive(Clone, Debug)]
struct LaunchPlan {
    grid: Grid,
    args: Vec<ArgPlan>,
    constexprs: Vec<(String, ConstValue)>,
    num_warps: u32,
}

/// The plausible launch of `kernel` (names it does not know get a guess), perturbed
/// by `rng` with probability `1 / calm` per decision (`calm == 0`: not at all).
/// `huge` allows hostile scalars and grids (only for kernels without loops).
fn plan_launch(
    sig: &tilewise::core::frontend::Signature,
    grid: [u32; 3],
    rng: &mut common::Rng,
    calm: u64,
    huge: bool,
) -> LaunchPlan {
    let wild = |rng: &mut common::Rng| calm != 0 && chance(rng, calm);
    let mut plan = LaunchPlan {
        grid: Grid(grid),
        args: vec![],
        constexprs: vec![],
        num_warps: 4,
    };
    for p in &sig.params {
        if p.constexpr {
            if p.has_default && (plausible_constexpr(&p.name).is_none() || wild(rng)) {
                continue;
            }
            if wild(rng) && chance(rng, 3) {
                continue; // missing
            }
            let v = match plausible_constexpr(&p.name) {
                Some(v) if !wild(rng) => v,
                _ => random_constexpr(rng, !huge),
            };
            plan.constexprs.push((p.name.clone(), v));
            if wild(rng) && chance(rng, 4) {
                // Given twice, the second ill-typed.
                plan.constexprs
                    .push((p.name.clone(), random_constexpr(rng, !huge)));
            }
            continue;
        }
        let a = match plausible_arg(&p.name) {
            Some(a) if !wild(rng) => a,
            Some(ArgPlan::Buffer { .. }) if chance(rng, 2) => random_buffer(rng),
            Some(ArgPlan::Scalar(_)) if chance(rng, 2) => ArgPlan::Scalar(random_scalar(rng, huge)),
            _ => {
                if p.name.contains("ptr") || chance(rng, 2) {
                    random_buffer(rng)
                } else {
                    ArgPlan::Scalar(random_scalar(rng, huge))
                }
            }
        };
        plan.args.push(a);
    }
    if wild(rng) {
        match rng.next_u64() % 6 {
            0 => {
                plan.args.pop();
            }
            1 => plan.args.push(ArgPlan::Scalar(random_scalar(rng, huge))),
            2 => plan.args.push(random_buffer(rng)),
            3 => {
                let name = *pick(rng, &["NOPE", "BLOCK", "x_ptr", "", "é"]);
                plan.constexpr_push(name, rng, huge)
            }
            4 => {
                if !plan.args.is_empty() {
                    let i = rng.next_u64() as usize % plan.args.len();
                    plan.args.remove(i);
                }
            }
            _ => plan.args.reverse(),
        }
    }
    if wild(rng) {
        plan.num_warps = *pick(rng, &[0, 1, 2, 3, 8, 16, 32, 64, u32::MAX]);
    }
    if wild(rng) {
        let small: &[[u32; 3]] = &[
            [0, 1, 1],
            [1, 0, 1],
            [1, 1, 0],
            [0, 0, 0],
            [3, 1, 1],
            [1, 2, 1],
            [1, 1, 2],
        ];
        let big: &[[u32; 3]] = &[
            [1 << 31, 1, 1],
            [u32::MAX, 1, 1],
            [1, u32::MAX, 1],
            [1, 1, 1 << 31],
            [65536, 65536, 65536],
            [0, u32::MAX, u32::MAX],
        ];
        plan.grid = Grid(if huge && chance(rng, 2) {
            *pick(rng, big)
        } else {
            *pick(rng, small)
        });
    }
    plan
}

impl LaunchPlan {
    fn constexpr_push(&mut self, name: &str, rng: &mut common::Rng, huge: bool) {
        self.constexprs
            .push((name.to_string(), random_constexpr(rng, !huge)));
    }
}

/// Allocates the plan's buffers on `dev` and binds them.
fn materialize(dev: &Device, plan: &LaunchPlan) -> tilewise::Result<Vec<Arg>> {
    let mut args = vec![];
    for (i, a) in plan.args.iter().enumerate() {
        args.push(match a {
            ArgPlan::Buffer { dtype, len, offset } => {
                let buf = if *dtype == DType::F32 {
                    let data: Vec<f32> = (0..*len)
                        .map(|k| ((k * 7 + i * 3) % 16) as f32 / 16.0)
                        .collect();
                    dev.upload(&data)?
                } else {
                    dev.alloc(*dtype, *len)?
                };
                if *offset == 0 {
                    Arg::from(&buf)
                } else {
                    Arg::from(buf.slice(*offset..*len))
                }
            }
            ArgPlan::Scalar(s) => Arg::Scalar(*s),
        });
    }
    Ok(args)
}

// ---------------------------------------------------------------------------------------
// Running without panicking
// ---------------------------------------------------------------------------------------

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

/// Runs `f`; a panic inside it, a panic while rendering its error, or an internal error
/// fails the test, naming `what` and showing `src`. Returns the result otherwise.
fn guarded<T>(what: &str, src: &str, f: impl FnOnce() -> tilewise::Result<T>) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            check_diagnostic(what, src, &e);
            None
        }
        Err(p) => {
            let msg = format!(
                "{what} panicked: {}\n--- source ---\n{src}\n--------------",
                panic_message(&*p)
            );
            if !keep_going() {
                panic!("{msg}");
            }
            eprintln!("FOUND: {msg}");
            None
        }
    }
}

fn check_diagnostic(what: &str, src: &str, e: &Diagnostic) {
    let rendered = match catch_unwind(AssertUnwindSafe(|| e.render())) {
        Ok(r) => r,
        Err(p) => panic!(
            "rendering the diagnostic of {what} panicked: {}\n{e:?}\n--- source ---\n{src}\n--------------",
            panic_message(&*p)
        ),
    };
    assert!(
        rendered.starts_with("error["),
        "{what}: odd rendering:\n{rendered}"
    );
    if keep_going() && e.kind == ErrorKind::Internal {
        eprintln!("FOUND: {what}: internal error:\n{rendered}\n--- source ---\n{src}\n----");
        return;
    }
    assert_ne!(
        e.kind,
        ErrorKind::Internal,
        "{what}: internal error:\n{rendered}\n--- source ---\n{src}\n--------------"
    );
}

/// Largest number of elements of any tile in a traced kernel.
fn max_tile_elems(k: &tilewise::core::ir::Kernel) -> u128 {
    k.values
        .iter()
        .map(|v| v.ty.shape().iter().map(|&d| d as u128).product::<u128>())
        .max()
        .unwrap_or(1)
}

/// Tiles up to this size are run; larger ones are only compiled.
const RUN_ELEMS: u128 = 4096;

/// The CPU executors: the interpreter (also in checked mode) and the simulators of
/// both GPU lowerings.
fn devices() -> [(&'static str, Device); 4] {
    [
        ("interpreter", Device::interpreter()),
        ("checked interpreter", Device::interpreter_checked()),
        ("simulator (WGSL)", Device::simulator()),
        ("simulator (PTX)", Device::simulator_ptx()),
    ]
}

/// Compiles `kernel` for `plan`, and runs it on the CPU executors when `run` and
/// its tiles are small. Never panics unless the library does.
fn exercise(kernel: &Kernel, plan: &LaunchPlan, src: &str, run: bool) {
    let name = kernel.name().to_string();
    let compile_dev = Device::interpreter();
    let compiled = guarded(&format!("compiling `{name}` ({plan:?})"), src, || {
        let args = materialize(&compile_dev, plan)?;
        let mut l = kernel
            .launch(&compile_dev, plan.grid)
            .args(args)
            .num_warps(plan.num_warps);
        for (n, v) in &plan.constexprs {
            l = l.constexpr(n, v.clone());
        }
        l.compile()
    });
    let Some(compiled) = compiled else {
        // Running fails as compiling did.
        return;
    };
    if max_tile_elems(compiled.ir()) > RUN_ELEMS {
        return;
    }
    // The code generators (no device needed): WGSL validated by naga, and PTX.
    guarded(&format!("WGSL of `{name}` ({plan:?})"), src, || {
        compiled.wgsl()
    });
    guarded(&format!("PTX of `{name}` ({plan:?})"), src, || {
        compiled.ptx()
    });
    // The run step adds the launch's own checks (grid, warps, buffer bounds) and the
    // executors.
    if !run {
        return;
    }
    for (dev_name, dev) in devices() {
        guarded(
            &format!("running `{name}` on the {dev_name} ({plan:?})"),
            src,
            || {
                let args = materialize(&dev, plan)?;
                let mut l = kernel
                    .launch(&dev, plan.grid)
                    .args(args)
                    .num_warps(plan.num_warps);
                for (n, v) in &plan.constexprs {
                    l = l.constexpr(n, v.clone());
                }
                l.run()
            },
        );
    }
}

/// Parses `src` and exercises every jit function with launches planned from `rng`.
fn parse_and_exercise(src: &str, rng: &mut common::Rng, grid: [u32; 3], calm: u64, run: bool) {
    let Some(module) = guarded("parsing", src, || Module::parse("fuzz.py", src)) else {
        return;
    };
    for name in module.kernel_names() {
        // Launching a helper (a jit function that returns a value) is one error path;
        // take it now and then only.
        if name.starts_with('_') && !chance(rng, 8) {
            continue;
        }
        let Some(kernel) = guarded(&format!("getting `{name}`"), src, || module.kernel(&name))
        else {
            continue;
        };
        let plan = plan_launch(kernel.signature(), grid, rng, calm, false);
        exercise(&kernel, &plan, src, run);
    }
}

// ---------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    Indent(usize, bool),
    DeleteSpan(usize, usize),
    DuplicateSpan(usize, usize),
    ReplaceWord(usize, usize),
    ReplaceNumber(usize, usize),
    ReplaceOperator(usize, usize),
    Insert(usize, String),
    Truncate(usize),
}

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "tl.float32", "tl.float16", "tl.bfloat16", "tl.float64", "tl.int1", "tl.int8",
    "tl.int16", "tl.int32", "tl.int64", "tl.uint8", "tl.uint16", "tl.uint32",
    "tl.uint64", "tl.float8e4nv", "tl.float8e5", "tl.void", "tl.pointer_type",
    "tl.tensor", "float32", "int", "float", "bool", "str", "x", "pid", "offs", "mask",
    "tl", "triton", "constexpr", "tl.constexpr", "program_id", "arange", "None", "True",
    "False", "lambda", "pass", "return", "yield", "del", "global", "nonlocal", "async",
    "await", "print", "len", "min", "max", "range", "tl.range", "tl.static_range",
    "tl.sum", "tl.max", "tl.dot", "tl.load", "tl.store", "tl.where", "tl.zeros",
    "tl.full", "tl.reshape", "tl.trans", "tl.permute", "tl.cdiv", "tl.static_assert",
    "tl.static_print", "tl.device_assert", "tl.device_print", "tl.multiple_of",
    "tl.max_contiguous", "tl.max_constancy", "tl.make_block_ptr", "tl.advance",
    "tl.atomic_add", "tl.atomic_cas", "tl.atomic_max", "tl.cumsum", "tl.cumprod",
    "tl.argmax", "tl.argmin", "tl.reduce", "tl.associative_scan", "tl.num_programs",
    "tl.expand_dims", "tl.broadcast_to", "tl.clamp", "tl.sqrt", "tl.exp",
    "tl.math.exp2", "tl.sigmoid", "tl.softmax", "tl.split", "tl.join", "tl.interleave",
    "tl.histogram", "tl.rand", "tl.inline_asm_elementwise", "triton.next_power_of_2",
    "triton.cdiv", "tl.extra.libdevice.pow", "__import__", "self", "_", "é", "𝔘nicode",
    "dtype", "element_ty", "shape", "T", "to", "axis", "keep_dims", "mask", "other",
    "boundary_check", "padding_option", "eviction_policy", "cache_modifier",
    "num_stages", "input_precision", "out_dtype", "acc", "sem", "scope",
];

#[rustfmt::skip]
const NUMBERS: &[&str] = &[
    "0", "-1", "1", "2", "3", "12", "17", "100", "1024", "4096", "65536", "1048576",
    "2097152", "2147483647", "2147483648", "-2147483648", "-2147483649", "4294967296",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "99999999999999999999999999999", "0.0", "-0.0", "0.5", "1e308", "1e309", "-1e309",
    "1e-320", "0x7fffffff", "0xffffffffffffffff", "0b1011", "0o17", "1_000",
    "float('nan')", "float('inf')", "-float('inf')", "True", "None", "2**31", "2**63",
    "2**64", "10**100", "-(2**63)", "1 << 62", "1 << 64", "3j", "'str'", "b'bytes'",
    "(1, 2)", "()", "[16]", "(16, 16, 16, 16, 16)",
];

#[rustfmt::skip]
const OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "@", "<<", ">>", "&", "|", "^", "~", "<", ">",
    "<=", ">=", "==", "!=", "=", "+=", "-=", "*=", "//=", ":", ",", ".", "(", ")", "[",
    "]", " and ", " or ", " not ", " is ", " in ", " if ", " else ", "->", ";", "\\",
    ":=", "...", "",
];

#[rustfmt::skip]
const SNIPPETS: &[&str] = &[
    "\0", "\t", "\r", "\r\n", "\u{feff}", "\u{200b}", "é", "𝔘", "💥", "\u{0301}",
    "\u{fffd}", "\u{10ffff}", "(", ")", "[", "]", "{", "}", ":", "\\", "\"", "'", "'''",
    "\"\"\"", "#", "@", "\n", "\n    ", "\n        ", "    ", ",", "=", "*", "**",
    "lambda: 0", "if", "else:", "def f():", "return", "yield", "@triton.jit\n", "tl.",
    "global x", "f\"{x}\"", "x[:, None]", "[None, :]", "...", "0x", "1e", "_",
];

fn snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(SNIPPETS).prop_map(str::to_string),
        1 => "\\PC{1,6}",
        1 => prop::collection::vec(any::<char>(), 1..4).prop_map(|c| c.into_iter().collect()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let i = || 0usize..100_000;
    prop_oneof![
        2 => i().prop_map(Mutation::DeleteLine),
        2 => i().prop_map(Mutation::DuplicateLine),
        2 => (i(), i()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => (i(), any::<bool>()).prop_map(|(a, b)| Mutation::Indent(a, b)),
        2 => (i(), 1usize..24).prop_map(|(a, n)| Mutation::DeleteSpan(a, n)),
        1 => (i(), 1usize..24).prop_map(|(a, n)| Mutation::DuplicateSpan(a, n)),
        4 => (i(), i()).prop_map(|(a, b)| Mutation::ReplaceWord(a, b)),
        4 => (i(), i()).prop_map(|(a, b)| Mutation::ReplaceNumber(a, b)),
        2 => (i(), i()).prop_map(|(a, b)| Mutation::ReplaceOperator(a, b)),
        2 => (i(), snippet()).prop_map(|(a, s)| Mutation::Insert(a, s)),
        1 => i().prop_map(Mutation::Truncate),
    ]
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    Word,
    Number,
    Operator,
}

/// A rough Python tokenizer: identifiers (dotted names stay separate words), numbers
/// and operator characters, with byte ranges.
fn tokens(src: &str) -> Vec<(usize, usize, Tok)> {
    let b = src.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((start, i, Tok::Word));
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                i += 1;
            }
            out.push((start, i, Tok::Number));
        } else if b"+-*/%@<>&|^~=!:,.()[]".contains(&c) {
            i += 1;
            while i < b.len() && b"*/<>=".contains(&b[i]) && i - start < 3 {
                i += 1;
            }
            out.push((start, i, Tok::Operator));
        } else {
            // Skip one character (possibly multi-byte).
            i += src[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// The byte offset of the `n`-th char boundary (mod their count, end included).
fn boundary(src: &str, n: usize) -> usize {
    let count = src.chars().count() + 1;
    src.char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(src.len()))
        .nth(n % count)
        .unwrap_or(src.len())
}

fn apply(src: &str, m: &Mutation) -> String {
    let lines: Vec<&str> = src.split_inclusive('\n').collect();
    let nl = lines.len().max(1);
    let with_lines = |f: &dyn Fn(&mut Vec<String>)| {
        let mut v: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        f(&mut v);
        v.concat()
    };
    let replace_tok = |kind: Tok, which: usize, pool: &[&str], choice: usize| {
        let toks: Vec<_> = tokens(src).into_iter().filter(|t| t.2 == kind).collect();
        if toks.is_empty() {
            return src.to_string();
        }
        let (a, b, _) = toks[which % toks.len()];
        // Words are also replaced by other words of the same source.
        let local: Vec<&str> = if kind == Tok::Word {
            toks.iter().map(|&(s, e, _)| &src[s..e]).collect()
        } else {
            vec![]
        };
        let n = pool.len() + local.len();
        let c = choice % n;
        let with = if c < pool.len() {
            pool[c]
        } else {
            local[c - pool.len()]
        };
        format!("{}{}{}", &src[..a], with, &src[b..])
    };
    match m {
        Mutation::DeleteLine(i) => with_lines(&|v| {
            if !v.is_empty() {
                v.remove(i % nl);
            }
        }),
        Mutation::DuplicateLine(i) => with_lines(&|v| {
            if !v.is_empty() {
                let l = v[i % nl].clone();
                let l = if l.ends_with('\n') { l } else { l + "\n" };
                v.insert(i % nl, l);
            }
        }),
        Mutation::SwapLines(a, b) => with_lines(&|v| {
            if !v.is_empty() {
                let last = v.len() - 1;
                if !v[last].ends_with('\n') {
                    v[last].push('\n');
                }
                v.swap(a % nl, b % nl);
            }
        }),
        Mutation::Indent(i, more) => with_lines(&|v| {
            if !v.is_empty() {
                let l = &mut v[i % nl];
                if *more {
                    l.insert_str(0, "    ");
                } else {
                    let k = l.len() - l.trim_start_matches(' ').len();
                    l.replace_range(..k.min(4), "");
                }
            }
        }),
        Mutation::DeleteSpan(at, n) => {
            let a = boundary(src, *at);
            let b = a + src[a..].chars().take(*n).map(char::len_utf8).sum::<usize>();
            format!("{}{}", &src[..a], &src[b..])
        }
        Mutation::DuplicateSpan(at, n) => {
            let a = boundary(src, *at);
            let b = a + src[a..].chars().take(*n).map(char::len_utf8).sum::<usize>();
            format!("{}{}{}", &src[..b], &src[a..b], &src[b..])
        }
        Mutation::ReplaceWord(w, c) => replace_tok(Tok::Word, *w, WORDS, *c),
        Mutation::ReplaceNumber(w, c) => replace_tok(Tok::Number, *w, NUMBERS, *c),
        Mutation::ReplaceOperator(w, c) => replace_tok(Tok::Operator, *w, OPERATORS, *c),
        Mutation::Insert(at, s) => {
            let a = boundary(src, *at);
            format!("{}{}{}", &src[..a], s, &src[a..])
        }
        Mutation::Truncate(at) => src[..boundary(src, *at)].to_string(),
    }
}

/// Whether running a mutant of `base` is sure to end quickly: every line that was
/// changed, inserted, deleted or moved is free of loop keywords and of the base's loop
/// words, and opens no multi-line string or continuation (which could swallow an
/// unchanged line, such as a loop's increment). Scalars and constexprs then bound every
/// loop as they do in the original.
///
/// A line counts as untouched when both its neighbours are too: the pairs of adjacent
/// lines are compared, so swapping two lines flags both (a longest common subsequence
/// would flag only one, and `i += 1` could leave a `while` body unnoticed).
fn loop_safe(base: &Base, mutant: &str) -> bool {
    fn pairs(text: &str) -> Vec<(&str, &str)> {
        let lines: Vec<&str> = std::iter::once("\u{0}start")
            .chain(text.lines())
            .chain(std::iter::once("\u{0}end"))
            .collect();
        lines.windows(2).map(|w| (w[0], w[1])).collect()
    }
    let (old, new) = (pairs(&base.source), pairs(mutant));
    let old_set: std::collections::HashSet<_> = old.iter().collect();
    let new_set: std::collections::HashSet<_> = new.iter().collect();
    let changed = new
        .iter()
        .filter(|p| !old_set.contains(p))
        .chain(old.iter().filter(|p| !new_set.contains(p)))
        .flat_map(|&(a, b)| [a, b]);
    const KEYWORDS: &[&str] = &["for", "while", "range", "static_range"];
    changed.into_iter().all(|l| {
        !l.contains("\"\"\"")
            && !l.contains("'''")
            && !l.trim_end().ends_with('\\')
            && l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .all(|w| !KEYWORDS.contains(&w) && !base.loop_words.contains(&w))
    })
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(1))]

    /// Mutated kernels parse, trace and run to Ok or a Diagnostic, never a panic.
    #[test]
    fn mutated_kernels_never_panic(
        which in 0usize..64,
        mutations in prop::collection::vec(mutation(), 1..4),
        seed in any::<u64>(),
        calm in prop_oneof![3 => Just(0u64), 1 => 4u64..20],
    ) {
        let bases = bases();
        let base = &bases[which % bases.len()];
        let mut src = base.source.clone();
        for m in &mutations {
            src = apply(&src, m);
        }
        let run = loop_safe(base, &src);
        let mut rng = common::Rng::new(seed);
        parse_and_exercise(&src, &mut rng, base.grid, calm, run);
    }

    /// Valid kernels launched with random arguments: Ok or a Diagnostic, not internal.
    #[test]
    fn random_launches_never_panic(
        which in 0usize..64,
        seed in any::<u64>(),
        calm in 2u64..8,
    ) {
        let bases = bases();
        let base = &bases[which % bases.len()];
        let module = Module::parse(base.name, &base.source).expect("the base kernels parse");
        let mut rng = common::Rng::new(seed);
        for name in module.kernel_names() {
            let kernel = module.kernel(&name).expect("a listed kernel");
            // Hostile scalars and grids only for kernels without loops.
            let huge = base.loop_words.is_empty() && chance(&mut rng, 3);
            let plan = plan_launch(kernel.signature(), base.grid, &mut rng, calm, huge);
            // Launches of more programs are only compiled here;
            // `huge_grids_are_rejected_or_fail_fast` launches huge grids on a kernel
            // whose first program fails.
            exercise(&kernel, &plan, &base.source, plan.grid.total() <= 64);
        }
    }

    /// Arbitrary text and token soup: `Module::parse` and tracing never panic.
    #[test]
    fn random_text_never_panics(
        text in prop_oneof![
            2 => any::<String>(),
            2 => "\\PC{0,200}",
            3 => prop::collection::vec(soup_token(), 0..60).prop_map(|v| v.concat()),
        ],
        as_body in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let src = if as_body {
            format!("{HEADER}@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    {text}\n")
        } else {
            text.clone()
        };
        let run = !["for", "while", "range"].iter().any(|w| text.contains(w));
        let mut rng = common::Rng::new(seed);
        parse_and_exercise(&src, &mut rng, [1, 1, 1], 4, run);
    }
}

proptest! {
    #![proptest_config(config(2))]

    /// Kernels generated from a small grammar of Triton-ish expressions and statements
    /// (most parse, many trace): tracing and running them never panic.
    #[test]
    fn generated_kernels_never_panic(src in generated_kernel(), seed in any::<u64>()) {
        let mut rng = common::Rng::new(seed);
        let calm = if chance(&mut rng, 4) { 6 } else { 0 };
        // Loops in generated kernels have constant trip counts: all are safe to run.
        parse_and_exercise(&src, &mut rng, [2, 1, 1], calm, true);
    }
}

fn soup_token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(WORDS).prop_map(str::to_string),
        2 => prop::sample::select(NUMBERS).prop_map(str::to_string),
        4 => prop::sample::select(OPERATORS).prop_map(str::to_string),
        2 => prop::sample::select(SNIPPETS).prop_map(str::to_string),
        1 => prop::sample::select(&[" ", "\n", "\n    ", "(", ")", "x = ", "tl.store(x_ptr + ", "tl.arange(0, BLOCK)", "for i in range(", "if ", "while "][..]).prop_map(str::to_string),
    ]
}

// ---------------------------------------------------------------------------------------
// Generated kernels: a small grammar of Triton-ish expressions and statements
// ---------------------------------------------------------------------------------------

/// Leaves of generated expressions: names in scope in [`GENERATED_PROLOGUE`], numbers,
/// dtypes, strings.
#[rustfmt::skip]
const LEAVES: &[&str] = &[
    "x", "x", "x", "offs", "offs", "mask", "acc", "pid", "n", "BLOCK", "t", "0", "1",
    "2", "-1", "0.5", "3", "16", "tl.arange(0, BLOCK)", "tl.arange(0, 16)",
    "x[:, None]", "x[None, :]", "offs[:, None]",
    "tl.zeros([BLOCK, BLOCK], dtype=tl.float32)",
    "tl.zeros([16, 16], dtype=tl.float16)", "tl.full([BLOCK], 7, tl.int32)",
];

/// Leaves that are rarely right: a few of them keep the odd paths exercised.
#[rustfmt::skip]
const HOSTILE_LEAVES: &[&str] = &[
    "x_ptr", "y_ptr", "1e30", "2**31", "-2147483648", "1 << 62", "float('nan')",
    "float('-inf')", "True", "False", "None", "tl.float16", "tl.int8", "tl.float32",
    "tl.int64", "tl.uint32", "tl.bfloat16", "'ieee'", "()", "(2, 8)",
    "x_ptr.dtype.element_ty", "x.dtype", "x.shape", "tl.arange(0, 4)",
    "tl.num_programs(0)", "tl.program_id(1)", "x.to(tl.float16)", "offs.to(tl.int64)",
    "x.to(tl.int8)", "x.to(tl.uint32)", "x.to(tl.float64)", "x.to(tl.bfloat16)",
];

#[rustfmt::skip]
const UNARY: &[&str] = &[
    "-", "~", "not ", "tl.sum", "tl.max", "tl.min", "tl.argmax", "tl.argmin",
    "tl.cumsum", "tl.cumprod", "tl.exp", "tl.log", "tl.sqrt", "tl.rsqrt", "tl.abs",
    "tl.sin", "tl.erf", "tl.sigmoid", "tl.softmax", "tl.trans", "tl.ravel", "abs",
    "int", "float", "len", "tl.math.exp2", "tl.floor", "tl.ceil", "tl.device_print",
    "tl.static_print", "triton.next_power_of_2", "tl.inline_asm_elementwise",
    "tl.xor_sum",
];

#[rustfmt::skip]
const BINARY: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "<", "<=", "==",
    "!=", ">", " and ", " or ", " is ", " @ ",
];

#[rustfmt::skip]
const CALL2: &[&str] = &[
    "tl.where(mask, {a}, {b})", "tl.minimum({a}, {b})", "tl.maximum({a}, {b})",
    "tl.dot({a}, {b})", "tl.dot({a}, {b}, acc)", "tl.sum({a}, axis={b})",
    "tl.max({a}, {b}, return_indices=True)", "tl.reshape({a}, {b})",
    "tl.broadcast_to({a}, {b})", "tl.expand_dims({a}, {b})", "tl.cast({a}, {b})",
    "{a}.to({b})", "tl.full({a}, {b}, tl.float32)", "tl.zeros({a}, {b})",
    "tl.load(x_ptr + {a}, mask={b})", "tl.load(x_ptr + {a}, mask=mask, other={b})",
    "tl.atomic_add(y_ptr + {a}, {b})", "tl.atomic_cas(y_ptr + {a}, {b}, 1.0)",
    "tl.clamp({a}, {b}, 1.0)", "tl.fma({a}, {b}, x)", "tl.cdiv({a}, {b})",
    "tl.multiple_of({a}, {b})", "tl.max_contiguous({a}, {b})", "min({a}, {b})",
    "max({a}, {b})", "tl.permute({a}, {b})", "tl.split({a})", "tl.join({a}, {b})",
    "tl.reduce({a}, 0, {b})", "tl.associative_scan({a}, {b}, _add)",
    "tl.static_assert({a} == {b})", "tl.device_assert({a}, 'msg')",
    "tl.arange({a}, {b})", "{a}[{b}]", "({a}, {b})[0]", "({a} if {b} else x)",
    "tl.make_block_ptr(x_ptr, ({a},), (1,), (0,), ({b},), (0,))",
    "tl.load(tl.make_block_ptr(x_ptr, (n,), (1,), ({a},), (BLOCK,), (0,)), boundary_check=({b},))",
    "tl.advance({a}, ({b},))", "_add({a}, {b})", "_twice({a})",
];

fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        12 => prop::sample::select(LEAVES).prop_map(str::to_string),
        1 => prop::sample::select(HOSTILE_LEAVES).prop_map(str::to_string),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (prop::sample::select(UNARY), inner.clone()).prop_map(|(f, a)| {
                if f.ends_with(' ') || f.len() == 1 {
                    format!("({f}{a})")
                } else {
                    format!("{f}({a})")
                }
            }),
            (inner.clone(), prop::sample::select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (prop::sample::select(CALL2), inner.clone(), inner)
                .prop_map(|(t, a, b)| t.replace("{a}", &a).replace("{b}", &b)),
        ]
    })
}

const TARGETS: &[&str] = &["x", "acc", "offs", "mask", "t", "n", "BLOCK", "pid"];

fn statement() -> impl Strategy<Value = String> {
    let target = prop::sample::select(TARGETS);
    prop_oneof![
        16 => (target.clone(), expr()).prop_map(|(t, e)| format!("{t} = {e}")),
        8 => (target.clone(), expr()).prop_map(|(t, e)| format!("{t} += {e}")),
        8 => expr().prop_map(|e| format!("tl.store(y_ptr + offs, {e}, mask=mask)")),
        4 => (expr(), target.clone(), expr()).prop_map(|(c, t, e)| {
            format!("if {c}:\n        {t} = {e}\n    else:\n        {t} = x")
        }),
        4 => (target.clone(), expr()).prop_map(|(t, e)| {
            format!("for i in range(0, 3):\n        {t} = {e}")
        }),
        4 => (target, expr()).prop_map(|(t, e)| {
            format!("for i in tl.static_range(2):\n        {t} += {e}")
        }),
        4 => expr().prop_map(|e| format!("x, t = {e}")),
        // An early `return` is an error that ends the trace; rarely.
        1 => expr().prop_map(|e| format!("return {e}")),
    ]
}

/// The frame of a generated kernel; the statements go between it and the final store.
const GENERATED_PROLOGUE: &str = "import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _twice(a):
    return a * 2


@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    acc = tl.zeros([BLOCK, BLOCK], dtype=tl.float32)
    t = x
";

fn generated_kernel() -> impl Strategy<Value = String> {
    prop::collection::vec(statement(), 1..5).prop_map(|stmts| {
        let mut src = GENERATED_PROLOGUE.to_string();
        for s in stmts {
            src.push_str("    ");
            src.push_str(&s);
            src.push('\n');
        }
        src.push_str("    tl.store(y_ptr + offs, x + t, mask=mask)\n");
        src
    })
}

// ---------------------------------------------------------------------------------------
// Deterministic checks
// ---------------------------------------------------------------------------------------

/// The fuzzing starts from kernels that work: each base kernel runs with its plausible
/// launch on every CPU executor.
#[test]
fn base_kernels_run() {
    for base in bases() {
        let module = common::module(base.name, &base.source);
        for name in module.kernel_names() {
            let kernel = common::ok(module.kernel(&name));
            let sig = kernel.signature();
            if name.starts_with('_') || !sig.params.iter().any(|p| p.constexpr) {
                continue; // a helper (`_combine`, `leaky_relu`)
            }
            let mut rng = common::Rng::new(1);
            let plan = plan_launch(kernel.signature(), base.grid, &mut rng, 0, false);
            for (dev_name, dev) in devices() {
                let args = common::ok(materialize(&dev, &plan));
                let mut l = kernel.launch(&dev, plan.grid).args(args);
                for (n, v) in &plan.constexprs {
                    l = l.constexpr(n, v.clone());
                }
                if let Err(e) = l.run() {
                    panic!("{} `{name}` on the {dev_name}:\n{}", base.name, e.render());
                }
            }
        }
    }
}

/// Every mutation keeps the text valid UTF-8 and the loop guard accepts the original.
#[test]
fn mutations_and_guard_are_sane() {
    for base in bases() {
        assert!(loop_safe(&base, &base.source), "{}", base.name);
        let for_line = base
            .source
            .lines()
            .find(|l| l.trim_start().starts_with("for "))
            .map(str::to_string);
        if let Some(l) = for_line {
            let mutant = base.source.replacen(&l, &format!("{l} "), 1);
            assert!(!loop_safe(&base, &mutant), "{}: {l}", base.name);
        }
    }
    // Swapping a loop's increment out of its body is caught (found by the fuzzer: the
    // loop ran forever).
    let control = bases()
        .into_iter()
        .find(|b| b.name == "control.py")
        .unwrap();
    let swapped = control.source.replace(
        "        i += 1\n    if FLAG:\n",
        "    if FLAG:\n        i += 1\n",
    );
    assert_ne!(swapped, control.source);
    assert!(!loop_safe(&control, &swapped));
    let src = "a = 1 + b\n";
    assert_eq!(apply(src, &Mutation::DeleteLine(0)), "");
    assert_eq!(
        apply(src, &Mutation::DuplicateLine(0)),
        "a = 1 + b\na = 1 + b\n"
    );
    assert_eq!(apply(src, &Mutation::ReplaceNumber(0, 0)), "a = 0 + b\n");
    assert_eq!(apply(src, &Mutation::Truncate(3)), "a =");
    assert_eq!(apply("é", &Mutation::Insert(1, "x".into())), "éx");
}

/// A launch outcome a test expects.
enum Expect {
    Ok,
    Err(&'static [ErrorKind]),
}

#[track_caller]
fn expect(what: &str, r: tilewise::Result<()>, want: Expect) {
    match (r, want) {
        (Ok(()), Expect::Ok) => {}
        (Ok(()), Expect::Err(kinds)) => {
            panic!("{what}: expected an error of kind {kinds:?}, got Ok")
        }
        (Err(e), Expect::Ok) => panic!("{what}: expected Ok, got\n{}", e.render()),
        (Err(e), Expect::Err(kinds)) => {
            assert!(
                kinds.contains(&e.kind),
                "{what}: expected {kinds:?}, got\n{}",
                e.render()
            );
            assert!(e.render().starts_with("error["), "{what}");
        }
    }
}

/// Bad launches of a valid kernel are Diagnostics of the right kind on every CPU
/// executor: wrong counts and dtypes, scalars for pointers and back, empty and sliced
/// buffers, missing / unknown / ill-typed constexprs, warps, zero grids.
#[test]
fn bad_launches_are_diagnostics() {
    use ErrorKind::*;
    let module = common::module("vector_add.py", include_str!("../shaders/vector_add.py"));
    let kernel = common::ok(module.kernel("add_kernel"));
    for (dev_name, dev) in devices() {
        let f32s = |n: usize| common::ok(dev.upload(&vec![1.0f32; n]));
        let (x, y, out) = (f32s(64), f32s(64), f32s(64));
        let half = common::ok(dev.alloc(DType::F16, 64));
        let empty = f32s(0);
        let other_dev = Device::interpreter();
        let foreign = common::ok(other_dev.upload(&[1.0f32; 64]));
        let go = |args: Vec<Arg>, consts: &[(&str, ConstValue)], warps: u32, grid: Grid| {
            let mut l = kernel.launch(&dev, grid).args(args).num_warps(warps);
            for (n, v) in consts {
                l = l.constexpr(n, v.clone());
            }
            l.run()
        };
        let a = |b: &tilewise::Buffer| Arg::from(b);
        let block = |v: ConstValue| vec![("BLOCK_SIZE", v)];
        let b16 = block(ConstValue::Int(16));
        let ok_args = || vec![a(&x), a(&y), a(&out), Arg::from(64i32)];
        let one = Grid([4, 1, 1]);
        let cases: Vec<(&str, tilewise::Result<()>, Expect)> = vec![
            ("plausible", go(ok_args(), &b16, 4, one), Expect::Ok),
            (
                "too few",
                go(ok_args()[..3].to_vec(), &b16, 4, one),
                Expect::Err(&[Argument]),
            ),
            ("none", go(vec![], &b16, 4, one), Expect::Err(&[Argument])),
            (
                "too many",
                go([ok_args(), vec![Arg::from(1i32)]].concat(), &b16, 4, one),
                Expect::Err(&[Argument]),
            ),
            (
                "f16 input",
                go(
                    vec![a(&half), a(&y), a(&out), Arg::from(64i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "f16 output",
                go(vec![a(&x), a(&y), a(&half), Arg::from(64i32)], &b16, 4, one),
                Expect::Ok,
            ),
            (
                "scalar for a pointer",
                go(
                    vec![Arg::from(1.0f32), a(&y), a(&out), Arg::from(64i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Err(&[Type]),
            ),
            (
                "pointer for a scalar",
                go(vec![a(&x), a(&y), a(&out), a(&x)], &b16, 4, one),
                Expect::Err(&[Type]),
            ),
            (
                "bool n",
                go(vec![a(&x), a(&y), a(&out), Arg::from(true)], &b16, 4, one),
                Expect::Ok,
            ),
            (
                "i64 n",
                go(vec![a(&x), a(&y), a(&out), Arg::from(64i64)], &b16, 4, one),
                Expect::Ok,
            ),
            (
                "u64 n",
                go(
                    vec![a(&x), a(&y), a(&out), Arg::from(u64::MAX)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "u64 n, past the end",
                go(
                    vec![a(&x), a(&y), a(&out), Arg::from(u64::MAX)],
                    &b16,
                    4,
                    Grid([5, 1, 1]),
                ),
                Expect::Err(&[Runtime]),
            ),
            (
                "f64 n",
                go(
                    vec![a(&x), a(&y), a(&out), Arg::from(64.0f64)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "huge n",
                go(
                    vec![a(&x), a(&y), a(&out), Arg::from(i32::MAX)],
                    &b16,
                    4,
                    Grid([5, 1, 1]),
                ),
                Expect::Err(&[Runtime]),
            ),
            (
                "negative n",
                go(
                    vec![a(&x), a(&y), a(&out), Arg::from(i32::MIN)],
                    &b16,
                    4,
                    Grid([5, 1, 1]),
                ),
                Expect::Ok,
            ),
            (
                "empty buffer",
                go(
                    vec![a(&empty), a(&y), a(&out), Arg::from(64i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Err(&[Runtime]),
            ),
            (
                "empty buffer, n = 0",
                go(
                    vec![a(&empty), a(&empty), a(&empty), Arg::from(0i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "slice",
                go(
                    vec![Arg::from(x.slice(4..36)), a(&y), a(&out), Arg::from(32i32)],
                    &b16,
                    4,
                    Grid([2, 1, 1]),
                ),
                Expect::Ok,
            ),
            (
                "short slice",
                go(
                    vec![Arg::from(x.slice(60..64)), a(&y), a(&out), Arg::from(64i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Err(&[Runtime]),
            ),
            (
                "slice past the end",
                go(
                    vec![
                        Arg::from(x.slice(1000..2000)),
                        a(&y),
                        a(&out),
                        Arg::from(64i32),
                    ],
                    &b16,
                    4,
                    one,
                ),
                Expect::Err(&[Runtime]),
            ),
            (
                "foreign buffer",
                go(
                    vec![a(&foreign), a(&y), a(&out), Arg::from(64i32)],
                    &b16,
                    4,
                    one,
                ),
                Expect::Err(&[Launch]),
            ),
            (
                "missing constexpr",
                go(ok_args(), &[], 4, one),
                Expect::Err(&[Argument]),
            ),
            (
                "unknown constexpr",
                go(
                    ok_args(),
                    &[
                        ("BLOCK_SIZE", ConstValue::Int(16)),
                        ("NOPE", ConstValue::Int(1)),
                    ],
                    4,
                    one,
                ),
                Expect::Err(&[Argument]),
            ),
            (
                "constexpr twice",
                go(
                    ok_args(),
                    &[
                        ("BLOCK_SIZE", ConstValue::Int(16)),
                        ("BLOCK_SIZE", ConstValue::Int(12)),
                    ],
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "runtime parameter as constexpr",
                go(
                    ok_args()[..3].to_vec(),
                    &[
                        ("BLOCK_SIZE", ConstValue::Int(16)),
                        ("n_elements", ConstValue::Int(64)),
                    ],
                    4,
                    one,
                ),
                Expect::Ok,
            ),
            (
                "pointer parameter as constexpr",
                go(
                    ok_args()[1..].to_vec(),
                    &[
                        ("BLOCK_SIZE", ConstValue::Int(16)),
                        ("x_ptr", ConstValue::Int(0)),
                    ],
                    4,
                    one,
                ),
                Expect::Err(&[Type]),
            ),
            (
                "buffer for a constexpr",
                go([ok_args(), vec![a(&x)]].concat(), &[], 4, one),
                Expect::Err(&[Argument]),
            ),
            (
                "BLOCK_SIZE 12",
                go(ok_args(), &block(ConstValue::Int(12)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE 0",
                go(ok_args(), &block(ConstValue::Int(0)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE -16",
                go(ok_args(), &block(ConstValue::Int(-16)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE 2^21",
                go(ok_args(), &block(ConstValue::Int(1 << 21)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE 2^40",
                go(ok_args(), &block(ConstValue::Int(1 << 40)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE i64::MIN",
                go(ok_args(), &block(ConstValue::Int(i64::MIN)), 4, one),
                Expect::Err(&[Shape]),
            ),
            (
                "BLOCK_SIZE 16.0",
                go(ok_args(), &block(ConstValue::Float(16.0)), 4, one),
                Expect::Err(&[Static, Type]),
            ),
            (
                "BLOCK_SIZE str",
                go(ok_args(), &block(ConstValue::Str("16".into())), 4, one),
                Expect::Err(&[Static, Type]),
            ),
            (
                "BLOCK_SIZE dtype",
                go(ok_args(), &block(ConstValue::DType(DType::F32)), 4, one),
                Expect::Err(&[Static, Type]),
            ),
            (
                "BLOCK_SIZE None",
                go(ok_args(), &block(ConstValue::None), 4, one),
                Expect::Err(&[Static, Type]),
            ),
            (
                "BLOCK_SIZE tuple",
                go(
                    ok_args(),
                    &block(ConstValue::Tuple(vec![ConstValue::Int(16)])),
                    4,
                    one,
                ),
                Expect::Err(&[Static, Type]),
            ),
            (
                "num_warps 0",
                go(ok_args(), &b16, 0, one),
                Expect::Err(&[Launch]),
            ),
            (
                "num_warps 3",
                go(ok_args(), &b16, 3, one),
                Expect::Err(&[Launch]),
            ),
            (
                "num_warps 64",
                go(ok_args(), &b16, 64, one),
                Expect::Err(&[Launch]),
            ),
            (
                "num_warps u32::MAX",
                go(ok_args(), &b16, u32::MAX, one),
                Expect::Err(&[Launch]),
            ),
            ("num_warps 32", go(ok_args(), &b16, 32, one), Expect::Ok),
            (
                "grid 0",
                go(ok_args(), &b16, 4, Grid([0, 1, 1])),
                Expect::Ok,
            ),
            (
                "grid (1, 0, 1)",
                go(ok_args(), &b16, 4, Grid([1, 0, 1])),
                Expect::Ok,
            ),
            (
                "grid (0, 0, 0)",
                go(ok_args(), &b16, 4, Grid([0, 0, 0])),
                Expect::Ok,
            ),
        ];
        for (what, r, want) in cases {
            expect(&format!("{what} on the {dev_name}"), r, want);
        }
    }
}

/// Grids too large to run: rejected, or (where the launch check lets them through)
/// cheap here because the kernel fails in its first program.
#[test]
fn huge_grids_are_rejected_or_fail_fast() {
    let src = format!("{HEADER}@triton.jit\ndef oob(x_ptr):\n    tl.store(x_ptr + 1000000 + tl.arange(0, 16), 1.0)\n");
    let module = common::module("oob.py", &src);
    let kernel = common::ok(module.kernel("oob"));
    let rejected: &[[u32; 3]] = &[
        [1 << 31, 1, 1],
        [u32::MAX, 1, 1],
        [1, u32::MAX, 1],
        [1, 1, u32::MAX],
        [1, 1, 1 << 31],
        [0, u32::MAX, u32::MAX],
    ];
    // Accepted by the launch check today (every dimension is at most 65535 * 32768),
    // although they hold up to 2^48 programs: the CPU executors would run them all.
    let accepted: &[[u32; 3]] = &[
        [65535 * 32768, 1, 1],
        [65536, 65536, 65536],
        [1, 65536, 65536],
    ];
    for (dev_name, dev) in devices() {
        let x = common::ok(dev.zeros::<f32>(16));
        for grid in rejected {
            let r = kernel.launch(&dev, *grid).arg(&x).run();
            expect(
                &format!("grid {grid:?} on the {dev_name}"),
                r,
                Expect::Err(&[ErrorKind::Launch]),
            );
        }
        for grid in accepted {
            let r = kernel.launch(&dev, *grid).arg(&x).run();
            expect(
                &format!("grid {grid:?} on the {dev_name}"),
                r,
                Expect::Err(&[ErrorKind::Launch, ErrorKind::Runtime]),
            );
        }
    }
}

/// Found by `random_launches_never_panic`: a block pointer's `block_shape` (and
/// `tl.zeros`' shape) of a non-power-of-two traced, ran on the interpreter, and was an
/// internal error in the GPU lowering ("blocked layout parameters must be powers of
/// two"). Tile shapes now have Triton's rules at trace time: power-of-two dimensions,
/// at most 2^20 elements (a `tl.zeros((65536, 65536))` would have allocated 32 GiB
/// in the interpreter).
#[test]
fn tile_shapes_are_checked_at_trace_time() {
    let src = format!("{HEADER}{BLOCK_COPY}");
    let module = common::module("block_copy.py", &src);
    let kernel = common::ok(module.kernel("block_copy"));
    for (dev_name, dev) in devices() {
        let a = common::ok(dev.zeros::<f32>(1024));
        let b = common::ok(dev.zeros::<f32>(1024));
        let e = common::err(
            kernel
                .launch(&dev, 1)
                .arg(&a)
                .arg(&b)
                .arg(16i32)
                .arg(16i32)
                .arg(16i32)
                .constexpr("BLOCK_M", 16)
                .constexpr("BLOCK_N", 48)
                .run(),
        );
        assert_eq!(e.kind, ErrorKind::Shape, "{dev_name}: {}", e.render());
        assert!(e.message.contains("48"), "{}", e.render());
        assert_eq!(
            e.line_col(),
            Some(common::line_col_of(&src, "(BLOCK_M, BLOCK_N)", 0)),
            "{}",
            e.render()
        );
    }
    for (shape, msg) in [
        ("(16, 12)", "powers of 2"),
        ("(3,)", "powers of 2"),
        ("(65536, 65536)", "more than the limit"),
        ("(1024, 1024, 2)", "more than the limit"),
    ] {
        let src = format!("{HEADER}@triton.jit\ndef k(x_ptr):\n    t = tl.zeros({shape}, dtype=tl.float32)\n    tl.store(x_ptr, 1.0)\n");
        let module = common::module("zeros.py", &src);
        let kernel = common::ok(module.kernel("k"));
        let dev = Device::interpreter();
        let x = common::ok(dev.zeros::<f32>(1));
        let e = common::err(kernel.launch(&dev, 1).arg(&x).run());
        assert_eq!(e.kind, ErrorKind::Shape, "{shape}: {}", e.render());
        assert!(e.message.contains(msg), "{shape}: {}", e.render());
        assert_eq!(
            e.line_col(),
            Some(common::line_col_of(&src, shape, 0)),
            "{}",
            e.render()
        );
    }
}

/// Found by running the fuzzer with debug assertions (`debug_assert!(mask.is_none())`
/// in the lowering of `atomic_cas`): a scalar or replicated `tl.atomic_cas` was issued
/// by every thread holding the element, not only its owner; on a GPU a replica could
/// win the race and leave the owner, whose old value is the one shared, a wrong one.
/// The owner predicate now guards the swap.
#[test]
fn atomic_cas_is_issued_by_its_owner_only() {
    let src = format!("{HEADER}@triton.jit\ndef k(flag_ptr, out_ptr):\n    old = tl.atomic_cas(flag_ptr, 0, 1)\n    many = tl.atomic_cas(flag_ptr + 1 + tl.arange(0, 4), 0, 2)\n    tl.store(out_ptr, old)\n    tl.store(out_ptr + 1 + tl.arange(0, 4), many)\n");
    let module = common::module("cas.py", &src);
    let kernel = common::ok(module.kernel("k"));
    for (dev_name, dev) in devices() {
        let flag = common::ok(dev.upload(&[0i32, 0, 5, 0, 0]));
        let out = common::ok(dev.upload(&[-1i32; 5]));
        common::ok(kernel.launch(&dev, 2).arg(&flag).arg(&out).run());
        assert_eq!(
            common::ok(dev.download::<i32>(&flag)),
            [1, 2, 5, 2, 2],
            "{dev_name}"
        );
        // The second program sees the first one's swaps.
        assert_eq!(
            common::ok(dev.download::<i32>(&out)),
            [1, 2, 5, 2, 2],
            "{dev_name}"
        );
    }
    let dev = Device::simulator();
    let flag = common::ok(dev.zeros::<i32>(5));
    let compiled = common::ok(kernel.launch(&dev, 1).arg(&flag).arg(&flag).compile());
    let text = common::ok(compiled.thread_ir_text());
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if l.contains("atomic_cas") {
            assert!(
                i > 0 && lines[i - 1].trim_start().starts_with("if "),
                "unguarded:\n{text}"
            );
        }
    }
}

/// Found by probing deep nesting after the fuzzer: 1000 terms of `x + x + ...` in a
/// kernel overflowed the stack while tracing, and 10 000 levels of anything overflowed
/// it while parsing (cloning and dropping the AST); a stack overflow aborts the
/// process. Now the front end refuses to nest past CPython's limits (200 brackets, 100
/// indentation levels), 1000 operators in a line, 500 `elif`s, and traces 100 levels
/// of statements and expressions at most (enough for a 2 MiB stack unoptimized too):
/// all located Diagnostics.
#[test]
fn deep_nesting_is_a_diagnostic() {
    let n = 100_000;
    let kern = |body: &str| {
        format!("{HEADER}@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n    {body}\n    tl.store(x_ptr, x)\n")
    };
    let mut nested_if = format!("{HEADER}@triton.jit\ndef k(x_ptr):\n    x = tl.load(x_ptr)\n");
    for d in 1..=150 {
        nested_if.push_str(&format!("{}if x > 0:\n", " ".repeat(4 * d)));
    }
    nested_if.push_str(&format!("{}tl.store(x_ptr, x)\n", " ".repeat(4 * 151)));
    let parse_errors = [
        format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
        format!("x = {}1{}\n", "[".repeat(n), "]".repeat(n)),
        format!("x = {}1\n", "1 + ".repeat(n)),
        format!("x = {}1\n", "-".repeat(n)),
        format!("x = {}0\n", "lambda: ".repeat(n)),
        format!("x = {}x\n", "not ".repeat(n)),
        format!("x = y{}\n", "[0]".repeat(n)),
        format!("x = y{}\n", ".a".repeat(n)),
        format!("x = 1 \\\n{}\n", "+ 1 \\\n".repeat(n)),
        format!("if x:\n    pass\n{}", "elif x:\n    pass\n".repeat(n / 10)),
        kern(&format!("x = {}x", "x + ".repeat(n))),
        nested_if,
    ];
    for (i, src) in parse_errors.iter().enumerate() {
        let Err(e) = Module::parse("deep.py", src) else {
            panic!("case {i} parsed");
        };
        assert_eq!(e.kind, ErrorKind::Syntax, "{}", e.render());
        assert!(e.line_col().is_some(), "{}", e.render());
    }
    // Within the parser's limits, beyond the tracer's.
    let trace_errors = [
        kern(&format!("x = {}x", "x + ".repeat(300))),
        kern(&format!("x = {}x", "-".repeat(300))),
        kern(&format!(
            "x = {}{}x{}",
            "-".repeat(100),
            "tl.abs(".repeat(150),
            ")".repeat(150)
        )),
        kern(&format!("x = x{}", ".to(tl.float32)".repeat(300))),
        kern(&format!(
            "if x > 0:\n        x = x\n{}",
            "    elif x > 1:\n        x = x\n".repeat(300)
        )),
    ];
    for (i, src) in trace_errors.iter().enumerate() {
        let module = common::module("deep.py", src);
        let kernel = common::ok(module.kernel("k"));
        let dev = Device::interpreter();
        let x = common::ok(dev.zeros::<f32>(1));
        let Err(e) = kernel.launch(&dev, 1).arg(&x).run() else {
            panic!("case {i} traced");
        };
        assert_eq!(e.kind, ErrorKind::Unsupported, "{}", e.render());
        assert!(e.message.contains("nested"), "{}", e.render());
        assert!(e.line_col().is_some(), "{}", e.render());
    }
    // Deep but reasonable code still works.
    let src = kern(&format!("x = {}x", "x + ".repeat(60)));
    let module = common::module("deep.py", &src);
    let kernel = common::ok(module.kernel("k"));
    let dev = Device::interpreter();
    let x = common::ok(dev.upload(&[1.0f32]));
    common::ok(kernel.launch(&dev, 1).arg(&x).run());
    assert_eq!(common::ok(dev.download::<f32>(&x)), [61.0]);
}

/// `tl.arange` with bounds whose difference overflows i64 (a panic with overflow
/// checks) is a shape error.
#[test]
fn arange_with_extreme_bounds_is_a_shape_error() {
    for (a, b) in [
        ("-(2**62) - 2**62", "2**62"),
        ("-(2**62) - 2**62", "2**62 - 1 + 2**62"),
        ("0", "2**40"),
    ] {
        let src = format!(
            "{HEADER}@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr + tl.arange({a}, {b}), 1.0)\n"
        );
        let module = common::module("arange.py", &src);
        let kernel = common::ok(module.kernel("k"));
        let dev = Device::interpreter();
        let x = common::ok(dev.zeros::<f32>(1));
        let e = common::err(kernel.launch(&dev, 1).arg(&x).run());
        assert!(
            matches!(e.kind, ErrorKind::Shape | ErrorKind::Static),
            "{}",
            e.render()
        );
    }
}

/// Found by `generated_kernels_never_panic` once it printed WGSL: `mask += mask`
/// traced to i1 arithmetic, for which the WGSL printer wrote `bool + bool` (naga
/// rejected it: an internal error) and the PTX printer refused `//`, `%` and shifts.
/// `tl.cumprod` of booleans had the same `bool * bool` in its combiner. The front end
/// now spells boolean arithmetic with bitwise ops (and the product scan as a minimum),
/// modulo 2 as the interpreter always computed it.
#[test]
fn bool_arithmetic_is_modulo_2_everywhere() {
    // (operator, expected result from the operands a and b)
    type Want = fn(bool, bool) -> bool;
    let ops: &[(&str, Want)] = &[
        ("a + b", |a, b| a ^ b),
        ("a - b", |a, b| a ^ b),
        ("a * b", |a, b| a & b),
        ("a // b", |a, b| a & b),
        ("a % b", |_, _| false),
        ("a << b", |a, b| a & !b),
        ("a >> b", |a, b| a & !b),
        ("-a", |a, _| a),
        // b's prefix product: true for offs 0 and 1 only (also `bool * bool`).
        ("tl.cumprod(b, 0) & a", |a, _| a),
    ];
    for (op, want) in ops {
        let src = format!("{HEADER}@triton.jit\ndef k(y_ptr):\n    offs = tl.arange(0, 16)\n    a = offs % 2 == 0\n    b = offs % 4 < 2\n    r = {op}\n    tl.store(y_ptr + offs, r.to(tl.int32))\n");
        let module = common::module("bools.py", &src);
        let kernel = common::ok(module.kernel("k"));
        let mut expected: Vec<i32> = (0..16)
            .map(|i| want(i % 2 == 0, i % 4 < 2) as i32)
            .collect();
        if op.starts_with("tl.cumprod") {
            expected = (0..16).map(|i| (i == 0) as i32).collect();
        }
        for (dev_name, dev) in devices() {
            let y = common::ok(dev.upload(&[7i32; 16]));
            common::ok(kernel.launch(&dev, 1).arg(&y).run());
            assert_eq!(
                common::ok(dev.download::<i32>(&y)),
                expected,
                "{op} on the {dev_name}"
            );
        }
        let dev = Device::interpreter();
        let y = common::ok(dev.zeros::<i32>(16));
        let compiled = common::ok(kernel.launch(&dev, 1).arg(&y).compile());
        common::ok(compiled.wgsl());
        common::ok(compiled.ptx());
    }
}
