//! The engine-facing endpoints besides the lifecycle and the weights: cache resets,
//! `/collective_rpc`, `/abort_requests`, `/get_world_size`, `/kv_event_sources`.

use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use vllm_client::{EngineCoreClient, Value};

use super::{ControlAnswer, engine_error, json_to_value, value_to_json};
use crate::pipeline::ApiError;

/// The query of `POST /reset_prefix_cache`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ResetPrefixCacheQuery {
    /// Also drop the blocks of running requests (they are recomputed).
    #[serde(default)]
    pub reset_running_requests: bool,
    /// Also reset an external (connector-managed) prefix cache.
    #[serde(default)]
    pub reset_external: bool,
}

/// The body of `POST /collective_rpc`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CollectiveRpcBody {
    /// The worker method (required).
    #[serde(default)]
    pub method: Option<String>,
    /// Positional arguments (vLLM passes them as serialized strings).
    #[serde(default)]
    pub args: Vec<Json>,
    /// Keyword arguments.
    #[serde(default)]
    pub kwargs: Map<String, Json>,
    /// Seconds to wait for the workers.
    #[serde(default)]
    pub timeout: Option<f64>,
}

/// The body of `POST /abort_requests`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AbortRequestsBody {
    /// The request ids (as the API reported them); none or empty aborts every request.
    #[serde(default)]
    pub request_ids: Option<Vec<String>>,
}

/// The query of `GET /get_world_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct WorldSizeQuery {
    /// Count the data-parallel engines too (default `true`).
    #[serde(default = "yes")]
    pub include_dp: bool,
}

fn yes() -> bool {
    true
}

/// `POST /reset_prefix_cache`: `{"success": bool}` (false while blocks are held).
pub async fn reset_prefix_cache(
    client: &EngineCoreClient,
    query: &ResetPrefixCacheQuery,
) -> Result<ControlAnswer, ApiError> {
    let success = client
        .reset_prefix_cache(query.reset_running_requests, query.reset_external)
        .await
        .map_err(|e| engine_error("reset_prefix_cache", &e))?;
    Ok(ControlAnswer::Json(json!({ "success": success })))
}

/// `POST /reset_mm_cache`.
pub async fn reset_mm_cache(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    client
        .reset_mm_cache()
        .await
        .map_err(|e| engine_error("reset_mm_cache", &e))?;
    Ok(ControlAnswer::Empty)
}

/// `POST /reset_encoder_cache`.
pub async fn reset_encoder_cache(client: &EngineCoreClient) -> Result<ControlAnswer, ApiError> {
    client
        .reset_encoder_cache()
        .await
        .map_err(|e| engine_error("reset_encoder_cache", &e))?;
    Ok(ControlAnswer::Empty)
}

/// `POST /collective_rpc`: runs the method on every worker; `{"results": [...]}` with one
/// entry per worker (`null`, objects and lists as they are, anything else as Python's
/// `str` of it).
pub async fn collective_rpc(
    client: &EngineCoreClient,
    body: &CollectiveRpcBody,
) -> Result<ControlAnswer, ApiError> {
    let method = body
        .method
        .as_deref()
        .ok_or_else(|| ApiError::bad_request("Missing 'method' in request body", Some("method")))?;
    let timeout = body
        .timeout
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(std::time::Duration::from_secs_f64);
    let args = body.args.iter().map(json_to_value).collect();
    let kwargs = body
        .kwargs
        .iter()
        .map(|(k, v)| (k.clone(), json_to_value(v)))
        .collect();
    let results = client
        .collective_rpc(method, timeout, args, Some(kwargs))
        .await
        .map_err(|e| engine_error("collective_rpc", &e))?;
    let results: Vec<Json> = results.iter().map(python_result).collect();
    Ok(ControlAnswer::Json(json!({ "results": results })))
}

/// A worker's result as vLLM's endpoint returns it: `None`, dicts and lists as JSON,
/// anything else as `str(result)`.
fn python_result(value: &Value) -> Json {
    match value {
        Value::Nil | Value::Map(_) | Value::Array(_) => value_to_json(value),
        Value::Bool(true) => Json::from("True"),
        Value::Bool(false) => Json::from("False"),
        Value::Int(i) => Json::from(i.to_string()),
        Value::UInt(u) => Json::from(u.to_string()),
        Value::F64(f) => Json::from(python_float(*f)),
        Value::F32(f) => Json::from(python_float(f64::from(*f))),
        Value::Str(s) => Json::from(s.clone()),
        Value::Bin(_) | Value::Ext(..) => Json::from(format!("{value:?}")),
    }
}

