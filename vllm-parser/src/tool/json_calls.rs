//! Calls written as JSON objects `{"name": …, "arguments": …}`, one [`Settle`]
//! format whose per-model options ([`Layout`], [`Opening`]) say where the calls
//! are and how they are laid out: vLLM's `Llama3JsonToolParser` (`llama3_json`,
//! `llama4_json`), `Phi4MiniJsonToolParser` (`phi4_mini_json`), `xLAMToolParser`
//! (`xlam`), `Internlm2ToolParser` (`internlm`), `JambaToolParser` (`jamba`) and
//! `Granite4ToolParser` (`granite4`).
//!
//! vLLM's whole-text rules reproduced here, per [`Layout`] (a name must be a
//! string — vLLM's `FunctionCall` refuses others — and "content" means the whole
//! output comes back as content):
//! - [`Layout::Objects`] (llama): every `{` that is not inside (or directly after)
//!   an object already read starts a JSON object (`raw_decode`); each must have a
//!   `name` and an `arguments` (else `parameters`) key, re-serialised with
//!   `json.dumps(ensure_ascii=False)`. Text around the objects is dropped. If any
//!   object fails, or none is found, all is content.
//! - [`Layout::Functools`] (phi4-mini): `functools[` up to the first `]` is a JSON
//!   list of such objects; invalid JSON there gives *no* calls and *no* content
//!   (vLLM still reports `tools_called`); a bad element makes all content. Text
//!   around it is dropped.
//! - [`Layout::Xlam`]: the JSON list is the first of: the text after `</think>`,
//!   a ```` ```json ```` block, a `[TOOL_CALLS]` line or a `<tool_call>` body (first
//!   that parses, in vLLM's order), or the whole output when it starts with `[`.
//!   Elements lacking `name` or `arguments` are skipped; dict arguments are
//!   dumped, string arguments kept as they are. Content is the text up to
//!   `</think>`, or the output without the blocks of the pattern used, stripped.
//! - [`Layout::Internlm`]: one object after `<|action_start|><|plugin|>` (from
//!   its first `{` to `<|action_end|>`), `parameters` else `arguments` else `{}`;
//!   content is the text before; text after is dropped. vLLM raises (a server
//!   error) on a second marker, bad JSON or no `name`: we return content.
//! - [`Layout::Jamba`]: `<tool_calls>[…]</tool_calls>` holds a JSON list of
//!   objects with `name` and `arguments`; content is the text before.
//! - [`Layout::Granite4`]: every `<tool_call>…</tool_call>` body is one object
//!   with `name` and `arguments` (a string is kept, `null` fails); the text
//!   outside the calls (before, between and after) is the content; unbalanced or
//!   empty tags make all content.
//!
//! Streaming in vLLM for llama only looks for calls when the output *starts*
//! with `{` or `<|python_tag|>`; a call after prose is a call in whole text and
//! content in streaming. We follow that gate (content streams as it comes; the
//! corpus records `"follow": "streaming"` for prose before calls) and the
//! whole-text rules once the output opens with a call.

use crate::json::{self, PyJson};
use crate::text::{py_is_space, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

/// How the calls are laid out in the tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Objects anywhere in the text, separated by anything (llama).
    Objects,
    /// `functools[{…}, …]` (phi4-mini).
    Functools,
    /// A JSON list found by xLAM's heuristics.
    Xlam,
    /// One object after `<|action_start|><|plugin|>` (InternLM 2).
    Internlm,
    /// `<tool_calls>[…]</tool_calls>` (Jamba).
    Jamba,
    /// `<tool_call>{…}</tool_call>` blocks amid content (Granite 4).
    Granite4,
}

/// One JSON-calls format.
#[derive(Debug, Clone, Copy)]
pub struct JsonCalls {
    /// Where the calls start.
    pub opening: Opening,
    /// How they are laid out.
    pub layout: Layout,
}

const INTERNLM_START: &str = "<|action_start|><|plugin|>";
const INTERNLM_END: &str = "<|action_end|>";
const JAMBA_START: &str = "<tool_calls>";
const JAMBA_END: &str = "</tool_calls>";
const TOOL_CALL_START: &str = "<tool_call>";
const TOOL_CALL_END: &str = "</tool_call>";

