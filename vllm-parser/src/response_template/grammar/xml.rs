//! `xml-inline` tool-call arguments (`_xml_arguments_format`): one tag per
//! parameter, `begin key middle value end` as the template's `tag_pattern`
//! spells it, read back with the template's own content parser so that
//! every derived tag parses to the arguments it stands for.
//!
//! String values with a `format` or `pattern` are held to it as a regex
//! when vLLM's `_may_write` (Python's own regex parser, reproduced by
//! [`crate::serving::python_re`]) says a match cannot write a value end and
//! xgrammar compiles it ([`crate::serving::xgrammar_regex`]); a pattern
//! either leaves undecided is [`GrammarError::Unsupported`].

use serde_json::{Map, Value, json};

use super::GrammarError;
use super::format::{
    any_text, any_text_excluding, const_strings, one_of, optional, regex, sequence, star, tag,
};
use super::literals::{AHEAD, literals, split_group};
use crate::json::PyJson;
use crate::response_template::{Field, Pattern};

type Derived<T> = Result<Option<T>, GrammarError>;

/// Keywords that describe a schema without constraining its values.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "$comment",
    "$schema",
    "$id",
];
const OBJECT_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$defs",
    "definitions",
];
/// `_SEPARATOR`: at most a newline between parameters.
const SEPARATOR: &str = "\\n?";

fn unsupported(what: impl Into<String>) -> GrammarError {
    GrammarError::Unsupported(what.into())
}

/// `_schema_types`.
fn schema_types(schema: &Value) -> Vec<String> {
    let Some(map) = schema.as_object() else {
        return Vec::new();
    };
    let mut types: Vec<String> = match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    for union in ["anyOf", "oneOf"] {
        if let Some(Value::Array(choices)) = map.get(union) {
            for choice in choices {
                types.extend(schema_types(choice));
            }
        }
    }
    if map.get("nullable").is_some_and(crate::py_truthy) && !types.iter().any(|t| t == "null") {
        types.push("null".into());
    }
    types
}

/// `_string_choices`.
fn string_choices(schema: &Value) -> Option<Vec<String>> {
    let map = schema.as_object()?;
    let choices: Vec<&Value> = match map.get("const") {
        Some(constant) => vec![constant],
        None => map.get("enum")?.as_array()?.iter().collect(),
    };
    if choices.is_empty() {
        return None;
    }
    choices
        .into_iter()
        .map(|c| c.as_str().map(str::to_owned))
        .collect()
}

fn keys_beyond(map: &Map<String, Value>, allowed: &[&[&str]]) -> bool {
    map.keys()
        .any(|k| !allowed.iter().any(|list| list.contains(&k.as_str())))
}

/// `_typed_by_parser`.
fn typed_by_parser(schema: &Value) -> bool {
    schema == &Value::Bool(true)
        || !schema_types(schema).is_empty()
        || schema.as_object().is_some_and(|map| {
            !keys_beyond(map, &[ANNOTATIONS]) || string_choices(schema).is_some()
        })
}

/// What `_text_format` gives: free text (`_ANY_TEXT` itself), another
/// format, or nothing.
enum Text {
    Any,
    Format(Value),
}

/// `_text_format`: raw text constrained without changing its parsed value.
fn text_format(schema: &Value, excludes: &[String]) -> Result<Option<Text>, GrammarError> {
    if schema == &Value::Bool(true) {
        return Ok(Some(Text::Any));
    }
    let Some(map) = schema.as_object() else {
        return Ok(None);
    };
    if map.contains_key("format") || map.contains_key("pattern") {
        return string_regex(schema, map, excludes);
    }
    if keys_beyond(
        map,
        &[
            ANNOTATIONS,
            &["type", "nullable", "enum", "const", "anyOf", "oneOf"],
        ],
    ) {
        return Ok(None);
    }
    let mut branches = Vec::new();
    for union in ["anyOf", "oneOf"] {
        match map.get(union) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => branches.extend(items),
            Some(_) => return Err(unsupported("a non-list union")),
        }
    }
    if map.contains_key("enum") || map.contains_key("const") {
        let choices = string_choices(schema);
        let non_string = schema_types(schema).iter().any(|t| t != "string");
        return Ok(match choices {
            Some(choices) if branches.is_empty() && !non_string => {
                Some(Text::Format(const_strings(&choices)))
            }
            _ => None,
        });
    }
    for branch in branches {
        // vLLM compares by identity with `_ANY_TEXT`: a branch with a format
        // or pattern never is.
        let plain = branch
            .as_object()
            .is_none_or(|b| !b.contains_key("format") && !b.contains_key("pattern"));
        if !plain || !matches!(text_format(branch, excludes)?, Some(Text::Any)) {
            return Ok(None);
        }
    }
    Ok(Some(Text::Any))
}

