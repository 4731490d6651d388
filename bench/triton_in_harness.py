"""Triton's compile of tutorial 03's matmul timed by tilewise's own harness, in place of
tilewise's kernel for the same specialization: the reverse of `triton_side_by_side.py`.
There Triton's launcher and timing run both kernels; here the harness does (rotating
input sets, CUDA events, cuBLAS in the same run, results checked against float64 first),
so "tilewise / Triton" and "Triton / cuBLAS" come from one method. Runs on the GPU
machine (torch, Triton), with a build of the harness:

    python3 bench/triton_in_harness.py --bench path/to/tilewise-bench --work /tmp/tih \\
        --dtypes f16,bf16 --block 128x256x64 --warps 8 --stages 3 --size 4096

With `--tutorial09 DIR` (DIR holding `09-persistent-matmul.py`) it does the same for
tutorial 09's `matmul_kernel_persistent` in the harness's tutorials suite (its 8192 x
8192 x K products, f16, the tutorial's own configuration):

    python3 bench/triton_in_harness.py --bench path/to/tilewise-bench --tutorial09 DIR

and with `--block-ptr` for `shaders/matmul_block_ptr.py` (the harness's `/bp`, whose
operands tilewise copies by TMA on sm_90).

It runs the harness once with `TILEWISE_KERNEL_DUMP_DIR` to learn the generated PTX's
file name and interface, writes Triton's PTX for the same source and configuration
under that name (entry renamed, Triton's two unused scratch pointers dropped), runs the
harness again with `TILEWISE_KERNEL_OVERRIDE_DIR`, and prints both runs' matmul lines."""
import argparse
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from triton_side_by_side import triton_kernel  # noqa: E402
import triton  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TRITON_DTYPE = {"f16": "fp16", "bf16": "bf16"}
PTX_DTYPE = {"f16": ".f16.f16", "bf16": ".bf16.bf16"}


def harness(args, dtype, env_extra):
    if args.tutorial09:
        cmd = [args.bench, "--device", "cuda", "--suite", "tutorials", "--tutorials",
               args.tutorial09, "--reps", str(args.reps)]
    else:
        cmd = [args.bench, "--device", "cuda", "--suite", "matmul", "--size", str(args.size),
               "--dtype", dtype, "--reps", str(args.reps),
               "--matmul-configs",
               f"{args.block}/{args.warps}/{args.stages}" + ("/bp" if args.block_ptr else "")]
    env = dict(os.environ, TILEWISE_CACHE="0", **env_extra)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in (out.stdout + out.stderr).splitlines()
             if ln.startswith("matmul") and f"{args.size}x{args.size}x{args.size}" in ln
             or ln.startswith("tutorial 09")
             or ("error" in ln.lower() and "06-fused-attention" not in ln)
             or "wrong" in ln.lower() or "running" in ln]
    return out.returncode, lines


def tutorial09_kernel(directory):
    """Triton's compile of tutorial 09's persistent matmul as the tutorials suite runs it:
    f16 `a` (M, K), the (K, N) view of a (N, K) `b`, f16 `c`, 132 multiprocessors, the
    tutorial's first configuration."""
    spec = importlib.util.spec_from_file_location("t09", os.path.join(directory, "09-persistent-matmul.py"))
    t09 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(t09)
    config = t09.matmul_get_configs()[0]
    sig = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "constexpr", "stride_bn": "i32",
           "stride_cm": "i32", "stride_cn": "constexpr", "BLOCK_SIZE_M": "constexpr",
           "BLOCK_SIZE_N": "constexpr", "BLOCK_SIZE_K": "constexpr", "GROUP_SIZE_M": "constexpr",
           "NUM_SMS": "constexpr"}
    const = dict(config.kwargs, stride_ak=1, stride_bk=1, stride_cn=1, NUM_SMS=132)
    attrs = {(i,): [["tt.divisibility", 16]] for i in [0, 1, 2, 3, 4, 5, 6, 9, 10]}
    return triton.compile(ASTSource(t09.matmul_kernel_persistent.fn, sig, const, attrs),
                          options={"num_warps": config.num_warps, "num_stages": config.num_stages})


def block_ptr_kernel(bm, bn, bk, warps, stages, dtype):
    """Triton's compile of `shaders/matmul_block_ptr.py` (f32 `c`, unit inner strides)."""
    spec = importlib.util.spec_from_file_location(
        "bp", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "shaders", "matmul_block_ptr.py"))
    bp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bp)
    sig = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "c_ptr": "*fp32", "M": "i32", "N": "i32",
           "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
           "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
    const = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": bm, "BLOCK_N": bn,
             "BLOCK_K": bk}
    attrs = {(i,): [["tt.divisibility", 16]] for i in [0, 1, 2, 3, 4, 5, 6, 8, 10]}
    return triton.compile(ASTSource(bp.matmul_block_ptr_kernel, sig, const, attrs),
                          options={"num_warps": warps, "num_stages": stages})


