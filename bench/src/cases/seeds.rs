//! The seed-pattern cases (`--suite seeds`): the masks of `examples/seeds/ch9_masks.py`
//! (a causal mask, block-sparse skipping, ragged rows) at sizes that fill a GPU, kernels
//! in `bench/kernels/seeds.py`. Each is bandwidth-bound; its reference is the copy, and
//! its bytes count only what the pattern has to move (the lower triangle, the active
//! blocks, the rows' own lengths).

use super::softmax::SOFTMAX_FLOP_PER_ELEMENT;
use super::{f32_sets, kernel, record, CaseRun};
use crate::inputs::Rng;
use crate::measured::{Measured, COPY_CASE};
use crate::references::{check, fail, softmax_f64};
use crate::timing::{time, Rotation};
use tilewise::{Buffer, Device, Result};

const SEEDS: &str = include_str!("../../kernels/seeds.py");

/// Elements per block of the block-sparse case.
const SPARSE_BLOCK: usize = 1024;

/// Fills in the rest of a seed case's row (see [`record`]): the number of buffer sets
/// its timed launches rotated through, and its reference, the copy.
fn finish_row(row: &mut Measured, input_sets: usize) {
    row.notes.push(("input_sets", input_sets as f64));
    row.reference = Some(COPY_CASE.into());
    row.roofline = true;
}

/// Causal row softmax of a `rows x cols` f32 matrix: row `r` is the softmax of its
/// columns `c <= r`, the others come out 0. Checked in float64 on sampled rows.
pub(super) fn causal_softmax(
    cx: &mut CaseRun,
    row: &mut Measured,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (dev, reps, rng, name) = (cx.dev, cx.reps, &mut cx.rng, row.case.clone());
    let kern = kernel(SEEDS, "seeds.py", "causal_softmax_bench_kernel")?;
    let x = rng.vec(rows * cols);
    let sets = f32_sets(dev, &x, rows * cols)?;
    let block = cols.next_power_of_two() as u32;
    let run = |(dx, dout): &(Buffer, Buffer)| {
        kern.launch(dev, rows as u32)
            .arg(dout)
            .arg(dx)
            .arg(cols as i32)
            .arg(cols as i32)
            .constexpr("BLOCK_SIZE", block)
            .num_warps(4)
            .run()
    };
    let mut err = 0f64;
    for set in &sets {
        run(set)?;
        err = err.max(check_causal(dev, rng, &name, &x, &set.1, rows, cols)?);
    }
    // Read: the lower triangle (masked loads skip the rest); written: the whole matrix.
    let read: f64 = (0..rows).map(|r| (r + 1).min(cols) as f64).sum();
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
    record(
        row,
        t,
        SOFTMAX_FLOP_PER_ELEMENT * read,
        4.0 * (read + (rows * cols) as f64),
        err,
    );
    finish_row(row, sets.len());
    Ok(())
}

/// The largest error of a causal softmax output on sampled rows.
fn check_causal(
    dev: &Device,
    rng: &mut Rng,
    name: &str,
    x: &[f32],
    dout: &Buffer,
    rows: usize,
    cols: usize,
) -> Result<f64> {
    let got = dev.download::<f32>(dout)?;
    let mut samples = vec![];
    // Sampled rows, plus the first row (a single unmasked element) and the last.
    let mut sample_rows: Vec<usize> = (0..16.min(rows)).map(|_| rng.index(rows)).collect();
    sample_rows.extend([0, rows - 1]);
    for r in sample_rows {
        let valid = (r + 1).min(cols);
        let want = softmax_f64(&x[r * cols..r * cols + valid]);
        for c in 0..cols {
            let w = if c < valid { want[c] } else { 0.0 };
            samples.push((got[r * cols + c] as f64, w));
        }
    }
    check(name, samples.into_iter(), 1e-5)
}

