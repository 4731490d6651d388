//! Running a program on the executors and comparing them with the interpreter.

use crate::generate::{generate, Options, Rng};
use crate::program::{check, Program};
use crate::shrink::shrink;
use std::fmt;
use tilewise::cuda::PtxTarget;
use tilewise::half::{bf16, f16};
use tilewise::{Buffer, DType, Device, DeviceKind, Diagnostic, Kernel, Launch, Module};

/// Where a program runs.
#[derive(Clone)]
pub enum Executor {
    /// A device: a simulator, wgpu or CUDA.
    Device(Device),
    /// Assemble the PTX for sm_80 and sm_90 with ptxas (no GPU).
    Ptxas,
}

impl Executor {
    pub fn name(&self) -> String {
        match self {
            Executor::Device(d) => d.name(),
            Executor::Ptxas => "ptxas (sm_80, sm_90, checked sm_90)".into(),
        }
    }
}

/// A downloaded output.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    F(Vec<f64>),
    I(Vec<i64>),
}

/// Deterministic inputs of a program: floats on the 1/8 grid in [-2, 2], small
/// integers; outputs poisoned, atomic targets random.
pub struct HostData {
    pub inputs: Vec<Data>,
    pub outputs: Vec<Data>,
}

/// The poison written to outputs before a run.
const POISON: f64 = -7777.0;

fn random(rng: &mut Rng, dtype: DType, len: usize) -> Data {
    if dtype.is_float() {
        Data::F((0..len).map(|_| rng.range(-16, 16) as f64 / 8.0).collect())
    } else if dtype == DType::I1 {
        Data::I((0..len).map(|_| rng.range(0, 1)).collect())
    } else {
        Data::I((0..len).map(|_| rng.range(-100, 100)).collect())
    }
}

pub fn host_data(p: &Program) -> HostData {
    let mut rng = Rng::new(p.seed ^ 0xDA7A);
    let inputs = p
        .inputs
        .iter()
        .map(|b| random(&mut rng, b.dtype, b.len))
        .collect();
    let outputs = p
        .outputs
        .iter()
        .map(|o| {
            if o.atomic {
                random(&mut rng, o.dtype, o.len)
            } else if o.dtype.is_float() {
                Data::F(vec![POISON; o.len])
            } else {
                let v = match o.dtype {
                    DType::I1 => 1,
                    DType::I8 => -77,
                    _ => POISON as i64,
                };
                Data::I(vec![v; o.len])
            }
        })
        .collect();
    HostData { inputs, outputs }
}

