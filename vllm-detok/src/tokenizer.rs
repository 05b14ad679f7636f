//! The `Tokenizer` trait the decoder works over, and its Hugging Face `tokenizers` backend.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use tokenizers::DecoderWrapper;

use crate::error::{Error, Result};
use crate::logprobs::TokenTexts;
use crate::table::{DecodeTable, TableKind};

/// What the decoder needs from a tokenizer.
///
/// A backend implements plain `decode`; if every token decodes to fixed bytes it also offers a
/// [`DecodeTable`], which turns decoding into O(1) work per token. Byte-level backends
/// ([`TekkenTokenizer`](crate::TekkenTokenizer), [`TiktokenTokenizer`](crate::TiktokenTokenizer))
/// build theirs with [`DecodeTable::from_token_bytes`]; `token_texts` caches
/// [`TokenTexts::build`] (see [`HfTokenizer`]).
pub trait Tokenizer: Send + Sync {
    /// Decodes `ids` exactly as `tokenizers`' `Tokenizer::decode` does (this is what
    /// `DecodeStream` and vLLM call).
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String>;

    /// The per-token byte table, if this tokenizer's decoder allows one.
    fn decode_table(&self) -> Option<&Arc<DecodeTable>>;

    /// The content of added token `id` (special or not), as vLLM's
    /// `get_added_tokens_decoder()` lists it; used for `spaces_between_special_tokens = false`.
    fn added_token(&self, id: u32) -> Option<&str>;

    /// The number of ids with a token (vocabulary plus added tokens).
    fn vocab_size(&self) -> usize;

    /// The raw vocabulary piece of `id` (`convert_ids_to_tokens`), used to restore the leading
    /// spaces of SentencePiece pieces in logprob token text.
    fn token_piece(&self, id: u32) -> Option<String>;

    /// The leading-space marker of a `Metaspace` pre-tokenizer (`▁`), if there is one.
    fn leading_space_marker(&self) -> Option<char>;

    /// Every token's stand-alone text for logprobs, built on first use and cached.
    fn token_texts(&self) -> &TokenTexts;

    /// The `skip_special_tokens` that incremental decoding applies to a request asking for
    /// `requested`. vLLM streams Mistral tokenizers through its slow detokenizer, which
    /// leaves special tokens out whatever the request says ([`TekkenTokenizer`]).
    ///
    /// [`TekkenTokenizer`]: crate::TekkenTokenizer
    fn stream_skip_special_tokens(&self, requested: bool) -> bool {
        requested
    }

    /// Decodes `ids` as vLLM's incremental detokenizer turns them into text, for tokenizers
    /// without a [`DecodeTable`]. This is `decode` unless vLLM streams the tokenizer through
    /// its slow path with a text conversion of its own
    /// ([`SentencePieceTokenizer`](crate::SentencePieceTokenizer)).
    fn stream_decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.decode(ids, skip_special_tokens)
    }
}

/// A Hugging Face `tokenizer.json` tokenizer.
///
/// Loading decides once, from the decoder in `tokenizer.json`, whether a [`DecodeTable`]
/// applies: a `ByteLevel` decoder (Llama 3, Qwen, DeepSeek, GPT-OSS) or Gemma's
/// `Replace("▁", " ") + ByteFallback + Fuse`. Other tokenizers decode through
/// `tokenizers`' own `decode`.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    table: Option<Arc<DecodeTable>>,
    added: HashMap<u32, String>,
    marker: Option<char>,
    texts: OnceLock<TokenTexts>,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("decode_table", &self.table.is_some())
            .field("added_tokens", &self.added.len())
            .finish()
    }
}

impl HfTokenizer {
    /// Loads a `tokenizer.json` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_bytes(&json)
    }

    /// Loads `tokenizer.json` from a model directory.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        Self::from_file(dir.as_ref().join("tokenizer.json"))
    }

    /// Loads a tokenizer from the contents of a `tokenizer.json`.
    pub fn from_bytes(json: &[u8]) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_bytes(json).map_err(Error::tokenizer)?;
        Ok(Self::new(inner))
    }

    /// Wraps an already loaded `tokenizers::Tokenizer`.
    pub fn new(inner: tokenizers::Tokenizer) -> Self {
        let added: HashMap<u32, String> = inner
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(id, token)| (id, token.content))
            .collect();
        let table = decode_table(&inner).map(Arc::new);
        let marker = metaspace_marker(inner.get_pre_tokenizer());
        Self {
            inner,
            table,
            added,
            marker,
            texts: OnceLock::new(),
        }
    }

    /// The wrapped `tokenizers::Tokenizer`.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

/// The decode table the tokenizer's decoder allows, if any: a `ByteLevel` decoder, or
/// exactly Gemma's `Replace("▁", " ") + ByteFallback + Fuse`. Tokens are looked up as
/// `TokenizerImpl::decode` does (added vocabulary first, then the model), and a token is
/// special when its *string* is a special added token.
fn decode_table(inner: &tokenizers::Tokenizer) -> Option<DecodeTable> {
    let byte_fallback = serde_json::json!({
        "type": "Sequence",
        "decoders": [
            {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ]
    });
    let decoder = inner.get_decoder()?;
    let kind = match decoder {
        DecoderWrapper::ByteLevel(_) => TableKind::ByteLevel,
        _ if serde_json::to_value(decoder).ok()? == byte_fallback => TableKind::ByteFallback,
        _ => return None,
    };
    let size = inner.get_vocab_size(true) as u32;
    let max_id = inner
        .get_added_tokens_decoder()
        .keys()
        .copied()
        .max()
        .map_or(0, |m| m + 1);
    let added = inner.get_added_vocabulary();
    let tokens: Vec<Option<(String, bool)>> = (0..size.max(max_id))
        .map(|id| {
            let token = inner.id_to_token(id)?;
            let special = added.is_special_token(&token);
            Some((token, special))
        })
        .collect();
    let tokens = tokens
        .iter()
        .map(|t| t.as_ref().map(|(s, special)| (s.as_str(), *special)));
    Some(match kind {
        TableKind::ByteLevel => DecodeTable::byte_level(tokens),
        TableKind::ByteFallback => DecodeTable::byte_fallback(tokens),
    })
}

fn metaspace_marker(pre: Option<&tokenizers::PreTokenizerWrapper>) -> Option<char> {
    use tokenizers::PreTokenizerWrapper as P;
    match pre? {
        P::Metaspace(m) => Some(m.get_replacement()),
        P::Sequence(seq) => seq.as_ref().iter().find_map(|p| match p {
            P::Metaspace(m) => Some(m.get_replacement()),
            _ => None,
        }),
        _ => None,
    }
}

impl Tokenizer for HfTokenizer {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(Error::tokenizer)
    }

    fn decode_table(&self) -> Option<&Arc<DecodeTable>> {
        self.table.as_ref()
    }

    fn added_token(&self, id: u32) -> Option<&str> {
        self.added.get(&id).map(String::as_str)
    }

    fn vocab_size(&self) -> usize {
        let max_added = self
            .added
            .keys()
            .copied()
            .max()
            .map_or(0, |m| m as usize + 1);
        self.inner.get_vocab_size(true).max(max_added)
    }

    fn token_piece(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    fn leading_space_marker(&self) -> Option<char> {
        self.marker
    }

    fn token_texts(&self) -> &TokenTexts {
        self.texts.get_or_init(|| TokenTexts::build(self))
    }
}