/// Python's `repr` of a float for the common cases (`1.0`, `0.5`, `inf`, `nan`).
fn python_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{f:?}")
    }
}

/// `POST /abort_requests`: aborts the requests with these API ids (each engine request
/// whose id is the API id plus vLLM's random suffix), or every request in flight.
pub async fn abort_requests(
    client: &EngineCoreClient,
    body: &AbortRequestsBody,
) -> Result<ControlAnswer, ApiError> {
    let in_flight = client.in_flight_request_ids();
    let doomed: Vec<&str> = match body.request_ids.as_deref() {
        None | Some([]) => in_flight.iter().map(String::as_str).collect(),
        Some(ids) => in_flight
            .iter()
            .map(String::as_str)
            .filter(|internal| ids.iter().any(|id| is_engine_id_of(internal, id)))
            .collect(),
    };
    client.abort(&doomed);
    Ok(ControlAnswer::Empty)
}

/// Whether `internal` is an engine request id made for API id `external`
/// (`{external}-{8 hex digits}`, see [`crate::pipeline::ids::engine_request_id`]).
fn is_engine_id_of(internal: &str, external: &str) -> bool {
    internal == external
        || internal
            .strip_prefix(external)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|suffix| {
                suffix.len() == 8 && suffix.bytes().all(|b| b.is_ascii_hexdigit())
            })
}

/// `GET /get_world_size`: workers per engine (tensor × pipeline parallel), times the
/// data-parallel size with `include_dp`.
pub fn world_size(client: &EngineCoreClient, query: &WorldSizeQuery) -> ControlAnswer {
    let engines = client.engines();
    let per_engine = engines.first().map_or(1, |e| e.ready.world_size.max(1));
    let dp = engines
        .first()
        .map_or(1, |e| e.ready.data_parallel_size.max(1));
    let world_size = if query.include_dp {
        per_engine * dp
    } else {
        per_engine
    };
    ControlAnswer::Json(json!({ "world_size": world_size }))
}

/// `GET /kv_event_sources`: the KV-event publishers of the engines that have one, by
/// data-parallel rank (their `kv_events_config` from the handshake).
pub fn kv_event_sources(client: &EngineCoreClient) -> ControlAnswer {
    let sources: Map<String, Json> = kv_event_publishers(client)
        .into_iter()
        .map(|(rank, config)| (rank.to_string(), value_to_json(&config)))
        .collect();
    ControlAnswer::Json(Json::Object(sources))
}

/// The engines that publish KV-cache events, by data-parallel rank, with the
/// `kv_events_config` each reported at its handshake (as reported: endpoints with the
/// engine's own host wildcards).
pub fn kv_event_publishers(client: &EngineCoreClient) -> Vec<(u16, Value)> {
    client
        .engines()
        .iter()
        .filter_map(|engine| {
            let config = engine.ready.kv_events_config.as_ref()?;
            (config
                .get("enable_kv_cache_events")
                .and_then(Value::as_bool)
                == Some(true))
            .then(|| (engine.rank, config.clone()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_ids_match_their_engine_ids_only() {
        assert!(is_engine_id_of("chatcmpl-abc-0123abcd", "chatcmpl-abc"));
        assert!(!is_engine_id_of("chatcmpl-abcd-0123abcd", "chatcmpl-abc"));
        assert!(!is_engine_id_of("chatcmpl-abc-0123abc", "chatcmpl-abc"));
        assert!(is_engine_id_of("raw", "raw"));
    }

    #[test]
    fn worker_results_read_as_python_prints_them() {
        assert_eq!(python_result(&Value::Bool(true)), Json::from("True"));
        assert_eq!(python_result(&Value::from(5i64)), Json::from("5"));
        assert_eq!(python_result(&Value::F64(1.0)), Json::from("1.0"));
        assert_eq!(python_result(&Value::Nil), Json::Null);
    }
}
