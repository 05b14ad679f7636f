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
//! Not produced: multimodal `features`, `token_offsets`, `reasoning_parser_kwargs`
//! and a parser-resolved `reasoning_ended` (this crate has no reasoning parser; a
//! server that has one fills them in).

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

use crate::openai::{
    ChatCompletionRequest, CompletionRequest, PromptInput, StopParam, StreamOptions, Tool,
    ToolChoice, ToolChoiceMode,
};
use crate::{ChatRenderer, RenderError};

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
    /// `true` when the request disables reasoning output; null lets the engine decide.
    pub reasoning_ended: Option<bool>,
    /// Set by servers with a reasoning parser (null here).
    pub reasoning_parser_kwargs: Option<Value>,
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
    /// Encoder-cache transfer parameters (always null).
    pub ec_transfer_params: Option<Value>,
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

/// vLLM's `SamplingParams` as resolved for one request.
///
/// It serializes like vLLM's (`msgspec.to_builtins` with `omit_defaults`): fields are
/// written in struct order and a field is left out when it holds its default. msgspec
/// tests "holds its default" by object identity, so what CPython shares decides it:
/// `None`, booleans and small integers are always the default object when equal; a
/// float is the default object only when `sampling_params.py` itself set it (unset
/// fields, and `top_p`/`min_p` reset for greedy sampling). The penalties,
/// temperature, `top_p` and `min_p` that vLLM's request classes always pass are
/// therefore always written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SamplingParams {
    /// Number of choices.
    pub n: u32,
    /// Presence penalty.
    pub presence_penalty: f64,
    /// Frequency penalty.
    pub frequency_penalty: f64,
    /// Repetition penalty.
    pub repetition_penalty: f64,
    /// Temperature.
    pub temperature: f64,
    /// Nucleus sampling (`None`: reset for greedy sampling).
    pub top_p: Option<f64>,
    /// Top-k (0: off).
    pub top_k: i64,
    /// Min-p (`None`: reset for greedy sampling).
    pub min_p: Option<f64>,
    /// Seed.
    pub seed: Option<i64>,
    /// Stop strings.
    pub stop: Vec<String>,
    /// Stop token ids.
    pub stop_token_ids: Vec<u32>,
    /// Ignore EOS.
    pub ignore_eos: bool,
    /// Maximum output tokens.
    pub max_tokens: i64,
    /// Minimum output tokens.
    pub min_tokens: i64,
    /// Logprobs per output token.
    pub logprobs: Option<i64>,
    /// Logprobs per prompt token.
    pub prompt_logprobs: Option<i64>,
    /// Drop special tokens from the output text.
    pub skip_special_tokens: bool,
    /// Spaces between special tokens when decoding.
    pub spaces_between_special_tokens: bool,
    /// Keep the stop string in the output.
    pub include_stop_str_in_output: bool,
    /// 0 cumulative, 1 delta (streaming), 2 final only.
    pub output_kind: u8,
    /// Characters held back to catch stop strings (`max(len(stop)) - 1`).
    pub output_text_buffer_length: usize,
    /// Structured-output constraints, as given.
    pub structured_outputs: Option<Value>,
    /// Logit bias.
    pub logit_bias: Option<Map<String, Value>>,
    /// Allowed output token ids.
    pub allowed_token_ids: Option<Vec<u32>>,
    /// Extra arguments (`vllm_xargs`).
    pub extra_args: Option<Map<String, Value>>,
    /// Banned words.
    pub bad_words: Vec<String>,
    /// Skip reading the prefix cache (needed for prompt logprobs).
    pub skip_reading_prefix_cache: bool,
}

