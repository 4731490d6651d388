//! The Thread IR's text form parses back: print -> parse -> print is the identity for
//! the Thread IR of every kernel here (the kernel library of `shaders/`, the sources of
//! `frontend_kernels.rs` and kernels written for the statements the others do not
//! reach) under the option sets of every executor, checked mode included; the parsed
//! kernel equals the lowered one (but for `source`, which the text does not hold) and
//! passes the Thread IR verifier. Malformed text gives located syntax errors.

use tilewise_core::frontend::Module;
use tilewise_core::ir::DType;
use tilewise_core::launch::{ArgSpec, ConstValue, ScalarValue};
use tilewise_core::lower::expand::{CoopConfig, ExpandOptions, DEFAULT_RING_BUDGET};
use tilewise_core::lower::to_thread_ir;
use tilewise_core::thread_ir::{self, verify::verify, Expr, Stmt, ThreadKernel};

/// One specialization of one kernel.
struct Case {
    name: String,
    src: String,
    kernel: &'static str,
    args: Vec<ArgSpec>,
    constexprs: Vec<(String, ConstValue)>,
}

fn ptr(d: DType) -> ArgSpec {
    ArgSpec::Ptr {
        dtype: d,
        aligned16: true,
    }
}

fn unaligned(d: DType) -> ArgSpec {
    ArgSpec::Ptr {
        dtype: d,
        aligned16: false,
    }
}

fn i32s(v: i64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Int(DType::I32, v))
}

fn f32s(v: f64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Float(DType::F32, v))
}

fn case(
    name: &str,
    src: &str,
    kernel: &'static str,
    args: Vec<ArgSpec>,
    constexprs: &[(&str, ConstValue)],
) -> Case {
    Case {
        name: name.to_string(),
        src: src.to_string(),
        kernel,
        args,
        constexprs: constexprs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect(),
    }
}

fn int(v: i64) -> ConstValue {
    ConstValue::Int(v)
}

/// The raw string constant `name` of `frontend_kernels.rs` (the tutorial and seed
/// kernels traced there), with the import header that file prepends.
fn frontend_source(name: &str) -> String {
    let file = include_str!("frontend_kernels.rs");
    let start = format!("const {name}: &str = r#\"");
    let at = file
        .find(&start)
        .unwrap_or_else(|| panic!("no `{name}` in frontend_kernels.rs"))
        + start.len();
    let len = file[at..].find("\"#;").expect("end of the raw string");
    format!(
        "import torch\nimport triton\nimport triton.language as tl\n\n{}",
        &file[at..at + len]
    )
}

/// Kernels for what the library does not reach: atomics and spin waits (`While`),
/// prints and asserts, hints, scans, argmax, casts through every width, exotic
/// constants, `debug_barrier`, 2-D reductions and layout changes.
const EXTRA: &str = r#"
import triton
import triton.language as tl

