//! The prelude: helper functions (`tw_*`) the printed code calls where WGSL has no
//! operation with the tile IR's semantics (NaN tests on the bits, min/max where a
//! number wins over NaN, f16 and bf16 rounding in integer arithmetic, saturating
//! float-to-int conversions, integer division by zero, the high half of a product,
//! `erf`). `PRELUDE_F16` needs `enable f16;`.

pub(super) const PRELUDE: &str = "
fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tw_isfinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn tw_minf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return min(a, b); }
fn tw_maxf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return max(a, b); }
fn tw_bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if (tw_isnan(x)) { return 0x7fc0u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
fn tw_bf16(x: f32) -> f32 { return bitcast<f32>(tw_bf16_bits(x) << 16u); }
fn tw_f16_bits(x: f32) -> u32 {
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
}
fn tw_f16(x: f32) -> f32 { return unpack2x16float(tw_f16_bits(x)).x; }
fn tw_f2i(x: f32) -> i32 {
  if (tw_isnan(x)) { return 0; }
  if (x >= 2147483647.0) { return 2147483647; }
  if (x <= -2147483648.0) { return -2147483647 - 1; }
  return i32(x);
}
fn tw_f2u(x: f32) -> u32 {
  if (tw_isnan(x) || x <= 0.0) { return 0u; }
  if (x >= 4294967295.0) { return 4294967295u; }
  return u32(x);
}
fn tw_erf(x: f32) -> f32 {
  let a = abs(x);
  if (a < 1.0) {
    let z = x * x;
    var s = 1.0 / 76204800.0;
    s = s * z - 1.0 / 6894720.0;
    s = s * z + 1.0 / 685440.0;
    s = s * z - 1.0 / 75600.0;
    s = s * z + 1.0 / 9360.0;
    s = s * z - 1.0 / 1320.0;
    s = s * z + 1.0 / 216.0;
    s = s * z - 1.0 / 42.0;
    s = s * z + 1.0 / 10.0;
    s = s * z - 1.0 / 3.0;
    s = s * z + 1.0;
    return 1.1283791670955126 * x * s;
  }
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return select(y, -y, x < 0.0);
}
fn tw_idiv(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } if (b == -1) { return 0 - a; } return a / b; }
fn tw_irem(a: i32, b: i32) -> i32 { if (b == 0 || b == -1) { return 0; } return a % b; }
fn tw_mulhi(a: u32, b: u32) -> u32 {
  let p00 = (a & 0xffffu) * (b & 0xffffu); let p01 = (a & 0xffffu) * (b >> 16u);
  let p10 = (a >> 16u) * (b & 0xffffu); let p11 = (a >> 16u) * (b >> 16u);
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}
fn tw_udiv(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }
fn tw_urem(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }
";

pub(super) const PRELUDE_F16: &str = "
fn tw_isnanh(x: f16) -> bool { return tw_isnan(f32(x)); }
fn tw_to_f16(x: f32) -> f16 { return f16(unpack2x16float(tw_f16_bits(x)).x); }
fn tw_minh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return min(a, b); }
fn tw_maxh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return max(a, b); }
";
