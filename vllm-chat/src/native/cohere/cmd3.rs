//! The Command 3 prompt (`cohere_format` `cmd3`, template `cmd3-v1`).

use serde_json::Value;

use super::Template;
use super::cmd4::results_turn;
use super::config::{Config, Toggle};
use super::json::{escape, to_json};
use super::messages::{Item, ItemKind, PromptMessage, Role};
use super::text::*;
use crate::native::py::truthy;

/// Renders the prompt with `cmd3-v1`, `cmd3-v2` or `cmd3-v3`.
pub(crate) fn render(config: &Config, messages: &[PromptMessage], template: Template) -> String {
    let mut out = String::with_capacity(8192);
    let skip_thinking = config.reasoning_type == Some(Toggle::Disabled);
    // `cmd3-v1` turns `reasoning` into `reasoning_v1` (the reasoning section and the
    // tool-use notes) and off (the tool-use section); the others keep both.
    let extra_truthy = |key: &str| truthy(config.extra.get(key));
    let (reasoning, reasoning_v1, template_v1) = match template {
        Template::Cmd3V1 => {
            let given = match config.reasoning_type {
                Some(rt) => rt == Toggle::Enabled,
                None => extra_truthy("reasoning"),
            };
            (false, given, true)
        }
        _ => (
            super::reasoning(config),
            extra_truthy("reasoning_v1"),
            extra_truthy("template_v1"),
        ),
    };
    let thinking_default = match template {
        Template::Cmd3V3 => Some(CMD3_DEFAULT_PLAN.to_owned()),
        _ => config
            .extra
            .get("thinking_default_val")
            .filter(|v| truthy(Some(v)))
            .map(|v| display(v, false)),
    };
    let first_is_instruction = truthy(config.extra.get("initial_instruction_message"));
    let citations = config.citation_quality.as_deref() != Some("off");
    let json_mode = config.json_mode || config.json_schema.is_some();

    out.push_str(BOS);
    if config.skip_preamble {
        if let Some(dev) = &config.dev_instruction {
            out.push_str(SYSTEM_TURN);
            out.push_str(dev);
            out.push_str(END_TURN);
        }
    } else {
        out.push_str(SYSTEM_TURN);
        out.push_str("# System Preamble\n");
        match config.safety_mode.as_deref() {
            Some("none") => {}
            Some("strict") => {
                out.push_str(CMD3_STRICT);
                out.push('\n');
            }
            _ => {
                out.push_str(CMD3_CONTEXTUAL);
                out.push('\n');
            }
        }
        out.push('\n');
        out.push_str(CMD3_BASE);
        out.push('\n');
        if reasoning || reasoning_v1 {
            out.push('\n');
            out.push_str(CMD3_REASONING);
            out.push('\n');
        }
        let tools_or_docs = !config.tools.is_empty() || !config.documents.is_empty();
        if tools_or_docs || reasoning {
            out.push('\n');
            out.push_str(CMD3_TOOL_INTRO);
            out.push_str("\n\n");
            if skip_thinking {
                out.push_str(CMD3_TOOL_USE_NO_THINKING);
            } else {
                out.push_str(CMD3_PLAN_STEP);
                if !reasoning && !reasoning_v1 {
                    out.push_str(CMD3_PLAN_SKIP_NOTE);
                }
                out.push_str(CMD3_STEPS);
                if !reasoning && !reasoning_v1 {
                    out.push_str(CMD3_REFLECTION_SKIP_NOTE);
                }
                out.push_str(CMD3_STEPS_END);
            }
            out.push('\n');
            if citations {
                out.push_str("\n## Grounding\nImportantly, note that ");
                if !skip_thinking {
                    out.push_str("\"Reflection\" and ");
                }
                out.push_str("\"Response\" above can be grounded.\n");
                out.push_str(CMD3_GROUNDING_BODY);
                out.push('\n');
            }
            out.push('\n');
            out.push_str(CMD3_AVAILABLE_TOOLS);
            out.push_str("\n\n```json\n[");
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
            for (k, entry) in entries.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                out.push_str("\n    ");
                out.push_str(entry);
            }
            if !tools_or_docs && !template_v1 {
                out.push('\n');
            }
            out.push_str("\n]\n```\n");
        }
        out.push('\n');
        out.push_str(CMD3_DEFAULT_PREAMBLE);
        let dev = config.dev_instruction.as_deref().filter(|d| !d.is_empty());
        if dev.is_some() || json_mode {
            out.push_str("\n\n");
            out.push_str(CMD3_DEVELOPER_PREAMBLE);
            if let Some(dev) = dev {
                out.push('\n');
                out.push_str(dev);
            }
            if json_mode {
                out.push('\n');
                out.push_str(JSON_INSTRUCTION);
                if let Some(schema) = config.json_schema.as_deref().filter(|s| !s.is_empty()) {
                    out.push_str("\nYour output should adhere to the following json schema:\n");
                    out.push_str(schema);
                }
            }
        }
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
                if !(i == 0 && first_is_instruction) || config.skip_preamble {
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
                    super::cmd4::document_turn(&mut out, &config.documents, skip_thinking);
                }
            }
            PromptMessage::Turn {
                role: Role::Chatbot,
                content,
                tool_calls,
            } => {
                out.push_str(CHATBOT_TURN);
                if !skip_thinking {
                    if let Some(Item {
                        kind: ItemKind::Thinking,
                        data,
                    }) = content.first()
                    {
                        out.push_str(START_THINKING);
                        out.push_str(data);
                        out.push_str(END_THINKING);
                    } else if let Some(default) = &thinking_default {
                        out.push_str(START_THINKING);
                        out.push_str(default);
                        out.push_str(END_THINKING);
                    }
                }
                if tool_calls.is_empty() {
                    out.push_str(START_RESPONSE);
                    print_items(&mut out, content);
                    out.push_str(END_RESPONSE);
                    out.push_str(END_TURN);
                } else {
                    super::cmd4::action(&mut out, tool_calls);
                }
            }
            PromptMessage::Turn {
                role: Role::Tool, ..
            } => {}
            PromptMessage::Results { index, results } => {
                results_turn(&mut out, (*index, results), &messages[i + 1..], &mut seen);
            }
        }
    }
    out.push_str(CHATBOT_TURN);
    out
}

/// A turn's content without text markers: consecutive texts on separate lines,
/// images as their placeholder.
fn print_items(out: &mut String, items: &[Item]) {
    let mut last_was_text = false;
    for item in items {
        if item.kind == ItemKind::Text {
            if last_was_text {
                out.push('\n');
            }
            out.push_str(&item.data);
            last_was_text = true;
        } else {
            last_was_text = false;
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

/// How the format's template engine prints a value: strings as they are (quoted
/// inside lists and maps), `none`, `true` / `false`.
fn display(value: &Value, nested: bool) -> String {
    match value {
        Value::Null => "none".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()) {
            Some(f) if f.is_finite() && f.fract() == 0.0 => format!("{f:.1}"),
            Some(f) => f.to_string(),
            None => n.to_string(),
        },
        Value::String(s) if nested => format!("{s:?}"),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| display(v, true))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k:?}: {}", display(v, true)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
