//! The benchmark cases: each builds random inputs, runs a kernel of the library, checks
//! it against a float64 reference computed here (on sampled outputs for large sizes),
//! then times it (see [`time`]). On CUDA, matmul cases also run their cuBLAS references
//! on the same inputs, checked the same way.

use crate::report::{Measured, Role};
use crate::Suite;
use std::time::Instant;

#[path = "seeds.rs"]
mod seeds;
use tilewise::cuda::{Cublas, CudaRuntime, DeviceMemory, GemmPrecision};
use tilewise::half::{bf16, f16};
use tilewise::{Arg, Buffer, DType, Device, DeviceKind, Element, Kernel, Module, Result};

const VECTOR_ADD: &str = include_str!("../../shaders/vector_add.py");
const SOFTMAX: &str = include_str!("../../shaders/fused_softmax.py");
const MATMUL_BLOCK_PTR: &str = include_str!("../../shaders/matmul_block_ptr.py");
const MATMUL: &str = include_str!("../../shaders/matmul.py");
const LAYER_NORM: &str = include_str!("../../shaders/layer_norm.py");

/// Nominal floating-point operations per element of softmax (max, subtract, exp, sum,
/// divide), for the GFLOP/s column and the roofline.
pub const SOFTMAX_FLOP_PER_ELEMENT: f64 = 5.0;
/// Nominal floating-point operations per element of the layer-norm forward pass
/// (mean: add; variance: subtract, square, add; normalize: subtract, two multiplies,
/// add).
pub const LAYER_NORM_FLOP_PER_ELEMENT: f64 = 8.0;

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
    fn input_dtype(self) -> DType {
        match self {
            MmType::Tf32 | MmType::F32 => DType::F32,
            MmType::F16 => DType::F16,
            MmType::Bf16 => DType::BF16,
        }
    }

    fn input_bytes(self) -> usize {
        match self {
            MmType::Tf32 | MmType::F32 => 4,
            MmType::F16 | MmType::Bf16 => 2,
        }
    }

    /// The cuBLAS GEMM measured next to this case on the same inputs: its reference.
    fn reference(self) -> GemmPrecision {
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
    fn tolerance(self) -> f64 {
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
fn matmul_bp(ieee: bool) -> Result<Kernel> {
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

fn gemm_name(p: GemmPrecision) -> &'static str {
    match p {
        GemmPrecision::F32 => "cuBLAS f32 (ieee)",
        GemmPrecision::Tf32 => "cuBLAS tf32",
        GemmPrecision::F16 => "cuBLAS f16",
        GemmPrecision::F16F32Out => "cuBLAS f16->f32",
        GemmPrecision::Bf16 => "cuBLAS bf16",
        GemmPrecision::Bf16F32Out => "cuBLAS bf16->f32",
    }
}

/// The name of the copy case, the bandwidth reference of the bandwidth-bound cases.
pub const COPY: &str = "copy f32 (reference)";

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
    Softmax { rows: usize, cols: usize },
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
        block: (u32, u32, u32),
        /// Warps per program.
        warps: u32,
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
    /// JIT cache off (see `run`): everything compiled. `warm: true`: a persistent cache
    /// the first (untimed) run filled: what a second process pays.
    CompileLoad { warm: bool },
}

impl Case {
    pub fn name(&self) -> String {
        match self {
            Case::Copy { .. } => COPY.into(),
            Case::VectorAdd { dtype, .. } => format!("vector add {dtype}"),
            Case::Softmax { .. } => "softmax f32".into(),
            Case::LayerNorm { .. } => "layer norm fwd f32".into(),
            Case::CausalSoftmax { .. } => "seed: causal softmax f32".into(),
            Case::BlockSparse { .. } => "seed: block-sparse 2x f32".into(),
            Case::RaggedRowSum { .. } => "seed: ragged row sum f32".into(),
            Case::Matmul {
                ty, block, warps, ..
            } => {
                let b = format!("{}x{}x{}/{warps}w", block.0, block.1, block.2);
                match ty {
                    MmType::Tf32 => format!("matmul tf32 bp {b}"),
                    MmType::F32 => format!("matmul f32 bp {b}"),
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
            Case::Softmax { rows, cols }
            | Case::LayerNorm { rows, cols }
            | Case::CausalSoftmax { rows, cols }
            | Case::RaggedRowSum {
                rows,
                max_len: cols,
            } => {
                format!("{rows}x{cols}")
            }
            Case::Matmul { m, n, k, .. } => format!("{m}x{n}x{k}"),
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

/// The cases of a suite for a device of `kind`, at `size` or the device's default size.
/// A matmul block configuration: `(BM, BN, BK)` and warps per program.
pub type MatmulConfig = ((u32, u32, u32), u32);

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
        (true, _, _) => ((32, 32, 16), 4),
        // From the H200 sweeps (BENCHMARKS.md).
        (false, DeviceKind::Cuda, MmType::F32 | MmType::Tf32) => ((128, 256, 32), 8),
        (false, DeviceKind::Cuda, _) => ((128, 256, 64), 8),
        (false, DeviceKind::Wgpu, MmType::F32 | MmType::Tf32) => ((64, 128, 16), 4),
        (false, DeviceKind::Wgpu, _) => ((128, 128, 16), 4),
        _ => ((64, 64, 32), 4),
    }
}

/// The cases of a suite for a device of `kind`, at `size` or the device's default size;
/// `matmul_configs` (if any) replaces the square matmuls' default block configuration.
/// `dtypes` (if any) keeps the cases of those element types (and adds the f16 and bf16
/// vector adds); without, every matmul type runs and the other cases are f32.
pub fn select(
    suite: Suite,
    size: Option<usize>,
    smoke: bool,
    kind: DeviceKind,
    matmul_configs: &[MatmulConfig],
    dtypes: &[Dtype],
) -> Vec<Case> {
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
        cases.push(Case::Softmax { rows: s, cols: s });
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
            for (block, warps) in configs(matmul_configs, default_config(ty, kind, smoke)) {
                cases.push(Case::Matmul {
                    ty,
                    m: s,
                    n: s,
                    k: s,
                    block,
                    warps,
                });
            }
        }
        // Skinny products (a few rows against a large square matrix: decoding-style
        // shapes, bound by reading B): on GPUs and in smoke runs.
        if gpu || smoke {
            let nk = if smoke { 96 } else { size.unwrap_or(8192) };
            for m in [16usize, 64] {
                let block = if smoke {
                    (m as u32, 32, 16)
                } else {
                    (m as u32, 64, 32)
                };
                for ty in [MmType::Tf32, MmType::F16, MmType::Bf16] {
                    if !chosen(Dtype::of_matmul(ty)) {
                        continue;
                    }
                    cases.push(Case::Matmul {
                        ty,
                        m,
                        n: nk,
                        k: nk,
                        block,
                        warps: 4,
                    });
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
    cases.retain(|c| c.runs_on(kind));
    cases
}

/// The CUDA runtime and cuBLAS handle of the references (their own stream and events).
pub struct CudaRefs {
    pub rt: CudaRuntime,
    pub blas: Cublas,
}

impl CudaRefs {
    pub fn new(ordinal: usize) -> Result<CudaRefs> {
        let rt = CudaRuntime::new(ordinal)?;
        let blas = Cublas::new(&rt)?;
        Ok(CudaRefs { rt, blas })
    }
}

/// A small deterministic generator of uniform floats in [-1, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.next()).collect()
    }
    fn index(&mut self, n: usize) -> usize {
        ((self.next() + 1.0) * 0.5 * n as f32) as usize % n
    }
}

fn kernel(src: &str, file: &str, name: &str) -> Result<Kernel> {
    Module::parse(file, src)?.kernel(name)
}

/// What timed a case.
pub const EVENTS: &str = "cuda events";
pub const TIMESTAMPS: &str = "gpu timestamps";
pub const HOST: &str = "host clock";

/// A median time per launch and how it was taken.
struct Timing {
    seconds: f64,
    timer: &'static str,
    batch: usize,
}

/// A stream of work that can be timed: a tilewise device, or the CUDA runtime of the
/// cuBLAS references.
trait Queue {
    /// Runs `f` `batch` times and returns the device time of the whole batch in seconds,
    /// or `None` (the calls still ran) where there are no GPU timers.
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>>;
    fn sync(&self) -> Result<()>;
    /// Seconds a timed batch should last.
    fn batch_target(&self) -> f64;
    /// Whether this is a GPU (its clocks ramp up under load).
    fn is_gpu(&self) -> bool;
    /// What [`Queue::device_time`] measures with.
    fn timer(&self) -> &'static str;
}

impl Queue for Device {
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>> {
        self.time_on_device(|| (0..batch).try_for_each(|_| f()))
    }
    fn sync(&self) -> Result<()> {
        self.synchronize()
    }
    fn batch_target(&self) -> f64 {
        // GPUs queue launches: time a batch and divide, so that the submission and the
        // wait at the end are amortized. The CPU executors run one launch a batch.
        match self.kind() {
            DeviceKind::Wgpu => 0.1,
            DeviceKind::Cuda => 0.02,
            DeviceKind::Interpreter | DeviceKind::Simulator => 0.0,
        }
    }
    fn is_gpu(&self) -> bool {
        matches!(self.kind(), DeviceKind::Wgpu | DeviceKind::Cuda)
    }
    fn timer(&self) -> &'static str {
        if self.kind() == DeviceKind::Wgpu {
            TIMESTAMPS
        } else {
            EVENTS
        }
    }
}

impl Queue for CudaRuntime {
    fn device_time(&self, batch: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>> {
        let start = self.record_event()?;
        (0..batch).try_for_each(|_| f())?;
        let end = self.record_event()?;
        self.synchronize()?;
        Ok(Some(self.elapsed_ms(&start, &end)? as f64 * 1e-3))
    }
    fn sync(&self) -> Result<()> {
        self.synchronize()
    }
    fn batch_target(&self) -> f64 {
        0.02
    }
    fn is_gpu(&self) -> bool {
        true
    }
    fn timer(&self) -> &'static str {
        EVENTS
    }
}

/// How long GPUs run batches before the timed ones (see [`time`]).
const WARMUP_S: f64 = 0.3;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bytes the rotated copies of a case's buffers add up to at least: more than any GPU's
/// last-level cache (50 MB on the H100/H200, up to 256 MB elsewhere), so that no timed
/// launch finds its inputs in a cache the previous launch filled.
const ROTATE_BYTES: usize = 256 << 20;
/// Most copies of a case's buffers.
const MAX_SETS: usize = 16;

/// How many copies of its buffers (`working_set` bytes) a case's timed launches rotate
/// through on `dev`: one on the CPU executors and for working sets of
/// [`ROTATE_BYTES`] or more, else enough to reach it (at most [`MAX_SETS`]).
fn input_sets(dev_kind: DeviceKind, working_set: usize) -> usize {
    if !matches!(dev_kind, DeviceKind::Wgpu | DeviceKind::Cuda) {
        return 1;
    }
    ROTATE_BYTES.div_ceil(working_set.max(1)).clamp(1, MAX_SETS)
}

/// Copies of a case's f32 buffers on `dev`, as many as [`input_sets`] asks for: in each,
/// `input` and an output of `out_len` NaNs.
fn f32_sets(dev: &Device, input: &[f32], out_len: usize) -> Result<Vec<(Buffer, Buffer)>> {
    (0..input_sets(dev.kind(), 4 * (input.len() + out_len)))
        .map(|_| Ok((dev.upload(input)?, dev.upload(&vec![f32::NAN; out_len])?)))
        .collect()
}

/// The softmax of `row` in float64: the reference of the softmax cases.
fn softmax_f64(row: &[f32]) -> Vec<f64> {
    let mx = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
    let e: Vec<f64> = row.iter().map(|&v| (v as f64 - mx).exp()).collect();
    let sum: f64 = e.iter().sum();
    e.into_iter().map(|v| v / sum).collect()
}

/// Cycles through `n` buffer sets: the index of the set the next launch uses.
struct Rotation {
    n: usize,
    next: usize,
}

impl Rotation {
    fn new(n: usize) -> Rotation {
        Rotation { n, next: 0 }
    }
    fn advance(&mut self) -> usize {
        let i = self.next;
        self.next = (self.next + 1) % self.n;
        i
    }
}

fn batch_override() -> Option<usize> {
    std::env::var("TILEWISE_BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&b| b > 0)
}

/// Median seconds per launch.
///
/// 1. One launch and a synchronization warm up (specialization, JIT or pipeline
///    creation, caches), then one more launch, timed alone, sizes the batch to about
///    [`Queue::batch_target`].
/// 2. On GPUs, batches run for at least [`WARMUP_S`] before any is timed: clocks ramp up
///    under sustained load only. On the H200's Vulkan driver, back-to-back vector adds
///    in 20 ms batches measured 2.3x slower per launch than in 100 ms ones, on the host
///    clock and the GPU timestamps alike (BENCHMARKS.md).
/// 3. The median of `reps` batches. With GPU timers (CUDA events, wgpu timestamps) each
///    batch is timed by the GPU around it; the host clock also times it (it includes
///    the submission and the wait, so it can only be longer): a GPU figure more than
///    5% above it is a broken timer, and the case fails rather than report it. Without
///    GPU timers (or with `--timer host`), a batch of back-to-back launches ended by one
///    synchronization, on the host clock.
///
/// `TILEWISE_BENCH_BATCH` fixes the batch size.
fn time(reps: usize, q: &dyn Queue, launch: &mut dyn FnMut() -> Result<()>) -> Result<Timing> {
    launch()?;
    q.sync()?;
    let host_only = std::env::var("TILEWISE_BENCH_TIMER").as_deref() == Ok("host");
    let gpu_timed = if host_only {
        None
    } else {
        q.device_time(1, launch)?
    };
    let one = match gpu_timed {
        Some(t) => t,
        None => {
            let t = Instant::now();
            launch()?;
            q.sync()?;
            t.elapsed().as_secs_f64()
        }
    };
    // One repetition (smoke runs) times one launch: a check, not a measurement.
    let target = if reps > 1 { q.batch_target() } else { 0.0 };
    let batch = batch_override()
        .unwrap_or_else(|| ((target / one.max(1e-7)).ceil() as usize).clamp(1, 1000));
    if q.is_gpu() && reps > 1 {
        let start = Instant::now();
        while start.elapsed().as_secs_f64() < WARMUP_S {
            for _ in 0..batch {
                launch()?;
            }
            q.sync()?;
        }
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let host = Instant::now();
        let t = if gpu_timed.is_some() {
            q.device_time(batch, launch)?
                .ok_or_else(|| tilewise::Diagnostic::internal("the device timer went away"))?
        } else {
            for _ in 0..batch {
                launch()?;
            }
            q.sync()?;
            host.elapsed().as_secs_f64()
        };
        let host = host.elapsed().as_secs_f64();
        if t > host * 1.05 {
            return Err(tilewise::Diagnostic::internal(format!(
                "the GPU timer ({}) measured {:.3} ms for a batch the host clock saw take \
                 {:.3} ms",
                q.timer(),
                t * 1e3,
                host * 1e3
            )));
        }
        times.push(t / batch as f64);
    }
    Ok(Timing {
        seconds: median(times),
        timer: if gpu_timed.is_some() { q.timer() } else { HOST },
        batch,
    })
}

fn fail(case: &str, what: String) -> tilewise::Diagnostic {
    tilewise::Diagnostic::new(
        tilewise::ErrorKind::Runtime,
        format!("{case} gave a wrong result: {what}"),
    )
}

/// Largest error of (got, want) pairs, relative to the reference's largest magnitude; an
/// error above `tol` or a non-finite value fails the case.
fn check(case: &str, pairs: impl Iterator<Item = (f64, f64)> + Clone, tol: f64) -> Result<f64> {
    let scale = pairs
        .clone()
        .fold(0f64, |m, (_, w)| m.max(w.abs()))
        .max(1e-30);
    let mut worst = 0f64;
    for (g, w) in pairs {
        let e = (g - w).abs() / scale;
        if !e.is_finite() || e > tol {
            return Err(fail(
                case,
                format!("{g} where the reference is {w} (tolerance {tol:.0e})"),
            ));
        }
        worst = worst.max(e);
    }
    Ok(worst)
}

/// Reference samples of C = A @ B (both row-major, f64 accumulation).
fn matmul_samples(
    rng: &mut Rng,
    a: &[f32],
    b: &[f32],
    c: &[f32],
    (m, n, k): (usize, usize, usize),
) -> Vec<(f64, f64)> {
    (0..256)
        .map(|_| {
            let (i, j) = (rng.index(m), rng.index(n));
            let want: f64 = (0..k)
                .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                .sum();
            (c[i * n + j] as f64, want)
        })
        .collect()
}

/// A host matrix in a matmul's input type.
enum HostMat {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
}

impl HostMat {
    fn random(rng: &mut Rng, dtype: DType, len: usize) -> HostMat {
        HostMat::F32(rng.vec(len)).convert(dtype)
    }
    /// The values rounded to `dtype` (f32, f16 or bf16).
    fn convert(&self, dtype: DType) -> HostMat {
        let v = self.to_f32();
        match dtype {
            DType::F16 => HostMat::F16(v.into_iter().map(f16::from_f32).collect()),
            DType::BF16 => HostMat::Bf16(v.into_iter().map(bf16::from_f32).collect()),
            _ => HostMat::F32(v),
        }
    }
    fn download(dev: &Device, buf: &Buffer) -> Result<HostMat> {
        Ok(match buf.dtype() {
            DType::F16 => HostMat::F16(dev.download(buf)?),
            DType::BF16 => HostMat::Bf16(dev.download(buf)?),
            _ => HostMat::F32(dev.download(buf)?),
        })
    }
    fn upload(&self, dev: &Device) -> Result<Buffer> {
        match self {
            HostMat::F32(v) => dev.upload(v),
            HostMat::F16(v) => dev.upload(v),
            HostMat::Bf16(v) => dev.upload(v),
        }
    }
    /// The values as f32 (exact: f16 and bf16 widen without rounding).
    fn to_f32(&self) -> Vec<f32> {
        match self {
            HostMat::F32(v) => v.clone(),
            HostMat::F16(v) => v.iter().map(|x| x.to_f32()).collect(),
            HostMat::Bf16(v) => v.iter().map(|x| x.to_f32()).collect(),
        }
    }
    fn bytes(&self) -> Vec<u8> {
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

/// The compile cases' specialization: the block-pointer matmul, 64x64x32 blocks, traced
/// for 4096^3 arguments (buffers on a host interpreter, as the previous figures did).
fn compile_matmul() -> Result<tilewise::Compiled> {
    let kern = matmul_bp(false)?;
    let host = Device::interpreter();
    let (a, c) = (host.zeros::<f32>(16)?, host.zeros::<f32>(16)?);
    let mut launch = kern.launch(&host, 1).arg(&a).arg(&a).arg(&c);
    for v in [4096i32, 4096, 4096, 4096, 1, 4096, 1, 4096, 1] {
        launch = launch.arg(v);
    }
    launch
        .constexpr("BLOCK_M", 64)
        .constexpr("BLOCK_N", 64)
        .constexpr("BLOCK_K", 32)
        .compile()
}

/// Median host seconds of `reps` (at least 3) calls after one warm-up call.
fn time_host(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = vec![];
    for _ in 0..reps.max(3) {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok(median(times))
}

/// The scalar arguments of the matmul kernels for dense row-major operands: M, N, K,
/// then the (row, column) strides of A, B and C.
fn matmul_scalars(m: usize, n: usize, k: usize) -> Vec<Arg> {
    [m, n, k, k, 1, n, 1, n, 1]
        .iter()
        .map(|&v| Arg::from(v as i32))
        .collect()
}

/// Launches the block-pointer matmul kernel (row-major, dense).
#[allow(clippy::too_many_arguments)]
fn launch_bp(
    kern: &Kernel,
    dev: &Device,
    (a, b, c): (&Buffer, &Buffer, &Buffer),
    (m, n, k): (usize, usize, usize),
    block: (u32, u32, u32),
    warps: u32,
) -> Result<()> {
    let grid = [(m as u32).div_ceil(block.0), (n as u32).div_ceil(block.1)];
    kern.launch(dev, grid)
        .arg(a)
        .arg(b)
        .arg(c)
        .args(matmul_scalars(m, n, k))
        .constexpr("BLOCK_M", block.0)
        .constexpr("BLOCK_N", block.1)
        .constexpr("BLOCK_K", block.2)
        .num_warps(warps)
        .run()
}

/// Runs `case` on `dev`: its own row, then (matmul on CUDA) its cuBLAS reference row.
/// A failed reference is pushed to `errors`, the case's own row is still returned.
pub fn run(
    case: &Case,
    dev: &Device,
    reps: usize,
    refs: Option<&CudaRefs>,
    errors: &mut Vec<String>,
) -> Result<Vec<Measured>> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let name = case.name();
    let mut row = Measured {
        case: name.clone(),
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
    let mut extra_rows = vec![];
    fn set(row: &mut Measured, t: Timing, flops: f64, bytes: f64, err: f64) {
        row.seconds = t.seconds;
        row.timer = t.timer;
        row.flops = flops;
        row.bytes = bytes;
        row.max_rel_err = err;
        row.notes.push(("batch", t.batch as f64));
    }
    match *case {
        Case::CompileWgsl => {
            row.seconds = time_host(reps, || compile_matmul()?.wgsl().map(|_| ()))?;
        }
        Case::CompilePtx => {
            row.seconds = time_host(reps, || compile_matmul()?.ptx().map(|_| ()))?;
        }
        Case::CompileLoad { warm } => {
            let (m, n, k) = (64, 64, 64);
            let (a, b) = (rng.vec(m * k), rng.vec(k * n));
            let dir =
                std::env::temp_dir().join(format!("tilewise-bench-cache-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut times = vec![];
            let mut err = 0f64;
            // The warm case's first run fills the cache, untimed.
            let runs = reps.max(3) + warm as usize;
            for run in 0..runs {
                if warm {
                    std::env::set_var("TILEWISE_CACHE_DIR", &dir);
                    std::env::remove_var("TILEWISE_CACHE");
                } else {
                    std::env::set_var("TILEWISE_CACHE", "0");
                }
                // A fresh device: no compiled-kernel cache in memory.
                let fresh = match dev.kind() {
                    DeviceKind::Cuda => Device::cuda(0),
                    _ => Device::wgpu(),
                };
                std::env::remove_var("TILEWISE_CACHE");
                std::env::remove_var("TILEWISE_CACHE_DIR");
                let fresh = fresh?;
                let (da, db) = (fresh.upload(&a)?, fresh.upload(&b)?);
                let dc = fresh.upload(&vec![f32::NAN; m * n])?;
                fresh.synchronize()?;
                let t = Instant::now();
                let kern = matmul_bp(false)?;
                launch_bp(&kern, &fresh, (&da, &db, &dc), (m, n, k), (64, 64, 32), 4)?;
                fresh.synchronize()?;
                if !warm || run > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
                let c = fresh.download::<f32>(&dc)?;
                let samples = matmul_samples(&mut rng, &a, &b, &c, (m, n, k));
                err = err.max(check(&name, samples.into_iter(), MmType::Tf32.tolerance())?);
            }
            let _ = std::fs::remove_dir_all(&dir);
            row.notes.push(("first_s", times[0]));
            row.seconds = median(times);
            row.max_rel_err = err;
        }
        Case::Copy { n } => {
            let x = rng.vec(n);
            let sets = f32_sets(dev, &x, n)?;
            for (src, dst) in &sets {
                dev.copy(src, dst)?;
                if dev.download::<f32>(dst)? != x {
                    return Err(fail(&name, "the copy differs from its source".into()));
                }
            }
            let mut rot = Rotation::new(sets.len());
            let t = time(reps, dev, &mut || {
                let (src, dst) = &sets[rot.advance()];
                dev.copy(src, dst)
            })?;
            set(&mut row, t, 0.0, 8.0 * n as f64, 0.0);
            row.notes.push(("input_sets", sets.len() as f64));
            row.role = Role::Reference;
        }
        Case::VectorAdd { n, dtype } => {
            let kern = kernel(VECTOR_ADD, "vector_add.py", "add_kernel")?;
            let (x, y) = (
                HostMat::random(&mut rng, dtype, n),
                HostMat::random(&mut rng, dtype, n),
            );
            let es = dtype.size_bytes();
            let poison = HostMat::F32(vec![f32::NAN; n]).convert(dtype);
            let sets = (0..input_sets(dev.kind(), 3 * es * n))
                .map(|_| Ok((x.upload(dev)?, y.upload(dev)?, poison.upload(dev)?)))
                .collect::<Result<Vec<_>>>()?;
            let run = |(dx, dy, dout): &(Buffer, Buffer, Buffer)| {
                kern.launch(dev, (n as u32).div_ceil(1024))
                    .arg(dx)
                    .arg(dy)
                    .arg(dout)
                    .arg(n as i32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .run()
            };
            // The sum of two inputs, rounded once to the output type.
            let (xf, yf) = (x.to_f32(), y.to_f32());
            let want = HostMat::F32((0..n).map(|i| xf[i] + yf[i]).collect())
                .convert(dtype)
                .to_f32();
            let mut err = 0f64;
            for s in &sets {
                run(s)?;
                let got = HostMat::download(dev, &s.2)?.to_f32();
                let pairs = (0..n).map(|i| (got[i] as f64, want[i] as f64));
                err = err.max(check(&name, pairs, 1e-6)?);
            }
            let mut rot = Rotation::new(sets.len());
            let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
            set(&mut row, t, n as f64, 3.0 * (es * n) as f64, err);
            row.notes.push(("input_sets", sets.len() as f64));
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::LaunchOverhead { n, launches } => {
            let kern = kernel(VECTOR_ADD, "vector_add.py", "add_kernel")?;
            let (x, y) = (rng.vec(n), rng.vec(n));
            let (dx, dy) = (dev.upload(&x)?, dev.upload(&y)?);
            let dout = dev.upload(&vec![f32::NAN; n])?;
            let mut launch = || {
                kern.launch(dev, (n as u32).div_ceil(1024))
                    .arg(&dx)
                    .arg(&dy)
                    .arg(&dout)
                    .arg(n as i32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .run()
            };
            launch()?;
            let got = dev.download::<f32>(&dout)?;
            let pairs = (0..n).map(|i| (got[i] as f64, x[i] as f64 + y[i] as f64));
            row.max_rel_err = check(&name, pairs, 1e-6)?;
            let queue_all =
                |launch: &mut dyn FnMut() -> Result<()>| (0..launches).try_for_each(|_| launch());
            queue_all(&mut launch)?; // warm-up
            dev.synchronize()?;
            let (mut host, mut wall) = (vec![], vec![]);
            for _ in 0..reps {
                let t = Instant::now();
                queue_all(&mut launch)?;
                host.push(t.elapsed().as_secs_f64() / launches as f64);
                dev.synchronize()?;
                wall.push(t.elapsed().as_secs_f64() / launches as f64);
            }
            let mut device = vec![];
            for _ in 0..reps {
                match dev.time_on_device(|| queue_all(&mut launch))? {
                    Some(t) => device.push(t / launches as f64),
                    None => break,
                }
            }
            row.seconds = median(host);
            // The floor: the same PTX launched straight through the driver wrapper
            // (cuLaunchKernel and its argument checks), on the references' runtime.
            if let Some(refs) = refs {
                let (major, minor) = refs.rt.compute_capability();
                let target = tilewise::cuda::PtxTarget {
                    sm: (major * 10 + minor).min(90),
                };
                let compiled = kern
                    .launch(dev, (n as u32).div_ceil(1024))
                    .arg(&dx)
                    .arg(&dy)
                    .arg(&dout)
                    .arg(n as i32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .compile()?;
                let ptx = compiled.ptx_for(target, 4)?;
                let func = refs.rt.load_module(&ptx.source, &ptx.entry)?;
                let bufs = [
                    refs.rt.alloc_zeroed(4 * n)?,
                    refs.rt.alloc_zeroed(4 * n)?,
                    refs.rt.alloc_zeroed(4 * n)?,
                ];
                let args = [
                    tilewise::cuda::KernelArg::U64(bufs[0].address()),
                    tilewise::cuda::KernelArg::U64(bufs[1].address()),
                    tilewise::cuda::KernelArg::U64(bufs[2].address()),
                    tilewise::cuda::KernelArg::U32(n as u32),
                ];
                let grid = [(n as u32).div_ceil(1024), 1, 1];
                let raw = || {
                    refs.rt
                        .launch(&func, grid, [ptx.threads, 1, 1], ptx.shared_bytes, &args)
                };
                (0..launches).try_for_each(|_| raw())?;
                refs.rt.synchronize()?;
                let mut host = vec![];
                for _ in 0..reps {
                    let t = Instant::now();
                    (0..launches).try_for_each(|_| raw())?;
                    host.push(t.elapsed().as_secs_f64() / launches as f64);
                    refs.rt.synchronize()?;
                }
                let name = "driver launch, same PTX";
                extra_rows.push(Measured {
                    case: name.into(),
                    device: row.device.clone(),
                    size: row.size.clone(),
                    seconds: median(host),
                    flops: 0.0,
                    bytes: 0.0,
                    max_rel_err: 0.0,
                    timer: HOST,
                    role: Role::Reference,
                    reference: None,
                    roofline: false,
                    notes: vec![("launches", launches as f64)],
                });
                row.reference = Some(name.into());
            }
            row.notes.push(("launches", launches as f64));
            row.notes.push(("wall_per_launch_s", median(wall)));
            if !device.is_empty() {
                row.notes.push(("device_per_launch_s", median(device)));
                row.timer = if dev.kind() == DeviceKind::Wgpu {
                    "host clock (+ gpu timestamps)"
                } else {
                    "host clock (+ cuda events)"
                };
            }
        }
        Case::Softmax { rows, cols } => {
            let kern = kernel(SOFTMAX, "fused_softmax.py", "softmax_kernel")?;
            let x = rng.vec(rows * cols);
            let sets = f32_sets(dev, &x, rows * cols)?;
            let block = cols.next_power_of_two() as u32;
            let run = |(dx, dout): &(Buffer, Buffer)| {
                kern.launch(dev, rows as u32)
                    .arg(dout)
                    .arg(dx)
                    .arg(cols as i32)
                    .arg(cols as i32)
                    .arg(rows as i32)
                    .arg(cols as i32)
                    .constexpr("BLOCK_SIZE", block)
                    // Triton's tutorial uses 16 warps for 8192-wide rows; 4 measured
                    // faster here (see BENCHMARKS.md).
                    .num_warps(4)
                    .run()
            };
            let mut err = 0f64;
            for set in &sets {
                run(set)?;
                let got = dev.download::<f32>(&set.1)?;
                let mut samples = vec![];
                for _ in 0..16.min(rows) {
                    let r = rng.index(rows);
                    let want = softmax_f64(&x[r * cols..(r + 1) * cols]);
                    for (c, w) in want.into_iter().enumerate() {
                        samples.push((got[r * cols + c] as f64, w));
                    }
                }
                err = err.max(check(&name, samples.into_iter(), 1e-5)?);
            }
            let elems = (rows * cols) as f64;
            let mut rot = Rotation::new(sets.len());
            let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
            row.notes.push(("input_sets", sets.len() as f64));
            set(
                &mut row,
                t,
                SOFTMAX_FLOP_PER_ELEMENT * elems,
                8.0 * elems,
                err,
            );
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::LayerNorm { rows, cols } => {
            let kern = kernel(LAYER_NORM, "layer_norm.py", "_layer_norm_fwd_fused")?;
            let (x, w, b) = (rng.vec(rows * cols), rng.vec(cols), rng.vec(cols));
            let (dw, db) = (dev.upload(&w)?, dev.upload(&b)?);
            let poison = |len: usize| dev.upload(&vec![f32::NAN; len]);
            // x, y, mean, rstd.
            let sets = (0..input_sets(dev.kind(), 8 * rows * cols))
                .map(|_| {
                    Ok([
                        dev.upload(&x)?,
                        poison(rows * cols)?,
                        poison(rows)?,
                        poison(rows)?,
                    ])
                })
                .collect::<Result<Vec<_>>>()?;
            let run = |[dx, dy, dmean, drstd]: &[Buffer; 4]| {
                kern.launch(dev, rows as u32)
                    .arg(dx)
                    .arg(dy)
                    .arg(&dw)
                    .arg(&db)
                    .arg(dmean)
                    .arg(drstd)
                    .arg(cols as i32)
                    .arg(cols as i32)
                    .arg(1e-5f32)
                    .constexpr("BLOCK_SIZE", 1024)
                    .run()
            };
            let mut err = 0f64;
            for set in &sets {
                run(set)?;
                let y = dev.download::<f32>(&set[1])?;
                let mut samples = vec![];
                for _ in 0..8.min(rows) {
                    let r = rng.index(rows);
                    let row = &x[r * cols..(r + 1) * cols];
                    let mean = row.iter().map(|&v| v as f64).sum::<f64>() / cols as f64;
                    let var =
                        row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / cols as f64;
                    let rstd = 1.0 / (var + 1e-5).sqrt();
                    for c in 0..cols {
                        let want = (row[c] as f64 - mean) * rstd * w[c] as f64 + b[c] as f64;
                        samples.push((y[r * cols + c] as f64, want));
                    }
                }
                err = err.max(check(&name, samples.into_iter(), 1e-4)?);
            }
            let elems = (rows * cols) as f64;
            // X read twice for the statistics and once to normalize, Y written once.
            let mut rot = Rotation::new(sets.len());
            let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
            row.notes.push(("input_sets", sets.len() as f64));
            set(
                &mut row,
                t,
                LAYER_NORM_FLOP_PER_ELEMENT * elems,
                16.0 * elems,
                err,
            );
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::CausalSoftmax { rows, cols } => {
            let (t, flops, bytes, err, nsets) =
                seeds::causal(dev, reps, &mut rng, &name, rows, cols)?;
            set(&mut row, t, flops, bytes, err);
            row.notes.push(("input_sets", nsets as f64));
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::BlockSparse { n } => {
            let (t, flops, bytes, err, nsets) = seeds::block_sparse(dev, reps, &mut rng, &name, n)?;
            set(&mut row, t, flops, bytes, err);
            row.notes.push(("input_sets", nsets as f64));
            row.notes.push(("block", seeds::SPARSE_BLOCK as f64));
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::RaggedRowSum { rows, max_len } => {
            let (t, flops, bytes, err, nsets) =
                seeds::ragged(dev, reps, &mut rng, &name, rows, max_len)?;
            set(&mut row, t, flops, bytes, err);
            row.notes.push(("input_sets", nsets as f64));
            row.reference = Some(COPY.into());
            row.roofline = true;
        }
        Case::Matmul {
            ty,
            m,
            n,
            k,
            block,
            warps,
        } => {
            let a = HostMat::random(&mut rng, ty.input_dtype(), m * k);
            let b = HostMat::random(&mut rng, ty.input_dtype(), k * n);
            let bytes = ty.input_bytes() * (m * k + k * n) + 4 * m * n;
            let nsets = input_sets(dev.kind(), bytes);
            let sets = (0..nsets)
                .map(|_| {
                    Ok((
                        a.upload(dev)?,
                        b.upload(dev)?,
                        dev.upload(&vec![f32::NAN; m * n])?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            // f32: the block-pointer kernel; f16 and bf16: tutorial 03's grouped kernel.
            let kern = match ty {
                MmType::Tf32 | MmType::F32 => matmul_bp(ty == MmType::F32)?,
                MmType::F16 | MmType::Bf16 => kernel(MATMUL, "matmul.py", "matmul_kernel")?,
            };
            let run = |(da, db, dc): &(Buffer, Buffer, Buffer)| match ty {
                MmType::Tf32 | MmType::F32 => {
                    launch_bp(&kern, dev, (da, db, dc), (m, n, k), block, warps)
                }
                MmType::F16 | MmType::Bf16 => {
                    let grid = (m as u32).div_ceil(block.0) * (n as u32).div_ceil(block.1);
                    kern.launch(dev, grid)
                        .arg(da)
                        .arg(db)
                        .arg(dc)
                        .args(matmul_scalars(m, n, k))
                        .constexpr("BLOCK_SIZE_M", block.0)
                        .constexpr("BLOCK_SIZE_N", block.1)
                        .constexpr("BLOCK_SIZE_K", block.2)
                        .constexpr("GROUP_SIZE_M", 8)
                        .num_warps(warps)
                        .run()
                }
            };
            let (af, bf) = (a.to_f32(), b.to_f32());
            let mut err = 0f64;
            for set in &sets {
                run(set)?;
                let c = dev.download::<f32>(&set.2)?;
                let samples = matmul_samples(&mut rng, &af, &bf, &c, (m, n, k));
                err = err.max(check(&name, samples.into_iter(), ty.tolerance())?);
            }
            let flops = 2.0 * (m * n * k) as f64;
            let mut rot = Rotation::new(sets.len());
            let t = time(reps, dev, &mut || run(&sets[rot.advance()]))?;
            set(&mut row, t, flops, bytes as f64, err);
            row.notes.push(("input_sets", nsets as f64));
            row.roofline = true;
            if let Some(refs) = refs {
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
                        let samples = matmul_samples(&mut rng, &af, &bf, &c, (m, n, k));
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
                    Ok(r) => extra_rows.push(r),
                    // The case's own figure stands; the run still fails.
                    Err(e) => errors.push(format!("{} for {name} {}: {e}", gemm_name(p), row.size)),
                }
            }
        }
    }
    let mut out = vec![row];
    out.extend(extra_rows);
    Ok(out)
}

/// One cuBLAS GEMM on the references' stream, rotating through the same number of
/// buffer sets as the case, outputs poisoned first, timed like the kernels (events,
/// warm-up, median of batches). The results stay in the sets' `c` for checking.
fn gemm_reference(
    refs: &CudaRefs,
    p: GemmPrecision,
    sets: &[(DeviceMemory, DeviceMemory, DeviceMemory)],
    (m, n, k): (usize, usize, usize),
    reps: usize,
) -> Result<Measured> {
    let poison: Vec<u8> = std::iter::repeat_n(f32::NAN.to_le_bytes(), m * n)
        .flatten()
        .collect();
    for (_, _, c) in sets {
        refs.rt.write(c, 0, &poison)?;
    }
    // The checked results are these first GEMMs'; the timed ones overwrite them with
    // the same values.
    for (a, b, c) in sets {
        refs.blas.gemm(p, m, n, k, a, b, c)?;
    }
    let mut rot = Rotation::new(sets.len());
    let mut gemm = || {
        let (a, b, c) = &sets[rot.advance()];
        refs.blas.gemm(p, m, n, k, a, b, c)
    };
    let t = time(reps, &refs.rt, &mut gemm)?;
    Ok(Measured {
        case: gemm_name(p).into(),
        device: String::new(),
        size: String::new(),
        seconds: t.seconds,
        flops: 2.0 * (m * n * k) as f64,
        bytes: 0.0,
        max_rel_err: 0.0,
        timer: t.timer,
        role: Role::Reference,
        reference: None,
        roofline: true,
        notes: vec![("batch", t.batch as f64), ("input_sets", sets.len() as f64)],
    })
}
