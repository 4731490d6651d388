# SwiGLU, fused: out = silu(gate) * up with silu(x) = x * sigmoid(x), in one pass over
# memory instead of three. Math in f32; the store casts to the output's dtype.

import triton
import triton.language as tl


@triton.jit
def swiglu_fwd_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    gate = tl.load(gate_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(up_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    silu = gate * tl.sigmoid(gate)
    tl.store(out_ptr + offs, (silu * up).to(out_ptr.dtype.element_ty), mask=mask)
