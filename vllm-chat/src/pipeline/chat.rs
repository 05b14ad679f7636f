//! A chat completion from request to answer, as vLLM's `OpenAIServingChat` gives it:
//! render, sampling parameters, the engine request, then the whole response or the
//! stream of chunks (first chunk, echo, content deltas with the parsers' events,
//! finish reasons, usage).

use std::collections::VecDeque;

use vllm_client::protocol::EngineCoreRequest;
use vllm_parser::Event;
use vllm_parser::serving::ChoiceParser;

use super::error::ApiError;
use super::frames::ChatDeltaFrames;
use super::generation::{Finish, PositionLogprobs, Samples, Step, weight_versions_json};
use super::kv_transfer::KvRejection;
use super::parse::delta_message;
use super::render::{PreparedChat, prepare_chat, serving_error};
use super::{Pipeline, Routing, ids, logprobs, sampling, sse};
use crate::openai::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionRequest,
    ChatCompletionResponse, ChatLogprobs, ContentPart, DeltaMessage, Emit, FunctionCall,
    MessageContent, ResponseMessage, ToolCall, Usage,
};

/// A chat request accepted and sent to the engine: answer it with
/// [`response`](super::Accepted::response) or [`into_stream`](super::Accepted::into_stream) (the request's
/// `stream` says which one vLLM would use: [`is_stream`](super::Accepted::is_stream)). Dropping it
/// aborts the engine request.
pub struct AcceptedChat {
    request: ChatCompletionRequest,
    id: String,
    model: String,
    prompt_token_ids: Vec<u32>,
    /// The `n` choices in flight.
    samples: Samples,
    /// One parser per choice, as vLLM makes one per choice.
    parsers: Vec<ChoiceParser>,
    /// With `echo`: the content of the last message, when it has the response's role.
    echo: String,
    /// Report the prompt-cache counts in the usage.
    prompt_tokens_details: bool,
    /// The engine link, for the rejection notice.
    client: vllm_client::EngineCoreClient,
    /// The KV-transfer rejection notice a failing whole answer sends.
    rejection: Option<KvRejection>,
}

