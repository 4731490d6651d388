//! `tilewise compile`: a kernel specialized for a signature, lowered and printed
//! without a GPU (the interpreter's device holds the placeholder arguments).

use crate::signature::{parse_constexpr, parse_signature, representative, Param};
use crate::{CompileArgs, Emit};
use tilewise::core::lower::expand::ExpandOptions;
use tilewise::cuda::{PtxOptions, PtxTarget};
use tilewise::wgsl::Capabilities;
use tilewise::{Arg, Device, Module};

pub fn run(args: &CompileArgs) -> Result<(), String> {
    let text = artifact(args)?;
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// The text `args` asks for, or the error to print.
pub fn artifact(args: &CompileArgs) -> Result<String, String> {
    let render = |e: tilewise::Diagnostic| e.render();
    let signature = parse_signature(&args.signature)?;
    let module = Module::from_file(&args.file).map_err(render)?;
    let kernel = module.kernel(&args.kernel).map_err(render)?;
    let dev = Device::interpreter();
    let mut launch = kernel.launch(&dev, 1).num_warps(args.num_warps);
    if let Some(stages) = args.num_stages {
        // The lowerings below take the depth (clap checked it is 1 to 8).
        launch = launch.num_stages(stages);
    }
    for (_, p) in &signature {
        let arg = match *p {
            Param::Pointer { dtype, aligned } => {
                let buf = dev.alloc(dtype, 64).map_err(render)?;
                Arg::Buffer(if aligned {
                    buf.view()
                } else {
                    buf.slice(1..64)
                })
            }
            Param::Scalar { dtype, hint } => Arg::Scalar(representative(dtype, hint)),
        };
        launch = launch.arg(arg);
    }
    for c in &args.constexprs {
        let (name, value) = parse_constexpr(c)?;
        launch = launch.constexpr(&name, value);
    }
    let compiled = launch.compile().map_err(render)?;
    let ir = compiled.ir();
    Ok(match args.emit {
        Emit::Ir => compiled.ir_text(),
        Emit::ThreadIr | Emit::ThreadIrPtx => {
            let base = if args.emit == Emit::ThreadIr {
                tilewise::wgsl::expand_options(&caps(args), args.num_warps)
            } else {
                tilewise::cuda::expand_options(&PtxOptions::new(
                    PtxTarget { sm: args.sm },
                    args.num_warps,
                ))
            };
            let options = ExpandOptions {
                checked: args.checked,
                num_stages: args.num_stages,
                ..base
            };
            let t = tilewise::core::lower::to_thread_ir(ir, &options).map_err(render)?;
            tilewise::core::thread_ir::print(&t)
        }
        Emit::Wgsl => {
            let c = caps(args);
            let w = tilewise::wgsl::compile_with(
                ir,
                &c,
                &tilewise::wgsl::WgslOptions {
                    checked: args.checked,
                    num_stages: args.num_stages,
                    ..tilewise::wgsl::WgslOptions::new(args.num_warps)
                },
            )
            .map_err(render)?;
            tilewise::wgsl::validate_wgsl(&w.name, &w.source, &c).map_err(render)?;
            print_notes(&w.name, &w.notes);
            w.source
        }
        Emit::Ptx => {
            let options = PtxOptions {
                checked: args.checked,
                num_stages: args.num_stages,
                max_shared_per_block: args.max_shared,
                ..PtxOptions::new(PtxTarget { sm: args.sm }, args.num_warps)
            };
            let ptx = tilewise::cuda::compile(ir, &options).map_err(render)?;
            print_notes(&ptx.name, &ptx.notes);
            ptx.source
        }
    })
}

/// What the lowering chose and gave up (tiles, rings, staging, fitting), on stderr.
fn print_notes(kernel: &str, notes: &[String]) {
    for note in notes {
        eprintln!("note: `{kernel}`: {note}");
    }
}

/// The offline WGSL device `args` describes.
fn caps(args: &CompileArgs) -> Capabilities {
    let mut c = if args.coop {
        Capabilities::offline_coop()
    } else {
        Capabilities::offline(true, false)
    };
    if let Some(bytes) = args.workgroup_storage {
        c.max_compute_workgroup_storage_size = bytes;
    }
    if let Some(n) = args.invocations {
        c.max_compute_invocations_per_workgroup = n;
        c.max_compute_workgroup_size[0] = c.max_compute_workgroup_size[0].max(n);
    }
    c
}
