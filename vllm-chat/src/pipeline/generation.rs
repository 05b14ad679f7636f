//! One request's generation: the engine's output stream turned into text steps.
//!
//! [`Generation`] owns the engine stream and the request's [`IncrementalDecoder`]. Each
//! engine output becomes a [`Step`]: the released text, the tokens it covers, their
//! logprobs with token text, and the finish when it is the last. A stop string found by
//! the decoder aborts the engine request at once and finishes the step with
//! `finish_reason = "stop"` and the string as `stop_reason`, as vLLM's output processor
//! does. Dropping a `Generation` drops the stream, which aborts the engine request: a
//! client that disconnects mid-stream frees its engine slot.

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use vllm_client::protocol::{EngineCoreOutput, FinishReason, LogprobsLists, StopReason};
use vllm_client::{EngineCoreClient, OutputStream};
use vllm_detok::{DecodeOptions, FinishKind, IncrementalDecoder, LogprobText};

use super::error::ApiError;
use super::model::Model;

/// Why and how a request finished.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    /// `stop`, `length`, `abort`, … (before the chat layer's `tool_calls`).
    pub reason: &'static str,
    /// The stop string or stop token id, `None` for EOS and other reasons.
    pub stop_reason: Option<Value>,
    /// Which weights produced the output tokens (vLLM's `weight_versions`), `None` when
    /// the engines reported no version.
    pub weight_versions: Option<Vec<vllm_client::client::WeightVersionSpan>>,
    /// Prompt tokens the engine found in its prefix cache (vLLM's
    /// `num_cached_tokens`).
    pub num_cached_tokens: i64,
}

/// A token with its logprob and text.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Token id.
    pub id: u32,
    /// Log probability, clamped at -9999 as vLLM does.
    pub logprob: f64,
    /// The token's text (vLLM's `decoded_token`).
    pub text: String,
    /// Its rank among the model's candidates (1 = most likely).
    pub rank: i64,
}

/// One output position's logprobs: the sampled token and the candidates in the
/// engine's order (sampled first, then the top-k, each id once).
#[derive(Debug, Clone, PartialEq)]
pub struct PositionLogprobs {
    /// The sampled token.
    pub sampled: Candidate,
    /// vLLM's logprob dict for the position, in order.
    pub candidates: Vec<Candidate>,
}

/// What one engine output contributes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Step {
    /// Newly released text.
    pub text: String,
    /// The tokens of this step (after a stop string, only those kept).
    pub token_ids: Vec<u32>,
    /// Their logprobs, when requested.
    pub logprobs: Option<Vec<PositionLogprobs>>,
    /// Set on the last step.
    pub finish: Option<Finish>,
}

impl Step {
    /// Appends a later step of the same request.
    pub fn merge(&mut self, next: Step) {
        self.text.push_str(&next.text);
        self.token_ids.extend(next.token_ids);
        if let Some(more) = next.logprobs {
            self.logprobs.get_or_insert_default().extend(more);
        }
        self.finish = next.finish;
    }
}

/// Why a generation failed mid-way.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationError(pub ApiError);

/// vLLM's message for a request the engine finished with `FinishReason.ERROR` (its
/// `EngineGenerateError`, a 500).
pub const ENGINE_FAILED: &str = "the engine failed to process the request";

impl GenerationError {
    /// Whether the engine itself failed the request (it finished it with
    /// `FinishReason.ERROR`), as opposed to a refusal or a frontend error; frontends
    /// other than vLLM's HTTP server word this failure their own way.
    pub fn engine_failed(&self) -> bool {
        self.0.status == 500 && self.0.message == ENGINE_FAILED
    }
}

