//! Autotuning: a kernel launched with the fastest of several configurations (constexpr
//! block sizes, `num_warps`, `num_stages`), chosen once per device and key and then
//! remembered, in memory and in the persistent cache, so that a tuned kernel is never
//! tuned again.
//!
//! ```no_run
//! # use tilewise::{Config, Device, Module};
//! # fn main() -> tilewise::Result<()> {
//! # let module = Module::from_file("matmul.py")?;
//! # let dev = Device::best();
//! # let (a, b, c) = (dev.zeros::<f32>(1)?, dev.zeros::<f32>(1)?, dev.zeros::<f32>(1)?);
//! let tuned = module.kernel("matmul_kernel")?.autotune([
//!     Config::new().constexpr("BLOCK_M", 128).constexpr("BLOCK_N", 128).num_warps(8).num_stages(3),
//!     Config::new().constexpr("BLOCK_M", 64).constexpr("BLOCK_N", 64).num_warps(4),
//! ]).key(&["M", "N", "K"]);
//! let (m, n, k) = (4096u32, 4096u32, 4096u32);
//! let used = tuned
//!     .launch(&dev, |c: &Config| (m.div_ceil(c.int("BLOCK_M") as u32) * n.div_ceil(c.int("BLOCK_N") as u32)).into())
//!     .arg(&a).arg(&b).arg(&c).arg(m as i32).arg(n as i32).arg(k as i32)
//!     .run()?;
//! println!("ran with {used}");
//! # Ok(()) }
//! ```
//!
//! **Compiling.** Every configuration left after pruning is compiled before any is
//! timed, on as many threads as the host has cores ([`crate::Launch::prepare`]):
//! tilewise's lowering and the driver's compile are most of a tuning's time on a GPU.
//!
//! **Timing.** Each configuration runs once untimed (its first launch),
//! once timed to size the measurement, untimed again for about `warmup` milliseconds
//! (25 by default, at most 100 launches), then in timed regions of back-to-back launches
//! (regions of at least a millisecond where nothing has to be reset between launches,
//! so that coarse timers such as WebGPU's rank short kernels right) until about `rep`
//! milliseconds (100 by default) are spent; its time is the median region's per-launch
//! time. The device's own timers are used where it has them (CUDA events, wgpu
//! timestamp queries), the host clock around a synchronization otherwise. Before every
//! timed launch the `reset_to_zero` buffers are zeroed and the `restore_value` buffers
//! restored; every buffer argument is restored after tuning, before the real launch. A
//! configuration that does not compile or run on the device (too much shared memory,
//! too many threads, a shape its block sizes do not allow) is skipped, as Triton skips
//! it; when none runs, the error lists why. Errors no configuration causes (a missing
//! argument, an unknown name, a fault while the kernel runs) end tuning at once.
//!
//! **Where timing means nothing** (the interpreter and the simulators, whose speed says
//! nothing about a GPU's) the first configuration left after pruning is used, untimed.
//!
//! **Pre-hooks.** A configuration's [`PreHook`] (Triton's `triton.Config(pre_hook=...)`)
//! runs once per configuration and launch call, before its first launch; what it asks
//! (a host descriptor's block shape, a buffer zeroed) applies to every launch of that
//! configuration, the timed ones included, so a hook that zeroes an accumulator keeps
//! the timed runs and the result right.
//!
//! **From source**: [`crate::Kernel::autotuner`] reads `@triton.autotune(configs=...,
//! key=..., prune_configs_by=..., reset_to_zero=..., restore_value=...)` from the file,
//! with the configs' `pre_hook=` functions.

use crate::buffer::{Buffer, BufferView};
use crate::device::{Device, DeviceKind};
use crate::disk_cache::{DiskCache, Entry, COMPILER_ID};
use crate::kernel::{Arg, Kernel, Launch};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tilewise_core::frontend::{HostArg, HostTarget, PreHookAction, TuneConfig};
use tilewise_core::launch::{ConstValue, Grid, ScalarValue};
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// One configuration to try: constexpr values, warps per program and pipelining depth
/// (Triton's `triton.Config`).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Constexpr parameters the configuration sets, in order.
    pub constexprs: Vec<(String, ConstValue)>,
    /// Warps per program (default 4).
    pub num_warps: u32,
    /// Pipelining depth of the `dot` loops that do not give their own; `None`: by
    /// tile size.
    pub num_stages: Option<u32>,
    /// What to change before each launch of this configuration (Triton's
    /// `triton.Config(pre_hook=...)`).
    pub pre_hook: Option<PreHook>,
}

type PreHookFn = dyn Fn(&Config, &[(String, ArgValue)]) -> Result<Vec<PreHookAction>> + Send + Sync;

