//! Kernels fit the device's shared memory (issue 14): arrays share memory by lifetime
//! (see `attention_shares_shared_memory_between_its_dots` in conformance.rs), the PTX
//! backend shortens its pipelines before it gives up, and a kernel that cannot fit is
//! an error with the need and the limit.

mod common;

use common::module;
use tilewise::cuda::{compile, PtxOptions, PtxTarget};
use tilewise::{Device, ErrorKind};

const MATMUL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=4):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    # A second dot after the loop stages its operands outside the rings.
    w = tl.load(b_ptr + rn[:, None] * BN + rn[None, :])
    out = tl.dot(acc.to(tl.float16), w)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], out)
"#;

fn compiled() -> tilewise::Compiled {
    let m = module("mm.py", MATMUL);
    let k = m.kernel("mm").unwrap();
    let dev = Device::interpreter();
    let a = dev
        .upload(&vec![tilewise::half::f16::ZERO; 128 * 256])
        .unwrap();
    let c = dev.upload(&vec![0f32; 128 * 128]).unwrap();
    k.launch(&dev, 1)
        .arg(&a)
        .arg(&a)
        .arg(&c)
        .arg(256i32)
        .constexpr("BM", 128i64)
        .constexpr("BN", 128i64)
        .constexpr("BK", 64i64)
        .compile()
        .unwrap()
}

#[test]
fn pipelines_shrink_to_fit_then_the_need_is_an_error() {
    let c = compiled();
    let opts = |limit: Option<u32>| PtxOptions {
        max_shared_per_block: limit,
        ..PtxOptions::new(PtxTarget { sm: 90 }, 4)
    };
    // The H200's 227 KiB: the rings (35 KiB a stage) and the second dot's operands fit.
    let full = compile(c.ir(), &opts(Some(232_448))).unwrap();
    assert!(full.shared_bytes > 160 * 1024, "{}", full.shared_bytes);
    assert!(
        !full.notes.iter().any(|n| n.contains("shortened")),
        "{:?}",
        full.notes
    );
    // 160 KiB: the rings as planned leave too little for the second dot; fewer stages fit,
    // and the notes say so.
    let short = compile(c.ir(), &opts(Some(160 * 1024))).unwrap();
    assert!(short.shared_bytes <= 160 * 1024, "{}", short.shared_bytes);
    assert!(short.shared_bytes < full.shared_bytes);
    let note = short
        .notes
        .iter()
        .find(|n| n.contains("pipelines shortened"));
    assert!(note.is_some(), "{:?}", short.notes);
    // The notes name the rings and their depth: fewer stages in the shortened plan.
    let stages = |notes: &[String]| -> Vec<u32> {
        notes
            .iter()
            .filter_map(|n| n.split("in a ring of ").nth(1))
            .filter_map(|r| r.split(' ').next()?.parse().ok())
            .collect()
    };
    let (sf, ss) = (stages(&full.notes), stages(&short.notes));
    assert_eq!(sf.len(), 2, "{:?}", full.notes);
    assert!(ss.is_empty() || ss[0] < sf[0], "{sf:?} {ss:?}");
    // 8 KiB: not even the staged operands of one step fit.
    let e = compile(c.ir(), &opts(Some(8 * 1024))).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Backend, "{}", e.render());
    assert!(e.message.contains("more than the 8192"), "{}", e.render());
    assert!(e.message.contains("needs"), "{}", e.render());
}
