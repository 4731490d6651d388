"""tilewise's PTX for tutorial 03's matmul run through Triton's own launcher, beside
Triton's compile of the same source: same process, same inputs, same timing. Separates
what the kernels do from how each harness times them (BENCHMARKS.md, sixteenth
session). Runs on the GPU machine (torch, Triton); the PTX comes from this machine:

    tilewise compile shaders/matmul.py --kernel matmul_kernel --sm 90 --num-warps 8 \\
        --num-stages 3 --constexpr BLOCK_SIZE_M=128 --constexpr BLOCK_SIZE_N=256 \\
        --constexpr BLOCK_SIZE_K=64 --constexpr GROUP_SIZE_M=8 --emit ptx -o tw.ptx \\
        --signature 'a:*f16:16, b:*f16:16, c:*f32:16, M:i32:16, N:i32:16, K:i32:16, \\
                     sam:i32:16, sak:i32:1, sbk:i32:16, sbn:i32:1, scm:i32:16, scn:i32:1'
    python3 bench/triton_side_by_side.py tw.ptx --shared 147456

`--shared`: the dynamic shared memory the kernel needs (`PtxKernel::shared_bytes`; the
compiled kernel's notes give its rings). Prints, for each kernel, the time a K step of
64 costs and the fixed part (a fit over K at M = N = 4096), and the 4096^3 time."""
import argparse
import copy
import importlib.util
import os

import torch
import triton
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def triton_kernel(bm, bn, bk, warps, stages, dtype):
    spec = importlib.util.spec_from_file_location("mm", os.path.join(ROOT, "shaders", "matmul.py"))
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    sig = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
           "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
           "BLOCK_SIZE_M": "constexpr", "BLOCK_SIZE_N": "constexpr", "BLOCK_SIZE_K": "constexpr",
           "GROUP_SIZE_M": "constexpr", "ACTIVATION": "constexpr"}
    const = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn,
             "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACTIVATION": ""}
    # Triton's own specialization of 16-divisible pointers and integers.
    attrs = {(i,): [["tt.divisibility", 16]] for i in [0, 1, 2, 3, 4, 5, 6, 8, 10]}
    return triton.compile(ASTSource(mm.matmul_kernel.fn, sig, const, attrs),
                          options={"num_warps": warps, "num_stages": stages})


def with_binary(k, binary, shared):
    """Triton's compiled kernel `k` with its binary replaced (a cubin, or PTX text for
    the driver's JIT) and `shared` bytes of dynamic shared memory."""
    v = copy.copy(k)
    v.kernel, v.module, v.function, v._run = binary, None, None, None
    v.metadata = k.metadata._replace(shared=shared)
    v.packed_metadata = make_backend(k.metadata.target).pack_metadata(v.metadata)
    return v


def tilewise_binary(path):
    """tilewise's PTX made callable by Triton's launcher: the entry takes Triton's name,
    and Triton's two trailing scratch pointers become unused parameters."""
    text = open(path).read()
    entry = text.split(".visible .entry ", 1)[1].split("(", 1)[0]
    text = text.replace(f".visible .entry {entry}(", ".visible .entry matmul_kernel(", 1)
    head, rest = text.split("\n)\n", 1)
    last = head.rsplit("tw_p", 1)[1]
    n = int(last.strip().rstrip(","))
    head += f",\n    .param .u64 tw_p{n + 1},\n    .param .u64 tw_p{n + 2}"
    return (head + "\n)\n" + rest).encode() + b"\0"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ptx")
    ap.add_argument("--shared", type=int, required=True)
    ap.add_argument("--block", default="128x256x64")
    ap.add_argument("--warps", type=int, default=8)
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--raw", action="append", default=[], metavar="NAME=FILE",
                    help="also run this PTX (tilewise's, or Triton's as it is) or cubin, with "
                         "--shared bytes (edited variants of either kernel)")
    ap.add_argument("--only-raw", action="store_true", help="run only the --raw kernels")
    ap.add_argument("--only",
                    help="run one kernel, and only a few launches at 4096^3: for a profiler "
                         "(ncu --launch-skip 3 --launch-count 1)")
    args = ap.parse_args()
    bm, bn, bk = (int(x) for x in args.block.split("x"))
    k = triton_kernel(bm, bn, bk, args.warps, args.stages, args.dtype)
    kernels = {"triton": k, "tilewise": with_binary(k, tilewise_binary(args.ptx), args.shared)}
    for raw in args.raw:
        name, path = raw.split("=", 1)
        data = open(path, "rb").read()
        if data.startswith(b"// tilewise"):
            data = tilewise_binary(path)
        elif path.endswith(".ptx"):
            data += b"\0"
        kernels[name] = with_binary(k, data, args.shared)
    tdt = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    n = 4096
    if args.only:
        kernels = {args.only: kernels[args.only]}
    if args.only_raw:
        kernels = {n: v for n, v in kernels.items() if n not in ("triton", "tilewise")}
    for name, v in kernels.items():
        pts = []
        for kk in [n] if args.only else [512, 1024, 2048, 4096, 8192]:
            torch.manual_seed(kk)
            a = torch.randn(n, kk, device="cuda", dtype=tdt)
            b = torch.randn(kk, n, device="cuda", dtype=tdt)
            c = torch.full((n, n), float("nan"), device="cuda")
            grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn), 1, 1)
            run = lambda: v[grid](a, b, c, n, n, kk, a.stride(0), 1, b.stride(0), 1, c.stride(0), 1,
                                  bm, bn, bk, 8, "")
            run()
            torch.cuda.synchronize()
            ref = torch.matmul(a.float(), b.float())
            err = ((c - ref).abs().max() / ref.abs().max()).item()
            assert err < 1e-3, f"{name} K {kk}: relative error {err}"
            if args.only:
                for _ in range(3):
                    run()
                torch.cuda.synchronize()
                return
            for _ in range(20):
                run()
            st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            st.record()
            for _ in range(50):
                run()
            en.record()
            torch.cuda.synchronize()
            us = st.elapsed_time(en) / 50 * 1e3
            pts.append((kk // bk, us))
            if kk == n:
                print(f"{name:9s} {n}^3: {us:8.1f} us, {2 * n**3 / us / 1e6:6.1f} TFLOP/s", flush=True)
        mx = sum(p[0] for p in pts) / len(pts)
        my = sum(p[1] for p in pts) / len(pts)
        slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
        print(f"{name:9s} per K step of {bk}: {slope * 1e3:.1f} ns, fixed {my - slope * mx:.1f} us", flush=True)


if __name__ == "__main__":
    main()
