//! The matmul cases (f32 output): tf32 and f32 inputs through the block-pointer kernel
//! (`shaders/matmul_block_ptr.py`), f16 and bf16 inputs through the grouped kernel of
//! Triton tutorial 03 (`shaders/matmul.py`); square products and skinny ones. Checked in
//! float64 on sampled outputs; on CUDA the cuBLAS GEMM of the same precision runs on the
//! same inputs next to each (its reference, checked the same way).

use super::{kernel, record, CaseRun, MatmulConfig};
use crate::inputs::HostMat;
use crate::measured::Measured;
use crate::references::{check, gemm_name, gemm_reference, matmul_samples};
use crate::timing::{input_sets, time, Rotation};
use tilewise::cuda::GemmPrecision;
use tilewise::{Arg, Buffer, DType, Device, Kernel, Result};

const MATMUL_BLOCK_PTR: &str = include_str!("../../../shaders/matmul_block_ptr.py");
const MATMUL: &str = include_str!("../../../shaders/matmul.py");

/// Input element type of a matmul case (the output is f32 in every case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmType {
    /// f32 inputs through the block-pointer kernel (`matmul_block_ptr.py`) as written:
    /// `tl.dot` at its default precision, tf32 (tensor cores on the PTX backend; the
    /// other backends compute it in full f32).
    Tf32,
    /// The same kernel with `input_precision="ieee"`: full f32 FMA everywhere.
    F32,
    /// f16 inputs through the grouped kernel of tutorial 03 (`matmul.py`).
    F16,
    /// bf16 inputs through the same grouped kernel.
    Bf16,
}

impl MmType {
    /// The element type of the inputs.
    pub(super) fn input_dtype(self) -> DType {
        match self {
            MmType::Tf32 | MmType::F32 => DType::F32,
            MmType::F16 => DType::F16,
            MmType::Bf16 => DType::BF16,
        }
    }

    pub(super) fn input_bytes(self) -> usize {
        match self {
            MmType::Tf32 | MmType::F32 => 4,
            MmType::F16 | MmType::Bf16 => 2,
        }
    }

    /// The cuBLAS GEMM measured next to this case on the same inputs: its reference.
    pub(super) fn reference(self) -> GemmPrecision {
        match self {
            MmType::Tf32 => GemmPrecision::Tf32,
            MmType::F32 => GemmPrecision::F32,
            MmType::F16 => GemmPrecision::F16F32Out,
            MmType::Bf16 => GemmPrecision::Bf16F32Out,
        }
    }

    /// Tolerance against the float64 reference on the same (rounded) inputs, relative to
    /// the largest reference magnitude. tf32 keeps 10 mantissa bits (and the tensor
    /// cores truncate); f16 and bf16 inputs are exact, products accumulate in f32.
    pub(super) fn tolerance(self) -> f64 {
        match self {
            MmType::Tf32 => 5e-3,
            MmType::F32 => 1e-5,
            MmType::F16 | MmType::Bf16 => 1e-4,
        }
    }
}

/// The block-pointer matmul's kernel: the shader as written, or (`ieee`) a variant the
/// benchmark makes with `input_precision="ieee"` on its dot. The variant is renamed:
/// devices cache compiled kernels by name and arguments, not by source, so a variant
/// with the same name would silently run the first one's compiled code.
pub(super) fn block_ptr_kernel(ieee: bool) -> Result<Kernel> {
    let name = "matmul_block_ptr_kernel";
    if !ieee {
        return kernel(MATMUL_BLOCK_PTR, "matmul_block_ptr.py", name);
    }
    let (dot, def) = ("tl.dot(a_tile, b_tile, acc)", format!("def {name}("));
    if !MATMUL_BLOCK_PTR.contains(dot) || !MATMUL_BLOCK_PTR.contains(&def) {
        return Err(tilewise::Diagnostic::internal(format!(
            "shaders/matmul_block_ptr.py no longer contains `{dot}` and `{def}`: update \
             the bench's ieee variant"
        )));
    }
    let src = MATMUL_BLOCK_PTR
        .replace(dot, "tl.dot(a_tile, b_tile, acc, input_precision=\"ieee\")")
        .replace(&def, "def matmul_block_ptr_ieee_kernel(");
    kernel(
        &src,
        "matmul_block_ptr.py (ieee)",
        "matmul_block_ptr_ieee_kernel",
    )
}

