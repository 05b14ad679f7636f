//! Gemma 4 (vLLM's `parser/gemma4.py`, name `gemma4` for both parsers):
//!
//! ```text
//! <|channel>thought
//! …reasoning…<channel|><|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:3}<tool_call|>
//! ```
//!
//! Arguments are Gemma's own notation: `key:value` pairs, strings between
//! `<|"|>` delimiters, bare values (kept as text, then typed by the tool's
//! schema), nested `{…}` and `[…]`. Reasoning loses a leading `thought\n`.
//!
//! Not reproduced: on the first delta vLLM prepends `<|channel>` when the
//! delta holds `<channel|>` or starts with `thought\n` (and no `<|channel>`),
//! and it may start in reasoning when the prompt ends inside a channel block;
//! both need a tokenizer with Gemma 4's channel tokens, and the first depends
//! on how the first delta is cut.

use crate::engine::adapters::{EngineReasoningParser, EngineToolParser};
use crate::engine::config::{Emit, EngineConfig, State, on};
use crate::engine::models::dict_json;
use crate::event::Event;
use crate::json::PyJson;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::text::{py_is_space, py_strip};

use Emit::*;
use State::*;

const DELIM: &str = "<|\"|>";

/// The Gemma 4 grammar (the output always starts in content).
pub fn config() -> EngineConfig {
    let mut config = EngineConfig::new(
        "gemma4",
        Content,
        vec![
            ("THINK_START", "<|channel>"),
            ("THINK_END", "<channel|>"),
            ("TOOL_START", "<|tool_call>"),
            ("TOOL_END", "<tool_call|>"),
            ("CALL_PREFIX", "call:"),
            ("COLON", ":"),
            ("OPEN_BRACE", "{"),
            ("OPEN_PAREN", "("),
        ],
        vec![
            on(Content, "THINK_START", Reasoning, &[ReasoningStart]),
            on(Reasoning, "THINK_START", Reasoning, &[]),
            on(Reasoning, "THINK_END", Content, &[ReasoningEnd]),
            on(
                Reasoning,
                "TOOL_START",
                ToolPreamble,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(
                Content,
                "TOOL_START",
                ToolPreamble,
                &[ReasoningEnd, ToolCallStart],
            ),
            on(ToolPreamble, "TOOL_END", Content, &[ToolCallEnd]),
            on(ToolPreamble, "CALL_PREFIX", ToolName, &[]),
            on(ToolPreamble, "COLON", ToolName, &[]),
            on(ToolName, "OPEN_BRACE", ToolArgs, &[]),
            on(ToolName, "OPEN_PAREN", ToolArgs, &[]),
            on(ToolName, "TOOL_END", Content, &[ToolCallEnd]),
            on(ToolArgs, "TOOL_END", Content, &[ToolCallEnd]),
            on(Content, "TOOL_END", Content, &[]),
            on(Content, "THINK_END", Content, &[]),
        ],
    );
    config.converter = Some(convert);
    config
}

/// The `gemma4` tool parser.
pub fn tool_parser(options: &ParserOptions) -> Box<dyn ToolParser> {
    EngineToolParser::boxed(config(), options)
}

/// The `gemma4` reasoning parser.
pub fn reasoning_parser(options: &ParserOptions) -> Box<dyn ReasoningParser> {
    // vLLM's `gemma4_config(thinking)`: the thinking flag only decides
    // `wait_for_reasoning` (`enable_thinking`, off by default).
    let mut config = config();
    config.wait_for_reasoning = Some(options.template_flag("enable_thinking", false));
    Box::new(ThoughtPrefix {
        inner: EngineReasoningParser::new(config, true, &options.prompt),
        head: String::new(),
        decided: false,
    })
}

const THOUGHT: &str = "thought\n";

/// Drops a leading `thought\n` from the reasoning, and reasoning that is only
/// `thought` (vLLM's `Gemma4Parser.extract_reasoning`, after the engine's
/// trailing-whitespace strip).
struct ThoughtPrefix {
    inner: EngineReasoningParser,
    /// Reasoning held while it may still be the prefix.
    head: String,
    decided: bool,
}

impl ThoughtPrefix {
    fn filter(&mut self, events: Vec<Event>, out: &mut Vec<Event>) {
        for event in events {
            match event {
                Event::Reasoning(text) if !self.decided => {
                    self.head.push_str(&text);
                    if self.head.starts_with(THOUGHT) {
                        self.decided = true;
                        let rest = self.head.split_off(THOUGHT.len());
                        self.head.clear();
                        if !rest.is_empty() {
                            out.push(Event::Reasoning(rest));
                        }
                    } else if !THOUGHT.starts_with(self.head.as_str()) {
                        self.decided = true;
                        out.push(Event::Reasoning(std::mem::take(&mut self.head)));
                    }
                }
                other => out.push(other),
            }
        }
    }
}

impl ReasoningParser for ThoughtPrefix {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        self.inner.prompt_ends_reasoning()
    }

    fn push(&mut self, text: &str, token_ids: &[u32], out: &mut Vec<Event>) {
        let mut events = Vec::new();
        self.inner.push(text, token_ids, &mut events);
        self.filter(events, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let mut events = Vec::new();
        self.inner.finish(&mut events);
        self.filter(events, out);
        // A held head is a proper prefix of `thought\n`, already stripped of
        // trailing whitespace: only `thought` itself is dropped.
        let head = std::mem::take(&mut self.head);
        if !head.is_empty() && head != "thought" {
            out.push(Event::Reasoning(head));
        }
    }

    fn is_engine_based(&self) -> bool {
        true
    }
}

/// vLLM's `_gemma4_arg_converter(raw, partial=False)`.
fn convert(raw: &str) -> Option<String> {
    let text = py_strip(raw);
    let excess = text.matches('(').count() < text.matches(')').count();
    let text = if text.ends_with('}') || (text.ends_with(')') && excess) {
        &text[..text.len() - 1]
    } else {
        text
    };
    Some(dict_json(fields(text, false)))
}

/// Skip bytes of `set` from `at`.
fn skip(bytes: &[u8], mut at: usize, set: &[u8]) -> usize {
    while at < bytes.len() && set.contains(&bytes[at]) {
        at += 1;
    }
    at
}

/// The end of a bracketed value opened just before `at` (`open`/`close`),
/// skipping delimited strings: `(end, closed)`.
fn bracket_end(s: &str, mut at: usize, open: u8, close: u8) -> (usize, bool) {
    let bytes = s.as_bytes();
    let mut depth = 1;
    while at < bytes.len() && depth > 0 {
        if s[at..].starts_with(DELIM) {
            at += DELIM.len();
            at = s[at..]
                .find(DELIM)
                .map_or(bytes.len(), |end| at + end + DELIM.len());
            continue;
        }
        if bytes[at] == open {
            depth += 1;
        } else if bytes[at] == close {
            depth -= 1;
        }
        at += 1;
    }
    (at, depth == 0)
}

/// A nested `{…}` or `[…]` value starting at `at` (just after the opener).
fn nested(s: &str, at: usize, object: bool) -> (PyJson, usize) {
    let (open, close) = if object { (b'{', b'}') } else { (b'[', b']') };
    let (end, closed) = bracket_end(s, at, open, close);
    let inner = if closed { &s[at..end - 1] } else { &s[at..end] };
    let value = if object {
        PyJson::Dict(dict_items(fields(inner, !closed)))
    } else {
        PyJson::List(items(inner, !closed))
    };
    (value, end)
}

/// `dict` semantics for parsed fields (first position, last value).
fn dict_items(fields: Vec<(String, PyJson)>) -> Vec<(String, PyJson)> {
    let mut out: Vec<(String, PyJson)> = Vec::new();
    for (key, value) in fields {
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => out.push((key, value)),
        }
    }
    out
}

