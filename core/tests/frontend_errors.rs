//! Every front-end error: its kind, a message substring, and where the caret points.

use tilewise_core::frontend::Module;
use tilewise_core::ir::DType;
use tilewise_core::launch::{ArgSpec, ConstValue, ScalarValue};
use tilewise_core::{Diagnostic, ErrorKind};

fn ptr() -> ArgSpec {
    ArgSpec::Ptr {
        dtype: DType::F32,
        aligned16: false,
    }
}
fn i32s(v: i64) -> ArgSpec {
    ArgSpec::Scalar(ScalarValue::Int(DType::I32, v))
}

/// Traces `body` (the kernel's body, indented by 4) as kernel `k(x_ptr, n, B: tl.constexpr)`
/// with B=8 and expects an error. Line 5 is the first body line.
fn fail_src(src: &str, args: &[ArgSpec], cs: &[(String, ConstValue)]) -> Diagnostic {
    let m = match Module::parse("k.py", src) {
        Ok(m) => m,
        Err(e) => return e,
    };
    match m.specialize("k", args, cs) {
        Ok(s) => panic!(
            "expected an error, got\n{}",
            tilewise_core::ir::print(&s.kernel)
        ),
        Err(e) => e,
    }
}

fn fail(body: &str) -> Diagnostic {
    let src = format!("import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n{body}");
    fail_src(&src, &[ptr(), i32s(8)], &[("B".into(), ConstValue::Int(8))])
}

fn check(d: &Diagnostic, kind: ErrorKind, msg: &str, line: u32, col: u32) {
    assert_eq!(d.kind, kind, "{d}");
    assert!(
        d.message.contains(msg),
        "message {:?} lacks {msg:?}\n{d}",
        d.message
    );
    assert_eq!(d.line_col(), Some((line, col)), "{d}");
    // Rendering never panics and shows the caret.
    assert!(d.render().contains('^'), "{}", d.render());
}

#[test]
fn incompatible_broadcast() {
    let d = fail("    a = tl.arange(0, 4)\n    b = tl.arange(0, B)\n    c = a + b\n");
    check(
        &d,
        ErrorKind::Shape,
        "incompatible dimensions at index 0: 4 and 8",
        7,
        9,
    );
    assert!(
        d.message.contains("[4]") && d.message.contains("[8]"),
        "{d}"
    );
}

#[test]
fn if_on_tile() {
    let d = fail("    o = tl.arange(0, B)\n    if o < n:\n        tl.store(x_ptr + o, 1.0)\n");
    check(&d, ErrorKind::Shape, "`if` needs a scalar", 6, 8);
    assert!(d.notes.iter().any(|n| n.contains("tl.where")), "{d}");
}

#[test]
fn while_on_tile_and_bool_ops_on_tiles() {
    let d = fail("    o = tl.arange(0, B)\n    while o < n:\n        o += 1\n");
    check(&d, ErrorKind::Shape, "`while` needs a scalar", 6, 11);
    let d = fail("    o = tl.arange(0, B)\n    m = (o < n) and (o > 2)\n");
    check(&d, ErrorKind::Shape, "`and` needs a scalar", 6, 9);
    let d = fail("    o = tl.arange(0, B)\n    m = not (o < n)\n");
    check(&d, ErrorKind::Shape, "`not` needs a scalar", 6, 9);
}

#[test]
fn arange_not_power_of_two() {
    let d = fail("    o = tl.arange(0, 6)\n");
    check(&d, ErrorKind::Shape, "power of 2", 5, 9);
    let d = fail("    o = tl.arange(4, 4)\n");
    check(&d, ErrorKind::Shape, "greater than its start", 5, 9);
}

#[test]
fn wrong_argument_counts() {
    let d = fail("    o = tl.arange(0)\n");
    check(
        &d,
        ErrorKind::Argument,
        "missing required argument `end`",
        5,
        9,
    );
    let d = fail("    o = tl.program_id(0, 1)\n");
    check(&d, ErrorKind::Argument, "takes at most 1 arguments", 5, 9);
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef f(a, b):\n    return a + b\n@triton.jit\ndef k(x_ptr):\n    y = f(1)\n";
    let d = fail_src(src, &[ptr()], &[]);
    check(&d, ErrorKind::Argument, "missing argument `b`", 8, 9);
}

#[test]
fn unknown_tl_function() {
    let d = fail("    y = tl.foo(1)\n");
    check(&d, ErrorKind::Name, "unknown function `tl.foo`", 5, 9);
}

#[test]
fn undefined_name() {
    let d = fail("    y = zz + 1\n");
    check(&d, ErrorKind::Name, "undefined name `zz`", 5, 9);
}

