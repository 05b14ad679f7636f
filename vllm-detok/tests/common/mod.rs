//! Shared test helpers: the vendored tokenizers and the golden fixtures.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use vllm_detok::HfTokenizer;

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
