//! A chat completion from request to answer, as vLLM's `OpenAIServingChat` gives it:
//! render, sampling parameters, the engine request, then the whole response or the
//! stream of chunks (first chunk, echo, content deltas with the parsers' events,
//! finish reasons, usage).

use std::collections::VecDeque;

use vllm_client::protocol::EngineCoreRequest;
use vllm_parser::Event;
use vllm_parser::serving::{ChoiceParser, ServingError, StructuredOutputs};

use super::error::ApiError;
use super::frames::ChatDeltaFrames;
use super::generation::{Finish, Generation, PositionLogprobs, Step};
use super::parse::{RequestTools, delta_message};
use super::{Pipeline, Routing, ids, logprobs, sampling, sse};
use crate::openai::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionRequest,
    ChatCompletionResponse, ChatLogprobs, ContentPart, DeltaMessage, Emit, FunctionCall,
    MessageContent, ResponseMessage, ToolCall, Usage,
};
use crate::render_mode::StructuredOutputsParams;

/// A chat request accepted and sent to the engine: answer it with
/// [`response`](super::Accepted::response) or [`into_stream`](super::Accepted::into_stream) (the request's
/// `stream` says which one vLLM would use: [`is_stream`](super::Accepted::is_stream)). Dropping it
/// aborts the engine request.
pub struct AcceptedChat {
    request: ChatCompletionRequest,
    id: String,
    model: String,
    prompt_token_ids: Vec<u32>,
    generation: Generation,
    parser: ChoiceParser,
    /// With `echo`: the content of the last message, when it has the response's role.
    echo: String,
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
    if request.add_generation_prompt && last.role != "assistant" {
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
    messages + request.chat_template.as_ref().map_or(0, String::len)
}

/// A 400 with the message of vLLM's parser rules.
fn serving_error(error: ServingError) -> ApiError {
    ApiError::bad_request(error.message, error.param.as_deref())
}

impl Pipeline {
    /// Accepts a chat request: checks it as vLLM does, renders it, and sends it to the
    /// engines. Errors carry vLLM's status and body.
    pub async fn chat(
        &self,
        mut request: ChatCompletionRequest,
        routing: Routing,
    ) -> Result<AcceptedChat, ApiError> {
        if request.n.is_some_and(|n| n > 1) {
            return Err(ApiError::bad_request(
                "n > 1 is not supported by this server.",
                Some("n"),
            ));
        }
        // A request for a LoRA adapter renders as one for the served model.
        let adapter = self.resolve_adapter(request.model.as_deref())?;
        if adapter.is_some() {
            request.model = None;
        }
        let parsers = &self.config.parsers;
        // vLLM's request checks and the parsers' `adjust_request`, before rendering.
        let tools = RequestTools::of(&request);
        let mut kwargs = self
            .model
            .renderer
            .options()
            .default_chat_template_kwargs
            .clone();
        kwargs.extend(request.chat_template_kwargs.clone().unwrap_or_default());
        let adjustments = parsers
            .adjust_request(&tools.serving(&request, &kwargs))
            .map_err(serving_error)?;
        if let Some(skip) = adjustments.skip_special_tokens {
            request.skip_special_tokens = Some(skip);
        }
        if let Some(spaces) = adjustments.spaces_between_special_tokens {
            request.spaces_between_special_tokens = spaces;
        }
        let model = self.model.clone();
        let (request, rendered) = self
            .config
            .offload
            .run(input_size(&request), move || {
                let rendered = model.renderer.render_chat(&request);
                (request, rendered)
            })
            .await?;
        let mut generate = rendered?;
        let model = &self.model;
        // The parsers' constraint replaces the request's own (`response_format` was
        // mapped by `render_chat`), as vLLM applies it after validating the request: a
        // forced tool choice held to the tools' JSON schema, or xgrammar's structural
        // tag in the model's own tool-call format.
        match adjustments.structured_outputs {
            Some(StructuredOutputs::Json(schema)) => {
                generate.sampling_params.structured_outputs = Some(StructuredOutputsParams {
                    json: Some(schema),
                    ..StructuredOutputsParams::default()
                });
            }
            Some(StructuredOutputs::StructuralTag {
                json: Some(tag), ..
            }) => {
                generate.sampling_params.structured_outputs = Some(StructuredOutputsParams {
                    structural_tag: Some(tag),
                    ..StructuredOutputsParams::default()
                });
            }
            // A tag vLLM would not build either leaves the request as it is.
            Some(StructuredOutputs::StructuralTag { json: None, .. }) | None => {}
        }
        let params =
            sampling::engine_params(&generate.sampling_params, model, self.config.max_logprobs)?;
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
        let streaming = request.stream == Some(true);
        let parser = parsers
            .choice_parser(
                &tools.serving(&request, &kwargs),
                &prompt_token_ids,
                streaming,
            )
            .map_err(serving_error)?;
        let generation = Generation::start(&self.client, model, engine_request).await?;
        Ok(AcceptedChat {
            echo: echo_text(&request),
            request,
            id: generate.request_id,
            model: model_name,
            prompt_token_ids,
            generation,
            parser,
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
        let mut text = String::new();
        let mut token_ids = Vec::new();
        let mut positions: Vec<PositionLogprobs> = Vec::new();
        let mut finish = None;
        while let Some(step) = self.generation.next().await {
            let step = step.map_err(|e| e.0)?;
            text.push_str(&step.text);
            token_ids.extend_from_slice(&step.token_ids);
            positions.extend(step.logprobs.unwrap_or_default());
            if step.finish.is_some() {
                finish = step.finish;
                break;
            }
        }
        let finish =
            finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
        let (content, reasoning, tool_calls) = if self.parser.is_active() {
            let events = self.parser.push(&text, &token_ids, true);
            let message = self.parser.message(&events);
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
        let hide = self.parser.hides_metadata();
        let wants_logprobs = self.request.logprobs == Some(true) && !hide;
        let return_token_ids = self.request.return_token_ids == Some(true);
        Ok(ChatCompletionResponse {
            id: self.id,
            object: "chat.completion",
            created: ids::now_secs(),
            model: self.model,
            choices: vec![ChatChoice {
                index: 0,
                message: ResponseMessage::assistant(content, reasoning, tool_calls),
                logprobs: wants_logprobs.then(|| chat_logprobs(&self.request, positions)),
                finish_reason: Some(finish_reason(&finish, &self.parser)),
                stop_reason: finish.stop_reason.clone(),
                token_ids: (return_token_ids && !hide).then_some(token_ids),
                routed_experts: None,
                weight_versions: None,
            }],
            service_tier: None,
            system_fingerprint: None,
            usage: Usage::new(
                self.generation.num_prompt_tokens as u64,
                self.generation.num_output_tokens as u64,
            ),
            prompt_logprobs: None,
            prompt_token_ids: return_token_ids.then_some(self.prompt_token_ids),
            prompt_text: None,
            kv_transfer_params: None,
            ec_transfer_params: None,
            metrics: None,
        })
    }

    fn into_stream(self) -> ChatStream {
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
    pub async fn next(&mut self) -> Option<ChatEvent> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            if self.done {
                return None;
            }
            let Some(step) = self.accepted.generation.next().await else {
                self.done = true;
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
                let chunk = self.first_chunk();
                self.queue.push_back(ChatEvent::Chunk(chunk));
                if !self.accepted.echo.is_empty() {
                    let chunk = self.echo_chunk();
                    self.queue.push_back(ChatEvent::Chunk(chunk));
                }
            }
            let finished = step.finish.is_some();
            if let Some(event) = self.step(step) {
                self.queue.push_back(event);
            }
            if finished {
                if self.include_usage {
                    let a = &self.accepted;
                    let chunk = ChatCompletionChunk::usage(
                        &a.id,
                        self.created,
                        &a.model,
                        self.usage(),
                        None,
                    );
                    self.queue.push_back(ChatEvent::Chunk(chunk));
                }
                self.done = true;
            }
        }
    }

    fn usage(&self) -> Usage {
        let g = &self.accepted.generation;
        Usage::new(g.num_prompt_tokens as u64, g.num_output_tokens as u64)
    }

    fn leading_usage(&self) -> Emit<Usage> {
        if self.continuous_usage {
            let prompt = self.accepted.generation.num_prompt_tokens as u64;
            Emit::value(Usage::new(prompt, 0))
        } else {
            Emit::Unset
        }
    }

    fn first_chunk(&self) -> ChatCompletionChunk {
        let a = &self.accepted;
        let mut chunk = ChatCompletionChunk::first(
            &a.id,
            self.created,
            &a.model,
            0,
            self.return_token_ids.then(|| a.prompt_token_ids.clone()),
        );
        chunk.usage = self.leading_usage();
        chunk
    }

    /// The chunk that echoes the last message (`echo`), right after the first.
    fn echo_chunk(&self) -> ChatCompletionChunk {
        let a = &self.accepted;
        let mut chunk = ChatCompletionChunk::echo(&a.id, self.created, &a.model, 0, a.echo.clone());
        chunk.usage = self.leading_usage();
        chunk
    }

    /// The content chunk of one step (none when the parser has nothing to send yet).
    fn step(&mut self, mut step: Step) -> Option<ChatEvent> {
        let finished = step.finish.is_some();
        let a = &mut self.accepted;
        let hide = a.parser.hides_metadata();
        let delta = if step.text.is_empty()
            && step.token_ids.is_empty()
            && a.generation.num_output_tokens == 0
        {
            // Finished without output: the final chunk, unparsed.
            let _ = a.parser.push("", &[], finished);
            Some(DeltaMessage::default())
        } else if a.parser.is_active() {
            let events: Vec<Event> = a.parser.push(&step.text, &step.token_ids, finished);
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
        let mut choice = ChatChunkChoice::new(0, delta.unwrap_or_default());
        choice.logprobs = Emit::Set(logprobs);
        choice.token_ids = Emit::Set(token_ids);
        if let Some(finish) = &step.finish {
            choice.finish_reason = Emit::value(finish_reason(finish, &a.parser));
            choice.stop_reason = Emit::Set(finish.stop_reason.clone());
            // vLLM sets `weight_versions` (null) on the final choice.
            choice.weight_versions = Emit::null();
        }
        let usage = self.continuous_usage.then(|| self.usage());
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
