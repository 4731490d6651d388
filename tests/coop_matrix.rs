//! The cooperative-matrix form of `dot` (WGSL `coop_mat16x16`): kernels whose dots take
//! it run on the simulator of that lowering (`Device::simulator_coop`), and on wgpu
//! where the adapter lists cooperative matrices (the H200 through Vulkan), against the
//! interpreter. Inputs are multiples of 1/8 of small magnitude, so every product and
//! sum is exact in f32 and f16: results must agree bit for bit, whatever the order of
//! accumulation.
//!
//! The kernels cover what the plan must get right: accumulators carried in fragments
//! across a K loop, started from zeros or from loaded values, rescaled inside the loop
//! (read back into registers and reloaded every iteration), merged by a branch, f16
//! accumulators, a dot outside any loop, ragged edges, tiles with one fragment per
//! warp and with many, and every `num_warps`. The generated WGSL is validated by naga
//! and must contain the fragment operations.

use tilewise::half::f16;
use tilewise::{ConstValue, Device, Module};

const KERNELS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def mm(A, B, C, Bias, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
       INIT: tl.constexpr, RESCALE: tl.constexpr, F16_ACC: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if INIT:
        acc = tl.load(C + rm[:, None] * N + rn[None, :], mask=cmask, other=0.0).to(tl.float32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    if F16_ACC:
        acc = acc.to(tl.float16)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        if RESCALE:
            acc = acc * 0.5
        if F16_ACC:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc)
    bias = tl.load(Bias + rn, mask=rn < N, other=0.0)
    out = acc.to(tl.float32) + bias[None, :]
    tl.store(C + rm[:, None] * N + rn[None, :], out.to(tl.float16), mask=cmask)

@triton.jit
def mm_kt(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
          CARRIED: tl.constexpr, MT_A: tl.constexpr):
    # `b` is the (K, N) view of a row-major (N, K) matrix, as `x @ w.T` reads it; with
    # MT_A, `a` is the (M, K) view of a row-major (K, M) one, as `x.T @ w` reads it.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    if MT_A:
        a_ptrs = A + rm[:, None] + rk[None, :] * M
    else:
        a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = B + rn[None, :] * K + rk[:, None]
    for k in range(0, K, BK):
        amask = (rm[:, None] < M) & ((k + rk)[None, :] < K)
        bmask = ((k + rk)[:, None] < K) & (rn[None, :] < N)
        if CARRIED:
            a = tl.load(a_ptrs, mask=amask, other=0.0)
            b = tl.load(b_ptrs, mask=bmask, other=0.0)
            a_ptrs += BK * M if MT_A else BK
            b_ptrs += BK
        else:
            if MT_A:
                a = tl.load(A + rm[:, None] + (k + rk)[None, :] * M, mask=amask, other=0.0)
            else:
                a = tl.load(A + rm[:, None] * K + (k + rk)[None, :], mask=amask, other=0.0)
            b = tl.load(B + rn[None, :] * K + (k + rk)[:, None], mask=bmask, other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

@triton.jit
def one_dot(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, FLIP: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b)
    if FLIP:
        c = -c
    d = tl.dot(a, b, c)
    tl.store(C + rm[:, None] * BN + rn[None, :], d + tl.sum(c, axis=1)[:, None])

@triton.jit
def merge(A, B, C, S, BS: tl.constexpr):
    r = tl.arange(0, BS)
    a = tl.load(A + r[:, None] * BS + r[None, :])
    b = tl.load(B + r[:, None] * BS + r[None, :])
    acc = tl.dot(a, b)
    if S > 1:
        acc = acc + 1.0
    else:
        acc = tl.full((BS, BS), 0.5, tl.float32)
    tl.store(C + r[:, None] * BS + r[None, :], tl.dot(a, b, acc))

@triton.jit
def branchy(A, B, C, N, BS: tl.constexpr):
    r = tl.arange(0, BS)
    acc = tl.zeros((BS, BS), dtype=tl.float32)
    for i in range(N):
        a = tl.load(A + i * BS * BS + r[:, None] * BS + r[None, :])
        b = tl.load(B + i * BS * BS + r[:, None] * BS + r[None, :])
        if i % 2 == 0:
            acc = tl.dot(a, b, acc)
        else:
            acc = tl.dot(b, a, acc)
    tl.store(C + r[:, None] * BS + r[None, :], acc)
"#;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Multiples of 1/8 in [-1, 1): exact in f16, and so are products and short sums.
    fn eighths(&mut self, n: usize) -> Vec<f16> {
        (0..n)
            .map(|_| f16::from_f32((self.next() % 16) as f32 / 8.0 - 1.0))
            .collect()
    }
}

/// The executors compared with the interpreter: the simulator of the fragment lowering
/// always; wgpu when its adapter has cooperative matrices (else a note on stderr).
fn devices() -> Vec<Device> {
    let mut out = vec![Device::simulator_coop()];
    match Device::wgpu() {
        Ok(d) if has_coop(&d) => out.push(d),
        Ok(d) => eprintln!(
            "SKIPPED (wgpu leg of the cooperative-matrix tests): {} lists no cooperative matrices",
            d.name()
        ),
        Err(e) => eprintln!("SKIPPED (wgpu leg of the cooperative-matrix tests): {e}"),
    }
    out
}

fn has_coop(d: &Device) -> bool {
    d.wgpu_capabilities()
        .is_some_and(|c| !c.coop_matrix.is_empty())
}

type Launch = (&'static str, [u32; 3], Vec<(&'static str, ConstValue)>, u32);

