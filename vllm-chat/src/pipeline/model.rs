//! The model a pipeline serves: its directory's tokenizer, chat templates and
//! generation defaults, loaded once and shared by every request.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use vllm_detok::{HfTokenizer, Tokenizer};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::serving::ServingParsers;

use crate::{ChatRenderer, ModelFiles, RenderError, RendererKind, RendererOptions, TokenizerMode};

/// Why a model directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file of the directory is unreadable or malformed.
    #[error("reading model directory {dir}: {source}")]
    Files {
        /// The directory.
        dir: PathBuf,
        /// What failed.
        source: RenderError,
    },
    /// No HF tokenizer in the directory.
    #[error(
        "no tokenizer in {dir}: looked for tokenizer.json and tokenizer.json.gz \
         (HF `tokenizers` format; Mistral tekken/SentencePiece directories load with \
         `--tokenizer-mode mistral` or `auto`)"
    )]
    NoTokenizer {
        /// The directory.
        dir: PathBuf,
    },
    /// `tokenizer.json.gz` could not be read or decompressed.
    #[error("reading {path}: {source}")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The tokenizer or templates could not be built.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// The detokenizer could not read the tokenizer.
    #[error(transparent)]
    Detok(#[from] vllm_detok::Error),
    /// `tokenizer_config.json` has a `response_template` that does not compile.
    #[error("the response_template of {path}: {message}")]
    ResponseTemplate {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
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
    /// The model's vocabulary size (`config.json`'s `vocab_size`, else the
    /// tokenizer's): the width of the logits, which `logit_bias`, `stop_token_ids` and
    /// `allowed_token_ids` index (vLLM's `get_vocab_size`).
    pub vocab_size: u64,
    /// The largest token id a prompt may hold: the larger of the model's and the
    /// tokenizer's last id (vLLM's `validate_token_ids`).
    pub max_token_id: u64,
    /// The checkpoint's `response_template` (`tokenizer_config.json`), compiled: what the
    /// `hf` and `beam` parsers parse by. Set by [`Model::load`].
    pub response_template: Option<Arc<ResponseTemplate>>,
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
    /// Loads `dir`. A gzip-compressed `tokenizer.json.gz` (as this repository vendors
    /// its tokenizers) is read when there is no `tokenizer.json`.
    pub fn load(dir: &Path, options: RendererOptions) -> Result<Self, ModelError> {
        Self::load_as(dir, options, RendererKind::Template)
    }

    /// Loads `dir` with a `--tokenizer-mode`, resolved as vLLM resolves it
    /// ([`TokenizerMode::resolve`]): chat requests, render mode and `/tokenize` go
    /// through the renderer it selects.
    pub fn load_with_mode(
        dir: &Path,
        mode: TokenizerMode,
        options: RendererOptions,
    ) -> Result<Self, ModelError> {
        let resolved = mode.resolve(dir).map_err(|source| ModelError::Files {
            dir: dir.to_owned(),
            source,
        })?;
        Self::load_as(dir, options, resolved.renderer)
    }

    fn load_as(
        dir: &Path,
        options: RendererOptions,
        kind: RendererKind,
    ) -> Result<Self, ModelError> {
        if kind == RendererKind::Mistral {
            return Self::load_mistral(dir, options);
        }
        let mut files = ModelFiles::from_dir(dir).map_err(|source| ModelError::Files {
            dir: dir.to_owned(),
            source,
        })?;
        if files.tokenizer_json.is_none() {
            let path = dir.join("tokenizer.json.gz");
            if !path.exists() {
                return Err(ModelError::NoTokenizer {
                    dir: dir.to_owned(),
                });
            }
            files.tokenizer_json = Some(read_gzip(&path)?);
        }
        let mut model = Self::from_files_with_renderer(files, options, kind)?;
        model.response_template = read_response_template(&dir.join("tokenizer_config.json"))?;
        Ok(model)
    }

    /// A Mistral directory (`tekken.json` or `tokenizer.model.v*`): the Mistral
    /// renderer, vllm-detok's decoder of the same vocabulary, `</s>` as EOS.
    fn load_mistral(dir: &Path, options: RendererOptions) -> Result<Self, ModelError> {
        let renderer = ChatRenderer::from_dir_with_mode(dir, TokenizerMode::Mistral, options)?;
        let mistral = renderer.mistral().ok_or_else(|| ModelError::NoTokenizer {
            dir: dir.to_owned(),
        })?;
        let tokenizer = mistral.tokenizer();
        let eos_token_id = Some(mistral.eos_token_id());
        let tokenizer_size = tokenizer.vocab_size() as u64;
        let config = renderer.model_files().config.as_ref();
        let vocab_size = config
            .and_then(|c| {
                c.get("vocab_size")
                    .or_else(|| c.get("text_config")?.get("vocab_size"))
            })
            .and_then(Value::as_u64)
            .unwrap_or(tokenizer_size);
        let extra_eos_token_ids = extra_eos_token_ids(&renderer, eos_token_id);
        Ok(Self {
            max_token_id: vocab_size.max(tokenizer_size).saturating_sub(1),
            renderer,
            tokenizer,
            eos_token_id,
            extra_eos_token_ids,
            vocab_size,
            response_template: None,
        })
    }

    /// The parsers named by `--reasoning-parser` / `--tool-call-parser`
    /// (`--enable-auto-tool-choice`) for this model, with vLLM's start-up checks
    /// (registered names, the tokens each parser needs, a response template for `hf`
    /// and `beam`), told the model's architecture (`config.json`) and, for a
    /// mistral-common vocabulary, its version and grammar support (which Mistral
    /// format the `mistral` parsers read) as vLLM tells them.
    pub fn serving_parsers(
        &self,
        reasoning: Option<&str>,
        tool: Option<&str>,
        enable_auto_tool_choice: bool,
    ) -> Result<ServingParsers, vllm_parser::ParserError> {
        let tokenizer = self.renderer.tokenizer();
        let mistral = self.renderer.mistral();
        let parsers = ServingParsers::new(
            reasoning,
            tool,
            enable_auto_tool_choice,
            self.response_template.clone(),
            |token| match mistral {
                Some(mistral) => mistral.token_to_id(token),
                None => tokenizer.and_then(|t| t.token_to_id(token)),
            },
        )?;
        // A mistral-common vocabulary: vLLM's `MistralParser` reads its version and
        // grammar support (pre-v11 JSON-array calls, `<think>` text reasoning).
        let parsers = match mistral {
            Some(mistral) => parsers.with_mistral_tokenizer(mistral_tokenizer_info(mistral)),
            None => parsers,
        };
        // vLLM's `model_config.architecture` (`config.json`'s first architecture):
        // Cohere's parsers build their structural tags by it.
        let architecture = self
            .renderer
            .model_files()
            .config
            .as_ref()
            .and_then(|c| c.get("architectures")?.get(0)?.as_str().map(str::to_owned));
        let parsers = match architecture {
            Some(architecture) => parsers.with_model_architecture(&architecture),
            None => parsers,
        };
        Ok(parsers)
    }

    /// Builds the model from files already read (`files.tokenizer_json` must be set).
    pub fn from_files(files: ModelFiles, options: RendererOptions) -> Result<Self, ModelError> {
        Self::from_files_with_renderer(files, options, RendererKind::Template)
    }

    /// Builds the model from files already read, rendering chats with `kind`.
    pub fn from_files_with_renderer(
        files: ModelFiles,
        options: RendererOptions,
        kind: RendererKind,
    ) -> Result<Self, ModelError> {
        let tokenizer_json = files.tokenizer_json.clone().unwrap_or_default();
        let renderer = ChatRenderer::with_renderer(files, options, kind)?;
        let hf = renderer
            .tokenizer()
            .ok_or_else(|| ModelError::NoTokenizer {
                dir: PathBuf::new(),
            })?;
        let eos_token_id = renderer
            .model_files()
            .special_tokens
            .iter()
            .find(|(key, _)| key == "eos_token")
            .and_then(|(_, token)| hf.token_to_id(token));
        let extra_eos_token_ids = extra_eos_token_ids(&renderer, eos_token_id);
        let tokenizer_size = hf.get_vocab_size(true) as u64;
        // The tokenizer's `max_token_id`: its largest id, or its base vocabulary size - 1.
        let tokenizer_max = hf
            .get_vocab(true)
            .values()
            .copied()
            .max()
            .map_or(0, u64::from)
            .max((hf.get_vocab_size(false) as u64).saturating_sub(1));
        let config = renderer.model_files().config.as_ref();
        let vocab_size = config
            .and_then(|c| {
                c.get("vocab_size")
                    .or_else(|| c.get("text_config")?.get("vocab_size"))
            })
            .and_then(Value::as_u64)
            .unwrap_or(tokenizer_size);
        let max_token_id = vocab_size.saturating_sub(1).max(tokenizer_max);
        Ok(Self {
            renderer,
            tokenizer: Arc::new(HfTokenizer::from_bytes(&tokenizer_json)?),
            eos_token_id,
            extra_eos_token_ids,
            vocab_size,
            max_token_id,
            response_template: None,
        })
    }

    /// Tokenizes `text` without special tokens.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, RenderError> {
        self.renderer.encode(text, false)
    }

    /// vLLM's `validate_token_ids`: every id of a prompt within the vocabulary.
    pub fn check_prompt_token_ids(&self, token_ids: &[u32]) -> Result<(), super::ApiError> {
        match token_ids
            .iter()
            .find(|&&id| u64::from(id) > self.max_token_id)
        {
            Some(id) => Err(super::ApiError::bad_request(
                format!("Token id {id} is out of vocabulary"),
                None,
            )),
            None => Ok(()),
        }
    }

    /// The model's context length.
    pub fn max_model_len(&self) -> u64 {
        self.renderer.max_model_len()
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

/// The compiled `response_template` of a `tokenizer_config.json`; `None` without the
/// file or the key.
fn read_response_template(path: &Path) -> Result<Option<Arc<ResponseTemplate>>, ModelError> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(None);
    };
    let error = |message: String| ModelError::ResponseTemplate {
        path: path.to_owned(),
        message,
    };
    let config: Value = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
    ResponseTemplate::from_tokenizer_config(&config).map_err(|e| error(e.to_string()))
}

fn read_gzip(path: &Path) -> Result<Vec<u8>, ModelError> {
    let gzip = |source| ModelError::Gzip {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(gzip)?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .map_err(gzip)?;
    Ok(bytes)
}

/// `generation_config.json`'s EOS ids other than the tokenizer's own, which vLLM adds to
/// the stop tokens (`update_from_generation_config`).
fn extra_eos_token_ids(renderer: &ChatRenderer, eos_token_id: Option<u32>) -> Vec<u32> {
    renderer
        .model_files()
        .generation_config
        .as_ref()
        .and_then(|config| config.get("eos_token_id"))
        .map(token_ids)
        .unwrap_or_default()
        .into_iter()
        .filter(|id| Some(*id) != eos_token_id)
        .collect()
}

/// What vLLM's `mistral` parsers read from a mistral-common tokenizer besides its
/// vocabulary (its version, and whether mistral-common's guidance supports it).
pub fn mistral_tokenizer_info(
    vocabulary: &crate::mistral::MistralRenderer,
) -> vllm_parser::MistralTokenizerInfo {
    vllm_parser::MistralTokenizerInfo {
        version: vocabulary.version().number(),
        supports_grammar: vocabulary.supports_grammar(),
    }
}
