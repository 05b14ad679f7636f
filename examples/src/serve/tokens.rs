//! The engine-free endpoints: `/tokenize`, `/detokenize`, `/v1/models`, and the render
//! endpoints `/v1/chat/completions/render` and `/v1/completions/render`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::FromRef;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest};
use vllm_chat::pipeline::tokens::{self, TokenizeResponse};
use vllm_chat::pipeline::{ApiError, Offload};

use super::error::json_or_error;
use super::state::ModelApi;

/// The engine-free routes, for any router state that holds an `Arc<ModelApi>`.
pub fn routes<S>() -> Router<S>
where
    Arc<ModelApi>: FromRef<S>,
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route("/v1/chat/completions/render", post(render_chat))
        .route("/v1/completions/render", post(render_completion))
        .route("/tokenize", post(tokenize))
        .route("/detokenize", post(detokenize))
        .route("/v1/models", get(models))
        .layer(axum::middleware::from_fn(super::error::require_json))
}

/// A whole engine-free render server (`vllm-rs render` / `vllm launch render`): the
/// routes of [`routes`] and `GET /health`.
///
/// ```no_run
/// # async fn example() -> anyhow::Result<()> {
/// use std::sync::Arc;
/// use vllm_examples::serve::model::{Model, default_model_dir};
/// use vllm_examples::serve::state::ModelApi;
///
/// let options = vllm_chat::RendererOptions {
///     served_model_name: Some("qwen3".into()),
///     ..Default::default()
/// };
/// let model = Arc::new(Model::load(&default_model_dir(), options)?);
/// let api = ModelApi::new(model, "qwen3", &default_model_dir().display().to_string());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8100").await?;
/// axum::serve(listener, vllm_examples::serve::tokens::render_router(Arc::new(api))).await?;
/// # Ok(())
/// # }
/// ```
pub fn render_router(api: Arc<ModelApi>) -> Router {
    routes()
        .route("/health", get(|| async { axum::http::StatusCode::OK }))
        .with_state(api)
}

/// `POST /tokenize`: a completion-style `{"prompt"}` or chat-style `{"messages"}` body.
pub async fn tokenize(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    json_or_error(offloaded(state, body, tokenize_body).await)
}

/// `handle(state, body)` on the model's [`Offload`](vllm_chat::pipeline::Offload):
/// off the async workers when the body is large.
async fn offloaded<T: Send + 'static>(
    state: Arc<ModelApi>,
    body: Bytes,
    handle: fn(&ModelApi, &Bytes) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let offload = state.offload.clone();
    offload
        .run(Offload::body_size(&body), move || handle(&state, &body))
        .await?
}

fn tokenize_body(state: &ModelApi, body: &Bytes) -> Result<TokenizeResponse, ApiError> {
    tokens::tokenize(&state.model, &state.served_model_name, body)
}

/// `POST /detokenize`.
pub async fn detokenize(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    json_or_error(
        offloaded(state, body, |state, body| {
            tokens::detokenize(&state.model, &state.served_model_name, body)
        })
        .await,
    )
}

/// `GET /v1/models`: vLLM's `ModelList`: the served model, then its LoRA adapters.
pub async fn models(State(state): State<Arc<ModelApi>>) -> Json<Value> {
    Json(tokens::model_list(
        &state.served_model_name,
        &state.model_root,
        state.max_model_len(),
        &state.loras.list(),
    ))
}

/// `POST /v1/chat/completions/render`: vLLM's `GenerateRequest` for a chat request.
pub async fn render_chat(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    json_or_error(
        offloaded(state, body, |state, body| {
            let request: ChatCompletionRequest = serde_json::from_slice(body)?;
            vllm_chat::pipeline::render_chat(&state.model, &state.parsers, request)
        })
        .await,
    )
}

/// `POST /v1/completions/render`: one `GenerateRequest` per prompt.
pub async fn render_completion(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    json_or_error(
        offloaded(state, body, |state, body| {
            let request: CompletionRequest = serde_json::from_slice(body)?;
            Ok(state.model.renderer.render_completion(&request)?)
        })
        .await,
    )
}
