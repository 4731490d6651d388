//! Structured control flow: `for` (Python `range` semantics, negative steps included;
//! a zero step is a runtime error), `if`, and `while`.
//!
//! Loop-carried values are moved into the body's block arguments each iteration; the
//! terminator's values (cloned out of the value table) become the next carried values.

use super::eval::{Interp, Term};
use super::value::{wrap1, Data, RtValue, Tile};
use crate::diag::Result;
use crate::ir::{Block, Inst, Value};

impl<'a> Interp<'a> {
    fn bind(&mut self, args: &[Value], vals: Vec<RtValue>) {
        for (a, v) in args.iter().zip(vals) {
            self.set(*a, v);
        }
    }

    fn bind_results(&mut self, inst: &Inst, vals: Vec<RtValue>) -> Result<()> {
        if vals.len() != inst.results.len() {
            return Err(self.ierr(
                inst.span,
                format!(
                    "`{}` yields {} values for {} results",
                    inst.op.name(),
                    vals.len(),
                    inst.results.len()
                ),
            ));
        }
        self.bind(&inst.results, vals);
        Ok(())
    }

    fn yielded(&self, inst: &Inst, t: Term) -> Result<Vec<RtValue>> {
        match t {
            Term::Yield(v) => Ok(v),
            _ => Err(self.ierr(
                inst.span,
                format!("a block of `{}` does not end with yield", inst.op.name()),
            )),
        }
    }

    pub fn exec_for(
        &mut self,
        inst: &'a Inst,
        lower: Value,
        upper: Value,
        step: Value,
        init: &[Value],
        body: &'a Block,
    ) -> Result<()> {
        let sp = inst.span;
        let dt = self.dtype(lower, sp)?;
        let (lo, hi, st) = (
            self.int(lower, sp)?,
            self.int(upper, sp)?,
            self.int(step, sp)?,
        );
        if st == 0 {
            return Err(self.rt_err(sp, "for loop with step 0", "range() arg 3 must not be zero"));
        }
        if body.args.len() != init.len() + 1 {
            return Err(self.ierr(sp, "for body arguments do not match its carried values"));
        }
        let mut carried: Vec<RtValue> = init
            .iter()
            .map(|v| self.get(*v, sp).cloned())
            .collect::<Result<_>>()?;
        let (lo, hi, st) = (lo as i128, hi as i128, st as i128);
        let mut iv = lo;
        while (st > 0 && iv < hi) || (st < 0 && iv > hi) {
            self.set(
                body.args[0],
                RtValue::Data(Tile::new(dt, Data::I(vec![wrap1(dt, iv as i64)]))),
            );
            self.bind(&body.args[1..], carried);
            let t = self.exec_block(body)?;
            carried = self.yielded(inst, t)?;
            iv += st;
        }
        self.bind_results(inst, carried)
    }

    pub fn exec_if(
        &mut self,
        inst: &'a Inst,
        cond: Value,
        then_block: &'a Block,
        else_block: &'a Block,
    ) -> Result<()> {
        let c = self.int(cond, inst.span)? != 0;
        let t = self.exec_block(if c { then_block } else { else_block })?;
        let vals = self.yielded(inst, t)?;
        self.bind_results(inst, vals)
    }

    pub fn exec_while(
        &mut self,
        inst: &'a Inst,
        init: &[Value],
        before: &'a Block,
        after: &'a Block,
    ) -> Result<()> {
        let sp = inst.span;
        let mut carried: Vec<RtValue> = init
            .iter()
            .map(|v| self.get(*v, sp).cloned())
            .collect::<Result<_>>()?;
        loop {
            self.bind(&before.args, carried);
            match self.exec_block(before)? {
                Term::Cond(false, args) => return self.bind_results(inst, args),
                Term::Cond(true, args) => {
                    self.bind(&after.args, args);
                    let t = self.exec_block(after)?;
                    carried = self.yielded(inst, t)?;
                }
                _ => return Err(self.ierr(sp, "while before-block does not end with condition")),
            }
        }
    }
}
