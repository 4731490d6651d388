//! `tilewise-bench`: the benchmark harness's own command (the same as `tilewise bench`).

use clap::Parser;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(about = "tilewise benchmarks, measured next to their references in one run")]
struct Cli {
    #[command(flatten)]
    args: tilewise_bench::BenchArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs (RUST_LOG=tilewise=debug: device choice, compile phases, cache hits) go to
    // stderr; warnings only by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if tilewise_bench::run(&cli.args) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
