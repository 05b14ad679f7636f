//! A region's body turned into its value: the content parsers (`text`, `int`,
//! `float`, `bool`, `json`, `xml-inline`, `kv-lines`) and the `transform`
//! templates of transformers' `chat_parsing/content_parsers.py`, which vLLM
//! vendors.

use serde_json::{Map, Value};

use super::TemplateError;
use super::pattern::Pattern;
use crate::engine::schema::{py_float, py_int};
use crate::json::{self, PyJson};
use crate::text::py_strip;

/// Why a region's body has no value (the region is `region_malformed`).
#[derive(Debug)]
pub(crate) struct Malformed;

/// A field's `content` parser with its `content_args`.
#[derive(Debug, Clone)]
pub(crate) enum ContentParser {
    /// `text`: the body, stripped unless `strip` is false.
    Text { strip: bool },
    /// `int`: Python's `int()` of the (stripped) body.
    Int { strip: bool },
    /// `float`: Python's `float()`.
    Float { strip: bool },
    /// `bool`: `true` / `1`, case-insensitive.
    Bool { strip: bool },
    /// `json`, with its dialect knobs for model quirks.
    Json {
        strip: bool,
        string_delims: Vec<(String, String)>,
        unquoted_keys: bool,
        allow_non_json: bool,
    },
    /// `xml-inline`: `key` / `value` groups of `tag_pattern`, each value through
    /// an optional nested parser.
    XmlInline {
        tag_pattern: Box<Pattern>,
        value_parser: Option<Box<ContentParser>>,
        merge_duplicates: bool,
    },
    /// `kv-lines`: `key<kv_sep>value` lines.
    KvLines {
        strip: bool,
        line_sep: String,
        kv_sep: String,
        value_parser: Option<Box<ContentParser>>,
    },
}

impl ContentParser {
    /// Build the parser `name` with `args` (`content_args`).
    pub(crate) fn new(name: &str, args: &Map<String, Value>) -> Result<Self, TemplateError> {
        let strip = args.get("strip").is_none_or(crate::py_truthy);
        let value_parser = || -> Result<Option<Box<ContentParser>>, TemplateError> {
            match args.get("value_parser") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Object(spec)) => {
                    let name = spec.get("name").and_then(Value::as_str).unwrap_or("text");
                    let empty = Map::new();
                    let args = spec
                        .get("args")
                        .and_then(Value::as_object)
                        .unwrap_or(&empty);
                    Ok(Some(Box::new(ContentParser::new(name, args)?)))
                }
                Some(_) => Err(TemplateError::new("'value_parser' must be a dict")),
            }
        };
        Ok(match name {
            "text" => Self::Text { strip },
            "int" => Self::Int { strip },
            "float" => Self::Float { strip },
            "bool" => Self::Bool { strip },
            "json" => Self::Json {
                strip,
                string_delims: string_delims(args.get("string_delims"))?,
                unquoted_keys: args.get("unquoted_keys").is_some_and(crate::py_truthy),
                allow_non_json: args.get("allow_non_json").is_some_and(crate::py_truthy),
            },
            "xml-inline" => {
                let pattern = args
                    .get("tag_pattern")
                    .and_then(Value::as_str)
                    .ok_or_else(|| TemplateError::new("xml-inline: 'tag_pattern' is required"))?;
                let tag_pattern = Pattern::new(pattern).map_err(TemplateError::new)?;
                if !tag_pattern.group_names().any(|name| name == "key") {
                    return Err(TemplateError::new(
                        "xml-inline: tag_pattern must have a named group 'key'",
                    ));
                }
                Self::XmlInline {
                    tag_pattern: Box::new(tag_pattern),
                    value_parser: value_parser()?,
                    merge_duplicates: args.get("merge_duplicates").is_some_and(crate::py_truthy),
                }
            }
            "kv-lines" => Self::KvLines {
                strip,
                line_sep: string_arg(args, "line_sep", "\n")?,
                kv_sep: string_arg(args, "kv_sep", ":")?,
                value_parser: value_parser()?,
            },
            other => {
                return Err(TemplateError::new(format!(
                    "unknown content parser {other:?}"
                )));
            }
        })
    }

    /// Whether the parsed value is the body's text (`STREAMABLE_PARSERS`).
    pub(crate) fn is_text(&self) -> bool {
        matches!(self, Self::Text { .. })
    }

    /// `parse_content(body, name, args)`.
    pub(crate) fn parse(&self, body: &str) -> Result<PyJson, Malformed> {
        let stripped = |strip: bool| if strip { py_strip(body) } else { body };
        match self {
            Self::Text { strip } => Ok(PyJson::Str(stripped(*strip).to_owned())),
            Self::Int { strip } => py_int(stripped(*strip)).map(PyJson::Int).ok_or(Malformed),
            Self::Float { strip } => py_float(stripped(*strip))
                .map(PyJson::Float)
                .ok_or(Malformed),
            Self::Bool { strip } => Ok(PyJson::Bool(matches!(
                stripped(*strip).to_lowercase().as_str(),
                "true" | "1"
            ))),
            Self::Json {
                strip,
                string_delims,
                unquoted_keys,
                allow_non_json,
            } => match lax_json(body, string_delims, *unquoted_keys) {
                Ok(value) => Ok(value),
                Err(Malformed) if *allow_non_json => Ok(PyJson::Str(stripped(*strip).to_owned())),
                Err(malformed) => Err(malformed),
            },
            Self::XmlInline {
                tag_pattern,
                value_parser,
                merge_duplicates,
            } => {
                let mut out: Vec<(String, PyJson)> = Vec::new();
                for found in tag_pattern.find_iter(body) {
                    let key = tag_pattern.group(&found, body, "key").ok_or(Malformed)?;
                    let value = match tag_pattern.group(&found, body, "value") {
                        Some(raw) => sub_parse(raw, value_parser.as_deref())?,
                        None if tag_pattern.group_names().any(|n| n == "value") => PyJson::Null,
                        None => sub_parse("", value_parser.as_deref())?,
                    };
                    insert(&mut out, key, value, *merge_duplicates);
                }
                Ok(PyJson::Dict(out))
            }
            Self::KvLines {
                strip,
                line_sep,
                kv_sep,
                value_parser,
            } => {
                let mut out: Vec<(String, PyJson)> = Vec::new();
                let text = |s: &'_ str| if *strip { py_strip(s) } else { s }.to_owned();
                for line in body.split(line_sep.as_str()) {
                    let line = text(line);
                    let Some((key, value)) = line.split_once(kv_sep.as_str()) else {
                        continue;
                    };
                    let value = sub_parse(&text(value), value_parser.as_deref())?;
                    insert(&mut out, &text(key), value, false);
                }
                Ok(PyJson::Dict(out))
            }
        }
    }
}