/// `out = 2 x` over the active blocks (about half, at random) of `n` f32 in blocks of
/// [`SPARSE_BLOCK`]; inactive blocks are skipped whole and must keep their NaN poison.
/// Checked exactly on every element.
pub(super) fn block_sparse(cx: &mut CaseRun, row: &mut Measured, n: usize) -> Result<()> {
    let (dev, reps, rng, name) = (cx.dev, cx.reps, &mut cx.rng, row.case.clone());
    let kern = kernel(SEEDS, "seeds.py", "block_sparse_scale_bench_kernel")?;
    let blocks = n.div_ceil(SPARSE_BLOCK);
    let mut flags: Vec<i32> = (0..blocks).map(|_| (rng.next() < 0.0) as i32).collect();
    flags[0] = 1; // at least one active block, even at tiny sizes
    if blocks > 1 {
        flags[blocks - 1] = 0; // and one skipped
    }
    let x = rng.vec(n);
    let dflags = dev.upload(&flags)?;
    let sets = f32_sets(dev, &x, n)?;
    let run = |(dx, dout): &(Buffer, Buffer)| {
        kern.launch(dev, blocks as u32)
            .arg(dx)
            .arg(dout)
            .arg(&dflags)
            .arg(n as i32)
            .constexpr("BLOCK", SPARSE_BLOCK as u32)
            .run()
    };
    for set in &sets {
        run(set)?;
        check_block_sparse(dev, &name, &x, &flags, &set.1)?;
    }
    let active: f64 = (0..blocks)
        .filter(|&b| flags[b] != 0)
        .map(|b| (SPARSE_BLOCK.min(n - b * SPARSE_BLOCK)) as f64)
        .sum();
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
    // Bytes of the active blocks (read and written) and of the flags.
    record(row, t, active, 8.0 * active + 4.0 * blocks as f64, 0.0);
    finish_row(row, sets.len());
    row.notes.push(("block", SPARSE_BLOCK as f64));
    Ok(())
}

/// Exact check of a block-sparse output: 2x where active, the poison elsewhere.
fn check_block_sparse(
    dev: &Device,
    name: &str,
    x: &[f32],
    flags: &[i32],
    dout: &Buffer,
) -> Result<()> {
    let got = dev.download::<f32>(dout)?;
    for (i, (&g, &v)) in got.iter().zip(x).enumerate() {
        let active = flags[i / SPARSE_BLOCK] != 0;
        if active && g != 2.0 * v {
            return Err(fail(
                name,
                format!("element {i}: {g} where 2x is {}", 2.0 * v),
            ));
        }
        if !active && !g.is_nan() {
            return Err(fail(
                name,
                format!("element {i} of a skipped block was written ({g})"),
            ));
        }
    }
    Ok(())
}

/// Row sums of a padded `rows x max_len` f32 matrix, each row summed over its own random
/// length (1 to `max_len`); the padding is NaN, so a read past a row's length shows.
/// Checked in float64 on every row.
pub(super) fn ragged_row_sum(
    cx: &mut CaseRun,
    row: &mut Measured,
    rows: usize,
    max_len: usize,
) -> Result<()> {
    let (dev, reps, rng, name) = (cx.dev, cx.reps, &mut cx.rng, row.case.clone());
    let kern = kernel(SEEDS, "seeds.py", "ragged_row_sum_bench_kernel")?;
    let lengths: Vec<i32> = (0..rows).map(|_| rng.index(max_len) as i32 + 1).collect();
    let mut x = vec![f32::NAN; rows * max_len];
    for (r, &len) in lengths.iter().enumerate() {
        for v in &mut x[r * max_len..r * max_len + len as usize] {
            *v = rng.next();
        }
    }
    let dlen = dev.upload(&lengths)?;
    let sets = f32_sets(dev, &x, rows)?;
    let width = max_len.next_power_of_two() as u32;
    let run = |(dx, dout): &(Buffer, Buffer)| {
        kern.launch(dev, rows as u32)
            .arg(dx)
            .arg(&dlen)
            .arg(dout)
            .arg(max_len as i32)
            .constexpr("MAX_WIDTH", width)
            .run()
    };
    let mut err = 0f64;
    for set in &sets {
        run(set)?;
        let got = dev.download::<f32>(&set.1)?;
        let pairs: Vec<(f64, f64)> = (0..rows)
            .map(|r| {
                let elems = &x[r * max_len..r * max_len + lengths[r] as usize];
                (got[r] as f64, elems.iter().map(|&v| v as f64).sum::<f64>())
            })
            .collect();
        err = err.max(check(&name, pairs.into_iter(), 1e-5)?);
    }
    let valid: f64 = lengths.iter().map(|&l| l as f64).sum();
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
    // The rows' own elements, the lengths and the sums.
    record(row, t, valid, 4.0 * valid + 8.0 * rows as f64, err);
    finish_row(row, sets.len());
    Ok(())
}
