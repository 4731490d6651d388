//! Pass: the K tile of a `dot` fed by loads is split into slices, so that the operands
//! it stages in shared memory take a fraction of the space
//! ([`ExpandOptions::k_slices`]; the PTX and WGSL backends ask for it when a kernel does
//! not fit the device's shared memory otherwise).
//!
//! A `dot` whose operands `a: [M, K]` and `b: [K, N]` are loads used by it alone
//! becomes `s` loads of each operand, `a[:, jK/s..(j+1)K/s]` and `b[jK/s..(j+1)K/s, :]`,
//! and a chain of `s` dots over them:
//!
//! ```text
//! a = load(pa, ma, oa)             a1 = load(pa1, ma1, oa1)   a2 = load(pa2, ma2, oa2)
//! b = load(pb, mb, ob)       =>    b1 = load(pb1, mb1, ob1)   b2 = load(pb2, mb2, ob2)
//! r = dot(a, b, acc)               r1 = dot(a1, b1, acc)      r  = dot(a2, b2, r1)
//! ```
//!
//! The expansion stages each dot's operands in arrays of their own, and
//! `shared_reuse` lets the slices' arrays take turns in one: the shared memory of the
//! staged operands falls by `s`. The pointer, mask and `other` tiles of the slices are
//! computed by cloning the pure instructions that compute the whole tiles, with each
//! tile's K axis narrowed: `arange(lo, hi)` along K becomes its `j`-th part, constants,
//! splats and broadcasts of values without a K extent take the narrower shape, and
//! element-wise ops, `expand_dims`, `permute` and hints (contiguity and constancy capped
//! at the slice) follow their operands. A loop-carried tile with a K axis (the
//! `a_ptrs += BK` of Triton's tutorial matmul) is carried once more a slice, its initial
//! and yielded values sliced the same way. Slices are computed right after the value
//! they slice, so loop-invariant address arithmetic stays outside the loop, and the
//! slice loads take the place of the whole load (memory order is kept).
//!
//! A dot is split only where it keeps its form ([`super::expand::dot`]): the same
//! tensor-core instruction, warpgroup MMA or cooperative-matrix configuration for the
//! `K / s` slice as for the whole tile (16 for f16 and bf16 `mma.sync`, 8 for tf32; 8
//! for the FMA form, which has no step of its own), else into fewer slices (a power of two) or not at all; and only where its
//! accumulator is the accumulation type (f32, f64 or an integer), so that the chain
//! adds the products over K in the same order and with the same roundings as the
//! whole dot (`interp/dot.rs`): the result is unchanged. Dots whose operand tiles come
//! from anything else (another load, a reduction, a reshape, a block argument of a
//! `while` or `if`) are left whole.

use crate::diag::Result;
use crate::ir::ops::{HintKind, Op, Precision};
use crate::ir::{DType, Inst, Kernel, Type, Value};
use crate::lower::expand::ExpandOptions;
use crate::lower::rewrite::{copy_inst, rewrite, Ctx, Hook};
use std::collections::{HashMap, HashSet};

/// A value to slice: the value, its K axis, and the number of slices.
type Key = (Value, u32, u32);

/// How a dot is split.
#[derive(Clone, Copy, Debug)]
struct Split {
    a: Value,
    b: Value,
    slices: u32,
}

/// What the analysis found: the dots to split and every value whose slices they need.
struct Plan {
    /// By the dot's result.
    dots: HashMap<Value, Split>,
    /// The loads to slice: their K axis and slice count.
    loads: HashMap<Value, (u32, u32)>,
    /// The values to slice.
    needed: HashSet<Key>,
    /// The same by value: each one's K axes and slice counts, in order.
    needed_of: HashMap<Value, Vec<(u32, u32)>>,
}

