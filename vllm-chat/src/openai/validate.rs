//! The request checks vLLM's pydantic validators make (`ChatCompletionRequest` and
//! `CompletionRequest` in vLLM 0.33.0), with the same messages and the offending
//! parameter named. Range checks on the resolved sampling parameters live with
//! them, in [`crate::render_mode::SamplingParams::verify`].

use serde_json::Value;

use super::{ChatCompletionRequest, CompletionRequest, ToolChoice, ToolChoiceMode};
use crate::RenderError;

/// Characters vLLM refuses in a `cache_salt`.
const CACHE_SALT_FORBIDDEN: [char; 4] = ['@', '/', '\\', '\0'];
/// Longest `cache_salt` (characters).
const CACHE_SALT_MAX_CHARS: usize = 128;

impl ChatCompletionRequest {
    /// `add_generation_prompt` as the template sees it: true unless the request says false.
    pub fn add_generation_prompt(&self) -> bool {
        self.add_generation_prompt.unwrap_or(true)
    }

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
        check_stream_interval(self.stream_interval)?;
        check_cache_salt(self.cache_salt.as_deref())?;
        check_stream_options(self.stream_options.is_some(), self.stream)?;
        if let Some(top) = self.top_logprobs {
            if top < 0 && top != -1 {
                return Err(RenderError::validation(
                    "`top_logprobs` must be a positive value or -1.",
                    Some("top_logprobs"),
                    Some(top.to_string()),
                ));
            }
            if (top == -1 || top > 0) && self.logprobs != Some(true) {
                return Err(RenderError::validation(
                    "when using `top_logprobs`, `logprobs` must be set to true.",
                    Some("top_logprobs"),
                    None,
                ));
            }
        }
        check_prompt_logprobs(self.prompt_logprobs, self.stream)?;
        check_response_format(self.response_format.as_ref())?;
        if let Some(constraints) = &self.structured_outputs {
            if count_constraints(constraints) > 1 {
                return Err(RenderError::validation(TOO_MANY_CONSTRAINTS, None, None));
            }
            let named_tool = matches!(self.tool_choice, Some(ToolChoice::Named(_)));
            if count_constraints(constraints) > 0 && named_tool {
                return Err(RenderError::validation(
                    "You can only either use constraints for structured outputs or tools, not both.",
                    None,
                    None,
                ));
            }
        }
        if self.tools.as_ref().is_some_and(Vec::is_empty) {
            return Err(RenderError::validation(
                "`tools` must not be an empty array. Either provide at least one tool or omit the field entirely.",
                Some("tools"),
                None,
            ));
        }
        match &self.tool_choice {
            None | Some(ToolChoice::Mode(ToolChoiceMode::None)) => {}
            Some(choice) => {
                let Some(tools) = &self.tools else {
                    return Err(RenderError::validation(
                        "When using `tool_choice`, `tools` must be set.",
                        Some("tool_choice"),
                        None,
                    ));
                };
                if let ToolChoice::Named(named) = choice {
                    if named.function.name.is_empty() {
                        return Err(RenderError::validation(
                            "Invalid `name` in `function`: `` in `tool_choice`! Correct usage: `{\"type\": \"function\", \"function\": {\"name\": \"my_function\"}}`",
                            Some("tool_choice.function.name"),
                            None,
                        ));
                    }
                    if !tools.iter().any(|t| t.function.name == named.function.name) {
                        return Err(RenderError::validation(
                            "The tool specified in `tool_choice` does not match any of the specified `tools`",
                            Some("tool_choice"),
                            None,
                        ));
                    }
                }
            }
        }
        // vLLM's `check_generation_prompt` reads the raw body: only a request that sets
        // both is refused here (with the default, the template's own check answers).
        if self.continue_final_message && self.add_generation_prompt == Some(true) {
            return Err(RenderError::validation(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
                None,
                None,
            ));
        }
        Ok(())
    }
}

