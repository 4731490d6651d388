//! The functions a kernel can call by name: the `tl` library, Python's builtins
//! (`min`, `max`, `len`, `int`, `float`, ...) and `triton.cdiv` /
//! `triton.next_power_of_2`, with Triton's argument names and semantics.
//!
//! [`BUILTINS`] is the table: one [`Builtin`] per name as called (`tl.exp`, `abs`,
//! `triton.cdiv`), with Triton's parameter names where the arguments bind by name, and
//! the function that implements it. [`Tracer::call_builtin`] dispatches a call: first
//! to the families with a dispatch of their own (reductions, scans and `tl.dot` in
//! `reduce.rs`, random numbers in `random.rs`, tensor descriptors in `descriptor.rs`,
//! `tl.join` / `tl.split` / `tl.cat` in `join.rs`), then through the table. Adding a
//! builtin is one entry here and one function in its family's file:
//!
//! - `args`: argument binding ([`bind`]) and compile-time arguments (ints, dtypes,
//!   shapes, axes), shared by every builtin;
//! - `creation`: program ids, `tl.arange`, `tl.zeros` / `tl.full` and their `_like`
//!   forms, casts and type values (`tl.cast`, `tl.pointer_type`, `tl.constexpr`);
//! - `shape`: `tl.expand_dims`, `tl.broadcast*`, `tl.reshape`, `tl.trans` /
//!   `tl.permute`;
//! - `math`: elementwise math (`tl.exp`, ..., `tl.where`, `tl.minimum`, `tl.clamp`,
//!   `tl.fma`, `abs`, `cdiv`);
//! - `memory`: `tl.load` / `tl.store`, block pointers, atomics;
//! - `hints`: compiler hints (`tl.multiple_of`, ..., `tl.assume`, `tl.debug_barrier`);
//! - `debug`: `tl.static_assert`, `tl.static_print`, `tl.device_print`,
//!   `tl.device_assert`;
//! - `python`: Python's builtins and `triton.next_power_of_2`.

mod args;
mod creation;
mod debug;
mod hints;
mod math;
mod memory;
mod python;
mod shape;

pub use args::{bind, const_dtype, const_int, shape_arg, Bound};

use super::expr::{Args, Kwargs};
use super::tracer::{err, Tracer};
use super::value::Val;
use crate::diag::{ErrorKind, Result, Span};
use crate::ir::{AtomicOp, BinaryOp, HintKind, UnaryOp};

/// A builtin whose arguments are bound to its parameter names first. The [`Bound`]'s
/// `fname` is the builtin's name without `tl.` / `triton.` (as error messages spell
/// it) and its `span` the call's.
type BoundFn = fn(&mut Tracer<'_>, &Bound) -> Result<Val>;

/// A builtin that reads the call's arguments itself: varargs (`tl.reshape(x, 2, 8)`,
/// `min(a, b, c)`, `tl.device_print`), or a binding of its own.
type RawFn = fn(&mut Tracer<'_>, Call) -> Result<Val>;

/// A call's arguments as written, for a [`RawFn`].
pub struct Call {
    /// The name as called, which is the table entry's name.
    pub name: &'static str,
    pub args: Args,
    pub kwargs: Kwargs,
    pub span: Span,
}

impl Call {
    /// The name without `tl.` / `triton.`, as error messages spell it.
    pub fn short_name(&self) -> &'static str {
        short_name(self.name)
    }
}

/// One entry of [`BUILTINS`].
pub struct Builtin {
    /// The name as called: `tl.`-prefixed for the `tl` library, `triton.`-prefixed for
    /// `triton`'s functions, bare for Python's builtins.
    pub name: &'static str,
    pub implementation: Implementation,
}

/// How a builtin takes its arguments, and the function that implements it.
pub enum Implementation {
    /// Bound by position or keyword to Triton's parameter `names`; the first
    /// `required` are mandatory.
    Bound {
        names: &'static [&'static str],
        required: usize,
        run: BoundFn,
    },
    /// The arguments as written.
    Raw(RawFn),
}

/// A table entry whose arguments bind to `names` (the first `required` mandatory).
const fn bound(
    name: &'static str,
    names: &'static [&'static str],
    required: usize,
    run: BoundFn,
) -> Builtin {
    Builtin {
        name,
        implementation: Implementation::Bound {
            names,
            required,
            run,
        },
    }
}

