//! `GET /metrics`: Prometheus (OpenMetrics) exposition with vLLM's metric names, types,
//! labels and buckets, through the `prometheus-client` crate.
//!
//! The families are vllm-rs 0.33.0's ([`families`]); they are fed from the statistics
//! `vllm-client` computes as vLLM's frontend does (`vllm_client::client::stats`): the
//! engines' scheduler statistics (running / waiting requests, KV cache usage, prefix
//! cache queries and hits) and the requests' iteration statistics (tokens, time to
//! first token, inter-token latency, end-to-end / queue / prefill / decode / inference
//! times, finish reasons), mapped as vLLM's `PrometheusStatLogger.record` maps them.
//! The HTTP instrumentation is fed by a middleware ([`http`]). Families vLLM fills from
//! parts the frontend does not see here (speculative decoding, KV connectors, …) are
//! declared with the same names and stay at their idle values.

pub mod families;
pub mod http;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::{Context, Result, bail};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use vllm_client::client::stats::{IterationStats, StatsObserver};
use vllm_client::protocol::SchedulerStats;
use vllm_client::{EngineInfo, Value};

use families::{FamilySpec, Kind, MODEL_PLACEHOLDER};

type Labels = families::LabelSet;

/// Builds histograms with a family's buckets.
#[derive(Clone)]
struct Buckets(Arc<[f64]>);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

type Counters = Family<Labels, Counter>;
type IntGauges = Family<Labels, Gauge>;
type FloatGauges = Family<Labels, Gauge<f64, AtomicU64>>;
type Histograms = Family<Labels, Histogram, Buckets>;

/// A registered family.
#[derive(Clone)]
enum Handle {
    Counter(Counters),
    IntGauge(IntGauges),
    FloatGauge(FloatGauges),
    Histogram(Histograms),
}

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The families this server feeds.
struct Fed {
    running: IntGauges,
    waiting: IntGauges,
    waiting_by_reason: IntGauges,
    kv_cache_usage: FloatGauges,
    prefix_cache_queries: Counters,
    prefix_cache_hits: Counters,
    cached_by_source: Counters,
    preemptions: Counters,
    prompt_tokens: Counters,
    prompt_tokens_by_source: Counters,
    prompt_tokens_cached: Counters,
    generation_tokens: Counters,
    corrupted_requests: Counters,
    iteration_tokens: Histograms,
    request_success: Counters,
    time_to_first_token: Histograms,
    inter_token_latency: Histograms,
    e2e_latency: Histograms,
    queue_time: Histograms,
    prefill_time: Histograms,
    decode_time: Histograms,
    inference_time: Histograms,
    time_per_output_token: Histograms,
    request_prompt_tokens: Histograms,
    request_generation_tokens: Histograms,
    request_max_generation_tokens: Histograms,
    request_max_tokens: Histograms,
    request_n: Histograms,
    request_preemptions: Histograms,
    request_prefill_kv_computed: Histograms,
}

/// The registry and the families the statistics feed.
pub struct Metrics {
    registry: Registry,
    model_name: String,
    specs: Vec<FamilySpec>,
    handles: HashMap<String, Handle>,
    fed: Fed,
    /// The HTTP instrumentation families.
    pub http: http::HttpMetrics,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("model_name", &self.model_name)
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Declares vllm-rs's families for `model_name`.
    pub fn new(model_name: &str) -> Result<Self> {
        let specs = families::parse(families::VLLM_RS_EXPOSITION)
            .map_err(|e| anyhow::anyhow!("the metric families do not parse: {e}"))?;
        let mut registry = Registry::default();
        let mut handles = HashMap::new();
        let mut http = None;
        for spec in &specs {
            if spec.name.starts_with("http_") {
                // Registered (once, in their place) with their labels and buckets.
                http.get_or_insert_with(|| http::HttpMetrics::register(&mut registry));
                continue;
            }
            let handle = match spec.kind {
                Kind::Counter => {
                    let family = Counters::default();
                    registry.register(spec.name.as_str(), spec.help.as_str(), family.clone());
                    Handle::Counter(family)
                }
                Kind::Gauge if spec.float => {
                    let family = FloatGauges::default();
                    registry.register(spec.name.as_str(), spec.help.as_str(), family.clone());
                    Handle::FloatGauge(family)
                }
                Kind::Gauge => {
                    let family = IntGauges::default();
                    registry.register(spec.name.as_str(), spec.help.as_str(), family.clone());
                    Handle::IntGauge(family)
                }
                Kind::Histogram => {
                    let family =
                        Histograms::new_with_constructor(Buckets(spec.buckets.clone().into()));
                    registry.register(spec.name.as_str(), spec.help.as_str(), family.clone());
                    Handle::Histogram(family)
                }
            };
            handles.insert(spec.name.clone(), handle);
        }
        let fed = Fed::resolve(&handles)?;
        let http = http.unwrap_or_else(|| http::HttpMetrics::register(&mut registry));
        Ok(Self {
            registry,
            model_name: model_name.to_owned(),
            specs,
            handles,
            fed,
            http,
        })
    }

