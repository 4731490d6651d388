//! The wgpu runtime on hand-written WGSL kernels, checked against the CPU.
//!
//! Inputs are random, outputs are poisoned before each launch. Tests that need a GPU
//! call [`gpu_or_skip`]: with no adapter they say so on stderr and return, unless
//! `TILEWISE_REQUIRE_WGPU=1` (CI), where a missing adapter fails the test.

use tilewise_core::ErrorKind;
use tilewise_wgsl::{
    parse_backends, validate_wgsl, BufferArg, Capabilities, GpuBuffer, KernelLayout, KernelSpec,
    Launch, ResourceUsage, StorageBinding, UniformLayout, WgpuContext,
};

/// A device, or `None` after printing why there is none (a panic under
/// `TILEWISE_REQUIRE_WGPU=1`).
fn gpu_or_skip() -> Option<WgpuContext> {
    match WgpuContext::new() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            if std::env::var("TILEWISE_REQUIRE_WGPU").as_deref() == Ok("1") {
                panic!("TILEWISE_REQUIRE_WGPU=1 but there is no wgpu adapter: {e}");
            }
            eprintln!("SKIPPED: no wgpu adapter: {e}");
            None
        }
    }
}

/// xorshift64*: reproducible random inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [-1, 1).
    fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
    fn f32s(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| self.f32()).collect()
    }
}

const POISON: u32 = 0x7FC0_DEAD; // a NaN no kernel computes

fn poisoned(ctx: &WgpuContext, n: usize) -> GpuBuffer {
    ctx.create_buffer_from(&vec![POISON; n]).unwrap()
}

const VECTOR_ADD: &str = "\
struct Params { base0: u32, base1: u32, base2: u32, @align(16) n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        out[params.base2 + i] = x[params.base0 + i] + y[params.base1 + i];
    }
}
";

fn f32_binding(read_only: bool) -> StorageBinding {
    StorageBinding {
        read_only,
        element_size: 4,
    }
}

fn vector_add_layout() -> KernelLayout {
    KernelLayout {
        storage: vec![f32_binding(true), f32_binding(true), f32_binding(false)],
        uniform: Some(UniformLayout {
            base_offsets: true,
            scalar_bytes: 4,
        }),
    }
}

fn spec<'a>(name: &'a str, source: &'a str, layout: &'a KernelLayout) -> KernelSpec<'a> {
    KernelSpec {
        key: name,
        kernel_name: name,
        entry_point: "main",
        source,
        layout,
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn vector_add_matches_cpu() {
    let Some(ctx) = gpu_or_skip() else { return };
    eprintln!("adapter: {:?}", ctx.adapter_info());
    let layout = vector_add_layout();
    let p = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let mut rng = Rng::new(1);
    for n in [1usize, 63, 64, 1000, 4099] {
        let (x, y) = (rng.f32s(n), rng.f32s(n));
        let (bx, by) = (
            ctx.create_buffer_from(&x).unwrap(),
            ctx.create_buffer_from(&y).unwrap(),
        );
        // One element more than needed: the bounds guard must leave it alone.
        let out = poisoned(&ctx, n + 1);
        ctx.launch(&Launch {
            pipeline: &p,
            buffers: &[(&bx).into(), (&by).into(), (&out).into()],
            scalars: &(n as u32).to_le_bytes(),
            workgroups: [(n as u32).div_ceil(64), 1, 1],
        })
        .unwrap();
        let got: Vec<f32> = ctx.read_vec(&out).unwrap();
        let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
        assert_eq!(bits(&got[..n]), bits(&want), "n = {n}");
        assert_eq!(got[n].to_bits(), POISON, "n = {n}: wrote past the guard");
    }
    assert_eq!(ctx.cached_pipelines(), 1);
}

#[test]
fn pipeline_cache_reuses_a_specialization() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = vector_add_layout();
    let a = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let b = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let other = VECTOR_ADD.replace("workgroup_size(64)", "workgroup_size(128)");
    let c = ctx.pipeline(&spec("vector_add", &other, &layout)).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
    assert_eq!(ctx.cached_pipelines(), 2);
    assert_eq!(c.usage().workgroup_size, [128, 1, 1]);
}