/// `llama3_json` / `llama4_json`: objects after an optional `<|python_tag|>`.
pub const LLAMA: JsonCalls = JsonCalls {
    opening: Opening::Start(&["<|python_tag|>", "{"]),
    layout: Layout::Objects,
};
/// `phi4_mini_json`.
pub const PHI4_MINI: JsonCalls = JsonCalls {
    opening: Opening::Whole,
    layout: Layout::Functools,
};
/// `xlam`.
pub const XLAM: JsonCalls = JsonCalls {
    opening: Opening::Whole,
    layout: Layout::Xlam,
};
/// `internlm`.
pub const INTERNLM: JsonCalls = JsonCalls {
    opening: Opening::Marker(&[INTERNLM_START]),
    layout: Layout::Internlm,
};
/// `jamba`.
pub const JAMBA: JsonCalls = JsonCalls {
    opening: Opening::Marker(&[JAMBA_START]),
    layout: Layout::Jamba,
};
/// `granite4`.
pub const GRANITE4: JsonCalls = JsonCalls {
    // A stray end before any start makes all content: it opens the tail too.
    opening: Opening::Marker(&[TOOL_CALL_START, TOOL_CALL_END]),
    layout: Layout::Granite4,
};
/// The tokens vLLM needs in the tokenizer to build `jamba`.
pub const JAMBA_TOKENS: &[&str] = &[JAMBA_START, JAMBA_END];

impl Settle for JsonCalls {
    fn opening(&self) -> Opening {
        self.opening
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let settled = |calls| Settled {
            calls,
            content: String::new(),
        };
        match self.layout {
            // vLLM's `tools_called` needs at least one call; else all is content.
            Layout::Objects => Some(settled(objects(tail)?)).filter(|s| !s.calls.is_empty()),
            Layout::Functools => functools(tail).map(settled),
            Layout::Xlam => xlam(tail),
            Layout::Internlm => internlm(tail).map(|call| settled(vec![call])),
            Layout::Jamba => jamba(tail).map(settled),
            Layout::Granite4 => granite4(tail),
        }
    }
}

/// Llama: every top-level `{` starts a call object.
fn objects(text: &str) -> Option<Vec<Call>> {
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find('{') {
        let start = from + found;
        let (value, len) = json::loads_prefix(&text[start..]).ok()?;
        calls.push(call_from_object(&value, &["arguments", "parameters"])?);
        // vLLM skips a `{` at the very end index of the previous object too.
        let end = start + len;
        from = end + text[end..].chars().next().map_or(0, char::len_utf8);
        if from > text.len() {
            break;
        }
    }
    Some(calls)
}

/// A call from `{"name": str, <first present key of argument_keys>: value}`.
fn call_from_object(value: &PyJson, argument_keys: &[&str]) -> Option<Call> {
    let name = value.get("name")?.as_str()?.to_owned();
    let arguments = argument_keys.iter().find_map(|key| value.get(key))?;
    Some(Call {
        name,
        arguments: json::dumps(arguments),
    })
}

/// Phi-4-mini: `functools\[(.*?)\]` (first `]`), read as a JSON list.
fn functools(text: &str) -> Option<Vec<Call>> {
    const START: &str = "functools[";
    let start = text.find(START)? + START.len();
    let end = start + text[start..].find(']')?;
    let Ok(PyJson::List(items)) = json::loads(&format!("[{}]", &text[start..end])) else {
        return Some(Vec::new()); // vLLM logs the error and returns no calls
    };
    items
        .iter()
        .map(|item| call_from_object(item, &["arguments", "parameters"]))
        .collect()
}

/// InternLM 2: the object after the plugin marker.
fn internlm(tail: &str) -> Option<Call> {
    let action = tail.strip_prefix(INTERNLM_START)?;
    if action.contains(INTERNLM_START) {
        return None;
    }
    let action = &action[..action.find(INTERNLM_END).unwrap_or(action.len())];
    // `action[action.find("{"):]`: without a `{` that is the last character.
    let action = match action.find('{') {
        Some(i) => &action[i..],
        None => &action[action.char_indices().last().map_or(0, |(i, _)| i)..],
    };
    let value = json::loads(action).ok()?;
    let name = value.get("name")?.as_str()?.to_owned();
    let empty = PyJson::Dict(Vec::new());
    let arguments = value
        .get("parameters")
        .or_else(|| value.get("arguments"))
        .unwrap_or(&empty);
    Some(Call {
        name,
        arguments: json::dumps(arguments),
    })
}

