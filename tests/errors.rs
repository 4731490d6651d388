//! Every user error is a Diagnostic with a kind, a message and a location; nothing
//! panics on user input.

mod common;

use common::*;
use tilewise::{Diagnostic, ErrorKind, Module};

const HEADER: &str = "import triton\nimport triton.language as tl\n\n\n";

/// Parses `body` (a whole file), gets `kernel` and runs it once on a 64-element f32
/// buffer `x_ptr` with the given constexprs; returns the error.
fn trace_err(body: &str, kernel: &str, constexprs: &[(&str, i64)]) -> (String, Diagnostic) {
    let src = format!("{HEADER}{body}");
    let dev = device();
    let r = (|| {
        let m = Module::parse("err.py", &src)?;
        let k = m.kernel(kernel)?;
        let x = dev.upload(&[1.5f32; 64])?;
        let mut l = k.launch(&dev, 1).arg(&x);
        for (n, v) in constexprs {
            l = l.constexpr(n, *v);
        }
        l.run()
    })();
    (src.clone(), err(r))
}

#[track_caller]
fn expect(src: &str, e: &Diagnostic, kind: ErrorKind, msg: &str, at: &str) {
    assert_eq!(e.kind, kind, "{}", e.render());
    assert!(
        e.message.contains(msg),
        "message lacks {msg:?}:\n{}",
        e.render()
    );
    assert_eq!(
        e.line_col(),
        Some(line_col_of(src, at, 0)),
        "location:\n{}",
        e.render()
    );
    assert!(e.render().contains('^'), "{}", e.render());
}

#[test]
fn incompatible_broadcast() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, A: tl.constexpr, B: tl.constexpr):\n    a = tl.arange(0, A)[:, None] * tl.arange(0, 4)[None, :]\n    b = tl.arange(0, B)\n    c = a - b\n    tl.store(x_ptr + tl.arange(0, A), tl.sum(c, axis=1))\n",
        "k",
        &[("A", 8), ("B", 16)],
    );
    // (8, 4) - (16,): the trailing dimensions 4 and 16 disagree.
    expect(&src, &e, ErrorKind::Shape, "4 and 16", "a - b");
}

#[test]
fn if_on_a_tile_is_an_error() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    if x > 0:\n        tl.store(x_ptr + offs, x * 2)\n",
        "k",
        &[("BLOCK", 16)],
    );
    assert_eq!(e.kind, ErrorKind::Shape, "{}", e.render());
    let (line, _) = line_col_of(&src, "if x > 0", 0);
    let cols = [
        line_col_of(&src, "if x > 0", 0),
        line_col_of(&src, "x > 0", 0),
    ];
    assert!(
        cols.contains(&e.line_col().unwrap_or((0, 0))),
        "at the `if` (line {line}):\n{}",
        e.render()
    );
}

#[test]
fn arange_must_be_a_power_of_two() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, 1.0)\n",
        "k",
        &[("BLOCK", 12)],
    );
    assert_eq!(e.kind, ErrorKind::Shape, "{}", e.render());
    assert!(e.message.contains("power of"), "{}", e.render());
    assert!(e.message.contains("12"), "{}", e.render());
    assert_eq!(
        e.line_col(),
        Some(line_col_of(&src, "tl.arange(0, BLOCK)", 0)),
        "{}",
        e.render()
    );
}

#[test]
fn wrong_argument_count_to_tl_function() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    y = tl.where(x > 0, x)\n    tl.store(x_ptr + offs, y)\n",
        "k",
        &[("BLOCK", 16)],
    );
    expect(&src, &e, ErrorKind::Argument, "where", "tl.where(x > 0, x)");
}