/// Splits the K tiles of the dots `opt` asks for (see the module documentation); the
/// rewritten kernel and a note (`line N: ...`) per split dot.
pub fn split_k_tiles(kernel: &Kernel, opt: &ExpandOptions) -> Result<(Kernel, Vec<String>)> {
    if opt.k_slices < 2 {
        return Ok((kernel.clone(), vec![]));
    }
    let plan = analyze(kernel, opt);
    if plan.dots.is_empty() {
        return Ok((kernel.clone(), vec![]));
    }
    let mut notes = vec![];
    kernel.walk(&mut |inst| {
        if let (Op::Dot { a, .. }, Some(s)) = (
            &inst.op,
            inst.results.first().and_then(|r| plan.dots.get(r)),
        ) {
            let k = kernel.ty(*a).shape()[1];
            let note = format!(
                "line {}: dot's K tile ({k}) split into {} slices of {} (less shared memory for its staged operands)",
                kernel.line_of(inst.span),
                s.slices,
                k / s.slices
            );
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    });
    let mut state = State {
        plan: &plan,
        slices: HashMap::new(),
    };
    let identity = |t: &Type| vec![t.clone()];
    let out = rewrite(kernel, &identity, &mut |ctx, inst| state.hook(ctx, inst))?;
    Ok((out, notes))
}

/// The definitions the analysis follows.
struct Defs<'a> {
    kernel: &'a Kernel,
    /// Single-result instructions by their result.
    def: HashMap<Value, &'a Op>,
    /// `for` body arguments after the induction variable: the initial and the yielded
    /// value.
    carried: HashMap<Value, (Value, Value)>,
    /// How many operands read each value.
    uses: HashMap<Value, usize>,
}

fn analyze(kernel: &Kernel, opt: &ExpandOptions) -> Plan {
    let mut d = Defs {
        kernel,
        def: HashMap::new(),
        carried: HashMap::new(),
        uses: HashMap::new(),
    };
    let mut dots = vec![];
    visit(&kernel.body, &mut |inst| {
        for v in inst.op.operands() {
            *d.uses.entry(v).or_default() += 1;
        }
        if let [r] = inst.results.as_slice() {
            d.def.insert(*r, &inst.op);
        }
        if let Op::For { init, body, .. } = &inst.op {
            if let Some(Op::Yield(ys)) = body.insts.last().map(|i| &i.op) {
                for ((arg, i), y) in body.args.iter().skip(1).zip(init).zip(ys) {
                    d.carried.insert(*arg, (*i, *y));
                }
            }
        }
        if matches!(inst.op, Op::Dot { .. }) {
            dots.push(inst);
        }
    });
    let mut plan = Plan {
        dots: HashMap::new(),
        loads: HashMap::new(),
        needed: HashSet::new(),
        needed_of: HashMap::new(),
    };
    for inst in dots {
        let Op::Dot {
            a, b, precision, ..
        } = &inst.op
        else {
            continue;
        };
        let (sa, sb) = (kernel.ty(*a).shape(), kernel.ty(*b).shape());
        if sa.len() != 2 || sb.len() != 2 || a == b {
            continue;
        }
        let dt = |v: Value| kernel.ty(v).dtype().unwrap_or(DType::F32);
        let types = (dt(*a), dt(*b), dt(inst.results[0]));
        let exact = matches!(types.2, DType::F32 | DType::F64) || types.2.is_int();
        if !exact || !d.split_load(*a) || !d.split_load(*b) {
            continue;
        }
        let (m, k, n) = (sa[0], sa[1], sb[1]);
        let mut s = opt.k_slices.next_power_of_two();
        while s > 1 {
            if k.is_multiple_of(s)
                && same_form(opt, types, *precision, (m, n, k), k / s)
                && !plan.loads.contains_key(a)
                && !plan.loads.contains_key(b)
            {
                let mut need = HashSet::new();
                if d.load_slices(*a, 1, s, &plan.needed, &mut need)
                    && d.load_slices(*b, 0, s, &plan.needed, &mut need)
                {
                    plan.needed.extend(need);
                    plan.loads.insert(*a, (1, s));
                    plan.loads.insert(*b, (0, s));
                    plan.dots.insert(
                        inst.results[0],
                        Split {
                            a: *a,
                            b: *b,
                            slices: s,
                        },
                    );
                    break;
                }
            }
            s /= 2;
        }
    }
    for &(v, axis, s) in &plan.needed {
        plan.needed_of.entry(v).or_default().push((axis, s));
    }
    for keys in plan.needed_of.values_mut() {
        keys.sort_unstable();
    }
    plan
}