/// A buffer argument: f16 data, or an f32 output poisoned with NaN.
#[derive(Clone)]
enum Buf {
    F16(Vec<f16>),
    PoisonF32(usize),
}

/// Runs a launch of `kernel` on the interpreter and on every device with `bufs` (in
/// parameter order, then the `scalars`); buffer `out`, read back as f32, must be
/// identical.
fn check(
    name: &str,
    (kernel, grid, constexprs, num_warps): Launch,
    bufs: &[Buf],
    out: usize,
    scalars: &[i32],
) {
    let module = Module::parse(name, KERNELS).unwrap();
    let k = module.kernel(kernel).unwrap();
    let run = |dev: &Device| -> Vec<f32> {
        let uploaded: Vec<_> = bufs
            .iter()
            .map(|b| match b {
                Buf::F16(v) => dev.upload(v).unwrap(),
                Buf::PoisonF32(n) => dev.upload(&vec![f32::NAN; *n]).unwrap(),
            })
            .collect();
        let mut l = k.launch(dev, grid).num_warps(num_warps);
        for b in &uploaded {
            l = l.arg(b);
        }
        for &s in scalars {
            l = l.arg(s);
        }
        for (n, v) in &constexprs {
            l = l.constexpr(n, v.clone());
        }
        l.run()
            .unwrap_or_else(|e| panic!("{name} on {}: {e}", dev.name()));
        match &bufs[out] {
            Buf::PoisonF32(_) => dev.download::<f32>(&uploaded[out]).unwrap(),
            Buf::F16(_) => dev
                .download::<f16>(&uploaded[out])
                .unwrap()
                .iter()
                .map(|x| x.to_f32())
                .collect(),
        }
    };
    let want = run(&Device::interpreter());
    assert!(
        want.iter().all(|x| x.is_finite()),
        "{name}: the reference left poison"
    );
    for dev in devices() {
        let got = run(&dev);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert!(
                w.to_bits() == g.to_bits(),
                "{name} on {}: element {i}: {g} (interpreter {w})",
                dev.name()
            );
        }
    }
}

fn c(v: u32) -> ConstValue {
    ConstValue::from(v)
}

/// `mm` over `m x k` by `k x n` with `(bm, bn, bk)` blocks; `flags` are INIT (start
/// from C's values), RESCALE (halve the accumulator every iteration) and F16_ACC.
fn mm_case(
    name: &str,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (u32, u32, u32),
    (init, rescale, f16_acc): (bool, bool, bool),
    num_warps: u32,
    seed: u64,
) {
    let mut r = Rng(seed);
    let bufs = [
        Buf::F16(r.eighths(m * k)),
        Buf::F16(r.eighths(k * n)),
        Buf::F16(r.eighths(m * n)),
        Buf::F16(r.eighths(n)),
    ];
    let grid = [(m as u32).div_ceil(bm), (n as u32).div_ceil(bn), 1];
    let flag = ConstValue::from;
    check(
        name,
        (
            "mm",
            grid,
            vec![
                ("BM", c(bm)),
                ("BN", c(bn)),
                ("BK", c(bk)),
                ("INIT", flag(init)),
                ("RESCALE", flag(rescale)),
                ("F16_ACC", flag(f16_acc)),
            ],
            num_warps,
        ),
        &bufs,
        2,
        &[m as i32, n as i32, k as i32],
    );
}

