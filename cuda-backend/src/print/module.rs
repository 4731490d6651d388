//! The module's skeleton: the target ([`PtxTarget`]: `.version`, `.target`), the
//! `.entry` and its parameters ([`PtxParam`], and [`encode_scalar`] for the launching
//! side), the dynamic shared block and the arrays' offsets in it, the prologue that
//! converts buffer bases to global addresses, scalar parameter reads, and the special
//! registers (thread, program and warp ids).

use super::{class, Class, Printer};
use std::fmt::Write;
use tilewise_core::ir::DType;
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::tma::TensorMap;
use tilewise_core::thread_ir::{ParamKind, Special, Stmt, ThreadKernel};

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
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PtxParam {
    /// A global address (`.u64`): the first element of the bound view.
    Buffer { dtype: DType },
    /// A 32-bit word ([`encode_scalar`]).
    Word { dtype: DType },
    /// A 64-bit word ([`encode_scalar`]).
    DoubleWord { dtype: DType },
    /// A tensor map (`CUtensorMap`, 128 bytes aligned to 64) the launcher encodes from
    /// the other arguments; no argument feeds it.
    TensorMap(TensorMap),
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

/// Whether `body` (or a nested body) has a `wgmma` statement: the module then needs
/// the architecture-specific target `sm_90a` and PTX ISA 8.0.
pub(super) fn uses_wgmma(body: &[Stmt]) -> bool {
    body.iter().any(|s| {
        matches!(
            s,
            Stmt::Wgmma { .. }
                | Stmt::TmaLoad { .. }
                | Stmt::MbarrierInit { .. }
                | Stmt::MbarrierArriveTx { .. }
                | Stmt::MbarrierWait { .. }
        ) || s.bodies().iter().any(|b| uses_wgmma(b))
    })
}

/// Each shared array's byte offset in the dynamic shared block (16-byte aligned, or
/// the array's own alignment), the block's size and its alignment.
pub(super) fn shared_layout(k: &ThreadKernel) -> (Vec<u32>, u32, u32) {
    let mut shared_offsets = vec![];
    let mut shared_bytes = 0u32;
    let mut align = 16u32;
    for a in &k.shared {
        // An overlay starts where the array it takes over starts (the verifier checked
        // that it fits there).
        if let Some(h) = a.overlays {
            let at = shared_offsets[h as usize];
            shared_offsets.push(at);
            continue;
        }
        let a_align = a.align.max(16);
        align = align.max(a_align);
        shared_bytes = shared_bytes.div_ceil(a_align) * a_align;
        shared_offsets.push(shared_bytes);
        let bytes = a.len * a.dtype.size_bytes() as u32;
        shared_bytes += bytes.div_ceil(16) * 16;
    }
    (shared_offsets, shared_bytes, align)
}

/// How each Thread IR parameter travels.
pub(super) fn params(k: &ThreadKernel) -> Vec<PtxParam> {
    k.params
        .iter()
        .map(|prm| match prm.kind {
            ParamKind::Buffer { dtype, .. } => PtxParam::Buffer { dtype },
            ParamKind::Scalar { dtype } if class(dtype) == Class::B64 => {
                PtxParam::DoubleWord { dtype }
            }
            ParamKind::Scalar { dtype } => PtxParam::Word { dtype },
            ParamKind::TensorMap(ref m) => PtxParam::TensorMap(m.clone()),
        })
        .collect()
}

/// `name` as a PTX identifier: every other character becomes `_`.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The PTX name of grid axis `a`.
fn axis(a: u8) -> &'static str {
    match a {
        0 => "x",
        1 => "y",
        _ => "z",
    }
}

impl Printer<'_> {
    /// The first instructions: buffer bases, converted to global addresses once, and
    /// the shared block's address.
    pub(super) fn prologue(&mut self, params: &[PtxParam]) {
        for (i, prm) in params.iter().enumerate() {
            if let PtxParam::Buffer { .. } = prm {
                self.ins(format!("ld.param.u64 %rb{i}, [tw_p{i}];"));
                self.ins(format!("cvta.to.global.u64 %rb{i}, %rb{i};"));
            }
        }
        if !self.k.shared.is_empty() {
            self.ins("mov.u32 %smem, tw_smem;".into());
        }
    }

    /// The module up to the entry's opening brace: version, target, the shared block,
    /// the `.entry` with its parameters and its thread count.
    pub(super) fn header(
        &self,
        entry: &str,
        params: &[PtxParam],
        align: u32,
        wgmma: bool,
    ) -> String {
        let (k, target) = (self.k, self.target);
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
                PtxParam::TensorMap(_) => ".align 64 .b8",
            };
            let sep = if i + 1 == params.len() { "" } else { "," };
            let array = if matches!(prm, PtxParam::TensorMap(_)) {
                "[128]"
            } else {
                ""
            };
            let _ = write!(s, "\n    .param {ty} tw_p{i}{array}{sep}");
        }
        let _ = writeln!(s, "\n)\n.reqntid {}, 1, 1\n{{", k.threads);
        s
    }

    /// Loads scalar parameter `i` of `dt` into `d`.
    pub(super) fn param(&mut self, i: u32, dt: DType, d: &str) {
        match class(dt) {
            Class::Pred => {
                let t = self.tmp(Class::B32);
                self.ins(format!("ld.param.b32 {t}, [tw_p{i}];"));
                self.ins(format!("setp.ne.u32 {d}, {t}, 0;"));
            }
            Class::B64 => self.ins(format!("ld.param.b64 {d}, [tw_p{i}];")),
            Class::B32 => {
                let t = self.raw_dst(dt, d);
                self.ins(format!("ld.param.b32 {t}, [tw_p{i}];"));
                self.fix(dt, d, &t);
            }
        }
    }

    /// Moves special register `sp` (thread, program or warp ids, the grid) into `d`.
    pub(super) fn special(&mut self, sp: Special, dt: DType, d: &str) {
        let src = match sp {
            Special::ThreadId => "%tid.x".to_string(),
            Special::ProgramId(a) => format!("%ctaid.{}", axis(a)),
            Special::NumPrograms(a) => format!("%nctaid.{}", axis(a)),
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
}

/// The PTX directive [`ask_blocks_per_sm`] writes.
pub const MIN_BLOCKS_DIRECTIVE: &str = ".minnctapersm";

/// Asks ptxas (and the driver's JIT) to fit `blocks` blocks of the kernel on a
/// multiprocessor: PTX's `.minnctapersm` after the entry's thread count, which bounds
/// the registers a thread gets by the register file's share of each block.
pub fn ask_blocks_per_sm(ptx: &mut super::PtxKernel, blocks: u32) {
    let count = format!("\n.reqntid {}, 1, 1\n", ptx.threads);
    let with = format!(
        "\n.reqntid {}, 1, 1\n{MIN_BLOCKS_DIRECTIVE} {blocks}\n",
        ptx.threads
    );
    assert!(
        ptx.source.contains(&count),
        "the entry's header names its thread count"
    );
    ptx.source = ptx.source.replacen(&count, &with, 1);
}
