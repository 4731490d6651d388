//! One device shared by threads: work recorded by one thread reaches the GPU in the
//! order it was recorded, whichever thread submits it. Regression test: a wgpu batch
//! taken by one thread's synchronization was submitted after its lock was released, so
//! a later batch (a launch) could overtake it (the copy before the launch): under
//! load the autotuner's restored outputs overwrote the real launch's result.

mod common;

use common::{module, ok};
use std::sync::atomic::{AtomicBool, Ordering};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def bump(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)
"#;

#[test]
fn copies_and_launches_keep_their_order_while_other_threads_synchronize() {
    let mut devices = vec![];
    devices.extend(common::wgpu_device());
    devices.extend(common::cuda_device());
    for dev in devices {
        let k = ok(module("bump.py", SRC).kernel("bump"));
        let n = 4096;
        let ones = ok(dev.upload(&vec![1i32; n]));
        let buf = ok(dev.zeros::<i32>(n));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            // Other threads synchronize the device all the time.
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        ok(dev.synchronize());
                    }
                });
            }
            for round in 0..300 {
                ok(dev.copy(&ones, &buf));
                ok(k.launch(&dev, (n as u32).div_ceil(256))
                    .arg(&buf)
                    .arg(n as i32)
                    .constexpr("BLOCK", 256)
                    .run());
                let got = ok(dev.download::<i32>(&buf));
                if let Some(i) = got.iter().position(|&v| v != 2) {
                    stop.store(true, Ordering::Relaxed);
                    panic!(
                        "{}: round {round}: element {i} is {}, not 2",
                        dev.name(),
                        got[i]
                    );
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}
