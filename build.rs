//! Computes the compiler's identity for the persistent cache: a hash of every source
//! file of the compiler (core, both backends, this facade), the lock file and the Rust
//! compiler's version. Any change to any of them gives a new identity, so a cached
//! kernel is never served by a compiler that would generate different code.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "wgsl") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dirs = ["src", "core/src", "cuda-backend/src", "wgsl-backend/src"];
    let mut files = vec![];
    for d in dirs {
        let dir = root.join(d);
        println!("cargo:rerun-if-changed={}", dir.display());
        sources(&dir, &mut files);
    }
    let lock = root.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    files.push(lock);
    files.sort();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for f in &files {
        f.strip_prefix(&root).unwrap_or(f).hash(&mut h);
        std::fs::read(f).unwrap_or_default().hash(&mut h);
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    version.hash(&mut h);
    println!(
        "cargo:rustc-env=TILEWISE_COMPILER_ID={}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        h.finish()
    );
}