#[test]
fn k_loop_from_zeros_every_num_warps() {
    for (i, nw) in [1u32, 2, 4, 8].into_iter().enumerate() {
        mm_case(
            "mm_zeros",
            (96, 80, 72),
            (64, 64, 32),
            (false, false, false),
            nw,
            1 + i as u64,
        );
    }
}

#[test]
fn k_loop_tiles_of_one_fragment_and_of_many() {
    mm_case(
        "mm_16",
        (40, 24, 40),
        (16, 16, 16),
        (false, false, false),
        4,
        11,
    );
    mm_case(
        "mm_128x64",
        (130, 70, 48),
        (128, 64, 16),
        (false, false, false),
        4,
        12,
    );
    mm_case(
        "mm_32x128",
        (32, 128, 64),
        (32, 128, 64),
        (false, false, false),
        8,
        13,
    );
}

#[test]
fn accumulator_from_registers_and_rescaled_every_iteration() {
    mm_case(
        "mm_init",
        (64, 48, 64),
        (32, 32, 32),
        (true, false, false),
        4,
        21,
    );
    mm_case(
        "mm_rescale",
        (64, 48, 64),
        (32, 32, 32),
        (false, true, false),
        4,
        22,
    );
    mm_case(
        "mm_init_rescale",
        (48, 64, 48),
        (32, 64, 16),
        (true, true, false),
        2,
        23,
    );
}

#[test]
fn f16_accumulators() {
    mm_case(
        "mm_f16_acc",
        (64, 64, 64),
        (32, 32, 32),
        (false, false, true),
        4,
        31,
    );
    mm_case(
        "mm_f16_acc_init",
        (48, 32, 32),
        (16, 32, 16),
        (true, true, true),
        1,
        32,
    );
}

#[test]
fn dots_outside_loops_and_through_branches() {
    let mut r = Rng(41);
    for (bm, bn, bk, nw, flip) in [(32u32, 32u32, 16u32, 4u32, false), (64, 16, 32, 2, true)] {
        let (m, n, k) = (bm as usize, bn as usize, bk as usize);
        check(
            "one_dot",
            (
                "one_dot",
                [1, 1, 1],
                vec![
                    ("BM", c(bm)),
                    ("BN", c(bn)),
                    ("BK", c(bk)),
                    ("FLIP", ConstValue::from(flip)),
                ],
                nw,
            ),
            &[
                Buf::F16(r.eighths(m * k)),
                Buf::F16(r.eighths(k * n)),
                Buf::PoisonF32(m * n),
            ],
            2,
            &[],
        );
    }
    // An accumulator used in a runtime branch (read back before it: fragments assigned
    // in a branch were lost on the H200, fuzz seeds 310017 and 311393), both ways.
    for (s, nw) in [(2, 4u32), (0, 1)] {
        let bs = 32usize;
        check(
            "merge",
            ("merge", [1, 1, 1], vec![("BS", c(bs as u32))], nw),
            &[
                Buf::F16(r.eighths(bs * bs)),
                Buf::F16(r.eighths(bs * bs)),
                Buf::PoisonF32(bs * bs),
            ],
            2,
            &[s],
        );
    }
    let (bs, steps) = (32usize, 3usize);
    check(
        "branchy",
        ("branchy", [1, 1, 1], vec![("BS", c(bs as u32))], 4),
        &[
            Buf::F16(r.eighths(steps * bs * bs)),
            Buf::F16(r.eighths(steps * bs * bs)),
            Buf::PoisonF32(bs * bs),
        ],
        2,
        &[steps as i32],
    );
}

/// Dots inside a runtime `if` take the FMA form and accumulators cross branches in
/// registers: no fragment operation is ever inside a branch (naga cannot prove one
/// uniform; the simulator rejects it).
#[test]
fn no_fragments_inside_branches() {
    // The H200's 48 KiB of workgroup memory: each of `merge`'s dots stages its own
    // operands, more than WebGPU's default 16 KiB with fragments.
    let mut caps = tilewise::wgsl::Capabilities::offline_coop();
    caps.max_compute_workgroup_storage_size = 48 * 1024;
    let module = Module::parse("branchy", KERNELS).unwrap();
    let dev = Device::interpreter();
    let (a, b) = (
        dev.upload(&[f16::ZERO; 1024]).unwrap(),
        dev.upload(&[f16::ZERO; 1024]).unwrap(),
    );
    let c = dev.upload(&[0f32; 1024]).unwrap();
    let compile = |kernel: &str| {
        module
            .kernel(kernel)
            .unwrap()
            .launch(&dev, [1, 1, 1])
            .arg(&a)
            .arg(&b)
            .arg(&c)
            // Not 1: Triton specializes 1 as a constant, and the branch would fold.
            .arg(3)
            .constexpr("BS", c32(32))
            .compile()
            .unwrap()
            .wgsl_for(&caps, 4)
            .unwrap()
            .source
    };
    let branchy = compile("branchy");
    assert!(!branchy.contains("coop"), "{branchy}");
    // `merge`: both dots outside the branch take fragments.
    let merge = compile("merge");
    assert_eq!(merge.matches("coopMultiplyAdd(").count(), 4, "{merge}");
}

