//! Reductions and inclusive scans along one axis.
//!
//! A tile of shape `[.., L, ..]` is viewed as `[outer, L, inner]`. Built-in combiners run
//! as whole-tile loops: float `Add`/`Mul` accumulate in f64 and round once per output
//! (the most accurate order; GPUs reduce in a tree and differ by rounding), integers
//! wrap; `Max`/`Min` are `maxnum`/`minnum` (NaN loses); `ArgMax`/`ArgMin` combine
//! `(value, index)` pairs, ties going to the smaller index and NaN losing. A `Region`
//! combiner runs its block once per element pair, folding left to right (right to left
//! for a reverse scan).

use super::eval::{Interp, Term};
use super::value::{round1, wrap1, Data, RtValue, Tile};
use crate::diag::Result;
use crate::ir::{Block, Combiner, DType, Inst, Value};

/// `a` beats `b` under max (`gt`) or min, NaN losing; equal values do not beat.
fn beats(a: f64, b: f64, max: bool) -> bool {
    if a.is_nan() {
        return false;
    }
    if b.is_nan() {
        return true;
    }
    if max {
        a > b
    } else {
        a < b
    }
}

fn beats_i(a: i64, b: i64, max: bool, u64_: bool) -> bool {
    if u64_ {
        if max {
            (a as u64) > (b as u64)
        } else {
            (a as u64) < (b as u64)
        }
    } else if max {
        a > b
    } else {
        a < b
    }
}

/// One step of a built-in combiner on element tuples (`acc`, `x`), in place.
fn combine(c: &Combiner, dts: &[DType], acc: &mut [Elem], x: &[Elem]) {
    let dt = dts[0];
    let u64_ = dt == DType::U64;
    match c {
        Combiner::Add => {
            acc[0] = match (acc[0], x[0]) {
                (Elem::F(a), Elem::F(b)) => Elem::F(a + b),
                (Elem::I(a), Elem::I(b)) => Elem::I(a.wrapping_add(b)),
                (a, _) => a,
            }
        }
        Combiner::Mul => {
            acc[0] = match (acc[0], x[0]) {
                (Elem::F(a), Elem::F(b)) => Elem::F(a * b),
                (Elem::I(a), Elem::I(b)) => Elem::I(a.wrapping_mul(b)),
                (a, _) => a,
            }
        }
        Combiner::Max | Combiner::Min => {
            let max = matches!(c, Combiner::Max);
            let take = match (acc[0], x[0]) {
                (Elem::F(a), Elem::F(b)) => beats(b, a, max),
                (Elem::I(a), Elem::I(b)) => beats_i(b, a, max, u64_),
                _ => false,
            };
            if take {
                acc[0] = x[0];
            }
        }
        Combiner::ArgMax | Combiner::ArgMin => {
            let max = matches!(c, Combiner::ArgMax);
            let (ia, ib) = match (acc.get(1), x.get(1)) {
                (Some(Elem::I(a)), Some(Elem::I(b))) => (*a, *b),
                _ => (0, 0),
            };
            let take = match (acc[0], x[0]) {
                (Elem::F(a), Elem::F(b)) => {
                    beats(b, a, max) || (b == a && ib < ia) || (a.is_nan() && b.is_nan() && ib < ia)
                }
                (Elem::I(a), Elem::I(b)) => beats_i(b, a, max, u64_) || (a == b && ib < ia),
                _ => false,
            };
            if take {
                acc.copy_from_slice(x);
            }
        }
        Combiner::Region(_) => {}
    }
}

/// One element of any tile.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Elem {
    F(f64),
    I(i64),
}

fn elem(d: &Data, i: usize) -> Elem {
    match d {
        Data::F(v) => Elem::F(v[i]),
        Data::I(v) => Elem::I(v[i]),
    }
}

fn put(d: &mut Data, i: usize, e: Elem, dt: DType) {
    match (d, e) {
        (Data::F(v), Elem::F(x)) => v[i] = round1(dt, x),
        (Data::I(v), Elem::I(x)) => v[i] = wrap1(dt, x),
        (Data::F(v), Elem::I(x)) => v[i] = x as f64,
        (Data::I(v), Elem::F(x)) => v[i] = x as i64,
    }
}

