//! The Lark grammar vLLM's `MistralParser.adjust_request` sends as
//! `structured_outputs.grammar` when the model is served with a mistral-common
//! tekken tokenizer of version 11 or later (`--tokenizer-mode mistral`):
//! mistral-common's `GrammarFactory.get_lark_from_jinja` /
//! `get_lark_for_json_schema`, one grammar for the whole reply — optional
//! `[THINK]` reasoning, text, `[TOOL_CALLS]name[ARGS]{…}` calls, a JSON answer.
//!
//! Written from mistral-common 1.12.0, the newest release vLLM 0.33.0's call
//! works with (1.13 made `force_tool_names` a required argument vLLM does not
//! pass, so every such request fails there with a `TypeError`). Its Jinja
//! templates are small and fixed, so the grammar is assembled here line by
//! line rather than rendered; `tests/mistral_grammars.rs` checks it byte for
//! byte against vLLM (`scripts/gen_mistral_grammars.py`).

use serde_json::Value;

use super::structural_tag::dumps_unicode;
use super::{ServingRequest, ToolChoice};
use crate::Tool;
use crate::parser::py_truthy;

/// The ids of the tokenizer's control tokens the grammar writes (`<[id]>` in
/// Lark).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GrammarTokens {
    pub tool_calls: Option<u32>,
    pub args: Option<u32>,
    /// `[THINK]` and `[/THINK]` (both or neither).
    pub think: Option<(u32, u32)>,
}

/// The template branch: mistral-common maps a named choice to `required`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Auto,
    Required,
    None,
}

/// `_DEFAULT_JSON_SCHEMA` of vLLM's Mistral parser (for `json_object`).
const ANY_JSON: &str = r#"{"anyOf": [{"type": "object"}, {"type": "array"}]}"#;
const CONTENT: &str = "content: (/(.|\\n)+/)+";
const SAFE_WS: &str = r"SAFE_WS: /[ \t\r\n]{1,8}/";

/// The JSON answer a request asks for, as `json.dumps` text:
/// `structured_outputs.json` / `json_object`, else a `json_object` /
/// `json_schema` `response_format` (`None` also for a schema Python finds
/// empty, such as `{}`).
fn json_answer(request: &ServingRequest) -> Option<String> {
    let schema = |value: &Value| py_truthy(value).then(|| dumps_unicode(value));
    if let Some(so) = request.structured_outputs {
        if so.get("json_object").is_some_and(|v| !v.is_null()) {
            return Some(ANY_JSON.to_owned());
        }
        return match so.get("json")? {
            Value::String(text) => schema(&serde_json::from_str(text).ok()?),
            value => schema(value),
        };
    }
    let format = request.response_format?;
    match format.get("type").and_then(Value::as_str)? {
        "json_object" => Some(ANY_JSON.to_owned()),
        "json_schema" => match format.get("json_schema").filter(|s| !s.is_null()) {
            Some(spec) => schema(spec.get("schema")?),
            None => Some(ANY_JSON.to_owned()),
        },
        _ => None,
    }
}

/// Whether vLLM's Mistral parser keeps its `tokenizers`-vocabulary rules for
/// `request` even with a grammar-capable tokenizer: a constraint the
/// grammar factory does not combine with (`regex`, `choice`, `grammar`,
/// `whitespace_pattern`, `structural_tag`) or a `structural_tag`
/// `response_format`.
pub(crate) fn keeps_legacy_rules(request: &ServingRequest) -> bool {
    const OTHER: [&str; 5] = [
        "regex",
        "choice",
        "grammar",
        "whitespace_pattern",
        "structural_tag",
    ];
    let other = request.structured_outputs.is_some_and(|so| {
        OTHER
            .iter()
            .any(|k| so.get(k).is_some_and(|v| !v.is_null()))
    });
    let tag_format = request
        .response_format
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        == Some("structural_tag");
    other || tag_format
}

