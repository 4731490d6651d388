//! Interpreter: reductions (incl. argmax ties and NaN), scans, region combiners, the
//! seed's softmax, for/if/while, device_assert, checked-mode hints.

mod interp_support;
use interp_support::*;
use tilewise_core::diag::ErrorKind;
use tilewise_core::ir::*;

const R: u32 = 8;
const C: u32 = 16;

/// Loads an RxC f32 tile from x (row-major), returns (kernel builder, tile, 2-D offsets).
fn load_2d(k: &mut K, x: Value) -> (Value, Value) {
    let rows = k.arange(0, R as i64);
    let cols = k.arange(0, C as i64);
    let r2 = k.expand(rows, 1);
    let c2 = k.expand(cols, 0);
    let cc = k.konst(Const::Int(C as i64), DType::I32, &[R, 1]);
    let r2 = k.mul(r2, cc);
    let r2 = k.bcast(r2, &[R, C]);
    let c2 = k.bcast(c2, &[R, C]);
    let offs = k.add(r2, c2);
    let p = k.addptr(x, offs);
    (k.load(p, None, None), offs)
}

fn store_1d(k: &mut K, o: Value, v: Value) {
    let n = k.shape(v)[0];
    let ar = k.arange(0, n as i64);
    let p = k.addptr(o, ar);
    k.store(p, v, None);
}

