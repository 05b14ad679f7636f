//! A chat request as mistral-common sees it: vLLM's request-level steps, transformers'
//! `MistralCommonBackend.apply_chat_template` and mistral-common's
//! `ChatCompletionRequest.from_openai` conversion.

use serde_json::Value;

use crate::RenderError;
use crate::openai::{ChatCompletionRequest, ChatMessage, ContentPart, MessageContent};

use super::json::dumps;

/// A content chunk (`TextChunk`, `ThinkChunk`, or a media chunk this renderer cannot encode).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Chunk {
    Text(String),
    Think {
        thinking: String,
        closed: bool,
    },
    /// `ImageChunk`/`ImageURLChunk` (`image`) or `AudioChunk`/`AudioURLChunk` (`audio`).
    Media(&'static str),
}

impl Chunk {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Chunk::Text(_) => "TextChunk",
            Chunk::Think { .. } => "ThinkChunk",
            Chunk::Media("image") => "ImageURLChunk",
            Chunk::Media(_) => "AudioChunk",
        }
    }
}

/// `str | list[ContentChunk]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    Str(String),
    Chunks(Vec<Chunk>),
}

impl Content {
    /// Python truthiness: a non-empty string or list.
    pub(crate) fn truthy(&self) -> bool {
        match self {
            Content::Str(s) => !s.is_empty(),
            Content::Chunks(c) => !c.is_empty(),
        }
    }
}

/// A `ToolCall`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }
}

/// One of mistral-common's messages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Message {
    User {
        content: Content,
    },
    Assistant {
        content: Option<Content>,
        tool_calls: Vec<ToolCall>,
        prefix: bool,
    },
    Tool {
        content: Content,
        tool_call_id: Option<String>,
        name: Option<String>,
    },
    System {
        content: Content,
    },
}

impl Message {
    pub(crate) fn role(&self) -> Role {
        match self {
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::Tool { .. } => Role::Tool,
            Message::System { .. } => Role::System,
        }
    }

    pub(crate) fn content(&self) -> Option<&Content> {
        match self {
            Message::User { content } | Message::System { content } => Some(content),
            Message::Tool { content, .. } => Some(content),
            Message::Assistant { content, .. } => content.as_ref(),
        }
    }
}

pub(crate) fn error(message: impl Into<String>) -> RenderError {
    RenderError::InvalidRequest {
        message: message.into(),
        param: None,
    }
}

/// The last `n` characters (Python's `s[-n:]`).
fn last_chars(s: &str, n: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(n)).collect()
}

/// The request's messages after vLLM's `truncate_tool_call_ids` and mistral-common's
/// `from_openai`, with the checks of vLLM's `_validate_apply_chat_template_args` and
/// `continue_final_message` mapped to the last assistant message's `prefix`.
pub(crate) fn convert(
    request: &ChatCompletionRequest,
    add_generation_prompt: bool,
    continue_final_message: bool,
) -> Result<Vec<Message>, RenderError> {
    if add_generation_prompt && continue_final_message {
        return Err(error(
            "Cannot set both `add_generation_prompt` and `continue_final_message` to True.",
        ));
    }
    let last = request
        .messages
        .last()
        .ok_or_else(|| error("list index out of range"))?;
    if add_generation_prompt && last.role == "assistant" {
        return Err(error(
            "Cannot set `add_generation_prompt` to True when the last message is from the assistant. Consider using `continue_final_message` instead.",
        ));
    }
    if continue_final_message && last.role != "assistant" {
        return Err(error(
            "Cannot set `continue_final_message` to True when the last message is not from the assistant.",
        ));
    }
    let mut out = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        out.push(convert_message(message)?);
    }
    if continue_final_message && let Some(Message::Assistant { prefix, .. }) = out.last_mut() {
        *prefix = true;
    }
    Ok(out)
}