impl Serialize for SamplingParams {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        if self.n != 1 {
            m.serialize_entry("n", &self.n)?;
        }
        m.serialize_entry("presence_penalty", &self.presence_penalty)?;
        m.serialize_entry("frequency_penalty", &self.frequency_penalty)?;
        m.serialize_entry("repetition_penalty", &self.repetition_penalty)?;
        m.serialize_entry("temperature", &self.temperature)?;
        if let Some(top_p) = self.top_p {
            m.serialize_entry("top_p", &top_p)?;
        }
        if self.top_k != 0 {
            m.serialize_entry("top_k", &self.top_k)?;
        }
        if let Some(min_p) = self.min_p {
            m.serialize_entry("min_p", &min_p)?;
        }
        if let Some(seed) = self.seed {
            m.serialize_entry("seed", &seed)?;
        }
        m.serialize_entry("stop", &self.stop)?;
        m.serialize_entry("stop_token_ids", &self.stop_token_ids)?;
        if self.ignore_eos {
            m.serialize_entry("ignore_eos", &true)?;
        }
        if self.max_tokens != 16 {
            m.serialize_entry("max_tokens", &self.max_tokens)?;
        }
        if self.min_tokens != 0 {
            m.serialize_entry("min_tokens", &self.min_tokens)?;
        }
        if let Some(l) = self.logprobs {
            m.serialize_entry("logprobs", &l)?;
        }
        if let Some(l) = self.prompt_logprobs {
            m.serialize_entry("prompt_logprobs", &l)?;
        }
        if !self.skip_special_tokens {
            m.serialize_entry("skip_special_tokens", &false)?;
        }
        if !self.spaces_between_special_tokens {
            m.serialize_entry("spaces_between_special_tokens", &false)?;
        }
        if self.include_stop_str_in_output {
            m.serialize_entry("include_stop_str_in_output", &true)?;
        }
        if self.output_kind != 0 {
            m.serialize_entry("output_kind", &self.output_kind)?;
        }
        m.serialize_entry("skip_clone", &true)?;
        if self.output_text_buffer_length != 0 {
            m.serialize_entry("output_text_buffer_length", &self.output_text_buffer_length)?;
        }
        if let Some(s) = &self.structured_outputs {
            m.serialize_entry("structured_outputs", s)?;
        }
        if let Some(b) = &self.logit_bias {
            m.serialize_entry("logit_bias", b)?;
        }
        if let Some(a) = &self.allowed_token_ids {
            m.serialize_entry("allowed_token_ids", a)?;
        }
        if let Some(e) = &self.extra_args {
            m.serialize_entry("extra_args", e)?;
        }
        m.serialize_entry("bad_words", &self.bad_words)?;
        m.serialize_entry("skip_reading_prefix_cache", &self.skip_reading_prefix_cache)?;
        m.end()
    }
}

/// Sampling defaults of the model (`generation_config.json`), as vLLM's
/// `get_diff_sampling_param` reads them with `--generation-config auto`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplingDefaults(pub Map<String, Value>);

impl SamplingDefaults {
    /// Picks the sampling keys of a generation config (`max_new_tokens` becomes `max_tokens`).
    pub fn from_generation_config(config: Option<&Map<String, Value>>) -> Self {
        const KEYS: [&str; 9] = [
            "repetition_penalty",
            "presence_penalty",
            "frequency_penalty",
            "temperature",
            "top_k",
            "top_p",
            "min_p",
            "max_new_tokens",
            "skip_special_tokens",
        ];
        let mut out = Map::new();
        if let Some(config) = config {
            for key in KEYS {
                if let Some(v) = config.get(key).filter(|v| !v.is_null()) {
                    let key = if key == "max_new_tokens" {
                        "max_tokens"
                    } else {
                        key
                    };
                    out.insert(key.to_owned(), v.clone());
                }
            }
        }
        SamplingDefaults(out)
    }

    fn f64(&self, key: &str) -> Option<f64> {
        self.0.get(key).and_then(Value::as_f64)
    }

    fn i64(&self, key: &str) -> Option<i64> {
        self.0.get(key).and_then(Value::as_i64)
    }
}

/// The request fields that become sampling parameters, common to chat and completion.
struct SamplingInputs<'a> {
    n: Option<i64>,
    presence_penalty: Option<f64>,
    frequency_penalty: Option<f64>,
    repetition_penalty: Option<f64>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<i64>,
    min_p: Option<f64>,
    seed: Option<i64>,
    stop: &'a Option<StopParam>,
    stop_token_ids: &'a Option<Vec<u32>>,
    ignore_eos: bool,
    max_tokens: i64,
    min_tokens: i64,
    logprobs: Option<i64>,
    prompt_logprobs: Option<i64>,
    skip_special_tokens: Option<bool>,
    spaces_between_special_tokens: bool,
    include_stop_str_in_output: bool,
    stream: bool,
    structured_outputs: &'a Option<Value>,
    logit_bias: &'a Option<Map<String, Value>>,
    allowed_token_ids: &'a Option<Vec<u32>>,
    vllm_xargs: &'a Option<Map<String, Value>>,
    bad_words: &'a [String],
}