/// vLLM's `_parse_gemma4_fields`: `key:value` pairs, in order.
fn fields(s: &str, partial: bool) -> Vec<(String, PyJson)> {
    let mut result = Vec::new();
    if s.chars().all(py_is_space) {
        return result;
    }
    let bytes = s.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        i = skip(bytes, i, b" ,\n\t");
        if i >= n {
            break;
        }
        let key_start = i;
        while i < n && bytes[i] != b':' {
            i += 1;
        }
        if i >= n {
            break;
        }
        let mut key = py_strip(&s[key_start..i]);
        if key.starts_with(DELIM) && key.ends_with(DELIM) {
            key = key
                .get(DELIM.len()..key.len().saturating_sub(DELIM.len()))
                .unwrap_or("");
        }
        let key = key.to_owned();
        i = skip(bytes, i + 1, b" \n\t");
        if i >= n {
            if !partial {
                result.push((key, PyJson::Str(String::new())));
            }
            break;
        }
        if s[i..].starts_with(DELIM) {
            i += DELIM.len();
            match s[i..].find(DELIM) {
                Some(end) => {
                    result.push((key, PyJson::Str(s[i..i + end].to_owned())));
                    i += end + DELIM.len();
                }
                None => {
                    let mut value = &s[i..];
                    if partial {
                        value = strip_partial_delim(value);
                    }
                    result.push((key, PyJson::Str(value.to_owned())));
                    break;
                }
            }
        } else if bytes[i] == b'{' || bytes[i] == b'[' {
            let (value, end) = nested(s, i + 1, bytes[i] == b'{');
            result.push((key, value));
            i = end;
        } else {
            let start = i;
            while i < n && !b",}]".contains(&bytes[i]) {
                i += 1;
            }
            if (partial && i >= n) || i == start {
                break;
            }
            let value = py_strip(&s[start..i]);
            if partial && value.ends_with('.') {
                break;
            }
            result.push((key, PyJson::Str(value.to_owned())));
        }
    }
    result
}

