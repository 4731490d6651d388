//! Reading and writing containers as Python does: the length of a range, dict keys
//! (hashability, lookup by `==`, insertion order), sequence indices (negative from the end),
//! slices, and searching a sequence (`.index`, `.count`).

use super::errors::type_err;
use super::ops::py_eq;
use super::repr::py_repr;
use super::values::{describe, int_of, type_name, DictRef, V};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::tracer::err;

pub(super) fn range_len(a: i64, b: i64, s: i64) -> u64 {
    let (a, b, s) = (a as i128, b as i128, s as i128);
    let n = if s > 0 {
        (b - a + s - 1).div_euclid(s)
    } else {
        (a - b - s - 1).div_euclid(-s)
    };
    n.max(0) as u64
}

fn hashable(v: &V) -> bool {
    match v {
        V::None | V::Bool(_) | V::Int(_) | V::Float(_) | V::Str(_) | V::DType(..) => true,
        V::Tuple(t) => t.iter().all(hashable),
        V::Config(_) | V::Func(_) | V::Builtin(_) | V::Target | V::DeviceProperties => true,
        _ => false,
    }
}

pub(super) fn dict_pos<'a>(d: &DictRef<'a>, key: &V<'a>, span: Span) -> Result<Option<usize>> {
    if !hashable(key) {
        return Err(type_err(
            format!("unhashable type: `{}`", type_name(key)),
            span,
        ));
    }
    for (i, (k, _)) in d.borrow().iter().enumerate() {
        if py_eq(k, key, span)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

pub(super) fn dict_set<'a>(d: &DictRef<'a>, key: V<'a>, v: V<'a>, span: Span) -> Result<()> {
    match dict_pos(d, &key, span)? {
        Some(i) => d.borrow_mut()[i].1 = v,
        None => d.borrow_mut().push((key, v)),
    }
    Ok(())
}

pub(super) fn index(key: &V, len: usize, span: Span) -> Result<usize> {
    let i = int_of(key, span)?;
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(err(
            ErrorKind::Runtime,
            format!("index {i} is out of range (length {len})"),
            span,
        ));
    }
    Ok(j as usize)
}

pub(super) fn slice<'a>(
    base: &V<'a>,
    lo: Option<i64>,
    hi: Option<i64>,
    step: Option<i64>,
    span: Span,
) -> Result<V<'a>> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(err(ErrorKind::Runtime, "slice step cannot be zero", span));
    }
    let pick = |len: usize| -> Vec<usize> {
        let len = len as i64;
        let clamp = |x: i64, lo: i64, hi: i64| x.max(lo).min(hi);
        let norm = |x: i64| if x < 0 { x + len } else { x };
        let (start, stop) = if step > 0 {
            (
                lo.map_or(0, |x| clamp(norm(x), 0, len)),
                hi.map_or(len, |x| clamp(norm(x), 0, len)),
            )
        } else {
            (
                lo.map_or(len - 1, |x| clamp(norm(x), -1, len - 1)),
                hi.map_or(-1, |x| clamp(norm(x), -1, len - 1)),
            )
        };
        let mut out = vec![];
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            out.push(i as usize);
            i += step;
        }
        out
    };
    Ok(match base {
        V::List(l) => {
            let l = l.borrow();
            V::list(pick(l.len()).into_iter().map(|i| l[i].clone()).collect())
        }
        V::Tuple(t) => V::tuple(pick(t.len()).into_iter().map(|i| t[i].clone()).collect()),
        V::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            V::Str(
                pick(chars.len())
                    .into_iter()
                    .map(|i| chars[i])
                    .collect::<String>()
                    .into(),
            )
        }
        other => {
            return Err(type_err(
                format!("{} cannot be sliced", describe(other)),
                span,
            ))
        }
    })
}

pub(super) fn seq_search<'a>(name: &str, items: &[V<'a>], x: &V<'a>, span: Span) -> Result<V<'a>> {
    let mut count = 0;
    for (i, y) in items.iter().enumerate() {
        if py_eq(x, y, span)? {
            if name != "count" {
                return Ok(V::Int(i as i64));
            }
            count += 1;
        }
    }
    if name == "count" {
        return Ok(V::Int(count));
    }
    Err(err(
        ErrorKind::Runtime,
        format!("{} is not in the sequence", py_repr(x)),
        span,
    ))
}