/// One request in flight on an engine.
pub struct Generation {
    client: EngineCoreClient,
    stream: Option<OutputStream>,
    decoder: IncrementalDecoder,
    logprob_text: Option<LogprobText>,
    /// Token texts of the prompt logprobs, when requested.
    prompt_text: Option<LogprobText>,
    /// The prompt logprobs once the engine sent them: vLLM's list, whose first entry
    /// (the first prompt token, which nothing predicts) is `None`.
    pub prompt_logprobs: Option<Vec<Option<PositionLogprobs>>>,
    /// An error met while merging outputs, reported by the next call.
    pending_error: Option<GenerationError>,
    /// Output tokens so far (vLLM's `num_output_tokens`).
    pub num_output_tokens: usize,
    /// Prompt tokens.
    pub num_prompt_tokens: usize,
    /// Prompt tokens the engine served from its prefix cache, from the prefill
    /// statistics of the first output (vLLM's `RequestOutput.num_cached_tokens`; 0
    /// until then).
    pub num_cached_tokens: i64,
    /// Prompt tokens written to the cache (vLLM's `num_cache_creation_tokens`).
    pub num_cache_creation_tokens: i64,
    /// No output has arrived yet (vLLM's `is_prefilling`).
    prefilling: bool,
    /// Tokens batched into each step (`--stream-interval`, raised by the request's
    /// `stream_interval`); 1 releases every engine output.
    stream_interval: usize,
    /// Output tokens released so far (vLLM's `sent_tokens_offset`).
    sent_tokens: usize,
    /// Outputs held back until the interval fills.
    held: Option<Step>,
    /// The engine's KV-transfer parameters for this request (its KV connector's
    /// answer, on the finishing output): what a prefill instance returns for the
    /// decode instance (vLLM's `RequestOutput.kv_transfer_params`).
    pub kv_transfer_params: Option<serde_json::Map<String, Value>>,
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("num_output_tokens", &self.num_output_tokens)
            .finish_non_exhaustive()
    }
}

impl Generation {
    /// Sends `request` to the engines and prepares its decoder. `stream_interval` is
    /// the server's `--stream-interval`; the request's own raises it.
    pub async fn start(
        client: &EngineCoreClient,
        model: &Model,
        request: vllm_client::protocol::EngineCoreRequest,
        stream_interval: u32,
    ) -> Result<Self, ApiError> {
        let prompt = request.prompt_token_ids.clone().unwrap_or_default();
        model.check_prompt_token_ids(&prompt)?;
        let params = request.sampling_params.clone().unwrap_or_default();
        let options = DecodeOptions {
            skip_special_tokens: params.skip_special_tokens,
            spaces_between_special_tokens: params.spaces_between_special_tokens,
            stop: params.stop.clone(),
            include_stop_str_in_output: params.include_stop_str_in_output,
            min_tokens: usize::try_from(params.min_tokens).unwrap_or(0),
        };
        let decoder = IncrementalDecoder::new(model.tokenizer.clone(), &prompt, options)
            .map_err(|e| ApiError::bad_request(e.to_string(), None))?;
        let logprob_text = params
            .logprobs
            .is_some()
            .then(|| LogprobText::new(model.tokenizer.clone()));
        // vLLM's `RequestState.from_new_request`: the request raises the server's value.
        let stream_interval = params
            .stream_interval
            .map_or(i64::from(stream_interval), |i| {
                i.max(i64::from(stream_interval))
            });
        let prompt_text = params
            .prompt_logprobs
            .is_some()
            .then(|| LogprobText::new(model.tokenizer.clone()));
        let stream = client
            .generate(request)
            .await
            .map_err(|e| ApiError::from_client(&e))?;
        Ok(Self {
            client: client.clone(),
            stream: Some(stream),
            decoder,
            logprob_text,
            prompt_text,
            prompt_logprobs: None,
            pending_error: None,
            num_output_tokens: 0,
            num_prompt_tokens: prompt.len(),
            num_cached_tokens: 0,
            num_cache_creation_tokens: 0,
            prefilling: true,
            stream_interval: usize::try_from(stream_interval).unwrap_or(usize::MAX),
            sent_tokens: 0,
            held: None,
            kv_transfer_params: None,
        })
    }

    /// The next step, or `None` after the finishing step.
    ///
    /// Outputs that arrived while the caller was busy are merged into one step, as
    /// vLLM's `RequestOutputCollector` merges delta outputs for a consumer that lags:
    /// under load a chunk carries several tokens instead of queueing many small ones.
    pub async fn next(&mut self) -> Option<Result<Step, GenerationError>> {
        std::future::poll_fn(|cx| self.poll_step(cx)).await
    }

