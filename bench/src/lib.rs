//! The tilewise benchmark harness, as a library: `tilewise-bench` and `tilewise bench`
//! both run [`run`] with [`BenchArgs`].
//!
//! Each case runs a kernel of the library on a device, checks its result against an
//! independent reference first (a wrong kernel has no speed), then times it: warm-up,
//! then the median of repeated batches, timed by the GPU's own timers (CUDA events,
//! wgpu timestamp queries) where the device has them and by the host clock elsewhere;
//! inputs that fit in a cache are rotated through several copies. References (the device copy, cuBLAS on CUDA) are
//! measured in the same run. Results print as a table; `--json` writes every case,
//! `--svg` a roofline chart. Usage:
//! `cargo run --release -p tilewise-bench -- --device interp --suite matmul`, or
//! `tilewise bench --device cuda --suite matmul`.

mod cases;
mod inputs;
mod measured;
mod references;
mod report;
mod roofline;
mod timing;

use clap::ValueEnum;
use tilewise::{Device, DeviceKind};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceChoice {
    /// The reference interpreter (CPU).
    Interp,
    /// The simulator of the WGSL backend's lowering (CPU; slow).
    Sim,
    /// The simulator of the PTX backend's lowering, tensor-core dots included (CPU; slow).
    SimPtx,
    /// The first wgpu adapter (honours WGPU_BACKEND and WGPU_ADAPTER_NAME).
    Wgpu,
    /// CUDA device 0 through the PTX backend, with cuBLAS references.
    Cuda,
    /// The interpreter, every GPU found (wgpu, CUDA), and with --smoke both simulators.
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Suite {
    Matmul,
    VectorAdd,
    Softmax,
    LayerNorm,
    /// The seed patterns (causal softmax, block-sparse, ragged row sums) at GPU sizes.
    Seeds,
    /// Host cost per launch of a tiny kernel.
    Launch,
    /// Compile time: source to WGSL, to PTX, and (CUDA) to a loaded module.
    Compile,
    /// Triton's tutorials' own performance cases (06's attention forward, 09's
    /// persistent matmul) from the tutorial files (`--tutorials`); skipped without them.
    Tutorials,
    All,
}

/// The harness's options (the command lines of `tilewise-bench` and `tilewise bench`).
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Which device(s) to run on.
    #[arg(long, value_enum, default_value = "interp")]
    device: DeviceChoice,
    /// Which suite(s) to run.
    #[arg(long, value_enum, default_value = "all")]
    suite: Suite,
    /// Problem size (matmul: M = N = K, and N = K of the skinny products; vector add:
    /// elements; softmax: rows = cols; layer norm: rows and cols; seeds: causal rows =
    /// cols, block-sparse elements, ragged rows).
    /// Defaults per suite and device.
    #[arg(long)]
    size: Option<usize>,
    /// Timed repetitions (batches) per case; the median is reported.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Smoke run: tiny sizes, one repetition; checks results, not speed.
    #[arg(long)]
    smoke: bool,
    /// Write every case as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Draw a roofline chart (SVG) of the run to this file.
    #[arg(long)]
    svg: Option<std::path::PathBuf>,
    /// Square matmul configurations to run instead of the default, as
    /// `BMxBNxBK/WARPS[/STAGES][/bp|/kt|/mt|/tt][/add]` separated by commas (e.g.
    /// `128x128x32/8,64x64x32/4/3`); `/bp` runs f16 and bf16 through the block-pointer
    /// kernel (TMA on sm_90) instead of tutorial 03's; `/kt` passes tutorial 03 a `b`
    /// contiguous along K (`x @ w.T`), `/mt` an `a` contiguous along M (`x.T @ w`),
    /// `/tt` both; `/add` writes tutorial 03's K step `accumulator += tl.dot(a, b)`.
    #[arg(long, value_parser = parse_matmul_config, value_delimiter = ',')]
    matmul_configs: Vec<cases::MatmulConfig>,
    /// Skinny matmul configurations (the 16- and 64-row products) to run instead of
    /// the defaults, spelt as `--matmul-configs`; each runs for the products whose
    /// rows its BM divides (e.g. `16x64x128/4/6,64x64x128/4/5`).
    #[arg(long, value_parser = parse_matmul_config, value_delimiter = ',')]
    skinny_configs: Vec<cases::MatmulConfig>,
    /// Warps a program of the softmax case, separated by commas (e.g. `4,8,16`); one
    /// case each. Default: 4.
    #[arg(long, value_delimiter = ',', value_parser = parse_warps)]
    softmax_warps: Vec<u32>,
    /// Element types to run, separated by commas (e.g. `f16,bf16`): the cases of those
    /// types, plus f16/bf16 vector adds. Default: every matmul type, f32 elsewhere.
    #[arg(long, value_enum, value_delimiter = ',')]
    dtype: Vec<cases::Dtype>,
    /// `host` times every case on the host clock even where GPU timers exist (to
    /// compare the two); `gpu` (default) uses the GPU's timers where there are some.
    #[arg(long, value_enum, default_value = "gpu")]
    timer: TimerChoice,
    /// Also run every case on each GPU device in checked mode (rows named
    /// "(checked)"), to measure what checked mode costs.
    #[arg(long)]
    checked: bool,
    /// The directory of Triton's tutorial files (python/tutorials/*.py) for the
    /// `tutorials` suite; default: `TILEWISE_TRITON_TUTORIALS`.
    #[arg(long)]
    tutorials: Option<std::path::PathBuf>,
    /// Time the cases without checking their results (their error prints as NaN): for
    /// experiments with kernels edited by hand (`TILEWISE_KERNEL_OVERRIDE_DIR`) that
    /// leave out part of the work. Never for figures that are reported.
    #[arg(long)]
    unchecked: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimerChoice {
    Gpu,
    Host,
}

fn parse_warps(w: &str) -> Result<u32, String> {
    match w.trim().parse::<u32>() {
        Ok(n) if n.is_power_of_two() && n <= 32 => Ok(n),
        _ => Err(format!("`{w}`: warps are 1, 2, 4, 8, 16 or 32")),
    }
}

fn parse_matmul_config(c: &str) -> Result<cases::MatmulConfig, String> {
    let number = |d: &str| d.trim().parse::<u32>().map_err(|e| format!("`{c}`: {e}"));
    let mut parts = c.split('/');
    let dims: Vec<u32> = parts
        .next()
        .unwrap_or_default()
        .split('x')
        .map(number)
        .collect::<Result<_, _>>()?;
    // A trailing `/bp`: f16 and bf16 through the block-pointer kernel; `/kt`: `b`
    // contiguous along K, `/mt`: `a` contiguous along M, `/tt`: both (tutorial 03's
    // kernel; `/add` last, its K step as an add).
    let mut rest: Vec<&str> = parts.collect();
    // A trailing `/add`: tutorial 03 with `accumulator += tl.dot(a, b)`.
    let added = rest.last() == Some(&"add");
    if added {
        rest.pop();
    }
    let (m_major, k_major) = match rest.last().copied() {
        Some("kt") => (false, true),
        Some("mt") => (true, false),
        Some("tt") => (true, true),
        _ => (false, false),
    };
    if m_major || k_major {
        rest.pop();
    }
    let block_ptr = rest.last() == Some(&"bp");
    if block_ptr {
        rest.pop();
    }
    if block_ptr && (k_major || m_major || added) {
        return Err(format!(
            "`{c}`: `/kt`, `/mt`, `/tt` and `/add` run tutorial 03's kernel, not the block-pointer one"
        ));
    }
    let mut parts = rest.into_iter();
    let warps = parts.next().map_or(Ok(4), number)?;
    let stages = parts.next().map(number).transpose()?;
    let expected = || {
        format!("`{c}`: expected BMxBNxBK/WARPS[/STAGES][/bp|/kt|/mt|/tt][/add], blocks and warps powers of two, stages 1 to 8")
    };
    if parts.next().is_some() || stages.is_some_and(|s| !(1..=8).contains(&s)) {
        return Err(expected());
    }
    match dims.as_slice() {
        [m, n, k] if [*m, *n, *k, warps].iter().all(|d| d.is_power_of_two()) => {
            let config = cases::MatmulConfig::new((*m, *n, *k), warps);
            let config = match stages {
                Some(s) => config.stages(s),
                None => config,
            };
            let config = if m_major { config.a_m_major() } else { config };
            let config = if added { config.added() } else { config };
            Ok(if block_ptr {
                config.block_ptr()
            } else if k_major {
                config.b_k_major()
            } else {
                config
            })
        }
        _ => Err(expected()),
    }
}

/// Runs the cases `cli` selects and prints the table (and writes `--json`, `--svg`);
/// false when a case failed (a wrong result, an error) or a device was missing.
pub fn run(cli: &BenchArgs) -> bool {
    // Every PTX module is JIT-compiled anew (the driver's on-disk cache would make the
    // compile-time case measure a cache hit). Set before the driver is loaded.
    if std::env::var_os("CUDA_CACHE_DISABLE").is_none() {
        std::env::set_var("CUDA_CACHE_DISABLE", "1");
    }
    if cli.timer == TimerChoice::Host {
        std::env::set_var("TILEWISE_BENCH_TIMER", "host");
    }
    cases::tutorials::set_dir(cli.tutorials.clone());
    if cli.unchecked {
        eprintln!("note: --unchecked: results are not checked; errors print as NaN");
        references::UNCHECKED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut failed = false;
    let mut devices = vec![];
    if matches!(cli.device, DeviceChoice::Interp | DeviceChoice::All) {
        devices.push(Device::interpreter());
    }
    let smoke_all = cli.device == DeviceChoice::All && cli.smoke;
    if cli.device == DeviceChoice::Sim || smoke_all {
        devices.push(Device::simulator());
    }
    if cli.device == DeviceChoice::SimPtx || smoke_all {
        devices.push(Device::simulator_ptx());
    }
    if matches!(cli.device, DeviceChoice::Wgpu | DeviceChoice::All) {
        match Device::wgpu() {
            Ok(d) => devices.push(d),
            Err(e) if cli.device == DeviceChoice::Wgpu => {
                eprintln!("{e}");
                return false;
            }
            Err(e) => eprintln!("note: no wgpu device: {e}"),
        }
    }
    if matches!(cli.device, DeviceChoice::Cuda | DeviceChoice::All) {
        match Device::cuda(0) {
            Ok(d) => devices.push(d),
            Err(e) if cli.device == DeviceChoice::Cuda => {
                eprintln!("{e}");
                return false;
            }
            Err(e) => eprintln!("note: no CUDA device: {e}"),
        }
    }
    if cli.checked {
        let checked: Vec<Device> = devices
            .iter()
            .filter(|d| d.kind() != DeviceKind::Interpreter)
            .map(Device::checked)
            .collect();
        devices.extend(checked);
    }
    // The cuBLAS references get their own runtime (stream and events) on each CUDA device.
    let mut refs = vec![];
    for dev in &devices {
        refs.push(if dev.kind() == DeviceKind::Cuda {
            match references::CudaRefs::new(0) {
                Ok(r) => Some(r),
                Err(e) => {
                    eprintln!("no cuBLAS references on {}: {e}", dev.name());
                    failed = true;
                    None
                }
            }
        } else {
            None
        });
    }
    let reps = if cli.smoke { 1 } else { cli.reps.max(1) };
    let mut results = Vec::new();
    // Host-only cases (compile to WGSL / PTX) run once, with the first device.
    let mut plan: Vec<(usize, cases::Case)> = vec![];
    for (i, dev) in devices.iter().enumerate() {
        for case in cases::select(
            cli.suite,
            cli.size,
            cli.smoke,
            dev.kind(),
            cases::Choices {
                matmul_configs: &cli.matmul_configs,
                skinny_configs: &cli.skinny_configs,
                softmax_warps: &cli.softmax_warps,
                dtypes: &cli.dtype,
            },
        ) {
            if !(case.host_only() && plan.iter().any(|(_, c)| c.name() == case.name())) {
                plan.push((i, case));
            }
        }
    }
    // A progress bar over the cases, on stderr (hidden when stderr is not a terminal).
    let bar = indicatif::ProgressBar::new(plan.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    for (i, case) in &plan {
        let dev = &devices[*i];
        bar.set_message(format!("{} {} on {}", case.name(), case.size(), dev.name()));
        let mut errors = vec![];
        let outcome = cases::run(case, dev, reps, refs[*i].as_ref(), &mut errors);
        for e in errors {
            failed = true;
            bar.suspend(|| eprintln!("{e}"));
        }
        match outcome {
            Ok(rows) => results.extend(rows),
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
    if let Some(path) = &cli.svg {
        if let Err(e) = roofline::svg(&results, path) {
            eprintln!("{e}");
            failed = true;
        }
    }
    !failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use cases::{Case, MatmulConfig};
    use tilewise::DeviceKind;

    #[test]
    fn matmul_configurations_parse_with_and_without_stages() {
        assert_eq!(
            parse_matmul_config("128x256x64/8"),
            Ok(MatmulConfig::new((128, 256, 64), 8))
        );
        assert_eq!(
            parse_matmul_config("16x64x128/4/6"),
            Ok(MatmulConfig::new((16, 64, 128), 4).stages(6))
        );
        assert_eq!(
            parse_matmul_config("64x64x32"),
            Ok(MatmulConfig::new((64, 64, 32), 4))
        );
        for bad in [
            "64x64/4",
            "64x63x32/4",
            "64x64x32/3",
            "64x64x32/4/9",
            "64x64x32/4/2/1",
        ] {
            assert!(parse_matmul_config(bad).is_err(), "{bad}");
        }
        assert_eq!(
            MatmulConfig::new((16, 64, 128), 4).stages(6).to_string(),
            "16x64x128/4w/6s"
        );
    }

    /// A skinny configuration runs for the products whose rows its block's rows divide;
    /// products without one keep their default.
    #[test]
    fn skinny_configurations_apply_where_their_rows_divide() {
        let c32 = MatmulConfig::new((32, 64, 128), 4).stages(5);
        let cases = cases::select(
            Suite::Matmul,
            None,
            false,
            DeviceKind::Cuda,
            cases::Choices {
                skinny_configs: &[c32],
                dtypes: &[cases::Dtype::F16],
                ..Default::default()
            },
        );
        let skinny: Vec<(usize, MatmulConfig)> = cases
            .iter()
            .filter_map(|c| match c {
                Case::Matmul { m, config, .. } if *m < 1024 => Some((*m, *config)),
                _ => None,
            })
            .collect();
        assert_eq!(
            skinny,
            vec![
                (16, MatmulConfig::new((16, 64, 128), 4).stages(6)),
                (64, c32)
            ]
        );
    }
}
