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
var<workgroup> s0: array<f32, 128>; // reduce_f32_0+reduce_f32_1

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>) {
  var r22: f32;
  var r23: f32;
  var r24: f32;
  var r25: f32;
  var r26: f32;
  var r27: f32;
  var r28: f32;
  var r29: f32;
  var r30: i32;
  var r258: f32;
  var r259: f32;
  var r260: f32;
  var r261: f32;
  var r262: f32;
  var r263: f32;
  var r264: f32;
  var r265: f32;
  var r266: i32;
  var r490: i32;
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
  let r163: i32 = select(r40 << (bitcast<u32>(r33) % 32u), 0, bitcast<u32>(r33) >= 32u);
  let r164: i32 = (r34 | r163);
  let r170: i32 = select(r47 << (bitcast<u32>(r44) % 32u), 0, bitcast<u32>(r44) >= 32u);
  let r171: i32 = (r164 | r170);
  let r177: i32 = select(r54 << (bitcast<u32>(r51) % 32u), 0, bitcast<u32>(r51) >= 32u);
  let r178: i32 = (r171 | r177);
  let r184: i32 = select(r61 << (bitcast<u32>(r35) % 32u), 0, bitcast<u32>(r35) >= 32u);
  let r185: i32 = (r178 | r184);
  let r191: i32 = select(r68 << (bitcast<u32>(r3) % 32u), 0, bitcast<u32>(r3) >= 32u);
  let r192: i32 = (r185 | r191);
  let r197: i32 = bitcast<i32>(0x6u);
  let r198: i32 = select(r75 << (bitcast<u32>(r197) % 32u), 0, bitcast<u32>(r197) >= 32u);
  let r199: i32 = (r192 | r198);
  let r201: i32 = (r5 * r69);
  workgroupBarrier();
  let r202: i32 = (r201 + r199);
  s0[r202] = r150;
  workgroupBarrier();
  let r204: bool = (r199 < r62);
  if (r204) {
    let r206: i32 = (r202 + r62);
    let r207: f32 = s0[r202];
    let r208: f32 = s0[r206];
    let r209: f32 = (r207 + r208);
    s0[r202] = r209;
  }
  workgroupBarrier();
  let r211: bool = (r199 < r55);
  if (r211) {
    let r213: i32 = (r202 + r55);
    let r214: f32 = s0[r202];
    let r215: f32 = s0[r213];
    let r216: f32 = (r214 + r215);
    s0[r202] = r216;
  }
  workgroupBarrier();
  let r218: bool = (r199 < r48);
  if (r218) {
    let r220: i32 = (r202 + r48);
    let r221: f32 = s0[r202];
    let r222: f32 = s0[r220];
    let r223: f32 = (r221 + r222);
    s0[r202] = r223;
  }
  workgroupBarrier();
  let r225: bool = (r199 < r41);
  if (r225) {
    let r227: i32 = (r202 + r41);
    let r228: f32 = s0[r202];
    let r229: f32 = s0[r227];
    let r230: f32 = (r228 + r229);
    s0[r202] = r230;
  }
  workgroupBarrier();
  let r232: bool = (r199 < r35);
  if (r232) {
    let r234: i32 = (r202 + r35);
    let r235: f32 = s0[r202];
    let r236: f32 = s0[r234];
    let r237: f32 = (r235 + r236);
    s0[r202] = r237;
  }
  workgroupBarrier();
  let r239: bool = (r199 < r44);
  if (r239) {
    let r241: i32 = (r202 + r44);
    let r242: f32 = s0[r202];
    let r243: f32 = s0[r241];
    let r244: f32 = (r242 + r243);
    s0[r202] = r244;
  }
  workgroupBarrier();
  let r246: bool = (r199 < r33);
  if (r246) {
    let r248: i32 = (r202 + r33);
    let r249: f32 = s0[r202];
    let r250: f32 = s0[r248];
    let r251: f32 = (r249 + r250);
    s0[r202] = r251;
  }
  workgroupBarrier();
  let r252: f32 = s0[r201];
  let r253: f32 = f32(r12);
  let r254: f32 = (r252 / r253);
  // line 36
  r258 = r19;
  r259 = r19;
  r260 = r19;
  r261 = r19;
  r262 = r19;
  r263 = r19;
  r264 = r19;
  r265 = r19;
  for (r266 = r5; (r21 > 0 && r266 < r12) || (r21 < 0 && r266 > r12); r266 = r266 + r21) {
    // line 37
    let r270: i32 = (r78 + r33);
    let r272: i32 = (r78 + r44);
    let r274: i32 = (r78 + r51);
    let r275: i32 = bitcast<i32>(0x200u);
    let r276: i32 = (r78 + r275);
    let r277: i32 = bitcast<i32>(0x201u);
    let r278: i32 = (r78 + r277);
    let r279: i32 = bitcast<i32>(0x202u);
    let r280: i32 = (r78 + r279);
    let r281: i32 = bitcast<i32>(0x203u);
    let r282: i32 = (r78 + r281);
    let r283: i32 = (r266 + r78);
    let r284: i32 = (r266 + r270);
    let r285: i32 = (r266 + r272);
    let r286: i32 = (r266 + r274);
    let r287: i32 = (r266 + r276);
    let r288: i32 = (r266 + r278);
    let r289: i32 = (r266 + r280);
    let r290: i32 = (r266 + r282);
    // line 38
    let r291: i32 = (r15 + r283);
    let r292: i32 = (r15 + r284);
    let r293: i32 = (r15 + r285);
    let r294: i32 = (r15 + r286);
    let r295: i32 = (r15 + r287);
    let r296: i32 = (r15 + r288);
    let r297: i32 = (r15 + r289);
    let r298: i32 = (r15 + r290);
    let r299: bool = (r283 < r12);
    let r300: bool = (r284 < r12);
    let r301: bool = (r285 < r12);
    let r302: bool = (r286 < r12);
    let r303: bool = (r287 < r12);
    let r304: bool = (r288 < r12);
    let r305: bool = (r289 < r12);
    let r306: bool = (r290 < r12);
    let r308: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r291)), r299)], r299);
    let r309: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r292)), r300)], r300);
    let r310: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r293)), r301)], r301);
    let r311: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r294)), r302)], r302);
    let r312: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r295)), r303)], r303);
    let r313: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r296)), r304)], r304);
    let r314: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r297)), r305)], r305);
    let r315: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r298)), r306)], r306);
    // line 39
    let r324: f32 = (r308 - r254);
    let r325: f32 = (r309 - r254);
    let r326: f32 = (r310 - r254);
    let r327: f32 = (r311 - r254);
    let r328: f32 = (r312 - r254);
    let r329: f32 = (r313 - r254);
    let r330: f32 = (r314 - r254);
    let r331: f32 = (r315 - r254);
    let r333: f32 = select(r19, r324, r299);
    let r334: f32 = select(r19, r325, r300);
    let r335: f32 = select(r19, r326, r301);
    let r336: f32 = select(r19, r327, r302);
    let r337: f32 = select(r19, r328, r303);
    let r338: f32 = select(r19, r329, r304);
    let r339: f32 = select(r19, r330, r305);
    let r340: f32 = select(r19, r331, r306);
    // line 40
    let r341: f32 = (r333 * r333);
    let r342: f32 = (r334 * r334);
    let r343: f32 = (r335 * r335);
    let r344: f32 = (r336 * r336);
    let r345: f32 = (r337 * r337);
    let r346: f32 = (r338 * r338);
    let r347: f32 = (r339 * r339);
    let r348: f32 = (r340 * r340);
    let r349: f32 = (r258 + r341);
    let r350: f32 = (r259 + r342);
    let r351: f32 = (r260 + r343);
    let r352: f32 = (r261 + r344);
    let r353: f32 = (r262 + r345);
    let r354: f32 = (r263 + r346);
    let r355: f32 = (r264 + r347);
    let r356: f32 = (r265 + r348);
    // line 36
    r258 = r349;
    r259 = r350;
    r260 = r351;
    r261 = r352;
    r262 = r353;
    r263 = r354;
    r264 = r355;
    r265 = r356;
  }
  // line 41
  let r365: f32 = (r258 + r259);
  let r366: f32 = (r365 + r260);
  let r367: f32 = (r366 + r261);
  let r368: f32 = (r367 + r262);
  let r369: f32 = (r368 + r263);
  let r370: f32 = (r369 + r264);
  let r371: f32 = (r370 + r265);
  workgroupBarrier();
  s0[r202] = r371;
  workgroupBarrier();
  if (r204) {
    let r427: i32 = (r202 + r62);
    let r428: f32 = s0[r202];
    let r429: f32 = s0[r427];
    let r430: f32 = (r428 + r429);
    s0[r202] = r430;
  }
  workgroupBarrier();
  if (r211) {
    let r434: i32 = (r202 + r55);
    let r435: f32 = s0[r202];
    let r436: f32 = s0[r434];
    let r437: f32 = (r435 + r436);
    s0[r202] = r437;
  }
  workgroupBarrier();
  if (r218) {
    let r441: i32 = (r202 + r48);
    let r442: f32 = s0[r202];
    let r443: f32 = s0[r441];
    let r444: f32 = (r442 + r443);
    s0[r202] = r444;
  }
  workgroupBarrier();
  if (r225) {
    let r448: i32 = (r202 + r41);
    let r449: f32 = s0[r202];
    let r450: f32 = s0[r448];
    let r451: f32 = (r449 + r450);
    s0[r202] = r451;
  }
  workgroupBarrier();
  if (r232) {
    let r455: i32 = (r202 + r35);
    let r456: f32 = s0[r202];
    let r457: f32 = s0[r455];
    let r458: f32 = (r456 + r457);
    s0[r202] = r458;
  }
  workgroupBarrier();
  if (r239) {
    let r462: i32 = (r202 + r44);
    let r463: f32 = s0[r202];
    let r464: f32 = s0[r462];
    let r465: f32 = (r463 + r464);
    s0[r202] = r465;
  }
  workgroupBarrier();
  if (r246) {
    let r469: i32 = (r202 + r33);
    let r470: f32 = s0[r202];
    let r471: f32 = s0[r469];
    let r472: f32 = (r470 + r471);
    s0[r202] = r472;
  }
  workgroupBarrier();
  let r473: f32 = s0[r201];
  let r475: f32 = (r473 / r253);
  // line 42
  let r476: f32 = (r475 + r13);
  let r477: f32 = sqrt(r476);
  let r478: f32 = bitcast<f32>(0x3f800000u);
  let r479: f32 = (r478 / r477);
  // line 43
  let r483: bool = (r0 == r5);
  if (r483) { b4[(P.bases[1][0] + bitcast<u32>(r14))] = r254; }
  // line 44
  if (r483) { b5[(P.bases[1][1] + bitcast<u32>(r14))] = r479; }
  // line 46
  for (r490 = r5; (r21 > 0 && r490 < r12) || (r21 < 0 && r490 > r12); r490 = r490 + r21) {
    // line 47
    let r494: i32 = (r78 + r33);
    let r496: i32 = (r78 + r44);
    let r498: i32 = (r78 + r51);
    let r499: i32 = bitcast<i32>(0x200u);
    let r500: i32 = (r78 + r499);
    let r501: i32 = bitcast<i32>(0x201u);
    let r502: i32 = (r78 + r501);
    let r503: i32 = bitcast<i32>(0x202u);
    let r504: i32 = (r78 + r503);
    let r505: i32 = bitcast<i32>(0x203u);
    let r506: i32 = (r78 + r505);
    let r507: i32 = (r490 + r78);
    let r508: i32 = (r490 + r494);
    let r509: i32 = (r490 + r496);
    let r510: i32 = (r490 + r498);
    let r511: i32 = (r490 + r500);
    let r512: i32 = (r490 + r502);
    let r513: i32 = (r490 + r504);
    let r514: i32 = (r490 + r506);
    // line 48
    let r515: bool = (r507 < r12);
    let r516: bool = (r508 < r12);
    let r517: bool = (r509 < r12);
    let r518: bool = (r510 < r12);
    let r519: bool = (r511 < r12);
    let r520: bool = (r512 < r12);
    let r521: bool = (r513 < r12);
    let r522: bool = (r514 < r12);
    // line 49
    let r532: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r507)), r515)], r515);
    let r534: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r508)), r516)], r516);
    let r536: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r509)), r517)], r517);
    let r538: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r510)), r518)], r518);
    let r540: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r511)), r519)], r519);
    let r542: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r512)), r520)], r520);
    let r544: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r513)), r521)], r521);
    let r546: f32 = select(r19, b2[select(P.bases[0][2], (P.bases[0][2] + bitcast<u32>(r514)), r522)], r522);
    // line 50
    let r556: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r507)), r515)], r515);
    let r558: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r508)), r516)], r516);
    let r560: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r509)), r517)], r517);
    let r562: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r510)), r518)], r518);
    let r564: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r511)), r519)], r519);
    let r566: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r512)), r520)], r520);
    let r568: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r513)), r521)], r521);
    let r570: f32 = select(r19, b3[select(P.bases[0][3], (P.bases[0][3] + bitcast<u32>(r514)), r522)], r522);
    // line 51
    let r571: i32 = (r15 + r507);
    let r572: i32 = (r15 + r508);
    let r573: i32 = (r15 + r509);
    let r574: i32 = (r15 + r510);
    let r575: i32 = (r15 + r511);
    let r576: i32 = (r15 + r512);
    let r577: i32 = (r15 + r513);
    let r578: i32 = (r15 + r514);
    let r580: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r571)), r515)], r515);
    let r581: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r572)), r516)], r516);
    let r582: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r573)), r517)], r517);
    let r583: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r574)), r518)], r518);
    let r584: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r575)), r519)], r519);
    let r585: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r576)), r520)], r520);
    let r586: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r577)), r521)], r521);
    let r587: f32 = select(r19, b0[select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r578)), r522)], r522);
    // line 52
    let r588: f32 = (r580 - r254);
    let r589: f32 = (r581 - r254);
    let r590: f32 = (r582 - r254);
    let r591: f32 = (r583 - r254);
    let r592: f32 = (r584 - r254);
    let r593: f32 = (r585 - r254);
    let r594: f32 = (r586 - r254);
    let r595: f32 = (r587 - r254);
    let r596: f32 = (r588 * r479);
    let r597: f32 = (r589 * r479);
    let r598: f32 = (r590 * r479);
    let r599: f32 = (r591 * r479);
    let r600: f32 = (r592 * r479);
    let r601: f32 = (r593 * r479);
    let r602: f32 = (r594 * r479);
    let r603: f32 = (r595 * r479);
    // line 53
    let r604: f32 = (r596 * r532);
    let r605: f32 = (r597 * r534);
    let r606: f32 = (r598 * r536);
    let r607: f32 = (r599 * r538);
    let r608: f32 = (r600 * r540);
    let r609: f32 = (r601 * r542);
    let r610: f32 = (r602 * r544);
    let r611: f32 = (r603 * r546);
    let r612: f32 = (r604 + r556);
    let r613: f32 = (r605 + r558);
    let r614: f32 = (r606 + r560);
    let r615: f32 = (r607 + r562);
    let r616: f32 = (r608 + r564);
    let r617: f32 = (r609 + r566);
    let r618: f32 = (r610 + r568);
    let r619: f32 = (r611 + r570);
    // line 54
    if (r515) { b1[(P.bases[0][1] + bitcast<u32>(r571))] = r612; }
    if (r516) { b1[(P.bases[0][1] + bitcast<u32>(r572))] = r613; }
    if (r517) { b1[(P.bases[0][1] + bitcast<u32>(r573))] = r614; }
    if (r518) { b1[(P.bases[0][1] + bitcast<u32>(r574))] = r615; }
    if (r519) { b1[(P.bases[0][1] + bitcast<u32>(r575))] = r616; }
    if (r520) { b1[(P.bases[0][1] + bitcast<u32>(r576))] = r617; }
    if (r521) { b1[(P.bases[0][1] + bitcast<u32>(r577))] = r618; }
    if (r522) { b1[(P.bases[0][1] + bitcast<u32>(r578))] = r619; }
  }
}
