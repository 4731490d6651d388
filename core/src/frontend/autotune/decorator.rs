//! Reading the decorator: which decorator of a jit function is the autotune one, and
//! the evaluated `triton.autotune(...)` call turned into an [`AutotuneDecl`], with its
//! keywords and every name a config sets checked against the kernel's parameters.

use super::errors::type_err;
use super::host::Host;
use super::repr::py_repr;
use super::values::{describe, to_const, truthy, AutotuneCall, ConfigObj, Func, Site, A, V};
use super::{AutotuneDecl, HostFn, OwnedFn, PruneBy, TuneConfig};
use crate::diag::{ErrorKind, Result, Span};
use crate::frontend::parse::{dotted, span_of, JitFn, ParsedModule, TopLevel};
use crate::frontend::tracer::err;
use rustpython_parser::ast::{self, Constant, Expr, Stmt};
use std::sync::Arc;

/// Whether a decorator's name says autotune (`@triton.autotune(...)`, `@autotune(...)`,
/// `@my_autotune`, or a name `from ... import autotune as name` binds); such a decorator
/// must evaluate to `triton.autotune(...)`.
pub(super) fn looks_like_autotune(d: &Expr, aliases: &[String]) -> bool {
    let callee = match d {
        Expr::Call(c) => &*c.func,
        other => other,
    };
    dotted(callee).is_some_and(|n| {
        aliases.contains(&n)
            || n.rsplit('.')
                .next()
                .is_some_and(|last| last.to_ascii_lowercase().contains("autotune"))
    })
}

/// Names bound by top-level `from ... import autotune as name`.
pub(super) fn autotune_aliases(m: &ParsedModule) -> Vec<String> {
    let mut out = vec![];
    for t in &m.top_level {
        if let TopLevel::Stmt(Stmt::ImportFrom(i)) = t {
            for a in &i.names {
                if a.name.as_str() == "autotune" {
                    out.push(a.asname.as_ref().unwrap_or(&a.name).to_string());
                }
            }
        }
    }
    out
}

fn param_note(jf: &JitFn) -> String {
    let names: Vec<&str> = jf.params.iter().map(|p| p.name.as_str()).collect();
    format!("the parameters of `{}` are: {}", jf.name, names.join(", "))
}

/// A config as the declaration keeps it, checking that it sets only parameters of `jf`.
/// `f` kept for a later call: a module-level function or a lambda written at module
/// level (`what` names the argument it was given as, at `at`).
pub(super) fn host_fn(f: &Func, what: &str, at: Span, m: &ParsedModule) -> Result<HostFn> {
    if !f.closure.is_empty() {
        return Err(err(
            ErrorKind::Unsupported,
            format!("`{what}` is `{}`, a function defined inside another function; tilewise needs a module-level function or a lambda written at module level", f.name),
            at,
        ));
    }
    let def = match f.site {
        Site::Def(d) => OwnedFn::Def(d.clone()),
        Site::Lambda(l) => OwnedFn::Lambda(l.clone()),
    };
    Ok(HostFn {
        name: f.name.to_string(),
        span: match f.site {
            Site::Def(d) => def_line(d, f.span, m),
            Site::Lambda(_) => f.span,
        },
        def: Arc::new(def),
    })
}

pub(super) fn tune_config(c: &ConfigObj, jf: &JitFn, m: &ParsedModule) -> Result<TuneConfig> {
    let V::Dict(d) = &c.kwargs else {
        return Err(err(
            ErrorKind::Type,
            format!(
                "a triton.Config's meta-parameters must be a dict, not {}",
                describe(&c.kwargs)
            ),
            c.span,
        ));
    };
    let mut constexprs = vec![];
    for (k, v) in d.borrow().iter() {
        let V::Str(name) = k else {
            return Err(err(
                ErrorKind::Type,
                format!(
                    "a triton.Config's meta-parameter names must be strings, not {}",
                    describe(k)
                ),
                c.span,
            ));
        };
        if !jf.params.iter().any(|p| *p.name == **name) {
            return Err(err(
                ErrorKind::Name,
                format!(
                    "this config sets `{name}`, which is not a parameter of `{}`",
                    jf.name
                ),
                c.span,
            )
            .with_note(param_note(jf)));
        }
        let Some(cv) = to_const(v) else {
            return Err(err(
                ErrorKind::Type,
                format!("the config's value for `{name}` is {}; a meta-parameter must be an int, float, bool, str, None, tl dtype or tuple of them", describe(v)),
                c.span,
            ));
        };
        constexprs.push((name.to_string(), cv));
    }
    let pre_hook = match &c.pre_hook {
        Some(f) => Some(host_fn(f, "pre_hook", c.span, m)?),
        None => None,
    };
    Ok(TuneConfig {
        constexprs,
        num_warps: c.num_warps,
        num_stages: c.num_stages,
        pre_hook,
    })
}

