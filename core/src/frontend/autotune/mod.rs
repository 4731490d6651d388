//! `@triton.autotune(...)`: the declaration, read by evaluating the module's
//! configuration Python on the host.
//!
//! Triton evaluates the decorator's arguments as ordinary Python when the module is
//! imported. tilewise has no Python, so this module carries a small, honest evaluator
//! for the Python that configuration code is written in: literals, lists, tuples,
//! dicts, ranges, comprehensions, arithmetic, comparisons, `if` / `for` / `while`,
//! module-level functions (with defaults, `*args`, `**kwargs`, closures and lambdas),
//! `triton.Config`, `triton.cdiv`, `triton.next_power_of_2`, `itertools.product`,
//! a few `math` functions, and the target query
//! `triton.runtime.driver.active.get_current_target()` (answered from a
//! [`HostTarget`], as are `torch.cuda.get_device_capability()` and
//! `torch.cuda.get_device_properties(..)`). Whatever it cannot evaluate
//! (`torch.cuda.current_device()`, `os.environ`, a class) is a [`Diagnostic`] at the expression, never a guess; loops and
//! recursion are bounded (one million steps a statement or call, 100 levels of nesting).
//!
//! **The module as Python sees it.** To evaluate the decorator of `kernel`, the module's
//! top-level statements before `kernel` run in order, as an import would run them:
//! imports bind modules, `def` binds functions, assignments and top-level `if` / `for`
//! bind globals. A top-level statement that cannot be evaluated (`x = torch.rand(4)`,
//! `torch.manual_seed(0)`, `class Helper: ...`) does not stop the others: the names it
//! binds or mutates are marked, and only a later use of one of them reports the
//! original error (with a note at the use). `__name__` is the file's stem, so
//! `if __name__ == "__main__":` blocks do not run. For [`AutotuneDecl::prune`] the whole
//! module runs first (a prune function sees the module's final globals, as in Python).
//!
//! **What is checked.** `key`, `reset_to_zero` and `restore_value` must name parameters
//! of the kernel, and every name a config sets must be one. Autotune keywords tilewise
//! does not implement (`pre_hook`, `post_hook`, `do_bench`, `use_cuda_graph=True`,
//! `cache_results=True`) and `triton.Config` keywords other than the meta-parameter
//! dict, `num_warps`, `num_stages`, `num_ctas=1` and `pre_hook` (`maxnreg`,
//! `ir_override`, `num_ctas` > 1) are diagnostics naming the keyword; a keyword given its
//! Triton default (`pre_hook=None`) is accepted. `prune_configs_by` may hold
//! `early_config_prune` and `top_k`; `perf_model` is refused (tilewise times every
//! config the prune function keeps), and `top_k` without a `perf_model` is ignored, as
//! Triton ignores it. An empty `configs` list is Triton's single default config
//! (`num_warps=4, num_stages=3`).
//!
//! **Prune functions.** [`AutotuneDecl::prune`] calls
//! `early_config_prune(configs, named_args, **kwargs)` as Triton's `Autotuner` does:
//! `named_args` is a dict of the launch's named arguments, `kwargs` the launch's
//! keyword arguments (Triton passes the positional arguments in the first and the
//! keyword ones in the second; the caller says which is which). Scalars are Python
//! ints, floats and bools; a tensor argument has `.dtype` (a torch dtype, equal to
//! `torch.float16` and the like; comparing it with `tl.float16` is an error because
//! Triton says they differ), `.element_size()` and `.numel()`, and nothing else. As in
//! Triton, a single config is not pruned, and a prune function that keeps none is an
//! error. The prune function must be a module-level `def` or a lambda written at module
//! level (a closure over a function's locals cannot be kept in the declaration).
//!
//! Signature choices: [`Module::autotune`] takes the [`HostTarget`];
//! [`AutotuneDecl::prune`] takes the module again, the launch's named and keyword
//! arguments separately, and the target. [`TuneConfig::num_warps`] and
//! [`TuneConfig::num_stages`] are `None` where the source does not give them (Triton's
//! defaults, 4 and 3, are what Python code reading `config.num_warps` sees).
//!
//! **Config hooks.** `triton.Config(..., pre_hook=f)` keeps `f` (a module-level
//! function or lambda); [`AutotuneDecl::run_pre_hook`] calls it as Triton does before
//! each launch of the config, with the launch's arguments merged with the config's
//! `all_kwargs()`. A hook may read them, set a host descriptor's `.block_shape` (06's
//! `_tma_pre_hook`) and zero a tensor (`.zero_()`); what it did comes back as
//! [`PreHookAction`]s for the launcher. Anything else it touches is a diagnostic.
//!
//! **Files.** This file holds the declaration's types and the two entry points;
//! `decorator` finds the autotune decorator and reads the evaluated call into an
//! [`AutotuneDecl`]. The evaluator is `host` (its state, frames, scopes and bounds, and
//! the module run as an import), `touched` (the names a failing top-level statement
//! marks), `statements`, `expressions`, `calls`, `attributes` and `builtins`. They work
//! on the values of `values`, with Python's operators in `ops`, container access in
//! `containers`, `str()` and `repr()` in `repr`, dotted paths such as `triton.cdiv` in
//! `paths`, and the common diagnostics in `errors`.

