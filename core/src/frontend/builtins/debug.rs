//! Debugging builtins: `tl.static_assert` and `tl.static_print` (at compile time),
//! `tl.device_print` and `tl.device_assert` (at run time).

use super::args::Bound;
use super::Call;
use crate::diag::{ErrorKind, Result};
use crate::frontend::tracer::{err, Tracer};
use crate::frontend::value::{format_val, Val};
use crate::ir::Op;

/// `tl.static_assert(cond, msg="")`: `cond` must be known, and true, at compile time.
pub(super) fn static_assert(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (c, cs) = b.req(0)?.clone();
    let msg = match b.get(1) {
        Some((Val::Str(s), _)) => s.clone(),
        Some((v, _)) => format_val(v, &|x| t.fmt_type(x)),
        None => String::new(),
    };
    match c.truthy() {
        Some(true) => Ok(Val::None),
        Some(false) => Err(err(
            ErrorKind::Static,
            if msg.is_empty() {
                "static_assert failed".to_string()
            } else {
                format!("static_assert failed: {msg}")
            },
            b.span,
        )),
        None => Err(err(
            ErrorKind::Static,
            "tl.static_assert needs a compile-time condition; use tl.device_assert for runtime checks",
            cs,
        )),
    }
}

/// `tl.static_print(*values)`: prints at compile time (once, not in a loop's dry run).
pub(super) fn static_print(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    if let Some((k, _, s)) = c.kwargs.iter().find(|(k, _, _)| k != "sep" && k != "end") {
        return Err(err(
            ErrorKind::Argument,
            format!("static_print() got an unexpected keyword argument `{k}`"),
            *s,
        ));
    }
    let parts: Vec<String> = c
        .args
        .iter()
        .map(|(v, _)| format_val(v, &|x| t.fmt_type(x)))
        .collect();
    let line = parts.join(" ");
    if t.dry == 0 {
        println!("{line}");
        t.prints.push(line);
    }
    Ok(Val::None)
}

/// `tl.device_print(prefix, *values, hex=False)`.
pub(super) fn device_print(t: &mut Tracer<'_>, c: Call) -> Result<Val> {
    let mut hex = false;
    for (k, v, s) in &c.kwargs {
        match k.as_str() {
            "hex" => hex = v.truthy().unwrap_or(false),
            _ => {
                return Err(err(
                    ErrorKind::Argument,
                    format!("device_print() got an unexpected keyword argument `{k}`"),
                    *s,
                ))
            }
        }
    }
    let mut it = c.args.into_iter();
    let prefix = match it.next() {
        Some((Val::Str(s), _)) => s,
        Some((_, s)) => {
            return Err(err(
                ErrorKind::Type,
                "device_print's first argument must be a string prefix",
                s,
            ))
        }
        None => {
            return Err(err(
                ErrorKind::Argument,
                "device_print() missing the prefix",
                c.span,
            ))
        }
    };
    let mut values = vec![];
    for (v, s) in it {
        values.push(t.tensor_of(&v, s)?);
    }
    t.b.push0(
        Op::DevicePrint {
            prefix,
            values,
            hex,
        },
        c.span,
    );
    Ok(Val::None)
}

/// `tl.device_assert(cond, msg="", mask=None)`: checked at run time, or now if `cond`
/// is a constant.
pub(super) fn device_assert(t: &mut Tracer<'_>, b: &Bound) -> Result<Val> {
    let (c, cs) = b.req(0)?.clone();
    let msg = match b.get(1) {
        Some((Val::Str(s), _)) => s.clone(),
        _ => String::new(),
    };
    if let Some(truth) = c.truthy() {
        if !truth {
            return Err(err(
                ErrorKind::Static,
                format!("device_assert on a condition that is always false: {msg}"),
                cs,
            ));
        }
        return Ok(Val::None);
    }
    let x = t.tensor_of(&c, cs)?;
    let cond = t.as_i1(x, cs)?;
    t.b.push0(Op::DeviceAssert { cond, message: msg }, b.span);
    Ok(Val::None)
}
