//! Buffer access: pointer lanes resolved against buffer views, bounds checks, and the
//! typed gather/scatter loops between little-endian bytes and runtime tiles.
//!
//! A pointer parameter is a view `[offset, offset + len)` of a host buffer; a lane's
//! element index `e` is valid when `0 <= e < len` and lives at element `offset + e` of
//! the buffer. Masked-off lanes are never resolved, so they are never bounds-checked and
//! never touch memory. Lanes are resolved to physical element indices first (with
//! `usize::MAX` for lanes that are skipped); the gather/scatter loops then run once per
//! dtype, without per-element dispatch.

use super::error::Oob;
use super::value::{BlockPtr, Data, Roots};
use super::HostBuffer;
use crate::ir::DType;
use half::{bf16, f16};

/// A skipped lane.
pub const SKIP: usize = usize::MAX;

/// The view a pointer parameter was bound to.
#[derive(Clone, Debug)]
pub struct View {
    pub buffer: usize,
    pub offset: usize,
    pub len: usize,
}

/// The host buffers and the views of the pointer parameters (indexed by parameter).
pub struct Memory<'a> {
    pub bufs: &'a mut [HostBuffer],
    pub views: Vec<Option<View>>,
    /// Writes that changed memory (for the program scheduler, `schedule.rs`).
    pub writes: u64,
    /// Reads (loads and atomics).
    pub reads: u64,
    /// Whether `writes` counts only writes that change bytes (programs interleaved);
    /// otherwise every write counts, which costs nothing.
    pub track: bool,
}

/// The root of a pointer lane that addresses no buffer (an integer cast to a pointer
/// that is not an address of this launch's memory): any access through it is out of
/// bounds.
pub const NO_BUFFER: u32 = u32::MAX;

impl Memory<'_> {
    /// The root of lanes that point into host buffer `buffer` through an address
    /// (pointers as data, `crate::address`): past the parameters' roots, one a buffer,
    /// its view the whole buffer.
    pub fn flat_root(&self, buffer: usize) -> u32 {
        (self.views.len() + buffer) as u32
    }

    /// The host buffer and element offset `(buffer, offset)` that root `root` views
    /// (counted in `pointee` elements), and the view's length in them; `None` for a
    /// scalar parameter or [`NO_BUFFER`].
    pub fn view_of(&self, root: u32, pointee: DType) -> Option<View> {
        let r = root as usize;
        if r < self.views.len() {
            return self.views[r].clone();
        }
        let b = r.checked_sub(self.views.len())?;
        let size = pointee.size_bytes();
        self.bufs.get(b).map(|buf| View {
            buffer: b,
            offset: 0,
            len: buf.bytes.len() / size,
        })
    }

    /// The address (`crate::address`) of element `off` of root `root`'s view.
    pub fn address_of(&self, root: u32, pointee: DType, off: i64) -> u64 {
        let size = pointee.size_bytes() as i64;
        match self.view_of(root, pointee) {
            Some(v) => crate::address::encode(v.buffer, ((v.offset as i64 + off) * size) as u64),
            None => (off * size) as u64,
        }
    }

    /// The (root, element offset) of `address` for a pointer to `pointee`; an address
    /// outside every buffer, or not aligned to the element, roots at [`NO_BUFFER`].
    pub fn root_of_address(&self, address: u64, pointee: DType) -> (u32, i64) {
        let size = pointee.size_bytes() as u64;
        match crate::address::decode(address) {
            Some((b, byte)) if b < self.bufs.len() && byte % size == 0 => {
                (self.flat_root(b), (byte / size) as i64)
            }
            _ => (NO_BUFFER, (address / size) as i64),
        }
    }

    /// Whether `root` is a kernel parameter (not a buffer reached through an address).
    pub fn is_param(&self, root: u32) -> bool {
        (root as usize) < self.views.len()
    }

    /// Resolves the lanes of `roots`/`offs` that are rooted at `root` (all of them for
    /// [`Roots::One`]) and enabled by `mask` to physical element indices of that
    /// parameter's buffer; other lanes get [`SKIP`]. Errors on the first enabled lane
    /// outside the view.
    #[allow(clippy::too_many_arguments)]
    pub fn resolve(
        &self,
        root: u32,
        pointee: DType,
        roots: &Roots,
        offs: &[i64],
        mask: Option<&[i64]>,
        lanes: &mut Vec<usize>,
    ) -> Result<usize, Oob> {
        lanes.clear();
        lanes.reserve(offs.len());
        let view = self.view_of(root, pointee);
        let (vo, vl) = view.as_ref().map(|v| (v.offset, v.len)).unwrap_or((0, 0));
        let len = vl as i64;
        for (i, &e) in offs.iter().enumerate() {
            let on = mask.is_none_or(|m| m[i] != 0) && roots.get(i) == root;
            if !on {
                lanes.push(SKIP);
            } else if e < 0 || e >= len {
                return Err(Oob {
                    lane: i,
                    index: e,
                    len: vl,
                    param: root,
                });
            } else {
                lanes.push(vo + e as usize);
            }
        }
        Ok(view.map(|v| v.buffer).unwrap_or(0))
    }

    /// Gathers the non-skipped `lanes` of buffer `buffer` (decoded as `dtype`) into `out`.
    pub fn gather(&mut self, buffer: usize, dtype: DType, lanes: &[usize], out: &mut Data) -> bool {
        self.reads += 1;
        gather_into(&self.bufs[buffer].bytes, dtype, lanes, out)
    }

    /// Scatters `vals` (already of `dtype`) into the non-skipped `lanes` of `buffer`.
    pub fn scatter(&mut self, buffer: usize, dtype: DType, lanes: &[usize], vals: &Data) -> bool {
        let bytes = &mut self.bufs[buffer].bytes;
        if !self.track {
            self.writes += 1;
            return scatter_from(bytes, dtype, lanes, vals);
        }
        let w = dtype.size_bytes();
        let before: Vec<u8> = lanes
            .iter()
            .filter(|&&l| l != SKIP)
            .flat_map(|&l| bytes[l * w..l * w + w].iter().copied())
            .collect();
        let ok = scatter_from(bytes, dtype, lanes, vals);
        let changed = lanes
            .iter()
            .filter(|&&l| l != SKIP)
            .flat_map(|&l| bytes[l * w..l * w + w].iter().copied())
            .ne(before);
        if changed {
            self.writes += 1;
        }
        ok
    }
}

