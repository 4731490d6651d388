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

use super::{Expr, Reg, Stmt, ThreadKernel};

impl Expr {
    /// The registers the expression reads.
    pub fn operands(&self) -> Vec<Reg> {
        match self {
            Expr::Const(_) | Expr::Special(_) | Expr::Param(_) => vec![],
            Expr::Copy(a) | Expr::Unary(_, a) | Expr::Cast { value: a, .. } => vec![*a],
            Expr::Binary(_, a, b) | Expr::Cmp(_, a, b) => vec![*a, *b],
            Expr::Select {
                cond,
                on_true,
                on_false,
            } => vec![*cond, *on_true, *on_false],
            Expr::Fma(a, b, c) => vec![*a, *b, *c],
            Expr::Load {
                index, mask, other, ..
            } => [Some(*index), *mask, *other]
                .into_iter()
                .flatten()
                .collect(),
            Expr::SharedLoad { index, .. } => vec![*index],
            Expr::Extract { vector, .. } => vec![*vector],
            Expr::Construct(parts) => parts.clone(),
            Expr::ShuffleXor { value, .. } => vec![*value],
        }
    }
}

#[derive(Clone, Default)]
struct RegInfo {
    /// Assignments seen so far (any statement writing the register).
    defs: u32,
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
            match s {
                Stmt::Assign { dst, expr } => {
                    for r in expr.operands() {
                        self.read(r, path);
                    }
                    self.write(*dst, path, true);
                }
                Stmt::Store {
                    index, value, mask, ..
                } => {
                    for r in [Some(*index), Some(*value), *mask].into_iter().flatten() {
                        self.read(r, path);
                    }
                }
                Stmt::SharedStore { index, value, .. } => {
                    self.read(*index, path);
                    self.read(*value, path);
                }
                Stmt::Atomic {
                    dst,
                    index,
                    value,
                    mask,
                    ..
                } => {
                    for r in [Some(*index), Some(*value), *mask].into_iter().flatten() {
                        self.read(r, path);
                    }
                    self.write(*dst, path, false);
                }
                Stmt::AtomicCas {
                    dst,
                    index,
                    cmp,
                    value,
                    ..
                } => {
                    for r in [*index, *cmp, *value] {
                        self.read(r, path);
                    }
                    self.write(*dst, path, false);
                }
                Stmt::Barrier => {}
                Stmt::LdMatrix { dst, index, .. } => {
                    self.read(*index, path);
                    for d in dst {
                        self.write(*d, path, false);
                    }
                }
                Stmt::Mma { d, a, b, c, .. } => {
                    for r in a.iter().chain(b).chain(c) {
                        self.read(*r, path);
                    }
                    for r in d {
                        self.write(*r, path, false);
                    }
                }
                Stmt::For {
                    iv,
                    lower,
                    upper,
                    step,
                    body,
                } => {
                    for r in [*lower, *upper, *step] {
                        self.read(r, path);
                    }
                    self.write(*iv, path, false);
                    self.block(body, path);
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.read(*cond, path);
                    self.block(then_body, path);
                    self.block(else_body, path);
                }
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                } => {
                    path.push(self.next_block);
                    self.next_block += 1;
                    self.stmts(cond_body, path);
                    self.read(*cond, path);
                    self.stmts(body, path);
                    path.pop();
                }
            }
        }
    }
}

/// For each register of `k`: whether it can be bound once at its assignment (see the
/// module documentation). Registers never assigned are `false`.
pub fn bindable_once(k: &ThreadKernel) -> Vec<bool> {
    let mut w = Walk {
        regs: vec![RegInfo::default(); k.regs.len()],
        next_block: 1,
    };
    w.stmts(&k.body, &mut vec![0]);
    w.regs
        .iter()
        .map(|r| r.defs == 1 && !r.disqualified)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Const, DType};
    use crate::thread_ir::RegTy;

    fn assign(dst: u32, expr: Expr) -> Stmt {
        Stmt::Assign {
            dst: Reg(dst),
            expr,
        }
    }

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
            body,
        };
        assert_eq!(
            bindable_once(&k),
            vec![true, false, false, true, true, false, true]
        );
    }
}
