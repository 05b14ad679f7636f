//! Shared test helpers: the vendored tokenizers and the golden fixtures.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use vllm_detok::{
    DecodeTable, HfTokenizer, SentencePieceTokenizer, TekkenTokenizer, TokenTexts, Tokenizer,
};

/// The tokenizers vendored in `testdata/models` that the fixtures cover.
pub const MODELS: &[&str] = &[
    "qwen3",
    "llama3",
    "llama3_1",
    "deepseek_v3",
    "gemma3",
    "gptoss",
];

fn gunzip(path: &str) -> Vec<u8> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// One lazily loaded tokenizer per model name.
type Slot = Arc<OnceLock<Arc<HfTokenizer>>>;

/// The vendored tokenizer `name`, loaded once per test binary.
pub fn tokenizer(name: &str) -> Arc<HfTokenizer> {
    static CACHE: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let slot = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(name.to_string())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let path = format!(
            "{}/../testdata/models/{name}/tokenizer.json.gz",
            env!("CARGO_MANIFEST_DIR")
        );
        Arc::new(HfTokenizer::from_bytes(&gunzip(&path)).unwrap())
    })
    .clone()
}

/// The same tokenizer without its decode table, so that decoding takes the window path
/// through `tokenizers`' own `decode` (as any tokenizer without a table does). Counts the
/// ids it decodes.
pub struct WithoutTable {
    inner: Arc<HfTokenizer>,
    texts: OnceLock<TokenTexts>,
    decoded_ids: AtomicUsize,
}

impl WithoutTable {
    pub fn new(inner: Arc<HfTokenizer>) -> Self {
        Self {
            inner,
            texts: OnceLock::new(),
            decoded_ids: AtomicUsize::new(0),
        }
    }

    /// The total number of ids passed to `decode` so far.
    pub fn decoded_ids(&self) -> usize {
        self.decoded_ids.load(Ordering::Relaxed)
    }
}

impl Tokenizer for WithoutTable {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> vllm_detok::Result<String> {
        self.decoded_ids.fetch_add(ids.len(), Ordering::Relaxed);
        self.inner.decode(ids, skip_special_tokens)
    }
    fn decode_table(&self) -> Option<&Arc<DecodeTable>> {
        None
    }
    fn added_token(&self, id: u32) -> Option<&str> {
        self.inner.added_token(id)
    }
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
    fn token_piece(&self, id: u32) -> Option<String> {
        self.inner.token_piece(id)
    }
    fn leading_space_marker(&self) -> Option<char> {
        self.inner.leading_space_marker()
    }
    fn token_texts(&self) -> &TokenTexts {
        self.texts.get_or_init(|| TokenTexts::build(self))
    }
}

/// The vendored Mistral tekken tokenizer (`mistral_tekken`), loaded once per test binary.
pub fn tekken() -> Arc<TekkenTokenizer> {
    static TEKKEN: OnceLock<Arc<TekkenTokenizer>> = OnceLock::new();
    TEKKEN
        .get_or_init(|| {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../testdata/models/mistral_tekken/tekken.json.gz"
            );
            Arc::new(TekkenTokenizer::from_bytes(&gunzip(path)).unwrap())
        })
        .clone()
}

/// The vendored mistral-common SentencePiece model (`mistral_spm_v7`), loaded once per test
/// binary.
pub fn sentencepiece() -> Arc<SentencePieceTokenizer> {
    static SPM: OnceLock<Arc<SentencePieceTokenizer>> = OnceLock::new();
    SPM.get_or_init(|| {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/models/mistral_spm_v7/tokenizer.model.v7.gz"
        );
        Arc::new(SentencePieceTokenizer::from_bytes(&gunzip(path)).unwrap())
    })
    .clone()
}

pub fn fixture(name: &str) -> Fixture {
    let path = format!(
        "{}/tests/fixtures/{name}.json.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_slice(&gunzip(&path)).unwrap()
}

#[derive(Deserialize)]
pub struct Fixture {
    pub model: String,
    pub cases: Vec<Case>,
    pub logprobs: Vec<LogprobPosition>,
    pub bench: BenchStream,
    /// Whole-sequence `decode` results (Mistral tokenizers only).
    #[serde(default)]
    pub decodes: Vec<WholeDecode>,
}

#[derive(Deserialize)]
pub struct WholeDecode {
    pub ids: Vec<u32>,
    pub skip_special_tokens: bool,
    pub text: String,
}

#[derive(Deserialize)]
pub struct Case {
    pub prompt: Vec<u32>,
    pub options: Options,
    pub finish: String,
    pub leak: bool,
    pub steps: Vec<Step>,
}

#[derive(Deserialize)]
pub struct Options {
    pub skip_special_tokens: bool,
    pub spaces_between_special_tokens: bool,
    pub include_stop_str_in_output: bool,
    pub min_tokens: usize,
    pub stop: Vec<String>,
}

#[derive(Deserialize)]
pub struct Step {
    pub ids: Vec<u32>,
    pub finish: Option<String>,
    pub text: String,
    pub stop: Option<String>,
    pub kept: usize,
}

#[derive(Deserialize)]
pub struct LogprobPosition {
    pub ids: Vec<u32>,
    pub tokens: Vec<String>,
}

#[derive(Deserialize)]
pub struct BenchStream {
    pub prompt: Vec<u32>,
    pub ids: Vec<u32>,
}
