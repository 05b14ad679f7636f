//! What the byte-vocabulary backends (Mistral's tekken, tiktoken) share: a tokenizer whose
//! ids are special tokens (text) and regular tokens (raw bytes from a base64-encoded rank
//! list), decoded by concatenating bytes and decoding them lossily.
//!
//! [`ByteVocab`] holds the tokens and builds the [`DecodeTable`]; each backend decides which
//! special tokens the table treats as special and how its own `decode` groups tokens.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::table::DecodeTable;

/// The tokens of a byte-vocabulary tokenizer, by id.
#[derive(Debug)]
pub(crate) struct ByteVocab {
    /// Each id's token: its bytes (a special token's text as UTF-8), or `None` for ids
    /// without a token.
    tokens: Vec<Option<Vec<u8>>>,
    /// Whether the id is a special token.
    special: Vec<bool>,
}

impl ByteVocab {
    /// An empty vocabulary of `len` ids.
    pub(crate) fn with_len(len: usize) -> Self {
        Self {
            tokens: vec![None; len],
            special: vec![false; len],
        }
    }

    /// Sets the token of `id` (ids past the end are ignored).
    pub(crate) fn set(&mut self, id: usize, bytes: Vec<u8>, special: bool) {
        if let (Some(token), Some(flag)) = (self.tokens.get_mut(id), self.special.get_mut(id)) {
            *token = Some(bytes);
            *flag = special;
        }
    }

    /// The bytes of `id`, if it has a token.
    pub(crate) fn bytes(&self, id: u32) -> Option<&[u8]> {
        self.tokens.get(id as usize)?.as_deref()
    }

    /// The token decoded on its own (lossily), special tokens as their text.
    pub(crate) fn piece(&self, id: u32) -> Option<String> {
        self.bytes(id)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    }

    /// Whether `id` is a special token.
    pub(crate) fn is_special(&self, id: u32) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// The number of ids.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// The decode table, where a special token is treated as special (left out with
    /// `skip_special_tokens`) unless `keep_as_text` says otherwise.
    pub(crate) fn table(&self, keep_as_text: impl Fn(&[u8]) -> bool) -> Arc<DecodeTable> {
        let tokens = self
            .tokens
            .iter()
            .zip(&self.special)
            .map(|(token, &special)| {
                token
                    .as_deref()
                    .map(|bytes| (bytes, special && !keep_as_text(bytes)))
            });
        Arc::new(DecodeTable::from_token_bytes(tokens))
    }
}

/// Decodes standard base64 (with or without `=` padding), as the rank files store tokens.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>> {
    let invalid = || Error::Tokenizer(format!("invalid base64 token {text:?}"));
    let digits = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &c in digits {
        let value = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(invalid()),
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Six leftover bits cannot come from whole bytes.
    if bits >= 6 {
        return Err(invalid());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_vectors() {
        // RFC 4648 §10.
        for (text, bytes) in [
            ("", &b""[..]),
            ("Zg==", b"f"),
            ("Zm8=", b"fo"),
            ("Zm9v", b"foo"),
            ("Zm9vYg==", b"foob"),
            ("Zm9vYmE=", b"fooba"),
            ("Zm9vYmFy", b"foobar"),
            ("/+8=", b"\xff\xef"),
            ("AA==", b"\x00"),
        ] {
            assert_eq!(decode_base64(text).unwrap(), bytes, "{text}");
        }
        assert!(decode_base64("Z").is_err());
        assert!(decode_base64("Zm9v!").is_err());
    }
}
