//! Equality that also compares the order of object members.
//!
//! The tool and message caches find a request's template values by comparing it
//! with earlier requests. serde_json's `==` treats two objects with the same members
//! in a different order as equal, but templates see the order (`tojson`, `items()`),
//! so a cache hit found with `==` could render the members in the earlier request's
//! order. These comparisons walk both values in order, and are cheaper than `==`
//! (no hashing of keys).

use serde_json::{Map, Value};

use crate::openai::{ChatMessage, ContentPart, FunctionDefinition, MessageContent, Tool};

/// Same JSON, members in the same order.
pub(crate) fn json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => object(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| json(a, b))
        }
        _ => a == b,
    }
}

fn object(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && json(va, vb))
}

fn optional(a: &Option<Value>, b: &Option<Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => json(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Same tool lists.
pub(crate) fn tools(a: &[Tool], b: &[Tool]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| tool(a, b))
}

fn tool(a: &Tool, b: &Tool) -> bool {
    // Destructured so that a new field cannot be forgotten here.
    let Tool {
        kind,
        function,
        defer_loading,
    } = a;
    let FunctionDefinition {
        name,
        description,
        parameters,
        strict,
        defer_loading: function_defer_loading,
    } = function;
    *kind == b.kind
        && *defer_loading == b.defer_loading
        && *name == b.function.name
        && *description == b.function.description
        && optional(parameters, &b.function.parameters)
        && *strict == b.function.strict
        && *function_defer_loading == b.function.defer_loading
}

/// Same messages.
pub(crate) fn message(a: &ChatMessage, b: &ChatMessage) -> bool {
    let ChatMessage {
        role,
        content,
        name,
        tool_calls,
        tool_call_id,
        reasoning,
        task,
        tools,
    } = a;
    let same_content = match (content, &b.content) {
        (Some(MessageContent::Text(a)), Some(MessageContent::Text(b))) => a == b,
        (Some(MessageContent::Parts(a)), Some(MessageContent::Parts(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| part(a, b))
        }
        (None, None) => true,
        _ => false,
    };
    let same_calls = match (tool_calls, &b.tool_calls) {
        (Some(a), Some(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| json(a, b)),
        (None, None) => true,
        _ => false,
    };
    *role == b.role
        && same_content
        && *name == b.name
        && same_calls
        && *tool_call_id == b.tool_call_id
        && *reasoning == b.reasoning
        && *task == b.task
        && optional(tools, &b.tools)
}

fn part(a: &ContentPart, b: &ContentPart) -> bool {
    match (a, b) {
        (ContentPart::Str(a), ContentPart::Str(b)) => a == b,
        (
            ContentPart::Typed { kind, text, rest },
            ContentPart::Typed {
                kind: kind_b,
                text: text_b,
                rest: rest_b,
            },
        ) => kind == kind_b && text == text_b && object(rest, rest_b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::openai::{ChatMessage, Tool};

    #[test]
    fn member_order_matters() {
        let (ab, ba) = (
            json!({"a": 1, "b": [{"x": 1, "y": 2}]}),
            json!({"b": [{"x": 1, "y": 2}], "a": 1}),
        );
        assert_eq!(ab, ba, "serde_json's == ignores order");
        assert!(!super::json(&ab, &ba));
        assert!(super::json(&ab, &ab.clone()));
        let inner = json!({"a": 1, "b": [{"y": 2, "x": 1}]});
        assert!(!super::json(&ab, &inner));

        let tool = |params: serde_json::Value| -> Tool {
            serde_json::from_value(
                json!({"type": "function", "function": {"name": "f", "parameters": params}}),
            )
            .unwrap()
        };
        assert!(super::tools(&[tool(ab.clone())], &[tool(ab.clone())]));
        assert!(!super::tools(&[tool(ab.clone())], &[tool(ba.clone())]));

        let call = |args: serde_json::Value| -> ChatMessage {
            serde_json::from_value(json!({"role": "assistant", "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": args}}
            ]}))
            .unwrap()
        };
        assert!(super::message(&call(ab.clone()), &call(ab.clone())));
        assert!(!super::message(&call(ab), &call(ba)));
    }
}