#[test]
fn sub_range_binding_with_unaligned_offsets() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = vector_add_layout();
    let p = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let align = ctx.capabilities().min_storage_buffer_offset_alignment as usize;
    let mut rng = Rng::new(2);
    let n = 777;
    let total = n + 3 * align;
    let (x, y) = (rng.f32s(total), rng.f32s(total));
    let (bx, by) = (
        ctx.create_buffer_from(&x).unwrap(),
        ctx.create_buffer_from(&y).unwrap(),
    );
    let out = poisoned(&ctx, total);
    // Element offsets: unaligned, aligned + 1, and a multiple of the alignment.
    let (ox, oy, oo) = (3usize, align / 4 + 1, align / 4 * 2);
    ctx.launch(&Launch {
        pipeline: &p,
        buffers: &[
            BufferArg::range(&bx, 4 * ox as u64, 4 * n as u64),
            BufferArg::range(&by, 4 * oy as u64, 4 * n as u64),
            BufferArg::range(&out, 4 * oo as u64, 4 * n as u64),
        ],
        scalars: &(n as u32).to_le_bytes(),
        workgroups: [(n as u32).div_ceil(64), 1, 1],
    })
    .unwrap();
    let got: Vec<f32> = ctx.read_vec(&out).unwrap();
    for (i, g) in got.iter().enumerate() {
        if (oo..oo + n).contains(&i) {
            let k = i - oo;
            assert_eq!(
                g.to_bits(),
                (x[ox + k] + y[oy + k]).to_bits(),
                "element {i}"
            );
        } else {
            assert_eq!(
                g.to_bits(),
                POISON,
                "element {i} outside the view was written"
            );
        }
    }
    // A view that overruns its buffer is a launch error, not a crash.
    let e = ctx
        .launch(&Launch {
            pipeline: &p,
            buffers: &[
                BufferArg::range(&bx, 4 * (total - 10) as u64, 4 * n as u64),
                (&by).into(),
                (&out).into(),
            ],
            scalars: &(n as u32).to_le_bytes(),
            workgroups: [1, 1, 1],
        })
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch, "{e}");
    assert!(e.message.contains("overruns"), "{e}");
}

const ACCUMULATE: &str = "\
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> acc: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        acc[i] = acc[i] + x[i];
    }
}
";

#[test]
fn batched_launches_then_one_read() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = KernelLayout {
        storage: vec![f32_binding(true), f32_binding(false)],
        uniform: Some(UniformLayout {
            base_offsets: false,
            scalar_bytes: 4,
        }),
    };
    let p = ctx
        .pipeline(&spec("accumulate", ACCUMULATE, &layout))
        .unwrap();
    let mut rng = Rng::new(3);
    let n = 3000;
    let (a, x1, x2) = (rng.f32s(n), rng.f32s(n), rng.f32s(n));
    let acc = ctx.create_buffer_from(&a).unwrap();
    let bx = ctx.create_buffer_from(&x1).unwrap();
    let n32 = (n as u32).to_le_bytes();
    let args = [BufferArg::whole(&bx), BufferArg::whole(&acc)];
    let one = Launch {
        pipeline: &p,
        buffers: &args,
        scalars: &n32,
        workgroups: [(n as u32).div_ceil(64), 1, 1],
    };
    for _ in 0..10 {
        ctx.launch(&one).unwrap();
    }
    assert_eq!(ctx.pending_launches(), 10, "launches were submitted early");
    // A write is ordered after the launches recorded before it.
    ctx.write_slice(&bx, 0, &x2).unwrap();
    for _ in 0..5 {
        ctx.launch(&one).unwrap();
    }
    let got: Vec<f32> = ctx.read_vec(&acc).unwrap();
    assert_eq!(ctx.pending_launches(), 0);
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let mut v = a[i];
            for _ in 0..10 {
                v += x1[i];
            }
            for _ in 0..5 {
                v += x2[i];
            }
            v
        })
        .collect();
    assert_eq!(bits(&got), bits(&want));
}

