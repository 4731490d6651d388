//! Checked mode on every executor: out-of-bounds accesses, false hints, lying block
//! pointers and failed `device_assert`s are reported with their source line by the
//! simulators of both GPU lowerings (always), wgpu and CUDA (when present; CI requires
//! lavapipe), as by the checked interpreter; the access is never performed; a correct
//! kernel runs right after on the same device; checked mode changes no result of a
//! correct kernel; unchecked kernels carry no tests.

mod common;

use common::{
    cuda_device, err, filled, line_col_of, matmul_ref, module, ok, poisoned_f32, wgpu_device, Rng,
};
use tilewise::{Device, ErrorKind};

/// Every executor, in checked mode.
fn checked_devices() -> Vec<Device> {
    let mut devices = vec![
        Device::interpreter_checked(),
        Device::simulator().checked(),
        Device::simulator_ptx().checked(),
        Device::simulator_coop().checked(),
    ];
    devices.extend(wgpu_device().map(|d| d.checked()));
    devices.extend(cuda_device().map(|d| d.checked()));
    devices
}

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def far_store(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + (1 << 28), offs.to(tl.float32))

@triton.jit
def near_load(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + BLOCK)
    tl.store(out_ptr + offs, x)

@triton.jit
def before_start(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs - 5))

@triton.jit
def counted(x_ptr, counts_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.atomic_add(counts_ptr + x, 1)

@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)

