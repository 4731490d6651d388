//! The kernel library (shaders/) against float64 CPU references on random inputs.

mod common;

use common::*;
use tilewise::half::f16;

const VECTOR_ADD: &str = include_str!("../shaders/vector_add.py");
const FUSED_SOFTMAX: &str = include_str!("../shaders/fused_softmax.py");
const MATMUL: &str = include_str!("../shaders/matmul.py");
const MATMUL_BP: &str = include_str!("../shaders/matmul_block_ptr.py");
const LAYER_NORM: &str = include_str!("../shaders/layer_norm.py");
const SWIGLU: &str = include_str!("../shaders/swiglu.py");

#[test]
fn vector_add() {
    let dev = device();
    let k = ok(module("vector_add.py", VECTOR_ADD).kernel("add_kernel"));
    let mut rng = Rng::new(1);
    let n = 98_432 + 5;
    let x = rng.vec_f32(n, -100.0, 100.0);
    let y = rng.vec_f32(n, -100.0, 100.0);
    let (xb, yb) = (ok(dev.upload(&x)), ok(dev.upload(&y)));
    let out = filled(&dev, n + 16, SENTINEL_F32);
    ok(k.launch(&dev, n.div_ceil(1024) as u32)
        .arg(&xb)
        .arg(&yb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK_SIZE", 1024)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    // f32 + f32 rounded once from the exact f64 sum: bit-exact.
    for i in 0..n {
        let want = (x[i] as f64 + y[i] as f64) as f32;
        assert_eq!(got[i], want, "index {i}");
    }
    assert!(got[n..].iter().all(|&v| v == SENTINEL_F32), "store past n");
}

#[test]
fn vector_add_on_views() {
    // The same kernel on sub-ranges of larger buffers.
    let dev = device();
    let k = ok(module("vector_add.py", VECTOR_ADD).kernel("add_kernel"));
    let mut rng = Rng::new(2);
    let n = 300;
    let x = rng.vec_f32(n + 40, -1.0, 1.0);
    let y = rng.vec_f32(n + 40, -1.0, 1.0);
    let (xb, yb) = (ok(dev.upload(&x)), ok(dev.upload(&y)));
    let out = filled(&dev, n + 20, SENTINEL_F32);
    ok(k.launch(&dev, n.div_ceil(128) as u32)
        .arg(xb.slice(10..10 + n))
        .arg(yb.slice(40..40 + n))
        .arg(out.slice(20..20 + n))
        .arg(n as i32)
        .constexpr("BLOCK_SIZE", 128)
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    assert!(got[..20].iter().all(|&v| v == SENTINEL_F32));
    for i in 0..n {
        assert_eq!(got[20 + i], x[10 + i] + y[40 + i], "index {i}");
    }
}

#[test]
fn fused_softmax() {
    let dev = device();
    let k = ok(module("fused_softmax.py", FUSED_SOFTMAX).kernel("softmax_kernel"));
    let mut rng = Rng::new(3);
    let (rows, cols) = (37usize, 781usize);
    let x = rng.vec_f32(rows * cols, -8.0, 8.0);
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(&dev, rows * cols);
    ok(k.launch(&dev, rows as u32)
        .arg(&out)
        .arg(&xb)
        .arg(cols as i32)
        .arg(cols as i32)
        .arg(rows as i32)
        .arg(cols as i32)
        .constexpr("BLOCK_SIZE", cols.next_power_of_two())
        .run());
    let got: Vec<f32> = ok(dev.download(&out));
    let want = softmax_ref(&to_f64(&x), rows, cols);
    // Per row, relative to the row's largest probability.
    for r in 0..rows {
        let s = r * cols..(r + 1) * cols;
        assert_close(&format!("softmax row {r}"), &got[s.clone()], &want[s], 1e-5);
    }
}

/// Runs matmul.py's grouped-ordering kernel. `b_transposed` stores B as (N, K) and
/// passes its strides, so the kernel must honour them.
#[allow(clippy::too_many_arguments)]
fn grouped_matmul<T: tilewise::Element>(
    conv: fn(f32) -> T,
    back: fn(T) -> f64,
    (m, n, k): (usize, usize, usize),
    (bm, bn, bk, group): (u32, u32, u32, u32),
    b_transposed: bool,
    activation: &str,
    seed: u64,
) -> (Vec<f64>, Vec<f64>) {
    let dev = device();
    let kern = ok(module("matmul.py", MATMUL).kernel("matmul_kernel"));
    let mut rng = Rng::new(seed);
    let a: Vec<T> = rng
        .vec_f32(m * k, -1.0, 1.0)
        .into_iter()
        .map(conv)
        .collect();
    let b: Vec<T> = rng
        .vec_f32(k * n, -1.0, 1.0)
        .into_iter()
        .map(conv)
        .collect();
    let a64: Vec<f64> = a.iter().map(|&v| back(v)).collect();
    let b64: Vec<f64> = b.iter().map(|&v| back(v)).collect();
    let mut want = matmul_ref(&a64, &b64, m, n, k);
    if activation == "leaky_relu" {
        for v in &mut want {
            if *v < 0.0 {
                *v *= 0.01;
            }
        }
    }
    let (b_dev, sbk, sbn) = if b_transposed {
        let bt: Vec<T> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        (bt, 1, k as i32)
    } else {
        (b, n as i32, 1)
    };
    let ab = ok(dev.upload(&a));
    let bb = ok(dev.upload(&b_dev));
    let poison: Vec<T> = vec![conv(f32::NAN); m * n];
    let c = ok(dev.upload(&poison));
    let grid = (m.div_ceil(bm as usize) * n.div_ceil(bn as usize)) as u32;
    let mut l = kern
        .launch(&dev, grid)
        .arg(&ab)
        .arg(&bb)
        .arg(&c)
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .arg(k as i32)
        .arg(1i32)
        .arg(sbk)
        .arg(sbn)
        .arg(n as i32)
        .arg(1i32)
        .constexpr("BLOCK_SIZE_M", bm)
        .constexpr("BLOCK_SIZE_N", bn)
        .constexpr("BLOCK_SIZE_K", bk)
        .constexpr("GROUP_SIZE_M", group);
    if !activation.is_empty() {
        l = l.constexpr("ACTIVATION", activation);
    }
    ok(l.run());
    let got: Vec<T> = ok(dev.download(&c));
    (got.into_iter().map(back).collect(), want)
}

fn check(what: &str, got: &[f64], want: &[f64], tol: f64) {
    let got32: Vec<f32> = got.iter().map(|&v| v as f32).collect();
    assert_close(what, &got32, want, tol);
}

#[test]
fn matmul_f32_grouped_ragged() {
    for (shape, blocks, seed) in [
        ((75, 61, 50), (32, 16, 16, 4), 11),
        ((33, 70, 29), (16, 32, 8, 2), 12),
        ((128, 64, 64), (32, 32, 32, 8), 13),
    ] {
        let (got, want) = grouped_matmul(|v| v, |v| v as f64, shape, blocks, false, "", seed);
        check(&format!("matmul f32 {shape:?}"), &got, &want, 1e-5);
    }
}

#[test]
fn matmul_f32_strided_b_and_activation() {
    let (got, want) = grouped_matmul(
        |v| v,
        |v| v as f64,
        (40, 37, 45),
        (16, 16, 16, 2),
        true,
        "",
        14,
    );
    check("matmul f32 B^T strides", &got, &want, 1e-5);
    let (got, want) = grouped_matmul(
        |v| v,
        |v| v as f64,
        (40, 37, 45),
        (16, 16, 16, 2),
        false,
        "leaky_relu",
        15,
    );
    check("matmul f32 leaky_relu", &got, &want, 1e-5);
}

#[test]
fn matmul_f16_inputs_f32_accumulation() {
    for (shape, blocks, seed) in [
        ((75, 61, 50), (32, 16, 16, 4), 21),
        ((64, 48, 100), (16, 16, 32, 2), 22),
    ] {
        let (got, want) = grouped_matmul(
            f16::from_f32,
            |v: f16| v.to_f64(),
            shape,
            blocks,
            false,
            "",
            seed,
        );
        check(&format!("matmul f16 {shape:?}"), &got, &want, 1e-2);
    }
}

#[test]
fn matmul_block_ptr_library() {
    let dev = device();
    let kern = ok(module("matmul_block_ptr.py", MATMUL_BP).kernel("matmul_block_ptr_kernel"));
    let mut rng = Rng::new(31);
    let (m, n, k) = (45usize, 70usize, 39usize);
    let a = rng.vec_f32(m * k, -1.0, 1.0);
    let b = rng.vec_f32(k * n, -1.0, 1.0);
    let want = matmul_ref(&to_f64(&a), &to_f64(&b), m, n, k);
    let (ab, bb) = (ok(dev.upload(&a)), ok(dev.upload(&b)));
    let c = poisoned_f32(&dev, m * n);
    ok(kern
        .launch(&dev, (m.div_ceil(16) as u32, n.div_ceil(32) as u32))
        .arg(&ab)
        .arg(&bb)
        .arg(&c)
        .arg(m as i32)
        .arg(n as i32)
        .arg(k as i32)
        .arg(k as i32)
        .arg(1i32)
        .arg(n as i32)
        .arg(1i32)
        .arg(n as i32)
        .arg(1i32)
        .constexpr("BLOCK_M", 16)
        .constexpr("BLOCK_N", 32)
        .constexpr("BLOCK_K", 16)
        .run());
    let got: Vec<f32> = ok(dev.download(&c));
    assert_close("matmul_block_ptr", &got, &want, 1e-5);
}

#[test]
fn layer_norm_forward() {
    let dev = device();
    let k = ok(module("layer_norm.py", LAYER_NORM).kernel("_layer_norm_fwd_fused"));
    let mut rng = Rng::new(41);
    let (rows, cols) = (9usize, 1151usize);
    let eps = 1e-5f32;
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| (rng.uniform(-1.0, 1.0) + 1.0 + 0.37 * (i / cols) as f64) as f32)
        .collect();
    let w = rng.vec_f32(cols, 0.5, 1.5);
    let b = rng.vec_f32(cols, -0.5, 0.5);
    let (xb, wb, bb) = (ok(dev.upload(&x)), ok(dev.upload(&w)), ok(dev.upload(&b)));
    let y = poisoned_f32(&dev, rows * cols);
    let mean = poisoned_f32(&dev, rows);
    let rstd = poisoned_f32(&dev, rows);
    ok(k.launch(&dev, rows as u32)
        .arg(&xb)
        .arg(&y)
        .arg(&wb)
        .arg(&bb)
        .arg(&mean)
        .arg(&rstd)
        .arg(cols as i32)
        .arg(cols as i32)
        .arg(eps)
        .constexpr("BLOCK_SIZE", 256)
        .run());
    let (want_y, want_mean, want_rstd) = layer_norm_ref(
        &to_f64(&x),
        &to_f64(&w),
        &to_f64(&b),
        rows,
        cols,
        eps as f64,
    );
    assert_close(
        "layer_norm mean",
        &ok(dev.download::<f32>(&mean)),
        &want_mean,
        1e-5,
    );
    assert_close(
        "layer_norm rstd",
        &ok(dev.download::<f32>(&rstd)),
        &want_rstd,
        1e-5,
    );
    assert_close("layer_norm y", &ok(dev.download::<f32>(&y)), &want_y, 1e-5);
}

#[test]
fn swiglu_library_f32_and_f16() {
    let dev = device();
    let k = ok(module("swiglu.py", SWIGLU).kernel("swiglu_fwd_kernel"));
    let mut rng = Rng::new(51);
    let n = 3 * 512 + 11;
    let g = rng.vec_f32(n, -6.0, 6.0);
    let u = rng.vec_f32(n, -2.0, 2.0);
    // f32 in, f32 out.
    let (gb, ub) = (ok(dev.upload(&g)), ok(dev.upload(&u)));
    let out = poisoned_f32(&dev, n);
    ok(k.launch(&dev, n.div_ceil(512) as u32)
        .arg(&gb)
        .arg(&ub)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK_SIZE", 512)
        .run());
    assert_close(
        "swiglu f32",
        &ok(dev.download::<f32>(&out)),
        &swiglu_ref(&to_f64(&g), &to_f64(&u)),
        1e-5,
    );
    // f16 in, f16 out (f32 math inside).
    let g16: Vec<f16> = g.iter().map(|&v| f16::from_f32(v)).collect();
    let u16: Vec<f16> = u.iter().map(|&v| f16::from_f32(v)).collect();
    let (gb, ub) = (ok(dev.upload(&g16)), ok(dev.upload(&u16)));
    let out = ok(dev.upload(&vec![f16::NAN; n]));
    ok(k.launch(&dev, n.div_ceil(512) as u32)
        .arg(&gb)
        .arg(&ub)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK_SIZE", 512)
        .run());
    let got: Vec<f32> = ok(dev.download::<f16>(&out))
        .iter()
        .map(|v| v.to_f32())
        .collect();
    let g64: Vec<f64> = g16.iter().map(|v| v.to_f64()).collect();
    let u64_: Vec<f64> = u16.iter().map(|v| v.to_f64()).collect();
    assert_close("swiglu f16", &got, &swiglu_ref(&g64, &u64_), 1e-2);
}
