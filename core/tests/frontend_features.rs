//! The long tail of the dialect: control flow, reductions with combine functions,
//! scans, atomics, shape ops, casts and promotion.

use tilewise_core::frontend::Module;
use tilewise_core::ir::{self, DType};
use tilewise_core::launch::{ArgSpec, ConstValue, ScalarValue};

fn trace(body: &str, extra: &str) -> String {
    let src = format!("import triton\nimport triton.language as tl\n{extra}\n@triton.jit\ndef k(x_ptr, y_ptr, n, B: tl.constexpr):\n{body}");
    let m = Module::parse("k.py", &src).unwrap_or_else(|e| panic!("{e}"));
    let args = [
        ArgSpec::Ptr {
            dtype: DType::F32,
            aligned16: true,
        },
        ArgSpec::Ptr {
            dtype: DType::I32,
            aligned16: true,
        },
        ArgSpec::Scalar(ScalarValue::Int(DType::I32, 7)),
    ];
    let s = m
        .specialize("k", &args, &[("B".into(), ConstValue::Int(8))])
        .unwrap_or_else(|e| panic!("{e}"));
    ir::print(&s.kernel)
}

#[test]
fn reduce_with_combine_fn_and_argmax() {
    let extra = "@triton.jit\ndef combine(a, b):\n    return a + b\n@triton.jit\ndef pair(a, ai, b, bi):\n    return tl.maximum(a, b), tl.minimum(ai, bi)\n";
    let text = trace(
        "    o = tl.arange(0, B)\n    x = tl.load(x_ptr + o)\n    s = tl.reduce(x, 0, combine)\n    m, i = tl.reduce((x, o), 0, pair)\n    a = tl.argmax(x, axis=0)\n    v, j = tl.max(x, axis=0, return_indices=True)\n    tl.store(y_ptr + a, j)\n    tl.store(x_ptr, s + m)\n",
        extra,
    );
    assert!(text.contains("combine("), "{text}");
    assert!(text.contains(" argmax :"), "{text}");
}

#[test]
fn scans_and_sum_dtypes() {
    let text = trace("    o = tl.arange(0, B)\n    c = tl.cumsum(o, 0)\n    m = o < 3\n    s = tl.sum(m, axis=0)\n    tl.store(y_ptr + o, c + s)\n", "");
    assert!(text.contains("scan"), "{text}");
    assert!(
        text.contains("cast") && text.contains("tile<8xi32>"),
        "{text}"
    );
}

#[test]
fn while_static_range_ternary_and_runtime_if_results() {
    let text = trace(
        "    i = 0\n    while i < n:\n        i += 2\n    acc = 0.0\n    for j in tl.static_range(3):\n        acc += j\n    v = 1.0 if n > 3 else 2.0\n    if n > 2:\n        w = v * 2\n    else:\n        w = v\n    tl.store(x_ptr, acc + w + i)\n",
        "",
    );
    assert!(text.contains("while iter("), "{text}");
    assert!(text.contains("condition"), "{text}");
    assert!(text.contains("if ") && text.contains(": (f32)"), "{text}");
}

#[test]
fn loop_carried_literal_takes_body_type() {
    let text = trace("    acc = 0\n    for i in range(n):\n        acc += tl.load(x_ptr + i)\n    tl.store(x_ptr, acc)\n", "");
    assert!(text.contains("iter(") && text.contains(": (f32)"), "{text}");
}

#[test]
fn atomics_shape_ops_and_casts() {
    let text = trace(
        "    o = tl.arange(0, B)\n    old = tl.atomic_add(x_ptr + o, 1.0, mask=o < n)\n    z = tl.atomic_cas(y_ptr, 0, 1)\n    t = tl.reshape(o, (2, 4))\n    u = tl.trans(t)\n    p = tl.permute(t, (1, 0))\n    e = tl.expand_dims(o, 1)\n    bb = tl.broadcast_to(e, (8, 8))\n    f = o.to(tl.float16)\n    g = f.to(tl.int16, bitcast=True)\n    h = tl.exp(f)\n    q = tl.sigmoid(f)\n    r = tl.fma(f, f, 1.0)\n    tl.store(x_ptr + o, h + q + r + old)\n",
        "",
    );
    for needle in [
        "atomic add",
        "atomic_cas",
        "reshape",
        "permute",
        "bitcast",
        "exp",
        "fma",
        "cast",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    // exp on f16 computes in f32 and casts back
    assert!(
        text.contains("exp") && text.contains("tile<8xf16>"),
        "{text}"
    );
}

#[test]
fn promotion_of_literals() {
    let text = trace("    o = tl.arange(0, B).to(tl.float16)\n    a = o * 2.5\n    b = o / 2\n    c = o // 1 if False else o\n    tl.store(x_ptr + tl.arange(0, B), a + b)\n", "");
    assert!(text.contains("const 2.5 : f16"), "{text}");
    assert!(
        text.contains("div") && text.contains("tile<8xf32>"),
        "{text}"
    );
}

#[test]
fn jit_call_with_kwargs_defaults_and_tuple_return() {
    let extra = "@triton.jit\ndef two(x, scale=2, SHIFT: tl.constexpr = 1):\n    return x * scale, x + SHIFT\n";
    let text = trace(
        "    o = tl.arange(0, B)\n    a, b = two(o, SHIFT=3)\n    tl.store(y_ptr + o, a + b)\n",
        extra,
    );
    assert!(text.contains("const 3 : i32"), "{text}");
}
