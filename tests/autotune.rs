//! Autotuning in the library (`Kernel::autotune`): the configuration chosen on the GPUs
//! is the fastest (configurations whose work differs 64-fold, the same results), the
//! choice is kept per key in memory and in the persistent cache (a fresh device and
//! tuner do not time again), a new key tunes again, buffers are restored after timing
//! (an accumulating kernel's output is one launch's), configurations that cannot run
//! are skipped with their reasons, pruning sees the arguments by name, and the CPU
//! executors take the first configuration untimed. Results are checked against exact
//! integer references with poisoned outputs.

mod common;

use common::{module, ok};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Once};
use tilewise::{ArgValue, Config, ConstValue, Device, Grid};

/// `out[i] = x[i] * 3` (exact), from `REPEAT` loads of `x[i]` (`zero` is 0 at run time,
/// so the compiler cannot hoist them): configurations with a large `REPEAT` do the same
/// work many times over and must lose.
const SCALE: &str = r#"
import triton
import triton.language as tl

@triton.jit
def scale(x_ptr, out_ptr, n, zero, BLOCK: tl.constexpr, REPEAT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    for r in range(REPEAT):
        acc += tl.load(x_ptr + offs + r * zero, mask=mask, other=0)
    tl.store(out_ptr + offs, acc * 3 // REPEAT, mask=mask)

@triton.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
"#;

/// A persistent cache of this test binary alone, emptied and set before any device
/// exists: one directory under Cargo's temporary folder for integration tests, reused
/// by every run (each run had left one behind in the system's temporary folder).
fn private_cache() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("autotune-cache");
        let _ = std::fs::remove_dir_all(&dir);
        std::env::set_var("TILEWISE_CACHE_DIR", dir);
        std::env::remove_var("TILEWISE_CACHE");
    });
}

fn gpus() -> Vec<Device> {
    private_cache();
    [common::wgpu_device(), common::cuda_device()]
        .into_iter()
        .flatten()
        .collect()
}

fn configs() -> Vec<Config> {
    vec![
        Config::new()
            .constexpr("BLOCK", 256)
            .constexpr("REPEAT", 128),
        Config::new().constexpr("BLOCK", 256).constexpr("REPEAT", 1),
        Config::new()
            .constexpr("BLOCK", 128)
            .constexpr("REPEAT", 128)
            .num_warps(2),
    ]
}

fn grid(n: usize) -> impl Fn(&Config) -> Grid {
    move |c: &Config| (n as u32).div_ceil(c.int("BLOCK") as u32).into()
}

fn input(n: usize) -> Vec<i32> {
    let mut rng = common::Rng::new(n as u64);
    (0..n)
        .map(|_| (rng.next_u64() % 2001) as i32 - 1000)
        .collect()
}

#[test]
fn the_fastest_configuration_is_chosen_and_kept() {
    for dev in gpus() {
        let m = module("scale.py", SCALE);
        let timed = Arc::new(AtomicUsize::new(0));
        let counter = timed.clone();
        // Every configuration is compiled (several at a time) before the first is
        // timed: the first report finds all three specializations traced.
        let kernel = ok(m.kernel("scale"));
        let compiled_at_first_report = Arc::new(AtomicUsize::new(usize::MAX));
        let seen = compiled_at_first_report.clone();
        let watched = kernel.clone();
        let tuner = kernel
            .autotune(configs())
            .key(&["n"])
            .timing(1.0, 5.0)
            .on_progress(move |p| {
                counter.fetch_add(1, Ordering::SeqCst);
                if p.index == 0 {
                    seen.store(watched.cached_specializations(), Ordering::SeqCst);
                }
            });
        for n in [200_000usize, 200_000, 30_001] {
            let x = input(n);
            let dx = ok(dev.upload(&x));
            let out = ok(dev.upload(&vec![i32::MIN; n]));
            let used = ok(tuner
                .launch(&dev, grid(n))
                .arg(&dx)
                .arg(&out)
                .arg(n as i32)
                .arg(0i32)
                .run());
            assert_eq!(
                used.get("REPEAT"),
                Some(&ConstValue::Int(1)),
                "{}",
                dev.name()
            );
            let got = ok(dev.download::<i32>(&out));
            assert!(
                got.iter().zip(&x).all(|(g, x)| *g == x * 3),
                "{}",
                dev.name()
            );
        }
        // Two keys tuned, three configurations each; the repeated key was not timed.
        assert_eq!(timed.load(Ordering::SeqCst), 6, "{}", dev.name());
        // `n` = 30,001 (not a multiple of 16) specializes anew: at the second tuning's
        // first report, both keys' three configurations were traced.
        assert_eq!(
            compiled_at_first_report.load(Ordering::SeqCst),
            6,
            "{}",
            dev.name()
        );
        assert_eq!(tuner.chosen().len(), 2);

        // A fresh tuner of a freshly parsed module reads the choices from the
        // persistent cache: nothing is timed.
        let fresh_timed = Arc::new(AtomicUsize::new(0));
        let counter = fresh_timed.clone();
        let fresh = ok(module("scale.py", SCALE).kernel("scale"))
            .autotune(configs())
            .key(&["n"])
            .on_progress(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            });
        let n = 30_001;
        let (dx, out) = (ok(dev.upload(&input(n))), ok(dev.upload(&vec![0i32; n])));
        let used = ok(fresh
            .launch(&dev, grid(n))
            .arg(&dx)
            .arg(&out)
            .arg(n as i32)
            .arg(0i32)
            .run());
        assert_eq!(used.get("REPEAT"), Some(&ConstValue::Int(1)));
        assert_eq!(fresh_timed.load(Ordering::SeqCst), 0, "{}", dev.name());
    }
}

