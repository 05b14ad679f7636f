//! Render mode: vLLM's `/v1/chat/completions/render` and `/v1/completions/render`.
//!
//! A render server turns an OpenAI request into what an engine needs — the prompt's
//! token ids and the resolved sampling parameters — without running a model, so
//! that a gateway can render once, route by token prefix and send tokens to an
//! engine. [`ChatRenderer::render_chat`] and [`ChatRenderer::render_completion`]
//! return vLLM 0.33.0's `GenerateRequest`, serialized with the same fields, order
//! and null/omitted choices as vLLM's `model_dump()` (checked against fixtures made
//! by vLLM's own classes, `scripts/gen_render_fixtures.py`).
//!
//! Requests are checked as vLLM checks them, with its messages: the request
//! validators (`openai::validate`), the output-length limits, the prompt length,
//! the sampling-parameter ranges ([`SamplingParams::verify`]) and the structured
//! outputs ([`StructuredOutputsParams`]).
//!
//! Not produced: multimodal `features` and `token_offsets`. The renderer knows no
//! parsers: `reasoning_ended` is vLLM's answer without a reasoning parser (`true`
//! when the request hides reasoning, else `null`). In front of parsers, the
//! `pipeline` feature's `render_chat` fills in `reasoning_parser_kwargs` and the
//! parser-resolved `reasoning_ended` as vLLM does (`vllm_parser::serving`).

mod sampling;
mod structured;

pub use sampling::{MAX_N_SEQUENCES, SamplingDefaults, SamplingParams};
pub use structured::StructuredOutputsParams;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::openai::{
    ChatCompletionRequest, CompletionRequest, PromptInput, StreamOptions, Tool, ToolChoice,
    ToolChoiceMode,
};
use crate::{ChatRenderer, RenderError};
use sampling::{SamplingInputs, check_prompt_length, check_requested_lengths, max_tokens};

/// vLLM's `ReasoningParserKwargs`: what the engine-side reasoning parser is built with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReasoningParserKwargs {
    /// The effective template kwargs the prompt was rendered with.
    pub chat_template_kwargs: Map<String, Value>,
}

/// vLLM's `GenerateRequest`: one engine-ready request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateRequest {
    /// `chatcmpl-…` or `cmpl-…` (`-i` appended per prompt of a batch).
    pub request_id: String,
    /// The prompt's token ids.
    pub token_ids: Vec<u32>,
    /// Char offsets per token (not produced: always null).
    pub token_offsets: Option<Value>,
    /// Multimodal features (not produced: always null).
    pub features: Option<Value>,
    /// Raw multimodal parts (always null).
    pub content_parts: Option<Value>,
    /// The resolved sampling parameters.
    pub sampling_params: SamplingParams,
    /// The requested model name.
    pub model: Option<String>,
    /// Whether generation starts after reasoning (vLLM's `resolve_reasoning_ended`):
    /// `true` when the request hides reasoning or the prompt already ended it, `false`
    /// when the reasoning parser reads the prompt as still reasoning; null lets the
    /// engine decide.
    pub reasoning_ended: Option<bool>,
    /// The reasoning parser's kwargs (with a reasoning parser, chat only).
    pub reasoning_parser_kwargs: Option<ReasoningParserKwargs>,
    /// Return prompt token ids in the response.
    pub return_token_ids: Option<bool>,
    /// Always `tokens`.
    pub output_mode: &'static str,
    /// What a derenderer needs to parse the output (chat only).
    pub parse_context: Option<ParseContext>,
    /// Stream the answer.
    pub stream: bool,
    /// Streaming options (only when streaming).
    pub stream_options: Option<StreamOptionsDump>,
    /// Prefix-cache salt.
    pub cache_salt: Option<String>,
    /// Scheduling priority.
    pub priority: i64,
    /// KV-transfer parameters, moved out of the sampling parameters.
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters, moved out of the sampling parameters.
    pub ec_transfer_params: Option<Map<String, Value>>,
}

impl GenerateRequest {
    /// The sampling parameters the engine gets: the KV- and EC-transfer parameters (set
    /// when not empty) back in `extra_args`, where vLLM's `to_sampling_params` (and its tokens-in endpoint)
    /// put them for the engine's KV connector.
    pub fn engine_sampling_params(&self) -> SamplingParams {
        with_transfer_params(
            self.sampling_params.clone(),
            self.kv_transfer_params.as_ref(),
            self.ec_transfer_params.as_ref(),
        )
    }
}

