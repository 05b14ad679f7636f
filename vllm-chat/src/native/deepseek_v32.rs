//! DeepSeek-V3.2's prompt encoder: a port of vLLM 0.33.0's
//! `vllm/tokenizers/deepseek_v32_encoding.py` (DeepSeek's `encoding_dsv32.py`) and of
//! the `apply_chat_template` that `vllm/tokenizers/deepseek_v32.py` wraps around it.
//!
//! The model has no usable chat template; vLLM builds the prompt text in Python
//! (`<｜User｜>…<｜Assistant｜>`, `<think>` / `</think>` by thinking mode, tools as
//! DSML `function_calls` blocks) and tokenizes it without special tokens. The
//! conversation is vLLM's (`content_format="string"`), so content parts arrive joined
//! with `"\n"`. Error messages are the encoder's, word for word (they quote
//! messages with Python's `repr`).

use serde_json::{Map, Value};

use super::py::{self, get, is, or_empty, repr, s, to_json, truthy, type_name};
use crate::RenderError;
use crate::kwargs::Kwargs;

pub(super) const BOS: &str = "<｜begin▁of▁sentence｜>";
pub(super) const EOS: &str = "<｜end▁of▁sentence｜>";
pub(super) const THINK_START: &str = "<think>";
pub(super) const THINK_END: &str = "</think>";
pub(super) const DSML: &str = "｜DSML｜";

const TOOLS_TEMPLATE: &str = "## Tools
You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a \"<｜DSML｜function_calls>\" block like the following as part of your reply to the user:
<｜DSML｜function_calls>
<｜DSML｜invoke name=\"$FUNCTION_NAME\">
<｜DSML｜parameter name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE</｜DSML｜parameter>
...
</｜DSML｜invoke>
<｜DSML｜invoke name=\"$FUNCTION_NAME2\">
...
</｜DSML｜invoke>
</｜DSML｜function_calls>
String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. The \"string\" attribute should be set to \"true\" for string type parameters and \"false\" for other types (numbers, booleans, arrays, objects).
If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:
<｜DSML｜function_calls>
...
</｜DSML｜function_calls>
<function_results>
...
</function_results>
<think>...thinking about results</think>
Here are the functions available in JSONSchema format:
<functions>
{tool_schemas}
</functions>
";

const RESPONSE_FORMAT: &str =
    "## Response Format:\n\nYou MUST strictly adhere to the following schema to reply:\n";

/// `DeepseekV32Tokenizer.apply_chat_template(conversation, tools=…, **kwargs)` with
/// `tokenize=False`: the prompt text.
pub(crate) fn render(
    conversation: Vec<Value>,
    tools: Option<&Value>,
    kwargs: &Kwargs,
) -> Result<String, RenderError> {
    let thinking = truthy(kwargs.get("thinking")) || truthy(kwargs.get("enable_thinking"));
    let mut messages = conversation;
    if let Some(tools) = tools.filter(|t| truthy(Some(t))) {
        let mut system = Map::new();
        system.insert("role".into(), "system".into());
        system.insert("tools".into(), tools.clone());
        messages.insert(0, Value::Object(system));
    }
    let last = messages
        .last()
        .ok_or_else(|| py::error("list index out of range"))?;
    let drop_thinking = is(last, "role", "user");
    encode_messages(messages, thinking, drop_thinking)
}

/// `tools_from_openai_format`: each tool's `function`.
pub(super) fn tools_from_openai_format(tools: &Value) -> Result<Vec<Value>, RenderError> {
    let Value::Array(list) = tools else {
        return Err(py::error(format!(
            "'{}' object is not iterable",
            type_name(tools)
        )));
    };
    list.iter()
        .map(|t| {
            t.get("function")
                .cloned()
                .ok_or_else(|| py::key_error("function"))
        })
        .collect()
}

/// A tool call's `(name, arguments)` from its OpenAI form.
pub(super) fn tool_call_parts(call: &Value) -> Result<(Value, Value), RenderError> {
    let function = call
        .get("function")
        .ok_or_else(|| py::key_error("function"))?;
    let name = function
        .get("name")
        .cloned()
        .ok_or_else(|| py::key_error("name"))?;
    let arguments = function
        .get("arguments")
        .cloned()
        .ok_or_else(|| py::key_error("arguments"))?;
    Ok((name, arguments))
}

/// `encode_arguments_to_dsml` of V3.2 and V4 (`tag` is `parameter`).
pub(super) fn arguments_to_dsml(arguments: &Value, tag: &str) -> Result<String, RenderError> {
    let parsed;
    let arguments = match arguments {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text)
                .map_err(|e| py::error(format!("JSONDecodeError: {e}")))?;
            &parsed
        }
        other => other,
    };
    let Value::Object(map) = arguments else {
        return Err(py::error(format!(
            "'{}' object has no attribute 'items'",
            type_name(arguments)
        )));
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let (is_str, value) = match v {
                Value::String(text) => ("true", text.clone()),
                other => ("false", to_json(other)),
            };
            format!("<{DSML}{tag} name=\"{k}\" string=\"{is_str}\">{value}</{DSML}{tag}>")
        })
        .collect();
    Ok(parts.join("\n"))
}

fn render_tools(tools: &[Value]) -> String {
    let schemas: Vec<String> = tools.iter().map(to_json).collect();
    TOOLS_TEMPLATE.replace("{tool_schemas}", &schemas.join("\n"))
}

/// `find_last_user_index`: the last `user` or `developer` message, or -1.
pub(super) fn last_user_index(messages: &[Value]) -> isize {
    messages
        .iter()
        .rposition(|m| is(m, "role", "user") || is(m, "role", "developer"))
        .map_or(-1, |i| i as isize)
}

