//! The one error type of the crate.

use thiserror::Error;

/// Everything that can go wrong while loading a model directory or rendering a request.
///
/// Errors caused by the request (a template that rejects it, a bad field) are
/// distinguished from errors of the deployment (a missing file) so that a server can
/// answer 400 for the first kind and 500 for the second: see [`RenderError::is_client_error`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RenderError {
    /// The template rejected the request: `raise_exception(...)` or a runtime error
    /// (undefined attribute, type error, fuel exhausted). The message is the template's.
    #[error("{0}")]
    Template(String),
    /// The template does not compile.
    #[error("chat template syntax error: {0}")]
    TemplateSyntax(String),
    /// No chat template: the model directory has none and none was given.
    #[error(
        "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one."
    )]
    NoTemplate,
    /// A named template (`tool_use`, `default`, …) was asked for and does not exist.
    #[error("{0}")]
    UnknownTemplateName(String),
    /// The request is invalid; `param` names the offending field when known.
    #[error("{message}")]
    InvalidRequest {
        /// What is wrong.
        message: String,
        /// The request field at fault (e.g. `messages.1.tool_calls`).
        param: Option<String>,
    },
    /// A request field breaks its declared constraint (vLLM's pydantic
    /// `RequestValidationError`, answered with type `Bad Request`); `loc` is the
    /// field's path (`body.stream_interval`).
    #[error("1 validation error:\n  {detail}")]
    RequestValidation {
        /// pydantic's error entry as vLLM prints it.
        detail: String,
        /// Where in the request.
        loc: String,
    },
    /// The request names a model this renderer does not serve (HTTP 404).
    #[error("The model `{0}` does not exist.")]
    ModelNotFound(String),
    /// A model file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A model file is not valid JSON or not the expected shape.
    #[error("invalid {path}: {message}")]
    ModelFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The tokenizer failed (load or encode).
    #[error("tokenizer: {0}")]
    Tokenizer(String),
}

impl RenderError {
    /// True when the request is at fault (HTTP 400), false when the deployment is (HTTP 500).
    pub fn is_client_error(&self) -> bool {
        matches!(
            self,
            RenderError::Template(_)
                | RenderError::InvalidRequest { .. }
                | RenderError::RequestValidation { .. }
                | RenderError::UnknownTemplateName(_)
                | RenderError::TemplateSyntax(_)
        )
    }

    pub(crate) fn invalid(message: impl Into<String>, param: impl Into<String>) -> Self {
        RenderError::InvalidRequest {
            message: message.into(),
            param: Some(param.into()),
        }
    }

    /// pydantic's `greater_than_equal` for an integer request field below its bound
    /// (`Field(ge=...)`), as vLLM's validation handler writes it.
    pub(crate) fn greater_than_equal(field: &str, bound: i64, input: i64) -> Self {
        let loc = format!("body.{field}");
        RenderError::RequestValidation {
            detail: format!(
                "{{'type': 'greater_than_equal', 'loc': '{loc}', 'msg': 'Input should be greater than or equal to {bound}', 'input': '{input}', 'ctx': {{'ge': {bound}}}}}"
            ),
            loc,
        }
    }

    /// One of vLLM's `VLLMValidationError`s, whose text (what vLLM's error bodies
    /// carry) ends with ` (parameter=…, value=…)` when the parameter or the value is known.
    pub(crate) fn validation(
        message: impl Into<String>,
        param: Option<&str>,
        value: Option<String>,
    ) -> Self {
        let mut message = message.into();
        let extras: Vec<String> = [
            param.map(|p| format!("parameter={p}")),
            value.map(|v| format!("value={v}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !extras.is_empty() {
            message = format!("{message} ({})", extras.join(", "));
        }
        RenderError::InvalidRequest {
            message,
            param: param.map(str::to_owned),
        }
    }
}
