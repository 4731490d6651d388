//! The CUDA driver runtime: device, memory, PTX modules, launches and timing events.
//!
//! Built on cudarc's driver bindings with dynamic loading, so it compiles and links on
//! machines without CUDA. Before the first driver call, [`probe_driver`] checks that
//! `libcuda` can be loaded (cudarc would panic otherwise); without it every entry point
//! returns a backend [`Diagnostic`].
//!
//! One [`CudaRuntime`] owns a context and one stream; allocations, copies, launches,
//! cuBLAS calls and events all go on that stream in order. Memory is handled as raw
//! device addresses ([`DeviceMemory::address`]) so that callers can bind sub-ranges of
//! buffers as kernel arguments ([`KernelArg::U64`]).

use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use cudarc::driver::result::{self as cu, DriverError};
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use tilewise_core::ir::DType;
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// Checks once per process that the CUDA driver library (`libcuda.so`) can be loaded,
/// trying the same library names as cudarc. The error says which names were tried.
pub fn probe_driver() -> Result<()> {
    static PROBE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            let mut first_error = None;
            for name in ["cuda", "nvcuda"]
                .iter()
                .flat_map(|l| cudarc::get_lib_name_candidates(l))
            {
                // SAFETY: loading libcuda runs only its initialisers, as cudarc does.
                match unsafe { libloading::Library::new(&name) } {
                    Ok(_) => return Ok(()),
                    Err(e) => {
                        let why = std::error::Error::source(&e)
                            .map_or_else(|| e.to_string(), |s| s.to_string());
                        first_error.get_or_insert(why);
                    }
                }
            }
            Err(first_error.unwrap_or_default())
        })
        .clone()
        .map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!("no CUDA driver found (libcuda.so could not be loaded): {e}"),
            )
        })
}

/// A driver error as a diagnostic of `kind`, saying what was being done.
fn driver_error(kind: ErrorKind, what: &str, e: DriverError) -> Diagnostic {
    let text = e
        .error_string()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Diagnostic::new(kind, format!("CUDA {what} failed: {:?}: {text}", e.0))
}

/// Maps a driver error to a backend diagnostic about `what`.
fn backend(what: &'static str) -> impl Fn(DriverError) -> Diagnostic {
    move |e| driver_error(ErrorKind::Backend, what, e)
}

/// Runs driver initialisation that cudarc may panic in (a missing symbol), as an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> std::result::Result<T, DriverError>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| driver_error(ErrorKind::Backend, what, e)),
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(Diagnostic::new(
                ErrorKind::Backend,
                format!("CUDA {what} failed: the driver library is unusable: {text}"),
            ))
        }
    }
}

/// Runs a driver JIT call with verbose info and error logs of 64 KiB; returns the info
/// log, or the error with the error log (the info log when that is empty).
fn with_jit_logs(
    call: impl FnOnce(&mut [sys::CUjit_option], &mut [*mut c_void]) -> sys::CUresult,
) -> std::result::Result<String, (DriverError, String)> {
    const LOG: usize = 1 << 16;
    let mut info_log = vec![0u8; LOG];
    let mut error_log = vec![0u8; LOG];
    use sys::CUjit_option as J;
    let mut options = [
        J::CU_JIT_INFO_LOG_BUFFER,
        J::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        J::CU_JIT_ERROR_LOG_BUFFER,
        J::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        J::CU_JIT_LOG_VERBOSE,
    ];
    // Sizes and flags are passed as integers in the pointer slots, as the API says.
    let mut values: [*mut c_void; 5] = [
        info_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG),
        error_log.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(LOG),
        std::ptr::without_provenance_mut(1),
    ];
    let status = call(&mut options, &mut values);
    let text = |buf: &[u8]| {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
    };
    let (info_log, error_log) = (text(&info_log), text(&error_log));
    match status.result() {
        Ok(()) => Ok(info_log),
        Err(e) => Err((
            e,
            if error_log.is_empty() {
                info_log
            } else {
                error_log
            },
        )),
    }
}

/// The internal error for a PTX the driver refused, with its log and the lines named.
fn rejected_ptx(entry: &str, ptx: &str, e: DriverError, log: &str) -> Diagnostic {
    let name = e.error_string().map(|s| s.to_string_lossy().into_owned());
    Diagnostic::internal(format!(
        "the CUDA driver rejected the PTX of kernel `{entry}` ({:?}: {}):\n{log}{}",
        e.0,
        name.unwrap_or_default(),
        crate::ptxas::quote_ptx_lines(log, ptx)
    ))
}

/// Per device ordinal: how many times its primary context was reset after a sticky
/// error, and whether it is lost now (a reset pending). A runtime remembers the
/// generation it was opened in; after a reset its handles belong to a destroyed
/// context and it must neither use nor free them.
static CONTEXTS: std::sync::Mutex<Vec<(usize, u64, bool)>> = std::sync::Mutex::new(Vec::new());

