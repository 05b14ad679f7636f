//! One chat choice's parsing with vLLM's serving rules around the parsers.

use serde_json::Value;

use super::ids::{mistral_tool_call_id, tool_call_id};
use super::required::RequiredCalls;
use super::tables;
use super::{ServingError, ServingParsers, ServingRequest, ToolChoice};
use crate::event::Event;
use crate::message::{MessageBuilder, ParsedMessage};
use crate::parser::ParserOptions;
use crate::pipeline::MessageParser;
use crate::registry;

/// What the content after reasoning is taken as (`DelegatingParser._extract_tool_calls`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Plain content (no tool parser, or `tool_choice: none` with a legacy pair).
    Content,
    /// `tool_choice: none` with an engine-based pair: the tool parser runs and
    /// its calls are dropped (their markup with them).
    ContentThroughParser,
    /// The tool parser finds calls (`auto`, or `required`/named for a parser
    /// without `supports_required_and_named`).
    Auto,
    /// The content is the arguments of this function.
    Named(String),
    /// The content is a JSON array of `{"name", "parameters"}`.
    Required,
}

/// The parser of one chat choice: reasoning, content and tool calls, with
/// vLLM's `tool_choice`, `parallel_tool_calls` and `include_reasoning` rules.
///
/// Feed every engine step with [`push`](Self::push) (a whole answer is one
/// push with `finished`), keep the events, then build the message with
/// [`message`](Self::message) and the finish reason with
/// [`finish_reason`](Self::finish_reason).
pub struct ChoiceParser {
    inner: Option<MessageParser>,
    mode: Mode,
    /// Whether the response keeps the calls the parser found
    /// (`keeps_tool_calls`).
    keep_calls: bool,
    /// `required` or named: content is at least `""`.
    forced: bool,
    named_forced: bool,
    include_reasoning: bool,
    single_call: bool,
    named_started: bool,
    named_text: String,
    streaming: bool,
    required_stream: Option<RequiredCalls>,
    required_text: String,
    call_ids: Vec<String>,
    /// Makes the id of a call the tool parser found: vLLM's `mistral` parser
    /// makes Mistral's 9-alphanumeric ids, the others `chatcmpl-tool-…`.
    new_id: fn() -> String,
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
    pub(super) fn new(
        parsers: &ServingParsers,
        request: &ServingRequest,
        options: ParserOptions,
        streaming: bool,
    ) -> Result<Self, ServingError> {
        let choice = request.effective_tool_choice();
        let tool_traits = parsers.active_tool_name.and_then(tables::tool_traits);
        // Cohere's, Kimi K3's and Harmony's parser-level classes parse every choice
        // natively (`required` / named parse like `auto`; `none` drops the calls).
        let cohere = parsers
            .active_tool_name
            .is_some_and(|t| t.starts_with("cohere_command") || matches!(t, "kimi_k3" | "openai"));
        // vLLM's `ResponseTemplateParser.parse` (`hf`, `beam`) also parses a
        // forced choice with the template (`_tool_parsing_enabled`), whatever
        // its tool parser class says about `supports_required_and_named`.
        let template = parsers
            .active_tool_name
            .is_some_and(|t| super::TEMPLATE_PARSERS.contains(&t));
        let supports =
            tool_traits.is_some_and(|t| t.supports_required_and_named) && !cohere && !template;
        let build = |e: crate::ParserError| ServingError::new(e.to_string(), None);
        let reasoning = parsers
            .reasoning
            .map(|name| registry::reasoning_parser_beside(name, parsers.active_tool_name, &options))
            .transpose()
            .map_err(build)?;
        // vLLM's template parser runs for `none` too, parsing no calls; with
        // only its tool half it parses no reasoning either.
        let mut reasoning = match reasoning {
            None if template && choice == ToolChoice::None => {
                Some(crate::response_template::TemplateParser::content(&options))
            }
            reasoning => reasoning,
        };
        let engine_pair = reasoning.as_ref().is_none_or(|r| r.is_engine_based())
            && tool_traits.is_none_or(|t| t.engine_based);
        let mode = match (parsers.active_tool_name, &choice) {
            (None, _) => Mode::Content,
            (Some(_), ToolChoice::None) if engine_pair || cohere => Mode::ContentThroughParser,
            (Some(_), ToolChoice::None) => Mode::Content,
            (Some(_), ToolChoice::Named(name)) if supports => Mode::Named(name.clone()),
            (Some(_), ToolChoice::Required) if supports => Mode::Required,
            (Some(_), _) => Mode::Auto,
        };
        // Where calls are parsed, a legacy reasoning parser starts as vLLM's
        // whole text does (see `ReasoningParser::follows_whole_text`).
        if let (Mode::Auto, Some(reasoning)) = (&mode, &mut reasoning) {
            reasoning.follows_whole_text();
        }
        let tool = match (&mode, parsers.active_tool_name) {
            (Mode::Auto | Mode::ContentThroughParser, Some(name)) => {
                Some(registry::tool_parser(name, &options).map_err(build)?)
            }
            _ => None,
        };
        let forced = matches!(choice, ToolChoice::Required | ToolChoice::Named(_));
        let keep_calls = forced
            || (parsers.active_tool_name.is_some()
                && choice == ToolChoice::Auto
                && request.has_tools());
        Ok(Self {
            inner: parsers
                .is_active()
                .then(|| MessageParser::new(reasoning, tool)),
            required_stream: (streaming && mode == Mode::Required).then(RequiredCalls::default),
            mode,
            keep_calls: keep_calls && parsers.active_tool_name.is_some(),
            forced: forced && parsers.active_tool_name.is_some(),
            named_forced: matches!(choice, ToolChoice::Named(_)),
            include_reasoning: request.include_reasoning,
            single_call: request.parallel_tool_calls == Some(false),
            named_started: false,
            named_text: String::new(),
            streaming,
            required_text: String::new(),
            call_ids: Vec::new(),
            new_id: match parsers.active_tool_name {
                Some("mistral") => mistral_tool_call_id,
                _ => tool_call_id,
            },
            scratch: Vec::new(),
        })
    }

