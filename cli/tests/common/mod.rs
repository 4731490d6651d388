//! Helpers shared by the command line's tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A path under the temporary directory, named for its test and this process, removed
/// with everything under it when dropped: the tests leave nothing behind, and a rerun
/// with the same process id starts empty.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh, empty directory `NAME-PID`.
    pub fn dir(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A file `NAME-PID.EXT` holding `text`.
    pub fn file(name: &str, ext: &str, text: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("{name}-{}.{ext}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        Scratch(path)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}
