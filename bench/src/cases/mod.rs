//! The benchmark cases: [`select`] picks them for a suite and device, [`run`] runs one.
//! Each case builds random inputs, runs a kernel of the library, checks it against a
//! float64 reference (`crate::references`; on sampled outputs for large sizes), then
//! times it (`crate::timing`). On CUDA, matmul cases also run their cuBLAS references on
//! the same inputs, checked the same way. One module per case (or family of cases);
//! this one holds what they share: [`Case`], the `--dtype` and `--matmul-configs`
//! types, and the row every case fills in.

mod compile;
mod copy;
mod launch;
pub mod layer_norm;
mod matmul;
mod seeds;
pub mod softmax;
pub mod tutorials;
mod vector_add;

use crate::inputs::Rng;
use crate::measured::{Measured, Role, COPY_CASE};
use crate::references::CudaRefs;
use crate::timing::{input_sets, Timing, HOST};
use crate::Suite;
use matmul::MmType;
use tilewise::{Buffer, DType, Device, DeviceKind, Kernel, Module, Result};

/// The element types `--dtype` selects: a case runs when its type is selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Dtype {
    /// f32: the bandwidth cases, the seeds, and matmul with `input_precision="ieee"`.
    F32,
    /// Matmul with f32 inputs at `tl.dot`'s default precision (tf32 tensor cores on CUDA).
    Tf32,
    /// f16: vector add, matmul with f32 accumulation.
    F16,
    /// bf16: vector add, matmul with f32 accumulation.
    Bf16,
}

impl Dtype {
    fn of_matmul(ty: MmType) -> Dtype {
        match ty {
            MmType::F32 => Dtype::F32,
            MmType::Tf32 => Dtype::Tf32,
            MmType::F16 => Dtype::F16,
            MmType::Bf16 => Dtype::Bf16,
        }
    }
}

/// A case to run.
#[derive(Clone, Debug)]
pub enum Case {
    /// The plain device buffer copy of `n` f32 (`Device::copy`; a device-to-device
    /// memcpy on CUDA): the bandwidth reference.
    Copy { n: usize },
    /// Vector add of `n` elements of `dtype` (f32, f16 or bf16).
    VectorAdd { n: usize, dtype: DType },
    /// Row softmax of a `rows x cols` f32 matrix.
    Softmax {
        rows: usize,
        cols: usize,
        /// Warps per program.
        warps: u32,
    },
    /// Layer-norm forward (Triton tutorial 05) of a `rows x cols` f32 matrix.
    LayerNorm { rows: usize, cols: usize },
    /// Seed pattern: causal row softmax of a `rows x cols` f32 matrix (cols <= row).
    CausalSoftmax { rows: usize, cols: usize },
    /// Seed pattern: `2 x` over the active blocks (about half) of `n` f32.
    BlockSparse { n: usize },
    /// Seed pattern: row sums of a padded `rows x max_len` f32 matrix, random lengths.
    RaggedRowSum { rows: usize, max_len: usize },
    /// `m x n x k` matmul with f32 output and `(BM, BN, BK)` blocks.
    Matmul {
        ty: MmType,
        m: usize,
        n: usize,
        k: usize,
        /// Blocks, warps and pipeline depth.
        config: MatmulConfig,
    },
    /// Host cost per launch of a vector add of `n` elements, over `launches` queued
    /// launches.
    LaunchOverhead { n: usize, launches: usize },
    /// Source text to validated WGSL for the block-pointer matmul (64x64x32), on the
    /// host: parse, trace, lower, print, naga validation.
    CompileWgsl,
    /// Source text to PTX text for the same kernel, on the host.
    CompilePtx,
    /// On a GPU: source text to a loaded module (CUDA) or pipeline (wgpu), run once on
    /// a tiny input (64^3), on a fresh device each time (no in-memory cache). `warm:
    /// false`: the persistent cache off (`TILEWISE_CACHE=0`) and, on CUDA, the driver's
    /// JIT cache off (see `crate::run`): everything compiled. `warm: true`: a persistent cache
    /// the first (untimed) run filled: what a second process pays.
    CompileLoad { warm: bool },
    /// Triton tutorial 06's `_attn_fwd` from the tutorial file: f16 attention forward
    /// over (batch, heads, n_ctx, head_dim).
    TutorialAttention {
        shape: (usize, usize, usize, usize),
        causal: bool,
    },
    /// Triton tutorial 09's `matmul_kernel_persistent` from the tutorial file: an f16
    /// `m x n x k` product.
    TutorialPersistentMatmul { m: usize, n: usize, k: usize },
}

