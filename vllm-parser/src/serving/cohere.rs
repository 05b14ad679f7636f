//! The structural tag vLLM 0.33.0's `CohereCommandParser._apply_structural_tags`
//! (`vllm/parser/cohere_command.py`) puts on a request, for the parser class
//! vLLM composes when `cohere_command3` / `cohere_command4` is the reasoning or
//! the tool parser.
//!
//! It needs the model's architecture (`model_config.architecture`, the first
//! of `config.json`'s `architectures`): without it vLLM leaves the request
//! alone; with one it does not know (`MODEL_TO_TAG_STYLE`) a request with a
//! JSON output format or tools is refused. Otherwise a `response_format` of
//! type `json_schema` / `json_object` becomes one `triggered_tags` tag per
//! JSON wrapper of the architecture, and the request's tools one tag whose
//! content is an EBNF grammar of the calls ([`super::cohere_tools_grammar`]).
//! That grammar embeds xgrammar 0.2.8's JSON-schema-to-EBNF text per tool,
//! which this crate reproduces for a subset of JSON Schema
//! ([`super::json_schema_grammar`]): the tag is the exact string when every
//! tool is inside it, `None` (the request unconstrained) otherwise, and a tool
//! schema nested too deeply is vLLM's 400 (`tests/structural_tags.rs`,
//! `tests/cohere_tool_grammars.rs`).

use serde_json::{Map, Value, json};

use super::ServingRequest;
use super::cohere_tools::{ToolGrammarError, cohere_tools_grammar};
use super::structural_tag::dumps_python;

/// One `CohereTagRegistry`: the trigger (the tag's `begin`) and its `end`.
type TagPair = (&'static str, &'static str);

const RESPONSE_TAG: TagPair = ("<|START_RESPONSE|>", "<|END_RESPONSE|>");
const TEXT_TAG: TagPair = ("<|START_TEXT|>", "<|END_TEXT|>");
/// `COMMAND_A_TOOLS_TAG`, every architecture's tool-call wrapper.
const TOOLS_TAG: TagPair = ("<|START_ACTION|>", "<|END_ACTION|>");

/// `MODEL_TO_TAG_STYLE`: the JSON wrappers of each architecture (every one
/// wraps tool calls in [`TOOLS_TAG`]).
fn json_tags(architecture: &str) -> Option<&'static [TagPair]> {
    match architecture {
        "Cohere2ForCausalLM" => Some(&[RESPONSE_TAG]),
        "Cohere2VisionForConditionalGeneration" | "Cohere2MoeForCausalLM" => {
            Some(&[RESPONSE_TAG, TEXT_TAG])
        }
        _ => None,
    }
}

/// What `_apply_structural_tags` does with a request.
#[derive(Debug, PartialEq)]
pub(crate) enum CohereTag {
    /// The request is left alone.
    Unchanged,
    /// A structural tag: its exact JSON, or `None` when it holds a tools
    /// grammar outside the converted subset (or a `structured_outputs` this
    /// crate does not see).
    Tag(Option<String>),
    /// vLLM's 400 message.
    Refused(String),
    /// vLLM fails the request (a 500): xgrammar refuses a tool's schema.
    Failed(String),
}

