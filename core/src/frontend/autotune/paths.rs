//! What a dotted path denotes (`triton.cdiv`, `itertools.product`, `math.pi`,
//! `torch.float16`, `tl.float16`, the target query
//! `triton.runtime.driver.active.get_current_target`): a known function or constant, or
//! an opaque module path; and the names of dtypes in torch and in `triton.language`.

use super::builtins::Builtin;
use super::values::{Flavor, V};
use crate::ir::DType;

fn torch_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "bool" => DType::I1,
        "int8" => DType::I8,
        "int16" | "short" => DType::I16,
        "int32" | "int" => DType::I32,
        "int64" | "long" => DType::I64,
        "uint8" => DType::U8,
        "uint16" => DType::U16,
        "uint32" => DType::U32,
        "uint64" => DType::U64,
        "float16" | "half" => DType::F16,
        "bfloat16" => DType::BF16,
        "float32" | "float" => DType::F32,
        "float64" | "double" => DType::F64,
        "float8_e4m3fn" => DType::F8E4M3,
        "float8_e5m2" => DType::F8E5M2,
        _ => return None,
    })
}

pub(super) fn torch_name(d: DType) -> &'static str {
    match d {
        DType::I1 => "bool",
        DType::I8 => "int8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::F8E4M3 => "float8_e4m3fn",
        DType::F8E5M2 => "float8_e5m2",
    }
}

/// `str()` of a `triton.language` dtype (Triton's short names).
pub(super) fn tl_str(d: DType) -> &'static str {
    match d {
        DType::I1 => "int1",
        DType::F16 => "fp16",
        DType::BF16 => "bf16",
        DType::F32 => "fp32",
        DType::F64 => "fp64",
        DType::F8E4M3 => "fp8e4nv",
        DType::F8E5M2 => "fp8e5",
        other => other.triton_name(),
    }
}

/// The value a dotted name denotes: a known function or constant, or an opaque path.
pub(super) fn resolve<'a>(path: &str) -> V<'a> {
    let canon;
    let path = match path.strip_prefix("tilewise") {
        Some(rest) if rest.is_empty() || rest.starts_with('.') => {
            canon = format!("triton{rest}");
            canon.as_str()
        }
        _ => path,
    };
    let b = match path {
        "triton.Config" | "triton.runtime.Config" | "triton.runtime.autotuner.Config" => {
            Builtin::Config
        }
        "triton.autotune" | "triton.runtime.autotune" | "triton.runtime.autotuner.autotune" => {
            Builtin::Autotune
        }
        "triton.next_power_of_2" => Builtin::NextPow2,
        "triton.cdiv" => Builtin::Cdiv,
        "triton.runtime.driver.active.get_current_target" => Builtin::GetTarget,
        "torch.cuda.get_device_properties" => Builtin::DeviceProperties,
        "torch.cuda.get_device_capability" => Builtin::DeviceCapability,
        "triton.language.constexpr" | "triton.language.core.constexpr" => Builtin::Constexpr,
        "itertools.product" => Builtin::Product,
        "math.ceil" => Builtin::Ceil,
        "math.floor" => Builtin::Floor,
        "math.log2" => Builtin::Log2,
        "math.sqrt" => Builtin::Sqrt,
        "math.prod" => Builtin::Prod,
        "math.gcd" => Builtin::Gcd,
        "functools.lru_cache" | "functools.cache" => Builtin::Cache,
        "math.inf" => return V::Float(f64::INFINITY),
        "math.pi" => return V::Float(std::f64::consts::PI),
        _ => {
            if let Some(d) = path.strip_prefix("torch.").and_then(torch_dtype) {
                return V::DType(d, Flavor::Torch);
            }
            let tl = path
                .strip_prefix("triton.language.core.")
                .or_else(|| path.strip_prefix("triton.language."));
            if let Some(d) = tl.and_then(|n| DType::ALL.into_iter().find(|d| d.triton_name() == n))
            {
                return V::DType(d, Flavor::Triton);
            }
            return V::Path(path.into());
        }
    };
    V::Builtin(b)
}
