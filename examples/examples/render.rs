//! An engine-free render server, a drop-in for `vllm-rs render MODEL` / `vllm launch render`.
//!
//! ```text
//! cargo run --release -p vllm-examples --example render -- /models/Qwen3-8B --port 8100
//! curl -s localhost:8100/v1/chat/completions/render -H 'content-type: application/json' -d '{"messages":[{"role":"user","content":"Hi"}]}'
//! ```
//!
//! Endpoints: `POST /v1/chat/completions/render`, `POST /v1/completions/render`,
//! `POST /tokenize`, `POST /detokenize`, `GET /v1/models`, `GET /health` — the
//! engine-free routes of `serve` (`vllm_examples::serve::tokens`), so both servers
//! answer them identically. Bodies and errors have vLLM 0.33.0's shapes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use vllm_chat::RendererOptions;
use vllm_examples::serve::cli::load_chat_template;
use vllm_examples::serve::model::Model;
use vllm_examples::serve::state::ModelApi;
use vllm_examples::serve::tokens::render_router;

/// mimalloc, as in `serve`: rendering allocates many short-lived small values (template
/// values, token pieces); vLLM's `vllm-rs` uses mimalloc too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command line, named as `vllm-rs render` names it.
#[derive(Parser, Debug)]
#[command(about = "Engine-free request rendering (vLLM render API)")]
struct Args {
    /// Local model directory (tokenizer.json, tokenizer_config.json, config.json, …).
    model_dir: PathBuf,
    /// HTTP bind host.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// HTTP bind port.
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Public model name accepted by the API (default: MODEL_DIR as given).
    #[arg(long)]
    served_model_name: Option<String>,
    /// Chat template: a file path or an inline template.
    #[arg(long)]
    chat_template: Option<String>,
    /// vLLM's `--tokenizer-mode` (auto, hf, mistral, deepseek_v32, deepseek_v4,
    /// deepseek_v41, kimi_k3, inkling, cohere): the renderer of chat requests.
    #[arg(long, default_value = "auto")]
    tokenizer_mode: vllm_chat::TokenizerMode,
    /// JSON object merged into every chat-template render.
    #[arg(long)]
    default_chat_template_kwargs: Option<String>,
    /// Accept `chat_template` in requests.
    #[arg(long, default_value_t = false)]
    trust_request_chat_template: bool,
    /// Render without tools when `tool_choice` is `none`.
    #[arg(long, default_value_t = false)]
    exclude_tools_when_tool_choice_none: bool,
    /// Override the context length from config.json.
    #[arg(long)]
    max_model_len: Option<u64>,
    /// Tool-call parser (`none`: no tool parser): its `adjust_request` applies to
    /// rendered chat requests (e.g. a forced tool choice's structured outputs), as the
    /// tool parser of a server with `--enable-auto-tool-choice`.
    #[arg(long)]
    tool_call_parser: Option<String>,
    /// vLLM's `--tool-strict-level` (auto, function, parameter): the floor of the tool
    /// parser's structural tags.
    #[arg(long, value_parser = vllm_parser::serving::ToolStrictLevel::from_name)]
    tool_strict_level: Option<vllm_parser::serving::ToolStrictLevel>,
    /// Reasoning parser (`none`: no reasoning parser): its `adjust_request` applies and
    /// rendered chat requests carry `reasoning_parser_kwargs`.
    #[arg(long)]
    reasoning_parser: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    let model_root = args.model_dir.display().to_string();
    let served_model_name = args.served_model_name.clone().unwrap_or(model_root.clone());
    let default_chat_template_kwargs = match &args.default_chat_template_kwargs {
        Some(text) => serde_json::from_str(text)
            .context("--default-chat-template-kwargs must be a JSON object")?,
        None => Default::default(),
    };
    let options = RendererOptions {
        chat_template: args
            .chat_template
            .as_deref()
            .map(load_chat_template)
            .transpose()?,
        default_chat_template_kwargs,
        trust_request_chat_template: args.trust_request_chat_template,
        exclude_tools_when_tool_choice_none: args.exclude_tools_when_tool_choice_none,
        served_model_name: Some(served_model_name.clone()),
        max_model_len: args.max_model_len,
        ..Default::default()
    };
    let model = std::sync::Arc::new(Model::load_with_mode(
        &args.model_dir,
        args.tokenizer_mode,
        options,
    )?);
    let named = |name: &Option<String>| name.clone().filter(|n| !matches!(n.as_str(), "none" | ""));
    let (reasoning, tool) = (named(&args.reasoning_parser), named(&args.tool_call_parser));
    let mut parsers =
        model.serving_parsers(reasoning.as_deref(), tool.as_deref(), tool.is_some())?;
    if let Some(level) = args.tool_strict_level {
        parsers = parsers.with_tool_strict_level(level);
    }
    let api = ModelApi::new(model, &served_model_name, &model_root).with_parsers(parsers);
    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .context("--host/--port")?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("render server on http://{addr}");
    axum::serve(listener, render_router(Arc::new(api))).await?;
    Ok(())
}
