//! Typed wrappers for the utility methods of vLLM 0.33's `EngineCore`: the control plane
//! an RL framework or an operator drives an engine fleet with.
//!
//! Each wrapper calls the engines the way vLLM's data-parallel client does for that
//! method (`vllm/v1/engine/core_client.py`): most go to every engine and return the first
//! result; the queries every engine must agree on (`is_sleeping`, `is_scheduler_paused`,
//! `get_weight_version`) fail when they do not; `wake_up` and `reset_prefix_cache` report
//! whether all engines succeeded.
//!
//! - [`lifecycle`]: pause / resume, sleep / wake up, KV cache release.
//! - [`weights`]: the weight-transfer sequence of RL training and the weight version.
//! - [`lora`]: LoRA adapters.
//! - this file: caches, `collective_rpc`, profiling, supported tasks.

mod lifecycle;
mod lora;
mod weights;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{ClientError, EngineCoreClient};
use crate::wire::Value;

/// A process-wide source of utility call ids: a random base, then sequential, so that
/// several clients sharing engines do not collide.
pub(crate) fn next_call_id() -> u64 {
    static BASE: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let base = *BASE.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        nanos ^ (u64::from(std::process::id()) << 40)
    });
    base.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Reads a utility result of the expected shape, or says what came instead.
fn expect<T>(
    method: &str,
    value: &Value,
    shape: &str,
    read: impl FnOnce(&Value) -> Option<T>,
) -> Result<T, ClientError> {
    read(value).ok_or_else(|| ClientError::UnexpectedResult {
        method: method.into(),
        detail: format!("expected {shape}, got {value:?}"),
    })
}

fn expect_bool(method: &str, value: &Value) -> Result<bool, ClientError> {
    expect(method, value, "a bool", Value::as_bool)
}

fn expect_strings(method: &str, value: &Value) -> Result<Vec<String>, ClientError> {
    expect(method, value, "a list of strings", |v| {
        v.as_array()?
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect()
    })
}

/// Keyword arguments as the msgpack map vLLM receives; none is `None`.
fn kwargs(entries: Vec<(String, Value)>) -> Value {
    if entries.is_empty() {
        Value::Nil
    } else {
        Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        )
    }
}

/// Options of a profiler run ([`EngineCoreClient::start_profile`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileOptions {
    /// Prefix of the trace files.
    pub prefix: Option<String>,
    /// Engine steps to skip before tracing starts.
    pub delay_iterations: Option<i64>,
    /// Engine steps after which tracing stops by itself.
    pub max_iterations: Option<i64>,
    /// Profiler-specific keyword arguments.
    pub profiler_kwargs: Vec<(String, Value)>,
}

impl EngineCoreClient {
    /// Resets the prefix cache of every engine (`reset_prefix_cache`); returns whether
    /// all engines reset it. `reset_running_requests` also drops the blocks of running
    /// requests (they are recomputed); `reset_connector` clears an external KV connector.
    pub async fn reset_prefix_cache(
        &self,
        reset_running_requests: bool,
        reset_connector: bool,
    ) -> Result<bool, ClientError> {
        const METHOD: &str = "reset_prefix_cache";
        let args = vec![reset_running_requests.into(), reset_connector.into()];
        let results = self.call_utility_all(METHOD, args).await?;
        results
            .iter()
            .try_fold(true, |all, r| Ok(all & expect_bool(METHOD, r)?))
    }

    /// Clears the multimodal input cache (`reset_mm_cache`).
    pub async fn reset_mm_cache(&self) -> Result<(), ClientError> {
        self.call_utility("reset_mm_cache", vec![]).await.map(drop)
    }

    /// Clears the encoder output cache (`reset_encoder_cache`), as after a weight update
    /// of a vision model.
    pub async fn reset_encoder_cache(&self) -> Result<(), ClientError> {
        self.call_utility("reset_encoder_cache", vec![])
            .await
            .map(drop)
    }

    /// Runs `method` on every worker of the engines (`collective_rpc`) with positional
    /// `args` and keyword `kwargs` (`None` is Python's `None`, as `AsyncLLM` sends by
    /// default; vLLM's HTTP endpoint sends a map, empty or not); returns one result per
    /// worker (of the first engine, as vLLM does). `timeout` bounds the wait for the
    /// workers.
    pub async fn collective_rpc(
        &self,
        method: &str,
        timeout: Option<Duration>,
        args: Vec<Value>,
        kwargs: Option<Vec<(String, Value)>>,
    ) -> Result<Vec<Value>, ClientError> {
        let kwargs = kwargs.map_or(Value::Nil, |entries| {
            Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| (Value::from(k), v))
                    .collect(),
            )
        });
        let args = vec![
            method.into(),
            timeout.map(|t| t.as_secs_f64()).into(),
            Value::Array(args),
            kwargs,
        ];
        let result = self.call_utility("collective_rpc", args).await?;
        expect("collective_rpc", &result, "a list of worker results", |v| {
            v.as_array().map(<[Value]>::to_vec)
        })
    }

    /// Starts the profiler on every engine (`profile(is_start=True, …)`).
    pub async fn start_profile(&self, options: &ProfileOptions) -> Result<(), ClientError> {
        self.profile(true, options).await
    }

    /// Stops the profiler on every engine (`profile(is_start=False)`).
    pub async fn stop_profile(&self) -> Result<(), ClientError> {
        self.profile(false, &ProfileOptions::default()).await
    }

    async fn profile(&self, is_start: bool, options: &ProfileOptions) -> Result<(), ClientError> {
        let args = vec![
            is_start.into(),
            options.prefix.clone().into(),
            options.delay_iterations.into(),
            options.max_iterations.into(),
            kwargs(options.profiler_kwargs.clone()),
        ];
        self.call_utility("profile", args).await.map(drop)
    }

    /// Runs one dummy batch on every engine (`execute_dummy_batch`), as vLLM's
    /// data-parallel engines do to stay in step.
    pub async fn execute_dummy_batch(&self) -> Result<(), ClientError> {
        self.call_utility("execute_dummy_batch", vec![])
            .await
            .map(drop)
    }

    /// Saves the model weights as shards under `path` (`save_sharded_state`): files
    /// matching `pattern`, each at most `max_size` bytes.
    pub async fn save_sharded_state(
        &self,
        path: &str,
        pattern: Option<&str>,
        max_size: Option<u64>,
    ) -> Result<(), ClientError> {
        let args = vec![path.into(), pattern.into(), max_size.into()];
        self.call_utility("save_sharded_state", args)
            .await
            .map(drop)
    }

    /// The tasks the model supports (`["generate"]`, …).
    pub async fn get_supported_tasks(&self) -> Result<Vec<String>, ClientError> {
        let v = self.call_utility("get_supported_tasks", vec![]).await?;
        expect_strings("get_supported_tasks", &v)
    }
}