#[test]
fn wrong_number_of_launch_arguments() {
    let src = format!(
        "{HEADER}@triton.jit\ndef add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    m = offs < n\n    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)\n"
    );
    let dev = device();
    let m = module("add.py", &src);
    let k = ok(m.kernel("add"));
    let x = ok(dev.upload(&[1.0f32; 16]));
    let y = ok(dev.zeros::<f32>(16));
    // Too few.
    let e = err(k
        .launch(&dev, 1)
        .arg(&x)
        .arg(&y)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(e.kind, ErrorKind::Argument, "{}", e.render());
    assert!(
        e.message.contains('n') && e.message.contains("add"),
        "{}",
        e.render()
    );
    // Too many.
    let e = err(k
        .launch(&dev, 1)
        .arg(&x)
        .arg(&y)
        .arg(16i32)
        .arg(3i32)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(e.kind, ErrorKind::Argument, "{}", e.render());
    // A missing constexpr.
    let e = err(k.launch(&dev, 1).arg(&x).arg(&y).arg(16i32).run());
    assert_eq!(e.kind, ErrorKind::Argument, "{}", e.render());
    assert!(e.message.contains("BLOCK"), "{}", e.render());
    // The right arguments work (the kernel itself is fine).
    ok(k.launch(&dev, 1)
        .arg(&x)
        .arg(&y)
        .arg(16i32)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(ok(dev.download::<f32>(&y)), vec![1.0; 16]);
}

#[test]
fn unknown_tl_function() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    tl.store(x_ptr + offs, tl.frobnicate(x))\n",
        "k",
        &[("BLOCK", 16)],
    );
    expect(&src, &e, ErrorKind::Name, "frobnicate", "tl.frobnicate(x)");
}

#[test]
fn missing_kernel_is_a_name_error() {
    let m = module(
        "k.py",
        &format!("{HEADER}@triton.jit\ndef k(x_ptr):\n    pass\n"),
    );
    let e = err(m.kernel("nope"));
    assert_eq!(e.kind, ErrorKind::Name);
    assert!(e.message.contains("nope"), "{}", e.render());
}

#[test]
fn bitwise_and_on_float_is_a_type_error() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x_float = tl.load(x_ptr + offs)\n    y = x_float & 1\n    tl.store(x_ptr + offs, y)\n",
        "k",
        &[("BLOCK", 16)],
    );
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.render());
    assert_eq!(
        e.line_col(),
        Some(line_col_of(&src, "x_float & 1", 0)),
        "{}",
        e.render()
    );
}

#[test]
fn break_is_unsupported() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    for i in range(0, 4):\n        if i == 2:\n            break\n        tl.store(x_ptr + offs, 1.0)\n",
        "k",
        &[("BLOCK", 16)],
    );
    expect(&src, &e, ErrorKind::Unsupported, "break", "break");
}

#[test]
fn lambda_is_unsupported() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    f = lambda v: v * 2\n    tl.store(x_ptr + offs, f(tl.load(x_ptr + offs)))\n",
        "k",
        &[("BLOCK", 16)],
    );
    expect(
        &src,
        &e,
        ErrorKind::Unsupported,
        "lambda",
        "lambda v: v * 2",
    );
}

#[test]
fn syntax_error() {
    let src = format!("{HEADER}@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK\n    tl.store(x_ptr + offs, 1.0)\n\n\ndef host():\n    return 1\n");
    let e = err(Module::parse("bad.py", &src));
    assert_eq!(e.kind, ErrorKind::Syntax, "{}", e.render());
    let open_line = line_col_of(&src, "offs = tl.arange(0, BLOCK", 0).0;
    let (line, _) = e.line_col().expect("a syntax error has a location");
    // The parser may blame the unclosed call or the line after it.
    assert!(
        line == open_line || line == open_line + 1,
        "line {line}:\n{}",
        e.render()
    );
    assert!(e.render().contains("bad.py:"), "{}", e.render());
}

#[test]
fn syntax_error_in_host_code_is_reported_too() {
    // The file must parse as Python even though only jit functions are compiled.
    let src = format!("{HEADER}@triton.jit\ndef k(x_ptr):\n    pass\n\ndef host(:\n    pass\n");
    let e = err(Module::parse("bad_host.py", &src));
    assert_eq!(e.kind, ErrorKind::Syntax, "{}", e.render());
}