mod attributes;
mod builtins;
mod calls;
mod containers;
mod decorator;
mod errors;
mod expressions;
mod host;
mod ops;
mod paths;
mod repr;
mod statements;
mod touched;
mod values;

use super::parse::{is_jit_decorator, span_of, TopLevel};
use super::tracer::err;
use super::Module;
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::ir::DType;
use crate::launch::ConstValue;
use decorator::{autotune_aliases, looks_like_autotune, tune_config};
use host::{Frame, Host};
use rustpython_parser::ast::{self, Expr};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use values::{config_value, const_value, describe, host_arg, HookArgObj, A, V};

/// What `@triton.autotune(...)` on a jit function says.
#[derive(Clone, Debug, PartialEq)]
pub struct AutotuneDecl {
    /// The jit function decorated.
    pub kernel: String,
    pub configs: Vec<TuneConfig>,
    /// Parameter names whose values key the tuning cache (`key=[...]`).
    pub key: Vec<String>,
    /// `reset_to_zero=[...]`: buffer parameters zeroed before each timed run.
    pub reset_to_zero: Vec<String>,
    /// `restore_value=[...]`: buffer parameters restored before each timed run.
    pub restore_value: Vec<String>,
    /// `prune_configs_by={...}`, when given and not `None`.
    pub prune: Option<PruneBy>,
    /// `warmup=` (ms), where given.
    pub warmup_ms: Option<f64>,
    /// `rep=` (ms), where given.
    pub rep_ms: Option<f64>,
    /// The decorator.
    pub span: Span,
    /// What was accepted but is likely a mistake (a `key` naming no parameter), as
    /// located diagnostics; the library logs them.
    pub warnings: Vec<Diagnostic>,
}

/// One `triton.Config`.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneConfig {
    /// The config's dict: constexpr name -> value, in source order.
    pub constexprs: Vec<(String, ConstValue)>,
    /// `num_warps=`, `None` where not given (Triton's default is 4).
    pub num_warps: Option<u32>,
    /// `num_stages=`, `None` where not given (Triton's default is 3).
    pub num_stages: Option<u32>,
    /// `pre_hook=`: called with the launch's named arguments before every launch of
    /// this config ([`AutotuneDecl::run_pre_hook`]).
    pub pre_hook: Option<HostFn>,
}

/// What a config's `pre_hook` did to the launch's arguments, for the launcher to apply.
#[derive(Clone, Debug, PartialEq)]
pub enum PreHookAction {
    /// `nargs["desc"].block_shape = [...]`: the host descriptor argument `param` is
    /// read and written in blocks of this shape.
    BlockShape {
        param: String,
        block_shape: Vec<u32>,
    },
    /// `nargs["c"].zero_()`: the buffer argument `param` is zeroed before the launch.
    Zero { param: String },
}

/// `prune_configs_by={'early_config_prune': fn, 'top_k': k}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PruneBy {
    pub early_config_prune: Option<HostFn>,
    /// `top_k` as written; ignored, as Triton ignores it without a `perf_model`.
    pub top_k: Option<ConstValue>,
    /// The `prune_configs_by=` argument.
    pub span: Span,
}

/// A function of the module's configuration code (a prune function, a config's
/// `pre_hook`), kept so that it can be called at launch time.
#[derive(Clone, Debug)]
pub struct HostFn {
    /// Its name (`<lambda>` for a lambda).
    pub name: String,
    /// Its definition (`def` line or lambda).
    pub span: Span,
    def: Arc<OwnedFn>,
}

