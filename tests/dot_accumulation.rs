//! `acc += tl.dot(a, b)` (and `acc + tl.dot(a, b)`, `tl.dot(a, b) + acc`) is compiled
//! as `tl.dot(a, b, acc)` (`lower/fold_dot_add.rs`): the same PTX and WGSL on every
//! dot form, so the product does not take registers of its own, and on `wgmma` a group
//! stays in flight across the K step instead of a wait for it before the add. Results
//! on every executor against a float64 product; the interpreter runs the kernels as
//! written.

mod common;

use common::{
    assert_close, cuda_device, matmul_ref, module, tutorial_matmul, wgpu_device, Rng, POISON_F32,
};
use tilewise::half::f16;
use tilewise::{Buffer, Compiled, Device};

const FUSED: &str = "acc = tl.dot(a, b, acc)";
const ADDED: [&str; 3] = [
    "acc += tl.dot(a, b)",
    "acc = acc + tl.dot(a, b)",
    "acc = tl.dot(a, b) + acc",
];

/// The launch of STEP's kernel on `dev` over buffers `(a, b, c)` of an
/// `[m, k] x [k, n]` product in blocks of `(BM, BN, BK)`, one program a block.
fn launch<'a>(
    kernel: &'a tilewise::Kernel,
    dev: &'a Device,
    (a, b, c): (&Buffer, &Buffer, &Buffer),
    (m, n, k): (usize, usize, usize),
    blocks: (i64, i64, i64),
) -> tilewise::Launch<'a> {
    let grid = [
        (m as i64 / blocks.0) as u32,
        (n as i64 / blocks.1) as u32,
        1,
    ];
    kernel
        .launch(dev, grid)
        .arg(a)
        .arg(b)
        .arg(c)
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .constexpr("BM", blocks.0)
        .constexpr("BN", blocks.1)
        .constexpr("BK", blocks.2)
}

fn kernel(step: &str) -> tilewise::Kernel {
    module("mm.py", &tutorial_matmul(step))
        .kernel("mm")
        .unwrap()
}

fn compiled(step: &str, (m, n, k): (usize, usize, usize), blocks: (i64, i64, i64)) -> Compiled {
    let dev = Device::interpreter();
    let a = dev.upload(&vec![f16::ZERO; m * k]).unwrap();
    let b = dev.upload(&vec![f16::ZERO; k * n]).unwrap();
    let c = dev.upload(&vec![0f32; m * n]).unwrap();
    launch(&kernel(step), &dev, (&a, &b, &c), (m, n, k), blocks)
        .compile()
        .unwrap()
}

#[test]
fn an_added_product_compiles_as_the_dot_with_its_accumulator() {
    let shape = (128, 128, 160);
    use tilewise::cuda::PtxTarget;
    use tilewise::wgsl::Capabilities;
    // (blocks, warps): the warpgroup form takes 128 rows with 8 warps.
    for (blocks, warps) in [((128, 128, 64), 8), ((64, 64, 32), 4)] {
        let fused = compiled(FUSED, shape, blocks);
        let texts = |c: &Compiled| -> Vec<String> {
            let mut out = vec![];
            for sm in [80, 90] {
                out.push(c.ptx_for(PtxTarget { sm }, warps).unwrap().source);
            }
            out.push(
                c.wgsl_for(&Capabilities::offline(true, false), warps)
                    .unwrap()
                    .source,
            );
            out.push(
                c.wgsl_for(&Capabilities::offline_coop(), warps)
                    .unwrap()
                    .source,
            );
            out
        };
        let want = texts(&fused);
        // The fused kernel's PTX for sm_90 keeps a `wgmma` group in flight: it waits
        // for none (`wait_group 0`) inside the loop, only after it.
        if blocks.0 == 128 {
            let waits = want[1].matches("wgmma.wait_group.sync.aligned 0;").count();
            assert_eq!(waits, 1, "{blocks:?}: {}", want[1]);
        }
        for step in ADDED {
            let got = texts(&compiled(step, shape, blocks));
            for (i, what) in ["sm_80", "sm_90", "WGSL", "WGSL with cooperative matrices"]
                .iter()
                .enumerate()
            {
                assert!(
                    got[i] == want[i],
                    "`{step}` at {blocks:?}: its {what} differs from `{FUSED}`'s"
                );
            }
        }
    }
}

/// Runs each form on `dev` (random f16 inputs in [-1, 1), the output poisoned) and
/// compares with a float64 product.
fn check_on(dev: &Device, what: &str) {
    let (m, n, k) = (128usize, 128usize, 160usize);
    let mut rng = Rng::new(71);
    let a: Vec<f16> = (0..m * k)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let b: Vec<f16> = (0..k * n)
        .map(|_| f16::from_f64(rng.uniform(-1.0, 1.0)))
        .collect();
    let wide = |v: &[f16]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let want = matmul_ref(&wide(&a), &wide(&b), m, n, k);
    for (blocks, warps) in [((128i64, 128i64, 64i64), 8u32), ((64, 64, 32), 4)] {
        for step in ADDED.iter().chain([&FUSED]) {
            let kernel = kernel(step);
            let (ab, bb) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap());
            let cb = dev.upload(&vec![POISON_F32; m * n]).unwrap();
            launch(&kernel, dev, (&ab, &bb, &cb), (m, n, k), blocks)
                .num_warps(warps)
                .run()
                .unwrap_or_else(|e| panic!("{what}, `{step}`, {blocks:?}: {e}"));
            let got = dev.download::<f32>(&cb).unwrap();
            assert_close(&format!("{what}, `{step}`, {blocks:?}"), &got, &want, 1e-5);
        }
    }
}

#[test]
fn an_added_product_is_right_on_every_executor() {
    check_on(&Device::interpreter(), "interpreter");
    check_on(&Device::simulator_ptx(), "PTX simulator");
    check_on(&Device::simulator_hopper(), "Hopper simulator");
    check_on(&Device::simulator_coop(), "cooperative-matrix simulator");
    if let Some(dev) = wgpu_device() {
        check_on(&dev, "wgpu");
    }
    if let Some(dev) = cuda_device() {
        check_on(&dev, "CUDA");
    }
}
