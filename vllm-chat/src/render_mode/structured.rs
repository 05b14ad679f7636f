//! Structured outputs: the request's `structured_outputs`, overridden by its
//! `response_format`, as vLLM's `StructuredOutputsParams`.
//!
//! vLLM (`structured_outputs_from_response_format`) maps `response_format` onto one
//! constraint: `json_object` → `json_object: true`, `json_schema` → `json` (the
//! schema), `structural_tag` → `structural_tag` (the `json.dumps` of the whole
//! response format, in both its current `format` and legacy `structures`/`triggers`
//! shapes); `text` changes nothing. Exactly one constraint must result.
//!
//! Not checked here: what vLLM asks xgrammar to check (that a structural tag or a
//! grammar compiles); the engine still refuses those.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{RenderError, python};

/// vLLM's `StructuredOutputsParams`: one constraint and its options.
///
/// Serialized as vLLM dumps it: every field, then the engine-private `_backend`
/// (null) and `_backend_was_auto` (false).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct StructuredOutputsParams {
    /// A JSON schema (object or string).
    pub json: Option<Value>,
    /// A regular expression.
    pub regex: Option<String>,
    /// One of these strings.
    pub choice: Option<Vec<String>>,
    /// A grammar (EBNF / Lark).
    pub grammar: Option<String>,
    /// Any JSON object.
    pub json_object: Option<bool>,
    /// No whitespace between JSON tokens.
    pub disable_any_whitespace: bool,
    /// Refuse properties a schema does not list.
    pub disable_additional_properties: bool,
    /// The whitespace allowed between JSON tokens.
    pub whitespace_pattern: Option<String>,
    /// A structural tag, as a JSON string.
    pub structural_tag: Option<String>,
}

impl Serialize for StructuredOutputsParams {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl StructuredOutputsParams {
    /// The fields in vLLM's order, as Python sees them (`self.__dict__`).
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        let opt = |v: Option<Value>| v.unwrap_or(Value::Null);
        m.insert("json".into(), opt(self.json.clone()));
        m.insert("regex".into(), opt(self.regex.clone().map(Value::String)));
        m.insert(
            "choice".into(),
            opt(self
                .choice
                .clone()
                .map(|c| c.into_iter().map(Value::String).collect())),
        );
        m.insert(
            "grammar".into(),
            opt(self.grammar.clone().map(Value::String)),
        );
        m.insert("json_object".into(), opt(self.json_object.map(Value::Bool)));
        m.insert(
            "disable_any_whitespace".into(),
            self.disable_any_whitespace.into(),
        );
        m.insert(
            "disable_additional_properties".into(),
            self.disable_additional_properties.into(),
        );
        m.insert(
            "whitespace_pattern".into(),
            opt(self.whitespace_pattern.clone().map(Value::String)),
        );
        m.insert(
            "structural_tag".into(),
            opt(self.structural_tag.clone().map(Value::String)),
        );
        m.insert("_backend".into(), Value::Null);
        m.insert("_backend_was_auto".into(), false.into());
        Value::Object(m)
    }