impl PartialEq for HostFn {
    fn eq(&self, other: &HostFn) -> bool {
        self.name == other.name && self.span == other.span
    }
}

#[derive(Debug)]
enum OwnedFn {
    Def(ast::StmtFunctionDef),
    Lambda(ast::ExprLambda),
}

/// A launch argument as a prune function sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum HostArg {
    Int(i64),
    Float(f64),
    Bool(bool),
    Tensor {
        dtype: DType,
        numel: usize,
    },
    /// A host tensor descriptor (Triton's `TensorDescriptor`): its tensor's dtype and
    /// element count, shape, strides and block shape.
    Descriptor {
        dtype: DType,
        numel: usize,
        shape: Vec<i64>,
        strides: Vec<i64>,
        block_shape: Vec<u32>,
    },
    None,
}

/// The target configuration code asks about:
/// `triton.runtime.driver.active.get_current_target()` gives an object with
/// `.backend` (str), `.arch` (int, e.g. 90) and `.warp_size`; on a CUDA target,
/// `torch.cuda.get_device_capability()` gives `(arch / 10, arch % 10)` and
/// `torch.cuda.get_device_properties(..)` an object with `.multi_processor_count`,
/// `.major` and `.minor` (as the tutorials size persistent grids).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTarget {
    pub backend: String,
    pub arch: u32,
    pub warp_size: u32,
    /// Streaming multiprocessors: the device's, or, on the CPU executors, those of the
    /// GPU they answer as (see [`HostTarget::cuda`]).
    pub multiprocessors: u32,
}

impl HostTarget {
    /// A CUDA target of compute capability `arch` (90 for sm_90), with the
    /// multiprocessors of that generation's data-center part (108 for the A100's
    /// sm_80, 132 for the H100's and H200's sm_90): what the CPU executors, which
    /// model such a GPU, answer. [`HostTarget::with_multiprocessors`] gives a real
    /// device's count.
    pub fn cuda(arch: u32) -> HostTarget {
        HostTarget {
            backend: "cuda".into(),
            arch,
            warp_size: 32,
            multiprocessors: if arch >= 90 { 132 } else { 108 },
        }
    }

    /// The same target with `n` multiprocessors.
    pub fn with_multiprocessors(self, n: u32) -> HostTarget {
        HostTarget {
            multiprocessors: n,
            ..self
        }
    }
}

/// [`Module::autotune`].
pub(super) fn declaration(
    module: &Module,
    kernel: &str,
    target: &HostTarget,
) -> Result<Option<AutotuneDecl>> {
    let m = &module.parsed;
    let Some(&fi) = m.jit_index.get(kernel) else {
        return Err(module.no_such(kernel));
    };
    let jf = &m.jit[fi];
    let decs = &jf.def.decorator_list;
    let aliases = autotune_aliases(m);
    let found: Vec<(usize, &Expr)> = decs
        .iter()
        .enumerate()
        .filter(|(_, d)| looks_like_autotune(d, &aliases))
        .collect();
    let Some(&(pos, dec)) = found.first() else {
        return Ok(None);
    };
    let with_src = |d: Diagnostic| d.with_source(&module.source);
    if let Some(&(_, second)) = found.get(1) {
        return Err(with_src(err(
            ErrorKind::Unsupported,
            format!("`{kernel}` has more than one autotune decorator"),
            span_of(second),
        )));
    }
    if let Some(j) = decs.iter().position(is_jit_decorator) {
        if j < pos {
            return Err(with_src(
                err(
                    ErrorKind::Unsupported,
                    "`@triton.autotune` must be written above `@triton.jit`",
                    span_of(dec),
                )
                .with_note("decorators apply bottom-up: the autotuner wraps the jit function"),
            ));
        }
    }
    let upto = m
        .top_level
        .iter()
        .position(|t| matches!(t, TopLevel::Jit(i) if *i == fi))
        .unwrap_or(m.top_level.len());
    let mut h = Host::new(m, target);
    h.run_module(upto);
    h.steps = 0;
    let dspan = span_of(dec);
    let r = (|| {
        let v = h.eval(dec, &mut Frame::module())?;
        let V::Autotune(call) = v else {
            return Err(err(
                ErrorKind::Unsupported,
                format!(
                    "this decorator is {}, not `triton.autotune(...)`",
                    describe(&v)
                ),
                dspan,
            ));
        };
        h.interpret(&call, jf, dspan)
    })();
    r.map(|mut decl| {
        decl.warnings = std::mem::take(&mut decl.warnings)
            .into_iter()
            .map(with_src)
            .collect();
        Some(decl)
    })
    .map_err(|d| {
        with_src(d.with_note(format!(
            "while evaluating the `@triton.autotune` decorator of `{kernel}`"
        )))
    })
}

