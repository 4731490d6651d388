//! The PTX printer: Thread IR in, one PTX module with one `.entry` out.
//!
//! A thin printer: the shared lowering took every semantic decision; this file spells
//! each Thread IR statement in PTX so that it means exactly what the tile IR says (see
//! `tilewise_core::ir::ops`). No LLVM and no NVRTC: the text goes to the CUDA driver's
//! JIT (or to `ptxas` in CI) as is.
//!
//! - **Registers.** Thread IR register `rN` is `%pN` (`.pred`, for `i1`), `%rN`
//!   (`.b32`, for every 8-, 16- and 32-bit type) or `%rdN` (`.b64`). Untyped bit
//!   registers serve integer and float instructions alike. 8- and 16-bit integers live
//!   sign- or zero-extended in 32-bit registers and are wrapped after each operation;
//!   f16 and bf16 live in f32 registers, rounded to their format after each operation
//!   (the interpreter's semantics: compute exactly, round once per op). Temporaries are
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
//!   contracted); `exp`, `log`, `exp2`, `log2`, `rsqrt`, `sin`, `cos` use the `.approx`
//!   instructions as Triton does (`sin`/`cos` after a reduction to one period).
//! - **Memory.** A masked load moves `other` in first and predicates the load
//!   (`@%p ld.global`), a masked store is predicated: masked-off lanes never touch
//!   memory. Atomics are `acq_rel` at GPU scope, Triton's default; float `min`/`max`
//!   atomics are compare-and-swap loops.

use std::fmt::Write;
use tilewise_core::ir::{AtomicOp, BinaryOp, CmpPred, Const, DType, UnaryOp};
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::{Expr, MmaKind, ParamKind, Reg, RegTy, Special, Stmt, ThreadKernel};
use tilewise_core::{Diagnostic, ErrorKind, Result};

/// The GPU architecture a module is printed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct PtxTarget {
    /// Compute capability times ten: 80 for `sm_80`, 90 for `sm_90`.
    pub sm: u32,
}

impl PtxTarget {
    /// The baseline: Ampere (`sm_80`), where `bf16` conversions and `cp.async` start.
    pub const BASELINE: PtxTarget = PtxTarget { sm: 80 };

    /// The lowest PTX ISA version that has every instruction the printer emits for
    /// this target.
    pub fn isa_version(self) -> &'static str {
        if self.sm >= 90 {
            "7.8"
        } else {
            "7.0"
        }
    }

    /// The `.target` name.
    pub fn name(self) -> String {
        format!("sm_{}", self.sm)
    }
}

/// How one kernel parameter travels to the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PtxParam {
    /// A global address (`.u64`): the first element of the bound view.
    Buffer { dtype: DType },
    /// A 32-bit word ([`encode_scalar`]).
    Word { dtype: DType },
    /// A 64-bit word ([`encode_scalar`]).
    DoubleWord { dtype: DType },
}

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

/// The bits of a scalar argument as the printed kernel reads them: integers sign- or
/// zero-extended to the word, floats of 32 bits or fewer as f32 (the kernel rounds
/// f16 and bf16 itself), 64-bit types as 64-bit words.
pub fn encode_scalar(dtype: DType, value: ScalarValue) -> u64 {
    let as_f64 = match value {
        ScalarValue::Bool(b) => b as i64 as f64,
        ScalarValue::Int(_, i) => i as f64,
        ScalarValue::Float(_, f) => f,
    };
    let as_i64 = match value {
        ScalarValue::Bool(b) => b as i64,
        ScalarValue::Int(_, i) => i,
        ScalarValue::Float(_, f) => f as i64,
    };
    match dtype {
        DType::F64 => as_f64.to_bits(),
        DType::F32 | DType::F16 | DType::BF16 => (as_f64 as f32).to_bits() as u64,
        DType::I1 => (as_i64 != 0) as u64,
        DType::I8 => as_i64 as i8 as i32 as u32 as u64,
        DType::I16 => as_i64 as i16 as i32 as u32 as u64,
        DType::I32 => as_i64 as i32 as u32 as u64,
        DType::U8 => as_i64 as u8 as u64,
        DType::U16 => as_i64 as u16 as u64,
        DType::U32 => as_i64 as u32 as u64,
        DType::I64 | DType::U64 => as_i64 as u64,
        // The shared lowering turns fp8 into its codes (u8); a code if one remains.
        DType::F8E4M3 | DType::F8E5M2 => {
            tilewise_core::ir::fp8::Format::of(dtype).map_or(0, |f| f.encode(as_f64)) as u64
        }
    }
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

fn f32_lit(x: f32) -> String {
    format!("0f{:08X}", x.to_bits())
}

fn f64_lit(x: f64) -> String {
    format!("0d{:016X}", x.to_bits())
}

fn backend_err(kernel: &str, msg: String) -> Diagnostic {
    Diagnostic::new(
        ErrorKind::Backend,
        format!("kernel `{kernel}` cannot run on the PTX backend: {msg}"),
    )
}

struct Printer<'a> {
    k: &'a ThreadKernel,
    out: String,
    temps: [u32; 4],
    labels: u32,
    /// Byte offset of each shared array in the dynamic shared block.
    shared_offsets: Vec<u32>,
    target: PtxTarget,
}

/// Whether `body` (or a nested body) has a `wgmma` statement: the module then needs
/// the architecture-specific target `sm_90a` and PTX ISA 8.0.
fn uses_wgmma(body: &[Stmt]) -> bool {
    body.iter()
        .any(|s| matches!(s, Stmt::Wgmma { .. }) || s.bodies().iter().any(|b| uses_wgmma(b)))
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
    let mut shared_offsets = vec![];
    let mut shared_bytes = 0u32;
    let mut align = 16u32;
    for a in &k.shared {
        let a_align = a.align.max(16);
        align = align.max(a_align);
        shared_bytes = shared_bytes.div_ceil(a_align) * a_align;
        shared_offsets.push(shared_bytes);
        let bytes = a.len * a.dtype.size_bytes() as u32;
        shared_bytes += bytes.div_ceil(16) * 16;
    }
    let mut p = Printer {
        k,
        out: String::new(),
        temps: [0; 4],
        labels: 0,
        shared_offsets,
        target,
    };
    let params = k
        .params
        .iter()
        .map(|prm| match prm.kind {
            ParamKind::Buffer { dtype, .. } => PtxParam::Buffer { dtype },
            ParamKind::Scalar { dtype } if class(dtype) == Class::B64 => {
                PtxParam::DoubleWord { dtype }
            }
            ParamKind::Scalar { dtype } => PtxParam::Word { dtype },
        })
        .collect::<Vec<_>>();
    // Buffer bases, converted to global addresses once.
    for (i, prm) in params.iter().enumerate() {
        if let PtxParam::Buffer { .. } = prm {
            p.ins(format!("ld.param.u64 %rb{i}, [tw_p{i}];"));
            p.ins(format!("cvta.to.global.u64 %rb{i}, %rb{i};"));
        }
    }
    if !k.shared.is_empty() {
        p.ins("mov.u32 %smem, tw_smem;".into());
    }
    p.stmts(&k.body)?;
    p.ins("ret;".into());
    let body = std::mem::take(&mut p.out);

    let entry = format!("tw_{}", sanitize(&k.name));
    let wgmma = uses_wgmma(&k.body);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// tilewise: kernel `{}`, {} threads per program\n.version {}\n.target {}\n.address_size 64\n",
        k.name,
        k.threads,
        if wgmma { "8.0" } else { target.isa_version() },
        if wgmma {
            format!("{}a", target.name())
        } else {
            target.name()
        }
    );
    if !k.shared.is_empty() {
        let _ = writeln!(s, ".extern .shared .align {align} .b8 tw_smem[];\n");
    }
    let _ = write!(s, ".visible .entry {entry}(");
    for (i, prm) in params.iter().enumerate() {
        let ty = match prm {
            PtxParam::Buffer { .. } => ".u64",
            PtxParam::Word { .. } => ".b32",
            PtxParam::DoubleWord { .. } => ".b64",
        };
        let sep = if i + 1 == params.len() { "" } else { "," };
        let _ = write!(s, "\n    .param {ty} tw_p{i}{sep}");
    }
    let _ = writeln!(s, "\n)\n.maxntid {}, 1, 1\n{{", k.threads);
    let n = k.regs.len().max(1);
    let _ = writeln!(
        s,
        "    .reg .pred %p<{n}>;\n    .reg .b32 %r<{n}>;\n    .reg .b64 %rd<{n}>;"
    );
    let [tp, t, td, th] = p.temps.map(|c| c.max(1));
    let _ = writeln!(
        s,
        "    .reg .pred %tp<{tp}>;\n    .reg .b32 %t<{t}>;\n    .reg .b64 %td<{td}>;\n    .reg .b16 %th<{th}>;"
    );
    let _ = writeln!(
        s,
        "    .reg .b64 %rb<{}>;\n    .reg .b32 %smem;",
        params.len().max(1)
    );
    for (i, ty) in k.regs.iter().enumerate() {
        if let Some(w) = words(*ty) {
            let _ = writeln!(s, "    .reg .b32 %v{i}_<{w}>;");
        }
    }
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

