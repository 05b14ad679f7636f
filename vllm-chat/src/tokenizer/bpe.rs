//! Token ids of byte-level BPE tokenizers without `tokenizers`' bookkeeping.
//!
//! `tokenizers::Tokenizer::encode` builds, for every pre-token, a `NormalizedString`
//! with per-byte alignments, a byte-level-mapped copy of the piece, `Token`s with
//! their strings and offsets, and finally an `Encoding` with seven parallel vectors.
//! A prompt needs only the ids. For the tokenizers whose whole pipeline is
//! (NFC or nothing) → the Qwen2/Llama 3 split (our [`Gpt4Split`] scanner) →
//! `ByteLevel` → BPE, [`ByteLevelBpe`] computes exactly those ids straight from the
//! UTF-8 bytes: the vocabulary is keyed by the bytes a token stands for (the
//! byte-level alphabet undone once at load), so a piece is hashed in place; a piece
//! that is itself a vocabulary token is answered by one lookup; the rest run the
//! same merge loop as `tokenizers` (`Word::merge_all`: a min-heap of (rank,
//! position) with its stale-entry rule, reproduced on purpose so that even the
//! corner cases where two merges produce one token agree). Benchmarked by
//! `benches/render.rs` (`encode/*`) and `scripts/bench_long_prompt.sh`; checked
//! against `tokenizers` by `tests/tokenizer_exact.rs`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU8, Ordering};

use super::{Gpt4Split, Tokenizer};

/// A small multiplicative hasher (FxHash's), for the vocabulary and merge tables:
/// keys are short byte strings and `u64` pairs, hashed millions of times per long
/// prompt; SipHash would cost more than the lookup.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// `HashMap` with [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The byte-level alphabet (GPT-2's `bytes_to_unicode`): the char standing for each byte.
fn byte_chars() -> [char; 256] {
    let mut chars = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = (b'!'..=b'~').contains(&b) || (0xA1..=0xAC).contains(&b) || b >= 0xAE;
        chars[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + n).unwrap_or('\0');
            n += 1;
            c
        };
    }
    chars
}

/// True for characters NFC neither changes nor composes with what precedes them
/// (combining class 0, NFC_Quick_Check Yes, never the second character of a
/// canonical composition): ASCII, Latin-1 and the Latin/IPA blocks below U+0300,
/// Cyrillic letters, general and CJK punctuation, kana, CJK ideographs, Hangul
/// syllables and emoji. Checked against Python's `unicodedata` (Unicode 14) for
/// every assigned code point in these ranges; Unicode's stability policy keeps them so.
fn is_nfc_inert(c: char) -> bool {
    matches!(c as u32,
        0..=0x2ff
            | 0x400..=0x482
            | 0x48a..=0x4ff
            | 0x2010..=0x2027
            | 0x2030..=0x205e
            | 0x3000..=0x3029
            | 0x3041..=0x3096
            | 0x30a1..=0x30fa
            | 0x4e00..=0x9fff
            | 0xac00..=0xd7a3
            | 0x1f300..=0x1faff)
}

/// The pipeline steps [`ByteLevelBpe`] reproduces; anything else keeps `tokenizers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Normalization {
    /// No normalizer (or an empty sequence).
    None,
    /// Unicode NFC (Qwen2/Qwen3).
    Nfc,
}

/// Exact ids-only encoder for byte-level BPE tokenizers with a recognised split.
pub(crate) struct ByteLevelBpe {
    split: Gpt4Split,
    normalization: Normalization,
    /// Vocabulary keyed by the bytes each token stands for.
    vocab: FxMap<Box<[u8]>, u32>,
    /// The token of each single byte.
    byte_ids: [u32; 256],
    /// `(left << 32 | right)` → (rank, merged token).
    merges: FxMap<u64, (u32, u32)>,
    /// `tokenizers`' `ignore_merges`: a piece that is a token is that token.
    ignore_merges: bool,
    /// Without `ignore_merges`: whether merging token `t`'s bytes gives `[t]`
    /// (0 not yet known, 1 yes, 2 no), learnt on first use.
    whole: Vec<AtomicU8>,
    /// Ids around the text when `add_special_tokens` (the post-processor's
    /// single-sequence template), or `None` when the post-processor is not understood.
    specials: Option<(Vec<u32>, Vec<u32>)>,
}

