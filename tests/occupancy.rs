//! Two blocks a multiprocessor on sm_90 (`cuda-backend/src/compile.rs`): where giving
//! up the `wgmma` rings' extra slot lets a second block in, the kernel is printed for
//! two (`.minnctapersm 2`); where the driver's JIT can only keep to that by spilling
//! registers, the CUDA device takes the one-block plan. Each kernel's choice is read
//! from the device's debug log, and its results are checked against the interpreter.
//! (The plan itself, without a GPU: `shared_memory.rs`.)

mod common;

use common::{assert_close, cuda_device, module, Rng};
use std::sync::Mutex;
use tilewise::half::f16;
use tilewise::Device;

/// The debug log of this test process, kept for the assertions.
struct Captured(Mutex<Vec<String>>);

impl log::Log for Captured {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Debug
    }
    fn log(&self, r: &log::Record) {
        self.0.lock().unwrap().push(r.args().to_string());
    }
    fn flush(&self) {}
}

static LOG: Captured = Captured(Mutex::new(Vec::new()));

/// Tutorial 03's loop (`tl.dot(a, b, acc)`), and with `carried` a second 128x128 f32
/// tile carried through the loop in registers, which two blocks' share of the register
/// file cannot hold beside the accumulators.
fn source(carried: bool) -> String {
    let (init, step, out) = if carried {
        (
            "s = tl.zeros((BM, BN), dtype=tl.float32)",
            "s = s * 0.5 + (rm[:, None] * k + rn[None, :]).to(tl.float32)",
            "acc + s",
        )
    } else {
        ("pass", "pass", "acc")
    };
    format!(
        r#"
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
    {init}
    for k in range(0, K, BK):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        {step}
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], {out})
"#
    )
}

/// Runs the kernel on `dev` at 128x128x64, 8 warps, 3 stages over random f16 inputs
/// (the output poisoned) and returns the output.
fn run(dev: &Device, carried: bool) -> Vec<f32> {
    let (m, n, k) = (256usize, 256usize, 320usize);
    let mut rng = Rng::new(if carried { 5 } else { 6 });
    let mut random = |len: usize| -> Vec<f16> {
        (0..len)
            .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
            .collect()
    };
    let (a, b) = (random(m * k), random(k * n));
    let kernel = module("mm.py", &source(carried)).kernel("mm").unwrap();
    let (da, db) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
    let dc = dev.upload(&vec![f32::NAN; m * n]).unwrap();
    kernel
        .launch(dev, [(m / 128) as u32, (n / 128) as u32, 1])
        .arg(&da)
        .arg(&db)
        .arg(&dc)
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .constexpr("BM", 128i64)
        .constexpr("BN", 128i64)
        .constexpr("BK", 64i64)
        .num_warps(8)
        .num_stages(3)
        .run()
        .unwrap_or_else(|e| panic!("{}: {e}", dev.name()));
    dev.download::<f32>(&dc).unwrap()
}

#[test]
fn two_blocks_where_the_registers_allow_and_one_where_the_jit_spills() {
    // Compiled afresh, so that the choice is made (and logged) in this process (the
    // only test here: no other reads the environment meanwhile).
    std::env::set_var("TILEWISE_CACHE", "0");
    let Some(dev) = cuda_device() else {
        return;
    };
    log::set_logger(&LOG).unwrap();
    log::set_max_level(log::LevelFilter::Debug);
    let interp = Device::interpreter();
    for carried in [false, true] {
        LOG.0.lock().unwrap().clear();
        let got = run(&dev, carried);
        let notes = LOG.0.lock().unwrap().clone();
        let has = |text: &str| notes.iter().any(|n| n.contains(text));
        // Both are printed for two blocks first (the estimate allows it); the carried
        // tile makes the JIT spill under it, and that kernel runs the one-block plan
        // (whose notes the device logs).
        assert_eq!(
            has("2 blocks a multiprocessor instead of 1"),
            !carried,
            "carried {carried}: {notes:#?}"
        );
        assert_eq!(
            has("one block a multiprocessor: the two-block plan needed"),
            carried,
            "carried {carried}: {notes:#?}"
        );
        let want: Vec<f64> = run(&interp, carried).iter().map(|&x| x as f64).collect();
        assert_close(&format!("carried {carried}"), &got, &want, 1e-4);
    }
}
