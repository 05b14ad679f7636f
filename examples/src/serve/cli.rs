//! The command line, with vLLM's flag names.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::{Map, Value};

use super::LoraSettings;
use super::engine::{DEFAULT_MOCK_TEXT, EngineSource, MockSettings};
use super::http::HttpLimits;
use super::model::default_model_dir;
use super::ops::{Cors, Operations};
use super::tls::TlsSettings;
use super::{ParserChoice, ServeConfig};
use vllm_chat::pipeline::lora::{LoraModule, LoraRegistry};
use vllm_client::mock::MockLora;

/// `serve`: an OpenAI-compatible server in front of vLLM engines.
#[derive(Debug, Parser)]
#[command(
    about = "OpenAI-compatible server in front of vLLM EngineCore processes (or an embedded mock engine)"
)]
pub struct Args {
    /// Model directory (tokenizer.json or tokenizer.json.gz, tokenizer_config.json,
    /// config.json, generation_config.json). Default: the vendored Qwen3 tokenizer.
    pub model_dir: Option<PathBuf>,
    /// HTTP bind host.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// HTTP bind port.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Also serve vLLM's gRPC services (`vllm.Inference`, `vllm.Control`, health,
    /// reflection) on this TCP port of --host. Without it, no gRPC server is started.
    #[arg(long)]
    pub grpc_port: Option<u16>,
    /// Model name accepted and reported by the API (default: qwen3 for the vendored
    /// model, else MODEL_DIR as given).
    #[arg(long)]
    pub served_model_name: Option<String>,
    /// Tool-call parser: a vLLM parser name, `auto` (from the model name) or `none`.
    #[arg(long, default_value = "none")]
    pub tool_call_parser: String,
    /// Reasoning parser: a vLLM parser name, `auto` (from the model name) or `none`.
    #[arg(long, default_value = "none")]
    pub reasoning_parser: String,
    /// Let the model call tools when `tool_choice` is `auto`.
    #[arg(long)]
    pub enable_auto_tool_choice: bool,
    /// Server-side floor for structural-tag based tool calling: `auto` follows the
    /// request's tool choice and per-tool `strict`; `function` constrains the
    /// tool-call envelope of every request with tools; `parameter` also pins
    /// argument schemas, as if every tool were `strict: true`. Default: the tool
    /// parser's own level (`auto` for most).
    #[arg(long, value_parser = vllm_parser::serving::ToolStrictLevel::from_name)]
    pub tool_strict_level: Option<vllm_parser::serving::ToolStrictLevel>,
    /// Chat template: a file, or the template itself.
    #[arg(long)]
    pub chat_template: Option<String>,
    /// vLLM's `--tokenizer-mode`: auto, hf, mistral, deepseek_v32, deepseek_v4,
    /// deepseek_v41, kimi_k3, inkling or cohere. `auto` picks the renderer from the
    /// model directory as vLLM does (architecture, Mistral vocabularies, gpt_oss).
    #[arg(long, default_value = "auto")]
    pub tokenizer_mode: vllm_chat::TokenizerMode,
    /// JSON object of template variables applied to every chat request.
    #[arg(long)]
    pub default_chat_template_kwargs: Option<String>,
    /// Accept `chat_template` in requests.
    #[arg(long)]
    pub trust_request_chat_template: bool,
    /// Context length (default: from config.json).
    #[arg(long)]
    pub max_model_len: Option<u64>,
    /// Largest `logprobs` / `top_logprobs` a request may ask for.
    #[arg(long, default_value_t = 20)]
    pub max_logprobs: i64,
    /// Number of data-parallel engines.
    #[arg(long, default_value_t = 1)]
    pub data_parallel_size: u16,
    /// Host of the handshake socket that engines dial.
    #[arg(long, default_value = "127.0.0.1")]
    pub data_parallel_address: String,
    /// Port of the handshake socket that engines dial. Without it, mock engines run
    /// inside the server.
    #[arg(long)]
    pub data_parallel_rpc_port: Option<u16>,
    /// How long to wait for the engines at start-up.
    #[arg(long, default_value_t = 600)]
    pub engine_ready_timeout_secs: u64,
    /// Seconds a connection may take to send a request's headers, and may sit idle
    /// between requests, before the server closes it (on the gRPC port: to send
    /// HTTP/2's client preface).
    #[arg(long, env = "VLLM_HTTP_TIMEOUT_KEEP_ALIVE", default_value_t = 5)]
    pub http_timeout_keep_alive: u64,
    /// Open connections beyond this many are closed at once.
    #[arg(long, default_value_t = 8192)]
    pub max_connections: usize,
    /// Seconds to let requests in flight finish on SIGINT/SIGTERM before aborting
    /// them (0, vLLM's default: abort at once). A second signal aborts at once.
    #[arg(long, default_value_t = 0)]
    pub shutdown_timeout: u64,
    /// Threads that render and tokenize large requests at the same time (default:
    /// one per core); more wait for a free thread.
    #[arg(long)]
    pub renderer_num_workers: Option<usize>,
    /// Require `Authorization: Bearer KEY` on the `/v1` and `/inference` paths.
    #[arg(long, env = "VLLM_API_KEY")]
    pub api_key: Option<String>,
    /// Answer with an `X-Request-Id` header (the request's, or a new id).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub enable_request_id_headers: bool,
    /// CORS allowed origins, a JSON list (`[]`: no cross-origin access).
    #[arg(long, default_value = "[]")]
    pub allowed_origins: String,
    /// CORS allowed methods, a JSON list (`["*"]`: the standard set).
    #[arg(long, default_value = r#"["*"]"#)]
    pub allowed_methods: String,
    /// CORS allowed request headers, a JSON list (`["*"]`: mirror the request's).
    #[arg(long, default_value = r#"["*"]"#)]
    pub allowed_headers: String,
    /// Allow CORS credentials (cookies, authorization headers).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value_t = false)]
    pub allow_credentials: bool,
    /// Listen on this Unix domain socket; host and port are ignored.
    #[arg(long)]
    pub uds: Option<PathBuf>,
    /// Serve HTTPS with this certificate chain (PEM).
    #[arg(long)]
    pub ssl_certfile: Option<PathBuf>,
    /// The private key (PEM); default: the one in --ssl-certfile.
    #[arg(long)]
    pub ssl_keyfile: Option<PathBuf>,
    /// CA certificates that client certificates must chain to (mTLS).
    #[arg(long)]
    pub ssl_ca_certs: Option<PathBuf>,
    /// Client certificates: 0 none, 1 optional, 2 required (Python's `ssl.CERT_*`).
    #[arg(long, default_value_t = 0)]
    pub ssl_cert_reqs: u8,
    /// LoRA adapters to load at start-up: `name=path` or
    /// `{"name": …, "path": …, "base_model_name": …}`.
    #[arg(long, num_args = 1..)]
    pub lora_modules: Vec<String>,
    /// Embedded mock engine: accept LoRA adapters (real engines take this flag
    /// themselves).
    #[arg(long)]
    pub enable_lora: bool,
    /// Embedded mock engine: adapters in one batch.
    #[arg(long, default_value_t = 1)]
    pub max_loras: usize,
    /// Embedded mock engine: adapters kept loaded (default: --max-loras).
    #[arg(long)]
    pub max_cpu_loras: Option<usize>,
    /// Compute no request or scheduler statistics (`/metrics` stays at idle values).
    #[arg(long)]
    pub disable_log_stats: bool,
    /// Report the prompt tokens served from the engines' prefix caches in usage
    /// (`prompt_tokens_details.cached_tokens`).
    #[arg(long)]
    pub enable_prompt_tokens_details: bool,
    /// Output tokens batched into each streamed chunk (1: every engine output; a
    /// request's `stream_interval` may raise it). The first and last chunks go out at
    /// once.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub stream_interval: u32,
    /// Log a summary line for each completed request (prompt and output token counts,
    /// finish reason).
    #[arg(long)]
    pub enable_log_requests: bool,
    /// vLLM's KV-transfer configuration, a JSON object (e.g. `{"kv_connector":
    /// "NixlConnector", "kv_role": "kv_both"}`), as the engines were started with: a
    /// request with `kv_transfer_params.do_remote_prefill` that fails before reaching
    /// them makes the server tell their connector to free its prefill blocks. The
    /// embedded mock engine emulates the connector.
    #[arg(long)]
    pub kv_transfer_config: Option<String>,
    /// Embedded mock engine: the text of every answer (e.g. "<think>…</think>Hi" to
    /// show `--reasoning-parser qwen3`).
    #[arg(long, default_value = DEFAULT_MOCK_TEXT)]
    pub mock_text: String,
    /// Embedded mock engine: output tokens per second per request (0: unlimited).
    #[arg(long, default_value_t = 20.0)]
    pub mock_tokens_per_second: f64,
}

