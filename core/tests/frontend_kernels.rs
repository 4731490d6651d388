//! Traces the seed kernels and Triton tutorial kernels and checks the printed IR.

use tilewise_core::frontend::{Module, Specialized};
use tilewise_core::ir::{self, DType};
use tilewise_core::launch::{ArgSpec, ConstValue, ScalarValue};

fn ptr(d: DType) -> ArgSpec {
    ArgSpec::Ptr {
        dtype: d,
        aligned16: true,
    }
}
fn i32s(v: i64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Int(DType::I32, v))
}
fn f32s(v: f64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Float(DType::F32, v))
}
fn c(n: &str, v: impl Into<ConstValue>) -> (String, ConstValue) {
    (n.to_string(), v.into())
}

fn trace(
    src: &str,
    kernel: &str,
    args: &[ArgSpec],
    cs: &[(String, ConstValue)],
) -> (Specialized, String) {
    let m = Module::parse("k.py", src).unwrap_or_else(|e| panic!("{e}"));
    let s = m
        .specialize(kernel, args, cs)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = ir::print(&s.kernel);
    (s, text)
}

const HEADER: &str = "import torch\nimport triton\nimport triton.language as tl\n\n";

const SEED_BLOCK_PTR: &str = r#"
@triton.jit
def matmul_bp_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     N_ITERS: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)

    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BLOCK_M, 0),
                          (BLOCK_M, BLOCK_K), (1, 0))
    b = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BLOCK_N),
                          (BLOCK_K, BLOCK_N), (1, 0))
    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1),
                          (pid_m * BLOCK_M, pid_n * BLOCK_N),
                          (BLOCK_M, BLOCK_N), (1, 0))

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, N_ITERS):
        a_tile = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        b_tile = tl.load(b, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a_tile, b_tile, acc)
        a = tl.advance(a, (0, BLOCK_K))              # slide along K
        b = tl.advance(b, (BLOCK_K, 0))

    tl.store(c, acc, boundary_check=(0, 1))

@triton.jit
def softmax_bp_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    x = tl.make_block_ptr(x_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, 0),
                          (BLOCK_M, BLOCK_N), (1, 0))
    offs_n = tl.arange(0, BLOCK_N)
    col_mask = offs_n[None, :] < N
    t = tl.load(x, boundary_check=(0, 1), padding_option="zero")
    t = tl.where(col_mask, t, -float("inf"))
    m = tl.max(t, axis=1)
    p = tl.exp(t - m[:, None])
    l = tl.sum(p, axis=1)
    out = p / l[:, None]
    tl.store(x, out, boundary_check=(0, 1))

if __name__ == "__main__":
    grid = (triton.cdiv(4, 16), triton.cdiv(4, 16))
"#;

#[test]
fn seed_block_ptr_matmul() {
    let src = format!("{HEADER}{SEED_BLOCK_PTR}");
    let args = [
        ptr(DType::F32),
        ptr(DType::F32),
        ptr(DType::F32),
        i32s(40),
        i32s(40),
        i32s(40),
    ];
    let cs = [
        c("N_ITERS", 3),
        c("BLOCK_M", 16),
        c("BLOCK_N", 16),
        c("BLOCK_K", 16),
    ];
    let (s, text) = trace(&src, "matmul_bp_kernel", &args, &cs);
    assert_eq!(s.arg_indices, vec![0, 1, 2, 3, 4, 5]);
    assert!(text.contains("make_block_ptr"), "{text}");
    assert!(
        text.contains(": (block_ptr<f32, 16x16>, tile<16x16xf32>, block_ptr<f32, 16x16>)"),
        "{text}"
    );
    assert!(text.contains("dot "), "{text}");
    assert!(text.contains("precision tf32"), "{text}");
    assert!(
        text.contains("boundary_check [0, 1] padding zero"),
        "{text}"
    );
    assert!(text.contains("advance"), "{text}");
    assert!(text.contains("%0: ptr<f32> a_ptr [div 4]"), "{text}");
}

#[test]
fn seed_block_ptr_softmax() {
    let src = format!("{HEADER}{SEED_BLOCK_PTR}");
    let args = [ptr(DType::F32), ptr(DType::F32), i32s(3), i32s(5)];
    let (_, text) = trace(
        &src,
        "softmax_bp_kernel",
        &args,
        &[c("BLOCK_M", 4), c("BLOCK_N", 8)],
    );
    assert!(text.contains("const -inf : f32"), "{text}");
    assert!(text.contains("reduce"), "{text}");
    assert!(text.contains(" max : tile<4xf32>"), "{text}");
    assert!(text.contains(" add : tile<4xf32>"), "{text}");
    assert!(text.contains("select"), "{text}");
}

