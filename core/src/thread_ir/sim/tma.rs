//! Transaction barriers (`mbarrier`) and tensor memory accelerator copies in the
//! simulator. A copy reads its box where the tensor map says (the map built from the
//! launch's arguments as the host builds it, [`TensorMap`]), zero-fills what lies
//! outside the tensor, and lays the box out in shared memory as
//! [`TensorMap::smem_byte_offset`] draws the hardware's swizzles (not the lowering's own
//! layout code). Until the barrier phase it completes on is waited for, its
//! destination holds poison, and any access to it is reported.
//!
//! What the simulator holds the lowering to:
//! - A barrier is initialised before use, with nothing pending on it; a thread other
//!   than the initialising one uses it only after a barrier (the race check).
//! - A phase completes when its arrivals are in and the copies that complete on it
//!   have delivered exactly the bytes the arrivals announced; a wait on a phase that
//!   cannot complete (an arrival or bytes missing, or more bytes than announced) is a
//!   lowering bug rather than the hang the GPU would show.
//! - Copies land, for every thread, at the wait that completes their phase (the
//!   program's threads wait together, in lockstep).

use super::{bug, ints, poison, set1, Sim};
use crate::diag::Result;
use crate::interp::value::Data;
use crate::interp::RtArg;
use crate::launch::ScalarValue;
use crate::thread_ir::tma::{Extent, TensorMap};
use crate::thread_ir::{ParamKind, Stmt};
use std::collections::HashMap;

/// One barrier's state.
#[derive(Default)]
struct Mbarrier {
    /// Phases completed since the initialisation.
    phase: u64,
    /// Arrivals a phase expects, and those in for the current one.
    count: u32,
    arrived: u32,
    /// Bytes the current phase's arrivals announced, and those its copies carry.
    announced: u64,
    delivered: u64,
    /// The current phase's copies: (array, element, value).
    copies: Vec<(u32, usize, Data)>,
}

/// The program's barriers, by (array, element).
#[derive(Default)]
pub(super) struct MbarrierState {
    bars: HashMap<(u32, usize), Mbarrier>,
}

