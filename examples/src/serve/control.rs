//! The control plane over HTTP, as `vllm-rs serve` 0.33.0 exposes it: the engine-free
//! information endpoints always (`/version`, `/load`, `/kv_event_sources`), and with
//! `VLLM_SERVER_DEV_MODE=1` the RL, sleep, cache, RPC and abort endpoints. The answers
//! come from `vllm_chat::pipeline::control`; this module parses queries and bodies with
//! axum's extractors and turns their rejections into vllm-rs's error bodies.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::json;
use vllm_chat::pipeline::ApiError;
use vllm_chat::pipeline::control::{ControlAnswer, engine, lifecycle, weights};
use vllm_chat::pipeline::lora::{LoadLoraBody, UnloadLoraBody};
use vllm_client::EngineCoreClient;

use super::error::error_response;
use super::state::AppState;

/// Whether `VLLM_SERVER_DEV_MODE` asks for the development endpoints (vLLM reads it as
/// an integer: `1` on, `0` or unset off).
pub fn dev_mode_from_env() -> bool {
    std::env::var("VLLM_SERVER_DEV_MODE")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .is_some_and(|v| v != 0)
}

/// The always-on endpoints.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/version", get(version))
        .route("/load", get(load))
        .route("/kv_event_sources", get(kv_event_sources))
}

/// The development endpoints (`VLLM_SERVER_DEV_MODE=1`).
pub fn dev_routes() -> Router<AppState> {
    Router::new()
        .route("/pause", post(pause))
        .route("/resume", post(resume))
        .route("/is_paused", get(is_paused))
        .route("/sleep", post(sleep))
        .route("/wake_up", post(wake_up))
        .route("/is_sleeping", get(is_sleeping))
        .route("/release_kv_cache_memory", post(release_kv_cache_memory))
        .route("/reset_prefix_cache", post(reset_prefix_cache))
        .route("/reset_mm_cache", post(reset_mm_cache))
        .route("/reset_encoder_cache", post(reset_encoder_cache))
        .route("/collective_rpc", post(collective_rpc))
        .route("/abort_requests", post(abort_requests))
        .route("/get_world_size", get(world_size))
        .route(
            "/init_weight_transfer_engine",
            post(init_weight_transfer_engine),
        )
        .route(
            "/shutdown_weight_transfer_engine",
            post(shutdown_weight_transfer_engine),
        )
        .route("/start_weight_update", post(start_weight_update))
        .route(
            "/start_draft_weight_update",
            post(start_draft_weight_update),
        )
        .route("/update_weights", post(update_weights))
        .route("/finish_weight_update", post(finish_weight_update))
        .route("/update_weight_version", post(update_weight_version))
        .route("/weight_info", get(weight_info))
        .route("/weight_checker", post(weight_checker))
}

/// `/v1/load_lora_adapter` and `/v1/unload_lora_adapter`
/// (`VLLM_ALLOW_RUNTIME_LORA_UPDATING`).
pub fn lora_routes() -> Router<AppState> {
    Router::new()
        .route("/v1/load_lora_adapter", post(load_lora_adapter))
        .route("/v1/unload_lora_adapter", post(unload_lora_adapter))
}

/// Whether an environment flag is on, as vLLM reads its boolean variables (`1`,
/// `true`, any case).
pub fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true"))
        .unwrap_or(false)
}

async fn load_lora_adapter(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let result = match body::<LoadLoraBody>(&headers, &bytes) {
        Ok(body) => state
            .api
            .loras
            .load(client(&state), &body)
            .await
            .map(ControlAnswer::Text),
        Err(error) => Err(error),
    };
    respond(result)
}

async fn unload_lora_adapter(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let result = match body::<UnloadLoraBody>(&headers, &bytes) {
        Ok(body) => state
            .api
            .loras
            .unload(client(&state), &body)
            .await
            .map(ControlAnswer::Text),
        Err(error) => Err(error),
    };
    respond(result)
}

/// The answer as a response: JSON, plain text, or an empty 200.
fn respond(result: Result<ControlAnswer, ApiError>) -> Response {
    match result {
        Ok(ControlAnswer::Json(body)) => Json(body).into_response(),
        Ok(ControlAnswer::Text(text)) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Ok(ControlAnswer::Empty) => StatusCode::OK.into_response(),
        Err(error) => error_response(&error),
    }
}

/// A JSON body as axum's `Json` extractor reads it (Content-Type, syntax, shape), its
/// rejection as vllm-rs reports it (400, type `Bad Request`).
fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> Result<T, ApiError> {
    let json_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
        .is_some_and(|m| {
            m.type_() == "application"
                && (m.subtype() == "json" || m.suffix().is_some_and(|s| s == "json"))
        });
    if !json_type {
        return Err(bad_request_body(
            "Expected request with `Content-Type: application/json`",
        ));
    }
    Json::<T>::from_bytes(bytes)
        .map(|Json(value)| value)
        .map_err(|rejection| bad_request_body(&rejection.body_text()))
}

/// [`body`] where the endpoint's body is optional: none is the default.
fn optional_body<T: DeserializeOwned + Default>(
    headers: &HeaderMap,
    bytes: &Bytes,
) -> Result<T, ApiError> {
    if bytes.is_empty() {
        Ok(T::default())
    } else {
        body(headers, bytes)
    }
}

fn bad_request_body(message: &str) -> ApiError {
    ApiError {
        status: 400,
        kind: "Bad Request",
        message: message.to_owned(),
        param: None,
    }
}

