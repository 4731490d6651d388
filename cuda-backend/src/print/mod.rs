//! The PTX printer: Thread IR in, one PTX module with one `.entry` out.
//!
//! A thin printer: the shared lowering took every semantic decision; this module
//! spells each Thread IR statement in PTX so that it means exactly what the tile IR
//! says (see `tilewise_core::ir::ops`). No LLVM and no NVRTC: the text goes to the
//! CUDA driver's JIT (or to `ptxas` in CI) as is.
//!
//! - **Registers.** Thread IR register `rN` is `%pN` (`.pred`, for `i1`), `%rN`
//!   (`.b32`, for every 8-, 16- and 32-bit type) or `%rdN` (`.b64`). Untyped bit
//!   registers serve integer and float instructions alike. 8- and 16-bit integers live
//!   sign- or zero-extended in 32-bit registers and are wrapped after each operation;
//!   f16 and bf16 live in f32 registers; `lower::math` computes their arithmetic in
//!   f32 and rounds once per operation with a cast (the interpreter's semantics). Temporaries are
//!   `%tN`, `%tdN`, `%tpN`, `%thN` (`.b16`).
//! - **Parameters.** Thread IR parameter `i` is `.param` `tw_p{i}`: a `.u64` global
//!   address for a buffer (the start of the bound view), a `.b32` word for a scalar of
//!   32 bits or fewer (f16 and bf16 scalars travel as f32), a `.b64` for 64-bit ones.
//!   [`PtxKernel::params`] tells the runtime which is which.
//! - **Grid.** One program is one CTA of [`PtxKernel::threads`] threads;
//!   `tl.program_id(a)` is `%ctaid`, `tl.num_programs(a)` is `%nctaid`.
//! - **Shared memory** is one dynamic `.extern .shared` array; the Thread IR's arrays
//!   sit in it at 16-byte aligned offsets ([`PtxKernel::shared_bytes`] in all).
//! - **Semantics.** Integer division by zero gives 0 and `x / -1` wraps; PTX clamps shift
//!   amounts at the width, which is exactly the tile IR's rule; `min`/`max` are PTX's,
//!   which let a number win over NaN; float-to-int `cvt.rzi` saturates and maps NaN to
//!   0 (for 64-bit results the printer sets NaN's 0 itself: the H200 gave the most
//!   negative integer); float `!=` is unordered. `+ - * /` and `sqrt` are correctly rounded (`.rn`, never
//!   contracted); `exp2`, `log2`, `rsqrt`, `sin`, `cos` use the `.approx` instructions
//!   as Triton does. `exp`, `log`, `erf`, `tanh`, `pow`, the `sin`/`cos` range
//!   reduction and the f32 arithmetic of f16 / bf16 values arrive written out by
//!   `tilewise_core::lower::math`.
//! - **Memory.** A masked load moves `other` in first and predicates the load
//!   (`@%p ld.global`), a masked store is predicated: masked-off lanes never touch
//!   memory. Atomics are `acq_rel` at GPU scope, Triton's default; float `min`/`max`
//!   atomics are compare-and-swap loops.
//!
//! The printer is split by concept; every file adds `impl Printer` methods:
//!
//! - this file: the entry point ([`print_ptx`]), the printer's state, register
//!   classes, temporaries and declarations, and the dispatch of statements and
//!   assignments;
//! - `module`: the module's skeleton (`.version`, `.target`, the shared block, the
//!   `.entry` and its parameters, [`PtxTarget`], [`PtxParam`], [`encode_scalar`]),
//!   buffer bases, scalar parameters and special registers;
//! - `vector`: vector registers, their lanes packed in `.b32` words;
//! - `memory`: global and shared loads and stores, atomics, asynchronous copies,
//!   barriers and warp shuffles;
//! - `matrix`: tensor cores (`ldmatrix`, `mma.sync`, `wgmma` and its descriptors);
//! - `arith`: constants, arithmetic, comparisons, casts, and the wrapping and rounding
//!   of narrow types;
//! - `control`: loops and branches.

mod arith;
mod control;
mod matrix;
mod memory;
mod module;
mod tma;
mod vector;

pub use module::{ask_blocks_per_sm, encode_scalar, PtxParam, PtxTarget, MIN_BLOCKS_DIRECTIVE};

