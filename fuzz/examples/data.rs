//! Prints a fuzz program's input data (by seed): `cargo run -p tilewise-fuzz --example data -- SEED`.
fn main() {
    let seed: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let p = tilewise_fuzz::generate(seed, &tilewise_fuzz::Options::default());
    let h = tilewise_fuzz::exec::host_data(&p);
    for (k, d) in h.inputs.iter().enumerate() {
        let s = format!("{d:?}");
        println!(
            "in{k} ({:?}): {}",
            p.inputs[k].dtype,
            &s[..s.len().min(300)]
        );
    }
    println!("scalars {:?}", p.scalars);
}
