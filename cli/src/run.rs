//! `tilewise run`: a kernel launched on a chosen device with generated or `.npy`
//! inputs, its buffers summarised afterwards (and written to `.npy` files with
//! `--save`); `--check` runs the same launch on the interpreter and compares every
//! buffer, `--checked` uses checked mode. A kernel with `@triton.autotune` is tuned
//! first (`--no-autotune` skips it).
//!
//! Arguments, in the kernel's parameter order (`--arg` each):
//! - `f32[1024]`: a buffer of 1024 random elements (floats uniform in [-1, 1),
//!   integers in [-100, 100), booleans fair, fp8 codes of small values);
//! - `f32[1024]=0.5`: a buffer filled with one value;
//! - `x.npy`: a buffer read from a NumPy file (its dtype); `bf16@x.npy` converts it;
//! - `i32:7`, `f16:0.5`, `true`, or a bare `7` (i32) / `0.5` (f32): a scalar.

use crate::grid::GridExpr;
use crate::signature::parse_constexpr;
use crate::RunArgs;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::HashMap;
use tilewise::core::launch::ScalarValue;
use tilewise::half::{bf16, f16};
use tilewise::{Arg, Buffer, Config, ConstValue, DType, Device, Grid, Module};

/// One `--arg`.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    Random {
        dtype: DType,
        len: usize,
    },
    Fill {
        dtype: DType,
        len: usize,
        value: f64,
    },
    Scalar(ScalarValue),
    /// A NumPy file, converted to `dtype` where given.
    File {
        dtype: Option<DType>,
        path: std::path::PathBuf,
    },
}

