//! The tilewise benchmark harness.
//!
//! Each case runs a kernel of the library on a device, checks its result against an
//! independent reference first (a wrong kernel has no speed), then times it: warm-up,
//! then the median of repeated runs. Results print as a table; `--json` writes every
//! case. Usage: `cargo run --release -p tilewise-bench -- --device interp --suite matmul`.

mod cases;
mod report;

use clap::{Parser, ValueEnum};
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum DeviceChoice {
    /// The reference interpreter (CPU).
    Interp,
    /// The simulator of the GPU lowering (CPU; slow).
    Sim,
    /// The first wgpu adapter (honours WGPU_BACKEND and WGPU_ADAPTER_NAME).
    Wgpu,
    /// The interpreter and every GPU found.
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    Matmul,
    VectorAdd,
    Softmax,
    LayerNorm,
    All,
}

#[derive(Parser, Debug)]
#[command(about = "tilewise benchmarks, measured next to their references in one run")]
struct Cli {
    /// Which device(s) to run on.
    #[arg(long, value_enum, default_value = "interp")]
    device: DeviceChoice,
    /// Which suite(s) to run.
    #[arg(long, value_enum, default_value = "all")]
    suite: Suite,
    /// Problem size (matmul: M = N = K; vector add and copy: elements; softmax: rows =
    /// cols).
    /// Defaults per suite and device.
    #[arg(long)]
    size: Option<usize>,
    /// Timed repetitions per case (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Smoke run: tiny sizes, one repetition; checks results, not speed.
    #[arg(long)]
    smoke: bool,
    /// Write every case as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut devices = vec![];
    if matches!(cli.device, DeviceChoice::Interp | DeviceChoice::All) {
        devices.push(tilewise::Device::interpreter());
    }
    if cli.device == DeviceChoice::Sim {
        devices.push(tilewise::Device::simulator());
    }
    if matches!(cli.device, DeviceChoice::Wgpu | DeviceChoice::All) {
        match tilewise::Device::wgpu() {
            Ok(d) => devices.push(d),
            Err(e) if cli.device == DeviceChoice::Wgpu => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
            Err(e) => eprintln!("no wgpu device: {e}"),
        }
    }
    let reps = if cli.smoke { 1 } else { cli.reps.max(1) };
    let mut results = Vec::new();
    let mut failed = false;
    let plan: Vec<(&tilewise::Device, cases::Case)> = devices
        .iter()
        .flat_map(|dev| {
            let gpu = dev.kind() == tilewise::DeviceKind::Wgpu;
            cases::select(cli.suite, cli.size, cli.smoke, gpu)
                .into_iter()
                .map(move |c| (dev, c))
        })
        .collect();
    // A progress bar over the cases, on stderr (hidden when stderr is not a terminal).
    let bar = indicatif::ProgressBar::new(plan.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    for (dev, case) in &plan {
        bar.set_message(format!("{} on {}", case.name(), dev.name()));
        match cases::run(case, dev, reps) {
            Ok(r) => results.push(r),
            Err(e) => {
                failed = true;
                bar.suspend(|| eprintln!("{} on {}: {e}", case.name(), dev.name()));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    report::table(&results);
    if let Some(path) = &cli.json {
        if let Err(e) = std::fs::write(path, report::json(&results)) {
            eprintln!("cannot write {}: {e}", path.display());
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
