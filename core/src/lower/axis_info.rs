//! Axis analysis (Triton's AxisInfo): for every integer and pointer tile, per dimension,
//! what is known about its values, so that the lowering can prove a group of a thread's
//! elements is one aligned run in memory and read it with one wide access.
//!
//! For each dimension `d` of a value:
//! - `contiguity[d]`: the values form runs of this many consecutive integers (`+1`
//!   steps) along `d`, the runs starting at multiples of this length;
//! - `divisibility[d]`: the first value of every run is divisible by this power of two
//!   (a pointer's address counted in elements);
//! - `constancy[d]`: the values are constant over aligned groups of this many along `d`.
//!
//! Sources: `arange`, constants, the launch specialization (parameters divisible by 16,
//! buffers 16-byte aligned), `multiple_of` / `max_contiguous` / `max_constancy` hints;
//! rules for `+ - * % <<`, comparisons, casts, broadcasting and pointer offsets;
//! loop-carried values join their initial and yielded facts until stable. Anything
//! else is unknown (1). Every fact is a power of two, so joins are minima.

use crate::ir::ops::{BinaryOp, CmpPred, Const, HintKind, Op};
use crate::ir::{Block, Kernel, Value};
use std::collections::HashMap;

/// The cap on divisibility (no value is "divisible by everything").
const MAX_DIV: u64 = 1 << 30;

/// Rounds of a loop's carried facts before they are given up as unknown (each round
/// joins what the body yields; a chain of carried values settles one link a round).
const MAX_LOOP_ROUNDS: usize = 8;

/// What is known about one value, per dimension (one entry for a scalar).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisInfo {
    pub contiguity: Vec<u64>,
    pub divisibility: Vec<u64>,
    pub constancy: Vec<u64>,
    /// The value, when it is one known integer everywhere.
    pub constant: Option<i64>,
}

fn pow2_dividing(x: i64) -> u64 {
    if x == 0 {
        MAX_DIV
    } else {
        (1u64 << x.unsigned_abs().trailing_zeros()).min(MAX_DIV)
    }
}

fn floor_pow2(x: u64) -> u64 {
    if x == 0 {
        1
    } else {
        1 << (63 - x.leading_zeros())
    }
}

impl AxisInfo {
    fn unknown(rank: usize) -> AxisInfo {
        let n = rank.max(1);
        AxisInfo {
            contiguity: vec![1; n],
            divisibility: vec![1; n],
            constancy: vec![1; n],
            constant: None,
        }
    }

    fn constant(shape: &[u32], c: i64) -> AxisInfo {
        let n = shape.len().max(1);
        AxisInfo {
            contiguity: vec![1; n],
            divisibility: vec![pow2_dividing(c); n],
            constancy: (0..n)
                .map(|d| shape.get(d).copied().unwrap_or(1) as u64)
                .collect(),
            constant: Some(c),
        }
    }

    /// The weaker of two facts (for loop-carried values).
    fn join(&self, o: &AxisInfo) -> AxisInfo {
        let m = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| *x.min(y)).collect();
        AxisInfo {
            contiguity: m(&self.contiguity, &o.contiguity),
            divisibility: m(&self.divisibility, &o.divisibility),
            constancy: m(&self.constancy, &o.constancy),
            constant: if self.constant == o.constant {
                self.constant
            } else {
                None
            },
        }
    }
}

/// The facts for every value of a kernel.
pub struct AxisAnalysis {
    info: HashMap<Value, AxisInfo>,
    hints: bool,
    /// A hint (by its result) not taken as a fact even when `hints` is on.
    skip: Option<Value>,
}

