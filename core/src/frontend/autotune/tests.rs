//! Unit tests of reading `@triton.autotune`: declarations with exact config lists, the
//! evaluator's Python semantics, prune calls, and errors with their locations.

use super::*;

fn cuda() -> HostTarget {
    HostTarget::cuda(90)
}

fn hip() -> HostTarget {
    HostTarget {
        backend: "hip".into(),
        arch: 942,
        warp_size: 64,
        multiprocessors: 304,
    }
}

fn decl(src: &str, kernel: &str, target: &HostTarget) -> Result<Option<AutotuneDecl>> {
    Module::parse("t.py", src)?.autotune(kernel, target)
}

fn ok(src: &str, kernel: &str, target: &HostTarget) -> AutotuneDecl {
    match decl(src, kernel, target) {
        Ok(Some(d)) => d,
        Ok(None) => panic!("no autotune decorator"),
        Err(e) => panic!("{e}"),
    }
}

fn fail(src: &str, kernel: &str) -> Diagnostic {
    match decl(src, kernel, &cuda()) {
        Err(e) => e,
        Ok(d) => panic!("expected an error, got {d:?}"),
    }
}

fn cfg(kv: &[(&str, ConstValue)], warps: Option<u32>, stages: Option<u32>) -> TuneConfig {
    TuneConfig {
        constexprs: kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        num_warps: warps,
        num_stages: stages,
        pre_hook: None,
    }
}

fn i(v: i64) -> ConstValue {
    ConstValue::Int(v)
}

/// `(BLOCK_M, BLOCK_N)` configs with warps and stages.
fn mn(items: &[(i64, i64, u32, u32)]) -> Vec<TuneConfig> {
    items
        .iter()
        .map(|&(m, n, w, s)| cfg(&[("BM", i(m)), ("BN", i(n))], Some(w), Some(s)))
        .collect()
}

const KERNEL: &str = "
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";

#[test]
fn literal_list_of_configs() {
    let src = "import triton
import triton.language as tl

@triton.autotune(
    configs=[
        triton.Config({'BLOCK': 128}, num_warps=4),
        triton.Config({'BLOCK': 256, 'EVEN': True, 'SCALE': 0.5, 'T': (1, 'x')}, num_warps=8, num_stages=2),
        triton.Config(kwargs={'BLOCK': 64, 'DT': tl.float16, 'S': None}, num_stages=1, num_ctas=1),
    ],
    key=['n'],
)
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False, SCALE=1.0, T=None, DT=None, S=0):
    pass
";
    let d = ok(src, "k", &cuda());
    assert_eq!(
        d.configs,
        vec![
            cfg(&[("BLOCK", i(128))], Some(4), None),
            cfg(
                &[
                    ("BLOCK", i(256)),
                    ("EVEN", ConstValue::Bool(true)),
                    ("SCALE", ConstValue::Float(0.5)),
                    (
                        "T",
                        ConstValue::Tuple(vec![i(1), ConstValue::Str("x".into())])
                    ),
                ],
                Some(8),
                Some(2)
            ),
            cfg(
                &[
                    ("BLOCK", i(64)),
                    ("DT", ConstValue::DType(DType::F16)),
                    ("S", ConstValue::None)
                ],
                None,
                Some(1)
            ),
        ]
    );
    assert_eq!(d.key, ["n"]);
    assert!(d.reset_to_zero.is_empty() && d.restore_value.is_empty());
    assert_eq!((d.prune.clone(), d.warmup_ms, d.rep_ms), (None, None, None));
    let m = Module::parse("t.py", src).unwrap();
    assert_eq!(m.source().line_col(d.span.start).0, 4);
    // A kernel without the decorator has no declaration; an unknown one is an error.
    let plain = format!("import triton\nimport triton.language as tl\n{KERNEL}");
    assert_eq!(decl(&plain, "k", &cuda()).unwrap(), None);
    assert_eq!(
        decl(&plain, "nope", &cuda()).unwrap_err().kind,
        ErrorKind::Name
    );
}

#[test]
fn config_imported_by_name_positional_dict_and_options() {
    let src = "import triton
import triton.language as tl
from triton import Config, autotune as tune

@tune([Config({'BM': 32, 'BN': 64}, 2, 5), Config(kwargs=dict(BM=64, BN=64), num_warps=4)],
      ['M', 'N'], reset_to_zero=['b_ptr'], restore_value=('a_ptr',), warmup=5, rep=20.5,
      pre_hook=None, use_cuda_graph=False)
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";
    let d = ok(src, "k", &cuda());
    assert_eq!(
        d.configs,
        mn(&[(32, 64, 2, 5)])
            .into_iter()
            .chain([cfg(&[("BM", i(64)), ("BN", i(64))], Some(4), None)])
            .collect::<Vec<_>>()
    );
    assert_eq!(d.key, ["M", "N"]);
    assert_eq!(d.reset_to_zero, ["b_ptr"]);
    assert_eq!(d.restore_value, ["a_ptr"]);
    assert_eq!((d.warmup_ms, d.rep_ms), (Some(5.0), Some(20.5)));
}

