//! tiktoken BPE tokenizers: a rank file (`*.tiktoken`, `tiktoken.model`: one
//! `base64-token rank` pair a line, as `tiktoken.load.load_tiktoken_bpe` reads it) and the
//! special tokens with their ids, as models shipping `tokenization_*.py` wrappers define them
//! (Kimi-K2, for example).
//!
//! tiktoken's `Encoding.decode` concatenates the tokens' bytes (special tokens' text
//! included) and decodes them lossily, exactly the byte-level [`DecodeTable`]; with
//! `skip_special_tokens` the special tokens are left out.
//!
//! vLLM streams such models through the model's own Python tokenizer class and its slow
//! detokenizer, whose handling of added tokens depends on that class; this backend decodes as
//! tiktoken does and streams as `DecodeStream` would over that decoding.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::byte_vocab::{ByteVocab, decode_base64};
use crate::error::{Error, Result};
use crate::logprobs::TokenTexts;
use crate::table::DecodeTable;
use crate::tokenizer::Tokenizer;

/// A tiktoken tokenizer: BPE ranks plus special tokens.
///
/// ```
/// # fn main() -> Result<(), vllm_detok::Error> {
/// use vllm_detok::{TiktokenTokenizer, Tokenizer};
///
/// // "aGk=" is base64 for "hi".
/// let ranks = b"aA== 0\naQ== 1\naGk= 2\n";
/// let tokenizer = TiktokenTokenizer::from_rank_file(ranks, [("<|eot|>".to_string(), 3)])?;
/// assert_eq!(tokenizer.decode(&[2, 0, 3], false)?, "hih<|eot|>");
/// assert_eq!(tokenizer.decode(&[2, 0, 3], true)?, "hih");
/// # Ok(())
/// # }
/// ```
pub struct TiktokenTokenizer {
    vocab: ByteVocab,
    table: Arc<DecodeTable>,
    texts: OnceLock<TokenTexts>,
}

impl std::fmt::Debug for TiktokenTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenTokenizer")
            .field("vocab_size", &self.vocab.len())
            .finish()
    }
}

impl TiktokenTokenizer {
    /// Loads a rank file, with the special tokens' texts and ids.
    pub fn from_file(
        path: impl AsRef<Path>,
        special_tokens: impl IntoIterator<Item = (String, u32)>,
    ) -> Result<Self> {
        let path = path.as_ref();
        let ranks = std::fs::read(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_rank_file(&ranks, special_tokens)
    }

    /// Builds a tokenizer from the contents of a rank file and the special tokens' texts
    /// and ids. An id given twice keeps its last token; a special token takes the place of
    /// a rank with the same id.
    pub fn from_rank_file(
        ranks: &[u8],
        special_tokens: impl IntoIterator<Item = (String, u32)>,
    ) -> Result<Self> {
        let ranks = std::str::from_utf8(ranks).map_err(Error::tokenizer)?;
        let mut regular = Vec::new();
        for line in ranks.lines().filter(|line| !line.is_empty()) {
            let bad = || Error::Tokenizer(format!("invalid tiktoken rank line {line:?}"));
            let mut fields = line.split_whitespace();
            let (Some(token), Some(rank), None) = (fields.next(), fields.next(), fields.next())
            else {
                return Err(bad());
            };
            let rank: u32 = rank.parse().map_err(|_| bad())?;
            regular.push((rank, decode_base64(token)?));
        }
        let special: Vec<(String, u32)> = special_tokens.into_iter().collect();
        let len = regular
            .iter()
            .map(|(id, _)| id)
            .chain(special.iter().map(|(_, id)| id))
            .max()
            .map_or(0, |&max| max as usize + 1);
        let mut vocab = ByteVocab::with_len(len);
        for (id, bytes) in regular {
            vocab.set(id as usize, bytes, false);
        }
        for (text, id) in special {
            vocab.set(id as usize, text.into_bytes(), true);
        }
        let table = vocab.table(|_| false);
        Ok(Self {
            vocab,
            table,
            texts: OnceLock::new(),
        })
    }
}

impl Tokenizer for TiktokenTokenizer {
    /// tiktoken's `Encoding.decode` (`errors="replace"`); unknown ids decode to nothing.
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        Ok(self.table.decode(ids, skip_special_tokens))
    }

    fn decode_table(&self) -> Option<&Arc<DecodeTable>> {
        Some(&self.table)
    }

    /// The special tokens, which the Python wrappers register as added tokens.
    fn added_token(&self, id: u32) -> Option<&str> {
        if !self.vocab.is_special(id) {
            return None;
        }
        std::str::from_utf8(self.vocab.bytes(id)?).ok()
    }

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    fn token_piece(&self, id: u32) -> Option<String> {
        self.vocab.piece(id)
    }

    fn leading_space_marker(&self) -> Option<char> {
        None
    }

    fn token_texts(&self) -> &TokenTexts {
        self.texts.get_or_init(|| TokenTexts::build(self))
    }
}
