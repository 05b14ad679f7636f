//! Property tests: `IncrementalDecoder` (through its decode tables) against `tokenizers`'
//! own `DecodeStream` (same crate version) over random token streams, token by token.
//!
//! The default run checks `DEFAULT_TOKENS` tokens per tokenizer and option. The large run
//! (millions of tokens) is:
//!
//! ```text
//! DETOK_PROPTEST_TOKENS=2000000 cargo test --release -p vllm-detok --test property -- --ignored
//! ```

mod common;

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vllm_detok::{DecodeOptions, HfTokenizer, IncrementalDecoder, TableKind, Tokenizer};

const DEFAULT_TOKENS: usize = 6_000;
const TEXTS: &[&str] = &[
    "Hello, world! The quick brown fox.",
    "def f(x):\n    return x * 2\n",
    "😀👍🏽🇫🇷👨‍👩‍👧 ❤️",
    "中文字符测试，日本語のテキスト、한국어",
    "café naïve Straße ĳ ﬁ",
    "مرحبا שלום Привет",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ∑∫√∞",
];

/// Random token streams mixing text, random ids, added tokens and single bytes (parts of
/// multi-byte characters and invalid UTF-8).
struct Streams {
    tokenizer: Arc<HfTokenizer>,
    texts: Vec<Vec<u32>>,
    added: Vec<u32>,
    bytes: Vec<u32>,
    vocab: u32,
}

impl Streams {
    fn new(tokenizer: Arc<HfTokenizer>) -> Self {
        let inner = tokenizer.inner();
        let texts = TEXTS
            .iter()
            .map(|t| inner.encode(*t, false).unwrap().get_ids().to_vec())
            .collect();
        let mut added: Vec<u32> = inner.get_added_tokens_decoder().keys().copied().collect();
        added.sort_unstable();
        // Byte-fallback tokens (`<0xE2>`), else the byte-level tokens of one byte.
        let mut bytes: Vec<u32> = (0..=255u8)
            .filter_map(|b| inner.token_to_id(&format!("<0x{b:02X}>")))
            .collect();
        if bytes.is_empty() {
            let table = tokenizer.decode_table().expect("byte-level table");
            bytes = (0..table.len() as u32)
                .filter(|&id| table.token_bytes(id, false).len() == 1)
                .collect();
        }
        assert!(bytes.len() >= 200, "single-byte tokens: {}", bytes.len());
        let vocab = tokenizer.vocab_size() as u32;
        Self {
            tokenizer,
            texts,
            added,
            bytes,
            vocab,
        }
    }

    fn piece(&self, rng: &mut StdRng, out: &mut Vec<u32>) {
        match rng.random_range(0..100) {
            0..35 => {
                let text = &self.texts[rng.random_range(0..self.texts.len())];
                let start = rng.random_range(0..text.len());
                let end = (start + rng.random_range(1..8)).min(text.len());
                out.extend_from_slice(&text[start..end]);
            }
            35..60 => out.push(rng.random_range(0..self.vocab)),
            60..70 => out.push(self.added[rng.random_range(0..self.added.len())]),
            _ => {
                for _ in 0..rng.random_range(1..4) {
                    out.push(self.bytes[rng.random_range(0..self.bytes.len())]);
                }
            }
        }
    }
}

/// Runs `tokens` random tokens through both decoders, one token at a time, and asserts that
/// every step returns the same text. `DecodeStream` errors are handled as vLLM does (restart
/// the stream and decode the token again).
fn check(name: &str, tokens: usize, seed: u64) {
    let streams = Streams::new(common::tokenizer(name));
    let inner = streams.tokenizer.inner().clone();
    let mut rng = StdRng::seed_from_u64(seed);
    for skip in [true, false] {
        let tokenizer: Arc<dyn Tokenizer> = streams.tokenizer.clone();
        let options = DecodeOptions {
            skip_special_tokens: skip,
            ..DecodeOptions::default()
        };
        let mut checked = 0;
        while checked < tokens {
            // A fresh request every few thousand tokens.
            let mut ids = Vec::new();
            while ids.len() < 3_000.min(tokens - checked) {
                streams.piece(&mut rng, &mut ids);
            }
            let mut ours =
                IncrementalDecoder::new(tokenizer.clone(), &[], options.clone()).unwrap();
            let mut reference = inner.decode_stream(skip);
            for (i, &id) in ids.iter().enumerate() {
                let expected = match reference.step(id) {
                    Ok(text) => text.unwrap_or_default(),
                    Err(_) => {
                        reference = inner.decode_stream(skip);
                        reference.step(id).unwrap().unwrap_or_default()
                    }
                };
                let got = ours.push(&[id]).unwrap().text;
                assert_eq!(
                    got,
                    expected,
                    "{name} skip={skip} token {i} id {id} in {:?}",
                    &ids[i.saturating_sub(8)..=i]
                );
            }
            checked += ids.len();
        }
    }
}

