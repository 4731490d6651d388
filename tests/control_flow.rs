//! Model-based tests of control flow: generated kernels of nested `if`, `for` and
//! `while` statements over four scalar variables and one tile, run on the interpreter,
//! on the simulators of the WGSL and PTX lowerings and on the GPUs found (wgpu, CUDA;
//! each says on stderr when it is absent), against a Rust model of what
//! the Python source means.
//!
//! The interpreter shares the front end with every backend, so the differential fuzzer
//! (which compares backends with the interpreter) cannot see a front-end mistake: which
//! names a loop carries, which an `if` yields, when a `while` condition is evaluated,
//! constexpr conditions folded against runtime ones. Here the reference is independent.
//!
//! The programs stay where Python's integers and Triton's `i32` agree: every computed
//! assignment is masked (`& 255`, exact on the low bits whatever wrapped before), sums
//! stay far from 2^31, and there is no division (where constexprs follow Python and
//! tensors follow C).

mod common;

use common::{cuda_device, filled, module, ok, wgpu_device};
use proptest::prelude::*;
use tilewise::Device;

/// Scalar variables `v0..v3`.
const VARS: usize = 4;
/// Elements of the tile variable `t`.
const TILE: usize = 8;
/// Statements nest at most this deep.
const MAX_DEPTH: u32 = 3;

/// An operand: a variable, a small literal, an enclosing loop's counter, or `n`.
#[derive(Clone, Debug)]
enum Leaf {
    Var(usize),
    Const(i64),
    /// The enclosing loops' counters, innermost last; `k` modulo their number (the
    /// literal 1 outside loops).
    Counter(usize),
    N,
    /// The constexpr parameter `C`.
    C,
}

#[derive(Clone, Copy, Debug)]
enum BinOp {
    Add,
    Sub,
    Mul,
    And,
    Xor,
}

#[derive(Clone, Debug)]
enum Expr {
    Leaf(Leaf),
    Bin(Box<Expr>, BinOp, Box<Expr>),
    /// `(a if cond else b)`
    Select(Box<Cond>, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug)]
enum CmpOp {
    Lt,
    Le,
    Eq,
    Ne,
    Gt,
    Ge,
}

#[derive(Clone, Debug)]
enum Cond {
    Cmp(Expr, CmpOp, Expr),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// A loop bound: a literal, `n`, or an expression masked to 0..=7.
#[derive(Clone, Debug)]
enum Bound {
    Const(i64),
    N,
    Masked(Expr),
}

#[derive(Clone, Debug)]
enum Stmt {
    /// `v{d} = leaf`, or `v{d} = (expr) & 255`
    Assign(usize, Expr),
    /// `v{d} += leaf` (not a variable: sums stay small)
    AddTo(usize, Leaf),
    If(Cond, Vec<Stmt>, Vec<Stmt>),
    /// `for c in range(lo, hi, step)` (or `tl.range`, or `tl.static_range` over
    /// literal bounds)
    For(Loop, Bound, Bound, i64, Vec<Stmt>),
    /// `c = 0` / `while c < bound [and cond]:` body / `c += 1`
    While(Bound, Option<Cond>, Vec<Stmt>),
    /// `t = (t + expr) & 255`
    TileAdd(Expr),
    /// `t = tl.where(offs < ((expr) & 7), (t * 3 + 1) & 255, t)`
    TileWhere(Expr),
    /// `v{d} = tl.sum(t, axis=0) & 255`
    TileSum(usize),
}

/// Which `range` a `for` loop iterates over.
#[derive(Clone, Copy, Debug)]
enum Loop {
    Range,
    TlRange,
    /// Unrolled by the front end; literal bounds only.
    StaticRange,
}

/// A variable's initial value: a literal (several equal, so that a first trip can leave
/// a value unchanged) or `n` minus a literal (a runtime value).
#[derive(Clone, Copy, Debug)]
enum Init {
    Literal(i64),
    NMinus(i64),
}

// ------------------------------------------------------------------ the model

/// The program's state as Python sees it.
struct State {
    v: [i64; VARS],
    t: [i64; TILE],
    n: i64,
    c: i64,
    /// Values of the enclosing loops' counters, innermost last.
    counters: Vec<i64>,
}

impl Leaf {
    fn eval(&self, s: &State) -> i64 {
        match *self {
            Leaf::Var(k) => s.v[k],
            Leaf::Const(c) => c,
            Leaf::Counter(k) if s.counters.is_empty() => {
                let _ = k;
                1
            }
            Leaf::Counter(k) => s.counters[k % s.counters.len()],
            Leaf::N => s.n,
            Leaf::C => s.c,
        }
    }

