//! The text form of the Thread IR (for tests, debugging and `tilewise compile --emit
//! thread-ir`). It holds the whole [`ThreadKernel`] but its `source`, and
//! [`parse`](fn@super::parse) reads it back: `print(parse(print(k)))` is `print(k)`, byte for
//! byte. The grammar is in `parse.rs`.
//!
//! - Registers are typed where they are written (`r5: f32 = ...`, `for r4: i32 = ...`,
//!   `r6: i32 = atomic ...`, `{r1, r2}: u32 = ldmatrix ...`); the registers no
//!   statement types (those value numbering left unused) are declared at the top,
//!   `reg r7, r9..=r12: f32`, so that the register table comes back whole.
//! - Shared arrays are `sN` and fragments `fN` everywhere but their declarations;
//!   buffers and scalar parameters are named. Names that are not identifiers (or that
//!   look like a shared array, `s3`) are quoted, as are notes and messages.
//! - Constants are exact: floats in Rust's shortest round-tripping spelling, NaNs
//!   other than the canonical one with their bits (`nan(0x7ff8000000000001)`).
//! - Source spans are byte ranges of the kernel's source, `@120..145` (absent when
//!   none); the source itself is not printed.

use super::checks::{CheckKind, Checks, HintRule, PrintValue};
use super::{
    Expr, FragRole, FragTy, ParamKind, Reg, RegTy, SmemMatrix, Special, Stmt, SubgroupOp,
    ThreadKernel, WgmmaA,
};
use crate::diag::Span;
use crate::ir::{Const, DType};
use std::fmt::Write;

