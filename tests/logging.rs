//! Logging through the `log` facade: what the library says at `debug` level (the
//! command line and the examples show it with `RUST_LOG=tilewise=debug`). A capturing
//! logger records every event of this test binary; kernels run on the interpreter and,
//! where there is one, on the wgpu device, and the expected events must be there with
//! the `tilewise` target prefix: the specialization cache's miss then hit, the wgpu
//! adapter chosen, the WGSL compile phases with their times, and the persistent cache's
//! store and (on a fresh device) hit.

mod common;

use std::sync::Mutex;
use tilewise::{Device, Module};

struct Capture(Mutex<Vec<(log::Level, String, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, r: &log::Record) {
        if let Ok(mut v) = self.0.lock() {
            v.push((r.level(), r.target().to_string(), r.args().to_string()));
        }
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

fn events() -> Vec<(log::Level, String, String)> {
    CAPTURE.0.lock().map(|v| v.clone()).unwrap_or_default()
}

fn has(events: &[(log::Level, String, String)], level: log::Level, text: &str) -> bool {
    events
        .iter()
        .any(|(l, t, m)| *l == level && t.starts_with("tilewise") && m.contains(text))
}

const ADD: &str = r#"
import triton
import triton.language as tl

@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)
"#;

fn run_add(dev: &Device, n: usize) -> Vec<f32> {
    let module = Module::parse("add.py", ADD).unwrap();
    let k = module.kernel("add").unwrap();
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let (bx, by) = (dev.upload(&x).unwrap(), dev.upload(&x).unwrap());
    let out = dev.upload(&vec![f32::NAN; n]).unwrap();
    k.launch(dev, (n as u32).div_ceil(256))
        .arg(&bx)
        .arg(&by)
        .arg(&out)
        .arg(n as i32)
        .constexpr("BLOCK", 256i64)
        .run()
        .unwrap();
    dev.download::<f32>(&out).unwrap()
}

#[test]
fn compile_and_cache_events_are_logged() {
    log::set_logger(&CAPTURE).expect("the only logger of this binary");
    log::set_max_level(log::LevelFilter::Trace);
    // A persistent cache of this run alone (the only test of this binary sets it before
    // any device exists).
    let cache = std::env::temp_dir().join(format!("tilewise-logging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    std::env::set_var("TILEWISE_CACHE_DIR", &cache);
    std::env::remove_var("TILEWISE_CACHE");
    let dev = Device::interpreter();
    let module = Module::parse("add.py", ADD).unwrap();
    let k = module.kernel("add").unwrap();
    let x = dev.upload(&[1f32, 2.0, 3.0]).unwrap();
    let out = dev.upload(&[f32::NAN; 3]).unwrap();
    for _ in 0..2 {
        k.launch(&dev, 1)
            .arg(&x)
            .arg(&x)
            .arg(&out)
            .arg(3i32)
            .constexpr("BLOCK", 256i64)
            .run()
            .unwrap();
    }
    assert_eq!(dev.download::<f32>(&out).unwrap(), vec![2.0, 4.0, 6.0]);
    let ev = events();
    assert!(
        has(
            &ev,
            log::Level::Debug,
            "specialization cache miss: traced `add`"
        ),
        "{ev:?}"
    );
    assert!(
        has(&ev, log::Level::Trace, "specialization cache hit: `add`"),
        "{ev:?}"
    );
    if let Some(gpu) = common::wgpu_device() {
        let got = run_add(&gpu, 1000);
        assert!(got.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
        let ev = events();
        assert!(has(&ev, log::Level::Info, "wgpu: using"), "{ev:?}");
        assert!(
            has(&ev, log::Level::Debug, "lowered and printed WGSL"),
            "{ev:?}"
        );
        assert!(has(&ev, log::Level::Debug, "pipeline created in"), "{ev:?}");
        assert!(
            has(&ev, log::Level::Debug, "cache: stored (wgpu)"),
            "{ev:?}"
        );
        // A fresh device (an empty in-memory cache) reads the kernel from disk.
        let fresh = Device::wgpu().unwrap();
        let got = run_add(&fresh, 1000);
        assert!(got.iter().enumerate().all(|(i, v)| *v == 2.0 * i as f32));
        let ev = events();
        assert!(has(&ev, log::Level::Debug, "cache: hit (wgpu)"), "{ev:?}");
        assert!(
            has(&ev, log::Level::Debug, "read the cached WGSL"),
            "{ev:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&cache);
}
