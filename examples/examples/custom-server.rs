//! The smallest OpenAI-compatible chat server composed from the four crates: vllm-chat's
//! request pipeline (render, engine request, detokenization, reasoning and tool parsing
//! with vLLM's rules) behind one axum route, in front of an embedded mock engine.
//!
//! ```text
//! cargo run --release --example custom-server
//! curl -N localhost:8001/v1/chat/completions -H 'Content-Type: application/json' -d '{
//!   "model": "qwen3", "stream": true,
//!   "messages": [{"role": "user", "content": "Weather in Paris?"}],
//!   "tools": [{"type": "function", "function": {"name": "get_weather",
//!     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]}'
//! ```
//!
//! The mock engine answers every request with a Qwen3-style reasoning block and a
//! hermes tool call, so the stream shows `reasoning` deltas, then a `tool_calls`
//! delta, then `finish_reason: "tool_calls"`. Point `EngineSource` at real engines by
//! replacing [`start_mock_engine`] with a handshake address that `vllm serve --headless`
//! dials (see docs/running-with-vllm.md).

use std::path::Path;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt;
use vllm_chat::RendererOptions;
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::pipeline::{
    Accepted, ApiError, EventStream, Model, Pipeline, PipelineConfig, Routing, check_content_type,
};
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::{ClientConfig, EngineCoreClient};

/// What the mock engine says to every request.
const ANSWER: &str = "<think>\nThe user wants the weather in Paris; I should call the tool.\n</think>\n\n\
<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // 1. The model: tokenizer, chat template and generation defaults (no weights).
    let dir = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/models/qwen3"
    ));
    let options = RendererOptions {
        served_model_name: Some("qwen3".into()),
        ..RendererOptions::default()
    };
    let model = Arc::new(Model::load(dir, options)?);

    // 2. The engines: here one mock engine in this process.
    let (client, _engine) = start_mock_engine(&model).await?;

    // 3. The pipeline, with vLLM's `--reasoning-parser qwen3 --tool-call-parser hermes
    //    --enable-auto-tool-choice`.
    let parsers = model.serving_parsers(Some("qwen3"), Some("hermes"), true)?;
    let config = PipelineConfig::new("qwen3", parsers);
    let pipeline = Pipeline::new(model, client, config);

    // 4. HTTP: one route.
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(pipeline);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:8001").await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// `POST /v1/chat/completions`: body → pipeline → JSON or server-sent events.
async fn chat(State(pipeline): State<Pipeline>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = async {
        // vLLM's `validate_json_request`: no `text/plain` posts from web pages.
        check_content_type(headers.get(header::CONTENT_TYPE).map(|v| v.as_bytes()))?;
        let request: ChatCompletionRequest = serde_json::from_slice(&body)?;
        let routing = Routing {
            data_parallel_rank: headers
                .get("x-data-parallel-rank")
                .and_then(|v| v.to_str().ok()?.parse().ok()),
        };
        let accepted = pipeline.chat(request, routing).await?;
        if accepted.is_stream() {
            // Dropping the body (client gone) drops the stream: the engine request is
            // aborted.
            let frames = accepted.into_stream().into_sse();
            let body = Body::from_stream(frames.map(Ok::<_, std::convert::Infallible>));
            Ok(([(header::CONTENT_TYPE, "text/event-stream")], body).into_response())
        } else {
            Ok(Json(accepted.response().await?).into_response())
        }
    };
    match answer.await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    }
}

/// vLLM's error body with its status.
fn error_response(error: &ApiError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = error.to_json();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// One mock engine in this process, and the client connected to it.
async fn start_mock_engine(model: &Model) -> anyhow::Result<(EngineCoreClient, MockEngineHandle)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let connecting = tokio::spawn(EngineCoreClient::connect(ClientConfig::handshake(
        "127.0.0.1",
        port,
        1,
    )));
    let mock = MockConfig {
        output: OutputMode::FixedText(model.encode(ANSWER)?),
        eos_token_id: model.eos_token_id,
        tokens_per_second: 50.0,
        ..MockConfig::default()
    };
    let engine = MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), 0, mock);
    Ok((connecting.await??, engine))
}
