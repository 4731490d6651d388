//! The shared lowering, checked without a GPU: kernels run through the interpreter
//! (the reference), through the block-pointer pass and the interpreter again, and
//! through the whole lowering to Thread IR in the simulator; results must agree.

use tilewise_core::frontend::Module;
use tilewise_core::interp::{self, HostBuffer, Options, RtArg};
use tilewise_core::ir::{verify::verify, DType};
use tilewise_core::launch::{ArgSpec, ConstValue, Grid, ScalarValue};
use tilewise_core::lower::block_ptr::lower_block_pointers;
use tilewise_core::lower::expand::{expand, ExpandOptions};
use tilewise_core::lower::to_thread_ir;
use tilewise_core::thread_ir::sim::simulate;
use tilewise_core::thread_ir::{Expr, Stmt, ThreadKernel};

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
    /// f16 data (the values rounded).
    F16(Vec<f32>),
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

/// A specialization of `name` for `args`, its buffers and run-time arguments.
fn setup(
    src: &str,
    name: &str,
    args: &[A],
    constexprs: &[(&str, i64)],
) -> (
    tilewise_core::frontend::Specialized,
    Vec<HostBuffer>,
    Vec<RtArg>,
) {
    let module = Module::parse("k.py", src).unwrap_or_else(|e| panic!("{e}"));
    let specs: Vec<ArgSpec> = args
        .iter()
        .map(|a| match a {
            A::F32(_) => ArgSpec::Ptr {
                dtype: DType::F32,
                aligned16: true,
            },
            A::F16(_) => ArgSpec::Ptr {
                dtype: DType::F16,
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
    for a in args {
        match a {
            A::F32(v) => {
                rt.push(RtArg::Buffer {
                    buffer: buffers.len(),
                    offset: 0,
                    len: v.len(),
                });
                buffers.push(f32_buf(v));
            }
            A::F16(v) => {
                rt.push(RtArg::Buffer {
                    buffer: buffers.len(),
                    offset: 0,
                    len: v.len(),
                });
                buffers.push(HostBuffer {
                    dtype: DType::F16,
                    bytes: v
                        .iter()
                        .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
                        .collect(),
                });
            }
            A::I32(v) => rt.push(RtArg::Scalar(ScalarValue::Int(DType::I32, *v as i64))),
        }
    }
    let rt: Vec<RtArg> = spec.arg_indices.iter().map(|&i| rt[i]).collect();
    (spec, buffers, rt)
}

/// Whether `got` matches `want` buffer by buffer within `tol` (relative, NaN = NaN);
/// the first mismatch otherwise.
fn compare(got: &[HostBuffer], want: &[HostBuffer], tol: f32) -> Result<(), String> {
    for (i, (s, w)) in got.iter().zip(want).enumerate() {
        let (s, w) = (to_f32(s), to_f32(w));
        for (j, (a, b)) in s.iter().zip(&w).enumerate() {
            let ok = (a - b).abs() <= tol * b.abs().max(1.0) || (a.is_nan() && b.is_nan());
            if !ok {
                return Err(format!(
                    "buffer {i} element {j}: simulated {a}, interpreter {b}"
                ));
            }
        }
    }
    Ok(())
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
    let (spec, buffers, rt) = setup(src, name, &args, constexprs);
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
    if let Err(e) = compare(&sim, &want, tol) {
        panic!("{name}: {e}");
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
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    check(
        src,
        "matmul_block_ptr_kernel",
        matmul_args(11, (37, 45, 33)),
        &[("BLOCK_M", 16), ("BLOCK_N", 32), ("BLOCK_K", 16)],
        [3, 2, 1],
        1e-5,
    );
}

/// Applies `f` to every statement, nested bodies included.
fn walk_mut(body: &mut [Stmt], f: &mut impl FnMut(&mut Stmt)) {
    for s in body.iter_mut() {
        f(s);
        for b in s.bodies_mut() {
            walk_mut(b, f);
        }
    }
}

/// What `f` picks from every statement, nested bodies included, in program order.
fn collect<T>(body: &[Stmt], f: &impl Fn(&Stmt) -> Option<T>) -> Vec<T> {
    let mut out = vec![];
    for s in body {
        out.extend(f(s));
        for b in s.bodies() {
            out.extend(collect(b, f));
        }
    }
    out
}

fn count(body: &[Stmt], f: &impl Fn(&Stmt) -> bool) -> usize {
    collect(body, &|s| f(s).then_some(())).len()
}

/// The `pending` counts of the kernel's asynchronous waits, in program order.
fn waits(body: &[Stmt]) -> Vec<u32> {
    collect(body, &|s| match s {
        Stmt::AsyncWait { pending } => Some(*pending),
        _ => None,
    })
}

/// A `matmul_block_ptr_kernel` specialization (32x32x16 blocks) on random inputs with
/// its interpreter result.
struct MatmulCase {
    spec: tilewise_core::frontend::Specialized,
    buffers: Vec<HostBuffer>,
    rt: Vec<RtArg>,
    grid: Grid,
    want: Vec<HostBuffer>,
}

fn matmul_case(src: &str, seed: u64, shape: (usize, usize, usize), grid: [u32; 3]) -> MatmulCase {
    let args = matmul_args(seed, shape);
    let blocks = [("BLOCK_M", 32), ("BLOCK_N", 32), ("BLOCK_K", 16)];
    let (spec, buffers, rt) = setup(src, "matmul_block_ptr_kernel", &args, &blocks);
    let grid = Grid(grid);
    let mut want = buffers.clone();
    interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    MatmulCase {
        spec,
        buffers,
        rt,
        grid,
        want,
    }
}

impl MatmulCase {
    fn simulate(&self, tk: &ThreadKernel) -> tilewise_core::diag::Result<Vec<HostBuffer>> {
        let mut got = self.buffers.clone();
        simulate(tk, self.grid, &self.rt, &mut got).map(|_| got)
    }
}

/// The PTX lowering stages the matmul's operands in shared-memory rings filled by
/// asynchronous copies (one barrier a K step), for the tensor-core dot (tf32, 16-byte
/// copies) and the FMA one (`ieee`, `a` copied element by element into its K-major
/// layout). The simulator poisons a copy's destination until it is waited for and
/// reports reads of copies in flight as races, so the waits are checked too: without
/// them, or waiting for one group too few, the simulation fails.
#[test]
fn staged_matmul_lowers_and_needs_its_waits() {
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let dot = "tl.dot(a_tile, b_tile, acc)";
    assert!(src.contains(dot));
    staged_matmul(src, 3e-3);
    let ieee = src.replace(dot, "tl.dot(a_tile, b_tile, acc, input_precision=\"ieee\")");
    staged_matmul(&ieee, 1e-5);
}

fn staged_matmul(src: &str, tol: f32) {
    // 7 K steps of 16 (the last one ragged), ragged M and N.
    let case = matmul_case(src, 13, (37, 45, 100), [2, 2, 1]);
    let want = &case.want;
    let tk =
        to_thread_ir(&case.spec.kernel, &ExpandOptions::ptx(4)).unwrap_or_else(|e| panic!("{e}"));
    let copies = count(&tk.body, &|s| matches!(s, Stmt::AsyncCopy { .. }));
    assert!(
        copies > 0,
        "no asynchronous copies in the PTX lowering of the matmul"
    );
    // Small tiles get 4 stages: in the loop, both operands of the two later iterations
    // in flight; after it, none.
    assert_eq!(waits(&tk.body), vec![4, 0], "waits of the staged matmul");
    let loop_barriers = tk.body.iter().find_map(|s| match s {
        Stmt::For { body, .. } => Some(count(body, &|s| matches!(s, Stmt::Barrier))),
        _ => None,
    });
    assert_eq!(loop_barriers, Some(1), "barriers a K step");
    let run = |tk: &ThreadKernel| case.simulate(tk);
    let got = run(&tk).unwrap_or_else(|e| panic!("{e}"));
    compare(&got, want, tol).unwrap_or_else(|e| panic!("staged matmul: {e}"));
    for (what, change) in [("no waits", None), ("one group too few", Some(1))] {
        let mut broken = tk.clone();
        walk_mut(&mut broken.body, &mut |s| {
            if let Stmt::AsyncWait { pending } = s {
                *pending = match change {
                    None => u32::MAX,
                    Some(d) => *pending + d,
                };
            }
        });
        // The race detector reports the read of a copy in flight; the poisoned
        // destinations would show in the results anyway.
        match run(&broken) {
            Err(e) => assert!(
                e.to_string()
                    .contains("asynchronous copy into it is in flight"),
                "{what}: {e}"
            ),
            Ok(got) => assert!(
                compare(&got, want, tol).is_err(),
                "the simulator did not notice {what}"
            ),
        }
    }
    // Without the K loop's barrier, a copy lands while other threads read the slot.
    let mut broken = tk.clone();
    for s in broken.body.iter_mut() {
        if let Stmt::For { body, .. } = s {
            body.retain(|s| !matches!(s, Stmt::Barrier));
        }
    }
    let e = run(&broken).expect_err("a race without the loop's barrier");
    assert!(e.to_string().contains("shared-memory race"), "{e}");
}

/// The simulator's race detector: the WGSL lowering of the softmax (reductions through
/// shared memory) runs clean, and without its barriers the detector reports a race.
#[test]
fn races_between_barriers_are_reported() {
    let mut r = Rng(23);
    let (rows, cols) = (3, 100);
    let src = include_str!("../../shaders/fused_softmax.py");
    let args = vec![
        A::F32(vec![f32::NAN; rows * cols]),
        A::F32(rand(&mut r, rows * cols)),
        A::I32(cols as i32),
        A::I32(cols as i32),
        A::I32(rows as i32),
        A::I32(cols as i32),
    ];
    let (spec, buffers, rt) = setup(src, "softmax_kernel", &args, &[("BLOCK_SIZE", 128)]);
    let grid = Grid([rows as u32, 1, 1]);
    let mut want = buffers.clone();
    interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let tk = to_thread_ir(&spec.kernel, &ExpandOptions::wgsl(4)).unwrap_or_else(|e| panic!("{e}"));
    let mut got = buffers.clone();
    simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{e}"));
    compare(&got, &want, 1e-6).unwrap_or_else(|e| panic!("softmax: {e}"));
    let mut broken = tk.clone();
    fn strip(body: &mut Vec<Stmt>) {
        body.retain(|s| !matches!(s, Stmt::Barrier));
        for s in body.iter_mut() {
            for b in s.bodies_mut() {
                strip(b);
            }
        }
    }
    strip(&mut broken.body);
    let mut got = buffers.clone();
    let e = simulate(&broken, grid, &rt, &mut got).expect_err("a race without barriers");
    assert!(e.to_string().contains("shared-memory race"), "{e}");
}

/// Rings that do not fit the shared-memory budget get fewer stages (down to 2, with a
/// single group in flight at most: wait 0), then the register prefetch; results stay
/// the same.
#[test]
fn ring_budget_caps_stages() {
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let case = matmul_case(src, 17, (40, 24, 70), [2, 1, 1]);
    // One stage of tf32 tiles: a 32 x (16 + 4) and b 16 x (32 + 8) words.
    let stage = (32 * 20 + 16 * 40) * 4;
    for (budget, copies, want_waits) in [
        (4 * stage, true, vec![4, 0]),
        (3 * stage, true, vec![2, 0]),
        (2 * stage, true, vec![0, 0]),
        (2 * stage - 1, false, vec![]),
    ] {
        let options = ExpandOptions {
            ring_budget: budget,
            ..ExpandOptions::ptx(4)
        };
        let tk = to_thread_ir(&case.spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        let n_copies = count(&tk.body, &|s| matches!(s, Stmt::AsyncCopy { .. }));
        assert_eq!(n_copies > 0, copies, "budget {budget}: copies");
        assert_eq!(waits(&tk.body), want_waits, "budget {budget}: waits");
        let got = case.simulate(&tk).unwrap_or_else(|e| panic!("{e}"));
        compare(&got, &case.want, 3e-3).unwrap_or_else(|e| panic!("budget {budget}: {e}"));
    }
}

/// Arguments of `matmul_block_ptr_kernel` for random row-major `m x k` and `k x n`
/// inputs and a poisoned output.
fn matmul_args(seed: u64, (m, n, k): (usize, usize, usize)) -> Vec<A> {
    let mut r = Rng(seed);
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
    ]
}

/// Without asynchronous copies (WGSL) a loop asking for `num_stages=3` keeps two tiles
/// a load in flight in registers (the prologue loads two iterations), with the same
/// results.
#[test]
fn register_prefetch_follows_num_stages() {
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let header = "for _ in range(0, tl.cdiv(K, BLOCK_K)):";
    assert!(src.contains(header));
    let mut prologue_loads = vec![];
    for stages in [2, 3] {
        let src = src.replace(
            header,
            &format!("for _ in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages={stages}):"),
        );
        let case = matmul_case(&src, 19, (40, 24, 70), [2, 1, 1]);
        let tk = to_thread_ir(&case.spec.kernel, &ExpandOptions::wgsl(4))
            .unwrap_or_else(|e| panic!("{e}"));
        let top = |s: &Stmt| {
            matches!(
                s,
                Stmt::Assign {
                    expr: Expr::Load { .. },
                    ..
                }
            )
        };
        prologue_loads.push(tk.body.iter().filter(|s| top(s)).count());
        let got = case.simulate(&tk).unwrap_or_else(|e| panic!("{e}"));
        compare(&got, &case.want, 1e-5).unwrap_or_else(|e| panic!("{stages} stages: {e}"));
    }
    assert!(prologue_loads[0] > 0);
    assert_eq!(
        prologue_loads[1],
        2 * prologue_loads[0],
        "loads before the loop"
    );
}

/// The cooperative-matrix dot with Metal's fragments (8x8, f32 inputs into f32: exact
/// f32 products summed per 8-wide step), at every warp count: what the portability
/// checks translate to MSL, run here on the simulator against the interpreter.
#[test]
fn coop_fragments_of_8x8_with_f32_inputs() {
    use tilewise_core::lower::expand::CoopConfig;
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let case = matmul_case(src, 23, (40, 56, 70), [2, 2, 1]);
    for nw in [1, 2, 4, 8] {
        let options = ExpandOptions {
            coop_matrix: vec![CoopConfig {
                size: 8,
                input: DType::F32,
                acc: DType::F32,
            }],
            ..ExpandOptions::wgsl(nw)
        };
        let tk = to_thread_ir(&case.spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            count(&tk.body, &|s| matches!(s, Stmt::CoopMulAdd { .. })) > 0,
            "no fragments at {nw} warps"
        );
        let got = case
            .simulate(&tk)
            .unwrap_or_else(|e| panic!("{nw} warps: {e}"));
        compare(&got, &case.want, 1e-5).unwrap_or_else(|e| panic!("{nw} warps: {e}"));
    }
}

/// The warpgroup (`wgmma`) lowering of a pipelined f16 matmul (tutorial 03's kernel,
/// two warpgroups): its accumulators stay in flight across iterations (`wgmma_wait 1`)
/// and the simulator agrees with the interpreter; each ordering the hardware needs,
/// taken out, is reported: the wait after the loop, the wait that frees a slot before
/// its refill, the barrier after it (each warpgroup waits for its own groups only:
/// the H200 computed wrong products without it), the wgmma fence, the loop's
/// barriers, and (for an operand stored from registers) the proxy fence.
#[test]
fn wgmma_lowering_needs_its_waits_and_fences() {
    let twice_src = include_str!("../../shaders/matmul.py").replace(
        "accumulator = tl.dot(a, b, accumulator)",
        "accumulator = tl.dot(a * 2, b, accumulator)",
    );
    let (m, n, k) = (150usize, 64usize, 128usize);
    let mut r = Rng(41);
    let a = rand(&mut r, m * k);
    let b = rand(&mut r, k * n);
    let args = || {
        let mut v = vec![
            A::F16(a.clone()),
            A::F16(b.clone()),
            A::F32(vec![f32::NAN; m * n]),
        ];
        for x in [m, n, k, k, 1, n, 1, n, 1] {
            v.push(A::I32(x as i32));
        }
        v
    };
    let grid = Grid([(m as u32).div_ceil(128) * (n as u32).div_ceil(32), 1, 1]);
    fn edit(body: &mut Vec<Stmt>, f: &mut impl FnMut(&mut Stmt) -> bool) {
        body.retain_mut(|s| f(s));
        for s in body.iter_mut() {
            for b in s.bodies_mut() {
                edit(b, f);
            }
        }
    }
    fn waits(body: &[Stmt], out: &mut Vec<u32>) {
        for s in body {
            if let Stmt::WgmmaWait { pending } = s {
                out.push(*pending);
            }
            for inner in s.bodies() {
                waits(inner, out);
            }
        }
    }
    // The lowering of `src`, checked against the interpreter, and a runner of edited
    // copies that returns the simulator's error.
    let variant = |src: &str, ring_budget: Option<u32>| {
        let blocks = [
            ("BLOCK_SIZE_M", 128),
            ("BLOCK_SIZE_N", 32),
            ("BLOCK_SIZE_K", 32),
            ("GROUP_SIZE_M", 8),
        ];
        let (spec, buffers, rt) = setup(src, "matmul_kernel", &args(), &blocks);
        let mut want = buffers.clone();
        interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let base = ExpandOptions::ptx(8);
        let options = ExpandOptions {
            wgmma: true,
            ring_budget: ring_budget.unwrap_or(base.ring_budget),
            ..base
        };
        let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            tk.notes.iter().any(|n| n.contains("2x1 warpgroup tiles")),
            "{:?}",
            tk.notes
        );
        let mut got = buffers.clone();
        simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{e}"));
        compare(&got, &want, 1e-5).unwrap_or_else(|e| panic!("wgmma: {e}"));
        move |what: &str, f: &mut dyn FnMut(&mut Stmt) -> bool| -> (Vec<u32>, String) {
            let mut b = tk.clone();
            edit(&mut b.body, &mut |s| f(s));
            let mut w = vec![];
            waits(&tk.body, &mut w);
            let mut got = buffers.clone();
            let e = match simulate(&b, grid, &rt, &mut got) {
                Ok(()) => panic!("runs without {what}"),
                Err(e) => e.to_string(),
            };
            (w, e)
        }
    };
    // With a ring slot to spare (the default budget), no barrier follows the wait.
    let broken = variant(include_str!("../../shaders/matmul.py"), None);
    let (w, e) = broken("the wait after the loop", &mut |s| {
        !matches!(s, Stmt::WgmmaWait { pending: 0 })
    });
    assert_eq!(w, vec![1, 0], "in place: one group in flight");
    assert!(e.contains("in flight (no wgmma_wait)"), "{e}");
    let (_, e) = broken("the wait freeing the slot", &mut |s| {
        if let Stmt::WgmmaWait { pending } = s {
            *pending += 1;
        }
        true
    });
    assert!(
        e.contains("written while a wgmma reading it is in flight")
            || e.contains("read since the last barrier"),
        "{e}"
    );
    // Three slots of (128 + 32) x 32 halves and no more: the copies refill the slot
    // the previous iteration read, after a barrier that follows the wait.
    let tight = variant(
        include_str!("../../shaders/matmul.py"),
        Some(3 * 160 * 32 * 2 + 1024),
    );
    let mut after_wait = false;
    let (_, e) = tight("the barrier after the wait", &mut |s| {
        let drop = after_wait && matches!(s, Stmt::Barrier);
        after_wait = matches!(s, Stmt::WgmmaWait { pending: 1 });
        !drop
    });
    assert!(
        e.contains("copies into") && e.contains("read since the last barrier"),
        "{e}"
    );
    let (_, e) = broken("the wgmma fence", &mut |s| !matches!(s, Stmt::WgmmaFence));
    assert!(e.contains("wgmma_fence"), "{e}");
    let (_, e) = broken("barriers", &mut |s| !matches!(s, Stmt::Barrier));
    assert!(e.contains("race"), "{e}");
    let stored = variant(&twice_src, None);
    let (_, e) = stored("the proxy fence", &mut |s| {
        !matches!(s, Stmt::FenceProxyAsync)
    });
    assert!(e.contains("fence_proxy_async"), "{e}");
}

/// The arguments of a row-major `m x k` by `k x n` matmul (tutorial 03's and the
/// block-pointer kernel's order) with inputs exact in tf32 (the top 19 bits), so that
/// only the order of the f32 sums differs from the interpreter's, and a poisoned output.
fn tf32_matmul_args(r: &mut Rng, (m, n, k): (usize, usize, usize)) -> Vec<A> {
    let tf32 = |v: Vec<f32>| -> Vec<f32> {
        v.into_iter()
            .map(|x| f32::from_bits(x.to_bits() & 0xffff_e000))
            .collect()
    };
    let mut args = vec![
        A::F32(tf32(rand(r, m * k))),
        A::F32(tf32(rand(r, k * n))),
        A::F32(vec![f32::NAN; m * n]),
    ];
    for x in [m, n, k, k, 1, n, 1, n, 1] {
        args.push(A::I32(x as i32));
    }
    args
}

/// tf32 on warpgroup MMA (`ExpandOptions::wgmma_tf32`): `b` stored K-major in the
/// swizzled layout (through registers, 16-byte chunks of its stored rows),
/// `m64nNk8.tf32` steps; the simulator agrees with the interpreter within tf32's
/// rounding, for one and two warpgroups.
#[test]
fn wgmma_tf32_reads_b_k_major() {
    let src = include_str!("../../shaders/matmul.py");
    // Nine K steps and a ragged last one: every held tile of the ring is stored.
    let (m, n, k) = (150usize, 300usize, 280usize);
    let mut r = Rng(43);
    let args = tf32_matmul_args(&mut r, (m, n, k));
    // Rings of 2 stages store each tile where it is loaded; from 3 on, a tile is held
    // in registers and stored by the ring's next load (the default here: 5), or by the
    // one after where it is 16 registers a thread and the ring has 4 or more stages.
    // Tiles below 128x256 keep `mma.sync` (the last case).
    for (bm, bn, warps, stages) in [
        (128, 256, 4, None),
        (256, 128, 8, None),
        (128, 256, 8, Some(2)),
        (256, 128, 8, Some(3)),
        (256, 128, 8, Some(4)),
        (128, 128, 8, None),
    ] {
        let blocks = [
            ("BLOCK_SIZE_M", bm),
            ("BLOCK_SIZE_N", bn),
            ("BLOCK_SIZE_K", 32),
            ("GROUP_SIZE_M", 8),
        ];
        let (spec, buffers, rt) = setup(src, "matmul_kernel", &args, &blocks);
        let grid = Grid([
            (m as u32).div_ceil(bm as u32) * (n as u32).div_ceil(bn as u32),
            1,
            1,
        ]);
        let mut want = buffers.clone();
        interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let options = ExpandOptions {
            wgmma: true,
            wgmma_tf32: true,
            num_stages: stages,
            // The H200's (four 48 KiB stages of the 256x128 tile).
            ring_budget: 204 * 1024,
            ..ExpandOptions::ptx(warps)
        };
        let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        let on_wgmma = tk
            .notes
            .iter()
            .any(|n| n.contains("k8.tf32") && n.contains("b K-major"));
        assert_eq!(on_wgmma, bm * bn >= 128 * 256, "{:?}", tk.notes);
        if !on_wgmma {
            continue;
        }
        if stages == Some(4) {
            // Four stages, three loads ahead: the tile is held two loads.
            assert!(
                tk.notes.iter().any(|n| n.contains("ring of 4 stages")),
                "{:?}",
                tk.notes
            );
        }
        // `b` (row-major in memory) reaches its K-major slots through registers, each
        // thread storing 16-byte chunks of stored rows, not by a copy an element.
        let text = tilewise_core::thread_ir::print(&tk);
        let ring_b = tk
            .shared
            .iter()
            .position(|a| a.name.ends_with("_b"))
            .expect("a ring for b");
        assert!(
            !text.contains(&format!("async_copy x1 s{ring_b}[")),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("store s{ring_b}[")))
                && text.contains("vec4<f32> = vector("),
            "{text}"
        );
        // A held tile is stored before the next tile's loads are issued (issuing them
        // first keeps both tiles live: the H200 ran the 256x128x32 product 25% slower,
        // BENCHMARKS.md run 66).
        if stages != Some(2) {
            let body = collect(&tk.body, &|s| match s {
                Stmt::For { body, .. } => Some(body.clone()),
                _ => None,
            });
            let body = body.last().expect("the K loop");
            let order = collect(body, &|s| match s {
                Stmt::SharedStore { arr, .. } if *arr as usize == ring_b => Some(true),
                Stmt::Assign {
                    expr: Expr::Load { buf: 1, .. },
                    ..
                } => Some(false),
                _ => None,
            });
            assert_eq!(
                order.first(),
                Some(&true),
                "{bm}x{bn}, {stages:?} stages: the held tile's store follows the next tile's loads"
            );
        }
        let mut got = buffers.clone();
        simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{e}"));
        compare(&got, &want, 1e-5)
            .unwrap_or_else(|e| panic!("tf32 wgmma ({warps} warps, {stages:?} stages): {e}"));
    }
}

/// tf32 on warpgroup MMA as `C^T = B^T A^T` (`ExpandOptions::wgmma_register_a`): `b`
/// stays row-major in its ring and each warpgroup reads its columns into registers as
/// the instruction's `a`, `a` is the instruction's `b` (K-major); the simulator, which
/// reads register fragments by the PTX ISA's layout and reports `a` registers written
/// while their `wgmma` is in flight, agrees with the interpreter, for tiles the held
/// form refuses too (64 and 16 rows).
#[test]
fn wgmma_tf32_swapped_reads_b_from_registers() {
    let src = include_str!("../../shaders/matmul.py");
    let (m, n, k) = (150usize, 300usize, 280usize);
    let mut r = Rng(47);
    let args = tf32_matmul_args(&mut r, (m, n, k));
    for (bm, bn, bk, warps, stages) in [
        (256, 128, 32, 8, None),
        (128, 256, 32, 8, Some(3)),
        (128, 256, 32, 4, None),
        (64, 64, 32, 4, Some(2)),
        (16, 64, 64, 4, None),
        (128, 128, 32, 8, None),
        (64, 64, 8, 4, None),
    ] {
        let blocks = [
            ("BLOCK_SIZE_M", bm),
            ("BLOCK_SIZE_N", bn),
            ("BLOCK_SIZE_K", bk),
            ("GROUP_SIZE_M", 8),
        ];
        let (spec, buffers, rt) = setup(src, "matmul_kernel", &args, &blocks);
        let grid = Grid([
            (m as u32).div_ceil(bm as u32) * (n as u32).div_ceil(bn as u32),
            1,
            1,
        ]);
        let mut want = buffers.clone();
        interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let options = ExpandOptions {
            wgmma: true,
            wgmma_tf32: true,
            wgmma_register_a: true,
            num_stages: stages,
            ring_budget: 204 * 1024,
            ..ExpandOptions::ptx(warps)
        };
        let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            tk.notes
                .iter()
                .any(|n| n.contains("k8.tf32") && n.contains("C^T = B^T A^T")),
            "{bm}x{bn}x{bk}/{warps}: {:?}",
            tk.notes
        );
        let text = tilewise_core::thread_ir::print(&tk);
        assert!(
            text.lines()
                .any(|l| l.contains("wgmma m64n") && l.contains("+= {")),
            "{text}"
        );
        let mut got = buffers.clone();
        simulate(&tk, grid, &rt, &mut got)
            .unwrap_or_else(|e| panic!("{bm}x{bn}x{bk}/{warps}: {e}"));
        compare(&got, &want, 1e-5).unwrap_or_else(|e| {
            panic!("swapped tf32 wgmma {bm}x{bn}x{bk} ({warps} warps, {stages:?} stages): {e}")
        });
    }
}

