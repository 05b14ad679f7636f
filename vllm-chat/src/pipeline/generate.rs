//! vLLM's tokens-in endpoint (`POST /inference/v1/generate`): a client that rendered a
//! request itself (e.g. with render mode) sends prompt token ids and resolved sampling
//! parameters; the answer carries token ids (`output_mode: "tokens"`, the default) or
//! also text (`"text"`). `"derender"` is not supported.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use vllm_client::protocol::EngineCoreRequest;

use super::error::ApiError;
use super::generation::{Candidate, PositionLogprobs, Samples, Step};
use super::{Pipeline, ids, logprobs, sampling, sse};
use crate::openai::{ChatLogprobs, Emit, StopParam, StreamOptions, Usage};
use crate::render_mode;

/// vLLM's `SamplingParams` as JSON, with its defaults.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct WireSamplingParams {
    n: u32,
    presence_penalty: f64,
    frequency_penalty: f64,
    repetition_penalty: f64,
    temperature: f64,
    top_p: f64,
    top_k: i64,
    min_p: f64,
    seed: Option<i64>,
    stop: Option<StopParam>,
    stop_token_ids: Option<Vec<u32>>,
    ignore_eos: bool,
    max_tokens: Option<i64>,
    min_tokens: i64,
    logprobs: Option<i64>,
    prompt_logprobs: Option<i64>,
    skip_special_tokens: bool,
    spaces_between_special_tokens: bool,
    include_stop_str_in_output: bool,
    structured_outputs: Option<render_mode::StructuredOutputsParams>,
    logit_bias: Option<Map<String, Value>>,
    allowed_token_ids: Option<Vec<u32>>,
    extra_args: Option<Map<String, Value>>,
    bad_words: Option<Vec<String>>,
    stream_interval: Option<i64>,
}

impl Default for WireSamplingParams {
    fn default() -> Self {
        Self {
            n: 1,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repetition_penalty: 1.0,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            seed: None,
            stop: None,
            stop_token_ids: None,
            ignore_eos: false,
            max_tokens: Some(16),
            min_tokens: 0,
            logprobs: None,
            prompt_logprobs: None,
            skip_special_tokens: true,
            spaces_between_special_tokens: true,
            include_stop_str_in_output: false,
            structured_outputs: None,
            logit_bias: None,
            allowed_token_ids: None,
            extra_args: None,
            bad_words: None,
            stream_interval: None,
        }
    }
}

impl WireSamplingParams {
    /// The parameters with `max_tokens` as asked (`i64::MAX` when unset: the room
    /// the context leaves, see [`TokensPrompt::params`]).
    fn resolve(self, stream: bool) -> render_mode::SamplingParams {
        render_mode::SamplingParams {
            n: self.n,
            presence_penalty: self.presence_penalty,
            frequency_penalty: self.frequency_penalty,
            repetition_penalty: self.repetition_penalty,
            temperature: self.temperature,
            top_p: Some(self.top_p),
            top_k: self.top_k,
            min_p: Some(self.min_p),
            seed: self.seed,
            stop: self
                .stop
                .as_ref()
                .map(StopParam::to_vec)
                .unwrap_or_default(),
            stop_token_ids: self.stop_token_ids.unwrap_or_default(),
            ignore_eos: self.ignore_eos,
            max_tokens: self.max_tokens.unwrap_or(i64::MAX),
            min_tokens: self.min_tokens,
            logprobs: self.logprobs,
            prompt_logprobs: self.prompt_logprobs,
            skip_special_tokens: self.skip_special_tokens,
            spaces_between_special_tokens: self.spaces_between_special_tokens,
            include_stop_str_in_output: self.include_stop_str_in_output,
            output_kind: if stream { 1 } else { 2 },
            stream_interval: self.stream_interval,
            structured_outputs: self.structured_outputs,
            logit_bias: self.logit_bias,
            allowed_token_ids: self.allowed_token_ids,
            extra_args: self.extra_args,
            bad_words: self.bad_words.unwrap_or_default(),
            ..render_mode::SamplingParams::default()
        }
    }
}