    /// Creates, for every engine, the series an idle vllm-rs already shows.
    pub fn init_engines(&self, engines: &[EngineInfo]) {
        for spec in &self.specs {
            let Some(handle) = self.handles.get(&spec.name) else {
                continue;
            };
            for template in &spec.label_sets {
                // Only per-engine series: the HTTP instrumentation's appear with traffic.
                if !template.iter().any(|(k, _)| k == "engine") {
                    continue;
                }
                for engine in engines {
                    let labels: Labels = template
                        .iter()
                        .map(|(k, v)| match k.as_str() {
                            "model_name" if v == MODEL_PLACEHOLDER => {
                                (k.clone(), self.model_name.clone())
                            }
                            "engine" => (k.clone(), engine.rank.to_string()),
                            _ => (k.clone(), v.clone()),
                        })
                        .collect();
                    match handle {
                        Handle::Counter(f) => drop(f.get_or_create(&labels)),
                        Handle::IntGauge(f) => drop(f.get_or_create(&labels)),
                        Handle::FloatGauge(f) => drop(f.get_or_create(&labels)),
                        Handle::Histogram(f) => drop(f.get_or_create(&labels)),
                    }
                }
            }
        }
    }

    /// The exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::with_capacity(64 * 1024);
        encode(&mut text, &self.registry)?;
        Ok(text)
    }

    fn labels(&self, engine: i64) -> Labels {
        vec![
            ("model_name".into(), self.model_name.clone()),
            ("engine".into(), engine.to_string()),
        ]
    }

    fn labels_with(&self, engine: i64, key: &str, value: &str) -> Labels {
        let mut labels = self.labels(engine);
        labels.push((key.into(), value.into()));
        labels
    }
}

impl Fed {
    fn resolve(handles: &HashMap<String, Handle>) -> Result<Self> {
        let get = |name: &str| {
            handles
                .get(name)
                .cloned()
                .with_context(|| format!("metric family {name} is not declared"))
        };
        let counter = |name: &str| match get(name)? {
            Handle::Counter(f) => Ok(f),
            _ => bail!("{name} is not a counter"),
        };
        let int_gauge = |name: &str| match get(name)? {
            Handle::IntGauge(f) => Ok(f),
            _ => bail!("{name} is not an integer gauge"),
        };
        let float_gauge = |name: &str| match get(name)? {
            Handle::FloatGauge(f) => Ok(f),
            _ => bail!("{name} is not a float gauge"),
        };
        let histogram = |name: &str| match get(name)? {
            Handle::Histogram(f) => Ok(f),
            _ => bail!("{name} is not a histogram"),
        };
        Ok(Self {
            running: int_gauge("vllm:num_requests_running")?,
            waiting: int_gauge("vllm:num_requests_waiting")?,
            waiting_by_reason: int_gauge("vllm:num_requests_waiting_by_reason")?,
            kv_cache_usage: float_gauge("vllm:kv_cache_usage_perc")?,
            prefix_cache_queries: counter("vllm:prefix_cache_queries")?,
            prefix_cache_hits: counter("vllm:prefix_cache_hits")?,
            cached_by_source: counter("vllm:prompt_tokens_cached_by_source")?,
            preemptions: counter("vllm:num_preemptions")?,
            prompt_tokens: counter("vllm:prompt_tokens")?,
            prompt_tokens_by_source: counter("vllm:prompt_tokens_by_source")?,
            prompt_tokens_cached: counter("vllm:prompt_tokens_cached")?,
            generation_tokens: counter("vllm:generation_tokens")?,
            corrupted_requests: counter("vllm:corrupted_requests")?,
            iteration_tokens: histogram("vllm:iteration_tokens_total")?,
            request_success: counter("vllm:request_success")?,
            time_to_first_token: histogram("vllm:time_to_first_token_seconds")?,
            inter_token_latency: histogram("vllm:inter_token_latency_seconds")?,
            e2e_latency: histogram("vllm:e2e_request_latency_seconds")?,
            queue_time: histogram("vllm:request_queue_time_seconds")?,
            prefill_time: histogram("vllm:request_prefill_time_seconds")?,
            decode_time: histogram("vllm:request_decode_time_seconds")?,
            inference_time: histogram("vllm:request_inference_time_seconds")?,
            time_per_output_token: histogram("vllm:request_time_per_output_token_seconds")?,
            request_prompt_tokens: histogram("vllm:request_prompt_tokens")?,
            request_generation_tokens: histogram("vllm:request_generation_tokens")?,
            request_max_generation_tokens: histogram("vllm:request_max_num_generation_tokens")?,
            request_max_tokens: histogram("vllm:request_params_max_tokens")?,
            request_n: histogram("vllm:request_params_n")?,
            request_preemptions: histogram("vllm:request_num_preemptions")?,
            request_prefill_kv_computed: histogram("vllm:request_prefill_kv_computed_tokens")?,
        })
    }
}

