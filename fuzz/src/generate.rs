//! Random, well-typed programs: a seed in, a [`Program`] out, the same for the same
//! seed on every machine.
//!
//! The generator grows a kernel one action at a time (a load, an elementwise op, a
//! shape op, a reduction or scan, a `dot`, a loop or branch with carried tiles, an
//! atomic), proposing each new expression to [`infer`] and keeping it only if the
//! rules accept it, so every program it returns passes [`check`]. At the end it
//! stores some of the variables, each to an output of its own. One seed in eight
//! opens with a persistent matmul's loop nest (a loop over tiles whose body starts
//! with a K loop of `dot`s and whose update reads its accumulator), the shape the GPU
//! lowerings flatten into one loop; most of those compute the tile's place by division
//! first, and offset the K loop's loads by it. A load in a loop whose offsets advance
//! with the loop's index is written, two times in five, through a pointer tile made
//! before the loop and advanced at the end of each trip (`p += k`, as K loops carry
//! their pointers).

use crate::program::*;
use tilewise::DType;

/// splitmix64: small, fast, and the same everywhere.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as i64
    }
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

/// What programs may contain.
#[derive(Clone, Debug)]
pub struct Options {
    /// 64-bit integers (the WGSL backend rejects them, and says so).
    pub i64: bool,
    /// Top-level actions a program has, at most.
    pub max_actions: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            i64: true,
            max_actions: 14,
        }
    }
}

const FLOATS: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

struct Gen {
    rng: Rng,
    /// Choices added after the main stream was fixed (f32 block-pointer operands): drawn
    /// from their own stream, so that programs which never reach them stay as they were.
    side: Rng,
    /// Whether a shifted load is printed through a carried pointer tile: a stream of
    /// its own too.
    carry: Rng,
    /// Whether a dot in a loop reads `b` contiguous along K: its own stream.
    kmajor: Rng,
    /// Whether a dot in a loop reads `a` contiguous along M: its own stream.
    mmajor: Rng,
    /// Whether a dot with an accumulator is written `acc + tl.dot(a, b)` instead
    /// (folded back into the dot by the compiler).
    added: Rng,
    p: Program,
    opt: Options,
    /// Information of the variables visible now.
    info: Vec<Option<Info>>,
    /// The variables defined by a `tl.dot` without an accumulator (`rules::Product`).
    products: std::collections::HashMap<Var, crate::rules::Product>,
    /// Trip-count bounds of the enclosing loops, innermost last.
    loops: Vec<u32>,
    /// The loop-index variable of each enclosing loop.
    loop_vars: Vec<Var>,
    /// Statements of the blocks being built, innermost last.
    blocks: Vec<Vec<Stmt>>,
    /// Variables defined inside a loop or a branch: not stored, not reused outside.
    nested: usize,
    /// The first variable of the innermost loop body (0 outside loops): loops and
    /// branches reassign only variables from here on, or the enclosing loop would
    /// have to carry them too.
    floor: usize,
    /// The next outermost loop is a persistent matmul's loop over tiles (which the
    /// GPU lowerings flatten into one loop): it carries an f32 tile, its body opens
    /// with a `for` loop of `dot`s into an accumulator of that shape, and its update
    /// adds that accumulator; from the seed.
    persistent: bool,
    /// The next loop is that inner loop, with an f32 accumulator of this shape.
    force_matmul_loop: Option<[u32; 2]>,
    /// The accumulator of the last such inner loop, once it is made.
    forced_acc: Option<Var>,
    /// In a loop over tiles: the tile's place, a scalar its body computes from the
    /// tile index with divisions (as `_compute_pid` does), and the loop's trip bound.
    /// The K loop's loads then advance by `place * k_trips + k` instead of `k`, so the
    /// flattened loop carries the place and recomputes it when the tile changes.
    place: Option<(Var, u32)>,
    /// The trips a load's shift runs over, where that is not the innermost loop's.
    shift_trips: Option<u32>,
}

/// The program of `seed`.
pub fn generate(seed: u64, opt: &Options) -> Program {
    // A rejected attempt (rare: the rules refused every candidate for an action) moves
    // on to the next sub-seed, so the result is still a function of `seed`.
    for attempt in 0.. {
        let mut g = Gen {
            rng: Rng::new(seed.wrapping_mul(31).wrapping_add(attempt)),
            side: Rng::new((seed ^ 0x0B10_CF32).wrapping_mul(37).wrapping_add(attempt)),
            carry: Rng::new((seed ^ 0x5EED_CA22).wrapping_mul(41).wrapping_add(attempt)),
            kmajor: Rng::new((seed ^ 0x0C01_3A70).wrapping_mul(43).wrapping_add(attempt)),
            mmajor: Rng::new((seed ^ 0x0A11_3A70).wrapping_mul(47).wrapping_add(attempt)),
            added: Rng::new((seed ^ 0x0ADD_D070).wrapping_mul(53).wrapping_add(attempt)),
            p: Program {
                seed,
                num_warps: 4,
                grid: 1,
                inputs: vec![],
                outputs: vec![],
                scalars: vec![],
                body: vec![],
                num_vars: 0,
                // From the seed, not the stream: every other program stays as it was.
                addressed: seed % 8 == 5,
            },
            opt: opt.clone(),
            info: vec![],
            products: Default::default(),
            loops: vec![],
            loop_vars: vec![],
            blocks: vec![vec![]],
            nested: 0,
            floor: 0,
            persistent: seed % 8 == 3,
            force_matmul_loop: None,
            forced_acc: None,
            place: None,
            shift_trips: None,
        };
        if let Some(p) = g.program() {
            if check(&p).is_ok() {
                return p;
            }
        }
    }
    unreachable!()
}

