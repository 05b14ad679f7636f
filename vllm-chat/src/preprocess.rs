//! vLLM's message preprocessing: what `parse_chat_messages` and
//! `safe_apply_chat_template` do to the request before the template sees it.
//!
//! - Content becomes a list of text parts, then a string joined with `"\n"` for
//!   string-format templates or a list of `{"type": "text", "text": …}` for
//!   OpenAI-format ones; missing content is `""` or `[]`.
//! - Assistant `tool_calls` are kept (an empty list is dropped), each call's
//!   `function.arguments` JSON string is parsed into an object (invalid JSON or a
//!   non-object becomes `{}`); `reasoning` is given as both `reasoning` and
//!   `reasoning_content`. Tool results made of text parts are joined with `"\n"`.
//! - `developer` messages become `system` ones when the template does not mention
//!   the developer role, and system messages are then merged into one.

use serde_json::{Map, Value};

use crate::RenderError;
use crate::openai::{ChatMessage, ContentPart, MessageContent};
use crate::template::ContentFormat;

/// Content part types that carry text (vLLM's `TEXT_PART_TYPES`).
const TEXT_PART_TYPES: [&str; 5] = ["text", "input_text", "output_text", "refusal", "thinking"];
/// Claude Code's per-request attribution line, dropped from system text (vLLM does).
const CLAUDE_CODE_BILLING_HEADER: &str = "x-anthropic-billing-header";

/// Turns the request's messages into the conversation the template receives.
pub(crate) fn conversation(
    messages: &[ChatMessage],
    format: ContentFormat,
    template_source: &str,
) -> Result<Vec<Value>, RenderError> {
    let mut conversation = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        conversation.push(convert_message(i, message, format)?);
    }
    if converts_developer_messages(messages, template_source) {
        conversation = developer_to_system(conversation);
    }
    Ok(conversation)
}

/// True when `developer` messages become `system` ones (and system messages are
/// merged): the only step that looks at more than one message at a time.
pub(crate) fn converts_developer_messages(messages: &[ChatMessage], template_source: &str) -> bool {
    messages.iter().any(|m| m.role == "developer")
        && !template_source.contains("\"developer\"")
        && !template_source.contains("'developer'")
}