#[test]
fn unmasked_out_of_bounds_load() {
    let src = format!(
        "{HEADER}@triton.jit\ndef oob_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    tl.store(out_ptr + offs, x)\n"
    );
    let dev = device();
    let m = module("oob.py", &src);
    let k = ok(m.kernel("oob_kernel"));
    let x = ok(dev.upload(&[1.0f32; 20]));
    let out = ok(dev.zeros::<f32>(32));
    // Program 0 reads 0..16 (fine); program 1 reads 16..32 of a 20-element buffer.
    let e = err(k
        .launch(&dev, 2)
        .arg(&x)
        .arg(&out)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(e.kind, ErrorKind::Runtime, "{}", e.render());
    let msg = &e.message;
    assert!(msg.contains("oob_kernel"), "kernel name: {}", e.render());
    assert!(msg.contains("20"), "first bad index: {}", e.render());
    assert!(
        msg.contains("program") || msg.contains("pid"),
        "program id: {}",
        e.render()
    );
    assert!(
        ["(1, 0, 0)", "program 1", "pid 1", "program_id 1"]
            .iter()
            .any(|p| msg.contains(p)),
        "program id 1: {}",
        e.render()
    );
    assert_eq!(
        e.line_col().map(|(l, _)| l),
        Some(line_col_of(&src, "tl.load(x_ptr + offs)", 0).0),
        "{}",
        e.render()
    );
}

#[test]
fn out_of_bounds_store() {
    let src = format!(
        "{HEADER}@triton.jit\ndef oob_store(out_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, 1.0)\n"
    );
    let dev = device();
    let m = module("oob.py", &src);
    let out = ok(dev.zeros::<f32>(10));
    let e = err(ok(m.kernel("oob_store"))
        .launch(&dev, 1)
        .arg(&out)
        .constexpr("BLOCK", 16)
        .run());
    assert_eq!(e.kind, ErrorKind::Runtime, "{}", e.render());
    assert!(
        e.message.contains("oob_store") && e.message.contains("10"),
        "{}",
        e.render()
    );
}

const FUZZ_BASE: &str = "import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, 2):
        acc += x * y
    if pid == 0:
        acc = tl.where(x > 0, acc, -acc)
    s = tl.sum(acc, axis=0)
    tl.store(out_ptr + offs, acc + s, mask=mask)
";

/// One mangled variant of FUZZ_BASE.
fn mangle(rng: &mut Rng) -> String {
    let mut lines: Vec<String> = FUZZ_BASE.lines().map(str::to_string).collect();
    let body_start = 5; // first line after the decorator
    let pick =
        |rng: &mut Rng, len: usize| body_start + rng.int(0, (len - body_start - 1) as i64) as usize;
    match rng.int(0, 6) {
        0 => {
            // Truncate a line.
            let i = pick(rng, lines.len());
            let cut = rng.int(0, lines[i].len() as i64) as usize;
            lines[i].truncate(cut);
        }
        1 => {
            // Swap two tokens within a line.
            let i = pick(rng, lines.len());
            let mut toks: Vec<String> = lines[i].split(' ').map(str::to_string).collect();
            if toks.len() > 1 {
                let a = rng.int(0, toks.len() as i64 - 1) as usize;
                let b = rng.int(0, toks.len() as i64 - 1) as usize;
                toks.swap(a, b);
            }
            lines[i] = toks.join(" ");
        }
        2 => {
            // Delete a line.
            let i = pick(rng, lines.len());
            lines.remove(i);
        }
        3 => {
            // Swap two lines.
            let (a, b) = (pick(rng, lines.len()), pick(rng, lines.len()));
            lines.swap(a, b);
        }
        4 => {
            // Replace an identifier everywhere with another one.
            let names = [
                "x", "y", "offs", "mask", "acc", "s", "pid", "n", "BLOCK", "tl", "i",
            ];
            let a = names[rng.int(0, names.len() as i64 - 1) as usize];
            let b = names[rng.int(0, names.len() as i64 - 1) as usize];
            for l in lines.iter_mut().skip(body_start + 1) {
                *l = l
                    .split(' ')
                    .map(|t| if t == a { b } else { t })
                    .collect::<Vec<_>>()
                    .join(" ");
            }
        }
        5 => {
            // Insert a stray character.
            let i = pick(rng, lines.len());
            let pos = rng.int(0, lines[i].len() as i64) as usize;
            let c = ['(', ')', ':', ',', '[', '.', '0', '"'][rng.int(0, 7) as usize];
            lines[i].insert(pos, c);
        }
        _ => {
            // Two mutations of the same kind as above, stacked: truncate then swap lines.
            let i = pick(rng, lines.len());
            let cut = rng.int(0, lines[i].len() as i64) as usize;
            lines[i].truncate(cut);
            let (a, b) = (pick(rng, lines.len()), pick(rng, lines.len()));
            lines.swap(a, b);
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn mangled_sources_never_panic() {
    let mut rng = Rng::new(2024);
    let mut oks = 0;
    let mut errs = 0;
    for case in 0..60 {
        let src = if case == 0 {
            FUZZ_BASE.to_string()
        } else {
            mangle(&mut rng)
        };
        let r =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> tilewise::Result<()> {
                let dev = device();
                let m = Module::parse("fuzz.py", &src)?;
                let k = m.kernel("add_kernel")?;
                let x = dev.upload(&[0.5f32; 40])?;
                let y = dev.upload(&[-1.5f32; 40])?;
                let out = dev.zeros::<f32>(40)?;
                k.launch(&dev, 3)
                    .arg(&x)
                    .arg(&y)
                    .arg(&out)
                    .arg(40i32)
                    .constexpr("BLOCK", 16)
                    .run()?;
                Ok(())
            }));
        match r {
            Ok(Ok(())) => oks += 1,
            Ok(Err(e)) => {
                // Every error renders without panicking.
                let _ = e.render();
                errs += 1
            }
            Err(_) => panic!("case {case} panicked on:\n{src}"),
        }
        if case == 0 {
            assert_eq!(oks, 1, "the unmangled kernel must run");
        }
    }
    assert!(
        errs > 10,
        "the mangling should break most variants ({oks} ok, {errs} errors)"
    );
}

/// Tensor descriptors' misuse is located (issue 14): the offsets' count, a stored
/// tile's shape, something else where a descriptor belongs, a method not supported.
#[test]
fn tensor_descriptor_misuse() {
    let mk = "    d = tl.make_tensor_descriptor(x_ptr, [8, 8], [8, 1], [4, 8])\n";
    let (src, e) = trace_err(
        &format!(
            "@triton.jit\ndef k(x_ptr):\n{mk}    x = d.load([0, 0, 4])\n    d.store([0, 0], x)\n"
        ),
        "k",
        &[],
    );
    expect(
        &src,
        &e,
        ErrorKind::Shape,
        "3 offsets for a tensor descriptor of rank 2",
        "[0, 0, 4]",
    );
    let (src, e) = trace_err(
        &format!("@triton.jit\ndef k(x_ptr):\n{mk}    d.store([0, 0], tl.zeros((8, 4), dtype=tl.float32))\n"),
        "k",
        &[],
    );
    expect(
        &src,
        &e,
        ErrorKind::Shape,
        "block shape [4, 8]",
        "tl.zeros((8, 4)",
    );
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr):\n    x = tl.load_tensor_descriptor((x_ptr, 8), [0])\n",
        "k",
        &[],
    );
    expect(
        &src,
        &e,
        ErrorKind::Type,
        "expected a tensor descriptor",
        "(x_ptr, 8)",
    );
    let (src, e) = trace_err(
        &format!("@triton.jit\ndef k(x_ptr):\n{mk}    d.atomic_add([0, 0], tl.zeros((4, 8), dtype=tl.float32))\n"),
        "k",
        &[],
    );
    expect(
        &src,
        &e,
        ErrorKind::Unsupported,
        "atomic_add",
        "d.atomic_add",
    );
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr):\n    d = tl.make_tensor_descriptor(x_ptr, [8, 8], [8], [4, 8])\n",
        "k",
        &[],
    );
    expect(&src, &e, ErrorKind::Shape, "`strides` has 1 entries", "[8]");
}

