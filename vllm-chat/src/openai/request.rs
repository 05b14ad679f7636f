//! Request bodies of `/v1/chat/completions` and `/v1/completions`, with vLLM's extra fields.
//!
//! Field names and defaults are those of vLLM 0.33.0's `ChatCompletionRequest` and
//! `CompletionRequest`. Unknown top-level fields are tolerated (ignored), as vLLM
//! does by default.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::tools::{Tool, ToolChoice};

fn default_true() -> bool {
    true
}

/// A chat message as the client sends it.
///
/// `role` is free-form (templates define which roles they accept). `reasoning` is
/// also read from `reasoning_content`, the older name that vLLM still accepts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant`, `tool`, …
    pub role: String,
    /// Text, or a list of content parts; absent or null for an assistant turn
    /// that only calls tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    /// Optional participant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tool calls of an assistant turn. Kept as JSON objects: templates see them as sent
    /// (with `function.arguments` parsed into an object by the renderer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<Value>>,
    /// The call this `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The reasoning of an earlier assistant turn (interleaved thinking).
    #[serde(
        default,
        alias = "reasoning_content",
        skip_serializing_if = "Option::is_none"
    )]
    pub reasoning: Option<String>,
    /// Task label (used by a few templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Tools attached to a `developer` message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
}

/// Message content: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// OpenAI content parts (`{"type": "text", "text": …}`, images, …).
    Parts(Vec<ContentPart>),
}

/// One content part. Only text parts can be rendered by a text-only renderer;
/// other kinds are kept so that the error can name them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ContentPart {
    /// A bare string part (vLLM accepts these).
    Str(String),
    /// A typed part.
    Typed {
        /// `text`, `image_url`, `input_audio`, …
        #[serde(rename = "type")]
        kind: String,
        /// The text of a `text` part.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The other fields of the part.
        #[serde(flatten)]
        rest: Map<String, Value>,
    },
}

/// `stop`: one string or a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StopParam {
    /// A single stop string.
    One(String),
    /// Several stop strings.
    Many(Vec<String>),
}

impl Default for StopParam {
    fn default() -> Self {
        StopParam::Many(Vec::new())
    }
}

impl StopParam {
    /// The stop strings as a list.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            StopParam::One(s) => vec![s.clone()],
            StopParam::Many(v) => v.clone(),
        }
    }
}

/// `stream_options`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Send a final chunk with usage.
    #[serde(default)]
    pub include_usage: Option<bool>,
    /// Send usage in every chunk.
    #[serde(default)]
    pub continuous_usage_stats: Option<bool>,
}

