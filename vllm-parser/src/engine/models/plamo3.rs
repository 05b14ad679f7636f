//! PLaMo 3 (vLLM's `parser/plamo3.py`, name `plamo3` for both parsers):
//!
//! ```text
//! <|plamo:begin_think:plamo|>…<|plamo:end_think:plamo|>
//! <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>
//! <|plamo:begin_tool_name:plamo|>get_weather<|plamo:end_tool_name:plamo|>
//! <|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Paris"}<|plamo:end_tool_arguments:plamo|>
//! <|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>
//! ```
//!
//! Names and arguments are separate fields; arguments are the JSON text as
//! written (stripped). The end-of-turn tag `<|plamo:tag|>` never shows. With
//! thinking off the grammar has no think markers. An output cut inside a
//! marker loses the unfinished marker: from the reasoning (both parsers) and
//! from the content (the tool parser).
//!
//! vLLM decides "unfinished marker" by token ids (the tail's ids are a proper
//! prefix of a terminal's ids); we decide it by text (the tail is a proper
//! prefix of a terminal), which agrees wherever the tokenizer splits the tail
//! where it splits the terminal.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{ArgsText, Emit, EngineConfig, State, on};
use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

use Emit::*;
use State::*;

/// The PLaMo 3 grammar; `thinking` adds the think markers and starts in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut terminals = Vec::new();
    let mut transitions = Vec::new();
    if thinking {
        terminals.extend([
            ("THINK_START", "<|plamo:begin_think:plamo|>"),
            ("THINK_END", "<|plamo:end_think:plamo|>"),
        ]);
        transitions.extend([
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Content, "THINK_START", Reasoning, &[ReasoningStart]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
            on(
                Reasoning,
                "TOOL_REQUESTS_START",
                ToolPreamble,
                &[ReasoningEnd],
            ),
        ]);
    }
    terminals.extend([
        ("TOOL_REQUESTS_START", "<|plamo:begin_tool_requests:plamo|>"),
        ("TOOL_REQUESTS_END", "<|plamo:end_tool_requests:plamo|>"),
        ("TOOL_REQUEST_START", "<|plamo:begin_tool_request:plamo|>"),
        ("TOOL_REQUEST_END", "<|plamo:end_tool_request:plamo|>"),
        ("TOOL_NAME_START", "<|plamo:begin_tool_name:plamo|>"),
        ("TOOL_NAME_END", "<|plamo:end_tool_name:plamo|>"),
        (
            "TOOL_ARGS_START",
            "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>",
        ),
        ("TOOL_ARGS_END", "<|plamo:end_tool_arguments:plamo|>"),
        ("EOT", "<|plamo:tag|>"),
    ]);
    transitions.extend([
        on(Content, "TOOL_REQUESTS_START", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_REQUEST_START", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_NAME_START", ToolName, &[ToolCallStart]),
        on(ToolName, "TOOL_NAME_END", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_ARGS_START", ToolArgs, &[]),
        on(ToolArgs, "TOOL_ARGS_END", ToolBetween, &[]),
        on(
            ToolBetween,
            "TOOL_REQUEST_END",
            ToolPreamble,
            &[ToolCallEnd],
        ),
        on(ToolPreamble, "TOOL_REQUESTS_END", Content, &[]),
        on(Reasoning, "EOT", Content, &[ReasoningEnd]),
    ]);
    for state in [Content, ToolPreamble, ToolName, ToolArgs, ToolBetween] {
        transitions.push(on(state, "EOT", Content, &[]));
    }
    let mut config = EngineConfig::new(
        "plamo3",
        if thinking { Reasoning } else { Content },
        terminals,
        transitions,
    );
    config.strip_content_whitespace_with_tools = false;
    config.strip_trailing_reasoning_whitespace = false;
    config.args_text = ArgsText::Stripped;
    config
}

/// Whether the request thinks (`enable_thinking`, on by default).
fn thinking(options: &ParserOptions) -> bool {
    options.template_flag("enable_thinking", true)
}

/// The `plamo3` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    let config = config(thinking(options));
    let terminals = terminals(&config);
    Box::new(Plamo3Tool {
        inner: EngineToolParser::new(config, options),
        terminals,
    })
}

/// The `plamo3` reasoning parser. With thinking off the engine still runs
/// (it drops the end-of-turn tag).
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = thinking(options);
    let config = config(thinking);
    let terminals = terminals(&config);
    Box::new(Plamo3Reasoning {
        inner: EngineReasoningParser::new(config, true, &options.prompt),
        terminals,
        prompt_ends_reasoning: !thinking || is_reasoning_end(&options.prompt),
    })
}

/// `Plamo3Parser.is_reasoning_end` with thinking on: scanning the prompt
/// backwards, the end-of-think tag answers `true`, the begin-of-think tag or
/// the end-of-turn tag (`<|plamo:tag|>`) `false`, as does the prompt's start.
fn is_reasoning_end(prompt: &str) -> bool {
    let last = |marker: &str| prompt.rfind(marker);
    let end = last("<|plamo:end_think:plamo|>");
    end.is_some() && end > last("<|plamo:begin_think:plamo|>") && end > last("<|plamo:tag|>")
}

fn terminals(config: &EngineConfig) -> Vec<&'static str> {
    config
        .terminals
        .iter()
        .map(|(_, spelling)| *spelling)
        .collect()
}

/// Cuts an unfinished marker off the end of the last `kind` text among the
/// events of a parser's `finish` (the lexer held the marker back until then,
/// so it is all in one event).
fn strip_unfinished_marker(
    events: &mut Vec<Event>,
    from: usize,
    terminals: &[&str],
    reasoning: bool,
) {
    let last = events[from..].iter().rposition(|event| {
        matches!(event, Event::Reasoning(_)) == reasoning
            && matches!(event, Event::Reasoning(_) | Event::Content(_))
    });
    let Some(at) = last.map(|i| from + i) else {
        return;
    };
    let (Event::Reasoning(text) | Event::Content(text)) = &mut events[at] else {
        return;
    };
    let Some(start) = text.rfind("<|plamo:") else {
        return;
    };
    let tail = &text[start..];
    if terminals
        .iter()
        .any(|t| t.len() > tail.len() && t.starts_with(tail))
    {
        text.truncate(start);
        if text.is_empty() {
            events.remove(at);
        }
    }
}

/// The engine's tool parser, cutting an unfinished marker off the content.
struct Plamo3Tool {
    inner: EngineToolParser,
    terminals: Vec<&'static str>,
}

impl ToolParser for Plamo3Tool {
    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.inner.push(text, token_ids, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let from = out.len();
        self.inner.finish(out);
        strip_unfinished_marker(out, from, &self.terminals, false);
    }

    fn follows_reasoning_parser(&mut self) {
        self.inner.follows_reasoning_parser();
    }

    fn follows_legacy_reasoning_parser(&mut self) {
        self.inner.follows_legacy_reasoning_parser();
    }
}

/// The engine's reasoning parser, cutting an unfinished marker off the
/// reasoning.
struct Plamo3Reasoning {
    inner: EngineReasoningParser,
    terminals: Vec<&'static str>,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
}

impl ReasoningParser for Plamo3Reasoning {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn is_engine_based(&self) -> bool {
        true
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        self.inner.push(text, token_ids, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let from = out.len();
        self.inner.finish(out);
        strip_unfinished_marker(out, from, &self.terminals, true);
    }
}