/// Tutorial 03's source with its K step written `accumulator += tl.dot(a, b)`.
fn added_step(src: &str) -> Result<String> {
    const STEP: &str = "accumulator = tl.dot(a, b, accumulator)";
    if !src.contains(STEP) {
        return Err(tilewise::Diagnostic::internal(format!(
            "matmul.py no longer has `{STEP}` for `/add` to rewrite"
        )));
    }
    Ok(src.replace(STEP, "accumulator += tl.dot(a, b)"))
}

/// Tutorial 03's scalar arguments: M, N, K, then the (row, column) strides of A, B
/// and C; `c` row-major, `a` row-major (M, K) or, with `a_m_major`, the (M, K) view of
/// a row-major (K, M) matrix, `b` row-major (K, N) or, with `b_k_major`, the (K, N)
/// view of a row-major (N, K) matrix.
fn scalar_args(m: usize, n: usize, k: usize, a_m_major: bool, b_k_major: bool) -> Vec<Arg> {
    let (stride_am, stride_ak) = if a_m_major { (1, m) } else { (k, 1) };
    let (stride_bk, stride_bn) = if b_k_major { (1, k) } else { (n, 1) };
    [m, n, k, stride_am, stride_ak, stride_bk, stride_bn, n, 1]
        .iter()
        .map(|&v| Arg::from(v as i32))
        .collect()
}

/// Launches the block-pointer matmul kernel (row-major, dense).
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_block_ptr(
    kern: &Kernel,
    dev: &Device,
    (a, b, c): (&Buffer, &Buffer, &Buffer),
    (m, n, k): (usize, usize, usize),
    config: MatmulConfig,
) -> Result<()> {
    let block = config.block;
    let grid = [(m as u32).div_ceil(block.0), (n as u32).div_ceil(block.1)];
    let mut l = kern
        .launch(dev, grid)
        .arg(a)
        .arg(b)
        .arg(c)
        .args(scalar_args(m, n, k, false, false))
        .constexpr("BLOCK_M", block.0)
        .constexpr("BLOCK_N", block.1)
        .constexpr("BLOCK_K", block.2)
        .num_warps(config.warps);
    if let Some(s) = config.stages {
        l = l.num_stages(s);
    }
    l.run()
}

