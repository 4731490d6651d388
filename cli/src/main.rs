//! `tilewise`, the command line: which executors this machine has, and a kernel's
//! artifacts (tile IR, Thread IR, WGSL, PTX) without a GPU, with the library's
//! diagnostics.

mod compile;
mod devices;
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
        tilewise compile softmax.py --kernel softmax --signature 'out:*f32, x:*f32, n:i32:16' --constexpr BLOCK=1024 --emit wgsl --checked -o softmax.wgsl")]
    Compile(CompileArgs),
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
    /// What to write.
    #[arg(long, value_enum, default_value = "ir")]
    pub emit: Emit,
    /// The PTX target's compute capability times ten (80, 86, 89, 90).
    #[arg(long, default_value_t = 80)]
    pub sm: u32,
    /// WGSL for a device with 16x16 f16 cooperative matrices and subgroups of 32 (as
    /// the H200 lists through Vulkan); otherwise WebGPU's defaults with f16.
    #[arg(long)]
    pub coop: bool,
    /// The checked-mode form (every access tested, reports through a record).
    #[arg(long)]
    pub checked: bool,
    /// Write here instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Devices => devices::run(),
        Command::Compile(args) => compile::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
