//! The shared lowering, checked without a GPU: kernels run through the interpreter
//! (the reference), through the block-pointer pass and the interpreter again, and
//! through the whole lowering to Thread IR in the simulator; results must agree.

use tilewise_core::frontend::Module;
use tilewise_core::interp::{self, HostBuffer, Options, RtArg};
use tilewise_core::ir::{verify::verify, DType};
use tilewise_core::launch::{ArgSpec, ConstValue, Grid, ScalarValue};
use tilewise_core::lower::block_ptr::lower_block_pointers;
use tilewise_core::lower::expand::{expand, ExpandOptions};
use tilewise_core::thread_ir::sim::simulate;

struct Rng(u64);
impl Rng {
    fn f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

enum A {
    F32(Vec<f32>),
    I32(i32),
}

fn f32_buf(v: &[f32]) -> HostBuffer {
    HostBuffer {
        dtype: DType::F32,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn to_f32(b: &HostBuffer) -> Vec<f32> {
    b.bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs `kernel` three ways and compares every buffer.
fn check(
    src: &str,
    name: &str,
    args: Vec<A>,
    constexprs: &[(&str, i64)],
    grid: [u32; 3],
    tol: f32,
) {
    let module = Module::parse("k.py", src).unwrap_or_else(|e| panic!("{e}"));
    let specs: Vec<ArgSpec> = args
        .iter()
        .map(|a| match a {
            A::F32(_) => ArgSpec::Ptr {
                dtype: DType::F32,
                aligned16: true,
            },
            A::I32(v) => ArgSpec::Scalar(ScalarValue::Int(DType::I32, *v as i64)),
        })
        .collect();
    let cx: Vec<(String, ConstValue)> = constexprs
        .iter()
        .map(|(n, v)| (n.to_string(), ConstValue::Int(*v)))
        .collect();
    let spec = module
        .specialize(name, &specs, &cx)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut buffers = vec![];
    let mut rt = vec![];
    for a in &args {
        match a {
            A::F32(v) => {
                rt.push(RtArg::Buffer {
                    buffer: buffers.len(),
                    offset: 0,
                    len: v.len(),
                });
                buffers.push(f32_buf(v));
            }
            A::I32(v) => rt.push(RtArg::Scalar(ScalarValue::Int(DType::I32, *v as i64))),
        }
    }
    let rt: Vec<RtArg> = spec.arg_indices.iter().map(|&i| rt[i]).collect();
    let grid = Grid(grid);
    let mut want = buffers.clone();
    interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));

    for (b, w) in buffers.iter().zip(&want) {
        let (b, w) = (to_f32(b), to_f32(w));
        if !b.is_empty() && b.iter().all(|x| x.is_nan()) {
            assert!(
                w.iter().all(|x| !x.is_nan()),
                "{name}: the interpreter left poisoned outputs"
            );
        }
    }
    let lowered = lower_block_pointers(&spec.kernel, DType::I32).unwrap_or_else(|e| panic!("{e}"));
    verify(&lowered).unwrap_or_else(|e| panic!("{e}\n{}", tilewise_core::ir::print(&lowered)));
    let mut got = buffers.clone();
    interp::run(&lowered, grid, &rt, &mut got, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        got, want,
        "block-pointer lowering changed the result of {name}"
    );

    let tk = expand(&lowered, &ExpandOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut sim = buffers.clone();
    simulate(&tk, grid, &rt, &mut sim)
        .unwrap_or_else(|e| panic!("{e}\n{}", tilewise_core::thread_ir::print(&tk)));
    for (i, (s, w)) in sim.iter().zip(&want).enumerate() {
        let (s, w) = (to_f32(s), to_f32(w));
        for (j, (a, b)) in s.iter().zip(&w).enumerate() {
            let ok = (a - b).abs() <= tol * b.abs().max(1.0) || (a.is_nan() && b.is_nan());
            assert!(
                ok,
                "{name}: buffer {i} element {j}: simulated {a}, interpreter {b}"
            );
        }
    }
}

fn rand(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.f32()).collect()
}

#[test]
fn vector_add_lowers() {
    let mut r = Rng(7);
    let n = 1000;
    let src = include_str!("../../shaders/vector_add.py");
    check(
        src,
        "add_kernel",
        vec![
            A::F32(rand(&mut r, n)),
            A::F32(rand(&mut r, n)),
            A::F32(vec![f32::NAN; n]),
            A::I32(n as i32),
        ],
        &[("BLOCK_SIZE", 256)],
        [4, 1, 1],
        0.0,
    );
}

#[test]
fn softmax_lowers() {
    let mut r = Rng(9);
    let (rows, cols) = (5, 37);
    let src = include_str!("../../shaders/fused_softmax.py");
    check(
        src,
        "softmax_kernel",
        vec![
            A::F32(vec![f32::NAN; rows * cols]),
            A::F32(rand(&mut r, rows * cols)),
            A::I32(cols as i32),
            A::I32(cols as i32),
            A::I32(rows as i32),
            A::I32(cols as i32),
        ],
        &[("BLOCK_SIZE", 64)],
        [rows as u32, 1, 1],
        1e-6,
    );
}

#[test]
fn block_ptr_matmul_lowers() {
    let mut r = Rng(11);
    let (m, n, k) = (37, 45, 33);
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    check(
        src,
        "matmul_block_ptr_kernel",
        vec![
            A::F32(rand(&mut r, m * k)),
            A::F32(rand(&mut r, k * n)),
            A::F32(vec![f32::NAN; m * n]),
            A::I32(m as i32),
            A::I32(n as i32),
            A::I32(k as i32),
            A::I32(k as i32),
            A::I32(1),
            A::I32(n as i32),
            A::I32(1),
            A::I32(n as i32),
            A::I32(1),
        ],
        &[("BLOCK_M", 16), ("BLOCK_N", 32), ("BLOCK_K", 16)],
        [3, 2, 1],
        1e-5,
    );
}
