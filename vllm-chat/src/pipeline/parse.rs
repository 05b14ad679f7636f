//! One chat choice's output parsing: reasoning, content and tool calls, streamed or
//! whole, with vLLM's `tool_choice` rules.
//!
//! vLLM runs a parser only when the server has one (`--reasoning-parser`,
//! `--tool-call-parser`); without, all text is content. With a tool parser, the
//! request's `tool_choice` decides what happens to the content after reasoning:
//!
//! - `none`: it stays content.
//! - `auto` (the default when tools are given): the tool parser extracts calls, if the
//!   server has `--enable-auto-tool-choice`; otherwise it stays content.
//! - a named function: the output is that function's arguments (the engine is held to
//!   the function's JSON schema by structured outputs).
//! - `required`: the output is a JSON array of `{"name", "parameters"}` (also held to a
//!   schema). A whole answer reads the calls from the complete array (arguments are
//!   `json.dumps(parameters)`); a stream announces each call as soon as its name is
//!   known and streams the model's text of its `parameters` ([`super::required`]).
//!
//! `parallel_tool_calls: false` keeps only the first call, as vLLM's
//! `maybe_filter_parallel_tool_calls` does.

use std::sync::Arc;

use crate::openai::{
    ChatCompletionRequest, DeltaFunctionCall, DeltaMessage, DeltaToolCall, Emit, ToolChoice,
    ToolChoiceMode,
};
use serde_json::{Map, Value};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::{Event, MessageBuilder, MessageParser, ParsedMessage, ParserOptions, registry};

use super::error::ApiError;
use super::ids;
use super::required::RequiredCalls;

/// The server's parser settings (`--reasoning-parser`, `--tool-call-parser`,
/// `--enable-auto-tool-choice`), resolved to registered names.
#[derive(Debug, Clone, Default)]
pub struct ParserSettings {
    /// The reasoning parser, if any.
    pub reasoning: Option<&'static str>,
    /// The tool-call parser, if any.
    pub tool: Option<&'static str>,
    /// `--enable-auto-tool-choice`.
    pub enable_auto_tool_choice: bool,
    /// The checkpoint's `response_template` (`tokenizer_config.json`), compiled once:
    /// what the `hf` and `beam` parsers parse by.
    pub response_template: Option<Arc<ResponseTemplate>>,
}

/// What the content of a choice is taken as.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ToolMode {
    /// Plain content.
    Content,
    /// The tool parser finds calls in the content.
    Auto,
    /// The content is the arguments of this function.
    Named(String),
    /// The content is a JSON array of calls.
    Required,
}

/// vLLM's `get_json_schema_from_tools`: the structured-outputs JSON schema that holds
/// the engine to a forced tool choice, `None` for `auto` and `none`.
pub fn forced_tool_schema(request: &ChatCompletionRequest) -> Option<Value> {
    let tools = request.tools.as_ref()?;
    let params_or_empty = |p: &Option<Value>| match p {
        Some(v) if v.as_object().is_some_and(|o| !o.is_empty()) => v.clone(),
        _ => serde_json::json!({"type": "object", "properties": {}}),
    };
    match request.tool_choice.as_ref()? {
        ToolChoice::Named(named) => tools
            .iter()
            .find(|t| t.function.name == named.function.name)
            .map(|t| params_or_empty(&t.function.parameters)),
        ToolChoice::Mode(ToolChoiceMode::Required) => {
            let schemas: Vec<Value> = tools
                .iter()
                .map(|t| {
                    serde_json::json!({
                        "properties": {
                            "name": {"type": "string", "enum": [t.function.name]},
                            "parameters": params_or_empty(&t.function.parameters),
                        },
                        "required": ["name", "parameters"],
                    })
                })
                .collect();
            let mut schema = serde_json::json!({
                "type": "array",
                "minItems": 1,
                "items": {"type": "object", "anyOf": schemas},
            });
            if request.parallel_tool_calls == Some(false) {
                schema["maxItems"] = Value::from(1);
            }
            Some(schema)
        }
        ToolChoice::Mode(_) => None,
    }
}

/// The parser of one choice.
pub struct ChoiceParser {
    inner: Option<MessageParser>,
    mode: ToolMode,
    include_reasoning: bool,
    single_call: bool,
    named_started: bool,
    /// Streaming `required`: the incremental scanner; whole answers parse the text.
    required_stream: Option<RequiredCalls>,
    required_text: String,
    /// Ids of the calls begun so far, by index.
    call_ids: Vec<String>,
    scratch: Vec<Event>,
}

impl std::fmt::Debug for ChoiceParser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChoiceParser")
            .field("mode", &self.mode)
            .field("call_ids", &self.call_ids)
            .finish_non_exhaustive()
    }
}

