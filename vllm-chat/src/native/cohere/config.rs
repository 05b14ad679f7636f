//! vLLM's `_build_render_config` (`renderers/cohere.py`): how the request's
//! `chat_template_kwargs` become the format's settings, with vLLM's checks and
//! then the format's own (enum values, field types).

use serde_json::{Map, Value};

use super::messages::{self, Message};
use crate::RenderError;
use crate::kwargs::Kwargs;
use crate::native::py::{self, truthy, type_name};

/// The two prompt formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Command 3.
    Cmd3,
    /// Command 4 (the default).
    Cmd4,
}

/// A tool as the format lists it.
#[derive(Debug, Clone)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: Map<String, Value>,
}

/// `unknown` / `enabled` / `disabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Toggle {
    Unknown,
    Enabled,
    Disabled,
}

/// Everything a prompt is rendered from.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) format: Format,
    pub(crate) template_id: Option<String>,
    pub(crate) messages: Vec<Message>,
    pub(crate) documents: Vec<Map<String, Value>>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) reasoning_type: Option<Toggle>,
    pub(crate) dev_instruction: Option<String>,
    pub(crate) json_schema: Option<String>,
    pub(crate) json_mode: bool,
    /// cmd3: `unknown`, `none`, `strict` or `contextual`.
    pub(crate) safety_mode: Option<String>,
    /// cmd3: `unknown`, `off` or `on` (default `on`).
    pub(crate) citation_quality: Option<String>,
    /// cmd3.
    pub(crate) skip_preamble: bool,
    /// cmd4 (default enabled).
    pub(crate) grounding: Toggle,
    /// cmd4.
    pub(crate) platform_instruction: Option<String>,
    /// `chat_template_kwargs` the renderer does not interpret: template variables.
    pub(crate) extra: Map<String, Value>,
}

/// Keys the renderer interprets (`_RENDERER_CONSUMED_KEYS`).
const CONSUMED: [&str; 23] = [
    "cohere_format",
    "template_id",
    "template_jinja",
    "template",
    "use_jinja",
    "documents",
    "available_tools",
    "tools",
    "reasoning_type",
    "thinking",
    "dev_instruction",
    "response_format",
    "json_schema",
    "json_mode",
    "safety_mode",
    "citation_quality",
    "citation_options",
    "skip_preamble",
    "grounding",
    "platform_instruction",
    "_messages_citations",
    "_position_to_source",
    "_tool_message_v2_content",
];

/// serde's "invalid type" wording for a JSON value.
fn unexpected(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!(
            "floating point `{}`",
            crate::python::float(n.as_f64().unwrap_or_default())
        ),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
    }
}

/// The format's configuration error.
fn invalid_config(path: &str, message: impl std::fmt::Display) -> RenderError {
    py::error(format!("Invalid config: {path}: {message}"))
}

fn expect_string(path: &str, v: &Value) -> Result<String, RenderError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(invalid_config(
            path,
            format!("invalid type: {}, expected a string", unexpected(other)),
        )),
    }
}

/// An enum setting, matched without regard to case.
fn parse_enum<'a>(
    path: &str,
    type_name: &str,
    value: &str,
    allowed: &[&'a str],
) -> Result<&'a str, RenderError> {
    let lower = value.to_lowercase();
    allowed
        .iter()
        .find(|a| **a == lower)
        .copied()
        .ok_or_else(|| {
            invalid_config(
                path,
                format!(
                    "invalid {type_name} '{lower}', expected one of: {}",
                    allowed.join(", ")
                ),
            )
        })
}

fn toggle(path: &str, type_name: &str, value: &str) -> Result<Toggle, RenderError> {
    Ok(
        match parse_enum(path, type_name, value, &["unknown", "enabled", "disabled"])? {
            "enabled" => Toggle::Enabled,
            "disabled" => Toggle::Disabled,
            _ => Toggle::Unknown,
        },
    )
}

