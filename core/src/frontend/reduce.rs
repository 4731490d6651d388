//! Reductions, scans and `tl.dot`.
//!
//! `tl.sum` / `tl.max` / `tl.min` / `tl.argmax` / `tl.argmin` / `tl.reduce` become
//! `Op::Reduce`; `tl.cumsum` / `tl.cumprod` / `tl.associative_scan` become `Op::Scan`.
//! With `axis=None` the input is reshaped to 1-D first. Dtypes follow Triton 3's
//! standard library: `sum` and `cumsum` accumulate ints narrower than 32 bits in
//! (u)int32; `max` / `min` compute f16 / bf16 in f32 and narrow ints in int32. A user
//! combine function (a jit function) is traced into a `Combiner::Region` block that
//! takes `2n` scalars. `argmax` / `argmin` reduce `(values, indices)` with
//! `Combiner::ArgMax` / `ArgMin` and return the indices.

use super::builtins::{bind, const_dtype, const_int};
use super::expr::{Args, Kwargs};
use super::semantic::shape_text;
use super::tracer::{err, Tracer};
use super::value::Val;
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{Combiner, DType, Op, Precision, Type, Value};

impl Tracer<'_> {
    /// Handles the reduction-like `tl` functions; `None` if `f` is not one.
    pub fn call_reduce(
        &mut self,
        f: &str,
        args: &Args,
        kwargs: &Kwargs,
        span: Span,
    ) -> Result<Option<Val>> {
        let (args, kwargs) = (args.clone(), kwargs.clone());
        let v = match f {
            "sum" | "xor_sum" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "axis", "keep_dims", "dtype"],
                    1,
                    span,
                )?;
                let (x, d) = self.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), "tl.sum")?;
                let out = match b.get(3) {
                    Some((v, s)) => Some(const_dtype(v, *s)?),
                    None if d.is_signed_int() && d.bits() < 32 => Some(DType::I32),
                    None if d.is_unsigned_int() && d.bits() < 32 => Some(DType::U32),
                    None => None,
                };
                let x = match out {
                    Some(o) => self.cast(x, o, span),
                    None => x,
                };
                let (axis, keep) = self.axis_args(&b, 1, 2)?;
                if f == "xor_sum" {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "tl.xor_sum is not supported; use tl.reduce with a combine function",
                        span,
                    ));
                }
                let r = self.reduce_core(vec![x], axis, keep, Combiner::Add, span)?;
                Val::T(r[0])
            }
            "max" | "min" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &[
                        "input",
                        "axis",
                        "return_indices",
                        "return_indices_tie_break_left",
                        "keep_dims",
                    ],
                    1,
                    span,
                )?;
                let (x, d) = self.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                let (axis, keep) = self.axis_args(&b, 1, 4)?;
                let indices = b.get(2).is_some_and(|(v, _)| v.truthy().unwrap_or(false));
                let x = self.reduce_upcast(x, d, span);
                if indices {
                    let (vals, idx) = self.arg_reduce(x, axis, keep, f == "max", span)?;
                    return Ok(Some(Val::Tuple(vec![Val::T(vals), Val::T(idx)], false)));
                }
                let c = if f == "max" {
                    Combiner::Max
                } else {
                    Combiner::Min
                };
                Val::T(self.reduce_core(vec![x], axis, keep, c, span)?[0])
            }
            "argmax" | "argmin" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "axis", "tie_break_left", "keep_dims"],
                    2,
                    span,
                )?;
                let (x, d) = self.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                let (axis, keep) = self.axis_args(&b, 1, 3)?;
                let x = self.reduce_upcast(x, d, span);
                Val::T(self.arg_reduce(x, axis, keep, f == "argmax", span)?.1)
            }
            "reduce" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "axis", "combine_fn", "keep_dims"],
                    3,
                    span,
                )?;
                let (input, is_tuple) = self.operand_list(&b.req(0)?.0.clone(), b.span_of(0))?;
                let (axis, keep) = self.axis_args(&b, 1, 3)?;
                let fname = self.combine_fn(&b.req(2)?.0, b.span_of(2))?;
                let dts: Vec<DType> = input
                    .iter()
                    .map(|x| self.ty(*x).dtype().unwrap_or(DType::I32))
                    .collect();
                let comb = self.combine_region(&fname, &dts, span)?;
                let r = self.reduce_core(input, axis, keep, comb, span)?;
                wrap(r, is_tuple)
            }
            "cumsum" | "cumprod" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "axis", "reverse", "dtype"],
                    1,
                    span,
                )?;
                let (x, d) = self.data_tensor(&b.req(0)?.0.clone(), b.span_of(0), f)?;
                let mut x = if d == DType::BF16 {
                    self.cast(x, DType::F32, span)
                } else {
                    x
                };
                let d = self.ty(x).dtype().unwrap_or(d);
                let out = match b.get(3) {
                    Some((v, s)) => Some(const_dtype(v, *s)?),
                    None if f == "cumsum" && d.is_signed_int() && d.bits() < 32 => Some(DType::I32),
                    None if f == "cumsum" && d.is_unsigned_int() && d.bits() < 32 => {
                        Some(DType::U32)
                    }
                    None => None,
                };
                if let Some(o) = out {
                    x = self.cast(x, o, span);
                }
                let axis = match b.get(1) {
                    Some((v, s)) => const_int(v, *s, "axis")?,
                    None => 0,
                };
                let reverse = b.get(2).is_some_and(|(v, _)| v.truthy().unwrap_or(false));
                let c = if f == "cumsum" {
                    Combiner::Add
                } else if self.ty(x).dtype() == Some(DType::I1) {
                    // A product of booleans is their minimum (the WGSL printer has no
                    // `bool * bool`; see `bool_arith` in expr.rs).
                    Combiner::Min
                } else {
                    Combiner::Mul
                };
                Val::T(self.scan_core(vec![x], axis, reverse, c, span)?[0])
            }
            "associative_scan" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "axis", "combine_fn", "reverse"],
                    3,
                    span,
                )?;
                let (input, is_tuple) = self.operand_list(&b.req(0)?.0.clone(), b.span_of(0))?;
                let axis = const_int(&b.req(1)?.0, b.span_of(1), "axis")?;
                let reverse = b.get(3).is_some_and(|(v, _)| v.truthy().unwrap_or(false));
                let fname = self.combine_fn(&b.req(2)?.0, b.span_of(2))?;
                let dts: Vec<DType> = input
                    .iter()
                    .map(|x| self.ty(*x).dtype().unwrap_or(DType::I32))
                    .collect();
                let comb = self.combine_region(&fname, &dts, span)?;
                wrap(self.scan_core(input, axis, reverse, comb, span)?, is_tuple)
            }
            "softmax" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["x", "dim", "keep_dims", "ieee_rounding"],
                    1,
                    span,
                )?;
                let x = b.req(0)?.0.clone();
                let dim = match b.get(1) {
                    Some((v, s)) => Val::Int(const_int(v, *s, "dim")?),
                    None => Val::Int(0),
                };
                let keep = b.get(2).map(|(v, _)| v.clone()).unwrap_or(Val::Bool(false));
                let kw = |k: &Val| vec![("keep_dims".to_string(), k.clone(), span)];
                let m = self.call_builtin(
                    "tl.max",
                    vec![(x.clone(), span), (dim.clone(), span)],
                    kw(&keep),
                    span,
                )?;
                let z = self.binop(rustpython_parser::ast::Operator::Sub, x, m, span)?;
                let num = self.math1(crate::ir::UnaryOp::Exp, &z, span, span)?;
                let den = self.call_builtin(
                    "tl.sum",
                    vec![(num.clone(), span), (dim, span)],
                    kw(&keep),
                    span,
                )?;
                self.binop(rustpython_parser::ast::Operator::Div, num, den, span)?
            }
            "dot" => self.dot(args, kwargs, span)?,
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    fn axis_args(
        &self,
        b: &super::builtins::Bound,
        ai: usize,
        ki: usize,
    ) -> Result<(Option<i64>, bool)> {
        let axis = match b.get(ai) {
            Some((v, s)) => Some(const_int(v, *s, "axis")?),
            None => None,
        };
        let keep = b.get(ki).is_some_and(|(v, _)| v.truthy().unwrap_or(false));
        Ok((axis, keep))
    }

    fn reduce_upcast(&mut self, x: Value, d: DType, span: Span) -> Value {
        if d.bits() < 32 {
            let to = if d.is_float() { DType::F32 } else { DType::I32 };
            return self.cast(x, to, span);
        }
        x
    }

    fn operand_list(&mut self, v: &Val, s: Span) -> Result<(Vec<Value>, bool)> {
        match v {
            Val::Tuple(items, _) => {
                let mut out = vec![];
                for i in items {
                    out.push(self.tensor_of(i, s)?);
                }
                if out.is_empty() {
                    return Err(err(ErrorKind::Argument, "an empty tuple of inputs", s));
                }
                let shape = self.shape(out[0]);
                for x in &out {
                    if self.shape(*x) != shape {
                        return Err(err(
                            ErrorKind::Shape,
                            "all inputs of a reduction or scan must have the same shape",
                            s,
                        ));
                    }
                }
                Ok((out, true))
            }
            other => Ok((vec![self.tensor_of(other, s)?], false)),
        }
    }

    fn combine_fn(&self, v: &Val, s: Span) -> Result<String> {
        match v {
            Val::Jit(n) => Ok(n.clone()),
            other => Err(err(
                ErrorKind::Type,
                format!(
                    "combine_fn must be a @triton.jit function, got {}",
                    other.describe(None)
                ),
                s,
            )),
        }
    }

    /// Traces the jit function `fname` as a combine region over `2n` scalars.
    fn combine_region(&mut self, fname: &str, dts: &[DType], span: Span) -> Result<Combiner> {
        let mut tys: Vec<Type> = dts.iter().map(|d| Type::scalar(*d)).collect();
        tys.extend(dts.iter().map(|d| Type::scalar(*d)));
        let args = self.b.begin_block(tys);
        let call_args: Args = args.iter().map(|a| (Val::T(*a), span)).collect();
        let r = self.call_jit(fname, call_args, vec![], span)?;
        let leaves = match r {
            Val::Tuple(items, _) => items,
            v => vec![v],
        };
        if leaves.len() != dts.len() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "combine function `{fname}` returns {} values but combines {} inputs",
                    leaves.len(),
                    dts.len()
                ),
                span,
            ));
        }
        let mut ys = vec![];
        for (v, d) in leaves.iter().zip(dts) {
            let x = self.materialize(v, *d, span)?;
            if !self.ty(x).is_scalar() {
                return Err(err(
                    ErrorKind::Shape,
                    format!("combine function `{fname}` must return scalars"),
                    span,
                ));
            }
            ys.push(x);
        }
        self.b.push0(Op::Yield(ys), span);
        Ok(Combiner::Region(Box::new(self.b.end_block())))
    }

    /// Flattens to 1-D when `axis` is `None`; returns the operands and the axis.
    fn flatten_for(
        &mut self,
        operands: Vec<Value>,
        axis: Option<i64>,
        span: Span,
    ) -> Result<(Vec<Value>, u32, Vec<u32>)> {
        let shape = operands.first().map(|x| self.shape(*x)).unwrap_or_default();
        match axis {
            Some(a) => {
                if shape.is_empty() {
                    return Err(err(
                        ErrorKind::Shape,
                        "cannot reduce a scalar along an axis",
                        span,
                    ));
                }
                Ok((operands, self.axis(a, shape.len(), span)?, shape))
            }
            None => {
                let n: u32 = shape.iter().product();
                let mut out = vec![];
                for x in operands {
                    if self.shape(x).len() == 1 {
                        out.push(x);
                    } else {
                        let ty = self.ty(x).with_shape(vec![n]);
                        out.push(self.b.push1(Op::Reshape(x), ty, span));
                    }
                }
                Ok((out, 0, shape))
            }
        }
    }

    pub fn reduce_core(
        &mut self,
        operands: Vec<Value>,
        axis: Option<i64>,
        keep: bool,
        combiner: Combiner,
        span: Span,
    ) -> Result<Vec<Value>> {
        let (ops, ax, orig) = self.flatten_for(operands, axis, span)?;
        let types: Vec<Type> = ops
            .iter()
            .map(|x| {
                let mut s = self.shape(*x);
                s.remove(ax as usize);
                self.ty(*x).with_shape(s)
            })
            .collect();
        let mut rs = self.b.push(
            Op::Reduce {
                operands: ops,
                axis: ax,
                combiner,
            },
            types,
            span,
        );
        if keep {
            for r in rs.iter_mut() {
                if axis.is_none() {
                    let ty = self.ty(*r).with_shape(vec![1; orig.len()]);
                    *r = self.b.push1(Op::Reshape(*r), ty, span);
                } else {
                    let mut s = self.shape(*r);
                    s.insert(ax as usize, 1);
                    let ty = self.ty(*r).with_shape(s);
                    *r = self.b.push1(
                        Op::ExpandDims {
                            value: *r,
                            axis: ax,
                        },
                        ty,
                        span,
                    );
                }
            }
        }
        Ok(rs)
    }

    fn scan_core(
        &mut self,
        operands: Vec<Value>,
        axis: i64,
        reverse: bool,
        combiner: Combiner,
        span: Span,
    ) -> Result<Vec<Value>> {
        let rank = operands.first().map(|x| self.shape(*x).len()).unwrap_or(0);
        if rank == 0 {
            return Err(err(ErrorKind::Shape, "cannot scan a scalar", span));
        }
        let ax = self.axis(axis, rank, span)?;
        let types: Vec<Type> = operands.iter().map(|x| self.ty(*x)).collect();
        Ok(self.b.push(
            Op::Scan {
                operands,
                axis: ax,
                reverse,
                combiner,
            },
            types,
            span,
        ))
    }

    /// `(values, indices)` of an arg-reduction.
    fn arg_reduce(
        &mut self,
        x: Value,
        axis: Option<i64>,
        keep: bool,
        is_max: bool,
        span: Span,
    ) -> Result<(Value, Value)> {
        let (ops, ax, _) = self.flatten_for(vec![x], axis, span)?;
        let x1 = ops[0];
        let shape = self.shape(x1);
        let n = shape[ax as usize];
        if !n.is_power_of_two() {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "argmax/argmin need a power-of-two extent along the axis, got {}",
                    shape_text(&shape)
                ),
                span,
            ));
        }
        let mut idx = self.b.push1(
            Op::Arange {
                start: 0,
                end: n as i64,
            },
            Type::tile(DType::I32, vec![n]),
            span,
        );
        for d in 0..shape.len() {
            if d as u32 != ax {
                let mut s = self.shape(idx);
                s.insert(d, 1);
                idx = self.b.push1(
                    Op::ExpandDims {
                        value: idx,
                        axis: d as u32,
                    },
                    Type::tile(DType::I32, s),
                    span,
                );
            }
        }
        idx = self.broadcast_to(idx, &shape, span)?;
        let comb = if is_max {
            Combiner::ArgMax
        } else {
            Combiner::ArgMin
        };
        let r = self.reduce_core(
            vec![x1, idx],
            Some(ax as i64),
            keep && axis.is_some(),
            comb,
            span,
        )?;
        let (mut v, mut i) = (r[0], r[1]);
        if keep && axis.is_none() {
            let rank = self.shape(x).len();
            for r in [&mut v, &mut i] {
                let ty = self.ty(*r).with_shape(vec![1; rank]);
                *r = self.b.push1(Op::Reshape(*r), ty, span);
            }
        }
        Ok((v, i))
    }

    fn dot(&mut self, args: Args, kwargs: Kwargs, span: Span) -> Result<Val> {
        let b = bind(
            "tl.dot",
            args,
            kwargs,
            &[
                "input",
                "other",
                "acc",
                "input_precision",
                "allow_tf32",
                "max_num_imprecise_acc",
                "out_dtype",
            ],
            2,
            span,
        )?;
        let (mut a, mut da) = self.data_tensor_any(&b.req(0)?.0.clone(), b.span_of(0), "tl.dot")?;
        let (mut bb, mut db) =
            self.data_tensor_any(&b.req(1)?.0.clone(), b.span_of(1), "tl.dot")?;
        // fp8 operands (any mix of the two formats, as in Triton) multiply as f16: every
        // fp8 value is exactly an f16, and the products accumulate in `out_dtype`.
        if da.is_fp8() && db.is_fp8() {
            if let Some((v, s)) = b.get(6) {
                if const_dtype(v, *s)? == DType::BF16 {
                    return Err(err(
                        ErrorKind::Type,
                        "tl.dot of fp8 operands accumulates in float32 or float16, not bfloat16",
                        *s,
                    ));
                }
            }
            a = self.cast(a, DType::F16, span);
            bb = self.cast(bb, DType::F16, span);
            (da, db) = (DType::F16, DType::F16);
        }
        let (sa, sb) = (self.shape(a), self.shape(bb));
        if sa.len() != 2 || sb.len() != 2 {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "tl.dot needs 2-D operands, got shapes {} and {}",
                    shape_text(&sa),
                    shape_text(&sb)
                ),
                span,
            ));
        }
        if sa[1] != sb[0] {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "tl.dot: the inner dimensions differ: a is {} and b is {} (K = {} and {})",
                    shape_text(&sa),
                    shape_text(&sb),
                    sa[1],
                    sb[0]
                ),
                span,
            ));
        }
        if da != db {
            return Err(err(
                ErrorKind::Type,
                format!("tl.dot operands must have the same dtype, got {} and {}; cast one with .to(...)", da.triton_name(), db.triton_name()),
                span,
            ));
        }
        let out_dtype = match b.get(6) {
            Some((v, s)) => const_dtype(v, *s)?,
            None => DType::F32,
        };
        let acc_dt = match da {
            DType::F64 => DType::F64,
            DType::I8 | DType::U8 => DType::I32,
            d if d.is_float() => out_dtype,
            d => {
                return Err(err(
                    ErrorKind::Type,
                    format!("tl.dot does not support {} operands", d.triton_name()),
                    span,
                ))
            }
        };
        let mn = vec![sa[0], sb[1]];
        let acc = match b.get(2) {
            Some((v, s)) => {
                let x = self.tensor_of(v, *s)?;
                let ty = self.ty(x);
                if ty.shape() != mn.as_slice() {
                    return Err(err(
                        ErrorKind::Shape,
                        format!(
                            "tl.dot: acc has shape {} but the product has shape {}",
                            shape_text(ty.shape()),
                            shape_text(&mn)
                        ),
                        *s,
                    ));
                }
                if ty.dtype().is_none() {
                    return Err(err(ErrorKind::Type, "tl.dot: acc must be a data tile", *s));
                }
                x
            }
            None => self.zero_const(acc_dt, mn, span),
        };
        let mut precision = if da == DType::F32 {
            Precision::Tf32
        } else {
            Precision::Ieee
        };
        if let Some((v, s)) = b.get(4) {
            if v.truthy() == Some(false) {
                precision = Precision::Ieee;
            } else if v.truthy().is_none() {
                return Err(err(
                    ErrorKind::Static,
                    "allow_tf32 must be a constexpr bool",
                    *s,
                ));
            }
        }
        if let Some((v, s)) = b.get(3) {
            precision = match v {
                Val::Str(p) if p == "tf32" => Precision::Tf32,
                Val::Str(p) if p == "tf32x3" => Precision::Tf32x3,
                Val::Str(p) if p == "ieee" => Precision::Ieee,
                other => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!(
                            "input_precision must be \"tf32\", \"tf32x3\" or \"ieee\", got {}",
                            other.describe(None)
                        ),
                        *s,
                    ))
                }
            };
        }
        let ty = self.ty(acc);
        Ok(Val::T(self.b.push1(
            Op::Dot {
                a,
                b: bb,
                acc,
                precision,
            },
            ty,
            span,
        )))
    }
}

fn wrap(r: Vec<Value>, tuple: bool) -> Val {
    if tuple {
        Val::Tuple(r.into_iter().map(Val::T).collect(), false)
    } else {
        r.into_iter().next().map(Val::T).unwrap_or(Val::None)
    }
}
