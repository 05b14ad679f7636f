//! Pause / resume and sleep / wake-up: what an RL framework does around a weight update
//! and an operator around maintenance.

use super::expect_bool;
use crate::client::{ClientError, EngineCoreClient};
use crate::protocol::{PauseMode, SleepLevel, WakeTag};
use crate::wire::Value;

impl EngineCoreClient {
    /// Pauses scheduling on every engine (`pause_scheduler`). New requests are queued
    /// until [`EngineCoreClient::resume_scheduler`]; `mode` says what happens to the
    /// ones in flight, and the call returns once the pause is complete (for
    /// [`PauseMode::Wait`], when they have finished). `clear_cache` then resets the
    /// prefix, multimodal and encoder caches.
    pub async fn pause_scheduler(
        &self,
        mode: PauseMode,
        clear_cache: bool,
    ) -> Result<(), ClientError> {
        self.call_utility("pause_scheduler", vec![mode.into(), clear_cache.into()])
            .await
            .map(drop)
    }

    /// Pauses generation for a user (`pause_generation`, what vLLM's `/pause` calls):
    /// like [`EngineCoreClient::pause_scheduler`], except that with
    /// [`PauseMode::Abort`] and [`PauseMode::Wait`] new requests are refused with a
    /// retryable error (finish reason `error`) until the resume, rather than queued.
    pub async fn pause_generation(
        &self,
        mode: PauseMode,
        clear_cache: bool,
    ) -> Result<(), ClientError> {
        self.call_utility("pause_generation", vec![mode.into(), clear_cache.into()])
            .await
            .map(drop)
    }

    /// Resumes scheduling after a pause, and accepts new requests again
    /// (`resume_scheduler`).
    pub async fn resume_scheduler(&self) -> Result<(), ClientError> {
        self.call_utility("resume_scheduler", vec![])
            .await
            .map(drop)
    }

    /// Whether the engines' schedulers are paused (`is_scheduler_paused`; the engines
    /// must agree).
    pub async fn is_scheduler_paused(&self) -> Result<bool, ClientError> {
        let v = self
            .call_utility_consensus("is_scheduler_paused", vec![])
            .await?;
        expect_bool("is_scheduler_paused", &v)
    }

    /// Puts the engines to sleep (`sleep`): pauses them with `mode`, then frees GPU
    /// memory as `level` says.
    pub async fn sleep(&self, level: SleepLevel, mode: PauseMode) -> Result<(), ClientError> {
        self.call_utility("sleep", vec![level.into(), mode.into()])
            .await
            .map(drop)
    }

    /// Wakes the engines up (`wake_up`): restores the memory named by `tags` (all of it
    /// when `None`). Returns whether every engine is fully awake again; scheduling
    /// resumes only then.
    pub async fn wake_up(&self, tags: Option<&[WakeTag]>) -> Result<bool, ClientError> {
        let tags = tags.map_or(Value::Nil, |tags| {
            Value::Array(tags.iter().map(Value::from).collect())
        });
        let results = self.call_utility_all("wake_up", vec![tags]).await?;
        results
            .iter()
            .try_fold(true, |all, r| Ok(all & expect_bool("wake_up", r)?))
    }

    /// Whether the engines sleep or are paused (`is_sleeping`; the engines must agree).
    pub async fn is_sleeping(&self) -> Result<bool, ClientError> {
        let v = self.call_utility_consensus("is_sleeping", vec![]).await?;
        expect_bool("is_sleeping", &v)
    }

    /// Discards the KV cache memory of paused, idle engines (`release_kv_cache_memory`);
    /// requests kept by a [`PauseMode::Keep`] pause are recomputed after the wake-up.
    pub async fn release_kv_cache_memory(&self) -> Result<(), ClientError> {
        self.call_utility("release_kv_cache_memory", vec![])
            .await
            .map(drop)
    }
}
