//! Tool definitions and `tool_choice`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool the model may call: `{"type": "function", "function": {...}}`.
///
/// Serializes as vLLM's `ChatCompletionToolsParam.model_dump()` does, which is what
/// templates receive as `tools`: `description` and `parameters` are always present
/// (null when absent), `strict` and `defer_loading` only when set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDefinition,
    /// Load the tool lazily (vLLM extension; copied into `function`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

fn function_type() -> String {
    "function".to_owned()
}

/// A function's name, description and JSON-schema parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// Function name.
    pub name: String,
    /// What the function does.
    #[serde(default)]
    pub description: Option<String>,
    /// JSON schema of the arguments.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// Strict schema adherence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Load the tool lazily.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
}

/// `tool_choice`: `"none"`, `"auto"`, `"required"`, or `{"type": "function", "function": {"name": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `none`, `auto` or `required`.
    Mode(ToolChoiceMode),
    /// Call this function.
    Named(NamedToolChoice),
}

/// The string forms of `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    /// Never call a tool.
    None,
    /// The model decides.
    Auto,
    /// The model must call at least one tool.
    Required,
}

/// `{"type": "function", "function": {"name": …}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedToolChoice {
    /// Always `function`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function to call.
    pub function: NamedFunction,
}

/// The function named by a [`NamedToolChoice`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedFunction {
    /// Function name.
    pub name: String,
}

impl Tool {
    /// The tool as templates see it (vLLM's `model_dump()`).
    pub(crate) fn template_value(&self) -> Value {
        let mut function = self.function.clone();
        if function.defer_loading.is_none() {
            function.defer_loading = self.defer_loading;
        }
        let mut tool = serde_json::Map::new();
        tool.insert("type".into(), Value::String(self.kind.clone()));
        tool.insert(
            "function".into(),
            serde_json::to_value(&function).unwrap_or(Value::Null),
        );
        if let Some(d) = self.defer_loading {
            tool.insert("defer_loading".into(), Value::Bool(d));
        }
        Value::Object(tool)
    }
}
