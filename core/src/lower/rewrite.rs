//! Rebuilding a tile-IR kernel op by op: the skeleton of the tile-IR-to-tile-IR passes
//! (`block_ptr`, `fp8`, `simplify`, `pipeline`; `narrow_i64` retypes values in place).
//!
//! [`rewrite`] copies a kernel into a fresh [`KernelBuilder`]. Each old value maps to a
//! list of new values: one for most values, several when a pass splits a value (the
//! block-pointer pass turns a block pointer into its base, shape, strides and offsets).
//! A pass supplies `expand`, which says what a type becomes, and a hook that may emit
//! replacement code for an instruction; everything the hook leaves alone is copied by
//! [`copy_inst`] through the op table: the operand list its nested blocks carry
//! ([`Op::carried_mut`](crate::ir::Op::carried_mut)), the block arguments and the
//! results are expanded with `expand`, every other operand maps to its single new
//! value, and nested blocks are copied through the hook.

use crate::diag::{Diagnostic, Result};
use crate::ir::{Block, Inst, Kernel, KernelBuilder, Type, Value};
use std::collections::HashMap;

/// The state a hook works with.
pub struct Ctx<'a> {
    pub old: &'a Kernel,
    pub b: KernelBuilder,
    map: HashMap<Value, Vec<Value>>,
    expand: &'a dyn Fn(&Type) -> Vec<Type>,
}

impl Ctx<'_> {
    /// The new values an old value became.
    pub fn get(&self, v: Value) -> Result<&[Value]> {
        self.map
            .get(&v)
            .map(|v| v.as_slice())
            .ok_or_else(|| Diagnostic::internal(format!("rewrite: {v} used before it was mapped")))
    }

    /// The single new value an old value became.
    pub fn one(&self, v: Value) -> Result<Value> {
        match self.get(v)? {
            [x] => Ok(*x),
            many => Err(Diagnostic::internal(format!(
                "rewrite: {v} became {} values where one was expected",
                many.len()
            ))),
        }
    }

    /// Records what an old value became.
    pub fn set(&mut self, old: Value, new: Vec<Value>) {
        self.map.insert(old, new);
    }

    /// What every old value has become so far, to return to with [`Ctx::restore`]
    /// after cloning instructions under other bindings.
    pub fn snapshot(&self) -> HashMap<Value, Vec<Value>> {
        self.map.clone()
    }

    /// Returns to the mapping of a [`Ctx::snapshot`].
    pub fn restore(&mut self, map: HashMap<Value, Vec<Value>>) {
        self.map = map;
    }

    fn flat(&self, vals: &[Value]) -> Result<Vec<Value>> {
        let mut out = vec![];
        for v in vals {
            out.extend_from_slice(self.get(*v)?);
        }
        Ok(out)
    }

    fn expanded(&self, vals: &[Value]) -> Vec<Type> {
        vals.iter()
            .flat_map(|v| (self.expand)(self.old.ty(*v)))
            .collect()
    }

    /// Opens a block whose arguments are the expansion of `old_args`, and maps them.
    fn open_block(&mut self, old_args: &[Value]) {
        let tys = self.expanded(old_args);
        let new_args = self.b.begin_block(tys);
        let mut it = new_args.into_iter();
        for &a in old_args {
            let n = (self.expand)(self.old.ty(a)).len();
            let vals: Vec<Value> = it.by_ref().take(n).collect();
            self.map.insert(a, vals);
        }
    }
}

/// What a hook did with an instruction.
pub enum Hook {
    /// The hook emitted replacement code and mapped the results.
    Done,
    /// Copy the instruction as it is.
    Copy,
}

/// Rebuilds `kernel`, letting `hook` replace instructions.
pub fn rewrite(
    kernel: &Kernel,
    expand: &dyn Fn(&Type) -> Vec<Type>,
    hook: &mut dyn FnMut(&mut Ctx, &Inst) -> Result<Hook>,
) -> Result<Kernel> {
    let mut ctx = Ctx {
        old: kernel,
        b: KernelBuilder::new(kernel.name.clone(), kernel.source.clone(), kernel.span),
        map: HashMap::new(),
        expand,
    };
    for p in &kernel.params {
        // A parameter keeps its type unless the pass maps it to exactly one other.
        let ty = match (ctx.expand)(&p.ty).as_slice() {
            [t] => t.clone(),
            _ => p.ty.clone(),
        };
        let v = ctx.b.add_param(&p.name, ty, p.span, p.divisibility);
        ctx.map.insert(p.value, vec![v]);
    }
    block_body(&mut ctx, &kernel.body, hook)?;
    Ok(ctx.b.finish())
}

fn block_body(
    ctx: &mut Ctx,
    block: &Block,
    hook: &mut dyn FnMut(&mut Ctx, &Inst) -> Result<Hook>,
) -> Result<()> {
    for inst in &block.insts {
        match hook(ctx, inst)? {
            Hook::Done => {}
            Hook::Copy => copy_inst(ctx, inst, hook)?,
        }
    }
    Ok(())
}

fn nested(
    ctx: &mut Ctx,
    block: &Block,
    hook: &mut dyn FnMut(&mut Ctx, &Inst) -> Result<Hook>,
) -> Result<Block> {
    ctx.open_block(&block.args);
    block_body(ctx, block, hook)?;
    Ok(ctx.b.end_block())
}

fn map_results(ctx: &mut Ctx, inst: &Inst, new: Vec<Value>) {
    let mut it = new.into_iter();
    for &r in &inst.results {
        let n = (ctx.expand)(ctx.old.ty(r)).len();
        let vals: Vec<Value> = it.by_ref().take(n).collect();
        ctx.map.insert(r, vals);
    }
}

/// Copies one instruction with its operands mapped (the carried list,
/// [`Op::carried_mut`](crate::ir::Op::carried_mut), expanded value by value; every
/// other operand to its single new value), its nested blocks copied through `hook`,
/// and maps its results.
pub fn copy_inst(
    ctx: &mut Ctx,
    inst: &Inst,
    hook: &mut dyn FnMut(&mut Ctx, &Inst) -> Result<Hook>,
) -> Result<()> {
    let result_tys = ctx.expanded(&inst.results);
    let mut op = inst.op.clone();
    let carried = op.carried_mut().map(std::mem::take);
    for v in op.operands_mut() {
        *v = ctx.one(*v)?;
    }
    if let (Some(old), Some(list)) = (carried, op.carried_mut()) {
        *list = ctx.flat(&old)?;
    }
    for block in op.blocks_mut() {
        *block = nested(ctx, block, hook)?;
    }
    let new = ctx.b.push(op, result_tys, inst.span);
    map_results(ctx, inst, new);
    Ok(())
}
