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

use regex::Regex;
use rustc_hash::FxHashMap;
use tiktoken_rs::CoreBPE;

use crate::RenderError;

const BACKTRACKING_TAIL: &str = r"|\s+(?!\S)|\s+";

/// A tiktoken vocabulary: byte strings by rank, and its split.
pub(crate) struct RankedBpe {
    ranks: FxHashMap<Vec<u8>, u32>,
    split: Split,
}

enum Split {
    /// The `regex` crate, with the `\s+(?!\S)` adjustment.
    Fast(Regex),
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
            Some(regex) => Split::Fast(regex),
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
        Ok(RankedBpe { ranks, split })
    }

    /// `Encoding.encode_ordinary(text)`, each id plus `shift`, appended to `out`.
    pub(crate) fn encode(
        &self,
        text: &str,
        shift: u32,
        out: &mut Vec<u32>,
    ) -> Result<(), RenderError> {
        let regex = match &self.split {
            Split::Fast(regex) => regex,
            Split::Fancy(bpe) => {
                let ids = super::harmony::encode_ordinary(bpe, text)?;
                out.extend(ids.into_iter().map(|id| id + shift));
                return Ok(());
            }
        };
        let mut pos = 0;
        while pos < text.len() {
            let Some(m) = regex.find_at(text, pos) else {
                break;
            };
            let mut end = m.end();
            let piece = m.as_str();
            if end < text.len()
                && piece.chars().all(char::is_whitespace)
                && !piece.contains(['\r', '\n'])
                && let Some(last) = piece.chars().next_back()
                && piece.len() > last.len_utf8()
            {
                end -= last.len_utf8();
            }
            if end <= m.start() {
                // Unreachable with tiktoken's patterns (every match is non-empty); a
                // pattern that matches nothing here would otherwise loop.
                return Err(RenderError::Tokenizer(
                    "the tokenizer's pattern matched an empty piece".into(),
                ));
            }
            self.encode_piece(&text.as_bytes()[m.start()..end], shift, out)?;
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
        assert!(matches!(fast.split, Split::Fast(_)));
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
}