/// Whether the lowering may use the hint whose result is `hint` to widen a memory
/// access of `kernel` (tile IR before any lowering): with every hint as a fact, some
/// load's, store's or atomic's pointer or mask is known to more than without this one.
/// A false hint the lowering never uses cannot change a result (checked mode reports
/// it as a warning, the others as errors).
pub fn hint_widens_an_access(kernel: &Kernel, hint: Value) -> bool {
    // The hint's place among the kernel's hints; block-pointer lowering keeps their order.
    let mut index = None;
    let mut n = 0usize;
    kernel.walk(&mut |inst| {
        if let Op::Hint { .. } = inst.op {
            if inst.results.first() == Some(&hint) {
                index = Some(n);
            }
            n += 1;
        }
    });
    let Some(index) = index else { return true };
    let Ok(lowered) = crate::lower::block_ptr::lower_block_pointers(kernel, crate::ir::DType::I64)
    else {
        return true;
    };
    let mut target = None;
    let mut n = 0usize;
    let mut accesses: Vec<Value> = vec![];
    lowered.walk(&mut |inst| match &inst.op {
        Op::Hint { .. } => {
            if n == index {
                target = inst.results.first().copied();
            }
            n += 1;
        }
        Op::Load { ptr, mask, .. } | Op::Store { ptr, mask, .. } => {
            accesses.push(*ptr);
            accesses.extend(mask);
        }
        Op::Atomic { ptr, mask, .. } => {
            accesses.push(*ptr);
            accesses.extend(mask);
        }
        Op::AtomicCas { ptr, .. } => accesses.push(*ptr),
        _ => {}
    });
    let Some(target) = target else { return true };
    let with = AxisAnalysis::new(&lowered, true);
    let without = AxisAnalysis::with_skip(&lowered, true, Some(target));
    // What a wide access can use: runs and alignment up to 16 elements (16 bytes of
    // the narrowest type); facts beyond that change nothing.
    let usable = |i: AxisInfo| {
        let cap = |v: Vec<u64>| v.into_iter().map(|x| x.min(16)).collect::<Vec<_>>();
        (cap(i.contiguity), cap(i.divisibility), cap(i.constancy))
    };
    accesses
        .iter()
        .any(|&v| usable(with.get(&lowered, v)) != usable(without.get(&lowered, v)))
}

impl AxisAnalysis {
    /// Analyses `k` (after block-pointer lowering); `hints` takes the user's
    /// `multiple_of` / `max_contiguous` / `max_constancy` promises as facts.
    pub fn new(k: &Kernel, hints: bool) -> AxisAnalysis {
        Self::with_skip(k, hints, None)
    }

    fn with_skip(k: &Kernel, hints: bool, skip: Option<Value>) -> AxisAnalysis {
        let mut a = AxisAnalysis {
            info: HashMap::new(),
            hints,
            skip,
        };
        for p in &k.params {
            let rank = k.ty(p.value).rank();
            let mut i = AxisInfo::unknown(rank);
            i.divisibility = vec![p.divisibility.max(1) as u64; rank.max(1)];
            a.info.insert(p.value, i);
        }
        a.block(k, &k.body);
        a
    }

    /// The facts about `v` (unknown when never analysed).
    pub fn get(&self, k: &Kernel, v: Value) -> AxisInfo {
        self.info
            .get(&v)
            .cloned()
            .unwrap_or_else(|| AxisInfo::unknown(k.ty(v).rank()))
    }

    fn block(&mut self, k: &Kernel, b: &Block) {
        for inst in &b.insts {
            self.inst(k, inst);
        }
    }

    fn yielded(b: &Block) -> Vec<Value> {
        match b.insts.last().map(|i| &i.op) {
            Some(Op::Yield(v)) => v.clone(),
            Some(Op::Condition { args, .. }) => args.clone(),
            _ => vec![],
        }
    }

