//! The Triton-dialect front end: parses Python source, finds jit functions, and traces
//! one of them into tile IR for a given specialization.
//!
//! - `parse`: the Python parser, jit-function discovery, imports and globals;
//! - `value`: trace-time values (constexprs and runtime IR values);
//! - `tracer`: the abstract interpreter's state, statements and jit-call inlining;
//! - `control`: `if` / `for` / `while`;
//! - `expr`: expressions and Python operators;
//! - `semantic`: Triton's typing rules (promotion, broadcasting, casts);
//! - `builtins`: the `tl` library and Python builtins (a table of builtins, by family);
//! - `descriptor`: tensor descriptors (host-side arguments and
//!   `tl.make_tensor_descriptor`), loaded and stored through block pointers;
//! - `join`: `tl.join`, `tl.split`, `tl.interleave` and `tl.cat`;
//! - `reduce`: reductions, scans and `tl.dot`;
//! - `random`: Philox random numbers (`tl.rand`, `tl.randint`, ...) and `tl.umulhi`;
//! - `autotune`: `@triton.autotune(...)` read by a host-side evaluator of configuration
//!   Python ([`Module::autotune`], [`AutotuneDecl::prune`]).
//!
//! [`Module::specialize`] binds launch arguments to parameters (constexprs are folded,
//! pointers and scalars become kernel parameters), traces the body, and verifies the
//! resulting kernel.

pub mod autotune;
mod builtins;
mod control;
mod descriptor;
mod expr;
mod join;
mod parse;
mod random;
mod reduce;
mod semantic;
mod tracer;
mod value;

pub use autotune::{AutotuneDecl, HostArg, HostFn, HostTarget, PreHookAction, PruneBy, TuneConfig};
pub use semantic::computation_type;

use crate::diag::{Diagnostic, ErrorKind, Result, SourceFile};
use crate::ir::{Kernel, KernelBuilder, Type};
use crate::launch::{ArgSpec, ConstValue, ScalarValue};
use parse::ParsedModule;
use std::sync::Arc;
use tracer::{err, Tracer};
use value::Val;

/// A parsed source file: its jit functions (the rest of the file is not traced; its
/// top-level statements are kept for the `@triton.autotune` evaluator).
pub struct Module {
    source: Arc<SourceFile>,
    parsed: ParsedModule,
}

/// One parameter of a jit function as declared.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    pub name: String,
    /// Annotated `tl.constexpr`.
    pub constexpr: bool,
    /// Has a default value in the signature.
    pub has_default: bool,
}

/// A jit function's signature.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub name: String,
    pub params: Vec<ParamInfo>,
}

/// A kernel traced for one specialization.
#[derive(Clone, Debug)]
pub struct Specialized {
    pub kernel: Kernel,
    /// For each parameter of `kernel`, the index of the runtime value that feeds it,
    /// counting the launch arguments' values in order (each [`ArgSpec`] feeds
    /// [`ArgSpec::parts`] of them: one, or a descriptor's buffer, shape and strides).
    pub arg_indices: Vec<usize>,
    /// Lines printed by `tl.static_print` while tracing.
    pub static_prints: Vec<String>,
}

impl Module {
    /// Parses `text` (named `name` in diagnostics).
    pub fn parse(name: &str, text: &str) -> Result<Module> {
        let parsed = parse::parse_module(name, text)?;
        Ok(Module {
            source: parsed.source.clone(),
            parsed,
        })
    }

    pub fn source(&self) -> &Arc<SourceFile> {
        &self.source
    }