/// `--chat-template` is a path when such a file exists, else the template itself
/// (vLLM's `load_chat_template`).
pub fn load_chat_template(arg: &str) -> Result<String> {
    match std::fs::read_to_string(arg) {
        Ok(text) => Ok(text),
        Err(_) if arg.contains("{{") || arg.contains("{%") => Ok(arg.to_owned()),
        Err(e) => {
            Err(e).with_context(|| format!("--chat-template {arg}: not a file and not a template"))
        }
    }
}

/// A flag's JSON list of strings.
fn json_list(flag: &str, text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text).with_context(|| format!("{flag} must be a JSON list of strings"))
}

impl ParserChoice {
    fn parse(value: &str) -> Self {
        match value {
            "" | "none" => ParserChoice::None,
            "auto" => ParserChoice::Auto,
            name => ParserChoice::Named(name.to_owned()),
        }
    }
}

impl Args {
    /// The server configuration these flags describe.
    pub fn into_config(self) -> Result<ServeConfig> {
        let vendored = self.model_dir.is_none();
        let model_dir = self.model_dir.unwrap_or_else(default_model_dir);
        let served_model_name = self.served_model_name.unwrap_or_else(|| {
            if vendored {
                "qwen3".to_owned()
            } else {
                model_dir.display().to_string()
            }
        });
        let default_chat_template_kwargs: Map<String, Value> =
            match &self.default_chat_template_kwargs {
                Some(text) => serde_json::from_str(text)
                    .context("--default-chat-template-kwargs must be a JSON object")?,
                None => Map::new(),
            };
        let engine = match self.data_parallel_rpc_port {
            Some(rpc_port) => EngineSource::External {
                address: self.data_parallel_address,
                rpc_port,
            },
            None => EngineSource::Embedded(MockSettings {
                text: self.mock_text,
                tokens_per_second: self.mock_tokens_per_second,
            }),
        };
        let kv_transfer_config = self
            .kv_transfer_config
            .as_deref()
            .map(|text| {
                serde_json::from_str::<Map<String, Value>>(text)
                    .context("--kv-transfer-config must be a JSON object")
            })
            .transpose()?;
        Ok(ServeConfig {
            kv_transfer_config,
            model_dir,
            served_model_name,
            host: self.host,
            port: self.port,
            grpc_port: self.grpc_port,
            tool_call_parser: ParserChoice::parse(&self.tool_call_parser),
            reasoning_parser: ParserChoice::parse(&self.reasoning_parser),
            enable_auto_tool_choice: self.enable_auto_tool_choice,
            tool_strict_level: self.tool_strict_level,
            chat_template: self
                .chat_template
                .as_deref()
                .map(load_chat_template)
                .transpose()?,
            default_chat_template_kwargs,
            tokenizer_mode: self.tokenizer_mode,
            trust_request_chat_template: self.trust_request_chat_template,
            max_model_len: self.max_model_len,
            max_logprobs: self.max_logprobs,
            data_parallel_size: self.data_parallel_size,
            engine,
            engine_ready_timeout: Duration::from_secs(self.engine_ready_timeout_secs),
            http: HttpLimits {
                keep_alive_timeout: Duration::from_secs(self.http_timeout_keep_alive.max(1)),
                max_connections: self.max_connections,
            },
            shutdown_timeout: Some(Duration::from_secs(self.shutdown_timeout)),
            renderer_num_workers: self.renderer_num_workers,
            dev_mode: super::control::dev_mode_from_env(),
            disable_log_stats: self.disable_log_stats,
            enable_prompt_tokens_details: self.enable_prompt_tokens_details,
            stream_interval: self.stream_interval,
            enable_log_requests: self.enable_log_requests,
            uds: self.uds,
            lora: LoraSettings {
                modules: self
                    .lora_modules
                    .iter()
                    .map(|m| LoraModule::parse(m).map_err(anyhow::Error::msg))
                    .collect::<Result<_>>()?,
                runtime_updates: super::control::env_flag("VLLM_ALLOW_RUNTIME_LORA_UPDATING"),
                allowed_prefixes: LoraRegistry::allowed_prefixes_from_env(),
                mock: self.enable_lora.then_some(MockLora {
                    max_loras: self.max_loras,
                    max_cpu_loras: self.max_cpu_loras,
                }),
            },
            tls: match self.ssl_certfile {
                Some(certfile) => Some(TlsSettings {
                    certfile,
                    keyfile: self.ssl_keyfile,
                    ca_certs: self.ssl_ca_certs,
                    cert_reqs: self.ssl_cert_reqs,
                }),
                None if self.ssl_keyfile.is_some() => {
                    anyhow::bail!("--ssl-keyfile needs --ssl-certfile")
                }
                None => None,
            },
            ops: Operations {
                api_keys: self.api_key.into_iter().collect(),
                request_id_headers: self.enable_request_id_headers,
                cors: {
                    let origins = json_list("--allowed-origins", &self.allowed_origins)?;
                    (!origins.is_empty())
                        .then(|| -> Result<Cors> {
                            Ok(Cors {
                                origins,
                                methods: json_list("--allowed-methods", &self.allowed_methods)?,
                                headers: json_list("--allowed-headers", &self.allowed_headers)?,
                                credentials: self.allow_credentials,
                            })
                        })
                        .transpose()?
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vllm_parser::serving::ToolStrictLevel;

    #[test]
    fn tool_strict_level_takes_vllms_names() {
        let config = Args::try_parse_from(["serve", "--tool-strict-level", "Function"])
            .unwrap()
            .into_config()
            .unwrap();
        assert_eq!(config.tool_strict_level, Some(ToolStrictLevel::Function));
        let unset = Args::try_parse_from(["serve"])
            .unwrap()
            .into_config()
            .unwrap();
        assert_eq!(unset.tool_strict_level, None);
        let error = Args::try_parse_from(["serve", "--tool-strict-level", "strict"]).unwrap_err();
        assert!(
            error.to_string().contains(
                "Unknown tool strict level 'strict'; expected one of auto, function, parameter."
            ),
            "{error}"
        );
    }
}
