//! Pass: block pointers become pointer tiles and masks.
//!
//! A block pointer value is split into its parts: the base pointer, `shape[d]` and
//! `strides[d]` (in the index type) and `offsets[d]` (i32), so it can flow through loops and
//! branches as plain scalars. `advance` adds to the offsets. A load or store through a
//! block pointer becomes, per dimension `d`, the coordinate tile
//! `c_d = offsets[d] + arange(0, block_shape[d])` (expanded along the other dimensions),
//! the element offset `Σ_d c_d * strides[d]` in the index type, a pointer tile
//! `base + offset`, and, for each dimension in `boundary_check`, the mask
//! `0 <= c_d < shape[d]`; `padding_option="nan"` makes `other` NaN, otherwise zero.
//!
//! The index type is a parameter: i64 keeps the interpreter's exact semantics; both GPU
//! backends use i32 ([`super::to_thread_ir`]; WGSL's buffers are indexed by 32-bit
//! integers). The pass is checked by running kernels through the interpreter before
//! and after it.

use super::rewrite::{rewrite, Ctx, Hook};
use crate::diag::{Diagnostic, Result};
use crate::ir::ops::{BinaryOp, CmpPred, Const, Op, Padding};
use crate::ir::{DType, Inst, Kernel, Type, Value};

/// Rewrites every block pointer of `kernel`; address arithmetic is done in `index`
/// (`I32` or `I64`).
pub fn lower_block_pointers(kernel: &Kernel, index: DType) -> Result<Kernel> {
    lower_block_pointers_with(kernel, index, false, false)
}

/// As [`lower_block_pointers`]; with `checked`, each `make_block_ptr` is followed by a
/// `check_block_ptr` of its base, shape and strides (checked mode on the GPUs tests
/// the declared extent against the buffer as the checked interpreter does); with
/// `boxes` (a target with a tensor memory accelerator), each load that pads with zeros
/// keeps its block pointer's parts beside the pointer tile ([`crate::ir::TensorBox`]).
pub fn lower_block_pointers_with(
    kernel: &Kernel,
    index: DType,
    checked: bool,
    boxes: bool,
) -> Result<Kernel> {
    let expand = |t: &Type| -> Vec<Type> {
        match t {
            Type::BlockPtr {
                pointee,
                block_shape,
            } => {
                let r = block_shape.len();
                let mut v = vec![Type::ptr(*pointee, vec![])];
                v.extend(std::iter::repeat_n(Type::scalar(index), 2 * r));
                v.extend(std::iter::repeat_n(Type::scalar(DType::I32), r));
                v
            }
            other => vec![other.clone()],
        }
    };
    rewrite(kernel, &expand, &mut |ctx, inst| {
        hook(ctx, inst, index, checked, boxes)
    })
}

/// The parts of a block pointer after the split.
struct Parts {
    base: Value,
    shape: Vec<Value>,
    strides: Vec<Value>,
    offsets: Vec<Value>,
}

fn parts(ctx: &Ctx, bp: Value) -> Result<Parts> {
    let vals = ctx.get(bp)?;
    let r = (vals.len() - 1) / 3;
    if vals.len() != 3 * r + 1 {
        return Err(Diagnostic::internal(
            "block pointer split into a wrong number of parts",
        ));
    }
    Ok(Parts {
        base: vals[0],
        shape: vals[1..1 + r].to_vec(),
        strides: vals[1 + r..1 + 2 * r].to_vec(),
        offsets: vals[1 + 2 * r..].to_vec(),
    })
}