impl Gen {
    fn program(&mut self) -> Option<Program> {
        self.p.num_warps = self.rng.pick(&[1, 2, 4, 4, 8]);
        self.p.grid = self.rng.pick(&[1, 1, 2, 3]);
        let n = 2 + self.rng.below(self.opt.max_actions.max(2) - 1);
        if self.persistent {
            self.looped(0);
        }
        for _ in 0..n {
            self.action(0);
        }
        self.stores();
        self.p.body = self.blocks.pop()?;
        self.p.num_vars = self.info.len();
        Some(self.p.clone())
    }

    // -- variables ------------------------------------------------------------------

    fn emit(&mut self, e: Expr) -> Option<Var> {
        let i = infer(&e, &self.info, &self.p, &self.products).ok()?;
        if i.numel() > 16384 {
            return None;
        }
        let v = self.info.len();
        if let Some(pr) = crate::rules::product_of(&e) {
            self.products.insert(v, pr);
        }
        self.info.push(Some(i));
        self.blocks.last_mut().expect("block").push(Stmt::Let(v, e));
        Some(v)
    }

    fn get(&self, v: Var) -> &Info {
        self.info[v].as_ref().expect("visible")
    }

    /// Visible variables whose information satisfies `f`.
    fn pool(&self, f: impl Fn(&Info) -> bool) -> Vec<Var> {
        (0..self.info.len())
            .filter(|&v| {
                self.info[v]
                    .as_ref()
                    .is_some_and(|i| i.err.is_finite() && f(i))
            })
            .collect()
    }

    fn choose(&mut self, f: impl Fn(&Info) -> bool) -> Option<Var> {
        let vs = self.pool(f);
        // Favour recent variables: chains of operations find more bugs.
        if vs.is_empty() {
            return None;
        }
        let k = vs.len();
        let i = if self.rng.chance(0.6) {
            k - 1 - self.rng.below(k.min(3))
        } else {
            self.rng.below(k)
        };
        Some(vs[i])
    }

    fn scalar_arg(&mut self, value: i32) -> usize {
        self.p.scalars.push(value);
        self.p.scalars.len() - 1
    }

    fn random_shape(&mut self) -> Vec<u32> {
        let rank = self.rng.pick(&[1, 1, 2, 2, 2, 3]);
        let budget = self.rng.pick(&[64u32, 256, 1024, 2048]);
        loop {
            let shape: Vec<u32> = (0..rank)
                .map(|_| 1 << self.rng.below(if rank == 1 { 8 } else { 7 }))
                .collect();
            let n: u32 = shape.iter().product();
            if n <= budget && n >= 2 {
                return shape;
            }
        }
    }

    fn random_dtype(&mut self) -> DType {
        match self.rng.below(10) {
            0..=3 => DType::F32,
            4 => DType::F16,
            5 => DType::BF16,
            6 | 7 => DType::I32,
            8 => DType::I8,
            _ if self.opt.i64 && self.rng.chance(0.5) => DType::I64,
            _ => DType::I1,
        }
    }

    // -- actions --------------------------------------------------------------------

    /// One step of the program: adds statements to the innermost block.
    fn action(&mut self, depth: usize) {
        for _ in 0..8 {
            let ok = match self.rng.below(22) {
                0..=2 => self.load(None, None).is_some(),
                3 => self.block_load(None, None).is_some(),
                4..=7 => self.elementwise().is_some(),
                8 => self.compare().is_some(),
                9 => self.cast().is_some(),
                10 | 11 => self.shape_op().is_some(),
                12..=14 => self.reduction().is_some(),
                15 => self.scan().is_some(),
                16 | 17 => self.dot(None).is_some(),
                18 | 19 if depth < 2 => self.looped(depth),
                20 if depth < 2 => self.branch(depth),
                21 => self.atomic().is_some(),
                _ => false,
            };
            if ok {
                return;
            }
        }
    }

    /// A pointer load of `shape` (random when None) and `dtype`.
    fn load(&mut self, shape: Option<Vec<u32>>, dtype: Option<DType>) -> Option<Var> {
        self.load_as(shape, dtype, false)
    }

    /// A pointer load; with `k_major`, of a dot's operand in a loop as `x @ w.T` reads
    /// `b` (or `x.T @ w` reads `a`): transposed (contiguous along its first dimension,
    /// K or M), advancing with the loop, masked-off elements zero (so the pipeline
    /// stages it).
    fn load_as(
        &mut self,
        shape: Option<Vec<u32>>,
        dtype: Option<DType>,
        k_major: bool,
    ) -> Option<Var> {
        let shape = shape.unwrap_or_else(|| self.random_shape());
        let dtype = dtype.unwrap_or_else(|| self.random_dtype());
        let numel: u32 = shape.iter().product();
        // Row-major, transposed, or rows padded to twice their length.
        let layout = if k_major { 0 } else { self.rng.below(4) };
        let strides = match layout {
            0 if shape.len() >= 2 => {
                let rev: Vec<u32> = shape.iter().rev().cloned().collect();
                let mut st = row_major(&rev);
                st.reverse();
                st
            }
            1 if shape.len() >= 2 => {
                let mut st = row_major(&shape);
                for s in st.iter_mut().take(shape.len() - 1) {
                    *s *= 2;
                }
                st
            }
            _ => row_major(&shape),
        };
        let reach: u32 = shape
            .iter()
            .zip(&strides)
            .map(|(&n, &s)| (n - 1) * s)
            .sum::<u32>()
            + 1;
        let span = reach;
        let shift = match (self.loop_vars.last(), k_major || self.rng.chance(0.7)) {
            (Some(&v), true) => Some((v, reach)),
            _ => None,
        };
        let bound = self.rng.range(0, numel as i64) as i32;
        let ragged = self.rng.chance(0.4).then(|| self.scalar_arg(bound));
        let trips = self
            .shift_trips
            .unwrap_or_else(|| self.loops.last().copied().unwrap_or(1).max(1));
        let len = (self.p.grid - 1) * span + reach + shift.map_or(0, |(_, k)| (trips - 1) * k);
        let input = self.input(dtype, len as usize);
        let nan_ok = self.rng.chance(0.2);
        let other = *[0.0, 1.0, -1.5, f64::NAN]
            .get(if dtype.is_float() {
                self.rng.below(4)
            } else {
                self.rng.below(2)
            })
            .unwrap_or(&0.0);
        let other = if (other.is_nan() && !nan_ok) || k_major {
            0.0
        } else {
            other
        };
        // On a stream of its own: the others draw the same programs as before.
        let carried = shift.is_some() && self.carry.chance(0.4);
        self.emit(Expr::Load {
            input,
            shape,
            access: Access {
                strides,
                span,
                shift,
                ragged,
                carried,
            },
            other,
        })
    }

