//! Kimi K2 (vLLM's `parser/kimi_k2.py`, name `kimi_k2` for both parsers):
//!
//! ```text
//! <think>…</think><|tool_calls_section_begin|>
//! <|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Tokyo"}<|tool_call_end|>
//! <|tool_calls_section_end|>
//! ```
//!
//! The header is the call id; the name is its part before `:` without
//! `functions.`. Arguments are the JSON text as written (stripped). Text after
//! the section stays in the tool region and is dropped; content beside calls
//! is not stripped.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{ArgsText, Emit, EngineConfig, State, on};
use crate::engine::models::thinking;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::py_strip;

use Emit::*;
use State::*;

/// The Kimi K2 grammar; `thinking` adds the think markers and starts in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut terminals = Vec::new();
    let mut transitions = Vec::new();
    if thinking {
        terminals.extend([("THINK_START", "<think>"), ("THINK_END", "</think>")]);
        transitions.extend([
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
        ]);
    }
    terminals.extend([
        ("TOOL_SECTION_START", "<|tool_calls_section_begin|>"),
        ("TOOL_SECTION_END", "<|tool_calls_section_end|>"),
        ("TOOL_START", "<|tool_call_begin|>"),
        ("TOOL_END", "<|tool_call_end|>"),
        ("ARG_START", "<|tool_call_argument_begin|>"),
    ]);
    transitions.extend([
        on(
            Reasoning,
            "TOOL_SECTION_START",
            ToolPreamble,
            &[ReasoningEnd],
        ),
        on(Content, "TOOL_SECTION_START", ToolPreamble, &[]),
        on(ToolPreamble, "TOOL_START", ToolName, &[ToolCallStart]),
        on(ToolName, "ARG_START", ToolArgs, &[]),
        on(ToolArgs, "TOOL_END", ToolBetween, &[ToolCallEnd]),
        on(ToolArgs, "TOOL_SECTION_END", ToolPreamble, &[ToolCallEnd]),
        on(ToolBetween, "TOOL_START", ToolName, &[ToolCallStart]),
        on(ToolPreamble, "TOOL_SECTION_END", ToolPreamble, &[]),
        on(ToolBetween, "TOOL_SECTION_END", ToolPreamble, &[]),
    ]);
    let mut config = EngineConfig::new(
        "kimi_k2",
        if thinking { Reasoning } else { Content },
        terminals,
        transitions,
    );
    config.strip_content_whitespace_with_tools = false;
    config.call_header = Some(call_header);
    config.args_text = ArgsText::Stripped;
    config
}

/// The `kimi_k2` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), options)
}

/// The `kimi_k2` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = thinking(options);
    EngineReasoningParser::boxed(config(thinking), thinking, &options.prompt)
}

/// vLLM's `_extract_tool_id_and_name`: the header's longest first-line prefix
/// ending in `:DIGITS` is the id; the name is the id's part before the first
/// `:`, without a `functions.` prefix.
fn call_header(header: &str) -> Option<(String, String)> {
    let line = py_strip(header).split('\n').next().unwrap_or_default();
    let bytes = line.as_bytes();
    let end = (1..bytes.len()).rev().find_map(|colon| {
        (bytes[colon] == b':' && bytes.get(colon + 1).is_some_and(u8::is_ascii_digit)).then(|| {
            let digits = bytes[colon + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            colon + 1 + digits
        })
    })?;
    let id = py_strip(&line[..end]);
    let name = id.split(':').next().unwrap_or_default();
    let name = name.strip_prefix("functions.").unwrap_or(name);
    Some((id.to_owned(), name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_ids() {
        let parse = |h: &str| call_header(h).map(|(id, name)| format!("{id}|{name}"));
        assert_eq!(
            parse(" functions.get_weather:0\n").as_deref(),
            Some("functions.get_weather:0|get_weather")
        );
        assert_eq!(
            parse("functions.a:1:2x").as_deref(),
            Some("functions.a:1:2|a")
        );
        assert_eq!(parse("get_weather"), None);
        assert_eq!(parse(":0"), None);
        assert_eq!(parse("f\n:0"), None);
    }
}