#[test]
fn empty_configs_is_tritons_default() {
    let src = format!(
        "import triton\nimport triton.language as tl\n@triton.autotune(configs=[], key=[])\n{}",
        KERNEL.trim_start()
    );
    let d = ok(&src, "k", &cuda());
    assert_eq!(d.configs, vec![cfg(&[], Some(4), Some(3))]);
}

#[test]
fn comprehension_with_nested_for_and_if() {
    let src = format!(
        "import triton
import triton.language as tl

SIZES = [32, 64, 128]
STAGES = (3, 4)

@triton.autotune(
    configs=[
        triton.Config({{'BM': bm, 'BN': bn}}, num_warps=w, num_stages=s)
        for bm in SIZES
        for bn in SIZES[1:]
        if bm * bn <= 64 * 64 and not bm == 64
        for s, w in zip(STAGES, [4, 8])
    ],
    key=['M', 'N', 'K'],
){KERNEL}"
    );
    let d = ok(&src, "k", &cuda());
    assert_eq!(
        d.configs,
        mn(&[
            (32, 64, 4, 3),
            (32, 64, 8, 4),
            (32, 128, 4, 3),
            (32, 128, 8, 4),
        ])
    );
}

#[test]
fn helper_functions_branch_on_the_target() {
    let src = format!(
        "import triton
import triton.language as tl
import itertools


def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == \"cuda\"


def arch():
    return triton.runtime.driver.active.get_current_target().arch


def cuda_configs():
    configs = []
    for bm, bn in itertools.product([64, 128], [64]):
        stages = 4 if arch() >= 90 else 3
        configs.append(triton.Config({{'BM': bm, 'BN': bn}}, num_warps=8 if bm == 128 else 4, num_stages=stages))
    configs += [triton.Config({{'BM': 16, 'BN': 16}}, num_warps=1, num_stages=1)]
    return configs


def hip_configs():
    out = []
    for i in range(2):
        size = triton.next_power_of_2(33 + i * 40)
        out.extend([triton.Config({{'BM': size, 'BN': triton.cdiv(size, 2)}}, num_warps=2, num_stages=2)])
    return out


def get_autotune_config():
    if is_cuda():
        return cuda_configs()
    elif triton.runtime.driver.active.get_current_target().backend == 'hip':
        return hip_configs()
    else:
        return []


@triton.autotune(configs=get_autotune_config(), key=['M'])
{}",
        KERNEL.trim_start()
    );
    assert_eq!(
        ok(&src, "k", &cuda()).configs,
        mn(&[(64, 64, 4, 4), (128, 64, 8, 4), (16, 16, 1, 1)])
    );
    assert_eq!(
        ok(&src, "k", &HostTarget::cuda(80)).configs,
        mn(&[(64, 64, 4, 3), (128, 64, 8, 3), (16, 16, 1, 1)])
    );
    assert_eq!(
        ok(&src, "k", &hip()).configs,
        mn(&[(64, 32, 2, 2), (128, 64, 2, 2)])
    );
    let other = HostTarget {
        backend: "cpu".into(),
        arch: 0,
        warp_size: 1,
        multiprocessors: 1,
    };
    assert_eq!(
        ok(&src, "k", &other).configs,
        vec![cfg(&[], Some(4), Some(3))]
    );
}

#[test]
fn a_key_naming_no_parameter_is_skipped_with_a_warning() {
    // Triton ignores such names (tutorial 08 misspells one); tilewise says so.
    let src = format!(
        "import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}})], key=['M', 'nn', 'K']){KERNEL}"
    );
    let d = ok(&src, "k", &cuda());
    assert_eq!(d.key, vec!["M".to_string(), "K".to_string()]);
    assert_eq!(d.warnings.len(), 1);
    let w = &d.warnings[0];
    assert!(w.message.contains("`key` names `nn`"), "{w}");
    assert_eq!(w.line(), Some(4));
}