fn render_message(
    index: usize,
    messages: &[Value],
    thinking: bool,
    last_user: isize,
) -> Result<String, RenderError> {
    let Some(msg) = messages.get(index) else {
        return Err(py::error(format!(
            "Index {index} out of range for messages list of length {}",
            messages.len()
        )));
    };
    let mut prompt = String::new();
    let role = get(msg, "role");
    let content = get(msg, "content");
    let tools = get(msg, "tools")
        .filter(|t| truthy(Some(t)))
        .map(tools_from_openai_format)
        .transpose()?;
    let response_format = get(msg, "response_format").filter(|r| truthy(Some(r)));
    let tool_calls = get(msg, "tool_calls").filter(|t| truthy(Some(t)));
    let reasoning = get(msg, "reasoning");
    let is_prefix = truthy(get(msg, "prefix"));
    let index_i = index as isize;

    match role.and_then(Value::as_str) {
        Some("system") => {
            prompt += &or_empty(content);
            if let Some(tools) = &tools {
                prompt += "\n\n";
                prompt += &render_tools(tools);
            }
            if let Some(format) = response_format {
                prompt += "\n\n";
                prompt += RESPONSE_FORMAT;
                prompt += &to_json(format);
            }
        }
        Some("developer") => {
            if !truthy(content) {
                return Err(py::error(format!(
                    "Invalid message for role `developer`: {}",
                    repr(msg)
                )));
            }
            let mut developer = String::new();
            if let Some(tools) = &tools {
                developer += "\n\n";
                developer += &render_tools(tools);
            }
            if let Some(format) = response_format {
                developer += "\n\n";
                developer += RESPONSE_FORMAT;
                developer += &to_json(format);
            }
            developer += "\n\n# The user's message is: ";
            developer += &s(content);
            prompt += &format!("<｜User｜>{developer}<｜Assistant｜>");
            prompt += if index_i == last_user && thinking {
                THINK_START
            } else {
                THINK_END
            };
        }
        Some("user") => {
            prompt += &format!("<｜User｜>{}<｜Assistant｜>", s(content));
            prompt += if index_i == last_user && thinking {
                THINK_START
            } else {
                THINK_END
            };
        }
        Some("tool") => {
            let mut prev = index_i - 1;
            let mut assistant = py::at(messages, prev);
            while prev >= 0 && assistant.is_some_and(|m| is(m, "role", "tool")) {
                prev -= 1;
                assistant = py::at(messages, prev);
            }
            let assistant = assistant.unwrap_or(&Value::Null);
            if !(index == 0 || prev >= 0 && is(assistant, "role", "assistant")) {
                return Err(py::error(format!(
                    "Invalid messages at {index}:\n{}",
                    repr(assistant)
                )));
            }
            let order = index_i - prev;
            let calls = assistant
                .get("tool_calls")
                .and_then(Value::as_array)
                .filter(|c| !c.is_empty());
            let Some(calls) = calls.filter(|c| c.len() as isize >= order) else {
                return Err(py::error("No tool calls but found tool output"));
            };
            if order == 1 {
                prompt += "\n\n<function_results>";
            }
            prompt += &format!("\n<result>{}</result>", s(content));
            if order == calls.len() as isize {
                prompt += "\n</function_results>";
                prompt += if index_i >= last_user && thinking {
                    "\n\n<think>"
                } else {
                    "\n\n</think>"
                };
            }
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
                        s(Some(&name).filter(|n| !n.is_null())),
                        arguments_to_dsml(&arguments, "parameter")?
                    ));
                }
                calls_text = format!(
                    "\n\n<{DSML}function_calls>\n{}\n</{DSML}function_calls>",
                    rendered.join("\n")
                );
            }
            let summary = or_empty(content);
            let mut thinking_part = String::new();
            if thinking && index_i > last_user {
                if !(truthy(reasoning) || tool_calls.is_some()) {
                    return Err(py::error(format!(
                        "ThinkingMode: thinking, invalid message without reasoning/tool_calls `{}` after last user message",
                        repr(msg)
                    )));
                }
                thinking_part = or_empty(reasoning) + THINK_END;
            }
            if tool_calls.is_none() && is_prefix {
                prompt += &summary;
            } else {
                prompt += &format!("{thinking_part}{summary}{calls_text}{EOS}");
            }
        }
        _ => return Err(py::error(format!("Invalid role: {}", s(role)))),
    }
    Ok(prompt)
}

/// `drop_thinking_messages` (V3.2, V4, V4.1): before the last user message,
/// assistant turns lose their reasoning (`reasoning_key`) and messages of roles
/// other than `keep_roles` and assistant are dropped.
pub(super) fn drop_thinking_messages(
    messages: Vec<Value>,
    last_user: isize,
    keep_roles: &[&str],
    reasoning_key: &str,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    for (i, mut msg) in messages.into_iter().enumerate() {
        if keep_roles.iter().any(|r| is(&msg, "role", r)) || i as isize >= last_user {
            out.push(msg);
        } else if is(&msg, "role", "assistant") {
            if let Value::Object(map) = &mut msg {
                map.shift_remove(reasoning_key);
            }
            out.push(msg);
        }
    }
    out
}

fn encode_messages(
    messages: Vec<Value>,
    thinking: bool,
    drop_thinking: bool,
) -> Result<String, RenderError> {
    let count = messages.len();
    let mut full = messages;
    if thinking && drop_thinking {
        let last_user = last_user_index(&full);
        full = drop_thinking_messages(full, last_user, &["user", "system", "tool"], "reasoning");
    }
    let last_user = last_user_index(&full);
    let mut prompt = String::from(BOS);
    for index in 0..count {
        prompt += &render_message(index, &full, thinking, last_user)?;
    }
    Ok(prompt)
}
