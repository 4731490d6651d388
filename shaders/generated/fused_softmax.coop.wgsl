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
var<workgroup> s0: array<f32, 4>; // reduce_f32_0+reduce_f32_1

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>, @builtin(subgroup_id) tw_sg: u32, @builtin(subgroup_invocation_id) tw_sgi: u32) {
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
  let r130: i32 = bitcast<i32>(tw_sg);
  let r131: i32 = bitcast<i32>(tw_sgi);
  let r133: bool = (r131 == r5);
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
  let r110: i32 = bitcast<i32>(r109);
  let r112: i32 = select(r110 >> (bitcast<u32>(r1) % 32u), r110 >> 31u, bitcast<u32>(r1) >= 32u);
  let r113: i32 = bitcast<i32>(0x7fffffffu);
  let r114: i32 = (r112 & r113);
  let r115: i32 = (r110 ^ r114);
  let r116: bool = (tw_isnan(r109) || tw_isnan(r109) || r109 != r109);
  let r117: i32 = bitcast<i32>(0x80000000u);
  let r118: i32 = select(r115, r117, r116);
  let r119: i32 = subgroupMax(r118);
  let r121: i32 = select(r119 >> (bitcast<u32>(r1) % 32u), r119 >> 31u, bitcast<u32>(r1) >= 32u);
  let r123: i32 = (r121 & r113);
  let r124: i32 = (r119 ^ r123);
  let r125: f32 = bitcast<f32>(r124);
  let r126: bool = (r119 == r117);
  let r127: f32 = bitcast<f32>(0x7fc00000u);
  let r128: f32 = select(r125, r127, r126);
  workgroupBarrier();
  if (r133) {
    let r135: i32 = (r5 * r18);
    let r136: i32 = (r135 + r130);
    s0[r136] = r128;
  }
  workgroupBarrier();
  let r137: i32 = (r5 * r18);
  let r140: f32 = s0[r137];
  let r142: i32 = (r137 + r16);
  let r143: f32 = s0[r142];
  let r144: f32 = tw_maxf(r140, r143);
  let r146: i32 = (r137 + r27);
  let r147: f32 = s0[r146];
  let r148: f32 = tw_maxf(r144, r147);
  let r150: i32 = (r137 + r34);
  let r151: f32 = s0[r150];
  let r152: f32 = tw_maxf(r148, r151);
  let r153: f32 = (r95 - r152);
  let r154: f32 = (r96 - r152);
  let r155: f32 = (r97 - r152);
  let r156: f32 = (r98 - r152);
  let r157: f32 = (r99 - r152);
  let r158: f32 = (r100 - r152);
  let r159: f32 = (r101 - r152);
  let r160: f32 = (r102 - r152);
  // line 20
  let r161: f32 = exp(r153);
  let r162: f32 = exp(r154);
  let r163: f32 = exp(r155);
  let r164: f32 = exp(r156);
  let r165: f32 = exp(r157);
  let r166: f32 = exp(r158);
  let r167: f32 = exp(r159);
  let r168: f32 = exp(r160);
  // line 21
  let r169: f32 = (r161 + r162);
  let r170: f32 = (r169 + r163);
  let r171: f32 = (r170 + r164);
  let r172: f32 = (r171 + r165);
  let r173: f32 = (r172 + r166);
  let r174: f32 = (r173 + r167);
  let r175: f32 = (r174 + r168);
  let r176: f32 = subgroupAdd(r175);
  workgroupBarrier();
  if (r133) {
    let r184: i32 = (r137 + r130);
    s0[r184] = r176;
  }
  workgroupBarrier();
  let r188: f32 = s0[r137];
  let r191: f32 = s0[r142];
  let r192: f32 = (r188 + r191);
  let r195: f32 = s0[r146];
  let r196: f32 = (r192 + r195);
  let r199: f32 = s0[r150];
  let r200: f32 = (r196 + r199);
  // line 22
  let r201: f32 = (r161 / r200);
  let r202: f32 = (r162 / r200);
  let r203: f32 = (r163 / r200);
  let r204: f32 = (r164 / r200);
  let r205: f32 = (r165 / r200);
  let r206: f32 = (r166 / r200);
  let r207: f32 = (r167 / r200);
  let r208: f32 = (r168 / r200);
  // line 23
  let r209: i32 = (r11 * r8);
  // line 24
  let r211: i32 = (r209 + r61);
  let r212: i32 = (r209 + r65);
  let r213: i32 = (r209 + r67);
  let r214: i32 = (r209 + r69);
  let r215: i32 = (r209 + r71);
  let r216: i32 = (r209 + r73);
  let r217: i32 = (r209 + r75);
  let r218: i32 = (r209 + r77);
  // line 25
  if (r86) { b0[(P.bases[0][0] + bitcast<u32>(r211))] = r201; }
  if (r87) { b0[(P.bases[0][0] + bitcast<u32>(r212))] = r202; }
  if (r88) { b0[(P.bases[0][0] + bitcast<u32>(r213))] = r203; }
  if (r89) { b0[(P.bases[0][0] + bitcast<u32>(r214))] = r204; }
  if (r90) { b0[(P.bases[0][0] + bitcast<u32>(r215))] = r205; }
  if (r91) { b0[(P.bases[0][0] + bitcast<u32>(r216))] = r206; }
  if (r92) { b0[(P.bases[0][0] + bitcast<u32>(r217))] = r207; }
  if (r93) { b0[(P.bases[0][0] + bitcast<u32>(r218))] = r208; }
}
