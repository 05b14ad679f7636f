//! The request pipeline (feature `pipeline`): what a vLLM-compatible server does
//! between the HTTP body and the SSE frame, independent of any HTTP framework.
//!
//! ```text
//! ChatCompletionRequest ─► Pipeline::chat ─► AcceptedChat ─┬─► response() ─► ChatCompletionResponse
//!   (render, checks, sampling params,       (engine request  └─► into_stream() ─► ChatStream ─► ChatEvent…
//!    parser rules, engine request)           in flight)                           (sse_frame / into_sse)
//! ```
//!
//! A [`Pipeline`] holds what every request shares: the [`Model`] (renderer, tokenizer,
//! EOS ids), the [`EngineCoreClient`] and the server's settings ([`PipelineConfig`]).
//! Each request is request-scoped objects only: [`Pipeline::chat`],
//! [`Pipeline::completion`] and [`Pipeline::generate`] check the request as vLLM does,
//! render it, build the engine's sampling parameters and send it; the accepted request
//! then gives the whole typed response or a stream of typed events. Inside, a
//! [`Generation`](generation::Generation) turns the engine's outputs into text steps
//! (incremental detokenization, stop strings, finish reasons, logprob texts) and a
//! [`ChoiceParser`] applies the reasoning and tool parsers with vLLM's serving rules.
//! Errors are [`ApiError`]s carrying vLLM's HTTP status and body.
//!
//! `n > 1` and batched completion prompts run as vLLM runs them: every sample of every
//! prompt is its own engine request (vLLM's child requests, with their ids and seeds),
//! each with its own [`Generation`](generation::Generation) and parser, joined by
//! [`Samples`](generation::Samples); choice `p × n + j` is sample `j` of prompt `p`.
//!
//! Cancellation is by drop: dropping an accepted request or its stream drops the engine
//! stream, which aborts the engine request. There is no global state.
//!
//! A server adapts HTTP only: parse the body, call the pipeline, frame the answer
//! (`examples/src/serve` is such an adapter over axum; `examples/custom-server` is a
//! small one).

mod chat;
mod completion;
pub mod control;
mod error;
mod frames;
mod generate;
pub mod generation;
pub mod ids;
mod kv_transfer;
pub mod logprobs;
pub mod lora;
mod model;
mod offload;
mod parse;
mod render;
pub mod sampling;
pub mod sse;
pub mod tokens;

use std::sync::Arc;

use serde_json::Value;
use vllm_client::EngineCoreClient;

pub use chat::{AcceptedChat, ChatEvent, ChatStream};
pub use completion::{AcceptedCompletion, CompletionEvent, CompletionStream};
pub use error::{ApiError, ENGINE_DEAD_CLIENT_MESSAGE};
pub use frames::ChatDeltaFrames;
pub use generate::{
    AcceptedGenerate, EngineExtras, GenerateChoice, GenerateChunk, GenerateEvent, GenerateLogprobs,
    GenerateResponse, GenerateStream, TokenLogprob, TokenLogprobEntry, TokensPrompt, TokensRequest,
    WireSamplingParams,
};
pub use model::{Model, ModelError, mistral_tokenizer_info};
pub use offload::{Offload, defaults as offload_defaults};
pub use render::render_chat;
pub use sse::EventStream;
pub use vllm_parser::serving::{ChoiceParser, ServingParsers};

/// A request accepted and sent to the engine ([`AcceptedChat`], [`AcceptedCompletion`],
/// [`AcceptedGenerate`]): answer it whole or as a stream. Dropping it aborts the engine
/// request.
pub trait Accepted: Send + Sized + 'static {
    /// The whole answer's type.
    type Response: serde::Serialize + Send;
    /// The stream's type.
    type Stream: EventStream;

    /// Whether the request asked for a stream (`"stream": true`).
    fn is_stream(&self) -> bool;

    /// The whole answer, once the engine finished.
    fn response(self) -> impl Future<Output = Result<Self::Response, ApiError>> + Send;

    /// The answer as a stream of events.
    fn into_stream(self) -> Self::Stream;
}