/// `_string_regex`: the `format` (the raw string forms of the formats
/// xgrammar holds in JSON strings, `_STRING_FORMATS`) or else the `pattern`
/// of a raw string, unless a match may write the first character of a value
/// end (`_may_write`, [`crate::serving::python_re`]) or xgrammar cannot
/// compile it (`_regex_compiles`, [`crate::serving::xgrammar_regex`]). Like
/// xgrammar, length bounds are dropped. A pattern either predicate leaves
/// undecided is [`GrammarError::Unsupported`].
fn string_regex(
    schema: &Value,
    map: &Map<String, Value>,
    excludes: &[String],
) -> Result<Option<Text>, GrammarError> {
    if keys_beyond(
        map,
        &[
            ANNOTATIONS,
            &["type", "format", "pattern", "minLength", "maxLength"],
        ],
    ) || schema_types(schema) != ["string"]
    {
        return Ok(None);
    }
    let pattern = match map.get("format") {
        Some(format) => format.as_str().and_then(string_format),
        None => map
            .get("pattern")
            .and_then(Value::as_str)
            .map(str::to_owned),
    };
    let Some(pattern) = pattern else {
        return Ok(None);
    };
    let firsts: Vec<char> = excludes.iter().filter_map(|e| e.chars().next()).collect();
    // vLLM asks `_may_write` first: what it raises (or where this crate
    // cannot tell) is not decided here.
    let may = crate::serving::python_re::may_write(&pattern, &firsts)
        .ok_or_else(|| unsupported("a string pattern Python's regex parser may read otherwise"))?;
    if may {
        return Ok(None);
    }
    match crate::serving::xgrammar_regex::from_regex_compiles(&pattern) {
        Some(true) => Ok(Some(Text::Format(regex(&pattern)))),
        Some(false) => Ok(None),
        None => Err(unsupported(
            "a string pattern xgrammar may or may not compile",
        )),
    }
}

const DATE: &str = r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])";
const TIME: &str = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const HOST_LABEL: &str = r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?";
const OCTET: &str = r"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]?[0-9])";
const ATOM: &str = r"[A-Za-z0-9_!#$%&'*+/=?^`{|}~-]+";
const URI_CHARS: &str = r"A-Za-z0-9_.~!$&'()*+,;=";
const ESCAPED: &str = r"%[0-9A-Fa-f]{2}";

/// `_STRING_FORMATS[name]`.
fn string_format(name: &str) -> Option<String> {
    let path = format!("(?:[{URI_CHARS}:@-]|{ESCAPED})");
    let query = format!("(?:[{URI_CHARS}:@/?-]|{ESCAPED})*");
    Some(match name {
        "date" => DATE.to_owned(),
        "time" => TIME.to_owned(),
        "date-time" => format!("{DATE}T{TIME}"),
        "email" => format!(
            r"{ATOM}(?:\.{ATOM})*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])*"
        ),
        "hostname" => format!(r"{HOST_LABEL}(?:\.{HOST_LABEL})*"),
        "ipv4" => format!(r"(?:{OCTET}\.){{3}}{OCTET}"),
        "uuid" => r"[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}".to_owned(),
        "uri" => format!(
            r"[A-Za-z][A-Za-z+.-]*:(?://(?:(?:[{URI_CHARS}:-]|{ESCAPED})*@)?(?:[{URI_CHARS}-]|{ESCAPED})*(?::[0-9]*)?(?:/{path}*)*|/?(?:{path}+(?:/{path}*)*)?)(?:\?{query})?(?:#{query})?"
        ),
        _ => return None,
    })
}

