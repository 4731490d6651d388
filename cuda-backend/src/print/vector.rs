//! Vector registers: a register of several lanes lives in `.b32` words (`%vN_0 ..`),
//! one a lane for 32-bit values and two lanes packed a word for 16-bit ones (wide
//! accesses, tensor-core fragments); lanes are extracted from and packed into them.

use super::{class, Class, Printer};
use tilewise_core::ir::DType;
use tilewise_core::thread_ir::{Reg, RegTy};
use tilewise_core::{Diagnostic, Result};

/// The `.b32` words (`%vN_0 ..`) of a vector register: one a lane for 32-bit values,
/// one per two lanes for 16-bit values; `None` for scalars and other vectors.
pub(super) fn words(ty: RegTy) -> Option<u32> {
    if ty.lanes < 2 || class(ty.dtype) != Class::B32 {
        return None;
    }
    match ty.dtype.size_bytes() {
        4 => Some(ty.lanes as u32),
        2 if ty.lanes.is_multiple_of(2) => Some(ty.lanes as u32 / 2),
        _ => None,
    }
}

pub(super) fn is_wide(ty: RegTy) -> bool {
    words(ty).is_some()
}

impl Printer<'_> {
    /// The words of a vector register, comma-separated, braced when more than one.
    pub(super) fn lanes(&self, r: Reg) -> String {
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
        if let Some(h) = self.half_of(v).filter(|_| dt == DType::F16) {
            return h;
        }
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
    pub(super) fn fill_words(&mut self, vector: Reg, dt: DType, parts: &[String]) {
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

    /// Lane `lane` of `vector` into `d`, converted from its packed bits where lanes are
    /// 16-bit.
    pub(super) fn extract(&mut self, d: &str, vector: Reg, lane: u8) {
        let vdt = self.dt(vector);
        if vdt.size_bytes() == 4 {
            self.ins(format!("mov.b32 {d}, %v{}_{lane};", vector.0));
        } else {
            let (lo, hi) = (self.tmp16(), self.tmp16());
            self.ins(format!(
                "mov.b32 {{{lo}, {hi}}}, %v{}_{};",
                vector.0,
                lane / 2
            ));
            let h = if lane.is_multiple_of(2) { lo } else { hi };
            match vdt {
                DType::F16 => {
                    self.ins(format!("cvt.f32.f16 {d}, {h};"));
                    self.note_half(d, &h);
                }
                DType::BF16 => {
                    self.ins(format!("cvt.u32.u16 {d}, {h};"));
                    self.ins(format!("shl.b32 {d}, {d}, 16;"));
                }
                DType::I16 => self.ins(format!("cvt.s32.s16 {d}, {h};")),
                _ => self.ins(format!("cvt.u32.u16 {d}, {h};")),
            }
        }
    }

    /// `dst`, a vector register, from the registers `parts` (one a lane).
    pub(super) fn construct(&mut self, dst: Reg, parts: &[Reg]) -> Result<()> {
        if !is_wide(self.k.reg_ty(dst)) {
            return Err(Diagnostic::internal(
                "vector registers are not printed for PTX yet",
            ));
        }
        let dt = self.dt(dst);
        let parts: Vec<String> = parts.iter().map(|p| self.reg(*p)).collect();
        self.fill_words(dst, dt, &parts);
        Ok(())
    }
}