impl Case {
    pub fn name(&self) -> String {
        match self {
            Case::Copy { .. } => COPY_CASE.into(),
            Case::VectorAdd { dtype, .. } => format!("vector add {dtype}"),
            Case::Softmax { cols, warps, .. } if *warps == default_softmax_warps(*cols) => {
                "softmax f32".into()
            }
            Case::Softmax { warps, .. } => format!("softmax f32 {warps}w"),
            Case::LayerNorm { .. } => "layer norm fwd f32".into(),
            Case::CausalSoftmax { .. } => "seed: causal softmax f32".into(),
            Case::BlockSparse { .. } => "seed: block-sparse 2x f32".into(),
            Case::RaggedRowSum { .. } => "seed: ragged row sum f32".into(),
            Case::Matmul { ty, config, .. } => {
                let b = config.to_string();
                match ty {
                    MmType::Tf32 => format!("matmul tf32 bp {b}"),
                    MmType::F32 => format!("matmul f32 bp {b}"),
                    MmType::F16 if config.block_ptr => format!("matmul f16->f32 bp {b}"),
                    MmType::Bf16 if config.block_ptr => format!("matmul bf16->f32 bp {b}"),
                    MmType::F16 => format!("matmul f16->f32 {b}"),
                    MmType::Bf16 => format!("matmul bf16->f32 {b}"),
                }
            }
            Case::LaunchOverhead { .. } => "launch overhead (vector add)".into(),
            Case::CompileWgsl => "compile matmul: source to WGSL".into(),
            Case::CompilePtx => "compile matmul: source to PTX".into(),
            Case::CompileLoad { warm: false } => "compile matmul: source to loaded+run".into(),
            Case::CompileLoad { warm: true } => {
                "compile matmul: same, persistent cache warm".into()
            }
            Case::TutorialAttention { shape, causal } => {
                format!("tutorial 06 _attn_fwd f16 d{} causal={causal}", shape.3)
            }
            Case::TutorialPersistentMatmul { .. } => {
                "tutorial 09 matmul_kernel_persistent f16".into()
            }
        }
    }

    pub fn size(&self) -> String {
        match self {
            Case::Copy { n }
            | Case::VectorAdd { n, .. }
            | Case::BlockSparse { n }
            | Case::LaunchOverhead { n, .. } => {
                format!("{n}")
            }
            Case::CompileWgsl | Case::CompilePtx | Case::CompileLoad { .. } => "64x64x32".into(),
            Case::Softmax { rows, cols, .. }
            | Case::LayerNorm { rows, cols }
            | Case::CausalSoftmax { rows, cols }
            | Case::RaggedRowSum {
                rows,
                max_len: cols,
            } => {
                format!("{rows}x{cols}")
            }
            Case::Matmul { m, n, k, .. } | Case::TutorialPersistentMatmul { m, n, k } => {
                format!("{m}x{n}x{k}")
            }
            Case::TutorialAttention {
                shape: (z, h, n, d),
                ..
            } => format!("{z}x{h}x{n}x{d}"),
        }
    }

    /// Host-only work: run once, not once per device.
    pub fn host_only(&self) -> bool {
        matches!(self, Case::CompileWgsl | Case::CompilePtx)
    }

    /// Whether the case runs on a device of `kind`.
    pub fn runs_on(&self, kind: DeviceKind) -> bool {
        !matches!(self, Case::CompileLoad { .. })
            || matches!(kind, DeviceKind::Cuda | DeviceKind::Wgpu)
    }
}

/// The softmax case's warps a program unless `--softmax-warps` says otherwise: as
/// Triton's tutorial 02 chooses them, 4, then 8 from 2048 columns and 16 from 4096 (on
/// the H200, 16 warps for 8192 columns: 3.64 TB/s through Vulkan and 3.72 on CUDA,
/// against 2.80 and 3.57 with 4; BENCHMARKS.md, run 49).
pub fn default_softmax_warps(cols: usize) -> u32 {
    match cols.next_power_of_two() {
        b if b >= 4096 => 16,
        b if b >= 2048 => 8,
        _ => 4,
    }
}

