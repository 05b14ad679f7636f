//! Request and iteration statistics, computed as vLLM's frontend computes them
//! (`vllm/v1/metrics/stats.py`: `IterationStats`, `RequestStateStats`,
//! `FinishedRequestStats`), for a metrics exporter.
//!
//! They are computed where every engine message is seen whole, before token outputs of
//! a busy consumer are merged: in the client's output task. A [`StatsObserver`] given
//! in [`crate::ClientConfig::with_stats`] receives one [`IterationStats`] per engine
//! message that had request outputs, and every engine's [`SchedulerStats`]; without an
//! observer nothing is computed.
//!
//! Clocks, as in vLLM: time to first token and end-to-end latency run from the
//! request's `arrival_time` (wall clock) to when the frontend read the output; queue,
//! prefill, decode and inference times and inter-token latencies come from the engine's
//! own timestamps (its events and the `timestamp` of its messages).

use crate::protocol::{
    EngineCoreEventType, EngineCoreOutput, EngineCoreRequest, FinishReason, PrefillStats,
    SchedulerStats,
};

/// Receives the statistics of the client's engines (called from the output task: keep
/// it short, e.g. add to atomic counters).
pub trait StatsObserver: Send + Sync {
    /// One engine message's request statistics (`engine`: its data-parallel rank).
    fn iteration(&self, engine: i64, stats: &IterationStats);

    /// An engine's scheduler statistics, as it reported them.
    fn scheduler(&self, engine: i64, stats: &SchedulerStats) {
        let _ = (engine, stats);
    }
}

/// Prompt tokens of the prefills in an iteration, by where they came from
/// (`PromptTokenStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptTokens {
    /// Prompt tokens in all.
    pub total: u64,
    /// Computed by the model.
    pub computed: u64,
    /// Served from a prefix cache (local or external).
    pub cached: u64,
    /// Served from the engine's own prefix cache.
    pub local_cache_hit: u64,
    /// Transferred by a KV connector.
    pub external_kv_transfer: u64,
}

/// The request statistics of one engine message (`IterationStats`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IterationStats {
    /// Output tokens generated.
    pub num_generation_tokens: u64,
    /// Prompt tokens of the requests that had their first output.
    pub prompt_tokens: PromptTokens,
    /// Requests preempted.
    pub num_preempted_reqs: u64,
    /// Time to first token of the requests that had their first output (seconds).
    pub time_to_first_tokens: Vec<f64>,
    /// Inter-token latencies of the requests that were already decoding (seconds).
    pub inter_token_latencies: Vec<f64>,
    /// The requests that finished.
    pub finished: Vec<FinishedRequestStats>,
}

impl IterationStats {
    /// Whether there is anything to report.
    pub fn is_empty(&self) -> bool {
        self.num_generation_tokens == 0
            && self.prompt_tokens.total == 0
            && self.num_preempted_reqs == 0
            && self.finished.is_empty()
    }
}

/// A finished request's statistics (`FinishedRequestStats`).
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedRequestStats {
    /// Why it finished.
    pub finish_reason: FinishReason,
    /// From arrival to the last output (seconds).
    pub e2e_latency: f64,
    /// Prompt tokens.
    pub num_prompt_tokens: u64,
    /// Output tokens.
    pub num_generation_tokens: u64,
    /// Times it was preempted.
    pub num_preemptions: u64,
    /// The request's `max_tokens`.
    pub max_tokens_param: Option<i64>,
    /// The request's `n`.
    pub n_param: i64,
    /// From queued to first scheduled (engine clock).
    pub queued_time: f64,
    /// From first scheduled to the first token.
    pub prefill_time: f64,
    /// From the first token to the last.
    pub decode_time: f64,
    /// From first scheduled to the last token.
    pub inference_time: f64,
    /// Decode time per output token after the first.
    pub mean_time_per_output_token: f64,
    /// Prompt tokens served from a prefix cache.
    pub num_cached_tokens: u64,
}

/// What the client tracks of one request (`RequestStateStats`).
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestStats {
    arrival_time: f64,
    num_prompt_tokens: u64,
    max_tokens_param: Option<i64>,
    n_param: i64,
    queued_ts: f64,
    scheduled_ts: f64,
    first_token_ts: f64,
    last_token_ts: f64,
    num_generation_tokens: u64,
    num_preemptions: u64,
    num_cached_tokens: u64,
    prefilling: bool,
}