use module::{sanitize, shared_layout, uses_wgmma};
use std::collections::HashMap;
use std::fmt::Write;
use tilewise_core::ir::DType;
use tilewise_core::thread_ir::{Expr, Reg, Stmt, ThreadKernel};
use tilewise_core::{Diagnostic, ErrorKind, Result, Span};
use vector::words;

/// A kernel printed as PTX, with what the runtime needs to launch it.
/// Serialized (without the checked-mode part) for the persistent cache.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PtxKernel {
    /// The tile kernel's name.
    pub name: String,
    /// The `.entry` name in [`PtxKernel::source`].
    pub entry: String,
    pub source: String,
    /// Threads per CTA (one program).
    pub threads: u32,
    /// Dynamic shared memory per CTA, in bytes.
    pub shared_bytes: u32,
    /// One entry per Thread IR parameter, in order.
    pub params: Vec<PtxParam>,
    pub target: PtxTarget,
    /// The `.target` printed, which `ptxas -arch` must name: the target's name, or
    /// `sm_90a` where the kernel uses warpgroup MMA.
    pub arch: String,
    /// What the lowering chose where it had a choice (each dot's form, shared memory
    /// reused, pipelines shortened to fit), for the compiled kernel's description.
    pub notes: Vec<String>,
    /// Checked mode: the hidden parameters' meaning and the record's decoding (not
    /// serialized: checked kernels stay out of the persistent cache).
    #[serde(skip)]
    pub checked: Option<tilewise_core::thread_ir::checks::CheckedKernel>,
}

/// Register classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Pred,
    B32,
    B64,
}

fn class(dt: DType) -> Class {
    match dt {
        DType::I1 => Class::Pred,
        DType::I64 | DType::U64 | DType::F64 => Class::B64,
        _ => Class::B32,
    }
}

fn is_signed(dt: DType) -> bool {
    matches!(dt, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

/// The integer instruction type of `dt` (8- and 16-bit types compute in 32 bits).
fn ity(dt: DType) -> &'static str {
    match (class(dt), is_signed(dt)) {
        (Class::B64, true) => "s64",
        (Class::B64, false) => "u64",
        (_, true) => "s32",
        (_, false) => "u32",
    }
}

/// The float instruction type of `dt` (f16 and bf16 compute in f32).
fn fty(dt: DType) -> &'static str {
    if dt == DType::F64 {
        "f64"
    } else {
        "f32"
    }
}

fn bty(dt: DType) -> &'static str {
    match class(dt) {
        Class::Pred => "pred",
        Class::B32 => "b32",
        Class::B64 => "b64",
    }
}

fn backend_err(kernel: &str, msg: String) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::Backend,
        format!("kernel `{kernel}` cannot run on the PTX backend: {msg}"),
    )
}

/// The printer's state while it prints one kernel.
struct Printer<'a> {
    k: &'a ThreadKernel,
    out: String,
    temps: [u32; 4],
    labels: u32,
    /// Byte offset of each shared array in the dynamic shared block.
    shared_offsets: Vec<u32>,
    target: PtxTarget,
    /// The source span of the statements being printed (the last [`Stmt::Loc`]), and
    /// the line last written as a comment.
    loc: Span,
    loc_line: Option<u32>,
    /// Registers holding a warp index computed from the thread id, broadcast from
    /// lane 0 after their assignment so that `ptxas` sees them warp-uniform (see
    /// [`tilewise_core::thread_ir::uniformity::warp_index_registers`]).
    warp_indices: Vec<bool>,
    /// Descriptors of consecutive `wgmma` statements' operands: (array, base register,
    /// constant fields) to the `.b64` holding the descriptor at offset 0, so that later
    /// offsets from the same base are one 64-bit add (cleared by any other statement).
    descriptors: Vec<((u32, Reg, u64), String)>,
    /// Whether each register is written by exactly one statement of the kernel (so
    /// that a value derived at its definition stays its value wherever it is read).
    single_def: Vec<bool>,
    /// The register an `Assign` being printed defines.
    defining: Option<Reg>,
    /// f16 registers (held in f32) of one definition whose 16 bits a `.b16`
    /// temporary also holds since that definition: stores, packs and bitcasts read the
    /// temporary instead of rounding the f32 image again (a stored f16 result was
    /// converted three times; the f32 round trip is exact, so this changes no bit).
    halves: HashMap<String, String>,
}

