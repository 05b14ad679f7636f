//! Incremental detokenization exact to vLLM 0.33.0.
//!
//! [`IncrementalDecoder`] turns a request's stream of output token ids into the text deltas
//! vLLM's output processor emits (`FastIncrementalDetokenizer` over `tokenizers`'
//! `DecodeStream`): incomplete characters held back, stop strings matched and cut with their
//! characters held back, `min_tokens`, stop tokens, `skip_special_tokens` and
//! `spaces_between_special_tokens`. [`LogprobText`] gives the token strings of logprobs.
//!
//! A [`DecodeTable`] built once per tokenizer makes decoding cheap: O(1) per token for
//! byte-level BPE tokenizers (Llama 3, Qwen, DeepSeek, GPT-OSS), and a short window decoded
//! from the table for SentencePiece byte-fallback ones (Gemma). Other tokenizers use
//! `DecodeStream`'s window method over their own `decode`. Tokenizers plug in through the
//! [`Tokenizer`] trait; [`HfTokenizer`] loads `tokenizer.json`.
//!
//! vLLM detokenizes tokenizers that are not Hugging Face fast tokenizers (mistral-common's
//! SentencePiece and tekken) with its slow Python path, which this crate does not reproduce.
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
