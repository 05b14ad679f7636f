//! Tool-call and reasoning parsers exact to vLLM 0.33.0, with streaming equal to
//! whole-text parsing and linear time.
//!
//! # Layers
//!
//! - [`Event`]: what parsers emit — reasoning text, content text, tool call
//!   begin / argument delta / end.
//! - [`ReasoningParser`] and [`ToolParser`]: per-request state machines fed text
//!   deltas with `push` and closed with `finish`. Whole-text parsing is one `push`
//!   plus `finish`, so the two modes cannot disagree.
//! - [`MessageParser`]: one request's reasoning parser feeding its content to the
//!   tool parser, as vLLM's serving layer composes them.
//! - [`MessageBuilder`] / [`ParsedMessage`]: events merged into the assistant
//!   message (`content`, `reasoning`, `tool_calls`).
//! - [`serving`]: vLLM's serving-layer rules per request (`adjust_request`,
//!   the start state from the prompt's token ids, `tool_choice`, finish reason).
//! - [`registry`]: vLLM's parser names to constructors, `auto` by model name, and
//!   the tokens each parser needs.
//! - Building blocks for parser modules: [`text::MarkerScanner`] (incremental
//!   marker search that holds back partial markers) and [`json`] (Python's
//!   `json.loads` / `json.dumps`, which vLLM uses to produce argument text).
//!
//! ```
//! use vllm_parser::{registry, Event, MessageBuilder, MessageParser, ParserOptions};
//!
//! let options = ParserOptions::default();
//! let mut parser = MessageParser::new(
//!     Some(registry::reasoning_parser("qwen3", &options)?),
//!     Some(registry::tool_parser("hermes", &options)?),
//! );
//! let mut events = Vec::new();
//! for delta in ["<think>weather?</think>", "<tool_call>{\"name\": \"f\", ", "\"arguments\": {}}</tool_call>"] {
//!     parser.push(delta, &[], &mut events);
//! }
//! parser.finish(&mut events);
//! let mut message = MessageBuilder::new();
//! message.extend(&events);
//! let message = message.finish();
//! assert_eq!(message.reasoning.as_deref(), Some("weather?"));
//! assert_eq!(message.tool_calls[0].name, "f");
//! assert_eq!(message.tool_calls[0].arguments, "{}");
//! # Ok::<(), vllm_parser::ParserError>(())
//! ```
#![deny(missing_docs)]

pub mod cohere_command;
pub mod engine;
mod error;
mod event;
pub mod harmony;
pub mod json;
mod message;
pub mod muse;
mod parser;
mod pipeline;
pub mod reasoning;
pub mod registry;
pub mod response_template;
pub mod serving;
pub mod text;
pub mod tool;
mod tools;

pub use error::ParserError;
pub use event::Event;
pub use message::{MessageBuilder, ParsedMessage, ParsedToolCall};
pub use parser::{
    MistralFormat, MistralReasoning, MistralTokenizerInfo, ParserOptions, ReasoningParser,
    ToolParser, py_truthy,
};
pub use pipeline::MessageParser;
pub use tools::{Tool, find_tool};

/// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