def triton_ptx_for(dump_text, dtype, args):
    """Triton's PTX for `dtype`, made to take the dumped kernel's entry and parameters:
    Triton's unused trailing scratch pointers dropped, and tilewise's tensor maps (the
    block-pointer kernel's TMA operands, which Triton's compile does not read) added as
    unused parameters."""
    bm, bn, bk = (int(x) for x in args.block.split("x"))
    if args.tutorial09:
        k = tutorial09_kernel(args.tutorial09)
    elif args.block_ptr:
        k = block_ptr_kernel(bm, bn, bk, args.warps, args.stages, TRITON_DTYPE[dtype])
    else:
        k = triton_kernel(bm, bn, bk, args.warps, args.stages, TRITON_DTYPE[dtype])
    ptx = k.asm["ptx"]
    entry = re.search(r"\.visible \.entry (\w+)\(", dump_text).group(1)
    our_params = [ln.strip().rstrip(",") for ln in dump_text.split(")", 1)[0].split("\n")
                  if ln.strip().startswith(".param")]
    maps = [p for p in our_params if p.endswith("[128]")]
    ours = [p for p in our_params if p not in maps]
    head, rest = ptx.split("\n)\n", 1)
    params = [p for p in head.split("\n") if ".param" in p]
    used = [p for p in params if re.search(r"(\w+_param_\d+)", p).group(1) in rest]
    if len(used) != len(ours):
        sys.exit(f"{dtype}: Triton's kernel reads {len(used)} parameters, tilewise's has {len(ours)}")
    for p in params[len(ours):]:
        if p in used:
            sys.exit(f"{dtype}: Triton's parameter {p.strip()} is read; cannot drop it")
    keep = head.split("\n")
    keep = [ln for ln in keep if ln not in params[len(ours):]]
    text = "\n".join(keep).rstrip().rstrip(",")
    text += "".join(f",\n\t{m}" for m in maps) + "\n)\n" + rest
    text = re.sub(r"\.visible \.entry \w+\(", f".visible .entry {entry}(", text, count=1)
    shared = k.metadata.shared
    return text, shared


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the tilewise-bench binary")
    ap.add_argument("--work", default="/tmp/triton_in_harness")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--block", default="128x256x64")
    ap.add_argument("--warps", type=int, default=8)
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tutorial09", help="tutorial 09's persistent matmul from this directory instead")
    ap.add_argument("--block-ptr", action="store_true",
                    help="shaders/matmul_block_ptr.py (the harness's /bp: TMA on sm_90 in tilewise) instead")
    args = ap.parse_args()
    if args.tutorial09:
        args.dtypes, args.block = "f16", "128x256x64"
    for dtype in args.dtypes.split(","):
        dump = os.path.join(args.work, dtype, "dump")
        over = os.path.join(args.work, dtype, "override")
        shutil.rmtree(os.path.join(args.work, dtype), ignore_errors=True)
        os.makedirs(dump)
        os.makedirs(over)
        rc, lines = harness(args, dtype, {"TILEWISE_KERNEL_DUMP_DIR": dump})
        print(f"== {dtype}: tilewise's kernel (rc {rc})")
        print("\n".join(lines), flush=True)
        wanted = f"m64n{args.block.split('x')[1]}k16.f32{PTX_DTYPE[dtype]}"
        copy = "cp.async.bulk.tensor" if args.block_ptr else "cp.async.cg"
        found = [f for f in glob.glob(os.path.join(dump, "*.ptx"))
                 if wanted in open(f).read() and copy in open(f).read()]
        if len(found) != 1:
            sys.exit(f"{dtype}: expected one dumped kernel with {wanted}, found {found}")
        text, shared = triton_ptx_for(open(found[0]).read(), dtype, args)
        print(f"   Triton's PTX under {os.path.basename(found[0])}, {shared} bytes of shared memory")
        with open(os.path.join(over, os.path.basename(found[0])), "w") as f:
            f.write(text)
        rc, lines = harness(args, dtype, {"TILEWISE_KERNEL_OVERRIDE_DIR": over})
        print(f"== {dtype}: Triton's kernel in its place (rc {rc})")
        print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
