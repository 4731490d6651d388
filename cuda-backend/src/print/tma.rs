//! Transaction barriers (`mbarrier`) and copies by the tensor memory accelerator
//! (`cp.async.bulk.tensor`, sm_90): the PTX of [`Stmt::MbarrierInit`],
//! [`Stmt::MbarrierArriveTx`], [`Stmt::MbarrierWait`] and [`Stmt::TmaLoad`]. A tensor map
//! parameter is a 128-byte `.param` array aligned to 64 bytes, read by the copy through
//! its generic address.
//!
//! [`Stmt::MbarrierInit`]: tilewise_core::thread_ir::Stmt::MbarrierInit
//! [`Stmt::MbarrierArriveTx`]: tilewise_core::thread_ir::Stmt::MbarrierArriveTx
//! [`Stmt::MbarrierWait`]: tilewise_core::thread_ir::Stmt::MbarrierWait
//! [`Stmt::TmaLoad`]: tilewise_core::thread_ir::Stmt::TmaLoad

use super::{Class, Printer};
use tilewise_core::thread_ir::Reg;

impl Printer<'_> {
    /// `mbarrier.init` for `count` arrivals, made visible to the asynchronous proxy.
    pub(super) fn mbarrier_init(&mut self, arr: u32, index: Reg, count: u32) {
        let bar = self.shared_addr(arr, index);
        self.ins(format!("mbarrier.init.shared::cta.b64 [{bar}], {count};"));
        self.ins("fence.mbarrier_init.release.cluster;".into());
    }

    /// An arrival that announces `bytes` of copies to the current phase.
    pub(super) fn mbarrier_arrive_tx(&mut self, arr: u32, index: Reg, bytes: u32) {
        let bar = self.shared_addr(arr, index);
        let state = self.tmp(Class::B64);
        self.ins(format!(
            "mbarrier.arrive.expect_tx.shared::cta.b64 {state}, [{bar}], {bytes};"
        ));
    }

    /// Spins until the phase of parity `parity` completes.
    pub(super) fn mbarrier_wait(&mut self, arr: u32, index: Reg, parity: Reg) {
        let bar = self.shared_addr(arr, index);
        let parity = self.reg(parity);
        let done = self.tmp(Class::Pred);
        let again = self.new_label("mbarrier_wait");
        self.label(&again);
        self.ins(format!(
            "mbarrier.try_wait.parity.shared::cta.b64 {done}, [{bar}], {parity};"
        ));
        self.ins(format!("@!{done} bra {again};"));
    }

    /// `cp.async.bulk.tensor` of tensor map parameter `map`'s box at `coords`.
    pub(super) fn tma_load(
        &mut self,
        arr: u32,
        shared_index: Reg,
        map: u32,
        coords: &[Reg],
        bar: (u32, Reg),
    ) {
        let dst = self.shared_addr(arr, shared_index);
        let barrier = self.shared_addr(bar.0, bar.1);
        let address = self.tmp(Class::B64);
        self.ins(format!("mov.u64 {address}, tw_p{map};"));
        self.ins(format!("cvta.param.u64 {address}, {address};"));
        let coords: Vec<String> = coords.iter().map(|&c| self.reg(c)).collect();
        self.ins(format!(
            "cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{dst}], [{address}, {{{}}}], [{barrier}];",
            coords.len(),
            coords.join(", ")
        ));
    }
}
