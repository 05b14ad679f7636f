//! µs per token on the 4,000-token benchmark streams (recorded in the fixtures by
//! `scripts/gen_fixtures.py`): `IncrementalDecoder` vs `tokenizers::DecodeStream` (same
//! crate version), plain, with 8 stop strings, and with top-5 logprob token text; and ours
//! alone on mistral-common's SentencePiece model (streamed by vLLM's slow path).
//!
//! `scripts/bench_compare.py` runs this bench and vLLM's Python detokenizer on the same
//! streams and prints the ratios; see docs/performance.md at the repository root.
//!
//! With `DETOK_BENCH_CPU_TIME` set, iterations are timed with the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`, what Python's `time.thread_time()` reads) instead of wall
//! time: on a loaded machine that leaves out the time the thread waits to be scheduled.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use vllm_detok::{
    DecodeOptions, HfTokenizer, IncrementalDecoder, LogprobText, SentencePieceTokenizer, Tokenizer,
};

/// Stop strings that do not occur in the benchmark text, so the whole stream is decoded.
pub const STOPS: [&str; 8] = [
    "<|user|>",
    "\n\nHuman:",
    "STOP!",
    "Observation:",
    "</answer>",
    "@@@",
    "zzz",
    "END OF INPUT",
];

/// The top-5 alternatives of a position, a fixed function of the sampled id (the Python
/// bench uses the same formula).
fn alternatives(sampled: u32, vocab: u32, out: &mut Vec<u32>) {
    out.clear();
    out.push(sampled);
    for k in 1..=5u32 {
        out.push((sampled.wrapping_mul(31).wrapping_add(7919 * k)) % vocab);
    }
}

/// CPU time used by the calling thread so far.
fn thread_cpu_time() -> Duration {
    cpu_time::ThreadTime::try_now().map_or(Duration::ZERO, |t| t.as_duration())
}

/// Times `routine` with wall time, or with thread CPU time when `DETOK_BENCH_CPU_TIME` is
/// set.
fn run(b: &mut Bencher<'_>, mut routine: impl FnMut() -> usize) {
    if std::env::var_os("DETOK_BENCH_CPU_TIME").is_none() {
        return b.iter(routine);
    }
    b.iter_custom(|iters| {
        let start = thread_cpu_time();
        let wall = Instant::now();
        for _ in 0..iters {
            std::hint::black_box(routine());
        }
        // Without a CPU clock, fall back to wall time rather than report zero.
        let cpu = thread_cpu_time().saturating_sub(start);
        if cpu.is_zero() { wall.elapsed() } else { cpu }
    });
}

struct Stream {
    prompt: Vec<u32>,
    ids: Vec<u32>,
}

fn gunzip(path: &str) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect(path))
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The benchmark stream recorded in `name`'s fixture.
fn stream(name: &str) -> Stream {
    let dir = env!("CARGO_MANIFEST_DIR");
    let fixture: serde_json::Value =
        serde_json::from_slice(&gunzip(&format!("{dir}/tests/fixtures/{name}.json.gz"))).unwrap();
    let ids = |v: &serde_json::Value| {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect::<Vec<_>>()
    };
    Stream {
        prompt: ids(&fixture["bench"]["prompt"]),
        ids: ids(&fixture["bench"]["ids"]),
    }
}

fn load(name: &str) -> (Arc<HfTokenizer>, Stream) {
    let dir = env!("CARGO_MANIFEST_DIR");
    let tokenizer = HfTokenizer::from_bytes(&gunzip(&format!(
        "{dir}/../testdata/models/{name}/tokenizer.json.gz"
    )))
    .unwrap();
    (Arc::new(tokenizer), stream(name))
}

/// One request over the whole stream, one token per push; the delta buffer is reused, as a
/// server serializing each delta would.
fn decode_all(tokenizer: &Arc<dyn Tokenizer>, stream: &Stream, options: &DecodeOptions) -> usize {
    let mut decoder =
        IncrementalDecoder::new(tokenizer.clone(), &stream.prompt, options.clone()).unwrap();
    let mut delta = String::new();
    let mut bytes = 0;
    for &id in &stream.ids {
        delta.clear();
        decoder.push_into(&[id], &mut delta).unwrap();
        bytes += delta.len();
    }
    assert!(!decoder.is_finished());
    bytes
}

/// Our decoder on `stream`: plain, with 8 stop strings, and with top-5 logprob token text.
fn bench_ours(
    group: &mut BenchmarkGroup<'_, WallTime>,
    tokenizer: &Arc<dyn Tokenizer>,
    stream: &Stream,
) {
    let plain = DecodeOptions::default();
    group.bench_function("ours", |b| run(b, || decode_all(tokenizer, stream, &plain)));

    let stops = DecodeOptions {
        stop: STOPS.iter().map(|s| s.to_string()).collect(),
        ..DecodeOptions::default()
    };
    group.bench_function("ours_8_stops", |b| {
        run(b, || decode_all(tokenizer, stream, &stops))
    });

    let vocab = tokenizer.vocab_size() as u32;
    tokenizer.token_texts(); // built once per tokenizer, not per request
    group.bench_function("ours_top5_logprobs", |b| {
        run(b, || {
            let mut decoder =
                IncrementalDecoder::new(tokenizer.clone(), &stream.prompt, plain.clone()).unwrap();
            let mut logprobs = LogprobText::new(tokenizer.clone());
            let mut ids = Vec::with_capacity(6);
            let mut delta = String::new();
            let mut bytes = 0;
            for &id in &stream.ids {
                delta.clear();
                decoder.push_into(&[id], &mut delta).unwrap();
                alternatives(id, vocab, &mut ids);
                let texts = logprobs.position(&ids).unwrap();
                bytes += delta.len() + texts.iter().map(|t| t.len()).sum::<usize>();
            }
            bytes
        })
    });
}

fn bench(c: &mut Criterion) {
    for name in ["qwen3", "llama3"] {
        let (hf, stream) = load(name);
        let tokenizer: Arc<dyn Tokenizer> = hf.clone();
        let mut group = c.benchmark_group(format!("detok/{name}"));
        group.throughput(Throughput::Elements(stream.ids.len() as u64));
        group.sample_size(20);
        bench_ours(&mut group, &tokenizer, &stream);

        let inner = hf.inner();
        group.bench_function("decode_stream", |b| {
            run(b, || {
                let mut ds = inner.decode_stream(true);
                let mut bytes = 0;
                for &id in &stream.prompt {
                    ds.step(id).unwrap();
                }
                for &id in &stream.ids {
                    bytes += ds.step(id).unwrap().map_or(0, |s| s.len());
                }
                bytes
            })
        });
        group.finish();
    }

    // mistral-common's SentencePiece model: vLLM's slow path, no `DecodeStream` counterpart.
    let name = "mistral_spm_v7";
    let model = gunzip(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/models/mistral_spm_v7/tokenizer.model.v7.gz"
    ));
    let tokenizer: Arc<dyn Tokenizer> =
        Arc::new(SentencePieceTokenizer::from_bytes(&model).unwrap());
    let stream = stream(name);
    let mut group = c.benchmark_group(format!("detok/{name}"));
    group.throughput(Throughput::Elements(stream.ids.len() as u64));
    group.sample_size(20);
    bench_ours(&mut group, &tokenizer, &stream);
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
