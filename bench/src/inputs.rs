//! Inputs of the cases: [`Rng`], the deterministic generator of their random values
//! (and of the positions the checks sample), and [`HostMat`], a host array in the
//! element type a case runs in (f32, f16 or bf16), to upload, download and compare.

use tilewise::half::{bf16, f16};
use tilewise::{Buffer, DType, Device, Element, Result};

/// A small deterministic generator of uniform floats in [-1, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    pub fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
    /// An index in `0..n`.
    pub fn index(&mut self, n: usize) -> usize {
        ((self.next() + 1.0) * 0.5 * n as f32) as usize % n
    }
}

/// A host array (a matrix or a vector) in a case's element type: f32, f16 or bf16.
pub enum HostMat {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl HostMat {
    pub fn random(rng: &mut Rng, dtype: DType, len: usize) -> HostMat {
        HostMat::F32(rng.vec(len)).convert(dtype)
    }
    /// The values rounded to `dtype` (f32, f16 or bf16).
    pub fn convert(&self, dtype: DType) -> HostMat {
        let v = self.to_f32();
        match dtype {
            DType::F16 => HostMat::F16(v.into_iter().map(f16::from_f32).collect()),
            DType::BF16 => HostMat::Bf16(v.into_iter().map(bf16::from_f32).collect()),
            _ => HostMat::F32(v),
        }
    }
    pub fn download(dev: &Device, buf: &Buffer) -> Result<HostMat> {
        Ok(match buf.dtype() {
            DType::F16 => HostMat::F16(dev.download(buf)?),
            DType::BF16 => HostMat::Bf16(dev.download(buf)?),
            _ => HostMat::F32(dev.download(buf)?),
        })
    }
    pub fn upload(&self, dev: &Device) -> Result<Buffer> {
        match self {
            HostMat::F32(v) => dev.upload(v),
            HostMat::F16(v) => dev.upload(v),
            HostMat::Bf16(v) => dev.upload(v),
        }
    }
    /// The `cols x rows` transpose of a row-major `rows x cols` matrix.
    pub fn transposed(&self, rows: usize, cols: usize) -> HostMat {
        fn t<T: Copy>(v: &[T], rows: usize, cols: usize) -> Vec<T> {
            (0..cols * rows)
                .map(|i| v[(i % rows) * cols + i / rows])
                .collect()
        }
        match self {
            HostMat::F32(v) => HostMat::F32(t(v, rows, cols)),
            HostMat::F16(v) => HostMat::F16(t(v, rows, cols)),
            HostMat::Bf16(v) => HostMat::Bf16(t(v, rows, cols)),
        }
    }
    /// The values as f32 (exact: f16 and bf16 widen without rounding).
    pub fn to_f32(&self) -> Vec<f32> {
        match self {
            HostMat::F32(v) => v.clone(),
            HostMat::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            HostMat::Bf16(v) => v.iter().map(|x| x.to_f32()).collect(),
        }
    }
    /// The values as little-endian bytes (the cuBLAS references' buffers take these).
    pub fn bytes(&self) -> Vec<u8> {
        fn le<T: Element>(v: &[T]) -> Vec<u8> {
            let mut out = Vec::with_capacity(v.len() * T::DTYPE.size_bytes());
            for &x in v {
                x.write_le(&mut out);
            }
            out
        }
        match self {
            HostMat::F32(v) => le(v),
            HostMat::F16(v) => le(v),
            HostMat::Bf16(v) => le(v),
        }
    }
}
