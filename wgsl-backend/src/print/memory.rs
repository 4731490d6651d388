//! Memory: how each buffer is declared and accessed ([`Repr`]: plain, atomic,
//! packed 8- and 16-bit elements, `vec4`), the analyses that choose it, global and
//! shared loads and stores (masked, wide), atomics and barriers.

use super::{backend_err, Printer};
use tilewise_core::ir::{AtomicOp, DType};
use tilewise_core::thread_ir::{is_address, Expr, ParamKind, Reg, Stmt, ThreadKernel};
use tilewise_core::{Diagnostic, Result};

/// How a buffer parameter is declared and accessed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Repr {
    /// `array<T>` of the element type.
    Plain,
    /// `array<atomic<u32|i32>>`, 32-bit elements (f32 through bit casts).
    Atomic32,
    /// `bits`-wide elements packed in `u32` words; `atomic` when written.
    Packed { bits: u32, atomic: bool },
    /// `array<vec4<T>>` of 32-bit or native f16 elements: every wide access moves 4.
    Vec4,
}

/// The lane counts of each buffer's wide accesses (every access of it, scalar ones
/// included as 1, once it has a wide one).
pub(super) type WideAccesses = std::collections::HashMap<u32, std::collections::BTreeSet<u8>>;

pub(super) fn wide_accesses(k: &ThreadKernel, b: &[Stmt], out: &mut WideAccesses) {
    let mut all = WideAccesses::new();
    all_accesses(k, b, &mut all);
    for (buf, lanes) in all {
        if lanes.iter().any(|&l| l > 1) {
            out.insert(buf, lanes);
        }
    }
}

fn all_accesses(k: &ThreadKernel, b: &[Stmt], out: &mut WideAccesses) {
    fn note(k: &ThreadKernel, out: &mut WideAccesses, buf: u32, r: Reg) {
        out.entry(buf).or_default().insert(k.reg_ty(r).lanes);
    }
    for s in b {
        match s {
            Stmt::Assign {
                dst,
                expr: Expr::Load { buf, .. },
            } => note(k, out, *buf, *dst),
            Stmt::Store { buf, value, .. } => note(k, out, *buf, *value),
            Stmt::For { body, .. } => all_accesses(k, body, out),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                all_accesses(k, then_body, out);
                all_accesses(k, else_body, out);
            }
            Stmt::While {
                cond_body, body, ..
            } => {
                all_accesses(k, cond_body, out);
                all_accesses(k, body, out);
            }
            _ => {}
        }
    }
}

/// Marks the 32-bit shared arrays that 4-lane shared loads or stores touch.
pub(super) fn shared_vec4_arrays(k: &ThreadKernel, b: &[Stmt], out: &mut [bool]) {
    for s in b {
        let touched = match s {
            Stmt::Assign {
                dst,
                expr: Expr::SharedLoad { arr, .. },
            } => Some((*arr, *dst)),
            Stmt::SharedStore { arr, value, .. } => Some((*arr, *value)),
            _ => None,
        };
        if let Some((arr, r)) = touched {
            let dt = k.shared[arr as usize].dtype;
            if k.reg_ty(r).lanes == 4 && dt.size_bytes() == 4 && dt != DType::I1 {
                out[arr as usize] = true;
            }
        }
        for body in s.bodies() {
            shared_vec4_arrays(k, body, out);
        }
    }
}

/// Buffer parameters used by atomics.
/// Whether `body` reaches memory through an address (`thread_ir::FLAT` or
/// `thread_ir::BYTE_ADDRESS`) or takes a buffer's address: WGSL has no addresses, and
/// the lowering refuses what makes them.
pub(super) fn uses_addresses(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Assign {
            expr: Expr::Load { buf, .. },
            ..
        }
        | Stmt::Store { buf, .. }
        | Stmt::Atomic { buf, .. }
        | Stmt::AtomicCas { buf, .. }
        | Stmt::AsyncCopy { buf, .. } => is_address(*buf),
        Stmt::Assign {
            expr: Expr::Address(_),
            ..
        } => true,
        Stmt::For { body, .. } => uses_addresses(body),
        Stmt::If {
            then_body,
            else_body,
            ..
        } => uses_addresses(then_body) || uses_addresses(else_body),
        Stmt::While {
            cond_body, body, ..
        } => uses_addresses(cond_body) || uses_addresses(body),
        _ => false,
    })
}

