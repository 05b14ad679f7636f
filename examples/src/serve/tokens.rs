//! The engine-free endpoints: `/tokenize`, `/detokenize`, `/v1/models`, and the render
//! endpoints `/v1/chat/completions/render` and `/v1/completions/render`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::FromRef;
use axum::extract::State;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest};
use vllm_chat::pipeline::{ApiError, ids};

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
/// let api = ModelApi {
///     model: Arc::new(Model::load(&default_model_dir(), options)?),
///     served_model_name: "qwen3".into(),
///     model_root: default_model_dir().display().to_string(),
///     offload: Default::default(),
/// };
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
        .run(body.len(), move || handle(&state, &body))
        .await?
}

fn tokenize_body(state: &ModelApi, body: &Bytes) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body)?;
    check_model(state, value.get("model"))?;
    let return_token_strs = value
        .get("return_token_strs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let renderer = &state.model.renderer;
    let tokens = if value.get("messages").is_some() {
        let request: ChatCompletionRequest = serde_json::from_value(value)?;
        renderer.render(&request)?.token_ids
    } else {
        let prompt = value.get("prompt").and_then(Value::as_str).ok_or_else(|| {
            ApiError::bad_request(
                "`prompt` (a string) or `messages` is required",
                Some("prompt"),
            )
        })?;
        let add_special_tokens = value
            .get("add_special_tokens")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        renderer.encode(prompt, add_special_tokens)?
    };
    let token_strs = return_token_strs.then(|| {
        tokens
            .iter()
            .map(|&t| state.model.tokenizer.token_piece(t).unwrap_or_default())
            .collect::<Vec<_>>()
    });
    Ok(json!({
        "count": tokens.len(),
        "max_model_len": state.max_model_len(),
        "tokens": tokens,
        "token_strs": token_strs,
    }))
}

/// `POST /detokenize`.
pub async fn detokenize(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    #[derive(Deserialize)]
    struct Request {
        #[serde(default)]
        model: Option<Value>,
        tokens: Vec<u32>,
    }
    let result = (|| {
        let request: Request = serde_json::from_slice(&body)?;
        check_model(&state, request.model.as_ref())?;
        if let Some(bad) = request
            .tokens
            .iter()
            .find(|&&t| t as usize >= state.model.tokenizer.vocab_size())
        {
            return Err(ApiError::bad_request(
                format!("Token id {bad} is out of vocabulary"),
                Some("tokens"),
            ));
        }
        let prompt = state
            .model
            .tokenizer
            .decode(&request.tokens, false)
            .map_err(|e| ApiError::bad_request(e.to_string(), Some("tokens")))?;
        Ok(json!({ "prompt": prompt }))
    })();
    json_or_error(result)
}

/// A request naming another model than the served one is a 404, as in vLLM.
fn check_model(state: &ModelApi, model: Option<&Value>) -> Result<(), ApiError> {
    vllm_chat::pipeline::check_model(&state.served_model_name, model)
}

/// `GET /v1/models`: vLLM's `ModelList` with the one served model.
pub async fn models(State(state): State<Arc<ModelApi>>) -> Json<Value> {
    let created = ids::now_secs();
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.served_model_name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": state.model_root,
            "parent": null,
            "max_model_len": state.max_model_len(),
            "permission": [{
                "id": format!("modelperm-{}", ids::random_hex()),
                "object": "model_permission",
                "created": created,
                "allow_create_engine": false,
                "allow_sampling": true,
                "allow_logprobs": true,
                "allow_search_indices": false,
                "allow_view": true,
                "allow_fine_tuning": false,
                "organization": "*",
                "group": null,
                "is_blocking": false,
            }],
        }]
    }))
}

/// `POST /v1/chat/completions/render`: vLLM's `GenerateRequest` for a chat request.
pub async fn render_chat(State(state): State<Arc<ModelApi>>, body: Bytes) -> Response {
    json_or_error(
        offloaded(state, body, |state, body| {
            let request: ChatCompletionRequest = serde_json::from_slice(body)?;
            Ok(state.model.renderer.render_chat(&request)?)
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
