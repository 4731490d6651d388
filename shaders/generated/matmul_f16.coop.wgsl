// tilewise: kernel `matmul_kernel`, 128 threads per program
enable f16;
enable wgpu_cooperative_matrix;

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
fn tw_idiv(a: i32, b: i32) -> i32 { if (b == 0) { return 0; } if (b == -1) { return 0 - a; } return a / b; }
fn tw_irem(a: i32, b: i32) -> i32 { if (b == 0 || b == -1) { return 0; } return a % b; }
fn tw_to_f16(x: f32) -> f16 { return f16(unpack2x16float(tw_f16_bits(x)).x); }

struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 3>,
}
@group(0) @binding(0) var<storage, read> b0: array<vec4<f16>>; // a_ptr: f16
@group(0) @binding(1) var<storage, read> b1: array<vec4<f16>>; // b_ptr: f16
@group(0) @binding(2) var<storage, read_write> b2: array<vec4<f16>>; // c_ptr: f16
@group(0) @binding(3) var<uniform> P: Params;
var<workgroup> s0: array<f16, 2560>; // coop_a
var<workgroup> s1: array<f16, 2304>; // coop_b
var<workgroup> s2: array<f32, 1024>; // coop_c

@compute @workgroup_size(128)
fn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>, @builtin(subgroup_id) tw_sg: u32, @builtin(subgroup_invocation_id) tw_sgi: u32) {
  var fr0: coop_mat16x16<f32, C>;
  var fr1: coop_mat16x16<f32, C>;
  var fr2: coop_mat16x16<f32, C>;
  var fr3: coop_mat16x16<f32, C>;
  var fr4: coop_mat16x16<f16, A>;
  var fr5: coop_mat16x16<f16, A>;
  var fr6: coop_mat16x16<f16, B>;
  var fr7: coop_mat16x16<f16, B>;
  var fr8: coop_mat16x16<f32, C>;
  var fr9: coop_mat16x16<f32, C>;
  var fr10: coop_mat16x16<f32, C>;
  var fr11: coop_mat16x16<f32, C>;
  var fr12: coop_mat16x16<f32, C>;
  var fr13: coop_mat16x16<f32, C>;
  var fr14: coop_mat16x16<f32, C>;
  var fr15: coop_mat16x16<f32, C>;
  var r502: i32;
  var r506: i32;
  var r510: i32;
  var r514: i32;
  var r518: i32;
  var r522: i32;
  var r526: i32;
  var r530: i32;
  var r550: vec4<f16>;
  var r551: vec4<f16>;
  var r552: vec4<f16>;
  var r553: vec4<f16>;
  var r570: vec4<f16>;
  var r571: vec4<f16>;
  var r572: vec4<f16>;
  var r573: vec4<f16>;
  var r574: i32;
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
  let r8: i32 = bitcast<i32>(P.words[1][0]);
  let r9: i32 = bitcast<i32>(P.words[1][1]);
  let r10: i32 = bitcast<i32>(P.words[1][2]);
  let r11: i32 = bitcast<i32>(P.words[1][3]);
  let r12: i32 = bitcast<i32>(P.words[2][0]);
  let r13: i32 = bitcast<i32>(P.words[2][1]);
  let r44: i32 = bitcast<i32>(0x1u);
  let r45: i32 = (r2 & r44);
  let r46: i32 = bitcast<i32>(0x4u);
  let r47: i32 = (r45 * r46);
  let r49: i32 = select(r2 >> (bitcast<u32>(r44) % 32u), r2 >> 31u, bitcast<u32>(r44) >= 32u);
  let r51: i32 = (r49 & r44);
  let r52: i32 = bitcast<i32>(0x8u);
  let r53: i32 = (r51 * r52);
  let r54: i32 = (r47 ^ r53);
  let r55: i32 = bitcast<i32>(0x2u);
  let r56: i32 = select(r2 >> (bitcast<u32>(r55) % 32u), r2 >> 31u, bitcast<u32>(r55) >= 32u);
  let r58: i32 = (r56 & r44);
  let r59: i32 = bitcast<i32>(0x10u);
  let r60: i32 = (r58 * r59);
  let r61: i32 = (r54 ^ r60);
  let r62: i32 = bitcast<i32>(0x3u);
  let r63: i32 = select(r2 >> (bitcast<u32>(r62) % 32u), r2 >> 31u, bitcast<u32>(r62) >= 32u);
  let r65: i32 = (r63 & r44);
  let r66: i32 = bitcast<i32>(0x20u);
  let r67: i32 = (r65 * r66);
  let r68: i32 = (r61 ^ r67);
  let r147: i32 = select(r2 >> (bitcast<u32>(r46) % 32u), r2 >> 31u, bitcast<u32>(r46) >= 32u);
  let r149: i32 = (r147 & r44);
  let r151: i32 = (r149 * r55);
  let r152: i32 = (r65 ^ r151);
  let r156: i32 = (r4 & r44);
  let r158: i32 = (r156 * r46);
  let r159: i32 = (r152 ^ r158);
  let r161: i32 = select(r4 >> (bitcast<u32>(r44) % 32u), r4 >> 31u, bitcast<u32>(r44) >= 32u);
  let r163: i32 = (r161 & r44);
  let r165: i32 = (r163 * r52);
  let r166: i32 = (r159 ^ r165);
  let r299: i32 = (r156 * r55);
  let r300: i32 = (r149 ^ r299);
  let r306: i32 = (r163 * r46);
  let r307: i32 = (r300 ^ r306);
  let r852: i32 = bitcast<i32>(tw_sg);
  let r854: i32 = (r852 & r44);
  let r856: i32 = select(r852 >> (bitcast<u32>(r44) % 32u), r852 >> 31u, bitcast<u32>(r44) >= 32u);
  let r858: i32 = (r856 & r44);
  let r859: i32 = bitcast<i32>(0x500u);
  let r860: i32 = (r858 * r859);
  let r862: i32 = (r854 * r66);
  let r1125: i32 = bitcast<i32>(0x100u);
  let r1126: i32 = (r852 * r1125);
  let r1127: i32 = (r4 * r1125);
  let r1129: i32 = (r2 * r52);
  let r1130: i32 = (r1127 + r1129);
  let r1674: i32 = (r58 * r55);
  let r1675: i32 = (r51 ^ r1674);
  let r1681: i32 = (r65 * r46);
  let r1682: i32 = (r1675 ^ r1681);
  let r1688: i32 = (r149 * r52);
  let r1689: i32 = (r1682 ^ r1688);
  let r1695: i32 = (r163 * r66);
  let r1696: i32 = (r1689 ^ r1695);
  let r1862: i32 = (r45 * r52);
  let r1868: i32 = (r156 * r66);
  let r1869: i32 = (r1862 ^ r1868);
  // line 44
  let r14: i32 = bitcast<i32>(tw_pid[0]);
  // line 45
  let r15: i32 = bitcast<i32>(0x40u);
  let r16: i32 = (r8 + r15);
  let r18: i32 = (r16 - r44);
  let r20: i32 = tw_idiv(r18, r15);
  // line 46
  let r22: i32 = (r9 + r15);
  let r24: i32 = (r22 - r44);
  let r26: i32 = tw_idiv(r24, r15);
  // line 47
  let r28: i32 = (r52 * r26);
  // line 48
  let r29: i32 = tw_idiv(r14, r28);
  // line 49
  let r31: i32 = (r29 * r52);
  // line 50
  let r32: i32 = (r20 - r31);
  let r34: i32 = select(r52, r32, r32 < r52);
  // line 51
  let r35: i32 = tw_irem(r14, r28);
  let r36: i32 = tw_irem(r35, r34);
  let r37: i32 = (r31 + r36);
  // line 52
  let r39: i32 = tw_idiv(r35, r34);
  // line 55
  let r41: i32 = (r37 * r15);
  // line 56
  let r86: i32 = (r39 * r15);
  let r95: i32 = (r86 + r68);
  let r99: i32 = tw_irem(r95, r9);
  // line 58
  let r176: i32 = (r166 + r59);
  let r184: i32 = (r166 + r66);
  let r191: i32 = bitcast<i32>(0x30u);
  let r192: i32 = (r166 + r191);
  let r199: i32 = (r41 + r166);
  let r203: i32 = (r41 + r176);
  let r207: i32 = (r41 + r184);
  let r211: i32 = (r41 + r192);
  let r215: i32 = tw_irem(r199, r8);
  let r219: i32 = tw_irem(r203, r8);
  let r223: i32 = tw_irem(r207, r8);
  let r227: i32 = tw_irem(r211, r8);
  let r231: i32 = (r215 * r11);
  let r235: i32 = (r219 * r11);
  let r239: i32 = (r223 * r11);
  let r243: i32 = (r227 * r11);
  let r247: i32 = (r231 + r61);
  let r251: i32 = (r235 + r61);
  let r255: i32 = (r239 + r61);
  let r259: i32 = (r243 + r61);
  // line 59
  let r317: i32 = (r307 + r52);
  let r325: i32 = (r307 + r59);
  let r332: i32 = bitcast<i32>(0x18u);
  let r333: i32 = (r307 + r332);
  let r340: i32 = (r307 * r12);
  let r344: i32 = (r317 * r12);
  let r348: i32 = (r325 * r12);
  let r352: i32 = (r333 * r12);
  let r356: i32 = (r340 + r99);
  let r360: i32 = (r344 + r99);
  let r364: i32 = (r348 + r99);
  let r368: i32 = (r352 + r99);
  // line 63
  let r390: i32 = (r10 + r66);
  let r392: i32 = (r390 - r44);
  let r394: i32 = tw_idiv(r392, r66);
  // line 64
  let r398: i32 = (r5 * r66);
  let r399: i32 = (r10 - r398);
  let r400: bool = (r61 < r399);
  let r404: f16 = f16(bitcast<f32>(0x0u));
  // line 65
  let r412: bool = (r307 < r399);
  let r416: bool = (r317 < r399);
  let r420: bool = (r325 < r399);
  let r424: bool = (r333 < r399);
  // line 64
  let r429: bool = (r5 < r394);
  let r430: bool = (r400 && r429);
  let r450: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r247)), r430)) >> 2u], r430);
  let r455: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r251)), r430)) >> 2u], r430);
  let r460: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r255)), r430)) >> 2u], r430);
  let r465: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r259)), r430)) >> 2u], r430);
  let r466: bool = (r412 && r429);
  let r470: bool = (r416 && r429);
  let r474: bool = (r420 && r429);
  let r478: bool = (r424 && r429);
  let r486: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r356)), r466)) >> 2u], r466);
  let r491: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r360)), r470)) >> 2u], r470);
  let r496: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r364)), r474)) >> 2u], r474);
  let r501: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r368)), r478)) >> 2u], r478);
  // line 63
  r502 = r247;
  r506 = r251;
  r510 = r255;
  r514 = r259;
  fr0 = coop_mat16x16<f32, C>();
  fr1 = coop_mat16x16<f32, C>();
  fr2 = coop_mat16x16<f32, C>();
  fr3 = coop_mat16x16<f32, C>();
  r518 = r356;
  r522 = r360;
  r526 = r364;
  r530 = r368;
  r550 = r450;
  r551 = r455;
  r552 = r460;
  r553 = r465;
  r570 = r486;
  r571 = r491;
  r572 = r496;
  r573 = r501;
  for (r574 = r5; (r44 > 0 && r574 < r394) || (r44 < 0 && r574 > r394); r574 = r574 + r44) {
    // line 66
    workgroupBarrier();
    let r669: i32 = (r166 + r59);
    let r677: i32 = (r166 + r66);
    let r685: i32 = (r166 + r191);
    let r692: i32 = bitcast<i32>(0x28u);
    let r693: i32 = (r166 * r692);
    let r694: i32 = (r61 + r693);
    let r701: i32 = (r669 * r692);
    let r702: i32 = (r61 + r701);
    let r709: i32 = (r677 * r692);
    let r710: i32 = (r61 + r709);
    let r717: i32 = (r685 * r692);
    let r718: i32 = (r61 + r717);
    s0[r694 + 0] = r550[0];
    s0[r694 + 1] = r550[1];
    s0[r694 + 2] = r550[2];
    s0[r694 + 3] = r550[3];
    s0[r702 + 0] = r551[0];
    s0[r702 + 1] = r551[1];
    s0[r702 + 2] = r551[2];
    s0[r702 + 3] = r551[3];
    s0[r710 + 0] = r552[0];
    s0[r710 + 1] = r552[1];
    s0[r710 + 2] = r552[2];
    s0[r710 + 3] = r552[3];
    s0[r718 + 0] = r553[0];
    s0[r718 + 1] = r553[1];
    s0[r718 + 2] = r553[2];
    s0[r718 + 3] = r553[3];
    let r795: i32 = (r307 + r52);
    let r803: i32 = (r307 + r59);
    let r811: i32 = (r307 + r332);
    let r818: i32 = bitcast<i32>(0x48u);
    let r819: i32 = (r307 * r818);
    let r820: i32 = (r68 + r819);
    let r827: i32 = (r795 * r818);
    let r828: i32 = (r68 + r827);
    let r835: i32 = (r803 * r818);
    let r836: i32 = (r68 + r835);
    let r843: i32 = (r811 * r818);
    let r844: i32 = (r68 + r843);
    s1[r820 + 0] = r570[0];
    s1[r820 + 1] = r570[1];
    s1[r820 + 2] = r570[2];
    s1[r820 + 3] = r570[3];
    s1[r828 + 0] = r571[0];
    s1[r828 + 1] = r571[1];
    s1[r828 + 2] = r571[2];
    s1[r828 + 3] = r571[3];
    s1[r836 + 0] = r572[0];
    s1[r836 + 1] = r572[1];
    s1[r836 + 2] = r572[2];
    s1[r836 + 3] = r572[3];
    s1[r844 + 0] = r573[0];
    s1[r844 + 1] = r573[1];
    s1[r844 + 2] = r573[2];
    s1[r844 + 3] = r573[3];
    workgroupBarrier();
    fr4 = coopLoadT<coop_mat16x16<f16, A>>(&s0[r860], 40u);
    let r865: i32 = bitcast<i32>(0x280u);
    let r866: i32 = (r860 + r865);
    fr5 = coopLoadT<coop_mat16x16<f16, A>>(&s0[r866], 40u);
    fr6 = coopLoadT<coop_mat16x16<f16, B>>(&s1[r862], 72u);
    let r870: i32 = (r862 + r59);
    fr7 = coopLoadT<coop_mat16x16<f16, B>>(&s1[r870], 72u);
    fr8 = coopMultiplyAdd(fr4, fr6, fr0);
    fr9 = coopMultiplyAdd(fr4, fr7, fr1);
    fr10 = coopMultiplyAdd(fr5, fr6, fr2);
    fr11 = coopMultiplyAdd(fr5, fr7, fr3);
    let r872: i32 = (r860 + r59);
    fr4 = coopLoadT<coop_mat16x16<f16, A>>(&s0[r872], 40u);
    let r873: i32 = bitcast<i32>(0x290u);
    let r874: i32 = (r860 + r873);
    fr5 = coopLoadT<coop_mat16x16<f16, A>>(&s0[r874], 40u);
    let r875: i32 = bitcast<i32>(0x480u);
    let r876: i32 = (r862 + r875);
    fr6 = coopLoadT<coop_mat16x16<f16, B>>(&s1[r876], 72u);
    let r877: i32 = bitcast<i32>(0x490u);
    let r878: i32 = (r862 + r877);
    fr7 = coopLoadT<coop_mat16x16<f16, B>>(&s1[r878], 72u);
    fr8 = coopMultiplyAdd(fr4, fr6, fr8);
    fr9 = coopMultiplyAdd(fr4, fr7, fr9);
    fr10 = coopMultiplyAdd(fr5, fr6, fr10);
    fr11 = coopMultiplyAdd(fr5, fr7, fr11);
    // line 67
    let r880: i32 = (r502 + r66);
    let r884: i32 = (r506 + r66);
    let r888: i32 = (r510 + r66);
    let r892: i32 = (r514 + r66);
    // line 68
    let r897: i32 = (r66 * r12);
    let r898: i32 = (r518 + r897);
    let r902: i32 = (r522 + r897);
    let r906: i32 = (r526 + r897);
    let r910: i32 = (r530 + r897);
    // line 63
    let r914: i32 = (r574 + r44);
    // line 64
    let r916: i32 = (r914 * r66);
    let r917: i32 = (r10 - r916);
    let r918: bool = (r61 < r917);
    // line 65
    let r962: bool = (r307 < r917);
    let r966: bool = (r795 < r917);
    let r970: bool = (r803 < r917);
    let r974: bool = (r811 < r917);
    // line 64
    let r979: bool = (r914 < r394);
    let r980: bool = (r918 && r979);
    let r1000: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r880)), r980)) >> 2u], r980);
    let r1005: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r884)), r980)) >> 2u], r980);
    let r1010: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r888)), r980)) >> 2u], r980);
    let r1015: vec4<f16> = select(vec4<f16>(r404), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r892)), r980)) >> 2u], r980);
    let r1016: bool = (r962 && r979);
    let r1020: bool = (r966 && r979);
    let r1024: bool = (r970 && r979);
    let r1028: bool = (r974 && r979);
    let r1036: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r898)), r1016)) >> 2u], r1016);
    let r1041: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r902)), r1020)) >> 2u], r1020);
    let r1046: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r906)), r1024)) >> 2u], r1024);
    let r1051: vec4<f16> = select(vec4<f16>(r404), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r910)), r1028)) >> 2u], r1028);
    // line 63
    fr12 = fr8;
    fr13 = fr9;
    fr14 = fr10;
    fr15 = fr11;
    r502 = r880;
    r506 = r884;
    r510 = r888;
    r514 = r892;
    fr0 = fr12;
    fr1 = fr13;
    fr2 = fr14;
    fr3 = fr15;
    r518 = r898;
    r522 = r902;
    r526 = r906;
    r530 = r910;
    r550 = r1000;
    r551 = r1005;
    r552 = r1010;
    r553 = r1015;
    r570 = r1036;
    r571 = r1041;
    r572 = r1046;
    r573 = r1051;
  }
  // line 71
  coopStoreT(fr0, &s2[r1126], 16u);
  workgroupBarrier();
  let r1135: f32 = s2[r1130];
  let r1137: i32 = (r1130 + r44);
  let r1138: f32 = s2[r1137];
  let r1140: i32 = (r1130 + r55);
  let r1141: f32 = s2[r1140];
  let r1143: i32 = (r1130 + r62);
  let r1144: f32 = s2[r1143];
  let r1146: i32 = (r1130 + r46);
  let r1147: f32 = s2[r1146];
  let r1149: i32 = (r1130 + r3);
  let r1150: f32 = s2[r1149];
  let r1151: i32 = bitcast<i32>(0x6u);
  let r1152: i32 = (r1130 + r1151);
  let r1153: f32 = s2[r1152];
  let r1154: i32 = bitcast<i32>(0x7u);
  let r1155: i32 = (r1130 + r1154);
  let r1156: f32 = s2[r1155];
  workgroupBarrier();
  coopStoreT(fr1, &s2[r1126], 16u);
  workgroupBarrier();
  let r1161: f32 = s2[r1130];
  let r1164: f32 = s2[r1137];
  let r1167: f32 = s2[r1140];
  let r1170: f32 = s2[r1143];
  let r1173: f32 = s2[r1146];
  let r1176: f32 = s2[r1149];
  let r1179: f32 = s2[r1152];
  let r1182: f32 = s2[r1155];
  workgroupBarrier();
  coopStoreT(fr2, &s2[r1126], 16u);
  workgroupBarrier();
  let r1187: f32 = s2[r1130];
  let r1190: f32 = s2[r1137];
  let r1193: f32 = s2[r1140];
  let r1196: f32 = s2[r1143];
  let r1199: f32 = s2[r1146];
  let r1202: f32 = s2[r1149];
  let r1205: f32 = s2[r1152];
  let r1208: f32 = s2[r1155];
  workgroupBarrier();
  coopStoreT(fr3, &s2[r1126], 16u);
  workgroupBarrier();
  let r1213: f32 = s2[r1130];
  let r1216: f32 = s2[r1137];
  let r1219: f32 = s2[r1140];
  let r1222: f32 = s2[r1143];
  let r1225: f32 = s2[r1146];
  let r1228: f32 = s2[r1149];
  let r1231: f32 = s2[r1152];
  let r1234: f32 = s2[r1155];
  workgroupBarrier();
  let r1235: f16 = tw_to_f16(r1135);
  let r1236: f16 = tw_to_f16(r1138);
  let r1237: f16 = tw_to_f16(r1141);
  let r1238: f16 = tw_to_f16(r1144);
  let r1239: f16 = tw_to_f16(r1147);
  let r1240: f16 = tw_to_f16(r1150);
  let r1241: f16 = tw_to_f16(r1153);
  let r1242: f16 = tw_to_f16(r1156);
  let r1243: f16 = tw_to_f16(r1161);
  let r1244: f16 = tw_to_f16(r1164);
  let r1245: f16 = tw_to_f16(r1167);
  let r1246: f16 = tw_to_f16(r1170);
  let r1247: f16 = tw_to_f16(r1173);
  let r1248: f16 = tw_to_f16(r1176);
  let r1249: f16 = tw_to_f16(r1179);
  let r1250: f16 = tw_to_f16(r1182);
  let r1251: f16 = tw_to_f16(r1187);
  let r1252: f16 = tw_to_f16(r1190);
  let r1253: f16 = tw_to_f16(r1193);
  let r1254: f16 = tw_to_f16(r1196);
  let r1255: f16 = tw_to_f16(r1199);
  let r1256: f16 = tw_to_f16(r1202);
  let r1257: f16 = tw_to_f16(r1205);
  let r1258: f16 = tw_to_f16(r1208);
  let r1259: f16 = tw_to_f16(r1213);
  let r1260: f16 = tw_to_f16(r1216);
  let r1261: f16 = tw_to_f16(r1219);
  let r1262: f16 = tw_to_f16(r1222);
  let r1263: f16 = tw_to_f16(r1225);
  let r1264: f16 = tw_to_f16(r1228);
  let r1265: f16 = tw_to_f16(r1231);
  let r1266: f16 = tw_to_f16(r1234);
  // line 76
  // line 78
  let r1730: i32 = (r1696 + r59);
  let r1761: i32 = (r41 + r1696);
  let r1777: i32 = (r41 + r1730);
  let r1793: i32 = (r13 * r1761);
  let r1809: i32 = (r13 * r1777);
  let r1879: i32 = (r1869 + r46);
  let r1887: i32 = (r1869 + r59);
  let r1894: i32 = bitcast<i32>(0x14u);
  let r1895: i32 = (r1869 + r1894);
  let r1934: i32 = (r86 + r1869);
  let r1938: i32 = (r86 + r1879);
  let r1942: i32 = (r86 + r1887);
  let r1946: i32 = (r86 + r1895);
  let r1998: i32 = (r1793 + r1934);
  let r2002: i32 = (r1793 + r1938);
  let r2006: i32 = (r1793 + r1942);
  let r2010: i32 = (r1793 + r1946);
  let r2014: i32 = (r1809 + r1934);
  let r2018: i32 = (r1809 + r1938);
  let r2022: i32 = (r1809 + r1942);
  let r2026: i32 = (r1809 + r1946);
  let r2126: bool = (r1761 < r8);
  let r2142: bool = (r1777 < r8);
  let r2158: bool = (r1934 < r9);
  let r2162: bool = (r1938 < r9);
  let r2166: bool = (r1942 < r9);
  let r2170: bool = (r1946 < r9);
  let r2190: bool = (r2126 && r2158);
  let r2194: bool = (r2126 && r2162);
  let r2198: bool = (r2126 && r2166);
  let r2202: bool = (r2126 && r2170);
  let r2206: bool = (r2142 && r2158);
  let r2210: bool = (r2142 && r2162);
  let r2214: bool = (r2142 && r2166);
  let r2218: bool = (r2142 && r2170);
  let r2222: vec4<f16> = vec4<f16>(r1235, r1236, r1237, r1238);
  if (r2190) { b2[((P.bases[0][2] + bitcast<u32>(r1998))) >> 2u] = r2222; }
  let r2223: vec4<f16> = vec4<f16>(r1239, r1240, r1241, r1242);
  if (r2194) { b2[((P.bases[0][2] + bitcast<u32>(r2002))) >> 2u] = r2223; }
  let r2224: vec4<f16> = vec4<f16>(r1243, r1244, r1245, r1246);
  if (r2198) { b2[((P.bases[0][2] + bitcast<u32>(r2006))) >> 2u] = r2224; }
  let r2225: vec4<f16> = vec4<f16>(r1247, r1248, r1249, r1250);
  if (r2202) { b2[((P.bases[0][2] + bitcast<u32>(r2010))) >> 2u] = r2225; }
  let r2226: vec4<f16> = vec4<f16>(r1251, r1252, r1253, r1254);
  if (r2206) { b2[((P.bases[0][2] + bitcast<u32>(r2014))) >> 2u] = r2226; }
  let r2227: vec4<f16> = vec4<f16>(r1255, r1256, r1257, r1258);
  if (r2210) { b2[((P.bases[0][2] + bitcast<u32>(r2018))) >> 2u] = r2227; }
  let r2228: vec4<f16> = vec4<f16>(r1259, r1260, r1261, r1262);
  if (r2214) { b2[((P.bases[0][2] + bitcast<u32>(r2022))) >> 2u] = r2228; }
  let r2229: vec4<f16> = vec4<f16>(r1263, r1264, r1265, r1266);
  if (r2218) { b2[((P.bases[0][2] + bitcast<u32>(r2026))) >> 2u] = r2229; }
}
