//! GPU timestamps for the benchmark harness and the autotuner (the device's timer).
//!
//! A timed region ([`WgpuContext::begin_timing`] .. [`WgpuContext::end_timing`]) gives
//! every compute pass recorded inside it its own pair of timestamps (`TIMESTAMP_QUERY`,
//! timestamp writes in the pass descriptor). At the end the queries are resolved, read
//! back and converted to nanoseconds with `queue.get_timestamp_period()`, giving two
//! figures:
//!
//! - `span_ns`: from the start of the first pass to the end of the last, the
//!   counterpart of CUDA events around a stream's work (it includes the barriers wgpu
//!   puts between dependent passes);
//! - `busy_ns`: the sum of each pass's own duration.
//!
//! `begin_timing` waits for all earlier work first: a timestamp at the top of the first
//! pass may be written before earlier, still-running work has drained, which is how a
//! first trial that only flushed measured work that was not its own.
//!
//! Without `TIMESTAMP_QUERY`, `begin_timing` returns `false` and the harness falls back
//! to host timing around [`WgpuContext::synchronize`].

use std::sync::mpsc;

use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::context::WgpuContext;
use crate::dispatch::Launch;

/// Queries in one query set (wgpu allows at most 4096).
const QUERIES_PER_SET: u32 = 4096;

/// Device time of the passes of a timed region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuTiming {
    /// Nanoseconds from the start of the first pass to the end of the last.
    pub span_ns: f64,
    /// Sum of the passes' own durations in nanoseconds.
    pub busy_ns: f64,
    /// How many passes that covers.
    pub launches: usize,
}

impl GpuTiming {
    /// Mean span per launch in nanoseconds.
    pub fn per_launch_ns(&self) -> f64 {
        self.span_ns / self.launches.max(1) as f64
    }
}

/// The query sets of an open timed region.
#[derive(Default)]
pub(crate) struct TimingRegion {
    sets: Vec<wgpu::QuerySet>,
    /// Passes recorded so far; pass `i` writes queries `2i` and `2i + 1`.
    passes: u32,
}

impl TimingRegion {
    /// The timestamp writes of the next pass.
    pub(crate) fn next_pass(
        &mut self,
        device: &wgpu::Device,
    ) -> wgpu::ComputePassTimestampWrites<'_> {
        let first = 2 * self.passes;
        let (set, at) = (first / QUERIES_PER_SET, first % QUERIES_PER_SET);
        if set as usize == self.sets.len() {
            self.sets
                .push(device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("tilewise timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: QUERIES_PER_SET,
                }));
        }
        self.passes += 1;
        wgpu::ComputePassTimestampWrites {
            query_set: &self.sets[set as usize],
            beginning_of_pass_write_index: Some(at),
            end_of_pass_write_index: Some(at + 1),
        }
    }
}

fn timing_error(msg: String) -> Diagnostic {
    Diagnostic::new(ErrorKind::Backend, format!("timestamps: {msg}"))
}

impl WgpuContext {
    /// Opens a timed region: waits for earlier work, then gives every pass recorded
    /// until [`WgpuContext::end_timing`] its own timestamps. `false` (and nothing
    /// opened) when the device has no timestamp queries.
    pub fn begin_timing(&self) -> Result<bool> {
        if !self.capabilities().timestamps {
            return Ok(false);
        }
        self.synchronize()?;
        let mut batch = self.lock_batch()?;
        if batch.timing.is_some() {
            return Err(Diagnostic::internal("a timed region is already open"));
        }
        batch.timing = Some(TimingRegion::default());
        Ok(true)
    }

    /// Closes the timed region, waits for its work and returns the device time of its
    /// passes (`None` when it recorded none).
    pub fn end_timing(&self) -> Result<Option<GpuTiming>> {
        let region = {
            let mut batch = self.lock_batch()?;
            let region = batch
                .timing
                .take()
                .ok_or_else(|| Diagnostic::internal("end_timing without begin_timing"))?;
            if region.passes == 0 {
                drop(batch);
                self.synchronize()?;
                return Ok(None);
            }
            region
        };
        let queries = 2 * region.passes as u64;
        let bytes = queries * 8;
        let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise timestamp resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise timestamp read-back"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        {
            let mut batch = self.lock_batch()?;
            let encoder = batch.encoder(&self.device);
            let mut left = queries as u32;
            for (i, set) in region.sets.iter().enumerate() {
                let n = left.min(QUERIES_PER_SET);
                let at = i as u64 * QUERIES_PER_SET as u64 * 8;
                encoder.resolve_query_set(set, 0..n, &resolve, at);
                left -= n;
            }
            encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, bytes);
        }
        self.flush()?;
        let (tx, rx) = mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        rx.recv()
            .map_err(|_| timing_error("the map callback never ran".into()))?
            .map_err(|e| timing_error(format!("mapping failed: {e}")))?;
        let ticks: Vec<u64> = {
            let view = readback
                .get_mapped_range(..)
                .map_err(|e| timing_error(e.to_string()))?;
            bytemuck::pod_collect_to_vec(&view)
        };
        readback.unmap();
        let period = self.queue.get_timestamp_period() as f64;
        let pairs: Vec<(u64, u64)> = ticks.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let start = pairs.iter().map(|p| p.0).min().unwrap_or(0);
        let end = pairs.iter().map(|p| p.1).max().unwrap_or(0);
        let busy: u64 = pairs.iter().map(|p| p.1.saturating_sub(p.0)).sum();
        Ok(Some(GpuTiming {
            span_ns: end.saturating_sub(start) as f64 * period,
            busy_ns: busy as f64 * period,
            launches: pairs.len(),
        }))
    }

    /// Runs `launches` in order in a timed region and returns their device time, or
    /// `None` when the device has no timestamp queries. Waits for the launches.
    pub fn time_launches(&self, launches: &[Launch<'_>]) -> Result<Option<GpuTiming>> {
        if !self.begin_timing()? {
            for l in launches {
                self.launch(l)?;
            }
            self.synchronize()?;
            return Ok(None);
        }
        let recorded = launches.iter().try_for_each(|l| self.launch(l));
        let timing = self.end_timing();
        recorded?;
        timing
    }
}