    fn constraint_count(&self) -> usize {
        [
            self.json.is_some(),
            self.regex.is_some(),
            self.choice.is_some(),
            self.grammar.is_some(),
            self.json_object.is_some(),
            self.structural_tag.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }

    /// vLLM's `__post_init__` check: exactly one constraint is set.
    pub fn verify(&self) -> Result<(), RenderError> {
        let message = match self.constraint_count() {
            1 => return Ok(()),
            0 => "You must use one kind of structured outputs constraint but none are specified",
            _ => {
                "You can only use one kind of structured outputs constraint but multiple are specified"
            }
        };
        Err(RenderError::validation(
            format!("{message}: {}", python::repr(&self.to_json())),
            None,
            None,
        ))
    }

    /// The request-content checks of vLLM's `SamplingParams._validate_structured_outputs`
    /// (run by vLLM's input processor, before the engine sees the request), in vLLM's
    /// order and with its messages: an empty `choice` list, a blank `grammar`, `json` or
    /// `structural_tag`, a schema nested too deeply, `json_object: false`, a NUL in a
    /// regex, and a `json` string that is not JSON (vLLM's "auto" backend reports it when
    /// xgrammar rejects it). The grammar compilers' own checks (regex and grammar syntax,
    /// schema semantics) need xgrammar or llguidance and are left to the engine.
    pub fn verify_content(&self) -> Result<(), RenderError> {
        let refuse = |message: &str| Err(RenderError::validation(message, None, None));
        if self.choice.as_ref().is_some_and(Vec::is_empty) {
            return refuse("Choice '[]' cannot be an empty list");
        }
        if self.grammar.as_deref().is_some_and(is_blank) {
            return refuse("structured_outputs.grammar cannot be an empty string");
        }
        if let Some(Value::String(json)) = &self.json
            && is_blank(json)
        {
            return refuse("structured_outputs.json cannot be an empty string");
        }
        if let Some(json) = &self.json {
            check_json_nesting(json, false)?;
        }
        if let Some(tag) = &self.structural_tag {
            check_json_nesting(&Value::String(tag.clone()), true)?;
        }
        if self.json_object == Some(false) {
            return refuse(
                "structured_outputs.json_object must be True if set; omit structured_outputs to disable structured outputs",
            );
        }
        if self.regex.as_deref().is_some_and(|r| r.contains('\0')) {
            return refuse("structured_outputs.regex must not contain a NUL character ('\\x00')");
        }
        if self.structural_tag.as_deref().is_some_and(is_blank) {
            return refuse("structured_outputs.structural_tag cannot be an empty string");
        }
        if let Some(Value::String(json)) = &self.json
            && !python_json_may_load(json)
        {
            return refuse("Invalid JSON grammar specification.");
        }
        Ok(())
    }

    /// The constraints of a request: its `structured_outputs` with its
    /// `response_format` applied, as vLLM's `extract_structured_outputs`.
    pub fn from_request(
        structured_outputs: Option<&Value>,
        response_format: Option<&Value>,
    ) -> Result<Option<Self>, RenderError> {
        let base = match structured_outputs.filter(|v| !v.is_null()) {
            Some(given) => Some(
                Self::deserialize(given)
                    .map_err(|e| {
                        RenderError::validation(
                            format!("Invalid structured_outputs: {e}"),
                            Some("structured_outputs"),
                            None,
                        )
                    })
                    .and_then(|p| p.verify().map(|()| p))?,
            ),
            None => None,
        };
        if let Some(tag) = base.as_ref().and_then(|p| p.structural_tag.as_deref()) {
            check_structural_tag(tag, "structured_outputs")?;
        }
        let Some(format) = response_format.filter(|v| !v.is_null()) else {
            return Ok(base);
        };
        let kind = format.get("type").and_then(Value::as_str);
        if kind == Some("text") {
            return Ok(base);
        }
        let mut params = base.unwrap_or_default();
        match kind {
            Some("json_object") => params.json_object = Some(true),
            Some("json_schema") => {
                let schema = format
                    .get("json_schema")
                    .and_then(|s| s.get("schema"))
                    .filter(|s| !s.is_null());
                // vLLM's request model types the schema as a dict: anything else is a
                // request-validation error (pydantic's `dict_type`), never a schema.
                if schema.is_some_and(|s| !s.is_object()) {
                    return Err(RenderError::InvalidRequest {
                        message:
                            "response_format.json_schema.schema: Input should be a valid dictionary"
                                .into(),
                        param: Some("body.response_format.json_schema.schema".into()),
                    });
                }
                params.json = schema.cloned();
            }
            Some("structural_tag") => {
                let tag = python::json_dumps(&structural_tag(format)?);
                check_structural_tag(&tag, "response_format")?;
                params.structural_tag = Some(tag);
            }
            _ => {
                return Err(RenderError::validation(
                    "response_format type must be one of 'text', 'json_object', 'json_schema' or 'structural_tag'.",
                    Some("response_format"),
                    None,
                ));
            }
        }
        params.verify().map(|()| Some(params))
    }
}

/// `response_format.model_dump(by_alias=True)` of a structural tag: the declared
/// fields in pydantic's order, then any extra fields in the order given.
fn structural_tag(format: &Value) -> Result<Value, RenderError> {
    let invalid = || {
        RenderError::validation(
            "Invalid response_format structural_tag specification.",
            Some("response_format"),
            None,
        )
    };
    let Value::Object(given) = format else {
        return Err(invalid());
    };
    let fields: &[&str] = if given.contains_key("format") {
        &["type", "format"]
    } else {
        &["type", "structures", "triggers"]
    };
    let mut out = ordered(given, fields).ok_or_else(invalid)?;
    if let Some(Value::Array(structures)) = out.get_mut("structures") {
        for structure in structures.iter_mut() {
            let Value::Object(s) = structure else {
                return Err(invalid());
            };
            let mut s = s.clone();
            s.entry("schema").or_insert(Value::Null);
            *structure =
                Value::Object(ordered(&s, &["begin", "schema", "end"]).ok_or_else(invalid)?);
        }
    } else if fields.contains(&"structures") {
        return Err(invalid());
    }
    if fields.contains(&"triggers") && !out["triggers"].is_array() {
        return Err(invalid());
    }
    Ok(Value::Object(out))
}

/// Python's `s.strip() == ""`: every character is whitespace as `str.isspace` sees it
/// (Unicode White_Space, plus the separators U+001C–U+001F).
fn is_blank(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Whether Python's `json.loads` could read `text`: serde_json reads it, or fails only
/// where Python is laxer (`NaN` / `Infinity` literals, lone surrogate escapes, floats
/// past f64's range), so that no schema vLLM accepts is refused here.
fn python_json_may_load(text: &str) -> bool {
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) => true,
        Err(e) => {
            let message = e.to_string();
            text.contains("NaN")
                || text.contains("Infinity")
                || message.contains("surrogate")
                || message.contains("number out of range")
                || message.starts_with("recursion limit exceeded")
        }
    }
}

