//! Token text for logprobs: the `token` strings (and `bytes`) of vLLM's
//! `logprobs.content[].top_logprobs`.
//!
//! vLLM (`vllm/v1/engine/logprobs.py`) decodes each sampled and top-k token on its own
//! (`decode([id])`, with SentencePiece leading spaces restored), and when that text ends in
//! U+FFFD it retries with up to four preceding *sampled* tokens as context, attributing to
//! the token the text it completes. Stand-alone texts depend only on the id, so they are
//! computed once per tokenizer ([`TokenTexts`]); only the rare U+FFFD case decodes.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// vLLM's `max_context` for correcting a token that ends in U+FFFD.
const MAX_CONTEXT: usize = 4;
const REPLACEMENT: char = '\u{FFFD}';

/// Every token's stand-alone text (`convert_ids_list_to_tokens`), for one tokenizer.
#[derive(Debug, Clone)]
pub struct TokenTexts {
    text: String,
    /// `ends[id]` is the end of token `id`'s text in `text`.
    ends: Vec<usize>,
}

impl TokenTexts {
    /// Decodes every id of `tokenizer` once.
    pub fn build(tokenizer: &dyn Tokenizer) -> Self {
        let mut texts = Self {
            text: String::new(),
            ends: Vec::with_capacity(tokenizer.vocab_size()),
        };
        let marker = tokenizer.leading_space_marker();
        for id in 0..tokenizer.vocab_size() as u32 {
            let decoded = match tokenizer.decode_table() {
                Some(table) => table.decode(&[id], false),
                None => tokenizer.decode(&[id], false).unwrap_or_default(),
            };
            let start = texts.text.len();
            texts.text.push_str(&decoded);
            if let Some(marker) = marker {
                // vLLM's `_restore_leading_spaces`: as many spaces as the piece has leading
                // markers, counting the spaces decode() kept.
                let markers = tokenizer.token_piece(id).map_or(0, |piece| {
                    piece.chars().take_while(|&c| c == marker).count()
                });
                let existing = decoded.chars().take_while(|&c| c == ' ').count();
                if markers > existing {
                    texts
                        .text
                        .insert_str(start, &" ".repeat(markers - existing));
                }
            }
            texts.ends.push(texts.text.len());
        }
        texts
    }

    /// Token `id`'s stand-alone text ("" for unknown ids).
    pub fn get(&self, id: u32) -> &str {
        let id = id as usize;
        match self.ends.get(id) {
            Some(&end) => {
                let start = if id == 0 { 0 } else { self.ends[id - 1] };
                &self.text[start..end]
            }
            None => "",
        }
    }
}

/// One request's logprob token texts; remembers the last sampled tokens for context.
///
/// The tokenizer's [`TokenTexts`] are built on first use (O(vocabulary)); call
/// [`Tokenizer::token_texts`] at startup to build them eagerly.
pub struct LogprobText {
    tokenizer: Arc<dyn Tokenizer>,
    context: VecDeque<u32>,
}

impl std::fmt::Debug for LogprobText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogprobText")
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl LogprobText {
    /// Token text for a new request.
    pub fn new(tokenizer: Arc<dyn Tokenizer>) -> Self {
        Self {
            tokenizer,
            context: VecDeque::with_capacity(MAX_CONTEXT),
        }
    }

    /// The texts of one output position: `ids[0]` is the sampled token and the rest are the
    /// top-k alternatives, in the order the engine sends them (`logprob_token_ids`). The
    /// `bytes` list vLLM returns is each text's UTF-8 (`text.as_bytes()`).
    ///
    /// Call it for every output position in order, skipping positions dropped after a stop
    /// string ([`StopMatch::tokens_kept`](crate::StopMatch::tokens_kept)), as vLLM does: the
    /// sampled tokens are the context of later positions.
    pub fn position(&mut self, ids: &[u32]) -> Result<Vec<Cow<'_, str>>> {
        let texts = self.tokenizer.token_texts();
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let text = texts.get(id);
            if text.ends_with(REPLACEMENT) {
                out.push(Cow::Owned(self.correct(id)?));
            } else {
                out.push(Cow::Borrowed(text));
            }
        }
        if let Some(&sampled) = ids.first() {
            if self.context.len() == MAX_CONTEXT {
                self.context.pop_front();
            }
            self.context.push_back(sampled);
        }
        Ok(out)
    }

    /// vLLM's `_correct_decoded_token`.
    fn correct(&self, id: u32) -> Result<String> {
        let tokenizer = self.tokenizer.as_ref();
        let decode = |ids: &[u32]| match tokenizer.decode_table() {
            Some(table) => Ok(table.decode(ids, false)),
            None => tokenizer.decode(ids, false),
        };
        let context: Vec<u32> = self.context.iter().copied().collect();
        for num_ctx in 1..=context.len() {
            let mut ids = context[context.len() - num_ctx..].to_vec();
            let ctx_len = ids.len();
            ids.push(id);
            let full = decode(&ids)?;
            if full.ends_with(REPLACEMENT) {
                continue;
            }
            let ctx = &ids[..ctx_len];
            let mut clean_end = ctx_len;
            for j in (0..ctx_len).rev() {
                if decode(&ctx[j..=j])?.ends_with(REPLACEMENT) {
                    clean_end = j;
                } else {
                    break;
                }
            }
            let clean_prefix = if clean_end > 0 {
                decode(&ctx[..clean_end])?
            } else {
                String::new()
            };
            if let Some(rest) = full.strip_prefix(clean_prefix.as_str()) {
                return Ok(rest.to_owned());
            }
            let common: usize = full
                .chars()
                .zip(clean_prefix.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.len_utf8())
                .sum();
            return Ok(full[common..].to_owned());
        }
        Ok(String::new())
    }
}
