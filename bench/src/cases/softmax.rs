//! The softmax case (`shaders/fused_softmax.py`, Triton tutorial 02): the row softmax
//! of a square f32 matrix, one program a row, checked in float64 on sampled rows;
//! bandwidth-bound, its reference is the copy.

use super::{f32_sets, kernel, record, CaseRun};
use crate::measured::{Measured, COPY_CASE};
use crate::references::{check, softmax_f64};
use crate::timing::{time, Rotation};
use tilewise::{Buffer, Result};

const SOFTMAX: &str = include_str!("../../../shaders/fused_softmax.py");

/// Nominal floating-point operations per element of softmax (max, subtract, exp, sum,
/// divide), for the GFLOP/s column and the roofline.
pub const SOFTMAX_FLOP_PER_ELEMENT: f64 = 5.0;

/// The softmax of each row of a `rows x cols` matrix.
pub(super) fn run(
    cx: &mut CaseRun,
    row: &mut Measured,
    rows: usize,
    cols: usize,
    warps: u32,
) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = kernel(SOFTMAX, "fused_softmax.py", "softmax_kernel")?;
    let x = cx.rng.vec(rows * cols);
    let sets = f32_sets(dev, &x, rows * cols)?;
    let block = cols.next_power_of_two() as u32;
    let launch = |(dx, dout): &(Buffer, Buffer)| {
        kern.launch(dev, rows as u32)
            .arg(dout)
            .arg(dx)
            .arg(cols as i32)
            .arg(cols as i32)
            .arg(rows as i32)
            .arg(cols as i32)
            .constexpr("BLOCK_SIZE", block)
            .num_warps(warps)
            .run()
    };
    let mut err = 0f64;
    for set in &sets {
        launch(set)?;
        let got = dev.download::<f32>(&set.1)?;
        let mut samples = vec![];
        for _ in 0..16.min(rows) {
            let r = cx.rng.index(rows);
            let want = softmax_f64(&x[r * cols..(r + 1) * cols]);
            for (c, w) in want.into_iter().enumerate() {
                samples.push((got[r * cols + c] as f64, w));
            }
        }
        err = err.max(check(&name, samples.into_iter(), 1e-5)?);
    }
    let elems = (rows * cols) as f64;
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || launch(&sets[rot.advance()]))?;
    row.notes.push(("input_sets", sets.len() as f64));
    record(row, t, SOFTMAX_FLOP_PER_ELEMENT * elems, 8.0 * elems, err);
    row.reference = Some(COPY_CASE.into());
    row.roofline = true;
    Ok(())
}
