//! A tour of the seed programs: every kernel in examples/seeds/ runs end to end on the
//! best device present, prints its result the way the seed chapters do, and is checked
//! against an independent float64 reference computed here in Rust.
//!
//! ```text
//! cargo run --release --example tour
//! ```
//! The exit code is non-zero if any verdict is FAIL.

use std::process::ExitCode;
use tilewise::{Buffer, Device, Diagnostic, ErrorKind, Kernel, Module};

const CH7_BCAST: &str = include_str!("seeds/ch7_broadcasting.py");
const CH7_HINTS: &str = include_str!("seeds/ch7_alignment_hints.py");
const CH7_BP: &str = include_str!("seeds/ch7_block_pointers.py");
const CH9: &str = include_str!("seeds/ch9_masks.py");
const L4: &str = include_str!("seeds/lesson4_block_ptr.py");

type Result<T> = std::result::Result<T, Diagnostic>;

struct Tour {
    dev: Device,
    passed: usize,
    failed: Vec<String>,
}

impl Tour {
    /// Runs one program; an error counts as a failure and is printed rendered.
    fn program(&mut self, title: &str, f: impl FnOnce(&Device) -> Result<bool>) {
        println!("=== {title} ===");
        let pass = match f(&self.dev) {
            Ok(pass) => pass,
            Err(e) => {
                println!("{}", e.render());
                false
            }
        };
        if pass {
            self.passed += 1;
            println!("PASS\n");
        } else {
            self.failed.push(title.to_string());
            println!("FAIL\n");
        }
    }
}

// ------------------------------------------------------------------ helpers

fn kernel(file: &str, src: &str, name: &str) -> Result<Kernel> {
    Module::parse(file, src)?.kernel(name)
}

fn print_matrix<T: std::fmt::Display>(title: &str, data: &[T], rows: usize, cols: usize) {
    println!("{title}");
    let cells: Vec<String> = data.iter().map(|v| v.to_string()).collect();
    let w = cells.iter().map(|c| c.len()).max().unwrap_or(1);
    for r in 0..rows {
        let row: Vec<String> = cells[r * cols..(r + 1) * cols]
            .iter()
            .map(|c| format!("{c:>w$}"))
            .collect();
        println!("  [{}]", row.join(", "));
    }
}

fn fmt_list(v: &[f32]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:.1}")).collect();
    format!("[{}]", items.join(", "))
}

/// xorshift64*: deterministic test data.
struct Rng(u64);

impl Rng {
    fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 >> 12;
                self.0 ^= self.0 << 25;
                self.0 ^= self.0 >> 27;
                let u =
                    (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
                lo + (hi - lo) * u
            })
            .collect()
    }
}

/// Largest error relative to the largest reference magnitude (NaN is infinite).
fn rel_err(got: &[f32], want: &[f64]) -> f64 {
    let scale = want.iter().fold(1e-30f64, |m, w| m.max(w.abs()));
    got.iter().zip(want).fold(
        if got.len() == want.len() {
            0.0
        } else {
            f64::INFINITY
        },
        |m, (g, w)| {
            let e = (*g as f64 - w).abs() / scale;
            if e.is_nan() {
                f64::INFINITY
            } else {
                m.max(e)
            }
        },
    )
}

fn matmul_ref(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += a[i * k + p] as f64 * b[p * n + j] as f64;
            }
        }
    }
    c
}

fn nan_buffer(dev: &Device, n: usize) -> Result<Buffer> {
    dev.upload(&vec![f32::NAN; n])
}

// ------------------------------------------------------------------ chapter 7

fn broadcast_add(dev: &Device) -> Result<bool> {
    let k = kernel("ch7_broadcasting.py", CH7_BCAST, "broadcast_add_kernel")?;
    let out = dev.upload(&[i32::MIN; 12])?;
    let launch = k
        .launch(dev, 1)
        .arg(&out)
        .arg(3i32)
        .arg(4i32)
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 4);
    // Tracing prints the tl.static_print lines, as Triton does.
    launch.run()?;
    let got: Vec<i32> = dev.download(&out)?;
    print_matrix("broadcast result (row+col):", &got, 3, 4);
    let want: Vec<i32> = (0..12).map(|i| i / 4 + i % 4).collect();
    Ok(got == want)
}

fn bad_broadcast(dev: &Device) -> Result<bool> {
    let k = kernel("ch7_broadcasting.py", CH7_BCAST, "bad_broadcast_kernel")?;
    let out = dev.zeros::<i32>(4)?;
    match k
        .launch(dev, 1)
        .arg(&out)
        .constexpr("BLOCK_A", 4)
        .constexpr("BLOCK_B", 8)
        .run()
    {
        Ok(()) => {
            println!("unexpectedly succeeded: {:?}", dev.download::<i32>(&out)?);
            Ok(false)
        }
        Err(e) => {
            println!("expected error:\n{}", e.render());
            Ok(e.kind == ErrorKind::Shape
                && e.message.contains("4 and 8")
                && e.render().contains('^'))
        }
    }
}

