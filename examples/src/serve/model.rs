//! The model a server serves ([`Model`], from the pipeline) and where the examples
//! find one by default.

use std::path::PathBuf;

pub use vllm_chat::pipeline::Model;

/// The vendored Qwen3 tokenizer directory the examples run on by default.
pub fn default_model_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/models/qwen3"
    ))
}
