//! A scalar passed positionally to a `tl.constexpr` parameter is folded into the
//! specialization by its value (as Triton does): launches with different values must
//! not share a compiled kernel. Regression test: the specialization key held only the
//! scalar's dtype and divisibility, so the second launch ran the first one's constant.

mod common;

use common::{module, ok};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def fill(out_ptr, N: tl.constexpr, scale):
    offs = tl.arange(0, 16)
    tl.store(out_ptr + offs, offs * 0 + N * scale)
"#;

#[test]
fn each_constexpr_value_gets_its_own_specialization() {
    let mut devices = vec![
        tilewise::Device::interpreter(),
        tilewise::Device::simulator(),
    ];
    devices.extend(common::wgpu_device());
    devices.extend(common::cuda_device());
    for dev in devices {
        let k = ok(module("fill.py", SRC).kernel("fill"));
        for (n, scale) in [
            (64i32, 1i32),
            (128, 1),
            (48, 2),
            (64, 3),
            (1, 5),
            (16, 1),
            (17, 1),
        ] {
            let out = ok(dev.upload(&[i32::MIN; 16]));
            ok(k.launch(&dev, 1).arg(&out).arg(n).arg(scale).run());
            assert_eq!(
                ok(dev.download::<i32>(&out)),
                vec![n * scale; 16],
                "{}: N = {n}, scale = {scale}",
                dev.name()
            );
        }
    }
}
