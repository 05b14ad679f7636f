//! Mistral's pre-v11 tool calls: `[TOOL_CALLS]` then a JSON array of
//! `{"name": …, "arguments": …}` objects (or one bare object), as vLLM 0.33.0's
//! `MistralParser` reads them for a tokenizer before v11
//! (`_legacy_extract_tool_calls`, `_pre_v11_function_calls` in
//! `vllm/parser/mistral.py`):
//!
//! ```text
//! Sure.[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
//! ```
//!
//! vLLM's whole-text rules, reproduced:
//! - the text before the first `[TOOL_CALLS]` is content; the JSON is the first
//!   segment between later `[TOOL_CALLS]` markers that is not blank, stripped
//!   (so repeated markers count as one, and text after a later marker is
//!   dropped). Without a marker, a `required` or named `tool_choice` reads the
//!   whole output, stripped (the bare array its JSON schema forces); `none`
//!   with tools, or `auto` without a marker, is all content;
//! - the first JSON value of that text is read (`raw_decode`: text after it is
//!   dropped), else the first `[{…}]` span (`\[{.*}\]`, greedy) if it parses;
//! - a bare object is one call; entries that are not objects holding `name` or
//!   `arguments` are skipped; a name that is missing or not a string is `""`;
//!   missing or `null` arguments are `"{}"`, a string is kept as written, any
//!   other value is `json.dumps(…, ensure_ascii=False)`;
//! - with no call, the JSON text (not the output) is the content.
//!
//! Streaming: content before the marker streams as it comes and the rest is
//! settled at the end ([`SettleParser`](crate::tool::settle::SettleParser)),
//! so every chunking gives vLLM's whole-text message — except where vLLM's
//! whole text takes back content that streaming already sent: when prose
//! before `[TOOL_CALLS]` is followed by no call, the prose stays the content
//! and the text after the marker is dropped (what vLLM's streaming shows).
//! vLLM's streaming path (ijson) differs from its whole text elsewhere too
//! (text after the array, a truncated array as a partial call); the corpus
//! follows whole text there.

use crate::json::{self, PyJson};
use crate::parser::ParserOptions;
use crate::serving::ToolChoice;
use crate::text::{py_is_blank, py_strip};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const TOOL_CALLS: &str = "[TOOL_CALLS]";

/// The pre-v11 format for one request (its `tool_choice` and tools decide
/// where calls may be).
#[derive(Debug, Clone, Copy)]
pub struct MistralPreV11 {
    opening: Opening,
    /// `required` or named: the whole output may be a bare array.
    forced: bool,
}

impl MistralPreV11 {
    /// The format as `options` (its `tool_choice` and tools) selects it.
    pub fn new(options: &ParserOptions) -> Self {
        let forced = matches!(
            options.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Named(_))
        );
        let opening = if options.tool_choice == Some(ToolChoice::None) && !options.tools.is_empty()
        {
            // `tool_choice: none` with tools: never calls.
            Opening::Marker(&[])
        } else if forced {
            Opening::Whole
        } else {
            Opening::Marker(&[TOOL_CALLS])
        };
        Self { opening, forced }
    }
}

impl Settle for MistralPreV11 {
    fn opening(&self) -> Opening {
        self.opening
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        self.settle_with_head("", tail)
    }

    fn reads_head(&self) -> bool {
        true
    }

    fn drops_blank_head(&self) -> bool {
        true
    }

    fn settle_with_head(&self, streamed: &str, tail: &str) -> Option<Settled> {
        let (head, json_text) = match tail.find(TOOL_CALLS) {
            Some(at) => {
                let segments = tail[at + TOOL_CALLS.len()..].split(TOOL_CALLS);
                let first = segments.map(py_strip).find(|s| !s.is_empty());
                (&tail[..at], first.unwrap_or(""))
            }
            None if self.forced => ("", py_strip(tail)),
            None => return None,
        };
        let calls = parsed(json_text)
            .map(|v| function_calls(&v))
            .unwrap_or_default();
        let content = if calls.is_empty() {
            // vLLM returns the JSON text; content already streamed stays, and
            // then what follows the marker is dropped, as vLLM streams it.
            if py_is_blank(streamed) {
                json_text.to_owned()
            } else {
                String::new()
            }
        } else if py_is_blank(head) {
            String::new()
        } else {
            head.to_owned()
        };
        Some(Settled { calls, content })
    }
}

