//! Kernels fit the device's shared memory (issue 14): arrays share memory by lifetime
//! (see `attention_shares_shared_memory_between_its_dots` in conformance.rs), the PTX
//! backend shortens its pipelines, then splits the K tiles of its dots
//! (`lower/split_k_tile.rs`) before it gives up, and a kernel that cannot fit is an
//! error with the need and the limit.

mod common;

use common::{assert_close, matmul_ref, module, Rng, POISON_F32};
use tilewise::core::interp::{HostBuffer, RtArg};
use tilewise::core::launch::{Grid, ScalarValue};
use tilewise::cuda::{compile, compile_with_thread_ir, PtxOptions, PtxTarget};
use tilewise::half::f16;
use tilewise::{DType, Device, ErrorKind};

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
    // One line, no run of spaces from the source's line continuation.
    assert!(!note.unwrap().contains("  "), "{note:?}");
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
    assert!(e.message.contains("K tiles"), "{}", e.render());
}

/// Triton's tutorial matmul: pointer tiles carried through the loop and advanced by
/// `BK`, the last K step masked.
const TUTORIAL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"#;

const BLOCKS: (usize, usize, usize) = (64, 64, 64);

/// The tutorial matmul specialized for f16 inputs of `[m, k] x [k, n]`.
fn tutorial(m: usize, n: usize, k: usize) -> tilewise::Compiled {
    let module = module("tutorial.py", TUTORIAL);
    let kernel = module.kernel("mm").unwrap();
    let dev = Device::interpreter();
    let a = dev.upload(&vec![f16::ZERO; m * k]).unwrap();
    let b = dev.upload(&vec![f16::ZERO; k * n]).unwrap();
    let c = dev.upload(&vec![0f32; m * n]).unwrap();
    let (bm, bn, bk) = BLOCKS;
    kernel
        .launch(&dev, [(m / bm) as u32, (n / bn) as u32, 1])
        .arg(&a)
        .arg(&b)
        .arg(&c)
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .constexpr("BM", bm as i64)
        .constexpr("BN", bn as i64)
        .constexpr("BK", bk as i64)
        .compile()
        .unwrap()
}

