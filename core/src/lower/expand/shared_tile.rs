//! How a `dot` operand tile lies in shared memory: the element offset of each of its
//! coordinates, for the stores and asynchronous copies that fill it and for the plan
//! that reads it.
//!
//! Three forms, one per dot plan ([`StagedLayout`]):
//! - **FMA**: `a` K-major (`[K][M]`), `b` row-major, unpadded: a thread's rows and
//!   columns at one `k` are consecutive.
//! - **Padded** (`mma.sync`, cooperative matrices): both row-major, `a`'s rows padded by
//!   16 bytes and `b`'s by 8 elements, so `ldmatrix` rows miss each other's banks. With
//!   a `b` contiguous along K in memory (`mma.sync` only), `b` is stored transposed
//!   (`[N][K]`) with rows padded by 16 bytes, as `a`.
//! - **Swizzled** (`wgmma`): both row-major (`a` K-major, `b` N-major; tf32's `b` is
//!   stored transposed, K-major), the tile cut along its contiguous dimension into
//!   blocks of `bytes`-wide rows (32, 64 or 128 bytes: the widest the tile fills),
//!   blocks one after the other; within each group of
//!   eight rows, 16-byte chunk `c` of row `r` is stored at chunk `c ^ (r % 8)` (the
//!   bits the row's position contributes to address bits 7.. XORed into bits 4..).
//!   This is the hardware's canonical layout for matrix descriptors: a 128-byte
//!   swizzle is `Swizzle<3,4,3>` on byte addresses, repeating every 1024 bytes, so a
//!   swizzled tile starts on a multiple of `8 * bytes`. The map from coordinates to
//!   offsets is linear over GF(2), so a thread computes its own part once and each
//!   register XORs in a constant; where no thread can set the constant's bits, it
//!   adds it instead, so that a group of copies addresses one register plus
//!   constants (`[reg + imm]` in PTX).

use super::Expander;
use crate::diag::{Diagnostic, Result};
use crate::ir::{BinaryOp, DType, StagedLayout};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg};

/// The shared layout of one operand tile (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SharedTile {
    /// Rows `stride` elements apart; `transpose` stores the tile as `[cols][rows]`.
    Strided { transpose: bool, stride: u32 },
    /// The `wgmma` form.
    Swizzled(SwizzledTile),
}

/// A stored `rows x cols` matrix (contiguous along `cols`) of `elem`-byte elements in
/// blocks of `bytes`-wide rows, 16-byte chunks swizzled within groups of eight rows;
/// with `transposed`, the tile's element `(r, c)` is the stored `(c, r)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SwizzledTile {
    pub rows: u32,
    pub cols: u32,
    pub bytes: u32,
    pub elem: u32,
    pub transposed: bool,
}

impl SwizzledTile {
    /// The swizzle width for a tile whose rows are `row_bytes` long: the widest of
    /// 128, 64 and 32 bytes they fill; `None` below 32 bytes.
    pub(crate) fn width_for(row_bytes: u32) -> Option<u32> {
        [128, 64, 32].into_iter().find(|&w| row_bytes >= w)
    }

    /// Elements in one block row.
    pub(crate) fn block_cols(&self) -> u32 {
        self.bytes / self.elem
    }

    /// Bytes from one block of columns to the next.
    pub(crate) fn block_bytes(&self) -> u32 {
        self.rows * self.bytes
    }

    /// The element offset of the tile's `(row, col)`.
    pub(crate) fn tile_offset(&self, row: u32, col: u32) -> u32 {
        if self.transposed {
            self.offset(col, row)
        } else {
            self.offset(row, col)
        }
    }

    /// For a layout of the tile's `[rows, cols]` shape: the offset bits any thread's
    /// part of a coordinate can set, and each register's part. A thread's element in
    /// register `r` lies at its register-0 offset XOR `parts[r]`, which is an addition
    /// where `parts[r]` and the thread bits are disjoint.
    pub(crate) fn register_parts(&self, layout: &LinearLayout) -> (u32, Vec<u32>) {
        let thread_bits = layout
            .lane_bases()
            .iter()
            .chain(layout.warp_bases())
            .fold(0, |m, b| m | self.tile_offset(b[0], b[1]));
        let parts = (0..layout.num_regs())
            .map(|r| {
                let c = layout.apply(r, 0, 0);
                self.tile_offset(c[0], c[1])
            })
            .collect();
        (thread_bits, parts)
    }

