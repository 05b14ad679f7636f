//! Response bodies and stream chunks, serialized as vLLM 0.33.0 emits them.
//!
//! Two serializations are at play in vLLM. A whole response is `model_dump()`ed:
//! every field is written, `null` included (except `tool_calls`, dropped when
//! empty). A stream chunk is `model_dump_json(exclude_unset=True)`: only the fields
//! the server set are written, and a field set to `None` is written as `null`. The
//! chunk types model that with [`Emit`]: [`Emit::Unset`] leaves the field out,
//! [`Emit::Set`] writes it (possibly `null`). Log probabilities are carried as JSON
//! typed values ([`super::logprobs`]).

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::logprobs::{ChatLogprobs, CompletionLogprobs};

/// A stream-chunk field: left out, or written (`Set(None)` writes `null`).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Emit<T> {
    /// Not set: not written.
    #[default]
    Unset,
    /// Set by the server: written, as `null` for `None`.
    Set(Option<T>),
}

impl<T> Emit<T> {
    /// True for [`Emit::Unset`] (used by `skip_serializing_if`).
    pub fn is_unset(&self) -> bool {
        matches!(self, Emit::Unset)
    }

    /// A set, non-null value.
    pub fn value(v: T) -> Self {
        Emit::Set(Some(v))
    }

    /// Set to null.
    pub fn null() -> Self {
        Emit::Set(None)
    }
}

impl<T: Serialize> Serialize for Emit<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Emit::Set(Some(v)) => v.serialize(serializer),
            Emit::Set(None) | Emit::Unset => serializer.serialize_none(),
        }
    }
}

fn is_empty<T>(v: &[T]) -> bool {
    v.is_empty()
}

/// Token counts (`UsageInfo`).
///
/// In stream chunks only the set fields are written; in whole responses
/// ([`ChatCompletionResponse`], [`CompletionResponse`]) the details are always
/// written, as `null` when unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Prompt + completion tokens.
    pub total_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// `{"cached_tokens": …}` when prompt-cache details are reported.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub prompt_tokens_details: Emit<Value>,
    /// `{"reasoning_tokens": …}` when reasoning-token details are reported.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub completion_tokens_details: Emit<Value>,
}

impl Usage {
    /// Counts without details.
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Usage {
            prompt_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            completion_tokens,
            prompt_tokens_details: Emit::Unset,
            completion_tokens_details: Emit::Unset,
        }
    }
}

/// `model_dump()` of a usage: unset details become `null`.
fn usage_in_body<S: Serializer>(usage: &Usage, serializer: S) -> Result<S::Ok, S::Error> {
    let full = |e: &Emit<Value>| match e {
        Emit::Unset => Emit::null(),
        set => set.clone(),
    };
    Usage {
        prompt_tokens_details: full(&usage.prompt_tokens_details),
        completion_tokens_details: full(&usage.completion_tokens_details),
        ..usage.clone()
    }
    .serialize(serializer)
}

/// A function call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Function name.
    pub name: String,
    /// Arguments as a JSON string.
    pub arguments: String,
}

/// A tool call in a response message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id (`chatcmpl-tool-…` in vLLM).
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The call.
    pub function: FunctionCall,
}

/// The assistant message of a chat response (`ChatMessage`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResponseMessage {
    /// Always `assistant`.
    pub role: String,
    /// The answer text.
    pub content: Option<String>,
    /// Refusal text.
    pub refusal: Option<String>,
    /// Annotations (always null in vLLM).
    pub annotations: Option<Value>,
    /// Audio (always null in vLLM).
    pub audio: Option<Value>,
    /// Legacy function call (always null in vLLM).
    pub function_call: Option<Value>,
    /// Tool calls; left out when empty.
    #[serde(skip_serializing_if = "is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text.
    pub reasoning: Option<String>,
}

impl ResponseMessage {
    /// An assistant message with this content, reasoning and tool calls.
    pub fn assistant(
        content: Option<String>,
        reasoning: Option<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Self {
        ResponseMessage {
            role: "assistant".into(),
            content,
            refusal: None,
            annotations: None,
            audio: None,
            function_call: None,
            tool_calls,
            reasoning,
        }
    }
}

/// One choice of a chat response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatChoice {
    /// Choice index.
    pub index: u32,
    /// The message.
    pub message: ResponseMessage,
    /// `{"content": [...]}` when logprobs were requested.
    pub logprobs: Option<ChatLogprobs>,
    /// `stop`, `length`, `tool_calls`, `abort`, …
    pub finish_reason: Option<String>,
    /// The stop string or token id that ended the output.
    pub stop_reason: Option<Value>,
    /// Output token ids (with `return_token_ids`).
    pub token_ids: Option<Vec<u32>>,
    /// Routed experts (always null here).
    pub routed_experts: Option<String>,
    /// Weight versions (always null here).
    pub weight_versions: Option<Value>,
}

