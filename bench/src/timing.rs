//! How the cases are timed: [`time`] (warm-up, then the median of repeated batches, on
//! the GPU's own timers where the device has them and on the host clock elsewhere),
//! [`time_host`] for host-only work, the [`Queue`]s that can be timed (a tilewise
//! device, the CUDA runtime of the cuBLAS references), and the [`Rotation`] of timed
//! launches through several copies of a case's buffers (sized by [`input_sets`]) so that
//! no launch finds its inputs in a cache.

use std::time::Instant;
use tilewise::cuda::CudaRuntime;
use tilewise::{Device, DeviceKind, Result};

/// What timed a case.
pub const EVENTS: &str = "cuda events";
pub const TIMESTAMPS: &str = "gpu timestamps";
pub const HOST: &str = "host clock";

/// A median time per launch and how it was taken.
pub struct Timing {
    pub seconds: f64,
    pub timer: &'static str,
    pub batch: usize,
}

/// A stream of work that can be timed: a tilewise device, or the CUDA runtime of the
/// cuBLAS references.
pub trait Queue {
    /// Runs `f` `batch` times and returns the device time of the whole batch in seconds,
    /// or `None` (the calls still ran) where there are no GPU timers.
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>>;
    fn sync(&self) -> Result<()>;
    /// Seconds a timed batch should last.
    fn batch_target(&self) -> f64;
    /// Whether this is a GPU (its clocks ramp up under load).
    fn is_gpu(&self) -> bool;
    /// What [`Queue::device_time`] measures with.
    fn timer(&self) -> &'static str;
}

impl Queue for Device {
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>> {
        self.time_on_device(|| (0..batch).try_for_each(|_| f()))
    }
    fn sync(&self) -> Result<()> {
        self.synchronize()
    }
    fn batch_target(&self) -> f64 {
        // GPUs queue launches: time a batch and divide, so that the submission and the
        // wait at the end are amortized. The CPU executors run one launch a batch.
        match self.kind() {
            DeviceKind::Wgpu => 0.1,
            DeviceKind::Cuda => 0.02,
            DeviceKind::Interpreter | DeviceKind::Simulator => 0.0,
        }
    }
    fn is_gpu(&self) -> bool {
        matches!(self.kind(), DeviceKind::Wgpu | DeviceKind::Cuda)
    }
    fn timer(&self) -> &'static str {
        if self.kind() == DeviceKind::Wgpu {
            TIMESTAMPS
        } else {
            EVENTS
        }
    }
}

impl Queue for CudaRuntime {
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>> {
        let start = self.record_event()?;
        (0..batch).try_for_each(|_| f())?;
        let end = self.record_event()?;
        self.synchronize()?;
        Ok(Some(self.elapsed_ms(&start, &end)? as f64 * 1e-3))
    }
    fn sync(&self) -> Result<()> {
        self.synchronize()
    }
    fn batch_target(&self) -> f64 {
        0.02
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn timer(&self) -> &'static str {
        EVENTS
    }
}

/// How long GPUs run batches before the timed ones (see [`time`]).
const WARMUP_S: f64 = 0.3;

/// The median of `v` (of an even count, the upper of the middle two).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bytes the rotated copies of a case's buffers add up to at least: more than any GPU's
/// last-level cache (50 MB on the H100/H200, up to 256 MB elsewhere), so that no timed
/// launch finds its inputs in a cache the previous launch filled.
const ROTATE_BYTES: usize = 256 << 20;
/// Most copies of a case's buffers.
const MAX_SETS: usize = 16;

/// How many copies of its buffers (`working_set` bytes) a case's timed launches rotate
/// through on `dev`: one on the CPU executors and for working sets of
/// [`ROTATE_BYTES`] or more, else enough to reach it (at most [`MAX_SETS`]).
pub fn input_sets(dev_kind: DeviceKind, working_set: usize) -> usize {
    if !matches!(dev_kind, DeviceKind::Wgpu | DeviceKind::Cuda) {
        return 1;
    }
    ROTATE_BYTES.div_ceil(working_set.max(1)).clamp(1, MAX_SETS)
}

