//! Reporting: pairs each row with its reference row, prints the results table on
//! stdout, writes the JSON file, and finds the device ceilings the roofline chart draws.

use crate::measured::{Measured, Role, COPY_CASE};
use serde_json::json;

/// The reference row of `r`: same device, the named case, the same size if there is
/// one (cuBLAS), else any size (the copy).
pub fn reference_of<'a>(results: &'a [Measured], r: &Measured) -> Option<&'a Measured> {
    let name = r.reference.as_ref()?;
    let matches = |x: &&Measured| {
        x.device == r.device && &x.case == name && x.role == Role::Reference && x.seconds > 0.0
    };
    results
        .iter()
        .filter(matches)
        .find(|x| x.size == r.size)
        .or_else(|| results.iter().find(matches))
}

/// Achieved rate over the reference's: FLOP/s where both count FLOPs, bytes/s where
/// both count bytes, else the reference's time over this one's (host costs such as a
/// launch). Above 1: faster than the reference.
pub fn ratio(r: &Measured, reference: &Measured) -> f64 {
    if r.flops > 0.0 && reference.flops > 0.0 {
        r.flop_rate() / reference.flop_rate()
    } else if r.bytes > 0.0 && reference.bytes > 0.0 {
        r.byte_rate() / reference.byte_rate()
    } else {
        reference.seconds / r.seconds
    }
}

/// The ceilings measured on one device in this run.
pub struct Roof {
    pub device: String,
    /// Copy bandwidth, bytes per second (bytes read plus bytes written).
    pub bandwidth: Option<f64>,
    /// The best matmul rate, FLOP/s, and where it comes from.
    pub compute: Option<(f64, String)>,
}

/// The memory roof (the copy) and the compute roof (the best reference matmul, else the
/// best tilewise matmul) of every device in the results, in order of appearance.
pub fn roofs(results: &[Measured]) -> Vec<Roof> {
    let mut roofs: Vec<Roof> = vec![];
    for r in results {
        if r.device.starts_with("host") || roofs.iter().any(|x| x.device == r.device) {
            continue;
        }
        let on = || {
            results
                .iter()
                .filter(|x| x.device == r.device && x.seconds > 0.0)
        };
        let bandwidth = on().find(|x| x.case == COPY_CASE).map(|x| x.byte_rate());
        let best = |role: Role| {
            on().filter(|x| x.role == role && x.roofline && x.flops > 0.0)
                .filter(|x| role == Role::Reference || x.case.starts_with("matmul"))
                .max_by(|a, b| a.flop_rate().total_cmp(&b.flop_rate()))
        };
        let compute = match best(Role::Reference) {
            Some(x) => Some((x.flop_rate(), format!("{} {}", x.case, x.size))),
            None => best(Role::Tilewise).map(|x| {
                (
                    x.flop_rate(),
                    format!("best tilewise matmul ({} {})", x.case, x.size),
                )
            }),
        };
        roofs.push(Roof {
            device: r.device.clone(),
            bandwidth,
            compute,
        });
    }
    roofs
}

/// Seconds with a unit that keeps 3 or 4 significant digits.
pub fn fmt_time(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

fn fmt_note(name: &str, v: f64) -> String {
    match name {
        "batch" => format!("batch {v}"),
        "launches" => format!("{v} launches"),
        "wall_per_launch_s" => format!("wall {}/launch", fmt_time(v)),
        "device_per_launch_s" => format!("device {}/launch", fmt_time(v)),
        "first_s" => format!("first {}", fmt_time(v)),
        _ => format!("{name} {v}"),
    }
}

pub fn table(results: &[Measured]) {
    let mut devices: Vec<&str> = vec![];
    for r in results {
        if !devices.contains(&r.device.as_str()) {
            devices.push(&r.device);
        }
    }
    for dev in devices {
        println!("== {dev}");
        println!(
            "{:<34} {:<16} {:>11} {:>10} {:>9} {:<20} {:>11} {:>6} {:>8}  {:<11} notes",
            "case",
            "size",
            "median",
            "GFLOP/s",
            "GB/s",
            "reference",
            "ref median",
            "ratio",
            "rel.err",
            "timer",
        );
        for r in results.iter().filter(|r| r.device == dev) {
            let reference = reference_of(results, r);
            let (ref_name, ref_time, ratio) = match reference {
                Some(x) => (
                    x.case.as_str(),
                    fmt_time(x.seconds),
                    format!("{:.3}", ratio(r, x)),
                ),
                None => ("-", "-".into(), "-".into()),
            };
            let ref_name = ref_name.trim_end_matches(" (reference)");
            let rate = |v: f64| {
                if v > 0.0 {
                    format!("{:.1}", v / r.seconds / 1e9)
                } else {
                    "-".into()
                }
            };
            let notes: Vec<String> = r
                .notes
                .iter()
                .filter(|(n, _)| *n != "batch")
                .map(|(n, v)| fmt_note(n, *v))
                .collect();
            let name = if r.role == Role::Reference {
                format!("  ref: {}", r.case.trim_end_matches(" (reference)"))
            } else {
                r.case.clone()
            };
            println!(
                "{:<34} {:<16} {:>11} {:>10} {:>9} {:<20} {:>11} {:>6} {:>8.1e}  {:<11} {}",
                name,
                r.size,
                fmt_time(r.seconds),
                rate(r.flops),
                rate(r.bytes),
                ref_name,
                ref_time,
                ratio,
                r.max_rel_err,
                r.timer,
                notes.join(", ")
            );
        }
    }
}

pub fn json(results: &[Measured]) -> String {
    let cases: Vec<_> = results
        .iter()
        .map(|r| {
            let reference = reference_of(results, r).map(|x| {
                json!({
                    "case": x.case, "size": x.size, "median_s": x.seconds,
                    "gflops": x.flop_rate() / 1e9, "gbps": x.byte_rate() / 1e9,
                    "ratio": ratio(r, x),
                })
            });
            let notes: serde_json::Map<String, serde_json::Value> = r
                .notes
                .iter()
                .map(|(n, v)| (n.to_string(), json!(v)))
                .collect();
            json!({
                "case": r.case, "device": r.device, "size": r.size,
                "role": match r.role { Role::Tilewise => "tilewise", Role::Reference => "reference" },
                "timer": r.timer,
                "median_s": r.seconds, "flops": r.flops, "bytes": r.bytes,
                "gflops": r.flop_rate() / 1e9, "gbps": r.byte_rate() / 1e9,
                "max_rel_err": r.max_rel_err,
                "reference": reference,
                "notes": notes,
            })
        })
        .collect();
    let roofs: Vec<_> = roofs(results)
        .iter()
        .map(|roof| {
            json!({
                "device": roof.device,
                "copy_gbps": roof.bandwidth.map(|b| b / 1e9),
                "compute_gflops": roof.compute.as_ref().map(|c| c.0 / 1e9),
                "compute_source": roof.compute.as_ref().map(|c| c.1.clone()),
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "cases": cases, "roofs": roofs })).unwrap_or_default()
}
