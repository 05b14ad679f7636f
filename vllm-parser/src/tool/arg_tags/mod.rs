//! Calls whose arguments are written as tag pairs,
//! `<arg_key>city</arg_key><arg_value>Paris</arg_value>`, each value text that
//! the format turns into JSON by the tool's schema, `json.loads` or Python's
//! `ast.literal_eval`: vLLM's `poolside_v1`, `hy_v3`, `hy_v4` and `k2_horizon`
//! tool parsers.
//!
//! The formats differ in the call wrapper and in what makes a call malformed;
//! they share the scan for argument pairs ([`ArgTags::pairs`], the regex
//! `KEY(.*?)/KEY\s*VALUE(.*?)/VALUE` as Python's `findall` reads it) and the
//! value conversions ([`literal`]). All are whole-text formats in vLLM: each is
//! a [`Settle`](crate::tool::settle::Settle) format, content before the calls
//! streams and the calls are decided once at the end.

pub mod hunyuan;
pub mod k2_horizon;
pub mod literal;
pub mod poolside;

use crate::json::{self, PyJson};
use crate::text::py_is_space;

/// A call's arguments as a Python dict: a repeated key keeps its first position
/// and takes the last value. A value may be one `json.dumps` refuses (`None`),
/// which only matters if it is still there when the dict is dumped.
#[derive(Debug, Clone, Default)]
pub struct Arguments(Vec<(String, Option<PyJson>)>);

impl Arguments {
    /// `arguments[key] = value`.
    pub fn insert(&mut self, key: &str, value: Option<PyJson>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    /// `arguments.get(key)`: `Some(None)` for a value `json.dumps` refuses.
    pub fn get(&self, key: &str) -> Option<&Option<PyJson>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// `key in arguments`.
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `json.dumps(arguments, ensure_ascii=False)`; `None` where it raises.
    pub fn dumps(self) -> Option<String> {
        let items = self
            .0
            .into_iter()
            .map(|(key, value)| Some((key, value?)))
            .collect::<Option<Vec<_>>>()?;
        Some(json::dumps(&PyJson::Dict(items)))
    }
}

/// The tags around one format's argument keys, types and values.
#[derive(Debug, Clone, Copy)]
pub struct ArgTags {
    /// `<arg_key>` and `</arg_key>`.
    pub key: (&'static str, &'static str),
    /// An optional `<arg_type>…</arg_type>` between key and value.
    pub kind: Option<(&'static str, &'static str)>,
    /// `<arg_value>` and `</arg_value>`.
    pub value: (&'static str, &'static str),
    /// Whether whitespace may separate the key's end from what follows (`\s*`).
    pub spaced: bool,
}

/// One argument pair, as the regex matched it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair<'a> {
    /// Where the match starts (at the key tag) and ends (after the value's end tag).
    pub span: (usize, usize),
    /// The key text, unstripped.
    pub key: &'a str,
    /// The type text, when the format has type tags and this pair one.
    pub kind: Option<&'a str>,
    /// The value text, unstripped.
    pub value: &'a str,
}

impl ArgTags {
    /// Every pair in `text`, as `findall` finds them: from the leftmost key tag
    /// the key extends (lazily) to the first key end tag that a value (or type)
    /// tag follows, the value to the first value end tag after it.
    pub fn pairs<'a>(&self, text: &'a str) -> Vec<Pair<'a>> {
        let mut pairs = Vec::new();
        let mut cursor = 0;
        while let Some(pair) = self.pair_at(text, cursor) {
            cursor = pair.span.1;
            pairs.push(pair);
        }
        pairs
    }

    /// The first pair at or after `from`. When the leftmost key tag gives no
    /// match, no later one can (its alternatives are a subset).
    fn pair_at<'a>(&self, text: &'a str, from: usize) -> Option<Pair<'a>> {
        let (key_start, key_end) = self.key;
        let start = from + text[from..].find(key_start)?;
        let key_from = start + key_start.len();
        // Once a type tag found no value after it, no later key end can.
        let mut typed = true;
        let (key, kind, value_from) =
            text[key_from..]
                .match_indices(key_end)
                .find_map(|(at, _)| {
                    let after = key_from + at + key_end.len();
                    let (kind, value_from) = self.after_key(text, after, &mut typed)?;
                    Some((&text[key_from..key_from + at], kind, value_from))
                })?;
        let value_len = text[value_from..].find(self.value.1)?;
        Some(Pair {
            span: (start, value_from + value_len + self.value.1.len()),
            key,
            kind,
            value: &text[value_from..value_from + value_len],
        })
    }

    /// After a key end tag at `at`: the optional type and where the value text
    /// starts, if a value tag follows. `typed` turns false once a type tag's
    /// search failed (it would fail from any later position too), which keeps
    /// the scan linear.
    fn after_key<'a>(
        &self,
        text: &'a str,
        at: usize,
        typed: &mut bool,
    ) -> Option<(Option<&'a str>, usize)> {
        let at = if self.spaced {
            skip_space(text, at)
        } else {
            at
        };
        let value_tag = |at: usize| {
            text[at..]
                .starts_with(self.value.0)
                .then_some(at + self.value.0.len())
        };
        if let Some((type_start, type_end)) = self.kind
            && *typed
            && text[at..].starts_with(type_start)
        {
            let kind_from = at + type_start.len();
            let found = text[kind_from..]
                .match_indices(type_end)
                .find_map(|(end, _)| {
                    let value_at = skip_space(text, kind_from + end + type_end.len());
                    Some((
                        Some(&text[kind_from..kind_from + end]),
                        value_tag(value_at)?,
                    ))
                });
            if found.is_some() {
                return found;
            }
            *typed = false;
        }
        Some((None, value_tag(at)?))
    }
}

/// The position after the whitespace run at `at`.
fn skip_space(text: &str, at: usize) -> usize {
    text.len() - text[at..].trim_start_matches(py_is_space).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAGS: ArgTags = ArgTags {
        key: ("<k>", "</k>"),
        kind: Some(("<t>", "</t>")),
        value: ("<v>", "</v>"),
        spaced: true,
    };

    #[test]
    fn pairs_match_like_findall() {
        let pairs = TAGS.pairs("<k>a</k>x<k>b</k> <v>1</v><k>c</k><t>int</t>\n<v>2</v><k>d</k>");
        let found: Vec<_> = pairs.iter().map(|p| (p.key, p.kind, p.value)).collect();
        assert_eq!(found, [("a</k>x<k>b", None, "1"), ("c", Some("int"), "2")]);
        assert!(TAGS.pairs("<k>a</k><v>never closed").is_empty());
    }
}
