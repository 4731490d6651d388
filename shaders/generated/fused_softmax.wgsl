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
  let r160: i32 = (r5 * r52);
  workgroupBarrier();
  let r161: i32 = (r160 + r158);
  s0[r161] = r109;
  workgroupBarrier();
  let r163: bool = (r158 < r45);
  if (r163) {
    let r165: i32 = (r161 + r45);
    let r166: f32 = s0[r161];
    let r167: f32 = s0[r165];
    let r168: f32 = tw_maxf(r166, r167);
    s0[r161] = r168;
  }
  workgroupBarrier();
  let r170: bool = (r158 < r38);
  if (r170) {
    let r172: i32 = (r161 + r38);
    let r173: f32 = s0[r161];
    let r174: f32 = s0[r172];
    let r175: f32 = tw_maxf(r173, r174);
    s0[r161] = r175;
  }
  workgroupBarrier();
  let r177: bool = (r158 < r31);
  if (r177) {
    let r179: i32 = (r161 + r31);
    let r180: f32 = s0[r161];
    let r181: f32 = s0[r179];
    let r182: f32 = tw_maxf(r180, r181);
    s0[r161] = r182;
  }
  workgroupBarrier();
  let r184: bool = (r158 < r24);
  if (r184) {
    let r186: i32 = (r161 + r24);
    let r187: f32 = s0[r161];
    let r188: f32 = s0[r186];
    let r189: f32 = tw_maxf(r187, r188);
    s0[r161] = r189;
  }
  workgroupBarrier();
  let r191: bool = (r158 < r18);
  if (r191) {
    let r193: i32 = (r161 + r18);
    let r194: f32 = s0[r161];
    let r195: f32 = s0[r193];
    let r196: f32 = tw_maxf(r194, r195);
    s0[r161] = r196;
  }
  workgroupBarrier();
  let r198: bool = (r158 < r27);
  if (r198) {
    let r200: i32 = (r161 + r27);
    let r201: f32 = s0[r161];
    let r202: f32 = s0[r200];
    let r203: f32 = tw_maxf(r201, r202);
    s0[r161] = r203;
  }
  workgroupBarrier();
  let r205: bool = (r158 < r16);
  if (r205) {
    let r207: i32 = (r161 + r16);
    let r208: f32 = s0[r161];
    let r209: f32 = s0[r207];
    let r210: f32 = tw_maxf(r208, r209);
    s0[r161] = r210;
  }
  workgroupBarrier();
  let r211: f32 = s0[r160];
  let r212: f32 = (r95 - r211);
  let r213: f32 = (r96 - r211);
  let r214: f32 = (r97 - r211);
  let r215: f32 = (r98 - r211);
  let r216: f32 = (r99 - r211);
  let r217: f32 = (r100 - r211);
  let r218: f32 = (r101 - r211);
  let r219: f32 = (r102 - r211);
  // line 20
  let r220: f32 = exp(r212);
  let r221: f32 = exp(r213);
  let r222: f32 = exp(r214);
  let r223: f32 = exp(r215);
  let r224: f32 = exp(r216);
  let r225: f32 = exp(r217);
  let r226: f32 = exp(r218);
  let r227: f32 = exp(r219);
  // line 21
  let r228: f32 = (r220 + r221);
  let r229: f32 = (r228 + r222);
  let r230: f32 = (r229 + r223);
  let r231: f32 = (r230 + r224);
  let r232: f32 = (r231 + r225);
  let r233: f32 = (r232 + r226);
  let r234: f32 = (r233 + r227);
  workgroupBarrier();
  s0[r161] = r234;
  workgroupBarrier();
  if (r163) {
    let r290: i32 = (r161 + r45);
    let r291: f32 = s0[r161];
    let r292: f32 = s0[r290];
    let r293: f32 = (r291 + r292);
    s0[r161] = r293;
  }
  workgroupBarrier();
  if (r170) {
    let r297: i32 = (r161 + r38);
    let r298: f32 = s0[r161];
    let r299: f32 = s0[r297];
    let r300: f32 = (r298 + r299);
    s0[r161] = r300;
  }
  workgroupBarrier();
  if (r177) {
    let r304: i32 = (r161 + r31);
    let r305: f32 = s0[r161];
    let r306: f32 = s0[r304];
    let r307: f32 = (r305 + r306);
    s0[r161] = r307;
  }
  workgroupBarrier();
  if (r184) {
    let r311: i32 = (r161 + r24);
    let r312: f32 = s0[r161];
    let r313: f32 = s0[r311];
    let r314: f32 = (r312 + r313);
    s0[r161] = r314;
  }
  workgroupBarrier();
  if (r191) {
    let r318: i32 = (r161 + r18);
    let r319: f32 = s0[r161];
    let r320: f32 = s0[r318];
    let r321: f32 = (r319 + r320);
    s0[r161] = r321;
  }
  workgroupBarrier();
  if (r198) {
    let r325: i32 = (r161 + r27);
    let r326: f32 = s0[r161];
    let r327: f32 = s0[r325];
    let r328: f32 = (r326 + r327);
    s0[r161] = r328;
  }
  workgroupBarrier();
  if (r205) {
    let r332: i32 = (r161 + r16);
    let r333: f32 = s0[r161];
    let r334: f32 = s0[r332];
    let r335: f32 = (r333 + r334);
    s0[r161] = r335;
  }
  workgroupBarrier();
  let r336: f32 = s0[r160];
  // line 22
  let r337: f32 = (r220 / r336);
  let r338: f32 = (r221 / r336);
  let r339: f32 = (r222 / r336);
  let r340: f32 = (r223 / r336);
  let r341: f32 = (r224 / r336);
  let r342: f32 = (r225 / r336);
  let r343: f32 = (r226 / r336);
  let r344: f32 = (r227 / r336);
  // line 23
  let r345: i32 = (r11 * r8);
  // line 24
  let r347: i32 = (r345 + r61);
  let r348: i32 = (r345 + r65);
  let r349: i32 = (r345 + r67);
  let r350: i32 = (r345 + r69);
  let r351: i32 = (r345 + r71);
  let r352: i32 = (r345 + r73);
  let r353: i32 = (r345 + r75);
  let r354: i32 = (r345 + r77);
  // line 25
  if (r86) { b0[(P.bases[0][0] + bitcast<u32>(r347))] = r337; }
  if (r87) { b0[(P.bases[0][0] + bitcast<u32>(r348))] = r338; }
  if (r88) { b0[(P.bases[0][0] + bitcast<u32>(r349))] = r339; }
  if (r89) { b0[(P.bases[0][0] + bitcast<u32>(r350))] = r340; }
  if (r90) { b0[(P.bases[0][0] + bitcast<u32>(r351))] = r341; }
  if (r91) { b0[(P.bases[0][0] + bitcast<u32>(r352))] = r342; }
  if (r92) { b0[(P.bases[0][0] + bitcast<u32>(r353))] = r343; }
  if (r93) { b0[(P.bases[0][0] + bitcast<u32>(r354))] = r344; }
}