/// A table entry that reads the call's arguments itself.
const fn raw(name: &'static str, run: RawFn) -> Builtin {
    Builtin {
        name,
        implementation: Implementation::Raw(run),
    }
}

/// `name` without `tl.` / `triton.`.
fn short_name(name: &'static str) -> &'static str {
    name.strip_prefix("tl.")
        .or_else(|| name.strip_prefix("triton."))
        .unwrap_or(name)
}

/// The parameters of the one-argument math functions and conversions.
const X_ONLY: &[&str] = &["x"];
/// The parameters of the read-modify-write atomics.
const ATOMIC_RMW: &[&str] = &["pointer", "val", "mask", "sem", "scope"];
/// The parameters of `tl.multiple_of`, `tl.max_contiguous`, `tl.max_constancy`.
const HINT: &[&str] = &["input", "values"];

/// Every builtin of the table, by family (one line each: hence no rustfmt).
#[rustfmt::skip]
pub static BUILTINS: &[Builtin] = &[
    // creation.rs
    bound("tl.program_id", &["axis"], 1, creation::program_id),
    bound("tl.num_programs", &["axis"], 1, creation::num_programs),
    bound("tl.arange", &["start", "end"], 2, creation::arange),
    bound("tl.zeros", &["shape", "dtype"], 2, creation::zeros),
    bound("tl.full", &["shape", "value", "dtype"], 3, creation::full),
    bound("tl.zeros_like", &["input", "dtype"], 1, creation::zeros_like),
    bound("tl.full_like", &["input", "value", "dtype"], 2, creation::full_like),
    bound("tl.cast", &["input", "dtype", "fp_downcast_rounding", "bitcast"], 2, creation::cast),
    bound("tl.pointer_type", &["element_ty", "address_space", "const"], 1, creation::pointer_type),
    bound("tl.constexpr", &["value"], 1, creation::constexpr),
    // shape.rs
    bound("tl.expand_dims", &["input", "axis"], 2, shape::expand_dims),
    raw("tl.broadcast_to", shape::broadcast_to),
    bound("tl.broadcast", &["input", "other"], 2, shape::broadcast),
    raw("tl.reshape", shape::reshape),
    raw("tl.view", shape::reshape),
    raw("tl.trans", shape::permute),
    raw("tl.permute", shape::permute),
    // math.rs
    bound("tl.exp", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Exp)),
    bound("tl.exp2", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Exp2)),
    bound("tl.log", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Log)),
    bound("tl.log2", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Log2)),
    bound("tl.sqrt", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Sqrt)),
    bound("tl.sqrt_rn", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Sqrt)),
    bound("tl.rsqrt", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Rsqrt)),
    bound("tl.sin", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Sin)),
    bound("tl.cos", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Cos)),
    bound("tl.floor", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Floor)),
    bound("tl.ceil", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Ceil)),
    bound("tl.erf", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Erf)),
    bound("tl.tanh", X_ONLY, 1, |t, b| math::float_math(t, b, UnaryOp::Tanh)),
    bound("tl.sigmoid", X_ONLY, 1, math::sigmoid),
    bound("tl.where", &["condition", "x", "y"], 3, math::where_),
    bound("tl.minimum", &["x", "y", "propagate_nan"], 2, |t, b| math::min_max(t, b, BinaryOp::Min)),
    bound("tl.maximum", &["x", "y", "propagate_nan"], 2, |t, b| math::min_max(t, b, BinaryOp::Max)),
    bound("tl.clamp", &["x", "min", "max", "propagate_nan"], 3, math::clamp),
    bound("tl.fdiv", &["x", "y", "ieee_rounding"], 2, math::div),
    bound("tl.div_rn", &["x", "y", "ieee_rounding"], 2, math::div),
    bound("tl.pow", &["x", "y"], 2, math::pow),
    bound("tl.fma", &["x", "y", "z"], 3, math::fma),
    raw("abs", math::abs), // raw: `abs` and `tl.abs` bind under the name as called
    raw("tl.abs", math::abs),
    bound("triton.cdiv", &["x", "div"], 2, math::cdiv),
    bound("tl.cdiv", &["x", "div"], 2, math::cdiv),
    // memory.rs (load, store and make_block_ptr bind their own arguments: descriptors
    // call them too)
    raw("tl.load", |t, c| t.load(c.args, c.kwargs, c.span)),
    raw("tl.store", |t, c| t.store(c.args, c.kwargs, c.span)),
    raw("tl.make_block_ptr", |t, c| t.make_block_ptr(c.args, c.kwargs, c.span)),
    bound("tl.advance", &["base", "offsets"], 2, memory::advance),
    bound("tl.atomic_add", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Add)),
    bound("tl.atomic_max", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Max)),
    bound("tl.atomic_min", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Min)),
    bound("tl.atomic_and", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::And)),
    bound("tl.atomic_or", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Or)),
    bound("tl.atomic_xor", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Xor)),
    bound("tl.atomic_xchg", ATOMIC_RMW, 2, |t, b| memory::atomic_rmw(t, b, AtomicOp::Xchg)),
    bound("tl.atomic_cas", &["pointer", "cmp", "val", "sem", "scope"], 3, memory::atomic_cas),
    // hints.rs
    bound("tl.multiple_of", HINT, 2, |t, b| hints::value_hint(t, b, HintKind::MultipleOf)),
    bound("tl.max_contiguous", HINT, 2, |t, b| hints::value_hint(t, b, HintKind::MaxContiguous)),
    bound("tl.max_constancy", HINT, 2, |t, b| hints::value_hint(t, b, HintKind::MaxConstancy)),
    bound("tl.assume", &["cond"], 1, hints::assume),
    bound("tl.debug_barrier", &[], 0, hints::debug_barrier),
    // debug.rs
    bound("tl.static_assert", &["cond", "msg"], 1, debug::static_assert),
    raw("tl.static_print", debug::static_print),
    raw("tl.device_print", debug::device_print),
    bound("tl.device_assert", &["cond", "msg", "mask"], 1, debug::device_assert),
    // python.rs
    raw("range", python::range_outside_for),
    raw("tl.range", python::range_outside_for),
    raw("tl.static_range", python::range_outside_for),
    raw("print", python::print),
    raw("getattr", python::unsupported_builtin),
    raw("enumerate", python::unsupported_builtin),
    raw("zip", python::unsupported_builtin),
    raw("triton.jit", python::jit_in_kernel),
    bound("isinstance", &["obj", "classinfo"], 2, python::isinstance),
    bound("len", &["obj"], 1, python::len),
    bound("int", X_ONLY, 1, python::convert),
    bound("float", X_ONLY, 1, python::convert),
    bound("bool", X_ONLY, 1, python::convert),
    raw("min", python::min_max),
    raw("max", python::min_max),
    bound("triton.next_power_of_2", &["n"], 1, python::next_power_of_2),
    bound("tl.next_power_of_2", &["n"], 1, python::next_power_of_2),
];