/// The body of a non-streaming chat completion (`ChatCompletionResponse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatCompletionResponse {
    /// `chatcmpl-…`.
    pub id: String,
    /// Always `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// Served model name.
    pub model: String,
    /// The choices.
    pub choices: Vec<ChatChoice>,
    /// Service tier (null).
    pub service_tier: Option<String>,
    /// System fingerprint.
    pub system_fingerprint: Option<String>,
    /// Token counts.
    #[serde(serialize_with = "usage_in_body")]
    pub usage: Usage,
    /// Prompt logprobs.
    pub prompt_logprobs: Option<Value>,
    /// Prompt token ids (with `return_token_ids`).
    pub prompt_token_ids: Option<Vec<u32>>,
    /// Rendered prompt (with `return_prompt_text`).
    pub prompt_text: Option<String>,
    /// KV-transfer parameters.
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters.
    pub ec_transfer_params: Option<Map<String, Value>>,
    /// Per-request metrics.
    pub metrics: Option<Value>,
}

/// A streamed function-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeltaFunctionCall {
    /// Function name (first fragment).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub name: Emit<String>,
    /// A piece of the arguments string.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub arguments: Emit<String>,
}

/// A streamed tool-call fragment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeltaToolCall {
    /// Call id (first fragment).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub id: Emit<String>,
    /// `function` (first fragment).
    #[serde(rename = "type", skip_serializing_if = "Emit::is_unset")]
    pub kind: Emit<String>,
    /// Index of the call in the response.
    pub index: u32,
    /// The function fragment.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub function: Emit<DeltaFunctionCall>,
}

/// The `delta` of a chat stream chunk.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DeltaMessage {
    /// `assistant` in the first chunk.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub role: Emit<String>,
    /// New content.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub content: Emit<String>,
    /// New reasoning.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub reasoning: Emit<String>,
    /// Tool-call fragments; left out when empty.
    #[serde(skip_serializing_if = "is_empty")]
    pub tool_calls: Vec<DeltaToolCall>,
}

/// One choice of a chat stream chunk.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatChunkChoice {
    /// Choice index.
    pub index: u32,
    /// What is new.
    pub delta: DeltaMessage,
    /// Logprobs of the new tokens (vLLM always sets it, often to null).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub logprobs: Emit<ChatLogprobs>,
    /// Set (null until the end) by vLLM on every chunk.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub finish_reason: Emit<String>,
    /// The stop string or token id (final chunk).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub stop_reason: Emit<Value>,
    /// New token ids (with `return_token_ids`).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub token_ids: Emit<Vec<u32>>,
    /// Weight versions of the steps behind the choice; vLLM sets it (null) on the
    /// final choice.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub weight_versions: Emit<Value>,
}

/// A chat stream chunk (`ChatCompletionStreamResponse`, `exclude_unset`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatCompletionChunk {
    /// `chatcmpl-…`, the same in every chunk.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// Served model name.
    pub model: String,
    /// Choices (empty in the final usage chunk).
    pub choices: Vec<ChatChunkChoice>,
    /// Usage (continuous usage, or the final usage chunk).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub usage: Emit<Usage>,
    /// System fingerprint (terminal chunks).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub system_fingerprint: Emit<String>,
    /// Prompt token ids (first chunk).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub prompt_token_ids: Emit<Vec<u32>>,
    /// Rendered prompt (first chunk).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub prompt_text: Emit<String>,
    /// KV-transfer parameters (set, often null, on content chunks).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub kv_transfer_params: Emit<Map<String, Value>>,
}

