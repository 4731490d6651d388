//! Pointers as data (issue 14): tables of device addresses written by the host and
//! cast back to pointers in the kernel (`tl.load(table + g).to(tl.pointer_type(..))`),
//! pointers cast to `int64` and reinterpreted between element types. Every executor
//! with addresses (the interpreter, the PTX simulators, CUDA) must compute the
//! references below exactly; the WGSL lowering and wgpu refuse them by name.

mod common;

use common::*;
use tilewise::half::f16;
use tilewise::{Buffer, Device, ErrorKind};

const KERNELS: &str = r#"
import triton
import triton.language as tl

@triton.jit
def gather_rows(table, lens, out, BLOCK: tl.constexpr):
    # Row g of `out` is the first lens[g] elements of the vector table[g] points to,
    # doubled; -1 past them.
    g = tl.program_id(0)
    src = tl.load(table + g).to(tl.pointer_type(tl.float32))
    n = tl.load(lens + g)
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=-0.5)
    tl.store(out + g * BLOCK + offs, x * 2.0)

@triton.jit
def grouped_mm(a_table, b_table, c_table, sizes, group_size,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # One program a (group, tile) pair, tiles walked in a loop over the groups; every
    # matrix row-major, reached only through the tables.
    pid = tl.program_id(0)
    first = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BN)
        tiles = tl.cdiv(m, BM) * tiles_n
        if pid >= first and pid < first + tiles:
            a = tl.load(a_table + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_table + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_table + g).to(tl.pointer_type(tl.float32))
            t = pid - first
            rm = (t // tiles_n) * BM + tl.arange(0, BM)
            rn = (t % tiles_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k0 in range(0, k, BK):
                ka = k0 + rk
                x = tl.load(a + rm[:, None] * k + ka[None, :],
                            mask=(rm[:, None] < m) & (ka[None, :] < k), other=0.0)
                y = tl.load(b + ka[:, None] * n + rn[None, :],
                            mask=(ka[:, None] < k) & (rn[None, :] < n), other=0.0)
                acc = tl.dot(x, y, acc)
            tl.store(c + rm[:, None] * n + rn[None, :], acc,
                     mask=(rm[:, None] < m) & (rn[None, :] < n))
        first += tiles

@triton.jit
def address_arithmetic(x, addr_out, y):
    # x's address as an integer, element 3 reached through integer arithmetic, and
    # element 3's bytes through a pointer reinterpreted as uint8.
    a = x.to(tl.int64)
    tl.store(addr_out, a)
    p = (a + 4 * 3).to(tl.pointer_type(tl.float32))
    v = tl.load(p)
    as_bytes = x.to(tl.pointer_type(tl.uint8))
    b = tl.load(as_bytes + 12 + tl.arange(0, 4))
    tl.store(y + tl.arange(0, 4), b.to(tl.int32))
    tl.store(y + 4, v.to(tl.int32, bitcast=True))
    back = a.to(tl.pointer_type(tl.float32)).to(tl.int64)
    tl.store(addr_out + 1, back - a)
"#;

/// The executors that have addresses.
fn executors() -> Vec<Device> {
    let mut out = vec![
        Device::interpreter(),
        Device::simulator_ptx(),
        Device::simulator_hopper(),
    ];
    out.extend(cuda_device());
    out
}

fn table(dev: &Device, bufs: &[&Buffer]) -> Buffer {
    let addrs: Vec<i64> = bufs.iter().map(|b| ok(b.address()) as i64).collect();
    ok(dev.upload(&addrs))
}

#[test]
fn a_table_of_vectors() {
    let m = module("ptrs.py", KERNELS);
    let k = ok(m.kernel("gather_rows"));
    let mut rng = Rng::new(41);
    let lens = [5i32, 64, 0, 33];
    let block = 64usize;
    let vecs: Vec<Vec<f32>> = lens
        .iter()
        .map(|&n| rng.vec_f32(n as usize + 3, -10.0, 10.0))
        .collect();
    for dev in executors() {
        let bufs: Vec<Buffer> = vecs.iter().map(|v| ok(dev.upload(v))).collect();
        let refs: Vec<&Buffer> = bufs.iter().collect();
        let t = table(&dev, &refs);
        let l = ok(dev.upload(&lens));
        let out = poisoned_f32(&dev, lens.len() * block);
        ok(k.launch(&dev, lens.len() as u32)
            .arg(&t)
            .arg(&l)
            .arg(&out)
            .constexpr("BLOCK", block as i64)
            .run());
        let got: Vec<f32> = ok(dev.download(&out));
        for (g, v) in vecs.iter().enumerate() {
            for i in 0..block {
                let want = if i < lens[g] as usize {
                    v[i] * 2.0
                } else {
                    -1.0
                };
                assert_eq!(
                    got[g * block + i],
                    want,
                    "{}: row {g} element {i}",
                    dev.name()
                );
            }
        }
    }
}

#[test]
fn grouped_matmul_through_pointer_tables() {
    let m = module("ptrs.py", KERNELS);
    let k = ok(m.kernel("grouped_mm"));
    let mut rng = Rng::new(42);
    // Ragged shapes: partial tiles in every dimension, a K shorter than one block.
    let shapes = [(70usize, 40usize, 48usize), (16, 96, 80), (33, 17, 8)];
    let (bm, bn, bk) = (32usize, 32usize, 32usize);
    let mut data = vec![];
    for &(mm, nn, kk) in &shapes {
        let a: Vec<f16> = (0..mm * kk)
            .map(|_| f16::from_f64(rng.uniform(-2.0, 2.0)))
            .collect();
        let b: Vec<f16> = (0..kk * nn)
            .map(|_| f16::from_f64(rng.uniform(-2.0, 2.0)))
            .collect();
        let af: Vec<f64> = a.iter().map(|x| x.to_f64()).collect();
        let bf: Vec<f64> = b.iter().map(|x| x.to_f64()).collect();
        data.push((a, b, matmul_ref(&af, &bf, mm, nn, kk)));
    }
    let tiles: usize = shapes
        .iter()
        .map(|&(mm, nn, _)| mm.div_ceil(bm) * nn.div_ceil(bn))
        .sum();
    let sizes: Vec<i32> = shapes
        .iter()
        .flat_map(|&(mm, nn, kk)| [mm as i32, nn as i32, kk as i32])
        .collect();
    for dev in executors() {
        let a: Vec<Buffer> = data.iter().map(|d| ok(dev.upload(&d.0))).collect();
        let b: Vec<Buffer> = data.iter().map(|d| ok(dev.upload(&d.1))).collect();
        let c: Vec<Buffer> = shapes
            .iter()
            .map(|&(mm, nn, _)| poisoned_f32(&dev, mm * nn))
            .collect();
        let (ta, tb, tc) = (
            table(&dev, &a.iter().collect::<Vec<_>>()),
            table(&dev, &b.iter().collect::<Vec<_>>()),
            table(&dev, &c.iter().collect::<Vec<_>>()),
        );
        ok(k.launch(&dev, tiles as u32)
            .arg(&ta)
            .arg(&tb)
            .arg(&tc)
            .arg(&ok(dev.upload(&sizes)))
            .arg(shapes.len() as i32)
            .constexpr("BM", bm as i64)
            .constexpr("BN", bn as i64)
            .constexpr("BK", bk as i64)
            .run());
        for (g, cb) in c.iter().enumerate() {
            let got: Vec<f32> = ok(dev.download(cb));
            // f16 products are exact in f32; only the f32 sums round.
            assert_close(&format!("{} group {g}", dev.name()), &got, &data[g].2, 1e-5);
        }
    }
}

#[test]
fn addresses_as_integers_and_reinterpreted_pointers() {
    let m = module("ptrs.py", KERNELS);
    let k = ok(m.kernel("address_arithmetic"));
    let x: Vec<f32> = vec![1.5, -2.25, 3.0, -1234.5625, 7.0, 8.0];
    for dev in executors() {
        let xb = ok(dev.upload(&x));
        // A view: the kernel's x starts at element 1 of the buffer.
        let view = xb.slice(1..6);
        let addr = ok(dev.upload(&[-1i64, -1]));
        let y = ok(dev.upload(&[-1i32; 5]));
        ok(k.launch(&dev, 1).arg(view.clone()).arg(&addr).arg(&y).run());
        let got_addr: Vec<i64> = ok(dev.download(&addr));
        assert_eq!(got_addr[0] as u64, ok(view.address()), "{}", dev.name());
        assert_eq!(got_addr[1], 0, "{}: round trip", dev.name());
        let got: Vec<i32> = ok(dev.download(&y));
        let bytes = x[4].to_le_bytes();
        let want: Vec<i32> = bytes
            .iter()
            .map(|&b| b as i32)
            .chain([x[4].to_bits() as i32])
            .collect();
        assert_eq!(got, want, "{}", dev.name());
    }
}

#[test]
fn an_address_outside_every_buffer_is_located() {
    let m = module("ptrs.py", KERNELS);
    let k = ok(m.kernel("gather_rows"));
    for dev in [Device::interpreter(), Device::simulator_ptx()] {
        let t = ok(dev.upload(&[0i64, 12345]));
        let l = ok(dev.upload(&[4i32, 4]));
        let out = poisoned_f32(&dev, 16);
        let e = err(k
            .launch(&dev, 2)
            .arg(&t)
            .arg(&l)
            .arg(&out)
            .constexpr("BLOCK", 8)
            .run());
        assert_eq!(e.kind, ErrorKind::Runtime, "{}: {}", dev.name(), e.render());
        assert!(e.render().contains("out-of-bounds"), "{}", e.render());
    }
}

#[test]
fn wgsl_refuses_pointers_as_data_by_name() {
    let m = module("ptrs.py", KERNELS);
    let k = ok(m.kernel("gather_rows"));
    // The WGSL lowering on the simulator: the cast is refused at its line.
    let dev = Device::simulator();
    let v = ok(dev.upload(&[1f32; 8]));
    let t = table(&dev, &[&v]);
    let l = ok(dev.upload(&[8i32]));
    let out = poisoned_f32(&dev, 8);
    let e = err(k
        .launch(&dev, 1)
        .arg(&t)
        .arg(&l)
        .arg(&out)
        .constexpr("BLOCK", 8)
        .run());
    let text = e.render();
    assert_eq!(e.kind, ErrorKind::Backend, "{text}");
    assert!(text.contains("needs global memory addresses"), "{text}");
    assert!(text.contains("tl.pointer_type(tl.float32)"), "{text}");
    // wgpu has no addresses to give.
    if let Some(dev) = wgpu_device() {
        let b = ok(dev.upload(&[1f32; 4]));
        let e = err(b.address());
        assert_eq!(e.kind, ErrorKind::Backend);
        assert!(
            e.render().contains("not available on wgpu"),
            "{}",
            e.render()
        );
    }
}

#[test]
fn casts_that_are_not_addresses_are_type_errors() {
    let src = r#"
import triton
import triton.language as tl

@triton.jit
def bad_int(x, t):
    p = tl.load(t).to(tl.pointer_type(tl.float32))

@triton.jit
def bad_ptr(x, y):
    tl.store(y, x.to(tl.int32))
"#;
    let m = module("bad.py", src);
    let dev = Device::interpreter();
    let t = ok(dev.upload(&[0i32]));
    let x = ok(dev.upload(&[0f32]));
    let e = err(ok(m.kernel("bad_int"))
        .launch(&dev, 1)
        .arg(&x)
        .arg(&t)
        .run());
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.render());
    assert!(
        e.render().contains("an address is a 64-bit integer"),
        "{}",
        e.render()
    );
    let y = ok(dev.upload(&[0i32]));
    let e = err(ok(m.kernel("bad_ptr"))
        .launch(&dev, 1)
        .arg(&x)
        .arg(&y)
        .run());
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.render());
    assert!(
        e.render().contains("an address converts to tl.int64"),
        "{}",
        e.render()
    );
}