#[test]
fn torch_cuda_device_queries_answer_for_the_target() {
    // A persistent grid sized by the device's multiprocessors, a capability test, and
    // a fallback for targets that are not CUDA (as Triton's tutorials write them).
    let src = format!(
        "import torch
import triton
import triton.language as tl

def on_cuda():
    return triton.runtime.driver.active.get_current_target().backend == 'cuda'

def sms():
    if on_cuda():
        return torch.cuda.get_device_properties('cuda').multi_processor_count
    return 7

def hopper():
    return on_cuda() and torch.cuda.get_device_capability()[0] >= 9

@triton.autotune(configs=[triton.Config({{'BM': sms(), 'BN': 2 if hopper() else 1}})], key=['M'])
{}",
        KERNEL.trim_start()
    );
    let one = |m, n| vec![cfg(&[("BM", i(m)), ("BN", i(n))], None, None)];
    assert_eq!(ok(&src, "k", &cuda()).configs, one(132, 2));
    assert_eq!(ok(&src, "k", &HostTarget::cuda(80)).configs, one(108, 1));
    let h200 = HostTarget::cuda(90).with_multiprocessors(132);
    assert_eq!(ok(&src, "k", &h200).configs, one(132, 2));
    assert_eq!(
        ok(&src, "k", &HostTarget::cuda(89).with_multiprocessors(128)).configs,
        one(128, 1)
    );
    assert_eq!(ok(&src, "k", &hip()).configs, one(7, 1));
    // Asked on a target that is not CUDA, torch.cuda is an error at the call.
    let direct = src.replace("if on_cuda():\n        ", "if True:\n        ");
    let e = decl(&direct, "k", &hip()).unwrap_err();
    assert!(
        e.message.contains("torch.cuda describes CUDA devices"),
        "{e}"
    );
}

#[test]
fn module_level_code_runs_in_order() {
    // Top-level `if`, a mutation through a method, a global rebound after the kernel,
    // host code that cannot be evaluated (and is not needed), a `__main__` block.
    let src = format!(
        "import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
x = torch.rand(4, device=DEVICE)
torch.manual_seed(0)

if triton.runtime.driver.active.get_current_target().backend == 'hip':
    STAGES = [1]
elif triton.runtime.driver.active.get_current_target().arch >= 90:
    STAGES = [3, 4]
else:
    STAGES = [2]

CONFIGS = [triton.Config({{'BM': 64, 'BN': 64}}, num_warps=4, num_stages=s) for s in STAGES]
CONFIGS.append(triton.Config({{'BM': 128, 'BN': 32}}, num_warps=8, num_stages=STAGES[-1]))

@triton.autotune(configs=CONFIGS, key=['M']){KERNEL}
CONFIGS = []

@triton.autotune(configs=CONFIGS, key=['M'])
@triton.jit
def k2(M, BM: tl.constexpr = 1):
    pass

if __name__ == '__main__':
    torch.cuda.synchronize()
"
    );
    assert_eq!(
        ok(&src, "k", &cuda()).configs,
        mn(&[(64, 64, 4, 3), (64, 64, 4, 4), (128, 32, 8, 4)])
    );
    assert_eq!(
        ok(&src, "k", &HostTarget::cuda(80)).configs,
        mn(&[(64, 64, 4, 2), (128, 32, 8, 2)])
    );
    assert_eq!(
        ok(&src, "k2", &cuda()).configs,
        vec![cfg(&[], Some(4), Some(3))]
    );
}

#[test]
fn a_global_set_by_code_that_cannot_run_reports_that_code() {
    let src = format!(
        "import torch
import triton
import triton.language as tl

CONFIGS = [triton.Config({{'BM': 64, 'BN': 64}})]
if torch.cuda.mem_get_info()[0] >= 9:
    CONFIGS.append(triton.Config({{'BM': 128, 'BN': 64}}))

@triton.autotune(configs=CONFIGS, key=['M']){KERNEL}"
    );
    let e = fail(&src, "k");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert_eq!(e.line(), Some(6));
    assert!(e.message.contains("torch.cuda.mem_get_info"), "{e}");
    let r = e.render();
    assert!(r.contains("`CONFIGS` is used here"), "{r}");
    assert!(r.contains("could not be evaluated"), "{r}");
}