fn upload(dev: &Device, dtype: DType, d: &Data) -> tilewise::Result<Buffer> {
    match (dtype, d) {
        (DType::F32, Data::F(v)) => dev.upload(&v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
        (DType::F16, Data::F(v)) => dev.upload(
            &v.iter()
                .map(|&x| tilewise::core::ir::f16_from_f64(x))
                .collect::<Vec<_>>(),
        ),
        (DType::BF16, Data::F(v)) => dev.upload(
            &v.iter()
                .map(|&x| tilewise::core::ir::bf16_from_f64(x))
                .collect::<Vec<_>>(),
        ),
        (DType::I32, Data::I(v)) => dev.upload(&v.iter().map(|&x| x as i32).collect::<Vec<_>>()),
        (DType::I8, Data::I(v)) => dev.upload(&v.iter().map(|&x| x as i8).collect::<Vec<_>>()),
        (DType::I64, Data::I(v)) => dev.upload(v),
        (DType::I1, Data::I(v)) => dev.upload(&v.iter().map(|&x| x != 0).collect::<Vec<_>>()),
        _ => Err(Diagnostic::internal(format!("fuzz: no upload for {dtype}"))),
    }
}

fn download(dev: &Device, b: &Buffer) -> tilewise::Result<Data> {
    Ok(match b.dtype() {
        DType::F32 => Data::F(dev.download::<f32>(b)?.iter().map(|&x| x as f64).collect()),
        DType::F16 => Data::F(dev.download::<f16>(b)?.iter().map(|x| x.to_f64()).collect()),
        DType::BF16 => Data::F(
            dev.download::<bf16>(b)?
                .iter()
                .map(|x| x.to_f64())
                .collect(),
        ),
        DType::I32 => Data::I(dev.download::<i32>(b)?.iter().map(|&x| x as i64).collect()),
        DType::I8 => Data::I(dev.download::<i8>(b)?.iter().map(|&x| x as i64).collect()),
        DType::I64 => Data::I(dev.download::<i64>(b)?),
        DType::I1 => Data::I(dev.download::<bool>(b)?.iter().map(|&x| x as i64).collect()),
        d => return Err(Diagnostic::internal(format!("fuzz: no download for {d}"))),
    })
}

/// The program's kernel and its buffers on `dev`: inputs, then outputs (poisoned).
fn kernel_and_buffers(
    p: &Program,
    src: &str,
    dev: &Device,
) -> tilewise::Result<(Kernel, Vec<Buffer>)> {
    let module = Module::parse(&format!("fuzz_{}.py", p.seed), src)?;
    let kernel = module.kernel(Program::KERNEL)?;
    let host = host_data(p);
    let bufs = p
        .inputs
        .iter()
        .map(|b| b.dtype)
        .chain(p.outputs.iter().map(|o| o.dtype))
        .zip(host.inputs.iter().chain(&host.outputs))
        .map(|(dt, d)| upload(dev, dt, d))
        .collect::<tilewise::Result<_>>()?;
    Ok((kernel, bufs))
}

/// The program's launch: its grid and warps, the buffers (or, for an addressed
/// program, a table of their addresses), then the scalars.
fn launch<'a>(
    p: &Program,
    kernel: &'a Kernel,
    dev: &'a Device,
    bufs: &[Buffer],
) -> tilewise::Result<Launch<'a>> {
    let mut launch = kernel.launch(dev, p.grid).num_warps(p.num_warps);
    if p.addressed {
        let addrs = bufs
            .iter()
            .map(|b| b.address().map(|a| a as i64))
            .collect::<tilewise::Result<Vec<i64>>>()?;
        launch = launch.arg(&dev.upload(&addrs)?);
    } else {
        for b in bufs {
            launch = launch.arg(b);
        }
    }
    for &s in &p.scalars {
        launch = launch.arg(s);
    }
    Ok(launch)
}

/// Runs `p` on `dev` and returns its outputs.
pub fn run_on(p: &Program, src: &str, dev: &Device) -> tilewise::Result<Vec<Data>> {
    let (kernel, bufs) = kernel_and_buffers(p, src, dev)?;
    launch(p, &kernel, dev, &bufs)?.run()?;
    bufs[p.inputs.len()..]
        .iter()
        .map(|b| download(dev, b))
        .collect()
}

/// Assembles the program's PTX for sm_80 and sm_90, and its checked form for sm_90.
pub fn assemble(p: &Program, src: &str) -> tilewise::Result<()> {
    let dev = Device::interpreter();
    let (kernel, bufs) = kernel_and_buffers(p, src, &dev)?;
    let compiled = launch(p, &kernel, &dev, &bufs)?.compile()?;
    for sm in [80, 90] {
        let ptx = compiled.ptx_for(PtxTarget { sm }, p.num_warps)?;
        tilewise::cuda::assemble(&ptx.source, &ptx.arch)?;
    }
    // The checked form too (its tests and reports), for sm_90.
    let options = tilewise::cuda::PtxOptions {
        checked: true,
        ..tilewise::cuda::PtxOptions::new(PtxTarget { sm: 90 }, p.num_warps)
    };
    let ptx = tilewise::cuda::compile(compiled.ir(), &options)?;
    tilewise::cuda::assemble(&ptx.source, &ptx.arch)?;
    Ok(())
}