impl Sim<'_> {
    /// Runs a transaction-barrier or TMA statement for the active threads.
    pub(super) fn tma_stmt(&mut self, s: &Stmt, active: &[bool]) -> Result<()> {
        let t = self.t;
        let at = |sim: &Self, arr: u32, index: crate::thread_ir::Reg| -> Result<Vec<usize>> {
            let len = sim.shared[arr as usize].len() as i64;
            ints(sim.reg(index)?)?
                .iter()
                .map(|&i| {
                    if (0..len).contains(&i) {
                        Ok(i as usize)
                    } else {
                        Err(bug(format!(
                            "barrier {i} outside shared array {arr} of {len}"
                        )))
                    }
                })
                .collect()
        };
        match s {
            Stmt::MbarrierInit { arr, index, count } => {
                let idx = at(self, *arr, *index)?;
                for i in (0..t).filter(|&i| active[i]) {
                    let key = (*arr, idx[i]);
                    if self
                        .mbarriers
                        .bars
                        .get(&key)
                        .is_some_and(|b| !b.copies.is_empty())
                    {
                        return Err(bug(format!(
                            "barrier {} of `{}` initialised with copies pending on it",
                            idx[i], self.k.shared[*arr as usize].name
                        )));
                    }
                    self.race_write(*arr, idx[i], i)?;
                    self.mbarriers.bars.insert(
                        key,
                        Mbarrier {
                            count: *count,
                            ..Default::default()
                        },
                    );
                }
            }
            Stmt::MbarrierArriveTx { arr, index, bytes } => {
                let idx = at(self, *arr, *index)?;
                for i in (0..t).filter(|&i| active[i]) {
                    self.race_read(*arr, idx[i], i)?;
                    let b = self.barrier(*arr, idx[i])?;
                    b.arrived += 1;
                    b.announced += *bytes as u64;
                    if b.arrived > b.count {
                        return Err(bug(format!(
                            "{} arrivals on barrier {} initialised for {}",
                            b.arrived, idx[i], b.count
                        )));
                    }
                }
            }
            Stmt::MbarrierWait { arr, index, parity } => {
                let idx = at(self, *arr, *index)?;
                let par = ints(self.reg(*parity)?)?.to_vec();
                for i in (0..t).filter(|&i| active[i]) {
                    self.race_read(*arr, idx[i], i)?;
                    let current = self.barrier(*arr, idx[i])?.phase;
                    if (current & 1) as i64 == par[i] & 1 {
                        self.complete_phase(*arr, idx[i])?;
                    }
                }
            }
            Stmt::TmaLoad {
                arr,
                shared_index,
                map,
                coords,
                bar_arr,
                bar_index,
            } => {
                let m = match self.k.params.get(*map as usize).map(|p| &p.kind) {
                    Some(ParamKind::TensorMap(m)) => m.clone(),
                    _ => return Err(bug(format!("parameter {map} is not a tensor map"))),
                };
                let dst = ints(self.reg(*shared_index)?)?.to_vec();
                let bars = at(self, *bar_arr, *bar_index)?;
                let cs: Vec<Vec<i64>> = coords
                    .iter()
                    .map(|c| ints(self.reg(*c)?).map(|v| v.to_vec()))
                    .collect::<Result<_>>()?;
                for i in (0..t).filter(|&i| active[i]) {
                    let origin: Vec<i64> = cs.iter().map(|c| c[i]).collect();
                    self.race_read(*bar_arr, bars[i], i)?;
                    self.tma_copy(&m, *arr, dst[i], &origin, (*bar_arr, bars[i]), i)?;
                }
            }
            _ => return Err(bug("not a TMA statement")),
        }
        Ok(())
    }

    fn barrier(&mut self, arr: u32, e: usize) -> Result<&mut Mbarrier> {
        let name = &self.k.shared[arr as usize].name;
        let msg = format!("barrier {e} of `{name}` used before its initialisation");
        self.mbarriers
            .bars
            .get_mut(&(arr, e))
            .ok_or_else(|| bug(msg))
    }

    /// Completes the current phase of a barrier (a wait needs it): its copies land.
    fn complete_phase(&mut self, arr: u32, e: usize) -> Result<()> {
        let name = self.k.shared[arr as usize].name.clone();
        let b = self.barrier(arr, e)?;
        if b.arrived < b.count || b.delivered != b.announced {
            return Err(bug(format!(
                "a wait on barrier {e} of `{name}` never completes: {} of {} arrivals, {} of {} bytes announced delivered",
                b.arrived, b.count, b.delivered, b.announced
            )));
        }
        let copies = std::mem::take(&mut b.copies);
        b.phase += 1;
        b.arrived = 0;
        b.announced = 0;
        b.delivered = 0;
        for (a, at, v) in copies {
            // The asynchronous proxy wrote it: no thread's write for the race check.
            self.races.landed(a, at);
            self.wgmma.note_shared_write(a, at, false)?;
            set1(&mut self.shared[a as usize], at, &v);
            self.overlay_written(a, at);
        }
        Ok(())
    }

    /// One copy of `m`'s box at `origin` into `arr` from element `dst`, completing on
    /// barrier `bar`, issued by thread `tid`.
    fn tma_copy(
        &mut self,
        m: &TensorMap,
        arr: u32,
        dst: i64,
        origin: &[i64],
        bar: (u32, usize),
        tid: usize,
    ) -> Result<()> {
        let sdt = self.k.shared[arr as usize].dtype;
        let elem = sdt.size_bytes() as i64;
        let repeat = (8 * m.swizzle).max(128) as i64;
        let len = self.shared[arr as usize].len() as i64;
        let box_elems: i64 = m.box_dims.iter().map(|&b| b as i64).product();
        if dst < 0 || (dst * elem) % repeat != 0 || dst + box_elems > len {
            return Err(bug(format!(
                "a TMA copy to element {dst} of shared array {arr} ({len} elements): outside, or not aligned to {repeat} bytes"
            )));
        }
        let value = |e: &Extent| -> Result<i64> {
            match e {
                Extent::Const(c) => Ok(*c),
                Extent::Param(p) => match self.args.get(*p as usize) {
                    Some(RtArg::Scalar(ScalarValue::Int(_, v))) => Ok(*v),
                    _ => Err(bug(format!(
                        "tensor map extent: parameter {p} is not an integer"
                    ))),
                },
            }
        };
        let dims: Vec<i64> = m.dims.iter().map(value).collect::<Result<_>>()?;
        let mut strides = vec![1i64];
        for s in &m.strides {
            strides.push(value(s)?);
        }
        let rank = m.rank();
        let mut index = vec![0u32; rank];
        for _ in 0..box_elems {
            let inside = (0..rank).all(|d| (0..dims[d]).contains(&(origin[d] + index[d] as i64)));
            let v = if inside {
                let e: i64 = (0..rank)
                    .map(|d| (origin[d] + index[d] as i64) * strides[d])
                    .sum();
                let (b, e, bdt) = self.element(m.buffer, e, sdt)?;
                let mut one = Data::zeros(bdt, 1);
                self.load_global(b, bdt, e, &mut one);
                one
            } else {
                Data::zeros(sdt, 1)
            };
            let at = (dst + (m.smem_byte_offset(&index) as i64) / elem) as usize;
            self.races.issue(arr, at, tid).map_err(|e| {
                bug(format!(
                    "shared-memory race in `{}`: {e}",
                    self.k.shared[arr as usize].name
                ))
            })?;
            self.wgmma.note_shared_write(arr, at, false)?;
            set1(&mut self.shared[arr as usize], at, &poison(sdt));
            self.overlay_written(arr, at);
            self.barrier(bar.0, bar.1)?.copies.push((arr, at, v));
            // The next box element, innermost dimension fastest.
            for (i, &extent) in index.iter_mut().zip(&m.box_dims) {
                *i += 1;
                if *i < extent {
                    break;
                }
                *i = 0;
            }
        }
        let b = self.barrier(bar.0, bar.1)?;
        b.delivered += m.box_bytes() as u64;
        if b.delivered > b.announced {
            return Err(bug(format!(
                "TMA copies deliver {} bytes on barrier {} whose phase announced {}",
                b.delivered, bar.1, b.announced
            )));
        }
        Ok(())
    }

    fn race_write(&mut self, arr: u32, e: usize, tid: usize) -> Result<()> {
        let name = &self.k.shared[arr as usize].name;
        self.races
            .write(arr, e, tid)
            .map_err(|m| bug(format!("race on the barriers `{name}`: {m}")))
    }

    fn race_read(&mut self, arr: u32, e: usize, tid: usize) -> Result<()> {
        let name = &self.k.shared[arr as usize].name;
        self.races
            .read(arr, e, tid)
            .map_err(|m| bug(format!("race on the barriers `{name}`: {m}")))
    }
}

/// `args` with a placeholder at each tensor map parameter (no argument feeds them:
/// launchers pair arguments with the other parameters, in order).
pub(super) fn with_tensor_map_slots(
    params: &[crate::thread_ir::Param],
    args: &[RtArg],
) -> Option<Vec<RtArg>> {
    let maps = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::TensorMap(_)))
        .count();
    if maps == 0 || args.len() + maps != params.len() {
        return None;
    }
    let mut given = args.iter();
    Some(
        params
            .iter()
            .map(|p| match p.kind {
                ParamKind::TensorMap(_) => {
                    RtArg::Scalar(ScalarValue::Int(crate::ir::DType::I64, 0))
                }
                _ => given.next().cloned().expect("counted"),
            })
            .collect(),
    )
}
