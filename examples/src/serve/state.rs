//! What every handler shares.

use vllm_client::EngineCoreClient;

use super::model::Model;
use super::parse::ParserSettings;

/// The server's shared state.
pub struct AppState {
    /// The model: renderer, tokenizer, EOS.
    pub model: Model,
    /// The engine link (one or several data-parallel engines).
    pub client: EngineCoreClient,
    /// `--served-model-name`.
    pub served_model_name: String,
    /// The model directory, as `/v1/models` reports it (`root`).
    pub model_root: String,
    /// Parsers in use.
    pub parsers: ParserSettings,
    /// `--max-logprobs`.
    pub max_logprobs: i64,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("served_model_name", &self.served_model_name)
            .field("parsers", &self.parsers)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// The model's context length.
    pub fn max_model_len(&self) -> u64 {
        self.model.renderer.max_model_len()
    }
}
