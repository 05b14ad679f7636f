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
pub fn parser_tools(request: &ChatCompletionRequest) -> Vec<vllm_parser::Tool> {
    request
        .tools
        .iter()
        .flatten()
        .map(|t| vllm_parser::Tool {
            name: t.function.name.clone(),
            description: t.function.description.clone(),
            parameters: t.function.parameters.clone().unwrap_or(Value::Null),
        })
        .collect()
}

/// What vLLM's serving layer tells its parser rules about `request`.
pub fn serving_request<'a>(
    request: &ChatCompletionRequest,
    tools: &'a [vllm_parser::Tool],
    chat_template_kwargs: &'a Map<String, Value>,
) -> ServingRequest<'a> {
    ServingRequest {
        tools: request.tools.as_ref().map(|_| tools),
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
        response_format_set: request.response_format.is_some(),
        strict_tools: request
            .tools
            .iter()
            .flatten()
            .any(|t| t.function.strict == Some(true)),
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
