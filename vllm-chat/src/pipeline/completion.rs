//! A text completion from request to answer, as vLLM's `OpenAIServingCompletion`
//! gives it: one prompt (text or token ids), `echo`, logprobs, usage.

use vllm_client::protocol::EngineCoreRequest;

use super::error::ApiError;
use super::generation::Generation;
use super::logprobs::CompletionLogprobs;
use super::{Pipeline, Routing, ids, sampling, sse};
use crate::openai::{
    CompletionChoice, CompletionChunk, CompletionChunkChoice, CompletionPrompt, CompletionRequest,
    CompletionResponse, Emit, PromptInput, Usage,
};

/// A completion request accepted and sent to the engine: answer it with
/// [`response`](super::Accepted::response) or [`into_stream`](super::Accepted::into_stream). Dropping it
/// aborts the engine request.
pub struct AcceptedCompletion {
    request: CompletionRequest,
    id: String,
    model: String,
    prompt_token_ids: Vec<u32>,
    /// The prompt's text, for `echo`.
    prompt_text: String,
    generation: Generation,
}

impl std::fmt::Debug for AcceptedCompletion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptedCompletion")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Pipeline {
    /// Accepts a completion request: checks it as vLLM does, tokenizes the prompt and
    /// sends it to the engines.
    pub async fn completion(
        &self,
        mut request: CompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedCompletion, ApiError> {
        if request.n.is_some_and(|n| n > 1) {
            return Err(ApiError::bad_request(
                "n > 1 is not supported by this server.",
                Some("n"),
            ));
        }
        if matches!(&request.prompt, CompletionPrompt::Texts(v) if v.len() > 1)
            || matches!(&request.prompt, CompletionPrompt::TokenBatches(v) if v.len() > 1)
        {
            return Err(ApiError::bad_request(
                "batched prompts are not supported by this server; send one prompt per request.",
                Some("prompt"),
            ));
        }
        if request.echo && request.max_tokens == Some(0) {
            return Err(ApiError::bad_request(
                "echo with max_tokens=0 is not supported by this server.",
                Some("max_tokens"),
            ));
        }
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
        let mut generated = rendered?;
        let model = &self.model;
        let generate = generated
            .pop()
            .ok_or_else(|| ApiError::bad_request("Prompt cannot be empty", Some("prompt")))?;
        let params =
            sampling::engine_params(&generate.sampling_params, model, self.config.max_logprobs)?;
        let prompt_text = match request.prompt.prompts().first() {
            Some(PromptInput::Text(text)) => (*text).to_owned(),
            _ => model
                .tokenizer
                .decode(&generate.token_ids, false)
                .unwrap_or_default(),
        };
        let prompt_token_ids = generate.token_ids.clone();
        let mut engine_request = EngineCoreRequest::new(
            ids::engine_request_id(&generate.request_id),
            generate.token_ids,
            params,
        );
        engine_request.external_req_id = Some(generate.request_id.clone());
        engine_request.priority = request.priority;
        engine_request.cache_salt = request.cache_salt.clone();
        engine_request.data_parallel_rank = routing.data_parallel_rank;
        let model_name = self.answer_model(adapter.as_ref());
        engine_request.lora_request = adapter;
        let generation = Generation::start(&self.client, model, engine_request).await?;
        Ok(AcceptedCompletion {
            request,
            id: generate.request_id,
            model: model_name,
            prompt_token_ids,
            prompt_text,
            generation,
        })
    }
}

impl AcceptedCompletion {
    /// The request id (`cmpl-…`).
    pub fn id(&self) -> &str {
        &self.id
    }

    fn usage(&self) -> Usage {
        let g = &self.generation;
        Usage::new(g.num_prompt_tokens as u64, g.num_output_tokens as u64)
    }
}

impl super::Accepted for AcceptedCompletion {
    type Response = CompletionResponse;
    type Stream = CompletionStream;

    fn is_stream(&self) -> bool {
        self.request.stream == Some(true)
    }

