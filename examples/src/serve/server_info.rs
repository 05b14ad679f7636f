//! `/server_info` (`VLLM_SERVER_DEV_MODE=1`): the server's settings, its `VLLM_*`
//! environment and the platform, in the shape vllm-rs 0.33.0 and vLLM's Python server
//! answer with (`{"vllm_config", "vllm_env", "system_env"}`), `?config_format=text`
//! (the default: `key=value` lines) or `json`.
//!
//! The settings are this server's, under vllm-rs's key names where the two share a
//! setting; secrets (`--api-key`) are left out, as vLLM leaves out `*KEY*` variables.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::state::AppState;
use super::{EngineSource, ParserChoice, ServeConfig};

/// `?config_format=`: axum's query rejection answers anything else with vllm-rs's
/// 400 (`unknown variant …, expected `text` or `json``).
#[derive(Debug, Default, Deserialize)]
pub struct ServerInfoQuery {
    #[serde(default)]
    config_format: ConfigFormat,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ConfigFormat {
    #[default]
    Text,
    Json,
}

/// `GET /server_info`.
pub async fn server_info(
    State(state): State<AppState>,
    Query(query): Query<ServerInfoQuery>,
) -> Json<Value> {
    let settings = &state.server_settings;
    let config = match query.config_format {
        ConfigFormat::Json => Value::Object(settings.as_ref().clone()),
        ConfigFormat::Text => Value::String(as_text(settings)),
    };
    Json(json!({
        "vllm_config": config,
        "vllm_env": vllm_env(),
        "system_env": {
            "arch": std::env::consts::ARCH,
            "family": std::env::consts::FAMILY,
            "os": std::env::consts::OS,
        },
    }))
}

/// The settings `/server_info` reports for `config`.
pub fn settings(config: &ServeConfig) -> Map<String, Value> {
    let parser = |choice: &ParserChoice| match choice {
        ParserChoice::None => Value::Null,
        ParserChoice::Auto => json!("auto"),
        ParserChoice::Named(name) => json!(name),
    };
    let duration = |d: Duration| json!({"secs": d.as_secs(), "nanos": d.subsec_nanos()});
    let listener = match &config.uds {
        Some(path) => json!({"BindUds": {"path": path}}),
        None => json!({"BindTcp": {"host": config.host, "port": config.port}}),
    };
    let engine = match &config.engine {
        EngineSource::Embedded(mock) => json!({"EmbeddedMock": {
            "tokens_per_second": mock.tokens_per_second,
        }}),
        EngineSource::External { address, rpc_port } => json!({"HandshakeOwner": {
            "data_parallel_address": address,
            "data_parallel_rpc_port": rpc_port,
            "engine_count": config.data_parallel_size,
        }}),
    };
    let cors = config.ops.cors.as_ref().map(|c| {
        json!({
            "allow_origins": c.origins,
            "allow_methods": c.methods,
            "allow_headers": c.headers,
            "allow_credentials": c.credentials,
        })
    });
    let tls = config.tls.as_ref().map(|t| {
        json!({
            "certfile": t.certfile,
            "keyfile": t.keyfile,
            "ca_certs": t.ca_certs,
            "cert_reqs": t.cert_reqs,
        })
    });
    let settings = json!({
        "transport_mode": engine,
        "model": config.model_dir,
        "served_model_name": [config.served_model_name],
        "listener_mode": listener,
        "grpc_listener_mode": config.grpc_port.map(|port| json!({"BindTcp": {"host": config.host, "port": port}})),
        "tool_call_parser": parser(&config.tool_call_parser),
        "reasoning_parser": parser(&config.reasoning_parser),
        "enable_auto_tool_choice": config.enable_auto_tool_choice,
        "tool_strict_level": config.tool_strict_level.map(|l| l.name()),
        "chat_template": config.chat_template,
        "default_chat_template_kwargs": config.default_chat_template_kwargs,
        "trust_request_chat_template": config.trust_request_chat_template,
        "lora_modules": config.lora.modules.iter().map(|m| &m.name).collect::<Vec<_>>(),
        "max_model_len": config.max_model_len,
        "max_logprobs": config.max_logprobs,
        "stream_interval": config.stream_interval,
        "api_server_options": {
            "enable_log_requests": config.enable_log_requests,
            "enable_prompt_tokens_details": config.enable_prompt_tokens_details,
            "enable_request_id_headers": config.ops.request_id_headers,
            "api_key": !config.ops.api_keys.is_empty(),
        },
        "cors": cors,
        "tls": tls,
        "disable_log_stats": config.disable_log_stats,
        "shutdown_timeout": config.shutdown_timeout.map(duration),
        "keep_alive_timeout": duration(config.http.keep_alive_timeout),
        "max_connections": config.http.max_connections,
        "renderer_num_workers": config.renderer_num_workers,
    });
    match settings {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// vllm-rs's text form: one `key=value` line per setting, strings bare, null as
/// Python's `None`, everything else as JSON.
fn as_text(settings: &Map<String, Value>) -> String {
    settings
        .iter()
        .map(|(key, value)| match value {
            Value::Null => format!("{key}=None"),
            Value::String(s) => format!("{key}={s}"),
            other => format!("{key}={other}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `VLLM_*` environment variables, except those whose name holds `KEY` (vLLM's
/// `_get_vllm_env_vars`).
fn vllm_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(name, _)| name.starts_with("VLLM_") && !name.contains("KEY"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_writes_python_none_and_bare_strings() {
        let settings = settings(&ServeConfig::embedded_default());
        let text = as_text(&settings);
        assert!(text.contains("\nreasoning_parser=None\n"), "{text}");
        assert!(text.contains("\nserved_model_name=[\"qwen3\"]\n"), "{text}");
        assert!(text.contains("\nstream_interval=1\n"), "{text}");
        assert!(text.contains("listener_mode={\"BindTcp\""), "{text}");
        assert_eq!(text.lines().count(), settings.len());
    }

    #[test]
    fn api_keys_are_never_reported() {
        let mut config = ServeConfig::embedded_default();
        config.ops.api_keys = vec!["sekret".into()];
        let settings = Value::Object(settings(&config)).to_string();
        assert!(!settings.contains("sekret"), "{settings}");
        assert!(settings.contains("\"api_key\":true"), "{settings}");
    }
}
