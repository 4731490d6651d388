//! The text form of the Thread IR (for tests and debugging).

use super::{Expr, ParamKind, Stmt, ThreadKernel};
use crate::ir::ops::fmt_const;
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
                    p.name,
                    if *written { "mut " } else { "" }
                )
            }
            ParamKind::Scalar { dtype } => format!("{}: {dtype}", p.name),
        })
        .collect();
    let _ = writeln!(
        out,
        "thread_kernel @{}({}) threads {} {{",
        k.name,
        params.join(", "),
        k.threads
    );
    for (i, a) in k.shared.iter().enumerate() {
        let _ = writeln!(out, "  shared s{i} {}: [{}; {}]", a.name, a.dtype, a.len);
    }
    for (i, f) in k.frags.iter().enumerate() {
        let _ = writeln!(out, "  frag f{i}: {f}");
    }
    stmts(k, &k.body, 1, &mut out);
    out.push_str("}\n");
    out
}

fn expr(k: &ThreadKernel, e: &Expr, dst_dtype: crate::ir::DType) -> String {
    match e {
        Expr::Const(c) => format!("const {}", fmt_const(*c, Some(dst_dtype))),
        Expr::Special(s) => format!("{s:?}").to_lowercase(),
        Expr::Param(i) => format!(
            "param {}",
            k.params
                .get(*i as usize)
                .map(|p| p.name.as_str())
                .unwrap_or("?")
        ),
        Expr::Copy(r) => format!("{r}"),
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
            let mut s = format!("load {}[{index}]", k.params[*buf as usize].name);
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
            format!("subgroup.{} {value}", format!("{op:?}").to_lowercase())
        }
        Expr::Construct(regs) => {
            format!(
                "vector({})",
                regs.iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }
}

fn stmts(k: &ThreadKernel, body: &[Stmt], depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    for s in body {
        match s {
            Stmt::Assign { dst, expr: e } => {
                let ty = k.reg_ty(*dst);
                let _ = writeln!(out, "{pad}{dst}: {ty} = {}", expr(k, e, ty.dtype));
            }
            Stmt::Store {
                buf,
                index,
                value,
                mask,
            } => {
                let m = mask.map(|m| format!(" mask {m}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}store {}[{index}] = {value}{m}",
                    k.params[*buf as usize].name
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
                mask,
            } => {
                let m = mask.map(|m| format!(" mask {m}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}{dst} = atomic {} {}[{index}], {value}{m}",
                    op.name(),
                    k.params[*buf as usize].name
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
                    "{pad}{dst} = atomic_cas {}[{index}], {cmp}, {value}",
                    k.params[*buf as usize].name
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
                mask,
            } => {
                let m = mask.map(|m| format!(" mask {m}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{pad}async_copy x{lanes} {}[{shared_index}] <- {}[{index}]{m}",
                    k.shared[*arr as usize].name, k.params[*buf as usize].name
                );
            }
            Stmt::AsyncCommit => {
                let _ = writeln!(out, "{pad}async_commit");
            }
            Stmt::AsyncWait { pending } => {
                let _ = writeln!(out, "{pad}async_wait {pending}");
            }
            Stmt::LdMatrix {
                dst,
                arr,
                index,
                trans,
            } => {
                let d: Vec<String> = dst.iter().map(|r| r.to_string()).collect();
                let _ = writeln!(
                    out,
                    "{pad}{{{}}} = ldmatrix{} {}[{index}]",
                    d.join(", "),
                    if *trans { ".trans" } else { "" },
                    k.shared[*arr as usize].name
                );
            }
            Stmt::Wgmma { shape, acc, a, b } => {
                let regs: Vec<String> = acc.iter().map(|r| r.to_string()).collect();
                let m = |x: &super::SmemMatrix| {
                    format!(
                        "{}[{} + {}] swizzle {} lbo {} sbo {}{}",
                        k.shared[x.arr as usize].name,
                        x.base,
                        x.offset,
                        x.swizzle,
                        x.lbo,
                        x.sbo,
                        if x.mn_major { " mn" } else { " k" }
                    )
                };
                let _ = writeln!(
                    out,
                    "{pad}wgmma m64n{}k{}.{} {{{}}} += {} @ {}",
                    shape.n,
                    shape.k(),
                    shape.input_name(),
                    regs.join(", "),
                    m(a),
                    m(b)
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
                let _ = writeln!(out, "{pad}{dst} = coop_zero {}", k.frag_ty(*dst));
            }
            Stmt::CoopLoad {
                dst,
                arr,
                index,
                stride,
            } => {
                let _ = writeln!(
                    out,
                    "{pad}{dst} = coop_load {} {}[{index}] stride {stride}",
                    k.frag_ty(*dst),
                    k.shared[*arr as usize].name
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
                    "{pad}coop_store {}[{index}] stride {stride} <- {src}",
                    k.shared[*arr as usize].name
                );
            }
            Stmt::CoopMulAdd { dst, a, b, c } => {
                let _ = writeln!(out, "{pad}{dst} = coop_mul_add {a}, {b}, {c}");
            }
            Stmt::CoopCopy { dst, src } => {
                let _ = writeln!(out, "{pad}{dst} = {src}");
            }
            Stmt::Mma { kind, d, a, b, c } => {
                let list = |v: &[super::Reg]| {
                    v.iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    out,
                    "{pad}{{{}}} = mma.{} {{{}}}, {{{}}}, {{{}}}",
                    list(d),
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
                let _ = writeln!(out, "{pad}for {iv} = {lower} to {upper} step {step} {{");
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
                ..
            } => {
                let _ = writeln!(out, "{pad}while {{");
                stmts(k, cond_body, depth + 1, out);
                let _ = writeln!(out, "{pad}}} ({cond}) do {{");
                stmts(k, body, depth + 1, out);
                let _ = writeln!(out, "{pad}}}");
            }
        }
    }
}