@triton.jit
def reverse_turns(turn_ptr, order_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    while tl.atomic_add(turn_ptr, 0) != N - 1 - pid:
        pass
    tl.store(order_ptr + pid, tl.atomic_add(turn_ptr, 1))

@triton.jit
def locked_sums(lock_ptr, count_ptr, acc_ptr, x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.store(acc_ptr + offs, x)
    else:
        tl.store(acc_ptr + offs, tl.load(acc_ptr + offs) + x)
    tl.store(count_ptr, count + 1)
    tl.debug_barrier()
    tl.atomic_xchg(lock_ptr, 0)

@triton.jit
def atomics(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    a = tl.atomic_add(x_ptr + offs, 1.5, mask=m)
    b = tl.atomic_max(y_ptr + offs, offs, mask=m)
    c = tl.atomic_min(y_ptr + offs, offs)
    d = tl.atomic_and(y_ptr + offs, 7)
    e = tl.atomic_or(y_ptr + offs, 8)
    f = tl.atomic_xor(y_ptr + offs, 3)
    g = tl.atomic_xchg(y_ptr + offs, b + c + d + e + f)
    tl.store(x_ptr + offs, a + g.to(tl.float32), mask=m)

@triton.jit
def show(x_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_print("x", x)
    tl.device_print("pair", offs, x * 2.0)
    tl.device_print("bits", offs * 3, hex=True)
    tl.device_print("first", tl.sum(offs, axis=0))

@triton.jit
def asserted(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=float("nan"))
    tl.device_assert(x >= 0, "x must be \"non-negative\"\n")
    tl.store(out_ptr + offs, tl.sqrt(x), mask=offs < n)

@triton.jit
def block_copy(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, 1),
                            offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tile = tl.load(src, boundary_check=(0, 1))
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(out_ptr + offs, tile)

@triton.jit
def scans_and_args(x_ptr, y_ptr, i_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    c = tl.cumsum(x, 0)
    tl.store(x_ptr + offs, c)
    a = tl.argmax(x, axis=0)
    v, j = tl.min(x, axis=0, return_indices=True)
    i = tl.load(i_ptr + offs)
    tl.store(i_ptr + a, j + tl.max(i, axis=0) + tl.min(i, axis=0) + tl.sum(i, axis=0))
    tl.store(y_ptr + offs, tl.cumprod(x, 0) + v)

@triton.jit
def constants(x_ptr, h_ptr, b_ptr, u_ptr, l_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.where(x > 0.1, x * 1e-30, -0.0)
    y = tl.where(x < -1e30, float("inf"), y)
    y = tl.where(x == 3.141592653589793, -float("inf"), y)
    y = tl.where(x != x, 0.3333333333333333, y + 1.0000001)
    tl.store(x_ptr + offs, y)
    h = tl.load(h_ptr + offs)
    tl.store(h_ptr + offs, (h * 0.1).to(tl.float16))
    b = tl.load(b_ptr + offs)
    tl.store(b_ptr + offs, (b.to(tl.float32) + 0.7).to(tl.bfloat16))
    u = tl.load(u_ptr + offs)
    tl.store(u_ptr + offs, (u ^ 0xDEADBEEF) >> 3)
    l = tl.load(l_ptr + offs)
    tl.store(l_ptr + offs, l * 6364136223846793005 + (1 << 40))
    tl.store(u_ptr + offs, (x.to(tl.int32, bitcast=True) & 0x7fffff).to(tl.uint32))

@triton.jit
def fp8_round_trip(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x.to(tl.float8e4nv).to(tl.float32) + x.to(tl.float8e5).to(tl.float32)
    tl.store(y_ptr + offs, y)

@triton.jit
def rows(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    r = tl.arange(0, BLOCK_M)
    c = tl.arange(0, BLOCK_N)
    m = (r[:, None] < M) & (c[None, :] < N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :], mask=m, other=0.0)
    s = tl.sum(x, axis=1)
    t = tl.max(x, axis=0)
    y = tl.trans(x) * 2.0
    tl.store(out_ptr + c[:, None] * M + r[None, :], y, mask=tl.trans(m))
    tl.store(out_ptr + r, s, mask=r < M)
    tl.store(out_ptr + c, t, mask=c < N)

@triton.jit
def int_sums(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr, tl.sum(x, axis=0) + tl.max(x, axis=0) + tl.min(x, axis=0))

@triton.jit
def f64_math(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * 0.1 + tl.sum(x, axis=0))

@triton.jit
def randoms(out_ptr, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs) + tl.randn(seed, offs))

@triton.jit
def dot_bf16(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))

@triton.jit
def dot_f16_acc(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], c)

@triton.jit
def addresses(table, x_ptr, out, BLOCK: tl.constexpr):
    # Pointers as data: accesses through addresses (`*` in the text) and a buffer's
    # address (`address`); targets with global addresses only.
    src = tl.load(table + 1).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < 7)
    dst = (x_ptr.to(tl.int64) + 8).to(tl.pointer_type(tl.float32))
    tl.store(dst + offs, x)
    tl.atomic_add(dst + offs, x)
    tl.store(out, x_ptr.to(tl.pointer_type(tl.uint8)).to(tl.int64))
"#;

fn cases() -> Vec<Case> {
    let f32p = || ptr(DType::F32);
    let f16p = || ptr(DType::F16);
    let mut v = vec![
        case(
            "vector_add",
            include_str!("../../shaders/vector_add.py"),
            "add_kernel",
            vec![f32p(), f32p(), f32p(), i32s(4096)],
            &[("BLOCK_SIZE", int(1024))],
        ),
        case(
            "vector_add_unaligned",
            include_str!("../../shaders/vector_add.py"),
            "add_kernel",
            vec![unaligned(DType::F32), f32p(), f32p(), i32s(1000)],
            &[("BLOCK_SIZE", int(256))],
        ),
        case(
            "fused_softmax",
            include_str!("../../shaders/fused_softmax.py"),
            "softmax_kernel",
            vec![f32p(), f32p(), i32s(1024), i32s(1024), i32s(64), i32s(1000)],
            &[("BLOCK_SIZE", int(1024))],
        ),
        case(
            "swiglu",
            include_str!("../../shaders/swiglu.py"),
            "swiglu_fwd_kernel",
            vec![f32p(), f32p(), ptr(DType::BF16), i32s(4096)],
            &[("BLOCK_SIZE", int(1024))],
        ),
        case(
            "layer_norm",
            include_str!("../../shaders/layer_norm.py"),
            "_layer_norm_fwd_fused",
            vec![
                f32p(),
                f32p(),
                f32p(),
                f32p(),
                f32p(),
                f32p(),
                i32s(1024),
                i32s(1000),
                f32s(1e-5),
            ],
            &[("BLOCK_SIZE", int(1024))],
        ),
    ];
    let strides = |m: i64, n: i64, k: i64| {
        vec![
            i32s(m),
            i32s(n),
            i32s(k),
            i32s(k),
            i32s(1),
            i32s(n),
            i32s(1),
            i32s(n),
            i32s(1),
        ]
    };
    for (bm, bn, bk) in [(64, 64, 32), (32, 32, 16), (16, 32, 16)] {
        let mut args = vec![f32p(), f32p(), f32p()];
        args.extend(strides(512, 512, 512));
        v.push(case(
            &format!("matmul_block_ptr_{bm}x{bn}x{bk}"),
            include_str!("../../shaders/matmul_block_ptr.py"),
            "matmul_block_ptr_kernel",
            args,
            &[
                ("BLOCK_M", int(bm)),
                ("BLOCK_N", int(bn)),
                ("BLOCK_K", int(bk)),
            ],
        ));
    }
    // f16: the warpgroup dot on sm90, its operands copied by TMA.
    let mut args = vec![f16p(), f16p(), f16p()];
    args.extend(strides(512, 512, 512));
    v.push(case(
        "matmul_block_ptr_f16_64x64x32",
        include_str!("../../shaders/matmul_block_ptr.py"),
        "matmul_block_ptr_kernel",
        args,
        &[
            ("BLOCK_M", int(64)),
            ("BLOCK_N", int(64)),
            ("BLOCK_K", int(32)),
        ],
    ));
    for (dt, (bm, bn, bk)) in [
        (DType::F16, (64, 64, 32)),
        (DType::F16, (128, 32, 32)),
        (DType::F32, (64, 32, 32)),
        (DType::BF16, (64, 64, 32)),
    ] {
        let mut args = vec![
            ptr(dt),
            ptr(dt),
            if dt == DType::F32 { f32p() } else { f16p() },
        ];
        args.extend(strides(512, 512, 512));
        v.push(case(
            &format!("matmul_{dt}_{bm}x{bn}x{bk}"),
            include_str!("../../shaders/matmul.py"),
            "matmul_kernel",
            args,
            &[
                ("BLOCK_SIZE_M", int(bm)),
                ("BLOCK_SIZE_N", int(bn)),
                ("BLOCK_SIZE_K", int(bk)),
                ("GROUP_SIZE_M", int(8)),
            ],
        ));
    }
    // An operand stored from registers before a wgmma (the proxy fence).
    let mut args = vec![f16p(), f16p(), f32p()];
    args.extend(strides(512, 512, 512));
    v.push(case(
        "matmul_f16_scaled_a",
        &include_str!("../../shaders/matmul.py").replace(
            "accumulator = tl.dot(a, b, accumulator)",
            "accumulator = tl.dot(a * 2, b, accumulator)",
        ),
        "matmul_kernel",
        args,
        &[
            ("BLOCK_SIZE_M", int(64)),
            ("BLOCK_SIZE_N", int(64)),
            ("BLOCK_SIZE_K", int(32)),
            ("GROUP_SIZE_M", int(8)),
        ],
    ));
    // The sources of frontend_kernels.rs, with the specializations traced there.
    let seed_bp = frontend_source("SEED_BLOCK_PTR");
    let masks = frontend_source("SEED_MASKS");
    let broadcast = frontend_source("SEED_BROADCAST");
    let tutorials = frontend_source("TUTORIALS");
    let blocks = |names: &[&'static str], vals: &[i64]| -> Vec<(&'static str, ConstValue)> {
        names.iter().zip(vals).map(|(n, v)| (*n, int(*v))).collect()
    };
    v.extend([
        case(
            "seed_matmul_bp",
            &seed_bp,
            "matmul_bp_kernel",
            vec![f32p(), f32p(), f32p(), i32s(40), i32s(40), i32s(40)],
            &blocks(
                &["N_ITERS", "BLOCK_M", "BLOCK_N", "BLOCK_K"],
                &[3, 16, 16, 16],
            ),
        ),
        case(
            "seed_softmax_bp",
            &seed_bp,
            "softmax_bp_kernel",
            vec![f32p(), f32p(), i32s(3), i32s(5)],
            &blocks(&["BLOCK_M", "BLOCK_N"], &[4, 8]),
        ),
        case(
            "seed_causal_mask",
            &masks,
            "causal_mask_kernel",
            vec![f32p(), f32p(), i32s(4), i32s(4), i32s(4), i32s(1)],
            &blocks(&["BLOCK_M", "BLOCK_N"], &[4, 4]),
        ),
        case(
            "seed_block_sparse",
            &masks,
            "block_sparse_double_kernel",
            vec![f32p(), f32p(), ptr(DType::I32), i32s(16)],
            &blocks(&["BLOCK", "NUM_BLOCKS"], &[4, 4]),
        ),
        case(
            "seed_ragged_row_sum",
            &masks,
            "ragged_row_sum_kernel",
            vec![f32p(), ptr(DType::I32), f32p(), i32s(4)],
            &blocks(&["MAX_WIDTH"], &[4]),
        ),
        case(
            "seed_broadcast_add",
            &broadcast,
            "broadcast_add_kernel",
            vec![ptr(DType::I32), i32s(3), i32s(4)],
            &blocks(&["BLOCK_M", "BLOCK_N"], &[4, 4]),
        ),
        case(
            "seed_hinted",
            &broadcast,
            "hinted_kernel",
            vec![f32p(), f32p(), i32s(16)],
            &blocks(&["BLOCK"], &[8]),
        ),
        case(
            "seed_copy_block_ptr",
            &broadcast,
            "copy_block_ptr_kernel",
            vec![
                f32p(),
                f32p(),
                i32s(3),
                i32s(4),
                i32s(4),
                i32s(1),
                i32s(3),
                i32s(4),
            ],
            &blocks(&["BLOCK_M", "BLOCK_N"], &[4, 4]),
        ),
        case(
            "tutorial_add",
            &tutorials,
            "add_kernel",
            vec![f32p(), f32p(), f32p(), i32s(1000)],
            &blocks(&["BLOCK_SIZE"], &[1024]),
        ),
        case(
            "tutorial_softmax_range",
            &tutorials,
            "softmax_kernel",
            vec![f32p(), f32p(), i32s(781), i32s(781), i32s(1823), i32s(781)],
            &blocks(&["BLOCK_SIZE", "num_stages"], &[1024, 4]),
        ),
        case(
            "tutorial_layer_norm_f16",
            &tutorials,
            "_layer_norm_fwd_fused",
            vec![
                f16p(),
                f16p(),
                f16p(),
                f16p(),
                f32p(),
                f32p(),
                i32s(1000),
                i32s(1000),
                f32s(1e-5),
            ],
            &blocks(&["BLOCK_SIZE"], &[256]),
        ),
    ]);
    let mut leaky = vec![f16p(), f16p(), f16p()];
    leaky.extend(strides(512, 512, 512));
    v.push(case(
        "tutorial_matmul_leaky_relu",
        &tutorials,
        "matmul_kernel",
        leaky,
        &[
            ("BLOCK_SIZE_M", int(64)),
            ("BLOCK_SIZE_N", int(64)),
            ("BLOCK_SIZE_K", int(32)),
            ("GROUP_SIZE_M", int(8)),
            ("ACTIVATION", ConstValue::Str("leaky_relu".into())),
        ],
    ));
    let i32p = || ptr(DType::I32);
    v.extend([
        case(
            "reverse_turns",
            EXTRA,
            "reverse_turns",
            vec![i32p(), i32p()],
            &[("N", int(4))],
        ),
        case(
            "locked_sums",
            EXTRA,
            "locked_sums",
            vec![i32p(), i32p(), f32p(), f32p()],
            &[("BLOCK", int(64))],
        ),
        case(
            "atomics",
            EXTRA,
            "atomics",
            vec![f32p(), i32p(), i32s(100)],
            &[("BLOCK", int(128))],
        ),
        case("show", EXTRA, "show", vec![f32p()], &[("BLOCK", int(64))]),
        case(
            "asserted",
            EXTRA,
            "asserted",
            vec![f32p(), f32p(), i32s(1000)],
            &[("BLOCK", int(256))],
        ),
        case(
            "block_copy",
            EXTRA,
            "block_copy",
            vec![f32p(), f32p(), i32s(30), i32s(20), i32s(20)],
            &[("BLOCK_M", int(32)), ("BLOCK_N", int(32))],
        ),
        case(
            "scans_and_args",
            EXTRA,
            "scans_and_args",
            vec![f32p(), f32p(), i32p()],
            &[("BLOCK", int(256))],
        ),
        case(
            "constants",
            EXTRA,
            "constants",
            vec![
                f32p(),
                f16p(),
                ptr(DType::BF16),
                ptr(DType::U32),
                ptr(DType::I64),
            ],
            &[("BLOCK", int(128))],
        ),
        case(
            "fp8_round_trip",
            EXTRA,
            "fp8_round_trip",
            vec![f32p(), f32p()],
            &[("BLOCK", int(128))],
        ),
        case(
            "rows",
            EXTRA,
            "rows",
            vec![f32p(), f32p(), i32s(30), i32s(50)],
            &[("BLOCK_M", int(32)), ("BLOCK_N", int(64))],
        ),
        case(
            "int_sums",
            EXTRA,
            "int_sums",
            vec![i32p(), i32p()],
            &[("BLOCK", int(1024))],
        ),
        case(
            "f64_math",
            EXTRA,
            "f64_math",
            vec![ptr(DType::F64), ptr(DType::F64)],
            &[("BLOCK", int(256))],
        ),
        case(
            "randoms",
            EXTRA,
            "randoms",
            vec![f32p(), i32s(1234)],
            &[("BLOCK", int(256))],
        ),
        case(
            "dot_bf16",
            EXTRA,
            "dot_bf16",
            vec![ptr(DType::BF16), ptr(DType::BF16), f32p()],
            &[("BM", int(64)), ("BN", int(64)), ("BK", int(32))],
        ),
        case(
            "dot_f16_acc",
            EXTRA,
            "dot_f16_acc",
            vec![f16p(), f16p(), f16p()],
            &[("BM", int(32)), ("BN", int(32)), ("BK", int(32))],
        ),
        case(
            "addresses",
            EXTRA,
            "addresses",
            vec![ptr(DType::I64), f32p(), ptr(DType::I64)],
            &[("BLOCK", int(128))],
        ),
    ]);
    v
}

/// The option sets of the executors: WGSL, PTX (sm_80), PTX for sm_90 (as
/// `tilewise_cuda::expand_options` sets them: warpgroup MMA), WGSL with cooperative
/// matrices and subgroup reductions (`Capabilities::offline_coop`), each also checked.
fn option_sets() -> Vec<(String, ExpandOptions)> {
    let sm90 = |warps| ExpandOptions {
        ring_budget: DEFAULT_RING_BUDGET,
        checked: false,
        num_stages: None,
        wgmma: true,
        wgmma_tf32: true,
        wgmma_register_a: true,
        tma: true,
        ..ExpandOptions::ptx(warps)
    };
    let f16 = |acc| CoopConfig {
        size: 16,
        input: DType::F16,
        acc,
    };
    let coop = ExpandOptions {
        coop_matrix: vec![f16(DType::F16), f16(DType::F32)],
        subgroup_reduce: true,
        wide_f16: true,
        ..ExpandOptions::wgsl(4)
    };
    let base = [
        ("wgsl", ExpandOptions::wgsl(4)),
        ("ptx", ExpandOptions::ptx(4)),
        ("sm90", sm90(4)),
        ("sm90x8", sm90(8)),
        ("coop", coop),
    ];
    let mut out = vec![];
    for (name, o) in base {
        out.push((
            format!("{name}+checked"),
            ExpandOptions {
                checked: true,
                ..o.clone()
            },
        ));
        out.push((name.to_string(), o));
    }
    out
}

/// Every case lowered under every option set: (case, option set, options, kernel).
fn lowered() -> Vec<(String, String, ExpandOptions, ThreadKernel)> {
    let mut out = vec![];
    for c in cases() {
        let module = Module::parse(&format!("{}.py", c.name), &c.src)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let spec = module
            .specialize(c.kernel, &c.args, &c.constexprs)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        for (oname, o) in option_sets() {
            // Pointers as data lower only where the target has addresses (WGSL
            // refuses them by name: tests/pointers_as_data.rs).
            if c.name == "addresses" && !o.global_addresses {
                continue;
            }
            let t = to_thread_ir(&spec.kernel, &o)
                .unwrap_or_else(|e| panic!("{} [{oname}]: {e}", c.name));
            out.push((c.name.clone(), oname, o, t));
        }
    }
    out
}

/// The name of a statement's variant (the match keeps the coverage list complete).
fn stmt_kind(s: &Stmt) -> &'static str {
    match s {
        Stmt::Loc(_) => "Loc",
        Stmt::Assign { expr, .. } => expr_kind(expr),
        Stmt::Store { .. } => "Store",
        Stmt::SharedStore { .. } => "SharedStore",
        Stmt::Atomic { .. } => "Atomic",
        Stmt::AtomicCas { .. } => "AtomicCas",
        Stmt::Barrier => "Barrier",
        Stmt::StorageBarrier => "StorageBarrier",
        Stmt::AsyncCopy { .. } => "AsyncCopy",
        Stmt::AsyncCommit => "AsyncCommit",
        Stmt::AsyncWait { .. } => "AsyncWait",
        Stmt::LdMatrix { trans: false, .. } => "LdMatrix",
        Stmt::LdMatrix { trans: true, .. } => "LdMatrix.trans",
        Stmt::CoopZero { .. } => "CoopZero",
        Stmt::CoopLoad { .. } => "CoopLoad",
        Stmt::CoopStore { .. } => "CoopStore",
        Stmt::CoopMulAdd { .. } => "CoopMulAdd",
        Stmt::CoopCopy { .. } => "CoopCopy",
        Stmt::Mma { .. } => "Mma",
        Stmt::Wgmma {
            a: thread_ir::WgmmaA::Regs(_),
            ..
        } => "Wgmma.regs",
        Stmt::Wgmma { .. } => "Wgmma",
        Stmt::WgmmaFence => "WgmmaFence",
        Stmt::WgmmaCommit => "WgmmaCommit",
        Stmt::WgmmaWait { .. } => "WgmmaWait",
        Stmt::FenceProxyAsync => "FenceProxyAsync",
        Stmt::MbarrierInit { .. } => "MbarrierInit",
        Stmt::MbarrierArriveTx { .. } => "MbarrierArriveTx",
        Stmt::MbarrierWait { .. } => "MbarrierWait",
        Stmt::TmaLoad { .. } => "TmaLoad",
        Stmt::For { .. } => "For",
        Stmt::If { .. } => "If",
        Stmt::While { .. } => "While",
    }
}

fn expr_kind(e: &Expr) -> &'static str {
    use tilewise_core::thread_ir::Special;
    match e {
        Expr::Const(_) => "Const",
        Expr::Special(Special::ThreadId) => "ThreadId",
        Expr::Special(Special::ProgramId(_)) => "ProgramId",
        Expr::Special(Special::NumPrograms(_)) => "NumPrograms",
        Expr::Special(Special::SubgroupId) => "SubgroupId",
        Expr::Special(Special::SubgroupInvocationId) => "SubgroupInvocationId",
        Expr::Param(_) => "Param",
        Expr::Address(_) => "Address",
        Expr::Copy(_) => "Copy",
        Expr::Unary(..) => "Unary",
        Expr::Binary(..) => "Binary",
        Expr::Cmp(..) => "Cmp",
        Expr::Select { .. } => "Select",
        Expr::Fma(..) => "Fma",
        Expr::Cast { bitcast: false, .. } => "Cast",
        Expr::Cast { bitcast: true, .. } => "Bitcast",
        Expr::Load { .. } => "Load",
        Expr::SharedLoad { .. } => "SharedLoad",
        Expr::Extract { .. } => "Extract",
        Expr::Construct(_) => "Construct",
        Expr::ShuffleXor { .. } => "ShuffleXor",
        Expr::SubgroupReduce { .. } => "SubgroupReduce",
        Expr::WarpUniform(_) => "WarpUniform",
    }
}

const EVERY_KIND: [&str; 55] = [
    "Loc",
    "Store",
    "SharedStore",
    "Atomic",
    "AtomicCas",
    "Barrier",
    "StorageBarrier",
    "AsyncCopy",
    "AsyncCommit",
    "AsyncWait",
    "LdMatrix",
    "LdMatrix.trans",
    "CoopZero",
    "CoopLoad",
    "CoopStore",
    "CoopMulAdd",
    "CoopCopy",
    "Mma",
    "Wgmma",
    "Wgmma.regs",
    "WgmmaFence",
    "WgmmaCommit",
    "WgmmaWait",
    "FenceProxyAsync",
    "MbarrierInit",
    "MbarrierArriveTx",
    "MbarrierWait",
    "TmaLoad",
    "For",
    "If",
    "While",
    "Const",
    "ThreadId",
    "ProgramId",
    "NumPrograms",
    "SubgroupId",
    "SubgroupInvocationId",
    "Param",
    "Address",
    "Copy",
    "Unary",
    "Binary",
    "Cmp",
    "Select",
    "Fma",
    "Cast",
    "Bitcast",
    "Load",
    "SharedLoad",
    "Extract",
    "Construct",
    "ShuffleXor",
    "SubgroupReduce",
    "WarpUniform",
    "checks",
];

fn kinds(body: &[Stmt], out: &mut std::collections::BTreeSet<&'static str>) {
    for s in body {
        out.insert(stmt_kind(s));
        for b in s.bodies() {
            kinds(b, out);
        }
    }
}

/// The first line where `a` and `b` differ, for a readable failure.
fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  printed: {x}\n  again:   {y}", i + 1);
        }
    }
    format!(
        "{} lines printed, {} printed again",
        a.lines().count(),
        b.lines().count()
    )
}