#[test]
fn heuristics_next_to_autotune() {
    let src = "import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({'BLOCK': 32})], key=['n'])
@triton.heuristics(values={'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})
@triton.jit
def k(x, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass

@triton.heuristics({'BLOCK': lambda args: 64})
@triton.jit
def plain(x, BLOCK: tl.constexpr):
    pass
";
    assert_eq!(
        ok(src, "k", &cuda()).configs,
        vec![cfg(&[("BLOCK", i(32))], None, None)]
    );
    assert_eq!(decl(src, "plain", &cuda()).unwrap(), None);
}

const PRUNED: &str = "import torch
import triton
import triton.language as tl


def smem_ok(conf, named_args):
    size = named_args['a_ptr'].element_size()
    return (conf.kwargs['BM'] + conf.kwargs['BN']) * conf.num_stages * size * 64 <= 64 * 1024


def prune(configs, named_args, **kwargs):
    M = named_args['M']
    pruned = [c for c in configs if c.kwargs.get('BM', 0) <= max(M, 16) and smem_ok(c, named_args)]
    if named_args['a_ptr'].dtype == torch.float32:
        pruned = [c for c in pruned if c.num_warps == 4]
    if kwargs.get('SMALL', False):
        pruned = pruned[:1]
    return sorted(pruned, key=lambda c: -c.kwargs['BN'])


CONFIGS = [
    triton.Config({'BM': bm, 'BN': bn}, num_warps=w, num_stages=s)
    for bm in [16, 64, 128] for bn in [32, 128] for (w, s) in [(4, 2), (8, 3)]
]


@triton.autotune(configs=CONFIGS, key=['M', 'N'],
                 prune_configs_by={'early_config_prune': prune, 'top_k': 2})
@triton.jit
def k(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
";

#[test]
fn prune_function_sees_named_args_and_kwargs() {
    let m = Module::parse("t.py", PRUNED).unwrap();
    let d = m.autotune("k", &cuda()).unwrap().unwrap();
    assert_eq!(d.configs.len(), 12);
    let p = d.prune.as_ref().unwrap();
    assert_eq!(p.top_k, Some(i(2)));
    let f = p.early_config_prune.as_ref().unwrap();
    assert_eq!(f.name, "prune");
    assert_eq!(m.source().line_col(f.span.start).0, 11);
    let tensor = |dtype| HostArg::Tensor { dtype, numel: 1024 };
    let args = |m: i64, dtype| {
        vec![
            ("a_ptr".to_string(), tensor(dtype)),
            ("b_ptr".to_string(), tensor(dtype)),
            ("M".to_string(), HostArg::Int(m)),
            ("N".to_string(), HostArg::Int(256)),
            ("K".to_string(), HostArg::Int(64)),
        ]
    };
    // fp16, M = 64: BM <= 64 and (BM + BN) * stages * 2 * 64 <= 64 KiB; sorted by BN
    // descending, stable.
    let kept = d
        .prune(&m, &d.configs, &args(64, DType::F16), &[], &cuda())
        .unwrap();
    assert_eq!(
        kept,
        mn(&[
            (16, 128, 4, 2),
            (16, 128, 8, 3),
            (64, 128, 4, 2),
            (16, 32, 4, 2),
            (16, 32, 8, 3),
            (64, 32, 4, 2),
            (64, 32, 8, 3),
        ])
    );
    // fp32 keeps 4 warps only (and halves the shared-memory budget); M = 8 -> BM 16.
    let kept = d
        .prune(&m, &d.configs, &args(8, DType::F32), &[], &cuda())
        .unwrap();
    assert_eq!(kept, mn(&[(16, 32, 4, 2)]));
    // Keyword arguments reach `**kwargs`.
    let small = [("SMALL".to_string(), HostArg::Bool(true))];
    let kept = d
        .prune(&m, &d.configs, &args(64, DType::F16), &small, &cuda())
        .unwrap();
    assert_eq!(kept, mn(&[(16, 32, 4, 2)]));
    // One config is not pruned.
    let one = &d.configs[11..];
    assert_eq!(
        d.prune(&m, one, &args(8, DType::F16), &[], &cuda())
            .unwrap(),
        one
    );
    // Pruning everything away is an error at the prune function.
    let e = d
        .prune(&m, &d.configs[8..], &args(8, DType::F16), &[], &cuda())
        .unwrap_err();
    assert_eq!((e.kind, e.line()), (ErrorKind::Runtime, Some(11)));
}

#[test]
fn prune_with_a_lambda_and_tl_dtype_misuse() {
    let src = format!(
        "import triton
import triton.language as tl

@triton.autotune(
    configs=[triton.Config({{'BM': 16, 'BN': 16}}), triton.Config({{'BM': 32, 'BN': 16}})],
    key=['M'],
    prune_configs_by={{'early_config_prune': lambda cs, nargs, **kw: [c for c in cs if c.kwargs['BM'] >= nargs['M']]}},
){KERNEL}
def bad(configs, named_args, **kwargs):
    return [c for c in configs if named_args['a_ptr'].dtype == tl.float16]

@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}}), triton.Config({{'BM': 32, 'BN': 16}})],
                 key=['M'], prune_configs_by={{'early_config_prune': bad}})
@triton.jit
def k2(a_ptr, b_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr):
    pass
"
    );
    let m = Module::parse("t.py", &src).unwrap();
    let d = m.autotune("k", &cuda()).unwrap().unwrap();
    let nargs = [("M".to_string(), HostArg::Int(20))];
    let kept = d.prune(&m, &d.configs, &nargs, &[], &cuda()).unwrap();
    assert_eq!(kept, vec![cfg(&[("BM", i(32)), ("BN", i(16))], None, None)]);
    let d2 = m.autotune("k2", &cuda()).unwrap().unwrap();
    let nargs = [(
        "a_ptr".to_string(),
        HostArg::Tensor {
            dtype: DType::F16,
            numel: 4,
        },
    )];
    let e = d2.prune(&m, &d2.configs, &nargs, &[], &cuda()).unwrap_err();
    assert_eq!((e.kind, e.line()), (ErrorKind::Type, Some(14)));
    assert!(e.message.contains("torch dtype"), "{e}");
}

