//! The prelude: helper functions (`tw_*`) the printed code calls where WGSL has no
//! operation with the tile IR's semantics (NaN tests on the bits, min/max where a
//! number wins over NaN, f16 and bf16 rounding in integer arithmetic, saturating
//! float-to-int conversions, integer division by zero, the high half of a product,
//! `erf`).
//!
//! A shader carries only the helpers it calls, and those they call: [`prelude_for`]
//! reads the calls from the printed code itself, so a helper is emitted wherever a
//! call to it is printed. Adding a helper is one entry in [`HELPERS`].

use std::collections::BTreeSet;

/// One helper function of the prelude.
struct Helper {
    /// The name the printed code calls.
    name: &'static str,
    /// The other helpers its body calls.
    calls: &'static [&'static str],
    /// Its WGSL definition.
    source: &'static str,
}

/// Every helper, in the order a shader declares them. The `f16` ones (`tw_isnanh`,
/// `tw_to_f16`, `tw_minh`, `tw_maxh`) are called on native f16 values only, so a
/// shader that calls them has `enable f16;`.
const HELPERS: &[Helper] = &[
    Helper {
        name: "tw_isnan",
        calls: &[],
        source: "fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
    },
    Helper {
        name: "tw_isfinite",
        calls: &[],
        source: "fn tw_isfinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }",
    },
    Helper {
        name: "tw_minf",
        calls: &["tw_isnan"],
        source: "fn tw_minf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return min(a, b); }",
    },
    Helper {
        name: "tw_maxf",
        calls: &["tw_isnan"],
        source: "fn tw_maxf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return max(a, b); }",
    },
    Helper {
        name: "tw_bf16_bits",
        calls: &["tw_isnan"],
        source: "fn tw_bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if (tw_isnan(x)) { return 0x7fc0u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}",
    },
    Helper {
        name: "tw_bf16",
        calls: &["tw_bf16_bits"],
        source: "fn tw_bf16(x: f32) -> f32 { return bitcast<f32>(tw_bf16_bits(x) << 16u); }",
    },
    Helper {
        name: "tw_f16_bits",
        calls: &[],
        source: "fn tw_f16_bits(x: f32) -> u32 {
  // Round to nearest even in integer arithmetic: a driver may fold a float conversion
  // that is widened again, and pack2x16float leaves overflow undefined.
  let b = bitcast<u32>(x);
  let sign = (b >> 16u) & 0x8000u;
  let a = b & 0x7fffffffu;
  if (a > 0x7f800000u) { return sign | 0x7e00u; }
  if (a >= 0x477ff000u) { return sign | 0x7c00u; }
  if (a < 0x38800000u) {
    if (a <= 0x33000000u) { return sign; }
    let m = (a & 0x7fffffu) | 0x800000u;
    let shift = 126u - (a >> 23u);
    let q = m >> shift;
    let rest = m & ((1u << shift) - 1u);
    let half = 1u << (shift - 1u);
    return sign | (q + select(0u, 1u, rest > half || (rest == half && (q & 1u) == 1u)));
  }
  let r = a - 0x38000000u;
  let q = r >> 13u;
  let rest = r & 0x1fffu;
  return sign | (q + select(0u, 1u, rest > 0x1000u || (rest == 0x1000u && (q & 1u) == 1u)));
}",
    },
    Helper {
        name: "tw_f16",
        calls: &["tw_f16_bits"],
        source: "fn tw_f16(x: f32) -> f32 { return unpack2x16float(tw_f16_bits(x)).x; }",
    },
    Helper {
        name: "tw_f2i",
        calls: &["tw_isnan"],
        source: "fn tw_f2i(x: f32) -> i32 {
  if (tw_isnan(x)) { return 0; }
  if (x >= 2147483647.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}",
    },
    Helper {
        name: "tw_f2u",
        calls: &["tw_isnan"],
        source: "fn tw_f2u(x: f32) -> u32 {
  if (tw_isnan(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967295.0) { return 4294967295u; }
  return u32(x);
}",
    },
    Helper {
        name: "tw_idiv",
        calls: &[],
        source: "fn tw_idiv(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } if (b == -1) { return 0 - a; } return a / b; }",
    },
    Helper {
        name: "tw_irem",
        calls: &[],
        source: "fn tw_irem(a: i32, b: i32) -> i32 { if (b == 0 || b == -1) { return 0; } return a % b; }",
    },
    Helper {
        name: "tw_mulhi",
        calls: &[],
        source: "fn tw_mulhi(a: u32, b: u32) -> u32 {
  let p00 = (a & 0xffffu) * (b & 0xffffu); let p01 = (a & 0xffffu) * (b >> 16u);
  let p10 = (a >> 16u) * (b & 0xffffu); let p11 = (a >> 16u) * (b >> 16u);
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}",
    },
    Helper {
        name: "tw_udiv",
        calls: &[],
        source: "fn tw_udiv(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }",
    },
    Helper {
        name: "tw_urem",
        calls: &[],
        source: "fn tw_urem(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }",
    },
    Helper {
        name: "tw_isnanh",
        calls: &["tw_isnan"],
        source: "fn tw_isnanh(x: f16) -> bool { return tw_isnan(f32(x)); }",
    },
    Helper {
        name: "tw_to_f16",
        calls: &["tw_f16_bits"],
        source: "fn tw_to_f16(x: f32) -> f16 { return f16(unpack2x16float(tw_f16_bits(x)).x); }",
    },
    Helper {
        name: "tw_minh",
        calls: &["tw_isnanh"],
        source: "fn tw_minh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return min(a, b); }",
    },
    Helper {
        name: "tw_maxh",
        calls: &["tw_isnanh"],
        source: "fn tw_maxh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return max(a, b); }",
    },
];