/// Wall-clock seconds since the Unix epoch (Python's `time.time()`).
pub(crate) fn wall_clock() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl RequestStats {
    pub(crate) fn new(request: &EngineCoreRequest) -> Self {
        let params = request.sampling_params.as_ref();
        Self {
            arrival_time: request.arrival_time,
            num_prompt_tokens: request
                .prompt_token_ids
                .as_ref()
                .map_or(0, |p| p.len() as u64),
            max_tokens_param: params.and_then(|p| p.max_tokens),
            n_param: params.map_or(1, |p| p.n),
            prefilling: true,
            ..Self::default()
        }
    }

    /// Accounts one output: `tokens` new tokens, the full output's events and prefill
    /// statistics when it carried more than tokens, `engine_ts` the message's engine
    /// timestamp, `now` the frontend's wall clock.
    pub(crate) fn update(
        &mut self,
        iteration: &mut IterationStats,
        tokens: usize,
        full: Option<&EngineCoreOutput>,
        finish_reason: Option<FinishReason>,
        engine_ts: f64,
        now: f64,
    ) {
        let tokens = tokens as u64;
        iteration.num_generation_tokens += tokens;
        if self.prefilling {
            if let Some(prefill) = full.and_then(|o| o.prefill_stats.as_deref()) {
                add_prefill(&mut iteration.prompt_tokens, prefill);
                self.num_cached_tokens = count(prefill.num_cached_tokens);
            }
            iteration.time_to_first_tokens.push(now - self.arrival_time);
        }
        self.num_generation_tokens += tokens;
        if let Some(output) = full {
            for event in output.events.iter().flatten() {
                match event.event_type {
                    EngineCoreEventType::Queued => self.queued_ts = event.timestamp,
                    EngineCoreEventType::Scheduled => {
                        if self.scheduled_ts == 0.0 {
                            self.scheduled_ts = event.timestamp;
                        }
                    }
                    EngineCoreEventType::Preempted => {
                        iteration.num_preempted_reqs += 1;
                        self.num_preemptions += 1;
                    }
                }
            }
        }
        if self.prefilling {
            self.first_token_ts = engine_ts;
            self.prefilling = false;
        } else {
            iteration
                .inter_token_latencies
                .push(engine_ts - self.last_token_ts);
        }
        self.last_token_ts = engine_ts;
        if let Some(reason) = finish_reason {
            iteration.finished.push(self.finished(reason, now));
        }
    }

    fn finished(&self, finish_reason: FinishReason, now: f64) -> FinishedRequestStats {
        let decode_time = self.last_token_ts - self.first_token_ts;
        FinishedRequestStats {
            finish_reason,
            e2e_latency: now - self.arrival_time,
            num_prompt_tokens: self.num_prompt_tokens,
            num_generation_tokens: self.num_generation_tokens,
            num_preemptions: self.num_preemptions,
            max_tokens_param: self.max_tokens_param,
            n_param: self.n_param,
            queued_time: self.scheduled_ts - self.queued_ts,
            prefill_time: self.first_token_ts - self.scheduled_ts,
            decode_time,
            inference_time: self.last_token_ts - self.scheduled_ts,
            mean_time_per_output_token: if self.num_generation_tokens > 1 {
                decode_time / (self.num_generation_tokens - 1) as f64
            } else {
                0.0
            },
            num_cached_tokens: self.num_cached_tokens,
        }
    }
}

fn add_prefill(tokens: &mut PromptTokens, prefill: &PrefillStats) {
    tokens.total += count(prefill.num_prompt_tokens);
    tokens.computed += count(prefill.num_computed_tokens);
    tokens.cached += count(prefill.num_cached_tokens);
    tokens.local_cache_hit += count(prefill.num_local_cached_tokens);
    tokens.external_kv_transfer += count(prefill.num_external_cached_tokens);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EngineCoreEvent, SamplingParams};

    #[test]
    fn intervals_follow_vllms_definitions() {
        let mut request = EngineCoreRequest::new(
            "r",
            vec![1, 2, 3],
            SamplingParams {
                max_tokens: Some(3),
                ..SamplingParams::default()
            },
        );
        request.arrival_time = 100.0;
        let mut stats = RequestStats::new(&request);
        let mut it = IterationStats::default();
        let first = EngineCoreOutput {
            events: Some(vec![
                EngineCoreEvent {
                    event_type: EngineCoreEventType::Queued,
                    timestamp: 10.0,
                },
                EngineCoreEvent {
                    event_type: EngineCoreEventType::Scheduled,
                    timestamp: 10.5,
                },
            ]),
            prefill_stats: Some(Box::new(PrefillStats {
                num_prompt_tokens: 3,
                num_computed_tokens: 3,
                ..PrefillStats::default()
            })),
            ..EngineCoreOutput::default()
        };
        stats.update(&mut it, 1, Some(&first), None, 11.0, 100.25);
        assert_eq!(it.time_to_first_tokens, vec![0.25]);
        assert_eq!(it.prompt_tokens.total, 3);
        stats.update(&mut it, 2, None, Some(FinishReason::Length), 11.5, 100.75);
        assert_eq!(it.inter_token_latencies, vec![0.5]);
        let done = &it.finished[0];
        assert_eq!(done.num_generation_tokens, 3);
        assert_eq!(done.e2e_latency, 0.75);
        assert_eq!(done.queued_time, 0.5);
        assert_eq!(done.prefill_time, 0.5);
        assert_eq!(done.decode_time, 0.5);
        assert_eq!(done.inference_time, 1.0);
        assert_eq!(done.mean_time_per_output_token, 0.25);
        assert_eq!(done.max_tokens_param, Some(3));
    }
}
