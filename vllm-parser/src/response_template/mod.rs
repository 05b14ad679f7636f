//! vLLM's response-template parsers (`hf`, `beam`): reasoning, content and tool
//! calls parsed by the checkpoint's own declarative `response_template`.
//!
//! A checkpoint may describe its output format in `tokenizer_config.json`
//! (transformers 5's `response_template`): a `start_anchor` where the
//! assistant message begins, and `fields` (`thinking`, `content`,
//! `tool_calls`), each a region with an `open` / `close` delimiter (literals
//! or regexes) and a `content` parser (`text`, `json`, `xml-inline`, …) whose
//! value a `transform` may reshape. vLLM 0.33.0 parses with transformers'
//! `ResponseParser` (vendored in `vllm/parser/chat_parsing/`) driven by
//! `vllm/parser/response_template.py`; `beam` is the same parser, which
//! additionally constrains generation with a structural tag derived from the
//! template (module `grammar`, applied by
//! [`ServingParsers`](crate::serving::ServingParsers)).
//!
//! The template is model metadata, so a server compiles it once
//! ([`ResponseTemplate::from_tokenizer_config`]) and hands it to each request
//! through [`ParserOptions::response_template`](crate::ParserOptions).
//!
//! vLLM's rules reproduced here:
//! - The prompt (`ParserOptions::prompt`, the text vLLM decodes from the
//!   prompt's token ids) is parsed first, from its last start anchor on, so a
//!   template-opened `<think>` makes the output reasoning; vLLM's
//!   `is_reasoning_end` reads the same regions, then probes the delimiters
//!   held at the prompt's end with a NUL.
//! - Delimiters are searched like Python's `regex` with `partial=True`,
//!   lookarounds included; text that may still become a delimiter is held
//!   back (module `pattern`).
//! - `thinking` text is reasoning when a reasoning parser is selected, else
//!   content; `content` text is content. A `tool_calls` region becomes calls
//!   when it closes and its value parses (arguments cast by the tool's schema);
//!   a malformed or incomplete region is dropped. Without a tool parser, tool
//!   regions pass through as content, delimiters included.
//! - A region still open at the end is closed there (so an unclosed tool call
//!   whose body parses is a call).
//!
//! Not reproduced: `start_anchor_pattern` anchors only truncate the prompt (the
//! literal anchors derived from them for `_closer_rest` are not).

mod coerce;
mod content;
pub(crate) mod grammar;
mod lookaround;
mod parser;
mod pattern;
mod scanner;

use std::sync::Arc;

use serde_json::{Map, Value};

use content::ContentParser;
pub use parser::TemplateParser;
pub(crate) use parser::markers_end_reasoning;
pub(crate) use pattern::Pattern;

/// Why a `response_template` cannot be served (vLLM refuses to start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid response_template: {0}")]
pub struct TemplateError(String);

impl TemplateError {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// The three fields vLLM can route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    Thinking,
    Content,
    ToolCalls,
}

/// An `open` / `close` delimiter: literals (longest first) or a regex.
#[derive(Debug, Clone)]
pub(crate) struct Delimiter {
    pub pattern: Pattern,
    /// The literal strings, for literal delimiters.
    pub literals: Option<Vec<String>>,
    /// Whether one literal is a strict prefix of another, so a complete match
    /// at the end of the text could still grow.
    pub can_extend: bool,
    /// The regex as written, for regex delimiters (`open_re.pattern`, which
    /// the `beam` grammar expands into literals).
    pub source: Option<String>,
}

/// One region of the message.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    pub name: String,
    pub kind: FieldKind,
    pub open: Option<Delimiter>,
    pub close: Option<Delimiter>,
    pub content: ContentParser,
    /// The `content` parser's name and its `content_args`, which the `beam`
    /// grammar reads.
    pub content_name: String,
    pub content_args: Map<String, Value>,
    pub repeats: bool,
    pub join: bool,
    pub transform: Option<Value>,
    pub transform_each: bool,
}

/// A checkpoint's `response_template`, validated for serving and compiled.
///
/// ```
/// use serde_json::json;
/// use vllm_parser::response_template::ResponseTemplate;
///
/// let template = ResponseTemplate::from_json(&json!({
///     "start_anchor": "<|im_start|>assistant\n",
///     "fields": {
///         "thinking": {"open": "<think>", "close": "</think>"},
///         "tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "repeats": true,
///                        "content": "json", "transform": {"function": "{content}"}},
///         "content": {"close": "<|im_end|>"}
///     }
/// }))?;
/// assert!(template.has_thinking() && template.has_tool_calls());
/// # Ok::<(), vllm_parser::response_template::TemplateError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ResponseTemplate {
    fields: Vec<Field>,
    implicit: Option<usize>,
    start_anchor: Pattern,
    start_anchor_literals: Vec<String>,
    /// `start_anchor_pattern` as written.
    start_anchor_source: Option<String>,
}

