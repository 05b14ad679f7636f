//! One chat request, printed as it streams: the smallest use of vllm-chat's pipeline.
//! Against an embedded mock engine by default, or real headless vLLM engines.
//!
//! ```text
//! cargo run --release --example chat-once -- "What is the capital of France?"
//! cargo run --release --example chat-once -- --port 13345 "Hello"   # engines dial :13345
//! ```
//!
//! With real engines, start them with `vllm serve MODEL --headless --data-parallel-address
//! 127.0.0.1 --data-parallel-rpc-port 13345 --data-parallel-size 1` and give the same
//! model directory with `--model`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use vllm_chat::RendererOptions;
use vllm_chat::openai::{ChatCompletionRequest, Emit};
use vllm_chat::pipeline::{
    Accepted, ChatEvent, EventStream, Model, Pipeline, PipelineConfig, Routing,
};
use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
use vllm_client::{ClientConfig, EngineCoreClient};

#[derive(Debug, Parser)]
#[command(about = "One streamed chat request through vllm-chat's pipeline")]
struct Args {
    /// The user's message.
    message: String,
    /// Model directory (tokenizer and chat template); default: the vendored Qwen3.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Wait for real engines dialling this port instead of starting a mock engine.
    #[arg(long)]
    port: Option<u16>,
    /// The mock engine's answer.
    #[arg(long, default_value = "Paris is the capital of France.")]
    mock_text: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = args
        .model
        .unwrap_or_else(vllm_examples::serve::model::default_model_dir);
    let options = RendererOptions {
        served_model_name: Some("model".into()),
        ..RendererOptions::default()
    };
    let model = Arc::new(Model::load(&dir, options).context("loading the model directory")?);

    // The engines: real ones dialling --port, or one mock engine in this process.
    let port = match args.port {
        Some(port) => port,
        None => std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port(),
    };
    let connecting = tokio::spawn(EngineCoreClient::connect(ClientConfig::handshake(
        "127.0.0.1",
        port,
        1,
    )));
    let _mock = args.port.is_none().then(|| -> anyhow::Result<_> {
        let mock = MockConfig {
            output: OutputMode::FixedText(model.encode(&args.mock_text)?),
            eos_token_id: model.eos_token_id,
            tokens_per_second: 20.0,
            ..MockConfig::default()
        };
        Ok(MockEngine::spawn(
            format!("tcp://127.0.0.1:{port}"),
            0,
            mock,
        ))
    });
    let client = connecting.await?.context("connecting to the engines")?;

    let parsers = model.serving_parsers(None, None, false)?;
    let pipeline = Pipeline::new(model, client, PipelineConfig::new("model", parsers));
    let request: ChatCompletionRequest = serde_json::from_value(serde_json::json!({
        "model": "model",
        "stream": true,
        "messages": [{"role": "user", "content": args.message}],
    }))?;
    let mut stream = pipeline
        .chat(request, Routing::default())
        .await?
        .into_stream();
    while let Some(event) = stream.next_event().await {
        match event {
            ChatEvent::Delta { choice, .. } => {
                for text in [choice.delta.reasoning, choice.delta.content] {
                    if let Emit::Set(Some(text)) = text {
                        print!("{text}");
                    }
                }
                std::io::stdout().flush()?;
            }
            ChatEvent::Error(error) => anyhow::bail!("{}", error.message),
            ChatEvent::Chunk(_) => {}
        }
    }
    println!();
    Ok(())
}