    fn python(&self, counters: &[String]) -> String {
        match *self {
            Leaf::Var(k) => format!("v{k}"),
            Leaf::Const(c) if c < 0 => format!("({c})"),
            Leaf::Const(c) => format!("{c}"),
            Leaf::Counter(_) if counters.is_empty() => "1".into(),
            Leaf::Counter(k) => counters[k % counters.len()].clone(),
            Leaf::N => "n".into(),
            Leaf::C => "C".into(),
        }
    }
}

impl Expr {
    fn eval(&self, s: &State) -> i64 {
        match self {
            Expr::Leaf(l) => l.eval(s),
            Expr::Bin(a, op, b) => {
                let (a, b) = (a.eval(s), b.eval(s));
                match op {
                    BinOp::Add => a + b,
                    BinOp::Sub => a - b,
                    BinOp::Mul => a * b,
                    BinOp::And => a & b,
                    BinOp::Xor => a ^ b,
                }
            }
            Expr::Select(c, a, b) => {
                if c.eval(s) {
                    a.eval(s)
                } else {
                    b.eval(s)
                }
            }
        }
    }

    fn python(&self, counters: &[String]) -> String {
        match self {
            Expr::Leaf(l) => l.python(counters),
            Expr::Bin(a, op, b) => {
                let op = match op {
                    BinOp::Add => "+",
                    BinOp::Sub => "-",
                    BinOp::Mul => "*",
                    BinOp::And => "&",
                    BinOp::Xor => "^",
                };
                format!("({} {op} {})", a.python(counters), b.python(counters))
            }
            Expr::Select(c, a, b) => format!(
                "({} if {} else {})",
                a.python(counters),
                c.python(counters),
                b.python(counters)
            ),
        }
    }
}

impl Cond {
    fn eval(&self, s: &State) -> bool {
        match self {
            Cond::Cmp(a, op, b) => {
                let (a, b) = (a.eval(s), b.eval(s));
                match op {
                    CmpOp::Lt => a < b,
                    CmpOp::Le => a <= b,
                    CmpOp::Eq => a == b,
                    CmpOp::Ne => a != b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                }
            }
            Cond::And(a, b) => a.eval(s) && b.eval(s),
            Cond::Or(a, b) => a.eval(s) || b.eval(s),
            Cond::Not(a) => !a.eval(s),
        }
    }

    fn python(&self, counters: &[String]) -> String {
        match self {
            Cond::Cmp(a, op, b) => {
                let op = match op {
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Eq => "==",
                    CmpOp::Ne => "!=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                format!("({} {op} {})", a.python(counters), b.python(counters))
            }
            Cond::And(a, b) => format!("({} and {})", a.python(counters), b.python(counters)),
            Cond::Or(a, b) => format!("({} or {})", a.python(counters), b.python(counters)),
            Cond::Not(a) => format!("(not {})", a.python(counters)),
        }
    }
}

impl Bound {
    fn eval(&self, s: &State) -> i64 {
        match self {
            Bound::Const(c) => *c,
            Bound::N => s.n,
            Bound::Masked(e) => e.eval(s) & 7,
        }
    }

