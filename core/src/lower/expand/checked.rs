//! Checked mode in the expansion: the tests a checked kernel makes on the GPU and the
//! reports its threads write (the record and its decoding: `thread_ir::checks`).
//!
//! - Every global access tests its element indices against the view's length (a
//!   hidden parameter); a lane outside is masked off and reported.
//! - `tl.device_assert` reports the first element where its condition is false.
//! - A hint on an integer or pointer tile is tested as the checked interpreter tests
//!   it (runs, groups, multiples along each hinted dimension); the element before each
//!   one along the dimension comes through shared memory.
//! - `check_block_ptr` (from `block_ptr` in checked mode) tests a block pointer's
//!   declared extent against its buffer view.
//! - `tl.device_print` (checked mode or not) writes each element it prints to the print
//!   buffer, a hidden parameter after the record.
//!
//! A test costs compares and one branch a tile on the path where nothing is wrong;
//! locating the offending element happens in the branch taken when something is.

use super::dist::Dist;
use super::{Expander, TVal};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::HintKind;
use crate::ir::{BinaryOp, CmpPred, Const, DType, Elem, Inst, Value};
use crate::lower::layout::LinearLayout;
use crate::thread_ir::checks::{
    word, CheckKind, CheckSite, HintRule, PrintSite, PrintValue, ERROR_SLOT, MAX_REPORTED_RANK,
    PRINT_ENTRY_WORDS, PRINT_WORDS, WARNING_SLOT,
};
use crate::thread_ir::{Expr, Param, ParamKind, Reg, Special, Stmt};

/// One global access to test: `index[i]` is the element index of layout register
/// `at[i]` (all registers in order when `at` is `None`), accessing `lanes` elements
/// from there in buffer parameter `root`.
pub(crate) struct AccessSite<'a> {
    pub what: &'static str,
    pub root: u32,
    pub layout: Option<&'a LinearLayout>,
    pub index: &'a [Reg],
    pub at: Option<&'a [usize]>,
    pub lanes: u32,
}

/// Elements of a hinted tile staged through shared memory in one round.
const HINT_ROUND: u32 = 1024;