const REDUCE: &str = "\
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;
var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {
    let i = wid.x * 256u + lid.x;
    var v = 0u;
    if (i < params.n) {
        v = x[i];
    }
    partial[lid.x] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid.x < s) {
            partial[lid.x] = partial[lid.x] + partial[lid.x + s];
        }
        workgroupBarrier();
    }
    if (lid.x == 0u) {
        out[wid.x] = partial[0];
    }
}
";

#[test]
fn workgroup_memory_reduction() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = KernelLayout {
        storage: vec![
            StorageBinding {
                read_only: true,
                element_size: 4,
            },
            StorageBinding {
                read_only: false,
                element_size: 4,
            },
        ],
        uniform: Some(UniformLayout {
            base_offsets: false,
            scalar_bytes: 4,
        }),
    };
    let p = ctx.pipeline(&spec("reduce", REDUCE, &layout)).unwrap();
    assert_eq!(p.usage().workgroup_memory, 1024);
    let mut rng = Rng::new(4);
    let n: usize = 256 * 37 + 11;
    let x: Vec<u32> = (0..n).map(|_| (rng.next_u64() >> 44) as u32).collect();
    let groups = n.div_ceil(256);
    let bx = ctx.create_buffer_from(&x).unwrap();
    let out = poisoned(&ctx, groups);
    ctx.launch(&Launch {
        pipeline: &p,
        buffers: &[(&bx).into(), (&out).into()],
        scalars: &(n as u32).to_le_bytes(),
        workgroups: [groups as u32, 1, 1],
    })
    .unwrap();
    let got: Vec<u32> = ctx.read_vec(&out).unwrap();
    let want: Vec<u32> = x.chunks(256).map(|c| c.iter().sum()).collect();
    assert_eq!(got, want);
}

const F16_FMA: &str = "\
enable f16;
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read> y: array<f16>;
@group(0) @binding(2) var<storage, read_write> out: array<f16>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n) {
        out[i] = x[i] * y[i] + x[i];
    }
}
";

#[test]
fn f16_kernel_when_supported() {
    use half::f16;
    let Some(ctx) = gpu_or_skip() else { return };
    if !ctx.capabilities().f16 {
        eprintln!(
            "SKIPPED (f16 part): {} has no SHADER_F16",
            ctx.adapter_info().name
        );
        return;
    }
    let h = |read_only| StorageBinding {
        read_only,
        element_size: 2,
    };
    let layout = KernelLayout {
        storage: vec![h(true), h(true), h(false)],
        uniform: Some(UniformLayout {
            base_offsets: false,
            scalar_bytes: 4,
        }),
    };
    let p = ctx.pipeline(&spec("f16_fma", F16_FMA, &layout)).unwrap();
    let mut rng = Rng::new(5);
    // Odd: the last element shares a 4-byte word with padding.
    let n = 1001;
    let x: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.f32())).collect();
    let y: Vec<f16> = (0..n).map(|_| f16::from_f32(rng.f32())).collect();
    let (bx, by) = (
        ctx.create_buffer_from(&x).unwrap(),
        ctx.create_buffer_from(&y).unwrap(),
    );
    let out = ctx.create_buffer_from(&vec![f16::NAN; n]).unwrap();
    assert_eq!(out.len(), 2 * n as u64);
    ctx.launch(&Launch {
        pipeline: &p,
        buffers: &[(&bx).into(), (&by).into(), (&out).into()],
        scalars: &(n as u32).to_le_bytes(),
        workgroups: [(n as u32).div_ceil(64), 1, 1],
    })
    .unwrap();
    let got: Vec<f16> = ctx.read_vec(&out).unwrap();
    assert_eq!(got.len(), n);
    for i in 0..n {
        let (xf, yf) = (x[i].to_f32(), y[i].to_f32());
        let want = xf * yf + xf;
        let g = got[i].to_f32();
        // f16 rounds the product and the sum: relative to the terms' magnitude.
        assert!(
            (g - want).abs() <= 2e-3 * (xf * yf).abs().max(xf.abs()) + 1e-6,
            "element {i}: got {g}, want {want}"
        );
    }
}