const HOOKED: &str = "import torch
import triton
import triton.language as tl

def _desc_hook(nargs):
    BM = nargs['BM']
    nargs['desc_a'].block_shape = [BM, nargs['BN']]
    nargs['desc_b'].block_shape[0] = nargs['num_warps'] * 8
    if nargs['ZERO'] and nargs['out'].dtype == torch.float32:
        nargs['out'].zero_()


def _make(bm, w):
    return triton.Config({'BM': bm, 'BN': 32}, num_warps=w, pre_hook=_desc_hook)


def _keep(configs, named_args, **kwargs):
    return [c for c in configs if c.pre_hook is not None and c.kwargs['BM'] > 16]


@triton.autotune(configs=[_make(16, 4), _make(64, 8), triton.Config({'BM': 32, 'BN': 16})],
                 key=['M'], prune_configs_by={'early_config_prune': _keep})
@triton.jit
def k(desc_a, desc_b, out, M, ZERO: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pass


def _bad_shape(nargs):
    nargs['desc_a'].block_shape = [nargs['BM'], 'x']


def _bad_attr(nargs):
    return nargs['desc_a'].layout


def _outer():
    def inner(nargs):
        pass
    return triton.Config({'BM': 1, 'BN': 1}, pre_hook=inner)


@triton.autotune(configs=[triton.Config({'BM': 16, 'BN': 16}, pre_hook=_bad_shape),
                          triton.Config({'BM': 16, 'BN': 16}, pre_hook=_bad_attr),
                          triton.Config({'BM': 8, 'BN': 8}, pre_hook=lambda nargs: nargs['out'].zero_())],
                 key=['M'])
@triton.jit
def k2(desc_a, desc_b, out, M, ZERO: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pass


@triton.autotune(configs=[_outer()], key=['M'])
@triton.jit
def k3(desc_a, desc_b, out, M, ZERO: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    pass
";

fn hook_args(zero: bool) -> Vec<(String, HostArg)> {
    let desc = |block: Vec<u32>| HostArg::Descriptor {
        dtype: DType::F16,
        numel: 4096,
        shape: vec![64, 64],
        strides: vec![64, 1],
        block_shape: block,
    };
    vec![
        ("desc_a".to_string(), desc(vec![1, 1])),
        ("desc_b".to_string(), desc(vec![1, 32])),
        (
            "out".to_string(),
            HostArg::Tensor {
                dtype: DType::F32,
                numel: 64,
            },
        ),
        ("M".to_string(), HostArg::Int(64)),
        ("ZERO".to_string(), HostArg::Bool(zero)),
    ]
}

#[test]
fn config_pre_hooks_set_block_shapes_and_zero_tensors() {
    use super::PreHookAction::{BlockShape, Zero};
    let m = Module::parse("t.py", HOOKED).unwrap();
    let d = m.autotune("k", &cuda()).unwrap().unwrap();
    assert_eq!(d.configs.len(), 3);
    let hook = d.configs[0].pre_hook.as_ref().unwrap();
    assert_eq!(hook.name, "_desc_hook");
    assert_eq!(m.source().line_col(hook.span.start).0, 5);
    assert!(d.configs[2].pre_hook.is_none());
    // The hook reads the config's meta-parameters and num_warps from nargs, assigns
    // one block shape and changes another in place; zero_() is recorded.
    let a = d
        .run_pre_hook(&m, &d.configs[1], &hook_args(true), &cuda())
        .unwrap();
    assert_eq!(
        a,
        vec![
            BlockShape {
                param: "desc_a".into(),
                block_shape: vec![64, 32]
            },
            BlockShape {
                param: "desc_b".into(),
                block_shape: vec![64, 32]
            },
            Zero {
                param: "out".into()
            },
        ]
    );
    // An unchanged block shape is no action; without ZERO nothing is zeroed.
    let mut args = hook_args(false);
    if let HostArg::Descriptor { block_shape, .. } = &mut args[1].1 {
        *block_shape = vec![32, 32];
    }
    let a = d.run_pre_hook(&m, &d.configs[0], &args, &cuda()).unwrap();
    assert_eq!(
        a,
        vec![BlockShape {
            param: "desc_a".into(),
            block_shape: vec![16, 32]
        }]
    );
    // A config without a hook does nothing.
    assert!(d
        .run_pre_hook(&m, &d.configs[2], &hook_args(true), &cuda())
        .unwrap()
        .is_empty());
    // A prune function sees `.pre_hook`, and the configs it keeps keep their hooks.
    let kept = d
        .prune(&m, &d.configs, &hook_args(true), &[], &cuda())
        .unwrap();
    assert_eq!(kept, vec![d.configs[1].clone()]);
    assert!(kept[0].pre_hook.is_some());
}

#[test]
fn pre_hook_errors_are_located() {
    let m = Module::parse("t.py", HOOKED).unwrap();
    let d = m.autotune("k2", &cuda()).unwrap().unwrap();
    let e = d
        .run_pre_hook(&m, &d.configs[0], &hook_args(false), &cuda())
        .unwrap_err();
    assert_eq!((e.kind, e.line()), (ErrorKind::Type, Some(28)), "{e}");
    assert!(e.message.contains("'x'"), "{e}");
    assert!(e.render().contains("pre_hook"), "{}", e.render());
    let e = d
        .run_pre_hook(&m, &d.configs[1], &hook_args(false), &cuda())
        .unwrap_err();
    assert_eq!(
        (e.kind, e.line()),
        (ErrorKind::Unsupported, Some(33)),
        "{e}"
    );
    assert!(e.message.contains("layout"), "{e}");
    // A lambda hook.
    let a = d
        .run_pre_hook(&m, &d.configs[2], &hook_args(false), &cuda())
        .unwrap();
    assert_eq!(
        a,
        vec![super::PreHookAction::Zero {
            param: "out".into()
        }]
    );
    // A hook defined inside a function cannot be kept.
    let e = m.autotune("k3", &cuda()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("inside another function"), "{e}");
}

#[test]
fn perf_model_is_refused() {
    let src = format!(
        "import triton
import triton.language as tl

def model(**kw):
    return 1.0

@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}})], key=['M'],
                 prune_configs_by={{'perf_model': model, 'top_k': 10}}){KERNEL}"
    );
    let e = fail(&src, "k");
    assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(8)));
    assert!(e.message.contains("perf_model"), "{e}");
}