/// `params` with `kv_transfer_params` and `ec_transfer_params` added to its
/// `extra_args` (after `vllm_xargs`, as vLLM adds them).
pub fn with_transfer_params(
    mut params: SamplingParams,
    kv: Option<&Map<String, Value>>,
    ec: Option<&Map<String, Value>>,
) -> SamplingParams {
    for (key, value) in [("kv_transfer_params", kv), ("ec_transfer_params", ec)] {
        if let Some(value) = value {
            params
                .extra_args
                .get_or_insert_default()
                .insert(key.to_owned(), Value::Object(value.clone()));
        }
    }
    params
}

/// `stream_options` as vLLM dumps it (both fields, `false` by default).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamOptionsDump {
    /// Send usage in a final chunk.
    pub include_usage: bool,
    /// Send usage in every chunk.
    pub continuous_usage_stats: bool,
}

impl From<&StreamOptions> for StreamOptionsDump {
    fn from(o: &StreamOptions) -> Self {
        StreamOptionsDump {
            include_usage: o.include_usage.unwrap_or(false),
            continuous_usage_stats: o.continuous_usage_stats.unwrap_or(false),
        }
    }
}

/// vLLM's `ParseContext`: the chat request context a derenderer needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParseContext {
    /// The request's tools.
    pub tools: Option<Vec<Value>>,
    /// `none`, `auto`, `required` or a named function.
    pub tool_choice: Value,
    /// Allow parallel tool calls.
    pub parallel_tool_calls: Option<bool>,
    /// Return reasoning to the client.
    pub include_reasoning: bool,
    /// The template kwargs the request was rendered with.
    pub chat_template_kwargs: Map<String, Value>,
    /// Tool calls already in the conversation.
    pub history_tool_call_cnt: usize,
}

fn tool_choice_value(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Mode(mode) => Value::String(
            match mode {
                ToolChoiceMode::None => "none",
                ToolChoiceMode::Auto => "auto",
                ToolChoiceMode::Required => "required",
            }
            .to_owned(),
        ),
        ToolChoice::Named(named) => {
            let mut function = Map::new();
            function.insert("name".into(), Value::String(named.function.name.clone()));
            let mut out = Map::new();
            out.insert("function".into(), Value::Object(function));
            out.insert("type".into(), Value::String(named.kind.clone()));
            Value::Object(out)
        }
    }
}

fn tool_values(tools: &Option<Vec<Tool>>) -> Option<Vec<Value>> {
    tools
        .as_ref()
        .map(|t| t.iter().map(Tool::template_value).collect())
}

impl ChatRenderer {
    fn check_model(&self, model: &Option<String>) -> Result<(), RenderError> {
        match (model, &self.options().served_model_name) {
            (Some(m), Some(served)) if m != served => Err(RenderError::ModelNotFound(m.clone())),
            _ => Ok(()),
        }
    }

    /// The context length: `--max-model-len`, else `config.json`'s, else unbounded.
    pub fn max_model_len(&self) -> u64 {
        self.options()
            .max_model_len
            .or(self.model_files().max_model_len())
            .unwrap_or(u64::from(u32::MAX))
    }

    fn context_len(&self) -> i64 {
        i64::try_from(self.max_model_len()).unwrap_or(i64::MAX)
    }

    fn sampling_defaults(&self) -> SamplingDefaults {
        SamplingDefaults::from_generation_config(self.model_files().generation_config.as_ref())
    }