/// `_apply_structural_tags` for `request` on a model of `architecture`
/// (`None`: vLLM's `model_config` has none, and the request is left alone).
pub(crate) fn apply(architecture: Option<&str>, request: &ServingRequest) -> CohereTag {
    let response_format = request.response_format;
    let format_type = response_format
        .and_then(|rf| rf.get("type"))
        .and_then(Value::as_str);
    if format_type == Some("structural_tag") {
        return CohereTag::Unchanged;
    }
    // `structured_outputs` given directly (not a `response_format`): its kind
    // is not part of `ServingRequest`.
    let unseen_structured_outputs = request.response_format_set && response_format.is_none();
    let schema = response_format.and_then(schema_from_response_format);
    if schema.is_none() && !request.has_tools() && !unseen_structured_outputs {
        return CohereTag::Unchanged;
    }
    let Some(architecture) = architecture else {
        return CohereTag::Unchanged;
    };
    let Some(wrappers) = json_tags(architecture) else {
        return CohereTag::Refused(format!(
            "Failed to build structural_tag guided decoding constraints from this request's \
             JSON schema and/or tools. The configured model architecture ({}) does not \
             support Cohere command structural tags, or the schema cannot be expressed in \
             that format.",
            super::py_repr(&Value::from(architecture))
        ));
    };
    if unseen_structured_outputs {
        return CohereTag::Tag(None);
    }
    let mut tags: Vec<Value> = Vec::new();
    let mut triggers: Vec<&str> = Vec::new();
    if let Some(schema) = &schema {
        for (begin, end) in wrappers {
            tags.push(json!({
                "begin": begin,
                "content": {"type": "json_schema", "json_schema": schema},
                "end": end,
            }));
            triggers.push(begin);
        }
    }
    if let Some(tools) = request.tools.filter(|tools| !tools.is_empty()) {
        match cohere_tools_grammar(tools) {
            Ok(grammar) => {
                tags.push(json!({
                    "begin": TOOLS_TAG.0,
                    "content": {"type": "grammar", "grammar": grammar},
                    "end": TOOLS_TAG.1,
                }));
                triggers.push(TOOLS_TAG.0);
            }
            Err(ToolGrammarError::Refused(message)) => return CohereTag::Refused(message),
            Err(refused @ ToolGrammarError::XgrammarRefused { .. }) => {
                return CohereTag::Failed(refused.to_string());
            }
            // Outside the subset converted exactly: left unconstrained.
            Err(ToolGrammarError::Unsupported { .. }) => return CohereTag::Tag(None),
        }
    }
    if tags.is_empty() {
        return CohereTag::Unchanged;
    }
    CohereTag::Tag(Some(dumps_python(&json!({
        "type": "structural_tag",
        "format": {"type": "triggered_tags", "triggers": triggers, "tags": tags},
    }))))
}

/// `_schema_dict_from_chat_response_format`: `{"type": "object"}` for
/// `json_object`, the schema of a `json_schema` format, else `None`.
fn schema_from_response_format(response_format: &Value) -> Option<Value> {
    match response_format.get("type").and_then(Value::as_str)? {
        "json_object" => Some(json!({"type": "object"})),
        "json_schema" => {
            let wrapper = response_format.get("json_schema")?.as_object()?;
            // `model_dump(by_alias=True)`: `schema`, then (an empty schema is
            // falsy) `model_dump()`'s `json_schema`, the same field.
            let schema = wrapper
                .get("schema")
                .or_else(|| wrapper.get("json_schema"))?;
            unwrap_nested_schema(schema.as_object()?)
        }
        _ => None,
    }
}

/// `_unwrap_nested_schema`: the object's own `schema` object if it has one.
fn unwrap_nested_schema(candidate: &Map<String, Value>) -> Option<Value> {
    match candidate.get("schema") {
        Some(Value::Object(nested)) => Some(Value::Object(nested.clone())),
        _ => Some(Value::Object(candidate.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_architectures_are_refused_with_vllms_message() {
        let kwargs = Map::new();
        let format = json!({"type": "json_object"});
        let request = ServingRequest {
            response_format_set: true,
            response_format: Some(&format),
            ..ServingRequest::new(&kwargs)
        };
        assert_eq!(apply(None, &request), CohereTag::Unchanged);
        let CohereTag::Refused(message) = apply(Some("LlamaForCausalLM"), &request) else {
            panic!("refused")
        };
        assert!(message.contains("architecture ('LlamaForCausalLM') does not support"));
        assert_eq!(
            apply(Some("Cohere2ForCausalLM"), &request),
            CohereTag::Tag(Some(
                "{\"type\": \"structural_tag\", \"format\": {\"type\": \"triggered_tags\", \
                 \"triggers\": [\"<|START_RESPONSE|>\"], \"tags\": [{\"begin\": \
                 \"<|START_RESPONSE|>\", \"content\": {\"type\": \"json_schema\", \
                 \"json_schema\": {\"type\": \"object\"}}, \"end\": \"<|END_RESPONSE|>\"}]}}"
                    .into()
            ))
        );
    }
}