fn c32(v: u32) -> ConstValue {
    ConstValue::from(v)
}

/// Operands read from memory contiguous along their first dimension (`b` along K as
/// `x @ w.T` reads it, and `a` along M as `x.T @ w` does), their pointers computed each
/// K step or carried and advanced, are loaded four elements at a time along that
/// dimension (each was one element a thread at strided addresses), staged as they lie
/// (`[K][M]`, `[N][K]`) and read column-major (`coopLoad`), exact on the simulator and
/// the GPU; ragged edges too (then one element at a time: the sizes are not multiples
/// of 4).
#[test]
fn transposed_operands_are_loaded_along_their_first_dimension_and_read_column_major() {
    for mt_a in [false, true] {
        for carried in [false, true] {
            for (m, n, k) in [(128usize, 128usize, 96usize), (100, 72, 42)] {
                let mut r = Rng(0x6b74 + k as u64);
                let bufs = [
                    // A as (M, K), or (K, M) with MT_A, row-major.
                    Buf::F16(r.eighths(m * k)),
                    // B as (N, K), row-major.
                    Buf::F16(r.eighths(n * k)),
                    Buf::PoisonF32(m * n),
                ];
                let grid = [(m as u32).div_ceil(64), (n as u32).div_ceil(64), 1];
                let constexprs = vec![
                    ("BM", c(64)),
                    ("BN", c(64)),
                    ("BK", c(32)),
                    ("CARRIED", ConstValue::from(carried)),
                    ("MT_A", ConstValue::from(mt_a)),
                ];
                let name = format!("mm_kt mt_a={mt_a} carried={carried} {m}x{n}x{k}");
                check(
                    &name,
                    ("mm_kt", grid, constexprs, 4),
                    &bufs,
                    2,
                    &[m as i32, n as i32, k as i32],
                );
            }
            // The WGSL: the transposed operands four elements a load, their fragments
            // read column-major.
            let module = Module::parse("mm_kt", KERNELS).unwrap();
            let dev = Device::interpreter();
            let bufs: Vec<_> = (0..3)
                .map(|_| dev.upload(&[f16::ZERO; 128 * 128]).unwrap())
                .collect();
            let kernel = module.kernel("mm_kt").unwrap();
            let mut l = kernel.launch(&dev, [1, 1, 1]);
            for b in &bufs {
                l = l.arg(b);
            }
            l = l.arg(128).arg(128).arg(128);
            for (n, v) in [("BM", 64u32), ("BN", 64), ("BK", 32)] {
                l = l.constexpr(n, c(v));
            }
            let w = l
                .constexpr("CARRIED", ConstValue::from(carried))
                .constexpr("MT_A", ConstValue::from(mt_a))
                .compile()
                .unwrap()
                .wgsl_for(&tilewise::wgsl::Capabilities::offline_coop(), 4)
                .unwrap();
            let mut needles = vec![
                "coopLoad<coop_mat16x16<f16, B>>",
                "var<storage, read> b1: array<vec4<f16>>",
            ];
            if mt_a {
                needles.extend([
                    "coopLoad<coop_mat16x16<f16, A>>",
                    "var<storage, read> b0: array<vec4<f16>>",
                ]);
            } else {
                needles.push("coopLoadT<coop_mat16x16<f16, A>>");
            }
            for needle in needles {
                assert!(
                    w.source.contains(needle),
                    "mt_a={mt_a} carried={carried}: no `{needle}` in\n{}",
                    w.source
                );
            }
        }
    }
}

