//! A CUDA kernel that faults ruins its context (a "sticky" error). The device says so
//! in every later call, naming the kernel that ran; `Device::cuda(n)` then resets the
//! context and opens a fresh one where the driver allows it, and otherwise opens the
//! device in a worker process (`Device::isolated`). Its own test binary: the fault would
//! take the primary context away from any other test of the process.
//!
//! Without a CUDA device this says so on stderr (`TILEWISE_REQUIRE_CUDA=1` fails).

mod common;

use common::{err, module, ok, poisoned_f32, Rng};
use tilewise::{Device, ErrorKind};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def far_store(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + (1 << 28), offs.to(tl.float32))

@triton.jit
def doubled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)
"#;

fn doubled_runs(dev: &Device) {
    let m = module("loss.py", SRC);
    let n = 1000;
    let x = Rng::new(3).vec_f32(n, -1.0, 1.0);
    let xb = ok(dev.upload(&x));
    let out = poisoned_f32(dev, n);
    ok(ok(m.kernel("doubled"))
        .launch(dev, n.div_ceil(256) as u32)
        .arg(&xb)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 256)
        .run());
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(ok(dev.download::<f32>(&out)), want);
}

#[test]
fn a_faulting_kernel_loses_the_device_and_a_fresh_one_works() {
    let dev = match Device::cuda(0) {
        Ok(d) => d,
        Err(e) => {
            if std::env::var("TILEWISE_REQUIRE_CUDA").as_deref() == Ok("1") {
                panic!("TILEWISE_REQUIRE_CUDA=1 but there is no CUDA device: {e}");
            }
            eprintln!("SKIPPED (cuda leg): {e}");
            return;
        }
    };
    doubled_runs(&dev);
    let m = module("loss.py", SRC);
    let out = ok(dev.zeros::<f32>(1000));
    // Unchecked: the store faults on the GPU; the launch itself is queued.
    let launched = ok(m.kernel("far_store"))
        .launch(&dev, 64)
        .arg(&out)
        .constexpr("BLOCK", 1024)
        .run();
    let first = match launched.and_then(|_| dev.synchronize()) {
        Ok(()) => panic!("a store 2^28 elements past a 1000-element buffer did not fault"),
        Err(e) => e,
    };
    assert_eq!(first.kind, ErrorKind::Runtime, "{}", first.render());
    assert!(first.message.contains("is lost"), "{}", first.render());
    assert!(first.message.contains("`far_store`"), "{}", first.render());
    // Every later call says the same, allocation included.
    let again = err(dev.zeros::<f32>(1000));
    assert_eq!(again.message, first.message);
    let again = err(dev.download::<f32>(&out));
    assert_eq!(again.message, first.message);
    // A new device: where the driver gives the process a fresh context (it resets the
    // faulted one), it opens here; where it refuses (the H200's CUDA 13 driver does), in
    // a worker process (`tilewise worker`). Either way it works and finds the fault in
    // checked mode with its line. Only without a `tilewise` executable to serve as the
    // worker does it fail, saying why and what to do.
    match Device::cuda(0) {
        Ok(fresh) => {
            doubled_runs(&fresh);
            let checked = fresh.checked();
            let out = ok(checked.zeros::<f32>(1000));
            let e = err(ok(m.kernel("far_store"))
                .launch(&checked, 64)
                .arg(&out)
                .constexpr("BLOCK", 1024)
                .run()
                .and_then(|()| checked.synchronize()));
            assert!(e.message.contains("out-of-bounds store"), "{}", e.render());
            assert_eq!(
                e.line(),
                Some(SRC.lines().position(|l| l.contains("(1 << 28)")).unwrap() as u32 + 1),
                "{}",
                e.render()
            );
            doubled_runs(&fresh);
            eprintln!("NOTE: the fresh device is {}", fresh.name());
        }
        Err(e) => {
            let text = e.render();
            assert!(e.message.contains("was lost to a kernel fault"), "{text}");
            assert!(
                text.contains("a worker process could not take over"),
                "{text}"
            );
            assert!(text.contains("TILEWISE_WORKER"), "{text}");
            if std::env::var_os("TILEWISE_WORKER").is_some() {
                panic!("TILEWISE_WORKER is set, yet no worker took over: {text}");
            }
            eprintln!("NOTE: no fresh device without a worker executable: {text}");
        }
    }
}
