# tilewise-fuzz seed 880076: grid (1,), num_warps=4, scalars [4, 2454, 3, 14, 56, 27, 225, 4, 4]
import triton
import triton.language as tl


@triton.jit
def _comb_add(a, b):
    return a + b


@triton.jit
def _comb_first_nonzero(a, b):
    return tl.where(a != 0, a, b)


@triton.jit
def fuzz_kernel(in0, in1, in2, in3, in4, in5, out0, out1, out2, out3, s0, s1, s2, s3, s4, s5, s6, s7, s8):
    pid = tl.program_id(0)
    v0 = tl.full((16, 32), 0.0, tl.float32)
    for i0 in tl.range(0, s0, num_stages=3):
        v1 = i0
        v2 = tl.full((32, 64), 3.0, tl.float32)
        v3 = tl.load(in0 + pid * 4096 + (tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :]) + v1 * 4096, mask=(tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :]) < s1, other=0.0)
        v4 = tl.trans(v3)
        v5 = tl.dot(v2, v4, input_precision="tf32x3")
        v6 = tl.load(tl.make_block_ptr(in1, shape=(s2, s3), strides=(32, 1), offsets=(v1 * 16, 0), block_shape=(16, 32), order=(1, 0)), boundary_check=(0, 1), padding_option="zero")
        v7 = tl.load(tl.make_block_ptr(in2, shape=(s4, s5), strides=(32, 1), offsets=(v1 * 32, 0), block_shape=(32, 32), order=(1, 0)), boundary_check=(0, 1), padding_option="zero")
        v8 = tl.dot(v6, v7, v0)
        v0 = v8
    v9 = tl.load(in3 + pid * 256 + (tl.arange(0, 16)[:, None] + tl.arange(0, 16)[None, :] * 16), mask=(tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]) < s6, other=0.0)
    v10 = v9.to(tl.float32)
    v11 = tl.trans(v10)
    v12 = tl.dot(v9, v11, input_precision="tf32x3")
    v13 = tl.sum(v10, axis=0, keep_dims=True).to(tl.float32)
    v14 = tl.sum(v13, axis=0).to(tl.float32)
    v15 = v10.to(tl.float32)
    i0 = 0
    while i0 < s7:
        v16 = i0
        v17 = (v15 - v11).to(tl.float32)
        v15 = v17
        i0 += 1
    v18 = tl.rsqrt(tl.abs(v13) + 1.0).to(tl.float32)
    v19 = pid
    v20 = v19.to(tl.float32)
    v21 = v15 < v11
    v22 = tl.where(v21, v15, v20)
    v23 = v9.to(tl.int64)
    v24 = v15.to(tl.int64)
    v25 = tl.interleave(v23, v24)
    v26 = tl.associative_scan(v25, 1, _comb_first_nonzero, reverse=True).to(tl.int64)
    v27 = v0.to(tl.int64)
    v28 = v26 ^ v27
    v29 = tl.sum(v25, axis=0).to(tl.int32)
    v30 = v29[None, :]
    v31 = v30.to(tl.int64)
    v32 = tl.interleave(v28, v31)
    v33 = tl.full((64, 64), 0.0, tl.float32)
    for i0 in range(0, s8):
        v34 = i0
        v35 = tl.load(in4 + pid * 1024 + (tl.arange(0, 64)[:, None] + tl.arange(0, 16)[None, :] * 64) + v34 * 1024)
        v36 = tl.load(in5 + pid * 1024 + (tl.arange(0, 16)[:, None] + tl.arange(0, 64)[None, :] * 16) + v34 * 1024)
        v37 = tl.dot(v35, v36, v33, input_precision="tf32")
        v38 = v31 ^ v31
        v33 = v37
        v31 = v38
    tl.store(out0 + pid * 4096 + (tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :]), v33)
    tl.store(out1 + pid * 1024 + (tl.arange(0, 16)[:, None] * 64 + tl.arange(0, 64)[None, :]), v32)
    tl.store(out2 + pid * 16 + (tl.arange(0, 1)[:, None] * 16 + tl.arange(0, 16)[None, :]), v18)
    tl.store(out3 + pid * 16 + (tl.arange(0, 1)[:, None] * 16 + tl.arange(0, 16)[None, :]), v13)
