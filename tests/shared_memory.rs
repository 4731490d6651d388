//! Kernels fit the device's shared memory (issue 14): arrays share memory by lifetime
//! (see `attention_shares_shared_memory_between_its_dots` in conformance.rs), the PTX
//! backend shortens its pipelines, then moves layout conversions and reductions in
//! rounds of bounded scratch, then splits the K tiles of its dots
//! (`lower/split_k_tile.rs`) before it gives up (the WGSL backend, without rings, does
//! the same from rounds on), and a kernel that cannot fit is an error with the need and
//! the limit.

mod common;

use common::{assert_close, matmul_ref, module, tutorial_matmul, Rng, POISON_F32};
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
    // The H200's 227 KiB: the rings (32 KiB a stage) fit, and the second dot's
    // operands (64 KiB) take the rings' memory once the loop has drained them.
    let full = compile(c.ir(), &opts(Some(232_448))).unwrap();
    let reuse: Vec<u32> = full
        .notes
        .iter()
        .find(|n| n.contains("after reuse by lifetime"))
        .map(|n| {
            n.split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        reuse.len() == 2 && reuse[1] - reuse[0] >= 64 * 1024,
        "{:?}",
        full.notes
    );
    assert!(
        !full.notes.iter().any(|n| n.contains("shortened")),
        "{:?}",
        full.notes
    );
    // 100 KiB: the rings get fewer stages (the budget is 90% of the limit; a kernel
    // that then still does not fit has its pipelines shortened, with a note:
    // `k_tiles_split_to_fit_and_compute_the_same_product`).
    let short = compile(c.ir(), &opts(Some(100 * 1024))).unwrap();
    assert!(short.shared_bytes <= 100 * 1024, "{}", short.shared_bytes);
    assert!(short.shared_bytes < full.shared_bytes);
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

const BLOCKS: (usize, usize, usize) = (64, 64, 64);

/// The tutorial matmul specialized for f16 inputs of `[m, k] x [k, n]`.
fn tutorial(m: usize, n: usize, k: usize) -> tilewise::Compiled {
    tutorial_in_blocks(m, n, k, BLOCKS)
}

/// [`tutorial`] with blocks of `(bm, bn, bk)`.
fn tutorial_in_blocks(
    m: usize,
    n: usize,
    k: usize,
    (bm, bn, bk): (usize, usize, usize),
) -> tilewise::Compiled {
    let module = module("tutorial.py", &tutorial_matmul("acc += tl.dot(a, b)"));
    let kernel = module.kernel("mm").unwrap();
    let dev = Device::interpreter();
    let a = dev.upload(&vec![f16::ZERO; m * k]).unwrap();
    let b = dev.upload(&vec![f16::ZERO; k * n]).unwrap();
    let c = dev.upload(&vec![0f32; m * n]).unwrap();
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
    check_tutorial_in_blocks(what, thread, seed, BLOCKS)
}

/// [`check_tutorial`] for a kernel of `(bm, bn, _)` blocks.
fn check_tutorial_in_blocks(
    what: &str,
    thread: &tilewise::core::thread_ir::ThreadKernel,
    seed: u64,
    (bm, bn, _): (usize, usize, usize),
) {
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
        let has = |notes: &[String], text: &str| notes.iter().any(|n| n.contains(text));
        // 20 KiB: the whole plan, rings included, fits (18-19.5 KiB): the f32
        // accumulator's layout conversion overlays the f16 operands' rings (30 KiB
        // without), so nothing is shortened, moved in rounds or split.
        let limit = 20 * 1024;
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(Some(limit)))
            .unwrap_or_else(|e| panic!("sm_{sm}: {}", e.render()));
        assert!(ptx.shared_bytes <= limit, "{}", ptx.shared_bytes);
        assert!(
            has(&ptx.notes, "after reuse by lifetime"),
            "{:?}",
            ptx.notes
        );
        assert!(!has(&ptx.notes, "pipelines shortened"), "{:?}", ptx.notes);
        assert!(!has(&ptx.notes, "a round"), "{:?}", ptx.notes);
        // Each note one line, no run of spaces from the source's line continuations.
        assert!(
            ptx.notes.iter().all(|n| !n.contains("  ")),
            "{:?}",
            ptx.notes
        );
        assert!(!has(&ptx.notes, "split"), "{:?}", ptx.notes);
        let total = format!("{} bytes of shared memory", ptx.shared_bytes);
        assert!(has(&ptx.notes, &total), "{:?}", ptx.notes);
        check_tutorial(&format!("sm_{sm}, overlaid"), &thread, seed);
        // 12 KiB: halves of the K tile fit, with rounds of 768 bytes.
        let limit = 12 * 1024;
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(Some(limit)))
            .unwrap_or_else(|e| panic!("sm_{sm}: {}", e.render()));
        assert!(ptx.shared_bytes <= limit, "{}", ptx.shared_bytes);
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
        assert!(has(&ptx.notes, "at most 768 bytes"), "{:?}", ptx.notes);
        check_tutorial(&format!("sm_{sm}, K tile split in 2"), &thread, seed + 5);
        // 7 KiB: quarters (16, the f16 instruction's K) fit (4.5-6 KiB).
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(Some(7 * 1024)))
            .unwrap_or_else(|e| panic!("sm_{sm}: {}", e.render()));
        assert!(
            has(&ptx.notes, "split into 4 slices of 16"),
            "{:?}",
            ptx.notes
        );
        check_tutorial(&format!("sm_{sm}, K tile split in 4"), &thread, seed + 10);
        // 3 KiB: slices of 16 are the least the instruction takes, and they do not
        // fit; the message has the need and the limit.
        let e = compile(c.ir(), &opts(Some(3 * 1024))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Backend, "{}", e.render());
        assert!(e.message.contains("more than the 3072"), "{}", e.render());
        assert!(e.message.contains("needs"), "{}", e.render());
        assert!(
            e.message.contains("split into up to 4 slices"),
            "{}",
            e.render()
        );
    }
}

