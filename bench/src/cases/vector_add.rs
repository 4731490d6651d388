//! The vector-add case (`shaders/vector_add.py`, Triton tutorial 01) in f32, f16 or
//! bf16, checked on every element against the sum rounded once to the element type;
//! bandwidth-bound, its reference is the copy. Its kernel also serves the launch case.

use super::{kernel, record, CaseRun};
use crate::inputs::HostMat;
use crate::measured::{Measured, COPY_CASE};
use crate::references::check;
use crate::timing::{input_sets, time, Rotation};
use tilewise::{Buffer, DType, Kernel, Result};

const VECTOR_ADD: &str = include_str!("../../../shaders/vector_add.py");

/// The vector add kernel (`BLOCK_SIZE` elements a program).
pub(super) fn add_kernel() -> Result<Kernel> {
    kernel(VECTOR_ADD, "vector_add.py", "add_kernel")
}

/// Adds two vectors of `n` elements of `dtype`.
pub(super) fn run(cx: &mut CaseRun, row: &mut Measured, n: usize, dtype: DType) -> Result<()> {
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let kern = add_kernel()?;
    let (x, y) = (
        HostMat::random(&mut cx.rng, dtype, n),
        HostMat::random(&mut cx.rng, dtype, n),
    );
    let es = dtype.size_bytes();
    let poison = HostMat::F32(vec![f32::NAN; n]).convert(dtype);
    let sets = (0..input_sets(dev.kind(), 3 * es * n))
        .map(|_| Ok((x.upload(dev)?, y.upload(dev)?, poison.upload(dev)?)))
        .collect::<Result<Vec<_>>>()?;
    let launch = |(dx, dy, dout): &(Buffer, Buffer, Buffer)| {
        kern.launch(dev, (n as u32).div_ceil(1024))
            .arg(dx)
            .arg(dy)
            .arg(dout)
            .arg(n as i32)
            .constexpr("BLOCK_SIZE", 1024)
            .run()
    };
    // The sum of two inputs, rounded once to the output type.
    let (xf, yf) = (x.to_f32(), y.to_f32());
    let want = HostMat::F32((0..n).map(|i| xf[i] + yf[i]).collect())
        .convert(dtype)
        .to_f32();
    let mut err = 0f64;
    for s in &sets {
        launch(s)?;
        let got = HostMat::download(dev, &s.2)?.to_f32();
        let pairs = (0..n).map(|i| (got[i] as f64, want[i] as f64));
        err = err.max(check(&name, pairs, 1e-6)?);
    }
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || launch(&sets[rot.advance()]))?;
    record(row, t, n as f64, 3.0 * (es * n) as f64, err);
    row.notes.push(("input_sets", sets.len() as f64));
    row.reference = Some(COPY_CASE.into());
    row.roofline = true;
    Ok(())
}