impl AutotuneDecl {
    /// Runs `early_config_prune(configs, named_args, **kwargs)` on `configs` for a launch
    /// (`named_args`: the launch's named arguments, Triton's `nargs`; `kwargs`: its
    /// keyword arguments) and returns the configs kept, in order. Without a prune
    /// function, or with one config (Triton does not prune one), `configs` come back
    /// unchanged. `module` must be the module the declaration was read from.
    pub fn prune(
        &self,
        module: &Module,
        configs: &[TuneConfig],
        named_args: &[(String, HostArg)],
        kwargs: &[(String, HostArg)],
        target: &HostTarget,
    ) -> Result<Vec<TuneConfig>> {
        let Some(pf) = self
            .prune
            .as_ref()
            .and_then(|p| p.early_config_prune.as_ref())
        else {
            return Ok(configs.to_vec());
        };
        if configs.len() <= 1 {
            return Ok(configs.to_vec());
        }
        let m = &module.parsed;
        let Some(&fi) = m.jit_index.get(&self.kernel) else {
            return Err(module.no_such(&self.kernel));
        };
        let jf = &m.jit[fi];
        let mut h = Host::new(m, target);
        h.run_module(m.top_level.len());
        h.steps = 0;
        let span = self.span;
        let r = (|| {
            let func = h.owned_func(&pf.def)?;
            let mut cfgs: Vec<V> = vec![];
            for c in configs {
                let hook = match &c.pre_hook {
                    Some(f) => Some(h.owned_func(&f.def)?),
                    None => None,
                };
                cfgs.push(config_value(c, hook, span));
            }
            let nargs: Vec<(V, V)> = named_args
                .iter()
                .map(|(n, a)| (V::Str(n.as_str().into()), host_arg(a)))
                .collect();
            let arg = |v| A {
                v,
                span,
                at: span,
                expr: None,
            };
            let kw = kwargs
                .iter()
                .map(|(n, a)| (n.clone(), arg(host_arg(a))))
                .collect();
            let out = h.call_func(
                &func,
                vec![arg(V::list(cfgs)), arg(V::dict(nargs))],
                kw,
                pf.span,
            )?;
            let items = match &out {
                V::List(l) => l.borrow().clone(),
                V::Tuple(t) => t.to_vec(),
                other => {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "`{}` must return a list of triton.Config, but it returned {}",
                            pf.name,
                            describe(other)
                        ),
                        pf.span,
                    ))
                }
            };
            let mut kept = vec![];
            for v in &items {
                let V::Config(c) = v else {
                    return Err(err(
                        ErrorKind::Type,
                        format!(
                            "`{}` must return triton.Config objects, but its list holds {}",
                            pf.name,
                            describe(v)
                        ),
                        pf.span,
                    ));
                };
                kept.push(tune_config(&c.borrow(), jf, m)?);
            }
            if kept.is_empty() {
                return Err(err(
                    ErrorKind::Runtime,
                    format!("no autotune configs left after pruning: `{}` must return at least one config", pf.name),
                    pf.span,
                ));
            }
            Ok(kept)
        })();
        r.map_err(|d| {
            d.with_note(format!(
                "while pruning the autotune configs of `{}`",
                self.kernel
            ))
            .with_source(&module.source)
        })
    }
}

