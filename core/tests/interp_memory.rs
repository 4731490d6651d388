//! Interpreter: loads and stores through pointer tiles: masks, `other`, sentinels,
//! out-of-bounds errors, buffer views, launch checks.

mod interp_support;
use interp_support::*;
use tilewise_core::diag::ErrorKind;
use tilewise_core::interp::RtArg;
use tilewise_core::ir::*;

/// add_kernel(x_ptr, y_ptr, out_ptr, n) with BLOCK lanes per program, masked.
fn add_kernel(block: u32, masked: bool) -> (tilewise_core::ir::Kernel, u32) {
    let mut k = K::new("add_kernel");
    let x = k.ptr_param("x_ptr", DType::F32);
    let y = k.ptr_param("y_ptr", DType::F32);
    let o = k.ptr_param("out_ptr", DType::F32);
    let n = k.scalar_param("n", DType::I32);
    let (offs, mask) = offsets_and_mask(&mut k, block, n);
    let m = masked.then_some(mask);
    let px = k.addptr(x, offs);
    let load_line = k.next_line();
    let a = k.load(px, m, None);
    let py = k.addptr(y, offs);
    let b = k.load(py, m, None);
    let s = k.add(a, b);
    let po = k.addptr(o, offs);
    k.store(po, s, m);
    (k.finish(), load_line)
}

#[test]
fn masked_vector_add_leaves_masked_lanes_untouched() {
    let mut rng = Rng::new(1);
    let n = 1000usize;
    let block = 64u32;
    let (k, _) = add_kernel(block, true);
    let x = rng.vec_f32(n);
    let y = rng.vec_f32(n);
    // The output is longer than n and poisoned: lanes past n must stay NaN.
    let out = vec![f32::NAN; n + 100];
    let mut bufs = vec![buf(&x), buf(&y), buf(&out)];
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        i32s(n as i32),
    ];
    let grid = n.div_ceil(block as usize) as u32;
    run(&k, grid, &args, &mut bufs).unwrap();
    let got: Vec<f32> = read(&bufs[2]);
    for i in 0..n {
        assert_eq!(got[i], x[i] + y[i], "element {i}");
    }
    assert!(
        got[n..].iter().all(|v| v.is_nan()),
        "masked lanes were written"
    );
}

#[test]
fn unmasked_out_of_bounds_load_is_a_located_runtime_error() {
    let (k, load_line) = add_kernel(64, false);
    let mut rng = Rng::new(2);
    let n = 1000usize;
    let mut bufs = vec![
        buf(&rng.vec_f32(n)),
        buf(&rng.vec_f32(n)),
        buf(&vec![0f32; n]),
    ];
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        i32s(n as i32),
    ];
    let err = run(&k, 16, &args, &mut bufs).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Runtime);
    let want = format!(
        "out-of-bounds load in kernel `add_kernel` (line {load_line}), program (15, 0, 0): element index 1000 of a buffer of 1000 elements (argument `x_ptr`)"
    );
    assert_eq!(err.message, want);
    assert_eq!(err.line(), Some(load_line));
    let rendered = err.render();
    assert!(rendered.contains("lane (40) of the 64 tile"), "{rendered}");
    // Programs 0..=14 ran and stored their results before the failing program.
    let got: Vec<f32> = read(&bufs[2]);
    assert!(got[..960].iter().all(|v| *v != 0.0));
}