/// A configuration's pre-launch hook: from the configuration and the launch's arguments
/// by parameter name, what to change before every launch of it: a host descriptor's
/// block shape ([`PreHookAction::BlockShape`], as Triton's tutorials size their
/// descriptors per configuration) or a buffer to zero ([`PreHookAction::Zero`]). It runs
/// once per configuration and launch call; its actions apply to every launch of the
/// configuration that call makes (timed ones included).
#[derive(Clone)]
pub struct PreHook {
    name: String,
    f: Arc<PreHookFn>,
}

impl PreHook {
    /// A hook called `name` (for messages and [`Config`]'s display).
    pub fn new(
        name: &str,
        f: impl Fn(&Config, &[(String, ArgValue)]) -> Result<Vec<PreHookAction>> + Send + Sync + 'static,
    ) -> PreHook {
        PreHook {
            name: name.to_string(),
            f: Arc::new(f),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl PartialEq for PreHook {
    fn eq(&self, other: &PreHook) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.f, &other.f)
    }
}

impl std::fmt::Debug for PreHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PreHook({})", self.name)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

impl Config {
    /// No constexprs, 4 warps, the default pipelining.
    pub fn new() -> Config {
        Config {
            constexprs: vec![],
            num_warps: 4,
            num_stages: None,
            pre_hook: None,
        }
    }

    /// Sets the pre-launch hook (see [`PreHook`]).
    pub fn pre_hook(mut self, hook: PreHook) -> Config {
        self.pre_hook = Some(hook);
        self
    }

    /// Sets constexpr `name` (replacing an earlier value).
    pub fn constexpr(mut self, name: &str, value: impl Into<ConstValue>) -> Config {
        let value = value.into();
        match self.constexprs.iter_mut().find(|(n, _)| n == name) {
            Some(e) => e.1 = value,
            None => self.constexprs.push((name.to_string(), value)),
        }
        self
    }

    pub fn num_warps(mut self, num_warps: u32) -> Config {
        self.num_warps = num_warps;
        self
    }

    pub fn num_stages(mut self, num_stages: u32) -> Config {
        self.num_stages = Some(num_stages);
        self
    }

    /// The constexpr `name`, if the configuration sets it.
    pub fn get(&self, name: &str) -> Option<&ConstValue> {
        self.constexprs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The integer constexpr `name` (0 when it is not set or not an integer): for grid
    /// functions.
    pub fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            Some(ConstValue::Int(v)) => *v,
            Some(ConstValue::Bool(b)) => *b as i64,
            _ => 0,
        }
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (n, v) in &self.constexprs {
            write!(f, "{n}={}, ", v.key())?;
        }
        write!(f, "num_warps={}", self.num_warps)?;
        if let Some(s) = self.num_stages {
            write!(f, ", num_stages={s}")?;
        }
        if let Some(h) = &self.pre_hook {
            write!(f, ", pre_hook={}", h.name)?;
        }
        Ok(())
    }
}

/// A launch argument as a prune function sees it, by parameter name.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Scalar(ScalarValue),
    /// A buffer (or a view, or a descriptor's buffer): its element type and length.
    Buffer {
        dtype: tilewise_core::ir::DType,
        len: usize,
    },
    /// A host tensor descriptor: its buffer's element type and length, and the
    /// descriptor's shape, strides and block shape.
    Descriptor {
        dtype: tilewise_core::ir::DType,
        len: usize,
        shape: Vec<i64>,
        strides: Vec<i64>,
        block_shape: Vec<u32>,
    },
    /// A constexpr given with the launch (not by the configurations).
    Constexpr(ConstValue),
}

/// What the tuner reports while it measures (for progress bars).
#[derive(Clone, Debug)]
pub struct Progress<'a> {
    /// The configuration measured, counting from 0, and how many there are.
    pub index: usize,
    pub total: usize,
    pub config: &'a Config,
    /// Its time per launch in seconds, or why it was skipped.
    pub result: std::result::Result<f64, &'a Diagnostic>,
}

