//! Encode/decode throughput of the protocol codec on a request with a 1,000-token prompt,
//! an output batch of 256 requests and a KV-event batch of 64 stored blocks.
//! `scripts/bench_codec.sh` runs this beside vLLM's msgspec encoder/decoder on the same
//! payloads and prints the ratios.
//!
//! With `CODEC_BENCH_CPU_TIME` set, iterations are timed with the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) instead of wall time: on a shared machine that leaves out
//! the time the thread waits to be scheduled. With `CODEC_BENCH_RUN=case:N` the binary
//! only runs case `case` (e.g. `outputs_256_requests/decode`) N times and exits, for
//! counting instructions under `valgrind --tool=callgrind` (N = 0 gives the set-up
//! cost to subtract). The bench uses only the crate's stable public API, so the same file
//! builds against an older checkout for before/after runs.

use std::time::{Duration, Instant};

use criterion::{Bencher, Criterion, criterion_group};
use std::hint::black_box;
use vllm_client::kv_events::{BlockStored, ExternalBlockHash, KVEventBatch};
use vllm_client::protocol::{
    EngineCoreOutput, EngineCoreOutputs, EngineCoreRequest, SamplingParams,
};
use vllm_client::{decode, encode};

/// The request `scripts/bench_codec.py` builds with vLLM's classes.
pub fn request() -> EngineCoreRequest {
    let mut sp = SamplingParams {
        temperature: 0.7,
        top_p: 0.9,
        max_tokens: Some(256),
        stop: vec!["</s>".into()],
        ..SamplingParams::default()
    };
    sp.set_eos_token_id(151645);
    sp.apply_post_init();
    let prompt = (0..1000u32).map(|i| (i * 7919) % 151000).collect();
    let mut req = EngineCoreRequest::new("bench-request-0000", prompt, sp);
    req.arrival_time = 1764480000.25;
    req
}

/// The output batch `scripts/bench_codec.py` builds with vLLM's classes.
pub fn outputs() -> EngineCoreOutputs {
    EngineCoreOutputs {
        outputs: (0..256u32)
            .map(|i| EngineCoreOutput {
                request_id: format!("req-{i:04}"),
                new_token_ids: vec![(i * 31) % 151000],
                ..Default::default()
            })
            .collect(),
        timestamp: 12345.678,
        ..Default::default()
    }
}

/// A KV-event batch: 64 `BlockStored` events of one 16-token block each, chained.
pub fn kv_batch() -> KVEventBatch {
    KVEventBatch {
        ts: 1764480000.5,
        events: (0..64u64)
            .map(|i| {
                BlockStored {
                    block_hashes: vec![ExternalBlockHash::Int(
                        i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    )],
                    parent_block_hash: (i > 0).then(|| {
                        ExternalBlockHash::Int((i - 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
                    }),
                    token_ids: (0..16).map(|t| (i as u32 * 16 + t) % 151000).collect(),
                    block_size: 16,
                    medium: Some("GPU".into()),
                    ..BlockStored::default()
                }
                .into()
            })
            .collect(),
        data_parallel_rank: Some(0),
    }
}

/// CPU time used by the calling thread so far.
fn thread_cpu_time() -> Duration {
    cpu_time::ThreadTime::try_now().map_or(Duration::ZERO, |t| t.as_duration())
}

/// Times `routine` with wall time, or with thread CPU time when `CODEC_BENCH_CPU_TIME`
/// is set.
fn run<T>(b: &mut Bencher<'_>, mut routine: impl FnMut() -> T) {
    if std::env::var_os("CODEC_BENCH_CPU_TIME").is_none() {
        return b.iter(routine);
    }
    b.iter_custom(|iters| {
        let start = thread_cpu_time();
        let wall = Instant::now();
        for _ in 0..iters {
            black_box(routine());
        }
        // Without a CPU clock, fall back to wall time rather than report zero.
        let cpu = thread_cpu_time().saturating_sub(start);
        if cpu.is_zero() { wall.elapsed() } else { cpu }
    });
}

/// A case: its name, and one run of its operation.
type Case = (&'static str, Box<dyn Fn()>);

/// The cases, by name: each runs one operation once.
fn cases() -> Vec<Case> {
    let req = request();
    let req_bytes = encode(&req).0;
    let out = outputs();
    let out_bytes = encode(&out).0;
    let kv = kv_batch();
    let kv_bytes = encode(&kv).0;
    vec![
        (
            "request_1000_tokens/encode",
            Box::new(move || drop(black_box(encode(black_box(&req))))),
        ),
        (
            "request_1000_tokens/decode",
            Box::new(move || {
                drop(black_box(
                    decode::<EngineCoreRequest>(black_box(&req_bytes), &[]).unwrap(),
                ))
            }),
        ),
        (
            "outputs_256_requests/encode",
            Box::new(move || drop(black_box(encode(black_box(&out))))),
        ),
        (
            "outputs_256_requests/decode",
            Box::new(move || {
                drop(black_box(
                    decode::<EngineCoreOutputs>(black_box(&out_bytes), &[]).unwrap(),
                ))
            }),
        ),
        (
            "kv_events_64_blocks/encode",
            Box::new(move || drop(black_box(encode(black_box(&kv))))),
        ),
        (
            "kv_events_64_blocks/decode",
            Box::new(move || {
                drop(black_box(
                    decode::<KVEventBatch>(black_box(&kv_bytes), &[]).unwrap(),
                ))
            }),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let req = request();
    let req_bytes = encode(&req).0;
    c.bench_function("request_1000_tokens/encode", |b| {
        run(b, || encode(black_box(&req)))
    });
    c.bench_function("request_1000_tokens/decode", |b| {
        run(b, || {
            decode::<EngineCoreRequest>(black_box(&req_bytes), &[]).unwrap()
        })
    });
    let out = outputs();
    let out_bytes = encode(&out).0;
    c.bench_function("outputs_256_requests/encode", |b| {
        run(b, || encode(black_box(&out)))
    });
    c.bench_function("outputs_256_requests/decode", |b| {
        run(b, || {
            decode::<EngineCoreOutputs>(black_box(&out_bytes), &[]).unwrap()
        })
    });
    let kv = kv_batch();
    let kv_bytes = encode(&kv).0;
    c.bench_function("kv_events_64_blocks/encode", |b| {
        run(b, || encode(black_box(&kv)))
    });
    c.bench_function("kv_events_64_blocks/decode", |b| {
        run(b, || {
            decode::<KVEventBatch>(black_box(&kv_bytes), &[]).unwrap()
        })
    });
    if let Ok(dir) = std::env::var("CODEC_BENCH_DUMP") {
        std::fs::write(format!("{dir}/request_1000_tokens.bin"), &req_bytes).unwrap();
        std::fs::write(format!("{dir}/outputs_256_requests.bin"), &out_bytes).unwrap();
        std::fs::write(format!("{dir}/kv_events_64_blocks.bin"), &kv_bytes).unwrap();
    }
}

criterion_group!(benches, bench);

fn main() {
    if let Ok(spec) = std::env::var("CODEC_BENCH_RUN") {
        let (name, n) = spec.rsplit_once(':').expect("CODEC_BENCH_RUN=case:N");
        let n: u64 = n.parse().expect("a count");
        let cases = cases();
        let (_, run) = cases
            .iter()
            .find(|(case, _)| *case == name)
            .expect("a known case");
        for _ in 0..n {
            run();
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