    /// [`next`](Self::next) as a poll: ready with the next step once an engine output
    /// arrived (then what queued up behind it is merged in).
    pub fn poll_step(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Step, GenerationError>>> {
        if let Some(error) = self.pending_error.take() {
            return std::task::Poll::Ready(Some(Err(error)));
        }
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return std::task::Poll::Ready(None);
            };
            let first = std::task::ready!(stream.poll_next_unpin(cx));
            let step = match (self.step_from(first), self.held.take()) {
                (Ok(step), Some(mut held)) => {
                    held.merge(step);
                    Ok(held)
                }
                (result, _) => result,
            };
            match step {
                Ok(step) if self.holds(&step) => self.held = Some(step),
                result => {
                    self.sent_tokens = self.num_output_tokens;
                    return std::task::Poll::Ready(Some(result));
                }
            }
        }
    }

    /// Whether `step` waits for more tokens (`--stream-interval`): vLLM's
    /// `make_request_output` releases the first output, the last, and any that brings
    /// the unsent tokens to the interval.
    fn holds(&self, step: &Step) -> bool {
        self.stream_interval > 1
            && step.finish.is_none()
            && self.sent_tokens != 0
            && self.num_output_tokens - self.sent_tokens < self.stream_interval
    }

    /// The step of `first` and of what queued up behind it.
    fn step_from(
        &mut self,
        first: Option<Result<EngineCoreOutput, vllm_client::ClientError>>,
    ) -> Result<Step, GenerationError> {
        // Take what is queued right now (cheap), then decode it: outputs that arrive
        // while decoding wait for the next step, so merging never delays a chunk.
        let mut items = vec![first];
        if let Some(stream) = self.stream.as_mut() {
            while let Some(Some(Ok(last))) = items.last() {
                if last.finished() {
                    break;
                }
                match stream.next().now_or_never() {
                    Some(item) => items.push(item),
                    None => break,
                }
            }
        }
        let mut items = items.into_iter();
        let mut step = self.absorb(items.next().flatten())?;
        for item in items {
            match self.absorb(item) {
                Ok(next) => step.merge(next),
                Err(error) => {
                    self.pending_error = Some(error);
                    break;
                }
            }
            if step.finish.is_some() {
                break;
            }
        }
        Ok(step)
    }

    /// One item of the engine stream as a step; errors end the generation.
    fn absorb(
        &mut self,
        item: Option<Result<EngineCoreOutput, vllm_client::ClientError>>,
    ) -> Result<Step, GenerationError> {
        let result = match item {
            Some(Ok(output)) => self.step(output),
            Some(Err(error)) => Err(GenerationError(ApiError::from_client(&error))),
            None => Err(GenerationError(ApiError::internal(
                "the engine stream ended without a finish reason",
            ))),
        };
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    /// Turns one engine output into a step.
    fn step(&mut self, output: EngineCoreOutput) -> Result<Step, GenerationError> {
        if let Some(error) = &output.error {
            // vLLM's `RequestError.to_exception`: a validation error is a 400, a
            // retryable one (e.g. a paused engine) a 503, anything else a 500.
            let message = error.message.clone();
            return Err(GenerationError(if error.code == "validation_error" {
                ApiError::bad_request(message, None)
            } else if error.retryable {
                ApiError::unavailable(message)
            } else {
                ApiError::internal(message)
            }));
        }
        if output.finish_reason == Some(FinishReason::Error) {
            return Err(GenerationError(ApiError::internal(ENGINE_FAILED)));
        }
        if let Some(params) = &output.kv_transfer_params
            && let Value::Object(params) = super::control::json::value_to_json(params)
        {
            self.kv_transfer_params = Some(params);
        }
        if std::mem::take(&mut self.prefilling)
            && let Some(stats) = &output.prefill_stats
        {
            self.num_cached_tokens = stats.num_cached_tokens;
            self.num_cache_creation_tokens = stats.num_cache_creation_tokens;
        }
        let mut step = Step::default();
        let ids = &output.new_token_ids;
        let detok_error = |e: vllm_detok::Error| GenerationError(ApiError::internal(e.to_string()));
        if let (Some(texts), Some(tensors)) =
            (&mut self.prompt_text, &output.new_prompt_logprobs_tensors)
        {
            let lists = tensors.to_lists();
            lists
                .validate()
                .map_err(|e| GenerationError(ApiError::internal(e.to_string())))?;
            let rows = positions(texts, &lists, lists.rows()).map_err(detok_error)?;
            self.prompt_logprobs = Some(
                std::iter::once(None)
                    .chain(rows.into_iter().map(Some))
                    .collect(),
            );
        }
        let mut kept = ids.len();
        match output.finish_reason {
            None => {
                let stop = self
                    .decoder
                    .push_into(ids, &mut step.text)
                    .map_err(detok_error)?;
                if let Some(stop) = stop {
                    // A stop string ends the request here: the engine keeps generating
                    // until told, so abort it.
                    kept = stop.tokens_kept.min(ids.len());
                    let weight_versions = self.weight_versions(self.num_output_tokens + kept);
                    if let Some(stream) = self.stream.take() {
                        self.client.abort(&[stream.request_id()]);
                    }
                    step.finish = Some(Finish {
                        reason: "stop",
                        stop_reason: Some(Value::String(stop.stop)),
                        weight_versions,
                        num_cached_tokens: self.num_cached_tokens,
                    });
                }
            }
            Some(reason) => {
                let kind = match reason {
                    FinishReason::Stop => FinishKind::StopToken,
                    FinishReason::Length | FinishReason::Repetition => FinishKind::Length,
                    FinishReason::Abort | FinishReason::Error => FinishKind::Abort,
                };
                let stop = self
                    .decoder
                    .finish_into(ids, kind, &mut step.text)
                    .map_err(detok_error)?;
                let weight_versions = match &stop {
                    Some(stop) => self
                        .weight_versions(self.num_output_tokens + stop.tokens_kept.min(ids.len())),
                    None => self.weight_versions(usize::MAX),
                };
                self.stream = None;
                step.finish = Some(match stop {
                    Some(stop) => {
                        kept = stop.tokens_kept.min(ids.len());
                        Finish {
                            reason: "stop",
                            stop_reason: Some(Value::String(stop.stop)),
                            weight_versions,
                            num_cached_tokens: self.num_cached_tokens,
                        }
                    }
                    None => Finish {
                        reason: reason.as_str(),
                        stop_reason: output.stop_reason.as_ref().map(|r| match r {
                            StopReason::Token(t) => Value::from(*t),
                            StopReason::Text(s) => Value::String(s.clone()),
                        }),
                        weight_versions,
                        num_cached_tokens: self.num_cached_tokens,
                    },
                });
            }
        }
        step.token_ids = ids[..kept].to_vec();
        self.num_output_tokens += kept;
        if let (Some(texts), Some(lists)) = (&mut self.logprob_text, &output.new_logprobs) {
            step.logprobs = Some(positions(texts, lists, kept).map_err(detok_error)?);
        }
        Ok(step)
    }
}

