//! GLM-4.5 / 4.7 (vLLM's `parser/glm47_moe.py`, names `glm45` and `glm47` for
//! both the tool and the reasoning parser):
//!
//! ```text
//! <think>…</think><tool_call>get_weather
//! <arg_key>city</arg_key>
//! <arg_value>Paris</arg_value>
//! </tool_call>
//! ```
//!
//! Names are stripped and must be tools the request offers; values are text,
//! typed by the tool's schema. With thinking off the grammar has no think
//! markers at all.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::{dict_json, thinking};
use crate::json::PyJson;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::{py_is_space, py_strip};

use Emit::*;
use State::*;

/// The GLM grammar; `thinking` adds the think markers and starts in reasoning.
pub fn config(thinking: bool) -> EngineConfig {
    let mut terminals = Vec::new();
    let mut transitions = Vec::new();
    if thinking {
        terminals.extend([("THINK_START", "<think>"), ("THINK_END", "</think>")]);
        transitions.extend([
            on(Content, "THINK_START", Reasoning, &[ReasoningStart]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(Content, "THINK_END", Content, &[]),
        ]);
    }
    terminals.extend([
        ("TOOL_START", "<tool_call>"),
        ("TOOL_END", "</tool_call>"),
        ("ARG_KEY_START", "<arg_key>"),
        ("ARG_KEY_END", "</arg_key>"),
        ("ARG_VALUE_START", "<arg_value>"),
        ("ARG_VALUE_END", "</arg_value>"),
    ]);
    transitions.extend([
        on(Reasoning, "THINK_START", Reasoning, &[]),
        on(
            Reasoning,
            "TOOL_START",
            ToolName,
            &[ReasoningEnd, ToolCallStart],
        ),
        on(Content, "TOOL_START", ToolName, &[ToolCallStart]),
        on(ToolName, "ARG_KEY_START", ToolArgs, &[Argument]),
        on(ToolName, "TOOL_END", Content, &[ToolCallEnd]),
        on(ToolArgs, "TOOL_END", Content, &[ToolCallEnd]),
    ]);
    for tag in [
        "ARG_KEY_START",
        "ARG_KEY_END",
        "ARG_VALUE_START",
        "ARG_VALUE_END",
    ] {
        transitions.push(on(ToolArgs, tag, ToolArgs, &[Argument]));
    }
    let mut config = EngineConfig::new(
        "glm47_moe",
        if thinking { Reasoning } else { Content },
        terminals,
        transitions,
    );
    config.converter = Some(convert);
    config.validate_tool_names = true;
    config.strip_tool_names = true;
    config.turn_boundaries = vec!["<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"];
    config
}

/// The `glm45` / `glm47` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(thinking(options)), options)
}

/// The `glm45` / `glm47` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    let thinking = thinking(options);
    EngineReasoningParser::boxed(config(thinking), thinking, &options.prompt)
}

const KEY_START: &str = "<arg_key>";
const KEY_END: &str = "</arg_key>";
const VALUE_START: &str = "<arg_value>";
const VALUE_END: &str = "</arg_value>";

/// vLLM's `_glm47_arg_converter(raw, partial=False)`: every
/// `<arg_key>K</arg_key>\s*<arg_value>V</arg_value>`, keys stripped.
fn convert(raw: &str) -> Option<String> {
    let mut params = Vec::new();
    let mut from = 0;
    'starts: while let Some(at) = raw[from..].find(KEY_START) {
        let key_start = from + at + KEY_START.len();
        let mut search = key_start;
        while let Some(k) = raw[search..].find(KEY_END) {
            let key_end = search + k;
            let after = &raw[key_end + KEY_END.len()..];
            let value = after.trim_start_matches(py_is_space);
            if let Some(value) = value.strip_prefix(VALUE_START) {
                let Some(end) = value.find(VALUE_END) else {
                    break 'starts;
                };
                let key = py_strip(&raw[key_start..key_end]).to_owned();
                params.push((key, PyJson::Str(value[..end].to_owned())));
                from = raw.len() - value[end + VALUE_END.len()..].len();
                continue 'starts;
            }
            search = key_end + KEY_END.len();
        }
        from = key_start;
    }
    Some(dict_json(params))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converter_follows_the_regex() {
        let raw = "<arg_key> a </arg_key>\n<arg_value>1</arg_value><arg_key>b</arg_key>x</arg_key> <arg_value>2</arg_value><arg_key>c</arg_key><arg_value>open";
        assert_eq!(convert(raw).unwrap(), r#"{"a": "1", "b</arg_key>x": "2"}"#);
    }
}
