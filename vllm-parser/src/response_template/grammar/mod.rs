//! The structural tag vLLM's `beam` parser derives from a checkpoint's
//! `response_template` (`vllm/parser/response_template_grammar.py`), which
//! holds the whole reply — reasoning, calls in the template's own format,
//! the answer — to the template.
//!
//! The tag is built from literal delimiters (module `literals` expands the
//! simple regexes vLLM expands), the tool opener's `(?P<name>…)` group and
//! each function's arguments — `json` (module `derive`) or `xml-inline`
//! (module `xml`, which reads candidate parameter text back with the
//! template's own content parser, as vLLM does) — as the plain dicts vLLM
//! dumps (module `format`). Where vLLM decides by compiling with xgrammar
//! (`_json_compiles`, and `_xgrammar_supports` for a request's own JSON
//! schema), this crate repeats xgrammar's schema checks
//! ([`crate::serving::json_schema_grammar::compiles`]). Where vLLM compiles
//! a regex (`_regex_compiles` for an `xml-inline` string's `pattern`,
//! `_xgrammar_supports` for a request's `regex`) and reads it with Python's
//! regex parser (`_may_write`), this crate asks
//! [`crate::serving::xgrammar_regex`] and [`crate::serving::python_re`],
//! which answer exactly or not at all. A schema or regex they cannot decide
//! is [`GrammarError::Unsupported`], as is anything else not reproduced, so
//! a caller can leave the request as it is instead of guessing. The
//! differences this leaves are listed on
//! [`GrammarError::Unsupported`].

mod derive;
mod format;
mod literals;
mod xml;

use std::sync::Arc;

use serde_json::{Map, Value};

use super::scanner::{Region, Scanner};
use super::{FieldKind, ResponseTemplate};

pub(crate) use derive::{
    CallTag, answer_rest_structural_tag, message_start_anchors, tool_call_structural_tag,
};

/// Why no tag can be given for a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GrammarError {
    /// A tool or parameter name the template cannot spell: vLLM's
    /// `ValueError` message (a 400 naming `tools`).
    Unencodable(String),
    /// The derivation depends on what this crate does not reproduce: a JSON
    /// schema [`crate::serving::json_schema_grammar::compiles`] cannot decide
    /// (vLLM asks xgrammar whether it compiles), a request schema with
    /// keywords vLLM's xgrammar validation may refuse, a `choice` /
    /// `grammar` constraint, a `regex` constraint or an `xml-inline` string
    /// `pattern` that [`crate::serving::xgrammar_regex`] (does xgrammar
    /// compile it?) or [`crate::serving::python_re`] (`_may_write`) leaves
    /// undecided — `\N{…}`, verbose mode, repetition counts of ten digits,
    /// escapes past U+10FFFF, non-ASCII where the C++ calls `isdigit` /
    /// `isalpha`, long or deeply nested patterns —, a delimiter regex this
    /// crate's pattern compiler refuses (syntax vLLM's `regex` module accepts
    /// but module `pattern` does not reproduce, e.g. a named group inside a
    /// lookbehind; lookarounds themselves are supported, and a delimiter they
    /// make underivable is vLLM's "no tag", not this), or a tool name too long to
    /// negate.
    Unsupported(String),
}

/// One function a tag may call: its name, `parameters` (`Null` when absent)
/// and whether its schema must be enforced (`strict`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Function<'a> {
    pub name: &'a str,
    pub parameters: &'a Value,
    pub strict: bool,
}

/// xgrammar's `Grammar.from_json_schema` succeeds (`_json_compiles`), as far
/// as this crate can tell: its schema checks
/// ([`crate::serving::json_schema_grammar::compiles`]), or, where they cannot
/// tell, a schema the xgrammar-exact converter converts.
pub(crate) fn json_compiles(schema: &Value) -> Result<bool, GrammarError> {
    use crate::serving::json_schema_grammar::{compiles, from_json_schema};
    compiles(schema).or_else(|undecided| {
        from_json_schema(schema)
            .map(|_| true)
            .map_err(|_| GrammarError::Unsupported(undecided.to_string()))
    })
}