type PruneFn = dyn Fn(&[Config], &[(String, ArgValue)]) -> Result<Vec<Config>> + Send + Sync;
type ProgressFn = dyn Fn(&Progress<'_>) + Send + Sync;

/// A kernel with configurations to choose from ([`Kernel::autotune`]). Clones share
/// the choices made.
#[derive(Clone)]
pub struct Autotuner {
    kernel: Kernel,
    configs: Vec<Config>,
    key: Vec<String>,
    reset_to_zero: Vec<String>,
    restore_value: Vec<String>,
    prune: Option<Arc<PruneFn>>,
    progress: Option<Arc<ProgressFn>>,
    warmup_ms: f64,
    rep_ms: f64,
    /// Choices by tuning key: the configuration's index in `configs`.
    chosen: Arc<Mutex<HashMap<String, usize>>>,
}

impl Kernel {
    /// This kernel with `configs` to choose from at launch (see the module docs).
    pub fn autotune(&self, configs: impl IntoIterator<Item = Config>) -> Autotuner {
        Autotuner {
            kernel: self.clone(),
            configs: configs.into_iter().collect(),
            key: vec![],
            reset_to_zero: vec![],
            restore_value: vec![],
            prune: None,
            progress: None,
            warmup_ms: 25.0,
            rep_ms: 100.0,
            chosen: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl Autotuner {
    /// The parameters whose values key the choice: a launch whose key values (and
    /// buffer dtypes) were tuned before reuses that choice; new values tune again.
    pub fn key(mut self, names: &[&str]) -> Self {
        self.key = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Buffer parameters zeroed before every timed launch (kernels that accumulate into
    /// their output, e.g. with atomics).
    pub fn reset_to_zero(mut self, names: &[&str]) -> Self {
        self.reset_to_zero = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Buffer parameters restored to their values before every timed launch (kernels
    /// that update a buffer in place).
    pub fn restore_value(mut self, names: &[&str]) -> Self {
        self.restore_value = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// A function that narrows the configurations before timing, from the launch's
    /// arguments by parameter name (Triton's `early_config_prune`).
    pub fn prune(
        mut self,
        f: impl Fn(&[Config], &[(String, ArgValue)]) -> Result<Vec<Config>> + Send + Sync + 'static,
    ) -> Self {
        self.prune = Some(Arc::new(f));
        self
    }

    /// Called after each configuration is measured (a progress bar).
    pub fn on_progress(mut self, f: impl Fn(&Progress<'_>) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }

    /// Milliseconds of warm-up (at least one launch) and of measurement per
    /// configuration (Triton's `warmup` and `rep`; 25 and 100 by default).
    pub fn timing(mut self, warmup_ms: f64, rep_ms: f64) -> Self {
        self.warmup_ms = warmup_ms.max(0.0);
        self.rep_ms = rep_ms.max(0.0);
        self
    }

    pub fn configs(&self) -> &[Config] {
        &self.configs
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The choices made so far: tuning key and configuration.
    pub fn chosen(&self) -> Vec<(String, Config)> {
        let chosen = self.chosen.lock().map(|c| c.clone()).unwrap_or_default();
        let mut v: Vec<(String, Config)> = chosen
            .into_iter()
            .filter_map(|(k, i)| Some((k, self.configs.get(i)?.clone())))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// Starts a launch on `device`; `grid` gives the grid of a configuration.
    pub fn launch<'a>(
        &'a self,
        device: &'a Device,
        grid: impl Fn(&Config) -> Grid + 'a,
    ) -> TunedLaunch<'a> {
        TunedLaunch {
            tuner: self,
            device,
            grid: Box::new(grid),
            args: vec![],
            constexprs: vec![],
            hooked: RefCell::new(HashMap::new()),
        }
    }
}

/// A tuned launch being assembled: positional arguments and constexprs the
/// configurations do not set, as [`crate::Launch`] takes them.
pub struct TunedLaunch<'a> {
    tuner: &'a Autotuner,
    device: &'a Device,
    grid: Box<dyn Fn(&Config) -> Grid + 'a>,
    args: Vec<Arg>,
    constexprs: Vec<(String, ConstValue)>,
    /// Per configuration (by index) with a pre-hook: the arguments its actions give and
    /// the buffers to zero before each launch (with a zeroed buffer to copy from).
    hooked: RefCell<HashMap<usize, Arc<Hooked>>>,
}

/// A configuration's arguments after its pre-hook.
struct Hooked {
    args: Vec<Arg>,
    zero: Vec<(Buffer, Buffer)>,
}

/// Device copies of buffers, to put them back.
struct Saved {
    pairs: Vec<(Buffer, Buffer)>,
}

impl Saved {
    fn restore(&self, device: &Device) -> Result<()> {
        for (original, copy) in &self.pairs {
            device.copy(copy, original)?;
        }
        Ok(())
    }
}

impl<'a> TunedLaunch<'a> {
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = Arg>>(mut self, args: I) -> Self {
        self.args.extend(args);
        self
    }

    /// A constexpr no configuration sets.
    pub fn constexpr(mut self, name: &str, value: impl Into<ConstValue>) -> Self {
        self.constexprs.push((name.to_string(), value.into()));
        self
    }

    /// Chooses the configuration (tuning on first use of this key), runs the launch
    /// with it and returns it.
    pub fn run(self) -> Result<Config> {
        let t = self.tuner;
        if t.configs.is_empty() {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("autotuning `{}`: no configurations", t.kernel.name()),
            ));
        }
        for (name, _) in &self.constexprs {
            if let Some(c) = t.configs.iter().find(|c| c.get(name).is_some()) {
                return Err(Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "autotuning `{}`: constexpr `{name}` is given with the launch and set by the configuration {c}",
                        t.kernel.name()
                    ),
                ));
            }
        }
        let named = self.named_args()?;
        let key = self.tuning_key(&named)?;
        let known = t.chosen.lock().ok().and_then(|c| c.get(&key).copied());
        let index = match known.or_else(|| self.stored_choice(&key)) {
            Some(i) => i,
            None => {
                let i = self.tune(&named)?;
                self.store_choice(&key, i);
                i
            }
        };
        if let Ok(mut c) = t.chosen.lock() {
            c.insert(key, index);
        }
        self.launch_with(&t.configs[index])?;
        Ok(t.configs[index].clone())
    }

    /// The arguments of `config` (one of the tuner's) after its pre-hook, computed once.
    fn hooked(&self, config: &Config, hook: &PreHook) -> Result<Arc<Hooked>> {
        let index = self
            .tuner
            .configs
            .iter()
            .position(|c| std::ptr::eq(c, config));
        if let Some(h) = index.and_then(|i| self.hooked.borrow().get(&i).cloned()) {
            return Ok(h);
        }
        let named = self.named_args()?;
        let actions = (hook.f)(config, &named)
            .map_err(|e| e.with_note(format!("in the pre_hook `{}` of {config}", hook.name)))?;
        let mut args = self.args.clone();
        let mut zero = vec![];
        for a in actions {
            let param = match &a {
                PreHookAction::BlockShape { param, .. } | PreHookAction::Zero { param } => {
                    param.clone()
                }
            };
            let param = param.as_str();
            let Some(pos) = self.positional_index(param) else {
                return Err(Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "the pre_hook `{}` of {config} changes `{param}`, which is not an argument of this launch",
                        hook.name
                    ),
                ));
            };
            match (a, &mut args[pos]) {
                (PreHookAction::BlockShape { block_shape, .. }, Arg::Descriptor(d)) => {
                    if block_shape.len() != d.shape.len() {
                        return Err(Diagnostic::new(
                            ErrorKind::Launch,
                            format!(
                                "the pre_hook `{}` of {config} gives `{param}` the block shape {block_shape:?}, of {} dimensions, but the descriptor has {}",
                                hook.name,
                                block_shape.len(),
                                d.shape.len()
                            ),
                        ));
                    }
                    d.block_shape = block_shape;
                }
                (PreHookAction::Zero { .. }, Arg::Buffer(v)) => {
                    let b = v.buffer.clone();
                    let zeros = self.device.alloc(b.dtype(), b.len())?;
                    zero.push((b, zeros));
                }
                (PreHookAction::Zero { .. }, Arg::Descriptor(d)) => {
                    let b = d.view.buffer.clone();
                    let zeros = self.device.alloc(b.dtype(), b.len())?;
                    zero.push((b, zeros));
                }
                (a, _) => {
                    return Err(Diagnostic::new(
                        ErrorKind::Launch,
                        format!(
                            "the pre_hook `{}` of {config}: {a:?} does not apply to `{param}`, a {} argument",
                            hook.name,
                            match &args[pos] {
                                Arg::Scalar(_) => "scalar",
                                Arg::Buffer(_) => "buffer",
                                Arg::Descriptor(_) => "descriptor",
                            }
                        ),
                    ))
                }
            }
        }
        let h = Arc::new(Hooked { args, zero });
        if let Some(i) = index {
            self.hooked.borrow_mut().insert(i, h.clone());
        }
        Ok(h)
    }

    /// The position among the launch's positional arguments of parameter `name`.
    fn positional_index(&self, name: &str) -> Option<usize> {
        let set_by_configs = |n: &str| self.tuner.configs.iter().any(|c| c.get(n).is_some());
        let mut pos = 0;
        for p in &self.tuner.kernel.signature().params {
            if self.constexprs.iter().any(|(n, _)| n == &p.name) || set_by_configs(&p.name) {
                continue;
            }
            if p.name == name {
                return (pos < self.args.len()).then_some(pos);
            }
            pos += 1;
        }
        None
    }

    /// The launch of one configuration (after its pre-hook's actions).
    fn launch_with(&self, config: &Config) -> Result<()> {
        let hooked = match &config.pre_hook {
            Some(h) => Some(self.hooked(config, h)?),
            None => None,
        };
        if let Some(h) = &hooked {
            for (target, zeros) in &h.zero {
                self.device.copy(zeros, target)?;
            }
        }
        self.launch_of(config, hooked.as_deref()).run()
    }

    /// The kernel's launch with `config` (with the arguments its pre-hook gave).
    fn launch_of(&self, config: &Config, hooked: Option<&Hooked>) -> Launch<'a> {
        let args = hooked.map_or(&self.args, |h| &h.args);
        let mut l = self
            .tuner
            .kernel
            .launch(self.device, (self.grid)(config))
            .args(args.iter().cloned())
            .num_warps(config.num_warps);
        if let Some(s) = config.num_stages {
            l = l.num_stages(s);
        }
        for (n, v) in self.constexprs.iter().chain(&config.constexprs) {
            l = l.constexpr(n, v.clone());
        }
        l
    }

    /// Compiles the `candidates` (indices into the configurations) several at a time,
    /// before any is timed: a GPU's compile (tilewise's lowering and the driver's) is
    /// most of a tuning's time, and the host has cores to spare. A configuration that
    /// does not compile gets its error, reported when it would have been timed.
    fn prepare_all(&self, candidates: &[usize]) -> Vec<Option<Diagnostic>> {
        let t = self.tuner;
        let mut errors: Vec<Option<Diagnostic>> = vec![None; candidates.len()];
        let mut launches = vec![];
        for (n, &i) in candidates.iter().enumerate() {
            let config = &t.configs[i];
            let hooked = match &config.pre_hook {
                Some(h) => match self.hooked(config, h) {
                    Ok(h) => Some(h),
                    Err(e) => {
                        errors[n] = Some(e);
                        continue;
                    }
                },
                None => None,
            };
            launches.push((n, self.launch_of(config, hooked.as_deref())));
        }
        if launches.is_empty() {
            return errors;
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(launches.len());
        let start = Instant::now();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let failed: Mutex<Vec<(usize, Diagnostic)>> = Mutex::new(vec![]);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((n, launch)) = launches.get(k) else {
                        break;
                    };
                    if let Err(e) = launch.prepare() {
                        failed
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((*n, e));
                    }
                });
            }
        });
        for (n, e) in failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            errors[n] = Some(e);
        }
        log::info!(
            "autotune: `{}`: compiled {} configurations on {threads} threads in {:.2} s",
            t.kernel.name(),
            launches.len(),
            start.elapsed().as_secs_f64()
        );
        errors
    }

    /// The launch's arguments by parameter name: the signature's parameters in order,
    /// those the configurations or the launch set as constexprs skipped, the rest taking
    /// the positional arguments in order.
    fn named_args(&self) -> Result<Vec<(String, ArgValue)>> {
        let set_by_configs = |name: &str| self.tuner.configs.iter().any(|c| c.get(name).is_some());
        let mut positional = self.args.iter();
        let mut named = vec![];
        for p in &self.tuner.kernel.signature().params {
            if let Some((_, v)) = self.constexprs.iter().find(|(n, _)| n == &p.name) {
                named.push((p.name.clone(), ArgValue::Constexpr(v.clone())));
                continue;
            }
            if set_by_configs(&p.name) {
                continue;
            }
            let Some(a) = positional.next() else {
                break;
            };
            named.push((
                p.name.clone(),
                match a {
                    Arg::Scalar(s) => ArgValue::Scalar(*s),
                    Arg::Buffer(v) => ArgValue::Buffer {
                        dtype: v.buffer.dtype(),
                        len: v.len,
                    },
                    Arg::Descriptor(d) => ArgValue::Descriptor {
                        dtype: d.view.buffer.dtype(),
                        len: d.view.len,
                        shape: d.shape.clone(),
                        strides: d.strides.clone(),
                        block_shape: d.block_shape.clone(),
                    },
                },
            ));
        }
        Ok(named)
    }

    /// The buffers named `names`, whole (a view's buffer).
    fn buffers_named(&self, names: &[String], what: &str) -> Result<Vec<Buffer>> {
        let set_by_configs = |name: &str| self.tuner.configs.iter().any(|c| c.get(name).is_some());
        let mut out = vec![];
        for name in names {
            let mut positional = self.args.iter();
            let mut found = None;
            for p in &self.tuner.kernel.signature().params {
                if self.constexprs.iter().any(|(n, _)| n == &p.name) || set_by_configs(&p.name) {
                    continue;
                }
                let a = positional.next();
                if &p.name == name {
                    found = Some(a);
                    break;
                }
            }
            let view: Option<&BufferView> = match found {
                Some(Some(Arg::Buffer(v))) => Some(v),
                Some(Some(Arg::Descriptor(d))) => Some(&d.view),
                _ => None,
            };
            match view {
                Some(v) => out.push(v.buffer.clone()),
                None => {
                    return Err(Diagnostic::new(
                        ErrorKind::Launch,
                        format!(
                            "autotuning `{}`: `{what}` names `{name}`, which is not a buffer argument of this launch",
                            self.tuner.kernel.name()
                        ),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// The key a choice is remembered by: the kernel, the key parameters' values, every
    /// buffer's dtype, the launch's constexprs, the configurations and the device.
    fn tuning_key(&self, named: &[(String, ArgValue)]) -> Result<String> {
        let t = self.tuner;
        let mut parts = vec![];
        for k in &t.key {
            let v = named.iter().find(|(n, _)| n == k).ok_or_else(|| {
                Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "autotuning `{}`: key parameter `{k}` is not an argument of this launch",
                        t.kernel.name()
                    ),
                )
            })?;
            parts.push(format!("{k}={}", describe(&v.1)));
        }
        let dtypes: Vec<String> = named
            .iter()
            .filter(|(_, v)| matches!(v, ArgValue::Buffer { .. }))
            .map(|(n, v)| format!("{n}:{}", describe(v)))
            .collect();
        let consts: Vec<String> = self
            .constexprs
            .iter()
            .map(|(n, v)| format!("{n}={}", v.key()))
            .collect();
        let configs: Vec<String> = t.configs.iter().map(|c| c.to_string()).collect();
        Ok(format!(
            "kernel {}\nkey {}\nbuffers {}\nconstexprs {}\nconfigs [{}]\ndevice {}",
            t.kernel.spec_prefix(),
            parts.join(", "),
            dtypes.join(", "),
            consts.join(", "),
            configs.join("; "),
            self.device.name()
        ))
    }

    fn disk(&self) -> Option<DiskCache> {
        match self.device.kind() {
            DeviceKind::Cuda | DeviceKind::Wgpu => DiskCache::from_environment(),
            _ => None,
        }
    }

    fn stored_choice(&self, key: &str) -> Option<usize> {
        let disk = self.disk()?;
        let entry = disk.get("autotune", &format!("compiler {COMPILER_ID}\n{key}"))?;
        let text = std::str::from_utf8(entry.section("choice")?).ok()?;
        let index: usize = text.lines().next()?.trim().parse().ok()?;
        let c = self.tuner.configs.get(index)?;
        log::info!(
            "autotune: `{}` uses {c} (chosen in an earlier run, from the persistent cache)",
            self.tuner.kernel.name()
        );
        Some(index)
    }

    fn store_choice(&self, key: &str, index: usize) {
        if let Some(disk) = self.disk() {
            let text = format!("{index}\n{}\n", self.tuner.configs[index]);
            disk.put(
                "autotune",
                &format!("compiler {COMPILER_ID}\n{key}"),
                &Entry::default().with("choice", text.into_bytes()),
            );
        }
    }

    /// Measures every configuration left after pruning; the fastest one's index.
    fn tune(&self, named: &[(String, ArgValue)]) -> Result<usize> {
        let t = self.tuner;
        let mut candidates: Vec<usize> = (0..t.configs.len()).collect();
        if let Some(prune) = &t.prune {
            let kept = prune(&t.configs, named)?;
            candidates = kept
                .iter()
                .filter_map(|k| t.configs.iter().position(|c| c == k))
                .collect();
            candidates.dedup();
            if candidates.is_empty() {
                return Err(Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "autotuning `{}`: the prune function kept none of the {} configurations",
                        t.kernel.name(),
                        t.configs.len()
                    ),
                ));
            }
            log::info!(
                "autotune: `{}`: pruning kept {} of {} configurations",
                t.kernel.name(),
                candidates.len(),
                t.configs.len()
            );
        }
        if !matches!(self.device.kind(), DeviceKind::Cuda | DeviceKind::Wgpu) {
            log::info!(
                "autotune: `{}` on {}: timing means nothing here; using the first configuration, {}",
                t.kernel.name(),
                self.device.name(),
                t.configs[candidates[0]]
            );
            return Ok(candidates[0]);
        }
        if candidates.len() == 1 {
            return Ok(candidates[0]);
        }
        // One tuning at a time in the process: a device has one timed region at a
        // time, and two tunings sharing a GPU would disturb each other's times.
        static TUNING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = TUNING.lock().unwrap_or_else(|e| e.into_inner());
        let zero = self.buffers_named(&t.reset_to_zero, "reset_to_zero")?;
        let restore = self.buffers_named(&t.restore_value, "restore_value")?;
        // Every buffer argument, restored after tuning.
        let every: Vec<Buffer> = {
            let mut v: Vec<Buffer> = vec![];
            for a in &self.args {
                let b = match a {
                    Arg::Buffer(view) => &view.buffer,
                    Arg::Descriptor(d) => &d.view.buffer,
                    Arg::Scalar(_) => continue,
                };
                if !v.iter().any(|x| x.same_allocation(b)) {
                    v.push(b.clone());
                }
            }
            v
        };
        let save = |bufs: &[Buffer]| -> Result<Saved> {
            let mut pairs = vec![];
            for b in bufs {
                let copy = self.device.alloc(b.dtype(), b.len())?;
                self.device.copy(b, &copy)?;
                pairs.push((b.clone(), copy));
            }
            Ok(Saved { pairs })
        };
        let all = save(&every)?;
        let before_each = Saved {
            pairs: save(&restore)?
                .pairs
                .into_iter()
                .chain(
                    zero.iter()
                        .map(|b| Ok((b.clone(), self.device.alloc(b.dtype(), b.len())?)))
                        .collect::<Result<Vec<_>>>()?,
                )
                .collect(),
        };
        let resets = !before_each.pairs.is_empty();
        let mut best: Option<(usize, f64)> = None;
        let mut skipped: Vec<(usize, Diagnostic)> = vec![];
        let start = Instant::now();
        let mut compile_errors = self.prepare_all(&candidates);
        for (n, &i) in candidates.iter().enumerate() {
            let config = &t.configs[i];
            let result = match compile_errors[n].take() {
                Some(e) => Err(e),
                None => self.measure(config, &before_each, resets),
            };
            if let Some(p) = &t.progress {
                p(&Progress {
                    index: n,
                    total: candidates.len(),
                    config,
                    result: result.as_ref().map(|s| *s),
                });
            }
            match result {
                Ok(s) => {
                    log::info!(
                        "autotune: `{}` {config}: {:.2} us",
                        t.kernel.name(),
                        s * 1e6
                    );
                    if best.is_none_or(|(_, b)| s < b) {
                        best = Some((i, s));
                    }
                }
                Err(e) => {
                    // Errors no configuration changes (the kernel's own, a fault while
                    // it ran, a bug) end tuning; a lost device fails every later
                    // configuration too.
                    let fatal = matches!(
                        e.kind,
                        ErrorKind::Syntax
                            | ErrorKind::Name
                            | ErrorKind::Argument
                            | ErrorKind::Runtime
                            | ErrorKind::Internal
                    );
                    if fatal || self.device.synchronize().is_err() {
                        all.restore(self.device).ok();
                        return Err(e.with_note(format!("while autotuning, with {config}")));
                    }
                    log::info!(
                        "autotune: `{}` {config}: skipped: {}",
                        t.kernel.name(),
                        e.message
                    );
                    skipped.push((i, e));
                }
            }
        }
        all.restore(self.device)?;
        self.device.synchronize()?;
        match best {
            Some((i, s)) => {
                log::info!(
                    "autotune: `{}` chose {} ({:.2} us a launch) in {:.2} s",
                    t.kernel.name(),
                    t.configs[i],
                    s * 1e6,
                    start.elapsed().as_secs_f64()
                );
                Ok(i)
            }
            None => {
                let mut d = Diagnostic::new(
                    ErrorKind::Launch,
                    format!(
                        "autotuning `{}`: none of the {} configurations runs on {}",
                        t.kernel.name(),
                        candidates.len(),
                        self.device.name()
                    ),
                );
                for (i, e) in skipped {
                    d = d.with_note(format!("{}: {}", t.configs[i], e.message));
                }
                Err(d)
            }
        }
    }

    /// The time of one launch of `config` in seconds (see the module docs).
    fn measure(&self, config: &Config, before_each: &Saved, resets: bool) -> Result<f64> {
        let t = self.tuner;
        // Warm-up: the compile and the first launch, then more up to `warmup_ms`.
        before_each.restore(self.device)?;
        self.launch_with(config)?;
        self.device.synchronize()?;
        let one = self.region(config, before_each, 1)?;
        let warm_runs = ((t.warmup_ms * 1e-3 / one.max(1e-7)) as usize).min(100);
        for _ in 0..warm_runs {
            if resets {
                before_each.restore(self.device)?;
            }
            self.launch_with(config)?;
        }
        // Regions of at least 1 ms of launches where nothing needs resetting.
        let per_region = if resets {
            1
        } else {
            ((1e-3 / one.max(1e-7)).ceil() as usize).clamp(1, 1000)
        };
        let regions =
            ((t.rep_ms * 1e-3 / (one.max(1e-7) * per_region as f64)).ceil() as usize).clamp(3, 50);
        let mut times = Vec::with_capacity(regions);
        for _ in 0..regions {
            times.push(self.region(config, before_each, per_region)? / per_region as f64);
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// Seconds of `n` back-to-back launches (resets before them, untimed).
    fn region(&self, config: &Config, before_each: &Saved, n: usize) -> Result<f64> {
        before_each.restore(self.device)?;
        self.device.synchronize()?;
        let host = Instant::now();
        let device_time = self.device.time_on_device(|| {
            for _ in 0..n {
                self.launch_with(config)?;
            }
            Ok(())
        })?;
        match device_time {
            Some(s) => Ok(s),
            None => {
                self.device.synchronize()?;
                Ok(host.elapsed().as_secs_f64())
            }
        }
    }
}

fn describe(v: &ArgValue) -> String {
    match v {
        ArgValue::Scalar(ScalarValue::Int(_, i)) => i.to_string(),
        ArgValue::Scalar(ScalarValue::Float(_, f)) => format!("{f:?}"),
        ArgValue::Scalar(ScalarValue::Bool(b)) => b.to_string(),
        ArgValue::Buffer { dtype, .. } => format!("*{dtype}"),
        ArgValue::Descriptor { dtype, shape, .. } => format!("desc<{dtype}{shape:?}>"),
        ArgValue::Constexpr(c) => c.key(),
    }
}

impl Kernel {
    /// The autotuner the source's `@triton.autotune(...)` decorator describes, for
    /// `device`; `None` when the kernel has none. Configuration code that asks for the
    /// target (`triton.runtime.driver.active.get_current_target()`) sees `backend
    /// "cuda"` with the device's compute capability on CUDA, and `"cuda"`, arch 80 on
    /// the other executors (tilewise runs the CUDA configurations everywhere: they are
    /// the generic ones; the HIP ones set AMD-only options). Unwritten `num_warps` is
    /// 4; unwritten `num_stages` leaves the pipelining depth to tilewise (by tile size).
    pub fn autotuner(&self, device: &Device) -> Result<Option<Autotuner>> {
        let target = host_target(device);
        let Some(decl) = self.module().autotune(self.name(), &target)? else {
            return Ok(None);
        };
        let module = self.module().clone();
        let decl = Arc::new(decl);
        let configs: Vec<Config> = decl
            .configs
            .iter()
            .map(|c| Config {
                constexprs: c.constexprs.clone(),
                num_warps: c.num_warps.unwrap_or(4),
                num_stages: c.num_stages,
                pre_hook: c.pre_hook.as_ref().map(|h| {
                    let (module, decl, target, tc) =
                        (module.clone(), decl.clone(), target.clone(), c.clone());
                    PreHook::new(&h.name, move |_: &Config, args: &[(String, ArgValue)]| {
                        let named: Vec<(String, HostArg)> =
                            args.iter().map(|(n, v)| (n.clone(), host_arg(v))).collect();
                        decl.run_pre_hook(&module, &tc, &named, &target)
                    })
                }),
            })
            .collect();
        for w in &decl.warnings {
            log::warn!(target: "tilewise::autotune", "{}", w.render());
        }
        let mut tuner = self.autotune(configs);
        tuner.key = decl.key.clone();
        tuner.reset_to_zero = decl.reset_to_zero.clone();
        tuner.restore_value = decl.restore_value.clone();
        tuner.warmup_ms = decl.warmup_ms.unwrap_or(tuner.warmup_ms);
        tuner.rep_ms = decl.rep_ms.unwrap_or(tuner.rep_ms);
        if decl
            .prune
            .as_ref()
            .is_some_and(|p| p.early_config_prune.is_some())
        {
            let originals = tuner.configs.clone();
            tuner.prune = Some(Arc::new(
                move |configs: &[Config], args: &[(String, ArgValue)]| {
                    // The declaration's own configs (hooks included), by position.
                    let tune: Vec<TuneConfig> = configs
                        .iter()
                        .map(|c| match originals.iter().position(|o| o == c) {
                            Some(i) => decl.configs[i].clone(),
                            None => tune_config(c),
                        })
                        .collect();
                    let mut named = vec![];
                    let mut kwargs = vec![];
                    for (n, v) in args {
                        match v {
                            ArgValue::Constexpr(c) => kwargs.push((n.clone(), const_arg(c))),
                            other => named.push((n.clone(), host_arg(other))),
                        }
                    }
                    let kept = decl.prune(&module, &tune, &named, &kwargs, &target)?;
                    Ok(kept
                        .iter()
                        .filter_map(|k| tune.iter().position(|t| t == k))
                        .map(|i| configs[i].clone())
                        .collect())
                },
            ));
        }
        Ok(Some(tuner))
    }
}

/// What configuration code is told about `device` (see [`Kernel::autotuner`]).
fn host_target(device: &Device) -> HostTarget {
    let t = HostTarget::cuda(device.compute_capability().unwrap_or(80));
    match device.multiprocessor_count() {
        Some(n) => t.with_multiprocessors(n),
        None => t,
    }
}

fn tune_config(c: &Config) -> TuneConfig {
    TuneConfig {
        constexprs: c.constexprs.clone(),
        num_warps: Some(c.num_warps),
        num_stages: c.num_stages,
        pre_hook: None,
    }
}

fn host_arg(v: &ArgValue) -> HostArg {
    match v {
        ArgValue::Scalar(ScalarValue::Bool(b)) => HostArg::Bool(*b),
        ArgValue::Scalar(ScalarValue::Int(_, i)) => HostArg::Int(*i),
        ArgValue::Scalar(ScalarValue::Float(_, f)) => HostArg::Float(*f),
        ArgValue::Buffer { dtype, len } => HostArg::Tensor {
            dtype: *dtype,
            numel: *len,
        },
        ArgValue::Descriptor {
            dtype,
            len,
            shape,
            strides,
            block_shape,
        } => HostArg::Descriptor {
            dtype: *dtype,
            numel: *len,
            shape: shape.clone(),
            strides: strides.clone(),
            block_shape: block_shape.clone(),
        },
        ArgValue::Constexpr(c) => const_arg(c),
    }
}

fn const_arg(c: &ConstValue) -> HostArg {
    match c {
        ConstValue::Int(i) => HostArg::Int(*i),
        ConstValue::Float(f) => HostArg::Float(*f),
        ConstValue::Bool(b) => HostArg::Bool(*b),
        _ => HostArg::None,
    }
}
