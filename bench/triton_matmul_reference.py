"""Triton's own compile of the two f16/bf16 matmul kernels the harness runs, timed on the
GPU machine in the same session as the harness: tutorial 03's grouped kernel
(`shaders/matmul.py`, pointer tiles) and the block-pointer kernel
(`shaders/matmul_block_ptr.py`), f32 output, each block configuration given, beside
cuBLAS through torch (f32 output where torch has `out_dtype`, else 16-bit output: the
line says which). Random normal inputs, results
checked against torch; timing by `triton.testing.do_bench` (median). Prints one line a
case: kernel, dtype, size, configuration, microseconds, TFLOP/s, ratio to cuBLAS.

    python3 bench/triton_matmul_reference.py --sizes 4096,8192 --configs 128x256x64/8/3,128x256x64/8/4
"""
import argparse
import importlib.util
import os

import torch
import triton

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(file):
    spec = importlib.util.spec_from_file_location(file, os.path.join(ROOT, "shaders", file))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def us(fn):
    return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4096")
    ap.add_argument("--configs", default="128x256x64/8/3")
    ap.add_argument("--dtypes", default="fp16,bf16")
    args = ap.parse_args()
    # (The tutorial's `@triton.autotune` is bypassed: each configuration is given.)
    tutorial = load("matmul.py").matmul_kernel
    tutorial = getattr(tutorial, "fn", tutorial)
    block_ptr = load("matmul_block_ptr.py").matmul_block_ptr_kernel
    for dname in args.dtypes.split(","):
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dname]
        for n in (int(s) for s in args.sizes.split(",")):
            torch.manual_seed(n)
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            ref = torch.matmul(a.float(), b.float())
            flops = 2 * n**3
            # cuBLAS through torch: with f32 output where this torch has `out_dtype`
            # (the harness's reference, f32 accumulation and output), else its plain
            # matmul, whose output is f16 / bf16 (less to write: not the same GEMM).
            try:
                cublas = lambda: torch.mm(a, b, out_dtype=torch.float32)
                cublas()
                label = "cuBLAS (torch.mm, f32 output)"
            except (TypeError, RuntimeError):
                cublas = lambda: torch.matmul(a, b)
                label = f"cuBLAS (torch.matmul, {dname} output)"
            t_ref = us(cublas)
            print(f"{label} {dname} {n}^3: {t_ref:.2f} us {flops / t_ref / 1e6:.1f} TFLOP/s", flush=True)
            for cfg in args.configs.split(","):
                blk, warps, stages = cfg.split("/")
                bm, bn, bk = (int(x) for x in blk.split("x"))
                c = torch.full((n, n), float("nan"), device="cuda")
                grid_t = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
                grid_b = (triton.cdiv(n, bm), triton.cdiv(n, bn))
                runs = {
                    "triton tutorial 03": lambda: tutorial[grid_t](
                        a, b, c, n, n, n, a.stride(0), 1, b.stride(0), 1, c.stride(0), 1,
                        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=8,
                        ACTIVATION="", num_warps=int(warps), num_stages=int(stages)),
                    "triton block_ptr": lambda: block_ptr[grid_b](
                        a, b, c, n, n, n, a.stride(0), 1, b.stride(0), 1, c.stride(0), 1,
                        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=int(warps),
                        num_stages=int(stages)),
                }
                for name, run in runs.items():
                    c.fill_(float("nan"))
                    run()
                    torch.cuda.synchronize()
                    err = ((c - ref).abs().max() / ref.abs().max()).item()
                    assert err < 1e-3, f"{name} {cfg}: relative error {err}"
                    t = us(run)
                    print(f"{name} {dname} {n}^3 {cfg}: {t:.2f} us {flops / t / 1e6:.1f} TFLOP/s "
                          f"{t_ref / t:.3f}x the cuBLAS line above", flush=True)


if __name__ == "__main__":
    main()