    /// `/v1/chat/completions/render`: renders and tokenizes the conversation and
    /// resolves the sampling parameters, as vLLM's `ServingRender.render_chat_request`
    /// without a reasoning parser.
    pub fn render_chat(
        &self,
        request: &ChatCompletionRequest,
    ) -> Result<GenerateRequest, RenderError> {
        request.validate()?;
        self.check_model(&request.model)?;
        let context = self.context_len();
        let (requested, requested_param) = match request.max_completion_tokens {
            Some(m) => (Some(m), "max_completion_tokens"),
            None => (request.max_tokens, "max_tokens"),
        };
        check_requested_lengths(
            context,
            requested.map(|r| (r, requested_param)),
            request.truncate_prompt_tokens,
        )?;
        let token_ids = if self.renders_token_ids() {
            self.render_token_ids(request)?
        } else {
            let text = self.render_text(request)?;
            // vLLM's tokenizer stops one token past the context, so every prompt longer
            // than the context gets the same answer: a text that certainly is (by its
            // length alone) gets it without being tokenized.
            if self.min_tokens(&text) as i64 > context {
                check_prompt_length(context, context as usize + 1, true)?;
            }
            self.encode(&text, self.adds_special_tokens(request))?
        };
        if token_ids.is_empty() {
            return Err(RenderError::validation("No token_ids rendered", None, None));
        }
        check_prompt_length(context, token_ids.len(), true)?;
        let defaults = self.sampling_defaults();
        let max_tokens = max_tokens(
            context,
            requested,
            token_ids.len(),
            request.truncate_prompt_tokens,
            &defaults,
        )?;
        let prompt_logprobs = match request.prompt_logprobs {
            None if request.echo => request.top_logprobs,
            p => p,
        };
        let stream = request.stream == Some(true);
        let structured_outputs = StructuredOutputsParams::from_request(
            request.structured_outputs.as_ref(),
            request.response_format.as_ref(),
        )?;
        let params = sampling::resolve(
            SamplingInputs {
                n: request.n,
                presence_penalty: request.presence_penalty,
                frequency_penalty: request.frequency_penalty,
                repetition_penalty: request.repetition_penalty,
                temperature: request.temperature,
                top_p: request.top_p,
                top_k: request.top_k,
                min_p: request.min_p,
                seed: request.seed,
                stop: &request.stop,
                stop_token_ids: &request.stop_token_ids,
                ignore_eos: request.ignore_eos,
                max_tokens,
                min_tokens: request.min_tokens,
                logprobs: if request.logprobs == Some(true) {
                    Some(request.top_logprobs.unwrap_or(0))
                } else {
                    None
                },
                prompt_logprobs,
                skip_special_tokens: request.skip_special_tokens,
                spaces_between_special_tokens: request.spaces_between_special_tokens,
                include_stop_str_in_output: request.include_stop_str_in_output,
                stream,
                stream_interval: request.stream_interval,
                structured_outputs,
                logit_bias: &request.logit_bias,
                allowed_token_ids: &request.allowed_token_ids,
                vllm_xargs: &request.vllm_xargs,
                bad_words: &request.bad_words,
            },
            &defaults,
        )?;
        let history_tool_call_cnt = request
            .messages
            .iter()
            .filter(|m| m.role == "assistant")
            .map(|m| m.tool_calls.as_ref().map_or(0, Vec::len))
            .sum();
        let chat_template_kwargs = self.request_template_kwargs(request);
        // `resolve_reasoning_ended` without a parser.
        let reasoning_ended = (!request.include_reasoning).then_some(true);
        Ok(GenerateRequest {
            request_id: format!("chatcmpl-{}", request_id(&request.request_id)),
            token_ids,
            token_offsets: None,
            features: None,
            content_parts: None,
            sampling_params: params,
            model: request.model.clone(),
            reasoning_ended,
            reasoning_parser_kwargs: None,
            return_token_ids: request.return_token_ids,
            output_mode: "tokens",
            parse_context: Some(ParseContext {
                tools: tool_values(&request.tools),
                tool_choice: tool_choice_value(&request.effective_tool_choice()),
                parallel_tool_calls: request.parallel_tool_calls.or(Some(true)),
                include_reasoning: request.include_reasoning,
                chat_template_kwargs,
                history_tool_call_cnt,
            }),
            stream,
            stream_options: if stream {
                request.stream_options.as_ref().map(Into::into)
            } else {
                None
            },
            cache_salt: request.cache_salt.clone(),
            priority: request.priority,
            kv_transfer_params: non_empty(&request.kv_transfer_params),
            ec_transfer_params: non_empty(&request.ec_transfer_params),
        })
    }

