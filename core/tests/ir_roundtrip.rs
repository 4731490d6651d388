//! The tile IR's text form parses back: print -> parse -> print is the identity, byte
//! for byte, and the parsed kernel equals the printed one (ops, value numbers, value
//! types, parameters; spans up to their line) and passes the verifier where the
//! printed one does. Kernels come from:
//! - the snapshots `shaders/generated/*.tile` (parsed from the file, printed back);
//! - the kernel library `shaders/*.py` at the snapshots' configurations, plus kernels
//!   written here for the forms the others do not reach (cache hints, `device_print`,
//!   hints, barriers, scans, atomics, `while`, NaN constants, fp8, descriptors);
//! - every Triton source held in a string of `core/tests/*.rs` and `tests/*.rs` that
//!   traces with guessed arguments (buffers for pointer-like names, scalars else).
//!
//! Each traced kernel is also checked after every tile-IR pass of `lower::prepare`,
//! under the PTX and WGSL option sets (checked mode and `wgmma` too), and running
//! `prepare` on the parsed kernel prints the same as on the traced one.
//!
//! Malformed text gives a syntax diagnostic naming the line and column.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use tilewise_core::diag::{ErrorKind, Span};
use tilewise_core::frontend::{Module, Signature};
use tilewise_core::ir::{self, verify::verify, Block, DType, Kernel, Value};
use tilewise_core::launch::{ArgSpec, ConstValue, ScalarValue};
use tilewise_core::lower::expand::ExpandOptions;
use tilewise_core::lower::{block_ptr, fold_dot_add, fp8, narrow_i64, pipeline, prepare, simplify};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The block with every span cleared (spans are compared through the printed lines).
fn without_spans(b: &Block) -> Block {
    fn clear(b: &mut Block) {
        for inst in &mut b.insts {
            inst.span = Span::NONE;
            for nested in inst.op.blocks_mut() {
                clear(nested);
            }
        }
    }
    let mut b = b.clone();
    clear(&mut b);
    b
}

/// The values a kernel defines: parameters, block arguments, results.
fn defined_values(k: &Kernel) -> Vec<Value> {
    fn block(b: &Block, out: &mut Vec<Value>) {
        out.extend(&b.args);
        for inst in &b.insts {
            for nested in inst.op.blocks() {
                block(nested, out);
            }
            out.extend(&inst.results);
        }
    }
    let mut out: Vec<Value> = k.params.iter().map(|p| p.value).collect();
    block(&k.body, &mut out);
    out
}

/// The first line where two texts differ, for failure messages.
fn first_difference(a: &str, b: &str) -> String {
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            return format!("line {}:\n  printed: {x}\n  again:   {y}", i + 1);
        }
    }
    format!(
        "lengths {} and {} ({} and {} lines)",
        a.len(),
        b.len(),
        a.lines().count(),
        b.lines().count()
    )
}

#[derive(Default)]
struct Stats {
    /// Distinct printed kernels checked.
    texts: HashSet<String>,
    /// Kernels checked, by where they come from.
    by_origin: BTreeMap<&'static str, usize>,
}

