//! The WGSL printer: Thread IR in, one compute shader out.
//!
//! A thin printer: every semantic decision was taken by the shared lowering; this file
//! only spells each Thread IR statement in WGSL so that it means exactly what the tile
//! IR says (see `tilewise_core::ir::ops`):
//!
//! - **Bindings.** Pointer parameter `i` is storage binding `i` (`read` when never
//!   written); the last binding is the parameter block: a `u32` element base offset per
//!   storage binding (sub-range views), then the launch grid (4 words), then one 32-bit
//!   word per scalar argument.
//! - **Grid.** Programs are numbered linearly and dispatched folded into x and y
//!   ([`WgslKernel::workgroups`]), so grids past 65535 in one dimension run; each
//!   workgroup recovers its program ids from the grid and surplus ones return at once.
//! - **Types.** f32, i32, u32 and bool are native; f16 is native with `enable f16;`
//!   when the device has SHADER_F16, else emulated in f32 and rounded to f16 after each
//!   op; bf16 is f32 rounded to bf16 after each op; 8- and 16-bit integers live in
//!   i32/u32 registers wrapped after each op. In memory, 8- and 16-bit elements (and
//!   `i1`, stored one byte each) are packed four or two to a `u32` word; stores to
//!   packed words use `atomicAnd` / `atomicOr` so that neighbours never race. 64-bit
//!   types are a clear error: WGSL has none.
//! - **Semantics.** Integer division by zero gives 0; shifts by at least the width give
//!   0 or the sign fill; float min/max let a number win over NaN (NaN is tested on the
//!   bits, since WGSL lets compilers assume NaN away); float-to-int conversion saturates
//!   and maps NaN to 0; `select` argument order is WGSL's (false value first).
//! - **Loads** with a mask read index 0 of the view where the mask is false and select
//!   `other`: no out-of-range access ever reaches the driver. Masked stores are guarded.
//! - **Wide accesses.** Vector registers of 32-bit elements are `vecN<T>`. A 32-bit
//!   buffer whose wide accesses (the lowering proved them aligned) all move 4 elements
//!   is declared `array<vec4<T>>`: its wide accesses are one vector access
//!   (`b[i >> 2u]`), its scalar ones a component (`b[i >> 2u][i & 3u]`); elsewhere a
//!   wide access is spelled element by element.

use crate::context::Capabilities;
use crate::pipeline::{KernelLayout, StorageBinding, UniformLayout};
use std::fmt::Write;
use tilewise_core::ir::{AtomicOp, BinaryOp, CmpPred, Const, DType, UnaryOp};
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::{
    Binding, Expr, FragRole, FragTy, ParamKind, Reg, Special, Stmt, SubgroupOp, ThreadKernel,
};
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// A kernel printed as WGSL, with what the runtime needs to bind it.
/// Serialized (without the checked-mode part) for the persistent cache.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WgslKernel {
    pub name: String,
    pub source: String,
    pub entry_point: String,
    pub layout: KernelLayout,
    pub workgroup_size: u32,
    /// For each scalar slot of the parameter block, in order: the Thread IR parameter
    /// index it carries and that parameter's dtype.
    pub scalar_slots: Vec<(usize, DType)>,
    /// For each storage binding, in order: the Thread IR parameter index.
    pub buffer_params: Vec<usize>,
    /// Bytes of `var<workgroup>` memory the shader declares.
    pub workgroup_bytes: u32,
    /// What the lowering chose (each `dot`'s form and tiling) and why, for the compiled
    /// kernel's description.
    pub notes: Vec<String>,
    /// Checked mode: the hidden parameters' meaning and the record's decoding (not
    /// serialized: checked kernels stay out of the persistent cache).
    #[serde(skip)]
    pub checked: Option<tilewise_core::thread_ir::checks::CheckedKernel>,
}

impl WgslKernel {
    /// The workgroups to dispatch for a launch grid: programs are numbered linearly and
    /// folded into x and y so that no dimension exceeds `max_per_dim`; the kernel
    /// recovers the program ids from the grid in the parameter block.
    pub fn workgroups(grid: [u32; 3], max_per_dim: u32) -> Result<[u32; 3]> {
        let total = grid.iter().map(|&d| d as u64).product::<u64>();
        let x = total.min(max_per_dim as u64);
        let y = total.div_ceil(x.max(1));
        if y > max_per_dim as u64 {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("grid {grid:?} has more programs than the adapter can dispatch"),
            ));
        }
        Ok([x as u32, y as u32, 1])
    }

    /// Encodes the grid and the scalar arguments (indexed by Thread IR parameter) as
    /// parameter words.
    pub fn encode_scalars(
        &self,
        grid: [u32; 3],
        scalar_of: impl Fn(usize) -> Option<ScalarValue>,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(4 * (4 + self.scalar_slots.len()));
        for w in [grid[0], grid[1], grid[2], 0] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for &(p, dt) in &self.scalar_slots {
            let v = scalar_of(p).ok_or_else(|| {
                Diagnostic::new(ErrorKind::Launch, format!("missing scalar argument {p}"))
            })?;
            let word: u32 = match (v, dt) {
                (ScalarValue::Bool(b), _) => b as u32,
                (ScalarValue::Int(_, i), d) if d.is_float() => (i as f32).to_bits(),
                (ScalarValue::Int(_, i), _) => i as u32,
                (ScalarValue::Float(_, f), d) if d.is_float() => (f as f32).to_bits(),
                (ScalarValue::Float(_, f), _) => f as i64 as u32,
            };
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.resize(16 * (1 + self.scalar_slots.len().div_ceil(4)), 0);
        Ok(out)
    }
}

/// How a buffer parameter is declared and accessed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Repr {
    /// `array<T>` of the element type.
    Plain,
    /// `array<atomic<u32|i32>>`, 32-bit elements (f32 through bit casts).
    Atomic32,
    /// `bits`-wide elements packed in `u32` words; `atomic` when written.
    Packed { bits: u32, atomic: bool },
    /// `array<vec4<T>>` of 32-bit or native f16 elements: every wide access moves 4.
    Vec4,
}

fn backend_err(kernel: &str, msg: String) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::Backend,
        format!("kernel `{kernel}` cannot run on the WGSL backend: {msg}"),
    )
}

struct Printer<'a> {
    k: &'a ThreadKernel,
    f16: bool,
    out: String,
    reprs: Vec<Option<Repr>>,
    /// Binding slot of each buffer parameter.
    binding: Vec<Option<usize>>,
    /// Scalar slot of each scalar parameter.
    scalar_slot: Vec<Option<usize>>,
    /// Lanes of the register the expression being printed is assigned to.
    lanes_of_dst: u8,
    /// How each register is spelled: a `let` at its one assignment, a `var`, or not
    /// at all.
    bindings: Vec<Binding>,
    /// Shared arrays declared as `array<vec4<T>>`: 32-bit arrays with 4-lane
    /// accesses, which then move one `vec4` (scalars address a component).
    shared_vec4: Vec<bool>,
    /// Whether the kernel uses subgroups (a cooperative-matrix dot, a subgroup
    /// reduction): `subgroup_id` and `subgroup_invocation_id` are declared.
    subgroup_id: bool,
    /// Bytes of workgroup memory declared so far.
    workgroup_bytes: u32,
}