/// Prints a Thread IR kernel.
pub fn print(k: &ThreadKernel) -> String {
    let mut out = String::new();
    let params: Vec<String> = k
        .params
        .iter()
        .map(|p| match &p.kind {
            ParamKind::Buffer { dtype, written } => {
                format!(
                    "{}: {}buffer<{dtype}>",
                    name(&p.name),
                    if *written { "mut " } else { "" }
                )
            }
            ParamKind::Scalar { dtype } => format!("{}: {dtype}", name(&p.name)),
            ParamKind::TensorMap(m) => {
                let list = |v: &[crate::thread_ir::tma::Extent]| {
                    v.iter()
                        .map(|e| match e {
                            crate::thread_ir::tma::Extent::Param(i) => {
                                name(&k.params[*i as usize].name)
                            }
                            crate::thread_ir::tma::Extent::Const(c) => c.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                format!(
                    "{}: tensor_map<{}> of {} dims({}) strides({}) box({}) swizzle {}",
                    name(&p.name),
                    m.dtype,
                    name(&k.params[m.buffer as usize].name),
                    list(&m.dims),
                    list(&m.strides),
                    m.box_dims
                        .iter()
                        .map(|b| b.to_string())
                        .collect::<Vec<_>>()
                        .join(", "),
                    m.swizzle
                )
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "thread_kernel @{}({}) threads {} {{",
        name(&k.name),
        params.join(", "),
        k.threads
    );
    for n in &k.notes {
        let _ = writeln!(out, "  note {}", quote(n));
    }
    for (i, a) in k.shared.iter().enumerate() {
        let _ = writeln!(
            out,
            "  shared s{i} {}: [{}; {}] align {}{}",
            name(&a.name),
            a.dtype,
            a.len,
            a.align,
            a.overlays
                .map_or(String::new(), |h| format!(" overlays s{h}"))
        );
    }
    for (i, f) in k.frags.iter().enumerate() {
        let _ = writeln!(out, "  frag f{i}: {}", frag_ty(f));
    }
    declarations(k, &mut out);
    if let Some(c) = &k.checks {
        checks(k, c, &mut out);
    }
    stmts(k, &k.body, 1, &mut out);
    out.push_str("}\n");
    out
}

/// Registers declared on one `reg` line at most.
const REGS_A_LINE: usize = 16;

/// The `reg` lines: the registers no statement types, grouped by type in order of
/// first appearance, runs of consecutive registers as `rA..=rB`.
fn declarations(k: &ThreadKernel, out: &mut String) {
    let mut typed = vec![false; k.regs.len()];
    mark_typed(k, &k.body, &mut typed);
    let mut groups: Vec<(RegTy, Vec<(u32, u32)>)> = vec![];
    for (r, ty) in k.regs.iter().enumerate() {
        if typed[r] {
            continue;
        }
        let r = r as u32;
        let runs = match groups.iter_mut().find(|(t, _)| t == ty) {
            Some((_, runs)) => runs,
            None => {
                groups.push((*ty, vec![]));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == r => *end = r,
            _ => runs.push((r, r)),
        }
    }
    for (ty, runs) in groups {
        for line in runs.chunks(REGS_A_LINE) {
            let items: Vec<String> = line
                .iter()
                .map(|&(a, b)| {
                    if a == b {
                        format!("r{a}")
                    } else {
                        format!("r{a}..=r{b}")
                    }
                })
                .collect();
            let _ = writeln!(out, "  reg {}: {ty}", items.join(", "));
        }
    }
}

/// Marks the registers a statement of `body` prints with their type.
fn mark_typed(k: &ThreadKernel, body: &[Stmt], typed: &mut [bool]) {
    fn mark(typed: &mut [bool], r: Reg) {
        if let Some(t) = typed.get_mut(r.0 as usize) {
            *t = true;
        }
    }
    for s in body {
        match s {
            Stmt::Assign { dst, .. }
            | Stmt::Atomic { dst, .. }
            | Stmt::AtomicCas { dst, .. }
            | Stmt::For { iv: dst, .. } => mark(typed, *dst),
            Stmt::LdMatrix { dst: regs, .. } | Stmt::Mma { d: regs, .. }
                if list_ty(k, regs).is_some() =>
            {
                regs.iter().for_each(|r| mark(typed, *r));
            }
            _ => {}
        }
        for b in s.bodies() {
            mark_typed(k, b, typed);
        }
    }
}

/// The type of every register of `regs`, when they share one (and exist).
pub(super) fn list_ty(k: &ThreadKernel, regs: &[Reg]) -> Option<RegTy> {
    let first = *k.regs.get(regs.first()?.0 as usize)?;
    regs.iter()
        .all(|r| k.regs.get(r.0 as usize) == Some(&first))
        .then_some(first)
}

/// Whether `s` prints bare: an identifier that does not look like a shared array.
pub(super) fn is_plain(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !is_numbered(s, 's')
}

/// Whether `s` is `prefix` followed by decimal digits only (`s3`, `r12`).
pub(super) fn is_numbered(s: &str, prefix: char) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// A name, quoted unless plain.
fn name(s: &str) -> String {
    if is_plain(s) {
        s.to_string()
    } else {
        quote(s)
    }
}

/// `s` in double quotes, with `\\`, `\"`, `\n`, `\r`, `\t` and `\u{..}` (other
/// control characters) escaped.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A constant, exactly: see the module doc.
pub(super) fn constant(c: Const, dtype: DType) -> String {
    match c {
        Const::Float(f) if f.is_nan() && f.to_bits() != f64::NAN.to_bits() => {
            format!("nan(0x{:016x})", f.to_bits())
        }
        c => crate::ir::ops::fmt_const(c, Some(dtype)),
    }
}

pub(super) fn special_name(s: Special) -> String {
    match s {
        Special::ThreadId => "thread_id".into(),
        Special::ProgramId(a) => format!("program_id({a})"),
        Special::NumPrograms(a) => format!("num_programs({a})"),
        Special::SubgroupId => "subgroup_id".into(),
        Special::SubgroupInvocationId => "subgroup_invocation_id".into(),
    }
}

pub(super) fn subgroup_op_name(op: SubgroupOp) -> &'static str {
    match op {
        SubgroupOp::Add => "add",
        SubgroupOp::Max => "max",
        SubgroupOp::Min => "min",
    }
}

pub(super) fn frag_role_name(r: FragRole) -> &'static str {
    match r {
        FragRole::A => "a",
        FragRole::B => "b",
        FragRole::C => "c",
    }
}

/// `coop16x16<f16, a>`.
fn frag_ty(f: &FragTy) -> String {
    format!(
        "coop{}x{}<{}, {}>",
        f.size,
        f.size,
        f.dtype,
        frag_role_name(f.role)
    )
}

pub(super) fn hint_rule(rule: &HintRule) -> (&'static str, i64) {
    match rule {
        HintRule::MultipleOf(k) => ("multiple_of", *k),
        HintRule::Contiguous(k) => ("contiguous", *k),
        HintRule::Constancy(k) => ("constancy", *k),
    }
}

/// ` @start..end`, or nothing for no span.
fn span(s: Span) -> String {
    if s.is_none() {
        String::new()
    } else {
        format!(" @{}..{}", s.start, s.end)
    }
}

fn shape(s: &[u32]) -> String {
    let dims: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// Parameter `i`'s name (`?` for none: such a kernel does not parse back).
/// A global access's buffer: its parameter, `*` for [`super::FLAT`] or `&` for
/// [`super::BYTE_ADDRESS`].
fn buffer(k: &ThreadKernel, buf: u32) -> String {
    if buf == super::FLAT {
        "*".to_string()
    } else if buf == super::BYTE_ADDRESS {
        "&".to_string()
    } else {
        param(k, buf)
    }
}

fn param(k: &ThreadKernel, i: u32) -> String {
    k.params
        .get(i as usize)
        .map_or_else(|| "?".to_string(), |p| name(&p.name))
}

fn checks(k: &ThreadKernel, c: &Checks, out: &mut String) {
    let prints = c
        .print_buffer
        .map(|p| format!(" prints {}", param(k, p)))
        .unwrap_or_default();
    let _ = writeln!(out, "  checks record {}{prints} {{", param(k, c.record));
    for (b, l) in &c.lens {
        let _ = writeln!(out, "    len {}: {}", param(k, *b), param(k, *l));
    }
    for (i, s) in c.sites.iter().enumerate() {
        let kind = match &s.kind {
            CheckKind::Access { what, param: p } => format!("access {what} {}", param(k, *p)),
            CheckKind::Assert { message } => format!("assert {}", quote(message)),
            CheckKind::Hint { name, rule, widens } => {
                let (r, n) = hint_rule(rule);
                format!(
                    "hint {name} {r} {n}{}",
                    if *widens { " widens" } else { "" }
                )
            }
            CheckKind::BlockPtr { param: p, rank } => {
                format!("block_ptr {} rank {rank}", param(k, *p))
            }
        };
        let _ = writeln!(
            out,
            "    site {i}{} {kind} {}",
            span(s.span),
            shape(&s.shape)
        );
    }
    for (i, p) in c.prints.iter().enumerate() {
        let value = match &p.value {
            PrintValue::Int => "int".to_string(),
            PrintValue::Uint => "uint".to_string(),
            PrintValue::F32 => "f32".to_string(),
            PrintValue::F64 => "f64".to_string(),
            PrintValue::Ptr { param: b } => format!("ptr {}", buffer(k, *b)),
        };
        let _ = writeln!(
            out,
            "    print {i}{} {} {value}{} {}",
            span(p.span),
            quote(&p.label),
            if p.hex { " hex" } else { "" },
            shape(&p.shape)
        );
    }
    let _ = writeln!(out, "  }}");
}

fn expr(k: &ThreadKernel, e: &Expr, dst_dtype: DType) -> String {
    match e {
        Expr::Const(c) => format!("const {}", constant(*c, dst_dtype)),
        Expr::Special(s) => special_name(*s),
        Expr::Param(i) => format!("param {}", param(k, *i)),
        Expr::Address(i) => format!("address {}", param(k, *i)),
        Expr::Copy(r) => format!("{r}"),
        Expr::WarpUniform(r) => format!("warp_uniform {r}"),
        Expr::Unary(op, r) => format!("{} {r}", op.name()),
        Expr::Binary(op, a, b) => format!("{} {a}, {b}", op.name()),
        Expr::Cmp(p, a, b) => format!("cmp {} {a}, {b}", p.name()),
        Expr::Select {
            cond,
            on_true,
            on_false,
        } => format!("select {cond}, {on_true}, {on_false}"),
        Expr::Fma(a, b, c) => format!("fma {a}, {b}, {c}"),
        Expr::Cast { value, bitcast } => {
            format!("{} {value}", if *bitcast { "bitcast" } else { "cast" })
        }
        Expr::Load {
            buf,
            index,
            mask,
            other,
        } => {
            let mut s = format!("load {}[{index}]", buffer(k, *buf));
            if let Some(m) = mask {
                let _ = write!(s, " mask {m}");
            }
            if let Some(o) = other {
                let _ = write!(s, " other {o}");
            }
            s
        }
        Expr::SharedLoad { arr, index } => format!("load s{arr}[{index}]"),
        Expr::Extract { vector, lane } => format!("extract {vector}.{lane}"),
        Expr::ShuffleXor { value, mask } => format!("shuffle.xor {value}, {mask}"),
        Expr::SubgroupReduce { op, value } => {
            format!("subgroup.{} {value}", subgroup_op_name(*op))
        }
        Expr::Construct(regs) => format!("vector({})", list(regs)),
    }
}

fn list(regs: &[Reg]) -> String {
    regs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `{r1, r2}` with their common type, for a statement that writes them.
fn typed_list(k: &ThreadKernel, regs: &[Reg]) -> String {
    match list_ty(k, regs) {
        Some(t) => format!("{{{}}}: {t}", list(regs)),
        None => format!("{{{}}}", list(regs)),
    }
}

/// `sN[base + offset] swizzle S lbo L sbo S k|mn`.
fn smem_matrix(x: &SmemMatrix) -> String {
    format!(
        "s{}[{} + {}] swizzle {} lbo {} sbo {} {}",
        x.arr,
        x.base,
        x.offset,
        x.swizzle,
        x.lbo,
        x.sbo,
        if x.mn_major { "mn" } else { "k" }
    )
}

fn mask(m: &Option<Reg>) -> String {
    m.map(|m| format!(" mask {m}")).unwrap_or_default()
}

fn stmts(k: &ThreadKernel, body: &[Stmt], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for s in body {
        match s {
            // The span alone: a parsed kernel has no source to recompute a line from.
            Stmt::Loc(sp) => {
                let _ = writeln!(out, "{pad}loc{}", span(*sp));
            }
            Stmt::Assign { dst, expr: e } => {
                let dtype = k.regs.get(dst.0 as usize).map_or(DType::I32, |t| t.dtype);
                let _ = writeln!(out, "{pad}{dst}: {} = {}", ty(k, *dst), expr(k, e, dtype));
            }
            Stmt::Store {
                buf,
                index,
                value,
                mask: m,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}store {}[{index}] = {value}{}",
                    buffer(k, *buf),
                    mask(m)
                );
            }
            Stmt::SharedStore { arr, index, value } => {
                let _ = writeln!(out, "{pad}store s{arr}[{index}] = {value}");
            }
            Stmt::Atomic {
                dst,
                op,
                buf,
                index,
                value,
                mask: m,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{dst}: {} = atomic {} {}[{index}], {value}{}",
                    ty(k, *dst),
                    op.name(),
                    buffer(k, *buf),
                    mask(m)
                );
            }
            Stmt::AtomicCas {
                dst,
                buf,
                index,
                cmp,
                value,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{dst}: {} = atomic_cas {}[{index}], {cmp}, {value}",
                    ty(k, *dst),
                    buffer(k, *buf)
                );
            }
            Stmt::Barrier => {
                let _ = writeln!(out, "{pad}barrier");
            }
            Stmt::StorageBarrier => {
                let _ = writeln!(out, "{pad}barrier.storage");
            }
            Stmt::AsyncCopy {
                arr,
                shared_index,
                buf,
                index,
                lanes,
                mask: m,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}async_copy x{lanes} s{arr}[{shared_index}] <- {}[{index}]{}",
                    buffer(k, *buf),
                    mask(m)
                );
            }
            Stmt::AsyncCommit => {
                let _ = writeln!(out, "{pad}async_commit");
            }
            Stmt::AsyncWait { pending } => {
                let _ = writeln!(out, "{pad}async_wait {pending}");
            }
            Stmt::MbarrierInit { arr, index, count } => {
                let _ = writeln!(out, "{pad}mbarrier_init s{arr}[{index}] count {count}");
            }
            Stmt::MbarrierArriveTx { arr, index, bytes } => {
                let _ = writeln!(out, "{pad}mbarrier_arrive_tx s{arr}[{index}] bytes {bytes}");
            }
            Stmt::MbarrierWait { arr, index, parity } => {
                let _ = writeln!(out, "{pad}mbarrier_wait s{arr}[{index}] parity {parity}");
            }
            Stmt::TmaLoad {
                arr,
                shared_index,
                map,
                coords,
                bar_arr,
                bar_index,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}tma_load s{arr}[{shared_index}] <- {}[{}] bar s{bar_arr}[{bar_index}]",
                    name(&k.params[*map as usize].name),
                    coords
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{} = ldmatrix{} s{arr}[{index}]",
                    typed_list(k, dst),
                    if *trans { ".trans" } else { "" },
                );
            }
            Stmt::Wgmma {
                shape,
                acc,
                a,
                b,
                zero_acc,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}wgmma m64n{}k{}.{} {{{}}} += {} @ {}{}",
                    shape.n,
                    shape.k(),
                    shape.input_name(),
                    list(acc),
                    match a {
                        WgmmaA::Shared(m) => smem_matrix(m),
                        WgmmaA::Regs(regs) => format!("{{{}}}", list(regs)),
                    },
                    smem_matrix(b),
                    zero_acc.map_or(String::new(), |z| format!(" zero_acc {z}"))
                );
            }
            Stmt::WgmmaFence => {
                let _ = writeln!(out, "{pad}wgmma_fence");
            }
            Stmt::WgmmaCommit => {
                let _ = writeln!(out, "{pad}wgmma_commit");
            }
            Stmt::WgmmaWait { pending } => {
                let _ = writeln!(out, "{pad}wgmma_wait {pending}");
            }
            Stmt::FenceProxyAsync => {
                let _ = writeln!(out, "{pad}fence_proxy_async");
            }
            Stmt::CoopZero { dst } => {
                let _ = writeln!(out, "{pad}{dst} = coop_zero {}", frag(k, *dst));
            }
            Stmt::CoopLoad {
                dst,
                arr,
                index,
                stride,
                column_major,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{dst} = coop_load {} s{arr}[{index}] stride {stride}{}",
                    frag(k, *dst),
                    if *column_major { " column_major" } else { "" }
                );
            }
            Stmt::CoopStore {
                src,
                arr,
                index,
                stride,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}coop_store s{arr}[{index}] stride {stride} <- {src}"
                );
            }
            Stmt::CoopMulAdd { dst, a, b, c } => {
                let _ = writeln!(out, "{pad}{dst} = coop_mul_add {a}, {b}, {c}");
            }
            Stmt::CoopCopy { dst, src } => {
                let _ = writeln!(out, "{pad}{dst} = {src}");
            }
            Stmt::Mma { kind, d, a, b, c } => {
                let _ = writeln!(
                    out,
                    "{pad}{} = mma.{} {{{}}}, {{{}}}, {{{}}}",
                    typed_list(k, d),
                    kind.name(),
                    list(a),
                    list(b),
                    list(c)
                );
            }
            Stmt::For {
                iv,
                lower,
                upper,
                step,
                body,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}for {iv}: {} = {lower} to {upper} step {step} {{",
                    ty(k, *iv)
                );
                stmts(k, body, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let _ = writeln!(out, "{pad}if {cond} {{");
                stmts(k, then_body, depth + 1, out);
                if !else_body.is_empty() {
                    let _ = writeln!(out, "{pad}}} else {{");
                    stmts(k, else_body, depth + 1, out);
                }
                let _ = writeln!(out, "{pad}}}");
            }
            Stmt::While {
                cond_body,
                cond,
                body,
                span: sp,
            } => {
                let _ = writeln!(out, "{pad}while{} {{", span(*sp));
                stmts(k, cond_body, depth + 1, out);
                let _ = writeln!(out, "{pad}}} ({cond}) do {{");
                stmts(k, body, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
}

/// A register's type (`?` for a register not in the table: such a kernel does not
/// parse back).
fn ty(k: &ThreadKernel, r: Reg) -> String {
    k.regs
        .get(r.0 as usize)
        .map_or_else(|| "?".to_string(), |t| t.to_string())
}

/// A fragment's type as statements repeat it (`?` for a fragment not declared).
fn frag(k: &ThreadKernel, f: super::Frag) -> String {
    k.frags
        .get(f.0 as usize)
        .map_or_else(|| "?".to_string(), frag_ty)
}