    /// The element offset of the stored `(row, col)`.
    pub(crate) fn offset(&self, row: u32, col: u32) -> u32 {
        let wc = self.block_cols();
        let e = (col / wc) * self.rows * wc + row * wc + col % wc;
        let byte = e * self.elem;
        let mask = self.bytes / 16 - 1;
        (byte ^ (((byte >> 7) & mask) << 4)) / self.elem
    }
}

impl SharedTile {
    /// The layout a staged operand of `shape` (`[M, K]` for operand 0, `[K, N]` for
    /// operand 1) and element type `dtype` takes for `layout`.
    pub(crate) fn of(layout: StagedLayout, operand: u8, shape: &[u32], dtype: DType) -> SharedTile {
        let elem = dtype.size_bytes() as u32;
        match (layout, operand) {
            (StagedLayout::PaddedTransposed, _) => SharedTile::Strided {
                transpose: true,
                stride: shape[0] + 16 / elem,
            },
            (StagedLayout::Padded, 0) => SharedTile::Strided {
                transpose: false,
                stride: shape[1] + 16 / elem,
            },
            (StagedLayout::Padded, _) => SharedTile::Strided {
                transpose: false,
                stride: shape[1] + 8,
            },
            (StagedLayout::Fma, 0) => SharedTile::Strided {
                transpose: true,
                stride: shape[0],
            },
            (StagedLayout::Fma, _) => SharedTile::Strided {
                transpose: false,
                stride: shape[1],
            },
            (StagedLayout::Swizzled { bytes, transposed }, _) => {
                let (rows, cols) = if transposed {
                    (shape[1], shape[0])
                } else {
                    (shape[0], shape[1])
                };
                SharedTile::Swizzled(SwizzledTile {
                    rows,
                    cols,
                    bytes,
                    elem,
                    transposed,
                })
            }
        }
    }

    /// Elements of one tile of `shape`.
    pub(crate) fn len(&self, shape: &[u32]) -> u32 {
        match *self {
            SharedTile::Strided { transpose, stride } => {
                stride * if transpose { shape[1] } else { shape[0] }
            }
            SharedTile::Swizzled(t) => t.rows * t.cols,
        }
    }

    /// The alignment, in bytes, the tile's start needs.
    pub(crate) fn align(&self) -> u32 {
        match self {
            SharedTile::Strided { .. } => 16,
            SharedTile::Swizzled(t) => 8 * t.bytes,
        }
    }

    /// Elements from one stored row to the next (strided), or in a block row
    /// (swizzled).
    pub(crate) fn stride(&self) -> u32 {
        match *self {
            SharedTile::Strided { stride, .. } => stride,
            SharedTile::Swizzled(t) => t.block_cols(),
        }
    }

    /// Whether the tile is stored transposed (a thread's run along the last dimension
    /// is then not contiguous in shared memory).
    pub(crate) fn transposed(&self) -> bool {
        matches!(
            self,
            SharedTile::Strided {
                transpose: true,
                ..
            } | SharedTile::Swizzled(SwizzledTile {
                transposed: true,
                ..
            })
        )
    }

    /// The most elements of a run along the last dimension that stay contiguous (and
    /// aligned) in shared memory: a row (strided), a 16-byte chunk (swizzled).
    pub(crate) fn contiguous(&self) -> u32 {
        match *self {
            SharedTile::Strided {
                transpose: true, ..
            } => 1,
            SharedTile::Strided { stride, .. } => 1 << stride.trailing_zeros(),
            SharedTile::Swizzled(t) if t.transposed => 1,
            SharedTile::Swizzled(t) => 16 / t.elem,
        }
    }
}

