//! The tokenizer, with a fast exact pre-tokenizer for GPT-4-style split patterns.
//!
//! Qwen2/Qwen3 and Llama 3 tokenizers split text with one regex
//! (`(?i:'s|'t|…)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`)
//! before byte-level BPE. The `tokenizers` crate runs it through Oniguruma, which is
//! slow on Unicode classes: for a 900-character chat prompt the split costs ~0.9 ms,
//! more than everything else in rendering. [`FastPreTokenizer`] recognises these exact
//! patterns in `tokenizer.json` and matches them with a hand-written scanner that
//! follows the regex's leftmost-first alternation and backtracking rules; any other
//! pre-tokenizer runs unchanged. `tests/pretokenizer.rs` checks the scanner against
//! Oniguruma on the parity prompts and on random multilingual text.
//!
//! Prompts are encoded by [`SegmentEncoder`]: cut at added tokens, each segment
//! cached, and — for byte-level BPE tokenizers using that split (Qwen2/Qwen3,
//! Llama 3) — encoded to ids without `tokenizers`' `NormalizedString`/`Encoding`
//! bookkeeping (`bpe`), on several threads when long (`parallel`, cut at pre-token
//! boundaries the regex guarantees). A 300k-token prompt took ~150 ms through
//! `tokenizers`; it takes ~20 ms on one core this way (`benches/render.rs`
//! `long/*`, `scripts/bench_long_prompt.sh`, docs/performance.md "Long prompts").
//! `tests/tokenizer_exact.rs` checks ids against `tokenizers::Tokenizer::encode` on
//! every vendored tokenizer.

mod bpe;
mod parallel;

use std::sync::OnceLock;

use serde::{Deserialize, Deserializer};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::tokenizer::normalizer::Range;
use tokenizers::{
    DecoderWrapper, ModelWrapper, NormalizedString, NormalizerWrapper, PostProcessorWrapper,
    PreTokenizedString, PreTokenizer, TokenizerImpl,
};

/// The tokenizer type of this crate: `tokenizers`' own, with [`FastPreTokenizer`].
pub type Tokenizer = TokenizerImpl<
    ModelWrapper,
    NormalizerWrapper,
    FastPreTokenizer,
    PostProcessorWrapper,
    DecoderWrapper,
>;

/// The split regex of Qwen2/Qwen3 (one digit per piece).
const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// The split regex of Llama 3 (up to three digits per piece).
const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A pre-tokenizer: the model's own, except that a recognised GPT-4-style split is
/// done by a scanner instead of Oniguruma.
#[derive(Debug, Clone)]
pub struct FastPreTokenizer {
    /// The scanner replacing the first step, when recognised.
    split: Option<Gpt4Split>,
    /// What runs after the scanner (e.g. `ByteLevel`), or the whole original pre-tokenizer.
    rest: Vec<PreTokenizerWrapper>,
}

/// The recognised patterns, which differ only in digit grouping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gpt4Split {
    max_digits: usize,
}

impl FastPreTokenizer {
    /// True when the split runs on the scanner rather than on Oniguruma.
    pub fn is_accelerated(&self) -> bool {
        self.split.is_some()
    }

    /// The split, when the whole pre-tokenizer is the split then `ByteLevel` without
    /// prefix space nor regex (bytes mapped one to one, no further cut).
    fn byte_level_split(&self) -> Option<Gpt4Split> {
        let [PreTokenizerWrapper::ByteLevel(byte_level)] = self.rest.as_slice() else {
            return None;
        };
        let json = serde_json::to_value(byte_level).ok()?;
        (json["add_prefix_space"] == false && json["use_regex"] == false).then_some(self.split?)
    }
}

impl<'de> Deserialize<'de> for FastPreTokenizer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let json = serde_json::Value::deserialize(deserializer)?;
        let fallback = |json: serde_json::Value| -> Result<Self, D::Error> {
            let wrapper: PreTokenizerWrapper =
                serde_json::from_value(json).map_err(serde::de::Error::custom)?;
            Ok(FastPreTokenizer {
                split: None,
                rest: vec![wrapper],
            })
        };
        let Some(steps) = json
            .get("pretokenizers")
            .and_then(|p| p.as_array())
            .filter(|_| json["type"] == "Sequence")
        else {
            return fallback(json);
        };
        let Some(first) = steps.first() else {
            return fallback(json);
        };
        let is_isolated_split =
            first["type"] == "Split" && first["behavior"] == "Isolated" && first["invert"] == false;
        let split = match first["pattern"]["Regex"].as_str() {
            Some(QWEN2_PATTERN) if is_isolated_split => Gpt4Split { max_digits: 1 },
            Some(LLAMA3_PATTERN) if is_isolated_split => Gpt4Split { max_digits: 3 },
            _ => return fallback(json),
        };
        let rest = steps[1..]
            .iter()
            .map(|s| serde_json::from_value(s.clone()).map_err(serde::de::Error::custom))
            .collect::<Result<Vec<PreTokenizerWrapper>, _>>()?;
        Ok(FastPreTokenizer {
            split: Some(split),
            rest,
        })
    }
}

