//! `tilewise`, the command line, with the library's diagnostics: which executors this
//! machine has (`devices`), a kernel's artifacts (tile IR, Thread IR, WGSL, PTX)
//! without a GPU (`compile`), a kernel run on generated or `.npy` inputs (`run`), the
//! persistent cache (`cache`), the benchmark harness (`bench`), and the worker process
//! behind `Device::isolated` (`worker`, hidden).

mod cache;
mod compile;
mod devices;
mod grid;
mod npy;
mod run;
mod signature;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "tilewise",
    version,
    about = "Triton-dialect GPU kernels on any GPU and on the CPU"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every executor found: CUDA devices, wgpu adapters and what they can do, the CPU
    /// executors, and which one `Device::best()` picks.
    #[command(after_help = "Example:\n  tilewise devices")]
    Devices,
    /// A kernel's tile IR, Thread IR, WGSL or PTX, specialized for a signature, without
    /// a GPU.
    #[command(after_help = "Examples:\n  \
        tilewise compile add.py --kernel add_kernel --signature 'x:*f32:16, y:*f32:16, out:*f32:16, n:i32' --constexpr BLOCK=1024 --emit ptx\n  \
        tilewise compile softmax.py --kernel softmax --signature 'out:*f32, x:*f32, n:i32:16' --constexpr BLOCK=1024 --emit wgsl --checked -o softmax.wgsl\n  \
        tilewise compile matmul.py --kernel matmul_kernel --signature 'a:*f16:16, b:*f16:16, c:*f32:16, M:i32:16, N:i32:16, K:i32:16, sam:i32:16, sak:i32:1, sbk:i32:16, sbn:i32:1, scm:i32:16, scn:i32:1' --constexpr BLOCK_SIZE_M=128 --constexpr BLOCK_SIZE_N=256 --constexpr BLOCK_SIZE_K=32 --constexpr GROUP_SIZE_M=8 --num-warps 8 --emit wgsl --coop --workgroup-storage 49152")]
    Compile(CompileArgs),
    /// Runs a kernel on generated or `.npy` inputs on a chosen device; `--check`
    /// compares every buffer with the interpreter's, `--checked` uses checked mode,
    /// `--save` writes the buffers to `.npy` files.
    #[command(after_help = "Examples:\n  \
        tilewise run add.py --kernel add_kernel --grid 4 --arg 'f32[1000]' --arg 'f32[1000]' --arg 'f32[1000]=0' --arg 1000 --constexpr BLOCK=256 --device best --check\n  \
        tilewise run add.py --kernel add_kernel --grid 5 --arg 'f32[1000]' --arg 'f32[1000]' --arg 'f32[1000]' --arg 1000 --constexpr BLOCK=256 --checked\n  \
        tilewise run add.py --kernel add_kernel --grid 4 --arg x.npy --arg y.npy --arg 'f32[1000]=0' --arg 1000 --constexpr BLOCK=256 --save out/\n  \
        tilewise run matmul.py --kernel matmul_kernel --grid 'cdiv(M, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N)' --arg 'f16[1048576]' --arg 'f16[1048576]' --arg 'f32[1048576]=0' --arg 1024 --arg 1024 --arg 1024 --arg 1024 --arg 1 --arg 1024 --arg 1 --arg 1024 --arg 1 --device cuda   (the kernel's @triton.autotune configurations are timed first)")]
    Run(RunArgs),
    /// The persistent cache of compiled kernels and autotuning results: its directory
    /// (`TILEWISE_CACHE_DIR`, else the platform's cache directory), its entries, and
    /// `--clear`. `TILEWISE_CACHE=0` turns it off.
    #[command(
        after_help = "Examples:\n  tilewise cache\n  tilewise cache --clear\n  TILEWISE_CACHE_DIR=/tmp/tw tilewise cache"
    )]
    Cache(CacheArgs),
    /// The benchmark harness: each case checked against an independent reference, then
    /// timed beside its reference (the device copy, cuBLAS) in the same run. The same
    /// as the `tilewise-bench` binary.
    #[command(after_help = "Examples:\n  \
        tilewise bench --device cuda --suite matmul\n  \
        tilewise bench --device wgpu --suite launch\n  \
        tilewise bench --device all --smoke --json results.json")]
    Bench(tilewise_bench::BenchArgs),
    /// Serves one device to a parent process over standard input and output
    /// (`Device::isolated`); not for direct use.
    #[command(hide = true)]
    Worker,
}