/// The table's entry for `name` as called.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

impl Tracer<'_> {
    /// Calls the builtin `name` (`tl.exp`, `min`, `triton.cdiv`, ...).
    pub fn call_builtin(
        &mut self,
        name: &str,
        args: Args,
        kwargs: Kwargs,
        span: Span,
    ) -> Result<Val> {
        if let Some(short) = name.strip_prefix("tl.") {
            if let Some(v) = self.call_reduce(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_random(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_descriptor(short, &args, &kwargs, span)? {
                return Ok(v);
            }
            if let Some(v) = self.call_join(short, &args, &kwargs, span)? {
                return Ok(v);
            }
        }
        let Some(builtin) = lookup(name) else {
            return Err(err(
                ErrorKind::Name,
                format!("unknown function `{name}`"),
                span,
            ));
        };
        match builtin.implementation {
            Implementation::Bound {
                names,
                required,
                run,
            } => {
                let b = bind(
                    short_name(builtin.name),
                    args,
                    kwargs,
                    names,
                    required,
                    span,
                )?;
                run(self, &b)
            }
            Implementation::Raw(run) => run(
                self,
                Call {
                    name: builtin.name,
                    args,
                    kwargs,
                    span,
                },
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::BUILTINS;

    #[test]
    fn names_are_unique() {
        for (i, b) in BUILTINS.iter().enumerate() {
            assert!(
                BUILTINS[..i].iter().all(|a| a.name != b.name),
                "{} is in the table twice",
                b.name
            );
        }
    }
}
