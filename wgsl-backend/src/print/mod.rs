//! The WGSL printer: Thread IR in, one compute shader out.
//!
//! A thin printer: every semantic decision was taken by the shared lowering; this
//! module only spells each Thread IR statement in WGSL so that it means exactly what
//! the tile IR says (see `tilewise_core::ir::ops`):
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
//!
//! The printer is split by concept; every file adds `impl Printer` methods:
//!
//! - this file: the entry point ([`print_wgsl`]), the printer's state, register types
//!   and declarations, and the dispatch of expressions and statements;
//! - `module`: the shader's skeleton (header, bindings, the parameter block, workgroup
//!   arrays, the entry point and its program-id prologue) and [`WgslKernel`]'s
//!   launch-side encoding of the same parameter block and grid;
//! - `prelude`: the `tw_*` helper functions, each shader carrying those it calls;
//! - `memory`: buffer representations, loads, stores, atomics and barriers;
//! - `matrix`: cooperative-matrix fragments;
//! - `arith`: constants, arithmetic, comparisons, casts, and the wrapping and rounding
//!   of narrow types;
//! - `control`: loops and branches.

mod arith;
mod control;
mod matrix;
mod memory;
mod module;
mod prelude;

use crate::context::Capabilities;
use crate::pipeline::{KernelLayout, StorageBinding, UniformLayout};
use matrix::{coop_ifs, coop_uses, frag_type};
use memory::{
    atomic_buffers, shared_vec4_arrays, uses_addresses, wide_accesses, Repr, WideAccesses,
};
use std::fmt::Write;
use tilewise_core::ir::DType;
use tilewise_core::thread_ir::{Binding, Expr, ParamKind, Reg, Stmt, SubgroupOp, ThreadKernel};
use tilewise_core::{Diagnostic, ErrorKind, Result, Span};

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
    /// Where the prelude goes in `out`, inserted once the shader is printed.
    prelude_at: usize,
    /// The source span of the statements being printed (the last [`Stmt::Loc`]), and
    /// the line last written as a comment.
    loc: Span,
    loc_line: Option<u32>,
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
        prelude_at: 0,
        loc: Span::NONE,
        loc_line: None,
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
    if k.shared.iter().any(|a| a.overlays.is_some()) {
        return Err(Diagnostic::internal(
            "shared arrays of different dtypes in one memory reached the WGSL printer (WGSL's workgroup arrays are typed)",
        ));
    }
    if uses_addresses(&k.body) {
        return Err(Diagnostic::internal(
            "an access through an address reached the WGSL printer (the WGSL lowering refuses pointers as data)",
        ));
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
            ParamKind::TensorMap(_) => {
                return Err(Diagnostic::internal(
                    "a tensor map parameter reached the WGSL printer (WGSL has no tensor memory accelerator)",
                ))
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
    p.declare_registers();
    p.prologue();
    p.body()?;
    p.insert_prelude();
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

    /// The entry point's `var` declarations: the fragments, then the registers not
    /// spelled as a `let` at their one assignment.
    fn declare_registers(&mut self) {
        let mut h = String::new();
        for (i, f) in self.k.frags.iter().enumerate() {
            // `fr`: `f16` and `f32` would shadow the types.
            let _ = writeln!(h, "  var fr{i}: {};", frag_type(f));
        }
        for (i, t) in self.k.regs.iter().enumerate() {
            if self.bindings[i] == Binding::Var {
                let _ = writeln!(h, "  var r{i}: {};", self.reg_decl(t.dtype, t.lanes));
            }
        }
        self.out.push_str(&h);
    }

    fn line(&mut self, depth: usize, s: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn expr(&self, dt: DType, e: &Expr) -> Result<String> {
        let r = |x: &Reg| format!("r{}", x.0);
        Ok(match e {
            Expr::Const(c) => self.constant(dt, *c),
            Expr::Special(s) => self.special(*s),
            Expr::SubgroupReduce { op, value } => {
                let f = match op {
                    SubgroupOp::Add => "subgroupAdd",
                    SubgroupOp::Max => "subgroupMax",
                    SubgroupOp::Min => "subgroupMin",
                };
                format!("{f}({})", r(value))
            }
            Expr::Address(_) => {
                return Err(Diagnostic::internal("a buffer's address in WGSL"));
            }
            Expr::Param(p) => self.scalar(*p, dt),
            Expr::Copy(x) | Expr::WarpUniform(x) => r(x),
            Expr::Unary(op, x) => self.unary(*op, dt, &r(x))?,
            Expr::Binary(op, a, b) => self.binary(*op, self.dt(*a), &r(a), &r(b))?,
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
            } => self.load(dt, *buf, *index, *mask, *other),
            Expr::Extract { vector, lane } => format!("r{}[{lane}]", vector.0),
            Expr::Construct(parts) => {
                let parts: Vec<String> = parts.iter().map(r).collect();
                format!(
                    "{}({})",
                    self.reg_decl(dt, self.lanes_of_dst),
                    parts.join(", ")
                )
            }
            Expr::SharedLoad { arr, index } => self.shared_load(dt, *arr, *index),
            Expr::ShuffleXor { .. } => {
                return Err(Diagnostic::internal(
                    "warp shuffles are not lowered for WGSL (subgroup lanes are not \
                     guaranteed to follow thread ids)",
                ))
            }
        })
    }

    fn stmts(&mut self, body: &[Stmt], depth: usize) -> Result<()> {
        for s in body {
            self.stmt(s, depth)
                .map_err(|e| self.k.locate(e, self.loc))?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) -> Result<()> {
        {
            match s {
                Stmt::Loc(span) => {
                    self.loc = *span;
                    let line = self.k.line_of(*span);
                    if line.is_some() && line != self.loc_line {
                        self.loc_line = line;
                        self.line(depth, &format!("// line {}", line.unwrap_or(0)));
                    }
                }
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
                } => self.store(depth, *buf, *index, *value, *mask),
                Stmt::SharedStore { arr, index, value } => {
                    self.shared_store(depth, *arr, *index, *value)
                }
                Stmt::Atomic {
                    dst,
                    op,
                    buf,
                    index,
                    value,
                    mask,
                } => self.atomic(depth, *dst, *op, *buf, *index, *value, *mask)?,
                Stmt::AtomicCas {
                    dst,
                    buf,
                    index,
                    cmp,
                    value,
                } => self.atomic_cas(depth, *dst, *buf, *index, *cmp, *value)?,
                Stmt::Barrier => self.barrier(depth),
                Stmt::StorageBarrier => self.storage_barrier(depth),
                Stmt::CoopZero { dst } => self.coop_zero(depth, *dst),
                Stmt::CoopLoad {
                    dst,
                    arr,
                    index,
                    stride,
                    column_major,
                } => self.coop_load(depth, *dst, *arr, *index, *stride, *column_major),
                Stmt::CoopStore {
                    src,
                    arr,
                    index,
                    stride,
                } => self.coop_store(depth, *src, *arr, *index, *stride),
                Stmt::CoopMulAdd { dst, a, b, c } => self.coop_mul_add(depth, *dst, *a, *b, *c),
                Stmt::CoopCopy { dst, src } => self.coop_copy(depth, *dst, *src),
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
                Stmt::MbarrierInit { .. }
                | Stmt::MbarrierArriveTx { .. }
                | Stmt::MbarrierWait { .. }
                | Stmt::TmaLoad { .. } => {
                    return Err(Diagnostic::internal(
                        "a tensor memory accelerator copy reached the WGSL printer",
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
                } => self.for_loop(depth, *iv, *lower, *upper, *step, body)?,
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => self.if_else(depth, *cond, then_body, else_body)?,
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    ..
                } => self.while_loop(depth, cond_body, *cond, body)?,
            }
        }
        Ok(())
    }
}
