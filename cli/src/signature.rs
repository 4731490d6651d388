//! Kernel signatures and constexprs as the command line spells them, in the style of
//! `triton.tools.compile`: `'x:*f32:16, n:i32, eps:f32'` and `BLOCK=1024`.
//!
//! - `name:*dtype` is a pointer; `:16` after it promises a 16-byte aligned base (the
//!   kernel is specialized for it, as Triton does); without it the base is not aligned.
//! - `name:dtype` is a scalar; for integers `:16` promises a multiple of 16 and `:1`
//!   the value 1 (Triton's two integer specializations); without them neither.

use tilewise::core::launch::ScalarValue;
use tilewise::{ConstValue, DType};

/// One parameter of a signature.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Pointer { dtype: DType, aligned: bool },
    Scalar { dtype: DType, hint: Option<u32> },
}

/// Parses `'x:*f32:16, n:i32'` into `(name, parameter)` pairs.
pub fn parse_signature(text: &str) -> Result<Vec<(String, Param)>, String> {
    let mut out = vec![];
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parts: Vec<&str> = item.split(':').map(str::trim).collect();
        let (name, ty, hint) = match parts.as_slice() {
            [n, t] => (*n, *t, None),
            [n, t, h] => (*n, *t, Some(*h)),
            _ => return Err(format!("`{item}`: expected NAME:TYPE or NAME:TYPE:HINT")),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(format!("`{item}`: `{name}` is not a parameter name"));
        }
        let hint = match hint {
            None => None,
            Some(h) => Some(
                h.parse::<u32>()
                    .map_err(|_| format!("`{item}`: the hint `{h}` is not 16 or 1"))?,
            ),
        };
        if hint.is_some_and(|h| h != 16 && h != 1) {
            return Err(format!("`{item}`: the hint must be 16 or 1"));
        }
        let dtype_of = |t: &str| {
            DType::from_name(t).ok_or_else(|| {
                format!("`{item}`: unknown type `{t}` (f32, fp16, bf16, i32, i64, u8, i1, ...)")
            })
        };
        let param = match ty.strip_prefix('*') {
            Some(t) => {
                if hint == Some(1) {
                    return Err(format!("`{item}`: a pointer takes only the hint 16"));
                }
                Param::Pointer {
                    dtype: dtype_of(t)?,
                    aligned: hint == Some(16),
                }
            }
            None => {
                let dtype = dtype_of(ty)?;
                if hint.is_some() && !dtype.is_int() {
                    return Err(format!("`{item}`: hints apply to integers and pointers"));
                }
                Param::Scalar { dtype, hint }
            }
        };
        out.push((name.to_string(), param));
    }
    if out.is_empty() {
        return Err("the signature is empty".into());
    }
    Ok(out)
}

/// The scalar a signature's scalar stands for when compiling: a value with exactly
/// the specialization it promises.
pub fn representative(dtype: DType, hint: Option<u32>) -> ScalarValue {
    if dtype == DType::I1 {
        return ScalarValue::Bool(true);
    }
    if dtype.is_float() {
        return ScalarValue::Float(dtype, 0.5);
    }
    ScalarValue::Int(
        dtype,
        match hint {
            Some(16) => 16,
            Some(_) => 1,
            None => 3,
        },
    )
}

/// Parses `NAME=VALUE` (an integer, a float, `true`/`false`, or a dtype name such as
/// `tl.float16` / `fp16`).
pub fn parse_constexpr(text: &str) -> Result<(String, ConstValue), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected NAME=VALUE"))?;
    let (name, value) = (name.trim(), value.trim());
    let v = if let Ok(i) = value.parse::<i64>() {
        ConstValue::Int(i)
    } else if let Ok(f) = value.parse::<f64>() {
        ConstValue::Float(f)
    } else if value == "true" || value == "True" {
        ConstValue::Bool(true)
    } else if value == "false" || value == "False" {
        ConstValue::Bool(false)
    } else if let Some(d) = DType::from_name(value.trim_start_matches("tl.")) {
        ConstValue::DType(d)
    } else {
        return Err(format!(
            "`{text}`: `{value}` is not an integer, a float, a boolean or a dtype"
        ));
    };
    Ok((name.to_string(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_parse_with_their_hints() {
        let s = parse_signature("x:*f32:16, y: *fp16 , n:i32:16, m:i64:1, k:i32, eps:f32").unwrap();
        assert_eq!(
            s.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["x", "y", "n", "m", "k", "eps"]
        );
        assert_eq!(
            s[0].1,
            Param::Pointer {
                dtype: DType::F32,
                aligned: true
            }
        );
        assert_eq!(
            s[1].1,
            Param::Pointer {
                dtype: DType::F16,
                aligned: false
            }
        );
        assert_eq!(
            representative(DType::I32, Some(16)),
            ScalarValue::Int(DType::I32, 16)
        );
        assert_eq!(
            representative(DType::I64, Some(1)),
            ScalarValue::Int(DType::I64, 1)
        );
        assert_eq!(
            representative(DType::I32, None),
            ScalarValue::Int(DType::I32, 3)
        );
    }

    #[test]
    fn bad_signatures_say_what_is_wrong() {
        for (text, want) in [
            ("x", "expected NAME:TYPE"),
            ("x:*f33", "unknown type `f33`"),
            ("x:f32:16", "hints apply to integers"),
            ("x:*f32:1", "only the hint 16"),
            ("n:i32:8", "must be 16 or 1"),
            ("", "empty"),
        ] {
            let e = parse_signature(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn constexprs_parse() {
        assert_eq!(
            parse_constexpr("BLOCK=1024").unwrap(),
            ("BLOCK".into(), ConstValue::Int(1024))
        );
        assert_eq!(
            parse_constexpr("DT=tl.float16").unwrap(),
            ("DT".into(), ConstValue::DType(DType::F16))
        );
        assert_eq!(
            parse_constexpr("EPS=1e-5").unwrap(),
            ("EPS".into(), ConstValue::Float(1e-5))
        );
        assert!(parse_constexpr("BLOCK").is_err());
        assert!(parse_constexpr("X=banana").is_err());
    }
}
