//! The generated WGSL in the shading languages wgpu's other backends hand to their
//! drivers: SPIR-V (Vulkan), MSL (Metal) and HLSL (DX12), through naga's back ends, as
//! wgpu itself translates it. tilewise runs these translations in CI for every kernel
//! of its library, so that a construct one platform's translator rejects is caught
//! without that platform's hardware; they also let a tool user look at what a driver
//! receives.

use crate::context::Capabilities;
use crate::validate::validate_wgsl;
use tilewise_core::{Diagnostic, Result};

/// A shading language naga can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// SPIR-V 1.6 (Vulkan), as words.
    SpirV,
    /// Metal Shading Language 2.4.
    Msl,
    /// HLSL shader model 6.2 (DX12; f16 needs it).
    Hlsl,
}

/// A translated module: SPIR-V words, or MSL / HLSL text.
#[derive(Clone, Debug, PartialEq)]
pub enum Translated {
    Words(Vec<u32>),
    Text(String),
}

fn failed(kernel: &str, lang: Language, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::internal(format!(
        "tilewise bug: naga could not translate kernel `{kernel}`'s WGSL to {lang:?}: {e}"
    ))
    .with_note("please report this bug with the kernel that caused it")
}

/// Validates `source` (the WGSL of `kernel`, entry point `main`) for a device with
/// `caps`, then writes it in `lang`.
pub fn translate(
    kernel: &str,
    source: &str,
    caps: &Capabilities,
    lang: Language,
) -> Result<Translated> {
    let valid = validate_wgsl(kernel, source, caps)?;
    let (module, info) = (&valid.module, &valid.info);
    let entry = "main".to_string();
    match lang {
        Language::SpirV => {
            let options = naga::back::spv::Options {
                lang_version: (1, 6),
                ..Default::default()
            };
            let pipeline = naga::back::spv::PipelineOptions {
                shader_stage: naga::ShaderStage::Compute,
                entry_point: entry,
            };
            naga::back::spv::write_vec(module, info, &options, Some(&pipeline))
                .map(Translated::Words)
                .map_err(|e| failed(kernel, lang, e))
        }
        Language::Msl => {
            let options = naga::back::msl::Options {
                lang_version: (2, 4),
                ..Default::default()
            };
            let pipeline = naga::back::msl::PipelineOptions {
                entry_point: Some((naga::ShaderStage::Compute, entry)),
                ..Default::default()
            };
            naga::back::msl::write_string(module, info, &options, &pipeline)
                .map(|(text, _)| Translated::Text(text))
                .map_err(|e| failed(kernel, lang, e))
        }
        Language::Hlsl => {
            let options = naga::back::hlsl::Options {
                shader_model: naga::back::hlsl::ShaderModel::V6_2,
                ..Default::default()
            };
            let pipeline = naga::back::hlsl::PipelineOptions {
                entry_point: Some((naga::ShaderStage::Compute, entry)),
            };
            let mut text = String::new();
            naga::back::hlsl::Writer::new(&mut text, &options, &pipeline)
                .write(module, info, None)
                .map_err(|e| failed(kernel, lang, e))?;
            Ok(Translated::Text(text))
        }
    }
}
