//! Tensor cores: `ldmatrix` fragment loads, `mma.sync` (sm_80), and warpgroup
//! `wgmma` (sm_90a) with its shared-memory matrix descriptors, fences and groups.

use super::{Class, Printer};
use tilewise_core::ir::DType;
use tilewise_core::thread_ir::{MmaKind, Reg, SmemMatrix, WgmmaA, WgmmaShape};
use tilewise_core::{Diagnostic, Result};

impl Printer<'_> {
    /// The 64-bit matrix descriptor of a `wgmma` operand, in a `.b64`: the start
    /// address `(addr & 0x3FFFF) >> 4` in bits 0-13 over the constant fields. Where a
    /// consecutive `wgmma` already described the same array from the same base, this
    /// one adds its offset to that descriptor (Triton's form: the start field cannot
    /// carry, shared addresses staying below 256 KiB).
    pub(super) fn descriptor(&mut self, m: &SmemMatrix) -> String {
        let size = self.k.shared[m.arr as usize].dtype.size_bytes() as u32;
        let key = (m.arr, m.base, m.descriptor_fields());
        let bytes = m.offset * size;
        if bytes.is_multiple_of(16) {
            let base = match self.descriptors.iter().find(|(k, _)| *k == key) {
                Some((_, d)) => d.clone(),
                None => {
                    let d = self.fresh_descriptor(m, 0);
                    self.descriptors.push((key, d.clone()));
                    d
                }
            };
            if bytes == 0 {
                return base;
            }
            let d = self.tmp(Class::B64);
            self.ins(format!("add.s64 {d}, {base}, {};", bytes >> 4));
            return d;
        }
        self.fresh_descriptor(m, bytes)
    }

    /// The descriptor of `m` at `bytes` past its base, computed from the address.
    fn fresh_descriptor(&mut self, m: &SmemMatrix, bytes: u32) -> String {
        let addr = self.shared_addr(m.arr, m.base);
        if bytes != 0 {
            self.ins(format!("add.s32 {addr}, {addr}, {bytes};"));
        }
        self.ins(format!("bfe.u32 {addr}, {addr}, 4, 14;"));
        let d = self.tmp(Class::B64);
        self.ins(format!("cvt.u64.u32 {d}, {addr};"));
        self.ins(format!("or.b64 {d}, {d}, {};", m.descriptor_fields()));
        d
    }

    /// `ldmatrix` of `dst.len()` 8x8 matrices of 16-bit elements at element `index` of
    /// shared array `arr`, transposed where `trans`.
    pub(super) fn ldmatrix(&mut self, dst: &[Reg], arr: u32, index: Reg, trans: bool) {
        let addr = self.shared_addr(arr, index);
        let d: Vec<String> = dst.iter().map(|r| self.reg(*r)).collect();
        let line = format!(
            "ldmatrix.sync.aligned.m8n8.x{}{}.shared.b16 {{{}}}, [{addr}];",
            dst.len(),
            if trans { ".trans" } else { "" },
            d.join(", ")
        );
        self.ins(line);
    }

    /// `d = a * b + c` on the fragments' registers.
    pub(super) fn mma(&mut self, kind: MmaKind, d: &[Reg], a: &[Reg], b: &[Reg], c: &[Reg]) {
        let list = |p: &Self, v: &[Reg]| v.iter().map(|r| p.reg(*r)).collect::<Vec<_>>().join(", ");
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

    /// `acc += a * b` of a warpgroup, `b` read from shared memory through its
    /// descriptor, `a` likewise or from registers.
    pub(super) fn wgmma(
        &mut self,
        shape: &WgmmaShape,
        acc: &[Reg],
        a: &WgmmaA,
        b: &SmemMatrix,
        zero_acc: Option<Reg>,
    ) -> Result<()> {
        if self.target.sm != 90 {
            return Err(Diagnostic::internal(format!(
                "wgmma printed for {} (sm_90a only)",
                self.target.name()
            )));
        }
        // `a`: a descriptor, or the register list (tf32 only, so no trans-a).
        let da = match a {
            WgmmaA::Shared(m) => self.descriptor(m),
            WgmmaA::Regs(regs) => {
                let r: Vec<String> = regs.iter().map(|r| self.reg(*r)).collect();
                format!("{{{}}}", r.join(", "))
            }
        };
        let db = self.descriptor(b);
        let d: Vec<String> = acc.iter().map(|r| self.reg(*r)).collect();
        let ty = shape.input_name();
        // scale-d (a predicate: accumulate, unless `zero_acc` holds), scale-a and
        // scale-b 1, then (16-bit inputs only) trans-a and trans-b: 1 where the
        // operand is MN-major.
        let scale_d = match zero_acc {
            Some(z) => {
                let p = self.tmp(Class::Pred);
                let z = self.reg(z);
                self.ins(format!("not.pred {p}, {z};"));
                p
            }
            None => "1".into(),
        };
        let trans = match a {
            _ if shape.input == DType::F32 => String::new(),
            WgmmaA::Shared(a) => format!(", {}, {}", a.mn_major as u8, b.mn_major as u8),
            WgmmaA::Regs(_) => format!(", {}", b.mn_major as u8),
        };
        self.ins(format!(
                    "wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{ty}.{ty} {{{}}}, {da}, {db}, {scale_d}, 1, 1{trans};",
                    shape.n,
                    shape.k(),
                    d.join(", ")
                ));
        Ok(())
    }

    pub(super) fn wgmma_fence(&mut self) {
        self.ins("wgmma.fence.sync.aligned;".into());
    }

    pub(super) fn wgmma_commit(&mut self) {
        self.ins("wgmma.commit_group.sync.aligned;".into());
    }

    pub(super) fn wgmma_wait(&mut self, pending: u32) {
        self.ins(format!("wgmma.wait_group.sync.aligned {pending};"));
    }

    /// Orders this thread's generic-proxy shared writes before the async proxy's
    /// (`wgmma`'s) reads.
    pub(super) fn fence_proxy_async(&mut self) {
        self.ins("fence.proxy.async.shared::cta;".into());
    }
}
