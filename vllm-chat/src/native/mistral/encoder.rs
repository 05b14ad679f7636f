//! Text to ids for Mistral's tekken vocabularies, as mistral-common's `Tekkenizer.encode`.
//!
//! `Tekkenizer` wraps a `tiktoken.Encoding` built from the file's first
//! `default_vocab_size - num_special_tokens` ranks, its `config.pattern` and no special
//! tokens, and shifts every rank by the number of special ids. This encoder is that:
//! the ranks and pattern as vllm-detok's [`TekkenTokenizer`] parsed them (the file is
//! read once, by one parser), encoded with tiktoken's own algorithm (`ranked_bpe`: the
//! regex split, then the rank-ordered byte-pair merge of tiktoken's Rust core), so the
//! ids are tiktoken's by construction rather than through a conversion to another BPE
//! model. (A `tokenizers` BPE with merges derived from the ranks, as HF's tiktoken
//! converter builds it, orders the merges of one token by split position and can pick
//! another pair than tiktoken's leftmost-lowest-rank rule; `tiktoken-rs`' `CoreBPE` is
//! exact but splits with fancy-regex, several times slower.) `tests/mistral.rs` checks
//! the ids against mistral-common on random and adversarial strings.

use super::super::ranked_bpe::RankedBpe;
use vllm_detok::TekkenTokenizer;

use super::super::encode_cache::EncodeCache;
use crate::RenderError;

/// A tekken vocabulary's encoder.
pub(crate) struct TekkenEncoder {
    bpe: RankedBpe,
    shift: u32,
}

impl TekkenEncoder {
    pub(crate) fn new(tokenizer: &TekkenTokenizer) -> Result<Self, RenderError> {
        let bpe = RankedBpe::new(tokenizer.regular_tokens(), tokenizer.pattern())?;
        let shift = u32::try_from(tokenizer.num_special_tokens())
            .map_err(|_| RenderError::Tokenizer("tekken.json: too many special tokens".into()))?;
        Ok(TekkenEncoder { bpe, shift })
    }

    /// `Tekkenizer.encode(text, bos=False, eos=False)`.
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), RenderError> {
        self.bpe.encode(text, self.shift, out)
    }
}

/// The encoder of either kind of Mistral vocabulary, with a cache of encoded pieces.
pub(crate) struct TextEncoder {
    kind: EncoderKind,
    cache: EncodeCache,
}

enum EncoderKind {
    Tekken(TekkenEncoder),
    SentencePiece(Box<super::sentencepiece::SentencePieceEncoder>),
}

impl TextEncoder {
    pub(crate) fn tekken(encoder: TekkenEncoder) -> Self {
        TextEncoder {
            kind: EncoderKind::Tekken(encoder),
            cache: EncodeCache::default(),
        }
    }

    pub(crate) fn sentencepiece(encoder: super::sentencepiece::SentencePieceEncoder) -> Self {
        TextEncoder {
            kind: EncoderKind::SentencePiece(Box::new(encoder)),
            cache: EncodeCache::default(),
        }
    }

    /// Whether this is a tekken vocabulary (not SentencePiece).
    pub(crate) fn is_tekken(&self) -> bool {
        matches!(self.kind, EncoderKind::Tekken(_))
    }

    /// Empties the cache of encoded pieces and the tekken encoder's cache of merged
    /// pieces (`ranked_bpe`).
    pub(crate) fn clear_cache(&self) {
        self.cache.clear();
        if let EncoderKind::Tekken(e) = &self.kind {
            e.bpe.clear_cache();
        }
    }

    /// `tokenizer.encode(text, bos=False, eos=False)`, appended to `out`.
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), RenderError> {
        self.cache.encode_into(text, out, |text| {
            let mut ids = Vec::new();
            match &self.kind {
                EncoderKind::Tekken(e) => e.encode(text, &mut ids)?,
                EncoderKind::SentencePiece(e) => e.encode(text, &mut ids)?,
            }
            Ok(ids)
        })
    }
}
