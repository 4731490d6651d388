//! Pairing tiles along a new minor dimension: `tl.join`, `tl.split`, `tl.interleave`
//! and `tl.cat` (Triton 3's shape-manipulation ops; the persistent-matmul tutorial
//! splits its accumulator in two for a sub-tiled epilogue).
//!
//! They are traced into ordinary tile IR, so every executor and both GPU lowerings
//! run them without new lowering, and exactly (values are only selected, never
//! computed):
//! - `join(a, b)`: both broadcast to one shape `S`, expanded to `S + [2]`, and
//!   selected by the new coordinate (`0` takes `a`).
//! - `split(x)` (last dimension 2): two reductions of `(x, coordinate)` over that
//!   dimension keeping the element of the smaller (first half) or larger (second)
//!   coordinate, a combination that is associative and commutative whatever order a
//!   lowering combines in; a rank-1 input gives scalars, as in Triton.
//! - `interleave(a, b)`: `join` then a row-major reshape merging the last two
//!   dimensions.
//! - `cat(a, b, dim)`: `join`, the new dimension moved before `dim`, then a reshape
//!   merging them (`can_reorder` is accepted and changes nothing).

use super::builtins::{bind, const_int};
use super::expr::{Args, Kwargs};
use super::semantic::shape_text;
use super::tracer::{err, Tracer};
use super::value::Val;
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{CmpPred, Combiner, Const, DType, Op, Type, Value};

