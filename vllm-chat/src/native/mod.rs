//! vLLM's tokenizer modes and the renderers they select.
//!
//! vLLM 0.33.0 does not render every model through its Hugging Face chat template:
//! `--tokenizer-mode` (`vllm/config/model.py`, `vllm/tokenizers/registry.py`) picks a
//! tokenizer class and, through `vllm/renderers/registry.py`, a renderer class. Some
//! of those renderers build the prompt in Python code instead of a template
//! (DeepSeek-V3.2 and V4 encoders, Kimi-K3's conversation normalisation, …), and a
//! model whose `config.json` says `"model_type": "gpt_oss"` is rendered with Harmony
//! whatever the mode (`OnlineRenderer.use_harmony`). A router that needs vLLM's token
//! ids must take the same branch, so the choice is made here, once, when the
//! [`ChatRenderer`](crate::ChatRenderer) is built.
//!
//! How `auto` resolves, in vLLM's order:
//! 1. `ModelConfig.__post_init__`: the model's architecture (`config.json`'s first
//!    `architectures` entry) selects `kimi_k3`, `deepseek_v32`, `deepseek_v4`,
//!    `deepseek_v41` or `inkling`.
//! 2. `resolve_tokenizer_args`: a Mistral repository (`consolidated*.safetensors`)
//!    with a `tekken.json` or `tokenizer.model.v*` file selects `mistral`. This crate
//!    also selects `mistral` for a directory with one of those vocabularies and no
//!    `tokenizer.json` (where vLLM's `hf` path has nothing to load).
//! 3. Otherwise `hf`: the chat template.
//!
//! Then, for any mode, `model_type: gpt_oss` renders chats with Harmony.
//!
//! `cohere` is never detected: it is chosen with `--tokenizer-mode cohere`.
//!
//! Each encoder lives in its own file (`deepseek_v32.rs`, `deepseek_v4.rs`,
//! `deepseek_v41.rs`, `kimi_k3.rs`, `inkling.rs`, `cohere/`); `py.rs` holds the Python
//! semantics they share.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::RenderError;

mod encode_cache;
pub mod harmony;
mod harmony_schema;
pub mod mistral;
mod ranked_bpe;

pub mod cohere;
pub(crate) mod deepseek_v32;
pub(crate) mod deepseek_v4;
pub(crate) mod deepseek_v41;
pub(crate) mod inkling;
pub(crate) mod kimi_k3;
pub(crate) mod py;

/// A `--tokenizer-mode` value (vLLM 0.33.0's `TokenizerMode` plus the renderer-only
/// modes its registries accept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TokenizerMode {
    /// Detect from the model directory (the default).
    #[default]
    Auto,
    /// The Hugging Face tokenizer and chat template.
    Hf,
    /// mistral-common's tokenizer and request encoding.
    Mistral,
    /// DeepSeek-V3.2's Python prompt encoder (`deepseek_v32_encoding.py`).
    DeepseekV32,
    /// DeepSeek-V4's Python prompt encoder (`deepseek_v4_encoding.py`).
    DeepseekV4,
    /// DeepSeek-V4.1's Python prompt encoder (`deepseek_v41_encoding.py`).
    DeepseekV41,
    /// Kimi-K3: the tokenizer's template over K3's normalised conversation.
    KimiK3,
    /// Inkling's native token encoder (`inkling_encoding.py`).
    Inkling,
    /// Cohere Command (melody's cmd3/cmd4 templates).
    Cohere,
}

impl TokenizerMode {
    /// Every mode, in the order `--help` lists them.
    pub const ALL: [TokenizerMode; 9] = [
        TokenizerMode::Auto,
        TokenizerMode::Hf,
        TokenizerMode::Mistral,
        TokenizerMode::DeepseekV32,
        TokenizerMode::DeepseekV4,
        TokenizerMode::DeepseekV41,
        TokenizerMode::KimiK3,
        TokenizerMode::Inkling,
        TokenizerMode::Cohere,
    ];

