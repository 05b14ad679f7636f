//! Text to ids for mistral-common's SentencePiece vocabularies (`tokenizer.model.v*`),
//! as `sentencepiece`'s BPE model encodes (`bpe_model.cc` `Model::Encode` behind
//! `SentencePieceProcessor.encode`, which mistral-common's `SentencePieceTokenizer.encode`
//! calls).
//!
//! The steps: the identity normalizer (`remove_extra_whitespaces`, `add_dummy_prefix`
//! and `escape_whitespaces` as the model says; models with a precompiled character map
//! are refused), the text cut into characters (a user-defined piece, matched longest
//! first, is one frozen symbol), then merges of the adjacent pair whose concatenation is
//! a normal, user-defined or unused piece with the highest score (the leftmost on a tie)
//! until none applies; an unused piece split back into what it was merged from; each
//! symbol's id, and with `byte_fallback` a symbol that is no piece becomes its UTF-8
//! bytes' `<0xNN>` pieces (else `<unk>`). The model file is
//! parsed once, by vllm-detok's [`SentencePieceTokenizer`]; no crate on crates.io
//! reproduces SentencePiece's BPE ordering exactly without its C++ library. The
//! property test (`tests/mistral.rs`) checks ids against `sentencepiece` on random and
//! adversarial strings.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use vllm_detok::SentencePieceTokenizer;

use crate::RenderError;

const NORMAL: u64 = 1;
const UNKNOWN: u64 = 2;
const USER_DEFINED: u64 = 4;
const UNUSED: u64 = 5;
const BYTE: u64 = 6;

/// A SentencePiece BPE model's encoder.
pub(crate) struct SentencePieceEncoder {
    /// Normal, user-defined and unused pieces: id, score, and whether it is unused.
    pieces: HashMap<String, (u32, f32, bool)>,
    /// Every piece's id by text (what `PieceToId` finds, reserved pieces included).
    ids: HashMap<String, u32>,
    user_defined: Vec<String>,
    bytes: [Option<u32>; 256],
    unk: u32,
    byte_fallback: bool,
    add_dummy_prefix: bool,
    remove_extra_whitespaces: bool,
    escape_whitespaces: bool,
}

#[derive(Debug, PartialEq)]
struct Pair {
    score: f32,
    left: usize,
    right: usize,
    size: usize,
}

impl Eq for Pair {}

impl Ord for Pair {
    /// The highest score first, then the leftmost.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .partial_cmp(&other.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| other.left.cmp(&self.left))
    }
}

impl PartialOrd for Pair {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

struct Symbol {
    start: usize,
    end: usize,
    prev: Option<usize>,
    next: Option<usize>,
    freeze: bool,
}

impl SentencePieceEncoder {
    pub(crate) fn new(model: &SentencePieceTokenizer) -> Result<Self, RenderError> {
        let spec = model.spec();
        let unsupported = |what: &str| {
            RenderError::Tokenizer(format!(
                "tokenizer.model: {what} is not supported by the SentencePiece encoder"
            ))
        };
        if spec.model_type != 2 {
            return Err(unsupported("a model type other than BPE"));
        }
        if spec.has_charsmap {
            return Err(unsupported("a normalizer with a character map"));
        }
        if spec.treat_whitespace_as_suffix {
            return Err(unsupported("treat_whitespace_as_suffix"));
        }
        let mut pieces = HashMap::new();
        let mut ids = HashMap::new();
        let mut user_defined = Vec::new();
        let mut bytes = [None; 256];
        let mut unk = None;
        for (id, (text, score, kind)) in model.pieces().enumerate() {
            let id = u32::try_from(id).map_err(|_| unsupported("a vocabulary this large"))?;
            ids.entry(text.to_owned()).or_insert(id);
            match kind {
                NORMAL | USER_DEFINED | UNUSED => {
                    pieces
                        .entry(text.to_owned())
                        .or_insert((id, score, kind == UNUSED));
                    if kind == USER_DEFINED {
                        user_defined.push(text.to_owned());
                    }
                }
                UNKNOWN => unk = unk.or(Some(id)),
                BYTE => {
                    if let Some(b) = text
                        .strip_prefix("<0x")
                        .and_then(|h| h.strip_suffix('>'))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        bytes[usize::from(b)] = Some(id);
                    }
                }
                _ => {}
            }
        }
        user_defined.sort_by_key(|p| std::cmp::Reverse(p.len()));
        Ok(SentencePieceEncoder {
            pieces,
            ids,
            user_defined,
            bytes,
            unk: unk.ok_or_else(|| unsupported("a model without an unknown piece"))?,
            byte_fallback: spec.byte_fallback,
            add_dummy_prefix: spec.add_dummy_prefix,
            remove_extra_whitespaces: spec.remove_extra_whitespaces,
            escape_whitespaces: spec.escape_whitespaces,
        })
    }

