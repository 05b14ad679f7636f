//! Shared test helpers: vendored model directories.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Decompresses a gzip file.
pub fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .read_to_end(&mut out)
    .expect("gunzip");
    out
}

/// A copy of `testdata/models/<name>` with `*.gz` files unpacked, in a fresh temp
/// dir (removed on drop), or `None` when the model is not vendored.
pub struct ModelDir(pub PathBuf);

impl ModelDir {
    pub fn new(name: &str) -> Option<Self> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/models")
            .join(name);
        if !src.join("tokenizer.json.gz").exists() {
            return None;
        }
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dst =
            std::env::temp_dir().join(format!("vllm-chat-test-{}-{n}-{name}", std::process::id()));
        std::fs::create_dir_all(&dst).ok()?;
        for entry in std::fs::read_dir(&src).ok()? {
            let path = entry.ok()?.path();
            let file = path.file_name()?.to_str()?.to_owned();
            match file.strip_suffix(".gz") {
                Some(stem) => std::fs::write(dst.join(stem), gunzip(&path)).ok()?,
                None => std::fs::copy(&path, dst.join(&file)).map(|_| ()).ok()?,
            }
        }
        Some(ModelDir(dst))
    }
}

impl Drop for ModelDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