fn contexts() -> std::sync::MutexGuard<'static, Vec<(usize, u64, bool)>> {
    CONTEXTS.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many primary contexts were reset in this process (any device): a runtime opened
/// since the last reset is current without looking at [`CONTEXTS`] (every launch asks).
static RESETS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn generation(ordinal: usize) -> (u64, bool) {
    contexts()
        .iter()
        .find(|(o, _, _)| *o == ordinal)
        .map_or((0, false), |&(_, g, lost)| (g, lost))
}

/// Whether device `ordinal`'s context was lost to a fault in this process and not
/// opened again since (the driver refused a fresh one).
pub fn lost_in_process(ordinal: usize) -> bool {
    generation(ordinal).1
}

/// Records that device `ordinal`'s context is lost (a sticky error: a kernel faulted);
/// the next [`CudaRuntime::new`] for it resets the primary context first.
pub fn mark_context_lost(ordinal: usize) {
    let mut c = contexts();
    match c.iter_mut().find(|(o, _, _)| *o == ordinal) {
        Some(e) => e.2 = true,
        None => c.push((ordinal, 0, true)),
    }
}

/// One CUDA device with its context (the primary one, unless a sticky error ruined it
/// in this process) and one stream that all work goes on.
pub struct CudaRuntime {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    compute_capability: (u32, u32),
    shared_optin: u32,
    multiprocessors: u32,
    driver_version: u32,
    max_grid: [u32; 3],
    max_block: [u32; 3],
    /// The context generation it was opened in (see [`mark_context_lost`]).
    generation: u64,
    /// [`RESETS`] when it was opened.
    resets_at_open: u64,
}

impl std::fmt::Debug for CudaRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaRuntime")
            .field("ordinal", &self.ctx.ordinal())
            .field("name", &self.name)
            .field("compute_capability", &self.compute_capability)
            .finish()
    }
}

