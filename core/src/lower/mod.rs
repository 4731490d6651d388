//! The shared lowering from tile IR to per-thread code, used by both GPU backends.
//!
//! Passes, one a file, in pipeline order:
//! - [`block_ptr`]: block pointers become pointer tiles and boundary masks.
//! - [`fp8`]: 8-bit floats become their codes (`u8`) and integer arithmetic.
//! - [`narrow_i64`]: without 64-bit integers (WGSL), 64-bit address arithmetic in 32
//!   bits where that is exact.
//! - [`fold_dot_add`]: `acc + dot(a, b, 0)` becomes `dot(a, b, acc)` (Triton's
//!   `acc += tl.dot(a, b)`).
//! - [`split_k_tile`]: where [`expand::ExpandOptions::k_slices`] asks, the K tile of
//!   each `dot` fed by loads becomes a chain of dots over K slices (less shared memory).
//! - [`simplify`]: folds round-trip integer casts, removes dead code.
//! - [`flatten_loops`]: a loop over tiles around a loop of `dot`s (a persistent matmul)
//!   becomes one loop over (tile, k), so that the pipeline runs across tiles.
//! - [`pipeline`]: issues the loads feeding a `dot` iterations ahead (registers, or
//!   shared-memory rings filled by asynchronous copies).
//! - [`expand`]: tile IR to Thread IR (layouts, per-thread registers, shared memory).
//! - [`math`]: Thread IR: `erf`, `tanh`, `pow`, the `sin`/`cos` range reduction
//!   (and `exp`/`log` where the target lacks them) in basic operations; narrow-float
//!   arithmetic in f32, rounded once per operation.
//! - [`value_numbering`]: Thread IR: shares repeated computations, removes dead ones.
//! - [`hoist_into_branches`]: Thread IR: arithmetic on values a loop keeps until an
//!   `if` changes them runs in that `if` (a flattened loop's per-tile offsets).
//! - [`carried_addresses`]: Thread IR, targets with global addresses: a loop's
//!   asynchronous copies read 64-bit addresses carried across the loop.
//! - [`dead_shared`]: Thread IR: stores nothing reads, and barriers that order nothing.
//! - [`shared_reuse`]: Thread IR: shared arrays with disjoint lifetimes share memory.
//!
//! Infrastructure:
//! - [`rewrite`]: rebuilds a kernel op by op; the skeleton of tile-IR-to-tile-IR passes.
//! - [`axis_info`]: the analysis of contiguity, divisibility and constancy that wide
//!   accesses rely on (read by `expand`).
//! - [`layout`]: linear layouts, which thread holds which element of a tile.

pub mod axis_info;
pub mod block_ptr;
pub mod carried_addresses;
pub mod dead_shared;
pub mod expand;
pub mod flatten_loops;
pub mod fold_dot_add;
pub mod fp8;
pub mod hoist_into_branches;
pub mod layout;
pub mod math;
pub mod narrow_i64;
pub mod pipeline;
pub mod rewrite;
pub mod shared_reuse;
pub mod simplify;
pub mod split_k_tile;
pub mod value_numbering;

use crate::diag::Result;
use crate::ir::{DType, Kernel};

/// The tile-IR passes a GPU backend runs before expansion, in order: block pointers to
/// pointer tiles (address arithmetic in `index`), fp8 to its codes, 64-bit address
/// arithmetic narrowed where the device has no 64-bit integers, `acc + dot(a, b, 0)`
/// folded into the dot, the K tiles of dots split where `options` ask, simplification, persistent loop nests flattened where
/// `options` stage operands asynchronously, then pipelining of the loads that feed
/// `dot`s (in registers, or staged in shared memory where `options` allow asynchronous
/// copies).
pub fn prepare(kernel: &Kernel, index: DType, options: &expand::ExpandOptions) -> Result<Kernel> {
    prepare_with_notes(kernel, index, options).map(|(k, _)| k)
}

/// [`prepare`], with what it chose for the compiled kernel's notes (`line N: ...`).
pub fn prepare_with_notes(
    kernel: &Kernel,
    index: DType,
    options: &expand::ExpandOptions,
) -> Result<(Kernel, Vec<String>)> {
    // In debug builds and tests, the tile IR verifier runs after every pass.
    let check = |k: Kernel, pass: &str| -> Result<Kernel> {
        if cfg!(debug_assertions) {
            crate::ir::verify::verify(&k).map_err(|e| {
                crate::diag::Diagnostic::internal(format!(
                    "tile IR after the {pass} pass: {}",
                    e.message
                ))
            })?;
        }
        Ok(k)
    };
    let k = check(
        block_ptr::lower_block_pointers_with(kernel, index, options.checked, options.tma)?,
        "block_ptr",
    )?;
    let k = check(fp8::lower_fp8(&k)?, "fp8")?;
    let k = if options.native_i64 {
        k
    } else {
        check(narrow_i64::narrow_i64(&k), "narrow_i64")?
    };
    let k = check(fold_dot_add::fold_dot_adds(&k)?, "fold_dot_add")?;
    let (k, mut notes) = split_k_tile::split_k_tiles(&k, options)?;
    let k = check(k, "split_k_tile")?;
    let k = check(simplify::simplify(&k)?, "simplify")?;
    let (k, flattened) = flatten_loops::flatten_tile_loops(&k, options)?;
    notes.extend(flattened);
    let k = check(k, "flatten_loops")?;
    let k = check(pipeline::pipeline_dot_loads(&k, options)?, "pipeline")?;
    Ok((k, notes))
}

/// The whole shared lowering of a GPU backend: [`prepare`] with 32-bit indices (every
/// GPU backend addresses in i32), then [`expand::expand`] with `options`, then the
/// Thread IR passes ([`math::lower_math`], [`value_numbering::value_numbering`],
/// [`hoist_into_branches::hoist_into_branches`], [`carried_addresses`] where the
/// target has global addresses, [`dead_shared::remove_dead_shared`],
/// [`shared_reuse::reuse_shared`]); in debug builds the Thread IR verifier runs after
/// each.
pub fn to_thread_ir(
    kernel: &Kernel,
    options: &expand::ExpandOptions,
) -> Result<crate::thread_ir::ThreadKernel> {
    let (k, notes) = prepare_with_notes(kernel, DType::I32, options)?;
    let mut t = expand::expand(&k, options)?;
    t.notes.splice(0..0, notes);
    let check = |t: &crate::thread_ir::ThreadKernel, pass: &str| -> Result<()> {
        if cfg!(debug_assertions) {
            crate::thread_ir::verify::verify(t, options, pass)?;
        }
        Ok(())
    };
    check(&t, "expand")?;
    math::lower_math(&mut t, options);
    check(&t, "math")?;
    value_numbering::value_numbering(&mut t);
    check(&t, "value_numbering")?;
    hoist_into_branches::hoist_into_branches(&mut t);
    check(&t, "hoist_into_branches")?;
    if options.global_addresses && carried_addresses::carry_copy_addresses(&mut t) > 0 {
        check(&t, "carried_addresses")?;
        // The integer index chains nothing reads any more.
        value_numbering::value_numbering(&mut t);
        check(&t, "value_numbering")?;
    }
    dead_shared::remove_dead_shared(&mut t);
    check(&t, "dead_shared")?;
    shared_reuse::reuse_shared(&mut t, options.shared_overlays);
    check(&t, "shared_reuse")?;
    Ok(t)
}
