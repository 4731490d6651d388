// tilewise: kernel `add_kernel`, 128 threads per program

struct Params {
  bases: array<vec4<u32>, 1>,
  words: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<storage, read> b0: array<vec4<f32>>; // x_ptr: f32
@group(0) @binding(1) var<storage, read> b1: array<vec4<f32>>; // y_ptr: f32
@group(0) @binding(2) var<storage, read_write> b2: array<vec4<f32>>; // output_ptr: f32
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
  // line 12
  let r68: i32 = bitcast<i32>(0x200u);
  let r69: i32 = (r59 + r68);
  let r76: i32 = (r11 + r59);
  let r80: i32 = (r11 + r69);
  // line 13
  let r84: bool = (r76 < r8);
  let r88: bool = (r80 < r8);
  // line 14
  let r105: f32 = bitcast<f32>(0x0u);
  let r104: vec4<f32> = select(vec4<f32>(r105), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r76)), r84)) >> 2u], r84);
  let r100: f32 = r104[0];
  let r101: f32 = r104[1];
  let r102: f32 = r104[2];
  let r103: f32 = r104[3];
  let r110: vec4<f32> = select(vec4<f32>(r105), b0[(select(P.bases[0][0], (P.bases[0][0] + bitcast<u32>(r80)), r88)) >> 2u], r88);
  let r106: f32 = r110[0];
  let r107: f32 = r110[1];
  let r108: f32 = r110[2];
  let r109: f32 = r110[3];
  // line 15
  let r124: vec4<f32> = select(vec4<f32>(r105), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r76)), r84)) >> 2u], r84);
  let r120: f32 = r124[0];
  let r121: f32 = r124[1];
  let r122: f32 = r124[2];
  let r123: f32 = r124[3];
  let r130: vec4<f32> = select(vec4<f32>(r105), b1[(select(P.bases[0][1], (P.bases[0][1] + bitcast<u32>(r80)), r88)) >> 2u], r88);
  let r126: f32 = r130[0];
  let r127: f32 = r130[1];
  let r128: f32 = r130[2];
  let r129: f32 = r130[3];
  // line 16
  let r132: f32 = (r100 + r120);
  let r133: f32 = (r101 + r121);
  let r134: f32 = (r102 + r122);
  let r135: f32 = (r103 + r123);
  let r136: f32 = (r106 + r126);
  let r137: f32 = (r107 + r127);
  let r138: f32 = (r108 + r128);
  let r139: f32 = (r109 + r129);
  // line 17
  let r148: vec4<f32> = vec4<f32>(r132, r133, r134, r135);
  if (r84) { b2[((P.bases[0][2] + bitcast<u32>(r76))) >> 2u] = r148; }
  let r149: vec4<f32> = vec4<f32>(r136, r137, r138, r139);
  if (r88) { b2[((P.bases[0][2] + bitcast<u32>(r80))) >> 2u] = r149; }
}
