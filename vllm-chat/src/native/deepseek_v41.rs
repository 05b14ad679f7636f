//! DeepSeek-V4.1's prompt encoder: a port of vLLM 0.33.0's
//! `vllm/tokenizers/deepseek_v41_encoding.py` and of `_normalize_messages` and
//! `apply_chat_template` in `vllm/tokenizers/deepseek_v41.py`.
//!
//! Unlike V3.2 and V4, V4.1 encodes the request's own messages, not vLLM's
//! conversation: content parts are joined with `"\n\n"`, tool-call arguments stay
//! JSON strings (decoded here, twice if need be, or wrapped as `{"arguments": …}`).
//! Other differences from V4: a `<｜System｜>` token opens the prompt when there is a
//! reasoning-effort line (a number from 1 to 100) or a leading system message;
//! mid-conversation system messages count as user turns; the DSML tags are
//! ` calls` / ` invoke` / ` parameter`; reasoning is read from `reasoning_content`.
//!
//! Messages are rebuilt from the typed request (`role`, `content`, `name`,
//! `tool_calls`, `tool_call_id`, `reasoning`, `task`, `tools`), so the `repr` of a
//! message quoted in an error lists those keys in that order; vLLM quotes the keys
//! the client sent, in the client's order.

use serde_json::{Map, Value, json};

use super::deepseek_v4::{
    ASSISTANT, KEEP_ROLES, LATEST_REMINDER, RESPONSE_FORMAT, USER, sort_tool_results, task_suffix,
    user_block,
};
use super::deepseek_v32::{
    BOS, DSML, EOS, THINK_END, THINK_START, drop_thinking_messages, tools_from_openai_format,
};
use super::py::{self, get, is, or_empty, repr, s, to_json, truthy};
use crate::RenderError;
use crate::kwargs::Kwargs;
use crate::openai::{ChatMessage, ContentPart, MessageContent};

const SYSTEM: &str = "<｜System｜>";
const IMAGE_PLACEHOLDER: &str = "<｜deepseek_image｜>";
/// `REASONING_EFFORT_MAPPINGS`.
const EFFORTS: [(&str, i64); 4] = [("low", 50), ("high", 75), ("xhigh", 75), ("max", 100)];

const TOOLS_TEMPLATE: &str = "## Tools

You have access to a set of tools to help answer the user's question. You can invoke tools by writing a \"<｜DSML｜ calls>\" block like the following:

<｜DSML｜ calls>
<｜DSML｜ invoke name=\"$TOOL_NAME\">
<｜DSML｜ parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜ parameter>
...
</｜DSML｜ invoke>
<｜DSML｜ invoke name=\"$TOOL_NAME2\">
...
</｜DSML｜ invoke>
</｜DSML｜ calls>

String parameters should be specified as is and set `string=\"true\"`. For all other types (numbers, booleans, arrays, objects), pass the value in JSON format and set `string=\"false\"`.

If thinking_mode is enabled (triggered by <think>), you MUST output your complete reasoning inside <think>...</think> BEFORE any tool calls or final response.

Otherwise, output directly after </think> with tool calls or final response.

### Available Tool Schemas

{tool_schemas}

You MUST strictly follow the above defined tool name and parameter schemas to invoke tool calls.
";

