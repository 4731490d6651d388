//! Devices in a worker process (`Device::isolated`, served by `tilewise worker`): kernels
//! run there with the results of the in-process device, checked mode reports an
//! out-of-bounds access with its source line, timers work; on CUDA a kernel that faults
//! loses the worker's device only: this process's own device and a new isolated one
//! keep working. Without wgpu or CUDA a leg says so on stderr
//! (`TILEWISE_REQUIRE_WGPU=1` / `TILEWISE_REQUIRE_CUDA=1` make it a failure).

use tilewise::{Device, ErrorKind, Module};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def scale(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * s, mask=mask)

@triton.jit
def overrun(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x)

@triton.jit
def far_store(out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + (1 << 28), offs.to(tl.float32))
"#;

fn worker() {
    std::env::set_var("TILEWISE_WORKER", env!("CARGO_BIN_EXE_tilewise"));
}

fn isolated(device: &str, require: &str) -> Option<Device> {
    worker();
    match Device::isolated(device) {
        Ok(d) => Some(d),
        Err(e) if std::env::var(require).is_ok_and(|v| v == "1") => {
            panic!("{require}=1 but no isolated {device}: {}", e.render())
        }
        Err(e) => {
            eprintln!("SKIPPED (isolated {device}): {}", e.render());
            None
        }
    }
}

/// `out = x * 3` on `dev` for 1000 random elements (exact: small integers).
fn scale_runs(dev: &Device) {
    let k = Module::parse("iso.py", SRC)
        .unwrap()
        .kernel("scale")
        .unwrap();
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 201) as f32 - 100.0).collect();
    let xb = dev.upload(&x).unwrap();
    let out = dev.upload(&vec![f32::NAN; n]).unwrap();
    for _ in 0..3 {
        k.launch(dev, n.div_ceil(256) as u32)
            .arg(&xb)
            .arg(&out)
            .arg(n as i32)
            .arg(3.0f32)
            .constexpr("BLOCK", 256)
            .run()
            .unwrap();
    }
    let got = dev.download::<f32>(&out).unwrap();
    assert!(
        got.iter().zip(&x).all(|(g, x)| *g == x * 3.0),
        "{}",
        dev.name()
    );
}

#[test]
fn an_isolated_device_runs_kernels_and_reports_located_errors() {
    for (device, require) in [
        ("wgpu", "TILEWISE_REQUIRE_WGPU"),
        ("cuda:0", "TILEWISE_REQUIRE_CUDA"),
    ] {
        let Some(dev) = isolated(device, require) else {
            continue;
        };
        assert!(
            dev.name().contains("(in a worker process)"),
            "{}",
            dev.name()
        );
        scale_runs(&dev);
        // Timed regions go through too.
        let t = dev.time_on_device(|| {
            scale_runs(&dev);
            Ok(())
        });
        assert!(t.is_ok(), "{:?}", t.err().map(|e| e.render()));
        // Checked mode: a load one block past a 1000-element buffer, with its line.
        let m = Module::parse("iso.py", SRC).unwrap();
        let x = dev.zeros::<f32>(1000).unwrap();
        let out = dev.zeros::<f32>(1024).unwrap();
        let e = m
            .kernel("overrun")
            .unwrap()
            .launch(&dev.checked(), 4)
            .arg(&x)
            .arg(&out)
            .constexpr("BLOCK", 256)
            .run()
            .and_then(|()| dev.synchronize())
            .unwrap_err();
        let text = e.render();
        assert_eq!(e.kind, ErrorKind::Runtime, "{text}");
        let want_line = SRC
            .lines()
            .position(|l| l.contains("x = tl.load(x_ptr + offs)"))
            .unwrap() as u32
            + 1;
        assert_eq!(e.line(), Some(want_line), "{text}");
        assert!(text.contains("iso.py"), "{text}");
        // The device goes on working.
        scale_runs(&dev);
    }
}

#[test]
fn a_fault_in_a_worker_loses_only_the_worker_device() {
    let Some(dev) = isolated("cuda:0", "TILEWISE_REQUIRE_CUDA") else {
        return;
    };
    let m = Module::parse("iso.py", SRC).unwrap();
    let out = dev.zeros::<f32>(1000).unwrap();
    let e = m
        .kernel("far_store")
        .unwrap()
        .launch(&dev, 64)
        .arg(&out)
        .constexpr("BLOCK", 1024)
        .run()
        .and_then(|()| dev.synchronize())
        .unwrap_err();
    assert!(e.message.contains("is lost"), "{}", e.render());
    assert!(e.message.contains("`far_store`"), "{}", e.render());
    // The worker's device stays lost; a new worker and this process's device work.
    assert!(dev.zeros::<f32>(10).is_err());
    let fresh = isolated("cuda:0", "TILEWISE_REQUIRE_CUDA").unwrap();
    scale_runs(&fresh);
    let local = Device::cuda(0).unwrap();
    scale_runs(&local);
}