/// A matmul block configuration: `(BM, BN, BK)`, warps per program and (where given)
/// the pipeline depth of the K loop (`num_stages`; the compiler's default otherwise);
/// `block_ptr` runs f16 and bf16 through the block-pointer kernel (whose operands the
/// tensor memory accelerator copies on sm_90) instead of tutorial 03's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulConfig {
    pub block: (u32, u32, u32),
    pub warps: u32,
    pub stages: Option<u32>,
    pub block_ptr: bool,
    /// `b` passed as the (K, N) view of a row-major (N, K) matrix (`x @ w.T`): tutorial
    /// 03's kernel with `stride_bk = 1`.
    pub b_k_major: bool,
    /// `a` passed as the (M, K) view of a row-major (K, M) matrix (`x.T @ w`): tutorial
    /// 03's kernel with `stride_am = 1`.
    pub a_m_major: bool,
    /// Tutorial 03's kernel with its K step written `accumulator += tl.dot(a, b)`
    /// (as many kernels write it) instead of `tl.dot(a, b, accumulator)`.
    pub added: bool,
}

impl MatmulConfig {
    pub const fn new(block: (u32, u32, u32), warps: u32) -> MatmulConfig {
        MatmulConfig {
            block,
            warps,
            stages: None,
            block_ptr: false,
            b_k_major: false,
            a_m_major: false,
            added: false,
        }
    }

    pub const fn added(self) -> MatmulConfig {
        MatmulConfig {
            added: true,
            ..self
        }
    }

    pub const fn a_m_major(self) -> MatmulConfig {
        MatmulConfig {
            a_m_major: true,
            ..self
        }
    }

    pub const fn b_k_major(self) -> MatmulConfig {
        MatmulConfig {
            b_k_major: true,
            ..self
        }
    }

    pub const fn block_ptr(self) -> MatmulConfig {
        MatmulConfig {
            block_ptr: true,
            ..self
        }
    }

    pub const fn stages(self, stages: u32) -> MatmulConfig {
        MatmulConfig {
            stages: Some(stages),
            ..self
        }
    }
}

/// `BMxBNxBK/Ww` and `/Ss` where the stages are given (the case names' spelling).
impl std::fmt::Display for MatmulConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (m, n, k) = self.block;
        write!(f, "{m}x{n}x{k}/{}w", self.warps)?;
        if let Some(s) = self.stages {
            write!(f, "/{s}s")?;
        }
        match (self.a_m_major, self.b_k_major) {
            (true, true) => write!(f, "/tt")?,
            (true, false) => write!(f, "/mt")?,
            (false, true) => write!(f, "/kt")?,
            (false, false) => {}
        }
        if self.added {
            write!(f, "/add")?;
        }
        Ok(())
    }
}

/// The square matmul configurations to run: the given ones, else `default` with 4 warps.
fn configs(given: &[MatmulConfig], default: MatmulConfig) -> Vec<MatmulConfig> {
    if given.is_empty() {
        vec![default]
    } else {
        given.to_vec()
    }
}

/// The default square-matmul configuration of `ty` on `kind`: the fastest of the H200
/// sweeps in BENCHMARKS.md (on wgpu, 128x128x16 with 4 warps: 16 KiB of workgroup
/// memory, WebGPU's default limit), 64x64x32 with 4 warps on the CPU executors.
fn default_config(ty: MmType, kind: DeviceKind, smoke: bool) -> MatmulConfig {
    match (smoke, kind, ty) {
        // Smoke runs use small blocks: a check, not a measurement.
        (true, _, _) => MatmulConfig::new((32, 32, 16), 4),
        // From the H200 sweeps (BENCHMARKS.md).
        // tf32 on `wgmma` (sm_90; `mma.sync` elsewhere): 256x128 beat 128x256 (run 59).
        (false, DeviceKind::Cuda, MmType::Tf32) => MatmulConfig::new((256, 128, 32), 8),
        (false, DeviceKind::Cuda, MmType::F32) => MatmulConfig::new((128, 256, 32), 8),
        // f16 / bf16: three stages, which leave the H200 room to stage the f32
        // epilogue (run 107: 0.946x cuBLAS against 0.923x / 0.938x with four).
        (false, DeviceKind::Cuda, _) => MatmulConfig::new((128, 256, 64), 8).stages(3),
        (false, DeviceKind::Wgpu, MmType::F32 | MmType::Tf32) => {
            MatmulConfig::new((64, 128, 16), 4)
        }
        (false, DeviceKind::Wgpu, _) => MatmulConfig::new((128, 128, 16), 4),
        _ => MatmulConfig::new((64, 64, 32), 4),
    }
}

