//! Pointers as data: casts between pointers and 64-bit addresses, and between pointers
//! to elements of different sizes.
//!
//! A pointer tile rooted at a buffer parameter keeps that root; a pointer made from an
//! address (a table of pointers the host wrote, `x.to(tl.pointer_type(...))`) is rooted
//! at [`FLAT`], its offsets counting elements from address 0 (`address / size`), so
//! `addptr` and every access work on it as on any other pointer. Only targets with
//! global addresses (`ExpandOptions::global_addresses`: PTX) take such casts; WGSL
//! has no addresses, and the cast is refused by name.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::{ErrorKind, Result};
use crate::ir::{BinaryOp, DType, Elem, Inst, Value};
use crate::thread_ir::{Expr, Reg, FLAT};

impl Expander<'_> {
    /// `Op::Cast` where the value or the result is a pointer.
    pub(super) fn pointer_cast(&mut self, inst: &Inst, value: Value) -> Result<()> {
        let from = self.k.ty(value).elem();
        let to = self.k.ty(inst.results[0]).elem();
        let out = match (from, to) {
            (Some(Elem::Ptr(a)), Some(Elem::Ptr(b))) if a.size_bytes() == b.size_bytes() => {
                self.get(value)?.clone()
            }
            (Some(Elem::Ptr(a)), Some(Elem::Ptr(b))) => {
                self.need_addresses("a cast between pointers to elements of different sizes")?;
                let addr = self.addresses(value, a)?;
                self.pointers_at(addr, b)
            }
            (Some(Elem::Ptr(a)), Some(Elem::Data(d))) => {
                self.need_addresses("a cast of a pointer to an integer")?;
                let addr = self.addresses(value, a)?;
                TVal::Data(self.map_dist(addr, |x, r| x.reinterpret(r, d)))
            }
            (Some(Elem::Data(d)), Some(Elem::Ptr(b))) => {
                self.need_addresses("a pointer made from an integer (pointers as data)")?;
                let ints = self.data(value)?;
                let addr = self.map_dist(ints, |x, r| {
                    if d == DType::I64 {
                        r
                    } else {
                        x.reinterpret(r, DType::I64)
                    }
                });
                self.pointers_at(addr, b)
            }
            _ => {
                return Err(crate::diag::Diagnostic::internal(
                    "pointer_cast without a pointer",
                ))
            }
        };
        self.set(inst.results[0], out);
        Ok(())
    }

    /// Refuses `what` on a target without global addresses.
    fn need_addresses(&self, what: &str) -> Result<()> {
        if self.opt.global_addresses {
            return Ok(());
        }
        Err(self.err(
            ErrorKind::Backend,
            format!(
                "{what} needs global memory addresses, which the {} backend does not have: kernels there reach memory only through their buffer arguments; run this kernel on CUDA or a CPU executor, or pass the buffers as arguments",
                self.opt.backend
            ),
        ))
    }

    /// The 64-bit addresses (i64 registers) of pointer tile `value` to `pointee`.
    fn addresses(&mut self, value: Value, pointee: DType) -> Result<Dist> {
        let TVal::Ptr { root, off } = self.get(value)?.clone() else {
            return Err(crate::diag::Diagnostic::internal(
                "address of a non-pointer",
            ));
        };
        let size = pointee.size_bytes() as i64;
        let base = (root != FLAT).then(|| self.assign(DType::I64, Expr::Address(root)));
        Ok(self.map_dist(off, |x, r| {
            let r = x.cast_to(r, DType::I64);
            let bytes = if size == 1 {
                r
            } else {
                let s = x.int_const(DType::I64, size);
                x.assign(DType::I64, Expr::Binary(BinaryOp::Mul, r, s))
            };
            match base {
                Some(b) => x.assign(DType::I64, Expr::Binary(BinaryOp::Add, b, bytes)),
                None => bytes,
            }
        }))
    }

    /// A pointer tile to `pointee` at the addresses in `addr` (i64 registers).
    fn pointers_at(&mut self, addr: Dist, pointee: DType) -> TVal {
        let shift = pointee.size_bytes().trailing_zeros() as i64;
        let off = self.map_dist(addr, |x, r| {
            if shift == 0 {
                r
            } else {
                let s = x.int_const(DType::I64, shift);
                x.assign(DType::I64, Expr::Binary(BinaryOp::Shr, r, s))
            }
        });
        TVal::Ptr { root: FLAT, off }
    }

    /// `r`'s bits as `dtype` (of the same width).
    fn reinterpret(&mut self, r: Reg, dtype: DType) -> Reg {
        if self.out.reg_ty(r).dtype == dtype {
            return r;
        }
        self.assign(
            dtype,
            Expr::Cast {
                value: r,
                bitcast: true,
            },
        )
    }

    /// `f` applied to every register of `d`, in the same layout.
    fn map_dist(&mut self, d: Dist, mut f: impl FnMut(&mut Self, Reg) -> Reg) -> Dist {
        match d {
            Dist::Uniform(r) => Dist::Uniform(f(self, r)),
            Dist::Regs { layout, regs } => Dist::Regs {
                layout,
                regs: regs.into_iter().map(|r| f(self, r)).collect(),
            },
        }
    }
}