#[test]
fn views_bound_accesses_and_index_from_their_offset() {
    // x is a view of elements [10, 74) of a 100-element buffer.
    let mut k = K::new("copy");
    let x = k.ptr_param("x", DType::I32);
    let o = k.ptr_param("o", DType::I32);
    let ar = k.arange(0, 64);
    let px = k.addptr(x, ar);
    let v = k.load(px, None, None);
    let po = k.addptr(o, ar);
    k.store(po, v, None);
    let k = k.finish();
    let data: Vec<i32> = (0..100).map(|i| i * 7 - 300).collect();
    let mut bufs = vec![buf(&data), buf(&vec![0xDEADBEEFu32 as i32; 64])];
    let args = [
        RtArg::Buffer {
            buffer: 0,
            offset: 10,
            len: 64,
        },
        whole(1, &bufs[1]),
    ];
    run(&k, 1, &args, &mut bufs).unwrap();
    assert_eq!(read::<i32>(&bufs[1]), data[10..74].to_vec());
    // A view one element too short: lane 63 is out of bounds.
    let args = [
        RtArg::Buffer {
            buffer: 0,
            offset: 10,
            len: 63,
        },
        whole(1, &bufs[1]),
    ];
    let err = run(&k, 1, &args, &mut bufs).unwrap_err();
    assert!(
        err.message
            .contains("element index 63 of a buffer of 63 elements (argument `x`)"),
        "{}",
        err.message
    );
}

#[test]
fn masked_load_gives_other_and_masked_store_writes_nothing() {
    // out[i] = load(x + i, mask = i % 3 != 0, other = -1) stored with mask i % 2 == 0
    let mut k = K::new("masks");
    let x = k.ptr_param("x", DType::F16);
    let o = k.ptr_param("o", DType::F16);
    let ar = k.arange(0, 32);
    let three = k.konst(Const::Int(3), DType::I32, &[32]);
    let two = k.konst(Const::Int(2), DType::I32, &[32]);
    let zero = k.konst(Const::Int(0), DType::I32, &[32]);
    let r3 = k.bin(BinaryOp::Rem, ar, three);
    let m1 = k.cmp(CmpPred::Ne, r3, zero);
    let r2 = k.bin(BinaryOp::Rem, ar, two);
    let m2 = k.cmp(CmpPred::Eq, r2, zero);
    let other = k.cf(-1.0, DType::F16, &[32]);
    // Offsets past the buffer end on masked-off lanes are never checked: i * 3 - 60
    // is negative for small i, but those lanes (i < 20) are masked off below.
    let big = k.konst(Const::Int(20), DType::I32, &[32]);
    let m3 = k.cmp(CmpPred::Ge, ar, big);
    let m = k.bin(BinaryOp::And, m1, m3);
    let sub = k.konst(Const::Int(20), DType::I32, &[32]);
    let offs = k.bin(BinaryOp::Sub, ar, sub);
    let px = k.addptr(x, offs);
    let v = k.load(px, Some(m), Some(other));
    let po = k.addptr(o, ar);
    k.store(po, v, Some(m2));
    let k = k.finish();
    let xs: Vec<half::f16> = (0..12)
        .map(|i| half::f16::from_f32(i as f32 + 0.5))
        .collect();
    let sentinel = half::f16::from_f32(1234.0);
    let mut bufs = vec![buf(&xs), buf(&[sentinel; 32])];
    run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
    let got: Vec<half::f16> = read(&bufs[1]);
    for (i, g) in got.iter().enumerate() {
        let want = if i % 2 != 0 {
            1234.0
        } else if i >= 20 && i % 3 != 0 {
            (i - 20) as f32 + 0.5
        } else {
            -1.0
        };
        assert_eq!(g.to_f32(), want, "lane {i}");
    }
}

#[test]
fn launch_errors() {
    let (k, _) = add_kernel(64, true);
    let mut bufs = vec![buf(&[0f32; 4]), buf(&[0f32; 4]), buf(&[0i32; 4])];
    let e = run(&k, 1, &[whole(0, &bufs[0])], &mut bufs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
    assert!(
        e.message.contains("1 arguments given, the kernel takes 4"),
        "{}",
        e.message
    );
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        i32s(4),
    ];
    let e = run(&k, 1, &args, &mut bufs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
    assert!(
        e.message.contains(
            "argument `out_ptr` is a buffer of i32, but the kernel expects a pointer to f32"
        ),
        "{}",
        e.message
    );
    let args = [whole(0, &bufs[0]), whole(1, &bufs[1]), i32s(0), i32s(4)];
    let e = run(&k, 1, &args, &mut bufs).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch);
    // A grid with a zero dimension runs nothing, even with bad offsets.
    let mut bufs = vec![buf(&[0f32; 4]), buf(&[0f32; 4]), buf(&[7f32; 4])];
    let args = [
        whole(0, &bufs[0]),
        whole(1, &bufs[1]),
        whole(2, &bufs[2]),
        i32s(1 << 20),
    ];
    run(&k, [0u32, 1, 1], &args, &mut bufs).unwrap();
    assert_eq!(read::<f32>(&bufs[2]), vec![7.0; 4]);
}

