//! The parsers' side of a chat request: the facts vLLM's serving layer gives its
//! parser rules (`vllm_parser::serving`), and parser events as OpenAI stream deltas.

use serde_json::{Map, Value};
use vllm_parser::Event;
use vllm_parser::serving::{ServingRequest, ToolChoice as ServingToolChoice};

use crate::openai::{
    ChatCompletionRequest, DeltaFunctionCall, DeltaMessage, DeltaToolCall, Emit, ToolChoice,
    ToolChoiceMode,
};

/// The request's tools as the parsers see them.
#[derive(Debug, Clone, Default)]
pub struct RequestTools {
    tools: Vec<vllm_parser::Tool>,
    /// Per tool, `function.strict: true`.
    strict: Vec<bool>,
}

impl RequestTools {
    /// The tools of `request`.
    pub fn of(request: &ChatCompletionRequest) -> Self {
        let functions = request.tools.iter().flatten().map(|t| &t.function);
        Self {
            tools: functions
                .clone()
                .map(|f| vllm_parser::Tool {
                    name: f.name.clone(),
                    description: f.description.clone(),
                    parameters: f.parameters.clone().unwrap_or(Value::Null),
                })
                .collect(),
            strict: functions.map(|f| f.strict == Some(true)).collect(),
        }
    }

    /// What vLLM's serving layer tells its parser rules about `request`.
    pub fn serving<'a>(
        &'a self,
        request: &'a ChatCompletionRequest,
        chat_template_kwargs: &'a Map<String, Value>,
    ) -> ServingRequest<'a> {
        ServingRequest {
            tools: request.tools.as_ref().map(|_| self.tools.as_slice()),
            tool_choice: request.tool_choice.as_ref().map(|choice| match choice {
                ToolChoice::Mode(ToolChoiceMode::None) => ServingToolChoice::None,
                ToolChoice::Mode(ToolChoiceMode::Auto) => ServingToolChoice::Auto,
                ToolChoice::Mode(ToolChoiceMode::Required) => ServingToolChoice::Required,
                ToolChoice::Named(named) => ServingToolChoice::Named(named.function.name.clone()),
            }),
            parallel_tool_calls: request.parallel_tool_calls,
            include_reasoning: request.include_reasoning,
            chat_template_kwargs,
            skip_special_tokens: request.skip_special_tokens,
            // `{"type": "text"}` alone is no format, as vLLM reads it.
            response_format_set: request
                .response_format
                .as_ref()
                .is_some_and(|f| f.get("type").and_then(Value::as_str) != Some("text"))
                || request.structured_outputs.is_some(),
            tools_strict: &self.strict,
            response_format: request.response_format.as_ref(),
            structured_outputs: request.structured_outputs.as_ref(),
        }
    }
}

/// The stream delta for one step's events (`None` when there is nothing to send).
pub fn delta_message(events: &[Event]) -> Option<DeltaMessage> {
    let mut delta = DeltaMessage::default();
    let mut reasoning: Option<String> = None;
    let mut content: Option<String> = None;
    for event in events {
        match event {
            Event::Reasoning(text) => reasoning.get_or_insert_default().push_str(text),
            Event::Content(text) => content.get_or_insert_default().push_str(text),
            Event::ToolCallBegin { index, id, name } => delta.tool_calls.push(DeltaToolCall {
                id: id.clone().map_or(Emit::Unset, Emit::value),
                kind: Emit::value("function".into()),
                index: *index as u32,
                function: Emit::value(DeltaFunctionCall {
                    name: Emit::value(name.clone()),
                    arguments: Emit::Unset,
                }),
            }),
            Event::ToolCallArguments { index, delta: text } => {
                let index = *index as u32;
                match delta.tool_calls.last_mut() {
                    Some(call) if call.index == index => {
                        if let Emit::Set(Some(function)) = &mut call.function {
                            match &mut function.arguments {
                                Emit::Set(Some(args)) => args.push_str(text),
                                other => *other = Emit::value(text.clone()),
                            }
                        }
                    }
                    _ => delta.tool_calls.push(DeltaToolCall {
                        index,
                        function: Emit::value(DeltaFunctionCall {
                            name: Emit::Unset,
                            arguments: Emit::value(text.clone()),
                        }),
                        ..DeltaToolCall::default()
                    }),
                }
            }
            Event::ToolCallEnd { .. } => {}
        }
    }
    if reasoning.is_none() && content.is_none() && delta.tool_calls.is_empty() {
        return None;
    }
    delta.reasoning = reasoning.map_or(Emit::Unset, Emit::value);
    delta.content = content.map_or(Emit::Unset, Emit::value);
    Some(delta)
}
