//! Interpreter: block pointers (boundary_check per dimension, zero/NaN padding,
//! advance, checked stores, out-of-bounds on unchecked dims, checked-mode extent) and
//! `dot` in the seed's block-pointer matmul.

mod interp_support;
use interp_support::*;
use tilewise_core::diag::ErrorKind;
use tilewise_core::interp::RtArg;
use tilewise_core::ir::*;

/// copy(x, out, M, N, off_m, off_n): loads a BMxBN tile of the MxN matrix x at
/// (off_m, off_n) with `bc`/`pad` and stores it densely into out (BMxBN).
fn tile_copy(bm: u32, bn: u32, bc: &[u32], pad: Padding) -> Kernel {
    let mut k = K::new("tile_copy");
    let x = k.ptr_param("x", DType::F32);
    let o = k.ptr_param("out", DType::F32);
    let m = k.scalar_param("M", DType::I64);
    let n = k.scalar_param("N", DType::I64);
    let om = k.scalar_param("off_m", DType::I32);
    let on = k.scalar_param("off_n", DType::I32);
    let one = k.ci64(1);
    let bp = k.block_ptr(x, &[m, n], &[n, one], &[om, on], &[bm, bn], &[1, 0]);
    let t = k.bload(bp, bc, pad);
    let (bm64, bn64, z) = (k.ci64(bm as i64), k.ci64(bn as i64), k.ci32(0));
    let bo = k.block_ptr(o, &[bm64, bn64], &[bn64, one], &[z, z], &[bm, bn], &[1, 0]);
    k.bstore(bo, t, &[]);
    k.finish()
}

