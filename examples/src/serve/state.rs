//! What every handler shares.

use std::sync::Arc;

use axum::extract::FromRef;
use vllm_chat::pipeline::lora::LoraRegistry;
use vllm_chat::pipeline::{Model, Offload, Pipeline, ServingParsers};

/// The model as the API presents it: what the engine-free endpoints need
/// (`/tokenize`, `/detokenize`, `/v1/models`, the render endpoints). A render-only
/// server (no engines) serves [`super::tokens::routes`] with just this.
pub struct ModelApi {
    /// The model: renderer, tokenizer, EOS.
    pub model: Arc<Model>,
    /// `--served-model-name`.
    pub served_model_name: String,
    /// The model directory, as `/v1/models` reports it (`root`).
    pub model_root: String,
    /// Where large renders and tokenizations run (off the async workers).
    pub offload: Offload,
    /// The LoRA adapters served besides the model (`/v1/models` lists them).
    pub loras: Arc<LoraRegistry>,
    /// The server's parsers: the render endpoint applies their `adjust_request`.
    pub parsers: ServingParsers,
}

impl std::fmt::Debug for ModelApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelApi")
            .field("served_model_name", &self.served_model_name)
            .field("model_root", &self.model_root)
            .finish_non_exhaustive()
    }
}

impl ModelApi {
    /// The API of `model` served as `served_model_name` from `model_root`: default
    /// offload pool, no LoRA adapters, no parsers.
    pub fn new(model: Arc<Model>, served_model_name: &str, model_root: &str) -> Self {
        Self {
            model,
            served_model_name: served_model_name.to_owned(),
            model_root: model_root.to_owned(),
            offload: Offload::default(),
            loras: Arc::new(LoraRegistry::new(served_model_name, None)),
            parsers: ServingParsers::none(),
        }
    }

    /// The same API rendering in front of `parsers`.
    pub fn with_parsers(mut self, parsers: ServingParsers) -> Self {
        self.parsers = parsers;
        self
    }

    /// The model's context length.
    pub fn max_model_len(&self) -> u64 {
        self.model.max_model_len()
    }
}

/// The server's shared state (cheap to clone: shared parts are reference-counted).
#[derive(Clone, Debug)]
pub struct AppState {
    /// The model and its names.
    pub api: Arc<ModelApi>,
    /// The request pipeline (model, engines, settings).
    pub pipeline: Pipeline,
    /// Whether the development endpoints are served (`VLLM_SERVER_DEV_MODE=1`).
    pub dev_mode: bool,
    /// Whether LoRA adapters can be loaded at run time
    /// (`VLLM_ALLOW_RUNTIME_LORA_UPDATING`).
    pub runtime_lora: bool,
    /// What `/metrics` exposes.
    pub metrics: Arc<super::metrics::Metrics>,
    /// The settings `/server_info` reports.
    pub server_settings: Arc<serde_json::Map<String, serde_json::Value>>,
}

impl FromRef<AppState> for Arc<ModelApi> {
    fn from_ref(state: &AppState) -> Self {
        state.api.clone()
    }
}
