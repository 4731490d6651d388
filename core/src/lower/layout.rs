//! Distributed layouts: which thread of a program holds which element of a tile.
//!
//! Every tile dimension is a power of two (as in Triton), so a layout is a *linear
//! layout*: a map, linear over GF(2), from the bits of (register, lane, warp) to the
//! bits of an element coordinate. Each input bit has a basis vector (a coordinate);
//! the coordinate held by `(reg, lane, warp)` is the XOR of the bases of its set bits.
//! A zero basis vector means replication: that bit selects a copy of the same element.
//!
//! Blocked layouts (Triton's `#blocked`: size per thread, threads per warp, warps per
//! CTA, order) have unit bases and no XOR mixing; slice layouts (after a reduction)
//! drop one coordinate; `expand_dims`, `permute` and `reshape` act on the bases alone;
//! tensor-core fragment layouts and swizzled shared-memory layouts are linear too.
//!
//! [`LinearLayout::register_map`] tells whether one layout's values can be read from
//! another's registers in the same thread (a free conversion), which the lowering uses
//! to make broadcasts and reshapes free and to decide when data must cross threads.

use std::collections::HashMap;
use std::fmt;

/// An element coordinate, one entry per tile dimension.
pub type Coord = Vec<u32>;

/// A linear map from (register, lane, warp) bits to element coordinates.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LinearLayout {
    shape: Vec<u32>,
    regs: Vec<Coord>,
    lanes: Vec<Coord>,
    warps: Vec<Coord>,
}

fn log2(x: u32) -> u32 {
    debug_assert!(x.is_power_of_two(), "{x} is not a power of two");
    x.trailing_zeros()
}

fn xor_into(acc: &mut [u32], basis: &[u32]) {
    for (a, b) in acc.iter_mut().zip(basis) {
        *a ^= *b;
    }
}

