//! `hunyuan_a13b`: vLLM's `HunyuanA13BToolParser`,
//! `<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>`.
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - the block is the first `<tool_calls>…</tool_calls>` (lazy, non-overlapping
//!   matches) that is not strictly inside a closed `<think>…</think>` and whose
//!   `strip()`ped body is JSON;
//! - its body must be a list; every element that is an object with `name` and
//!   `arguments` is a call (`arguments` dumped by `json.dumps(ensure_ascii=False)`
//!   when an object, kept when a string); a non-string name or other arguments
//!   make the whole output content;
//! - with calls, content is the text before the block, `None` when blank, and
//!   text after the block is dropped; without (no block, not a list, no valid
//!   element) vLLM reports no calls and the server keeps the output as content
//!   (so the parser's `助手：` removal never shows).
//!
//! Content streams until the first `<tool_calls>` or `<think>`; from
//! there on the text is settled at the end
//! ([`SettleParser`](crate::tool::settle::SettleParser)) in one linear pass.

use crate::json::{self, PyJson};
use crate::text::py_strip;
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const OPEN: &str = "<tool_calls>";
const CLOSE: &str = "</tool_calls>";
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// The `hunyuan_a13b` format.
#[derive(Debug, Clone, Copy)]
pub struct HunyuanA13b;

impl Settle for HunyuanA13b {
    fn opening(&self) -> Opening {
        Opening::Marker(&[OPEN, THINK_OPEN])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let think = spans(tail, THINK_OPEN, THINK_CLOSE);
        let mut next_think = 0;
        let block = spans(tail, OPEN, CLOSE)
            .into_iter()
            .find_map(|(start, end)| {
                while think
                    .get(next_think)
                    .is_some_and(|&(_, t_end)| t_end <= start)
                {
                    next_think += 1;
                }
                let in_think = think
                    .get(next_think)
                    .is_some_and(|&(t_start, t_end)| start > t_start && end < t_end);
                let body = &tail[start + OPEN.len()..end - CLOSE.len()];
                let value = json::loads(py_strip(body)).ok().filter(|_| !in_think)?;
                Some((start, value))
            });
        let (start, PyJson::List(items)) = block? else {
            return None;
        };
        let mut calls = Vec::new();
        for item in &items {
            let (Some(name), Some(arguments)) = (item.get("name"), item.get("arguments")) else {
                continue;
            };
            if !matches!(item, PyJson::Dict(_)) {
                continue;
            }
            let arguments = match arguments {
                PyJson::Dict(_) => json::dumps(arguments),
                PyJson::Str(text) => text.clone(),
                _ => return None,
            };
            calls.push(Call {
                name: name.as_str()?.to_owned(),
                arguments,
            });
        }
        (!calls.is_empty()).then(|| Settled {
            calls,
            content: tail[..start].to_owned(),
        })
    }
}

/// The non-overlapping `OPEN(.*?)CLOSE` matches of `text`: `(start, end)`.
fn spans(text: &str, open: &str, close: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find(open) {
        let start = pos + found;
        let Some(len) = text[start + open.len()..].find(close) else {
            break;
        };
        let end = start + open.len() + len + close.len();
        spans.push((start, end));
        pos = end;
    }
    spans
}