/// On sm_90 the `wgmma` rings keep a slot more than their stages (one barrier a K
/// step instead of two) where shared memory allows; where giving that slot up lets a
/// second block share the multiprocessor, it is given up and ptxas is asked to fit
/// two blocks (`.minnctapersm 2`), within the registers an estimate leaves it.
#[test]
fn the_rings_extra_slot_is_given_up_for_a_second_block_a_multiprocessor() {
    let h200 = 232_448;
    let opts = |warps: u32| PtxOptions {
        max_shared_per_block: Some(h200),
        num_stages: Some(3),
        ..PtxOptions::new(PtxTarget { sm: 90 }, warps)
    };
    let has = |notes: &[String], text: &str| notes.iter().any(|n| n.contains(text));
    // 128x128x64: four slots of 32 KiB (128 KiB, one block) or three (96 KiB, two);
    // 64 accumulators a thread with 8 warps, 128 with 4: two blocks fit either way.
    let blocks = (128, 128, 64);
    let c = tutorial_in_blocks(128, 128, 160, blocks);
    for (warps, seed) in [(8, 31), (4, 32)] {
        let (thread, ptx) = compile_with_thread_ir(c.ir(), &opts(warps))
            .unwrap_or_else(|e| panic!("{warps} warps: {}", e.render()));
        assert!(
            has(&ptx.notes, "2 blocks a multiprocessor instead of 1"),
            "{warps} warps: {:?}",
            ptx.notes
        );
        assert!(
            ptx.source
                .contains(&format!(".reqntid {}, 1, 1\n.minnctapersm 2\n", 32 * warps)),
            "{warps} warps"
        );
        assert!(
            2 * (ptx.shared_bytes + 1024) <= h200 + 1024,
            "{}",
            ptx.shared_bytes
        );
        if tilewise::cuda::find_ptxas().is_some() {
            let report = tilewise::cuda::assemble(&ptx.source, &ptx.arch)
                .unwrap_or_else(|e| panic!("{warps} warps: ptxas: {e}"));
            // Two blocks' registers fit the 64 K of the register file, unspilled.
            assert!(
                2 * 32 * warps * report.registers <= 65536,
                "{warps} warps: {} registers",
                report.registers
            );
            assert_eq!(report.spill_stores_bytes, 0, "{}", report.log);
        } else if std::env::var("TILEWISE_REQUIRE_PTXAS").as_deref() == Ok("1") {
            panic!("TILEWISE_REQUIRE_PTXAS=1 but ptxas was not found");
        } else {
            eprintln!("ptxas not found: the registers of the two-block plan are not checked");
        }
        check_tutorial_in_blocks(&format!("{warps} warps, two blocks"), &thread, seed, blocks);
        // With the slot (the plan before any fitting, the device not known) the
        // kernel needs more than half a multiprocessor's memory.
        let kept = compile(
            c.ir(),
            &PtxOptions {
                max_shared_per_block: None,
                ..opts(warps)
            },
        )
        .unwrap();
        assert!(kept.shared_bytes > h200 / 2, "{}", kept.shared_bytes);
        assert!(!kept.source.contains(".minnctapersm"));
    }
    // 128x256x64 with 8 warps: 128 accumulators a thread leave no room for a second
    // block's registers, so the slot stays (and no second lowering is tried).
    let c = tutorial_in_blocks(128, 256, 160, (128, 256, 64));
    let ptx = compile(c.ir(), &opts(8)).unwrap();
    assert!(
        !has(&ptx.notes, "blocks a multiprocessor"),
        "{:?}",
        ptx.notes
    );
    assert!(!ptx.source.contains(".minnctapersm"));
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

/// `acc += tl.dot(a, b)` (rather than `tl.dot(a, b, acc)`) and a kernel of two dot
/// loops one after the other, as attention's backward pass has them; the dot operands
/// come from registers (computed from loads), so they are staged by ordinary stores.
const ACCUMULATE: &str = r#"
import triton
import triton.language as tl

@triton.jit
def two_loops(a_ptr, b_ptr, c_ptr, d_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
              BK: tl.constexpr, PLUS: tl.constexpr, SECOND: tl.constexpr,
              STAGES: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in tl.range(0, K, BK, num_stages=STAGES):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :]) * 2.0
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        if PLUS:
            acc += tl.dot(a.to(tl.float16), b)
        else:
            acc = tl.dot(a.to(tl.float16), b, acc)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)
    if SECOND:
        acc2 = tl.zeros((BM, BN), dtype=tl.float32)
        for k in tl.range(0, K, BK, num_stages=STAGES):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :]) * 0.5
            acc2 = acc2 * 0.5 + tl.dot(a, b.to(tl.float16))
        tl.store(d_ptr + rm[:, None] * BN + rn[None, :], acc2)