#[test]
fn print_parse_print_is_the_identity() {
    let all = lowered();
    let mut seen = std::collections::BTreeSet::new();
    let mut cases = std::collections::BTreeSet::new();
    let mut lines = 0;
    for (case, oname, options, t) in &all {
        let name = format!("{case} [{oname}]");
        let text = thread_ir::print(t);
        lines += text.lines().count();
        let parsed = thread_ir::parse(&text)
            .unwrap_or_else(|e| panic!("{name} does not parse back:\n{}", e.render()));
        let again = thread_ir::print(&parsed);
        assert!(
            again == text,
            "{name}: print(parse(text)) differs, {}",
            first_difference(&text, &again)
        );
        // The whole kernel comes back but its source (not printed). Compared through
        // Debug: NaN constants are not equal to themselves.
        let mut restored = parsed.clone();
        restored.source = t.source.clone();
        assert!(
            format!("{restored:?}") == format!("{t:?}"),
            "{name}: the parsed kernel differs from the lowered one"
        );
        assert!(parsed.source.is_none());
        verify(t, options, "lowering").unwrap_or_else(|e| panic!("{name}: {e}"));
        verify(&parsed, options, "parse").unwrap_or_else(|e| panic!("{name}: {e}"));
        kinds(&t.body, &mut seen);
        if t.checks.is_some() {
            seen.insert("checks");
        }
        cases.insert(case.clone());
    }
    let missing: Vec<&&str> = EVERY_KIND.iter().filter(|k| !seen.contains(*k)).collect();
    assert!(missing.is_empty(), "never printed and parsed: {missing:?}");
    let sets = option_sets().len();
    eprintln!(
        "round trip: {} Thread IR kernels ({} specializations x {sets} option sets), {lines} lines",
        all.len(),
        cases.len()
    );
    // Every option set lowers every case, but for WGSL's refusal of `addresses`.
    let refused = option_sets()
        .iter()
        .filter(|(_, o)| !o.global_addresses)
        .count();
    assert_eq!(all.len(), cases.len() * sets - refused);
    assert!(cases.len() >= 40, "{} specializations", cases.len());
}

