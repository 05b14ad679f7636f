//! The model a server serves: its directory's tokenizer, chat templates and generation
//! defaults, loaded once and shared by every request.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde_json::Value;
use vllm_chat::{ChatRenderer, ModelFiles, RendererOptions};
use vllm_detok::{HfTokenizer, Tokenizer};

/// The vendored Qwen3 tokenizer directory the examples run on by default.
pub fn default_model_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/models/qwen3"
    ))
}

/// A loaded model: what the frontend needs, no weights.
pub struct Model {
    /// Renders chat requests and tokenizes prompts.
    pub renderer: ChatRenderer,
    /// The detokenizer's view of the same tokenizer.
    pub tokenizer: Arc<dyn Tokenizer>,
    /// The tokenizer's EOS token (`tokenizer_config.json`'s `eos_token`).
    pub eos_token_id: Option<u32>,
    /// `generation_config.json`'s other EOS ids, which vLLM adds to the stop tokens.
    pub extra_eos_token_ids: Vec<u32>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("eos_token_id", &self.eos_token_id)
            .field("extra_eos_token_ids", &self.extra_eos_token_ids)
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads `dir`. A gzip-compressed `tokenizer.json.gz` (as vendored in `testdata/`)
    /// is read when there is no `tokenizer.json`.
    pub fn load(dir: &Path, options: RendererOptions) -> Result<Self> {
        let mut files = ModelFiles::from_dir(dir)
            .with_context(|| format!("reading model directory {}", dir.display()))?;
        if files.tokenizer_json.is_none() {
            files.tokenizer_json = Some(read_gzip(&dir.join("tokenizer.json.gz"))?);
        }
        let tokenizer_json = files.tokenizer_json.clone().unwrap_or_default();
        let renderer = ChatRenderer::new(files, options)?;
        let hf = renderer
            .tokenizer()
            .context("the model directory has no tokenizer")?;
        let eos_token_id = renderer
            .model_files()
            .special_tokens
            .iter()
            .find(|(key, _)| key == "eos_token")
            .and_then(|(_, token)| hf.token_to_id(token));
        let extra_eos_token_ids = renderer
            .model_files()
            .generation_config
            .as_ref()
            .and_then(|config| config.get("eos_token_id"))
            .map(token_ids)
            .unwrap_or_default()
            .into_iter()
            .filter(|id| Some(*id) != eos_token_id)
            .collect();
        Ok(Self {
            renderer,
            tokenizer: Arc::new(HfTokenizer::from_bytes(&tokenizer_json)?),
            eos_token_id,
            extra_eos_token_ids,
        })
    }

    /// Tokenizes `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.renderer.encode(text, false)?)
    }
}

/// An int or a list of ints.
fn token_ids(value: &Value) -> Vec<u32> {
    match value {
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_u64().and_then(|id| u32::try_from(id).ok()))
            .collect(),
        v => v
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .into_iter()
            .collect(),
    }
}

fn read_gzip(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("no tokenizer.json or {}", path.display()))?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .with_context(|| format!("decompressing {}", path.display()))?;
    Ok(bytes)
}