impl PreTokenizer for FastPreTokenizer {
    fn pre_tokenize(&self, pretokenized: &mut PreTokenizedString) -> tokenizers::Result<()> {
        if let Some(split) = self.split {
            pretokenized.split(|_, normalized: NormalizedString| {
                let text = normalized.get();
                let mut pieces = Vec::new();
                let mut start = 0;
                while start < text.len() {
                    let end = split.match_at(text, start);
                    if let Some(piece) = normalized.slice(Range::Normalized(start..end)) {
                        pieces.push(piece);
                    }
                    start = end;
                }
                Ok(pieces)
            })?;
        }
        for step in &self.rest {
            step.pre_tokenize(pretokenized)?;
        }
        Ok(())
    }
}

/// Unicode letters (`\p{L}`), as sorted ranges.
fn letters() -> &'static [(char, char)] {
    static LETTERS: OnceLock<Vec<(char, char)>> = OnceLock::new();
    LETTERS.get_or_init(|| {
        use regex_syntax::hir::{Class, HirKind};
        let hir = regex_syntax::Parser::new().parse(r"\p{L}").ok();
        match hir.as_ref().map(|h| h.kind()) {
            Some(HirKind::Class(Class::Unicode(class))) => class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect(),
            _ => Vec::new(),
        }
    })
}

fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    let ranges = letters();
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// `\p{N}`: Nd, Nl and No.
fn is_number(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        c.is_numeric()
    }
}

/// `\s`: Unicode White_Space.
fn is_space(c: char) -> bool {
    c.is_whitespace()
}

fn is_newline(c: char) -> bool {
    c == '\r' || c == '\n'
}