/// A descriptor argument whose tensor reaches past its buffer is a launch error, as
/// are ill-formed descriptors; nothing runs.
#[test]
fn tensor_descriptor_arguments_are_checked_at_launch() {
    let src =
        format!("{HEADER}@triton.jit\ndef k(d):\n    d.store([0, 0], d.load([0, 0]) + 1.0)\n");
    let m = module("desc.py", &src);
    let k = m.kernel("k").unwrap();
    let dev = device();
    let x = dev.upload(&[0f32; 64]).unwrap();
    for (shape, strides, block, msg) in [
        (
            vec![8i64, 9],
            vec![8i64, 1],
            vec![4u32, 8],
            "reaches element 64",
        ),
        (
            vec![8, 8],
            vec![8],
            vec![4, 8],
            "2 dimensions but 1 strides",
        ),
        (vec![8, 8], vec![8, 1], vec![4, 6], "not a power of two"),
        (vec![8, -1], vec![8, 1], vec![4, 8], "non-negative"),
    ] {
        let e = err(k
            .launch(&dev, 1)
            .arg(tilewise::TensorDescriptor::new(
                &x, &shape, &strides, &block,
            ))
            .run());
        assert_eq!(e.kind, ErrorKind::Launch, "{}", e.render());
        assert!(e.message.contains(msg), "{msg}: {}", e.render());
    }
    assert_eq!(dev.download::<f32>(&x).unwrap(), vec![0f32; 64]);
    // Within the buffer: runs.
    let d = tilewise::TensorDescriptor::contiguous(&x, &[8, 8], &[4, 8]);
    ok(k.launch(&dev, 1).arg(d).run());
    let got = dev.download::<f32>(&x).unwrap();
    assert_eq!(&got[..32], &[1f32; 32]);
    assert_eq!(&got[32..], &[0f32; 32]);
}

