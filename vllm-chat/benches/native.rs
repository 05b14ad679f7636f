//! Rendering cost of vLLM's native renderers (`--tokenizer-mode`): every case of
//! `tests/fixtures/native.json.gz` that vLLM renders, parsed and rendered to token
//! ids by `ChatRenderer::render`, per mode. Prints one JSON object
//! (`{mode: microseconds per request}`) for `scripts/bench_native.sh`, which times
//! vLLM's Python renderers on the same cases in the same run.

use std::str::FromStr;
use std::time::Instant;

use serde_json::{Map, Value};
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::{ChatRenderer, RendererOptions, TokenizerMode};

#[path = "../tests/common/mod.rs"]
#[allow(dead_code)]
mod common;

fn main() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/native.json.gz");
    let fixtures: Value = serde_json::from_slice(&common::gunzip(&path)).expect("native.json.gz");
    let rounds: usize = std::env::var("NATIVE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let mut out = Map::new();
    for (mode, data) in fixtures["modes"].as_object().expect("modes") {
        let model = data["model"].as_str().expect("model");
        let dir = common::ModelDir::new(model).expect("vendored model");
        let mode_value = TokenizerMode::from_str(mode).expect("mode");
        let renderer =
            ChatRenderer::from_dir_with_mode(&dir.0, mode_value, RendererOptions::default())
                .expect("renderer");
        let bodies: Vec<String> = data["cases"]
            .as_object()
            .expect("cases")
            .values()
            .filter(|c| c.get("error").is_none())
            .map(|c| c["request"].to_string())
            .collect();
        let run = || {
            let mut tokens = 0;
            for body in &bodies {
                let request: ChatCompletionRequest = serde_json::from_str(body).expect("request");
                tokens += renderer.render(&request).expect("render").token_ids.len();
            }
            tokens
        };
        run();
        let start = Instant::now();
        let mut tokens = 0;
        for _ in 0..rounds {
            tokens += run();
        }
        let per_request = start.elapsed().as_secs_f64() * 1e6 / (rounds * bodies.len()) as f64;
        assert!(tokens > 0);
        out.insert(mode.clone(), Value::from(per_request));
    }
    println!("{}", Value::Object(out));
}
