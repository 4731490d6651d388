//! Filetests: one pass (or the pipeline) run on a text input and compared with the
//! expected text below it, as cranelift's and LLVM's lit tests do. Adding a case needs
//! no Rust: a file `core/tests/filetests/<pass>/<name>.tile` (tile IR input) or
//! `.tir` (Thread IR input) holds
//!
//! ```text
//! ; test: simplify
//! ; options: ptx 4            (optional: the lowering options, see `options`)
//! kernel @k(...) {            (the input, in the IR's text form)
//!   ...
//! }
//! ; expect:
//! ...                          (the pass's output)
//! ```
//!
//! `TILEWISE_BLESS=1` rewrites everything below `; expect:` with what the pass prints
//! now (a new case is written without it and blessed once). Passes:
//! - tile IR to tile IR, printed as tile IR: `block_ptr`, `fp8`, `narrow_i64`,
//!   `split_k_tile` (with the options; its notes follow as comments), `simplify`,
//!   `flatten_loops` (with the options; its notes follow as comments),
//!   `pipeline` (with the options), `prepare` (the whole tile-IR pipeline);
//! - `axis_info`: the input, then one line per integer or pointer value with its
//!   contiguity, divisibility, constancy and constant (the facts the lowering reads);
//! - tile IR to Thread IR, printed as Thread IR: `expand` (layouts and dot plans; the
//!   input is taken as it is), `lower` (the whole shared lowering: `prepare`, `expand`,
//!   value numbering, shared-memory reuse);
//! - Thread IR to Thread IR: `value_numbering`, `carried_addresses`, `shared_reuse`.
//!
//! Options (`; options: NAME WARPS`): `wgsl` (WebGPU's lowering: scalar accesses, FMA
//! dots), `coop` (WGSL with 16x16 f16 cooperative matrices and subgroup reductions),
//! `ptx` (sm_80: `mma.sync`, `cp.async`, wide accesses), `hopper` (sm_90a: `wgmma`);
//! `checked` after them turns checked mode on, `slices=N` sets the K slices of
//! `split_k_tile`. Default: `ptx 4`.

use std::path::{Path, PathBuf};
use tilewise_core::ir::{self, DType};
use tilewise_core::lower::{self, axis_info::AxisAnalysis, expand::ExpandOptions};
use tilewise_core::thread_ir;

const EXPECT: &str = "; expect:";

fn options(spec: &str) -> Result<ExpandOptions, String> {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let (name, warps) = match words.as_slice() {
        [] => ("ptx", 4),
        [n] => (*n, 4),
        [n, w, ..] => (
            *n,
            w.parse().map_err(|_| format!("`{w}`: not a warp count"))?,
        ),
    };
    let mut o = match name {
        "wgsl" => ExpandOptions::wgsl(warps),
        "coop" => {
            let f16 = |acc| lower::expand::CoopConfig {
                size: 16,
                input: DType::F16,
                acc,
            };
            ExpandOptions {
                coop_matrix: vec![f16(DType::F16), f16(DType::F32)],
                subgroup_reduce: true,
                wide_f16: true,
                ..ExpandOptions::wgsl(warps)
            }
        }
        "ptx" => ExpandOptions::ptx(warps),
        "hopper" => ExpandOptions {
            wgmma: true,
            ..ExpandOptions::ptx(warps)
        },
        other => {
            return Err(format!(
                "unknown options `{other}` (wgsl, coop, ptx, hopper)"
            ))
        }
    };
    o.checked = words.contains(&"checked");
    for w in &words {
        if let Some(n) = w.strip_prefix("slices=") {
            o.k_slices = n.parse().map_err(|_| format!("`{w}`: not a slice count"))?;
        }
    }
    Ok(o)
}

/// The facts of every integer or pointer value, one line each, after the kernel.
fn axis_facts(k: &ir::Kernel) -> String {
    let a = AxisAnalysis::new(k, true);
    let mut out = String::new();
    let mut values: Vec<ir::Value> = k.params.iter().map(|p| p.value).collect();
    k.body
        .walk(&mut |inst| values.extend(inst.results.iter().copied()));
    for v in values {
        let interesting = match k.ty(v).elem() {
            Some(ir::Elem::Data(d)) => d.is_int(),
            Some(ir::Elem::Ptr(_)) => true,
            None => false,
        };
        if !interesting {
            continue;
        }
        let f = a.get(k, v);
        out.push_str(&format!(
            "; %{}: contiguity {:?} divisibility {:?} constancy {:?}{}\n",
            v.0,
            f.contiguity,
            f.divisibility,
            f.constancy,
            f.constant
                .map(|c| format!(" constant {c}"))
                .unwrap_or_default()
        ));
    }
    out
}