/// The body of `POST /v1/chat/completions` (and `/v1/chat/completions/render`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionRequest {
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Served model name.
    #[serde(default)]
    pub model: Option<String>,
    /// Frequency penalty.
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    /// Token id (as a string) to logit bias.
    #[serde(default)]
    pub logit_bias: Option<Map<String, Value>>,
    /// Return log probabilities of the output tokens.
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// How many alternatives per position (with `logprobs`).
    #[serde(default)]
    pub top_logprobs: Option<i64>,
    /// Maximum output tokens (deprecated by OpenAI in favour of `max_completion_tokens`).
    #[serde(default)]
    pub max_tokens: Option<i64>,
    /// Maximum output tokens.
    #[serde(default)]
    pub max_completion_tokens: Option<i64>,
    /// Number of choices.
    #[serde(default)]
    pub n: Option<i64>,
    /// Presence penalty.
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// `{"type": "text" | "json_object" | "json_schema", …}`.
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Sampling seed.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Stop strings.
    #[serde(default)]
    pub stop: Option<StopParam>,
    /// Stream the answer as server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// Tools the model may call.
    #[serde(default)]
    pub tools: Option<Vec<Tool>>,
    /// `none`, `auto`, `required` or a named function.
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// `none`, `minimal`, `low`, `medium`, `high`, `xhigh`, `max`.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Return reasoning to the client.
    #[serde(default = "default_true")]
    pub include_reasoning: bool,
    /// Allow several tool calls in one turn.
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// End-user id (ignored by vLLM).
    #[serde(default)]
    pub user: Option<String>,
    /// Top-k sampling.
    #[serde(default)]
    pub top_k: Option<i64>,
    /// Min-p sampling.
    #[serde(default)]
    pub min_p: Option<f64>,
    /// Repetition penalty.
    #[serde(default)]
    pub repetition_penalty: Option<f64>,
    /// Extra stop token ids.
    #[serde(default)]
    pub stop_token_ids: Option<Vec<u32>>,
    /// Keep the matched stop string in the output.
    #[serde(default)]
    pub include_stop_str_in_output: bool,
    /// Keep generating past EOS.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Minimum output tokens before EOS or stop strings may end the output.
    #[serde(default)]
    pub min_tokens: i64,
    /// Drop special tokens from the output text (default true).
    #[serde(default)]
    pub skip_special_tokens: Option<bool>,
    /// Put spaces between special tokens when decoding.
    #[serde(default = "default_true")]
    pub spaces_between_special_tokens: bool,
    /// Truncate the prompt to its last k tokens (-1: to the model's length).
    #[serde(default)]
    pub truncate_prompt_tokens: Option<i64>,
    /// Number of prompt logprobs.
    #[serde(default)]
    pub prompt_logprobs: Option<i64>,
    /// Allowed output token ids.
    #[serde(default)]
    pub allowed_token_ids: Option<Vec<u32>>,
    /// Banned words.
    #[serde(default)]
    pub bad_words: Vec<String>,
    /// Tokens batched into each streamed chunk: raises the server's
    /// `--stream-interval` for this request (the first and last chunks go out at once).
    #[serde(default)]
    pub stream_interval: Option<i64>,
    /// Echo the last message in the response.
    #[serde(default)]
    pub echo: bool,
    /// Append the assistant header; absent means true (vLLM's default), read it with
    /// [`ChatCompletionRequest::add_generation_prompt`]. Whether it was given matters:
    /// vLLM refuses it beside `continue_final_message` only when the request sets both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_generation_prompt: Option<bool>,
    /// Leave the final message open so that the model continues it.
    #[serde(default)]
    pub continue_final_message: bool,
    /// Add the tokenizer's special tokens (BOS) when tokenizing the rendered prompt.
    #[serde(default)]
    pub add_special_tokens: bool,
    /// RAG documents given to the template.
    #[serde(default)]
    pub documents: Option<Vec<Map<String, Value>>>,
    /// A template or a template name for this request.
    #[serde(default)]
    pub chat_template: Option<String>,
    /// Extra template variables (`enable_thinking`, …).
    #[serde(default)]
    pub chat_template_kwargs: Option<Map<String, Value>>,
    /// Structured outputs (`json`, `regex`, `choice`, `grammar`, …).
    #[serde(default)]
    pub structured_outputs: Option<Value>,
    /// Scheduling priority.
    #[serde(default)]
    pub priority: i64,
    /// Caller-chosen request id.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Return token ids in the response.
    #[serde(default)]
    pub return_token_ids: Option<bool>,
    /// Return each choice's `weight_versions` (which weights produced its tokens).
    #[serde(default)]
    pub return_weight_versions: Option<bool>,
    /// Return logprob tokens as `token_id:N`.
    #[serde(default)]
    pub return_tokens_as_token_ids: Option<bool>,
    /// Prefix-cache salt.
    #[serde(default)]
    pub cache_salt: Option<String>,
    /// KV-transfer parameters (disaggregated serving).
    #[serde(default)]
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters (disaggregated encoders).
    #[serde(default)]
    pub ec_transfer_params: Option<Map<String, Value>>,
    /// Extra arguments for custom logits processors.
    #[serde(default)]
    pub vllm_xargs: Option<Map<String, Value>>,
}

/// `prompt` of a completion request: text, token ids, or batches of either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CompletionPrompt {
    /// One text prompt.
    Text(String),
    /// Several text prompts.
    Texts(Vec<String>),
    /// One token-id prompt.
    Tokens(Vec<u32>),
    /// Several token-id prompts.
    TokenBatches(Vec<Vec<u32>>),
}

impl CompletionPrompt {
    /// True for an empty text prompt (`""`), which vLLM refuses.
    pub fn is_empty_text(&self) -> bool {
        matches!(self, CompletionPrompt::Text(s) if s.is_empty())
    }

    /// Each prompt, in order.
    pub fn prompts(&self) -> Vec<PromptInput<'_>> {
        match self {
            CompletionPrompt::Text(s) => vec![PromptInput::Text(s)],
            CompletionPrompt::Texts(v) => v.iter().map(|s| PromptInput::Text(s)).collect(),
            CompletionPrompt::Tokens(t) => vec![PromptInput::Tokens(t)],
            CompletionPrompt::TokenBatches(v) => v.iter().map(|t| PromptInput::Tokens(t)).collect(),
        }
    }
}

