//! OpenAI chat requests rendered through Hugging Face chat templates exactly as
//! vLLM 0.33.0 renders them, and the OpenAI request/response types.
//!
//! - [`ChatRenderer`] loads a model directory (or explicit templates), compiles its
//!   chat templates once with [minijinja] set up for jinja2 parity, applies vLLM's
//!   message preprocessing and tokenizes the prompt. See the crate README for the
//!   parity status over 71 real templates.
//! - [`TokenizerMode`] is vLLM's `--tokenizer-mode`; [`ChatRenderer::from_dir_with_mode`]
//!   resolves it as vLLM does and renders through the renderer it selects (the
//!   template, or ports of vLLM's native DeepSeek-V3.2/V4/V4.1, Kimi-K3 and Inkling
//!   renderers).
//! - [`tokenizer`] is `tokenizers`' tokenizer with a fast exact pre-tokenizer for the
//!   Qwen2/Llama 3 split regex; prompts are encoded by cached pieces between special
//!   tokens.
//! - [`mistral`] renders Mistral model directories (`tekken.json`, SentencePiece
//!   `tokenizer.model.v*`) as vLLM's `MistralRenderer` does through mistral-common;
//!   [`harmony`] renders gpt-oss requests as vLLM's Harmony path does. Neither uses a
//!   chat template.
//! - [`openai`] holds the request, response and stream-chunk types.
//! - [`render_mode`] answers vLLM's `/v1/chat/completions/render` and
//!   `/v1/completions/render` (render once, route by tokens, send tokens to engines).
//! - `pipeline` (feature `pipeline`) is the whole request path in front of vLLM
//!   engines: request → render → engine → detokenize → parse → typed response or
//!   chunks, as vLLM's server answers; a server adds only HTTP.
#![deny(missing_docs)]

mod error;
mod kwargs;
mod model;
mod native;
pub mod openai;
#[cfg(feature = "pipeline")]
pub mod pipeline;
mod preprocess;
mod python;
pub mod render_mode;
mod renderer;
pub mod template;
pub mod tokenizer;

pub use error::RenderError;
pub use model::{ChatTemplates, ModelFiles};
pub use native::{ParseTokenizerModeError, RendererKind, ResolvedMode, TokenizerMode};
pub use native::{cohere, harmony, mistral};
pub use renderer::{ChatRenderer, RenderedPrompt, RendererOptions};
pub use template::{Clock, ContentFormat, FastPathStats, Limits};

/// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