#[test]
fn dtype_errors() {
    let d = fail("    a = tl.arange(0, B).to(tl.float32)\n    b = a & 1\n");
    check(
        &d,
        ErrorKind::Type,
        "bitwise operator `&` needs integer operands",
        6,
        9,
    );
    let d = fail("    a = tl.arange(0, B)\n    b = a.to(tl.uint32)\n    c = a // b\n");
    check(&d, ErrorKind::Type, "different signedness", 7, 9);
    let d = fail("    a = tl.zeros((16, 16), tl.float16)\n    b = tl.zeros((16, 16), tl.float32)\n    c = tl.dot(a, b)\n");
    check(&d, ErrorKind::Type, "same dtype", 7, 9);
    let d = fail("    a = tl.arange(0, B).to(tl.uint32)\n    b = a + -1\n");
    check(&d, ErrorKind::Type, "negative constant -1", 6, 9);
}

#[test]
fn dot_shape_mismatch() {
    let d = fail("    a = tl.zeros((16, 32), tl.float16)\n    b = tl.zeros((16, 16), tl.float16)\n    c = tl.dot(a, b)\n");
    check(&d, ErrorKind::Shape, "inner dimensions", 7, 9);
}

#[test]
fn unsupported_constructs() {
    for (body, what, col) in [
        ("    for i in range(4):\n        break\n", "`break`", 9),
        (
            "    for i in range(4):\n        continue\n",
            "`continue`",
            9,
        ),
        ("    f = lambda x: x\n", "`lambda`", 9),
        ("    y = [i for i in range(3)]\n", "list comprehension", 9),
        (
            "    try:\n        pass\n    except Exception:\n        pass\n",
            "`try`",
            5,
        ),
        ("    with tl.foo():\n        pass\n", "`with`", 5),
        ("    global g\n", "`global`", 5),
    ] {
        let d = fail(body);
        let line = if what.contains("break") || what.contains("continue") {
            6
        } else {
            5
        };
        check(&d, ErrorKind::Unsupported, what, line, col);
    }
}

#[test]
fn early_return() {
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef f(a):\n    if a > 0:\n        return a\n    return 0\n@triton.jit\ndef k(x_ptr, n):\n    y = f(n)\n";
    let d = fail_src(src, &[ptr(), i32s(3)], &[]);
    assert_eq!(d.kind, ErrorKind::Unsupported, "{d}");
    assert!(d.message.contains("return"), "{d}");
}

#[test]
fn non_jit_call() {
    let src = "import triton\nimport triton.language as tl\ndef helper(x):\n    return x\n@triton.jit\ndef k(x_ptr):\n    y = helper(1)\n";
    let d = fail_src(src, &[ptr()], &[]);
    check(&d, ErrorKind::Unsupported, "plain Python function", 7, 9);
}

#[test]
fn syntax_error() {
    let d = fail_src(
        "import triton\n@triton.jit\ndef k(x_ptr:\n    pass\n",
        &[],
        &[],
    );
    assert_eq!(d.kind, ErrorKind::Syntax, "{d}");
    assert_eq!(d.line(), Some(4), "{d}");
}

#[test]
fn launch_argument_errors() {
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    pass\n";
    let d = fail_src(src, &[ptr()], &[("B".into(), ConstValue::Int(4))]);
    check(
        &d,
        ErrorKind::Argument,
        "missing launch argument for parameter `n`",
        4,
        1,
    );
    let d = fail_src(
        src,
        &[ptr(), i32s(1), i32s(2)],
        &[("B".into(), ConstValue::Int(4))],
    );
    check(
        &d,
        ErrorKind::Argument,
        "takes 2 positional launch arguments but 3",
        4,
        1,
    );
    let d = fail_src(src, &[ptr(), i32s(1)], &[("C".into(), ConstValue::Int(4))]);
    check(&d, ErrorKind::Argument, "no parameter named `C`", 4, 1);
    let d = fail_src(src, &[ptr(), i32s(1), ptr()], &[]);
    assert_eq!(d.kind, ErrorKind::Argument, "{d}");
    assert!(d.message.contains("tl.constexpr"), "{d}");
}

#[test]
fn static_assert_and_padding_and_carried_type() {
    let d = fail("    tl.static_assert(B == 4, \"B must be 4\")\n");
    check(&d, ErrorKind::Static, "B must be 4", 5, 5);
    let src = "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (B,), (0,))\n    t = tl.load(p, boundary_check=(0,), padding_option=\"inf\")\n";
    let d = fail_src(src, &[ptr(), i32s(8)], &[("B".into(), ConstValue::Int(8))]);
    check(&d, ErrorKind::Argument, "padding_option", 6, 56);
    let d = fail("    acc = tl.zeros((B,), tl.float32)\n    for i in range(n):\n        acc = acc.to(tl.float16)\n");
    assert_eq!(d.kind, ErrorKind::Type, "{d}");
    assert!(
        d.message.contains("`acc`")
            && d.message.contains("tile<8xf32>")
            && d.message.contains("tile<8xf16>"),
        "{d}"
    );
    let d =
        fail("    if n > 0:\n        a = 1.0\n    else:\n        a = tl.zeros((B,), tl.float32)\n");
    assert_eq!(d.kind, ErrorKind::Type, "{d}");
    assert!(d.message.contains("`a`"), "{d}");
}