    fn inst(&mut self, k: &Kernel, inst: &crate::ir::Inst) {
        let shape = |v: Value| k.ty(v).shape().to_vec();
        match &inst.op {
            Op::For {
                lower,
                step,
                init,
                body,
                ..
            } => {
                // The induction variable `lower + i * step` is divisible by what divides
                // both (`for k in range(0, K, BK)`: by BK); carried values join their
                // initial facts with what the body yields, until nothing changes.
                if let Some(&iv) = body.args.first() {
                    let mut f = AxisInfo::unknown(k.ty(iv).rank());
                    let (lo, st) = (self.get(k, *lower), self.get(k, *step));
                    f.divisibility[0] = lo.divisibility[0].min(st.divisibility[0]);
                    self.info.insert(iv, f);
                }
                let carried = &body.args[1.min(body.args.len())..];
                let mut facts: Vec<AxisInfo> = init.iter().map(|v| self.get(k, *v)).collect();
                let mut stable = false;
                for _ in 0..MAX_LOOP_ROUNDS {
                    for (a, f) in carried.iter().zip(&facts) {
                        self.info.insert(*a, f.clone());
                    }
                    self.block(k, body);
                    let next: Vec<AxisInfo> = Self::yielded(body)
                        .iter()
                        .zip(&facts)
                        .map(|(y, f)| f.join(&self.get(k, *y)))
                        .collect();
                    if next == facts {
                        stable = true;
                        break;
                    }
                    facts = next;
                }
                // Facts that did not settle are not facts: the carried values become
                // unknown, and the body is analysed again under that.
                if !stable {
                    facts = carried
                        .iter()
                        .map(|a| AxisInfo::unknown(k.ty(*a).rank()))
                        .collect();
                    for (a, f) in carried.iter().zip(&facts) {
                        self.info.insert(*a, f.clone());
                    }
                    self.block(k, body);
                }
                for (r, f) in inst.results.iter().zip(&facts) {
                    self.info.insert(*r, f.clone());
                }
                return;
            }
            Op::If {
                then_block,
                else_block,
                ..
            } => {
                self.block(k, then_block);
                self.block(k, else_block);
                let (t, e) = (Self::yielded(then_block), Self::yielded(else_block));
                for (i, r) in inst.results.iter().enumerate() {
                    let f = match (t.get(i), e.get(i)) {
                        (Some(a), Some(b)) => self.get(k, *a).join(&self.get(k, *b)),
                        _ => AxisInfo::unknown(k.ty(*r).rank()),
                    };
                    self.info.insert(*r, f);
                }
                return;
            }
            Op::While { .. } | Op::Reduce { .. } | Op::Scan { .. } => {
                // Nested blocks are analysed conservatively: their values stay unknown.
                for r in &inst.results {
                    self.info.insert(*r, AxisInfo::unknown(k.ty(*r).rank()));
                }
                return;
            }
            _ => {}
        }
        let Some(&res) = inst.results.first() else {
            return;
        };
        let rs = shape(res);
        let rank = rs.len();
        let info = match &inst.op {
            Op::Const(Const::Int(c)) => AxisInfo::constant(&rs, *c),
            Op::Const(Const::Bool(b)) => AxisInfo::constant(&rs, *b as i64),
            Op::Const(Const::Float(_)) => AxisInfo {
                divisibility: vec![1; rank.max(1)],
                constant: None,
                ..AxisInfo::constant(&rs, 0)
            },
            Op::Arange { start, end } => AxisInfo {
                contiguity: vec![(end - start) as u64],
                divisibility: vec![pow2_dividing(*start)],
                constancy: vec![1],
                constant: None,
            },
            Op::Splat(v) => {
                let s = self.get(k, *v);
                AxisInfo {
                    contiguity: vec![1; rank.max(1)],
                    divisibility: vec![s.divisibility[0]; rank.max(1)],
                    constancy: (0..rank.max(1))
                        .map(|d| rs.get(d).copied().unwrap_or(1) as u64)
                        .collect(),
                    constant: s.constant,
                }
            }
            Op::Broadcast(v) => {
                let s = self.get(k, *v);
                let from = shape(*v);
                let mut o = s.clone();
                for (d, &size) in rs.iter().enumerate() {
                    if from.get(d) == Some(&1) && size > 1 {
                        o.constancy[d] = size as u64;
                        o.contiguity[d] = 1;
                    }
                }
                o
            }
            Op::ExpandDims { value, axis } => {
                let s = self.get(k, *value);
                let mut o = s.clone();
                let a = *axis as usize;
                if shape(*value).is_empty() {
                    o = AxisInfo {
                        contiguity: vec![1; rank],
                        divisibility: vec![s.divisibility[0]; rank],
                        constancy: vec![1; rank],
                        constant: s.constant,
                    };
                } else {
                    // Each element starts its own run along the new dimension: its
                    // divisibility is only known when no dimension is contiguous.
                    let div = if s.contiguity.iter().all(|&c| c == 1) {
                        *s.divisibility.iter().min().unwrap_or(&1)
                    } else {
                        1
                    };
                    o.contiguity.insert(a, 1);
                    o.divisibility.insert(a, div);
                    o.constancy.insert(a, 1);
                }
                o
            }
            Op::Cast { value, bitcast } if !bitcast => {
                let s = self.get(k, *value);
                match (k.ty(*value).dtype(), k.ty(res).dtype()) {
                    (Some(f), Some(t)) if f.is_int() && t.is_int() && t.bits() >= f.bits() => s,
                    _ => AxisInfo {
                        constancy: s.constancy,
                        ..AxisInfo::unknown(rank)
                    },
                }
            }
            Op::Hint { value, .. } if !self.hints || inst.results.first() == self.skip.as_ref() => {
                self.get(k, *value)
            }
            Op::Hint { value, hint } => {
                let mut s = self.get(k, *value);
                // A pointer's `multiple_of` is in bytes (Triton's); the facts count elements.
                let unit = match k.ty(*value).elem() {
                    Some(crate::ir::Elem::Ptr(d)) if matches!(hint, HintKind::MultipleOf(_)) => {
                        d.size_bytes() as u64
                    }
                    _ => 1,
                };
                let (target, vals) = match hint {
                    HintKind::MultipleOf(v) => (&mut s.divisibility, v),
                    HintKind::MaxContiguous(v) => (&mut s.contiguity, v),
                    HintKind::MaxConstancy(v) => (&mut s.constancy, v),
                };
                for (t, v) in target.iter_mut().zip(vals) {
                    *t = floor_pow2(*v as u64 / unit).max(1);
                }
                s
            }
            Op::AddPtr { ptr, offset } => {
                let (p, o) = (self.get(k, *ptr), self.get(k, *offset));
                add(&p, &o, false)
            }
            Op::Binary { op, lhs, rhs } => {
                let (a, b) = (self.get(k, *lhs), self.get(k, *rhs));
                match op {
                    BinaryOp::Add => add(&a, &b, false),
                    BinaryOp::Sub => add(&a, &b, true),
                    BinaryOp::Mul => mul(&a, &b),
                    BinaryOp::Rem => rem(&a, &b),
                    BinaryOp::Shl => match b.constant {
                        Some(c) if (0..30).contains(&c) => AxisInfo {
                            contiguity: vec![1; a.contiguity.len()],
                            divisibility: a
                                .divisibility
                                .iter()
                                .map(|d| (d << c).min(MAX_DIV))
                                .collect(),
                            constancy: a.constancy.clone(),
                            constant: a.constant.map(|x| x << c),
                        },
                        _ => elementwise(&a, &b),
                    },
                    _ => elementwise(&a, &b),
                }
            }
            Op::Cmp { pred, lhs, rhs } => {
                let (a, b) = (self.get(k, *lhs), self.get(k, *rhs));
                cmp(*pred, &a, &b)
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let (c, t, f) = (
                    self.get(k, *cond),
                    self.get(k, *on_true),
                    self.get(k, *on_false),
                );
                let mut o = elementwise(&t, &f);
                o.constancy = o
                    .constancy
                    .iter()
                    .zip(&c.constancy)
                    .map(|(a, b)| *a.min(b))
                    .collect();
                o
            }
            _ => AxisInfo::unknown(rank),
        };
        self.info.insert(res, info);
    }
}

