//! `tl.join`, `tl.split`, `tl.interleave` and `tl.cat` on every executor, against
//! host-side index arithmetic, bit for bit (values are only moved: NaNs and signed
//! zeros among the inputs must arrive unchanged). Includes the persistent-matmul
//! tutorial's epilogue split (reshape to `(M, 2, N/2)`, permute, split).

mod common;

use common::{cuda_device, err, module, ok, wgpu_device, Rng};
use tilewise::{Device, ErrorKind};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def pairs(x_ptr, y_ptr, join_ptr, lo_ptr, hi_ptr, inter_ptr, cat0_ptr, cat1_ptr,
          back_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)[:, None]
    rn = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rm * N + rn)
    y = tl.load(y_ptr + rm * N + rn)
    j = tl.join(x, y)
    r2 = tl.arange(0, 2)[None, None, :]
    tl.store(join_ptr + (rm[:, :, None] * N + rn[:, :, None]) * 2 + r2, j)
    # The tutorial's sub-tiled epilogue: halves of each row.
    acc = tl.reshape(x, (M, 2, N // 2))
    acc = tl.permute(acc, (0, 2, 1))
    lo, hi = tl.split(acc)
    rh = tl.arange(0, N // 2)[None, :]
    tl.store(lo_ptr + rm * (N // 2) + rh, lo)
    tl.store(hi_ptr + rm * (N // 2) + rh, hi)
    tl.store(inter_ptr + rm * (2 * N) + tl.arange(0, 2 * N)[None, :], tl.interleave(x, y))
    tl.store(cat0_ptr + tl.arange(0, 2 * M)[:, None] * N + rn, tl.cat(x, y, dim=0))
    tl.store(cat1_ptr + rm * (2 * N) + tl.arange(0, 2 * N)[None, :], tl.cat(x, y, dim=1))
    # split undoes join; a scalar pair splits into scalars.
    a, b = j.split()
    s0, s1 = tl.split(tl.join(tl.sum(x, axis=1), tl.max(y, axis=1)))
    tl.store(back_ptr + rm * N + rn, tl.where(rn < N // 2, a, b))
    p, q = tl.split(tl.join(tl.load(x_ptr), tl.load(y_ptr)))
    tl.store(back_ptr + M * N + tl.arange(0, 2), tl.join(q, p))
    tl.store(back_ptr + M * N + 2 + tl.arange(0, M), s0 - tl.sum(x, axis=1) + s1 - tl.max(y, axis=1))

@triton.jit
def bad_split(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    a, b = tl.split(x)

@triton.jit
def mixed_join(x_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    j = tl.join(x, tl.arange(0, N))
"#;

fn devices() -> Vec<Device> {
    let mut d = vec![
        Device::interpreter(),
        Device::simulator(),
        Device::simulator_ptx(),
        Device::simulator_coop(),
    ];
    d.extend(wgpu_device());
    d.extend(cuda_device());
    d
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn join_split_interleave_cat_move_values_exactly() {
    let m = module("pairs.py", SRC);
    let k = ok(m.kernel("pairs"));
    let (mm, nn) = (8usize, 16usize);
    let mut rng = Rng::new(91);
    let mut x = rng.vec_f32(mm * nn, -3.0, 3.0);
    let y = rng.vec_f32(mm * nn, -3.0, 3.0);
    x[5] = -0.0;
    x[nn + 3] = f32::from_bits(0x7fc0_1234); // a NaN with a payload
                                             // Host references by index arithmetic.
    let at = |v: &[f32], r: usize, c: usize| v[r * nn + c];
    let mut join = vec![];
    let mut inter = vec![];
    let mut cat1 = vec![];
    for r in 0..mm {
        for c in 0..nn {
            join.extend([at(&x, r, c), at(&y, r, c)]);
            inter.extend([at(&x, r, c), at(&y, r, c)]);
        }
        cat1.extend((0..nn).map(|c| at(&x, r, c)));
        cat1.extend((0..nn).map(|c| at(&y, r, c)));
    }
    let half = nn / 2;
    let lo: Vec<f32> = (0..mm)
        .flat_map(|r| (0..half).map(move |c| (r, c)))
        .map(|(r, c)| at(&x, r, c))
        .collect();
    let hi: Vec<f32> = (0..mm)
        .flat_map(|r| (0..half).map(move |c| (r, c)))
        .map(|(r, c)| at(&x, r, c + half))
        .collect();
    let cat0: Vec<f32> = x.iter().chain(&y).copied().collect();
    let back_rows: Vec<f32> = (0..mm * nn)
        .map(|i| if i % nn < half { x[i] } else { y[i] })
        .collect();
    for dev in devices() {
        let xb = ok(dev.upload(&x));
        let yb = ok(dev.upload(&y));
        let outs: Vec<_> = [
            2 * mm * nn,
            mm * half,
            mm * half,
            2 * mm * nn,
            2 * mm * nn,
            2 * mm * nn,
            mm * nn + 2 + mm,
        ]
        .iter()
        .map(|&n| common::poisoned_f32(&dev, n))
        .collect();
        let mut l = k.launch(&dev, 1).arg(&xb).arg(&yb);
        for o in &outs {
            l = l.arg(o);
        }
        ok(l.constexpr("M", mm as i64).constexpr("N", nn as i64).run());
        let got: Vec<Vec<f32>> = outs.iter().map(|o| ok(dev.download::<f32>(o))).collect();
        let name = dev.name();
        assert_eq!(bits(&got[0]), bits(&join), "{name}: join");
        assert_eq!(bits(&got[1]), bits(&lo), "{name}: split low halves");
        assert_eq!(bits(&got[2]), bits(&hi), "{name}: split high halves");
        assert_eq!(bits(&got[3]), bits(&inter), "{name}: interleave");
        assert_eq!(bits(&got[4]), bits(&cat0), "{name}: cat dim 0");
        assert_eq!(bits(&got[5]), bits(&cat1), "{name}: cat dim 1");
        let back = &got[6];
        assert_eq!(
            bits(&back[..mm * nn]),
            bits(&back_rows),
            "{name}: split of join"
        );
        assert_eq!(
            bits(&back[mm * nn..mm * nn + 2]),
            bits(&[y[0], x[0]]),
            "{name}: scalars"
        );
        for (r, v) in back[mm * nn + 2..].iter().enumerate() {
            // The row whose sum is NaN gives NaN; the others exactly 0.
            if r == 1 {
                assert!(v.is_nan(), "{name}: row {r}: {v}");
            } else {
                assert_eq!(*v, 0.0, "{name}: row {r}");
            }
        }
    }
}

#[test]
fn misuse_is_a_located_error() {
    let m = module("pairs.py", SRC);
    let dev = Device::interpreter();
    let xb = ok(dev.zeros::<f32>(8));
    let e = err(ok(m.kernel("bad_split"))
        .launch(&dev, 1)
        .arg(&xb)
        .constexpr("N", 8)
        .run());
    assert_eq!(e.kind, ErrorKind::Shape, "{}", e.render());
    assert!(
        e.message.contains("last dimension is 2, got shape [8]"),
        "{}",
        e.render()
    );
    let e = err(ok(m.kernel("mixed_join"))
        .launch(&dev, 1)
        .arg(&xb)
        .constexpr("N", 8)
        .run());
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.render());
    assert!(
        e.message.contains("tl.join needs two tiles of one type"),
        "{}",
        e.render()
    );
}