impl Gpt4Split {
    /// The end (byte offset) of the regex match that starts at `start` (never empty).
    pub(crate) fn match_at(self, text: &str, start: usize) -> usize {
        let rest = &text[start..];
        let Some(c0) = rest.chars().next() else {
            return text.len();
        };
        let after = |i: usize| start + i;
        let next = rest[c0.len_utf8()..].chars().next();

        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        if c0 == '\'' {
            let tail = &rest[1..];
            for suffix in ["s", "t", "re", "ve", "m", "ll", "d"] {
                if let Some(len) = ci_prefix(tail, suffix) {
                    return after(1 + len);
                }
            }
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        let letters_from = |from: usize| -> usize {
            let mut end = from;
            for c in rest[from..].chars() {
                if !is_letter(c) {
                    break;
                }
                end += c.len_utf8();
            }
            end
        };
        if is_letter(c0) {
            return after(letters_from(0));
        }
        if !is_newline(c0) && !is_number(c0) && next.is_some_and(is_letter) {
            return after(letters_from(c0.len_utf8()));
        }
        // \p{N}{1,max}
        if is_number(c0) {
            let mut end = 0;
            for c in rest.chars().take(self.max_digits) {
                if !is_number(c) {
                    break;
                }
                end += c.len_utf8();
            }
            return after(end);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        let is_other = |c: char| !is_space(c) && !is_letter(c) && !is_number(c);
        let other_from = if c0 == ' ' && next.is_some_and(is_other) {
            Some(1)
        } else if is_other(c0) {
            Some(0)
        } else {
            None
        };
        if let Some(from) = other_from {
            let mut end = from;
            let mut in_newlines = false;
            for c in rest[from..].chars() {
                if !in_newlines && is_other(c) {
                    end += c.len_utf8();
                } else if is_newline(c) {
                    in_newlines = true;
                    end += c.len_utf8();
                } else {
                    break;
                }
            }
            return after(end);
        }
        // Whitespace: `\s*[\r\n]+`, then `\s+(?!\S)`, then `\s+`.
        let mut run_end = 0;
        let mut last_newline_end = None;
        let mut last_char_start = 0;
        for (i, c) in rest.char_indices() {
            if !is_space(c) {
                break;
            }
            if is_newline(c) {
                last_newline_end = Some(i + c.len_utf8());
            }
            last_char_start = i;
            run_end = i + c.len_utf8();
        }
        if let Some(end) = last_newline_end {
            return after(end);
        }
        let at_end = run_end == rest.len();
        if at_end || last_char_start == 0 {
            // Followed by nothing, or a single space before a non-space: the whole run.
            return after(run_end);
        }
        // Leave the last whitespace character to prefix the next piece.
        after(last_char_start)
    }
}

/// Case-insensitive ASCII prefix match as Oniguruma's `(?i)` does it for these
/// suffixes (`ſ`, U+017F, folds to `s`); returns the matched byte length.
fn ci_prefix(text: &str, suffix: &str) -> Option<usize> {
    let mut len = 0;
    let mut chars = text.chars();
    for want in suffix.chars() {
        let c = chars.next()?;
        let matches = c.eq_ignore_ascii_case(&want) || (want == 's' && c == '\u{17f}');
        if !matches {
            return None;
        }
        len += c.len_utf8();
    }
    Some(len)
}

/// Largest number of cached segments before the cache is cleared.
const SEGMENT_CACHE_ENTRIES: usize = 4096;
/// Longest segment (bytes) kept in the cache.
const SEGMENT_CACHE_MAX_LEN: usize = 64 * 1024;
/// Most bytes (text and ids) the cache holds before it is cleared.
const SEGMENT_CACHE_MAX_BYTES: usize = 32 << 20;

/// When a long segment is encoded on several threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelEncoding {
    /// Segments shorter than this (bytes, after normalization) are encoded on the
    /// calling thread alone; longer ones are cut into pieces of at least this size.
    pub min_bytes: usize,
    /// Most threads one segment uses, the calling thread included (1: never parallel).
    pub max_threads: usize,
}

impl Default for ParallelEncoding {
    /// 256 KiB (about 60k tokens, ~4 ms on one core) and every available core: below
    /// that, starting threads costs more than it saves.
    fn default() -> Self {
        ParallelEncoding {
            min_bytes: 256 * 1024,
            max_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

impl ParallelEncoding {
    /// Always on the calling thread.
    pub fn sequential() -> Self {
        ParallelEncoding {
            min_bytes: usize::MAX,
            max_threads: 1,
        }
    }
}

/// Encodes prompts: by cached segments between added tokens, and for byte-level BPE
/// tokenizers with the Qwen2/Llama 3 split, without `tokenizers`' offset bookkeeping
/// and on several threads for long segments.
///
/// `tokenizers` first cuts the text at its non-normalized added tokens (`<|im_start|>`,
/// `<|eot_id|>`, …; leftmost-longest, as `AddedVocabulary` does) and then normalizes,
/// pre-tokenizes and runs the model on each piece independently. So the ids of a
/// prompt are the concatenation of the ids of its pieces, and a piece that recurs
/// across requests (a system prompt, a tool list, earlier turns) is encoded once.
/// Used only when no such added token strips or single-word-matches (which would move
/// the cut points); otherwise the whole text is encoded by `tokenizers`.
///
/// Each piece is then encoded by `bpe::ByteLevelBpe` when the tokenizer's pipeline is
/// one it reproduces exactly (Qwen2/Qwen3, Llama 3: NFC or no normalizer, the split,
/// byte-level BPE), else by `tokenizers`. A piece of at least
/// [`ParallelEncoding::min_bytes`] is cut at pre-token boundaries (see the `parallel`
/// module) and its parts encoded on scoped threads; ids equal the sequential ones.
/// `tests/tokenizer_exact.rs` checks all of it against `tokenizers::Tokenizer::encode`.
pub struct SegmentEncoder {
    splitter: Option<(aho_corasick::AhoCorasick, Vec<u32>)>,
    fast: Option<bpe::ByteLevelBpe>,
    /// With `fast`: the most bytes of input one token (vocabulary entry or added
    /// token) stands for, found once here rather than per request.
    max_token_bytes: Option<usize>,
    parallel: ParallelEncoding,
    cache: std::sync::Mutex<SegmentCache>,
}

/// Segment → ids, with the bytes it holds.
#[derive(Default)]
struct SegmentCache {
    map: std::collections::HashMap<Box<str>, std::sync::Arc<[u32]>>,
    bytes: usize,
}

impl std::fmt::Debug for SegmentEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentEncoder")
            .field("enabled", &self.splitter.is_some())
            .field("fast", &self.fast.is_some())
            .field("parallel", &self.parallel)
            .finish()
    }
}

impl SegmentEncoder {
    /// Prepares the cut points of `tokenizer`, disabled when they would not be exact,
    /// and the ids-only encoder when its pipeline allows; default parallelism.
    pub fn new(tokenizer: &Tokenizer) -> Self {
        let added = tokenizer.get_added_tokens_decoder();
        let mut pairs: Vec<(&str, u32)> = added
            .iter()
            .filter(|(_, t)| !t.normalized)
            .map(|(id, t)| (t.content.as_str(), *id))
            .collect();
        pairs.sort_by_key(|(_, id)| *id);
        let exact = added
            .values()
            .filter(|t| !t.normalized)
            .all(|t| !t.lstrip && !t.rstrip && !t.single_word);
        let splitter = if exact && !pairs.is_empty() && !pairs.iter().any(|(c, _)| c.is_empty()) {
            aho_corasick::AhoCorasick::builder()
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(pairs.iter().map(|(c, _)| c))
                .ok()
                .map(|ac| (ac, pairs.iter().map(|(_, id)| *id).collect()))
        } else {
            None
        };
        // Without a splitter the fast path would see added tokens as text.
        let fast = if splitter.is_some() || added.is_empty() {
            bpe::ByteLevelBpe::new(tokenizer)
        } else {
            None
        };
        let max_token_bytes = fast.as_ref().map(|fast| {
            let added = added.values().map(|t| t.content.len()).max().unwrap_or(0);
            fast.max_text_bytes_per_token().max(added).max(1)
        });
        SegmentEncoder {
            splitter,
            fast,
            max_token_bytes,
            parallel: ParallelEncoding::default(),
            cache: Default::default(),
        }
    }

