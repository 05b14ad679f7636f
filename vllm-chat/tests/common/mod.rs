//! Shared test helpers: vendored model directories.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

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
        let overlay = src.join("tokenizer.overlay.json.gz");
        if !src.join("tokenizer.json.gz").exists() && !overlay.exists() {
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
            if file == "tokenizer.overlay.json.gz" {
                std::fs::write(dst.join("tokenizer.json"), apply_overlay(&path)?).ok()?;
                continue;
            }
            match file.strip_suffix(".gz") {
                Some(stem) => std::fs::write(dst.join(stem), gunzip(&path)).ok()?,
                None => std::fs::copy(&path, dst.join(&file)).map(|_| ()).ok()?,
            }
        }
        Some(ModelDir(dst))
    }
}

/// A `tokenizer.overlay.json.gz` (`{"base": model, "replace": {key: value}}`, written by
/// scripts/gen_native_fixtures.py) applied to the base model's `tokenizer.json`.
fn apply_overlay(path: &Path) -> Option<Vec<u8>> {
    let overlay: serde_json::Value = serde_json::from_slice(&gunzip(path)).ok()?;
    let base = overlay.get("base")?.as_str()?;
    let base_path = path
        .parent()?
        .parent()?
        .join(base)
        .join("tokenizer.json.gz");
    let mut tokenizer: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&gunzip(&base_path)).ok()?;
    for (k, v) in overlay.get("replace")?.as_object()? {
        tokenizer.insert(k.clone(), v.clone());
    }
    serde_json::to_vec(&tokenizer).ok()
}

impl Drop for ModelDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The vendored `tekken_240911.json` (v3).
#[allow(dead_code)] // not every test binary reads Mistral vocabularies
pub fn tekken_v3() -> Vec<u8> {
    gunzip(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/models/mistral_tekken/tekken.json.gz"),
    )
}

/// The generator's `synthetic_tekken`: the same ranks, another `config.version`, and
/// the special-token list written out.
#[allow(dead_code)]
pub fn synthetic_tekken(base: &Value, version: &str) -> Vec<u8> {
    const SPECIALS: [&str; 24] = [
        "<unk>",
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[TOOL_CALLS]",
        "[IMG]",
        "<pad>",
        "[IMG_BREAK]",
        "[IMG_END]",
        "[PREFIX]",
        "[MIDDLE]",
        "[SUFFIX]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
        "[TOOL_CONTENT]",
        "[ARGS]",
        "[CALL_ID]",
        "[THINK]",
        "[/THINK]",
    ];
    let mut data = base.clone();
    data["config"]["version"] = json!(version);
    data["special_tokens"] = SPECIALS
        .iter()
        .enumerate()
        .map(|(rank, token)| json!({"rank": rank, "token_str": token, "is_control": true}))
        .collect();
    if let Some(map) = data.as_object_mut() {
        map.remove("image");
    }
    serde_json::to_vec(&data).unwrap()
}