#[test]
fn block_loads_pad_checked_dims_and_read_unchecked_ones() {
    let (m, n) = (5i64, 7i64);
    let (bm, bn) = (4u32, 4u32);
    // A large buffer so that lanes out of range only on unchecked dims still read memory.
    let mut rng = Rng::new(31);
    let data: Vec<f32> = (0..200).map(|_| rng.f(1.0, 2.0) as f32).collect();
    for bc in [vec![], vec![0], vec![1], vec![0, 1]] {
        for pad in [Padding::None, Padding::Zero, Padding::Nan] {
            for (om, on) in [(0, 0), (3, 5), (-2, 1), (4, -3)] {
                let k = tile_copy(bm, bn, &bc, pad);
                let mut bufs = vec![buf(&data), buf(&vec![-77f32; (bm * bn) as usize])];
                // Shift the view so that negative offsets stay inside the buffer.
                let args = [
                    RtArg::Buffer {
                        buffer: 0,
                        offset: 50,
                        len: 150,
                    },
                    whole(1, &bufs[1]),
                    RtArg::Scalar(tilewise_core::launch::ScalarValue::Int(DType::I64, m)),
                    RtArg::Scalar(tilewise_core::launch::ScalarValue::Int(DType::I64, n)),
                    i32s(om),
                    i32s(on),
                ];
                let res = run(&k, 1, &args, &mut bufs);
                let got: Vec<f32> = read(&bufs[1]);
                let mut oob_expected = false;
                for i in 0..bm as i64 {
                    for j in 0..bn as i64 {
                        let (r, c) = (om as i64 + i, on as i64 + j);
                        let out_r = !(0..m).contains(&r) && bc.contains(&0);
                        let out_c = !(0..n).contains(&c) && bc.contains(&1);
                        let addr = r * n + c;
                        let want = if out_r || out_c {
                            if pad == Padding::Nan {
                                f32::NAN
                            } else {
                                0.0
                            }
                        } else if !(0..150).contains(&addr) {
                            oob_expected = true;
                            continue;
                        } else {
                            data[(50 + addr) as usize]
                        };
                        if res.is_ok() {
                            let g = got[(i * bn as i64 + j) as usize];
                            assert!(g == want || (g.is_nan() && want.is_nan()), "bc {bc:?} pad {pad:?} at ({om},{on}) lane ({i},{j}): {g} want {want}");
                        }
                    }
                }
                match res {
                    Ok(()) => assert!(
                        !oob_expected,
                        "bc {bc:?} ({om},{on}): expected an out-of-bounds error"
                    ),
                    Err(e) => {
                        assert!(oob_expected, "bc {bc:?} ({om},{on}): {e}");
                        assert_eq!(e.kind, ErrorKind::Runtime);
                        assert!(
                            e.message
                                .starts_with("out-of-bounds load in kernel `tile_copy`"),
                            "{}",
                            e.message
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn block_stores_skip_checked_out_of_range_lanes() {
    // Store a 4x4 tile of ones at (3, 5) of a 5x7 output with boundary_check=(0, 1).
    let mut k = K::new("bstore");
    let o = k.ptr_param("out", DType::I32);
    let (m, n, one) = (k.ci64(5), k.ci64(7), k.ci64(1));
    let (r, c) = (k.ci32(3), k.ci32(5));
    let bp = k.block_ptr(o, &[m, n], &[n, one], &[r, c], &[4, 4], &[1, 0]);
    let ones = k.konst(Const::Int(1), DType::I32, &[4, 4]);
    k.bstore(bp, ones, &[0, 1]);
    let k = k.finish();
    let mut bufs = vec![buf(&[0xDEADBEEFu32 as i32; 40])];
    run(&k, 1, &[whole(0, &bufs[0])], &mut bufs).unwrap();
    let got: Vec<i32> = read(&bufs[0]);
    for (a, &v) in got.iter().enumerate() {
        let (i, j) = (a as i64 / 7, a as i64 % 7);
        let inside = a < 35 && (3..5).contains(&i) && (5..7).contains(&j);
        assert_eq!(
            v,
            if inside { 1 } else { 0xDEADBEEFu32 as i32 },
            "address {a}"
        );
    }
}

#[test]
fn checked_mode_reports_block_pointers_past_their_buffer() {
    // The seed's "lie": shape (4, 3) with strides (3, 1) over a 12-element buffer is
    // fine; shape (4, 4) with strides (4, 1) over 12 elements reaches element 15.
    let k = tile_copy(4, 4, &[0, 1], Padding::Zero);
    let data: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let s64 = |v: i64| RtArg::Scalar(tilewise_core::launch::ScalarValue::Int(DType::I64, v));
    let mut bufs = vec![buf(&data), buf(&[0f32; 16])];
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        s64(3),
        s64(4),
        i32s(0),
        i32s(0),
    ];
    run_checked(&k, 1, &args, &mut bufs).unwrap();
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        s64(4),
        s64(4),
        i32s(0),
        i32s(0),
    ];
    run(&k, 1, &args, &mut bufs).unwrap_err(); // unchecked: a real OOB read at lane (3, 0)
    let e = run_checked(&k, 1, &args, &mut bufs).unwrap_err();
    assert!(
        e.message
            .starts_with("block pointer reaches past its buffer in kernel `tile_copy`"),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("covers element index 15, outside a buffer of 12 elements (argument `x`)"),
        "{}",
        e.message
    );
}

/// The seed's matmul_bp_kernel: C = A @ B with block pointers and a K loop.
pub fn matmul_kernel(bm: u32, bn: u32, bk: u32, dt: DType) -> Kernel {
    let mut k = K::new("matmul_bp_kernel");
    let a = k.ptr_param("a_ptr", dt);
    let b = k.ptr_param("b_ptr", dt);
    let c = k.ptr_param("c_ptr", DType::F32);
    let mm = k.scalar_param("M", DType::I64);
    let nn = k.scalar_param("N", DType::I64);
    let kk = k.scalar_param("K", DType::I64);
    let iters = k.scalar_param("N_ITERS", DType::I32);
    let pm = k.pid(0);
    let pn = k.pid(1);
    let (cbm, cbn, one, zero) = (k.ci32(bm as i64), k.ci32(bn as i64), k.ci64(1), k.ci32(0));
    let om = k.mul(pm, cbm);
    let on = k.mul(pn, cbn);
    let pa = k.block_ptr(a, &[mm, kk], &[kk, one], &[om, zero], &[bm, bk], &[1, 0]);
    let pb = k.block_ptr(b, &[kk, nn], &[nn, one], &[zero, on], &[bk, bn], &[1, 0]);
    let pc = k.block_ptr(c, &[mm, nn], &[nn, one], &[om, on], &[bm, bn], &[1, 0]);
    let acc = k.cf(0.0, DType::F32, &[bm, bn]);
    let (lo, step) = (k.ci32(0), k.ci32(1));
    let out = k.for_loop(lo, iters, step, &[acc, pa, pb], |k, _iv, c| {
        let at = k.bload(c[1], &[0, 1], Padding::Zero);
        let bt = k.bload(c[2], &[0, 1], Padding::Zero);
        let acc = k.dot(at, bt, c[0]);
        let bkc = k.ci32(bk as i64);
        let z = k.ci32(0);
        let na = k.advance(c[1], &[z, bkc]);
        let nb = k.advance(c[2], &[bkc, z]);
        vec![acc, na, nb]
    });
    k.bstore(pc, out[0], &[0, 1]);
    k.finish()
}

fn run_matmul(
    m: usize,
    n: usize,
    kd: usize,
    (bm, bn, bk): (u32, u32, u32),
) -> (Vec<f32>, Vec<f64>) {
    let mut rng = Rng::new((m * 131 + n * 17 + kd) as u64);
    let a = rng.vec_f32(m * kd);
    let b = rng.vec_f32(kd * n);
    let k = matmul_kernel(bm, bn, bk, DType::F32);
    let mut bufs = vec![buf(&a), buf(&b), buf(&vec![f32::NAN; m * n])];
    let s64 = |v: usize| {
        RtArg::Scalar(tilewise_core::launch::ScalarValue::Int(
            DType::I64,
            v as i64,
        ))
    };
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        s64(m),
        s64(n),
        s64(kd),
        i32s(kd.div_ceil(bk as usize) as i32),
    ];
    let grid = [
        m.div_ceil(bm as usize) as u32,
        n.div_ceil(bn as usize) as u32,
    ];
    let t = std::time::Instant::now();
    run(&k, grid, &args, &mut bufs).unwrap();
    eprintln!(
        "matmul {m}x{n}x{kd} blocks {bm}x{bn}x{bk}: {:?}",
        t.elapsed()
    );
    let mut want = vec![0f64; m * n];
    for i in 0..m {
        for p in 0..kd {
            for j in 0..n {
                want[i * n + j] += a[i * kd + p] as f64 * b[p * n + j] as f64;
            }
        }
    }
    (read(&bufs[2]), want)
}

#[test]
fn ragged_block_pointer_matmul_matches_f64_reference() {
    for (m, n, kd, blocks) in [
        (70, 50, 45, (16, 16, 16)),
        (33, 65, 17, (32, 32, 8)),
        (8, 8, 8, (16, 16, 16)),
    ] {
        let (got, want) = run_matmul(m, n, kd, blocks);
        for i in 0..m * n {
            let tol = 1e-5 * (kd as f64).sqrt() * 4.0;
            assert!(
                (got[i] as f64 - want[i]).abs() <= tol,
                "{m}x{n}x{kd} element {i}: {} want {}",
                got[i],
                want[i]
            );
        }
    }
}

#[test]
fn f16_dot_accumulates_in_f32() {
    let (m, n, kd) = (16usize, 16usize, 64usize);
    let mut rng = Rng::new(5);
    let a: Vec<half::f16> = (0..m * kd)
        .map(|_| half::f16::from_f64(rng.f(-1.0, 1.0)))
        .collect();
    let b: Vec<half::f16> = (0..kd * n)
        .map(|_| half::f16::from_f64(rng.f(-1.0, 1.0)))
        .collect();
    let k = matmul_kernel(16, 16, 32, DType::F16);
    let mut bufs = vec![buf(&a), buf(&b), buf(&vec![f32::NAN; m * n])];
    let s64 = |v: usize| {
        RtArg::Scalar(tilewise_core::launch::ScalarValue::Int(
            DType::I64,
            v as i64,
        ))
    };
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        s64(m),
        s64(n),
        s64(kd),
        i32s(2),
    ];
    run(&k, [1u32, 1], &args, &mut bufs).unwrap();
    let got: Vec<f32> = read(&bufs[2]);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..kd)
                .map(|p| a[i * kd + p].to_f64() * b[p * n + j].to_f64())
                .sum();
            assert!(
                (got[i * n + j] as f64 - want).abs() < 1e-5,
                "{} vs {want}",
                got[i * n + j]
            );
        }
    }
}

/// Perf sanity (run with `cargo test --release -- --ignored --nocapture`): the
/// 512^3 f32 block-pointer matmul with 64x64x32 blocks.
#[test]
#[ignore]
fn perf_matmul_512() {
    let (got, want) = run_matmul(512, 512, 512, (64, 64, 32));
    for i in 0..512 * 512 {
        assert!((got[i] as f64 - want[i]).abs() < 1e-3);
    }
}
