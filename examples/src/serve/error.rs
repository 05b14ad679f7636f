//! The pipeline's [`ApiError`] as an axum response: vLLM's status and body.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
pub use vllm_chat::pipeline::{ApiError, ENGINE_DEAD_CLIENT_MESSAGE};

/// Middleware for JSON endpoints: a POST whose body is not declared
/// `application/json` gets vLLM's 400 (`validate_json_request`) and never reaches
/// the handler.
pub async fn require_json(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if request.method() == axum::http::Method::POST {
        let content_type = request.headers().get(header::CONTENT_TYPE);
        if let Err(error) =
            vllm_chat::pipeline::check_content_type(content_type.map(|v| v.as_bytes()))
        {
            return error_response(&error);
        }
    }
    next.run(request).await
}

/// An error answer: the status and JSON body of `error`.
pub fn error_response(error: &ApiError) -> Response {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        error.to_json(),
    )
        .into_response()
}

/// `value` as a JSON 200, or the error's answer.
pub fn json_or_error<T: Serialize>(result: Result<T, ApiError>) -> Response {
    match result {
        Ok(value) => Json(value).into_response(),
        Err(error) => error_response(&error),
    }
}

/// The handler's response, or the error's answer.
pub fn or_error(result: Result<Response, ApiError>) -> Response {
    result.unwrap_or_else(|error| error_response(&error))
}
