//! `tilewise-fuzz`: runs the differential fuzzer from the command line.
//!
//! ```text
//! cargo run --release -p tilewise-fuzz -- --count 5000 --executors all
//! cargo run --release -p tilewise-fuzz -- --seed 1234 --count 1 --show
//! ```

use clap::{Parser, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use tilewise::Device;
use tilewise_fuzz::{generate, run_batch, Executor, Options};

#[derive(Parser, Debug)]
#[command(
    about = "Differential fuzzer: random tile programs, run on every executor against the interpreter",
    after_help = "Examples:\n  tilewise-fuzz --count 5000 --executors all\n  tilewise-fuzz --seed 42 --count 1 --show\n  tilewise-fuzz --count 500 --checked"
)]
struct Cli {
    /// The first seed; program `k` of the batch is generated from seed + k.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many programs.
    #[arg(long, default_value_t = 200)]
    count: u64,
    /// Executors compared with the interpreter (comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Exec::Sim, Exec::SimPtx, Exec::SimHopper, Exec::SimCoop, Exec::Wgpu, Exec::Ptxas])]
    executors: Vec<Exec>,
    /// Report failures as found, without shrinking them.
    #[arg(long)]
    no_shrink: bool,
    /// Print each program's source before running it.
    #[arg(long)]
    show: bool,
    /// Leave 64-bit integers out of the programs.
    #[arg(long)]
    no_i64: bool,
    /// Write each failure (original and shrunk source) to this folder.
    #[arg(long)]
    save: Option<PathBuf>,
    /// Run this source file (its `fuzz_kernel`) with the launch and data of `--seed`'s
    /// program instead of the generated source (to try a saved or edited failure).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Run the GPU executors and simulators in checked mode (every access tested, the
    /// record read back): a correct program must give the same result and no report.
    #[arg(long)]
    checked: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Exec {
    Sim,
    SimPtx,
    SimHopper,
    SimCoop,
    Wgpu,
    Cuda,
    Ptxas,
    All,
}

fn executors(list: &[Exec]) -> Vec<Executor> {
    let all = list.contains(&Exec::All);
    let want = |e: Exec| all || list.contains(&e);
    let mut out = vec![];
    if want(Exec::Sim) {
        out.push(Executor::Device(Device::simulator()));
    }
    if want(Exec::SimPtx) {
        out.push(Executor::Device(Device::simulator_ptx()));
    }
    if want(Exec::SimHopper) {
        out.push(Executor::Device(Device::simulator_hopper()));
    }
    if want(Exec::SimCoop) {
        out.push(Executor::Device(Device::simulator_coop()));
    }
    if want(Exec::Wgpu) {
        match Device::wgpu() {
            Ok(d) => out.push(Executor::Device(d)),
            Err(e) => eprintln!("no wgpu adapter: {e}"),
        }
    }
    if want(Exec::Cuda) {
        match Device::cuda(0) {
            Ok(d) => out.push(Executor::Device(d)),
            Err(e) => eprintln!("no CUDA device: {e}"),
        }
    }
    if want(Exec::Ptxas) {
        if tilewise::cuda::find_ptxas().is_some() {
            out.push(Executor::Ptxas);
        } else {
            eprintln!("no ptxas (pip install nvidia-cuda-nvcc): the ptxas check is off");
        }
    }
    out
}

fn main() {
    let cli = Cli::parse();
    // Logs (RUST_LOG=tilewise=debug: device choice, compile phases, cache hits) go to
    // stderr; warnings only by default.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let opt = Options {
        i64: !cli.no_i64,
        ..Options::default()
    };
    let execs: Vec<Executor> = executors(&cli.executors)
        .into_iter()
        .map(|e| match e {
            Executor::Device(d) if cli.checked => Executor::Device(d.checked()),
            e => e,
        })
        .collect();
    if let Some(path) = &cli.file {
        let src = std::fs::read_to_string(path).unwrap_or_else(|e| {
            eprintln!("{}: {e}", path.display());
            std::process::exit(2)
        });
        let p = generate(cli.seed, &opt);
        let mut failed = false;
        for e in &execs {
            match tilewise_fuzz::exec::differ_source(&p, &src, e) {
                None => println!("{}: agrees with the interpreter", e.name()),
                Some(m) => {
                    failed = true;
                    println!("{}: {m}", e.name())
                }
            }
        }
        std::process::exit(failed as i32);
    }
    let names: Vec<String> = execs.iter().map(|e| e.name()).collect();
    eprintln!(
        "fuzzing seeds {}..{} on: {}",
        cli.seed,
        cli.seed + cli.count,
        names.join(", ")
    );
    let start = std::time::Instant::now();
    let mut reported = 0;
    let report = run_batch(
        cli.seed,
        cli.count,
        &execs,
        &opt,
        !cli.no_shrink,
        |seed, r| {
            if cli.show {
                println!("{}", generate(seed, &opt).source());
            }
            for f in &r.failures[reported..] {
                println!("FAIL {f}");
                if let Some(dir) = &cli.save {
                    let _ = std::fs::create_dir_all(dir);
                    let base = dir.join(format!("seed{}-{}", f.seed, reported));
                    let _ = std::fs::write(base.with_extension("py"), f.original.source());
                    let _ = std::fs::write(
                        base.with_extension("shrunk.py"),
                        format!(
                            "# {}\n{}",
                            f.shrunk_mismatch.to_string().replace('\n', "\n# "),
                            f.shrunk.source()
                        ),
                    );
                }
                reported += 1;
            }
            if r.programs % 50 == 0 {
                eprintln!(
                    "{} programs, {} failures, {:.0} s",
                    r.programs,
                    r.failures.len(),
                    start.elapsed().as_secs_f64()
                );
            }
            let _ = std::io::stdout().flush();
        },
    );
    println!(
        "{} programs; runs: {}; {} failures in {:.1} s",
        report.programs,
        report
            .runs
            .iter()
            .zip(&report.refused)
            .map(|((n, c), r)| format!("{n} {c} ({r} refused)"))
            .collect::<Vec<_>>()
            .join(", "),
        report.failures.len(),
        start.elapsed().as_secs_f64()
    );
    if !report.failures.is_empty() {
        std::process::exit(1);
    }
}