/// Iterates a Python value the way `for x in value` does (a list's items, a dict's
/// keys, a string's characters).
fn iterate(value: &Value) -> Result<Vec<Value>, RenderError> {
    Ok(match value {
        Value::Array(items) => items.clone(),
        Value::Object(map) => map.keys().map(|k| Value::String(k.clone())).collect(),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        other => {
            return Err(py::error(format!(
                "'{}' object is not iterable",
                type_name(other)
            )));
        }
    })
}

/// `_document_to_melody`.
fn document(doc: &Value) -> Result<Map<String, Value>, RenderError> {
    match doc {
        Value::String(s) => {
            let mut m = Map::new();
            m.insert("text".into(), Value::String(s.clone()));
            Ok(m)
        }
        Value::Object(map) => match map.get("data") {
            Some(Value::Object(data)) => {
                let mut payload = data.clone();
                if let Some(id) = map.get("id").filter(|v| !v.is_null())
                    && !payload.contains_key("id")
                {
                    payload.insert("id".into(), id.clone());
                }
                Ok(payload)
            }
            _ => Ok(map.clone()),
        },
        other => Err(py::error(format!(
            "Unsupported document type: {}",
            type_name(other)
        ))),
    }
}

/// `_tool_to_melody`: the tool's name, description and parameters as given.
fn raw_tool(tool: &Value) -> Result<[Value; 3], RenderError> {
    let Value::Object(map) = tool else {
        return Err(py::error(format!(
            "Unsupported tool type: {}",
            type_name(tool)
        )));
    };
    let function = match map.get("function") {
        Some(Value::Object(f)) => f,
        _ => map,
    };
    let name = function
        .get("name")
        .cloned()
        .unwrap_or_else(|| Value::String(String::new()));
    let description = function
        .get("description")
        .filter(|v| truthy(Some(v)))
        .cloned()
        .unwrap_or_else(|| Value::String(String::new()));
    let parameters = function
        .get("parameters")
        .filter(|v| truthy(Some(v)))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    Ok([name, description, parameters])
}

/// The format's field types for a tool.
fn tool(index: usize, [name, description, parameters]: [Value; 3]) -> Result<Tool, RenderError> {
    let path = |field: &str| format!("available_tools[{index}].{field}");
    let name = expect_string(&path("name"), &name)?;
    let description = expect_string(&path("description"), &description)?;
    let parameters = match parameters {
        Value::Object(p) => p,
        other => {
            return Err(invalid_config(
                &path("parameters"),
                format!("invalid type: {}, expected a map", unexpected(&other)),
            ));
        }
    };
    Ok(Tool {
        name,
        description,
        parameters,
    })
}

/// `dict(value)` for a `response_format` that is not a dict.
fn dict_of(value: &Value) -> Result<Map<String, Value>, RenderError> {
    let items = match value {
        Value::Object(map) => return Ok(map.clone()),
        Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
        Value::Array(items) => items.clone(),
        other => {
            return Err(py::error(format!(
                "'{}' object is not iterable",
                type_name(other)
            )));
        }
    };
    let mut out = Map::new();
    for (i, item) in items.iter().enumerate() {
        let pair: Vec<Value> = match item {
            Value::String(s) => s.chars().map(|c| Value::String(c.to_string())).collect(),
            Value::Array(a) => a.clone(),
            Value::Object(m) => m.keys().map(|k| Value::String(k.clone())).collect(),
            _ => {
                return Err(py::error(format!(
                    "cannot convert dictionary update sequence element #{i} to a sequence"
                )));
            }
        };
        if pair.len() != 2 {
            return Err(py::error(format!(
                "dictionary update sequence element #{i} has length {}; 2 is required",
                pair.len()
            )));
        }
        match &pair[0] {
            Value::String(k) => {
                out.insert(k.clone(), pair[1].clone());
            }
            Value::Array(_) | Value::Object(_) => {
                return Err(py::error(format!(
                    "unhashable type: '{}'",
                    type_name(&pair[0])
                )));
            }
            // A non-string key is never one the renderer reads.
            _ => {}
        }
    }
    Ok(out)
}