fn gcd_all(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| *x.min(y)).collect()
}

/// Constancy survives any elementwise op; nothing else is known.
fn elementwise(a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    AxisInfo {
        contiguity: vec![1; a.contiguity.len()],
        divisibility: vec![1; a.contiguity.len()],
        constancy: gcd_all(&a.constancy, &b.constancy),
        constant: None,
    }
}

fn add(a: &AxisInfo, b: &AxisInfo, sub: bool) -> AxisInfo {
    let n = a.contiguity.len();
    AxisInfo {
        contiguity: (0..n)
            .map(|d| {
                let x = a.contiguity[d].min(b.constancy[d]);
                if sub {
                    x
                } else {
                    x.max(a.constancy[d].min(b.contiguity[d]))
                }
            })
            .collect(),
        divisibility: gcd_all(&a.divisibility, &b.divisibility),
        constancy: gcd_all(&a.constancy, &b.constancy),
        constant: match (a.constant, b.constant) {
            (Some(x), Some(y)) if sub => x.checked_sub(y),
            (Some(x), Some(y)) => x.checked_add(y),
            _ => None,
        },
    }
}

fn mul(a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    let n = a.contiguity.len();
    let contiguity = match (a.constant, b.constant) {
        (_, Some(1)) => a.contiguity.clone(),
        (Some(1), _) => b.contiguity.clone(),
        _ => vec![1; n],
    };
    AxisInfo {
        contiguity,
        divisibility: (0..n)
            .map(|d| (a.divisibility[d] * b.divisibility[d]).min(MAX_DIV))
            .collect(),
        constancy: gcd_all(&a.constancy, &b.constancy),
        constant: match (a.constant, b.constant) {
            (Some(x), Some(y)) => x.checked_mul(y),
            _ => None,
        },
    }
}

