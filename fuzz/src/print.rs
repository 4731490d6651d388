//! Fuzz programs as Triton source ([`Program::source`]): one `v{n}` a variable, loads
//! and stores as pointer arithmetic over `tl.arange`, the combine functions the
//! reductions and scans name.

use crate::program::*;
use std::fmt::Write;
use tilewise::DType;

fn dt_name(d: DType) -> String {
    format!("tl.{}", d.triton_name())
}

fn float_lit(x: f64) -> String {
    if x.is_nan() {
        "float(\"nan\")".into()
    } else if x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// `tl.arange(0, n)` expanded to position `d` of a rank-`r` tile.
fn arange_at(n: u32, d: usize, r: usize) -> String {
    let mut s = format!("tl.arange(0, {n})");
    if r > 1 {
        let idx: Vec<&str> = (0..r).map(|k| if k == d { ":" } else { "None" }).collect();
        write!(s, "[{}]", idx.join(", ")).unwrap();
    }
    s
}

/// `Σ arange_d * stride_d` over a tile's dimensions.
fn linear(shape: &[u32], strides: &[u32]) -> String {
    if shape.is_empty() {
        return "0".into();
    }
    let terms: Vec<String> = shape
        .iter()
        .zip(strides)
        .enumerate()
        .map(|(d, (&n, &st))| {
            let a = arange_at(n, d, shape.len());
            if st == 1 {
                a
            } else {
                format!("{a} * {st}")
            }
        })
        .collect();
    format!("({})", terms.join(" + "))
}

/// Row-major strides of a shape.
pub fn row_major(shape: &[u32]) -> Vec<u32> {
    let mut st = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        st[d] = st[d + 1] * shape[d + 1];
    }
    st
}

impl Program {
    /// The kernel's name in its source.
    pub const KERNEL: &'static str = "fuzz_kernel";

    /// The program as a Triton source file.
    pub fn source(&self) -> String {
        let mut s = String::new();
        writeln!(
            s,
            "# tilewise-fuzz seed {}: grid ({},), num_warps={}, scalars {:?}",
            self.seed, self.grid, self.num_warps, self.scalars
        )
        .unwrap();
        s.push_str("import triton\nimport triton.language as tl\n\n\n");
        s.push_str("@triton.jit\ndef _comb_add(a, b):\n    return a + b\n\n\n");
        s.push_str(
            "@triton.jit\ndef _comb_first_nonzero(a, b):\n    return tl.where(a != 0, a, b)\n\n\n",
        );
        let mut params: Vec<String> = vec![];
        if self.addressed {
            params.push("addrs".to_string());
        } else {
            params.extend((0..self.inputs.len()).map(|k| format!("in{k}")));
            params.extend((0..self.outputs.len()).map(|k| format!("out{k}")));
        }
        params.extend((0..self.scalars.len()).map(|k| format!("s{k}")));
        writeln!(
            s,
            "@triton.jit\ndef {}({}):",
            Self::KERNEL,
            params.join(", ")
        )
        .unwrap();
        s.push_str("    pid = tl.program_id(0)\n");
        if self.addressed {
            let names = (0..self.inputs.len()).map(|k| (format!("in{k}"), self.inputs[k].dtype));
            let outs = (0..self.outputs.len()).map(|k| (format!("out{k}"), self.outputs[k].dtype));
            for (i, (name, dt)) in names.chain(outs).enumerate() {
                writeln!(
                    s,
                    "    {name} = tl.load(addrs + {i}).to(tl.pointer_type({}))",
                    dt_name(dt)
                )
                .unwrap();
            }
        }
        let info = check(self).map(|c| c.seen).unwrap_or_default();
        self.block(&mut s, &self.body, 1, &info, &[]);
        s
    }

    fn shape_of(&self, info: &[Option<Info>], v: Var) -> Vec<u32> {
        info.get(v)
            .cloned()
            .flatten()
            .map(|i| i.shape)
            .unwrap_or_default()
    }