/// A tokens-in request (vLLM's `GenerateRequest` of `/inference/v1/generate`).
#[derive(Debug, Clone, Deserialize)]
pub struct TokensRequest {
    /// The request id (random when absent).
    #[serde(default)]
    pub request_id: Option<String>,
    /// The prompt's token ids.
    pub token_ids: Vec<u32>,
    /// vLLM's sampling parameters, resolved by the client.
    #[serde(default)]
    pub sampling_params: WireSamplingParams,
    /// The model name (checked against the served one).
    #[serde(default)]
    pub model: Option<Value>,
    /// Return the prompt's token ids in the answer.
    #[serde(default)]
    pub return_token_ids: Option<bool>,
    /// `tokens` (default) or `text`.
    #[serde(default = "tokens_mode")]
    pub output_mode: String,
    /// Stream the answer.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Prefill/decode disaggregation: handed to the engines' KV connector in
    /// `extra_args` (vLLM's `kv_transfer_params`).
    #[serde(default)]
    pub kv_transfer_params: Option<Map<String, Value>>,
    /// Encoder-cache transfer parameters, handed over the same way.
    #[serde(default)]
    pub ec_transfer_params: Option<Map<String, Value>>,
    /// `include_usage`, `continuous_usage_stats`.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Prefix-cache salt.
    #[serde(default)]
    pub cache_salt: Option<String>,
    /// Scheduling priority.
    #[serde(default)]
    pub priority: i64,
}

fn tokens_mode() -> String {
    "tokens".into()
}

/// One candidate of `GenerateLogProbs` (tokens mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenLogprob {
    /// The token id.
    pub token_id: u32,
    /// Its log probability.
    pub logprob: f64,
    /// Its rank.
    pub rank: i64,
}

/// One position of `GenerateLogProbs` (tokens mode).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenLogprobEntry {
    /// The sampled token.
    #[serde(flatten)]
    pub sampled: TokenLogprob,
    /// The candidates, in the engine's order.
    pub top_logprobs: Vec<TokenLogprob>,
}

/// Logprobs of a tokens-in answer: token ids in tokens mode, chat-style texts in
/// text mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum GenerateLogprobs {
    /// `{"content": [{"token_id", "logprob", "rank", "top_logprobs"}]}`.
    Tokens {
        /// The positions.
        content: Vec<TokenLogprobEntry>,
    },
    /// Chat logprobs with every candidate.
    Text(ChatLogprobs),
}

/// A choice of a tokens-in answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateChoice {
    /// The sample's index in `0..n`.
    pub index: u32,
    /// `stop`, `length`, `abort`, or null mid-stream.
    pub finish_reason: Option<&'static str>,
    /// The stop string or token id.
    pub stop_reason: Option<Value>,
    /// The new token ids.
    pub token_ids: Vec<u32>,
    /// Always null.
    pub routed_experts: Option<Value>,
    /// Always null.
    pub sampling_mask: Option<Value>,
    /// On the final output: which weights produced the tokens
    /// (`[{"version", "start", "end"}]`), null without versions from the engines.
    pub weight_versions: Option<Value>,
    /// Text mode: the text (streamed: the new text), written after `weight_versions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The logprobs, when requested.
    pub logprobs: Option<GenerateLogprobs>,
}

/// The whole answer of a tokens-in request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateResponse {
    /// The request id.
    pub request_id: String,
    /// Served model name.
    pub model: String,
    /// Unix seconds.
    pub created: u64,
    /// Token counts (details written as null).
    pub usage: Usage,
    /// The prompt logprobs, with `prompt_logprobs`: vLLM's list (`null` first).
    pub prompt_logprobs: Option<Value>,
    /// Always null.
    pub prompt_token_id_logprobs: Option<Value>,
    /// The prompt's token ids with `return_token_ids`.
    pub prompt_token_ids: Option<Vec<u32>>,
    /// Always null.
    pub mm_placeholders: Option<Value>,
    /// Always null.
    pub metrics: Option<Value>,
    /// Always null.
    pub kv_transfer_params: Option<Value>,
    /// Always null.
    pub ec_transfer_params: Option<Value>,
    /// `tokens` or `text`.
    pub output_mode: &'static str,
    /// The `n` choices, in index order.
    pub choices: Vec<GenerateChoice>,
}