/// `DeepseekV41Tokenizer.apply_chat_template(messages, tools=…, **kwargs)` with
/// `tokenize=False`: the prompt text.
pub(crate) fn render(
    messages: &[ChatMessage],
    tools: Option<&Value>,
    kwargs: &Kwargs,
) -> Result<String, RenderError> {
    let mut conversation = normalize_messages(messages)?;
    if let Some(tools) = tools.filter(|t| truthy(Some(t))) {
        match conversation.iter().position(|m| is(m, "role", "system")) {
            Some(i) => {
                if let Value::Object(map) = &mut conversation[i] {
                    map.insert("tools".into(), tools.clone());
                }
            }
            None => {
                conversation.insert(0, json!({"role": "system", "content": "", "tools": tools}))
            }
        }
    }
    let mut thinking = truthy(kwargs.get("thinking")) || truthy(kwargs.get("enable_thinking"));
    if !kwargs.contains_key("thinking") && !kwargs.contains_key("enable_thinking") {
        thinking = true;
    }
    let budget = match kwargs.get("reasoning_effort").filter(|v| !v.is_null()) {
        None => 75,
        Some(Value::String(e)) if e == "none" => {
            thinking = false;
            75
        }
        Some(Value::String(e)) => match EFFORTS.iter().find(|(name, _)| name == e) {
            Some((_, budget)) => *budget,
            None => return Err(bad_effort()),
        },
        Some(Value::Number(n)) => match n.as_i64() {
            Some(b) if n.is_i64() && (1..=100).contains(&b) => b,
            _ => return Err(bad_effort()),
        },
        Some(_) => return Err(bad_effort()),
    };
    let drop_thinking = kwargs.get("drop_thinking").is_none_or(|v| truthy(Some(v)));
    encode_messages(conversation, thinking, drop_thinking, budget)
}

fn bad_effort() -> RenderError {
    py::error(
        "DeepSeek V4.1 reasoning_effort must be low, high, xhigh, max, or an integer within [1, 100] in chat_template_kwargs",
    )
}

/// `_normalize_messages`: the request's messages as dicts, content parts joined with
/// `"\n\n"`, `reasoning` copied to `reasoning_content`, the image placeholder refused
/// in text.
fn normalize_messages(messages: &[ChatMessage]) -> Result<Vec<Value>, RenderError> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        if !["system", "developer", "user", "assistant", "tool"].contains(&message.role.as_str()) {
            return Err(py::error(format!("Invalid role: {}", message.role)));
        }
        if let Some(reasoning) = &message.reasoning {
            reject_placeholder(reasoning)?;
        }
        let mut map = Map::new();
        map.insert("role".into(), message.role.clone().into());
        let content = match &message.content {
            None => None,
            Some(MessageContent::Text(text)) => {
                reject_placeholder(text)?;
                Some(Value::String(text.clone()))
            }
            Some(MessageContent::Parts(parts)) => {
                let mut texts = Vec::with_capacity(parts.len());
                for part in parts {
                    let (kind, text) = match part {
                        ContentPart::Str(_) => {
                            return Err(py::error("'str' object has no attribute 'get'"));
                        }
                        ContentPart::Typed { kind, text, .. } => (kind.as_str(), text),
                    };
                    match kind {
                        "text" | "input_text" | "output_text" => {
                            let text = text.clone().unwrap_or_default();
                            reject_placeholder(&text)?;
                            texts.push(text);
                        }
                        other => {
                            return Err(py::error(format!(
                                "DeepSeek V4.1 supports text and image content only; got {}",
                                repr(&Value::String(other.into()))
                            )));
                        }
                    }
                }
                Some(Value::String(texts.join("\n\n")))
            }
        };
        if let Some(content) = content {
            map.insert("content".into(), content);
        }
        if let Some(name) = &message.name {
            map.insert("name".into(), name.clone().into());
        }
        if let Some(calls) = &message.tool_calls {
            map.insert("tool_calls".into(), Value::Array(calls.clone()));
        }
        if let Some(id) = &message.tool_call_id {
            map.insert("tool_call_id".into(), id.clone().into());
        }
        if let Some(reasoning) = &message.reasoning {
            map.insert("reasoning".into(), reasoning.clone().into());
        }
        if let Some(task) = &message.task {
            map.insert("task".into(), task.clone().into());
        }
        if let Some(tools) = &message.tools {
            map.insert("tools".into(), tools.clone());
        }
        map.insert("_image_indices".into(), json!([]));
        if let Some(reasoning) = &message.reasoning {
            map.insert("reasoning_content".into(), reasoning.clone().into());
        }
        out.push(Value::Object(map));
    }
    Ok(out)
}

