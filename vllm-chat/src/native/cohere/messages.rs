//! The conversation as the Cohere format sees it, in two steps:
//!
//! 1. vLLM's `_conversation_to_melody_messages` (`renderers/cohere.py`): roles
//!    mapped (`assistant` → `chatbot`, `developer` → `system`), content turned into
//!    blocks, an assistant's reasoning put first as a thinking block, tool calls
//!    reduced to `{id, name, parameters}` with the arguments as a JSON string.
//! 2. The format's own numbering: every tool call id gets an index (in order of
//!    first appearance, after the documents' reserved index 0), the calls are
//!    checked (non-empty, unique ids), and each run of tool messages becomes one
//!    tool-result entry per call id, holding that id's results in order.

use serde_json::{Map, Value};

use super::json;
use crate::RenderError;
use crate::native::py::{self, truthy};

/// A message role of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// `system` (and `developer`).
    System,
    /// `user`.
    User,
    /// `chatbot` (and `assistant`).
    Chatbot,
    /// `tool`.
    Tool,
}

/// One content block of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    /// Text.
    Text(String),
    /// A thinking block.
    Thinking(String),
    /// An image placeholder.
    Image(String),
    /// A document (a JSON object).
    Document(Map<String, Value>),
}

/// A tool call: id, function name and the arguments as a JSON string.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) parameters: String,
}

/// A message after vLLM's conversion.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    pub(crate) role: Role,
    pub(crate) content: Vec<Block>,
    pub(crate) tool_calls: Vec<Call>,
    pub(crate) tool_call_id: Option<String>,
}

/// `_role_to_melody`.
fn role_of(role: &str) -> Result<Role, RenderError> {
    let lower = role.to_lowercase();
    Ok(match lower.as_str() {
        "assistant" | "chatbot" => Role::Chatbot,
        "developer" | "system" => Role::System,
        "user" => Role::User,
        "tool" => Role::Tool,
        _ => {
            return Err(py::error(format!(
                "Unsupported message role for the cohere renderer: {}. Expected one of: system, developer, user, assistant, chatbot, tool.",
                py::repr(&Value::String(lower))
            )));
        }
    })
}

/// `part.get(key, "")` as a string.
fn text_of(part: &Map<String, Value>, key: &str) -> String {
    match part.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => py::s(Some(other)),
        None => String::new(),
    }
}

/// `_content_blocks`.
fn blocks(content: Option<&Value>) -> Result<Vec<Block>, RenderError> {
    let parts = match content {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => return Ok(vec![Block::Text(s.clone())]),
        Some(Value::Array(parts)) => parts,
        Some(other) => {
            return Err(py::error(format!(
                "Unexpected content part: {}",
                py::repr(other)
            )));
        }
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let part = match part {
            Value::String(s) => {
                out.push(Block::Text(s.clone()));
                continue;
            }
            Value::Object(map) => map,
            other => {
                return Err(py::error(format!(
                    "Unexpected content part: {}",
                    py::repr(other)
                )));
            }
        };
        let kind = part.get("type").and_then(Value::as_str).unwrap_or("text");
        out.push(match kind {
            "text" | "input_text" | "output_text" | "refusal" => Block::Text(text_of(part, "text")),
            "thinking" => Block::Thinking(text_of(part, "thinking")),
            "image" => Block::Image(match part.get("template_placeholder") {
                Some(Value::String(s)) => s.clone(),
                _ => "<image>".into(),
            }),
            "document" => match part.get("document") {
                Some(Value::Object(doc)) => Block::Document(doc.clone()),
                other => Block::Text(py::to_json(other.unwrap_or(&Value::Null))),
            },
            "tool_reference" => Block::Text(
                part.get("name")
                    .filter(|v| truthy(Some(v)))
                    .map_or_else(|| text_of(part, "text"), |v| py::s(Some(v))),
            ),
            other => {
                let text = part
                    .get("text")
                    .filter(|v| truthy(Some(v)))
                    .or_else(|| part.get(other).filter(|v| truthy(Some(v))));
                Block::Text(match text {
                    None => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => python_json(v),
                })
            }
        });
    }
    Ok(out)
}

/// `json.dumps(value)` (ASCII-escaped).
fn python_json(value: &Value) -> String {
    crate::python::json_dumps(value)
}

