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
//! [`HostTarget`]). Whatever it cannot evaluate (`torch.cuda.get_device_capability()`,
//! `os.environ`, a class) is a [`Diagnostic`] at the expression, never a guess; loops and
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
//! dict, `num_warps`, `num_stages` and `num_ctas=1` (`maxnreg`, `pre_hook`,
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

use super::parse::{dotted, is_jit_decorator, span_of, JitFn, ParsedModule, TopLevel};
use super::tracer::{err, MAX_NESTING};
use super::Module;
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::ir::DType;
use crate::launch::ConstValue;
use rustpython_parser::ast::{self, BoolOp, CmpOp, Constant, Expr, Operator, Stmt, UnaryOp};
use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// Evaluation steps (statements, loop iterations, calls, elements built) allowed for one
/// top-level statement, one decorator or one prune call.
const STEP_LIMIT: u64 = 1_000_000;

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
}

/// `prune_configs_by={'early_config_prune': fn, 'top_k': k}`.
#[derive(Clone, Debug, PartialEq)]
pub struct PruneBy {
    pub early_config_prune: Option<PruneFn>,
    /// `top_k` as written; ignored, as Triton ignores it without a `perf_model`.
    pub top_k: Option<ConstValue>,
    /// The `prune_configs_by=` argument.
    pub span: Span,
}

/// A prune function, kept so that [`AutotuneDecl::prune`] can call it at launch time.
#[derive(Clone, Debug)]
pub struct PruneFn {
    /// Its name (`<lambda>` for a lambda).
    pub name: String,
    /// Its definition (`def` line or lambda).
    pub span: Span,
    def: Arc<OwnedFn>,
}

impl PartialEq for PruneFn {
    fn eq(&self, other: &PruneFn) -> bool {
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
    Tensor { dtype: DType, numel: usize },
    None,
}

/// The target configuration code asks about:
/// `triton.runtime.driver.active.get_current_target()` gives an object with
/// `.backend` (str), `.arch` (int, e.g. 90) and `.warp_size`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostTarget {
    pub backend: String,
    pub arch: u32,
    pub warp_size: u32,
}

impl HostTarget {
    /// A CUDA target of compute capability `arch` (90 for sm_90).
    pub fn cuda(arch: u32) -> HostTarget {
        HostTarget {
            backend: "cuda".into(),
            arch,
            warp_size: 32,
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
    r.map(Some).map_err(|d| {
        with_src(d.with_note(format!(
            "while evaluating the `@triton.autotune` decorator of `{kernel}`"
        )))
    })
}

/// Whether a decorator's name says autotune (`@triton.autotune(...)`, `@autotune(...)`,
/// `@my_autotune`, or a name `from ... import autotune as name` binds); such a decorator
/// must evaluate to `triton.autotune(...)`.
fn looks_like_autotune(d: &Expr, aliases: &[String]) -> bool {
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
fn autotune_aliases(m: &ParsedModule) -> Vec<String> {
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
            let cfgs: Vec<V> = configs.iter().map(|c| config_value(c, span)).collect();
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
                kept.push(tune_config(&c.borrow(), jf)?);
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

// ---------------------------------------------------------------------------------
// Values

#[derive(Clone, Copy, Debug, PartialEq)]
enum Flavor {
    Torch,
    Triton,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Builtin {
    Len,
    Min,
    Max,
    Range,
    List,
    Tuple,
    Dict,
    Int,
    Float,
    Bool,
    Str,
    Repr,
    Abs,
    Sorted,
    Reversed,
    Enumerate,
    Zip,
    Any,
    All,
    Sum,
    Filter,
    Map,
    Print,
    Round,
    Config,
    Autotune,
    NextPow2,
    Cdiv,
    GetTarget,
    Product,
    Ceil,
    Floor,
    Log2,
    Sqrt,
    Prod,
    Gcd,
    Cache,
    Constexpr,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::Len => "len",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Range => "range",
            Builtin::List => "list",
            Builtin::Tuple => "tuple",
            Builtin::Dict => "dict",
            Builtin::Int => "int",
            Builtin::Float => "float",
            Builtin::Bool => "bool",
            Builtin::Str => "str",
            Builtin::Repr => "repr",
            Builtin::Abs => "abs",
            Builtin::Sorted => "sorted",
            Builtin::Reversed => "reversed",
            Builtin::Enumerate => "enumerate",
            Builtin::Zip => "zip",
            Builtin::Any => "any",
            Builtin::All => "all",
            Builtin::Sum => "sum",
            Builtin::Filter => "filter",
            Builtin::Map => "map",
            Builtin::Print => "print",
            Builtin::Round => "round",
            Builtin::Config => "triton.Config",
            Builtin::Autotune => "triton.autotune",
            Builtin::NextPow2 => "triton.next_power_of_2",
            Builtin::Cdiv => "triton.cdiv",
            Builtin::GetTarget => "get_current_target",
            Builtin::Product => "itertools.product",
            Builtin::Ceil => "math.ceil",
            Builtin::Floor => "math.floor",
            Builtin::Log2 => "math.log2",
            Builtin::Sqrt => "math.sqrt",
            Builtin::Prod => "math.prod",
            Builtin::Gcd => "math.gcd",
            Builtin::Cache => "functools.lru_cache",
            Builtin::Constexpr => "tl.constexpr",
        }
    }
}

/// Python builtins looked up by name.
fn builtin_named(name: &str) -> Option<Builtin> {
    Some(match name {
        "len" => Builtin::Len,
        "min" => Builtin::Min,
        "max" => Builtin::Max,
        "range" => Builtin::Range,
        "list" => Builtin::List,
        "tuple" => Builtin::Tuple,
        "dict" => Builtin::Dict,
        "int" => Builtin::Int,
        "float" => Builtin::Float,
        "bool" => Builtin::Bool,
        "str" => Builtin::Str,
        "repr" => Builtin::Repr,
        "abs" => Builtin::Abs,
        "sorted" => Builtin::Sorted,
        "reversed" => Builtin::Reversed,
        "enumerate" => Builtin::Enumerate,
        "zip" => Builtin::Zip,
        "any" => Builtin::Any,
        "all" => Builtin::All,
        "sum" => Builtin::Sum,
        "filter" => Builtin::Filter,
        "map" => Builtin::Map,
        "print" => Builtin::Print,
        "round" => Builtin::Round,
        _ => return None,
    })
}

/// Python builtins the evaluator does not implement (a clearer error than "not defined").
const UNSUPPORTED_BUILTINS: &[&str] = &[
    "hasattr",
    "getattr",
    "setattr",
    "isinstance",
    "issubclass",
    "type",
    "set",
    "frozenset",
    "open",
    "iter",
    "next",
    "hash",
    "id",
    "object",
    "super",
    "vars",
    "globals",
    "locals",
    "eval",
    "exec",
    "input",
    "format",
    "divmod",
    "pow",
    "chr",
    "ord",
    "hex",
    "bin",
    "oct",
    "callable",
    "bytes",
    "complex",
    "slice",
];

type Scope<'a> = Rc<RefCell<HashMap<String, V<'a>>>>;
type DictRef<'a> = Rc<RefCell<Vec<(V<'a>, V<'a>)>>>;

#[derive(Clone)]
enum V<'a> {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    List(Rc<RefCell<Vec<V<'a>>>>),
    Tuple(Rc<Vec<V<'a>>>),
    /// Insertion-ordered entries; keys are hashable values.
    Dict(DictRef<'a>),
    Range(i64, i64, i64),
    DType(DType, Flavor),
    /// A tensor launch argument: dtype and element count.
    Tensor(DType, usize),
    Config(Rc<RefCell<ConfigObj<'a>>>),
    /// `get_current_target()`.
    Target,
    Func(Rc<Func<'a>>),
    Builtin(Builtin),
    /// A bound method: receiver and method name.
    Method(Rc<(V<'a>, &'static str)>),
    /// A module or an attribute of one the evaluator does not know (`torch.cuda`).
    Path(Rc<str>),
    /// A jit function (not callable on the host).
    Jit(Rc<str>),
    /// The value of `triton.autotune(...)`, the decorator.
    Autotune(Rc<AutotuneCall<'a>>),
}

impl<'a> V<'a> {
    fn str(s: &str) -> V<'a> {
        V::Str(s.into())
    }
    fn list(items: Vec<V<'a>>) -> V<'a> {
        V::List(Rc::new(RefCell::new(items)))
    }
    fn tuple(items: Vec<V<'a>>) -> V<'a> {
        V::Tuple(Rc::new(items))
    }
    fn dict(items: Vec<(V<'a>, V<'a>)>) -> V<'a> {
        V::Dict(Rc::new(RefCell::new(items)))
    }
}

struct ConfigObj<'a> {
    /// The meta-parameter dict (a `V::Dict`, shared as in Python).
    kwargs: V<'a>,
    num_warps: Option<u32>,
    num_stages: Option<u32>,
    /// Where the config was made.
    span: Span,
}

#[derive(Clone, Copy)]
enum Site<'a> {
    Def(&'a ast::StmtFunctionDef),
    Lambda(&'a ast::ExprLambda),
}

struct Func<'a> {
    name: Rc<str>,
    site: Site<'a>,
    /// Default values of the positional parameters, then of the keyword-only ones.
    defaults: Vec<Option<V<'a>>>,
    /// The scopes of the enclosing functions, outermost first.
    closure: Vec<Scope<'a>>,
    span: Span,
}

impl<'a> Func<'a> {
    fn args(&self) -> &'a ast::Arguments {
        match self.site {
            Site::Def(d) => &d.args,
            Site::Lambda(l) => &l.args,
        }
    }
}

struct AutotuneCall<'a> {
    args: Vec<A<'a>>,
    kwargs: Vec<(String, A<'a>)>,
}

/// A call argument: its value, the value's span, the span of the whole argument
/// (`key=[...]`), and its expression when it was one.
#[derive(Clone)]
struct A<'a> {
    v: V<'a>,
    span: Span,
    at: Span,
    expr: Option<&'a Expr>,
}

fn type_name(v: &V) -> &'static str {
    match v {
        V::None => "NoneType",
        V::Bool(_) => "bool",
        V::Int(_) => "int",
        V::Float(_) => "float",
        V::Str(_) => "str",
        V::List(_) => "list",
        V::Tuple(_) => "tuple",
        V::Dict(_) => "dict",
        V::Range(..) => "range",
        V::DType(_, Flavor::Torch) => "torch.dtype",
        V::DType(_, Flavor::Triton) => "triton.language.dtype",
        V::Tensor(..) => "tensor",
        V::Config(_) => "triton.Config",
        V::Target => "GPUTarget",
        V::Func(_) => "function",
        V::Builtin(_) => "builtin function",
        V::Method(_) => "method",
        V::Path(_) => "module",
        V::Jit(_) => "JITFunction",
        V::Autotune(_) => "autotune decorator",
    }
}

fn describe(v: &V) -> String {
    match v {
        V::Path(p) => format!("`{p}`"),
        V::Func(f) => format!("the function `{}`", f.name),
        V::Builtin(b) => format!("`{}`", b.name()),
        V::Jit(n) => format!("the jit function `{n}`"),
        other => format!("a `{}`", type_name(other)),
    }
}

fn torch_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "bool" => DType::I1,
        "int8" => DType::I8,
        "int16" | "short" => DType::I16,
        "int32" | "int" => DType::I32,
        "int64" | "long" => DType::I64,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "float" => DType::F32,
        "float64" | "double" => DType::F64,
        "float8_e4m3fn" => DType::F8E4M3,
        "float8_e5m2" => DType::F8E5M2,
        _ => return None,
    })
}

fn torch_name(d: DType) -> &'static str {
    match d {
        DType::I1 => "bool",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F8E4M3 => "float8_e4m3fn",
        DType::F8E5M2 => "float8_e5m2",
    }
}

/// `str()` of a `triton.language` dtype (Triton's short names).
fn tl_str(d: DType) -> &'static str {
    match d {
        DType::I1 => "int1",
        DType::F16 => "fp16",
        DType::BF16 => "bf16",
        DType::F32 => "fp32",
        DType::F64 => "fp64",
        DType::F8E4M3 => "fp8e4nv",
        DType::F8E5M2 => "fp8e5",
        other => other.triton_name(),
    }
}

/// The value a dotted name denotes: a known function or constant, or an opaque path.
fn resolve<'a>(path: &str) -> V<'a> {
    let canon;
    let path = match path.strip_prefix("tilewise") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') => {
            canon = format!("triton{rest}");
            canon.as_str()
        }
        _ => path,
    };
    let b = match path {
        "triton.Config" | "triton.runtime.Config" | "triton.runtime.autotuner.Config" => {
            Builtin::Config
        }
        "triton.autotune" | "triton.runtime.autotune" | "triton.runtime.autotuner.autotune" => {
            Builtin::Autotune
        }
        "triton.next_power_of_2" => Builtin::NextPow2,
        "triton.cdiv" => Builtin::Cdiv,
        "triton.runtime.driver.active.get_current_target" => Builtin::GetTarget,
        "triton.language.constexpr" | "triton.language.core.constexpr" => Builtin::Constexpr,
        "itertools.product" => Builtin::Product,
        "math.ceil" => Builtin::Ceil,
        "math.floor" => Builtin::Floor,
        "math.log2" => Builtin::Log2,
        "math.sqrt" => Builtin::Sqrt,
        "math.prod" => Builtin::Prod,
        "math.gcd" => Builtin::Gcd,
        "functools.lru_cache" | "functools.cache" => Builtin::Cache,
        "math.inf" => return V::Float(f64::INFINITY),
        "math.pi" => return V::Float(std::f64::consts::PI),
        _ => {
            if let Some(d) = path.strip_prefix("torch.").and_then(torch_dtype) {
                return V::DType(d, Flavor::Torch);
            }
            let tl = path
                .strip_prefix("triton.language.core.")
                .or_else(|| path.strip_prefix("triton.language."));
            if let Some(d) = tl.and_then(|n| DType::ALL.into_iter().find(|d| d.triton_name() == n))
            {
                return V::DType(d, Flavor::Triton);
            }
            return V::Path(path.into());
        }
    };
    V::Builtin(b)
}

fn host_arg<'a>(a: &HostArg) -> V<'a> {
    match a {
        HostArg::Int(i) => V::Int(*i),
        HostArg::Float(f) => V::Float(*f),
        HostArg::Bool(b) => V::Bool(*b),
        HostArg::Tensor { dtype, numel } => V::Tensor(*dtype, *numel),
        HostArg::None => V::None,
    }
}

fn const_value<'a>(c: &ConstValue) -> V<'a> {
    match c {
        ConstValue::Int(i) => V::Int(*i),
        ConstValue::Float(f) => V::Float(*f),
        ConstValue::Bool(b) => V::Bool(*b),
        ConstValue::Str(s) => V::str(s),
        ConstValue::DType(d) => V::DType(*d, Flavor::Triton),
        ConstValue::None => V::None,
        ConstValue::Tuple(items) => V::tuple(items.iter().map(const_value).collect()),
    }
}

fn to_const(v: &V) -> Option<ConstValue> {
    Some(match v {
        V::Int(i) => ConstValue::Int(*i),
        V::Float(f) => ConstValue::Float(*f),
        V::Bool(b) => ConstValue::Bool(*b),
        V::Str(s) => ConstValue::Str(s.to_string()),
        V::None => ConstValue::None,
        V::DType(d, Flavor::Triton) => ConstValue::DType(*d),
        V::Tuple(items) => ConstValue::Tuple(items.iter().map(to_const).collect::<Option<_>>()?),
        _ => return None,
    })
}

fn config_value<'a>(c: &TuneConfig, span: Span) -> V<'a> {
    let kwargs = c
        .constexprs
        .iter()
        .map(|(n, v)| (V::str(n), const_value(v)))
        .collect();
    V::Config(Rc::new(RefCell::new(ConfigObj {
        kwargs: V::dict(kwargs),
        num_warps: c.num_warps,
        num_stages: c.num_stages,
        span,
    })))
}

fn param_note(jf: &JitFn) -> String {
    let names: Vec<&str> = jf.params.iter().map(|p| p.name.as_str()).collect();
    format!("the parameters of `{}` are: {}", jf.name, names.join(", "))
}

/// A config as the declaration keeps it, checking that it sets only parameters of `jf`.
fn tune_config(c: &ConfigObj, jf: &JitFn) -> Result<TuneConfig> {
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
    Ok(TuneConfig {
        constexprs,
        num_warps: c.num_warps,
        num_stages: c.num_stages,
    })
}

// ---------------------------------------------------------------------------------
// The evaluator

enum Flow<'a> {
    Normal,
    Break,
    Continue,
    Return(V<'a>),
}

struct Frame<'a> {
    /// `None` at module level (names go to the globals).
    locals: Option<Scope<'a>>,
    closure: Vec<Scope<'a>>,
    globals: Vec<String>,
    nonlocals: Vec<String>,
}

impl<'a> Frame<'a> {
    fn module() -> Frame<'a> {
        Frame {
            locals: None,
            closure: vec![],
            globals: vec![],
            nonlocals: vec![],
        }
    }

    /// The enclosing scopes a function or comprehension defined here sees.
    fn captured(&self) -> Vec<Scope<'a>> {
        let mut c = self.closure.clone();
        c.extend(self.locals.clone());
        c
    }

    fn child(&self) -> Frame<'a> {
        Frame {
            locals: Some(Rc::new(RefCell::new(HashMap::new()))),
            closure: self.captured(),
            globals: vec![],
            nonlocals: vec![],
        }
    }
}

enum It<'a> {
    Items(std::vec::IntoIter<V<'a>>),
    Range(i64, i64, i64),
}