fn convert_message(message: &ChatMessage) -> Result<Message, RenderError> {
    match message.role.as_str() {
        "user" => Ok(Message::User {
            content: content(message.content.as_ref())?
                .ok_or_else(|| error("1 validation error for UserMessage\ncontent\n  Input should be a valid string"))?,
        }),
        "assistant" => {
            let mut tool_calls = Vec::new();
            for call in message.tool_calls.iter().flatten() {
                tool_calls.push(tool_call(call)?);
            }
            let mut content = content(message.content.as_ref())?;
            if let Some(thinking) = &message.reasoning {
                let think = Chunk::Think {
                    thinking: thinking.clone(),
                    closed: true,
                };
                content = Some(match content {
                    Some(Content::Chunks(mut chunks)) => {
                        if chunks.iter().any(|c| matches!(c, Chunk::Think { .. })) {
                            return Err(error(
                                "Message cannot have both thinking chunks in `content` and a top-level `reasoning` or `reasoning_content` field.",
                            ));
                        }
                        chunks.insert(0, think);
                        Content::Chunks(chunks)
                    }
                    Some(Content::Str(text)) => Content::Chunks(vec![think, Chunk::Text(text)]),
                    None => Content::Chunks(vec![think]),
                });
            }
            Ok(Message::Assistant {
                content,
                tool_calls,
                prefix: false,
            })
        }
        "tool" => {
            let tool_call_id = message.tool_call_id.as_deref().map(|id| {
                if id.chars().count() > 9 {
                    last_chars(id, 9)
                } else {
                    id.to_owned()
                }
            });
            Ok(Message::Tool {
                content: content(message.content.as_ref())?
                    .ok_or_else(|| error("1 validation error for ToolMessage\ncontent\n  Input should be a valid string"))?,
                tool_call_id,
                name: message.name.clone(),
            })
        }
        "system" | "developer" => Ok(Message::System {
            content: content(message.content.as_ref())?.ok_or_else(|| {
                error("1 validation error for SystemMessage\ncontent\n  Input should be a valid string")
            })?,
        }),
        other => Err(error(format!("Unknown message role: {other}"))),
    }
}

/// transformers' `_maybe_adapt_message` (parts without a type dropped) and
/// mistral-common's `_content_from_openai`.
fn content(content: Option<&MessageContent>) -> Result<Option<Content>, RenderError> {
    let parts = match content {
        None => return Ok(None),
        Some(MessageContent::Text(text)) => return Ok(Some(Content::Str(text.clone()))),
        Some(MessageContent::Parts(parts)) => parts,
    };
    let mut chunks = Vec::with_capacity(parts.len());
    for part in parts {
        let ContentPart::Typed { kind, text, rest } = part else {
            return Err(error("'str' object has no attribute 'get'"));
        };
        match kind.as_str() {
            "" => continue,
            "text" => chunks.push(Chunk::Text(text.clone().ok_or_else(|| {
                error("1 validation error for TextChunk\ntext\n  Field required")
            })?)),
            "thinking" => chunks.push(Chunk::Think {
                thinking: rest
                    .get("thinking")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        error("1 validation error for ThinkChunk\nthinking\n  Field required")
                    })?
                    .to_owned(),
                closed: rest.get("closed").and_then(Value::as_bool).unwrap_or(true),
            }),
            "image_url" | "image" => chunks.push(Chunk::Media("image")),
            "input_audio" | "audio_url" | "audio" => chunks.push(Chunk::Media("audio")),
            other => return Err(error(format!("'{other}' is not a valid ChunkTypes"))),
        }
    }
    Ok(Some(Content::Chunks(chunks)))
}

/// vLLM's `truncate_tool_call_ids` and mistral-common's `ToolCall.from_openai`.
fn tool_call(call: &Value) -> Result<ToolCall, RenderError> {
    let id = match call.get("id") {
        Some(Value::String(id)) if id.chars().count() > 9 => last_chars(id, 9),
        Some(Value::String(id)) => id.clone(),
        _ => return Err(error("'id'")),
    };
    let function = call
        .get("function")
        .ok_or_else(|| error("1 validation error for ToolCall\nfunction\n  Field required"))?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| error("1 validation error for ToolCall\nfunction.name\n  Field required"))?
        .to_owned();
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        // FunctionCall.validate_arguments: json.dumps(v) (ASCII escapes).
        Some(other @ Value::Object(_)) => dumps(other, true),
        Some(_) => {
            return Err(error(
                "1 validation error for ToolCall\nfunction.arguments\n  Input should be a valid string",
            ));
        }
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}