/// Visits every instruction of `block`, outer before inner, in program order.
fn visit<'a>(block: &'a crate::ir::Block, f: &mut impl FnMut(&'a Inst)) {
    for inst in &block.insts {
        f(inst);
        for nested in inst.op.blocks() {
            visit(nested, f);
        }
    }
}

/// The least K slice of the FMA form, which has no instruction step: narrower slices
/// save little beside the accumulator's own shared memory and multiply the dots.
const FMA_MIN_K: u32 = 8;

/// Whether a dot of `[m, k] x [k, n]` takes the same form with a K tile of `slice`
/// (for the FMA form, a slice of at least [`FMA_MIN_K`]).
fn same_form(
    opt: &ExpandOptions,
    types: (DType, DType, DType),
    precision: Precision,
    (m, n, k): (u32, u32, u32),
    slice: u32,
) -> bool {
    use crate::lower::expand::{dot, dot_coop, dot_wgmma};
    let form = |k: u32| {
        (
            dot_wgmma::wgmma_plan(opt, types, precision, (m, n, k), Default::default()).is_some(),
            dot::mma_kind(opt, types, precision, (m, n, k)),
            dot_coop::coop_config(opt, types, precision, (m, n, k)),
        )
    };
    let whole = form(k);
    let fma = whole == (false, None, None);
    slice >= 1 && form(slice) == whole && (!fma || slice >= FMA_MIN_K)
}

impl Defs<'_> {
    /// Whether `v` is a load the split may replace: of a pointer tile, not staged, read
    /// by one operand.
    fn split_load(&self, v: Value) -> bool {
        matches!(
            self.def.get(&v),
            Some(Op::Load {
                boundary_check,
                stage: None,
                ..
            }) if boundary_check.is_empty()
        ) && self.uses.get(&v) == Some(&1)
    }

    /// Whether the pointer, mask and `other` of the load `v` can be sliced along `axis`
    /// into `s`; the values to slice are added to `need`.
    fn load_slices(
        &self,
        v: Value,
        axis: u32,
        s: u32,
        done: &HashSet<Key>,
        need: &mut HashSet<Key>,
    ) -> bool {
        let Some(Op::Load {
            ptr, mask, other, ..
        }) = self.def.get(&v)
        else {
            return false;
        };
        [Some(*ptr), *mask, *other]
            .into_iter()
            .flatten()
            .all(|x| self.slices(x, axis, s, done, need))
    }

    /// Whether `v` can be sliced along `axis` into `s` from the instructions that
    /// compute it; what it needs is added to `need` (a carried value is assumed
    /// sliceable while its own yielded value is examined).
    fn slices(
        &self,
        v: Value,
        axis: u32,
        s: u32,
        done: &HashSet<Key>,
        need: &mut HashSet<Key>,
    ) -> bool {
        let key = (v, axis, s);
        if done.contains(&key) || need.contains(&key) {
            return true;
        }
        let ty = self.kernel.ty(v);
        let shape = ty.shape();
        if ty.is_block_ptr()
            || shape.len() <= axis as usize
            || !shape[axis as usize].is_multiple_of(s)
        {
            return false;
        }
        need.insert(key);
        if let Some(&(init, yielded)) = self.carried.get(&v) {
            return self.slices(init, axis, s, done, need)
                && self.slices(yielded, axis, s, done, need);
        }
        let mut same = |x: Value, ax: u32| self.slices(x, ax, s, done, need);
        match self.def.get(&v) {
            Some(Op::Arange { start, end }) => (end - start) % s as i64 == 0,
            Some(Op::Const(_)) | Some(Op::Splat(_)) => true,
            Some(Op::Broadcast(x)) => {
                self.kernel.ty(*x).shape()[axis as usize] == 1 || same(*x, axis)
            }
            Some(Op::ExpandDims { value, axis: e }) => {
                *e != axis && same(*value, if *e < axis { axis - 1 } else { axis })
            }
            Some(Op::Permute { value, perm }) => same(*value, perm[axis as usize]),
            Some(Op::Hint { value, .. }) => same(*value, axis),
            Some(
                op @ (Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Cmp { .. }
                | Op::Select { .. }
                | Op::Fma { .. }
                | Op::Cast { .. }
                | Op::AddPtr { .. }),
            ) => op.operands().into_iter().all(|x| same(x, axis)),
            _ => false,
        }
    }
}

