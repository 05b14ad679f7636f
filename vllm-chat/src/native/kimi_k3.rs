//! Kimi-K3's renderer: a port of vLLM 0.33.0's `vllm/renderers/kimi_k3.py`.
//!
//! K3 renders through its tokenizer's `apply_chat_template` (the chat template
//! here), but vLLM prepares the call differently from the plain `hf` path: the
//! conversation is always `content_format="string"`, developer messages stay
//! developer messages, each block of tool results is reordered to the calling
//! assistant's call order and tagged with `tool`/`index`, `enable_thinking` and
//! `reasoning_effort` become K3's `thinking`/`thinking_effort`, `tool_choice` and
//! `response_format` are template variables, and the prompt is tokenized right away
//! (so the request's `add_special_tokens` does not apply).

use serde_json::Value;

use crate::RenderError;
use crate::kwargs::Kwargs;
use crate::openai::{ChatCompletionRequest, ToolChoice, ToolChoiceMode};

/// `_K3_THINKING_EFFORTS`.
const EFFORTS: [&str; 3] = ["low", "high", "max"];

/// `_apply_k3_thinking_kwargs`, then the `tool_choice` / `response_format` kwargs of
/// `KimiK3Renderer._apply_chat_template`.
pub(crate) fn adjust_kwargs(
    kwargs: &mut Kwargs,
    request: &ChatCompletionRequest,
) -> Result<(), RenderError> {
    if let Some(enable) = kwargs.remove("enable_thinking").filter(|v| !v.is_null())
        && !kwargs.contains_key("thinking")
    {
        kwargs.insert("thinking", enable);
    }
    let effort = kwargs.remove("reasoning_effort").filter(|v| !v.is_null());
    let (key, value) = match effort {
        Some(Value::String(s)) if s == "none" => ("thinking", Some(Value::Bool(false))),
        other => ("thinking_effort", other),
    };
    if let Some(value) = value
        && !kwargs.contains_key(key)
    {
        kwargs.insert(key, value);
    }
    if let Some(effort) = kwargs.get("thinking_effort").filter(|v| !v.is_null())
        && !effort.as_str().is_some_and(|e| EFFORTS.contains(&e))
    {
        return Err(RenderError::validation(
            format!(
                "Kimi K3 supports thinking_effort values: {}",
                EFFORTS.join(", ")
            ),
            Some("thinking_effort"),
            Some(crate::python::str_of(effort)),
        ));
    }
    // `build_chat_params`: tool_choice only when the request has tools.
    let tool_choice = match (&request.tools, &request.tool_choice) {
        (Some(_), Some(ToolChoice::Mode(ToolChoiceMode::Auto))) | (None, _) | (_, None) => None,
        (Some(_), Some(choice)) => serde_json::to_value(choice).ok().map(drop_nulls),
    };
    if let Some(choice) = tool_choice {
        kwargs.insert("tool_choice", choice);
    }
    if let Some(format) = &request.response_format {
        kwargs.insert("response_format", drop_nulls(format.clone()));
    }
    Ok(())
}

/// `model_dump(exclude_none=True)`.
fn drop_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(drop_nulls).collect()),
        other => other,
    }
}

/// `_normalize_k3_tool_messages`: each block of tool messages after an assistant's
/// `tool_calls` in call order, tagged `tool` (the function name) and `index` (its
/// 1-based position), when every message of the block names a call (by id or by the
/// `"{name}:{position}"` alias); otherwise the block stays as it is.
pub(crate) fn normalize_tool_messages(conversation: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::with_capacity(conversation.len());
    let mut i = 0;
    while i < conversation.len() {
        let message = &conversation[i];
        out.push(message.clone());
        i += 1;
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        let Some(calls) = message
            .get("tool_calls")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
        else {
            continue;
        };
        let mut targets: Vec<(String, (usize, String))> = Vec::new();
        for (position, call) in calls.iter().enumerate() {
            let Some(Value::Object(function)) = call.get("function") else {
                continue;
            };
            let Some(name) = function
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            else {
                continue;
            };
            let mut aliases = vec![format!("{name}:{position}")];
            if let Some(id) = call
                .get("id")
                .filter(|v| crate::native::py::truthy(Some(v)))
            {
                aliases.insert(0, crate::python::str_of(id));
            }
            for alias in aliases {
                if !targets.iter().any(|(a, _)| *a == alias) {
                    targets.push((alias, (position, name.to_owned())));
                }
            }
        }
        let start = i;
        while i < conversation.len()
            && conversation[i].get("role").and_then(Value::as_str) == Some("tool")
        {
            i += 1;
        }
        if i == start {
            continue;
        }
        let mut resolved = Vec::with_capacity(i - start);
        let mut complete = true;
        for (order, tool) in conversation[start..i].iter().enumerate() {
            let target = tool
                .get("tool_call_id")
                .filter(|v| !v.is_null())
                .map(crate::python::str_of)
                .and_then(|id| targets.iter().find(|(a, _)| *a == id));
            let Some((_, (position, name))) = target else {
                complete = false;
                break;
            };
            let mut enriched = tool.clone();
            if let Value::Object(map) = &mut enriched {
                map.insert("tool".into(), Value::String(name.clone()));
                map.insert("index".into(), Value::from(position + 1));
            }
            resolved.push((*position, order, enriched));
        }
        if complete {
            resolved.sort_by_key(|(position, order, _)| (*position, *order));
            out.extend(resolved.into_iter().map(|(_, _, m)| m));
        } else {
            out.extend(conversation[start..i].iter().cloned());
        }
    }
    out
}
