"""Ablation variants of tilewise's cooperative-matrix matmul kernels (WGSL), to take the
K loop's cost apart on a GPU no profiler sees through (BENCHMARKS.md, "Where the
cooperative-matrix matmul's time goes", runs 71-74).

usage: wgsl_ablation.py DUMP_DIR OUT_ROOT

Reads the kernels a run dumped (TILEWISE_KERNEL_DUMP_DIR=DUMP_DIR) and writes
OUT_ROOT/<variant>/<same file name> for each one whose first loop holds
`coopMultiplyAdd`s; run the harness again with TILEWISE_KERNEL_OVERRIDE_DIR set to one
variant's folder (`--unchecked` for the variants that leave work out: noload,
noload_nostore, mma_only, halfstore). The edits are textual and follow the WGSL
printer's current spelling (`sN[rX + c] = rY[c];` staging stores, masked
`select(vec4<f16>(..), bN[..], ..)` loads, `// line 63` before the loop-carried
copies): check the variants with naga (the harness does) after printer changes.
"""
import os, re, sys

def loop_bounds(lines):
    """(start, end) line indices of the first `for` loop holding coopMultiplyAdd."""
    for i, l in enumerate(lines):
        if l.lstrip().startswith("for (") :
            depth, j = 0, i
            while True:
                depth += lines[j].count("{") - lines[j].count("}")
                if depth == 0 and j > i:
                    break
                j += 1
            body = lines[i:j + 1]
            if any("coopMultiplyAdd" in b for b in body):
                return i, j
    return None

def move_prefetch(lines, at):
    """The next tiles' loads (after the last product) moved to position `at(bars)` of
    the loop body, `bars` the body's barrier positions."""
    s, e = loop_bounds(lines)
    body = lines[s + 1:e]
    bars = [k for k, l in enumerate(body) if "workgroupBarrier();" in l]
    last_mma = max(k for k, l in enumerate(body) if "coopMultiplyAdd" in l)
    carried = next(k for k in range(last_mma, len(body)) if body[k].strip() == "// line 63" or re.match(r"\s*fr\d+ = fr\d+;", body[k]))
    block = body[last_mma + 1:carried]
    rest = body[:last_mma + 1] + body[carried:]
    k = at(bars)
    new = rest[:k] + block + rest[k:]
    return lines[:s + 1] + new + lines[e:]

def hoist(lines):
    """The loads right after the second barrier, above the products."""
    return move_prefetch(lines, lambda bars: bars[1] + 1)

def prefetch_at(lines, barrier):
    """The loads just before the loop body's `barrier`-th barrier (0: the one before
    the staging stores, 1: the one after them), where the driver cannot sink them
    below that barrier: they then have the products of a whole step to land before
    the staging stores read them."""
    return move_prefetch(lines, lambda bars: bars[barrier])

def in_loop(lines, f):
    s, e = loop_bounds(lines)
    return lines[:s + 1] + [f(l) for l in lines[s + 1:e]] + lines[e:]

LOAD = re.compile(r"select\((vec4<f16>\(r\d+\)), b[01]\[.*\], r\d+\)")
def noload(l):
    return LOAD.sub(r"\1", l)

STORE = re.compile(r"^(\s*)s([01])\[(r\d+) \+ (\d)\] = (.*)$")
def aligned(l):
    return STORE.sub(r"\1s\2[(\3 & -4i) + \4] = \5", l)

def nostore(l):
    return None if STORE.match(l) else l

def nobarrier(l):
    return None if "workgroupBarrier();" in l else l

def drop_none(lines):
    return [l for l in lines if l is not None]

DECL = re.compile(r"^var<workgroup> (s\d+): array<f16, (\d+)>;(.*)$")
def u32_shared(lines):
    """f16 staging arrays read by coopLoadT held as u32 pairs: stores of runs of 4 as
    two u32 words, fragment loads reinterpreting the words."""
    text = "\n".join(lines)
    arrs = [m.group(1) for l in lines for m in [DECL.match(l)] if m
            and ("coopLoadT<coop_mat16x16<f16" in text and f"&{m.group(1)}[" in text)]
    out = []
    i = 0
    while i < len(lines):
        l = lines[i]
        m = DECL.match(l)
        if m and m.group(1) in arrs:
            out.append(f"var<workgroup> {m.group(1)}: array<u32, {int(m.group(2)) // 2}>;{m.group(3)}")
            i += 1
            continue
        m = STORE.match(l)
        if m and m.group(2) in "01" and f"s{m.group(2)}" in arrs and m.group(4) == "0" and i + 3 < len(lines):
            ind, a, x = m.group(1), "s" + m.group(2), m.group(3)
            v = re.match(r"(r\d+)\[0\];", m.group(5)).group(1)
            out.append(f"{ind}{a}[({x} >> 1u)] = bitcast<u32>({v}.xy);")
            out.append(f"{ind}{a}[({x} >> 1u) + 1] = bitcast<u32>({v}.zw);")
            i += 4
            continue
        def coop(mm):
            if mm.group(2) not in arrs:
                return mm.group(0)
            return f"coopLoadT<{mm.group(1)}>(&{mm.group(2)}[({mm.group(3)}) >> 1u], {int(mm.group(4)) // 2}u)"
        l = re.sub(r"coopLoadT<(coop_mat16x16<f16, [AB]>)>\(&(s\d+)\[([^\]]+)\], (\d+)u\)", coop, l)
        out.append(l)
        i += 1
    return out

