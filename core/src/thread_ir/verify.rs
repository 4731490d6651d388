//! The Thread IR verifier: the invariants every pass after expansion keeps, checked
//! after each of them in debug builds and tests (`lower::to_thread_ir`).
//!
//! - every register, parameter, buffer, shared array and fragment index is in range;
//!   scalar parameters are read with `Param`, buffers with loads and stores, and a
//!   buffer that is stored to or updated atomically is marked `written`;
//! - every register read is assigned somewhere, with a type that fits: comparisons
//!   give `i1`, conditions (`If`, `While`, `Select`, masks) are `i1`, binary operands
//!   share the result's dtype, `Extract` reads an existing lane, `Construct` fills every
//!   lane;
//! - cooperative-matrix statements never sit inside an `If`;
//! - collective statements sit in control flow that every thread they involve takes
//!   together (`uniformity.rs`): barriers and warpgroup MMA in the program's, warp
//!   shuffles, `ldmatrix`, `mma`, subgroup reductions and cooperative-matrix
//!   statements in each warp's;
//! - no statement needs a capability the options do not give (`mma`, `ldmatrix` and
//!   asynchronous copies, warpgroup MMA, warp shuffles, subgroup reductions,
//!   cooperative matrices): a lowering path that leaks one is caught here, not by a
//!   printer;
//! - after the `math` pass (`lower::math`) and every later one: no `erf`, `tanh` or
//!   `pow` below f64, `exp` and `log` only where the target has them, and no arithmetic
//!   on f16 / bf16 registers except f16 on a target that computes it natively.
//!
//! A violation is an internal error naming the pass that broke it.

use super::uniformity::Uniformity;
use super::{Expr, ParamKind, Reg, Stmt, ThreadKernel, WgmmaA};
use crate::diag::{Diagnostic, Result};
use crate::ir::DType;
use crate::lower::expand::ExpandOptions;

/// Checks `k` (after `pass`) against the invariants above for a lowering with `opt`.
pub fn verify(k: &ThreadKernel, opt: &ExpandOptions, pass: &str) -> Result<()> {
    let mut v = Verifier {
        k,
        opt,
        // Expansion writes the math functions as they are; `math` rewrites them.
        math_lowered: pass != "expand",
        assigned: vec![false; k.regs.len()],
        errors: vec![],
    };
    v.collect_assigned(&k.body);
    v.overlays();
    v.tensor_maps();
    v.body(&k.body, 0);
    if v.errors.is_empty() {
        let uniform = super::uniformity::uniformity(k);
        v.collective(&k.body, Uniformity::Program, &uniform);
    }
    match v.errors.first() {
        None => Ok(()),
        Some(e) => Err(Diagnostic::internal(format!(
            "Thread IR of `{}` after {pass}: {e}{}",
            k.name,
            if v.errors.len() > 1 {
                format!(" (and {} more)", v.errors.len() - 1)
            } else {
                String::new()
            }
        ))),
    }
}

struct Verifier<'a> {
    k: &'a ThreadKernel,
    opt: &'a ExpandOptions,
    math_lowered: bool,
    assigned: Vec<bool>,
    errors: Vec<String>,
}

