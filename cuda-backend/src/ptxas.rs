//! Offline PTX checks with NVIDIA's `ptxas`, no GPU or driver needed.
//!
//! [`find_ptxas`] locates the assembler (an explicit `TILEWISE_PTXAS`, `PATH`, a CUDA
//! toolkit, or the PyPI package `nvidia-cuda-nvcc`); [`assemble`] runs it on one PTX
//! module with `-v` and returns the resource usage it reports ([`PtxasReport`]). A PTX
//! module that ptxas rejects comes back as an internal diagnostic quoting ptxas's
//! message and the offending PTX lines, since a rejected PTX is a bug in the printer.
//!
//! Version notes (ptxas 13.5 from `nvidia-cuda-nvcc`): targets sm_75 and newer only
//! (sm_70 is gone); each target needs a minimum `.version` as the PTX ISA says
//! (sm_80: 7.0, sm_86: 7.1, sm_89/sm_90: 7.8, sm_90a: 8.0, sm_100: 8.6); the newest
//! accepted `.version` is 9.5; `-arch` must be at least the module's `.target`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use tilewise_core::{Diagnostic, ErrorKind, Result};

/// What ptxas reported for one assembled PTX module.
///
/// With several entry functions in a module, each number is the maximum over them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// Registers per thread (`Used N registers`).
    pub registers: u32,
    /// Bytes of register spill stores to local memory.
    pub spill_stores_bytes: u32,
    /// Bytes of register spill loads from local memory.
    pub spill_loads_bytes: u32,
    /// Bytes of stack frame per thread.
    pub stack_bytes: u32,
    /// Bytes of static shared memory per block (`N bytes smem`).
    pub shared_bytes: u32,
    /// The whole `-v` output of ptxas (stdout then stderr), warnings included.
    pub log: String,
}

/// Where to find ptxas: the environment variable `TILEWISE_PTXAS` (used as is when set),
/// then `ptxas` on `PATH`, then `$CUDA_HOME/bin`, `$CUDA_PATH/bin` and
/// `/usr/local/cuda/bin`, then the PyPI package `nvidia-cuda-nvcc` (a `bin/ptxas`
/// under the `nvidia` namespace package of `python3`, such as
/// `site-packages/nvidia/cu13/bin/ptxas`). `None` when none is found.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("TILEWISE_PTXAS").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        return path.is_file().then_some(path);
    }
    if let Some(path) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("ptxas"))
        .find(|p| p.is_file())
    {
        return Some(path);
    }
    let toolkits = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|var| std::env::var_os(var).map(PathBuf::from))
        .chain([PathBuf::from("/usr/local/cuda")]);
    for root in toolkits {
        let path = root.join("bin").join("ptxas");
        if path.is_file() {
            return Some(path);
        }
    }
    pip_ptxas().clone()
}

/// ptxas from the PyPI package `nvidia-cuda-nvcc`, looked up once per process (it
/// starts a Python interpreter).
fn pip_ptxas() -> &'static Option<PathBuf> {
    static PIP_PTXAS: OnceLock<Option<PathBuf>> = OnceLock::new();
    PIP_PTXAS.get_or_init(|| {
        const SCRIPT: &str = "import nvidia\nfor p in nvidia.__path__: print(p)";
        for python in ["python3", "python"] {
            let Ok(out) = Command::new(python).args(["-c", SCRIPT]).output() else {
                continue;
            };
            if !out.status.success() {
                continue;
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            for root in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if let Some(path) = ptxas_under(Path::new(root)) {
                    return Some(path);
                }
            }
        }
        None
    })
}

/// `ROOT/*/bin/ptxas` (`nvidia/cu13/bin`, `nvidia/cuda_nvcc/bin`), newest name first.
fn ptxas_under(root: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    dirs.reverse();
    dirs.into_iter()
        .map(|d| d.join("bin").join("ptxas"))
        .find(|p| p.is_file())
}