    /// Whether the server parses output at all (vLLM's `parser_cls is not None`);
    /// without, every delta is content as it comes.
    pub fn is_active(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether reasoning, logprobs and token ids are hidden
    /// (`include_reasoning: false` with a parser).
    pub fn hides_metadata(&self) -> bool {
        self.inner.is_some() && !self.include_reasoning
    }

    /// Whether any tool call was emitted so far.
    pub fn tools_called(&self) -> bool {
        !self.call_ids.is_empty()
    }

    /// vLLM's `resolve_finish_reason`: `tool_calls` when the choice carries
    /// calls, the engine stopped on its own (`stop`) and no single named
    /// function was forced (OpenAI reports `stop` then); else the engine's
    /// reason.
    pub fn finish_reason<'a>(&self, engine_reason: &'a str) -> &'a str {
        if self.tools_called() && engine_reason == "stop" && !self.named_forced {
            "tool_calls"
        } else {
            engine_reason
        }
    }

    /// Parse one delta of text (the whole text for a non-streamed answer) and
    /// its token ids; `finished` flushes the parsers. Returns the events to
    /// send (tool calls carry their ids).
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
                Event::ToolCallBegin { .. }
                | Event::ToolCallArguments { .. }
                | Event::ToolCallEnd { .. }
                    if !self.keep_calls || self.mode == Mode::ContentThroughParser => {}
                Event::ToolCallBegin { index, id, name } => {
                    if self.single_call && index > 0 {
                        continue;
                    }
                    self.call_ids.push(id.unwrap_or_else(self.new_id));
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
        if finished {
            match self.mode {
                Mode::Required if self.required_stream.is_none() => self.required_calls(&mut out),
                Mode::Named(_) if !self.streaming => self.named_call(&mut out),
                _ => {}
            }
        }
        self.scratch = raw;
        out
    }

    fn content(&mut self, content: String, out: &mut Vec<Event>) {
        match &self.mode {
            Mode::Content | Mode::ContentThroughParser | Mode::Auto => {
                out.push(Event::Content(content))
            }
            Mode::Named(name) => {
                if !self.streaming {
                    self.named_text.push_str(&content);
                    return;
                }
                if content.is_empty() {
                    return;
                }
                if !self.named_started {
                    self.named_started = true;
                    let name = name.clone();
                    self.begin_call(0, name, out);
                }
                out.push(Event::ToolCallArguments {
                    index: 0,
                    delta: content,
                });
            }
            Mode::Required => match &mut self.required_stream {
                Some(scanner) => {
                    for event in scanner.push(&content, tool_call_id) {
                        match event {
                            Event::ToolCallBegin { index, .. }
                            | Event::ToolCallArguments { index, .. }
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

    /// A whole answer with a named function forced: the content is its
    /// arguments, unless it is blank (no call, no content).
    fn named_call(&mut self, out: &mut Vec<Event>) {
        let Mode::Named(name) = &self.mode else {
            return;
        };
        if crate::text::py_is_blank(&self.named_text) {
            return;
        }
        let name = name.clone();
        self.begin_call(0, name, out);
        out.push(Event::ToolCallArguments {
            index: 0,
            delta: std::mem::take(&mut self.named_text),
        });
        out.push(Event::ToolCallEnd { index: 0 });
    }

    /// A whole `tool_choice: required` answer: the calls of the JSON array
    /// (vLLM's `TypeAdapter(list[FunctionDefinition])`; arguments are
    /// `json.dumps(parameters, ensure_ascii=False)`).
    fn required_calls(&mut self, out: &mut Vec<Event>) {
        #[derive(serde::Deserialize)]
        struct Call {
            name: String,
            #[serde(default)]
            parameters: Option<Value>,
        }
        let calls: Vec<Call> = serde_json::from_str(&self.required_text).unwrap_or_default();
        for (index, call) in calls.into_iter().enumerate() {
            if self.single_call && index > 0 {
                break;
            }
            self.begin_call(index, call.name, out);
            out.push(Event::ToolCallArguments {
                index,
                delta: python_json(call.parameters.as_ref().unwrap_or(&Value::Null)),
            });
            out.push(Event::ToolCallEnd { index });
        }
    }

    /// Announces call `index` of function `name` with a fresh vLLM-style id.
    fn begin_call(&mut self, index: usize, name: String, out: &mut Vec<Event>) {
        let id = tool_call_id();
        self.call_ids.push(id.clone());
        out.push(Event::ToolCallBegin {
            index,
            id: Some(id),
            name,
        });
    }

    /// The whole message from all events of the choice (vLLM's
    /// `assemble_chat_message_fields`: a forced call makes content at least `""`).
    pub fn message(&self, events: &[Event]) -> ParsedMessage {
        let mut builder = MessageBuilder::new();
        builder.extend(events);
        let mut message = builder.finish();
        if self.forced && message.content.is_none() {
            message.content = Some(String::new());
        }
        message
    }
}

/// `json.dumps(value, ensure_ascii=False)`.
fn python_json(value: &Value) -> String {
    match crate::json::loads(&value.to_string()) {
        Ok(parsed) => crate::json::dumps(&parsed),
        Err(_) => value.to_string(),
    }
}
