//! Tests of the ptxas checks on hand-written PTX, and of the driver runtime's behaviour
//! on a machine without CUDA.
//!
//! Without ptxas the ptxas tests print a note and pass, unless `TILEWISE_REQUIRE_PTXAS=1`
//! (then they fail). Get ptxas with `pip install nvidia-cuda-nvcc`.

use tilewise_core::ErrorKind;
use tilewise_cuda::driver::probe_driver;
use tilewise_cuda::{assemble, find_ptxas, CudaRuntime};

/// Whether ptxas is there; prints why a test is skipped, panics if it is required.
fn have_ptxas() -> bool {
    if let Some(path) = find_ptxas() {
        let version = tilewise_cuda::ptxas::ptxas_version(&path).unwrap_or_default();
        eprintln!("using {} ({version})", path.display());
        return true;
    }
    let required = std::env::var("TILEWISE_REQUIRE_PTXAS").is_ok_and(|v| v == "1");
    assert!(!required, "ptxas not found and TILEWISE_REQUIRE_PTXAS=1");
    eprintln!("note: ptxas not found (pip install nvidia-cuda-nvcc); skipping");
    false
}

/// `c[i] = a[i] + b[i]` for `i < n`, with the given `.version` and `.target`.
fn vector_add(version: &str, target: &str) -> String {
    format!(
        r#".version {version}
.target {target}
.address_size 64

.visible .entry vadd(
    .param .u64 a,
    .param .u64 b,
    .param .u64 c,
    .param .u32 n
)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<11>;

    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    ld.param.u64 %rd3, [c];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd4, %rd1;
    cvta.to.global.u64 %rd5, %rd2;
    cvta.to.global.u64 %rd6, %rd3;
    mul.wide.u32 %rd7, %r5, 4;
    add.s64 %rd8, %rd4, %rd7;
    add.s64 %rd9, %rd5, %rd7;
    add.s64 %rd10, %rd6, %rd7;
    ld.global.f32 %f1, [%rd8];
    ld.global.f32 %f2, [%rd9];
    add.f32 %f3, %f1, %f2;
    st.global.f32 [%rd10], %f3;
DONE:
    ret;
}}
"#
    )
}

#[test]
fn vector_add_assembles_for_sm80_and_sm90() {
    if !have_ptxas() {
        return;
    }
    for (version, target) in [("7.0", "sm_80"), ("8.0", "sm_90")] {
        let report = assemble(&vector_add(version, target), target)
            .unwrap_or_else(|e| panic!("{target}: {}", e.render()));
        assert!(
            (4..=64).contains(&report.registers),
            "{target}: {} registers\n{}",
            report.registers,
            report.log
        );
        assert_eq!(report.spill_stores_bytes, 0);
        assert_eq!(report.spill_loads_bytes, 0);
        assert_eq!(report.stack_bytes, 0);
        assert_eq!(report.shared_bytes, 0);
        assert!(report.log.contains("vadd"), "{}", report.log);
    }
}

#[test]
fn static_shared_memory_is_reported() {
    if !have_ptxas() {
        return;
    }
    let ptx = r#".version 8.0
.target sm_80
.address_size 64

.visible .entry stage(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<6>;
    .shared .align 16 .b8 tile[4096];

    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    mov.u64 %rd3, tile;
    add.s64 %rd4, %rd3, %rd2;
    cvt.rn.f32.u32 %f1, %r1;
    st.shared.f32 [%rd4], %f1;
    bar.sync 0;
    ld.shared.f32 %f2, [%rd4+4];
    cvta.to.global.u64 %rd5, %rd1;
    add.s64 %rd5, %rd5, %rd2;
    st.global.f32 [%rd5], %f2;
    ret;
}
"#;
    let report = assemble(ptx, "sm_80").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(report.shared_bytes, 4096, "{}", report.log);
    assert!(report.registers > 0, "{}", report.log);
}

#[test]
fn rejected_ptx_names_the_line() {
    if !have_ptxas() {
        return;
    }
    let ptx = vector_add("7.0", "sm_80").replace("add.f32 %f3", "add.f32x %f3");
    let line = ptx.lines().position(|l| l.contains("add.f32x")).unwrap() + 1;
    let err = assemble(&ptx, "sm_80").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Internal, "{}", err.message);
    assert!(
        err.message.contains(&format!("line {line}")),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains(&format!("PTX line {line}: add.f32x %f3, %f1, %f2;")),
        "{}",
        err.message
    );
}

