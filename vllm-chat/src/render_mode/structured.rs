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
                params.json = format
                    .get("json_schema")
                    .and_then(|s| s.get("schema"))
                    .filter(|s| !s.is_null())
                    .cloned();
            }
            Some("structural_tag") => {
                params.structural_tag = Some(python::json_dumps(&structural_tag(format)?));
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