const FIELD_KEYS: &[&str] = &[
    "open",
    "open_pattern",
    "close",
    "close_pattern",
    "content",
    "content_args",
    "repeats",
    "join",
    "optional",
    "transform",
    "transform_each",
];

impl ResponseTemplate {
    /// Compile a `response_template` dict with vLLM's serving checks
    /// (`validate_response_template_for_serving`): only `thinking`, `content`
    /// and `tool_calls` fields, the first two plain text.
    pub fn from_json(spec: &Value) -> Result<Self, TemplateError> {
        let spec = spec
            .as_object()
            .ok_or_else(|| TemplateError::new("response_template must be a dict"))?;
        if spec.get("version").is_some_and(|v| v.as_i64() != Some(1)) {
            return Err(TemplateError::new("unsupported response_template version"));
        }
        if let Some(key) = spec.keys().find(|k| {
            ![
                "version",
                "defaults",
                "fields",
                "start_anchor",
                "start_anchor_pattern",
            ]
            .contains(&k.as_str())
        }) {
            return Err(TemplateError::new(format!("unknown key {key:?}")));
        }
        match spec.get("defaults") {
            None => {}
            Some(Value::Object(defaults)) => {
                if let Some(key) = defaults.keys().find(|k| *k != "role") {
                    return Err(TemplateError::new(format!("unsupported default {key:?}")));
                }
            }
            Some(_) => return Err(TemplateError::new("defaults must be a dict")),
        }
        let raw_fields = spec
            .get("fields")
            .and_then(Value::as_object)
            .filter(|fields| !fields.is_empty())
            .ok_or_else(|| TemplateError::new("fields must be a non-empty dict"))?;
        let mut fields = raw_fields
            .iter()
            .map(|(name, field)| build_field(name, field))
            .collect::<Result<Vec<_>, _>>()?;
        // `_streaming_template`: an implicit content sink when every field opens
        // explicitly.
        if !fields.iter().any(|f| f.kind == FieldKind::Content)
            && fields.iter().all(|f| f.open.is_some())
        {
            fields.push(build_field("content", &Value::Object(Map::new()))?);
        }
        let implicit: Vec<usize> = (0..fields.len())
            .filter(|&i| fields[i].open.is_none())
            .collect();
        if implicit.len() > 1 {
            return Err(TemplateError::new("at most one field may omit 'open'"));
        }
        let (start_anchor, start_anchor_literals, start_anchor_source) = match delimiter(
            "response_template",
            spec,
            "start_anchor",
            "start_anchor_pattern",
        )? {
            Some(anchor) => (
                anchor.pattern,
                anchor.literals.unwrap_or_default(),
                anchor.source,
            ),
            None => {
                return Err(TemplateError::new(
                    "response_template must define 'start_anchor' or 'start_anchor_pattern'",
                ));
            }
        };
        Ok(Self {
            fields,
            implicit: implicit.first().copied(),
            start_anchor,
            start_anchor_literals,
            start_anchor_source,
        })
    }

    /// The `response_template` of a `tokenizer_config.json`, if it has one.
    pub fn from_tokenizer_config(config: &Value) -> Result<Option<Arc<Self>>, TemplateError> {
        match config.get("response_template") {
            None | Some(Value::Null) => Ok(None),
            Some(spec) => Self::from_json(spec).map(|t| Some(Arc::new(t))),
        }
    }

    /// Whether the template has a `thinking` field (vLLM requires one for a
    /// reasoning parser).
    pub fn has_thinking(&self) -> bool {
        self.field(FieldKind::Thinking).is_some()
    }

    /// Whether the template has a `tool_calls` field (vLLM requires one for a
    /// tool parser).
    pub fn has_tool_calls(&self) -> bool {
        self.field(FieldKind::ToolCalls).is_some()
    }

    fn field(&self, kind: FieldKind) -> Option<&Field> {
        self.fields.iter().find(|f| f.kind == kind)
    }
}

