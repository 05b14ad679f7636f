//! An engine-free render server, a drop-in for `vllm-rs render MODEL` / `vllm launch render`.
//!
//! ```text
//! cargo run --release -p vllm-examples --example render -- /models/Qwen3-8B --port 8100
//! curl -s localhost:8100/v1/chat/completions/render -d '{"messages":[{"role":"user","content":"Hi"}]}'
//! ```
//!
//! Endpoints: `POST /v1/chat/completions/render`, `POST /v1/completions/render`,
//! `POST /tokenize`, `POST /detokenize`, `GET /v1/models`, `GET /health`.
//! Bodies and errors have vLLM 0.33.0's shapes (see the vllm-chat crate).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use clap::Parser;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use vllm_chat::openai::{ChatCompletionRequest, CompletionRequest, ErrorInfo, ErrorResponse};
use vllm_chat::{ChatRenderer, ModelFiles, RenderError, RendererOptions};

/// Command line, named as `vllm-rs render` names it.
#[derive(Parser, Debug)]
#[command(about = "Engine-free request rendering (vLLM render API)")]
struct Args {
    /// Local model directory (tokenizer.json, tokenizer_config.json, config.json, …).
    model_dir: String,
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
    /// Tool-call parser (accepted for compatibility; rendering does not depend on it).
    #[arg(long)]
    tool_call_parser: Option<String>,
    /// Reasoning parser (accepted for compatibility; `reasoning_parser_kwargs` stays null).
    #[arg(long)]
    reasoning_parser: Option<String>,
}

struct App {
    renderer: ChatRenderer,
    model_name: String,
    model_dir: String,
}

/// `--chat-template` is a path when such a file exists, else the template itself
/// (vLLM's `load_chat_template`).
fn load_chat_template(arg: &str) -> anyhow::Result<String> {
    match std::fs::read_to_string(arg) {
        Ok(text) => Ok(text),
        Err(_) if arg.contains("{{") || arg.contains("{%") => Ok(arg.to_owned()),
        Err(e) => {
            Err(e).with_context(|| format!("--chat-template {arg}: not a file and not a template"))
        }
    }
}

fn build(args: &Args) -> anyhow::Result<App> {
    let files = ModelFiles::from_dir(&args.model_dir)?;
    let model_name = args
        .served_model_name
        .clone()
        .unwrap_or_else(|| args.model_dir.clone());
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
        served_model_name: Some(model_name.clone()),
        max_model_len: args.max_model_len,
        ..Default::default()
    };
    let renderer = ChatRenderer::new(files, options)?;
    anyhow::ensure!(
        renderer.tokenizer().is_some(),
        "{}: no tokenizer.json",
        args.model_dir
    );
    Ok(App {
        renderer,
        model_name,
        model_dir: args.model_dir.clone(),
    })
}

fn json_response(status: StatusCode, body: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn ok<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            e.to_string(),
            None,
        ),
    }
}

fn error(status: StatusCode, kind: &str, message: String, param: Option<String>) -> Response {
    let body = ErrorResponse {
        error: ErrorInfo {
            message,
            kind: kind.into(),
            param,
            code: status.as_u16(),
        },
    };
    json_response(status, serde_json::to_vec(&body).unwrap_or_default())
}

fn render_error(err: RenderError) -> Response {
    let body = ErrorResponse::from_render_error(&err);
    let status = StatusCode::from_u16(body.error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, serde_json::to_vec(&body).unwrap_or_default())
}

/// Parses a JSON body; a malformed one is a 400 with vLLM's error shape.
fn parse<T: DeserializeOwned>(body: &Bytes) -> Result<T, Box<Response>> {
    serde_json::from_slice(body).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            e.to_string(),
            None,
        ))
    })
}

async fn render_chat(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: ChatCompletionRequest = match parse(&body) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    match app.renderer.render_chat(&request) {
        Ok(generate) => ok(&generate),
        Err(e) => render_error(e),
    }
}

async fn render_completion(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let request: CompletionRequest = match parse(&body) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    match app.renderer.render_completion(&request) {
        Ok(generate) => ok(&generate),
        Err(e) => render_error(e),
    }
}

/// `/tokenize`: a completion-style `{"prompt"}` or a chat-style `{"messages"}` body.
async fn tokenize(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let value: Value = match parse(&body) {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let return_token_strs = value
        .get("return_token_strs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let tokens = if value.get("messages").is_some() {
        let request: ChatCompletionRequest = match serde_json::from_value(value) {
            Ok(r) => r,
            Err(e) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "BadRequestError",
                    e.to_string(),
                    None,
                );
            }
        };
        app.renderer.render(&request).map(|p| p.token_ids)
    } else {
        let Some(prompt) = value.get("prompt").and_then(Value::as_str) else {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestError",
                "`prompt` or `messages` is required".into(),
                None,
            );
        };
        let add_special_tokens = value
            .get("add_special_tokens")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        app.renderer.encode(prompt, add_special_tokens)
    };
    let tokens = match tokens {
        Ok(t) => t,
        Err(e) => return render_error(e),
    };
    let token_strs = return_token_strs.then(|| {
        let tokenizer = app.renderer.tokenizer();
        tokens
            .iter()
            .map(|&t| {
                tokenizer
                    .and_then(|tk| tk.id_to_token(t))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
    });
    ok(&json!({
        "count": tokens.len(),
        "max_model_len": app.renderer.max_model_len(),
        "tokens": tokens,
        "token_strs": token_strs,
    }))
}

async fn detokenize(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let value: Value = match parse(&body) {
        Ok(v) => v,
        Err(resp) => return *resp,
    };
    let tokens: Vec<u32> = match value.get("tokens").cloned().map(serde_json::from_value) {
        Some(Ok(t)) => t,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "BadRequestError",
                "`tokens` must be a list of token ids".into(),
                Some("tokens".into()),
            );
        }
    };
    let Some(tokenizer) = app.renderer.tokenizer() else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "no tokenizer".into(),
            None,
        );
    };
    match tokenizer.decode(&tokens, false) {
        Ok(prompt) => ok(&json!({ "prompt": prompt })),
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            "BadRequestError",
            e.to_string(),
            Some("tokens".into()),
        ),
    }
}

async fn models(State(app): State<Arc<App>>) -> Response {
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    ok(&json!({
        "object": "list",
        "data": [{
            "id": app.model_name,
            "object": "model",
            "created": created,
            "owned_by": "vllm",
            "root": app.model_dir,
            "parent": null,
            "max_model_len": app.renderer.max_model_len(),
        }]
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let args = Args::parse();
    if let Some(p) = args
        .reasoning_parser
        .as_deref()
        .filter(|p| !matches!(*p, "none" | ""))
    {
        tracing::warn!(
            "--reasoning-parser {p}: accepted, but reasoning_parser_kwargs/reasoning_ended are not resolved"
        );
    }
    if let Some(p) = &args.tool_call_parser {
        tracing::info!("--tool-call-parser {p}: rendering does not depend on it");
    }
    let app = Arc::new(build(&args)?);
    let router = Router::new()
        .route("/v1/chat/completions/render", post(render_chat))
        .route("/v1/completions/render", post(render_completion))
        .route("/tokenize", post(tokenize))
        .route("/detokenize", post(detokenize))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { StatusCode::OK }))
        .with_state(app);
    let addr: SocketAddr = format!("{}:{}", args.host, args.port)
        .parse()
        .context("--host/--port")?;
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("render server on http://{addr}");
    axum::serve(listener, router).await?;
    Ok(())
}
