//! Structured control flow as branches to labels: `for` loops (either direction of
//! step), `if`/`else`, and `while` loops whose condition is computed at the top.

use super::{bty, ity, Class, Printer};
use tilewise_core::thread_ir::{Reg, Stmt};
use tilewise_core::Result;

impl Printer<'_> {
    /// `for iv in lower..upper by step`: counts up for a positive step, down for a
    /// negative one, and not at all for a zero step.
    pub(super) fn for_loop(
        &mut self,
        iv: Reg,
        lower: Reg,
        upper: Reg,
        step: Reg,
        body: &[Stmt],
    ) -> Result<()> {
        let dt = self.dt(iv);
        let (iv, lo, hi, st) = (
            self.reg(iv),
            self.reg(lower),
            self.reg(upper),
            self.reg(step),
        );
        let (head, end) = (self.new_label("for"), self.new_label("endfor"));
        self.ins(format!("mov.{} {iv}, {lo};", bty(dt)));
        self.label(&head);
        let t = ity(dt);
        let (up, down, a, b) = (
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
            self.tmp(Class::Pred),
        );
        // (step > 0 && iv < upper) || (step < 0 && iv > upper)
        self.ins(format!("setp.gt.{t} {up}, {st}, 0;"));
        self.ins(format!("setp.lt.{t} {a}, {iv}, {hi};"));
        self.ins(format!("and.pred {up}, {up}, {a};"));
        self.ins(format!("setp.lt.{t} {down}, {st}, 0;"));
        self.ins(format!("setp.gt.{t} {b}, {iv}, {hi};"));
        self.ins(format!("and.pred {down}, {down}, {b};"));
        self.ins(format!("or.pred {up}, {up}, {down};"));
        self.ins(format!("@!{up} bra {end};"));
        self.stmts(body)?;
        self.ins(format!("add.{t} {iv}, {iv}, {st};"));
        self.ins(format!("bra {head};"));
        self.label(&end);
        Ok(())
    }

    /// `if cond { then } else { else }`, without a branch over an empty `else`.
    pub(super) fn if_else(
        &mut self,
        cond: Reg,
        then_body: &[Stmt],
        else_body: &[Stmt],
    ) -> Result<()> {
        let c = self.reg(cond);
        let (els, end) = (self.new_label("else"), self.new_label("endif"));
        self.ins(format!("@!{c} bra {els};"));
        self.stmts(then_body)?;
        if !else_body.is_empty() {
            self.ins(format!("bra {end};"));
        }
        self.label(&els);
        if !else_body.is_empty() {
            self.stmts(else_body)?;
            self.label(&end);
        }
        Ok(())
    }

    /// `while`: the condition's statements, then the condition, at the loop's head.
    pub(super) fn while_loop(
        &mut self,
        cond_body: &[Stmt],
        cond: Reg,
        body: &[Stmt],
    ) -> Result<()> {
        let (head, end) = (self.new_label("while"), self.new_label("endwhile"));
        self.label(&head);
        self.stmts(cond_body)?;
        let c = self.reg(cond);
        self.ins(format!("@!{c} bra {end};"));
        self.stmts(body)?;
        self.ins(format!("bra {head};"));
        self.label(&end);
        Ok(())
    }
}