    fn input(&mut self, dtype: DType, len: usize) -> usize {
        self.p.inputs.push(Buffer { dtype, len });
        self.p.inputs.len() - 1
    }

    /// A block-pointer (or descriptor) load of a random shape, or of `shape` (a dot
    /// operand in a loop: then every program reads one view from the input's first
    /// element, the rows advancing with the loop, as a pipelined K loop reads).
    fn block_load(&mut self, dtype: Option<DType>, shape: Option<[u32; 2]>) -> Option<Var> {
        let shared_base = shape.is_some();
        let [a, b] = match shape {
            Some(s) => s,
            None => [1u32 << self.rng.range(1, 6), 1u32 << self.rng.range(1, 6)],
        };
        if a * b > 2048 && !shared_base {
            return None;
        }
        let dtype = dtype.unwrap_or_else(|| self.random_dtype());
        let span = 2 * a * b;
        let (r, c) = (self.rng.range(0, 2 * a as i64), self.rng.range(0, b as i64));
        let rows = self.scalar_arg(r as i32);
        let cols = self.scalar_arg(c as i32);
        let len = if shared_base {
            span
        } else {
            span * self.p.grid
        };
        let input = self.input(dtype, len as usize);
        let row_offset = self
            .loop_vars
            .last()
            .copied()
            .filter(|_| shared_base || self.rng.chance(0.6));
        // (Zero padding mostly where TMA may copy the tile: NaN padding keeps `cp.async`.)
        let padding = if dtype.is_float() && self.rng.chance(if shared_base { 0.15 } else { 0.4 }) {
            Padding::Nan
        } else {
            Padding::Zero
        };
        self.emit(Expr::BlockLoad {
            input,
            shape: vec![a, b],
            span,
            stride: b,
            rows_arg: rows,
            cols_arg: cols,
            padding,
            row_offset,
            // Derived from values already drawn, so that every seed keeps its program.
            descriptor: padding == Padding::Zero && (r + c) % 2 == 0,
            shared_base,
        })
    }

    /// A variable of `shape` and `dtype`: an existing one, a cast of one, or a load.
    fn operand(&mut self, shape: &[u32], dtype: DType) -> Option<Var> {
        let want = shape.to_vec();
        if self.rng.chance(0.7) {
            if let Some(v) = self.choose(|i| i.shape == want && i.dtype == dtype) {
                return Some(v);
            }
        }
        if self.rng.chance(0.5) {
            if let Some(v) = self.choose(|i| i.shape == want && i.dtype != DType::I1) {
                if let Some(c) = self.emit(Expr::Cast(v, dtype)) {
                    return Some(c);
                }
            }
        }
        let value = if dtype == DType::I1 {
            self.rng.pick(&[0.0, 1.0])
        } else {
            self.rng.pick(&[0.0, 1.0, -2.0, 0.375, 3.0])
        };
        let value: f64 = if dtype.is_float() {
            value
        } else {
            f64::trunc(value)
        };
        match self.rng.below(5) {
            0 => self.emit(Expr::Full {
                shape: shape.to_vec(),
                value,
                dtype,
            }),
            _ => self.load(Some(shape.to_vec()), Some(dtype)),
        }
    }

    /// A second operand broadcasting with `a`: same shape, a row or column of it, or
    /// a scalar.
    fn partner(&mut self, a: Var) -> Option<Var> {
        let ia = self.get(a).clone();
        let r = ia.shape.len();
        if r >= 2 && self.rng.chance(0.3) {
            // A reduced copy expanded back: [M, 1] or [1, N].
            let axis = self.rng.below(r);
            let src = self.operand(&ia.shape, ia.dtype)?;
            let kind = if ia.dtype.is_float() || ia.dtype == DType::I1 {
                Reduction::Max
            } else {
                self.rng.pick(&[Reduction::Max, Reduction::Sum])
            };
            if ia.dtype == DType::I1 {
                return None;
            }
            let dtype = if kind == Reduction::Sum {
                DType::I32
            } else {
                ia.dtype
            };
            let keep_dims = self.rng.chance(0.5);
            let red = self.emit(Expr::Reduce {
                kind,
                value: src,
                axis: Some(axis),
                keep_dims,
                dtype,
            })?;
            let red = if self.get(red).shape.len() < r {
                self.emit(Expr::ExpandDims(red, axis))?
            } else {
                red
            };
            return if dtype == ia.dtype {
                Some(red)
            } else {
                self.emit(Expr::Cast(red, ia.dtype))
            };
        }
        if self.rng.chance(0.15) {
            let s = self.emit(Expr::Scalar(Scalar::ProgramId))?;
            return self.emit(Expr::Cast(s, ia.dtype));
        }
        self.operand(&ia.shape, ia.dtype)
    }