/// `raw_decode` of the text, else `json.loads` of its first `[{…}]` span.
fn parsed(text: &str) -> Option<PyJson> {
    if let Ok((value, _)) = json::loads_prefix(text) {
        return Some(value);
    }
    let start = text.find("[{")?;
    let end = text.rfind("}]").filter(|&end| end >= start + 2)?;
    json::loads(&text[start..end + 2]).ok()
}

/// `_pre_v11_function_calls`.
fn function_calls(parsed: &PyJson) -> Vec<Call> {
    let items = match parsed {
        PyJson::Dict(_) => std::slice::from_ref(parsed),
        PyJson::List(items) => items.as_slice(),
        _ => return Vec::new(),
    };
    items
        .iter()
        .filter(|item| {
            matches!(item, PyJson::Dict(_))
                && (item.get("name").is_some() || item.get("arguments").is_some())
        })
        .map(|item| Call {
            name: match item.get("name") {
                Some(PyJson::Str(name)) => name.clone(),
                _ => String::new(),
            },
            arguments: match item.get("arguments") {
                None | Some(PyJson::Null) => "{}".to_owned(),
                Some(PyJson::Str(text)) => text.clone(),
                Some(value) => json::dumps(value),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::settle::SettleParser;
    use crate::{Event, ToolParser};

    fn run(options: &ParserOptions, deltas: &[&str]) -> (String, Vec<(String, String)>) {
        let mut parser = SettleParser::new(MistralPreV11::new(options));
        let mut out = Vec::new();
        for delta in deltas {
            parser.push(delta, &[], &mut out);
        }
        parser.finish(&mut out);
        let (mut content, mut calls) = (String::new(), Vec::new());
        for event in out {
            match event {
                Event::Content(text) => content.push_str(&text),
                Event::ToolCallBegin { name, .. } => calls.push((name, String::new())),
                Event::ToolCallArguments { delta, .. } => calls.last_mut().unwrap().1 += &delta,
                _ => {}
            }
        }
        (content, calls)
    }

    #[test]
    fn arrays_objects_and_vllms_quirks() {
        let auto = ParserOptions::default();
        let call = |n: &str, a: &str| (n.to_owned(), a.to_owned());
        assert_eq!(
            run(
                &auto,
                &[
                    "Hi [TOOL_",
                    "CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, 3, {\"name\": 2}] tail"
                ]
            ),
            ("Hi ".into(), vec![call("f", "{\"a\": 1}"), call("", "{}")])
        );
        assert_eq!(
            run(&auto, &["[TOOL_CALLS] [TOOL_CALLS]{\"arguments\": \"x\"}"]),
            (String::new(), vec![call("", "x")])
        );
        // No call: the JSON text is the content, unless prose was streamed.
        assert_eq!(run(&auto, &["\n[TOOL_CALLS] 7"]), ("7".into(), vec![]));
        assert_eq!(
            run(&auto, &["ok [TOOL_CALLS] junk"]),
            ("ok ".into(), vec![])
        );
        // The regex fallback finds the array after junk.
        assert_eq!(
            run(&auto, &["[TOOL_CALLS]junk [{\"name\": \"f\"}] more"]),
            (String::new(), vec![call("f", "{}")])
        );
        let required = ParserOptions {
            tool_choice: Some(ToolChoice::Required),
            ..ParserOptions::default()
        };
        assert_eq!(
            run(
                &required,
                &[" [{\"name\": \"f\", \"arguments\": [1, 2.0]}]"]
            ),
            (String::new(), vec![call("f", "[1, 2.0]")])
        );
    }
}