/// Prints `k` as WGSL for a device with `caps`.
pub fn print_wgsl(k: &ThreadKernel, caps: &Capabilities) -> Result<WgslKernel> {
    let mut p = Printer {
        k,
        f16: caps.f16,
        out: String::new(),
        reprs: vec![None; k.params.len()],
        binding: vec![None; k.params.len()],
        scalar_slot: vec![None; k.params.len()],
        lanes_of_dst: 1,
        bindings: tilewise_core::thread_ir::bindings(k),
        shared_vec4: vec![false; k.shared.len()],
        subgroup_id: false,
        workgroup_bytes: 0,
    };
    shared_vec4_arrays(k, &k.body, &mut p.shared_vec4);
    if coop_ifs(&k.body) {
        // naga cannot prove a branch uniform, and fragments assigned in one were lost
        // on the H200 (fuzz seed 310017): the lowering keeps them out of branches.
        return Err(Diagnostic::internal(
            "a cooperative-matrix operation inside an `if` reached the WGSL printer",
        ));
    }
    let mut coop_arrays = std::collections::BTreeSet::new();
    coop_uses(&k.body, &mut coop_arrays, &mut p.subgroup_id);
    for a in &coop_arrays {
        p.shared_vec4[*a as usize] = false;
    }
    for f in &k.frags {
        let listed = caps
            .coop_matrix
            .iter()
            .any(|c| c.size == f.size && (c.input == f.dtype || c.acc == f.dtype));
        if !listed || !caps.f16 {
            return Err(backend_err(
                &k.name,
                format!(
                    "the kernel was lowered with cooperative matrices ({f}) that this device does not offer"
                ),
            ));
        }
    }
    if p.subgroup_id && !caps.subgroups {
        return Err(backend_err(
            &k.name,
            "the lowering uses subgroups, and this device has none".into(),
        ));
    }
    for ty in &k.regs {
        p.check_type(ty.dtype)?;
        let native = ty.dtype.size_bytes() == 4 || (ty.dtype == DType::F16 && p.f16);
        if ty.lanes != 1 && (!native || ty.lanes > 4) {
            return Err(Diagnostic::internal(format!(
                "a vector register of {ty} reached the WGSL printer (the WGSL lowering \
                 vectorizes 32-bit and native f16 elements, up to 4)"
            )));
        }
    }
    let atomics = atomic_buffers(&k.body);
    let mut wide = WideAccesses::new();
    wide_accesses(k, &k.body, &mut wide);
    let mut storage = vec![];
    let mut buffer_params = vec![];
    let mut scalar_slots = vec![];
    for (i, prm) in k.params.iter().enumerate() {
        match &prm.kind {
            ParamKind::Buffer { dtype, written } => {
                p.check_type(*dtype)?;
                let lanes = wide.get(&(i as u32));
                let only = |n: u8| lanes.is_some_and(|l| l.iter().all(|&x| x == n));
                let repr = match (dtype.size_bytes(), atomics.contains(&(i as u32))) {
                    (4, true) => Repr::Atomic32,
                    (4, false) if only(4) => Repr::Vec4,
                    (4, false) => Repr::Plain,
                    (2, false) if *dtype == DType::F16 && p.f16 && only(4) => Repr::Vec4,
                    (2, false) if *dtype == DType::F16 && p.f16 => Repr::Plain,
                    (n, _) => Repr::Packed {
                        bits: 8 * n as u32,
                        atomic: *written,
                    },
                };
                p.reprs[i] = Some(repr);
                p.binding[i] = Some(storage.len());
                storage.push(StorageBinding {
                    read_only: !*written,
                    element_size: dtype.size_bytes() as u32,
                });
                buffer_params.push(i);
            }
            ParamKind::Scalar { dtype } => {
                p.check_type(*dtype)?;
                p.scalar_slot[i] = Some(scalar_slots.len());
                scalar_slots.push((i, *dtype));
            }
        }
    }
    let layout = KernelLayout {
        // The printed `Params` struct: the grid (one vec4 of words), then the scalars.
        uniform: Some(UniformLayout {
            base_offsets: true,
            scalar_bytes: 16 * (1 + scalar_slots.len().div_ceil(4)) as u32,
        }),
        storage,
    };
    p.header(&layout, &scalar_slots)?;
    p.body()?;
    Ok(WgslKernel {
        name: k.name.clone(),
        source: p.out,
        entry_point: "main".into(),
        layout,
        workgroup_size: k.threads,
        scalar_slots,
        buffer_params,
        workgroup_bytes: p.workgroup_bytes,
        notes: k.notes.clone(),
        checked: tilewise_core::thread_ir::checks::CheckedKernel::of(k),
    })
}

/// The lane counts of each buffer's wide accesses (every access of it, scalar ones
/// included as 1, once it has a wide one).
type WideAccesses = std::collections::HashMap<u32, std::collections::BTreeSet<u8>>;

fn wide_accesses(k: &ThreadKernel, b: &[Stmt], out: &mut WideAccesses) {
    let mut all = WideAccesses::new();
    all_accesses(k, b, &mut all);
    for (buf, lanes) in all {
        if lanes.iter().any(|&l| l > 1) {
            out.insert(buf, lanes);
        }
    }
}

fn all_accesses(k: &ThreadKernel, b: &[Stmt], out: &mut WideAccesses) {
    fn note(k: &ThreadKernel, out: &mut WideAccesses, buf: u32, r: Reg) {
        out.entry(buf).or_default().insert(k.reg_ty(r).lanes);
    }
    for s in b {
        match s {
            Stmt::Assign {
                dst,
                expr: Expr::Load { buf, .. },
            } => note(k, out, *buf, *dst),
            Stmt::Store { buf, value, .. } => note(k, out, *buf, *value),
            Stmt::For { body, .. } => all_accesses(k, body, out),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                all_accesses(k, then_body, out);
                all_accesses(k, else_body, out);
            }
            Stmt::While {
                cond_body, body, ..
            } => {
                all_accesses(k, cond_body, out);
                all_accesses(k, body, out);
            }
            _ => {}
        }
    }
}

/// Marks the 32-bit shared arrays that 4-lane shared loads or stores touch.
fn shared_vec4_arrays(k: &ThreadKernel, b: &[Stmt], out: &mut [bool]) {
    for s in b {
        let touched = match s {
            Stmt::Assign {
                dst,
                expr: Expr::SharedLoad { arr, .. },
            } => Some((*arr, *dst)),
            Stmt::SharedStore { arr, value, .. } => Some((*arr, *value)),
            _ => None,
        };
        if let Some((arr, r)) = touched {
            let dt = k.shared[arr as usize].dtype;
            if k.reg_ty(r).lanes == 4 && dt.size_bytes() == 4 && dt != DType::I1 {
                out[arr as usize] = true;
            }
        }
        for body in s.bodies() {
            shared_vec4_arrays(k, body, out);
        }
    }
}

/// The shared arrays cooperative-matrix loads and stores address (they take a pointer
/// to a scalar element, so the array stays an array of scalars), and whether the
/// kernel uses subgroups (ids or reductions).
fn coop_uses(b: &[Stmt], arrays: &mut std::collections::BTreeSet<u32>, subgroup_id: &mut bool) {
    for s in b {
        match s {
            Stmt::CoopLoad { arr, .. } | Stmt::CoopStore { arr, .. } => {
                arrays.insert(*arr);
            }
            Stmt::Assign {
                expr:
                    Expr::Special(Special::SubgroupId | Special::SubgroupInvocationId)
                    | Expr::SubgroupReduce { .. },
                ..
            } => *subgroup_id = true,
            _ => {}
        }
        for body in s.bodies() {
            coop_uses(body, arrays, subgroup_id);
        }
    }
}