/// A non-negative count from a msgpack map field.
fn field(map: &Value, key: &str) -> u64 {
    map.get(key)
        .and_then(Value::as_i64)
        .map_or(0, |n| n.max(0) as u64)
}

impl StatsObserver for Metrics {
    fn scheduler(&self, engine: i64, stats: &SchedulerStats) {
        let labels = self.labels(engine);
        let fed = &self.fed;
        fed.running
            .get_or_create(&labels)
            .set(stats.num_running_reqs);
        fed.waiting
            .get_or_create(&labels)
            .set(stats.num_waiting_reqs + stats.num_skipped_waiting_reqs);
        fed.waiting_by_reason
            .get_or_create(&self.labels_with(engine, "reason", "capacity"))
            .set(stats.num_waiting_reqs);
        fed.waiting_by_reason
            .get_or_create(&self.labels_with(engine, "reason", "deferred"))
            .set(stats.num_skipped_waiting_reqs);
        fed.kv_cache_usage
            .get_or_create(&labels)
            .set(stats.kv_cache_usage);
        let prefix = &stats.prefix_cache_stats;
        fed.prefix_cache_queries
            .get_or_create(&labels)
            .inc_by(field(prefix, "queries"));
        let hits = field(prefix, "hits");
        fed.prefix_cache_hits.get_or_create(&labels).inc_by(hits);
        fed.cached_by_source
            .get_or_create(&self.labels_with(engine, "source", "device"))
            .inc_by(hits);
    }

    fn iteration(&self, engine: i64, it: &IterationStats) {
        let labels = self.labels(engine);
        let fed = &self.fed;
        fed.preemptions
            .get_or_create(&labels)
            .inc_by(it.num_preempted_reqs);
        fed.prompt_tokens
            .get_or_create(&labels)
            .inc_by(it.prompt_tokens.total);
        for (source, tokens) in [
            ("local_compute", it.prompt_tokens.computed),
            ("local_cache_hit", it.prompt_tokens.local_cache_hit),
            (
                "external_kv_transfer",
                it.prompt_tokens.external_kv_transfer,
            ),
        ] {
            fed.prompt_tokens_by_source
                .get_or_create(&self.labels_with(engine, "source", source))
                .inc_by(tokens);
        }
        fed.prompt_tokens_cached
            .get_or_create(&labels)
            .inc_by(it.prompt_tokens.cached);
        fed.generation_tokens
            .get_or_create(&labels)
            .inc_by(it.num_generation_tokens);
        // No NaN check here (VLLM_COMPUTE_NANS_IN_LOGITS); the series exists, as in vllm-rs.
        fed.corrupted_requests.get_or_create(&labels).inc_by(0);
        fed.iteration_tokens
            .get_or_create(&labels)
            .observe((it.prompt_tokens.computed + it.num_generation_tokens) as f64);
        let ttft = fed.time_to_first_token.get_or_create(&labels);
        it.time_to_first_tokens
            .iter()
            .for_each(|t| ttft.observe(*t));
        drop(ttft);
        let itl = fed.inter_token_latency.get_or_create(&labels);
        it.inter_token_latencies
            .iter()
            .for_each(|t| itl.observe(*t));
        drop(itl);
        for done in &it.finished {
            fed.request_success
                .get_or_create(&self.labels_with(
                    engine,
                    "finished_reason",
                    done.finish_reason.as_str(),
                ))
                .inc();
            let observe =
                |family: &Histograms, value: f64| family.get_or_create(&labels).observe(value);
            observe(&fed.e2e_latency, done.e2e_latency);
            observe(&fed.queue_time, done.queued_time);
            observe(&fed.prefill_time, done.prefill_time);
            observe(&fed.inference_time, done.inference_time);
            observe(&fed.decode_time, done.decode_time);
            observe(&fed.request_preemptions, done.num_preemptions as f64);
            observe(
                &fed.request_prefill_kv_computed,
                done.num_prompt_tokens
                    .saturating_sub(done.num_cached_tokens) as f64,
            );
            observe(&fed.request_prompt_tokens, done.num_prompt_tokens as f64);
            observe(
                &fed.request_generation_tokens,
                done.num_generation_tokens as f64,
            );
            observe(&fed.time_per_output_token, done.mean_time_per_output_token);
            if let Some(max_tokens) = done.max_tokens_param.filter(|m| *m != 0) {
                observe(&fed.request_max_tokens, max_tokens as f64);
            }
            // A request is its own parent when n = 1 (vLLM records these per parent).
            observe(
                &fed.request_max_generation_tokens,
                done.num_generation_tokens as f64,
            );
            observe(&fed.request_n, done.n_param as f64);
        }
    }
}
