//! An OpenAI-compatible server in front of vLLM engines, or of an embedded mock engine.
//!
//! ```text
//! cargo run --release --example serve            # vendored Qwen3 tokenizer + mock engine on :8000
//! curl -N localhost:8000/v1/chat/completions -H 'Content-Type: application/json' \
//!     -d '{"model":"qwen3","messages":[{"role":"user","content":"Hi"}],"stream":true}'
//!
//! # In front of real engines: the server binds the handshake port, engines dial it.
//! cargo run --release --example serve -- /models/Qwen3-8B --data-parallel-size 2 \
//!     --data-parallel-address 127.0.0.1 --data-parallel-rpc-port 13345 \
//!     --reasoning-parser qwen3 --tool-call-parser hermes --enable-auto-tool-choice
//! vllm serve /models/Qwen3-8B --headless --data-parallel-size 2 \
//!     --data-parallel-address 127.0.0.1 --data-parallel-rpc-port 13345
//!
//! # vLLM's gRPC services (vllm.Inference, vllm.Control, health, reflection) as well:
//! cargo run --release --example serve -- --grpc-port 50051
//! grpcurl -plaintext -d '{"token_ids": {"ids": [9707, 11]}}' localhost:50051 vllm.Inference/Generate
//! ```
//!
//! The server itself lives in `vllm_examples::serve`.

use clap::Parser;
use vllm_examples::serve::{Server, cli::Args, shutdown_signal};

/// mimalloc: a streamed token allocates a few small buffers (chunk, logprob texts) that
/// live for microseconds; mimalloc serves those faster than glibc's allocator
/// (docs/performance.md). vLLM's `vllm-rs` uses it too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let config = Args::parse().into_config()?;
    let model = config.served_model_name.clone();
    let server = Server::bind(config).await?;
    let endpoint = server.endpoint();
    tracing::info!("serving {model} on {endpoint}");
    if endpoint.starts_with("http") {
        tracing::info!(
            "try: curl -N {endpoint}/v1/chat/completions -H 'Content-Type: application/json' \
             -d '{{\"model\":\"{model}\",\"messages\":[{{\"role\":\"user\",\"content\":\"Hi\"}}],\"stream\":true}}'"
        );
    }
    server.serve(shutdown_signal()).await
}