impl CudaRuntime {
    /// Opens device `ordinal`: retains its primary context and creates a stream. A
    /// backend error when there is no driver, no such device or the driver fails.
    pub fn new(ordinal: usize) -> Result<Self> {
        probe_driver()?;
        let count = Self::device_count()?;
        if ordinal >= count {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!("no CUDA device {ordinal}: the driver sees {count} device(s)"),
            ));
        }
        let after_fault = generation(ordinal).1;
        if after_fault {
            Self::reset_primary(ordinal)?;
        }
        let resets_at_open = RESETS.load(Ordering::Acquire);
        let generation = generation(ordinal).0;
        let ctx = guarded("context creation", || CudaContext::new(ordinal)).map_err(|e| {
            if !after_fault {
                return e;
            }
            // The H200's driver (CUDA 13) refuses every new context of a process
            // whose context faulted, the reset primary one included.
            mark_context_lost(ordinal);
            Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "CUDA device {ordinal} was lost to a kernel fault earlier in this process, and the driver gives this process no new context on it: {}",
                    e.message
                ),
            )
            .with_note("restart the process to use the GPU again")
            .with_note("checked mode (`Device::checked`, `TILEWISE_CHECKED=1`) reports such accesses with their line before they fault, and the device stays usable")
        })?;
        let stream = ctx.new_stream().map_err(backend("stream creation"))?;
        let attr = |a: sys::CUdevice_attribute| -> Result<u32> {
            let v = ctx
                .attribute(a)
                .map_err(backend("device attribute query"))?;
            Ok(v.max(0) as u32)
        };
        use sys::CUdevice_attribute as A;
        let mut version = 0;
        // SAFETY: writes one int.
        unsafe { sys::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(backend("driver version query"))?;
        Ok(CudaRuntime {
            name: ctx.name().map_err(backend("device name query"))?,
            compute_capability: (
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            shared_optin: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            multiprocessors: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            driver_version: version.max(0) as u32,
            max_grid: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_block: [
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            ctx,
            stream,
            generation,
            resets_at_open,
        })
    }

    /// Destroys device `ordinal`'s primary context after a sticky error, so that the
    /// next retain creates a fresh one (the driver's recovery for a faulted context;
    /// every handle of the old context is dead from here on).
    fn reset_primary(ordinal: usize) -> Result<()> {
        let device = guarded("device lookup", || {
            cudarc::driver::result::device::get(ordinal as i32)
        })?;
        // SAFETY: a driver call on a valid device handle; the runtimes of the old
        // context see the new generation and stop using their handles.
        unsafe { sys::cuDevicePrimaryCtxReset_v2(device) }
            .result()
            .map_err(|e| {
                driver_error(ErrorKind::Backend, "reset of the context lost to a fault", e)
                    .with_note("the driver refuses a fresh context in this process after the fault; restart the process")
            })?;
        let mut c = contexts();
        if let Some(e) = c.iter_mut().find(|(o, _, _)| *o == ordinal) {
            e.1 += 1;
            e.2 = false;
        }
        RESETS.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Whether this runtime's context is still the device's (not reset after a fault
    /// since it was opened).
    pub fn is_current(&self) -> bool {
        if RESETS.load(Ordering::Acquire) == self.resets_at_open {
            return true;
        }
        generation(self.ctx.ordinal()).0 == self.generation
    }

    /// How many CUDA devices the driver sees (a backend error without a driver).
    pub fn device_count() -> Result<usize> {
        probe_driver()?;
        let n = guarded("device count query", CudaContext::device_count)?;
        Ok(n.max(0) as usize)
    }

    /// The device's name, such as `NVIDIA H200`.
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The device's compute capability (major, minor), such as (9, 0).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.compute_capability
    }

    /// The `-arch`/`.target` name of the device, such as `sm_90`.
    pub fn sm_arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// The most shared memory (static plus dynamic) one block may use after opting in,
    /// in bytes (227 KiB on H100/H200).
    pub fn max_shared_per_block_optin(&self) -> u32 {
        self.shared_optin
    }

    /// The number of streaming multiprocessors.
    pub fn multiprocessor_count(&self) -> u32 {
        self.multiprocessors
    }

    /// The driver's CUDA version as 1000 * major + 10 * minor (13000 for CUDA 13.0).
    pub fn driver_version(&self) -> u32 {
        self.driver_version
    }

    /// The context, for crate code that calls the driver or cuBLAS directly.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The runtime's stream, for crate code that enqueues work directly.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(backend("context binding"))
    }

    /// Allocates `bytes` of device memory, zeroed on the stream. Zero bytes is allowed
    /// (one byte is allocated so the address is valid).
    pub fn alloc_zeroed(&self, bytes: usize) -> Result<DeviceMemory> {
        self.bind()?;
        // SAFETY: a plain allocation; freed once, in Drop.
        let ptr = unsafe { cu::malloc_sync(bytes.max(1)) }.map_err(|e| {
            driver_error(
                ErrorKind::Backend,
                &format!("allocation of {bytes} bytes"),
                e,
            )
        })?;
        let mem = DeviceMemory {
            ptr,
            len: bytes,
            ctx: self.ctx.clone(),
        };
        // SAFETY: the range was just allocated.
        unsafe { cu::memset_d8_async(ptr, 0, bytes.max(1), self.stream.cu_stream()) }
            .map_err(backend("memset"))?;
        Ok(mem)
    }

    /// Copies `data` into `mem` at byte `offset`, ordered after earlier work on the
    /// stream; returns when the copy is done.
    pub fn write(&self, mem: &DeviceMemory, offset_bytes: usize, data: &[u8]) -> Result<()> {
        check_range("write", mem, offset_bytes, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the destination range is inside the allocation (checked above), and
        // `data` outlives the copy because the stream is synchronized before returning.
        unsafe { cu::memcpy_htod_async(mem.ptr + offset_bytes as u64, data, self.cu_stream()) }
            .map_err(backend("host-to-device copy"))?;
        self.synchronize()
    }

    /// Waits for all work on the stream, then copies the whole of `mem` back.
    pub fn read(&self, mem: &DeviceMemory) -> Result<Vec<u8>> {
        self.synchronize()?;
        let mut out = vec![0u8; mem.len];
        if mem.len == 0 {
            return Ok(out);
        }
        // SAFETY: `out` has exactly the allocation's length and lives until the stream
        // is synchronized below.
        unsafe { cu::memcpy_dtoh_async(&mut out, mem.ptr, self.cu_stream()) }
            .map_err(backend("device-to-host copy"))?;
        self.synchronize()?;
        Ok(out)
    }

    /// Enqueues a device-to-device copy of the first `bytes` of `src` into `dst` on the
    /// stream (does not wait; events around it time the memory bandwidth).
    pub fn copy(&self, src: &DeviceMemory, dst: &DeviceMemory, bytes: usize) -> Result<()> {
        check_range("copy source", src, 0, bytes)?;
        check_range("copy destination", dst, 0, bytes)?;
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges are inside their allocations.
        unsafe { cu::memcpy_dtod_async(dst.ptr, src.ptr, bytes, self.cu_stream()) }
            .map_err(backend("device-to-device copy"))
    }

    /// Waits until all work on the stream has finished. A kernel that faulted shows up
    /// here as a runtime error.
    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error(ErrorKind::Runtime, "stream synchronization", e))
    }

    fn cu_stream(&self) -> sys::CUstream {
        self.stream.cu_stream()
    }

    /// JIT-compiles a PTX module for this device and looks up its entry `entry`. The
    /// driver's info log (verbose) is kept in [`LoadedFunction::jit_log`]; a PTX the
    /// driver rejects is an internal error with its error log and the PTX lines named.
    pub fn load_module(&self, ptx: &str, entry: &str) -> Result<LoadedFunction> {
        let image = CString::new(ptx).map_err(|_| {
            Diagnostic::internal(format!("the PTX of kernel `{entry}` contains a NUL byte"))
        })?;
        self.bind()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        let info_log = with_jit_logs(|options, values| {
            // SAFETY: the option arrays have equal lengths, the log buffers outlive the
            // call and `image` is a NUL-terminated PTX text.
            unsafe {
                sys::cuModuleLoadDataEx(
                    &mut module,
                    image.as_ptr().cast(),
                    options.len() as u32,
                    options.as_mut_ptr(),
                    values.as_mut_ptr(),
                )
            }
        })
        .map_err(|(e, log)| rejected_ptx(entry, ptx, e, &log))?;
        self.function_of(module, entry, info_log)
    }

    /// JIT-compiles a PTX module through the driver's linker and returns the device
    /// image it produces (a cubin for this GPU and driver), with the linker's info log:
    /// what the persistent cache stores and [`CudaRuntime::load_cubin`] loads without a
    /// JIT.
    pub fn link_cubin(&self, ptx: &str, entry: &str) -> Result<(Vec<u8>, String)> {
        let image = CString::new(ptx).map_err(|_| {
            Diagnostic::internal(format!("the PTX of kernel `{entry}` contains a NUL byte"))
        })?;
        self.bind()?;
        let mut state: sys::CUlinkState = std::ptr::null_mut();
        let mut cubin = vec![];
        let name = CString::new(format!("{entry}.ptx")).expect("no NUL in a kernel name");
        let info_log = with_jit_logs(|options, values| {
            // SAFETY: the option arrays have equal lengths and outlive the link state
            // (destroyed below, before they go); `image` is NUL-terminated PTX and its
            // length counts the NUL; the cubin the driver returns belongs to the state
            // and is copied out before the state is destroyed.
            unsafe {
                let mut status = sys::cuLinkCreate_v2(
                    options.len() as u32,
                    options.as_mut_ptr(),
                    values.as_mut_ptr(),
                    &mut state,
                );
                if status == sys::CUresult::CUDA_SUCCESS {
                    status = sys::cuLinkAddData_v2(
                        state,
                        sys::CUjitInputType::CU_JIT_INPUT_PTX,
                        image.as_ptr() as *mut c_void,
                        image.as_bytes_with_nul().len(),
                        name.as_ptr(),
                        0,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    );
                }
                if status == sys::CUresult::CUDA_SUCCESS {
                    let mut out: *mut c_void = std::ptr::null_mut();
                    let mut size = 0usize;
                    status = sys::cuLinkComplete(state, &mut out, &mut size);
                    if status == sys::CUresult::CUDA_SUCCESS && !out.is_null() {
                        cubin = std::slice::from_raw_parts(out as *const u8, size).to_vec();
                    }
                }
                if !state.is_null() {
                    sys::cuLinkDestroy(state);
                }
                status
            }
        })
        .map_err(|(e, log)| rejected_ptx(entry, ptx, e, &log))?;
        if cubin.is_empty() {
            return Err(Diagnostic::internal(format!(
                "the CUDA driver's linker returned no image for kernel `{entry}`"
            )));
        }
        Ok((cubin, info_log))
    }

    /// Loads a device image made by [`CudaRuntime::link_cubin`] (in this process or
    /// another one with the same GPU and driver) and looks up its entry `entry`. An
    /// image the driver refuses (another GPU, a damaged file) is a backend error: the
    /// caller compiles anew.
    pub fn load_cubin(&self, cubin: &[u8], entry: &str, jit_log: String) -> Result<LoadedFunction> {
        self.bind()?;
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: the driver reads the image (an ELF whose header says its size) and
        // rejects a malformed one with an error.
        unsafe { sys::cuModuleLoadData(&mut module, cubin.as_ptr().cast()) }
            .result()
            .map_err(|e| driver_error(ErrorKind::Backend, "loading a cached device image", e))?;
        self.function_of(module, entry, jit_log)
    }

    /// The function `entry` of a loaded module, with its attributes.
    fn function_of(
        &self,
        module: sys::CUmodule,
        entry: &str,
        info_log: String,
    ) -> Result<LoadedFunction> {
        let entry_c = CString::new(entry)
            .map_err(|_| Diagnostic::internal(format!("bad kernel name {entry:?}")))?;
        let mut func = LoadedFunction {
            module,
            function: std::ptr::null_mut(),
            name: entry.to_string(),
            ctx: self.ctx.clone(),
            jit_log: info_log,
            registers: 0,
            local_bytes: 0,
            static_shared_bytes: 0,
            max_threads: 0,
            shared_optin: self.shared_optin,
            max_dynamic_shared: AtomicU32::new(0),
            param_sizes: None,
        };
        // SAFETY: `module` is loaded and `entry_c` NUL-terminated.
        unsafe { sys::cuModuleGetFunction(&mut func.function, module, entry_c.as_ptr()) }
            .result()
            .map_err(|e| {
                Diagnostic::internal(format!(
                    "the PTX module has no kernel `{entry}` ({:?})",
                    e.0
                ))
            })?;
        use sys::CUfunction_attribute as F;
        func.registers = func.attribute(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?;
        func.local_bytes = func.attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?;
        func.static_shared_bytes = func.attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        func.max_threads = func.attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        let max_dyn = func.attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        func.max_dynamic_shared.store(max_dyn, Ordering::Relaxed);
        if self.driver_version >= 12040 {
            func.param_sizes = Some(param_sizes(func.function));
        }
        Ok(func)
    }

    /// Enqueues `func` on the stream with `grid` blocks of `block` threads,
    /// `dynamic_shared_bytes` of dynamic shared memory (the function's limit is raised
    /// as needed, see [`LoadedFunction::set_max_dynamic_shared`]) and `args` in order.
    /// Checks the grid and block against the device limits and, on drivers that report
    /// them (12.4+), the argument count and sizes against the kernel's parameters.
    pub fn launch(
        &self,
        func: &LoadedFunction,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared_bytes: u32,
        args: &[KernelArg],
    ) -> Result<()> {
        let launch_error = |msg: String| {
            Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("cannot launch `{}`: {msg}", func.name),
            ))
        };
        for (axis, (&g, &max)) in ["x", "y", "z"]
            .iter()
            .zip(grid.iter().zip(self.max_grid.iter()))
        {
            if g == 0 || g > max {
                return launch_error(format!(
                    "grid {grid:?}: {axis} is {g}, must be 1..={max} on this device"
                ));
            }
        }
        for (axis, (&b, &max)) in ["x", "y", "z"]
            .iter()
            .zip(block.iter().zip(self.max_block.iter()))
        {
            if b == 0 || b > max {
                return launch_error(format!(
                    "block {block:?}: {axis} is {b}, must be 1..={max} on this device"
                ));
            }
        }
        let threads = block.iter().map(|&b| b as u64).product::<u64>();
        if threads > func.max_threads as u64 {
            return launch_error(format!(
                "block {block:?} has {threads} threads; this kernel allows at most {} \
                 (it uses {} registers per thread)",
                func.max_threads, func.registers
            ));
        }
        if dynamic_shared_bytes > func.max_dynamic_shared.load(Ordering::Relaxed) {
            func.set_max_dynamic_shared(dynamic_shared_bytes)?;
        }
        if let Some(sizes) = &func.param_sizes {
            if sizes.len() != args.len() {
                return launch_error(format!(
                    "the kernel takes {} parameters, {} arguments were given",
                    sizes.len(),
                    args.len()
                ));
            }
            for (i, (size, arg)) in sizes.iter().zip(args).enumerate() {
                if *size != arg.size() {
                    return launch_error(format!(
                        "parameter {i} is {size} bytes, the argument {arg:?} is {}",
                        arg.size()
                    ));
                }
            }
        }
        // Each argument in its own 8-byte slot; the driver reads the parameter's size.
        // On the stack for up to 32 arguments (every launch goes through here).
        const ON_STACK: usize = 32;
        let mut slot_array = [0u64; ON_STACK];
        let mut slot_vec: Vec<u64>;
        let slots: &mut [u64] = if args.len() <= ON_STACK {
            for (s, a) in slot_array.iter_mut().zip(args) {
                *s = a.slot();
            }
            &mut slot_array[..args.len()]
        } else {
            slot_vec = args.iter().map(KernelArg::slot).collect();
            &mut slot_vec
        };
        let mut ptr_array = [std::ptr::null_mut::<c_void>(); ON_STACK];
        let mut ptr_vec: Vec<*mut c_void>;
        // A tensor map is read from its own aligned bytes, not a slot.
        let address = |s: &mut u64, a: &KernelArg| -> *mut c_void {
            match a {
                KernelArg::TensorMap(m) => (&**m as *const TensorMapBytes).cast_mut().cast(),
                _ => (s as *mut u64).cast::<c_void>(),
            }
        };
        let params: &mut [*mut c_void] = if slots.len() <= ON_STACK {
            for ((p, s), a) in ptr_array.iter_mut().zip(slots.iter_mut()).zip(args) {
                *p = address(s, a);
            }
            &mut ptr_array[..slots.len()]
        } else {
            ptr_vec = slots
                .iter_mut()
                .zip(args)
                .map(|(s, a)| address(s, a))
                .collect();
            &mut ptr_vec
        };
        self.bind()?;
        // SAFETY: `params` points at one value per kernel parameter (checked above where
        // the driver can tell), alive for the call; cuLaunchKernel copies them.
        unsafe {
            cu::launch_kernel(
                func.function,
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                dynamic_shared_bytes,
                self.cu_stream(),
                params,
            )
        }
        .map_err(|e| driver_error(ErrorKind::Launch, &format!("launch of `{}`", func.name), e))
    }

    /// Encodes a tiled tensor map (`cuTensorMapEncodeTiled`). What the hardware needs
    /// is checked first, each broken rule a launch error that names it: the address
    /// 16-byte aligned, the strides multiples of 16 bytes below 2^40, the extents from
    /// 1 to 2^32, the boxes at most 256 elements a side, no wider than the swizzle.
    pub fn encode_tensor_map(&self, m: &TensorMapRequest) -> Result<TensorMapBytes> {
        let (data_type, swizzle) = m.check()?;
        let rank = m.dims.len();
        let element_strides = vec![1u32; rank];
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        self.bind()?;
        // SAFETY: every array holds `rank` entries (`strides` rank - 1, as the driver
        // reads), checked above; `map` is a CUtensorMap the driver writes.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data_type,
                rank as u32,
                m.address as *mut c_void,
                m.dims.as_ptr(),
                m.strides.as_ptr(),
                m.box_dims.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
        .result()
        .map_err(|e| driver_error(ErrorKind::Launch, "encoding a tensor map", e))?;
        Ok(TensorMapBytes(map.opaque))
    }

    /// Records a timing event at the current end of the stream.
    pub fn record_event(&self) -> Result<Event> {
        let event = self
            .stream
            .record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(backend("event record"))?;
        Ok(Event(event))
    }

    /// Milliseconds between two recorded events (waits for both to complete).
    pub fn elapsed_ms(&self, start: &Event, end: &Event) -> Result<f32> {
        start
            .0
            .elapsed_ms(&end.0)
            .map_err(|e| driver_error(ErrorKind::Runtime, "event timing", e))
    }
}