/// Parses one `--arg`.
pub fn parse_arg(text: &str) -> Result<ArgSpec, String> {
    let t = text.trim();
    let dtype_of = |name: &str| {
        DType::from_name(name.trim()).ok_or_else(|| format!("`{text}`: unknown dtype `{name}`"))
    };
    if t.ends_with(".npy") {
        return Ok(match t.split_once('@') {
            Some((d, path)) => ArgSpec::File {
                dtype: Some(dtype_of(d)?),
                path: path.into(),
            },
            None => ArgSpec::File {
                dtype: None,
                path: t.into(),
            },
        });
    }
    if let Some((head, rest)) = t.split_once('[') {
        let dtype = dtype_of(head)?;
        let (len, fill) = rest
            .split_once(']')
            .ok_or_else(|| format!("`{text}`: expected DTYPE[LEN] or DTYPE[LEN]=VALUE"))?;
        let len: usize = len
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{len}` is not a length"))?;
        return match fill.strip_prefix('=') {
            None if fill.trim().is_empty() => Ok(ArgSpec::Random { dtype, len }),
            Some(v) => Ok(ArgSpec::Fill {
                dtype,
                len,
                value: v
                    .trim()
                    .parse()
                    .map_err(|_| format!("`{text}`: `{v}` is not a number"))?,
            }),
            None => Err(format!("`{text}`: unexpected `{fill}` after the length")),
        };
    }
    if t == "true" || t == "false" {
        return Ok(ArgSpec::Scalar(ScalarValue::Bool(t == "true")));
    }
    let (dtype, value) = match t.split_once(':') {
        Some((d, v)) => (Some(dtype_of(d)?), v.trim()),
        None => (None, t),
    };
    if let Ok(i) = value.parse::<i64>() {
        let d = dtype.unwrap_or(DType::I32);
        return Ok(ArgSpec::Scalar(if d.is_float() {
            ScalarValue::Float(d, i as f64)
        } else {
            ScalarValue::Int(d, i)
        }));
    }
    if let Ok(f) = value.parse::<f64>() {
        let d = dtype.unwrap_or(DType::F32);
        if !d.is_float() {
            return Err(format!("`{text}`: {f} is not an integer"));
        }
        return Ok(ArgSpec::Scalar(ScalarValue::Float(d, f)));
    }
    Err(format!(
        "`{text}`: expected DTYPE[LEN], DTYPE[LEN]=VALUE or a scalar (7, 0.5, i64:7, true)"
    ))
}

/// A small deterministic generator (xorshift64*), so that runs repeat.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The values of `spec` (random ones from `rng`), as f64.
fn values(spec: &ArgSpec, rng: &mut Rng) -> Vec<f64> {
    match *spec {
        ArgSpec::Random { dtype, len } => (0..len)
            .map(|_| {
                if dtype == DType::I1 {
                    (rng.next() >> 63) as f64
                } else if dtype.is_float() {
                    rng.unit() * 2.0 - 1.0
                } else if dtype.is_unsigned_int() {
                    (rng.next() % 100) as f64
                } else {
                    (rng.next() % 200) as f64 - 100.0
                }
            })
            .collect(),
        ArgSpec::Fill { len, value, .. } => vec![value; len],
        ArgSpec::Scalar(_) | ArgSpec::File { .. } => vec![],
    }
}

/// Uploads `v` as a buffer of `dtype` on `dev`.
fn upload(dev: &Device, dtype: DType, v: &[f64]) -> tilewise::Result<Buffer> {
    macro_rules! up {
        ($t:ty, $f:expr) => {
            dev.upload(&v.iter().map($f).collect::<Vec<$t>>())
        };
    }
    match dtype {
        DType::F32 => up!(f32, |&x| x as f32),
        DType::F64 => up!(f64, |&x| x),
        DType::F16 => up!(f16, |&x| f16::from_f64(x)),
        DType::BF16 => up!(bf16, |&x| bf16::from_f64(x)),
        DType::I8 => up!(i8, |&x| x as i8),
        DType::I16 => up!(i16, |&x| x as i16),
        DType::I32 => up!(i32, |&x| x as i32),
        DType::I64 => up!(i64, |&x| x as i64),
        DType::U8 => up!(u8, |&x| x as u8),
        DType::U16 => up!(u16, |&x| x as u16),
        DType::U32 => up!(u32, |&x| x as u32),
        DType::U64 => up!(u64, |&x| x as u64),
        DType::I1 => up!(bool, |&x| x != 0.0),
        DType::F8E4M3 => up!(tilewise::F8E4M3, |&x| tilewise::F8E4M3::from_f32(x as f32)),
        DType::F8E5M2 => up!(tilewise::F8E5M2, |&x| tilewise::F8E5M2::from_f32(x as f32)),
    }
}

/// A buffer's contents as f64.
fn download(dev: &Device, b: &Buffer) -> tilewise::Result<Vec<f64>> {
    macro_rules! down {
        ($t:ty, $f:expr) => {
            dev.download::<$t>(b)
                .map(|v| v.into_iter().map($f).collect())
        };
    }
    match b.dtype() {
        DType::F32 => down!(f32, |x| x as f64),
        DType::F64 => down!(f64, |x| x),
        DType::F16 => down!(f16, |x| x.to_f64()),
        DType::BF16 => down!(bf16, |x| x.to_f64()),
        DType::I8 => down!(i8, |x| x as f64),
        DType::I16 => down!(i16, |x| x as f64),
        DType::I32 => down!(i32, |x| x as f64),
        DType::I64 => down!(i64, |x| x as f64),
        DType::U8 => down!(u8, |x| x as f64),
        DType::U16 => down!(u16, |x| x as f64),
        DType::U32 => down!(u32, |x| x as f64),
        DType::U64 => down!(u64, |x| x as f64),
        DType::I1 => down!(bool, |x| x as u8 as f64),
        DType::F8E4M3 => down!(tilewise::F8E4M3, |x| x.to_f32() as f64),
        DType::F8E5M2 => down!(tilewise::F8E5M2, |x| x.to_f32() as f64),
    }
}

fn device(name: &str) -> Result<Device, String> {
    Ok(match name {
        "best" => Device::best(),
        "interp" => Device::interpreter(),
        "sim" => Device::simulator(),
        "sim-ptx" => Device::simulator_ptx(),
        "sim-sm90" => Device::simulator_hopper(),
        "sim-coop" => Device::simulator_coop(),
        "wgpu" => Device::wgpu().map_err(|e| e.render())?,
        "cuda" => Device::cuda(0).map_err(|e| e.render())?,
        other => {
            return Err(format!(
            "unknown device `{other}` (best, interp, sim, sim-ptx, sim-sm90, sim-coop, wgpu, cuda)"
        ))
        }
    })
}

/// What a launch left: each buffer argument's position, dtype and contents, and the
/// configuration autotuning chose (if the kernel has `@triton.autotune`).
struct Outcome {
    buffers: Vec<(usize, DType, Vec<f64>)>,
    config: Option<Config>,
}

/// Launches the kernel of `args` on `dev` with `specs` (random values from `seed`);
/// with `@triton.autotune` on the kernel, tunes it first (a progress bar on a
/// terminal), unless `config` forces one (the interpreter's reference run) or
/// `--no-autotune` is given.
fn launch_on(
    args: &RunArgs,
    dev: &Device,
    specs: &[ArgSpec],
    config: Option<&Config>,
) -> Result<Outcome, String> {
    let render = |e: tilewise::Diagnostic| e.render();
    let module = Module::from_file(&args.file).map_err(render)?;
    let kernel = module.kernel(&args.kernel).map_err(render)?;
    let grid = GridExpr::parse(&args.grid)?;
    let mut rng = Rng(args.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut launch_args: Vec<Arg> = vec![];
    let mut bufs: Vec<(usize, Buffer)> = vec![];
    for (i, spec) in specs.iter().enumerate() {
        match spec {
            ArgSpec::Scalar(s) => launch_args.push(Arg::Scalar(*s)),
            ArgSpec::Random { dtype, .. } | ArgSpec::Fill { dtype, .. } => {
                let b = upload(dev, *dtype, &values(spec, &mut rng)).map_err(render)?;
                launch_args.push(Arg::from(&b));
                bufs.push((i, b));
            }
            ArgSpec::File { dtype, path } => {
                let (file_dtype, v) = crate::npy::read(path)?;
                let b = upload(dev, dtype.unwrap_or(file_dtype), &v).map_err(render)?;
                launch_args.push(Arg::from(&b));
                bufs.push((i, b));
            }
        }
    }
    let constexprs: Vec<(String, ConstValue)> = args
        .constexprs
        .iter()
        .map(|c| parse_constexpr(c))
        .collect::<Result<_, _>>()?;
    let tuner = match (config, args.no_autotune) {
        (None, false) => kernel.autotuner(dev).map_err(render)?,
        _ => None,
    };
    // The names a grid expression may use: integer scalar arguments by parameter name
    // and integer constexprs (the configuration's too).
    let set_by = |c: &Config, name: &str| c.get(name).is_some();
    let names = |extra: Option<&Config>| {
        let mut names = HashMap::new();
        let mut positional = specs.iter();
        for p in &kernel.signature().params {
            let given = constexprs
                .iter()
                .find(|(n, _)| n == &p.name)
                .map(|(_, v)| v);
            let configured = extra.and_then(|c| c.get(&p.name));
            if let Some(ConstValue::Int(v)) = given.or(configured) {
                names.insert(p.name.clone(), *v);
                continue;
            }
            let skip = given.is_some()
                || configured.is_some()
                || tuner
                    .as_ref()
                    .is_some_and(|t| t.configs().iter().any(|c| set_by(c, &p.name)));
            if skip {
                continue;
            }
            if let Some(ArgSpec::Scalar(ScalarValue::Int(_, v))) = positional.next() {
                names.insert(p.name.clone(), *v);
            }
        }
        names
    };
    let used = match &tuner {
        Some(tuner) => {
            for (name, _) in &constexprs {
                if tuner.configs().iter().any(|c| set_by(c, name)) {
                    return Err(format!(
                        "--constexpr {name}: `{name}` is set by the kernel's @triton.autotune configurations; drop it, or pass --no-autotune to run without tuning"
                    ));
                }
            }
            let bar = progress_bar(tuner.configs().len());
            let shown = bar.clone();
            let tuner = tuner.clone().on_progress(move |p| {
                shown.set_length(p.total as u64);
                shown.set_message(match p.result {
                    Ok(s) => format!("{}: {:.1} us", p.config, s * 1e6),
                    Err(_) => format!("{}: skipped", p.config),
                });
                shown.inc(1);
            });
            // A grid that does not evaluate for a configuration launches nothing and
            // is reported after tuning.
            let failure = std::cell::RefCell::new(None);
            let mut tuned = tuner.launch(dev, |c: &Config| match grid.eval(&names(Some(c))) {
                Ok((x, y, z)) => Grid([x, y, z]),
                Err(e) => {
                    failure.borrow_mut().get_or_insert(e);
                    Grid([0, 1, 1])
                }
            });
            tuned = tuned.args(launch_args.iter().cloned());
            for (n, v) in &constexprs {
                tuned = tuned.constexpr(n, v.clone());
            }
            let chosen = tuned.run();
            bar.finish_and_clear();
            drop(tuner);
            if let Some(e) = failure.into_inner() {
                return Err(e);
            }
            let chosen = chosen.map_err(render)?;
            eprintln!("autotune: `{}` runs with {chosen}", args.kernel);
            Some(chosen)
        }
        None => {
            let (x, y, z) = grid.eval(&names(config))?;
            let mut launch = kernel
                .launch(dev, (x, y, z))
                .args(launch_args.iter().cloned())
                .num_warps(config.map_or(args.num_warps, |c| c.num_warps))
                .checked(args.checked);
            if let Some(s) = config.and_then(|c| c.num_stages) {
                launch = launch.num_stages(s);
            }
            for (n, v) in constexprs
                .iter()
                .chain(config.iter().flat_map(|c| &c.constexprs))
            {
                launch = launch.constexpr(n, v.clone());
            }
            let spinner = spinner(&format!("running `{}` on {}", args.kernel, dev.name()));
            let ran = launch.run().and_then(|()| dev.synchronize());
            spinner.finish_and_clear();
            ran.map_err(render)?;
            config.cloned()
        }
    };
    let mut buffers = vec![];
    for (i, b) in &bufs {
        buffers.push((*i, b.dtype(), download(dev, b).map_err(render)?));
    }
    for w in dev.take_warnings() {
        eprintln!("{}", w.render());
    }
    Ok(Outcome {
        buffers,
        config: used,
    })
}

/// A progress bar for tuning `n` configurations (drawn only on a terminal).
fn progress_bar(n: usize) -> ProgressBar {
    let bar = ProgressBar::new(n as u64);
    bar.set_style(
        ProgressStyle::with_template("autotune [{bar:30}] {pos}/{len} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// A spinner with elapsed time for a launch that may take long (the interpreter on a
/// large grid); drawn only on a terminal.
fn spinner(message: &str) -> ProgressBar {
    let s = ProgressBar::new_spinner();
    s.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    s.set_message(message.to_string());
    s.enable_steady_tick(std::time::Duration::from_millis(120));
    s
}

pub fn run(args: &RunArgs) -> Result<(), String> {
    let specs: Vec<ArgSpec> = args
        .args
        .iter()
        .map(|a| parse_arg(a))
        .collect::<Result<_, _>>()?;
    let dev = device(&args.device)?;
    let outcome = launch_on(args, &dev, &specs, None)?;
    let got = &outcome.buffers;
    println!("ran `{}` on {}", args.kernel, dev.name());
    if let Some(dir) = &args.save {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (i, dtype, v) in got {
            let path = dir.join(format!("arg{i}.npy"));
            if let Some(note) = crate::npy::write(&path, *dtype, v)? {
                eprintln!("note: {note}");
            }
            println!("  saved argument {i} to {}", path.display());
        }
    }
    for (i, _, v) in got {
        let shown: Vec<String> = v.iter().take(args.show).map(|x| format!("{x}")).collect();
        let more = if v.len() > args.show { ", ..." } else { "" };
        println!(
            "  argument {i} ({} elements): [{}{more}]",
            v.len(),
            shown.join(", ")
        );
    }
    if !args.check {
        return Ok(());
    }
    let reference = launch_on(
        args,
        &Device::interpreter(),
        &specs,
        outcome.config.as_ref(),
    )?;
    let mut worst = 0f64;
    for ((i, _, g), (_, _, w)) in got.iter().zip(&reference.buffers) {
        for (k, (a, b)) in g.iter().zip(w).enumerate() {
            let same = a == b || (a.is_nan() && b.is_nan());
            let err = if same {
                0.0
            } else {
                (a - b).abs() / b.abs().max(1e-30)
            };
            if err > args.tol || (a.is_nan() != b.is_nan()) {
                return Err(format!(
                    "check failed: argument {i} element {k} is {a}, the interpreter gives {b} (relative error {err:.2e}, tolerance {:.0e})",
                    args.tol
                ));
            }
            worst = worst.max(err);
        }
    }
    println!("check: every buffer matches the interpreter (largest relative error {worst:.2e})");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse() {
        assert_eq!(
            parse_arg("f32[1024]").unwrap(),
            ArgSpec::Random {
                dtype: DType::F32,
                len: 1024
            }
        );
        assert_eq!(
            parse_arg("i32[8]=3").unwrap(),
            ArgSpec::Fill {
                dtype: DType::I32,
                len: 8,
                value: 3.0
            }
        );
        assert_eq!(
            parse_arg("1024").unwrap(),
            ArgSpec::Scalar(ScalarValue::Int(DType::I32, 1024))
        );
        assert_eq!(
            parse_arg("i64:7").unwrap(),
            ArgSpec::Scalar(ScalarValue::Int(DType::I64, 7))
        );
        assert_eq!(
            parse_arg("0.5").unwrap(),
            ArgSpec::Scalar(ScalarValue::Float(DType::F32, 0.5))
        );
        assert_eq!(
            parse_arg("true").unwrap(),
            ArgSpec::Scalar(ScalarValue::Bool(true))
        );
        for bad in ["f33[4]", "f32[x]", "f32[4]y", "i32:0.5", "banana"] {
            assert!(parse_arg(bad).is_err(), "{bad}");
        }
    }
}
