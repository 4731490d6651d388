//! GPU timestamps for the benchmark harness.
//!
//! [`WgpuContext::time_launches`] records a sequence of launches with a timestamp
//! written at the beginning of the first compute pass and at the end of the last one
//! (`TIMESTAMP_QUERY`, timestamp writes in the pass descriptor), resolves the two
//! queries, reads them back and converts ticks to nanoseconds with
//! `queue.get_timestamp_period()`. The figure is device time only: no submission,
//! launch-recording or host overhead. Work already pending is submitted first so it
//! is not counted. Without `TIMESTAMP_QUERY` the result is `Ok(None)` and the harness
//! falls back to host timing around [`WgpuContext::synchronize`].

use std::sync::mpsc;

use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::context::WgpuContext;
use crate::dispatch::Launch;

/// Device time of a sequence of launches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuTiming {
    /// Nanoseconds from the start of the first launch to the end of the last.
    pub total_ns: f64,
    /// How many launches that covers.
    pub launches: usize,
}

impl GpuTiming {
    /// Mean nanoseconds per launch.
    pub fn per_launch_ns(&self) -> f64 {
        self.total_ns / self.launches.max(1) as f64
    }
}

impl WgpuContext {
    /// Runs `launches` in order and returns their device time, or `None` when the
    /// device has no timestamp queries. Waits for the launches to finish.
    pub fn time_launches(&self, launches: &[Launch<'_>]) -> Result<Option<GpuTiming>> {
        // A launch with an empty grid records no pass to carry a timestamp.
        let launches: Vec<&Launch<'_>> = launches
            .iter()
            .filter(|l| !l.workgroups.contains(&0))
            .collect();
        if !self.capabilities().timestamps || launches.is_empty() {
            return Ok(None);
        }
        self.flush()?;
        let query_set = self.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("tilewise timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise timestamp resolve"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("tilewise timestamp read-back"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let last = launches.len() - 1;
        for (i, launch) in launches.iter().enumerate() {
            let writes = (i == 0 || i == last).then(|| wgpu::ComputePassTimestampWrites {
                query_set: &query_set,
                beginning_of_pass_write_index: (i == 0).then_some(0),
                end_of_pass_write_index: (i == last).then_some(1),
            });
            self.record(launch, writes)?;
        }
        {
            let mut batch = self.lock_batch()?;
            let encoder = batch.encoder(&self.device);
            encoder.resolve_query_set(&query_set, 0..2, &resolve, 0);
            encoder.copy_buffer_to_buffer(&resolve, 0, &readback, 0, 16);
        }
        self.flush()?;
        let (tx, rx) = mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait()?;
        let mapped = rx.recv().map_err(|_| {
            Diagnostic::new(ErrorKind::Backend, "timestamps: the map callback never ran")
        })?;
        mapped.map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!("timestamps: mapping failed: {e}"),
            )
        })?;
        let ticks: Vec<u64> = {
            let view = readback
                .get_mapped_range(..)
                .map_err(|e| Diagnostic::new(ErrorKind::Backend, format!("timestamps: {e}")))?;
            bytemuck::pod_collect_to_vec(&view)
        };
        readback.unmap();
        let period = self.queue.get_timestamp_period() as f64;
        let total_ns = ticks[1].wrapping_sub(ticks[0]) as f64 * period;
        Ok(Some(GpuTiming {
            total_ns,
            launches: launches.len(),
        }))
    }
}
