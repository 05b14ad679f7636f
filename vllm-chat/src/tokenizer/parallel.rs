//! Encoding one long segment on several threads, with the ids of sequential encoding.
//!
//! The split regex is matched leftmost-first from the end of the previous match,
//! and [`Gpt4Split::match_at`](super::Gpt4Split::match_at)`(text, s)` reads only
//! `text[s..]`. So if `q` is a match boundary of the whole text, the matches after
//! `q` are those of `text[q..]` alone; and if, in addition, no match before `q`
//! depends on what follows `q`, the matches before `q` are those of `text[..q]`
//! alone. Then pre-tokenizing (and so encoding, as BPE runs per pre-token) the two
//! halves separately and concatenating gives the whole text's result. A byte offset
//! `q` is such a cut ([`is_cut`]) when
//!
//! 1. `text[q-1]` is `\n` and `text[q]` is not whitespace (`\s`). The match holding
//!    that `\n` is one of `\s*[\r\n]+`, `\s+(?!\S)`, `\s+` (a whitespace run: its
//!    newline alternative comes first and ends at the run's last newline, `q`,
//!    since the run stops at the non-space `text[q]`) or ` ?[^\s\p{L}\p{N}]+[\r\n]*`
//!    (its newline tail stops at `text[q]`); no alternative lets a letter, digit or
//!    contraction match contain `\n`. Cut at `q`, each of these runs stops at the end
//!    of the text instead of at `text[q]` — the same end.
//! 2. `text[q-1]` is an ASCII letter and `text[q]` is a space. The match holding the
//!    letter is a contraction (`'s`, …, ending at or before `q`) or
//!    `[^\r\n\p{L}\p{N}]?\p{L}+`, whose letter run stops at the space, at `q`; cut at
//!    `q` it stops at the end of the text, again at `q`.
//!
//! In both cases every earlier match ends before `q-1` and is decided by characters
//! before `q` (a run that stops before `q-1` looks at most at the character that
//! stops it). Normalization happens before the cut, on the whole segment.
//! `tests/tokenizer_exact.rs` compares parallel with sequential encoding on cut-rich
//! and cut-poor texts; `scripts/bench_long_prompt.sh` measures the gain.

use super::ParallelEncoding;
use super::bpe::{ByteLevelBpe, Scratch};

/// True when byte offset `q` of `text` is a safe cut (see the module docs).
fn is_cut(text: &str, q: usize) -> bool {
    let bytes = text.as_bytes();
    if q == 0 || q >= bytes.len() {
        return false;
    }
    match bytes[q - 1] {
        b'\n' => match bytes[q] {
            b if b.is_ascii() => !char::from(b).is_whitespace(),
            _ => text[q..].chars().next().is_some_and(|c| !c.is_whitespace()),
        },
        b if b.is_ascii_alphabetic() => bytes[q] == b' ',
        _ => false,
    }
}

/// The first safe cut at or after `from`, if any.
fn next_cut(text: &str, from: usize) -> Option<usize> {
    (from.max(1)..text.len()).find(|&q| is_cut(text, q))
}

/// Boundaries `0 = b0 < b1 < … < bn = text.len()` of up to `parts` pieces of at
/// least `min_len` bytes each (fewer when the text lacks cuts).
pub(crate) fn cuts(text: &str, parts: usize, min_len: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    let step = (text.len() / parts.max(1)).max(min_len.max(1));
    let mut last = 0;
    while bounds.len() < parts {
        let Some(q) = next_cut(text, last + step) else {
            break;
        };
        if text.len() - q < min_len {
            break;
        }
        bounds.push(q);
        last = q;
    }
    bounds.push(text.len());
    bounds
}

/// Appends the ids of normalized `text` to `out`, on several threads when long.
pub(crate) fn encode(
    bpe: &ByteLevelBpe,
    text: &str,
    parallel: ParallelEncoding,
    out: &mut Vec<u32>,
) {
    let threads = parallel
        .max_threads
        .min(text.len() / parallel.min_bytes.max(1));
    if threads < 2 {
        bpe.encode_normalized(text, &mut Scratch::default(), out);
        return;
    }
    let bounds = cuts(text, threads, parallel.min_bytes / 2);
    if bounds.len() < 3 {
        bpe.encode_normalized(text, &mut Scratch::default(), out);
        return;
    }
    let parts: Vec<&str> = bounds.windows(2).map(|w| &text[w[0]..w[1]]).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts[1..]
            .iter()
            .map(|part| {
                scope.spawn(move || {
                    let mut ids = Vec::with_capacity(part.len() / 4);
                    bpe.encode_normalized(part, &mut Scratch::default(), &mut ids);
                    ids
                })
            })
            .collect();
        bpe.encode_normalized(parts[0], &mut Scratch::default(), out);
        for handle in handles {
            match handle.join() {
                Ok(ids) => out.extend_from_slice(&ids),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::Gpt4Split;
    use super::{cuts, is_cut};

    fn pieces(split: Gpt4Split, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let end = split.match_at(text, start);
            out.push(&text[start..end]);
            start = end;
        }
        out
    }

    /// Every safe cut of random text splits its pre-tokens exactly (the proof in
    /// the module docs, checked).
    #[test]
    fn every_cut_splits_the_pretokens() {
        const POOL: &[&str] = &[
            "a", "Z", "é", "語", "\u{301}", "'s", "'", "ſ", "0", "12", "٣", " ", " ", "  ", "\t",
            "\n", "\n", "\r\n", "\r", "\u{a0}", "\u{3000}", "\u{b}", "\u{85}", "\u{2028}", ".",
            "!?", "—", "🚀", "\u{200b}", "_", "x\n", "a ",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for max_digits in [1, 3] {
            let split = Gpt4Split { max_digits };
            for _ in 0..3000 {
                let n = 1 + next() % 24;
                let text: String = (0..n)
                    .map(|_| POOL[(next() % POOL.len() as u64) as usize])
                    .collect();
                let whole = pieces(split, &text);
                for q in 0..=text.len() {
                    if !is_cut(&text, q) {
                        continue;
                    }
                    let mut halves = pieces(split, &text[..q]);
                    halves.extend(pieces(split, &text[q..]));
                    assert_eq!(halves, whole, "cut {q} of {text:?}");
                }
                for parts in 2..5 {
                    let bounds = cuts(&text, parts, 1);
                    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{text:?}");
                    assert!(
                        bounds[1..bounds.len() - 1]
                            .iter()
                            .all(|&q| is_cut(&text, q))
                    );
                }
            }
        }
    }
}
