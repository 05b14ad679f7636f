//! Mistral's tekken tokenizer (`tekken.json`, mistral-common's format), decoded as vLLM
//! decodes it.
//!
//! Ids `0..num_special_tokens` are special tokens (the file's `special_tokens`, or for
//! tokenizers up to v7 without that list mistral-common's 20 historical ones, padded with
//! `<SPECIAL_{id}>`); the next ids are the first `default_vocab_size - num_special_tokens`
//! byte tokens of `vocab`, in rank order.
//!
//! vLLM streams Mistral tokenizers through its slow detokenizer
//! (`SlowIncrementalDetokenizer`, `convert_ids_to_tokens` + `convert_tokens_to_string` of
//! `vllm/tokenizers/mistral.py`). For tekken that comes down to: the text is the lossy
//! UTF-8 decoding of the tokens' concatenated bytes, held back while it ends in U+FFFD, and
//! every special token is left out *whatever `skip_special_tokens` says*, except the
//! tool-call and reasoning markers `[TOOL_CALLS]`, `[ARGS]`, `[THINK]` and `[/THINK]`, which
//! are kept as text. The decode table encodes exactly that, so decoding is O(1) per token.
//!
//! Two behaviours of vLLM's slow path are deliberately not reproduced (the fixture
//! generator documents how its golden data handles them):
//! * with `skip_special_tokens = false`, vLLM joins each token's *own* lossy decoding, so a
//!   character split across tokens comes out as U+FFFD characters; here it comes out whole,
//!   as with `skip_special_tokens = true`;
//! * when the prompt ends inside a character, vLLM drops that character (and the U+FFFD of
//!   an invalid one) from the output; here it is the first output text, as for the other
//!   tokenizers.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::byte_vocab::{ByteVocab, decode_base64};
use crate::error::{Error, Result};
use crate::logprobs::TokenTexts;
use crate::table::DecodeTable;
use crate::tokenizer::Tokenizer;

/// mistral-common's `Tekkenizer.DEPRECATED_SPECIAL_TOKENS`: the special tokens of tekken
/// files up to v7 that do not list their own.
const DEPRECATED_SPECIAL_TOKENS: [&str; 20] = [
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
];

/// The special tokens vLLM's `MistralTokenizer` keeps in streamed text
/// (`to_decode_special_tokens`).
pub(crate) const KEPT_SPECIAL_TOKENS: [&str; 4] = ["[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"];

/// The last tekken version whose files may omit `special_tokens`.
const LAST_VERSION_WITHOUT_SPECIAL_TOKENS: u32 = 7;

/// A Mistral tekken tokenizer (`tekken.json`).
///
/// ```no_run
/// # fn main() -> Result<(), vllm_detok::Error> {
/// use std::sync::Arc;
/// use vllm_detok::{DecodeOptions, IncrementalDecoder, TekkenTokenizer, Tokenizer};
///
/// let tokenizer: Arc<dyn Tokenizer> =
///     Arc::new(TekkenTokenizer::from_file("Mistral-Nemo/tekken.json")?);
/// let mut decoder = IncrementalDecoder::new(tokenizer, &[1], DecodeOptions::default())?;
/// print!("{}", decoder.push(&[1091, 1044])?.text);
/// # Ok(())
/// # }
/// ```
pub struct TekkenTokenizer {
    vocab: ByteVocab,
    num_special_tokens: usize,
    version: u32,
    pattern: String,
    has_image_config: bool,
    table: Arc<DecodeTable>,
    texts: OnceLock<TokenTexts>,
}

impl std::fmt::Debug for TekkenTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TekkenTokenizer")
            .field("vocab_size", &self.vocab.len())
            .field("num_special_tokens", &self.num_special_tokens)
            .finish()
    }
}

impl TekkenTokenizer {
    /// Loads a `tekken.json` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_bytes(&json)
    }

    /// Loads a tokenizer from the contents of a `tekken.json`, as mistral-common's
    /// `Tekkenizer.from_file` does.
    pub fn from_bytes(json: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::Tokenizer(format!("tekken.json: {what}"));
        let file: serde_json::Value = serde_json::from_slice(json).map_err(Error::tokenizer)?;
        let config = &file["config"];
        let number = |key: &str| {
            config[key]
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| bad(&format!("config.{key} is not a number")))
        };
        let vocab_size = number("default_vocab_size")?;
        let num_special_tokens = number("default_num_special_tokens")?;
        let version = config["version"]
            .as_str()
            .and_then(|v| v.strip_prefix('v'))
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| bad("config.version is not a version (\"v3\")"))?;

        let mut specials: Vec<String> = match file.get("special_tokens") {
            Some(serde_json::Value::Array(list)) => list
                .iter()
                .map(|t| t["token_str"].as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| bad("special token without token_str"))?,
            Some(serde_json::Value::Null) | None
                if version <= LAST_VERSION_WITHOUT_SPECIAL_TOKENS =>
            {
                DEPRECATED_SPECIAL_TOKENS.map(str::to_owned).to_vec()
            }
            _ => return Err(bad("special_tokens missing (required after v7)")),
        };
        if specials.len() > num_special_tokens {
            return Err(bad("more special tokens than default_num_special_tokens"));
        }
        specials.extend((specials.len()..num_special_tokens).map(|id| format!("<SPECIAL_{id}>")));

        let regular = vocab_size
            .checked_sub(num_special_tokens)
            .ok_or_else(|| bad("default_vocab_size below the number of special tokens"))?;
        let tokens = file["vocab"]
            .as_array()
            .ok_or_else(|| bad("vocab is not a list"))?;
        if tokens.len() < regular {
            return Err(bad("vocab shorter than default_vocab_size"));
        }

        let mut vocab = ByteVocab::with_len(vocab_size);
        for (id, text) in specials.into_iter().enumerate() {
            vocab.set(id, text.into_bytes(), true);
        }
        for (rank, token) in tokens[..regular].iter().enumerate() {
            let base64 = token["token_bytes"]
                .as_str()
                .ok_or_else(|| bad("vocab entry without token_bytes"))?;
            vocab.set(num_special_tokens + rank, decode_base64(base64)?, false);
        }
        let pattern = config["pattern"]
            .as_str()
            .ok_or_else(|| bad("config.pattern is not a string"))?
            .to_owned();
        let has_image_config = file.get("image").is_some_and(|image| !image.is_null());
        let table = vocab.table(|text| KEPT_SPECIAL_TOKENS.iter().any(|k| k.as_bytes() == text));
        Ok(Self {
            vocab,
            num_special_tokens,
            version,
            pattern,
            has_image_config,
            table,
            texts: OnceLock::new(),
        })
    }
}

