//! vLLM's declarative parser engine (`vllm/parser/engine/`), and the model
//! formats written for it.
//!
//! A format is an [`EngineConfig`](config::EngineConfig): literal terminals, a
//! `(state, terminal) → (state, events)` table, what plain text means in each
//! state, and a converter from a call's raw argument text to JSON. One engine
//! runs every format:
//!
//! - [`lexer`]: terminals in streamed text, holding back what may still become
//!   one ([`MarkerScanner`](crate::text::MarkerScanner) underneath);
//! - [`driver`]: the state machine, tokens to [`Signal`](driver::Signal)s
//!   ([`array`](mod@array): a tool region that is one JSON array);
//! - [`assemble`]: signals to [`Event`](crate::Event)s under vLLM's whole-text
//!   result rules (content around calls, names, argument conversion);
//! - [`schema`]: argument values typed by the tool's JSON schema;
//! - [`adapters`]: the [`ToolParser`](crate::ToolParser) and
//!   [`ReasoningParser`](crate::ReasoningParser) built from one config;
//! - [`models`]: one file per model format.
//!
//! Every piece of text is lexed once and every call's arguments converted once,
//! so the cost per delta does not grow with the output before it.
//!
//! Results are vLLM's whole-text results at every chunking. vLLM's streaming
//! through the same engine differs in places (it keeps text after calls and
//! does not strip content beside them); the fixtures record those cases.
//! Not reproduced, because they depend on the tokenizer rather than the text:
//! matching a marker only as its special-token id once ids are seen, and
//! dropping the tokenizer's other special tokens from the output; markers are
//! matched as text.

pub mod adapters;
pub mod array;
pub mod assemble;
pub mod config;
pub mod driver;
pub mod lexer;
pub mod models;
pub mod schema;