/// The grammar for `request` on a tokenizer of instruct `version` (vLLM's
/// grammar branch of `adjust_request`). `Err` names the control token the
/// tokenizer lacks.
pub(crate) fn grammar(
    tokens: GrammarTokens,
    version: u32,
    request: &ServingRequest,
) -> Result<String, &'static str> {
    let json = json_answer(request);
    let choice = request.effective_tool_choice();
    // `get_lark_for_json_schema` for a JSON answer without tools.
    let json_only = choice == ToolChoice::None && json.is_some();
    let (mode, named) = match &choice {
        ToolChoice::Auto => (Mode::Auto, None),
        ToolChoice::None => (Mode::None, None),
        ToolChoice::Required => (Mode::Required, None),
        ToolChoice::Named(name) => (Mode::Required, Some(name.as_str())),
    };
    let calls = if mode == Mode::None {
        String::new()
    } else {
        let parallel = request.parallel_tool_calls != Some(false);
        let tools = request.tools.unwrap_or_default();
        tool_calls(tokens, tools, request.tools_strict, named, parallel)?
    };
    let think = tokens.think.filter(|_| version >= 13);
    let mut lines = Vec::new();
    match think {
        None => {
            lines.push(match (&json, json_only) {
                (Some(schema), true) => format!("start: SAFE_WS? %json {schema}"),
                (Some(schema), false) => format!("start: body | SAFE_WS? %json {schema}"),
                (None, _) => "start: body".to_owned(),
            });
            lines.push(
                match mode {
                    Mode::Auto => "body: content | (content? fcalls)",
                    Mode::Required => "body: content? fcalls",
                    Mode::None => "body: content",
                }
                .to_owned(),
            );
            lines.push(format!("fcalls: {calls}\n"));
        }
        Some(_) => {
            if let Some(schema) = &json {
                lines.push(
                    if json_only {
                        "start: json_grammar"
                    } else {
                        "start: body | json_grammar"
                    }
                    .to_owned(),
                );
                // mistral-common's `supports_model_settings` (v15+) lets the
                // JSON answer follow reasoning.
                let think = if version >= 15 { "think? " } else { "" };
                lines.push(format!("json_grammar: {think}SAFE_WS? %json {schema}"));
            } else {
                lines.push("start: body".to_owned());
            }
            lines.push(
                match mode {
                    Mode::Auto => "body: think? (content | fcalls)",
                    Mode::Required => "body: think? fcalls",
                    Mode::None => "body: think? content",
                }
                .to_owned(),
            );
            lines.push(format!("fcalls: content? {calls}\n"));
        }
    }
    lines.push(format!("{CONTENT}\n"));
    if let Some((begin, end)) = think {
        lines.push(format!("think: <[{begin}]> content <[{end}]>\n"));
    }
    lines.push(SAFE_WS.to_owned());
    Ok(lines.join("\n"))
}

/// `_convert_tool_calls`: one alternative per strict tool (its schema), or
/// one for any name with any object when no tool is strict.
fn tool_calls(
    tokens: GrammarTokens,
    tools: &[Tool],
    strict: &[bool],
    named: Option<&str>,
    parallel: bool,
) -> Result<String, &'static str> {
    let calls = tokens.tool_calls.ok_or("[TOOL_CALLS]")?;
    let args = tokens.args.ok_or("[ARGS]")?;
    let is_strict = |i: usize| strict.get(i).copied().unwrap_or(false);
    let entries: Vec<(String, String)> = if !(0..tools.len()).any(is_strict) {
        let name = named.map_or_else(|| "/.+/".to_owned(), |n| format!("\"{n}\""));
        vec![(name, r#"{"type": "object"}"#.to_owned())]
    } else {
        tools
            .iter()
            .enumerate()
            .filter(|(_, t)| named.is_none_or(|n| t.name == n))
            .take(if named.is_some() { 1 } else { usize::MAX })
            .map(|(i, t)| {
                let schema = if !is_strict(i) {
                    r#"{"type": "object"}"#.to_owned()
                } else if py_truthy(&t.parameters) {
                    dumps_unicode(&t.parameters)
                } else {
                    r#"{"type": "object", "properties": {}, "additionalProperties": false}"#
                        .to_owned()
                };
                (format!("\"{}\"", t.name), schema)
            })
            .collect()
    };
    let parts: Vec<String> = entries
        .iter()
        .map(|(name, schema)| {
            format!("<[{calls}]> SAFE_WS? {name} <[{args}]> SAFE_WS? %json {schema} SAFE_WS?")
        })
        .collect();
    let call = if parts.len() > 1 {
        parts
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(" | ")
    } else {
        parts.concat()
    };
    Ok(if parallel { format!("({call})+") } else { call })
}
