//! The copy case: a plain device buffer copy of f32 (`Device::copy`; a device-to-device
//! memcpy on CUDA), checked exactly. It is a reference, not a tilewise kernel: the
//! memory roof of the device and the bandwidth reference of the bandwidth-bound cases.

use super::{f32_sets, record, CaseRun};
use crate::measured::{Measured, Role};
use crate::references::fail;
use crate::timing::{time, Rotation};
use tilewise::Result;

/// Copies `n` f32 on the device.
pub(super) fn run(cx: &mut CaseRun, row: &mut Measured, n: usize) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let x = cx.rng.vec(n);
    let sets = f32_sets(dev, &x, n)?;
    for (src, dst) in &sets {
        dev.copy(src, dst)?;
        if dev.download::<f32>(dst)? != x {
            return Err(fail(&name, "the copy differs from its source".into()));
        }
    }
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || {
        let (src, dst) = &sets[rot.advance()];
        dev.copy(src, dst)
    })?;
    record(row, t, 0.0, 8.0 * n as f64, 0.0);
    row.notes.push(("input_sets", sets.len() as f64));
    row.role = Role::Reference;
    Ok(())
}