    fn elementwise(&mut self) -> Option<Var> {
        let a = self.choose(|i| !i.shape.is_empty() || i.dtype != DType::I32)?;
        let ia = self.get(a).clone();
        if self.rng.chance(0.2) && ia.dtype == DType::I32 && ia.exact() {
            let kind = self
                .rng
                .pick(&[RandomKind::Randint, RandomKind::Rand, RandomKind::Randn]);
            let seed = self.rng.pick(&[0i64, -1, 12345, 0x7fff_ffff]);
            return self.emit(Expr::Random(kind, a, seed));
        }
        if self.rng.chance(0.35) {
            let ops = if ia.dtype.is_float() {
                vec![
                    Unary::Neg,
                    Unary::Abs,
                    Unary::Exp,
                    Unary::LogAbs1,
                    Unary::SqrtAbs,
                    Unary::RsqrtAbs1,
                    Unary::Sin,
                    Unary::Cos,
                    Unary::Floor,
                    Unary::Ceil,
                    Unary::Erf,
                    Unary::Sigmoid,
                    Unary::Fp8E4,
                    Unary::Fp8E5,
                ]
            } else {
                vec![Unary::Neg, Unary::Abs, Unary::Not]
            };
            let op = self.rng.pick(&ops);
            return self.emit(Expr::Unary(op, a));
        }
        if self.rng.chance(0.15) && ia.dtype != DType::I1 {
            let b = self.partner(a)?;
            let ib = self.get(b).clone();
            let c = match self
                .choose(|i| i.dtype == DType::I1 && broadcast(&i.shape, &ia.shape).is_some())
            {
                Some(c) => c,
                None => {
                    let x = self.operand(&ia.shape, ia.dtype)?;
                    if !self.get(x).exact() || !ia.exact() {
                        return None;
                    }
                    self.emit(Expr::Cmp(Cmp::Lt, a, x))?
                }
            };
            let _ = ib;
            return self.emit(Expr::Where(c, a, b));
        }
        let b = self.partner(a)?;
        let ops: Vec<Binary> = if ia.dtype.is_float() {
            vec![
                Binary::Add,
                Binary::Add,
                Binary::Sub,
                Binary::Mul,
                Binary::Mul,
                Binary::SafeDiv,
                Binary::Min,
                Binary::Max,
            ]
        } else if ia.dtype == DType::I1 {
            vec![Binary::And, Binary::Or, Binary::Xor]
        } else {
            vec![
                Binary::Add,
                Binary::Sub,
                Binary::Mul,
                Binary::FloorDiv,
                Binary::Mod,
                Binary::Min,
                Binary::Max,
                Binary::And,
                Binary::Or,
                Binary::Xor,
                Binary::Shl,
                Binary::Shr,
            ]
        };
        let mut ops = ops;
        if ia.dtype.is_int() && ia.dtype.bits() >= 32 {
            ops.push(Binary::MulHi);
        }
        let op = self.rng.pick(&ops);
        let (x, y) = if self.rng.chance(0.5) { (a, b) } else { (b, a) };
        self.emit(Expr::Binary(op, x, y))
    }

    /// `tl.join` / `tl.interleave` of a variable and a partner, or one half of
    /// `tl.split` of a variable whose last dimension is 2.
    fn pairing(&mut self) -> Option<Var> {
        if self.rng.chance(0.4) {
            if let Some(x) = self.choose(|i| i.shape.last() == Some(&2)) {
                let half = self.rng.below(2);
                return self.emit(Expr::Split(x, half));
            }
        }
        let a = self.choose(|i| i.shape.len() <= 2 && i.numel() <= 2048)?;
        let b = self.partner(a)?;
        if self.rng.chance(0.5) || self.get(a).shape.is_empty() {
            self.emit(Expr::Join(a, b))
        } else {
            self.emit(Expr::Interleave(a, b))
        }
    }

    fn compare(&mut self) -> Option<Var> {
        let a = self.choose(|i| i.exact() && i.dtype != DType::I1)?;
        let b = self.partner(a)?;
        let p = self
            .rng
            .pick(&[Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge]);
        self.emit(Expr::Cmp(p, a, b))
    }

    fn cast(&mut self) -> Option<Var> {
        let a = self.choose(|_| true)?;
        let mut to = self.random_dtype();
        if to == self.get(a).dtype {
            to = self.rng.pick(&FLOATS);
        }
        self.emit(Expr::Cast(a, to))
    }

