//! naga validation of generated WGSL, before any pipeline is created.
//!
//! Every module tilewise generates is parsed by naga's WGSL front end and validated
//! with the capabilities of the device it will run on ([`Capabilities::naga`]: f16,
//! subgroups, immediates...). The printer is supposed to emit only valid WGSL, so a
//! failure here is a tilewise bug: the [`Diagnostic`] is an internal error whose
//! message names the kernel and says so, and whose source is the generated WGSL (file
//! name `<kernel>.wgsl`), with the caret on the offending line as naga's spans give it,
//! other spans as secondary labels, and the chain of naga's error causes as notes.
//! A driver never sees a module naga rejected.

use std::error::Error as _;
use std::sync::Arc;

use tilewise_core::{Diagnostic, ErrorKind, Result, SourceFile, Span};

use crate::context::Capabilities;

/// A parsed and validated module.
#[derive(Debug)]
pub struct ValidModule {
    pub module: naga::Module,
    pub info: naga::valid::ModuleInfo,
}

fn span_of(span: naga::Span) -> Option<Span> {
    span.to_range()
        .map(|r| Span::new(r.start as u32, r.end as u32))
}

fn bug(kernel_name: &str, what: &str, detail: &str, source: &Arc<SourceFile>) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::Internal,
        format!(
            "tilewise bug: naga rejected the WGSL generated for kernel `{kernel_name}` \
             ({what}): {detail}"
        ),
    )
    .with_source(source)
}

/// Where a spanless type error shows in the source: a global variable using the type.
fn type_error_site(module: &naga::Module, e: &naga::valid::ValidationError) -> Option<Span> {
    let naga::valid::ValidationError::Type { handle, .. } = e else {
        return None;
    };
    let handle = *handle;
    if let Some(s) = span_of(module.types.get_span(handle)) {
        return Some(s);
    }
    let uses = |ty: naga::Handle<naga::Type>| -> bool {
        ty == handle
            || match &module.types[ty].inner {
                naga::TypeInner::Array { base, .. }
                | naga::TypeInner::BindingArray { base, .. } => *base == handle,
                naga::TypeInner::Struct { members, .. } => members.iter().any(|m| m.ty == handle),
                _ => false,
            }
    };
    module
        .global_variables
        .iter()
        .filter(|(_, var)| uses(var.ty))
        .find_map(|(h, _)| span_of(module.global_variables.get_span(h)))
}

/// Parses and validates `source` (the WGSL generated for `kernel_name`) for a device
/// with `caps`.
pub fn validate_wgsl(kernel_name: &str, source: &str, caps: &Capabilities) -> Result<ValidModule> {
    let file = SourceFile::new(format!("{kernel_name}.wgsl"), source);
    let module = match naga::front::wgsl::parse_str(source) {
        Ok(m) => m,
        Err(e) => {
            let mut d = bug(kernel_name, "parse error", e.message(), &file);
            let mut labels = e.labels();
            if let Some((span, text)) = labels.next() {
                if let Some(s) = span_of(span) {
                    d = d.at(s, text);
                }
            }
            for (span, text) in labels {
                if let Some(s) = span_of(span) {
                    d = d.with_secondary(s, text);
                }
            }
            for note in e.notes() {
                d = d.with_note(note.to_string());
            }
            if d.primary.is_none() {
                d = d.with_note(e.emit_to_string_with_path(source, &file.name));
            }
            return Err(d.with_note("please report this bug with the kernel that caused it"));
        }
    };
    let mut validator = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps.naga);
    match validator.validate(&module) {
        Ok(info) => Ok(ValidModule { module, info }),
        Err(e) => {
            let inner = e.as_inner();
            let mut d = bug(kernel_name, "validation error", &inner.to_string(), &file);
            let mut first = true;
            for (span, text) in e.spans() {
                let Some(s) = span_of(*span) else { continue };
                d = if first {
                    d.at(s, text.clone())
                } else {
                    d.with_secondary(s, text.clone())
                };
                first = false;
            }
            if first {
                // Type errors carry no span when the type was spelled inline: point at
                // the first global variable whose type is, or directly contains, it.
                if let Some(s) = type_error_site(&module, inner) {
                    d = d.at(s, "this variable's type is invalid");
                }
            }
            let mut cause = inner.source();
            while let Some(c) = cause {
                d = d.with_note(format!("caused by: {c}"));
                cause = c.source();
            }
            if d.primary.is_none() {
                d = d.with_note(e.emit_to_string_with_path(source, &file.name));
            }
            Err(d.with_note("please report this bug with the kernel that caused it"))
        }
    }
}