/// fp8 is a storage, conversion and `dot`-operand type (issue 14): arithmetic,
/// reductions, atomics, integer conversions and comparisons with integers are located
/// errors; the formats tilewise lacks are values that compare but cannot be used.
#[test]
fn fp8_misuse_is_located() {
    let head = "@triton.jit\ndef k(x_ptr):\n    i = tl.arange(0, 8)\n    a = tl.load(x_ptr + i).to(tl.float8e4nv)\n";
    let cases: &[(&str, ErrorKind, &str, &str)] = &[
        (
            "    b = a + a\n",
            ErrorKind::Type,
            "`+` on float8e4nv values",
            "a + a",
        ),
        (
            "    b = a * 2.0\n",
            ErrorKind::Type,
            "`*` on float8e4nv values",
            "a * 2.0",
        ),
        (
            "    b = -a\n",
            ErrorKind::Type,
            "unary `-` of float8e4nv",
            "-a",
        ),
        (
            "    b = a < 0\n",
            ErrorKind::Type,
            "cannot compare an fp8 value with the integer 0",
            "a < 0",
        ),
        (
            "    b = a + i\n",
            ErrorKind::Type,
            "unexpected types float8e4nv and int32",
            "a + i",
        ),
        (
            "    b = tl.sum(a, axis=0)\n",
            ErrorKind::Type,
            "tl.sum of float8e4nv",
            "a, axis=0",
        ),
        (
            "    b = i.to(tl.float8e5)\n",
            ErrorKind::Type,
            "cannot convert int32 to float8e5",
            "i.to(tl.float8e5)",
        ),
        (
            "    b = a.to(tl.float64)\n",
            ErrorKind::Type,
            "cannot convert float8e4nv to float64",
            "a.to(tl.float64)",
        ),
        (
            "    b = a.to(tl.float8e4b15)\n",
            ErrorKind::Unsupported,
            "tl.float8e4b15 is not supported",
            "tl.float8e4b15)",
        ),
        (
            "    b = tl.exp(a)\n",
            ErrorKind::Type,
            "tl.exp of float8e4nv",
            "a)",
        ),
        (
            // The pointer cast is a reinterpretation (pointers as data); the
            // atomic on fp8 memory is the error.
            "    tl.atomic_add(x_ptr.to(tl.pointer_type(tl.float8e5)) + i, 1.0)\n",
            ErrorKind::Type,
            "tl.atomic_add on float8e5 memory is not supported",
            "tl.atomic_add(",
        ),
        (
            "    b = tl.load(x_ptr + i).to(tl.float16, fp_downcast_rounding=\"rtz\")\n",
            ErrorKind::Unsupported,
            "rtz",
            "\"rtz\"",
        ),
    ];
    for (body, kind, msg, at) in cases {
        let (src, e) = trace_err(&format!("{head}{body}"), "k", &[]);
        expect(&src, &e, *kind, msg, at);
    }
    // The other fp8 names are values: comparing with them traces.
    let src = format!(
        "{HEADER}@triton.jit\ndef k(x_ptr):\n    i = tl.arange(0, 8)\n    x = tl.load(x_ptr + i)\n    if x.dtype == tl.float8e4b15 or x.dtype == tl.float8e5b16:\n        x = x * 2\n    tl.static_assert(tl.float8e4b8.is_fp8() and not tl.float32.is_fp8())\n    tl.store(x_ptr + i, x)\n"
    );
    let dev = device();
    let x = dev.upload(&[1.5f32; 64]).unwrap();
    ok(module("fp8names.py", &src)
        .kernel("k")
        .unwrap()
        .launch(&dev, 1)
        .arg(&x)
        .run());
    assert_eq!(dev.download::<f32>(&x).unwrap()[0], 1.5);
}