    fn shape_op(&mut self) -> Option<Var> {
        if self.rng.chance(0.25) {
            if let Some(v) = self.pairing() {
                return Some(v);
            }
        }
        let a = self.choose(|i| !i.shape.is_empty())?;
        let ia = self.get(a).clone();
        let r = ia.shape.len();
        match self.rng.below(4) {
            0 if r < 3 => {
                let axis = self.rng.below(r + 1);
                let e = self.emit(Expr::ExpandDims(a, axis))?;
                // Broadcast the new unit dimension out.
                let mut shape = self.get(e).shape.clone();
                shape[axis] = 1 << self.rng.below(4);
                if shape.iter().product::<u32>() > 4096 {
                    return Some(e);
                }
                self.emit(Expr::BroadcastTo(e, shape))
            }
            1 if r >= 2 => {
                let mut perm: Vec<usize> = (0..r).collect();
                while perm == (0..r).collect::<Vec<_>>() {
                    for i in (1..r).rev() {
                        let j = self.rng.below(i + 1);
                        perm.swap(i, j);
                    }
                }
                if r == 2 {
                    perm = vec![1, 0];
                }
                self.emit(Expr::Permute(a, perm))
            }
            _ => {
                // Reshape to another factorisation of the same size.
                let n = ia.numel();
                let rank = self.rng.pick(&[1, 2, 3]);
                let mut bits = n.trailing_zeros();
                let mut shape = vec![];
                for k in 0..rank {
                    let take = if k == rank - 1 {
                        bits
                    } else {
                        self.rng.below(bits as usize + 1) as u32
                    };
                    shape.push(1 << take);
                    bits -= take;
                }
                self.emit(Expr::Reshape(a, shape))
            }
        }
    }

    fn reduction(&mut self) -> Option<Var> {
        let a = self.choose(|i| !i.shape.is_empty() && i.dtype != DType::I1)?;
        let ia = self.get(a).clone();
        let axis = if self.rng.chance(0.2) {
            None
        } else {
            Some(self.rng.below(ia.shape.len()))
        };
        let float = ia.dtype.is_float();
        let kinds = if float {
            vec![
                Reduction::Sum,
                Reduction::Sum,
                Reduction::Max,
                Reduction::Min,
                Reduction::ArgMax,
                Reduction::ArgMin,
                Reduction::CustomAdd,
            ]
        } else {
            vec![
                Reduction::Sum,
                Reduction::Max,
                Reduction::Min,
                Reduction::ArgMax,
                Reduction::ArgMin,
                Reduction::CustomAdd,
            ]
        };
        let kind = self.rng.pick(&kinds);
        let dtype = match kind {
            Reduction::ArgMax | Reduction::ArgMin => DType::I32,
            Reduction::Sum if float => DType::F32,
            Reduction::Sum if ia.dtype == DType::I64 => DType::I64,
            Reduction::Sum => DType::I32,
            Reduction::CustomAdd if float => DType::F32,
            Reduction::CustomAdd if ia.dtype == DType::I64 => DType::I64,
            Reduction::CustomAdd => DType::I32,
            _ => ia.dtype,
        };
        // A custom reduction of narrow types runs on the widened values.
        let value = if matches!(kind, Reduction::CustomAdd) && ia.dtype != dtype {
            self.emit(Expr::Cast(a, dtype))?
        } else {
            a
        };
        let keep_dims = self.rng.chance(0.25);
        let r = self.emit(Expr::Reduce {
            kind,
            value,
            axis,
            keep_dims,
            dtype,
        })?;
        // Often reduce the result again, along another axis.
        if self.rng.chance(0.3) && !self.get(r).shape.is_empty() {
            let ir = self.get(r).clone();
            let axis = Some(self.rng.below(ir.shape.len()));
            let k2 = if ir.dtype.is_float() {
                self.rng
                    .pick(&[Reduction::Sum, Reduction::Max, Reduction::Min])
            } else {
                self.rng
                    .pick(&[Reduction::Sum, Reduction::Max, Reduction::ArgMin])
            };
            let d2 = match k2 {
                Reduction::ArgMin => DType::I32,
                Reduction::Sum if ir.dtype.is_float() => DType::F32,
                Reduction::Sum if ir.dtype == DType::I64 => DType::I64,
                Reduction::Sum => DType::I32,
                _ => ir.dtype,
            };
            return self.emit(Expr::Reduce {
                kind: k2,
                value: r,
                axis,
                keep_dims: false,
                dtype: d2,
            });
        }
        Some(r)
    }

    fn scan(&mut self) -> Option<Var> {
        let a = self.choose(|i| !i.shape.is_empty() && i.dtype != DType::I1)?;
        let ia = self.get(a).clone();
        let float = ia.dtype.is_float();
        let kind = if float {
            self.rng.pick(&[ScanKind::Cumsum, ScanKind::CustomAdd])
        } else {
            self.rng.pick(&[
                ScanKind::Cumsum,
                ScanKind::Cumprod,
                ScanKind::CustomAdd,
                ScanKind::CustomFirst,
            ])
        };
        let dtype = match kind {
            ScanKind::Cumsum | ScanKind::CustomAdd if float => DType::F32,
            ScanKind::Cumsum | ScanKind::CustomAdd => DType::I32,
            _ => ia.dtype,
        };
        let value = if ia.dtype != dtype && kind == ScanKind::CustomAdd {
            self.emit(Expr::Cast(a, dtype))?
        } else {
            a
        };
        let axis = self.rng.below(ia.shape.len());
        let reverse = self.rng.chance(0.3);
        self.emit(Expr::Scan {
            kind,
            value,
            axis,
            reverse,
            dtype,
        })
    }