impl ChatCompletionChunk {
    /// The first chunk of a choice, as vLLM sends it: `{"role": "assistant", "content": ""}`,
    /// null logprobs and finish reason, and the prompt token ids when requested.
    pub fn first(
        id: &str,
        created: u64,
        model: &str,
        index: u32,
        prompt_token_ids: Option<Vec<u32>>,
    ) -> Self {
        let delta = DeltaMessage {
            role: Emit::value("assistant".into()),
            content: Emit::value(String::new()),
            ..Default::default()
        };
        ChatCompletionChunk {
            prompt_token_ids: Emit::Set(prompt_token_ids),
            prompt_text: Emit::null(),
            ..Self::with_choice(id, created, model, ChatChunkChoice::leading(index, delta))
        }
    }

    /// The chunk that echoes the last message's content (`echo`), sent right after
    /// the first: no token ids and no `kv_transfer_params`.
    pub fn echo(id: &str, created: u64, model: &str, index: u32, content: String) -> Self {
        let delta = DeltaMessage {
            content: Emit::value(content),
            ..Default::default()
        };
        Self::with_choice(id, created, model, ChatChunkChoice::leading(index, delta))
    }

    /// A content chunk: vLLM sets `kv_transfer_params` (null until the finish).
    pub fn delta(id: &str, created: u64, model: &str, choice: ChatChunkChoice) -> Self {
        ChatCompletionChunk {
            kv_transfer_params: Emit::null(),
            ..Self::with_choice(id, created, model, choice)
        }
    }

    /// The final usage chunk (`include_usage`): no choices, nulls left out.
    pub fn usage(
        id: &str,
        created: u64,
        model: &str,
        usage: Usage,
        system_fingerprint: Option<String>,
    ) -> Self {
        ChatCompletionChunk {
            id: id.into(),
            object: "chat.completion.chunk",
            created,
            model: model.into(),
            choices: Vec::new(),
            usage: Emit::value(usage),
            system_fingerprint: system_fingerprint.map_or(Emit::Unset, Emit::value),
            prompt_token_ids: Emit::Unset,
            prompt_text: Emit::Unset,
            kv_transfer_params: Emit::Unset,
        }
    }

    fn with_choice(id: &str, created: u64, model: &str, choice: ChatChunkChoice) -> Self {
        ChatCompletionChunk {
            id: id.into(),
            object: "chat.completion.chunk",
            created,
            model: model.into(),
            choices: vec![choice],
            usage: Emit::Unset,
            system_fingerprint: Emit::Unset,
            prompt_token_ids: Emit::Unset,
            prompt_text: Emit::Unset,
            kv_transfer_params: Emit::Unset,
        }
    }
}

impl ChatChunkChoice {
    /// A content choice as vLLM builds them mid-stream: null logprobs, finish reason
    /// and token ids (vLLM sets `token_ids` on every content chunk, to the new ids
    /// with `return_token_ids` and to null without).
    pub fn new(index: u32, delta: DeltaMessage) -> Self {
        ChatChunkChoice {
            token_ids: Emit::null(),
            ..Self::leading(index, delta)
        }
    }

    /// The choice of the chunks that open a stream (the role chunk and the `echo`
    /// chunk): null logprobs and finish reason, no token ids.
    pub fn leading(index: u32, delta: DeltaMessage) -> Self {
        ChatChunkChoice {
            index,
            delta,
            logprobs: Emit::null(),
            finish_reason: Emit::null(),
            stop_reason: Emit::Unset,
            token_ids: Emit::Unset,
            weight_versions: Emit::Unset,
        }
    }
}

/// One choice of a completion response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionChoice {
    /// Choice index.
    pub index: u32,
    /// The text.
    pub text: String,
    /// `{"text_offset", "token_logprobs", "tokens", "top_logprobs"}`.
    pub logprobs: Option<CompletionLogprobs>,
    /// `stop`, `length`, …
    pub finish_reason: Option<String>,
    /// The stop string or token id.
    pub stop_reason: Option<Value>,
    /// Output token ids (with `return_token_ids`).
    pub token_ids: Option<Vec<u32>>,
    /// Prompt logprobs.
    pub prompt_logprobs: Option<Value>,
    /// Prompt token ids (with `return_token_ids`).
    pub prompt_token_ids: Option<Vec<u32>>,
    /// Routed experts (always null here).
    pub routed_experts: Option<String>,
    /// Weight versions (with `return_weight_versions`).
    pub weight_versions: Option<Value>,
}