    /// Prints `body` at `indent`; the loads whose variables `carried` lists read
    /// through the carried pointer tiles of the loop around (`p{v}`).
    fn block(
        &self,
        s: &mut String,
        body: &[Stmt],
        indent: usize,
        info: &[Option<Info>],
        carried_ptrs: &[Var],
    ) {
        let pad = "    ".repeat(indent);
        if body.is_empty() {
            writeln!(s, "{pad}pass").unwrap();
        }
        for st in body {
            match st {
                Stmt::Let(v, e) => match e {
                    Expr::Load {
                        input,
                        shape,
                        access,
                        other,
                    } if carried_ptrs.contains(v) => {
                        let mask = self.load_mask(*input, shape, access, *other);
                        writeln!(s, "{pad}v{v} = tl.load(p{v}{mask})").unwrap();
                    }
                    _ => writeln!(s, "{pad}v{v} = {}", self.expr(e, info)).unwrap(),
                },
                Stmt::Store { out, value, ragged } => {
                    let shape = self.shape_of(info, *value);
                    let numel: u32 = shape.iter().product();
                    let lin = linear(&shape, &row_major(&shape));
                    let mask = ragged.map_or(String::new(), |k| format!(", mask={lin} < s{k}"));
                    writeln!(
                        s,
                        "{pad}tl.store(out{out} + pid * {numel} + {lin}, v{value}{mask})"
                    )
                    .unwrap();
                }
                Stmt::For {
                    depth,
                    trip,
                    stages,
                    carried,
                    body,
                    next,
                } => {
                    let n = trip_text(trip);
                    let ptrs = carried_loads(body, *depth);
                    self.carried_pointers(s, &pad, &ptrs);
                    match stages {
                        Some(k) => {
                            writeln!(s, "{pad}for i{depth} in tl.range(0, {n}, num_stages={k}):")
                                .unwrap()
                        }
                        None => writeln!(s, "{pad}for i{depth} in range(0, {n}):").unwrap(),
                    }
                    let vars: Vec<Var> = ptrs.iter().map(|p| p.0).collect();
                    self.block(s, body, indent + 1, info, &vars);
                    advance_pointers(s, &pad, &ptrs);
                    for (c, n) in carried.iter().zip(next) {
                        writeln!(s, "{pad}    v{c} = v{n}").unwrap();
                    }
                }
                Stmt::While {
                    depth,
                    trip,
                    carried,
                    body,
                    next,
                } => {
                    let ptrs = carried_loads(body, *depth);
                    self.carried_pointers(s, &pad, &ptrs);
                    writeln!(s, "{pad}i{depth} = 0").unwrap();
                    writeln!(s, "{pad}while i{depth} < {}:", trip_text(trip)).unwrap();
                    let vars: Vec<Var> = ptrs.iter().map(|p| p.0).collect();
                    self.block(s, body, indent + 1, info, &vars);
                    advance_pointers(s, &pad, &ptrs);
                    for (c, n) in carried.iter().zip(next) {
                        writeln!(s, "{pad}    v{c} = v{n}").unwrap();
                    }
                    writeln!(s, "{pad}    i{depth} += 1").unwrap();
                }
                Stmt::If {
                    arg,
                    threshold,
                    carried,
                    then_body,
                    then_next,
                    else_body,
                    else_next,
                } => {
                    match arg {
                        Some(k) => writeln!(s, "{pad}if s{k} > {threshold}:").unwrap(),
                        None => writeln!(s, "{pad}if pid % 2 == {threshold}:").unwrap(),
                    }
                    self.block(s, then_body, indent + 1, info, carried_ptrs);
                    for (c, n) in carried.iter().zip(then_next) {
                        writeln!(s, "{pad}    v{c} = v{n}").unwrap();
                    }
                    writeln!(s, "{pad}else:").unwrap();
                    self.block(s, else_body, indent + 1, info, carried_ptrs);
                    for (c, n) in carried.iter().zip(else_next) {
                        writeln!(s, "{pad}    v{c} = v{n}").unwrap();
                    }
                }
            }
        }
    }

    /// A load's `, mask=..., other=...` (empty without a bound).
    fn load_mask(&self, input: usize, shape: &[u32], access: &Access, other: f64) -> String {
        match access.ragged {
            Some(k) => {
                let dt = self.inputs[input].dtype;
                let other = if dt.is_float() {
                    float_lit(other)
                } else if dt == DType::I1 {
                    "0".into()
                } else {
                    format!("{}", other as i64)
                };
                format!(
                    ", mask={} < s{k}, other={other}",
                    linear(shape, &row_major(shape))
                )
            }
            None => String::new(),
        }
    }