    /// `tl.dot` of fresh or existing operands; `acc` accumulates when given.
    fn dot(&mut self, acc: Option<Var>) -> Option<Var> {
        let (m, n) = match acc {
            Some(c) => {
                let s = self.get(c).shape.clone();
                (s[0], s[1])
            }
            // 64 and 128 rows reach the warpgroup form on sm_90 (with 4 or 8 warps).
            None => (
                self.rng.pick(&[16, 32, 64, 64, 128]),
                self.rng.pick(&[16, 32, 64]),
            ),
        };
        let k = self.rng.pick(&[16, 32, 64]);
        let acc_int = acc.is_some_and(|c| self.get(c).dtype == DType::I32);
        let dtype = if acc_int {
            DType::I8
        } else {
            match self.rng.below(7) {
                0 | 1 => DType::F16,
                2 => DType::BF16,
                3 if acc.is_none() => DType::I8,
                _ => DType::F32,
            }
        };
        // In a loop, 16-bit operands sometimes come from block pointers walking a view
        // (pipelined; on sm_90 copied by the tensor memory accelerator), and so do f32
        // ones accumulating into a carried tile (tf32 on sm_90: `a` by TMA from 64 rows
        // on, `b` read into registers; decided on the side stream).
        let looped = !self.loop_vars.is_empty() && matches!(dtype, DType::F16 | DType::BF16);
        let f32_blocks = !self.loop_vars.is_empty()
            && dtype == DType::F32
            && acc.is_some()
            && self.side.chance(0.35);
        // A `b` contiguous along K (`x @ w.T`) through pointers walking the loop: staged
        // K-major (`mma.sync` reads it without `.trans`, `wgmma` as a transposed
        // swizzled tile, cooperative matrices column-major); an `a` contiguous along M
        // (`x.T @ w`) likewise, staged M-major (`ldmatrix.trans`, `imm-trans-a`,
        // column-major). Each decided on a stream of its own.
        let b_t = looped && !f32_blocks && self.kmajor.chance(0.5);
        let a_t = looped && !f32_blocks && self.mmajor.chance(0.3);
        if a_t || b_t {
            let a = if a_t {
                self.load_as(Some(vec![m, k]), Some(dtype), true)?
            } else {
                self.operand(&[m, k], dtype)?
            };
            let b = if b_t {
                self.load_as(Some(vec![k, n]), Some(dtype), true)?
            } else {
                self.operand(&[k, n], dtype)?
            };
            return self.emit_dot(a, b, acc, None);
        }
        if f32_blocks || looped && self.rng.chance(if acc.is_some() { 0.6 } else { 0.2 }) {
            let a = self.block_load(Some(dtype), Some([m, k]))?;
            let b = self.block_load(Some(dtype), Some([k, n]))?;
            return self.emit_dot(a, b, acc, None);
        }
        let a = self.operand(&[m, k], dtype)?;
        let b = if self.rng.chance(0.2) {
            // B as the transpose of a K-major tile.
            let t = self.operand(&[n, k], dtype)?;
            self.emit(Expr::Permute(t, vec![1, 0]))?
        } else {
            self.operand(&[k, n], dtype)?
        };
        let precision = (dtype == DType::F32).then(|| self.rng.pick(&["tf32", "ieee", "tf32x3"]));
        self.emit_dot(a, b, acc, precision)
    }

    /// `tl.dot(a, b, acc)`, or (a quarter of the 16- and 8-bit dots with an
    /// accumulator, on a stream of their own) `acc + tl.dot(a, b)`, which the compiler
    /// folds into the former. (f32 dots keep their form: the programs of the seeds
    /// kept as regressions, `fuzz/tests/ci_batch.rs`, stay as they were.)
    fn emit_dot(
        &mut self,
        a: Var,
        b: Var,
        acc: Option<Var>,
        precision: Option<&'static str>,
    ) -> Option<Var> {
        match acc {
            Some(c) if self.get(a).dtype != DType::F32 && self.added.chance(0.25) => {
                let d = self.emit(Expr::Dot {
                    a,
                    b,
                    acc: None,
                    precision,
                })?;
                if let Some(sum) = self.emit(Expr::Binary(Binary::Add, c, d)) {
                    return Some(sum);
                }
                // The add is not allowed (an integer sum that may overflow): the dot
                // takes its accumulator instead, as if the draw had not been made.
                self.info.pop();
                self.blocks.last_mut().expect("block").pop();
                self.products.remove(&d);
                self.emit(Expr::Dot {
                    a,
                    b,
                    acc,
                    precision,
                })
            }
            _ => self.emit(Expr::Dot {
                a,
                b,
                acc,
                precision,
            }),
        }
    }

    fn atomic(&mut self) -> Option<Var> {
        let v = self.choose(|i| {
            matches!(i.dtype, DType::I32 | DType::F32) && !i.shape.is_empty() && i.numel() <= 1024
        })?;
        let iv = self.get(v).clone();
        let unique = self.rng.chance(0.5);
        let ops = if iv.dtype.is_float() {
            vec![AtomicOp::Add, AtomicOp::Max, AtomicOp::Min, AtomicOp::Xchg]
        } else {
            vec![
                AtomicOp::Add,
                AtomicOp::Max,
                AtomicOp::Min,
                AtomicOp::And,
                AtomicOp::Or,
                AtomicOp::Xor,
                AtomicOp::Xchg,
            ]
        };
        let op = self.rng.pick(&ops);
        let len = if unique {
            (iv.numel() * self.p.grid) as usize
        } else {
            4
        };
        self.p.outputs.push(Output {
            dtype: iv.dtype,
            len,
            atomic: true,
        });
        let out = self.p.outputs.len() - 1;
        let r = self.emit(Expr::Atomic {
            op,
            out,
            value: v,
            unique,
        });
        if r.is_none() {
            self.p.outputs.pop();
        }
        r
    }

    // -- control flow ---------------------------------------------------------------