/// `_CMD4_GROUNDING_FROM_MODE` through `_normalize_cmd4_grounding`.
fn cmd4_grounding(value: &Value) -> Result<Toggle, RenderError> {
    let Value::String(s) = value else {
        return Err(py::error(format!(
            "'{}' object has no attribute 'lower'",
            type_name(value)
        )));
    };
    Ok(match s.to_lowercase().as_str() {
        "fast" | "accurate" | "on" | "enabled" => Toggle::Enabled,
        "off" | "disabled" => Toggle::Disabled,
        "unknown" => Toggle::Unknown,
        _ => {
            return Err(py::error(format!(
                "Unrecognized cmd4 grounding value: {}. Expected one of ENABLED / DISABLED / FAST / ACCURATE / OFF (from citation_options.mode), or the direct melody values enabled / disabled / unknown.",
                py::repr(value)
            )));
        }
    })
}

/// `co.get("mode") if isinstance(co, dict) else None` for a truthy `citation_options`.
fn citation_mode(kwargs: &Kwargs) -> Option<&Value> {
    kwargs
        .get("citation_options")
        .filter(|co| truthy(Some(co)))
        .and_then(Value::as_object)
        .and_then(|co| co.get("mode"))
        .filter(|m| !m.is_null())
}

/// A JSON schema setting: a string as it is, anything else `json.dumps`ed.
fn schema_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => crate::python::json_dumps(other),
    }
}

