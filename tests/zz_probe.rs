use tilewise::{Device, Module, TensorDescriptor};
#[test]
fn probe() {
    let m = Module::from_file("/work/tutorials/09-persistent-matmul.py").unwrap();
    let dev = Device::interpreter();
    let bm = std::env::var("BM")
        .map(|s| s.parse().unwrap())
        .unwrap_or(128u32);
    let bn = std::env::var("BN")
        .map(|s| s.parse().unwrap())
        .unwrap_or(128u32);
    let bk = std::env::var("BK")
        .map(|s| s.parse().unwrap())
        .unwrap_or(64u32);
    let w = std::env::var("W")
        .map(|s| s.parse().unwrap())
        .unwrap_or(4u32);
    let sub = std::env::var("SUB").map(|s| s == "1").unwrap_or(true);
    let (mm, nn, kk) = (256i64, 256i64, 256i64);
    let a = dev.alloc(tilewise::DType::F16, (mm * kk) as usize).unwrap();
    let b = dev.alloc(tilewise::DType::F16, (nn * kk) as usize).unwrap();
    let c = dev.alloc(tilewise::DType::F16, (mm * nn) as usize).unwrap();
    let kern = m.kernel("matmul_kernel_tma_persistent").unwrap();
    let l = kern
        .launch(&dev, 4)
        .arg(TensorDescriptor::new(&a, &[mm, kk], &[kk, 1], &[bm, bk]))
        .arg(TensorDescriptor::new(&b, &[nn, kk], &[kk, 1], &[bn, bk]))
        .arg(TensorDescriptor::new(
            &c,
            &[mm, nn],
            &[nn, 1],
            &[bm, if sub { bn / 2 } else { bn }],
        ))
        .arg(mm as i32)
        .arg(nn as i32)
        .arg(kk as i32)
        .constexpr("FP8_OUTPUT", false)
        .constexpr("NUM_SMS", 4u32)
        .constexpr("WARP_SPECIALIZE", false)
        .constexpr("BLOCK_SIZE_M", bm)
        .constexpr("BLOCK_SIZE_N", bn)
        .constexpr("BLOCK_SIZE_K", bk)
        .constexpr("GROUP_SIZE_M", 8u32)
        .constexpr("EPILOGUE_SUBTILE", sub)
        .num_warps(w)
        .num_stages(2);
    let comp = l.compile().unwrap();
    let mut caps = tilewise_wgsl::Capabilities::offline_coop();
    caps.max_compute_workgroup_storage_size = 49152;
    let t0 = std::time::Instant::now();
    let k = comp.wgsl_for(&caps, w).unwrap();
    println!("TIME {:?}", t0.elapsed());
    for n in &k.notes {
        println!("NOTE {n}");
    }
    for l in k.source.lines().filter(|l| l.contains("var<workgroup>")) {
        println!("{l}");
    }
    if std::env::var("DUMP").is_ok() {
        std::fs::write("/tmp/probe.wgsl", &k.source).unwrap();
        std::fs::write("/tmp/probe.tir", comp.thread_ir_text().unwrap_or_default()).unwrap();
    }
}