"#;

/// An accumulator updated by `acc += tl.dot(..)` is carried in the dot's layout (no
/// trip through shared memory each iteration: the same shared memory as
/// `tl.dot(.., acc)`), and a second dot loop after the first reuses the first loop's
/// shared memory (a barrier is placed between them); both compute the right products
/// on the simulators of every lowering and on the GPUs. The memory is compared without
/// pipelining (`num_stages=1`): the rings of asynchronous copies keep their own memory.
#[test]
fn accumulating_dots_and_consecutive_dot_loops_share_memory() {
    let m = module("two_loops.py", ACCUMULATE);
    let kern = m.kernel("two_loops").unwrap();
    let (bm, bn, bk, k) = (64usize, 64usize, 32usize, 96usize);
    let mut rng = Rng::new(77);
    let a: Vec<f16> = (0..bm * k)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let b: Vec<f16> = (0..k * bn)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let wide = |v: &[f16], s: f64| v.iter().map(|x| x.to_f64() * s).collect::<Vec<f64>>();
    let want_c = matmul_ref(&wide(&a, 2.0), &wide(&b, 1.0), bm, bn, k);
    // acc2 = sum over trips t of 0.5^(trips - 1 - t) * (a_t @ (b_t / 2)).
    let trips = k / bk;
    let mut want_d = vec![0f64; bm * bn];
    for t in 0..trips {
        let at: Vec<f64> = (0..bm * bk)
            .map(|i| a[(i / bk) * k + t * bk + i % bk].to_f64())
            .collect();
        let bt: Vec<f64> = (0..bk * bn)
            .map(|i| b[(t * bk + i / bn) * bn + i % bn].to_f64() * 0.5)
            .collect();
        let p = matmul_ref(&at, &bt, bm, bn, bk);
        for (d, x) in want_d.iter_mut().zip(p) {
            *d = *d * 0.5 + x;
        }
    }
    // Runs the kernel on `dev`, or only compiles it (`run` false).
    let launch = |dev: &Device,
                  plus: bool,
                  second: bool,
                  stages: i64,
                  c: &tilewise::Buffer,
                  d: &tilewise::Buffer,
                  run: bool|
     -> Option<tilewise::Compiled> {
        let (ab, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
        let l = kern
            .launch(dev, 1)
            .arg(&ab)
            .arg(&bb)
            .arg(c)
            .arg(d)
            .arg(k as i32)
            .constexpr("BM", bm as i64)
            .constexpr("BN", bn as i64)
            .constexpr("BK", bk as i64)
            .constexpr("PLUS", plus)
            .constexpr("SECOND", second)
            .constexpr("STAGES", stages);
        if run {
            l.run().unwrap();
            None
        } else {
            Some(l.compile().unwrap())
        }
    };
    // Shared memory, from the specializations' Thread IR on WGSL (FMA and cooperative
    // matrices) and PTX.
    let interp = Device::interpreter();
    let (c0, d0) = (
        interp.zeros::<f32>(bm * bn).unwrap(),
        interp.zeros::<f32>(bm * bn).unwrap(),
    );
    let ir = |plus: bool, second: bool| launch(&interp, plus, second, 1, &c0, &d0, false).unwrap();
    let wgsl = tilewise::wgsl::Capabilities::offline(true, false);
    let coop = tilewise::wgsl::Capabilities::offline_coop();
    let bytes = |c: &tilewise::Compiled| -> Vec<u64> {
        let mut out = vec![];
        for caps in [&wgsl, &coop] {
            let mut caps = caps.clone();
            caps.max_compute_workgroup_storage_size = 1 << 20;
            out.push(
                tilewise::wgsl::compile(c.ir(), &caps, 4)
                    .unwrap()
                    .workgroup_bytes as u64,
            );
        }
        for sm in [80, 90] {
            let p = compile(c.ir(), &PtxOptions::new(PtxTarget { sm }, 4)).unwrap();
            out.push(p.shared_bytes as u64);
        }
        out
    };
    let (plus, dot_acc) = (bytes(&ir(true, false)), bytes(&ir(false, false)));
    // The cooperative-matrix form reads a materialized product back through its own
    // scratch; the others need the same as `tl.dot(.., acc)`.
    for i in [0, 2, 3] {
        assert_eq!(plus[i], dot_acc[i], "{plus:?} {dot_acc:?}");
    }
    let both = bytes(&ir(true, true));
    for i in 0..4 {
        assert!(
            both[i] <= plus[i].max(dot_acc[i]) + 1024,
            "{both:?} {plus:?}"
        );
    }
    let mut devices = vec![
        ("sim", Device::simulator()),
        ("sim-ptx", Device::simulator_ptx()),
        ("sim-hopper", Device::simulator_hopper()),
        ("sim-coop", Device::simulator_coop()),
    ];
    devices.extend(common::wgpu_device().map(|d| ("wgpu", d)));
    devices.extend(common::cuda_device().map(|d| ("cuda", d)));
    for (name, dev) in devices {
        for (plus, stages) in [(true, 1), (false, 1), (true, 3), (false, 3)] {
            let c = dev.upload(&vec![POISON_F32; bm * bn]).unwrap();
            let d = dev.upload(&vec![POISON_F32; bm * bn]).unwrap();
            launch(&dev, plus, true, stages, &c, &d, true);
            let what = format!("{name} (PLUS={plus}, STAGES={stages})");
            assert_close(&what, &dev.download::<f32>(&c).unwrap(), &want_c, 1e-5);
            assert_close(&what, &dev.download::<f32>(&d).unwrap(), &want_d, 1e-5);
        }
    }
}

/// A matmul whose epilogue moves the whole accumulator between threads: a sub-tiled
/// store through `reshape` / `permute` / `split` (as 09's persistent matmul writes
/// it), column sums (a reduction across the warps along M) and the row maxima of a
/// transpose. Each takes 64 KiB of scratch as whole tiles.
const EPILOGUE: &str = r#"
import triton
import triton.language as tl

@triton.jit
def epilogue(a_ptr, b_ptr, c_ptr, s_ptr, K, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc = tl.dot(a, b, acc)
    halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
    lo, hi = tl.split(halves)
    rh = tl.arange(0, BN // 2)
    tl.store(c_ptr + rm[:, None] * BN + rh[None, :], lo)
    tl.store(c_ptr + rm[:, None] * BN + (BN // 2 + rh)[None, :], hi)
    tl.store(s_ptr + rn, tl.sum(acc, axis=0))
    tl.store(s_ptr + BN + rn, tl.max(tl.trans(acc), axis=1))
"#;

/// Layout conversions and cross-thread reductions move in rounds of bounded scratch
/// where whole tiles do not fit (`ExpandOptions::scratch_bytes`): the epilogue above
/// needs far more than 48 KiB as whole tiles; with rounds the cooperative-matrix plan
/// fits the H200's 48 KiB through Vulkan (09's sub-tiled epilogue did not), and the PTX
/// backend fits a small limit the same way before it splits K tiles. The plans each
/// backend chose run in the simulator and compute the same values as a float64
/// reference, as do the simulators (the WGSL one moves at most 512 bytes a round) and
/// the GPUs.
#[test]
fn conversions_and_reductions_move_in_rounds_to_fit() {
    let m = module("epilogue.py", EPILOGUE);
    let kern = m.kernel("epilogue").unwrap();
    let (bm, bn, bk, k) = (128usize, 128usize, 32usize, 64usize);
    let mut rng = Rng::new(2024);
    let a: Vec<f16> = (0..bm * k)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let b: Vec<f16> = (0..k * bn)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let wide = |v: &[f16]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let want_c = matmul_ref(&wide(&a), &wide(&b), bm, bn, k);
    let mut want_s: Vec<f64> = (0..bn)
        .map(|j| (0..bm).map(|i| want_c[i * bn + j]).sum())
        .collect();
    want_s.extend((0..bn).map(|j| (0..bm).map(|i| want_c[i * bn + j]).fold(f64::MIN, f64::max)));
    let check = |what: &str, c: &[f32], s: &[f32]| {
        assert_close(&format!("{what}: c"), c, &want_c, 1e-5);
        assert_close(&format!("{what}: sums and maxima"), s, &want_s, 1e-5);
    };
    // Runs the kernel on `dev`, or only compiles it (`run` false).
    let launch = |dev: &Device,
                  c: &tilewise::Buffer,
                  s: &tilewise::Buffer,
                  run: bool|
     -> tilewise::Result<Option<tilewise::Compiled>> {
        let (ab, bb) = (dev.upload(&a)?, dev.upload(&b)?);
        let l = kern
            .launch(dev, 1)
            .arg(&ab)
            .arg(&bb)
            .arg(c)
            .arg(s)
            .arg(k as i32)
            .constexpr("BM", bm as i64)
            .constexpr("BN", bn as i64)
            .constexpr("BK", bk as i64);
        if run {
            l.run().map(|_| None)
        } else {
            l.compile().map(Some)
        }
    };
    // Runs a Thread IR kernel of this specialization in the simulator.
    let simulate = |what: &str, thread: &tilewise::core::thread_ir::ThreadKernel| {
        let poisoned = |n: usize| HostBuffer {
            dtype: DType::F32,
            bytes: vec![POISON_F32; n]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        };
        let mut buffers = vec![
            f16_buffer(&a),
            f16_buffer(&b),
            poisoned(bm * bn),
            poisoned(2 * bn),
        ];
        let buffer = |i: usize, len: usize| RtArg::Buffer {
            buffer: i,
            offset: 0,
            len,
        };
        let args = [
            buffer(0, bm * k),
            buffer(1, k * bn),
            buffer(2, bm * bn),
            buffer(3, 2 * bn),
            RtArg::Scalar(ScalarValue::Int(DType::I32, k as i64)),
        ];
        tilewise::core::thread_ir::sim::simulate(thread, Grid([1, 1, 1]), &args, &mut buffers)
            .unwrap_or_else(|e| panic!("{what}: {}", e.render()));
        let f32s = |h: &HostBuffer| -> Vec<f32> {
            h.bytes
                .chunks(4)
                .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect()
        };
        check(what, &f32s(&buffers[2]), &f32s(&buffers[3]));
    };
    let interp = Device::interpreter();
    let (c0, s0) = (
        interp.zeros::<f32>(bm * bn).unwrap(),
        interp.zeros::<f32>(2 * bn).unwrap(),
    );
    let compiled = launch(&interp, &c0, &s0, false).unwrap().unwrap();

    // WGSL with the H200's cooperative matrices: whole tiles need more than 48 KiB;
    // with rounds the fragment plan fits.
    let mut caps = tilewise::wgsl::Capabilities::offline_coop();
    caps.max_compute_workgroup_storage_size = 1 << 20;
    let whole = tilewise::wgsl::compile(compiled.ir(), &caps, 4).unwrap();
    let limit = 48 * 1024;
    assert!(whole.workgroup_bytes > limit, "{}", whole.workgroup_bytes);
    caps.max_compute_workgroup_storage_size = limit;
    let fitted = tilewise::wgsl::compile(compiled.ir(), &caps, 4).unwrap();
    let has = |notes: &[String], text: &str| notes.iter().any(|n| n.contains(text));
    assert!(fitted.workgroup_bytes <= limit, "{:?}", fitted.notes);
    assert!(has(&fitted.notes, "a round"), "{:?}", fitted.notes);
    assert!(
        has(&fitted.notes, "cooperative matrices"),
        "{:?}",
        fitted.notes
    );
    assert!(!has(&fitted.notes, "split"), "{:?}", fitted.notes);
    // The plan printed, in the simulator (the bound is a quarter or a sixteenth of the
    // limit: the one whose need matches).
    let plan = [limit / 4, limit / 16]
        .into_iter()
        .map(|bound| {
            let options = tilewise::core::lower::expand::ExpandOptions {
                scratch_bytes: Some(bound),
                ..tilewise::wgsl::expand_options(&caps, 4)
            };
            tilewise::core::lower::to_thread_ir(compiled.ir(), &options).unwrap()
        })
        .find(|t| t.shared_bytes() as u32 == fitted.workgroup_bytes)
        .expect("the plan printed");
    assert!(!plan.frags.is_empty(), "the fragment form");
    simulate("WGSL cooperative matrices in rounds", &plan);

    // PTX: without rings, rounds come before K splits.
    for sm in [80, 90] {
        let opts = |limit: Option<u32>| PtxOptions {
            max_shared_per_block: limit,
            ..PtxOptions::new(PtxTarget { sm }, 4)
        };
        let whole = compile(compiled.ir(), &opts(None)).unwrap();
        let limit = 24 * 1024;
        assert!(
            whole.shared_bytes > limit,
            "sm_{sm}: {}",
            whole.shared_bytes
        );
        let (thread, ptx) = compile_with_thread_ir(compiled.ir(), &opts(Some(limit))).unwrap();
        assert!(ptx.shared_bytes <= limit, "sm_{sm}: {:?}", ptx.notes);
        // sm_90's warpgroup accumulator holds the split halves in the same threads and
        // reduces columns over four warps: its epilogue needs little scratch anyway.
        assert_eq!(
            has(&ptx.notes, "a round"),
            sm == 80,
            "sm_{sm}: {:?}",
            ptx.notes
        );
        assert!(
            !has(&ptx.notes, "K tiles split"),
            "sm_{sm}: {:?}",
            ptx.notes
        );
        simulate(&format!("PTX sm_{sm} in rounds"), &thread);
    }

    // Every executor, through the launch API.
    let mut devices = vec![
        ("sim", Device::simulator()),
        ("sim-ptx", Device::simulator_ptx()),
        ("sim-hopper", Device::simulator_hopper()),
        ("sim-coop", Device::simulator_coop()),
    ];
    devices.extend(common::wgpu_device().map(|d| ("wgpu", d)));
    devices.extend(common::cuda_device().map(|d| ("cuda", d)));
    for (name, dev) in devices {
        let c = dev.upload(&vec![POISON_F32; bm * bn]).unwrap();
        let s = dev.upload(&vec![POISON_F32; 2 * bn]).unwrap();
        launch(&dev, &c, &s, true).unwrap_or_else(|e| panic!("{name}: {}", e.render()));
        check(
            name,
            &dev.download::<f32>(&c).unwrap(),
            &dev.download::<f32>(&s).unwrap(),
        );
    }
}