/// Whether `code` calls `name`: `name(` not preceded by an identifier character.
fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(i, _)| {
        code[i + name.len()..].starts_with('(')
            && !code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The prelude of a shader whose other code is `code`: a blank line and the helpers it
/// calls, directly or through other helpers, in [`HELPERS`]' order; empty when it calls
/// none.
pub(super) fn prelude_for(code: &str) -> String {
    let mut used: BTreeSet<&str> = HELPERS
        .iter()
        .filter(|h| calls(code, h.name))
        .map(|h| h.name)
        .collect();
    let mut pending: Vec<&str> = used.iter().copied().collect();
    while let Some(name) = pending.pop() {
        let Some(h) = HELPERS.iter().find(|h| h.name == name) else {
            continue;
        };
        for &c in h.calls {
            if used.insert(c) {
                pending.push(c);
            }
        }
    }
    let mut out = String::new();
    for h in HELPERS.iter().filter(|h| used.contains(h.name)) {
        if out.is_empty() {
            out.push('\n');
        }
        out.push_str(h.source);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each entry defines the function it names, and lists exactly the helpers its
    /// body calls.
    #[test]
    fn helpers_list_their_calls() {
        for h in HELPERS {
            assert!(
                h.source.starts_with(&format!("fn {}(", h.name)),
                "{}",
                h.name
            );
            let called: Vec<&str> = HELPERS
                .iter()
                .filter(|o| o.name != h.name && calls(h.source, o.name))
                .map(|o| o.name)
                .collect();
            let mut listed = h.calls.to_vec();
            listed.sort_by_key(|c| HELPERS.iter().position(|o| o.name == *c));
            assert_eq!(called, listed, "{}", h.name);
        }
        let names: BTreeSet<&str> = HELPERS.iter().map(|h| h.name).collect();
        assert_eq!(names.len(), HELPERS.len(), "a helper is listed twice");
    }

    #[test]
    fn only_called_helpers_transitively_in_order() {
        assert_eq!(prelude_for("let x = 1u;"), "");
        // Not a call: a longer name, a variable.
        assert_eq!(prelude_for("my_tw_isnan(x); let tw_isnan = 1;"), "");
        let p = prelude_for("r1 = tw_minh(r2, r3); r4 = tw_bf16(r5);");
        let names: Vec<&str> = HELPERS
            .iter()
            .filter(|h| p.contains(&format!("fn {}(", h.name)))
            .map(|h| h.name)
            .collect();
        assert_eq!(
            names,
            [
                "tw_isnan",
                "tw_bf16_bits",
                "tw_bf16",
                "tw_isnanh",
                "tw_minh"
            ]
        );
        assert!(p.starts_with("\nfn tw_isnan("));
    }
}