/// Whether each register of `k` is written by exactly one statement.
fn single_definitions(k: &ThreadKernel) -> Vec<bool> {
    fn count(body: &[Stmt], n: &mut [u32]) {
        for s in body {
            for r in s.writes() {
                if let Some(c) = n.get_mut(r.0 as usize) {
                    *c += 1;
                }
            }
            for b in s.bodies() {
                count(b, n);
            }
        }
    }
    let mut n = vec![0u32; k.regs.len()];
    count(&k.body, &mut n);
    n.into_iter().map(|c| c == 1).collect()
}

/// Prints `k` as a PTX module for `target`.
pub fn print_ptx(k: &ThreadKernel, target: PtxTarget) -> Result<PtxKernel> {
    for ty in &k.regs {
        // Vectors live in .b32 words: one a lane for 32-bit values, two lanes packed a
        // word for 16-bit ones (tensor-core fragments, wide 16-bit accesses).
        if ty.lanes != 1 && words(*ty).is_none() {
            return Err(Diagnostic::internal(format!(
                "vector registers of {ty} are not printed for PTX yet"
            )));
        }
    }
    let (shared_offsets, shared_bytes, align) = shared_layout(k);
    let mut p = Printer {
        k,
        out: String::new(),
        temps: [0; 4],
        labels: 0,
        shared_offsets,
        target,
        loc: Span::NONE,
        loc_line: None,
        // Every lane of every warp exists only where programs are whole warps.
        warp_indices: if k.threads.is_multiple_of(32) {
            tilewise_core::thread_ir::uniformity::warp_index_registers(k)
        } else {
            Vec::new()
        },
        descriptors: Vec::new(),
        single_def: single_definitions(k),
        defining: None,
        halves: HashMap::new(),
    };
    let params = module::params(k);
    p.prologue(&params);
    p.stmts(&k.body)?;
    p.ins("ret;".into());
    let body = std::mem::take(&mut p.out);

    let entry = format!("tw_{}", sanitize(&k.name));
    let wgmma = uses_wgmma(&k.body);
    let mut s = p.header(&entry, &params, align, wgmma);
    p.declare_registers(&mut s, params.len());
    s.push_str(&body);
    s.push_str("}\n");
    Ok(PtxKernel {
        name: k.name.clone(),
        entry,
        source: s,
        threads: k.threads,
        shared_bytes,
        params,
        target,
        arch: if wgmma {
            format!("{}a", target.name())
        } else {
            target.name()
        },
        notes: k.notes.clone(),
        checked: tilewise_core::thread_ir::checks::CheckedKernel::of(k),
    })
}