@triton.jit
def lying_multiple_of(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + 3
    offs = tl.multiple_of(offs, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)

@triton.jit
def block_copy(x_ptr, out_ptr, M, N, stride_m, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    src = tl.make_block_ptr(base=x_ptr, shape=(M, N), strides=(stride_m, 1),
                            offsets=(0, 0), block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    tile = tl.load(src, boundary_check=(0, 1))
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(out_ptr + offs, tile)

@triton.jit
def asserted(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.device_assert(x >= 0, "x must be non-negative")
    tl.store(out_ptr + offs, tl.sqrt(x))

@triton.jit
def rows_clamped(x_ptr, out_ptr, M, K: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = tl.where(offs < M, offs, 0)
    rows = tl.max_contiguous(tl.multiple_of(rows, BLOCK_M), BLOCK_M)
    cols = tl.arange(0, K)
    x = tl.load(x_ptr + rows[:, None] * K + cols[None, :])
    tl.store(out_ptr + offs[:, None] * K + cols[None, :], x * 2.0, mask=offs[:, None] < M)

@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
"#;

fn line_of(needle: &str) -> u32 {
    line_col_of(SRC, needle, 0).0
}

/// Runs the correct kernel on `dev` and checks its result (a device that reported a
/// violation keeps working).
fn correct_kernel_runs(dev: &Device) {
    let m = module("checked.py", SRC);
    let mut rng = Rng::new(5);
    let n = 300;
    let x = rng.vec_f32(n, -4.0, 4.0);
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(dev, n);
    ok(ok(m.kernel("doubled"))
        .launch(dev, n.div_ceil(128) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 128)
        .run());
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(ok(dev.download::<f32>(&out)), want, "{}", dev.name());
}

#[test]
fn a_far_store_is_reported_and_never_performed() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("far_store"));
    for dev in checked_devices() {
        let out = filled(&dev, 1000, 7.0f32);
        let e = err(k
            .launch(&dev, 8)
            .arg(&out)
            .arg(1000i32)
            .constexpr("BLOCK", 128)
            .run());
        let text = e.render();
        assert_eq!(e.kind, ErrorKind::Runtime, "{}: {text}", dev.name());
        assert!(
            e.message.contains("out-of-bounds store"),
            "{}: {text}",
            dev.name()
        );
        assert!(e.message.contains("`far_store`"), "{}: {text}", dev.name());
        assert!(
            e.message.contains("argument `out_ptr`"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message.contains("of a buffer of 1000 elements"),
            "{}: {text}",
            dev.name()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(line_of("tl.store(out_ptr + offs + (1 << 28)")),
            "{}: {text}",
            dev.name()
        );
        // The index is the offending lane's: 2^28 + its offset.
        let index: i64 = e
            .message
            .split("element index ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{}: no index in {text}", dev.name()));
        assert!(
            (1 << 28..(1 << 28) + 1024).contains(&index),
            "{}: {text}",
            dev.name()
        );
        // Nothing was written.
        assert!(
            ok(dev.download::<f32>(&out)).iter().all(|&v| v == 7.0),
            "{}",
            dev.name()
        );
        correct_kernel_runs(&dev);
    }
}

#[test]
fn a_load_one_block_past_the_end_is_reported() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("near_load"));
    for dev in checked_devices() {
        let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
        let xb = ok(dev.upload(&x));
        let out = poisoned_f32(&dev, 256);
        let e = err(k
            .launch(&dev, 2)
            .arg(&xb)
            .arg(&out)
            .constexpr("BLOCK", 128)
            .run());
        let text = e.render();
        assert!(
            e.message.contains("out-of-bounds load"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message.contains("program (1, 0, 0)"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message.contains("argument `x_ptr`"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message.contains("of a buffer of 256 elements"),
            "{}: {text}",
            dev.name()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(line_of("x = tl.load(x_ptr + offs + BLOCK)")),
            "{}: {text}",
            dev.name()
        );
        assert!(text.contains("of the 128 tile"), "{}: {text}", dev.name());
        correct_kernel_runs(&dev);
    }
}

#[test]
fn a_negative_index_and_an_atomic_past_the_end_are_reported() {
    let m = module("checked.py", SRC);
    for dev in checked_devices() {
        let x: Vec<f32> = (0..64).map(|i| i as f32).collect();
        let xb = ok(dev.upload(&x));
        let out = poisoned_f32(&dev, 64);
        let e = err(ok(m.kernel("before_start"))
            .launch(&dev, 1)
            .arg(&xb)
            .arg(&out)
            .constexpr("BLOCK", 64)
            .run());
        let text = e.render();
        assert!(
            e.message.contains("out-of-bounds load"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message
                .contains("element index -5 of a buffer of 64 elements"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            text.contains("at lane (0) of the 64 tile"),
            "{}: {text}",
            dev.name()
        );
        // Bins 0..9 exist; the data asks for bin 40 at lane 40.
        let bins: Vec<i32> = (0..64).map(|i| if i == 40 { 40 } else { i % 10 }).collect();
        let bb = ok(dev.upload(&bins));
        let counts = ok(dev.zeros::<i32>(10));
        let e = err(ok(m.kernel("counted"))
            .launch(&dev, 1)
            .arg(&bb)
            .arg(&counts)
            .constexpr("BLOCK", 64)
            .run());
        let text = e.render();
        assert!(
            e.message.contains("out-of-bounds atomic"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message
                .contains("element index 40 of a buffer of 10 elements (argument `counts_ptr`)"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            text.contains("at lane (40) of the 64 tile"),
            "{}: {text}",
            dev.name()
        );
        correct_kernel_runs(&dev);
    }
}

#[test]
fn a_false_hint_that_widens_an_access_is_an_error_at_its_line() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("lying_multiple_of"));
    for dev in checked_devices() {
        let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let xb = ok(dev.upload(&x));
        let out = ok(dev.zeros::<f32>(16));
        let e = err(k
            .launch(&dev, 1)
            .arg(&xb)
            .arg(&out)
            .arg(16i32)
            .constexpr("BLOCK", 8)
            .run());
        let text = e.render();
        assert_eq!(e.kind, ErrorKind::Runtime, "{}: {text}", dev.name());
        assert!(
            e.message.contains("false `multiple_of` hint"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message
                .contains("element (0) is 3, which starts a run and is not a multiple of 8"),
            "{}: {text}",
            dev.name()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(line_of("offs = tl.multiple_of(offs, BLOCK)")),
            "{}: {text}",
            dev.name()
        );
    }
}

#[test]
fn a_false_hint_no_access_uses_is_a_warning() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("rows_clamped"));
    for dev in checked_devices() {
        let (rows, cols) = (10usize, 16usize);
        let x: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let xb = ok(dev.upload(&x));
        let out = poisoned_f32(&dev, rows * cols);
        ok(k.launch(&dev, 2)
            .arg(&xb)
            .arg(&out)
            .arg(rows as i32)
            .constexpr("K", cols as i64)
            .constexpr("BLOCK_M", 8)
            .run());
        let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
        assert_eq!(ok(dev.download::<f32>(&out)), want, "{}", dev.name());
        let w = dev.take_warnings();
        assert_eq!(w.len(), 1, "{}: {w:?}", dev.name());
        assert!(
            w[0].render().contains("cannot change a result"),
            "{}: {}",
            dev.name(),
            w[0].render()
        );
        assert_eq!(
            w[0].line_col().map(|(l, _)| l),
            Some(line_of("rows = tl.max_contiguous")),
            "{}",
            dev.name()
        );
    }
}

#[test]
fn a_block_pointer_reaching_past_its_buffer_is_reported() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("block_copy"));
    for dev in checked_devices() {
        // A (3, 4) matrix of 12 elements described as (4, 4).
        let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let xb = ok(dev.upload(&x));
        let out = poisoned_f32(&dev, 16);
        let e = err(k
            .launch(&dev, 1)
            .arg(&xb)
            .arg(&out)
            .arg(4i32)
            .arg(4i32)
            .arg(4i32)
            .constexpr("BLOCK_M", 4)
            .constexpr("BLOCK_N", 4)
            .run());
        let text = e.render();
        assert!(
            e.message.contains("block pointer reaches past its buffer"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message
                .contains("[4, 4] with strides [4, 1] covers element index 15, outside a buffer of 12 elements (argument `x_ptr`)"),
            "{}: {text}",
            dev.name()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(line_of("src = tl.make_block_ptr")),
            "{}: {text}",
            dev.name()
        );
        // The true shape passes and copies.
        let out = poisoned_f32(&dev, 16);
        ok(k.launch(&dev, 1)
            .arg(&xb)
            .arg(&out)
            .arg(3i32)
            .arg(4i32)
            .arg(4i32)
            .constexpr("BLOCK_M", 4)
            .constexpr("BLOCK_N", 4)
            .run());
        let got = ok(dev.download::<f32>(&out));
        let want: Vec<f32> = (0..16)
            .map(|i| if i < 12 { i as f32 } else { 0.0 })
            .collect();
        assert_eq!(got, want, "{}", dev.name());
    }
}

#[test]
fn a_failed_device_assert_names_the_element() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("asserted"));
    for dev in checked_devices() {
        let mut x: Vec<f32> = (0..256).map(|i| i as f32).collect();
        x[128 + 37] = -1.0;
        let xb = ok(dev.upload(&x));
        let out = poisoned_f32(&dev, 256);
        let e = err(k
            .launch(&dev, 2)
            .arg(&xb)
            .arg(&out)
            .constexpr("BLOCK", 128)
            .run());
        let text = e.render();
        assert!(
            e.message.contains("device assertion failed"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            e.message
                .contains("program (1, 0, 0): `x must be non-negative` is false at element (37)"),
            "{}: {text}",
            dev.name()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(line_of("tl.device_assert(")),
            "{}: {text}",
            dev.name()
        );
    }
}

/// A correct kernel with every kind of access (masked ragged tiles, a pipelined dot
/// on tensor cores or fragments) gives the same result checked as unchecked.
#[test]
fn checked_mode_changes_no_result() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("matmul"));
    let mut rng = Rng::new(11);
    let (mm, nn, kk) = (37usize, 45usize, 70usize);
    let a = rng.vec_f32(mm * kk, -1.0, 1.0);
    let b = rng.vec_f32(kk * nn, -1.0, 1.0);
    let to64 = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let want = matmul_ref(&to64(&a), &to64(&b), mm, nn, kk);
    for dev in checked_devices() {
        for (bm, bn, bk) in [(16u32, 16u32, 16u32), (32, 32, 32)] {
            let ab = ok(dev.upload(&a));
            let bb = ok(dev.upload(&b));
            let run = |checked: bool| -> Vec<f32> {
                let c = poisoned_f32(&dev, mm * nn);
                ok(k.launch(
                    &dev,
                    (
                        mm.div_ceil(bm as usize) as u32,
                        nn.div_ceil(bn as usize) as u32,
                    ),
                )
                .arg(&ab)
                .arg(&bb)
                .arg(&c)
                .arg(mm as i32)
                .arg(nn as i32)
                .arg(kk as i32)
                .constexpr("BM", bm)
                .constexpr("BN", bn)
                .constexpr("BK", bk)
                .checked(checked)
                .run());
                ok(dev.download::<f32>(&c))
            };
            let checked = run(true);
            let unchecked = run(false);
            assert_eq!(checked, unchecked, "{} ({bm}, {bn}, {bk})", dev.name());
            common::assert_close(&dev.name(), &checked, &want, 2e-2);
        }
        assert!(dev.take_warnings().is_empty(), "{}", dev.name());
    }
}

/// The unchecked lowering has no tests, no hidden parameters, no record.
#[test]
fn unchecked_kernels_carry_no_checks() {
    let m = module("checked.py", SRC);
    let k = ok(m.kernel("doubled"));
    let dev = Device::interpreter();
    let xb = ok(dev.zeros::<f32>(8));
    let compiled = ok(k
        .launch(&dev, 1)
        .arg(&xb)
        .arg(&xb)
        .arg(8i32)
        .constexpr("BLOCK", 128)
        .compile());
    let wgsl = ok(compiled.wgsl());
    let ptx = ok(compiled.ptx());
    for text in [&wgsl, &ptx] {
        assert!(
            !text.contains("tw_checks") && !text.contains("tw_len"),
            "{text}"
        );
    }
}

/// The checked PTX of every kernel here assembles with ptxas for sm_80 and sm_90, and
/// the checked WGSL validates (naga), so that CI checks what only a GPU runs.
#[test]
fn checked_kernels_assemble_and_validate() {
    let m = module("checked.py", SRC);
    let dev = Device::interpreter();
    let f = ok(dev.zeros::<f32>(64));
    let launches: Vec<tilewise::Compiled> = vec![
        ok(ok(m.kernel("far_store"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(64i32)
            .constexpr("BLOCK", 128)
            .compile()),
        ok(ok(m.kernel("near_load"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .constexpr("BLOCK", 128)
            .compile()),
        ok(ok(m.kernel("lying_multiple_of"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .arg(16i32)
            .constexpr("BLOCK", 8)
            .compile()),
        ok(ok(m.kernel("block_copy"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .arg(4i32)
            .arg(4i32)
            .arg(4i32)
            .constexpr("BLOCK_M", 4)
            .constexpr("BLOCK_N", 4)
            .compile()),
        ok(ok(m.kernel("asserted"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .constexpr("BLOCK", 128)
            .compile()),
        ok(ok(m.kernel("rows_clamped"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .arg(4i32)
            .constexpr("K", 16)
            .constexpr("BLOCK_M", 8)
            .compile()),
        ok(ok(m.kernel("matmul"))
            .launch(&dev, 1)
            .arg(&f)
            .arg(&f)
            .arg(&f)
            .arg(8i32)
            .arg(8i32)
            .arg(8i32)
            .constexpr("BM", 64)
            .constexpr("BN", 64)
            .constexpr("BK", 32)
            .compile()),
    ];
    let ptxas = tilewise::cuda::find_ptxas().is_some();
    if !ptxas {
        assert!(
            std::env::var("TILEWISE_REQUIRE_PTXAS").as_deref() != Ok("1"),
            "TILEWISE_REQUIRE_PTXAS=1 but ptxas was not found"
        );
        eprintln!("SKIPPED (ptxas leg): ptxas not found");
    }
    for c in &launches {
        for sm in [80, 90] {
            let options = tilewise::cuda::PtxOptions {
                checked: true,
                ..tilewise::cuda::PtxOptions::new(tilewise::cuda::PtxTarget { sm }, 4)
            };
            let ptx = ok(tilewise::cuda::compile(c.ir(), &options));
            assert!(ptx.checked.is_some(), "{}", c.ir().name);
            if ptxas {
                ok(tilewise::cuda::assemble(&ptx.source, &ptx.arch));
            }
        }
        for caps in [
            tilewise::wgsl::Capabilities::offline(false, false),
            tilewise::wgsl::Capabilities::offline_coop(),
        ] {
            let w = ok(tilewise::wgsl::compile_with(
                c.ir(),
                &caps,
                &tilewise::wgsl::WgslOptions {
                    checked: true,
                    ..tilewise::wgsl::WgslOptions::new(4)
                },
            ));
            ok(tilewise::wgsl::validate_wgsl(&w.name, &w.source, &caps));
        }
    }
}
