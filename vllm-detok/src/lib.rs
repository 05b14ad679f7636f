//! Incremental detokenization exact to vLLM 0.33.0.
//!
//! [`IncrementalDecoder`] turns a request's stream of output token ids into the text deltas
//! vLLM's output processor emits (`FastIncrementalDetokenizer` over `tokenizers`'
//! `DecodeStream`): incomplete characters held back, stop strings matched and cut with their
//! characters held back, `min_tokens`, stop tokens, `skip_special_tokens` and
//! `spaces_between_special_tokens`. [`LogprobText`] gives the token strings of logprobs.
//!
//! A [`DecodeTable`] built once per tokenizer makes decoding cheap: O(1) per token for
//! byte-level BPE tokenizers (Llama 3, Qwen, DeepSeek, GPT-OSS, tekken, tiktoken), and a
//! short window decoded from the table for SentencePiece byte-fallback ones (Gemma). Other
//! tokenizers use `DecodeStream`'s window method over their own `decode`. Tokenizers plug in
//! through the [`Tokenizer`] trait; [`HfTokenizer`] loads `tokenizer.json`,
//! [`TekkenTokenizer`] Mistral's `tekken.json`, [`SentencePieceTokenizer`] mistral-common's
//! SentencePiece `tokenizer.model.vN` and [`TiktokenTokenizer`] a tiktoken rank file.
//!
//! vLLM detokenizes tokenizers that are not Hugging Face fast tokenizers with its slow
//! Python path. For tekken that path reduces to the byte-level table with Mistral's special
//! token rules ([`TekkenTokenizer`]); for SentencePiece models it is SentencePiece's own
//! decoding over a short window ([`SentencePieceTokenizer`]).
#![deny(missing_docs)]

mod byte_vocab;
mod chars;
mod decoder;
mod error;
mod logprobs;
mod protobuf;
mod sentencepiece;
mod stop;
mod stream;
mod table;
mod tekken;
mod tiktoken;
mod tokenizer;

pub use decoder::{DecodeOptions, Delta, FinishKind, IncrementalDecoder, StopMatch};
pub use error::{Error, Result};
pub use logprobs::{LogprobText, TokenTexts};
pub use sentencepiece::{SentencePieceSpec, SentencePieceTokenizer};
pub use table::{DecodeTable, TableKind};
pub use tekken::TekkenTokenizer;
pub use tiktoken::TiktokenTokenizer;
pub use tokenizer::{HfTokenizer, Tokenizer};

/// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