fn string_arg(
    args: &Map<String, Value>,
    name: &str,
    default: &str,
) -> Result<String, TemplateError> {
    match args.get(name) {
        None => Ok(default.to_owned()),
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(TemplateError::new(format!(
            "'{name}' must be a non-empty string"
        ))),
    }
}

fn string_delims(value: Option<&Value>) -> Result<Vec<(String, String)>, TemplateError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let invalid = || TemplateError::new("'string_delims' must be a list of [open, close] strings");
    value
        .as_array()
        .ok_or_else(invalid)?
        .iter()
        .map(|pair| match pair.as_array().map(Vec::as_slice) {
            Some([Value::String(open), Value::String(close)]) => Ok((open.clone(), close.clone())),
            _ => Err(invalid()),
        })
        .collect()
}

/// `out[key] = value`, or with `merge` a repeated key collects a list.
fn insert(out: &mut Vec<(String, PyJson)>, key: &str, value: PyJson, merge: bool) {
    match out.iter_mut().find(|(k, _)| k == key) {
        Some((_, existing)) if merge => match existing {
            PyJson::List(items) => items.push(value),
            _ => {
                let first = std::mem::replace(existing, PyJson::Null);
                *existing = PyJson::List(vec![first, value]);
            }
        },
        Some((_, existing)) => *existing = value,
        None => out.push((key.to_owned(), value)),
    }
}

fn sub_parse(raw: &str, parser: Option<&ContentParser>) -> Result<PyJson, Malformed> {
    match parser {
        None => Ok(PyJson::Str(raw.to_owned())),
        Some(parser) => parser.parse(raw),
    }
}

const LAX_OPEN: char = '\u{1}';
const LAX_CLOSE: char = '\u{2}';

/// `_json`: custom string delimiters pre-extracted, bare keys quoted, then
/// Python's `json.loads`.
fn lax_json(
    text: &str,
    delims: &[(String, String)],
    unquoted_keys: bool,
) -> Result<PyJson, Malformed> {
    if !delims.is_empty() && text.contains([LAX_OPEN, LAX_CLOSE]) {
        return Err(Malformed);
    }
    let mut working = text.to_owned();
    let mut captured: Vec<String> = Vec::new();
    for (open, close) in delims {
        working = extract_strings(&working, open, close, &mut captured);
    }
    if unquoted_keys {
        working = quote_keys(&working);
    }
    for (index, string) in captured.iter().enumerate() {
        let mut quoted = String::new();
        json::write_string(&mut quoted, string, true);
        working = working.replace(&format!("{LAX_OPEN}{index}{LAX_CLOSE}"), &quoted);
    }
    json::loads(&working).map_err(|_| Malformed)
}

