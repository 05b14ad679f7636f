//! DeepSeek-V4's prompt encoder: a port of vLLM 0.33.0's
//! `vllm/tokenizers/deepseek_v4_encoding.py` and of the `apply_chat_template` of
//! `vllm/tokenizers/deepseek_v4.py`.
//!
//! Differences from V3.2 that shape the code: the conversation is vLLM's
//! `content_format="openai"` one (parts are joined here with `"\n\n"`); tool results
//! are not messages but `<tool_result>` blocks merged into a user turn and sorted by
//! the calling assistant's call order; thinking is on unless the request turns it
//! off, with a reasoning-effort preamble; request tools attach to the first system
//! message; turn transitions (`<｜Assistant｜>` + `<think>`/`</think>`) are decided
//! by the next message.

use serde_json::{Map, Value, json};

use super::deepseek_v32::{
    BOS, DSML, EOS, THINK_END, THINK_START, arguments_to_dsml, drop_thinking_messages,
    last_user_index, tool_call_parts, tools_from_openai_format,
};
use super::py::{self, get, is, or_empty, repr, s, to_json, truthy};
use crate::RenderError;
use crate::kwargs::Kwargs;

pub(super) const USER: &str = "<｜User｜>";
pub(super) const ASSISTANT: &str = "<｜Assistant｜>";
pub(super) const LATEST_REMINDER: &str = "<｜latest_reminder｜>";
const IMAGE_PLACEHOLDER: &str = "<｜deepseek_image｜>";
pub(super) const RESPONSE_FORMAT: &str =
    "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";
/// The roles `drop_thinking_messages` keeps before the last user message.
pub(super) const KEEP_ROLES: [&str; 5] = [
    "user",
    "system",
    "tool",
    "latest_reminder",
    "direct_search_results",
];
/// `DS_TASK_SP_TOKENS`.
pub(super) const TASKS: [(&str, &str); 6] = [
    ("action", "<｜action｜>"),
    ("query", "<｜query｜>"),
    ("authority", "<｜authority｜>"),
    ("domain", "<｜domain｜>"),
    ("title", "<｜title｜>"),
    ("read_url", "<｜read_url｜>"),
];

const EFFORT_HIGH: &str = "Reasoning Effort: Absolute maximum with no shortcuts permitted.\nYou MUST be very thorough in your thinking and comprehensively decompose the problem to resolve the root cause, rigorously stress-testing your logic against all potential paths, edge cases, and adversarial scenarios.\nExplicitly write out your entire deliberation process, documenting every intermediate step, considered alternative, and rejected hypothesis to ensure absolutely no assumption is left unchecked.\n\n";
const EFFORT_MAX: &str = "Reasoning Effort: Beyond maximum — exhaustive, relentless, and uncompromising.\nYou MUST reason with the utmost depth and rigor, leaving absolutely nothing to chance: exhaustively decompose the problem into its most fundamental components, trace every causal chain to its root, and resolve the underlying cause rather than any surface symptom.\nDo not stop reasoning until you have independently verified the solution from multiple angles and are certain that no assumption remains unchecked and no error remains undiscovered.\n\n";

const TOOLS_TEMPLATE: &str = "## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \"<｜DSML｜tool_calls>\" block like the following:

<｜DSML｜tool_calls>
<｜DSML｜invoke name=\"$TOOL_NAME\">
<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>
...
</｜DSML｜invoke>
<｜DSML｜invoke name=\"$TOOL_NAME2\">
...
</｜DSML｜invoke>
</｜DSML｜tool_calls>

String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