#[test]
fn buffers_are_restored_after_timing() {
    for dev in gpus() {
        let m = module("scale.py", SCALE);
        let tuner = ok(m.kernel("accumulate"))
            .autotune([
                Config::new().constexpr("BLOCK", 64),
                Config::new().constexpr("BLOCK", 256),
            ])
            .key(&["n"])
            .reset_to_zero(&["out_ptr"])
            .timing(1.0, 3.0);
        let n = 3_000;
        let x = input(n);
        let dx = ok(dev.upload(&x));
        let start: Vec<i32> = (0..n as i32).collect();
        let out = ok(dev.upload(&start));
        ok(tuner
            .launch(&dev, grid(n))
            .arg(&dx)
            .arg(&out)
            .arg(n as i32)
            .run());
        // One launch's sum on top of the buffer's values before the launch, though the
        // timing ran the kernel many times (from zeros, as reset_to_zero asks).
        let got = ok(dev.download::<i32>(&out));
        let want: Vec<i32> = start.iter().zip(&x).map(|(s, x)| s + x).collect();
        assert_eq!(got, want, "{}", dev.name());
    }
}

#[test]
fn configurations_that_cannot_run_are_skipped_with_their_reasons() {
    for dev in gpus() {
        let m = module("scale.py", SCALE);
        let bad = Config::new()
            .constexpr("BLOCK", 256)
            .constexpr("REPEAT", 1)
            .num_warps(3);
        let tuner = ok(m.kernel("scale"))
            .autotune([bad.clone(), configs()[0].clone()])
            .timing(0.0, 1.0);
        let n = 1000;
        let (dx, out) = (ok(dev.upload(&input(n))), ok(dev.upload(&vec![0i32; n])));
        let used = ok(tuner
            .launch(&dev, grid(n))
            .arg(&dx)
            .arg(&out)
            .arg(n as i32)
            .arg(0i32)
            .run());
        assert_eq!(used, configs()[0]);

        let only_bad = ok(m.kernel("scale")).autotune([bad.clone(), bad.num_warps(5)]);
        let e = only_bad
            .launch(&dev, grid(n))
            .arg(&dx)
            .arg(&out)
            .arg(n as i32)
            .arg(0i32)
            .run()
            .unwrap_err();
        let text = e.render();
        assert!(text.contains("none of the 2 configurations runs"), "{text}");
        assert!(text.contains("num_warps must be"), "{text}");
    }
}

#[test]
fn pruning_sees_arguments_by_name_and_the_cpu_takes_the_first_untimed() {
    private_cache();
    let dev = Device::interpreter();
    let m = module("scale.py", SCALE);
    let seen = Arc::new(std::sync::Mutex::new(vec![]));
    let log = seen.clone();
    let tuner =
        ok(m.kernel("scale"))
            .autotune(configs())
            .key(&["n"])
            .prune(move |configs, args| {
                log.lock().unwrap().push(args.to_vec());
                // Small problems keep the small blocks only.
                let n = match args.iter().find(|(k, _)| k == "n") {
                    Some((_, ArgValue::Scalar(tilewise::core::launch::ScalarValue::Int(_, v)))) => {
                        *v
                    }
                    _ => 0,
                };
                Ok(configs
                    .iter()
                    .filter(|c| n > 500 || c.int("BLOCK") == 128)
                    .cloned()
                    .collect())
            });
    let n = 300;
    let x = input(n);
    let (dx, out) = (ok(dev.upload(&x)), ok(dev.upload(&vec![i32::MIN; n])));
    let used = ok(tuner
        .launch(&dev, grid(n))
        .arg(&dx)
        .arg(&out)
        .arg(n as i32)
        .arg(0i32)
        .run());
    assert_eq!(used, configs()[2]);
    let got = ok(dev.download::<i32>(&out));
    assert!(got.iter().zip(&x).all(|(g, x)| *g == x * 3));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let names: Vec<&str> = seen[0].iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["x_ptr", "out_ptr", "n", "zero"]);
    assert_eq!(
        seen[0][0].1,
        ArgValue::Buffer {
            dtype: tilewise::DType::I32,
            len: n
        }
    );
}