/// `re.sub(escape(open) + "(.*?)" + escape(close), placeholder, text, DOTALL)`.
fn extract_strings(text: &str, open: &str, close: &str, captured: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = (!open.is_empty()).then(|| rest.find(open)).flatten() {
        let body_start = at + open.len();
        let Some(len) = rest[body_start..].find(close) else {
            break;
        };
        out.push_str(&rest[..at]);
        captured.push(rest[body_start..body_start + len].to_owned());
        out.push(LAX_OPEN);
        out.push_str(&(captured.len() - 1).to_string());
        out.push(LAX_CLOSE);
        rest = &rest[body_start + len + close.len()..];
    }
    out.push_str(rest);
    out
}

/// Python's `\w` for a `str` pattern.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `re.sub(r"(?<=[{,])(\w+):", r'"\1":', text)`.
fn quote_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(at) = rest.find(['{', ',']) {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let word_len = rest
            .char_indices()
            .find(|&(_, c)| !is_word(c))
            .map_or(rest.len(), |(i, _)| i);
        if word_len > 0 && rest[word_len..].starts_with(':') {
            out.push('"');
            out.push_str(&rest[..word_len]);
            out.push_str("\":");
            rest = &rest[word_len + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// `_apply_transform`: a `{name}` / `{name.key}` placeholder string is looked
/// up in `scope`; dicts and lists recurse; other values are literals.
pub(crate) fn apply_transform(
    transform: &Value,
    scope: &[(String, PyJson)],
) -> Result<PyJson, Malformed> {
    Ok(match transform {
        Value::Object(items) => PyJson::Dict(
            items
                .iter()
                .map(|(k, v)| Ok((k.clone(), apply_transform(v, scope)?)))
                .collect::<Result<_, _>>()?,
        ),
        Value::Array(items) => PyJson::List(
            items
                .iter()
                .map(|v| apply_transform(v, scope))
                .collect::<Result<_, _>>()?,
        ),
        Value::String(text) => match placeholder(text) {
            None => PyJson::Str(text.clone()),
            Some(path) => {
                let mut keys = path.split('.');
                let root = keys.next().unwrap_or_default();
                let mut value = scope
                    .iter()
                    .rev()
                    .find(|(name, _)| name == root)
                    .map(|(_, value)| value)
                    .ok_or(Malformed)?;
                for key in keys {
                    value = value.get(key).ok_or(Malformed)?;
                }
                value.clone()
            }
        },
        other => literal(other),
    })
}

/// A JSON literal of the transform as Python holds it.
fn literal(value: &Value) -> PyJson {
    match value {
        Value::Null => PyJson::Null,
        Value::Bool(b) => PyJson::Bool(*b),
        Value::Number(n) if n.is_f64() => PyJson::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::Number(n) => PyJson::Int(n.to_string()),
        Value::String(s) => PyJson::Str(s.clone()),
        Value::Array(items) => PyJson::List(items.iter().map(literal).collect()),
        Value::Object(items) => {
            PyJson::Dict(items.iter().map(|(k, v)| (k.clone(), literal(v))).collect())
        }
    }
}

/// The dotted name of a whole-string `{name.key}` placeholder
/// (`\{(\w+(?:\.\w+)*)\}` full match).
pub(crate) fn placeholder(text: &str) -> Option<&str> {
    let path = text.strip_prefix('{')?.strip_suffix('}')?;
    path.split('.')
        .all(|part| !part.is_empty() && part.chars().all(is_word))
        .then_some(path)
}

/// Whether `text` holds a placeholder anywhere (`_PLACEHOLDER.search`).
pub(crate) fn has_placeholder(text: &str) -> bool {
    text.match_indices('{').any(|(at, _)| {
        text[at..]
            .find('}')
            .is_some_and(|len| placeholder(&text[at..=at + len]).is_some())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lax_json_reads_gemma_arguments() {
        let delims = [("<|\"|>".to_owned(), "<|\"|>".to_owned())];
        let value = lax_json("{location:<|\"|>Paris, FR<|\"|>,days:3}", &delims, true).unwrap();
        assert_eq!(
            json::dumps(&value),
            r#"{"location": "Paris, FR", "days": 3}"#
        );
    }

    #[test]
    fn placeholders_are_whole_strings() {
        assert_eq!(placeholder("{content.args}"), Some("content.args"));
        assert_eq!(placeholder("{a b}"), None);
        assert!(has_placeholder("x {name} y"));
        assert!(!has_placeholder("{}"));
    }
}
