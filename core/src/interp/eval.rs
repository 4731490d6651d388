//! The evaluator: the per-launch state ([`Interp`]) and the dispatch of every op.
//!
//! Values live in a table indexed by [`Value`] id, allocated once per launch and reused
//! by every program (SSA: each value is overwritten before it is read again). An op
//! reads its operands by reference, builds its result tile in one pass, and stores it.

use super::arith;
use super::error::{self, Oob};
use super::memory::{self, Memory, SKIP};
use super::schedule::Handle;
use super::value::{
    round1, row_major, strided, wrap1, BlockPtr, Data, PtrTile, Roots, RtValue, Tile,
};
use crate::diag::{Diagnostic, Result, Span};
use crate::ir::{Block, Const, DType, Elem, Inst, Kernel, Op, Padding, Type, Value};
use std::collections::HashMap;

/// How a block ended.
pub enum Term {
    /// The kernel body ran to its end.
    Fall,
    /// `yield` with these values.
    Yield(Vec<RtValue>),
    /// `condition` of a while's before-block.
    Cond(bool, Vec<RtValue>),
}

/// The lanes of a memory access: roots, element offsets, optional mask, pointee.
type Lanes = (Roots, Vec<i64>, Option<Vec<i64>>, DType);

/// The interpreter state of one launch.
pub struct Interp<'a> {
    pub k: &'a Kernel,
    pub vals: Vec<Option<RtValue>>,
    pub pid: [u32; 3],
    pub grid: [u32; 3],
    pub mem: Memory<'a>,
    pub checked: bool,
    /// Loop iterations run by the launch so far (all programs).
    pub steps: u64,
    /// `TILEWISE_STEP_LIMIT`, when set.
    pub step_limit: Option<u64>,
    /// The scheduler, when programs are interleaved (the kernel has a `while`).
    pub handle: Option<Handle<'a>>,
    /// Where checked mode's warnings go (false hints no access depends on).
    pub warnings: Option<super::Warnings>,
    /// Per hint (by result): whether the lowering widens an access with it.
    hint_used: HashMap<Value, bool>,
    /// Scratch for lane resolution.
    lanes: Vec<usize>,
}

