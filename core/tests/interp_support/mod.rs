//! Helpers for the interpreter tests: a small kernel-building DSL over
//! `ir::KernelBuilder` (one source line per op, so errors carry line numbers), host
//! buffer conversion, and a xorshift RNG.
#![allow(dead_code)]

use half::{bf16, f16};
use tilewise_core::diag::{SourceFile, Span};
use tilewise_core::interp::{self, HostBuffer, Options, RtArg};
use tilewise_core::ir::*;
use tilewise_core::launch::{Grid, ScalarValue};
use tilewise_core::Result;

/// xorshift64* RNG.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [lo, hi).
    pub fn f(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    pub fn i(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo) as u64) as i64
    }
    pub fn vec_f32(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f(-2.0, 2.0) as f32).collect()
    }
}

/// Element types a test can put in a host buffer.
pub trait HostElem: Copy {
    const DT: DType;
    fn to_bytes(self, out: &mut Vec<u8>);
    fn from_bytes(b: &[u8]) -> Self;
}

macro_rules! host_elem {
    ($t:ty, $dt:expr) => {
        impl HostElem for $t {
            const DT: DType = $dt;
            fn to_bytes(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_bytes(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().unwrap())
            }
        }
    };
}
host_elem!(f32, DType::F32);
host_elem!(f64, DType::F64);
host_elem!(f16, DType::F16);
host_elem!(bf16, DType::BF16);
host_elem!(i8, DType::I8);
host_elem!(i16, DType::I16);
host_elem!(i32, DType::I32);
host_elem!(i64, DType::I64);
host_elem!(u8, DType::U8);
host_elem!(u16, DType::U16);
host_elem!(u32, DType::U32);
host_elem!(u64, DType::U64);

pub fn buf<T: HostElem>(v: &[T]) -> HostBuffer {
    let mut bytes = vec![];
    for &x in v {
        x.to_bytes(&mut bytes);
    }
    HostBuffer {
        dtype: T::DT,
        bytes,
    }
}

pub fn read<T: HostElem>(b: &HostBuffer) -> Vec<T> {
    assert_eq!(b.dtype, T::DT);
    b.bytes
        .chunks(b.dtype.size_bytes())
        .map(T::from_bytes)
        .collect()
}

pub fn whole(i: usize, b: &HostBuffer) -> RtArg {
    RtArg::Buffer {
        buffer: i,
        offset: 0,
        len: b.len(),
    }
}

pub fn i32s(v: i32) -> RtArg {
    RtArg::Scalar(ScalarValue::Int(DType::I32, v as i64))
}

pub fn run(
    k: &Kernel,
    grid: impl Into<Grid>,
    args: &[RtArg],
    bufs: &mut [HostBuffer],
) -> Result<()> {
    verify::verify(k)?;
    interp::run(k, grid.into(), args, bufs, &Options::default())
}

pub fn run_checked(
    k: &Kernel,
    grid: impl Into<Grid>,
    args: &[RtArg],
    bufs: &mut [HostBuffer],
) -> Result<()> {
    verify::verify(k)?;
    interp::run(
        k,
        grid.into(),
        args,
        bufs,
        &Options {
            checked: true,
            warnings: None,
        },
    )
}

/// A kernel under construction. Every op gets its own source line, so that a runtime
/// error's line number identifies the op: line 1 is the `def`, op `n` is on line `n+1`.
pub struct K {
    pub b: KernelBuilder,
    lines: u32,
}

const LINES: u32 = 400;

fn line_span(line: u32) -> Span {
    // Each line is "    op_NNNN\n" (12 bytes); line 1 is the def.
    let start = (line - 1) * 12;
    Span::new(start + 4, start + 11)
}

impl K {
    pub fn new(name: &str) -> K {
        let mut text = String::from("def kernel:\n");
        for i in 2..=LINES {
            text.push_str(&format!("    op_{i:04}\n"));
        }
        let src = SourceFile::new("test.py", text);
        K {
            b: KernelBuilder::new(name, src, Span::new(0, 10)),
            lines: 1,
        }
    }

    /// The span of the next op's line.
    fn sp(&mut self) -> Span {
        self.lines += 1;
        assert!(self.lines <= LINES);
        line_span(self.lines)
    }