/// Whether `body` holds a cooperative-matrix statement (at any depth).
fn has_coop(body: &[Stmt]) -> bool {
    body.iter().any(|s| {
        matches!(
            s,
            Stmt::CoopZero { .. }
                | Stmt::CoopLoad { .. }
                | Stmt::CoopStore { .. }
                | Stmt::CoopMulAdd { .. }
                | Stmt::CoopCopy { .. }
        ) || s.bodies().into_iter().any(|b| has_coop(b))
    })
}

/// Whether some `if` of `body` holds cooperative-matrix statements.
fn coop_ifs(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::If {
            then_body,
            else_body,
            ..
        } if has_coop(then_body) || has_coop(else_body) => true,
        _ => s.bodies().into_iter().any(|b| coop_ifs(b)),
    })
}

/// The WGSL type of a fragment.
fn frag_type(t: &FragTy) -> String {
    let role = match t.role {
        FragRole::A => "A",
        FragRole::B => "B",
        FragRole::C => "C",
    };
    let elem = if t.dtype == DType::F16 { "f16" } else { "f32" };
    format!("coop_mat{0}x{0}<{elem}, {role}>", t.size)
}

/// Buffer parameters used by atomics.
fn atomic_buffers(body: &[Stmt]) -> Vec<u32> {
    let mut out = vec![];
    fn go(b: &[Stmt], out: &mut Vec<u32>) {
        for s in b {
            match s {
                Stmt::Atomic { buf, .. } | Stmt::AtomicCas { buf, .. } => out.push(*buf),
                Stmt::For { body, .. } => go(body, out),
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    go(then_body, out);
                    go(else_body, out);
                }
                Stmt::While {
                    cond_body, body, ..
                } => {
                    go(cond_body, out);
                    go(body, out);
                }
                _ => {}
            }
        }
    }
    go(body, &mut out);
    out
}

/// The WGSL type of a register of `dt`.
fn reg_ty(dt: DType, f16: bool) -> &'static str {
    match dt {
        DType::I1 => "bool",
        DType::I8 | DType::I16 | DType::I32 => "i32",
        // fp8 is lowered to its codes (u8) before printing.
        DType::U8 | DType::U16 | DType::U32 | DType::F8E4M3 | DType::F8E5M2 => "u32",
        DType::F16 if f16 => "f16",
        DType::F16 | DType::BF16 | DType::F32 => "f32",
        DType::I64 | DType::U64 | DType::F64 => "i32", // rejected by check_type
    }
}

const PRELUDE: &str = "
fn tw_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn tw_isfinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
fn tw_minf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return min(a, b); }
fn tw_maxf(a: f32, b: f32) -> f32 { if (tw_isnan(a)) { return b; } if (tw_isnan(b)) { return a; } return max(a, b); }
fn tw_bf16_bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
  if (tw_isnan(x)) { return 0x7fc0u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
fn tw_bf16(x: f32) -> f32 { return bitcast<f32>(tw_bf16_bits(x) << 16u); }
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
fn tw_mulhi(a: u32, b: u32) -> u32 {
  let p00 = (a & 0xffffu) * (b & 0xffffu); let p01 = (a & 0xffffu) * (b >> 16u);
  let p10 = (a >> 16u) * (b & 0xffffu); let p11 = (a >> 16u) * (b >> 16u);
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u);
}
fn tw_udiv(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a / b; }
fn tw_urem(a: u32, b: u32) -> u32 { if (b == 0u) { return 0u; } return a % b; }
";

const PRELUDE_F16: &str = "
fn tw_isnanh(x: f16) -> bool { return tw_isnan(f32(x)); }
fn tw_to_f16(x: f32) -> f16 { return f16(unpack2x16float(tw_f16_bits(x)).x); }
fn tw_minh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return min(a, b); }
fn tw_maxh(a: f16, b: f16) -> f16 { if (tw_isnanh(a)) { return b; } if (tw_isnanh(b)) { return a; } return max(a, b); }
";

