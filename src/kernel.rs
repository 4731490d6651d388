//! Modules, kernels and launches: the user-facing path from source text to a run.
//!
//! [`Module::parse`] reads a source file and finds its jit functions; [`Module::kernel`]
//! names one; [`Kernel::launch`] collects a grid, positional arguments and named
//! constexprs, then [`Launch::run`] specializes (cached by [`SpecKey`]) and runs it.

use crate::buffer::{Buffer, BufferView};
use crate::device::{BoundArg, Device, LaunchOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilewise_core::frontend::{self, Signature, Specialized};
use tilewise_core::ir::DType;
use tilewise_core::launch::{ArgSpec, ConstValue, Grid, ScalarValue, SpecKey};
use tilewise_core::lower::expand::ExpandOptions;
use tilewise_core::{ir, Diagnostic, ErrorKind, Result};

/// A parsed source file.
#[derive(Clone)]
pub struct Module {
    inner: Arc<frontend::Module>,
}

impl Module {
    /// Parses Triton-dialect source; `name` is the file name used in diagnostics.
    pub fn parse(name: &str, source: &str) -> Result<Module> {
        Ok(Module {
            inner: Arc::new(frontend::Module::parse(name, source)?),
        })
    }

    /// Reads and parses a file.
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Module> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostic::new(
                ErrorKind::Argument,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Module::parse(&path.display().to_string(), &text)
    }

    /// The names of the jit functions, in source order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.inner.kernel_names()
    }

    /// The jit function `name`, ready to launch.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let signature = self.inner.signature(name)?;
        let fingerprint = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            let src = self.inner.source();
            src.name.hash(&mut h);
            src.text.hash(&mut h);
            h.finish()
        };
        Ok(Kernel {
            fingerprint,
            prefix: format!("{fingerprint:016x}:").into(),
            module: self.inner.clone(),
            signature: Arc::new(signature),
            cache: Arc::new(Mutex::new(HashMap::new())),
            last: Arc::new(Mutex::new(None)),
        })
    }
}

/// A jit function with its specialization cache. Clones share the cache.
#[derive(Clone)]
pub struct Kernel {
    /// A hash of the module's file name and text.
    fingerprint: u64,
    /// `{fingerprint:016x}:`, the start of every specialization key of this kernel.
    prefix: Arc<str>,
    module: Arc<frontend::Module>,
    signature: Arc<Signature>,
    cache: Arc<Mutex<HashMap<SpecKey, Arc<Specialized>>>>,
    /// The last launch's specialization: a launch that specializes as the last one
    /// (the common loop) skips building and hashing the key.
    last: Arc<Mutex<Option<LastSpecialization>>>,
}

