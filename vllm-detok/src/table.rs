//! The shared per-tokenizer decode tables.
//!
//! Two decoder chains map every token to fixed text, so their decoding never needs the
//! tokenizer's decoder pipeline:
//!
//! * GPT-2 style `ByteLevel` (Llama 3, Qwen, DeepSeek, GPT-OSS): `tokenizers` maps every token
//!   to a fixed byte string (the byte-level alphabet mapped back to bytes, or the token's own
//!   UTF-8 when it holds a character outside that alphabet, as added tokens may) and runs
//!   `String::from_utf8_lossy` over the concatenation. Decoding never needs a window of
//!   previous tokens: [`crate::stream`] appends bytes and looks only at the last character.
//! * SentencePiece byte fallback, `Replace("▁", " ") + ByteFallback + Fuse` (Gemma): a token
//!   is either fixed text or one byte (`<0xE2>`); a run of byte tokens decodes to its UTF-8 if
//!   valid and to one U+FFFD per byte otherwise. [`DecodeTable::decode`] computes that from
//!   the table, so `DecodeStream`'s window algorithm runs without the decoder pipeline.

/// How a table's tokens combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// Concatenated bytes, decoded lossily (`ByteLevel`, tiktoken, tekken).
    ByteLevel,
    /// Text tokens and byte tokens; runs of byte tokens decoded strictly (`ByteFallback`).
    ByteFallback,
}

/// Every token's decoded bytes, computed once per tokenizer and shared (via `Arc`) by all
/// requests.
///
/// Whether a token is complete text on its own (valid UTF-8, not ending in U+FFFD) is
/// decided once: complete tokens live in a `String` arena, so a decode step hands out their
/// `&str` without validating UTF-8 again; the others live in a byte arena. A 12-byte entry
/// per id locates the token and holds its flags.
#[derive(Debug, Clone)]
pub struct DecodeTable {
    kind: TableKind,
    entries: Vec<Entry>,
    /// Text of the complete tokens, concatenated.
    text: String,
    /// Bytes of the other tokens, concatenated.
    bytes: Vec<u8>,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Start of the token in `text` (if `COMPLETE`) or `bytes`.
    start: u32,
    len: u32,
    flags: u8,
}

/// The entry of an id without a token.
const UNKNOWN_ENTRY: Entry = Entry {
    start: 0,
    len: 0,
    flags: UNKNOWN,
};

/// The token is special: removed when `skip_special_tokens` is set.
const SPECIAL: u8 = 1;
/// The token is complete text on its own; it lives in `text`.
const COMPLETE: u8 = 2;
/// [`TableKind::ByteFallback`]: the token is one byte (`<0xE2>`).
const BYTE: u8 = 4;
/// The id has no token.
const UNKNOWN: u8 = 8;

/// Which tokens a decoding leaves out: a mask over an entry's flags.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hidden(u8);

impl Hidden {
    pub(crate) fn new(skip_special_tokens: bool) -> Self {
        Self(UNKNOWN | if skip_special_tokens { SPECIAL } else { 0 })
    }
}

