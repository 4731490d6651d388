//! Kernels, blocks, instructions and values: the containers of the tile IR.
//!
//! A [`Kernel`] owns an arena of values (`values[v.0]` holds the type and definition of
//! `Value(v)`) and a body [`Block`]. A block is a list of block arguments and a list of
//! [`Inst`]s; an instruction is an [`Op`], the values it defines, and the source span it
//! came from. Nested blocks (loop bodies, branches, combine regions) live inside their
//! op, so control flow is structured and scoping is lexical: a value is visible in the
//! block that defines it and in blocks nested below, after its definition.
//!
//! [`KernelBuilder`] appends instructions to the innermost open block; the front end
//! uses it to trace, tests use it to write IR by hand.

use super::{Op, Type};
use crate::diag::{SourceFile, Span};
use std::fmt;
use std::sync::Arc;

/// An SSA value: an index into [`Kernel::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Where a value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    /// The kernel's parameter `i`.
    Param(u32),
    /// An argument of a block.
    BlockArg,
    /// A result of an instruction.
    Result,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
    /// The source name, when the value was bound to a Python variable.
    pub name: Option<String>,
}

/// A runtime parameter of a specialized kernel (constexprs are folded away).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Type,
    pub value: Value,
    pub span: Span,
    /// Known divisibility: an integer value (or a pointer's address, in elements)
    /// divisible by this; 1 when nothing is known. From launch specialization.
    pub divisibility: u32,
}

/// One instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Inst {
    pub op: Op,
    pub results: Vec<Value>,
    pub span: Span,
}

/// A straight-line list of instructions with arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    pub args: Vec<Value>,
    pub insts: Vec<Inst>,
}

/// A specialized kernel in tile IR.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub values: Vec<ValueData>,
    pub body: Block,
    pub source: Arc<SourceFile>,
    /// The span of the `def` line.
    pub span: Span,
}

impl Kernel {
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v.0 as usize].ty
    }

    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.0 as usize]
    }

    /// One-based source line of a span.
    pub fn line_of(&self, span: Span) -> u32 {
        self.source.line_col(span.start).0
    }

    /// Visits every instruction, outer before inner, in program order.
    pub fn walk(&self, f: &mut dyn FnMut(&Inst)) {
        self.body.walk(f);
    }
}

impl Block {
    /// Visits every instruction of the block, outer before inner, in program order.
    pub fn walk(&self, f: &mut dyn FnMut(&Inst)) {
        for inst in &self.insts {
            f(inst);
            for nested in inst.op.blocks() {
                nested.walk(f);
            }
        }
    }
}

/// Builds a [`Kernel`] instruction by instruction.
pub struct KernelBuilder {
    name: String,
    source: Arc<SourceFile>,
    span: Span,
    params: Vec<Param>,
    values: Vec<ValueData>,
    /// Open blocks; the last is where instructions go.
    stack: Vec<Block>,
}

impl KernelBuilder {
    pub fn new(name: impl Into<String>, source: Arc<SourceFile>, span: Span) -> KernelBuilder {
        KernelBuilder {
            name: name.into(),
            source,
            span,
            params: vec![],
            values: vec![],
            stack: vec![Block::default()],
        }
    }

    pub fn source(&self) -> &Arc<SourceFile> {
        &self.source
    }

    fn new_value(&mut self, ty: Type, def: ValueDef) -> Value {
        let v = Value(self.values.len() as u32);
        self.values.push(ValueData {
            ty,
            def,
            name: None,
        });
        v
    }

    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v.0 as usize].ty
    }

    /// Records the Python name a value was bound to (for the text form).
    pub fn set_name(&mut self, v: Value, name: &str) {
        let data = &mut self.values[v.0 as usize];
        if data.name.is_none() {
            data.name = Some(name.to_string());
        }
    }

    pub fn add_param(&mut self, name: &str, ty: Type, span: Span, divisibility: u32) -> Value {
        let index = self.params.len() as u32;
        let value = self.new_value(ty.clone(), ValueDef::Param(index));
        self.values[value.0 as usize].name = Some(name.to_string());
        self.params.push(Param {
            name: name.to_string(),
            ty,
            value,
            span,
            divisibility,
        });
        value
    }

    /// Appends an instruction defining one value per entry of `result_types`.
    pub fn push(&mut self, op: Op, result_types: Vec<Type>, span: Span) -> Vec<Value> {
        let results: Vec<Value> = result_types
            .into_iter()
            .map(|t| self.new_value(t, ValueDef::Result))
            .collect();
        let block = self.stack.last_mut().expect("builder has an open block");
        block.insts.push(Inst {
            op,
            results: results.clone(),
            span,
        });
        results
    }

    /// Appends an instruction with exactly one result.
    pub fn push1(&mut self, op: Op, ty: Type, span: Span) -> Value {
        self.push(op, vec![ty], span)[0]
    }

    /// Appends an instruction with no results.
    pub fn push0(&mut self, op: Op, span: Span) {
        self.push(op, vec![], span);
    }

    /// Opens a nested block whose arguments have the given types; returns them.
    pub fn begin_block(&mut self, arg_types: Vec<Type>) -> Vec<Value> {
        let args: Vec<Value> = arg_types
            .into_iter()
            .map(|t| self.new_value(t, ValueDef::BlockArg))
            .collect();
        self.stack.push(Block {
            args: args.clone(),
            insts: vec![],
        });
        args
    }

    /// Closes the innermost nested block and returns it (to be placed in an op).
    pub fn end_block(&mut self) -> Block {
        assert!(self.stack.len() > 1, "end_block without begin_block");
        self.stack.pop().unwrap()
    }

    /// Depth of open nested blocks (0 at the kernel body).
    pub fn depth(&self) -> usize {
        self.stack.len() - 1
    }

    pub fn finish(mut self) -> Kernel {
        assert_eq!(self.stack.len(), 1, "unclosed blocks at finish");
        Kernel {
            name: self.name,
            params: self.params,
            values: self.values,
            body: self.stack.pop().unwrap(),
            source: self.source,
            span: self.span,
        }
    }
}
