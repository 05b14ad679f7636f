//! Inkling (vLLM's `parser/inkling.py`, name `inkling` for both parsers):
//! typed content blocks, every marker a special token.
//!
//! ```text
//! <|message_model|><|content_thinking|>…reasoning…<|end_message|>
//! <|message_model|><|content_text|>…visible text…<|end_message|>
//! <|message_model|><|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"SF"}}<|end_message|>
//! ```
//!
//! Blocks repeat in any order. The prompt ends with `<|message_model|>`, so
//! the output starts in the message header ([`State::MessageHeader`]), where
//! an optional function name is metadata: dropped when a block opens, content
//! when the message ends without one. A tool block's JSON names the function
//! (`"name"`) and carries its arguments verbatim under `"args"`; text blocks
//! after calls are content too (vLLM flushes the engine's deferred content).
//! Raw (`<|content_invoke_tool_text|>`) and error (`<|content_tool_error|>`)
//! tool blocks are text. The reasoning parser starts where the prompt's last
//! Inkling marker left off (thinking, text or a header), as vLLM's streaming
//! does; vLLM's whole text always starts in the header.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::granite::member_object;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

use Emit::*;
use State::*;

const MESSAGE_MODEL: &str = "<|message_model|>";
const CONTENT_TEXT: &str = "<|content_text|>";
const CONTENT_THINKING: &str = "<|content_thinking|>";
/// Every Inkling marker, in the terminal order of the config.
const MARKERS: [(&str, &str); 8] = [
    ("MSG_MODEL", MESSAGE_MODEL),
    ("TEXT_START", CONTENT_TEXT),
    ("THINK_START", CONTENT_THINKING),
    ("THINK_END", "<|end_message|>"),
    ("END_SAMPLING", "<|content_model_end_sampling|>"),
    ("TOOL_START", "<|content_invoke_tool_json|>"),
    ("TOOL_TEXT", "<|content_invoke_tool_text|>"),
    ("TOOL_ERROR", "<|content_tool_error|>"),
];

/// The Inkling grammar.
pub fn config() -> EngineConfig {
    let mut transitions = vec![
        on(Content, "MSG_MODEL", MessageHeader, &[]),
        on(MessageHeader, "MSG_MODEL", MessageHeader, &[]),
        on(Reasoning, "THINK_START", Reasoning, &[]),
        on(
            Reasoning,
            "TOOL_START",
            ToolArgs,
            &[ReasoningEnd, ToolCallStart],
        ),
    ];
    // Opening a block from content or from a header; visible blocks confirm
    // that no reasoning is open.
    for from in [Content, MessageHeader] {
        transitions.extend([
            on(from, "TEXT_START", Content, &[ReasoningEnd]),
            on(from, "THINK_START", Reasoning, &[ReasoningStart]),
            on(from, "TOOL_START", ToolArgs, &[ReasoningEnd, ToolCallStart]),
            on(from, "TOOL_TEXT", Content, &[ReasoningEnd]),
            on(from, "TOOL_ERROR", Content, &[ReasoningEnd]),
        ]);
    }
    // Closing a block. A thinking block's `<|end_message|>` defers the end of
    // reasoning to the next opener, so a header is not taken for content.
    for end in ["THINK_END", "END_SAMPLING"] {
        let reasoning_end: &'static [Emit] = if end == "THINK_END" {
            &[]
        } else {
            &[ReasoningEnd]
        };
        transitions.extend([
            on(Content, end, Content, &[]),
            on(Reasoning, end, Content, reasoning_end),
            on(ToolArgs, end, Content, &[ToolCallEnd]),
            on(MessageHeader, end, Content, &[Text]),
        ]);
    }
    let mut config = EngineConfig::new("inkling", MessageHeader, MARKERS.to_vec(), transitions);
    config.wait_for_reasoning = Some(true);
    config.converter = Some(convert);
    config.strip_content_whitespace_with_tools = false;
    config.args_keys = &["args", "arguments", "parameters"];
    config.keep_text_after_calls = true;
    config.prompt_state = Some(prompt_state);
    config
}

/// vLLM's `_inkling_arg_converter(raw, partial=False)`: the verbatim `"args"`
/// object (`{}` without one; `None`, vLLM's error, when it is not an object).
fn convert(raw: &str) -> Option<String> {
    match member_object(raw, "args") {
        Ok(Some(span)) => Some(span.to_owned()),
        Ok(None) => Some("{}".to_owned()),
        Err(()) => None,
    }
}

/// vLLM's `adjust_initial_state_from_prompt`: the prompt's last Inkling marker
/// decides, if it is `<|content_thinking|>`, `<|content_text|>` or
/// `<|message_model|>`.
fn prompt_state(prompt: &str) -> Option<State> {
    let (_, last) = MARKERS
        .iter()
        .filter_map(|(_, marker)| prompt.rfind(marker).map(|at| (at, *marker)))
        .max()?;
    match last {
        CONTENT_THINKING => Some(Reasoning),
        CONTENT_TEXT => Some(Content),
        MESSAGE_MODEL => Some(MessageHeader),
        _ => None,
    }
}

/// The `inkling` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// The `inkling` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let prompt = &options.prompt;
    Box::new(
        EngineReasoningParser::new(config(), true, prompt)
            .with_prompt_ends_reasoning(is_reasoning_end(prompt)),
    )
}

/// `InklingParser.is_reasoning_end`: the prompt's last content-kind marker is
/// `<|content_text|>` or `<|content_model_end_sampling|>` (not
/// `<|content_thinking|>` nor `<|message_model|>`).
fn is_reasoning_end(prompt: &str) -> bool {
    let last = |marker: &str| prompt.rfind(marker);
    let ended = last(CONTENT_TEXT).max(last("<|content_model_end_sampling|>"));
    ended.is_some() && ended > last(CONTENT_THINKING).max(last(MESSAGE_MODEL))
}
