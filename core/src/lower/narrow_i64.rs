//! Pass: 64-bit address arithmetic in 32 bits, for devices without 64-bit integers.
//!
//! WGSL has no 64-bit integers, yet Triton kernels compute offsets in int64
//! (`pid.to(tl.int64) * stride`, as the attention tutorials do) precisely so that they
//! never overflow. Truncation to 32 bits commutes with `+`, `-`, `*`, `<<`, negation
//! and the bitwise operations (they are ring operations modulo 2^32), so a value built
//! only from those, from casts of narrower integers, constants and parameters, and used
//! only as a pointer offset (or, through more such operations, for one), has the right
//! low 32 bits when computed in 32 bits. A pointer offset's low 32 bits are all of it
//! whenever the access is in bounds (a WGSL buffer has fewer than 2^31 elements); an
//! access out of bounds is already an error (the interpreter and checked modes report
//! it). So such values are narrowed; anything that needs the high bits (comparisons,
//! division, right shifts, minimum and maximum, conversions to floats or booleans,
//! values stored or loaded as data, loop bounds, reductions) keeps the value 64-bit,
//! and the backend then says it has no 64-bit integers.
//!
//! Values are grouped by the operations and control flow that tie their types
//! together (an operation's operands and result, a loop's initial, carried, yielded and
//! final values); a group is narrowed as a whole, or not at all.

use crate::ir::ops::{BinaryOp, Const, Op, UnaryOp};
use crate::ir::{Block, DType, Kernel, Type, Value};

/// Narrows `kernel`'s 64-bit address arithmetic where that is exact.
pub fn narrow_i64(kernel: &Kernel) -> Kernel {
    let n = kernel.values.len();
    let wide = |v: Value| is_wide(kernel.ty(v));
    if !(0..n).any(|i| wide(Value(i as u32))) {
        return kernel.clone();
    }
    let mut g = Groups {
        parent: (0..n).collect(),
        unsafe_: vec![false; n],
        wide: (0..n).map(|i| wide(Value(i as u32))).collect(),
    };
    g.block(kernel, &kernel.body);
    let mut out = kernel.clone();
    let narrowed: Vec<bool> = (0..n)
        .map(|i| {
            let r = g.find(i);
            g.wide[i] && !g.unsafe_[r]
        })
        .collect();
    for (i, v) in out.values.iter_mut().enumerate() {
        if narrowed[i] {
            v.ty = narrow(&v.ty);
        }
    }
    for p in &mut out.params {
        if narrowed[p.value.0 as usize] {
            p.ty = narrow(&p.ty);
        }
    }
    wrap_constants(&mut out.body, &narrowed);
    out
}

fn is_wide(t: &Type) -> bool {
    matches!(t.dtype(), Some(DType::I64 | DType::U64))
}

fn narrow(t: &Type) -> Type {
    match t.dtype() {
        Some(DType::I64) => t.with_dtype(DType::I32),
        Some(DType::U64) => t.with_dtype(DType::U32),
        _ => t.clone(),
    }
}

/// Constants of narrowed values keep their low 32 bits.
fn wrap_constants(b: &mut Block, narrowed: &[bool]) {
    for inst in &mut b.insts {
        if let (Op::Const(Const::Int(c)), [r]) = (&mut inst.op, inst.results.as_slice()) {
            if narrowed[r.0 as usize] {
                *c = *c as i32 as i64;
            }
        }
        for nested in inst.op.blocks_mut() {
            wrap_constants(nested, narrowed);
        }
    }
}

struct Groups {
    parent: Vec<usize>,
    /// Per group root: some member needs its high bits.
    unsafe_: Vec<bool>,
    wide: Vec<bool>,
}

impl Groups {
    fn find(&mut self, i: usize) -> usize {
        let mut r = i;
        while self.parent[r] != r {
            r = self.parent[r];
        }
        let mut i = i;
        while self.parent[i] != r {
            let next = self.parent[i];
            self.parent[i] = r;
            i = next;
        }
        r
    }

    /// Ties the 64-bit values among `vals` together.
    fn tie(&mut self, vals: &[Value]) {
        let wide: Vec<usize> = vals
            .iter()
            .map(|v| v.0 as usize)
            .filter(|&i| self.wide[i])
            .collect();
        for w in wide.windows(2) {
            let (a, b) = (self.find(w[0]), self.find(w[1]));
            if a != b {
                self.parent[a] = b;
                self.unsafe_[b] |= self.unsafe_[a];
            }
        }
    }

    /// The 64-bit values among `vals` need their high bits.
    fn keep(&mut self, vals: &[Value]) {
        for v in vals {
            let i = v.0 as usize;
            if self.wide[i] {
                let r = self.find(i);
                self.unsafe_[r] = true;
            }
        }
    }