#[test]
fn unknown_and_unsupported_keywords_are_named() {
    let head = "import triton\nimport triton.language as tl\n\ndef hook(nargs):\n    pass\n\n";
    let cases = [
        (
            "@triton.autotune(configs=[], key=['M'], pre_hook=hook)",
            "pre_hook",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[], key=['M'], do_bench=hook)",
            "do_bench",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[], key=['M'], use_cuda_graph=True)",
            "use_cuda_graph",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[], key=['M'], keys=['N'])",
            "keys",
            ErrorKind::Argument,
        ),
        (
            "@triton.autotune(configs=[triton.Config({'BM': 1}, maxnreg=128)], key=['M'])",
            "maxnreg",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[triton.Config({'BM': 1}, num_ctas=2)], key=['M'])",
            "num_ctas",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[triton.Config({'BM': 1}, pre_hook=3)], key=['M'])",
            "pre_hook",
            ErrorKind::Type,
        ),
        (
            "@triton.autotune(configs=[triton.Config({'BM': 1}, ir_override='x.ttgir')], key=['M'])",
            "ir_override",
            ErrorKind::Unsupported,
        ),
        (
            "@triton.autotune(configs=[triton.Config({'BM': 1}, num_warp=4)], key=['M'])",
            "num_warp",
            ErrorKind::Argument,
        ),
        (
            "@triton.autotune(configs=[], key=['M'], prune_configs_by={'early_prune': hook})",
            "early_prune",
            ErrorKind::Argument,
        ),
    ];
    for (dec, word, kind) in cases {
        let src = format!("{head}{dec}{KERNEL}");
        let e = fail(&src, "k");
        assert_eq!((e.kind, e.line()), (kind, Some(7)), "{e}");
        assert!(e.message.contains(word), "{e}");
    }
}

