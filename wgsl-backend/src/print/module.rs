//! The shader's skeleton: the header (`enable` directives, then the prelude of the
//! helpers the shader calls, inserted once the rest is printed), the parameter block
//! (`struct Params`: each storage binding's element base offset, the launch grid, the
//! scalar arguments) and its reads, the storage bindings, the workgroup arrays, and
//! the entry point with its prologue, which recovers the program ids from the folded
//! dispatch. [`WgslKernel`]'s methods encode the same parameter block and fold the
//! same grid on the launching side.

use super::prelude::prelude_for;
use super::{Printer, Repr, WgslKernel};
use crate::pipeline::KernelLayout;
use std::fmt::Write;
use tilewise_core::ir::DType;
use tilewise_core::launch::ScalarValue;
use tilewise_core::thread_ir::{ParamKind, Special};
use tilewise_core::{Diagnostic, ErrorKind, Result};

impl WgslKernel {
    /// The workgroups to dispatch for a launch grid: programs are numbered linearly and
    /// folded into x and y so that no dimension exceeds `max_per_dim`; the kernel
    /// recovers the program ids from the grid in the parameter block.
    pub fn workgroups(grid: [u32; 3], max_per_dim: u32) -> Result<[u32; 3]> {
        let total = grid.iter().map(|&d| d as u64).product::<u64>();
        let x = total.min(max_per_dim as u64);
        let y = total.div_ceil(x.max(1));
        if y > max_per_dim as u64 {
            return Err(Diagnostic::new(
                ErrorKind::Launch,
                format!("grid {grid:?} has more programs than the adapter can dispatch"),
            ));
        }
        Ok([x as u32, y as u32, 1])
    }

    /// Encodes the grid and the scalar arguments (indexed by Thread IR parameter) as
    /// parameter words.
    pub fn encode_scalars(
        &self,
        grid: [u32; 3],
        scalar_of: impl Fn(usize) -> Option<ScalarValue>,
    ) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(4 * (4 + self.scalar_slots.len()));
        for w in [grid[0], grid[1], grid[2], 0] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for &(p, dt) in &self.scalar_slots {
            let v = scalar_of(p).ok_or_else(|| {
                Diagnostic::new(ErrorKind::Launch, format!("missing scalar argument {p}"))
            })?;
            let word: u32 = match (v, dt) {
                (ScalarValue::Bool(b), _) => b as u32,
                (ScalarValue::Int(_, i), d) if d.is_float() => (i as f32).to_bits(),
                (ScalarValue::Int(_, i), _) => i as u32,
                (ScalarValue::Float(_, f), d) if d.is_float() => (f as f32).to_bits(),
                (ScalarValue::Float(_, f), _) => f as i64 as u32,
            };
            out.extend_from_slice(&word.to_le_bytes());
        }
        out.resize(16 * (1 + self.scalar_slots.len().div_ceil(4)), 0);
        Ok(out)
    }
}