/// Sizes of a kernel's parameters in order (cuFuncGetParamInfo, CUDA 12.4+).
fn param_sizes(function: sys::CUfunction) -> Vec<usize> {
    let mut sizes = Vec::new();
    loop {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: `function` is valid; an index past the last parameter is an error.
        let status =
            unsafe { sys::cuFuncGetParamInfo(function, sizes.len(), &mut offset, &mut size) };
        if status.result().is_err() {
            return sizes;
        }
        sizes.push(size);
    }
}

fn check_range(what: &str, mem: &DeviceMemory, offset: usize, bytes: usize) -> Result<()> {
    if offset.checked_add(bytes).is_none_or(|end| end > mem.len) {
        return Err(Diagnostic::new(
            ErrorKind::Argument,
            format!(
                "{what} of {bytes} bytes at offset {offset} is outside a {}-byte buffer",
                mem.len
            ),
        ));
    }
    Ok(())
}

/// An owned device allocation, freed on drop.
#[derive(Debug)]
pub struct DeviceMemory {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceMemory {
    /// The raw device address of the first byte (pass `address() + offset` as a
    /// [`KernelArg::U64`] to bind a sub-range).
    pub fn address(&self) -> u64 {
        self.ptr
    }

    /// The size asked for, in bytes (may be 0).
    pub fn len_bytes(&self) -> usize {
        self.len
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // cuMemFree waits for work using the memory; errors here cannot be reported.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: allocated by malloc_sync and freed only here.
            let _ = unsafe { cu::free_sync(self.ptr) };
        }
    }
}