/// The simulator runs the parsed kernel as it runs the lowered one (here: the
/// PTX lowering of the staged block-pointer matmul, with its copies, waits and `mma`s).
#[test]
fn the_parsed_kernel_simulates_alike() {
    use tilewise_core::interp::{HostBuffer, RtArg};
    use tilewise_core::launch::Grid;
    use tilewise_core::thread_ir::sim::simulate;
    let c = cases()
        .into_iter()
        .find(|c| c.name == "matmul_block_ptr_32x32x16")
        .expect("the case");
    let mut args = vec![ptr(DType::F32), ptr(DType::F32), ptr(DType::F32)];
    let (m, n, k) = (40usize, 24usize, 70usize);
    for x in [m, n, k, k, 1, n, 1, n, 1] {
        args.push(i32s(x as i64));
    }
    let spec = Module::parse("mm.py", &c.src)
        .and_then(|m| m.specialize(c.kernel, &args, &c.constexprs))
        .unwrap_or_else(|e| panic!("{e}"));
    let tk = to_thread_ir(&spec.kernel, &ExpandOptions::ptx(4)).unwrap_or_else(|e| panic!("{e}"));
    let parsed = thread_ir::parse(&thread_ir::print(&tk)).unwrap_or_else(|e| panic!("{e}"));
    let f32s_buf = |len: usize, seed: u32| HostBuffer {
        dtype: DType::F32,
        bytes: (0..len)
            .flat_map(|i| {
                ((((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
                    .to_le_bytes()
            })
            .collect(),
    };
    let buffers = vec![f32s_buf(m * k, 1), f32s_buf(k * n, 2), f32s_buf(m * n, 3)];
    let mut rt: Vec<RtArg> = (0..3)
        .map(|b| RtArg::Buffer {
            buffer: b,
            offset: 0,
            len: buffers[b].bytes.len() / 4,
        })
        .collect();
    for x in [m, n, k, k, 1, n, 1, n, 1] {
        rt.push(RtArg::Scalar(ScalarValue::Int(DType::I32, x as i64)));
    }
    let rt: Vec<RtArg> = spec.arg_indices.iter().map(|&i| rt[i]).collect();
    let grid = Grid([2, 1, 1]);
    let run = |t: &ThreadKernel| {
        let mut b = buffers.clone();
        simulate(t, grid, &rt, &mut b).unwrap_or_else(|e| panic!("{e}"));
        b
    };
    let want = run(&tk);
    assert_ne!(want[2], buffers[2], "the kernel wrote nothing");
    assert_eq!(run(&parsed), want);
}

/// Where `parse` fails on `text`: its 1-based (line, column) and message.
fn parse_error(text: &str) -> ((u32, u32), String) {
    let e = thread_ir::parse(text).expect_err("malformed text parsed");
    assert_eq!(e.kind, tilewise_core::ErrorKind::Syntax);
    (e.line_col().expect("a located error"), e.message)
}

#[test]
fn malformed_text_gives_located_errors() {
    let ok = "thread_kernel @k(x: mut buffer<f32>, n: i32) threads 32 {\n  r0: i32 = thread_id\n  r1: f32 = const 1.5\n  store x[r0] = r1\n}\n";
    let k = thread_ir::parse(ok).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(thread_ir::print(&k), ok);
    let cases: [(&str, (u32, u32), &str); 16] = [
        ("", (1, 1), "expected `thread_kernel`, found the end of the text"),
        ("thread_kernel k", (1, 15), "expected `@`, found `k`"),
        (
            "thread_kernel @k(x: buffer<f33>) threads 32 {\n}\n",
            (1, 28),
            "expected a dtype",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = thread_id\n  r1: i32 = frobnicate r0\n}\n",
            (3, 13),
            "expected an expression, found `frobnicate`",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = add r0 r0\n}\n",
            (2, 20),
            "expected `,`, found `r0`",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = const 1 2\n}\n",
            (2, 21),
            "expected the end of the line, found `2`",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = const 1\n",
            (3, 1),
            "expected `}`, found the end of the text",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = thread_id\n  store y[r0] = r0\n}\n",
            (3, 9),
            "no parameter is named `y`",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = thread_id\n  r0: f32 = const 1.0\n}\n",
            (3, 3),
            "r0 is i32, not f32",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = add r1, r1\n}\n",
            (2, 17),
            "register r1 has no type",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r1: i32 = thread_id\n}\n",
            (1, 1),
            "register r0 is missing",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: i32 = load s0[r0]\n}\n",
            (2, 18),
            "shared array s0 is not declared",
        ),
        (
            "thread_kernel @k() threads 32 {\n  note \"unterminated\n}\n",
            (2, 8),
            "unterminated string",
        ),
        (
            "thread_kernel @k() threads 32 {\n  r0: f32 = const nan(0x3ff0000000000000)\n}\n",
            (2, 23),
            "expected the bits of a NaN",
        ),
        (
            "thread_kernel @k() threads 32 {\n  shared s1 a: [f32; 4] align 16\n}\n",
            (2, 10),
            "expected `s0`",
        ),
        (
            "thread_kernel @k() threads 99999999999 {\n}\n",
            (1, 28),
            "expected the number of threads",
        ),
    ];
    for (text, at, want) in cases {
        let (got_at, msg) = parse_error(text);
        assert!(
            msg.contains(want),
            "{text:?}: `{msg}` does not say `{want}`"
        );
        assert_eq!(got_at, at, "{text:?}: {msg}");
    }
    // Deep nesting is refused, not a stack overflow.
    let mut deep = String::from("thread_kernel @k() threads 32 {\n  r0: i1 = const true\n");
    for _ in 0..10_000 {
        deep.push_str("if r0 {\n");
    }
    let ((line, _), msg) = parse_error(&deep);
    assert!(msg.contains("nest deeper than"), "{msg}");
    assert!(line > 100, "{line}");
    // Huge register numbers are refused without allocating for them.
    let (_, msg) = parse_error("thread_kernel @k() threads 32 {\n  reg r0..=r4000000000: i32\n}\n");
    assert!(msg.contains("registers"), "{msg}");
    // Garbage of every byte never panics.
    let bytes: Vec<u8> = (0..=255u8).collect();
    let noise = String::from_utf8_lossy(&bytes);
    for cut in 0..ok.len() {
        let _ = thread_ir::parse(&ok[..cut]);
        let _ = thread_ir::parse(&format!("{}{noise}{}", &ok[..cut], &ok[cut..]));
    }
}