const AUTOTUNE_PARAMS: [&str; 12] = [
    "configs",
    "key",
    "prune_configs_by",
    "reset_to_zero",
    "restore_value",
    "pre_hook",
    "post_hook",
    "warmup",
    "rep",
    "use_cuda_graph",
    "do_bench",
    "cache_results",
];

/// The span of element `i` of an argument written as a list or tuple display.
fn elem_span(a: &A, i: usize) -> Span {
    match a.expr {
        Some(Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }))
            if !elts.iter().any(|e| matches!(e, Expr::Starred(_))) =>
        {
            elts.get(i).map(span_of).unwrap_or(a.span)
        }
        _ => a.span,
    }
}

/// The span of entry `key` of an argument written as a dict display.
fn entry_span(a: &A, key: &str) -> Span {
    if let Some(Expr::Dict(d)) = a.expr {
        for (k, v) in d.keys.iter().zip(&d.values) {
            if let Some(Expr::Constant(c)) = k {
                if matches!(&c.value, Constant::Str(s) if s == key) {
                    return span_of(c).to(span_of(v));
                }
            }
        }
    }
    a.span
}

/// The `def name(...)` line of a function definition.
fn def_line(d: &ast::StmtFunctionDef, whole: Span, m: &ParsedModule) -> Span {
    let text = &m.source.text;
    let start = whole.start as usize;
    let slice = text.get(start..whole.end as usize).unwrap_or("");
    let off = slice
        .find(&format!("def {}", d.name))
        .map(|o| start + o)
        .unwrap_or(start);
    let end = text[off..]
        .find('\n')
        .map(|e| off + e)
        .unwrap_or(text.len());
    Span::new(off as u32, end.max(off) as u32)
}

