//! cuBLAS reference GEMMs for the benchmark harness.
//!
//! [`Cublas`] wraps a cuBLAS handle bound to a [`CudaRuntime`]'s stream, so its GEMMs
//! are ordered with tilewise launches and timed by the same events. Matrices are
//! row-major and dense over raw [`DeviceMemory`]; cuBLAS is column-major, so
//! `C = A @ B` is computed as the column-major `C^T = B^T @ A^T`, which reads the same
//! bytes without any transpose.

use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t};
use cudarc::cublas::sys::{cudaDataType, is_culib_present};
use cudarc::cublas::{result as blas, CudaBlas};
use cudarc::driver::CudaContext;
use std::sync::Arc;
use tilewise_core::{Diagnostic, ErrorKind, Result};

use crate::driver::{CudaRuntime, DeviceMemory};

/// Element types and arithmetic of a reference GEMM. All variants accumulate in f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmPrecision {
    /// f32 in, f32 out, full-precision f32 arithmetic without tensor cores
    /// (`CUBLAS_COMPUTE_32F`, default math mode).
    F32,
    /// f32 in, f32 out, TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    Tf32,
    /// f16 in, f16 out (rounded from the f32 accumulator).
    F16,
    /// f16 in, f32 out.
    F16F32Out,
    /// bf16 in, bf16 out (rounded from the f32 accumulator).
    Bf16,
    /// bf16 in, f32 out.
    Bf16F32Out,
}

impl GemmPrecision {
    /// Bytes per element of A and B.
    pub fn input_bytes(self) -> usize {
        match self {
            GemmPrecision::F32 | GemmPrecision::Tf32 => 4,
            _ => 2,
        }
    }

    /// Bytes per element of C.
    pub fn output_bytes(self) -> usize {
        match self {
            GemmPrecision::F16 | GemmPrecision::Bf16 => 2,
            _ => 4,
        }
    }

    /// (input type, output type, compute type) for cublasGemmEx.
    fn types(self) -> (cudaDataType, cudaDataType, cublasComputeType_t) {
        use cublasComputeType_t::{CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32};
        use cudaDataType::{CUDA_R_16BF, CUDA_R_16F, CUDA_R_32F};
        match self {
            GemmPrecision::F32 => (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F),
            GemmPrecision::Tf32 => (CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
            GemmPrecision::F16 => (CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F),
            GemmPrecision::F16F32Out => (CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F),
            GemmPrecision::Bf16 => (CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F),
            GemmPrecision::Bf16F32Out => (CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F),
        }
    }
}

/// A cuBLAS handle on a runtime's stream.
#[derive(Debug)]
pub struct Cublas {
    blas: CudaBlas,
    ctx: Arc<CudaContext>,
}

impl Cublas {
    /// Creates a handle whose work goes on `rt`'s stream. A backend error when
    /// libcublas cannot be loaded or cuBLAS fails to initialise.
    pub fn new(rt: &CudaRuntime) -> Result<Self> {
        // SAFETY: only tries to dlopen the library names cudarc would use.
        if !unsafe { is_culib_present() } {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                "cuBLAS not found (libcublas.so could not be loaded; put the CUDA \
                 toolkit's lib64 on LD_LIBRARY_PATH)",
            ));
        }
        let blas = CudaBlas::new(rt.stream().clone()).map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!("cuBLAS initialisation failed: {:?}", e.0),
            )
        })?;
        Ok(Cublas {
            blas,
            ctx: rt.context().clone(),
        })
    }

    /// Enqueues the row-major `C[m,n] = A[m,k] @ B[k,n]` in `precision` on the
    /// runtime's stream (returns without waiting). Buffers must hold at least
    /// `m*k`, `k*n` and `m*n` elements of the precision's types.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        precision: GemmPrecision,
        m: usize,
        n: usize,
        k: usize,
        a: &DeviceMemory,
        b: &DeviceMemory,
        c: &DeviceMemory,
    ) -> Result<()> {
        let dim = |v: usize, what: &str| {
            i32::try_from(v).map_err(|_| {
                Diagnostic::new(
                    ErrorKind::Argument,
                    format!("GEMM {what} = {v} is too large for cuBLAS"),
                )
            })
        };
        let (mi, ni, ki) = (dim(m, "m")?, dim(n, "n")?, dim(k, "k")?);
        let (ib, ob) = (precision.input_bytes(), precision.output_bytes());
        for (name, mem, elems, size) in [
            ("A", a, m * k, ib),
            ("B", b, k * n, ib),
            ("C", c, m * n, ob),
        ] {
            if mem.len_bytes() < elems * size {
                return Err(Diagnostic::new(
                    ErrorKind::Argument,
                    format!(
                        "GEMM {m}x{n}x{k}: {name} needs {} bytes, its buffer has {}",
                        elems * size,
                        mem.len_bytes()
                    ),
                ));
            }
        }
        if m == 0 || n == 0 {
            return Ok(());
        }
        let (in_type, out_type, compute) = precision.types();
        let (alpha, beta) = (1.0f32, 0.0f32);
        self.ctx
            .bind_to_thread()
            .map_err(|e| Diagnostic::new(ErrorKind::Backend, format!("CUDA: {e:?}")))?;
        // SAFETY: the buffers hold the elements checked above; alpha and beta are host
        // f32 values as CUBLAS_COMPUTE_32F* wants in the default pointer mode.
        // Column-major C^T[n,m] = B^T[n,k] @ A^T[k,m] with leading dimensions n, k, n.
        unsafe {
            blas::gemm_ex(
                *self.blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                ni,
                mi,
                ki,
                (&alpha as *const f32).cast(),
                b.address() as *const _,
                in_type,
                ni.max(1),
                a.address() as *const _,
                in_type,
                ki.max(1),
                (&beta as *const f32).cast(),
                c.address() as *mut _,
                out_type,
                ni.max(1),
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "cublasGemmEx ({precision:?}, {m}x{n}x{k}) failed: {:?}",
                    e.0
                ),
            )
        })
    }
}