fn texts_of(index: usize, message: &ChatMessage) -> Result<Vec<String>, RenderError> {
    let parts: Vec<String> = match &message.content {
        None => Vec::new(),
        Some(MessageContent::Text(s)) => vec![s.clone()],
        Some(MessageContent::Parts(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (j, part) in parts.iter().enumerate() {
                match part {
                    ContentPart::Str(s) => texts.push(s.clone()),
                    ContentPart::Typed { kind, text, rest }
                        if TEXT_PART_TYPES.contains(&kind.as_str()) =>
                    {
                        let field = match kind.as_str() {
                            "refusal" => rest
                                .get("refusal")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            "thinking" => rest
                                .get("thinking")
                                .and_then(Value::as_str)
                                .map(str::to_owned),
                            _ => text.clone(),
                        };
                        // vLLM skips a text part whose text is missing.
                        if let Some(t) = field {
                            texts.push(t);
                        }
                    }
                    ContentPart::Typed { kind, .. } => {
                        return Err(RenderError::invalid(
                            format!(
                                "content part type '{kind}' is not supported by this text-only renderer"
                            ),
                            format!("messages.{index}.content.{j}.type"),
                        ));
                    }
                }
            }
            texts
        }
    };
    if message.role != "system" {
        return Ok(parts);
    }
    // System text starting with the billing header loses its first line.
    Ok(parts
        .into_iter()
        .filter_map(|t| match t.strip_prefix(CLAUDE_CODE_BILLING_HEADER) {
            Some(_) => t
                .split_once('\n')
                .map(|(_, rest)| rest.to_owned())
                .filter(|r| !r.is_empty()),
            None => Some(t),
        })
        .collect())
}

/// One message as the template receives it (`index` names it in errors).
pub(crate) fn convert_message(
    index: usize,
    message: &ChatMessage,
    format: ContentFormat,
) -> Result<Value, RenderError> {
    let texts = texts_of(index, message)?;
    let mut out = Map::new();
    out.insert("role".into(), Value::String(message.role.clone()));
    let content = match format {
        ContentFormat::String => Value::String(texts.join("\n")),
        ContentFormat::OpenAi => Value::Array(
            texts
                .into_iter()
                .map(|t| {
                    let mut part = Map::new();
                    part.insert("type".into(), "text".into());
                    part.insert("text".into(), t.into());
                    Value::Object(part)
                })
                .collect(),
        ),
    };
    out.insert("content".into(), content);
    match message.role.as_str() {
        "assistant" => {
            if let Some(calls) = &message.tool_calls
                && !calls.is_empty()
            {
                let calls = calls
                    .iter()
                    .enumerate()
                    .map(|(j, c)| {
                        normalize_tool_call(c, &format!("messages.{index}.tool_calls.{j}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(reasoning) = &message.reasoning {
                out.insert("reasoning".into(), Value::String(reasoning.clone()));
                out.insert("reasoning_content".into(), Value::String(reasoning.clone()));
            }
        }
        "tool" => {
            if let Some(id) = &message.tool_call_id {
                out.insert("tool_call_id".into(), Value::String(id.clone()));
            }
            // Tool results sent as text parts are plain strings in every format.
            if let Some(Value::Array(parts)) = out.get("content") {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect();
                let joined = texts.join("\n");
                out.insert("content".into(), Value::String(joined));
            }
        }
        _ => {}
    }
    if let Some(name) = &message.name {
        out.insert("name".into(), Value::String(name.clone()));
    }
    if let Some(task) = &message.task {
        out.insert("task".into(), Value::String(task.clone()));
    }
    if message.role == "developer" {
        out.insert("tools".into(), message.tools.clone().unwrap_or(Value::Null));
    }
    Ok(Value::Object(out))
}

/// A tool call as the template sees it: keys in the order vLLM's request model
/// produces (`id`, `function`, `type`, then any others; `arguments` before `name`),
/// arguments parsed from their JSON string.
fn normalize_tool_call(call: &Value, param: &str) -> Result<Value, RenderError> {
    let Value::Object(call) = call else {
        return Err(RenderError::invalid(
            "assistant tool_calls entries must be objects.",
            "tool_calls",
        ));
    };
    let kind_ok = call
        .get("type")
        .is_none_or(|t| t.as_str() == Some("function"));
    let Some(Value::Object(function)) = call.get("function").filter(|_| kind_ok) else {
        return Err(RenderError::invalid(
            "chat completions only support assistant tool_calls of type 'function'.",
            format!("{param}.function"),
        ));
    };
    let arguments = match function.get("arguments") {
        Some(Value::Object(args)) if !args.is_empty() => Value::Object(args.clone()),
        Some(Value::String(s)) if !s.is_empty() => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(args)) => Value::Object(args),
            _ => Value::Object(Map::new()),
        },
        _ => Value::Object(Map::new()),
    };
    let mut new_function = Map::new();
    new_function.insert("arguments".into(), arguments);
    for (k, v) in function {
        if k != "arguments" {
            new_function.insert(k.clone(), v.clone());
        }
    }
    let mut out = Map::new();
    if let Some(id) = call.get("id") {
        out.insert("id".into(), id.clone());
    }
    out.insert("function".into(), Value::Object(new_function));
    if let Some(kind) = call.get("type") {
        out.insert("type".into(), kind.clone());
    }
    for (k, v) in call {
        if !matches!(k.as_str(), "id" | "function" | "type") {
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::Object(out))
}

/// vLLM's `_convert_developer_to_system` followed by `_consolidate_system_messages`.
fn developer_to_system(conversation: Vec<Value>) -> Vec<Value> {
    let converted: Vec<Value> = conversation
        .into_iter()
        .map(|mut m| {
            if m.get("role").and_then(Value::as_str) == Some("developer")
                && let Value::Object(obj) = &mut m
            {
                obj.insert("role".into(), "system".into());
                obj.remove("tools");
            }
            m
        })
        .collect();
    let mut system_contents: Vec<String> = Vec::new();
    let mut others = Vec::new();
    let mut needs_consolidation = false;
    for (i, m) in converted.iter().enumerate() {
        if m.get("role").and_then(Value::as_str) != Some("system") {
            others.push(m.clone());
            continue;
        }
        if i > 0 || !system_contents.is_empty() {
            needs_consolidation = true;
        }
        let content = match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    p => p.get("text").and_then(Value::as_str),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if !content.is_empty() {
            system_contents.push(content);
        }
    }
    if !needs_consolidation {
        return converted;
    }
    let mut merged = Map::new();
    merged.insert("role".into(), "system".into());
    merged.insert(
        "content".into(),
        Value::String(system_contents.join("\n\n")),
    );
    let mut out = vec![Value::Object(merged)];
    out.extend(others);
    out
}
