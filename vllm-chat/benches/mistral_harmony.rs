//! Renders per second of the native renderers (`vllm_chat::mistral` on the vendored
//! tekken v3 vocabulary, `vllm_chat::harmony`) for the scenarios of
//! `benches/mistral_harmony_scenarios.json`: `mistral/<scenario>` and `harmony/<scenario>`, a
//! parsed request to its prompt ids with the renderer's cache of encoded pieces warm
//! (a chat's repeated history and tools), and `*-cold/<scenario>` with it emptied
//! before every render. `scripts/bench_mistral_harmony.sh` runs this next to
//! `scripts/bench_mistral_harmony_python.py` (vLLM's own Mistral and Harmony paths on the same
//! requests) and prints the ratios (docs/performance.md, "Mistral and Harmony renderers").
//! With `BENCH_CPU_TIME` set, renders are timed with the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`, what the Python side's `time.thread_time()` reads), so a
//! loaded machine's scheduling waits are left out of both sides.

use std::io::Read;
use std::path::Path;

use std::time::{Duration, Instant};

use criterion::{Bencher, Criterion, criterion_group, criterion_main};
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

/// CPU time used by the calling thread so far.
fn thread_cpu_time() -> Duration {
    cpu_time::ThreadTime::try_now().map_or(Duration::ZERO, |t| t.as_duration())
}

/// Times `render` with wall time, or with thread CPU time when `BENCH_CPU_TIME` is set.
fn run<T>(b: &mut Bencher<'_>, mut render: impl FnMut() -> T) {
    if std::env::var_os("BENCH_CPU_TIME").is_none() {
        return b.iter(render);
    }
    b.iter_custom(|iters| {
        let (cpu, wall) = (thread_cpu_time(), Instant::now());
        for _ in 0..iters {
            std::hint::black_box(render());
        }
        match thread_cpu_time().saturating_sub(cpu) {
            // No CPU clock: wall time rather than zero.
            Duration::ZERO => wall.elapsed(),
            spent => spent,
        }
    });
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
            run(b, || mistral.render_token_ids(&request))
        });
        c.bench_function(&format!("harmony/{name}"), |b| {
            run(b, || harmony.render_token_ids(&request))
        });
        // Cold: every piece encoded.
        c.bench_function(&format!("mistral-cold/{name}"), |b| {
            run(b, || {
                mistral.clear_cache();
                mistral.render_token_ids(&request)
            })
        });
        c.bench_function(&format!("harmony-cold/{name}"), |b| {
            run(b, || {
                harmony.clear_cache();
                harmony.render_token_ids(&request)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