impl std::fmt::Debug for AcceptedChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcceptedChat")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// vLLM's chat `echo`: the last message's content when its role is the response's
/// (`assistant` with `add_generation_prompt`, else the last message's own role).
fn echo_text(request: &ChatCompletionRequest) -> String {
    let Some(last) = request.messages.last().filter(|_| request.echo) else {
        return String::new();
    };
    if request.add_generation_prompt() && last.role != "assistant" {
        return String::new();
    }
    match &last.content {
        Some(MessageContent::Text(text)) => text.clone(),
        Some(MessageContent::Parts(parts)) => parts
            .iter()
            .filter_map(|p| match p {
                ContentPart::Str(s) => Some(s.as_str()),
                ContentPart::Typed { text, .. } => text.as_deref(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => String::new(),
    }
}

/// Chat logprobs, with `token_id:N` token strings for `return_tokens_as_token_ids`.
fn chat_logprobs(
    request: &ChatCompletionRequest,
    positions: Vec<PositionLogprobs>,
) -> ChatLogprobs {
    if request.return_tokens_as_token_ids == Some(true) {
        logprobs::chat(
            logprobs::with_token_id_texts(positions),
            request.top_logprobs,
        )
    } else {
        logprobs::chat(positions, request.top_logprobs)
    }
}

/// About how many bytes of text rendering `request` reads: its messages' text and a
/// request template (what makes a render expensive).
fn input_size(request: &ChatCompletionRequest) -> usize {
    let content = |c: &MessageContent| match c {
        MessageContent::Text(text) => text.len(),
        MessageContent::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                ContentPart::Str(s) => s.len(),
                ContentPart::Typed { text, .. } => text.as_ref().map_or(0, String::len),
            })
            .sum(),
    };
    let messages: usize = request
        .messages
        .iter()
        .map(|m| m.content.as_ref().map_or(0, content))
        .sum();
    // A request's own template can burn its whole fuel budget whatever its size, and
    // tools are rendered as JSON and may be converted to grammars: both always go off
    // the async workers.
    if request.chat_template.is_some() || request.tools.as_ref().is_some_and(|t| !t.is_empty()) {
        return usize::MAX;
    }
    messages
}

/// A 400 with the message of vLLM's parser rules.
impl Pipeline {
    /// Accepts a chat request: checks it as vLLM does, renders it, and sends it to the
    /// engines. Errors carry vLLM's status and body.
    ///
    /// With [`PipelineConfig::kv_connector`](super::PipelineConfig::kv_connector), a
    /// request with `kv_transfer_params.do_remote_prefill` that fails here (or, not
    /// streamed, while it runs) sends the engines vLLM's KV-transfer rejection notice.
    pub async fn chat(
        &self,
        mut request: ChatCompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedChat, ApiError> {
        // vLLM's request model checks these before its handler: no notice for them.
        request.validate()?;
        let rejection = self.kv_rejection(
            request.kv_transfer_params.as_ref(),
            &mut request.request_id,
            routing,
        );
        let streaming = request.stream == Some(true);
        let accepted = self.accept_chat(request, routing).await;
        KvRejection::around_handler(rejection, streaming, &self.client, accepted, |a, r| {
            a.rejection = r
        })
        .await
    }

    async fn accept_chat(
        &self,
        mut request: ChatCompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedChat, ApiError> {
        // A request for a LoRA adapter renders as one for the served model.
        let adapter = self.resolve_adapter(request.model.as_deref())?;
        if adapter.is_some() {
            request.model = None;
        }
        let parsers = &self.config.parsers;
        // The render, then vLLM's request checks and the parsers' `adjust_request`,
        // off the async workers: with tools, `adjust_request` may convert every tool's
        // JSON schema into a grammar (Cohere's structural tag), which is CPU work of its
        // own whatever the messages' size.
        let model = self.model.clone();
        let serving = parsers.clone();
        let PreparedChat {
            request,
            tools,
            generate,
            prompt_text,
        } = self
            .config
            .offload
            .run(input_size(&request), move || {
                prepare_chat(&model, &serving, request)
            })
            .await??;
        let model = &self.model;
        let params = sampling::engine_params(
            &generate.engine_sampling_params(),
            model,
            self.config.max_logprobs,
        )?;
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
        // The parser starts in vLLM's state for the rendered prompt.
        let kwargs = generate
            .parse_context
            .as_ref()
            .map(|c| c.chat_template_kwargs.clone())
            .unwrap_or_default();
        engine_request.reasoning_ended = generate.reasoning_ended;
        engine_request.reasoning_parser_kwargs = generate
            .reasoning_parser_kwargs
            .as_ref()
            .map(|k| sampling::json_to_wire(&serde_json::json!(k)));
        let streaming = request.stream == Some(true);
        let n = usize::try_from(engine_request.sampling_params.as_ref().map_or(1, |p| p.n))
            .unwrap_or(1)
            .max(1);
        let parsers = (0..n)
            .map(|_| {
                parsers.choice_parser(
                    &tools.serving(&request, &kwargs),
                    &prompt_token_ids,
                    prompt_text.as_deref(),
                    streaming,
                )
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(serving_error)?;
        let samples =
            Samples::start(&self.client, model, vec![engine_request], &self.config).await?;
        Ok(AcceptedChat {
            echo: echo_text(&request),
            request,
            id: generate.request_id,
            model: model_name,
            prompt_token_ids,
            samples,
            parsers,
            prompt_tokens_details: self.config.enable_prompt_tokens_details,
            client: self.client.clone(),
            rejection: None,
        })
    }
}

/// vLLM's `resolve_finish_reason`.
fn finish_reason(finish: &Finish, parser: &ChoiceParser) -> String {
    parser.finish_reason(finish.reason).to_owned()
}

impl AcceptedChat {
    /// The request id (`chatcmpl-…`).
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl super::Accepted for AcceptedChat {
    type Response = ChatCompletionResponse;
    type Stream = ChatStream;

    fn is_stream(&self) -> bool {
        self.request.stream == Some(true)
    }

    async fn response(mut self) -> Result<ChatCompletionResponse, ApiError> {
        let rejection = self.rejection.take();
        let client = self.client.clone();
        KvRejection::after(rejection, &client, self.whole().await).await
    }

    fn into_stream(self) -> ChatStream {
        self.stream()
    }
}

impl AcceptedChat {
    /// The whole answer.
    async fn whole(mut self) -> Result<ChatCompletionResponse, ApiError> {
        let n = self.samples.len();
        let mut texts = vec![String::new(); n];
        let mut token_ids = vec![Vec::new(); n];
        let mut positions: Vec<Vec<PositionLogprobs>> = vec![Vec::new(); n];
        let mut finishes: Vec<Option<Finish>> = vec![None; n];
        while let Some((i, step)) = self.samples.next().await {
            let step = step.map_err(|e| e.0)?;
            texts[i].push_str(&step.text);
            token_ids[i].extend_from_slice(&step.token_ids);
            positions[i].extend(step.logprobs.unwrap_or_default());
            if step.finish.is_some() {
                finishes[i] = step.finish;
            }
        }
        let hide = self
            .parsers
            .first()
            .is_some_and(ChoiceParser::hides_metadata);
        let wants_logprobs = self.request.logprobs == Some(true) && !hide;
        let return_token_ids = self.request.return_token_ids == Some(true);
        let mut choices = Vec::with_capacity(n);
        let parts = texts
            .into_iter()
            .zip(token_ids)
            .zip(positions)
            .zip(finishes);
        for (i, (((text, token_ids), positions), finish)) in parts.enumerate() {
            let finish =
                finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
            let parser = &mut self.parsers[i];
            let (content, reasoning, tool_calls) = if parser.is_active() {
                let events = parser.push(&text, &token_ids, true);
                let message = parser.message(&events);
                let calls = message
                    .tool_calls
                    .into_iter()
                    .map(|c| ToolCall {
                        id: c.id.unwrap_or_else(ids::tool_call_id),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: c.name,
                            arguments: c.arguments,
                        },
                    })
                    .collect();
                (message.content, message.reasoning, calls)
            } else {
                (Some(text), None, Vec::new())
            };
            let content = if self.echo.is_empty() {
                content
            } else {
                Some(self.echo.clone() + content.as_deref().unwrap_or_default())
            };
            choices.push(ChatChoice {
                index: i as u32,
                message: ResponseMessage::assistant(content, reasoning, tool_calls),
                logprobs: wants_logprobs.then(|| chat_logprobs(&self.request, positions)),
                finish_reason: Some(finish_reason(&finish, parser)),
                stop_reason: finish.stop_reason.clone(),
                token_ids: (return_token_ids && !hide).then_some(token_ids),
                routed_experts: None,
                weight_versions: if self.request.return_weight_versions == Some(true) {
                    weight_versions_json(finish.weight_versions.as_deref())
                } else {
                    None
                },
            });
        }
        let prompt_tokens = self.prompt_token_ids.len() as u64;
        let mut usage = Usage::new(prompt_tokens, self.samples.num_output_tokens() as u64);
        if self.prompt_tokens_details
            && let Some(last) = self.samples.last_to_finish(0..n)
        {
            usage.prompt_tokens_details = Emit::value(last.prompt_tokens_details(true, false));
        }
        Ok(ChatCompletionResponse {
            id: self.id,
            object: "chat.completion",
            created: ids::now_secs(),
            model: self.model,
            choices,
            service_tier: None,
            system_fingerprint: None,
            usage,
            prompt_logprobs: logprobs::prompt_logprobs(&self.samples),
            prompt_token_ids: return_token_ids.then_some(self.prompt_token_ids),
            prompt_text: None,
            kv_transfer_params: self.samples.kv_transfer_params(0..n),
            ec_transfer_params: None,
            metrics: None,
        })
    }

    fn stream(self) -> ChatStream {
        let options = self.request.stream_options.clone().unwrap_or_default();
        let include_usage = options.include_usage == Some(true);
        let created = ids::now_secs();
        ChatStream {
            frames: ChatDeltaFrames::new(&self.id, created, &self.model),
            created,
            include_usage,
            continuous_usage: include_usage && options.continuous_usage_stats == Some(true),
            return_token_ids: self.request.return_token_ids == Some(true),
            accepted: self,
            first: true,
            done: false,
            queue: VecDeque::new(),
        }
    }
}

/// One event of a chat stream.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// A whole chunk: the first one (role), the echo, the final usage chunk.
    Chunk(ChatCompletionChunk),
    /// A content chunk: [`ChatCompletionChunk::delta`] of the stream's id, creation time
    /// and model with this choice, and `usage` when continuous usage stats are on.
    /// Kept apart so that a server can write it behind a pre-serialized head
    /// ([`EventStream::sse_frame`](super::EventStream::sse_frame)).
    Delta {
        /// The choice.
        choice: ChatChunkChoice,
        /// Continuous usage stats.
        usage: Option<Usage>,
    },
    /// The request failed mid-stream: vLLM sends the error body as a data event and
    /// ends the stream.
    Error(ApiError),
}

/// The chunks of a streamed chat answer, in vLLM's order. Dropping it aborts the
/// engine request (a client that went away frees its engine slot).
pub struct ChatStream {
    accepted: AcceptedChat,
    frames: ChatDeltaFrames,
    created: u64,
    include_usage: bool,
    continuous_usage: bool,
    return_token_ids: bool,
    first: bool,
    done: bool,
    queue: VecDeque<ChatEvent>,
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("id", &self.accepted.id)
            .finish_non_exhaustive()
    }
}

impl ChatStream {
    /// The next event, `None` after the last.
    ///
    /// With `n > 1`, the first output of any choice brings the role chunk of every
    /// choice (and the echo chunks), then each choice's chunks come as its outputs
    /// arrive, interleaved, each finishing on its own; the usage chunk sums them.
    pub async fn next(&mut self) -> Option<ChatEvent> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            let Some((index, step)) = self.accepted.samples.next().await else {
                self.done = true;
                if self.include_usage {
                    let a = &self.accepted;
                    let mut usage = Usage::new(
                        a.prompt_token_ids.len() as u64,
                        a.samples.num_output_tokens() as u64,
                    );
                    if a.prompt_tokens_details
                        && let Some(first) = a.samples.first_to_report()
                    {
                        usage.prompt_tokens_details =
                            Emit::value(first.prompt_tokens_details(true, true));
                    }
                    let chunk =
                        ChatCompletionChunk::usage(&a.id, self.created, &a.model, usage, None);
                    self.queue.push_back(ChatEvent::Chunk(chunk));
                }
                continue;
            };
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    self.done = true;
                    return Some(ChatEvent::Error(error.0));
                }
            };
            if std::mem::take(&mut self.first) {
                for i in 0..self.accepted.samples.len() as u32 {
                    let chunk = self.first_chunk(i);
                    self.queue.push_back(ChatEvent::Chunk(chunk));
                }
                if !self.accepted.echo.is_empty() {
                    for i in 0..self.accepted.samples.len() as u32 {
                        let chunk = self.echo_chunk(i);
                        self.queue.push_back(ChatEvent::Chunk(chunk));
                    }
                }
            }
            if let Some(event) = self.step(index, step) {
                self.queue.push_back(event);
            }
        }
    }

    /// Choice `index`'s usage so far (continuous usage stats count one choice). vLLM
    /// sets `completion_tokens_details` (null without reasoning-token details) on
    /// these, unlike the final usage chunk.
    fn usage(&self, index: usize) -> Usage {
        let a = &self.accepted;
        let output = a.samples.get(index).map_or(0, |g| g.num_output_tokens);
        let mut usage = Usage::new(a.prompt_token_ids.len() as u64, output as u64);
        usage.completion_tokens_details = Emit::null();
        usage
    }

    fn leading_usage(&self) -> Emit<Usage> {
        if self.continuous_usage {
            let prompt = self.accepted.prompt_token_ids.len() as u64;
            let mut usage = Usage::new(prompt, 0);
            usage.completion_tokens_details = Emit::null();
            Emit::value(usage)
        } else {
            Emit::Unset
        }
    }

    fn first_chunk(&self, index: u32) -> ChatCompletionChunk {
        let a = &self.accepted;
        let mut chunk = ChatCompletionChunk::first(
            &a.id,
            self.created,
            &a.model,
            index,
            self.return_token_ids.then(|| a.prompt_token_ids.clone()),
        );
        chunk.usage = self.leading_usage();
        chunk
    }

    /// The chunk that echoes the last message (`echo`), after the first chunks.
    fn echo_chunk(&self, index: u32) -> ChatCompletionChunk {
        let a = &self.accepted;
        let mut chunk =
            ChatCompletionChunk::echo(&a.id, self.created, &a.model, index, a.echo.clone());
        chunk.usage = self.leading_usage();
        chunk
    }

    /// The content chunk of one step of choice `index` (none when the parser has
    /// nothing to send yet).
    fn step(&mut self, index: usize, mut step: Step) -> Option<ChatEvent> {
        let finished = step.finish.is_some();
        let a = &mut self.accepted;
        let num_output_tokens = a.samples.get(index).map_or(0, |g| g.num_output_tokens);
        let parser = a.parsers.get_mut(index)?;
        let hide = parser.hides_metadata();
        let delta = if step.text.is_empty() && step.token_ids.is_empty() && num_output_tokens == 0 {
            if !finished {
                // vLLM's "chunked prefill case": no empty chunks.
                return None;
            }
            // Finished without output: the final chunk, unparsed.
            let _ = parser.push("", &[], finished);
            Some(DeltaMessage::default())
        } else if parser.is_active() {
            let events: Vec<Event> = parser.push(&step.text, &step.token_ids, finished);
            delta_message(&events)
        } else {
            Some(DeltaMessage {
                content: Emit::value(std::mem::take(&mut step.text)),
                ..DeltaMessage::default()
            })
        };
        let wants_logprobs = a.request.logprobs == Some(true) && !hide;
        let logprobs = match step.logprobs.take() {
            Some(positions) if wants_logprobs => Some(chat_logprobs(&a.request, positions)),
            _ => None,
        };
        let token_ids =
            (self.return_token_ids && !hide).then(|| std::mem::take(&mut step.token_ids));
        if delta.is_none() && !finished && logprobs.is_none() && token_ids.is_none() {
            return None;
        }
        let mut choice = ChatChunkChoice::new(index as u32, delta.unwrap_or_default());
        choice.logprobs = Emit::Set(logprobs);
        choice.token_ids = Emit::Set(token_ids);
        if let Some(finish) = &step.finish {
            choice.finish_reason = Emit::value(finish_reason(finish, parser));
            choice.stop_reason = Emit::Set(finish.stop_reason.clone());
            // vLLM sets `weight_versions` on the final choice (null unless asked for).
            choice.weight_versions = Emit::Set(
                if self.accepted.request.return_weight_versions == Some(true) {
                    weight_versions_json(finish.weight_versions.as_deref())
                } else {
                    None
                },
            );
        }
        let usage = self.continuous_usage.then(|| self.usage(index));
        let kv_transfer_params = step
            .finish
            .as_ref()
            .and_then(|_| self.accepted.samples.get(index)?.kv_transfer_params.clone());
        if let Some(params) = kv_transfer_params {
            // The finishing chunk carries the engine's KV-transfer parameters (the
            // preformatted delta frame writes null there).
            let a = &self.accepted;
            let mut chunk = ChatCompletionChunk::delta(&a.id, self.created, &a.model, choice);
            chunk.usage = usage.map_or(Emit::Unset, Emit::value);
            chunk.kv_transfer_params = Emit::value(params);
            return Some(ChatEvent::Chunk(chunk));
        }
        Some(ChatEvent::Delta { choice, usage })
    }
}

impl sse::EventStream for ChatStream {
    type Event = ChatEvent;

    async fn next_event(&mut self) -> Option<ChatEvent> {
        self.next().await
    }

    fn sse_frame(&self, event: &ChatEvent) -> String {
        match event {
            ChatEvent::Chunk(chunk) => sse::frame(chunk),
            ChatEvent::Delta { choice, usage } => self.frames.frame(choice, usage.as_ref()),
            ChatEvent::Error(error) => sse::error_frame(error),
        }
    }
}
