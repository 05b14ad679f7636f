//! The Command 4 prompt (`cohere_format` `cmd4`, template `cmd4-v1`).

use serde_json::Value;

use super::Template;
use super::config::{Config, Toggle};
use super::json::{escape, to_json};
use super::messages::{Item, ItemKind, PromptCall, PromptMessage, Role};
use super::text::*;
use crate::native::py::truthy;

/// Renders the prompt with `cmd4-v1`, `cmd4-v2` or `cmd4-hf`.
pub(crate) fn render(config: &Config, messages: &[PromptMessage], template: Template) -> String {
    let mut out = String::with_capacity(1024);
    let skip_thinking = truthy(config.extra.get("skip_thinking"));
    let first_is_instruction = truthy(config.extra.get("initial_instruction_message"));
    let has_tools_or_docs = !config.tools.is_empty() || !config.documents.is_empty();

    out.push_str(BOS);
    out.push_str(SYSTEM_TURN);
    out.push_str(START_TEXT);
    let mut chunk = false;
    let platform = match config
        .platform_instruction
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        None if template == Template::Cmd4Hf => Some(CMD4_DEFAULT_PLATFORM),
        given => given,
    };
    if let Some(platform) = platform {
        out.push_str(platform);
        out.push('\n');
        chunk = true;
    }
    if config.grounding == Toggle::Enabled && has_tools_or_docs {
        if chunk {
            out.push('\n');
        }
        out.push_str(CMD4_GROUNDING);
        out.push('\n');
        chunk = true;
    }
    if chunk {
        out.push('\n');
    }
    out.push_str("# Available Tools\n```json\n[\n");
    let mut entries: Vec<String> = Vec::with_capacity(config.tools.len() + 1);
    if !config.documents.is_empty() {
        entries.push(DOCUMENT_TOOL.to_owned());
    }
    for tool in &config.tools {
        entries.push(format!(
            "{{\"name\": \"{}\", \"description\": \"{}\", \"parameters\": {}, \"responses\": null}}",
            escape(&tool.name),
            escape(&tool.description),
            to_json(&Value::Object(tool.parameters.clone()))
        ));
    }
    if entries.is_empty() {
        out.push('\n');
    } else {
        out.push_str("    ");
        out.push_str(&entries.join(",\n    "));
        out.push('\n');
    }
    out.push_str("]\n```");
    if config.json_mode || config.json_schema.is_some() {
        out.push_str("\n\n");
        out.push_str(JSON_INSTRUCTION);
        if let Some(schema) = config.json_schema.as_deref().filter(|s| !s.is_empty()) {
            out.push_str("\nYour output should adhere to the following json schema:\n");
            out.push_str(schema);
        }
    }
    out.push_str(END_TEXT);
    out.push_str(END_TURN);
    if let Some(dev) = config.dev_instruction.as_deref().filter(|d| !d.is_empty()) {
        out.push_str(SYSTEM_TURN);
        out.push_str(START_TEXT);
        out.push_str(dev);
        out.push_str(END_TEXT);
        out.push_str(END_TURN);
    }

    let mut sent_documents = false;
    let mut seen: Vec<usize> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        match message {
            PromptMessage::Turn {
                role: Role::System,
                content,
                ..
            } => {
                if !(i == 0 && first_is_instruction) {
                    out.push_str(SYSTEM_TURN);
                    print_items(&mut out, content);
                    out.push_str(END_TURN);
                }
            }
            PromptMessage::Turn {
                role: Role::User,
                content,
                ..
            } => {
                out.push_str(USER_TURN);
                print_items(&mut out, content);
                out.push_str(END_TURN);
                if !config.documents.is_empty() && !sent_documents {
                    sent_documents = true;
                    document_turn(&mut out, &config.documents, skip_thinking);
                }
            }
            PromptMessage::Turn {
                role: Role::Chatbot,
                content,
                tool_calls,
            } => {
                out.push_str(CHATBOT_TURN);
                if !skip_thinking {
                    out.push_str(START_THINKING);
                    if let Some(Item {
                        kind: ItemKind::Thinking,
                        data,
                    }) = content.first()
                    {
                        out.push_str(data);
                    }
                    out.push_str(END_THINKING);
                }
                if tool_calls.is_empty() {
                    print_items(&mut out, content);
                    out.push_str(END_TURN);
                } else {
                    action(&mut out, tool_calls);
                }
            }
            // The format has no tool turn of its own: results are written below.
            PromptMessage::Turn {
                role: Role::Tool, ..
            } => {}
            PromptMessage::Results { index, results } => {
                results_turn(&mut out, (*index, results), &messages[i + 1..], &mut seen);
            }
        }
    }
    out.push_str(CHATBOT_TURN);
    if template != Template::Cmd4V1 {
        out.push_str(START_THINKING);
        if !super::reasoning(config) {
            out.push_str(END_THINKING);
        }
    }
    out
}

