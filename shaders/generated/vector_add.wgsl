// tilewise: kernel `add_kernel`, 128 threads per program

fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tw_minf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return min(a, b); }
fn tw_maxf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return max(a, b); }
fn tw_bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if (tw_isnan(x)) { return 0x7fc0u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
fn tw_bf16(x: f32) -> f32 { return bitcast<f32>(tw_bf16_bits(x) << 16u); }
fn tw_f16_bits(x: f32) -> u32 { return pack2x16float(vec2<f32>(x, 0.0)) & 0xffffu; }
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
fn tw_udiv(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }
fn tw_urem(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }

struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> b0: array<f32>; // x_ptr: f32
@group(0) @binding(1) var<storage, read> b1: array<f32>; // y_ptr: f32
@group(0) @binding(2) var<storage, read_write> b2: array<f32>; // output_ptr: f32
@group(0) @binding(3) var<uniform> P: Params;

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>) {
  var r0: i32;
  var r1: i32;
  var r2: i32;
  var r3: i32;
  var r4: i32;
  var r5: i32;
  var r6: i32;
  var r7: i32;
  var r8: i32;
  var r9: i32;
  var r10: i32;
  var r11: i32;
  var r12: i32;
  var r13: i32;
  var r14: i32;
  var r15: i32;
  var r16: i32;
  var r17: i32;
  var r18: i32;
  var r19: i32;
  var r20: i32;
  var r21: i32;
  var r22: i32;
  var r23: i32;
  var r24: i32;
  var r25: i32;
  var r26: i32;
  var r27: i32;
  var r28: i32;
  var r29: i32;
  var r30: i32;
  var r31: i32;
  var r32: i32;
  var r33: i32;
  var r34: i32;
  var r35: i32;
  var r36: i32;
  var r37: i32;
  var r38: i32;
  var r39: i32;
  var r40: i32;
  var r41: i32;
  var r42: i32;
  var r43: i32;
  var r44: i32;
  var r45: i32;
  var r46: i32;
  var r47: i32;
  var r48: i32;
  var r49: i32;
  var r50: i32;
  var r51: i32;
  var r52: i32;
  var r53: i32;
  var r54: i32;
  var r55: i32;
  var r56: i32;
  var r57: i32;
  var r58: i32;
  var r59: i32;
  var r60: i32;
  var r61: i32;
  var r62: i32;
  var r63: i32;
  var r64: i32;
  var r65: i32;
  var r66: i32;
  var r67: i32;
  var r68: i32;
  var r69: i32;
  var r70: i32;
  var r71: i32;
  var r72: i32;
  var r73: i32;
  var r74: i32;
  var r75: i32;
  var r76: i32;
  var r77: i32;
  var r78: i32;
  var r79: i32;
  var r80: i32;
  var r81: i32;
  var r82: i32;
  var r83: i32;
  var r84: bool;
  var r85: bool;
  var r86: bool;
  var r87: bool;
  var r88: bool;
  var r89: bool;
  var r90: bool;
  var r91: bool;
  var r92: i32;
  var r93: i32;
  var r94: i32;
  var r95: i32;
  var r96: i32;
  var r97: i32;
  var r98: i32;
  var r99: i32;
  var r100: f32;
  var r101: f32;
  var r102: f32;
  var r103: f32;
  var r104: f32;
  var r105: f32;
  var r106: f32;
  var r107: f32;
  var r108: f32;
  var r109: f32;
  var r110: f32;
  var r111: f32;
  var r112: f32;
  var r113: f32;
  var r114: f32;
  var r115: f32;
  var r116: i32;
  var r117: i32;
  var r118: i32;
  var r119: i32;
  var r120: i32;
  var r121: i32;
  var r122: i32;
  var r123: i32;
  var r124: f32;
  var r125: f32;
  var r126: f32;
  var r127: f32;
  var r128: f32;
  var r129: f32;
  var r130: f32;
  var r131: f32;
  var r132: f32;
  var r133: f32;
  var r134: f32;
  var r135: f32;
  var r136: f32;
  var r137: f32;
  var r138: f32;
  var r139: f32;
  var r140: f32;
  var r141: f32;
  var r142: f32;
  var r143: f32;
  var r144: f32;
  var r145: f32;
  var r146: f32;
  var r147: f32;
  var r148: i32;
  var r149: i32;
  var r150: i32;
  var r151: i32;
  var r152: i32;
  var r153: i32;
  var r154: i32;
  var r155: i32;
  let tw_grid = P.words[0].xyz;
  let tw_lin = tw_wg.x + tw_wg.y * tw_nwg.x;
  if (tw_lin >= tw_grid.x * tw_grid.y * tw_grid.z) { return; }
  let tw_pid = vec3<u32>(tw_lin % tw_grid.x, (tw_lin / tw_grid.x) % tw_grid.y, tw_lin / (tw_grid.x * tw_grid.y));
  r0 = bitcast<i32>(tw_tid);
  r1 = bitcast<i32>(0x1fu);
  r2 = (r0 & r1);
  r3 = bitcast<i32>(0x5u);
  r4 = select(r0 >> (bitcast<u32>(r3) % 32u), r0 >> 31u, bitcast<u32>(r3) >= 32u);
  r5 = bitcast<i32>(0x0u);
  r6 = bitcast<i32>(0x0u);
  r7 = bitcast<i32>(0x0u);
  r8 = bitcast<i32>(P.words[1][0]);
  r12 = bitcast<i32>(0x0u);
  r13 = select(r2 >> (bitcast<u32>(r12) % 32u), r2 >> 31u, bitcast<u32>(r12) >= 32u);
  r14 = bitcast<i32>(0x1u);
  r15 = (r13 & r14);
  r16 = bitcast<i32>(0x4u);
  r17 = (r15 * r16);
  r18 = bitcast<i32>(0x1u);
  r19 = select(r2 >> (bitcast<u32>(r18) % 32u), r2 >> 31u, bitcast<u32>(r18) >= 32u);
  r20 = bitcast<i32>(0x1u);
  r21 = (r19 & r20);
  r22 = bitcast<i32>(0x8u);
  r23 = (r21 * r22);
  r24 = (r17 ^ r23);
  r25 = bitcast<i32>(0x2u);
  r26 = select(r2 >> (bitcast<u32>(r25) % 32u), r2 >> 31u, bitcast<u32>(r25) >= 32u);
  r27 = bitcast<i32>(0x1u);
  r28 = (r26 & r27);
  r29 = bitcast<i32>(0x10u);
  r30 = (r28 * r29);
  r31 = (r24 ^ r30);
  r32 = bitcast<i32>(0x3u);
  r33 = select(r2 >> (bitcast<u32>(r32) % 32u), r2 >> 31u, bitcast<u32>(r32) >= 32u);
  r34 = bitcast<i32>(0x1u);
  r35 = (r33 & r34);
  r36 = bitcast<i32>(0x20u);
  r37 = (r35 * r36);
  r38 = (r31 ^ r37);
  r39 = bitcast<i32>(0x4u);
  r40 = select(r2 >> (bitcast<u32>(r39) % 32u), r2 >> 31u, bitcast<u32>(r39) >= 32u);
  r41 = bitcast<i32>(0x1u);
  r42 = (r40 & r41);
  r43 = bitcast<i32>(0x40u);
  r44 = (r42 * r43);
  r45 = (r38 ^ r44);
  r46 = bitcast<i32>(0x0u);
  r47 = select(r4 >> (bitcast<u32>(r46) % 32u), r4 >> 31u, bitcast<u32>(r46) >= 32u);
  r48 = bitcast<i32>(0x1u);
  r49 = (r47 & r48);
  r50 = bitcast<i32>(0x80u);
  r51 = (r49 * r50);
  r52 = (r45 ^ r51);
  r53 = bitcast<i32>(0x1u);
  r54 = select(r4 >> (bitcast<u32>(r53) % 32u), r4 >> 31u, bitcast<u32>(r53) >= 32u);
  r55 = bitcast<i32>(0x1u);
  r56 = (r54 & r55);
  r57 = bitcast<i32>(0x100u);
  r58 = (r56 * r57);
  r59 = (r52 ^ r58);
  r9 = bitcast<i32>(tw_pid[0]);
  r10 = bitcast<i32>(0x400u);
  r11 = (r9 * r10);
  r60 = bitcast<i32>(0x0u);
  r61 = (r59 + r60);
  r62 = bitcast<i32>(0x1u);
  r63 = (r59 + r62);
  r64 = bitcast<i32>(0x2u);
  r65 = (r59 + r64);
  r66 = bitcast<i32>(0x3u);
  r67 = (r59 + r66);
  r68 = bitcast<i32>(0x200u);
  r69 = (r59 + r68);
  r70 = bitcast<i32>(0x201u);
  r71 = (r59 + r70);
  r72 = bitcast<i32>(0x202u);
  r73 = (r59 + r72);
  r74 = bitcast<i32>(0x203u);
  r75 = (r59 + r74);
  r76 = (r11 + r61);
  r77 = (r11 + r63);
  r78 = (r11 + r65);
  r79 = (r11 + r67);
  r80 = (r11 + r69);
  r81 = (r11 + r71);
  r82 = (r11 + r73);
  r83 = (r11 + r75);
  r84 = (r76 < r8);
  r85 = (r77 < r8);
  r86 = (r78 < r8);
  r87 = (r79 < r8);
  r88 = (r80 < r8);
  r89 = (r81 < r8);
  r90 = (r82 < r8);
  r91 = (r83 < r8);
  r92 = (r5 + r76);
  r93 = (r5 + r77);
  r94 = (r5 + r78);
  r95 = (r5 + r79);
  r96 = (r5 + r80);
  r97 = (r5 + r81);
  r98 = (r5 + r82);
  r99 = (r5 + r83);
  r100 = bitcast<f32>(0x0u);
  r101 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r92)), r84)], r84);
  r102 = bitcast<f32>(0x0u);
  r103 = select(r102, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r93)), r85)], r85);
  r104 = bitcast<f32>(0x0u);
  r105 = select(r104, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r94)), r86)], r86);
  r106 = bitcast<f32>(0x0u);
  r107 = select(r106, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r95)), r87)], r87);
  r108 = bitcast<f32>(0x0u);
  r109 = select(r108, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r96)), r88)], r88);
  r110 = bitcast<f32>(0x0u);
  r111 = select(r110, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r97)), r89)], r89);
  r112 = bitcast<f32>(0x0u);
  r113 = select(r112, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r98)), r90)], r90);
  r114 = bitcast<f32>(0x0u);
  r115 = select(r114, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r99)), r91)], r91);
  r116 = (r6 + r76);
  r117 = (r6 + r77);
  r118 = (r6 + r78);
  r119 = (r6 + r79);
  r120 = (r6 + r80);
  r121 = (r6 + r81);
  r122 = (r6 + r82);
  r123 = (r6 + r83);
  r124 = bitcast<f32>(0x0u);
  r125 = select(r124, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r116)), r84)], r84);
  r126 = bitcast<f32>(0x0u);
  r127 = select(r126, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r117)), r85)], r85);
  r128 = bitcast<f32>(0x0u);
  r129 = select(r128, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r118)), r86)], r86);
  r130 = bitcast<f32>(0x0u);
  r131 = select(r130, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r119)), r87)], r87);
  r132 = bitcast<f32>(0x0u);
  r133 = select(r132, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r120)), r88)], r88);
  r134 = bitcast<f32>(0x0u);
  r135 = select(r134, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r121)), r89)], r89);
  r136 = bitcast<f32>(0x0u);
  r137 = select(r136, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r122)), r90)], r90);
  r138 = bitcast<f32>(0x0u);
  r139 = select(r138, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r123)), r91)], r91);
  r140 = (r101 + r125);
  r141 = (r103 + r127);
  r142 = (r105 + r129);
  r143 = (r107 + r131);
  r144 = (r109 + r133);
  r145 = (r111 + r135);
  r146 = (r113 + r137);
  r147 = (r115 + r139);
  r148 = (r7 + r76);
  r149 = (r7 + r77);
  r150 = (r7 + r78);
  r151 = (r7 + r79);
  r152 = (r7 + r80);
  r153 = (r7 + r81);
  r154 = (r7 + r82);
  r155 = (r7 + r83);
  if (r84) { b2[(P.bases[0][2] + bitcast<u32>(r148))] = r140; }
  if (r85) { b2[(P.bases[0][2] + bitcast<u32>(r149))] = r141; }
  if (r86) { b2[(P.bases[0][2] + bitcast<u32>(r150))] = r142; }
  if (r87) { b2[(P.bases[0][2] + bitcast<u32>(r151))] = r143; }
  if (r88) { b2[(P.bases[0][2] + bitcast<u32>(r152))] = r144; }
  if (r89) { b2[(P.bases[0][2] + bitcast<u32>(r153))] = r145; }
  if (r90) { b2[(P.bases[0][2] + bitcast<u32>(r154))] = r146; }
  if (r91) { b2[(P.bases[0][2] + bitcast<u32>(r155))] = r147; }
}