/// Cycles through `n` buffer sets: the index of the set the next launch uses.
pub struct Rotation {
    n: usize,
    next: usize,
}

impl Rotation {
    pub fn new(n: usize) -> Rotation {
        Rotation { n, next: 0 }
    }
    pub fn advance(&mut self) -> usize {
        let i = self.next;
        self.next = (self.next + 1) % self.n;
        i
    }
}

fn batch_override() -> Option<usize> {
    std::env::var("TILEWISE_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&b| b > 0)
}

/// Median seconds per launch.
///
/// 1. One launch and a synchronization warm up (specialization, JIT or pipeline
///    creation, caches), then one more launch, timed alone, sizes the batch to about
///    [`Queue::batch_target`].
/// 2. On GPUs, batches run for at least [`WARMUP_S`] before any is timed: clocks ramp up
///    under sustained load only. On the H200's Vulkan driver, back-to-back vector adds
///    in 20 ms batches measured 2.3x slower per launch than in 100 ms ones, on the host
///    clock and the GPU timestamps alike (BENCHMARKS.md).
/// 3. The median of `reps` batches. With GPU timers (CUDA events, wgpu timestamps) each
///    batch is timed by the GPU around it; the host clock also times it (it includes
///    the submission and the wait, so it can only be longer): a GPU figure more than
///    5% above it is a broken timer, and the case fails rather than report it. Without
///    GPU timers (or with `--timer host`), a batch of back-to-back launches ended by one
///    synchronization, on the host clock.
///
/// `TILEWISE_BENCH_BATCH` fixes the batch size.
pub fn time(reps: usize, q: &dyn Queue, launch: &mut dyn FnMut() -> Result<()>) -> Result<Timing> {
    launch()?;
    q.sync()?;
    let host_only = std::env::var("TILEWISE_BENCH_TIMER").as_deref() == Ok("host");
    let gpu_timed = if host_only {
        None
    } else {
        q.device_time(1, launch)?
    };
    let one = match gpu_timed {
        Some(t) => t,
        None => {
            let t = Instant::now();
            launch()?;
            q.sync()?;
            t.elapsed().as_secs_f64()
        }
    };
    // One repetition (smoke runs) times one launch: a check, not a measurement.
    let target = if reps > 1 { q.batch_target() } else { 0.0 };
    let batch = batch_override()
        .unwrap_or_else(|| ((target / one.max(1e-7)).ceil() as usize).clamp(1, 1000));
    if q.is_gpu() && reps > 1 {
        let start = Instant::now();
        while start.elapsed().as_secs_f64() < WARMUP_S {
            for _ in 0..batch {
                launch()?;
            }
            q.sync()?;
        }
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let host = Instant::now();
        let t = if gpu_timed.is_some() {
            q.device_time(batch, launch)?
                .ok_or_else(|| tilewise::Diagnostic::internal("the device timer went away"))?
        } else {
            for _ in 0..batch {
                launch()?;
            }
            q.sync()?;
            host.elapsed().as_secs_f64()
        };
        let host = host.elapsed().as_secs_f64();
        if t > host * 1.05 {
            return Err(tilewise::Diagnostic::internal(format!(
                "the GPU timer ({}) measured {:.3} ms for a batch the host clock saw take \
                 {:.3} ms",
                q.timer(),
                t * 1e3,
                host * 1e3
            )));
        }
        times.push(t / batch as f64);
    }
    Ok(Timing {
        seconds: median(times),
        timer: if gpu_timed.is_some() { q.timer() } else { HOST },
        batch,
    })
}

/// Median host seconds of `reps` (at least 3) calls after one warm-up call.
pub fn time_host(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = vec![];
    for _ in 0..reps.max(3) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(median(times))
}