/// `triton.Config(pre_hook=...)`: the hook sizes a host descriptor's block per
/// configuration (the launch passes a dummy `[1]` block, as Triton's tutorials do) and
/// zeroes the accumulated output before every launch, so the result is one launch's
/// sum however often tuning ran the kernel.
const HOOKED: &str = r#"
import triton
import triton.language as tl

def _size_and_zero(nargs):
    nargs['x_desc'].block_shape = [nargs['BLOCK']]
    nargs['out'].zero_()

@triton.autotune(configs=[triton.Config({'BLOCK': 64}, pre_hook=_size_and_zero),
                          triton.Config({'BLOCK': 256}, num_warps=8, pre_hook=_size_and_zero)],
                 key=['n'])
@triton.jit
def gather_add(x_desc, out, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    x = x_desc.load([pid * BLOCK])
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out + offs, x, mask=offs < n)
"#;

#[test]
fn config_pre_hooks_size_descriptors_and_zero_outputs() {
    private_cache();
    let mut devices = vec![Device::interpreter()];
    devices.extend(gpus());
    let m = module("hooked.py", HOOKED);
    let n = 1_000;
    let x = input(n);
    for dev in devices {
        let tuner = ok(ok(m.kernel("gather_add")).autotuner(&dev))
            .expect("autotuned")
            .timing(1.0, 3.0);
        let dx = ok(dev.upload(&x));
        let out = ok(dev.upload(&vec![i32::MIN; n]));
        for _ in 0..2 {
            let used = ok(tuner
                .launch(&dev, grid(n))
                .arg(tilewise::TensorDescriptor::new(
                    &dx,
                    &[n as i64],
                    &[1],
                    &[1],
                ))
                .arg(&out)
                .arg(n as i32)
                .run());
            assert_eq!(
                used.pre_hook.as_ref().map(|h| h.name()),
                Some("_size_and_zero")
            );
            assert_eq!(ok(dev.download::<i32>(&out)), x, "{}", dev.name());
        }
    }
}

/// A hook written in Rust ([`tilewise::PreHook`]) gives the same actions; an action on
/// an argument that cannot take it is a launch error naming the hook.
#[test]
fn rust_pre_hooks_and_their_errors() {
    use tilewise::{PreHook, PreHookAction};
    private_cache();
    let dev = Device::interpreter();
    let m = module("hooked.py", HOOKED);
    let size = PreHook::new("size", |c: &Config, args: &[(String, ArgValue)]| {
        assert!(matches!(
            args[0],
            (ref name, ArgValue::Descriptor { ref block_shape, .. }) if name == "x_desc" && block_shape == &[1]
        ));
        Ok(vec![
            PreHookAction::BlockShape {
                param: "x_desc".into(),
                block_shape: vec![c.int("BLOCK") as u32],
            },
            PreHookAction::Zero {
                param: "out".into(),
            },
        ])
    });
    let tuner = ok(m.kernel("gather_add"))
        .autotune([Config::new().constexpr("BLOCK", 128).pre_hook(size)])
        .key(&["n"]);
    let n = 500;
    let x = input(n);
    let dx = ok(dev.upload(&x));
    let out = ok(dev.upload(&vec![7i32; n]));
    let desc = tilewise::TensorDescriptor::new(&dx, &[n as i64], &[1], &[1]);
    ok(tuner
        .launch(&dev, grid(n))
        .arg(desc.clone())
        .arg(&out)
        .arg(n as i32)
        .run());
    assert_eq!(ok(dev.download::<i32>(&out)), x);
    // Zeroing the scalar `n` is no action a hook can take.
    let bad = PreHook::new("bad", |_: &Config, _: &[(String, ArgValue)]| {
        Ok(vec![PreHookAction::Zero { param: "n".into() }])
    });
    let e = ok(m.kernel("gather_add"))
        .autotune([Config::new().constexpr("BLOCK", 128).pre_hook(bad)])
        .launch(&dev, grid(n))
        .arg(desc)
        .arg(&out)
        .arg(n as i32)
        .run()
        .unwrap_err();
    assert_eq!(e.kind, tilewise::ErrorKind::Launch, "{e}");
    assert!(
        e.message.contains("`bad`") && e.message.contains("scalar"),
        "{e}"
    );
}
