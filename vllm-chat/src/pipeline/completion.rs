//! A text completion from request to answer, as vLLM's `OpenAIServingCompletion`
//! gives it: one prompt or a batch (text or token ids), `n` samples each, `echo`,
//! logprobs and prompt logprobs, usage.
//!
//! Choice `p × n + j` is sample `j` of prompt `p`, as vLLM indexes them; each is its
//! own engine request (vLLM's child requests), streamed interleaved as outputs arrive.

use vllm_client::protocol::EngineCoreRequest;

use super::error::ApiError;
use super::generation::{Finish, PositionLogprobs, Samples, Step};
use super::kv_transfer::KvRejection;
use super::logprobs::{CompletionLogprobs, prompt_logprobs_json};
use super::{Pipeline, Routing, ids, sampling, sse};
use crate::openai::{
    CompletionChoice, CompletionChunk, CompletionChunkChoice, CompletionPrompt, CompletionRequest,
    CompletionResponse, Emit, PromptInput, Usage,
};

/// One prompt of a completion: what `echo` and the usage need.
#[derive(Debug, Clone)]
struct Prompt {
    token_ids: Vec<u32>,
    /// The prompt's text (for a token prompt, its decoding), for `echo`.
    text: String,
}

/// A completion request accepted and sent to the engine: answer it with
/// [`response`](super::Accepted::response) or [`into_stream`](super::Accepted::into_stream). Dropping it
/// aborts the engine requests.
pub struct AcceptedCompletion {
    request: CompletionRequest,
    id: String,
    model: String,
    prompts: Vec<Prompt>,
    /// Samples per prompt.
    n: usize,
    samples: Samples,
    /// For the text of an echoed first prompt token.
    tokenizer: std::sync::Arc<dyn vllm_detok::Tokenizer>,
    /// Report the prompt-cache counts in the usage.
    prompt_tokens_details: bool,
    /// The engine link, for the rejection notice.
    client: vllm_client::EngineCoreClient,
    /// The KV-transfer rejection notice a failing whole answer sends.
    rejection: Option<KvRejection>,
}