/// vLLM's `to_sampling_params` + `SamplingParams.__post_init__`.
fn sampling_params(
    i: SamplingInputs<'_>,
    defaults: &SamplingDefaults,
) -> Result<SamplingParams, RenderError> {
    let n = i.n.unwrap_or(1);
    if n < 1 {
        return Err(RenderError::invalid(
            format!("n must be at least 1, got {n}."),
            "n",
        ));
    }
    let mut temperature = i.temperature.or(defaults.f64("temperature")).unwrap_or(1.0);
    if temperature < 0.0 {
        return Err(RenderError::invalid(
            format!("temperature must be non-negative, got {temperature}."),
            "temperature",
        ));
    }
    if 0.0 < temperature && temperature < 1e-2 {
        temperature = 1e-2;
    }
    let greedy = temperature < 1e-5;
    let stop = i.stop.as_ref().map(StopParam::to_vec).unwrap_or_default();
    let include_stop = i.include_stop_str_in_output;
    let output_text_buffer_length = match stop.iter().map(|s| s.chars().count()).max() {
        Some(longest) if !include_stop => longest.saturating_sub(1),
        _ => 0,
    };
    let mut dedup_ids = Vec::new();
    for id in i.stop_token_ids.iter().flatten() {
        if !dedup_ids.contains(id) {
            dedup_ids.push(*id);
        }
    }
    let mut bad_words: Vec<String> = Vec::new();
    for w in i.bad_words {
        if !bad_words.contains(w) {
            bad_words.push(w.clone());
        }
    }
    Ok(SamplingParams {
        n: n as u32,
        presence_penalty: i
            .presence_penalty
            .or(defaults.f64("presence_penalty"))
            .unwrap_or(0.0),
        frequency_penalty: i
            .frequency_penalty
            .or(defaults.f64("frequency_penalty"))
            .unwrap_or(0.0),
        repetition_penalty: i
            .repetition_penalty
            .or(defaults.f64("repetition_penalty"))
            .unwrap_or(1.0),
        temperature,
        top_p: if greedy {
            None
        } else {
            Some(i.top_p.or(defaults.f64("top_p")).unwrap_or(1.0))
        },
        top_k: if greedy {
            0
        } else {
            i.top_k.or(defaults.i64("top_k")).unwrap_or(0)
        },
        min_p: if greedy {
            None
        } else {
            Some(i.min_p.or(defaults.f64("min_p")).unwrap_or(0.0))
        },
        seed: i.seed.filter(|s| *s != -1),
        stop,
        stop_token_ids: dedup_ids,
        ignore_eos: i.ignore_eos,
        max_tokens: i.max_tokens,
        min_tokens: i.min_tokens,
        logprobs: i.logprobs,
        prompt_logprobs: i.prompt_logprobs,
        skip_special_tokens: i
            .skip_special_tokens
            .or_else(|| {
                defaults
                    .0
                    .get("skip_special_tokens")
                    .and_then(Value::as_bool)
            })
            .unwrap_or(true),
        spaces_between_special_tokens: i.spaces_between_special_tokens,
        include_stop_str_in_output: include_stop,
        output_kind: if i.stream { 1 } else { 2 },
        output_text_buffer_length,
        structured_outputs: i.structured_outputs.clone(),
        logit_bias: i.logit_bias.clone(),
        allowed_token_ids: i.allowed_token_ids.clone(),
        extra_args: i.vllm_xargs.clone().filter(|m| !m.is_empty()),
        bad_words,
        skip_reading_prefix_cache: i.prompt_logprobs.is_some(),
    })
}

