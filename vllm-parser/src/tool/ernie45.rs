//! `ernie45`: vLLM's `Ernie45ToolParser`,
//! `<tool_call>{"name": …, "arguments": …}</tool_call>` found by the regex
//! `<tool_call>\s*(?P<json>\{.*?\})\s*</tool_call>` (DOTALL).
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - no `<tool_call>` anywhere: all text is content;
//! - otherwise every regex match is a call: its JSON must be an object;
//!   `name` defaults to `""` (a non-string name fails), `arguments` to `{}`,
//!   re-serialised by `json.dumps(ensure_ascii=False)`;
//! - content is the text before the first `<tool_call>`, trailing `\n` removed;
//!   text between or after matches, and `<tool_call>` that do not match, are
//!   dropped (vLLM reports `tools_called` even with no match);
//! - if any match fails, the whole output is content.
//!
//! Content before the first `<tool_call>` streams (a trailing run of `\n` is held
//! until the next text tells whether a call follows); the rest is settled once
//! at [`finish`](ToolParser::finish) in one linear pass.

use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ToolParser};
use crate::text::{MarkerScanner, Piece, py_is_space};
use crate::tool::{Call, emit_calls};

const START: &str = "<tool_call>";
const END: &str = "</tool_call>";

/// The `ernie45` tool parser.
pub struct Ernie45Parser {
    scanner: MarkerScanner,
    /// Trailing newlines of the content so far, held back.
    newlines: String,
    /// From the first `<tool_call>` on; `None` before it.
    tail: Option<String>,
}

impl Ernie45Parser {
    /// A boxed parser for the registry.
    pub fn boxed(_options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self {
            scanner: MarkerScanner::new(),
            newlines: String::new(),
            tail: None,
        })
    }

    fn content(&mut self, text: &str, out: &mut Vec<Event>) {
        let kept = text.trim_end_matches('\n');
        if !kept.is_empty() {
            let mut content = std::mem::take(&mut self.newlines);
            content.push_str(kept);
            out.push(Event::Content(content));
        }
        self.newlines.push_str(&text[kept.len()..]);
    }
}

impl ToolParser for Ernie45Parser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        if let Some(tail) = &mut self.tail {
            tail.push_str(text);
            return;
        }
        self.scanner.push(text);
        while let Some(piece) = self.scanner.next(&[START]) {
            match piece {
                Piece::Text(text) => {
                    let text = text.to_owned();
                    self.content(&text, out);
                }
                Piece::Marker(_) => {
                    self.tail = Some(format!("{START}{}", self.scanner.finish()));
                    return;
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let Some(tail) = self.tail.take() else {
            let rest = self.scanner.finish();
            self.content(&rest, out);
            let newlines = std::mem::take(&mut self.newlines);
            if !newlines.is_empty() {
                out.push(Event::Content(newlines));
            }
            return;
        };
        match settle(&tail) {
            Some(calls) => emit_calls(calls, 0, out),
            None => {
                let mut content = std::mem::take(&mut self.newlines);
                content.push_str(&tail);
                out.push(Event::Content(content));
            }
        }
    }
}

/// The calls the regex finds in `tail`, `None` where vLLM raises.
fn settle(tail: &str) -> Option<Vec<Call>> {
    // Positions of the `}` that end a possible match: a `}` followed only by
    // whitespace up to a `</tool_call>`. Ascending, found in one pass.
    let braces: Vec<usize> = tail
        .match_indices(END)
        .filter_map(|(close, _)| {
            let before = tail[..close].trim_end_matches(py_is_space);
            before.ends_with('}').then(|| before.len() - 1)
        })
        .collect();
    let (mut calls, mut next_brace, mut pos) = (Vec::new(), 0, 0);
    for (start, _) in tail.match_indices(START) {
        if start < pos {
            continue;
        }
        let after = start + START.len();
        let open =
            after + (tail[after..].len() - tail[after..].trim_start_matches(py_is_space).len());
        if !tail[open..].starts_with('{') {
            continue;
        }
        while braces.get(next_brace).is_some_and(|&brace| brace <= open) {
            next_brace += 1;
        }
        // No `}` ends a match after this `{`: none after later ones either.
        let Some(&brace) = braces.get(next_brace) else {
            break;
        };
        calls.push(call(&tail[open..=brace])?);
        pos = brace + tail[brace..].find(END).unwrap_or(0) + END.len();
    }
    Some(calls)
}

/// One matched body, `None` where vLLM raises.
fn call(body: &str) -> Option<Call> {
    let value = json::loads(body).ok()?;
    if !matches!(value, PyJson::Dict(_)) {
        return None;
    }
    let name = match value.get("name") {
        None => String::new(),
        Some(name) => name.as_str()?.to_owned(),
    };
    let arguments = value
        .get("arguments")
        .map_or_else(|| "{}".to_owned(), json::dumps);
    Some(Call { name, arguments })
}