impl AutotuneDecl {
    /// Runs `config`'s `pre_hook` (nothing without one) as Triton does before each
    /// launch of the config: with one dict, the launch's named arguments
    /// (`named_args`, tensors and host descriptors by parameter name) merged with the
    /// config's `all_kwargs()` (its meta-parameters, `num_warps`, `num_ctas`,
    /// `num_stages`). A hook may read anything there, assign a descriptor's
    /// `.block_shape` (a list of ints, also changed in place) and call a tensor's
    /// `.zero_()`; what it did comes back as [`PreHookAction`]s, in argument order, for
    /// the launcher to apply. What it returns is ignored, as in Triton. `module` must
    /// be the module the declaration was read from.
    pub fn run_pre_hook(
        &self,
        module: &Module,
        config: &TuneConfig,
        named_args: &[(String, HostArg)],
        target: &HostTarget,
    ) -> Result<Vec<PreHookAction>> {
        let Some(hook) = &config.pre_hook else {
            return Ok(vec![]);
        };
        let m = &module.parsed;
        let mut h = Host::new(m, target);
        h.run_module(m.top_level.len());
        h.steps = 0;
        let span = hook.span;
        let r = (|| {
            let func = h.owned_func(&hook.def)?;
            let mut objs: Vec<Rc<RefCell<HookArgObj>>> = vec![];
            let nargs: values::DictRef = Rc::new(RefCell::new(vec![]));
            for (name, a) in named_args {
                let v = match a {
                    HostArg::Tensor { dtype, numel } => Some((*dtype, *numel, None)),
                    HostArg::Descriptor {
                        dtype,
                        numel,
                        shape,
                        strides,
                        block_shape,
                    } => Some((
                        *dtype,
                        *numel,
                        Some((
                            shape.clone(),
                            strides.clone(),
                            V::list(block_shape.iter().map(|&b| V::Int(b as i64)).collect()),
                        )),
                    )),
                    _ => None,
                };
                let v = match v {
                    Some((dtype, numel, descriptor)) => {
                        let o = Rc::new(RefCell::new(HookArgObj {
                            name: name.clone(),
                            dtype,
                            numel,
                            descriptor,
                            zeroed: false,
                        }));
                        objs.push(o.clone());
                        V::HookArg(o)
                    }
                    None => host_arg(a),
                };
                containers::dict_set(&nargs, V::str(name), v, span)?;
            }
            let mut extra: Vec<(String, V)> = config
                .constexprs
                .iter()
                .map(|(n, c)| (n.clone(), const_value(c)))
                .collect();
            extra.push((
                "num_warps".into(),
                V::Int(config.num_warps.unwrap_or(4) as i64),
            ));
            extra.push(("num_ctas".into(), V::Int(1)));
            extra.push((
                "num_stages".into(),
                V::Int(config.num_stages.unwrap_or(3) as i64),
            ));
            for (n, v) in extra {
                containers::dict_set(&nargs, V::str(&n), v, span)?;
            }
            let arg = A {
                v: V::Dict(nargs),
                span,
                at: span,
                expr: None,
            };
            h.call_func(&func, vec![arg], vec![], span)?;
            let mut actions = vec![];
            for o in &objs {
                let o = o.borrow();
                if let Some((_, _, list)) = &o.descriptor {
                    let items = match list {
                        V::List(l) => l.borrow().clone(),
                        _ => vec![],
                    };
                    let mut block_shape = vec![];
                    for x in &items {
                        match x {
                            V::Int(i) if *i >= 1 && *i <= u32::MAX as i64 => {
                                block_shape.push(*i as u32)
                            }
                            other => {
                                return Err(err(
                                    ErrorKind::Type,
                                    format!(
                                        "`{}` got the block shape element {}; block dimensions are positive ints",
                                        o.name,
                                        repr::py_repr(other)
                                    ),
                                    span,
                                ))
                            }
                        }
                    }
                    let before = named_args.iter().find_map(|(n, a)| match a {
                        HostArg::Descriptor { block_shape, .. } if *n == o.name => {
                            Some(block_shape)
                        }
                        _ => None,
                    });
                    if before != Some(&block_shape) {
                        actions.push(PreHookAction::BlockShape {
                            param: o.name.clone(),
                            block_shape,
                        });
                    }
                }
                if o.zeroed {
                    actions.push(PreHookAction::Zero {
                        param: o.name.clone(),
                    });
                }
            }
            Ok(actions)
        })();
        r.map_err(|d| {
            d.with_note(format!(
                "while running `{}`, the pre_hook of a config of `{}`",
                hook.name, self.kernel
            ))
            .with_source(&module.source)
        })
    }
}

#[cfg(test)]
mod tests;
