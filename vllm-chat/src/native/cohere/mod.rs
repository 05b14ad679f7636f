//! Cohere Command's renderer (`--tokenizer-mode cohere`): vLLM 0.33.0's
//! `vllm/renderers/cohere.py` (`CohereRenderer`).
//!
//! vLLM renders Cohere chats with Cohere's `cohere_melody` bindings
//! (`render_cmd3` / `render_cmd4`) instead of the model's chat template, then
//! tokenizes the text with the Hugging Face tokenizer. This module is our own
//! implementation of the Command prompt formats, written from the prompts they
//! produce and checked against melody 0.15.3 through vLLM's renderer (the
//! `cohere` cases of `tests/fixtures/native.json.gz`); it contains no melody code
//! or template, only the fixed strings the format writes (`text.rs`).
//!
//! The steps, one file each:
//! - `config.rs`: `_build_render_config`, how `chat_template_kwargs` (and the
//!   request's `tools` / `documents`) become the format's settings, with vLLM's
//!   errors and the format's own;
//! - `messages.rs`: `_conversation_to_melody_messages`, then the format's tool-call
//!   numbering, checks and tool-result grouping;
//! - `cmd4.rs` (the default; templates `cmd4-v1`, `cmd4-v2`, `cmd4-hf`) and
//!   `cmd3.rs` (`cmd3-v1`, `cmd3-v2`, `cmd3-v3`): the prompt text;
//! - `json.rs`: the format's JSON spelling.
//!
//! Like vLLM, the prompt always ends with an open chatbot turn: the request's
//! `add_generation_prompt` / `continue_final_message` reach the format only as
//! template variables it does not read.
//!
//! Every built-in template melody 0.15.3 accepts for `template_id` is here. Refused
//! (typed [`CohereUnsupported`]): a chat template (the request's `chat_template` or
//! the server's `--chat-template`), which vLLM hands to melody as a raw template to run.
//! Where melody panics (results of a call id that come back in a later run of tool
//! messages than its first, past the end of that run's entries), vLLM's request fails;
//! here it is a client error with the panic's message. No input panics this code.

mod cmd3;
mod cmd4;
mod config;
mod json;
mod messages;
mod text;

use serde_json::Value;
use thiserror::Error;

use crate::RenderError;
use crate::kwargs::Kwargs;
use config::Format;

/// What this port of the Cohere renderer does not do (vLLM would).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CohereUnsupported {
    /// A chat template given with the request (or the server's `--chat-template`),
    /// which vLLM hands to melody as a raw template to run.
    #[error(
        "the cohere renderer of vllm-chat does not run a chat template (vLLM passes it to melody as template_jinja); use chat_template_kwargs.template_id to pick one of the built-in Command templates, or serve this request with vLLM's Python frontend"
    )]
    ChatTemplate,
}

impl From<CohereUnsupported> for RenderError {
    fn from(e: CohereUnsupported) -> Self {
        RenderError::InvalidRequest {
            message: e.to_string(),
            param: Some("chat_template".into()),
        }
    }
}

/// melody's built-in templates (`template_id`), per format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Template {
    /// `cmd3-v1` (cmd3's default).
    Cmd3V1,
    /// `cmd3-v2`: reasoning on unless turned off.
    Cmd3V2,
    /// `cmd3-v3`: `cmd3-v2` with a default plan for tool calls.
    Cmd3V3,
    /// `cmd4-v1` (cmd4's default).
    Cmd4V1,
    /// `cmd4-v2`: the generation prompt opens a thinking block.
    Cmd4V2,
    /// `cmd4-hf`: `cmd4-v2` with a default platform instruction.
    Cmd4Hf,
}

impl Template {
    fn find(format: Format, id: Option<&str>) -> Option<Template> {
        Some(match (format, id) {
            (Format::Cmd3, None | Some("cmd3-v1")) => Template::Cmd3V1,
            (Format::Cmd3, Some("cmd3-v2")) => Template::Cmd3V2,
            (Format::Cmd3, Some("cmd3-v3")) => Template::Cmd3V3,
            (Format::Cmd4, None | Some("cmd4-v1")) => Template::Cmd4V1,
            (Format::Cmd4, Some("cmd4-v2")) => Template::Cmd4V2,
            (Format::Cmd4, Some("cmd4-hf")) => Template::Cmd4Hf,
            _ => return None,
        })
    }
}

/// Renders vLLM's conversation (`content_format="openai"`) with the merged
/// `chat_template_kwargs` (the request's tools under `tools` unless the kwargs set
/// it) and the request's `chat_template`.
pub(crate) fn render(
    conversation: &[Value],
    kwargs: &Kwargs,
    chat_template: Option<&str>,
) -> Result<String, RenderError> {
    let config = config::build(conversation, kwargs)?;
    let messages = messages::prompt_messages(&config.messages, !config.documents.is_empty())?;
    // melody resolves the template after numbering and checking the messages.
    let Some(template) = Template::find(config.format, config.template_id.as_deref()) else {
        return Err(crate::native::py::error(format!(
            "Render error: Template validation error: unknown template id: {}",
            config.template_id.as_deref().unwrap_or_default()
        )));
    };
    if chat_template.is_some_and(|t| !t.is_empty()) {
        return Err(CohereUnsupported::ChatTemplate.into());
    }
    Ok(match template {
        Template::Cmd4V1 | Template::Cmd4V2 | Template::Cmd4Hf => {
            cmd4::render(&config, &messages, template)
        }
        Template::Cmd3V1 | Template::Cmd3V2 | Template::Cmd3V3 => {
            cmd3::render(&config, &messages, template)
        }
    })
}

/// `reasoning` as the templates that read it default it: the request's
/// `reasoning_type` when set, else a `reasoning` template variable, else on unless
/// `reasoning_effort` is `none`.
fn reasoning(config: &config::Config) -> bool {
    if let Some(rt) = config.reasoning_type {
        return rt == config::Toggle::Enabled;
    }
    if let Some(r) = config.extra.get("reasoning") {
        return crate::native::py::truthy(Some(r));
    }
    !matches!(config.extra.get("reasoning_effort"), Some(Value::String(s)) if s.to_lowercase() == "none")
}
