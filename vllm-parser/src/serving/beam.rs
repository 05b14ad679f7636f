//! vLLM's `BeamParser._constrain_request` (`vllm/parser/beam.py`): which
//! structural tag a request gets from the checkpoint's response template.
//!
//! With vLLM's defaults (`VLLM_BEAM_ALWAYS_CONSTRAIN_OUTPUT`,
//! `VLLM_ENFORCE_STRICT_TOOL_CALLING`) nearly every request is held to the
//! template when its grammar can be derived: tool calls (strict arguments
//! where the template can), the answer (in the request's JSON
//! `response_format` when given), and — when the prompt ends at the
//! message start — the reasoning too, so the engine need not wait for the
//! reasoning's end. What the prompt leaves open decides the rest: inside an
//! open answer only the answer's rest is constrained; inside open reasoning,
//! only a reasoning parser that shows reasoning defers the tag to its end.
//! A `required` / named choice whose grammar cannot be derived is refused.
//! A request's own constraint is kept, untouched, when xgrammar would refuse
//! it on its own (`_xgrammar_supports`: for a `regex`, a NUL or a pattern
//! [`super::xgrammar_regex`] says xgrammar refuses; for an EBNF `grammar`,
//! one [`super::xgrammar_ebnf`] says `Grammar.from_ebnf` refuses); otherwise
//! it becomes the answer's format (`RegexFormat` for a `regex`, `OrFormat` of
//! constant strings for a `choice`, `GrammarFormat` of the text as given for
//! an EBNF `grammar`; a Lark one, which vLLM converts with xgrammar's Lark
//! reader, is left undecided).
//!
//! vLLM reads the prompt as its decoded text (`_prefix`); the caller passes
//! it (see [`super::ServingParsers::adjust_request_for_prompt`]).

use std::sync::Arc;

use serde_json::Value;

use super::structural_tag::{dump_tag, response_format_output};
use super::{ServingError, ServingRequest, ToolChoice, ToolStrictLevel};
use crate::response_template::grammar::{
    self, CallTag, Function, GrammarError, OpenField, answer_rest_structural_tag,
    message_start_anchors, tool_call_structural_tag,
};
use crate::response_template::{FieldKind, ResponseTemplate};

/// What `beam` does to a request's constraint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BeamTag {
    /// No tag: the request keeps its own constraint, if any.
    None,
    /// vLLM's `structured_outputs.structural_tag` string; `message_start`:
    /// the tag covers the reply from its first token (`_grammar_from_parser`).
    Tag { json: String, message_start: bool },
    /// vLLM sends a tag or refuses, but this crate cannot tell which (see
    /// [`GrammarError::Unsupported`]).
    Unbuilt,
}

/// The parsers `beam` runs as.
pub(crate) struct BeamParsers<'a> {
    pub template: &'a Arc<ResponseTemplate>,
    /// `beam` is the reasoning parser.
    pub reasoning: bool,
    /// `beam` is the (active) tool parser.
    pub tool: bool,
    /// `--tool-strict-level` (`None`: the tool parser's default, `auto`).
    pub strict_level: Option<ToolStrictLevel>,
}

