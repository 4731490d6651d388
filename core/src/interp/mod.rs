//! The reference interpreter: runs a specialized tile-IR kernel over every program of
//! the grid, on host buffers, with the semantics of a GPU run.
//!
//! Programs run sequentially, x fastest, then y, then z; each runs the kernel body on
//! whole tiles. The files, one concept each:
//! - [`value`]: runtime tiles (floats as `f64` rounded to the dtype, integers as `i64`
//!   wrapped to the dtype), pointer tiles, block pointers; broadcast/transpose gathers.
//! - [`memory`]: buffer views, lane resolution with bounds checks, typed gather/scatter.
//! - [`arith`]: elementwise ops, comparisons, casts (C integer semantics; division by
//!   zero gives 0).
//! - [`eval`]: the evaluator state and the dispatch of every op; loads, stores, atomics.
//! - [`control`]: `for`, `if`, `while`.
//! - [`dot`]: the blocked GEMM behind `dot`.
//! - [`reduce`]: reductions and scans.
//! - [`debug`]: `device_print`, `device_assert`, checked-mode hint verification.
//! - [`schedule`]: programs interleaved where one waits for another (spin locks and
//!   flags), deadlocks and the step limit reported.
//! - [`error`]: how errors are worded and located.
//!
//! An unmasked access outside its buffer view is a [`ErrorKind::Runtime`] diagnostic
//! naming the kernel, the source line, the program id, the element index and the
//! buffer's length; it is never a panic or a silent read. Masked-off lanes never touch
//! memory. Checked mode ([`Options::checked`]) also reports false hints and block
//! pointers whose declared shape reaches past their buffer.
//!
//! [`ErrorKind::Runtime`]: crate::diag::ErrorKind::Runtime

pub(crate) mod arith;
mod control;
mod debug;
mod dot;
mod error;
mod eval;
pub(crate) mod memory;
mod reduce;
pub(crate) mod schedule;
pub(crate) mod value;

use crate::diag::Result;
use crate::ir::{DType, Elem, Kernel, Type};
use crate::launch::{Grid, ScalarValue};
use eval::{Interp, Term};
use memory::{Memory, View};
use schedule::{Baton, Handle};
use value::{round1, wrap1, Data, PtrTile, Roots, RtValue, Tile};

/// A host buffer: raw little-endian bytes of `dtype` elements (`i1` one byte each).
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    pub dtype: DType,
    pub bytes: Vec<u8>,
}

impl HostBuffer {
    pub fn len(&self) -> usize {
        self.bytes.len() / self.dtype.size_bytes()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// A runtime argument of a launch, in kernel parameter order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RtArg {
    /// Elements `[offset, offset + len)` of `buffers[buffer]`.
    Buffer {
        buffer: usize,
        offset: usize,
        len: usize,
    },
    Scalar(ScalarValue),
}

/// Where checked mode puts its warnings.
pub type Warnings = std::sync::Arc<std::sync::Mutex<Vec<crate::diag::Diagnostic>>>;

/// Interpreter options.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Checked mode: also report false `multiple_of` / `max_contiguous` hints and block
    /// pointers whose declared extent reaches past their buffer. A false hint that no
    /// memory access is widened with (it cannot change a result) is a warning, pushed
    /// to `warnings`; the others are errors.
    pub checked: bool,
    pub warnings: Option<Warnings>,
}

/// A scalar argument converted to the parameter's dtype (same kind required).
fn scalar_tile(k: &Kernel, name: &str, dt: DType, s: ScalarValue) -> Result<Tile> {
    let data = match (s, dt.is_float(), dt.is_bool()) {
        (ScalarValue::Float(_, f), true, _) => Data::F(vec![round1(dt, f)]),
        (ScalarValue::Int(sd, i), true, _) => Data::F(vec![arith::i2f(i, sd, dt)]),
        (ScalarValue::Bool(b), _, true) => Data::I(vec![b as i64]),
        (ScalarValue::Int(_, i), false, false) => Data::I(vec![wrap1(dt, i)]),
        (ScalarValue::Int(_, i), false, true) => Data::I(vec![(i != 0) as i64]),
        (s, _, _) => {
            return Err(error::launch(
                k,
                format!(
                    "argument `{name}` is a {} scalar, but the kernel expects {dt}",
                    s.dtype()
                ),
            ))
        }
    };
    Ok(Tile::new(dt, data))
}