def u32_raw(lines):
    """As u32_shared, with the 16-bit operands also loaded as raw words (vec2<u32> a
    run of 4) and stored to the staging arrays without ever being f16 in registers.
    Valid where the masked loads' `other` is +0.0."""
    out = []
    for l in u32_shared(lines):
        l = l.replace("array<vec4<f16>>", "array<vec2<u32>>")
        l = re.sub(r"^(\s*var r\d+: )vec4<f16>;", r"\1vec2<u32>;", l)
        l = re.sub(r"select\(vec4<f16>\(r\d+\), (b[01]\[)", r"select(vec2<u32>(0u), \1", l)
        l = re.sub(r"let (r\d+): vec4<f16> = select\(vec2<u32>", r"let \1: vec2<u32> = select(vec2<u32>", l)
        l = re.sub(r"bitcast<u32>\((r\d+)\.xy\)", r"\1.x", l)
        l = re.sub(r"bitcast<u32>\((r\d+)\.zw\)", r"\1.y", l)
        out.append(l)
    return out

def vec_shared(lines):
    """f16 staging arrays read by coopLoadT held as `vec4<f16>`: each run of 4 staging
    stores becomes one 8-byte store, and the fragment loads point into the vector array
    (SPIR-V's cooperative-matrix load counts its stride in the pointee's units). None
    where an array is accessed otherwise, or a run does not start at `+ 0`."""
    text = "\n".join(lines)
    arrs = [m.group(1) for l in lines for m in [DECL.match(l)] if m
            and f"coopLoadT<coop_mat16x16<f16" in text and f"&{m.group(1)}[" in text]
    out = []
    i = 0
    while i < len(lines):
        l = lines[i]
        m = DECL.match(l)
        if m and m.group(1) in arrs:
            assert int(m.group(2)) % 4 == 0
            out.append(f"var<workgroup> {m.group(1)}: array<vec4<f16>, {int(m.group(2)) // 4}>;{m.group(3)}")
            i += 1
            continue
        m = STORE.match(l)
        if m and f"s{m.group(2)}" in arrs:
            if m.group(4) != "0":
                return None
            ind, a, x = m.group(1), "s" + m.group(2), m.group(3)
            v = re.match(r"(r\d+)\[0\];", m.group(5)).group(1)
            for k in range(1, 4):
                if lines[i + k].strip() != f"{a}[{x} + {k}] = {v}[{k}];":
                    return None
            out.append(f"{ind}{a}[{x} >> 2u] = {v};")
            i += 4
            continue
        def coop(mm):
            if mm.group(2) not in arrs:
                return mm.group(0)
            assert int(mm.group(4)) % 4 == 0
            return f"coopLoadT<{mm.group(1)}>(&{mm.group(2)}[({mm.group(3)}) >> 2u], {int(mm.group(4)) // 4}u)"
        l = re.sub(r"coopLoadT<(coop_mat16x16<f16, [AB]>)>\(&(s\d+)\[([^\]]+)\], (\d+)u\)", coop, l)
        if any(re.search(rf"\b{a}\[", l) and "coopLoadT" not in l and ">> 2u] = " not in l for a in arrs):
            return None
        out.append(l)
        i += 1
    return out

def halfstore(l):
    m = STORE.match(l)
    return None if m and m.group(4) in "23" else l

VARIANTS = {
    "halfstore": lambda L: drop_none(in_loop(L, halfstore)),
    "hoist": lambda L: hoist(L),
    "prebar1": lambda L: prefetch_at(L, 0),
    "prebar2": lambda L: prefetch_at(L, 1),
    "aligned": lambda L: in_loop(L, aligned),
    "hoist_aligned": lambda L: in_loop(hoist(L), aligned),
    "noload": lambda L: in_loop(L, noload),
    "vec_shared": vec_shared,
    "noload_nostore": lambda L: drop_none(in_loop(in_loop(L, noload), nostore)),
    "mma_only": lambda L: drop_none(in_loop(drop_none(in_loop(in_loop(L, noload), nostore)), nobarrier)),
}

def main(dump, out):
    for name in sorted(os.listdir(dump)):
        if not name.endswith(".wgsl"):
            continue
        lines = open(os.path.join(dump, name)).read().split("\n")
        if loop_bounds(lines) is None:
            continue
        for v, f in VARIANTS.items():
            new = f(lines)
            if new is None:
                print(f"no {v} variant of {name}")
                continue
            os.makedirs(os.path.join(out, v), exist_ok=True)
            open(os.path.join(out, v, name), "w").write("\n".join(new))
        print("variants of", name)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
