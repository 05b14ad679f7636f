//! Turning one token id at a time into text, exactly as `tokenizers`' `DecodeStream` does.
//!
//! `DecodeStream` re-decodes a short window of ids at every step and returns the text added
//! since the previous step, holding everything back while the decoding ends in U+FFFD (an
//! incomplete character, or an invalid byte that a later token might still explain). Two
//! implementations produce the same text:
//!
//! * [`TableStream`] for tokenizers with a [`DecodeTable`]: a step appends the token's bytes
//!   to the pending bytes and checks only the last character, O(1) per token.
//! * [`WindowStream`] for every other tokenizer: the `DecodeStream` algorithm itself, with
//!   vLLM's recovery from `InvalidPrefix`, decoding through a byte-fallback [`DecodeTable`]
//!   when there is one (Gemma) and through [`Tokenizer::stream_decode`] otherwise. Unlike
//!   `DecodeStream` it holds back at most [`MAX_HELD_TOKENS`] tokens, so a long run of
//!   invalid bytes costs linear, not quadratic, work.
//!
//! Both are seeded from a short suffix of the prompt. When the prompt ends in the middle of a
//! character, only that character's bytes are kept pending, so no prompt text leaks into the
//! first delta (vLLM, priming `DecodeStream` with the whole prompt, returns the whole prompt
//! text in that case).

use std::sync::Arc;

use crate::error::Result;
use crate::table::{
    DecodeTable, Hidden, Piece, TableKind, incomplete_utf8_suffix, lossy_ends_with_replacement,
};
use crate::tokenizer::Tokenizer;

/// The prompt tokens a window is seeded with (vLLM's slow detokenizer uses 5 + 1).
const SEED_TOKENS: usize = 6;
/// How far back seeding looks at the prompt (for a suffix that does not start inside a
/// character, or past skipped special tokens for the last bytes).
const MAX_SEED_TOKENS: usize = 24;
/// The most tokens [`WindowStream`] holds back while the text ends in U+FFFD. `DecodeStream`
/// has no bound: it re-decodes the whole held run at every token, quadratic in the length of
/// a run of invalid bytes.
const MAX_HELD_TOKENS: usize = 64;
/// Tokens kept held when a run reaches [`MAX_HELD_TOKENS`]: enough for the bytes of one
/// character (at most four) to still combine with the tokens that follow.
const KEEP_HELD_TOKENS: usize = 4;
const REPLACEMENT: char = '\u{FFFD}';

/// One request's decoding state.
pub(crate) enum TextStream {
    /// O(1) per token through a shared [`DecodeTable`].
    Table(TableStream),
    /// `DecodeStream`'s window algorithm, decoding through the byte-fallback table if given.
    Window(WindowStream, Option<Arc<DecodeTable>>),
}

/// What the window algorithm decodes with.
trait Decode {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String>;
}

impl Decode for dyn Tokenizer + '_ {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        Tokenizer::stream_decode(self, ids, skip_special_tokens)
    }
}

impl Decode for DecodeTable {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        Ok(DecodeTable::decode(self, ids, skip_special_tokens))
    }
}

impl TextStream {
    /// A stream for `tokenizer`, primed with the end of `prompt`.
    pub(crate) fn new(
        tokenizer: &dyn Tokenizer,
        prompt: &[u32],
        skip_special_tokens: bool,
    ) -> Result<Self> {
        Ok(match tokenizer.decode_table() {
            Some(table) if table.kind() == TableKind::ByteLevel => {
                Self::Table(TableStream::new(table.clone(), prompt, skip_special_tokens))
            }
            Some(table) => Self::Window(
                WindowStream::new(table.as_ref(), prompt, skip_special_tokens)?,
                Some(table.clone()),
            ),
            None => Self::Window(
                WindowStream::new(tokenizer, prompt, skip_special_tokens)?,
                None,
            ),
        })
    }

