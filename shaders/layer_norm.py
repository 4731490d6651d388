# Layer normalization, forward (Triton tutorial 05): one row per program.
#   y = (x - mean) * rstd * w + b,  rstd = 1 / sqrt(var + eps)
# The row is walked in BLOCK_SIZE chunks (N may exceed one tile): a first pass for
# the mean, a second for the variance, a third to normalize. Mean and Rstd are saved
# per row for the backward pass.

import triton
import triton.language as tl


@triton.jit
def _layer_norm_fwd_fused(
        X,  # input
        Y,  # output
        W,  # weights
        B,  # biases
        Mean,  # per-row mean
        Rstd,  # per-row 1 / std
        stride,  # elements between rows of X and Y
        N,  # columns of X
        eps,  # added to the variance
        BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    # Mean.
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    # Variance.
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
    # Normalize and apply the affine transform.
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)
