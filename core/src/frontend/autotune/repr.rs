//! `str()` and `repr()` of values, as Python prints them (`True`, `'a'`, `(1,)`,
//! `torch.float16`, `fp16`, a config's fields).

use super::paths::{tl_str, torch_name};
use super::values::{describe, Flavor, V};

fn py_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{f:?}")
    }
}

pub(super) fn py_str(v: &V) -> String {
    match v {
        V::Str(s) => s.to_string(),
        other => py_repr(other),
    }
}

pub(super) fn py_repr(v: &V) -> String {
    let join = |items: &[V]| items.iter().map(py_repr).collect::<Vec<_>>().join(", ");
    match v {
        V::None => "None".into(),
        V::Bool(b) => if *b { "True" } else { "False" }.into(),
        V::Int(i) => i.to_string(),
        V::Float(f) => py_float(*f),
        V::Str(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        V::List(l) => format!("[{}]", join(&l.borrow())),
        V::Tuple(t) if t.len() == 1 => format!("({},)", py_repr(&t[0])),
        V::Tuple(t) => format!("({})", join(t)),
        V::Dict(d) => format!(
            "{{{}}}",
            d.borrow()
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        V::Range(a, b, 1) => format!("range({a}, {b})"),
        V::Range(a, b, s) => format!("range({a}, {b}, {s})"),
        V::DType(d, Flavor::Torch) => format!("torch.{}", torch_name(*d)),
        V::DType(d, Flavor::Triton) => tl_str(*d).into(),
        V::Config(c) => {
            let c = c.borrow();
            let mut parts = vec![];
            if let V::Dict(d) = &c.kwargs {
                for (k, v) in d.borrow().iter() {
                    parts.push(format!("{}: {}", py_str(k), py_str(v)));
                }
            }
            parts.push(format!("num_warps: {}", c.num_warps.unwrap_or(4)));
            parts.push("num_ctas: 1".into());
            parts.push(format!("num_stages: {}", c.num_stages.unwrap_or(3)));
            parts.push("maxnreg: None".into());
            parts.join(", ")
        }
        other => format!("<{}>", describe(other)),
    }
}
