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
//! - `cmd4.rs` (the default, template `cmd4-v1`) and `cmd3.rs` (`cmd3-v1`): the
//!   prompt text;
//! - `json.rs`: the format's JSON spelling.
//!
//! Like vLLM, the prompt always ends with an open chatbot turn: the request's
//! `add_generation_prompt` / `continue_final_message` reach the format only as
//! template variables it does not read.
//!
//! Refused (typed [`CohereUnsupported`]): melody's other built-in templates
//! (`template_id` other than the defaults), and a request `chat_template` (which
//! vLLM hands to melody as a raw template to run).

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
pub enum CohereUnsupported {
    /// A `template_id` naming one of melody's other built-in templates.
    #[error(
        "the cohere renderer of vllm-chat supports template_id {supported} for cohere_format {format}, not {given:?}; serve this request with vLLM's Python frontend"
    )]
    TemplateId {
        /// The id asked for.
        given: String,
        /// The format (`cmd3` or `cmd4`).
        format: &'static str,
        /// The ids supported for that format.
        supported: &'static str,
    },
    /// A request `chat_template`, which vLLM runs as a melody template.
    #[error(
        "the cohere renderer of vllm-chat does not run a request chat_template (vLLM passes it to melody as template_jinja); serve this request with vLLM's Python frontend"
    )]
    RequestTemplate,
}

impl From<CohereUnsupported> for RenderError {
    fn from(e: CohereUnsupported) -> Self {
        RenderError::InvalidRequest {
            message: e.to_string(),
            param: Some(match e {
                CohereUnsupported::TemplateId { .. } => "chat_template_kwargs.template_id".into(),
                CohereUnsupported::RequestTemplate => "chat_template".into(),
            }),
        }
    }
}

/// melody's built-in templates per format, by id (what it accepts).
const CMD3_IDS: [&str; 3] = ["cmd3-v1", "cmd3-v2", "cmd3-v3"];
const CMD4_IDS: [&str; 3] = ["cmd4-v1", "cmd4-v2", "cmd4-hf"];

/// Renders vLLM's conversation (`content_format="openai"`) with the merged
/// `chat_template_kwargs` (the request's tools under `tools` unless the kwargs set
/// it) and the request's `chat_template`.
pub(crate) fn render(
    conversation: &[Value],
    kwargs: &Kwargs,
    chat_template: Option<&str>,
) -> Result<String, RenderError> {
    let config = config::build(conversation, kwargs)?;
    let (known, default, name) = match config.format {
        Format::Cmd3 => (&CMD3_IDS, "cmd3-v1", "cmd3"),
        Format::Cmd4 => (&CMD4_IDS, "cmd4-v1", "cmd4"),
    };
    if let Some(id) = &config.template_id {
        if !known.contains(&id.as_str()) {
            return Err(crate::native::py::error(format!(
                "Render error: Template validation error: unknown template id: {id}"
            )));
        }
        if id != default {
            return Err(CohereUnsupported::TemplateId {
                given: id.clone(),
                format: name,
                supported: default,
            }
            .into());
        }
    }
    if chat_template.is_some_and(|t| !t.is_empty()) {
        return Err(CohereUnsupported::RequestTemplate.into());
    }
    let messages = messages::prompt_messages(&config.messages, !config.documents.is_empty())?;
    Ok(match config.format {
        Format::Cmd4 => cmd4::render(&config, &messages),
        Format::Cmd3 => cmd3::render(&config, &messages)?,
    })
}
