//! Errors as vLLM's OpenAI server sends them: `{"error": {"message", "type", "param",
//! "code"}}` with the matching HTTP status, independent of any HTTP framework (a server
//! turns an [`ApiError`] into its response type with [`ApiError::status`] and
//! [`ApiError::to_json`]).

use vllm_client::ClientError;

use crate::RenderError;
use crate::openai::{ErrorInfo, ErrorResponse};

/// What vLLM 0.33 tells API clients when its engine died (`EngineDeadError.CLIENT_MESSAGE`;
/// the cause goes to the server log, not to clients).
pub const ENGINE_DEAD_CLIENT_MESSAGE: &str =
    "The server had an error while processing your request.";

/// An error answer of the API: an HTTP status and vLLM's error body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} ({status}): {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// vLLM's error type (`BadRequestError`, `NotFoundError`, …).
    pub kind: &'static str,
    /// What went wrong.
    pub message: String,
    /// The request field at fault, when known.
    pub param: Option<String>,
}

impl ApiError {
    /// A 400 `BadRequestError` (vLLM's `VLLMValidationError`).
    pub fn bad_request(message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            status: 400,
            kind: "BadRequestError",
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    /// A 400 as vLLM's request-validation handler writes it (`RequestValidationError`:
    /// type `Bad Request`, the message prefixed with the error count).
    pub fn validation(errors: &[&str]) -> Self {
        let label = if errors.len() == 1 { "error" } else { "errors" };
        let mut message = format!("{} validation {label}:\n", errors.len());
        for error in errors {
            message.push_str("  ");
            message.push_str(error);
            message.push('\n');
        }
        Self {
            status: 400,
            kind: "Bad Request",
            message: message.trim_end().to_owned(),
            param: None,
        }
    }

    /// A 404 `NotFoundError`.
    pub fn not_found(message: impl Into<String>, param: Option<&str>) -> Self {
        Self {
            status: 404,
            kind: "NotFoundError",
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    /// A 500 `InternalServerError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            status: 500,
            kind: "InternalServerError",
            message: message.into(),
            param: None,
        }
    }

    /// A 503 `ServiceUnavailableError`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            status: 503,
            kind: "ServiceUnavailableError",
            message: message.into(),
            param: None,
        }
    }

    /// The error for a request the engine link refused or lost: what vLLM answers for
    /// `EngineDeadError` (500, its client message) once the engine is dead, 503 while
    /// the server shuts down, 400 for a request the client rejects.
    pub fn from_client(error: &ClientError) -> Self {
        match error {
            ClientError::EngineDead(_) => Self::internal(ENGINE_DEAD_CLIENT_MESSAGE),
            ClientError::Shutdown => Self::unavailable(error.to_string()),
            ClientError::InvalidRequest(_) | ClientError::DuplicateRequestId(_) => {
                Self::bad_request(error.to_string(), None)
            }
            _ => Self::internal(error.to_string()),
        }
    }

    /// The body.
    pub fn body(&self) -> ErrorResponse {
        ErrorResponse {
            error: ErrorInfo {
                message: self.message.clone(),
                kind: self.kind.to_owned(),
                param: self.param.clone(),
                code: self.status,
            },
        }
    }

    /// The body as JSON text (a response body, or an SSE `data:` line mid-stream).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.body()).unwrap_or_default()
    }
}

impl From<RenderError> for ApiError {
    fn from(error: RenderError) -> Self {
        let body = ErrorResponse::from_render_error(&error);
        let kind = match (&error, body.error.code) {
            (RenderError::RequestValidation { .. }, _) => "Bad Request",
            (_, 404) => "NotFoundError",
            (_, 400) => "BadRequestError",
            _ => "InternalServerError",
        };
        Self {
            status: body.error.code,
            kind,
            message: body.error.message,
            param: body.error.param,
        }
    }
}

impl From<serde_json::Error> for ApiError {
    /// A body that is not JSON, or not the expected shape: 400, as vLLM answers a
    /// request that fails validation.
    fn from(error: serde_json::Error) -> Self {
        Self::bad_request(format!("Invalid request body: {error}"), None)
    }
}