/// Jamba: the first `<tool_calls>…</tool_calls>` holds a JSON list.
fn jamba(tail: &str) -> Option<Vec<Call>> {
    let body = tail.strip_prefix(JAMBA_START)?;
    let body = &body[..body.find(JAMBA_END)?];
    let items = match json::loads(body).ok()? {
        PyJson::List(items) => items,
        // vLLM iterates what it got: nothing to iterate is no calls; a dict's keys
        // or a string's characters raise on `call["name"]`.
        PyJson::Dict(entries) if entries.is_empty() => Vec::new(),
        PyJson::Str(s) if s.is_empty() => Vec::new(),
        _ => return None,
    };
    items
        .iter()
        .map(|item| call_from_object(item, &["arguments"]))
        .collect()
}

/// Granite 4: `<tool_call>` blocks amid content.
fn granite4(tail: &str) -> Option<Settled> {
    let mut content = String::new();
    let mut calls = Vec::new();
    let mut rest = tail;
    loop {
        let Some(start) = rest.find(TOOL_CALL_START) else {
            if rest.contains(TOOL_CALL_END) {
                return None; // an end without a start
            }
            content.push_str(rest);
            break;
        };
        let before = &rest[..start];
        if before.contains(TOOL_CALL_END) {
            return None;
        }
        content.push_str(before);
        let body_and_rest = &rest[start + TOOL_CALL_START.len()..];
        let end = body_and_rest.find(TOOL_CALL_END)?;
        let body = &body_and_rest[..end];
        if body.is_empty() || body.contains(TOOL_CALL_START) {
            return None;
        }
        let value = json::loads(body).ok()?;
        let name = value.get("name")?.as_str()?.to_owned();
        let arguments = match value.get("arguments")? {
            PyJson::Null => return None,
            PyJson::Str(s) => s.clone(),
            other => json::dumps(other),
        };
        if !matches!(value, PyJson::Dict(_)) {
            return None;
        }
        calls.push(Call { name, arguments });
        rest = &body_and_rest[end + TOOL_CALL_END.len()..];
    }
    Some(Settled { calls, content })
}

/// A regex match: the whole match and its group, as byte ranges.
struct Found {
    whole: std::ops::Range<usize>,
    group: std::ops::Range<usize>,
}

/// xLAM's `json_code_block_patterns`, as `re.findall` finds them.
const XLAM_PATTERNS: [fn(&str) -> Vec<Found>; 3] =
    [fenced_blocks, tool_calls_lines, tool_call_tags];

/// ```` ```(?:json)?\s*([\s\S]*?)``` ````
fn fenced_blocks(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("```") {
        let start = from + i;
        let mut group = start + 3;
        if text[group..].starts_with("json") {
            group += 4;
        }
        group = text.len() - text[group..].trim_start_matches(py_is_space).len();
        let Some(close) = text[group..].find("```") else {
            break;
        };
        found.push(Found {
            whole: start..group + close + 3,
            group: group..group + close,
        });
        from = group + close + 3;
    }
    found
}

/// `\[TOOL_CALLS\]([\s\S]*?)(?=\n|$)`
fn tool_calls_lines(text: &str) -> Vec<Found> {
    const MARKER: &str = "[TOOL_CALLS]";
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(MARKER) {
        let start = from + i;
        let group = start + MARKER.len();
        let end = text[group..].find('\n').map_or(text.len(), |j| group + j);
        found.push(Found {
            whole: start..end,
            group: group..end,
        });
        from = end;
    }
    found
}