/// A query's rejection as a JSON error (`param` as vllm-rs names it).
fn query_error(rejection: &QueryRejection, param: Option<&str>) -> ApiError {
    ApiError::bad_request(rejection.body_text(), param)
}

async fn version() -> Response {
    Json(json!({
        "version": vllm_client::protocol::VLLM_VERSION,
        "rust_frontend_version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

/// `GET /load`: the requests this server has in flight.
async fn load(State(state): State<AppState>) -> Response {
    let load: usize = state.pipeline.client().inflight().iter().sum();
    Json(json!({ "server_load": load })).into_response()
}

async fn kv_event_sources(State(state): State<AppState>) -> Response {
    respond(Ok(engine::kv_event_sources(state.pipeline.client())))
}

fn client(state: &AppState) -> &EngineCoreClient {
    state.pipeline.client()
}

async fn pause(
    State(state): State<AppState>,
    query: Result<Query<lifecycle::PauseQuery>, QueryRejection>,
) -> Response {
    // vllm-rs names `mode` as the culprit of any bad /pause query.
    match query {
        Ok(Query(query)) => respond(lifecycle::pause(client(&state), &query).await),
        Err(rejection) => error_response(&query_error(&rejection, Some("mode"))),
    }
}

async fn resume(State(state): State<AppState>) -> Response {
    respond(lifecycle::resume(client(&state)).await)
}

async fn is_paused(State(state): State<AppState>) -> Response {
    respond(lifecycle::is_paused(client(&state)).await)
}

async fn sleep(
    State(state): State<AppState>,
    query: Result<Query<lifecycle::SleepQuery>, QueryRejection>,
) -> Response {
    match query {
        Ok(Query(query)) => respond(lifecycle::sleep(client(&state), &query).await),
        Err(rejection) => error_response(&query_error(&rejection, None)),
    }
}

/// `POST /wake_up?tags=a&tags=b`: repeated `tags` keys, as FastAPI's `getlist`.
async fn wake_up(State(state): State<AppState>, RawQuery(query): RawQuery) -> Response {
    let tags: Vec<String> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(key, _)| key == "tags")
        .map(|(_, value)| value.into_owned())
        .collect();
    let tags = (!tags.is_empty()).then_some(tags);
    respond(lifecycle::wake_up(client(&state), tags).await)
}

async fn is_sleeping(State(state): State<AppState>) -> Response {
    respond(lifecycle::is_sleeping(client(&state)).await)
}

async fn release_kv_cache_memory(State(state): State<AppState>) -> Response {
    respond(lifecycle::release_kv_cache_memory(client(&state)).await)
}

async fn reset_prefix_cache(
    State(state): State<AppState>,
    query: Result<Query<engine::ResetPrefixCacheQuery>, QueryRejection>,
) -> Response {
    match query {
        Ok(Query(query)) => respond(engine::reset_prefix_cache(client(&state), &query).await),
        // vllm-rs lets axum answer this one (plain text).
        Err(rejection) => rejection.into_response(),
    }
}

async fn reset_mm_cache(State(state): State<AppState>) -> Response {
    respond(engine::reset_mm_cache(client(&state)).await)
}

async fn reset_encoder_cache(State(state): State<AppState>) -> Response {
    respond(engine::reset_encoder_cache(client(&state)).await)
}

async fn collective_rpc(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<engine::CollectiveRpcBody>(&headers, &bytes) {
        Ok(body) => respond(engine::collective_rpc(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn abort_requests(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<engine::AbortRequestsBody>(&headers, &bytes) {
        Ok(body) => respond(engine::abort_requests(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn world_size(
    State(state): State<AppState>,
    query: Result<Query<engine::WorldSizeQuery>, QueryRejection>,
) -> Response {
    match query {
        Ok(Query(query)) => respond(Ok(engine::world_size(client(&state), &query))),
        Err(rejection) => error_response(&query_error(&rejection, None)),
    }
}

async fn init_weight_transfer_engine(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<weights::InitWeightTransferBody>(&headers, &bytes) {
        Ok(body) => respond(weights::init_weight_transfer_engine(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn shutdown_weight_transfer_engine(State(state): State<AppState>) -> Response {
    respond(weights::shutdown_weight_transfer_engine(client(&state)).await)
}

async fn start_weight_update(State(state): State<AppState>) -> Response {
    respond(weights::start_weight_update(client(&state)).await)
}

async fn start_draft_weight_update(State(state): State<AppState>) -> Response {
    respond(weights::start_draft_weight_update(client(&state)).await)
}

async fn update_weights(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<weights::UpdateWeightsBody>(&headers, &bytes) {
        Ok(body) => respond(weights::update_weights(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn finish_weight_update(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match optional_body::<weights::FinishWeightUpdateBody>(&headers, &bytes) {
        Ok(body) => respond(weights::finish_weight_update(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn update_weight_version(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<weights::UpdateWeightVersionBody>(&headers, &bytes) {
        Ok(body) => respond(weights::update_weight_version(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}

async fn weight_info(State(state): State<AppState>) -> Response {
    respond(weights::weight_info(client(&state)).await)
}

async fn weight_checker(
    State(state): State<AppState>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    match body::<weights::WeightCheckerBody>(&headers, &bytes) {
        Ok(body) => respond(weights::weight_checker(client(&state), &body).await),
        Err(error) => error_response(&error),
    }
}