/// The text `DecodeStream` produces for `ids` (with vLLM's restart on errors).
fn decode_stream_text(tokenizer: &HfTokenizer, ids: &[u32]) -> String {
    let inner = tokenizer.inner();
    let mut stream = inner.decode_stream(true);
    let mut text = String::new();
    for &id in ids {
        let piece = match stream.step(id) {
            Ok(piece) => piece,
            Err(_) => {
                stream = inner.decode_stream(true);
                stream.step(id).unwrap()
            }
        };
        text.push_str(&piece.unwrap_or_default());
    }
    text
}

/// Long runs of random single bytes (invalid UTF-8 with valid characters scattered in):
/// the window path holds back a bounded number of tokens where `DecodeStream` holds the
/// whole run (quadratic). For byte-level BPE the text is `DecodeStream`'s, released earlier.
/// (For byte fallback it is not always: see `WindowStream::release_held`.)
#[test]
fn long_invalid_runs_are_bounded() {
    for name in ["qwen3", "gemma3"] {
        let streams = Streams::new(common::tokenizer(name));
        let mut rng = StdRng::seed_from_u64(0xfffd);
        let mut ids = Vec::new();
        for _ in 0..3 {
            streams.piece(&mut rng, &mut ids);
            for _ in 0..600 {
                ids.push(streams.bytes[rng.random_range(0..streams.bytes.len())]);
            }
        }
        ids.extend(streams.texts[0].iter().copied());
        let expected = decode_stream_text(&streams.tokenizer, &ids);

        let without_table = Arc::new(common::WithoutTable::new(streams.tokenizer.clone()));
        let tokenizers: [Arc<dyn Tokenizer>; 2] =
            [streams.tokenizer.clone(), without_table.clone()];
        for tokenizer in tokenizers {
            let mut decoder =
                IncrementalDecoder::new(tokenizer, &[], DecodeOptions::default()).unwrap();
            let mut text = String::new();
            let mut longest_silence = 0;
            let mut silence = 0;
            for &id in &ids {
                let delta = decoder.push(&[id]).unwrap().text;
                silence = if delta.is_empty() { silence + 1 } else { 0 };
                longest_silence = longest_silence.max(silence);
                text.push_str(&delta);
            }
            if name == "qwen3" {
                assert_eq!(text, expected, "{name}");
            }
            assert!(
                text.ends_with("Hello, world! The quick brown fox."),
                "{name}"
            );
            // At most 64 held tokens, twice when a dropped run precedes a released one.
            assert!(
                longest_silence <= 128,
                "{name}: {longest_silence} tokens held"
            );
        }
        // Every step decodes a window of at most about 2 x 64 tokens, a few times.
        let per_token = without_table.decoded_ids() / ids.len();
        assert!(per_token < 600, "{name}: {per_token} ids decoded per token");
    }
}

#[test]
fn decode_tables_are_chosen_from_the_decoder() {
    for name in common::MODELS {
        let kind = common::tokenizer(name).decode_table().map(|t| t.kind());
        let expected = if *name == "gemma3" {
            TableKind::ByteFallback
        } else {
            TableKind::ByteLevel
        };
        assert_eq!(kind, Some(expected), "{name}");
    }
}

fn default_run(name: &str) {
    check(name, DEFAULT_TOKENS, 0x5eed ^ name.len() as u64);
}

#[test]
fn table_equals_decode_stream_qwen3() {
    default_run("qwen3");
}

#[test]
fn table_equals_decode_stream_llama3() {
    default_run("llama3");
}

#[test]
fn table_equals_decode_stream_deepseek_v3() {
    default_run("deepseek_v3");
}

#[test]
fn table_equals_decode_stream_gptoss() {
    default_run("gptoss");
}

#[test]
fn byte_fallback_table_equals_decode_stream_gemma3() {
    default_run("gemma3");
}

/// The large run: `DETOK_PROPTEST_TOKENS` tokens (default 1,000,000) per tokenizer and
/// `skip_special_tokens` value.
#[test]
#[ignore = "long: run with --release -- --ignored"]
fn large_random_streams() {
    let tokens = std::env::var("DETOK_PROPTEST_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    for (i, name) in common::MODELS.iter().enumerate() {
        let start = std::time::Instant::now();
        check(name, tokens, 0xdec0de + i as u64);
        eprintln!(
            "{name}: {} tokens x 2 options equal to DecodeStream ({:.1?})",
            tokens,
            start.elapsed()
        );
    }
}