#[test]
fn names_must_be_kernel_parameters() {
    // A `key` naming no parameter is a warning (Triton ignores it), at the name.
    let d = ok(
        &format!("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[],\n    key=['M',\n         'Q'])\n{}", KERNEL.trim_start()),
        "k",
        &cuda(),
    );
    let e = &d.warnings[0];
    assert_eq!((e.kind, e.line_col()), (ErrorKind::Name, Some((6, 10))));
    assert!(e.message.contains("`Q`"), "{e}");
    assert!(
        e.render()
            .contains("parameters of `k` are: a_ptr, b_ptr, M"),
        "{e}"
    );
    let e = fail(
        &format!("import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[], key=[], reset_to_zero=['c_ptr']){KERNEL}"),
        "k",
    );
    assert_eq!((e.kind, e.line()), (ErrorKind::Name, Some(4)));
    let e = fail(
        &format!("import triton\nimport triton.language as tl\n\ndef cfgs():\n    return [\n        triton.Config({{'BM': 1, 'BLOCK_K': 2}})]\n\n@triton.autotune(configs=cfgs(), key=[]){KERNEL}"),
        "k",
    );
    assert_eq!((e.kind, e.line()), (ErrorKind::Name, Some(6)));
    assert!(e.message.contains("`BLOCK_K`"), "{e}");
    let e = fail(
        &format!(
            "import triton\nimport triton.language as tl\n\n@triton.autotune(configs=[]){KERNEL}"
        ),
        "k",
    );
    assert_eq!((e.kind, e.line()), (ErrorKind::Argument, Some(4)));
}

#[test]
fn unsupported_calls_point_at_the_call() {
    let src = format!(
        "import torch
import triton
import triton.language as tl


def stages():
    free, total = torch.cuda.mem_get_info()
    return 4 if free >= 9 else 3


@triton.autotune(configs=[triton.Config({{'BM': 16, 'BN': 16}}, num_stages=stages())], key=['M']){KERNEL}"
    );
    let e = fail(&src, "k");
    assert_eq!(
        (e.kind, e.line_col()),
        (ErrorKind::Unsupported, Some((7, 19)))
    );
    assert!(e.message.contains("`torch.cuda.mem_get_info(...)`"), "{e}");
    assert!(e
        .render()
        .contains("while evaluating the `@triton.autotune` decorator of `k`"));
    // Iterating over something unknown, an undefined name, a class.
    let cases = [
        ("for x in torch.cuda:\n        pass", ErrorKind::Type),
        ("return undefined_name", ErrorKind::Name),
        ("class C:\n        pass", ErrorKind::Unsupported),
        ("return hasattr(triton, 'x')", ErrorKind::Unsupported),
    ];
    for (body, kind) in cases {
        let src = format!("import torch\nimport triton\nimport triton.language as tl\n\ndef f():\n    {body}\n    return []\n\n@triton.autotune(configs=f(), key=[]){KERNEL}");
        let e = fail(&src, "k");
        assert_eq!((e.kind, e.line()), (kind, Some(6)), "{e}");
    }
}