#[test]
fn unaligned_writes_and_reads_preserve_neighbours() {
    let Some(ctx) = gpu_or_skip() else { return };
    let init: Vec<u8> = (0..11).map(|i| 0xA0 + i as u8).collect();
    let buf = ctx.create_buffer_init(&init).unwrap();
    assert_eq!(buf.len(), 11);
    // Allocations are rounded to 16 bytes (whole vec4 words for wide accesses).
    assert_eq!(buf.allocated(), 16);
    ctx.write_buffer(&buf, 2, &[1, 2, 3]).unwrap();
    ctx.write_buffer(&buf, 9, &[7, 8]).unwrap();
    let mut want = init.clone();
    want[2..5].copy_from_slice(&[1, 2, 3]);
    want[9..11].copy_from_slice(&[7, 8]);
    assert_eq!(ctx.read_buffer(&buf).unwrap(), want);
    assert_eq!(ctx.read_buffer_range(&buf, 3, 5).unwrap(), want[3..8]);
    let e = ctx.write_buffer(&buf, 10, &[0, 0]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Launch, "{e}");
}

#[test]
fn gpu_timestamps_when_supported() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = vector_add_layout();
    let p = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let n = 1 << 16;
    let mut rng = Rng::new(6);
    let (bx, by) = (
        ctx.create_buffer_from(&rng.f32s(n)).unwrap(),
        ctx.create_buffer_from(&rng.f32s(n)).unwrap(),
    );
    let out = poisoned(&ctx, n);
    let args = [(&bx).into(), (&by).into(), (&out).into()];
    let n32 = (n as u32).to_le_bytes();
    let launch = Launch {
        pipeline: &p,
        buffers: &args,
        scalars: &n32,
        workgroups: [(n as u32).div_ceil(64), 1, 1],
    };
    match ctx.time_launches(&[launch; 4]).unwrap() {
        Some(t) => {
            eprintln!(
                "4 x vector_add({n}): {:.1} us each",
                t.per_launch_ns() / 1e3
            );
            assert_eq!(t.launches, 4);
            assert!(t.span_ns > 0.0 && t.span_ns < 10e9, "{t:?}");
            assert!(t.busy_ns > 0.0 && t.busy_ns <= t.span_ns * 1.001, "{t:?}");
        }
        None => {
            assert!(!ctx.capabilities().timestamps);
            eprintln!("SKIPPED (timing part): no TIMESTAMP_QUERY");
        }
    }
    let got: Vec<f32> = ctx.read_vec(&out).unwrap();
    assert!(got.iter().all(|v| v.to_bits() != POISON));
}

#[test]
fn too_many_workgroups_names_the_limit() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = vector_add_layout();
    let p = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let max = ctx.capabilities().max_compute_workgroups_per_dimension;
    let b = ctx.create_buffer(4).unwrap();
    let e = ctx
        .launch(&Launch {
            pipeline: &p,
            buffers: &[
                (&b).into(),
                (&b).into(),
                (&ctx.create_buffer(4).unwrap()).into(),
            ],
            scalars: &1u32.to_le_bytes(),
            workgroups: [max + 1, 1, 1],
        })
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Backend, "{e}");
    assert!(
        e.message.contains("max_compute_workgroups_per_dimension"),
        "{e}"
    );
    assert!(e.message.contains(&(max + 1).to_string()), "{e}");
}