/// A chunk of a streamed tokens-in answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateChunk {
    /// The request id.
    pub request_id: String,
    /// Continuous usage stats (null otherwise); the final usage chunk's counts.
    pub usage: Option<Usage>,
    /// The prompt's token ids, on the first chunk with `return_token_ids`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_token_ids: Option<Vec<u32>>,
    /// Null on the first chunk with `return_token_ids`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mm_placeholders: Option<Option<Value>>,
    /// `tokens` or `text`.
    pub output_mode: &'static str,
    /// The choice (none in the final usage chunk).
    pub choices: Vec<GenerateChoice>,
}

/// A tokens-in request accepted and sent to the engine. Dropping it aborts the
/// engine request.
pub struct AcceptedGenerate {
    request_id: String,
    model: String,
    text_mode: bool,
    stream: bool,
    return_token_ids: bool,
    prompt_token_ids: Vec<u32>,
    include_usage: bool,
    continuous_usage: bool,
    samples: Samples,
    /// Report the prompt-cache counts in the usage.
    prompt_tokens_details: bool,
}

impl std::fmt::Debug for AcceptedGenerate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptedGenerate")
            .field("request_id", &self.request_id)
            .finish_non_exhaustive()
    }
}

/// A tokens-in prompt with its resolved sampling parameters: what a tokens-in API
/// (`/inference/v1/generate`, the gRPC `Generate`) hands to [`Pipeline::start_tokens`]
/// once it has read its own request format.
#[derive(Debug, Clone)]
pub struct TokensPrompt {
    /// The API's request id (the engine request's id adds vLLM's random suffix,
    /// [`ids::engine_request_id`]).
    pub request_id: String,
    /// The prompt's token ids.
    pub token_ids: Vec<u32>,
    /// The sampling parameters; `max_tokens` is the requested cap (`i64::MAX`: none),
    /// lowered to the room the context leaves after the prompt.
    pub params: render_mode::SamplingParams,
    /// The LoRA adapter to generate with.
    pub lora_request: Option<vllm_client::protocol::LoRARequest>,
    /// Scheduling priority.
    pub priority: i64,
    /// Prefix-cache salt.
    pub cache_salt: Option<String>,
    /// Engine parameters beyond the resolved sampling parameters.
    pub extras: EngineExtras,
}

/// Engine sampling parameters a tokens-in API may set that vLLM's OpenAI request
/// formats do not carry (the gRPC `GenerateRequest` does); `None` leaves the engine's
/// default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineExtras {
    /// Token sequences that must not be generated, already tokenized (vLLM's
    /// `_bad_words_token_ids`).
    pub bad_words_token_ids: Option<Vec<Vec<u32>>>,
    /// Apply the engine's configured watermark.
    pub watermarking: Option<bool>,
    /// Do not read the prefix cache for this request.
    pub skip_reading_prefix_cache: Option<bool>,
    /// Reasoning tokens allowed before the engine closes the reasoning.
    pub thinking_token_budget: Option<i64>,
}

