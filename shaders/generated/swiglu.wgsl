// tilewise: kernel `swiglu_fwd_kernel`, 128 threads per program

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
@group(0) @binding(0) var<storage, read> b0: array<f32>; // gate_ptr: f32
@group(0) @binding(1) var<storage, read> b1: array<f32>; // up_ptr: f32
@group(0) @binding(2) var<storage, read_write> b2: array<atomic<u32>>; // out_ptr: bf16
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
  var r109: i32;
  var r110: i32;
  var r111: i32;
  var r112: i32;
  var r113: i32;
  var r114: i32;
  var r115: i32;
  var r116: i32;
  var r117: f32;
  var r118: f32;
  var r119: f32;
  var r120: f32;
  var r121: f32;
  var r122: f32;
  var r123: f32;
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
  var r148: f32;
  var r149: f32;
  var r150: f32;
  var r151: f32;
  var r152: f32;
  var r153: f32;
  var r154: f32;
  var r155: f32;
  var r156: f32;
  var r157: f32;
  var r158: f32;
  var r159: f32;
  var r160: f32;
  var r161: f32;
  var r162: f32;
  var r163: f32;
  var r164: f32;
  var r165: f32;
  var r166: f32;
  var r167: f32;
  var r168: i32;
  var r169: i32;
  var r170: i32;
  var r171: i32;
  var r172: i32;
  var r173: i32;
  var r174: i32;
  var r175: i32;
  var r176: f32;
  var r177: f32;
  var r178: f32;
  var r179: f32;
  var r180: f32;
  var r181: f32;
  var r182: f32;
  var r183: f32;
  var r184: f32;
  var r185: f32;
  var r186: f32;
  var r187: f32;
  var r188: f32;
  var r189: f32;
  var r190: f32;
  var r191: f32;
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
  r102 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r93)), r85)], r85);
  r103 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r94)), r86)], r86);
  r104 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r95)), r87)], r87);
  r105 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r96)), r88)], r88);
  r106 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r97)), r89)], r89);
  r107 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r98)), r90)], r90);
  r108 = select(r100, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r99)), r91)], r91);
  r109 = (r6 + r76);
  r110 = (r6 + r77);
  r111 = (r6 + r78);
  r112 = (r6 + r79);
  r113 = (r6 + r80);
  r114 = (r6 + r81);
  r115 = (r6 + r82);
  r116 = (r6 + r83);
  r117 = bitcast<f32>(0x0u);
  r118 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r109)), r84)], r84);
  r119 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r110)), r85)], r85);
  r120 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r111)), r86)], r86);
  r121 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r112)), r87)], r87);
  r122 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r113)), r88)], r88);
  r123 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r114)), r89)], r89);
  r124 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r115)), r90)], r90);
  r125 = select(r117, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r116)), r91)], r91);
  r126 = (-r101);
  r127 = (-r102);
  r128 = (-r103);
  r129 = (-r104);
  r130 = (-r105);
  r131 = (-r106);
  r132 = (-r107);
  r133 = (-r108);
  r134 = exp(r126);
  r135 = exp(r127);
  r136 = exp(r128);
  r137 = exp(r129);
  r138 = exp(r130);
  r139 = exp(r131);
  r140 = exp(r132);
  r141 = exp(r133);
  r142 = bitcast<f32>(0x3f800000u);
  r143 = (r142 + r134);
  r144 = (r142 + r135);
  r145 = (r142 + r136);
  r146 = (r142 + r137);
  r147 = (r142 + r138);
  r148 = (r142 + r139);
  r149 = (r142 + r140);
  r150 = (r142 + r141);
  r151 = bitcast<f32>(0x3f800000u);
  r152 = (r151 / r143);
  r153 = (r151 / r144);
  r154 = (r151 / r145);
  r155 = (r151 / r146);
  r156 = (r151 / r147);
  r157 = (r151 / r148);
  r158 = (r151 / r149);
  r159 = (r151 / r150);
  r160 = (r101 * r152);
  r161 = (r102 * r153);
  r162 = (r103 * r154);
  r163 = (r104 * r155);
  r164 = (r105 * r156);
  r165 = (r106 * r157);
  r166 = (r107 * r158);
  r167 = (r108 * r159);
  r168 = (r7 + r76);
  r169 = (r7 + r77);
  r170 = (r7 + r78);
  r171 = (r7 + r79);
  r172 = (r7 + r80);
  r173 = (r7 + r81);
  r174 = (r7 + r82);
  r175 = (r7 + r83);
  r176 = (r160 * r118);
  r177 = (r161 * r119);
  r178 = (r162 * r120);
  r179 = (r163 * r121);
  r180 = (r164 * r122);
  r181 = (r165 * r123);
  r182 = (r166 * r124);
  r183 = (r167 * r125);
  r184 = tw_bf16(r176);
  r185 = tw_bf16(r177);
  r186 = tw_bf16(r178);
  r187 = tw_bf16(r179);
  r188 = tw_bf16(r180);
  r189 = tw_bf16(r181);
  r190 = tw_bf16(r182);
  r191 = tw_bf16(r183);
  if (r84) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r168)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r184)) & 0xffffu) << tw_s); } }
  if (r85) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r169)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r185)) & 0xffffu) << tw_s); } }
  if (r86) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r170)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r186)) & 0xffffu) << tw_s); } }
  if (r87) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r171)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r187)) & 0xffffu) << tw_s); } }
  if (r88) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r172)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r188)) & 0xffffu) << tw_s); } }
  if (r89) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r173)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r189)) & 0xffffu) << tw_s); } }
  if (r90) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r174)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r190)) & 0xffffu) << tw_s); } }
  if (r91) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r175)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r191)) & 0xffffu) << tw_s); } }
}