/// `_normalize_tool_call`.
fn call_of(call: &Value) -> Result<Call, RenderError> {
    let Value::Object(call) = call else {
        return Err(py::error(format!(
            "Unexpected tool_call value: {}",
            py::repr(call)
        )));
    };
    let function = call
        .get("function")
        .filter(|f| truthy(Some(f)))
        .and_then(Value::as_object);
    let name = function
        .and_then(|f| f.get("name"))
        .filter(|v| truthy(Some(v)))
        .or_else(|| call.get("name").filter(|v| truthy(Some(v))))
        .map_or_else(String::new, |v| py::s(Some(v)));
    let arguments = match function.and_then(|f| f.get("arguments")) {
        Some(v) if !v.is_null() => v.clone(),
        _ => call
            .get("arguments")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    };
    let parameters = match arguments {
        Value::String(s) => s,
        other => py::to_json(&other),
    };
    let id = call
        .get("id")
        .filter(|v| truthy(Some(v)))
        .map_or_else(String::new, |v| py::s(Some(v)));
    Ok(Call {
        id,
        name,
        parameters,
    })
}

/// `_conversation_to_melody_messages` over vLLM's conversation (`content_format="openai"`).
pub(crate) fn from_conversation(conversation: &[Value]) -> Result<Vec<Message>, RenderError> {
    let mut out = Vec::with_capacity(conversation.len());
    for msg in conversation {
        let role = match msg.get("role") {
            Some(Value::String(r)) => role_of(r)?,
            None => Role::User,
            Some(other) => role_of(&py::s(Some(other)))?,
        };
        let mut content = blocks(msg.get("content"))?;
        if role == Role::Chatbot {
            let reasoning = msg
                .get("reasoning")
                .filter(|v| truthy(Some(v)))
                .or_else(|| msg.get("reasoning_content").filter(|v| truthy(Some(v))));
            if let Some(reasoning) = reasoning {
                content.insert(0, Block::Thinking(py::s(Some(reasoning))));
            }
        }
        let tool_calls = match msg.get("tool_calls") {
            Some(Value::Array(calls)) => calls.iter().map(call_of).collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        let tool_call_id = msg
            .get("tool_call_id")
            .filter(|v| truthy(Some(v)))
            .map(|v| py::s(Some(v)));
        out.push(Message {
            role,
            content,
            tool_calls,
            tool_call_id,
        });
    }
    Ok(out)
}

/// The format's "validation error" (what melody reports as a render error).
fn invalid(message: String) -> RenderError {
    py::error(format!(
        "Render error: Template validation error: {message}"
    ))
}

/// A content item of a prompt message: its type and its text.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub(crate) kind: ItemKind,
    pub(crate) data: String,
}

/// The type of a prompt message's content item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    Text,
    Thinking,
    Image,
}

/// A tool call of a prompt message.
#[derive(Debug, Clone)]
pub(crate) struct PromptCall {
    /// The call's index, as text.
    pub(crate) id: String,
    /// The function name, JSON-escaped.
    pub(crate) name: String,
    /// The parsed arguments.
    pub(crate) arguments: Value,
}

/// A message of the prompt: a turn, or the results of one tool call.
#[derive(Debug, Clone)]
pub(crate) enum PromptMessage {
    /// A system, user or chatbot turn.
    Turn {
        role: Role,
        content: Vec<Item>,
        tool_calls: Vec<PromptCall>,
    },
    /// The results (as JSON values) of the call numbered `index`.
    Results { index: usize, results: Vec<Value> },
}

/// A tool message's content block as a result value.
fn result_of(block: &Block) -> Result<Value, RenderError> {
    Ok(match block {
        Block::Text(t) => {
            let mut m = Map::new();
            m.insert("content".into(), Value::String(t.clone()));
            Value::Object(m)
        }
        Block::Document(d) => Value::Object(d.clone()),
        Block::Image(p) => {
            let mut m = Map::new();
            m.insert("image_content".into(), Value::String(p.clone()));
            Value::Object(m)
        }
        Block::Thinking(_) => {
            return Err(invalid(
                "thinking content type cannot be used in tool messages".into(),
            ));
        }
    })
}