    /// Every 64-bit value of a block (and its nested blocks) keeps its high bits.
    fn keep_all(&mut self, b: &Block) {
        self.keep(&b.args);
        for inst in &b.insts {
            self.keep(&inst.results);
            self.keep(&inst.op.operands());
            for nested in inst.op.blocks() {
                self.keep_all(nested);
            }
        }
    }

    fn block(&mut self, k: &Kernel, b: &Block) {
        for inst in &b.insts {
            let r = &inst.results;
            match &inst.op {
                Op::Const(_)
                | Op::ProgramId { .. }
                | Op::NumPrograms { .. }
                | Op::Arange { .. } => {}
                Op::Splat(x) | Op::Broadcast(x) | Op::Reshape(x) => self.tie(&[r[0], *x]),
                Op::ExpandDims { value, .. }
                | Op::Permute { value, .. }
                | Op::Hint { value, .. } => self.tie(&[r[0], *value]),
                Op::Unary {
                    op: UnaryOp::Neg | UnaryOp::Not,
                    value,
                } => self.tie(&[r[0], *value]),
                Op::Binary {
                    op:
                        BinaryOp::Add
                        | BinaryOp::Sub
                        | BinaryOp::Mul
                        | BinaryOp::And
                        | BinaryOp::Or
                        | BinaryOp::Xor
                        | BinaryOp::Shl,
                    lhs,
                    rhs,
                } => self.tie(&[r[0], *lhs, *rhs]),
                Op::Select {
                    on_true, on_false, ..
                } => self.tie(&[r[0], *on_true, *on_false]),
                Op::Cast { value, bitcast } => {
                    let (wf, wt) = (is_wide(k.ty(*value)), is_wide(k.ty(r[0])));
                    let from = k.ty(*value).dtype().unwrap_or(DType::F32);
                    let to = k.ty(r[0]).dtype().unwrap_or(DType::F32);
                    if wf && wt {
                        // Between the two 64-bit types: one group.
                        self.tie(&[r[0], *value]);
                    } else if wt && (*bitcast || !from.is_int()) {
                        // From a float (or bits): the high bits matter.
                        self.keep(&[r[0]]);
                    } else if wf && (*bitcast || !to.is_int() || to == DType::I1) {
                        // To a float or a boolean: the high bits matter.
                        self.keep(&[*value]);
                    }
                    // Otherwise from a narrower integer (its low bits are the value's)
                    // or to one (only the low bits are kept anyway).
                }
                Op::AddPtr { .. } => {}
                Op::For {
                    lower,
                    upper,
                    step,
                    init,
                    body,
                    ..
                } => {
                    self.keep(&[*lower, *upper, *step, body.args[0]]);
                    let yields = yielded(body);
                    for (i, v) in init.iter().enumerate() {
                        let mut t = vec![*v, body.args[1 + i], r[i]];
                        t.extend(yields.get(i));
                        self.tie(&t);
                    }
                    self.block(k, body);
                }
                Op::If {
                    then_block,
                    else_block,
                    ..
                } => {
                    let (a, b) = (yielded(then_block), yielded(else_block));
                    for (i, v) in r.iter().enumerate() {
                        let mut t = vec![*v];
                        t.extend(a.get(i));
                        t.extend(b.get(i));
                        self.tie(&t);
                    }
                    self.block(k, then_block);
                    self.block(k, else_block);
                }
                Op::While {
                    init,
                    before,
                    after,
                } => {
                    let ys = yielded(after);
                    for (i, v) in init.iter().enumerate() {
                        let mut t = vec![*v, before.args[i]];
                        t.extend(ys.get(i));
                        self.tie(&t);
                    }
                    if let Some(Op::Condition { args, .. }) = before.insts.last().map(|i| &i.op) {
                        for (j, a) in args.iter().enumerate() {
                            let mut t = vec![*a];
                            t.extend(after.args.get(j));
                            t.extend(r.get(j));
                            self.tie(&t);
                        }
                    }
                    self.block(k, before);
                    self.block(k, after);
                }
                Op::Yield(_) | Op::Condition { .. } => {}
                Op::Reduce { .. } | Op::Scan { .. } => {
                    self.keep(&inst.op.operands());
                    self.keep(r);
                    for nested in inst.op.blocks() {
                        self.keep_all(nested);
                    }
                }
                _ => {
                    // Everything else (comparisons, division, right shifts, minimum and
                    // maximum, loads, stores, atomics, dots, prints, ...) needs the high
                    // bits of its 64-bit operands and results.
                    self.keep(&inst.op.operands());
                    self.keep(r);
                }
            }
        }
    }
}

fn yielded(b: &Block) -> Vec<Value> {
    match b.insts.last().map(|i| &i.op) {
        Some(Op::Yield(v)) => v.clone(),
        _ => vec![],
    }
}