    /// The line number the next op will get.
    pub fn next_line(&self) -> u32 {
        self.lines + 1
    }

    pub fn finish(self) -> Kernel {
        self.b.finish()
    }

    pub fn ty(&self, v: Value) -> Type {
        self.b.ty(v).clone()
    }
    pub fn shape(&self, v: Value) -> Vec<u32> {
        self.b.ty(v).shape().to_vec()
    }
    pub fn dt(&self, v: Value) -> DType {
        self.b.ty(v).dtype().unwrap()
    }

    pub fn ptr_param(&mut self, name: &str, dt: DType) -> Value {
        self.b.add_param(name, Type::ptr(dt, vec![]), Span::NONE, 1)
    }
    pub fn scalar_param(&mut self, name: &str, dt: DType) -> Value {
        self.b.add_param(name, Type::scalar(dt), Span::NONE, 1)
    }

    pub fn push1(&mut self, op: Op, ty: Type) -> Value {
        let sp = self.sp();
        self.b.push1(op, ty, sp)
    }
    pub fn push(&mut self, op: Op, tys: Vec<Type>) -> Vec<Value> {
        let sp = self.sp();
        self.b.push(op, tys, sp)
    }
    pub fn push0(&mut self, op: Op) {
        let sp = self.sp();
        self.b.push0(op, sp)
    }

