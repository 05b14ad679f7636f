//! Merging events into the assistant message a client sees.

use serde::Serialize;

use crate::event::Event;
use crate::text::py_is_blank;

/// A parsed assistant message: what vLLM's non-streaming response holds, and what a
/// client gets by merging vLLM's streamed deltas.
///
/// Serializes as the OpenAI assistant message fields vLLM returns:
/// `{"content", "reasoning", "tool_calls"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ParsedMessage {
    /// The message text, `None` when empty.
    pub content: Option<String>,
    /// The reasoning text (vLLM 0.33's field name), `None` when empty.
    pub reasoning: Option<String>,
    /// The tool calls, in order.
    pub tool_calls: Vec<ParsedToolCall>,
}

/// One tool call of a [`ParsedMessage`].
///
/// Serializes in the OpenAI shape:
/// `{"id"?, "type": "function", "function": {"name", "arguments"}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedToolCall {
    /// The id the format gave the call, if any (see [`Event::ToolCallBegin`]).
    pub id: Option<String>,
    /// The function name.
    pub name: String,
    /// The arguments as JSON text, exactly as vLLM returns them.
    pub arguments: String,
}

impl Serialize for ParsedToolCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut call = serializer.serialize_map(None)?;
        if let Some(id) = &self.id {
            call.serialize_entry("id", id)?;
        }
        call.serialize_entry("type", "function")?;
        call.serialize_entry(
            "function",
            &serde_json::json!({"name": self.name, "arguments": self.arguments}),
        )?;
        call.end()
    }
}

/// Accumulates [`Event`]s into a [`ParsedMessage`].
///
/// Merging follows a client merging vLLM's deltas: content and reasoning are
/// concatenated, tool-call argument deltas are appended to the call with the same
/// index. [`finish`](Self::finish) then normalises the way vLLM's response does:
/// empty text is `None`, and whitespace-only content beside tool calls is `None`
/// (`DelegatingParser._extract_tool_calls`).
#[derive(Debug, Default, Clone)]
pub struct MessageBuilder {
    content: String,
    reasoning: String,
    tool_calls: Vec<ParsedToolCall>,
}

impl MessageBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Merge one event.
    pub fn push(&mut self, event: &Event) {
        match event {
            Event::Reasoning(text) => self.reasoning.push_str(text),
            Event::Content(text) => self.content.push_str(text),
            Event::ToolCallBegin { index, id, name } => {
                let call = self.call(*index);
                call.id.clone_from(id);
                call.name.push_str(name);
            }
            Event::ToolCallArguments { index, delta } => {
                self.call(*index).arguments.push_str(delta);
            }
            Event::ToolCallEnd { .. } => {}
        }
    }

    /// Merge several events.
    pub fn extend<'a>(&mut self, events: impl IntoIterator<Item = &'a Event>) {
        for event in events {
            self.push(event);
        }
    }

    fn call(&mut self, index: usize) -> &mut ParsedToolCall {
        if index >= self.tool_calls.len() {
            self.tool_calls
                .resize_with(index + 1, ParsedToolCall::default);
        }
        &mut self.tool_calls[index]
    }

    /// The merged, normalised message.
    pub fn finish(self) -> ParsedMessage {
        let blank_beside_calls = !self.tool_calls.is_empty() && py_is_blank(&self.content);
        ParsedMessage {
            content: (!self.content.is_empty() && !blank_beside_calls).then_some(self.content),
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            tool_calls: self.tool_calls,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_deltas_and_serializes_like_openai() {
        let mut builder = MessageBuilder::new();
        builder.extend(&[
            Event::Content("\n".into()),
            Event::ToolCallBegin {
                index: 0,
                id: None,
                name: "f".into(),
            },
            Event::ToolCallArguments {
                index: 0,
                delta: "{\"a\": ".into(),
            },
            Event::ToolCallArguments {
                index: 0,
                delta: "1}".into(),
            },
            Event::ToolCallEnd { index: 0 },
        ]);
        let json = serde_json::to_string(&builder.finish()).unwrap();
        assert_eq!(
            json,
            r#"{"content":null,"reasoning":null,"tool_calls":[{"type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}}]}"#
        );
    }
}