    /// Decodes one more token, appending the text it releases (possibly none) to `out`.
    #[inline]
    pub(crate) fn step(
        &mut self,
        tokenizer: &dyn Tokenizer,
        id: u32,
        out: &mut String,
    ) -> Result<()> {
        match self {
            Self::Table(stream) => {
                stream.step(id, out);
                Ok(())
            }
            Self::Window(stream, Some(table)) => stream.step(table.as_ref(), id, out),
            Self::Window(stream, None) => stream.step(tokenizer, id, out),
        }
    }
}

/// Decoding through a [`DecodeTable`]: the state is only the bytes not yet released.
pub(crate) struct TableStream {
    table: Arc<DecodeTable>,
    hidden: Hidden,
    /// Bytes since the last release; always starts at a character boundary.
    pending: Vec<u8>,
}

impl TableStream {
    fn new(table: Arc<DecodeTable>, prompt: &[u32], skip_special_tokens: bool) -> Self {
        // The last few prompt bytes are enough to see whether the prompt ends inside a
        // character (at most 3 bytes of it).
        let mut tail = Vec::new();
        for &id in prompt.iter().rev().take(MAX_SEED_TOKENS) {
            let bytes = table.token_bytes(id, skip_special_tokens);
            tail.splice(0..0, bytes.iter().copied());
            if tail.len() >= 4 {
                break;
            }
        }
        let keep = incomplete_utf8_suffix(&tail);
        let pending = tail[tail.len() - keep..].to_vec();
        Self {
            table,
            hidden: Hidden::new(skip_special_tokens),
            pending,
        }
    }

    #[inline(always)]
    pub(crate) fn step(&mut self, id: u32, out: &mut String) {
        match self.table.piece(id, self.hidden) {
            // The common case: a token that is complete text on its own.
            Piece::Text(text) if self.pending.is_empty() => out.push_str(text),
            Piece::Empty => {}
            Piece::Text(text) => extend_pending(&mut self.pending, text.as_bytes(), out),
            Piece::Bytes(bytes) => extend_pending(&mut self.pending, bytes, out),
        }
    }
}

/// Appends a token's bytes to the pending bytes (an incomplete character, or bytes that may
/// start one) and releases the pending text once it no longer ends in U+FFFD.
#[cold]
fn extend_pending(pending: &mut Vec<u8>, bytes: &[u8], out: &mut String) {
    pending.extend_from_slice(bytes);
    if lossy_ends_with_replacement(pending) {
        return;
    }
    out.push_str(&String::from_utf8_lossy(pending));
    pending.clear();
}

/// `tokenizers`' `DecodeStream` state: a window of ids and the text of its first part.
pub(crate) struct WindowStream {
    skip_special_tokens: bool,
    ids: Vec<u32>,
    prefix: String,
    prefix_index: usize,
}

/// `DecodeStream`'s "Invalid prefix encountered" condition.
struct InvalidPrefix;

impl WindowStream {
    fn new(
        decoder: &(impl Decode + ?Sized),
        prompt: &[u32],
        skip_special_tokens: bool,
    ) -> Result<Self> {
        let decode = |ids: &[u32]| decoder.decode(ids, skip_special_tokens);
        // A short suffix that does not start inside a character decodes the end of the prompt
        // as the whole prompt does.
        let floor = prompt.len().saturating_sub(MAX_SEED_TOKENS);
        let mut start = prompt.len().saturating_sub(SEED_TOKENS);
        while start > floor && decode(&prompt[start..])?.starts_with(REPLACEMENT) {
            start -= 1;
        }
        let ids = prompt[start..].to_vec();
        // Like `DecodeStream`'s prefill, but when the prompt ends inside a character the
        // prefix stops before the tokens of that character instead of being left empty.
        let mut end = ids.len();
        let mut prefix = decode(&ids)?;
        while end > 0 && prefix.ends_with(REPLACEMENT) {
            end -= 1;
            prefix = decode(&ids[..end])?;
        }
        Ok(Self {
            skip_special_tokens,
            ids,
            prefix,
            prefix_index: end,
        })
    }