/// `tl.assume` of a constant false condition, and `isinstance` against a type a kernel
/// cannot test, are located errors.
#[test]
fn assume_and_isinstance_misuse() {
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr, N: tl.constexpr):\n    tl.assume(N < 0)\n",
        "k",
        &[("N", 8)],
    );
    expect(
        &src,
        &e,
        ErrorKind::Static,
        "tl.assume of a condition that is false",
        "N < 0",
    );
    let (src, e) = trace_err(
        "@triton.jit\ndef k(x_ptr):\n    b = isinstance(x_ptr, tl.block_type)\n",
        "k",
        &[],
    );
    expect(
        &src,
        &e,
        ErrorKind::Unsupported,
        "isinstance(..., tl.block_type)",
        "tl.block_type)",
    );
}

/// A printer's error names the user's line (from the statement's source location in
/// the Thread IR): `erf` of f64 has no PTX routine.
#[test]
fn printer_errors_name_the_source_line() {
    let src = format!(
        "{HEADER}@triton.jit\ndef k(x_ptr):\n    offs = tl.arange(0, 64)\n    x = tl.load(x_ptr + offs)\n    y = tl.erf(x)\n    tl.store(x_ptr + offs, y)\n"
    );
    let dev = device();
    let m = Module::parse("err.py", &src).unwrap();
    let k = m.kernel("k").unwrap();
    let x = dev.upload(&[1.5f64; 64]).unwrap();
    let compiled = k.launch(&dev, 1).arg(&x).compile().unwrap();
    let e = compiled.ptx().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Backend, "{}", e.render());
    assert!(e.message.contains("`erf` on f64"), "{}", e.render());
    assert_eq!(
        e.line(),
        Some(line_col_of(&src, "tl.erf(x)", 0).0),
        "{}",
        e.render()
    );
}
