//! mistral-common's SentencePiece tokenizers (`tokenizer.model.v1` ... `.v7`), decoded as
//! vLLM decodes them.
//!
//! The `.model` file is a protobuf `ModelProto`; only what decoding needs is read: each
//! piece's string and type (normal, unknown, control, user-defined, byte `<0xNN>`, unused),
//! the normalizer flags that decide whether a leading `▁` is dropped, and the trainer's
//! `unk_surface`. Scores and the rest are ignored.
//!
//! SentencePiece's own decoding (`SentencePieceProcessor::Decode`), which [`decode_pieces`]
//! reproduces: control pieces decode to nothing, the unknown piece to ` ⁇ `, a run of byte
//! pieces to its UTF-8 with one U+FFFD per invalid byte, and other pieces to their text with
//! `▁` as a space, except that the first piece that is not a control piece loses a leading
//! `▁`.
//!
//! vLLM uses that decoding in two places, each differently:
//! * Streaming goes through its slow detokenizer (`SlowIncrementalDetokenizer`):
//!   `MistralTokenizer.convert_ids_to_tokens` (which, with `skip_special_tokens`, drops the
//!   control tokens except the tool-call and reasoning markers) and
//!   `convert_tokens_to_string`, which decodes the runs between those markers separately
//!   and keeps the markers as text ([`Tokenizer::stream_decode`]).
//! * `MistralTokenizer.decode` is transformers' `MistralCommonBackend.decode`: with
//!   `skip_special_tokens` SentencePiece's decoding, without it the raw pieces joined
//!   (`▁Hello,▁world`); logprob token text is that raw piece ([`Tokenizer::decode`]).
//!
//! The shared [`DecodeTable`](crate::DecodeTable) does not fit this decoding: a byte run's
//! invalid bytes become one U+FFFD *each* (not one per byte run or per maximal invalid
//! sequence), and the leading `▁` rule depends on the pieces before it. Streaming uses
//! the window method over [`Tokenizer::stream_decode`], whose window is a handful of tokens.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::{Error, Result};
use crate::logprobs::TokenTexts;
use crate::protobuf::{Reader, Value};
use crate::table::DecodeTable;
use crate::tekken::KEPT_SPECIAL_TOKENS;
use crate::tokenizer::Tokenizer;

/// The most pieces a model may have (mistral-common's have 32,000 and 32,768).
const MAX_PIECES: usize = 1 << 22;
/// SentencePiece's whitespace marker.
const SPACE_MARKER: char = '\u{2581}';
/// `TrainerSpec.unk_surface`'s default.
const DEFAULT_UNK_SURFACE: &str = " \u{2047} ";

/// A piece's `SentencePiece.Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `NORMAL` (1), `USER_DEFINED` (4) and `UNUSED` (5): decoded as their text.
    Text,
    /// `UNKNOWN` (2): decoded as the `unk_surface`.
    Unknown,
    /// `CONTROL` (3): decoded as nothing.
    Control,
    /// `BYTE` (6): one byte of a UTF-8 sequence.
    Byte(u8),
}

#[derive(Debug)]
struct Piece {
    /// The piece as the model stores it (`▁Hello`).
    text: String,
    /// Its decoded text, `▁` as a space (` Hello`), computed once.
    surface: String,
    kind: Kind,
    /// A control token that vLLM keeps as text in streamed output (`[TOOL_CALLS]`, ...),
    /// or any piece with such a text.
    kept_marker: bool,
    /// `SentencePiece.score` (BPE merge priority).
    score: f32,
    /// `SentencePiece.Type` as stored (1 normal, 2 unknown, 3 control, 4 user-defined,
    /// 5 unused, 6 byte).
    type_number: u64,
}

/// What an encoder needs from a SentencePiece model, as [`SentencePieceTokenizer`] parsed
/// it (vllm-chat's Mistral renderer encodes with it; this crate only decodes).
#[derive(Debug, Clone, PartialEq)]
pub struct SentencePieceSpec {
    /// `TrainerSpec.model_type` (1 unigram, 2 BPE, 3 word, 4 char).
    pub model_type: u64,
    /// `TrainerSpec.byte_fallback`.
    pub byte_fallback: bool,
    /// `NormalizerSpec.add_dummy_prefix`.
    pub add_dummy_prefix: bool,
    /// `NormalizerSpec.remove_extra_whitespaces`.
    pub remove_extra_whitespaces: bool,
    /// `NormalizerSpec.escape_whitespaces`.
    pub escape_whitespaces: bool,
    /// `TrainerSpec.treat_whitespace_as_suffix`.
    pub treat_whitespace_as_suffix: bool,
    /// True when the normalizer has a precompiled character map (a real normalization
    /// such as NFKC, as opposed to `identity`).
    pub has_charsmap: bool,
}

