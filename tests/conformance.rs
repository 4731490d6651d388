//! Cross-executor conformance: every case runs on the interpreter (the reference), on
//! the simulators of the GPU lowerings (WGSL, PTX, sm_90's PTX with `wgmma`, WGSL with
//! cooperative matrices), and on wgpu when an adapter is present, and the results must
//! agree: exactly for integer and data-movement kernels, within 1e-5 (relative to the
//! output's largest magnitude) for f32 arithmetic, 1e-2 for f16/bf16.
//!
//! It also runs on CUDA when a driver and a GPU are present, and every case's PTX is
//! assembled by ptxas for sm_80 and sm_90 (no GPU needed).
//!
//! Without an adapter the wgpu leg says so on stderr; with `TILEWISE_REQUIRE_WGPU=1`
//! (set by CI) a missing adapter fails the suite. The same holds for the CUDA leg
//! (`TILEWISE_REQUIRE_CUDA=1`) and the ptxas leg (`TILEWISE_REQUIRE_PTXAS=1`, set by CI).

mod common;

use common::{cuda_device, wgpu_device};
use tilewise::cuda::PtxTarget;
use tilewise::half::{bf16, f16};
use tilewise::{
    Arg, Buffer, ConstValue, DType, Device, Kernel, Launch, Module, TensorDescriptor, F8E4M3,
    F8E5M2,
};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0)
            .collect()
    }
    fn i32s(&mut self, n: usize, lo: i32, hi: i32) -> Vec<i32> {
        // In i64: `hi - lo` overflows i32 for wide ranges (a debug build checks).
        let span = (hi as i64 - lo as i64) as u64;
        (0..n)
            .map(|_| (lo as i64 + (self.next() % span) as i64) as i32)
            .collect()
    }
}

/// A launch argument as host data.
#[derive(Clone)]
enum H {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    /// fp8 buffers, by their codes (downloaded as codes, so executors agree bit for bit).
    F8E4M3(Vec<u8>),
    F8E5M2(Vec<u8>),
    S(Arg),
    /// A tensor descriptor over the data: (data, shape, strides, block shape).
    Desc(Box<H>, Vec<i64>, Vec<i64>, Vec<u32>),
}

/// The scalar arguments of the matmul kernels for contiguous row-major operands: M, N,
/// K, then the (row, column) strides of A (`m x k`), B (`k x n`) and C (`m x n`).
fn matmul_dims(m: usize, n: usize, k: usize) -> Vec<H> {
    [m, n, k, k.max(1), 1, n, 1, n, 1]
        .iter()
        .map(|&v| s(v as i32))
        .collect()
}

fn poison_f32(n: usize) -> H {
    H::F32(vec![f32::NAN; n])
}

struct Case {
    name: &'static str,
    src: &'static str,
    kernel: &'static str,
    grid: [u32; 3],
    args: Vec<H>,
    constexprs: Vec<(&'static str, ConstValue)>,
    /// Relative tolerance for float buffers (0 = exact).
    tol: f64,
    /// Whether an f32 `dot` at Triton's default precision runs on tf32 tensor cores
    /// where the lowering has them (PTX): then the tolerance is 3e-3.
    tf32: bool,
}

fn upload(dev: &Device, h: &H) -> Option<Buffer> {
    Some(match h {
        H::F32(v) => dev.upload(v).unwrap(),
        H::F16(v) => dev.upload(v).unwrap(),
        H::BF16(v) => dev.upload(v).unwrap(),
        H::I32(v) => dev.upload(v).unwrap(),
        H::I64(v) => dev.upload(v).unwrap(),
        H::U8(v) => dev.upload(v).unwrap(),
        H::F8E4M3(v) => dev
            .upload(&v.iter().map(|&c| F8E4M3(c)).collect::<Vec<_>>())
            .unwrap(),
        H::F8E5M2(v) => dev
            .upload(&v.iter().map(|&c| F8E5M2(c)).collect::<Vec<_>>())
            .unwrap(),
        H::Desc(data, ..) => return upload(dev, data),
        H::S(_) => return None,
    })
}

/// The case's launch on `dev` with the buffers `bufs` (uploaded from `case.args`).
fn launch<'a>(
    case: &Case,
    kernel: &'a Kernel,
    dev: &'a Device,
    bufs: &[Option<Buffer>],
) -> Launch<'a> {
    let mut launch = kernel.launch(dev, case.grid);
    for (h, b) in case.args.iter().zip(bufs) {
        launch = match (h, b) {
            (H::S(a), _) => launch.arg(a.clone()),
            (H::Desc(_, shape, strides, block), Some(b)) => {
                launch.arg(TensorDescriptor::new(b, shape, strides, block))
            }
            (_, Some(b)) => launch.arg(b),
            _ => unreachable!(),
        };
    }
    for (n, v) in &case.constexprs {
        launch = launch.constexpr(n, v.clone());
    }
    launch
}

/// Every buffer after the run, as f64.
fn run(case: &Case, dev: &Device) -> Result<Vec<Vec<f64>>, String> {
    let module = Module::parse(case.name, case.src).map_err(|e| e.to_string())?;
    let kernel = module.kernel(case.kernel).map_err(|e| e.to_string())?;
    let bufs: Vec<Option<Buffer>> = case.args.iter().map(|h| upload(dev, h)).collect();
    launch(case, &kernel, dev, &bufs)
        .run()
        .map_err(|e| e.to_string())?;
    let mut out = vec![];
    for b in bufs.iter().flatten() {
        out.push(match b.dtype() {
            DType::F32 => dev
                .download::<f32>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|&x| x as f64)
                .collect(),
            DType::F16 => dev
                .download::<f16>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|x| x.to_f64())
                .collect(),
            DType::BF16 => dev
                .download::<bf16>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|x| x.to_f64())
                .collect(),
            DType::I32 => dev
                .download::<i32>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|&x| x as f64)
                .collect(),
            DType::I64 => dev
                .download::<i64>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|&x| x as f64)
                .collect(),
            DType::U8 => dev
                .download::<u8>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|&x| x as f64)
                .collect(),
            DType::F8E4M3 => dev
                .download::<F8E4M3>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|x| x.0 as f64)
                .collect(),
            DType::F8E5M2 => dev
                .download::<F8E5M2>(b)
                .map_err(|e| format!("download: {e}"))?
                .iter()
                .map(|x| x.0 as f64)
                .collect(),
            other => panic!("no download for {other}"),
        });
    }
    Ok(out)
}

/// Whether `dev` lowers `dot` as the PTX backend does (tensor cores).
fn tensor_cores(dev: &Device) -> bool {
    dev.kind() == tilewise::DeviceKind::Cuda || dev.name().contains("PTX")
}

fn compare(case: &Case, dev: &Device, want: &[Vec<f64>], got: &[Vec<f64>]) {
    let tol = if case.tf32 && tensor_cores(dev) {
        case.tol.max(3e-3)
    } else {
        case.tol
    };
    for (bi, (w, g)) in want.iter().zip(got).enumerate() {
        let scale = w
            .iter()
            .filter(|x| x.is_finite())
            .fold(0f64, |m, x| m.max(x.abs()))
            .max(1e-30);
        for (i, (a, b)) in w.iter().zip(g).enumerate() {
            let same = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * scale;
            assert!(
                same,
                "{} on {}: buffer {bi} element {i}: {b} (reference {a})",
                case.name,
                dev.name()
            );
        }
    }
}

/// The executors compared with the interpreter: the simulator of each backend's
/// lowering always, wgpu and CUDA when present.
fn gpu_devices() -> Vec<Device> {
    let mut devices = vec![
        Device::simulator(),
        Device::simulator_ptx(),
        Device::simulator_hopper(),
        Device::simulator_coop(),
    ];
    devices.extend(wgpu_device());
    devices.extend(cuda_device());
    devices
}

/// The ptxas leg: the case's PTX, for every `num_warps` it runs with, assembles for
/// sm_80 and sm_90 (no GPU needed). Without ptxas it says so on stderr; with
/// `TILEWISE_REQUIRE_PTXAS=1` (set by CI) a missing ptxas fails.
fn assemble_ptx(case: &Case, num_warps: &[u32]) {
    if tilewise::cuda::find_ptxas().is_none() {
        if std::env::var("TILEWISE_REQUIRE_PTXAS").as_deref() == Ok("1") {
            panic!("TILEWISE_REQUIRE_PTXAS=1 but ptxas was not found");
        }
        eprintln!("SKIPPED (ptxas leg): ptxas not found");
        return;
    }
    let dev = Device::interpreter();
    let module = Module::parse(case.name, case.src).unwrap();
    let kernel = module.kernel(case.kernel).unwrap();
    let bufs: Vec<Option<Buffer>> = case.args.iter().map(|h| upload(&dev, h)).collect();
    let compiled = launch(case, &kernel, &dev, &bufs).compile().unwrap();
    for &nw in num_warps {
        for sm in [80, 90] {
            let ptx = compiled
                .ptx_for(PtxTarget { sm }, nw)
                .unwrap_or_else(|e| panic!("{}: PTX for sm_{sm}: {e}", case.name));
            tilewise::cuda::assemble(&ptx.source, &ptx.arch)
                .unwrap_or_else(|e| panic!("{} (num_warps {nw}): ptxas sm_{sm}: {e}", case.name));
        }
    }
}

fn check(case: Case) {
    check_except_wgpu(case, None)
}

/// [`check`], where `wgpu_error` (if any) is the error the WGSL backend must give
/// instead of a result (a type it does not have).
fn check_except_wgpu(case: Case, wgpu_error: Option<&str>) {
    assemble_ptx(&case, &[4]);
    let want = run(&case, &Device::interpreter())
        .unwrap_or_else(|e| panic!("{} on the interpreter: {e}", case.name));
    // Outputs were poisoned; the reference must have written them.
    for (h, w) in case
        .args
        .iter()
        .filter(|h| !matches!(h, H::S(_)))
        .zip(&want)
    {
        if let H::F32(v) = h {
            if !v.is_empty() && v.iter().all(|x| x.is_nan()) {
                assert!(
                    w.iter().any(|x| !x.is_nan()),
                    "{}: the reference left an output poisoned",
                    case.name
                );
            }
        }
    }
    for dev in gpu_devices() {
        if let (Some(expected), true) = (wgpu_error, dev.kind() == tilewise::DeviceKind::Wgpu) {
            match run(&case, &dev) {
                Err(e) => assert!(e.contains(expected), "{}: {e}", case.name),
                Ok(_) => panic!("{} ran on {}; expected `{expected}`", case.name, dev.name()),
            }
            continue;
        }
        let got =
            run(&case, &dev).unwrap_or_else(|e| panic!("{} on {}: {e}", case.name, dev.name()));
        compare(&case, &dev, &want, &got);
    }
}

const VECTOR_ADD: &str = include_str!("../shaders/vector_add.py");
const SOFTMAX: &str = include_str!("../shaders/fused_softmax.py");
const MATMUL: &str = include_str!("../shaders/matmul.py");
const MATMUL_BP: &str = include_str!("../shaders/matmul_block_ptr.py");
const LAYER_NORM: &str = include_str!("../shaders/layer_norm.py");
const SWIGLU: &str = include_str!("../shaders/swiglu.py");
const CH9: &str = include_str!("../examples/seeds/ch9_masks.py");
const CH7_BCAST: &str = include_str!("../examples/seeds/ch7_broadcasting.py");
const CH7_HINTS: &str = include_str!("../examples/seeds/ch7_alignment_hints.py");
const CH7_BP: &str = include_str!("../examples/seeds/ch7_block_pointers.py");
const LESSON4: &str = include_str!("../examples/seeds/lesson4_block_ptr.py");

fn s(v: impl Into<Arg>) -> H {
    H::S(v.into())
}
fn c(v: impl Into<ConstValue>) -> ConstValue {
    v.into()
}

#[test]
fn vector_add_ragged() {
    let mut r = Rng(1);
    for n in [1, 255, 1000, 4099] {
        check(Case {
            name: "vector_add",
            src: VECTOR_ADD,
            kernel: "add_kernel",
            grid: [(n as u32).div_ceil(256), 1, 1],
            args: vec![
                H::F32(r.f32s(n)),
                H::F32(r.f32s(n)),
                poison_f32(n),
                s(n as i32),
            ],
            constexprs: vec![("BLOCK_SIZE", c(256))],
            tol: 0.0,
            tf32: false,
        });
    }
}

#[test]
fn fused_softmax() {
    let mut r = Rng(2);
    for (rows, cols, block) in [(5, 37, 64), (3, 781, 1024), (4, 16, 16)] {
        check(Case {
            name: "fused_softmax",
            src: SOFTMAX,
            kernel: "softmax_kernel",
            grid: [rows as u32, 1, 1],
            args: vec![
                poison_f32(rows * cols),
                H::F32(r.f32s(rows * cols)),
                s(cols as i32),
                s(cols as i32),
                s(rows as i32),
                s(cols as i32),
            ],
            constexprs: vec![("BLOCK_SIZE", c(block))],
            tol: 1e-5,
            tf32: false,
        });
    }
}

#[test]
fn block_pointer_matmul_f32() {
    let mut r = Rng(3);
    let (m, n, k) = (70, 45, 33);
    check(Case {
        name: "matmul_block_ptr",
        src: MATMUL_BP,
        kernel: "matmul_block_ptr_kernel",
        grid: [(m as u32).div_ceil(32), (n as u32).div_ceil(32), 1],
        args: [
            vec![
                H::F32(r.f32s(m * k)),
                H::F32(r.f32s(k * n)),
                poison_f32(m * n),
            ],
            matmul_dims(m, n, k),
        ]
        .concat(),
        constexprs: vec![("BLOCK_M", c(32)), ("BLOCK_N", c(32)), ("BLOCK_K", c(16))],
        tol: 1e-5,
        tf32: true,
    });
}

