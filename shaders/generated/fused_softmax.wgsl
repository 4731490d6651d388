// tilewise: kernel `softmax_kernel`, 128 threads per program

fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tw_maxf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return max(a, b); }

struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read_write> b0: array<f32>; // output_ptr: f32
@group(0) @binding(1) var<storage, read> b1: array<f32>; // input_ptr: f32
@group(0) @binding(2) var<uniform> P: Params;
var<workgroup> s0: array<f32, 128>; // reduce_f32_0+reduce_f32_1

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>) {
  let tw_grid = P.words[0].xyz;
  let tw_lin = tw_wg.x + tw_wg.y * tw_nwg.x;
  if (tw_lin >= tw_grid.x * tw_grid.y * tw_grid.z) { return; }
  let tw_pid = vec3<u32>(tw_lin % tw_grid.x, (tw_lin / tw_grid.x) % tw_grid.y, tw_lin / (tw_grid.x * tw_grid.y));
  let r0: i32 = bitcast<i32>(tw_tid);
  let r1: i32 = bitcast<i32>(0x1fu);
  let r2: i32 = (r0 & r1);
  let r3: i32 = bitcast<i32>(0x5u);
  let r4: i32 = select(r0 >> (bitcast<u32>(r3) % 32u), r0 >> 31u, bitcast<u32>(r3) >= 32u);
  let r5: i32 = bitcast<i32>(0x0u);
  let r7: i32 = bitcast<i32>(P.words[1][0]);
  let r8: i32 = bitcast<i32>(P.words[1][1]);
  let r10: i32 = bitcast<i32>(P.words[1][3]);
  let r16: i32 = bitcast<i32>(0x1u);
  let r17: i32 = (r2 & r16);
  let r18: i32 = bitcast<i32>(0x4u);
  let r19: i32 = (r17 * r18);
  let r21: i32 = select(r2 >> (bitcast<u32>(r16) % 32u), r2 >> 31u, bitcast<u32>(r16) >= 32u);
  let r23: i32 = (r21 & r16);
  let r24: i32 = bitcast<i32>(0x8u);
  let r25: i32 = (r23 * r24);
  let r26: i32 = (r19 ^ r25);
  let r27: i32 = bitcast<i32>(0x2u);
  let r28: i32 = select(r2 >> (bitcast<u32>(r27) % 32u), r2 >> 31u, bitcast<u32>(r27) >= 32u);
  let r30: i32 = (r28 & r16);
  let r31: i32 = bitcast<i32>(0x10u);
  let r32: i32 = (r30 * r31);
  let r33: i32 = (r26 ^ r32);
  let r34: i32 = bitcast<i32>(0x3u);
  let r35: i32 = select(r2 >> (bitcast<u32>(r34) % 32u), r2 >> 31u, bitcast<u32>(r34) >= 32u);
  let r37: i32 = (r35 & r16);
  let r38: i32 = bitcast<i32>(0x20u);
  let r39: i32 = (r37 * r38);
  let r40: i32 = (r33 ^ r39);
  let r42: i32 = select(r2 >> (bitcast<u32>(r18) % 32u), r2 >> 31u, bitcast<u32>(r18) >= 32u);
  let r44: i32 = (r42 & r16);
  let r45: i32 = bitcast<i32>(0x40u);
  let r46: i32 = (r44 * r45);
  let r47: i32 = (r40 ^ r46);
  let r51: i32 = (r4 & r16);
  let r52: i32 = bitcast<i32>(0x80u);
  let r53: i32 = (r51 * r52);
  let r54: i32 = (r47 ^ r53);
  let r56: i32 = select(r4 >> (bitcast<u32>(r16) % 32u), r4 >> 31u, bitcast<u32>(r16) >= 32u);
  let r58: i32 = (r56 & r16);
  let r59: i32 = bitcast<i32>(0x100u);
  let r60: i32 = (r58 * r59);
  let r61: i32 = (r54 ^ r60);
  // line 12
  let r11: i32 = bitcast<i32>(tw_pid[0]);
  // line 13
  let r12: i32 = (r11 * r7);
  // line 14
  let r65: i32 = (r61 + r16);
  let r67: i32 = (r61 + r27);
  let r69: i32 = (r61 + r34);
  let r70: i32 = bitcast<i32>(0x200u);
  let r71: i32 = (r61 + r70);
  let r72: i32 = bitcast<i32>(0x201u);
  let r73: i32 = (r61 + r72);
  let r74: i32 = bitcast<i32>(0x202u);
  let r75: i32 = (r61 + r74);
  let r76: i32 = bitcast<i32>(0x203u);
  let r77: i32 = (r61 + r76);
  // line 15
  let r78: i32 = (r12 + r61);
  let r79: i32 = (r12 + r65);
  let r80: i32 = (r12 + r67);
  let r81: i32 = (r12 + r69);
  let r82: i32 = (r12 + r71);
  let r83: i32 = (r12 + r73);
  let r84: i32 = (r12 + r75);
  let r85: i32 = (r12 + r77);
  // line 16
  let r86: bool = (r61 < r10);
  let r87: bool = (r65 < r10);
  let r88: bool = (r67 < r10);
  let r89: bool = (r69 < r10);
  let r90: bool = (r71 < r10);
  let r91: bool = (r73 < r10);
  let r92: bool = (r75 < r10);
  let r93: bool = (r77 < r10);
  // line 17
  let r94: f32 = bitcast<f32>(0xff800000u);
  let r95: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r78)), r86)], r86);
  let r96: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r79)), r87)], r87);
  let r97: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r80)), r88)], r88);
  let r98: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r81)), r89)], r89);
  let r99: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r82)), r90)], r90);
  let r100: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r83)), r91)], r91);
  let r101: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r84)), r92)], r92);
  let r102: f32 = select(r94, b1[select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r85)), r93)], r93);
  // line 19
  let r103: f32 = tw_maxf(r95, r96);
  let r104: f32 = tw_maxf(r103, r97);
  let r105: f32 = tw_maxf(r104, r98);
  let r106: f32 = tw_maxf(r105, r99);
  let r107: f32 = tw_maxf(r106, r100);
  let r108: f32 = tw_maxf(r107, r101);
  let r109: f32 = tw_maxf(r108, r102);
  let r122: i32 = select(r23 << (bitcast<u32>(r16) % 32u), 0, bitcast<u32>(r16) >= 32u);
  let r123: i32 = (r17 | r122);
  let r129: i32 = select(r30 << (bitcast<u32>(r27) % 32u), 0, bitcast<u32>(r27) >= 32u);
  let r130: i32 = (r123 | r129);
  let r136: i32 = select(r37 << (bitcast<u32>(r34) % 32u), 0, bitcast<u32>(r34) >= 32u);
  let r137: i32 = (r130 | r136);
  let r143: i32 = select(r44 << (bitcast<u32>(r18) % 32u), 0, bitcast<u32>(r18) >= 32u);
  let r144: i32 = (r137 | r143);
  let r150: i32 = select(r51 << (bitcast<u32>(r3) % 32u), 0, bitcast<u32>(r3) >= 32u);
  let r151: i32 = (r144 | r150);
  let r156: i32 = bitcast<i32>(0x6u);
  let r157: i32 = select(r58 << (bitcast<u32>(r156) % 32u), 0, bitcast<u32>(r156) >= 32u);
  let r158: i32 = (r151 | r157);
  workgroupBarrier();
  let r160: i32 = (r5 * r52);
  let r161: i32 = (r160 + r158);
  s0[r161] = r109;
  workgroupBarrier();
  let r164: bool = (r158 < r45);
  if (r164) {
    let r166: i32 = (r161 + r45);
    let r167: f32 = s0[r161];
    let r168: f32 = s0[r166];
    let r169: f32 = tw_maxf(r167, r168);
    s0[r161] = r169;
  }
  workgroupBarrier();
  let r171: bool = (r158 < r38);
  if (r171) {
    let r173: i32 = (r161 + r38);
    let r174: f32 = s0[r161];
    let r175: f32 = s0[r173];
    let r176: f32 = tw_maxf(r174, r175);
    s0[r161] = r176;
  }
  workgroupBarrier();
  let r178: bool = (r158 < r31);
  if (r178) {
    let r180: i32 = (r161 + r31);
    let r181: f32 = s0[r161];
    let r182: f32 = s0[r180];
    let r183: f32 = tw_maxf(r181, r182);
    s0[r161] = r183;
  }
  workgroupBarrier();
  let r185: bool = (r158 < r24);
  if (r185) {
    let r187: i32 = (r161 + r24);
    let r188: f32 = s0[r161];
    let r189: f32 = s0[r187];
    let r190: f32 = tw_maxf(r188, r189);
    s0[r161] = r190;
  }
  workgroupBarrier();
  let r192: bool = (r158 < r18);
  if (r192) {
    let r194: i32 = (r161 + r18);
    let r195: f32 = s0[r161];
    let r196: f32 = s0[r194];
    let r197: f32 = tw_maxf(r195, r196);
    s0[r161] = r197;
  }
  workgroupBarrier();
  let r199: bool = (r158 < r27);
  if (r199) {
    let r201: i32 = (r161 + r27);
    let r202: f32 = s0[r161];
    let r203: f32 = s0[r201];
    let r204: f32 = tw_maxf(r202, r203);
    s0[r161] = r204;
  }
  workgroupBarrier();
  let r206: bool = (r158 < r16);
  if (r206) {
    let r208: i32 = (r161 + r16);
    let r209: f32 = s0[r161];
    let r210: f32 = s0[r208];
    let r211: f32 = tw_maxf(r209, r210);
    s0[r161] = r211;
  }
  workgroupBarrier();
  let r212: f32 = s0[r160];
  let r213: f32 = (r95 - r212);
  let r214: f32 = (r96 - r212);
  let r215: f32 = (r97 - r212);
  let r216: f32 = (r98 - r212);
  let r217: f32 = (r99 - r212);
  let r218: f32 = (r100 - r212);
  let r219: f32 = (r101 - r212);
  let r220: f32 = (r102 - r212);
  // line 20
  let r221: f32 = exp(r213);
  let r222: f32 = exp(r214);
  let r223: f32 = exp(r215);
  let r224: f32 = exp(r216);
  let r225: f32 = exp(r217);
  let r226: f32 = exp(r218);
  let r227: f32 = exp(r219);
  let r228: f32 = exp(r220);
  // line 21
  let r229: f32 = (r221 + r222);
  let r230: f32 = (r229 + r223);
  let r231: f32 = (r230 + r224);
  let r232: f32 = (r231 + r225);
  let r233: f32 = (r232 + r226);
  let r234: f32 = (r233 + r227);
  let r235: f32 = (r234 + r228);
  workgroupBarrier();
  s0[r161] = r235;
  workgroupBarrier();
  if (r164) {
    let r292: i32 = (r161 + r45);
    let r293: f32 = s0[r161];
    let r294: f32 = s0[r292];
    let r295: f32 = (r293 + r294);
    s0[r161] = r295;
  }
  workgroupBarrier();
  if (r171) {
    let r299: i32 = (r161 + r38);
    let r300: f32 = s0[r161];
    let r301: f32 = s0[r299];
    let r302: f32 = (r300 + r301);
    s0[r161] = r302;
  }
  workgroupBarrier();
  if (r178) {
    let r306: i32 = (r161 + r31);
    let r307: f32 = s0[r161];
    let r308: f32 = s0[r306];
    let r309: f32 = (r307 + r308);
    s0[r161] = r309;
  }
  workgroupBarrier();
  if (r185) {
    let r313: i32 = (r161 + r24);
    let r314: f32 = s0[r161];
    let r315: f32 = s0[r313];
    let r316: f32 = (r314 + r315);
    s0[r161] = r316;
  }
  workgroupBarrier();
  if (r192) {
    let r320: i32 = (r161 + r18);
    let r321: f32 = s0[r161];
    let r322: f32 = s0[r320];
    let r323: f32 = (r321 + r322);
    s0[r161] = r323;
  }
  workgroupBarrier();
  if (r199) {
    let r327: i32 = (r161 + r27);
    let r328: f32 = s0[r161];
    let r329: f32 = s0[r327];
    let r330: f32 = (r328 + r329);
    s0[r161] = r330;
  }
  workgroupBarrier();
  if (r206) {
    let r334: i32 = (r161 + r16);
    let r335: f32 = s0[r161];
    let r336: f32 = s0[r334];
    let r337: f32 = (r335 + r336);
    s0[r161] = r337;
  }
  workgroupBarrier();
  let r338: f32 = s0[r160];
  // line 22
  let r339: f32 = (r221 / r338);
  let r340: f32 = (r222 / r338);
  let r341: f32 = (r223 / r338);
  let r342: f32 = (r224 / r338);
  let r343: f32 = (r225 / r338);
  let r344: f32 = (r226 / r338);
  let r345: f32 = (r227 / r338);
  let r346: f32 = (r228 / r338);
  // line 23
  let r347: i32 = (r11 * r8);
  // line 24
  let r349: i32 = (r347 + r61);
  let r350: i32 = (r347 + r65);
  let r351: i32 = (r347 + r67);
  let r352: i32 = (r347 + r69);
  let r353: i32 = (r347 + r71);
  let r354: i32 = (r347 + r73);
  let r355: i32 = (r347 + r75);
  let r356: i32 = (r347 + r77);
  // line 25
  if (r86) { b0[(P.bases[0][0] + bitcast<u32>(r349))] = r339; }
  if (r87) { b0[(P.bases[0][0] + bitcast<u32>(r350))] = r340; }
  if (r88) { b0[(P.bases[0][0] + bitcast<u32>(r351))] = r341; }
  if (r89) { b0[(P.bases[0][0] + bitcast<u32>(r352))] = r342; }
  if (r90) { b0[(P.bases[0][0] + bitcast<u32>(r353))] = r343; }
  if (r91) { b0[(P.bases[0][0] + bitcast<u32>(r354))] = r344; }
  if (r92) { b0[(P.bases[0][0] + bitcast<u32>(r355))] = r345; }
  if (r93) { b0[(P.bases[0][0] + bitcast<u32>(r356))] = r346; }
}
