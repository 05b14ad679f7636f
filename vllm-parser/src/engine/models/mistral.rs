//! Mistral v11+ (vLLM's `parser/mistral.py`, name `mistral` for both parsers),
//! as vLLM parses it with a tokenizer that has `[ARGS]` and `[THINK]`:
//!
//! ```text
//! [THINK]…[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]ping{}
//! ```
//!
//! A call has no terminator: its arguments are the first JSON value after the
//! name (as written), and the next `[TOOL_CALLS]` starts another call. A call
//! with an empty name is still a call.
//!
//! Not reproduced: vLLM picks other paths from the tokenizer — pre-v11
//! tokenizers (no `[ARGS]`) get its legacy `[TOOL_CALLS][{…}]` JSON-array
//! extraction, and tokenizers without `[THINK]` get `<think>` text markers
//! (mistral-common v11) or no reasoning at all.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{ArgsText, Emit, EngineConfig, State, on};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};

use Emit::*;
use State::*;

/// The Mistral v11+ grammar with `[THINK]` reasoning.
pub fn config() -> EngineConfig {
    let mut config = EngineConfig::new(
        "mistral",
        Content,
        vec![
            ("THINK_START", "[THINK]"),
            ("THINK_END", "[/THINK]"),
            ("TOOL_CALLS", "[TOOL_CALLS]"),
            ("ARGS", "[ARGS]"),
            ("OPEN_BRACE", "{"),
        ],
        vec![
            on(Content, "THINK_START", Reasoning, &[]),
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
            on(
                Reasoning,
                "TOOL_CALLS",
                ToolName,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(
                Content,
                "TOOL_CALLS",
                ToolName,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(ToolName, "ARGS", ToolArgs, &[]),
            on(ToolName, "OPEN_BRACE", ToolArgs, &[Argument]),
            on(
                ToolArgs,
                "TOOL_CALLS",
                ToolName,
                &[ToolCallEnd, ToolCallStart],
            ),
        ],
    );
    config.args_text = ArgsText::FirstJsonValue;
    config.names_in_arguments = false;
    config.accept_empty_names = true;
    config
}

/// The `mistral` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), &options.tools)
}

/// The `mistral` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(), true, &options.prompt)
}