/// What the lowering does not produce but the text must still carry exactly: NaN
/// payloads and signs, signed zeros, subnormals, the integer extremes, names that
/// need quotes (one spelled like a shared array), every check and print kind, empty
/// branches and a `While` without a span.
#[test]
fn exotic_values_round_trip() {
    use tilewise_core::diag::Span;
    use tilewise_core::ir::{BinaryOp, Const};
    use tilewise_core::thread_ir::checks::{
        CheckKind, CheckSite, Checks, HintRule, PrintSite, PrintValue,
    };
    use tilewise_core::thread_ir::{
        Frag, FragRole, FragTy, Param, ParamKind, Reg, RegTy, SharedArray, Special,
    };
    let consts = [
        (
            DType::F64,
            Const::Float(f64::from_bits(0x7ff8_0000_0000_0001)),
        ),
        (DType::F32, Const::Float(-f64::NAN)),
        (DType::F32, Const::Float(f64::NAN)),
        (DType::F64, Const::Float(-0.0)),
        (DType::F64, Const::Float(5e-324)),
        (DType::F64, Const::Float(f64::MAX)),
        (DType::F64, Const::Float(0.1 + 0.2)),
        (DType::F16, Const::Float(-65504.0)),
        (DType::U64, Const::Int(-1)),
        (DType::I64, Const::Int(i64::MIN)),
        (DType::I64, Const::Int(i64::MAX)),
        (DType::I1, Const::Bool(true)),
        (DType::F32, Const::Int(3)),
    ];
    let mut regs: Vec<RegTy> = consts.iter().map(|(d, _)| RegTy::scalar(*d)).collect();
    let mut body: Vec<Stmt> = consts
        .iter()
        .enumerate()
        .map(|(i, (_, c))| Stmt::Assign {
            dst: Reg(i as u32),
            expr: Expr::Const(*c),
        })
        .collect();
    let n = regs.len() as u32;
    regs.push(RegTy {
        dtype: DType::F32,
        lanes: 4,
    });
    regs.push(RegTy::scalar(DType::I32));
    regs.push(RegTy::scalar(DType::BF16)); // never written: declared with `reg`
    body.extend([
        Stmt::Assign {
            dst: Reg(n + 1),
            expr: Expr::Special(Special::NumPrograms(2)),
        },
        Stmt::If {
            cond: Reg(11),
            then_body: vec![],
            else_body: vec![Stmt::Assign {
                dst: Reg(n + 1),
                expr: Expr::Binary(BinaryOp::MulHi, Reg(n + 1), Reg(n + 1)),
            }],
        },
        Stmt::While {
            cond_body: vec![],
            cond: Reg(11),
            body: vec![Stmt::Barrier],
            span: Span::NONE,
        },
        Stmt::Store {
            buf: 0,
            index: Reg(n + 1),
            value: Reg(2),
            mask: Some(Reg(11)),
        },
        Stmt::CoopZero { dst: Frag(0) },
    ]);
    let k = ThreadKernel {
        name: "exotic kernel".into(),
        params: vec![
            Param {
                name: "s3".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::F32,
                    written: true,
                },
            },
            Param {
                name: "with \"quotes\"\n".into(),
                kind: ParamKind::Scalar { dtype: DType::I32 },
            },
            Param {
                name: "record".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::I32,
                    written: true,
                },
            },
        ],
        threads: 64,
        shared: vec![
            SharedArray {
                name: "a+b".into(),
                dtype: DType::F8E4M3,
                len: 0,
                align: 1024,
                overlays: None,
            },
            SharedArray {
                name: "c".into(),
                dtype: DType::F32,
                len: 0,
                align: 16,
                overlays: Some(0),
            },
        ],
        regs,
        frags: vec![FragTy {
            role: FragRole::B,
            dtype: DType::F16,
            size: 8,
        }],
        body,
        notes: vec!["a note\twith \\ escapes \u{7}".into(), String::new()],
        source: None,
        checks: Some(Checks {
            sites: vec![
                CheckSite {
                    span: Span::new(3, 9),
                    kind: CheckKind::Access {
                        what: "atomic",
                        param: 0,
                    },
                    shape: vec![],
                },
                CheckSite {
                    span: Span::NONE,
                    kind: CheckKind::Hint {
                        name: "max_constancy",
                        rule: HintRule::Constancy(-4),
                        widens: true,
                    },
                    shape: vec![2, 3, 4],
                },
            ],
            lens: vec![(0, 1)],
            record: 2,
            print_buffer: Some(2),
            prints: vec![
                PrintSite {
                    span: Span::new(0, 1),
                    label: "p: ".into(),
                    shape: vec![8],
                    value: PrintValue::Ptr { param: 0 },
                    hex: true,
                },
                PrintSite {
                    span: Span::new(10, 20),
                    label: String::new(),
                    shape: vec![],
                    value: PrintValue::F64,
                    hex: false,
                },
            ],
        }),
    };
    let text = thread_ir::print(&k);
    let parsed = thread_ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(thread_ir::print(&parsed), text);
    assert_eq!(format!("{parsed:?}"), format!("{k:?}"), "{text}");
    // NaNs are compared by their bits (Debug prints every NaN as `NaN`).
    for (i, (_, c)) in consts.iter().enumerate() {
        let Stmt::Assign {
            expr: Expr::Const(got),
            ..
        } = &parsed.body[i]
        else {
            panic!("statement {i}");
        };
        match (c, got) {
            (Const::Float(a), Const::Float(b)) => assert_eq!(a.to_bits(), b.to_bits(), "{a}"),
            (a, b) => assert_eq!(a, b),
        }
    }
    for want in [
        "thread_kernel @\"exotic kernel\"(\"s3\": mut buffer<f32>, \"with \\\"quotes\\\"\\n\": i32, record: mut buffer<i32>) threads 64 {",
        "const nan(0x7ff8000000000001)",
        "const nan(0xfff8000000000000)",
        "const 18446744073709551615",
        "shared s0 \"a+b\": [f8e4m3; 0] align 1024",
        "frag f0: coop8x8<f16, b>",
        "reg r15: bf16",
        "store \"s3\"[r14] = r2 mask r11",
        "while {",
    ] {
        assert!(text.contains(want), "no `{want}` in:\n{text}");
    }
}