fn f16_buffer(v: &[f16]) -> HostBuffer {
    HostBuffer {
        dtype: DType::F16,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// Runs `thread` (the tutorial matmul) in the simulator on random inputs, the output
/// poisoned, and compares with a float64 matmul.
fn check_tutorial(what: &str, thread: &tilewise::core::thread_ir::ThreadKernel, seed: u64) {
    let (m, n, k) = (128, 128, 160);
    let mut rng = Rng::new(seed);
    let a: Vec<f16> = (0..m * k)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let b: Vec<f16> = (0..k * n)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let c = HostBuffer {
        dtype: DType::F32,
        bytes: [POISON_F32; 128 * 128]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect(),
    };
    let mut buffers = vec![f16_buffer(&a), f16_buffer(&b), c];
    let buffer = |i: usize, len: usize| RtArg::Buffer {
        buffer: i,
        offset: 0,
        len,
    };
    let scalar = |v: usize| RtArg::Scalar(ScalarValue::Int(DType::I32, v as i64));
    let args = [
        buffer(0, m * k),
        buffer(1, k * n),
        buffer(2, m * n),
        scalar(m),
        scalar(n),
        scalar(k),
    ];
    let (bm, bn, _) = BLOCKS;
    let grid = Grid([(m / bm) as u32, (n / bn) as u32, 1]);
    tilewise::core::thread_ir::sim::simulate(thread, grid, &args, &mut buffers)
        .unwrap_or_else(|e| panic!("{what}: {}", e.render()));
    let got: Vec<f32> = buffers[2]
        .bytes
        .chunks(4)
        .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let wide = |v: &[f16]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let want = matmul_ref(&wide(&a), &wide(&b), m, n, k);
    assert_close(what, &got, &want, 1e-5);
}

#[test]
fn k_tiles_split_to_fit_and_compute_the_same_product() {
    let c = tutorial(128, 128, 160);
    for (sm, seed) in [(80, 1), (90, 2)] {
        let opts = |limit: Option<u32>| PtxOptions {
            max_shared_per_block: limit,
            ..PtxOptions::new(PtxTarget { sm }, 4)
        };
        // Without a limit: whole K tiles (64 wide, in rings).
        let (_, whole) = compile_with_thread_ir(c.ir(), &opts(None)).unwrap();
        assert!(
            !whole.notes.iter().any(|n| n.contains("split")),
            "{:?}",
            whole.notes
        );
        // 30 KiB: the operands of one 64x64x64 f16 step, the accumulator's and the
        // masks' layout conversions need 37-39 KiB without rings; halves of the K
        // tile fit (26-28 KiB).
        let limit = 30 * 1024;
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(Some(limit)))
            .unwrap_or_else(|e| panic!("sm_{sm}: {}", e.render()));
        assert!(ptx.shared_bytes <= limit, "{}", ptx.shared_bytes);
        let has = |notes: &[String], text: &str| notes.iter().any(|n| n.contains(text));
        assert!(has(&ptx.notes, "pipelines shortened"), "{:?}", ptx.notes);
        assert!(
            has(&ptx.notes, "split into 2 slices of 32"),
            "{:?}",
            ptx.notes
        );
        assert!(
            has(&ptx.notes, "K tiles split into up to 2 slices"),
            "{:?}",
            ptx.notes
        );
        let total = format!("{} bytes of shared memory", ptx.shared_bytes);
        assert!(has(&ptx.notes, &total), "{:?}", ptx.notes);
        check_tutorial(&format!("sm_{sm}, K tile split in 2"), &thread, seed);
        // 24 KiB: quarters (16, the f16 instruction's K) fit.
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(Some(24 * 1024)))
            .unwrap_or_else(|e| panic!("sm_{sm}: {}", e.render()));
        assert!(
            has(&ptx.notes, "split into 4 slices of 16"),
            "{:?}",
            ptx.notes
        );
        check_tutorial(&format!("sm_{sm}, K tile split in 4"), &thread, seed + 10);
        // 16 KiB: slices of 16 are the least the instruction takes, and they do not
        // fit; the message has the need and the limit.
        let e = compile(c.ir(), &opts(Some(16 * 1024))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Backend, "{}", e.render());
        assert!(e.message.contains("more than the 16384"), "{}", e.render());
        assert!(e.message.contains("needs"), "{}", e.render());
        assert!(
            e.message.contains("split into up to 4 slices"),
            "{}",
            e.render()
        );
    }
}

/// WGSL has no rings to shorten: past its other plans, the K tiles are split to fit the
/// adapter's workgroup memory, and the FMA lowering computes the same product.
#[test]
fn wgsl_splits_k_tiles_to_fit_workgroup_memory() {
    let c = tutorial(128, 128, 160);
    let mut caps = tilewise::wgsl::Capabilities::offline(true, false);
    caps.max_compute_workgroup_storage_size = 1 << 20;
    let whole = tilewise::wgsl::compile(c.ir(), &caps, 4).unwrap();
    assert!(
        !whole.notes.iter().any(|n| n.contains("split")),
        "{:?}",
        whole.notes
    );
    caps.max_compute_workgroup_storage_size = whole.workgroup_bytes - 1;
    let w = tilewise::wgsl::compile(c.ir(), &caps, 4).unwrap();
    assert!(
        w.workgroup_bytes < whole.workgroup_bytes,
        "{} {:?}",
        w.workgroup_bytes,
        w.notes
    );
    let has = |text: &str| w.notes.iter().any(|n| n.contains(text));
    assert!(has("split into 2 slices of 32"), "{:?}", w.notes);
    assert!(has("K tiles split into up to 2 slices"), "{:?}", w.notes);
    // The lowering it printed, in the simulator.
    let options = tilewise::core::lower::expand::ExpandOptions {
        k_slices: 2,
        ..tilewise::wgsl::expand_options(&caps, 4)
    };
    let thread = tilewise::core::lower::to_thread_ir(c.ir(), &options).unwrap();
    assert_eq!(thread.shared_bytes() as u32, w.workgroup_bytes);
    check_tutorial("WGSL, K tile split in 2", &thread, 5);
}