    /// The identity normalizer.
    fn normalize(&self, text: &str) -> String {
        let mut body = String::with_capacity(text.len() + 3);
        if self.remove_extra_whitespaces {
            let mut last_space = true;
            for c in text.chars() {
                if c == ' ' {
                    if !last_space {
                        body.push(' ');
                    }
                    last_space = true;
                } else {
                    body.push(c);
                    last_space = false;
                }
            }
            while body.ends_with(' ') {
                body.pop();
            }
        } else {
            body.push_str(text);
        }
        if body.is_empty() {
            return body;
        }
        if self.add_dummy_prefix {
            body.insert(0, ' ');
        }
        if self.escape_whitespaces {
            body = body.replace(' ', "\u{2581}");
        }
        body
    }

    /// `SentencePieceTokenizer.encode(text, bos=False, eos=False)`, appended to `out`.
    pub(crate) fn encode(&self, text: &str, out: &mut Vec<u32>) -> Result<(), RenderError> {
        let normalized = self.normalize(text);
        if normalized.is_empty() {
            return Ok(());
        }
        let mut symbols: Vec<Symbol> = Vec::new();
        let mut pos = 0;
        while pos < normalized.len() {
            let rest = &normalized[pos..];
            let (len, freeze) = match self
                .user_defined
                .iter()
                .find(|p| rest.starts_with(p.as_str()))
            {
                Some(piece) => (piece.len(), true),
                None => (rest.chars().next().map_or(1, char::len_utf8), false),
            };
            let index = symbols.len();
            symbols.push(Symbol {
                start: pos,
                end: pos + len,
                prev: index.checked_sub(1),
                next: None,
                freeze,
            });
            if index > 0 {
                symbols[index - 1].next = Some(index);
            }
            pos += len;
        }
        let mut agenda = BinaryHeap::new();
        let rev_merge: std::cell::RefCell<HashMap<String, (String, String)>> = Default::default();
        let add = |agenda: &mut BinaryHeap<Pair>,
                   symbols: &[Symbol],
                   left: Option<usize>,
                   right: Option<usize>| {
            let (Some(left), Some(right)) = (left, right) else {
                return;
            };
            let (l, r) = (&symbols[left], &symbols[right]);
            if l.freeze || r.freeze {
                return;
            }
            let piece = &normalized[l.start..r.end];
            if let Some(&(_, score, unused)) = self.pieces.get(piece) {
                agenda.push(Pair {
                    score,
                    left,
                    right,
                    size: piece.len(),
                });
                // `rev_merge`: how an unused piece was made, to split it back.
                if unused {
                    rev_merge.borrow_mut().insert(
                        piece.to_owned(),
                        (
                            normalized[l.start..l.end].to_owned(),
                            normalized[r.start..r.end].to_owned(),
                        ),
                    );
                }
            }
        };
        for i in 1..symbols.len() {
            add(&mut agenda, &symbols, Some(i - 1), Some(i));
        }
        while let Some(top) = agenda.pop() {
            let (l, r) = (&symbols[top.left], &symbols[top.right]);
            if l.start == l.end
                || r.start == r.end
                || (l.end - l.start) + (r.end - r.start) != top.size
            {
                continue;
            }
            let right_next = r.next;
            let right_end = r.end;
            symbols[top.left].end = right_end;
            symbols[top.left].next = right_next;
            if let Some(next) = right_next {
                symbols[next].prev = Some(top.left);
            }
            symbols[top.right].end = symbols[top.right].start;
            let prev = symbols[top.left].prev;
            add(&mut agenda, &symbols, prev, Some(top.left));
            add(&mut agenda, &symbols, Some(top.left), right_next);
        }
        let rev_merge = rev_merge.into_inner();
        let mut index = Some(0);
        while let Some(i) = index {
            self.resegment(
                &normalized[symbols[i].start..symbols[i].end],
                &rev_merge,
                out,
                0,
            );
            index = symbols[i].next;
        }
        Ok(())
    }

    /// `resegment`: an unused piece is split back into the pieces it was merged from;
    /// other symbols become their id, their bytes (`byte_fallback`) or `<unk>`.
    fn resegment(
        &self,
        piece: &str,
        rev_merge: &HashMap<String, (String, String)>,
        out: &mut Vec<u32>,
        depth: usize,
    ) {
        if let Some(&(_, _, true)) = self.pieces.get(piece)
            && let Some((left, right)) = rev_merge.get(piece)
            && depth < piece.len()
        {
            self.resegment(left, rev_merge, out, depth + 1);
            self.resegment(right, rev_merge, out, depth + 1);
            return;
        }
        match self.ids.get(piece) {
            Some(&id) => out.push(id),
            None if self.byte_fallback => {
                for b in piece.bytes() {
                    out.push(self.bytes[usize::from(b)].unwrap_or(self.unk));
                }
            }
            None => out.push(self.unk),
        }
    }
}