/// What one token contributes to a decoding.
pub(crate) enum Piece<'a> {
    /// Nothing (unknown id, skipped special token, empty token).
    Empty,
    /// Text that is complete on its own (possibly empty).
    Text(&'a str),
    /// Bytes that are not (part of a character, invalid UTF-8, or ending in U+FFFD).
    Bytes(&'a [u8]),
}

/// The token bytes of the GPT-2 byte-level alphabet: `char` -> byte.
fn byte_level_alphabet() -> std::collections::HashMap<char, u8> {
    let mut bytes: Vec<u32> = (u32::from('!')..=u32::from('~'))
        .chain(u32::from('¡')..=u32::from('¬'))
        .chain(u32::from('®')..=u32::from('ÿ'))
        .collect();
    let mut chars = bytes.clone();
    let mut extra = 0;
    for b in 0..=255u32 {
        if !bytes.contains(&b) {
            bytes.push(b);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    bytes
        .into_iter()
        .zip(chars)
        .filter_map(|(b, c)| Some((char::from_u32(c)?, u8::try_from(b).ok()?)))
        .collect()
}

impl DecodeTable {
    /// Builds a table from each token's bytes and special flag; `tokens[id]` is `None` for
    /// ids without a token. Backends whose tokens are raw bytes (tiktoken, Mistral's tekken)
    /// use this directly.
    pub fn from_token_bytes<'a>(
        tokens: impl ExactSizeIterator<Item = Option<(&'a [u8], bool)>>,
    ) -> Self {
        let mut table = Self {
            kind: TableKind::ByteLevel,
            entries: Vec::with_capacity(tokens.len()),
            text: String::new(),
            bytes: Vec::new(),
        };
        // Vocabularies are far below 4 GiB of token text; saturate, not wrap (a saturated
        // entry reads as an empty token).
        let clamp = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        for token in tokens {
            let Some((bytes, special)) = token else {
                table.entries.push(UNKNOWN_ENTRY);
                continue;
            };
            let mut flags = if special { SPECIAL } else { 0 };
            let start = match std::str::from_utf8(bytes) {
                Ok(text) if !text.ends_with('\u{FFFD}') => {
                    flags |= COMPLETE;
                    let start = table.text.len();
                    table.text.push_str(text);
                    start
                }
                _ => {
                    let start = table.bytes.len();
                    table.bytes.extend_from_slice(bytes);
                    start
                }
            };
            table.entries.push(Entry {
                start: clamp(start),
                len: clamp(bytes.len()),
                flags,
            });
        }
        table
    }

    /// Builds the table of a `ByteLevel`-decoded tokenizer from each token's string (as
    /// `tokenizers` hands it to the decoder) and special flag; `tokens[id]` is `None` for ids
    /// without a token.
    pub fn byte_level<'a>(tokens: impl ExactSizeIterator<Item = Option<(&'a str, bool)>>) -> Self {
        let alphabet = byte_level_alphabet();
        // Same rule as `ByteLevel::decode_chain`: the whole token maps through the alphabet,
        // or, if any character is outside it, the token's UTF-8 is used as is.
        let bytes: Vec<Option<(Vec<u8>, bool)>> = tokens
            .map(|token| {
                token.map(|(token, special)| {
                    let mapped: Option<Vec<u8>> =
                        token.chars().map(|c| alphabet.get(&c).copied()).collect();
                    (mapped.unwrap_or_else(|| token.as_bytes().to_vec()), special)
                })
            })
            .collect();
        Self::from_token_bytes(
            bytes
                .iter()
                .map(|t| t.as_ref().map(|(b, special)| (b.as_slice(), *special))),
        )
    }

    /// Builds the table of a `Replace("▁", " ") + ByteFallback + Fuse` decoder (Gemma) from
    /// each token's string and special flag; `tokens[id]` is `None` for ids without a token.
    pub fn byte_fallback<'a>(
        tokens: impl ExactSizeIterator<Item = Option<(&'a str, bool)>>,
    ) -> Self {
        let mut is_byte = Vec::with_capacity(tokens.len());
        let pieces: Vec<Option<(Vec<u8>, bool)>> = tokens
            .map(|token| {
                let Some((token, special)) = token else {
                    is_byte.push(false);
                    return None;
                };
                let text = token.replace('\u{2581}', " ");
                // `ByteFallback::decode_chain`'s test, verbatim.
                let byte = if text.len() == 6 && text.starts_with("<0x") && text.ends_with('>') {
                    text.get(3..5)
                        .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                } else {
                    None
                };
                is_byte.push(byte.is_some());
                Some((byte.map_or_else(|| text.into_bytes(), |b| vec![b]), special))
            })
            .collect();
        let mut table = Self::from_token_bytes(
            pieces
                .iter()
                .map(|t| t.as_ref().map(|(b, special)| (b.as_slice(), *special))),
        );
        table.kind = TableKind::ByteFallback;
        for (entry, is_byte) in table.entries.iter_mut().zip(is_byte) {
            if is_byte {
                entry.flags |= BYTE;
            }
        }
        table
    }

    /// How this table's tokens combine.
    pub fn kind(&self) -> TableKind {
        self.kind
    }

    /// Decodes `ids` as the tokenizer's decoder would.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        match self.kind {
            TableKind::ByteLevel => {
                let bytes: Vec<u8> = ids
                    .iter()
                    .flat_map(|&id| self.token_bytes(id, skip_special_tokens))
                    .copied()
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            TableKind::ByteFallback => {
                let mut out = String::new();
                let mut run = Vec::new();
                for &id in ids {
                    // Ids the decoder never sees (unknown, skipped special) do not end a run.
                    let Some(entry) = self.entry(id, Hidden::new(skip_special_tokens)) else {
                        continue;
                    };
                    let bytes = self.bytes_of(entry);
                    if entry.flags & BYTE != 0 {
                        run.extend_from_slice(bytes);
                    } else {
                        flush_byte_run(&mut run, &mut out);
                        out.push_str(&String::from_utf8_lossy(bytes));
                    }
                }
                flush_byte_run(&mut run, &mut out);
                out
            }
        }
    }

    /// The entry of `id`, unless the decoder never sees it (unknown id, or special and
    /// skipped).
    #[inline]
    fn entry(&self, id: u32, hidden: Hidden) -> Option<&Entry> {
        let entry = self.entries.get(id as usize)?;
        (entry.flags & hidden.0 == 0).then_some(entry)
    }

    #[inline]
    fn range(entry: &Entry) -> std::ops::Range<usize> {
        let start = entry.start as usize;
        start..start.saturating_add(entry.len as usize)
    }

    #[inline]
    fn bytes_of<'a>(&'a self, entry: &'a Entry) -> &'a [u8] {
        let range = Self::range(entry);
        if entry.flags & COMPLETE != 0 {
            self.text.as_bytes().get(range)
        } else {
            self.bytes.get(range)
        }
        .unwrap_or_default()
    }

    /// What token `id` contributes to a decoding.
    #[inline]
    pub(crate) fn piece(&self, id: u32, hidden: Hidden) -> Piece<'_> {
        let Some(entry) = self.entry(id, hidden) else {
            return Piece::Empty;
        };
        let range = Self::range(entry);
        if entry.flags & COMPLETE != 0 {
            Piece::Text(self.text.get(range).unwrap_or_default())
        } else {
            Piece::Bytes(self.bytes.get(range).unwrap_or_default())
        }
    }

    /// The bytes token `id` contributes to a decoding; empty for unknown ids and for special
    /// tokens when `skip_special_tokens` is set.
    pub fn token_bytes(&self, id: u32, skip_special_tokens: bool) -> &[u8] {
        self.entry(id, Hidden::new(skip_special_tokens))
            .map_or(&[], |entry| self.bytes_of(entry))
    }

    /// The number of ids in the table.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table has no ids.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `ByteFallback`: a run of byte tokens is its UTF-8 if valid, else one U+FFFD per byte.