/// `_json_value_schema`: a value's schema with the document's definitions.
fn json_value_schema(schema: &Value, parameters: &Map<String, Value>) -> Value {
    let Some(map) = schema.as_object() else {
        return json!({});
    };
    let body = if map.get("nullable").is_some_and(crate::py_truthy) {
        let mut wrapped = Map::new();
        wrapped.insert("anyOf".into(), json!([schema, {"type": "null"}]));
        wrapped
    } else {
        map.clone()
    };
    let mut out = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(definitions) = parameters.get(key) {
            out.insert(key.into(), definitions.clone());
        }
    }
    for (key, value) in body {
        out.insert(key, value);
    }
    Value::Object(out)
}

/// `_value_format`: JSON for decoded values, raw text for strings.
fn value_format(
    schema: &Value,
    parameters: &Map<String, Value>,
    json_values: bool,
    closers: &[String],
) -> Derived<Value> {
    if schema == &Value::Bool(false) {
        return Ok(None);
    }
    let types = schema_types(schema);
    if json_values || (!types.is_empty() && !types.iter().any(|t| t == "string")) {
        return super::derive::json_format(&json_value_schema(schema, parameters), closers);
    }
    Ok(text_format(schema, closers)?.map(|text| match text {
        Text::Any => any_text(),
        Text::Format(format) => format,
    }))
}

/// `_endings`: every suffix of every literal, as a regex alternation.
fn endings(literals: &[String]) -> String {
    let mut out = Vec::new();
    for literal in literals {
        for (at, _) in literal.char_indices() {
            out.push(regex_syntax::escape(&literal[at..]));
        }
    }
    out.join("|")
}

/// A piece of a call's text for `_spells_closer`: its regex, the regex of
/// its endings, and whether a closer may lie wholly inside it.
struct Piece {
    text: String,
    endings: String,
    holds: bool,
}

fn literal_piece(literals: &[String], before: &str) -> Piece {
    let escaped: Vec<String> = literals.iter().map(|l| regex_syntax::escape(l)).collect();
    let either = format!("{before}(?:{})", escaped.join("|"));
    Piece {
        endings: format!("{either}|{}", endings(literals)),
        text: either,
        holds: true,
    }
}

/// Python's `pattern.fullmatch(text, partial=True)`: `text` matches the
/// pattern made by [`Pattern::to_end`] or is the start of a match.
fn fullmatch_partial(pattern: &Pattern, text: &str) -> bool {
    pattern
        .search(text, 0, true)
        .is_some_and(|found| found.start == 0)
}