    /// The name vLLM's flag takes (`deepseek_v32`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerMode::Auto => "auto",
            TokenizerMode::Hf => "hf",
            TokenizerMode::Mistral => "mistral",
            TokenizerMode::DeepseekV32 => "deepseek_v32",
            TokenizerMode::DeepseekV4 => "deepseek_v4",
            TokenizerMode::DeepseekV41 => "deepseek_v41",
            TokenizerMode::KimiK3 => "kimi_k3",
            TokenizerMode::Inkling => "inkling",
            TokenizerMode::Cohere => "cohere",
        }
    }

    /// Resolves the mode for a model directory: reads `config.json` and lists the
    /// directory's files (see the module docs for the rules).
    pub fn resolve(self, dir: impl AsRef<Path>) -> Result<ResolvedMode, RenderError> {
        let dir = dir.as_ref();
        let config_path = dir.join("config.json");
        let config = match std::fs::read(&config_path) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => Some(map),
                _ => {
                    return Err(RenderError::ModelFile {
                        path: config_path.display().to_string(),
                        message: "not a JSON object".into(),
                    });
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(RenderError::Io {
                    path: config_path.display().to_string(),
                    source,
                });
            }
        };
        let names: Vec<String> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect(),
            Err(source) => {
                return Err(RenderError::Io {
                    path: dir.display().to_string(),
                    source,
                });
            }
        };
        Ok(self.resolve_with(config.as_ref(), names.iter().map(String::as_str)))
    }

    /// Resolves the mode from `config.json` and the names of the model directory's
    /// files, without touching the file system. A name ending in `.gz` counts as the
    /// file it compresses.
    pub fn resolve_with<'a>(
        self,
        config: Option<&Map<String, Value>>,
        file_names: impl IntoIterator<Item = &'a str>,
    ) -> ResolvedMode {
        // A gzip-compressed copy counts (this repository vendors its tokenizers so).
        let names: Vec<&str> = file_names
            .into_iter()
            .map(|n| n.strip_suffix(".gz").unwrap_or(n))
            .collect();
        let mut mode = self;
        if mode == TokenizerMode::Auto {
            let arch = config
                .and_then(|c| c.get("architectures"))
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str);
            mode = match arch {
                Some("KimiK3ForConditionalGeneration") => TokenizerMode::KimiK3,
                Some("DeepseekV32ForCausalLM") => TokenizerMode::DeepseekV32,
                Some("DeepseekV4ForCausalLM" | "DeepseekV4ForConditionalGeneration") => {
                    TokenizerMode::DeepseekV4
                }
                Some("DeepseekV41ForCausalLM") => TokenizerMode::DeepseekV41,
                Some("InklingForCausalLM" | "InklingForConditionalGeneration") => {
                    TokenizerMode::Inkling
                }
                _ => TokenizerMode::Auto,
            };
        }
        if mode == TokenizerMode::Auto {
            let mistral_vocab = names
                .iter()
                .any(|n| *n == "tekken.json" || n.starts_with("tokenizer.model.v"));
            let consolidated = names
                .iter()
                .any(|n| n.starts_with("consolidated") && n.ends_with(".safetensors"));
            let hf_tokenizer = names.contains(&"tokenizer.json");
            mode = if mistral_vocab && (consolidated || !hf_tokenizer) {
                TokenizerMode::Mistral
            } else {
                TokenizerMode::Hf
            };
        }
        let gpt_oss = config
            .and_then(|c| c.get("model_type"))
            .and_then(Value::as_str)
            == Some("gpt_oss");
        let renderer = if gpt_oss {
            RendererKind::Harmony
        } else {
            match mode {
                TokenizerMode::Auto | TokenizerMode::Hf => RendererKind::Template,
                TokenizerMode::Mistral => RendererKind::Mistral,
                TokenizerMode::DeepseekV32 => RendererKind::DeepseekV32,
                TokenizerMode::DeepseekV4 => RendererKind::DeepseekV4,
                TokenizerMode::DeepseekV41 => RendererKind::DeepseekV41,
                TokenizerMode::KimiK3 => RendererKind::KimiK3,
                TokenizerMode::Inkling => RendererKind::Inkling,
                TokenizerMode::Cohere => RendererKind::Cohere,
            }
        };
        ResolvedMode { mode, renderer }
    }
}

impl fmt::Display for TokenizerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--tokenizer-mode` value that is not one of vLLM's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "unknown tokenizer mode {given:?}: use one of auto, hf, mistral, deepseek_v32, deepseek_v4, deepseek_v41, kimi_k3, inkling, cohere"
)]
pub struct ParseTokenizerModeError {
    /// What was given.
    pub given: String,
}

impl FromStr for TokenizerMode {
    type Err = ParseTokenizerModeError;

    /// Parses a mode name; like vLLM, case does not matter.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        TokenizerMode::ALL
            .into_iter()
            .find(|m| m.as_str() == lower)
            .ok_or_else(|| ParseTokenizerModeError { given: s.into() })
    }
}

/// Which renderer builds a chat prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RendererKind {
    /// The model's Jinja chat template (vLLM's `HfRenderer`).
    Template,
    /// `DeepseekV32Renderer`.
    DeepseekV32,
    /// `DeepseekV4Renderer`.
    DeepseekV4,
    /// `DeepseekV41Renderer`.
    DeepseekV41,
    /// `KimiK3Renderer`.
    KimiK3,
    /// `InklingRenderer`.
    Inkling,
    /// `CohereRenderer`.
    Cohere,
    /// `MistralRenderer` (mistral-common).
    Mistral,
    /// gpt-oss Harmony (`OnlineRenderer._make_request_with_harmony`).
    Harmony,
}

impl RendererKind {
    /// A short name (`template`, `deepseek_v32`, `harmony`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RendererKind::Template => "template",
            RendererKind::DeepseekV32 => "deepseek_v32",
            RendererKind::DeepseekV4 => "deepseek_v4",
            RendererKind::DeepseekV41 => "deepseek_v41",
            RendererKind::KimiK3 => "kimi_k3",
            RendererKind::Inkling => "inkling",
            RendererKind::Cohere => "cohere",
            RendererKind::Mistral => "mistral",
            RendererKind::Harmony => "harmony",
        }
    }
}

impl fmt::Display for RendererKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of resolving a [`TokenizerMode`] for a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedMode {
    /// The mode after `auto` detection (never [`TokenizerMode::Auto`]).
    pub mode: TokenizerMode,
    /// The renderer chat requests go through.
    pub renderer: RendererKind,
}