/// The version line of a ptxas binary, such as
/// `Cuda compilation tools, release 13.5, V13.5.37`.
pub fn ptxas_version(ptxas: &Path) -> Result<String> {
    let out = Command::new(ptxas).arg("--version").output().map_err(|e| {
        Diagnostic::new(
            ErrorKind::Backend,
            format!("could not run {}: {e}", ptxas.display()),
        )
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("release"))
        .or_else(|| text.lines().last())
        .unwrap_or("");
    Ok(line.trim().to_string())
}

/// Assembles `ptx` for `arch` (such as `"sm_80"`) with `ptxas -arch=ARCH -v` and returns
/// the resources it reports. No ptxas is a backend error (it says how to get one); a
/// PTX that ptxas rejects is an internal error with ptxas's messages and the PTX lines
/// they point at.
pub fn assemble(ptx: &str, arch: &str) -> Result<PtxasReport> {
    let ptxas = find_ptxas().ok_or_else(|| {
        let mut msg = "ptxas not found: install it with `pip install nvidia-cuda-nvcc`, \
                       put it on PATH, or set TILEWISE_PTXAS to its path"
            .to_string();
        if let Some(v) = std::env::var_os("TILEWISE_PTXAS").filter(|v| !v.is_empty()) {
            msg.push_str(&format!(
                " (TILEWISE_PTXAS={} is not a file)",
                Path::new(&v).display()
            ));
        }
        Diagnostic::new(ErrorKind::Backend, msg)
    })?;
    let dir = tempfile::tempdir()
        .map_err(|e| Diagnostic::internal(format!("cannot create a temporary folder: {e}")))?;
    std::fs::write(dir.path().join("kernel.ptx"), ptx)
        .map_err(|e| Diagnostic::internal(format!("cannot write the PTX file: {e}")))?;
    let out = Command::new(&ptxas)
        .current_dir(dir.path())
        .arg(format!("-arch={arch}"))
        .args(["-v", "-o", "kernel.cubin", "kernel.ptx"])
        .output()
        .map_err(|e| {
            Diagnostic::new(
                ErrorKind::Backend,
                format!("could not run {}: {e}", ptxas.display()),
            )
        })?;
    let mut log = String::from_utf8_lossy(&out.stdout).into_owned();
    log.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(Diagnostic::internal(format!(
            "ptxas ({}) rejected the PTX for {arch} ({}):\n{}{}",
            ptxas.display(),
            out.status,
            log.trim_end(),
            quote_ptx_lines(&log, ptx)
        )));
    }
    Ok(parse_report(log))
}

/// Parses the `-v` output of ptxas.
fn parse_report(log: String) -> PtxasReport {
    let mut r = PtxasReport::default();
    for line in log.lines() {
        // "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" and
        // "ptxas info    : Used 12 registers, used 1 barriers, 4096 bytes smem, ..."
        let body = line.split_once(": ").map_or(line, |(_, rest)| rest);
        for item in body.split(',') {
            let item = item.trim();
            let item = item.strip_prefix("Used ").unwrap_or(item);
            let Some((num, what)) = item.split_once(' ') else {
                continue;
            };
            let Ok(n) = num.parse::<u32>() else {
                continue;
            };
            let field = match what.trim() {
                "registers" => &mut r.registers,
                "bytes stack frame" => &mut r.stack_bytes,
                "bytes spill stores" => &mut r.spill_stores_bytes,
                "bytes spill loads" => &mut r.spill_loads_bytes,
                "bytes smem" => &mut r.shared_bytes,
                _ => continue,
            };
            *field = (*field).max(n);
        }
    }
    r.log = log;
    r
}

/// For each `line N` that a ptxas or driver JIT log mentions, the PTX source line
/// (`\n  PTX line N: TEXT`), in order, each once. Empty when the log names no line.
pub(crate) fn quote_ptx_lines(log: &str, ptx: &str) -> String {
    let mut seen = Vec::new();
    for piece in log.split("line ").skip(1) {
        let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
        let rest = &piece[digits.len()..];
        if !(rest.starts_with(';') || rest.starts_with(',') || rest.starts_with(':')) {
            continue;
        }
        if let Ok(n) = digits.parse::<usize>() {
            if n > 0 && !seen.contains(&n) {
                seen.push(n);
            }
        }
    }
    let mut out = String::new();
    for n in seen {
        if let Some(text) = ptx.lines().nth(n - 1) {
            out.push_str(&format!("\n  PTX line {n}: {}", text.trim()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_verbose_output() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'k' for 'sm_80'\n\
                   ptxas info    : Function properties for k\n    \
                   16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
                   ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem, \
                   380 bytes cmem[0]\n";
        let r = parse_report(log.to_string());
        assert_eq!(
            (
                r.registers,
                r.stack_bytes,
                r.spill_stores_bytes,
                r.spill_loads_bytes,
                r.shared_bytes
            ),
            (40, 16, 8, 4, 4096)
        );
    }

    #[test]
    fn quotes_the_lines_a_log_names() {
        let ptx = "a\nb\nc\n";
        let log = "ptxas kernel.ptx, line 2; error : x\nptxas kernel.ptx, line 2; error : y\n\
                   ptxas application ptx input, line 3; error";
        assert_eq!(
            quote_ptx_lines(log, ptx),
            "\n  PTX line 2: b\n  PTX line 3: c"
        );
        assert_eq!(quote_ptx_lines("no lines here", ptx), "");
    }
}