impl Pipeline {
    /// Accepts a tokens-in request: checks it as vLLM does and sends it to the engines.
    pub async fn generate(&self, request: TokensRequest) -> Result<AcceptedGenerate, ApiError> {
        let adapter = match request.model.as_ref() {
            None => None,
            Some(serde_json::Value::String(name)) => self.resolve_adapter(Some(name))?,
            Some(other) => {
                self.check_model(Some(other))?;
                None
            }
        };
        let text_mode = match request.output_mode.as_str() {
            "tokens" => false,
            "text" => true,
            other => {
                return Err(ApiError::bad_request(
                    format!("output_mode {other:?} is not supported by this server"),
                    Some("output_mode"),
                ));
            }
        };
        let stream = request.stream == Some(true);
        let model_name = self.answer_model(adapter.as_ref());
        // vLLM's `serve_tokens`: `generate-tokens-{request_id}`, the body's id or a
        // random one.
        let request_id = format!(
            "generate-tokens-{}",
            request.request_id.unwrap_or_else(ids::random_hex)
        );
        let samples = self
            .start_tokens(TokensPrompt {
                request_id: request_id.clone(),
                token_ids: request.token_ids.clone(),
                params: render_mode::with_transfer_params(
                    request.sampling_params.resolve(stream),
                    request.kv_transfer_params.as_ref(),
                    request.ec_transfer_params.as_ref(),
                ),
                lora_request: adapter,
                priority: request.priority,
                cache_salt: request.cache_salt,
                extras: EngineExtras::default(),
            })
            .await?;
        let options = request.stream_options.unwrap_or_default();
        let include_usage = options.include_usage == Some(true);
        Ok(AcceptedGenerate {
            request_id,
            model: model_name,
            text_mode,
            stream,
            return_token_ids: request.return_token_ids == Some(true),
            prompt_token_ids: request.token_ids,
            include_usage,
            continuous_usage: include_usage && options.continuous_usage_stats == Some(true),
            samples,
            prompt_tokens_details: self.config.enable_prompt_tokens_details,
        })
    }

    /// Checks a tokens-in prompt as vLLM does (not empty, `n` within the engines'
    /// `max_num_seqs`, within the context, valid sampling parameters) and sends it to
    /// the engines: its `n` samples, as they come.
    pub async fn start_tokens(&self, prompt: TokensPrompt) -> Result<Samples, ApiError> {
        if prompt.token_ids.is_empty() {
            return Err(ApiError::bad_request(
                "token_ids must not be empty",
                Some("token_ids"),
            ));
        }
        // vLLM checks its own `scheduler_config.max_num_seqs`, which its engines share;
        // here the engines report theirs.
        let max_num_seqs = self
            .client
            .engines()
            .first()
            .map_or(i64::MAX, |e| e.ready.max_num_seqs);
        let n = prompt.params.n;
        if i64::from(n) > max_num_seqs {
            return Err(ApiError::bad_request(
                format!(
                    "sampling_params.n must be at most the server's max_num_seqs ({max_num_seqs}), got {n}."
                ),
                None,
            ));
        }
        let max_model_len = i64::try_from(self.model.max_model_len()).unwrap_or(i64::MAX);
        let prompt_len = prompt.token_ids.len() as i64;
        if prompt_len > max_model_len {
            return Err(ApiError::bad_request(
                format!(
                    "Input length ({prompt_len}) exceeds model's maximum context length ({max_model_len})."
                ),
                Some("token_ids"),
            ));
        }
        let mut resolved = prompt.params;
        resolved.max_tokens = resolved.max_tokens.min(max_model_len - prompt_len);
        let mut params = sampling::engine_params(&resolved, &self.model, self.config.max_logprobs)?;
        let extras = prompt.extras;
        if let Some(words) = extras.bad_words_token_ids {
            params.bad_words_token_ids = Some(
                words
                    .into_iter()
                    .map(|w| w.into_iter().map(i64::from).collect())
                    .collect(),
            );
        }
        params.watermarking = extras.watermarking.or(params.watermarking);
        params.skip_reading_prefix_cache = extras
            .skip_reading_prefix_cache
            .or(params.skip_reading_prefix_cache);
        params.thinking_token_budget = extras
            .thinking_token_budget
            .or(params.thinking_token_budget);
        let mut engine_request = EngineCoreRequest::new(
            ids::engine_request_id(&prompt.request_id),
            prompt.token_ids,
            params,
        );
        engine_request.external_req_id = Some(prompt.request_id);
        engine_request.priority = prompt.priority;
        engine_request.cache_salt = prompt.cache_salt;
        engine_request.lora_request = prompt.lora_request;
        Samples::start(
            &self.client,
            &self.model,
            vec![engine_request],
            &self.config,
        )
        .await
    }
}