/// The default configuration of the skinny products (`m` rows, `m` the block's rows):
/// bound by reading B, they want many bytes of it in flight on every multiprocessor
/// (on CUDA, deep K blocks and rings; the H200 sweep of run 46 in BENCHMARKS.md).
fn skinny_default(ty: MmType, m: u32, kind: DeviceKind, smoke: bool) -> MatmulConfig {
    match (smoke, kind, ty, m) {
        (true, _, _, _) => MatmulConfig::new((m, 32, 16), 4),
        (false, DeviceKind::Cuda, MmType::F32 | MmType::Tf32, 64) => {
            MatmulConfig::new((64, 64, 32), 4).stages(8)
        }
        (false, DeviceKind::Cuda, MmType::F16 | MmType::Bf16, 64) => {
            MatmulConfig::new((64, 64, 128), 4).stages(5)
        }
        (false, DeviceKind::Cuda, _, _) => MatmulConfig::new((m, 64, 128), 4).stages(6),
        _ => MatmulConfig::new((m, 64, 32), 4),
    }
}

/// What the command line chose beyond the suite and size (each empty: the defaults).
#[derive(Clone, Copy, Debug, Default)]
pub struct Choices<'a> {
    /// Replaces the square matmuls' default block configuration.
    pub matmul_configs: &'a [MatmulConfig],
    /// Replace the skinny products' defaults, each where its block's rows divide the
    /// product's.
    pub skinny_configs: &'a [MatmulConfig],
    /// The softmax case's warps a program, one case each.
    pub softmax_warps: &'a [u32],
    /// Keeps the cases of those element types (and adds the f16 and bf16 vector adds);
    /// without, every matmul type runs and the other cases are f32.
    pub dtypes: &'a [Dtype],
}