fn hook(ctx: &mut Ctx, inst: &Inst, index: DType, checked: bool, boxes: bool) -> Result<Hook> {
    let span = inst.span;
    match &inst.op {
        Op::MakeBlockPtr {
            base,
            shape,
            strides,
            offsets,
            ..
        } => {
            let mut vals = vec![ctx.one(*base)?];
            // Shape and strides travel in the index type (so loops carry no i64 on WGSL).
            for v in shape.iter().chain(strides) {
                let v = ctx.one(*v)?;
                let v = if ctx.b.ty(v).dtype() == Some(index) {
                    v
                } else {
                    ctx.b.push1(
                        Op::Cast {
                            value: v,
                            bitcast: false,
                        },
                        Type::scalar(index),
                        span,
                    )
                };
                vals.push(v);
            }
            for v in offsets {
                vals.push(ctx.one(*v)?);
            }
            if checked {
                let r = shape.len();
                ctx.b.push0(
                    Op::CheckBlockPtr {
                        base: vals[0],
                        shape: vals[1..1 + r].to_vec(),
                        strides: vals[1 + r..1 + 2 * r].to_vec(),
                    },
                    span,
                );
            }
            ctx.set(inst.results[0], vals);
            Ok(Hook::Done)
        }
        Op::Advance { ptr, deltas } => {
            let p = parts(ctx, *ptr)?;
            let mut vals = vec![p.base];
            vals.extend(&p.shape);
            vals.extend(&p.strides);
            for (o, d) in p.offsets.iter().zip(deltas) {
                let d = ctx.one(*d)?;
                let sum = ctx.b.push1(
                    Op::Binary {
                        op: BinaryOp::Add,
                        lhs: *o,
                        rhs: d,
                    },
                    Type::scalar(DType::I32),
                    span,
                );
                vals.push(sum);
            }
            ctx.set(inst.results[0], vals);
            Ok(Hook::Done)
        }
        Op::Load {
            ptr,
            boundary_check,
            padding,
            hints,
            ..
        } if ctx.old.ty(*ptr).is_block_ptr() => {
            let Type::BlockPtr {
                pointee,
                block_shape,
            } = ctx.old.ty(*ptr).clone()
            else {
                unreachable!()
            };
            let p = parts(ctx, *ptr)?;
            let (ptrs, mask) =
                addresses(ctx, &p, pointee, &block_shape, boundary_check, index, span);
            let other = match (mask, padding) {
                (None, _) => None,
                (Some(_), Padding::Nan) if pointee.is_float() => Some(ctx.b.push1(
                    Op::Const(Const::Float(f64::NAN)),
                    Type::tile(pointee, block_shape.clone()),
                    span,
                )),
                (Some(_), _) => Some(ctx.b.push1(
                    Op::Const(zero(pointee)),
                    Type::tile(pointee, block_shape.clone()),
                    span,
                )),
            };
            let zero_padded = *padding != Padding::Nan || !pointee.is_float();
            let tensor_box = (boxes && zero_padded && !pointee.is_bool()).then(|| {
                let mut parts = vec![p.base];
                parts.extend(&p.shape);
                parts.extend(&p.strides);
                parts.extend(&p.offsets);
                crate::ir::ops::TensorBox { parts }
            });
            let op = Op::Load {
                ptr: ptrs,
                mask,
                other,
                boundary_check: vec![],
                padding: Padding::None,
                hints: hints.clone(),
                stage: None,
                tensor_box,
            };
            let v = ctx.b.push1(op, Type::tile(pointee, block_shape), span);
            ctx.set(inst.results[0], vec![v]);
            Ok(Hook::Done)
        }
        Op::Store {
            ptr,
            value,
            boundary_check,
            hints,
            ..
        } if ctx.old.ty(*ptr).is_block_ptr() => {
            let Type::BlockPtr {
                pointee,
                block_shape,
            } = ctx.old.ty(*ptr).clone()
            else {
                unreachable!()
            };
            let p = parts(ctx, *ptr)?;
            let (ptrs, mask) =
                addresses(ctx, &p, pointee, &block_shape, boundary_check, index, span);
            let value = ctx.one(*value)?;
            ctx.b.push0(
                Op::Store {
                    ptr: ptrs,
                    value,
                    mask,
                    boundary_check: vec![],
                    hints: hints.clone(),
                },
                span,
            );
            Ok(Hook::Done)
        }
        _ => Ok(Hook::Copy),
    }
}

fn zero(dtype: DType) -> Const {
    if dtype.is_float() {
        Const::Float(0.0)
    } else if dtype.is_bool() {
        Const::Bool(false)
    } else {
        Const::Int(0)
    }
}

