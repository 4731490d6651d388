//! Checked launches on the GPU executors (and the simulators): the hidden arguments a
//! kernel lowered in checked mode takes, and the record it reports into, turned into
//! the launch's result (see `tilewise_core::thread_ir::checks`). Kernels that call
//! `tl.device_print` take the same path, checked or not: their print buffer is read
//! back and printed as the interpreter prints.
//!
//! Checked mode is asked for by [`crate::Device::checked`], [`crate::Launch::checked`]
//! or `TILEWISE_CHECKED=1` in the environment. A checked launch waits for the kernel
//! (the record must be read), so it costs a synchronization besides the tests.

use crate::buffer::BufferId;
use crate::device::{Backend, BoundArg};
use std::sync::{Mutex, OnceLock};
use tilewise_core::interp::Warnings;
use tilewise_core::ir::DType;
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::checks::{
    print_lines, CheckedKernel, HiddenArg, PRINT_WORDS, RECORD_WORDS,
};
use tilewise_core::{Diagnostic, Result};

/// Whether `TILEWISE_CHECKED` asks for checked mode on every device (`1`, `true`,
/// `yes` or `on`).
pub(crate) fn checked_by_environment() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("TILEWISE_CHECKED").is_ok_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
    })
}

/// What a backend keeps for its checked launches: the record buffer (allocated once,
/// zero between launches) and the warnings not yet taken.
#[derive(Default)]
pub(crate) struct CheckedState {
    /// The record; held locked for a whole checked launch, so that checked launches
    /// on one device take turns.
    record: Mutex<Option<BufferId>>,
    /// The print buffer of kernels that call `tl.device_print` (allocated when one
    /// first runs).
    prints: Mutex<Option<BufferId>>,
    pub warnings: Warnings,
}

impl CheckedState {
    /// A state whose warnings go to `warnings`.
    pub fn with_warnings(warnings: Warnings) -> CheckedState {
        CheckedState {
            record: Mutex::new(None),
            prints: Mutex::new(None),
            warnings,
        }
    }

    /// The warnings not yet taken ([`crate::Device::take_warnings`]).
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// `tl.device_print` output kept for the parent process, in a worker (`None`: printed
/// to standard output, which a worker uses for its replies).
static CAPTURED_PRINTS: Mutex<Option<String>> = Mutex::new(None);

/// From now on, device prints are kept for [`take_captured_prints`] (a worker process).
pub(crate) fn capture_prints() {
    *CAPTURED_PRINTS.lock().unwrap_or_else(|e| e.into_inner()) = Some(String::new());
}

/// The device prints kept since the last call.
pub(crate) fn take_captured_prints() -> String {
    CAPTURED_PRINTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_mut()
        .map(std::mem::take)
        .unwrap_or_default()
}

fn emit_prints(out: &str) {
    let mut captured = CAPTURED_PRINTS.lock().unwrap_or_else(|e| e.into_inner());
    match captured.as_mut() {
        Some(buffer) => buffer.push_str(out),
        None => print!("{out}"),
    }
}

/// Runs `launch` with `args` followed by the hidden arguments of `checked` (view
/// lengths, the zeroed record buffer of `backend`), waits for it, and turns the
/// record into the launch's error; a warning goes to the state's warnings.
pub(crate) fn run_checked(
    backend: &dyn Backend,
    state: &CheckedState,
    checked: &CheckedKernel,
    args: &[BoundArg],
    launch: impl FnOnce(&[BoundArg]) -> Result<()>,
) -> Result<()> {
    let lock_err = || Diagnostic::internal("the checked-mode record lock is poisoned");
    let mut slot = state.record.lock().map_err(|_| lock_err())?;
    let record = match *slot {
        Some(r) => r,
        None => *slot.insert(backend.alloc(DType::I32, RECORD_WORDS as usize)?),
    };
    let mut print_slot = state.prints.lock().map_err(|_| lock_err())?;
    let prints = match (*print_slot, checked.checks.print_buffer) {
        (_, None) => None,
        (Some(p), Some(_)) => Some(p),
        (None, Some(_)) => {
            Some(*print_slot.insert(backend.alloc(DType::I32, PRINT_WORDS as usize)?))
        }
    };
    let buffers = Hidden { record, prints };
    let (error, warning) = launch_and_read(backend, checked, args, buffers, launch)?;
    if error.is_some() || warning.is_some() {
        backend.write(record, &[0u8; 4 * RECORD_WORDS as usize])?;
    }
    if let Some(p) = prints {
        let words = read_words(backend, p)?;
        if words.first().is_some_and(|&n| n != 0) {
            backend.write(p, &[0u8; 4])?;
            let mut out = String::new();
            for line in print_lines(checked, &words) {
                out.push_str(&line);
                out.push('\n');
            }
            emit_prints(&out);
        }
    }
    if let Some(w) = warning {
        let mut list = state.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !list.iter().any(|x| x.message == w.message) {
            list.push(w);
        }
    }
    match error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

type Reports = (Option<Diagnostic>, Option<Diagnostic>);

/// The buffers behind a checked launch's hidden parameters.
#[derive(Clone, Copy)]
struct Hidden {
    record: BufferId,
    prints: Option<BufferId>,
}

fn read_words(backend: &dyn Backend, id: BufferId) -> Result<Vec<i32>> {
    Ok(backend
        .read(id)?
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn launch_and_read(
    backend: &dyn Backend,
    checked: &CheckedKernel,
    args: &[BoundArg],
    hidden: Hidden,
    launch: impl FnOnce(&[BoundArg]) -> Result<()>,
) -> Result<Reports> {
    let view_len = |b: u32| match args.get(b as usize) {
        Some(BoundArg::Buffer { len, .. }) => *len,
        _ => 0,
    };
    let mut full = args.to_vec();
    for p in args.len()..checked.params.len() {
        // Tensor maps (after the hidden parameters) are the launcher's to fill.
        if checked.tensor_maps.contains(&(p as u32)) {
            continue;
        }
        full.push(match checked.hidden(p as u32) {
            Some(HiddenArg::Record) => BoundArg::Buffer {
                id: hidden.record,
                offset: 0,
                len: RECORD_WORDS as usize,
            },
            Some(HiddenArg::Prints) => BoundArg::Buffer {
                id: hidden
                    .prints
                    .ok_or_else(|| Diagnostic::internal("no print buffer"))?,
                offset: 0,
                len: PRINT_WORDS as usize,
            },
            Some(HiddenArg::LenOf(b)) => BoundArg::Scalar(ScalarValue::Int(
                DType::I32,
                view_len(b).min(i32::MAX as usize) as i64,
            )),
            None => {
                return Err(Diagnostic::internal(format!(
                    "checked kernel `{}`: parameter {p} is neither the kernel's nor hidden",
                    checked.kernel
                )))
            }
        });
    }
    launch(&full)?;
    backend.synchronize()?;
    let words = read_words(backend, hidden.record)?;
    let view_lens: Vec<usize> = (0..checked.params.len())
        .map(|p| view_len(p as u32))
        .collect();
    Ok(checked.diagnose(&words, &view_lens))
}