impl std::fmt::Debug for ByteLevelBpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByteLevelBpe")
            .field("split", &self.split)
            .field("normalization", &self.normalization)
            .field("vocab", &self.vocab.len())
            .field("merges", &self.merges.len())
            .field("ignore_merges", &self.ignore_merges)
            .finish()
    }
}

/// Longest piece whose merge result is memoised per call.
const MEMO_MAX_LEN: usize = 256;

/// Per-call scratch: the merge heap, the symbols and a memo of merged pieces.
#[derive(Default)]
pub(crate) struct Scratch<'t> {
    symbols: Vec<Symbol>,
    heap: BinaryHeap<Reverse<(u32, u32, u32)>>,
    memo: FxMap<&'t [u8], (u32, u32)>,
    memo_ids: Vec<u32>,
}

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: i32,
    next: i32,
    len: u32,
}

impl ByteLevelBpe {
    /// The fast path for `tokenizer`, when its pipeline is one this module reproduces
    /// exactly; `None` otherwise.
    pub(crate) fn new(tokenizer: &Tokenizer) -> Option<Self> {
        let split = tokenizer.get_pre_tokenizer()?.byte_level_split()?;
        if tokenizer.get_truncation().is_some() || tokenizer.get_padding().is_some() {
            return None;
        }
        let normalization = match tokenizer.get_normalizer() {
            None => Normalization::None,
            Some(n) => {
                let json = serde_json::to_value(n).ok()?;
                match json["type"].as_str()? {
                    "NFC" => Normalization::Nfc,
                    "Sequence" if json["normalizers"].as_array().is_some_and(Vec::is_empty) => {
                        Normalization::None
                    }
                    _ => return None,
                }
            }
        };
        let tokenizers::ModelWrapper::BPE(bpe) = tokenizer.get_model() else {
            return None;
        };
        let plain = |s: &Option<String>| s.as_deref().is_none_or(str::is_empty);
        if bpe.dropout.is_some_and(|d| d > 0.0)
            || !plain(&bpe.continuing_subword_prefix)
            || !plain(&bpe.end_of_word_suffix)
        {
            return None;
        }
        // Every normalized added token would be matched after normalization, which the
        // segment splitter (raw text) does not do.
        if tokenizer
            .get_added_tokens_decoder()
            .values()
            .any(|t| t.normalized)
        {
            return None;
        }
        let chars = byte_chars();
        let byte_of: HashMap<char, u8> = chars
            .iter()
            .enumerate()
            .map(|(b, &c)| (c, b as u8))
            .collect();
        let model = serde_json::to_value(bpe).ok()?;
        let string_vocab = model["vocab"].as_object()?;
        let mut vocab: FxMap<Box<[u8]>, u32> = FxMap::default();
        vocab.reserve(string_vocab.len());
        let mut by_string: HashMap<&str, u32> = HashMap::with_capacity(string_vocab.len());
        let mut max_id = 0;
        for (token, id) in string_vocab {
            let id = u32::try_from(id.as_u64()?).ok()?;
            by_string.insert(token.as_str(), id);
            max_id = max_id.max(id);
            // A token outside the byte-level alphabet can never match a piece.
            let bytes: Option<Vec<u8>> = token.chars().map(|c| byte_of.get(&c).copied()).collect();
            if let Some(bytes) = bytes {
                vocab.insert(bytes.into_boxed_slice(), id);
            }
        }
        let mut byte_ids = [0u32; 256];
        for (b, c) in chars.iter().enumerate() {
            byte_ids[b] = *by_string.get(c.to_string().as_str())?;
        }
        let list = model["merges"].as_array()?;
        let mut merges = FxMap::default();
        merges.reserve(list.len());
        let mut joined = String::new();
        for (rank, pair) in list.iter().enumerate() {
            let (a, b) = match pair {
                serde_json::Value::Array(p) if p.len() == 2 => (p[0].as_str()?, p[1].as_str()?),
                serde_json::Value::String(s) => s.split_once(' ')?,
                _ => return None,
            };
            joined.clear();
            joined.push_str(a);
            joined.push_str(b);
            let key = (u64::from(by_string[a]) << 32) | u64::from(by_string[b]);
            merges.insert(key, (rank as u32, *by_string.get(joined.as_str())?));
        }
        let specials = post_processor_specials(tokenizer);
        Some(ByteLevelBpe {
            split,
            normalization,
            vocab,
            byte_ids,
            merges,
            ignore_merges: bpe.ignore_merges,
            whole: (0..=max_id).map(|_| AtomicU8::new(0)).collect(),
            specials,
        })
    }

