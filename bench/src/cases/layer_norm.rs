//! The layer-norm case (`shaders/layer_norm.py`, the forward pass of Triton tutorial
//! 05) on an f32 matrix, checked in float64 on sampled rows; bandwidth-bound, its
//! reference is the copy.

use super::{kernel, record, CaseRun};
use crate::measured::{Measured, COPY_CASE};
use crate::references::{check, layer_norm_f64};
use crate::timing::{input_sets, time, Rotation};
use tilewise::{Buffer, Result};

const LAYER_NORM: &str = include_str!("../../../shaders/layer_norm.py");

/// Nominal floating-point operations per element of the layer-norm forward pass
/// (mean: add; variance: subtract, square, add; normalize: subtract, two multiplies,
/// add).
pub const LAYER_NORM_FLOP_PER_ELEMENT: f64 = 8.0;

/// The layer norm of each row of a `rows x cols` matrix (random weights and biases).
pub(super) fn run(cx: &mut CaseRun, row: &mut Measured, rows: usize, cols: usize) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = kernel(LAYER_NORM, "layer_norm.py", "_layer_norm_fwd_fused")?;
    let (x, w, b) = (cx.rng.vec(rows * cols), cx.rng.vec(cols), cx.rng.vec(cols));
    let (dw, db) = (dev.upload(&w)?, dev.upload(&b)?);
    let poison = |len: usize| dev.upload(&vec![f32::NAN; len]);
    // x, y, mean, rstd.
    let sets = (0..input_sets(dev.kind(), 8 * rows * cols))
        .map(|_| {
            Ok([
                dev.upload(&x)?,
                poison(rows * cols)?,
                poison(rows)?,
                poison(rows)?,
            ])
        })
        .collect::<Result<Vec<_>>>()?;
    let launch = |[dx, dy, dmean, drstd]: &[Buffer; 4]| {
        kern.launch(dev, rows as u32)
            .arg(dx)
            .arg(dy)
            .arg(&dw)
            .arg(&db)
            .arg(dmean)
            .arg(drstd)
            .arg(cols as i32)
            .arg(cols as i32)
            .arg(1e-5f32)
            .constexpr("BLOCK_SIZE", 1024)
            .run()
    };
    let mut err = 0f64;
    for set in &sets {
        launch(set)?;
        let y = dev.download::<f32>(&set[1])?;
        let mut samples = vec![];
        for _ in 0..8.min(rows) {
            let r = cx.rng.index(rows);
            let want = layer_norm_f64(&x[r * cols..(r + 1) * cols], &w, &b, 1e-5);
            for (c, want) in want.into_iter().enumerate() {
                samples.push((y[r * cols + c] as f64, want));
            }
        }
        err = err.max(check(&name, samples.into_iter(), 1e-4)?);
    }
    let elems = (rows * cols) as f64;
    // X read twice for the statistics and once to normalize, Y written once.
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || launch(&sets[rot.advance()]))?;
    row.notes.push(("input_sets", sets.len() as f64));
    record(
        row,
        t,
        LAYER_NORM_FLOP_PER_ELEMENT * elems,
        16.0 * elems,
        err,
    );
    row.reference = Some(COPY_CASE.into());
    row.roofline = true;
    Ok(())
}