    async fn response(mut self) -> Result<CompletionResponse, ApiError> {
        let mut text = if self.request.echo {
            self.prompt_text.clone()
        } else {
            String::new()
        };
        let mut logprobs = CompletionLogprobs::starting_at(0);
        let mut token_ids = Vec::new();
        let mut finish = None;
        while let Some(step) = self.generation.next().await {
            let step = step.map_err(|e| e.0)?;
            text.push_str(&step.text);
            token_ids.extend_from_slice(&step.token_ids);
            if let (Some(positions), Some(n)) = (&step.logprobs, self.request.logprobs) {
                logprobs.extend(positions, n);
            }
            if step.finish.is_some() {
                finish = step.finish;
                break;
            }
        }
        let finish =
            finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
        let return_token_ids = self.request.return_token_ids == Some(true);
        let usage = self.usage();
        Ok(CompletionResponse {
            id: self.id,
            object: "text_completion",
            created: ids::now_secs(),
            model: self.model,
            choices: vec![CompletionChoice {
                index: 0,
                text,
                logprobs: self.request.logprobs.map(|_| logprobs.take()),
                finish_reason: Some(finish.reason.into()),
                stop_reason: finish.stop_reason,
                token_ids: return_token_ids.then_some(token_ids),
                prompt_logprobs: None,
                prompt_token_ids: return_token_ids.then_some(self.prompt_token_ids),
                routed_experts: None,
                weight_versions: None,
            }],
            service_tier: None,
            system_fingerprint: None,
            usage,
            kv_transfer_params: None,
            ec_transfer_params: None,
            metrics: None,
        })
    }

    fn into_stream(mut self) -> CompletionStream {
        let options = self.request.stream_options.clone().unwrap_or_default();
        let include_usage = options.include_usage == Some(true);
        CompletionStream {
            created: ids::now_secs(),
            include_usage,
            continuous_usage: include_usage && options.continuous_usage_stats == Some(true),
            return_token_ids: self.request.return_token_ids == Some(true),
            echo: self
                .request
                .echo
                .then(|| std::mem::take(&mut self.prompt_text)),
            prompt_ids_sent: false,
            logprobs: CompletionLogprobs::starting_at(0),
            pending_usage: None,
            done: false,
            accepted: self,
        }
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

/// The chunks of a streamed completion, in vLLM's order. Dropping it aborts the
/// engine request.
pub struct CompletionStream {
    accepted: AcceptedCompletion,
    created: u64,
    include_usage: bool,
    continuous_usage: bool,
    return_token_ids: bool,
    echo: Option<String>,
    prompt_ids_sent: bool,
    logprobs: CompletionLogprobs,
    /// The usage chunk, sent after the finishing chunk.
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
            let step = match self.accepted.generation.next().await {
                None => break,
                Some(Ok(step)) => step,
                Some(Err(error)) => {
                    self.done = true;
                    return Some(CompletionEvent::Error(error.0));
                }
            };
            let a = &self.accepted;
            let mut text = self.echo.take().unwrap_or_default();
            text.push_str(&step.text);
            if text.is_empty()
                && step.token_ids.is_empty()
                && a.generation.num_output_tokens == 0
                && step.finish.is_none()
            {
                continue;
            }
            let chunk_logprobs = match (&step.logprobs, a.request.logprobs) {
                (Some(positions), Some(n)) => {
                    self.logprobs.extend(positions, n);
                    Some(self.logprobs.take())
                }
                _ => None,
            };
            let send_prompt_ids = self.return_token_ids && !self.prompt_ids_sent;
            self.prompt_ids_sent |= send_prompt_ids;
            let finished = step.finish.is_some();
            let mut chunk = CompletionChunk::delta(
                &a.id,
                self.created,
                &a.model,
                CompletionChunkChoice {
                    index: 0,
                    text,
                    logprobs: chunk_logprobs,
                    finish_reason: step.finish.as_ref().map(|f| f.reason.to_owned()),
                    stop_reason: step.finish.and_then(|f| f.stop_reason),
                    prompt_token_ids: send_prompt_ids.then(|| a.prompt_token_ids.clone()),
                    token_ids: self.return_token_ids.then_some(step.token_ids),
                    weight_versions: None,
                },
            );
            if self.continuous_usage {
                chunk.usage = Emit::value(a.usage());
            }
            if finished {
                self.done = true;
                if self.include_usage {
                    self.pending_usage = Some(CompletionChunk::usage(
                        &a.id,
                        self.created,
                        &a.model,
                        a.usage(),
                        None,
                    ));
                }
            }
            return Some(CompletionEvent::Chunk(chunk));
        }
        self.done = true;
        None
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
