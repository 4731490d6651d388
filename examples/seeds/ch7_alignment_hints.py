# Chapter 7.2 -- alignment hints.
#
# tl.multiple_of / tl.max_contiguous are promises to the compiler. The first kernel
# keeps its promise; the second one lies (offsets 3..10 are not multiples of 8).
# tilewise's checked mode reports the lie; the ordinary interpreter ignores it.

import triton
import triton.language as tl


@triton.jit
def hinted_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    offsets = tl.multiple_of(offsets, BLOCK)      # true: each program starts at pid * BLOCK
    offsets = tl.max_contiguous(offsets, BLOCK)   # true: BLOCK consecutive offsets
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * 2.0, mask=mask)


@triton.jit
def lying_multiple_of_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK) + 3
    offsets = tl.multiple_of(offsets, BLOCK)      # false: 3, 4, ..., 10
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, x * 2.0, mask=mask)