/// Why an executor disagreed with the interpreter.
#[derive(Clone, Debug)]
pub enum Mismatch {
    /// The interpreter rejected the program: a generator or front-end bug.
    Reference(String),
    /// The executor failed where the interpreter ran.
    Error(String),
    /// An output element differs beyond its tolerance.
    Value {
        output: usize,
        index: usize,
        got: String,
        want: String,
        tolerance: f64,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Reference(e) => write!(f, "the interpreter rejected the program:\n{e}"),
            Mismatch::Error(e) => write!(f, "failed where the interpreter ran:\n{e}"),
            Mismatch::Value {
                output,
                index,
                got,
                want,
                tolerance,
            } => write!(
                f,
                "out{output}[{index}] = {got}, the interpreter gives {want} (tolerance {tolerance:e})"
            ),
        }
    }
}

/// Whether `exec` may refuse `p` with this error: a type its backend does not have.
fn expected_refusal(p: &Program, exec: &Executor, e: &Diagnostic) -> bool {
    let wgpu = matches!(exec, Executor::Device(d) if d.kind() == DeviceKind::Wgpu);
    let uses_i64 = p
        .inputs
        .iter()
        .map(|b| b.dtype)
        .chain(p.outputs.iter().map(|o| o.dtype))
        .any(|d| d == DType::I64)
        || p.source().contains("int64");
    let text = e.to_string();
    // The adapter's limits (issue: smaller tiles for small adapters) and WGSL's lack of
    // 64-bit types are documented refusals, not wrong answers.
    // Addresses are for targets that have them: the WGSL lowering (wgpu, and the
    // simulator of that lowering) refuses them by name.
    (wgpu && uses_i64 && text.contains("64-bit"))
        || (wgpu && text.contains("bytes of workgroup memory, but the adapter"))
        || (p.addressed
            && (text.contains("needs global memory addresses")
                || text.contains("address is not available on wgpu")))
}

fn compare(want: &[Data], got: &[Data], tol: &[f64]) -> Option<Mismatch> {
    for (k, (w, g)) in want.iter().zip(got).enumerate() {
        let t = tol.get(k).copied().unwrap_or(0.0);
        match (w, g) {
            (Data::F(w), Data::F(g)) => {
                for (i, (&a, &b)) in w.iter().zip(g).enumerate() {
                    let same = (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= t;
                    if !same {
                        return Some(Mismatch::Value {
                            output: k,
                            index: i,
                            got: format!("{b}"),
                            want: format!("{a}"),
                            tolerance: t,
                        });
                    }
                }
            }
            (Data::I(w), Data::I(g)) => {
                if let Some(i) = w.iter().zip(g).position(|(a, b)| a != b) {
                    return Some(Mismatch::Value {
                        output: k,
                        index: i,
                        got: g[i].to_string(),
                        want: w[i].to_string(),
                        tolerance: 0.0,
                    });
                }
            }
            _ => {
                return Some(Mismatch::Error(format!(
                    "out{k}: outputs of different kinds"
                )));
            }
        }
    }
    None
}

/// Runs `p` on the interpreter and on `exec`; `None` when they agree (or `exec`
/// refuses the program for a documented reason).
pub fn differ(p: &Program, exec: &Executor) -> Option<Mismatch> {
    match outcome(p, exec) {
        Outcome::Differ(m) => Some(m),
        _ => None,
    }
}

/// How a run on an executor ended.
pub enum Outcome {
    Agree,
    /// The executor refused the program for a documented reason (its message).
    Refused(String),
    Differ(Mismatch),
}

/// Runs `p` on the interpreter and on `exec` and compares them.
pub fn outcome(p: &Program, exec: &Executor) -> Outcome {
    match compare_run(p, exec) {
        Ok(None) => Outcome::Agree,
        Ok(Some(m)) => Outcome::Differ(m),
        Err(refusal) => Outcome::Refused(refusal),
    }
}

/// [`differ`] for a source text other than `p`'s own (an edited failure), with `p`'s
/// launch, data and tolerances.
pub fn differ_source(p: &Program, src: &str, exec: &Executor) -> Option<Mismatch> {
    compare_source(p, src, exec).ok().flatten()
}

fn compare_run(p: &Program, exec: &Executor) -> Result<Option<Mismatch>, String> {
    compare_source(p, &p.source(), exec)
}

fn compare_source(p: &Program, src: &str, exec: &Executor) -> Result<Option<Mismatch>, String> {
    let checked = match check(p) {
        Ok(c) => c,
        Err(e) => {
            return Ok(Some(Mismatch::Reference(format!(
                "invalid program: {}",
                e.0
            ))))
        }
    };
    let src = src.to_string();
    let want = match run_on(p, &src, &Device::interpreter()) {
        Ok(w) => w,
        Err(e) => return Ok(Some(Mismatch::Reference(e.render()))),
    };
    let got = match exec {
        Executor::Ptxas => {
            return Ok(assemble(p, &src).err().map(|e| Mismatch::Error(e.render())));
        }
        Executor::Device(dev) => match run_on(p, &src, dev) {
            Ok(g) => g,
            Err(e) if expected_refusal(p, exec, &e) => return Err(e.to_string()),
            Err(e) => return Ok(Some(Mismatch::Error(e.render()))),
        },
    };
    let tol: Vec<f64> = p
        .outputs
        .iter()
        .zip(&checked.out_err)
        .map(|(_, &e)| e)
        .collect();
    Ok(compare(&want, &got, &tol))
}

/// A program an executor disagreed on, before and after shrinking.
#[derive(Clone, Debug)]
pub struct Failure {
    pub seed: u64,
    pub executor: String,
    pub mismatch: Mismatch,
    pub original: Program,
    pub shrunk: Program,
    pub shrunk_mismatch: Mismatch,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "seed {} on {}: {}\nshrunk ({} statements -> {}): {}\n{}",
            self.seed,
            self.executor,
            self.mismatch,
            count(&self.original.body),
            count(&self.shrunk.body),
            self.shrunk_mismatch,
            self.shrunk.source()
        )?;
        if std::env::var("TILEWISE_FUZZ_DEBUG").is_ok() {
            writeln!(f, "{:#?}", self.shrunk.body)?;
        }
        writeln!(
            f,
            "reproduce: cargo run --release -p tilewise-fuzz -- --seed {} --count 1",
            self.seed
        )
    }
}