/// A case of tutorial 03's grouped matmul (`matmul.py`): `a` (`m x k`), `b` (`k x n`)
/// and the poisoned output `out`, row-major, with `(BM, BN, BK)` blocks and groups of 2.
fn grouped_matmul(
    name: &'static str,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (u32, u32, u32),
    (a, b, out): (H, H, H),
    tol: f64,
    tf32: bool,
) -> Case {
    Case {
        name,
        src: MATMUL,
        kernel: "matmul_kernel",
        grid: [(m as u32).div_ceil(bm) * (n as u32).div_ceil(bn), 1, 1],
        args: [vec![a, b, out], matmul_dims(m, n, k)].concat(),
        constexprs: vec![
            ("BLOCK_SIZE_M", c(bm)),
            ("BLOCK_SIZE_N", c(bn)),
            ("BLOCK_SIZE_K", c(bk)),
            ("GROUP_SIZE_M", c(2)),
        ],
        tol,
        tf32,
    }
}

#[test]
fn grouped_matmul_f16_inputs() {
    let mut r = Rng(4);
    let dims @ (m, n, k) = (48, 40, 40);
    let h = |v: Vec<f32>| H::F16(v.into_iter().map(f16::from_f32).collect());
    check(grouped_matmul(
        "matmul_grouped_f16",
        dims,
        (16, 16, 16),
        (
            h(r.f32s(m * k)),
            h(r.f32s(k * n)),
            H::F16(vec![f16::NAN; m * n]),
        ),
        1e-2,
        false,
    ));
}

#[test]
fn tensor_core_tiles_bf16_and_tf32() {
    // Tiles large enough for several 16x8 fragments per warp, ragged edges, bf16 and
    // tf32 inputs: the tensor-core dot plan's fragment layouts and warp split.
    let mut r = Rng(40);
    let dims @ (m, n, k) = (100, 72, 80);
    let hb = |v: Vec<f32>| H::BF16(v.into_iter().map(bf16::from_f32).collect());
    check(grouped_matmul(
        "matmul_grouped_bf16",
        dims,
        (64, 32, 32),
        (
            hb(r.f32s(m * k)),
            hb(r.f32s(k * n)),
            H::BF16(vec![bf16::NAN; m * n]),
        ),
        1e-2,
        false,
    ));
    check(grouped_matmul(
        "matmul_grouped_tf32",
        dims,
        (64, 32, 32),
        (
            H::F32(r.f32s(m * k)),
            H::F32(r.f32s(k * n)),
            poison_f32(m * n),
        ),
        1e-5,
        true,
    ));
}

#[test]
fn pipelined_loads_past_the_last_iteration_touch_nothing() {
    // The loads feeding `dot` are issued one iteration ahead; with K = 0 the loop never
    // runs and the prologue's loads must be fully masked (A and B are empty buffers).
    let mut r = Rng(42);
    let (m, n) = (40, 24);
    for k in [0usize, 16, 23] {
        check(grouped_matmul(
            "matmul_pipelined_k",
            (m, n, k),
            (32, 16, 16),
            (
                H::F32(r.f32s(m * k)),
                H::F32(r.f32s(k * n)),
                poison_f32(m * n),
            ),
            1e-5,
            true,
        ));
    }
}

#[test]
fn layer_norm_forward() {
    let mut r = Rng(5);
    let (rows, n) = (6, 300);
    check(Case {
        name: "layer_norm",
        src: LAYER_NORM,
        kernel: "_layer_norm_fwd_fused",
        grid: [rows as u32, 1, 1],
        args: vec![
            H::F32(r.f32s(rows * n)),
            poison_f32(rows * n),
            H::F32(r.f32s(n)),
            H::F32(r.f32s(n)),
            poison_f32(rows),
            poison_f32(rows),
            s(n as i32),
            s(n as i32),
            s(1e-5f32),
        ],
        constexprs: vec![("BLOCK_SIZE", c(128))],
        tol: 1e-5,
        tf32: false,
    });
}