    /// A `for` or `while` loop carrying one or two tiles.
    fn looped(&mut self, depth: usize) -> bool {
        let forced = self.force_matmul_loop.take();
        let persistent = depth == 0 && std::mem::take(&mut self.persistent);
        let is_for = forced.is_some() || persistent || self.rng.chance(0.7);
        let trips = self.rng.range(0, 4) as u32;
        // A loop over tiles runs a number of times the launch says (zero included).
        let trip = if persistent || self.rng.chance(0.6) {
            Trip::Arg(self.scalar_arg(trips as i32))
        } else {
            Trip::Const(trips.max(1))
        };
        let trip_bound = match trip {
            Trip::Const(n) => n,
            Trip::Arg(_) => trips,
        };
        // Carried: an accumulator made for the loop, sometimes a second existing tile.
        let mut carried = vec![];
        let matmul = forced.is_some() || (!persistent && self.rng.chance(0.45));
        let tile = [
            self.rng.pick(&[16, 32, 64, 64]),
            self.rng.pick(&[16, 32, 64]),
        ];
        if persistent {
            let Some(c) = self.emit(Expr::Full {
                shape: tile.to_vec(),
                value: 0.0,
                dtype: DType::F32,
            }) else {
                return false;
            };
            carried.push(c);
        } else if matmul {
            // 64 rows: the warpgroup form on sm_90 (its block-pointer operands by TMA).
            let [m, n] = forced.unwrap_or(tile);
            let int = forced.is_none() && self.rng.chance(0.15);
            let Some(acc) = self.emit(Expr::Full {
                shape: vec![m, n],
                value: 0.0,
                dtype: if int { DType::I32 } else { DType::F32 },
            }) else {
                return false;
            };
            carried.push(acc);
        } else {
            let Some(c) = self.choose(|i| !i.shape.is_empty() && i.dtype != DType::I1) else {
                return false;
            };
            if self.loop_vars.contains(&c) || c < self.floor {
                return false;
            }
            carried.push(c);
        }
        if self.rng.chance(0.3) {
            if let Some(c) = self.choose(|i| i.dtype != DType::I1 && i.exact()) {
                // Loop indices and the tile's place stay what they are: loads offset
                // by them.
                let place = self.place.map(|(p, _)| p);
                if !carried.contains(&c)
                    && !self.loop_vars.contains(&c)
                    && Some(c) != place
                    && c >= self.floor
                {
                    carried.push(c);
                }
            }
        }
        let saved = self.info.clone();
        let outer_floor = self.floor;
        self.floor = self.info.len();
        self.loops.push(trip_bound.max(1));
        self.blocks.push(vec![]);
        self.nested += 1;
        let Some(iv) = self.emit(Expr::Scalar(Scalar::LoopIndex(depth))) else {
            self.floor = outer_floor;
            return self.abandon(saved);
        };
        self.loop_vars.push(iv);
        // The K loop of a tile's place: its loads advance by `place * trips + k`.
        let mut shifted = false;
        if let (Some(_), Some((place, tiles))) = (forced, self.place.take()) {
            let k_trips = trip_bound.max(1);
            let span = self.emit(Expr::Full {
                shape: vec![],
                value: k_trips as f64,
                dtype: DType::I32,
            });
            let step = span.and_then(|s| self.emit(Expr::Binary(Binary::Mul, place, s)));
            if let Some(sh) = step.and_then(|s| self.emit(Expr::Binary(Binary::Add, s, iv))) {
                self.loop_vars.push(sh);
                self.shift_trips = Some(tiles * k_trips);
                shifted = true;
            }
        }
        let mut inner_acc = None;
        if persistent {
            // A loop over tiles: its body computes the tile's place (a row and a
            // column by division, as `_compute_pid`, put back together), then opens
            // with the K loop.
            if self.rng.chance(0.6) {
                let two = self.emit(Expr::Full {
                    shape: vec![],
                    value: 2.0,
                    dtype: DType::I32,
                });
                let place = two.and_then(|two| {
                    let row = self.emit(Expr::Binary(Binary::FloorDiv, iv, two))?;
                    let col = self.emit(Expr::Binary(Binary::Mod, iv, two))?;
                    let rows = self.emit(Expr::Binary(Binary::Mul, row, two))?;
                    self.emit(Expr::Binary(Binary::Add, rows, col))
                });
                self.place = place.map(|p| (p, trip_bound.max(1)));
            }
            self.force_matmul_loop = Some(tile);
            self.forced_acc = None;
            if self.looped(depth + 1) {
                inner_acc = self.forced_acc.take();
            }
            self.force_matmul_loop = None;
            self.place = None;
        }
        let steps = self.rng.below(3);
        for _ in 0..steps {
            self.action(depth + 1);
        }
        let mut next = vec![];
        for (k, &c) in carried.iter().enumerate() {
            let n = if let (0, Some(acc)) = (k, inner_acc) {
                // The epilogue reads the tile's accumulator.
                self.emit(Expr::Binary(Binary::Add, c, acc))
            } else if k == 0 && matmul {
                self.dot(Some(c))
            } else {
                self.update(c)
            };
            match n {
                Some(n) => next.push(n),
                None => {
                    self.loop_vars.pop();
                    if shifted {
                        self.loop_vars.pop();
                        self.shift_trips = None;
                    }
                    self.floor = outer_floor;
                    return self.abandon(saved);
                }
            }
        }
        self.loop_vars.pop();
        if shifted {
            self.loop_vars.pop();
            self.shift_trips = None;
        }
        self.loops.pop();
        self.nested -= 1;
        self.floor = outer_floor;
        let body = self.blocks.pop().expect("loop body");
        let stage = self.rng.pick(&[1, 2, 3, 4]);
        let stages = self.rng.chance(0.4).then_some(stage);
        let stmt = if is_for {
            Stmt::For {
                depth,
                trip,
                stages,
                carried: carried.clone(),
                body,
                next,
            }
        } else {
            Stmt::While {
                depth,
                trip,
                carried: carried.clone(),
                body,
                next,
            }
        };
        let ok = self.finish_scope(saved, &carried, stmt);
        if ok && forced.is_some() {
            self.forced_acc = Some(carried[0]);
        }
        ok
    }