impl Verifier<'_> {
    fn err(&mut self, msg: String) {
        if self.errors.len() < 16 {
            self.errors.push(msg);
        }
    }

    /// Tensor map parameters describe a buffer parameter by scalar parameters.
    fn tensor_maps(&mut self) {
        for p in &self.k.params {
            let ParamKind::TensorMap(m) = &p.kind else {
                continue;
            };
            self.needs(self.opt.tma, "a tensor map parameter");
            if !matches!(
                self.k.params.get(m.buffer as usize).map(|p| &p.kind),
                Some(ParamKind::Buffer { .. })
            ) {
                self.err(format!(
                    "tensor map `{}` of a parameter that is not a buffer",
                    p.name
                ));
            }
            let rank = m.rank();
            if !(1..=5).contains(&rank) || m.strides.len() + 1 != rank || m.box_dims.len() != rank {
                self.err(format!("tensor map `{}` of inconsistent rank", p.name));
            }
            if ![0, 32, 64, 128].contains(&m.swizzle)
                || (m.swizzle > 0
                    && m.box_dims.first().map(|&b| b * m.dtype.size_bytes() as u32)
                        > Some(m.swizzle))
                || m.box_dims.iter().any(|&b| !(1..=256).contains(&b))
            {
                self.err(format!(
                    "tensor map `{}`: a box the hardware cannot copy",
                    p.name
                ));
            }
            for e in m.dims.iter().chain(&m.strides) {
                if let super::tma::Extent::Param(i) = e {
                    if !matches!(
                        self.k.params.get(*i as usize).map(|p| &p.kind),
                        Some(ParamKind::Scalar { .. })
                    ) {
                        self.err(format!(
                            "tensor map `{}` reads a parameter that is not a scalar",
                            p.name
                        ));
                    }
                }
            }
        }
    }

    fn collect_assigned(&mut self, body: &[Stmt]) {
        for s in body {
            for r in s.writes() {
                if let Some(a) = self.assigned.get_mut(r.0 as usize) {
                    *a = true;
                }
            }
            for b in s.bodies() {
                self.collect_assigned(b);
            }
        }
    }

    fn reg(&mut self, r: Reg) -> Option<super::RegTy> {
        match self.k.regs.get(r.0 as usize) {
            Some(t) => Some(*t),
            None => {
                self.err(format!(
                    "{r} is not a register ({} declared)",
                    self.k.regs.len()
                ));
                None
            }
        }
    }

    fn read(&mut self, r: Reg) {
        if self.reg(r).is_some() && !self.assigned[r.0 as usize] {
            self.err(format!("{r} is read but never assigned"));
        }
    }

    fn is_bool(&mut self, r: Reg, what: &str) {
        if let Some(t) = self.reg(r) {
            if t.dtype != DType::I1 {
                self.err(format!("{what} {r} is {t}, not i1"));
            }
        }
    }

    fn buffer(&mut self, buf: u32, written: bool, what: &str) {
        if super::is_address(buf) {
            return;
        }
        match self.k.params.get(buf as usize).map(|p| &p.kind) {
            Some(ParamKind::Buffer { written: w, .. }) => {
                if written && !w {
                    self.err(format!(
                        "{what} to buffer {buf}, which is not marked written"
                    ));
                }
            }
            _ => self.err(format!(
                "{what} through parameter {buf}, which is not a buffer"
            )),
        }
    }

    /// Each overlay takes over an earlier array that overlays none, from its start,
    /// no larger and no more aligned than it; transaction barriers neither overlay nor
    /// are overlaid (PTX wants `mbarrier.inval` before their memory holds data).
    fn overlays(&mut self) {
        fn barriers(body: &[Stmt], out: &mut Vec<u32>) {
            for s in body {
                match s {
                    Stmt::MbarrierInit { arr, .. } => out.push(*arr),
                    Stmt::TmaLoad { bar_arr, .. } => out.push(*bar_arr),
                    _ => {}
                }
                for b in s.bodies() {
                    barriers(b, out);
                }
            }
        }
        let mut bars = vec![];
        if self.k.shared.iter().any(|a| a.overlays.is_some()) {
            barriers(&self.k.body, &mut bars);
        }
        for (i, a) in self.k.shared.iter().enumerate() {
            let Some(h) = a.overlays else { continue };
            if bars.contains(&(i as u32)) || bars.contains(&h) {
                self.err(format!(
                    "shared array `{}` overlays s{h} and one of them holds transaction barriers",
                    a.name
                ));
            }
            let bytes = |x: &super::SharedArray| x.len as u64 * x.dtype.size_bytes() as u64;
            match self.k.shared.get(h as usize) {
                Some(host) if (h as usize) < i && host.overlays.is_none() => {
                    if bytes(a) > bytes(host) || a.align > host.align.max(16) {
                        self.err(format!(
                            "shared array `{}` ({} bytes, aligned to {}) overlays `{}` ({} bytes, aligned to {})",
                            a.name,
                            bytes(a),
                            a.align,
                            host.name,
                            bytes(host),
                            host.align
                        ));
                    }
                }
                _ => self.err(format!(
                    "shared array `{}` overlays s{h}, which is not an earlier array of its own",
                    a.name
                )),
            }
        }
    }

    fn shared(&mut self, arr: u32) {
        if arr as usize >= self.k.shared.len() {
            self.err(format!("shared array {arr} does not exist"));
        }
    }

    /// A shared array of transaction barriers (8-byte `i64` words).
    fn barrier_array(&mut self, arr: u32) {
        match self.k.shared.get(arr as usize) {
            Some(a) if a.dtype != DType::I64 => self.err(format!(
                "transaction barriers in `{}` of {}, not i64",
                a.name, a.dtype
            )),
            Some(_) => {}
            None => self.err(format!("shared array {arr} does not exist")),
        }
    }

    fn frag(&mut self, f: super::Frag) {
        if f.0 as usize >= self.k.frags.len() {
            self.err(format!("fragment {} does not exist", f.0));
        }
    }

    fn needs(&mut self, ok: bool, what: &str) {
        if !ok {
            self.err(format!(
                "{what} reached a lowering for {} whose options do not allow it",
                self.opt.backend
            ));
        }
    }

    fn expr(&mut self, dst: Reg, e: &Expr) {
        for r in e.operands() {
            self.read(r);
        }
        let Some(d) = self.reg(dst) else { return };
        if self.math_lowered {
            self.math(dst, d, e);
        }
        match e {
            Expr::Param(i)
                if !matches!(
                    self.k.params.get(*i as usize).map(|p| &p.kind),
                    Some(ParamKind::Scalar { .. })
                ) =>
            {
                self.err(format!("{dst} reads parameter {i}, which is not a scalar"));
            }
            Expr::Address(i) => {
                if !matches!(
                    self.k.params.get(*i as usize).map(|p| &p.kind),
                    Some(ParamKind::Buffer { .. })
                ) {
                    self.err(format!(
                        "{dst} takes the address of parameter {i}, which is not a buffer"
                    ));
                }
                if !matches!(d.dtype, DType::I64 | DType::U64) || d.lanes != 1 {
                    self.err(format!(
                        "{dst} holds an address in {d}, not a 64-bit integer"
                    ));
                }
            }
            Expr::Binary(op, a, b) => {
                if let (Some(ta), Some(tb)) = (self.reg(*a), self.reg(*b)) {
                    if ta.dtype != tb.dtype || ta.dtype != d.dtype {
                        self.err(format!("{dst} = {} of {ta} and {tb} into {d}", op.name()));
                    }
                }
            }
            Expr::Cmp(_, a, b) => {
                if d.dtype != DType::I1 {
                    self.err(format!("comparison into {dst} of {d}"));
                }
                if let (Some(ta), Some(tb)) = (self.reg(*a), self.reg(*b)) {
                    if ta.dtype != tb.dtype {
                        self.err(format!("{dst} compares {ta} with {tb}"));
                    }
                }
            }
            Expr::Select { cond, .. } => self.is_bool(*cond, "select condition"),
            Expr::Load { buf, mask, .. } => {
                self.buffer(*buf, false, "load");
                if let Some(m) = mask {
                    self.is_bool(*m, "load mask");
                }
            }
            Expr::SharedLoad { arr, .. } => self.shared(*arr),
            Expr::Extract { vector, lane } => {
                if let Some(t) = self.reg(*vector) {
                    if *lane >= t.lanes {
                        self.err(format!("{dst} extracts lane {lane} of {vector}: {t}"));
                    }
                }
            }
            Expr::Construct(parts) if parts.len() != d.lanes as usize => {
                self.err(format!(
                    "{dst} ({d}) is constructed from {} parts",
                    parts.len()
                ));
            }
            Expr::ShuffleXor { .. } => self.needs(self.opt.warp_shuffle, "a warp shuffle"),
            Expr::SubgroupReduce { .. } => {
                self.needs(self.opt.subgroup_reduce, "a subgroup reduction")
            }
            _ => {}
        }
    }

    /// Collective statements in control flow every thread they involve takes together:
    /// barriers and warpgroup MMA in the whole program's, warp shuffles, `ldmatrix`,
    /// `mma`, subgroup reductions and cooperative-matrix statements in each warp's.
    fn collective(&mut self, body: &[Stmt], control: Uniformity, uniform: &[Uniformity]) {
        let of = |r: &Reg| {
            uniform
                .get(r.0 as usize)
                .copied()
                .unwrap_or(Uniformity::Thread)
        };
        for s in body {
            let needs = match s {
                Stmt::Barrier
                | Stmt::StorageBarrier
                | Stmt::Wgmma { .. }
                | Stmt::WgmmaFence
                | Stmt::WgmmaCommit
                | Stmt::WgmmaWait { .. } => Some(Uniformity::Program),
                Stmt::LdMatrix { .. }
                | Stmt::Mma { .. }
                | Stmt::CoopZero { .. }
                | Stmt::CoopLoad { .. }
                | Stmt::CoopStore { .. }
                | Stmt::CoopMulAdd { .. }
                | Stmt::CoopCopy { .. }
                | Stmt::Assign {
                    expr: Expr::ShuffleXor { .. } | Expr::SubgroupReduce { .. },
                    ..
                } => Some(Uniformity::Warp),
                _ => None,
            };
            if let Some(needs) = needs {
                if control < needs {
                    let what = match needs {
                        Uniformity::Program => "every thread of the program",
                        _ => "every thread of a warp",
                    };
                    let name = match s {
                        Stmt::Barrier | Stmt::StorageBarrier => "a barrier",
                        Stmt::LdMatrix { .. } => "an ldmatrix",
                        Stmt::Mma { .. } => "an mma",
                        Stmt::Assign {
                            expr: Expr::ShuffleXor { .. },
                            ..
                        } => "a warp shuffle",
                        Stmt::Assign { .. } => "a subgroup reduction",
                        Stmt::Wgmma { .. }
                        | Stmt::WgmmaFence
                        | Stmt::WgmmaCommit
                        | Stmt::WgmmaWait { .. } => "a warpgroup MMA statement",
                        _ => "a cooperative-matrix statement",
                    };
                    self.err(format!(
                        "{name} sits in control flow that {what} does not take together"
                    ));
                }
            }
            match s {
                Stmt::For {
                    lower,
                    upper,
                    step,
                    body,
                    ..
                } => {
                    let bounds = [lower, upper, step].into_iter().map(of).min();
                    let inner = control.min(bounds.unwrap_or(Uniformity::Program));
                    self.collective(body, inner, uniform);
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    let inner = control.min(of(cond));
                    self.collective(then_body, inner, uniform);
                    self.collective(else_body, inner, uniform);
                }
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    ..
                } => {
                    let inner = control.min(of(cond));
                    self.collective(cond_body, inner, uniform);
                    self.collective(body, inner, uniform);
                }
                _ => {}
            }
        }
    }

    /// The `math` pass's postconditions for `dst = e` (`dst` of type `d`).
    fn math(&mut self, dst: Reg, d: super::RegTy, e: &Expr) {
        use crate::ir::{BinaryOp, UnaryOp};
        if d.dtype == DType::F64 {
            return;
        }
        let left = match e {
            Expr::Unary(UnaryOp::Erf, _) => Some("erf"),
            Expr::Unary(UnaryOp::Tanh, _) => Some("tanh"),
            Expr::Binary(BinaryOp::Pow, _, _) => Some("pow"),
            Expr::Unary(UnaryOp::Exp, _) if !self.opt.native_exp_log => Some("exp"),
            Expr::Unary(UnaryOp::Log, _) if !self.opt.native_exp_log => Some("log"),
            _ => None,
        };
        if let Some(f) = left {
            self.err(format!(
                "{dst} = {f}(..) of {d} is left after the math pass"
            ));
        }
        if crate::lower::math::computes_narrow_float(d.dtype, e, self.opt) && d.lanes == 1 {
            self.err(format!(
                "{dst} computes in {d} (narrow floats are computed in f32)"
            ));
        }
    }

    fn body(&mut self, body: &[Stmt], if_depth: u32) {
        for s in body {
            if !matches!(s, Stmt::Assign { .. }) {
                for r in s.reads() {
                    self.read(r);
                }
            }
            match s {
                Stmt::Assign { dst, expr } => self.expr(*dst, expr),
                Stmt::Store { buf, mask, .. } => {
                    self.buffer(*buf, true, "store");
                    if let Some(m) = mask {
                        self.is_bool(*m, "store mask");
                    }
                }
                Stmt::SharedStore { arr, .. } => self.shared(*arr),
                Stmt::Atomic { buf, mask, .. } => {
                    self.buffer(*buf, true, "atomic");
                    if let Some(m) = mask {
                        self.is_bool(*m, "atomic mask");
                    }
                }
                Stmt::AtomicCas { buf, .. } => self.buffer(*buf, true, "atomic_cas"),
                Stmt::AsyncCopy { arr, buf, .. } => {
                    self.needs(self.opt.async_copies, "an asynchronous copy");
                    self.shared(*arr);
                    self.buffer(*buf, false, "asynchronous copy");
                }
                Stmt::AsyncCommit | Stmt::AsyncWait { .. } => {
                    self.needs(self.opt.async_copies, "an asynchronous copy group")
                }
                Stmt::LdMatrix { arr, .. } => {
                    self.needs(self.opt.mma, "ldmatrix");
                    self.shared(*arr);
                }
                Stmt::Mma { .. } => self.needs(self.opt.mma, "a tensor-core mma"),
                Stmt::Wgmma {
                    shape, acc, a, b, ..
                } => {
                    // (Inside an `If` is fine: conditions are program-uniform, so a
                    // warpgroup issues together.)
                    self.needs(self.opt.wgmma, "a warpgroup mma (wgmma)");
                    if acc.len() != shape.regs() as usize {
                        self.err(format!(
                            "a wgmma of n{} with {} accumulators",
                            shape.n,
                            acc.len()
                        ));
                    }
                    if let WgmmaA::Regs(regs) = a {
                        if shape.input != DType::F32 || regs.len() != shape.a_regs() as usize {
                            self.err(format!(
                                "a wgmma with `a` in {} registers: only tf32 inputs, in {}",
                                regs.len(),
                                shape.a_regs()
                            ));
                        }
                    }
                    for m in a.shared().into_iter().chain([b]) {
                        self.shared(m.arr);
                        if let Some(arr) = self.k.shared.get(m.arr as usize) {
                            if arr.align < 8 * m.swizzle {
                                self.err(format!(
                                    "wgmma operand `{}` aligned to {} bytes, its swizzle repeats every {}",
                                    arr.name,
                                    arr.align,
                                    8 * m.swizzle
                                ));
                            }
                        }
                    }
                }
                Stmt::WgmmaFence | Stmt::WgmmaCommit | Stmt::WgmmaWait { .. } => {
                    self.needs(self.opt.wgmma, "a warpgroup mma (wgmma)")
                }
                Stmt::FenceProxyAsync => {}
                Stmt::MbarrierInit { arr, .. }
                | Stmt::MbarrierArriveTx { arr, .. }
                | Stmt::MbarrierWait { arr, .. } => {
                    self.needs(self.opt.tma, "a transaction barrier (mbarrier)");
                    self.barrier_array(*arr);
                }
                Stmt::TmaLoad {
                    arr,
                    map,
                    coords,
                    bar_arr,
                    ..
                } => {
                    self.needs(self.opt.tma, "a tensor memory accelerator copy");
                    self.shared(*arr);
                    self.barrier_array(*bar_arr);
                    match self.k.params.get(*map as usize).map(|p| &p.kind) {
                        Some(ParamKind::TensorMap(m)) => {
                            if m.rank() != coords.len() {
                                self.err(format!(
                                    "a tensor map of rank {} copied at {} coordinates",
                                    m.rank(),
                                    coords.len()
                                ));
                            }
                            let need = (8 * m.swizzle).max(128);
                            if let Some(a) = self.k.shared.get(*arr as usize) {
                                if a.align < need || a.dtype.size_bytes() != m.dtype.size_bytes() {
                                    self.err(format!(
                                        "a tensor memory accelerator copy of {} into `{}` ({}, aligned to {} bytes; it needs {need})",
                                        m.dtype, a.name, a.dtype, a.align
                                    ));
                                }
                            }
                        }
                        _ => self.err(format!("parameter {map} is not a tensor map")),
                    }
                }
                Stmt::CoopZero { dst } => self.coop(&[*dst], None, if_depth),
                Stmt::CoopLoad { dst, arr, .. } => self.coop(&[*dst], Some(*arr), if_depth),
                Stmt::CoopStore { src, arr, .. } => self.coop(&[*src], Some(*arr), if_depth),
                Stmt::CoopMulAdd { dst, a, b, c } => self.coop(&[*dst, *a, *b, *c], None, if_depth),
                Stmt::CoopCopy { dst, src } => self.coop(&[*dst, *src], None, if_depth),
                Stmt::Loc(_) | Stmt::Barrier | Stmt::StorageBarrier => {}
                Stmt::For { body, .. } => self.body(body, if_depth),
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    self.is_bool(*cond, "if condition");
                    self.body(then_body, if_depth + 1);
                    self.body(else_body, if_depth + 1);
                }
                Stmt::While {
                    cond_body,
                    cond,
                    body,
                    ..
                } => {
                    self.body(cond_body, if_depth);
                    self.is_bool(*cond, "while condition");
                    self.body(body, if_depth);
                }
            }
        }
    }

    fn coop(&mut self, frags: &[super::Frag], arr: Option<u32>, if_depth: u32) {
        self.needs(
            !self.opt.coop_matrix.is_empty(),
            "a cooperative-matrix statement",
        );
        if if_depth > 0 {
            self.err("a cooperative-matrix statement inside an `If`".to_string());
        }
        for &f in frags {
            self.frag(f);
        }
        if let Some(a) = arr {
            self.shared(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Const;
    use crate::thread_ir::testing::assign;
    use crate::thread_ir::{Frag, FragRole, FragTy, Param, RegTy, Special};

    fn kernel(body: Vec<Stmt>) -> ThreadKernel {
        ThreadKernel {
            name: "t".into(),
            params: vec![Param {
                name: "out".into(),
                kind: ParamKind::Buffer {
                    dtype: DType::I32,
                    written: false,
                },
            }],
            threads: 32,
            shared: vec![],
            regs: vec![RegTy::scalar(DType::I32); 3],
            frags: vec![FragTy {
                role: FragRole::C,
                dtype: DType::F32,
                size: 16,
            }],
            body,
            notes: vec![],
            source: None,
            checks: None,
        }
    }

    fn with_bool_r2(k: ThreadKernel) -> ThreadKernel {
        let mut k = k;
        k.regs[2] = RegTy::scalar(DType::I1);
        k
    }

    #[test]
    fn violations_are_named() {
        let opt = ExpandOptions::wgsl(1);
        let ok = kernel(vec![
            assign(0, Expr::Special(Special::ThreadId)),
            assign(1, Expr::Const(Const::Int(1))),
            assign(2, Expr::Binary(crate::ir::BinaryOp::Add, Reg(0), Reg(1))),
        ]);
        verify(&ok, &opt, "test").unwrap();
        // A barrier under a condition every thread computes alike is fine.
        let uniform_if = kernel(vec![
            assign(0, Expr::Special(Special::ProgramId(0))),
            assign(1, Expr::Const(Const::Int(1))),
            assign(2, Expr::Cmp(crate::ir::CmpPred::Lt, Reg(0), Reg(1))),
            Stmt::If {
                cond: Reg(2),
                then_body: vec![Stmt::Barrier],
                else_body: vec![],
            },
        ]);
        verify(&with_bool_r2(uniform_if), &opt, "test").unwrap();
        let cases: Vec<(Vec<Stmt>, &str)> = vec![
            (
                vec![assign(
                    2,
                    Expr::Binary(crate::ir::BinaryOp::Add, Reg(0), Reg(1)),
                )],
                "r0 is read but never assigned",
            ),
            (
                vec![
                    assign(0, Expr::Special(Special::ThreadId)),
                    Stmt::Store {
                        buf: 0,
                        index: Reg(0),
                        value: Reg(0),
                        mask: None,
                    },
                ],
                "not marked written",
            ),
            (
                vec![
                    assign(0, Expr::Special(Special::ThreadId)),
                    Stmt::If {
                        cond: Reg(0),
                        then_body: vec![],
                        else_body: vec![],
                    },
                ],
                "if condition r0 is i32, not i1",
            ),
            (
                vec![Stmt::CoopZero { dst: Frag(0) }],
                "options do not allow it",
            ),
            (vec![Stmt::AsyncCommit], "asynchronous copy group"),
            (
                vec![assign(0, Expr::Param(0))],
                "parameter 0, which is not a scalar",
            ),
            (
                vec![
                    assign(0, Expr::Special(Special::ThreadId)),
                    assign(1, Expr::Const(Const::Int(1))),
                    assign(2, Expr::Cmp(crate::ir::CmpPred::Lt, Reg(0), Reg(1))),
                    Stmt::If {
                        cond: Reg(2),
                        then_body: vec![Stmt::Barrier],
                        else_body: vec![],
                    },
                ],
                "a barrier sits in control flow that every thread of the program",
            ),
            (
                vec![
                    assign(0, Expr::Special(Special::ThreadId)),
                    assign(1, Expr::Const(Const::Int(1))),
                    Stmt::For {
                        iv: Reg(2),
                        lower: Reg(1),
                        upper: Reg(0),
                        step: Reg(1),
                        body: vec![assign(
                            1,
                            Expr::ShuffleXor {
                                value: Reg(2),
                                mask: 1,
                            },
                        )],
                    },
                ],
                "a warp shuffle sits in control flow that every thread of a warp",
            ),
        ];
        let opt = ExpandOptions {
            warp_shuffle: true,
            ..opt
        };
        for (i, (body, want)) in cases.into_iter().enumerate() {
            // The control-flow cases compare into r2.
            let k = if i >= 6 {
                with_bool_r2(kernel(body))
            } else {
                kernel(body)
            };
            let e = verify(&k, &opt, "test").unwrap_err();
            assert!(e.message.contains(want), "{want}: {}", e.message);
            assert!(e.message.contains("after test"), "{}", e.message);
        }
    }

    /// The math pass's postconditions hold from `math` on, not after `expand`.
    #[test]
    fn functions_left_after_the_math_pass_are_named() {
        use crate::ir::{BinaryOp, UnaryOp};
        let opt = ExpandOptions::ptx(1);
        let float = |dtype, body| ThreadKernel {
            regs: vec![RegTy::scalar(dtype); 3],
            ..kernel(body)
        };
        let cases = [
            (
                DType::F32,
                Expr::Unary(UnaryOp::Erf, Reg(0)),
                "erf(..) of f32",
            ),
            (
                DType::F32,
                Expr::Unary(UnaryOp::Exp, Reg(0)),
                "exp(..) of f32",
            ),
            (
                DType::F16,
                Expr::Binary(BinaryOp::Pow, Reg(0), Reg(1)),
                "pow(..) of f16",
            ),
            (
                DType::BF16,
                Expr::Binary(BinaryOp::Add, Reg(0), Reg(1)),
                "computes in bf16",
            ),
        ];
        for (dtype, expr, want) in cases {
            let k = float(
                dtype,
                vec![
                    assign(0, Expr::Const(Const::Float(1.0))),
                    assign(1, Expr::Const(Const::Float(2.0))),
                    assign(2, expr),
                ],
            );
            verify(&k, &opt, "expand").unwrap();
            let e = verify(&k, &opt, "math").unwrap_err();
            assert!(e.message.contains(want), "{want}: {}", e.message);
        }
        // f64 is the printers' to reject; native f16 arithmetic stays.
        let f64_erf = float(
            DType::F64,
            vec![
                assign(0, Expr::Const(Const::Float(1.0))),
                assign(2, Expr::Unary(UnaryOp::Erf, Reg(0))),
            ],
        );
        verify(&f64_erf, &opt, "math").unwrap();
        let native = ExpandOptions {
            native_f16: true,
            ..ExpandOptions::wgsl(1)
        };
        let f16_add = float(
            DType::F16,
            vec![
                assign(0, Expr::Const(Const::Float(1.0))),
                assign(1, Expr::Const(Const::Float(2.0))),
                assign(2, Expr::Binary(BinaryOp::Add, Reg(0), Reg(1))),
            ],
        );
        verify(&f16_add, &native, "math").unwrap();
    }
}
