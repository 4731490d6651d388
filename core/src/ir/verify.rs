//! The tile IR verifier.
//!
//! Invariants checked (a violation is a bug in whatever produced the IR, reported as an
//! internal [`Diagnostic`] pointing at the instruction):
//! 1. Every operand is defined before use, in the same block or an enclosing one (a
//!    combine region sees only its own arguments).
//! 2. Every value is defined exactly once.
//! 3. Elementwise ops (`Unary`, `Binary`, `Cmp`, `Select`, `Fma`, `Cast`, `AddPtr`)
//!    have operands of the result's shape; `Binary`/`Cmp` operands share a dtype,
//!    `Fma` operands the result's;
//!    `AddPtr` offsets a pointer tile.
//! 4. `Cmp` results, `Select` conditions and `Load` / `Store` / `Atomic` masks are `i1`.
//! 5. Nested blocks end with the right terminator (`Yield`, or `Condition` for a
//!    `While` before-block); a `Yield` carries values of the enclosing op's result
//!    types (in a `While` after-block, of its carried values; in a combine region,
//!    scalars of the combined operands' dtypes); terminators appear nowhere else.
//! 6. `For` bounds are integer scalars of one dtype; `If` and `While` (`Condition`)
//!    conditions are `i1` scalars.
//! 7. `Dot` operands are 2-D with agreeing dimensions (`[M, K] @ [K, N] + [M, N]`).
//! 8. Staged loads ([`Staging`]): rings of at least two slots, operand 0 or 1, 2-D
//!    tiles, one tile type per ring.

use super::ops::{Combiner, Op, Staging};
use super::{Block, DType, Elem, Inst, Kernel, Type, Value};
use crate::diag::{Diagnostic, Result};
use std::collections::{HashMap, HashSet};

/// Checks `kernel` against the invariants in the module doc.
pub fn verify(kernel: &Kernel) -> Result<()> {
    let mut v = Verifier {
        k: kernel,
        scopes: vec![HashSet::new()],
        defined: HashSet::new(),
        rings: HashMap::new(),
    };
    for p in &kernel.params {
        v.define(p.value, None)?;
    }
    v.block(&kernel.body, None).map_err(|d| {
        d.with_source(&kernel.source)
            .with_note("this is a bug in tilewise; please report it")
    })
}

struct Verifier<'a> {
    k: &'a Kernel,
    scopes: Vec<HashSet<Value>>,
    defined: HashSet<Value>,
    /// The tile type of each staging ring's first load.
    rings: HashMap<u32, Type>,
}

/// What terminator a block must end with, and the types it carries.
enum Term {
    Yield(Vec<Type>),
    Condition,
}