impl ChoiceParser {
    /// The parser for `request` on a server with `settings`. `prompt_end` is the end of
    /// the rendered prompt (reasoning parsers check whether the template closed the
    /// reasoning already).
    pub fn new(
        settings: &ParserSettings,
        request: &ChatCompletionRequest,
        chat_template_kwargs: Map<String, Value>,
        prompt_end: String,
        streaming: bool,
    ) -> Result<Self, ApiError> {
        let options = ParserOptions {
            tools: request
                .tools
                .iter()
                .flatten()
                .map(|t| vllm_parser::Tool {
                    name: t.function.name.clone(),
                    description: t.function.description.clone(),
                    parameters: t.function.parameters.clone().unwrap_or(Value::Null),
                })
                .collect(),
            chat_template_kwargs,
            prompt: prompt_end,
            response_template: settings.response_template.clone(),
            ..ParserOptions::default()
        };
        let mode = match (settings.tool, request.effective_tool_choice()) {
            (None, _) | (_, ToolChoice::Mode(ToolChoiceMode::None)) => ToolMode::Content,
            (Some(_), ToolChoice::Named(named)) => ToolMode::Named(named.function.name),
            (Some(_), ToolChoice::Mode(ToolChoiceMode::Required)) => ToolMode::Required,
            (Some(_), ToolChoice::Mode(ToolChoiceMode::Auto)) => {
                if settings.enable_auto_tool_choice
                    && request.tools.as_ref().is_some_and(|t| !t.is_empty())
                {
                    ToolMode::Auto
                } else {
                    ToolMode::Content
                }
            }
        };
        let build_error = |e: vllm_parser::ParserError| ApiError::internal(e.to_string());
        let reasoning = settings
            .reasoning
            .map(|name| registry::reasoning_parser(name, &options))
            .transpose()
            .map_err(build_error)?;
        let tool = match (&mode, settings.tool) {
            (ToolMode::Auto, Some(name)) => {
                Some(registry::tool_parser(name, &options).map_err(build_error)?)
            }
            _ => None,
        };
        let has_parser = settings.reasoning.is_some() || settings.tool.is_some();
        Ok(Self {
            inner: has_parser.then(|| MessageParser::new(reasoning, tool)),
            required_stream: (streaming && mode == ToolMode::Required).then(RequiredCalls::default),
            mode,
            include_reasoning: request.include_reasoning,
            single_call: request.parallel_tool_calls == Some(false),
            named_started: false,
            required_text: String::new(),
            call_ids: Vec::new(),
            scratch: Vec::new(),
        })
    }