#[test]
fn read_only_and_read_write_alias_is_an_error() {
    let Some(ctx) = gpu_or_skip() else { return };
    let layout = vector_add_layout();
    let p = ctx
        .pipeline(&spec("vector_add", VECTOR_ADD, &layout))
        .unwrap();
    let b = ctx.create_buffer(64).unwrap();
    let e = ctx
        .launch(&Launch {
            pipeline: &p,
            buffers: &[(&b).into(), (&b).into(), (&b).into()],
            scalars: &1u32.to_le_bytes(),
            workgroups: [1, 1, 1],
        })
        .unwrap_err();
    assert!(e.message.contains("same buffer"), "{e}");
    ctx.synchronize().unwrap();
}

#[test]
fn workgroup_memory_over_the_limit_names_it() {
    let Some(ctx) = gpu_or_skip() else { return };
    let limit = ctx.capabilities().max_compute_workgroup_storage_size;
    let words = limit / 4 + 16;
    let source = format!(
        "@group(0) @binding(0) var<storage, read_write> out: array<f32>;
var<workgroup> big: array<f32, {words}>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {{
    big[lid.x] = f32(lid.x);
    workgroupBarrier();
    out[lid.x] = big[63u - lid.x];
}}
"
    );
    let layout = KernelLayout {
        storage: vec![StorageBinding {
            read_only: false,
            element_size: 4,
        }],
        uniform: None,
    };
    let e = ctx
        .pipeline(&spec("too_big", &source, &layout))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Backend, "{e}");
    assert!(
        e.message.contains("max_compute_workgroup_storage_size"),
        "{e}"
    );
    assert!(e.message.contains(&(4 * words).to_string()), "{e}");
    assert!(e.message.contains(&limit.to_string()), "{e}");
    assert!(e.message.contains("too_big"), "{e}");
}

// ---- Without a device ----

#[test]
fn naga_parse_error_names_kernel_and_line() {
    let source = "\
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let v: f32 = 1u;
    out[gid.x] = v;
}
";
    let e = validate_wgsl("my_kernel", source, &Capabilities::offline(false, false)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Internal);
    let r = e.to_string();
    assert!(r.contains("`my_kernel`"), "{r}");
    assert!(r.contains("tilewise bug"), "{r}");
    assert!(r.contains("my_kernel.wgsl:4:"), "{r}");
    assert!(r.contains("4 |     let v: f32 = 1u;"), "{r}");
    assert_eq!(e.line(), Some(4));
}

#[test]
fn naga_validation_error_names_kernel_and_line() {
    // Parses, but the device has no SHADER_F16: naga's validator rejects it.
    let e =
        validate_wgsl("half_kernel", F16_FMA, &Capabilities::offline(false, false)).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Internal);
    let r = e.to_string();
    assert!(r.contains("`half_kernel`"), "{r}");
    assert!(r.contains("tilewise bug"), "{r}");
    assert!(r.contains("half_kernel.wgsl:"), "{r}");
    let line = e.line().expect("a line");
    let text = F16_FMA.lines().nth(line as usize - 1).unwrap();
    assert!(r.contains(&format!("{line} | {text}")), "{r}");
    // With the capability it validates.
    validate_wgsl("half_kernel", F16_FMA, &Capabilities::offline(true, false)).unwrap();
}

#[test]
fn offline_limit_checks_name_the_limit() {
    let caps = Capabilities::offline(false, false);
    // Nine storage bindings: WebGPU's default limit is eight.
    let mut source = String::new();
    for i in 0..9 {
        source += &format!("@group(0) @binding({i}) var<storage, read_write> b{i}: array<f32>;\n");
    }
    source += "@compute @workgroup_size(1024)\nfn main() {\n";
    for i in 0..9 {
        source += &format!("    b{i}[0] = 1.0;\n");
    }
    source += "}\n";
    let valid = validate_wgsl("nine", &source, &caps).unwrap();
    let layout = KernelLayout {
        storage: vec![
            StorageBinding {
                read_only: false,
                element_size: 4
            };
            9
        ],
        uniform: None,
    };
    let usage = ResourceUsage::of("nine", &valid, "main", &layout).unwrap();
    let e = usage.check("nine", &caps).unwrap_err();
    assert!(
        e.message.contains("max_storage_buffers_per_shader_stage"),
        "{e}"
    );
    assert!(e.message.contains("needs 9"), "{e}");

    let layout8 = KernelLayout {
        storage: layout.storage[..8].to_vec(),
        uniform: None,
    };
    let mut usage = ResourceUsage::of("nine", &valid, "main", &layout8).unwrap();
    assert_eq!(usage.storage_buffers, 9, "the module's own count wins");
    usage.storage_buffers = 8;
    let e = usage.check("nine", &caps).unwrap_err();
    assert!(
        e.message.contains("max_compute_invocations_per_workgroup"),
        "{e}"
    );
}