impl Generation {
    /// vLLM's `prompt_tokens_details` (`PromptTokenUsageInfo`) from this request's
    /// prompt-cache counts: chat answers fill `created_cache_tokens` too
    /// (`_make_prompt_tokens_details`), the others `cached_tokens` alone. A whole
    /// answer writes every field (nulls included), a streamed usage chunk drops the
    /// nulls (`streamed`).
    pub(crate) fn prompt_tokens_details(&self, chat: bool, streamed: bool) -> Value {
        let created = if chat {
            Value::from(self.num_cache_creation_tokens)
        } else {
            Value::Null
        };
        let fields = [
            ("cached_tokens", Value::from(self.num_cached_tokens)),
            ("created_cache_tokens", created),
            ("multimodal_tokens", Value::Null),
        ];
        Value::Object(
            fields
                .into_iter()
                .filter(|(_, value)| !(streamed && value.is_null()))
                .map(|(key, value)| (key.to_owned(), value))
                .collect(),
        )
    }

    /// The weight versions of the output tokens (from the engine stream), cut at
    /// `kept` tokens when a stop string ended the output early (vLLM counts the tokens
    /// it kept).
    fn weight_versions(&self, kept: usize) -> Option<Vec<vllm_client::client::WeightVersionSpan>> {
        let spans = self.stream.as_ref()?.weight_version_spans()?;
        let mut kept_spans: Vec<_> = spans
            .into_iter()
            .filter(|span| span.start < kept || span.start == 0)
            .collect();
        for span in &mut kept_spans {
            span.end = span.end.min(kept);
        }
        Some(kept_spans)
    }
}

