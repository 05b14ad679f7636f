//! What a `/metrics` scrape costs `serve` itself (issue 13: ≤ 1 ms with 2,000 open
//! streams): the Prometheus exposition of vLLM's families, encoded from a registry fed
//! as ten minutes of 2,000 streams at 20 tokens/s feed it — every series those streams
//! create, histograms with every bucket filled. The exposition's size depends on the
//! series, not on the number of streams (no per-request labels), so this is the
//! server-side cost of a scrape at any load; the HTTP round trip and the effect on
//! streaming are measured by `examples/scripts/bench_metrics.py`.
//!
//! `cargo bench -p vllm-examples --bench metrics`

use criterion::{Criterion, criterion_group, criterion_main};
use vllm_client::EngineInfo;
use vllm_client::client::stats::{
    FinishedRequestStats, IterationStats, PromptTokens, StatsObserver,
};
use vllm_client::protocol::{FinishReason, SchedulerStats};
use vllm_examples::serve::metrics::Metrics;

const STREAMS: u64 = 2_000;

fn fed() -> Metrics {
    let metrics = Metrics::new("qwen3").expect("metric families");
    metrics.init_engines(&[EngineInfo {
        rank: 0,
        ready: Default::default(),
    }]);
    let reasons = [
        FinishReason::Stop,
        FinishReason::Length,
        FinishReason::Abort,
    ];
    for second in 0..600u64 {
        metrics.scheduler(
            0,
            &SchedulerStats {
                num_running_reqs: STREAMS as i64,
                num_waiting_reqs: 3,
                kv_cache_usage: 0.4 + (second % 10) as f64 * 0.05,
                ..Default::default()
            },
        );
        let finished = (0..20)
            .map(|i| FinishedRequestStats {
                finish_reason: reasons[i % reasons.len()],
                e2e_latency: 1.0 + i as f64,
                num_prompt_tokens: 100 + i as u64 * 300,
                num_generation_tokens: 2_000,
                num_preemptions: 0,
                max_tokens_param: Some(2_000),
                n_param: 1,
                queued_time: 0.001 * i as f64,
                prefill_time: 0.01,
                decode_time: 100.0,
                inference_time: 100.01,
                mean_time_per_output_token: 0.05,
                num_cached_tokens: 64,
            })
            .collect();
        metrics.iteration(
            0,
            &IterationStats {
                num_generation_tokens: STREAMS * 20,
                prompt_tokens: PromptTokens {
                    total: 20 * 500,
                    computed: 20 * 400,
                    cached: 20 * 100,
                    local_cache_hit: 20 * 100,
                    external_kv_transfer: 0,
                },
                num_preempted_reqs: 0,
                time_to_first_tokens: (0..20).map(|i| 0.01 * f64::from(i)).collect(),
                inter_token_latencies: (0..STREAMS * 20)
                    .map(|i| 0.045 + (i % 11) as f64 * 0.001)
                    .collect(),
                finished,
            },
        );
        metrics
            .http
            .observe("POST", 200, "/v1/chat/completions", 100.0);
    }
    metrics
}

fn scrape(c: &mut Criterion) {
    let metrics = fed();
    let text = metrics.encode().expect("exposition");
    eprintln!(
        "exposition: {} bytes, {} lines",
        text.len(),
        text.lines().count()
    );
    c.bench_function("metrics/encode_2000_streams", |b| {
        b.iter(|| metrics.encode().expect("exposition"))
    });
}

criterion_group!(benches, scrape);
criterion_main!(benches);
