//! Generated-code snapshots: the tile IR, the WGSL and the PTX of the kernel library's kernels
//! at their default configurations live in `shaders/generated/`, and this test fails
//! when they are stale. Regenerate with `TILEWISE_BLESS=1 cargo test --test snapshots`.
//! Every WGSL file is validated by naga on the way, and every PTX file assembled by
//! ptxas (sm_80 and sm_90) without register spills. `*.coop.wgsl` is the WGSL for a
//! device with cooperative matrices and subgroups.
//! `library_translates_for_every_platform` translates every kernel to SPIR-V, MSL and
//! HLSL through naga.

use std::path::PathBuf;
use tilewise::wgsl::{translate, Capabilities, CoopConfig, Language, Translated};
use tilewise::{Arg, Buffer, Compiled, DType, Device, Module};

fn compile(
    dev: &Device,
    src: &str,
    file: &str,
    kernel: &str,
    args: &[Arg],
    constexprs: &[(&str, i64)],
) -> Compiled {
    let module = Module::parse(file, src).unwrap();
    let k = module.kernel(kernel).unwrap();
    let mut launch = k.launch(dev, 1);
    for a in args {
        launch = launch.arg(a.clone());
    }
    for (n, v) in constexprs {
        launch = launch.constexpr(n, *v);
    }
    launch.compile().unwrap_or_else(|e| panic!("{e}"))
}

fn check(name: &str, contents: &str, stale: &mut Vec<String>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("shaders/generated")
        .join(name);
    let bless = std::env::var("TILEWISE_BLESS").as_deref() == Ok("1");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    if old != contents {
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, contents).unwrap();
        } else {
            stale.push(name.to_string());
        }
    }
}

/// The kernel library's PTX assembles with ptxas for sm_80 and sm_90 without register
/// spills. Without ptxas this says so on stderr; `TILEWISE_REQUIRE_PTXAS=1` (CI) makes
/// a missing ptxas a failure.
fn assemble_without_spills(name: &str, c: &Compiled) {
    if tilewise::cuda::find_ptxas().is_none() {
        assert!(
            std::env::var("TILEWISE_REQUIRE_PTXAS").as_deref() != Ok("1"),
            "TILEWISE_REQUIRE_PTXAS=1 but ptxas was not found"
        );
        eprintln!("SKIPPED (ptxas): ptxas not found, {name}.ptx not assembled");
        return;
    }
    for sm in [80, 90] {
        let ptx = c
            .ptx_for(tilewise::cuda::PtxTarget { sm }, 4)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let report = tilewise::cuda::assemble(&ptx.source, &ptx.arch)
            .unwrap_or_else(|e| panic!("{name} sm_{sm}: {e}"));
        assert_eq!(
            (report.spill_stores_bytes, report.spill_loads_bytes),
            (0, 0),
            "{name} spills registers on sm_{sm} ({} registers):\n{}",
            report.registers,
            report.log
        );
    }
}

/// The kernel library (`shaders/`) at its default configurations, compiled.
fn library() -> Vec<(&'static str, Compiled)> {
    let dev = Device::interpreter();
    let buf = |d: DType| -> Arg { Arg::from(&dev.alloc(d, 16).unwrap() as &Buffer) };
    let f32b = || buf(DType::F32);
    let i = |v: i32| Arg::from(v);
    let cases: Vec<(&str, Compiled)> = vec![
        (
            "vector_add",
            compile(
                &dev,
                include_str!("../shaders/vector_add.py"),
                "vector_add.py",
                "add_kernel",
                &[f32b(), f32b(), f32b(), i(4096)],
                &[("BLOCK_SIZE", 1024)],
            ),
        ),
        (
            "fused_softmax",
            compile(
                &dev,
                include_str!("../shaders/fused_softmax.py"),
                "fused_softmax.py",
                "softmax_kernel",
                &[f32b(), f32b(), i(1024), i(1024), i(64), i(1000)],
                &[("BLOCK_SIZE", 1024)],
            ),
        ),
        (
            "matmul_block_ptr",
            compile(
                &dev,
                include_str!("../shaders/matmul_block_ptr.py"),
                "matmul_block_ptr.py",
                "matmul_block_ptr_kernel",
                &[
                    f32b(),
                    f32b(),
                    f32b(),
                    i(512),
                    i(512),
                    i(512),
                    i(512),
                    i(1),
                    i(512),
                    i(1),
                    i(512),
                    i(1),
                ],
                &[("BLOCK_M", 64), ("BLOCK_N", 64), ("BLOCK_K", 32)],
            ),
        ),
        (
            "matmul_f16",
            compile(
                &dev,
                include_str!("../shaders/matmul.py"),
                "matmul.py",
                "matmul_kernel",
                &[
                    buf(DType::F16),
                    buf(DType::F16),
                    buf(DType::F16),
                    i(512),
                    i(512),
                    i(512),
                    i(512),
                    i(1),
                    i(512),
                    i(1),
                    i(512),
                    i(1),
                ],
                &[
                    ("BLOCK_SIZE_M", 64),
                    ("BLOCK_SIZE_N", 64),
                    ("BLOCK_SIZE_K", 32),
                    ("GROUP_SIZE_M", 8),
                ],
            ),
        ),
        (
            "layer_norm",
            compile(
                &dev,
                include_str!("../shaders/layer_norm.py"),
                "layer_norm.py",
                "_layer_norm_fwd_fused",
                &[
                    f32b(),
                    f32b(),
                    f32b(),
                    f32b(),
                    f32b(),
                    f32b(),
                    i(1024),
                    i(1000),
                    Arg::from(1e-5f32),
                ],
                &[("BLOCK_SIZE", 1024)],
            ),
        ),
        (
            "swiglu",
            compile(
                &dev,
                include_str!("../shaders/swiglu.py"),
                "swiglu.py",
                "swiglu_fwd_kernel",
                &[f32b(), f32b(), buf(DType::BF16), i(4096)],
                &[("BLOCK_SIZE", 1024)],
            ),
        ),
    ];
    cases
}

