//! Encode/decode throughput of the protocol codec on a request with a 1,000-token prompt
//! and an output batch of 256 requests. `scripts/bench_codec.sh` runs this beside vLLM's
//! msgspec encoder/decoder on the same payloads and prints the ratios.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
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

fn bench(c: &mut Criterion) {
    let req = request();
    let req_bytes = encode(&req).0;
    c.bench_function("request_1000_tokens/encode", |b| {
        b.iter(|| encode(black_box(&req)))
    });
    c.bench_function("request_1000_tokens/decode", |b| {
        b.iter(|| decode::<EngineCoreRequest>(black_box(&req_bytes), &[]).unwrap())
    });
    let out = outputs();
    let out_bytes = encode(&out).0;
    c.bench_function("outputs_256_requests/encode", |b| {
        b.iter(|| encode(black_box(&out)))
    });
    c.bench_function("outputs_256_requests/decode", |b| {
        b.iter(|| decode::<EngineCoreOutputs>(black_box(&out_bytes), &[]).unwrap())
    });
    if let Ok(dir) = std::env::var("CODEC_BENCH_DUMP") {
        std::fs::write(format!("{dir}/request_1000_tokens.bin"), &req_bytes).unwrap();
        std::fs::write(format!("{dir}/outputs_256_requests.bin"), &out_bytes).unwrap();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