impl Stats {
    /// Checks that `k` round-trips; returns the parsed kernel.
    fn check(&mut self, k: &Kernel, origin: &'static str, what: &str) -> Kernel {
        let text = ir::print(k);
        let parsed = ir::parse(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
        let again = ir::print(&parsed);
        assert!(
            again == text,
            "{what}: print -> parse -> print differs at {}\n{text}",
            first_difference(&text, &again)
        );
        assert_eq!(parsed.name, k.name, "{what}");
        assert_eq!(
            format!("{:?}", without_spans(&parsed.body)),
            format!("{:?}", without_spans(&k.body)),
            "{what}: parsed body differs\n{text}"
        );
        assert_eq!(parsed.params.len(), k.params.len(), "{what}");
        for (p, q) in parsed.params.iter().zip(&k.params) {
            assert_eq!(
                (&p.name, &p.ty, p.value, p.divisibility),
                (&q.name, &q.ty, q.value, q.divisibility),
                "{what}"
            );
        }
        for v in defined_values(k) {
            let (a, b) = (parsed.value(v), k.value(v));
            assert_eq!((&a.ty, a.def), (&b.ty, b.def), "{what}: {v}\n{text}");
        }
        if verify(k).is_ok() {
            verify(&parsed).unwrap_or_else(|e| panic!("{what}: parsed kernel: {e}\n{text}"));
        }
        if self.texts.insert(text) {
            *self.by_origin.entry(origin).or_default() += 1;
        }
        parsed
    }

    /// Checks `k` and its form after each tile-IR pass under `options`; `prepare` on
    /// the parsed kernel gives what it gives on `k`.
    fn check_passes(&mut self, k: &Kernel, options: &ExpandOptions, what: &str) {
        let parsed = self.check(k, "traced", what);
        let mut run = || -> tilewise_core::Result<()> {
            let w = format!("{what} [{} checked={}]", options.backend, options.checked);
            let k1 =
                block_ptr::lower_block_pointers_with(k, DType::I32, options.checked, options.tma)?;
            self.check(&k1, "after passes", &format!("{w} after block_ptr"));
            let k2 = fp8::lower_fp8(&k1)?;
            self.check(&k2, "after passes", &format!("{w} after fp8"));
            let k3 = if options.native_i64 {
                k2
            } else {
                let k3 = narrow_i64::narrow_i64(&k2);
                self.check(&k3, "after passes", &format!("{w} after narrow_i64"));
                k3
            };
            let k3 = fold_dot_add::fold_dot_adds(&k3)?;
            self.check(&k3, "after passes", &format!("{w} after fold_dot_add"));
            let k4 = simplify::simplify(&k3)?;
            self.check(&k4, "after passes", &format!("{w} after simplify"));
            let k5 = pipeline::pipeline_dot_loads(&k4, options)?;
            self.check(&k5, "after passes", &format!("{w} after pipeline"));
            let from_parsed = prepare(&parsed, DType::I32, options)
                .unwrap_or_else(|e| panic!("{w}: prepare on the parsed kernel: {e}"));
            assert_eq!(
                ir::print(&from_parsed),
                ir::print(&k5),
                "{w}: prepare differs on the parsed kernel"
            );
            Ok(())
        };
        // A pass may refuse a kernel (an unsupported form); what it produced before
        // that was checked.
        let _ = run();
    }

    fn total(&self) -> usize {
        self.texts.len()
    }
}

fn option_sets() -> Vec<ExpandOptions> {
    let checked = |mut o: ExpandOptions| {
        o.checked = true;
        o
    };
    let mut wgmma = ExpandOptions::ptx(4);
    wgmma.wgmma = true;
    let mut stages = ExpandOptions::ptx(4);
    stages.num_stages = Some(4);
    vec![
        ExpandOptions::ptx(4),
        ExpandOptions::wgsl(4),
        checked(ExpandOptions::ptx(4)),
        checked(ExpandOptions::wgsl(4)),
        wgmma,
        stages,
    ]
}

fn ptr(d: DType) -> ArgSpec {
    ArgSpec::Ptr {
        dtype: d,
        aligned16: true,
    }
}

fn i32s(v: i64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Int(DType::I32, v))
}

fn f32s(v: f64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Float(DType::F32, v))
}

const HEADER: &str = "import torch\nimport triton\nimport triton.language as tl\n\n";