{tool_schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
";

/// Reasoning effort after `apply_chat_template`'s mapping.
#[derive(Clone, Copy, PartialEq)]
enum Effort {
    Low,
    High,
    Max,
}

/// `DeepseekV4Tokenizer.apply_chat_template(conversation, tools=…, **kwargs)` with
/// `tokenize=False`: the prompt text.
pub(crate) fn render(
    conversation: Vec<Value>,
    tools: Option<&Value>,
    kwargs: &Kwargs,
) -> Result<String, RenderError> {
    let mut thinking = truthy(kwargs.get("thinking")) || truthy(kwargs.get("enable_thinking"));
    if !kwargs.contains_key("thinking") && !kwargs.contains_key("enable_thinking") {
        thinking = true;
    }
    let mut messages = conversation;
    if let Some(tools) = tools.filter(|t| truthy(Some(t))) {
        match messages.iter().position(|m| is(m, "role", "system")) {
            Some(i) => {
                if let Value::Object(map) = &mut messages[i] {
                    map.insert("tools".into(), tools.clone());
                }
            }
            None => messages.insert(0, json!({"role": "system", "tools": tools})),
        }
    }
    let effort = match kwargs.get("reasoning_effort").and_then(Value::as_str) {
        None => thinking.then_some(Effort::High),
        Some("none") => {
            thinking = false;
            None
        }
        Some("max") => Some(Effort::Max),
        Some("low" | "minimal" | "medium") => Some(Effort::Low),
        Some(_) => Some(Effort::High),
    };
    let drop_thinking = kwargs.get("drop_thinking").is_none_or(|v| truthy(Some(v)));
    encode_messages(
        messages,
        thinking,
        drop_thinking,
        effort.unwrap_or(Effort::Low),
    )
}

/// `flatten_content_blocks`: OpenAI parts to text joined with `"\n\n"`.
fn flatten(content: Option<&Value>) -> Result<Option<Value>, RenderError> {
    let Some(Value::Array(blocks)) = content else {
        return Ok(content.cloned());
    };
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            Value::Object(_) => match block.get("type").and_then(Value::as_str) {
                Some("image" | "image_url") => parts.push(IMAGE_PLACEHOLDER.to_owned()),
                Some("text") => {
                    parts.push(block.get("text").map_or_else(String::new, |t| s(Some(t))))
                }
                _ => {
                    return Err(py::error(format!(
                        "Unsupported content block type: {}",
                        block.get("type").map_or_else(|| "None".into(), repr)
                    )));
                }
            },
            other => parts.push(s(Some(other))),
        }
    }
    Ok(Some(Value::String(parts.join("\n\n"))))
}

fn render_tools(tools: &[Value]) -> String {
    let schemas: Vec<String> = tools.iter().map(to_json).collect();
    TOOLS_TEMPLATE.replace("{tool_schemas}", &schemas.join("\n"))
}

fn render_message(
    index: usize,
    messages: &[Value],
    thinking: bool,
    drop_thinking: bool,
    effort: Effort,
    last_user: isize,
) -> Result<String, RenderError> {
    let Some(msg) = messages.get(index) else {
        return Err(py::error(format!(
            "Index {index} out of range for messages list of length {}",
            messages.len()
        )));
    };
    let mut prompt = String::new();
    let role = get(msg, "role").and_then(Value::as_str);
    let content = flatten(get(msg, "content"))?;
    let content = content.as_ref();
    let tools = get(msg, "tools")
        .filter(|t| truthy(Some(t)))
        .map(tools_from_openai_format)
        .transpose()?;
    let response_format = get(msg, "response_format").filter(|r| truthy(Some(r)));
    let tool_calls = get(msg, "tool_calls").filter(|t| truthy(Some(t)));
    let index_i = index as isize;

    if index == 0 && thinking {
        prompt += match effort {
            Effort::Low => "",
            Effort::High => EFFORT_HIGH,
            Effort::Max => EFFORT_MAX,
        };
    }
    let extras = |out: &mut String| {
        if let Some(tools) = &tools {
            *out += "\n\n";
            *out += &render_tools(tools);
        }
        if let Some(format) = response_format {
            *out += "\n\n";
            *out += RESPONSE_FORMAT;
            *out += &to_json(format);
        }
    };
    match role {
        Some("system") => {
            prompt += &or_empty(content);
            extras(&mut prompt);
        }
        Some("developer") => {
            if !truthy(content) {
                return Err(py::error(format!(
                    "Invalid message for role `developer`: {}",
                    repr(msg)
                )));
            }
            prompt += USER;
            prompt += &s(content);
            extras(&mut prompt);
        }
        Some("user") => {
            prompt += USER;
            match get(msg, "content_blocks").and_then(Value::as_array) {
                Some(blocks) if !blocks.is_empty() => {
                    let parts: Vec<String> = blocks.iter().map(user_block).collect();
                    prompt += &parts.join("\n\n");
                }
                _ => prompt += &or_empty(content),
            }
        }
        Some("latest_reminder") => {
            prompt += LATEST_REMINDER;
            prompt += &s(content);
        }
        Some("tool") => {
            return Err(py::error(
                "deepseek_v4 merges tool messages into user; please preprocess with merge_tool_messages()",
            ));
        }
        Some("assistant") => {
            let mut calls_text = String::new();
            if let Some(calls) = tool_calls {
                let calls = calls.as_array().map(Vec::as_slice).unwrap_or_default();
                let mut rendered = Vec::with_capacity(calls.len());
                for call in calls {
                    let (name, arguments) = tool_call_parts(call)?;
                    rendered.push(format!(
                        "<{DSML}invoke name=\"{}\">\n{}\n</{DSML}invoke>",
                        s(Some(&name)),
                        arguments_to_dsml(&arguments, "parameter")?
                    ));
                }
                calls_text = format!(
                    "\n\n<{DSML}tool_calls>\n{}\n</{DSML}tool_calls>",
                    rendered.join("\n")
                );
            }
            let summary = or_empty(content);
            let reasoning = or_empty(get(msg, "reasoning"));
            let prev_has_task = index > 0 && get(&messages[index - 1], "task").is_some();
            let mut thinking_part = String::new();
            if thinking && !prev_has_task && (!drop_thinking || index_i > last_user) {
                thinking_part = reasoning + THINK_END;
            }
            prompt += &format!("{thinking_part}{summary}{calls_text}");
            if !truthy(get(msg, "wo_eos")) {
                prompt += EOS;
            }
        }
        _ => {
            return Err(py::error(format!("Invalid role: {}", s(get(msg, "role")))));
        }
    }

    if let Some(next) = messages.get(index + 1)
        && !(is(next, "role", "assistant") || is(next, "role", "latest_reminder"))
    {
        return Ok(prompt);
    }
    if let Some(task) = get(msg, "task") {
        prompt += &task_suffix(task, thinking)?;
    } else if matches!(role, Some("user" | "developer"))
        || role == Some("system")
            && messages
                .get(index + 1)
                .is_none_or(|next| is(next, "role", "assistant"))
    {
        prompt += ASSISTANT;
        prompt += if thinking && (!drop_thinking || index_i >= last_user) {
            THINK_START
        } else {
            THINK_END
        };
    }
    Ok(prompt)
}

