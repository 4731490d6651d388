//! Structured control flow: `for` loops (either direction of step), `if`/`else`, and
//! `while` loops as a WGSL `loop` whose condition is computed at the top.

use super::Printer;
use tilewise_core::thread_ir::{Reg, Stmt};
use tilewise_core::Result;

impl Printer<'_> {
    /// `for iv in lower..upper by step`: counts up for a positive step, down for a
    /// negative one, and not at all for a zero step.
    pub(super) fn for_loop(
        &mut self,
        depth: usize,
        iv: Reg,
        lower: Reg,
        upper: Reg,
        step: Reg,
        body: &[Stmt],
    ) -> Result<()> {
        self.line(
            depth,
            &format!(
                "for (r{iv} = r{lo}; (r{st} > 0 && r{iv} < r{hi}) || (r{st} < 0 && r{iv} > r{hi}); r{iv} = r{iv} + r{st}) {{",
                iv = iv.0,
                lo = lower.0,
                hi = upper.0,
                st = step.0
            ),
        );
        self.stmts(body, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }

    /// `if cond { then } else { else }`, without an empty `else`.
    pub(super) fn if_else(
        &mut self,
        depth: usize,
        cond: Reg,
        then_body: &[Stmt],
        else_body: &[Stmt],
    ) -> Result<()> {
        self.line(depth, &format!("if (r{}) {{", cond.0));
        self.stmts(then_body, depth + 1)?;
        if !else_body.is_empty() {
            self.line(depth, "} else {");
            self.stmts(else_body, depth + 1)?;
        }
        self.line(depth, "}");
        Ok(())
    }

    /// `while`: the condition's statements, then the condition, at the top of a `loop`.
    pub(super) fn while_loop(
        &mut self,
        depth: usize,
        cond_body: &[Stmt],
        cond: Reg,
        body: &[Stmt],
    ) -> Result<()> {
        self.line(depth, "loop {");
        self.stmts(cond_body, depth + 1)?;
        self.line(depth + 1, &format!("if (!r{}) {{ break; }}", cond.0));
        self.stmts(body, depth + 1)?;
        self.line(depth, "}");
        Ok(())
    }
}