/// `GenerateLogProbs`: token ids, logprobs and ranks (tokens mode), or chat logprobs
/// with every candidate (text mode).
fn step_logprobs(
    positions: Option<Vec<PositionLogprobs>>,
    text_mode: bool,
) -> Option<GenerateLogprobs> {
    let positions = positions?;
    if text_mode {
        return Some(GenerateLogprobs::Text(logprobs::chat(positions, Some(-1))));
    }
    let entry = |c: &Candidate| TokenLogprob {
        token_id: c.id,
        logprob: c.logprob,
        rank: c.rank,
    };
    let content = positions
        .iter()
        .map(|p| TokenLogprobEntry {
            sampled: entry(&p.sampled),
            top_logprobs: p.candidates.iter().map(entry).collect(),
        })
        .collect();
    Some(GenerateLogprobs::Tokens { content })
}

impl AcceptedGenerate {
    fn mode(&self) -> &'static str {
        if self.text_mode { "text" } else { "tokens" }
    }

    /// The usage of choice `index` (continuous usage stats), or of every choice.
    fn usage(&self, index: Option<usize>, details: bool) -> Usage {
        let output = match index {
            Some(i) => self.samples.get(i).map_or(0, |g| g.num_output_tokens),
            None => self.samples.num_output_tokens(),
        };
        let mut usage = Usage::new(self.prompt_token_ids.len() as u64, output as u64);
        if details {
            // vLLM dumps these `UsageInfo`s with every field (only the final usage
            // chunk drops the nulls).
            usage.prompt_tokens_details = Emit::null();
            usage.completion_tokens_details = Emit::null();
        }
        usage
    }
}

impl super::Accepted for AcceptedGenerate {
    type Response = GenerateResponse;
    type Stream = GenerateStream;

    fn is_stream(&self) -> bool {
        self.stream
    }

    async fn response(mut self) -> Result<GenerateResponse, ApiError> {
        let count = self.samples.len();
        let mut steps: Vec<Step> = vec![Step::default(); count];
        while let Some((i, step)) = self.samples.next().await {
            steps[i].merge(step.map_err(|e| e.0)?);
        }
        let mut choices = Vec::with_capacity(count);
        for (i, step) in steps.into_iter().enumerate() {
            let finish = step
                .finish
                .ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
            choices.push(GenerateChoice {
                index: i as u32,
                finish_reason: Some(finish.reason),
                weight_versions: super::generation::weight_versions_json(
                    finish.weight_versions.as_deref(),
                ),
                stop_reason: finish.stop_reason,
                token_ids: step.token_ids,
                routed_experts: None,
                sampling_mask: None,
                text: self.text_mode.then_some(step.text),
                logprobs: step_logprobs(step.logprobs, self.text_mode),
            });
        }
        let mut usage = self.usage(None, true);
        // vLLM reads the counts of the final output.
        if self.prompt_tokens_details
            && let Some(last) = self.samples.last_to_finish(0..self.samples.len())
        {
            usage.prompt_tokens_details = Emit::value(last.prompt_tokens_details(false, false));
        }
        Ok(GenerateResponse {
            usage,
            output_mode: self.mode(),
            prompt_logprobs: logprobs::prompt_logprobs(&self.samples),
            request_id: self.request_id,
            model: self.model,
            created: ids::now_secs(),
            prompt_token_id_logprobs: None,
            prompt_token_ids: self.return_token_ids.then_some(self.prompt_token_ids),
            mm_placeholders: None,
            metrics: None,
            kv_transfer_params: self
                .samples
                .kv_transfer_params(0..self.samples.len())
                .map(Value::Object),
            ec_transfer_params: None,
            choices,
        })
    }

