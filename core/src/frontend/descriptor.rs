//! Tensor descriptors: Triton's `tl.make_tensor_descriptor` and host-side
//! `TensorDescriptor` arguments, with `desc.load(offsets)` / `desc.store(offsets, x)`.
//!
//! A descriptor is a scalar pointer seen as a tensor of `shape` and `strides`, read and
//! written in blocks of `block_shape` at element offsets; elements outside the tensor
//! read as zero and are not written. That is a block pointer with every dimension
//! boundary-checked and zero padding, so a descriptor is a trace-time value
//! ([`Descriptor`]) and each access becomes `make_block_ptr` + `load` / `store`: every
//! executor runs it through the block-pointer lowering it already has (none uses TMA).
//! The older spellings (`tl._experimental_make_tensor_descriptor`,
//! `tl._experimental_descriptor_load` / `_store`) map onto the same value. Misuse
//! (wrong number of offsets, a store of the wrong shape, a block shape that is not a
//! list of powers of two) is a located diagnostic.

use super::builtins::{bind, const_dtype, shape_arg};
use super::expr::{Args, Kwargs};
use super::tracer::{err, Tracer};
use super::value::{Descriptor, Val};
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::Elem;

/// Descriptor methods Triton has that tilewise does not (yet).
const UNSUPPORTED_METHODS: &[&str] = &[
    "atomic_add",
    "atomic_min",
    "atomic_max",
    "atomic_and",
    "atomic_or",
    "atomic_xor",
    "gather",
    "scatter",
];