/// A kernel of a loaded PTX module (the module stays loaded while this lives).
#[derive(Debug)]
pub struct LoadedFunction {
    module: sys::CUmodule,
    function: sys::CUfunction,
    name: String,
    ctx: Arc<CudaContext>,
    jit_log: String,
    registers: u32,
    local_bytes: u32,
    static_shared_bytes: u32,
    max_threads: u32,
    shared_optin: u32,
    max_dynamic_shared: AtomicU32,
    param_sizes: Option<Vec<usize>>,
}

// SAFETY: module and function handles may be used from any thread once the owning
// context is bound, which every use here does first.
unsafe impl Send for LoadedFunction {}
// SAFETY: as above; the only mutable state is atomic.
unsafe impl Sync for LoadedFunction {}

impl LoadedFunction {
    fn attribute(&self, a: sys::CUfunction_attribute) -> Result<u32> {
        // SAFETY: the function belongs to a loaded module.
        let v = unsafe { cu::function::get_function_attribute(self.function, a) }
            .map_err(backend("function attribute query"))?;
        Ok(v.max(0) as u32)
    }

    /// The kernel's entry name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers per thread (CU_FUNC_ATTRIBUTE_NUM_REGS).
    pub fn registers(&self) -> u32 {
        self.registers
    }

