//! Incremental detokenization exact to vLLM 0.33.0.
//!
//! [`IncrementalDecoder`] turns a request's stream of output token ids into the text deltas
//! vLLM's output processor emits (`FastIncrementalDetokenizer` over `tokenizers`'
//! `DecodeStream`): incomplete characters held back, stop strings matched and cut with their
//! characters held back, `min_tokens`, stop tokens, `skip_special_tokens` and
//! `spaces_between_special_tokens`. [`LogprobText`] gives the token strings of logprobs.
//!
//! For byte-level BPE tokenizers (Llama 3, Qwen, DeepSeek, GPT-OSS), a [`DecodeTable`] built
//! once per tokenizer makes each token O(1) work; other tokenizers use `DecodeStream`'s window
//! method. Tokenizers plug in through the [`Tokenizer`] trait; [`HfTokenizer`] loads
//! `tokenizer.json`.
#![deny(missing_docs)]

mod decoder;
mod error;
mod logprobs;
mod stop;
mod stream;
mod table;
mod tokenizer;

pub use decoder::{DecodeOptions, Delta, FinishKind, IncrementalDecoder, StopMatch};
pub use error::{Error, Result};
pub use logprobs::{LogprobText, TokenTexts};
pub use table::{DecodeTable, TableKind};
pub use tokenizer::{HfTokenizer, Tokenizer};

/// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
