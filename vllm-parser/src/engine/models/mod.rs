//! One file per model format: its grammar as an [`EngineConfig`] and its
//! argument converter.
//!
//! [`EngineConfig`]: crate::engine::config::EngineConfig

pub mod deepseek_v32;
pub mod deepseek_v4;
pub mod deepseek_v41;
pub mod gemma4;
pub mod glm47;
pub mod granite;
pub mod granite_thinking;
pub mod inkling;
pub mod kimi_k2;
pub mod mimo;
pub mod minicpmv;
pub mod minimax_m2;
pub mod minimax_m3;
pub mod mistral;
pub mod nemotron_v3;
pub mod plamo3;
pub mod qwen3;
pub mod seed_oss;
pub mod step3p5;

use std::collections::HashMap;

use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, py_truthy};
use crate::text::py_is_space;

/// GLM's and Kimi's rule: thinking unless `thinking` or `enable_thinking` is
/// given (not null) and neither is truthy.
pub fn thinking(options: &ParserOptions) -> bool {
    let given: Vec<_> = ["thinking", "enable_thinking"]
        .iter()
        .filter_map(|flag| options.chat_template_kwargs.get(*flag))
        .filter(|value| !value.is_null())
        .collect();
    given.is_empty() || given.into_iter().any(py_truthy)
}

/// Reads a parameter name at the start of the text: `(name, attribute,
/// length through the opener's `>`)`.
pub type NameReader = for<'a> fn(&'a str) -> Option<(&'a str, Option<&'a str>, usize)>;

/// A parameter tag such as `<parameter=NAME>VALUE</parameter>`, as the pieces
/// of vLLM's regex `OPEN NAME > (VALUE.*?) (?:CLOSE|(?=OPEN))`.
pub struct ParamTag {
    /// Length of an opener's part before the name at the start of the text.
    pub open: fn(&str) -> Option<usize>,
    /// The name at the start of the text, an attribute after it if the tag
    /// has one (DeepSeek's `string="true"`), and the length through the `>`
    /// that ends the opener.
    pub name: NameReader,
    /// Length of a closer at the start of the text.
    pub close: fn(&str) -> Option<usize>,
}

/// One parameter found by [`tag_params`].
pub struct TagParam<'a> {
    /// The name as written.
    pub name: &'a str,
    /// The tag's attribute, if it has one.
    pub attribute: Option<&'a str>,
    /// The value as written.
    pub value: &'a str,
}

/// Length of `pieces` at the start of `text`, Python whitespace allowed between
/// them (`\s*`), and after the last one when `trailing_space`.
pub fn spaced(text: &str, pieces: &[&str], trailing_space: bool) -> Option<usize> {
    let mut at = 0;
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            at = skip_space(text, at);
        }
        if !text[at..].starts_with(piece) {
            return None;
        }
        at += piece.len();
    }
    Some(if trailing_space {
        skip_space(text, at)
    } else {
        at
    })
}

/// The offset after the whitespace at `at`.
pub fn skip_space(text: &str, at: usize) -> usize {
    text.len() - text[at..].trim_start_matches(py_is_space).len()
}

/// Every complete parameter in `raw`, in order (the regex with `finditer`).
pub fn tag_params<'a>(raw: &'a str, tag: &ParamTag) -> Vec<TagParam<'a>> {
    let mut params = Vec::new();
    let mut from = 0;
    while let Some(lt) = raw[from..].find('<') {
        let start = from + lt;
        let Some((name, attribute, value_start)) = (tag.open)(&raw[start..]).and_then(|open| {
            let name_start = start + open;
            let (name, attribute, len) = (tag.name)(&raw[name_start..])?;
            Some((name, attribute, name_start + len))
        }) else {
            from = start + 1;
            continue;
        };
        // The value ends at the first closer or opener.
        let mut end = None;
        let mut scan = value_start;
        while let Some(lt) = raw[scan..].find('<') {
            let at = scan + lt;
            if let Some(len) = (tag.close)(&raw[at..]) {
                end = Some((at, at + len));
                break;
            }
            if (tag.open)(&raw[at..]).is_some() {
                end = Some((at, at));
                break;
            }
            scan = at + 1;
        }
        let Some((value_end, next)) = end else {
            from = start + 1;
            continue;
        };
        params.push(TagParam {
            name,
            attribute,
            value: &raw[value_start..value_end],
        });
        from = next;
    }
    params
}

/// `json.dumps(dict)` of values set in order: a repeated key keeps its first
/// position and takes the last value.
pub fn dict_json(params: impl IntoIterator<Item = (String, PyJson)>) -> String {
    let mut items: Vec<(String, PyJson)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (key, value) in params {
        match index.get(&key) {
            Some(&at) => items[at].1 = value,
            None => {
                index.insert(key.clone(), items.len());
                items.push((key, value));
            }
        }
    }
    json::dumps(&PyJson::Dict(items))
}