/// What [`Kernel::specialize`] remembers of the last launch.
struct LastSpecialization {
    args: Vec<ArgSpec>,
    constexprs: Vec<(String, ConstValue)>,
    key: Arc<SpecKey>,
    spec: Arc<Specialized>,
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.signature.name
    }

    pub fn signature(&self) -> &Signature {
        &self.signature
    }

    /// Starts a launch on `device` over `grid` (1 to 3 dimensions).
    pub fn launch<'a>(&'a self, device: &'a Device, grid: impl Into<Grid>) -> Launch<'a> {
        Launch {
            kernel: self,
            device,
            grid: grid.into(),
            args: Vec::with_capacity(8),
            constexprs: vec![],
            num_warps: 4,
            num_stages: None,
            checked: None,
        }
    }

    /// The module's fingerprint and the kernel's name: what every key of this kernel
    /// starts with.
    pub(crate) fn spec_prefix(&self) -> String {
        format!("{:016x}:{}", self.fingerprint, self.name())
    }

    /// The parsed module the kernel belongs to.
    pub(crate) fn module(&self) -> &Arc<frontend::Module> {
        &self.module
    }

    /// Number of specializations traced so far.
    pub fn cached_specializations(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }

    fn specialize(
        &self,
        args: &[ArgSpec],
        constexprs: &[(String, ConstValue)],
    ) -> Result<(Arc<SpecKey>, Arc<Specialized>)> {
        // The device caches are keyed by this too: the module's fingerprint keeps two
        // modules' same-named kernels apart.
        // Positional arguments that go to constexpr parameters (the parameters named
        // by `constexprs` are skipped, as the binding in the front end skips them).
        let folded_flags = || {
            self.signature
                .params
                .iter()
                .filter(|p| !constexprs.iter().any(|(n, _)| n == &p.name))
                .map(|p| p.constexpr)
                .take(args.len())
        };
        if let Some(last) = self.last.lock().ok().as_deref().and_then(Option::as_ref) {
            // The same constexprs give the same folded positions as last time.
            let same = last.args.len() == args.len()
                && last.constexprs == constexprs
                && args
                    .iter()
                    .zip(&last.args)
                    .zip(folded_flags().chain(std::iter::repeat(false)))
                    .all(|((a, b), f)| a.same_key(b, f));
            if same {
                log::trace!(
                    "specialization cache hit: `{}` (as the last launch)",
                    self.name()
                );
                return Ok((last.key.clone(), last.spec.clone()));
            }
        }
        let folded: Vec<bool> = folded_flags().collect();
        let key = Arc::new(SpecKey::with_prefix(
            &self.prefix,
            self.name(),
            args,
            &folded,
            constexprs,
        ));
        let remember = |spec: &Arc<Specialized>| {
            if let Ok(mut last) = self.last.lock() {
                *last = Some(LastSpecialization {
                    args: args.to_vec(),
                    constexprs: constexprs.to_vec(),
                    key: key.clone(),
                    spec: spec.clone(),
                });
            }
        };
        if let Some(hit) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            log::trace!("specialization cache hit: `{}` {}", self.name(), key.0);
            remember(&hit);
            return Ok((key, hit));
        }
        let start = std::time::Instant::now();
        let spec = Arc::new(self.module.specialize(self.name(), args, constexprs)?);
        log::debug!(
            "specialization cache miss: traced `{}` in {:.2} ms ({})",
            self.name(),
            start.elapsed().as_secs_f64() * 1e3,
            key.0
        );
        if let Ok(mut c) = self.cache.lock() {
            c.insert((*key).clone(), spec.clone());
        }
        remember(&spec);
        Ok((key, spec))
    }
}

/// One positional launch argument.
#[derive(Clone, Debug)]
pub enum Arg {
    Buffer(BufferView),
    Scalar(ScalarValue),
    Descriptor(TensorDescriptor),
}

/// A buffer seen as a tensor of `shape` with `strides` (in elements), read and written
/// by the kernel in blocks of `block_shape` (Triton's host-side `TensorDescriptor`):
/// the kernel's parameter is used as `desc.load([i, j])` / `desc.store([i, j], x)`;
/// elements outside `shape` read as zero and are not written.
#[derive(Clone, Debug)]
pub struct TensorDescriptor {
    pub view: BufferView,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub block_shape: Vec<u32>,
}

impl TensorDescriptor {
    /// A descriptor of `buffer` (or a view of it). Checked at launch: one to five
    /// dimensions, as many strides as dimensions, non-negative sizes and strides, block
    /// dimensions powers of two, and every element of the tensor inside the view.
    pub fn new(
        buffer: impl Into<BufferView>,
        shape: &[i64],
        strides: &[i64],
        block_shape: &[u32],
    ) -> TensorDescriptor {
        TensorDescriptor {
            view: buffer.into(),
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            block_shape: block_shape.to_vec(),
        }
    }

