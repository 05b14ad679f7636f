//! The tool definitions a request offers, as parsers receive them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A function tool from the request's `tools` (OpenAI chat format).
///
/// Parsers that convert arguments by schema (e.g. `qwen3_coder` parameter types)
/// look the function up by name with [`find_tool`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The function name.
    pub name: String,
    /// The function's description, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON schema of the arguments (`{"type": "object", "properties": …}`),
    /// `Value::Null` when the request gave none.
    #[serde(default)]
    pub parameters: Value,
}

impl Tool {
    /// Read one OpenAI tool object: `{"type": "function", "function": {…}}` or the bare
    /// function object. Returns `None` for anything else (non-function tools).
    pub fn from_openai(value: &Value) -> Option<Tool> {
        let function = match value.get("type") {
            Some(Value::String(kind)) if kind == "function" => value.get("function")?,
            Some(_) => return None,
            None => value,
        };
        serde_json::from_value(function.clone()).ok()
    }

    /// The JSON-schema `properties` of the arguments, if it is an object.
    pub fn properties(&self) -> Option<&serde_json::Map<String, Value>> {
        self.parameters.get("properties")?.as_object()
    }
}

/// The tool named `name`, if the request offers it.
pub fn find_tool<'a>(tools: &'a [Tool], name: &str) -> Option<&'a Tool> {
    tools.iter().find(|tool| tool.name == name)
}