/// The server-wide settings of a pipeline.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// The model name of the API (`--served-model-name`).
    pub served_model_name: String,
    /// Parsers in use (`--reasoning-parser`, `--tool-call-parser`,
    /// `--enable-auto-tool-choice`), with vLLM's serving rules around them.
    pub parsers: ServingParsers,
    /// `--max-logprobs`: the largest `logprobs` / `top_logprobs` a request may ask for.
    pub max_logprobs: i64,
    /// Where rendering and tokenization of large requests run.
    pub offload: Offload,
    /// LoRA adapters requests may name as their `model` (`None`: only the served
    /// model).
    pub loras: Option<Arc<lora::LoraRegistry>>,
    /// `--enable-prompt-tokens-details`: usage reports the prompt tokens the engine
    /// served from its prefix cache (`prompt_tokens_details.cached_tokens`).
    pub enable_prompt_tokens_details: bool,
    /// `--stream-interval`: output tokens batched into each streamed chunk (1: every
    /// engine output; a request's `stream_interval` may raise it). The first and last
    /// chunks go out at once.
    pub stream_interval: u32,
    /// `--enable-log-requests`: a `tracing` INFO line per finished request (its id,
    /// prompt and output token counts, finish reasons), as vllm-rs logs them.
    pub log_requests: bool,
    /// The engines run a KV connector (vLLM's `--kv-transfer-config`, its serving
    /// layer's `has_kv_connector`): a chat or completion request with
    /// `kv_transfer_params.do_remote_prefill` that fails before reaching the engines
    /// sends them vLLM's rejection notice, so the connector frees the prefill blocks
    /// held for it (see [`EngineCoreClient::notify_kv_transfer_request_rejected`]).
    pub kv_connector: bool,
}

impl PipelineConfig {
    /// vLLM's defaults for `served_model_name` with `parsers`: `--max-logprobs 20`;
    /// large renders on the blocking pool ([`Offload::default`]).
    pub fn new(served_model_name: impl Into<String>, parsers: ServingParsers) -> Self {
        Self {
            served_model_name: served_model_name.into(),
            parsers,
            max_logprobs: 20,
            offload: Offload::default(),
            loras: None,
            enable_prompt_tokens_details: false,
            stream_interval: 1,
            log_requests: false,
            kv_connector: false,
        }
    }
}

/// Where a request should run, as a router asks for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Routing {
    /// Pin the request to this data-parallel engine (vLLM's `X-data-parallel-rank`
    /// header).
    pub data_parallel_rank: Option<i64>,
}

/// What every request of a server shares: the model, the engines and the settings.
/// Cheap to clone (the parts are reference-counted).
#[derive(Clone)]
pub struct Pipeline {
    model: Arc<Model>,
    client: EngineCoreClient,
    config: Arc<PipelineConfig>,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("model", &self.model)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// A pipeline serving `model` on the engines behind `client`.
    pub fn new(model: Arc<Model>, client: EngineCoreClient, config: PipelineConfig) -> Self {
        Self {
            model,
            client,
            config: Arc::new(config),
        }
    }

    /// The model.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// The engine link.
    pub fn client(&self) -> &EngineCoreClient {
        &self.client
    }

    /// The settings.
    pub fn config(&self) -> &PipelineConfig {
        &self.config
    }

    /// A request naming another model than the served one is a 404, as in vLLM.
    pub fn check_model(&self, model: Option<&Value>) -> Result<(), ApiError> {
        check_model(&self.config.served_model_name, model)
    }

    /// The LoRA adapter a request's `model` names (`None` for the served model or no
    /// model); another name is vLLM's 404.
    pub fn resolve_adapter(
        &self,
        model: Option<&str>,
    ) -> Result<Option<vllm_client::protocol::LoRARequest>, ApiError> {
        let Some(name) = model.filter(|m| *m != self.config.served_model_name) else {
            return Ok(None);
        };
        match self.config.loras.as_ref().and_then(|loras| loras.get(name)) {
            Some(adapter) => Ok(Some(adapter)),
            None => Err(ApiError::not_found(
                format!("The model `{name}` does not exist."),
                Some("model"),
            )),
        }
    }

    /// The model name an answer reports: the adapter's, or the served model's.
    fn answer_model(&self, adapter: Option<&vllm_client::protocol::LoRARequest>) -> String {
        adapter.map_or_else(
            || self.config.served_model_name.clone(),
            |a| a.lora_name.clone(),
        )
    }
}

/// vLLM's `validate_json_request`, which guards every JSON endpoint: the body must be
/// declared `application/json` (parameters allowed). Without the check a web page could
/// make a browser post a generation request as `text/plain`, which needs no CORS
/// preflight.
pub fn check_content_type(content_type: Option<&[u8]>) -> Result<(), ApiError> {
    let value = content_type.unwrap_or_default();
    let media_type = value.split(|&b| b == b';').next().unwrap_or_default();
    if media_type.eq_ignore_ascii_case(b"application/json") {
        Ok(())
    } else {
        Err(ApiError::validation(&[
            "Unsupported Media Type: Only 'application/json' is allowed",
        ]))
    }
}

/// A request naming a model other than `served` is a 404, as in vLLM.
pub fn check_model(served: &str, model: Option<&Value>) -> Result<(), ApiError> {
    match model.and_then(Value::as_str) {
        Some(name) if name != served => Err(ApiError::not_found(
            format!("The model `{name}` does not exist."),
            Some("model"),
        )),
        _ => Ok(()),
    }
}