/// Numbers the tool calls, checks the messages and groups tool results.
pub(crate) fn prompt_messages(
    messages: &[Message],
    has_documents: bool,
) -> Result<Vec<PromptMessage>, RenderError> {
    // Call ids in order of first appearance (tool messages' ids included); with
    // documents, index 0 is theirs.
    let mut ids: Vec<&str> = Vec::new();
    for msg in messages {
        if msg.role == Role::Tool {
            let id = msg.tool_call_id.as_deref().unwrap_or_default();
            if !ids.contains(&id) {
                ids.push(id);
            }
            continue;
        }
        for call in &msg.tool_calls {
            if !ids.contains(&call.id.as_str()) {
                ids.push(&call.id);
            }
        }
    }
    let offset = usize::from(has_documents);
    let index_of = |id: &str| ids.iter().position(|i| *i == id).map_or(0, |p| p + offset);

    let mut out = Vec::with_capacity(messages.len());
    let mut seen_calls: Vec<&str> = Vec::new();
    // The current run of tool messages: (call index, results) in first-seen order.
    let mut run: Vec<(usize, Vec<Value>)> = Vec::new();
    // Where each call id's results went: the position in the run it was first seen
    // in. The format keeps this across runs, so a later run's results for an id
    // land at that position of the later run (or fail when it has no such entry).
    let mut slots: Vec<(&str, usize)> = Vec::new();
    for (i, msg) in messages.iter().enumerate() {
        if msg.role == Role::Tool {
            let Some(id) = msg.tool_call_id.as_deref() else {
                return Err(invalid(format!("tool message[{i}] missing tool_call_id")));
            };
            let slot = match slots.iter().find(|(k, _)| *k == id) {
                Some((_, slot)) => *slot,
                None => {
                    run.push((index_of(id), Vec::new()));
                    slots.push((id, run.len() - 1));
                    run.len() - 1
                }
            };
            for block in &msg.content {
                let value = result_of(block)?;
                let len = run.len();
                let entry = run.get_mut(slot).ok_or_else(|| {
                    py::error(format!(
                        "index out of bounds: the len is {len} but the index is {slot}"
                    ))
                })?;
                entry.1.push(value);
            }
            continue;
        }
        flush(&mut run, &mut out);
        for call in &msg.tool_calls {
            if msg.role != Role::Chatbot {
                return Err(invalid(
                    "tool calls are only supported for chatbot/assistant messages".into(),
                ));
            }
            if call.id.is_empty() {
                return Err(invalid(format!("message[{i}] has tool call with empty id")));
            }
            if seen_calls.contains(&call.id.as_str()) {
                return Err(invalid(format!(
                    "message[{i}] has duplicate tool call id: {}",
                    call.id
                )));
            }
            seen_calls.push(&call.id);
        }
        let mut content = Vec::with_capacity(msg.content.len());
        for (j, block) in msg.content.iter().enumerate() {
            let (mut kind, data) = match block {
                Block::Text(t) => (ItemKind::Text, t.clone()),
                Block::Thinking(t) => (ItemKind::Thinking, t.clone()),
                Block::Image(p) => (ItemKind::Image, p.clone()),
                Block::Document(_) => {
                    return Err(invalid(
                        "content type object is not supported for non-tool messages".into(),
                    ));
                }
            };
            // A chatbot turn's leading text is its plan when it calls tools.
            if kind == ItemKind::Text && j == 0 && !msg.tool_calls.is_empty() {
                kind = ItemKind::Thinking;
            }
            content.push(Item { kind, data });
        }
        let mut tool_calls = Vec::with_capacity(msg.tool_calls.len());
        for call in &msg.tool_calls {
            let arguments: Value = serde_json::from_str(&call.parameters)
                .map_err(|e| py::error(format!("Render error: JSON serialization error: {e}")))?;
            tool_calls.push(PromptCall {
                id: index_of(&call.id).to_string(),
                name: json::escape(&call.name),
                arguments,
            });
        }
        out.push(PromptMessage::Turn {
            role: msg.role,
            content,
            tool_calls,
        });
    }
    flush(&mut run, &mut out);
    Ok(out)
}

fn flush(run: &mut Vec<(usize, Vec<Value>)>, out: &mut Vec<PromptMessage>) {
    out.extend(
        run.drain(..)
            .map(|(index, results)| PromptMessage::Results { index, results }),
    );
}