fn reject_placeholder(text: &str) -> Result<(), RenderError> {
    if text.contains(IMAGE_PLACEHOLDER) {
        return Err(py::error(format!(
            "Message text contains image special token '{IMAGE_PLACEHOLDER}'; provide images as image content parts."
        )));
    }
    Ok(())
}

/// V4.1's `encode_arguments_to_dsml`.
fn arguments_to_dsml(arguments: &Value) -> String {
    let mut decoded = arguments.clone();
    if !decoded.is_object() {
        for _ in 0..2 {
            match &decoded {
                Value::String(text) => match serde_json::from_str::<Value>(text) {
                    Ok(v) => decoded = v,
                    Err(_) => break,
                },
                _ => break,
            }
        }
        if !decoded.is_object() {
            decoded = json!({"arguments": arguments});
        }
    }
    let map = decoded.as_object().cloned().unwrap_or_default();
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let (is_str, value) = match v {
                Value::String(text) => ("true", text.clone()),
                other => ("false", to_json(other)),
            };
            format!("<{DSML} parameter name=\"{k}\" string=\"{is_str}\">{value}</{DSML} parameter>")
        })
        .collect();
    parts.join("\n")
}

fn render_tools(tools: &[Value]) -> String {
    let schemas: Vec<String> = tools.iter().map(to_json).collect();
    TOOLS_TEMPLATE.replace("{tool_schemas}", &schemas.join("\n"))
}

/// V4.1's `find_last_user_index`: mid-conversation system messages count; user
/// turns holding only tool results do not.
fn last_user_index(messages: &[Value]) -> isize {
    for (i, msg) in messages.iter().enumerate().rev() {
        let user_like = is(msg, "role", "user")
            || is(msg, "role", "developer")
            || (is(msg, "role", "system") && i > 0);
        if !user_like {
            continue;
        }
        if let Some(Value::Array(blocks)) = get(msg, "content_blocks")
            && !blocks.is_empty()
            && !blocks.iter().any(|b| {
                ["text", "image", "image_url"]
                    .iter()
                    .any(|t| is(b, "type", t))
            })
        {
            continue;
        }
        return i as isize;
    }
    -1
}

fn render_message(
    index: usize,
    messages: &[Value],
    thinking: bool,
    drop_thinking: bool,
    budget: i64,
) -> Result<String, RenderError> {
    let Some(msg) = messages.get(index) else {
        return Err(py::error(""));
    };
    let last_user = last_user_index(messages);
    let role = get(msg, "role").and_then(Value::as_str);
    let content = get(msg, "content");
    let tools = get(msg, "tools")
        .filter(|t| truthy(Some(t)))
        .map(tools_from_openai_format)
        .transpose()?;
    let response_format = get(msg, "response_format").filter(|r| truthy(Some(r)));
    let tool_calls = get(msg, "tool_calls").filter(|t| truthy(Some(t)));
    let index_i = index as isize;

    let effort_prompt = if index == 0 && thinking {
        format!(
            "Reasoning Effort: {budget} (range 1-100, the higher the value, the more thorough the reasoning)\n\n"
        )
    } else {
        String::new()
    };
    let mut prompt = String::new();
    if index == 0 && (!effort_prompt.is_empty() || role == Some("system")) {
        prompt += SYSTEM;
    }
    prompt += &effort_prompt;
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
            if index > 0 {
                prompt += SYSTEM;
            }
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
                "deepseek_v41 merges tool messages into user; please preprocess with merge_tool_messages()",
            ));
        }
        Some("assistant") => {
            let mut calls_text = String::new();
            if let Some(calls) = tool_calls {
                let calls = calls.as_array().map(Vec::as_slice).unwrap_or_default();
                let mut rendered = Vec::with_capacity(calls.len());
                for call in calls {
                    let function = call
                        .get("function")
                        .ok_or_else(|| py::key_error("function"))?;
                    let name = function.get("name").ok_or_else(|| py::key_error("name"))?;
                    let arguments = function
                        .get("arguments")
                        .ok_or_else(|| py::key_error("arguments"))?;
                    rendered.push(format!(
                        "<{DSML} invoke name=\"{}\">\n{}\n</{DSML} invoke>",
                        s(Some(name)),
                        arguments_to_dsml(arguments)
                    ));
                }
                calls_text = format!(
                    "\n\n<{DSML} calls>\n{}\n</{DSML} calls>",
                    rendered.join("\n")
                );
            }
            let summary = or_empty(content);
            let reasoning = or_empty(get(msg, "reasoning_content"));
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
            return Err(py::error(format!("Unknown role: {}", s(get(msg, "role")))));
        }
    }

    if let Some(next) = messages.get(index + 1)
        && !(is(next, "role", "assistant") || is(next, "role", "latest_reminder"))
    {
        return Ok(prompt);
    }
    if let Some(task) = get(msg, "task") {
        prompt += &task_suffix(task, thinking)?;
    } else if matches!(role, Some("user" | "developer")) || (role == Some("system") && index > 0) {
        prompt += ASSISTANT;
        prompt += if thinking && (!drop_thinking || index_i >= last_user) {
            THINK_START
        } else {
            THINK_END
        };
    }
    Ok(prompt)
}