/// The request's own constraint (`extract_structured_outputs`).
enum Output<'a> {
    None,
    Json(std::borrow::Cow<'a, Value>),
    JsonObject,
    StructuralTag,
    /// `structured_outputs.regex` alone.
    Regex(&'a str),
    /// `structured_outputs.choice` alone (a list of strings).
    Choice(Vec<&'a str>),
    /// `structured_outputs.grammar` alone (a string).
    Grammar(&'a str),
    /// A constraint this crate does not decide on, or a `structured_outputs`
    /// that a `response_format` overrides in part.
    Other,
}

/// `structured_outputs_from_response_format(structured_outputs,
/// response_format)`, as far as `beam` reads it.
fn request_output<'a>(request: &ServingRequest<'a>) -> Output<'a> {
    let format = request.response_format.filter(|f| {
        request.response_format_set && f.get("type").and_then(Value::as_str) != Some("text")
    });
    match (format, request.structured_outputs) {
        (None, None) => Output::None,
        (Some(_), Some(_)) => Output::Other,
        (Some(format), None) => match format.get("type").and_then(Value::as_str) {
            Some("json_object") => Output::JsonObject,
            Some("structural_tag") => Output::StructuralTag,
            Some("json_schema") => match format.get("json_schema").and_then(|j| j.get("schema")) {
                Some(schema) if !schema.is_null() => {
                    Output::Json(std::borrow::Cow::Borrowed(schema))
                }
                _ => Output::Other,
            },
            _ => Output::Other,
        },
        (None, Some(params)) => {
            let set = |key: &str| params.get(key).filter(|v| !v.is_null());
            if set("structural_tag").is_some() {
                Output::StructuralTag
            } else if set("json_object").is_some_and(crate::py_truthy) {
                Output::JsonObject
            } else if let Some(json) = set("json") {
                match json {
                    Value::String(text) => match serde_json::from_str(text) {
                        Ok(schema) => Output::Json(std::borrow::Cow::Owned(schema)),
                        Err(_) => Output::Other,
                    },
                    schema => Output::Json(std::borrow::Cow::Borrowed(schema)),
                }
            } else if let Some(Value::String(regex)) = set("regex")
                && ["choice", "grammar"].iter().all(|key| set(key).is_none())
            {
                Output::Regex(regex)
            } else if let Some(Value::Array(choices)) = set("choice")
                && ["regex", "grammar"].iter().all(|key| set(key).is_none())
                && let Some(choices) = choices.iter().map(Value::as_str).collect()
            {
                Output::Choice(choices)
            } else if let Some(Value::String(grammar)) = set("grammar")
                && ["regex", "choice"].iter().all(|key| set(key).is_none())
            {
                Output::Grammar(grammar)
            } else {
                Output::Other
            }
        }
    }
}

/// `_xgrammar_supports` for a `regex` (`validate_xgrammar_grammar`: a NUL
/// is refused, then xgrammar must compile it), as far as this crate can tell.
fn xgrammar_supports_regex(regex: &str) -> Result<bool, Refusal> {
    if regex.contains('\0') {
        return Ok(false);
    }
    crate::serving::xgrammar_regex::from_regex_compiles(regex).ok_or(Refusal::Unbuilt)
}

/// `_xgrammar_supports` for a `grammar`: an empty one is no constraint to
/// `validate_xgrammar_grammar` (`if so_params.grammar:`), which then refuses
/// the request; a Lark one (`grammar_is_likely_lark`) is not followed here;
/// an EBNF one must pass `Grammar.from_ebnf`.
fn xgrammar_supports_grammar(grammar: &str) -> Result<bool, Refusal> {
    use crate::serving::xgrammar_ebnf::{from_ebnf_compiles, grammar_is_likely_lark};
    if grammar.is_empty() {
        return Ok(false);
    }
    if grammar_is_likely_lark(grammar) {
        return Err(Refusal::Unbuilt);
    }
    from_ebnf_compiles(grammar).ok_or(Refusal::Unbuilt)
}

/// `BeamParser._constrain_request` for the decoded prompt `prefix`.
pub(crate) fn constrain(
    parsers: &BeamParsers,
    request: &ServingRequest,
    prefix: &str,
) -> Result<BeamTag, ServingError> {
    let template = parsers.template;
    let message_start = grammar::starts_message(template, prefix);
    match template_tag(parsers, request, prefix, message_start) {
        Ok(Some(tag)) => Ok(BeamTag::Tag {
            json: dump_tag_value(tag),
            message_start,
        }),
        Ok(None) => Ok(BeamTag::None),
        Err(Refusal::Serving(error)) => Err(error),
        Err(Refusal::Unbuilt) => Ok(BeamTag::Unbuilt),
    }
}

/// `json.dumps(tag)` of a whole `{"type": "structural_tag", …}` dict.
fn dump_tag_value(tag: Value) -> String {
    match tag {
        Value::Object(mut map) => dump_tag(map.remove("format").unwrap_or(Value::Null)),
        other => dump_tag(other),
    }
}

enum Refusal {
    Serving(ServingError),
    Unbuilt,
}

impl From<GrammarError> for Refusal {
    fn from(error: GrammarError) -> Self {
        match error {
            GrammarError::Unencodable(message) => Refusal::Serving(ServingError::new(
                format!("{message} (parameter=tools)"),
                Some("tools"),
            )),
            GrammarError::Unsupported(_) => Refusal::Unbuilt,
        }
    }
}

/// `BeamParser._template_tag`.
fn template_tag(
    parsers: &BeamParsers,
    request: &ServingRequest,
    prefix: &str,
    message_start: bool,
) -> Result<Option<Value>, Refusal> {
    let template = parsers.template;
    let choice = request.effective_tool_choice();
    let named = matches!(choice, ToolChoice::Named(_));
    let tools_enabled = parsers.tool && request.has_tools() && choice != ToolChoice::None;
    let forced = tools_enabled && (choice == ToolChoice::Required || named);
    // The prompt may still list the tools, so only the grammar keeps the
    // model from calling them.
    let tools_forbidden =
        request.has_tools() && choice == ToolChoice::None && template.has_tool_calls();
    // resolve_tool_strictness (strict tool calling is on: every request with
    // tools enabled).
    let level = parsers.strict_level.unwrap_or(ToolStrictLevel::Auto);
    let constrained = tools_enabled
        && !(choice == ToolChoice::Auto
            && level == ToolStrictLevel::Auto
            && !request.has_strict_tools());
    let mut output = request_output(request);
    if forced {
        // Structured outputs are ignored when tool_choice forces a call.
        output = Output::None;
    }
    let answer = template.grammar_field(FieldKind::Content);
    let answer_opens = answer.is_some_and(|a| a.open.is_some());
    let answer_format = match output {
        Output::None => None,
        Output::StructuralTag => return Ok(None),
        _ if !answer_opens => return Ok(None),
        Output::Other => return Err(Refusal::Unbuilt),
        Output::JsonObject => response_format_output(&serde_json::json!({"type": "json_object"})),
        Output::Json(ref schema) => {
            if !grammar::xgrammar_supports_schema(schema)? {
                return Ok(None);
            }
            response_format_output(
                &serde_json::json!({"type": "json_schema", "json_schema": {"schema": schema}}),
            )
        }
        // `RegexFormat(pattern=…).model_dump()`.
        Output::Regex(regex) => {
            if !xgrammar_supports_regex(regex)? {
                return Ok(None);
            }
            Some(serde_json::json!({"type": "regex", "pattern": regex}))
        }
        // `GrammarFormat(grammar=…).model_dump()`: the EBNF text as the request has it.
        Output::Grammar(grammar) => {
            if !xgrammar_supports_grammar(grammar)? {
                return Ok(None);
            }
            Some(serde_json::json!({"type": "grammar", "grammar": grammar}))
        }
        // An empty list is no constraint to vLLM's validation: the request keeps it.
        Output::Choice(ref choices) if choices.is_empty() => return Ok(None),
        // `OrFormat(elements=[ConstStringFormat(value=…), …]).model_dump()`: xgrammar
        // compiles every list of strings as vLLM writes it (`choice_as_grammar`;
        // `tests/xgrammar_ebnf.rs` checks some).
        Output::Choice(ref choices) => Some(serde_json::json!({
            "type": "or",
            "elements": choices
                .iter()
                .map(|value| serde_json::json!({"type": "const_string", "value": value}))
                .collect::<Vec<_>>(),
        })),
    };
    let has_output = !matches!(output, Output::None);
    let always_constrain = !forced;
    if !constrained && !has_output && !tools_forbidden && !always_constrain {
        return Ok(None);
    }
    let reasoning_gated = parsers.reasoning && request.include_reasoning;
    match grammar::open_field(template, prefix) {
        Some(OpenField::Content) => {
            // Inside an open answer, only the always-on grammar applies.
            let tag = if always_constrain && !has_output {
                answer.and_then(answer_rest_structural_tag)
            } else {
                None
            };
            return finish(tag, forced, named);
        }
        Some(OpenField::Thinking) if !reasoning_gated => return finish(None, forced, named),
        _ => {}
    }
    let tools = request.tools.unwrap_or_default();
    let functions: Vec<Function> = if tools_enabled {
        tools
            .iter()
            .enumerate()
            .filter(|(_, tool)| match &choice {
                ToolChoice::Named(name) => &tool.name == name,
                _ => true,
            })
            .map(|(i, tool)| Function {
                name: &tool.name,
                parameters: &tool.parameters,
                strict: request.tools_strict.get(i).copied().unwrap_or(false)
                    || (constrained && level >= ToolStrictLevel::Parameter),
            })
            .collect()
    } else {
        Vec::new()
    };
    let anchors = message_start.then(|| message_start_anchors(template));
    let requires_reasoning = request
        .chat_template_kwargs
        .get("enable_thinking")
        .is_none_or(crate::py_truthy);
    let tag = tool_call_structural_tag(&CallTag {
        field: template.grammar_field(FieldKind::ToolCalls),
        functions: &functions,
        parallel_tool_calls: !named && request.parallel_tool_calls != Some(false),
        thinking: template.grammar_field(FieldKind::Thinking),
        answer: if forced { None } else { answer },
        answer_format: answer_format.as_ref(),
        message_start: anchors.as_deref(),
        requires_reasoning,
    })?;
    finish(tag, forced, named)
}

/// A forced choice without a tag is refused.
fn finish(tag: Option<Value>, forced: bool, named: bool) -> Result<Option<Value>, Refusal> {
    if tag.is_none() && forced {
        let kind = if named { "named" } else { "required" };
        return Err(Refusal::Serving(ServingError::new(
            format!(
                "response_template parsing cannot guarantee {kind} tool choice for this \
                 request (parameter=tool_choice)"
            ),
            Some("tool_choice"),
        )));
    }
    Ok(tag)
}