fn g<const N: usize, T: Copy>(b: &[u8], lanes: &[usize], o: &mut [T], f: impl Fn([u8; N]) -> T) {
    for (x, &l) in o.iter_mut().zip(lanes) {
        if l != SKIP {
            let mut c = [0u8; N];
            c.copy_from_slice(&b[l * N..l * N + N]);
            *x = f(c);
        }
    }
}

fn s<const N: usize, T: Copy>(b: &mut [u8], lanes: &[usize], v: &[T], f: impl Fn(T) -> [u8; N]) {
    for (&x, &l) in v.iter().zip(lanes) {
        if l != SKIP {
            b[l * N..l * N + N].copy_from_slice(&f(x));
        }
    }
}

/// Decodes the elements at `lanes` of `bytes` as `dtype` into `out`; false when the
/// representation of `out` does not fit `dtype`.
pub fn gather_into(b: &[u8], dtype: DType, lanes: &[usize], out: &mut Data) -> bool {
    match (dtype, out) {
        (DType::F32, Data::F(o)) => g(b, lanes, o, |c| f32::from_le_bytes(c) as f64),
        (DType::F64, Data::F(o)) => g(b, lanes, o, f64::from_le_bytes),
        (DType::F16, Data::F(o)) => g(b, lanes, o, |c| f16::from_le_bytes(c).to_f64()),
        (DType::BF16, Data::F(o)) => g(b, lanes, o, |c| bf16::from_le_bytes(c).to_f64()),
        (DType::F8E4M3, Data::F(o)) => {
            g(b, lanes, o, |c: [u8; 1]| crate::ir::fp8::E4M3.decode(c[0]))
        }
        (DType::F8E5M2, Data::F(o)) => {
            g(b, lanes, o, |c: [u8; 1]| crate::ir::fp8::E5M2.decode(c[0]))
        }
        (DType::I1, Data::I(o)) => g(b, lanes, o, |c: [u8; 1]| (c[0] != 0) as i64),
        (DType::I8, Data::I(o)) => g(b, lanes, o, |c| i8::from_le_bytes(c) as i64),
        (DType::U8, Data::I(o)) => g(b, lanes, o, |c| u8::from_le_bytes(c) as i64),
        (DType::I16, Data::I(o)) => g(b, lanes, o, |c| i16::from_le_bytes(c) as i64),
        (DType::U16, Data::I(o)) => g(b, lanes, o, |c| u16::from_le_bytes(c) as i64),
        (DType::I32, Data::I(o)) => g(b, lanes, o, |c| i32::from_le_bytes(c) as i64),
        (DType::U32, Data::I(o)) => g(b, lanes, o, |c| u32::from_le_bytes(c) as i64),
        (DType::I64 | DType::U64, Data::I(o)) => g(b, lanes, o, i64::from_le_bytes),
        _ => return false,
    }
    true
}

