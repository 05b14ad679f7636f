//! The generation endpoints: `POST /v1/chat/completions`, `/v1/completions` and
//! `/inference/v1/generate`. Each parses the body, hands it to the pipeline
//! (`vllm_chat::pipeline`), and frames the answer: JSON, or server-sent events.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest};
use vllm_chat::pipeline::{Accepted, ApiError, EventStream, TokensRequest};

use super::error::or_error;
use super::state::AppState;
use super::{routing, sse};

/// `POST /v1/chat/completions`.
pub async fn chat(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    or_error(
        async {
            let request: ChatCompletionRequest = parse(&body)?;
            let routing = routing::routing(&headers)?;
            answer(state.pipeline.chat(request, routing).await?).await
        }
        .await,
    )
}

/// `POST /v1/completions`.
pub async fn completions(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    or_error(
        async {
            let request: CompletionRequest = parse(&body)?;
            let routing = routing::routing(&headers)?;
            answer(state.pipeline.completion(request, routing).await?).await
        }
        .await,
    )
}

/// `POST /inference/v1/generate`.
pub async fn generate(State(state): State<AppState>, body: Bytes) -> Response {
    or_error(
        async {
            let request: TokensRequest = parse(&body)?;
            answer(state.pipeline.generate(request).await?).await
        }
        .await,
    )
}

fn parse<'a, T: serde::Deserialize<'a>>(body: &'a Bytes) -> Result<T, ApiError> {
    Ok(serde_json::from_slice(body)?)
}

/// The answer: whole as JSON, or streamed as server-sent events.
async fn answer(accepted: impl Accepted) -> Result<Response, ApiError> {
    Ok(if accepted.is_stream() {
        sse::response(accepted.into_stream().into_sse())
    } else {
        Json(accepted.response().await?).into_response()
    })
}