    /// Local memory per thread in bytes, spills and stack (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES).
    pub fn local_bytes(&self) -> u32 {
        self.local_bytes
    }

    /// Static (`.shared` declared) shared memory per block in bytes.
    pub fn static_shared_bytes(&self) -> u32 {
        self.static_shared_bytes
    }

    /// The largest block, in threads, this kernel can be launched with.
    pub fn max_threads_per_block(&self) -> u32 {
        self.max_threads
    }

    /// The driver JIT's info log from loading the module (verbose: registers, spills).
    pub fn jit_log(&self) -> &str {
        &self.jit_log
    }

    /// Allows launches with up to `bytes` of dynamic shared memory
    /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; needed above 48 KiB). A backend
    /// error naming the limit when static plus dynamic shared memory exceeds the
    /// device's opt-in maximum per block.
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<()> {
        let total = bytes as u64 + self.static_shared_bytes as u64;
        if total > self.shared_optin as u64 {
            return Err(Diagnostic::new(
                ErrorKind::Backend,
                format!(
                    "kernel `{}` needs {bytes} bytes of dynamic shared memory plus {} static, \
                     more than the {} bytes per block this device allows",
                    self.name, self.static_shared_bytes, self.shared_optin
                ),
            ));
        }
        self.ctx
            .bind_to_thread()
            .map_err(backend("context binding"))?;
        // SAFETY: the function belongs to a loaded module.
        unsafe {
            cu::function::set_function_attribute(
                self.function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        }
        .map_err(backend("setting the dynamic shared memory limit"))?;
        self.max_dynamic_shared.store(bytes, Ordering::Relaxed);
        Ok(())
    }
}