/// Encodes `vals` (of `dtype`) into `bytes` at `lanes`; false on a representation
/// mismatch.
pub fn scatter_from(b: &mut [u8], dtype: DType, lanes: &[usize], vals: &Data) -> bool {
    match (dtype, vals) {
        (DType::F32, Data::F(v)) => s(b, lanes, v, |x| (x as f32).to_le_bytes()),
        (DType::F64, Data::F(v)) => s(b, lanes, v, f64::to_le_bytes),
        (DType::F16, Data::F(v)) => s(b, lanes, v, |x| crate::ir::f16_from_f64(x).to_le_bytes()),
        (DType::BF16, Data::F(v)) => s(b, lanes, v, |x| crate::ir::bf16_from_f64(x).to_le_bytes()),
        (DType::F8E4M3, Data::F(v)) => s(b, lanes, v, |x| [crate::ir::fp8::E4M3.store_code(x)]),
        (DType::F8E5M2, Data::F(v)) => s(b, lanes, v, |x| [crate::ir::fp8::E5M2.store_code(x)]),
        (DType::I1, Data::I(v)) => s(b, lanes, v, |x| [(x != 0) as u8]),
        (DType::I8 | DType::U8, Data::I(v)) => s(b, lanes, v, |x| [x as u8]),
        (DType::I16 | DType::U16, Data::I(v)) => s(b, lanes, v, |x| (x as u16).to_le_bytes()),
        (DType::I32 | DType::U32, Data::I(v)) => s(b, lanes, v, |x| (x as u32).to_le_bytes()),
        (DType::I64 | DType::U64, Data::I(v)) => s(b, lanes, v, i64::to_le_bytes),
        _ => return false,
    }
    true
}

/// The element offsets of every lane of a block pointer's tile (row-major over the
/// block shape), and, when `boundary_check` is not empty, the mask of lanes in range
/// on every checked dimension (1 = accessed).
pub fn block_lanes(bp: &BlockPtr, boundary_check: &[u32]) -> (Vec<i64>, Option<Vec<i64>>) {
    let mut addrs = vec![bp.base];
    let mut mask: Option<Vec<i64>> = if boundary_check.is_empty() {
        None
    } else {
        Some(vec![1])
    };
    for d in 0..bp.block.len() {
        let bd = bp.block[d] as i64;
        let checked = boundary_check.contains(&(d as u32));
        let (off, stride, shape) = (bp.offsets[d], bp.strides[d], bp.shape[d]);
        let contrib: Vec<i64> = (0..bd)
            .map(|i| off.wrapping_add(i).wrapping_mul(stride))
            .collect();
        let mut na = Vec::with_capacity(addrs.len() * bd as usize);
        for &a in &addrs {
            na.extend(contrib.iter().map(|&c| a.wrapping_add(c)));
        }
        if let Some(m) = &mask {
            let inr: Vec<i64> = (0..bd)
                .map(|i| {
                    let p = off.wrapping_add(i);
                    (!checked || (p >= 0 && p < shape)) as i64
                })
                .collect();
            let mut nm = Vec::with_capacity(na.len());
            for &mv in m {
                nm.extend(inr.iter().map(|&x| x & mv));
            }
            mask = Some(nm);
        }
        addrs = na;
    }
    (addrs, mask)
}

/// The smallest and largest element offset a block pointer's declared `shape` covers
/// (over indices `0 <= i_d < shape_d`); `None` if the shape is empty.
pub fn declared_extent(bp: &BlockPtr) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (bp.base, bp.base);
    for d in 0..bp.shape.len() {
        if bp.shape[d] <= 0 {
            return None;
        }
        let span = (bp.shape[d] - 1).wrapping_mul(bp.strides[d]);
        if span >= 0 {
            hi = hi.wrapping_add(span);
        } else {
            lo = lo.wrapping_add(span);
        }
    }
    Some((lo, hi))
}