/// The cases of a suite for a device of `kind`, at `size` or the device's default size,
/// as `choices` say.
pub fn select(
    suite: Suite,
    size: Option<usize>,
    smoke: bool,
    kind: DeviceKind,
    choices: Choices<'_>,
) -> Vec<Case> {
    let Choices {
        matmul_configs,
        skinny_configs,
        softmax_warps,
        dtypes,
    } = choices;
    let chosen = |d: Dtype| dtypes.is_empty() || dtypes.contains(&d);
    let f32_cases = chosen(Dtype::F32);
    let gpu = matches!(kind, DeviceKind::Wgpu | DeviceKind::Cuda);
    let default = |gpu_default: usize, cpu_default: usize, tiny: usize| {
        if smoke {
            tiny
        } else if gpu {
            gpu_default
        } else {
            cpu_default
        }
    };
    let pick = |gpu_default: usize, cpu_default: usize, tiny: usize| {
        if smoke {
            tiny
        } else {
            size.unwrap_or(default(gpu_default, cpu_default, tiny))
        }
    };
    let mut cases = vec![];
    let want = |s: Suite| suite == s || suite == Suite::All;
    // The copy is the memory roof and the reference of the bandwidth-bound cases.
    if want(Suite::VectorAdd) {
        let n = pick(1 << 28, 1 << 20, 1000);
        cases.push(Case::Copy { n });
        for (d, dtype) in [
            (Dtype::F32, DType::F32),
            (Dtype::F16, DType::F16),
            (Dtype::Bf16, DType::BF16),
        ] {
            if (dtypes.is_empty() && d == Dtype::F32) || dtypes.contains(&d) {
                cases.push(Case::VectorAdd { n, dtype });
            }
        }
    } else if want(Suite::Softmax)
        || want(Suite::LayerNorm)
        || want(Suite::Matmul)
        || want(Suite::Seeds)
    {
        cases.push(Case::Copy {
            n: default(1 << 28, 1 << 20, 1000),
        });
    }
    if want(Suite::Softmax) && f32_cases {
        let s = pick(8192, 1024, 37);
        let warps: &[u32] = if softmax_warps.is_empty() {
            &[default_softmax_warps(s)]
        } else {
            softmax_warps
        };
        for &warps in warps {
            cases.push(Case::Softmax {
                rows: s,
                cols: s,
                warps,
            });
        }
    }
    if want(Suite::LayerNorm) && f32_cases {
        let rows = pick(4096, 256, 7);
        let cols = pick(8192, 1024, 300);
        cases.push(Case::LayerNorm { rows, cols });
    }
    if want(Suite::Seeds) && f32_cases {
        let s = pick(8192, 1024, 37);
        cases.push(Case::CausalSoftmax { rows: s, cols: s });
        cases.push(Case::BlockSparse {
            n: pick(1 << 26, 1 << 20, 5000),
        });
        cases.push(Case::RaggedRowSum {
            rows: pick(8192, 1024, 7),
            max_len: default(4096, 1024, 300),
        });
    }
    if want(Suite::Matmul) {
        let s = pick(4096, 512, 70);
        let types: &[MmType] = if gpu || smoke {
            &[MmType::Tf32, MmType::F32, MmType::F16, MmType::Bf16]
        } else {
            &[MmType::F32]
        };
        for &ty in types.iter().filter(|&&t| chosen(Dtype::of_matmul(t))) {
            for config in configs(matmul_configs, default_config(ty, kind, smoke)) {
                cases.push(Case::Matmul {
                    ty,
                    m: s,
                    n: s,
                    k: s,
                    config,
                });
            }
        }
        // Skinny products (a few rows against a large square matrix: decoding-style
        // shapes, bound by reading B): on GPUs and in smoke runs.
        if gpu || smoke {
            let nk = if smoke { 96 } else { size.unwrap_or(8192) };
            for m in [16usize, 64] {
                // The given skinny configurations whose block rows divide `m`, else
                // the default.
                let given: Vec<MatmulConfig> = skinny_configs
                    .iter()
                    .filter(|c| m % c.block.0 as usize == 0)
                    .copied()
                    .collect();
                for ty in [MmType::Tf32, MmType::F16, MmType::Bf16] {
                    if !chosen(Dtype::of_matmul(ty)) {
                        continue;
                    }
                    for config in configs(&given, skinny_default(ty, m as u32, kind, smoke)) {
                        cases.push(Case::Matmul {
                            ty,
                            m,
                            n: nk,
                            k: nk,
                            config,
                        });
                    }
                }
            }
        }
    }
    if want(Suite::Launch) {
        cases.push(Case::LaunchOverhead {
            n: 1024,
            launches: if smoke { 20 } else { 2000 },
        });
    }
    if want(Suite::Compile) {
        cases.push(Case::CompileWgsl);
        cases.push(Case::CompilePtx);
        cases.push(Case::CompileLoad { warm: false });
        cases.push(Case::CompileLoad { warm: true });
    }
    if want(Suite::Tutorials) {
        if tutorials::dir().is_some() {
            // 06's benchmark: batch 4, 32 heads, N_CTX 1024 to 16384 (here one length,
            // --size), head dims 64 and 128, causal and not; 09's: 8192 x 8192 with
            // K 512 (its default) and 4096.
            let (z, h) = if smoke {
                (1, 1)
            } else if gpu {
                (4, 32)
            } else {
                (1, 2)
            };
            let n_ctx = pick(4096, 256, 128);
            for d in [64, 128] {
                for causal in [false, true] {
                    cases.push(Case::TutorialAttention {
                        shape: (z, h, n_ctx, d),
                        causal,
                    });
                }
            }
            let mn = if smoke {
                200
            } else if gpu {
                8192
            } else {
                256
            };
            for k in if smoke {
                vec![100]
            } else if gpu {
                vec![512, 4096]
            } else {
                vec![256]
            } {
                cases.push(Case::TutorialPersistentMatmul { m: mn, n: mn, k });
            }
        } else if suite == Suite::Tutorials {
            eprintln!(
                "tutorial cases skipped: no tutorial directory (--tutorials DIR or {})",
                tutorials::ENV_DIR
            );
        }
    }
    cases.retain(|c| c.runs_on(kind));
    cases
}

/// Parses and gets kernel `name` of the Python source `src` (`file` names it in
/// diagnostics).
fn kernel(src: &str, file: &str, name: &str) -> Result<Kernel> {
    Module::parse(file, src)?.kernel(name)
}

