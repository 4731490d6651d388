//! Generated kernels as files: `TILEWISE_KERNEL_DUMP_DIR` writes every WGSL or PTX
//! kernel a GPU device compiles, and `TILEWISE_KERNEL_OVERRIDE_DIR` replaces one with a
//! file edited by hand (as Triton's `TRITON_KERNEL_DUMP` / `TRITON_KERNEL_OVERRIDE`).
//!
//! A kernel's file is named `{kernel}-{hash}.{wgsl|ptx}`, the hash being a 64-bit
//! FNV-1a of the generated text: the same specialization and options give the same
//! name in every process, and any change to the compiler's output gives a new one, so
//! a stale override is never applied to a kernel it was not written for. An override
//! must keep the kernel's interface (its bindings and parameter block on WGSL, its
//! entry point and parameters on PTX, and no more shared memory than the generated
//! kernel, and workgroup indices in range: on Vulkan tilewise's modules go without
//! naga's index clamps); naga and the driver still check what they can. While overrides are on,
//! the persistent cache is not used for kernels (a cached kernel would hide the
//! override, and an overridden one must not be stored as the compiler's).

use std::path::{Path, PathBuf};

/// The dump directory, when `TILEWISE_KERNEL_DUMP_DIR` names one.
fn dump_dir() -> Option<PathBuf> {
    dir_from_env("TILEWISE_KERNEL_DUMP_DIR")
}

/// The override directory, when `TILEWISE_KERNEL_OVERRIDE_DIR` names one.
fn override_dir() -> Option<PathBuf> {
    dir_from_env("TILEWISE_KERNEL_OVERRIDE_DIR")
}

fn dir_from_env(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Whether overrides are on (the persistent cache then stays out of kernels' way).
pub(crate) fn overriding() -> bool {
    override_dir().is_some()
}

/// 64-bit FNV-1a: stable across processes, platforms and Rust versions.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The file name of kernel `name`'s generated `text` with extension `ext`.
pub fn file_name(name: &str, text: &str, ext: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}-{:016x}.{ext}", fnv1a(text))
}

/// The text to hand to the driver for kernel `name`'s generated `text`: the override
/// file where one exists (logged), otherwise `text`; writes `text` to the dump
/// directory first when one is set. Files that cannot be written or read are logged
/// and otherwise ignored: they never fail a launch.
pub(crate) fn dump_and_override(name: &str, text: String, ext: &str) -> String {
    let file = file_name(name, &text, ext);
    if let Some(dir) = dump_dir() {
        write_dump(&dir, &file, &text);
    }
    let Some(dir) = override_dir() else {
        return text;
    };
    let path = dir.join(&file);
    match std::fs::read_to_string(&path) {
        Ok(replacement) => {
            log::warn!(
                "kernel `{name}`: running {} in place of the generated {ext}",
                path.display()
            );
            replacement
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            log::debug!("kernel `{name}`: no override {}", path.display());
            text
        }
        Err(e) => {
            log::warn!(
                "kernel `{name}`: cannot read the override {}: {e}; running the generated {ext}",
                path.display()
            );
            text
        }
    }
}

fn write_dump(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        // A temporary name and a rename: concurrent processes never see half a file.
        let tmp = dir.join(format!(".{file}.{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &path)
    });
    match written {
        Ok(()) => log::info!("kernel dumped to {}", path.display()),
        Err(e) => log::warn!("cannot dump a kernel to {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_stable_and_follow_the_text() {
        // FNV-1a's published test vectors: "" and "a".
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        let a = file_name("matmul_kernel", "text", "wgsl");
        assert_eq!(a, file_name("matmul_kernel", "text", "wgsl"));
        assert_ne!(a, file_name("matmul_kernel", "text ", "wgsl"));
        assert!(a.starts_with("matmul_kernel-") && a.ends_with(".wgsl"));
        assert!(file_name("a/b", "", "ptx").starts_with("a_b-"));
    }
}