/// A SentencePiece tokenizer from mistral-common (a `tokenizer.model.vN` file).
///
/// ```no_run
/// # fn main() -> Result<(), vllm_detok::Error> {
/// use std::sync::Arc;
/// use vllm_detok::{DecodeOptions, IncrementalDecoder, SentencePieceTokenizer, Tokenizer};
///
/// let tokenizer: Arc<dyn Tokenizer> =
///     Arc::new(SentencePieceTokenizer::from_file("Mistral-Large/tokenizer.model.v7")?);
/// let mut decoder = IncrementalDecoder::new(tokenizer, &[1, 3], DecodeOptions::default())?;
/// print!("{}", decoder.push(&[23325, 29493])?.text);
/// # Ok(())
/// # }
/// ```
pub struct SentencePieceTokenizer {
    pieces: Vec<Piece>,
    spec: SentencePieceSpec,
    /// `NormalizerSpec.add_dummy_prefix || remove_extra_whitespaces`: whether the first
    /// piece's leading `▁` is dropped.
    strip_leading_space: bool,
    unk_surface: String,
    texts: OnceLock<TokenTexts>,
}

impl std::fmt::Debug for SentencePieceTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentencePieceTokenizer")
            .field("vocab_size", &self.pieces.len())
            .field("strip_leading_space", &self.strip_leading_space)
            .finish_non_exhaustive()
    }
}

fn bad(what: &str) -> Error {
    Error::Tokenizer(format!("SentencePiece model: {what}"))
}

fn utf8(bytes: &[u8], what: &str) -> Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| bad(&format!("{what} is not UTF-8")))
}

/// `<0xNN>`, the text of a byte piece.
fn byte_of(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    (hex.len() == 2)
        .then(|| u8::from_str_radix(hex, 16).ok())
        .flatten()
}

/// One `SentencePiece` message: its text and type (default `NORMAL`).
fn read_piece(message: &[u8]) -> Result<Piece> {
    let mut text = None;
    let mut kind_number = 1;
    let mut score = 0.0;
    let mut reader = Reader::new(message);
    while let Some((field, value)) = reader.next_field()? {
        match (field, value) {
            (1, Value::Bytes(bytes)) => text = Some(utf8(bytes, "a piece")?),
            (2, Value::Fixed32(bits)) => score = f32::from_bits(bits),
            (3, Value::Varint(n)) => kind_number = n,
            _ => {}
        }
    }
    let text = text.ok_or_else(|| bad("a piece without text"))?;
    let kind = match kind_number {
        1 | 4 | 5 => Kind::Text,
        2 => Kind::Unknown,
        3 => Kind::Control,
        6 => Kind::Byte(byte_of(&text).ok_or_else(|| bad("a byte piece that is not <0xNN>"))?),
        _ => return Err(bad("a piece of unknown type")),
    };
    let kept_marker = KEPT_SPECIAL_TOKENS.contains(&text.as_str());
    let surface = text.replace(SPACE_MARKER, " ");
    Ok(Piece {
        text,
        surface,
        kind,
        kept_marker,
        score,
        type_number: kind_number,
    })
}

