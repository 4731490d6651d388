//! Memory and communication between threads: global and shared addresses, loads and
//! stores of every element type (8- and 16-bit and `i1` elements widened or narrowed
//! on the way, wide accesses of whole vector registers, masked accesses predicated),
//! atomics, asynchronous copies (`cp.async`), barriers and warp shuffles.

use super::vector::{is_wide, words};
use super::{bty, class, fty, is_signed, ity, Class, Printer};
use tilewise_core::ir::{AtomicOp, Const, DType};
use tilewise_core::thread_ir::{ParamKind, Reg, BYTE_ADDRESS, FLAT};
use tilewise_core::{Diagnostic, Result};

/// The PTX spelling of a memory access of `n` words: `.b32` or `.vN.b32`.
fn vec_suffix(n: u32) -> String {
    if n == 1 {
        "b32".into()
    } else {
        format!("v{n}.b32")
    }
}

impl Printer<'_> {
    /// The global address of element `index` of buffer `buf`, in a `.b64` the caller
    /// only reads; for [`FLAT`], of element `index` of `access` elements from address 0;
    /// for [`BYTE_ADDRESS`], `index` itself.
    pub(super) fn global_addr(&mut self, buf: u32, index: Reg, access: DType) -> Result<String> {
        let a = self.tmp(Class::B64);
        let idt = self.dt(index);
        let ir = self.reg(index);
        if buf == FLAT || buf == BYTE_ADDRESS {
            if class(idt) != Class::B64 {
                return Err(Diagnostic::internal(
                    "an address index narrower than 64 bits",
                ));
            }
            if buf == BYTE_ADDRESS {
                return Ok(ir);
            }
            let shift = access.size_bytes().trailing_zeros();
            if shift == 0 {
                return Ok(ir);
            }
            self.ins(format!("shl.b64 {a}, {ir}, {shift};"));
            return Ok(a);
        }
        let ParamKind::Buffer { dtype, .. } = self.k.params[buf as usize].kind else {
            return Err(Diagnostic::internal("memory access through a scalar"));
        };
        let size = dtype.size_bytes();
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

    /// The shared address of element `index` of shared array `arr`, in a fresh `.b32`.
    pub(super) fn shared_addr(&mut self, arr: u32, index: Reg) -> String {
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
                if guard.is_empty() {
                    self.note_half(out, &h);
                }
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
                let h = match self.half_of(v) {
                    Some(h) => h,
                    None => {
                        let h = self.tmp16();
                        self.ins(format!("cvt.rn.f16.f32 {h}, {v};"));
                        h
                    }
                };
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

    /// A store to buffer `buf`: a whole vector register, or one element, under `mask`.
    pub(super) fn store(
        &mut self,
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    ) -> Result<()> {
        let addr = self.global_addr(buf, index, self.dt(value))?;
        let guard = mask
            .map(|m| format!("@{} ", self.reg(m)))
            .unwrap_or_default();
        let ty = self.k.reg_ty(value);
        if let Some(n) = words(ty) {
            let lanes = self.lanes(value);
            self.ins(format!(
                "{guard}st.global.{} [{addr}], {lanes};",
                vec_suffix(n)
            ));
        } else {
            let v = self.reg(value);
            self.store_elem("global", self.dt(value), &addr, &v, &guard);
        }
        Ok(())
    }

    /// A store to shared array `arr`: a whole vector register, or one element.
    pub(super) fn shared_store(&mut self, arr: u32, index: Reg, value: Reg) {
        let addr = self.shared_addr(arr, index);
        if let Some(n) = words(self.k.reg_ty(value)) {
            let lanes = self.lanes(value);
            self.ins(format!("st.shared.{} [{addr}], {lanes};", vec_suffix(n)));
        } else {
            let v = self.reg(value);
            let dt = self.k.shared[arr as usize].dtype;
            self.store_elem("shared", dt, &addr, &v, "");
        }
    }

    /// A load from buffer `buf` into `dst`: a whole vector register, or one element;
    /// under `mask`, `other` (or 0) first and the load predicated.
    pub(super) fn load(
        &mut self,
        dst: Reg,
        buf: u32,
        index: Reg,
        mask: Option<Reg>,
        other: Option<Reg>,
    ) -> Result<()> {
        let dt = self.dt(dst);
        let d = self.reg(dst);
        if is_wide(self.k.reg_ty(dst)) {
            let addr = self.global_addr(buf, index, dt)?;
            let ty = self.k.reg_ty(dst);
            let n = words(ty).unwrap_or(1);
            let guard = match mask {
                Some(m) => {
                    let o = match other {
                        Some(o) => self.reg(o),
                        None => {
                            let z = self.tmp(Class::B32);
                            self.constant(dt, Const::Int(0), &z);
                            z
                        }
                    };
                    let parts = vec![o; ty.lanes as usize];
                    self.fill_words(dst, dt, &parts);
                    format!("@{} ", self.reg(m))
                }
                None => String::new(),
            };
            let lanes = self.lanes(dst);
            self.ins(format!(
                "{guard}ld.global.{} {lanes}, [{addr}];",
                vec_suffix(n)
            ));
            return Ok(());
        }
        let addr = self.global_addr(buf, index, dt)?;
        match mask {
            None => self.load_elem("global", dt, &addr, &d, ""),
            Some(m) => {
                // `other` first, then the predicated load, through a temporary
                // so that `dst` may be one of the operands.
                let t = self.tmp(class(dt));
                match other {
                    Some(o) => {
                        let o = self.reg(o);
                        self.ins(format!("mov.{} {t}, {o};", bty(dt)));
                    }
                    None => self.constant(dt, Const::Int(0), &t),
                }
                let g = format!("@{} ", self.reg(m));
                self.load_elem("global", dt, &addr, &t, &g);
                self.ins(format!("mov.{} {d}, {t};", bty(dt)));
            }
        }
        Ok(())
    }

    /// A load from shared array `arr` into `dst`: raw words for a vector register,
    /// else one element.
    pub(super) fn shared_load(&mut self, dst: Reg, arr: u32, index: Reg) {
        let d = self.reg(dst);
        let addr = self.shared_addr(arr, index);
        let sdt = self.k.shared[arr as usize].dtype;
        if let Some(n) = words(self.k.reg_ty(dst)) {
            // Raw words: packed 16-bit pairs or 32-bit lanes.
            let lanes = self.lanes(dst);
            self.ins(format!("ld.shared.{} {lanes}, [{addr}];", vec_suffix(n)));
        } else {
            self.load_elem("shared", sdt, &addr, &d, "");
        }
    }

    /// An atomic read-modify-write of buffer `buf` under `mask` (masked-off lanes read
    /// 0), the old value to `dst`; float `min`/`max` as a compare-and-swap loop.
    pub(super) fn atomic(
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
        let addr = self.global_addr(buf, index, dt)?;
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

    /// A compare-and-swap of buffer `buf`, the old value to `dst`.
    pub(super) fn atomic_cas(
        &mut self,
        dst: Reg,
        buf: u32,
        index: Reg,
        cmp: Reg,
        value: Reg,
    ) -> Result<()> {
        let dt = self.dt(value);
        if class(dt) == Class::Pred || Self::needs_fix(dt) {
            return Err(self.err(format!("atomic_cas on {dt} elements")));
        }
        let addr = self.global_addr(buf, index, dt)?;
        let (d, c, v) = (self.reg(dst), self.reg(cmp), self.reg(value));
        self.ins(format!(
            "atom.acq_rel.gpu.global.cas.{} {d}, [{addr}], {c}, {v};",
            bty(dt)
        ));
        Ok(())
    }

    /// bar.sync orders the CTA's shared and global accesses alike.
    pub(super) fn barrier(&mut self) {
        self.ins("bar.sync 0;".into());
    }

    /// `cp.async` of `lanes` elements from buffer `buf` to shared array `arr`; masked
    /// off, nothing is read and zeros are written.
    pub(super) fn async_copy(
        &mut self,
        arr: u32,
        shared_index: Reg,
        buf: u32,
        index: Reg,
        lanes: u8,
        mask: Option<Reg>,
    ) -> Result<()> {
        let bytes = lanes as usize * self.k.shared[arr as usize].dtype.size_bytes();
        if ![4, 8, 16].contains(&bytes) {
            return Err(Diagnostic::internal(format!(
                "an asynchronous copy of {bytes} bytes (cp.async moves 4, 8 or 16)"
            )));
        }
        let dst = self.shared_addr(arr, shared_index);
        let sdt = self.k.shared[arr as usize].dtype;
        let src = self.global_addr(buf, index, sdt)?;
        // 16-byte copies bypass L1 (`.cg`); smaller ones may only go through it.
        let level = if bytes == 16 { "cg" } else { "ca" };
        // Masked off: a source size of 0 reads nothing and fills zeros.
        let size = match mask {
            Some(m) => {
                let t = self.tmp(Class::B32);
                let p = self.reg(m);
                self.ins(format!("selp.u32 {t}, {bytes}, 0, {p};"));
                format!(", {t}")
            }
            None => String::new(),
        };
        self.ins(format!(
            "cp.async.{level}.shared.global [{dst}], [{src}], {bytes}{size};"
        ));
        Ok(())
    }

    pub(super) fn async_commit(&mut self) {
        self.ins("cp.async.commit_group;".into());
    }

    pub(super) fn async_wait(&mut self, pending: u32) {
        self.ins(format!("cp.async.wait_group {pending};"));
    }

    /// `d` = `x` of the lane whose id differs from this one's by the bits of `mask`
    /// (`shfl.sync.bfly`); 64-bit values in two halves, predicates as 0 or 1.
    pub(super) fn shuffle_xor(&mut self, dt: DType, d: &str, x: &str, mask: u32) {
        let shfl = |p: &mut Self, d: &str, x: &str| {
            p.ins(format!(
                "shfl.sync.bfly.b32 {d}, {x}, {mask}, 0x1f, 0xffffffff;"
            ))
        };
        match class(dt) {
            Class::B32 => shfl(self, d, x),
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