/// What an encoder needs from a `tekken.json` (mistral-common's `Tekkenizer`), parsed
/// once here so that encoders (vllm-chat's Mistral renderer) do not parse the file again.
impl TekkenTokenizer {
    /// The tokenizer version of `config.version` (`3` for `"v3"`), which selects
    /// mistral-common's instruct tokenizer.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The pre-tokenization regex (`config.pattern`, tiktoken's `pat_str`).
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The number of special ids (`config.default_num_special_tokens`); regular token
    /// `rank` has id `num_special_tokens + rank`.
    pub fn num_special_tokens(&self) -> usize {
        self.num_special_tokens
    }

    /// True when the file has an `image` section (a multimodal model).
    pub fn has_image_config(&self) -> bool {
        self.has_image_config
    }

    /// The bytes of each regular token, in rank order (tiktoken's mergeable ranks).
    pub fn regular_tokens(&self) -> impl Iterator<Item = &[u8]> {
        (self.num_special_tokens..self.vocab.len())
            .filter_map(|id| u32::try_from(id).ok())
            .filter_map(|id| self.vocab.bytes(id))
    }

    /// The id of a special token given by its text (`[INST]`), as
    /// `Tekkenizer.get_special_token`.
    pub fn special_token_id(&self, text: &str) -> Option<u32> {
        (0..self.num_special_tokens)
            .filter_map(|id| u32::try_from(id).ok())
            .find(|&id| self.vocab.bytes(id) == Some(text.as_bytes()))
    }
}

impl Tokenizer for TekkenTokenizer {
    /// transformers' `MistralCommonBackend.decode` (what vLLM's `MistralTokenizer.decode`
    /// calls): runs of regular tokens decoded lossily one run at a time, special tokens as
    /// their text (left out with `skip_special_tokens`, which also drops a leading
    /// Voxtral `lang:xx`).
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let mut out = String::new();
        let mut run = Vec::new();
        for &id in ids {
            let Some(bytes) = self.vocab.bytes(id) else {
                continue;
            };
            if self.vocab.is_special(id) {
                out.push_str(&String::from_utf8_lossy(&run));
                run.clear();
                if !skip_special_tokens {
                    out.push_str(&String::from_utf8_lossy(bytes));
                }
            } else {
                run.extend_from_slice(bytes);
            }
        }
        out.push_str(&String::from_utf8_lossy(&run));
        if skip_special_tokens && let Some(rest) = strip_language_tag(&out) {
            return Ok(rest.to_owned());
        }
        Ok(out)
    }

    /// Special tokens are special in the table, except the markers vLLM keeps as text: with
    /// `skip_special_tokens = false` the table decodes as `decode` does (logprob token
    /// text), and streaming always skips (see [`Tokenizer::stream_skip_special_tokens`]).
    fn decode_table(&self) -> Option<&Arc<DecodeTable>> {
        Some(&self.table)
    }

    /// vLLM's `MistralTokenizer.get_added_vocab()` is empty.
    fn added_token(&self, _id: u32) -> Option<&str> {
        None
    }

    fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// mistral-common's `id_to_piece`: the token decoded on its own, special tokens as
    /// their text.
    fn token_piece(&self, id: u32) -> Option<String> {
        self.vocab.piece(id)
    }

    fn leading_space_marker(&self) -> Option<char> {
        None
    }

    fn token_texts(&self) -> &TokenTexts {
        self.texts.get_or_init(|| TokenTexts::build(self))
    }

    fn stream_skip_special_tokens(&self, _requested: bool) -> bool {
        true
    }
}

/// The text after a leading `lang:xx` (two ASCII lowercase letters), if there is one.
fn strip_language_tag(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("lang:")?;
    let code = rest.as_bytes().get(..2)?;
    code.iter().all(u8::is_ascii_lowercase).then(|| &rest[2..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tag() {
        assert_eq!(strip_language_tag("lang:enHello"), Some("Hello"));
        assert_eq!(strip_language_tag("lang:e"), None);
        assert_eq!(strip_language_tag("lang:E1x"), None);
        assert_eq!(strip_language_tag("lang:é"), None);
        assert_eq!(strip_language_tag("Hello"), None);
    }
}
