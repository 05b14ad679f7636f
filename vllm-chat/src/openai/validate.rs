//! The request checks vLLM's pydantic validators make, with the same messages and
//! the offending parameter named.

use super::{ChatCompletionRequest, ToolChoice, ToolChoiceMode};
use crate::RenderError;

impl ChatCompletionRequest {
    /// `tool_choice` as vLLM resolves it: `auto` when tools are given without a choice, else `none`.
    pub fn effective_tool_choice(&self) -> ToolChoice {
        match (&self.tool_choice, &self.tools) {
            (Some(choice), _) => choice.clone(),
            (None, Some(tools)) if !tools.is_empty() => ToolChoice::Mode(ToolChoiceMode::Auto),
            _ => ToolChoice::Mode(ToolChoiceMode::None),
        }
    }

    /// Checks the field combinations vLLM rejects.
    pub fn validate(&self) -> Result<(), RenderError> {
        if self.stream_options.is_some() && self.stream != Some(true) {
            return Err(RenderError::invalid(
                "Stream options can only be defined when `stream=True`.",
                "stream_options",
            ));
        }
        if let Some(top) = self.top_logprobs {
            if top < 0 && top != -1 {
                return Err(RenderError::invalid(
                    "`top_logprobs` must be a positive value or -1.",
                    "top_logprobs",
                ));
            }
            if (top == -1 || top > 0) && self.logprobs != Some(true) {
                return Err(RenderError::invalid(
                    "when using `top_logprobs`, `logprobs` must be set to true.",
                    "top_logprobs",
                ));
            }
        }
        if let Some(p) = self.prompt_logprobs {
            if self.stream == Some(true) && (p > 0 || p == -1) {
                return Err(RenderError::invalid(
                    "`prompt_logprobs` are not available when `stream=True`.",
                    "prompt_logprobs",
                ));
            }
            if p < 0 && p != -1 {
                return Err(RenderError::invalid(
                    "`prompt_logprobs` must be a positive value or -1.",
                    "prompt_logprobs",
                ));
            }
        }
        if self.tools.as_ref().is_some_and(Vec::is_empty) {
            return Err(RenderError::invalid(
                "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.",
                "tools",
            ));
        }
        match &self.tool_choice {
            None | Some(ToolChoice::Mode(ToolChoiceMode::None)) => {}
            Some(choice) => {
                let Some(tools) = &self.tools else {
                    return Err(RenderError::invalid(
                        "When using `tool_choice`, `tools` must be set.",
                        "tool_choice",
                    ));
                };
                if let ToolChoice::Named(named) = choice {
                    if named.function.name.is_empty() {
                        return Err(RenderError::invalid(
                            "Invalid `name` in `function`: `` in `tool_choice`! Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`",
                            "tool_choice.function.name",
                        ));
                    }
                    if !tools.iter().any(|t| t.function.name == named.function.name) {
                        return Err(RenderError::invalid(
                            "The tool specified in `tool_choice` does not match any of the specified `tools`",
                            "tool_choice",
                        ));
                    }
                }
            }
        }
        if self.continue_final_message && self.add_generation_prompt {
            return Err(RenderError::InvalidRequest {
                message:
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
                        .into(),
                param: None,
            });
        }
        Ok(())
    }
}