impl Printer<'_> {
    fn check_type(&self, dt: DType) -> Result<()> {
        if matches!(dt, DType::I64 | DType::U64 | DType::F64) {
            return Err(backend_err(
                &self.k.name,
                format!("it uses {dt}, and WGSL has no 64-bit types (use the CUDA backend, or 32-bit types)"),
            ));
        }
        Ok(())
    }

    fn rty(&self, dt: DType) -> &'static str {
        reg_ty(dt, self.f16)
    }

    /// Bytes of one element of a `dt` array in WGSL (`rty`'s size).
    fn elem_bytes(&self, dt: DType) -> u32 {
        if self.rty(dt) == "f16" {
            2
        } else {
            4
        }
    }

    /// The WGSL type of a register of `lanes` elements of `dt`.
    fn reg_decl(&self, dt: DType, lanes: u8) -> String {
        if lanes == 1 {
            self.rty(dt).to_string()
        } else {
            format!("vec{lanes}<{}>", self.rty(dt))
        }
    }

    fn lanes(&self, r: Reg) -> u8 {
        self.k.reg_ty(r).lanes
    }

    fn dt(&self, r: Reg) -> DType {
        self.k.reg_ty(r).dtype
    }

    fn header(&mut self, layout: &KernelLayout, scalars: &[(usize, DType)]) -> Result<()> {
        let uses_f16 = self.f16
            && (self.k.regs.iter().any(|t| t.dtype == DType::F16)
                || self.k.shared.iter().any(|a| a.dtype == DType::F16)
                || self.k.params.iter().any(|p| {
                    matches!(
                        p.kind,
                        ParamKind::Buffer {
                            dtype: DType::F16,
                            ..
                        }
                    )
                }));
        let mut h = String::new();
        let _ = writeln!(
            h,
            "// tilewise: kernel `{}`, {} threads per program",
            self.k.name, self.k.threads
        );
        if uses_f16 {
            h.push_str("enable f16;\n");
        }
        if !self.k.frags.is_empty() {
            h.push_str("enable wgpu_cooperative_matrix;\n");
        }
        h.push_str(PRELUDE);
        if uses_f16 {
            h.push_str(PRELUDE_F16);
        }
        let nb = layout.storage.len();
        let nbw = nb.div_ceil(4).max(1);
        let nsw = 1 + scalars.len().div_ceil(4);
        let _ = writeln!(h, "\nstruct Params {{\n  bases: array<vec4<u32>, {nbw}>,\n  words: array<vec4<u32>, {nsw}>,\n}}");
        for (i, prm) in self.k.params.iter().enumerate() {
            let (Some(b), Some(repr)) = (self.binding[i], self.reprs[i]) else {
                continue;
            };
            let ParamKind::Buffer { dtype, written } = prm.kind else {
                continue;
            };
            let access = if written { "read_write" } else { "read" };
            let elem = match repr {
                Repr::Plain => self.rty(dtype).to_string(),
                Repr::Atomic32 if dtype == DType::I32 => "atomic<i32>".into(),
                Repr::Atomic32 => "atomic<u32>".into(),
                Repr::Packed { atomic: true, .. } => "atomic<u32>".into(),
                Repr::Packed { atomic: false, .. } => "u32".into(),
                Repr::Vec4 => format!("vec4<{}>", self.rty(dtype)),
            };
            let _ = writeln!(h, "@group(0) @binding({b}) var<storage, {access}> b{i}: array<{elem}>; // {}: {dtype}", prm.name);
        }
        let _ = writeln!(h, "@group(0) @binding({nb}) var<uniform> P: Params;");
        // With a nonzero base of a scalar-only kernel layout still valid: bases is sized >= 1.
        for (i, a) in self.k.shared.iter().enumerate() {
            if self.shared_vec4[i] {
                let len = a.len.div_ceil(4).max(1);
                self.workgroup_bytes += 16 * len;
                let _ = writeln!(
                    h,
                    "var<workgroup> s{i}: array<vec4<{}>, {len}>; // {}",
                    self.rty(a.dtype),
                    a.name
                );
                continue;
            }
            // Booleans live in workgroup memory as u32: SPIR-V drivers do not
            // reliably support `bool` there (seen on NVIDIA's Vulkan driver).
            let (elem, bytes) = if a.dtype == DType::I1 {
                ("u32", 4)
            } else {
                (self.rty(a.dtype), self.elem_bytes(a.dtype))
            };
            // Every array a multiple of 16 bytes long: however the driver places them,
            // each starts 16-byte aligned, as cooperative-matrix loads and stores need
            // (a misaligned fragment store on NVIDIA's Vulkan driver silently wrote
            // nothing).
            let per16 = (16 / bytes).max(1);
            let len = a.len.max(1).div_ceil(per16) * per16;
            self.workgroup_bytes += len * bytes;
            let _ = writeln!(
                h,
                "var<workgroup> s{i}: array<{elem}, {len}>; // {}",
                a.name
            );
        }
        let _ = writeln!(
            h,
            "\n@compute @workgroup_size({})\nfn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>{}) {{",
            self.k.threads,
            if self.subgroup_id {
                ", @builtin(subgroup_id) tw_sg: u32, @builtin(subgroup_invocation_id) tw_sgi: u32"
            } else {
                ""
            }
        );
        for (i, f) in self.k.frags.iter().enumerate() {
            // `fr`: `f16` and `f32` would shadow the types.
            let _ = writeln!(h, "  var fr{i}: {};", frag_type(f));
        }
        for (i, t) in self.k.regs.iter().enumerate() {
            if self.bindings[i] == Binding::Var {
                let _ = writeln!(h, "  var r{i}: {};", self.reg_decl(t.dtype, t.lanes));
            }
        }
        // Programs are numbered linearly over the folded dispatch; recover the ids.
        h.push_str("  let tw_grid = P.words[0].xyz;\n");
        h.push_str("  let tw_lin = tw_wg.x + tw_wg.y * tw_nwg.x;\n");
        h.push_str("  if (tw_lin >= tw_grid.x * tw_grid.y * tw_grid.z) { return; }\n");
        h.push_str("  let tw_pid = vec3<u32>(tw_lin % tw_grid.x, (tw_lin / tw_grid.x) % tw_grid.y, tw_lin / (tw_grid.x * tw_grid.y));\n");
        self.out = h;
        Ok(())
    }

    fn body(&mut self) -> Result<()> {
        let body = self.k.body.clone();
        self.stmts(&body, 1)?;
        self.out.push_str("}\n");
        Ok(())
    }

    fn base(&self, p: u32) -> String {
        let b = self.binding[p as usize].unwrap_or(0);
        format!("P.bases[{}][{}]", b / 4, b % 4)
    }

    fn scalar(&self, p: u32, dt: DType) -> String {
        let s = self.scalar_slot[p as usize].unwrap_or(0);
        let w = format!("P.words[{}][{}]", 1 + s / 4, s % 4);
        match dt {
            DType::I1 => format!("({w} != 0u)"),
            DType::I8 | DType::I16 | DType::I32 => format!("bitcast<i32>({w})"),
            DType::U8 | DType::U16 | DType::U32 => w,
            DType::F16 if self.f16 => format!("f16(bitcast<f32>({w}))"),
            _ => format!("bitcast<f32>({w})"),
        }
    }

    /// Wraps or rounds a freshly computed value of `dt` held in its register type.
    fn fix(&self, dt: DType, e: String) -> String {
        match dt {
            DType::I8 => format!("(({e}) << 24u) >> 24u"),
            DType::I16 => format!("(({e}) << 16u) >> 16u"),
            DType::U8 => format!("(({e}) & 0xffu)"),
            DType::U16 => format!("(({e}) & 0xffffu)"),
            DType::BF16 => format!("tw_bf16({e})"),
            DType::F16 if !self.f16 => format!("tw_f16({e})"),
            _ => e,
        }
    }

    fn is_f16_native(&self, dt: DType) -> bool {
        dt == DType::F16 && self.f16
    }

    fn constant(&self, dt: DType, c: Const) -> String {
        let f = |x: f64| -> String {
            let x32 = x as f32;
            if x32.is_nan() {
                "bitcast<f32>(0x7fc00000u)".into()
            } else if x32.is_infinite() {
                if x32 > 0.0 {
                    "bitcast<f32>(0x7f800000u)".into()
                } else {
                    "bitcast<f32>(0xff800000u)".into()
                }
            } else {
                format!("bitcast<f32>({:#x}u)", x32.to_bits())
            }
        };
        match (dt, c) {
            (DType::I1, Const::Bool(b)) => b.to_string(),
            (DType::I1, Const::Int(i)) => (i != 0).to_string(),
            (DType::I1, Const::Float(x)) => (x != 0.0).to_string(),
            (d, c) if d.is_float() => {
                let x = match c {
                    Const::Float(x) => x,
                    Const::Int(i) => i as f64,
                    Const::Bool(b) => b as i64 as f64,
                };
                // Narrow constants are rounded once, from the exact value, as the
                // interpreter rounds them (not through f32).
                let x = match d {
                    DType::F16 => tilewise_core::ir::f16_from_f64(x).to_f64(),
                    DType::BF16 => tilewise_core::ir::bf16_from_f64(x).to_f64(),
                    _ => x,
                };
                let v = f(x);
                if self.is_f16_native(d) {
                    format!("f16({v})")
                } else {
                    v
                }
            }
            (d, c) => {
                let i = match c {
                    Const::Int(i) => i,
                    Const::Bool(b) => b as i64,
                    Const::Float(x) => x as i64,
                };
                if d.is_unsigned_int() {
                    format!("{}u", i as u32)
                } else {
                    format!("bitcast<i32>({:#x}u)", i as i32 as u32)
                }
            }
        }
    }

    /// Reads element `idx` (an absolute u32 index expression) of buffer `p`.
    /// Element `idx` (an `i32` expression) of shared array `arr`: a component of a
    /// `vec4` in arrays declared so.
    fn shared_elem(&self, arr: u32, idx: &str) -> String {
        if self.shared_vec4[arr as usize] {
            format!("s{arr}[({idx}) >> 2u][({idx}) & 3]")
        } else {
            format!("s{arr}[{idx}]")
        }
    }

    fn read_elem(&self, p: u32, idx: &str) -> String {
        let ParamKind::Buffer { dtype, .. } = self.k.params[p as usize].kind else {
            return "0".into();
        };
        match self.reprs[p as usize].unwrap_or(Repr::Plain) {
            Repr::Plain => format!("b{p}[{idx}]"),
            Repr::Vec4 => format!("b{p}[({idx}) >> 2u][({idx}) & 3u]"),
            Repr::Atomic32 => match dtype {
                DType::F32 => format!("bitcast<f32>(atomicLoad(&b{p}[{idx}]))"),
                _ => format!("atomicLoad(&b{p}[{idx}])"),
            },
            Repr::Packed { bits, atomic } => {
                let per = 32 / bits;
                let word_idx = format!("({idx}) / {per}u");
                let word = if atomic {
                    format!("atomicLoad(&b{p}[{word_idx}])")
                } else {
                    format!("b{p}[{word_idx}]")
                };
                let mask = if bits == 8 { "0xffu" } else { "0xffffu" };
                let raw = format!("(({word} >> ((({idx}) % {per}u) * {bits}u)) & {mask})");
                self.decode_packed(dtype, &raw)
            }
        }
    }

    /// The value of `raw` (the bits of one element of `dtype`, in the low bits of a
    /// u32) as a register of `dtype`.
    fn decode_packed(&self, dtype: DType, raw: &str) -> String {
        match dtype {
            DType::I1 => format!("({raw} != 0u)"),
            DType::I8 => format!("((bitcast<i32>({raw}) << 24u) >> 24u)"),
            DType::I16 => format!("((bitcast<i32>({raw}) << 16u) >> 16u)"),
            DType::U8 | DType::U16 => raw.to_string(),
            DType::BF16 => format!("bitcast<f32>({raw} << 16u)"),
            DType::F16 if self.f16 => format!("f16(unpack2x16float({raw}).x)"),
            DType::F16 => format!("unpack2x16float({raw}).x"),
            _ => raw.to_string(),
        }
    }

    /// The raw bits of a register value `v` of `dt` for a packed store.
    fn packed_bits(&self, dt: DType, v: &str) -> String {
        match dt {
            DType::I1 => format!("select(0u, 1u, {v})"),
            DType::I8 | DType::I16 => format!("bitcast<u32>({v})"),
            DType::BF16 => format!("tw_bf16_bits({v})"),
            DType::F16 if self.f16 => format!("tw_f16_bits(f32({v}))"),
            DType::F16 => format!("tw_f16_bits({v})"),
            _ => v.to_string(),
        }
    }

    /// A statement writing `v` (a register of the buffer's dtype) at `idx`.
    fn write_elem(&self, p: u32, idx: &str, v: &str) -> String {
        let ParamKind::Buffer { dtype, .. } = self.k.params[p as usize].kind else {
            return String::new();
        };
        match self.reprs[p as usize].unwrap_or(Repr::Plain) {
            Repr::Plain => format!("b{p}[{idx}] = {v};"),
            Repr::Vec4 => format!("b{p}[({idx}) >> 2u][({idx}) & 3u] = {v};"),
            Repr::Atomic32 => match dtype {
                DType::F32 => format!("atomicStore(&b{p}[{idx}], bitcast<u32>({v}));"),
                _ => format!("atomicStore(&b{p}[{idx}], {v});"),
            },
            Repr::Packed { bits, .. } => {
                let per = 32 / bits;
                let mask = if bits == 8 { "0xffu" } else { "0xffffu" };
                let bitsv = self.packed_bits(dtype, v);
                format!(
                    "{{ let tw_e = {idx}; let tw_w = tw_e / {per}u; let tw_s = (tw_e % {per}u) * {bits}u; atomicAnd(&b{p}[tw_w], ~({mask} << tw_s)); atomicOr(&b{p}[tw_w], (({bitsv}) & {mask}) << tw_s); }}"
                )
            }
        }
    }

    fn index(&self, p: u32, r: Reg) -> String {
        format!("({} + bitcast<u32>(r{}))", self.base(p), r.0)
    }

    fn unary(&self, op: UnaryOp, dt: DType, x: &str) -> String {
        let is_float = dt.is_float();
        let e = match op {
            UnaryOp::Neg if dt.is_unsigned_int() => format!("(0u - {x})"),
            UnaryOp::Neg => format!("(-{x})"),
            UnaryOp::Not if dt == DType::I1 => format!("(!{x})"),
            UnaryOp::Not => format!("(~{x})"),
            UnaryOp::Abs if dt.is_unsigned_int() => x.to_string(),
            UnaryOp::Abs => format!("abs({x})"),
            UnaryOp::Exp => format!("exp({x})"),
            UnaryOp::Exp2 => format!("exp2({x})"),
            UnaryOp::Log => format!("log({x})"),
            UnaryOp::Log2 => format!("log2({x})"),
            UnaryOp::Sqrt => format!("sqrt({x})"),
            UnaryOp::Rsqrt => format!("inverseSqrt({x})"),
            UnaryOp::Sin => format!("sin({x})"),
            UnaryOp::Cos => format!("cos({x})"),
            UnaryOp::Floor => format!("floor({x})"),
            UnaryOp::Ceil => format!("ceil({x})"),
            UnaryOp::Tanh => format!("tanh({x})"),
            UnaryOp::Erf if self.is_f16_native(dt) => format!("f16(tw_erf(f32({x})))"),
            UnaryOp::Erf => format!("tw_erf({x})"),
        };
        if is_float || !matches!(op, UnaryOp::Not) {
            self.fix(dt, e)
        } else {
            e
        }
    }

    fn binary(&self, op: BinaryOp, dt: DType, a: &str, b: &str) -> String {
        let signed = dt.is_signed_int() && dt != DType::I1;
        let e = match op {
            BinaryOp::Add => format!("({a} + {b})"),
            // `x - x` is folded to 0 by drivers that assume NaN and infinity away
            // (lavapipe): NaN unless `x` is finite.
            BinaryOp::Sub if dt.is_float() && a == b => {
                let t = self.rty(dt);
                format!("select({t}(0), {t}(bitcast<f32>(0x7fc00000u)), !tw_isfinite(f32({a})))")
            }
            BinaryOp::Sub => format!("({a} - {b})"),
            BinaryOp::Mul => format!("({a} * {b})"),
            BinaryOp::Div if dt.is_float() => format!("({a} / {b})"),
            BinaryOp::Div if signed => format!("tw_idiv({a}, {b})"),
            BinaryOp::Div => format!("tw_udiv({a}, {b})"),
            BinaryOp::Rem if dt.is_float() => format!("({a} % {b})"),
            BinaryOp::Rem if signed => format!("tw_irem({a}, {b})"),
            BinaryOp::Rem => format!("tw_urem({a}, {b})"),
            BinaryOp::And if dt == DType::I1 => format!("({a} && {b})"),
            BinaryOp::Or if dt == DType::I1 => format!("({a} || {b})"),
            BinaryOp::Xor if dt == DType::I1 => format!("({a} != {b})"),
            BinaryOp::And => format!("({a} & {b})"),
            BinaryOp::Or => format!("({a} | {b})"),
            BinaryOp::Xor => format!("({a} ^ {b})"),
            BinaryOp::Shl => {
                let w = dt.bits();
                let zero = if signed { "0" } else { "0u" };
                format!(
                    "select({a} << (bitcast<u32>({b}) % 32u), {zero}, bitcast<u32>({b}) >= {w}u)"
                )
            }
            BinaryOp::Shr if signed => {
                format!("select({a} >> (bitcast<u32>({b}) % 32u), {a} >> 31u, bitcast<u32>({b}) >= {}u)", dt.bits())
            }
            BinaryOp::Shr => format!("select({a} >> ({b} % 32u), 0u, {b} >= {}u)", dt.bits()),
            // The high half of the unsigned product (8 and 16 bits are held in 32).
            BinaryOp::MulHi if dt.bits() == 32 && signed => {
                format!("bitcast<i32>(tw_mulhi(bitcast<u32>({a}), bitcast<u32>({b})))")
            }
            BinaryOp::MulHi if dt.bits() == 32 => format!("tw_mulhi({a}, {b})"),
            BinaryOp::MulHi => {
                let m = (1u32 << dt.bits()) - 1;
                let t = self.rty(dt);
                format!(
                    "{t}(((bitcast<u32>({a}) & {m}u) * (bitcast<u32>({b}) & {m}u)) >> {}u)",
                    dt.bits()
                )
            }
            BinaryOp::Min if self.is_f16_native(dt) => format!("tw_minh({a}, {b})"),
            BinaryOp::Max if self.is_f16_native(dt) => format!("tw_maxh({a}, {b})"),
            BinaryOp::Min if dt.is_float() => format!("tw_minf({a}, {b})"),
            BinaryOp::Max if dt.is_float() => format!("tw_maxf({a}, {b})"),
            BinaryOp::Min if dt == DType::I1 => format!("({a} && {b})"),
            BinaryOp::Max if dt == DType::I1 => format!("({a} || {b})"),
            // Integers as a compare and a select, not min()/max(): NVIDIA's Vulkan
            // driver (580.159, H200) computed `max(-a, -b, ...)` without the negation, as
            // its PTX compiler does (found by the fuzzer).
            BinaryOp::Min | BinaryOp::Max => {
                let cmp = if op == BinaryOp::Min { "<" } else { ">" };
                format!("select({b}, {a}, {a} {cmp} {b})")
            }
            BinaryOp::Pow => format!("pow({a}, {b})"),
        };
        if dt == DType::I1 {
            e
        } else {
            self.fix(dt, e)
        }
    }

    fn cmp(&self, p: CmpPred, dt: DType, a: &str, b: &str) -> String {
        if dt == DType::I1 && !matches!(p, CmpPred::Eq | CmpPred::Ne) {
            let (a, b) = (
                format!("select(0u, 1u, {a})"),
                format!("select(0u, 1u, {b})"),
            );
            return self.cmp(p, DType::U32, &a, &b);
        }
        let o = Self::cmp_op(p);
        if dt.is_float() {
            // WGSL lets a driver assume NaN away (NVIDIA's folds `x != x` to false):
            // test NaN on the bits, so every comparison follows IEEE.
            let nan = format!("{} || {}", self.isnan(dt, a), self.isnan(dt, b));
            return if p == CmpPred::Ne {
                format!("({nan} || {a} != {b})")
            } else {
                format!("(!({nan}) && {a} {o} {b})")
            };
        }
        format!("({a} {o} {b})")
    }

    /// A NaN test of `x` on its bits.
    fn isnan(&self, dt: DType, x: &str) -> String {
        if self.is_f16_native(dt) {
            format!("tw_isnanh({x})")
        } else {
            format!("tw_isnan({x})")
        }
    }

    fn cmp_op(p: CmpPred) -> &'static str {
        match p {
            CmpPred::Eq => "==",
            CmpPred::Ne => "!=",
            CmpPred::Lt => "<",
            CmpPred::Le => "<=",
            CmpPred::Gt => ">",
            CmpPred::Ge => ">=",
        }
    }

    fn cast(&self, from: DType, to: DType, x: &str, bitcast: bool) -> Result<String> {
        if bitcast {
            return Ok(match (from.bits(), to.bits()) {
                (32, 32) => format!("bitcast<{}>({x})", self.rty(to)),
                (16, 16) | (8, 8) => {
                    // Through the raw bits.
                    let bits = self.packed_bits(from, x);
                    let mask = if from.bits() == 8 { "0xffu" } else { "0xffffu" };
                    let raw = format!("(({bits}) & {mask})");
                    match to {
                        DType::BF16 => format!("bitcast<f32>({raw} << 16u)"),
                        DType::F16 if self.f16 => format!("f16(unpack2x16float({raw}).x)"),
                        DType::F16 => format!("unpack2x16float({raw}).x"),
                        DType::I8 => format!("((bitcast<i32>({raw}) << 24u) >> 24u)"),
                        DType::I16 => format!("((bitcast<i32>({raw}) << 16u) >> 16u)"),
                        _ => raw,
                    }
                }
                _ => return Err(Diagnostic::internal(format!("bitcast {from} -> {to}"))),
            });
        }
        let t = self.rty(to);
        Ok(match (from.is_float(), to.is_float(), from, to) {
            (_, _, f, t2) if f == t2 => x.to_string(),
            (_, _, _, DType::I1) if from.is_float() => {
                let f = self.rty(from);
                format!("({x} != {f}(0) || {})", self.isnan(from, x))
            }
            (_, _, DType::I1, _) if to.is_float() => {
                self.fix(to, format!("select({t}(0), {t}(1), {x})"))
            }
            (_, _, DType::I1, _) => format!("select({t}(0), {t}(1), {x})"),
            (_, _, _, DType::I1) => format!("({x} != {t}(0))", t = self.rty(from)),
            (true, true, _, _) => {
                let widened = if self.is_f16_native(from) {
                    format!("f32({x})")
                } else {
                    x.to_string()
                };
                if self.is_f16_native(to) {
                    format!("tw_to_f16({widened})")
                } else {
                    self.fix(to, widened)
                }
            }
            (true, false, _, _) => {
                let w = if self.is_f16_native(from) {
                    format!("f32({x})")
                } else {
                    x.to_string()
                };
                let v = if to.is_unsigned_int() {
                    format!("tw_f2u({w})")
                } else {
                    format!("tw_f2i({w})")
                };
                // Saturate to narrow integer ranges too.
                match to {
                    DType::I8 => format!("clamp({v}, -128, 127)"),
                    DType::I16 => format!("clamp({v}, -32768, 32767)"),
                    DType::U8 => format!("min({v}, 255u)"),
                    DType::U16 => format!("min({v}, 65535u)"),
                    _ => v,
                }
            }
            (false, true, _, _) => self.fix(to, format!("{t}({x})")),
            (false, false, _, _) => self.fix(to, format!("bitcast<{t}>({x})")),
        })
    }

    fn expr(&self, dt: DType, e: &Expr) -> Result<String> {
        let r = |x: &Reg| format!("r{}", x.0);
        Ok(match e {
            Expr::Const(c) => self.constant(dt, *c),
            Expr::Special(Special::ThreadId) => "bitcast<i32>(tw_tid)".into(),
            Expr::Special(Special::ProgramId(a)) => format!("bitcast<i32>(tw_pid[{a}])"),
            Expr::Special(Special::NumPrograms(a)) => format!("bitcast<i32>(tw_grid[{a}])"),
            Expr::Special(Special::SubgroupId) => "bitcast<i32>(tw_sg)".into(),
            Expr::Special(Special::SubgroupInvocationId) => "bitcast<i32>(tw_sgi)".into(),
            Expr::SubgroupReduce { op, value } => {
                let f = match op {
                    SubgroupOp::Add => "subgroupAdd",
                    SubgroupOp::Max => "subgroupMax",
                    SubgroupOp::Min => "subgroupMin",
                };
                format!("{f}({})", r(value))
            }
            Expr::Param(p) => self.scalar(*p, dt),
            Expr::Copy(x) => r(x),
            Expr::Unary(op, x) => self.unary(*op, dt, &r(x)),
            Expr::Binary(op, a, b) => self.binary(*op, self.dt(*a), &r(a), &r(b)),
            Expr::Cmp(p, a, b) => self.cmp(*p, self.dt(*a), &r(a), &r(b)),
            Expr::Select {
                cond,
                on_true,
                on_false,
            } => format!("select({}, {}, {})", r(on_false), r(on_true), r(cond)),
            Expr::Fma(a, b, c) if dt.is_float() => {
                self.fix(dt, format!("fma({}, {}, {})", r(a), r(b), r(c)))
            }
            Expr::Fma(a, b, c) => self.fix(dt, format!("({} * {} + {})", r(a), r(b), r(c))),
            Expr::Cast { value, bitcast } => self.cast(self.dt(*value), dt, &r(value), *bitcast)?,
            Expr::Load {
                buf,
                index,
                mask,
                other,
            } if self.lanes_of_dst > 1 => {
                let n = self.lanes_of_dst;
                let idx = self.index(*buf, *index);
                let ty = self.reg_decl(dt, n);
                // With a mask, every element index is the view's first element where
                // the mask is false: nothing outside the view is ever read.
                let guard = |p: &Self, i: String| match mask {
                    Some(m) => format!("select({}, {i}, r{})", p.base(*buf), m.0),
                    None => i,
                };
                let whole = if n == 4 && self.reprs[*buf as usize] == Some(Repr::Vec4) {
                    format!("b{buf}[({}) >> 2u]", guard(self, idx.clone()))
                } else {
                    let parts: Vec<String> = (0..n)
                        .map(|l| self.read_elem(*buf, &guard(self, format!("({idx}) + {l}u"))))
                        .collect();
                    format!("{ty}({})", parts.join(", "))
                };
                match mask {
                    Some(m) => {
                        let o = match other {
                            Some(o) => format!("{ty}(r{})", o.0),
                            None => format!("{ty}()"),
                        };
                        format!("select({o}, {whole}, r{})", m.0)
                    }
                    None => whole,
                }
            }
            Expr::Extract { vector, lane } => format!("r{}[{lane}]", vector.0),
            Expr::Construct(parts) => {
                let parts: Vec<String> = parts.iter().map(r).collect();
                format!(
                    "{}({})",
                    self.reg_decl(dt, self.lanes_of_dst),
                    parts.join(", ")
                )
            }
            Expr::SharedLoad { arr, index }
                if self.lanes_of_dst == 4 && self.shared_vec4[*arr as usize] =>
            {
                format!("s{arr}[r{} >> 2u]", index.0)
            }
            Expr::SharedLoad { arr, index } if self.lanes_of_dst > 1 => {
                let parts: Vec<String> = (0..self.lanes_of_dst)
                    .map(|l| self.shared_elem(*arr, &format!("r{} + {l}", index.0)))
                    .collect();
                format!(
                    "{}({})",
                    self.reg_decl(dt, self.lanes_of_dst),
                    parts.join(", ")
                )
            }
            Expr::Load {
                buf,
                index,
                mask,
                other,
            } => {
                let idx = self.index(*buf, *index);
                match (mask, other) {
                    (Some(m), Some(o)) => {
                        let safe = format!("select({}, {idx}, r{})", self.base(*buf), m.0);
                        format!(
                            "select(r{}, {}, r{})",
                            o.0,
                            self.read_elem(*buf, &safe),
                            m.0
                        )
                    }
                    _ => self.read_elem(*buf, &idx),
                }
            }
            Expr::SharedLoad { arr, index } if self.k.shared[*arr as usize].dtype == DType::I1 => {
                format!("(s{arr}[r{}] != 0u)", index.0)
            }
            Expr::SharedLoad { arr, index } => self.shared_elem(*arr, &format!("r{}", index.0)),
            Expr::ShuffleXor { .. } => {
                return Err(Diagnostic::internal(
                    "warp shuffles are not lowered for WGSL (subgroup lanes are not \
                     guaranteed to follow thread ids)",
                ))
            }
        })
    }

    fn line(&mut self, depth: usize, s: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn atomic(&self, op: AtomicOp, p: u32, idx: &str, v: &str, dt: DType) -> Result<String> {
        let a = format!("&b{p}[{idx}]");
        if dt == DType::F32 {
            // Compare-and-swap loop on the bits.
            let apply = match op {
                AtomicOp::Add => format!("bitcast<f32>(tw_old) + {v}"),
                AtomicOp::Max => format!("tw_maxf(bitcast<f32>(tw_old), {v})"),
                AtomicOp::Min => format!("tw_minf(bitcast<f32>(tw_old), {v})"),
                AtomicOp::Xchg => v.to_string(),
                _ => {
                    return Err(backend_err(
                        &self.k.name,
                        format!("atomic {} on f32", op.name()),
                    ))
                }
            };
            return Ok(format!(
                "loop {{ let tw_old = atomicLoad({a}); let tw_r = atomicCompareExchangeWeak({a}, tw_old, bitcast<u32>({apply})); if (tw_r.exchanged) {{ RESULT = bitcast<f32>(tw_old); break; }} }}"
            ));
        }
        if !matches!(dt, DType::I32 | DType::U32) {
            return Err(backend_err(
                &self.k.name,
                format!("atomics on {dt} elements"),
            ));
        }
        let f = match op {
            AtomicOp::Add => "atomicAdd",
            AtomicOp::Max => "atomicMax",
            AtomicOp::Min => "atomicMin",
            AtomicOp::And => "atomicAnd",
            AtomicOp::Or => "atomicOr",
            AtomicOp::Xor => "atomicXor",
            AtomicOp::Xchg => "atomicExchange",
        };
        Ok(format!("RESULT = {f}({a}, {v});"))
    }

    fn stmts(&mut self, body: &[Stmt], depth: usize) -> Result<()> {
        for s in body {
            match s {
                Stmt::Assign { dst, expr } => {
                    self.lanes_of_dst = self.lanes(*dst);
                    let e = self.expr(self.dt(*dst), expr);
                    self.lanes_of_dst = 1;
                    let line = if self.bindings[dst.0 as usize] == Binding::Let {
                        let t = self.k.reg_ty(*dst);
                        format!(
                            "let r{}: {} = {};",
                            dst.0,
                            self.reg_decl(t.dtype, t.lanes),
                            e?
                        )
                    } else {
                        format!("r{} = {};", dst.0, e?)
                    };
                    self.line(depth, &line);
                }
                Stmt::Store {
                    buf,
                    index,
                    value,
                    mask,
                } => {
                    let idx = self.index(*buf, *index);
                    let n = self.lanes(*value);
                    let w = if n == 4 && self.reprs[*buf as usize] == Some(Repr::Vec4) {
                        format!("b{buf}[({idx}) >> 2u] = r{};", value.0)
                    } else if n > 1 {
                        (0..n)
                            .map(|l| {
                                self.write_elem(
                                    *buf,
                                    &format!("({idx}) + {l}u"),
                                    &format!("r{}[{l}]", value.0),
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(" ")
                    } else {
                        self.write_elem(*buf, &idx, &format!("r{}", value.0))
                    };
                    match mask {
                        Some(m) => self.line(depth, &format!("if (r{}) {{ {w} }}", m.0)),
                        None => self.line(depth, &w),
                    }
                }
                Stmt::SharedStore { arr, index, value }
                    if self.lanes(*value) == 4 && self.shared_vec4[*arr as usize] =>
                {
                    self.line(depth, &format!("s{arr}[r{} >> 2u] = r{};", index.0, value.0));
                }
                Stmt::SharedStore { arr, index, value } if self.lanes(*value) > 1 => {
                    for l in 0..self.lanes(*value) {
                        let at = self.shared_elem(*arr, &format!("r{} + {l}", index.0));
                        self.line(depth, &format!("{at} = r{}[{l}];", value.0));
                    }
                }
                Stmt::SharedStore { arr, index, value } => {
                    let v = if self.k.shared[*arr as usize].dtype == DType::I1 {
                        format!("select(0u, 1u, r{})", value.0)
                    } else {
                        format!("r{}", value.0)
                    };
                    let at = self.shared_elem(*arr, &format!("r{}", index.0));
                    self.line(depth, &format!("{at} = {v};"));
                }
                Stmt::Atomic {
                    dst,
                    op,
                    buf,
                    index,
                    value,
                    mask,
                } => {
                    let idx = self.index(*buf, *index);
                    let ParamKind::Buffer { dtype, .. } = self.k.params[*buf as usize].kind else {
                        return Err(Diagnostic::internal("atomic on a scalar"));
                    };
                    let code = self
                        .atomic(*op, *buf, &idx, &format!("r{}", value.0), dtype)?
                        .replace("RESULT", &format!("r{}", dst.0));
                    match mask {
                        Some(m) => self.line(depth, &format!("if (r{}) {{ {code} }}", m.0)),
                        None => self.line(depth, &code),
                    }
                }
                Stmt::AtomicCas {
                    dst,
                    buf,
                    index,
                    cmp,
                    value,
                } => {
                    let idx = self.index(*buf, *index);
                    let ParamKind::Buffer { dtype, .. } = self.k.params[*buf as usize].kind else {
                        return Err(Diagnostic::internal("atomic on a scalar"));
                    };
                    let (c, v, back) = match dtype {
                        DType::F32 => (
                            format!("bitcast<u32>(r{})", cmp.0),
                            format!("bitcast<u32>(r{})", value.0),
                            "bitcast<f32>",
                        ),
                        DType::I32 | DType::U32 => {
                            (format!("r{}", cmp.0), format!("r{}", value.0), "")
                        }
                        other => {
                            return Err(backend_err(
                                &self.k.name,
                                format!("atomic_cas on {other} elements"),
                            ))
                        }
                    };
                    // The weak exchange may fail spuriously (old value equal to the
                    // comparand, nothing stored): retry until it stores or truly fails.
                    self.line(depth, &format!("loop {{ let tw_x = atomicCompareExchangeWeak(&b{buf}[{idx}], {c}, {v}); if (tw_x.exchanged || tw_x.old_value != {c}) {{ r{} = {back}(tw_x.old_value); break; }} }}", dst.0));
                }
                Stmt::Barrier => self.line(depth, "workgroupBarrier();"),
                // A control barrier ordering storage memory, then workgroup memory too.
                Stmt::StorageBarrier => {
                    self.line(depth, "storageBarrier();");
                    self.line(depth, "workgroupBarrier();");
                }
                Stmt::CoopZero { dst } => {
                    let t = frag_type(&self.k.frag_ty(*dst));
                    self.line(depth, &format!("fr{} = {t}();", dst.0));
                }
                Stmt::CoopLoad {
                    dst,
                    arr,
                    index,
                    stride,
                } => {
                    let t = frag_type(&self.k.frag_ty(*dst));
                    self.line(
                        depth,
                        &format!(
                            "fr{} = coopLoadT<{t}>(&s{arr}[r{}], {stride}u);",
                            dst.0, index.0
                        ),
                    );
                }
                Stmt::CoopStore {
                    src,
                    arr,
                    index,
                    stride,
                } => {
                    self.line(
                        depth,
                        &format!("coopStoreT(fr{}, &s{arr}[r{}], {stride}u);", src.0, index.0),
                    );
                }
                Stmt::CoopMulAdd { dst, a, b, c } => {
                    self.line(
                        depth,
                        &format!(
                            "fr{} = coopMultiplyAdd(fr{}, fr{}, fr{});",
                            dst.0, a.0, b.0, c.0
                        ),
                    );
                }
                Stmt::CoopCopy { dst, src } => {
                    self.line(depth, &format!("fr{} = fr{};", dst.0, src.0));
                }
                Stmt::Mma { .. } | Stmt::LdMatrix { .. } => {
                    return Err(Diagnostic::internal(
                        "tensor-core mma reached the WGSL printer (the WGSL lowering uses FMA)",
                    ))
                }
                Stmt::Wgmma { .. }
                | Stmt::WgmmaFence
                | Stmt::WgmmaCommit
                | Stmt::WgmmaWait { .. }
                | Stmt::FenceProxyAsync => {
                    return Err(Diagnostic::internal(
                        "a warpgroup mma (wgmma) reached the WGSL printer (WGSL has no warpgroups)",
                    ))
                }
                Stmt::AsyncCopy { .. } | Stmt::AsyncCommit | Stmt::AsyncWait { .. } => {
                    return Err(Diagnostic::internal(
                        "an asynchronous copy reached the WGSL printer (the WGSL lowering stages through registers)",
                    ))
                }
                Stmt::For {
                    iv,
                    lower,
                    upper,
                    step,
                    body,
                } => {
                    self.line(
                        depth,
                        &format!(
                            "for (r{iv} = r{lo}; (r{st} > 0 && r{iv} < r{hi}) || (r{st} < 0 && r{iv} > r{hi}); r{iv} = r{iv} + r{st}) {{",
                            iv = iv.0,
                            lo = lower.0,
                            hi = upper.0,
                            st = step.0
                        ),
                    );
                    self.stmts(body, depth + 1)?;
                    self.line(depth, "}");
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.line(depth, &format!("if (r{}) {{", cond.0));
                    self.stmts(then_body, depth + 1)?;
                    if !else_body.is_empty() {
                        self.line(depth, "} else {");
                        self.stmts(else_body, depth + 1)?;
                    }
                    self.line(depth, "}");
                }
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    ..
                } => {
                    self.line(depth, "loop {");
                    self.stmts(cond_body, depth + 1)?;
                    self.line(depth + 1, &format!("if (!r{}) {{ break; }}", cond.0));
                    self.stmts(body, depth + 1)?;
                    self.line(depth, "}");
                }
            }
        }
        Ok(())
    }
}