/// The `.b32` words (`%vN_0 ..`) of a vector register: one a lane for 32-bit values,
/// one per two lanes for 16-bit values; `None` for scalars and other vectors.
fn words(ty: RegTy) -> Option<u32> {
    if ty.lanes < 2 || class(ty.dtype) != Class::B32 {
        return None;
    }
    match ty.dtype.size_bytes() {
        4 => Some(ty.lanes as u32),
        2 if ty.lanes.is_multiple_of(2) => Some(ty.lanes as u32 / 2),
        _ => None,
    }
}

fn is_wide(ty: RegTy) -> bool {
    words(ty).is_some()
}

/// The PTX spelling of a memory access of `n` words: `.b32` or `.vN.b32`.
fn vec_suffix(n: u32) -> String {
    if n == 1 {
        "b32".into()
    } else {
        format!("v{n}.b32")
    }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
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

    fn dt(&self, r: Reg) -> DType {
        self.k.reg_ty(r).dtype
    }

    /// The words of a vector register, comma-separated, braced when more than one.
    fn lanes(&self, r: Reg) -> String {
        let n = words(self.k.reg_ty(r)).unwrap_or(1);
        let w: Vec<String> = (0..n).map(|l| format!("%v{}_{l}", r.0)).collect();
        if n == 1 {
            w[0].clone()
        } else {
            format!("{{{}}}", w.join(", "))
        }
    }

    /// The 16 raw bits of `v`, a register of the 16-bit type `dt`, in a fresh `.b16`.
    fn bits16(&mut self, dt: DType, v: &str) -> String {
        let h = self.tmp16();
        match dt {
            DType::F16 => self.ins(format!("cvt.rn.f16.f32 {h}, {v};")),
            DType::BF16 => {
                let t = self.tmp(Class::B32);
                self.ins(format!("shr.u32 {t}, {v}, 16;"));
                self.ins(format!("cvt.u16.u32 {h}, {t};"));
            }
            _ => self.ins(format!("cvt.u16.u32 {h}, {v};")),
        }
        h
    }

    /// Writes lanes `parts` (registers of `dt`) into the words of vector `vector`.
    fn fill_words(&mut self, vector: Reg, dt: DType, parts: &[String]) {
        if dt.size_bytes() == 4 {
            for (l, p) in parts.iter().enumerate() {
                self.ins(format!("mov.b32 %v{}_{l}, {p};", vector.0));
            }
            return;
        }
        for (w, pair) in parts.chunks(2).enumerate() {
            let lo = self.bits16(dt, &pair[0]);
            let hi = self.bits16(dt, &pair[1]);
            self.ins(format!("mov.b32 %v{}_{w}, {{{lo}, {hi}}};", vector.0));
        }
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

    /// Wraps or rounds `src` (a freshly computed value of `dt` in its register class)
    /// into `dst`; a plain move when `dt` needs nothing.
    fn fix(&mut self, dt: DType, dst: &str, src: &str) {
        match dt {
            DType::I8 => self.ins(format!("cvt.s32.s8 {dst}, {src};")),
            DType::I16 => self.ins(format!("cvt.s32.s16 {dst}, {src};")),
            DType::U8 => self.ins(format!("and.b32 {dst}, {src}, 255;")),
            DType::U16 => self.ins(format!("and.b32 {dst}, {src}, 65535;")),
            DType::F16 => {
                let h = self.tmp16();
                self.ins(format!("cvt.rn.f16.f32 {h}, {src};"));
                self.ins(format!("cvt.f32.f16 {dst}, {h};"));
            }
            DType::BF16 => {
                let h = self.tmp16();
                self.ins(format!("cvt.rn.bf16.f32 {h}, {src};"));
                self.ins(format!("cvt.u32.u16 {dst}, {h};"));
                self.ins(format!("shl.b32 {dst}, {dst}, 16;"));
            }
            _ => {
                if dst != src {
                    self.ins(format!("mov.{} {dst}, {src};", bty(dt)));
                }
            }
        }
    }

    fn needs_fix(dt: DType) -> bool {
        matches!(
            dt,
            DType::I8 | DType::I16 | DType::U8 | DType::U16 | DType::F16 | DType::BF16
        )
    }

    /// Where a one-instruction result of `dt` goes before [`Self::fix`]: a temporary
    /// when a fix follows, else `dst` itself.
    fn raw_dst(&mut self, dt: DType, dst: &str) -> String {
        if Self::needs_fix(dt) {
            self.tmp(class(dt))
        } else {
            dst.to_string()
        }
    }

    fn constant(&mut self, dt: DType, c: Const, dst: &str) {
        let as_f = match c {
            Const::Float(x) => x,
            Const::Int(i) => i as f64,
            Const::Bool(b) => b as i64 as f64,
        };
        let as_i = match c {
            Const::Int(i) => i,
            Const::Bool(b) => b as i64,
            Const::Float(x) => x as i64,
        };
        let lit = match dt {
            DType::I1 => {
                let t = self.tmp(Class::B32);
                self.ins(format!(
                    "mov.b32 {t}, {};",
                    (as_i != 0 || as_f != 0.0) as u32
                ));
                self.ins(format!("setp.ne.u32 {dst}, {t}, 0;"));
                return;
            }
            DType::F64 => f64_lit(as_f),
            DType::F32 => f32_lit(as_f as f32),
            DType::F16 => f32_lit(tilewise_core::ir::f16_from_f64(as_f).to_f32()),
            DType::BF16 => f32_lit(tilewise_core::ir::bf16_from_f64(as_f).to_f32()),
            DType::I8 => (as_i as i8).to_string(),
            DType::I16 => (as_i as i16).to_string(),
            DType::I32 => (as_i as i32).to_string(),
            DType::U8 => (as_i as u8).to_string(),
            DType::F8E4M3 | DType::F8E5M2 => tilewise_core::ir::fp8::Format::of(dt)
                .map_or(0, |f| f.encode(as_f))
                .to_string(),
            DType::U16 => (as_i as u16).to_string(),
            DType::U32 => (as_i as u32).to_string(),
            DType::I64 => as_i.to_string(),
            DType::U64 => (as_i as u64).to_string(),
        };
        self.ins(format!("mov.{} {dst}, {lit};", bty(dt)));
    }

    /// The global address of element `index` of buffer `buf`, in a fresh `.b64`.
    fn global_addr(&mut self, buf: u32, index: Reg) -> Result<String> {
        let ParamKind::Buffer { dtype, .. } = self.k.params[buf as usize].kind else {
            return Err(Diagnostic::internal("memory access through a scalar"));
        };
        let size = dtype.size_bytes();
        let a = self.tmp(Class::B64);
        let idt = self.dt(index);
        let ir = self.reg(index);
        match class(idt) {
            Class::B64 => self.ins(format!("mad.lo.s64 {a}, {ir}, {size}, %rb{buf};")),
            Class::B32 => {
                let w = if is_signed(idt) { "s32" } else { "u32" };
                self.ins(format!("mul.wide.{w} {a}, {ir}, {size};"));
                self.ins(format!("add.s64 {a}, {a}, %rb{buf};"));
            }
            Class::Pred => return Err(Diagnostic::internal("a boolean memory index")),
        }
        Ok(a)
    }

    /// The 64-bit matrix descriptor of a `wgmma` operand, in a fresh `.b64`: the
    /// start address `(addr & 0x3FFFF) >> 4` in bits 0-13 over the constant fields.
    fn descriptor(&mut self, m: &tilewise_core::thread_ir::SmemMatrix) -> String {
        let addr = self.shared_addr(m.arr, m.base);
        let size = self.k.shared[m.arr as usize].dtype.size_bytes() as u32;
        if m.offset != 0 {
            self.ins(format!("add.s32 {addr}, {addr}, {};", m.offset * size));
        }
        self.ins(format!("bfe.u32 {addr}, {addr}, 4, 14;"));
        let d = self.tmp(Class::B64);
        self.ins(format!("cvt.u64.u32 {d}, {addr};"));
        self.ins(format!("or.b64 {d}, {d}, {};", m.descriptor_fields()));
        d
    }

    /// The shared address of element `index` of shared array `arr`, in a fresh `.b32`.
    fn shared_addr(&mut self, arr: u32, index: Reg) -> String {
        let a = &self.k.shared[arr as usize];
        let size = a.dtype.size_bytes();
        let off = self.shared_offsets[arr as usize];
        let t = self.tmp(Class::B32);
        let ir = self.reg(index);
        self.ins(format!("mad.lo.s32 {t}, {ir}, {size}, %smem;"));
        if off != 0 {
            self.ins(format!("add.s32 {t}, {t}, {off};"));
        }
        t
    }

    /// Loads a `dt` element at `addr` in `space` ("global" or "shared") into `out`
    /// (a register of `dt`'s class); every instruction carries `guard`.
    fn load_elem(&mut self, space: &str, dt: DType, addr: &str, out: &str, guard: &str) {
        match dt {
            DType::I1 => {
                let t = self.tmp(Class::B32);
                self.ins(format!("{guard}ld.{space}.u8 {t}, [{addr}];"));
                self.ins(format!("{guard}setp.ne.u32 {out}, {t}, 0;"));
            }
            DType::I8 => self.ins(format!("{guard}ld.{space}.s8 {out}, [{addr}];")),
            DType::U8 => self.ins(format!("{guard}ld.{space}.u8 {out}, [{addr}];")),
            DType::I16 => self.ins(format!("{guard}ld.{space}.s16 {out}, [{addr}];")),
            DType::U16 => self.ins(format!("{guard}ld.{space}.u16 {out}, [{addr}];")),
            DType::F16 => {
                let h = self.tmp16();
                self.ins(format!("{guard}ld.{space}.b16 {h}, [{addr}];"));
                self.ins(format!("{guard}cvt.f32.f16 {out}, {h};"));
            }
            DType::BF16 => {
                self.ins(format!("{guard}ld.{space}.u16 {out}, [{addr}];"));
                self.ins(format!("{guard}shl.b32 {out}, {out}, 16;"));
            }
            _ => self.ins(format!("{guard}ld.{space}.{} {out}, [{addr}];", bty(dt))),
        }
    }

    /// Stores `v` (a register of `dt`) at `addr` in `space`, under `guard`.
    fn store_elem(&mut self, space: &str, dt: DType, addr: &str, v: &str, guard: &str) {
        match dt {
            DType::I1 => {
                let t = self.tmp(Class::B32);
                self.ins(format!("selp.u32 {t}, 1, 0, {v};"));
                self.ins(format!("{guard}st.{space}.u8 [{addr}], {t};"));
            }
            DType::I8 | DType::U8 => self.ins(format!("{guard}st.{space}.u8 [{addr}], {v};")),
            DType::I16 | DType::U16 => self.ins(format!("{guard}st.{space}.u16 [{addr}], {v};")),
            DType::F16 => {
                let h = self.tmp16();
                self.ins(format!("cvt.rn.f16.f32 {h}, {v};"));
                self.ins(format!("{guard}st.{space}.b16 [{addr}], {h};"));
            }
            DType::BF16 => {
                // The register holds a bf16 value exactly: its bits are the high half.
                let t = self.tmp(Class::B32);
                self.ins(format!("shr.u32 {t}, {v}, 16;"));
                self.ins(format!("{guard}st.{space}.u16 [{addr}], {t};"));
            }
            _ => self.ins(format!("{guard}st.{space}.{} [{addr}], {v};", bty(dt))),
        }
    }

    fn stmts(&mut self, body: &[Stmt]) -> Result<()> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<()> {
        match s {
            Stmt::Assign { dst, expr } => self.assign(*dst, expr)?,
            Stmt::Store {
                buf,
                index,
                value,
                mask,
            } => {
                let addr = self.global_addr(*buf, *index)?;
                let guard = mask
                    .map(|m| format!("@{} ", self.reg(m)))
                    .unwrap_or_default();
                let ty = self.k.reg_ty(*value);
                if let Some(n) = words(ty) {
                    let lanes = self.lanes(*value);
                    self.ins(format!(
                        "{guard}st.global.{} [{addr}], {lanes};",
                        vec_suffix(n)
                    ));
                } else {
                    let v = self.reg(*value);
                    self.store_elem("global", self.dt(*value), &addr, &v, &guard);
                }
            }
            Stmt::SharedStore { arr, index, value } => {
                let addr = self.shared_addr(*arr, *index);
                if let Some(n) = words(self.k.reg_ty(*value)) {
                    let lanes = self.lanes(*value);
                    self.ins(format!("st.shared.{} [{addr}], {lanes};", vec_suffix(n)));
                } else {
                    let v = self.reg(*value);
                    let dt = self.k.shared[*arr as usize].dtype;
                    self.store_elem("shared", dt, &addr, &v, "");
                }
            }
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
            } => {
                let dt = self.dt(*value);
                if class(dt) == Class::Pred || Self::needs_fix(dt) {
                    return Err(self.err(format!("atomic_cas on {dt} elements")));
                }
                let addr = self.global_addr(*buf, *index)?;
                let (d, c, v) = (self.reg(*dst), self.reg(*cmp), self.reg(*value));
                self.ins(format!(
                    "atom.acq_rel.gpu.global.cas.{} {d}, [{addr}], {c}, {v};",
                    bty(dt)
                ));
            }
            // bar.sync orders the CTA's shared and global accesses alike.
            Stmt::Barrier | Stmt::StorageBarrier => self.ins("bar.sync 0;".into()),
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
            } => {
                let bytes = *lanes as usize * self.k.shared[*arr as usize].dtype.size_bytes();
                if ![4, 8, 16].contains(&bytes) {
                    return Err(Diagnostic::internal(format!(
                        "an asynchronous copy of {bytes} bytes (cp.async moves 4, 8 or 16)"
                    )));
                }
                let dst = self.shared_addr(*arr, *shared_index);
                let src = self.global_addr(*buf, *index)?;
                // 16-byte copies bypass L1 (`.cg`); smaller ones may only go through it.
                let level = if bytes == 16 { "cg" } else { "ca" };
                // Masked off: a source size of 0 reads nothing and fills zeros.
                let size = match mask {
                    Some(m) => {
                        let t = self.tmp(Class::B32);
                        let p = self.reg(*m);
                        self.ins(format!("selp.u32 {t}, {bytes}, 0, {p};"));
                        format!(", {t}")
                    }
                    None => String::new(),
                };
                self.ins(format!(
                    "cp.async.{level}.shared.global [{dst}], [{src}], {bytes}{size};"
                ));
            }
            Stmt::AsyncCommit => self.ins("cp.async.commit_group;".into()),
            Stmt::AsyncWait { pending } => self.ins(format!("cp.async.wait_group {pending};")),
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            } => {
                let addr = self.shared_addr(*arr, *index);
                let d: Vec<String> = dst.iter().map(|r| self.reg(*r)).collect();
                let line = format!(
                    "ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16 {{{}}}, [{addr}];",
                    dst.len(),
                    if *trans { ".trans" } else { "" },
                    d.join(", ")
                );
                self.ins(line);
            }
            Stmt::Mma { kind, d, a, b, c } => {
                let list = |p: &Self, v: &[Reg]| {
                    v.iter().map(|r| p.reg(*r)).collect::<Vec<_>>().join(", ")
                };
                let shape = match kind {
                    MmaKind::F16M16N8K16 => "m16n8k16.row.col.f32.f16.f16.f32",
                    MmaKind::Bf16M16N8K16 => "m16n8k16.row.col.f32.bf16.bf16.f32",
                    MmaKind::Tf32M16N8K8 => "m16n8k8.row.col.f32.tf32.tf32.f32",
                };
                let line = format!(
                    "mma.sync.aligned.{shape} {{{}}}, {{{}}}, {{{}}}, {{{}}};",
                    list(self, d),
                    list(self, a),
                    list(self, b),
                    list(self, c)
                );
                self.ins(line);
            }
            Stmt::Wgmma { shape, acc, a, b } => {
                if self.target.sm != 90 {
                    return Err(Diagnostic::internal(format!(
                        "wgmma printed for {} (sm_90a only)",
                        self.target.name()
                    )));
                }
                let da = self.descriptor(a);
                let db = self.descriptor(b);
                let d: Vec<String> = acc.iter().map(|r| self.reg(*r)).collect();
                let ty = shape.input_name();
                // scale-d 1 (accumulate), scale-a and scale-b 1, then (16-bit inputs
                // only) trans-a and trans-b: 1 where the operand is MN-major.
                let trans = if shape.input == DType::F32 {
                    String::new()
                } else {
                    format!(", {}, {}", a.mn_major as u8, b.mn_major as u8)
                };
                self.ins(format!(
                    "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{ty}.{ty} {{{}}}, {da}, {db}, 1, 1, 1{trans};",
                    shape.n,
                    shape.k(),
                    d.join(", ")
                ));
            }
            Stmt::WgmmaFence => self.ins("wgmma.fence.sync.aligned;".into()),
            Stmt::WgmmaCommit => self.ins("wgmma.commit_group.sync.aligned;".into()),
            Stmt::WgmmaWait { pending } => {
                self.ins(format!("wgmma.wait_group.sync.aligned {pending};"))
            }
            Stmt::FenceProxyAsync => self.ins("fence.proxy.async.shared::cta;".into()),
            Stmt::For {
                iv,
                lower,
                upper,
                step,
                body,
            } => {
                let dt = self.dt(*iv);
                let (iv, lo, hi, st) = (
                    self.reg(*iv),
                    self.reg(*lower),
                    self.reg(*upper),
                    self.reg(*step),
                );
                let (head, end) = (self.new_label("for"), self.new_label("endfor"));
                self.ins(format!("mov.{} {iv}, {lo};", bty(dt)));
                self.label(&head);
                let t = ity(dt);
                let (up, down, a, b) = (
                    self.tmp(Class::Pred),
                    self.tmp(Class::Pred),
                    self.tmp(Class::Pred),
                    self.tmp(Class::Pred),
                );
                // (step > 0 && iv < upper) || (step < 0 && iv > upper)
                self.ins(format!("setp.gt.{t} {up}, {st}, 0;"));
                self.ins(format!("setp.lt.{t} {a}, {iv}, {hi};"));
                self.ins(format!("and.pred {up}, {up}, {a};"));
                self.ins(format!("setp.lt.{t} {down}, {st}, 0;"));
                self.ins(format!("setp.gt.{t} {b}, {iv}, {hi};"));
                self.ins(format!("and.pred {down}, {down}, {b};"));
                self.ins(format!("or.pred {up}, {up}, {down};"));
                self.ins(format!("@!{up} bra {end};"));
                self.stmts(body)?;
                self.ins(format!("add.{t} {iv}, {iv}, {st};"));
                self.ins(format!("bra {head};"));
                self.label(&end);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let c = self.reg(*cond);
                let (els, end) = (self.new_label("else"), self.new_label("endif"));
                self.ins(format!("@!{c} bra {els};"));
                self.stmts(then_body)?;
                if !else_body.is_empty() {
                    self.ins(format!("bra {end};"));
                }
                self.label(&els);
                if !else_body.is_empty() {
                    self.stmts(else_body)?;
                    self.label(&end);
                }
            }
            Stmt::While {
                cond_body,
                cond,
                body,
                ..
            } => {
                let (head, end) = (self.new_label("while"), self.new_label("endwhile"));
                self.label(&head);
                self.stmts(cond_body)?;
                let c = self.reg(*cond);
                self.ins(format!("@!{c} bra {end};"));
                self.stmts(body)?;
                self.ins(format!("bra {head};"));
                self.label(&end);
            }
        }
        Ok(())
    }

    fn atomic(
        &mut self,
        dst: Reg,
        op: AtomicOp,
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    ) -> Result<()> {
        let dt = self.dt(value);
        if class(dt) == Class::Pred || Self::needs_fix(dt) {
            return Err(self.err(format!("atomic {} on {dt} elements", op.name())));
        }
        let addr = self.global_addr(buf, index)?;
        let (d, v) = (self.reg(dst), self.reg(value));
        let b = bty(dt);
        // Masked-off lanes read 0.
        self.ins(format!("mov.{b} {d}, 0;"));
        let skip = self.new_label("noatom");
        if let Some(m) = mask {
            let m = self.reg(m);
            self.ins(format!("@!{m} bra {skip};"));
        }
        let sem = "atom.acq_rel.gpu.global";
        let float = dt.is_float();
        match op {
            AtomicOp::Min | AtomicOp::Max if float => {
                // minnum/maxnum through compare-and-swap on the bits.
                let f = fty(dt);
                let c = class(dt);
                let (old, new, prev) = (self.tmp(c), self.tmp(c), self.tmp(c));
                let again = self.tmp(Class::Pred);
                let lp = self.new_label("cas");
                let mm = if op == AtomicOp::Min { "min" } else { "max" };
                self.ins(format!("ld.relaxed.gpu.global.{b} {old}, [{addr}];"));
                self.label(&lp);
                self.ins(format!("{mm}.{f} {new}, {old}, {v};"));
                self.ins(format!("{sem}.cas.{b} {prev}, [{addr}], {old}, {new};"));
                self.ins(format!("setp.ne.{b} {again}, {prev}, {old};"));
                self.ins(format!("mov.{b} {old}, {prev};"));
                self.ins(format!("@{again} bra {lp};"));
                self.ins(format!("mov.{b} {d}, {prev};"));
            }
            _ => {
                let ty = match op {
                    AtomicOp::Add if float => fty(dt),
                    AtomicOp::Add => {
                        if class(dt) == Class::B64 {
                            "u64"
                        } else {
                            "u32"
                        }
                    }
                    AtomicOp::Min | AtomicOp::Max => ity(dt),
                    _ => b,
                };
                let name = match op {
                    AtomicOp::Add => "add",
                    AtomicOp::Min => "min",
                    AtomicOp::Max => "max",
                    AtomicOp::And => "and",
                    AtomicOp::Or => "or",
                    AtomicOp::Xor => "xor",
                    AtomicOp::Xchg => "exch",
                };
                if float && matches!(op, AtomicOp::And | AtomicOp::Or | AtomicOp::Xor) {
                    return Err(self.err(format!("atomic {} on {dt}", op.name())));
                }
                self.ins(format!("{sem}.{name}.{ty} {d}, [{addr}], {v};"));
            }
        }
        self.label(&skip);
        Ok(())
    }

    fn assign(&mut self, dst: Reg, e: &Expr) -> Result<()> {
        let dt = self.dt(dst);
        let d = self.reg(dst);
        let r = |p: &Printer, x: &Reg| p.reg(*x);
        match e {
            Expr::Const(c) => self.constant(dt, *c, &d),
            Expr::Special(sp) => {
                let src = match sp {
                    Special::ThreadId => "%tid.x".to_string(),
                    Special::ProgramId(a) => format!("%ctaid.{}", axis(*a)),
                    Special::NumPrograms(a) => format!("%nctaid.{}", axis(*a)),
                    Special::SubgroupInvocationId => {
                        let t = self.tmp(Class::B32);
                        self.ins(format!("mov.u32 {t}, %laneid;"));
                        t
                    }
                    // A CTA's warps are its subgroups, in order.
                    Special::SubgroupId => {
                        let t = self.tmp(Class::B32);
                        self.ins(format!("mov.u32 {t}, %tid.x;"));
                        self.ins(format!("shr.u32 {t}, {t}, 5;"));
                        t
                    }
                };
                if class(dt) == Class::B64 {
                    let t = self.tmp(Class::B32);
                    self.ins(format!("mov.u32 {t}, {src};"));
                    self.ins(format!("cvt.u64.u32 {d}, {t};"));
                } else {
                    self.ins(format!("mov.u32 {d}, {src};"));
                }
            }
            Expr::Param(i) => match class(dt) {
                Class::Pred => {
                    let t = self.tmp(Class::B32);
                    self.ins(format!("ld.param.b32 {t}, [tw_p{i}];"));
                    self.ins(format!("setp.ne.u32 {d}, {t}, 0;"));
                }
                Class::B64 => self.ins(format!("ld.param.b64 {d}, [tw_p{i}];")),
                Class::B32 => {
                    let t = self.raw_dst(dt, &d);
                    self.ins(format!("ld.param.b32 {t}, [tw_p{i}];"));
                    self.fix(dt, &d, &t);
                }
            },
            Expr::Copy(x) if words(self.k.reg_ty(dst)).is_some_and(|w| w > 1) => {
                for w in 0..words(self.k.reg_ty(dst)).unwrap_or(1) {
                    self.ins(format!("mov.b32 %v{}_{w}, %v{}_{w};", dst.0, x.0));
                }
            }
            Expr::Copy(x) => {
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
                if class(dt) == Class::Pred {
                    let (x, y) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
                    self.ins(format!("and.pred {x}, {c}, {t};"));
                    self.ins(format!("not.pred {y}, {c};"));
                    self.ins(format!("and.pred {y}, {y}, {f};"));
                    self.ins(format!("or.pred {d}, {x}, {y};"));
                } else {
                    self.ins(format!("selp.{} {d}, {t}, {f}, {c};", bty(dt)));
                }
            }
            Expr::Fma(a, b, c) => {
                let (a, b, c) = (r(self, a), r(self, b), r(self, c));
                let t = self.raw_dst(dt, &d);
                if dt.is_float() {
                    self.ins(format!("fma.rn.{} {t}, {a}, {b}, {c};", fty(dt)));
                } else {
                    self.ins(format!("mad.lo.{} {t}, {a}, {b}, {c};", ity(dt)));
                }
                self.fix(dt, &d, &t);
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
            } if is_wide(self.k.reg_ty(dst)) => {
                let addr = self.global_addr(*buf, *index)?;
                let ty = self.k.reg_ty(dst);
                let n = words(ty).unwrap_or(1);
                let guard = match mask {
                    Some(m) => {
                        let o = match other {
                            Some(o) => r(self, o),
                            None => {
                                let z = self.tmp(Class::B32);
                                self.constant(dt, Const::Int(0), &z);
                                z
                            }
                        };
                        let parts = vec![o; ty.lanes as usize];
                        self.fill_words(dst, dt, &parts);
                        format!("@{} ", r(self, m))
                    }
                    None => String::new(),
                };
                let lanes = self.lanes(dst);
                self.ins(format!(
                    "{guard}ld.global.{} {lanes}, [{addr}];",
                    vec_suffix(n)
                ));
            }
            Expr::Extract { vector, lane } => {
                let vdt = self.dt(*vector);
                if vdt.size_bytes() == 4 {
                    self.ins(format!("mov.b32 {d}, %v{}_{lane};", vector.0));
                } else {
                    let (lo, hi) = (self.tmp16(), self.tmp16());
                    self.ins(format!(
                        "mov.b32 {{{lo}, {hi}}}, %v{}_{};",
                        vector.0,
                        lane / 2
                    ));
                    let h = if lane % 2 == 0 { lo } else { hi };
                    match vdt {
                        DType::F16 => self.ins(format!("cvt.f32.f16 {d}, {h};")),
                        DType::BF16 => {
                            self.ins(format!("cvt.u32.u16 {d}, {h};"));
                            self.ins(format!("shl.b32 {d}, {d}, 16;"));
                        }
                        DType::I16 => self.ins(format!("cvt.s32.s16 {d}, {h};")),
                        _ => self.ins(format!("cvt.u32.u16 {d}, {h};")),
                    }
                }
            }
            Expr::Construct(parts) if is_wide(self.k.reg_ty(dst)) => {
                let parts: Vec<String> = parts.iter().map(|p| r(self, p)).collect();
                self.fill_words(dst, dt, &parts);
            }
            Expr::Load {
                buf,
                index,
                mask,
                other,
            } => {
                let addr = self.global_addr(*buf, *index)?;
                match mask {
                    None => self.load_elem("global", dt, &addr, &d, ""),
                    Some(m) => {
                        // `other` first, then the predicated load, through a temporary
                        // so that `dst` may be one of the operands.
                        let t = self.tmp(class(dt));
                        match other {
                            Some(o) => {
                                let o = r(self, o);
                                self.ins(format!("mov.{} {t}, {o};", bty(dt)));
                            }
                            None => self.constant(dt, Const::Int(0), &t),
                        }
                        let g = format!("@{} ", r(self, m));
                        self.load_elem("global", dt, &addr, &t, &g);
                        self.ins(format!("mov.{} {d}, {t};", bty(dt)));
                    }
                }
            }
            Expr::SharedLoad { arr, index } => {
                let addr = self.shared_addr(*arr, *index);
                let sdt = self.k.shared[*arr as usize].dtype;
                if let Some(n) = words(self.k.reg_ty(dst)) {
                    // Raw words: packed 16-bit pairs or 32-bit lanes.
                    let lanes = self.lanes(dst);
                    self.ins(format!("ld.shared.{} {lanes}, [{addr}];", vec_suffix(n)));
                } else {
                    self.load_elem("shared", sdt, &addr, &d, "");
                }
            }
            Expr::Construct(_) => {
                return Err(Diagnostic::internal(
                    "vector registers are not printed for PTX yet",
                ))
            }
            Expr::SubgroupReduce { .. } => {
                return Err(Diagnostic::internal(
                    "a subgroup reduction reached the PTX printer (the PTX lowering reduces \
                     with shuffles)",
                ))
            }
            Expr::ShuffleXor { value, mask } => {
                let x = r(self, value);
                let shfl = |p: &mut Self, d: &str, x: &str| {
                    p.ins(format!(
                        "shfl.sync.bfly.b32 {d}, {x}, {mask}, 0x1f, 0xffffffff;"
                    ))
                };
                match class(dt) {
                    Class::B32 => shfl(self, &d, &x),
                    Class::B64 => {
                        let (lo, hi) = (self.tmp(Class::B32), self.tmp(Class::B32));
                        self.ins(format!("mov.b64 {{{lo}, {hi}}}, {x};"));
                        shfl(self, &lo, &lo);
                        shfl(self, &hi, &hi);
                        self.ins(format!("mov.b64 {d}, {{{lo}, {hi}}};"));
                    }
                    Class::Pred => {
                        let t = self.tmp(Class::B32);
                        self.ins(format!("selp.u32 {t}, 1, 0, {x};"));
                        shfl(self, &t, &t);
                        self.ins(format!("setp.ne.u32 {d}, {t}, 0;"));
                    }
                }
            }
        }
        Ok(())
    }

    fn no_f64(&self, op: &str, dt: DType) -> Result<()> {
        if dt == DType::F64 {
            return Err(self.err(format!(
                "`{op}` on f64 has no PTX instruction and no software routine in tilewise yet"
            )));
        }
        Ok(())
    }

    fn unary(&mut self, op: UnaryOp, dt: DType, d: &str, x: &str) -> Result<()> {
        let f = fty(dt);
        let t = self.raw_dst(dt, d);
        match op {
            UnaryOp::Neg if dt.is_float() => self.ins(format!("neg.{f} {t}, {x};")),
            UnaryOp::Neg => self.ins(format!("neg.{} {t}, {x};", signed_ty(dt))),
            UnaryOp::Not if dt == DType::I1 => self.ins(format!("not.pred {d}, {x};")),
            UnaryOp::Not => self.ins(format!("not.{} {t}, {x};", bty(dt))),
            UnaryOp::Abs if dt.is_float() => self.ins(format!("abs.{f} {t}, {x};")),
            UnaryOp::Abs if dt.is_unsigned_int() || dt == DType::I1 => {
                self.ins(format!("mov.{} {t}, {x};", bty(dt)))
            }
            UnaryOp::Abs => self.ins(format!("abs.{} {t}, {x};", ity(dt))),
            UnaryOp::Exp => {
                self.no_f64("exp", dt)?;
                self.ins(format!(
                    "mul.rn.f32 {t}, {x}, {};",
                    f32_lit(std::f32::consts::LOG2_E)
                ));
                self.ins(format!("ex2.approx.f32 {t}, {t};"));
            }
            UnaryOp::Exp2 => {
                self.no_f64("exp2", dt)?;
                self.ins(format!("ex2.approx.f32 {t}, {x};"));
            }
            UnaryOp::Log => {
                self.no_f64("log", dt)?;
                self.ins(format!("lg2.approx.f32 {t}, {x};"));
                self.ins(format!(
                    "mul.rn.f32 {t}, {t}, {};",
                    f32_lit(std::f32::consts::LN_2)
                ));
            }
            UnaryOp::Log2 => {
                self.no_f64("log2", dt)?;
                self.ins(format!("lg2.approx.f32 {t}, {x};"));
            }
            UnaryOp::Sqrt => self.ins(format!("sqrt.rn.{f} {t}, {x};")),
            UnaryOp::Rsqrt if dt == DType::F64 => {
                self.ins(format!("sqrt.rn.f64 {t}, {x};"));
                self.ins(format!("rcp.rn.f64 {t}, {t};"));
            }
            UnaryOp::Rsqrt => self.ins(format!("rsqrt.approx.f32 {t}, {x};")),
            UnaryOp::Sin | UnaryOp::Cos => {
                self.no_f64(op.name(), dt)?;
                // Reduce to one period around 0: x - rint(x / 2pi) * 2pi, with 2pi split
                // in two parts so the product is nearly exact.
                let k = self.tmp(Class::B32);
                let y = self.tmp(Class::B32);
                self.ins(format!("mul.rn.f32 {k}, {x}, 0f3E22F983;"));
                self.ins(format!("cvt.rni.f32.f32 {k}, {k};"));
                self.ins(format!("neg.f32 {k}, {k};"));
                self.ins(format!("fma.rn.f32 {y}, {k}, 0f40C90FDB, {x};"));
                self.ins(format!("fma.rn.f32 {y}, {k}, 0fB43BBD2E, {y};"));
                let name = if op == UnaryOp::Sin { "sin" } else { "cos" };
                self.ins(format!("{name}.approx.f32 {t}, {y};"));
            }
            UnaryOp::Floor => self.ins(format!("cvt.rmi.{f}.{f} {t}, {x};")),
            UnaryOp::Ceil => self.ins(format!("cvt.rpi.{f}.{f} {t}, {x};")),
            UnaryOp::Erf => {
                self.no_f64("erf", dt)?;
                self.erf(&t, x);
            }
            UnaryOp::Tanh => {
                self.no_f64("tanh", dt)?;
                self.tanh(&t, x);
            }
        }
        if !(op == UnaryOp::Not && dt == DType::I1) {
            self.fix(dt, d, &t);
        }
        Ok(())
    }

    /// `erf(x)` in f32: a Taylor series below 1, Abramowitz-Stegun 7.1.26 above.
    fn erf(&mut self, out: &str, x: &str) {
        let (a, z, s, e, u, y) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let small = self.tmp(Class::Pred);
        let neg = self.tmp(Class::Pred);
        let lit = |v: f64| f32_lit(v as f32);
        self.ins(format!("abs.f32 {a}, {x};"));
        self.ins(format!("mul.rn.f32 {z}, {x}, {x};"));
        // Series: x * 2/sqrt(pi) * sum (-1)^n z^n / (n! (2n+1)), Horner in z.
        let coeffs = [
            1.0 / 76204800.0,
            -1.0 / 6894720.0,
            1.0 / 685440.0,
            -1.0 / 75600.0,
            1.0 / 9360.0,
            -1.0 / 1320.0,
            1.0 / 216.0,
            -1.0 / 42.0,
            1.0 / 10.0,
            -1.0 / 3.0,
            1.0,
        ];
        self.ins(format!("mov.b32 {s}, {};", lit(coeffs[0])));
        for c in &coeffs[1..] {
            self.ins(format!("fma.rn.f32 {s}, {s}, {z}, {};", lit(*c)));
        }
        self.ins(format!("mul.rn.f32 {s}, {s}, {x};"));
        self.ins(format!(
            "mul.rn.f32 {s}, {s}, {};",
            lit(std::f64::consts::FRAC_2_SQRT_PI)
        ));
        // Tail: 1 - poly(t) * exp(-a^2), t = 1 / (1 + p a).
        self.ins(format!(
            "fma.rn.f32 {u}, {a}, {}, 0f3F800000;",
            lit(0.3275911)
        ));
        self.ins(format!("rcp.rn.f32 {u}, {u};"));
        self.ins(format!("mov.b32 {y}, {};", lit(1.061405429)));
        for c in [-1.453152027, 1.421413741, -0.284496736, 0.254829592] {
            self.ins(format!("fma.rn.f32 {y}, {y}, {u}, {};", lit(c)));
        }
        self.ins(format!("mul.rn.f32 {y}, {y}, {u};"));
        self.ins(format!("mul.rn.f32 {e}, {a}, {a};"));
        self.ins(format!(
            "mul.rn.f32 {e}, {e}, {};",
            f32_lit(-std::f32::consts::LOG2_E)
        ));
        self.ins(format!("ex2.approx.f32 {e}, {e};"));
        self.ins(format!("neg.f32 {y}, {y};"));
        self.ins(format!("fma.rn.f32 {y}, {y}, {e}, 0f3F800000;"));
        self.ins(format!("setp.lt.f32 {neg}, {x}, 0f00000000;"));
        self.ins(format!("@{neg} neg.f32 {y}, {y};"));
        self.ins(format!("setp.lt.f32 {small}, {a}, 0f3F800000;"));
        self.ins(format!("selp.b32 {out}, {s}, {y}, {small};"));
    }

    /// `tanh(x)` in f32: an odd Taylor series below 0.55, `1 - 2 / (exp(2|x|) + 1)`
    /// with the sign of `x` above.
    fn tanh(&mut self, out: &str, x: &str) {
        let (a, z, s, e) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let small = self.tmp(Class::Pred);
        let lit = |v: f64| f32_lit(v as f32);
        self.ins(format!("abs.f32 {a}, {x};"));
        self.ins(format!("mul.rn.f32 {z}, {x}, {x};"));
        // tanh(x) = x (1 - z/3 + 2z^2/15 - 17z^3/315 + 62z^4/2835 - 1382z^5/155925
        //            + 21844z^6/6081075 - 929569z^7/638512875 + ...), Horner in z.
        let series = [
            -929569.0 / 638512875.0,
            21844.0 / 6081075.0,
            -1382.0 / 155925.0,
            62.0 / 2835.0,
            -17.0 / 315.0,
            2.0 / 15.0,
            -1.0 / 3.0,
            1.0,
        ];
        self.ins(format!("mov.b32 {s}, {};", lit(series[0])));
        for c in &series[1..] {
            self.ins(format!("fma.rn.f32 {s}, {s}, {z}, {};", lit(*c)));
        }
        self.ins(format!("mul.rn.f32 {s}, {s}, {x};"));
        // Large: 1 - 2 / (2^(2|x| log2 e) + 1), saturating to 1 for big |x|.
        self.ins(format!(
            "mul.rn.f32 {e}, {a}, {};",
            f32_lit(2.0 * std::f32::consts::LOG2_E)
        ));
        self.ins(format!("ex2.approx.f32 {e}, {e};"));
        self.ins(format!("add.rn.f32 {e}, {e}, 0f3F800000;"));
        self.ins(format!("rcp.rn.f32 {e}, {e};"));
        self.ins(format!("fma.rn.f32 {e}, {e}, 0fC0000000, 0f3F800000;"));
        self.ins(format!("copysign.f32 {e}, {x}, {e};"));
        self.ins(format!("setp.lt.f32 {small}, {a}, {};", lit(0.55)));
        self.ins(format!("selp.b32 {out}, {s}, {e}, {small};"));
    }

    fn binary(&mut self, op: BinaryOp, dt: DType, d: &str, a: &str, b: &str) -> Result<()> {
        if dt == DType::I1 {
            let o = match op {
                BinaryOp::And | BinaryOp::Min | BinaryOp::Mul => "and",
                BinaryOp::Or | BinaryOp::Max => "or",
                BinaryOp::Xor | BinaryOp::Add | BinaryOp::Sub => "xor",
                _ => return Err(self.err(format!("`{}` on i1 values", op.name()))),
            };
            self.ins(format!("{o}.pred {d}, {a}, {b};"));
            return Ok(());
        }
        let t = self.raw_dst(dt, d);
        let float = dt.is_float();
        let f = fty(dt);
        let i = ity(dt);
        let bt = bty(dt);
        match op {
            BinaryOp::Add if float => self.ins(format!("add.rn.{f} {t}, {a}, {b};")),
            BinaryOp::Sub if float => self.ins(format!("sub.rn.{f} {t}, {a}, {b};")),
            BinaryOp::Mul if float => self.ins(format!("mul.rn.{f} {t}, {a}, {b};")),
            BinaryOp::Div if float => self.ins(format!("div.rn.{f} {t}, {a}, {b};")),
            BinaryOp::Add => self.ins(format!("add.{i} {t}, {a}, {b};")),
            BinaryOp::Sub => self.ins(format!("sub.{i} {t}, {a}, {b};")),
            BinaryOp::Mul => self.ins(format!("mul.lo.{i} {t}, {a}, {b};")),
            BinaryOp::Div | BinaryOp::Rem if !float => {
                // b == 0 gives 0; signed b == -1 gives -a (div) or 0 (rem), so that the
                // hardware never sees the undefined cases.
                let c = class(dt);
                let (zero, m1) = (self.tmp(Class::Pred), self.tmp(Class::Pred));
                let (safe, q) = (self.tmp(c), self.tmp(c));
                self.ins(format!("setp.eq.{i} {zero}, {b}, 0;"));
                self.ins(format!("selp.{bt} {safe}, 1, {b}, {zero};"));
                let name = if op == BinaryOp::Div { "div" } else { "rem" };
                if is_signed(dt) {
                    self.ins(format!("setp.eq.{i} {m1}, {b}, -1;"));
                    self.ins(format!("@{m1} mov.{bt} {safe}, 1;"));
                    self.ins(format!("{name}.{i} {q}, {a}, {safe};"));
                    if op == BinaryOp::Div {
                        self.ins(format!("@{m1} neg.{i} {q}, {a};"));
                    } else {
                        self.ins(format!("@{m1} mov.{bt} {q}, 0;"));
                    }
                } else {
                    self.ins(format!("{name}.{i} {q}, {a}, {safe};"));
                }
                self.ins(format!("selp.{bt} {t}, 0, {q}, {zero};"));
            }
            BinaryOp::Rem | BinaryOp::Div => {
                // fmod as x - y * trunc(x / y).
                let q = self.tmp(class(dt));
                self.ins(format!("div.rn.{f} {q}, {a}, {b};"));
                self.ins(format!("cvt.rzi.{f}.{f} {q}, {q};"));
                self.ins(format!("neg.{f} {q}, {q};"));
                self.ins(format!("fma.rn.{f} {t}, {q}, {b}, {a};"));
            }
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor if float => {
                return Err(self.err(format!("`{}` on {dt} values", op.name())))
            }
            BinaryOp::And => self.ins(format!("and.{bt} {t}, {a}, {b};")),
            BinaryOp::Or => self.ins(format!("or.{bt} {t}, {a}, {b};")),
            BinaryOp::Xor => self.ins(format!("xor.{bt} {t}, {a}, {b};")),
            BinaryOp::Shl | BinaryOp::Shr => {
                let name = match (op, is_signed(dt)) {
                    (BinaryOp::Shl, _) => format!("shl.{bt}"),
                    (_, true) => format!("shr.{i}"),
                    (_, false) => format!("shr.{i}"),
                };
                if float {
                    return Err(self.err(format!("`{}` on {dt} values", op.name())));
                }
                // PTX clamps shift amounts at the width: exactly the tile IR's rule. A
                // 64-bit amount is clamped before it narrows to the u32 PTX wants.
                let amount = if class(dt) == Class::B64 {
                    let (c, n) = (self.tmp(Class::B64), self.tmp(Class::B32));
                    self.ins(format!("min.u64 {c}, {b}, 64;"));
                    self.ins(format!("cvt.u32.u64 {n}, {c};"));
                    n
                } else {
                    b.to_string()
                };
                self.ins(format!("{name} {t}, {a}, {amount};"));
            }
            BinaryOp::MulHi if float => return Err(self.err(format!("`mulhi` on {dt} values"))),
            // The high half of the unsigned product, whatever the signedness.
            BinaryOp::MulHi if class(dt) == Class::B64 => {
                self.ins(format!("mul.hi.u64 {t}, {a}, {b};"))
            }
            BinaryOp::MulHi if dt.bits() == 32 => self.ins(format!("mul.hi.u32 {t}, {a}, {b};")),
            BinaryOp::MulHi => {
                // 8 and 16 bits live in 32-bit registers: the masked product's upper half.
                let mask = (1u32 << dt.bits()) - 1;
                let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                self.ins(format!("and.b32 {x}, {a}, {mask};"));
                self.ins(format!("and.b32 {y}, {b}, {mask};"));
                self.ins(format!("mul.lo.u32 {x}, {x}, {y};"));
                self.ins(format!("shr.u32 {t}, {x}, {};", dt.bits()));
            }
            BinaryOp::Min if float => self.ins(format!("min.{f} {t}, {a}, {b};")),
            BinaryOp::Max if float => self.ins(format!("max.{f} {t}, {a}, {b};")),
            // Integer min/max as a compare and a select: NVIDIA's compiler (driver
            // 580.159, CUDA 13.0, sm_90; its Vulkan driver too) computed
            // `max(-a, -b, ...)` chains as if the negation were not there (found by the
            // fuzzer; `min.s32`/`max.s32` of negated operands, through ptxas and the JIT).
            BinaryOp::Min | BinaryOp::Max => {
                let p = self.tmp(Class::Pred);
                let cmp = if op == BinaryOp::Min { "lt" } else { "gt" };
                self.ins(format!("setp.{cmp}.{i} {p}, {a}, {b};"));
                self.ins(format!("selp.{} {t}, {a}, {b}, {p};", bty(dt)));
            }
            BinaryOp::Pow => {
                self.no_f64("pow", dt)?;
                self.pow(&t, a, b);
            }
        }
        self.fix(dt, d, &t);
        Ok(())
    }

    /// `pow(a, b)` in f32: `2^(b log2 |a|)`, negated for a negative base and an odd
    /// integer exponent, NaN for a negative base and a non-integer exponent, 1 for
    /// `b == 0`.
    fn pow(&mut self, out: &str, a: &str, b: &str) {
        let (l, bi, half, r) = (
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
            self.tmp(Class::B32),
        );
        let (neg, isint, odd, zero) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        self.ins(format!("abs.f32 {l}, {a};"));
        self.ins(format!("lg2.approx.f32 {l}, {l};"));
        self.ins(format!("mul.rn.f32 {l}, {l}, {b};"));
        self.ins(format!("ex2.approx.f32 {r}, {l};"));
        self.ins(format!("setp.lt.f32 {neg}, {a}, 0f00000000;"));
        self.ins(format!("cvt.rzi.f32.f32 {bi}, {b};"));
        self.ins(format!("setp.eq.f32 {isint}, {bi}, {b};"));
        // Odd: b/2 is not an integer (every float above 2^24 is even).
        self.ins(format!("mul.rn.f32 {half}, {b}, 0f3F000000;"));
        self.ins(format!("cvt.rzi.f32.f32 {bi}, {half};"));
        self.ins(format!("setp.ne.f32 {odd}, {bi}, {half};"));
        self.ins(format!("and.pred {odd}, {odd}, {isint};"));
        self.ins(format!("and.pred {odd}, {odd}, {neg};"));
        self.ins(format!("@{odd} neg.f32 {r}, {r};"));
        self.ins(format!("not.pred {isint}, {isint};"));
        self.ins(format!("and.pred {neg}, {neg}, {isint};"));
        self.ins(format!("@{neg} mov.b32 {r}, 0f7FC00000;"));
        self.ins(format!("setp.eq.f32 {zero}, {b}, 0f00000000;"));
        self.ins(format!("selp.b32 {out}, 0f3F800000, {r}, {zero};"));
    }

    fn cmp(&mut self, p: CmpPred, dt: DType, d: &str, a: &str, b: &str) {
        if dt == DType::I1 {
            match p {
                CmpPred::Eq => {
                    let t = self.tmp(Class::Pred);
                    self.ins(format!("xor.pred {t}, {a}, {b};"));
                    self.ins(format!("not.pred {d}, {t};"));
                }
                CmpPred::Ne => self.ins(format!("xor.pred {d}, {a}, {b};")),
                _ => {
                    let (x, y) = (self.tmp(Class::B32), self.tmp(Class::B32));
                    self.ins(format!("selp.u32 {x}, 1, 0, {a};"));
                    self.ins(format!("selp.u32 {y}, 1, 0, {b};"));
                    self.cmp(p, DType::U32, d, &x, &y);
                }
            }
            return;
        }
        let float = dt.is_float();
        let o = match (p, float) {
            (CmpPred::Eq, _) => "eq",
            (CmpPred::Ne, true) => "neu",
            (CmpPred::Ne, false) => "ne",
            (CmpPred::Lt, _) => "lt",
            (CmpPred::Le, _) => "le",
            (CmpPred::Gt, _) => "gt",
            (CmpPred::Ge, _) => "ge",
        };
        let ty = if float { fty(dt) } else { ity(dt) };
        self.ins(format!("setp.{o}.{ty} {d}, {a}, {b};"));
    }

    fn bitcast(&mut self, from: DType, to: DType, d: &str, x: &str) -> Result<()> {
        if from.bits() != to.bits() || from == DType::I1 || to == DType::I1 {
            return Err(Diagnostic::internal(format!("bitcast {from} -> {to}")));
        }
        // The raw bits of `x` in a 32-bit register (low bits), for 8/16-bit types.
        let raw = match from {
            DType::F16 => {
                let (h, t) = (self.tmp16(), self.tmp(Class::B32));
                self.ins(format!("cvt.rn.f16.f32 {h}, {x};"));
                self.ins(format!("cvt.u32.u16 {t}, {h};"));
                t
            }
            DType::BF16 => {
                let t = self.tmp(Class::B32);
                self.ins(format!("shr.u32 {t}, {x}, 16;"));
                t
            }
            _ => x.to_string(),
        };
        match to {
            DType::F16 => {
                let h = self.tmp16();
                self.ins(format!("cvt.u16.u32 {h}, {raw};"));
                self.ins(format!("cvt.f32.f16 {d}, {h};"));
            }
            DType::BF16 => self.ins(format!("shl.b32 {d}, {raw}, 16;")),
            DType::I8 | DType::I16 | DType::U8 | DType::U16 => self.fix(to, d, &raw),
            _ => self.ins(format!("mov.{} {d}, {raw};", bty(to))),
        }
        Ok(())
    }

    fn cast(&mut self, from: DType, to: DType, d: &str, x: &str) {
        if from == to {
            self.ins(format!("mov.{} {d}, {x};", bty(to)));
            return;
        }
        if to == DType::I1 {
            if from.is_float() {
                let z = if from == DType::F64 {
                    f64_lit(0.0)
                } else {
                    f32_lit(0.0)
                };
                self.ins(format!("setp.neu.{} {d}, {x}, {z};", fty(from)));
            } else {
                self.ins(format!("setp.ne.{} {d}, {x}, 0;", ity(from)));
            }
            return;
        }
        if from == DType::I1 {
            let (one, zero) = match to {
                DType::F64 => (f64_lit(1.0), f64_lit(0.0)),
                d if d.is_float() => (f32_lit(1.0), f32_lit(0.0)),
                _ => ("1".into(), "0".into()),
            };
            self.ins(format!("selp.{} {d}, {one}, {zero}, {x};", bty(to)));
            return;
        }
        let t = self.raw_dst(to, d);
        match (from.is_float(), to.is_float()) {
            (true, true) => match (from, to) {
                (DType::F64, DType::F16) => {
                    let h = self.tmp16();
                    self.ins(format!("cvt.rn.f16.f64 {h}, {x};"));
                    self.ins(format!("cvt.f32.f16 {d}, {h};"));
                    return;
                }
                (DType::F64, _) => self.ins(format!("cvt.rn.f32.f64 {t}, {x};")),
                (_, DType::F64) => self.ins(format!("cvt.f64.f32 {t}, {x};")),
                // f32, f16 and bf16 all sit in f32 registers: the fix rounds.
                _ => self.ins(format!("mov.b32 {t}, {x};")),
            },
            (true, false) => {
                let f = fty(from);
                match to {
                    DType::I8 | DType::I16 => {
                        let (lo, hi) = if to == DType::I8 {
                            (-128, 127)
                        } else {
                            (-32768, 32767)
                        };
                        self.ins(format!("cvt.rzi.s32.{f} {t}, {x};"));
                        self.ins(format!("max.s32 {t}, {t}, {lo};"));
                        self.ins(format!("min.s32 {t}, {t}, {hi};"));
                    }
                    DType::U8 | DType::U16 => {
                        let hi = if to == DType::U8 { 255 } else { 65535 };
                        self.ins(format!("cvt.rzi.u32.{f} {t}, {x};"));
                        self.ins(format!("min.u32 {t}, {t}, {hi};"));
                    }
                    // The H200 converts NaN to the most negative 64-bit integer (found
                    // by the fuzzer, seed 518702); the tile IR says 0.
                    DType::I64 | DType::U64 => {
                        let nan = self.tmp(Class::Pred);
                        self.ins(format!("cvt.rzi.{}.{f} {t}, {x};", ity(to)));
                        self.ins(format!("setp.nan.{f} {nan}, {x}, {x};"));
                        self.ins(format!("@{nan} mov.b64 {t}, 0;"));
                    }
                    _ => self.ins(format!("cvt.rzi.{}.{f} {t}, {x};", ity(to))),
                }
            }
            (false, true) => {
                let ft = fty(to);
                self.ins(format!("cvt.rn.{ft}.{} {t}, {x};", ity(from)));
            }
            (false, false) => match (class(from), class(to)) {
                (Class::B64, Class::B32) => self.ins(format!("cvt.u32.u64 {t}, {x};")),
                (Class::B32, Class::B64) => {
                    let s = if is_signed(from) {
                        "s64.s32"
                    } else {
                        "u64.u32"
                    };
                    self.ins(format!("cvt.{s} {t}, {x};"));
                }
                _ => self.ins(format!("mov.{} {t}, {x};", bty(to))),
            },
        }
        self.fix(to, d, &t);
    }
}

fn axis(a: u8) -> &'static str {
    match a {
        0 => "x",
        1 => "y",
        _ => "z",
    }
}

/// The type for `neg` of an integer dtype (PTX negates signed types only).
fn signed_ty(dt: DType) -> &'static str {
    if class(dt) == Class::B64 {
        "s64"
    } else {
        "s32"
    }
}