/// `<tool_call>([\s\S]*?)</tool_call>`
fn tool_call_tags(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(TOOL_CALL_START) {
        let start = from + i;
        let group = start + TOOL_CALL_START.len();
        let Some(close) = text[group..].find(TOOL_CALL_END) else {
            break;
        };
        found.push(Found {
            whole: start..group + close + TOOL_CALL_END.len(),
            group: group..group + close,
        });
        from = group + close + TOOL_CALL_END.len();
    }
    found
}

/// The first match of `pattern` in `text` whose group is valid JSON.
fn first_json<'t>(text: &'t str, found: &[Found]) -> Option<(&'t str, PyJson)> {
    found.iter().find_map(|f| {
        let group = &text[f.group.clone()];
        json::loads(group).ok().map(|value| (group, value))
    })
}

/// xLAM: vLLM's `preprocess_model_output`, then the list's calls.
fn xlam(text: &str) -> Option<Settled> {
    let (content, value) = xlam_candidate(text)?;
    let PyJson::List(items) = value else {
        return None;
    };
    let mut calls = Vec::new();
    for item in &items {
        let (Some(name), Some(arguments)) = (item.get("name"), item.get("arguments")) else {
            continue;
        };
        let arguments = match arguments {
            PyJson::Dict(_) => json::dumps(arguments),
            PyJson::Str(s) => s.clone(),
            _ => return None,
        };
        calls.push(Call {
            name: name.as_str()?.to_owned(),
            arguments,
        });
    }
    (!calls.is_empty()).then_some(Settled { calls, content })
}

/// The content xLAM keeps and the JSON it reads calls from.
fn xlam_candidate(text: &str) -> Option<(String, PyJson)> {
    const THINK_END: &str = "</think>";
    if let Some(i) = text.find(THINK_END) {
        let content = py_strip(&text[..i + THINK_END.len()]).to_owned();
        let thinking = py_strip(&text[i + THINK_END.len()..]);
        if let Ok(value) = json::loads(thinking) {
            return Some((content, value));
        }
        for pattern in XLAM_PATTERNS {
            if let Some((_, value)) = first_json(thinking, &pattern(thinking)) {
                return Some((content, value));
            }
        }
    }
    for pattern in XLAM_PATTERNS {
        let found = pattern(text);
        if let Some((_, value)) = first_json(text, &found) {
            let mut rest = String::new();
            let mut from = 0;
            for f in &found {
                rest.push_str(&text[from..f.whole.start]);
                from = f.whole.end;
            }
            rest.push_str(&text[from..]);
            return Some((py_strip(&rest).to_owned(), value));
        }
    }
    if py_strip(text).starts_with('[') {
        return json::loads(text).ok().map(|value| (String::new(), value));
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::{MessageParser, ParserOptions};

    fn parse(tool: &str, output: &str) -> crate::ParsedMessage {
        MessageParser::from_names(None, Some(tool), &ParserOptions::default())
            .unwrap()
            .parse(output, &[])
    }

    /// Where vLLM's `internlm` raises (the request fails), the output is content.
    #[test]
    fn internlm_outputs_vllm_rejects_are_content() {
        for output in [
            "a<|action_start|><|plugin|>{\"name\": \"f\"}<|action_end|><|action_start|><|plugin|>{}",
            "a<|action_start|><|plugin|>{\"name\": \"f\", <|action_end|>",
            "a<|action_start|><|plugin|>{\"arguments\": {}}<|action_end|>",
            "a<|action_start|><|plugin|>no json",
        ] {
            let message = parse("internlm", output);
            assert_eq!(message.content.as_deref(), Some(output));
            assert!(message.tool_calls.is_empty());
        }
    }

    #[test]
    fn llama_calls_and_the_streaming_gate() {
        let message = parse(
            "llama3_json",
            r#"<|python_tag|>{"name": "f", "parameters": {"a": 1e5}}; {"name": "g", "arguments": {}}"#,
        );
        assert_eq!(message.content, None);
        assert_eq!(message.tool_calls.len(), 2);
        assert_eq!(message.tool_calls[0].arguments, r#"{"a": 100000.0}"#);
        // Prose first: content, as vLLM streams it.
        let prose = r#"Sure. {"name": "f", "arguments": {}}"#;
        assert_eq!(parse("llama3_json", prose).content.as_deref(), Some(prose));
    }
}
