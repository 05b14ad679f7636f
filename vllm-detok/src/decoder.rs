//! `IncrementalDecoder`: one request's text deltas, exactly as vLLM's output processor emits
//! them (`vllm/v1/engine/detokenizer.py`, `FastIncrementalDetokenizer`).

use std::sync::Arc;

use crate::chars::{char_end, count_chars};
use crate::error::{Error, Result};
use crate::stop::{Found, StopMatcher};
use crate::stream::TextStream;
use crate::tokenizer::Tokenizer;

/// A request's detokenization options (the `SamplingParams` fields vLLM's detokenizer reads).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeOptions {
    /// Leave special tokens out of the text (vLLM's default: `true`).
    pub skip_special_tokens: bool,
    /// Whether consecutive added tokens keep the separator the decoder gives them (vLLM's
    /// default: `true`). With `false` (and `skip_special_tokens = false`), an added token
    /// following another added token is emitted as its bare content.
    pub spaces_between_special_tokens: bool,
    /// Stop strings; none may be empty.
    pub stop: Vec<String>,
    /// Keep the matched stop string in the text.
    pub include_stop_str_in_output: bool,
    /// Stop strings are only looked for in text of output tokens after the first `min_tokens`.
    pub min_tokens: usize,
}

impl Default for DecodeOptions {
    fn default() -> Self {
        Self {
            skip_special_tokens: true,
            spaces_between_special_tokens: true,
            stop: Vec::new(),
            include_stop_str_in_output: false,
            min_tokens: 0,
        }
    }
}

/// Why the engine finished a request (`FinishReason`), as far as text is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishKind {
    /// `max_tokens` reached (`length`).
    Length,
    /// The last token is a stop token or EOS (`stop`); its text is left out unless
    /// `include_stop_str_in_output` is set.
    StopToken,
    /// The request was aborted (`abort`) or failed.
    Abort,
}

/// A stop string that ended the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopMatch {
    /// Index of the matched string in [`DecodeOptions::stop`].
    pub index: usize,
    /// The matched string (vLLM's `stop_reason`).
    pub stop: String,
    /// Length in characters of the whole output text after the cut.
    pub text_len: usize,
    /// How many of the tokens given to this call are kept: the tokens after the one that
    /// completed the stop string are dropped (speculative decoding can deliver several), as
    /// vLLM trims `new_token_ids` and their logprobs.
    pub tokens_kept: usize,
}

/// The text released by one call, and whether the request is now finished.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delta {
    /// New text (possibly empty while a character or a possible stop string is held back).
    pub text: String,
    /// The stop string that finished the request, if one matched.
    pub stop: Option<StopMatch>,
    /// Whether the request is finished (a stop string matched, or [`IncrementalDecoder::finish`]).
    pub finished: bool,
}

struct StopState {
    matcher: StopMatcher,
    strings: Arc<[String]>,
    include: bool,
    min_tokens: usize,
    /// Characters held back while a stop string could still be completing.
    hold_back: usize,
    /// The output text from absolute byte offset `base` on: what was released since the
    /// last compaction, then the text not yet returned (from `released_bytes`). Released
    /// text is dropped in bulk by [`StopState::compact`] rather than shifted out every token.
    held: String,
    base: usize,
    /// Characters and bytes of the whole output text.
    total_chars: usize,
    total_bytes: usize,
    /// Characters and bytes already returned.
    released_chars: usize,
    released_bytes: usize,
}

/// Released text is dropped from [`StopState::held`] once it is this long, so the
/// unreleased tail (a few characters) moves once per this many bytes, not every token.
const COMPACT_BYTES: usize = 1024;

/// Turns one request's output token ids into text deltas identical to vLLM's.
///
/// Creating one costs O(prompt suffix); each call costs O(new tokens + new bytes) for
/// tokenizers with a [`DecodeTable`](crate::DecodeTable) (independent of the number of stop
/// strings), and a short window re-decode per token otherwise.
///
/// ```
/// # fn main() -> Result<(), vllm_detok::Error> {
/// use std::sync::Arc;
/// use vllm_detok::{DecodeOptions, FinishKind, HfTokenizer, IncrementalDecoder, Tokenizer};
///
/// # let json = include_bytes!("../tests/data/tiny_byte_level.json");
/// let tokenizer: Arc<dyn Tokenizer> = Arc::new(HfTokenizer::from_bytes(json)?);
/// let options = DecodeOptions { stop: vec!["lo".into()], ..DecodeOptions::default() };
/// let mut decoder = IncrementalDecoder::new(tokenizer, &[], options)?;
/// let mut text = String::new();
/// for id in [0, 1, 2] {
///     // "he", "l", "lo": one character is held back while "lo" could be completing;
///     // then "lo" matches and is cut from the text.
///     let delta = decoder.push(&[id])?;
///     text.push_str(&delta.text);
///     if delta.finished {
///         assert_eq!(delta.stop.unwrap().stop, "lo");
///         break;
///     }
/// }
/// assert_eq!(text, "hel");
/// # Ok(())
/// # }
/// ```
pub struct IncrementalDecoder {
    tokenizer: Arc<dyn Tokenizer>,
    stream: TextStream,
    /// `None` unless `spaces_between_special_tokens = false` applies; then whether the last
    /// token was an added token.
    last_added: Option<bool>,
    stop: Option<StopState>,
    include_stop_str: bool,
    num_output_tokens: usize,
    finished: bool,
}