#[test]
fn sums_and_maxes_along_each_axis() {
    let mut rng = Rng::new(41);
    let x = rng.vec_f32((R * C) as usize);
    for (axis, comb) in [
        (0, Combiner::Add),
        (1, Combiner::Add),
        (0, Combiner::Max),
        (1, Combiner::Min),
        (1, Combiner::Mul),
    ] {
        let mut k = K::new("red");
        let xp = k.ptr_param("x", DType::F32);
        let op = k.ptr_param("o", DType::F32);
        let (t, _) = load_2d(&mut k, xp);
        let r = k.reduce(t, axis, comb.clone());
        store_1d(&mut k, op, r);
        let k = k.finish();
        let outn = if axis == 0 { C } else { R } as usize;
        let mut bufs = vec![buf(&x), buf(&vec![f32::NAN; outn])];
        run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
        let got: Vec<f32> = read(&bufs[1]);
        for o in 0..outn {
            let vals: Vec<f64> = if axis == 0 {
                (0..R as usize)
                    .map(|i| x[i * C as usize + o] as f64)
                    .collect()
            } else {
                (0..C as usize)
                    .map(|j| x[o * C as usize + j] as f64)
                    .collect()
            };
            let want = match comb {
                Combiner::Add => vals.iter().sum::<f64>(),
                Combiner::Mul => vals.iter().product::<f64>(),
                Combiner::Max => vals.iter().cloned().fold(f64::NAN, f64::max),
                _ => vals.iter().cloned().fold(f64::NAN, f64::min),
            };
            assert!(
                (got[o] as f64 - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{comb:?} axis {axis} [{o}]: {} want {want}",
                got[o]
            );
        }
    }
}

#[test]
fn argmax_ties_go_to_the_smaller_index_and_nan_loses() {
    // Rows of small integers (many ties) and a NaN.
    let mut rng = Rng::new(42);
    let mut x: Vec<f32> = (0..R * C).map(|_| rng.i(0, 4) as f32).collect();
    x[3] = f32::NAN;
    x[C as usize] = f32::NAN;
    for comb in [Combiner::ArgMax, Combiner::ArgMin] {
        let mut k = K::new("argmax");
        let xp = k.ptr_param("x", DType::F32);
        let op = k.ptr_param("o", DType::I32);
        let (t, _) = load_2d(&mut k, xp);
        let cols = k.arange(0, C as i64);
        let c2 = k.expand(cols, 0);
        let idx = k.bcast(c2, &[R, C]);
        let (_, i) = k.reduce2(t, idx, 1, comb.clone());
        store_1d(&mut k, op, i);
        let k = k.finish();
        let mut bufs = vec![buf(&x), buf(&vec![-1i32; R as usize])];
        run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
        let got: Vec<i32> = read(&bufs[1]);
        for r in 0..R as usize {
            let row = &x[r * C as usize..(r + 1) * C as usize];
            let mut best = None::<(f32, usize)>;
            for (j, &v) in row.iter().enumerate() {
                if v.is_nan() {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some((b, _)) => {
                        if matches!(comb, Combiner::ArgMax) {
                            v > b
                        } else {
                            v < b
                        }
                    }
                };
                if better {
                    best = Some((v, j));
                }
            }
            assert_eq!(got[r], best.unwrap().1 as i32, "{comb:?} row {r}: {row:?}");
        }
    }
}

#[test]
fn scans_forward_reverse_and_region_combiner() {
    let x: Vec<i32> = (0..R * C).map(|i| (i as i32 * 37) % 11 - 5).collect();
    for reverse in [false, true] {
        for region in [false, true] {
            let mut k = K::new("scan");
            let xp = k.ptr_param("x", DType::I32);
            let op = k.ptr_param("o", DType::I32);
            let rows = k.arange(0, R as i64);
            let cols = k.arange(0, C as i64);
            let r2 = k.expand(rows, 1);
            let cc = k.konst(Const::Int(C as i64), DType::I32, &[R, 1]);
            let r2 = k.mul(r2, cc);
            let r2 = k.bcast(r2, &[R, C]);
            let c2 = k.expand(cols, 0);
            let c2 = k.bcast(c2, &[R, C]);
            let offs = k.add(r2, c2);
            let p = k.addptr(xp, offs);
            let t = k.load(p, None, None);
            let comb = if region {
                // combine(a, b) = a + b written as a region
                let args =
                    k.b.begin_block(vec![Type::scalar(DType::I32), Type::scalar(DType::I32)]);
                let s = k.add(args[0], args[1]);
                k.push0(Op::Yield(vec![s]));
                Combiner::Region(Box::new(k.b.end_block()))
            } else {
                Combiner::Add
            };
            let s = k.scan(t, 1, reverse, comb);
            let po = k.addptr(op, offs);
            k.store(po, s, None);
            let k = k.finish();
            let mut bufs = vec![buf(&x), buf(&vec![0x7777i32; (R * C) as usize])];
            run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
            let got: Vec<i32> = read(&bufs[1]);
            for r in 0..R as usize {
                let row = &x[r * C as usize..(r + 1) * C as usize];
                for j in 0..C as usize {
                    let want: i32 = if reverse {
                        row[j..].iter().sum()
                    } else {
                        row[..=j].iter().sum()
                    };
                    assert_eq!(
                        got[r * C as usize + j],
                        want,
                        "reverse {reverse} region {region} ({r},{j})"
                    );
                }
            }
        }
    }
}

#[test]
fn seed_softmax_with_where_max_exp_sum() {
    // softmax over rows of an M x N matrix (N < BLOCK_N), one program per row.
    const BN: u32 = 16;
    let (m, n) = (5usize, 11usize);
    let mut k = K::new("softmax_kernel");
    let x = k.ptr_param("x_ptr", DType::F32);
    let o = k.ptr_param("out_ptr", DType::F32);
    let nn = k.scalar_param("N", DType::I32);
    let row = k.pid(0);
    let base = k.mul(row, nn);
    let cols = k.arange(0, BN as i64);
    let base = k.splat(base, &[BN]);
    let offs = k.add(base, cols);
    let nsp = k.splat(nn, &[BN]);
    let mask = k.cmp(CmpPred::Lt, cols, nsp);
    let ninf = k.cf(f64::NEG_INFINITY, DType::F32, &[BN]);
    let px = k.addptr(x, offs);
    let t = k.load(px, Some(mask), Some(ninf));
    let t = k.select(mask, t, ninf);
    let mx = k.reduce(t, 0, Combiner::Max);
    let mx = k.splat(mx, &[BN]);
    let d = k.bin(BinaryOp::Sub, t, mx);
    let p = k.un(UnaryOp::Exp, d);
    let l = k.reduce(p, 0, Combiner::Add);
    let l = k.splat(l, &[BN]);
    let out = k.bin(BinaryOp::Div, p, l);
    let po = k.addptr(o, offs);
    k.store(po, out, Some(mask));
    let k = k.finish();
    let mut rng = Rng::new(43);
    let xs: Vec<f32> = (0..m * n).map(|_| rng.f(-5.0, 5.0) as f32).collect();
    let mut bufs = vec![buf(&xs), buf(&vec![f32::NAN; m * n])];
    run(
        &k,
        m as u32,
        &[whole(0, &bufs[0]), whole(1, &bufs[1]), i32s(n as i32)],
        &mut bufs,
    )
    .unwrap();
    let got: Vec<f32> = read(&bufs[1]);
    for r in 0..m {
        let row = &xs[r * n..(r + 1) * n];
        let mx = row.iter().cloned().fold(f64::NAN as f32, f32::max) as f64;
        let s: f64 = row.iter().map(|&v| (v as f64 - mx).exp()).sum();
        for j in 0..n {
            let want = (row[j] as f64 - mx).exp() / s;
            assert!((got[r * n + j] as f64 - want).abs() < 1e-6, "({r},{j})");
        }
    }
}

/// out[0] = sum over range(lo, hi, step) of iv, computed in a for loop; out[1] from an
/// if on the sign of the sum; out[2] the number of halvings of hi until 0 (while).
fn control_kernel() -> Kernel {
    let mut k = K::new("control");
    let o = k.ptr_param("o", DType::I32);
    let lo = k.scalar_param("lo", DType::I32);
    let hi = k.scalar_param("hi", DType::I32);
    let step = k.scalar_param("step", DType::I32);
    let zero = k.ci32(0);
    let sum = k.for_loop(lo, hi, step, &[zero], |k, iv, c| vec![k.add(c[0], iv)])[0];
    let zero2 = k.ci32(0);
    let pos = k.cmp(CmpPred::Gt, sum, zero2);
    let sign = k.if_else(
        pos,
        vec![Type::scalar(DType::I32)],
        |k| vec![k.ci32(1)],
        |k| vec![k.ci32(-1)],
    )[0];
    let z3 = k.ci32(0);
    let absd = k.un(UnaryOp::Abs, hi);
    let cnt = k.while_loop(
        &[absd, z3],
        |k, a| {
            let z = k.ci32(0);
            let c = k.cmp(CmpPred::Gt, a[0], z);
            (c, a.to_vec())
        },
        |k, a| {
            let two = k.ci32(2);
            let one = k.ci32(1);
            vec![k.bin(BinaryOp::Div, a[0], two), k.add(a[1], one)]
        },
    )[1];
    let (i0, i1, i2) = (k.ci32(0), k.ci32(1), k.ci32(2));
    for (i, v) in [(i0, sum), (i1, sign), (i2, cnt)] {
        let p = k.addptr(o, i);
        k.store(p, v, None);
    }
    k.finish()
}

#[test]
fn for_if_while_follow_python_semantics() {
    let k = control_kernel();
    for (lo, hi, step) in [
        (0, 10, 1),
        (3, 17, 4),
        (10, 0, -1),
        (10, -7, -3),
        (5, 5, 1),
        (5, 0, 1),
        (-3, 3, 2),
    ] {
        let mut bufs = vec![buf(&[0x0BAD_F00Di32; 3])];
        run(
            &k,
            1,
            &[whole(0, &bufs[0]), i32s(lo), i32s(hi), i32s(step)],
            &mut bufs,
        )
        .unwrap();
        let want_sum: i32 = if step > 0 {
            (lo..hi).step_by(step as usize).sum()
        } else {
            (hi + 1..=lo).rev().step_by((-step) as usize).sum()
        };
        let mut h = hi.abs();
        let mut cnt = 0;
        while h > 0 {
            h /= 2;
            cnt += 1;
        }
        assert_eq!(
            read::<i32>(&bufs[0]),
            vec![want_sum, if want_sum > 0 { 1 } else { -1 }, cnt],
            "range({lo}, {hi}, {step})"
        );
    }
    let mut bufs = vec![buf(&[0i32; 3])];
    let e = run(
        &k,
        1,
        &[whole(0, &bufs[0]), i32s(0), i32s(5), i32s(0)],
        &mut bufs,
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert!(e.message.contains("step 0"), "{}", e.message);
}

#[test]
fn device_assert_fails_the_launch_with_its_message() {
    let mut k = K::new("asserting");
    let ar = k.arange(0, 8);
    let pid = k.pid(0);
    let pid = k.splat(pid, &[8]);
    let s = k.add(ar, pid);
    let lim = k.konst(Const::Int(9), DType::I32, &[8]);
    let c = k.cmp(CmpPred::Lt, s, lim);
    let line = k.next_line();
    k.push0(Op::DeviceAssert {
        cond: c,
        message: "x < 9".into(),
    });
    let k = k.finish();
    let e = run(&k, 3, &[], &mut []).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(e.message, format!("device assertion failed in kernel `asserting` (line {line}), program (2, 0, 0): `x < 9` is false at element (7)"));
}

#[test]
fn checked_mode_verifies_hints() {
    // The seeds' truthful hint (pid * BLOCK + arange, multiple_of BLOCK, max_contiguous
    // BLOCK) passes; arange + 3 with multiple_of(BLOCK) is reported when the hinted
    // offsets feed a load (the lowering would widen it), and is only a warning when no
    // access uses them (`access: false`).
    let build = |lie: bool, access: bool| {
        let mut k = K::new("hinted_kernel");
        let xp = k.ptr_param("x", DType::F32);
        let op = k.ptr_param("o", DType::F32);
        let ar = k.arange(0, 8);
        let offs = if lie {
            let three = k.konst(Const::Int(3), DType::I32, &[8]);
            k.add(ar, three)
        } else {
            let pid = k.pid(0);
            let b = k.ci32(8);
            let base = k.mul(pid, b);
            let base = k.splat(base, &[8]);
            k.add(base, ar)
        };
        let line = k.next_line();
        let h = k.push1(
            Op::Hint {
                value: offs,
                hint: HintKind::MultipleOf(vec![8]),
            },
            Type::tile(DType::I32, vec![8]),
        );
        let h = k.push1(
            Op::Hint {
                value: h,
                hint: HintKind::MaxContiguous(vec![8]),
            },
            Type::tile(DType::I32, vec![8]),
        );
        let src = if access { h } else { ar };
        let p = k.addptr(xp, src);
        let v = k.load(p, None, None);
        let q = k.addptr(op, ar);
        k.store(q, v, None);
        let mut k = k.finish();
        // x is 16-byte aligned (as a launch specializes it), so the alignment the hint
        // claims would let the lowering read it four elements at a time.
        k.params[0].divisibility = 4;
        (k, line)
    };
    let mut bufs = vec![buf(&[1f32; 40]), buf(&[0f32; 8])];
    let args = [whole(0, &bufs[0]), whole(1, &bufs[1])];
    let (k, _) = build(false, true);
    run_checked(&k, 4, &args, &mut bufs).unwrap();
    let (k, line) = build(true, true);
    run(&k, 1, &args, &mut bufs).unwrap();
    let e = run_checked(&k, 1, &args, &mut bufs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Runtime);
    assert_eq!(
        e.message,
        format!("false `multiple_of` hint in kernel `hinted_kernel` (line {line}), program (0, 0, 0): element (0) is 3, which starts a run and is not a multiple of 8")
    );
    let (k, _) = build(true, false);
    run_checked(&k, 1, &args, &mut bufs).unwrap();
}

#[test]
fn permute_and_reshape_are_row_major() {
    // out = reshape(trans(x as 8x16), 16x8) written densely: out[j*8+i] = x[i*16+j].
    let mut k = K::new("trans");
    let xp = k.ptr_param("x", DType::F32);
    let op = k.ptr_param("o", DType::F32);
    let (t, _) = load_2d(&mut k, xp);
    let tt = k.permute(t, &[1, 0]);
    let flat = k.reshape(tt, &[R * C]);
    let ar = k.arange(0, (R * C) as i64);
    let p = k.addptr(op, ar);
    k.store(p, flat, None);
    let k = k.finish();
    let mut rng = Rng::new(44);
    let x = rng.vec_f32((R * C) as usize);
    let mut bufs = vec![buf(&x), buf(&vec![f32::NAN; (R * C) as usize])];
    run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
    let got: Vec<f32> = read(&bufs[1]);
    for i in 0..R as usize {
        for j in 0..C as usize {
            assert_eq!(got[j * R as usize + i], x[i * C as usize + j]);
        }
    }
}
