# Reference streams from Triton's own tl.randint4x / tl.rand / tl.randn on this GPU.
import sys
import torch
import triton
import triton.language as tl


@triton.jit
def streams(out_i, out_f, out_n, seed, base, N: tl.constexpr):
    i = tl.arange(0, N)
    offs = base + i
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(out_i + i, r0.to(tl.int32, bitcast=True))
    tl.store(out_i + N + i, r1.to(tl.int32, bitcast=True))
    tl.store(out_i + 2 * N + i, r2.to(tl.int32, bitcast=True))
    tl.store(out_i + 3 * N + i, r3.to(tl.int32, bitcast=True))
    tl.store(out_f + i, tl.rand(seed, offs))
    tl.store(out_n + i, tl.randn(seed, offs))


@triton.jit
def wide(out_i, seed, offs_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    offs = tl.load(offs_ptr + i)
    tl.store(out_i + i, tl.randint(seed, offs).to(tl.int32, bitcast=True))


print("triton", triton.__version__, "torch", torch.__version__)
N = 64
for seed, base in [(0, 0), (-1, 7), (0x5EED1234, 2**31 - 41)]:
    oi = torch.full((4 * N,), -7, dtype=torch.int32, device="cuda")
    of = torch.full((N,), float("nan"), dtype=torch.float32, device="cuda")
    on = torch.full((N,), float("nan"), dtype=torch.float32, device="cuda")
    streams[(1,)](oi, of, on, seed, base, N=N)
    ints = [x & 0xFFFFFFFF for x in oi.cpu().tolist()]
    print(f"seed {seed} base {base}")
    print("ints", " ".join(f"{x:08x}" for x in ints))
    print("rand", " ".join(f"{x:08x}" for x in of.cpu().view(torch.int32).tolist()))
    print("randn", " ".join(repr(x) for x in on.cpu().tolist()))
seed = 0x0000000FCAFEB0BA
offs = torch.tensor([i * 0x123456789 - 77 for i in range(32)], dtype=torch.int64, device="cuda")
oi = torch.full((32,), -7, dtype=torch.int32, device="cuda")
wide[(1,)](oi, seed, offs, N=32)
print(f"wide seed {seed}")
print("ints", " ".join(f"{x & 0xFFFFFFFF:08x}" for x in oi.cpu().tolist()))