impl std::fmt::Debug for IncrementalDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IncrementalDecoder")
            .field("num_output_tokens", &self.num_output_tokens)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl IncrementalDecoder {
    /// A decoder for a request with prompt `prompt_ids`. Only the last few prompt tokens are
    /// looked at.
    pub fn new(
        tokenizer: Arc<dyn Tokenizer>,
        prompt_ids: &[u32],
        options: DecodeOptions,
    ) -> Result<Self> {
        let skip_special_tokens = tokenizer.stream_skip_special_tokens(options.skip_special_tokens);
        let stream = TextStream::new(tokenizer.as_ref(), prompt_ids, skip_special_tokens)?;
        // vLLM: `spaces_between_special_tokens = skip_special_tokens or
        // spaces_between_special_tokens`, and nothing to do without added tokens.
        let last_added =
            (!skip_special_tokens && !options.spaces_between_special_tokens).then_some(false);
        let include_stop_str = options.include_stop_str_in_output;
        let stop = if options.stop.is_empty() {
            None
        } else {
            let strings: Arc<[String]> = options.stop.into();
            // Built first: it rejects empty stop strings.
            let matcher = StopMatcher::new(&strings)?;
            // vLLM: `max(len(s) for s in stop) - 1` characters, none when stop strings are
            // kept in the output.
            let hold_back = if options.include_stop_str_in_output {
                0
            } else {
                strings
                    .iter()
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
                    .saturating_sub(1)
            };
            Some(StopState {
                matcher,
                strings,
                include: options.include_stop_str_in_output,
                min_tokens: options.min_tokens,
                hold_back,
                held: String::new(),
                base: 0,
                total_chars: 0,
                total_bytes: 0,
                released_chars: 0,
                released_bytes: 0,
            })
        };
        Ok(Self {
            tokenizer,
            stream,
            last_added,
            stop,
            include_stop_str,
            num_output_tokens: 0,
            finished: false,
        })
    }

    /// Decodes the token ids of one engine output and returns the text that can be released.
    pub fn push(&mut self, ids: &[u32]) -> Result<Delta> {
        let mut text = String::new();
        let stop = self.push_into(ids, &mut text)?;
        Ok(Delta {
            text,
            stop,
            finished: self.finished,
        })
    }

    /// Decodes the token ids of the engine output that finished the request (possibly none)
    /// and returns all remaining text.
    ///
    /// Text of an incomplete character at the very end is not returned, as in vLLM.
    pub fn finish(&mut self, ids: &[u32], kind: FinishKind) -> Result<Delta> {
        let mut text = String::new();
        let stop = self.finish_into(ids, kind, &mut text)?;
        Ok(Delta {
            text,
            stop,
            finished: self.finished,
        })
    }

    /// [`push`](Self::push) without allocating: appends the released text to `out` and
    /// returns the stop string that finished the request, if one matched.
    pub fn push_into(&mut self, ids: &[u32], out: &mut String) -> Result<Option<StopMatch>> {
        // The common case, kept free of the general path's bookkeeping: no stop strings
        // (nothing held back), no added-token rewriting, a decode table.
        if let (TextStream::Table(stream), None, None, false) =
            (&mut self.stream, &self.stop, self.last_added, self.finished)
        {
            for &id in ids {
                stream.step(id, out);
            }
            self.num_output_tokens += ids.len();
            return Ok(None);
        }
        self.step(ids, false, false, out)
    }

    /// [`finish`](Self::finish) without allocating: appends the remaining text to `out`.
    pub fn finish_into(
        &mut self,
        ids: &[u32],
        kind: FinishKind,
        out: &mut String,
    ) -> Result<Option<StopMatch>> {
        self.step(ids, kind == FinishKind::StopToken, true, out)
    }

    /// The number of output tokens decoded so far (after any stop-string trimming).
    pub fn num_output_tokens(&self) -> usize {
        self.num_output_tokens
    }

    /// Whether the request has finished.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn step(
        &mut self,
        ids: &[u32],
        stop_terminated: bool,
        finished: bool,
        out: &mut String,
    ) -> Result<Option<StopMatch>> {
        if self.finished {
            return Err(Error::Finished);
        }
        let stop = self.update(ids, stop_terminated, out)?;
        self.finished = finished || stop.is_some();
        self.release(self.finished, out);
        Ok(stop)
    }

    /// vLLM's `BaseIncrementalDetokenizer.update`. Without stop strings nothing is held back,
    /// so text goes straight to `out`; with them, each token's text is appended to the held
    /// text and fed to the matcher at once, and the tokens after one that completes a stop
    /// string are not decoded.
    fn update(
        &mut self,
        ids: &[u32],
        stop_terminated: bool,
        out: &mut String,
    ) -> Result<Option<StopMatch>> {
        if ids.is_empty() {
            return Ok(None);
        }
        // A stop token's own text is left out unless stop strings are kept in the output.
        let skip_last = stop_terminated && !self.include_stop_str;
        let decoded = if skip_last {
            &ids[..ids.len() - 1]
        } else {
            ids
        };
        let num_prev_tokens = self.num_output_tokens;
        let tokenizer = self.tokenizer.as_ref();
        match &mut self.stop {
            None => {
                for &id in decoded {
                    self.num_output_tokens += 1;
                    decode_token(&mut self.stream, tokenizer, &mut self.last_added, id, out)?;
                }
            }
            Some(stop) => {
                for &id in decoded {
                    self.num_output_tokens += 1;
                    let before = stop.held.len();
                    decode_token(
                        &mut self.stream,
                        tokenizer,
                        &mut self.last_added,
                        id,
                        &mut stop.held,
                    )?;
                    // Stop strings count only in text of tokens past the first `min_tokens`.
                    if let Some(found) = stop.scan(before, self.num_output_tokens > stop.min_tokens)
                    {
                        // The tokens after the one completing the stop string are dropped.
                        let tokens_kept = self.num_output_tokens - num_prev_tokens;
                        return Ok(Some(stop.cut(found, tokens_kept)));
                    }
                }
            }
        }
        if skip_last {
            self.num_output_tokens += 1;
        }
        Ok(None)
    }

    /// vLLM's `get_next_output_text(finished, delta=True)`: the text past what was released,
    /// minus the last `hold_back` characters unless finished. Only used with stop strings
    /// (otherwise `update` wrote to `out` directly).
    fn release(&mut self, finished: bool, out: &mut String) {
        if let Some(stop) = &mut self.stop {
            stop.release(finished, out);
        }
    }
}