const SEED_MASKS: &str = r#"
@triton.jit
def causal_mask_kernel(x_ptr, out_ptr, M, N, stride_m, stride_n,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    bounds_mask = (rows[:, None] < M) & (cols[None, :] < N)
    causal_mask = cols[None, :] <= rows[:, None]
    ptrs = x_ptr + rows[:, None] * stride_m + cols[None, :] * stride_n
    x = tl.load(ptrs, mask=bounds_mask, other=0.0)
    result = tl.where(causal_mask, x, 0.0)
    out_ptrs = out_ptr + rows[:, None] * N + cols[None, :]
    tl.store(out_ptrs, result, mask=bounds_mask)

@triton.jit
def block_sparse_double_kernel(x_ptr, out_ptr, block_mask_ptr, N,
                                BLOCK: tl.constexpr, NUM_BLOCKS: tl.constexpr):
    pid = tl.program_id(0)
    is_active = tl.load(block_mask_ptr + pid)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < N
    if is_active:
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        tl.store(out_ptr + offsets, x * 2.0, mask=mask)

@triton.jit
def ragged_row_sum_kernel(x_ptr, lengths_ptr, out_ptr, stride_row, MAX_WIDTH: tl.constexpr):
    row = tl.program_id(0)
    row_len = tl.load(lengths_ptr + row)
    cols = tl.arange(0, MAX_WIDTH)
    mask = cols < row_len
    ptrs = x_ptr + row * stride_row + cols
    x = tl.load(ptrs, mask=mask, other=0.0)
    total = tl.sum(x, axis=0)
    tl.store(out_ptr + row, total)

def main():
    out = torch.empty(4, 4)
    causal_mask_kernel[(1,)](x, out, 4, 4, x.stride(0), x.stride(1), BLOCK_M=4, BLOCK_N=4)

if __name__ == "__main__":
    main()
"#;

#[test]
fn seed_causal_mask() {
    let src = format!("{HEADER}{SEED_MASKS}");
    let args = [
        ptr(DType::F32),
        ptr(DType::F32),
        i32s(4),
        i32s(4),
        i32s(4),
        i32s(1),
    ];
    let (_, text) = trace(
        &src,
        "causal_mask_kernel",
        &args,
        &[c("BLOCK_M", 4), c("BLOCK_N", 4)],
    );
    assert!(text.contains("cmp le"), "{text}");
    assert!(text.contains("and "), "{text}");
    assert!(text.contains("addptr"), "{text}");
    assert!(
        text.contains("load ") && text.contains(" mask ") && text.contains(" other "),
        "{text}"
    );
    assert!(text.contains(": tile<4x4xptr<f32>>"), "{text}");
}

#[test]
fn seed_block_sparse_if_on_loaded_scalar() {
    let src = format!("{HEADER}{SEED_MASKS}");
    let args = [ptr(DType::F32), ptr(DType::F32), ptr(DType::I32), i32s(16)];
    let (_, text) = trace(
        &src,
        "block_sparse_double_kernel",
        &args,
        &[c("BLOCK", 4), c("NUM_BLOCKS", 4)],
    );
    assert!(text.contains("cmp ne"), "{text}");
    assert!(text.contains("if "), "{text}");
    assert!(text.contains("store"), "{text}");
}

#[test]
fn seed_ragged_row_sum() {
    let src = format!("{HEADER}{SEED_MASKS}");
    let args = [ptr(DType::F32), ptr(DType::I32), ptr(DType::F32), i32s(4)];
    let (s, text) = trace(&src, "ragged_row_sum_kernel", &args, &[c("MAX_WIDTH", 4)]);
    assert_eq!(s.kernel.params.len(), 4);
    assert!(text.contains("reduce"), "{text}");
    assert!(text.contains("store"), "{text}");
}

const SEED_BROADCAST: &str = r#"
@triton.jit
def broadcast_add_kernel(out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    row_col = rows[:, None]
    col_row = cols[None, :]
    tl.static_print("row_col shape:", row_col.shape)
    tl.static_print("col_row shape:", col_row.shape)
    combined = row_col + col_row
    tl.static_print("combined shape:", combined.shape)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    out_ptrs = out_ptr + rows[:, None] * N + cols[None, :]
    tl.store(out_ptrs, combined, mask=mask)

@triton.jit
def hinted_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    offsets = tl.multiple_of(offsets, BLOCK)
    offsets = tl.max_contiguous(offsets, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * 2.0, mask=mask)

@triton.jit
def copy_block_ptr_kernel(x_ptr, out_ptr, M, N, stride_m, stride_n,
                           out_M, out_N,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    x_block_ptr = tl.make_block_ptr(
        base=x_ptr, shape=(M, N), strides=(stride_m, stride_n),
        offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tile = tl.load(x_block_ptr, boundary_check=(0, 1))
    out_block_ptr = tl.make_block_ptr(
        base=out_ptr, shape=(out_M, out_N), strides=(out_N, 1),
        offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tl.store(out_block_ptr, tile, boundary_check=(0, 1))
"#;

#[test]
fn seed_broadcast_static_print() {
    let src = format!("{HEADER}{SEED_BROADCAST}");
    let (s, text) = trace(
        &src,
        "broadcast_add_kernel",
        &[ptr(DType::I32), i32s(3), i32s(4)],
        &[c("BLOCK_M", 4), c("BLOCK_N", 4)],
    );
    assert_eq!(
        s.static_prints,
        vec![
            "row_col shape: [4, 1]",
            "col_row shape: [1, 4]",
            "combined shape: [4, 4]"
        ]
    );
    assert!(text.contains("broadcast"), "{text}");
}

#[test]
fn seed_hints_and_keyword_block_ptr() {
    let src = format!("{HEADER}{SEED_BROADCAST}");
    let (_, text) = trace(
        &src,
        "hinted_kernel",
        &[ptr(DType::F32), ptr(DType::F32), i32s(16)],
        &[c("BLOCK", 8)],
    );
    assert!(text.contains("hint multiple_of [8]"), "{text}");
    assert!(text.contains("hint max_contiguous [8]"), "{text}");
    assert!(text.contains("%2: i32 n [div 16]"), "{text}");
    let args = [
        ptr(DType::F32),
        ptr(DType::F32),
        i32s(3),
        i32s(4),
        i32s(4),
        i32s(1),
        i32s(3),
        i32s(4),
    ];
    let (_, text) = trace(
        &src,
        "copy_block_ptr_kernel",
        &args,
        &[c("BLOCK_M", 4), c("BLOCK_N", 4)],
    );
    assert!(text.contains("block_ptr<f32, 4x4>"), "{text}");
    assert!(text.contains("cast %2 : i64"), "{text}");
}

const TUTORIALS: &str = r#"
@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)

@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)

@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)

@triton.jit
def matmul_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
        GROUP_SIZE_M: tl.constexpr,
        ACTIVATION: tl.constexpr
):
    """Kernel for computing the matmul C = A x B."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    tl.assume(pid_m >= 0) if False else None
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)

@triton.jit
def _layer_norm_fwd_fused(
    X, Y, W, B, Mean, Rstd,
    stride, N, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)
"#;

#[test]
fn tutorial_vector_add() {
    let src = format!("{HEADER}{TUTORIALS}");
    let (s, text) = trace(
        &src,
        "add_kernel",
        &[
            ptr(DType::F32),
            ptr(DType::F32),
            ptr(DType::F32),
            i32s(1000),
        ],
        &[c("BLOCK_SIZE", 1024)],
    );
    assert_eq!(s.arg_indices, vec![0, 1, 2, 3]);
    assert!(text.contains("arange 0, 1024 : tile<1024xi32>"), "{text}");
    assert!(text.contains("add "), "{text}");
}

#[test]
fn tutorial_fused_softmax_with_tl_range() {
    let src = format!("{HEADER}{TUTORIALS}");
    let args = [
        ptr(DType::F32),
        ptr(DType::F32),
        i32s(781),
        i32s(781),
        i32s(1823),
        i32s(781),
    ];
    let (_, text) = trace(
        &src,
        "softmax_kernel",
        &args,
        &[c("BLOCK_SIZE", 1024), c("num_stages", 4)],
    );
    assert!(text.contains("num_stages 4"), "{text}");
    assert!(text.contains("num_programs 0"), "{text}");
}

#[test]
fn tutorial_grouped_matmul_f16() {
    let src = format!("{HEADER}{TUTORIALS}");
    let mut args = vec![ptr(DType::F16), ptr(DType::F16), ptr(DType::F16)];
    args.extend([
        i32s(512),
        i32s(512),
        i32s(512),
        i32s(512),
        i32s(1),
        i32s(512),
        i32s(1),
        i32s(512),
        i32s(1),
    ]);
    let cs = [
        c("BLOCK_SIZE_M", 64),
        c("BLOCK_SIZE_N", 64),
        c("BLOCK_SIZE_K", 32),
        c("GROUP_SIZE_M", 8),
        c("ACTIVATION", "leaky_relu"),
    ];
    let (_, text) = trace(&src, "matmul_kernel", &args, &cs);
    assert!(text.contains("dot "), "{text}");
    assert!(text.contains("precision ieee"), "{text}");
    assert!(
        text.contains(": (tile<64x32xptr<f16>>, tile<64x64xf32>, tile<32x64xptr<f16>>)"),
        "{text}"
    );
    assert!(text.contains("select"), "{text}"); // leaky_relu inlined
    assert!(
        text.contains("cast") && text.contains("tile<64x64xf16>"),
        "{text}"
    );
    // no activation: leaky_relu not traced
    let cs = [
        c("BLOCK_SIZE_M", 64),
        c("BLOCK_SIZE_N", 64),
        c("BLOCK_SIZE_K", 32),
        c("GROUP_SIZE_M", 8),
        c("ACTIVATION", ""),
    ];
    let (_, text) = trace(&src, "matmul_kernel", &args, &cs);
    assert!(!text.contains("select"), "{text}");
}

#[test]
fn tutorial_layer_norm_forward() {
    let src = format!("{HEADER}{TUTORIALS}");
    let args = [
        ptr(DType::F16),
        ptr(DType::F16),
        ptr(DType::F16),
        ptr(DType::F16),
        ptr(DType::F32),
        ptr(DType::F32),
        i32s(1000),
        i32s(1000),
        f32s(1e-5),
    ];
    let (s, text) = trace(
        &src,
        "_layer_norm_fwd_fused",
        &args,
        &[c("BLOCK_SIZE", 256)],
    );
    assert_eq!(s.kernel.params.len(), 9);
    assert!(text.contains("rsqrt") || text.contains("sqrt"), "{text}");
    assert!(text.matches("for ").count() == 3, "{text}");
}

#[test]
fn integers_equal_to_one_are_specialized_as_constants() {
    // As Triton does: a stride of 1 becomes a constant (so the lowering can prove the
    // dimension contiguous), the argument drops out of the kernel's parameters, and
    // the specialization key tells 1 from other values.
    let src = format!(
        "{HEADER}
@triton.jit
def scaled(x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs * stride))
"
    );
    let one = [ptr(DType::F32), ptr(DType::F32), i32s(1)];
    let (s, text) = trace(&src, "scaled", &one, &[c("BLOCK", 8)]);
    assert!(!text.contains("stride ["), "{text}");
    assert!(!text.contains("i32 stride"), "{text}");
    assert_eq!(s.arg_indices, vec![0, 1], "{text}");
    let three = [ptr(DType::F32), ptr(DType::F32), i32s(3)];
    let (s, text) = trace(&src, "scaled", &three, &[c("BLOCK", 8)]);
    assert!(text.contains("i32 stride"), "{text}");
    assert_eq!(s.arg_indices, vec![0, 1, 2]);
    let key = |a: &[ArgSpec]| tilewise_core::launch::SpecKey::new("scaled", a, &[]);
    assert_ne!(key(&one), key(&three));
}

/// `tl.range(..., flatten=)` reaches the loop (what `lower::flatten_loops` honours);
/// anything but a constexpr bool is a static error at its value.
#[test]
fn range_flatten_is_kept_on_the_loop() {
    let src = format!(
        "{HEADER}{}",
        r#"
@triton.jit
def k(x_ptr, n, F: tl.constexpr):
    acc = 0.0
    for i in tl.range(0, n, flatten=F):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)
"#
    );
    for (value, printed) in [(true, "flatten true"), (false, "flatten false")] {
        let (_, text) = trace(&src, "k", &[ptr(DType::F32), i32s(0)], &[c("F", value)]);
        assert!(text.contains(printed), "{text}");
    }
    let m = Module::parse("k.py", &src).unwrap();
    let err = m
        .specialize("k", &[ptr(DType::F32), i32s(0)], &[c("F", 2.5)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("flatten must be a constexpr bool"), "{err}");
}