/// vLLM's `get_max_tokens`: the request's limit (or the model default) capped by the
/// room left in the context.
fn max_tokens(
    max_model_len: u64,
    requested: Option<i64>,
    input_len: usize,
    truncate_prompt_tokens: Option<i64>,
    defaults: &SamplingDefaults,
) -> Result<i64, RenderError> {
    let max_model_len = max_model_len as i64;
    let mut input_len = input_len as i64;
    if let Some(limit) = truncate_prompt_tokens {
        input_len = input_len.min(if limit == -1 { max_model_len } else { limit });
    }
    if max_model_len < input_len {
        return Err(RenderError::invalid(
            format!(
                "Input length ({input_len}) exceeds model's maximum context length ({max_model_len})."
            ),
            "messages",
        ));
    }
    let room = max_model_len - input_len;
    Ok(match requested.or(defaults.i64("max_tokens")) {
        Some(r) => room.min(r),
        None => room,
    })
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

    fn sampling_defaults(&self) -> SamplingDefaults {
        SamplingDefaults::from_generation_config(self.model_files().generation_config.as_ref())
    }

    /// `/v1/chat/completions/render`: renders and tokenizes the conversation and
    /// resolves the sampling parameters, as vLLM's `ServingRender.render_chat_request`.
    pub fn render_chat(
        &self,
        request: &ChatCompletionRequest,
    ) -> Result<GenerateRequest, RenderError> {
        self.check_model(&request.model)?;
        let prompt = self.render(request)?;
        if prompt.token_ids.is_empty() {
            return Err(RenderError::invalid("No token_ids rendered", "messages"));
        }
        let defaults = self.sampling_defaults();
        let requested = request.max_completion_tokens.or(request.max_tokens);
        let max_tokens = max_tokens(
            self.max_model_len(),
            requested,
            prompt.token_ids.len(),
            request.truncate_prompt_tokens,
            &defaults,
        )?;
        let prompt_logprobs = match request.prompt_logprobs {
            None if request.echo => request.top_logprobs,
            p => p,
        };
        let stream = request.stream == Some(true);
        let params = sampling_params(
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
                structured_outputs: &request.structured_outputs,
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
        Ok(GenerateRequest {
            request_id: format!("chatcmpl-{}", request_id(&request.request_id)),
            token_ids: prompt.token_ids,
            token_offsets: None,
            features: None,
            content_parts: None,
            sampling_params: params,
            model: request.model.clone(),
            reasoning_ended: if request.include_reasoning {
                None
            } else {
                Some(true)
            },
            reasoning_parser_kwargs: None,
            return_token_ids: request.return_token_ids,
            output_mode: "tokens",
            parse_context: Some(ParseContext {
                tools: tool_values(&request.tools),
                tool_choice: tool_choice_value(&request.effective_tool_choice()),
                parallel_tool_calls: request.parallel_tool_calls.or(Some(true)),
                include_reasoning: request.include_reasoning,
                chat_template_kwargs: self.request_template_kwargs(request),
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
            kv_transfer_params: request.kv_transfer_params.clone().filter(|m| !m.is_empty()),
            ec_transfer_params: None,
        })
    }

    /// `/v1/completions/render`: one [`GenerateRequest`] per prompt, as vLLM's
    /// `ServingRender.render_completion_request`.
    pub fn render_completion(
        &self,
        request: &CompletionRequest,
    ) -> Result<Vec<GenerateRequest>, RenderError> {
        self.check_model(&request.model)?;
        if request.stream_options.is_some() && request.stream != Some(true) {
            return Err(RenderError::invalid(
                "Stream options can only be defined when `stream=True`.",
                "stream_options",
            ));
        }
        let prompts = request.prompt.prompts();
        if prompts.is_empty() {
            return Err(RenderError::invalid("Prompt cannot be empty", "prompt"));
        }
        let defaults = self.sampling_defaults();
        let base = format!("cmpl-{}", request_id(&request.request_id));
        let stream = request.stream == Some(true);
        let mut out = Vec::with_capacity(prompts.len());
        for (i, prompt) in prompts.iter().enumerate() {
            let token_ids = match prompt {
                PromptInput::Text(text) => self.encode(text, request.add_special_tokens)?,
                PromptInput::Tokens(ids) => ids.to_vec(),
            };
            if token_ids.is_empty() {
                return Err(RenderError::invalid("No token_ids rendered", "prompt"));
            }
            let max = max_tokens(
                self.max_model_len(),
                request.max_tokens,
                token_ids.len(),
                request.truncate_prompt_tokens,
                &defaults,
            )?;
            let echo_only = request.echo && request.max_tokens == Some(0);
            let params = sampling_params(
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
                    structured_outputs: &request.structured_outputs,
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
                kv_transfer_params: request.kv_transfer_params.clone().filter(|m| !m.is_empty()),
                ec_transfer_params: None,
            });
        }
        Ok(out)
    }
}

/// The caller's request id, or a fresh random one (vLLM uses a UUID4 hex).
fn request_id(given: &Option<String>) -> String {
    match given {
        Some(id) => id.clone(),
        None => random_hex_id(),
    }
}

/// 32 hex digits from the process's random hasher seed and a counter.
fn random_hex_id() -> String {
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