/// The format types of xgrammar 0.2.8's structural tags (`xgrammar.structural_tag`).
const STRUCTURAL_TAG_FORMATS: &[&str] = &[
    "const_string",
    "json_schema",
    "any_text",
    "token",
    "exclude_token",
    "any_tokens",
    "grammar",
    "regex",
    "sequence",
    "or",
    "tag",
    "triggered_tags",
    "token_triggered_tags",
    "tags_with_separator",
    "optional",
    "plus",
    "star",
    "repeat",
    "dispatch",
    "token_dispatch",
    "qwen_xml_parameter",
];

/// vLLM's `validate_structural_tag_payload` as far as it goes without xgrammar: an
/// empty payload, one nested too deeply, one that is not a JSON object, and one whose
/// shape is neither xgrammar's `{"format": {"type": …}}` (a known format type) nor the
/// legacy `structures` + `triggers` lists are refused with vLLM's message, before the
/// engine sees them. The inside of a well-shaped format (xgrammar's own schema for each
/// format type) is left to the engine's grammar compiler.
fn check_structural_tag(payload: &str, parameter: &str) -> Result<(), RenderError> {
    let invalid = || {
        RenderError::validation(
            format!("Invalid {parameter} structural_tag specification."),
            Some(parameter),
            None,
        )
    };
    if payload.is_empty() {
        return Err(invalid());
    }
    check_json_nesting(&Value::String(payload.to_owned()), true)?;
    let Ok(Value::Object(tag)) = serde_json::from_str::<Value>(payload) else {
        return Err(invalid());
    };
    let well_shaped = match tag.get("format") {
        Some(format) => format
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| STRUCTURAL_TAG_FORMATS.contains(&kind)),
        None => {
            tag.get("structures").is_some_and(Value::is_array)
                && tag.get("triggers").is_some_and(Value::is_array)
        }
    };
    if well_shaped { Ok(()) } else { Err(invalid()) }
}

/// vLLM's `MAX_STRUCTURED_OUTPUT_JSON_NESTING`: objects and arrays in a JSON schema
/// may nest this deep.
const MAX_JSON_NESTING: usize = 64;

/// vLLM's `STRUCTURAL_TAG_WRAPPER_NESTING`: the extra levels a structural tag's
/// wrappers may add.
const STRUCTURAL_TAG_WRAPPER_NESTING: usize = 16;

/// vLLM's `check_json_nesting`: a schema (an object, or JSON text) whose objects and
/// arrays nest more than [`MAX_JSON_NESTING`] levels (plus the wrapper allowance for
/// a structural tag) is refused before any grammar compiler walks it. Malformed JSON
/// text passes here (the backend reports it); text nested past what the JSON parser
/// accepts counts as too deep, as Python's `RecursionError` does.
pub(crate) fn check_json_nesting(spec: &Value, structural_tag: bool) -> Result<(), RenderError> {
    let limit = MAX_JSON_NESTING
        + if structural_tag {
            STRUCTURAL_TAG_WRAPPER_NESTING
        } else {
            0
        };
    let parsed;
    let root = match spec {
        Value::String(text) if text.is_empty() => return Ok(()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(value) => {
                parsed = value;
                &parsed
            }
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                return Err(too_deep());
            }
            Err(_) => return Ok(()),
        },
        Value::Object(m) if m.is_empty() => return Ok(()),
        Value::Array(a) if a.is_empty() => return Ok(()),
        other => other,
    };
    let mut level = vec![root];
    for _ in 0..limit {
        level = level.into_iter().flat_map(children).collect();
        if level.is_empty() {
            return Ok(());
        }
    }
    Err(too_deep())
}

/// The objects and arrays directly inside `node`.
fn children(node: &Value) -> Vec<&Value> {
    let is_container = |v: &&Value| v.is_object() || v.is_array();
    match node {
        Value::Object(m) => m.values().filter(is_container).collect(),
        Value::Array(a) => a.iter().filter(is_container).collect(),
        _ => Vec::new(),
    }
}