    /// The most bytes of input text one token can stand for: the longest vocabulary
    /// entry, times 3 under NFC (composition shrinks text by at most that: three
    /// Hangul jamo, 9 bytes, compose to one 3-byte syllable).
    pub(crate) fn max_text_bytes_per_token(&self) -> usize {
        let longest = self
            .vocab
            .keys()
            .map(|bytes| bytes.len())
            .max()
            .unwrap_or(1);
        match self.normalization {
            Normalization::Nfc => longest * 3,
            Normalization::None => longest,
        }
    }

    /// The ids the post-processor puts before and after the text when
    /// `add_special_tokens` is set, when understood.
    pub(crate) fn specials(&self) -> Option<(&[u32], &[u32])> {
        self.specials
            .as_ref()
            .map(|(a, b)| (a.as_slice(), b.as_slice()))
    }

    /// Normalizes a segment between added tokens as the tokenizer's normalizer does.
    ///
    /// NFC changes nothing around a character that is NFC-stable, of combining class 0
    /// and never the second half of a composition ([`is_nfc_inert`]): the text can be
    /// normalized piecewise, cut before each such character. So only the stretches
    /// from the inert character before a non-inert one up to the next inert character
    /// go through `tokenizers`' normalizer; the rest (all of most prompts) is copied.
    pub(crate) fn normalize<'a>(
        &self,
        tokenizer: &Tokenizer,
        text: &'a str,
    ) -> std::borrow::Cow<'a, str> {
        if self.normalization == Normalization::None || text.is_ascii() {
            return text.into();
        }
        let Some(normalizer) = tokenizer.get_normalizer() else {
            return text.into();
        };
        let mut out = String::new();
        let mut copied = 0;
        let mut last_safe = 0;
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            // ASCII is inert: skip it eight bytes at a time.
            if let Some(word) = bytes.get(i..i + 8)
                && u64::from_le_bytes(word.try_into().unwrap_or_default()) & 0x8080_8080_8080_8080
                    == 0
            {
                i += 8;
                last_safe = i - 1;
                continue;
            }
            let Some(c) = text[i..].chars().next() else {
                break;
            };
            if is_nfc_inert(c) {
                last_safe = i;
                i += c.len_utf8();
                continue;
            }
            let mut end = text.len();
            let mut j = i + c.len_utf8();
            while let Some(d) = text[j..].chars().next() {
                if is_nfc_inert(d) {
                    end = j;
                    break;
                }
                j += d.len_utf8();
            }
            i = end;
            let unit = &text[last_safe..end];
            let mut normalized = tokenizers::NormalizedString::from(unit);
            if tokenizers::Normalizer::normalize(normalizer, &mut normalized).is_ok()
                && normalized.get() != unit
            {
                out.push_str(&text[copied..last_safe]);
                out.push_str(normalized.get());
                copied = end;
            }
            last_safe = end;
        }
        if copied == 0 {
            return text.into();
        }
        out.push_str(&text[copied..]);
        out.into()
    }

    /// Appends the ids of normalized `text` (no added tokens inside) to `out`.
    pub(crate) fn encode_normalized<'t>(
        &self,
        text: &'t str,
        scratch: &mut Scratch<'t>,
        out: &mut Vec<u32>,
    ) {
        let mut start = 0;
        while start < text.len() {
            let end = self.split.match_at(text, start);
            self.encode_piece(&text.as_bytes()[start..end], scratch, out);
            start = end;
        }
    }

    /// Appends the ids of one pre-token.
    #[inline]
    fn encode_piece<'t>(&self, piece: &'t [u8], scratch: &mut Scratch<'t>, out: &mut Vec<u32>) {
        if let Some(&id) = self.vocab.get(piece)
            && (self.ignore_merges || self.merges_to_itself(id, piece, scratch))
        {
            out.push(id);
            return;
        }
        if piece.len() == 1 {
            out.push(self.byte_ids[piece[0] as usize]);
            return;
        }
        if let Some(&(from, to)) = scratch.memo.get(piece) {
            out.extend_from_slice(&scratch.memo_ids[from as usize..to as usize]);
            return;
        }
        let before = out.len();
        self.merge(piece, scratch, out);
        if piece.len() <= MEMO_MAX_LEN {
            let from = scratch.memo_ids.len() as u32;
            scratch.memo_ids.extend_from_slice(&out[before..]);
            scratch
                .memo
                .insert(piece, (from, scratch.memo_ids.len() as u32));
        }
    }

    /// Whether merging the bytes of token `id` gives `[id]` (memoised).
    fn merges_to_itself(&self, id: u32, piece: &[u8], scratch: &mut Scratch<'_>) -> bool {
        let Some(state) = self.whole.get(id as usize) else {
            return false;
        };
        match state.load(Ordering::Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let mut ids = Vec::with_capacity(4);
                self.merge(piece, scratch, &mut ids);
                let yes = ids == [id];
                state.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
                yes
            }
        }
    }

    /// `tokenizers`' `Word::merge_all` over the bytes of `piece`, appending the ids.
    fn merge(&self, piece: &[u8], scratch: &mut Scratch<'_>, out: &mut Vec<u32>) {
        let symbols = &mut scratch.symbols;
        let heap = &mut scratch.heap;
        symbols.clear();
        heap.clear();
        let n = piece.len() as i32;
        symbols.extend(piece.iter().enumerate().map(|(i, &b)| Symbol {
            id: self.byte_ids[b as usize],
            prev: i as i32 - 1,
            next: if i as i32 + 1 == n { -1 } else { i as i32 + 1 },
            len: 1,
        }));
        let pair = |a: u32, b: u32| self.merges.get(&((u64::from(a) << 32) | u64::from(b)));
        for (pos, w) in symbols.windows(2).enumerate() {
            if let Some(&(rank, new_id)) = pair(w[0].id, w[1].id) {
                heap.push(Reverse((rank, pos as u32, new_id)));
            }
        }
        while let Some(Reverse((_, pos, new_id))) = heap.pop() {
            let pos = pos as usize;
            let current = symbols[pos];
            if current.len == 0 || current.next == -1 {
                continue;
            }
            let next_pos = current.next as usize;
            let right = symbols[next_pos];
            // A stale entry is skipped unless the pair now there merges to the same
            // token (`tokenizers` compares only the new id).
            if pair(current.id, right.id).is_none_or(|&(_, id)| id != new_id) {
                continue;
            }
            symbols[pos].id = new_id;
            symbols[pos].len += right.len;
            symbols[pos].next = right.next;
            symbols[next_pos].len = 0;
            if right.next >= 0 {
                symbols[right.next as usize].prev = pos as i32;
            }
            let current = symbols[pos];
            if current.prev >= 0 {
                let prev = current.prev as usize;
                if let Some(&(rank, id)) = pair(symbols[prev].id, current.id) {
                    heap.push(Reverse((rank, prev as u32, id)));
                }
            }
            if current.next >= 0 {
                let next = current.next as usize;
                if let Some(&(rank, id)) = pair(current.id, symbols[next].id) {
                    heap.push(Reverse((rank, pos as u32, id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| s.len != 0).map(|s| s.id));
    }
}

/// The ids a `ByteLevel`, `TemplateProcessing` (single sequence) or a sequence of
/// those puts around the text when `add_special_tokens` is set.
fn post_processor_specials(tokenizer: &Tokenizer) -> Option<(Vec<u32>, Vec<u32>)> {
    let Some(processor) = tokenizer.get_post_processor() else {
        return Some((Vec::new(), Vec::new()));
    };
    let json = serde_json::to_value(processor).ok()?;
    let mut before = Vec::new();
    let mut after = Vec::new();
    let steps = match json["type"].as_str()? {
        "Sequence" => json["processors"].as_array()?.clone(),
        _ => vec![json],
    };
    for step in &steps {
        match step["type"].as_str()? {
            "ByteLevel" => {}
            "TemplateProcessing" => {
                let mut seen_sequence = false;
                let mut pre = Vec::new();
                let mut post = Vec::new();
                for piece in step["single"].as_array()? {
                    if let Some(seq) = piece.get("Sequence") {
                        if seq["id"] != "A" || seen_sequence {
                            return None;
                        }
                        seen_sequence = true;
                    } else {
                        let name = piece.get("SpecialToken")?["id"].as_str()?;
                        let ids = step["special_tokens"][name]["ids"].as_array()?;
                        let target = if seen_sequence { &mut post } else { &mut pre };
                        for id in ids {
                            target.push(u32::try_from(id.as_u64()?).ok()?);
                        }
                    }
                }
                if !seen_sequence {
                    return None;
                }
                // Processors apply in order, each around the previous result.
                pre.extend_from_slice(&before);
                before = pre;
                after.extend_from_slice(&post);
            }
            _ => return None,
        }
    }
    Some((before, after))
}
