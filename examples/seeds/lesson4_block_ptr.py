# Lesson 4 -- block pointers: make_block_ptr, boundary_check, advance.
#
# A matmul whose tiles are block pointers (ragged M, N, K handled by zero padding),
# the same matmul reading B transposed through (shape, strides, order) alone, a 1-D
# block-pointer row copy, a softmax that pairs a block-pointer load with a manual
# -inf mask, and a fused SwiGLU.

import triton
import triton.language as tl


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
    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N),
                          (BLOCK_M, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, N_ITERS):
        a_tile = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        b_tile = tl.load(b, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a_tile, b_tile, acc)
        a = tl.advance(a, (0, BLOCK_K))      # slide along K
        b = tl.advance(b, (BLOCK_K, 0))
    tl.store(c, acc, boundary_check=(0, 1))


# B is passed as B^T stored row-major, an (N, K) array: element (k, j) of B lives at
# j * K + k. Viewed as a (K, N) matrix its strides are (1, K) and axis 0 is the
# contiguous one, hence order=(0, 1).
@triton.jit
def matmul_bt_kernel(a_ptr, bt_ptr, c_ptr, M, N, K,
                     N_ITERS: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BLOCK_M, 0),
                          (BLOCK_M, BLOCK_K), (1, 0))
    b = tl.make_block_ptr(bt_ptr, (K, N), (1, K), (0, pid_n * BLOCK_N),
                          (BLOCK_K, BLOCK_N), (0, 1))
    c = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N),
                          (BLOCK_M, BLOCK_N), (1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, N_ITERS):
        a_tile = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        b_tile = tl.load(b, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a_tile, b_tile, acc)
        a = tl.advance(a, (0, BLOCK_K))
        b = tl.advance(b, (BLOCK_K, 0))
    tl.store(c, acc, boundary_check=(0, 1))


# Homework 1: a row is a matrix with one axis.
@triton.jit
def row_copy_bp_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, shape=(N,), strides=(1,), offsets=(pid * BLOCK,),
                            block_shape=(BLOCK,), order=(0,))
    dst = tl.make_block_ptr(out_ptr, shape=(N,), strides=(1,), offsets=(pid * BLOCK,),
                            block_shape=(BLOCK,), order=(0,))
    row = tl.load(src, boundary_check=(0,))
    tl.store(dst, row, boundary_check=(0,))


# Homework 4: block pointers pad only with zero or nan, so the max pass needs a
# hand-built -inf mask on the columns past N.
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
    result = p / l[:, None]
    out = tl.make_block_ptr(out_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, 0),
                            (BLOCK_M, BLOCK_N), (1, 0))
    tl.store(out, result, boundary_check=(0, 1))


# Lesson 5 preview: SwiGLU fused into one pass, out = silu(gate) * up, where
# silu(x) = x * sigmoid(x). Computed in f32, stored in the output's dtype.
@triton.jit
def swiglu_kernel(gate_ptr, up_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    sig = 1.0 / (1.0 + tl.exp(-g))
    out = g * sig * u
    tl.store(out_ptr + offs, out, mask=mask)