impl<'a> Interp<'a> {
    pub fn new(k: &'a Kernel, grid: [u32; 3], mem: Memory<'a>, checked: bool) -> Interp<'a> {
        Interp {
            k,
            vals: vec![None; k.values.len()],
            pid: [0; 3],
            grid,
            mem,
            checked,
            steps: 0,
            step_limit: None,
            handle: None,
            warnings: None,
            hint_used: HashMap::new(),
            lanes: vec![],
        }
    }

    /// A false hint: an error where the lowering widens an access with it (results
    /// could change), otherwise a warning (reported once a hint).
    fn false_hint_found(&mut self, inst: &'a Inst, d: Diagnostic) -> Result<()> {
        let Some(&r) = inst.results.first() else {
            return Err(d);
        };
        let k = self.k;
        let used = *self
            .hint_used
            .entry(r)
            .or_insert_with(|| crate::lower::axis_info::hint_widens_an_access(k, r));
        if used {
            return Err(d.with_note(
                "the GPU lowerings use this hint to widen a memory access, so its results could change",
            ));
        }
        let d = d.with_note(
            "reported as a warning: no memory access is widened with this hint, so it cannot change a result",
        );
        if let Some(w) = &self.warnings {
            let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
            if !w.iter().any(|x| x.primary == d.primary) {
                w.push(d);
            }
        }
        Ok(())
    }

    // ---- value access -------------------------------------------------------------

    pub fn ierr(&self, span: Span, msg: impl Into<String>) -> Diagnostic {
        error::internal(self.k, span, msg)
    }

    pub fn rt_err(&self, span: Span, what: &str, detail: &str) -> Diagnostic {
        error::runtime(self.k, span, self.pid, what, detail)
    }

    pub fn get(&self, v: Value, span: Span) -> Result<&RtValue> {
        match self.vals.get(v.0 as usize) {
            Some(Some(x)) => Ok(x),
            _ => Err(self.ierr(span, format!("{v} read before it was defined"))),
        }
    }

    pub fn tile(&self, v: Value, span: Span) -> Result<&Tile> {
        match self.get(v, span)? {
            RtValue::Data(t) => Ok(t),
            _ => Err(self.ierr(span, format!("{v} is not a data tile"))),
        }
    }

    pub fn ptr(&self, v: Value, span: Span) -> Result<&PtrTile> {
        match self.get(v, span)? {
            RtValue::Ptr(t) => Ok(t),
            _ => Err(self.ierr(span, format!("{v} is not a pointer tile"))),
        }
    }

    pub fn bptr(&self, v: Value, span: Span) -> Result<&BlockPtr> {
        match self.get(v, span)? {
            RtValue::Block(b) => Ok(b),
            _ => Err(self.ierr(span, format!("{v} is not a block pointer"))),
        }
    }

    /// An integer scalar (element 0 of an integer tile).
    pub fn int(&self, v: Value, span: Span) -> Result<i64> {
        match &self.tile(v, span)?.data {
            Data::I(x) if !x.is_empty() => Ok(x[0]),
            _ => Err(self.ierr(span, format!("{v} is not an integer scalar"))),
        }
    }

    pub fn ints(&self, vs: &[Value], span: Span) -> Result<Vec<i64>> {
        vs.iter().map(|v| self.int(*v, span)).collect()
    }

    pub fn set(&mut self, v: Value, x: RtValue) {
        self.vals[v.0 as usize] = Some(x);
    }

    /// The type of a value (borrowed from the kernel, not from `self`).
    pub fn ty(&self, v: Value) -> &'a Type {
        self.k.ty(v)
    }

    pub fn shape(&self, v: Value) -> &'a [u32] {
        self.k.ty(v).shape()
    }

    pub fn dtype(&self, v: Value, span: Span) -> Result<DType> {
        self.k
            .ty(v)
            .dtype()
            .ok_or_else(|| self.ierr(span, format!("{v} is not a data tile")))
    }

    fn res0(&self, inst: &Inst) -> Result<Value> {
        inst.results
            .first()
            .copied()
            .ok_or_else(|| self.ierr(inst.span, format!("`{}` has no result", inst.op.name())))
    }

    fn data(&mut self, inst: &Inst, dtype: DType, data: Data) -> Result<()> {
        let r = self.res0(inst)?;
        self.set(r, RtValue::Data(Tile::new(dtype, data)));
        Ok(())
    }

    fn with_msg<T>(&self, span: Span, r: std::result::Result<T, String>) -> Result<T> {
        r.map_err(|m| self.ierr(span, m))
    }

    // ---- execution ----------------------------------------------------------------

    /// Runs a block to its terminator.
    pub fn exec_block(&mut self, b: &'a Block) -> Result<Term> {
        for inst in &b.insts {
            match &inst.op {
                Op::Yield(vals) => {
                    let out = vals
                        .iter()
                        .map(|v| self.get(*v, inst.span).cloned())
                        .collect::<Result<_>>()?;
                    return Ok(Term::Yield(out));
                }
                Op::Condition { cond, args } => {
                    let c = self.int(*cond, inst.span)? != 0;
                    let out = args
                        .iter()
                        .map(|v| self.get(*v, inst.span).cloned())
                        .collect::<Result<_>>()?;
                    return Ok(Term::Cond(c, out));
                }
                _ => self.exec(inst)?,
            }
        }
        Ok(Term::Fall)
    }

    fn exec(&mut self, inst: &'a Inst) -> Result<()> {
        let sp = inst.span;
        match &inst.op {
            Op::Const(c) => {
                let r = self.res0(inst)?;
                let ty = self.ty(r);
                let dt = self.dtype(r, sp)?;
                let n = ty.numel();
                let data = match *c {
                    Const::Float(f) if dt.is_float() => Data::F(vec![round1(dt, f); n]),
                    Const::Float(f) => Data::I(vec![arith::f2i(f, dt); n]),
                    Const::Int(i) if dt.is_float() => {
                        Data::F(vec![arith::i2f(i, DType::I64, dt); n])
                    }
                    Const::Int(i) if dt == DType::I1 => Data::I(vec![(i != 0) as i64; n]),
                    Const::Int(i) => Data::I(vec![wrap1(dt, i); n]),
                    Const::Bool(b) if dt.is_float() => Data::F(vec![b as i64 as f64; n]),
                    Const::Bool(b) => Data::I(vec![b as i64; n]),
                };
                self.data(inst, dt, data)
            }
            Op::ProgramId { axis } | Op::NumPrograms { axis } => {
                let a = *axis as usize;
                if a > 2 {
                    return Err(self.ierr(sp, format!("program axis {a}")));
                }
                let v = if matches!(inst.op, Op::ProgramId { .. }) {
                    self.pid[a]
                } else {
                    self.grid[a]
                };
                let dt = self.dtype(self.res0(inst)?, sp)?;
                self.data(inst, dt, Data::I(vec![wrap1(dt, v as i64)]))
            }
            Op::Arange { start, end } => {
                let dt = self.dtype(self.res0(inst)?, sp)?;
                self.data(
                    inst,
                    dt,
                    Data::I((*start..*end).map(|x| wrap1(dt, x)).collect()),
                )
            }
            Op::Splat(x) => {
                let n = self.ty(self.res0(inst)?).numel();
                let out = match self.get(*x, sp)? {
                    RtValue::Data(t) => RtValue::Data(Tile::new(
                        t.dtype,
                        match &t.data {
                            Data::F(v) => Data::F(vec![v[0]; n]),
                            Data::I(v) => Data::I(vec![v[0]; n]),
                        },
                    )),
                    RtValue::Ptr(p) => RtValue::Ptr(PtrTile {
                        pointee: p.pointee,
                        roots: Roots::One(p.roots.get(0)),
                        offs: vec![p.offs[0]; n],
                    }),
                    RtValue::Block(_) => return Err(self.ierr(sp, "splat of a block pointer")),
                };
                self.set(inst.results[0], out);
                Ok(())
            }
            Op::Broadcast(x) => {
                let r = self.res0(inst)?;
                let src = self.shape(*x);
                let dst = self.shape(r);
                if src.len() != dst.len() {
                    return Err(self.ierr(sp, "broadcast changes the rank"));
                }
                let rm = row_major(src);
                let strides: Vec<usize> = (0..src.len())
                    .map(|d| if src[d] == 1 { 0 } else { rm[d] })
                    .collect();
                let out = self.gather_value(*x, sp, dst, &strides)?;
                self.set(r, out);
                Ok(())
            }
            Op::ExpandDims { value, .. } | Op::Reshape(value) => {
                let out = self.get(*value, sp)?.clone();
                self.set(self.res0(inst)?, out);
                Ok(())
            }
            Op::Permute { value, perm } => {
                let r = self.res0(inst)?;
                let src = self.shape(*value);
                let rm = row_major(src);
                if perm.len() != src.len() || perm.iter().any(|&p| p as usize >= src.len()) {
                    return Err(self.ierr(sp, "bad permutation"));
                }
                let strides: Vec<usize> = perm.iter().map(|&p| rm[p as usize]).collect();
                let out = self.gather_value(*value, sp, self.shape(r), &strides)?;
                self.set(r, out);
                Ok(())
            }
            Op::Unary { op, value } => {
                let t = self.tile(*value, sp)?;
                let d = self.with_msg(sp, arith::unary(*op, t.dtype, &t.data))?;
                let dt = t.dtype;
                self.data(inst, dt, d)
            }
            Op::Binary { op, lhs, rhs } => {
                let (a, b) = (self.tile(*lhs, sp)?, self.tile(*rhs, sp)?);
                let d = self.with_msg(sp, arith::binary(*op, a.dtype, &a.data, &b.data))?;
                let dt = a.dtype;
                self.data(inst, dt, d)
            }
            Op::Cmp { pred, lhs, rhs } => {
                let d = match (self.get(*lhs, sp)?, self.get(*rhs, sp)?) {
                    (RtValue::Data(a), RtValue::Data(b)) => {
                        self.with_msg(sp, arith::cmp(*pred, a.dtype, &a.data, &b.data))?
                    }
                    // Pointer comparison: by (root, offset).
                    (RtValue::Ptr(a), RtValue::Ptr(b)) => {
                        let key = |p: &PtrTile| -> Vec<i64> {
                            (0..p.offs.len())
                                .map(|i| ((p.roots.get(i) as i64) << 48).wrapping_add(p.offs[i]))
                                .collect()
                        };
                        self.with_msg(
                            sp,
                            arith::cmp(*pred, DType::I64, &Data::I(key(a)), &Data::I(key(b))),
                        )?
                    }
                    _ => return Err(self.ierr(sp, "cmp operands of different kinds")),
                };
                self.data(inst, DType::I1, d)
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = match &self.tile(*cond, sp)?.data {
                    Data::I(c) => c,
                    _ => return Err(self.ierr(sp, "select condition is not i1")),
                };
                let out = match (self.get(*on_true, sp)?, self.get(*on_false, sp)?) {
                    (RtValue::Data(t), RtValue::Data(f)) => RtValue::Data(Tile::new(
                        t.dtype,
                        match (&t.data, &f.data) {
                            (Data::F(x), Data::F(y)) => Data::F(arith::select(c, x, y)),
                            (Data::I(x), Data::I(y)) => Data::I(arith::select(c, x, y)),
                            _ => return Err(self.ierr(sp, "select operands differ")),
                        },
                    )),
                    (RtValue::Ptr(t), RtValue::Ptr(f)) => {
                        let offs = arith::select(c, &t.offs, &f.offs);
                        let roots = match (&t.roots, &f.roots) {
                            (Roots::One(a), Roots::One(b)) if a == b => Roots::One(*a),
                            _ => Roots::Many(
                                (0..c.len())
                                    .map(|i| {
                                        if c[i] != 0 {
                                            t.roots.get(i)
                                        } else {
                                            f.roots.get(i)
                                        }
                                    })
                                    .collect(),
                            ),
                        };
                        RtValue::Ptr(PtrTile {
                            pointee: t.pointee,
                            roots,
                            offs,
                        })
                    }
                    _ => return Err(self.ierr(sp, "select of block pointers")),
                };
                self.set(self.res0(inst)?, out);
                Ok(())
            }
            Op::Fma { a, b, c } => {
                let (x, y, z) = (self.tile(*a, sp)?, self.tile(*b, sp)?, self.tile(*c, sp)?);
                let d = self.with_msg(sp, arith::fma(x.dtype, &x.data, &y.data, &z.data))?;
                let dt = x.dtype;
                self.data(inst, dt, d)
            }
            Op::Cast { value, bitcast } => {
                let r = self.res0(inst)?;
                match (self.get(*value, sp)?, self.ty(r).elem()) {
                    (RtValue::Data(t), Some(Elem::Data(to))) => {
                        let d = self.with_msg(sp, arith::cast(t.dtype, to, &t.data, *bitcast))?;
                        self.data(inst, to, d)
                    }
                    (RtValue::Ptr(p), Some(Elem::Ptr(to)))
                        if p.pointee.size_bytes() == to.size_bytes() =>
                    {
                        let out = PtrTile {
                            pointee: to,
                            ..p.clone()
                        };
                        self.set(r, RtValue::Ptr(out));
                        Ok(())
                    }
                    // Pointers as data: through the addresses of `crate::address`.
                    (RtValue::Ptr(p), Some(Elem::Ptr(to))) => {
                        let addrs = self.addresses(p);
                        let out = self.pointers_at(&addrs, to);
                        self.set(r, RtValue::Ptr(out));
                        Ok(())
                    }
                    (RtValue::Ptr(p), Some(Elem::Data(to))) => {
                        let addrs = self.addresses(p);
                        let d = Data::I(addrs.into_iter().map(|a| a as i64).collect());
                        self.data(inst, to, d)
                    }
                    (RtValue::Data(t), Some(Elem::Ptr(to))) => {
                        let Data::I(a) = &t.data else {
                            return Err(self.ierr(sp, "an address that is not an integer"));
                        };
                        let addrs: Vec<u64> = a.iter().map(|&x| x as u64).collect();
                        let out = self.pointers_at(&addrs, to);
                        self.set(r, RtValue::Ptr(out));
                        Ok(())
                    }
                    _ => Err(self.rt_err(sp, "unsupported cast", "between pointers and data")),
                }
            }
            Op::AddPtr { ptr, offset } => {
                let p = self.ptr(*ptr, sp)?;
                let o = match &self.tile(*offset, sp)?.data {
                    Data::I(o) => o,
                    _ => return Err(self.ierr(sp, "addptr offset is not an integer tile")),
                };
                let offs: Vec<i64> = p
                    .offs
                    .iter()
                    .zip(o)
                    .map(|(&a, &b)| a.wrapping_add(b))
                    .collect();
                let out = PtrTile {
                    pointee: p.pointee,
                    roots: p.roots.clone(),
                    offs,
                };
                self.set(self.res0(inst)?, RtValue::Ptr(out));
                Ok(())
            }
            Op::MakeBlockPtr {
                base,
                shape,
                strides,
                offsets,
                order,
            } => self.make_block_ptr(inst, *base, shape, strides, offsets, order),
            Op::Advance { ptr, deltas } => {
                let mut bp = self.bptr(*ptr, sp)?.clone();
                let d = self.ints(deltas, sp)?;
                if d.len() != bp.offsets.len() {
                    return Err(self.ierr(sp, "advance rank differs from the block pointer's"));
                }
                for (o, x) in bp.offsets.iter_mut().zip(d) {
                    *o = o.wrapping_add(x);
                }
                self.set(self.res0(inst)?, RtValue::Block(Box::new(bp)));
                Ok(())
            }
            Op::Load {
                ptr,
                mask,
                other,
                boundary_check,
                padding,
                ..
            } => self.load(inst, *ptr, *mask, *other, boundary_check, *padding),
            Op::Store {
                ptr,
                value,
                mask,
                boundary_check,
                ..
            } => self.store(inst, *ptr, *value, *mask, boundary_check),
            Op::Atomic {
                op,
                ptr,
                value,
                mask,
            } => self.atomic(inst, Some(*op), *ptr, None, *value, *mask),
            Op::AtomicCas { ptr, cmp, value } => {
                self.atomic(inst, None, *ptr, Some(*cmp), *value, None)
            }
            Op::Dot { a, b, acc, .. } => {
                let r = self.res0(inst)?;
                let (sa, sb) = (self.shape(*a), self.shape(*b));
                if sa.len() != 2 || sb.len() != 2 {
                    return Err(self.ierr(sp, "dot operands are not 2-D"));
                }
                let (m, k, n) = (sa[0] as usize, sa[1] as usize, sb[1] as usize);
                let out = self.dtype(r, sp)?;
                let (ta, tb, tc) = (self.tile(*a, sp)?, self.tile(*b, sp)?, self.tile(*acc, sp)?);
                let d = super::dot::dot(
                    (m, n, k),
                    (&ta.data, ta.dtype),
                    (&tb.data, tb.dtype),
                    &tc.data,
                    out,
                );
                let d = self.with_msg(sp, d)?;
                self.data(inst, out, d)
            }
            Op::Reduce {
                operands,
                axis,
                combiner,
            } => self.reduce(inst, operands, *axis, combiner),
            Op::Scan {
                operands,
                axis,
                reverse,
                combiner,
            } => self.scan(inst, operands, *axis, *reverse, combiner),
            Op::Hint { value, hint } => {
                if self.checked {
                    if let Some(d) = self.check_hint(inst, *value, hint)? {
                        self.false_hint_found(inst, d)?;
                    }
                }
                let out = self.get(*value, sp)?.clone();
                self.set(self.res0(inst)?, out);
                Ok(())
            }
            Op::DevicePrint {
                prefix,
                values,
                hex,
            } => self.device_print(inst, prefix, values, *hex),
            Op::DeviceAssert { cond, message } => self.device_assert(inst, *cond, message),
            Op::CheckBlockPtr {
                base,
                shape,
                strides,
            } => self.check_block_ptr(inst, *base, shape, strides),
            // A whole tile is one step here: nothing to order.
            Op::Barrier => Ok(()),
            Op::For {
                lower,
                upper,
                step,
                init,
                body,
                ..
            } => self.exec_for(inst, *lower, *upper, *step, init, body),
            Op::If {
                cond,
                then_block,
                else_block,
            } => self.exec_if(inst, *cond, then_block, else_block),
            Op::While {
                init,
                before,
                after,
            } => self.exec_while(inst, init, before, after),
            Op::Yield(_) | Op::Condition { .. } => Err(self.ierr(
                sp,
                format!("`{}` outside the end of a nested block", inst.op.name()),
            )),
        }
    }

    /// A data or pointer tile gathered to `shape` with per-dimension source strides.
    fn gather_value(
        &self,
        v: Value,
        sp: Span,
        shape: &[u32],
        strides: &[usize],
    ) -> Result<RtValue> {
        Ok(match self.get(v, sp)? {
            RtValue::Data(t) => RtValue::Data(Tile::new(
                t.dtype,
                match &t.data {
                    Data::F(x) => Data::F(strided(x, shape, strides)),
                    Data::I(x) => Data::I(strided(x, shape, strides)),
                },
            )),
            RtValue::Ptr(p) => RtValue::Ptr(PtrTile {
                pointee: p.pointee,
                roots: match &p.roots {
                    Roots::One(r) => Roots::One(*r),
                    Roots::Many(rs) => Roots::Many(strided(rs, shape, strides)),
                },
                offs: strided(&p.offs, shape, strides),
            }),
            RtValue::Block(_) => return Err(self.ierr(sp, "broadcast of a block pointer")),
        })
    }

    fn make_block_ptr(
        &mut self,
        inst: &Inst,
        base: Value,
        shape: &[Value],
        strides: &[Value],
        offsets: &[Value],
        order: &[u32],
    ) -> Result<()> {
        let sp = inst.span;
        let r = self.res0(inst)?;
        let (pointee, block) = match self.ty(r) {
            Type::BlockPtr {
                pointee,
                block_shape,
            } => (*pointee, block_shape.clone()),
            _ => return Err(self.ierr(sp, "make_block_ptr result is not a block pointer")),
        };
        let p = self.ptr(base, sp)?;
        let (root, base_off) = (p.roots.get(0), p.offs[0]);
        let bp = BlockPtr {
            pointee,
            root,
            base: base_off,
            shape: self.ints(shape, sp)?,
            strides: self.ints(strides, sp)?,
            offsets: self.ints(offsets, sp)?,
            block,
            order: order.to_vec(),
        };
        let rank = bp.block.len();
        if bp.shape.len() != rank || bp.strides.len() != rank || bp.offsets.len() != rank {
            return Err(self.ierr(
                sp,
                "make_block_ptr: shape, strides, offsets and block shape differ in rank",
            ));
        }
        if self.checked {
            self.check_extent(sp, &bp)?;
        }
        self.set(r, RtValue::Block(Box::new(bp)));
        Ok(())
    }

    /// Checked mode: the block pointer `bp` stays inside its buffer view.
    fn check_extent(&self, sp: Span, bp: &BlockPtr) -> Result<()> {
        let Some((lo, hi)) = memory::declared_extent(bp) else {
            return Ok(());
        };
        let len = self.view_len(bp.root, bp.pointee);
        if lo < 0 || hi >= len as i64 {
            let bad = if lo < 0 { lo } else { hi };
            return Err(self.rt_err(
                sp,
                "block pointer reaches past its buffer",
                &format!(
                    "its declared shape {:?} with strides {:?} covers element index {bad}, \
                     outside a buffer of {len} elements ({})",
                    bp.shape,
                    bp.strides,
                    self.root_name(bp.root)
                ),
            ));
        }
        Ok(())
    }

    /// `check_block_ptr` (lowered IR in checked mode): as `make_block_ptr` checks.
    fn check_block_ptr(
        &mut self,
        inst: &Inst,
        base: Value,
        shape: &[Value],
        strides: &[Value],
    ) -> Result<()> {
        let sp = inst.span;
        let p = self.ptr(base, sp)?;
        let bp = BlockPtr {
            pointee: p.pointee,
            root: p.roots.get(0),
            base: p.offs[0],
            shape: self.ints(shape, sp)?,
            strides: self.ints(strides, sp)?,
            offsets: vec![0; shape.len()],
            block: vec![1; shape.len()],
            order: (0..shape.len() as u32).rev().collect(),
        };
        self.check_extent(sp, &bp)
    }

    /// The address of every lane of `p` (`crate::address`).
    fn addresses(&self, p: &PtrTile) -> Vec<u64> {
        p.offs
            .iter()
            .enumerate()
            .map(|(i, &o)| self.mem.address_of(p.roots.get(i), p.pointee, o))
            .collect()
    }

    /// Pointers to `pointee` at `addrs`.
    fn pointers_at(&self, addrs: &[u64], pointee: DType) -> PtrTile {
        let (roots, offs): (Vec<u32>, Vec<i64>) = addrs
            .iter()
            .map(|&a| self.mem.root_of_address(a, pointee))
            .unzip();
        let roots = match roots.first() {
            Some(&r) if roots.iter().all(|&x| x == r) => Roots::One(r),
            _ => Roots::Many(roots),
        };
        PtrTile {
            pointee,
            roots,
            offs,
        }
    }

    pub fn view_len(&self, root: u32, pointee: DType) -> usize {
        self.mem.view_of(root, pointee).map(|v| v.len).unwrap_or(0)
    }

    /// The parameter's name for a parameter's root, [`Self::root_name`] otherwise.
    pub fn root_label(&self, root: u32) -> String {
        match self.k.params.get(root as usize) {
            Some(p) if self.mem.is_param(root) => p.name.clone(),
            _ => self.root_name(root),
        }
    }

    /// What root `root` is, for messages: "argument `x`", or the buffer an address
    /// reached.
    pub fn root_name(&self, root: u32) -> String {
        if self.mem.is_param(root) {
            let name = self.k.params.get(root as usize).map(|p| p.name.as_str());
            format!("argument `{}`", name.unwrap_or("?"))
        } else if root == memory::NO_BUFFER {
            "no buffer: the address is not one of this launch's memory".to_string()
        } else {
            format!(
                "buffer {} reached through an address",
                root as usize - self.mem.views.len()
            )
        }
    }

    fn oob(&self, inst: &Inst, what: &str, shape: &[u32], e: Oob) -> Diagnostic {
        let idx = super::value::unflatten(e.lane, shape);
        self.rt_err(
            inst.span,
            &format!("out-of-bounds {what}"),
            &format!(
                "element index {} of a buffer of {} elements ({})",
                e.index,
                e.len,
                self.root_name(e.param)
            ),
        )
        .with_note(format!(
            "at lane {} of the {} tile",
            super::value::fmt_index(&idx),
            crate::ir::fmt_shape(shape)
        ))
        .with_note("mask the access (mask=, boundary_check=) or fix the offsets")
    }

    /// The pointer lanes of a load/store/atomic: (roots, offsets, mask).
    fn lanes_of(
        &self,
        inst: &Inst,
        ptr: Value,
        mask: Option<Value>,
        boundary_check: &[u32],
    ) -> Result<Lanes> {
        let sp = inst.span;
        match self.get(ptr, sp)? {
            RtValue::Ptr(p) => {
                let m = match mask {
                    Some(m) => match &self.tile(m, sp)?.data {
                        Data::I(m) => Some(m.clone()),
                        _ => return Err(self.ierr(sp, "mask is not i1")),
                    },
                    None => None,
                };
                Ok((p.roots.clone(), p.offs.clone(), m, p.pointee))
            }
            RtValue::Block(bp) => {
                if let Some(&d) = boundary_check
                    .iter()
                    .find(|&&d| d as usize >= bp.block.len())
                {
                    return Err(self.rt_err(
                        sp,
                        "bad boundary_check",
                        &format!("dimension {d} of a rank-{} block pointer", bp.block.len()),
                    ));
                }
                let (offs, m) = memory::block_lanes(bp, boundary_check);
                Ok((Roots::One(bp.root), offs, m, bp.pointee))
            }
            RtValue::Data(_) => Err(self.ierr(sp, "memory access through a data tile")),
        }
    }

    /// Resolves every root's lanes and calls `f(self, buffer, lanes)` per root.
    #[allow(clippy::too_many_arguments)]
    fn for_each_root(
        &mut self,
        inst: &Inst,
        what: &str,
        shape: &[u32],
        pointee: DType,
        roots: &Roots,
        offs: &[i64],
        mask: Option<&[i64]>,
        mut f: impl FnMut(&mut Self, usize, &[usize]) -> Result<()>,
    ) -> Result<()> {
        let distinct: Vec<u32> = match roots {
            Roots::One(r) => vec![*r],
            Roots::Many(rs) => {
                let mut d = rs.clone();
                d.sort_unstable();
                d.dedup();
                d
            }
        };
        let mut lanes = std::mem::take(&mut self.lanes);
        for root in distinct {
            match self
                .mem
                .resolve(root, pointee, roots, offs, mask, &mut lanes)
            {
                Ok(buffer) => f(self, buffer, &lanes)?,
                Err(e) => {
                    self.lanes = lanes;
                    return Err(self.oob(inst, what, shape, e));
                }
            }
        }
        self.lanes = lanes;
        Ok(())
    }

    fn load(
        &mut self,
        inst: &Inst,
        ptr: Value,
        mask: Option<Value>,
        other: Option<Value>,
        boundary_check: &[u32],
        padding: Padding,
    ) -> Result<()> {
        let sp = inst.span;
        let r = self.res0(inst)?;
        let dt = self.dtype(r, sp)?;
        let shape = self.shape(r);
        let (roots, offs, m, pointee) = self.lanes_of(inst, ptr, mask, boundary_check)?;
        let n = offs.len();
        let mut out = match other {
            Some(o) => {
                let t = self.tile(o, sp)?;
                if t.dtype == pointee {
                    t.data.clone()
                } else {
                    self.with_msg(sp, arith::cast(t.dtype, pointee, &t.data, false))?
                }
            }
            None if padding == Padding::Nan && pointee.is_float() => Data::F(vec![f64::NAN; n]),
            None => Data::zeros(pointee, n),
        };
        if out.len() != n {
            return Err(self.ierr(sp, "load: `other` and pointer tiles differ in size"));
        }
        self.for_each_root(
            inst,
            "load",
            shape,
            pointee,
            &roots,
            &offs,
            m.as_deref(),
            |it, buffer, lanes| {
                if !it.mem.gather(buffer, pointee, lanes, &mut out) {
                    return Err(it.ierr(sp, "load: representation mismatch"));
                }
                Ok(())
            },
        )?;
        if pointee != dt {
            out = self.with_msg(sp, arith::cast(pointee, dt, &out, false))?;
        }
        self.data(inst, dt, out)
    }

    fn store(
        &mut self,
        inst: &Inst,
        ptr: Value,
        value: Value,
        mask: Option<Value>,
        boundary_check: &[u32],
    ) -> Result<()> {
        let sp = inst.span;
        let shape = self.shape(value);
        let (roots, offs, m, pointee) = self.lanes_of(inst, ptr, mask, boundary_check)?;
        let t = self.tile(value, sp)?;
        let vals = if t.dtype == pointee {
            t.data.clone()
        } else {
            self.with_msg(sp, arith::cast(t.dtype, pointee, &t.data, false))?
        };
        let vals = if vals.len() == offs.len() {
            vals
        } else if vals.len() == 1 {
            // A scalar stored through a pointer tile: splat it.
            match vals {
                Data::F(v) => Data::F(vec![v[0]; offs.len()]),
                Data::I(v) => Data::I(vec![v[0]; offs.len()]),
            }
        } else {
            return Err(self.ierr(sp, "store: value and pointer tiles differ in size"));
        };
        self.for_each_root(
            inst,
            "store",
            shape,
            pointee,
            &roots,
            &offs,
            m.as_deref(),
            |it, buffer, lanes| {
                if !it.mem.scatter(buffer, pointee, lanes, &vals) {
                    return Err(it.ierr(sp, "store: representation mismatch"));
                }
                Ok(())
            },
        )
    }

    /// `atomic_*` (with `op`) or `atomic_cas` (with `cmp`): lane by lane, in order.
    fn atomic(
        &mut self,
        inst: &Inst,
        op: Option<crate::ir::AtomicOp>,
        ptr: Value,
        cmp: Option<Value>,
        value: Value,
        mask: Option<Value>,
    ) -> Result<()> {
        use crate::ir::AtomicOp as A;
        let sp = inst.span;
        let r = self.res0(inst)?;
        let shape = self.shape(r);
        let (roots, offs, m, pointee) = self.lanes_of(inst, ptr, mask, &[])?;
        let n = offs.len();
        let conv = |it: &Self, v: Value| -> Result<Data> {
            let t = it.tile(v, sp)?;
            let d = if t.dtype == pointee {
                t.data.clone()
            } else {
                it.with_msg(sp, arith::cast(t.dtype, pointee, &t.data, false))?
            };
            Ok(if d.len() == 1 && n != 1 {
                match d {
                    Data::F(v) => Data::F(vec![v[0]; n]),
                    Data::I(v) => Data::I(vec![v[0]; n]),
                }
            } else {
                d
            })
        };
        let val = conv(self, value)?;
        let cmpv = match cmp {
            Some(c) => Some(conv(self, c)?),
            None => None,
        };
        let mut old = Data::zeros(pointee, n);
        let u64_ = pointee == DType::U64;
        self.for_each_root(
            inst,
            "atomic",
            shape,
            pointee,
            &roots,
            &offs,
            m.as_deref(),
            |it, buffer, lanes| {
                for (i, &l) in lanes.iter().enumerate() {
                    if l == SKIP {
                        continue;
                    }
                    let one = [l];
                    let mut cur = Data::zeros(pointee, 1);
                    it.mem.gather(buffer, pointee, &one, &mut cur);
                    let new = match (&cur, &val) {
                        (Data::F(c), Data::F(v)) => {
                            let (c, v) = (c[0], v[i]);
                            let nv = match (op, &cmpv) {
                                (None, Some(Data::F(k))) => {
                                    if round1(pointee, c).to_bits()
                                        == round1(pointee, k[i]).to_bits()
                                    {
                                        v
                                    } else {
                                        c
                                    }
                                }
                                (Some(A::Add), _) => round1(pointee, c + v),
                                (Some(A::Max), _) => c.max(v),
                                (Some(A::Min), _) => c.min(v),
                                (Some(A::Xchg), _) => v,
                                _ => {
                                    return Err(it.rt_err(
                                        sp,
                                        "unsupported atomic",
                                        &format!("bitwise atomic on {pointee}"),
                                    ))
                                }
                            };
                            if let Data::F(o) = &mut old {
                                o[i] = c;
                            }
                            Data::F(vec![nv])
                        }
                        (Data::I(c), Data::I(v)) => {
                            let (c, v) = (c[0], v[i]);
                            let nv = match (op, &cmpv) {
                                (None, Some(Data::I(k))) => {
                                    if c == k[i] {
                                        v
                                    } else {
                                        c
                                    }
                                }
                                (Some(A::Add), _) => c.wrapping_add(v),
                                (Some(A::Max), _) if u64_ => (c as u64).max(v as u64) as i64,
                                (Some(A::Min), _) if u64_ => (c as u64).min(v as u64) as i64,
                                (Some(A::Max), _) => c.max(v),
                                (Some(A::Min), _) => c.min(v),
                                (Some(A::And), _) => c & v,
                                (Some(A::Or), _) => c | v,
                                (Some(A::Xor), _) => c ^ v,
                                (Some(A::Xchg), _) => v,
                                _ => return Err(it.ierr(sp, "atomic: bad operands")),
                            };
                            if let Data::I(o) = &mut old {
                                o[i] = c;
                            }
                            Data::I(vec![wrap1(pointee, nv)])
                        }
                        _ => return Err(it.ierr(sp, "atomic: representation mismatch")),
                    };
                    it.mem.scatter(buffer, pointee, &one, &new);
                }
                Ok(())
            },
        )?;
        let dt = self.dtype(r, sp)?;
        if dt != pointee {
            old = self.with_msg(sp, arith::cast(pointee, dt, &old, false))?;
        }
        self.data(inst, dt, old)
    }
}
