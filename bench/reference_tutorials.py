"""Triton's figures for the tutorials suite (`tilewise-bench --suite tutorials`), from
the tutorial files themselves, same shapes: 09's matmul_persistent(a, b.T) with b
stored (N, K), M = N = 8192, K = 512 and 4096; 06's attention() forward, 4x32x4096 at
head_dim 64, causal and not. Prints one JSON object a line. Usage, on the GPU machine:
python3 bench/reference_tutorials.py DIR (DIR holds Triton's python/tutorials files).
Timing: triton.testing.do_bench (CUDA events, warm-up, median)."""
import importlib, importlib.util, json, sys, types, torch, triton

# Modules this Triton may lack that the tutorial files import at the top (unused by
# the kernels timed here): stubbed so that the files load.
for name in ("pytest", "triton.tools.experimental_descriptor", "triton.profiler"):
    try:
        importlib.import_module(name)
    except Exception:
        sys.modules[name] = types.ModuleType(name)

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

d = sys.argv[1]
out = []
try:
    t09 = load("t09", f"{d}/09-persistent-matmul.py")
except Exception as e:
    t09 = None
    out.append({"case": "09 load", "error": repr(e)[:300]})
for K in (512, 4096) if t09 else ():
    M = N = 8192
    a = torch.randn((M, K), device="cuda", dtype=torch.float16)
    b = torch.randn((K, N), device="cuda", dtype=torch.float16).T.contiguous()
    try:
        c = t09.matmul_persistent(a, b.T)
        ref = torch.matmul(a, b.T)
        err = ((c.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        ms = triton.testing.do_bench(lambda: t09.matmul_persistent(a, b.T), warmup=50, rep=300)
        out.append({"case": f"09 persistent f16 {M}x{N}x{K}", "ms": ms, "tflops": 2 * M * N * K / ms * 1e-9, "err": err})
    except Exception as e:
        out.append({"case": f"09 persistent f16 {M}x{N}x{K}", "error": repr(e)[:300]})
try:
    t06 = load("t06", f"{d}/06-fused-attention.py")
except Exception as e:
    t06 = None
    out.append({"case": "06 load", "error": repr(e)[:300]})
for causal in (False, True) if t06 else ():
    Z, H, N_CTX, D = 4, 32, 4096, 64
    q, k, v = (torch.randn((Z, H, N_CTX, D), device="cuda", dtype=torch.float16) for _ in range(3))
    try:
        f = lambda: t06.attention(q, k, v, causal, 1.3)
        f()
        ms = triton.testing.do_bench(f, warmup=50, rep=300)
        flops = 4.0 * Z * H * N_CTX * N_CTX * D * (0.5 if causal else 1.0)
        out.append({"case": f"06 attention fwd d64 causal={causal}", "ms": ms, "tflops": flops / ms * 1e-9})
    except Exception as e:
        out.append({"case": f"06 attention fwd d64 causal={causal}", "error": repr(e)[:300]})
for o in out:
    print(json.dumps(o))
