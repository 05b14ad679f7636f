//! Mistral (vLLM's `parser/mistral.py`, name `mistral` for both parsers). vLLM's
//! `MistralParser` reads one of several formats, picked from the tokenizer
//! ([`MistralFormat`], chosen by [`MistralFormat::detect`]):
//!
//! ```text
//! [THINK]…[/THINK][TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]ping{}
//! ```
//!
//! v11+ calls (a tokenizer with `[ARGS]`, or mistral-common v11+): a call has
//! no terminator: its arguments are the first JSON value after the name (as
//! written), and the next `[TOOL_CALLS]` starts another call. A call with an
//! empty name is still a call. Pre-v11 calls are a JSON array after
//! `[TOOL_CALLS]` ([`crate::tool::mistral_pre_v11`]).
//!
//! Reasoning is `[THINK]…[/THINK]` when the vocabulary has `[THINK]`,
//! `<think>…</think>` as text for a mistral-common tekken v11+ tokenizer
//! without it, and absent otherwise (`mistral_config(reasoning_encoding=…)`:
//! `special_token`, `text`, `none`); `[TOOL_CALLS]` ends reasoning.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{ArgsText, Emit, EngineConfig, State, Transition, on};
use crate::parser::{MistralFormat, MistralReasoning, ParserOptions, ReasoningParser, ToolParser};
use crate::tool::mistral_pre_v11::MistralPreV11;
use crate::tool::settle::SettleParser;

use Emit::*;
use State::*;

/// The Mistral grammar (v11+ calls) with the given reasoning markers.
pub fn config(reasoning: MistralReasoning) -> EngineConfig {
    let think = match reasoning {
        MistralReasoning::SpecialToken => Some(("[THINK]", "[/THINK]")),
        MistralReasoning::Text => Some(("<think>", "</think>")),
        MistralReasoning::None => None,
    };
    let mut terminals = Vec::new();
    let mut transitions: Vec<Transition> = Vec::new();
    if let Some((start, end)) = think {
        terminals.extend([("THINK_START", start), ("THINK_END", end)]);
        transitions.extend([
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
        ]);
    } else {
        transitions.push(on(Content, "TOOL_CALLS", ToolName, &[ToolCallStart]));
    }
    terminals.extend([
        ("TOOL_CALLS", "[TOOL_CALLS]"),
        ("ARGS", "[ARGS]"),
        ("OPEN_BRACE", "{"),
    ]);
    transitions.extend([
        on(ToolName, "ARGS", ToolArgs, &[]),
        on(ToolName, "OPEN_BRACE", ToolArgs, &[Argument]),
        on(
            ToolArgs,
            "TOOL_CALLS",
            ToolName,
            &[ToolCallEnd, ToolCallStart],
        ),
    ]);
    let mut config = EngineConfig::new("mistral", Content, terminals, transitions);
    config.args_text = ArgsText::FirstJsonValue;
    config.names_in_arguments = false;
    config.accept_empty_names = true;
    config.wait_for_reasoning = Some(think.is_some());
    config
}

/// The `mistral` tool parser for `options.mistral`'s format.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    let MistralFormat {
        pre_v11_calls,
        reasoning,
    } = options.mistral;
    if pre_v11_calls {
        SettleParser::boxed(MistralPreV11::new(options))
    } else {
        EngineToolParser::boxed(config(reasoning), options)
    }
}

/// The `mistral` reasoning parser for `options.mistral`'s reasoning markers
/// (none: everything is content).
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let reasoning = options.mistral.reasoning;
    EngineReasoningParser::boxed(
        config(reasoning),
        reasoning != MistralReasoning::None,
        &options.prompt,
    )
}