/// The swapped tf32 form with block pointers and TMA: `a` (64 rows or more) is copied
/// by the tensor memory accelerator into its K-major ring, `b` by `cp.async` into its
/// padded one; 16-row tiles keep `cp.async` for both. The simulator agrees with the
/// interpreter on ragged sizes.
#[test]
fn wgmma_tf32_swapped_with_tma() {
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let (m, n, k) = (150usize, 304usize, 208usize);
    let mut r = Rng(53);
    let args = tf32_matmul_args(&mut r, (m, n, k));
    for (bm, bn, bk, warps, tma_copies) in
        [(256, 128, 32, 8, 1), (64, 64, 32, 4, 1), (16, 64, 64, 4, 0)]
    {
        let blocks = [("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)];
        let (spec, buffers, rt) = setup(src, "matmul_block_ptr_kernel", &args, &blocks);
        let grid = Grid([
            (m as u32).div_ceil(bm as u32),
            (n as u32).div_ceil(bn as u32),
            1,
        ]);
        let mut want = buffers.clone();
        interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let options = ExpandOptions {
            wgmma: true,
            wgmma_tf32: true,
            wgmma_register_a: true,
            tma: true,
            ring_budget: 204 * 1024,
            ..ExpandOptions::ptx(warps)
        };
        let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
        let notes = &tk.notes;
        assert!(
            notes.iter().any(|n| n.contains("C^T = B^T A^T")),
            "{bm}x{bn}x{bk}: {notes:?}"
        );
        assert_eq!(
            notes
                .iter()
                .filter(|n| n.contains("tensor memory accelerator"))
                .count(),
            tma_copies,
            "{bm}x{bn}x{bk}: {notes:?}"
        );
        let mut got = buffers.clone();
        simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{bm}x{bn}x{bk}: {e}"));
        compare(&got, &want, 1e-5)
            .unwrap_or_else(|e| panic!("swapped tf32 with TMA {bm}x{bn}x{bk}: {e}"));
    }
}

/// A persistent block-pointer matmul: each program walks tiles `pid, pid + programs,
/// ...`, one K loop a tile, so a staged ring is filled again from its first slot for
/// every tile (TMA rings: their barriers initialised again, after the previous tile's
/// copies were all waited for).
const PERSISTENT_BLOCK_PTR_MATMUL: &str = r#"
import triton
import triton.language as tl

@triton.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    tiles_n = tl.cdiv(N, BLOCK_N)
    tiles = tl.cdiv(M, BLOCK_M) * tiles_n
    for tile in range(tl.program_id(0), tiles, tl.num_programs(0)):
        pm = tile // tiles_n
        pn = tile % tiles_n
        a = tl.make_block_ptr(a_ptr, (M, K), (stride_am, 1), (pm * BLOCK_M, 0),
                              (BLOCK_M, BLOCK_K), (1, 0))
        b = tl.make_block_ptr(b_ptr, (K, N), (stride_bk, 1), (0, pn * BLOCK_N),
                              (BLOCK_K, BLOCK_N), (1, 0))
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(0, tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(tl.load(a, boundary_check=(0, 1)), tl.load(b, boundary_check=(0, 1)), acc)
            a = tl.advance(a, (0, BLOCK_K))
            b = tl.advance(b, (BLOCK_K, 0))
        c = tl.make_block_ptr(c_ptr, (M, N), (stride_cm, 1), (pm * BLOCK_M, pn * BLOCK_N),
                              (BLOCK_M, BLOCK_N), (1, 0))
        tl.store(c, acc, boundary_check=(0, 1))
"#;

/// Block-pointer operands of a warpgroup dot are copied by the tensor memory
/// accelerator where the specialization allows it (`ExpandOptions::tma`): boxes of the
/// swizzled blocks, a transaction barrier a slot, ragged edges zero-filled by the
/// hardware (here the simulator's model of it, which lays boxes out as the PTX ISA
/// draws the swizzles). Checked against the interpreter for rings of 2 to 4 stages,
/// one and two warpgroups, and a persistent kernel; the waits, the barrier after the
/// initialisation and the announced bytes are each needed (the simulation fails
/// without them).
#[test]
fn tma_copies_block_pointer_operands() {
    // Ragged M, N and K; K and N multiples of 8 elements, so the rows of `a` and `b`
    // are 16-byte aligned (and the specialization knows it: multiples of 16).
    let (m, n, k) = (150usize, 304usize, 208usize);
    let mut r = Rng(47);
    let a = rand(&mut r, m * k);
    let b = rand(&mut r, k * n);
    let plain =
        |src: &str, name: &str, blocks: &[(&str, i64)], grid: Grid, options: ExpandOptions| {
            let mut args = vec![
                A::F16(a.clone()),
                A::F16(b.clone()),
                A::F32(vec![f32::NAN; m * n]),
            ];
            let strides: &[usize] = if name == "persistent_matmul" {
                &[m, n, k, k, n, n]
            } else {
                &[m, n, k, k, 1, n, 1, n, 1]
            };
            args.extend(strides.iter().map(|&x| A::I32(x as i32)));
            let (spec, buffers, rt) = setup(src, name, &args, blocks);
            let mut want = buffers.clone();
            interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
                .unwrap_or_else(|e| panic!("{e}"));
            let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
            let text = tilewise_core::thread_ir::print(&tk);
            assert!(
                tk.notes
                    .iter()
                    .filter(|n| n.contains("tensor memory accelerator"))
                    .count()
                    == 2,
                "{:?}",
                tk.notes
            );
            let mut got = buffers.clone();
            simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{e}\n{text}"));
            compare(&got, &want, 1e-5).unwrap_or_else(|e| panic!("TMA {blocks:?}: {e}"));
            (tk, buffers, rt)
        };
    let src = include_str!("../../shaders/matmul_block_ptr.py");
    let tma = |warps: u32, stages: Option<u32>| ExpandOptions {
        wgmma: true,
        tma: true,
        num_stages: stages,
        ring_budget: 204 * 1024,
        ..ExpandOptions::ptx(warps)
    };
    let mut kept = None;
    for (bm, bn, bk, warps, stages) in [
        (128, 256, 64, 8, None),
        (128, 128, 64, 8, Some(2)),
        (64, 128, 32, 4, Some(4)),
        (128, 64, 64, 4, Some(3)),
    ] {
        let blocks = [("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)];
        let grid = Grid([
            (m as u32).div_ceil(bm as u32),
            (n as u32).div_ceil(bn as u32),
            1,
        ]);
        let out = plain(
            src,
            "matmul_block_ptr_kernel",
            &blocks,
            grid,
            tma(warps, stages),
        );
        if kept.is_none() {
            kept = Some((out, grid));
        }
    }
    // Persistent: fewer programs than tiles, each running the K loop several times.
    let blocks = [("BLOCK_M", 64), ("BLOCK_N", 128), ("BLOCK_K", 64)];
    plain(
        PERSISTENT_BLOCK_PTR_MATMUL,
        "persistent_matmul",
        &blocks,
        Grid([2, 1, 1]),
        tma(4, Some(3)),
    );

    // Each piece of the protocol is needed.
    let ((tk, buffers, rt), grid) = kept.expect("a kernel");
    let broken = |what: &str, f: &mut dyn FnMut(&mut Stmt) -> bool| -> String {
        fn edit(body: &mut Vec<Stmt>, f: &mut dyn FnMut(&mut Stmt) -> bool) {
            body.retain_mut(|s| f(s));
            for s in body.iter_mut() {
                for b in s.bodies_mut() {
                    edit(b, f);
                }
            }
        }
        let mut b = tk.clone();
        edit(&mut b.body, f);
        let mut got = buffers.clone();
        match simulate(&b, grid, &rt, &mut got) {
            Ok(()) => panic!("runs without {what}"),
            Err(e) => e.to_string(),
        }
    };
    let e = broken("the waits", &mut |s| {
        !matches!(s, Stmt::MbarrierWait { .. })
    });
    assert!(e.contains("in flight") || e.contains("pending"), "{e}");
    let mut after_init = false;
    let e = broken("the barrier after the initialisation", &mut |s| {
        let drop = after_init && matches!(s, Stmt::Barrier);
        after_init = matches!(s, Stmt::If { then_body, .. }
            if matches!(then_body.first(), Some(Stmt::MbarrierInit { .. })));
        !drop
    });
    assert!(e.contains("race"), "{e}");
    let e = broken("the announced bytes", &mut |s| {
        if let Stmt::MbarrierArriveTx { bytes, .. } = s {
            *bytes /= 2;
        }
        true
    });
    assert!(e.contains("announced"), "{e}");
}

/// A TMA ring never takes over memory that ordinary stores wrote (here an f16 scan's
/// scratch, before the loop): the copies write through the asynchronous proxy, which is
/// not ordered after those stores without a proxy fence. Found by the fuzzer (seed
/// 1410): `shared_reuse` had merged the two, and `wgmma` read memory written since the
/// last `fence_proxy_async`.
#[test]
fn tma_rings_share_memory_only_with_tma_rings() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def k(x, a_ptr, b_ptr, out, y, M, K, N):
    v = tl.cumsum(tl.load(x + tl.arange(0, 512)), axis=0).to(tl.float32)
    acc = tl.zeros((64, 16), dtype=tl.float32)
    for i in tl.range(0, 2, num_stages=3):
        a = tl.load(tl.make_block_ptr(a_ptr, (M, K), (64, 1), (0, i * 32), (64, 32), (1, 0)), boundary_check=(0, 1))
        b = tl.load(tl.make_block_ptr(b_ptr, (K, N), (16, 1), (i * 32, 0), (32, 16), (1, 0)), boundary_check=(0, 1))
        acc = tl.dot(a, b, acc)
    tl.store(out + tl.arange(0, 64)[:, None] * 16 + tl.arange(0, 16)[None, :], acc)
    tl.store(y + tl.arange(0, 512), v)
"#;
    let mut r = Rng(53);
    let (m, k, n) = (50usize, 64usize, 16usize);
    // Small integers: the f16 scan is exact in any order.
    let x: Vec<f32> = (0..512).map(|i| (i % 3) as f32 - 1.0).collect();
    let args = vec![
        A::F16(x),
        A::F16(rand(&mut r, m * k)),
        A::F16(rand(&mut r, k * n)),
        A::F32(vec![f32::NAN; 64 * 16]),
        A::F32(vec![f32::NAN; 512]),
        A::I32(m as i32),
        A::I32(k as i32),
        A::I32(n as i32),
    ];
    let (spec, buffers, rt) = setup(src, "k", &args, &[]);
    let grid = Grid([1, 1, 1]);
    let mut want = buffers.clone();
    interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let options = ExpandOptions {
        wgmma: true,
        tma: true,
        ..ExpandOptions::ptx(4)
    };
    let tk = to_thread_ir(&spec.kernel, &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        tk.notes
            .iter()
            .any(|n| n.contains("tensor memory accelerator")),
        "{:?}",
        tk.notes
    );
    for a in &tk.shared {
        if a.name.contains("ring") {
            assert!(
                a.name.split('+').all(|m| m.contains("ring")),
                "a TMA ring shares memory with `{}`",
                a.name
            );
        }
    }
    let mut got = buffers.clone();
    simulate(&tk, grid, &rt, &mut got)
        .unwrap_or_else(|e| panic!("{e}\n{}", tilewise_core::thread_ir::print(&tk)));
    compare(&got, &want, 2e-2).unwrap_or_else(|e| panic!("{e}"));
}

/// A branch on a warp reduction's result may hold a warp shuffle: after the butterfly
/// every thread of the warp holds the result (`Expr::WarpUniform` says so), so the
/// verifier accepts the shuffle inside, and the simulator checks the claim. With one
/// warp, no shared-memory step follows the butterfly; before the marker the verifier
/// (which runs after every pass in debug builds) rejected the kernel as "a warp shuffle
/// sits in control flow that every thread of a warp does not take together".
#[test]
fn branches_on_a_warp_reduction_may_reduce_again() {
    let src = "import triton
import triton.language as tl

@triton.jit
def k(X, Out, n):
    offs = tl.arange(0, 64)
    x = tl.load(X + offs)
    s = tl.sum(x, axis=0)
    if s > 0.0:
        s = s + tl.max(x, axis=0)
    for i in range(n):
        if s > 1.0:
            s = s * 0.5 + tl.min(x, axis=0)
    tl.store(Out, s)
";
    let mut r = Rng(0x5eed);
    let args = vec![A::F32(rand(&mut r, 64)), A::F32(vec![f32::NAN]), A::I32(3)];
    let (spec, buffers, rt) = setup(src, "k", &args, &[]);
    let grid = Grid([1, 1, 1]);
    let mut want = buffers.clone();
    interp::run(&spec.kernel, grid, &rt, &mut want, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = ExpandOptions::ptx(1);
    let tk = to_thread_ir(&spec.kernel, &opts).unwrap_or_else(|e| panic!("{e}"));
    tilewise_core::thread_ir::verify::verify(&tk, &opts, "test")
        .unwrap_or_else(|e| panic!("{e}\n{}", tilewise_core::thread_ir::print(&tk)));
    let marked = count(&tk.body, &|s| {
        matches!(
            s,
            Stmt::Assign {
                expr: Expr::WarpUniform(_),
                ..
            }
        )
    });
    assert!(marked >= 3, "{marked} warp-uniform results");
    let mut got = buffers.clone();
    simulate(&tk, grid, &rt, &mut got).unwrap_or_else(|e| panic!("{e}"));
    compare(&got, &want, 1e-6).unwrap_or_else(|e| panic!("{e}"));
}
