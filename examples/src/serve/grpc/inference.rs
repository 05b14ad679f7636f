//! `vllm.Inference`: `Generate` and `GenerateStream`, tokens (or text) in, tokens and
//! text out, as vllm-rs 0.33.0 answers them.
//!
//! A request is checked with vllm-rs's rules and messages (`prepare`), becomes a
//! [`TokensPrompt`] and goes through the pipeline's tokens-in path
//! ([`Pipeline::start_tokens`](vllm_chat::pipeline::Pipeline::start_tokens), the one
//! `/inference/v1/generate` uses): sampling-parameter checks, engine request,
//! detokenization, stop strings. What vllm-rs does:
//! - one sequence per request (`num_sequences > 1` is refused);
//! - `max_new_tokens = 0` means "up to the context length";
//! - candidate tokens are the top-n of each position (`CandidateTokens.top_n`, with
//!   `output_logprobs` / `prompt_logprobs`): the engine's top-k columns, never its
//!   column 0 (the sampled or prompt token) unless that token is one of them; `all`
//!   asks for the whole vocabulary (refused above `--max-logprobs`); a list of token
//!   ids returns no candidates;
//! - an adapter on engines without LoRA is `FAILED_PRECONDITION`; a request the
//!   engine fails is `INTERNAL` "engine failed during generation"; a call past the
//!   caller's `grpc-timeout` ends `DEADLINE_EXCEEDED` (unary or streamed, enforced by
//!   the server: `super::deadline`);
//! - the stream sends `prompt_info` alone first, then one message per engine step;
//!   the final one carries `finish_info`;
//! - an omitted temperature is 0; omitted top-k, top-p, min-p and repetition penalty
//!   are the model's `generation_config.json` values (at temperature 0, vLLM's
//!   `SamplingParams.__post_init__` then resets top-k and top-p for greedy sampling, as
//!   the engine does on decoding; vllm-rs sends them unreset);
//! - `watermarking` (default true), `bypass_prefix_cache` and `thinking_token_budget`
//!   (-1: none) go to the engines; `truncate_prompt_tokens` keeps the prompt's last
//!   tokens; `session_id`, `kv_hints`, `engine_reasoning_gate` and the KV-transfer
//!   parameters are accepted and not used.

use std::pin::Pin;

use futures::Stream;
use tonic::{Request, Response, Status};
use vllm_chat::pipeline::generation::{
    Candidate, GenerationError, PositionLogprobs, Samples, Step,
};
use vllm_chat::pipeline::{EngineExtras, TokensPrompt, ids};
use vllm_chat::render_mode;

use super::pb;
use super::{GrpcState, status};

/// The `vllm.Inference` service.
#[derive(Debug, Clone)]
pub struct Inference {
    /// What it serves.
    pub state: GrpcState,
}

/// What the answer includes (`ResponseOptions`, resolved).
#[derive(Debug, Clone, Copy)]
struct Include {
    prompt_token_ids: bool,
    /// Candidates per prompt position, with prompt logprobs.
    prompt_logprobs: Option<usize>,
    text: bool,
    token_ids: bool,
    /// Candidates per output position, with output logprobs.
    logprobs: Option<usize>,
}

/// A random request id in vllm-rs's form (a UUID v4).
fn uuid() -> String {
    let hex = format!("{}{}", ids::random_hex(), ids::random_hex());
    let variant = ["8", "9", "a", "b"][usize::from(hex.as_bytes()[16] % 4)];
    format!(
        "{}-{}-4{}-{}{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        variant,
        &hex[17..20],
        &hex[20..32]
    )
}

fn invalid(message: impl Into<String>) -> Status {
    Status::invalid_argument(message.into())
}