#[test]
fn generated_code_is_current() {
    let cases = library();
    let mut stale = vec![];
    for (name, c) in &cases {
        check(&format!("{name}.tile"), &c.ir_text(), &mut stale);
        let wgsl = c.wgsl().unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&format!("{name}.wgsl"), &wgsl, &mut stale);
        let ptx = c.ptx().unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&format!("{name}.ptx"), &ptx, &mut stale);
        assemble_without_spills(name, c);
        // The form for a device with cooperative matrices and subgroups, where it
        // differs (fragment dots, subgroup reductions).
        let coop = c
            .wgsl_for(&tilewise::wgsl::Capabilities::offline_coop(), 4)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if coop.source != wgsl {
            check(&format!("{name}.coop.wgsl"), &coop.source, &mut stale);
        }
    }
    assert!(stale.is_empty(), "stale snapshots in shaders/generated/: {stale:?}; rerun with TILEWISE_BLESS=1 and review the diff");
}

/// Every kernel of the library, in the FMA form and in the cooperative-matrix form of
/// the devices that have one, translates through naga to what wgpu hands each
/// platform's driver: SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12, which has no
/// cooperative matrices). The matmuls take the fragment form where their types allow.
#[test]
fn library_translates_for_every_platform() {
    let fma = Capabilities::offline(true, true);
    let vulkan = Capabilities::offline_coop();
    // Apple GPUs give a threadgroup 32 KiB (WebGPU's default 16 KiB leaves the f32
    // matmul no room for fragments).
    let mut metal = Capabilities::offline_with_coop(&[
        CoopConfig {
            size: 8,
            input: DType::F16,
            acc: DType::F32,
        },
        CoopConfig {
            size: 8,
            input: DType::F32,
            acc: DType::F32,
        },
    ]);
    metal.max_compute_workgroup_storage_size = 32 * 1024;
    let forms: [(&str, &Capabilities, &[Language]); 3] = [
        (
            "FMA",
            &fma,
            &[Language::SpirV, Language::Msl, Language::Hlsl],
        ),
        ("16x16 fragments", &vulkan, &[Language::SpirV]),
        ("8x8 fragments", &metal, &[Language::Msl, Language::SpirV]),
    ];
    let mut fragment_kernels = vec![];
    for (name, c) in &library() {
        for (form, caps, langs) in &forms {
            let w = c
                .wgsl_for(caps, 4)
                .unwrap_or_else(|e| panic!("{name} ({form}): {e}"));
            if w.source.contains("coopMultiplyAdd") {
                fragment_kernels.push(format!("{name} ({form})"));
            }
            for &lang in langs.iter() {
                let out = translate(name, &w.source, caps, lang)
                    .unwrap_or_else(|e| panic!("{name} ({form}) to {lang:?}: {e}"));
                match out {
                    Translated::Words(w) => assert!(w.len() > 5 && w[0] == 0x0723_0203),
                    Translated::Text(t) => assert!(t.contains("main"), "{t}"),
                }
            }
        }
    }
    // f16 inputs take the fragments of both devices; f32 inputs only Metal's.
    for expected in [
        "matmul_f16 (16x16 fragments)",
        "matmul_f16 (8x8 fragments)",
        "matmul_block_ptr (8x8 fragments)",
    ] {
        assert!(
            fragment_kernels.iter().any(|k| k == expected),
            "{expected} did not take the fragment form: {fragment_kernels:?}"
        );
    }
}