impl std::fmt::Debug for AcceptedCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptedCompletion")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// Accepts a completion request: checks it as vLLM does, tokenizes the prompts and
    /// sends them (`n` samples each) to the engines.
    ///
    /// With [`PipelineConfig::kv_connector`](super::PipelineConfig::kv_connector), a
    /// request with `kv_transfer_params.do_remote_prefill` that fails here (or, not
    /// streamed, while it runs) sends the engines vLLM's KV-transfer rejection notice.
    pub async fn completion(
        &self,
        mut request: CompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedCompletion, ApiError> {
        // vLLM's request model checks these before its handler: no notice for them.
        request.validate()?;
        let rejection = self.kv_rejection(
            request.kv_transfer_params.as_ref(),
            &mut request.request_id,
            routing,
        );
        let streaming = request.stream == Some(true);
        let accepted = self.accept_completion(request, routing).await;
        KvRejection::around_handler(rejection, streaming, &self.client, accepted, |a, r| {
            a.rejection = r
        })
        .await
    }

    async fn accept_completion(
        &self,
        mut request: CompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedCompletion, ApiError> {
        // A request for a LoRA adapter renders as one for the served model.
        let adapter = self.resolve_adapter(request.model.as_deref())?;
        if adapter.is_some() {
            request.model = None;
        }
        let model = self.model.clone();
        let size = match &request.prompt {
            CompletionPrompt::Text(text) => text.len(),
            CompletionPrompt::Texts(texts) => texts.iter().map(String::len).sum(),
            // Token ids are checked, not tokenized.
            CompletionPrompt::Tokens(_) | CompletionPrompt::TokenBatches(_) => 0,
        };
        let (request, rendered) = self
            .config
            .offload
            .run(size, move || {
                let rendered = model.renderer.render_completion(&request);
                (request, rendered)
            })
            .await?;
        let generated = rendered?;
        let model = &self.model;
        let batched = generated.len() > 1;
        let id = match generated.first() {
            // Render mode names the prompts of a batch `cmpl-…-{i}`; the answer is
            // `cmpl-…`, as vLLM's.
            Some(g) if batched => g
                .request_id
                .strip_suffix("-0")
                .unwrap_or(&g.request_id)
                .to_owned(),
            Some(g) => g.request_id.clone(),
            None => {
                return Err(ApiError::bad_request(
                    "Prompt cannot be empty",
                    Some("prompt"),
                ));
            }
        };
        let inputs = request.prompt.prompts();
        let mut prompts = Vec::with_capacity(generated.len());
        let mut engine_requests = Vec::with_capacity(generated.len());
        let mut n = 1;
        for (i, generate) in generated.into_iter().enumerate() {
            let params = sampling::engine_params(
                &generate.engine_sampling_params(),
                model,
                self.config.max_logprobs,
            )?;
            n = usize::try_from(params.n).unwrap_or(1).max(1);
            let text = match inputs.get(i) {
                Some(PromptInput::Text(text)) => (*text).to_owned(),
                _ => model
                    .tokenizer
                    .decode(&generate.token_ids, false)
                    .unwrap_or_default(),
            };
            prompts.push(Prompt {
                token_ids: generate.token_ids.clone(),
                text,
            });
            let external = if batched {
                generate.request_id.clone()
            } else {
                // vLLM names every prompt's engine request `{id}-{i}`.
                format!("{}-0", generate.request_id)
            };
            let mut engine_request = EngineCoreRequest::new(
                ids::engine_request_id(&external),
                generate.token_ids,
                params,
            );
            engine_request.external_req_id = Some(external);
            engine_request.priority = request.priority;
            engine_request.cache_salt = request.cache_salt.clone();
            engine_request.data_parallel_rank = routing.data_parallel_rank;
            engine_request.lora_request = adapter.clone();
            engine_requests.push(engine_request);
        }
        let samples = Samples::start(&self.client, model, engine_requests, &self.config).await?;
        Ok(AcceptedCompletion {
            request,
            id,
            model: self.answer_model(adapter.as_ref()),
            prompts,
            n,
            samples,
            tokenizer: model.tokenizer.clone(),
            prompt_tokens_details: self.config.enable_prompt_tokens_details,
            client: self.client.clone(),
            rejection: None,
        })
    }
}

impl AcceptedCompletion {
    /// The request id (`cmpl-…`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The index of choice `index`'s prompt (there is always at least one prompt).
    fn prompt_index(&self, index: usize) -> usize {
        (index / self.n).min(self.prompts.len().saturating_sub(1))
    }

    /// The prompt of choice `index`.
    fn prompt(&self, index: usize) -> &Prompt {
        &self.prompts[self.prompt_index(index)]
    }

    /// The prompt logprobs of choice `index`, once the engine sent them.
    fn prompt_logprobs(&self, index: usize) -> Option<&[Option<PositionLogprobs>]> {
        self.samples.get(index)?.prompt_logprobs.as_deref()
    }

    /// What `echo` puts before choice `index`'s output: the prompt's text (none with
    /// `return_token_ids`), and its logprobs when logprobs are asked for.
    fn echo(&self, index: usize, logprobs: &mut CompletionLogprobs) -> String {
        let prompt = self.prompt(index);
        if let Some(n) = self.request.logprobs {
            let tokenizer = &self.tokenizer;
            let first = prompt.token_ids.first().copied();
            logprobs.extend_prompt(
                self.prompt_logprobs(index).unwrap_or_default(),
                || {
                    first
                        .and_then(|id| tokenizer.decode(&[id], false).ok())
                        .unwrap_or_default()
                },
                n,
            );
        }
        if self.request.return_token_ids == Some(true) {
            String::new()
        } else {
            prompt.text.clone()
        }
    }

    /// With `echo` and `max_tokens = 0` vLLM generates one token and answers with the
    /// prompt alone.
    fn echo_only(&self) -> bool {
        self.request.echo && self.request.max_tokens == Some(0)
    }
}

impl super::Accepted for AcceptedCompletion {
    type Response = CompletionResponse;
    type Stream = CompletionStream;

    fn is_stream(&self) -> bool {
        self.request.stream == Some(true)
    }

    async fn response(mut self) -> Result<CompletionResponse, ApiError> {
        let rejection = self.rejection.take();
        let client = self.client.clone();
        KvRejection::after(rejection, &client, self.whole().await).await
    }

    fn into_stream(self) -> CompletionStream {
        self.stream()
    }
}

impl AcceptedCompletion {
    /// The whole answer.
    async fn whole(mut self) -> Result<CompletionResponse, ApiError> {
        let count = self.samples.len();
        let mut steps: Vec<Step> = vec![Step::default(); count];
        while let Some((i, step)) = self.samples.next().await {
            steps[i].merge(step.map_err(|e| e.0)?);
        }
        let return_token_ids = self.request.return_token_ids == Some(true);
        let mut choices = Vec::with_capacity(count);
        for (i, step) in steps.into_iter().enumerate() {
            let finish: Finish = step
                .finish
                .ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
            let mut logprobs = CompletionLogprobs::starting_at(0);
            let mut text = if self.request.echo {
                self.echo(i, &mut logprobs)
            } else {
                String::new()
            };
            if !self.echo_only() {
                text.push_str(&step.text);
                if let (Some(positions), Some(n)) = (&step.logprobs, self.request.logprobs) {
                    logprobs.extend(positions, n);
                }
            }
            let prompt = self.prompt(i);
            choices.push(CompletionChoice {
                index: i as u32,
                text,
                logprobs: self.request.logprobs.map(|_| logprobs.take()),
                finish_reason: Some(finish.reason.into()),
                stop_reason: finish.stop_reason,
                token_ids: return_token_ids.then_some(step.token_ids),
                prompt_logprobs: self.prompt_logprobs(i).map(prompt_logprobs_json),
                prompt_token_ids: return_token_ids.then(|| prompt.token_ids.clone()),
                routed_experts: None,
                weight_versions: None,
            });
        }
        let usage = self.usage();
        Ok(CompletionResponse {
            id: self.id,
            object: "text_completion",
            created: ids::now_secs(),
            model: self.model,
            choices,
            service_tier: None,
            system_fingerprint: None,
            usage,
            // vLLM's `final_res_batch[0]`: the first prompt's final output.
            kv_transfer_params: self.samples.kv_transfer_params(0..self.n),
            ec_transfer_params: None,
            metrics: None,
        })
    }

    fn stream(self) -> CompletionStream {
        let options = self.request.stream_options.clone().unwrap_or_default();
        let include_usage = options.include_usage == Some(true);
        let count = self.samples.len();
        CompletionStream {
            created: ids::now_secs(),
            include_usage,
            continuous_usage: include_usage && options.continuous_usage_stats == Some(true),
            return_token_ids: self.request.return_token_ids == Some(true),
            started: vec![false; count],
            logprobs: vec![CompletionLogprobs::starting_at(0); count],
            prompt_seen: vec![false; self.prompts.len()],
            done: false,
            pending_usage: None,
            accepted: self,
        }
    }
}

impl AcceptedCompletion {
    /// vLLM's usage: every prompt once, every choice's output tokens.
    fn usage(&self) -> Usage {
        let prompt: usize = self.prompts.iter().map(|p| p.token_ids.len()).sum();
        let mut usage = Usage::new(prompt as u64, self.samples.num_output_tokens() as u64);
        // vLLM reads the counts of the last prompt's final output.
        let last_prompt = self.samples.len().saturating_sub(self.n)..self.samples.len();
        if self.prompt_tokens_details
            && let Some(last) = self.samples.last_to_finish(last_prompt)
        {
            usage.prompt_tokens_details = Emit::value(last.prompt_tokens_details(false, false));
        }
        usage
    }
}

/// One event of a completion stream.
// Chunks are nearly every event: boxing them would cost an allocation per chunk to
// save a few bytes on the one error event of a stream.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum CompletionEvent {
    /// A chunk (content, then the final usage chunk with `include_usage`).
    Chunk(CompletionChunk),
    /// The request failed mid-stream: vLLM sends the error body as a data event and
    /// ends the stream.
    Error(ApiError),
}