#[test]
fn endless_loops_and_recursion_are_bounded() {
    let head = "import triton\nimport triton.language as tl\n\n";
    let src = format!("{head}def f():\n    n = 0\n    while True:\n        n += 1\n\n@triton.autotune(configs=f(), key=[]){KERNEL}");
    let e = fail(&src, "k");
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("steps"), "{e}");
    let src = format!(
        "{head}def f(n):\n    return f(n + 1)\n\n@triton.autotune(configs=f(0), key=[]){KERNEL}"
    );
    let e = fail(&src, "k");
    assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(5)));
    assert!(e.message.contains("levels deep"), "{e}");
    let src = format!("{head}@triton.autotune(configs=[0] * (1 << 40), key=[]){KERNEL}");
    let e = fail(&src, "k");
    assert!(e.message.contains("steps"), "{e}");
    let src = format!("{head}@triton.autotune(configs=[], key=[], warmup=2 ** 70){KERNEL}");
    assert!(fail(&src, "k").message.contains("overflow"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let head = "import triton\nimport triton.language as tl\n\n";
    let deep = format!("{}0{}", "[".repeat(190), "]".repeat(190));
    let long = vec!["1"; 900].join(" + ");
    for e in [deep, long] {
        let src = format!("{head}@triton.autotune(configs=[], key=[], warmup={e}){KERNEL}");
        let d = fail(&src, "k");
        assert_eq!((d.kind, d.line()), (ErrorKind::Unsupported, Some(4)), "{d}");
        assert!(d.message.contains("levels deep"), "{d}");
    }
}

#[test]
fn autotune_below_jit_is_an_error() {
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\n@triton.autotune(configs=[], key=[])\ndef k(x):\n    pass\n";
    let e = fail(src, "k");
    assert_eq!((e.kind, e.line()), (ErrorKind::Unsupported, Some(5)));
}

#[test]
fn python_semantics() {
    // Values the evaluator computes, checked through a config's dict.
    let exprs = [
        ("7 // -2", i(-4)),
        ("-7 % 3", i(2)),
        ("7 / 2", ConstValue::Float(3.5)),
        (
            "2 ** 10 + (1 << 4) - (256 >> 2) + (6 & 3) + (4 | 1) + (6 ^ 3)",
            i(1024 + 16 - 64 + 2 + 5 + 5),
        ),
        ("1 < 2 <= 2 < 3", ConstValue::Bool(true)),
        ("1 < 2 > 3", ConstValue::Bool(false)),
        ("0 or 'x'", ConstValue::Str("x".into())),
        (
            "3 in range(0, 10, 3) and 4 not in [1, 2]",
            ConstValue::Bool(true),
        ),
        ("len({'a': 1, 'b': 2}) + len('abc') + len(range(5))", i(10)),
        ("min(3, 1, 2) * 100 + max([4, 9, 2])", i(109)),
        ("sorted([3, 1, 2], reverse=True)[0]", i(3)),
        (
            "tuple(sorted({'b': 1, 'a': 2}.items()))",
            ConstValue::Tuple(vec![
                ConstValue::Tuple(vec![ConstValue::Str("a".into()), i(2)]),
                ConstValue::Tuple(vec![ConstValue::Str("b".into()), i(1)]),
            ]),
        ),
        ("triton.next_power_of_2(100) + triton.cdiv(10, 4)", i(131)),
        ("int(2.9) + int('7') + round(2.5) + abs(-3)", i(14)),
        (
            "sum(x * y for x, y in enumerate([5, 6, 7], start=1))",
            i(5 + 12 + 21),
        ),
        ("{'a': 1}.get('b', 5)", i(5)),
        (
            "'a' if [] else ('b' if (0,) else 'c')",
            ConstValue::Str("b".into()),
        ),
        ("f'{1 + 1}x{SIZES}'", ConstValue::Str("2x[1, 2]".into())),
        (
            "tuple(SIZES[::-1]) + (None,)",
            ConstValue::Tuple(vec![i(2), i(1), ConstValue::None]),
        ),
        (
            "all([1, True]) and not any([0, ''])",
            ConstValue::Bool(true),
        ),
        (
            "math.ceil(2.1) + math.floor(-0.5) + int(math.log2(8))",
            i(5),
        ),
        ("len(list(itertools.product([1, 2], repeat=3)))", i(8)),
        (
            "torch.float16 == torch.half and tl.float32 != tl.float16",
            ConstValue::Bool(true),
        ),
        (
            "str(torch.bfloat16) + str(tl.bfloat16)",
            ConstValue::Str("torch.bfloat16bf16".into()),
        ),
        ("triton.Config({'A': 1}).all_kwargs()['num_stages']", i(3)),
        ("[x for x in range(3) if x != 1][-1]", i(2)),
        (
            "(lambda a, *rest, k=10, **kw: a + len(rest) + k + kw['z'])(1, 2, 3, z=100)",
            i(113),
        ),
    ];
    for (expr, want) in exprs {
        let src = format!(
            "import math\nimport itertools\nimport torch\nimport triton\nimport triton.language as tl\nSIZES = [1, 2]\n\n@triton.autotune(configs=[triton.Config({{'BM': {expr}}})], key=[])\n@triton.jit\ndef k(BM):\n    pass\n"
        );
        let d = ok(&src, "k", &cuda());
        assert_eq!(
            d.configs[0].constexprs,
            vec![("BM".to_string(), want)],
            "{expr}"
        );
    }
}

#[test]
fn closures_globals_and_defaults() {
    let src = format!(
        "import triton
import triton.language as tl
import functools

COUNT = 0

def make(scale, stages=(2, 3)):
    def one(bm):
        global COUNT
        COUNT += 1
        return triton.Config({{'BM': bm * scale, 'BN': COUNT}}, num_stages=stages[COUNT % 2])
    return [one(b) for b in [8, 16]]

@functools.lru_cache(maxsize=None)
def cached():
    return make(2)

@triton.autotune(configs=cached(), key=[]){KERNEL}"
    );
    assert_eq!(
        ok(&src, "k", &cuda()).configs,
        vec![
            cfg(&[("BM", i(16)), ("BN", i(1))], None, Some(3)),
            cfg(&[("BM", i(32)), ("BN", i(2))], None, Some(2)),
        ]
    );
}
