//! Renders per second for the scenarios of `benches/scenarios.json` (Qwen3 with
//! tools, Llama 3.1 with tools, DeepSeek-V3 multi-turn, gpt-oss with tools): template only (`text`, what
//! transformers' `apply_chat_template(tokenize=False)` does) and template + tokenizer
//! (`tokens`), and the template on minijinja's interpreter alone (`text-interpreter`,
//! the compiled fast path off). `scripts/bench_compare.sh` runs this next to
//! `scripts/bench_transformers.py` and prints the ratios.
//!
//! With `VLLM_CHAT_LONG_PROMPTS=DIR` (as `scripts/bench_long_prompt.sh` sets it), also
//! `long/{render,tokenize,tokenize-1thread}/<size>`: the Qwen3 renderer on
//! `DIR/<size>.txt`, one user message — `render` (template + tokens, the library
//! call behind `/v1/chat/completions/render`), `tokenize` (`encode(text, true)`, the
//! call behind `/tokenize`), and the same on one thread.

use std::io::Read;
use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::Value;
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::{ChatRenderer, ModelFiles, RendererOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// testdata/models/<name> with tokenizer.json unpacked, in a temp dir.
fn model_dir(name: &str) -> PathBuf {
    let src = root().join("../testdata/models").join(name);
    let dst = std::env::temp_dir().join(format!("vllm-chat-bench-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dst).expect("temp dir");
    for entry in std::fs::read_dir(&src).expect("testdata model") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .expect("name")
            .to_owned();
        match file.strip_suffix(".gz") {
            Some(stem) => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("open"))
                    .read_to_end(&mut out)
                    .expect("gunzip");
                std::fs::write(dst.join(stem), out).expect("write");
            }
            None => {
                std::fs::copy(&path, dst.join(&file)).expect("copy");
            }
        }
    }
    dst
}

fn bench(c: &mut Criterion) {
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(root().join(p)).expect(p)).expect(p)
    };
    let scenarios = read("benches/scenarios.json");
    let cases = read("tests/fixtures/cases.json");
    for (name, scenario) in scenarios.as_object().expect("scenarios") {
        if name.starts_with('_') {
            continue;
        }
        let dir = model_dir(scenario["model"].as_str().expect("model"));
        let renderer = ChatRenderer::from_dir(&dir).expect("renderer");
        let files = ModelFiles::from_dir(&dir).expect("model files");
        let interpreter = ChatRenderer::new(
            files,
            RendererOptions {
                interpreter_only: true,
                ..Default::default()
            },
        )
        .expect("renderer");
        let _ = std::fs::remove_dir_all(&dir);
        let request: ChatCompletionRequest =
            serde_json::from_value(cases[scenario["case"].as_str().expect("case")].clone())
                .expect("request");
        c.bench_function(&format!("{name}/text"), |b| {
            b.iter(|| renderer.render_text(&request).expect("render"))
        });
        c.bench_function(&format!("{name}/tokens"), |b| {
            b.iter(|| renderer.render(&request).expect("render"))
        });
        // The same template on minijinja's interpreter alone (no compiled fast path).
        c.bench_function(&format!("{name}/text-interpreter"), |b| {
            b.iter(|| interpreter.render_text(&request).expect("render"))
        });
    }
}

/// The long-prompt group (see the crate docs above); skipped without the env var.
fn bench_long(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("VLLM_CHAT_LONG_PROMPTS") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let model = model_dir("qwen3");
    let renderer = ChatRenderer::from_dir(&model).expect("renderer");
    let files = ModelFiles::from_dir(&model).expect("model files");
    let tokenizer = renderer.tokenizer().expect("tokenizer").clone();
    let _ = std::fs::remove_dir_all(&model);
    drop(files);
    let one_thread = vllm_chat::tokenizer::SegmentEncoder::new(&tokenizer)
        .with_parallelism(vllm_chat::tokenizer::ParallelEncoding::sequential());
    let mut group = c.benchmark_group("long");
    group.sample_size(20);
    for size in ["1k", "32k", "300k"] {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{size}.txt"))) else {
            continue;
        };
        // A fresh first line per iteration: the segment cache must not answer.
        let mut n = 0u64;
        let mut fresh = move || {
            n += 1;
            format!("request {n}\n{text}")
        };
        group.bench_function(format!("render/{size}"), |b| {
            b.iter_batched(
                || {
                    serde_json::from_value::<ChatCompletionRequest>(serde_json::json!({
                        "model": "m",
                        "messages": [{"role": "user", "content": fresh()}],
                    }))
                    .expect("request")
                },
                |request| renderer.render(&request).expect("render"),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("tokenize/{size}"), |b| {
            b.iter_batched(
                &mut fresh,
                |text| renderer.encode(&text, true).expect("encode"),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(format!("tokenize-1thread/{size}"), |b| {
            b.iter_batched(
                &mut fresh,
                |text| {
                    one_thread
                        .encode_with(&tokenizer, &text, true)
                        .expect("encode")
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench, bench_long);
criterion_main!(benches);