/// One prompt of a completion request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PromptInput<'a> {
    /// Text, to be tokenized.
    Text(&'a str),
    /// Token ids, used as they are.
    Tokens(&'a [u32]),
}

/// The body of `POST /v1/completions` (and `/v1/completions/render`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// Served model name.
    #[serde(default)]
    pub model: Option<String>,
    /// The prompt(s).
    pub prompt: CompletionPrompt,
    /// Echo the prompt in the output.
    #[serde(default)]
    pub echo: bool,
    /// Frequency penalty.
    #[serde(default)]
    pub frequency_penalty: Option<f64>,
    /// Token id (as a string) to logit bias.
    #[serde(default)]
    pub logit_bias: Option<Map<String, Value>>,
    /// Number of logprobs per position.
    #[serde(default)]
    pub logprobs: Option<i64>,
    /// Maximum output tokens (default 16, also when sent as null).
    #[serde(
        default = "default_completion_max_tokens",
        deserialize_with = "null_as_default_max_tokens"
    )]
    pub max_tokens: Option<i64>,
    /// Number of choices.
    #[serde(default)]
    pub n: Option<i64>,
    /// Presence penalty.
    #[serde(default)]
    pub presence_penalty: Option<f64>,
    /// Sampling seed.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Stop strings.
    #[serde(default)]
    pub stop: Option<StopParam>,
    /// Stream the answer.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Streaming options.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Text appended after the completion (unsupported by vLLM; accepted and ignored).
    #[serde(default)]
    pub suffix: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// End-user id.
    #[serde(default)]
    pub user: Option<String>,
    /// Top-k sampling.
    #[serde(default)]
    pub top_k: Option<i64>,
    /// Min-p sampling.
    #[serde(default)]
    pub min_p: Option<f64>,
    /// Repetition penalty.
    #[serde(default)]
    pub repetition_penalty: Option<f64>,
    /// Extra stop token ids.
    #[serde(default)]
    pub stop_token_ids: Option<Vec<u32>>,
    /// Keep the matched stop string in the output.
    #[serde(default)]
    pub include_stop_str_in_output: bool,
    /// Keep generating past EOS.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Minimum output tokens.
    #[serde(default)]
    pub min_tokens: i64,
    /// Drop special tokens from the output text.
    #[serde(default)]
    pub skip_special_tokens: Option<bool>,
    /// Spaces between special tokens when decoding.
    #[serde(default = "default_true")]
    pub spaces_between_special_tokens: bool,
    /// Truncate the prompt to its last k tokens.
    #[serde(default)]
    pub truncate_prompt_tokens: Option<i64>,
    /// Allowed output token ids.
    #[serde(default)]
    pub allowed_token_ids: Option<Vec<u32>>,
    /// Number of prompt logprobs.
    #[serde(default)]
    pub prompt_logprobs: Option<i64>,
    /// Banned words.
    #[serde(default)]
    pub bad_words: Vec<String>,
    /// Tokens batched into each streamed chunk: raises the server's
    /// `--stream-interval` for this request (the first and last chunks go out at once).
    #[serde(default)]
    pub stream_interval: Option<i64>,
    /// Add special tokens (BOS) when tokenizing a text prompt (default true).
    #[serde(default = "default_true")]
    pub add_special_tokens: bool,
    /// `{"type": "json_object" | …}`.
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Structured outputs.
    #[serde(default)]
    pub structured_outputs: Option<Value>,
    /// Scheduling priority.
    #[serde(default)]
    pub priority: i64,
    /// Caller-chosen request id.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Return token ids in the response.
    #[serde(default)]
    pub return_token_ids: Option<bool>,
    /// Return logprob tokens as `token_id:N`.
    #[serde(default)]
    pub return_tokens_as_token_ids: Option<bool>,
    /// Prefix-cache salt.
    #[serde(default)]
    pub cache_salt: Option<String>,
    /// KV-transfer parameters.
    #[serde(default)]
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters (disaggregated encoders).
    #[serde(default)]
    pub ec_transfer_params: Option<Map<String, Value>>,
    /// Extra arguments for custom logits processors.
    #[serde(default)]
    pub vllm_xargs: Option<Map<String, Value>>,
}

fn default_completion_max_tokens() -> Option<i64> {
    Some(16)
}

/// vLLM's `normalize_null_max_tokens`: `"max_tokens": null` means the default, 16.
fn null_as_default_max_tokens<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    Ok(Option::<i64>::deserialize(deserializer)?.or_else(default_completion_max_tokens))
}