fn count(body: &[crate::program::Stmt]) -> usize {
    use crate::program::Stmt;
    body.iter()
        .map(|s| {
            1 + match s {
                Stmt::For { body, .. } | Stmt::While { body, .. } => count(body),
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => count(then_body) + count(else_body),
                _ => 0,
            }
        })
        .sum()
}

/// What a batch found.
#[derive(Default)]
pub struct BatchReport {
    pub programs: usize,
    /// Runs on each executor (name, count).
    pub runs: Vec<(String, usize)>,
    /// Programs an executor refused for a documented reason (per executor).
    pub refused: Vec<usize>,
    pub failures: Vec<Failure>,
}

/// Generates `count` programs from `first_seed` on and runs each on every executor.
/// `progress` is called after each program.
pub fn run_batch(
    first_seed: u64,
    count: u64,
    executors: &[Executor],
    opt: &Options,
    do_shrink: bool,
    mut progress: impl FnMut(u64, &BatchReport),
) -> BatchReport {
    let mut report = BatchReport {
        runs: executors.iter().map(|e| (e.name(), 0)).collect(),
        refused: vec![0; executors.len()],
        ..Default::default()
    };
    for seed in first_seed..first_seed + count {
        let p = generate(seed, opt);
        report.programs += 1;
        for (k, exec) in executors.iter().enumerate() {
            report.runs[k].1 += 1;
            let m = match outcome(&p, exec) {
                Outcome::Agree => continue,
                Outcome::Refused(_) => {
                    report.refused[k] += 1;
                    continue;
                }
                Outcome::Differ(m) => m,
            };
            {
                let reference = matches!(m, Mismatch::Reference(_));
                let (shrunk, shrunk_mismatch) = if do_shrink {
                    shrink(&p, exec, m.clone())
                } else {
                    (p.clone(), m.clone())
                };
                report.failures.push(Failure {
                    seed,
                    executor: exec.name(),
                    mismatch: m,
                    original: p.clone(),
                    shrunk,
                    shrunk_mismatch,
                });
                if reference {
                    // The program itself is at fault: the other executors add nothing.
                    break;
                }
            }
        }
        progress(seed, &report);
    }
    report
}