impl Verifier<'_> {
    fn err(&self, inst: Option<&Inst>, msg: String) -> Diagnostic {
        let d = Diagnostic::internal(format!(
            "invalid tile IR in kernel `{}`: {msg}",
            self.k.name
        ));
        match inst {
            Some(i) => d.at(i.span, ""),
            None => d,
        }
    }

    fn define(&mut self, v: Value, inst: Option<&Inst>) -> Result<()> {
        if v.0 as usize >= self.k.values.len() {
            return Err(self.err(inst, format!("{v} is not in the value arena")));
        }
        if !self.defined.insert(v) {
            return Err(self.err(inst, format!("{v} is defined twice")));
        }
        self.scopes.last_mut().unwrap().insert(v);
        Ok(())
    }

    fn used(&self, v: Value, inst: &Inst) -> Result<()> {
        if self.scopes.iter().any(|s| s.contains(&v)) {
            Ok(())
        } else {
            Err(self.err(
                Some(inst),
                format!(
                    "{v} is used by `{}` but not defined in scope",
                    inst.op.name()
                ),
            ))
        }
    }

    fn ty(&self, v: Value) -> &Type {
        self.k.ty(v)
    }

    fn block(&mut self, b: &Block, term: Option<Term>) -> Result<()> {
        self.scopes.push(HashSet::new());
        for &a in &b.args {
            self.define(a, None)?;
        }
        for (i, inst) in b.insts.iter().enumerate() {
            let last = i + 1 == b.insts.len();
            if inst.op.is_terminator() && !(last && term.is_some()) {
                return Err(self.err(
                    Some(inst),
                    format!("`{}` is not at the end of a nested block", inst.op.name()),
                ));
            }
            self.inst(inst)?;
        }
        match term {
            None => {}
            Some(t) => {
                let Some(end) = b.insts.last() else {
                    return Err(self.err(None, "nested block is empty (no terminator)".into()));
                };
                match (t, &end.op) {
                    (Term::Yield(tys), Op::Yield(vals)) => {
                        let got: Vec<Type> = vals.iter().map(|v| self.ty(*v).clone()).collect();
                        if got != tys {
                            return Err(
                                self.err(Some(end), format!("yield of {got:?}, expected {tys:?}"))
                            );
                        }
                    }
                    (Term::Condition, Op::Condition { .. }) => {}
                    (_, op) => {
                        return Err(self.err(Some(end), format!("block ends with `{}`", op.name())))
                    }
                }
            }
        }
        self.scopes.pop();
        Ok(())
    }

    fn same_shape(&self, inst: &Inst, vals: &[Value], shape: &[u32]) -> Result<()> {
        for v in vals {
            if self.ty(*v).shape() != shape {
                return Err(self.err(
                    Some(inst),
                    format!(
                        "operand {v} of `{}` has shape {:?}, expected {shape:?}",
                        inst.op.name(),
                        self.ty(*v).shape()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The [`Staging`] invariants of a staged load: a ring of at least two slots,
    /// operand 0 or 1 of a 2-D dot, and one tile type per ring.
    fn staging(&mut self, inst: &Inst, st: &Staging, ty: Option<&Type>) -> Result<()> {
        let bad = |what: String| Err(self.err(Some(inst), format!("staged load: {what}")));
        if st.stages < 2 {
            return bad(format!("{} stages (at least 2)", st.stages));
        }
        if st.operand > 1 {
            return bad(format!("operand {} of a dot (0 or 1)", st.operand));
        }
        let Some(ty) = ty.filter(|t| t.shape().len() == 2) else {
            return bad("the tile is not 2-D".into());
        };
        match self.rings.get(&st.ring) {
            Some(first) if first != ty => bad(format!("ring {} holds {first} and {ty}", st.ring)),
            Some(_) => Ok(()),
            None => {
                self.rings.insert(st.ring, ty.clone());
                Ok(())
            }
        }
    }

    fn is_bool(&self, v: Value) -> bool {
        self.ty(v).dtype() == Some(DType::I1)
    }

    fn inst(&mut self, inst: &Inst) -> Result<()> {
        for v in inst.op.operands() {
            self.used(v, inst)?;
        }
        let res_ty = inst.results.first().map(|r| self.ty(*r).clone());
        let res_shape: Vec<u32> = res_ty
            .as_ref()
            .map(|t| t.shape().to_vec())
            .unwrap_or_default();
        match &inst.op {
            Op::Unary { value, .. } => self.same_shape(inst, &[*value], &res_shape)?,
            Op::Cast { value, bitcast } => {
                self.same_shape(inst, &[*value], &res_shape)?;
                // Pointers convert to pointers and to and from 64-bit addresses only.
                let from = self.ty(*value).elem();
                let to = res_ty.as_ref().and_then(Type::elem);
                let address =
                    |e: Option<Elem>| matches!(e, Some(Elem::Data(DType::I64 | DType::U64)));
                let ok = match (from, to) {
                    (Some(Elem::Ptr(_)), Some(Elem::Ptr(_))) => !bitcast,
                    (Some(Elem::Ptr(_)), t) => !bitcast && address(t),
                    (f, Some(Elem::Ptr(_))) => !bitcast && address(f),
                    _ => true,
                };
                if !ok {
                    return Err(self.err(
                        Some(inst),
                        format!(
                            "a cast from {} to {} (pointers convert to pointers and to and from 64-bit integers, never by bitcast)",
                            self.ty(*value),
                            res_ty.as_ref().map(|t| t.to_string()).unwrap_or_default()
                        ),
                    ));
                }
            }
            Op::Binary { lhs, rhs, .. } | Op::Cmp { lhs, rhs, .. } => {
                self.same_shape(inst, &[*lhs, *rhs], &res_shape)?;
                if self.ty(*lhs).elem() != self.ty(*rhs).elem() {
                    return Err(self.err(
                        Some(inst),
                        format!(
                            "operands of `{}` differ in type: {} and {}",
                            inst.op.name(),
                            self.ty(*lhs),
                            self.ty(*rhs)
                        ),
                    ));
                }
                if matches!(inst.op, Op::Cmp { .. })
                    && res_ty.as_ref().and_then(Type::dtype) != Some(DType::I1)
                {
                    return Err(self.err(Some(inst), "cmp must produce i1".into()));
                }
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                self.same_shape(inst, &[*cond, *on_true, *on_false], &res_shape)?;
                if !self.is_bool(*cond) {
                    return Err(self.err(Some(inst), "select condition is not i1".into()));
                }
            }
            Op::Fma { a, b, c } => {
                self.same_shape(inst, &[*a, *b, *c], &res_shape)?;
                let elem = res_ty.as_ref().and_then(Type::elem);
                if [a, b, c].iter().any(|v| self.ty(**v).elem() != elem) {
                    return Err(self.err(
                        Some(inst),
                        format!(
                            "operands of `fma` differ in type: {}, {} and {}",
                            self.ty(*a),
                            self.ty(*b),
                            self.ty(*c)
                        ),
                    ));
                }
            }
            Op::AddPtr { ptr, offset } => {
                self.same_shape(inst, &[*ptr, *offset], &res_shape)?;
                if !matches!(self.ty(*ptr).elem(), Some(Elem::Ptr(_))) {
                    return Err(self.err(Some(inst), "addptr of a non-pointer".into()));
                }
            }
            Op::Load { mask, .. } | Op::Store { mask, .. } | Op::Atomic { mask, .. } => {
                if let Some(m) = mask {
                    if !self.is_bool(*m) {
                        return Err(self.err(Some(inst), "mask is not i1".into()));
                    }
                }
                if let Op::Load {
                    stage: Some(st), ..
                } = &inst.op
                {
                    self.staging(inst, st, res_ty.as_ref())?;
                }
                if let Op::Load {
                    tensor_box: Some(bx),
                    ..
                } = &inst.op
                {
                    // A base pointer, then integer scalars: the shape, strides and
                    // offsets of each of the tile's dimensions.
                    let rank = res_ty.as_ref().map_or(0, |t| t.rank());
                    let ints = bx.parts[1..].iter().all(|v| {
                        self.ty(*v).is_scalar() && self.ty(*v).dtype().is_some_and(|d| d.is_int())
                    });
                    let base = self.ty(bx.base());
                    if bx.parts.len() != 1 + 3 * rank
                        || !ints
                        || !base.is_scalar()
                        || !matches!(base.elem(), Some(Elem::Ptr(_)))
                    {
                        return Err(self.err(
                            Some(inst),
                            format!(
                                "a load's box does not describe a block pointer of rank {rank}"
                            ),
                        ));
                    }
                }
            }
            Op::Dot { a, b, acc, .. } => {
                let (sa, sb, sc) = (
                    self.ty(*a).shape(),
                    self.ty(*b).shape(),
                    self.ty(*acc).shape(),
                );
                if sa.len() != 2
                    || sb.len() != 2
                    || sc.len() != 2
                    || sa[1] != sb[0]
                    || sc != [sa[0], sb[1]]
                {
                    return Err(
                        self.err(Some(inst), format!("dot shapes {sa:?} x {sb:?} + {sc:?}"))
                    );
                }
            }
            Op::If { cond, .. } if !self.ty(*cond).is_scalar() || !self.is_bool(*cond) => {
                return Err(self.err(Some(inst), "if condition is not an i1 scalar".into()));
            }
            Op::Condition { cond, .. } if !self.ty(*cond).is_scalar() || !self.is_bool(*cond) => {
                return Err(self.err(Some(inst), "while condition is not an i1 scalar".into()));
            }
            Op::For {
                lower, upper, step, ..
            } => {
                let t = self.ty(*lower).clone();
                if !t.is_scalar()
                    || !t.dtype().is_some_and(DType::is_int)
                    || self.ty(*upper) != &t
                    || self.ty(*step) != &t
                {
                    return Err(self.err(
                        Some(inst),
                        "for bounds must be integer scalars of one type".into(),
                    ));
                }
            }
            _ => {}
        }
        // Nested blocks.
        let result_types: Vec<Type> = inst.results.iter().map(|r| self.ty(*r).clone()).collect();
        match &inst.op {
            Op::For { body, .. } => self.block(body, Some(Term::Yield(result_types)))?,
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                self.block(then_block, Some(Term::Yield(result_types.clone())))?;
                self.block(else_block, Some(Term::Yield(result_types)))?;
            }
            Op::While { before, after, .. } => {
                let carried: Vec<Type> = before.args.iter().map(|a| self.ty(*a).clone()).collect();
                self.block(before, Some(Term::Condition))?;
                self.block(after, Some(Term::Yield(carried)))?;
            }
            Op::Reduce {
                combiner: Combiner::Region(b),
                operands,
                ..
            }
            | Op::Scan {
                combiner: Combiner::Region(b),
                operands,
                ..
            } => {
                let tys: Vec<Type> = operands
                    .iter()
                    .map(|o| Type::scalar(self.ty(*o).dtype().unwrap_or(DType::I32)))
                    .collect();
                // Combine regions are isolated: only their arguments are in scope.
                let saved = std::mem::replace(&mut self.scopes, vec![HashSet::new()]);
                let r = self.block(b, Some(Term::Yield(tys)));
                self.scopes = saved;
                r?;
            }
            _ => {}
        }
        for &r in &inst.results {
            self.define(r, Some(inst))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::verify;
    use crate::diag::{SourceFile, Span};
    use crate::ir::ops::Op;
    use crate::ir::{Const, DType, KernelBuilder, Type};

    fn builder() -> KernelBuilder {
        KernelBuilder::new("k", SourceFile::new("k.py", ""), Span::NONE)
    }

    #[test]
    fn fma_operands_share_the_result_dtype() {
        for (c_dtype, ok) in [(DType::F32, true), (DType::F16, false)] {
            let mut b = builder();
            let one = b.push1(
                Op::Const(Const::Float(1.0)),
                Type::scalar(DType::F32),
                Span::NONE,
            );
            let c = b.push1(
                Op::Const(Const::Float(2.0)),
                Type::scalar(c_dtype),
                Span::NONE,
            );
            b.push1(
                Op::Fma { a: one, b: one, c },
                Type::scalar(DType::F32),
                Span::NONE,
            );
            let r = verify(&b.finish());
            assert_eq!(r.is_ok(), ok, "{r:?}");
            if let Err(e) = r {
                assert!(
                    e.message.contains("operands of `fma` differ"),
                    "{}",
                    e.message
                );
            }
        }
    }

    #[test]
    fn while_conditions_are_i1_scalars() {
        for (cond_dtype, ok) in [(DType::I1, true), (DType::I32, false)] {
            let mut b = builder();
            let init = b.push1(
                Op::Const(Const::Int(0)),
                Type::scalar(DType::I32),
                Span::NONE,
            );
            let args = b.begin_block(vec![Type::scalar(DType::I32)]);
            let cond = b.push1(
                Op::Const(Const::Int(0)),
                Type::scalar(cond_dtype),
                Span::NONE,
            );
            b.push0(
                Op::Condition {
                    cond,
                    args: args.clone(),
                },
                Span::NONE,
            );
            let before = b.end_block();
            let args = b.begin_block(vec![Type::scalar(DType::I32)]);
            b.push0(Op::Yield(args), Span::NONE);
            let after = b.end_block();
            b.push(
                Op::While {
                    init: vec![init],
                    before,
                    after,
                },
                vec![Type::scalar(DType::I32)],
                Span::NONE,
            );
            let r = verify(&b.finish());
            assert_eq!(r.is_ok(), ok, "{r:?}");
            if let Err(e) = r {
                assert!(e.message.contains("while condition"), "{}", e.message);
            }
        }
    }

    #[test]
    fn staged_loads_keep_their_invariants() {
        use crate::ir::ops::{CacheHints, Padding, StagedLayout, Staging};
        let load = |b: &mut KernelBuilder, p, shape: [u32; 2], stage: Staging| {
            let ptrs = b.push1(Op::Splat(p), Type::ptr(DType::F16, shape), Span::NONE);
            b.push1(
                Op::Load {
                    ptr: ptrs,
                    mask: None,
                    other: None,
                    boundary_check: vec![],
                    padding: Padding::None,
                    hints: CacheHints::default(),
                    stage: Some(stage),
                    tensor_box: None,
                },
                Type::tile(DType::F16, shape),
                Span::NONE,
            );
        };
        let good = Staging {
            ring: 0,
            stages: 3,
            operand: 0,
            layout: StagedLayout::Padded,
            pending: 1,
            slack: false,
        };
        let cases: [(Staging, [u32; 2], &str); 4] = [
            (good, [16, 16], ""),
            (
                Staging {
                    stages: 1,
                    pending: 0,
                    ..good
                },
                [16, 16],
                "1 stages (at least 2)",
            ),
            (Staging { operand: 2, ..good }, [16, 16], "operand 2"),
            (good, [32, 16], "ring 0 holds"),
        ];
        for (stage, shape, want) in cases {
            let mut b = builder();
            let p = b.add_param("p", Type::ptr(DType::F16, vec![]), Span::NONE, 16);
            load(&mut b, p, [16, 16], good);
            load(&mut b, p, shape, stage);
            let r = verify(&b.finish());
            match r {
                Ok(()) => assert!(want.is_empty(), "{want}: accepted"),
                Err(e) => assert!(
                    !want.is_empty() && e.message.contains(want),
                    "{want}: {}",
                    e.message
                ),
            }
        }
    }
}