    /// The same, encoding long segments as `parallel` says.
    pub fn with_parallelism(mut self, parallel: ParallelEncoding) -> Self {
        self.parallel = parallel;
        self
    }

    /// True when prompts are encoded by cached segments.
    pub fn is_enabled(&self) -> bool {
        self.splitter.is_some()
    }

    /// True when segments are encoded by the ids-only byte-level BPE rather than by
    /// `tokenizers`.
    pub fn is_fast(&self) -> bool {
        self.fast.is_some()
    }

    /// A lower bound on the number of tokens `text` encodes to, found without encoding
    /// it: the text's length over the most bytes one token can stand for (vocabulary
    /// entries and added tokens alike). Known for the tokenizers the fast path
    /// reproduces (byte-level BPE, where every token stands for at least one byte and
    /// nothing fuses unknown characters); 0 for the others.
    pub fn min_tokens(&self, text: &str) -> usize {
        self.max_token_bytes
            .map_or(0, |bytes| text.len().div_ceil(bytes))
    }

    /// Token ids of `text` without added special tokens.
    pub fn encode(&self, tokenizer: &Tokenizer, text: &str) -> tokenizers::Result<Vec<u32>> {
        self.encode_with(tokenizer, text, false)
    }

    /// Token ids of `text`, as `tokenizer.encode_fast(text, add_special_tokens)`.
    pub fn encode_with(
        &self,
        tokenizer: &Tokenizer,
        text: &str,
        add_special_tokens: bool,
    ) -> tokenizers::Result<Vec<u32>> {
        let specials = match &self.fast {
            Some(fast) if add_special_tokens => fast.specials(),
            _ if add_special_tokens => None,
            _ => Some((&[][..], &[][..])),
        };
        let Some((before, after)) = specials else {
            return Ok(tokenizer
                .encode_fast(text, add_special_tokens)?
                .get_ids()
                .to_vec());
        };
        let mut out = Vec::with_capacity(text.len() / 4 + before.len() + after.len());
        out.extend_from_slice(before);
        match &self.splitter {
            Some((matcher, ids)) => {
                let mut last = 0;
                for m in matcher.find_iter(text) {
                    if m.start() > last {
                        self.encode_segment(tokenizer, &text[last..m.start()], &mut out)?;
                    }
                    out.push(ids[m.pattern().as_usize()]);
                    last = m.end();
                }
                if last < text.len() {
                    self.encode_segment(tokenizer, &text[last..], &mut out)?;
                }
            }
            None if self.fast.is_some() => self.encode_segment(tokenizer, text, &mut out)?,
            None => {
                out.extend_from_slice(tokenizer.encode_fast(text, false)?.get_ids());
            }
        }
        out.extend_from_slice(after);
        Ok(out)
    }

    fn encode_segment(
        &self,
        tokenizer: &Tokenizer,
        segment: &str,
        out: &mut Vec<u32>,
    ) -> tokenizers::Result<()> {
        let cacheable = segment.len() <= SEGMENT_CACHE_MAX_LEN;
        if cacheable {
            let cached = self
                .cache
                .lock()
                .ok()
                .and_then(|c| c.map.get(segment).cloned());
            if let Some(ids) = cached {
                out.extend_from_slice(&ids);
                return Ok(());
            }
        }
        let before = out.len();
        match &self.fast {
            Some(fast) => {
                let normalized = fast.normalize(tokenizer, segment);
                parallel::encode(fast, &normalized, self.parallel, out);
            }
            None => out.extend_from_slice(tokenizer.encode_fast(segment, false)?.get_ids()),
        }
        if cacheable && let Ok(mut cache) = self.cache.lock() {
            let size = segment.len() + 4 * (out.len() - before);
            if cache.map.len() >= SEGMENT_CACHE_ENTRIES
                || cache.bytes + size > SEGMENT_CACHE_MAX_BYTES
            {
                cache.map.clear();
                cache.bytes = 0;
            }
            cache.bytes += size;
            cache.map.insert(segment.into(), out[before..].into());
        }
        Ok(())
    }
}
