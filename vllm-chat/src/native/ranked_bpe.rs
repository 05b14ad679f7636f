//! tiktoken's encoding (`encode_ordinary`): the text split by the vocabulary's regex,
//! each piece looked up whole or merged byte pair by byte pair in rank order — with the
//! split run by the `regex` crate's automaton instead of `fancy-regex`'s backtracking.
//!
//! tiktoken's patterns (tekken's and `o200k`) end in `\s+(?!\S)|\s+`, the one construct
//! that needs backtracking: a run of whitespace followed by a non-space keeps its last
//! character for the next piece. Here those two alternatives become `\s+` and the match
//! is shortened by its last character when it is whitespace only, has no `\r`/`\n` (a
//! run with a line break is taken by the earlier `\s*[\r\n]+` alternative), is at least
//! two characters long and is followed by more text — exactly the cases where
//! `\s+(?!\S)` backtracks. Every other alternative is leftmost-first in both engines.
//! A pattern without that ending, or one the `regex` crate cannot compile, runs on
//! `tiktoken-rs`' `CoreBPE` (fancy-regex) as is. The merge is tiktoken's
//! `_byte_pair_merge`. `tests/harmony.rs` and `tests/mistral.rs` check the ids against
//! tiktoken (Harmony's `o200k_harmony`, mistral-common's tekken) on random and
//! adversarial strings. Measured in `benches/mistral_harmony.rs` (`*-cold`).
//!
//! Three things keep a cold encode cheap without changing an id: the automaton's
//! search is anchored at the end of the previous piece (pieces are contiguous, so it
//! needs no reverse scan for the start); with tekken's pattern, ASCII text is split by
//! hand (`tekken_ascii_match`, the pattern's alternatives in order on ASCII classes,
//! the automaton taking any piece a non-ASCII character decides); and pieces that are
//! not one token are merged once and kept in a word cache (as HF `tokenizers`' BPE
//! does), bounded: pieces up to [`WORD_CACHE_MAX_PIECE`] bytes, at most
//! [`WORD_CACHE_BYTES`] (1 MiB) counted as piece + ids + a per-entry overhead, emptied
//! when full — so hostile input (long or endlessly new pieces) costs at most the merges
//! tiktoken does and never more memory. The renderers' `clear_cache` empties it too.

use std::sync::Mutex;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};
use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;

use crate::RenderError;

const BACKTRACKING_TAIL: &str = r"|\s+(?!\S)|\s+";

/// The longest piece whose merged ranks are cached (longer ones are merged every time).
pub(crate) const WORD_CACHE_MAX_PIECE: usize = 64;
/// The most bytes the cache of merged pieces holds, counting each entry as its piece,
/// its ranks (4 bytes each) and [`WORD_CACHE_ENTRY_OVERHEAD`]; the cache is emptied
/// when an insertion would exceed it.
pub(crate) const WORD_CACHE_BYTES: usize = 1024 * 1024;
/// The bytes an entry costs beyond its piece and ranks (two boxed slices and the map's
/// slot), counted against [`WORD_CACHE_BYTES`].
pub(crate) const WORD_CACHE_ENTRY_OVERHEAD: usize = 48;

