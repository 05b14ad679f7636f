//! MiniMax M2 (vLLM's `parser/minimax_m2.py`, name `minimax_m2` for both
//! parsers):
//!
//! ```text
//! …reasoning…</think>
//! <minimax:tool_call><invoke name="get_weather">
//! <parameter name="city">Seattle</parameter>
//! </invoke></minimax:tool_call>
//! ```
//!
//! The output starts in reasoning (the template opens `<think>`). Each
//! `<invoke>` is a call, with or without the wrapper; names must be tools the
//! request offers; values are verbatim text, typed by the tool's schema.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::{ParamTag, dict_json, skip_space, spaced, tag_params};
use crate::json::PyJson;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::{py_is_space, py_strip};

use Emit::*;
use State::*;

const INVOKE_PREFIXES: [&str; 3] = [
    "INVOKE_PREFIX_DQ",
    "INVOKE_PREFIX_SQ",
    "INVOKE_PREFIX_UNQUOTED",
];
const NAME_ENDS: [&str; 3] = ["NAME_END_DQ", "NAME_END_SQ", "NAME_END_UNQUOTED"];

/// The MiniMax M2 grammar.
pub fn config() -> EngineConfig {
    let mut transitions = vec![
        on(Reasoning, "THINK_START", Reasoning, &[]),
        on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
        on(Content, "THINK_END", Content, &[]),
        on(Reasoning, "TOOL_START", ToolPreamble, &[ReasoningEnd]),
        on(Content, "TOOL_START", ToolPreamble, &[]),
        on(ToolArgs, "PARAM_START", ToolArgs, &[Argument]),
        on(ToolArgs, "PARAM_END", ToolArgs, &[Argument]),
        on(ToolPreamble, "TOOL_END", Content, &[]),
        on(ToolBetween, "TOOL_END", Content, &[]),
        on(Content, "TOOL_END", Content, &[]),
        on(ToolArgs, "INVOKE_END", ToolBetween, &[ToolCallEnd]),
    ];
    for state in [Content, ToolPreamble, ToolBetween] {
        for prefix in INVOKE_PREFIXES {
            transitions.push(on(state, prefix, ToolName, &[ToolCallStart]));
        }
    }
    for end in NAME_ENDS {
        transitions.push(on(ToolName, end, ToolArgs, &[]));
    }
    let mut config = EngineConfig::new(
        "minimax_m2",
        Reasoning,
        vec![
            ("THINK_START", "<think>"),
            ("THINK_END", "</think>"),
            ("TOOL_START", "<minimax:tool_call>"),
            ("PARAM_START", "<parameter name="),
            ("PARAM_END", "</parameter>"),
            ("TOOL_END", "</minimax:tool_call>"),
            ("INVOKE_PREFIX_DQ", "<invoke name=\""),
            ("INVOKE_PREFIX_SQ", "<invoke name='"),
            ("INVOKE_PREFIX_UNQUOTED", "<invoke name="),
            ("INVOKE_END", "</invoke>"),
            ("NAME_END_DQ", "\">"),
            ("NAME_END_SQ", "'>"),
            ("NAME_END_UNQUOTED", ">"),
        ],
        transitions,
    );
    config.converter = Some(convert);
    config.validate_tool_names = true;
    config
}

/// The `minimax_m2` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// The `minimax_m2` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    EngineReasoningParser::boxed(config(), true, &options.prompt)
}

/// `<\s*parameter\s+name\s*=\s*("…"|'…'|[^>\s]+)\s*>` … `<\s*/\s*parameter\s*>`.
const PARAM: ParamTag = ParamTag {
    open: |text| {
        let at = spaced(text, &["<", "parameter"], false)?;
        let after = skip_space(text, at);
        (after > at).then_some(())?;
        spaced(&text[after..], &["name", "="], true).map(|len| after + len)
    },
    name: param_name,
    close: |text| spaced(text, &["<", "/", "parameter", ">"], false),
};

/// The quoted or bare name and the length through `\s*>`.
fn param_name(text: &str) -> Option<(&str, Option<&str>, usize)> {
    let close = |text: &str, at: usize| {
        let at = skip_space(text, at);
        text[at..].starts_with('>').then_some(at + 1)
    };
    for quote in ['"', '\''] {
        if let Some(rest) = text.strip_prefix(quote)
            && let Some(end) = rest.find(quote)
            && let Some(len) = close(text, end + 2)
        {
            return Some((&rest[..end], None, len));
        }
    }
    let bare = text
        .find(|c: char| c == '>' || py_is_space(c))
        .unwrap_or(text.len());
    if bare == 0 {
        return None;
    }
    close(text, bare).map(|len| (&text[..bare], None, len))
}

/// vLLM's `_minimax_m2_arg_converter(raw, partial=False)`: names stripped,
/// nameless parameters skipped, values verbatim.
fn convert(raw: &str) -> Option<String> {
    let params = tag_params(raw, &PARAM)
        .into_iter()
        .map(|p| (py_strip(p.name), p.value))
        .filter(|(name, _)| !name.is_empty())
        .map(|(name, value)| (name.to_owned(), PyJson::Str(value.to_owned())));
    Some(dict_json(params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converter_reads_quoted_and_bare_names() {
        let raw = "<parameter name=\"a\">1</parameter><parameter name='b' > 2 </parameter><parameter  name=c>x<parameter name=\" \">y</parameter><parameter name=d>open";
        assert_eq!(convert(raw).unwrap(), r#"{"a": "1", "b": " 2 ", "c": "x"}"#);
        assert_eq!(convert("<parametername=a>1</parameter>").unwrap(), "{}");
    }
}