/// An `m x n x k` product with `(BM, BN, BK)` blocks and `warps` warps per program,
/// inputs of type `ty`.
pub(super) fn run(
    cx: &mut CaseRun,
    row: &mut Measured,
    ty: MmType,
    (m, n, k): (usize, usize, usize),
    config: MatmulConfig,
) -> Result<()> {
    let block = config.block;
    let (dev, reps, name) = (cx.dev, cx.reps, row.case.clone());
    let a = HostMat::random(&mut cx.rng, ty.input_dtype(), m * k);
    let b = HostMat::random(&mut cx.rng, ty.input_dtype(), k * n);
    // `/kt`: the kernel reads `b` from its (N, K) transpose, `/mt` `a` from its (K, M)
    // one, `/tt` both (the check and the cuBLAS reference keep the (M, K) and (K, N)
    // matrices: the same product).
    let bp = matches!(ty, MmType::Tf32 | MmType::F32) || config.block_ptr;
    if (config.b_k_major || config.a_m_major || config.added) && bp {
        return Err(tilewise::Diagnostic::new(
            tilewise::ErrorKind::Launch,
            format!(
                "{name}: `/kt`, `/mt`, `/tt` and `/add` are for tutorial 03's f16 and bf16 kernel"
            ),
        ));
    }
    let b_stored = if config.b_k_major {
        b.transposed(k, n)
    } else {
        b.convert(ty.input_dtype())
    };
    let a_stored = if config.a_m_major {
        a.transposed(m, k)
    } else {
        a.convert(ty.input_dtype())
    };
    let bytes = ty.input_bytes() * (m * k + k * n) + 4 * m * n;
    let nsets = input_sets(dev.kind(), bytes);
    let sets = (0..nsets)
        .map(|_| {
            Ok((
                a_stored.upload(dev)?,
                b_stored.upload(dev)?,
                dev.upload(&vec![f32::NAN; m * n])?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    // f32 (and f16 / bf16 where the configuration says `bp`): the block-pointer
    // kernel; f16 and bf16: tutorial 03's grouped kernel.
    let kern = match ty {
        MmType::Tf32 | MmType::F32 => block_ptr_kernel(ty == MmType::F32)?,
        MmType::F16 | MmType::Bf16 if bp => block_ptr_kernel(false)?,
        MmType::F16 | MmType::Bf16 if config.added => {
            kernel(&added_step(MATMUL)?, "matmul.py", "matmul_kernel")?
        }
        MmType::F16 | MmType::Bf16 => kernel(MATMUL, "matmul.py", "matmul_kernel")?,
    };
    let launch = |(da, db, dc): &(Buffer, Buffer, Buffer)| match ty {
        MmType::Tf32 | MmType::F32 => launch_block_ptr(&kern, dev, (da, db, dc), (m, n, k), config),
        MmType::F16 | MmType::Bf16 if bp => {
            launch_block_ptr(&kern, dev, (da, db, dc), (m, n, k), config)
        }
        MmType::F16 | MmType::Bf16 => {
            let grid = (m as u32).div_ceil(block.0) * (n as u32).div_ceil(block.1);
            let mut l = kern
                .launch(dev, grid)
                .arg(da)
                .arg(db)
                .arg(dc)
                .args(scalar_args(m, n, k, config.a_m_major, config.b_k_major))
                .constexpr("BLOCK_SIZE_M", block.0)
                .constexpr("BLOCK_SIZE_N", block.1)
                .constexpr("BLOCK_SIZE_K", block.2)
                .constexpr("GROUP_SIZE_M", 8)
                .num_warps(config.warps);
            if let Some(s) = config.stages {
                l = l.num_stages(s);
            }
            l.run()
        }
    };
    let (af, bf) = (a.to_f32(), b.to_f32());
    let mut err = 0f64;
    for set in &sets {
        launch(set)?;
        let c = dev.download::<f32>(&set.2)?;
        let samples = matmul_samples(&mut cx.rng, &af, &bf, &c, (m, n, k));
        err = err.max(check(&name, samples.into_iter(), ty.tolerance())?);
    }
    let flops = 2.0 * (m * n * k) as f64;
    let mut rot = Rotation::new(sets.len());
    let t = time(reps, dev, &mut || launch(&sets[rot.advance()]))?;
    record(row, t, flops, bytes as f64, err);
    row.notes.push(("input_sets", nsets as f64));
    row.roofline = true;
    if let Some(refs) = cx.refs {
        let p = ty.reference();
        row.reference = Some(gemm_name(p).into());
        let measured = (|| -> Result<Measured> {
            let (a_bytes, b_bytes) = (a.bytes(), b.bytes());
            let mut ref_sets = vec![];
            for _ in 0..nsets {
                let ra = refs.rt.alloc_zeroed(a_bytes.len())?;
                let rb = refs.rt.alloc_zeroed(b_bytes.len())?;
                let rc = refs.rt.alloc_zeroed(4 * m * n)?;
                refs.rt.write(&ra, 0, &a_bytes)?;
                refs.rt.write(&rb, 0, &b_bytes)?;
                ref_sets.push((ra, rb, rc));
            }
            let mut r = gemm_reference(refs, p, &ref_sets, (m, n, k), reps)?;
            for (_, _, rc) in &ref_sets {
                let c: Vec<f32> = refs
                    .rt
                    .read(rc)?
                    .chunks_exact(4)
                    .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                    .collect();
                let samples = matmul_samples(&mut cx.rng, &af, &bf, &c, (m, n, k));
                r.max_rel_err =
                    r.max_rel_err
                        .max(check(&r.case, samples.into_iter(), ty.tolerance())?);
            }
            r.device = row.device.clone();
            r.size = row.size.clone();
            r.bytes = bytes as f64;
            Ok(r)
        })();
        match measured {
            Ok(r) => cx.reference_rows.push(r),
            // The case's own figure stands; the run still fails.
            Err(e) => cx
                .errors
                .push(format!("{} for {name} {}: {e}", gemm_name(p), row.size)),
        }
    }
    Ok(())
}
