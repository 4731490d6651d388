//! Devices in a worker process: a GPU executor that lives in a child process, so that
//! a kernel that ruins its context (a CUDA fault) never ruins this one, and a device
//! can be opened again after a fault the driver will not recover from in-process.
//!
//! [`crate::Device::isolated`] starts `tilewise worker` (the command-line binary: found
//! through `TILEWISE_WORKER`, next to the running executable, or on `PATH`) and speaks
//! to it over its standard input and output. Every [`Backend`] call is one request and
//! one response, each a frame: a little-endian `u32` length and a JSON header, then a
//! `u64` length and a payload of raw bytes (buffer contents). A launch sends the
//! specialization's tile IR as text the first time its key is seen (the worker parses
//! it with `ir::parse` and keeps it), then only the key; the worker compiles with its
//! own backend and its persistent cache. Errors come back as diagnostics with their
//! source line, re-attached here to the kernel's real source file.
//!
//! When the worker dies (a crash, a kill), every later call says so; a new isolated
//! device starts a new worker. A CUDA fault inside the worker loses that device only.

use crate::buffer::BufferId;
use crate::device::{Backend, BoundArg, DeviceKind, LaunchOptions};
use std::collections::HashSet;
use std::io::{BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use tilewise_core::diag::{Diagnostic, ErrorKind, Result, SourceFile};
use tilewise_core::frontend::Specialized;
use tilewise_core::ir::DType;
use tilewise_core::launch::{Grid, ScalarValue, SpecKey};

/// One request to the worker.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Request {
    /// Opens the device (`cuda:N` or `wgpu`); answered with `Opened`.
    Open {
        device: String,
    },
    Alloc {
        dtype: DType,
        len: usize,
    },
    /// The payload is the buffer's bytes.
    Write {
        id: usize,
    },
    Read {
        id: usize,
    },
    Free {
        id: usize,
    },
    /// Answered with `Address`.
    Address {
        id: usize,
    },
    Copy {
        src: usize,
        dst: usize,
        bytes: usize,
    },
    Launch {
        key: String,
        /// The tile IR, the first time `key` is launched.
        ir: Option<String>,
        arg_indices: Vec<usize>,
        grid: [u32; 3],
        args: Vec<WireArg>,
        num_warps: u32,
        num_stages: Option<u32>,
        checked: bool,
    },
    Synchronize,
    TimerBegin,
    TimerEnd,
    TakeWarnings,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
enum WireArg {
    Buffer {
        id: usize,
        offset: usize,
        len: usize,
    },
    Scalar(ScalarValue),
}

/// A response and the `tl.device_print` output of the request (printed here, on this
/// process's standard output, since the worker's is the channel).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Reply {
    response: Response,
    printed: String,
}

/// One response.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Response {
    Done,
    Opened {
        name: String,
        cuda: bool,
        compute_capability: Option<u32>,
    },
    Id(usize),
    Address(u64),
    /// The payload holds the bytes.
    Bytes,
    Started(bool),
    Elapsed(Option<f64>),
    Warnings(Vec<WireDiagnostic>),
    Failed(WireDiagnostic),
}

/// A diagnostic on the wire: its location as a source line (the worker's kernel text
/// has the lines of the source file, not its text).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct WireDiagnostic {
    kind: ErrorKind,
    message: String,
    notes: Vec<String>,
    line: Option<u32>,
    label: String,
}

impl WireDiagnostic {
    fn of(d: &Diagnostic) -> WireDiagnostic {
        WireDiagnostic {
            kind: d.kind,
            message: d.message.clone(),
            notes: d.notes.clone(),
            line: d.line(),
            label: d
                .primary
                .as_ref()
                .map(|l| l.text.clone())
                .unwrap_or_default(),
        }
    }

    /// The diagnostic, located in `source` where it names a line.
    fn into_diagnostic(self, source: Option<&Arc<SourceFile>>) -> Diagnostic {
        let mut d = Diagnostic::new(self.kind, self.message);
        d.notes = self.notes;
        if let (Some(line), Some(src)) = (self.line, source) {
            if let Some(start) = src.line_start(line) {
                let text = src.line_text(line);
                let indent = (text.len() - text.trim_start().len()) as u32;
                let span = tilewise_core::diag::Span::new(
                    start + indent,
                    start + text.trim_end().len() as u32,
                );
                d = d.at(span, self.label).with_source(src);
            }
        }
        d
    }
}

