//! The compile-time cases (`--suite compile`), all on the block-pointer matmul with
//! 64x64x32 blocks: source text to validated WGSL and to PTX text on the host, and on a
//! GPU source text to a loaded module run once, with the persistent cache off or warm.

use super::matmul::{block_ptr_kernel, launch_block_ptr, MmType};
use super::CaseRun;
use super::MatmulConfig;
use crate::measured::Measured;
use crate::references::{check, matmul_samples};
use crate::timing::{median, time_host};
use std::time::Instant;
use tilewise::{Device, DeviceKind, Result};

/// The compile cases' specialization: the block-pointer matmul, 64x64x32 blocks, traced
/// for 4096^3 arguments (buffers on a host interpreter, as the previous figures did).
fn compile_matmul() -> Result<tilewise::Compiled> {
    let kern = block_ptr_kernel(false)?;
    let host = Device::interpreter();
    let (a, c) = (host.zeros::<f32>(16)?, host.zeros::<f32>(16)?);
    let mut launch = kern.launch(&host, 1).arg(&a).arg(&a).arg(&c);
    for v in [4096i32, 4096, 4096, 4096, 1, 4096, 1, 4096, 1] {
        launch = launch.arg(v);
    }
    launch
        .constexpr("BLOCK_M", 64)
        .constexpr("BLOCK_N", 64)
        .constexpr("BLOCK_K", 32)
        .compile()
}

/// Source text to validated WGSL: parse, trace, lower, print, naga validation.
pub(super) fn to_wgsl(cx: &CaseRun, row: &mut Measured) -> Result<()> {
    row.seconds = time_host(cx.reps, || compile_matmul()?.wgsl().map(|_| ()))?;
    Ok(())
}

/// Source text to PTX text.
pub(super) fn to_ptx(cx: &CaseRun, row: &mut Measured) -> Result<()> {
    row.seconds = time_host(cx.reps, || compile_matmul()?.ptx().map(|_| ()))?;
    Ok(())
}

/// Source text to a loaded module (CUDA) or pipeline (wgpu) run once on a 64^3 input,
/// on a fresh device each time; `warm`: with a persistent cache an untimed first run
/// filled (see [`super::Case::CompileLoad`]).
pub(super) fn to_loaded_module(cx: &mut CaseRun, row: &mut Measured, warm: bool) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let rng = &mut cx.rng;
    let (m, n, k) = (64, 64, 64);
    let (a, b) = (rng.vec(m * k), rng.vec(k * n));
    let dir = std::env::temp_dir().join(format!("tilewise-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut times = vec![];
    let mut err = 0f64;
    // The warm case's first run fills the cache, untimed.
    let runs = reps.max(3) + warm as usize;
    for run in 0..runs {
        if warm {
            std::env::set_var("TILEWISE_CACHE_DIR", &dir);
            std::env::remove_var("TILEWISE_CACHE");
        } else {
            std::env::set_var("TILEWISE_CACHE", "0");
        }
        // A fresh device: no compiled-kernel cache in memory.
        let fresh = match dev.kind() {
            DeviceKind::Cuda => Device::cuda(0),
            _ => Device::wgpu(),
        };
        std::env::remove_var("TILEWISE_CACHE");
        std::env::remove_var("TILEWISE_CACHE_DIR");
        let fresh = fresh?;
        let (da, db) = (fresh.upload(&a)?, fresh.upload(&b)?);
        let dc = fresh.upload(&vec![f32::NAN; m * n])?;
        fresh.synchronize()?;
        let t = Instant::now();
        let kern = block_ptr_kernel(false)?;
        launch_block_ptr(
            &kern,
            &fresh,
            (&da, &db, &dc),
            (m, n, k),
            MatmulConfig::new((64, 64, 32), 4),
        )?;
        fresh.synchronize()?;
        if !warm || run > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
        let c = fresh.download::<f32>(&dc)?;
        let samples = matmul_samples(rng, &a, &b, &c, (m, n, k));
        err = err.max(check(&name, samples.into_iter(), MmType::Tf32.tolerance())?);
    }
    let _ = std::fs::remove_dir_all(&dir);
    row.notes.push(("first_s", times[0]));
    row.seconds = median(times);
    row.max_rel_err = err;
    Ok(())
}