impl CompletionRequest {
    /// Checks the field combinations vLLM rejects.
    pub fn validate(&self) -> Result<(), RenderError> {
        check_stream_interval(self.stream_interval)?;
        check_cache_salt(self.cache_salt.as_deref())?;
        check_response_format(self.response_format.as_ref())?;
        if let Some(constraints) = &self.structured_outputs
            && count_constraints(constraints) > 1
        {
            return Err(RenderError::validation(
                TOO_MANY_CONSTRAINTS,
                Some("structured_outputs"),
                None,
            ));
        }
        check_prompt_logprobs(self.prompt_logprobs, self.stream)?;
        if let Some(n) = self.logprobs
            && n < 0
            && n != -1
        {
            return Err(RenderError::validation(
                "`logprobs` must be a positive value or -1.",
                Some("logprobs"),
                Some(n.to_string()),
            ));
        }
        check_stream_options(self.stream_options.is_some(), self.stream)?;
        if self.prompt.is_empty_text() {
            return Err(RenderError::validation(
                "Either prompt or prompt_embeds must be provided and non-empty.",
                Some("prompt"),
                None,
            ));
        }
        Ok(())
    }
}

const TOO_MANY_CONSTRAINTS: &str = "You can only use one kind of constraints for structured outputs ('json', 'regex' or 'choice').";

/// How many of `json`, `regex` and `choice` are set (vLLM allows one).
fn count_constraints(structured_outputs: &Value) -> usize {
    ["json", "regex", "choice"]
        .iter()
        .filter(|k| structured_outputs.get(**k).is_some_and(|v| !v.is_null()))
        .count()
}

/// `stream_interval: Annotated[int, Field(ge=1)]`: a field constraint, checked by
/// pydantic before any of the request's validators.
fn check_stream_interval(interval: Option<i64>) -> Result<(), RenderError> {
    match interval {
        Some(i) if i < 1 => Err(RenderError::greater_than_equal("stream_interval", 1, i)),
        _ => Ok(()),
    }
}

fn check_stream_options(given: bool, stream: Option<bool>) -> Result<(), RenderError> {
    if given && stream != Some(true) {
        return Err(RenderError::validation(
            "Stream options can only be defined when `stream=True`.",
            Some("stream_options"),
            None,
        ));
    }
    Ok(())
}

fn check_prompt_logprobs(
    prompt_logprobs: Option<i64>,
    stream: Option<bool>,
) -> Result<(), RenderError> {
    let Some(p) = prompt_logprobs else {
        return Ok(());
    };
    if stream == Some(true) && (p > 0 || p == -1) {
        return Err(RenderError::validation(
            "`prompt_logprobs` are not available when `stream=True`.",
            Some("prompt_logprobs"),
            None,
        ));
    }
    if p < 0 && p != -1 {
        return Err(RenderError::validation(
            "`prompt_logprobs` must be a positive value or -1.",
            Some("prompt_logprobs"),
            Some(p.to_string()),
        ));
    }
    Ok(())
}

/// `response_format`: a `json_schema` type needs its `json_schema`; the shapes of
/// the other types are checked when they are turned into structured outputs.
fn check_response_format(response_format: Option<&Value>) -> Result<(), RenderError> {
    let Some(format) = response_format.filter(|f| !f.is_null()) else {
        return Ok(());
    };
    if format.get("type").and_then(Value::as_str) == Some("json_schema")
        && format.get("json_schema").is_none_or(Value::is_null)
    {
        return Err(RenderError::validation(
            "When response_format type is 'json_schema', the 'json_schema' field must be provided.",
            Some("response_format"),
            None,
        ));
    }
    Ok(())
}

/// vLLM's `validate_cache_salt`.
fn check_cache_salt(salt: Option<&str>) -> Result<(), RenderError> {
    let Some(salt) = salt else {
        return Ok(());
    };
    if salt.is_empty() {
        return Err(RenderError::validation(
            "Parameter 'cache_salt' must be a non-empty string if provided.",
            Some("cache_salt"),
            None,
        ));
    }
    if salt.chars().count() > CACHE_SALT_MAX_CHARS || salt.contains(CACHE_SALT_FORBIDDEN) {
        return Err(RenderError::validation(
            "Parameter 'cache_salt' must be at most 128 characters and must not contain '@', '/', '\\\\', or NUL.",
            Some("cache_salt"),
            None,
        ));
    }
    Ok(())
}