    /// A row-major (contiguous) descriptor of `shape`.
    pub fn contiguous(buffer: impl Into<BufferView>, shape: &[i64], block_shape: &[u32]) -> Self {
        let mut strides = vec![1i64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1].max(1);
        }
        Self::new(buffer, shape, &strides, block_shape)
    }

    fn check(&self, index: usize) -> Result<()> {
        let bad = |msg: String| {
            Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("launch argument {index} (a tensor descriptor): {msg}"),
            ))
        };
        let rank = self.shape.len();
        if !(1..=5).contains(&rank) {
            return bad(format!("{rank} dimensions; descriptors have 1 to 5"));
        }
        if self.strides.len() != rank || self.block_shape.len() != rank {
            return bad(format!(
                "{rank} dimensions but {} strides and a block shape of {} dimensions",
                self.strides.len(),
                self.block_shape.len()
            ));
        }
        if let Some(d) = (0..rank).find(|&d| self.shape[d] < 0 || self.strides[d] < 0) {
            return bad(format!(
                "dimension {d} has size {} and stride {}; both must be non-negative",
                self.shape[d], self.strides[d]
            ));
        }
        if let Some(b) = self.block_shape.iter().find(|b| !b.is_power_of_two()) {
            return bad(format!("block dimension {b} is not a power of two"));
        }
        if self.shape.contains(&0) {
            return Ok(());
        }
        let last = (0..rank).try_fold(0i64, |acc, d| {
            (self.shape[d] - 1)
                .checked_mul(self.strides[d])
                .and_then(|x| x.checked_add(acc))
        });
        match last {
            Some(l) if (l as u64) < self.view.len as u64 => Ok(()),
            _ => bad(format!(
                "shape {:?} with strides {:?} reaches element {} but the view has {} elements",
                self.shape,
                self.strides,
                last.map_or("beyond i64".to_string(), |l| l.to_string()),
                self.view.len
            )),
        }
    }
}

impl From<TensorDescriptor> for Arg {
    fn from(d: TensorDescriptor) -> Arg {
        Arg::Descriptor(d)
    }
}

impl From<&Buffer> for Arg {
    fn from(b: &Buffer) -> Arg {
        Arg::Buffer(b.view())
    }
}
impl From<&BufferView> for Arg {
    fn from(v: &BufferView) -> Arg {
        Arg::Buffer(v.clone())
    }
}
impl From<BufferView> for Arg {
    fn from(v: BufferView) -> Arg {
        Arg::Buffer(v)
    }
}
impl From<bool> for Arg {
    fn from(v: bool) -> Arg {
        Arg::Scalar(ScalarValue::Bool(v))
    }
}
macro_rules! int_arg {
    ($($t:ty => $d:ident),*) => {$(
        impl From<$t> for Arg {
            fn from(v: $t) -> Arg { Arg::Scalar(ScalarValue::Int(DType::$d, v as i64)) }
        }
    )*};
}
int_arg!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);
impl From<f32> for Arg {
    fn from(v: f32) -> Arg {
        Arg::Scalar(ScalarValue::Float(DType::F32, v as f64))
    }
}
impl From<f64> for Arg {
    fn from(v: f64) -> Arg {
        Arg::Scalar(ScalarValue::Float(DType::F64, v))
    }
}

/// A launch being assembled: `kernel.launch(&dev, grid).arg(&x).constexpr("B", 64).run()`.
pub struct Launch<'a> {
    kernel: &'a Kernel,
    device: &'a Device,
    grid: Grid,
    args: Vec<Arg>,
    constexprs: Vec<(String, ConstValue)>,
    num_warps: u32,
    /// The pipelining depth of `dot` loops that do not give their own.
    num_stages: Option<u32>,
    /// Checked mode for this launch; `None`: as the device handle says.
    checked: Option<bool>,
}

/// A specialized kernel, traced but not run.
pub struct Compiled {
    pub(crate) spec: Arc<Specialized>,
}

impl Compiled {
    /// The tile IR in its text form.
    pub fn ir_text(&self) -> String {
        ir::print(&self.spec.kernel)
    }

    /// The tile IR.
    pub fn ir(&self) -> &ir::Kernel {
        &self.spec.kernel
    }

    /// The Thread IR of the shared lowering with the WGSL backend's base options
    /// (`ExpandOptions::wgsl`: 16-byte accesses of 32-bit elements, FMA dots;
    /// `num_warps = 4`), in its text form.
    pub fn thread_ir_text(&self) -> Result<String> {
        Ok(tilewise_core::thread_ir::print(&self.thread_ir("text")?))
    }

    fn thread_ir(&self, backend: &'static str) -> Result<tilewise_core::thread_ir::ThreadKernel> {
        let options = ExpandOptions {
            backend,
            ..ExpandOptions::wgsl(4)
        };
        tilewise_core::lower::to_thread_ir(&self.spec.kernel, &options)
    }

    /// The WGSL the WGSL backend generates for this specialization, for a device with
    /// SHADER_F16 and WebGPU's default limits, validated by naga.
    pub fn wgsl(&self) -> Result<String> {
        let caps = tilewise_wgsl::Capabilities::offline(true, false);
        Ok(self.wgsl_for(&caps, 4)?.source)
    }