/// What follows a message with a `task` (V4, V4.1): the task's token, behind
/// an opened assistant turn for `action`. An unknown task's error lists the
/// valid ones in `DS_TASK_SP_TOKENS` order; vLLM lists a `set` of them, in an
/// order that changes with the process's string-hash seed.
pub(super) fn task_suffix(task: &Value, thinking: bool) -> Result<String, RenderError> {
    let Some((name, token)) = TASKS.iter().find(|(name, _)| task.as_str() == Some(name)) else {
        let valid: Vec<String> = TASKS.iter().map(|(n, _)| format!("'{n}'")).collect();
        return Err(py::error(format!(
            "Invalid task: '{}'. Valid tasks are: [{}]",
            s(Some(task)),
            valid.join(", ")
        )));
    };
    Ok(if *name == "action" {
        let think = if thinking { THINK_START } else { THINK_END };
        format!("{ASSISTANT}{think}{token}")
    } else {
        (*token).to_owned()
    })
}

/// One block of a merged user turn.
pub(super) fn user_block(block: &Value) -> String {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => block.get("text").map_or_else(String::new, |t| s(Some(t))),
        Some("image" | "image_url") => IMAGE_PLACEHOLDER.to_owned(),
        Some("tool_result") => {
            let content = match block.get("content") {
                Some(Value::Array(items)) => {
                    let texts: Vec<String> = items
                        .iter()
                        .map(|b| {
                            if is(b, "type", "text") {
                                b.get("text").map_or_else(String::new, |t| s(Some(t)))
                            } else {
                                format!("[Unsupported {}]", s(get(b, "type")))
                            }
                        })
                        .collect();
                    texts.join("\n\n")
                }
                Some(other) => s(Some(other)),
                None => String::new(),
            };
            format!("<tool_result>{content}</tool_result>")
        }
        _ => format!("[Unsupported {}]", s(get(block, "type"))),
    }
}