pub(super) fn atomic_buffers(body: &[Stmt]) -> Vec<u32> {
    let mut out = vec![];
    fn go(b: &[Stmt], out: &mut Vec<u32>) {
        for s in b {
            match s {
                Stmt::Atomic { buf, .. } | Stmt::AtomicCas { buf, .. } => out.push(*buf),
                Stmt::For { body, .. } => go(body, out),
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    go(then_body, out);
                    go(else_body, out);
                }
                Stmt::While {
                    cond_body, body, ..
                } => {
                    go(cond_body, out);
                    go(body, out);
                }
                _ => {}
            }
        }
    }
    go(body, &mut out);
    out
}

impl Printer<'_> {
    /// Element `idx` (an `i32` expression) of shared array `arr`: a component of a
    /// `vec4` in arrays declared so.
    fn shared_elem(&self, arr: u32, idx: &str) -> String {
        if self.shared_vec4[arr as usize] {
            format!("s{arr}[({idx}) >> 2u][({idx}) & 3]")
        } else {
            format!("s{arr}[{idx}]")
        }
    }

    /// Reads element `idx` (an absolute u32 index expression) of buffer `p`.
    fn read_elem(&self, p: u32, idx: &str) -> String {
        let ParamKind::Buffer { dtype, .. } = self.k.params[p as usize].kind else {
            return "0".into();
        };
        match self.reprs[p as usize].unwrap_or(Repr::Plain) {
            Repr::Plain => format!("b{p}[{idx}]"),
            Repr::Vec4 => format!("b{p}[({idx}) >> 2u][({idx}) & 3u]"),
            Repr::Atomic32 => match dtype {
                DType::F32 => format!("bitcast<f32>(atomicLoad(&b{p}[{idx}]))"),
                _ => format!("atomicLoad(&b{p}[{idx}])"),
            },
            Repr::Packed { bits, atomic } => {
                let per = 32 / bits;
                let word_idx = format!("({idx}) / {per}u");
                let word = if atomic {
                    format!("atomicLoad(&b{p}[{word_idx}])")
                } else {
                    format!("b{p}[{word_idx}]")
                };
                let mask = if bits == 8 { "0xffu" } else { "0xffffu" };
                let raw = format!("(({word} >> ((({idx}) % {per}u) * {bits}u)) & {mask})");
                self.decode_packed(dtype, &raw)
            }
        }
    }

    /// The value of `raw` (the bits of one element of `dtype`, in the low bits of a
    /// u32) as a register of `dtype`.
    fn decode_packed(&self, dtype: DType, raw: &str) -> String {
        match dtype {
            DType::I1 => format!("({raw} != 0u)"),
            DType::I8 => format!("((bitcast<i32>({raw}) << 24u) >> 24u)"),
            DType::I16 => format!("((bitcast<i32>({raw}) << 16u) >> 16u)"),
            DType::U8 | DType::U16 => raw.to_string(),
            DType::BF16 => format!("bitcast<f32>({raw} << 16u)"),
            DType::F16 if self.f16 => format!("f16(unpack2x16float({raw}).x)"),
            DType::F16 => format!("unpack2x16float({raw}).x"),
            _ => raw.to_string(),
        }
    }

    /// The raw bits of a register value `v` of `dt` for a packed store.
    pub(super) fn packed_bits(&self, dt: DType, v: &str) -> String {
        match dt {
            DType::I1 => format!("select(0u, 1u, {v})"),
            DType::I8 | DType::I16 => format!("bitcast<u32>({v})"),
            DType::BF16 => format!("tw_bf16_bits({v})"),
            DType::F16 if self.f16 => format!("tw_f16_bits(f32({v}))"),
            DType::F16 => format!("tw_f16_bits({v})"),
            _ => v.to_string(),
        }
    }

    /// A statement writing `v` (a register of the buffer's dtype) at `idx`.
    fn write_elem(&self, p: u32, idx: &str, v: &str) -> String {
        let ParamKind::Buffer { dtype, .. } = self.k.params[p as usize].kind else {
            return String::new();
        };
        match self.reprs[p as usize].unwrap_or(Repr::Plain) {
            Repr::Plain => format!("b{p}[{idx}] = {v};"),
            Repr::Vec4 => format!("b{p}[({idx}) >> 2u][({idx}) & 3u] = {v};"),
            Repr::Atomic32 => match dtype {
                DType::F32 => format!("atomicStore(&b{p}[{idx}], bitcast<u32>({v}));"),
                _ => format!("atomicStore(&b{p}[{idx}], {v});"),
            },
            Repr::Packed { bits, .. } => {
                let per = 32 / bits;
                let mask = if bits == 8 { "0xffu" } else { "0xffffu" };
                let bitsv = self.packed_bits(dtype, v);
                format!(
                    "{{ let tw_e = {idx}; let tw_w = tw_e / {per}u; let tw_s = (tw_e % {per}u) * {bits}u; atomicAnd(&b{p}[tw_w], ~({mask} << tw_s)); atomicOr(&b{p}[tw_w], (({bitsv}) & {mask}) << tw_s); }}"
                )
            }
        }
    }

    /// The absolute element index (a u32 expression) of `r` in buffer `p`'s view.
    fn index(&self, p: u32, r: Reg) -> String {
        format!("({} + bitcast<u32>(r{}))", self.base(p), r.0)
    }

    /// A load of `dt` from buffer `buf` into the register being assigned (of
    /// `lanes_of_dst` lanes).
    pub(super) fn load(
        &self,
        dt: DType,
        buf: u32,
        index: Reg,
        mask: Option<Reg>,
        other: Option<Reg>,
    ) -> String {
        if self.lanes_of_dst > 1 {
            let n = self.lanes_of_dst;
            let idx = self.index(buf, index);
            let ty = self.reg_decl(dt, n);
            // With a mask, every element index is the view's first element where
            // the mask is false: nothing outside the view is ever read.
            let guard = |p: &Self, i: String| match mask {
                Some(m) => format!("select({}, {i}, r{})", p.base(buf), m.0),
                None => i,
            };
            let whole = if n == 4 && self.reprs[buf as usize] == Some(Repr::Vec4) {
                format!("b{buf}[({}) >> 2u]", guard(self, idx.clone()))
            } else {
                let parts: Vec<String> = (0..n)
                    .map(|l| self.read_elem(buf, &guard(self, format!("({idx}) + {l}u"))))
                    .collect();
                format!("{ty}({})", parts.join(", "))
            };
            match mask {
                Some(m) => {
                    let o = match other {
                        Some(o) => format!("{ty}(r{})", o.0),
                        None => format!("{ty}()"),
                    };
                    format!("select({o}, {whole}, r{})", m.0)
                }
                None => whole,
            }
        } else {
            let idx = self.index(buf, index);
            match mask {
                // Where the mask is false the view's first element is read (never
                // anything outside the view) and `other`, or zero, is the value.
                Some(m) => {
                    let safe = format!("select({}, {idx}, r{})", self.base(buf), m.0);
                    let o = match other {
                        Some(o) => format!("r{}", o.0),
                        None => format!("{}()", self.rty(dt)),
                    };
                    format!("select({o}, {}, r{})", self.read_elem(buf, &safe), m.0)
                }
                None => self.read_elem(buf, &idx),
            }
        }
    }

    /// A load from shared array `arr` into the register being assigned.
    pub(super) fn shared_load(&self, dt: DType, arr: u32, index: Reg) -> String {
        if self.lanes_of_dst == 4 && self.shared_vec4[arr as usize] {
            format!("s{arr}[r{} >> 2u]", index.0)
        } else if self.lanes_of_dst > 1 {
            let parts: Vec<String> = (0..self.lanes_of_dst)
                .map(|l| self.shared_elem(arr, &format!("r{} + {l}", index.0)))
                .collect();
            format!(
                "{}({})",
                self.reg_decl(dt, self.lanes_of_dst),
                parts.join(", ")
            )
        } else if self.k.shared[arr as usize].dtype == DType::I1 {
            format!("(s{arr}[r{}] != 0u)", index.0)
        } else {
            self.shared_elem(arr, &format!("r{}", index.0))
        }
    }

    /// A store to buffer `buf`, element by element unless the buffer is `vec4`, under
    /// `mask`.
    pub(super) fn store(
        &mut self,
        depth: usize,
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    ) {
        let idx = self.index(buf, index);
        let n = self.lanes(value);
        let w = if n == 4 && self.reprs[buf as usize] == Some(Repr::Vec4) {
            format!("b{buf}[({idx}) >> 2u] = r{};", value.0)
        } else if n > 1 {
            (0..n)
                .map(|l| {
                    self.write_elem(
                        buf,
                        &format!("({idx}) + {l}u"),
                        &format!("r{}[{l}]", value.0),
                    )
                })
                .collect::<Vec<_>>()
                .join(" ")
        } else {
            self.write_elem(buf, &idx, &format!("r{}", value.0))
        };
        match mask {
            Some(m) => self.line(depth, &format!("if (r{}) {{ {w} }}", m.0)),
            None => self.line(depth, &w),
        }
    }

    /// A store to shared array `arr`: one `vec4`, element by element, or one element
    /// (`i1` as a `u32`).
    pub(super) fn shared_store(&mut self, depth: usize, arr: u32, index: Reg, value: Reg) {
        if self.lanes(value) == 4 && self.shared_vec4[arr as usize] {
            self.line(
                depth,
                &format!("s{arr}[r{} >> 2u] = r{};", index.0, value.0),
            );
        } else if self.lanes(value) > 1 {
            for l in 0..self.lanes(value) {
                let at = self.shared_elem(arr, &format!("r{} + {l}", index.0));
                self.line(depth, &format!("{at} = r{}[{l}];", value.0));
            }
        } else {
            let v = if self.k.shared[arr as usize].dtype == DType::I1 {
                format!("select(0u, 1u, r{})", value.0)
            } else {
                format!("r{}", value.0)
            };
            let at = self.shared_elem(arr, &format!("r{}", index.0));
            self.line(depth, &format!("{at} = {v};"));
        }
    }

    /// An atomic read-modify-write of buffer `buf` under `mask`, the old value to `dst`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        depth: usize,
        dst: Reg,
        op: AtomicOp,
        buf: u32,
        index: Reg,
        value: Reg,
        mask: Option<Reg>,
    ) -> Result<()> {
        let idx = self.index(buf, index);
        let ParamKind::Buffer { dtype, .. } = self.k.params[buf as usize].kind else {
            return Err(Diagnostic::internal("atomic on a scalar"));
        };
        let code = self
            .atomic_code(op, buf, &idx, &format!("r{}", value.0), dtype)?
            .replace("RESULT", &format!("r{}", dst.0));
        match mask {
            Some(m) => self.line(depth, &format!("if (r{}) {{ {code} }}", m.0)),
            None => self.line(depth, &code),
        }
        Ok(())
    }

    /// A compare-and-swap of buffer `buf`, the old value to `dst`.
    pub(super) fn atomic_cas(
        &mut self,
        depth: usize,
        dst: Reg,
        buf: u32,
        index: Reg,
        cmp: Reg,
        value: Reg,
    ) -> Result<()> {
        let idx = self.index(buf, index);
        let ParamKind::Buffer { dtype, .. } = self.k.params[buf as usize].kind else {
            return Err(Diagnostic::internal("atomic on a scalar"));
        };
        let (c, v, back) = match dtype {
            DType::F32 => (
                format!("bitcast<u32>(r{})", cmp.0),
                format!("bitcast<u32>(r{})", value.0),
                "bitcast<f32>",
            ),
            DType::I32 | DType::U32 => (format!("r{}", cmp.0), format!("r{}", value.0), ""),
            other => {
                return Err(backend_err(
                    &self.k.name,
                    format!("atomic_cas on {other} elements"),
                ))
            }
        };
        // The weak exchange may fail spuriously (old value equal to the
        // comparand, nothing stored): retry until it stores or truly fails.
        self.line(depth, &format!("loop {{ let tw_x = atomicCompareExchangeWeak(&b{buf}[{idx}], {c}, {v}); if (tw_x.exchanged || tw_x.old_value != {c}) {{ r{} = {back}(tw_x.old_value); break; }} }}", dst.0));
        Ok(())
    }

    /// A control barrier ordering workgroup memory.
    pub(super) fn barrier(&mut self, depth: usize) {
        self.line(depth, "workgroupBarrier();");
    }

    /// A control barrier ordering storage memory, then workgroup memory too.
    pub(super) fn storage_barrier(&mut self, depth: usize) {
        self.line(depth, "storageBarrier();");
        self.line(depth, "workgroupBarrier();");
    }

    /// The atomic read-modify-write of element `idx` of buffer `p`, with `RESULT`
    /// standing for the register that receives the old value.
    fn atomic_code(&self, op: AtomicOp, p: u32, idx: &str, v: &str, dt: DType) -> Result<String> {
        let a = format!("&b{p}[{idx}]");
        if dt == DType::F32 {
            // Compare-and-swap loop on the bits.
            let apply = match op {
                AtomicOp::Add => format!("bitcast<f32>(tw_old) + {v}"),
                AtomicOp::Max => format!("tw_maxf(bitcast<f32>(tw_old), {v})"),
                AtomicOp::Min => format!("tw_minf(bitcast<f32>(tw_old), {v})"),
                AtomicOp::Xchg => v.to_string(),
                _ => {
                    return Err(backend_err(
                        &self.k.name,
                        format!("atomic {} on f32", op.name()),
                    ))
                }
            };
            return Ok(format!(
                "loop {{ let tw_old = atomicLoad({a}); let tw_r = atomicCompareExchangeWeak({a}, tw_old, bitcast<u32>({apply})); if (tw_r.exchanged) {{ RESULT = bitcast<f32>(tw_old); break; }} }}"
            ));
        }
        if !matches!(dt, DType::I32 | DType::U32) {
            return Err(backend_err(
                &self.k.name,
                format!("atomics on {dt} elements"),
            ));
        }
        let f = match op {
            AtomicOp::Add => "atomicAdd",
            AtomicOp::Max => "atomicMax",
            AtomicOp::Min => "atomicMin",
            AtomicOp::And => "atomicAnd",
            AtomicOp::Or => "atomicOr",
            AtomicOp::Xor => "atomicXor",
            AtomicOp::Xchg => "atomicExchange",
        };
        Ok(format!("RESULT = {f}({a}, {v});"))
    }
}

#[cfg(test)]
mod tests {
    use crate::{print_wgsl, validate_wgsl, Capabilities};

    /// A masked load without `other` reads nothing outside the view where its mask is
    /// false and gives zero there (the printer once read the unguarded index and
    /// ignored the mask).
    #[test]
    fn masked_load_without_other_is_guarded_and_zero() {
        let text = "thread_kernel @k(x: buffer<f32>, out: mut buffer<f32>, n: i32) threads 32 {
  r0: i32 = thread_id
  r1: i32 = param n
  r2: i1 = cmp lt r0, r1
  r3: f32 = load x[r0] mask r2
  store out[r0] = r3
}
";
        let k = tilewise_core::thread_ir::parse(text).unwrap();
        let caps = Capabilities::offline(false, false);
        let w = print_wgsl(&k, &caps).unwrap();
        validate_wgsl("k", &w.source, &caps).unwrap();
        let line = w
            .source
            .lines()
            .find(|l| l.contains("r3") && l.contains('='))
            .expect("the load");
        assert!(line.contains("select(f32()"), "{line}");
        assert!(
            line.contains("b0[select(P.bases[0][0], "),
            "the index is guarded: {line}"
        );
    }
}