    /// Leaves a nested block whose statements were already emitted: only the carried
    /// variables stay visible (with their merged information, recomputed by `check`
    /// of the finished program), and `stmt` is appended.
    fn finish_scope(&mut self, saved: Vec<Option<Info>>, carried: &[Var], stmt: Stmt) -> bool {
        let grown = self.info.len();
        let mut info = saved;
        info.resize(grown, None);
        self.blocks.last_mut().expect("block").push(stmt);
        // Recompute the carried variables' information with the rules.
        let mut trial = self.p.clone();
        trial.body = self.blocks[0].clone();
        trial.num_vars = grown;
        if self.blocks.len() == 1 {
            match check(&trial) {
                Ok(c) => {
                    for &v in carried {
                        info[v] = c.info[v].clone();
                    }
                }
                Err(_) => {
                    self.blocks.last_mut().expect("block").pop();
                    self.info = info;
                    return false;
                }
            }
        } else {
            // Nested: widen the carried errors conservatively; the final check decides.
            for &v in carried {
                if let Some(i) = info[v].as_mut() {
                    i.err = f64::INFINITY;
                }
            }
        }
        self.info = info;
        true
    }

    fn abandon(&mut self, saved: Vec<Option<Info>>) -> bool {
        self.blocks.pop();
        self.loops.pop();
        self.nested -= 1;
        let grown = self.info.len();
        self.info = saved;
        self.info.resize(grown, None);
        false
    }

    /// A new value of `c`'s shape and dtype computed from `c` and fresh data.
    fn update(&mut self, c: Var) -> Option<Var> {
        let ic = self.get(c).clone();
        let x = self.operand(&ic.shape, ic.dtype)?;
        let op = if ic.dtype.is_float() {
            self.rng
                .pick(&[Binary::Add, Binary::Max, Binary::Min, Binary::Sub])
        } else {
            self.rng
                .pick(&[Binary::Add, Binary::Max, Binary::Xor, Binary::Mul])
        };
        self.emit(Expr::Binary(op, c, x))
    }

    /// An `if` on a runtime scalar or the program id, reassigning one or two tiles.
    fn branch(&mut self, depth: usize) -> bool {
        let Some(c) = self.choose(|i| i.dtype != DType::I1 && !i.shape.is_empty()) else {
            return false;
        };
        if self.loop_vars.contains(&c) || c < self.floor {
            return false;
        }
        let carried = vec![c];
        let pick = self.rng.range(0, 3) as i32;
        let (arg, threshold) = if self.rng.chance(0.5) {
            (Some(self.scalar_arg(pick)), 1)
        } else {
            (None, self.rng.range(0, 1) as i32)
        };
        let saved = self.info.clone();
        let mut arms = vec![];
        for _ in 0..2 {
            self.blocks.push(vec![]);
            self.nested += 1;
            self.loops.push(self.loops.last().copied().unwrap_or(1));
            if self.rng.chance(0.5) {
                self.action(depth + 1);
            }
            let Some(n) = self.update(c) else {
                return self.abandon(saved);
            };
            self.loops.pop();
            self.nested -= 1;
            arms.push((self.blocks.pop().expect("arm"), n));
            let grown = self.info.len();
            let mut restored = saved.clone();
            restored.resize(grown, None);
            self.info = restored;
        }
        let (else_body, else_n) = arms.pop().expect("else");
        let (then_body, then_n) = arms.pop().expect("then");
        let stmt = Stmt::If {
            arg,
            threshold,
            carried: carried.clone(),
            then_body,
            then_next: vec![then_n],
            else_body,
            else_next: vec![else_n],
        };
        self.finish_scope(saved, &carried, stmt)
    }

    // -- outputs --------------------------------------------------------------------

    fn stores(&mut self) {
        if self.pool(|_| true).is_empty() {
            // Nothing to compare otherwise.
            let _ = self.load(None, None);
        }
        let candidates = self.pool(|_| true);
        let mut chosen: Vec<Var> = vec![];
        // The last variables, and a few others.
        for &v in candidates.iter().rev().take(2) {
            chosen.push(v);
        }
        for _ in 0..self.rng.below(3) {
            if let Some(&v) = candidates.get(self.rng.below(candidates.len().max(1))) {
                if !chosen.contains(&v) {
                    chosen.push(v);
                }
            }
        }
        for v in chosen {
            let i = self.get(v).clone();
            self.p.outputs.push(Output {
                dtype: i.dtype,
                len: (i.numel() * self.p.grid) as usize,
                atomic: false,
            });
            let bound = self.rng.range(0, i.numel() as i64) as i32;
            let ragged =
                (!i.shape.is_empty() && self.rng.chance(0.3)).then(|| self.scalar_arg(bound));
            self.blocks[0].push(Stmt::Store {
                out: self.p.outputs.len() - 1,
                value: v,
                ragged,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_program_and_every_program_checks() {
        for seed in 0..300 {
            let a = generate(seed, &Options::default());
            assert_eq!(
                format!("{a:?}"),
                format!("{:?}", generate(seed, &Options::default()))
            );
            if let Err(e) = check(&a) {
                panic!("seed {seed}: {}\n{}", e.0, a.source());
            }
        }
    }
}
