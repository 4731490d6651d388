//! The persistent cache: compiled kernels, wgpu pipeline caches and autotuning choices
//! kept on disk across processes.
//!
//! **Where.** `TILEWISE_CACHE_DIR` when set, else the platform's cache directory
//! (`$XDG_CACHE_HOME/tilewise` or `~/.cache/tilewise` on Linux, `~/Library/Caches/
//! tilewise` on macOS, `%LOCALAPPDATA%\tilewise\cache` on Windows, by the `directories`
//! crate). `TILEWISE_CACHE=0` (or `off`, `false`) turns the cache off.
//!
//! **Keys.** An entry's key is a text naming everything the entry depends on: the kind
//! (`cuda`, `wgpu`, `autotune`, ...), the compiler's identity (a hash of the compiler's
//! sources, lock file and Rust version, see `build.rs`), the specialization (the source
//! file's fingerprint, the kernel, its argument types and constexprs), the launch
//! options and the target (GPU, compute capability, driver version). The file's name is
//! a 128-bit hash of the key; the file repeats the whole key, so a collision or another
//! version's file is recognized and ignored.
//!
//! **Entries.** A file is `TWCACHE\0`, a format version, the key, named sections of
//! bytes, and a checksum of all of it. A file that is truncated, corrupted, foreign or
//! of another format is ignored (logged at `warn`) and rewritten by the next store:
//! never an error and never a crash.
//!
//! **Concurrency.** An entry is written to a temporary file in its directory and renamed
//! over the final name, so a reader sees a whole file or none, and two processes that
//! store the same entry at once both succeed (the last rename wins; both wrote the same
//! bytes).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The compiler's identity (see `build.rs`): part of every key.
pub const COMPILER_ID: &str = env!("TILEWISE_COMPILER_ID");

const MAGIC: &[u8; 8] = b"TWCACHE\0";
const FORMAT: u32 = 1;

/// The persistent cache's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskCache {
    root: PathBuf,
}

/// A stored entry: named sections of bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    pub sections: Vec<(String, Vec<u8>)>,
}

impl Entry {
    /// The section `name`, if present.
    pub fn section(&self, name: &str) -> Option<&[u8]> {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_slice())
    }

    /// Adds a section.
    pub fn with(mut self, name: &str, bytes: Vec<u8>) -> Entry {
        self.sections.push((name.to_string(), bytes));
        self
    }
}

/// Whether the environment turns the cache off (`TILEWISE_CACHE=0`, `off`, `false`, `no`).
pub fn disabled_by_environment() -> bool {
    std::env::var("TILEWISE_CACHE").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

impl DiskCache {
    /// A cache in `root` (created when first written).
    pub fn at(root: impl Into<PathBuf>) -> DiskCache {
        DiskCache { root: root.into() }
    }

    /// The cache the environment asks for: `None` when `TILEWISE_CACHE=0` or when no
    /// cache directory can be found.
    pub fn from_environment() -> Option<DiskCache> {
        if disabled_by_environment() {
            return None;
        }
        if let Some(dir) = std::env::var_os("TILEWISE_CACHE_DIR").filter(|d| !d.is_empty()) {
            return Some(DiskCache::at(dir));
        }
        match directories::ProjectDirs::from("", "", "tilewise") {
            Some(p) => Some(DiskCache::at(p.cache_dir())),
            None => {
                log::debug!("cache: no home directory; the persistent cache is off");
                None
            }
        }
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of `key` among the entries of `kind`.
    pub fn path_of(&self, kind: &str, key: &str) -> PathBuf {
        self.root
            .join(format!("v{FORMAT}"))
            .join(kind)
            .join(format!("{}.twc", key_hash(key)))
    }

    /// The entry of `key`, or `None` (a miss; an unreadable entry is logged and missed).
    pub fn get(&self, kind: &str, key: &str) -> Option<Entry> {
        let path = self.path_of(kind, key);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                log::debug!("cache: miss ({kind}) {}", path.display());
                return None;
            }
            Err(e) => {
                log::warn!("cache: cannot read {}: {e}; compiling anew", path.display());
                return None;
            }
        };
        match decode(&bytes, key) {
            Ok(entry) => {
                log::debug!(
                    "cache: hit ({kind}) {} ({} bytes)",
                    path.display(),
                    bytes.len()
                );
                Some(entry)
            }
            Err(why) => {
                log::warn!(
                    "cache: ignoring {}: {why}; it will be rewritten",
                    path.display()
                );
                None
            }
        }
    }

    /// Stores `entry` under `key` (a temporary file renamed into place). Failures are
    /// logged, never returned: the cache only ever saves work.
    pub fn put(&self, kind: &str, key: &str, entry: &Entry) {
        let path = self.path_of(kind, key);
        match write_atomically(&path, &encode(entry, key)) {
            Ok(()) => log::debug!("cache: stored ({kind}) {}", path.display()),
            Err(e) => log::warn!("cache: cannot write {}: {e}", path.display()),
        }
    }

    /// Every entry file under the cache (for `tilewise cache`): path and size.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64)>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if let Ok(m) = e.metadata() {
                    out.push((p, m.len()));
                }
            }
        }
        let mut out = vec![];
        walk(&self.root, &mut out);
        out.sort();
        out
    }

    /// Removes every entry (the directory of this format and older ones).
    pub fn clear(&self) -> std::io::Result<()> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Ok(());
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('v') && name[1..].parse::<u32>().is_ok() {
                std::fs::remove_dir_all(e.path())?;
            }
        }
        Ok(())
    }
}

