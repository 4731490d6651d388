//! Checked launches on the GPU executors (and the simulators): the hidden arguments a
//! kernel lowered in checked mode takes, and the record it reports into, turned into
//! the launch's result (see `tilewise_core::thread_ir::checks`).
//!
//! Checked mode is asked for by [`crate::Device::checked`], [`crate::Launch::checked`]
//! or `TILEWISE_CHECKED=1` in the environment. A checked launch waits for the kernel
//! (the record must be read), so it costs a synchronization besides the tests.

use crate::buffer::BufferId;
use crate::device::{Backend, BoundArg};
use std::sync::OnceLock;
use tilewise_core::interp::Warnings;
use tilewise_core::ir::DType;
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::checks::{CheckedKernel, HiddenArg, RECORD_WORDS};
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

/// Runs `launch` with `args` followed by the hidden arguments of `checked` (view
/// lengths, a zeroed record buffer of `backend`), waits for it, and turns the record
/// into the launch's error; a warning goes to `warnings`.
pub(crate) fn run_checked(
    backend: &dyn Backend,
    checked: &CheckedKernel,
    args: &[BoundArg],
    warnings: &Warnings,
    launch: impl FnOnce(&[BoundArg]) -> Result<()>,
) -> Result<()> {
    let record = backend.alloc(DType::I32, RECORD_WORDS as usize)?;
    let result = launch_and_read(backend, checked, args, record, launch);
    backend.free(record);
    let (error, warning) = result?;
    if let Some(w) = warning {
        let mut list = warnings.lock().unwrap_or_else(|e| e.into_inner());
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

fn launch_and_read(
    backend: &dyn Backend,
    checked: &CheckedKernel,
    args: &[BoundArg],
    record: BufferId,
    launch: impl FnOnce(&[BoundArg]) -> Result<()>,
) -> Result<Reports> {
    let view_len = |b: u32| match args.get(b as usize) {
        Some(BoundArg::Buffer { len, .. }) => *len,
        _ => 0,
    };
    let mut full = args.to_vec();
    for p in args.len()..checked.params.len() {
        full.push(match checked.hidden(p as u32) {
            Some(HiddenArg::Record) => BoundArg::Buffer {
                id: record,
                offset: 0,
                len: RECORD_WORDS as usize,
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
    let bytes = backend.read(record)?;
    let words: Vec<i32> = bytes
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let view_lens: Vec<usize> = (0..checked.params.len())
        .map(|p| view_len(p as u32))
        .collect();
    Ok(checked.diagnose(&words, &view_lens))
}