/// Why a layout could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl LinearLayout {
    /// Triton's blocked layout. `order` lists dimensions fastest first. Dimensions the
    /// layout over-covers are replicated; under-covered ones repeat in registers.
    pub fn blocked(
        shape: &[u32],
        size_per_thread: &[u32],
        threads_per_warp: &[u32],
        warps_per_cta: &[u32],
        order: &[u32],
    ) -> Result<LinearLayout, LayoutError> {
        let rank = shape.len();
        let all = [shape, size_per_thread, threads_per_warp, warps_per_cta];
        if all.iter().any(|v| v.len() != rank) || order.len() != rank {
            return Err(LayoutError(format!(
                "blocked layout parameters disagree in rank with shape {shape:?}"
            )));
        }
        if all.iter().any(|v| v.iter().any(|d| !d.is_power_of_two())) {
            return Err(LayoutError(format!(
                "blocked layout parameters must be powers of two (shape {shape:?})"
            )));
        }
        let mut sorted = order.to_vec();
        sorted.sort_unstable();
        if sorted != (0..rank as u32).collect::<Vec<_>>() {
            return Err(LayoutError(format!("order {order:?} is not a permutation")));
        }
        let unit = |dim: usize, value: u32| -> Coord {
            let mut c = vec![0; rank];
            // Past the tile's extent the coordinate wraps: replicate (zero basis).
            if value < shape[dim] {
                c[dim] = value;
            }
            c
        };
        let mut layout = LinearLayout {
            shape: shape.to_vec(),
            regs: vec![],
            lanes: vec![],
            warps: vec![],
        };
        for &d in order {
            let d = d as usize;
            for b in 0..log2(size_per_thread[d]) {
                layout.regs.push(unit(d, 1 << b));
            }
        }
        for &d in order {
            let d = d as usize;
            for b in 0..log2(threads_per_warp[d]) {
                layout.lanes.push(unit(d, size_per_thread[d] << b));
            }
        }
        for &d in order {
            let d = d as usize;
            for b in 0..log2(warps_per_cta[d]) {
                layout
                    .warps
                    .push(unit(d, (size_per_thread[d] * threads_per_warp[d]) << b));
            }
        }
        // Repetitions: the tile is larger than one coverage of the layout.
        for &d in order {
            let d = d as usize;
            let cover = size_per_thread[d] * threads_per_warp[d] * warps_per_cta[d];
            let mut step = cover;
            while step < shape[d] {
                layout.regs.push(unit(d, step));
                step <<= 1;
            }
        }
        Ok(layout)
    }

    /// Triton's default blocked layout for a tile: `vec` contiguous elements per thread
    /// along the fastest dimension (the last, or `order[0]`), lanes then warps filled
    /// along `order`.
    pub fn default_blocked(
        shape: &[u32],
        order: &[u32],
        vec: u32,
        warp_size: u32,
        num_warps: u32,
    ) -> Result<LinearLayout, LayoutError> {
        let rank = shape.len();
        if rank == 0 {
            return Ok(LinearLayout::scalar(warp_size, num_warps));
        }
        let mut spt = vec![1u32; rank];
        let fast = order[0] as usize;
        spt[fast] = vec.min(shape[fast]).max(1);
        let mut tpw = vec![1u32; rank];
        let mut lanes = warp_size;
        for &d in order {
            let d = d as usize;
            let room = (shape[d] / spt[d]).max(1);
            tpw[d] = lanes.min(room);
            lanes /= tpw[d];
        }
        tpw[order[rank - 1] as usize] *= lanes;
        let mut wpc = vec![1u32; rank];
        let mut warps = num_warps;
        for &d in order {
            let d = d as usize;
            let room = (shape[d] / (spt[d] * tpw[d])).max(1);
            wpc[d] = warps.min(room);
            warps /= wpc[d];
        }
        wpc[order[rank - 1] as usize] *= warps;
        LinearLayout::blocked(shape, &spt, &tpw, &wpc, order)
    }

    /// The tensor-core accumulator layout of an `m x n` tile for `mma.sync` shapes
    /// `m16n8kK` (PTX's fragment layout): a warp tile of `m / warps_m x n / warps_n`
    /// made of 16x8 fragments. Register bits: column +1, row +8, then the fragment's
    /// repetitions along N, then along M; lane bits: column +2, +4, row +1, +2, +4;
    /// warp bits: along N, then M, then replicas. Needs `m / warps_m` a multiple of 16
    /// and `n / warps_n` a multiple of 8 (powers of two).
    pub fn mma_accumulator(
        m: u32,
        n: u32,
        warps_m: u32,
        warps_n: u32,
        num_warps: u32,
    ) -> Result<LinearLayout, LayoutError> {
        let (wm, wn) = (m / warps_m.max(1), n / warps_n.max(1));
        if [m, n, warps_m, warps_n, num_warps]
            .iter()
            .any(|d| !d.is_power_of_two())
            || wm < 16
            || wn < 8
            || warps_m * warps_n > num_warps
        {
            return Err(LayoutError(format!(
                "no mma layout for {m}x{n} over {warps_m}x{warps_n} of {num_warps} warps"
            )));
        }
        let c = |r: u32, col: u32| vec![r, col];
        let mut regs = vec![c(0, 1), c(8, 0)];
        regs.extend((0..log2(wn / 8)).map(|b| c(0, 8 << b)));
        regs.extend((0..log2(wm / 16)).map(|b| c(16 << b, 0)));
        let lanes = vec![c(0, 2), c(0, 4), c(1, 0), c(2, 0), c(4, 0)];
        let mut warps: Vec<Coord> = (0..log2(warps_n)).map(|b| c(0, wn << b)).collect();
        warps.extend((0..log2(warps_m)).map(|b| c(wm << b, 0)));
        while warps.len() < log2(num_warps) as usize {
            warps.push(c(0, 0));
        }
        Ok(LinearLayout {
            shape: vec![m, n],
            regs,
            lanes,
            warps,
        })
    }

    /// The warpgroup-MMA accumulator layout of an `m x n` tile (`wgmma` `m64nNk16`, PTX's
    /// fragment layout): `wg_m x wg_n` warpgroup tiles of `m / wg_m x n / wg_n`, each a
    /// column of 64-row instruction tiles. Register bits: column +1, row +8, the
    /// 8-column blocks, then the instruction tiles along M; lane bits: column +2, +4,
    /// row +1, +2, +4; warp bits: row +16, +32 (the warps of a warpgroup), then the
    /// warpgroups along M, then N, then replicas.
    pub fn wgmma_accumulator(
        m: u32,
        n: u32,
        wg_m: u32,
        wg_n: u32,
        num_warps: u32,
    ) -> Result<LinearLayout, LayoutError> {
        let (gm, gn) = (m / wg_m.max(1), n / wg_n.max(1));
        if [m, n, wg_m, wg_n, num_warps]
            .iter()
            .any(|d| !d.is_power_of_two())
            || gm < 64
            || gn < 8
            || wg_m * wg_n * 4 > num_warps
        {
            return Err(LayoutError(format!(
                "no wgmma layout for {m}x{n} over {wg_m}x{wg_n} warpgroups of {num_warps} warps"
            )));
        }
        let c = |r: u32, col: u32| vec![r, col];
        let mut regs = vec![c(0, 1), c(8, 0)];
        regs.extend((0..log2(gn / 8)).map(|b| c(0, 8 << b)));
        regs.extend((0..log2(gm / 64)).map(|b| c(64 << b, 0)));
        let lanes = vec![c(0, 2), c(0, 4), c(1, 0), c(2, 0), c(4, 0)];
        let mut warps = vec![c(16, 0), c(32, 0)];
        warps.extend((0..log2(wg_m)).map(|b| c(gm << b, 0)));
        warps.extend((0..log2(wg_n)).map(|b| c(0, gn << b)));
        while warps.len() < log2(num_warps) as usize {
            warps.push(c(0, 0));
        }
        Ok(LinearLayout {
            shape: vec![m, n],
            regs,
            lanes,
            warps,
        })
    }

    /// The layout a cooperative-matrix accumulator of `m x n` takes when its fragments
    /// (`size x size`, `warps_m x warps_n` warp tiles, as [`Self::mma_accumulator`]
    /// places them) go through shared memory to the threads: within a fragment, each of
    /// the 32 lanes holds `size * size / 32` consecutive elements of one row (registers
    /// along the columns, then lanes along columns and rows); further registers walk
    /// the warp's fragments, columns first.
    pub fn coop_accumulator(
        m: u32,
        n: u32,
        size: u32,
        (warps_m, warps_n): (u32, u32),
        num_warps: u32,
    ) -> Result<LinearLayout, LayoutError> {
        let (wm, wn) = (m / warps_m.max(1), n / warps_n.max(1));
        if [m, n, size, warps_m, warps_n, num_warps]
            .iter()
            .any(|d| !d.is_power_of_two())
            || size * size < 32
            || wm < size
            || wn < size
            || warps_m * warps_n > num_warps
        {
            return Err(LayoutError(format!(
                "no cooperative-matrix layout for {m}x{n} in {size}x{size} fragments over \
                 {warps_m}x{warps_n} of {num_warps} warps"
            )));
        }
        let c = |r: u32, col: u32| vec![r, col];
        let per_lane = size * size / 32;
        // Fragment coordinates in order: columns, then rows; the first log2(per_lane)
        // are registers, the next five lanes.
        let mut inner: Vec<Coord> = (0..log2(size)).map(|b| c(0, 1 << b)).collect();
        inner.extend((0..log2(size)).map(|b| c(1 << b, 0)));
        let mut regs: Vec<Coord> = inner[..log2(per_lane) as usize].to_vec();
        let lanes = inner[log2(per_lane) as usize..].to_vec();
        regs.extend((0..log2(wn / size)).map(|b| c(0, size << b)));
        regs.extend((0..log2(wm / size)).map(|b| c(size << b, 0)));
        let mut warps: Vec<Coord> = (0..log2(warps_n)).map(|b| c(0, wn << b)).collect();
        warps.extend((0..log2(warps_m)).map(|b| c(wm << b, 0)));
        while warps.len() < log2(num_warps) as usize {
            warps.push(c(0, 0));
        }
        Ok(LinearLayout {
            shape: vec![m, n],
            regs,
            lanes,
            warps,
        })
    }

    /// A rank-0 tile: one register, held by every thread.
    pub fn scalar(warp_size: u32, num_warps: u32) -> LinearLayout {
        LinearLayout {
            shape: vec![],
            regs: vec![],
            lanes: vec![vec![]; log2(warp_size) as usize],
            warps: vec![vec![]; log2(num_warps) as usize],
        }
    }

    pub fn shape(&self) -> &[u32] {
        &self.shape
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Registers each thread holds.
    pub fn num_regs(&self) -> u32 {
        1 << self.regs.len()
    }

    pub fn warp_size(&self) -> u32 {
        1 << self.lanes.len()
    }

    pub fn num_warps(&self) -> u32 {
        1 << self.warps.len()
    }

    pub fn reg_bases(&self) -> &[Coord] {
        &self.regs
    }

    pub fn lane_bases(&self) -> &[Coord] {
        &self.lanes
    }

    pub fn warp_bases(&self) -> &[Coord] {
        &self.warps
    }

    /// The coordinate held in register `reg` of lane `lane` of warp `warp`.
    pub fn apply(&self, reg: u32, lane: u32, warp: u32) -> Coord {
        let mut c = vec![0; self.rank()];
        for (bases, bits) in [(&self.regs, reg), (&self.lanes, lane), (&self.warps, warp)] {
            for (i, b) in bases.iter().enumerate() {
                if bits >> i & 1 == 1 {
                    xor_into(&mut c, b);
                }
            }
        }
        c
    }

    /// Row-major linear index of a coordinate.
    pub fn linear_index(&self, c: &[u32]) -> u32 {
        c.iter()
            .zip(&self.shape)
            .fold(0, |acc, (&x, &d)| acc * d + x)
    }

    /// The layout of `src_shape` (this layout's shape with some dimensions of size 1)
    /// whose threads hold exactly the coordinates they hold here, projected: the
    /// source of a broadcast into this layout, from which each thread takes its
    /// registers without moving data. Register bases that project to nothing (or to a
    /// basis already kept) are dropped; lanes and warps keep theirs (replicas).
    pub fn project_onto(&self, src_shape: &[u32]) -> LinearLayout {
        let project = |b: &Coord| -> Coord {
            b.iter()
                .zip(src_shape)
                .map(|(&x, &s)| if s == 1 { 0 } else { x })
                .collect()
        };
        let mut regs: Vec<Coord> = vec![];
        for b in &self.regs {
            let p = project(b);
            if p.iter().any(|&x| x != 0) && !regs.contains(&p) {
                regs.push(p);
            }
        }
        LinearLayout {
            shape: src_shape.to_vec(),
            regs,
            lanes: self.lanes.iter().map(project).collect(),
            warps: self.warps.iter().map(project).collect(),
        }
    }

    /// The layout of the result of reducing dimension `dim` away: bases lose that
    /// component (Triton's slice layout).
    pub fn slice(&self, dim: usize) -> LinearLayout {
        let drop = |bases: &Vec<Coord>| -> Vec<Coord> {
            bases
                .iter()
                .map(|b| {
                    b.iter()
                        .enumerate()
                        .filter(|(i, _)| *i != dim)
                        .map(|(_, &x)| x)
                        .collect()
                })
                .collect()
        };
        let mut shape = self.shape.clone();
        shape.remove(dim);
        LinearLayout {
            shape,
            regs: drop(&self.regs),
            lanes: drop(&self.lanes),
            warps: drop(&self.warps),
        }
    }

    /// A size-1 dimension inserted at `axis`.
    pub fn expand_dims(&self, axis: usize) -> LinearLayout {
        let add = |bases: &Vec<Coord>| -> Vec<Coord> {
            bases
                .iter()
                .map(|b| {
                    let mut b = b.clone();
                    b.insert(axis, 0);
                    b
                })
                .collect()
        };
        let mut shape = self.shape.clone();
        shape.insert(axis, 1);
        LinearLayout {
            shape,
            regs: add(&self.regs),
            lanes: add(&self.lanes),
            warps: add(&self.warps),
        }
    }

    /// Result dimension `i` is this layout's dimension `perm[i]`.
    pub fn permute(&self, perm: &[u32]) -> LinearLayout {
        let p = |bases: &Vec<Coord>| -> Vec<Coord> {
            bases
                .iter()
                .map(|b| perm.iter().map(|&d| b[d as usize]).collect())
                .collect()
        };
        LinearLayout {
            shape: perm.iter().map(|&d| self.shape[d as usize]).collect(),
            regs: p(&self.regs),
            lanes: p(&self.lanes),
            warps: p(&self.warps),
        }
    }

    /// The same elements viewed row-major with another shape (same element count).
    /// Linear because flattening a power-of-two coordinate concatenates its bits.
    pub fn reshape(&self, shape: &[u32]) -> LinearLayout {
        let from = self.shape.clone();
        let to = shape.to_vec();
        let map = |bases: &Vec<Coord>| -> Vec<Coord> {
            bases
                .iter()
                .map(|b| {
                    let flat = b
                        .iter()
                        .zip(&from)
                        .fold(0u64, |acc, (&x, &d)| acc * d as u64 + x as u64);
                    let mut rest = flat;
                    let mut out = vec![0u32; to.len()];
                    for i in (0..to.len()).rev() {
                        out[i] = (rest % to[i] as u64) as u32;
                        rest /= to[i] as u64;
                    }
                    out
                })
                .collect()
        };
        LinearLayout {
            shape: to.clone(),
            regs: map(&self.regs),
            lanes: map(&self.lanes),
            warps: map(&self.warps),
        }
    }

    /// The coordinate bits that registers alone decide: `(dim, bit)` (the coordinate
    /// bit `1 << bit` of dimension `dim`) where one register basis is exactly that bit
    /// and no other basis, of a register, lane or warp, touches it. Which such bits a
    /// register's element has is the same in every thread, so a transfer through
    /// shared memory can move the elements in rounds, one value of these bits at a
    /// time, each thread storing (or loading) a fixed subset of its registers.
    pub fn register_only_bits(&self) -> Vec<(usize, u32)> {
        let mut out = vec![];
        for (i, b) in self.regs.iter().enumerate() {
            let nonzero: Vec<usize> = (0..b.len()).filter(|&d| b[d] != 0).collect();
            let [d] = nonzero[..] else { continue };
            if !b[d].is_power_of_two() {
                continue;
            }
            let bit = b[d].trailing_zeros();
            let touched = self
                .regs
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .map(|(_, o)| o)
                .chain(&self.lanes)
                .chain(&self.warps)
                .any(|o| o[d] >> bit & 1 == 1);
            if !touched {
                out.push((d, bit));
            }
        }
        out
    }

    /// The value of the coordinate bits `bits` (packed, `bits[0]` lowest) of the
    /// element register `reg` holds; only meaningful for bits from
    /// [`Self::register_only_bits`], which do not depend on the thread.
    pub fn bits_of_register(&self, reg: u32, bits: &[(usize, u32)]) -> u32 {
        let c = self.apply(reg, 0, 0);
        bits.iter()
            .enumerate()
            .fold(0, |acc, (j, &(d, b))| acc | (c[d] >> b & 1) << j)
    }

    /// This layout with the coordinate bits `bits` squeezed out: each listed bit of a
    /// dimension is removed from every coordinate (the bits above it move down), the
    /// dimension shrinks by half for each, and the register bases that held them hold
    /// nothing (they become replicas, so registers keep their numbers). Used with
    /// [`Self::register_only_bits`]: the elements sharing one value of those bits, in
    /// a scratch array a `2^bits.len()`-th of the size.
    pub fn without_bits(&self, bits: &[(usize, u32)]) -> LinearLayout {
        let squeeze = |b: &Coord| -> Coord {
            b.iter()
                .enumerate()
                .map(|(d, &x)| {
                    let mut gone: Vec<u32> = bits
                        .iter()
                        .filter(|(bd, _)| *bd == d)
                        .map(|&(_, bit)| bit)
                        .collect();
                    gone.sort_unstable_by(|a, b| b.cmp(a));
                    gone.into_iter().fold(x, |x, bit| {
                        let low = x & ((1u32 << bit) - 1);
                        low | (x >> (bit + 1)) << bit
                    })
                })
                .collect()
        };
        let mut shape = self.shape.clone();
        for &(d, _) in bits {
            shape[d] /= 2;
        }
        LinearLayout {
            shape,
            regs: self.regs.iter().map(squeeze).collect(),
            lanes: self.lanes.iter().map(squeeze).collect(),
            warps: self.warps.iter().map(squeeze).collect(),
        }
    }

    /// Whether any input bit is a replica (zero basis), i.e. some element is held twice.
    pub fn is_replicated(&self) -> bool {
        self.regs
            .iter()
            .chain(&self.lanes)
            .chain(&self.warps)
            .any(|b| b.iter().all(|&x| x == 0))
    }

    /// For a layout `dst` whose elements are to be read from `self` through `project`
    /// (a map from a `dst` coordinate to the `self` coordinate it needs: identity for a
    /// plain conversion, zeroing broadcast dimensions for a broadcast), returns for each
    /// `dst` register the `self` register that holds the needed element in the same
    /// thread, for every thread; `None` if some thread would need another thread's data.
    pub fn register_map(
        &self,
        dst: &LinearLayout,
        project: impl Fn(&[u32]) -> Coord,
    ) -> Option<Vec<u32>> {
        if dst.num_warps() != self.num_warps() || dst.warp_size() != self.warp_size() {
            return None;
        }
        // The layout is linear: thread (l, w) holds in register r the coordinate
        // apply(r, 0, 0) ^ apply(0, l, w). So the register holding `need` in that thread
        // is the first r whose register part is need ^ apply(0, l, w): one table of the
        // register parts serves every thread.
        let mut holder: HashMap<Coord, u32> = HashMap::with_capacity(self.num_regs() as usize);
        for r in 0..self.num_regs() {
            holder.entry(self.apply(r, 0, 0)).or_insert(r);
        }
        let thread_parts: Vec<Coord> = (0..self.num_warps())
            .flat_map(|w| (0..self.warp_size()).map(move |l| (l, w)))
            .map(|(l, w)| self.apply(0, l, w))
            .collect();
        // `dst`'s coordinates split the same way.
        let dst_threads: Vec<Coord> = (0..dst.num_warps())
            .flat_map(|w| (0..dst.warp_size()).map(move |l| (l, w)))
            .map(|(l, w)| dst.apply(0, l, w))
            .collect();
        let mut map = Vec::with_capacity(dst.num_regs() as usize);
        for r in 0..dst.num_regs() {
            let reg_part = dst.apply(r, 0, 0);
            let mut chosen: Option<u32> = None;
            for w in 0..dst.num_warps() {
                for l in 0..dst.warp_size() {
                    let mut coord = reg_part.clone();
                    xor_into(&mut coord, &dst_threads[(w * dst.warp_size() + l) as usize]);
                    let mut need = project(&coord);
                    let part = &thread_parts[(w * self.warp_size() + l) as usize];
                    if need.len() != part.len() {
                        return None;
                    }
                    xor_into(&mut need, part);
                    let src = *holder.get(&need)?;
                    match chosen {
                        None => chosen = Some(src),
                        Some(c) if c == src => {}
                        // Same element, but in a register whose index differs per thread:
                        // it is still local; accept only if that other register holds it too.
                        Some(c) => {
                            if self.apply(c, l, w) != self.apply(src, l, w) {
                                return None;
                            }
                        }
                    }
                }
            }
            map.push(chosen.unwrap_or(0));
        }
        Some(map)
    }
}

