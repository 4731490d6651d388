//! The seed programs (examples/seeds/) reproduce the results the seed chapters print,
//! and agree with float64 references on random, ragged inputs.

mod common;

use common::*;
use tilewise::{Device, ErrorKind, Module};

const CH7_BCAST: &str = include_str!("../examples/seeds/ch7_broadcasting.py");
const CH7_HINTS: &str = include_str!("../examples/seeds/ch7_alignment_hints.py");
const CH7_BP: &str = include_str!("../examples/seeds/ch7_block_pointers.py");
const CH9: &str = include_str!("../examples/seeds/ch9_masks.py");
const L4: &str = include_str!("../examples/seeds/lesson4_block_ptr.py");

/// The integers after the last ':' of a static_print line: "shape: [4, 1]" -> [4, 1].
fn printed_dims(line: &str) -> Vec<u32> {
    let tail = line.rsplit(':').next().unwrap_or("");
    tail.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect()
}

// ---------------------------------------------------------------- chapter 7.1

#[test]
fn broadcast_add_grid() {
    let dev = device();
    let m = module("ch7_broadcasting.py", CH7_BCAST);
    let k = ok(m.kernel("broadcast_add_kernel"));
    let out = filled(&dev, 12, i32::MIN);
    ok(k.launch(&dev, 1)
        .arg(&out)
        .arg(3i32)
        .arg(4i32)
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 4)
        .run());
    let got: Vec<i32> = ok(dev.download(&out));
    assert_eq!(got, vec![0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5]);
}

#[test]
fn broadcast_add_static_prints_shapes() {
    let dev = device();
    let m = module("ch7_broadcasting.py", CH7_BCAST);
    let k = ok(m.kernel("broadcast_add_kernel"));
    let out = filled(&dev, 12, i32::MIN);
    let c = ok(k
        .launch(&dev, 1)
        .arg(&out)
        .arg(3i32)
        .arg(4i32)
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 4)
        .compile());
    let p = c.static_prints();
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(p[0].starts_with("row_col shape:"), "{p:?}");
    assert_eq!(printed_dims(&p[0]), vec![4, 1], "{p:?}");
    assert!(p[1].starts_with("col_row shape:"), "{p:?}");
    assert_eq!(printed_dims(&p[1]), vec![1, 4], "{p:?}");
    assert!(p[2].starts_with("combined shape:"), "{p:?}");
    assert_eq!(printed_dims(&p[2]), vec![4, 4], "{p:?}");
}

#[test]
fn broadcast_add_random_ragged() {
    // A 2-D grid of (row + col) over a ragged (M, N) inside a larger block.
    let dev = device();
    let m = module("ch7_broadcasting.py", CH7_BCAST);
    let k = ok(m.kernel("broadcast_add_kernel"));
    let mut rng = Rng::new(71);
    for _ in 0..3 {
        let (rows, cols) = (rng.int(1, 16) as usize, rng.int(1, 16) as usize);
        let out = filled(&dev, rows * cols, i32::MIN);
        ok(k.launch(&dev, 1)
            .arg(&out)
            .arg(rows as i32)
            .arg(cols as i32)
            .constexpr("BLOCK_M", 16)
            .constexpr("BLOCK_N", 16)
            .run());
        let got: Vec<i32> = ok(dev.download(&out));
        let want: Vec<i32> = (0..rows * cols)
            .map(|i| (i / cols + i % cols) as i32)
            .collect();
        assert_eq!(got, want, "M={rows} N={cols}");
    }
}

