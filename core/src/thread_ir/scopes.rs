//! Which registers a printer may bind once, where they are assigned.
//!
//! Most Thread IR registers are assigned once. A printer whose target language has
//! immutable bindings (WGSL's `let`) can print such a register as a binding at its
//! assignment instead of declaring a mutable variable up front and storing to it: less
//! text, and no load at every use (naga's WGSL front end spends most of a large
//! kernel's compile time on the variables). That is valid when the register is
//! assigned exactly once, by an assignment, textually before every use, and every use
//! lies in the block of the assignment or in a block nested in it (lexical scope).
//!
//! Blocks are as a structured printer opens them: a `For` body, each branch of an
//! `If`, and one block for a `While` (its condition statements and its body share the
//! printed loop).

use super::{Reg, Stmt, ThreadKernel};

/// How a printer with immutable bindings may spell a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Never assigned nor read (left behind by value numbering): not declared.
    Unused,
    /// Bound once where it is assigned.
    Let,
    /// A mutable variable declared up front.
    Var,
}

#[derive(Clone, Default)]
struct RegInfo {
    /// Assignments seen so far (any statement writing the register).
    defs: u32,
    /// Reads seen.
    reads: u32,
    /// Whether some write is not a plain assignment, or a read came first.
    disqualified: bool,
    /// The block path of the (first) assignment.
    def_path: Vec<u32>,
}

struct Walk {
    regs: Vec<RegInfo>,
    next_block: u32,
}

impl Walk {
    fn read(&mut self, r: Reg, path: &[u32]) {
        let info = &mut self.regs[r.0 as usize];
        info.reads += 1;
        if info.defs == 0 || !path.starts_with(&info.def_path) {
            info.disqualified = true;
        }
    }

    fn write(&mut self, r: Reg, path: &[u32], plain: bool) {
        let info = &mut self.regs[r.0 as usize];
        info.defs += 1;
        if info.defs == 1 {
            info.def_path = path.to_vec();
        }
        info.disqualified |= !plain;
    }

    fn block(&mut self, body: &[Stmt], path: &mut Vec<u32>) {
        path.push(self.next_block);
        self.next_block += 1;
        self.stmts(body, path);
        path.pop();
    }

    fn stmts(&mut self, body: &[Stmt], path: &mut Vec<u32>) {
        for s in body {
            if let Stmt::While {
                cond_body,
                cond,
                body,
                ..
            } = s
            {
                // One block: the condition's statements, the condition, the body.
                path.push(self.next_block);
                self.next_block += 1;
                self.stmts(cond_body, path);
                self.read(*cond, path);
                self.stmts(body, path);
                path.pop();
                continue;
            }
            for r in s.reads() {
                self.read(r, path);
            }
            // Only a plain assignment can become a binding; a `For`'s induction
            // variable, atomics' and warp instructions' results stay variables.
            let plain = matches!(s, Stmt::Assign { .. });
            for w in s.writes() {
                self.write(w, path, plain);
            }
            for b in s.bodies() {
                self.block(b, path);
            }
        }
    }
}

/// For each register of `k`: how it can be spelled (see the module documentation).
pub fn bindings(k: &ThreadKernel) -> Vec<Binding> {
    let mut w = Walk {
        regs: vec![RegInfo::default(); k.regs.len()],
        next_block: 1,
    };
    w.stmts(&k.body, &mut vec![0]);
    w.regs
        .iter()
        .map(|r| {
            if r.defs == 0 && r.reads == 0 {
                Binding::Unused
            } else if r.defs == 1 && !r.disqualified {
                Binding::Let
            } else {
                Binding::Var
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Const, DType};
    use crate::thread_ir::{Expr, RegTy};

    use crate::thread_ir::testing::assign;

    #[test]
    fn scopes_and_loop_carried_registers() {
        // r0 = 1; r1 = 0 (carried); for r2 in r1..r0 { r3 = r1 + r0; r1 = r3; if r4? }
        // r5 is assigned in a branch and read after it: not bindable.
        let body = vec![
            assign(0, Expr::Const(Const::Int(1))),
            assign(1, Expr::Const(Const::Int(0))),
            assign(4, Expr::Const(Const::Bool(true))),
            Stmt::For {
                iv: Reg(2),
                lower: Reg(1),
                upper: Reg(0),
                step: Reg(0),
                body: vec![
                    assign(3, Expr::Binary(crate::ir::BinaryOp::Add, Reg(1), Reg(0))),
                    assign(1, Expr::Copy(Reg(3))),
                    Stmt::If {
                        cond: Reg(4),
                        then_body: vec![assign(5, Expr::Copy(Reg(3)))],
                        else_body: vec![],
                    },
                    assign(6, Expr::Copy(Reg(5))),
                ],
            },
        ];
        let k = ThreadKernel {
            name: "t".into(),
            params: vec![],
            threads: 1,
            shared: vec![],
            regs: vec![RegTy::scalar(DType::I32); 7],
            frags: vec![],
            body,
            notes: vec![],
            source: None,
            checks: None,
        };
        use Binding::{Let, Unused, Var};
        let mut regs = k.regs.clone();
        regs.push(RegTy::scalar(DType::I32));
        let k = ThreadKernel { regs, ..k };
        assert_eq!(
            bindings(&k),
            vec![Let, Var, Var, Let, Let, Var, Let, Unused]
        );
    }
}