/// The chunks of a streamed completion, in vLLM's order: each choice's chunks as its
/// outputs arrive (choices interleaved), then the usage chunk. Dropping it aborts the
/// engine requests.
pub struct CompletionStream {
    accepted: AcceptedCompletion,
    created: u64,
    include_usage: bool,
    continuous_usage: bool,
    return_token_ids: bool,
    /// Per choice: whether its first chunk (echo, prompt token ids) went out.
    started: Vec<bool>,
    /// Per choice: its logprobs (the text offset carries on from chunk to chunk).
    logprobs: Vec<CompletionLogprobs>,
    /// Per prompt: whether an output of it arrived (its tokens count in the usage).
    prompt_seen: Vec<bool>,
    pending_usage: Option<CompletionChunk>,
    done: bool,
}

impl std::fmt::Debug for CompletionStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionStream")
            .field("id", &self.accepted.id)
            .finish_non_exhaustive()
    }
}

impl CompletionStream {
    /// The next event, `None` after the last.
    pub async fn next(&mut self) -> Option<CompletionEvent> {
        if let Some(chunk) = self.pending_usage.take() {
            return Some(CompletionEvent::Chunk(chunk));
        }
        while !self.done {
            let Some((i, step)) = self.accepted.samples.next().await else {
                self.done = true;
                if self.include_usage {
                    let a = &self.accepted;
                    let prompt: usize = a
                        .prompts
                        .iter()
                        .zip(&self.prompt_seen)
                        .filter(|(_, seen)| **seen)
                        .map(|(p, _)| p.token_ids.len())
                        .sum();
                    let mut usage = Usage::new(prompt as u64, a.samples.num_output_tokens() as u64);
                    // vLLM reads the counts of the first output it streamed.
                    if a.prompt_tokens_details
                        && let Some(first) = a.samples.first_to_report()
                    {
                        usage.prompt_tokens_details =
                            Emit::value(first.prompt_tokens_details(false, true));
                    }
                    let chunk = CompletionChunk::usage(&a.id, self.created, &a.model, usage, None);
                    return Some(CompletionEvent::Chunk(chunk));
                }
                break;
            };
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    self.done = true;
                    return Some(CompletionEvent::Error(error.0));
                }
            };
            if let Some(chunk) = self.chunk(i, step) {
                return Some(CompletionEvent::Chunk(chunk));
            }
        }
        None
    }

    /// Choice `i`'s chunk for one step (none for an empty step before any output).
    fn chunk(&mut self, i: usize, mut step: Step) -> Option<CompletionChunk> {
        let a = &self.accepted;
        let prompt_index = a.prompt_index(i);
        self.prompt_seen[prompt_index] = true;
        let first = !std::mem::replace(&mut self.started[i], true);
        let logprobs = &mut self.logprobs[i];
        let text = if a.request.echo && first {
            // The echo goes with the choice's first output, whatever it holds.
            let mut text = a.echo(i, logprobs);
            if !a.echo_only() {
                text.push_str(&step.text);
                if let (Some(positions), Some(n)) = (&step.logprobs, a.request.logprobs) {
                    logprobs.extend(positions, n);
                }
            }
            text
        } else {
            let output_tokens = a.samples.get(i).map_or(0, |g| g.num_output_tokens);
            if step.text.is_empty()
                && step.token_ids.is_empty()
                && output_tokens == 0
                && step.finish.is_none()
            {
                // vLLM's "chunked prefill case": no empty chunks. The prompt token
                // ids then go with the next chunk.
                self.started[i] = !first;
                return None;
            }
            if let (Some(positions), Some(n)) = (&step.logprobs, a.request.logprobs) {
                logprobs.extend(positions, n);
            }
            std::mem::take(&mut step.text)
        };
        let chunk_logprobs = a.request.logprobs.map(|_| logprobs.take());
        // vLLM sends the prompt's ids with the echo whatever `return_token_ids` says.
        let send_prompt_ids = first && (self.return_token_ids || a.request.echo);
        let prompt = &a.prompts[prompt_index];
        let finish = step.finish.take();
        let kv_transfer_params = finish
            .as_ref()
            .and_then(|_| a.samples.get(i)?.kv_transfer_params.clone());
        let mut chunk = CompletionChunk::delta(
            &a.id,
            self.created,
            &a.model,
            CompletionChunkChoice {
                index: i as u32,
                text,
                logprobs: chunk_logprobs,
                finish_reason: finish.as_ref().map(|f| f.reason.to_owned()),
                stop_reason: finish.and_then(|f| f.stop_reason),
                prompt_token_ids: send_prompt_ids.then(|| prompt.token_ids.clone()),
                token_ids: self.return_token_ids.then_some(step.token_ids),
                weight_versions: None,
            },
        );
        if let Some(params) = kv_transfer_params {
            chunk.kv_transfer_params = Emit::value(params);
        }
        if self.continuous_usage {
            let output_tokens = a.samples.get(i).map_or(0, |g| g.num_output_tokens);
            chunk.usage = Emit::value(Usage::new(
                prompt.token_ids.len() as u64,
                output_tokens as u64,
            ));
        }
        Some(chunk)
    }
}

impl sse::EventStream for CompletionStream {
    type Event = CompletionEvent;

    async fn next_event(&mut self) -> Option<CompletionEvent> {
        self.next().await
    }

    fn sse_frame(&self, event: &CompletionEvent) -> String {
        match event {
            CompletionEvent::Chunk(chunk) => sse::frame(chunk),
            CompletionEvent::Error(error) => sse::error_frame(error),
        }
    }
}