impl Printer<'_> {
    /// The module up to the entry point's opening line: directives, prelude, the
    /// parameter block, the bindings and the workgroup arrays.
    pub(super) fn header(
        &mut self,
        layout: &KernelLayout,
        scalars: &[(usize, DType)],
    ) -> Result<()> {
        let uses_f16 = self.f16
            && (self.k.regs.iter().any(|t| t.dtype == DType::F16)
                || self.k.shared.iter().any(|a| a.dtype == DType::F16)
                || self.k.params.iter().any(|p| {
                    matches!(
                        p.kind,
                        ParamKind::Buffer {
                            dtype: DType::F16,
                            ..
                        }
                    )
                }));
        let mut h = String::new();
        let _ = writeln!(
            h,
            "// tilewise: kernel `{}`, {} threads per program",
            self.k.name, self.k.threads
        );
        if uses_f16 {
            h.push_str("enable f16;\n");
        }
        if !self.k.frags.is_empty() {
            h.push_str("enable wgpu_cooperative_matrix;\n");
        }
        // The prelude goes here once the whole shader is printed.
        self.prelude_at = h.len();
        let nb = layout.storage.len();
        let nbw = nb.div_ceil(4).max(1);
        let nsw = 1 + scalars.len().div_ceil(4);
        let _ = writeln!(h, "\nstruct Params {{\n  bases: array<vec4<u32>, {nbw}>,\n  words: array<vec4<u32>, {nsw}>,\n}}");
        for (i, prm) in self.k.params.iter().enumerate() {
            let (Some(b), Some(repr)) = (self.binding[i], self.reprs[i]) else {
                continue;
            };
            let ParamKind::Buffer { dtype, written } = prm.kind else {
                continue;
            };
            let access = if written { "read_write" } else { "read" };
            let elem = match repr {
                Repr::Plain => self.rty(dtype).to_string(),
                Repr::Atomic32 if dtype == DType::I32 => "atomic<i32>".into(),
                Repr::Atomic32 => "atomic<u32>".into(),
                Repr::Packed { atomic: true, .. } => "atomic<u32>".into(),
                Repr::Packed { atomic: false, .. } => "u32".into(),
                Repr::Vec4 => format!("vec4<{}>", self.rty(dtype)),
            };
            let _ = writeln!(h, "@group(0) @binding({b}) var<storage, {access}> b{i}: array<{elem}>; // {}: {dtype}", prm.name);
        }
        let _ = writeln!(h, "@group(0) @binding({nb}) var<uniform> P: Params;");
        // With a nonzero base of a scalar-only kernel layout still valid: bases is sized >= 1.
        for (i, a) in self.k.shared.iter().enumerate() {
            if self.shared_vec4[i] {
                let len = a.len.div_ceil(4).max(1);
                self.workgroup_bytes += 16 * len;
                let _ = writeln!(
                    h,
                    "var<workgroup> s{i}: array<vec4<{}>, {len}>; // {}",
                    self.rty(a.dtype),
                    a.name
                );
                continue;
            }
            // Booleans live in workgroup memory as u32: SPIR-V drivers do not
            // reliably support `bool` there (seen on NVIDIA's Vulkan driver).
            let (elem, bytes) = if a.dtype == DType::I1 {
                ("u32", 4)
            } else {
                (self.rty(a.dtype), self.elem_bytes(a.dtype))
            };
            // Every array a multiple of 16 bytes long: however the driver places them,
            // each starts 16-byte aligned, as cooperative-matrix loads and stores need
            // (a misaligned fragment store on NVIDIA's Vulkan driver silently wrote
            // nothing).
            let per16 = (16 / bytes).max(1);
            let len = a.len.max(1).div_ceil(per16) * per16;
            self.workgroup_bytes += len * bytes;
            let _ = writeln!(
                h,
                "var<workgroup> s{i}: array<{elem}, {len}>; // {}",
                a.name
            );
        }
        let _ = writeln!(
            h,
            "\n@compute @workgroup_size({})\nfn main(@builtin(local_invocation_index) tw_tid: u32, @builtin(workgroup_id) tw_wg: vec3<u32>, @builtin(num_workgroups) tw_nwg: vec3<u32>{}) {{",
            self.k.threads,
            if self.subgroup_id {
                ", @builtin(subgroup_id) tw_sg: u32, @builtin(subgroup_invocation_id) tw_sgi: u32"
            } else {
                ""
            }
        );
        self.out = h;
        Ok(())
    }

    /// The entry point's first lines: the program ids recovered from the linear
    /// program number, surplus workgroups returning at once.
    pub(super) fn prologue(&mut self) {
        let out = &mut self.out;
        // Programs are numbered linearly over the folded dispatch; recover the ids.
        out.push_str("  let tw_grid = P.words[0].xyz;\n");
        out.push_str("  let tw_lin = tw_wg.x + tw_wg.y * tw_nwg.x;\n");
        out.push_str("  if (tw_lin >= tw_grid.x * tw_grid.y * tw_grid.z) { return; }\n");
        out.push_str("  let tw_pid = vec3<u32>(tw_lin % tw_grid.x, (tw_lin / tw_grid.x) % tw_grid.y, tw_lin / (tw_grid.x * tw_grid.y));\n");
    }

    /// Inserts the prelude into the printed shader: the helpers it calls.
    pub(super) fn insert_prelude(&mut self) {
        let prelude = prelude_for(&self.out);
        self.out.insert_str(self.prelude_at, &prelude);
    }

    /// The entry point's statements and its closing brace.
    pub(super) fn body(&mut self) -> Result<()> {
        let body = self.k.body.clone();
        self.stmts(&body, 1)?;
        self.out.push_str("}\n");
        Ok(())
    }

    /// The element base offset of buffer `p`'s view, from the parameter block.
    pub(super) fn base(&self, p: u32) -> String {
        let b = self.binding[p as usize].unwrap_or(0);
        format!("P.bases[{}][{}]", b / 4, b % 4)
    }

    /// Scalar parameter `p`, of `dt`, from its parameter-block word.
    pub(super) fn scalar(&self, p: u32, dt: DType) -> String {
        let s = self.scalar_slot[p as usize].unwrap_or(0);
        let w = format!("P.words[{}][{}]", 1 + s / 4, s % 4);
        match dt {
            DType::I1 => format!("({w} != 0u)"),
            DType::I8 | DType::I16 | DType::I32 => format!("bitcast<i32>({w})"),
            DType::U8 | DType::U16 | DType::U32 => w,
            DType::F16 if self.f16 => format!("f16(bitcast<f32>({w}))"),
            _ => format!("bitcast<f32>({w})"),
        }
    }

    /// A value only the hardware knows: the thread's index, the program's ids and the
    /// grid (from the prologue), the subgroup ids.
    pub(super) fn special(&self, s: Special) -> String {
        match s {
            Special::ThreadId => "bitcast<i32>(tw_tid)".into(),
            Special::ProgramId(a) => format!("bitcast<i32>(tw_pid[{a}])"),
            Special::NumPrograms(a) => format!("bitcast<i32>(tw_grid[{a}])"),
            Special::SubgroupId => "bitcast<i32>(tw_sg)".into(),
            Special::SubgroupInvocationId => "bitcast<i32>(tw_sgi)".into(),
        }
    }
}