/// `merge_tool_messages`: tool results become `tool_result` blocks of a user turn;
/// user messages get `content_blocks` and merge into a preceding merged turn.
fn merge_tool_messages(messages: Vec<Value>) -> Result<Vec<Value>, RenderError> {
    let mut merged: Vec<Value> = Vec::with_capacity(messages.len());
    let open_user = |merged: &mut Vec<Value>, with_task_check: bool| -> Option<usize> {
        let last = merged.last()?;
        (is(last, "role", "user")
            && last.get("content_blocks").is_some()
            && (!with_task_check || get(last, "task").is_none()))
        .then(|| merged.len() - 1)
    };
    for msg in messages {
        if is(&msg, "role", "tool") {
            let block = json!({
                "type": "tool_result",
                "tool_use_id": msg.get("tool_call_id").cloned().unwrap_or_else(|| "".into()),
                "content": msg.get("content").cloned().unwrap_or_else(|| "".into()),
            });
            match open_user(&mut merged, false) {
                Some(i) => push_block(&mut merged[i], block),
                None => merged.push(json!({"role": "user", "content_blocks": [block]})),
            }
        } else if is(&msg, "role", "user") {
            let text = flatten(Some(
                msg.get("content").unwrap_or(&Value::String(String::new())),
            ))?
            .unwrap_or(Value::Null);
            let block = json!({"type": "text", "text": text});
            match open_user(&mut merged, true) {
                Some(i) => push_block(&mut merged[i], block),
                None => {
                    let mut new = Map::new();
                    new.insert("role".into(), "user".into());
                    new.insert("content".into(), text);
                    new.insert("content_blocks".into(), Value::Array(vec![block]));
                    for key in ["task", "wo_eos", "mask"] {
                        if let Some(v) = msg.get(key) {
                            new.insert(key.into(), v.clone());
                        }
                    }
                    merged.push(Value::Object(new));
                }
            }
        } else {
            merged.push(msg);
        }
    }
    Ok(merged)
}

fn push_block(msg: &mut Value, block: Value) {
    if let Some(Value::Array(blocks)) = msg.get_mut("content_blocks") {
        blocks.push(block);
    }
}

/// `sort_tool_results_by_call_order`: a turn's tool results in the order of the
/// preceding assistant's calls (a stable sort; unknown ids sort as position 0).
pub(super) fn sort_tool_results(messages: &mut [Value]) {
    let mut order: Vec<(String, usize)> = Vec::new();
    for msg in messages.iter_mut() {
        if is(msg, "role", "assistant") && truthy(get(msg, "tool_calls")) {
            order.clear();
            let calls = msg["tool_calls"].as_array().cloned().unwrap_or_default();
            for (i, call) in calls.iter().enumerate() {
                let id = get(call, "id")
                    .filter(|v| truthy(Some(v)))
                    .or_else(|| call.get("function").and_then(|f| get(f, "id")))
                    .map(|v| s(Some(v)))
                    .unwrap_or_default();
                if !id.is_empty() {
                    match order.iter_mut().find(|(k, _)| *k == id) {
                        Some(entry) => entry.1 = i,
                        None => order.push((id, i)),
                    }
                }
            }
        } else if is(msg, "role", "user")
            && let Some(Value::Array(blocks)) = msg.get_mut("content_blocks")
        {
            let positions: Vec<usize> = (0..blocks.len())
                .filter(|&i| is(&blocks[i], "type", "tool_result"))
                .collect();
            if positions.len() > 1 && !order.is_empty() {
                let mut sorted: Vec<Value> = positions.iter().map(|&i| blocks[i].clone()).collect();
                sorted.sort_by_key(|b| {
                    let id = b.get("tool_use_id").map(|v| s(Some(v))).unwrap_or_default();
                    order.iter().find(|(k, _)| *k == id).map_or(0, |(_, i)| *i)
                });
                for (&i, block) in positions.iter().zip(sorted) {
                    blocks[i] = block;
                }
            }
        }
    }
}

fn encode_messages(
    messages: Vec<Value>,
    thinking: bool,
    drop_thinking: bool,
    effort: Effort,
) -> Result<String, RenderError> {
    let mut full = merge_tool_messages(messages)?;
    sort_tool_results(&mut full);
    let drop_thinking = drop_thinking && !full.iter().any(|m| truthy(get(m, "tools")));
    if thinking && drop_thinking {
        let last_user = last_user_index(&full);
        full = drop_thinking_messages(full, last_user, &KEEP_ROLES, "reasoning");
    }
    let last_user = last_user_index(&full);
    let mut prompt = String::from(BOS);
    for index in 0..full.len() {
        prompt += &render_message(index, &full, thinking, drop_thinking, effort, last_user)?;
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_task_lists_the_valid_ones() {
        // vLLM's message lists a Python set (its order varies per process), so
        // the fixture cannot pin it; the names and the form are vLLM's.
        let error = task_suffix(&json!("nope"), false).unwrap_err().to_string();
        assert!(
            error.contains(
                "Invalid task: 'nope'. Valid tasks are: ['action', 'query', 'authority', 'domain', 'title', 'read_url']"
            ),
            "{error}"
        );
        assert_eq!(task_suffix(&json!("query"), true).unwrap(), "<｜query｜>");
        assert_eq!(
            task_suffix(&json!("action"), true).unwrap(),
            "<｜Assistant｜><think><｜action｜>"
        );
    }
}