/// Runs `pass` on `input`; the printed result.
fn run(pass: &str, input: &str, opts: &ExpandOptions) -> Result<String, String> {
    let render = |e: tilewise_core::Diagnostic| e.message;
    let tile = || ir::parse(input).map_err(render);
    let thread = || thread_ir::parse(input).map_err(render);
    Ok(match pass {
        "block_ptr" => ir::print(
            &lower::block_ptr::lower_block_pointers_with(
                &tile()?,
                DType::I32,
                opts.checked,
                opts.tma,
            )
            .map_err(render)?,
        ),
        "fp8" => ir::print(&lower::fp8::lower_fp8(&tile()?).map_err(render)?),
        "narrow_i64" => ir::print(&lower::narrow_i64::narrow_i64(&tile()?)),
        "simplify" => ir::print(&lower::simplify::simplify(&tile()?).map_err(render)?),
        "fold_dot_add" => ir::print(&lower::fold_dot_add::fold_dot_adds(&tile()?).map_err(render)?),
        "split_k_tile" => {
            let (k, notes) = lower::split_k_tile::split_k_tiles(&tile()?, opts).map_err(render)?;
            ir::verify::verify(&k).map_err(render)?;
            let notes: String = notes.iter().map(|n| format!("; {n}\n")).collect();
            format!("{}{notes}", ir::print(&k))
        }
        "flatten_loops" => {
            let (k, notes) =
                lower::flatten_loops::flatten_tile_loops(&tile()?, opts).map_err(render)?;
            ir::verify::verify(&k).map_err(render)?;
            let notes: String = notes.iter().map(|n| format!("; {n}\n")).collect();
            format!("{}{notes}", ir::print(&k))
        }
        "pipeline" => {
            ir::print(&lower::pipeline::pipeline_dot_loads(&tile()?, opts).map_err(render)?)
        }
        "prepare" => ir::print(&lower::prepare(&tile()?, DType::I32, opts).map_err(render)?),
        "axis_info" => {
            let k = tile()?;
            format!("{}{}", ir::print(&k), axis_facts(&k))
        }
        "expand" => thread_ir::print(&lower::expand::expand(&tile()?, opts).map_err(render)?),
        "lower" => thread_ir::print(&lower::to_thread_ir(&tile()?, opts).map_err(render)?),
        "value_numbering" => {
            let mut t = thread()?;
            lower::value_numbering::value_numbering(&mut t);
            thread_ir::print(&t)
        }
        "carried_addresses" => {
            let mut t = thread()?;
            lower::carried_addresses::carry_copy_addresses(&mut t);
            thread_ir::verify::verify(&t, opts, "carried_addresses").map_err(render)?;
            thread_ir::print(&t)
        }
        "shared_reuse" => {
            let mut t = thread()?;
            lower::shared_reuse::reuse_shared(&mut t, opts.shared_overlays);
            thread_ir::print(&t)
        }
        other => return Err(format!("unknown test `{other}`")),
    })
}

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut out = vec![];
    for dir in std::fs::read_dir(&root)
        .expect("core/tests/filetests")
        .flatten()
    {
        if let Ok(files) = std::fs::read_dir(dir.path()) {
            for f in files.flatten() {
                let p = f.path();
                if p.extension().is_some_and(|e| e == "tile" || e == "tir") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_filetest_gives_its_expected_output() {
    let bless = std::env::var("TILEWISE_BLESS").is_ok_and(|v| v == "1");
    let mut failures = vec![];
    let files = cases();
    assert!(files.len() >= 12, "only {} filetests found", files.len());
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let (head, expected) = match text.split_once(&format!("{EXPECT}\n")) {
            Some((h, e)) => (h.to_string(), Some(e.to_string())),
            None => (text.clone(), None),
        };
        let header = |key: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(&format!("; {key}:")))
                .map(|v| v.trim().to_string())
        };
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(path)
            .display();
        let Some(pass) = header("test") else {
            failures.push(format!("{name}: no `; test: PASS` line"));
            continue;
        };
        let input: String = head
            .lines()
            .filter(|l| !l.starts_with(';'))
            .map(|l| format!("{l}\n"))
            .collect();
        let got =
            options(&header("options").unwrap_or_default()).and_then(|o| run(&pass, &input, &o));
        let got = match got {
            Ok(g) => g,
            Err(e) => format!("; error: {e}\n"),
        };
        if bless {
            std::fs::write(path, format!("{head}{EXPECT}\n{got}")).unwrap();
        } else if expected.as_deref() != Some(got.as_str()) {
            failures.push(format!(
                "{name}: `{pass}` printed\n{got}\nexpected\n{}",
                expected.unwrap_or_else(|| "(nothing: bless the case)".into())
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} filetests differ (TILEWISE_BLESS=1 rewrites them):\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
