//! Prints the tile IR and the Thread IR of a fuzz program (by seed) for the PTX or WGSL
//! lowering: `cargo run --release -p tilewise-fuzz --example thread_ir -- SEED ptx|wgsl|coop`
//! (`coop`: the WGSL lowering for a device with 16x16 f16 cooperative matrices).
//! `FUZZ_SRC=file.py` takes the source from a file (a saved or edited failure) with the
//! seed's launch; `FUZZ_NW` sets the warps; `FUZZ_PTX=1` / `FUZZ_WGSL=1` print the code.
use tilewise::core::lower::{expand::ExpandOptions, to_thread_ir};
use tilewise::{Device, Module};
use tilewise_fuzz::{generate, Options};

fn main() {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let form = args.next().unwrap_or_else(|| "ptx".into());
    let ptx = form != "wgsl" && form != "coop";
    let caps = if form == "coop" {
        tilewise::wgsl::Capabilities::offline_coop()
    } else {
        tilewise::wgsl::Capabilities::offline(true, false)
    };
    let p = generate(seed, &Options::default());
    let src = match std::env::var("FUZZ_SRC") {
        Ok(path) => std::fs::read_to_string(path).unwrap(),
        Err(_) => p.source(),
    };
    let dev = Device::interpreter();
    let module = Module::parse("x.py", &src).unwrap();
    let kernel = module.kernel(tilewise_fuzz::Program::KERNEL).unwrap();
    let nw: u32 = std::env::var("FUZZ_NW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(p.num_warps);
    let mut launch = kernel.launch(&dev, p.grid).num_warps(nw);
    let bufs: Vec<_> = p
        .inputs
        .iter()
        .map(|b| b.dtype)
        .chain(p.outputs.iter().map(|o| o.dtype))
        .map(|d| dev.alloc(d, 4096).unwrap())
        .collect();
    for b in &bufs {
        launch = launch.arg(b);
    }
    for &s in &p.scalars {
        launch = launch.arg(s);
    }
    let c = launch.compile().unwrap();
    println!("{}", c.ir_text());
    let opt = if ptx {
        ExpandOptions::ptx(nw)
    } else {
        tilewise::wgsl::expand_options(&caps, nw)
    };
    match to_thread_ir(c.ir(), &opt) {
        Ok(t) => println!("{}", tilewise::core::thread_ir::print(&t)),
        Err(e) => println!("{}", e.render()),
    }
    if ptx && std::env::var("FUZZ_PTX").is_ok() {
        let k = c.ptx_for(tilewise::cuda::PtxTarget { sm: 90 }, nw).unwrap();
        println!("{}", k.source);
    } else if std::env::var("FUZZ_WGSL").is_ok() {
        println!("{}", c.wgsl_for(&caps, nw).unwrap().source);
    }
}