#[test]
fn target_newer_than_the_version_is_rejected() {
    if !have_ptxas() {
        return;
    }
    let err = assemble(&vector_add("7.0", "sm_90"), "sm_90").unwrap_err();
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(
        err.message.contains("PTX line 2: .target sm_90"),
        "{}",
        err.message
    );
}

#[test]
fn no_driver_gives_an_error_not_a_panic() {
    let runtime = CudaRuntime::new(0);
    match probe_driver() {
        Err(probe) => {
            eprintln!("no CUDA driver here: {}", probe.message);
            let err = runtime.unwrap_err();
            assert_eq!(err.kind, ErrorKind::Backend);
            assert!(
                err.message.contains("no CUDA driver found"),
                "{}",
                err.message
            );
            assert!(CudaRuntime::device_count().is_err());
        }
        Ok(()) => match runtime {
            Ok(rt) => eprintln!("CUDA device 0: {} ({})", rt.name(), rt.sm_arch()),
            Err(e) => eprintln!("libcuda loads but device 0 does not open: {}", e.message),
        },
    }
}

/// On a machine with a CUDA driver and a GPU: the runtime end to end (memory, a PTX
/// launch, launch checks, JIT errors, events) and the cuBLAS references against the CPU.
#[test]
fn gpu_runtime_and_cublas_smoke() {
    use half::{bf16, f16};
    use tilewise_cuda::{Cublas, GemmPrecision, KernelArg};
    if probe_driver().is_err() {
        eprintln!("note: no CUDA driver; skipping the GPU smoke test");
        return;
    }
    let rt = match CudaRuntime::new(0) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("note: no usable CUDA device ({}); skipping", e.message);
            return;
        }
    };
    eprintln!(
        "{} sm_{}{}: {} SMs, {} bytes opt-in shared, driver {}",
        rt.name(),
        rt.compute_capability().0,
        rt.compute_capability().1,
        rt.multiprocessor_count(),
        rt.max_shared_per_block_optin(),
        rt.driver_version()
    );
    let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let from_f32_bytes = |b: &[u8]| {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect::<Vec<f32>>()
    };

    // Memory and a launch on a sub-range: c = a + b[1..].
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n + 1).map(|i| 0.5 * i as f32).collect();
    let (da, db, dc) = (
        rt.alloc_zeroed(4 * n).unwrap(),
        rt.alloc_zeroed(4 * (n + 1)).unwrap(),
        rt.alloc_zeroed(4 * n).unwrap(),
    );
    let empty = rt.alloc_zeroed(0).unwrap();
    assert_eq!(rt.read(&empty).unwrap(), Vec::<u8>::new());
    rt.write(&da, 0, &f32_bytes(&a)).unwrap();
    rt.write(&db, 0, &f32_bytes(&b)).unwrap();
    assert!(rt.write(&da, 4, &f32_bytes(&a)).is_err());
    let (major, minor) = rt.compute_capability();
    let target = format!("sm_{major}{minor}");
    let func = rt
        .load_module(&vector_add("8.0", &target), "vadd")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    eprintln!(
        "vadd: {} registers, {} local bytes; JIT log:\n{}",
        func.registers(),
        func.local_bytes(),
        func.jit_log()
    );
    assert!(func.registers() > 0);
    let args = [
        KernelArg::U64(da.address()),
        KernelArg::U64(db.address() + 4),
        KernelArg::U64(dc.address()),
        KernelArg::U32(n as u32),
    ];
    rt.launch(&func, [4, 1, 1], [256, 1, 1], 0, &args).unwrap();
    let c = from_f32_bytes(&rt.read(&dc).unwrap());
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i + 1], "c[{i}]");
    }

    // Launch checks.
    let err = rt
        .launch(&func, [1, 70000, 1], [32, 1, 1], 0, &args)
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Launch, "{}", err.message);
    let err = rt.launch(&func, [1, 1, 1], [32, 1, 1], 0, &args[..3]);
    eprintln!(
        "3 of 4 arguments: {:?}",
        err.as_ref().map_err(|e| &e.message)
    );
    if rt.driver_version() >= 12040 {
        assert_eq!(err.unwrap_err().kind, ErrorKind::Launch);
    }
    let optin = rt.max_shared_per_block_optin();
    assert!(func.set_max_dynamic_shared(optin + 1).is_err());
    func.set_max_dynamic_shared(optin).unwrap();
    rt.launch(&func, [4, 1, 1], [256, 1, 1], 100 * 1024, &args)
        .unwrap();
    rt.synchronize().unwrap();

    // A PTX the driver rejects.
    let bad = vector_add("8.0", &target).replace("add.f32 %f3", "add.f32x %f3");
    let err = rt.load_module(&bad, "vadd").unwrap_err();
    eprintln!("driver JIT error:\n{}", err.message);
    assert_eq!(err.kind, ErrorKind::Internal);
    assert!(err.message.contains("vadd") && err.message.contains("PTX line"));

    // Events around a device-to-device copy.
    let bytes = 256 << 20;
    let (src, dst) = (
        rt.alloc_zeroed(bytes).unwrap(),
        rt.alloc_zeroed(bytes).unwrap(),
    );
    rt.copy(&src, &dst, bytes).unwrap();
    let start = rt.record_event().unwrap();
    for _ in 0..10 {
        rt.copy(&src, &dst, bytes).unwrap();
    }
    let end = rt.record_event().unwrap();
    let ms = rt.elapsed_ms(&start, &end).unwrap();
    eprintln!(
        "device copy: {:.3} ms for 10 x 256 MiB, {:.2} TB/s read+write",
        ms,
        10.0 * 2.0 * bytes as f64 / (ms as f64 * 1e-3) / 1e12
    );

    // cuBLAS against a CPU GEMM, row-major.
    let blas = Cublas::new(&rt).unwrap_or_else(|e| panic!("{}", e.render()));
    let (m, nn, k) = (67usize, 45usize, 33usize);
    let av: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7) % 11) as f32 / 8.0 - 0.5)
        .collect();
    let bv: Vec<f32> = (0..k * nn)
        .map(|i| ((i * 5) % 13) as f32 / 8.0 - 0.75)
        .collect();
    let mut want = vec![0f32; m * nn];
    for i in 0..m {
        for j in 0..nn {
            want[i * nn + j] = (0..k).map(|p| av[i * k + p] * bv[p * nn + j]).sum();
        }
    }
    for precision in [
        GemmPrecision::F32,
        GemmPrecision::Tf32,
        GemmPrecision::F16,
        GemmPrecision::F16F32Out,
        GemmPrecision::Bf16,
        GemmPrecision::Bf16F32Out,
    ] {
        let encode = |v: &[f32]| -> Vec<u8> {
            match precision.input_bytes() {
                4 => f32_bytes(v),
                _ if matches!(precision, GemmPrecision::F16 | GemmPrecision::F16F32Out) => v
                    .iter()
                    .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                    .collect(),
                _ => v
                    .iter()
                    .flat_map(|x| bf16::from_f32(*x).to_le_bytes())
                    .collect(),
            }
        };
        let (ga, gb) = (
            rt.alloc_zeroed(m * k * precision.input_bytes()).unwrap(),
            rt.alloc_zeroed(k * nn * precision.input_bytes()).unwrap(),
        );
        let gc = rt.alloc_zeroed(m * nn * precision.output_bytes()).unwrap();
        rt.write(&ga, 0, &encode(&av)).unwrap();
        rt.write(&gb, 0, &encode(&bv)).unwrap();
        blas.gemm(precision, m, nn, k, &ga, &gb, &gc).unwrap();
        let out = rt.read(&gc).unwrap();
        let got: Vec<f32> = match precision {
            GemmPrecision::F16 => out
                .chunks_exact(2)
                .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            GemmPrecision::Bf16 => out
                .chunks_exact(2)
                .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            _ => from_f32_bytes(&out),
        };
        // Inputs and sums are exact; only a 16-bit output rounds (bf16: 2^-9 relative).
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
            .fold(0f32, f32::max);
        eprintln!("cuBLAS {precision:?}: max relative error {worst}");
        assert!(worst < 4e-3, "{precision:?}: max relative error {worst}");
    }
}