/// Checks `args` against the kernel's parameters; returns the pointer views and the
/// initial values of the parameters.
fn bind_args(
    k: &Kernel,
    args: &[RtArg],
    buffers: &[HostBuffer],
) -> Result<(Vec<Option<View>>, Vec<RtValue>)> {
    if args.len() != k.params.len() {
        return Err(error::launch(
            k,
            format!(
                "{} arguments given, the kernel takes {}",
                args.len(),
                k.params.len()
            ),
        ));
    }
    let mut views = vec![];
    let mut vals = vec![];
    for (i, (p, a)) in k.params.iter().zip(args).enumerate() {
        let name = &p.name;
        match (&p.ty, a) {
            (
                Type::Tile {
                    elem: Elem::Ptr(dt),
                    shape,
                },
                RtArg::Buffer {
                    buffer,
                    offset,
                    len,
                },
            ) if shape.is_empty() => {
                let Some(b) = buffers.get(*buffer) else {
                    return Err(error::launch(
                        k,
                        format!(
                            "argument `{name}` names buffer {buffer}, but {} buffers were given",
                            buffers.len()
                        ),
                    ));
                };
                if b.dtype != *dt {
                    return Err(error::launch(
                        k,
                        format!("argument `{name}` is a buffer of {}, but the kernel expects a pointer to {dt}", b.dtype),
                    ));
                }
                if offset.checked_add(*len).is_none_or(|end| end > b.len()) {
                    return Err(error::launch(
                        k,
                        format!(
                            "argument `{name}`: view [{offset}, {offset}+{len}) is outside its buffer of {} elements",
                            b.len()
                        ),
                    ));
                }
                views.push(Some(View {
                    buffer: *buffer,
                    offset: *offset,
                    len: *len,
                }));
                vals.push(RtValue::Ptr(PtrTile {
                    pointee: *dt,
                    roots: Roots::One(i as u32),
                    offs: vec![0],
                }));
            }
            (
                Type::Tile {
                    elem: Elem::Data(dt),
                    shape,
                },
                RtArg::Scalar(s),
            ) if shape.is_empty() => {
                views.push(None);
                vals.push(RtValue::Data(scalar_tile(k, name, *dt, *s)?));
            }
            (ty, a) => {
                let got = match a {
                    RtArg::Buffer { .. } => "a buffer".to_string(),
                    RtArg::Scalar(s) => format!("a {} scalar", s.dtype()),
                };
                return Err(error::launch(
                    k,
                    format!("argument `{name}` is {got}, but the kernel expects {ty}"),
                ));
            }
        }
    }
    Ok((views, vals))
}

/// Runs one program with the launch's memory in `baton`; returns the memory.
#[allow(clippy::too_many_arguments)]
fn run_program<'m>(
    kernel: &'m Kernel,
    grid: Grid,
    views: &[Option<View>],
    vals: &[RtValue],
    options: &Options,
    limit: Option<u64>,
    pid: [u32; 3],
    baton: Baton<'m>,
    handle: Option<Handle<'m>>,
) -> (Baton<'m>, Result<()>) {
    let mem = Memory {
        bufs: baton.bufs,
        views: views.to_vec(),
        writes: baton.writes,
        reads: baton.reads,
        track: handle.is_some(),
    };
    let mut it = Interp::new(kernel, grid.0, mem, options.checked);
    it.warnings = options.warnings.clone();
    it.steps = baton.steps;
    it.step_limit = limit;
    it.handle = handle;
    it.pid = pid;
    for (p, v) in kernel.params.iter().zip(vals.iter().cloned()) {
        it.set(p.value, v);
    }
    let r = match it.exec_block(&kernel.body) {
        Ok(Term::Fall) => Ok(()),
        Ok(_) => Err(it.ierr(kernel.span, "the kernel body ends with a terminator")),
        Err(e) => Err(e),
    };
    let back = Baton {
        bufs: std::mem::take(&mut it.mem.bufs),
        writes: it.mem.writes,
        reads: it.mem.reads,
        steps: it.steps,
    };
    (back, r)
}

/// Runs `kernel` over `grid`. `args[i]` feeds `kernel.params[i]`.
pub fn run(
    kernel: &Kernel,
    grid: Grid,
    args: &[RtArg],
    buffers: &mut [HostBuffer],
    options: &Options,
) -> Result<()> {
    let (views, vals) = bind_args(kernel, args, buffers)?;
    if grid.total() == 0 {
        return Ok(());
    }
    let limit = schedule::step_limit();
    let mut has_while = false;
    kernel.walk(&mut |i| has_while |= matches!(i.op, crate::ir::Op::While { .. }));
    let baton = Baton {
        bufs: buffers,
        writes: 0,
        reads: 0,
        steps: 0,
    };
    if !has_while {
        // Nothing can wait for another program: one after another, on this thread,
        // with one evaluator.
        let mem = Memory {
            bufs: baton.bufs,
            views,
            writes: 0,
            reads: 0,
            track: false,
        };
        let mut it = Interp::new(kernel, grid.0, mem, options.checked);
        it.step_limit = limit;
        it.warnings = options.warnings.clone();
        for (p, v) in kernel.params.iter().zip(vals) {
            it.set(p.value, v);
        }
        for i in 0..grid.total() {
            it.pid = grid.pid(i);
            match it.exec_block(&kernel.body)? {
                Term::Fall => {}
                _ => return Err(it.ierr(kernel.span, "the kernel body ends with a terminator")),
            }
        }
        return Ok(());
    }
    let run_one = |pid: [u32; 3], baton, handle| {
        run_program(
            kernel, grid, &views, &vals, options, limit, pid, baton, handle,
        )
    };
    let deadlock = |span: crate::diag::Span, stuck: &[[u32; 3]]| {
        let progs: Vec<String> = stuck
            .iter()
            .map(|p| format!("({}, {}, {})", p[0], p[1], p[2]))
            .collect();
        error::deadlock(kernel, span, &progs)
    };
    schedule::run_interleaved(grid, baton, |pid, b, h| run_one(pid, b, Some(h)), &deadlock)
}
