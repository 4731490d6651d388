//! The dot plan (portable FMA form).
//!
//! `acc + a @ b` with `a: [M, K]`, `b: [K, N]`: both operands are written to shared
//! memory (row-major), a barrier, then every thread updates the accumulator registers
//! of its micro-tile: for each `k`, it reads the `a` values of its rows and the `b`
//! values of its columns once and issues one fused multiply-add per accumulator. The
//! accumulator layout gives each thread a `TM x TN` block (up to 8x8), with lanes along
//! N so that a warp reads consecutive `b` columns (conflict-free) and broadcasts `a`.
//! Products are formed in the accumulator's type: exact for f16 and bf16 inputs into
//! f32. The PTX backend replaces the inner product with `mma.sync` fragments.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::Op;
use crate::ir::{BinaryOp, DType, Inst};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::{Expr, Reg, Stmt};
use std::collections::BTreeMap;

impl Expander<'_> {
    /// The accumulator layout of an `m x n` dot.
    pub(crate) fn dot_layout(&self, m: u32, n: u32) -> Result<LinearLayout> {
        let threads = self.opt.num_warps * self.opt.warp_size;
        let per_thread = (m * n / threads).max(1);
        // Split the per-thread block as evenly as possible, N-major, up to 8x8.
        let mut tn = 1u32;
        let mut tm = 1u32;
        while tm * tn < per_thread && (tn < 8 || tm < 8) {
            if tn <= tm && tn < 8 && tn * 2 <= n {
                tn *= 2;
            } else if tm < 8 && tm * 2 <= m {
                tm *= 2;
            } else if tn < 8 && tn * 2 <= n {
                tn *= 2;
            } else {
                break;
            }
        }
        let lanes_n = (n / tn).clamp(1, self.opt.warp_size);
        let lanes_m = (self.opt.warp_size / lanes_n).max(1);
        let warps_m = (m / (tm * lanes_m)).clamp(1, self.opt.num_warps);
        let warps_n = (self.opt.num_warps / warps_m).max(1);
        LinearLayout::blocked(
            &[m, n],
            &[tm, tn],
            &[lanes_m, lanes_n],
            &[warps_m, warps_n],
            &[1, 0],
        )
        .map_err(|e| Diagnostic::internal(format!("dot layout {m}x{n}: {e}")))
    }

    fn stage(&mut self, d: &Dist, shape: &[u32], name: &str, dtype: DType) -> Result<u32> {
        let len: u32 = shape.iter().product();
        let arr = self.shared_array(name, dtype, len);
        let layout = match d {
            Dist::Regs { layout, .. } => layout.clone(),
            Dist::Uniform(_) => self.canonical(shape)?,
        };
        let regs = self.in_layout(d, &layout)?;
        let idx = self.linear_indices(&layout, shape)?;
        for (r, i) in regs.iter().zip(idx) {
            self.emit(Stmt::SharedStore {
                arr,
                index: i,
                value: *r,
            });
        }
        Ok(arr)
    }

    pub(crate) fn dot(&mut self, inst: &Inst) -> Result<()> {
        let Op::Dot { a, b, acc, .. } = &inst.op else {
            unreachable!()
        };
        let (sa, sb) = (self.shape(*a), self.shape(*b));
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let (da, db) = (self.data(*a)?, self.data(*b)?);
        let (ta, tb) = (self.dtype(*a), self.dtype(*b));
        let acc_dt = self.dtype(inst.results[0]);
        let layout = self.dot_layout(m, n)?;
        // Accumulator registers, updated in place by the k loop.
        let init = self.data(*acc)?;
        let init = self.in_layout(&init, &layout)?;
        let accs: Vec<Reg> = init
            .iter()
            .map(|&r| {
                let d = self.new_reg(acc_dt);
                let r = self.cast_to(r, acc_dt);
                self.emit(Stmt::Assign {
                    dst: d,
                    expr: Expr::Copy(r),
                });
                d
            })
            .collect();
        self.emit(Stmt::Barrier);
        let arr_a = self.stage(&da, &[m, k], "dot_a", ta)?;
        let arr_b = self.stage(&db, &[k, n], "dot_b", tb)?;
        self.emit(Stmt::Barrier);
        // Rows and columns of this thread's registers; registers sharing a register-part
        // coordinate share the same row (column) register.
        let rows = self.coordinates(&layout, 0, 0)?;
        let cols = self.coordinates(&layout, 1, 0)?;
        let n_regs = layout.num_regs();
        let mut row_of: BTreeMap<u32, Reg> = BTreeMap::new();
        let mut col_of: BTreeMap<u32, Reg> = BTreeMap::new();
        for r in 0..n_regs {
            let c = layout.apply(r, 0, 0);
            row_of.entry(c[0]).or_insert(rows[r as usize]);
            col_of.entry(c[1]).or_insert(cols[r as usize]);
        }
        let first_reg_of_dup: Vec<bool> = {
            let mut seen = std::collections::HashSet::new();
            (0..n_regs)
                .map(|r| seen.insert(layout.apply(r, 0, 0)))
                .collect()
        };
        // Row bases: row * K, computed once.
        let kc = self.int_const(DType::I32, k as i64);
        let row_base: BTreeMap<u32, Reg> = row_of
            .iter()
            .map(|(&rc, &reg)| {
                (
                    rc,
                    self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, reg, kc)),
                )
            })
            .collect();
        let (zero, one, kend) = (
            self.int_const(DType::I32, 0),
            self.int_const(DType::I32, 1),
            self.int_const(DType::I32, k as i64),
        );
        let iv = self.new_reg(DType::I32);
        self.open();
        let nc = self.int_const(DType::I32, n as i64);
        let b_row = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, iv, nc));
        let mut a_val: BTreeMap<u32, Reg> = BTreeMap::new();
        for (&rc, &base) in &row_base {
            let idx = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, base, iv));
            let v = self.assign(
                ta,
                Expr::SharedLoad {
                    arr: arr_a,
                    index: idx,
                },
            );
            a_val.insert(rc, self.cast_to(v, acc_dt));
        }
        let mut b_val: BTreeMap<u32, Reg> = BTreeMap::new();
        for (&cc, &col) in &col_of {
            let idx = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, b_row, col));
            let v = self.assign(
                tb,
                Expr::SharedLoad {
                    arr: arr_b,
                    index: idx,
                },
            );
            b_val.insert(cc, self.cast_to(v, acc_dt));
        }
        for r in 0..n_regs {
            if !first_reg_of_dup[r as usize] {
                continue;
            }
            let c = layout.apply(r, 0, 0);
            let (x, y) = (a_val[&c[0]], b_val[&c[1]]);
            let acc = accs[r as usize];
            self.emit(Stmt::Assign {
                dst: acc,
                expr: Expr::Fma(x, y, acc),
            });
        }
        let body = self.close();
        self.emit(Stmt::For {
            iv,
            lower: zero,
            upper: kend,
            step: one,
            body,
        });
        // Replicated registers copy their first instance.
        let mut out = accs.clone();
        let mut first_of: std::collections::HashMap<Vec<u32>, Reg> = Default::default();
        for r in 0..n_regs {
            let c = layout.apply(r, 0, 0);
            let e = *first_of.entry(c).or_insert(accs[r as usize]);
            out[r as usize] = e;
        }
        self.set(
            inst.results[0],
            TVal::Data(Dist::Regs { layout, regs: out }),
        );
        Ok(())
    }
}