    /// Names of the jit functions, in source order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.parsed.jit.iter().map(|f| f.name.clone()).collect()
    }

    fn no_such(&self, kernel: &str) -> Diagnostic {
        let mut d = Diagnostic::new(
            ErrorKind::Name,
            format!("no jit function `{kernel}` in {}", self.source.name),
        );
        let names = self.kernel_names();
        if !names.is_empty() {
            d = d.with_note(format!("jit functions here: {}", names.join(", ")));
        }
        d
    }

    /// The `@triton.autotune` decorator of jit function `kernel`, evaluated for `target`;
    /// `None` when it has none. See [the `autotune` module](crate::frontend::autotune) for
    /// what configuration code may do.
    pub fn autotune(&self, kernel: &str, target: &HostTarget) -> Result<Option<AutotuneDecl>> {
        autotune::declaration(self, kernel, target)
    }

    /// The signature of a jit function.
    pub fn signature(&self, kernel: &str) -> Result<Signature> {
        let Some(&i) = self.parsed.jit_index.get(kernel) else {
            return Err(self.no_such(kernel));
        };
        let f = &self.parsed.jit[i];
        Ok(Signature {
            name: f.name.clone(),
            params: f
                .params
                .iter()
                .map(|p| ParamInfo {
                    name: p.name.clone(),
                    constexpr: p.constexpr,
                    has_default: p.default.is_some(),
                })
                .collect(),
        })
    }

    /// Traces `kernel` for launch arguments `args` (positional, in order, skipping the
    /// parameters given in `constexprs`) and named constexpr values.
    pub fn specialize(
        &self,
        kernel: &str,
        args: &[ArgSpec],
        constexprs: &[(String, ConstValue)],
    ) -> Result<Specialized> {
        self.specialize_inner(kernel, args, constexprs)
            .map_err(|d| d.with_source(&self.source))
    }

    fn specialize_inner(
        &self,
        kernel: &str,
        args: &[ArgSpec],
        constexprs: &[(String, ConstValue)],
    ) -> Result<Specialized> {
        let Some(&fi) = self.parsed.jit_index.get(kernel) else {
            return Err(self.no_such(kernel));
        };
        let f = &self.parsed.jit[fi];
        let def = f.span;
        for (name, _) in constexprs {
            if !f.params.iter().any(|p| &p.name == name) {
                return Err(err(
                    ErrorKind::Argument,
                    format!("`{kernel}` has no parameter named `{name}` (given as a constexpr)"),
                    def,
                ));
            }
        }
        let builder = KernelBuilder::new(kernel, self.source.clone(), def);
        let mut t = Tracer::new(&self.parsed, builder);
        let mut env = tracer::Env::new();
        let mut arg_indices = vec![];
        let mut next = 0usize;
        // The index of the first runtime value of argument `next`.
        let mut flat = 0usize;
        for p in &f.params {
            if let Some((_, c)) = constexprs.iter().find(|(n, _)| n == &p.name) {
                env.insert(p.name.clone(), Val::from_const(c));
                continue;
            }
            if let Some(a) = args.get(next) {
                let idx = flat;
                flat += a.parts();
                next += 1;
                match a {
                    ArgSpec::Ptr { dtype, aligned16 } => {
                        if p.constexpr {
                            return Err(err(
                                ErrorKind::Argument,
                                format!("parameter `{}` is a tl.constexpr, but launch argument {idx} is a buffer", p.name),
                                p.span,
                            ));
                        }
                        let div = if *aligned16 {
                            (16 / dtype.size_bytes()).max(1) as u32
                        } else {
                            1
                        };
                        let v =
                            t.b.add_param(&p.name, Type::ptr(*dtype, vec![]), p.span, div);
                        env.insert(p.name.clone(), Val::T(v));
                        arg_indices.push(idx);
                    }
                    ArgSpec::Scalar(s) => {
                        // Integers equal to 1 are specialized as constants, as Triton
                        // does (strides of contiguous dimensions become known).
                        let one = matches!(s, ScalarValue::Int(d, 1) if !d.is_bool());
                        if p.constexpr || one {
                            env.insert(p.name.clone(), Val::from_scalar(s));
                            continue;
                        }
                        let div = match s {
                            ScalarValue::Int(d, v) if !d.is_bool() && v % 16 == 0 => 16,
                            _ => 1,
                        };
                        let v = t.b.add_param(&p.name, Type::scalar(s.dtype()), p.span, div);
                        env.insert(p.name.clone(), Val::T(v));
                        arg_indices.push(idx);
                    }
                    ArgSpec::Descriptor {
                        dtype,
                        aligned16,
                        shape,
                        strides,
                        block_shape,
                    } => {
                        if p.constexpr {
                            return Err(err(
                                ErrorKind::Argument,
                                format!("parameter `{}` is a tl.constexpr, but launch argument {} is a tensor descriptor", p.name, next - 1),
                                p.span,
                            ));
                        }
                        let div = if *aligned16 {
                            (16 / dtype.size_bytes()).max(1) as u32
                        } else {
                            1
                        };
                        let base =
                            t.b.add_param(&p.name, Type::ptr(*dtype, vec![]), p.span, div);
                        arg_indices.push(idx);
                        // Shape and strides: runtime i64 values, 1 folded to a constant as
                        // for integer scalars.
                        let it = ArgSpec::descriptor_index_dtype(shape, strides);
                        let mut dims = |values: &[i64], what: &str, first: usize| -> Vec<Val> {
                            values
                                .iter()
                                .enumerate()
                                .map(|(d, &v)| {
                                    if v == 1 {
                                        return Val::Int(1);
                                    }
                                    let div = if v % 16 == 0 { 16 } else { 1 };
                                    let name = format!("{}.{what}{d}", p.name);
                                    let x = t.b.add_param(&name, Type::scalar(it), p.span, div);
                                    arg_indices.push(first + d);
                                    Val::T(x)
                                })
                                .collect()
                        };
                        let rank = shape.len();
                        let shape_v = dims(shape, "shape", idx + 1);
                        let strides_v = dims(strides, "stride", idx + 1 + rank);
                        env.insert(
                            p.name.clone(),
                            Val::Desc(Box::new(value::Descriptor {
                                base: Val::T(base),
                                dtype: *dtype,
                                shape: shape_v,
                                strides: strides_v,
                                block_shape: block_shape.iter().map(|&b| b as i64).collect(),
                            })),
                        );
                    }
                }
                continue;
            }
            match &p.default {
                Some(d) => {
                    t.env.clear();
                    let v = t.eval(d)?;
                    env.insert(p.name.clone(), v);
                }
                None => {
                    return Err(err(
                        ErrorKind::Argument,
                        format!(
                            "missing launch argument for parameter `{}` of `{kernel}` ({} positional argument{} given)",
                            p.name,
                            args.len(),
                            if args.len() == 1 { "" } else { "s" }
                        ),
                        def,
                    ));
                }
            }
        }
        if next < args.len() {
            let expected = f
                .params
                .iter()
                .filter(|p| !constexprs.iter().any(|(n, _)| n == &p.name))
                .count();
            return Err(err(
                ErrorKind::Argument,
                format!(
                    "`{kernel}` takes {expected} positional launch argument{} but {} were given",
                    if expected == 1 { "" } else { "s" },
                    args.len()
                ),
                def,
            ));
        }
        t.env = env;
        t.exec_block(&f.def.body, true)?;
        if let Some(v) = t.env.get(tracer::RET) {
            if !matches!(v, Val::None) {
                return Err(err(ErrorKind::Unsupported, format!("the kernel `{kernel}` returns a value; a launched kernel must write its results to memory"), def));
            }
        }
        let prints = std::mem::take(&mut t.prints);
        let kernel = t.b.finish();
        crate::ir::verify::verify(&kernel)?;
        Ok(Specialized {
            kernel,
            arg_indices,
            static_prints: prints,
        })
    }
}