fn write_frame(
    w: &mut impl Write,
    header: &impl serde::Serialize,
    payload: &[u8],
) -> std::io::Result<()> {
    let json = serde_json::to_vec(header).map_err(std::io::Error::other)?;
    w.write_all(&(json.len() as u32).to_le_bytes())?;
    w.write_all(&json)?;
    w.write_all(&(payload.len() as u64).to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

fn read_frame<T: serde::de::DeserializeOwned>(r: &mut impl Read) -> std::io::Result<(T, Vec<u8>)> {
    let mut n = [0u8; 4];
    r.read_exact(&mut n)?;
    let mut json = vec![0u8; u32::from_le_bytes(n) as usize];
    r.read_exact(&mut json)?;
    let header = serde_json::from_slice(&json).map_err(std::io::Error::other)?;
    let mut m = [0u8; 8];
    r.read_exact(&mut m)?;
    let len = u64::from_le_bytes(m) as usize;
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok((header, payload))
}

/// The executable that serves as the worker (see the module docs).
fn worker_executable() -> Result<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("TILEWISE_WORKER").filter(|p| !p.is_empty()) {
        return Ok(p.into());
    }
    let name = format!("tilewise{}", std::env::consts::EXE_SUFFIX);
    if let Ok(me) = std::env::current_exe() {
        if me.file_name().is_some_and(|n| n == name.as_str()) {
            return Ok(me);
        }
        // Next to this executable, or one folder up (cargo's `deps/` for tests).
        for dir in me.ancestors().skip(1).take(2) {
            let candidate = dir.join(&name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(&name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(Diagnostic::new(
        ErrorKind::Backend,
        "no `tilewise` executable to run a worker process",
    )
    .with_note("install it with `cargo install --path cli`, or set TILEWISE_WORKER to its path"))
}

struct Channel {
    child: Child,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
}

/// A device served by a worker process.
pub(crate) struct WorkerBackend {
    channel: Mutex<Channel>,
    name: String,
    cuda: bool,
    compute_capability: Option<u32>,
    /// Keys whose tile IR the worker has.
    sent: Mutex<HashSet<String>>,
    /// Why the worker is gone, once it is.
    dead: Mutex<Option<Diagnostic>>,
}

fn lock_error() -> Diagnostic {
    Diagnostic::internal("a worker device's lock is poisoned")
}

impl WorkerBackend {
    /// Starts a worker and opens `device` (`cuda:N` or `wgpu`) in it.
    pub fn start(device: &str) -> Result<WorkerBackend> {
        let exe = worker_executable()?;
        let mut child = Command::new(&exe)
            .arg("worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                Diagnostic::new(
                    ErrorKind::Backend,
                    format!("cannot start the worker process {}: {e}", exe.display()),
                )
            })?;
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Diagnostic::internal("the worker process has no pipes"));
        };
        log::info!(
            "worker: started {} (pid {}) for {device}",
            exe.display(),
            child.id()
        );
        let mut backend = WorkerBackend {
            channel: Mutex::new(Channel {
                child,
                to: BufWriter::new(to),
                from: BufReader::new(from),
            }),
            name: format!("worker for {device}"),
            cuda: false,
            compute_capability: None,
            sent: Mutex::new(HashSet::new()),
            dead: Mutex::new(None),
        };
        let request = Request::Open {
            device: device.to_string(),
        };
        match backend.call(&request, &[], None)? {
            (
                Response::Opened {
                    name,
                    cuda,
                    compute_capability,
                },
                _,
            ) => {
                backend.name = format!("{name} (in a worker process)");
                backend.cuda = cuda;
                backend.compute_capability = compute_capability;
                Ok(backend)
            }
            (other, _) => Err(Diagnostic::internal(format!(
                "the worker answered {other:?} to opening {device}"
            ))),
        }
    }

    /// One request and its response; a failure response becomes the error (located in
    /// `source` where it names a line).
    fn call(
        &self,
        request: &Request,
        payload: &[u8],
        source: Option<&Arc<SourceFile>>,
    ) -> Result<(Response, Vec<u8>)> {
        if let Some(d) = self.dead.lock().map_err(|_| lock_error())?.as_ref() {
            return Err(d.clone());
        }
        let mut ch = self.channel.lock().map_err(|_| lock_error())?;
        let result = write_frame(&mut ch.to, request, payload)
            .and_then(|()| read_frame::<Reply>(&mut ch.from));
        if let Ok((reply, _)) = &result {
            if !reply.printed.is_empty() {
                print!("{}", reply.printed);
            }
        }
        match result {
            Ok((
                Reply {
                    response: Response::Failed(d),
                    ..
                },
                _,
            )) => Err(d.into_diagnostic(source)),
            Ok((reply, bytes)) => Ok((reply.response, bytes)),
            Err(e) => {
                let status = ch.child.try_wait().ok().flatten();
                let d = Diagnostic::new(
                    ErrorKind::Runtime,
                    format!(
                        "the worker process of `{}` is gone ({}): {e}",
                        self.name,
                        status.map_or("still running".to_string(), |s| s.to_string())
                    ),
                )
                .with_note("open a new device (`Device::isolated`) to start another worker");
                *self.dead.lock().map_err(|_| lock_error())? = Some(d.clone());
                Err(d)
            }
        }
    }

    fn done(&self, request: &Request, payload: &[u8]) -> Result<()> {
        self.call(request, payload, None).map(|_| ())
    }
}

impl Drop for WorkerBackend {
    fn drop(&mut self) {
        if let Ok(ch) = self.channel.get_mut() {
            // Closing its input ends the worker's loop; a stuck one is killed.
            let _ = ch.to.flush();
            if ch.child.try_wait().ok().flatten().is_none() {
                let _ = ch.child.kill();
            }
            let _ = ch.child.wait();
        }
    }
}

impl Backend for WorkerBackend {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn kind(&self) -> DeviceKind {
        if self.cuda {
            DeviceKind::Cuda
        } else {
            DeviceKind::Wgpu
        }
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    fn alloc(&self, dtype: DType, len: usize) -> Result<BufferId> {
        match self.call(&Request::Alloc { dtype, len }, &[], None)? {
            (Response::Id(id), _) => Ok(BufferId(id)),
            (other, _) => Err(Diagnostic::internal(format!(
                "worker answered {other:?} to alloc"
            ))),
        }
    }

    fn write(&self, id: BufferId, bytes: &[u8]) -> Result<()> {
        self.done(&Request::Write { id: id.0 }, bytes)
    }

    fn read(&self, id: BufferId) -> Result<Vec<u8>> {
        Ok(self.call(&Request::Read { id: id.0 }, &[], None)?.1)
    }

    fn free(&self, id: BufferId) {
        let _ = self.done(&Request::Free { id: id.0 }, &[]);
    }

    fn address(&self, id: BufferId) -> Result<u64> {
        match self.call(&Request::Address { id: id.0 }, &[], None)? {
            (Response::Address(a), _) => Ok(a),
            (other, _) => Err(Diagnostic::internal(format!(
                "worker answered {other:?} to address"
            ))),
        }
    }

    fn copy(&self, src: BufferId, dst: BufferId, bytes: usize) -> Result<()> {
        self.done(
            &Request::Copy {
                src: src.0,
                dst: dst.0,
                bytes,
            },
            &[],
        )
    }

    fn launch(
        &self,
        key: &SpecKey,
        spec: &Specialized,
        grid: Grid,
        args: &[BoundArg],
        options: &LaunchOptions,
    ) -> Result<()> {
        let first = !self.sent.lock().map_err(|_| lock_error())?.contains(&key.0);
        let request = Request::Launch {
            key: key.0.clone(),
            ir: first.then(|| tilewise_core::ir::print(&spec.kernel)),
            arg_indices: spec.arg_indices.clone(),
            grid: grid.0,
            args: args
                .iter()
                .map(|a| match *a {
                    BoundArg::Buffer { id, offset, len } => WireArg::Buffer {
                        id: id.0,
                        offset,
                        len,
                    },
                    BoundArg::Scalar(s) => WireArg::Scalar(s),
                })
                .collect(),
            num_warps: options.num_warps,
            num_stages: options.num_stages,
            checked: options.checked,
        };
        self.call(&request, &[], Some(&spec.kernel.source))?;
        if first {
            self.sent
                .lock()
                .map_err(|_| lock_error())?
                .insert(key.0.clone());
        }
        Ok(())
    }

    fn take_warnings(&self) -> Vec<Diagnostic> {
        match self.call(&Request::TakeWarnings, &[], None) {
            Ok((Response::Warnings(w), _)) => {
                w.into_iter().map(|d| d.into_diagnostic(None)).collect()
            }
            _ => vec![],
        }
    }

    fn synchronize(&self) -> Result<()> {
        self.done(&Request::Synchronize, &[])
    }

    fn timer_begin(&self) -> Result<bool> {
        match self.call(&Request::TimerBegin, &[], None)? {
            (Response::Started(b), _) => Ok(b),
            (other, _) => Err(Diagnostic::internal(format!(
                "worker answered {other:?} to a timer"
            ))),
        }
    }

    fn timer_end(&self) -> Result<Option<f64>> {
        match self.call(&Request::TimerEnd, &[], None)? {
            (Response::Elapsed(t), _) => Ok(t),
            (other, _) => Err(Diagnostic::internal(format!(
                "worker answered {other:?} to a timer"
            ))),
        }
    }
}

/// Serves one device over standard input and output until the input closes (the
/// `tilewise worker` command). Errors of single requests go back to the parent; only a
/// broken pipe ends the loop.
pub fn serve() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut input = BufReader::new(stdin.lock());
    let mut output = BufWriter::new(stdout.lock());
    crate::checked::capture_prints();
    let mut device: Option<crate::Device> = None;
    let mut kernels: std::collections::HashMap<String, Arc<Specialized>> = Default::default();
    loop {
        let (request, payload): (Request, Vec<u8>) = match read_frame(&mut input) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        };
        let answer = handle(&mut device, &mut kernels, request, payload);
        let (response, bytes) = match answer {
            Ok(r) => r,
            Err(d) => (Response::Failed(WireDiagnostic::of(&d)), vec![]),
        };
        let reply = Reply {
            response,
            printed: crate::checked::take_captured_prints(),
        };
        write_frame(&mut output, &reply, &bytes)?;
    }
}