    pub fn konst(&mut self, c: Const, dt: DType, shape: &[u32]) -> Value {
        self.push1(Op::Const(c), Type::tile(dt, shape.to_vec()))
    }
    pub fn ci32(&mut self, v: i64) -> Value {
        self.konst(Const::Int(v), DType::I32, &[])
    }
    pub fn ci64(&mut self, v: i64) -> Value {
        self.konst(Const::Int(v), DType::I64, &[])
    }
    pub fn cf(&mut self, v: f64, dt: DType, shape: &[u32]) -> Value {
        self.konst(Const::Float(v), dt, shape)
    }
    pub fn pid(&mut self, axis: u8) -> Value {
        self.push1(Op::ProgramId { axis }, Type::scalar(DType::I32))
    }
    pub fn arange(&mut self, start: i64, end: i64) -> Value {
        self.push1(
            Op::Arange { start, end },
            Type::tile(DType::I32, vec![(end - start) as u32]),
        )
    }
    pub fn splat(&mut self, v: Value, shape: &[u32]) -> Value {
        let t = self.ty(v).with_shape(shape.to_vec());
        self.push1(Op::Splat(v), t)
    }
    pub fn bcast(&mut self, v: Value, shape: &[u32]) -> Value {
        let t = self.ty(v).with_shape(shape.to_vec());
        self.push1(Op::Broadcast(v), t)
    }
    pub fn expand(&mut self, v: Value, axis: u32) -> Value {
        let mut s = self.shape(v);
        s.insert(axis as usize, 1);
        let t = self.ty(v).with_shape(s);
        self.push1(Op::ExpandDims { value: v, axis }, t)
    }
    pub fn reshape(&mut self, v: Value, shape: &[u32]) -> Value {
        let t = self.ty(v).with_shape(shape.to_vec());
        self.push1(Op::Reshape(v), t)
    }
    pub fn permute(&mut self, v: Value, perm: &[u32]) -> Value {
        let s = self.shape(v);
        let ns: Vec<u32> = perm.iter().map(|&p| s[p as usize]).collect();
        let t = self.ty(v).with_shape(ns);
        self.push1(
            Op::Permute {
                value: v,
                perm: perm.to_vec(),
            },
            t,
        )
    }
    /// Makes a scalar or tile match `shape` (splat a scalar, broadcast a tile).
    pub fn shaped(&mut self, v: Value, shape: &[u32]) -> Value {
        let s = self.shape(v);
        if s == shape {
            v
        } else if s.is_empty() {
            self.splat(v, shape)
        } else {
            self.bcast(v, shape)
        }
    }
    pub fn bin(&mut self, op: BinaryOp, a: Value, b: Value) -> Value {
        let t = self.ty(a);
        self.push1(Op::Binary { op, lhs: a, rhs: b }, t)
    }
    pub fn add(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Add, a, b)
    }
    pub fn mul(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinaryOp::Mul, a, b)
    }
    pub fn un(&mut self, op: UnaryOp, a: Value) -> Value {
        let t = self.ty(a);
        self.push1(Op::Unary { op, value: a }, t)
    }
    pub fn cmp(&mut self, pred: CmpPred, a: Value, b: Value) -> Value {
        let t = self.ty(a).with_dtype(DType::I1);
        self.push1(
            Op::Cmp {
                pred,
                lhs: a,
                rhs: b,
            },
            t,
        )
    }
    pub fn select(&mut self, c: Value, t: Value, f: Value) -> Value {
        let ty = self.ty(t);
        self.push1(
            Op::Select {
                cond: c,
                on_true: t,
                on_false: f,
            },
            ty,
        )
    }
    pub fn cast(&mut self, v: Value, dt: DType, bitcast: bool) -> Value {
        let t = self.ty(v).with_dtype(dt);
        self.push1(Op::Cast { value: v, bitcast }, t)
    }
    pub fn addptr(&mut self, p: Value, off: Value) -> Value {
        let s = self.shape(off);
        let p = self.shaped(p, &s);
        let t = self.ty(p);
        self.push1(
            Op::AddPtr {
                ptr: p,
                offset: off,
            },
            t,
        )
    }
    pub fn load(&mut self, p: Value, mask: Option<Value>, other: Option<Value>) -> Value {
        let Type::Tile {
            elem: Elem::Ptr(dt),
            shape,
        } = self.ty(p)
        else {
            panic!("load of non-pointer")
        };
        self.push1(
            Op::Load {
                ptr: p,
                mask,
                other,
                boundary_check: vec![],
                padding: Padding::None,
                hints: CacheHints::default(),
                stage: None,
                tensor_box: None,
            },
            Type::tile(dt, shape),
        )
    }
    pub fn store(&mut self, p: Value, v: Value, mask: Option<Value>) {
        self.push0(Op::Store {
            ptr: p,
            value: v,
            mask,
            boundary_check: vec![],
            hints: CacheHints::default(),
        })
    }
    /// `make_block_ptr` with i64 shape/strides and i32 offsets (all runtime scalars).
    pub fn block_ptr(
        &mut self,
        base: Value,
        shape: &[Value],
        strides: &[Value],
        offsets: &[Value],
        block: &[u32],
        order: &[u32],
    ) -> Value {
        let Type::Tile {
            elem: Elem::Ptr(dt),
            ..
        } = self.ty(base)
        else {
            panic!()
        };
        self.push1(
            Op::MakeBlockPtr {
                base,
                shape: shape.to_vec(),
                strides: strides.to_vec(),
                offsets: offsets.to_vec(),
                order: order.to_vec(),
            },
            Type::BlockPtr {
                pointee: dt,
                block_shape: block.to_vec(),
            },
        )
    }
    pub fn advance(&mut self, p: Value, deltas: &[Value]) -> Value {
        let t = self.ty(p);
        self.push1(
            Op::Advance {
                ptr: p,
                deltas: deltas.to_vec(),
            },
            t,
        )
    }
    pub fn bload(&mut self, p: Value, boundary_check: &[u32], padding: Padding) -> Value {
        let Type::BlockPtr {
            pointee,
            block_shape,
        } = self.ty(p)
        else {
            panic!()
        };
        self.push1(
            Op::Load {
                ptr: p,
                mask: None,
                other: None,
                boundary_check: boundary_check.to_vec(),
                padding,
                hints: CacheHints::default(),
                stage: None,
                tensor_box: None,
            },
            Type::tile(pointee, block_shape),
        )
    }
    pub fn bstore(&mut self, p: Value, v: Value, boundary_check: &[u32]) {
        self.push0(Op::Store {
            ptr: p,
            value: v,
            mask: None,
            boundary_check: boundary_check.to_vec(),
            hints: CacheHints::default(),
        })
    }
    pub fn dot(&mut self, a: Value, b: Value, acc: Value) -> Value {
        let t = self.ty(acc);
        self.push1(
            Op::Dot {
                a,
                b,
                acc,
                precision: Precision::Ieee,
            },
            t,
        )
    }
    pub fn reduce(&mut self, v: Value, axis: u32, combiner: Combiner) -> Value {
        let mut s = self.shape(v);
        s.remove(axis as usize);
        let t = self.ty(v).with_shape(s);
        self.push1(
            Op::Reduce {
                operands: vec![v],
                axis,
                combiner,
            },
            t,
        )
    }
    /// `(max value, index)` style reduction over `(v, idx)`.
    pub fn reduce2(
        &mut self,
        v: Value,
        idx: Value,
        axis: u32,
        combiner: Combiner,
    ) -> (Value, Value) {
        let mut s = self.shape(v);
        s.remove(axis as usize);
        let (t0, t1) = (self.ty(v).with_shape(s.clone()), self.ty(idx).with_shape(s));
        let r = self.push(
            Op::Reduce {
                operands: vec![v, idx],
                axis,
                combiner,
            },
            vec![t0, t1],
        );
        (r[0], r[1])
    }
    pub fn scan(&mut self, v: Value, axis: u32, reverse: bool, combiner: Combiner) -> Value {
        let t = self.ty(v);
        self.push1(
            Op::Scan {
                operands: vec![v],
                axis,
                reverse,
                combiner,
            },
            t,
        )
    }

    /// `for iv in range(lo, hi, step)` carrying `init`; `body(k, iv, carried) -> next`.
    pub fn for_loop(
        &mut self,
        lo: Value,
        hi: Value,
        step: Value,
        init: &[Value],
        body: impl FnOnce(&mut K, Value, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let mut tys = vec![self.ty(lo)];
        let carried_tys: Vec<Type> = init.iter().map(|v| self.ty(*v)).collect();
        tys.extend(carried_tys.clone());
        let args = self.b.begin_block(tys);
        let next = body(self, args[0], &args[1..]);
        self.push0(Op::Yield(next));
        let block = self.b.end_block();
        self.push(
            Op::For {
                lower: lo,
                upper: hi,
                step,
                init: init.to_vec(),
                body: block,
                num_stages: None,
                flatten: None,
            },
            carried_tys,
        )
    }

    pub fn if_else(
        &mut self,
        cond: Value,
        tys: Vec<Type>,
        then_b: impl FnOnce(&mut K) -> Vec<Value>,
        else_b: impl FnOnce(&mut K) -> Vec<Value>,
    ) -> Vec<Value> {
        self.b.begin_block(vec![]);
        let t = then_b(self);
        self.push0(Op::Yield(t));
        let then_block = self.b.end_block();
        self.b.begin_block(vec![]);
        let e = else_b(self);
        self.push0(Op::Yield(e));
        let else_block = self.b.end_block();
        self.push(
            Op::If {
                cond,
                then_block,
                else_block,
            },
            tys,
        )
    }

    /// `while before(carried) -> (cond, fwd)`; `after(fwd) -> next carried`.
    pub fn while_loop(
        &mut self,
        init: &[Value],
        before: impl FnOnce(&mut K, &[Value]) -> (Value, Vec<Value>),
        after: impl FnOnce(&mut K, &[Value]) -> Vec<Value>,
    ) -> Vec<Value> {
        let tys: Vec<Type> = init.iter().map(|v| self.ty(*v)).collect();
        let bargs = self.b.begin_block(tys.clone());
        let (cond, fwd) = before(self, &bargs);
        self.push0(Op::Condition { cond, args: fwd });
        let before_b = self.b.end_block();
        let aargs = self.b.begin_block(tys.clone());
        let next = after(self, &aargs);
        self.push0(Op::Yield(next));
        let after_b = self.b.end_block();
        self.push(
            Op::While {
                init: init.to_vec(),
                before: before_b,
                after: after_b,
            },
            tys,
        )
    }
}

/// The 1-D "offsets = pid * BLOCK + arange(0, BLOCK); mask = offsets < n" prologue.
pub fn offsets_and_mask(k: &mut K, block: u32, n: Value) -> (Value, Value) {
    let pid = k.pid(0);
    let bs = k.ci32(block as i64);
    let base = k.mul(pid, bs);
    let base = k.splat(base, &[block]);
    let ar = k.arange(0, block as i64);
    let offs = k.add(base, ar);
    let nn = k.splat(n, &[block]);
    let mask = k.cmp(CmpPred::Lt, offs, nn);
    (offs, mask)
}
