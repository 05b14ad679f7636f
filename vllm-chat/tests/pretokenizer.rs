//! Our tokenization against the `tokenizers` crate's own: the fast pre-tokenizer
//! (vs Oniguruma, Qwen3 and Llama 3) and the segment-cached encoding of
//! `ChatRenderer::encode` (all six vendored tokenizers), with identical token ids on
//! the parity prompts and on random text mixing scripts, combining marks, digits,
//! apostrophes, whitespace kinds, punctuation and special tokens.

mod common;

use serde_json::Value;
use vllm_chat::tokenizer::Tokenizer as FastTokenizer;

/// A small deterministic generator (xorshift), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const PIECES: &[&str] = &[
    "a",
    "Z",
    "hello",
    " world",
    "'s",
    "'T",
    "'re",
    "'Ve",
    "'M",
    "'LL",
    "'d",
    "'x",
    "'",
    "ſ",
    "é",
    "ß",
    "Ω",
    "я",
    "世界",
    "こんにちは",
    "한국",
    "हिन्दी",
    "ि",
    "\u{301}",
    "٣",
    "Ⅻ",
    "½",
    "0",
    "12",
    "345",
    "6789",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    " \n ",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "\u{85}",
    "!",
    "?!",
    "...",
    "—",
    "🚀",
    "👍🏽",
    "<|im_start|>",
    "<tool_call>",
    "{\"a\": 1}",
    "_",
    "-",
    "$",
    "\u{200b}",
    "\u{feff}",
    "<|im_end|>",
    "<|eot_id|>",
    "<|start_header_id|>",
    "<|begin_of_text|>",
    "<｜begin▁of▁sentence｜>",
    "<｜User｜>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<|start|>",
    "<|message|>",
    "<|end|>",
    "<bos>",
    "<|im_start|",
    "|>",
];

/// The parity prompts of `model` and `random` random texts.
fn texts(model: &str, random: usize) -> Vec<String> {
    let mut texts: Vec<String> = Vec::new();
    let fixture: Value = serde_json::from_slice(&common::gunzip(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/parity.json.gz"
    ))))
    .unwrap();
    for case in fixture["models"][model].as_object().unwrap().values() {
        if let Some(t) = case["text"].as_str() {
            texts.push(t.to_owned());
        }
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..random {
        let n = 1 + rng.next() % 12;
        texts.push((0..n).map(|_| rng.pick(PIECES)).collect());
    }
    texts
}

fn check(model: &str) {
    let Some(dir) = common::ModelDir::new(model) else {
        panic!("testdata/models/{model} missing")
    };
    let path = dir.0.join("tokenizer.json");
    let reference = tokenizers::Tokenizer::from_file(&path).expect("reference tokenizer");
    let fast = FastTokenizer::from_file(&path).expect("fast tokenizer");
    assert!(
        fast.get_pre_tokenizer().is_some_and(|p| p.is_accelerated()),
        "{model}: split pattern not recognised"
    );
    for text in &texts(model, 3000) {
        for special in [false, true] {
            let want = reference.encode_fast(text.as_str(), special).unwrap();
            let got = fast.encode_fast(text.as_str(), special).unwrap();
            assert_eq!(got.get_ids(), want.get_ids(), "{model}: {text:?}");
        }
    }
}

#[test]
fn qwen3_split_matches_oniguruma() {
    check("qwen3");
}

#[test]
fn llama3_split_matches_oniguruma() {
    check("llama3_1");
}

#[test]
fn segment_cached_encoding_matches_tokenizers() {
    for model in [
        "qwen3",
        "llama3",
        "llama3_1",
        "deepseek_v3",
        "gemma3",
        "gptoss",
    ] {
        let Some(dir) = common::ModelDir::new(model) else {
            panic!("testdata/models/{model} missing")
        };
        let reference = tokenizers::Tokenizer::from_file(dir.0.join("tokenizer.json"))
            .expect("reference tokenizer");
        let files = vllm_chat::ModelFiles::from_dir(&dir.0).unwrap();
        let renderer = vllm_chat::ChatRenderer::new(files, Default::default()).unwrap();
        if matches!(model, "qwen3" | "llama3_1") {
            assert!(renderer.caches_segments(), "{model}");
        }
        // Twice: the second pass reads the cache.
        for _ in 0..2 {
            for text in &texts(model, 1000) {
                let want = reference.encode_fast(text.as_str(), false).unwrap();
                assert_eq!(
                    renderer.encode(text, false).unwrap(),
                    want.get_ids(),
                    "{model}: {text:?}"
                );
            }
        }
    }
}
