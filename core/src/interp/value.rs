//! Runtime values of the interpreter: data tiles, pointer tiles and block pointers.
//!
//! A data tile keeps its elements in one flat row-major vector: floats as `f64` (rounded
//! to the tile's dtype after every op, so an `f32` tile only ever holds `f32` values),
//! integers as `i64` (wrapped to the dtype's width after every op; `u64` keeps its bits,
//! `i1` is 0 or 1). Shapes are not stored: they are static and come from the kernel's
//! value types. Pointer tiles hold one element offset per lane plus the kernel
//! parameter each lane is rooted at. Block pointers are a small struct.

use crate::ir::DType;

/// The elements of a data tile.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// Float dtypes.
    F(Vec<f64>),
    /// Integer dtypes and `i1`.
    I(Vec<i64>),
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::F(v) => v.len(),
            Data::I(v) => v.len(),
        }
    }

    /// `n` zeros of the representation `dtype` uses.
    pub fn zeros(dtype: DType, n: usize) -> Data {
        if dtype.is_float() {
            Data::F(vec![0.0; n])
        } else {
            Data::I(vec![0; n])
        }
    }
}

/// A data tile: a dtype and its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Tile {
    pub dtype: DType,
    pub data: Data,
}

impl Tile {
    pub fn new(dtype: DType, data: Data) -> Tile {
        Tile { dtype, data }
    }
}

/// The kernel parameter(s) the lanes of a pointer tile are rooted at.
#[derive(Clone, Debug, PartialEq)]
pub enum Roots {
    /// Every lane points into the same parameter's buffer (the common case).
    One(u32),
    /// Lane `i` points into parameter `roots[i]` (after a `where` between pointers).
    Many(Vec<u32>),
}

impl Roots {
    pub fn get(&self, i: usize) -> u32 {
        match self {
            Roots::One(r) => *r,
            Roots::Many(v) => v[i],
        }
    }
}

/// A tile of pointers: per lane, a root parameter and an element offset into it.
#[derive(Clone, Debug, PartialEq)]
pub struct PtrTile {
    pub pointee: DType,
    pub roots: Roots,
    pub offs: Vec<i64>,
}

/// A block pointer (`tl.make_block_ptr`), in elements.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockPtr {
    pub pointee: DType,
    /// The parameter the base pointer is rooted at.
    pub root: u32,
    /// The base pointer's element offset.
    pub base: i64,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub offsets: Vec<i64>,
    pub block: Vec<u32>,
    pub order: Vec<u32>,
}

/// Any runtime value.
#[derive(Clone, Debug, PartialEq)]
pub enum RtValue {
    Data(Tile),
    Ptr(PtrTile),
    Block(Box<BlockPtr>),
}

/// Rounds one float to `dtype` (no-op for f64 and non-floats).
#[inline]
pub fn round1(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 => x as f32 as f64,
        DType::F16 => crate::ir::f16_from_f64(x).to_f64(),
        DType::BF16 => crate::ir::bf16_from_f64(x).to_f64(),
        DType::F8E4M3 => crate::ir::fp8::E4M3.round(x),
        DType::F8E5M2 => crate::ir::fp8::E5M2.round(x),
        _ => x,
    }
}

/// Rounds every element to `dtype`.
pub fn round_f(dtype: DType, v: &mut [f64]) {
    match dtype {
        DType::F32 => v.iter_mut().for_each(|x| *x = *x as f32 as f64),
        DType::F16 => v
            .iter_mut()
            .for_each(|x| *x = crate::ir::f16_from_f64(*x).to_f64()),
        DType::BF16 => v
            .iter_mut()
            .for_each(|x| *x = crate::ir::bf16_from_f64(*x).to_f64()),
        DType::F8E4M3 | DType::F8E5M2 => v.iter_mut().for_each(|x| *x = round1(dtype, *x)),
        _ => {}
    }
}