impl fmt::Debug for LinearLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "linear<{:?}; reg {:?}; lane {:?}; warp {:?}>",
            self.shape, self.regs, self.lanes, self.warps
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// Every element is held by at least one (reg, lane, warp).
    fn covers(l: &LinearLayout) -> bool {
        let mut seen = HashSet::new();
        for w in 0..l.num_warps() {
            for t in 0..l.warp_size() {
                for r in 0..l.num_regs() {
                    let c = l.apply(r, t, w);
                    assert!(
                        c.iter().zip(l.shape()).all(|(x, d)| x < d),
                        "{c:?} outside {:?}",
                        l.shape()
                    );
                    seen.insert(c);
                }
            }
        }
        seen.len() as u32 == l.shape().iter().product::<u32>()
    }

    #[test]
    fn mma_accumulator_matches_the_fragment_picture() {
        let l = LinearLayout::mma_accumulator(128, 64, 2, 2, 4).unwrap();
        assert!(covers(&l));
        assert_eq!(l.num_regs(), 4 * 4 * 4);
        // Lane 5 (g = 1, t = 1): c0 at (1, 2), c3 at (9, 3).
        assert_eq!(l.apply(0, 5, 0), vec![1, 2]);
        assert_eq!(l.apply(3, 5, 0), vec![9, 3]);
        // The next N fragment, the next M fragment, the second warp along N.
        assert_eq!(l.apply(4, 0, 0), vec![0, 8]);
        assert_eq!(l.apply(16, 0, 0), vec![16, 0]);
        assert_eq!(l.apply(0, 0, 1), vec![0, 32]);
        assert_eq!(l.apply(0, 0, 2), vec![64, 0]);
        // Too few warps' worth of tile: replicas.
        let r = LinearLayout::mma_accumulator(16, 8, 1, 1, 4).unwrap();
        assert!(covers(&r) && r.is_replicated());
        assert!(LinearLayout::mma_accumulator(8, 8, 1, 1, 4).is_err());
    }

    #[test]
    fn blocked_matches_triton_picture() {
        // 1-D, 4 elements per thread, 32 lanes, 4 warps over 1024 elements.
        let l = LinearLayout::blocked(&[1024], &[4], &[32], &[4], &[0]).unwrap();
        assert_eq!(l.num_regs(), 8);
        assert_eq!(l.apply(0, 1, 0), vec![4]);
        assert_eq!(l.apply(3, 0, 0), vec![3]);
        assert_eq!(l.apply(0, 0, 1), vec![128]);
        assert_eq!(l.apply(4, 0, 0), vec![512]);
        assert!(covers(&l));
        assert!(!l.is_replicated());
    }

    #[test]
    fn default_blocked_covers_many_shapes() {
        for shape in [
            vec![1u32],
            vec![16],
            vec![4096],
            vec![64, 64],
            vec![1, 128],
            vec![128, 1],
            vec![2, 4, 8],
            vec![16, 1024],
        ] {
            let order: Vec<u32> = (0..shape.len() as u32).rev().collect();
            for vec in [1, 4] {
                let l = LinearLayout::default_blocked(&shape, &order, vec, 32, 4).unwrap();
                assert!(covers(&l), "{shape:?} {l:?}");
            }
        }
    }

    #[test]
    fn small_tiles_replicate() {
        let l = LinearLayout::default_blocked(&[16], &[0], 1, 32, 4).unwrap();
        assert!(l.is_replicated());
        assert!(covers(&l));
        assert_eq!(l.apply(0, 17, 0), vec![1]);
    }

    #[test]
    fn slice_then_expand_broadcasts_for_free() {
        // Reduce a 64x64 tile along dim 1, expand it back, broadcast: no data movement.
        let parent = LinearLayout::default_blocked(&[64, 64], &[1, 0], 4, 32, 4).unwrap();
        let expanded = parent.slice(1).expand_dims(1);
        let map = expanded
            .register_map(&parent, |c| vec![c[0], 0])
            .expect("free broadcast");
        assert_eq!(map.len() as u32, parent.num_regs());
        // A row-vector layout of its own is not in the right threads.
        let own = LinearLayout::default_blocked(&[64, 1], &[1, 0], 1, 32, 4).unwrap();
        assert!(own.register_map(&parent, |c| vec![c[0], 0]).is_none());
    }

    #[test]
    fn identity_and_permutation_maps() {
        let l = LinearLayout::default_blocked(&[32, 64], &[1, 0], 4, 32, 4).unwrap();
        let map = l.register_map(&l, |c| c.to_vec()).unwrap();
        assert_eq!(map, (0..l.num_regs()).collect::<Vec<_>>());
        let t = l.permute(&[1, 0]);
        assert!(covers(&t));
        assert_eq!(t.apply(1, 0, 0), vec![1, 0]);
        let back = t.permute(&[1, 0]);
        assert_eq!(back, l);
    }

    #[test]
    fn reshape_keeps_ownership() {
        let l = LinearLayout::default_blocked(&[8, 16], &[1, 0], 2, 32, 2).unwrap();
        let flat = l.reshape(&[128]);
        for w in 0..2 {
            for t in 0..32 {
                for r in 0..l.num_regs() {
                    assert_eq!(flat.apply(r, t, w)[0], l.linear_index(&l.apply(r, t, w)));
                }
            }
        }
    }
}