fn flush_byte_run(run: &mut Vec<u8>, out: &mut String) {
    if run.is_empty() {
        return;
    }
    match std::str::from_utf8(run) {
        Ok(text) => out.push_str(text),
        Err(_) => out.extend(std::iter::repeat_n('\u{FFFD}', run.len())),
    }
    run.clear();
}

/// Whether `String::from_utf8_lossy(bytes)` ends with U+FFFD, looking only at the last
/// character: the lossy decoder always starts a new character at a byte that is not a UTF-8
/// continuation byte, so the last such byte in the final four decides.
pub(crate) fn lossy_ends_with_replacement(bytes: &[u8]) -> bool {
    let floor = bytes.len().saturating_sub(4);
    match (floor..bytes.len())
        .rev()
        .find(|&i| bytes[i] & 0xC0 != 0x80)
    {
        Some(start) => match std::str::from_utf8(&bytes[start..]) {
            Ok(last) => last.ends_with('\u{FFFD}'),
            Err(_) => true,
        },
        // Four or more trailing continuation bytes: the last one is a lone byte.
        None => !bytes.is_empty(),
    }
}

/// The length of the incomplete-but-valid UTF-8 sequence that `bytes` ends with (0 to 3): the
/// start of a character whose remaining bytes have not been seen yet.
pub(crate) fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    let floor = bytes.len().saturating_sub(4);
    match (floor..bytes.len())
        .rev()
        .find(|&i| bytes[i] & 0xC0 != 0x80)
    {
        Some(start) => match std::str::from_utf8(&bytes[start..]) {
            Err(e) if e.error_len().is_none() && e.valid_up_to() == 0 => bytes.len() - start,
            _ => 0,
        },
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacement_detection_matches_lossy_decoding() {
        let samples: &[&[u8]] = &[
            b"",
            b"a",
            b"\xe2",
            b"\xe2\x82",
            b"\xe2\x82\xac",
            b"a\x80",
            b"\x80\x80\x80\x80\x80",
            b"\xef\xbf\xbd",
            b"\xf0\x9f\x98",
            b"\xf0\x9f\x98\x80",
            b"\xe2\x82a",
            b"\xc3",
            b"\xff",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80",
            b"ab\xe4\xb8\xad\x80",
        ];
        for s in samples {
            assert_eq!(
                lossy_ends_with_replacement(s),
                String::from_utf8_lossy(s).ends_with('\u{FFFD}'),
                "{s:?}"
            );
        }
        // Exhaustive over all 1- and 2-byte strings and a sweep of 3-byte ones.
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let s = [a, b];
                assert_eq!(
                    lossy_ends_with_replacement(&s),
                    String::from_utf8_lossy(&s).ends_with('\u{FFFD}')
                );
                for c in [0x41u8, 0x80, 0xbf, 0xe2, 0xf0] {
                    let s = [a, b, c];
                    assert_eq!(
                        lossy_ends_with_replacement(&s),
                        String::from_utf8_lossy(&s).ends_with('\u{FFFD}')
                    );
                }
            }
        }
    }

    #[test]
    fn tokens_round_trip() {
        let long = "a fairly long token, longer than the inline bytes";
        let tokens: Vec<Option<(&[u8], bool)>> = vec![
            Some((b"hi", false)),
            None,
            Some((long.as_bytes(), true)),
            Some((b"\xe2\x82", false)),
            Some((b"", false)),
            Some((b"exactly14bytes", false)),
        ];
        let table = DecodeTable::from_token_bytes(tokens.clone().into_iter());
        assert_eq!(table.len(), tokens.len());
        for (id, token) in tokens.iter().enumerate() {
            let expected = token.map_or(&b""[..], |(bytes, _)| bytes);
            assert_eq!(table.token_bytes(id as u32, false), expected, "id {id}");
        }
        assert_eq!(table.token_bytes(2, true), b"", "special token skipped");
        assert_eq!(table.token_bytes(99, false), b"", "unknown id");
        let shown = Hidden::new(false);
        assert!(matches!(table.piece(2, shown), Piece::Text(t) if t == long));
        assert!(matches!(table.piece(2, Hidden::new(true)), Piece::Empty));
        assert!(matches!(table.piece(3, shown), Piece::Bytes(b"\xe2\x82")));
        assert!(matches!(table.piece(4, shown), Piece::Text("")));
        assert!(matches!(table.piece(1, shown), Piece::Empty));
        assert_eq!(table.decode(&[0, 3, 5], false), "hi\u{FFFD}exactly14bytes");
    }

    #[test]
    fn incomplete_suffix() {
        assert_eq!(incomplete_utf8_suffix(b"ab\xe2\x82"), 2);
        assert_eq!(incomplete_utf8_suffix(b"ab\xf0"), 1);
        assert_eq!(incomplete_utf8_suffix(b"ab\xf0\x9f\x98"), 3);
        assert_eq!(incomplete_utf8_suffix(b"ab\xe2\x82\xac"), 0);
        assert_eq!(incomplete_utf8_suffix(b"ab\x80"), 0);
        assert_eq!(incomplete_utf8_suffix(b"ab\xff"), 0);
        assert_eq!(
            incomplete_utf8_suffix(b"\xed\xa0"),
            0,
            "surrogate prefix is invalid"
        );
        assert_eq!(incomplete_utf8_suffix(b""), 0);
    }
}
