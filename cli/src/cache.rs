//! `tilewise cache`: where the persistent cache is, what it holds, and `--clear`.

use crate::CacheArgs;
use tilewise::disk_cache::{disabled_by_environment, DiskCache, COMPILER_ID};

pub fn run(args: &CacheArgs) -> Result<(), String> {
    let Some(cache) = DiskCache::from_environment() else {
        if disabled_by_environment() {
            println!("the persistent cache is off (TILEWISE_CACHE=0)");
        } else {
            println!("the persistent cache is off: no cache directory (set TILEWISE_CACHE_DIR)");
        }
        return Ok(());
    };
    println!("directory: {}", cache.root().display());
    println!("compiler:  {COMPILER_ID}");
    if args.clear {
        cache
            .clear()
            .map_err(|e| format!("cannot clear {}: {e}", cache.root().display()))?;
        println!("cleared");
        return Ok(());
    }
    let files = cache.files();
    let mut kinds: Vec<(String, usize, u64)> = vec![];
    for (path, size) in &files {
        let kind = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match kinds.iter_mut().find(|(k, _, _)| *k == kind) {
            Some(e) => {
                e.1 += 1;
                e.2 += size;
            }
            None => kinds.push((kind, 1, *size)),
        }
    }
    if kinds.is_empty() {
        println!("entries:   none");
    }
    for (kind, count, bytes) in kinds {
        println!(
            "  {kind:<24} {count:>6} entries {:>10.1} KiB",
            bytes as f64 / 1024.0
        );
    }
    Ok(())
}
