//! The Triton-dialect front end: parses Python source, finds jit functions, and traces
//! one of them into tile IR for a given specialization.
//!
//! (Skeleton: the API below is the contract the facade and the tests use.)

use crate::diag::{Result, SourceFile};
use crate::ir::Kernel;
use crate::launch::{ArgSpec, ConstValue};
use std::sync::Arc;

/// A parsed source file: its jit functions (the rest of the file is skipped).
pub struct Module {
    source: Arc<SourceFile>,
}

/// One parameter of a jit function as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    /// Annotated `tl.constexpr`.
    pub constexpr: bool,
    /// Has a default value in the signature.
    pub has_default: bool,
}

/// A jit function's signature.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub name: String,
    pub params: Vec<ParamInfo>,
}

/// A kernel traced for one specialization.
#[derive(Clone, Debug)]
pub struct Specialized {
    pub kernel: Kernel,
    /// For each parameter of `kernel`, the index of the positional launch argument
    /// that feeds it.
    pub arg_indices: Vec<usize>,
    /// Lines printed by `tl.static_print` while tracing.
    pub static_prints: Vec<String>,
}

impl Module {
    /// Parses `text` (named `name` in diagnostics).
    pub fn parse(name: &str, text: &str) -> Result<Module> {
        let _ = text;
        Ok(Module {
            source: SourceFile::new(name, text),
        })
    }

    pub fn source(&self) -> &Arc<SourceFile> {
        &self.source
    }

    /// Names of the jit functions, in source order.
    pub fn kernel_names(&self) -> Vec<String> {
        vec![]
    }

    /// The signature of a jit function.
    pub fn signature(&self, kernel: &str) -> Result<Signature> {
        Err(crate::Diagnostic::new(
            crate::ErrorKind::Name,
            format!("no jit function `{kernel}`"),
        ))
    }

    /// Traces `kernel` for launch arguments `args` (positional, in order, skipping the
    /// parameters given in `constexprs`) and named constexpr values.
    pub fn specialize(
        &self,
        kernel: &str,
        args: &[ArgSpec],
        constexprs: &[(String, ConstValue)],
    ) -> Result<Specialized> {
        let _ = (args, constexprs);
        Err(crate::Diagnostic::new(
            crate::ErrorKind::Name,
            format!("no jit function `{kernel}`"),
        ))
    }
}