/// vLLM's `_xgrammar_supports` for a request's own JSON schema
/// (`validate_xgrammar_grammar`): not nested too deeply
/// (`check_json_nesting`), none of the features vLLM refuses
/// (`has_xgrammar_unsupported_json_features`), and compiled by xgrammar.
pub(crate) fn xgrammar_supports_schema(schema: &Value) -> Result<bool, GrammarError> {
    use crate::serving::json_schema_grammar::{MAX_JSON_NESTING, exceeds_json_nesting};
    if !schema.is_object() {
        return Err(GrammarError::Unsupported(
            "a JSON schema that is not an object".into(),
        ));
    }
    if exceeds_json_nesting(schema, MAX_JSON_NESTING) || unsupported_json_features(schema) {
        return Ok(false);
    }
    json_compiles(schema)
}

/// The `format`s vLLM's validation lets through beside `type: string`
/// (`STRING_SUPPORTED_FORMATS`).
const STRING_SUPPORTED_FORMATS: &[&str] = &[
    "email",
    "date",
    "time",
    "date-time",
    "duration",
    "ipv4",
    "ipv6",
    "hostname",
    "uuid",
    "uri",
    "uri-reference",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
];

/// vLLM's `has_xgrammar_unsupported_json_features`: keyword combinations its
/// validation refuses before xgrammar sees the schema, looked for in every
/// object of the schema (property maps included, as vLLM walks them).
fn unsupported_json_features(schema: &Value) -> bool {
    fn pattern_and_length(map: &Map<String, Value>) -> bool {
        (map.contains_key("pattern") || map.contains_key("format"))
            && (map.contains_key("minLength") || map.contains_key("maxLength"))
    }
    fn check(value: &Value) -> bool {
        let Value::Object(map) = value else {
            return false;
        };
        let types: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let has_type = |t: &str| types.contains(&t);
        let has = |key: &str| map.contains_key(key);
        if (has_type("integer") || has_type("number")) && has("multipleOf") {
            return true;
        }
        if has_type("array")
            && ["uniqueItems", "contains", "minContains", "maxContains"]
                .iter()
                .any(|k| has(k))
        {
            return true;
        }
        if has_type("string") {
            // A format that is not a known string (an unhashable one raises, which
            // vLLM reads as unsupported too).
            let known = |f: &Value| {
                f.as_str()
                    .is_some_and(|f| STRING_SUPPORTED_FORMATS.contains(&f))
            };
            if map.get("format").is_some_and(|f| !known(f)) || pattern_and_length(map) {
                return true;
            }
        }
        if has_type("object") {
            if let Some(names) = map.get("propertyNames")
                && (names.as_object().is_some_and(pattern_and_length)
                    || has("patternProperties")
                    || has("properties")
                    || map
                        .get("unevaluatedProperties")
                        .is_some_and(|u| u != &Value::Bool(true)))
            {
                return true;
            }
            if let Some(Value::Object(patterns)) = map.get("patternProperties")
                && (has("properties") || patterns.len() > 1)
            {
                return true;
            }
        }
        if map
            .get("allOf")
            .and_then(Value::as_array)
            .is_some_and(|all| all.len() >= 2)
        {
            return true;
        }
        map.values().any(|value| match value {
            Value::Object(_) => check(value),
            Value::Array(items) => items.iter().any(check),
            _ => false,
        })
    }
    check(schema)
}

/// `_starts_message`: whether output after `prefix` starts the assistant
/// message (the last start anchor ends the prefix).
pub(crate) fn starts_message(template: &ResponseTemplate, prefix: &str) -> bool {
    template
        .start_anchor
        .find_iter(prefix)
        .last()
        .is_some_and(|found| found.end == prefix.len())
}

/// The field a prompt leaves open (`_open_field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenField {
    Thinking,
    Content,
    ToolCalls,
}

/// `_open_field`: the field `prefix` leaves open with its explicit opener.
pub(crate) fn open_field(template: &Arc<ResponseTemplate>, prefix: &str) -> Option<OpenField> {
    let mut initial = Vec::new();
    let _scanner = Scanner::new(template.clone(), Vec::new(), prefix, &mut initial);
    let mut open = None;
    for region in &initial {
        match region {
            Region::Open { field, start, end } if end > start => {
                open = template.fields.get(*field).map(|f| match f.kind {
                    FieldKind::Thinking => OpenField::Thinking,
                    FieldKind::Content => OpenField::Content,
                    FieldKind::ToolCalls => OpenField::ToolCalls,
                });
            }
            Region::Close { .. } | Region::Malformed { .. } => open = None,
            _ => {}
        }
    }
    open
}

impl ResponseTemplate {
    /// The field of `kind`, for the grammar.
    pub(crate) fn grammar_field(&self, kind: FieldKind) -> Option<&super::Field> {
        self.field(kind)
    }
}