impl SentencePieceTokenizer {
    /// Loads a SentencePiece `.model` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.into(),
            source,
        })?;
        Self::from_bytes(&bytes)
    }

    /// Loads a tokenizer from the contents of a SentencePiece `.model` file (a serialized
    /// `ModelProto`).
    pub fn from_bytes(model: &[u8]) -> Result<Self> {
        let mut pieces = Vec::new();
        // NormalizerSpec's defaults: both true.
        let (mut add_dummy_prefix, mut remove_extra_whitespaces) = (true, true);
        let mut encoding = SentencePieceSpec {
            model_type: 1,
            byte_fallback: false,
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
            treat_whitespace_as_suffix: false,
            has_charsmap: false,
        };
        let mut unk_surface = DEFAULT_UNK_SURFACE.to_owned();
        let mut reader = Reader::new(model);
        while let Some((field, value)) = reader.next_field()? {
            match (field, value) {
                (1, Value::Bytes(message)) => {
                    if pieces.len() == MAX_PIECES {
                        return Err(bad("too many pieces"));
                    }
                    pieces.push(read_piece(message)?);
                }
                (2, Value::Bytes(trainer_spec)) => {
                    let mut spec = Reader::new(trainer_spec);
                    while let Some((field, value)) = spec.next_field()? {
                        match (field, value) {
                            (44, Value::Bytes(surface)) => {
                                unk_surface = utf8(surface, "unk_surface")?;
                            }
                            (3, Value::Varint(n)) => encoding.model_type = n,
                            (35, Value::Varint(flag)) => encoding.byte_fallback = flag != 0,
                            (24, Value::Varint(flag)) => {
                                encoding.treat_whitespace_as_suffix = flag != 0;
                            }
                            _ => {}
                        }
                    }
                }
                (3, Value::Bytes(normalizer_spec)) => {
                    let mut spec = Reader::new(normalizer_spec);
                    while let Some((field, value)) = spec.next_field()? {
                        match (field, value) {
                            (2, Value::Bytes(map)) => encoding.has_charsmap = !map.is_empty(),
                            (3, Value::Varint(flag)) => add_dummy_prefix = flag != 0,
                            (4, Value::Varint(flag)) => remove_extra_whitespaces = flag != 0,
                            (5, Value::Varint(flag)) => encoding.escape_whitespaces = flag != 0,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        if pieces.is_empty() {
            return Err(bad("no pieces"));
        }
        encoding.add_dummy_prefix = add_dummy_prefix;
        encoding.remove_extra_whitespaces = remove_extra_whitespaces;
        Ok(Self {
            pieces,
            spec: encoding,
            strip_leading_space: add_dummy_prefix || remove_extra_whitespaces,
            unk_surface,
            texts: OnceLock::new(),
        })
    }

    /// The model's encoding settings.
    pub fn spec(&self) -> &SentencePieceSpec {
        &self.spec
    }

    /// Every piece in id order: its text, score and `SentencePiece.Type` number.
    pub fn pieces(&self) -> impl Iterator<Item = (&str, f32, u64)> {
        self.pieces
            .iter()
            .map(|p| (p.text.as_str(), p.score, p.type_number))
    }

    fn piece(&self, id: u32) -> Option<&Piece> {
        self.pieces.get(id as usize)
    }

    /// `SentencePieceProcessor::Decode` of `ids`, appended to `out` (ids without a piece
    /// are left out).
    fn decode_pieces(&self, ids: &[u32], out: &mut String) {
        // Whether no piece other than a control one has been decoded yet.
        let mut at_start = true;
        let mut bytes = Vec::new();
        for piece in ids.iter().filter_map(|&id| self.piece(id)) {
            if let Kind::Byte(byte) = piece.kind {
                bytes.push(byte);
                at_start = false;
                continue;
            }
            push_byte_run(&mut bytes, out);
            match piece.kind {
                Kind::Control | Kind::Byte(_) => {}
                Kind::Unknown => {
                    out.push_str(&self.unk_surface);
                    at_start = false;
                }
                Kind::Text => {
                    let strip = at_start
                        && self.strip_leading_space
                        && piece.text.starts_with(SPACE_MARKER);
                    // The surface's first character is the `▁` then.
                    out.push_str(piece.surface.get(usize::from(strip)..).unwrap_or_default());
                    at_start = false;
                }
            }
        }
        push_byte_run(&mut bytes, out);
    }
}

/// SentencePiece's decoding of a run of byte pieces: each valid UTF-8 character as itself,
/// each byte that does not start one as U+FFFD.
fn push_byte_run(bytes: &mut Vec<u8>, out: &mut String) {
    let mut rest = bytes.as_slice();
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                break;
            }
            Err(e) => {
                let (valid, invalid) = rest.split_at(e.valid_up_to());
                // `valid_up_to` bytes are valid UTF-8 by definition.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                out.push('\u{FFFD}');
                rest = invalid.get(1..).unwrap_or_default();
            }
        }
    }
    bytes.clear();
}

impl Tokenizer for SentencePieceTokenizer {
    /// transformers' `MistralCommonBackend.decode`, which vLLM's `MistralTokenizer.decode`
    /// calls: with `skip_special_tokens` SentencePiece's decoding (control tokens left out),
    /// without it the raw pieces joined, control tokens included.
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let mut out = String::new();
        if skip_special_tokens {
            self.decode_pieces(ids, &mut out);
        } else {
            for piece in ids.iter().filter_map(|&id| self.piece(id)) {
                out.push_str(&piece.text);
            }
        }
        Ok(out)
    }

    fn decode_table(&self) -> Option<&Arc<DecodeTable>> {
        None
    }

    /// vLLM's `MistralTokenizer.get_added_vocab()` is empty.
    fn added_token(&self, _id: u32) -> Option<&str> {
        None
    }

    fn vocab_size(&self) -> usize {
        self.pieces.len()
    }

    fn token_piece(&self, id: u32) -> Option<String> {
        Some(self.piece(id)?.text.clone())
    }

    /// vLLM finds no `Metaspace` marker on a `MistralTokenizer` (it has no
    /// `backend_tokenizer`), so logprob text is the raw piece, `▁` included.
    fn leading_space_marker(&self) -> Option<char> {
        None
    }

    fn token_texts(&self) -> &TokenTexts {
        self.texts.get_or_init(|| TokenTexts::build(self))
    }

    /// vLLM's slow path: `convert_ids_to_tokens` (with `skip_special_tokens`, control
    /// tokens other than the kept markers are dropped) then `convert_tokens_to_string`,
    /// which keeps the markers as text and decodes the runs between them one by one.
    fn stream_decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let mut out = String::new();
        let mut run: Vec<u32> = Vec::with_capacity(ids.len());
        for &id in ids {
            let Some(piece) = self.piece(id) else {
                continue;
            };
            if piece.kept_marker {
                self.decode_pieces(&run, &mut out);
                run.clear();
                out.push_str(&piece.text);
            } else if !(skip_special_tokens && piece.kind == Kind::Control) {
                run.push(id);
            }
        }
        self.decode_pieces(&run, &mut out);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `ModelProto` with the given `(piece, type)` pairs and normalizer flags.
    fn model(pieces: &[(&str, u8)], add_dummy_prefix: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for (text, kind) in pieces {
            let mut piece = vec![0x0A, text.len() as u8];
            piece.extend_from_slice(text.as_bytes());
            piece.extend_from_slice(&[0x18, *kind]);
            out.extend_from_slice(&[0x0A, piece.len() as u8]);
            out.extend_from_slice(&piece);
        }
        // normalizer_spec { add_dummy_prefix, remove_extra_whitespaces = false }
        out.extend_from_slice(&[0x1A, 4, 0x18, u8::from(add_dummy_prefix), 0x20, 0]);
        out
    }

    fn tiny(add_dummy_prefix: bool) -> SentencePieceTokenizer {
        let pieces = [
            ("<unk>", 2),
            ("<s>", 3),
            ("[TOOL_CALLS]", 3),
            ("\u{2581}Hi", 1),
            ("!", 1),
            ("<0xE4>", 6),
            ("<0xB8>", 6),
            ("<0xAD>", 6),
            ("\u{2581}", 1),
        ];
        SentencePieceTokenizer::from_bytes(&model(&pieces, add_dummy_prefix)).unwrap()
    }

    #[test]
    fn sentencepiece_decoding() {
        let t = tiny(true);
        let text = |ids: &[u32]| {
            let mut out = String::new();
            t.decode_pieces(ids, &mut out);
            out
        };
        assert_eq!(
            text(&[1, 3, 4, 3]),
            "Hi! Hi",
            "leading ▁ dropped after control pieces"
        );
        assert_eq!(text(&[8, 3]), " Hi", "only the first piece loses its ▁");
        assert_eq!(text(&[5, 3]), "\u{FFFD} Hi", "a byte piece comes first");
        assert_eq!(text(&[0, 3]), " \u{2047}  Hi");
        assert_eq!(text(&[5, 6, 7, 4]), "中!");
        assert_eq!(
            text(&[5, 6, 4, 7]),
            "\u{FFFD}\u{FFFD}!\u{FFFD}",
            "one U+FFFD per byte"
        );
        assert_eq!(text(&[4, 99, 4]), "!!", "ids without a piece");
        let kept = tiny(false);
        let mut out = String::new();
        kept.decode_pieces(&[3], &mut out);
        assert_eq!(out, " Hi", "no dummy prefix: ▁ kept");
    }

    #[test]
    fn decode_and_stream_decode() {
        let t = tiny(true);
        assert_eq!(
            t.decode(&[1, 3, 2, 4], false).unwrap(),
            "<s>\u{2581}Hi[TOOL_CALLS]!"
        );
        assert_eq!(t.decode(&[1, 3, 2, 4], true).unwrap(), "Hi!");
        for skip in [false, true] {
            assert_eq!(
                t.stream_decode(&[1, 3, 2, 3, 4], skip).unwrap(),
                "Hi[TOOL_CALLS]Hi!",
                "runs around a kept marker decode separately"
            );
        }
        assert_eq!(t.token_piece(3).as_deref(), Some("\u{2581}Hi"));
        assert_eq!(t.vocab_size(), 9);
    }

    #[test]
    fn rejects_malformed_models() {
        assert!(SentencePieceTokenizer::from_bytes(b"").is_err());
        assert!(SentencePieceTokenizer::from_bytes(&[0x0A, 0x03, 0x18, 0x01]).is_err());
        assert!(SentencePieceTokenizer::from_bytes(&model(&[("<0xZZ>", 6)], true)).is_err());
        assert!(SentencePieceTokenizer::from_bytes(&model(&[("a", 9)], true)).is_err());
        assert!(SentencePieceTokenizer::from_bytes(&[0x0A, 0x02, 0x18, 0x01]).is_err());
        // Every truncation of a valid model either loads or fails cleanly.
        let full = model(&[("<s>", 3), ("\u{2581}a", 1)], true);
        for end in 0..full.len() {
            let _ = SentencePieceTokenizer::from_bytes(&full[..end]);
        }
    }
}