/// Copies of a case's f32 buffers on `dev`, as many as [`input_sets`] asks for: in each,
/// `input` and an output of `out_len` NaNs.
fn f32_sets(dev: &Device, input: &[f32], out_len: usize) -> Result<Vec<(Buffer, Buffer)>> {
    (0..input_sets(dev.kind(), 4 * (input.len() + out_len)))
        .map(|_| Ok((dev.upload(input)?, dev.upload(&vec![f32::NAN; out_len])?)))
        .collect()
}

/// What a case's function works with besides its own parameters and row.
struct CaseRun<'a> {
    dev: &'a Device,
    /// Timed repetitions (batches).
    reps: usize,
    /// The generator of the case's inputs and of the positions its checks sample.
    rng: Rng,
    /// The cuBLAS references' runtime, on CUDA devices.
    refs: Option<&'a CudaRefs>,
    /// Rows of references measured along with the case (cuBLAS, the driver's own
    /// launch), reported after the case's row.
    reference_rows: Vec<Measured>,
    /// Failures that leave the case's own row standing (a reference that failed).
    errors: &'a mut Vec<String>,
}

/// Fills in `row` from a timed case: its timing, nominal FLOPs and bytes per run, and
/// largest error; the batch size goes to the notes.
fn record(row: &mut Measured, t: Timing, flops: f64, bytes: f64, err: f64) {
    row.seconds = t.seconds;
    row.timer = t.timer;
    row.flops = flops;
    row.bytes = bytes;
    row.max_rel_err = err;
    row.notes.push(("batch", t.batch as f64));
}

/// Runs `case` on `dev`: its own row, then the rows of the references measured with it
/// (on CUDA: the matmuls' cuBLAS GEMMs, the launch case's driver launch). A failed
/// cuBLAS reference is pushed to `errors`, the case's own row is still returned.
pub fn run(
    case: &Case,
    dev: &Device,
    reps: usize,
    refs: Option<&CudaRefs>,
    errors: &mut Vec<String>,
) -> Result<Vec<Measured>> {
    let mut cx = CaseRun {
        dev,
        reps,
        rng: Rng(0x9E37_79B9_7F4A_7C15),
        refs,
        reference_rows: vec![],
        errors,
    };
    let mut row = Measured {
        case: case.name(),
        device: if case.host_only() {
            "host (CPU)".into()
        } else {
            dev.name()
        },
        size: case.size(),
        seconds: 0.0,
        flops: 0.0,
        bytes: 0.0,
        max_rel_err: 0.0,
        timer: HOST,
        role: Role::Tilewise,
        reference: None,
        roofline: false,
        notes: vec![],
    };
    let r = &mut row;
    match *case {
        Case::CompileWgsl => compile::to_wgsl(&cx, r)?,
        Case::CompilePtx => compile::to_ptx(&cx, r)?,
        Case::CompileLoad { warm } => compile::to_loaded_module(&mut cx, r, warm)?,
        Case::Copy { n } => copy::run(&mut cx, r, n)?,
        Case::VectorAdd { n, dtype } => vector_add::run(&mut cx, r, n, dtype)?,
        Case::LaunchOverhead { n, launches } => launch::run(&mut cx, r, n, launches)?,
        Case::Softmax { rows, cols, warps } => softmax::run(&mut cx, r, rows, cols, warps)?,
        Case::LayerNorm { rows, cols } => layer_norm::run(&mut cx, r, rows, cols)?,
        Case::CausalSoftmax { rows, cols } => seeds::causal_softmax(&mut cx, r, rows, cols)?,
        Case::BlockSparse { n } => seeds::block_sparse(&mut cx, r, n)?,
        Case::RaggedRowSum { rows, max_len } => seeds::ragged_row_sum(&mut cx, r, rows, max_len)?,
        Case::Matmul {
            ty,
            m,
            n,
            k,
            config,
        } => matmul::run(&mut cx, r, ty, (m, n, k), config)?,
        Case::TutorialAttention { shape, causal } => {
            tutorials::attention(&mut cx, r, shape, causal)?
        }
        Case::TutorialPersistentMatmul { m, n, k } => {
            tutorials::persistent_matmul(&mut cx, r, (m, n, k))?
        }
    }
    let mut out = vec![row];
    out.extend(cx.reference_rows);
    Ok(out)
}
