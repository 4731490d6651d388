//! The shared lowering from tile IR to per-thread code, used by both GPU backends.
//!
//! Passes, one a file, in pipeline order:
//! - [`block_ptr`]: block pointers become pointer tiles and boundary masks.
//! - [`expand`]: tile IR to Thread IR (layouts, per-thread registers, shared memory).
//!
//! Infrastructure:
//! - [`rewrite`]: rebuilds a kernel op by op; the skeleton of tile-IR-to-tile-IR passes.
//! - [`layout`]: linear layouts, which thread holds which element of a tile.

pub mod block_ptr;
pub mod layout;
pub mod rewrite;
pub mod expand;
