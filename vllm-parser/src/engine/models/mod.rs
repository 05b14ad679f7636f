//! One file per model format: its grammar as an [`EngineConfig`] and its
//! argument converter.
//!
//! [`EngineConfig`]: crate::engine::config::EngineConfig

pub mod qwen3;

use std::collections::HashMap;

use crate::json::{self, PyJson};
use crate::text::py_is_space;

/// A tag pair such as `<parameter=NAME>…</parameter>`, as regex pieces that may
/// be separated by whitespace (`<\s*parameter\s*=\s*` … `<\s*/\s*parameter\s*>`).
pub struct ParamTag {
    /// Pieces of the opener before the name (the name runs to `>`).
    pub open: &'static [&'static str],
    /// Pieces of the closer.
    pub close: &'static [&'static str],
}

/// Length of `pieces` at the start of `text`, whitespace allowed between and
/// after pieces except after the last one.
fn spaced(text: &str, pieces: &[&str], trailing_space: bool) -> Option<usize> {
    let mut at = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            at = text.len() - text[at..].trim_start_matches(py_is_space).len();
        }
        if !text[at..].starts_with(piece) {
            return None;
        }
        at += piece.len();
    }
    if trailing_space {
        at = text.len() - text[at..].trim_start_matches(py_is_space).len();
    }
    Some(at)
}

/// Every complete `OPEN NAME> VALUE` up to a closer or the next opener, in
/// order (the regex `OPEN([^>]*)>(.*?)(?:CLOSE|(?=OPEN))` with `finditer`).
pub fn tag_params<'a>(raw: &'a str, tag: &ParamTag) -> Vec<(&'a str, &'a str)> {
    let mut params = Vec::new();
    let mut from = 0;
    while let Some(lt) = raw[from..].find('<') {
        let start = from + lt;
        let Some(open) = spaced(&raw[start..], tag.open, true) else {
            from = start + 1;
            continue;
        };
        let name_start = start + open;
        let Some(gt) = raw[name_start..].find('>') else {
            break;
        };
        let value_start = name_start + gt + 1;
        // The value ends at the first closer or opener.
        let mut end = None;
        let mut scan = value_start;
        while let Some(lt) = raw[scan..].find('<') {
            let at = scan + lt;
            if let Some(len) = spaced(&raw[at..], tag.close, false) {
                end = Some((at, at + len));
                break;
            }
            if spaced(&raw[at..], tag.open, true).is_some() {
                end = Some((at, at));
                break;
            }
            scan = at + 1;
        }
        let Some((value_end, next)) = end else {
            from = start + 1;
            continue;
        };
        params.push((&raw[name_start..name_start + gt], &raw[value_start..value_end]));
        from = next;
    }
    params
}

/// `json.dumps(dict)` of string values built by assignment: a repeated key
/// keeps its first position and takes the last value.
pub fn dict_json(params: impl IntoIterator<Item = (String, String)>) -> String {
    let mut items: Vec<(String, PyJson)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (key, value) in params {
        match index.get(&key) {
            Some(&at) => items[at].1 = PyJson::Str(value),
            None => {
                index.insert(key.clone(), items.len());
                items.push((key, PyJson::Str(value)));
            }
        }
    }
    json::dumps(&PyJson::Dict(items))
}