impl Tracer<'_> {
    /// The descriptor builtins; `None` for every other name.
    pub fn call_descriptor(
        &mut self,
        f: &str,
        args: &Args,
        kwargs: &Kwargs,
        span: Span,
    ) -> Result<Option<Val>> {
        let (args, kwargs) = (args.clone(), kwargs.clone());
        let v = match f {
            "make_tensor_descriptor" | "_experimental_make_tensor_descriptor" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["base", "shape", "strides", "block_shape", "padding_option"],
                    4,
                    span,
                )?;
                if let Some((Val::Str(p), ps)) = b.get(4) {
                    if p != "zero" {
                        return Err(err(
                            ErrorKind::Unsupported,
                            format!("tensor descriptors pad with zeros; padding_option={p:?} is not supported"),
                            *ps,
                        ));
                    }
                }
                let (base, bs) = b.req(0)?.clone();
                let x = self.tensor_of(&base, bs)?;
                let ty = self.ty(x);
                let dtype = match ty.elem() {
                    Some(Elem::Ptr(d)) if ty.is_scalar() => d,
                    _ => {
                        return Err(err(
                            ErrorKind::Type,
                            format!(
                                "tl.make_tensor_descriptor's base must be a scalar pointer, got {}",
                                self.describe(&base)
                            ),
                            bs,
                        ))
                    }
                };
                let list = |v: &Val| match v {
                    Val::Tuple(items, _) => items.clone(),
                    other => vec![other.clone()],
                };
                let shape = list(&b.req(1)?.0);
                let strides = list(&b.req(2)?.0);
                let block: Vec<i64> = shape_arg(&b.req(3)?.0, b.span_of(3))?
                    .into_iter()
                    .map(i64::from)
                    .collect();
                for (what, n, i) in [("shape", shape.len(), 1), ("strides", strides.len(), 2)] {
                    if n != block.len() {
                        return Err(err(
                            ErrorKind::Shape,
                            format!(
                                "tl.make_tensor_descriptor: `{what}` has {n} entries but block_shape has {}",
                                block.len()
                            ),
                            b.span_of(i),
                        ));
                    }
                }
                Val::Desc(Box::new(Descriptor {
                    base,
                    dtype,
                    shape,
                    strides,
                    block_shape: block,
                }))
            }
            "load_tensor_descriptor" => {
                let b = bind(f, args, kwargs, &["desc", "offsets"], 2, span)?;
                let d = self.descriptor(&b.req(0)?.0, b.span_of(0))?;
                let (o, os) = b.req(1)?.clone();
                self.desc_load(&d, &o, os, span)?
            }
            "store_tensor_descriptor" => {
                let b = bind(f, args, kwargs, &["desc", "offsets", "value"], 3, span)?;
                let d = self.descriptor(&b.req(0)?.0, b.span_of(0))?;
                let (o, os) = b.req(1)?.clone();
                let (v, vs) = b.req(2)?.clone();
                self.desc_store(&d, &o, os, v, vs, span)?
            }
            "_experimental_descriptor_load" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["desc_pointer", "offsets", "shape", "dtype"],
                    4,
                    span,
                )?;
                let d = self.descriptor(&b.req(0)?.0, b.span_of(0))?;
                let shape: Vec<i64> = shape_arg(&b.req(2)?.0, b.span_of(2))?
                    .into_iter()
                    .map(i64::from)
                    .collect();
                if shape != d.block_shape {
                    return Err(err(
                        ErrorKind::Shape,
                        format!(
                            "the load's shape {shape:?} is not the descriptor's block shape {:?}",
                            d.block_shape
                        ),
                        b.span_of(2),
                    ));
                }
                let dt = const_dtype(&b.req(3)?.0, b.span_of(3))?;
                if dt != d.dtype {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "the load's dtype {} is not the descriptor's {}",
                            dt.triton_name(),
                            d.dtype.triton_name()
                        ),
                        b.span_of(3),
                    ));
                }
                let (o, os) = b.req(1)?.clone();
                self.desc_load(&d, &o, os, span)?
            }
            "_experimental_descriptor_store" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["desc_pointer", "value", "offsets"],
                    3,
                    span,
                )?;
                let d = self.descriptor(&b.req(0)?.0, b.span_of(0))?;
                let (v, vs) = b.req(1)?.clone();
                let (o, os) = b.req(2)?.clone();
                self.desc_store(&d, &o, os, v, vs, span)?
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// `desc.attr`.
    pub fn descriptor_attr(
        &mut self,
        d: &Descriptor,
        v: &Val,
        attr: &str,
        span: Span,
    ) -> Result<Val> {
        Ok(match attr {
            "load" | "store" => Val::Method(Box::new(v.clone()), attr.to_string()),
            "block_shape" => Val::Tuple(d.block_shape.iter().map(|&x| Val::Int(x)).collect(), true),
            "shape" => Val::Tuple(d.shape.clone(), true),
            "strides" => Val::Tuple(d.strides.clone(), true),
            "dtype" => Val::DType(d.dtype),
            "base" => d.base.clone(),
            _ if UNSUPPORTED_METHODS.contains(&attr) => {
                return Err(err(
                    ErrorKind::Unsupported,
                    format!(
                    "tensor descriptors' `{attr}` is not supported yet; load, compute and store"
                ),
                    span,
                ))
            }
            _ => {
                return Err(err(
                    ErrorKind::Name,
                    format!("a tensor descriptor has no attribute `{attr}`"),
                    span,
                ))
            }
        })
    }

    /// `desc.load(offsets)` / `desc.store(offsets, value)`.
    pub fn descriptor_method(
        &mut self,
        d: &Descriptor,
        name: &str,
        args: Args,
        kwargs: Kwargs,
        span: Span,
    ) -> Result<Val> {
        match name {
            "load" => {
                let b = bind("desc.load", args, kwargs, &["offsets"], 1, span)?;
                let (o, os) = b.req(0)?.clone();
                self.desc_load(d, &o, os, span)
            }
            "store" => {
                let b = bind("desc.store", args, kwargs, &["offsets", "value"], 2, span)?;
                let (o, os) = b.req(0)?.clone();
                let (v, vs) = b.req(1)?.clone();
                self.desc_store(d, &o, os, v, vs, span)
            }
            _ => Err(err(
                ErrorKind::Name,
                format!("a tensor descriptor has no method `{name}`"),
                span,
            )),
        }
    }

    fn descriptor(&self, v: &Val, s: Span) -> Result<Descriptor> {
        match v {
            Val::Desc(d) => Ok((**d).clone()),
            other => Err(err(
                ErrorKind::Type,
                format!(
                    "expected a tensor descriptor (tl.make_tensor_descriptor or a descriptor argument), got {}",
                    self.describe(other)
                ),
                s,
            )),
        }
    }

    /// The block pointer of `d` at `offsets`, and the boundary check of every dimension.
    fn desc_block(
        &mut self,
        d: &Descriptor,
        offsets: &Val,
        os: Span,
        span: Span,
    ) -> Result<(Val, Val)> {
        let offs = match offsets {
            Val::Tuple(items, _) => items.clone(),
            other => vec![other.clone()],
        };
        let rank = d.block_shape.len();
        if offs.len() != rank {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "{} offsets for a tensor descriptor of rank {rank} (block shape {:?}): give one offset a dimension",
                    offs.len(),
                    d.block_shape
                ),
                os,
            ));
        }
        let tuple = |v: Vec<Val>| Val::Tuple(v, false);
        let args = vec![
            (d.base.clone(), span),
            (tuple(d.shape.clone()), span),
            (tuple(d.strides.clone()), span),
            (tuple(offs), os),
            (
                tuple(d.block_shape.iter().map(|&x| Val::Int(x)).collect()),
                span,
            ),
            (tuple((0..rank as i64).rev().map(Val::Int).collect()), span),
        ];
        let bp = self.make_block_ptr(args, vec![], span)?;
        let check = tuple((0..rank as i64).map(Val::Int).collect());
        Ok((bp, check))
    }

    fn desc_load(&mut self, d: &Descriptor, offsets: &Val, os: Span, span: Span) -> Result<Val> {
        let (bp, check) = self.desc_block(d, offsets, os, span)?;
        self.load(
            vec![(bp, span)],
            vec![
                ("boundary_check".into(), check, span),
                ("padding_option".into(), Val::Str("zero".into()), span),
            ],
            span,
        )
    }

    fn desc_store(
        &mut self,
        d: &Descriptor,
        offsets: &Val,
        os: Span,
        value: Val,
        vs: Span,
        span: Span,
    ) -> Result<Val> {
        if let Val::T(x) = &value {
            let shape: Vec<i64> = self.shape(*x).iter().map(|&s| s as i64).collect();
            if !shape.is_empty() && shape != d.block_shape {
                return Err(err(
                    ErrorKind::Shape,
                    format!(
                        "a tile of shape {shape:?} stored through a tensor descriptor of block shape {:?}",
                        d.block_shape
                    ),
                    vs,
                ));
            }
        }
        let (bp, check) = self.desc_block(d, offsets, os, span)?;
        self.store(
            vec![(bp, span), (value, vs)],
            vec![("boundary_check".into(), check, span)],
            span,
        )
    }
}