impl<'a> Interp<'a> {
    /// Runs a combine region on `(acc..., x...)`.
    fn region(
        &mut self,
        inst: &Inst,
        b: &'a Block,
        dts: &[DType],
        acc: &mut [Elem],
        x: &[Elem],
    ) -> Result<()> {
        if b.args.len() != 2 * acc.len() {
            return Err(self.ierr(
                inst.span,
                "combine region takes the wrong number of arguments",
            ));
        }
        for (i, e) in acc.iter().chain(x).enumerate() {
            let dt = dts[i % dts.len()];
            let t = match *e {
                Elem::F(v) => Tile::new(dt, Data::F(vec![v])),
                Elem::I(v) => Tile::new(dt, Data::I(vec![v])),
            };
            self.set(b.args[i], RtValue::Data(t));
        }
        let vals = match self.exec_block(b)? {
            Term::Yield(v) if v.len() == acc.len() => v,
            _ => {
                return Err(self.ierr(inst.span, "combine region must yield one value per operand"))
            }
        };
        for (a, v) in acc.iter_mut().zip(vals) {
            match v {
                RtValue::Data(t) => *a = elem(&t.data, 0),
                _ => return Err(self.ierr(inst.span, "combine region yields a pointer")),
            }
        }
        Ok(())
    }

    fn operands(
        &self,
        inst: &Inst,
        operands: &[Value],
        axis: u32,
    ) -> Result<(Vec<Tile>, usize, usize, usize)> {
        let sp = inst.span;
        let Some(&first) = operands.first() else {
            return Err(self.ierr(sp, "reduction without operands"));
        };
        let shape = self.shape(first);
        let a = axis as usize;
        if a >= shape.len() {
            return Err(self.ierr(sp, format!("axis {axis} of a rank-{} tile", shape.len())));
        }
        let outer: usize = shape[..a].iter().map(|&d| d as usize).product();
        let len = shape[a] as usize;
        let inner: usize = shape[a + 1..].iter().map(|&d| d as usize).product();
        let tiles = operands
            .iter()
            .map(|v| self.tile(*v, sp).cloned())
            .collect::<Result<Vec<_>>>()?;
        Ok((tiles, outer, len, inner))
    }