/// The generations of one answer's choices in flight together: the `n` samples of a
/// request (vLLM's child requests, [`vllm_client::client::child_requests`]), or the
/// `prompts × n` of a batched completion. Choice `i` is generation `i`; their steps
/// come as they arrive, each tagged with its choice. Each choice is its own engine
/// request: a stop string in one aborts that one alone. Dropping `Samples` aborts
/// every unfinished one.
pub struct Samples {
    generations: Vec<Generation>,
    finished: Vec<bool>,
    /// Where the next poll starts, so that no choice starves the others.
    next: usize,
    /// The choice whose step came first, and the one that finished last: the
    /// children whose `RequestOutput` vLLM's serving layer reads the prompt-cache
    /// counts from (the first output of a stream, the final one of a whole answer).
    first: Option<usize>,
    /// For each choice, the wait after which it finished (1, 2, …; 0 while running):
    /// choices that finished in one engine step share it, and vLLM handles them in the
    /// engine's order (by index).
    finish_order: Vec<usize>,
    /// How often polling found nothing ready.
    waits: usize,
    /// `--enable-log-requests`: the request's id and prompt tokens, logged with the
    /// output's counts once every choice finished.
    log_as: Option<(String, usize)>,
    /// Each choice's finish reason, for the log.
    finish_reasons: Vec<&'static str>,
}

impl std::fmt::Debug for Samples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Samples")
            .field("choices", &self.generations.len())
            .finish_non_exhaustive()
    }
}

impl Samples {
    /// Sends the child requests of each request, in order (request `p`'s child `j`
    /// becomes choice `p × n + j`, as vLLM indexes a batched completion's choices).
    /// `config` says how to stream them (`--stream-interval`) and whether to log them
    /// (`--enable-log-requests`).
    pub async fn start(
        client: &EngineCoreClient,
        model: &Model,
        requests: Vec<vllm_client::protocol::EngineCoreRequest>,
        config: &super::PipelineConfig,
    ) -> Result<Self, ApiError> {
        let stream_interval = config.stream_interval;
        let log_as = config
            .log_requests
            .then(|| requests.first())
            .flatten()
            .map(|r| {
                let id = r
                    .external_req_id
                    .clone()
                    .unwrap_or_else(|| r.request_id.clone());
                let prompts = requests
                    .iter()
                    .map(|r| r.prompt_token_ids.as_ref().map_or(0, Vec::len));
                (id, prompts.sum())
            });
        let mut generations = Vec::new();
        for request in requests {
            let children = vllm_client::client::child_requests(request)
                .map_err(|e| ApiError::bad_request(e.to_string(), Some("seed")))?;
            for child in children {
                generations.push(Generation::start(client, model, child, stream_interval).await?);
            }
        }
        Ok(Self {
            finished: vec![false; generations.len()],
            finish_order: vec![0; generations.len()],
            generations,
            next: 0,
            first: None,
            waits: 0,
            log_as,
            finish_reasons: Vec::new(),
        })
    }

    /// The KV-transfer parameters of the final output of choices `range` (the
    /// choice that finished last), which vLLM's answers carry.
    pub fn kv_transfer_params(
        &self,
        range: std::ops::Range<usize>,
    ) -> Option<serde_json::Map<String, Value>> {
        self.last_to_finish(range)?.kv_transfer_params.clone()
    }

    /// The generation whose step came first (the first output vLLM's streaming
    /// serving code sees), or choice 0 before any.
    pub fn first_to_report(&self) -> Option<&Generation> {
        self.generations.get(self.first.unwrap_or(0))
    }

    /// The generation that finished last among choices `range` (the final output of
    /// those choices' request), or the range's last choice before any finished.
    pub fn last_to_finish(&self, range: std::ops::Range<usize>) -> Option<&Generation> {
        let index = range
            .clone()
            .filter(|&i| self.finish_order.get(i).is_some_and(|&order| order > 0))
            .max_by_key(|&i| (self.finish_order[i], i))
            .unwrap_or(range.end.saturating_sub(1));
        self.generations.get(index)
    }

    /// Number of choices.
    pub fn len(&self) -> usize {
        self.generations.len()
    }

    /// Whether there is no choice.
    pub fn is_empty(&self) -> bool {
        self.generations.is_empty()
    }

    /// Choice `index`'s generation.
    pub fn get(&self, index: usize) -> Option<&Generation> {
        self.generations.get(index)
    }

    /// Output tokens of every choice (the usage's `completion_tokens`).
    pub fn num_output_tokens(&self) -> usize {
        self.generations.iter().map(|g| g.num_output_tokens).sum()
    }

