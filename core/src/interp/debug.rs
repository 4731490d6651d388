//! Debugging ops and checked mode: `device_print`, `device_assert`, and verification of
//! `multiple_of` / `max_contiguous` / `max_constancy` hints.
//!
//! Hint semantics follow Triton's axis analysis rather than "every element": along a
//! dimension, `multiple_of(k)` promises that the first element of every run of
//! consecutive values (`v[i+1] == v[i] + 1`) is divisible by `k` (so the truthful
//! `multiple_of(pid * BLOCK + arange(0, BLOCK), BLOCK)` passes and a constant tile must
//! be divisible everywhere); `max_contiguous(c)` promises that each aligned group of `c`
//! elements holds consecutive values; `max_constancy(c)` that each aligned group holds
//! equal values. A hint with one value applies to the last dimension; with one value
//! per dimension, to each.

use super::eval::Interp;
use super::value::{fmt_index, unflatten, Data, RtValue};
use crate::diag::Result;
use crate::ir::{HintKind, Inst, Value};

impl<'a> Interp<'a> {
    /// The first element that contradicts `hint`, as a located diagnostic.
    pub fn check_hint(
        &self,
        inst: &Inst,
        value: Value,
        hint: &HintKind,
    ) -> Result<Option<crate::Diagnostic>> {
        let sp = inst.span;
        let shape = self.shape(value);
        let v = match self.get(value, sp)? {
            RtValue::Data(t) => match &t.data {
                Data::I(v) => v.clone(),
                Data::F(_) => return Ok(None),
            },
            // Pointers: element offsets (a `multiple_of` on a pointer counts bytes).
            RtValue::Ptr(p) => p.offs.clone(),
            RtValue::Block(_) => return Ok(None),
        };
        let unit = match self.get(value, sp)? {
            RtValue::Ptr(p) if matches!(hint, HintKind::MultipleOf(_)) => {
                p.pointee.size_bytes() as u32
            }
            _ => 1,
        };
        let per_units: Vec<u32>;
        let (name, per) = match hint {
            HintKind::MultipleOf(p) => {
                per_units = p.iter().map(|&k| (k / unit).max(1)).collect();
                ("multiple_of", &per_units)
            }
            HintKind::MaxContiguous(p) => ("max_contiguous", p),
            HintKind::MaxConstancy(p) => ("max_constancy", p),
        };
        let rank = shape.len();
        let mut dims: Vec<(usize, i64)> = vec![];
        if rank == 0 {
            if let HintKind::MultipleOf(p) = hint {
                if let Some(&k) = p.first() {
                    if k > 1 && v[0].rem_euclid(k as i64) != 0 {
                        return Ok(Some(self.false_hint(
                            inst,
                            name,
                            &[],
                            v[0],
                            &format!("not a multiple of {k}"),
                        )));
                    }
                }
            }
            return Ok(None);
        }
        if per.len() == rank {
            dims.extend(per.iter().enumerate().map(|(d, &k)| (d, k as i64)));
        } else if let Some(&k) = per.first() {
            dims.push((rank - 1, k as i64));
        }
        for (d, k) in dims {
            if k <= 1 {
                continue;
            }
            let outer: usize = shape[..d].iter().map(|&x| x as usize).product();
            let len = shape[d] as usize;
            let inner: usize = shape[d + 1..].iter().map(|&x| x as usize).product();
            let group = (k as usize).min(len.max(1));
            for o in 0..outer {
                for i in 0..inner {
                    let at = |l: usize| (o * len + l) * inner + i;
                    for l in 0..len {
                        let (x, flat) = (v[at(l)], at(l));
                        let bad = match hint {
                            HintKind::MultipleOf(_) => {
                                let run_start = l == 0 || v[at(l - 1)].wrapping_add(1) != x;
                                (run_start && x.rem_euclid(k) != 0).then(|| format!("starts a run and is not a multiple of {k}"))
                            }
                            HintKind::MaxContiguous(_) => (l % group != 0 && v[at(l - 1)].wrapping_add(1) != x).then(|| {
                                format!("breaks the run of {group} consecutive values (previous is {})", v[at(l - 1)])
                            }),
                            HintKind::MaxConstancy(_) => (l % group != 0 && v[at(l - 1)] != x)
                                .then(|| format!("breaks the group of {group} equal values (previous is {})", v[at(l - 1)])),
                        };
                        if let Some(why) = bad {
                            let idx = unflatten(flat, shape);
                            return Ok(Some(self.false_hint(inst, name, &idx, x, &why)));
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    fn false_hint(
        &self,
        inst: &Inst,
        name: &str,
        idx: &[usize],
        x: i64,
        why: &str,
    ) -> crate::Diagnostic {
        self.rt_err(
            inst.span,
            &format!("false `{name}` hint"),
            &format!("element {} is {x}, which {why}", fmt_index(idx)),
        )
    }

    pub fn device_print(
        &mut self,
        inst: &Inst,
        prefix: &str,
        values: &[Value],
        hex: bool,
    ) -> Result<()> {
        let sp = inst.span;
        let [x, y, z] = self.pid;
        let mut out = String::new();
        for (k, v) in values.iter().enumerate() {
            let shape = self.shape(*v);
            let label = if values.len() > 1 {
                format!("{prefix} (operand {k})")
            } else {
                prefix.to_string()
            };
            let texts: Vec<String> = match self.get(*v, sp)? {
                RtValue::Data(t) => match &t.data {
                    Data::F(d) if hex => d.iter().map(|f| format!("0x{:x}", f.to_bits())).collect(),
                    Data::F(d) => d.iter().map(|f| format!("{f}")).collect(),
                    Data::I(d) if hex => d.iter().map(|i| format!("0x{i:x}")).collect(),
                    Data::I(d) => d.iter().map(|i| i.to_string()).collect(),
                },
                RtValue::Ptr(p) => p
                    .offs
                    .iter()
                    .map(|o| format!("{}+{o}", self.root_label(p.roots.get(0))))
                    .collect(),
                RtValue::Block(b) => vec![format!("{b:?}")],
            };
            for (i, t) in texts.iter().enumerate() {
                let idx = fmt_index(&unflatten(i, shape));
                out.push_str(&format!("pid ({x}, {y}, {z}) idx {idx} {label}: {t}\n"));
            }
        }
        print!("{out}");
        Ok(())
    }

    pub fn device_assert(&mut self, inst: &Inst, cond: Value, message: &str) -> Result<()> {
        let sp = inst.span;
        let c = match &self.tile(cond, sp)?.data {
            Data::I(c) => c,
            Data::F(_) => return Err(self.ierr(sp, "device_assert condition is not i1")),
        };
        if let Some(i) = c.iter().position(|&b| b == 0) {
            let idx = fmt_index(&unflatten(i, self.shape(cond)));
            return Err(self.rt_err(
                sp,
                "device assertion failed",
                &format!("`{message}` is false at element {idx}"),
            ));
        }
        Ok(())
    }
}