    /// Whether the server parses output at all (vLLM's `parser_cls is not None`).
    pub fn is_active(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether reasoning, logprobs and token ids are hidden (`include_reasoning: false`
    /// with a parser).
    pub fn hides_metadata(&self) -> bool {
        self.inner.is_some() && !self.include_reasoning
    }

    /// Whether any tool call was emitted.
    pub fn tools_called(&self) -> bool {
        !self.call_ids.is_empty()
    }

    /// Whether a single named function was forced (OpenAI then reports `stop`).
    pub fn named_tool_forced(&self) -> bool {
        matches!(self.mode, ToolMode::Named(_))
    }

    /// Whether a tool call is forced (named or `required`).
    pub fn tool_call_forced(&self) -> bool {
        matches!(self.mode, ToolMode::Named(_) | ToolMode::Required)
    }

    /// Parses one delta of text (the whole text for a non-streamed answer) and returns
    /// its events; `finished` flushes the parsers.
    pub fn push(&mut self, text: &str, token_ids: &[u32], finished: bool) -> Vec<Event> {
        let Some(inner) = &mut self.inner else {
            return if text.is_empty() {
                Vec::new()
            } else {
                vec![Event::Content(text.to_owned())]
            };
        };
        let mut raw = std::mem::take(&mut self.scratch);
        raw.clear();
        inner.push(text, token_ids, &mut raw);
        if finished {
            inner.finish(&mut raw);
        }
        let mut out = Vec::with_capacity(raw.len());
        for event in raw.drain(..) {
            match event {
                Event::Reasoning(_) if !self.include_reasoning => {}
                Event::Content(content) => self.content(content, &mut out),
                Event::ToolCallBegin { index, id, name } => {
                    if self.single_call && index > 0 {
                        continue;
                    }
                    self.call_ids.push(id.unwrap_or_else(ids::tool_call_id));
                    out.push(Event::ToolCallBegin {
                        index,
                        id: self.call_ids.last().cloned(),
                        name,
                    });
                }
                Event::ToolCallArguments { index, .. } | Event::ToolCallEnd { index }
                    if self.single_call && index > 0 => {}
                other => out.push(other),
            }
        }
        if finished && self.mode == ToolMode::Required && self.required_stream.is_none() {
            self.required_calls(&mut out);
        }
        self.scratch = raw;
        out
    }

    fn content(&mut self, content: String, out: &mut Vec<Event>) {
        match &self.mode {
            ToolMode::Content | ToolMode::Auto => out.push(Event::Content(content)),
            ToolMode::Named(name) => {
                if content.is_empty() {
                    return;
                }
                if !self.named_started {
                    self.named_started = true;
                    let id = ids::tool_call_id();
                    self.call_ids.push(id.clone());
                    out.push(Event::ToolCallBegin {
                        index: 0,
                        id: Some(id),
                        name: name.clone(),
                    });
                }
                out.push(Event::ToolCallArguments {
                    index: 0,
                    delta: content,
                });
            }
            ToolMode::Required => match &mut self.required_stream {
                Some(scanner) => {
                    for event in scanner.push(&content, ids::tool_call_id) {
                        match event {
                            Event::ToolCallBegin { index, .. } if self.single_call && index > 0 => {
                            }
                            Event::ToolCallArguments { index, .. }
                                if self.single_call && index > 0 => {}
                            Event::ToolCallBegin { index, id, name } => {
                                self.call_ids.extend(id.clone());
                                out.push(Event::ToolCallBegin { index, id, name });
                            }
                            other => out.push(other),
                        }
                    }
                }
                None => self.required_text.push_str(&content),
            },
        }
    }

    /// `tool_choice: "required"`: the calls of the JSON array, once complete.
    fn required_calls(&mut self, out: &mut Vec<Event>) {
        #[derive(serde::Deserialize)]
        struct Call {
            name: String,
            #[serde(default)]
            parameters: Value,
        }
        let calls: Vec<Call> = serde_json::from_str(&self.required_text).unwrap_or_default();
        for (index, call) in calls.into_iter().enumerate() {
            if self.single_call && index > 0 {
                break;
            }
            let id = ids::tool_call_id();
            self.call_ids.push(id.clone());
            out.push(Event::ToolCallBegin {
                index,
                id: Some(id),
                name: call.name,
            });
            out.push(Event::ToolCallArguments {
                index,
                delta: python_json(&call.parameters),
            });
            out.push(Event::ToolCallEnd { index });
        }
    }

    /// The whole message from all events of the choice.
    pub fn message(&self, events: &[Event]) -> ParsedMessage {
        let mut builder = MessageBuilder::new();
        builder.extend(events);
        let mut message = builder.finish();
        if self.tool_call_forced() && message.content.is_none() {
            message.content = Some(String::new());
        }
        message
    }
}

/// `json.dumps(value, ensure_ascii=False)`.
fn python_json(value: &Value) -> String {
    match vllm_parser::json::loads(&value.to_string()) {
        Ok(parsed) => vllm_parser::json::dumps(&parsed),
        Err(_) => value.to_string(),
    }
}

/// The stream delta for one step's events (`None` when there is nothing to send).
pub fn delta_message(events: &[Event]) -> Option<DeltaMessage> {
    let mut delta = DeltaMessage::default();
    let mut reasoning: Option<String> = None;
    let mut content: Option<String> = None;
    for event in events {
        match event {
            Event::Reasoning(text) => reasoning.get_or_insert_default().push_str(text),
            Event::Content(text) => content.get_or_insert_default().push_str(text),
            Event::ToolCallBegin { index, id, name } => delta.tool_calls.push(DeltaToolCall {
                id: id.clone().map_or(Emit::Unset, Emit::value),
                kind: Emit::value("function".into()),
                index: *index as u32,
                function: Emit::value(DeltaFunctionCall {
                    name: Emit::value(name.clone()),
                    arguments: Emit::Unset,
                }),
            }),
            Event::ToolCallArguments { index, delta: text } => {
                let index = *index as u32;
                match delta.tool_calls.last_mut() {
                    Some(call) if call.index == index => {
                        if let Emit::Set(Some(function)) = &mut call.function {
                            match &mut function.arguments {
                                Emit::Set(Some(args)) => args.push_str(text),
                                other => *other = Emit::value(text.clone()),
                            }
                        }
                    }
                    _ => delta.tool_calls.push(DeltaToolCall {
                        index,
                        function: Emit::value(DeltaFunctionCall {
                            name: Emit::Unset,
                            arguments: Emit::value(text.clone()),
                        }),
                        ..DeltaToolCall::default()
                    }),
                }
            }
            Event::ToolCallEnd { .. } => {}
        }
    }
    if reasoning.is_none() && content.is_none() && delta.tool_calls.is_empty() {
        return None;
    }
    delta.reasoning = reasoning.map_or(Emit::Unset, Emit::value);
    delta.content = content.map_or(Emit::Unset, Emit::value);
    Some(delta)
}