    /// The WGSL for a device with `caps` (e.g. `Capabilities::offline_coop()`, whose
    /// dots take the cooperative-matrix form) and `num_warps` warps per program,
    /// validated by naga against those capabilities.
    pub fn wgsl_for(
        &self,
        caps: &tilewise_wgsl::Capabilities,
        num_warps: u32,
    ) -> Result<tilewise_wgsl::WgslKernel> {
        let printed = tilewise_wgsl::compile(&self.spec.kernel, caps, num_warps)?;
        tilewise_wgsl::validate_wgsl(&printed.name, &printed.source, caps)?;
        Ok(printed)
    }

    /// The PTX the PTX backend generates for this specialization, for `sm_80` (the
    /// baseline; the module runs on every later GPU through the driver's JIT).
    pub fn ptx(&self) -> Result<String> {
        Ok(self.ptx_for(tilewise_cuda::PtxTarget::BASELINE, 4)?.source)
    }

    /// The PTX for `target` with `num_warps` warps per program, with what the runtime
    /// needs to launch it.
    pub fn ptx_for(
        &self,
        target: tilewise_cuda::PtxTarget,
        num_warps: u32,
    ) -> Result<tilewise_cuda::PtxKernel> {
        tilewise_cuda::compile(
            &self.spec.kernel,
            &tilewise_cuda::PtxOptions::new(target, num_warps),
        )
    }

    /// Lines `tl.static_print` printed while tracing.
    pub fn static_prints(&self) -> &[String] {
        &self.spec.static_prints
    }
}

impl<'a> Launch<'a> {
    /// Appends a positional argument: a buffer, a view, or a scalar.
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several positional arguments.
    pub fn args<I: IntoIterator<Item = Arg>>(mut self, args: I) -> Self {
        self.args.extend(args);
        self
    }

    /// Warps per program on GPU backends (Triton's `num_warps`; 1, 2, 4, 8, 16 or 32,
    /// default 4): a program runs as `32 * num_warps` threads. The interpreter ignores
    /// it; results never depend on it.
    pub fn num_warps(mut self, num_warps: u32) -> Self {
        self.num_warps = num_warps;
        self
    }

    /// Software-pipelining depth of the `dot` loops that do not give their own
    /// (`tl.range(..., num_stages=)`), as Triton's `num_stages` launch option: 1 turns
    /// pipelining off, 2 to 8 keep that many tiles in flight (fewer where shared memory
    /// does not allow them). Unset, the depth follows the tile size. The interpreter
    /// ignores it; results never depend on it.
    pub fn num_stages(mut self, num_stages: u32) -> Self {
        self.num_stages = Some(num_stages);
        self
    }

    /// Runs this launch in checked mode (`true`) or not (`false`), whatever the
    /// device's handle or `TILEWISE_CHECKED` say (see [`Device::checked`]).
    pub fn checked(mut self, checked: bool) -> Self {
        self.checked = Some(checked);
        self
    }

    /// Gives a constexpr parameter by name.
    pub fn constexpr(mut self, name: &str, value: impl Into<ConstValue>) -> Self {
        self.constexprs.push((name.to_string(), value.into()));
        self
    }

    fn arg_specs(&self) -> Result<Vec<ArgSpec>> {
        self.args
            .iter()
            .map(|a| match a {
                Arg::Buffer(v) => {
                    self.device.check_owner(&v.buffer)?;
                    let byte_offset = v.offset * v.buffer.dtype().size_bytes();
                    Ok(ArgSpec::Ptr {
                        dtype: v.buffer.dtype(),
                        aligned16: byte_offset % 16 == 0,
                    })
                }
                Arg::Scalar(s) => Ok(ArgSpec::Scalar(*s)),
                Arg::Descriptor(d) => {
                    self.device.check_owner(&d.view.buffer)?;
                    let index = self
                        .args
                        .iter()
                        .position(|x| std::ptr::eq(x, a))
                        .unwrap_or(0);
                    d.check(index)?;
                    let byte_offset = d.view.offset * d.view.buffer.dtype().size_bytes();
                    Ok(ArgSpec::Descriptor {
                        dtype: d.view.buffer.dtype(),
                        aligned16: byte_offset % 16 == 0,
                        shape: d.shape.clone(),
                        strides: d.strides.clone(),
                        block_shape: d.block_shape.clone(),
                    })
                }
            })
            .collect()
    }