/// mistral-common's tekken pattern (v3 and later), which [`tekken_ascii_match`] follows.
const TEKKEN_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The end of the match at `pos` of tekken's pattern with `\s+(?!\S)|\s+` as `\s+`
/// (the split's adjustment follows), when it is decided by ASCII bytes alone; `None`
/// when a run stops at a non-ASCII character (which may belong to a class: `é` is
/// `\p{Ll}`, U+00A0 is `\s`) — the automaton then takes the piece. The alternatives
/// are tried in the pattern's order, each optional prefix first taken, then not: on
/// ASCII, `\p{Lu}`… is `A-Z`, `\p{Ll}`… is `a-z`, `\p{N}` is `0-9`, `\s` is
/// `\t\n\x0B\x0C\r` and space, and an uppercase run never gives back to `[a-z]+`.
/// Checked against the automaton and fancy-regex in the tests below.
fn tekken_ascii_match(b: &[u8], pos: usize) -> Option<usize> {
    fn run(b: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> Option<usize> {
        while i < b.len() {
            let c = b[i];
            if c >= 0x80 {
                return None;
            }
            if !class(c) {
                break;
            }
            i += 1;
        }
        Some(i)
    }
    let space = |c: u8| matches!(c, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
    let upper = |c: u8| c.is_ascii_uppercase();
    let lower = |c: u8| c.is_ascii_lowercase();
    let other = |c: u8| !c.is_ascii_alphanumeric() && !space(c);
    let c0 = *b.get(pos)?;
    if c0 >= 0x80 {
        return None;
    }
    // `[^\r\n\p{L}\p{N}]?[Lu]*[Ll]+` then `[^\r\n\p{L}\p{N}]?[Lu]+[Ll]*`, prefix taken.
    if c0 != b'\r' && c0 != b'\n' && !c0.is_ascii_alphanumeric() {
        let u = run(b, pos + 1, upper)?;
        let l = run(b, u, lower)?;
        if l > u || u > pos + 1 {
            return Some(l);
        }
    }
    // The same without the prefix.
    if c0.is_ascii_alphabetic() {
        let u = run(b, pos, upper)?;
        return run(b, u, lower);
    }
    // `\p{N}`
    if c0.is_ascii_digit() {
        return Some(pos + 1);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`, the space taken, then not.
    let crlf_slash = |c: u8| matches!(c, b'\r' | b'\n' | b'/');
    if c0 == b' ' {
        let p = run(b, pos + 1, other)?;
        if p > pos + 1 {
            return run(b, p, crlf_slash);
        }
    }
    if other(c0) {
        let p = run(b, pos, other)?;
        return run(b, p, crlf_slash);
    }
    // `\s*[\r\n]+`: up to the last line break of the whitespace run; else `\s+`.
    let w = run(b, pos, space)?;
    match b[pos..w].iter().rposition(|&c| c == b'\r' || c == b'\n') {
        Some(k) => Some(pos + k + 1),
        None => Some(w),
    }
}

/// A tiktoken vocabulary: byte strings by rank, and its split.
pub(crate) struct RankedBpe {
    ranks: FxHashMap<Vec<u8>, u32>,
    split: Split,
    words: Mutex<WordCache>,
}

/// Merged pieces (those not in the vocabulary whole) by bytes, as HF `tokenizers`'
/// BPE keeps its word cache: the merge is deterministic, so a hit gives the ranks a
/// merge would. Bounded by [`WORD_CACHE_BYTES`] whatever the input: pieces longer than
/// [`WORD_CACHE_MAX_PIECE`] are not kept and a full cache is emptied.
#[derive(Default)]
struct WordCache {
    map: FxHashMap<Box<[u8]>, Box<[u32]>>,
    bytes: usize,
}

enum Split {
    /// The `regex` crate's automaton, with the `\s+(?!\S)` adjustment; with `ascii`,
    /// ASCII text is split by [`tekken_ascii_match`] (the pattern is tekken's).
    Fast { regex: Regex, ascii: bool },
    /// fancy-regex through `CoreBPE` (its own ranks).
    Fancy(Box<CoreBPE>),
}

impl RankedBpe {
    /// A vocabulary from its ranks (the bytes of rank `i` at index `i`) and pattern.
    pub(crate) fn new<'a>(
        tokens: impl Iterator<Item = &'a [u8]>,
        pattern: &str,
    ) -> Result<Self, RenderError> {
        let mut ranks = FxHashMap::default();
        for (rank, bytes) in tokens.enumerate() {
            let rank = u32::try_from(rank)
                .map_err(|_| RenderError::Tokenizer("vocabulary too large".into()))?;
            // A duplicated byte string keeps its last rank, as in tiktoken's dict.
            ranks.insert(bytes.to_vec(), rank);
        }
        let fast = pattern
            .strip_suffix(BACKTRACKING_TAIL)
            .and_then(|head| Regex::new(&format!(r"{head}|\s+")).ok());
        let split = match fast {
            Some(regex) => Split::Fast {
                regex,
                ascii: pattern == TEKKEN_PATTERN,
            },
            None => {
                let bpe = CoreBPE::new(
                    ranks.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                    Default::default(),
                    pattern,
                )
                .map_err(|e| {
                    RenderError::Tokenizer(format!("the tokenizer's pattern does not compile: {e}"))
                })?;
                Split::Fancy(Box::new(bpe))
            }
        };
        Ok(RankedBpe {
            ranks,
            split,
            words: Mutex::default(),
        })
    }

    /// Empties the cache of merged pieces.
    pub(crate) fn clear_cache(&self) {
        if let Ok(mut words) = self.words.lock() {
            *words = WordCache::default();
        }
    }

    /// `Encoding.encode_ordinary(text)`, each id plus `shift`, appended to `out`.
    pub(crate) fn encode(
        &self,
        text: &str,
        shift: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), RenderError> {
        let (regex, ascii) = match &self.split {
            Split::Fast { regex, ascii } => (regex, *ascii),
            Split::Fancy(bpe) => {
                let ids = super::harmony::encode_ordinary(bpe, text)?;
                out.extend(ids.into_iter().map(|id| id + shift));
                return Ok(());
            }
        };
        let mut pos = 0;
        while pos < text.len() {
            // Pieces are contiguous with tiktoken's patterns (every character matches
            // some alternative), so the match at `pos` is found by an anchored search,
            // which needs no reverse scan for its start; the leftmost-first match that
            // starts at `pos` is the one an unanchored search from `pos` finds. Anything
            // else falls back to the unanchored search.
            let (start, mut end) = match ascii
                .then(|| tekken_ascii_match(text.as_bytes(), pos))
                .flatten()
            {
                Some(end) => (pos, end),
                None => {
                    let input = Input::new(text).range(pos..).anchored(Anchored::Yes);
                    let Some(m) = regex
                        .search(&input)
                        .or_else(|| regex.search(&Input::new(text).range(pos..)))
                    else {
                        break;
                    };
                    (m.start(), m.end())
                }
            };
            let piece = &text[start..end];
            if end < text.len()
                && piece.chars().all(char::is_whitespace)
                && !piece.contains(['\r', '\n'])
                && let Some(last) = piece.chars().next_back()
                && piece.len() > last.len_utf8()
            {
                end -= last.len_utf8();
            }
            if end <= start {
                // Unreachable with tiktoken's patterns (every match is non-empty); a
                // pattern that matches nothing here would otherwise loop.
                return Err(RenderError::Tokenizer(
                    "the tokenizer's pattern matched an empty piece".into(),
                ));
            }
            self.encode_piece(&text.as_bytes()[start..end], shift, out)?;
            pos = end;
        }
        Ok(())
    }

    fn rank(&self, bytes: &[u8]) -> Result<u32, RenderError> {
        self.ranks.get(bytes).copied().ok_or_else(|| {
            RenderError::Tokenizer(format!(
                "the vocabulary has no token for the bytes {bytes:?}"
            ))
        })
    }

    fn encode_piece(
        &self,
        piece: &[u8],
        shift: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), RenderError> {
        if let Some(&rank) = self.ranks.get(piece) {
            out.push(rank + shift);
            return Ok(());
        }
        if piece.len() == 1 {
            out.push(self.rank(piece)? + shift);
            return Ok(());
        }
        if piece.len() > WORD_CACHE_MAX_PIECE {
            return self.merge_into(piece, shift, out);
        }
        // `try_lock`: a contended cache is skipped rather than waited for.
        if let Ok(words) = self.words.try_lock()
            && let Some(ranks) = words.map.get(piece)
        {
            out.extend(ranks.iter().map(|rank| rank + shift));
            return Ok(());
        }
        let start = out.len();
        self.merge_into(piece, 0, out)?;
        if let Ok(mut words) = self.words.try_lock()
            && !words.map.contains_key(piece)
        {
            let size = piece.len() + 4 * (out.len() - start) + WORD_CACHE_ENTRY_OVERHEAD;
            if words.bytes + size > WORD_CACHE_BYTES {
                *words = WordCache::default();
            }
            words.bytes += size;
            words.map.insert(piece.into(), out[start..].into());
        }
        if shift != 0 {
            for id in &mut out[start..] {
                *id += shift;
            }
        }
        Ok(())
    }

    fn merge_into(&self, piece: &[u8], shift: u32, out: &mut Vec<u32>) -> Result<(), RenderError> {
        let parts = self.merge(piece);
        for pair in parts.windows(2) {
            out.push(self.rank(&piece[pair[0].0..pair[1].0])? + shift);
        }
        Ok(())
    }

    /// tiktoken's `_byte_pair_merge`: part boundaries after merging the lowest-ranked
    /// adjacent pair until none is in the vocabulary.
    fn merge(&self, piece: &[u8]) -> Vec<(usize, u32)> {
        let rank_of = |bytes: &[u8]| self.ranks.get(bytes).copied().unwrap_or(u32::MAX);
        let mut parts: Vec<(usize, u32)> = Vec::with_capacity(piece.len() + 1);
        let mut min = (u32::MAX, usize::MAX);
        for i in 0..piece.len() - 1 {
            let rank = rank_of(&piece[i..i + 2]);
            if rank < min.0 {
                min = (rank, i);
            }
            parts.push((i, rank));
        }
        parts.push((piece.len() - 1, u32::MAX));
        parts.push((piece.len(), u32::MAX));
        let get_rank = |parts: &[(usize, u32)], i: usize| {
            if i + 3 < parts.len() {
                rank_of(&piece[parts[i].0..parts[i + 3].0])
            } else {
                u32::MAX
            }
        };
        while min.0 != u32::MAX {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = get_rank(&parts, i - 1);
            }
            parts[i].1 = get_rank(&parts, i);
            parts.remove(i + 1);
            min = (u32::MAX, usize::MAX);
            for (i, &(_, rank)) in parts[..parts.len() - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, i);
                }
            }
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// A pseudo-random generator (xorshift), so the test needs no extra crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// The `regex`-crate split against fancy-regex's on whitespace-heavy strings, with
    /// tekken's vocabulary and pattern (o200k's ends the same way).
    #[test]
    fn fast_split_matches_fancy_regex() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/models/mistral_tekken/tekken.json.gz");
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_end(&mut json)
            .unwrap();
        let tekken = vllm_detok::TekkenTokenizer::from_bytes(&json).unwrap();
        let fast = RankedBpe::new(tekken.regular_tokens(), tekken.pattern()).unwrap();
        assert!(matches!(fast.split, Split::Fast { ascii: true, .. }));
        let fancy = CoreBPE::new(
            fast.ranks.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Default::default(),
            tekken.pattern(),
        )
        .unwrap();
        let atoms = [
            " ", "  ", "\t", "\n", "\r\n", "\r", "\u{a0}", "\u{3000}", "\u{2028}", "\u{85}", "a",
            "Bc", "DE", "1", "23", ".", "!?", "'s", "é", "日本", "🙂", "\u{301}", "/", "x\n",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..20_000 {
            let len = 1 + rng.next() % 12;
            let text: String = (0..len)
                .map(|_| atoms[(rng.next() % atoms.len() as u64) as usize])
                .collect();
            let mut ids = Vec::new();
            fast.encode(&text, 0, &mut ids).unwrap();
            assert_eq!(ids, fancy.encode_ordinary(&text), "{text:?}");
        }
    }

    fn tekken() -> vllm_detok::TekkenTokenizer {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata/models/mistral_tekken/tekken.json.gz");
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
            .read_to_end(&mut json)
            .unwrap();
        vllm_detok::TekkenTokenizer::from_bytes(&json).unwrap()
    }

    /// The cache's byte count, recomputed from its entries.
    fn cache_bytes(bpe: &RankedBpe) -> (usize, usize) {
        let words = bpe.words.lock().unwrap();
        let counted = words
            .map
            .iter()
            .map(|(piece, ranks)| piece.len() + 4 * ranks.len() + WORD_CACHE_ENTRY_OVERHEAD)
            .sum();
        (words.bytes, counted)
    }

    /// The cache of merged pieces never changes an id: every text encoded with the cache
    /// emptied, then again with it warm (and filled past its budget by other pieces),
    /// gives fancy-regex `CoreBPE`'s ids, and the cache stays within its byte budget.
    #[test]
    fn word_cache_never_changes_ids_and_stays_bounded() {
        let tekken = tekken();
        let bpe = RankedBpe::new(tekken.regular_tokens(), tekken.pattern()).unwrap();
        let fancy = CoreBPE::new(
            bpe.ranks.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Default::default(),
            tekken.pattern(),
        )
        .unwrap();
        let atoms = [
            "a", "q", "z", "x", "é", "ß", "ø", "Ж", "я", "日", "本", "語", "ق", "ह", "ก", "🙂",
            "\u{301}", "1", ".", "{", "\"", " ", "\n", "Q", "Zz", "k",
        ];
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut texts: Vec<String> = (0..4_000)
            .map(|_| {
                let len = 1 + rng.next() % 40;
                (0..len)
                    .map(|_| atoms[(rng.next() % atoms.len() as u64) as usize])
                    .collect()
            })
            .collect();
        // Adversarial: long pieces (kept out of the cache) and pieces just under and
        // over the longest cached length.
        texts.push("a".repeat(5_000));
        texts.push("qzx".repeat(2_000));
        texts.push("ж".repeat(WORD_CACHE_MAX_PIECE / 2));
        texts.push("ж".repeat(WORD_CACHE_MAX_PIECE / 2 + 1));
        texts.push("zq".repeat(WORD_CACHE_MAX_PIECE / 2));
        texts.push("zq".repeat(WORD_CACHE_MAX_PIECE / 2 + 1));
        texts.push("🙂".repeat(3_000));
        texts.push(" ".repeat(300) + "x");
        let expected: Vec<Vec<u32>> = texts.iter().map(|t| fancy.encode_ordinary(t)).collect();
        for shift in [0, 1000] {
            for (text, want) in texts.iter().zip(&expected) {
                let want: Vec<u32> = want.iter().map(|id| id + shift).collect();
                bpe.clear_cache();
                let mut cold = Vec::new();
                bpe.encode(text, shift, &mut cold).unwrap();
                assert_eq!(cold, want, "cold {text:?}");
                let mut warm = Vec::new();
                bpe.encode(text, shift, &mut warm).unwrap();
                assert_eq!(warm, want, "warm {text:?}");
            }
            // Warm across texts: the cache fills past its budget and is emptied.
            bpe.clear_cache();
            let mut max_bytes = 0;
            for _round in 0..2 {
                for (text, want) in texts.iter().zip(&expected) {
                    let want: Vec<u32> = want.iter().map(|id| id + shift).collect();
                    let mut ids = Vec::new();
                    bpe.encode(text, shift, &mut ids).unwrap();
                    assert_eq!(ids, want, "{text:?}");
                    let (bytes, counted) = cache_bytes(&bpe);
                    assert_eq!(bytes, counted);
                    assert!(bytes <= WORD_CACHE_BYTES);
                    max_bytes = max_bytes.max(bytes);
                }
            }
            assert!(max_bytes > 0);
        }
        // Many distinct merged pieces (random letters): the budget is reached and kept.
        bpe.clear_cache();
        let letters: Vec<char> = "qxzjkvwyжяßøé".chars().collect();
        let mut emptied = false;
        let mut last = 0;
        for _ in 0..60_000 {
            let len = 2 + rng.next() % 30;
            let word: String = (0..len)
                .map(|_| letters[(rng.next() % letters.len() as u64) as usize])
                .collect();
            let mut ids = Vec::new();
            bpe.encode(&word, 0, &mut ids).unwrap();
            let (bytes, counted) = cache_bytes(&bpe);
            assert_eq!(bytes, counted);
            assert!(bytes <= WORD_CACHE_BYTES);
            emptied |= bytes < last;
            last = bytes;
        }
        assert!(emptied, "the budget was never reached");
    }

    /// The ASCII split (`tekken_ascii_match`) against fancy-regex on random strings of
    /// every ASCII character, with non-ASCII letters, marks, spaces and symbols mixed in.
    #[test]
    fn ascii_split_matches_fancy_regex() {
        let tekken = tekken();
        let bpe = RankedBpe::new(tekken.regular_tokens(), tekken.pattern()).unwrap();
        let fancy = CoreBPE::new(
            bpe.ranks.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            Default::default(),
            tekken.pattern(),
        )
        .unwrap();
        let mut atoms: Vec<String> = (0u8..128).map(|c| char::from(c).to_string()).collect();
        for extra in [
            "é", "\u{a0}", "\u{85}", "\u{2028}", "日", "🙂", "\u{301}", "Ж", "ǅ", "ʰ", "²", "€",
            " ", " ", "a", "A", "\n", "/",
        ] {
            atoms.push(extra.to_string());
        }
        let mut rng = Rng(0x853c_49e6_748f_ea9b);
        for i in 0..60_000 {
            let len = 1 + rng.next() % 16;
            let text: String = (0..len)
                .map(|_| {
                    // Half the strings ASCII only.
                    let n = if i % 2 == 0 { 128 } else { atoms.len() as u64 };
                    atoms[(rng.next() % n) as usize].as_str()
                })
                .collect();
            let mut ids = Vec::new();
            bpe.encode(&text, 0, &mut ids).unwrap();
            assert_eq!(ids, fancy.encode_ordinary(&text), "{text:?}");
        }
    }
}