/// Emits the pointer tile and the boundary mask of a block-pointer access.
fn addresses(
    ctx: &mut Ctx,
    p: &Parts,
    pointee: DType,
    block: &[u32],
    boundary_check: &[u32],
    index: DType,
    span: crate::diag::Span,
) -> (Value, Option<Value>) {
    let rank = block.len();
    let b = &mut ctx.b;
    let mut offset: Option<Value> = None;
    let mut mask: Option<Value> = None;
    for d in 0..rank {
        // c_d: the coordinates along d, shaped [1, .., B_d, .., 1].
        let mut along = vec![1u32; rank];
        along[d] = block[d];
        let ar = b.push1(
            Op::Arange {
                start: 0,
                end: block[d] as i64,
            },
            Type::tile(DType::I32, vec![block[d]]),
            span,
        );
        let mut cur = ar;
        let mut shape = vec![block[d]];
        for axis in 0..rank {
            if axis != d {
                let pos = axis.min(shape.len());
                shape.insert(pos, 1);
                cur = b.push1(
                    Op::ExpandDims {
                        value: cur,
                        axis: pos as u32,
                    },
                    Type::tile(DType::I32, shape.clone()),
                    span,
                );
            }
        }
        let off = b.push1(
            Op::Splat(p.offsets[d]),
            Type::tile(DType::I32, along.clone()),
            span,
        );
        let c32 = b.push1(
            Op::Binary {
                op: BinaryOp::Add,
                lhs: cur,
                rhs: off,
            },
            Type::tile(DType::I32, along.clone()),
            span,
        );
        let c = if index == DType::I32 {
            c32
        } else {
            b.push1(
                Op::Cast {
                    value: c32,
                    bitcast: false,
                },
                Type::tile(index, along.clone()),
                span,
            )
        };
        let scalar_in_index = |b: &mut crate::ir::KernelBuilder, v: Value| -> Value {
            if b.ty(v).dtype() == Some(index) {
                v
            } else {
                b.push1(
                    Op::Cast {
                        value: v,
                        bitcast: false,
                    },
                    Type::scalar(index),
                    span,
                )
            }
        };
        let stride = scalar_in_index(b, p.strides[d]);
        let stride = b.push1(Op::Splat(stride), Type::tile(index, along.clone()), span);
        let term = b.push1(
            Op::Binary {
                op: BinaryOp::Mul,
                lhs: c,
                rhs: stride,
            },
            Type::tile(index, along.clone()),
            span,
        );
        let term = b.push1(Op::Broadcast(term), Type::tile(index, block.to_vec()), span);
        offset = Some(match offset {
            None => term,
            Some(acc) => b.push1(
                Op::Binary {
                    op: BinaryOp::Add,
                    lhs: acc,
                    rhs: term,
                },
                Type::tile(index, block.to_vec()),
                span,
            ),
        });
        if boundary_check.contains(&(d as u32)) {
            let lim = scalar_in_index(b, p.shape[d]);
            let lim = b.push1(Op::Splat(lim), Type::tile(index, along.clone()), span);
            let zero = b.push1(
                Op::Const(Const::Int(0)),
                Type::tile(index, along.clone()),
                span,
            );
            let ge = b.push1(
                Op::Cmp {
                    pred: CmpPred::Ge,
                    lhs: c,
                    rhs: zero,
                },
                Type::tile(DType::I1, along.clone()),
                span,
            );
            let lt = b.push1(
                Op::Cmp {
                    pred: CmpPred::Lt,
                    lhs: c,
                    rhs: lim,
                },
                Type::tile(DType::I1, along.clone()),
                span,
            );
            let inb = b.push1(
                Op::Binary {
                    op: BinaryOp::And,
                    lhs: ge,
                    rhs: lt,
                },
                Type::tile(DType::I1, along.clone()),
                span,
            );
            let inb = b.push1(
                Op::Broadcast(inb),
                Type::tile(DType::I1, block.to_vec()),
                span,
            );
            mask = Some(match mask {
                None => inb,
                Some(m) => b.push1(
                    Op::Binary {
                        op: BinaryOp::And,
                        lhs: m,
                        rhs: inb,
                    },
                    Type::tile(DType::I1, block.to_vec()),
                    span,
                ),
            });
        }
    }
    let offset = offset.unwrap_or_else(|| {
        b.push1(
            Op::Const(Const::Int(0)),
            Type::tile(index, block.to_vec()),
            span,
        )
    });
    let base = b.push1(Op::Splat(p.base), Type::ptr(pointee, block.to_vec()), span);
    let ptrs = b.push1(
        Op::AddPtr { ptr: base, offset },
        Type::ptr(pointee, block.to_vec()),
        span,
    );
    (ptrs, mask)
}