fn forgot_none(dev: &Device) -> Result<bool> {
    let k = kernel("ch7_broadcasting.py", CH7_BCAST, "forgot_none_kernel")?;
    let out = dev.upload(&[i32::MIN; 4])?;
    let launch = k.launch(dev, 1).arg(&out).constexpr("BLOCK", 4);
    // Tracing prints the tl.static_print lines, as Triton does.
    launch.run()?;
    let got: Vec<i32> = dev.download(&out)?;
    println!("forgot-None result (1D, not the 4x4 outer grid): {got:?}");
    Ok(got == (0..4).map(|i| i + i).collect::<Vec<i32>>())
}

fn hinted(dev: &Device) -> Result<bool> {
    let k = kernel("ch7_alignment_hints.py", CH7_HINTS, "hinted_kernel")?;
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let xb = dev.upload(&x)?;
    let out = nan_buffer(dev, 16)?;
    k.launch(dev, 2)
        .arg(&xb)
        .arg(&out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    println!("hinted kernel result: {}", fmt_list(&got));
    let ok = got
        .iter()
        .zip(&x)
        .all(|(g, x)| *g as f64 == 2.0 * *x as f64);
    println!("matches x*2? {}", if ok { "True" } else { "False" });
    Ok(ok)
}

fn lying_hint(dev: &Device) -> Result<bool> {
    let k = kernel(
        "ch7_alignment_hints.py",
        CH7_HINTS,
        "lying_multiple_of_kernel",
    )?;
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let xb = dev.upload(&x)?;
    let out = dev.zeros::<f32>(16)?;
    k.launch(dev, 1)
        .arg(&xb)
        .arg(&out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    println!("lied multiple_of result: {}", fmt_list(&got));
    let want: Vec<f32> = (0..16)
        .map(|i| {
            if (3..=10).contains(&i) {
                2.0 * i as f32
            } else {
                0.0
            }
        })
        .collect();
    // Checked mode does verify the hint.
    let checked = Device::interpreter_checked();
    let xb = checked.upload(&x)?;
    let out = checked.zeros::<f32>(16)?;
    let caught = match k
        .launch(&checked, 1)
        .arg(&xb)
        .arg(&out)
        .arg(16i32)
        .constexpr("BLOCK", 8)
        .run()
    {
        Ok(()) => {
            println!("checked mode: no report (expected one)");
            false
        }
        Err(e) => {
            println!("checked mode reports:\n{}", e.render());
            e.kind == ErrorKind::Runtime && e.message.contains("multiple_of")
        }
    };
    Ok(got == want && caught)
}

fn copy_block_ptr(
    dev: &Device,
    args: [i32; 6],
    rows: usize,
    cols: usize,
    title: &str,
) -> Result<bool> {
    let k = kernel("ch7_block_pointers.py", CH7_BP, "copy_block_ptr_kernel")?;
    let real: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let xb = dev.upload(&real)?;
    let out = nan_buffer(dev, 12)?;
    let mut l = k.launch(dev, 1).arg(&xb).arg(&out);
    for a in args {
        l = l.arg(a);
    }
    l.constexpr("BLOCK_M", 4).constexpr("BLOCK_N", 4).run()?;
    let got: Vec<f32> = dev.download(&out)?;
    print_matrix(title, &got, rows, cols);
    // Either way the 12 elements come out in memory order: the lie only relabels them.
    Ok(got == real)
}

// ------------------------------------------------------------------ chapter 9

fn causal(dev: &Device, name: &str, strict: bool) -> Result<bool> {
    let k = kernel("ch9_masks.py", CH9, name)?;
    let x: Vec<f32> = (1..=16).map(|i| i as f32).collect();
    let xb = dev.upload(&x)?;
    let out = nan_buffer(dev, 16)?;
    k.launch(dev, 1)
        .arg(&xb)
        .arg(&out)
        .args([4i32.into(), 4i32.into(), 4i32.into(), 1i32.into()])
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 4)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    if !strict {
        print_matrix("input:", &x, 4, 4);
    }
    print_matrix(
        if strict {
            "with < instead of <=:"
        } else {
            "causal-masked (lower triangular, incl. diagonal):"
        },
        &got,
        4,
        4,
    );
    let want: Vec<f32> = (0..16)
        .map(|i| {
            let (r, c) = (i / 4, i % 4);
            if c < r || (!strict && c == r) {
                x[i]
            } else {
                0.0
            }
        })
        .collect();
    Ok(got == want)
}

fn block_sparse(dev: &Device) -> Result<bool> {
    let k = kernel("ch9_masks.py", CH9, "block_sparse_double_kernel")?;
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let flags = [1i32, 0, 1, 0];
    let (xb, fb) = (dev.upload(&x)?, dev.upload(&flags)?);
    let out = dev.zeros::<f32>(16)?;
    k.launch(dev, 4)
        .arg(&xb)
        .arg(&out)
        .arg(&fb)
        .arg(16i32)
        .constexpr("BLOCK", 4)
        .constexpr("NUM_BLOCKS", 4)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    println!("x:             {}", fmt_list(&x));
    println!("block_mask:    {flags:?}");
    println!("result:        {}", fmt_list(&got));
    let want: Vec<f32> = (0..16)
        .map(|i| if flags[i / 4] != 0 { 2.0 * x[i] } else { 0.0 })
        .collect();
    Ok(got == want)
}

fn ragged(dev: &Device) -> Result<bool> {
    let k = kernel("ch9_masks.py", CH9, "ragged_row_sum_kernel")?;
    let padded = [
        1.0f32, 2.0, 3.0, 4.0, 10.0, 20.0, 999.0, 999.0, 5.0, 5.0, 5.0, 999.0,
    ];
    let lengths = [4i32, 2, 3];
    let (xb, lb) = (dev.upload(&padded)?, dev.upload(&lengths)?);
    let out = nan_buffer(dev, 3)?;
    k.launch(dev, 3)
        .arg(&xb)
        .arg(&lb)
        .arg(&out)
        .arg(4i32)
        .constexpr("MAX_WIDTH", 4)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    print_matrix(
        "padded tensor (999.0 past each row's length):",
        &padded,
        3,
        4,
    );
    println!("lengths: {lengths:?}");
    println!("ragged row sums (ignoring padding): {}", fmt_list(&got));
    let want: Vec<f32> = (0..3)
        .map(|r| padded[r * 4..r * 4 + lengths[r] as usize].iter().sum())
        .collect();
    println!("expected: {}", fmt_list(&want));
    Ok(got == want)
}

// ------------------------------------------------------------------ lesson 4

fn matmul(dev: &Device, name: &str, transposed_b: bool) -> Result<bool> {
    let (m, n, k, blk) = (70usize, 45usize, 33usize, 16u32);
    let kern = kernel("lesson4_block_ptr.py", L4, name)?;
    let mut rng = Rng(0x5eed ^ m as u64);
    let a = rng.vec(m * k, -1.0, 1.0);
    let b = rng.vec(k * n, -1.0, 1.0);
    let b_dev: Vec<f32> = if transposed_b {
        (0..n * k).map(|i| b[(i % k) * n + i / k]).collect()
    } else {
        b.clone()
    };
    let (ab, bb) = (dev.upload(&a)?, dev.upload(&b_dev)?);
    let c = nan_buffer(dev, m * n)?;
    kern.launch(dev, (m.div_ceil(16) as u32, n.div_ceil(16) as u32))
        .arg(&ab)
        .arg(&bb)
        .arg(&c)
        .args([(m as i32).into(), (n as i32).into(), (k as i32).into()])
        .constexpr("N_ITERS", k.div_ceil(16))
        .constexpr("BLOCK_M", blk)
        .constexpr("BLOCK_N", blk)
        .constexpr("BLOCK_K", blk)
        .run()?;
    let got: Vec<f32> = dev.download(&c)?;
    let err = rel_err(&got, &matmul_ref(&a, &b, m, n, k));
    // `tl.dot` on f32 runs at Triton's default precision, tf32, where the device has
    // tensor cores (CUDA): inputs keep 10 mantissa bits.
    let (tol, precision) = if dev.kind() == tilewise::DeviceKind::Cuda {
        (3e-3, " (tf32 tensor cores)")
    } else {
        (1e-5, "")
    };
    println!(
        "{m}x{k} @ {k}x{n}, blocks 16x16x16{}: max_err = {err:.2e}{precision}",
        if transposed_b {
            ", B read transposed"
        } else {
            ""
        }
    );
    Ok(err < tol)
}

fn row_copy(dev: &Device) -> Result<bool> {
    let kern = kernel("lesson4_block_ptr.py", L4, "row_copy_bp_kernel")?;
    let n = 1000;
    let x = Rng(7).vec(n, -1.0, 1.0);
    let xb = dev.upload(&x)?;
    let out = dev.upload(&vec![-1.0f32; n + 24])?;
    kern.launch(dev, n.div_ceil(128) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 128)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    let ok = got[..n] == x[..] && got[n..].iter().all(|&v| v == -1.0);
    println!(
        "1-D block pointer copy of {n} elements in blocks of 128: {}",
        if ok {
            "exact, tail untouched"
        } else {
            "MISMATCH"
        }
    );
    Ok(ok)
}

fn softmax(dev: &Device) -> Result<bool> {
    let kern = kernel("lesson4_block_ptr.py", L4, "softmax_bp_kernel")?;
    let (m, n) = (13usize, 45usize);
    let x = Rng(11).vec(m * n, -4.0, 4.0);
    let xb = dev.upload(&x)?;
    let out = nan_buffer(dev, m * n)?;
    kern.launch(dev, m.div_ceil(4) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(m as i32)
        .arg(n as i32)
        .constexpr("BLOCK_M", 4)
        .constexpr("BLOCK_N", 64)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    let mut want = vec![0.0f64; m * n];
    for r in 0..m {
        let row = &x[r * n..(r + 1) * n];
        let mx = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let s: f64 = row.iter().map(|&v| (v as f64 - mx).exp()).sum();
        for c in 0..n {
            want[r * n + c] = (row[c] as f64 - mx).exp() / s;
        }
    }
    let err = rel_err(&got, &want);
    println!("softmax {m}x{n} (BLOCK_N=64, -inf mask past N): max_err = {err:.2e}");
    Ok(err < 1e-5)
}

fn swiglu(dev: &Device) -> Result<bool> {
    let kern = kernel("lesson4_block_ptr.py", L4, "swiglu_kernel")?;
    let n = 1027;
    let mut rng = Rng(13);
    let (g, u) = (rng.vec(n, -6.0, 6.0), rng.vec(n, -2.0, 2.0));
    let (gb, ub) = (dev.upload(&g)?, dev.upload(&u)?);
    let out = nan_buffer(dev, n)?;
    kern.launch(dev, n.div_ceil(256) as u32)
        .arg(&gb)
        .arg(&ub)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 256)
        .run()?;
    let got: Vec<f32> = dev.download(&out)?;
    let want: Vec<f64> = g
        .iter()
        .zip(&u)
        .map(|(&g, &u)| {
            let g = g as f64;
            g / (1.0 + (-g).exp()) * u as f64
        })
        .collect();
    let err = rel_err(&got, &want);
    println!("swiglu over {n} elements: max_err = {err:.2e}");
    Ok(err < 1e-5)
}

fn main() -> ExitCode {
    // Logs (RUST_LOG=tilewise=debug: device choice, compile phases, cache hits) go to
    // stderr; warnings only by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let dev = Device::best();
    println!("device: {}\n", dev.name());
    let mut t = Tour {
        dev,
        passed: 0,
        failed: vec![],
    };

    t.program("7.1 broadcasting a column against a row", broadcast_add);
    t.program(
        "7.1 incompatible shapes, rejected at trace time",
        bad_broadcast,
    );
    t.program("7.1 the trap: forgetting None-indexing", forgot_none);
    t.program(
        "7.2 tl.multiple_of / tl.max_contiguous, told the truth",
        hinted,
    );
    t.program("7.2 a false tl.multiple_of hint", lying_hint);
    t.program("7.3 block pointer, told the truth", |d| {
        copy_block_ptr(
            d,
            [3, 4, 4, 1, 3, 4],
            3,
            4,
            "correct block_ptr shape/strides:",
        )
    });
    t.program("7.3 block pointer, lied shape (4, 3)", |d| {
        copy_block_ptr(
            d,
            [4, 3, 3, 1, 4, 3],
            4,
            3,
            "LIED shape (4,3) via block_ptr on a real (3,4) tensor:",
        )
    });
    t.program("9.1 causal mask", |d| {
        causal(d, "causal_mask_kernel", false)
    });
    t.program("9.1 the off-by-one: < instead of <=", |d| {
        causal(d, "wrong_causal_mask_kernel", true)
    });
    t.program("9.2 block-sparse skipping", block_sparse);
    t.program("9.3 ragged batches", ragged);
    t.program("lesson 4: block-pointer matmul", |d| {
        matmul(d, "matmul_bp_kernel", false)
    });
    t.program("lesson 4: B read transposed, order=(0, 1)", |d| {
        matmul(d, "matmul_bt_kernel", true)
    });
    t.program("lesson 4: 1-D block pointer row copy", row_copy);
    t.program(
        "lesson 4: softmax with a block pointer + manual mask",
        softmax,
    );
    t.program("lesson 5 preview: fused SwiGLU", swiglu);

    println!("{} passed, {} failed", t.passed, t.failed.len());
    if t.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &t.failed {
            println!("  FAIL: {f}");
        }
        ExitCode::FAILURE
    }
}