impl Printer<'_> {
    fn ins(&mut self, s: String) {
        self.out.push_str("    ");
        self.out.push_str(&s);
        self.out.push('\n');
    }

    fn label(&mut self, l: &str) {
        let _ = writeln!(self.out, "{l}:");
    }

    fn new_label(&mut self, what: &str) -> String {
        self.labels += 1;
        format!("$L_{what}_{}", self.labels)
    }

    fn tmp(&mut self, c: Class) -> String {
        let (slot, prefix) = match c {
            Class::Pred => (0, "%tp"),
            Class::B32 => (1, "%t"),
            Class::B64 => (2, "%td"),
        };
        let n = self.temps[slot];
        self.temps[slot] += 1;
        format!("{prefix}{n}")
    }

    fn tmp16(&mut self) -> String {
        let n = self.temps[3];
        self.temps[3] += 1;
        format!("%th{n}")
    }

    /// Records that `h`, a `.b16` temporary, holds the f16 bits of `dst` (the printed
    /// register the `Assign` being printed defines), where `dst` has one definition.
    fn note_half(&mut self, dst: &str, h: &str) {
        if let Some(r) = self.defining {
            if self.single_def.get(r.0 as usize) == Some(&true) && self.reg(r) == dst {
                self.halves.insert(dst.to_string(), h.to_string());
            }
        }
    }

    /// The `.b16` temporary holding the f16 bits of register `v`, if one does.
    fn half_of(&self, v: &str) -> Option<String> {
        self.halves.get(v).cloned()
    }

    fn dt(&self, r: Reg) -> DType {
        self.k.reg_ty(r).dtype
    }

    fn reg(&self, r: Reg) -> String {
        if words(self.k.reg_ty(r)) == Some(1) {
            // A packed pair of 16-bit values.
            return format!("%v{}_0", r.0);
        }
        match class(self.dt(r)) {
            Class::Pred => format!("%p{}", r.0),
            Class::B32 => format!("%r{}", r.0),
            Class::B64 => format!("%rd{}", r.0),
        }
    }

    fn err(&self, msg: String) -> Diagnostic {
        backend_err(&self.k.name, msg)
    }

    /// The register declarations: one of each class per Thread IR register, the
    /// temporaries, the buffer bases and the shared base, and the words of each vector
    /// register.
    fn declare_registers(&self, s: &mut String, buffers: usize) {
        let k = self.k;
        let n = k.regs.len().max(1);
        let _ = writeln!(
            s,
            "    .reg .pred %p<{n}>;\n    .reg .b32 %r<{n}>;\n    .reg .b64 %rd<{n}>;"
        );
        let [tp, t, td, th] = self.temps.map(|c| c.max(1));
        let _ = writeln!(
            s,
            "    .reg .pred %tp<{tp}>;\n    .reg .b32 %t<{t}>;\n    .reg .b64 %td<{td}>;\n    .reg .b16 %th<{th}>;"
        );
        let _ = writeln!(
            s,
            "    .reg .b64 %rb<{}>;\n    .reg .b32 %smem;",
            buffers.max(1)
        );
        for (i, ty) in k.regs.iter().enumerate() {
            if let Some(w) = words(*ty) {
                let _ = writeln!(s, "    .reg .b32 %v{i}_<{w}>;");
            }
        }
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<()> {
        for s in body {
            self.stmt(s).map_err(|e| self.k.locate(e, self.loc))?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        if !matches!(s, Stmt::Wgmma { .. } | Stmt::Loc(_)) {
            self.descriptors.clear();
        }
        match s {
            Stmt::Loc(span) => {
                self.loc = *span;
                let line = self.k.line_of(*span);
                if line.is_some() && line != self.loc_line {
                    self.loc_line = line;
                    self.out
                        .push_str(&format!("    // line {}\n", line.unwrap_or(0)));
                }
            }
            Stmt::Assign { dst, expr } => {
                self.defining = Some(*dst);
                let assigned = self.assign(*dst, expr);
                self.defining = None;
                assigned?;
                if self.warp_indices.get(dst.0 as usize) == Some(&true)
                    && class(self.dt(*dst)) == Class::B32
                {
                    let d = self.reg(*dst);
                    self.ins(format!("shfl.sync.idx.b32 {d}, {d}, 0, 31, -1;"));
                }
            }
            Stmt::Store {
                buf,
                index,
                value,
                mask,
            } => self.store(*buf, *index, *value, *mask)?,
            Stmt::SharedStore { arr, index, value } => self.shared_store(*arr, *index, *value),
            Stmt::Atomic {
                dst,
                op,
                buf,
                index,
                value,
                mask,
            } => self.atomic(*dst, *op, *buf, *index, *value, *mask)?,
            Stmt::AtomicCas {
                dst,
                buf,
                index,
                cmp,
                value,
            } => self.atomic_cas(*dst, *buf, *index, *cmp, *value)?,
            Stmt::Barrier | Stmt::StorageBarrier => self.barrier(),
            Stmt::CoopZero { .. }
            | Stmt::CoopLoad { .. }
            | Stmt::CoopStore { .. }
            | Stmt::CoopMulAdd { .. }
            | Stmt::CoopCopy { .. } => {
                return Err(Diagnostic::internal(
                    "a cooperative-matrix statement reached the PTX printer (the PTX lowering \
                     uses mma.sync)",
                ))
            }
            Stmt::AsyncCopy {
                arr,
                shared_index,
                buf,
                index,
                lanes,
                mask,
            } => self.async_copy(*arr, *shared_index, *buf, *index, *lanes, *mask)?,
            Stmt::AsyncCommit => self.async_commit(),
            Stmt::MbarrierInit { arr, index, count } => self.mbarrier_init(*arr, *index, *count),
            Stmt::MbarrierArriveTx { arr, index, bytes } => {
                self.mbarrier_arrive_tx(*arr, *index, *bytes)
            }
            Stmt::MbarrierWait { arr, index, parity } => self.mbarrier_wait(*arr, *index, *parity),
            Stmt::TmaLoad {
                arr,
                shared_index,
                map,
                coords,
                bar_arr,
                bar_index,
            } => self.tma_load(*arr, *shared_index, *map, coords, (*bar_arr, *bar_index)),
            Stmt::AsyncWait { pending } => self.async_wait(*pending),
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            } => self.ldmatrix(dst, *arr, *index, *trans),
            Stmt::Mma { kind, d, a, b, c } => self.mma(*kind, d, a, b, c),
            Stmt::Wgmma {
                shape,
                acc,
                a,
                b,
                zero_acc,
            } => self.wgmma(shape, acc, a, b, *zero_acc)?,
            Stmt::WgmmaFence => self.wgmma_fence(),
            Stmt::WgmmaCommit => self.wgmma_commit(),
            Stmt::WgmmaWait { pending } => self.wgmma_wait(*pending),
            Stmt::FenceProxyAsync => self.fence_proxy_async(),
            Stmt::For {
                iv,
                lower,
                upper,
                step,
                body,
            } => self.for_loop(*iv, *lower, *upper, *step, body)?,
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => self.if_else(*cond, then_body, else_body)?,
            Stmt::While {
                cond_body,
                cond,
                body,
                ..
            } => self.while_loop(cond_body, *cond, body)?,
        }
        Ok(())
    }

    fn assign(&mut self, dst: Reg, e: &Expr) -> Result<()> {
        let dt = self.dt(dst);
        let d = self.reg(dst);
        let r = |p: &Printer, x: &Reg| p.reg(*x);
        match e {
            Expr::Const(c) => self.constant(dt, *c, &d),
            Expr::Special(sp) => self.special(*sp, dt, &d),
            Expr::Param(i) => self.param(*i, dt, &d),
            Expr::Address(i) => self.ins(format!("mov.b64 {d}, %rb{i};")),
            Expr::Copy(x) if words(self.k.reg_ty(dst)).is_some_and(|w| w > 1) => {
                for w in 0..words(self.k.reg_ty(dst)).unwrap_or(1) {
                    self.ins(format!("mov.b32 %v{}_{w}, %v{}_{w};", dst.0, x.0));
                }
            }
            Expr::Copy(x) | Expr::WarpUniform(x) => {
                let x = r(self, x);
                self.ins(format!("mov.{} {d}, {x};", bty(dt)));
            }
            Expr::Unary(op, x) => self.unary(*op, dt, &d, &r(self, x))?,
            Expr::Binary(op, a, b) => {
                let (a, b) = (r(self, a), r(self, b));
                self.binary(*op, dt, &d, &a, &b)?
            }
            Expr::Cmp(p, a, b) => {
                let odt = self.dt(*a);
                let (a, b) = (r(self, a), r(self, b));
                self.cmp(*p, odt, &d, &a, &b);
            }
            Expr::Select {
                cond,
                on_true,
                on_false,
            } => {
                let (c, t, f) = (r(self, cond), r(self, on_true), r(self, on_false));
                self.select(dt, &d, &c, &t, &f);
            }
            Expr::Fma(a, b, c) => {
                let (a, b, c) = (r(self, a), r(self, b), r(self, c));
                self.fma(dt, &d, &a, &b, &c);
            }
            Expr::Cast { value, bitcast } => {
                let from = self.dt(*value);
                let x = r(self, value);
                if *bitcast {
                    self.bitcast(from, dt, &d, &x)?;
                } else {
                    self.cast(from, dt, &d, &x);
                }
            }
            Expr::Load {
                buf,
                index,
                mask,
                other,
            } => self.load(dst, *buf, *index, *mask, *other)?,
            Expr::SharedLoad { arr, index } => self.shared_load(dst, *arr, *index),
            Expr::Extract { vector, lane } => self.extract(&d, *vector, *lane),
            Expr::Construct(parts) => self.construct(dst, parts)?,
            Expr::SubgroupReduce { .. } => {
                return Err(Diagnostic::internal(
                    "a subgroup reduction reached the PTX printer (the PTX lowering reduces \
                     with shuffles)",
                ))
            }
            Expr::ShuffleXor { value, mask } => {
                let x = r(self, value);
                self.shuffle_xor(dt, &d, &x, *mask);
            }
        }
        Ok(())
    }
}
