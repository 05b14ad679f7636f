//! Calls written as JSON objects `{"name": …, "arguments": …}`: vLLM's
//! `Llama3JsonToolParser` (`llama3_json`, `llama4_json`), one [`Settle`] format
//! whose per-model options say where the calls start and how they are laid out.
//!
//! vLLM's whole-text rules reproduced here, per [`Layout`]:
//! - [`Layout::Objects`] (llama): every `{` that is not inside (or directly after)
//!   an object already read starts a JSON object (`raw_decode`); each must have a
//!   string `name` and an `arguments` (else `parameters`) key, whose value is
//!   re-serialised with `json.dumps(ensure_ascii=False)`. Text around the objects
//!   is dropped. If any object fails, the whole output is content; with no `{`
//!   at all it is content too.
//!
//! Streaming in vLLM only looks for calls when the output *starts* with `{` or
//! `<|python_tag|>` (and then expects `; `-separated objects); a call after prose
//! is a call in whole text and content in streaming. We follow the streaming gate
//! (content streams as it comes; the corpus records `"follow": "streaming"` for
//! prose before calls) and the whole-text rules once the output opens with a call.

use crate::json::{self, PyJson};
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

/// How the calls are laid out in the tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Objects anywhere in the text, separated by anything (llama).
    Objects,
}

/// One JSON-calls format.
#[derive(Debug, Clone, Copy)]
pub struct JsonCalls {
    /// Where the calls start.
    pub opening: Opening,
    /// How they are laid out.
    pub layout: Layout,
}

/// `llama3_json` / `llama4_json`: objects after an optional `<|python_tag|>`.
pub const LLAMA: JsonCalls = JsonCalls {
    opening: Opening::Start(&["<|python_tag|>", "{"]),
    layout: Layout::Objects,
};

impl Settle for JsonCalls {
    fn opening(&self) -> Opening {
        self.opening
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let calls = match self.layout {
            Layout::Objects => objects(tail)?,
        };
        // vLLM's `tools_called` needs at least one call; else all is content.
        (!calls.is_empty()).then_some(Settled {
            calls,
            content: String::new(),
        })
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