/// vLLM's `_parse_gemma4_array`.
fn items(s: &str, partial: bool) -> Vec<PyJson> {
    let mut result = Vec::new();
    let bytes = s.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        i = skip(bytes, i, b" ,\n\t");
        if i >= n {
            break;
        }
        if s[i..].starts_with(DELIM) {
            i += DELIM.len();
            match s[i..].find(DELIM) {
                Some(end) => {
                    result.push(PyJson::Str(s[i..i + end].to_owned()));
                    i += end + DELIM.len();
                }
                None => {
                    result.push(PyJson::Str(s[i..].to_owned()));
                    break;
                }
            }
        } else if bytes[i] == b'{' || bytes[i] == b'[' {
            let (value, end) = nested(s, i + 1, bytes[i] == b'{');
            result.push(value);
            i = end;
        } else {
            let start = i;
            while i < n && !b",]".contains(&bytes[i]) {
                i += 1;
            }
            if (partial && i >= n) || i == start {
                break;
            }
            let value = py_strip(&s[start..i]);
            if partial && value.ends_with('.') {
                break;
            }
            result.push(PyJson::Str(value.to_owned()));
        }
    }
    result
}

/// The value without a trailing proper-or-whole prefix of the delimiter.
fn strip_partial_delim(value: &str) -> &str {
    (1..=DELIM.len())
        .rev()
        .find(|&k| value.ends_with(&DELIM[..k]))
        .map_or(value, |k| &value[..value.len() - k])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemma_notation_to_json() {
        let raw = "city:<|\"|>Paris, {FR}<|\"|>,days:3,opts:{deep:<|\"|>x<|\"|>,n:[1,<|\"|>a]<|\"|>]},flag:true}";
        assert_eq!(
            convert(raw).unwrap(),
            r#"{"city": "Paris, {FR}", "days": "3", "opts": {"deep": "x", "n": ["1", "a]"]}, "flag": "true"}"#
        );
        assert_eq!(
            convert("a:{b:<|\"|>open").unwrap(),
            r#"{"a": {"b": "open"}}"#
        );
        assert_eq!(convert("}").unwrap(), "{}");
    }
}
