//! Reporting: the results table on stdout and the JSON file.

use serde_json::json;

/// One measured case.
pub struct Measured {
    pub case: String,
    pub device: String,
    pub size: String,
    /// Median seconds per run.
    pub seconds: f64,
    /// Floating-point operations per run (0 when not meaningful).
    pub flops: f64,
    /// Minimum bytes moved per run.
    pub bytes: f64,
    /// The largest relative error seen in the check against the reference.
    pub max_rel_err: f64,
}

/// The copy bandwidth measured on the same device in this run, bytes per second.
fn copy_bandwidth(results: &[Measured], device: &str) -> Option<f64> {
    results
        .iter()
        .find(|r| r.device == device && r.case.starts_with("copy"))
        .map(|r| r.bytes / r.seconds)
}

pub fn table(results: &[Measured]) {
    println!(
        "{:<26} {:<44} {:<16} {:>12} {:>12} {:>10} {:>9} {:>10}",
        "case", "device", "size", "median", "GFLOP/s", "GB/s", "vs copy", "rel.err"
    );
    for r in results {
        let vs_copy = copy_bandwidth(results, &r.device)
            .map(|c| format!("{:.2}", r.bytes / r.seconds / c))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<26} {:<44} {:<16} {:>10.3}ms {:>12.1} {:>10.1} {:>9} {:>10.2e}",
            r.case,
            r.device,
            r.size,
            r.seconds * 1e3,
            r.flops / r.seconds / 1e9,
            r.bytes / r.seconds / 1e9,
            vs_copy,
            r.max_rel_err
        );
    }
}

pub fn json(results: &[Measured]) -> String {
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            json!({
                "case": r.case, "device": r.device, "size": r.size,
                "median_s": r.seconds, "flops": r.flops, "bytes": r.bytes,
                "gflops": r.flops / r.seconds / 1e9, "gbps": r.bytes / r.seconds / 1e9,
                "max_rel_err": r.max_rel_err,
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "cases": cases })).unwrap_or_default()
}
