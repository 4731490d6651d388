"""Reference figures measured next to tilewise on the GPU machine (same run):
cuBLAS through torch (f32 without tensor cores, tf32, f16 with f32 accumulation),
torch softmax, torch vector add and a device-to-device copy. Prints one JSON object.
Timing: triton.testing.do_bench (CUDA events, warm-up, median)."""
import json
import torch
import triton

def ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

out = {"gpu": torch.cuda.get_device_name()}
n = 4096
for name, dtype, tf32 in [("sgemm_f32", torch.float32, False), ("gemm_tf32", torch.float32, True), ("gemm_f16", torch.float16, False)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    t = ms(lambda: torch.matmul(a, b))
    out[name] = {"size": n, "ms": t, "tflops": 2 * n**3 / t / 1e9}
torch.backends.cuda.matmul.allow_tf32 = False
x = torch.randn(8192, 8192, device="cuda")
t = ms(lambda: torch.softmax(x, dim=1))
out["softmax_8192"] = {"ms": t, "tbps": 2 * x.numel() * 4 / t / 1e9}
m = 1 << 28
u = torch.randn(m, device="cuda")
v = torch.randn(m, device="cuda")
w = torch.empty_like(u)
t = ms(lambda: torch.add(u, v, out=w))
out["vector_add_2^28"] = {"ms": t, "tbps": 3 * m * 4 / t / 1e9}
t = ms(lambda: w.copy_(u))
out["copy_2^28"] = {"ms": t, "tbps": 2 * m * 4 / t / 1e9}
print(json.dumps(out, indent=1))