/// A 128-bit hex hash of `key` (two keyed SipHashes).
fn key_hash(key: &str) -> String {
    let half = |salt: u64| {
        let mut h = DefaultHasher::new();
        salt.hash(&mut h);
        key.hash(&mut h);
        h.finish()
    };
    format!("{:016x}{:016x}", half(0x7469_6c65), half(0x7769_7365))
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

fn encode(entry: &Entry, key: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(key.len() as u64).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(entry.sections.len() as u32).to_le_bytes());
    for (name, bytes) in &entry.sections {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads bytes off the front of a slice, failing on truncation.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64) -> Result<&'a [u8], String> {
        let n = usize::try_from(n).map_err(|_| "a length beyond memory".to_string())?;
        if n > self.0.len() {
            return Err("truncated".into());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

fn decode(bytes: &[u8], key: &str) -> Result<Entry, String> {
    if bytes.len() < MAGIC.len() + 12 || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a tilewise cache entry".into());
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
        return Err("checksum mismatch (a truncated or corrupted file)".into());
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let format = r.u32()?;
    if format != FORMAT {
        return Err(format!("format {format}, not {FORMAT}"));
    }
    let len = r.u64()?;
    if r.take(len)? != key.as_bytes() {
        return Err("the entry belongs to another key (a hash collision or a foreign file)".into());
    }
    let count = r.u32()?;
    let mut entry = Entry::default();
    for _ in 0..count {
        let n = r.u32()? as u64;
        let name = String::from_utf8(r.take(n)?.to_vec()).map_err(|_| "a bad section name")?;
        let len = r.u64()?;
        entry.sections.push((name, r.take(len)?.to_vec()));
    }
    if !r.0.is_empty() {
        return Err("trailing bytes".into());
    }
    Ok(entry)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".part")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, DiskCache) {
        let dir = tempfile::tempdir().unwrap();
        let c = DiskCache::at(dir.path());
        (dir, c)
    }

    #[test]
    fn stores_and_reads_back() {
        let (_d, c) = cache();
        let e = Entry::default()
            .with("meta", b"{\"a\":1}".to_vec())
            .with("image", vec![0, 1, 2, 255]);
        assert_eq!(c.get("cuda", "k1"), None);
        c.put("cuda", "k1", &e);
        assert_eq!(c.get("cuda", "k1"), Some(e.clone()));
        assert_eq!(c.get("cuda", "k2"), None);
        assert_eq!(c.get("wgpu", "k1"), None);
        assert_eq!(c.files().len(), 1);
        c.clear().unwrap();
        assert_eq!(c.get("cuda", "k1"), None);
    }

    #[test]
    fn every_damaged_file_is_a_miss_and_is_rewritten() {
        let (_d, c) = cache();
        let e = Entry::default().with("image", (0..200u8).collect());
        c.put("cuda", "key", &e);
        let path = c.path_of("cuda", "key");
        let good = std::fs::read(&path).unwrap();
        // Every truncation and every single-byte flip is refused.
        for cut in [0, 1, 8, 12, 20, good.len() / 2, good.len() - 1] {
            std::fs::write(&path, &good[..cut]).unwrap();
            assert_eq!(c.get("cuda", "key"), None, "cut at {cut}");
        }
        for i in (0..good.len()).step_by(7) {
            let mut bad = good.clone();
            bad[i] ^= 0x41;
            std::fs::write(&path, &bad).unwrap();
            assert_eq!(c.get("cuda", "key"), None, "byte {i} flipped");
        }
        // A foreign file, and another key's entry under this key's name.
        std::fs::write(&path, b"hello, world").unwrap();
        assert_eq!(c.get("cuda", "key"), None);
        std::fs::write(&path, encode(&e, "another key")).unwrap();
        assert_eq!(c.get("cuda", "key"), None);
        // The next store replaces it.
        c.put("cuda", "key", &e);
        assert_eq!(c.get("cuda", "key"), Some(e));
    }

    #[test]
    fn concurrent_writers_leave_one_whole_entry() {
        let (_d, c) = cache();
        let big: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::thread::scope(|s| {
            for t in 0..8 {
                let (c, big) = (&c, &big);
                s.spawn(move || {
                    for _ in 0..10 {
                        c.put(
                            "cuda",
                            "shared",
                            &Entry::default().with("image", big.clone()),
                        );
                        if let Some(e) = c.get("cuda", "shared") {
                            assert_eq!(e.section("image"), Some(big.as_slice()), "writer {t}");
                        }
                    }
                });
            }
        });
        assert_eq!(
            c.get("cuda", "shared").unwrap().section("image"),
            Some(big.as_slice())
        );
        // No temporary file is left behind.
        assert_eq!(c.files().len(), 1, "{:?}", c.files());
    }
}
