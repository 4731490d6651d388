//! `tilewise devices`: what this machine can run kernels on.

use tilewise::wgsl::WgpuContext;
use tilewise::Device;

pub fn run() -> Result<(), String> {
    println!("CPU");
    for dev in [
        Device::interpreter(),
        Device::simulator(),
        Device::simulator_ptx(),
        Device::simulator_coop(),
    ] {
        println!("  {}", dev.name());
    }
    println!("CUDA");
    match tilewise::cuda::CudaRuntime::device_count() {
        Ok(0) => println!("  no device"),
        Ok(n) => {
            for i in 0..n {
                match Device::cuda(i) {
                    Ok(d) => println!("  {i}: {}", d.name()),
                    Err(e) => println!("  {i}: unusable: {}", e.message),
                }
            }
        }
        Err(e) => println!("  none: {}", e.message),
    }
    println!("wgpu adapters");
    match WgpuContext::adapters() {
        Ok(list) if list.is_empty() => println!("  none found"),
        Ok(list) => {
            for (info, compute) in list {
                println!(
                    "  {} ({:?}, {:?}, driver {} {}){}",
                    info.name,
                    info.backend,
                    info.device_type,
                    info.driver,
                    info.driver_info,
                    if compute { "" } else { ": no compute shaders" }
                );
            }
        }
        Err(e) => println!("  none: {}", e.message),
    }
    match Device::wgpu() {
        Ok(dev) => {
            println!("wgpu device: {}", dev.name());
            if let Some(c) = dev.wgpu_capabilities() {
                println!("  f16: {}", c.f16);
                println!(
                    "  subgroups: {} (sizes {}..{})",
                    c.subgroups, c.min_subgroup_size, c.max_subgroup_size
                );
                println!("  timestamps: {}", c.timestamps);
                let coop: Vec<String> = c
                    .coop_matrix
                    .iter()
                    .map(|m| format!("{0}x{0}x{0} {1}->{2}", m.size, m.input, m.acc))
                    .collect();
                println!(
                    "  cooperative matrices: {}",
                    if coop.is_empty() {
                        "none".to_string()
                    } else {
                        coop.join(", ")
                    }
                );
                println!(
                    "  workgroup memory {} bytes, {} invocations a workgroup, storage bindings up to {} bytes",
                    c.max_compute_workgroup_storage_size,
                    c.max_compute_invocations_per_workgroup,
                    c.max_storage_buffer_binding_size
                );
            }
        }
        Err(e) => println!("wgpu device: none: {}", e.message),
    }
    println!("Device::best(): {}", Device::best().name());
    Ok(())
}