#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    /// Remove every entry.
    #[arg(long)]
    pub clear: bool,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The Python file holding the kernel.
    pub file: PathBuf,
    /// The kernel's name.
    #[arg(long)]
    pub kernel: String,
    /// Programs to launch: `X`, `X,Y` or `X,Y,Z`, each a count or an integer
    /// expression over the kernel's integer arguments and constexprs, as a Triton grid
    /// lambda writes it: `'cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)'` (`META['BLOCK_M']` and
    /// `triton.cdiv` also work; `+ - * // % min max`).
    #[arg(long, default_value = "1")]
    pub grid: String,
    /// A runtime argument, in parameter order: `f32[1024]` (random), `f32[1024]=0`
    /// (filled), `x.npy` (a buffer read from a NumPy file, its dtype), `bf16@x.npy`
    /// (converted to bf16), or a scalar (`7`, `0.5`, `i64:7`, `true`).
    #[arg(long = "arg", value_name = "SPEC", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// A constexpr parameter, `NAME=VALUE` (repeat for each).
    #[arg(long = "constexpr", value_name = "NAME=VALUE")]
    pub constexprs: Vec<String>,
    /// Warps per program on the GPU backends.
    #[arg(long, default_value_t = 4)]
    pub num_warps: u32,
    /// Where to run: best, interp, sim, sim-ptx, sim-sm90 (the PTX lowering for Hopper:
    /// wgmma dots), sim-coop, wgpu, cuda.
    #[arg(long, default_value = "best")]
    pub device: String,
    /// Compare every buffer with the interpreter's run on the same inputs.
    #[arg(long)]
    pub check: bool,
    /// Relative tolerance of `--check` for floats (integers compare exactly).
    #[arg(long, default_value_t = 1e-5)]
    pub tol: f64,
    /// Checked mode: accesses, hints, block pointers and asserts tested, the first
    /// violation reported with its line.
    #[arg(long)]
    pub checked: bool,
    /// Run a kernel that has `@triton.autotune` without tuning (its constexprs then
    /// come from --constexpr); by default such a kernel is tuned first, the choice kept
    /// in the persistent cache.
    #[arg(long)]
    pub no_autotune: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Elements of each buffer to print.
    #[arg(long, default_value_t = 8)]
    pub show: usize,
    /// Write every buffer argument after the run to DIR/argN.npy (N its position).
    #[arg(long, value_name = "DIR")]
    pub save: Option<PathBuf>,
}

/// What `compile` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// The tile IR after tracing.
    Ir,
    /// The Thread IR of the WGSL backend's lowering.
    ThreadIr,
    /// The Thread IR of the PTX backend's lowering.
    ThreadIrPtx,
    /// WGSL, validated by naga.
    Wgsl,
    /// PTX for `--sm`.
    Ptx,
}

#[derive(clap::Args, Debug)]
pub struct CompileArgs {
    /// The Python file holding the kernel (`@triton.jit` functions).
    pub file: PathBuf,
    /// The kernel's name.
    #[arg(long)]
    pub kernel: String,
    /// Its runtime parameters in order, `triton.tools.compile` style:
    /// `'x:*f32:16, n:i32'` (`*` a pointer, `:16` an aligned pointer or an integer
    /// multiple of 16, `:1` an integer equal to 1).
    #[arg(long)]
    pub signature: String,
    /// A constexpr parameter, `NAME=VALUE` (repeat for each).
    #[arg(long = "constexpr", value_name = "NAME=VALUE")]
    pub constexprs: Vec<String>,
    /// Warps per program on the GPU backends.
    #[arg(long, default_value_t = 4)]
    pub num_warps: u32,
    /// Pipeline depth of the kernel's loops (Triton's `num_stages`, 1 to 8); the
    /// compiler's own choice when absent.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub num_stages: Option<u32>,
    /// What to write.
    #[arg(long, value_enum, default_value = "ir")]
    pub emit: Emit,
    /// The PTX target's compute capability times ten (80, 86, 89, 90).
    #[arg(long, default_value_t = 80)]
    pub sm: u32,
    /// The PTX device's shared memory a block may opt into, in bytes (the H200: 232448,
    /// an A100: 166912): the lowering fits its rings and staged stores to it, as the
    /// CUDA backend does for the device it runs on, and the notes say what it gave up.
    /// Unbounded when absent.
    #[arg(long, value_name = "BYTES")]
    pub max_shared: Option<u32>,
    /// WGSL for a device with 16x16 f16 cooperative matrices and subgroups of 32 (as
    /// the H200 lists through Vulkan); otherwise WebGPU's defaults with f16.
    #[arg(long)]
    pub coop: bool,
    /// The WGSL device's workgroup storage in bytes (WebGPU's default 16384; the H200
    /// lists 49152 through Vulkan): the lowering picks tiles and rounds to fit it.
    #[arg(long, value_name = "BYTES")]
    pub workgroup_storage: Option<u32>,
    /// The WGSL device's invocations per workgroup (WebGPU's default 256).
    #[arg(long, value_name = "N")]
    pub invocations: Option<u32>,
    /// The checked-mode form (every access tested, reports through a record).
    #[arg(long)]
    pub checked: bool,
    /// Write here instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs (RUST_LOG=tilewise=debug: device choice, compile phases, cache hits) go to
    // stderr; warnings only by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let result = match cli.command {
        Command::Devices => devices::run(),
        Command::Compile(args) => compile::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Cache(args) => cache::run(&args),
        Command::Worker => tilewise::worker::serve().map_err(|e| format!("worker: {e}")),
        Command::Bench(args) => {
            if tilewise_bench::run(&args) {
                Ok(())
            } else {
                Err("some benchmark cases failed (see above)".into())
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