impl Expander<'_> {
    /// The element offset in `tile`, from element `origin` on (0 when `None`), of each
    /// register's coordinate of `layout` (a layout of the operand's `[rows, cols]`
    /// shape, before any transposition).
    pub(crate) fn tile_indices(
        &mut self,
        layout: &LinearLayout,
        shape: &[u32],
        tile: &SharedTile,
        origin: Option<Reg>,
    ) -> Result<Vec<Reg>> {
        let from_origin = |x: &mut Self, idx: Vec<Reg>| match origin {
            None => idx,
            Some(o) => idx
                .into_iter()
                .map(|i| x.assign(DType::I32, Expr::Binary(BinaryOp::Add, o, i)))
                .collect(),
        };
        match *tile {
            SharedTile::Strided { transpose, stride } => {
                let (view, rows) = if transpose {
                    (layout.permute(&[1, 0]), shape[1])
                } else {
                    (layout.clone(), shape[0])
                };
                let idx = self.linear_indices(&view, &[rows, stride])?;
                Ok(from_origin(self, idx))
            }
            SharedTile::Swizzled(t) => {
                let tile_shape = if t.transposed {
                    [t.cols, t.rows]
                } else {
                    [t.rows, t.cols]
                };
                if layout.rank() != 2 || layout.shape() != tile_shape {
                    return Err(Diagnostic::internal(format!(
                        "swizzled tile {}x{} for a layout of {:?}",
                        t.rows,
                        t.cols,
                        layout.shape()
                    )));
                }
                // The thread's part: the offset of its register-0 coordinate with the
                // register bits cleared, computed once; the offset map is linear, so
                // each register XORs in the offset of its own part.
                let (mut row, mut col) =
                    (self.thread_coord(layout, 0), self.thread_coord(layout, 1));
                if t.transposed {
                    std::mem::swap(&mut row, &mut col);
                }
                let base = self.swizzled_offset(&t, row, col);
                // Where a register's part has no bit that any thread's part can set, the
                // XOR is an addition; when every register's is, the origin joins the
                // thread's part once and each register adds a constant to it, which the
                // backends fold into their addressing (PTX: `[reg + imm]`).
                let (thread_bits, parts) = t.register_parts(layout);
                let additive = parts.iter().all(|p| p & thread_bits == 0);
                let base = match origin {
                    Some(o) if additive => {
                        self.assign(DType::I32, Expr::Binary(BinaryOp::Add, o, base))
                    }
                    _ => base,
                };
                let mut out = vec![];
                for part in parts {
                    if part == 0 {
                        out.push(base);
                        continue;
                    }
                    let k = self.int_const(DType::I32, part as i64);
                    let op = if part & thread_bits == 0 {
                        BinaryOp::Add
                    } else {
                        BinaryOp::Xor
                    };
                    out.push(self.assign(DType::I32, Expr::Binary(op, base, k)));
                }
                Ok(if additive {
                    out
                } else {
                    from_origin(self, out)
                })
            }
        }
    }

    /// [`SwizzledTile::offset`] of registers `row` and `col`.
    fn swizzled_offset(&mut self, t: &SwizzledTile, row: Reg, col: Reg) -> Reg {
        let c = |x: &mut Self, v: u32| x.int_const(DType::I32, v as i64);
        let bin = |x: &mut Self, op, l, r| x.assign(DType::I32, Expr::Binary(op, l, r));
        let wc = t.block_cols();
        let (log_wc, log_rows) = (wc.trailing_zeros(), t.rows.trailing_zeros());
        // (col / wc) * rows * wc + row * wc + col % wc, all in disjoint bits.
        let sh = c(self, log_wc);
        let block = bin(self, BinaryOp::Shr, col, sh);
        let sh = c(self, log_rows + log_wc);
        let hi = bin(self, BinaryOp::Shl, block, sh);
        let sh = c(self, log_wc);
        let mid = bin(self, BinaryOp::Shl, row, sh);
        let m = c(self, wc - 1);
        let lo = bin(self, BinaryOp::And, col, m);
        let e = bin(self, BinaryOp::Or, hi, mid);
        let e = bin(self, BinaryOp::Or, e, lo);
        // Byte bits 7.. XORed into bits 4.., in elements.
        let log_elem = t.elem.trailing_zeros();
        let sh = c(self, 7 - log_elem);
        let s = bin(self, BinaryOp::Shr, e, sh);
        let m = c(self, t.bytes / 16 - 1);
        let s = bin(self, BinaryOp::And, s, m);
        let sh = c(self, 4 - log_elem);
        let s = bin(self, BinaryOp::Shl, s, sh);
        bin(self, BinaryOp::Xor, e, s)
    }
}