/// `_build_render_config` over the conversation, the merged kwargs and the request
/// tools (vLLM's `tools` default).
pub(crate) fn build(conversation: &[Value], kwargs: &Kwargs) -> Result<Config, RenderError> {
    let format = match kwargs.get("cohere_format") {
        None => Format::Cmd4,
        Some(Value::String(s)) if s == "cmd4" => Format::Cmd4,
        Some(Value::String(s)) if s == "cmd3" => Format::Cmd3,
        Some(other) => {
            return Err(py::error(format!(
                "Invalid cohere_format={}; expected one of ('cmd3', 'cmd4')",
                py::repr(other)
            )));
        }
    };
    for key in ["template_jinja", "template"] {
        if kwargs.get(key).is_some_and(|v| !v.is_null()) {
            return Err(py::error(format!(
                "chat_template_kwargs.'{key}' is not accepted in vLLM (it is a Cohere-only field); pass the template body via the standard 'chat_template' request field instead (requires --trust-request-chat-template)."
            )));
        }
    }
    let citations = kwargs
        .get("_messages_citations")
        .filter(|v| truthy(Some(v)));
    let v2_content = kwargs
        .get("_tool_message_v2_content")
        .filter(|v| !v.is_null());
    for lookup in [citations, v2_content].into_iter().flatten() {
        // Looked up by integer message index: a JSON object's keys never match;
        // anything else has no `.get`.
        if !lookup.is_object() && !conversation.is_empty() {
            return Err(py::error(format!(
                "'{}' object has no attribute 'get'",
                type_name(lookup)
            )));
        }
    }
    let messages = messages::from_conversation(conversation)?;

    let raw_template_id = kwargs.get("template_id").filter(|v| truthy(Some(v)));
    let documents = match kwargs.get("documents").filter(|v| truthy(Some(v))) {
        None => Vec::new(),
        Some(docs) => iterate(docs)?
            .iter()
            .map(document)
            .collect::<Result<_, _>>()?,
    };
    let tools_value = kwargs
        .get("available_tools")
        .filter(|v| truthy(Some(v)))
        .or_else(|| kwargs.get("tools").filter(|v| truthy(Some(v))));
    let raw_tools = match tools_value {
        None => Vec::new(),
        Some(tools) => iterate(tools)?
            .iter()
            .map(raw_tool)
            .collect::<Result<Vec<_>, _>>()?,
    };

    let mut reasoning_type = None;
    if let Some(rt) = kwargs.get("reasoning_type").filter(|v| !v.is_null()) {
        reasoning_type = Some(py::s(Some(rt)));
    } else if let Some(thinking) = kwargs.get("thinking") {
        let t = match thinking {
            Value::Object(map) => map.get("type"),
            other => Some(other),
        };
        if let Some(Value::String(t)) = t
            && (t == "enabled" || t == "disabled")
        {
            reasoning_type = Some(t.clone());
        }
    }
    let dev_instruction = kwargs
        .get("dev_instruction")
        .filter(|v| !v.is_null())
        .map(|v| py::s(Some(v)));

    let mut json_mode = false;
    let mut json_schema = None;
    if let Some(rf) = kwargs.get("response_format").filter(|v| !v.is_null()) {
        let rf = dict_of(rf)?;
        match rf.get("type").and_then(Value::as_str) {
            Some("json_object") => json_mode = true,
            Some("json_schema" | "json") => {
                let mut schema = rf
                    .get("schema")
                    .filter(|v| truthy(Some(v)))
                    .or_else(|| rf.get("json_schema"));
                if let Some(Value::Object(inner)) = schema
                    && inner.contains_key("schema")
                {
                    schema = inner.get("schema");
                }
                if let Some(schema) = schema.filter(|v| !v.is_null()) {
                    json_schema = Some(schema_text(schema));
                }
            }
            _ => {}
        }
    }
    if let Some(js) = kwargs.get("json_schema").filter(|v| !v.is_null()) {
        json_schema = Some(schema_text(js));
    }
    if let Some(jm) = kwargs.get("json_mode") {
        json_mode = truthy(Some(jm));
    }

    let (mut safety, mut citation_quality, mut skip_preamble) = (None, None, false);
    let (mut grounding, mut platform_instruction) = (None, None);
    match format {
        Format::Cmd3 => {
            safety = kwargs
                .get("safety_mode")
                .filter(|v| !v.is_null())
                .map(|v| py::s(Some(v)).to_lowercase());
            citation_quality = kwargs
                .get("citation_quality")
                .filter(|v| !v.is_null())
                .map(|v| py::s(Some(v)).to_lowercase());
            if citation_quality.is_none()
                && let Some(mode) = citation_mode(kwargs)
            {
                let off = py::s(Some(mode)).to_lowercase() == "off";
                citation_quality = Some(if off { "off" } else { "on" }.into());
            }
            if let Some(sp) = kwargs.get("skip_preamble") {
                skip_preamble = truthy(Some(sp));
            }
        }
        Format::Cmd4 => {
            grounding = match kwargs.get("grounding").filter(|v| !v.is_null()) {
                Some(gr) => Some(cmd4_grounding(gr)?),
                None => citation_mode(kwargs).map(cmd4_grounding).transpose()?,
            };
            platform_instruction = kwargs
                .get("platform_instruction")
                .filter(|v| !v.is_null())
                .map(|v| py::s(Some(v)));
        }
    }

    // The format reads its settings in this order; the first bad one is reported.
    let template_id = match raw_template_id {
        None => None,
        Some(v) => Some(expect_string("template_id", v)?),
    };
    let tools = raw_tools
        .into_iter()
        .enumerate()
        .map(|(i, t)| tool(i, t))
        .collect::<Result<_, _>>()?;
    let reasoning_type = reasoning_type
        .map(|rt| toggle("reasoning_type", "ReasoningType", &rt))
        .transpose()?;
    let safety_mode = safety
        .map(|s| {
            parse_enum(
                "safety_mode",
                "SafetyMode",
                &s,
                &["unknown", "none", "strict", "contextual"],
            )
            .map(str::to_owned)
        })
        .transpose()?;
    let citation_quality = match citation_quality {
        Some(cq) => Some(
            parse_enum(
                "citation_quality",
                "CitationQuality",
                &cq,
                &["unknown", "off", "on"],
            )?
            .to_owned(),
        ),
        None => Some("on".into()),
    };
    let mut config = Config {
        format,
        template_id,
        messages,
        documents,
        tools,
        reasoning_type,
        dev_instruction,
        json_schema,
        json_mode,
        safety_mode,
        citation_quality,
        skip_preamble,
        grounding: grounding.unwrap_or(Toggle::Enabled),
        platform_instruction,
        extra: Map::new(),
    };
    config.extra = kwargs
        .iter()
        .filter(|(k, _)| !CONSUMED.contains(k))
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect();
    Ok(config)
}
