//! A chat request rendered in front of the server's parsers, as vLLM's
//! `OnlineRenderer.render_chat` does it for both the chat endpoint and the render
//! endpoint (`/v1/chat/completions/render`): the render, then the parsers'
//! `adjust_request` for the rendered prompt (`skip_special_tokens`,
//! `spaces_between_special_tokens`, a structured-outputs constraint; `beam` derives
//! its grammar from where the prompt leaves the assistant message), and the
//! rendered request carries vLLM's `reasoning_ended` / `reasoning_parser_kwargs` for
//! the engine.

use serde_json::Map;
use vllm_parser::serving::{ServingError, ServingErrorKind, ServingParsers, StructuredOutputs};

use super::error::ApiError;
use super::model::Model;
use super::parse::RequestTools;
use crate::openai::ChatCompletionRequest;
use crate::render_mode::{GenerateRequest, ReasoningParserKwargs, StructuredOutputsParams};

/// A chat request after the parsers' `adjust_request` and the render.
pub(crate) struct PreparedChat {
    /// The request as `adjust_request` left it.
    pub request: ChatCompletionRequest,
    /// Its function tools, as the parsers read them.
    pub tools: RequestTools,
    /// The rendered request: prompt ids, sampling parameters with the parsers'
    /// constraint, `reasoning_ended`, `reasoning_parser_kwargs`.
    pub generate: GenerateRequest,
    /// The prompt as vLLM decodes it for parsers that read its text
    /// ([`ServingParsers::reads_prompt`]); `None` for the others.
    pub prompt_text: Option<String>,
}

/// A parser rule's refusal: vLLM's 400 with its message and parameter.
pub(crate) fn serving_error(error: ServingError) -> ApiError {
    match error.kind {
        ServingErrorKind::Internal => ApiError::internal(error.message),
        _ => ApiError::bad_request(error.message, error.param.as_deref()),
    }
}

/// vLLM's `GenerateRequest` for `request` in front of `parsers` (the render
/// endpoint's answer): the request rendered, then adjusted by the parsers' `adjust_request`, with
/// their structured-outputs constraint, `reasoning_ended` (vLLM's
/// `resolve_reasoning_ended`: `true` when reasoning is hidden or the parsers' grammar
/// covers it, else the reasoning parser's `is_reasoning_end` on the prompt, `null`
/// without one; [`ServingParsers::resolve_reasoning_ended`]) and
/// `reasoning_parser_kwargs` (with a reasoning parser). CPU work: call it off the async
/// workers for large requests.
pub fn render_chat(
    model: &Model,
    parsers: &ServingParsers,
    request: ChatCompletionRequest,
) -> Result<GenerateRequest, ApiError> {
    prepare_chat(model, parsers, request).map(|prepared| prepared.generate)
}

/// [`render_chat`], keeping the adjusted request and its tools for the parsers.
pub(crate) fn prepare_chat(
    model: &Model,
    parsers: &ServingParsers,
    mut request: ChatCompletionRequest,
) -> Result<PreparedChat, ApiError> {
    let tools = RequestTools::of(&request);
    let mut kwargs: Map<_, _> = model
        .renderer
        .options()
        .default_chat_template_kwargs
        .clone();
    kwargs.extend(request.chat_template_kwargs.clone().unwrap_or_default());
    let mut generate = model.renderer.render_chat(&request)?;
    // After the render, as vLLM adjusts after `set_prompt_token_ids`: the `hf` /
    // `beam` parsers read the prompt as vLLM decodes it (`beam`'s grammar, their
    // `is_reasoning_end` and start state), and so does Muse's `is_reasoning_end`; no
    // other parser's adjustment affects the render.
    let prompt_text = if parsers.reads_prompt() {
        Some(
            model
                .tokenizer
                .decode(&generate.token_ids, false)
                .map_err(|e| ApiError::internal(e.to_string()))?,
        )
    } else {
        None
    };
    let adjustments = parsers
        .adjust_request_for_prompt(
            &tools.serving(&request, &kwargs),
            prompt_text.as_deref().unwrap_or_default(),
        )
        .map_err(serving_error)?;
    if let Some(skip) = adjustments.skip_special_tokens {
        request.skip_special_tokens = Some(skip);
        generate.sampling_params.skip_special_tokens = skip;
    }
    if let Some(spaces) = adjustments.spaces_between_special_tokens {
        request.spaces_between_special_tokens = spaces;
        generate.sampling_params.spaces_between_special_tokens = spaces;
    }
    // vLLM's `resolve_reasoning_ended` after `adjust_request` and the render, with a
    // parser built for the kwargs the prompt was rendered with (also the engine's).
    let chat_template_kwargs = generate
        .parse_context
        .as_ref()
        .map(|c| c.chat_template_kwargs.clone())
        .unwrap_or_default();
    generate.reasoning_ended = parsers.resolve_reasoning_ended(
        &tools.serving(&request, &chat_template_kwargs),
        &adjustments,
        &generate.token_ids,
        prompt_text.as_deref(),
    );
    // The parsers' constraint replaces the request's own (`response_format` was mapped
    // by `render_chat`), as vLLM applies it after validating the request: a forced tool
    // choice held to the tools' JSON schema, xgrammar's structural tag in the model's
    // own tool-call format, or the Mistral grammar.
    let constraint = match adjustments.structured_outputs {
        Some(StructuredOutputs::Json(schema)) => Some(StructuredOutputsParams {
            json: Some(schema),
            ..StructuredOutputsParams::default()
        }),
        Some(StructuredOutputs::StructuralTag {
            json: Some(tag), ..
        }) => Some(StructuredOutputsParams {
            structural_tag: Some(tag),
            ..StructuredOutputsParams::default()
        }),
        Some(StructuredOutputs::Grammar(grammar)) => Some(StructuredOutputsParams {
            grammar: Some(grammar),
            ..StructuredOutputsParams::default()
        }),
        // A tag vLLM would not build either leaves the request as it is.
        Some(StructuredOutputs::StructuralTag { json: None, .. }) | None => None,
    };
    if constraint.is_some() {
        generate.sampling_params.structured_outputs = constraint;
    }
    if parsers.reasoning().is_some() {
        generate.reasoning_parser_kwargs = Some(ReasoningParserKwargs {
            chat_template_kwargs,
        });
    }
    Ok(PreparedChat {
        request,
        tools,
        generate,
        prompt_text,
    })
}
