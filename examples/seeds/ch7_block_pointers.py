# Chapter 7.3 -- block pointers bundle shape and strides, but nobody verifies them.
#
# With the true shape (3, 4) the copy is exact. Told the (3, 4) input is a (4, 3)
# matrix with strides (3, 1), the kernel reads the same 12 elements as 4 rows of 3.

import triton
import triton.language as tl


@triton.jit
def copy_block_ptr_kernel(x_ptr, out_ptr, M, N, stride_m, stride_n,
                          out_M, out_N,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_block_ptr(
        base=x_ptr, shape=(M, N), strides=(stride_m, stride_n),
        offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tile = tl.load(src, boundary_check=(0, 1))
    dst = tl.make_block_ptr(
        base=out_ptr, shape=(out_M, out_N), strides=(out_N, 1),
        offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0),
    )
    tl.store(dst, tile, boundary_check=(0, 1))