/// `[1, 2]` as vllm-rs lists token ids in its messages.
fn list(ids: &[u64]) -> String {
    let items: Vec<String> = ids.iter().map(u64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// vllm-rs's out-of-vocabulary check of one field's token ids.
fn check_vocab(
    field: &str,
    ids: impl IntoIterator<Item = u64>,
    vocab_size: u64,
) -> Result<(), Status> {
    let bad: Vec<u64> = ids.into_iter().filter(|&id| id >= vocab_size).collect();
    if bad.is_empty() {
        Ok(())
    } else {
        Err(invalid(format!(
            "token_id(s) {} in {field} are out of vocabulary. Vocabulary size: {vocab_size}",
            list(&bad)
        )))
    }
}

/// The number of candidates a `CandidateTokens` asks for (`all`: the vocabulary);
/// `None` for a list of token ids, which vllm-rs accepts and answers with no logprobs
/// at all.
fn candidates(select: Option<&pb::CandidateTokens>, vocab_size: u64) -> Option<i64> {
    match select.and_then(|c| c.select.as_ref()) {
        Some(pb::candidate_tokens::Select::TopN(n)) => Some(i64::from(*n)),
        Some(pb::candidate_tokens::Select::All(true)) => {
            Some(i64::try_from(vocab_size).unwrap_or(i64::MAX))
        }
        Some(pb::candidate_tokens::Select::TokenIds(_)) => None,
        _ => Some(0),
    }
}

/// A request checked with vllm-rs's rules, as the pipeline's tokens-in prompt.
fn prepare(
    state: &GrpcState,
    request: pb::GenerateRequest,
) -> Result<(TokensPrompt, Include), Status> {
    let api = &state.app.api;
    let model = &api.model;
    let pipeline = &state.app.pipeline;
    let max_logprobs = pipeline.config().max_logprobs;
    let vocab_size = model.vocab_size;
    let request_id = if request.request_id.is_empty() {
        uuid()
    } else {
        request.request_id.clone()
    };
    if !request.model.is_empty() && request.model != api.served_model_name {
        return Err(Status::not_found(format!(
            "model `{}` not found",
            request.model
        )));
    }
    let lora_request = if request.lora_name.is_empty() {
        None
    } else {
        // vllm-rs: an adapter on engines started without LoRA is a precondition
        // failure, before the adapter is looked up.
        let engines = pipeline.client().engines();
        if engines.is_empty() || !engines.iter().all(|e| e.ready.supports_lora) {
            return Err(Status::failed_precondition(
                "engine was not started with LoRA enabled",
            ));
        }
        Some(api.loras.get(&request.lora_name).ok_or_else(|| {
            Status::not_found(format!(
                "LoRA adapter `{}` is not loaded",
                request.lora_name
            ))
        })?)
    };
    if !request.media.is_empty() {
        return Err(invalid(
            "multimodal input is not supported by this chat renderer",
        ));
    }
    let mut token_ids = match request.prompt {
        None => return Err(invalid("prompt is required")),
        Some(pb::generate_request::Prompt::TokenIds(ids)) => {
            if ids.ids.is_empty() {
                return Err(invalid(format!(
                    "text request `{request_id}` must contain at least one prompt token ID"
                )));
            }
            ids.ids
        }
        Some(pb::generate_request::Prompt::Text(text)) => {
            let ids = model.encode(&text).map_err(|e| invalid(e.to_string()))?;
            if ids.is_empty() {
                return Err(invalid(format!(
                    "generate request `{request_id}` has an empty prompt_token_ids"
                )));
            }
            ids
        }
    };
    let keep = request.truncate_prompt_tokens as usize;
    if keep > 0 && keep < token_ids.len() {
        token_ids.drain(..token_ids.len() - keep);
    }
    check_vocab(
        "prompt",
        token_ids.iter().map(|&id| u64::from(id)),
        vocab_size,
    )?;
    let sampling = request.sampling.unwrap_or_default();
    if sampling.num_sequences > 1 {
        return Err(invalid("num_sequences > 1 is not supported"));
    }
    // vllm-rs: an omitted temperature is 0 (greedy); omitted top-k, top-p, min-p and
    // repetition penalty take the model's generation config.
    let defaults = render_mode::SamplingDefaults::from_generation_config(
        model.renderer.model_files().generation_config.as_ref(),
    );
    let default = |key: &str| defaults.0.get(key).and_then(serde_json::Value::as_f64);
    let temperature = request.temperature.unwrap_or(0.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(invalid(format!(
            "temperature must be in [0, 2], got {temperature}"
        )));
    }
    if let Some(top_p) = sampling.top_p
        && !(top_p > 0.0 && top_p <= 1.0)
    {
        return Err(invalid(format!("top_p must be in (0, 1], got {top_p}")));
    }
    let decoding = request.decoding.unwrap_or_default();
    if decoding.repetition_penalty < 0.0 {
        return Err(invalid(format!(
            "repetition_penalty must be in (0, inf), got {}",
            decoding.repetition_penalty
        )));
    }
    let stopping = request.stopping.unwrap_or_default();
    let stopping_budget = stopping.thinking_token_budget;
    if stopping.max_new_tokens > 0 && stopping.min_new_tokens > stopping.max_new_tokens {
        return Err(invalid(format!(
            "`min_tokens` must be less than or equal to `max_tokens`, got min_tokens={}, max_tokens={}",
            stopping.min_new_tokens, stopping.max_new_tokens
        )));
    }
    check_vocab(
        "logit_bias",
        decoding.logit_bias.keys().map(|&id| u64::from(id)),
        vocab_size,
    )?;
    check_vocab(
        "allowed_token_ids",
        decoding.allowed_token_ids.iter().map(|&id| u64::from(id)),
        // vllm-rs checks these against the tokenizer (vocabulary plus added tokens).
        model.tokenizer.vocab_size() as u64,
    )?;
    check_vocab(
        "stop_token_ids",
        stopping.stop_token_ids.iter().map(|&id| u64::from(id)),
        vocab_size,
    )?;
    if decoding
        .bad_words_token_ids
        .iter()
        .any(|w| w.ids.is_empty())
    {
        return Err(invalid(
            "bad_words_token_ids must not contain empty sequences",
        ));
    }
    let structured = structured_outputs(decoding.structured_output)?;
    let response = request.response.unwrap_or_default();
    let check_logprobs = |kind: &str, n: i64| {
        if max_logprobs != -1 && n > max_logprobs {
            Err(invalid(format!(
                "requested {kind} of {n}, which is greater than max allowed: {max_logprobs}"
            )))
        } else {
            Ok(())
        }
    };
    let logprobs = match candidates(response.output_candidates.as_ref(), vocab_size) {
        Some(n) if response.output_logprobs => {
            check_logprobs("logprobs", n)?;
            Some(n)
        }
        _ => None,
    };
    let prompt_logprobs = match candidates(response.prompt_candidates.as_ref(), vocab_size) {
        Some(n) if response.prompt_logprobs => {
            check_logprobs("prompt_logprobs", n)?;
            Some(n)
        }
        _ => None,
    };
    let max_model_len = state.max_model_len();
    if token_ids.len() as u64 > max_model_len {
        return Err(invalid(format!(
            "This model's maximum context length is {max_model_len} tokens. However, your prompt \
             contains {} input tokens, which exceeds this limit even without any output tokens. \
             Please reduce the length of the input prompt.",
            token_ids.len()
        )));
    }
    let include = Include {
        prompt_token_ids: response.prompt_token_ids,
        prompt_logprobs: prompt_logprobs.map(|n| usize::try_from(n).unwrap_or(0)),
        text: response.output_text.unwrap_or(true),
        token_ids: response.output_token_ids,
        logprobs: logprobs.map(|n| usize::try_from(n).unwrap_or(0)),
    };
    let params = render_mode::SamplingParams {
        n: 1,
        temperature: f64::from(temperature),
        top_p: Some(
            sampling
                .top_p
                .map(f64::from)
                .or(default("top_p"))
                .unwrap_or(1.0),
        ),
        top_k: sampling
            .top_k
            .map(i64::from)
            .or(defaults.0.get("top_k").and_then(serde_json::Value::as_i64))
            .unwrap_or(0),
        min_p: Some(
            sampling
                .min_p
                .map(f64::from)
                .or(default("min_p"))
                .unwrap_or(0.0),
        ),
        seed: sampling.seed,
        presence_penalty: f64::from(decoding.presence_penalty),
        frequency_penalty: f64::from(decoding.frequency_penalty),
        repetition_penalty: if decoding.repetition_penalty == 0.0 {
            default("repetition_penalty").unwrap_or(1.0)
        } else {
            f64::from(decoding.repetition_penalty)
        },
        logit_bias: (!decoding.logit_bias.is_empty()).then(|| {
            decoding
                .logit_bias
                .iter()
                .map(|(id, bias)| (id.to_string(), serde_json::Value::from(f64::from(*bias))))
                .collect()
        }),
        allowed_token_ids: (!decoding.allowed_token_ids.is_empty())
            .then_some(decoding.allowed_token_ids),
        structured_outputs: structured,
        // Up to the engines' context length (vllm-rs's `max_model_len`).
        max_tokens: (i64::try_from(max_model_len).unwrap_or(i64::MAX) - token_ids.len() as i64)
            .min(match stopping.max_new_tokens {
                0 => i64::MAX,
                max => i64::from(max),
            }),
        min_tokens: i64::from(stopping.min_new_tokens),
        stop: stopping.stop_strings,
        stop_token_ids: stopping.stop_token_ids,
        include_stop_str_in_output: stopping.include_stop_strings,
        ignore_eos: stopping.ignore_eos,
        logprobs,
        prompt_logprobs,
        skip_special_tokens: response.skip_special_tokens.unwrap_or(true),
        spaces_between_special_tokens: true,
        // Delta outputs: the stream sends each step, the unary answer joins them.
        output_kind: 1,
        ..render_mode::SamplingParams::default()
    };
    let bad_words: Vec<Vec<u32>> = decoding
        .bad_words_token_ids
        .into_iter()
        .map(|w| w.ids)
        .collect();
    let kv = request.kv.unwrap_or_default();
    let extras = EngineExtras {
        bad_words_token_ids: (!bad_words.is_empty()).then_some(bad_words),
        watermarking: Some(request.watermarking.unwrap_or(true)),
        skip_reading_prefix_cache: kv.bypass_prefix_cache.then_some(true),
        thinking_token_budget: stopping_budget.filter(|&budget| budget >= 0),
    };
    Ok((
        TokensPrompt {
            request_id,
            token_ids,
            params,
            lora_request,
            priority: i64::from(request.priority),
            cache_salt: (!kv.cache_salt.is_empty()).then_some(kv.cache_salt),
            extras,
        },
        include,
    ))
}

/// The structured-output constraint, with vllm-rs's check of a JSON schema.
fn structured_outputs(
    constraint: Option<pb::decoding_parameters::StructuredOutput>,
) -> Result<Option<render_mode::StructuredOutputsParams>, Status> {
    use pb::decoding_parameters::StructuredOutput as S;
    let mut params = render_mode::StructuredOutputsParams::default();
    match constraint {
        None => return Ok(None),
        Some(S::Json(schema)) => {
            params.json = Some(
                serde_json::from_str(&schema)
                    .map_err(|e| invalid(format!("invalid json schema: {e}")))?,
            );
        }
        Some(S::Regex(regex)) => params.regex = Some(regex),
        Some(S::Choice(choices)) => params.choice = Some(choices.choices),
        Some(S::Grammar(grammar)) => params.grammar = Some(grammar),
        Some(S::JsonObject(on)) => {
            if !on {
                return Ok(None);
            }
            params.json_object = Some(true);
        }
        Some(S::StructuralTag(tag)) => params.structural_tag = Some(tag),
    }
    Ok(Some(params))
}

/// The engine's top-k columns of a position (column `c` holds the `c`-th best token),
/// without its column 0, the sampled (or prompt) token, as vllm-rs lists candidates.
/// vLLM's logprob dict keeps each id once: the sampled token, listed first, was also
/// one of the columns exactly when no other entry holds its rank (the column it took);
/// a sampled token that ties a column's logprob but is not that column stays out.
fn top_columns(position: &PositionLogprobs) -> Vec<&Candidate> {
    let Some((sampled, columns)) = position.candidates.split_first() else {
        return Vec::new();
    };
    let mut top: Vec<&Candidate> = columns.iter().collect();
    if !columns.iter().any(|c| c.rank == sampled.rank) {
        top.push(sampled);
    }
    top
}

/// Logprobs, ranks and candidates of some positions (`None`: a position nothing
/// predicts, the prompt's first). Candidates are the top-`n`, best first.
fn logprob_columns(
    positions: &[Option<PositionLogprobs>],
    n: usize,
) -> (Vec<f32>, Vec<u32>, Vec<pb::CandidateTokenInfo>) {
    let mut logprobs = Vec::with_capacity(positions.len());
    let mut ranks = Vec::with_capacity(positions.len());
    let mut candidates = Vec::with_capacity(positions.len());
    for position in positions {
        let Some(position) = position else {
            logprobs.push(0.0);
            ranks.push(0);
            candidates.push(pb::CandidateTokenInfo::default());
            continue;
        };
        logprobs.push(position.sampled.logprob as f32);
        ranks.push(u32::try_from(position.sampled.rank.max(0)).unwrap_or(u32::MAX));
        let mut top = top_columns(position);
        top.retain(|c| c.rank >= 1 && c.rank as usize <= n);
        top.sort_by_key(|c| c.rank);
        candidates.push(pb::CandidateTokenInfo {
            tokens: top
                .into_iter()
                .map(|c| pb::candidate_token_info::TokenInfo {
                    id: c.id,
                    logprob: c.logprob as f32,
                    rank: u32::try_from(c.rank).unwrap_or(u32::MAX),
                })
                .collect(),
        });
    }
    (logprobs, ranks, candidates)
}

/// A generation's failure as vllm-rs's status: an engine that failed the request
/// (vLLM's HTTP server: "the engine failed to process the request") is
/// `INTERNAL` "engine failed during generation"; other errors keep their message.
fn failure(error: &GenerationError) -> Status {
    if error.engine_failed() {
        Status::internal("engine failed during generation")
    } else {
        status(&error.0)
    }
}

/// A request in flight: its samples and what it has answered so far.
struct Running {
    samples: Samples,
    include: Include,
    prompt: Vec<u32>,
    output_tokens: u32,
    last_token: Option<u32>,
}

impl Running {
    /// `prompt_info`: the prompt's length, and its ids and logprobs when asked.
    fn prompt_info(&self) -> pb::PromptInfo {
        let mut info = pb::PromptInfo {
            num_prompt_tokens: u32::try_from(self.prompt.len()).unwrap_or(u32::MAX),
            ..pb::PromptInfo::default()
        };
        if self.include.prompt_token_ids {
            info.token_ids = self.prompt.clone();
        }
        if let Some(n) = self.include.prompt_logprobs
            && let Some(positions) = self.samples.get(0).and_then(|g| g.prompt_logprobs.as_ref())
        {
            let (logprobs, ranks, candidates) = logprob_columns(positions, n);
            info.logprobs = logprobs;
            info.ranks = ranks;
            info.candidate_tokens = candidates;
        }
        info
    }

    /// One step as `SequenceOutput` (with `finish_info` on the last).
    fn output(&mut self, step: Step) -> pb::SequenceOutput {
        let count = u32::try_from(step.token_ids.len()).unwrap_or(u32::MAX);
        self.output_tokens += count;
        if let Some(&last) = step.token_ids.last() {
            self.last_token = Some(last);
        }
        let mut output = pb::SequenceOutput {
            index: 0,
            num_tokens: count,
            ..pb::SequenceOutput::default()
        };
        if self.include.text {
            output.text = step.text;
        }
        if let Some(n) = self.include.logprobs {
            let positions: Vec<Option<PositionLogprobs>> = step
                .logprobs
                .unwrap_or_default()
                .into_iter()
                .map(Some)
                .collect();
            let (logprobs, ranks, candidates) = logprob_columns(&positions, n);
            output.logprobs = logprobs;
            output.ranks = ranks;
            output.candidate_tokens = candidates;
        }
        if self.include.token_ids {
            output.token_ids = step.token_ids;
        }
        output.finish_info = step.finish.map(|finish| self.finish_info(finish));
        output
    }

    fn finish_info(&self, finish: vllm_chat::pipeline::generation::Finish) -> pb::FinishInfo {
        use pb::finish_info::{FinishReason, StopReason};
        let reason = match finish.reason {
            "length" => FinishReason::Length,
            "stop" => FinishReason::Stop,
            "abort" => FinishReason::Aborted,
            _ => FinishReason::NotFinished,
        };
        let stop_reason = match (&finish.stop_reason, reason) {
            (Some(serde_json::Value::String(s)), _) => Some(StopReason::StopString(s.clone())),
            (Some(serde_json::Value::Number(id)), _) => id
                .as_u64()
                .and_then(|id| u32::try_from(id).ok())
                .map(StopReason::StopTokenId),
            (None, FinishReason::Stop) => self.last_token.map(StopReason::EosTokenId),
            _ => None,
        };
        pb::FinishInfo {
            num_output_tokens: self.output_tokens,
            finish_reason: reason as i32,
            stop_reason,
            kv_transfer_params: None,
            ec_transfer_params: None,
            num_cached_tokens: Some(u32::try_from(finish.num_cached_tokens.max(0)).unwrap_or(0)),
        }
    }
}

impl Inference {
    /// `Generate`'s work: the whole answer once the request finished.
    async fn generate_whole(
        &self,
        request: Request<pb::GenerateRequest>,
    ) -> Result<Response<pb::GenerateResponse>, Status> {
        let mut running = self.start(request.into_inner()).await?;
        let mut whole = Step::default();
        while let Some((_, step)) = running.samples.next().await {
            whole.merge(step.map_err(|e| failure(&e))?);
        }
        if whole.finish.is_none() {
            return Err(Status::internal("the request ended without a finish"));
        }
        let prompt_info = running.prompt_info();
        let outputs = running.output(whole);
        Ok(Response::new(pb::GenerateResponse {
            prompt_info: Some(prompt_info),
            outputs: Some(outputs),
        }))
    }

    async fn start(&self, request: pb::GenerateRequest) -> Result<Running, Status> {
        let (prompt, include) = prepare(&self.state, request)?;
        let tokens = prompt.token_ids.clone();
        let samples = self
            .state
            .app
            .pipeline
            .start_tokens(prompt)
            .await
            .map_err(|e| status(&e))?;
        Ok(Running {
            samples,
            include,
            prompt: tokens,
            output_tokens: 0,
            last_token: None,
        })
    }
}

type GenerateStreamItems = Pin<Box<dyn Stream<Item = Result<pb::GenerateResponse, Status>> + Send>>;

#[tonic::async_trait]
impl pb::inference_server::Inference for Inference {
    async fn generate(
        &self,
        request: Request<pb::GenerateRequest>,
    ) -> Result<Response<pb::GenerateResponse>, Status> {
        // Past the caller's `grpc-timeout` the server answers DEADLINE_EXCEEDED and
        // drops this call (`super::deadline`).
        self.generate_whole(request).await
    }

    type GenerateStreamStream = GenerateStreamItems;

    async fn generate_stream(
        &self,
        request: Request<pb::GenerateRequest>,
    ) -> Result<Response<Self::GenerateStreamStream>, Status> {
        let running = self.start(request.into_inner()).await?;
        // The prompt info goes first, once the first step came (it carries the prompt
        // logprobs); then one message per step. Dropping the stream (a client that
        // goes away) drops the samples, which aborts the engine request.
        let stream = futures::stream::unfold(
            (running, false, false),
            |(mut running, prompt_sent, done)| async move {
                if done {
                    return None;
                }
                let (message, finished) = match running.samples.next().await {
                    None => return None,
                    Some((_, Err(error))) => (Err(failure(&error)), true),
                    Some((_, Ok(step))) => {
                        let finished = step.finish.is_some();
                        if step.token_ids.is_empty() && !finished && step.text.is_empty() {
                            (Ok(None), false)
                        } else {
                            (Ok(Some(running.output(step))), finished)
                        }
                    }
                };
                let mut messages = Vec::with_capacity(2);
                if !prompt_sent {
                    messages.push(Ok(pb::GenerateResponse {
                        prompt_info: Some(running.prompt_info()),
                        outputs: None,
                    }));
                }
                match message {
                    Ok(Some(outputs)) => messages.push(Ok(pb::GenerateResponse {
                        prompt_info: None,
                        outputs: Some(outputs),
                    })),
                    Ok(None) => {}
                    Err(status) => messages.push(Err(status)),
                }
                Some((futures::stream::iter(messages), (running, true, finished)))
            },
        );
        Ok(Response::new(Box::pin(futures::StreamExt::flatten(stream))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: u32, rank: i64) -> Candidate {
        Candidate {
            id,
            logprob: -(rank as f64),
            text: String::new(),
            rank,
        }
    }

    fn ids(position: &PositionLogprobs, n: usize) -> Vec<(u32, u32)> {
        let (_, _, candidates) = logprob_columns(&[Some(position.clone())], n);
        candidates[0]
            .tokens
            .iter()
            .map(|t| (t.id, t.rank))
            .collect()
    }

    #[test]
    fn candidates_are_the_top_columns_without_the_sampled_token() {
        // The sampled token is the best one: vLLM's dict holds it once, in column 1.
        let best = PositionLogprobs {
            sampled: candidate(7, 1),
            candidates: vec![candidate(7, 1), candidate(8, 2)],
        };
        assert_eq!(ids(&best, 2), [(7, 1), (8, 2)]);
        assert_eq!(ids(&best, 1), [(7, 1)]);
        // Outside the top-k: only the columns.
        let worse = PositionLogprobs {
            sampled: candidate(7, 5),
            candidates: vec![candidate(7, 5), candidate(8, 1), candidate(9, 2)],
        };
        assert_eq!(ids(&worse, 2), [(8, 1), (9, 2)]);
        // Ranked first on a tie, but column 1 holds another token: the column only.
        let tie = PositionLogprobs {
            sampled: candidate(7, 1),
            candidates: vec![candidate(7, 1), candidate(8, 1)],
        };
        assert_eq!(ids(&tie, 1), [(8, 1)]);
        // In column 2 (its dict entry took that column's rank).
        let second = PositionLogprobs {
            sampled: candidate(7, 2),
            candidates: vec![candidate(7, 2), candidate(8, 1)],
        };
        assert_eq!(ids(&second, 2), [(8, 1), (7, 2)]);
    }
}