/// Decodes one token into `buffer`, rewriting an added token that follows another to its
/// bare content when `last_added` tracks them (`spaces_between_special_tokens = false`).
#[inline(always)]
fn decode_token(
    stream: &mut TextStream,
    tokenizer: &dyn Tokenizer,
    last_added: &mut Option<bool>,
    id: u32,
    buffer: &mut String,
) -> Result<()> {
    // The common case, inlined: a decode table and no added-token rewriting.
    if let (TextStream::Table(stream), None) = (&mut *stream, &last_added) {
        stream.step(id, buffer);
        return Ok(());
    }
    let before = buffer.len();
    stream.step(tokenizer, id, buffer)?;
    if let Some(last_added) = last_added {
        match tokenizer.added_token(id) {
            Some(content) => {
                if *last_added {
                    buffer.truncate(before);
                    buffer.push_str(content);
                }
                *last_added = true;
            }
            None => *last_added = false,
        }
    }
    Ok(())
}

impl StopState {
    /// Accounts for the text a token appended to `held` from byte `before` on and feeds it
    /// to the matcher; returns the first stop string ending in it when `report` is set.
    #[inline(always)]
    fn scan(&mut self, before: usize, report: bool) -> Option<Found> {
        let new = &self.held.as_bytes()[before..];
        let offset = self.total_bytes;
        self.total_bytes += new.len();
        let (chars, found) = self.matcher.feed(new, offset, report);
        self.total_chars += chars;
        found
    }

    /// vLLM's cut of the text at a matched stop string (after it when stop strings are kept).
    fn cut(&mut self, found: Found, tokens_kept: usize) -> StopMatch {
        let cut = if self.include {
            found.end
        } else {
            found.end - found.len
        };
        let unreleased = self.released_bytes - self.base;
        let keep = cut
            .saturating_sub(self.released_bytes)
            .min(self.held.len() - unreleased);
        let removed_chars = count_chars(&self.held.as_bytes()[unreleased + keep..]);
        self.held.truncate(unreleased + keep);
        self.total_bytes = self.released_bytes + keep;
        self.total_chars -= removed_chars;
        StopMatch {
            index: found.index,
            stop: self.strings[found.index].clone(),
            text_len: self.total_chars,
            tokens_kept,
        }
    }

    /// Appends to `out` the held text but its last `hold_back` characters (all of it when
    /// `finished`).
    #[inline]
    fn release(&mut self, finished: bool, out: &mut String) {
        let hold_back = if finished { 0 } else { self.hold_back };
        let target = self.total_chars.saturating_sub(hold_back);
        if target <= self.released_chars {
            return;
        }
        let unreleased = &self.held[self.released_bytes - self.base..];
        let end = if target == self.total_chars {
            unreleased.len()
        } else {
            char_end(unreleased.as_bytes(), target - self.released_chars)
        };
        out.push_str(&unreleased[..end]);
        self.released_chars = target;
        self.released_bytes += end;
        self.compact();
    }

    /// Drops the released text from `held` once there is enough of it.
    #[inline]
    fn compact(&mut self) {
        let released = self.released_bytes - self.base;
        if released >= COMPACT_BYTES {
            self.held.drain(..released);
            self.base = self.released_bytes;
        }
    }
}