    /// The next step of any choice, with its index; `None` once every choice finished.
    /// A choice's error is returned as it happens (the caller ends the answer, as
    /// vLLM does).
    pub async fn next(&mut self) -> Option<(usize, Result<Step, GenerationError>)> {
        std::future::poll_fn(|cx| {
            let n = self.generations.len();
            for offset in 0..n {
                let index = (self.next + offset) % n;
                if self.finished[index] {
                    continue;
                }
                match self.generations[index].poll_step(cx) {
                    std::task::Poll::Ready(Some(step)) => {
                        self.first.get_or_insert(index);
                        if step.as_ref().map_or(true, |s| s.finish.is_some()) {
                            self.finished[index] = true;
                            self.finish_order[index] = self.waits + 1;
                            if self.log_as.is_some() {
                                let reason = match &step {
                                    Ok(step) => step.finish.as_ref().map_or("", |f| f.reason),
                                    Err(_) => "error",
                                };
                                self.finish_reasons.push(reason);
                            }
                        }
                        self.next = (index + 1) % n;
                        return std::task::Poll::Ready(Some((index, step)));
                    }
                    std::task::Poll::Ready(None) => self.finished[index] = true,
                    std::task::Poll::Pending => {}
                }
            }
            if self.finished.iter().all(|&f| f) {
                self.log_finished();
                std::task::Poll::Ready(None)
            } else {
                self.waits += 1;
                std::task::Poll::Pending
            }
        })
        .await
    }
}

impl Samples {
    /// `--enable-log-requests`: one INFO line when the last choice finished.
    fn log_finished(&mut self) {
        if let Some((request_id, prompt_tokens)) = self.log_as.take() {
            tracing::info!(
                request_id,
                prompt_tokens,
                output_tokens = self.num_output_tokens(),
                finish_reason = self.finish_reasons.join(","),
                "request finished"
            );
        }
    }
}

/// The logprobs of the first `rows` positions of an engine step: token texts from
/// `texts` (which advances its context by each sampled token), candidates in the engine's
/// order with an id seen twice keeping its first place, as vLLM's logprob dict does.
pub fn positions(
    texts: &mut LogprobText,
    lists: &LogprobsLists,
    rows: usize,
) -> Result<Vec<PositionLogprobs>, vllm_detok::Error> {
    let cols = lists.cols();
    let mut out = Vec::with_capacity(rows);
    let mut ids = Vec::with_capacity(cols);
    for row in 0..rows.min(lists.rows()) {
        // Column 0 is the sampled token with its own rank; column c is the c-th best.
        let sampled_rank = lists.rank(row).map_or(1, i64::from);
        ids.clear();
        ids.extend((0..cols).filter_map(|col| {
            let (id, _) = lists.entry(row, col)?;
            Some(u32::try_from(id).unwrap_or(0))
        }));
        let token_texts = texts.position(&ids)?;
        let mut candidates: Vec<Candidate> = Vec::with_capacity(ids.len());
        let entries = (0..cols).filter_map(|col| lists.entry(row, col).map(|e| (col, e)));
        for ((col, (_, logprob)), (&id, text)) in entries.zip(ids.iter().zip(token_texts)) {
            let logprob = f64::from(logprob).max(-9999.0);
            let rank = if col == 0 { sampled_rank } else { col as i64 };
            match candidates.iter_mut().find(|c| c.id == id) {
                Some(existing) => {
                    existing.logprob = logprob;
                    existing.text = text.into_owned();
                    existing.rank = rank;
                }
                None => candidates.push(Candidate {
                    id,
                    logprob,
                    text: text.into_owned(),
                    rank,
                }),
            }
        }
        if let Some(mut sampled) = candidates.first().cloned() {
            // The sampled entry itself keeps the engine's rank for it.
            sampled.rank = sampled_rank;
            out.push(PositionLogprobs {
                sampled,
                candidates,
            });
        }
    }
    Ok(out)
}

/// vLLM's `weight_versions`: a list of `{"version", "start", "end"}` spans.
pub(crate) fn weight_versions_json(
    spans: Option<&[vllm_client::client::WeightVersionSpan]>,
) -> Option<Value> {
    spans.map(|spans| {
        Value::Array(
            spans
                .iter()
                .map(|s| serde_json::json!({"version": s.version, "start": s.start, "end": s.end}))
                .collect(),
        )
    })
}