impl<'a> Iterator for It<'a> {
    type Item = V<'a>;
    fn next(&mut self) -> Option<V<'a>> {
        match self {
            It::Items(i) => i.next(),
            It::Range(cur, stop, step) => {
                if (*step > 0 && *cur < *stop) || (*step < 0 && *cur > *stop) {
                    let v = *cur;
                    *cur = cur.saturating_add(*step);
                    Some(V::Int(v))
                } else {
                    None
                }
            }
        }
    }
}

fn range_len(a: i64, b: i64, s: i64) -> u64 {
    let (a, b, s) = (a as i128, b as i128, s as i128);
    let n = if s > 0 {
        (b - a + s - 1).div_euclid(s)
    } else {
        (a - b - s - 1).div_euclid(-s)
    };
    n.max(0) as u64
}

fn overflow(span: Span) -> Diagnostic {
    err(
        ErrorKind::Unsupported,
        "integer overflow: configuration code is evaluated with 64-bit integers",
        span,
    )
}

fn type_err(msg: impl Into<String>, span: Span) -> Diagnostic {
    err(ErrorKind::Type, msg, span)
}

struct Host<'a> {
    m: &'a ParsedModule,
    target: HostTarget,
    globals: HashMap<String, V<'a>>,
    /// Globals set by top-level statements that failed, with the failure.
    poisoned: HashMap<String, Diagnostic>,
    steps: u64,
    nesting: u32,
}

impl<'a> Host<'a> {
    fn new(m: &'a ParsedModule, target: &HostTarget) -> Host<'a> {
        let file = m.source.name.rsplit(['/', '\\']).next().unwrap_or("");
        let stem = file.strip_suffix(".py").unwrap_or(file);
        let mut globals = HashMap::new();
        globals.insert("__name__".to_string(), V::str(stem));
        globals.insert("__file__".to_string(), V::str(&m.source.name));
        Host {
            m,
            target: target.clone(),
            globals,
            poisoned: HashMap::new(),
            steps: 0,
            nesting: 0,
        }
    }

    fn step(&mut self, span: Span) -> Result<()> {
        self.charge(1, span)
    }

    fn charge(&mut self, n: u64, span: Span) -> Result<()> {
        self.steps = self.steps.saturating_add(n);
        if self.steps > STEP_LIMIT {
            return Err(err(
                ErrorKind::Unsupported,
                format!(
                    "configuration code ran for more than {STEP_LIMIT} steps (an endless loop?)"
                ),
                span,
            ));
        }
        Ok(())
    }

    fn nested<T>(&mut self, span: Span, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.nesting >= MAX_NESTING {
            return Err(err(
                ErrorKind::Unsupported,
                format!("configuration code nests statements, expressions and calls more than {MAX_NESTING} levels deep (unbounded recursion?)"),
                span,
            ));
        }
        self.nesting += 1;
        let r = f(self);
        self.nesting -= 1;
        r
    }

    // --- the module -------------------------------------------------------------

    /// Runs the first `upto` top-level statements, as importing the module would.
    fn run_module(&mut self, upto: usize) {
        let m = self.m;
        for t in &m.top_level[..upto] {
            self.steps = 0;
            match t {
                TopLevel::Jit(i) => {
                    let name = &m.jit[*i].name;
                    self.poisoned.remove(name);
                    self.globals
                        .insert(name.clone(), V::Jit(name.as_str().into()));
                }
                TopLevel::Stmt(s) => {
                    let mut f = Frame::module();
                    if let Err(d) = self.exec(s, &mut f) {
                        let mut names = Touched::default();
                        names.stmt(s);
                        let mut all = names.bound;
                        for n in names.mutated {
                            if matches!(
                                self.globals.get(&n),
                                Some(V::List(_) | V::Dict(_) | V::Config(_))
                            ) {
                                all.push(n);
                            }
                        }
                        for n in all {
                            self.globals.remove(&n);
                            self.poisoned.insert(n, d.clone());
                        }
                    }
                }
            }
        }
    }

    fn import(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<()> {
        match s {
            Stmt::Import(i) => {
                for a in &i.names {
                    let path = a.name.as_str();
                    match &a.asname {
                        Some(n) => self.store(n.as_str(), resolve(path), f),
                        None => {
                            let first = path.split('.').next().unwrap_or(path);
                            self.store(first, resolve(first), f)
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let level = i.level.as_ref().map_or(0, |l| l.to_u32()) as usize;
                let module = format!(
                    "{}{}",
                    ".".repeat(level),
                    i.module.as_ref().map_or("", |m| m.as_str())
                );
                for a in &i.names {
                    if a.name.as_str() == "*" {
                        continue;
                    }
                    let bound = a.asname.as_ref().unwrap_or(&a.name);
                    let path = if module.ends_with('.') || module.is_empty() {
                        format!("{module}{}", a.name.as_str())
                    } else {
                        format!("{module}.{}", a.name.as_str())
                    };
                    self.store(bound.as_str(), resolve(&path), f);
                }
            }
            _ => {}
        }
        Ok(())
    }

    // --- names ------------------------------------------------------------------

    fn lookup(&mut self, name: &str, span: Span, f: &Frame<'a>) -> Result<V<'a>> {
        if let Some(l) = &f.locals {
            if !f.globals.iter().any(|g| g == name) {
                if let Some(v) = l.borrow().get(name) {
                    return Ok(v.clone());
                }
            }
        }
        for s in f.closure.iter().rev() {
            if let Some(v) = s.borrow().get(name) {
                return Ok(v.clone());
            }
        }
        if let Some(v) = self.globals.get(name) {
            return Ok(v.clone());
        }
        if let Some(d) = self.poisoned.get(name) {
            return Err(d
                .clone()
                .with_secondary(span, format!("`{name}` is used here"))
                .with_note(format!(
                    "`{name}` is set by a top-level statement that could not be evaluated"
                )));
        }
        if let Some(b) = builtin_named(name) {
            return Ok(V::Builtin(b));
        }
        if UNSUPPORTED_BUILTINS.contains(&name) {
            return Err(err(
                ErrorKind::Unsupported,
                format!("the Python builtin `{name}` is not supported in configuration code"),
                span,
            ));
        }
        Err(err(
            ErrorKind::Name,
            format!("name `{name}` is not defined"),
            span,
        ))
    }

    fn store(&mut self, name: &str, v: V<'a>, f: &mut Frame<'a>) {
        if f.nonlocals.iter().any(|n| n == name) {
            for s in f.closure.iter().rev() {
                if s.borrow().contains_key(name) {
                    s.borrow_mut().insert(name.to_string(), v);
                    return;
                }
            }
        }
        match &f.locals {
            Some(l) if !f.globals.iter().any(|g| g == name) => {
                l.borrow_mut().insert(name.to_string(), v);
            }
            _ => {
                self.poisoned.remove(name);
                self.globals.insert(name.to_string(), v);
            }
        }
    }

    // --- statements -------------------------------------------------------------

    fn exec_block(&mut self, body: &'a [Stmt], f: &mut Frame<'a>) -> Result<Flow<'a>> {
        for s in body {
            let flow = self.exec(s, f)?;
            if !matches!(flow, Flow::Normal) {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    fn exec(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(s);
        self.step(span)?;
        self.nested(span, |h| h.exec_inner(s, f))
    }

    fn exec_inner(&mut self, s: &'a Stmt, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(s);
        match s {
            Stmt::Expr(e) => {
                self.eval(&e.value, f)?;
            }
            Stmt::Assign(a) => {
                let v = self.eval(&a.value, f)?;
                for t in &a.targets {
                    self.assign(t, v.clone(), f)?;
                }
            }
            Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    let v = self.eval(v, f)?;
                    self.assign(&a.target, v, f)?;
                }
            }
            Stmt::AugAssign(a) => self.aug_assign(a, f)?,
            Stmt::If(i) => {
                let t = self.eval(&i.test, f)?;
                let body = if truthy(&t) { &i.body } else { &i.orelse };
                return self.exec_block(body, f);
            }
            Stmt::For(fo) => return self.exec_for(fo, f),
            Stmt::While(w) => loop {
                self.step(span)?;
                let t = self.eval(&w.test, f)?;
                if !truthy(&t) {
                    return self.exec_block(&w.orelse, f);
                }
                match self.exec_block(&w.body, f)? {
                    Flow::Break => break,
                    Flow::Return(v) => return Ok(Flow::Return(v)),
                    Flow::Normal | Flow::Continue => {}
                }
            },
            Stmt::Break(_) => return Ok(Flow::Break),
            Stmt::Continue(_) => return Ok(Flow::Continue),
            Stmt::Return(r) => {
                let v = match &r.value {
                    Some(e) => self.eval(e, f)?,
                    None => V::None,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::Pass(_) => {}
            Stmt::FunctionDef(d) => {
                let mut v = self.make_func(Site::Def(d), f)?;
                for dec in d.decorator_list.iter().rev() {
                    let dv = self.eval(dec, f)?;
                    v = match dv {
                        V::Builtin(Builtin::Cache) => v,
                        other => {
                            return Err(err(
                                ErrorKind::Unsupported,
                                format!(
                                    "the decorator {} on `{}` cannot be evaluated",
                                    describe(&other),
                                    d.name
                                ),
                                span_of(dec),
                            ))
                        }
                    };
                }
                self.store(d.name.as_str(), v, f);
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.import(s, f)?,
            Stmt::Global(g) => f.globals.extend(g.names.iter().map(|n| n.to_string())),
            Stmt::Nonlocal(n) => f.nonlocals.extend(n.names.iter().map(|n| n.to_string())),
            Stmt::Assert(a) => {
                let t = self.eval(&a.test, f)?;
                if !truthy(&t) {
                    let msg = match &a.msg {
                        Some(m) => {
                            let m = self.eval(m, f)?;
                            format!(": {}", py_str(&m))
                        }
                        None => String::new(),
                    };
                    return Err(err(
                        ErrorKind::Runtime,
                        format!("assertion failed in configuration code{msg}"),
                        span,
                    ));
                }
            }
            Stmt::Raise(_) => {
                let text = self
                    .m
                    .source
                    .text
                    .get(span.start as usize..span.end as usize)
                    .unwrap_or("raise");
                return Err(err(
                    ErrorKind::Runtime,
                    format!("configuration code raised an exception: `{text}`"),
                    span,
                ));
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.delete(t, f)?;
                }
            }
            other => {
                let what = match other {
                    Stmt::ClassDef(_) => "class definitions are",
                    Stmt::AsyncFunctionDef(_) | Stmt::AsyncFor(_) | Stmt::AsyncWith(_) => {
                        "async code is"
                    }
                    Stmt::With(_) => "`with` statements are",
                    Stmt::Try(_) | Stmt::TryStar(_) => "`try` statements are",
                    Stmt::Match(_) => "`match` statements are",
                    _ => "this statement is",
                };
                return Err(err(
                    ErrorKind::Unsupported,
                    format!("{what} not supported in configuration code"),
                    span,
                ));
            }
        }
        Ok(Flow::Normal)
    }

    fn exec_for(&mut self, fo: &'a ast::StmtFor, f: &mut Frame<'a>) -> Result<Flow<'a>> {
        let span = span_of(fo);
        let it = self.eval(&fo.iter, f)?;
        let items = self.iter(it, span_of(&*fo.iter))?;
        for item in items {
            self.step(span)?;
            self.assign(&fo.target, item, f)?;
            match self.exec_block(&fo.body, f)? {
                Flow::Break => return Ok(Flow::Normal),
                Flow::Return(v) => return Ok(Flow::Return(v)),
                Flow::Normal | Flow::Continue => {}
            }
        }
        self.exec_block(&fo.orelse, f)
    }

    fn assign(&mut self, target: &'a Expr, v: V<'a>, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(target);
        match target {
            Expr::Name(n) => {
                self.store(n.id.as_str(), v, f);
                Ok(())
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let items = self.seq(v, span)?;
                let star = elts.iter().position(|e| matches!(e, Expr::Starred(_)));
                match star {
                    None => {
                        if items.len() != elts.len() {
                            return Err(err(
                                ErrorKind::Runtime,
                                format!(
                                    "cannot unpack {} values into {} names",
                                    items.len(),
                                    elts.len()
                                ),
                                span,
                            ));
                        }
                        for (t, x) in elts.iter().zip(items) {
                            self.assign(t, x, f)?;
                        }
                    }
                    Some(si) => {
                        let after = elts.len() - si - 1;
                        if items.len() < si + after {
                            return Err(err(
                                ErrorKind::Runtime,
                                format!(
                                    "cannot unpack {} values into {} or more names",
                                    items.len(),
                                    elts.len() - 1
                                ),
                                span,
                            ));
                        }
                        let mid = items.len() - after;
                        for (t, x) in elts[..si].iter().zip(items[..si].iter()) {
                            self.assign(t, x.clone(), f)?;
                        }
                        let Expr::Starred(st) = &elts[si] else {
                            unreachable!("position found a starred target")
                        };
                        self.assign(&st.value, V::list(items[si..mid].to_vec()), f)?;
                        for (t, x) in elts[si + 1..].iter().zip(items[mid..].iter()) {
                            self.assign(t, x.clone(), f)?;
                        }
                    }
                }
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                self.set_item(&base, key, v, span)
            }
            Expr::Attribute(a) => {
                let base = self.eval(&a.value, f)?;
                self.set_attr(&base, a.attr.as_str(), v, span)
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this assignment target is not supported in configuration code",
                span,
            )),
        }
    }

    fn set_item(&mut self, base: &V<'a>, key: V<'a>, v: V<'a>, span: Span) -> Result<()> {
        match base {
            V::List(l) => {
                let len = l.borrow().len();
                let i = index(&key, len, span)?;
                l.borrow_mut()[i] = v;
                Ok(())
            }
            V::Dict(d) => dict_set(d, key, v, span),
            other => Err(type_err(
                format!("{} does not support item assignment", describe(other)),
                span,
            )),
        }
    }

    fn set_attr(&mut self, base: &V<'a>, name: &str, v: V<'a>, span: Span) -> Result<()> {
        if let V::Config(c) = base {
            let mut c = c.borrow_mut();
            match name {
                "kwargs" if matches!(v, V::Dict(_)) => {
                    c.kwargs = v;
                    return Ok(());
                }
                "num_warps" | "num_stages" => {
                    let n = match v {
                        V::None => None,
                        V::Int(i) => Some(u32::try_from(i).map_err(|_| {
                            type_err(format!("`{name}` must be a non-negative int"), span)
                        })?),
                        other => {
                            return Err(type_err(
                                format!("`{name}` must be an int, not {}", describe(&other)),
                                span,
                            ))
                        }
                    };
                    if name == "num_warps" {
                        c.num_warps = n;
                    } else {
                        c.num_stages = n;
                    }
                    return Ok(());
                }
                _ => {}
            }
        }
        Err(err(
            ErrorKind::Unsupported,
            format!(
                "setting `.{name}` on {} is not supported in configuration code",
                describe(base)
            ),
            span,
        ))
    }

    fn delete(&mut self, t: &'a Expr, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(t);
        match t {
            Expr::Name(n) => {
                let name = n.id.as_str();
                let removed = match &f.locals {
                    Some(l) if !f.globals.iter().any(|g| g == name) => {
                        l.borrow_mut().remove(name).is_some()
                    }
                    _ => self.globals.remove(name).is_some(),
                };
                if !removed {
                    return Err(err(
                        ErrorKind::Name,
                        format!("name `{name}` is not defined"),
                        span,
                    ));
                }
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                match &base {
                    V::List(l) => {
                        let len = l.borrow().len();
                        let i = index(&key, len, span)?;
                        l.borrow_mut().remove(i);
                        Ok(())
                    }
                    V::Dict(d) => {
                        let pos = dict_pos(d, &key, span)?;
                        match pos {
                            Some(p) => {
                                d.borrow_mut().remove(p);
                                Ok(())
                            }
                            None => Err(key_error(&key, span)),
                        }
                    }
                    other => Err(type_err(
                        format!("{} does not support item deletion", describe(other)),
                        span,
                    )),
                }
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this `del` target is not supported in configuration code",
                span,
            )),
        }
    }

    fn aug_assign(&mut self, a: &'a ast::StmtAugAssign, f: &mut Frame<'a>) -> Result<()> {
        let span = span_of(a);
        let rhs = self.eval(&a.value, f)?;
        match &*a.target {
            Expr::Name(n) => {
                let cur = self.lookup(n.id.as_str(), span_of(&*a.target), f)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.store(n.id.as_str(), v, f);
                Ok(())
            }
            Expr::Subscript(s) => {
                let base = self.eval(&s.value, f)?;
                let key = self.eval(&s.slice, f)?;
                let cur = self.get_item(&base, &key, span)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.set_item(&base, key, v, span)
            }
            Expr::Attribute(at) => {
                let base = self.eval(&at.value, f)?;
                let cur = self.getattr(base.clone(), at.attr.as_str(), span)?;
                let v = self.inplace(a.op, cur, rhs, span)?;
                self.set_attr(&base, at.attr.as_str(), v, span)
            }
            _ => Err(err(
                ErrorKind::Unsupported,
                "this assignment target is not supported in configuration code",
                span,
            )),
        }
    }

    /// `cur op= rhs`: lists extend and repeat in place, as in Python.
    fn inplace(&mut self, op: Operator, cur: V<'a>, rhs: V<'a>, span: Span) -> Result<V<'a>> {
        if let V::List(l) = &cur {
            match op {
                Operator::Add => {
                    let extra = self.seq(rhs, span)?;
                    self.charge(extra.len() as u64, span)?;
                    l.borrow_mut().extend(extra);
                    return Ok(cur);
                }
                Operator::Mult => {
                    let n = self.binop(Operator::Mult, cur.clone(), rhs, span)?;
                    if let V::List(new) = n {
                        let items = new.borrow().clone();
                        *l.borrow_mut() = items;
                    }
                    return Ok(cur);
                }
                _ => {}
            }
        }
        self.binop(op, cur, rhs, span)
    }

    // --- iteration ----------------------------------------------------------------

    fn iter(&mut self, v: V<'a>, span: Span) -> Result<It<'a>> {
        Ok(match v {
            V::Range(a, b, s) => It::Range(a, b, s),
            other => It::Items(self.seq(other, span)?.into_iter()),
        })
    }

    fn seq(&mut self, v: V<'a>, span: Span) -> Result<Vec<V<'a>>> {
        Ok(match v {
            V::List(l) => l.borrow().clone(),
            V::Tuple(t) => t.to_vec(),
            V::Dict(d) => d.borrow().iter().map(|(k, _)| k.clone()).collect(),
            V::Str(s) => s.chars().map(|c| V::Str(c.to_string().into())).collect(),
            V::Range(a, b, s) => {
                let n = range_len(a, b, s);
                self.charge(n, span)?;
                It::Range(a, b, s).collect()
            }
            other => {
                return Err(type_err(
                    format!("cannot iterate over {}", describe(&other)),
                    span,
                ))
            }
        })
    }

    // --- expressions ----------------------------------------------------------------

    fn eval(&mut self, e: &'a Expr, f: &mut Frame<'a>) -> Result<V<'a>> {
        self.nested(span_of(e), |h| h.eval_inner(e, f))
    }

    fn eval_inner(&mut self, e: &'a Expr, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(e);
        match e {
            Expr::Constant(c) => constant(&c.value, span),
            Expr::Name(n) => self.lookup(n.id.as_str(), span, f),
            Expr::Attribute(a) => {
                let v = self.eval(&a.value, f)?;
                self.getattr(v, a.attr.as_str(), span)
            }
            Expr::Subscript(s) => self.eval_subscript(s, f),
            Expr::Call(c) => self.eval_call(c, f),
            Expr::BinOp(b) => {
                let l = self.eval(&b.left, f)?;
                let r = self.eval(&b.right, f)?;
                self.binop(b.op, l, r, span)
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand, f)?;
                unary(u.op, v, span)
            }
            Expr::BoolOp(b) => {
                let mut last = V::None;
                for (i, x) in b.values.iter().enumerate() {
                    last = self.eval(x, f)?;
                    let t = truthy(&last);
                    let done = match b.op {
                        BoolOp::And => !t,
                        BoolOp::Or => t,
                    };
                    if done || i + 1 == b.values.len() {
                        break;
                    }
                }
                Ok(last)
            }
            Expr::Compare(c) => self.eval_compare(c, f),
            Expr::IfExp(i) => {
                let t = self.eval(&i.test, f)?;
                if truthy(&t) {
                    self.eval(&i.body, f)
                } else {
                    self.eval(&i.orelse, f)
                }
            }
            Expr::List(l) => Ok(V::list(self.elements(&l.elts, f)?)),
            Expr::Tuple(t) => Ok(V::tuple(self.elements(&t.elts, f)?)),
            Expr::Dict(d) => self.eval_dict(d, f),
            Expr::ListComp(c) => Ok(V::list(self.comp_list(&c.elt, &c.generators, f)?)),
            Expr::GeneratorExp(g) => Ok(V::list(self.comp_list(&g.elt, &g.generators, f)?)),
            Expr::DictComp(d) => self.eval_dict_comp(d, f),
            Expr::Lambda(l) => self.make_func(Site::Lambda(l), f),
            Expr::NamedExpr(n) => {
                let v = self.eval(&n.value, f)?;
                self.assign(&n.target, v.clone(), f)?;
                Ok(v)
            }
            Expr::JoinedStr(j) => {
                let mut s = String::new();
                for part in &j.values {
                    match self.eval(part, f)? {
                        V::Str(x) => s.push_str(&x),
                        other => s.push_str(&py_str(&other)),
                    }
                }
                Ok(V::Str(s.into()))
            }
            Expr::FormattedValue(fv) => {
                if fv.format_spec.is_some() {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "format specifications in f-strings are not supported in configuration code",
                        span,
                    ));
                }
                let v = self.eval(&fv.value, f)?;
                Ok(match fv.conversion {
                    ast::ConversionFlag::Repr => V::Str(py_repr(&v).into()),
                    _ => V::Str(py_str(&v).into()),
                })
            }
            Expr::Starred(_) => Err(err(
                ErrorKind::Unsupported,
                "`*` unpacking is only supported in calls and list or tuple displays",
                span,
            )),
            _ => Err(err(
                ErrorKind::Unsupported,
                "this expression is not supported in configuration code",
                span,
            )),
        }
    }

    fn elements(&mut self, elts: &'a [Expr], f: &mut Frame<'a>) -> Result<Vec<V<'a>>> {
        let mut out = vec![];
        for x in elts {
            if let Expr::Starred(st) = x {
                let v = self.eval(&st.value, f)?;
                let items = self.seq(v, span_of(x))?;
                out.extend(items);
            } else {
                out.push(self.eval(x, f)?);
            }
        }
        self.charge(out.len() as u64, Span::NONE)?;
        Ok(out)
    }

    fn eval_dict(&mut self, d: &'a ast::ExprDict, f: &mut Frame<'a>) -> Result<V<'a>> {
        let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
        for (k, v) in d.keys.iter().zip(&d.values) {
            match k {
                Some(k) => {
                    let kv = self.eval(k, f)?;
                    let vv = self.eval(v, f)?;
                    dict_set(&out, kv, vv, span_of(k))?;
                }
                None => {
                    let other = self.eval(v, f)?;
                    let V::Dict(o) = other else {
                        return Err(type_err(
                            format!("cannot unpack {} with `**`", describe(&other)),
                            span_of(v),
                        ));
                    };
                    let entries = o.borrow().clone();
                    for (kk, vv) in entries {
                        dict_set(&out, kk, vv, span_of(v))?;
                    }
                }
            }
        }
        Ok(V::Dict(out))
    }

