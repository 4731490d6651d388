# The seed patterns of examples/seeds/ch9_masks.py (causal mask, block-sparse skipping,
# ragged rows) at sizes that fill a GPU: the benchmark's `seeds` suite.

import triton
import triton.language as tl


@triton.jit
def causal_softmax_bench_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row: softmax over cols <= row (the causal mask), masked entries
    # -inf before the softmax, so they come out 0. The masked loads skip the upper
    # triangle.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    in_bounds = cols < n_cols
    causal = in_bounds & (cols <= row)
    x = tl.load(in_ptr + row * stride + cols, mask=causal, other=-float("inf"))
    x = tl.where(causal, x, -float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * stride + cols, num / den, mask=in_bounds)


@triton.jit
def block_sparse_scale_bench_kernel(x_ptr, out_ptr, block_mask_ptr, N, BLOCK: tl.constexpr):
    # One program per block; a scalar flag per block: inactive blocks are skipped whole.
    pid = tl.program_id(0)
    is_active = tl.load(block_mask_ptr + pid)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < N
    if is_active:
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        tl.store(out_ptr + offsets, x * 2.0, mask=mask)


@triton.jit
def ragged_row_sum_bench_kernel(x_ptr, lengths_ptr, out_ptr, stride_row, MAX_WIDTH: tl.constexpr):
    # One program per row of a padded (rows x MAX_WIDTH) matrix; each row its own bound.
    row = tl.program_id(0)
    row_len = tl.load(lengths_ptr + row)
    cols = tl.arange(0, MAX_WIDTH)
    mask = cols < row_len
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(x, axis=0))