    /// The carried pointer tiles of a loop, made before it: the addresses of its first
    /// trip (the loop index 0).
    fn carried_pointers(&self, s: &mut String, pad: &str, ptrs: &[CarriedLoad]) {
        for (v, input, shape, access) in ptrs {
            writeln!(
                s,
                "{pad}p{v} = in{input} + pid * {} + {}",
                access.span,
                linear(shape, &access.strides)
            )
            .unwrap();
        }
    }

    fn expr(&self, e: &Expr, info: &[Option<Info>]) -> String {
        let dt_of = |v: Var| {
            info.get(v)
                .cloned()
                .flatten()
                .map(|i| i.dtype)
                .unwrap_or(DType::F32)
        };
        match e {
            Expr::Load {
                input,
                shape,
                access,
                other,
            } => {
                let mut off = format!("pid * {} + {}", access.span, linear(shape, &access.strides));
                if let Some((v, k)) = access.shift {
                    write!(off, " + v{v} * {k}").unwrap();
                }
                let mask = self.load_mask(*input, shape, access, *other);
                format!("tl.load(in{input} + {off}{mask})")
            }
            Expr::BlockLoad {
                input,
                shape,
                span,
                stride,
                rows_arg,
                cols_arg,
                padding,
                row_offset,
                descriptor,
                shared_base,
            } => {
                let row_off =
                    row_offset.map_or("0".to_string(), |v| format!("v{v} * {}", shape[0]));
                let base = if *shared_base {
                    format!("in{input}")
                } else {
                    format!("in{input} + pid * {span}")
                };
                if *descriptor {
                    return format!(
                        "tl.make_tensor_descriptor({base}, shape=[s{rows_arg}, s{cols_arg}], strides=[{stride}, 1], block_shape=[{}, {}]).load([{row_off}, 0])",
                        shape[0], shape[1]
                    );
                }
                let pad = match padding {
                    Padding::Zero => "zero",
                    Padding::Nan => "nan",
                };
                format!(
                    "tl.load(tl.make_block_ptr({base}, shape=(s{rows_arg}, s{cols_arg}), strides=({stride}, 1), offsets=({row_off}, 0), block_shape=({}, {}), order=(1, 0)), boundary_check=(0, 1), padding_option=\"{pad}\")",
                    shape[0], shape[1]
                )
            }
            Expr::Full {
                shape,
                value,
                dtype,
            } => {
                let v = if dtype.is_float() {
                    float_lit(*value)
                } else {
                    format!("{}", *value as i64)
                };
                let sh: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                let sh = if sh.len() == 1 {
                    format!("({},)", sh[0])
                } else {
                    format!("({})", sh.join(", "))
                };
                format!("tl.full({sh}, {v}, {})", dt_name(*dtype))
            }
            Expr::Arange(n) => format!("tl.arange(0, {n})"),
            Expr::Scalar(Scalar::ProgramId) => "pid".into(),
            Expr::Scalar(Scalar::Arg(k)) => format!("s{k}"),
            Expr::Scalar(Scalar::LoopIndex(d)) => format!("i{d}"),
            Expr::Unary(op, v) => {
                let x = format!("v{v}");
                // Math functions keep the operand's dtype (as in Triton; tilewise widens
                // `tl.sigmoid` of f16 to f32).
                let t = dt_name(dt_of(*v));
                let e = match op {
                    Unary::Neg => format!("-{x}"),
                    Unary::Abs => format!("tl.abs({x})"),
                    Unary::Not => format!("~{x}"),
                    Unary::Exp => format!("tl.exp({x})"),
                    Unary::LogAbs1 => format!("tl.log(tl.abs({x}) + 1.0)"),
                    Unary::SqrtAbs => format!("tl.sqrt(tl.abs({x}))"),
                    Unary::RsqrtAbs1 => format!("tl.rsqrt(tl.abs({x}) + 1.0)"),
                    Unary::Sin => format!("tl.sin({x})"),
                    Unary::Cos => format!("tl.cos({x})"),
                    Unary::Floor => format!("tl.floor({x})"),
                    Unary::Ceil => format!("tl.ceil({x})"),
                    Unary::Erf => format!("tl.erf({x})"),
                    Unary::Sigmoid => format!("tl.sigmoid({x})"),
                    Unary::Fp8E4 => format!("{x}.to(tl.float8e4nv)"),
                    Unary::Fp8E5 => format!("{x}.to(tl.float8e5)"),
                };
                if matches!(op, Unary::Neg | Unary::Abs | Unary::Not) {
                    e
                } else {
                    format!("{e}.to({t})")
                }
            }
            Expr::Binary(op, a, b) => {
                let (x, y) = (format!("v{a}"), format!("v{b}"));
                let t = dt_name(dt_of(*a));
                match op {
                    Binary::Add => format!("({x} + {y}).to({t})"),
                    Binary::Sub => format!("({x} - {y}).to({t})"),
                    Binary::Mul => format!("({x} * {y}).to({t})"),
                    Binary::SafeDiv => format!("({x} / (tl.abs({y}) + 1.0)).to({t})"),
                    Binary::FloorDiv => format!("({x} // {y}).to({t})"),
                    Binary::Mod => format!("({x} % {y}).to({t})"),
                    Binary::Min => format!("tl.minimum({x}, {y})"),
                    Binary::Max => format!("tl.maximum({x}, {y})"),
                    Binary::And => format!("{x} & {y}"),
                    Binary::Or => format!("{x} | {y}"),
                    Binary::Xor => format!("{x} ^ {y}"),
                    Binary::Shl => format!("({x} << {y}).to({t})"),
                    Binary::Shr => format!("({x} >> {y}).to({t})"),
                    Binary::MulHi => format!("tl.umulhi({x}, {y})"),
                }
            }
            Expr::Cmp(p, a, b) => {
                let o = match p {
                    Cmp::Eq => "==",
                    Cmp::Ne => "!=",
                    Cmp::Lt => "<",
                    Cmp::Le => "<=",
                    Cmp::Gt => ">",
                    Cmp::Ge => ">=",
                };
                format!("v{a} {o} v{b}")
            }
            Expr::Where(c, a, b) => format!("tl.where(v{c}, v{a}, v{b})"),
            Expr::Random(kind, x, seed) => match kind {
                RandomKind::Randint => {
                    format!("tl.randint({seed}, v{x}).to(tl.int32, bitcast=True)")
                }
                RandomKind::Rand => format!("tl.rand({seed}, v{x})"),
                RandomKind::Randn => format!("tl.randn({seed}, v{x})"),
            },
            Expr::Cast(x, d) => format!("v{x}.to({})", dt_name(*d)),
            Expr::ExpandDims(x, axis) => {
                let r = self.shape_of(info, *x).len() + 1;
                if *axis == r - 1 && r == 2 {
                    format!("v{x}[:, None]")
                } else if *axis == 0 && r == 2 {
                    format!("v{x}[None, :]")
                } else {
                    format!("tl.expand_dims(v{x}, {axis})")
                }
            }
            Expr::BroadcastTo(x, shape) => format!("tl.broadcast_to(v{x}, {})", tuple(shape)),
            Expr::Permute(x, perm) => {
                if perm.len() == 2 {
                    format!("tl.trans(v{x})")
                } else {
                    let p: Vec<u32> = perm.iter().map(|&d| d as u32).collect();
                    format!("tl.permute(v{x}, {})", tuple(&p))
                }
            }
            Expr::Reshape(x, shape) => format!("tl.reshape(v{x}, {})", tuple(shape)),
            Expr::Join(a, b) => format!("tl.join(v{a}, v{b})"),
            Expr::Interleave(a, b) => format!("tl.interleave(v{a}, v{b})"),
            Expr::Split(x, half) => format!("tl.split(v{x})[{half}]"),
            Expr::Reduce {
                kind,
                value,
                axis,
                keep_dims,
                dtype,
            } => {
                let ax = match axis {
                    Some(a) => a.to_string(),
                    None => "None".into(),
                };
                let kd = if *keep_dims { ", keep_dims=True" } else { "" };
                let x = format!("v{value}");
                let call = match kind {
                    Reduction::Sum => format!("tl.sum({x}, axis={ax}{kd})"),
                    Reduction::Max => format!("tl.max({x}, axis={ax}{kd})"),
                    Reduction::Min => format!("tl.min({x}, axis={ax}{kd})"),
                    Reduction::ArgMax => format!("tl.argmax({x}, axis={ax}{kd})"),
                    Reduction::ArgMin => format!("tl.argmin({x}, axis={ax}{kd})"),
                    Reduction::XorSum => format!("tl.xor_sum({x}, axis={ax}{kd})"),
                    Reduction::CustomAdd => format!("tl.reduce({x}, {ax}, _comb_add{kd})"),
                    Reduction::CustomFirst => {
                        format!("tl.reduce({x}, {ax}, _comb_first_nonzero{kd})")
                    }
                };
                format!("{call}.to({})", dt_name(*dtype))
            }
            Expr::Scan {
                kind,
                value,
                axis,
                reverse,
                dtype,
            } => {
                let x = format!("v{value}");
                let rev = if *reverse { ", reverse=True" } else { "" };
                let call = match kind {
                    ScanKind::Cumsum => format!("tl.cumsum({x}, axis={axis}{rev})"),
                    ScanKind::Cumprod => format!("tl.cumprod({x}, axis={axis}{rev})"),
                    ScanKind::CustomAdd => {
                        format!("tl.associative_scan({x}, {axis}, _comb_add{rev})")
                    }
                    ScanKind::CustomFirst => {
                        format!("tl.associative_scan({x}, {axis}, _comb_first_nonzero{rev})")
                    }
                };
                format!("{call}.to({})", dt_name(*dtype))
            }
            Expr::Dot {
                a,
                b,
                acc,
                precision,
            } => {
                let mut s = format!("tl.dot(v{a}, v{b}");
                if let Some(c) = acc {
                    write!(s, ", v{c}").unwrap();
                }
                if let Some(p) = precision {
                    write!(s, ", input_precision=\"{p}\"").unwrap();
                }
                s.push(')');
                s
            }
            Expr::Atomic {
                op,
                out,
                value,
                unique,
            } => {
                let shape = self.shape_of(info, *value);
                let numel: u32 = shape.iter().product();
                let lin = linear(&shape, &row_major(&shape));
                let name = match op {
                    AtomicOp::Add => "add",
                    AtomicOp::Max => "max",
                    AtomicOp::Min => "min",
                    AtomicOp::And => "and",
                    AtomicOp::Or => "or",
                    AtomicOp::Xor => "xor",
                    AtomicOp::Xchg => "xchg",
                };
                if *unique {
                    format!("tl.atomic_{name}(out{out} + pid * {numel} + {lin}, v{value})")
                } else {
                    format!("tl.atomic_{name}(out{out} + {lin} % 4, v{value})")
                }
            }
        }
    }
}

