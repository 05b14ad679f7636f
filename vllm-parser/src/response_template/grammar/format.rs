//! The structural-tag formats the `beam` grammar writes, as the plain dicts
//! of `vllm/parser/response_template_grammar.py` (not xgrammar's
//! `model_dump()`: only the keys vLLM writes, in its order).

use serde_json::{Value, json};

pub(crate) fn const_strings(values: &[String]) -> Value {
    one_of(
        values
            .iter()
            .map(|v| json!({"type": "const_string", "value": v}))
            .collect(),
    )
}

pub(crate) fn sequence(elements: Vec<Value>) -> Value {
    json!({"type": "sequence", "elements": elements})
}

/// `_one_of`: the only format, or an `or` of them.
pub(crate) fn one_of(mut formats: Vec<Value>) -> Value {
    if formats.len() == 1 {
        formats.remove(0)
    } else {
        json!({"type": "or", "elements": formats})
    }
}

pub(crate) fn optional(content: Value) -> Value {
    json!({"type": "optional", "content": content})
}

pub(crate) fn star(content: Value) -> Value {
    json!({"type": "star", "content": content})
}

pub(crate) fn tag(begin: &str, content: Value, end: &[String]) -> Value {
    json!({"type": "tag", "begin": begin, "content": content, "end": end})
}

pub(crate) fn regex(pattern: &str) -> Value {
    json!({"type": "regex", "pattern": pattern})
}

/// `_ANY_TEXT`.
pub(crate) fn any_text() -> Value {
    json!({"type": "any_text"})
}

pub(crate) fn any_text_excluding(excludes: &[String]) -> Value {
    json!({"type": "any_text", "excludes": excludes})
}

pub(crate) fn json_schema(schema: &Value, excludes: &[String]) -> Value {
    json!({"type": "json_schema", "json_schema": schema, "excludes": excludes})
}

pub(crate) fn structural_tag(format: Value) -> Value {
    json!({"type": "structural_tag", "format": format})
}