fn handle(
    device: &mut Option<crate::Device>,
    kernels: &mut std::collections::HashMap<String, Arc<Specialized>>,
    request: Request,
    payload: Vec<u8>,
) -> Result<(Response, Vec<u8>)> {
    if let Request::Open { device: which } = &request {
        let dev = match which.as_str() {
            "wgpu" => crate::Device::wgpu()?,
            cuda => {
                let n = match cuda.strip_prefix("cuda") {
                    Some("") => 0,
                    Some(rest) => rest.trim_start_matches(':').parse().map_err(|_| {
                        Diagnostic::new(ErrorKind::Argument, format!("unknown device `{which}`"))
                    })?,
                    None => {
                        return Err(Diagnostic::new(
                            ErrorKind::Argument,
                            format!("unknown device `{which}` (cuda:N or wgpu)"),
                        ))
                    }
                };
                crate::Device::cuda(n)?
            }
        };
        let answer = Response::Opened {
            name: dev.name(),
            cuda: dev.kind() == DeviceKind::Cuda,
            compute_capability: dev.compute_capability(),
        };
        *device = Some(dev);
        return Ok((answer, vec![]));
    }
    let dev = device.as_ref().ok_or_else(|| {
        Diagnostic::internal("the worker was asked to work before opening a device")
    })?;
    let backend = &dev.backend;
    let done = Ok((Response::Done, vec![]));
    match request {
        Request::Open { .. } => unreachable!("handled above"),
        Request::Alloc { dtype, len } => Ok((Response::Id(backend.alloc(dtype, len)?.0), vec![])),
        Request::Write { id } => backend.write(BufferId(id), &payload).and(done),
        Request::Read { id } => {
            backend.synchronize()?;
            Ok((Response::Bytes, backend.read(BufferId(id))?))
        }
        Request::Free { id } => {
            backend.free(BufferId(id));
            done
        }
        Request::Address { id } => Ok((Response::Address(backend.address(BufferId(id))?), vec![])),
        Request::Copy { src, dst, bytes } => {
            backend.copy(BufferId(src), BufferId(dst), bytes).and(done)
        }
        Request::Launch {
            key,
            ir,
            arg_indices,
            grid,
            args,
            num_warps,
            num_stages,
            checked,
        } => {
            let spec = match (kernels.get(&key), ir) {
                (Some(s), _) => s.clone(),
                (None, Some(text)) => {
                    let kernel = tilewise_core::ir::parse(&text)?;
                    let s = Arc::new(Specialized {
                        kernel,
                        arg_indices,
                        static_prints: vec![],
                    });
                    kernels.insert(key.clone(), s.clone());
                    s
                }
                (None, None) => {
                    return Err(Diagnostic::internal(format!(
                        "the worker has no kernel for key {key}"
                    )))
                }
            };
            let bound: Vec<BoundArg> = args
                .into_iter()
                .map(|a| match a {
                    WireArg::Buffer { id, offset, len } => BoundArg::Buffer {
                        id: BufferId(id),
                        offset,
                        len,
                    },
                    WireArg::Scalar(s) => BoundArg::Scalar(s),
                })
                .collect();
            let options = LaunchOptions {
                num_warps,
                num_stages,
                checked,
            };
            backend
                .launch(&SpecKey(key), &spec, Grid(grid), &bound, &options)
                .and(done)
        }
        Request::Synchronize => backend.synchronize().and(done),
        Request::TimerBegin => Ok((Response::Started(backend.timer_begin()?), vec![])),
        Request::TimerEnd => Ok((Response::Elapsed(backend.timer_end()?), vec![])),
        Request::TakeWarnings => Ok((
            Response::Warnings(
                backend
                    .take_warnings()
                    .iter()
                    .map(WireDiagnostic::of)
                    .collect(),
            ),
            vec![],
        )),
    }
}