fn build_field(name: &str, raw: &Value) -> Result<Field, TemplateError> {
    let scope = format!("field {name:?}");
    let kind = match name {
        "thinking" => FieldKind::Thinking,
        "content" => FieldKind::Content,
        "tool_calls" => FieldKind::ToolCalls,
        _ => return Err(TemplateError::new(format!("unsupported {scope}"))),
    };
    let raw = raw
        .as_object()
        .ok_or_else(|| TemplateError::new(format!("{scope} must be a dict")))?;
    if let Some(key) = raw.keys().find(|k| !FIELD_KEYS.contains(&k.as_str())) {
        return Err(TemplateError::new(format!("{scope}: unknown key {key:?}")));
    }
    let content_name = match raw.get("content") {
        None => "text",
        Some(Value::String(name)) => name,
        Some(_) => return Err(TemplateError::new(format!("{scope}: bad content parser"))),
    };
    let empty = Map::new();
    let args = match raw.get("content_args") {
        None => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return Err(TemplateError::new(format!("{scope}: bad content_args"))),
    };
    let content = ContentParser::new(content_name, args)?;
    let open = delimiter(&scope, raw, "open", "open_pattern")?;
    let close = delimiter(&scope, raw, "close", "close_pattern")?;
    let repeats = raw.get("repeats").is_some_and(crate::py_truthy);
    let join = match raw.get("join") {
        None | Some(Value::Null) => false,
        Some(Value::String(_)) if repeats => true,
        Some(_) => {
            return Err(TemplateError::new(format!(
                "{scope}: 'join' must be a string and requires 'repeats'"
            )));
        }
    };
    let transform = raw.get("transform").filter(|t| !t.is_null()).cloned();
    let transform_each = match raw.get("transform_each") {
        None => false,
        Some(Value::Bool(each)) => *each,
        Some(_) => {
            return Err(TemplateError::new(format!(
                "{scope}: transform_each must be a bool"
            )));
        }
    };
    match &transform {
        None if transform_each => {
            return Err(TemplateError::new(format!(
                "{scope}: transform_each without transform"
            )));
        }
        None => {
            let captures = [&open, &close]
                .into_iter()
                .flatten()
                .any(|d| d.pattern.group_names().next().is_some());
            if captures {
                return Err(TemplateError::new(format!(
                    "{scope}: named groups need a 'transform'"
                )));
            }
        }
        Some(transform) => check_transform(&scope, transform)?,
    }
    if kind != FieldKind::ToolCalls && (!content.is_text() || transform.is_some() || join) {
        return Err(TemplateError::new(format!("{scope} cannot be streamed")));
    }
    Ok(Field {
        name: name.to_owned(),
        kind,
        open,
        close,
        content,
        content_name: content_name.to_owned(),
        content_args: args.clone(),
        repeats,
        join,
        transform,
        transform_each,
    })
}

/// `validate_transform_strings`: a string is a whole placeholder or a literal.
fn check_transform(scope: &str, transform: &Value) -> Result<(), TemplateError> {
    match transform {
        Value::Object(items) => items.values().try_for_each(|v| check_transform(scope, v)),
        Value::Array(items) => items.iter().try_for_each(|v| check_transform(scope, v)),
        Value::String(text)
            if content::has_placeholder(text) && content::placeholder(text).is_none() =>
        {
            Err(TemplateError::new(format!(
                "{scope}: transform string {text:?} mixes a placeholder with text"
            )))
        }
        _ => Ok(()),
    }
}

/// `_compile_anchor`: a literal, a list of literals, or a regex.
fn delimiter(
    scope: &str,
    raw: &Map<String, Value>,
    literal_key: &str,
    pattern_key: &str,
) -> Result<Option<Delimiter>, TemplateError> {
    let bad = |what: &str| TemplateError::new(format!("{scope}: {what}"));
    match (raw.get(literal_key), raw.get(pattern_key)) {
        (Some(_), Some(_)) => Err(bad(&format!(
            "cannot specify both '{literal_key}' and '{pattern_key}'"
        ))),
        (Some(literals), None) => {
            let mut list: Vec<String> = Vec::new();
            match literals {
                Value::String(s) => list.push(s.clone()),
                Value::Array(items) if !items.is_empty() => {
                    for item in items {
                        let s = item
                            .as_str()
                            .ok_or_else(|| bad(&format!("'{literal_key}' must hold strings")))?;
                        if !list.iter().any(|l| l == s) {
                            list.push(s.to_owned());
                        }
                    }
                }
                _ => return Err(bad(&format!("bad '{literal_key}'"))),
            }
            if list.iter().any(String::is_empty) {
                return Err(bad(&format!("'{literal_key}' literals cannot be empty")));
            }
            let mut ordered = list.clone();
            ordered.sort_by_key(|s| std::cmp::Reverse(s.len()));
            let can_extend = list
                .iter()
                .any(|a| list.iter().any(|b| a != b && a.starts_with(b.as_str())));
            Ok(Some(Delimiter {
                pattern: Pattern::literals(&ordered).map_err(|e| bad(&e))?,
                literals: Some(list),
                can_extend,
                source: None,
            }))
        }
        (None, Some(Value::String(pattern))) => Ok(Some(Delimiter {
            pattern: Pattern::new(pattern).map_err(|e| bad(&format!("invalid regex: {e}")))?,
            literals: None,
            can_extend: false,
            source: Some(pattern.clone()),
        })),
        (None, Some(_)) => Err(bad(&format!("'{pattern_key}' must be a string"))),
        (None, None) => Ok(None),
    }
}