fn trip_text(t: &Trip) -> String {
    match t {
        Trip::Const(n) => n.to_string(),
        Trip::Arg(k) => format!("s{k}"),
    }
}

fn tuple(shape: &[u32]) -> String {
    let sh: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if sh.len() == 1 {
        format!("({},)", sh[0])
    } else {
        format!("({})", sh.join(", "))
    }
}

/// A load printed through a carried pointer tile: its variable, input, shape, access.
type CarriedLoad = (Var, usize, Vec<u32>, Access);

/// The loads of a loop body (of the loop at `depth`) printed through carried pointer
/// tiles: those marked [`Access::carried`] whose shift is this loop's own index, in the
/// body or its branches (a nested loop's body has its own).
fn carried_loads(body: &[Stmt], depth: usize) -> Vec<CarriedLoad> {
    let index = body.iter().find_map(|st| match st {
        Stmt::Let(v, Expr::Scalar(Scalar::LoopIndex(d))) if *d == depth => Some(*v),
        _ => None,
    });
    let mut out = vec![];
    fn walk(body: &[Stmt], index: Var, out: &mut Vec<CarriedLoad>) {
        for st in body {
            match st {
                Stmt::Let(
                    v,
                    Expr::Load {
                        input,
                        shape,
                        access,
                        ..
                    },
                ) if access.carried && access.shift.is_some_and(|(sv, _)| sv == index) => {
                    out.push((*v, *input, shape.clone(), access.clone()));
                }
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    walk(then_body, index, out);
                    walk(else_body, index, out);
                }
                _ => {}
            }
        }
    }
    if let Some(index) = index {
        walk(body, index, &mut out);
    }
    out
}

/// `p{v} += scale` for each carried pointer tile, at the end of the loop body.
fn advance_pointers(s: &mut String, pad: &str, ptrs: &[CarriedLoad]) {
    for (v, _, _, access) in ptrs {
        if let Some((_, k)) = access.shift {
            writeln!(s, "{pad}    p{v} += {k}").unwrap();
        }
    }
}