    /// `/v1/completions/render`: one [`GenerateRequest`] per prompt, as vLLM's
    /// `ServingRender.render_completion_request`.
    pub fn render_completion(
        &self,
        request: &CompletionRequest,
    ) -> Result<Vec<GenerateRequest>, RenderError> {
        request.validate()?;
        self.check_model(&request.model)?;
        let context = self.context_len();
        check_requested_lengths(
            context,
            Some((request.max_tokens.unwrap_or(0), "max_tokens")),
            request.truncate_prompt_tokens,
        )?;
        let prompts = request.prompt.prompts();
        if prompts.is_empty() {
            return Err(RenderError::invalid("Prompt cannot be empty", "prompt"));
        }
        let defaults = self.sampling_defaults();
        let structured_outputs = StructuredOutputsParams::from_request(
            request.structured_outputs.as_ref(),
            request.response_format.as_ref(),
        )?;
        let base = format!("cmpl-{}", request_id(&request.request_id));
        let stream = request.stream == Some(true);
        let mut out = Vec::with_capacity(prompts.len());
        for (i, prompt) in prompts.iter().enumerate() {
            let (token_ids, tokenized) = match prompt {
                PromptInput::Text(text) => (self.encode(text, request.add_special_tokens)?, true),
                PromptInput::Tokens(ids) => (ids.to_vec(), false),
            };
            if token_ids.is_empty() {
                return Err(RenderError::validation("No token_ids rendered", None, None));
            }
            check_prompt_length(context, token_ids.len(), tokenized)?;
            let max = max_tokens(
                context,
                request.max_tokens,
                token_ids.len(),
                request.truncate_prompt_tokens,
                &defaults,
            )?;
            let echo_only = request.echo && request.max_tokens == Some(0);
            let params = sampling::resolve(
                SamplingInputs {
                    n: request.n,
                    presence_penalty: request.presence_penalty,
                    frequency_penalty: request.frequency_penalty,
                    repetition_penalty: request.repetition_penalty,
                    temperature: request.temperature,
                    top_p: request.top_p,
                    top_k: request.top_k,
                    min_p: request.min_p,
                    seed: request.seed,
                    stop: &request.stop,
                    stop_token_ids: &request.stop_token_ids,
                    ignore_eos: request.ignore_eos,
                    max_tokens: if echo_only { 1 } else { max },
                    min_tokens: request.min_tokens,
                    logprobs: request.logprobs,
                    prompt_logprobs: match request.prompt_logprobs {
                        None if request.echo => request.logprobs,
                        p => p,
                    },
                    skip_special_tokens: request.skip_special_tokens,
                    spaces_between_special_tokens: request.spaces_between_special_tokens,
                    include_stop_str_in_output: request.include_stop_str_in_output,
                    stream,
                    stream_interval: request.stream_interval,
                    structured_outputs: structured_outputs.clone(),
                    logit_bias: &request.logit_bias,
                    allowed_token_ids: &request.allowed_token_ids,
                    vllm_xargs: &request.vllm_xargs,
                    bad_words: &request.bad_words,
                },
                &defaults,
            )?;
            out.push(GenerateRequest {
                request_id: if prompts.len() == 1 {
                    base.clone()
                } else {
                    format!("{base}-{i}")
                },
                token_ids,
                token_offsets: None,
                features: None,
                content_parts: None,
                sampling_params: params,
                model: request.model.clone(),
                reasoning_ended: None,
                reasoning_parser_kwargs: None,
                return_token_ids: request.return_token_ids,
                output_mode: "tokens",
                parse_context: None,
                stream,
                stream_options: if stream {
                    request.stream_options.as_ref().map(Into::into)
                } else {
                    None
                },
                cache_salt: request.cache_salt.clone(),
                priority: request.priority,
                kv_transfer_params: non_empty(&request.kv_transfer_params),
                ec_transfer_params: non_empty(&request.ec_transfer_params),
            });
        }
        Ok(out)
    }
}

/// vLLM's `_hoist_transfer_params`: an empty map is not sent.
fn non_empty(params: &Option<Map<String, Value>>) -> Option<Map<String, Value>> {
    params.clone().filter(|m| !m.is_empty())
}

/// The caller's request id, or a fresh random one (vLLM uses a UUID4 hex).
fn request_id(given: &Option<String>) -> String {
    match given {
        Some(id) => id.clone(),
        None => random_hex_id(),
    }
}

/// 32 random hex digits (the process's randomly keyed hasher over a counter), as vLLM's
/// UUID4 hex ids look.
pub fn random_hex_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut parts = [0u64; 2];
    for (k, part) in parts.iter_mut().enumerate() {
        let mut h = state.build_hasher();
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_usize(k);
        *part = h.finish();
    }
    format!("{:016x}{:016x}", parts[0], parts[1])
}