    pub fn reduce(
        &mut self,
        inst: &'a Inst,
        operands: &[Value],
        axis: u32,
        combiner: &'a Combiner,
    ) -> Result<()> {
        let (tiles, outer, len, inner) = self.operands(inst, operands, axis)?;
        let dts: Vec<DType> = tiles.iter().map(|t| t.dtype).collect();
        let nout = outer * inner;
        if inst.results.len() != tiles.len() {
            return Err(self.ierr(inst.span, "reduce: one result per operand"));
        }
        // Fast whole-tile paths for single-operand sums and max/min.
        if tiles.len() == 1
            && len > 0
            && matches!(combiner, Combiner::Add | Combiner::Max | Combiner::Min)
        {
            let dt = dts[0];
            let out = match &tiles[0].data {
                Data::F(x) => {
                    let mut acc = Vec::with_capacity(nout);
                    for o in 0..outer {
                        let base = o * len * inner;
                        let mut row: Vec<f64> = x[base..base + inner].to_vec();
                        for l in 1..len {
                            let src = &x[base + l * inner..base + (l + 1) * inner];
                            match combiner {
                                Combiner::Add => row.iter_mut().zip(src).for_each(|(a, b)| *a += b),
                                Combiner::Max => {
                                    row.iter_mut().zip(src).for_each(|(a, b)| *a = a.max(*b))
                                }
                                _ => row.iter_mut().zip(src).for_each(|(a, b)| *a = a.min(*b)),
                            }
                        }
                        acc.extend(row.into_iter().map(|v| round1(dt, v)));
                    }
                    Data::F(acc)
                }
                Data::I(_) if dt == DType::U64 && !matches!(combiner, Combiner::Add) => {
                    return self.reduce_generic(inst, &tiles, &dts, outer, len, inner, combiner)
                }
                Data::I(x) => {
                    let mut acc = Vec::with_capacity(nout);
                    for o in 0..outer {
                        let base = o * len * inner;
                        let mut row: Vec<i64> = x[base..base + inner].to_vec();
                        for l in 1..len {
                            let src = &x[base + l * inner..base + (l + 1) * inner];
                            match combiner {
                                Combiner::Add => row
                                    .iter_mut()
                                    .zip(src)
                                    .for_each(|(a, b)| *a = a.wrapping_add(*b)),
                                Combiner::Max => {
                                    row.iter_mut().zip(src).for_each(|(a, b)| *a = (*a).max(*b))
                                }
                                _ => row.iter_mut().zip(src).for_each(|(a, b)| *a = (*a).min(*b)),
                            }
                        }
                        acc.extend(row.into_iter().map(|v| wrap1(dt, v)));
                    }
                    Data::I(acc)
                }
            };
            self.set(inst.results[0], RtValue::Data(Tile::new(dt, out)));
            return Ok(());
        }
        self.reduce_generic(inst, &tiles, &dts, outer, len, inner, combiner)
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce_generic(
        &mut self,
        inst: &'a Inst,
        tiles: &[Tile],
        dts: &[DType],
        outer: usize,
        len: usize,
        inner: usize,
        combiner: &'a Combiner,
    ) -> Result<()> {
        let nout = outer * inner;
        let mut outs: Vec<Data> = dts.iter().map(|&d| Data::zeros(d, nout)).collect();
        if len == 0 {
            for (r, (d, dt)) in inst.results.iter().zip(outs.into_iter().zip(dts)) {
                self.set(*r, RtValue::Data(Tile::new(*dt, d)));
            }
            return Ok(());
        }
        let mut acc = vec![Elem::I(0); tiles.len()];
        let mut x = acc.clone();
        for o in 0..outer {
            for i in 0..inner {
                let at = |l: usize| (o * len + l) * inner + i;
                for (k, t) in tiles.iter().enumerate() {
                    acc[k] = elem(&t.data, at(0));
                }
                for l in 1..len {
                    for (k, t) in tiles.iter().enumerate() {
                        x[k] = elem(&t.data, at(l));
                    }
                    match combiner {
                        Combiner::Region(b) => self.region(inst, b, dts, &mut acc, &x)?,
                        c => combine(c, dts, &mut acc, &x),
                    }
                }
                for k in 0..tiles.len() {
                    put(&mut outs[k], o * inner + i, acc[k], dts[k]);
                }
            }
        }
        for (r, (d, dt)) in inst.results.iter().zip(outs.into_iter().zip(dts)) {
            self.set(*r, RtValue::Data(Tile::new(*dt, d)));
        }
        Ok(())
    }

    pub fn scan(
        &mut self,
        inst: &'a Inst,
        operands: &[Value],
        axis: u32,
        reverse: bool,
        combiner: &'a Combiner,
    ) -> Result<()> {
        let (tiles, outer, len, inner) = self.operands(inst, operands, axis)?;
        let dts: Vec<DType> = tiles.iter().map(|t| t.dtype).collect();
        if inst.results.len() != tiles.len() {
            return Err(self.ierr(inst.span, "scan: one result per operand"));
        }
        let mut outs: Vec<Data> = tiles.iter().map(|t| t.data.clone()).collect();
        let mut acc = vec![Elem::I(0); tiles.len()];
        let mut x = acc.clone();
        for o in 0..outer {
            for i in 0..inner {
                let at = |l: usize| (o * len + l) * inner + i;
                for step in 0..len {
                    let l = if reverse { len - 1 - step } else { step };
                    for (k, t) in tiles.iter().enumerate() {
                        x[k] = elem(&t.data, at(l));
                    }
                    if step == 0 {
                        acc.copy_from_slice(&x);
                    } else {
                        match combiner {
                            Combiner::Region(b) => self.region(inst, b, &dts, &mut acc, &x)?,
                            c => combine(c, &dts, &mut acc, &x),
                        }
                        // The running value is rounded to its dtype after each step, as
                        // every op is (it was kept in f64: a cumsum of f16 differed
                        // from the GPUs' by an ulp; found by the fuzzer).
                        for (a, &dt) in acc.iter_mut().zip(&dts) {
                            *a = match *a {
                                Elem::F(v) => Elem::F(round1(dt, v)),
                                Elem::I(v) => Elem::I(wrap1(dt, v)),
                            };
                        }
                    }
                    for k in 0..tiles.len() {
                        put(&mut outs[k], at(l), acc[k], dts[k]);
                    }
                }
            }
        }
        for (r, (d, dt)) in inst.results.iter().zip(outs.into_iter().zip(dts)) {
            self.set(*r, RtValue::Data(Tile::new(dt, d)));
        }
        Ok(())
    }
}