/// Wraps one integer to the width of `dtype` (sign- or zero-extended back to i64).
#[inline]
pub fn wrap1(dtype: DType, x: i64) -> i64 {
    match dtype {
        DType::I1 => x & 1,
        DType::I8 => x as i8 as i64,
        DType::I16 => x as i16 as i64,
        DType::I32 => x as i32 as i64,
        DType::U8 => x as u8 as i64,
        DType::U16 => x as u16 as i64,
        DType::U32 => x as u32 as i64,
        _ => x,
    }
}

/// Wraps every element to the width of `dtype`.
pub fn wrap_i(dtype: DType, v: &mut [i64]) {
    match dtype {
        DType::I64 | DType::U64 => {}
        DType::I1 => v.iter_mut().for_each(|x| *x &= 1),
        DType::I8 => v.iter_mut().for_each(|x| *x = *x as i8 as i64),
        DType::I16 => v.iter_mut().for_each(|x| *x = *x as i16 as i64),
        DType::I32 => v.iter_mut().for_each(|x| *x = *x as i32 as i64),
        DType::U8 => v.iter_mut().for_each(|x| *x = *x as u8 as i64),
        DType::U16 => v.iter_mut().for_each(|x| *x = *x as u16 as i64),
        DType::U32 => v.iter_mut().for_each(|x| *x = *x as u32 as i64),
        _ => {}
    }
}

/// Row-major strides (in elements) of a shape.
pub fn row_major(shape: &[u32]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1] as usize;
    }
    s
}

/// Gathers `src` into a new row-major tile of `out_shape`, where moving one step along
/// result dimension `d` moves `strides[d]` elements in `src` (0 for a broadcast).
pub fn strided<T: Copy>(src: &[T], out_shape: &[u32], strides: &[usize]) -> Vec<T> {
    let n: usize = out_shape.iter().map(|&d| d as usize).product();
    let mut out = Vec::with_capacity(n);
    if n == 0 {
        return out;
    }
    let rank = out_shape.len();
    if rank == 0 {
        out.push(src[0]);
        return out;
    }
    let last = out_shape[rank - 1] as usize;
    let ls = strides[rank - 1];
    let mut idx = vec![0usize; rank];
    let mut base = 0usize;
    loop {
        if ls == 1 {
            out.extend_from_slice(&src[base..base + last]);
        } else {
            out.extend((0..last).map(|j| src[base + j * ls]));
        }
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            idx[d] += 1;
            base += strides[d];
            if idx[d] < out_shape[d] as usize {
                break;
            }
            base -= strides[d] * idx[d];
            idx[d] = 0;
        }
    }
}

/// The multi-index of flat element `i` of a row-major `shape`.
pub fn unflatten(mut i: usize, shape: &[u32]) -> Vec<usize> {
    let mut idx = vec![0usize; shape.len()];
    for d in (0..shape.len()).rev() {
        let s = shape[d].max(1) as usize;
        idx[d] = i % s;
        i /= s;
    }
    idx
}

/// Formats a multi-index as `(i, j)`.
pub fn fmt_index(idx: &[usize]) -> String {
    let parts: Vec<String> = idx.iter().map(|i| i.to_string()).collect();
    format!("({})", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_broadcast_and_transpose() {
        // [2,1] broadcast to [2,3]
        let src = [1, 2];
        assert_eq!(strided(&src, &[2, 3], &[1, 0]), vec![1, 1, 1, 2, 2, 2]);
        // transpose of [2,3]
        let src = [0, 1, 2, 3, 4, 5];
        assert_eq!(strided(&src, &[3, 2], &[1, 3]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(row_major(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(unflatten(7, &[2, 3, 4]), vec![0, 1, 3]);
    }

    #[test]
    fn wrap_and_round() {
        assert_eq!(wrap1(DType::I8, 200), -56);
        assert_eq!(wrap1(DType::U8, -1), 255);
        assert_eq!(wrap1(DType::I32, 1 << 31), -(1 << 31));
        assert_eq!(round1(DType::F32, 0.1), 0.1f32 as f64);
        assert_eq!(round1(DType::F16, 65520.0), f64::INFINITY);
    }
}