#[test]
fn wgsl_of_the_fragment_form_validates() {
    let caps = tilewise::wgsl::Capabilities::offline_coop();
    let module = Module::parse("mm", KERNELS).unwrap();
    let k = module.kernel("mm").unwrap();
    let dev = Device::interpreter();
    let bufs: Vec<_> = (0..4)
        .map(|_| dev.upload(&[f16::ZERO; 64 * 64]).unwrap())
        .collect();
    for (f16_acc, nw) in [(false, 4u32), (true, 8)] {
        let mut l = k.launch(&dev, [1, 1, 1]);
        for b in &bufs {
            l = l.arg(b);
        }
        l = l.arg(64).arg(64).arg(64);
        for (n, v) in [("BM", 64u32), ("BN", 64), ("BK", 32)] {
            l = l.constexpr(n, c(v));
        }
        for (n, v) in [("INIT", false), ("RESCALE", false), ("F16_ACC", f16_acc)] {
            l = l.constexpr(n, ConstValue::from(v));
        }
        let compiled = l.compile().unwrap();
        let w = compiled.wgsl_for(&caps, nw).unwrap();
        for needle in [
            "enable wgpu_cooperative_matrix;",
            "coopLoadT<coop_mat16x16<f16, A>>",
            "coopMultiplyAdd(",
            "coopStoreT(",
        ] {
            assert!(w.source.contains(needle), "no `{needle}` in\n{}", w.source);
        }
        let acc = if f16_acc {
            "coop_mat16x16<f16, C>"
        } else {
            "coop_mat16x16<f32, C>"
        };
        assert!(w.source.contains(acc));
        // Without cooperative matrices the same kernel keeps the FMA form.
        let plain = compiled.wgsl().unwrap();
        assert!(!plain.contains("coop"), "{plain}");
    }
}

/// On an adapter with WebGPU's default 16 KiB of workgroup memory, a tile whose
/// fragment form needs more first reads its accumulator back one fragment a round, then
/// takes the FMA form, and the compiled kernel's notes say which plan it chose; an
/// adapter with room keeps the larger plan.
#[test]
fn plans_fit_the_adapters_workgroup_memory() {
    let module = Module::parse("mm", KERNELS).unwrap();
    let k = module.kernel("mm").unwrap();
    let dev = Device::interpreter();
    let bufs: Vec<_> = (0..4)
        .map(|_| dev.upload(&[f16::ZERO; 64]).unwrap())
        .collect();
    let compile = |(bm, bn, bk): (u32, u32, u32), limit: u32| {
        let mut l = k.launch(&dev, [1, 1, 1]);
        for b in &bufs {
            l = l.arg(b);
        }
        l = l.arg(64).arg(64).arg(64);
        for (n, v) in [("BM", bm), ("BN", bn), ("BK", bk)] {
            l = l.constexpr(n, c(v));
        }
        for n in ["INIT", "RESCALE", "F16_ACC"] {
            l = l.constexpr(n, ConstValue::from(false));
        }
        let mut caps = tilewise::wgsl::Capabilities::offline_coop();
        caps.max_compute_workgroup_storage_size = limit;
        l.compile().unwrap().wgsl_for(&caps, 4).unwrap()
    };
    let fits = |w: &tilewise::wgsl::WgslKernel, limit: u32| {
        assert!(
            w.workgroup_bytes <= limit,
            "{} > {limit}: {:?}",
            w.workgroup_bytes,
            w.notes
        );
    };
    // 64x64x32: operands 5 + 4.5 KiB, the accumulator's 8 KiB rounds do not fit 16 KiB;
    // one fragment a round (4 KiB) does.
    let w = compile((64, 64, 32), 16384);
    fits(&w, 16384);
    assert!(w.source.contains("coopMultiplyAdd"));
    assert!(
        w.notes.iter().any(|n| n.contains("one fragment a round")),
        "{:?}",
        w.notes
    );
    // 128x128x32: no fragment form fits in 16 KiB: FMAs, and the notes say so.
    let w = compile((128, 128, 32), 16384);
    assert!(!w.source.contains("coop"));
    assert!(
        w.notes.iter().any(|n| n.contains("as FMAs")),
        "{:?}",
        w.notes
    );
    assert!(
        w.notes.iter().any(|n| n.contains("does not fit")),
        "{:?}",
        w.notes
    );
    // With 48 KiB (the H200 through Vulkan) the first plan stays.
    let w = compile((128, 128, 32), 49152);
    fits(&w, 49152);
    assert!(w
        .notes
        .iter()
        .any(|n| n.contains("cooperative matrices (16x16 f16 -> f32)")));
    assert!(
        !w.notes.iter().any(|n| n.contains("round")),
        "{:?}",
        w.notes
    );
}