#[test]
fn swiglu_bf16_output() {
    let mut r = Rng(6);
    let n = 777;
    check(Case {
        name: "swiglu",
        src: SWIGLU,
        kernel: "swiglu_fwd_kernel",
        grid: [(n as u32).div_ceil(128), 1, 1],
        args: vec![
            H::F32(r.f32s(n)),
            H::F32(r.f32s(n)),
            H::BF16(vec![bf16::NAN; n]),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK_SIZE", c(128))],
        tol: 1e-2,
        tf32: false,
    });
}

#[test]
fn seed_masks() {
    let mut r = Rng(7);
    for kernel in ["causal_mask_kernel", "wrong_causal_mask_kernel"] {
        let (m, n) = (13, 11);
        check(Case {
            name: "ch9_masks",
            src: CH9,
            kernel,
            grid: [1, 1, 1],
            args: vec![
                H::F32(r.f32s(m * n)),
                poison_f32(m * n),
                s(m as i32),
                s(n as i32),
                s(n as i32),
                s(1i32),
            ],
            constexprs: vec![("BLOCK_M", c(16)), ("BLOCK_N", c(16))],
            tol: 0.0,
            tf32: false,
        });
    }
    let n = 64;
    check(Case {
        name: "block_sparse",
        src: CH9,
        kernel: "block_sparse_double_kernel",
        grid: [4, 1, 1],
        args: vec![
            H::F32(r.f32s(n)),
            poison_f32(n),
            H::I32(vec![1, 0, 1, 1]),
            s(n as i32 - 3),
        ],
        constexprs: vec![("BLOCK", c(16)), ("NUM_BLOCKS", c(4))],
        tol: 0.0,
        tf32: false,
    });
    let (rows, width) = (5, 16);
    check(Case {
        name: "ragged_row_sum",
        src: CH9,
        kernel: "ragged_row_sum_kernel",
        grid: [rows as u32, 1, 1],
        args: vec![
            H::F32(r.f32s(rows * width)),
            H::I32(r.i32s(rows, 0, width as i32 + 1)),
            poison_f32(rows),
            s(width as i32),
        ],
        constexprs: vec![("MAX_WIDTH", c(width as i64))],
        tol: 1e-6,
        tf32: false,
    });
}

#[test]
fn seed_broadcasting_and_hints() {
    let mut r = Rng(8);
    check(Case {
        name: "broadcast_add",
        src: CH7_BCAST,
        kernel: "broadcast_add_kernel",
        grid: [1, 1, 1],
        args: vec![H::I32(vec![-7; 12]), s(3i32), s(4i32)],
        constexprs: vec![("BLOCK_M", c(4)), ("BLOCK_N", c(4))],
        tol: 0.0,
        tf32: false,
    });
    check(Case {
        name: "forgot_none",
        src: CH7_BCAST,
        kernel: "forgot_none_kernel",
        grid: [1, 1, 1],
        args: vec![H::I32(vec![-7; 4])],
        constexprs: vec![("BLOCK", c(4))],
        tol: 0.0,
        tf32: false,
    });
    let n = 100;
    check(Case {
        name: "hinted",
        src: CH7_HINTS,
        kernel: "hinted_kernel",
        grid: [(n as u32).div_ceil(16), 1, 1],
        args: vec![H::F32(r.f32s(n)), poison_f32(n), s(n as i32)],
        constexprs: vec![("BLOCK", c(16))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn seed_block_pointers() {
    let mut r = Rng(9);
    // Copy, told the truth and with the lied shape.
    for (m, n, om, on) in [(3, 4, 3, 4), (4, 3, 4, 3)] {
        check(Case {
            name: "copy_block_ptr",
            src: CH7_BP,
            kernel: "copy_block_ptr_kernel",
            grid: [1, 1, 1],
            args: vec![
                H::F32(r.f32s(12)),
                poison_f32(12),
                s(m),
                s(n),
                s(n),
                s(1i32),
                s(om),
                s(on),
            ],
            constexprs: vec![("BLOCK_M", c(4)), ("BLOCK_N", c(4))],
            tol: 0.0,
            tf32: false,
        });
    }
    let n = 203;
    check(Case {
        name: "row_copy_bp",
        src: LESSON4,
        kernel: "row_copy_bp_kernel",
        grid: [(n as u32).div_ceil(64), 1, 1],
        args: vec![H::F32(r.f32s(n)), poison_f32(n), s(n as i32)],
        constexprs: vec![("BLOCK", c(64))],
        tol: 0.0,
        tf32: false,
    });
    let (m, nn) = (9, 50);
    check(Case {
        name: "softmax_bp",
        src: LESSON4,
        kernel: "softmax_bp_kernel",
        grid: [(m as u32).div_ceil(4), 1, 1],
        args: vec![
            H::F32(r.f32s(m * nn)),
            poison_f32(m * nn),
            s(m as i32),
            s(nn as i32),
        ],
        constexprs: vec![("BLOCK_M", c(4)), ("BLOCK_N", c(64))],
        tol: 1e-5,
        tf32: false,
    });
    let (m, n, k) = (21, 19, 23);
    for kernel in ["matmul_bp_kernel", "matmul_bt_kernel"] {
        check(Case {
            name: "lesson4_matmul",
            src: LESSON4,
            kernel,
            grid: [(m as u32).div_ceil(16), (n as u32).div_ceil(16), 1],
            args: vec![
                H::F32(r.f32s(m * k)),
                H::F32(r.f32s(k * n)),
                poison_f32(m * n),
                s(m as i32),
                s(n as i32),
                s(k as i32),
            ],
            constexprs: vec![
                ("N_ITERS", c(2)),
                ("BLOCK_M", c(16)),
                ("BLOCK_N", c(16)),
                ("BLOCK_K", c(16)),
            ],
            tol: 1e-5,
            tf32: true,
        });
    }
}

const EXTRA: &str = r#"
import triton
import triton.language as tl

@triton.jit
def row_stats(x_ptr, max_ptr, arg_ptr, cum_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + cols, mask=cols < n, other=-float("inf"))
    tl.store(max_ptr + row, tl.max(x, axis=0))
    tl.store(arg_ptr + row, tl.argmax(x, axis=0))
    c = tl.cumsum(tl.where(cols < n, x, 0.0), axis=0)
    tl.store(cum_ptr + row * n + cols, c, mask=cols < n)

@triton.jit
def reduce_ties(x_ptr, y_ptr, imax_ptr, amin_ptr, amax_ptr, fmin_ptr, fmax_ptr, n,
                BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    m = (rows[:, None] < n) & (cols[None, :] < BC)
    offs = rows[:, None] * BC + cols[None, :]
    x = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(imax_ptr + rows, tl.max(x, axis=1), mask=rows < n)
    tl.store(amin_ptr + rows, tl.argmin(x, axis=1), mask=rows < n)
    tl.store(amax_ptr + cols, tl.argmax(x, axis=0))
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(fmin_ptr + rows, tl.min(y, axis=1), mask=rows < n)
    tl.store(fmax_ptr + cols, tl.max(y, axis=0))

@triton.jit
def argmin_1d(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=100)
    tl.store(out_ptr, tl.argmin(x, axis=0))
    tl.store(out_ptr + 1, tl.sum(tl.where(offs < n, x, 0), axis=0))
    tl.store(out_ptr + 2, tl.argmax(x, axis=0))

@triton.jit
def sum_i64(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0).to(tl.int64) * 1000000007
    tl.store(out_ptr, tl.sum(x, axis=0))
    tl.store(out_ptr + 1, tl.max(x, axis=0))

@triton.jit
def histogram(x_ptr, bins_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.atomic_add(bins_ptr + v, 1, mask=offs < n)

@triton.jit
def collatz_steps(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    v = tl.load(x_ptr + pid)
    steps = 0
    while v != 1:
        if v % 2 == 0:
            v = v // 2
        else:
            v = 3 * v + 1
        steps += 1
    tl.store(out_ptr + pid, steps)

@triton.jit
def int_ops(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=1)
    b = tl.load(b_ptr + offs, mask=m, other=1)
    r = (a // b) * 3 + (a % b) - (a >> 2) + (b << 3) + (a ^ b) + tl.minimum(a, b)
    tl.store(out_ptr + offs, r, mask=m)

@triton.jit
def transpose_2d(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    t = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    tt = tl.trans(t)
    tl.store(out_ptr + rn[:, None] * M + rm[None, :], tt, mask=tl.trans(mask))
"#;

#[test]
fn reductions_scans_and_argmax() {
    let mut r = Rng(10);
    let (rows, n) = (7, 45);
    check(Case {
        name: "row_stats",
        src: EXTRA,
        kernel: "row_stats",
        grid: [rows as u32, 1, 1],
        args: vec![
            H::F32(r.f32s(rows * n)),
            poison_f32(rows),
            H::I32(vec![-1; rows]),
            poison_f32(rows * n),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK", c(64))],
        tol: 1e-5,
        tf32: false,
    });
}

/// Reductions whose lanes combine by warp shuffles on PTX: ties (argmin/argmax keep the
/// lowest index), signed zeros and NaN among floats, along either axis of a 2-D tile
/// and along a 1-D tile spread over lanes and warps.
#[test]
fn reductions_with_ties_across_lanes_and_warps() {
    let mut r = Rng(21);
    let (n, br, bc) = (13usize, 16usize, 64usize);
    let zeros = [-0.0f32, 0.0, 1.0, -1.0, f32::NAN];
    let y: Vec<f32> = r
        .i32s(br * bc, 0, zeros.len() as i32)
        .into_iter()
        .map(|i| zeros[i as usize])
        .collect();
    check(Case {
        name: "reduce_ties",
        src: EXTRA,
        kernel: "reduce_ties",
        grid: [1, 1, 1],
        args: vec![
            H::I32(r.i32s(br * bc, 0, 4)),
            H::F32(y),
            H::I32(vec![-1; br]),
            H::I32(vec![-1; br]),
            H::I32(vec![-1; bc]),
            poison_f32(br),
            poison_f32(bc),
            s(n as i32),
        ],
        constexprs: vec![("BR", c(br as u32)), ("BC", c(bc as u32))],
        tol: 0.0,
        tf32: false,
    });
    let n = 2000;
    check(Case {
        name: "argmin_1d",
        src: EXTRA,
        kernel: "argmin_1d",
        grid: [1, 1, 1],
        args: vec![H::I32(r.i32s(n, 3, 9)), H::I32(vec![-1; 3]), s(n as i32)],
        constexprs: vec![("BLOCK", c(2048))],
        tol: 0.0,
        tf32: false,
    });
}

/// A 64-bit reduction (two 32-bit shuffles a step on PTX); WGSL has no i64 and says so.
#[test]
fn reductions_of_64_bit_integers() {
    let mut r = Rng(22);
    let n = 1000;
    check_except_wgpu(
        Case {
            name: "sum_i64",
            src: EXTRA,
            kernel: "sum_i64",
            grid: [1, 1, 1],
            args: vec![
                H::I32(r.i32s(n, -1 << 30, 1 << 30)),
                H::I64(vec![-1; 2]),
                s(n as i32),
            ],
            constexprs: vec![("BLOCK", c(1024))],
            tol: 0.0,
            tf32: false,
        },
        Some("i64"),
    );
}

#[test]
fn atomics_histogram() {
    let mut r = Rng(11);
    let n = 1000;
    check(Case {
        name: "histogram",
        src: EXTRA,
        kernel: "histogram",
        grid: [(n as u32).div_ceil(256), 1, 1],
        args: vec![H::I32(r.i32s(n, 0, 16)), H::I32(vec![0; 16]), s(n as i32)],
        constexprs: vec![("BLOCK", c(256))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn while_loops_and_branches() {
    let mut r = Rng(12);
    let n = 20;
    check(Case {
        name: "collatz",
        src: EXTRA,
        kernel: "collatz_steps",
        grid: [n as u32, 1, 1],
        args: vec![H::I32(r.i32s(n, 1, 200)), H::I32(vec![-1; n]), s(n as i32)],
        constexprs: vec![("BLOCK", c(1))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn integer_semantics() {
    let mut r = Rng(13);
    let n = 300;
    let b: Vec<i32> = r
        .i32s(n, -50, 50)
        .into_iter()
        .map(|x| if x == 0 { 7 } else { x })
        .collect();
    check(Case {
        name: "int_ops",
        src: EXTRA,
        kernel: "int_ops",
        grid: [(n as u32).div_ceil(128), 1, 1],
        args: vec![
            H::I32(r.i32s(n, -100000, 100000)),
            H::I32(b),
            H::I32(vec![-1; n]),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK", c(128))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn transpose_through_layouts() {
    let mut r = Rng(14);
    let (m, n) = (37, 29);
    check(Case {
        name: "transpose",
        src: EXTRA,
        kernel: "transpose_2d",
        grid: [(m as u32).div_ceil(16), (n as u32).div_ceil(32), 1],
        args: vec![
            H::F32(r.f32s(m * n)),
            poison_f32(m * n),
            s(m as i32),
            s(n as i32),
        ],
        constexprs: vec![("BM", c(16)), ("BN", c(32))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn guard_sub_range_margins_untouched() {
    // Bind the middle of a larger buffer; masked loads and stores at ragged edges
    // must leave the sentinel margins alone on every device: views at a 16-byte
    // aligned offset (wide accesses), at an unaligned one (scalar), ragged lengths.
    for (at, n) in [(32usize, 300usize), (4, 301), (3, 299)] {
        let mut r = Rng(15 + at as u64);
        let x = r.f32s(n);
        let mut devices = vec![Device::interpreter()];
        devices.extend(gpu_devices());
        for dev in devices {
            let module = Module::parse("vector_add.py", VECTOR_ADD).unwrap();
            let k = module.kernel("add_kernel").unwrap();
            let mut big = vec![12345.0f32; n + 2 * at];
            big[at..at + n].copy_from_slice(&vec![f32::NAN; n]);
            let out = dev.upload(&big).unwrap();
            let xb = dev.upload(&x).unwrap();
            let view = out.slice(at..at + n);
            k.launch(&dev, (n as u32).div_ceil(128))
                .arg(&xb)
                .arg(&xb)
                .arg(&view)
                .arg(n as i32)
                .constexpr("BLOCK_SIZE", 128)
                .run()
                .unwrap();
            let got = dev.download::<f32>(&out).unwrap();
            let name = dev.name();
            assert!(
                got[..at].iter().all(|&v| v == 12345.0),
                "{name} (view at {at}, {n}): front margin written"
            );
            assert!(
                got[at + n..].iter().all(|&v| v == 12345.0),
                "{name} (view at {at}, {n}): back margin written"
            );
            for i in 0..n {
                assert_eq!(
                    got[at + i],
                    x[i] + x[i],
                    "{name} (view at {at}): element {i}"
                );
            }
        }
    }
}

#[test]
fn u8_buffers_pack_without_races() {
    let src = r#"
import triton
import triton.language as tl
@triton.jit
def bump(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, v + 3, mask=offs < n)
"#;
    let mut r = Rng(16);
    let n = 301;
    check(Case {
        name: "u8_bump",
        src,
        kernel: "bump",
        grid: [(n as u32).div_ceil(128), 1, 1],
        args: vec![
            H::U8(r.i32s(n, 0, 256).into_iter().map(|x| x as u8).collect()),
            H::U8(vec![0xAA; n]),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK", c(128))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn grids_past_65535_programs_fold() {
    // 70 000 programs of one element: more than one dispatch dimension holds on WebGPU.
    let mut r = Rng(17);
    let n = 70_000;
    check(Case {
        name: "vector_add_big_grid",
        src: VECTOR_ADD,
        kernel: "add_kernel",
        grid: [n as u32, 1, 1],
        args: vec![
            H::F32(r.f32s(n)),
            H::F32(r.f32s(n)),
            poison_f32(n),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK_SIZE", c(1))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn num_warps_changes_nothing_but_speed() {
    let mut r = Rng(18);
    let (rows, cols) = (6, 300);
    let x = r.f32s(rows * cols);
    let run_with = |dev: &Device, nw: u32| -> Vec<f32> {
        let module = Module::parse("fused_softmax.py", SOFTMAX).unwrap();
        let k = module.kernel("softmax_kernel").unwrap();
        let xb = dev.upload(&x).unwrap();
        let out = dev.upload(&vec![f32::NAN; rows * cols]).unwrap();
        k.launch(dev, rows as u32)
            .arg(&out)
            .arg(&xb)
            .arg(cols as i32)
            .arg(cols as i32)
            .arg(rows as i32)
            .arg(cols as i32)
            .constexpr("BLOCK_SIZE", 512)
            .num_warps(nw)
            .run()
            .unwrap_or_else(|e| panic!("{} num_warps={nw}: {e}", dev.name()));
        dev.download(&out).unwrap()
    };
    let want = run_with(&Device::interpreter(), 4);
    for dev in gpu_devices() {
        for nw in [1, 2, 8] {
            let got = run_with(&dev, nw);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6,
                    "{} num_warps={nw}: element {i}: {g} vs {w}",
                    dev.name()
                );
            }
        }
    }
    // An invalid count is a launch error, not a crash.
    let module = Module::parse("fused_softmax.py", SOFTMAX).unwrap();
    let k = module.kernel("softmax_kernel").unwrap();
    let dev = Device::interpreter();
    let b = dev.zeros::<f32>(4).unwrap();
    let err = k
        .launch(&dev, 1)
        .arg(&b)
        .arg(&b)
        .arg(2i32)
        .arg(2i32)
        .arg(1i32)
        .arg(2i32)
        .constexpr("BLOCK_SIZE", 2)
        .num_warps(3)
        .run()
        .unwrap_err();
    assert_eq!(err.kind, tilewise::ErrorKind::Launch);
    assert!(err.message.contains("num_warps"), "{err}");
}

#[test]
fn same_named_kernels_of_two_modules_stay_apart() {
    // Device caches of compiled code are keyed by the module too: the second module's
    // `fill` must not run the first one's code.
    let src = |v: i32| {
        format!(
            "import triton\nimport triton.language as tl\n@triton.jit\ndef fill(out_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, tl.full((BLOCK,), {v}, tl.int32))\n"
        )
    };
    let mut devices = vec![Device::interpreter()];
    devices.extend(gpu_devices());
    for dev in devices {
        for v in [7, 9] {
            let text = src(v);
            let module = Module::parse("fill.py", &text).unwrap();
            let k = module.kernel("fill").unwrap();
            let out = dev.upload(&vec![0i32; 64]).unwrap();
            k.launch(&dev, 1)
                .arg(&out)
                .constexpr("BLOCK", 64)
                .run()
                .unwrap();
            let got = dev.download::<i32>(&out).unwrap();
            assert!(got.iter().all(|&x| x == v), "{}: {got:?}", dev.name());
        }
    }
}

#[test]
fn false_hints_never_misalign_wide_accesses() {
    // `multiple_of` lies (offsets 3..10): a wide access taken on the hint's word must
    // check it at run time and fall back, never fault or read the wrong elements.
    // Unchecked behaviour: with TILEWISE_CHECKED=1 every executor reports the lie
    // instead (tests/checked.rs).
    if std::env::var("TILEWISE_CHECKED").is_ok_and(|v| v == "1") {
        eprintln!("NOT RUN (unchecked behaviour): TILEWISE_CHECKED=1 reports the lie");
        return;
    }
    let mut r = Rng(41);
    for n in [16, 11] {
        check(Case {
            name: "lying_multiple_of",
            src: CH7_HINTS,
            kernel: "lying_multiple_of_kernel",
            grid: [1, 1, 1],
            args: vec![H::F32(r.f32s(16)), poison_f32(16), s(n)],
            constexprs: vec![("BLOCK", c(8))],
            tol: 0.0,
            tf32: false,
        });
    }
    check(Case {
        name: "true_hints",
        src: CH7_HINTS,
        kernel: "hinted_kernel",
        grid: [4, 1, 1],
        args: vec![H::F32(r.f32s(64)), poison_f32(64), s(64)],
        constexprs: vec![("BLOCK", c(16))],
        tol: 0.0,
        tf32: false,
    });
}

#[test]
fn gpu_timers_time_queued_work() {
    // `time_on_device` runs the work and, where the executor has GPU timers (CUDA
    // events, wgpu timestamp queries), returns a positive device time.
    let n = 1 << 16;
    let mut r = Rng(43);
    let x = r.f32s(n);
    let mut devices = vec![Device::interpreter()];
    devices.extend(wgpu_device());
    devices.extend(cuda_device());
    for dev in devices {
        let module = Module::parse("vector_add.py", VECTOR_ADD).unwrap();
        let k = module.kernel("add_kernel").unwrap();
        let xb = dev.upload(&x).unwrap();
        let out = dev.upload(&vec![f32::NAN; n]).unwrap();
        let time = dev
            .time_on_device(|| {
                for _ in 0..3 {
                    k.launch(&dev, (n as u32).div_ceil(1024))
                        .arg(&xb)
                        .arg(&xb)
                        .arg(&out)
                        .arg(n as i32)
                        .constexpr("BLOCK_SIZE", 1024)
                        .run()?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{}: {e}", dev.name()));
        match (dev.kind(), time) {
            (tilewise::DeviceKind::Interpreter, t) => assert!(t.is_none()),
            (_, Some(t)) => assert!(t > 0.0 && t < 10.0, "{}: {t} s", dev.name()),
            (_, None) => eprintln!("{}: no GPU timers (host timing)", dev.name()),
        }
        let got = dev.download::<f32>(&out).unwrap();
        assert!(
            got.iter().zip(&x).all(|(g, v)| *g == v + v),
            "{}",
            dev.name()
        );
    }
}

/// Kernels for bugs found outside the suite (issue 11): each case failed on some GPU
/// path before its fix.
const REGRESSIONS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def _add(a, b):
    return a + b

@triton.jit
def chained_reductions(x_ptr, out_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    m = (rows[:, None] < R) & (cols[None, :] < C)
    offs = rows[:, None] * C + cols[None, :]
    t = tl.load(x_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + 0, tl.sum(tl.sum(t, axis=1), axis=0))
    tl.store(out_ptr + 1, tl.sum(tl.sum(t, axis=0), axis=0))
    tl.store(out_ptr + 2, tl.max(tl.max(t, axis=1), axis=0))
    tl.store(out_ptr + 3, tl.min(tl.min(t, axis=0), axis=0))
    tl.store(out_ptr + 4, tl.argmax(tl.sum(t, axis=1), axis=0).to(tl.float32))
    tl.store(out_ptr + 5, tl.argmin(tl.max(t, axis=0), axis=0).to(tl.float32))
    tl.store(out_ptr + 6, tl.reduce(tl.reduce(t, 1, _add), 0, _add))
    k = tl.sum(tl.sum(t, axis=1, keep_dims=True), axis=0, keep_dims=True)
    one = tl.arange(0, 1)
    tl.store(out_ptr + 7 + one[:, None] + one[None, :], k)
    u = tl.load(x_ptr + offs, mask=m, other=float("nan"))
    nans = tl.sum(tl.sum((u != u).to(tl.int32), axis=1), axis=0)
    tl.store(out_ptr + 8, nans.to(tl.float32))
    t3 = tl.reshape(t, (BR // 4, 4, BC))
    tl.store(out_ptr + 9, tl.sum(tl.sum(tl.sum(t3, axis=2), axis=0), axis=0))
    tl.store(out_ptr + 10, tl.max(tl.sum(tl.sum(t3, axis=1), axis=0), axis=0))
    tl.store(out_ptr + 11, tl.sum(tl.max(tl.sum(t3, axis=0), axis=1), axis=0))
    tl.store(out_ptr + 12, tl.sum(tl.sum(t, axis=1) * 2.0, axis=0))

@triton.jit
def nan_compares(x_ptr, y_ptr, out_ptr, cnt_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    bp = tl.make_block_ptr(x_ptr, shape=(R, C), strides=(C, 1), offsets=(0, 0),
                           block_shape=(BR, BC), order=(1, 0))
    t = tl.load(bp, boundary_check=(0, 1), padding_option="nan")
    is_nan = t != t
    tl.store(cnt_ptr, tl.sum(tl.sum(is_nan.to(tl.int32), axis=1), axis=0))
    offs = tl.arange(0, BC)
    a = tl.load(x_ptr + offs)
    b = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, _codes(a, b))
    tl.store(out_ptr + BC + offs, _codes(a.to(tl.float16), b.to(tl.float16)))
    tl.store(out_ptr + 2 * BC + offs, _codes(a.to(tl.bfloat16), b.to(tl.bfloat16)))

@triton.jit
def _codes(a, b):
    c = (a == b).to(tl.int32) + 2 * (a != b).to(tl.int32) + 4 * (a < b).to(tl.int32)
    c += 8 * (a <= b).to(tl.int32) + 16 * (a > b).to(tl.int32) + 32 * (a >= b).to(tl.int32)
    c += 64 * (a == a).to(tl.int32) + 128 * (b != b).to(tl.int32)
    c += 256 * a.to(tl.int1).to(tl.int32)
    return c

@triton.jit
def narrow_round_trip(x_ptr, h_ptr, bf_ptr, back_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    h = x.to(tl.float16)
    bf = x.to(tl.bfloat16)
    tl.store(h_ptr + offs, h, mask=m)
    tl.store(bf_ptr + offs, bf, mask=m)
    tl.store(back_ptr + offs, h.to(tl.float32) + bf.to(tl.float32), mask=m)

@triton.jit
def while_packed(x_ptr, out_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs)
    w = tl.load(x_ptr + BLOCK + offs)
    i = 0
    while i < n:
        v = tl.minimum(v, (w + v).to(tl.bfloat16))
        w = tl.maximum(w, v)
        i += 1
    tl.store(out_ptr + offs, v)
    tl.store(out_ptr + BLOCK + offs, w)
    tl.store(cnt_ptr, i.to(tl.int32))

@triton.jit
def while_condition_effects(cnt_ptr, n):
    i = 0
    while tl.atomic_add(cnt_ptr, 1) < n:
        i += 1
    tl.store(cnt_ptr + 1, i)

@triton.jit
def self_difference(x_ptr, out_ptr, out16_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x - x)
    # The same value through a select of it with itself (seed 5000106).
    tl.store(out_ptr + BLOCK + offs, x - tl.where(offs % 3 == 0, x, x))
    h = x.to(tl.float16)
    tl.store(out16_ptr + offs, h - h)
"#;

/// A reduction over the result of a reduction along another axis (2-D and 3-D, sum,
/// max, min, argmax, argmin, `tl.reduce`, `keep_dims`, NaN counts): the slice layout
/// of the first reduction replicates registers, and the second combined each copy
/// (38687.5 for 702.4 on the WGSL lowering).
#[test]
fn reduction_of_a_reduction() {
    let mut r = Rng(31);
    for (rows, cols) in [(13usize, 29usize), (16, 32), (3, 7)] {
        check(Case {
            name: "chained_reductions",
            src: REGRESSIONS,
            kernel: "chained_reductions",
            grid: [1, 1, 1],
            args: vec![
                H::F32(r.f32s(rows * cols)),
                poison_f32(16),
                s(rows as i32),
                s(cols as i32),
            ],
            constexprs: vec![("BR", c(16)), ("BC", c(32))],
            tol: 1e-5,
            tf32: false,
        });
    }
}

/// Every float comparison follows IEEE with NaN operands (`!=` true, the others false),
/// on f32, f16 and bf16, and a NaN-padded block pointer counts its NaNs by `t != t`
/// (NVIDIA's Vulkan driver folded `t != t` to false).
#[test]
fn comparisons_with_nan_follow_ieee() {
    let mut r = Rng(32);
    let (rows, cols, bc) = (5usize, 11usize, 16usize);
    let specials = [
        f32::NAN,
        0.0,
        -0.0,
        1.0,
        -1.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let mut pick = |n: usize| -> Vec<f32> {
        r.i32s(n, 0, specials.len() as i32)
            .into_iter()
            .map(|i| specials[i as usize])
            .collect()
    };
    let mut x = pick(rows * cols);
    x[..bc].copy_from_slice(&pick(bc));
    let y = pick(bc);
    check(Case {
        name: "nan_compares",
        src: REGRESSIONS,
        kernel: "nan_compares",
        grid: [1, 1, 1],
        args: vec![
            H::F32(x),
            H::F32(y),
            H::I32(vec![-1; 3 * bc]),
            H::I32(vec![-1]),
            s(rows as i32),
            s(cols as i32),
        ],
        constexprs: vec![("BR", c(8)), ("BC", c(bc as u32))],
        tol: 0.0,
        tf32: false,
    });
}

/// A cast to f16 or bf16 rounds (to nearest even, overflow to infinity, subnormals,
/// ties) even when it is widened again (NVIDIA's Vulkan driver folded the round trip).
#[test]
fn narrowing_casts_round_when_widened_again() {
    let mut r = Rng(33);
    let mut x: Vec<f32> = r.f32s(2048).iter().map(|v| v * 500.0).collect();
    // Exact ties between neighbouring f16 values, and just beside them.
    for bits in (0u16..0x7c00).step_by(97) {
        let lo = f16::from_bits(bits).to_f32();
        let hi = f16::from_bits(bits + 1).to_f32();
        let mid = (lo + hi) / 2.0;
        x.extend([
            mid,
            -mid,
            f32::from_bits(mid.to_bits() + 1),
            f32::from_bits(mid.to_bits() - 1),
        ]);
    }
    x.extend([
        65504.0,
        65519.0,
        65520.0,
        65536.0,
        1e9,
        -1e9,
        5.96e-8,
        2.98e-8,
        2.99e-8,
        1e-10,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        3.4e38,
        // Not f32 subnormals: WGSL lets drivers flush them (NVIDIA's Vulkan driver
        // adds a bf16 subnormal as 0).
        1.2e-38,
    ]);
    let n = x.len();
    check(Case {
        name: "narrow_round_trip",
        src: REGRESSIONS,
        kernel: "narrow_round_trip",
        grid: [n.div_ceil(256) as u32, 1, 1],
        args: vec![
            H::F32(x),
            H::F16(vec![f16::NAN; n]),
            H::BF16(vec![bf16::NAN; n]),
            poison_f32(n),
            s(n as i32),
        ],
        constexprs: vec![("BLOCK", c(256))],
        tol: 0.0,
        tf32: false,
    });
}

/// A `while` loop carrying 16-bit tiles that came from wide loads: the PTX lowering
/// keeps them packed in vector registers and read unassigned registers in the loop's
/// condition block (found by the fuzzer, seed 204).
#[test]
fn while_loop_carries_packed_halves() {
    let mut r = Rng(34);
    let block = 256usize;
    let x: Vec<bf16> = r
        .f32s(2 * block)
        .iter()
        .map(|&v| bf16::from_f32(v))
        .collect();
    for n in [0, 1, 3] {
        check(Case {
            name: "while_packed",
            src: REGRESSIONS,
            kernel: "while_packed",
            grid: [1, 1, 1],
            args: vec![
                H::BF16(x.clone()),
                H::BF16(vec![bf16::NAN; 2 * block]),
                H::I32(vec![-1]),
                s(n),
            ],
            constexprs: vec![("BLOCK", c(block as u32))],
            tol: 0.0,
            tf32: false,
        });
    }
}

/// A `while` condition is evaluated once per test, never once more before the loop (its
/// side effects ran twice: issue 14's spin lock).
#[test]
fn while_condition_runs_once_per_test() {
    check(Case {
        name: "while_condition_effects",
        src: REGRESSIONS,
        kernel: "while_condition_effects",
        grid: [1, 1, 1],
        args: vec![H::I32(vec![0, -1]), s(5)],
        constexprs: vec![],
        tol: 0.0,
        tf32: false,
    });
    let dev = Device::interpreter();
    let module = Module::parse("regressions.py", REGRESSIONS).unwrap();
    let k = module.kernel("while_condition_effects").unwrap();
    let cnt = dev.upload(&[0i32, -1]).unwrap();
    k.launch(&dev, 1).arg(&cnt).arg(5i32).run().unwrap();
    assert_eq!(dev.download::<i32>(&cnt).unwrap(), vec![6, 5]);
}

/// `x - x` is NaN for NaN and infinite `x` (lavapipe folded it to 0; found by the
/// fuzzer, seed 398), also where the second `x` is `where(c, x, x)` (lavapipe folds
/// the select first; seed 5000106).
#[test]
fn self_difference_keeps_nan() {
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.5,
        -0.0,
        0.0,
        7.0,
        -2.25,
    ];
    let x: Vec<f32> = (0..64).map(|i| specials[i % specials.len()]).collect();
    check(Case {
        name: "self_difference",
        src: REGRESSIONS,
        kernel: "self_difference",
        grid: [1, 1, 1],
        args: vec![
            H::F32(x),
            poison_f32(128),
            H::F16(vec![f16::from_f32(5.0); 64]),
        ],
        constexprs: vec![("BLOCK", c(64))],
        tol: 0.0,
        tf32: false,
    });
}

const NEG_MINMAX: &str = r#"
import triton
import triton.language as tl

@triton.jit
def neg_then_extremes(x_ptr, out_ptr, R, C, BR: tl.constexpr, BC: tl.constexpr):
    rows = tl.arange(0, BR)
    cols = tl.arange(0, BC)
    m = (rows[:, None] < R) & (cols[None, :] < C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :], mask=m, other=0)
    tl.store(out_ptr + rows, tl.max(-x, axis=1))
    tl.store(out_ptr + BR + rows, tl.min(-tl.abs(x), axis=1))
    tl.store(out_ptr + 2 * BR + cols, tl.max(0 - x, axis=0))
    tl.store(out_ptr + 2 * BR + BC + cols, tl.minimum(-x, -2 * x).to(tl.int32).sum(axis=0))
"#;

/// Integer min/max of negated values (NVIDIA's compiler, through PTX and through
/// Vulkan, dropped the negation in `max(-a, -b, ...)` chains on the H200; found by
/// the fuzzer): integer min/max are a compare and a select on both backends.
#[test]
fn integer_extremes_of_negated_values() {
    let mut r = Rng(35);
    for (rows, cols) in [(32usize, 64usize), (2, 6), (16, 33)] {
        check(Case {
            name: "neg_then_extremes",
            src: NEG_MINMAX,
            kernel: "neg_then_extremes",
            grid: [1, 1, 1],
            args: vec![
                H::I32(r.i32s(rows * cols, -100, 100)),
                H::I32(vec![-7777; 2 * 32 + 2 * 64]),
                s(rows as i32),
                s(cols as i32),
            ],
            constexprs: vec![("BR", c(32)), ("BC", c(64))],
            tol: 0.0,
            tf32: false,
        });
    }
}

const NO_BUFFERS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def no_buffers(n):
    x = tl.program_id(0) + n

@triton.jit
def ids_plus(out_ptr, n):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, pid + n)
"#;

/// A kernel with no buffer argument, then an ordinary one on the same device: on wgpu
/// the first's parameter block was 16 bytes short of its shader's (its scalars read at
/// the wrong offset), and the validation error failed the next launch instead (found
/// by the fuzzer: an empty program, then seed 34852).
#[test]
fn kernel_without_buffers_then_another() {
    let module = Module::parse("no_buffers.py", NO_BUFFERS).unwrap();
    let nothing = module.kernel("no_buffers").unwrap();
    let ids = module.kernel("ids_plus").unwrap();
    let mut devices = gpu_devices();
    devices.push(Device::interpreter());
    for dev in devices {
        nothing
            .launch(&dev, 3)
            .arg(5i32)
            .run()
            .unwrap_or_else(|e| panic!("{}: {e}", dev.name()));
        let out = dev.upload(&[-1i32; 4]).unwrap();
        ids.launch(&dev, 4)
            .arg(&out)
            .arg(7i32)
            .run()
            .unwrap_or_else(|e| panic!("{}: {e}", dev.name()));
        assert_eq!(
            dev.download::<i32>(&out).unwrap(),
            vec![7, 8, 9, 10],
            "{}",
            dev.name()
        );
    }
}

const SCAN_F16: &str = r#"
import triton
import triton.language as tl

@triton.jit
def cumsum_f16(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=0))
"#;

/// A scan rounds its running value to the dtype at each step (the interpreter kept it
/// in f64: 1024 + 0.5 + 0.5 ... stays 1024 in f16; found by the fuzzer).
#[test]
fn f16_cumsum_rounds_each_step() {
    let n = 64usize;
    let x: Vec<f16> = (0..n)
        .map(|i| {
            f16::from_f32(if i == 0 {
                1024.0
            } else {
                0.5 + (i % 3) as f32 * 0.25
            })
        })
        .collect();
    let mut acc = f16::from_f32(0.0);
    let want: Vec<f16> = x
        .iter()
        .map(|&v| {
            acc = f16::from_f32(acc.to_f32() + v.to_f32());
            acc
        })
        .collect();
    let dev = Device::interpreter();
    let module = Module::parse("scan_f16.py", SCAN_F16).unwrap();
    let k = module.kernel("cumsum_f16").unwrap();
    let xb = dev.upload(&x).unwrap();
    let out = dev.upload(&vec![f16::NAN; n]).unwrap();
    k.launch(&dev, 1)
        .arg(&xb)
        .arg(&out)
        .constexpr("BLOCK", n as u32)
        .run()
        .unwrap();
    assert_eq!(dev.download::<f16>(&out).unwrap(), want);
    check(Case {
        name: "cumsum_f16",
        src: SCAN_F16,
        kernel: "cumsum_f16",
        grid: [1, 1, 1],
        args: vec![H::F16(x), H::F16(vec![f16::NAN; n])],
        constexprs: vec![("BLOCK", c(n as u32))],
        tol: 0.0,
        tf32: false,
    });
}

const ISSUE14: &str = r#"
import triton
import triton.language as tl

@triton.jit
def _scaled(x, offs, N: tl.constexpr, SCALE: tl.constexpr):
    return tl.where(offs < N, x * SCALE, 0.0)

@triton.jit
def constexpr_param_runtime_arg(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, _scaled(x, offs, n, 3.0))

@triton.jit
def scalar_atomics(slots_ptr, out_ptr):
    pid = tl.program_id(0)
    tl.atomic_add(slots_ptr, 1)
    c = tl.atomic_cas(slots_ptr + 8 + pid, 0, 7)
    x = tl.atomic_xchg(slots_ptr + 16 + pid, 9)
    m = tl.atomic_max(slots_ptr + 24 + pid, pid + 1)
    tl.store(out_ptr + pid, c)
    tl.store(out_ptr + 4 + pid, x)
    tl.store(out_ptr + 8 + pid, m)

@triton.jit
def _zero_like(x):
    # Triton's type objects decide at trace time (issue 14, bug 5).
    return tl.zeros(x.shape, dtype=x.type.element_ty)

@triton.jit
def type_objects(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ptrs = x_ptr + offs
    tl.static_assert(x_ptr.dtype == tl.pointer_type(tl.float16))
    tl.static_assert(ptrs.type.element_ty == tl.pointer_type(tl.float16))
    tl.static_assert(ptrs.dtype.element_ty == tl.float16)
    tl.static_assert(ptrs.type.element_ty.element_ty == tl.float16)
    tl.static_assert(ptrs.type.scalar.is_ptr())
    tl.static_assert(ptrs.type.is_block() and not x_ptr.type.is_block())
    tl.static_assert(ptrs.type.shape == [BLOCK] and ptrs.type.numel == BLOCK)
    x = tl.load(ptrs)
    tl.static_assert(x.type.scalar == tl.float16 and x.type.scalar.is_fp16())
    tl.static_assert(not x.dtype.is_ptr() and not x.type.scalar.is_fp8())
    acc = _zero_like(x.to(tl.float32)) + x.to(x_ptr.dtype.element_ty).to(tl.float32) * 2.0
    out_ty = out_ptr.type
    tl.static_assert(out_ty == tl.pointer_type(tl.float32))
    tl.store(out_ptr + offs, acc.to(out_ty.element_ty))
    tl.store((out_ptr + BLOCK).to(tl.pointer_type(tl.float32)) + offs, x.to(tl.float32) + 1.0)
"#;

/// A jit callee's `tl.constexpr` parameter takes a runtime argument, as in Triton
/// (issue 14, bug 4: the attention tutorial's `_attn_fwd_inner(..., N_CTX, ...)`).
#[test]
fn constexpr_parameter_with_a_runtime_argument() {
    let mut r = Rng(36);
    let n = 45usize;
    check(Case {
        name: "constexpr_param_runtime_arg",
        src: ISSUE14,
        kernel: "constexpr_param_runtime_arg",
        grid: [1, 1, 1],
        args: vec![H::F32(r.f32s(64)), poison_f32(64), s(n as i32)],
        constexprs: vec![("BLOCK", c(64))],
        tol: 0.0,
        tf32: false,
    });
}

/// A scalar atomic of every kind runs once per program and every thread sees the
/// owner's old value (issue 14, bug 2: a scalar `atomic_cas` ran on every thread, so
/// another thread could win and the owner read 7 instead of 0).
#[test]
fn scalar_atomics_run_once_per_program() {
    check(Case {
        name: "scalar_atomics",
        src: ISSUE14,
        kernel: "scalar_atomics",
        grid: [3, 1, 1],
        args: vec![H::I32(vec![0; 32]), H::I32(vec![-1; 12])],
        constexprs: vec![],
        tol: 0.0,
        tf32: false,
    });
}

/// `x.type.element_ty`, `x.dtype.element_ty`, `.type.scalar`, `tl.pointer_type(...)`
/// and the type predicates are Triton's type objects at trace time (issue 14, bug 5).
#[test]
fn type_objects_as_triton_exposes_them() {
    let x: Vec<f16> = Rng(37).f32s(32).into_iter().map(f16::from_f32).collect();
    let case = Case {
        name: "type_objects",
        src: ISSUE14,
        kernel: "type_objects",
        grid: [1, 1, 1],
        args: vec![H::F16(x.clone()), poison_f32(64)],
        constexprs: vec![("BLOCK", c(32))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    let want: Vec<f64> = (x.iter().map(|v| 2.0 * v.to_f64()))
        .chain(x.iter().map(|v| (v.to_f32() + 1.0) as f64))
        .collect();
    assert_eq!(got[1], want, "type_objects on the interpreter");
    check(case);
}

const RANDOM: &str = r#"
import triton
import triton.language as tl

@triton.jit
def random_streams(ints_ptr, floats_ptr, normals_ptr, seed, base, N: tl.constexpr, ROUNDS: tl.constexpr):
    i = tl.arange(0, N)
    offs = base + i
    r0, r1, r2, r3 = tl.randint4x(seed, offs)
    tl.store(ints_ptr + i, r0.to(tl.int32, bitcast=True))
    tl.store(ints_ptr + N + i, r1.to(tl.int32, bitcast=True))
    tl.store(ints_ptr + 2 * N + i, r2.to(tl.int32, bitcast=True))
    tl.store(ints_ptr + 3 * N + i, r3.to(tl.int32, bitcast=True))
    tl.store(ints_ptr + 4 * N + i, tl.randint(seed, offs, ROUNDS).to(tl.int32, bitcast=True))
    tl.store(ints_ptr + 5 * N + i, tl.umulhi(r0, r1).to(tl.int32, bitcast=True))
    tl.store(ints_ptr + 6 * N + i, tl.umulhi(r2.to(tl.int32, bitcast=True), r3.to(tl.int32, bitcast=True)))
    tl.store(floats_ptr + i, tl.rand(seed, offs))
    u0, u1, u2, u3 = tl.rand4x(seed, offs)
    tl.store(floats_ptr + N + i, u3)
    tl.store(floats_ptr + 2 * N + i, tl.rand(seed, offs, n_rounds=ROUNDS))
    tl.store(normals_ptr + i, tl.randn(seed, offs))
    n0, n1, n2, n3 = tl.randn4x(seed, offs)
    tl.store(normals_ptr + N + i, n1)
    tl.store(normals_ptr + 2 * N + i, n3)

@triton.jit
def random_wide(ints_ptr, seed, offs_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    offs = tl.load(offs_ptr + i)
    r = tl.randint(seed, offs)
    tl.store(ints_ptr + i, r.to(tl.int32, bitcast=True))
    tl.store(ints_ptr + N + i, tl.umulhi(offs, offs * 3 + seed).to(tl.int32))
"#;

/// Philox4x32 as Random123 defines it (the independent model of `tl.randint4x`).
fn philox_model(ctr: [u32; 4], key: [u32; 2], rounds: u32) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = ctr;
    let [mut k0, mut k1] = key;
    for _ in 0..rounds {
        let pa = 0xD251_1F53u64 * c0 as u64;
        let pb = 0xCD9E_8D57u64 * c2 as u64;
        (c0, c1, c2, c3) = (
            (pb >> 32) as u32 ^ c1 ^ k0,
            pb as u32,
            (pa >> 32) as u32 ^ c3 ^ k1,
            pa as u32,
        );
        k0 = k0.wrapping_add(0x9E37_79B9);
        k1 = k1.wrapping_add(0xBB67_AE85);
    }
    [c0, c1, c2, c3]
}

/// Triton's uniform float of a 32-bit word, in f32 arithmetic.
fn uniform_model(w: u32) -> f32 {
    let s = w as i32;
    let s = if s < 0 { -(s as i64) - 1 } else { s as i64 };
    s as f32 * 4.6566127342e-10f64 as f32
}

/// Box-Muller in f64 (the GPUs' f32 `log`, `sin`, `cos` differ by a few ulps).
fn normal_model(u1: f32, u2: f32) -> (f64, f64) {
    let u1 = (u1 as f64).max(1.0e-7f32 as f64);
    let th = std::f32::consts::TAU as f64 * u2 as f64;
    let r = (-2.0 * u1.ln()).sqrt();
    (r * th.cos(), r * th.sin())
}

/// The model itself against Random123's known-answer vectors for Philox4x32-10.
#[test]
fn philox_model_matches_random123() {
    assert_eq!(
        philox_model([0; 4], [0; 2], 10),
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    );
    assert_eq!(
        philox_model([u32::MAX; 4], [u32::MAX; 2], 10),
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    );
    assert_eq!(
        philox_model(
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            10
        ),
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    );
}

/// `tl.randint4x`, `tl.randint`, `tl.rand`, `tl.rand4x`, `tl.randn`, `tl.randn4x` and
/// `tl.umulhi` (issue 14): the interpreter against the Philox model (bit-exact for the
/// integers and uniforms), then every executor against the interpreter (uniforms
/// exact, normals within the devices' transcendental error). Seeds 0, -1 (a negative
/// seed sign-extends into the key's high word) and a large one; offsets that wrap.
#[test]
fn random_numbers_are_tritons_philox() {
    let n = 64usize;
    for (seed, base, rounds) in [
        (0i32, 0i32, 10i64),
        (-1, 7, 7),
        (0x5eed_1234, i32::MAX - 40, 10),
    ] {
        let case = |name, tol| Case {
            name,
            src: RANDOM,
            kernel: "random_streams",
            grid: [1, 1, 1],
            args: vec![
                H::I32(vec![i32::MIN; 7 * n]),
                poison_f32(3 * n),
                poison_f32(3 * n),
                s(seed),
                s(base),
            ],
            constexprs: vec![("N", c(n as i64)), ("ROUNDS", c(rounds))],
            tol,
            tf32: false,
        };
        let got = run(&case("random_streams", 0.0), &Device::interpreter()).unwrap();
        let key = [seed as u32, (seed as i64 >> 32) as u32];
        for i in 0..n {
            let off = base.wrapping_add(i as i32) as u32;
            let w = philox_model([off, 0, 0, 0], key, 10);
            let wr = philox_model([off, 0, 0, 0], key, rounds as u32);
            let ints = &got[0];
            for (j, &x) in w.iter().enumerate() {
                assert_eq!(
                    ints[j * n + i] as i64 as u32,
                    x,
                    "randint4x word {j} at offset {off}"
                );
            }
            assert_eq!(
                ints[4 * n + i] as i64 as u32,
                wr[0],
                "randint with {rounds} rounds"
            );
            let hi = |a: u32, b: u32| ((a as u64 * b as u64) >> 32) as u32;
            assert_eq!(
                ints[5 * n + i] as i64 as u32,
                hi(w[0], w[1]),
                "umulhi uint32"
            );
            assert_eq!(
                ints[6 * n + i] as i64 as u32,
                hi(w[2], w[3]),
                "umulhi int32 (unsigned product)"
            );
            let floats = &got[1];
            assert_eq!(
                floats[i],
                uniform_model(w[0]) as f64,
                "rand at offset {off}"
            );
            assert_eq!(floats[n + i], uniform_model(w[3]) as f64, "rand4x word 3");
            assert_eq!(
                floats[2 * n + i],
                uniform_model(wr[0]) as f64,
                "rand, {rounds} rounds"
            );
            assert!(floats[i] < 1.0 && floats[i] >= 0.0);
            let normals = &got[2];
            let (n0, _) = normal_model(uniform_model(w[0]), uniform_model(w[1]));
            let (_, n1) = normal_model(uniform_model(w[0]), uniform_model(w[1]));
            let (_, n3) = normal_model(uniform_model(w[2]), uniform_model(w[3]));
            for (j, want) in [n0, n1, n3].into_iter().enumerate() {
                let g = normals[j * n + i];
                assert!(
                    (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "randn stream {j} at offset {off}: {g} vs {want}"
                );
            }
        }
        // The GPUs compute normals with their own log/sin/cos: a few ulps apart.
        check(case("random_streams", 1e-5));
    }
}

/// Bit-exact with Triton itself: the streams Triton 3.6 produced on the H200 for the
/// same seeds and offsets (`tests/data/triton_rand_h200.txt`), integers and uniforms
/// exactly, normals to the GPUs' transcendental error.
#[test]
fn random_numbers_match_triton_on_the_h200() {
    let text = include_str!("data/triton_rand_h200.txt");
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    assert!(lines.next().unwrap().starts_with("triton"));
    let hex = |l: &str, tag: &str| -> Vec<u32> {
        let rest = l
            .strip_prefix(tag)
            .unwrap_or_else(|| panic!("expected {tag}: {l}"));
        rest.split_whitespace()
            .map(|w| u32::from_str_radix(w, 16).unwrap())
            .collect()
    };
    let n = 64usize;
    let mut streams = 0;
    while let Some(head) = lines.next() {
        if let Some(seed) = head.strip_prefix("wide seed ") {
            let seed: i64 = seed.parse().unwrap();
            let want = hex(lines.next().unwrap(), "ints ");
            let offs: Vec<i64> = (0..32).map(|i| i * 0x1_2345_6789 - 77).collect();
            let case = Case {
                name: "random_wide_triton",
                src: RANDOM,
                kernel: "random_wide",
                grid: [1, 1, 1],
                args: vec![H::I32(vec![i32::MIN; 64]), s(seed), H::I64(offs)],
                constexprs: vec![("N", c(32i64))],
                tol: 0.0,
                tf32: false,
            };
            let got = run(&case, &Device::interpreter()).unwrap();
            let got: Vec<u32> = got[0][..32].iter().map(|&x| x as i64 as u32).collect();
            assert_eq!(got, want, "randint with int64 offsets, seed {seed}");
            streams += 1;
            continue;
        }
        let f: Vec<&str> = head.split_whitespace().collect();
        let (seed, base): (i32, i32) = (f[1].parse().unwrap(), f[3].parse().unwrap());
        let ints = hex(lines.next().unwrap(), "ints ");
        let rand = hex(lines.next().unwrap(), "rand ");
        let randn: Vec<f64> = lines.next().unwrap()["randn ".len()..]
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        let case = Case {
            name: "random_streams_triton",
            src: RANDOM,
            kernel: "random_streams",
            grid: [1, 1, 1],
            args: vec![
                H::I32(vec![i32::MIN; 7 * n]),
                poison_f32(3 * n),
                poison_f32(3 * n),
                s(seed),
                s(base),
            ],
            constexprs: vec![("N", c(n as i64)), ("ROUNDS", c(10i64))],
            tol: 0.0,
            tf32: false,
        };
        let got = run(&case, &Device::interpreter()).unwrap();
        let got_ints: Vec<u32> = got[0][..4 * n].iter().map(|&x| x as i64 as u32).collect();
        assert_eq!(got_ints, ints, "randint4x, seed {seed}, base {base}");
        let got_rand: Vec<u32> = got[1][..n].iter().map(|&x| (x as f32).to_bits()).collect();
        assert_eq!(got_rand, rand, "rand, seed {seed}, base {base}");
        for (i, (&g, &w)) in got[2][..n].iter().zip(&randn).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "randn[{i}], seed {seed}: {g} vs Triton's {w}"
            );
        }
        streams += 1;
    }
    assert_eq!(streams, 4);
}

/// 64-bit offsets and seeds (issue 14): the counter's second word is the offset's
/// upper half and the key's second word the seed's, as in Triton 3.4 and later; WGSL
/// has no 64-bit integers and says so.
#[test]
fn random_numbers_with_64_bit_offsets_and_seeds() {
    let n = 32usize;
    let seed: i64 = 0x0000_000f_cafe_b0ba;
    let offs: Vec<i64> = (0..n as i64).map(|i| i * 0x1_2345_6789 - 77).collect();
    let case = Case {
        name: "random_wide",
        src: RANDOM,
        kernel: "random_wide",
        grid: [1, 1, 1],
        args: vec![H::I32(vec![i32::MIN; 2 * n]), s(seed), H::I64(offs.clone())],
        constexprs: vec![("N", c(n as i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    let key = [seed as u32, (seed >> 32) as u32];
    for (i, &o) in offs.iter().enumerate() {
        let w = philox_model([o as u32, (o >> 32) as u32, 0, 0], key, 10);
        assert_eq!(got[0][i] as i64 as u32, w[0], "randint at offset {o}");
        let b = o.wrapping_mul(3).wrapping_add(seed);
        let hi = ((o as u64 as u128 * b as u64 as u128) >> 64) as i64;
        assert_eq!(
            got[0][n + i] as i64 as i32,
            hi as i32,
            "umulhi int64 at {o}"
        );
    }
    check_except_wgpu(case, Some("64-bit"));
}

const DESCRIPTORS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def desc_scale(x_ptr, y_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    # Device-side descriptors over a strided input and a contiguous output; ragged
    # edges read as zero and are not written.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[sxm, sxn], block_shape=[BM, BN])
    y_desc = tl.make_tensor_descriptor(y_ptr, [M, N], [N, 1], [BM, BN])
    x = x_desc.load([pid_m * BM, pid_n * BN])
    tl.static_assert(x_desc.block_shape == [BM, BN] and x_desc.dtype == tl.float32)
    y_desc.store([pid_m * BM, pid_n * BN], x * 2.0 + (x == 0.0).to(tl.float32))

@triton.jit
def desc_matmul(a_desc, b_desc, c_desc, K, BK: tl.constexpr):
    # Host-side descriptors, as the persistent-matmul tutorial passes them.
    BM: tl.constexpr = a_desc.block_shape[0]
    BN: tl.constexpr = b_desc.block_shape[1]
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = a_desc.load([off_m, k * BK])
        b = b_desc.load([k * BK, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))

@triton.jit
def desc_experimental(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x_desc = tl._experimental_make_tensor_descriptor(x_ptr, [n], [1], [BLOCK])
    y_desc = tl._experimental_make_tensor_descriptor(y_ptr, [n], [1], [BLOCK])
    x = tl._experimental_descriptor_load(x_desc, [pid * BLOCK], [BLOCK], tl.float32)
    tl._experimental_descriptor_store(y_desc, x + 1.0, [pid * BLOCK])
    z = tl.load_tensor_descriptor(x_desc, [pid * BLOCK])
    tl.store_tensor_descriptor(y_desc, [n + pid * BLOCK], z * 0.0 + 7.0)
"#;

/// Tensor descriptors made in the kernel (issue 14): loads of a transposed view with
/// ragged edges (zero fill), stores that drop the out-of-bounds part.
#[test]
fn tensor_descriptors_made_in_the_kernel() {
    let (m, n) = (37usize, 45usize);
    let mut r = Rng(41);
    // x is stored transposed: element (i, j) at j * m + i.
    let x = r.f32s(m * n);
    let case = Case {
        name: "desc_scale",
        src: DESCRIPTORS,
        kernel: "desc_scale",
        grid: [3, 2, 1],
        args: vec![
            H::F32(x.clone()),
            poison_f32(m * n + 8),
            s(m as i32),
            s(n as i32),
            s(1i32),
            s(m as i32),
        ],
        constexprs: vec![("BM", c(16i64)), ("BN", c(32i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    for i in 0..m {
        for j in 0..n {
            let v = x[j * m + i] as f64;
            let want = v * 2.0 + if v == 0.0 { 1.0 } else { 0.0 };
            assert_eq!(got[1][i * n + j], want, "({i}, {j})");
        }
    }
    // Past the tensor: never written.
    assert!(got[1][m * n..].iter().all(|v| v.is_nan()));
    check(case);
}

/// Host-side descriptor arguments (`TensorDescriptor`): an f16 matmul with ragged M,
/// N, K, against a float64 reference, then on every executor.
#[test]
fn tensor_descriptor_arguments() {
    let (m, n, k) = (50usize, 40usize, 70usize);
    let mut r = Rng(42);
    let a: Vec<f16> = r.f32s(m * k).into_iter().map(f16::from_f32).collect();
    let b: Vec<f16> = r.f32s(k * n).into_iter().map(f16::from_f32).collect();
    let case = Case {
        name: "desc_matmul",
        src: DESCRIPTORS,
        kernel: "desc_matmul",
        grid: [2, 2, 1],
        args: vec![
            H::Desc(
                Box::new(H::F16(a.clone())),
                vec![m as i64, k as i64],
                vec![k as i64, 1],
                vec![32, 16],
            ),
            H::Desc(
                Box::new(H::F16(b.clone())),
                vec![k as i64, n as i64],
                vec![n as i64, 1],
                vec![16, 32],
            ),
            H::Desc(
                Box::new(poison_f32(m * n)),
                vec![m as i64, n as i64],
                vec![n as i64, 1],
                vec![32, 32],
            ),
            s(k as i32),
        ],
        constexprs: vec![("BK", c(16i64))],
        tol: 1e-5,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())
                .sum();
            let g = got[2][i * n + j];
            assert!(
                (g - want).abs() <= 1e-4 * want.abs().max(1.0),
                "({i}, {j}): {g} vs {want}"
            );
        }
    }
    check(case);
}

/// The older spellings (`_experimental_make_tensor_descriptor`,
/// `_experimental_descriptor_load/store`) and the functional forms.
#[test]
fn tensor_descriptors_experimental_spellings() {
    let n = 100usize;
    let x = Rng(43).f32s(n);
    let case = Case {
        name: "desc_experimental",
        src: DESCRIPTORS,
        kernel: "desc_experimental",
        grid: [4, 1, 1],
        args: vec![H::F32(x.clone()), poison_f32(2 * n + 28), s(n as i32)],
        constexprs: vec![("BLOCK", c(32i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    for i in 0..n {
        assert_eq!(got[1][i], (x[i] + 1.0) as f64);
    }
    // The second store's descriptor ends at n: [n, 2n) stays poisoned.
    assert!(got[1][n..].iter().all(|v| v.is_nan()));
    check(case);
}

const FP8: &str = r#"
import triton
import triton.language as tl

@triton.jit
def fp8_widen(e4_ptr, e5_ptr, f32_ptr, f16_ptr, bf16_ptr, flags_ptr, N: tl.constexpr):
    # Every code of both formats widened (exactly), compared, selected.
    i = tl.arange(0, N)
    a = tl.load(e4_ptr + i)
    b = tl.load(e5_ptr + i)
    tl.static_assert(a.dtype == tl.float8e4nv and b.dtype.is_fp8() and b.dtype.is_fp8e5())
    tl.store(f32_ptr + i, a.to(tl.float32))
    tl.store(f32_ptr + N + i, b.to(tl.float32))
    tl.store(f16_ptr + i, a.to(tl.float16))
    tl.store(f16_ptr + N + i, b.to(tl.float16))
    tl.store(bf16_ptr + i, a.to(tl.bfloat16))
    tl.store(bf16_ptr + N + i, b.to(tl.bfloat16))
    tl.store(flags_ptr + i, (a < 0.5).to(tl.int32) + 2 * (a == a).to(tl.int32) + 4 * (b >= 1.0).to(tl.int32))
    tl.store(flags_ptr + N + i, (a > tl.load(e4_ptr + (N - 1 - i))).to(tl.int32))
    # Selection and minimum/maximum move codes; a mix of formats meets in f16.
    c = tl.where(i % 3 == 0, a, tl.maximum(a, tl.load(e4_ptr + (i * 7) % N)))
    tl.store(e4_ptr + N + i, c)
    tl.store(f16_ptr + 2 * N + i, a + b)

@triton.jit
def fp8_round(x_ptr, h_ptr, e4_ptr, e5_ptr, N: tl.constexpr):
    # f32, f16 and bf16 to both formats (nearest even, saturating); fp8 to fp8.
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    h = tl.load(h_ptr + i)
    tl.store(e4_ptr + i, x.to(tl.float8e4nv))
    tl.store(e5_ptr + i, x.to(tl.float8e5))
    tl.store(e4_ptr + N + i, h)
    tl.store(e5_ptr + N + i, h.to(tl.float8e5))
    tl.store(e4_ptr + 2 * N + i, x.to(tl.bfloat16).to(tl.float8e4nv))
    tl.store(e5_ptr + 2 * N + i, x.to(tl.float8e4nv).to(tl.float8e5))
    tl.store(e4_ptr + 3 * N + i, x.to(tl.float8e5).to(tl.float8e4nv))
    tl.store(e5_ptr + 3 * N + i, tl.load(e5_ptr + i, mask=i < N // 2, other=-3.0))

@triton.jit
def fp8_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))
    h = tl.dot(a, tl.trans(a.to(tl.float32).to(tl.float8e5)), out_dtype=tl.float16)
    tl.store(c_ptr + M * N + rm[:, None] * M + tl.arange(0, M)[None, :], h.to(tl.float32))
"#;

fn e4() -> tilewise::core::ir::fp8::Format {
    tilewise::core::ir::fp8::E4M3
}

fn e5() -> tilewise::core::ir::fp8::Format {
    tilewise::core::ir::fp8::E5M2
}

/// Every fp8 code of both formats, widened to f32, f16 and bf16 (exactly), compared
/// with floats and with each other, selected and max'ed, and two formats added in
/// f16 (issue 14): the interpreter against the format model, every executor against
/// the interpreter, codes compared bit for bit.
#[test]
fn fp8_codes_widen_compare_and_move() {
    let n = 256usize;
    let codes: Vec<u8> = (0..=255u8).collect();
    let rev: Vec<u8> = codes.iter().rev().copied().collect();
    let case = Case {
        name: "fp8_widen",
        src: FP8,
        kernel: "fp8_widen",
        grid: [1, 1, 1],
        args: vec![
            H::F8E4M3([codes.clone(), vec![0x55; n]].concat()),
            H::F8E5M2(rev.clone()),
            poison_f32(2 * n),
            H::F16(vec![f16::NAN; 3 * n]),
            H::BF16(vec![bf16::NAN; 2 * n]),
            H::I32(vec![-1; 2 * n]),
        ],
        constexprs: vec![("N", c(n as i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    let same = |g: f64, w: f64| {
        (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
    };
    for i in 0..n {
        let (a, b) = (e4().decode(codes[i]), e5().decode(rev[i]));
        assert!(
            same(got[2][i], a),
            "e4m3 {:#x}: {} vs {a}",
            codes[i],
            got[2][i]
        );
        assert!(
            same(got[2][n + i], b),
            "e5m2 {:#x}: {} vs {b}",
            rev[i],
            got[2][n + i]
        );
        assert!(same(got[3][i], a) && same(got[3][n + i], b), "f16 at {i}");
        assert!(same(got[4][i], a) && same(got[4][n + i], b), "bf16 at {i}");
        let flags = (a < 0.5) as i32 + 2 * (a == a) as i32 + 4 * (b >= 1.0) as i32;
        assert_eq!(got[5][i] as i32, flags, "flags at {i}");
        assert_eq!(
            got[5][n + i] as i32,
            (a > e4().decode(codes[n - 1 - i])) as i32
        );
        let sum = f16::from_f64(a + b).to_f64();
        assert!(
            same(got[3][2 * n + i], sum),
            "a + b at {i}: {} vs {sum}",
            got[3][2 * n + i]
        );
    }
    check(case);
}

/// f32 / f16 / bf16 to both fp8 formats on the values that matter (ties at every
/// exponent, subnormal ties, the largest finite value and just beyond, infinities,
/// NaNs, zeros of both signs, f32 subnormals, random values over the whole range),
/// fp8 to fp8, and a masked load's fill (issue 14): codes bit for bit against the
/// model, on every executor.
#[test]
fn fp8_rounding_is_nearest_even_and_saturating() {
    let mut xs: Vec<f32> = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        448.0,
        464.0,
        479.9,
        480.0,
        1e9,
        57344.0,
        61439.0,
        61440.0,
        1e-30,
        -1e-30,
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        65504.0,
        70000.0,
    ];
    for e in -20..17 {
        for m in 0..16u32 {
            // Values on and between the representable ones, ties included.
            let v = 2f32.powi(e) * (1.0 + m as f32 / 16.0);
            xs.push(v);
            xs.push(-v);
            xs.push(v * (1.0 + 1.0 / 64.0));
        }
    }
    let mut r = Rng(44);
    while xs.len() < 2048 {
        let mag = 2f32.powf(r.f32s(1)[0] * 20.0);
        xs.push(mag * r.f32s(1)[0]);
    }
    let n = xs.len();
    let hs: Vec<f16> = xs.iter().map(|&x| f16::from_f32(x)).collect();
    let case = Case {
        name: "fp8_round",
        src: FP8,
        kernel: "fp8_round",
        grid: [1, 1, 1],
        args: vec![
            H::F32(xs.clone()),
            H::F16(hs.clone()),
            H::F8E4M3(vec![0xAA; 4 * n]),
            H::F8E5M2(vec![0xAA; 4 * n]),
        ],
        constexprs: vec![("N", c(n as i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    for (i, &x) in xs.iter().enumerate() {
        let x = x as f64;
        let (c4, c5) = (got[2][i] as u8, got[3][i] as u8);
        assert_eq!(c4, e4().encode(x), "e4m3 of {x}");
        assert_eq!(c5, e5().encode(x), "e5m2 of {x}");
        assert_eq!(
            got[2][n + i] as u8,
            e4().encode(hs[i].to_f64()),
            "e4m3 of f16 {}",
            hs[i]
        );
        assert_eq!(
            got[3][n + i] as u8,
            e5().encode(hs[i].to_f64()),
            "e5m2 of f16 {}",
            hs[i]
        );
        let bf = bf16::from_f64(x).to_f64();
        assert_eq!(
            got[2][2 * n + i] as u8,
            e4().encode(bf),
            "e4m3 of bf16 {bf}"
        );
        assert_eq!(
            got[3][2 * n + i] as u8,
            e5().encode(e4().round(x)),
            "e4m3 to e5m2 of {x}"
        );
        assert_eq!(
            got[2][3 * n + i] as u8,
            e4().encode(e5().round(x)),
            "e5m2 to e4m3 of {x}"
        );
        let fill = if i < n / 2 {
            e5().encode(x)
        } else {
            e5().encode(-3.0)
        };
        assert_eq!(got[3][3 * n + i] as u8, fill, "masked load at {i}");
    }
    check(case);
}

/// `tl.dot` of fp8 operands (e4m3 times e5m2, f32 accumulation; e4m3 times e5m2 with
/// f16 output), against a float64 reference of the decoded values.
#[test]
fn fp8_dot_mixes_formats() {
    let (m, n, k) = (16usize, 16usize, 32usize);
    let mut r = Rng(45);
    let a: Vec<u8> = r
        .f32s(m * k)
        .iter()
        .map(|&x| e4().encode(x as f64 * 4.0))
        .collect();
    let b: Vec<u8> = r
        .f32s(k * n)
        .iter()
        .map(|&x| e5().encode(x as f64 * 4.0))
        .collect();
    let case = Case {
        name: "fp8_dot",
        src: FP8,
        kernel: "fp8_dot",
        grid: [1, 1, 1],
        args: vec![
            H::F8E4M3(a.clone()),
            H::F8E5M2(b.clone()),
            poison_f32(m * n + m * m),
        ],
        constexprs: vec![("M", c(m as i64)), ("N", c(n as i64)), ("K", c(k as i64))],
        tol: 2e-3,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter()).unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| e4().decode(a[i * k + p]) * e5().decode(b[p * n + j]))
                .sum();
            let g = got[2][i * n + j];
            assert!(
                (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                "({i}, {j}): {g} vs {want}"
            );
        }
    }
    check(case);
}

const FLOAT_TO_INT: &str = r#"
import triton
import triton.language as tl

@triton.jit
def float_to_int(x_ptr, i64_ptr, u64_ptr, i32_ptr, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(x_ptr + i)
    tl.store(i64_ptr + i, x.to(tl.int64))
    tl.store(u64_ptr + i, x.to(tl.uint64).to(tl.int64, bitcast=True))
    tl.store(i32_ptr + i, x.to(tl.int32))
"#;

/// Float to integer conversions of NaN give 0 and out-of-range values saturate, at
/// every width (the H200 gave the most negative 64-bit integer for NaN: fuzzer seed
/// 518702).
#[test]
fn float_to_int_of_nan_and_out_of_range() {
    let xs = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e30,
        -1e30,
        3.7,
        -3.7,
        0.0,
        -0.0,
        2147483520.0,
        -2147483648.0,
        9.2e18,
        -9.3e18,
        1.5,
        1e-30,
    ];
    let n = xs.len();
    check_except_wgpu(
        Case {
            name: "float_to_int",
            src: FLOAT_TO_INT,
            kernel: "float_to_int",
            grid: [1, 1, 1],
            args: vec![
                H::F32(xs),
                H::I64(vec![7; n]),
                H::I64(vec![7; n]),
                H::I32(vec![7; n]),
            ],
            constexprs: vec![("N", c(n as i64))],
            tol: 0.0,
            tf32: false,
        },
        Some("64-bit"),
    );
}

const ATTENTION: &str = r#"
import triton
import triton.language as tl

@triton.jit
def attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N, M: tl.constexpr, D: tl.constexpr, BN: tl.constexpr):
    # Online-softmax attention of one block of queries: two dots, reductions and
    # layout changes in a loop, whose shared arrays take turns (shared_reuse.rs).
    pid = tl.program_id(0)
    rm = pid * M + tl.arange(0, M)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])
    m_i = tl.full((M,), -float("inf"), tl.float32)
    l_i = tl.zeros((M,), tl.float32)
    acc = tl.zeros((M, D), tl.float32)
    for start in range(0, N, BN):
        rn = start + tl.arange(0, BN)
        k = tl.load(k_ptr + rd[:, None] + rn[None, :] * D, mask=rn[None, :] < N, other=0.0)
        s = tl.dot(q, k)
        s = tl.where(rn[None, :] < N, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + rn[:, None] * D + rd[None, :], mask=rn[:, None] < N, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + rm[:, None] * D + rd[None, :], acc / l_i[:, None])
"#;

/// Attention's loop of two dots (issue 14, shared memory by liveness): the lowering
/// shares memory between arrays whose lifetimes a barrier separates, the kernel's
/// description says how much, and every executor (the simulators' race detectors
/// included) agrees with the interpreter and a float64 reference.
#[test]
fn attention_shares_shared_memory_between_its_dots() {
    let (n, m, d, bn) = (100usize, 32usize, 32usize, 32usize);
    let mut r = Rng(46);
    let q: Vec<f16> = r
        .f32s(2 * m * d)
        .into_iter()
        .map(|x| f16::from_f32(x * 0.5))
        .collect();
    let kk: Vec<f16> = r
        .f32s(n * d)
        .into_iter()
        .map(|x| f16::from_f32(x * 0.5))
        .collect();
    let v: Vec<f16> = r.f32s(n * d).into_iter().map(f16::from_f32).collect();
    let case = Case {
        name: "attention_fwd",
        src: ATTENTION,
        kernel: "attention_fwd",
        grid: [2, 1, 1],
        args: vec![
            H::F16(q.clone()),
            H::F16(kk.clone()),
            H::F16(v.clone()),
            poison_f32(2 * m * d),
            s(n as i32),
        ],
        constexprs: vec![("M", c(m as i64)), ("D", c(d as i64)), ("BN", c(bn as i64))],
        tol: 2e-3,
        tf32: false,
    };
    // The description of the compiled kernel reports the reuse.
    let dev = Device::interpreter();
    let module = Module::parse(case.name, case.src).unwrap();
    let kernel = module.kernel(case.kernel).unwrap();
    let bufs: Vec<Option<Buffer>> = case.args.iter().map(|h| upload(&dev, h)).collect();
    let compiled = launch(&case, &kernel, &dev, &bufs).compile().unwrap();
    let w = compiled
        .wgsl_for(&tilewise::wgsl::Capabilities::offline(true, false), 4)
        .unwrap();
    let note = w
        .notes
        .iter()
        .find(|n| n.contains("after reuse by lifetime"))
        .unwrap_or_else(|| panic!("no reuse note in {:?}", w.notes));
    let nums: Vec<u64> = note
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(nums[0] < nums[1], "{note}");
    assert_eq!(nums[0], w.workgroup_bytes as u64, "{note}");
    // Against float64.
    let got = run(&case, &dev).unwrap();
    for row in 0..2 * m {
        let sc: Vec<f64> = (0..n)
            .map(|j| {
                (0..d)
                    .map(|e| q[row * d + e].to_f64() * kk[j * d + e].to_f64())
                    .sum()
            })
            .collect();
        let mx = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = sc.iter().map(|x| (x - mx).exp()).collect();
        let l: f64 = p.iter().sum();
        for e in 0..d {
            let want: f64 = (0..n).map(|j| p[j] * v[j * d + e].to_f64()).sum::<f64>() / l;
            let g = got[3][row * d + e];
            assert!((g - want).abs() <= 5e-3, "({row}, {e}): {g} vs {want}");
        }
    }
    check(case);
}

/// The writes that stage dot operands in shared memory (stores and asynchronous copies;
/// not the scratch arrays of layout conversions and reductions) of a Thread IR kernel:
/// outside any loop, and inside one.
fn shared_stores(
    k: &tilewise::core::thread_ir::ThreadKernel,
    body: &[tilewise::core::thread_ir::Stmt],
    in_loop: bool,
    out: &mut (usize, usize),
) {
    use tilewise::core::thread_ir::Stmt;
    for s in body {
        if let Stmt::SharedStore { arr, .. } | Stmt::AsyncCopy { arr, .. } = s {
            let name = &k.shared[*arr as usize].name;
            if !name.starts_with("scratch") && !name.starts_with("reduce") {
                if in_loop {
                    out.1 += 1;
                } else {
                    out.0 += 1;
                }
            }
        }
        let looped = in_loop || matches!(s, Stmt::For { .. } | Stmt::While { .. });
        for b in s.bodies() {
            shared_stores(k, b, looped, out);
        }
    }
}

/// A dot operand computed before a loop (attention's `q`) is staged in shared memory
/// once, ahead of the loop, instead of on every trip, in every lowering (FMA and
/// cooperative-matrix WGSL, `mma.sync` and warpgroup PTX): against the same kernel with
/// `q` loaded inside the loop, the loop stores less and the code before it more; PTX
/// for a known device stages every trip where holding the array would fit fewer blocks
/// on a multiprocessor. (The kernel's results on every executor are checked by the test
/// above.)
#[test]
fn loop_invariant_dot_operand_is_staged_once() {
    let load_q = "    q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])\n";
    assert!(ATTENTION.contains(load_q));
    let inside = ATTENTION.replace(load_q, "").replace(
        "        s = tl.dot(q, k)",
        "        q = tl.load(q_ptr + rm[:, None] * D + rd[None, :])\n        s = tl.dot(q, k)",
    );
    let dev = Device::interpreter();
    let (q, k, v, o) = (
        dev.zeros::<f16>(64 * 64).unwrap(),
        dev.zeros::<f16>(128 * 64).unwrap(),
        dev.zeros::<f16>(128 * 64).unwrap(),
        dev.zeros::<f32>(64 * 64).unwrap(),
    );
    let compiled_as = |src: &str, m: i64, d: i64| {
        let module = Module::parse("attention.py", src).unwrap();
        module
            .kernel("attention_fwd")
            .unwrap()
            .launch(&dev, 1)
            .arg(&q)
            .arg(&k)
            .arg(&v)
            .arg(&o)
            .arg(128i32)
            .constexpr("M", m)
            .constexpr("D", d)
            .constexpr("BN", 64i64)
            .compile()
            .unwrap()
    };
    let compiled = |src: &str| compiled_as(src, 64, 64);
    let (hoisted, reloaded) = (compiled(ATTENTION), compiled(&inside));
    // On the H200 (227 KiB a block), PTX keeps the held array where it costs no block
    // a multiprocessor (d 128: one block either way), and stages every trip where it
    // would (128x64, d 64: two blocks instead of one).
    let h200 = tilewise::cuda::PtxOptions {
        max_shared_per_block: Some(232_448),
        ..tilewise::cuda::PtxOptions::new(tilewise::cuda::PtxTarget { sm: 90 }, 4)
    };
    let notes_for = |m: i64, d: i64, limit: u32| {
        let device = tilewise::cuda::PtxOptions {
            max_shared_per_block: Some(limit),
            ..h200
        };
        tilewise::cuda::compile(compiled_as(ATTENTION, m, d).ir(), &device)
            .unwrap()
            .notes
    };
    let notes = |m: i64, d: i64| notes_for(m, d, 232_448);
    let has = |notes: &[String], text: &str| notes.iter().any(|n| n.contains(text));
    let d128 = notes(128, 128);
    assert!(has(&d128, "staged once, ahead of its loop"), "{d128:?}");
    // Held, 128x64 at d 64 takes 115,200 bytes (the f32 scratch overlays the f16
    // rings): two blocks on the H200 too. A device with 225 KiB a block fits one.
    let h200_d64 = notes(128, 64);
    assert!(
        has(&h200_d64, "staged once, ahead of its loop"),
        "{h200_d64:?}"
    );
    assert!(
        has(&h200_d64, "115200 bytes of shared memory"),
        "{h200_d64:?}"
    );
    let d64 = notes_for(128, 64, 225 * 1024);
    assert!(
        has(
            &d64,
            "staged every trip: 2 blocks a multiprocessor instead of 1"
        ),
        "{d64:?}"
    );
    assert!(!has(&d64, "staged once, ahead of its loop"), "{d64:?}");
    use tilewise::core::lower::expand::ExpandOptions;
    use tilewise::cuda::{PtxOptions, PtxTarget};
    let lowerings: Vec<(&str, ExpandOptions)> = vec![
        (
            "WGSL (FMA)",
            tilewise::wgsl::expand_options(&tilewise::wgsl::Capabilities::offline(true, false), 4),
        ),
        (
            "WGSL (cooperative matrices)",
            tilewise::wgsl::expand_options(&tilewise::wgsl::Capabilities::offline_coop(), 4),
        ),
        (
            "PTX sm_80",
            tilewise::cuda::expand_options(&PtxOptions::new(PtxTarget { sm: 80 }, 4)),
        ),
        (
            "PTX sm_90",
            tilewise::cuda::expand_options(&PtxOptions::new(PtxTarget { sm: 90 }, 4)),
        ),
    ];
    for (label, options) in lowerings {
        let count = |c: &tilewise::Compiled| {
            let t = tilewise::core::lower::to_thread_ir(c.ir(), &options).unwrap();
            let mut n = (0, 0);
            shared_stores(&t, &t.body, false, &mut n);
            n
        };
        let ((before_h, loop_h), (before_r, loop_r)) = (count(&hoisted), count(&reloaded));
        assert!(
            loop_h < loop_r && before_h > before_r,
            "{label}: shared stores before/in the loop: {before_h}/{loop_h} with q before it, \
             {before_r}/{loop_r} with q loaded in it"
        );
    }
}

const INT64_OFFSETS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def int64_offsets(x_ptr, out_ptr, stride_row, n_cols, BLOCK: tl.constexpr):
    # Offsets in int64 as the attention tutorials compute them, carried by a loop.
    row = tl.program_id(0).to(tl.int64)
    base = row * stride_row
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    off = base + cols
    for j in range(0, 3):
        # (a multiply-add: WGSL lets the driver fuse it, hence the tolerance)
        acc += tl.load(x_ptr + off, mask=cols < n_cols, other=0.0) * (j + 1)
        off = off + (-row) * 0 + (j % 2)
    out_off = row * n_cols + cols
    tl.store(out_ptr + out_off, acc, mask=cols < n_cols)

@triton.jit
def int64_compared(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK).to(tl.int64)
    x = tl.load(x_ptr + i)
    tl.store(out_ptr + i, tl.where(i < n.to(tl.int64), x, 0.0))
"#;

/// int64 offset arithmetic runs on WGSL too (issue 14): narrowed to 32 bits where only
/// ring operations feed pointer offsets (exact for every in-bounds access); an int64
/// comparison keeps 64 bits and WGSL says it has none.
#[test]
fn int64_offsets_run_everywhere() {
    let (rows, cols) = (3usize, 50usize);
    let x = Rng(47).f32s(rows * 64 + 2);
    check(Case {
        name: "int64_offsets",
        src: INT64_OFFSETS,
        kernel: "int64_offsets",
        grid: [rows as u32, 1, 1],
        args: vec![H::F32(x), poison_f32(rows * cols), s(64i32), s(cols as i32)],
        constexprs: vec![("BLOCK", c(64i64))],
        tol: 1e-6,
        tf32: false,
    });
    check_except_wgpu(
        Case {
            name: "int64_compared",
            src: INT64_OFFSETS,
            kernel: "int64_compared",
            grid: [1, 1, 1],
            args: vec![H::F32(Rng(48).f32s(64)), poison_f32(64), s(40i32)],
            constexprs: vec![("BLOCK", c(64i64))],
            tol: 0.0,
            tf32: false,
        },
        Some("64-bit"),
    );
}

const IDIOMS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def _desc_or_make(x, N: tl.constexpr):
    if isinstance(x, tl.tensor_descriptor):
        return x
    else:
        return tl.make_tensor_descriptor(x, [N], [1], [N])

@triton.jit
def tutorial_idioms(x_ptr, out_ptr, n, N: tl.constexpr):
    # Idioms of Triton's matmul and attention tutorials: assumptions, isinstance on
    # descriptors, alignment hints on pointer tiles (in bytes).
    tl.assume(n > 0)
    tl.assume(N % 16 == 0)
    d = _desc_or_make(x_ptr, N)
    d2 = _desc_or_make(d, N)
    tl.static_assert(isinstance(N, tl.constexpr) and isinstance(3, int) and isinstance(x_ptr, tl.tensor))
    tl.static_assert(not isinstance(x_ptr, tl.tensor_descriptor) and isinstance(tl.float32, tl.dtype))
    offs = tl.arange(0, N)
    ptrs = tl.multiple_of(out_ptr + offs, 16)
    ptrs = tl.max_contiguous(ptrs, N)
    tl.store(ptrs, d2.load([0]) * 2.0, mask=offs < n)
"#;

/// `tl.assume`, `isinstance(x, tl.tensor_descriptor)` (06's `_maybe_make_tensor_desc`)
/// and `tl.multiple_of` on pointer tiles (08), on every executor and in checked mode.
#[test]
fn tutorial_idioms_trace_and_run() {
    let x = Rng(49).f32s(64);
    let case = Case {
        name: "tutorial_idioms",
        src: IDIOMS,
        kernel: "tutorial_idioms",
        grid: [1, 1, 1],
        args: vec![H::F32(x.clone()), poison_f32(64), s(50i32)],
        constexprs: vec![("N", c(64i64))],
        tol: 0.0,
        tf32: false,
    };
    let got = run(&case, &Device::interpreter_checked()).unwrap();
    for i in 0..64 {
        if i < 50 {
            assert_eq!(got[1][i], (x[i] * 2.0) as f64);
        } else {
            assert!(got[1][i].is_nan());
        }
    }
    check(case);
}

const LONG_SCANS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def _first_nonzero(a, b):
    return tl.where(a != 0, a, b)

@triton.jit
def long_scans(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    offs = rows[:, None] * C + cols[None, :]
    x = tl.load(x_ptr + offs)
    n = R * C
    tl.store(out_ptr + offs, tl.cumsum(x, axis=1))
    tl.store(out_ptr + n + offs, tl.cumsum(x, axis=0, reverse=True))
    tl.store(out_ptr + 2 * n + offs, tl.associative_scan(x, 1, _first_nonzero))
    tl.store(out_ptr + 3 * n + offs, tl.associative_scan(x, 0, _first_nonzero, reverse=True))
    flat = tl.reshape(x, (n,))
    tl.store(out_ptr + 4 * n + tl.arange(0, n), tl.cumprod(flat % 3 + 1, axis=0))
"#;

/// Scans along axes longer than a thread's run (split across lanes and warps, each
/// thread prefixed by the runs before it), forward and reverse, with a combine that is
/// associative but not commutative, and a 1-D scan over the whole tile.
#[test]
fn long_scans_across_threads() {
    let mut r = Rng(37);
    for (rows, cols) in [(4u32, 512u32), (512, 4), (2, 2048), (128, 16)] {
        let n = (rows * cols) as usize;
        let x: Vec<i32> = r
            .i32s(n, -3, 4)
            .into_iter()
            .map(|v| if v < 0 { 0 } else { v })
            .collect();
        check(Case {
            name: "long_scans",
            src: LONG_SCANS,
            kernel: "long_scans",
            grid: [1, 1, 1],
            args: vec![H::I32(x), H::I32(vec![-7777; 5 * n])],
            constexprs: vec![("R", c(rows)), ("C", c(cols))],
            tol: 0.0,
            tf32: false,
        });
    }
}

const WHOLE_REDUCTIONS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def whole_reductions(x_ptr, i_ptr, out_ptr, outi_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    i = tl.load(i_ptr + offs)
    tl.store(out_ptr + pid * 3, tl.max(x, axis=0))
    tl.store(out_ptr + pid * 3 + 1, tl.min(x, axis=0))
    tl.store(out_ptr + pid * 3 + 2, tl.sum(x, axis=0))
    tl.store(outi_ptr + pid * 3, tl.max(i, axis=0))
    tl.store(outi_ptr + pid * 3 + 1, tl.min(i, axis=0))
    tl.store(outi_ptr + pid * 3 + 2, tl.sum(i, axis=0))
"#;

/// Whole-program reductions, which WGSL devices with subgroups of 32 combine through
/// subgroup builtins (the cooperative-matrix simulator groups threads by a
/// permutation, as a driver may): float max/min keep `maxnum` semantics (a NaN loses
/// unless all are NaN), infinities and both zeros; sums and integer extremes exact.
#[test]
fn whole_program_reductions_with_specials() {
    let block = 1024usize;
    let mut r = Rng(77);
    let programs = 6;
    let mut x = vec![];
    for p in 0..programs {
        let mut v: Vec<f32> = r
            .f32s(block)
            .iter()
            .map(|f| (f * 8.0).round() / 8.0)
            .collect();
        match p {
            0 => v.iter_mut().for_each(|f| *f = f32::NAN),
            // Runs of NaN as long as a thread's registers (4 consecutive elements
            // today), every other run: whole threads of NaN in every subgroup.
            1 => v
                .iter_mut()
                .enumerate()
                .filter(|(i, _)| (i / 4) % 2 == 0)
                .for_each(|(_, f)| *f = f32::NAN),
            2 => {
                v.iter_mut().for_each(|f| *f = -0.0);
                v[3] = 0.0;
            }
            3 => {
                v[100] = f32::INFINITY;
                v[900] = f32::NEG_INFINITY;
            }
            4 => v.iter_mut().for_each(|f| *f = -f.abs() - 1.0),
            _ => {}
        }
        x.extend(v);
    }
    let ints = r.i32s(block * programs, -1_000_000, 1_000_000);
    check(Case {
        name: "whole_reductions",
        src: WHOLE_REDUCTIONS,
        kernel: "whole_reductions",
        grid: [programs as u32, 1, 1],
        args: vec![
            H::F32(x),
            H::I32(ints),
            poison_f32(3 * programs),
            H::I32(vec![i32::MIN; 3 * programs]),
        ],
        constexprs: vec![("BLOCK", c(block as u32))],
        tol: 0.0,
        tf32: false,
    });
}

const THROUGH_GLOBAL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def reverse_through_scratch(x_ptr, scratch_ptr, out_ptr, BLOCK: tl.constexpr):
    # Each thread writes its elements to a global scratch row; after the barrier,
    # every element is read back by a different thread (reversed order).
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    tl.store(scratch_ptr + pid * BLOCK + offs, x * 2.0)
    tl.debug_barrier()
    y = tl.load(scratch_ptr + pid * BLOCK + (BLOCK - 1 - offs))
    tl.store(out_ptr + pid * BLOCK + offs, y + 1.0)
"#;

#[test]
fn debug_barrier_orders_global_memory_within_a_program() {
    // Without a real barrier (it was a no-op before), a thread may read the scratch
    // before the thread that owns that element has written it.
    let mut r = Rng(47);
    check(Case {
        name: "reverse_through_scratch",
        src: THROUGH_GLOBAL,
        kernel: "reverse_through_scratch",
        grid: [8, 1, 1],
        args: vec![
            H::F32(r.f32s(8 * 1024)),
            poison_f32(8 * 1024),
            poison_f32(8 * 1024),
        ],
        constexprs: vec![("BLOCK", c(1024))],
        tol: 0.0,
        tf32: false,
    });
}