/// A turn's content: runs of text between `<|START_TEXT|>` and `<|END_TEXT|>`
/// (adjacent texts joined as they are), images as their placeholder.
pub(super) fn print_items(out: &mut String, items: &[Item]) {
    let mut in_text = false;
    for (j, item) in items.iter().enumerate() {
        if item.kind == ItemKind::Text {
            if !in_text {
                out.push_str(START_TEXT);
            }
            out.push_str(&item.data);
            if j + 1 == items.len() {
                out.push_str(END_TEXT);
            }
            in_text = true;
        } else {
            if in_text {
                out.push_str(END_TEXT);
            }
            in_text = false;
        }
        if item.kind == ItemKind::Image {
            if item.data.is_empty() {
                out.push_str(IMG_PATCH);
            } else {
                out.push_str(&item.data);
            }
        }
    }
}

/// A chatbot turn's tool calls, and the end of the turn.
pub(super) fn action(out: &mut String, tool_calls: &[PromptCall]) {
    out.push_str(START_ACTION);
    out.push('[');
    for (j, call) in tool_calls.iter().enumerate() {
        if j > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            "\n    {{\"tool_call_id\": \"{}\", \"tool_name\": \"{}\", \"parameters\": {}}}",
            call.id,
            call.name,
            to_json(&call.arguments)
        ));
    }
    out.push_str("\n]");
    out.push_str(END_ACTION);
    out.push_str(END_TURN);
}

/// A run of tool results in one system turn: `first` and the `Results` right after
/// it in `followers` (both formats write results this way; a result already written
/// in an earlier run is skipped, as the templates track `tool_ids_seen`).
pub(super) fn results_turn(
    out: &mut String,
    first: (usize, &[Value]),
    followers: &[PromptMessage],
    seen: &mut Vec<usize>,
) {
    if seen.contains(&first.0) {
        return;
    }
    out.push_str(SYSTEM_TURN);
    out.push_str(START_TOOL_RESULT);
    out.push_str("[\n    ");
    tool_result(out, first.0, first.1);
    for follower in followers {
        let PromptMessage::Results { index, results } = follower else {
            break;
        };
        out.push_str(",\n    ");
        tool_result(out, *index, results);
        seen.push(*index);
    }
    out.push_str("\n]");
    out.push_str(END_TOOL_RESULT);
    out.push_str(END_TURN);
}

/// One tool call's results.
fn tool_result(out: &mut String, index: usize, results: &[Value]) {
    out.push_str(&format!(
        "{{\n        \"tool_call_id\": \"{index}\",\n        \"results\": {{"
    ));
    for (k, result) in results.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push_str(&format!("\n            \"{k}\": {}", to_json(result)));
    }
    out.push_str("\n        },\n        \"is_error\": null\n    }");
}

/// The turn pair that hands the request's documents to the model as the results
/// of a call to the document tool.
pub(super) fn document_turn(
    out: &mut String,
    documents: &[serde_json::Map<String, Value>],
    skip_thinking: bool,
) {
    out.push_str(CHATBOT_TURN);
    if !skip_thinking {
        out.push_str(START_THINKING);
        out.push_str(DOCUMENT_PLAN);
        out.push_str(END_THINKING);
    }
    out.push_str(START_ACTION);
    out.push_str(DOCUMENT_CALL);
    out.push_str(END_ACTION);
    out.push_str(END_TURN);
    out.push_str(SYSTEM_TURN);
    out.push_str(START_TOOL_RESULT);
    out.push_str("[\n    ");
    let results: Vec<Value> = documents
        .iter()
        .map(|doc| match doc.get("data").filter(|d| truthy(Some(d))) {
            Some(data) => data.clone(),
            None => Value::Object(doc.clone()),
        })
        .collect();
    tool_result(out, 0, &results);
    out.push_str("\n]");
    out.push_str(END_TOOL_RESULT);
    out.push_str(END_TURN);
}