fn too_deep() -> RenderError {
    RenderError::validation(
        format!(
            "The JSON schema is nested too deeply: objects and arrays may nest at most {MAX_JSON_NESTING} levels"
        ),
        None,
        None,
    )
}

/// `fields` first (all required), then the other keys of `given`.
fn ordered(given: &Map<String, Value>, fields: &[&str]) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for field in fields {
        out.insert((*field).to_owned(), given.get(*field)?.clone());
    }
    for (k, v) in given {
        if !fields.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> StructuredOutputsParams {
        StructuredOutputsParams::deserialize(&value).expect("valid structured_outputs")
    }

    fn content_error(value: Value) -> Option<String> {
        params(value).verify_content().err().map(|e| e.to_string())
    }

    #[test]
    fn content_checks_refuse_what_vllm_refuses_before_the_engine() {
        for (spec, message) in [
            (json!({"choice": []}), "Choice '[]' cannot be an empty list"),
            (
                json!({"grammar": " \n"}),
                "structured_outputs.grammar cannot be an empty string",
            ),
            (
                json!({"json": "\u{1c}"}),
                "structured_outputs.json cannot be an empty string",
            ),
            (
                json!({"json": "not a schema"}),
                "Invalid JSON grammar specification.",
            ),
            (
                json!({"json_object": false}),
                "structured_outputs.json_object must be True if set",
            ),
            (
                json!({"regex": "a\u{0}b"}),
                "structured_outputs.regex must not contain a NUL character ('\\x00')",
            ),
            (
                json!({"structural_tag": "  "}),
                "structured_outputs.structural_tag cannot be an empty string",
            ),
        ] {
            let error = content_error(spec.clone()).unwrap_or_default();
            assert!(error.starts_with(message), "{spec}: {error:?}");
        }
        for fine in [
            json!({"choice": ["a", "b"]}),
            json!({"json": {"type": "object"}}),
            json!({"json": "{\"type\": \"object\"}"}),
            // Python's json.loads reads these; serde_json does not.
            json!({"json": "{\"minimum\": NaN}"}),
            json!({"json": "{\"maximum\": 1e400}"}),
            json!({"regex": ""}),
            json!({"json_object": true}),
        ] {
            assert_eq!(content_error(fine.clone()), None, "{fine}");
        }
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!({}), |inner, _| json!({ "a": inner }))
    }

    #[test]
    fn nesting_is_limited_as_vllm_limits_it() {
        // vLLM counts the root as the first level: 64 levels pass, 65 do not.
        assert!(check_json_nesting(&nested(63), false).is_ok());
        assert!(check_json_nesting(&nested(64), false).is_err());
        assert!(check_json_nesting(&nested(64), true).is_ok());
        assert!(check_json_nesting(&nested(80), true).is_err());
        let text = Value::String(nested(70).to_string());
        assert!(check_json_nesting(&text, false).is_err());
        // Deeper than serde_json parses: Python's RecursionError counts as too deep.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(check_json_nesting(&Value::String(deep), false).is_err());
        assert!(check_json_nesting(&json!("{not json"), false).is_ok());
    }

    #[test]
    fn structural_tags_must_have_a_shape_xgrammar_reads() {
        for bad in ["", "nope", "{}", "[]", r#"{"format": {"type": "nope"}}"#] {
            let error = check_structural_tag(bad, "structured_outputs").unwrap_err();
            assert_eq!(
                error.to_string(),
                "Invalid structured_outputs structural_tag specification. (parameter=structured_outputs)",
                "{bad:?}"
            );
        }
        for good in [
            r#"{"type": "structural_tag", "format": {"type": "const_string", "value": "x"}}"#,
            r#"{"type": "structural_tag", "structures": [], "triggers": []}"#,
        ] {
            assert!(
                check_structural_tag(good, "response_format").is_ok(),
                "{good}"
            );
        }
        let refused = StructuredOutputsParams::from_request(
            None,
            Some(&json!({"type": "structural_tag", "format": {"type": "nope"}})),
        );
        assert!(refused.is_err());
    }

    #[test]
    fn a_response_format_schema_must_be_an_object() {
        let format = json!({"type": "json_schema", "json_schema": {"name": "x", "schema": "{}"}});
        let Err(RenderError::InvalidRequest { param, .. }) =
            StructuredOutputsParams::from_request(None, Some(&format))
        else {
            panic!("a string schema is a validation error in vLLM");
        };
        assert_eq!(
            param.as_deref(),
            Some("body.response_format.json_schema.schema")
        );
    }
}
