//! `/pause`, `/resume`, `/is_paused`, `/sleep`, `/wake_up`, `/is_sleeping`,
//! `/release_kv_cache_memory`.

use serde::{Deserialize, Deserializer};
use serde_json::json;
use vllm_client::EngineCoreClient;
use vllm_client::protocol::{PauseMode, SleepLevel, WakeTag};

use super::{ControlAnswer, engine_error};
use crate::pipeline::ApiError;

/// Reads a [`PauseMode`] from its vLLM name, with vllm-rs's error message.
fn pause_mode<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PauseMode, D::Error> {
    let name = String::deserialize(deserializer)?;
    PauseMode::parse(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "invalid pause mode `{name}`; expected one of: abort, wait, keep"
        ))
    })
}

fn default_true() -> bool {
    true
}

/// The query of `POST /pause`: `mode` (default `abort`) and `clear_cache` (default
/// `true`; deprecated in vLLM, ignored with `keep`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct PauseQuery {
    /// What happens to the requests in flight.
    #[serde(default, deserialize_with = "pause_mode")]
    pub mode: PauseMode,
    /// Whether the caches are cleared once the pause is complete.
    #[serde(default = "default_true")]
    pub clear_cache: bool,
}

impl Default for PauseQuery {
    fn default() -> Self {
        Self {
            mode: PauseMode::Abort,
            clear_cache: true,
        }
    }
}

/// The query of `POST /sleep`: `level` (0–2, default 1) and `mode` (default `abort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct SleepQuery {
    /// Sleep level.
    #[serde(default = "default_level")]
    pub level: u64,
    /// What happens to the requests in flight.
    #[serde(default, deserialize_with = "pause_mode")]
    pub mode: PauseMode,
}

fn default_level() -> u64 {
    1
}

impl Default for SleepQuery {
    fn default() -> Self {
        Self {
            level: 1,
            mode: PauseMode::Abort,
        }
    }
}

/// `POST /pause`: pauses generation (`pause_generation`); with `abort` and `wait`, new
/// requests are refused until `/resume`.
pub async fn pause(
    client: &EngineCoreClient,
    query: &PauseQuery,
) -> Result<ControlAnswer, ApiError> {
    client
        .pause_generation(query.mode, query.clear_cache)
        .await
        .map_err(|e| engine_error("pause_generation", &e))?;
    Ok(ControlAnswer::Json(json!({"status": "paused"})))
}

/// `POST /resume`.
pub async fn resume(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    client
        .resume_scheduler()
        .await
        .map_err(|e| engine_error("resume_generation", &e))?;
    Ok(ControlAnswer::Json(json!({"status": "resumed"})))
}

/// `GET /is_paused`.
pub async fn is_paused(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    let paused = paused(client).await?;
    Ok(ControlAnswer::Json(json!({"is_paused": paused})))
}

/// Whether the engines' schedulers are paused.
pub async fn paused(client: &EngineCoreClient) -> Result<bool, ApiError> {
    client
        .is_scheduler_paused()
        .await
        .map_err(|e| engine_error("is_paused", &e))
}

/// `POST /sleep`.
pub async fn sleep(
    client: &EngineCoreClient,
    query: &SleepQuery,
) -> Result<ControlAnswer, ApiError> {
    let level = i64::try_from(query.level)
        .ok()
        .and_then(SleepLevel::from_level)
        .ok_or_else(|| ApiError::bad_request("level must be between 0 and 2", Some("level")))?;
    sleep_at(client, level, query.mode).await?;
    Ok(ControlAnswer::Json(
        json!({"status": "sleeping", "level": query.level}),
    ))
}

/// Puts the engines to sleep at `level`, the requests in flight handled as `mode`
/// says.
pub async fn sleep_at(
    client: &EngineCoreClient,
    level: SleepLevel,
    mode: PauseMode,
) -> Result<(), ApiError> {
    client
        .sleep(level, mode)
        .await
        .map_err(|e| engine_error("sleep", &e))
}

/// `POST /wake_up?tags=…`: `tags` are the query's `tags` values (none: wake everything).
/// The status is `sleeping` while some memory still sleeps.
pub async fn wake_up(
    client: &EngineCoreClient,
    tags: Option<Vec<String>>,
) -> Result<ControlAnswer, ApiError> {
    let awake = wake(client, tags.as_deref()).await?;
    let status = if awake { "awake" } else { "sleeping" };
    Ok(ControlAnswer::Json(json!({"status": status, "tags": tags})))
}

/// Wakes the memory of `tags` (none: everything): whether the engines are then
/// fully awake.
pub async fn wake(client: &EngineCoreClient, tags: Option<&[String]>) -> Result<bool, ApiError> {
    let wake: Option<Vec<WakeTag>> =
        tags.map(|tags| tags.iter().map(|t| WakeTag::parse(t)).collect());
    client
        .wake_up(wake.as_deref())
        .await
        .map_err(|e| engine_error("wake_up", &e))
}

/// `GET /is_sleeping`.
pub async fn is_sleeping(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    let sleeping = sleeping(client).await?;
    Ok(ControlAnswer::Json(json!({"is_sleeping": sleeping})))
}

/// Whether the engines sleep.
pub async fn sleeping(client: &EngineCoreClient) -> Result<bool, ApiError> {
    client
        .is_sleeping()
        .await
        .map_err(|e| engine_error("is_sleeping", &e))
}

/// `POST /release_kv_cache_memory`.
pub async fn release_kv_cache_memory(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    client
        .release_kv_cache_memory()
        .await
        .map_err(|e| engine_error("release_kv_cache_memory", &e))?;
    Ok(ControlAnswer::Json(json!({"status": "kv_cache_released"})))
}
