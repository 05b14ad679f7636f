//! Renders per second of the native renderers (`vllm_chat::mistral` on the vendored
//! tekken v3 vocabulary, `vllm_chat::harmony`) for the scenarios of
//! `benches/mistral_harmony_scenarios.json`: `mistral/<scenario>` and `harmony/<scenario>`, a
//! parsed request to its prompt ids with the renderer's cache of encoded pieces warm
//! (a chat's repeated history and tools), and `*-cold/<scenario>` with it emptied
//! before every render. `scripts/bench_mistral_harmony.sh` runs this next to
//! `scripts/bench_mistral_harmony_python.py` (vLLM's own Mistral and Harmony paths on the same
//! requests) and prints the ratios (docs/performance.md, "Mistral and Harmony renderers").

use std::io::Read;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;
use vllm_chat::harmony::{HarmonyOptions, HarmonyRenderer};
use vllm_chat::mistral::{MistralOptions, MistralRenderer};
use vllm_chat::openai::ChatCompletionRequest;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn tekken() -> Vec<u8> {
    let path = root().join("../testdata/models/mistral_tekken/tekken.json.gz");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("vendored tekken.json.gz"))
        .read_to_end(&mut out)
        .expect("gunzip");
    out
}

fn scenarios() -> Vec<(String, ChatCompletionRequest)> {
    let text = std::fs::read_to_string(root().join("benches/mistral_harmony_scenarios.json"))
        .expect("scenarios");
    let json: serde_json::Map<String, Value> = serde_json::from_str(&text).expect("json");
    json.into_iter()
        .map(|(name, body)| (name, serde_json::from_value(body).expect("request")))
        .collect()
}

fn bench(c: &mut Criterion) {
    let mistral =
        MistralRenderer::from_tekken_bytes(&tekken(), MistralOptions::default()).expect("tekken");
    let harmony = HarmonyRenderer::new(HarmonyOptions {
        start_date: Some("2025-06-28".into()),
        ..HarmonyOptions::default()
    })
    .expect("harmony");
    for (name, request) in scenarios() {
        mistral
            .render(&request)
            .expect("mistral renders the scenario");
        harmony
            .render(&request)
            .expect("harmony renders the scenario");
        // Steady state: the pieces a chat repeats (history, tools) come from the cache.
        c.bench_function(&format!("mistral/{name}"), |b| {
            b.iter(|| mistral.render(&request))
        });
        c.bench_function(&format!("harmony/{name}"), |b| {
            b.iter(|| harmony.render(&request))
        });
        // Cold: every piece encoded.
        c.bench_function(&format!("mistral-cold/{name}"), |b| {
            b.iter(|| {
                mistral.clear_cache();
                mistral.render(&request)
            })
        });
        c.bench_function(&format!("harmony-cold/{name}"), |b| {
            b.iter(|| {
                harmony.clear_cache();
                harmony.render(&request)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