#[test]
fn backend_names_parse() {
    assert_eq!(
        parse_backends("Vulkan, gl").unwrap(),
        tilewise_wgsl::wgpu::Backends::VULKAN | tilewise_wgsl::wgpu::Backends::GL
    );
    let e = parse_backends("vulkan,cuda").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Backend);
    assert!(e.message.contains("cuda"), "{e}");
}

#[test]
fn param_block_layout() {
    let layout = vector_add_layout();
    assert_eq!(layout.scalar_offset(), 16);
    assert_eq!(layout.uniform_size(), 32);
    let block = tilewise_wgsl::param_block(&layout, &[1, 2, 3], &7u32.to_le_bytes());
    let words: Vec<u32> = bytemuck_words(&block);
    assert_eq!(words, [1, 2, 3, 0, 7, 0, 0, 0]);
}

fn bytemuck_words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn naga_function_errors_point_at_the_offending_line() {
    let store_to_read_only = "\
@group(0) @binding(0) var<storage, read> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    x[lid.x] = 1.0;
}
";
    let subgroup_without_capability = "\
@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let v = x[lid.x];
    x[lid.x] = subgroupAdd(v);
}
";
    for (source, line, text) in [
        (store_to_read_only, 4, "    x[lid.x] = 1.0;"),
        (
            subgroup_without_capability,
            5,
            "    x[lid.x] = subgroupAdd(v);",
        ),
    ] {
        let e =
            validate_wgsl("bad_store", source, &Capabilities::offline(false, false)).unwrap_err();
        let r = e.to_string();
        assert_eq!(e.kind, ErrorKind::Internal, "{r}");
        assert!(
            r.contains("`bad_store`") && r.contains("tilewise bug"),
            "{r}"
        );
        assert!(r.contains(&format!("bad_store.wgsl:{line}:")), "{r}");
        assert!(r.contains(&format!("{line} | {text}")), "{r}");
        assert!(r.contains('^'), "{r}");
    }
    // The subgroup kernel is fine on a device with subgroups.
    validate_wgsl(
        "ok",
        subgroup_without_capability,
        &Capabilities::offline(false, true),
    )
    .unwrap();
}

/// A lost device (destroyed here, as a driver reset or removal would) is a located
/// runtime error from every later call, never a panic; a new context works.
#[test]
fn a_lost_device_is_a_diagnostic_and_a_new_context_works() {
    let Some(ctx) = gpu_or_skip() else { return };
    let x = ctx.create_buffer_from(&[1.5f32; 64]).unwrap();
    assert_eq!(ctx.read_vec::<f32>(&x).unwrap(), vec![1.5f32; 64]);
    ctx.device().destroy();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let read = ctx.read_vec::<f32>(&x);
        let sync = ctx.synchronize();
        (read, sync)
    }));
    let (read, sync) = outcome.expect("calls on a lost device must not panic");
    for r in [read.map(|_| ()), sync] {
        let e = r.expect_err("a lost device");
        assert_eq!(e.kind, ErrorKind::Runtime, "{}", e.render());
        assert!(e.message.contains("is lost"), "{}", e.render());
    }
    assert!(ctx.lost().is_some());
    let fresh = WgpuContext::new().unwrap();
    let y = fresh.create_buffer_from(&[2.5f32; 64]).unwrap();
    assert_eq!(fresh.read_vec::<f32>(&y).unwrap(), vec![2.5f32; 64]);
}
