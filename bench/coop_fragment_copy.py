"""A hand-written 128x256x32 / 8-subgroup cooperative-matrix matmul (f16 in, f32 out) with
the interface of tilewise's tutorial-03 kernel (bindings, parameter block), for aligned
products only (no masks, no `% M` wrap): tiles are copied global -> fragment -> shared
(`coopLoadT` from the storage buffer, `coopStoreT` to the staging tile), so 16-bit data
is never stored element by element. Run in place of the generated kernel through
TILEWISE_KERNEL_OVERRIDE_DIR (BENCHMARKS.md, run 73: right, and slower than the
generated kernel). Indices are bound with `let` before each fragment access to a
storage buffer: naga 30's SPIR-V writer panics on an inline index there.

usage: coop_fragment_copy.py OUT.wgsl [prefetch]"""
import sys
prefetch = len(sys.argv) > 2 and sys.argv[2] == "prefetch"
L = []
w = L.append
w("""enable f16;
enable wgpu_cooperative_matrix;
struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 3>,
}
@group(0) @binding(0) var<storage, read> b0: array<f16>;
@group(0) @binding(1) var<storage, read> b1: array<f16>;
@group(0) @binding(2) var<storage, read_write> b2: array<f32>;
@group(0) @binding(3) var<uniform> P: Params;
var<workgroup> sa: array<f16, 5120>;
var<workgroup> sb: array<f16, 8448>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(subgroup_id) sg: u32) {
  let grid = P.words[0].xyz;
  let lin = wg.x + wg.y * nwg.x;
  if (lin >= grid.x * grid.y * grid.z) { return; }
  let M = P.words[1][0];
  let N = P.words[1][1];
  let K = P.words[1][2];
  let sam = P.words[1][3];
  let sbk = P.words[2][0];
  let scm = P.words[2][1];
  let npm = (M + 127u) / 128u;
  let npn = (N + 255u) / 256u;
  let in_group = 8u * npn;
  let group = lin / in_group;
  let first_m = group * 8u;
  let gsz = min(npm - first_m, 8u);
  let pm = first_m + (lin % in_group) % gsz;
  let pn = (lin % in_group) / gsz;
  let row0 = pm * 128u;
  let col0 = pn * 256u;
  let abase = P.bases[0][0];
  let bbase = P.bases[0][1];
  let cbase = P.bases[0][2];
  let wm = sg / 4u;
  let wn = sg % 4u;
  let arow = abase + (row0 + 16u * sg) * sam;
  let brow = bbase + (sg / 4u) * 16u * sbk + col0 + (sg % 4u) * 64u;
""")
for i in range(4):
    for j in range(4):
        w(f"  var c{i}{j}: coop_mat16x16<f32, C>;")
        w(f"  c{i}{j} = coop_mat16x16<f32, C>();")
for i in range(4):
    w(f"  var fa{i}: coop_mat16x16<f16, A>;")
    w(f"  var fb{i}: coop_mat16x16<f16, B>;")
def loads(k):
    out = []
    for i in range(2):
        out.append(f"let ia{i} = arow + {k} + {16*i}u;")
        out.append(f"ta{i} = coopLoadT<coop_mat16x16<f16, A>>(&b0[ia{i}], sam);")
    for i in range(4):
        out.append(f"let ib{i} = brow + ({k}) * sbk + {16*i}u;")
        out.append(f"tb{i} = coopLoadT<coop_mat16x16<f16, A>>(&b1[ib{i}], sbk);")
    return out
for i in range(2):
    w(f"  var ta{i}: coop_mat16x16<f16, A>;")
for i in range(4):
    w(f"  var tb{i}: coop_mat16x16<f16, A>;")
if prefetch:
    for l in loads("0u"):
        w("  " + l)
w("  for (var k = 0u; k < K; k += 32u) {")
w("    workgroupBarrier();")
if not prefetch:
    for l in loads("k"):
        w("    " + l)
for i in range(2):
    w(f"    coopStoreT(ta{i}, &sa[16u * sg * 40u + {16*i}u], 40u);")
for i in range(4):
    w(f"    coopStoreT(tb{i}, &sb[(sg / 4u) * 16u * 264u + (sg % 4u) * 64u + {16*i}u], 264u);")
w("    workgroupBarrier();")
if prefetch:
    w("    let kn = min(k + 32u, K - 32u);")
    for l in loads("kn"):
        w("    " + l)
for kk in range(2):
    for i in range(4):
        w(f"    fa{i} = coopLoadT<coop_mat16x16<f16, A>>(&sa[(wm * 64u + {16*i}u) * 40u + {16*kk}u], 40u);")
    for j in range(4):
        w(f"    fb{j} = coopLoadT<coop_mat16x16<f16, B>>(&sb[{16*kk*264}u + wn * 64u + {16*j}u], 264u);")
    for i in range(4):
        for j in range(4):
            w(f"    c{i}{j} = coopMultiplyAdd(fa{i}, fb{j}, c{i}{j});")
w("  }")
for i in range(4):
    for j in range(4):
        w(f"  let ic{i}{j} = cbase + (row0 + wm * 64u + {16*i}u) * scm + col0 + wn * 64u + {16*j}u;")
        w(f"  coopStoreT(c{i}{j}, &b2[ic{i}{j}], scm);")
w("}")
open(sys.argv[1], "w").write("\n".join(L) + "\n")
