//! The launch case (`--suite launch`): the host cost per launch of a tiny vector add,
//! over many queued launches (the wall time and, with GPU timers, the device time per
//! launch go to the notes). On CUDA its reference is the same PTX launched straight
//! through the driver.

use super::vector_add::add_kernel;
use super::CaseRun;
use crate::measured::{Measured, Role};
use crate::references::{check, CudaRefs};
use crate::timing::{median, HOST};
use std::time::Instant;
use tilewise::cuda::{KernelArg, PtxTarget};
use tilewise::{DeviceKind, Result};

/// The reference row's case name.
const DRIVER_LAUNCH: &str = "driver launch, same PTX";

/// Queues `launches` vector adds of `n` elements, `reps` times.
pub(super) fn run(cx: &mut CaseRun, row: &mut Measured, n: usize, launches: usize) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = add_kernel()?;
    let (x, y) = (cx.rng.vec(n), cx.rng.vec(n));
    let (dx, dy) = (dev.upload(&x)?, dev.upload(&y)?);
    let dout = dev.upload(&vec![f32::NAN; n])?;
    let mut launch = || {
        kern.launch(dev, (n as u32).div_ceil(1024))
            .arg(&dx)
            .arg(&dy)
            .arg(&dout)
            .arg(n as i32)
            .constexpr("BLOCK_SIZE", 1024)
            .run()
    };
    launch()?;
    let got = dev.download::<f32>(&dout)?;
    let pairs = (0..n).map(|i| (got[i] as f64, x[i] as f64 + y[i] as f64));
    row.max_rel_err = check(&name, pairs, 1e-6)?;
    let queue_all =
        |launch: &mut dyn FnMut() -> Result<()>| (0..launches).try_for_each(|_| launch());
    queue_all(&mut launch)?; // warm-up
    dev.synchronize()?;
    let (mut host, mut wall) = (vec![], vec![]);
    for _ in 0..reps {
        let t = Instant::now();
        queue_all(&mut launch)?;
        host.push(t.elapsed().as_secs_f64() / launches as f64);
        dev.synchronize()?;
        wall.push(t.elapsed().as_secs_f64() / launches as f64);
    }
    let mut device = vec![];
    for _ in 0..reps {
        match dev.time_on_device(|| queue_all(&mut launch))? {
            Some(t) => device.push(t / launches as f64),
            None => break,
        }
    }
    row.seconds = median(host);
    // The floor: the same PTX launched straight through the driver wrapper
    // (cuLaunchKernel and its argument checks), on the references' runtime.
    if let Some(refs) = cx.refs {
        let compiled = kern
            .launch(dev, (n as u32).div_ceil(1024))
            .arg(&dx)
            .arg(&dy)
            .arg(&dout)
            .arg(n as i32)
            .constexpr("BLOCK_SIZE", 1024)
            .compile()?;
        cx.reference_rows.push(Measured {
            case: DRIVER_LAUNCH.into(),
            device: row.device.clone(),
            size: row.size.clone(),
            seconds: driver_launch_seconds(refs, &compiled, n, launches, reps)?,
            flops: 0.0,
            bytes: 0.0,
            max_rel_err: 0.0,
            timer: HOST,
            role: Role::Reference,
            reference: None,
            roofline: false,
            notes: vec![("launches", launches as f64)],
        });
        row.reference = Some(DRIVER_LAUNCH.into());
    }
    row.notes.push(("launches", launches as f64));
    row.notes.push(("wall_per_launch_s", median(wall)));
    if !device.is_empty() {
        row.notes.push(("device_per_launch_s", median(device)));
        row.timer = if dev.kind() == DeviceKind::Wgpu {
            "host clock (+ gpu timestamps)"
        } else {
            "host clock (+ cuda events)"
        };
    }
    Ok(())
}

/// Median host seconds per launch of `compiled`'s PTX (for this device's compute
/// capability, sm_90 at most) through the references' runtime, `launches` queued at a
/// time, after one untimed round.
fn driver_launch_seconds(
    refs: &CudaRefs,
    compiled: &tilewise::Compiled,
    n: usize,
    launches: usize,
    reps: usize,
) -> Result<f64> {
    let (major, minor) = refs.rt.compute_capability();
    let target = PtxTarget {
        sm: (major * 10 + minor).min(90),
    };
    let ptx = compiled.ptx_for(target, 4)?;
    let func = refs.rt.load_module(&ptx.source, &ptx.entry)?;
    let bufs = [
        refs.rt.alloc_zeroed(4 * n)?,
        refs.rt.alloc_zeroed(4 * n)?,
        refs.rt.alloc_zeroed(4 * n)?,
    ];
    let args = [
        KernelArg::U64(bufs[0].address()),
        KernelArg::U64(bufs[1].address()),
        KernelArg::U64(bufs[2].address()),
        KernelArg::U32(n as u32),
    ];
    let grid = [(n as u32).div_ceil(1024), 1, 1];
    let raw = || {
        refs.rt
            .launch(&func, grid, [ptx.threads, 1, 1], ptx.shared_bytes, &args)
    };
    (0..launches).try_for_each(|_| raw())?;
    refs.rt.synchronize()?;
    let mut host = vec![];
    for _ in 0..reps {
        let t = Instant::now();
        (0..launches).try_for_each(|_| raw())?;
        host.push(t.elapsed().as_secs_f64() / launches as f64);
        refs.rt.synchronize()?;
    }
    Ok(median(host))
}