/// V4.1's `merge_tool_messages`: like V4's, but a user message keeps all its keys
/// and its text is not re-flattened.
fn merge_tool_messages(messages: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(messages.len());
    for mut msg in messages {
        let open = merged
            .last()
            .is_some_and(|last| is(last, "role", "user") && last.get("content_blocks").is_some());
        if is(&msg, "role", "tool") {
            let block = json!({
                "type": "tool_result",
                "tool_use_id": msg.get("tool_call_id").cloned().unwrap_or_else(|| "".into()),
                "content": msg.get("content").cloned().unwrap_or_else(|| "".into()),
                "_image_indices": msg.get("_image_indices").cloned().unwrap_or_else(|| json!([])),
            });
            match merged.last_mut().filter(|_| open) {
                Some(last) => push_blocks(last, vec![block]),
                None => merged.push(json!({"role": "user", "content_blocks": [block]})),
            }
        } else if is(&msg, "role", "user") {
            let blocks = match msg.get("content_blocks").filter(|b| !b.is_null()) {
                Some(Value::Array(blocks)) => blocks.clone(),
                Some(other) => vec![other.clone()],
                None => vec![json!({
                    "type": "text",
                    "text": msg.get("content").cloned().unwrap_or_else(|| "".into()),
                    "_image_indices": msg.get("_image_indices").cloned().unwrap_or_else(|| json!([])),
                })],
            };
            let no_task = merged
                .last()
                .is_some_and(|last| get(last, "task").is_none());
            match merged.last_mut().filter(|_| open && no_task) {
                Some(last) => push_blocks(last, blocks),
                None => {
                    if let Value::Object(map) = &mut msg {
                        map.insert("content_blocks".into(), Value::Array(blocks));
                    }
                    merged.push(msg);
                }
            }
        } else {
            merged.push(msg);
        }
    }
    merged
}

fn push_blocks(msg: &mut Value, new: Vec<Value>) {
    if let Some(Value::Array(blocks)) = msg.get_mut("content_blocks") {
        blocks.extend(new);
    }
}

fn encode_messages(
    messages: Vec<Value>,
    thinking: bool,
    drop_thinking: bool,
    budget: i64,
) -> Result<String, RenderError> {
    let mut full = merge_tool_messages(messages);
    sort_tool_results(&mut full);
    let drop_thinking = drop_thinking && !full.iter().any(|m| truthy(get(m, "tools")));
    if thinking && drop_thinking {
        // V4.1 drops `reasoning_content`.
        let last_user = last_user_index(&full);
        full = drop_thinking_messages(full, last_user, &KEEP_ROLES, "reasoning_content");
    }
    let mut prompt = String::from(BOS);
    for index in 0..full.len() {
        prompt += &render_message(index, &full, thinking, drop_thinking, budget)?;
    }
    Ok(prompt)
}
