// tilewise: kernel `_layer_norm_fwd_fused`, 128 threads per program

struct Params {
  bases: array<vec4<u32>, 2>,
  words: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> b0: array<f32>; // X: f32
@group(0) @binding(1) var<storage, read_write> b1: array<f32>; // Y: f32
@group(0) @binding(2) var<storage, read> b2: array<f32>; // W: f32
@group(0) @binding(3) var<storage, read> b3: array<f32>; // B: f32
@group(0) @binding(4) var<storage, read_write> b4: array<f32>; // Mean: f32
@group(0) @binding(5) var<storage, read_write> b5: array<f32>; // Rstd: f32
@group(0) @binding(6) var<uniform> P: Params;
var<workgroup> s0: array<f32, 4>; // reduce_f32_0+reduce_f32_1

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>, @builtin(subgroup_id) tw_sg: u32, @builtin(subgroup_invocation_id) tw_sgi: u32) {
  var r22: f32;
  var r23: f32;
  var r24: f32;
  var r25: f32;
  var r26: f32;
  var r27: f32;
  var r28: f32;
  var r29: f32;
  var r30: i32;
  var r181: f32;
  var r182: f32;
  var r183: f32;
  var r184: f32;
  var r185: f32;
  var r186: f32;
  var r187: f32;
  var r188: f32;
  var r189: i32;
  var r336: i32;
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
  let r11: i32 = bitcast<i32>(P.words[1][0]);
  let r12: i32 = bitcast<i32>(P.words[1][1]);
  let r13: f32 = bitcast<f32>(P.words[1][2]);
  let r33: i32 = bitcast<i32>(0x1u);
  let r34: i32 = (r2 & r33);
  let r35: i32 = bitcast<i32>(0x4u);
  let r36: i32 = (r34 * r35);
  let r38: i32 = select(r2 >> (bitcast<u32>(r33) % 32u), r2 >> 31u, bitcast<u32>(r33) >= 32u);
  let r40: i32 = (r38 & r33);
  let r41: i32 = bitcast<i32>(0x8u);
  let r42: i32 = (r40 * r41);
  let r43: i32 = (r36 ^ r42);
  let r44: i32 = bitcast<i32>(0x2u);
  let r45: i32 = select(r2 >> (bitcast<u32>(r44) % 32u), r2 >> 31u, bitcast<u32>(r44) >= 32u);
  let r47: i32 = (r45 & r33);
  let r48: i32 = bitcast<i32>(0x10u);
  let r49: i32 = (r47 * r48);
  let r50: i32 = (r43 ^ r49);
  let r51: i32 = bitcast<i32>(0x3u);
  let r52: i32 = select(r2 >> (bitcast<u32>(r51) % 32u), r2 >> 31u, bitcast<u32>(r51) >= 32u);
  let r54: i32 = (r52 & r33);
  let r55: i32 = bitcast<i32>(0x20u);
  let r56: i32 = (r54 * r55);
  let r57: i32 = (r50 ^ r56);
  let r59: i32 = select(r2 >> (bitcast<u32>(r35) % 32u), r2 >> 31u, bitcast<u32>(r35) >= 32u);
  let r61: i32 = (r59 & r33);
  let r62: i32 = bitcast<i32>(0x40u);
  let r63: i32 = (r61 * r62);
  let r64: i32 = (r57 ^ r63);
  let r68: i32 = (r4 & r33);
  let r69: i32 = bitcast<i32>(0x80u);
  let r70: i32 = (r68 * r69);
  let r71: i32 = (r64 ^ r70);
  let r73: i32 = select(r4 >> (bitcast<u32>(r33) % 32u), r4 >> 31u, bitcast<u32>(r33) >= 32u);
  let r75: i32 = (r73 & r33);
  let r76: i32 = bitcast<i32>(0x100u);
  let r77: i32 = (r75 * r76);
  let r78: i32 = (r71 ^ r77);
  let r153: i32 = bitcast<i32>(tw_sg);
  let r154: i32 = bitcast<i32>(tw_sgi);
  let r156: bool = (r154 == r5);
  // line 24
  let r14: i32 = bitcast<i32>(tw_pid[0]);
  // line 25
  let r15: i32 = (r14 * r11);
  // line 28
  let r19: f32 = bitcast<f32>(0x0u);
  // line 29
  let r21: i32 = bitcast<i32>(0x400u);
  r22 = r19;
  r23 = r19;
  r24 = r19;
  r25 = r19;
  r26 = r19;
  r27 = r19;
  r28 = r19;
  r29 = r19;
  for (r30 = r5; (r21 > 0 && r30 < r12) || (r21 < 0 && r30 > r12); r30 = r30 + r21) {
    // line 30
    let r82: i32 = (r78 + r33);
    let r84: i32 = (r78 + r44);
    let r86: i32 = (r78 + r51);
    let r87: i32 = bitcast<i32>(0x200u);
    let r88: i32 = (r78 + r87);
    let r89: i32 = bitcast<i32>(0x201u);
    let r90: i32 = (r78 + r89);
    let r91: i32 = bitcast<i32>(0x202u);
    let r92: i32 = (r78 + r91);
    let r93: i32 = bitcast<i32>(0x203u);
    let r94: i32 = (r78 + r93);
    let r95: i32 = (r30 + r78);
    let r96: i32 = (r30 + r82);
    let r97: i32 = (r30 + r84);
    let r98: i32 = (r30 + r86);
    let r99: i32 = (r30 + r88);
    let r100: i32 = (r30 + r90);
    let r101: i32 = (r30 + r92);
    let r102: i32 = (r30 + r94);
    // line 31
    let r103: i32 = (r15 + r95);
    let r104: i32 = (r15 + r96);
    let r105: i32 = (r15 + r97);
    let r106: i32 = (r15 + r98);
    let r107: i32 = (r15 + r99);
    let r108: i32 = (r15 + r100);
    let r109: i32 = (r15 + r101);
    let r110: i32 = (r15 + r102);
    let r111: bool = (r95 < r12);
    let r112: bool = (r96 < r12);
    let r113: bool = (r97 < r12);
    let r114: bool = (r98 < r12);
    let r115: bool = (r99 < r12);
    let r116: bool = (r100 < r12);
    let r117: bool = (r101 < r12);
    let r118: bool = (r102 < r12);
    let r120: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r103)), r111)], r111);
    let r121: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r104)), r112)], r112);
    let r122: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r105)), r113)], r113);
    let r123: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r106)), r114)], r114);
    let r124: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r107)), r115)], r115);
    let r125: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r108)), r116)], r116);
    let r126: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r109)), r117)], r117);
    let r127: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r110)), r118)], r118);
    // line 32
    let r128: f32 = (r22 + r120);
    let r129: f32 = (r23 + r121);
    let r130: f32 = (r24 + r122);
    let r131: f32 = (r25 + r123);
    let r132: f32 = (r26 + r124);
    let r133: f32 = (r27 + r125);
    let r134: f32 = (r28 + r126);
    let r135: f32 = (r29 + r127);
    // line 29
    r22 = r128;
    r23 = r129;
    r24 = r130;
    r25 = r131;
    r26 = r132;
    r27 = r133;
    r28 = r134;
    r29 = r135;
  }
  // line 33
  let r144: f32 = (r22 + r23);
  let r145: f32 = (r144 + r24);
  let r146: f32 = (r145 + r25);
  let r147: f32 = (r146 + r26);
  let r148: f32 = (r147 + r27);
  let r149: f32 = (r148 + r28);
  let r150: f32 = (r149 + r29);
  let r151: f32 = subgroupAdd(r150);
  workgroupBarrier();
  if (r156) {
    let r158: i32 = (r5 * r35);
    let r159: i32 = (r158 + r153);
    s0[r159] = r151;
  }
  workgroupBarrier();
  let r160: i32 = (r5 * r35);
  let r163: f32 = s0[r160];
  let r165: i32 = (r160 + r33);
  let r166: f32 = s0[r165];
  let r167: f32 = (r163 + r166);
  let r169: i32 = (r160 + r44);
  let r170: f32 = s0[r169];
  let r171: f32 = (r167 + r170);
  let r173: i32 = (r160 + r51);
  let r174: f32 = s0[r173];
  let r175: f32 = (r171 + r174);
  let r176: f32 = f32(r12);
  let r177: f32 = (r175 / r176);
  // line 36
  r181 = r19;
  r182 = r19;
  r183 = r19;
  r184 = r19;
  r185 = r19;
  r186 = r19;
  r187 = r19;
  r188 = r19;
  for (r189 = r5; (r21 > 0 && r189 < r12) || (r21 < 0 && r189 > r12); r189 = r189 + r21) {
    // line 37
    let r193: i32 = (r78 + r33);
    let r195: i32 = (r78 + r44);
    let r197: i32 = (r78 + r51);
    let r198: i32 = bitcast<i32>(0x200u);
    let r199: i32 = (r78 + r198);
    let r200: i32 = bitcast<i32>(0x201u);
    let r201: i32 = (r78 + r200);
    let r202: i32 = bitcast<i32>(0x202u);
    let r203: i32 = (r78 + r202);
    let r204: i32 = bitcast<i32>(0x203u);
    let r205: i32 = (r78 + r204);
    let r206: i32 = (r189 + r78);
    let r207: i32 = (r189 + r193);
    let r208: i32 = (r189 + r195);
    let r209: i32 = (r189 + r197);
    let r210: i32 = (r189 + r199);
    let r211: i32 = (r189 + r201);
    let r212: i32 = (r189 + r203);
    let r213: i32 = (r189 + r205);
    // line 38
    let r214: i32 = (r15 + r206);
    let r215: i32 = (r15 + r207);
    let r216: i32 = (r15 + r208);
    let r217: i32 = (r15 + r209);
    let r218: i32 = (r15 + r210);
    let r219: i32 = (r15 + r211);
    let r220: i32 = (r15 + r212);
    let r221: i32 = (r15 + r213);
    let r222: bool = (r206 < r12);
    let r223: bool = (r207 < r12);
    let r224: bool = (r208 < r12);
    let r225: bool = (r209 < r12);
    let r226: bool = (r210 < r12);
    let r227: bool = (r211 < r12);
    let r228: bool = (r212 < r12);
    let r229: bool = (r213 < r12);
    let r231: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r214)), r222)], r222);
    let r232: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r215)), r223)], r223);
    let r233: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r216)), r224)], r224);
    let r234: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r217)), r225)], r225);
    let r235: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r218)), r226)], r226);
    let r236: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r219)), r227)], r227);
    let r237: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r220)), r228)], r228);
    let r238: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r221)), r229)], r229);
    // line 39
    let r247: f32 = (r231 - r177);
    let r248: f32 = (r232 - r177);
    let r249: f32 = (r233 - r177);
    let r250: f32 = (r234 - r177);
    let r251: f32 = (r235 - r177);
    let r252: f32 = (r236 - r177);
    let r253: f32 = (r237 - r177);
    let r254: f32 = (r238 - r177);
    let r256: f32 = select(r19, r247, r222);
    let r257: f32 = select(r19, r248, r223);
    let r258: f32 = select(r19, r249, r224);
    let r259: f32 = select(r19, r250, r225);
    let r260: f32 = select(r19, r251, r226);
    let r261: f32 = select(r19, r252, r227);
    let r262: f32 = select(r19, r253, r228);
    let r263: f32 = select(r19, r254, r229);
    // line 40
    let r264: f32 = (r256 * r256);
    let r265: f32 = (r257 * r257);
    let r266: f32 = (r258 * r258);
    let r267: f32 = (r259 * r259);
    let r268: f32 = (r260 * r260);
    let r269: f32 = (r261 * r261);
    let r270: f32 = (r262 * r262);
    let r271: f32 = (r263 * r263);
    let r272: f32 = (r181 + r264);
    let r273: f32 = (r182 + r265);
    let r274: f32 = (r183 + r266);
    let r275: f32 = (r184 + r267);
    let r276: f32 = (r185 + r268);
    let r277: f32 = (r186 + r269);
    let r278: f32 = (r187 + r270);
    let r279: f32 = (r188 + r271);
    // line 36
    r181 = r272;
    r182 = r273;
    r183 = r274;
    r184 = r275;
    r185 = r276;
    r186 = r277;
    r187 = r278;
    r188 = r279;
  }
  // line 41
  let r288: f32 = (r181 + r182);
  let r289: f32 = (r288 + r183);
  let r290: f32 = (r289 + r184);
  let r291: f32 = (r290 + r185);
  let r292: f32 = (r291 + r186);
  let r293: f32 = (r292 + r187);
  let r294: f32 = (r293 + r188);
  let r295: f32 = subgroupAdd(r294);
  workgroupBarrier();
  if (r156) {
    let r303: i32 = (r160 + r153);
    s0[r303] = r295;
  }
  workgroupBarrier();
  let r307: f32 = s0[r160];
  let r310: f32 = s0[r165];
  let r311: f32 = (r307 + r310);
  let r314: f32 = s0[r169];
  let r315: f32 = (r311 + r314);
  let r318: f32 = s0[r173];
  let r319: f32 = (r315 + r318);
  let r321: f32 = (r319 / r176);
  // line 42
  let r322: f32 = (r321 + r13);
  let r323: f32 = sqrt(r322);
  let r324: f32 = bitcast<f32>(0x3f800000u);
  let r325: f32 = (r324 / r323);
  // line 43
  let r329: bool = (r0 == r5);
  if (r329) { b4[(P.bases[1][0] + bitcast<u32>(r14))] = r177; }
  // line 44
  if (r329) { b5[(P.bases[1][1] + bitcast<u32>(r14))] = r325; }
  // line 46
  for (r336 = r5; (r21 > 0 && r336 < r12) || (r21 < 0 && r336 > r12); r336 = r336 + r21) {
    // line 47
    let r340: i32 = (r78 + r33);
    let r342: i32 = (r78 + r44);
    let r344: i32 = (r78 + r51);
    let r345: i32 = bitcast<i32>(0x200u);
    let r346: i32 = (r78 + r345);
    let r347: i32 = bitcast<i32>(0x201u);
    let r348: i32 = (r78 + r347);
    let r349: i32 = bitcast<i32>(0x202u);
    let r350: i32 = (r78 + r349);
    let r351: i32 = bitcast<i32>(0x203u);
    let r352: i32 = (r78 + r351);
    let r353: i32 = (r336 + r78);
    let r354: i32 = (r336 + r340);
    let r355: i32 = (r336 + r342);
    let r356: i32 = (r336 + r344);
    let r357: i32 = (r336 + r346);
    let r358: i32 = (r336 + r348);
    let r359: i32 = (r336 + r350);
    let r360: i32 = (r336 + r352);
    // line 48
    let r361: bool = (r353 < r12);
    let r362: bool = (r354 < r12);
    let r363: bool = (r355 < r12);
    let r364: bool = (r356 < r12);
    let r365: bool = (r357 < r12);
    let r366: bool = (r358 < r12);
    let r367: bool = (r359 < r12);
    let r368: bool = (r360 < r12);
    // line 49
    let r378: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r353)), r361)], r361);
    let r380: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r354)), r362)], r362);
    let r382: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r355)), r363)], r363);
    let r384: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r356)), r364)], r364);
    let r386: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r357)), r365)], r365);
    let r388: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r358)), r366)], r366);
    let r390: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r359)), r367)], r367);
    let r392: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r360)), r368)], r368);
    // line 50
    let r402: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r353)), r361)], r361);
    let r404: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r354)), r362)], r362);
    let r406: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r355)), r363)], r363);
    let r408: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r356)), r364)], r364);
    let r410: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r357)), r365)], r365);
    let r412: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r358)), r366)], r366);
    let r414: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r359)), r367)], r367);
    let r416: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r360)), r368)], r368);
    // line 51
    let r417: i32 = (r15 + r353);
    let r418: i32 = (r15 + r354);
    let r419: i32 = (r15 + r355);
    let r420: i32 = (r15 + r356);
    let r421: i32 = (r15 + r357);
    let r422: i32 = (r15 + r358);
    let r423: i32 = (r15 + r359);
    let r424: i32 = (r15 + r360);
    let r426: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r417)), r361)], r361);
    let r427: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r418)), r362)], r362);
    let r428: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r419)), r363)], r363);
    let r429: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r420)), r364)], r364);
    let r430: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r421)), r365)], r365);
    let r431: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r422)), r366)], r366);
    let r432: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r423)), r367)], r367);
    let r433: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r424)), r368)], r368);
    // line 52
    let r434: f32 = (r426 - r177);
    let r435: f32 = (r427 - r177);
    let r436: f32 = (r428 - r177);
    let r437: f32 = (r429 - r177);
    let r438: f32 = (r430 - r177);
    let r439: f32 = (r431 - r177);
    let r440: f32 = (r432 - r177);
    let r441: f32 = (r433 - r177);
    let r442: f32 = (r434 * r325);
    let r443: f32 = (r435 * r325);
    let r444: f32 = (r436 * r325);
    let r445: f32 = (r437 * r325);
    let r446: f32 = (r438 * r325);
    let r447: f32 = (r439 * r325);
    let r448: f32 = (r440 * r325);
    let r449: f32 = (r441 * r325);
    // line 53
    let r450: f32 = (r442 * r378);
    let r451: f32 = (r443 * r380);
    let r452: f32 = (r444 * r382);
    let r453: f32 = (r445 * r384);
    let r454: f32 = (r446 * r386);
    let r455: f32 = (r447 * r388);
    let r456: f32 = (r448 * r390);
    let r457: f32 = (r449 * r392);
    let r458: f32 = (r450 + r402);
    let r459: f32 = (r451 + r404);
    let r460: f32 = (r452 + r406);
    let r461: f32 = (r453 + r408);
    let r462: f32 = (r454 + r410);
    let r463: f32 = (r455 + r412);
    let r464: f32 = (r456 + r414);
    let r465: f32 = (r457 + r416);
    // line 54
    if (r361) { b1[(P.bases[0][1] + bitcast<u32>(r417))] = r458; }
    if (r362) { b1[(P.bases[0][1] + bitcast<u32>(r418))] = r459; }
    if (r363) { b1[(P.bases[0][1] + bitcast<u32>(r419))] = r460; }
    if (r364) { b1[(P.bases[0][1] + bitcast<u32>(r420))] = r461; }
    if (r365) { b1[(P.bases[0][1] + bitcast<u32>(r421))] = r462; }
    if (r366) { b1[(P.bases[0][1] + bitcast<u32>(r422))] = r463; }
    if (r367) { b1[(P.bases[0][1] + bitcast<u32>(r423))] = r464; }
    if (r368) { b1[(P.bases[0][1] + bitcast<u32>(r424))] = r465; }
  }
}