    fn python(&self, counters: &[String]) -> String {
        match self {
            Bound::Const(c) => format!("{c}"),
            Bound::N => "n".into(),
            Bound::Masked(e) => format!("({} & 7)", e.python(counters)),
        }
    }
}

/// Runs `body` on `s` as Python would.
fn run(body: &[Stmt], s: &mut State) {
    for st in body {
        match st {
            Stmt::Assign(d, Expr::Leaf(l)) => s.v[*d] = l.eval(s),
            Stmt::Assign(d, e) => s.v[*d] = e.eval(s) & 255,
            Stmt::AddTo(d, l) => s.v[*d] += l.eval(s),
            Stmt::If(c, then, els) => {
                if c.eval(s) {
                    run(then, s)
                } else {
                    run(els, s)
                }
            }
            Stmt::For(_, lo, hi, step, body) => {
                // Python's range: the bounds are evaluated once.
                let (mut i, hi) = (lo.eval(s), hi.eval(s));
                while (*step > 0 && i < hi) || (*step < 0 && i > hi) {
                    s.counters.push(i);
                    run(body, s);
                    s.counters.pop();
                    i += step;
                }
            }
            Stmt::While(bound, cond, body) => {
                // The condition is evaluated before every trip, on the current values.
                let mut c = 0;
                loop {
                    s.counters.push(c);
                    let go = c < bound.eval(s) && cond.as_ref().is_none_or(|x| x.eval(s));
                    if go {
                        run(body, s);
                    }
                    s.counters.pop();
                    if !go {
                        break;
                    }
                    c += 1;
                }
            }
            Stmt::TileAdd(e) => {
                let x = e.eval(s);
                s.t.iter_mut().for_each(|t| *t = (*t + x) & 255);
            }
            Stmt::TileWhere(e) => {
                let limit = e.eval(s) & 7;
                for (j, t) in s.t.iter_mut().enumerate() {
                    if (j as i64) < limit {
                        *t = (*t * 3 + 1) & 255;
                    }
                }
            }
            Stmt::TileSum(d) => s.v[*d] = s.t.iter().sum::<i64>() & 255,
        }
    }
}

// ------------------------------------------------------------------ the kernel

/// Writes `body` at `indent` spaces; `counters` names the enclosing loops' counters.
fn write_body(body: &[Stmt], indent: usize, counters: &mut Vec<String>, src: &mut String) {
    let pad = " ".repeat(indent);
    if body.is_empty() {
        src.push_str(&format!("{pad}pass\n"));
    }
    for st in body {
        match st {
            Stmt::Assign(d, e @ Expr::Leaf(_)) => {
                src.push_str(&format!("{pad}v{d} = {}\n", e.python(counters)))
            }
            Stmt::Assign(d, e) => {
                src.push_str(&format!("{pad}v{d} = {} & 255\n", e.python(counters)))
            }
            Stmt::AddTo(d, l) => src.push_str(&format!("{pad}v{d} += {}\n", l.python(counters))),
            Stmt::If(c, then, els) => {
                src.push_str(&format!("{pad}if {}:\n", c.python(counters)));
                write_body(then, indent + 4, counters, src);
                if !els.is_empty() {
                    src.push_str(&format!("{pad}else:\n"));
                    write_body(els, indent + 4, counters, src);
                }
            }
            Stmt::For(kind, lo, hi, step, body) => {
                let c = format!("i{}", counters.len());
                let range = match kind {
                    Loop::Range => "range",
                    Loop::TlRange => "tl.range",
                    Loop::StaticRange => "tl.static_range",
                };
                src.push_str(&format!(
                    "{pad}for {c} in {range}({}, {}, {step}):\n",
                    lo.python(counters),
                    hi.python(counters)
                ));
                counters.push(c);
                write_body(body, indent + 4, counters, src);
                counters.pop();
            }
            Stmt::While(bound, cond, body) => {
                let c = format!("w{}", counters.len());
                src.push_str(&format!("{pad}{c} = 0\n"));
                counters.push(c.clone());
                let extra = cond
                    .as_ref()
                    .map(|x| format!(" and {}", x.python(counters)))
                    .unwrap_or_default();
                src.push_str(&format!(
                    "{pad}while {c} < {}{extra}:\n",
                    bound.python(counters)
                ));
                write_body(body, indent + 4, counters, src);
                src.push_str(&format!("{pad}    {c} += 1\n"));
                counters.pop();
            }
            Stmt::TileAdd(e) => {
                src.push_str(&format!("{pad}t = (t + {}) & 255\n", e.python(counters)))
            }
            Stmt::TileWhere(e) => src.push_str(&format!(
                "{pad}t = tl.where(offs < ({} & 7), (t * 3 + 1) & 255, t)\n",
                e.python(counters)
            )),
            Stmt::TileSum(d) => src.push_str(&format!("{pad}v{d} = tl.sum(t, axis=0) & 255\n")),
        }
    }
}

/// The kernel: the variables' initial values, `t = offs * 3`, the body, and every
/// variable and the tile stored (`out[0..4]`, `out[4..12]`).
fn kernel_source(inits: &[Init; VARS], body: &[Stmt]) -> String {
    let mut src = String::from(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef flow(out_ptr, n, C: tl.constexpr):\n",
    );
    for (k, init) in inits.iter().enumerate() {
        match init {
            Init::Literal(c) => src.push_str(&format!("    v{k} = {c}\n")),
            Init::NMinus(c) => src.push_str(&format!("    v{k} = n - {c}\n")),
        }
    }
    src.push_str(&format!(
        "    offs = tl.arange(0, {TILE})\n    t = offs * 3\n"
    ));
    write_body(body, 4, &mut vec![], &mut src);
    for k in 0..VARS {
        src.push_str(&format!("    tl.store(out_ptr + {k}, v{k})\n"));
    }
    src.push_str(&format!("    tl.store(out_ptr + {VARS} + offs, t)\n"));
    src
}

/// What the kernel stores, by the model.
fn expected(inits: &[Init; VARS], body: &[Stmt], n: i64, c: i64) -> Vec<i32> {
    let mut s = State {
        v: inits.map(|i| match i {
            Init::Literal(c) => c,
            Init::NMinus(c) => n - c,
        }),
        t: std::array::from_fn(|j| 3 * j as i64),
        n,
        c,
        counters: vec![],
    };
    run(body, &mut s);
    s.v.iter().chain(&s.t).map(|&x| x as i32).collect()
}

// ------------------------------------------------------------------ generators

fn leaf() -> BoxedStrategy<Leaf> {
    prop_oneof![
        3 => (0..VARS).prop_map(Leaf::Var),
        2 => (-3i64..=3).prop_map(Leaf::Const),
        2 => (0usize..3).prop_map(Leaf::Counter),
        1 => Just(Leaf::N),
        1 => Just(Leaf::C),
    ]
    .boxed()
}

fn bin_op() -> BoxedStrategy<BinOp> {
    prop_oneof![
        Just(BinOp::Add),
        Just(BinOp::Sub),
        Just(BinOp::Mul),
        Just(BinOp::And),
        Just(BinOp::Xor),
    ]
    .boxed()
}

/// An expression of at most two levels of operators.
fn expr() -> BoxedStrategy<Expr> {
    let simple = prop_oneof![
        2 => leaf().prop_map(Expr::Leaf),
        3 => (leaf(), bin_op(), leaf()).prop_map(|(a, op, b)| {
            Expr::Bin(Box::new(Expr::Leaf(a)), op, Box::new(Expr::Leaf(b)))
        }),
    ];
    prop_oneof![
        6 => simple.clone(),
        2 => (simple.clone(), bin_op(), simple.clone())
            .prop_map(|(a, op, b)| Expr::Bin(Box::new(a), op, Box::new(b))),
        1 => (cond(), simple.clone(), simple)
            .prop_map(|(c, a, b)| Expr::Select(Box::new(c), Box::new(a), Box::new(b))),
    ]
    .boxed()
}

/// A comparison's operands stay at one operator (no products of products).
fn cmp_operand() -> BoxedStrategy<Expr> {
    prop_oneof![
        2 => leaf().prop_map(Expr::Leaf),
        1 => (leaf(), bin_op(), leaf()).prop_map(|(a, op, b)| {
            Expr::Bin(Box::new(Expr::Leaf(a)), op, Box::new(Expr::Leaf(b)))
        }),
    ]
    .boxed()
}

fn cond() -> BoxedStrategy<Cond> {
    let cmp_op = prop_oneof![
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge),
    ];
    let cmp = (cmp_operand(), cmp_op, cmp_operand()).prop_map(|(a, op, b)| Cond::Cmp(a, op, b));
    prop_oneof![
        4 => cmp.clone(),
        1 => (cmp.clone(), cmp.clone()).prop_map(|(a, b)| Cond::And(Box::new(a), Box::new(b))),
        1 => (cmp.clone(), cmp.clone()).prop_map(|(a, b)| Cond::Or(Box::new(a), Box::new(b))),
        1 => cmp.prop_map(|a| Cond::Not(Box::new(a))),
    ]
    .boxed()
}

fn bound() -> BoxedStrategy<Bound> {
    prop_oneof![
        2 => (-1i64..=4).prop_map(Bound::Const),
        1 => Just(Bound::N),
        3 => cmp_operand().prop_map(Bound::Masked),
    ]
    .boxed()
}

/// A statement list nesting at most `depth` more levels.
fn block(depth: u32) -> BoxedStrategy<Vec<Stmt>> {
    let simple = prop_oneof![
        4 => (0..VARS, expr()).prop_map(|(d, e)| Stmt::Assign(d, e)),
        2 => (0..VARS, leaf().prop_filter("no variable", |l| !matches!(l, Leaf::Var(_))))
            .prop_map(|(d, l)| Stmt::AddTo(d, l)),
        1 => expr().prop_map(Stmt::TileAdd),
        1 => expr().prop_map(Stmt::TileWhere),
        1 => (0..VARS).prop_map(Stmt::TileSum),
    ];
    if depth == 0 {
        return proptest::collection::vec(simple, 1..4).boxed();
    }
    let inner = block(depth - 1);
    let compound = prop_oneof![
        (cond(), inner.clone(), prop_oneof![Just(vec![]), inner.clone()])
            .prop_map(|(c, t, e)| Stmt::If(c, t, e)),
        (
            prop_oneof![3 => Just(Loop::Range), 1 => Just(Loop::TlRange), 1 => Just(Loop::StaticRange)],
            bound(),
            bound(),
            prop_oneof![3 => Just(1i64), 1 => Just(2), 1 => Just(-1)],
            inner.clone(),
        )
            .prop_map(|(kind, lo, hi, step, b)| {
                let literal = matches!((&lo, &hi), (Bound::Const(_), Bound::Const(_)));
                let kind = match kind {
                    Loop::StaticRange if !literal => Loop::Range,
                    k => k,
                };
                Stmt::For(kind, lo, hi, step, b)
            }),
        (bound(), proptest::option::of(cond()), inner)
            .prop_map(|(b, c, body)| Stmt::While(b, c, body)),
    ];
    proptest::collection::vec(prop_oneof![3 => simple, 2 => compound], 1..5).boxed()
}

fn init() -> BoxedStrategy<Init> {
    prop_oneof![
        3 => prop_oneof![Just(0i64), Just(1), -2i64..=3].prop_map(Init::Literal),
        1 => (0i64..=2).prop_map(Init::NMinus),
    ]
    .boxed()
}

/// Runs the generated kernel on `dev` and returns what it stored.
fn stored(dev: &Device, src: &str, n: i64, c: i64) -> Vec<i32> {
    let m = module("flow.py", src);
    let k = ok(m.kernel("flow"));
    let out = filled(dev, VARS + TILE, 0x5A5A_5A5Ai32);
    ok(k.launch(dev, 1)
        .arg(&out)
        .arg(n as i32)
        .constexpr("C", c)
        .num_warps(1)
        .run());
    ok(dev.download::<i32>(&out))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Nested `if` / `for` / `while` over scalars and a tile give Python's results
    /// on the interpreter, both lowerings' simulators and the GPUs found.
    #[test]
    fn nested_control_flow_follows_python(
        inits in proptest::array::uniform4(init()),
        body in block(MAX_DEPTH),
        n in 0i64..=5,
        c in 0i64..=3,
    ) {
        let src = kernel_source(&inits, &body);
        let want = expected(&inits, &body, n, c);
        let gpus = [("wgpu", wgpu_device()), ("CUDA", cuda_device())];
        let devices = [
            ("interpreter", Device::interpreter()),
            ("WGSL simulator", Device::simulator()),
            ("PTX simulator", Device::simulator_ptx()),
        ]
        .into_iter()
        .chain(gpus.into_iter().filter_map(|(name, d)| Some((name, d?))));
        for (name, dev) in devices {
            let got = stored(&dev, &src, n, c);
            prop_assert_eq!(&got[..], &want[..], "{} with n = {}, C = {}:\n{}", name, n, c, src);
        }
    }
}