/// The body of a non-streaming completion (`CompletionResponse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionResponse {
    /// `cmpl-…`.
    pub id: String,
    /// Always `text_completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// Served model name.
    pub model: String,
    /// The choices.
    pub choices: Vec<CompletionChoice>,
    /// Service tier (null).
    pub service_tier: Option<String>,
    /// System fingerprint.
    pub system_fingerprint: Option<String>,
    /// Token counts.
    #[serde(serialize_with = "usage_in_body")]
    pub usage: Usage,
    /// KV-transfer parameters.
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters.
    pub ec_transfer_params: Option<Map<String, Value>>,
    /// Per-request metrics.
    pub metrics: Option<Value>,
}

/// One choice of a completion stream chunk (all fields are set by vLLM).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionChunkChoice {
    /// Choice index.
    pub index: u32,
    /// New text.
    pub text: String,
    /// Logprobs of the new tokens.
    pub logprobs: Option<CompletionLogprobs>,
    /// Set on the last chunk.
    pub finish_reason: Option<String>,
    /// The stop string or token id.
    pub stop_reason: Option<Value>,
    /// Prompt token ids (first chunk, with `return_token_ids`).
    pub prompt_token_ids: Option<Vec<u32>>,
    /// New token ids (with `return_token_ids`).
    pub token_ids: Option<Vec<u32>>,
    /// Weight versions.
    pub weight_versions: Option<Value>,
}

/// A completion stream chunk (`CompletionStreamResponse`, `exclude_unset`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompletionChunk {
    /// `cmpl-…`.
    pub id: String,
    /// Always `text_completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// Served model name.
    pub model: String,
    /// Choices (empty in the final usage chunk).
    pub choices: Vec<CompletionChunkChoice>,
    /// Usage (continuous usage or the final chunk).
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub usage: Emit<Usage>,
    /// System fingerprint.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub system_fingerprint: Emit<String>,
    /// KV-transfer parameters: vLLM sets it on every content chunk (null until the
    /// finish); the final usage chunk leaves it out.
    #[serde(skip_serializing_if = "Emit::is_unset")]
    pub kv_transfer_params: Emit<Map<String, Value>>,
}

impl CompletionChunk {
    /// A content chunk: vLLM sets `kv_transfer_params` (null until the finish).
    pub fn delta(id: &str, created: u64, model: &str, choice: CompletionChunkChoice) -> Self {
        CompletionChunk {
            id: id.into(),
            object: "text_completion",
            created,
            model: model.into(),
            choices: vec![choice],
            usage: Emit::Unset,
            system_fingerprint: Emit::Unset,
            kv_transfer_params: Emit::null(),
        }
    }

    /// The final usage chunk (`include_usage`): no choices, nulls left out.
    pub fn usage(
        id: &str,
        created: u64,
        model: &str,
        usage: Usage,
        system_fingerprint: Option<String>,
    ) -> Self {
        CompletionChunk {
            id: id.into(),
            object: "text_completion",
            created,
            model: model.into(),
            choices: Vec::new(),
            usage: Emit::value(usage),
            system_fingerprint: system_fingerprint.map_or(Emit::Unset, Emit::value),
            kv_transfer_params: Emit::Unset,
        }
    }
}

/// An error body: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorResponse {
    /// The error.
    pub error: ErrorInfo,
}

/// The error of an [`ErrorResponse`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// What went wrong.
    pub message: String,
    /// `BadRequestError`, `NotFoundError`, `InternalServerError`, …
    #[serde(rename = "type")]
    pub kind: String,
    /// The offending parameter.
    pub param: Option<String>,
    /// The HTTP status.
    pub code: u16,
}

impl ErrorResponse {
    /// The error body vLLM sends for a [`crate::RenderError`]: 400, 404 or 500.
    pub fn from_render_error(err: &crate::RenderError) -> Self {
        let (code, kind) = match err {
            crate::RenderError::ModelNotFound(_) => (404, "NotFoundError"),
            crate::RenderError::RequestValidation { .. } => (400, "Bad Request"),
            e if e.is_client_error() => (400, "BadRequestError"),
            _ => (500, "InternalServerError"),
        };
        let param = match err {
            crate::RenderError::InvalidRequest { param, .. } => param.clone(),
            crate::RenderError::RequestValidation { loc, .. } => Some(loc.clone()),
            crate::RenderError::ModelNotFound(_) => Some("model".into()),
            _ => None,
        };
        ErrorResponse {
            error: ErrorInfo {
                message: err.to_string(),
                kind: kind.into(),
                param,
                code,
            },
        }
    }
}