    fn step(&mut self, decoder: &(impl Decode + ?Sized), id: u32, out: &mut String) -> Result<()> {
        match self.try_step(decoder, id, out)? {
            Ok(()) => Ok(()),
            Err(InvalidPrefix) => {
                // vLLM (`FastIncrementalDetokenizer._protected_step`) restarts the stream
                // without context and decodes the token again.
                self.ids.clear();
                self.prefix.clear();
                self.prefix_index = 0;
                match self.try_step(decoder, id, out)? {
                    Ok(()) => Ok(()),
                    // Unreachable: an empty prefix is a prefix of every string.
                    Err(InvalidPrefix) => Ok(()),
                }
            }
        }
    }

    /// `tokenizers::step_decode_stream`, step for step.
    fn try_step(
        &mut self,
        decoder: &(impl Decode + ?Sized),
        id: u32,
        out: &mut String,
    ) -> Result<Result<(), InvalidPrefix>> {
        let skip = self.skip_special_tokens;
        if self.prefix.is_empty() && !self.ids.is_empty() {
            let new_prefix = decoder.decode(&self.ids, skip)?;
            if !new_prefix.ends_with(REPLACEMENT) {
                self.prefix = new_prefix;
                self.prefix_index = self.ids.len();
            }
        }
        self.ids.push(id);
        let string = decoder.decode(&self.ids, skip)?;
        if string.len() > self.prefix.len() && !string.ends_with(REPLACEMENT) {
            if !string.starts_with(&self.prefix) {
                return Ok(Err(InvalidPrefix));
            }
            out.push_str(&string[self.prefix.len()..]);
            self.advance(decoder, self.ids.len())?;
        } else if self.ids.len() - self.prefix_index > MAX_HELD_TOKENS {
            self.release_held(decoder, &string, out)?;
        }
        Ok(Ok(()))
    }

    /// `DecodeStream`'s move after releasing the text of `ids[..end]`: the released part
    /// becomes the prefix of the next window.
    fn advance(&mut self, decoder: &(impl Decode + ?Sized), end: usize) -> Result<()> {
        let new_prefix_index = end - self.prefix_index;
        self.ids.drain(..self.prefix_index);
        self.prefix = decoder.decode(&self.ids[..new_prefix_index], self.skip_special_tokens)?;
        self.prefix_index = new_prefix_index;
        Ok(())
    }

    /// Bounds a held-back run: releases the text of all but its last [`KEEP_HELD_TOKENS`]
    /// tokens, as if the text had stopped ending in U+FFFD there, so that the window, and
    /// the work per token, stay bounded.
    ///
    /// For byte-level decoders a U+FFFD inside a run is final (unless the bytes of one
    /// character are more than `KEEP_HELD_TOKENS` tokens apart, with tokens without bytes in
    /// between), so the text stays `DecodeStream`'s. When the run's text no longer starts
    /// with the released prefix (a byte-fallback run that turned invalid after part of it
    /// was released), `DecodeStream` is bound for vLLM's `InvalidPrefix` restart, which drops
    /// the whole run; here the run is dropped now, up to its last tokens, and decoding
    /// restarts from them without context (the text of those last tokens may then be
    /// released where vLLM drops it too). Text that the whole window (`string`) does not
    /// start with is not released: the run stays held until it does.
    #[cold]
    fn release_held(
        &mut self,
        decoder: &(impl Decode + ?Sized),
        string: &str,
        out: &mut String,
    ) -> Result<()> {
        let end = self.ids.len() - KEEP_HELD_TOKENS;
        let text = decoder.decode(&self.ids[..end], self.skip_special_tokens)?;
        if !string.starts_with(&text) {
            return Ok(());
        }
        match text.strip_prefix(self.prefix.as_str()) {
            Some(new) => {
                out.push_str(new);
                self.advance(decoder, end)
            }
            None => {
                self.ids.drain(..end);
                self.prefix.clear();
                self.prefix_index = 0;
                Ok(())
            }
        }
    }
}