/// `a % b` for `b` constant along each dimension: runs of `a` stay runs up to `b`'s
/// divisibility.
fn rem(a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    let n = a.contiguity.len();
    AxisInfo {
        contiguity: (0..n)
            .map(|d| {
                if b.constancy[d] >= a.contiguity[d] {
                    a.contiguity[d].min(b.divisibility[d])
                } else {
                    1
                }
            })
            .collect(),
        divisibility: gcd_all(&a.divisibility, &b.divisibility),
        constancy: gcd_all(&a.constancy, &b.constancy),
        constant: None,
    }
}

/// A comparison is constant over an aligned group where `a` runs contiguously and both
/// `a`'s run starts and `b` are multiples of the group size (no boundary inside it).
fn cmp(pred: CmpPred, a: &AxisInfo, b: &AxisInfo) -> AxisInfo {
    let n = a.contiguity.len();
    let ordered = !matches!(pred, CmpPred::Eq | CmpPred::Ne);
    AxisInfo {
        contiguity: vec![1; n],
        divisibility: vec![1; n],
        constancy: (0..n)
            .map(|d| {
                let both = a.constancy[d].min(b.constancy[d]);
                let run = if ordered && b.constancy[d] >= a.contiguity[d] {
                    a.contiguity[d]
                        .min(a.divisibility[d])
                        .min(b.divisibility[d])
                } else {
                    1
                };
                both.max(run)
            })
            .collect(),
        constant: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_of_a_block_are_contiguous_and_masks_constant() {
        let ar = AxisInfo {
            contiguity: vec![1024],
            divisibility: vec![MAX_DIV],
            constancy: vec![1],
            constant: None,
        };
        // pid * 1024 splatted: divisible by 1024, constant.
        let base = AxisInfo {
            contiguity: vec![1],
            divisibility: vec![1024],
            constancy: vec![1024],
            constant: None,
        };
        let offs = add(&base, &ar, false);
        assert_eq!(offs.contiguity, vec![1024]);
        assert_eq!(offs.divisibility, vec![1024]);
        // n divisible by 16: the mask is constant over groups of 16.
        let n = AxisInfo {
            contiguity: vec![1],
            divisibility: vec![16],
            constancy: vec![1024],
            constant: None,
        };
        assert_eq!(cmp(CmpPred::Lt, &offs, &n).constancy, vec![16]);
        // n odd: no group is safe.
        let odd = AxisInfo {
            divisibility: vec![1],
            ..n
        };
        assert_eq!(cmp(CmpPred::Lt, &offs, &odd).constancy, vec![1]);
    }

    /// A chain of carried offsets that takes more rounds to settle than the analysis
    /// runs: the odd offset reaches `o9` after ten trips, so its load is not aligned.
    /// Before, the facts after the last round were kept as they were (`o9` still the
    /// constant 0), and the load would have been read in aligned 16-byte vectors.
    #[test]
    fn carried_facts_that_do_not_settle_are_unknown() {
        use crate::frontend::Module;
        use crate::ir::DType;
        use crate::launch::{ArgSpec, ScalarValue};
        let src = r#"
import triton
import triton.language as tl

@triton.jit
def chain(X, Y, n):
    o0 = 0
    o1 = 0
    o2 = 0
    o3 = 0
    o4 = 0
    o5 = 0
    o6 = 0
    o7 = 0
    o8 = 0
    o9 = 0
    for i in range(n):
        x = tl.load(X + o9 + tl.arange(0, 16))
        tl.store(Y + i * 16 + tl.arange(0, 16), x)
        o9 = o8
        o8 = o7
        o7 = o6
        o6 = o5
        o5 = o4
        o4 = o3
        o3 = o2
        o2 = o1
        o1 = o0
        o0 = 1
"#;
        let module = Module::parse("chain.py", src).unwrap();
        let ptr = ArgSpec::Ptr {
            dtype: DType::F32,
            aligned16: true,
        };
        let spec = module
            .specialize(
                "chain",
                &[
                    ptr.clone(),
                    ptr,
                    ArgSpec::Scalar(ScalarValue::Int(DType::I32, 12)),
                ],
                &[],
            )
            .unwrap();
        let k = &spec.kernel;
        let analysis = AxisAnalysis::new(k, false);
        let mut load_ptr = None;
        k.walk(&mut |inst| {
            if let Op::Load { ptr, .. } = &inst.op {
                load_ptr = Some(*ptr);
            }
        });
        let info = analysis.get(k, load_ptr.expect("the kernel loads"));
        assert_eq!(info.divisibility, vec![1], "{info:?}");
    }
}