/// `_spells_closer(closers, pieces, repeats=True)`: whether the framing of
/// repeated parameters can spell a call closer across pieces.
fn spells_closer(closers: &[String], pieces: &[Piece]) -> Result<bool, GrammarError> {
    let texts: Vec<&str> = pieces.iter().map(|p| p.text.as_str()).collect();
    let repeat = format!("(?:{})*", texts.concat());
    let escaped: Vec<String> = closers.iter().map(|c| regex_syntax::escape(c)).collect();
    let closed = format!("(?:{})[\\s\\S]*", escaped.join("|"));
    for (index, piece) in pieces.iter().enumerate() {
        let ends = Pattern::to_end(&piece.endings).map_err(unsupported)?;
        let rest = Pattern::to_end(&format!("{}{repeat}{closed}", texts[index + 1..].concat()))
            .map_err(unsupported)?;
        for closer in closers {
            if piece.holds && fullmatch_partial(&ends, closer) {
                return Ok(true);
            }
            // A closer that starts in this piece and ends in the text after it.
            for (split, _) in closer.char_indices().skip(1) {
                if ends.matches_from(&closer[..split], 0)
                    && fullmatch_partial(&rest, &closer[split..])
                {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// The parsed `tag_pattern` framing of one parameter.
struct Framing<'a> {
    field: &'a Field,
    key_pattern: String,
    begins: Vec<String>,
    middles: Vec<String>,
    ends: Vec<String>,
    follows: Vec<String>,
    starts: Vec<String>,
    closers: Vec<String>,
    text: Value,
}

impl Framing<'_> {
    /// `read_back`: the arguments the parser reads from `written`, unless a
    /// closer ends the call in it.
    fn read_back(&self, written: &str) -> Option<PyJson> {
        if self.closers.iter().any(|c| written.contains(c.as_str())) {
            return None;
        }
        self.field.content.parse(written).ok()
    }

    fn tag(&self, begin: &str, value: Value, fits: &[String], last: bool) -> Value {
        if !self.follows.is_empty() && !last {
            let mut joined: Vec<String> = Vec::new();
            for end in fits {
                for separator in ["", "\n"] {
                    joined.push(format!("{end}{separator}{}", self.begins[0]));
                }
            }
            joined.extend(self.follows.iter().cloned());
            return tag(begin, value, &joined);
        }
        tag(begin, value, fits)
    }

    fn separated(&self, tags: Vec<Value>) -> Value {
        if self.follows.is_empty() {
            sequence(vec![regex(SEPARATOR), one_of(tags)])
        } else {
            one_of(tags)
        }
    }

    /// `body` after the opener of its first parameter.
    fn arguments(&self, body: Value, optional_body: bool) -> Value {
        if self.follows.is_empty() {
            return body;
        }
        let body = sequence(vec![regex(SEPARATOR), const_strings(&self.begins), body]);
        if optional_body { optional(body) } else { body }
    }

    fn any_parameter(&self, last: bool) -> Value {
        let content = sequence(vec![
            regex(&self.key_pattern),
            const_strings(&self.middles),
            self.text.clone(),
        ]);
        self.separated(
            self.starts
                .iter()
                .map(|start| self.tag(start, content.clone(), &self.ends, last))
                .collect(),
        )
    }

    fn any_parameters(&self) -> Value {
        let more = star(self.any_parameter(false));
        if self.follows.is_empty() {
            return more;
        }
        self.arguments(sequence(vec![more, self.any_parameter(true)]), true)
    }

    /// `parameter`: the tags of one declared parameter.
    fn parameter(
        &self,
        key: &str,
        value: &Value,
        choices: Option<&[String]>,
        last: bool,
    ) -> Derived<Value> {
        let key_matcher = Pattern::to_end(&self.key_pattern).map_err(unsupported)?;
        let spelled = key_matcher.matches_from(key, 0)
            && self.begins.iter().all(|b| {
                self.middles.iter().all(|m| {
                    self.ends
                        .iter()
                        .all(|e| match self.read_back(&format!("{b}{key}{m}0{e}")) {
                            Some(PyJson::Dict(items)) => items.len() == 1 && items[0].0 == key,
                            _ => false,
                        })
                })
            });
        if !spelled {
            return Err(GrammarError::Unencodable(format!(
                "parameter name {} cannot be encoded in tool calls",
                crate::serving::py_str_repr(key)
            )));
        }
        let Some(choices) = choices else {
            let mut tags = Vec::new();
            for start in &self.starts {
                for middle in &self.middles {
                    tags.push(self.tag(
                        &format!("{start}{key}{middle}"),
                        value.clone(),
                        &self.ends,
                        last,
                    ));
                }
            }
            return Ok(Some(self.separated(tags)));
        };
        // Optional framing whitespace must not change a text choice.
        let mut tags = Vec::new();
        let mut framed: Vec<&String> = Vec::new();
        for (begin, start) in self.begins.iter().zip(&self.starts) {
            for middle in &self.middles {
                let mut by_ends: Vec<(Vec<String>, Vec<String>)> = Vec::new();
                for choice in choices {
                    let fits: Vec<String> = self
                        .ends
                        .iter()
                        .filter(|e| {
                            matches!(
                                self.read_back(&format!("{begin}{key}{middle}{choice}{e}")),
                                Some(PyJson::Dict(items)) if items.len() == 1
                                    && items[0].0 == key
                                    && items[0].1 == PyJson::Str(choice.clone())
                            )
                        })
                        .cloned()
                        .collect();
                    match by_ends.iter_mut().find(|(f, _)| *f == fits) {
                        Some((_, group)) => group.push(choice.clone()),
                        None => by_ends.push((fits, vec![choice.clone()])),
                    }
                }
                for (fits, group) in &by_ends {
                    if !fits.is_empty() {
                        tags.push(self.tag(
                            &format!("{start}{key}{middle}"),
                            const_strings(group),
                            fits,
                            last,
                        ));
                        framed.extend(choices.iter().filter(|c| group.contains(c)));
                    }
                }
            }
        }
        if !choices.iter().all(|c| framed.contains(&c)) {
            return Ok(None);
        }
        Ok(Some(self.separated(tags)))
    }
}

/// `_xml_arguments_format` (with `sorted_arguments`).
pub(crate) fn arguments_format(field: &Field, parameters: &Value, strict: bool) -> Derived<Value> {
    let args = &field.content_args;
    if keys_beyond(
        args,
        &[&["tag_pattern", "value_parser", "merge_duplicates"]],
    ) {
        return Ok(None);
    }
    let (value_parser, parser_args) = match args.get("value_parser") {
        None | Some(Value::Null) => ("text", false),
        Some(Value::Object(spec)) => (
            spec.get("name").and_then(Value::as_str).unwrap_or(""),
            spec.get("args").is_some_and(crate::py_truthy),
        ),
        Some(_) => return Err(unsupported("a value_parser that is no dict")),
    };
    if !matches!(value_parser, "text" | "json") || (value_parser == "json" && parser_args) {
        return Ok(None);
    }
    let json_values = value_parser == "json";
    let Some(tag_pattern) = args.get("tag_pattern").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some((key_before, key_pattern, key_after)) = split_group(tag_pattern, "key") else {
        return Ok(None);
    };
    let Some((value_before, _, value_after)) = split_group(key_after, "value") else {
        return Ok(None);
    };
    let (Some(begins), Some(middles), Some(all_ends)) = (
        literals(key_before, false, false),
        literals(value_before, false, false),
        literals(value_after, false, true),
    ) else {
        return Ok(None);
    };
    if begins.is_empty() || middles.is_empty() || all_ends.is_empty() {
        return Ok(None);
    }
    let aheads: Vec<(String, String)> = all_ends
        .iter()
        .filter_map(|e| e.split_once(AHEAD))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    let ends: Vec<String> = all_ends
        .iter()
        .filter(|e| !e.contains(AHEAD))
        .cloned()
        .collect();
    let ahead_texts: Vec<&String> = aheads.iter().map(|(_, a)| a).collect();
    let same_begins = ahead_texts.iter().all(|a| begins.contains(a))
        && begins.iter().all(|b| ahead_texts.contains(&b));
    if ends.is_empty() || (!aheads.is_empty() && (begins.len() > 1 || !same_begins)) {
        return Ok(None);
    }
    let follows: Vec<String> = aheads.iter().map(|(b, a)| format!("{b}{a}")).collect();
    let Some(parameters) = parameters.as_object() else {
        return Err(unsupported("parameters that are no dict"));
    };
    let properties = parameters.get("properties");
    let typed = match properties {
        None => true,
        Some(Value::Object(props)) => json_values || props.values().all(typed_by_parser),
        Some(_) => false,
    };
    if strict && (keys_beyond(parameters, &[ANNOTATIONS, OBJECT_KEYWORDS]) || !typed) {
        return Ok(None);
    }
    let empty = Vec::new();
    let required_value = parameters.get("required").filter(|r| crate::py_truthy(r));
    let mut names: Vec<String> = Vec::new();
    let mut required: Vec<String> = Vec::new();
    if strict && let Some(props) = properties {
        let Some(list) = required_value.map_or(Some(&empty), Value::as_array) else {
            return Ok(None);
        };
        let Some(list) = list
            .iter()
            .map(|k| k.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        required = list;
        // `properties` is a dict here (typed).
        let props = props
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>());
        names = props.unwrap_or_default();
        for key in &required {
            if !names.contains(key) {
                names.push(key.clone());
            }
        }
    }
    let closers = super::derive::closers(field).unwrap_or_default();
    let pieces = [
        literal_piece(&begins, SEPARATOR),
        Piece {
            text: format!("(?:{key_pattern})"),
            endings: endings(&names),
            holds: false,
        },
        literal_piece(&middles, ""),
        Piece {
            text: "[\\s\\S]*".into(),
            endings: "[\\s\\S]+".into(),
            holds: false,
        },
        literal_piece(&ends, ""),
    ];
    if spells_closer(&closers, &pieces)? {
        return Ok(None);
    }
    // Raw text has no escaping for a call closer, nor, where a value may end
    // before the next opener, for any value end.
    let mut excludes = closers.clone();
    if !follows.is_empty() {
        excludes.extend(follows.iter().cloned());
        excludes.extend(ends.iter().cloned());
    }
    let text = if excludes.is_empty() {
        any_text()
    } else {
        any_text_excluding(&excludes)
    };
    let framing = Framing {
        field,
        key_pattern: key_pattern.to_owned(),
        starts: if follows.is_empty() {
            begins.clone()
        } else {
            vec![String::new()]
        },
        begins,
        middles,
        ends,
        follows,
        closers,
        text,
    };
    if !strict {
        return Ok(Some(framing.any_parameters()));
    }
    if properties.is_none() {
        return Ok(match parameters.get("additionalProperties") {
            Some(Value::Bool(false)) => Some(json!({"type": "const_string", "value": ""})),
            None | Some(Value::Bool(true)) => Some(framing.any_parameters()),
            Some(Value::Object(extra)) if extra.is_empty() => Some(framing.any_parameters()),
            Some(_) => None,
        });
    }
    // A declared key repeated as an extra one would bypass its schema.
    if !matches!(
        parameters.get("additionalProperties"),
        None | Some(Value::Bool(false))
    ) {
        return Ok(None);
    }
    if names.is_empty() {
        return Ok(Some(json!({"type": "const_string", "value": ""})));
    }
    let props = properties.and_then(Value::as_object);
    let mut value_ends = framing.closers.clone();
    value_ends.extend(framing.follows.iter().cloned());
    value_ends.extend(framing.ends.iter().cloned());
    let mut more = Vec::new();
    let mut last = Vec::new();
    for key in &names {
        // A required name without a schema takes any value.
        let schema = props
            .and_then(|p| p.get(key))
            .cloned()
            .unwrap_or(Value::Bool(true));
        let Some(value) = value_format(&schema, parameters, json_values, &value_ends)? else {
            return Ok(None);
        };
        let choices = match value.get("type").and_then(Value::as_str) {
            Some("const_string" | "or") => string_choices(&schema),
            _ => None,
        };
        let value = if value == any_text() {
            framing.text.clone()
        } else {
            value
        };
        let joined = framing.parameter(key, &value, choices.as_deref(), false)?;
        let ending = framing.parameter(key, &value, choices.as_deref(), true)?;
        let (Some(joined), Some(ending)) = (joined, ending) else {
            return Ok(None);
        };
        more.push(joined);
        last.push(ending);
    }
    // Lookups by name: a tool may declare many parameters.
    let positions: std::collections::HashMap<&String, usize> =
        names.iter().enumerate().map(|(i, n)| (n, i)).collect();
    let required_set: std::collections::HashSet<&String> = required.iter().collect();
    let index_of = |key: &String| positions.get(key).copied().unwrap_or(0);
    let ordered = |keys: &[String]| -> Value {
        let before: Vec<Value> = keys
            .iter()
            .map(|k| {
                let tag = more[index_of(k)].clone();
                if required_set.contains(k) {
                    tag
                } else {
                    optional(tag)
                }
            })
            .collect();
        if framing.follows.is_empty() {
            return sequence(before);
        }
        fn ending(
            keys: &[String],
            before: &[Value],
            finals: &dyn Fn(&String) -> Value,
            start: usize,
            stop: usize,
        ) -> Value {
            if stop - start == 1 {
                return finals(&keys[start]);
            }
            // Halving keeps the tag O(n log n) in size and O(log n) deep.
            let middle = (start + stop) / 2;
            let mut tail = before[start..middle].to_vec();
            tail.push(ending(keys, before, finals, middle, stop));
            one_of(vec![
                ending(keys, before, finals, start, middle),
                sequence(tail),
            ])
        }
        let finals = |k: &String| last[index_of(k)].clone();
        // The last parameter follows every required one.
        let first = keys
            .iter()
            .enumerate()
            .filter(|(_, k)| required_set.contains(k))
            .map(|(i, _)| i)
            .max()
            .unwrap_or(0);
        let mut elements = before[..first].to_vec();
        elements.push(ending(keys, &before, &finals, first, keys.len()));
        sequence(elements)
    };
    let mut orders = vec![ordered(&names)];
    let mut sorted = names.clone();
    sorted.sort();
    if sorted != names {
        orders.push(ordered(&sorted));
    }
    Ok(Some(framing.arguments(one_of(orders), required.is_empty())))
}
