//! `POST /v1/chat/completions`, streamed and whole, as vLLM's `OpenAIServingChat`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use vllm_chat::openai::{
    ChatChoice, ChatChunkChoice, ChatCompletionChunk, ChatCompletionRequest,
    ChatCompletionResponse, ChatLogprobs, ContentPart, DeltaMessage, Emit, FunctionCall,
    MessageContent, ResponseMessage, ToolCall, ToolChoice, ToolChoiceMode, Usage,
};
use vllm_chat::render_mode::StructuredOutputsParams;
use vllm_client::protocol::EngineCoreRequest;
use vllm_parser::Event;

use super::chat_frames::ChatDeltaFrames;
use super::error::ApiError;
use super::generation::{Finish, Generation, PositionLogprobs, Step};
use super::parse::{ChoiceParser, delta_message, forced_tool_schema};
use super::state::AppState;
use super::{ids, logprobs, routing, sampling, sse};

/// How many prompt tokens reasoning parsers see (the end of the rendered prompt).
const PROMPT_TAIL_TOKENS: usize = 32;

/// A chat request accepted and sent to the engine.
struct Accepted {
    request: ChatCompletionRequest,
    id: String,
    prompt_token_ids: Vec<u32>,
    generation: Generation,
    parser: ChoiceParser,
    /// With `echo`: the content of the last message, when it has the response's role.
    echo: String,
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

/// The handler.
pub async fn create(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let accepted = match accept(&state, &headers, &body).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    if accepted.request.stream == Some(true) {
        sse::response(stream(state, accepted))
    } else {
        match whole(&state, accepted).await {
            Ok(response) => axum::Json(response).into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// vLLM refuses a tool choice it cannot honour without a tool parser.
fn check_tool_choice_without_parser(
    request: &ChatCompletionRequest,
    auto_enabled: bool,
) -> Result<(), ApiError> {
    let message = match &request.tool_choice {
        Some(ToolChoice::Mode(ToolChoiceMode::Auto)) if !auto_enabled => {
            "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set".to_owned()
        }
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => {
            "tool_choice=\"required\" requires --tool-call-parser to be set".to_owned()
        }
        Some(ToolChoice::Named(named)) => format!(
            "tool_choice=function \"{}\" requires --tool-call-parser to be set",
            named.function.name
        ),
        _ => return Ok(()),
    };
    Err(ApiError::bad_request(message, None))
}

async fn accept(state: &AppState, headers: &HeaderMap, body: &Bytes) -> Result<Accepted, ApiError> {
    let mut request: ChatCompletionRequest = serde_json::from_slice(body)?;
    if request.n.is_some_and(|n| n > 1) {
        return Err(ApiError::bad_request(
            "n > 1 is not supported by this server.",
            Some("n"),
        ));
    }
    if state.parsers.tool.is_none() {
        check_tool_choice_without_parser(&request, state.parsers.enable_auto_tool_choice)?;
    }
    // Hermes' `adjust_request`: tool-call tags are special tokens in some models, so
    // they must reach the parser.
    if matches!(state.parsers.tool, Some("hermes" | "qwen3_json"))
        && request.tools.as_ref().is_some_and(|t| !t.is_empty())
        && request.effective_tool_choice() != ToolChoice::Mode(ToolChoiceMode::None)
    {
        request.skip_special_tokens = Some(false);
    }
    let mut generate = state.api.model.renderer.render_chat(&request)?;
    // A forced tool choice holds the engine to the tool's JSON schema: the tool
    // parser's `adjust_request`, which vLLM applies after validating the request
    // (`render_chat` maps `response_format` itself).
    if state.parsers.tool.is_some()
        && let Some(schema) = forced_tool_schema(&request)
    {
        generate.sampling_params.structured_outputs = Some(StructuredOutputsParams {
            json: Some(schema),
            ..StructuredOutputsParams::default()
        });
    }
    let params = sampling::engine_params(
        &generate.sampling_params,
        &state.api.model,
        state.max_logprobs,
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
    engine_request.data_parallel_rank = routing::data_parallel_rank(headers)?;
    let kwargs = generate
        .parse_context
        .as_ref()
        .map(|c| c.chat_template_kwargs.clone())
        .unwrap_or_default();
    let tail = &prompt_token_ids[prompt_token_ids.len().saturating_sub(PROMPT_TAIL_TOKENS)..];
    let prompt_end = state
        .api
        .model
        .tokenizer
        .decode(tail, false)
        .unwrap_or_default();
    let streaming = request.stream == Some(true);
    let parser = ChoiceParser::new(&state.parsers, &request, kwargs, prompt_end, streaming)?;
    let generation = Generation::start(&state.client, &state.api.model, engine_request).await?;
    Ok(Accepted {
        echo: echo_text(&request),
        request,
        id: generate.request_id,
        prompt_token_ids,
        generation,
        parser,
    })
}

/// vLLM's `resolve_finish_reason`.
fn finish_reason(finish: &Finish, parser: &ChoiceParser) -> String {
    if parser.tools_called() && finish.reason == "stop" && !parser.named_tool_forced() {
        "tool_calls".into()
    } else {
        finish.reason.into()
    }
}

async fn whole(state: &AppState, mut a: Accepted) -> Result<ChatCompletionResponse, ApiError> {
    let mut text = String::new();
    let mut token_ids = Vec::new();
    let mut positions: Vec<PositionLogprobs> = Vec::new();
    let mut finish = None;
    while let Some(step) = a.generation.next().await {
        let step = step.map_err(|e| e.0)?;
        text.push_str(&step.text);
        token_ids.extend_from_slice(&step.token_ids);
        positions.extend(step.logprobs.unwrap_or_default());
        if step.finish.is_some() {
            finish = step.finish;
            break;
        }
    }
    let finish = finish.ok_or_else(|| ApiError::internal("the request ended without a finish"))?;
    let (content, reasoning, tool_calls) = if a.parser.is_active() {
        let events = a.parser.push(&text, &token_ids, true);
        let message = a.parser.message(&events);
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
    let content = if a.echo.is_empty() {
        content
    } else {
        Some(a.echo.clone() + content.as_deref().unwrap_or_default())
    };
    let hide = a.parser.hides_metadata();
    let wants_logprobs = a.request.logprobs == Some(true) && !hide;
    let return_token_ids = a.request.return_token_ids == Some(true);
    Ok(ChatCompletionResponse {
        id: a.id,
        object: "chat.completion",
        created: ids::now_secs(),
        model: state.api.served_model_name.clone(),
        choices: vec![ChatChoice {
            index: 0,
            message: ResponseMessage::assistant(content, reasoning, tool_calls),
            logprobs: wants_logprobs.then(|| chat_logprobs(&a.request, positions)),
            finish_reason: Some(finish_reason(&finish, &a.parser)),
            stop_reason: finish.stop_reason.clone(),
            token_ids: (return_token_ids && !hide).then_some(token_ids),
            routed_experts: None,
            weight_versions: None,
        }],
        service_tier: None,
        system_fingerprint: None,
        usage: Usage::new(
            a.generation.num_prompt_tokens as u64,
            a.generation.num_output_tokens as u64,
        ),
        prompt_logprobs: None,
        prompt_token_ids: return_token_ids.then_some(a.prompt_token_ids),
        prompt_text: None,
        kv_transfer_params: None,
        ec_transfer_params: None,
        metrics: None,
    })
}

/// The chunk frames of one step (none when the parser has nothing to send yet).
struct Chunker {
    id: String,
    frames: ChatDeltaFrames,
    created: u64,
    model: String,
    include_usage: bool,
    continuous_usage: bool,
    request: ChatCompletionRequest,
    return_token_ids: bool,
}

impl Chunker {
    fn usage(&self, generation: &Generation) -> Usage {
        Usage::new(
            generation.num_prompt_tokens as u64,
            generation.num_output_tokens as u64,
        )
    }

    fn first(&self, generation: &Generation, prompt_token_ids: &[u32]) -> String {
        let mut chunk = ChatCompletionChunk::first(
            &self.id,
            self.created,
            &self.model,
            0,
            self.return_token_ids.then(|| prompt_token_ids.to_vec()),
        );
        if self.continuous_usage {
            chunk.usage = Emit::value(Usage::new(generation.num_prompt_tokens as u64, 0));
        }
        sse::frame(&chunk, &[])
    }

    /// The chunk that echoes the last message (`echo`), right after the first.
    fn echo(&self, generation: &Generation, text: &str) -> String {
        let mut chunk =
            ChatCompletionChunk::echo(&self.id, self.created, &self.model, 0, text.to_owned());
        if self.continuous_usage {
            chunk.usage = Emit::value(Usage::new(generation.num_prompt_tokens as u64, 0));
        }
        sse::frame(&chunk, &[])
    }

    fn step(
        &self,
        mut step: Step,
        parser: &mut ChoiceParser,
        generation: &Generation,
    ) -> Option<String> {
        let finished = step.finish.is_some();
        let hide = parser.hides_metadata();
        let delta = if step.text.is_empty()
            && step.token_ids.is_empty()
            && generation.num_output_tokens == 0
        {
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
        let wants_logprobs = self.request.logprobs == Some(true) && !hide;
        let logprobs = match step.logprobs.take() {
            Some(positions) if wants_logprobs => Some(chat_logprobs(&self.request, positions)),
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
            choice.finish_reason = Emit::value(finish_reason(finish, parser));
            choice.stop_reason = Emit::Set(finish.stop_reason.clone());
            // vLLM sets `weight_versions` (null) on the final choice.
            choice.weight_versions = Emit::null();
        }
        let usage = self.continuous_usage.then(|| self.usage(generation));
        Some(self.frames.frame(&choice, usage.as_ref()))
    }
}

/// The SSE frames of a streamed answer. Dropping the stream (client gone) drops the
/// generation, which aborts the engine request.
fn stream(state: AppState, a: Accepted) -> impl Stream<Item = String> + Send + 'static {
    let include_usage = a
        .request
        .stream_options
        .as_ref()
        .is_some_and(|o| o.include_usage == Some(true));
    let created = ids::now_secs();
    let chunker = Chunker {
        id: a.id.clone(),
        frames: ChatDeltaFrames::new(&a.id, created, &state.api.served_model_name),
        created,
        model: state.api.served_model_name.clone(),
        include_usage,
        continuous_usage: include_usage
            && a.request
                .stream_options
                .as_ref()
                .is_some_and(|o| o.continuous_usage_stats == Some(true)),
        return_token_ids: a.request.return_token_ids == Some(true),
        request: a.request,
    };
    let Accepted {
        mut generation,
        mut parser,
        prompt_token_ids,
        echo,
        ..
    } = a;
    sse::frames(move |tx| async move {
        let mut first = true;
        while let Some(step) = generation.next().await {
            let step = match step {
                Ok(step) => step,
                Err(error) => {
                    tx.send(format!("data: {}\n\n", error.0.to_json()));
                    break;
                }
            };
            if first {
                first = false;
                tx.send(chunker.first(&generation, &prompt_token_ids));
                if !echo.is_empty() {
                    tx.send(chunker.echo(&generation, &echo));
                }
            }
            let finished = step.finish.is_some();
            if let Some(frame) = chunker.step(step, &mut parser, &generation) {
                tx.send(frame);
            }
            if finished {
                if chunker.include_usage {
                    let chunk = ChatCompletionChunk::usage(
                        &chunker.id,
                        chunker.created,
                        &chunker.model,
                        chunker.usage(&generation),
                        None,
                    );
                    tx.send(sse::frame(&chunk, &[]));
                }
                break;
            }
        }
        tx.send(sse::DONE.to_owned());
    })
}
