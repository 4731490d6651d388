//! Structured control flow: `for` (Python `range` semantics, negative steps included;
//! a zero step is a runtime error), `if`, and `while`.
//!
//! Loop-carried values are moved into the body's block arguments each iteration; the
//! terminator's values (cloned out of the value table) become the next carried values.

use super::eval::{Interp, Term};
use super::schedule::Baton;
use super::value::{wrap1, Data, RtValue, Tile};
use crate::diag::{Result, Span};
use crate::ir::{Block, Inst, Value};

impl<'a> Interp<'a> {
    /// Counts a loop iteration against `TILEWISE_STEP_LIMIT`.
    fn step(&mut self, loop_span: Span) -> Result<()> {
        self.steps += 1;
        match self.step_limit {
            Some(limit) if self.steps > limit => Err(self.rt_err(
                loop_span,
                "step limit reached",
                &format!("the launch ran more than {limit} loop iterations (TILEWISE_STEP_LIMIT); this loop was running"),
            )),
            _ => Ok(()),
        }
    }

    /// Hands the memory to the scheduler until another program has changed it.
    fn wait_for_others(&mut self, loop_span: Span) -> Result<()> {
        let Some(handle) = &self.handle else {
            return Ok(());
        };
        let baton = Baton {
            bufs: std::mem::take(&mut self.mem.bufs),
            writes: self.mem.writes,
            reads: self.mem.reads,
            steps: self.steps,
        };
        match handle.wait(baton, loop_span) {
            Some(b) => {
                self.mem.bufs = b.bufs;
                self.mem.writes = b.writes;
                self.mem.reads = b.reads;
                self.steps = b.steps;
                Ok(())
            }
            None => Err(self.rt_err(
                loop_span,
                "abandoned",
                "the launch stopped while this program waited",
            )),
        }
    }

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
            self.step(sp)?;
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
            self.step(sp)?;
            let (writes, reads) = (self.mem.writes, self.mem.reads);
            // The loop's state, kept only while programs are interleaved.
            let state = self.handle.as_ref().map(|_| carried.clone());
            self.bind(&before.args, carried);
            match self.exec_block(before)? {
                Term::Cond(false, args) => return self.bind_results(inst, args),
                Term::Cond(true, args) => {
                    self.bind(&after.args, args);
                    let t = self.exec_block(after)?;
                    carried = self.yielded(inst, t)?;
                    // An iteration that read memory, changed none and left the loop's
                    // state as it found it would repeat itself exactly until another
                    // program writes: a spin-wait; let the others run.
                    if self.mem.writes == writes
                        && self.mem.reads > reads
                        && state.is_some_and(|s| s == carried)
                    {
                        self.wait_for_others(sp)?;
                    }
                }
                _ => return Err(self.ierr(sp, "while before-block does not end with condition")),
            }
        }
    }
}
