//! Typed wrappers for the utility methods of vLLM 0.33's EngineCore.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ClientError, EngineCoreClient};
use crate::protocol::LoRARequest;
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

fn expect_bool(method: &str, v: Value) -> Result<bool, ClientError> {
    v.as_bool().ok_or_else(|| ClientError::UnexpectedResult {
        method: method.into(),
        detail: format!("expected a bool, got {v:?}"),
    })
}

impl EngineCoreClient {
    /// Whether the engines sleep (`is_sleeping`).
    pub async fn is_sleeping(&self) -> Result<bool, ClientError> {
        let v = self.call_utility("is_sleeping", vec![]).await?;
        expect_bool("is_sleeping", v)
    }

    /// Puts the engines to sleep at `level`; `mode` is `"abort"`, `"wait"` or `"keep"`.
    pub async fn sleep(&self, level: i64, mode: &str) -> Result<(), ClientError> {
        self.call_utility("sleep", vec![level.into(), mode.into()])
            .await
            .map(drop)
    }

    /// Wakes the engines up (`tags`: which memory to restore; `None` = all).
    pub async fn wake_up(&self, tags: Option<Vec<String>>) -> Result<(), ClientError> {
        self.call_utility("wake_up", vec![tags.into()])
            .await
            .map(drop)
    }

    /// Resets the prefix cache; returns whether it was reset.
    pub async fn reset_prefix_cache(&self) -> Result<bool, ClientError> {
        let v = self
            .call_utility("reset_prefix_cache", vec![false.into(), false.into()])
            .await?;
        expect_bool("reset_prefix_cache", v)
    }

    /// Loads a LoRA adapter; returns whether it was added.
    pub async fn add_lora(&self, lora: &LoRARequest) -> Result<bool, ClientError> {
        let arg = crate::wire::from_slice::<Value>(&crate::wire::to_vec(lora))
            .map_err(|e| ClientError::Protocol(e.to_string().into()))?;
        let v = self.call_utility("add_lora", vec![arg]).await?;
        expect_bool("add_lora", v)
    }

    /// Unloads a LoRA adapter; returns whether it was removed.
    pub async fn remove_lora(&self, lora_id: i64) -> Result<bool, ClientError> {
        let v = self
            .call_utility("remove_lora", vec![lora_id.into()])
            .await?;
        expect_bool("remove_lora", v)
    }

    /// The ids of the loaded LoRA adapters.
    pub async fn list_loras(&self) -> Result<Vec<i64>, ClientError> {
        let v = self.call_utility("list_loras", vec![]).await?;
        v.as_array()
            .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
            .ok_or_else(|| ClientError::UnexpectedResult {
                method: "list_loras".into(),
                detail: format!("expected a list of ints, got {v:?}"),
            })
    }

    /// Pins a LoRA adapter in memory; returns whether it was pinned.
    pub async fn pin_lora(&self, lora_id: i64) -> Result<bool, ClientError> {
        let v = self.call_utility("pin_lora", vec![lora_id.into()]).await?;
        expect_bool("pin_lora", v)
    }

    /// Pauses scheduling; `mode` is `"abort"`, `"wait"` or `"keep"`.
    pub async fn pause_scheduler(&self, mode: &str, clear_cache: bool) -> Result<(), ClientError> {
        self.call_utility("pause_scheduler", vec![mode.into(), clear_cache.into()])
            .await
            .map(drop)
    }

    /// Resumes scheduling after [`EngineCoreClient::pause_scheduler`].
    pub async fn resume_scheduler(&self) -> Result<(), ClientError> {
        self.call_utility("resume_scheduler", vec![])
            .await
            .map(drop)
    }

    /// Runs `method` on every worker (`collective_rpc`), with positional `args` and
    /// keyword `kwargs` (a map value or nil).
    pub async fn collective_rpc(
        &self,
        method: &str,
        timeout_secs: Option<f64>,
        args: Vec<Value>,
        kwargs: Value,
    ) -> Result<Value, ClientError> {
        self.call_utility(
            "collective_rpc",
            vec![
                method.into(),
                timeout_secs.into(),
                Value::Array(args),
                kwargs,
            ],
        )
        .await
    }

    /// The tasks the model supports (`["generate"]`, …).
    pub async fn get_supported_tasks(&self) -> Result<Vec<String>, ClientError> {
        let v = self.call_utility("get_supported_tasks", vec![]).await?;
        v.as_array()
            .and_then(|a| {
                a.iter()
                    .map(|t| t.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| ClientError::UnexpectedResult {
                method: "get_supported_tasks".into(),
                detail: format!("expected a list of strings, got {v:?}"),
            })
    }
}
