# Matrix multiplication with block pointers: C = A @ B, A (M, K), B (K, N), C (M, N),
# each with its own strides. boundary_check with zero padding handles ragged M, N and
# K; tl.advance slides the A and B windows along K. The K loop bound is a runtime
# value (tl.cdiv(K, BLOCK_K)).

import triton
import triton.language as tl


@triton.jit
def matmul_block_ptr_kernel(
        a_ptr, b_ptr, c_ptr,
        M, N, K,
        stride_am, stride_ak,
        stride_bk, stride_bn,
        stride_cm, stride_cn,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a = tl.make_block_ptr(base=a_ptr, shape=(M, K), strides=(stride_am, stride_ak),
                          offsets=(pid_m * BLOCK_M, 0), block_shape=(BLOCK_M, BLOCK_K),
                          order=(1, 0))
    b = tl.make_block_ptr(base=b_ptr, shape=(K, N), strides=(stride_bk, stride_bn),
                          offsets=(0, pid_n * BLOCK_N), block_shape=(BLOCK_K, BLOCK_N),
                          order=(1, 0))
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a_tile = tl.load(a, boundary_check=(0, 1), padding_option="zero")
        b_tile = tl.load(b, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a_tile, b_tile, acc)
        a = tl.advance(a, (0, BLOCK_K))
        b = tl.advance(b, (BLOCK_K, 0))
    c = tl.make_block_ptr(base=c_ptr, shape=(M, N), strides=(stride_cm, stride_cn),
                          offsets=(pid_m * BLOCK_M, pid_n * BLOCK_N),
                          block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tl.store(c, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))