#[test]
fn program_ids_run_x_fastest_and_num_programs() {
    // out[pid_z * 12 + pid_y * 4 + pid_x] = order of execution (an atomic counter)
    // plus 1000 * num_programs(1).
    let mut k = K::new("order");
    let o = k.ptr_param("o", DType::I32);
    let c = k.ptr_param("counter", DType::I32);
    let (px, py, pz) = (k.pid(0), k.pid(1), k.pid(2));
    let c12 = k.ci32(12);
    let c4 = k.ci32(4);
    let a = k.mul(pz, c12);
    let b = k.mul(py, c4);
    let idx = k.add(a, b);
    let idx = k.add(idx, px);
    let one = k.ci32(1);
    let old = k.push1(
        Op::Atomic {
            op: AtomicOp::Add,
            ptr: c,
            value: one,
            mask: None,
        },
        Type::scalar(DType::I32),
    );
    let np = k.push1(Op::NumPrograms { axis: 1 }, Type::scalar(DType::I32));
    let thousand = k.ci32(1000);
    let np = k.mul(np, thousand);
    let v = k.add(old, np);
    let p = k.addptr(o, idx);
    k.store(p, v, None);
    let k = k.finish();
    let mut bufs = vec![buf(&[-1i32; 24]), buf(&[0i32])];
    run(
        &k,
        [4u32, 3, 2],
        &[whole(0, &bufs[0]), whole(1, &bufs[1])],
        &mut bufs,
    )
    .unwrap();
    let want: Vec<i32> = (0..24).map(|i| 3000 + i).collect();
    assert_eq!(read::<i32>(&bufs[0]), want);
    assert_eq!(read::<i32>(&bufs[1]), vec![24]);
}

#[test]
fn atomics_return_old_values_and_skip_masked_lanes() {
    // 8 lanes add into 4 counters (lane i -> counter i % 4); lanes 6, 7 masked off.
    let mut k = K::new("atomics");
    let c = k.ptr_param("c", DType::I32);
    let o = k.ptr_param("o", DType::I32);
    let ar = k.arange(0, 8);
    let four = k.konst(Const::Int(4), DType::I32, &[8]);
    let idx = k.bin(BinaryOp::Rem, ar, four);
    let six = k.konst(Const::Int(6), DType::I32, &[8]);
    let m = k.cmp(CmpPred::Lt, ar, six);
    let pc = k.addptr(c, idx);
    let old = k.push1(
        Op::Atomic {
            op: AtomicOp::Add,
            ptr: pc,
            value: ar,
            mask: Some(m),
        },
        Type::tile(DType::I32, vec![8]),
    );
    let po = k.addptr(o, ar);
    k.store(po, old, None);
    // CAS: counter 0 == 4 ? set 99
    let p0 = c;
    let cmpv = k.ci32(4);
    let newv = k.ci32(99);
    k.push1(
        Op::AtomicCas {
            ptr: p0,
            cmp: cmpv,
            value: newv,
        },
        Type::scalar(DType::I32),
    );
    let k = k.finish();
    let mut bufs = vec![buf(&[10i32, 20, 30, 40]), buf(&[-7i32; 8])];
    run(&k, 1, &[whole(0, &bufs[0]), whole(1, &bufs[1])], &mut bufs).unwrap();
    assert_eq!(read::<i32>(&bufs[1]), vec![10, 20, 30, 40, 10, 21, 0, 0]);
    // counter 0 = 10 + 0 + 4 = 14 (CAS fails), 1 = 20 + 1 + 5, 2 = 30 + 2, 3 = 40 + 3
    assert_eq!(read::<i32>(&bufs[0]), vec![14, 26, 32, 43]);
}
