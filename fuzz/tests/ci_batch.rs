//! The differential fuzzer's fixed-seed batch, run by `cargo test`: a few hundred
//! random programs on both simulators, wgpu (lavapipe in CI), ptxas and CUDA where
//! present, each compared with the interpreter. Any disagreement fails with the shrunk
//! program and the seed that reproduces it.
//!
//! `TILEWISE_FUZZ_SEED` and `TILEWISE_FUZZ_COUNT` change the batch (the default is 300
//! programs from seed 1 in release builds, 40 in debug builds). A missing wgpu adapter,
//! ptxas or CUDA driver is said on stderr, and is a failure where
//! `TILEWISE_REQUIRE_WGPU` / `TILEWISE_REQUIRE_PTXAS` / `TILEWISE_REQUIRE_CUDA` is 1.

use tilewise::Device;
use tilewise_fuzz::{run_batch, Executor, Options};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn required(var: &str) -> bool {
    std::env::var(var).as_deref() == Ok("1")
}

fn executors() -> Vec<Executor> {
    let mut out = vec![
        Executor::Device(Device::simulator()),
        Executor::Device(Device::simulator_ptx()),
        Executor::Device(Device::simulator_hopper()),
        Executor::Device(Device::simulator_coop()),
    ];
    match Device::wgpu() {
        Ok(d) => out.push(Executor::Device(d)),
        Err(e) if required("TILEWISE_REQUIRE_WGPU") => {
            panic!("TILEWISE_REQUIRE_WGPU=1 but there is no wgpu adapter: {e}")
        }
        Err(e) => eprintln!("SKIPPED (wgpu leg of the fuzzer): {e}"),
    }
    if tilewise::cuda::find_ptxas().is_some() {
        out.push(Executor::Ptxas);
    } else if required("TILEWISE_REQUIRE_PTXAS") {
        panic!("TILEWISE_REQUIRE_PTXAS=1 but ptxas was not found");
    } else {
        eprintln!("SKIPPED (ptxas leg of the fuzzer): ptxas not found");
    }
    match Device::cuda(0) {
        Ok(d) => out.push(Executor::Device(d)),
        Err(e) if required("TILEWISE_REQUIRE_CUDA") => {
            panic!("TILEWISE_REQUIRE_CUDA=1 but there is no CUDA device: {e}")
        }
        Err(e) => eprintln!("SKIPPED (CUDA leg of the fuzzer): {e}"),
    }
    out
}

#[test]
fn fixed_seed_batch_agrees_with_the_interpreter() {
    let seed = env_u64("TILEWISE_FUZZ_SEED", 1);
    let count = env_u64(
        "TILEWISE_FUZZ_COUNT",
        if cfg!(debug_assertions) { 40 } else { 300 },
    );
    let execs = executors();
    let report = run_batch(seed, count, &execs, &Options::default(), true, |_, _| {});
    for ((name, runs), refused) in report.runs.iter().zip(&report.refused) {
        eprintln!("fuzz: {name}: {runs} programs, {refused} refused (documented limits)");
    }
    assert_eq!(report.programs as u64, count);
    // Every executor must have compared most programs: refusals (adapter limits, i64 on
    // WGSL) may not quietly hide the batch.
    for ((name, runs), refused) in report.runs.iter().zip(&report.refused) {
        assert!(
            *refused * 2 < *runs,
            "{name} refused {refused} of {runs} programs"
        );
    }
    if !report.failures.is_empty() {
        let text: Vec<String> = report.failures.iter().map(|f| f.to_string()).collect();
        panic!(
            "{} disagreement(s) with the interpreter:\n\n{}",
            report.failures.len(),
            text.join("\n")
        );
    }
}

/// Seeds that found bugs outside the fixed batch, run on the simulators every time,
/// plainly or in checked mode. Each seed's program is kept in `tests/regressions/`:
/// a change to the generator that moves one fails here, so that it is dealt with on
/// purpose (the bug's program found again under the new generator, or the file kept
/// and run as a source) instead of the regression silently testing something else.
/// 880076: a tf32 operand ring that `cp.async` fills shared memory with a reduction's
/// scratch (ordinary stores), so `wgmma` read memory written through the generic proxy
/// with no fence since (the Hopper simulator reported it; `shared_reuse` no longer
/// merges such arrays).
/// 2310067 (checked): block-pointer operands copied by TMA in checked mode; the launcher
/// took the tensor maps, which follow the hidden parameters, for missing hidden ones.
/// 3300595: a dot's operand read through a pointer tile carried across a loop nested
/// in another; `carried_addresses` indexed past its write counts for the outer loop (a
/// panic). Its kept file was written again when the generator began to write some dots
/// `acc + tl.dot(a, b)`: a dead one takes a variable more, the same program renumbered.
/// The first two were found before loads were printed through carried pointer tiles,
/// and are checked in that form ([`tilewise_fuzz::Program::without_carried_pointers`]).
#[test]
fn seeds_that_found_bugs_agree_with_the_interpreter() {
    let sims = [Device::simulator_ptx(), Device::simulator_hopper()];
    // (seed, checked mode, loads through carried pointer tiles as generated)
    const SEEDS: &[(u64, bool, bool)] = &[
        (880076, false, false),
        (2310067, true, false),
        (3300595, false, true),
    ];
    let bless = std::env::var("TILEWISE_BLESS").as_deref() == Ok("1");
    for &(seed, checked, carried) in SEEDS {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/regressions")
            .join(format!("seed{seed}.py"));
        let program = tilewise_fuzz::generate(seed, &Options::default());
        let program = if carried {
            program
        } else {
            program.without_carried_pointers()
        };
        let source = program.source();
        if bless {
            std::fs::write(&path, &source).unwrap();
        }
        let kept = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (TILEWISE_BLESS=1 writes it)", path.display()));
        assert!(
            kept == source,
            "the generator no longer makes seed {seed}'s program ({}): find the bug's program again or run the kept file",
            path.display()
        );
        let execs: Vec<Executor> = sims
            .iter()
            .map(|d| Executor::Device(if checked { d.checked() } else { d.clone() }))
            .collect();
        for exec in &execs {
            if let Some(m) = tilewise_fuzz::exec::differ_source(&program, &source, exec) {
                panic!("seed {seed} on {}: {m:?}", exec.name());
            }
        }
    }
}