impl<'a> Host<'a> {
    pub(super) fn interpret(
        &mut self,
        call: &AutotuneCall<'a>,
        jf: &JitFn,
        span: Span,
    ) -> Result<AutotuneDecl> {
        let fname = "triton.autotune";
        let p = Self::bind(
            fname,
            &AUTOTUNE_PARAMS,
            call.args.clone(),
            call.kwargs.clone(),
            span,
        )?;
        let get = |name: &str| -> Option<&A<'a>> {
            let i = AUTOTUNE_PARAMS.iter().position(|n| *n == name)?;
            p[i].as_ref()
        };
        // Keywords tilewise does not implement, unless given their default.
        for name in ["pre_hook", "post_hook", "do_bench"] {
            if let Some(a) = get(name) {
                if !matches!(a.v, V::None) {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("`{name}=` of triton.autotune is not supported: tilewise does not run Python hooks"),
                        a.at,
                    ));
                }
            }
        }
        for name in ["use_cuda_graph", "cache_results"] {
            if let Some(a) = get(name) {
                if truthy(&a.v) {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!(
                            "`{name}={}` of triton.autotune is not supported",
                            py_repr(&a.v)
                        ),
                        a.at,
                    ));
                }
            }
        }
        let params_check = |name: &str, at: Span, what: &str| -> Result<()> {
            if jf.params.iter().any(|p| p.name == name) {
                return Ok(());
            }
            Err(err(
                ErrorKind::Name,
                format!(
                    "`{what}` names `{name}`, which is not a parameter of `{}`",
                    jf.name
                ),
                at,
            )
            .with_note(param_note(jf)))
        };
        // Triton skips `key` names that are not parameters (08's `gropup_c_ptrs`): so
        // does tilewise, with a warning; the other lists must name parameters.
        let mut warnings = vec![];
        let mut names = |this: &mut Self, what: &str| -> Result<Vec<String>> {
            let Some(a) = get(what) else {
                return Ok(vec![]);
            };
            if matches!(a.v, V::None) {
                return Ok(vec![]);
            }
            if !matches!(a.v, V::List(_) | V::Tuple(_)) {
                return Err(type_err(
                    format!(
                        "`{what}` must be a list of parameter names, not {}",
                        describe(&a.v)
                    ),
                    a.span,
                ));
            }
            let mut out = vec![];
            for (i, x) in this.seq(a.v.clone(), a.span)?.into_iter().enumerate() {
                let at = elem_span(a, i);
                let V::Str(s) = x else {
                    return Err(type_err(
                        format!(
                            "`{what}` must hold parameter names (strings), not {}",
                            describe(&x)
                        ),
                        at,
                    ));
                };
                if what == "key" && params_check(&s, at, what).is_err() {
                    warnings.push(
                        err(
                            ErrorKind::Name,
                            format!(
                                "`key` names `{s}`, which is not a parameter of `{}`: it keys nothing (Triton ignores it too)",
                                jf.name
                            ),
                            at,
                        )
                        .with_note(param_note(jf)),
                    );
                    continue;
                }
                params_check(&s, at, what)?;
                out.push(s.to_string());
            }
            Ok(out)
        };
        if get("key").is_none() {
            return Err(err(
                ErrorKind::Argument,
                "`triton.autotune` needs `key=[...]`, the parameters whose values select a tuned config",
                span,
            ));
        }
        let key = names(self, "key")?;
        let reset_to_zero = names(self, "reset_to_zero")?;
        let restore_value = names(self, "restore_value")?;
        // Configs.
        let mut configs = vec![];
        if let Some(a) = get("configs") {
            let items = match &a.v {
                V::None => vec![],
                V::List(_) | V::Tuple(_) => self.seq(a.v.clone(), a.span)?,
                other => {
                    return Err(type_err(
                        format!(
                            "`configs` must be a list of triton.Config, not {}",
                            describe(other)
                        ),
                        a.span,
                    ))
                }
            };
            for (i, x) in items.iter().enumerate() {
                let V::Config(c) = x else {
                    return Err(type_err(
                        format!(
                            "`configs` must hold triton.Config objects, not {}",
                            describe(x)
                        ),
                        elem_span(a, i),
                    ));
                };
                configs.push(tune_config(&c.borrow(), jf, self.m)?);
            }
        }
        if configs.is_empty() {
            // Triton's default for an empty list.
            configs.push(TuneConfig {
                constexprs: vec![],
                num_warps: Some(4),
                num_stages: Some(3),
                pre_hook: None,
            });
        }
        let ms = |name: &str| -> Result<Option<f64>> {
            match get(name) {
                None => Ok(None),
                Some(a) => match &a.v {
                    V::None => Ok(None),
                    V::Int(i) => Ok(Some(*i as f64)),
                    V::Float(f) => Ok(Some(*f)),
                    other => Err(type_err(
                        format!(
                            "`{name}` must be a number of milliseconds, not {}",
                            describe(other)
                        ),
                        a.span,
                    )),
                },
            }
        };
        let warmup_ms = ms("warmup")?;
        let rep_ms = ms("rep")?;
        // prune_configs_by.
        let mut prune = None;
        if let Some(a) = get("prune_configs_by").filter(|a| !matches!(a.v, V::None)) {
            let V::Dict(d) = &a.v else {
                return Err(type_err(
                    format!("`prune_configs_by` must be a dict, not {}", describe(&a.v)),
                    a.span,
                ));
            };
            let mut p = PruneBy {
                early_config_prune: None,
                top_k: None,
                span: a.at,
            };
            for (k, v) in d.borrow().iter() {
                let V::Str(k) = k else {
                    return Err(type_err("`prune_configs_by` keys must be strings", a.span));
                };
                let at = entry_span(a, k);
                match &**k {
                    "perf_model" => {
                        if !matches!(v, V::None) {
                            return Err(err(
                                ErrorKind::Unsupported,
                                "`perf_model` in prune_configs_by is not supported: tilewise times every config that early_config_prune keeps",
                                at,
                            ));
                        }
                    }
                    "top_k" => p.top_k = to_const(v),
                    "early_config_prune" => {
                        p.early_config_prune = match v {
                            V::None => None,
                            V::Func(f) => Some(host_fn(f, "early_config_prune", at, self.m)?),
                            other => {
                                return Err(err(
                                    ErrorKind::Unsupported,
                                    format!(
                                    "`early_config_prune` must be a function of this file, not {}",
                                    describe(other)
                                ),
                                    at,
                                ))
                            }
                        }
                    }
                    other => {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("`prune_configs_by` has an unknown entry `{other}`"),
                            at,
                        )
                        .with_note("Triton reads 'early_config_prune', 'perf_model' and 'top_k'"))
                    }
                }
            }
            prune = Some(p);
        }
        Ok(AutotuneDecl {
            kernel: jf.name.clone(),
            configs,
            key,
            reset_to_zero,
            restore_value,
            prune,
            warmup_ms,
            rep_ms,
            span,
            warnings,
        })
    }
}