    fn eval_subscript(&mut self, s: &'a ast::ExprSubscript, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(s);
        let base = self.eval(&s.value, f)?;
        if let Expr::Slice(sl) = &*s.slice {
            let mut part = |e: &'a Option<Box<Expr>>, h: &mut Self| -> Result<Option<i64>> {
                match e {
                    None => Ok(None),
                    Some(x) => match h.eval(x, f)? {
                        V::None => Ok(None),
                        V::Int(i) => Ok(Some(i)),
                        V::Bool(b) => Ok(Some(b as i64)),
                        other => Err(type_err(
                            format!("slice indices must be ints, not {}", describe(&other)),
                            span_of(&**x),
                        )),
                    },
                }
            };
            let lo = part(&sl.lower, self)?;
            let hi = part(&sl.upper, self)?;
            let st = part(&sl.step, self)?;
            return slice(&base, lo, hi, st, span);
        }
        let key = self.eval(&s.slice, f)?;
        self.get_item(&base, &key, span)
    }

    fn get_item(&mut self, base: &V<'a>, key: &V<'a>, span: Span) -> Result<V<'a>> {
        match base {
            V::List(l) => {
                let l = l.borrow();
                Ok(l[index(key, l.len(), span)?].clone())
            }
            V::Tuple(t) => Ok(t[index(key, t.len(), span)?].clone()),
            V::Str(s) => {
                let chars: Vec<char> = s.chars().collect();
                let i = index(key, chars.len(), span)?;
                Ok(V::Str(chars[i].to_string().into()))
            }
            V::Range(a, b, st) => {
                let n = range_len(*a, *b, *st) as usize;
                let i = index(key, n, span)?;
                Ok(V::Int(a + st * i as i64))
            }
            V::Dict(d) => {
                let pos = dict_pos(d, key, span)?;
                match pos {
                    Some(p) => Ok(d.borrow()[p].1.clone()),
                    None => Err(key_error(key, span)),
                }
            }
            other => Err(type_err(
                format!(
                    "{} is not subscriptable in configuration code",
                    describe(other)
                ),
                span,
            )),
        }
    }

    fn eval_compare(&mut self, c: &'a ast::ExprCompare, f: &mut Frame<'a>) -> Result<V<'a>> {
        let mut left = self.eval(&c.left, f)?;
        for (op, r) in c.ops.iter().zip(&c.comparators) {
            let right = self.eval(r, f)?;
            let span = span_of(&*c.left).to(span_of(r));
            if !compare(*op, &left, &right, span)? {
                return Ok(V::Bool(false));
            }
            left = right;
        }
        Ok(V::Bool(true))
    }

    /// Runs the generators of a comprehension, calling `body` for each binding.
    fn comprehension(
        &mut self,
        gens: &'a [ast::Comprehension],
        f: &mut Frame<'a>,
        body: &mut dyn FnMut(&mut Self, &mut Frame<'a>) -> Result<()>,
    ) -> Result<()> {
        let Some(first) = gens.first() else {
            return Ok(());
        };
        // The first iterable is evaluated in the enclosing scope, the rest in the
        // comprehension's own.
        let it = self.eval(&first.iter, f)?;
        let mut cf = f.child();
        self.comp_level(gens, 0, Some(it), &mut cf, body)
    }

    fn comp_level(
        &mut self,
        gens: &'a [ast::Comprehension],
        i: usize,
        first: Option<V<'a>>,
        cf: &mut Frame<'a>,
        body: &mut dyn FnMut(&mut Self, &mut Frame<'a>) -> Result<()>,
    ) -> Result<()> {
        let g = &gens[i];
        let span = span_of(&g.target).to(span_of(&g.iter));
        let it = match first {
            Some(v) => v,
            None => self.eval(&g.iter, cf)?,
        };
        let items = self.iter(it, span_of(&g.iter))?;
        for item in items {
            self.step(span)?;
            self.assign(&g.target, item, cf)?;
            let mut keep = true;
            for cond in &g.ifs {
                let c = self.eval(cond, cf)?;
                if !truthy(&c) {
                    keep = false;
                    break;
                }
            }
            if !keep {
                continue;
            }
            if i + 1 == gens.len() {
                body(self, cf)?;
            } else {
                self.nested(span, |h| h.comp_level(gens, i + 1, None, cf, body))?;
            }
        }
        Ok(())
    }

    fn comp_list(
        &mut self,
        elt: &'a Expr,
        gens: &'a [ast::Comprehension],
        f: &mut Frame<'a>,
    ) -> Result<Vec<V<'a>>> {
        let mut out = vec![];
        self.comprehension(gens, f, &mut |h, cf| {
            out.push(h.eval(elt, cf)?);
            Ok(())
        })?;
        Ok(out)
    }

    fn eval_dict_comp(&mut self, d: &'a ast::ExprDictComp, f: &mut Frame<'a>) -> Result<V<'a>> {
        let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
        let kspan = span_of(&*d.key);
        self.comprehension(&d.generators, f, &mut |h, cf| {
            let k = h.eval(&d.key, cf)?;
            let v = h.eval(&d.value, cf)?;
            dict_set(&out, k, v, kspan)
        })?;
        Ok(V::Dict(out))
    }

    fn make_func(&mut self, site: Site<'a>, f: &mut Frame<'a>) -> Result<V<'a>> {
        let (name, args, span): (Rc<str>, &'a ast::Arguments, Span) = match site {
            Site::Def(d) => (d.name.as_str().into(), &d.args, span_of(d)),
            Site::Lambda(l) => ("<lambda>".into(), &l.args, span_of(l)),
        };
        let mut defaults = vec![];
        for p in args
            .posonlyargs
            .iter()
            .chain(&args.args)
            .chain(&args.kwonlyargs)
        {
            defaults.push(match &p.default {
                Some(d) => Some(self.eval(d, f)?),
                None => None,
            });
        }
        Ok(V::Func(Rc::new(Func {
            name,
            site,
            defaults,
            closure: f.captured(),
            span,
        })))
    }

    /// A prune function kept by a declaration, made again in this module's globals.
    fn owned_func(&mut self, def: &'a OwnedFn) -> Result<Rc<Func<'a>>> {
        let site = match def {
            OwnedFn::Def(d) => Site::Def(d),
            OwnedFn::Lambda(l) => Site::Lambda(l),
        };
        match self.make_func(site, &mut Frame::module())? {
            V::Func(f) => Ok(f),
            _ => unreachable!("make_func makes functions"),
        }
    }

    // --- calls ----------------------------------------------------------------------

    fn eval_call(&mut self, c: &'a ast::ExprCall, f: &mut Frame<'a>) -> Result<V<'a>> {
        let span = span_of(c);
        let callee = self.eval(&c.func, f)?;
        let mut args = vec![];
        for a in &c.args {
            let aspan = span_of(a);
            if let Expr::Starred(st) = a {
                let v = self.eval(&st.value, f)?;
                for x in self.seq(v, aspan)? {
                    args.push(A {
                        v: x,
                        span: aspan,
                        at: aspan,
                        expr: None,
                    });
                }
            } else {
                let v = self.eval(a, f)?;
                args.push(A {
                    v,
                    span: aspan,
                    at: aspan,
                    expr: Some(a),
                });
            }
        }
        let mut kwargs: Vec<(String, A<'a>)> = vec![];
        for k in &c.keywords {
            let kspan = span_of(k);
            let vspan = span_of(&k.value);
            let v = self.eval(&k.value, f)?;
            match &k.arg {
                Some(name) => kwargs.push((
                    name.to_string(),
                    A {
                        v,
                        span: vspan,
                        at: kspan,
                        expr: Some(&k.value),
                    },
                )),
                None => {
                    let V::Dict(d) = &v else {
                        return Err(type_err(
                            format!("cannot unpack {} with `**`", describe(&v)),
                            kspan,
                        ));
                    };
                    for (kk, vv) in d.borrow().iter() {
                        let V::Str(name) = kk else {
                            return Err(type_err("keywords must be strings", kspan));
                        };
                        kwargs.push((
                            name.to_string(),
                            A {
                                v: vv.clone(),
                                span: vspan,
                                at: kspan,
                                expr: None,
                            },
                        ));
                    }
                }
            }
        }
        self.call(callee, args, kwargs, span)
    }

    fn call(
        &mut self,
        callee: V<'a>,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        self.step(span)?;
        match callee {
            V::Func(func) => self.call_func(&func, args, kwargs, span),
            V::Builtin(b) => self.call_builtin(b, args, kwargs, span),
            V::Method(m) => {
                let (recv, name) = (&m.0, m.1);
                self.call_method(recv, name, args, kwargs, span)
            }
            V::Path(p) => Err(err(
                ErrorKind::Unsupported,
                format!("`{p}(...)` cannot be evaluated: tilewise evaluates configuration code without Python and does not know this function"),
                span,
            )
            .with_note("configuration code may use Python builtins, triton.Config, triton.cdiv, triton.next_power_of_2, triton.runtime.driver.active.get_current_target(), itertools.product, math and functions of this file")),
            V::Jit(n) => Err(err(
                ErrorKind::Unsupported,
                format!("the jit function `{n}` cannot be called from configuration code"),
                span,
            )),
            other => Err(type_err(
                format!("{} is not callable", describe(&other)),
                span,
            )),
        }
    }

    fn call_func(
        &mut self,
        func: &Rc<Func<'a>>,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let a = func.args();
        let npos = a.posonlyargs.len() + a.args.len();
        let nkw = a.kwonlyargs.len();
        let name = &func.name;
        let mut slots: Vec<Option<V<'a>>> = vec![None; npos + nkw];
        let mut extra = vec![];
        for (i, x) in args.into_iter().enumerate() {
            if i < npos {
                slots[i] = Some(x.v);
            } else if a.vararg.is_some() {
                extra.push(x.v);
            } else {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{name}` takes {npos} positional arguments but more were given"),
                    span,
                ));
            }
        }
        let mut extra_kw = vec![];
        for (k, x) in kwargs {
            let idx = a
                .args
                .iter()
                .position(|p| p.def.arg.as_str() == k)
                .map(|i| a.posonlyargs.len() + i)
                .or_else(|| {
                    a.kwonlyargs
                        .iter()
                        .position(|p| p.def.arg.as_str() == k)
                        .map(|i| npos + i)
                });
            match idx {
                Some(i) => {
                    if slots[i].is_some() {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("`{name}` got multiple values for argument `{k}`"),
                            span,
                        ));
                    }
                    slots[i] = Some(x.v);
                }
                None if a.kwarg.is_some() => extra_kw.push((V::str(&k), x.v)),
                None => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{name}` got an unexpected keyword argument `{k}`"),
                        span,
                    ))
                }
            }
        }
        let scope: Scope<'a> = Rc::new(RefCell::new(HashMap::new()));
        let params = a.posonlyargs.iter().chain(&a.args).chain(&a.kwonlyargs);
        for (i, p) in params.enumerate() {
            let v = match slots[i].take().or_else(|| func.defaults[i].clone()) {
                Some(v) => v,
                None => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{name}` is missing the argument `{}`", p.def.arg),
                        span,
                    ))
                }
            };
            scope.borrow_mut().insert(p.def.arg.to_string(), v);
        }
        if let Some(va) = &a.vararg {
            scope
                .borrow_mut()
                .insert(va.arg.to_string(), V::tuple(extra));
        }
        if let Some(kw) = &a.kwarg {
            scope
                .borrow_mut()
                .insert(kw.arg.to_string(), V::dict(extra_kw));
        }
        let mut frame = Frame {
            locals: Some(scope),
            closure: func.closure.clone(),
            globals: vec![],
            nonlocals: vec![],
        };
        let site = func.site;
        self.nested(span, |h| match site {
            Site::Def(d) => match h.exec_block(&d.body, &mut frame)? {
                Flow::Return(v) => Ok(v),
                _ => Ok(V::None),
            },
            Site::Lambda(l) => h.eval(&l.body, &mut frame),
        })
    }

    /// Binds a builtin's arguments to its parameter `names`.
    fn bind(
        fname: &str,
        names: &[&str],
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<Vec<Option<A<'a>>>> {
        let mut out: Vec<Option<A<'a>>> = vec![None; names.len()];
        if args.len() > names.len() {
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "`{fname}` takes at most {} positional arguments, {} given",
                    names.len(),
                    args.len()
                ),
                span,
            ));
        }
        for (i, a) in args.into_iter().enumerate() {
            out[i] = Some(a);
        }
        for (k, a) in kwargs {
            let Some(i) = names.iter().position(|n| *n == k) else {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{fname}` got an unexpected keyword argument `{k}`"),
                    a.at,
                ));
            };
            if out[i].is_some() {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{fname}` got multiple values for argument `{k}`"),
                    a.at,
                ));
            }
            out[i] = Some(a);
        }
        Ok(out)
    }

    fn call_builtin(
        &mut self,
        b: Builtin,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let fname = b.name();
        // Builtins with keyword arguments first.
        match b {
            Builtin::Config => return self.make_config(args, kwargs, span),
            Builtin::Autotune => return Ok(V::Autotune(Rc::new(AutotuneCall { args, kwargs }))),
            Builtin::Print => return Ok(V::None),
            Builtin::Min | Builtin::Max => return self.min_max(b, args, kwargs, span),
            Builtin::Sorted => {
                let p = Self::bind(fname, &["iterable", "key", "reverse"], args, kwargs, span)?;
                let [it, key, rev] = <[Option<A>; 3]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let items = self.seq(it.v, it.span)?;
                let key = key.map(|k| k.v).filter(|k| !matches!(k, V::None));
                let rev = rev.is_some_and(|r| truthy(&r.v));
                return Ok(V::list(self.sort(items, key, rev, span)?));
            }
            Builtin::Dict => {
                if args.len() > 1 {
                    return Err(arity(fname, "at most 1", args.len(), span));
                }
                let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
                if let Some(a) = args.into_iter().next() {
                    self.dict_update(&out, a.v, a.span)?;
                }
                for (k, a) in kwargs {
                    dict_set(&out, V::str(&k), a.v, a.span)?;
                }
                return Ok(V::Dict(out));
            }
            Builtin::Enumerate => {
                let p = Self::bind(fname, &["iterable", "start"], args, kwargs, span)?;
                let [it, start] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let start = match start {
                    Some(s) => int_of(&s.v, s.span)?,
                    None => 0,
                };
                let items = self.seq(it.v, it.span)?;
                let mut out = vec![];
                for (i, x) in items.into_iter().enumerate() {
                    let n = start.checked_add(i as i64).ok_or_else(|| overflow(span))?;
                    out.push(V::tuple(vec![V::Int(n), x]));
                }
                return Ok(V::list(out));
            }
            Builtin::Sum | Builtin::Prod => {
                let p = Self::bind(fname, &["iterable", "start"], args, kwargs, span)?;
                let [it, start] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(it) = it else {
                    return Err(missing(fname, "iterable", span));
                };
                let (op, init) = if b == Builtin::Sum {
                    (Operator::Add, V::Int(0))
                } else {
                    (Operator::Mult, V::Int(1))
                };
                let mut acc = start.map(|s| s.v).unwrap_or(init);
                for x in self.seq(it.v, it.span)? {
                    acc = self.binop(op, acc, x, span)?;
                }
                return Ok(acc);
            }
            Builtin::Product => {
                let mut repeat = 1i64;
                for (k, a) in kwargs {
                    if k != "repeat" {
                        return Err(err(
                            ErrorKind::Argument,
                            format!("`{fname}` got an unexpected keyword argument `{k}`"),
                            a.at,
                        ));
                    }
                    repeat = int_of(&a.v, a.span)?;
                }
                let mut pools = vec![];
                for a in args {
                    pools.push(self.seq(a.v, a.span)?);
                }
                let pools: Vec<Vec<V<'a>>> = (0..repeat.max(0))
                    .flat_map(|_| pools.iter().cloned())
                    .collect();
                let mut out: Vec<Vec<V<'a>>> = vec![vec![]];
                for pool in &pools {
                    let n = (out.len() as u64).saturating_mul(pool.len() as u64);
                    self.charge(n, span)?;
                    let mut next = vec![];
                    for prefix in &out {
                        for x in pool {
                            let mut t = prefix.clone();
                            t.push(x.clone());
                            next.push(t);
                        }
                    }
                    out = next;
                }
                return Ok(V::list(out.into_iter().map(V::tuple).collect()));
            }
            Builtin::Cache => {
                if let [a] = args.as_slice() {
                    if matches!(a.v, V::Func(_)) && kwargs.is_empty() {
                        return Ok(a.v.clone());
                    }
                }
                return Ok(V::Builtin(Builtin::Cache));
            }
            Builtin::Round => {
                let p = Self::bind(fname, &["number", "ndigits"], args, kwargs, span)?;
                let [x, nd] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let Some(x) = x else {
                    return Err(missing(fname, "number", span));
                };
                let nd = nd.filter(|n| !matches!(n.v, V::None));
                return match (&x.v, nd) {
                    (V::Int(i), _) => Ok(V::Int(*i)),
                    (V::Bool(b), _) => Ok(V::Int(*b as i64)),
                    (V::Float(f), None) => float_to_int(f.round_ties_even(), x.span),
                    (V::Float(f), Some(n)) => {
                        let n = int_of(&n.v, n.span)?.clamp(-300, 300) as i32;
                        let p = 10f64.powi(n);
                        Ok(V::Float((f * p).round_ties_even() / p))
                    }
                    (other, _) => Err(type_err(
                        format!("`round` needs a number, not {}", describe(other)),
                        x.span,
                    )),
                };
            }
            Builtin::Filter | Builtin::Map => {
                if !kwargs.is_empty() || args.len() < 2 {
                    return Err(arity(fname, "2", args.len(), span));
                }
                let mut it = args.into_iter();
                let func = it.next().map(|a| a.v).unwrap_or(V::None);
                let mut lists = vec![];
                for a in it {
                    lists.push(self.seq(a.v, a.span)?);
                }
                if b == Builtin::Filter {
                    if lists.len() != 1 {
                        return Err(arity(fname, "2", lists.len() + 1, span));
                    }
                    let mut out = vec![];
                    for x in lists.pop().unwrap_or_default() {
                        let keep = match &func {
                            V::None => truthy(&x),
                            f => {
                                let r = self.call1(f.clone(), vec![x.clone()], span)?;
                                truthy(&r)
                            }
                        };
                        if keep {
                            out.push(x);
                        }
                    }
                    return Ok(V::list(out));
                }
                let n = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                let mut out = vec![];
                for i in 0..n {
                    let xs = lists.iter().map(|l| l[i].clone()).collect();
                    out.push(self.call1(func.clone(), xs, span)?);
                }
                return Ok(V::list(out));
            }
            _ => {}
        }
        if let Some((k, a)) = kwargs.first() {
            return Err(err(
                ErrorKind::Argument,
                format!("`{fname}` got an unexpected keyword argument `{k}`"),
                a.at,
            ));
        }
        let n = args.len();
        let mut args = args.into_iter();
        let mut next = || args.next();
        match b {
            Builtin::Len => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let len = match &a.v {
                    V::List(l) => l.borrow().len() as u64,
                    V::Tuple(t) => t.len() as u64,
                    V::Dict(d) => d.borrow().len() as u64,
                    V::Str(s) => s.chars().count() as u64,
                    V::Range(x, y, z) => range_len(*x, *y, *z),
                    other => {
                        return Err(type_err(
                            format!("{} has no len()", describe(other)),
                            a.span,
                        ))
                    }
                };
                Ok(V::Int(len as i64))
            }
            Builtin::Range => {
                let mut v = vec![];
                while let Some(a) = next() {
                    v.push(int_of(&a.v, a.span)?);
                }
                let (a, b, s) = match v.as_slice() {
                    [b] => (0, *b, 1),
                    [a, b] => (*a, *b, 1),
                    [a, b, s] => (*a, *b, *s),
                    _ => return Err(arity(fname, "1 to 3", n, span)),
                };
                if s == 0 {
                    return Err(err(
                        ErrorKind::Runtime,
                        "`range` step must not be zero",
                        span,
                    ));
                }
                Ok(V::Range(a, b, s))
            }
            Builtin::List | Builtin::Tuple | Builtin::Reversed => {
                let items = match (next(), next()) {
                    (None, None) if b != Builtin::Reversed => vec![],
                    (Some(a), None) => self.seq(a.v, a.span)?,
                    _ => return Err(arity(fname, "1", n, span)),
                };
                Ok(match b {
                    Builtin::List => V::list(items),
                    Builtin::Tuple => V::tuple(items),
                    _ => V::list(items.into_iter().rev().collect()),
                })
            }
            Builtin::Zip => {
                let mut lists = vec![];
                while let Some(a) = next() {
                    lists.push(self.seq(a.v, a.span)?);
                }
                let len = lists.iter().map(|l| l.len()).min().unwrap_or(0);
                Ok(V::list(
                    (0..len)
                        .map(|i| V::tuple(lists.iter().map(|l| l[i].clone()).collect()))
                        .collect(),
                ))
            }
            Builtin::Any | Builtin::All => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let items = self.seq(a.v, a.span)?;
                Ok(V::Bool(if b == Builtin::Any {
                    items.iter().any(truthy)
                } else {
                    items.iter().all(truthy)
                }))
            }
            Builtin::Int => match (next(), next()) {
                (None, None) => Ok(V::Int(0)),
                (Some(a), None) => match &a.v {
                    V::Int(i) => Ok(V::Int(*i)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => float_to_int(f.trunc(), a.span),
                    V::Str(s) => s
                        .trim()
                        .replace('_', "")
                        .parse::<i64>()
                        .map(V::Int)
                        .map_err(|_| {
                            err(
                                ErrorKind::Runtime,
                                format!("invalid literal for int(): {}", py_repr(&a.v)),
                                a.span,
                            )
                        }),
                    other => Err(type_err(
                        format!("`int()` of {} is not supported", describe(other)),
                        a.span,
                    )),
                },
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Float => match (next(), next()) {
                (None, None) => Ok(V::Float(0.0)),
                (Some(a), None) => match &a.v {
                    V::Str(s) => {
                        let t = s.trim().to_ascii_lowercase();
                        let f = match t.as_str() {
                            "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
                            "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
                            "nan" => Some(f64::NAN),
                            _ => t.parse::<f64>().ok(),
                        };
                        f.map(V::Float).ok_or_else(|| {
                            err(
                                ErrorKind::Runtime,
                                format!("could not convert string to float: {}", py_repr(&a.v)),
                                a.span,
                            )
                        })
                    }
                    other => num_f(other).map(V::Float).ok_or_else(|| {
                        type_err(
                            format!("`float()` of {} is not supported", describe(other)),
                            a.span,
                        )
                    }),
                },
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Bool => match (next(), next()) {
                (None, None) => Ok(V::Bool(false)),
                (Some(a), None) => Ok(V::Bool(truthy(&a.v))),
                _ => Err(arity(fname, "at most 1", n, span)),
            },
            Builtin::Str | Builtin::Repr => match (next(), next()) {
                (None, None) if b == Builtin::Str => Ok(V::str("")),
                (Some(a), None) => Ok(V::Str(
                    if b == Builtin::Str {
                        py_str(&a.v)
                    } else {
                        py_repr(&a.v)
                    }
                    .into(),
                )),
                _ => Err(arity(fname, "1", n, span)),
            },
            Builtin::Abs => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                match &a.v {
                    V::Int(i) => i.checked_abs().map(V::Int).ok_or_else(|| overflow(span)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => Ok(V::Float(f.abs())),
                    other => Err(type_err(
                        format!("bad operand for abs(): {}", describe(other)),
                        a.span,
                    )),
                }
            }
            Builtin::NextPow2 => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let x = int_of(&a.v, a.span)?;
                if x <= 0 {
                    return Ok(V::Int(0));
                }
                (x as u64)
                    .checked_next_power_of_two()
                    .and_then(|p| i64::try_from(p).ok())
                    .map(V::Int)
                    .ok_or_else(|| overflow(span))
            }
            Builtin::Cdiv => {
                let [Some(x), Some(y), None] = [next(), next(), next()] else {
                    return Err(arity(fname, "2", n, span));
                };
                let s = self.binop(Operator::Add, x.v, y.v.clone(), span)?;
                let s = self.binop(Operator::Sub, s, V::Int(1), span)?;
                self.binop(Operator::FloorDiv, s, y.v, span)
            }
            Builtin::GetTarget => {
                if n != 0 {
                    return Err(arity(fname, "0", n, span));
                }
                Ok(V::Target)
            }
            Builtin::Ceil | Builtin::Floor => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                match &a.v {
                    V::Int(i) => Ok(V::Int(*i)),
                    V::Bool(x) => Ok(V::Int(*x as i64)),
                    V::Float(f) => float_to_int(
                        if b == Builtin::Ceil {
                            f.ceil()
                        } else {
                            f.floor()
                        },
                        a.span,
                    ),
                    other => Err(type_err(
                        format!("`{fname}` needs a number, not {}", describe(other)),
                        a.span,
                    )),
                }
            }
            Builtin::Log2 | Builtin::Sqrt => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                let Some(x) = num_f(&a.v) else {
                    return Err(type_err(
                        format!("`{fname}` needs a number, not {}", describe(&a.v)),
                        a.span,
                    ));
                };
                let bad = if b == Builtin::Log2 {
                    x <= 0.0
                } else {
                    x < 0.0
                };
                if bad {
                    return Err(err(ErrorKind::Runtime, "math domain error", a.span));
                }
                Ok(V::Float(if b == Builtin::Log2 {
                    x.log2()
                } else {
                    x.sqrt()
                }))
            }
            Builtin::Gcd => {
                let mut g: i64 = 0;
                while let Some(a) = next() {
                    let mut x = int_of(&a.v, a.span)?.unsigned_abs();
                    let mut y = g.unsigned_abs();
                    while y != 0 {
                        (x, y) = (y, x % y);
                    }
                    g = i64::try_from(x).map_err(|_| overflow(span))?;
                }
                Ok(V::Int(g))
            }
            Builtin::Constexpr => {
                let [Some(a), None] = [next(), next()] else {
                    return Err(arity(fname, "1", n, span));
                };
                Ok(a.v)
            }
            _ => Err(Diagnostic::internal(format!(
                "builtin `{fname}` dispatched twice"
            ))),
        }
    }

    /// Calls `f` with positional values.
    fn call1(&mut self, f: V<'a>, xs: Vec<V<'a>>, span: Span) -> Result<V<'a>> {
        let args = xs
            .into_iter()
            .map(|v| A {
                v,
                span,
                at: span,
                expr: None,
            })
            .collect();
        self.call(f, args, vec![], span)
    }

    fn min_max(
        &mut self,
        b: Builtin,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        let fname = b.name();
        let (mut key, mut default) = (None, None);
        for (k, a) in kwargs {
            match k.as_str() {
                "key" => key = Some(a.v).filter(|k| !matches!(k, V::None)),
                "default" => default = Some(a.v),
                _ => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!("`{fname}` got an unexpected keyword argument `{k}`"),
                        a.at,
                    ))
                }
            }
        }
        let items = match args.len() {
            0 => return Err(arity(fname, "at least 1", 0, span)),
            1 => {
                let a = args.into_iter().next().expect("one argument");
                self.seq(a.v, a.span)?
            }
            _ => args.into_iter().map(|a| a.v).collect(),
        };
        if items.is_empty() {
            return default.ok_or_else(|| {
                err(
                    ErrorKind::Runtime,
                    format!("`{fname}` of an empty sequence"),
                    span,
                )
            });
        }
        let mut best: Option<(V<'a>, V<'a>)> = None;
        for x in items {
            let k = match &key {
                Some(f) => self.call1(f.clone(), vec![x.clone()], span)?,
                None => x.clone(),
            };
            let better = match &best {
                None => true,
                Some((bk, _)) => {
                    let o = order(&k, bk, span)?;
                    if b == Builtin::Min {
                        o == Some(Ordering::Less)
                    } else {
                        o == Some(Ordering::Greater)
                    }
                }
            };
            if better {
                best = Some((k, x));
            }
        }
        Ok(best.map(|(_, x)| x).unwrap_or(V::None))
    }

    fn sort(
        &mut self,
        items: Vec<V<'a>>,
        key: Option<V<'a>>,
        reverse: bool,
        span: Span,
    ) -> Result<Vec<V<'a>>> {
        self.charge(items.len() as u64, span)?;
        let mut keyed = vec![];
        for x in items {
            let k = match &key {
                Some(f) => self.call1(f.clone(), vec![x.clone()], span)?,
                None => x.clone(),
            };
            keyed.push((k, x));
        }
        let mut failure = None;
        keyed.sort_by(|(a, _), (b, _)| {
            let (a, b) = if reverse { (b, a) } else { (a, b) };
            match order(a, b, span) {
                Ok(o) => o.unwrap_or(Ordering::Equal),
                Err(d) => {
                    failure.get_or_insert(d);
                    Ordering::Equal
                }
            }
        });
        match failure {
            Some(d) => Err(d),
            None => Ok(keyed.into_iter().map(|(_, x)| x).collect()),
        }
    }

    fn dict_update(&mut self, d: &DictRef<'a>, from: V<'a>, span: Span) -> Result<()> {
        if let V::Dict(o) = &from {
            let entries = o.borrow().clone();
            for (k, v) in entries {
                dict_set(d, k, v, span)?;
            }
            return Ok(());
        }
        for pair in self.seq(from, span)? {
            let kv = self.seq(pair, span)?;
            let [k, v] = <[V; 2]>::try_from(kv)
                .map_err(|_| type_err("dictionary update sequence elements must be pairs", span))?;
            dict_set(d, k, v, span)?;
        }
        Ok(())
    }

    fn make_config(
        &mut self,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        const NAMES: [&str; 7] = [
            "kwargs",
            "num_warps",
            "num_stages",
            "num_ctas",
            "maxnreg",
            "pre_hook",
            "ir_override",
        ];
        let fname = "triton.Config";
        let mut known = vec![];
        for (k, a) in kwargs {
            if !NAMES.contains(&k.as_str()) {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`triton.Config` has no keyword argument `{k}`"),
                    a.at,
                )
                .with_note("triton.Config takes kwargs, num_warps, num_stages, num_ctas, maxnreg, pre_hook and ir_override"));
            }
            known.push((k, a));
        }
        let p = Self::bind(fname, &NAMES, args, known, span)?;
        let mut p = p.into_iter();
        let kw = p.next().flatten();
        let count = |a: Option<A<'a>>, what: &str, min: i64| -> Result<Option<u32>> {
            let Some(a) = a else { return Ok(None) };
            match &a.v {
                V::None => Ok(None),
                V::Int(i) if *i >= min && *i <= u32::MAX as i64 => Ok(Some(*i as u32)),
                other => Err(type_err(
                    format!(
                        "`{what}` must be an int of at least {min}, not {}",
                        py_repr(other)
                    ),
                    a.at,
                )),
            }
        };
        let num_warps = count(p.next().flatten(), "num_warps", 1)?;
        let num_stages = count(p.next().flatten(), "num_stages", 0)?;
        if let Some(a) = p.next().flatten() {
            if !matches!(a.v, V::None | V::Int(1)) {
                return Err(err(
                    ErrorKind::Unsupported,
                    format!("`num_ctas={}` is not supported: tilewise launches one program per thread block (num_ctas=1)", py_repr(&a.v)),
                    a.at,
                ));
            }
        }
        for what in ["maxnreg", "pre_hook", "ir_override"] {
            if let Some(a) = p.next().flatten() {
                if !matches!(a.v, V::None) {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("`{what}=` in triton.Config is not supported by tilewise"),
                        a.at,
                    ));
                }
            }
        }
        let Some(kw) = kw else {
            return Err(missing(fname, "kwargs", span));
        };
        if !matches!(kw.v, V::Dict(_)) {
            return Err(type_err(
                format!(
                    "the meta-parameters of triton.Config must be a dict, not {}",
                    describe(&kw.v)
                ),
                kw.span,
            ));
        }
        Ok(V::Config(Rc::new(RefCell::new(ConfigObj {
            kwargs: kw.v,
            num_warps,
            num_stages,
            span,
        }))))
    }

    // --- attributes and methods ----------------------------------------------------

    fn getattr(&mut self, v: V<'a>, name: &str, span: Span) -> Result<V<'a>> {
        const LIST: &[&str] = &[
            "append", "extend", "insert", "pop", "copy", "index", "count", "remove", "reverse",
            "sort", "clear",
        ];
        const DICT: &[&str] = &[
            "get",
            "items",
            "keys",
            "values",
            "copy",
            "update",
            "pop",
            "setdefault",
        ];
        const STR: &[&str] = &[
            "startswith",
            "endswith",
            "lower",
            "upper",
            "join",
            "strip",
            "split",
            "replace",
        ];
        const TUPLE: &[&str] = &["index", "count"];
        let method = |table: &[&'static str]| table.iter().copied().find(|m| *m == name);
        let found = match &v {
            V::Path(p) => return Ok(resolve(&format!("{p}.{name}"))),
            V::Config(c) => {
                let c = c.borrow();
                return match name {
                    "kwargs" => Ok(c.kwargs.clone()),
                    "num_warps" => Ok(V::Int(c.num_warps.unwrap_or(4) as i64)),
                    "num_stages" => Ok(V::Int(c.num_stages.unwrap_or(3) as i64)),
                    "num_ctas" => Ok(V::Int(1)),
                    "maxnreg" | "pre_hook" | "ir_override" => Ok(V::None),
                    "all_kwargs" => {
                        drop(c);
                        Ok(V::Method(Rc::new((v, "all_kwargs"))))
                    }
                    _ => Err(no_attr(&v, name, span)),
                };
            }
            V::Target => {
                return match name {
                    "backend" => Ok(V::str(&self.target.backend)),
                    "arch" => Ok(V::Int(self.target.arch as i64)),
                    "warp_size" => Ok(V::Int(self.target.warp_size as i64)),
                    _ => Err(no_attr(&v, name, span)),
                }
            }
            V::Tensor(d, _) => match name {
                "dtype" => return Ok(V::DType(*d, Flavor::Torch)),
                "element_size" => Some("element_size"),
                "numel" => Some("numel"),
                _ => {
                    return Err(err(
                        ErrorKind::Unsupported,
                        format!("a tensor argument's `.{name}` is not known to configuration code (it has .dtype, .element_size() and .numel())"),
                        span,
                    ))
                }
            },
            V::DType(d, Flavor::Torch) if name == "itemsize" => {
                return Ok(V::Int(d.size_bytes() as i64))
            }
            V::DType(d, Flavor::Triton) if name == "primitive_bitwidth" => {
                return Ok(V::Int(d.bits() as i64))
            }
            V::Func(f) if name == "__name__" => return Ok(V::str(&f.name)),
            V::List(_) => method(LIST),
            V::Dict(_) => method(DICT),
            V::Str(_) => method(STR),
            V::Tuple(_) => method(TUPLE),
            _ => None,
        };
        match found {
            Some(m) => Ok(V::Method(Rc::new((v, m)))),
            None => Err(no_attr(&v, name, span)),
        }
    }

    fn call_method(
        &mut self,
        recv: &V<'a>,
        name: &'static str,
        args: Vec<A<'a>>,
        kwargs: Vec<(String, A<'a>)>,
        span: Span,
    ) -> Result<V<'a>> {
        if let V::List(l) = recv {
            if name == "sort" {
                let p = Self::bind("list.sort", &["key", "reverse"], vec![], kwargs, span)?;
                if !args.is_empty() {
                    return Err(arity("list.sort", "0 positional", args.len(), span));
                }
                let [key, rev] = <[Option<A>; 2]>::try_from(p).ok().unwrap_or_default();
                let key = key.map(|k| k.v).filter(|k| !matches!(k, V::None));
                let rev = rev.is_some_and(|r| truthy(&r.v));
                let items = l.borrow().clone();
                let sorted = self.sort(items, key, rev, span)?;
                *l.borrow_mut() = sorted;
                return Ok(V::None);
            }
        }
        if let Some((k, a)) = kwargs.first() {
            return Err(err(
                ErrorKind::Argument,
                format!("`.{name}()` got an unexpected keyword argument `{k}`"),
                a.at,
            ));
        }
        let n = args.len();
        let vals: Vec<V<'a>> = args.into_iter().map(|a| a.v).collect();
        let want = |k: usize| -> Result<()> {
            if n == k {
                Ok(())
            } else {
                Err(arity(&format!(".{name}"), &k.to_string(), n, span))
            }
        };
        match recv {
            V::List(l) => match name {
                "append" => {
                    want(1)?;
                    self.step(span)?;
                    l.borrow_mut().push(vals[0].clone());
                    Ok(V::None)
                }
                "extend" => {
                    want(1)?;
                    let items = self.seq(vals[0].clone(), span)?;
                    self.charge(items.len() as u64, span)?;
                    l.borrow_mut().extend(items);
                    Ok(V::None)
                }
                "insert" => {
                    want(2)?;
                    let len = l.borrow().len() as i64;
                    let i = int_of(&vals[0], span)?;
                    let i = if i < 0 { (i + len).max(0) } else { i.min(len) };
                    l.borrow_mut().insert(i as usize, vals[1].clone());
                    Ok(V::None)
                }
                "pop" => {
                    let len = l.borrow().len();
                    let i = match vals.as_slice() {
                        [] if len > 0 => len - 1,
                        [] => return Err(err(ErrorKind::Runtime, "pop from empty list", span)),
                        [i] => index(i, len, span)?,
                        _ => return Err(arity(".pop", "at most 1", n, span)),
                    };
                    Ok(l.borrow_mut().remove(i))
                }
                "copy" => {
                    want(0)?;
                    Ok(V::list(l.borrow().clone()))
                }
                "clear" => {
                    want(0)?;
                    l.borrow_mut().clear();
                    Ok(V::None)
                }
                "reverse" => {
                    want(0)?;
                    l.borrow_mut().reverse();
                    Ok(V::None)
                }
                "index" | "count" | "remove" => {
                    want(1)?;
                    let items = l.borrow().clone();
                    let r = seq_search(name, &items, &vals[0], span)?;
                    if name == "remove" {
                        if let V::Int(i) = r {
                            l.borrow_mut().remove(i as usize);
                        }
                        return Ok(V::None);
                    }
                    Ok(r)
                }
                _ => Err(no_attr(recv, name, span)),
            },
            V::Tuple(t) => {
                want(1)?;
                seq_search(name, t, &vals[0], span)
            }
            V::Dict(d) => match name {
                "get" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".get", "1 or 2", n, span));
                    }
                    let pos = dict_pos(d, &vals[0], span)?;
                    Ok(match pos {
                        Some(p) => d.borrow()[p].1.clone(),
                        None => vals.get(1).cloned().unwrap_or(V::None),
                    })
                }
                "items" | "keys" | "values" => {
                    want(0)?;
                    Ok(V::list(
                        d.borrow()
                            .iter()
                            .map(|(k, v)| match name {
                                "items" => V::tuple(vec![k.clone(), v.clone()]),
                                "keys" => k.clone(),
                                _ => v.clone(),
                            })
                            .collect(),
                    ))
                }
                "copy" => {
                    want(0)?;
                    Ok(V::dict(d.borrow().clone()))
                }
                "update" => {
                    want(1)?;
                    self.dict_update(d, vals[0].clone(), span)?;
                    Ok(V::None)
                }
                "pop" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".pop", "1 or 2", n, span));
                    }
                    match dict_pos(d, &vals[0], span)? {
                        Some(p) => Ok(d.borrow_mut().remove(p).1),
                        None => vals
                            .get(1)
                            .cloned()
                            .ok_or_else(|| key_error(&vals[0], span)),
                    }
                }
                "setdefault" => {
                    if !(1..=2).contains(&n) {
                        return Err(arity(".setdefault", "1 or 2", n, span));
                    }
                    match dict_pos(d, &vals[0], span)? {
                        Some(p) => Ok(d.borrow()[p].1.clone()),
                        None => {
                            let v = vals.get(1).cloned().unwrap_or(V::None);
                            dict_set(d, vals[0].clone(), v.clone(), span)?;
                            Ok(v)
                        }
                    }
                }
                _ => Err(no_attr(recv, name, span)),
            },
            V::Str(s) => {
                let arg_str = |i: usize| -> Result<Rc<str>> {
                    match vals.get(i) {
                        Some(V::Str(x)) => Ok(x.clone()),
                        Some(other) => Err(type_err(
                            format!("`.{name}()` needs a str, not {}", describe(other)),
                            span,
                        )),
                        None => Err(arity(&format!(".{name}"), "more", n, span)),
                    }
                };
                match name {
                    "startswith" | "endswith" => {
                        want(1)?;
                        let pats: Vec<Rc<str>> = match &vals[0] {
                            V::Tuple(t) => t
                                .iter()
                                .map(|x| match x {
                                    V::Str(p) => Ok(p.clone()),
                                    other => Err(type_err(
                                        format!("`.{name}()` needs strs, not {}", describe(other)),
                                        span,
                                    )),
                                })
                                .collect::<Result<_>>()?,
                            _ => vec![arg_str(0)?],
                        };
                        Ok(V::Bool(pats.iter().any(|p| {
                            if name == "startswith" {
                                s.starts_with(&**p)
                            } else {
                                s.ends_with(&**p)
                            }
                        })))
                    }
                    "lower" => {
                        want(0)?;
                        Ok(V::Str(s.to_lowercase().into()))
                    }
                    "upper" => {
                        want(0)?;
                        Ok(V::Str(s.to_uppercase().into()))
                    }
                    "strip" => {
                        want(0)?;
                        Ok(V::str(s.trim()))
                    }
                    "split" => {
                        let parts: Vec<V> = match n {
                            0 => s.split_whitespace().map(V::str).collect(),
                            1 => {
                                let sep = arg_str(0)?;
                                if sep.is_empty() {
                                    return Err(err(ErrorKind::Runtime, "empty separator", span));
                                }
                                s.split(&*sep).map(V::str).collect()
                            }
                            _ => return Err(arity(".split", "at most 1", n, span)),
                        };
                        Ok(V::list(parts))
                    }
                    "replace" => {
                        want(2)?;
                        let (a, b) = (arg_str(0)?, arg_str(1)?);
                        Ok(V::Str(s.replace(&*a, &b).into()))
                    }
                    "join" => {
                        want(1)?;
                        let mut parts = vec![];
                        for x in self.seq(vals[0].clone(), span)? {
                            match x {
                                V::Str(p) => parts.push(p.to_string()),
                                other => {
                                    return Err(type_err(
                                        format!("`.join()` needs strs, not {}", describe(&other)),
                                        span,
                                    ))
                                }
                            }
                        }
                        Ok(V::Str(parts.join(s).into()))
                    }
                    _ => Err(no_attr(recv, name, span)),
                }
            }
            V::Config(c) => {
                want(0)?;
                let c = c.borrow();
                let mut entries = match &c.kwargs {
                    V::Dict(d) => d.borrow().clone(),
                    _ => vec![],
                };
                let out: DictRef<'a> = Rc::new(RefCell::new(vec![]));
                entries.push((V::str("num_warps"), V::Int(c.num_warps.unwrap_or(4) as i64)));
                entries.push((V::str("num_ctas"), V::Int(1)));
                entries.push((
                    V::str("num_stages"),
                    V::Int(c.num_stages.unwrap_or(3) as i64),
                ));
                for (k, v) in entries {
                    dict_set(&out, k, v, span)?;
                }
                Ok(V::Dict(out))
            }
            V::Tensor(d, numel) => {
                want(0)?;
                Ok(V::Int(if name == "numel" {
                    i64::try_from(*numel).map_err(|_| overflow(span))?
                } else {
                    d.size_bytes() as i64
                }))
            }
            _ => Err(no_attr(recv, name, span)),
        }
    }

    // --- arithmetic ------------------------------------------------------------------

    fn binop(&mut self, op: Operator, l: V<'a>, r: V<'a>, span: Span) -> Result<V<'a>> {
        use Operator::*;
        // Sequences.
        match (&l, &r, op) {
            (V::Str(a), V::Str(b), Add) => return Ok(V::Str(format!("{a}{b}").into())),
            (V::List(a), V::List(b), Add) => {
                let mut v = a.borrow().clone();
                v.extend(b.borrow().iter().cloned());
                self.charge(v.len() as u64, span)?;
                return Ok(V::list(v));
            }
            (V::Tuple(a), V::Tuple(b), Add) => {
                let mut v = a.to_vec();
                v.extend(b.iter().cloned());
                self.charge(v.len() as u64, span)?;
                return Ok(V::tuple(v));
            }
            (V::Dict(a), V::Dict(b), BitOr) => {
                let out: DictRef<'a> = Rc::new(RefCell::new(a.borrow().clone()));
                let entries = b.borrow().clone();
                for (k, v) in entries {
                    dict_set(&out, k, v, span)?;
                }
                return Ok(V::Dict(out));
            }
            (V::Str(_) | V::List(_) | V::Tuple(_), V::Int(_) | V::Bool(_), Mult)
            | (V::Int(_) | V::Bool(_), V::Str(_) | V::List(_) | V::Tuple(_), Mult) => {
                let (seq, n) = if matches!(l, V::Int(_) | V::Bool(_)) {
                    (&r, &l)
                } else {
                    (&l, &r)
                };
                let n = int_of(n, span)?.max(0) as u64;
                return match seq {
                    V::Str(s) => {
                        self.charge(n.saturating_mul(s.len() as u64), span)?;
                        Ok(V::Str(s.repeat(n as usize).into()))
                    }
                    V::List(x) => {
                        let items = x.borrow().clone();
                        self.charge(n.saturating_mul(items.len() as u64), span)?;
                        Ok(V::list(repeat(&items, n)))
                    }
                    V::Tuple(x) => {
                        self.charge(n.saturating_mul(x.len() as u64), span)?;
                        Ok(V::tuple(repeat(x, n)))
                    }
                    _ => unreachable!("matched a sequence"),
                };
            }
            _ => {}
        }
        let bad = || {
            type_err(
                format!(
                    "unsupported operand types for {}: {} and {}",
                    op_symbol(op),
                    describe(&l),
                    describe(&r)
                ),
                span,
            )
        };
        // Bitwise operators keep bools bools.
        if let (V::Bool(a), V::Bool(b)) = (&l, &r) {
            match op {
                BitAnd => return Ok(V::Bool(a & b)),
                BitOr => return Ok(V::Bool(a | b)),
                BitXor => return Ok(V::Bool(a ^ b)),
                _ => {}
            }
        }
        if let (Some(a), Some(b)) = (num_i(&l), num_i(&r)) {
            let zero = || err(ErrorKind::Runtime, "division by zero", span);
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mult => a.checked_mul(b),
                FloorDiv => {
                    if b == 0 {
                        return Err(zero());
                    }
                    py_floordiv(a, b)
                }
                Mod => {
                    if b == 0 {
                        return Err(zero());
                    }
                    py_mod(a, b)
                }
                Div => {
                    if b == 0 {
                        return Err(zero());
                    }
                    return Ok(V::Float(a as f64 / b as f64));
                }
                Pow => {
                    if b < 0 {
                        if a == 0 {
                            return Err(zero());
                        }
                        return Ok(V::Float((a as f64).powf(b as f64)));
                    }
                    u32::try_from(b).ok().and_then(|e| a.checked_pow(e))
                }
                LShift => {
                    if b < 0 {
                        return Err(err(ErrorKind::Runtime, "negative shift count", span));
                    }
                    if a == 0 {
                        Some(0)
                    } else {
                        u32::try_from(b)
                            .ok()
                            .and_then(|s| a.checked_shl(s))
                            .filter(|x| x >> b == a)
                    }
                }
                RShift => {
                    if b < 0 {
                        return Err(err(ErrorKind::Runtime, "negative shift count", span));
                    }
                    Some(a >> b.min(63))
                }
                BitAnd => Some(a & b),
                BitOr => Some(a | b),
                BitXor => Some(a ^ b),
                MatMult => return Err(bad()),
            };
            return v.map(V::Int).ok_or_else(|| overflow(span));
        }
        let (Some(a), Some(b)) = (num_f(&l), num_f(&r)) else {
            return Err(bad());
        };
        let zero = || err(ErrorKind::Runtime, "float division by zero", span);
        Ok(V::Float(match op {
            Add => a + b,
            Sub => a - b,
            Mult => a * b,
            Div => {
                if b == 0.0 {
                    return Err(zero());
                }
                a / b
            }
            FloorDiv | Mod => {
                if b == 0.0 {
                    return Err(zero());
                }
                let mut m = a % b;
                if m != 0.0 && ((m < 0.0) != (b < 0.0)) {
                    m += b;
                }
                if op == Mod {
                    m
                } else {
                    ((a - m) / b).round()
                }
            }
            Pow => {
                if a == 0.0 && b < 0.0 {
                    return Err(zero());
                }
                if a < 0.0 && b.fract() != 0.0 {
                    return Err(err(
                        ErrorKind::Unsupported,
                        "a negative number to a fractional power is complex",
                        span,
                    ));
                }
                a.powf(b)
            }
            _ => return Err(bad()),
        }))
    }
}

// ---------------------------------------------------------------------------------
// Interpreting the decorator

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

impl<'a> Host<'a> {
    fn interpret(
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
        let names = |this: &mut Self, what: &str| -> Result<Vec<String>> {
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
                configs.push(tune_config(&c.borrow(), jf)?);
            }
        }
        if configs.is_empty() {
            // Triton's default for an empty list.
            configs.push(TuneConfig {
                constexprs: vec![],
                num_warps: Some(4),
                num_stages: Some(3),
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
                            V::Func(f) => {
                                if !f.closure.is_empty() {
                                    return Err(err(
                                        ErrorKind::Unsupported,
                                        format!("`early_config_prune` is `{}`, a function defined inside another function; tilewise needs a module-level function or a lambda written at module level", f.name),
                                        at,
                                    ));
                                }
                                let def = match f.site {
                                    Site::Def(d) => OwnedFn::Def(d.clone()),
                                    Site::Lambda(l) => OwnedFn::Lambda(l.clone()),
                                };
                                Some(PruneFn {
                                    name: f.name.to_string(),
                                    span: match f.site {
                                        Site::Def(d) => def_line(d, f.span, self.m),
                                        Site::Lambda(_) => f.span,
                                    },
                                    def: Arc::new(def),
                                })
                            }
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
        })
    }
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

// ---------------------------------------------------------------------------------
// Helpers

fn missing(fname: &str, what: &str, span: Span) -> Diagnostic {
    err(
        ErrorKind::Argument,
        format!("`{fname}` is missing the argument `{what}`"),
        span,
    )
}

fn arity(fname: &str, want: &str, got: usize, span: Span) -> Diagnostic {
    err(
        ErrorKind::Argument,
        format!("`{fname}` takes {want} arguments, {got} given"),
        span,
    )
}

fn no_attr(v: &V, name: &str, span: Span) -> Diagnostic {
    err(
        ErrorKind::Name,
        format!(
            "{} has no attribute `{name}` in configuration code",
            describe(v)
        ),
        span,
    )
}

fn key_error(key: &V, span: Span) -> Diagnostic {
    err(
        ErrorKind::Runtime,
        format!("key {} is not in the dict", py_repr(key)),
        span,
    )
}

fn constant<'a>(c: &Constant, span: Span) -> Result<V<'a>> {
    Ok(match c {
        Constant::None => V::None,
        Constant::Bool(b) => V::Bool(*b),
        Constant::Str(s) => V::str(s),
        Constant::Int(i) => match i.to_string().parse::<i64>() {
            Ok(v) => V::Int(v),
            Err(_) => return Err(overflow(span)),
        },
        Constant::Float(f) => V::Float(*f),
        Constant::Tuple(items) => V::tuple(
            items
                .iter()
                .map(|i| constant(i, span))
                .collect::<Result<_>>()?,
        ),
        _ => {
            return Err(err(
                ErrorKind::Unsupported,
                "this literal is not supported in configuration code",
                span,
            ))
        }
    })
}

fn truthy(v: &V) -> bool {
    match v {
        V::None => false,
        V::Bool(b) => *b,
        V::Int(i) => *i != 0,
        V::Float(f) => *f != 0.0,
        V::Str(s) => !s.is_empty(),
        V::List(l) => !l.borrow().is_empty(),
        V::Tuple(t) => !t.is_empty(),
        V::Dict(d) => !d.borrow().is_empty(),
        V::Range(a, b, s) => range_len(*a, *b, *s) > 0,
        _ => true,
    }
}

fn num_i(v: &V) -> Option<i64> {
    match v {
        V::Bool(b) => Some(*b as i64),
        V::Int(i) => Some(*i),
        _ => None,
    }
}

fn num_f(v: &V) -> Option<f64> {
    match v {
        V::Bool(b) => Some(*b as i64 as f64),
        V::Int(i) => Some(*i as f64),
        V::Float(f) => Some(*f),
        _ => None,
    }
}

fn int_of(v: &V, span: Span) -> Result<i64> {
    num_i(v).ok_or_else(|| type_err(format!("expected an int, found {}", describe(v)), span))
}

fn float_to_int<'a>(f: f64, span: Span) -> Result<V<'a>> {
    if !f.is_finite() || f.abs() >= 9.223_372_036_854_776e18 {
        return Err(overflow(span));
    }
    Ok(V::Int(f as i64))
}

fn py_floordiv(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn py_mod(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

fn repeat<'a>(items: &[V<'a>], n: u64) -> Vec<V<'a>> {
    if items.is_empty() {
        return vec![];
    }
    let mut out = Vec::with_capacity(items.len() * n as usize);
    for _ in 0..n {
        out.extend(items.iter().cloned());
    }
    out
}

fn op_symbol(op: Operator) -> &'static str {
    match op {
        Operator::Add => "+",
        Operator::Sub => "-",
        Operator::Mult => "*",
        Operator::MatMult => "@",
        Operator::Div => "/",
        Operator::Mod => "%",
        Operator::Pow => "**",
        Operator::LShift => "<<",
        Operator::RShift => ">>",
        Operator::BitOr => "|",
        Operator::BitXor => "^",
        Operator::BitAnd => "&",
        Operator::FloorDiv => "//",
    }
}

fn unary<'a>(op: UnaryOp, v: V<'a>, span: Span) -> Result<V<'a>> {
    match (op, &v) {
        (UnaryOp::Not, _) => Ok(V::Bool(!truthy(&v))),
        (UnaryOp::USub, V::Float(f)) => Ok(V::Float(-f)),
        (UnaryOp::UAdd, V::Float(f)) => Ok(V::Float(*f)),
        (UnaryOp::USub, _) if num_i(&v).is_some() => num_i(&v)
            .and_then(i64::checked_neg)
            .map(V::Int)
            .ok_or_else(|| overflow(span)),
        (UnaryOp::UAdd, _) if num_i(&v).is_some() => Ok(V::Int(num_i(&v).unwrap_or(0))),
        (UnaryOp::Invert, _) if num_i(&v).is_some() => Ok(V::Int(!num_i(&v).unwrap_or(0))),
        _ => Err(type_err(
            format!("bad operand for a unary operator: {}", describe(&v)),
            span,
        )),
    }
}

/// Python `==`. Comparing a torch dtype with a `triton.language` one is an error: Python
/// says they differ, which is never what the author meant.
fn py_eq<'a>(a: &V<'a>, b: &V<'a>, span: Span) -> Result<bool> {
    Ok(match (a, b) {
        (V::None, V::None) => true,
        (V::Str(x), V::Str(y)) => x == y,
        (V::Int(_) | V::Bool(_) | V::Float(_), V::Int(_) | V::Bool(_) | V::Float(_)) => {
            match (num_i(a), num_i(b)) {
                (Some(x), Some(y)) => x == y,
                _ => num_f(a) == num_f(b),
            }
        }
        (V::List(x), V::List(y)) => seq_eq(&x.borrow(), &y.borrow(), span)?,
        (V::Tuple(x), V::Tuple(y)) => seq_eq(x, y, span)?,
        (V::Dict(x), V::Dict(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, v) in x.iter() {
                let Some((_, w)) = y.iter().find(|(k2, _)| py_eq(k, k2, span).unwrap_or(false))
                else {
                    return Ok(false);
                };
                if !py_eq(v, w, span)? {
                    return Ok(false);
                }
            }
            true
        }
        (V::Range(a1, b1, s1), V::Range(a2, b2, s2)) => (a1, b1, s1) == (a2, b2, s2),
        (V::DType(x, fx), V::DType(y, fy)) => {
            if fx != fy {
                return Err(type_err(
                    "comparing a torch dtype with a triton.language dtype: in Triton they are never equal (a tensor's `.dtype` is a torch dtype; compare it with `torch.float16` and the like)",
                    span,
                ));
            }
            x == y
        }
        (V::Config(x), V::Config(y)) => {
            let (x, y) = (x.borrow(), y.borrow());
            py_eq(&x.kwargs, &y.kwargs, span)?
                && x.num_warps.unwrap_or(4) == y.num_warps.unwrap_or(4)
                && x.num_stages.unwrap_or(3) == y.num_stages.unwrap_or(3)
        }
        (V::Target, V::Target) => true,
        (V::Func(x), V::Func(y)) => Rc::ptr_eq(x, y),
        (V::Builtin(x), V::Builtin(y)) => x == y,
        (V::Path(x), V::Path(y)) => x == y,
        (V::Jit(x), V::Jit(y)) => x == y,
        _ => false,
    })
}

fn seq_eq<'a>(x: &[V<'a>], y: &[V<'a>], span: Span) -> Result<bool> {
    if x.len() != y.len() {
        return Ok(false);
    }
    for (a, b) in x.iter().zip(y) {
        if !py_eq(a, b, span)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Python ordering; `None` where the values are unordered (NaN).
fn order<'a>(a: &V<'a>, b: &V<'a>, span: Span) -> Result<Option<Ordering>> {
    match (a, b) {
        (V::Int(_) | V::Bool(_) | V::Float(_), V::Int(_) | V::Bool(_) | V::Float(_)) => {
            Ok(match (num_i(a), num_i(b)) {
                (Some(x), Some(y)) => Some(x.cmp(&y)),
                _ => num_f(a).partial_cmp(&num_f(b)),
            })
        }
        (V::Str(x), V::Str(y)) => Ok(Some(x.cmp(y))),
        (V::List(x), V::List(y)) => seq_order(&x.borrow(), &y.borrow(), span),
        (V::Tuple(x), V::Tuple(y)) => seq_order(x, y, span),
        _ => Err(type_err(
            format!("{} and {} cannot be ordered", describe(a), describe(b)),
            span,
        )),
    }
}

fn seq_order<'a>(x: &[V<'a>], y: &[V<'a>], span: Span) -> Result<Option<Ordering>> {
    for (a, b) in x.iter().zip(y) {
        if !py_eq(a, b, span)? {
            return order(a, b, span);
        }
    }
    Ok(Some(x.len().cmp(&y.len())))
}

fn contains<'a>(container: &V<'a>, x: &V<'a>, span: Span) -> Result<bool> {
    match container {
        V::List(l) => {
            for y in l.borrow().iter() {
                if py_eq(x, y, span)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        V::Tuple(t) => {
            for y in t.iter() {
                if py_eq(x, y, span)? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        V::Dict(d) => Ok(dict_pos(d, x, span)?.is_some()),
        V::Str(s) => match x {
            V::Str(sub) => Ok(s.contains(&**sub)),
            other => Err(type_err(
                format!(
                    "`in <str>` needs a str on the left, not {}",
                    describe(other)
                ),
                span,
            )),
        },
        V::Range(a, b, s) => Ok(match num_i(x) {
            Some(v) => {
                let inside = if *s > 0 {
                    v >= *a && v < *b
                } else {
                    v <= *a && v > *b
                };
                inside && (v as i128 - *a as i128) % (*s as i128) == 0
            }
            None => false,
        }),
        other => Err(type_err(
            format!("`in` is not supported on {}", describe(other)),
            span,
        )),
    }
}

fn compare<'a>(op: CmpOp, a: &V<'a>, b: &V<'a>, span: Span) -> Result<bool> {
    Ok(match op {
        CmpOp::Eq => py_eq(a, b, span)?,
        CmpOp::NotEq => !py_eq(a, b, span)?,
        CmpOp::Lt => order(a, b, span)? == Some(Ordering::Less),
        CmpOp::LtE => matches!(order(a, b, span)?, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => order(a, b, span)? == Some(Ordering::Greater),
        CmpOp::GtE => matches!(
            order(a, b, span)?,
            Some(Ordering::Greater | Ordering::Equal)
        ),
        CmpOp::In => contains(b, a, span)?,
        CmpOp::NotIn => !contains(b, a, span)?,
        CmpOp::Is | CmpOp::IsNot => {
            let same = match (a, b) {
                (V::None, V::None) | (V::Target, V::Target) => true,
                (V::Bool(x), V::Bool(y)) => x == y,
                (V::List(x), V::List(y)) => Rc::ptr_eq(x, y),
                (V::Dict(x), V::Dict(y)) => Rc::ptr_eq(x, y),
                (V::Config(x), V::Config(y)) => Rc::ptr_eq(x, y),
                (V::Func(x), V::Func(y)) => Rc::ptr_eq(x, y),
                (V::DType(x, fx), V::DType(y, fy)) => x == y && fx == fy,
                (V::Int(x), V::Int(y)) => x == y,
                (V::Str(x), V::Str(y)) => x == y,
                _ => false,
            };
            same == (op == CmpOp::Is)
        }
    })
}

fn hashable(v: &V) -> bool {
    match v {
        V::None | V::Bool(_) | V::Int(_) | V::Float(_) | V::Str(_) | V::DType(..) => true,
        V::Tuple(t) => t.iter().all(hashable),
        V::Config(_) | V::Func(_) | V::Builtin(_) | V::Target => true,
        _ => false,
    }
}

fn dict_pos<'a>(d: &DictRef<'a>, key: &V<'a>, span: Span) -> Result<Option<usize>> {
    if !hashable(key) {
        return Err(type_err(
            format!("unhashable type: `{}`", type_name(key)),
            span,
        ));
    }
    for (i, (k, _)) in d.borrow().iter().enumerate() {
        if py_eq(k, key, span)? {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

fn dict_set<'a>(d: &DictRef<'a>, key: V<'a>, v: V<'a>, span: Span) -> Result<()> {
    match dict_pos(d, &key, span)? {
        Some(i) => d.borrow_mut()[i].1 = v,
        None => d.borrow_mut().push((key, v)),
    }
    Ok(())
}

fn index(key: &V, len: usize, span: Span) -> Result<usize> {
    let i = int_of(key, span)?;
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(err(
            ErrorKind::Runtime,
            format!("index {i} is out of range (length {len})"),
            span,
        ));
    }
    Ok(j as usize)
}

fn slice<'a>(
    base: &V<'a>,
    lo: Option<i64>,
    hi: Option<i64>,
    step: Option<i64>,
    span: Span,
) -> Result<V<'a>> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(err(ErrorKind::Runtime, "slice step cannot be zero", span));
    }
    let pick = |len: usize| -> Vec<usize> {
        let len = len as i64;
        let clamp = |x: i64, lo: i64, hi: i64| x.max(lo).min(hi);
        let norm = |x: i64| if x < 0 { x + len } else { x };
        let (start, stop) = if step > 0 {
            (
                lo.map_or(0, |x| clamp(norm(x), 0, len)),
                hi.map_or(len, |x| clamp(norm(x), 0, len)),
            )
        } else {
            (
                lo.map_or(len - 1, |x| clamp(norm(x), -1, len - 1)),
                hi.map_or(-1, |x| clamp(norm(x), -1, len - 1)),
            )
        };
        let mut out = vec![];
        let mut i = start;
        while (step > 0 && i < stop) || (step < 0 && i > stop) {
            out.push(i as usize);
            i += step;
        }
        out
    };
    Ok(match base {
        V::List(l) => {
            let l = l.borrow();
            V::list(pick(l.len()).into_iter().map(|i| l[i].clone()).collect())
        }
        V::Tuple(t) => V::tuple(pick(t.len()).into_iter().map(|i| t[i].clone()).collect()),
        V::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            V::Str(
                pick(chars.len())
                    .into_iter()
                    .map(|i| chars[i])
                    .collect::<String>()
                    .into(),
            )
        }
        other => {
            return Err(type_err(
                format!("{} cannot be sliced", describe(other)),
                span,
            ))
        }
    })
}

fn seq_search<'a>(name: &str, items: &[V<'a>], x: &V<'a>, span: Span) -> Result<V<'a>> {
    let mut count = 0;
    for (i, y) in items.iter().enumerate() {
        if py_eq(x, y, span)? {
            if name != "count" {
                return Ok(V::Int(i as i64));
            }
            count += 1;
        }
    }
    if name == "count" {
        return Ok(V::Int(count));
    }
    Err(err(
        ErrorKind::Runtime,
        format!("{} is not in the sequence", py_repr(x)),
        span,
    ))
}

fn py_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{f:?}")
    }
}

fn py_str(v: &V) -> String {
    match v {
        V::Str(s) => s.to_string(),
        other => py_repr(other),
    }
}

fn py_repr(v: &V) -> String {
    let join = |items: &[V]| items.iter().map(py_repr).collect::<Vec<_>>().join(", ");
    match v {
        V::None => "None".into(),
        V::Bool(b) => if *b { "True" } else { "False" }.into(),
        V::Int(i) => i.to_string(),
        V::Float(f) => py_float(*f),
        V::Str(s) => format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'")),
        V::List(l) => format!("[{}]", join(&l.borrow())),
        V::Tuple(t) if t.len() == 1 => format!("({},)", py_repr(&t[0])),
        V::Tuple(t) => format!("({})", join(t)),
        V::Dict(d) => format!(
            "{{{}}}",
            d.borrow()
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        V::Range(a, b, 1) => format!("range({a}, {b})"),
        V::Range(a, b, s) => format!("range({a}, {b}, {s})"),
        V::DType(d, Flavor::Torch) => format!("torch.{}", torch_name(*d)),
        V::DType(d, Flavor::Triton) => tl_str(*d).into(),
        V::Config(c) => {
            let c = c.borrow();
            let mut parts = vec![];
            if let V::Dict(d) = &c.kwargs {
                for (k, v) in d.borrow().iter() {
                    parts.push(format!("{}: {}", py_str(k), py_str(v)));
                }
            }
            parts.push(format!("num_warps: {}", c.num_warps.unwrap_or(4)));
            parts.push("num_ctas: 1".into());
            parts.push(format!("num_stages: {}", c.num_stages.unwrap_or(3)));
            parts.push("maxnreg: None".into());
            parts.join(", ")
        }
        other => format!("<{}>", describe(other)),
    }
}

/// Names a top-level statement binds or may mutate: when it fails, they are marked.
#[derive(Default)]
struct Touched {
    /// Assigned, deleted, defined or imported.
    bound: Vec<String>,
    /// The receiver of a method call or of an item or attribute store, or passed by
    /// name to a call: marked only where their value is mutable (a list, dict, config).
    mutated: Vec<String>,
}

impl Touched {
    fn block(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::FunctionDef(d) => self.bound.push(d.name.to_string()),
            Stmt::AsyncFunctionDef(d) => self.bound.push(d.name.to_string()),
            Stmt::ClassDef(c) => self.bound.push(c.name.to_string()),
            Stmt::Assign(a) => {
                for t in &a.targets {
                    self.target(t);
                }
                self.expr(&a.value);
            }
            Stmt::AnnAssign(a) => {
                self.target(&a.target);
                if let Some(v) = &a.value {
                    self.expr(v);
                }
            }
            Stmt::AugAssign(a) => {
                self.target(&a.target);
                self.expr(&a.value);
            }
            Stmt::For(f) => {
                self.target(&f.target);
                self.expr(&f.iter);
                self.block(&f.body);
                self.block(&f.orelse);
            }
            Stmt::While(w) => {
                self.expr(&w.test);
                self.block(&w.body);
                self.block(&w.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                self.block(&i.body);
                self.block(&i.orelse);
            }
            Stmt::With(w) => {
                for item in &w.items {
                    self.expr(&item.context_expr);
                    if let Some(t) = &item.optional_vars {
                        self.target(t);
                    }
                }
                self.block(&w.body);
            }
            Stmt::Try(t) => {
                self.block(&t.body);
                for h in &t.handlers {
                    let ast::ExceptHandler::ExceptHandler(h) = h;
                    if let Some(n) = &h.name {
                        self.bound.push(n.to_string());
                    }
                    self.block(&h.body);
                }
                self.block(&t.orelse);
                self.block(&t.finalbody);
            }
            Stmt::Expr(e) => self.expr(&e.value),
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.target(t);
                }
            }
            Stmt::Import(i) => {
                for a in &i.names {
                    let n = a.asname.as_ref().unwrap_or(&a.name);
                    self.bound
                        .push(n.as_str().split('.').next().unwrap_or("").to_string());
                }
            }
            Stmt::ImportFrom(i) => {
                for a in &i.names {
                    self.bound
                        .push(a.asname.as_ref().unwrap_or(&a.name).to_string());
                }
            }
            Stmt::Return(r) => {
                if let Some(v) = &r.value {
                    self.expr(v);
                }
            }
            Stmt::Assert(a) => self.expr(&a.test),
            _ => {}
        }
    }

    fn target(&mut self, e: &Expr) {
        match e {
            Expr::Name(n) => self.bound.push(n.id.to_string()),
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.target(x)),
            Expr::List(l) => l.elts.iter().for_each(|x| self.target(x)),
            Expr::Starred(s) => self.target(&s.value),
            Expr::Subscript(s) => {
                self.base(&s.value);
                self.expr(&s.slice);
            }
            Expr::Attribute(a) => self.base(&a.value),
            _ => {}
        }
    }

    fn base(&mut self, e: &Expr) {
        match e {
            Expr::Name(n) => self.mutated.push(n.id.to_string()),
            Expr::Subscript(s) => self.base(&s.value),
            Expr::Attribute(a) => self.base(&a.value),
            other => self.expr(other),
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Call(c) => {
                if let Expr::Attribute(a) = &*c.func {
                    self.base(&a.value);
                } else {
                    self.expr(&c.func);
                }
                for a in &c.args {
                    match a {
                        Expr::Name(n) => self.mutated.push(n.id.to_string()),
                        other => self.expr(other),
                    }
                }
                for k in &c.keywords {
                    match &k.value {
                        Expr::Name(n) => self.mutated.push(n.id.to_string()),
                        other => self.expr(other),
                    }
                }
            }
            Expr::NamedExpr(n) => {
                self.target(&n.target);
                self.expr(&n.value);
            }
            Expr::BoolOp(b) => b.values.iter().for_each(|x| self.expr(x)),
            Expr::BinOp(b) => {
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::UnaryOp(u) => self.expr(&u.operand),
            Expr::IfExp(i) => {
                self.expr(&i.test);
                self.expr(&i.body);
                self.expr(&i.orelse);
            }
            Expr::Compare(c) => {
                self.expr(&c.left);
                c.comparators.iter().for_each(|x| self.expr(x));
            }
            Expr::List(l) => l.elts.iter().for_each(|x| self.expr(x)),
            Expr::Tuple(t) => t.elts.iter().for_each(|x| self.expr(x)),
            Expr::Dict(d) => {
                d.keys.iter().flatten().for_each(|x| self.expr(x));
                d.values.iter().for_each(|x| self.expr(x));
            }
            Expr::ListComp(c) => {
                self.expr(&c.elt);
                self.gens(&c.generators);
            }
            Expr::GeneratorExp(g) => {
                self.expr(&g.elt);
                self.gens(&g.generators);
            }
            Expr::DictComp(d) => {
                self.expr(&d.key);
                self.expr(&d.value);
                self.gens(&d.generators);
            }
            Expr::Subscript(s) => {
                self.expr(&s.value);
                self.expr(&s.slice);
            }
            Expr::Attribute(a) => self.expr(&a.value),
            Expr::Starred(s) => self.expr(&s.value),
            Expr::JoinedStr(j) => j.values.iter().for_each(|x| self.expr(x)),
            Expr::FormattedValue(f) => self.expr(&f.value),
            _ => {}
        }
    }

    fn gens(&mut self, gens: &[ast::Comprehension]) {
        for g in gens {
            self.expr(&g.iter);
            g.ifs.iter().for_each(|x| self.expr(x));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda() -> HostTarget {
        HostTarget::cuda(90)
    }

    fn hip() -> HostTarget {
        HostTarget {
            backend: "hip".into(),
            arch: 942,
            warp_size: 64,
        }
    }

    fn decl(src: &str, kernel: &str, target: &HostTarget) -> Result<Option<AutotuneDecl>> {
        Module::parse("t.py", src)?.autotune(kernel, target)
    }

    fn ok(src: &str, kernel: &str, target: &HostTarget) -> AutotuneDecl {
        match decl(src, kernel, target) {
            Ok(Some(d)) => d,
            Ok(None) => panic!("no autotune decorator"),
            Err(e) => panic!("{e}"),
        }
    }

    fn fail(src: &str, kernel: &str) -> Diagnostic {
        match decl(src, kernel, &cuda()) {
            Err(e) => e,
            Ok(d) => panic!("expected an error, got {d:?}"),
        }
    }

    fn cfg(kv: &[(&str, ConstValue)], warps: Option<u32>, stages: Option<u32>) -> TuneConfig {
        TuneConfig {
            constexprs: kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            num_warps: warps,
            num_stages: stages,
        }
    }

    fn i(v: i64) -> ConstValue {
        ConstValue::Int(v)
    }

    /// `(BLOCK_M, BLOCK_N)` configs with warps and stages.
    fn mn(items: &[(i64, i64, u32, u32)]) -> Vec<TuneConfig> {
        items
            .iter()
            .map(|&(m, n, w, s)| cfg(&[("BM", i(m)), ("BN", i(n))], Some(w), Some(s)))
            .collect()
    }

    const KERNEL: &str = "
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";

    #[test]
    fn literal_list_of_configs() {
        let src = "import triton
import triton.language as tl

@triton.autotune(
    configs=[
        triton.Config({'BLOCK': 128}, num_warps=4),
        triton.Config({'BLOCK': 256, 'EVEN': True, 'SCALE': 0.5, 'T': (1, 'x')}, num_warps=8, num_stages=2),
        triton.Config(kwargs={'BLOCK': 64, 'DT': tl.float16, 'S': None}, num_stages=1, num_ctas=1),
    ],
    key=['n'],
)
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False, SCALE=1.0, T=None, DT=None, S=0):
    pass
";
        let d = ok(src, "k", &cuda());
        assert_eq!(
            d.configs,
            vec![
                cfg(&[("BLOCK", i(128))], Some(4), None),
                cfg(
                    &[
                        ("BLOCK", i(256)),
                        ("EVEN", ConstValue::Bool(true)),
                        ("SCALE", ConstValue::Float(0.5)),
                        (
                            "T",
                            ConstValue::Tuple(vec![i(1), ConstValue::Str("x".into())])
                        ),
                    ],
                    Some(8),
                    Some(2)
                ),
                cfg(
                    &[
                        ("BLOCK", i(64)),
                        ("DT", ConstValue::DType(DType::F16)),
                        ("S", ConstValue::None)
                    ],
                    None,
                    Some(1)
                ),
            ]
        );
        assert_eq!(d.key, ["n"]);
        assert!(d.reset_to_zero.is_empty() && d.restore_value.is_empty());
        assert_eq!((d.prune.clone(), d.warmup_ms, d.rep_ms), (None, None, None));
        let m = Module::parse("t.py", src).unwrap();
        assert_eq!(m.source().line_col(d.span.start).0, 4);
        // A kernel without the decorator has no declaration; an unknown one is an error.
        let plain = format!("import triton\nimport triton.language as tl\n{KERNEL}");
        assert_eq!(decl(&plain, "k", &cuda()).unwrap(), None);
        assert_eq!(
            decl(&plain, "nope", &cuda()).unwrap_err().kind,
            ErrorKind::Name
        );
    }

    #[test]
    fn config_imported_by_name_positional_dict_and_options() {
        let src = "import triton
import triton.language as tl
from triton import Config, autotune as tune

@tune([Config({'BM': 32, 'BN': 64}, 2, 5), Config(kwargs=dict(BM=64, BN=64), num_warps=4)],
      ['M', 'N'], reset_to_zero=['b_ptr'], restore_value=('a_ptr',), warmup=5, rep=20.5,
      pre_hook=None, use_cuda_graph=False)
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";
        let d = ok(src, "k", &cuda());
        assert_eq!(
            d.configs,
            mn(&[(32, 64, 2, 5)])
                .into_iter()
                .chain([cfg(&[("BM", i(64)), ("BN", i(64))], Some(4), None)])
                .collect::<Vec<_>>()
        );
        assert_eq!(d.key, ["M", "N"]);
        assert_eq!(d.reset_to_zero, ["b_ptr"]);
        assert_eq!(d.restore_value, ["a_ptr"]);
        assert_eq!((d.warmup_ms, d.rep_ms), (Some(5.0), Some(20.5)));
    }

    #[test]
    fn empty_configs_is_tritons_default() {
        let src = format!(
            "import triton\nimport triton.language as tl\n@triton.autotune(configs=[], key=[])\n{}",
            KERNEL.trim_start()
        );
        let d = ok(&src, "k", &cuda());
        assert_eq!(d.configs, vec![cfg(&[], Some(4), Some(3))]);
    }

    #[test]
    fn comprehension_with_nested_for_and_if() {
        let src = format!(
            "import triton
import triton.language as tl

SIZES = [32, 64, 128]
STAGES = (3, 4)

@triton.autotune(
    configs=[
        triton.Config({{'BM': bm, 'BN': bn}}, num_warps=w, num_stages=s)
        for bm in SIZES
        for bn in SIZES[1:]
        if bm * bn <= 64 * 64 and not bm == 64
        for s, w in zip(STAGES, [4, 8])
    ],
    key=['M', 'N', 'K'],
){KERNEL}"
        );
        let d = ok(&src, "k", &cuda());
        assert_eq!(
            d.configs,
            mn(&[
                (32, 64, 4, 3),
                (32, 64, 8, 4),
                (32, 128, 4, 3),
                (32, 128, 8, 4),
            ])
        );
    }

    #[test]
    fn helper_functions_branch_on_the_target() {
        let src = format!(
            "import triton
import triton.language as tl
import itertools


def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == \"cuda\"


def arch():
    return triton.runtime.driver.active.get_current_target().arch


def cuda_configs():
    configs = []
    for bm, bn in itertools.product([64, 128], [64]):
        stages = 4 if arch() >= 90 else 3
        configs.append(triton.Config({{'BM': bm, 'BN': bn}}, num_warps=8 if bm == 128 else 4, num_stages=stages))
    configs += [triton.Config({{'BM': 16, 'BN': 16}}, num_warps=1, num_stages=1)]
    return configs


def hip_configs():
    out = []
    for i in range(2):
        size = triton.next_power_of_2(33 + i * 40)
        out.extend([triton.Config({{'BM': size, 'BN': triton.cdiv(size, 2)}}, num_warps=2, num_stages=2)])
    return out


def get_autotune_config():
    if is_cuda():
        return cuda_configs()
    elif triton.runtime.driver.active.get_current_target().backend == 'hip':
        return hip_configs()
    else:
        return []


@triton.autotune(configs=get_autotune_config(), key=['M'])
{}",
            KERNEL.trim_start()
        );
        assert_eq!(
            ok(&src, "k", &cuda()).configs,
            mn(&[(64, 64, 4, 4), (128, 64, 8, 4), (16, 16, 1, 1)])
        );
        assert_eq!(
            ok(&src, "k", &HostTarget::cuda(80)).configs,
            mn(&[(64, 64, 4, 3), (128, 64, 8, 3), (16, 16, 1, 1)])
        );
        assert_eq!(
            ok(&src, "k", &hip()).configs,
            mn(&[(64, 32, 2, 2), (128, 64, 2, 2)])
        );
        let other = HostTarget {
            backend: "cpu".into(),
            arch: 0,
            warp_size: 1,
        };
        assert_eq!(
            ok(&src, "k", &other).configs,
            vec![cfg(&[], Some(4), Some(3))]
        );
    }

    #[test]
    fn module_level_code_runs_in_order() {
        // Top-level `if`, a mutation through a method, a global rebound after the kernel,
        // host code that cannot be evaluated (and is not needed), a `__main__` block.
        let src = format!(
            "import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
x = torch.rand(4, device=DEVICE)
torch.manual_seed(0)

if triton.runtime.driver.active.get_current_target().backend == 'hip':
    STAGES = [1]
elif triton.runtime.driver.active.get_current_target().arch >= 90:
    STAGES = [3, 4]
else:
    STAGES = [2]

CONFIGS = [triton.Config({{'BM': 64, 'BN': 64}}, num_warps=4, num_stages=s) for s in STAGES]
CONFIGS.append(triton.Config({{'BM': 128, 'BN': 32}}, num_warps=8, num_stages=STAGES[-1]))

@triton.autotune(configs=CONFIGS, key=['M']){KERNEL}
CONFIGS = []

@triton.autotune(configs=CONFIGS, key=['M'])
@triton.jit
def k2(M, BM: tl.constexpr = 1):
    pass

if __name__ == '__main__':
    torch.cuda.synchronize()
"
        );
        assert_eq!(
            ok(&src, "k", &cuda()).configs,
            mn(&[(64, 64, 4, 3), (64, 64, 4, 4), (128, 32, 8, 4)])
        );
        assert_eq!(
            ok(&src, "k", &HostTarget::cuda(80)).configs,
            mn(&[(64, 64, 4, 2), (128, 32, 8, 2)])
        );
        assert_eq!(
            ok(&src, "k2", &cuda()).configs,
            vec![cfg(&[], Some(4), Some(3))]
        );
    }

    #[test]
    fn a_global_set_by_code_that_cannot_run_reports_that_code() {
        let src = format!(
            "import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({{'BM': 64, 'BN': 64}})]
if torch.cuda.get_device_capability()[0] >= 9:
    CONFIGS.append(triton.Config({{'BM': 128, 'BN': 64}}))

@triton.autotune(configs=CONFIGS, key=['M']){KERNEL}"
        );
        let e = fail(&src, "k");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert_eq!(e.line(), Some(6));
        assert!(
            e.message.contains("torch.cuda.get_device_capability"),
            "{e}"
        );
        let r = e.render();
        assert!(r.contains("`CONFIGS` is used here"), "{r}");
        assert!(r.contains("could not be evaluated"), "{r}");
    }

    #[test]
    fn heuristics_next_to_autotune() {
        let src = "import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({'BLOCK': 32})], key=['n'])
@triton.heuristics(values={'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})
@triton.jit
def k(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass

@triton.heuristics({'BLOCK': lambda args: 64})
@triton.jit
def plain(x, BLOCK: tl.constexpr):
    pass
";
        assert_eq!(
            ok(src, "k", &cuda()).configs,
            vec![cfg(&[("BLOCK", i(32))], None, None)]
        );
        assert_eq!(decl(src, "plain", &cuda()).unwrap(), None);
    }

    const PRUNED: &str = "import torch
import triton
import triton.language as tl


def smem_ok(conf, named_args):
    size = named_args['a_ptr'].element_size()
    return (conf.kwargs['BM'] + conf.kwargs['BN']) * conf.num_stages * size * 64 <= 64 * 1024


def prune(configs, named_args, **kwargs):
    M = named_args['M']
    pruned = [c for c in configs if c.kwargs.get('BM', 0) <= max(M, 16) and smem_ok(c, named_args)]
    if named_args['a_ptr'].dtype == torch.float32:
        pruned = [c for c in pruned if c.num_warps == 4]
    if kwargs.get('SMALL', False):
        pruned = pruned[:1]
    return sorted(pruned, key=lambda c: -c.kwargs['BN'])


CONFIGS = [
    triton.Config({'BM': bm, 'BN': bn}, num_warps=w, num_stages=s)
    for bm in [16, 64, 128] for bn in [32, 128] for (w, s) in [(4, 2), (8, 3)]
]


@triton.autotune(configs=CONFIGS, key=['M', 'N'],
                 prune_configs_by={'early_config_prune': prune, 'top_k': 2})
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";

    #[test]
    fn prune_function_sees_named_args_and_kwargs() {
        let m = Module::parse("t.py", PRUNED).unwrap();
        let d = m.autotune("k", &cuda()).unwrap().unwrap();
        assert_eq!(d.configs.len(), 12);
        let p = d.prune.as_ref().unwrap();
        assert_eq!(p.top_k, Some(i(2)));
        let f = p.early_config_prune.as_ref().unwrap();
        assert_eq!(f.name, "prune");
        assert_eq!(m.source().line_col(f.span.start).0, 11);
        let tensor = |dtype| HostArg::Tensor { dtype, numel: 1024 };
        let args = |m: i64, dtype| {
            vec![
                ("a_ptr".to_string(), tensor(dtype)),
                ("b_ptr".to_string(), tensor(dtype)),
                ("M".to_string(), HostArg::Int(m)),
                ("N".to_string(), HostArg::Int(256)),
                ("K".to_string(), HostArg::Int(64)),
            ]
        };
        // fp16, M = 64: BM <= 64 and (BM + BN) * stages * 2 * 64 <= 64 KiB; sorted by BN
        // descending, stable.
        let kept = d
            .prune(&m, &d.configs, &args(64, DType::F16), &[], &cuda())
            .unwrap();
        assert_eq!(
            kept,
            mn(&[
                (16, 128, 4, 2),
                (16, 128, 8, 3),
                (64, 128, 4, 2),
                (16, 32, 4, 2),
                (16, 32, 8, 3),
                (64, 32, 4, 2),
                (64, 32, 8, 3),
            ])
        );
        // fp32 keeps 4 warps only (and halves the shared-memory budget); M = 8 -> BM 16.
        let kept = d
            .prune(&m, &d.configs, &args(8, DType::F32), &[], &cuda())
            .unwrap();
        assert_eq!(kept, mn(&[(16, 32, 4, 2)]));
        // Keyword arguments reach `**kwargs`.
        let small = [("SMALL".to_string(), HostArg::Bool(true))];
        let kept = d
            .prune(&m, &d.configs, &args(64, DType::F16), &small, &cuda())
            .unwrap();
        assert_eq!(kept, mn(&[(16, 32, 4, 2)]));
        // One config is not pruned.
        let one = &d.configs[11..];
        assert_eq!(
            d.prune(&m, one, &args(8, DType::F16), &[], &cuda())
                .unwrap(),
            one
        );
        // Pruning everything away is an error at the prune function.
        let e = d
            .prune(&m, &d.configs[8..], &args(8, DType::F16), &[], &cuda())
            .unwrap_err();
        assert_eq!((e.kind, e.line()), (ErrorKind::Runtime, Some(11)));
    }

    #[test]
    fn prune_with_a_lambda_and_tl_dtype_misuse() {
        let src = format!(
            "import triton
import triton.language as tl

@triton.autotune(
    configs=[triton.Config({{'BM': 16, 'BN': 16}}), triton.Config({{'BM': 32, 'BN': 16}})],
    key=['M'],
    prune_configs_by={{'early_config_prune': lambda cs, nargs, **kw: [c for c in cs if c.kwargs['BM'] >= nargs['M']]}},
){KERNEL}
def bad(configs, named_args, **kwargs):
    return [c for c in configs if named_args['a_ptr'].dtype == tl.float16]

@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}}), triton.Config({{'BM': 32, 'BN': 16}})],
                 key=['M'], prune_configs_by={{'early_config_prune': bad}})
@triton.jit
def k2(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
"
        );
        let m = Module::parse("t.py", &src).unwrap();
        let d = m.autotune("k", &cuda()).unwrap().unwrap();
        let nargs = [("M".to_string(), HostArg::Int(20))];
        let kept = d.prune(&m, &d.configs, &nargs, &[], &cuda()).unwrap();
        assert_eq!(kept, vec![cfg(&[("BM", i(32)), ("BN", i(16))], None, None)]);
        let d2 = m.autotune("k2", &cuda()).unwrap().unwrap();
        let nargs = [(
            "a_ptr".to_string(),
            HostArg::Tensor {
                dtype: DType::F16,
                numel: 4,
            },
        )];
        let e = d2.prune(&m, &d2.configs, &nargs, &[], &cuda()).unwrap_err();
        assert_eq!((e.kind, e.line()), (ErrorKind::Type, Some(14)));
        assert!(e.message.contains("torch dtype"), "{e}");
    }

    #[test]
    fn perf_model_is_refused() {
        let src = format!(
            "import triton
import triton.language as tl

def model(**kw):
    return 1.0

@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}})], key=['M'],
                 prune_configs_by={{'perf_model': model, 'top_k': 10}}){KERNEL}"
        );
        let e = fail(&src, "k");
        assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(8)));
        assert!(e.message.contains("perf_model"), "{e}");
    }

    #[test]
    fn unknown_and_unsupported_keywords_are_named() {
        let head = "import triton\nimport triton.language as tl\n\ndef hook(nargs):\n    pass\n\n";
        let cases = [
            (
                "@triton.autotune(configs=[], key=['M'], pre_hook=hook)",
                "pre_hook",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[], key=['M'], do_bench=hook)",
                "do_bench",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[], key=['M'], use_cuda_graph=True)",
                "use_cuda_graph",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[], key=['M'], keys=['N'])",
                "keys",
                ErrorKind::Argument,
            ),
            (
                "@triton.autotune(configs=[triton.Config({'BM': 1}, maxnreg=128)], key=['M'])",
                "maxnreg",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[triton.Config({'BM': 1}, num_ctas=2)], key=['M'])",
                "num_ctas",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[triton.Config({'BM': 1}, pre_hook=hook)], key=['M'])",
                "pre_hook",
                ErrorKind::Unsupported,
            ),
            (
                "@triton.autotune(configs=[triton.Config({'BM': 1}, num_warp=4)], key=['M'])",
                "num_warp",
                ErrorKind::Argument,
            ),
            (
                "@triton.autotune(configs=[], key=['M'], prune_configs_by={'early_prune': hook})",
                "early_prune",
                ErrorKind::Argument,
            ),
        ];
        for (dec, word, kind) in cases {
            let src = format!("{head}{dec}{KERNEL}");
            let e = fail(&src, "k");
            assert_eq!((e.kind, e.line()), (kind, Some(7)), "{e}");
            assert!(e.message.contains(word), "{e}");
        }
    }

    #[test]
    fn names_must_be_kernel_parameters() {
        let e = fail(
            &format!("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[],\n    key=['M',\n         'Q'])\n{}", KERNEL.trim_start()),
            "k",
        );
        assert_eq!((e.kind, e.line_col()), (ErrorKind::Name, Some((6, 10))));
        assert!(e.message.contains("`Q`"), "{e}");
        assert!(
            e.render()
                .contains("parameters of `k` are: a_ptr, b_ptr, M"),
            "{e}"
        );
        let e = fail(
            &format!("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[], key=[], reset_to_zero=['c_ptr']){KERNEL}"),
            "k",
        );
        assert_eq!((e.kind, e.line()), (ErrorKind::Name, Some(4)));
        let e = fail(
            &format!("import triton\nimport triton.language as tl\n\ndef cfgs():\n    return [\n        triton.Config({{'BM': 1, 'BLOCK_K': 2}})]\n\n@triton.autotune(configs=cfgs(), key=[]){KERNEL}"),
            "k",
        );
        assert_eq!((e.kind, e.line()), (ErrorKind::Name, Some(6)));
        assert!(e.message.contains("`BLOCK_K`"), "{e}");
        let e = fail(
            &format!("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[]){KERNEL}"),
            "k",
        );
        assert_eq!((e.kind, e.line()), (ErrorKind::Argument, Some(4)));
    }

    #[test]
    fn unsupported_calls_point_at_the_call() {
        let src = format!(
            "import torch
import triton
import triton.language as tl


def stages():
    major, minor = torch.cuda.get_device_capability()
    return 4 if major >= 9 else 3


@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}}, num_stages=stages())], key=['M']){KERNEL}"
        );
        let e = fail(&src, "k");
        assert_eq!(
            (e.kind, e.line_col()),
            (ErrorKind::Unsupported, Some((7, 20)))
        );
        assert!(
            e.message
                .contains("`torch.cuda.get_device_capability(...)`"),
            "{e}"
        );
        assert!(e
            .render()
            .contains("while evaluating the `@triton.autotune` decorator of `k`"));
        // Iterating over something unknown, an undefined name, a class.
        let cases = [
            ("for x in torch.cuda:\n        pass", ErrorKind::Type),
            ("return undefined_name", ErrorKind::Name),
            ("class C:\n        pass", ErrorKind::Unsupported),
            ("return hasattr(triton, 'x')", ErrorKind::Unsupported),
        ];
        for (body, kind) in cases {
            let src = format!("import torch\nimport triton\nimport triton.language as tl\n\ndef f():\n    {body}\n    return []\n\n@triton.autotune(configs=f(), key=[]){KERNEL}");
            let e = fail(&src, "k");
            assert_eq!((e.kind, e.line()), (kind, Some(6)), "{e}");
        }
    }

    #[test]
    fn endless_loops_and_recursion_are_bounded() {
        let head = "import triton\nimport triton.language as tl\n\n";
        let src = format!("{head}def f():\n    n = 0\n    while True:\n        n += 1\n\n@triton.autotune(configs=f(), key=[]){KERNEL}");
        let e = fail(&src, "k");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.message.contains("steps"), "{e}");
        let src = format!("{head}def f(n):\n    return f(n + 1)\n\n@triton.autotune(configs=f(0), key=[]){KERNEL}");
        let e = fail(&src, "k");
        assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(5)));
        assert!(e.message.contains("levels deep"), "{e}");
        let src = format!("{head}@triton.autotune(configs=[0] * (1 << 40), key=[]){KERNEL}");
        let e = fail(&src, "k");
        assert!(e.message.contains("steps"), "{e}");
        let src = format!("{head}@triton.autotune(configs=[], key=[], warmup=2 ** 70){KERNEL}");
        assert!(fail(&src, "k").message.contains("overflow"));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let head = "import triton\nimport triton.language as tl\n\n";
        let deep = format!("{}0{}", "[".repeat(190), "]".repeat(190));
        let long = vec!["1"; 900].join(" + ");
        for e in [deep, long] {
            let src = format!("{head}@triton.autotune(configs=[], key=[], warmup={e}){KERNEL}");
            let d = fail(&src, "k");
            assert_eq!((d.kind, d.line()), (ErrorKind::Unsupported, Some(4)), "{d}");
            assert!(d.message.contains("levels deep"), "{d}");
        }
    }

    #[test]
    fn autotune_below_jit_is_an_error() {
        let src = "import triton\nimport triton.language as tl\n\n@triton.jit\n@triton.autotune(configs=[], key=[])\ndef k(x):\n    pass\n";
        let e = fail(src, "k");
        assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(5)));
    }

    #[test]
    fn python_semantics() {
        // Values the evaluator computes, checked through a config's dict.
        let exprs = [
            ("7 // -2", i(-4)),
            ("-7 % 3", i(2)),
            ("7 / 2", ConstValue::Float(3.5)),
            (
                "2 ** 10 + (1 << 4) - (256 >> 2) + (6 & 3) + (4 | 1) + (6 ^ 3)",
                i(1024 + 16 - 64 + 2 + 5 + 5),
            ),
            ("1 < 2 <= 2 < 3", ConstValue::Bool(true)),
            ("1 < 2 > 3", ConstValue::Bool(false)),
            ("0 or 'x'", ConstValue::Str("x".into())),
            (
                "3 in range(0, 10, 3) and 4 not in [1, 2]",
                ConstValue::Bool(true),
            ),
            ("len({'a': 1, 'b': 2}) + len('abc') + len(range(5))", i(10)),
            ("min(3, 1, 2) * 100 + max([4, 9, 2])", i(109)),
            ("sorted([3, 1, 2], reverse=True)[0]", i(3)),
            (
                "tuple(sorted({'b': 1, 'a': 2}.items()))",
                ConstValue::Tuple(vec![
                    ConstValue::Tuple(vec![ConstValue::Str("a".into()), i(2)]),
                    ConstValue::Tuple(vec![ConstValue::Str("b".into()), i(1)]),
                ]),
            ),
            ("triton.next_power_of_2(100) + triton.cdiv(10, 4)", i(131)),
            ("int(2.9) + int('7') + round(2.5) + abs(-3)", i(14)),
            (
                "sum(x * y for x, y in enumerate([5, 6, 7], start=1))",
                i(5 + 12 + 21),
            ),
            ("{'a': 1}.get('b', 5)", i(5)),
            (
                "'a' if [] else ('b' if (0,) else 'c')",
                ConstValue::Str("b".into()),
            ),
            ("f'{1 + 1}x{SIZES}'", ConstValue::Str("2x[1, 2]".into())),
            (
                "tuple(SIZES[::-1]) + (None,)",
                ConstValue::Tuple(vec![i(2), i(1), ConstValue::None]),
            ),
            (
                "all([1, True]) and not any([0, ''])",
                ConstValue::Bool(true),
            ),
            (
                "math.ceil(2.1) + math.floor(-0.5) + int(math.log2(8))",
                i(5),
            ),
            ("len(list(itertools.product([1, 2], repeat=3)))", i(8)),
            (
                "torch.float16 == torch.half and tl.float32 != tl.float16",
                ConstValue::Bool(true),
            ),
            (
                "str(torch.bfloat16) + str(tl.bfloat16)",
                ConstValue::Str("torch.bfloat16bf16".into()),
            ),
            ("triton.Config({'A': 1}).all_kwargs()['num_stages']", i(3)),
            ("[x for x in range(3) if x != 1][-1]", i(2)),
            (
                "(lambda a, *rest, k=10, **kw: a + len(rest) + k + kw['z'])(1, 2, 3, z=100)",
                i(113),
            ),
        ];
        for (expr, want) in exprs {
            let src = format!(
                "import math\nimport itertools\nimport torch\nimport triton\nimport triton.language as tl\nSIZES = [1, 2]\n\n@triton.autotune(configs=[triton.Config({{'BM': {expr}}})], key=[])\n@triton.jit\ndef k(BM):\n    pass\n"
            );
            let d = ok(&src, "k", &cuda());
            assert_eq!(
                d.configs[0].constexprs,
                vec![("BM".to_string(), want)],
                "{expr}"
            );
        }
    }

    #[test]
    fn closures_globals_and_defaults() {
        let src = format!(
            "import triton
import triton.language as tl
import functools

COUNT = 0

def make(scale, stages=(2, 3)):
    def one(bm):
        global COUNT
        COUNT += 1
        return triton.Config({{'BM': bm * scale, 'BN': COUNT}}, num_stages=stages[COUNT % 2])
    return [one(b) for b in [8, 16]]

@functools.lru_cache(maxsize=None)
def cached():
    return make(2)

@triton.autotune(configs=cached(), key=[]){KERNEL}"
        );
        assert_eq!(
            ok(&src, "k", &cuda()).configs,
            vec![
                cfg(&[("BM", i(16)), ("BN", i(1))], None, Some(3)),
                cfg(&[("BM", i(32)), ("BN", i(2))], None, Some(2)),
            ]
        );
    }
}