impl Tracer<'_> {
    /// Handles `join` / `split` / `interleave` / `cat`; `None` if `f` is not one.
    pub fn call_join(
        &mut self,
        f: &str,
        args: &Args,
        kwargs: &Kwargs,
        span: Span,
    ) -> Result<Option<Val>> {
        let (args, kwargs) = (args.clone(), kwargs.clone());
        Ok(Some(match f {
            "join" | "interleave" => {
                let b = bind(f, args, kwargs, &["a", "b"], 2, span)?;
                let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let y = self.tensor_of(&b.req(1)?.0.clone(), b.span_of(1))?;
                let j = self.join(x, y, f, span)?;
                if f == "join" {
                    Val::T(j)
                } else {
                    Val::T(self.merge_last_two(j, span))
                }
            }
            "split" => {
                let b = bind(f, args, kwargs, &["a"], 1, span)?;
                let (x, _) =
                    self.data_tensor_any(&b.req(0)?.0.clone(), b.span_of(0), "tl.split")?;
                let (lo, hi) = self.split(x, span)?;
                Val::Tuple(vec![Val::T(lo), Val::T(hi)], false)
            }
            "cat" => {
                let b = bind(
                    f,
                    args,
                    kwargs,
                    &["input", "other", "can_reorder", "dim"],
                    2,
                    span,
                )?;
                let x = self.tensor_of(&b.req(0)?.0.clone(), b.span_of(0))?;
                let y = self.tensor_of(&b.req(1)?.0.clone(), b.span_of(1))?;
                let dim = match b.get(3) {
                    Some((v, s)) => const_int(v, *s, "dim")?,
                    None => 0,
                };
                Val::T(self.cat(x, y, dim, span)?)
            }
            _ => return Ok(None),
        }))
    }

    /// `tl.join(a, b)`: shape `S + [2]`.
    fn join(&mut self, a: Value, b: Value, f: &str, span: Span) -> Result<Value> {
        let (a, b) = self.broadcast_pair(a, b, span)?;
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta.elem() != tb.elem() {
            return Err(err(
                ErrorKind::Type,
                format!(
                    "tl.{f} needs two tiles of one type, got {} and {}; convert one first (x.to(...))",
                    self.fmt_type(a),
                    self.fmt_type(b)
                ),
                span,
            ));
        }
        let shape = self.shape(a);
        let rank = shape.len() as u32;
        let mut out_shape = shape.clone();
        out_shape.push(2);
        let mut unit = shape.clone();
        unit.push(1);
        let mut halves = vec![];
        for v in [a, b] {
            let e = self.b.push1(
                Op::ExpandDims {
                    value: v,
                    axis: rank,
                },
                ta.with_shape(unit.clone()),
                span,
            );
            halves.push(self.broadcast_to(e, &out_shape, span)?);
        }
        let first = self.coordinate_is(0, &out_shape, span)?;
        Ok(self.b.push1(
            Op::Select {
                cond: first,
                on_true: halves[0],
                on_false: halves[1],
            },
            ta.with_shape(out_shape),
            span,
        ))
    }

    /// An `i1` tile of `shape` (last dimension 2): whether the last coordinate is `k`.
    fn coordinate_is(&mut self, k: i64, shape: &[u32], span: Span) -> Result<Value> {
        let coord = self.last_coordinate(shape, span)?;
        let kk = self.konst(Const::Int(k), Type::scalar(DType::I32), span);
        let kk = self.broadcast_to(kk, shape, span)?;
        Ok(self.b.push1(
            Op::Cmp {
                pred: CmpPred::Eq,
                lhs: coord,
                rhs: kk,
            },
            Type::tile(DType::I1, shape.to_vec()),
            span,
        ))
    }

    /// The last coordinate of every element of a tile of `shape` (i32).
    fn last_coordinate(&mut self, shape: &[u32], span: Span) -> Result<Value> {
        let n = *shape.last().expect("a tile with a last dimension");
        let iota = self.b.push1(
            Op::Arange {
                start: 0,
                end: n as i64,
            },
            Type::tile(DType::I32, vec![n]),
            span,
        );
        let mut lifted = vec![1; shape.len() - 1];
        lifted.push(n);
        let iota = if lifted.len() == 1 {
            iota
        } else {
            self.b
                .push1(Op::Reshape(iota), Type::tile(DType::I32, lifted), span)
        };
        self.broadcast_to(iota, shape, span)
    }

    /// `tl.split(x)`: the halves of the last dimension (which must be 2).
    fn split(&mut self, x: Value, span: Span) -> Result<(Value, Value)> {
        let shape = self.shape(x);
        if shape.last() != Some(&2) {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "tl.split needs a tile whose last dimension is 2, got shape {}",
                    shape_text(&shape)
                ),
                span,
            ));
        }
        let axis = shape.len() as i64 - 1;
        let dt = self.ty(x).dtype().unwrap_or(DType::I32);
        let mut out = vec![];
        for pred in [CmpPred::Lt, CmpPred::Gt] {
            let coord = self.last_coordinate(&shape, span)?;
            let combiner = self.keep_by_coordinate(dt, pred, span);
            let r = self.reduce_core(vec![x, coord], Some(axis), false, combiner, span)?;
            out.push(r[0]);
        }
        Ok((out[0], out[1]))
    }

    /// The combination of `(value, coordinate)` pairs keeping the pair whose
    /// coordinate is `pred` the other's (smaller: `Lt`, larger: `Gt`).
    fn keep_by_coordinate(&mut self, dt: DType, pred: CmpPred, span: Span) -> Combiner {
        let args = self.b.begin_block(vec![
            Type::scalar(dt),
            Type::scalar(DType::I32),
            Type::scalar(dt),
            Type::scalar(DType::I32),
        ]);
        let (va, ca, vb, cb) = (args[0], args[1], args[2], args[3]);
        let keep_a = self.b.push1(
            Op::Cmp {
                pred,
                lhs: ca,
                rhs: cb,
            },
            Type::scalar(DType::I1),
            span,
        );
        let v = self.b.push1(
            Op::Select {
                cond: keep_a,
                on_true: va,
                on_false: vb,
            },
            Type::scalar(dt),
            span,
        );
        let c = self.b.push1(
            Op::Select {
                cond: keep_a,
                on_true: ca,
                on_false: cb,
            },
            Type::scalar(DType::I32),
            span,
        );
        self.b.push0(Op::Yield(vec![v, c]), span);
        Combiner::Region(Box::new(self.b.end_block()))
    }

    /// A tile of shape `S + [m, n]` as `S + [m * n]` (row-major); a rank-1 tile as is.
    fn merge_last_two(&mut self, x: Value, span: Span) -> Value {
        let shape = self.shape(x);
        if shape.len() < 2 {
            return x;
        }
        let mut merged = shape[..shape.len() - 2].to_vec();
        merged.push(shape[shape.len() - 2] * shape[shape.len() - 1]);
        let ty = self.ty(x).with_shape(merged);
        self.b.push1(Op::Reshape(x), ty, span)
    }

    /// `tl.cat(a, b, dim)`: the tiles one after the other along `dim`.
    fn cat(&mut self, a: Value, b: Value, dim: i64, span: Span) -> Result<Value> {
        let (sa, sb) = (self.shape(a), self.shape(b));
        let rank = sa.len();
        if rank == 0 || sb.len() != rank {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "tl.cat needs two tiles of one rank (at least 1), got shapes {} and {}",
                    shape_text(&sa),
                    shape_text(&sb)
                ),
                span,
            ));
        }
        let d = if dim < 0 { dim + rank as i64 } else { dim };
        if !(0..rank as i64).contains(&d) {
            return Err(err(
                ErrorKind::Argument,
                format!("tl.cat: dim {dim} is out of range for rank {rank}"),
                span,
            ));
        }
        let d = d as usize;
        if (0..rank).any(|i| i != d && sa[i] != sb[i]) || sa[d] != sb[d] {
            return Err(err(
                ErrorKind::Shape,
                format!(
                    "tl.cat needs tiles of one shape (tilewise joins them, so the concatenated dimension must match too), got {} and {}",
                    shape_text(&sa),
                    shape_text(&sb)
                ),
                span,
            ));
        }
        let j = self.join(a, b, "cat", span)?;
        // The new dimension (last) just before `dim`, then merged with it.
        let mut perm: Vec<u32> = (0..rank as u32).collect();
        perm.insert(d, rank as u32);
        let joined = self.shape(j);
        let permuted_shape: Vec<u32> = perm.iter().map(|&p| joined[p as usize]).collect();
        let p = self.b.push1(
            Op::Permute { value: j, perm },
            self.ty(j).with_shape(permuted_shape),
            span,
        );
        let mut out = sa.clone();
        out[d] *= 2;
        let ty = self.ty(p).with_shape(out);
        Ok(self.b.push1(Op::Reshape(p), ty, span))
    }
}