/// A file of `shaders/`, a kernel in it, its launch arguments and constexprs.
type LibraryCase = (
    &'static str,
    &'static str,
    Vec<ArgSpec>,
    Vec<(&'static str, i64)>,
);

/// The kernel library at the snapshots' configurations (`tests/snapshots.rs`).
fn library() -> Vec<LibraryCase> {
    let f = || ptr(DType::F32);
    let h = || ptr(DType::F16);
    vec![
        (
            "vector_add.py",
            "add_kernel",
            vec![f(), f(), f(), i32s(4096)],
            vec![("BLOCK_SIZE", 1024)],
        ),
        (
            "fused_softmax.py",
            "softmax_kernel",
            vec![f(), f(), i32s(1024), i32s(1024), i32s(64), i32s(1000)],
            vec![("BLOCK_SIZE", 1024)],
        ),
        (
            "matmul_block_ptr.py",
            "matmul_block_ptr_kernel",
            [f(), f(), f()]
                .into_iter()
                .chain([512, 512, 512, 512, 1, 512, 1, 512, 1].map(i32s))
                .collect(),
            vec![("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 32)],
        ),
        (
            "matmul.py",
            "matmul_kernel",
            [h(), h(), h()]
                .into_iter()
                .chain([512, 512, 512, 512, 1, 512, 1, 512, 1].map(i32s))
                .collect(),
            vec![
                ("BLOCK_SIZE_M", 64),
                ("BLOCK_SIZE_N", 64),
                ("BLOCK_SIZE_K", 32),
                ("GROUP_SIZE_M", 8),
            ],
        ),
        (
            "layer_norm.py",
            "_layer_norm_fwd_fused",
            vec![
                f(),
                f(),
                f(),
                f(),
                f(),
                f(),
                i32s(1024),
                i32s(1000),
                f32s(1e-5),
            ],
            vec![("BLOCK_SIZE", 1024)],
        ),
        (
            "swiglu.py",
            "swiglu_fwd_kernel",
            vec![f(), f(), ptr(DType::BF16), i32s(4096)],
            vec![("BLOCK_SIZE", 1024)],
        ),
    ]
}

/// Kernels for the forms the library and the test sources may not reach. Each takes
/// `(x_ptr, y_ptr, n, B: tl.constexpr)`.
const EXTRA: &str = r#"
@triton.jit
def combine(a, b):
    return a + b

@triton.jit
def pair(a, ai, b, bi):
    return tl.maximum(a, b), tl.minimum(ai, bi)

@triton.jit
def hints_and_prints(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.max_contiguous(tl.multiple_of(tl.arange(0, B), 8), 8)
    x = tl.load(x_ptr + o, mask=o < n, other=0.0, cache_modifier=".cg", eviction_policy="evict_last", volatile=True)
    tl.device_print("x \"quoted\"\n", x)
    tl.device_print("hex: ", o, hex=True)
    tl.device_assert(n > 0, "n must be positive\t!")
    tl.debug_barrier()
    p = tl.num_programs(0) + tl.program_id(0)
    tl.store(y_ptr + o, o + p, eviction_policy="evict_first")

@triton.jit
def scans_and_reductions(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    c = tl.cumsum(o, 0, reverse=True)
    d = tl.cumprod(x, 0)
    s = tl.reduce(x, 0, combine)
    m, i = tl.reduce((x, o), 0, pair)
    a = tl.argmin(x, axis=0)
    q = tl.associative_scan(x, 0, combine)
    tl.store(y_ptr + o, c + a + i)
    tl.store(x_ptr + o, d + s + m + q)

@triton.jit
def control_and_atomics(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    i = 0
    while i < n:
        i += 3
    acc = tl.zeros((B,), dtype=tl.float32)
    for k in tl.range(0, n, 2, num_stages=3):
        acc += tl.load(x_ptr + o + k)
    for k in tl.range(0, n, flatten=False):
        acc += 1.0
    if n > 2:
        w = acc * 2
    else:
        w = acc
    old = tl.atomic_add(x_ptr + o, w, mask=o < n)
    z = tl.atomic_xchg(y_ptr + o, o)
    c = tl.atomic_cas(y_ptr, 0, i)
    mx = tl.atomic_max(y_ptr + o, o, mask=o < 4)
    tl.store(x_ptr + o, old + z + c + mx)

@triton.jit
def constants_and_casts(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    nan = float("nan")
    m = -float("nan")
    big = tl.full((B,), 9223372036854775807, tl.uint64)
    small = tl.full((B,), -9223372036854775807, tl.int64)
    f = tl.full((B,), 0.1, tl.float64) + 1e-300 + 3.4028234663852886e38
    g = tl.where(x > nan, x, m) + 0.1 + 1e-7 + 1e16 + 2.5e-45
    h = x.to(tl.float16).to(tl.int16, bitcast=True)
    e = tl.fma(x, x, 1.5)
    r = tl.reshape(o, (2, B // 2))
    t = tl.trans(r)
    u = tl.expand_dims(o, 1)
    v = tl.broadcast_to(u, (B, 2))
    tl.store(y_ptr + o, h + (big >> 60).to(tl.int32) + (small >> 62).to(tl.int32) + tl.sum(t, 0).to(tl.int32).sum() + tl.sum(v, 1))
    tl.store(x_ptr + o, g + e + f.to(tl.float32) + tl.umulhi(o, o))
"#;

const FP8: &str = r#"
@triton.jit
def fp8_kernel(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    x = tl.load(x_ptr + o)
    y = x.to(tl.float32) * 2.0
    tl.store(y_ptr + o, y.to(tl.float8e4nv))
"#;

const DESCRIPTOR: &str = r#"
@triton.jit
def desc_kernel(x_desc, y_ptr, n, B: tl.constexpr):
    t = x_desc.load([0, 0])
    o = tl.arange(0, B)
    tl.store(y_ptr + o[:, None] * B + o[None, :], t)
    x_desc.store([0, 0], t * 2)
"#;

/// Traces one case; panics with the diagnostic when it does not trace.
fn trace(src: &str, file: &str, kernel: &str, args: &[ArgSpec], cs: &[(&str, i64)]) -> Kernel {
    let m = Module::parse(file, src).unwrap_or_else(|e| panic!("{file}: {e}"));
    let cs: Vec<(String, ConstValue)> = cs
        .iter()
        .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
        .collect();
    m.specialize(kernel, args, &cs)
        .unwrap_or_else(|e| panic!("{file} {kernel}: {e}"))
        .kernel
}

#[test]
fn snapshots_parse_and_print_back() {
    let dir = root().join("shaders/generated");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tile"))
        .collect();
    files.sort();
    assert!(files.len() >= 6, "{files:?}");
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let k = ir::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let again = ir::print(&k);
        assert!(
            again == text,
            "{}: differs at {}",
            path.display(),
            first_difference(&text, &again)
        );
        verify(&k).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    eprintln!("{} snapshot files round-trip", files.len());
}

#[test]
fn library_and_written_kernels_round_trip_through_the_passes() {
    let mut stats = Stats::default();
    let options = option_sets();
    let mut kernels = vec![];
    for (file, kernel, args, cs) in library() {
        let src = std::fs::read_to_string(root().join("shaders").join(file)).unwrap();
        kernels.push((
            format!("{file} {kernel}"),
            trace(&src, file, kernel, &args, &cs),
        ));
    }
    // The f16 matmul with tiles wgmma takes (swizzled staging).
    let src = std::fs::read_to_string(root().join("shaders/matmul.py")).unwrap();
    let (_, _, args, _) = library().swap_remove(3);
    kernels.push((
        "matmul.py 128x128x64".into(),
        trace(
            &src,
            "matmul.py",
            "matmul_kernel",
            &args,
            &[
                ("BLOCK_SIZE_M", 128),
                ("BLOCK_SIZE_N", 128),
                ("BLOCK_SIZE_K", 64),
                ("GROUP_SIZE_M", 8),
            ],
        ),
    ));
    let extra = format!("{HEADER}{EXTRA}");
    let std_args = |d: DType| vec![ptr(DType::F32), ptr(d), i32s(7)];
    for kernel in [
        "hints_and_prints",
        "scans_and_reductions",
        "control_and_atomics",
        "constants_and_casts",
    ] {
        kernels.push((
            kernel.into(),
            trace(
                &extra,
                "extra.py",
                kernel,
                &std_args(DType::I32),
                &[("B", 8)],
            ),
        ));
    }
    let fp8 = format!("{HEADER}{FP8}");
    kernels.push((
        "fp8".into(),
        trace(
            &fp8,
            "fp8.py",
            "fp8_kernel",
            &std_args(DType::F8E4M3),
            &[("B", 8)],
        ),
    ));
    let desc = format!("{HEADER}{DESCRIPTOR}");
    let desc_args = vec![
        ArgSpec::Descriptor {
            dtype: DType::F32,
            aligned16: true,
            shape: vec![32, 32],
            strides: vec![32, 1],
            block_shape: vec![8, 8],
        },
        ptr(DType::F32),
        i32s(7),
    ];
    kernels.push((
        "descriptor".into(),
        trace(&desc, "desc.py", "desc_kernel", &desc_args, &[("B", 8)]),
    ));
    for (what, k) in &kernels {
        for o in &options {
            stats.check_passes(k, o, what);
        }
    }
    // Every form of the printer appears somewhere (the rest is in parse.rs's tests).
    let all: String = stats.texts.iter().map(String::as_str).collect();
    for needle in [
        "program_id ",
        "num_programs ",
        "arange ",
        "const -inf",
        "const nan",
        "const -nan",
        "const 9223372036854775807 : tile<8xu64>",
        "const -9223372036854775807 : tile<8xi64>",
        "const 0.1 : tile<8xf64>",
        "splat ",
        "broadcast ",
        "expand_dims ",
        "reshape ",
        "permute ",
        "cmp ",
        "select ",
        "fma ",
        "bitcast ",
        "mulhi ",
        "addptr ",
        "make_block_ptr ",
        "advance ",
        " mask ",
        " other ",
        " boundary_check [0, 1] padding zero",
        "cache_modifier \".cg\" eviction_policy \"evict_last\" volatile",
        "eviction_policy \"evict_first\"",
        "staged ring ",
        " mma pending",
        " swizzle",
        "atomic add ",
        "atomic xchg ",
        "atomic max ",
        "atomic_cas ",
        "dot ",
        " combine(",
        " argmin ",
        " reverse add ",
        "scan ",
        "hint multiple_of [8]",
        "hint max_contiguous [8]",
        "device_print \"x \\\"quoted\\\"\\n\" %",
        " hex  //",
        "device_assert ",
        "barrier",
        "check_block_ptr ",
        "num_stages 3",
        "flatten false",
        "while iter(",
        " do(",
        "condition ",
        "} else {",
        "yield  //",
        "f8e4m3>",
        "u8>",
    ] {
        assert!(all.contains(needle), "no kernel prints `{needle}`");
    }
    eprintln!(
        "{} distinct kernels round-trip ({:?})",
        stats.total(),
        stats.by_origin
    );
}

/// The string literals of a Rust file (plain and raw), unescaped.
fn string_literals(src: &str) -> Vec<String> {
    let b = src.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' => {
                // A char literal ('"', '\'', '\\') or a lifetime.
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let mut j = i + 1;
                while b.get(j) == Some(&b'#') {
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let hashes = j - i - 1;
                let end = format!("\"{}", "#".repeat(hashes));
                let start = j + 1;
                match src[start..].find(&end) {
                    Some(len) => {
                        out.push(src[start..start + len].to_string());
                        i = start + len + end.len();
                    }
                    None => break,
                }
            }
            b'"' => {
                let mut s = String::new();
                let mut j = i + 1;
                let chars = &src[j..];
                let mut it = chars.char_indices().peekable();
                let mut closed = false;
                while let Some((k, c)) = it.next() {
                    match c {
                        '"' => {
                            j += k + 1;
                            closed = true;
                            break;
                        }
                        '\\' => match it.next() {
                            Some((_, 'n')) => s.push('\n'),
                            Some((_, 't')) => s.push('\t'),
                            Some((_, 'r')) => s.push('\r'),
                            Some((_, '0')) => s.push('\0'),
                            Some((_, '\n')) => {
                                while it.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                                    it.next();
                                }
                            }
                            Some((_, c)) => s.push(c),
                            None => {}
                        },
                        c => s.push(c),
                    }
                }
                if !closed {
                    break;
                }
                out.push(s);
                i = j;
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether a parameter name looks like a buffer's.
fn pointer_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("ptr")
        || n.starts_with("out")
        || n.starts_with("in")
        || n.starts_with("src")
        || n.starts_with("dst")
        || n.starts_with("buf")
        || matches!(
            n.as_str(),
            "x" | "y" | "z" | "a" | "b" | "c" | "o" | "w" | "p" | "q" | "data" | "flag" | "flags"
        )
}

/// Argument guesses for a signature: pointers of `dtype` for pointer-like names, i32
/// scalars else; or every runtime parameter a pointer.
type Guess = (Vec<ArgSpec>, Vec<(String, ConstValue)>);

fn guesses(sig: &Signature) -> Vec<Guess> {
    let runtime: Vec<&str> = sig
        .params
        .iter()
        .filter(|p| !p.constexpr && !p.has_default)
        .map(|p| p.name.as_str())
        .collect();
    let constexprs: Vec<(String, ConstValue)> = sig
        .params
        .iter()
        .filter(|p| p.constexpr && !p.has_default)
        .map(|p| (p.name.clone(), ConstValue::Int(16)))
        .collect();
    let mut out = vec![];
    for d in [DType::F32, DType::F16] {
        let args = runtime
            .iter()
            .map(|n| if pointer_like(n) { ptr(d) } else { i32s(64) })
            .collect();
        out.push((args, constexprs.clone()));
    }
    out.push((
        runtime.iter().map(|_| ptr(DType::F32)).collect(),
        constexprs,
    ));
    out
}

#[test]
fn test_sources_round_trip_through_the_passes() {
    let mut files = vec![];
    for dir in ["core/tests", "tests"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut stats = Stats::default();
    let options = [ExpandOptions::ptx(4), ExpandOptions::wgsl(4)];
    let (mut sources, mut traced) = (HashSet::new(), 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for lit in string_literals(&text) {
            if !lit.contains("@triton.jit") && !lit.contains("@jit") {
                continue;
            }
            let src = if lit.contains("import triton.language as tl") {
                lit
            } else {
                format!("{HEADER}{lit}")
            };
            if !sources.insert(src.clone()) {
                continue;
            }
            let Ok(m) = Module::parse("k.py", &src) else {
                continue;
            };
            for name in m.kernel_names() {
                let Ok(sig) = m.signature(&name) else {
                    continue;
                };
                for (args, cs) in guesses(&sig) {
                    let Ok(s) = m.specialize(&name, &args, &cs) else {
                        continue;
                    };
                    traced += 1;
                    let what = format!("{} {name}", path.display());
                    for o in &options {
                        stats.check_passes(&s.kernel, o, &what);
                    }
                }
            }
        }
    }
    eprintln!(
        "{} sources, {traced} specializations traced, {} distinct kernels round-trip ({:?})",
        sources.len(),
        stats.total(),
        stats.by_origin
    );
    assert!(traced >= 100, "only {traced} specializations traced");
}

/// A parse error's message, which names the line and column.
fn error(text: &str) -> String {
    let e = ir::parse(text)
        .err()
        .unwrap_or_else(|| panic!("parsed: {text}"));
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert!(e.render().contains("--> <tile ir>:"), "{}", e.render());
    e.message
}

#[test]
fn malformed_text_gives_located_errors() {
    let good = std::fs::read_to_string(root().join("shaders/generated/vector_add.tile")).unwrap();
    // An unknown op on line 3.
    let bad = good.replacen("program_id 0", "program_idx 0", 1);
    let line = bad.lines().position(|l| l.contains("program_idx")).unwrap() + 1;
    let m = error(&bad);
    assert!(
        m.starts_with(&format!(
            "tile IR line {line}, column 8: unknown operation `program_idx`"
        )),
        "{m}"
    );
    // A use before the definition.
    let m = error("kernel @k(%0: i32 n) {\n  %1 = add %0, %2 : i32  // line 4\n}\n");
    assert_eq!(
        m,
        "tile IR line 2, column 16: %2 is not defined before this use"
    );
    // A bad type.
    let m = error("kernel @k(%0: tile<4xf33> x) {\n}\n");
    assert_eq!(
        m,
        "tile IR line 1, column 22: expected an element type, found `f33`"
    );
    // The old Debug spelling of a padding.
    let m = error(
        "kernel @k(%0: block_ptr<f32, 4> p) {\n  %1 = load %0 boundary_check [0] padding Zero : tile<4xf32>\n}\n",
    );
    assert_eq!(
        m,
        "tile IR line 2, column 43: expected a padding (`none`, `zero`, `nan`), found `Zero`"
    );
    // Wrong result count, missing types, a missing brace.
    let m = error("kernel @k(%0: i32 n) {\n  %1, %2 = neg %0 : i32, i32\n}\n");
    assert!(
        m.starts_with("tile IR line 2, column 3: `neg` here has 1 result(s)"),
        "{m}"
    );
    let m = error("kernel @k(%0: i32 n) {\n  %1 = neg %0\n}\n");
    assert_eq!(
        m,
        "tile IR line 2, column 14: expected `:`, found the end of the line"
    );
    let m = error("kernel @k(%0: i32 n) {\n  %1 = neg %0 : i32\n");
    assert_eq!(
        m,
        "tile IR line 3, column 1: expected an instruction or `}`, found the end of the text"
    );
    // A bad line comment and a bad constant.
    let m = error("kernel @k() {\n  %0 = const 1 : i32  // lime 3\n}\n");
    assert_eq!(
        m,
        "tile IR line 2, column 26: expected `line`, found `lime`"
    );
    let m = error("kernel @k() {\n  %0 = const 1.2.3 : f32\n}\n");
    assert!(
        m.starts_with("tile IR line 2, column 14: expected a constant"),
        "{m}"
    );
}