    /// Traces (or fetches from the cache) the specialization this launch needs.
    pub fn compile(&self) -> Result<Compiled> {
        let specs = self.arg_specs()?;
        Ok(Compiled {
            spec: self.kernel.specialize(&specs, &self.constexprs)?.1,
        })
    }

    /// Compiles this launch's kernel for its device (as [`Launch::run`] would before
    /// its first launch) without running it: the autotuner compiles its
    /// configurations this way, several at a time, before it times them.
    pub fn prepare(&self) -> Result<()> {
        let specs = self.arg_specs()?;
        let (key, spec) = self.kernel.specialize(&specs, &self.constexprs)?;
        let options = self.options()?;
        self.device.backend.prepare(&key, &spec, &options)
    }

    /// The launch's options, its warps, stages and grid checked.
    fn options(&self) -> Result<LaunchOptions> {
        if !self.num_warps.is_power_of_two() || self.num_warps > 32 {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!(
                    "num_warps must be 1, 2, 4, 8, 16 or 32, not {}",
                    self.num_warps
                ),
            ));
        }
        if let Some(s) = self.num_stages.filter(|s| !(1..=8).contains(s)) {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("num_stages must be 1 to 8, not {s}"),
            ));
        }
        if self.grid.0.iter().any(|&d| d > 65_535 * 32_768) {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("grid {:?} is too large", self.grid.0),
            ));
        }
        Ok(LaunchOptions {
            num_warps: self.num_warps,
            num_stages: self.num_stages,
            checked: self.checked.unwrap_or_else(|| self.device.is_checked()),
        })
    }

    /// Specializes and runs the kernel. On queued backends the launch may still be
    /// running when this returns; downloads wait for it.
    pub fn run(self) -> Result<()> {
        let specs = self.arg_specs()?;
        let (key, spec) = self.kernel.specialize(&specs, &self.constexprs)?;
        let options = self.options()?;
        // Without descriptors each argument is one value: bound directly.
        if !self.args.iter().any(|a| matches!(a, Arg::Descriptor(_))) {
            let mut bound = Vec::with_capacity(spec.arg_indices.len());
            for &i in &spec.arg_indices {
                bound.push(match self.args.get(i) {
                    Some(Arg::Buffer(v)) => BoundArg::Buffer {
                        id: v.buffer.id(),
                        offset: v.offset,
                        len: v.len,
                    },
                    Some(Arg::Scalar(s)) => BoundArg::Scalar(*s),
                    _ => {
                        return Err(Diagnostic::internal(format!(
                            "specialization refers to missing argument value {i}"
                        )))
                    }
                });
            }
            return self
                .device
                .backend
                .launch(&key, &spec, self.grid, &bound, &options);
        }
        // Every runtime value of the arguments in order (a descriptor's buffer, shape
        // and strides); the specialization's parameters pick from them.
        let mut values = Vec::with_capacity(self.args.len());
        for arg in &self.args {
            let buffer = |v: &BufferView| BoundArg::Buffer {
                id: v.buffer.id(),
                offset: v.offset,
                len: v.len,
            };
            match arg {
                Arg::Buffer(v) => values.push(buffer(v)),
                Arg::Scalar(s) => values.push(BoundArg::Scalar(*s)),
                Arg::Descriptor(d) => {
                    values.push(buffer(&d.view));
                    let it = ArgSpec::descriptor_index_dtype(&d.shape, &d.strides);
                    for &x in d.shape.iter().chain(&d.strides) {
                        values.push(BoundArg::Scalar(ScalarValue::Int(it, x)));
                    }
                }
            }
        }
        let mut bound = Vec::with_capacity(spec.arg_indices.len());
        for &i in &spec.arg_indices {
            let value = values.get(i).ok_or_else(|| {
                Diagnostic::internal(format!(
                    "specialization refers to missing argument value {i}"
                ))
            })?;
            bound.push(*value);
        }
        self.device
            .backend
            .launch(&key, &spec, self.grid, &bound, &options)
    }
}