/// The rewrite's state: the plan and the slices emitted so far.
struct State<'a> {
    plan: &'a Plan,
    /// The new values of each slice of a needed value.
    slices: HashMap<Key, Vec<Value>>,
}

impl State<'_> {
    fn hook(&mut self, ctx: &mut Ctx, inst: &Inst) -> Result<Hook> {
        if let Op::For { .. } = &inst.op {
            self.split_for(ctx, inst)?;
            return Ok(Hook::Done);
        }
        if let (Op::Dot { acc, precision, .. }, [r]) = (&inst.op, inst.results.as_slice()) {
            if let Some(split) = self.plan.dots.get(r) {
                let ty = ctx.old.ty(*r).clone();
                let (sa, sb) = (self.load(split.a)?, self.load(split.b)?);
                let mut acc = ctx.one(*acc)?;
                for (a, b) in sa.into_iter().zip(sb) {
                    acc = ctx.b.push1(
                        Op::Dot {
                            a,
                            b,
                            acc,
                            precision: *precision,
                        },
                        ty.clone(),
                        inst.span,
                    );
                }
                ctx.set(*r, vec![acc]);
                return Ok(Hook::Done);
            }
        }
        if let [r] = inst.results.as_slice() {
            if let Some(&(axis, s)) = self.plan.loads.get(r) {
                let vals = self.emit_slices(ctx, inst, axis, s)?;
                self.slices.insert((*r, axis, s), vals);
                return Ok(Hook::Done);
            }
        }
        let mut hook = |c: &mut Ctx, i: &Inst| self.hook(c, i);
        copy_inst(ctx, inst, &mut hook)?;
        self.after(ctx, inst)?;
        Ok(Hook::Done)
    }

    /// The slices of a split load.
    fn load(&self, v: Value) -> Result<Vec<Value>> {
        let (axis, s) = self.plan.loads[&v];
        self.get((v, axis, s))
    }

    fn get(&self, key: Key) -> Result<Vec<Value>> {
        self.slices.get(&key).cloned().ok_or_else(|| {
            crate::diag::Diagnostic::internal(format!(
                "split_k_tile: slice of {} used before it was made",
                key.0
            ))
        })
    }

    /// Emits the slices of `inst`'s result wherever the plan needs them.
    fn after(&mut self, ctx: &mut Ctx, inst: &Inst) -> Result<()> {
        let [r] = inst.results.as_slice() else {
            return Ok(());
        };
        let Some(keys) = self.plan.needed_of.get(r) else {
            return Ok(());
        };
        for &(axis, s) in keys {
            let vals = self.emit_slices(ctx, inst, axis, s)?;
            self.slices.insert((*r, axis, s), vals);
        }
        Ok(())
    }

    /// The `s` slices along `axis` of the result of `inst` (pure, or a load).
    fn emit_slices(&self, ctx: &mut Ctx, inst: &Inst, axis: u32, s: u32) -> Result<Vec<Value>> {
        let r = inst.results[0];
        let ty = ctx.old.ty(r);
        let mut shape = ty.shape().to_vec();
        let len = shape[axis as usize] / s;
        shape[axis as usize] = len;
        let sliced = ty.with_shape(shape);
        let operand =
            |x: Value, ax: u32, j: u32| -> Result<Value> { Ok(self.get((x, ax, s))?[j as usize]) };
        let mut out = vec![];
        for j in 0..s {
            let op = match &inst.op {
                Op::Arange { start, end } => {
                    let part = (end - start) / s as i64;
                    Op::Arange {
                        start: start + j as i64 * part,
                        end: start + (j as i64 + 1) * part,
                    }
                }
                Op::Const(c) => Op::Const(*c),
                Op::Splat(x) => Op::Splat(ctx.one(*x)?),
                Op::Broadcast(x) => {
                    if ctx.old.ty(*x).shape()[axis as usize] == 1 {
                        Op::Broadcast(ctx.one(*x)?)
                    } else {
                        Op::Broadcast(operand(*x, axis, j)?)
                    }
                }
                Op::ExpandDims { value, axis: e } => Op::ExpandDims {
                    value: operand(*value, if *e < axis { axis - 1 } else { axis }, j)?,
                    axis: *e,
                },
                Op::Permute { value, perm } => Op::Permute {
                    value: operand(*value, perm[axis as usize], j)?,
                    perm: perm.clone(),
                },
                Op::Hint { value, hint } => {
                    let cap = |v: &Vec<u32>| {
                        let mut v = v.clone();
                        if let Some(x) = v.get_mut(axis as usize) {
                            *x = (*x).min(len);
                        }
                        v
                    };
                    Op::Hint {
                        value: operand(*value, axis, j)?,
                        hint: match hint {
                            HintKind::MultipleOf(v) => HintKind::MultipleOf(v.clone()),
                            HintKind::MaxContiguous(v) => HintKind::MaxContiguous(cap(v)),
                            HintKind::MaxConstancy(v) => HintKind::MaxConstancy(cap(v)),
                        },
                    }
                }
                Op::Load {
                    ptr,
                    mask,
                    other,
                    boundary_check,
                    padding,
                    hints,
                    stage,
                    ..
                } => Op::Load {
                    ptr: operand(*ptr, axis, j)?,
                    mask: mask.map(|m| operand(m, axis, j)).transpose()?,
                    other: other.map(|o| operand(o, axis, j)).transpose()?,
                    boundary_check: boundary_check.clone(),
                    padding: *padding,
                    hints: hints.clone(),
                    stage: *stage,
                    // A part of the tile is not the block pointer's box.
                    tensor_box: None,
                },
                op => {
                    let mut op = op.clone();
                    for x in op.operands_mut() {
                        *x = operand(*x, axis, j)?;
                    }
                    op
                }
            };
            out.push(ctx.b.push1(op, sliced.clone(), inst.span));
        }
        Ok(out)
    }

    /// Copies a `for` loop, carrying the slices of its carried values where needed.
    fn split_for(&mut self, ctx: &mut Ctx, inst: &Inst) -> Result<()> {
        let Op::For {
            lower,
            upper,
            step,
            init,
            body,
            num_stages,
            flatten,
        } = &inst.op
        else {
            unreachable!("split_for of a for loop")
        };
        // The slices carried: (argument position from 1, axis, slices).
        let mut extra: Vec<(usize, u32, u32)> = vec![];
        for (j, arg) in body.args.iter().enumerate().skip(1) {
            if let Some(keys) = self.plan.needed_of.get(arg) {
                extra.extend(keys.iter().map(|&(axis, s)| (j, axis, s)));
            }
        }
        let mut init_n: Vec<Value> = init.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
        let mut arg_tys: Vec<Type> = body.args.iter().map(|a| ctx.old.ty(*a).clone()).collect();
        for &(j, axis, s) in &extra {
            let slices = self.get((init[j - 1], axis, s))?;
            let ty = ctx.b.ty(slices[0]).clone();
            arg_tys.extend((0..s).map(|_| ty.clone()));
            init_n.extend(slices);
        }
        let new_args = ctx.b.begin_block(arg_tys);
        for (a, v) in body.args.iter().zip(&new_args) {
            ctx.set(*a, vec![*v]);
        }
        let mut next = body.args.len();
        for &(j, axis, s) in &extra {
            let vals = new_args[next..next + s as usize].to_vec();
            next += s as usize;
            self.slices.insert((body.args[j], axis, s), vals);
        }
        for body_inst in &body.insts {
            if let Op::Yield(vals) = &body_inst.op {
                let mut all: Vec<Value> =
                    vals.iter().map(|v| ctx.one(*v)).collect::<Result<_>>()?;
                for &(j, axis, s) in &extra {
                    all.extend(self.get((vals[j - 1], axis, s))?);
                }
                ctx.b.push0(Op::Yield(all), body_inst.span);
                continue;
            }
            self.hook(ctx, body_inst)?;
        }
        let new_body = ctx.b.end_block();
        let mut result_tys: Vec<Type> = inst
            .results
            .iter()
            .map(|r| ctx.old.ty(*r).clone())
            .collect();
        for &(j, axis, s) in &extra {
            let slices = self.get((init[j - 1], axis, s))?;
            let ty = ctx.b.ty(slices[0]).clone();
            result_tys.extend((0..s).map(|_| ty.clone()));
        }
        let (lower, upper, step) = (ctx.one(*lower)?, ctx.one(*upper)?, ctx.one(*step)?);
        let results = ctx.b.push(
            Op::For {
                lower,
                upper,
                step,
                init: init_n,
                body: new_body,
                num_stages: *num_stages,
                flatten: *flatten,
            },
            result_tys,
            inst.span,
        );
        for (old, new) in inst.results.iter().zip(results) {
            ctx.set(*old, vec![new]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{self, HostBuffer, RtArg};
    use crate::ir::{parse, print, verify::verify};
    use crate::launch::{Grid, ScalarValue};

    /// Triton's tutorial matmul (32x32x32 f16 tiles, `acc += dot(a, b)`): pointer tiles
    /// carried through the loop, the last K step masked.
    const TUTORIAL: &str = "\
kernel @mm(%0: ptr<f16> a_ptr [div 8], %1: ptr<f16> b_ptr [div 8], %2: ptr<f32> c_ptr [div 4], %3: i32 M [div 16], %4: i32 N [div 16], %5: i32 K [div 16]) {
  %6 = arange 0, 32 : tile<32xi32>
  %7 = expand_dims %6, axis 1 : tile<32x1xi32>
  %8 = splat %5 : tile<32x1xi32>
  %9 = mul %7, %8 : tile<32x1xi32>
  %10 = splat %0 : tile<32x1xptr<f16>>
  %11 = addptr %10, %9 : tile<32x1xptr<f16>>
  %12 = expand_dims %6, axis 0 : tile<1x32xi32>
  %13 = broadcast %11 : tile<32x32xptr<f16>>
  %14 = broadcast %12 : tile<32x32xi32>
  %15 = addptr %13, %14 : tile<32x32xptr<f16>>
  %16 = splat %4 : tile<32x1xi32>
  %17 = mul %7, %16 : tile<32x1xi32>
  %18 = splat %1 : tile<32x1xptr<f16>>
  %19 = addptr %18, %17 : tile<32x1xptr<f16>>
  %20 = broadcast %19 : tile<32x32xptr<f16>>
  %21 = addptr %20, %14 : tile<32x32xptr<f16>>
  %22 = const 0.0 : tile<32x32xf32>
  %23 = const 0 : i32
  %24 = const 32 : i32
  %25, %26, %27 = for %28 = %23 to %5 step %24 iter(%29 = %15, %30 = %22, %31 = %21) : (tile<32x32xptr<f16>>, tile<32x32xf32>, tile<32x32xptr<f16>>) {
    %32 = sub %5, %28 : i32
    %33 = splat %32 : tile<1x32xi32>
    %34 = cmp lt %12, %33 : tile<1x32xi1>
    %35 = broadcast %34 : tile<32x32xi1>
    %36 = const 0.0 : tile<32x32xf16>
    %37 = load %29 mask %35 other %36 : tile<32x32xf16>
    %38 = splat %32 : tile<32x1xi32>
    %39 = cmp lt %7, %38 : tile<32x1xi1>
    %40 = broadcast %39 : tile<32x32xi1>
    %41 = load %31 mask %40 other %36 : tile<32x32xf16>
    %42 = dot %37, %41, %30 precision ieee : tile<32x32xf32>
    %43 = splat %24 : tile<32x32xi32>
    %44 = addptr %29, %43 : tile<32x32xptr<f16>>
    %45 = mul %24, %4 : i32
    %46 = splat %45 : tile<32x32xi32>
    %47 = addptr %31, %46 : tile<32x32xptr<f16>>
    yield %44, %42, %47
  }
  %48 = splat %2 : tile<32x1xptr<f32>>
  %49 = addptr %48, %17 : tile<32x1xptr<f32>>
  %50 = broadcast %49 : tile<32x32xptr<f32>>
  %51 = addptr %50, %14 : tile<32x32xptr<f32>>
  store %51, %26
}
";

    fn split(src: &str, opt: ExpandOptions, slices: u32) -> (Kernel, Vec<String>) {
        let k = parse(src).unwrap_or_else(|e| panic!("{}", e.message));
        verify(&k).unwrap_or_else(|e| panic!("{}", e.message));
        let (out, notes) = split_k_tiles(
            &k,
            &ExpandOptions {
                k_slices: slices,
                ..opt
            },
        )
        .unwrap();
        verify(&out).unwrap_or_else(|e| panic!("{}\n{}", e.message, print(&out)));
        (out, notes)
    }

    fn count(k: &Kernel, what: fn(&Op) -> bool) -> usize {
        let mut n = 0;
        k.walk(&mut |i| n += what(&i.op) as usize);
        n
    }

    /// Runs the tutorial matmul on `[32, k] x [k, 32]` random f16 inputs (the output
    /// poisoned with NaN); the output's bits.
    fn run(kernel: &Kernel, k: usize, seed: u64) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut f16s = |n: usize| -> Vec<u8> {
            (0..n)
                .flat_map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let x = (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                    half::f16::from_f64(x).to_le_bytes()
                })
                .collect()
        };
        let (a, b) = (f16s(32 * k), f16s(k * 32));
        let c: Vec<u8> = (0..32 * 32).flat_map(|_| f32::NAN.to_le_bytes()).collect();
        let mut buffers = vec![
            HostBuffer {
                dtype: DType::F16,
                bytes: a,
            },
            HostBuffer {
                dtype: DType::F16,
                bytes: b,
            },
            HostBuffer {
                dtype: DType::F32,
                bytes: c,
            },
        ];
        let buffer = |i: usize, len: usize| RtArg::Buffer {
            buffer: i,
            offset: 0,
            len,
        };
        let int = |v: usize| RtArg::Scalar(ScalarValue::Int(DType::I32, v as i64));
        let args = [
            buffer(0, 32 * k),
            buffer(1, k * 32),
            buffer(2, 32 * 32),
            int(32),
            int(32),
            int(k),
        ];
        interp::run(
            kernel,
            Grid([1, 1, 1]),
            &args,
            &mut buffers,
            &interp::Options::default(),
        )
        .unwrap_or_else(|e| panic!("{}", e.message));
        let out = buffers.pop().unwrap().bytes;
        assert!(
            out.chunks(4)
                .all(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]).is_finite()),
            "the output kept its poison"
        );
        out
    }

    #[test]
    fn a_dot_becomes_a_chain_over_k_slices_with_the_same_result() {
        let (out, notes) = split(TUTORIAL, ExpandOptions::ptx(4), 2);
        let text = print(&out);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 2, "{text}");
        assert_eq!(count(&out, |o| matches!(o, Op::Load { .. })), 4, "{text}");
        // The K aranges' halves, the carried pointer tiles' slices.
        assert!(text.contains("arange 0, 16 : tile<16xi32>"), "{text}");
        assert!(text.contains("arange 16, 32 : tile<16xi32>"), "{text}");
        assert!(text.contains("tile<32x16xptr<f16>>, tile<32x16xptr<f16>>, tile<16x32xptr<f16>>, tile<16x32xptr<f16>>) {"), "{text}");
        assert_eq!(
            notes,
            ["line 1: dot's K tile (32) split into 2 slices of 16 (less shared memory for its staged operands)"]
        );
        // The chain adds the products over K in the same order: the same bits, on
        // whole, partial and masked K steps.
        let whole = parse(TUTORIAL).unwrap();
        for (k, seed) in [(32, 1), (80, 2), (96, 3)] {
            assert_eq!(run(&whole, k, seed), run(&out, k, seed), "K = {k}");
        }
    }

    #[test]
    fn slices_stop_where_the_dot_would_change_its_form() {
        // `mma.sync` f16 takes K in steps of 16: 32 splits in two at most.
        let (out, notes) = split(TUTORIAL, ExpandOptions::ptx(4), 8);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 2);
        assert!(notes[0].contains("2 slices of 16"), "{notes:?}");
        // Warpgroup MMA: the same K step.
        let hopper = ExpandOptions {
            wgmma: true,
            ..ExpandOptions::ptx(4)
        };
        let (out, _) = split(TUTORIAL, hopper, 8);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 2);
        // The FMA form stops at slices of 8: four, the same result.
        let (out, notes) = split(TUTORIAL, ExpandOptions::wgsl(4), 8);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 4);
        assert!(notes[0].contains("4 slices of 8"), "{notes:?}");
        let whole = parse(TUTORIAL).unwrap();
        assert_eq!(run(&whole, 80, 4), run(&out, 80, 4));
        // One slice: nothing changes.
        let (out, notes) = split(TUTORIAL, ExpandOptions::ptx(4), 1);
        assert_eq!(print(&out), print(&whole));
        assert!(notes.is_empty());
    }

    #[test]
    fn dots_that_would_round_differently_or_share_a_load_stay_whole() {
        // An f16 accumulator rounds once per dot: a chain would round more often.
        let f16_acc = "\
kernel @k(%0: ptr<f16> a [div 8], %1: ptr<f16> c [div 8]) {
  %2 = arange 0, 32 : tile<32xi32>
  %3 = expand_dims %2, axis 1 : tile<32x1xi32>
  %4 = const 32 : tile<32x1xi32>
  %5 = mul %3, %4 : tile<32x1xi32>
  %6 = expand_dims %2, axis 0 : tile<1x32xi32>
  %7 = broadcast %5 : tile<32x32xi32>
  %8 = broadcast %6 : tile<32x32xi32>
  %9 = add %7, %8 : tile<32x32xi32>
  %10 = splat %0 : tile<32x32xptr<f16>>
  %11 = addptr %10, %9 : tile<32x32xptr<f16>>
  %12 = load %11 : tile<32x32xf16>
  %13 = load %11 : tile<32x32xf16>
  %14 = const 0.0 : tile<32x32xf16>
  %15 = dot %12, %13, %14 precision ieee : tile<32x32xf16>
  %16 = splat %1 : tile<32x32xptr<f16>>
  %17 = addptr %16, %9 : tile<32x32xptr<f16>>
  store %17, %15
}
";
        let (out, notes) = split(f16_acc, ExpandOptions::ptx(4), 2);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 1);
        assert!(notes.is_empty(), "{notes:?}");
        // The same with an f32 accumulator splits, the pointer tile sliced both ways.
        let f32_acc = f16_acc
            .replace("0.0 : tile<32x32xf16>", "0.0 : tile<32x32xf32>")
            .replace(
                "precision ieee : tile<32x32xf16>",
                "precision ieee : tile<32x32xf32>",
            )
            .replace("ptr<f16> c", "ptr<f32> c")
            .replace("tile<32x32xptr<f16>>\n  %17", "tile<32x32xptr<f32>>\n  %17")
            .replace(
                "%17 = addptr %16, %9 : tile<32x32xptr<f16>>",
                "%17 = addptr %16, %9 : tile<32x32xptr<f32>>",
            )
            .replace(
                "%16 = splat %1 : tile<32x32xptr<f16>>",
                "%16 = splat %1 : tile<32x32xptr<f32>>",
            );
        let (out, _) = split(&f32_acc, ExpandOptions::ptx(4), 2);
        assert_eq!(
            count(&out, |o| matches!(o, Op::Dot { .. })),
            2,
            "{}",
            print(&out)
        );
        // A load read twice (here as both operands) stays whole.
        let shared = f32_acc.replace("dot %12, %13", "dot %12, %12");
        let (out, _) = split(&shared, ExpandOptions::ptx(4), 2);
        assert_eq!(count(&out, |o| matches!(o, Op::Dot { .. })), 1);
    }
}