impl Drop for LoadedFunction {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: loaded by cuModuleLoadDataEx and unloaded only here.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// One kernel argument, passed by value. Pointers are [`KernelArg::U64`] device
/// addresses; f16/bf16 scalars go as their bits in [`KernelArg::U16`].
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// A tensor map (`CUtensorMap`, a 128-byte parameter aligned to 64), from
    /// [`CudaRuntime::encode_tensor_map`].
    TensorMap(Box<TensorMapBytes>),
    /// A `.u32`/`.s32`/`.b32` parameter.
    U32(u32),
    /// A `.u64`/`.s64`/`.b64` parameter or a device address.
    U64(u64),
    /// A `.f32` parameter.
    F32(f32),
    /// A `.f64` parameter.
    F64(f64),
    /// A 16-bit parameter (`.u16`, `.b16`, f16 or bf16 bits).
    U16(u16),
    /// An 8-bit parameter (`.u8`, `.b8`, predicates passed as bytes).
    U8(u8),
}

impl KernelArg {
    /// The parameter's size in bytes.
    pub fn size(&self) -> usize {
        match self {
            KernelArg::U32(_) | KernelArg::F32(_) => 4,
            KernelArg::U64(_) | KernelArg::F64(_) => 8,
            KernelArg::U16(_) => 2,
            KernelArg::U8(_) => 1,
            KernelArg::TensorMap(_) => 128,
        }
    }

    /// The value's bytes at the start of an 8-byte slot (native byte order).
    fn slot(&self) -> u64 {
        let mut b = [0u8; 8];
        match *self {
            KernelArg::U32(v) => b[..4].copy_from_slice(&v.to_ne_bytes()),
            KernelArg::F32(v) => b[..4].copy_from_slice(&v.to_ne_bytes()),
            KernelArg::U64(v) => b = v.to_ne_bytes(),
            KernelArg::F64(v) => b = v.to_ne_bytes(),
            KernelArg::U16(v) => b[..2].copy_from_slice(&v.to_ne_bytes()),
            KernelArg::U8(v) => b[0] = v,
            KernelArg::TensorMap(_) => {}
        }
        u64::from_ne_bytes(b)
    }
}