    fn into_stream(self) -> GenerateStream {
        GenerateStream {
            prompt_sent: !self.return_token_ids,
            done: false,
            accepted: self,
        }
    }
}

/// One event of a tokens-in stream.
// Chunks are nearly every event: boxing them would cost an allocation per chunk to
// save a few bytes on the one error event of a stream.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum GenerateEvent {
    /// A chunk.
    Chunk(GenerateChunk),
    /// The request failed mid-stream.
    Error(ApiError),
}

/// The chunks of a streamed tokens-in answer. Dropping it aborts the engine request.
pub struct GenerateStream {
    accepted: AcceptedGenerate,
    prompt_sent: bool,
    done: bool,
}

impl std::fmt::Debug for GenerateStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerateStream")
            .field("request_id", &self.accepted.request_id)
            .finish_non_exhaustive()
    }
}

impl GenerateStream {
    /// The next event, `None` after the last.
    pub async fn next(&mut self) -> Option<GenerateEvent> {
        while !self.done {
            let Some((index, step)) = self.accepted.samples.next().await else {
                self.done = true;
                let a = &self.accepted;
                if a.include_usage {
                    return Some(GenerateEvent::Chunk(GenerateChunk {
                        request_id: a.request_id.clone(),
                        usage: Some({
                            let mut usage = a.usage(None, false);
                            // vLLM reads the counts of the first output it streamed.
                            if a.prompt_tokens_details
                                && let Some(first) = a.samples.first_to_report()
                            {
                                usage.prompt_tokens_details =
                                    Emit::value(first.prompt_tokens_details(false, true));
                            }
                            usage
                        }),
                        prompt_token_ids: None,
                        mm_placeholders: None,
                        output_mode: a.mode(),
                        choices: Vec::new(),
                    }));
                }
                break;
            };
            let mut step = match step {
                Ok(step) => step,
                Err(error) => {
                    self.done = true;
                    return Some(GenerateEvent::Error(error.0));
                }
            };
            let a = &self.accepted;
            let finished = step.finish.is_some();
            // Terminal outputs always go out; text mode also sends text held back
            // for stop strings, which can arrive without tokens.
            let has_text = a.text_mode && !step.text.is_empty();
            if step.token_ids.is_empty() && !finished && !has_text {
                continue;
            }
            let finish = step.finish.take();
            let choice = GenerateChoice {
                index: index as u32,
                finish_reason: finish.as_ref().map(|f| f.reason),
                weight_versions: finish.as_ref().and_then(|f| {
                    super::generation::weight_versions_json(f.weight_versions.as_deref())
                }),
                stop_reason: finish.and_then(|f| f.stop_reason),
                token_ids: std::mem::take(&mut step.token_ids),
                routed_experts: None,
                sampling_mask: None,
                text: a.text_mode.then(|| std::mem::take(&mut step.text)),
                logprobs: step_logprobs(step.logprobs.take(), a.text_mode),
            };
            let prompt = (!std::mem::replace(&mut self.prompt_sent, true))
                .then(|| a.prompt_token_ids.clone());
            return Some(GenerateEvent::Chunk(GenerateChunk {
                request_id: a.request_id.clone(),
                usage: a.continuous_usage.then(|| a.usage(Some(index), true)),
                mm_placeholders: prompt.is_some().then_some(None),
                prompt_token_ids: prompt,
                output_mode: a.mode(),
                choices: vec![choice],
            }));
        }
        None
    }
}

impl sse::EventStream for GenerateStream {
    type Event = GenerateEvent;

    async fn next_event(&mut self) -> Option<GenerateEvent> {
        self.next().await
    }

    fn sse_frame(&self, event: &GenerateEvent) -> String {
        match event {
            GenerateEvent::Chunk(chunk) => sse::frame(chunk),
            GenerateEvent::Error(error) => sse::error_frame(error),
        }
    }
}