#[test]
fn bad_broadcast_is_a_shape_error_with_caret() {
    let dev = device();
    let m = module("ch7_broadcasting.py", CH7_BCAST);
    let k = ok(m.kernel("bad_broadcast_kernel"));
    let out = filled(&dev, 4, i32::MIN);
    let e = err(k
        .launch(&dev, 1)
        .arg(&out)
        .constexpr("BLOCK_A", 4)
        .constexpr("BLOCK_B", 8)
        .run());
    assert_eq!(e.kind, ErrorKind::Shape, "{}", e.render());
    assert!(e.message.contains("4 and 8"), "{}", e.render());
    assert_eq!(
        e.line_col(),
        Some(line_col_of(CH7_BCAST, "a + b", 0)),
        "{}",
        e.render()
    );
    let r = e.render();
    assert!(r.contains("ch7_broadcasting.py:"), "{r}");
    assert!(r.contains("c = a + b"), "{r}");
    assert!(
        r.lines()
            .any(|l| l.trim_start_matches([' ', '|']).starts_with('^')),
        "{r}"
    );
    // The output was never written.
    assert_eq!(ok(dev.download::<i32>(&out)), vec![i32::MIN; 4]);
}

#[test]
fn forgot_none_is_elementwise() {
    let dev = device();
    let m = module("ch7_broadcasting.py", CH7_BCAST);
    let k = ok(m.kernel("forgot_none_kernel"));
    let out = filled(&dev, 4, i32::MIN);
    let launch = k.launch(&dev, 1).arg(&out).constexpr("BLOCK", 4);
    let c = ok(launch.compile());
    let p = c.static_prints();
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(
        p[0].starts_with("combined shape (forgot None-indexing):"),
        "{p:?}"
    );
    assert_eq!(printed_dims(&p[0]), vec![4], "{p:?}");
    ok(launch.run());
    assert_eq!(ok(dev.download::<i32>(&out)), vec![0, 2, 4, 6]);
}

// ---------------------------------------------------------------- chapter 7.2

