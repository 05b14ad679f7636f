//! `gigachat3`: vLLM's `GigaChat3ToolParser`, one call written as
//! `<|function_call|>{"name": …, "arguments": {…}}` (or after
//! `function call<|role_sep|>\n`) to the end of the output.
//!
//! vLLM's whole-text result, which this parser reproduces:
//! - an output ending (before trailing whitespace) in `</s>` is cut at its last
//!   `</s>`;
//! - the call is everything after the first call marker, parsed with
//!   `json.loads(strict=False)` (control characters allowed in strings); it must
//!   be an object with a string `name` and an object `arguments` (dumped by
//!   `json.dumps(ensure_ascii=False)`);
//! - content is the text before the first `<|message_sep|>` or
//!   `<|function_call|>` (all of it when neither occurs);
//! - anything else is no call, and the server keeps the output as content.
//!
//! Content before the first marker streams; the rest settles at the end
//! ([`SettleParser`](crate::tool::settle::SettleParser)).

use crate::json::{self, PyJson};
use crate::text::py_is_space;
use crate::tool::Call;
use crate::tool::settle::{Opening, Settle, Settled};

const ROLE_CALL: &str = "function call<|role_sep|>\n";
const FUNCTION_CALL: &str = "<|function_call|>";
const MESSAGE_SEP: &str = "<|message_sep|>";
const EOS: &str = "</s>";

/// The `gigachat3` format.
#[derive(Debug, Clone, Copy)]
pub struct GigaChat3;

/// The first occurrence of any of `markers` in `text`: `(position, marker)`.
fn first_of<'m>(text: &str, markers: &[&'m str]) -> Option<(usize, &'m str)> {
    markers
        .iter()
        .filter_map(|marker| text.find(marker).map(|at| (at, *marker)))
        .min_by_key(|&(at, _)| at)
}

impl Settle for GigaChat3 {
    fn opening(&self) -> Opening {
        Opening::Marker(&[ROLE_CALL, FUNCTION_CALL, MESSAGE_SEP])
    }

    fn settle(&self, tail: &str) -> Option<Settled> {
        let tail = if tail.trim_end_matches(py_is_space).ends_with(EOS) {
            &tail[..tail.rfind(EOS).unwrap_or(tail.len())]
        } else {
            tail
        };
        let (at, marker) = first_of(tail, &[ROLE_CALL, FUNCTION_CALL])?;
        let value = json::loads_lenient(&tail[at + marker.len()..]).ok()?;
        let (PyJson::Dict(_), Some(PyJson::Str(name)), Some(arguments @ PyJson::Dict(_))) =
            (&value, value.get("name"), value.get("arguments"))
        else {
            return None;
        };
        let content_end = first_of(tail, &[MESSAGE_SEP, FUNCTION_CALL]).map_or(tail.len(), |f| f.0);
        Some(Settled {
            calls: vec![Call {
                name: name.clone(),
                arguments: json::dumps(arguments),
            }],
            content: tail[..content_end].to_owned(),
        })
    }
}