#[cfg(test)]
mod tests {
    use super::SwizzledTile;
    use crate::lower::layout::LinearLayout;

    /// A register's part adds to the thread's offset wherever the two share no bit, on
    /// every thread; and the copies of the Hopper matmul's operands (rows of a copy
    /// group 32 or 8 apart, whole 16-byte chunks a thread) are additive throughout,
    /// so a group's shared addresses are one register plus constants.
    #[test]
    fn disjoint_register_parts_add_to_every_threads_offset() {
        let cases = [
            // `a` 128x64 f16: 8 halves a thread, 4x8 threads a warp, 8 warps down.
            ([128, 64], [1, 8], [4, 8], [8, 1], 128, false, true),
            // `b` 64x256 f16: a warp a row of 256, 8 warps down, copies 8 rows apart.
            ([64, 256], [1, 8], [1, 32], [8, 1], 128, false, true),
            // Registers along a swizzled row, and a transposed tile: not additive.
            ([16, 64], [1, 32], [16, 2], [1, 1], 128, false, false),
            ([64, 32], [1, 4], [8, 4], [4, 1], 64, true, false),
        ];
        for (shape, spt, tpw, wpc, bytes, transposed, all_additive) in cases {
            let layout = LinearLayout::blocked(&shape, &spt, &tpw, &wpc, &[1, 0]).unwrap();
            let (rows, cols) = if transposed {
                (shape[1], shape[0])
            } else {
                (shape[0], shape[1])
            };
            let t = SwizzledTile {
                rows,
                cols,
                bytes,
                elem: 2,
                transposed,
            };
            let (thread_bits, parts) = t.register_parts(&layout);
            assert_eq!(
                parts.iter().all(|p| p & thread_bits == 0),
                all_additive,
                "{t:?} {spt:?} {tpw:?}"
            );
            for lane in 0..32 {
                for warp in 0..layout.num_warps() {
                    let c0 = layout.apply(0, lane, warp);
                    let base = t.tile_offset(c0[0], c0[1]);
                    assert_eq!(base & !thread_bits, 0, "{t:?}: thread bits");
                    for (r, &part) in parts.iter().enumerate() {
                        let c = layout.apply(r as u32, lane, warp);
                        let at = t.tile_offset(c[0], c[1]);
                        assert_eq!(at, base ^ part, "{t:?}: register {r}");
                        if part & thread_bits == 0 {
                            assert_eq!(at, base + part, "{t:?}: register {r}");
                        }
                    }
                }
            }
        }
    }

    /// Every offset of a tile is used once, 16-byte chunks stay whole, and the rows of
    /// a group of eight put a given chunk in eight different chunk positions.
    #[test]
    fn swizzled_offsets_are_a_permutation_that_spreads_chunks() {
        for (rows, cols, bytes, elem) in [
            (64, 64, 128, 2),
            (128, 32, 64, 2),
            (32, 16, 32, 2),
            (16, 256, 128, 2),
            (64, 32, 128, 4),
        ] {
            let t = SwizzledTile {
                rows,
                cols,
                bytes,
                elem,
                transposed: false,
            };
            let mut seen = vec![false; (rows * cols) as usize];
            for r in 0..rows {
                for c in 0..cols {
                    let o = t.offset(r, c);
                    assert!(!seen[o as usize], "{t:?}: ({r}, {c}) collides");
                    seen[o as usize] = true;
                    let per_chunk = 16 / elem;
                    assert_eq!(o % per_chunk, c % per_chunk, "{t:?}: chunk split");
                }
            }
            let chunk = |r: u32| t.offset(r, 0) * elem / 16 % (bytes / 16);
            let distinct: std::collections::BTreeSet<u32> = (0..8).map(chunk).collect();
            assert_eq!(distinct.len() as u32, (bytes / 16).min(8), "{t:?}");
        }
    }
}