#[test]
fn hinted_kernel_doubles() {
    let dev = device();
    let m = module("ch7_alignment_hints.py", CH7_HINTS);
    let k = ok(m.kernel("hinted_kernel"));
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(&dev, 16);
    ok(k.launch(&dev, 2)
        .arg(&xb)
        .arg(&out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run());
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(ok(dev.download::<f32>(&out)), want);
}

#[test]
fn hinted_kernel_random_ragged() {
    let dev = device();
    let m = module("ch7_alignment_hints.py", CH7_HINTS);
    let k = ok(m.kernel("hinted_kernel"));
    let mut rng = Rng::new(72);
    let n = 8 * 9 + 5;
    let x = rng.vec_f32(n, -10.0, 10.0);
    let xb = ok(dev.upload(&x));
    // The output has a sentinel tail the masked store must not reach.
    let out = filled(&dev, n + 8, SENTINEL_F32);
    ok(k.launch(&dev, n.div_ceil(8) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 8)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).chain([SENTINEL_F32; 8]).collect();
    assert_eq!(got, want);
}

fn run_lying(dev: &Device, out: &tilewise::Buffer) -> tilewise::Result<()> {
    let m = module("ch7_alignment_hints.py", CH7_HINTS);
    let k = m.kernel("lying_multiple_of_kernel")?;
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let xb = dev.upload(&x)?;
    k.launch(dev, 1)
        .arg(&xb)
        .arg(out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run()
}

#[test]
fn lying_multiple_of_is_unchecked_by_default() {
    let dev = device();
    let out = ok(dev.zeros::<f32>(16));
    ok(run_lying(&dev, &out));
    let want = [
        0.0, 0.0, 0.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 18.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    ];
    assert_eq!(ok(dev.download::<f32>(&out)), want.to_vec());

    // With a sentinel output: exactly offsets 3..=10 were written.
    let out = filled(&dev, 16, SENTINEL_F32);
    ok(run_lying(&dev, &out));
    let got: Vec<f32> = ok(dev.download(&out));
    for (i, g) in got.iter().enumerate() {
        let want = if (3..=10).contains(&i) {
            2.0 * i as f32
        } else {
            SENTINEL_F32
        };
        assert_eq!(*g, want, "index {i}");
    }
}

#[test]
fn checked_mode_reports_the_lie() {
    let dev = Device::interpreter_checked();
    let out = ok(dev.zeros::<f32>(16));
    let e = err(run_lying(&dev, &out));
    assert_eq!(e.kind, ErrorKind::Runtime, "{}", e.render());
    assert!(e.message.contains("multiple_of"), "{}", e.render());
    assert!(
        e.message.contains("lying_multiple_of_kernel"),
        "{}",
        e.render()
    );
    // The hint's line.
    assert_eq!(
        e.line_col().map(|(l, _)| l),
        Some(line_col_of(CH7_HINTS, "tl.multiple_of(offsets, BLOCK)", 1).0)
    );
}

/// The seed's lie, reported at the hint's line by every executor in checked mode: the
/// simulators of both GPU lowerings, and wgpu and CUDA where present.
#[test]
fn checked_mode_reports_the_lie_on_every_executor() {
    let mut devices = vec![
        Device::simulator().checked(),
        Device::simulator_ptx().checked(),
        Device::simulator_coop().checked(),
    ];
    devices.extend(common::wgpu_device().map(|d| d.checked()));
    devices.extend(common::cuda_device().map(|d| d.checked()));
    let hint_line = line_col_of(CH7_HINTS, "tl.multiple_of(offsets, BLOCK)", 1).0;
    for dev in devices {
        let out = ok(dev.zeros::<f32>(16));
        let e = err(run_lying(&dev, &out));
        assert_eq!(e.kind, ErrorKind::Runtime, "{}: {}", dev.name(), e.render());
        assert!(
            e.message.contains("false `multiple_of` hint"),
            "{}: {}",
            dev.name(),
            e.render()
        );
        assert!(
            e.message.contains("lying_multiple_of_kernel"),
            "{}: {}",
            dev.name(),
            e.render()
        );
        assert_eq!(
            e.line_col().map(|(l, _)| l),
            Some(hint_line),
            "{}",
            dev.name()
        );
    }
}

#[test]
fn checked_mode_accepts_true_hints() {
    let dev = Device::interpreter_checked();
    let m = module("ch7_alignment_hints.py", CH7_HINTS);
    let k = ok(m.kernel("hinted_kernel"));
    let mut rng = Rng::new(73);
    let x = rng.vec_f32(16, -5.0, 5.0);
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(&dev, 16);
    ok(k.launch(&dev, 2)
        .arg(&xb)
        .arg(&out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run());
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(ok(dev.download::<f32>(&out)), want);
}

// ---------------------------------------------------------------- chapter 7.3

fn copy_bp(dev: &Device, x: &[f32], out_len: usize, args: [i32; 6], block: (u32, u32)) -> Vec<f32> {
    let m = module("ch7_block_pointers.py", CH7_BP);
    let k = ok(m.kernel("copy_block_ptr_kernel"));
    let xb = ok(dev.upload(x));
    let out = poisoned_f32(dev, out_len);
    let mut l = k.launch(dev, 1).arg(&xb).arg(&out);
    for a in args {
        l = l.arg(a);
    }
    ok(l.constexpr("BLOCK_M", block.0)
        .constexpr("BLOCK_N", block.1)
        .run());
    ok(dev.download(&out))
}

#[test]
fn block_ptr_copy_truthful() {
    let dev = device();
    let real: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let got = copy_bp(&dev, &real, 12, [3, 4, 4, 1, 3, 4], (4, 4));
    assert_eq!(got, real);
}

#[test]
fn block_ptr_copy_lied_shape() {
    // The (3, 4) input described as (4, 3) with strides (3, 1): the seed's 4x3 result.
    let dev = device();
    let real: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let got = copy_bp(&dev, &real, 12, [4, 3, 3, 1, 4, 3], (4, 4));
    assert_eq!(got, real, "rows [0,1,2] [3,4,5] [6,7,8] [9,10,11]");
}

#[test]
fn block_ptr_copy_random_ragged_and_strided() {
    let dev = device();
    let mut rng = Rng::new(74);
    // Contiguous ragged copy.
    let (mm, nn) = (5usize, 7usize);
    let x = rng.vec_f32(mm * nn, -1.0, 1.0);
    let got = copy_bp(&dev, &x, mm * nn, [5, 7, 7, 1, 5, 7], (8, 8));
    assert_eq!(got, x);
    // Transposed read: x is (7, 5) row-major, viewed as (5, 7) with strides (1, 5).
    let xt = rng.vec_f32(mm * nn, -1.0, 1.0);
    let got = copy_bp(&dev, &xt, mm * nn, [5, 7, 1, 5, 5, 7], (8, 8));
    let want: Vec<f32> = (0..mm * nn).map(|i| xt[(i % nn) * mm + i / nn]).collect();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------- chapter 9

fn run_causal(
    dev: &Device,
    kernel: &str,
    x: &[f32],
    rows: usize,
    cols: usize,
    block: u32,
) -> Vec<f32> {
    let m = module("ch9_masks.py", CH9);
    let k = ok(m.kernel(kernel));
    let xb = ok(dev.upload(x));
    let out = poisoned_f32(dev, rows * cols);
    ok(k.launch(dev, 1)
        .arg(&xb)
        .arg(&out)
        .arg(rows as i32)
        .arg(cols as i32)
        .arg(cols as i32)
        .arg(1i32)
        .constexpr("BLOCK_M", block)
        .constexpr("BLOCK_N", block)
        .run());
    ok(dev.download(&out))
}

#[test]
fn causal_mask_is_tril() {
    let dev = device();
    let x: Vec<f32> = (1..=16).map(|i| i as f32).collect();
    let got = run_causal(&dev, "causal_mask_kernel", &x, 4, 4, 4);
    #[rustfmt::skip]
    let want = vec![
        1.0, 0.0, 0.0, 0.0,
        5.0, 6.0, 0.0, 0.0,
        9.0, 10.0, 11.0, 0.0,
        13.0, 14.0, 15.0, 16.0,
    ];
    assert_eq!(got, want);
}

#[test]
fn wrong_causal_mask_zeroes_diagonal() {
    let dev = device();
    let x: Vec<f32> = (1..=16).map(|i| i as f32).collect();
    let got = run_causal(&dev, "wrong_causal_mask_kernel", &x, 4, 4, 4);
    #[rustfmt::skip]
    let want = vec![
        0.0, 0.0, 0.0, 0.0,
        5.0, 0.0, 0.0, 0.0,
        9.0, 10.0, 0.0, 0.0,
        13.0, 14.0, 15.0, 0.0,
    ];
    assert_eq!(got, want);
}

#[test]
fn causal_masks_random_ragged() {
    let dev = device();
    let mut rng = Rng::new(91);
    let (rows, cols) = (6usize, 11usize);
    let x = rng.vec_f32(rows * cols, 1.0, 2.0);
    for (kernel, strict) in [
        ("causal_mask_kernel", false),
        ("wrong_causal_mask_kernel", true),
    ] {
        let got = run_causal(&dev, kernel, &x, rows, cols, 16);
        let want: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                let keep = if strict { c < r } else { c <= r };
                if keep {
                    x[i]
                } else {
                    0.0
                }
            })
            .collect();
        assert_eq!(got, want, "{kernel}");
    }
}

fn run_block_sparse(dev: &Device, x: &[f32], flags: &[i32], out: &tilewise::Buffer, block: u32) {
    let m = module("ch9_masks.py", CH9);
    let k = ok(m.kernel("block_sparse_double_kernel"));
    let xb = ok(dev.upload(x));
    let fb = ok(dev.upload(flags));
    ok(k.launch(dev, flags.len() as u32)
        .arg(&xb)
        .arg(out)
        .arg(&fb)
        .arg(x.len() as i32)
        .constexpr("BLOCK", block)
        .constexpr("NUM_BLOCKS", flags.len())
        .run());
}

#[test]
fn block_sparse_seed_output() {
    let dev = device();
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let out = ok(dev.zeros::<f32>(16));
    run_block_sparse(&dev, &x, &[1, 0, 1, 0], &out, 4);
    let want = [
        0.0, 2.0, 4.0, 6.0, 0.0, 0.0, 0.0, 0.0, 16.0, 18.0, 20.0, 22.0, 0.0, 0.0, 0.0, 0.0,
    ];
    assert_eq!(ok(dev.download::<f32>(&out)), want.to_vec());
}

#[test]
fn block_sparse_skipped_blocks_untouched() {
    let dev = device();
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let out = filled(&dev, 16, SENTINEL_F32);
    run_block_sparse(&dev, &x, &[1, 0, 1, 0], &out, 4);
    let got: Vec<f32> = ok(dev.download(&out));
    for (i, g) in got.iter().enumerate() {
        let want = if (i / 4) % 2 == 0 {
            2.0 * i as f32
        } else {
            SENTINEL_F32
        };
        assert_eq!(*g, want, "index {i}");
    }
}

#[test]
fn block_sparse_random() {
    let dev = device();
    let mut rng = Rng::new(92);
    let n = 8 * 6 + 3;
    let x = rng.vec_f32(n, -3.0, 3.0);
    let flags: Vec<i32> = (0..n.div_ceil(8)).map(|_| rng.int(0, 1) as i32).collect();
    let out = filled(&dev, n, SENTINEL_F32);
    run_block_sparse(&dev, &x, &flags, &out, 8);
    let got: Vec<f32> = ok(dev.download(&out));
    let want: Vec<f32> = (0..n)
        .map(|i| {
            if flags[i / 8] != 0 {
                2.0 * x[i]
            } else {
                SENTINEL_F32
            }
        })
        .collect();
    assert_eq!(got, want, "flags {flags:?}");
}

fn run_ragged(dev: &Device, padded: &[f32], lengths: &[i32], width: usize) -> Vec<f32> {
    let m = module("ch9_masks.py", CH9);
    let k = ok(m.kernel("ragged_row_sum_kernel"));
    let xb = ok(dev.upload(padded));
    let lb = ok(dev.upload(lengths));
    let out = poisoned_f32(dev, lengths.len());
    ok(k.launch(dev, lengths.len() as u32)
        .arg(&xb)
        .arg(&lb)
        .arg(&out)
        .arg(width as i32)
        .constexpr("MAX_WIDTH", width)
        .run());
    ok(dev.download(&out))
}

#[test]
fn ragged_row_sums_seed() {
    let dev = device();
    #[rustfmt::skip]
    let padded = [
        1.0, 2.0, 3.0, 4.0,
        10.0, 20.0, 999.0, 999.0,
        5.0, 5.0, 5.0, 999.0,
    ];
    assert_eq!(
        run_ragged(&dev, &padded, &[4, 2, 3], 4),
        vec![10.0, 30.0, 15.0]
    );
}

#[test]
fn ragged_row_sums_random() {
    let dev = device();
    let mut rng = Rng::new(93);
    let (rows, width) = (7usize, 16usize);
    let lengths: Vec<i32> = (0..rows).map(|_| rng.int(0, width as i64) as i32).collect();
    let mut padded = vec![1.0e6f32; rows * width];
    let mut want = vec![0.0f64; rows];
    for r in 0..rows {
        for c in 0..lengths[r] as usize {
            let v = rng.int(-100, 100) as f32 / 4.0; // exact sums
            padded[r * width + c] = v;
            want[r] += v as f64;
        }
    }
    let got = run_ragged(&dev, &padded, &lengths, width);
    assert_eq!(to_f64(&got), want, "lengths {lengths:?}");
}

#[test]
fn host_code_is_skipped() {
    for (name, src, kernels) in [
        (
            "ch9_masks.py",
            CH9,
            &[
                "causal_mask_kernel",
                "wrong_causal_mask_kernel",
                "block_sparse_double_kernel",
                "ragged_row_sum_kernel",
            ][..],
        ),
        (
            "ch7_broadcasting.py",
            CH7_BCAST,
            &[
                "broadcast_add_kernel",
                "bad_broadcast_kernel",
                "forgot_none_kernel",
            ][..],
        ),
    ] {
        assert!(src.contains("import torch") && src.contains("if __name__ == \"__main__\":"));
        let m = module(name, src);
        assert_eq!(
            m.kernel_names(),
            kernels.iter().map(|s| s.to_string()).collect::<Vec<_>>()
        );
        for k in kernels {
            ok(m.kernel(k));
        }
        for host in ["main", "demo_broadcasting", "torch", "triton"] {
            if let Err(e) = m.kernel(host) {
                assert_eq!(e.kind, ErrorKind::Name, "{}", e.render());
            } else {
                panic!("host function `{host}` must not be a kernel");
            }
        }
    }
}

// ---------------------------------------------------------------- lesson 4

fn l4() -> Module {
    module("lesson4_block_ptr.py", L4)
}

fn run_matmul_l4(
    kernel: &str,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk): (u32, u32, u32),
    seed: u64,
) {
    let dev = device();
    let module = l4();
    let kern = ok(module.kernel(kernel));
    let mut rng = Rng::new(seed);
    let a = rng.vec_f32(m * k, -1.0, 1.0);
    let b = rng.vec_f32(k * n, -1.0, 1.0);
    let want = matmul_ref(&to_f64(&a), &to_f64(&b), m, n, k);
    let b_arg: Vec<f32> = if kernel == "matmul_bt_kernel" {
        // B^T stored row-major: (N, K).
        (0..n * k).map(|i| b[(i % k) * n + i / k]).collect()
    } else {
        b.clone()
    };
    let ab = ok(dev.upload(&a));
    let bb = ok(dev.upload(&b_arg));
    // A sentinel tail after C catches stores past (M, N).
    let c = filled(&dev, m * n + 64, POISON_F32);
    let grid = (
        m.div_ceil(bm as usize) as u32,
        n.div_ceil(bn as usize) as u32,
    );
    ok(kern
        .launch(&dev, grid)
        .arg(&ab)
        .arg(&bb)
        .arg(c.slice(0..m * n))
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .constexpr("N_ITERS", k.div_ceil(bk as usize))
        .constexpr("BLOCK_M", bm)
        .constexpr("BLOCK_N", bn)
        .constexpr("BLOCK_K", bk)
        .run());
    let got: Vec<f32> = ok(dev.download(&c));
    assert_close(&format!("{kernel} {m}x{n}x{k}"), &got[..m * n], &want, 1e-5);
    assert!(got[m * n..].iter().all(|v| v.is_nan()), "store past C");
}

#[test]
fn block_ptr_matmul_ragged() {
    run_matmul_l4("matmul_bp_kernel", (70, 45, 33), (16, 16, 16), 401);
    run_matmul_l4("matmul_bp_kernel", (19, 23, 41), (16, 8, 16), 402);
}

#[test]
fn block_ptr_matmul_b_transposed() {
    run_matmul_l4("matmul_bt_kernel", (70, 45, 33), (16, 16, 16), 403);
    run_matmul_l4("matmul_bt_kernel", (9, 30, 17), (8, 16, 8), 404);
}

#[test]
fn block_ptr_row_copy_ragged() {
    let dev = device();
    let k = ok(l4().kernel("row_copy_bp_kernel"));
    let mut rng = Rng::new(405);
    let n = 3 * 128 + 77;
    let x = rng.vec_f32(n, -100.0, 100.0);
    let xb = ok(dev.upload(&x));
    let out = filled(&dev, n + 32, SENTINEL_F32);
    ok(k.launch(&dev, n.div_ceil(128) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 128)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    assert_eq!(&got[..n], &x[..]);
    assert!(
        got[n..].iter().all(|&v| v == SENTINEL_F32),
        "boundary_check let a store past N"
    );
}

#[test]
fn block_ptr_softmax_manual_mask() {
    let dev = device();
    let k = ok(l4().kernel("softmax_bp_kernel"));
    let mut rng = Rng::new(406);
    let (m, n) = (13usize, 45usize);
    let x = rng.vec_f32(m * n, -4.0, 4.0);
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(&dev, m * n);
    ok(k.launch(&dev, m.div_ceil(4) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(m as i32)
        .arg(n as i32)
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 64)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    assert_close("softmax_bp", &got, &softmax_ref(&to_f64(&x), m, n), 1e-5);
}

#[test]
fn fused_swiglu_seed() {
    let dev = device();
    let k = ok(l4().kernel("swiglu_kernel"));
    let mut rng = Rng::new(407);
    let n = 4 * 256 + 3;
    let g = rng.vec_f32(n, -6.0, 6.0);
    let u = rng.vec_f32(n, -2.0, 2.0);
    let (gb, ub) = (ok(dev.upload(&g)), ok(dev.upload(&u)));
    let out = poisoned_f32(&dev, n);
    ok(k.launch(&dev, n.div_ceil(256) as u32)
        .arg(&gb)
        .arg(&ub)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 256)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    assert_close("swiglu", &got, &swiglu_ref(&to_f64(&g), &to_f64(&u)), 1e-5);
}

/// A false hint that no access is widened with (Triton's persistent-matmul tutorial
/// hints `tl.where(offs < M, offs, 0)` as contiguous multiples of the block, along the
/// rows of a row-major operand) is a warning in checked mode, and the kernel runs; a
/// false hint that widens an access is an error (issue 14).
#[test]
fn checked_mode_warns_about_false_hints_no_access_uses() {
    const SRC: &str = r#"
import triton
import triton.language as tl

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
def columns_lied(x_ptr, out_ptr, K: tl.constexpr):
    cols = tl.arange(0, K)
    perm = (cols * 5) % K
    perm = tl.max_contiguous(tl.multiple_of(perm, 4), 4)
    tl.store(out_ptr + cols, tl.load(x_ptr + perm))
"#;
    let dev = Device::interpreter_checked();
    let m = module("hints.py", SRC);
    let (rows, k) = (10usize, 16usize);
    let x: Vec<f32> = (0..rows * k).map(|i| i as f32).collect();
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(&dev, rows * k);
    ok(ok(m.kernel("rows_clamped"))
        .launch(&dev, 2)
        .arg(&xb)
        .arg(&out)
        .arg(rows as i32)
        .constexpr("K", k as i64)
        .constexpr("BLOCK_M", 8)
        .run());
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(ok(dev.download::<f32>(&out)), want);
    let w = dev.take_warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].message.contains("false `max_contiguous` hint")
            || w[0].message.contains("false `multiple_of` hint"),
        "{}",
        w[0].render()
    );
    assert!(
        w[0].render().contains("cannot change a result"),
        "{}",
        w[0].render()
    );
    assert_eq!(
        w[0].line_col().map(|(l, _)| l),
        Some(line_col_of(SRC, "rows = tl.max_contiguous", 0).0)
    );
    assert!(dev.take_warnings().is_empty());
    // The lie that widens the load is an error.
    let e = err(ok(m.kernel("columns_lied"))
        .launch(&dev, 1)
        .arg(&xb)
        .arg(&out)
        .constexpr("K", k as i64)
        .run());
    assert_eq!(e.kind, ErrorKind::Runtime, "{}", e.render());
    assert!(
        e.render().contains("widen a memory access"),
        "{}",
        e.render()
    );
}
