//! Cooperative matrices (`wgpu_cooperative_matrix`): the checks that keep fragments
//! out of branches, the shared arrays they address, fragment types, and the fragment
//! statements (zero, load, store, multiply-add, copy).

use super::Printer;
use tilewise_core::ir::DType;
use tilewise_core::thread_ir::{Expr, Frag, FragRole, FragTy, Reg, Special, Stmt};

/// The shared arrays cooperative-matrix loads and stores address (they take a pointer
/// to a scalar element, so the array stays an array of scalars), and whether the
/// kernel uses subgroups (ids or reductions).
pub(super) fn coop_uses(
    b: &[Stmt],
    arrays: &mut std::collections::BTreeSet<u32>,
    subgroup_id: &mut bool,
) {
    for s in b {
        match s {
            Stmt::CoopLoad { arr, .. } | Stmt::CoopStore { arr, .. } => {
                arrays.insert(*arr);
            }
            Stmt::Assign {
                expr:
                    Expr::Special(Special::SubgroupId | Special::SubgroupInvocationId)
                    | Expr::SubgroupReduce { .. },
                ..
            } => *subgroup_id = true,
            _ => {}
        }
        for body in s.bodies() {
            coop_uses(body, arrays, subgroup_id);
        }
    }
}

/// Whether `body` holds a cooperative-matrix statement (at any depth).
fn has_coop(body: &[Stmt]) -> bool {
    body.iter().any(|s| {
        matches!(
            s,
            Stmt::CoopZero { .. }
                | Stmt::CoopLoad { .. }
                | Stmt::CoopStore { .. }
                | Stmt::CoopMulAdd { .. }
                | Stmt::CoopCopy { .. }
        ) || s.bodies().into_iter().any(|b| has_coop(b))
    })
}

/// Whether some `if` of `body` holds cooperative-matrix statements.
pub(super) fn coop_ifs(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::If {
            then_body,
            else_body,
            ..
        } if has_coop(then_body) || has_coop(else_body) => true,
        _ => s.bodies().into_iter().any(|b| coop_ifs(b)),
    })
}

/// The WGSL type of a fragment.
pub(super) fn frag_type(t: &FragTy) -> String {
    let role = match t.role {
        FragRole::A => "A",
        FragRole::B => "B",
        FragRole::C => "C",
    };
    let elem = if t.dtype == DType::F16 { "f16" } else { "f32" };
    format!("coop_mat{0}x{0}<{elem}, {role}>", t.size)
}

impl Printer<'_> {
    pub(super) fn coop_zero(&mut self, depth: usize, dst: Frag) {
        let t = frag_type(&self.k.frag_ty(dst));
        self.line(depth, &format!("fr{} = {t}();", dst.0));
    }

    /// `coopLoadT` reads row-major, `coopLoad` column-major.
    pub(super) fn coop_load(
        &mut self,
        depth: usize,
        dst: Frag,
        arr: u32,
        index: Reg,
        stride: u32,
        column_major: bool,
    ) {
        let t = frag_type(&self.k.frag_ty(dst));
        let f = if column_major {
            "coopLoad"
        } else {
            "coopLoadT"
        };
        self.line(
            depth,
            &format!("fr{} = {f}<{t}>(&s{arr}[r{}], {stride}u);", dst.0, index.0),
        );
    }

    pub(super) fn coop_store(
        &mut self,
        depth: usize,
        src: Frag,
        arr: u32,
        index: Reg,
        stride: u32,
    ) {
        self.line(
            depth,
            &format!("coopStoreT(fr{}, &s{arr}[r{}], {stride}u);", src.0, index.0),
        );
    }

    pub(super) fn coop_mul_add(&mut self, depth: usize, dst: Frag, a: Frag, b: Frag, c: Frag) {
        self.line(
            depth,
            &format!(
                "fr{} = coopMultiplyAdd(fr{}, fr{}, fr{});",
                dst.0, a.0, b.0, c.0
            ),
        );
    }

    pub(super) fn coop_copy(&mut self, depth: usize, dst: Frag, src: Frag) {
        self.line(depth, &format!("fr{} = fr{};", dst.0, src.0));
    }
}
