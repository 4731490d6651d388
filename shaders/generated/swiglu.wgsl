// tilewise: kernel `swiglu_fwd_kernel`, 128 threads per program

fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tw_bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if (tw_isnan(x)) { return 0x7fc0u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
fn tw_bf16(x: f32) -> f32 { return bitcast<f32>(tw_bf16_bits(x) << 16u); }

struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> b0: array<vec4<f32>>; // gate_ptr: f32
@group(0) @binding(1) var<storage, read> b1: array<vec4<f32>>; // up_ptr: f32
@group(0) @binding(2) var<storage, read_write> b2: array<atomic<u32>>; // out_ptr: bf16
@group(0) @binding(3) var<uniform> P: Params;

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
  let r8: i32 = bitcast<i32>(P.words[1][0]);
  let r14: i32 = bitcast<i32>(0x1u);
  let r15: i32 = (r2 & r14);
  let r16: i32 = bitcast<i32>(0x4u);
  let r17: i32 = (r15 * r16);
  let r19: i32 = select(r2 >> (bitcast<u32>(r14) % 32u), r2 >> 31u, bitcast<u32>(r14) >= 32u);
  let r21: i32 = (r19 & r14);
  let r22: i32 = bitcast<i32>(0x8u);
  let r23: i32 = (r21 * r22);
  let r24: i32 = (r17 ^ r23);
  let r25: i32 = bitcast<i32>(0x2u);
  let r26: i32 = select(r2 >> (bitcast<u32>(r25) % 32u), r2 >> 31u, bitcast<u32>(r25) >= 32u);
  let r28: i32 = (r26 & r14);
  let r29: i32 = bitcast<i32>(0x10u);
  let r30: i32 = (r28 * r29);
  let r31: i32 = (r24 ^ r30);
  let r32: i32 = bitcast<i32>(0x3u);
  let r33: i32 = select(r2 >> (bitcast<u32>(r32) % 32u), r2 >> 31u, bitcast<u32>(r32) >= 32u);
  let r35: i32 = (r33 & r14);
  let r36: i32 = bitcast<i32>(0x20u);
  let r37: i32 = (r35 * r36);
  let r38: i32 = (r31 ^ r37);
  let r40: i32 = select(r2 >> (bitcast<u32>(r16) % 32u), r2 >> 31u, bitcast<u32>(r16) >= 32u);
  let r42: i32 = (r40 & r14);
  let r43: i32 = bitcast<i32>(0x40u);
  let r44: i32 = (r42 * r43);
  let r45: i32 = (r38 ^ r44);
  let r49: i32 = (r4 & r14);
  let r50: i32 = bitcast<i32>(0x80u);
  let r51: i32 = (r49 * r50);
  let r52: i32 = (r45 ^ r51);
  let r54: i32 = select(r4 >> (bitcast<u32>(r14) % 32u), r4 >> 31u, bitcast<u32>(r14) >= 32u);
  let r56: i32 = (r54 & r14);
  let r57: i32 = bitcast<i32>(0x100u);
  let r58: i32 = (r56 * r57);
  let r59: i32 = (r52 ^ r58);
  // line 10
  let r9: i32 = bitcast<i32>(tw_pid[0]);
  // line 11
  let r10: i32 = bitcast<i32>(0x400u);
  let r11: i32 = (r9 * r10);
  let r63: i32 = (r59 + r14);
  let r65: i32 = (r59 + r25);
  let r67: i32 = (r59 + r32);
  let r68: i32 = bitcast<i32>(0x200u);
  let r69: i32 = (r59 + r68);
  let r70: i32 = bitcast<i32>(0x201u);
  let r71: i32 = (r59 + r70);
  let r72: i32 = bitcast<i32>(0x202u);
  let r73: i32 = (r59 + r72);
  let r74: i32 = bitcast<i32>(0x203u);
  let r75: i32 = (r59 + r74);
  let r76: i32 = (r11 + r59);
  let r77: i32 = (r11 + r63);
  let r78: i32 = (r11 + r65);
  let r79: i32 = (r11 + r67);
  let r80: i32 = (r11 + r69);
  let r81: i32 = (r11 + r71);
  let r82: i32 = (r11 + r73);
  let r83: i32 = (r11 + r75);
  // line 12
  let r84: bool = (r76 < r8);
  let r85: bool = (r77 < r8);
  let r86: bool = (r78 < r8);
  let r87: bool = (r79 < r8);
  let r88: bool = (r80 < r8);
  let r89: bool = (r81 < r8);
  let r90: bool = (r82 < r8);
  let r91: bool = (r83 < r8);
  // line 13
  let r100: f32 = bitcast<f32>(0x0u);
  let r105: vec4<f32> = select(vec4<f32>(r100), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r76)), r84)) >> 2u], r84);
  let r101: f32 = r105[0];
  let r102: f32 = r105[1];
  let r103: f32 = r105[2];
  let r104: f32 = r105[3];
  let r110: vec4<f32> = select(vec4<f32>(r100), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r80)), r88)) >> 2u], r88);
  let r106: f32 = r110[0];
  let r107: f32 = r110[1];
  let r108: f32 = r110[2];
  let r109: f32 = r110[3];
  // line 14
  let r124: vec4<f32> = select(vec4<f32>(r100), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r76)), r84)) >> 2u], r84);
  let r120: f32 = r124[0];
  let r121: f32 = r124[1];
  let r122: f32 = r124[2];
  let r123: f32 = r124[3];
  let r129: vec4<f32> = select(vec4<f32>(r100), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r80)), r88)) >> 2u], r88);
  let r125: f32 = r129[0];
  let r126: f32 = r129[1];
  let r127: f32 = r129[2];
  let r128: f32 = r129[3];
  // line 15
  let r130: f32 = (-r101);
  let r131: f32 = (-r102);
  let r132: f32 = (-r103);
  let r133: f32 = (-r104);
  let r134: f32 = (-r106);
  let r135: f32 = (-r107);
  let r136: f32 = (-r108);
  let r137: f32 = (-r109);
  let r138: f32 = exp(r130);
  let r139: f32 = exp(r131);
  let r140: f32 = exp(r132);
  let r141: f32 = exp(r133);
  let r142: f32 = exp(r134);
  let r143: f32 = exp(r135);
  let r144: f32 = exp(r136);
  let r145: f32 = exp(r137);
  let r146: f32 = bitcast<f32>(0x3f800000u);
  let r147: f32 = (r146 + r138);
  let r148: f32 = (r146 + r139);
  let r149: f32 = (r146 + r140);
  let r150: f32 = (r146 + r141);
  let r151: f32 = (r146 + r142);
  let r152: f32 = (r146 + r143);
  let r153: f32 = (r146 + r144);
  let r154: f32 = (r146 + r145);
  let r156: f32 = (r146 / r147);
  let r157: f32 = (r146 / r148);
  let r158: f32 = (r146 / r149);
  let r159: f32 = (r146 / r150);
  let r160: f32 = (r146 / r151);
  let r161: f32 = (r146 / r152);
  let r162: f32 = (r146 / r153);
  let r163: f32 = (r146 / r154);
  let r164: f32 = (r101 * r156);
  let r165: f32 = (r102 * r157);
  let r166: f32 = (r103 * r158);
  let r167: f32 = (r104 * r159);
  let r168: f32 = (r106 * r160);
  let r169: f32 = (r107 * r161);
  let r170: f32 = (r108 * r162);
  let r171: f32 = (r109 * r163);
  // line 16
  let r180: f32 = (r164 * r120);
  let r181: f32 = (r165 * r121);
  let r182: f32 = (r166 * r122);
  let r183: f32 = (r167 * r123);
  let r184: f32 = (r168 * r125);
  let r185: f32 = (r169 * r126);
  let r186: f32 = (r170 * r127);
  let r187: f32 = (r171 * r128);
  let r188: f32 = tw_bf16(r180);
  let r189: f32 = tw_bf16(r181);
  let r190: f32 = tw_bf16(r182);
  let r191: f32 = tw_bf16(r183);
  let r192: f32 = tw_bf16(r184);
  let r193: f32 = tw_bf16(r185);
  let r194: f32 = tw_bf16(r186);
  let r195: f32 = tw_bf16(r187);
  if (r84) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r76)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r188)) & 0xffffu) << tw_s); } }
  if (r85) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r77)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r189)) & 0xffffu) << tw_s); } }
  if (r86) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r78)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r190)) & 0xffffu) << tw_s); } }
  if (r87) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r79)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r191)) & 0xffffu) << tw_s); } }
  if (r88) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r80)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r192)) & 0xffffu) << tw_s); } }
  if (r89) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r81)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r193)) & 0xffffu) << tw_s); } }
  if (r90) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r82)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r194)) & 0xffffu) << tw_s); } }
  if (r91) { { let tw_e = (P.bases[0][2] + bitcast<u32>(r83)); let tw_w = tw_e / 2u; let tw_s = (tw_e % 2u) * 16u; atomicAnd(&b2[tw_w], ~(0xffffu << tw_s)); atomicOr(&b2[tw_w], ((tw_bf16_bits(r195)) & 0xffffu) << tw_s); } }
}