impl TensorMapRequest<'_> {
    /// The driver's data type and swizzle of the map, after checking what the hardware
    /// needs (each broken rule a launch error that names it).
    fn check(&self) -> Result<(sys::CUtensorMapDataType, sys::CUtensorMapSwizzle)> {
        let m = self;
        use sys::CUtensorMapDataType as T;
        let fail = |what: String| {
            Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("cannot copy a block pointer's tiles with the tensor memory accelerator: {what}"),
            )
            .with_note("the kernel was compiled for a 16-byte aligned buffer and strides that are multiples of 16 bytes (its specialization); a stride of 0 or one of 2^40 bytes or more cannot be described"))
        };
        let data_type = match m.dtype {
            DType::F16 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            DType::BF16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            DType::F32 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            DType::F64 => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            DType::I32 => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
            DType::U32 => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            DType::I64 => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            DType::U64 => T::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            d if d.size_bytes() == 2 => T::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            d if d.size_bytes() == 1 => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            d => return fail(format!("no tensor map holds {d}")),
        };
        let rank = m.dims.len();
        if !(1..=5).contains(&rank) || m.strides.len() + 1 != rank || m.box_dims.len() != rank {
            return fail(format!(
                "a map of rank {rank} with {} strides and a box of rank {}",
                m.strides.len(),
                m.box_dims.len()
            ));
        }
        if !m.address.is_multiple_of(16) {
            return fail(format!(
                "the buffer's address {:#x} is not 16-byte aligned",
                m.address
            ));
        }
        if let Some(s) = m
            .strides
            .iter()
            .find(|&&s| !s.is_multiple_of(16) || s == 0 || s >= 1 << 40)
        {
            return fail(format!("a stride of {s} bytes"));
        }
        if let Some(d) = m.dims.iter().find(|&&d| d == 0 || d > 1 << 32) {
            return fail(format!("an extent of {d} elements"));
        }
        let inner = m.box_dims[0] as u64 * m.dtype.size_bytes() as u64;
        if m.box_dims.iter().any(|&b| !(1..=256).contains(&b))
            || (m.swizzle > 0 && inner > m.swizzle as u64)
            || (m.swizzle == 0 && !inner.is_multiple_of(16))
        {
            return fail(format!(
                "a box of {:?} elements under a {}-byte swizzle",
                m.box_dims, m.swizzle
            ));
        }
        let swizzle = match m.swizzle {
            0 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE,
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            s => return fail(format!("a {s}-byte swizzle")),
        };
        Ok((data_type, swizzle))
    }
}

/// The bytes of an encoded tensor map, aligned as the driver requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct TensorMapBytes(pub [u64; 16]);

/// What [`CudaRuntime::encode_tensor_map`] encodes: a tiled map of `dtype` elements from
/// device `address`, `dims` and byte `strides` (of dimensions 1..) innermost first,
/// copied in boxes of `box_dims` with a `swizzle`-byte swizzle (0, 32, 64 or 128).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorMapRequest<'a> {
    pub address: u64,
    pub dtype: DType,
    pub dims: &'a [u64],
    pub strides: &'a [u64],
    pub box_dims: &'a [u32],
    pub swizzle: u32,
}

/// A timing event recorded on a runtime's stream ([`CudaRuntime::record_event`]).
#[derive(Debug)]
pub struct Event(CudaEvent);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_arg_slots_hold_the_value_bytes() {
        let s = KernelArg::F32(1.5).slot().to_ne_bytes();
        assert_eq!(&s[..4], &1.5f32.to_ne_bytes());
        assert_eq!(&s[4..], &[0; 4]);
        assert_eq!(KernelArg::U16(0xabcd).size(), 2);
        assert_eq!(KernelArg::U64(7).slot(), 7);
    }

    /// What the hardware cannot copy is a launch error naming the rule, before any
    /// driver call (no GPU needed).
    #[test]
    fn tensor_maps_the_hardware_cannot_copy_are_launch_errors() {
        let good = TensorMapRequest {
            address: 0x1000,
            dtype: DType::F16,
            dims: &[4096, 4096],
            strides: &[8192],
            box_dims: &[64, 128],
            swizzle: 128,
        };
        assert!(good.check().is_ok());
        let cases: [(TensorMapRequest, &str); 6] = [
            (
                TensorMapRequest {
                    address: 0x1008,
                    ..good.clone()
                },
                "not 16-byte aligned",
            ),
            (
                TensorMapRequest {
                    strides: &[0],
                    ..good.clone()
                },
                "a stride of 0 bytes",
            ),
            (
                TensorMapRequest {
                    strides: &[8200],
                    ..good.clone()
                },
                "a stride of 8200 bytes",
            ),
            (
                TensorMapRequest {
                    dims: &[0, 4096],
                    ..good.clone()
                },
                "an extent of 0",
            ),
            (
                TensorMapRequest {
                    box_dims: &[128, 128],
                    ..good.clone()
                },
                "128-byte swizzle",
            ),
            (
                TensorMapRequest {
                    strides: &[],
                    ..good.clone()
                },
                "rank 2 with 0 strides",
            ),
        ];
        for (m, want) in cases {
            let e = m.check().unwrap_err();
            assert_eq!(e.kind, ErrorKind::Launch);
            assert!(e.message.contains(want), "{want}: {}", e.message);
        }
    }

    #[test]
    fn no_driver_is_an_error_not_a_panic() {
        if probe_driver().is_err() {
            let err = CudaRuntime::new(0).unwrap_err();
            assert_eq!(err.kind, ErrorKind::Backend);
            assert!(err.message.contains("no CUDA driver"), "{}", err.message);
            assert!(CudaRuntime::device_count().is_err());
        }
    }
}