impl Expander<'_> {
    /// Checked mode, or a kernel that prints: adds the hidden parameters (view
    /// lengths, the record, the print buffer when it prints) after the kernel's own
    /// and reads the lengths at kernel entry (called from the prologue).
    pub(crate) fn hidden_params(&mut self) {
        let mut prints = false;
        self.k
            .walk(&mut |inst| prints |= matches!(inst.op, crate::ir::Op::DevicePrint { .. }));
        if !self.opt.checked && !prints {
            return;
        }
        let mut checks = crate::thread_ir::checks::Checks::default();
        let buffers: Vec<(u32, String)> = self
            .out
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, ParamKind::Buffer { .. }))
            .map(|(i, p)| (i as u32, p.name.clone()))
            .collect();
        for (b, name) in buffers {
            let p = self.out.params.len() as u32;
            self.out.params.push(Param {
                name: format!("tw_len_{name}"),
                kind: ParamKind::Scalar { dtype: DType::I32 },
            });
            checks.lens.push((b, p));
            let r = self.assign(DType::I32, Expr::Param(p));
            self.check_lens.insert(b, r);
        }
        checks.record = self.out.params.len() as u32;
        self.out.params.push(Param {
            name: "tw_checks".into(),
            kind: ParamKind::Buffer {
                dtype: DType::I32,
                written: true,
            },
        });
        if prints {
            checks.print_buffer = Some(self.out.params.len() as u32);
            self.out.params.push(Param {
                name: "tw_prints".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::I32,
                    written: true,
                },
            });
        }
        self.out.checks = Some(checks);
    }

    /// `tl.device_print(prefix, values...)` on a GPU: each owned element of each
    /// operand claims an entry of the print buffer with an atomic add and writes the
    /// site, program id, element and value; the launch prints them
    /// (`thread_ir::checks::print_lines`).
    pub(crate) fn device_print(&mut self, values: &[Value], prefix: &str, hex: bool) -> Result<()> {
        let checks = self
            .out
            .checks
            .as_ref()
            .expect("hidden parameters of a printing kernel");
        let buf = checks.print_buffer.expect("a print buffer");
        for (k, &v) in values.iter().enumerate() {
            let label = if values.len() > 1 {
                format!("{prefix} (operand {k})")
            } else {
                prefix.to_string()
            };
            let (dist, value) = match self.get(v)?.clone() {
                TVal::Data(d) => {
                    let dt = self.dtype(v);
                    let kind = if dt == DType::F64 {
                        PrintValue::F64
                    } else if dt.is_float() {
                        PrintValue::F32
                    } else if dt.is_unsigned_int() || dt == DType::I1 {
                        PrintValue::Uint
                    } else {
                        PrintValue::Int
                    };
                    (d, kind)
                }
                TVal::Ptr { root, off } => (off, PrintValue::Ptr { param: root }),
                _ => return Err(self.unsupported("`tl.device_print` of this value")),
            };
            let shape = self.shape(v);
            let site = {
                let span = self.span;
                let checks = self.out.checks.as_mut().expect("hidden parameters");
                checks.prints.push(PrintSite {
                    span,
                    label,
                    shape,
                    value: value.clone(),
                    hex,
                });
                checks.prints.len() as u32 - 1
            };
            let (layout, regs) = match &dist {
                Dist::Uniform(r) => (None, vec![*r]),
                Dist::Regs { layout, regs } => (Some(layout.clone()), regs.clone()),
            };
            let (own, first) = self.ownership(layout.as_ref());
            let elements = self.elements(layout.as_ref())?;
            self.open();
            for (i, &r) in regs.iter().enumerate() {
                if !first[i] {
                    continue;
                }
                let (lo, hi) = self.value_words(r, &value);
                let zero = self.int_const(DType::I32, 0);
                let one = self.int_const(DType::I32, 1);
                let slot = self.new_reg(DType::I32);
                self.emit(Stmt::Atomic {
                    dst: slot,
                    op: crate::ir::AtomicOp::Add,
                    buf,
                    index: zero,
                    value: one,
                    mask: None,
                });
                let words = self.int_const(DType::I32, PRINT_ENTRY_WORDS as i64);
                let at = self.assign(DType::I32, Expr::Binary(BinaryOp::Mul, slot, words));
                let at = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, at, one));
                let limit = self.int_const(DType::I32, (PRINT_WORDS - PRINT_ENTRY_WORDS) as i64);
                let fits = self.cmp(CmpPred::Le, at, limit);
                self.open();
                let s = self.int_const(DType::I32, site as i64);
                let pids: Vec<Reg> = (0..3u8)
                    .map(|a| self.assign(DType::I32, Expr::Special(Special::ProgramId(a))))
                    .collect();
                let entry = [s, pids[0], pids[1], pids[2], elements[i], lo, hi];
                for (w, &x) in entry.iter().enumerate() {
                    let off = self.int_const(DType::I32, w as i64);
                    let index = self.assign(DType::I32, Expr::Binary(BinaryOp::Add, at, off));
                    self.emit(Stmt::Store {
                        buf,
                        index,
                        value: x,
                        mask: None,
                    });
                }
                let body = self.close();
                self.emit(Stmt::If {
                    cond: fits,
                    then_body: body,
                    else_body: vec![],
                });
            }
            let body = self.close();
            match own {
                Some(cond) => self.emit(Stmt::If {
                    cond,
                    then_body: body,
                    else_body: vec![],
                }),
                None => body.into_iter().for_each(|st| self.emit(st)),
            }
        }
        Ok(())
    }

    /// The two words (low, high) a print entry stores for `r`.
    fn value_words(&mut self, r: Reg, value: &PrintValue) -> (Reg, Reg) {
        let dt = self.out.reg_ty(r).dtype;
        match value {
            PrintValue::F32 => {
                let f = if dt == DType::F32 {
                    r
                } else {
                    self.cast_to(r, DType::F32)
                };
                let bits = self.assign(
                    DType::I32,
                    Expr::Cast {
                        value: f,
                        bitcast: true,
                    },
                );
                (bits, self.int_const(DType::I32, 0))
            }
            PrintValue::F64 => {
                let bits = self.assign(
                    DType::I64,
                    Expr::Cast {
                        value: r,
                        bitcast: true,
                    },
                );
                self.split_words(bits)
            }
            PrintValue::Uint if dt.size_bytes() < 8 => {
                let v = self.cast_to(r, DType::I32);
                (v, self.int_const(DType::I32, 0))
            }
            _ => self.split_words(r),
        }
    }

    /// An integer as low and high 32-bit words (the high word of a 32-bit value is
    /// its sign, computed without 64-bit arithmetic).
    fn split_words(&mut self, value: Reg) -> (Reg, Reg) {
        let dt = self.out.reg_ty(value).dtype;
        if dt.size_bytes() == 8 {
            let lo = self.cast_to(value, DType::I32);
            let k = self.int_const(dt, 32);
            let shifted = self.assign(dt, Expr::Binary(BinaryOp::Shr, value, k));
            (lo, self.cast_to(shifted, DType::I32))
        } else {
            let v = self.cast_to(value, DType::I32);
            let k = self.int_const(DType::I32, 31);
            (
                v,
                self.assign(DType::I32, Expr::Binary(BinaryOp::Shr, v, k)),
            )
        }
    }

    fn new_site(&mut self, kind: CheckKind, shape: Vec<u32>) -> u32 {
        let span = self.span;
        let checks = self.out.checks.as_mut().expect("checked mode");
        checks.sites.push(CheckSite { span, kind, shape });
        checks.sites.len() as u32 - 1
    }

    fn i1_or(&mut self, a: Reg, b: Reg) -> Reg {
        self.assign(DType::I1, Expr::Binary(BinaryOp::Or, a, b))
    }

    fn i1_and(&mut self, a: Reg, b: Reg) -> Reg {
        self.assign(DType::I1, Expr::Binary(BinaryOp::And, a, b))
    }

    fn cmp(&mut self, pred: CmpPred, a: Reg, b: Reg) -> Reg {
        self.assign(DType::I1, Expr::Cmp(pred, a, b))
    }

    fn select(&mut self, dtype: DType, cond: Reg, on_true: Reg, on_false: Reg) -> Reg {
        self.assign(
            dtype,
            Expr::Select {
                cond,
                on_true,
                on_false,
            },
        )
    }

    /// The length of buffer parameter `root`'s view, in `dtype`.
    fn view_len(&mut self, root: u32, dtype: DType) -> Result<Reg> {
        let len = *self.check_lens.get(&root).ok_or_else(|| {
            Diagnostic::internal("checked access through a buffer without a length")
        })?;
        Ok(if dtype == DType::I32 {
            len
        } else {
            self.cast_to(len, dtype)
        })
    }

    /// Writes `value` (an integer) into two words of the record from `at`.
    fn record_value(&mut self, record: u32, at: u32, value: Reg) {
        let (lo, hi) = self.split_words(value);
        self.record_word(record, at, lo);
        self.record_word(record, at + 1, hi);
    }

    fn record_word(&mut self, record: u32, at: u32, value: Reg) {
        let index = self.int_const(DType::I32, at as i64);
        self.emit(Stmt::Store {
            buf: record,
            index,
            value,
            mask: None,
        });
    }

    /// Where `bad`: claims `slot` of the record for `site` (the first claim wins) and
    /// fills it with the program id and what `fill` computes there (element index,
    /// value, second value, extra words).
    fn report(
        &mut self,
        slot: u32,
        site: u32,
        bad: Reg,
        fill: impl FnOnce(&mut Self) -> Result<(Reg, Reg, Option<Reg>, Vec<Reg>)>,
    ) -> Result<()> {
        let record = self.out.checks.as_ref().expect("checked mode").record;
        self.open();
        let at = self.int_const(DType::I32, slot as i64);
        let zero = self.int_const(DType::I32, 0);
        let claim = self.int_const(DType::I32, site as i64 + 1);
        let old = self.new_reg(DType::I32);
        self.emit(Stmt::AtomicCas {
            dst: old,
            buf: record,
            index: at,
            cmp: zero,
            value: claim,
        });
        let won = self.cmp(CmpPred::Eq, old, zero);
        self.open();
        for a in 0..3u8 {
            let pid = self.assign(DType::I32, Expr::Special(Special::ProgramId(a)));
            self.record_word(record, slot + word::PID + a as u32, pid);
        }
        let (element, value, value2, extra) = fill(self)?;
        self.record_word(record, slot + word::ELEMENT, element);
        self.record_value(record, slot + word::VALUE, value);
        if let Some(v2) = value2 {
            self.record_value(record, slot + word::VALUE2, v2);
        }
        for (k, w) in extra.into_iter().enumerate() {
            self.record_word(record, slot + word::EXTRA + k as u32, w);
        }
        let fill_body = self.close();
        self.emit(Stmt::If {
            cond: won,
            then_body: fill_body,
            else_body: vec![],
        });
        let body = self.close();
        self.emit(Stmt::If {
            cond: bad,
            then_body: body,
            else_body: vec![],
        });
        Ok(())
    }

    /// The row-major element index of each register of `layout` (0 for a scalar).
    fn elements(&mut self, layout: Option<&LinearLayout>) -> Result<Vec<Reg>> {
        match layout {
            Some(l) => {
                let shape = l.shape().to_vec();
                self.linear_indices(l, &shape)
            }
            None => Ok(vec![self.int_const(DType::I32, 0)]),
        }
    }

    /// The tests of one access (see [`AccessSite`]) where `mask[i]` holds. Returns
    /// the masks to access with (`mask` and inside the view), and the report of lanes
    /// outside (an out-of-bounds access), which the caller emits after the access so
    /// that nothing delays it. The identity, and no report, outside checked mode.
    pub(crate) fn guard_access(
        &mut self,
        site: AccessSite,
        mask: &[Option<Reg>],
    ) -> Result<(Vec<Option<Reg>>, Vec<Stmt>)> {
        let AccessSite {
            what,
            root,
            layout,
            index,
            at,
            lanes,
        } = site;
        // An access through an address (pointers as data) has no view to test
        // against: checked mode tests buffer arguments only (the interpreter's checked
        // mode tests every buffer).
        if !self.opt.checked || index.is_empty() {
            return Ok((mask.to_vec(), vec![]));
        }
        if root == crate::thread_ir::FLAT {
            // Callers in checked mode access under a mask: the given one, or all true.
            let on = self.constant(DType::I1, Const::Bool(true));
            return Ok((mask.iter().map(|m| Some(m.unwrap_or(on))).collect(), vec![]));
        }
        let shape = layout.map(|l| l.shape().to_vec()).unwrap_or_default();
        let site = self.new_site(CheckKind::Access { what, param: root }, shape);
        // `index .. index + lanes` is inside `[0, len)` exactly when `index`, as an
        // unsigned number, is below `max(len - lanes + 1, 0)`: one compare a register.
        let outside = |x: &mut Self, ix: Reg| -> Result<(Reg, Reg)> {
            let dt = x.out.reg_ty(ix).dtype;
            let udt = if dt.size_bytes() == 8 {
                DType::U64
            } else {
                DType::U32
            };
            let len = x.view_len(root, dt)?;
            let n = x.int_const(dt, lanes as i64 - 1);
            let zero = x.int_const(dt, 0);
            let bound = x.assign(dt, Expr::Binary(BinaryOp::Sub, len, n));
            let bound = x.assign(dt, Expr::Binary(BinaryOp::Max, bound, zero));
            let ub = x.assign(
                udt,
                Expr::Cast {
                    value: bound,
                    bitcast: true,
                },
            );
            let ui = x.assign(
                udt,
                Expr::Cast {
                    value: ix,
                    bitcast: true,
                },
            );
            Ok((ui, ub))
        };
        let mut guarded = Vec::with_capacity(index.len());
        let mut any: Option<Reg> = None;
        for (i, &ix) in index.iter().enumerate() {
            let (ui, ub) = outside(self, ix)?;
            let ok = self.cmp(CmpPred::Lt, ui, ub);
            let mut bad = self.cmp(CmpPred::Ge, ui, ub);
            let m = mask.get(i).copied().flatten();
            if let Some(m) = m {
                bad = self.i1_and(bad, m);
            }
            guarded.push(Some(match m {
                Some(m) => self.i1_and(m, ok),
                None => ok,
            }));
            any = Some(match any {
                None => bad,
                Some(a) => self.i1_or(a, bad),
            });
        }
        let any = any.ok_or_else(|| Diagnostic::internal("an access without registers"))?;
        let index = index.to_vec();
        let mask = mask.to_vec();
        self.open();
        self.report(ERROR_SLOT, site, any, |x| {
            let elements = x.elements(layout)?;
            // The first bad register (recomputed here, so that nothing stays live
            // across the access): its first lane outside the view.
            let mut pick: Option<(Reg, Reg)> = None;
            for i in (0..index.len()).rev() {
                let ix = index[i];
                let dt = x.out.reg_ty(ix).dtype;
                let (ui, ub) = outside(x, ix)?;
                let mut bad = x.cmp(CmpPred::Ge, ui, ub);
                if let Some(m) = mask.get(i).copied().flatten() {
                    bad = x.i1_and(bad, m);
                }
                let len = x.view_len(root, dt)?;
                let zero = x.int_const(dt, 0);
                let neg = x.cmp(CmpPred::Lt, ix, zero);
                let past = x.assign(dt, Expr::Binary(BinaryOp::Max, ix, len));
                let out = x.select(dt, neg, ix, past);
                let skip = x.assign(dt, Expr::Binary(BinaryOp::Sub, out, ix));
                let skip = x.cast_to(skip, DType::I32);
                let reg = at.map_or(i, |a| a[i]);
                let el = x.assign(DType::I32, Expr::Binary(BinaryOp::Add, elements[reg], skip));
                pick = Some(match pick {
                    None => (el, out),
                    Some((pe, pv)) => (
                        x.select(DType::I32, bad, el, pe),
                        x.select(dt, bad, out, pv),
                    ),
                });
            }
            let (el, v) = pick.expect("at least one register");
            Ok((el, v, None, vec![]))
        })?;
        let report = self.close();
        Ok((guarded, report))
    }

    /// `tl.device_assert(cond, message)` on a GPU: reported in checked mode (the
    /// interpreter always checks it; unchecked GPU launches skip it, as Triton does
    /// without `TRITON_DEBUG`).
    pub(crate) fn device_assert(&mut self, cond: Value, message: &str) -> Result<()> {
        if !self.opt.checked {
            return Ok(());
        }
        let shape = self.shape(cond);
        let d = self.data(cond)?;
        let (layout, regs) = match &d {
            Dist::Uniform(r) => (None, vec![*r]),
            Dist::Regs { layout, regs } => (Some(layout.clone()), regs.clone()),
        };
        let site = self.new_site(
            CheckKind::Assert {
                message: message.to_string(),
            },
            shape,
        );
        let (t, f) = (
            self.constant(DType::I1, Const::Bool(true)),
            self.constant(DType::I1, Const::Bool(false)),
        );
        let bads: Vec<Reg> = regs
            .iter()
            .map(|&c| self.select(DType::I1, c, f, t))
            .collect();
        let any = bads
            .iter()
            .copied()
            .reduce(|a, b| self.i1_or(a, b))
            .expect("a register");
        self.report(ERROR_SLOT, site, any, |x| {
            let elements = x.elements(layout.as_ref())?;
            let mut el = elements[elements.len() - 1];
            for i in (0..elements.len() - 1).rev() {
                el = x.select(DType::I32, bads[i], elements[i], el);
            }
            let zero = x.int_const(DType::I32, 0);
            Ok((el, zero, None, vec![]))
        })
    }

    /// `check_block_ptr`: the declared extent of a block pointer inside its view.
    pub(crate) fn check_block_ptr(
        &mut self,
        base: Value,
        shape: &[Value],
        strides: &[Value],
    ) -> Result<()> {
        if !self.opt.checked {
            return Ok(());
        }
        let (root, off) = match self.get(base)? {
            TVal::Ptr {
                root,
                off: Dist::Uniform(o),
            } => (*root, *o),
            _ => {
                return Err(Diagnostic::internal(
                    "check_block_ptr of a non-scalar pointer",
                ))
            }
        };
        if root == crate::thread_ir::FLAT {
            return Ok(());
        }
        let dt = if self.opt.native_i64 {
            DType::I64
        } else {
            DType::I32
        };
        let scalar = |x: &mut Self, v: Value| -> Result<Reg> {
            match x.data(v)? {
                Dist::Uniform(r) => Ok(x.cast_to(r, dt)),
                Dist::Regs { .. } => Err(Diagnostic::internal("block pointer part is a tile")),
            }
        };
        let rank = shape.len();
        let site = self.new_site(
            CheckKind::BlockPtr {
                param: root,
                rank: rank as u32,
            },
            vec![],
        );
        let mut lo = self.cast_to(off, dt);
        let mut hi = lo;
        let t = self.constant(DType::I1, Const::Bool(true));
        let mut nonempty = t;
        let (zero, one) = (self.int_const(dt, 0), self.int_const(dt, 1));
        let mut parts = vec![];
        for d in 0..rank {
            let s = scalar(self, shape[d])?;
            let st = scalar(self, strides[d])?;
            parts.push((s, st));
            let pos = self.cmp(CmpPred::Gt, s, zero);
            nonempty = self.i1_and(nonempty, pos);
            let sm1 = self.assign(dt, Expr::Binary(BinaryOp::Sub, s, one));
            let span = self.assign(dt, Expr::Binary(BinaryOp::Mul, sm1, st));
            let up = self.assign(dt, Expr::Binary(BinaryOp::Max, span, zero));
            let down = self.assign(dt, Expr::Binary(BinaryOp::Min, span, zero));
            hi = self.assign(dt, Expr::Binary(BinaryOp::Add, hi, up));
            lo = self.assign(dt, Expr::Binary(BinaryOp::Add, lo, down));
        }
        let len = self.view_len(root, dt)?;
        let below = self.cmp(CmpPred::Lt, lo, zero);
        let above = self.cmp(CmpPred::Ge, hi, len);
        let outside = self.i1_or(below, above);
        let bad = self.i1_and(nonempty, outside);
        self.report(ERROR_SLOT, site, bad, |x| {
            let v = x.select(dt, below, lo, hi);
            let el = x.int_const(DType::I32, 0);
            let mut extra = vec![];
            if rank <= MAX_REPORTED_RANK {
                let mut strides_w = vec![];
                for &(s, st) in &parts {
                    extra.push(x.cast_to(s, DType::I32));
                    strides_w.push(x.cast_to(st, DType::I32));
                }
                let pad = x.int_const(DType::I32, 0);
                extra.resize(MAX_REPORTED_RANK, pad);
                extra.extend(strides_w);
            }
            Ok((el, v, None, extra))
        })
    }

    /// Checked mode: tests hint `hint` on `value` (result `result`) as the checked
    /// interpreter does. A hint some access is widened with is an error when false,
    /// another a warning.
    pub(crate) fn check_hint(&mut self, inst: &Inst, value: Value, hint: &HintKind) -> Result<()> {
        if !self.opt.checked {
            return Ok(());
        }
        let (dist, unit) = match self.get(value)?.clone() {
            TVal::Data(d) if !self.dtype(value).is_float() && self.dtype(value) != DType::I1 => {
                (d, 1)
            }
            TVal::Ptr { off, .. } => {
                let size = match self.k.ty(value).elem() {
                    Some(Elem::Ptr(p)) => p.size_bytes() as i64,
                    _ => 1,
                };
                (
                    off,
                    if matches!(hint, HintKind::MultipleOf(_)) {
                        size
                    } else {
                        1
                    },
                )
            }
            _ => return Ok(()),
        };
        let (name, per): (&'static str, Vec<i64>) = match hint {
            HintKind::MultipleOf(p) => (
                "multiple_of",
                p.iter().map(|&k| (k as i64 / unit).max(1)).collect(),
            ),
            HintKind::MaxContiguous(p) => ("max_contiguous", p.iter().map(|&k| k as i64).collect()),
            HintKind::MaxConstancy(p) => ("max_constancy", p.iter().map(|&k| k as i64).collect()),
        };
        let widens = inst
            .results
            .first()
            .is_none_or(|&r| crate::lower::axis_info::hint_widens_an_access(self.k, r));
        let slot = if widens { ERROR_SLOT } else { WARNING_SLOT };
        let shape = self.shape(value);
        let rank = shape.len();
        let mut dims: Vec<(usize, i64)> = vec![];
        if rank == 0 {
            if let (HintKind::MultipleOf(_), Some(&k)) = (hint, per.first()) {
                dims.push((0, k));
            }
        } else if per.len() == rank {
            dims.extend(per.iter().enumerate().map(|(d, &k)| (d, k)));
        } else if let Some(&k) = per.first() {
            dims.push((rank - 1, k));
        }
        for (d, k) in dims {
            if k <= 1 {
                continue;
            }
            let len = shape.get(d).copied().unwrap_or(1) as i64;
            let group = k.min(len.max(1));
            let rule = match hint {
                HintKind::MultipleOf(_) => HintRule::MultipleOf(k),
                HintKind::MaxContiguous(_) => HintRule::Contiguous(group),
                HintKind::MaxConstancy(_) => HintRule::Constancy(group),
            };
            let site = self.new_site(
                CheckKind::Hint {
                    name,
                    rule: rule.clone(),
                    widens,
                },
                shape.clone(),
            );
            self.check_hint_dim(&dist, &shape, d, rule, slot, site)?;
        }
        Ok(())
    }

    /// One dimension of a hint check.
    fn check_hint_dim(
        &mut self,
        dist: &Dist,
        shape: &[u32],
        d: usize,
        rule: HintRule,
        slot: u32,
        site: u32,
    ) -> Result<()> {
        let (layout, regs) = match dist {
            Dist::Uniform(r) => (None, vec![*r]),
            Dist::Regs { layout, regs } => (Some(layout.clone()), regs.clone()),
        };
        let dt = self.out.reg_ty(regs[0]).dtype;
        let one = self.int_const(dt, 1);
        let zero = self.int_const(dt, 0);
        let len = shape.get(d).copied().unwrap_or(1);
        let inner: u32 = shape.get(d + 1..).map_or(1, |s| s.iter().product());
        // Each register's coordinate along `d` and the value before it there.
        let (coords, prev, elements) = match &layout {
            None => {
                // Every element holds the same value.
                let c = vec![self.int_const(DType::I32, 0)];
                (c, regs.clone(), vec![self.int_const(DType::I32, 0)])
            }
            Some(l) => {
                let coords = self.coordinates(l, d, 0)?;
                let elements = self.elements(Some(l))?;
                let prev = self.previous_along(l, &regs, &elements, inner, dt)?;
                (coords, prev, elements)
            }
        };
        let uniform = layout.is_none();
        let mut bads = vec![];
        for (i, &x) in regs.iter().enumerate() {
            let next = self.assign(dt, Expr::Binary(BinaryOp::Add, prev[i], one));
            let bad = match rule {
                HintRule::MultipleOf(k) => {
                    let kk = self.int_const(dt, k);
                    let rem = self.assign(dt, Expr::Binary(BinaryOp::Rem, x, kk));
                    let not_multiple = self.cmp(CmpPred::Ne, rem, zero);
                    if uniform {
                        not_multiple
                    } else {
                        let z = self.int_const(DType::I32, 0);
                        let first = self.cmp(CmpPred::Eq, coords[i], z);
                        let broken = self.cmp(CmpPred::Ne, next, x);
                        let starts = self.i1_or(first, broken);
                        self.i1_and(starts, not_multiple)
                    }
                }
                HintRule::Contiguous(g) | HintRule::Constancy(g) => {
                    if uniform {
                        // A splat: constant, so never contiguous past one element.
                        if matches!(rule, HintRule::Constancy(_)) || g <= 1 || len <= 1 {
                            continue;
                        }
                        self.constant(DType::I1, Const::Bool(true))
                    } else {
                        let gg = self.int_const(DType::I32, g);
                        let r = self.assign(DType::I32, Expr::Binary(BinaryOp::Rem, coords[i], gg));
                        let z = self.int_const(DType::I32, 0);
                        let inside = self.cmp(CmpPred::Ne, r, z);
                        let want = if matches!(rule, HintRule::Contiguous(_)) {
                            next
                        } else {
                            prev[i]
                        };
                        let broken = self.cmp(CmpPred::Ne, want, x);
                        self.i1_and(inside, broken)
                    }
                }
            };
            bads.push((i, bad));
        }
        let Some(any) = bads.iter().map(|b| b.1).reduce(|a, b| self.i1_or(a, b)) else {
            return Ok(());
        };
        self.report(slot, site, any, |x| {
            let pick = |x: &mut Self, f: &dyn Fn(usize) -> Reg, dtype: DType| -> Reg {
                let (last, _) = bads[bads.len() - 1];
                let mut r = f(last);
                for &(i, b) in bads.iter().rev().skip(1) {
                    r = x.select(dtype, b, f(i), r);
                }
                r
            };
            let el = if uniform {
                // The first offending element of a splat: coordinate 1 along `d` for
                // runs and groups, 0 for multiples.
                let at = if matches!(rule, HintRule::MultipleOf(_)) {
                    0
                } else {
                    inner
                };
                x.int_const(DType::I32, at as i64)
            } else {
                pick(x, &|i| elements[i], DType::I32)
            };
            let v = pick(x, &|i| regs[i], dt);
            let p = pick(x, &|i| prev[i], dt);
            Ok((el, v, Some(p), vec![]))
        })
    }

    /// For each register of `layout` (holding `regs`, row-major element `elements`),
    /// the value of the element `inner` places before it (itself for the first along
    /// the dimension: callers do not use it there), through shared memory in rounds of
    /// at most [`HINT_ROUND`] elements.
    fn previous_along(
        &mut self,
        layout: &LinearLayout,
        regs: &[Reg],
        elements: &[Reg],
        inner: u32,
        dt: DType,
    ) -> Result<Vec<Reg>> {
        let numel: u32 = layout.shape().iter().product();
        let round = numel.min(HINT_ROUND);
        let rounds = numel.div_ceil(round);
        let arr = self.scratch_for(dt, round);
        let step = self.int_const(DType::I32, inner as i64);
        let zero = self.int_const(DType::I32, 0);
        let wanted: Vec<Reg> = elements
            .iter()
            .map(|&e| {
                let w = self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, e, step));
                self.assign(DType::I32, Expr::Binary(BinaryOp::Max, w, zero))
            })
            .collect();
        let mut prev: Vec<Reg> = regs.to_vec();
        for r in 0..rounds {
            let base = self.int_const(DType::I32, (r * round) as i64);
            let end = self.int_const(DType::I32, ((r + 1) * round) as i64);
            self.emit(Stmt::Barrier);
            for (i, &e) in elements.iter().enumerate() {
                let at = self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, e, base));
                let store = Stmt::SharedStore {
                    arr,
                    index: at,
                    value: regs[i],
                };
                if rounds == 1 {
                    self.emit(store);
                } else {
                    let lo = self.cmp(CmpPred::Ge, e, base);
                    let hi = self.cmp(CmpPred::Lt, e, end);
                    let inside = self.i1_and(lo, hi);
                    self.emit(Stmt::If {
                        cond: inside,
                        then_body: vec![store],
                        else_body: vec![],
                    });
                }
            }
            self.emit(Stmt::Barrier);
            for (i, &w) in wanted.iter().enumerate() {
                if rounds == 1 {
                    prev[i] = self.assign(dt, Expr::SharedLoad { arr, index: w });
                } else {
                    let lo = self.cmp(CmpPred::Ge, w, base);
                    let hi = self.cmp(CmpPred::Lt, w, end);
                    let inside = self.i1_and(lo, hi);
                    let at = self.assign(DType::I32, Expr::Binary(BinaryOp::Sub, w, base));
                    let safe = self.select(DType::I32, inside, at, zero);
                    let v = self.assign(dt, Expr::SharedLoad { arr, index: safe });
                    prev[i] = self.select(dt, inside, v, prev[i]);
                }
            }
        }
        self.emit(Stmt::Barrier);
        Ok(prev)
    }
}
