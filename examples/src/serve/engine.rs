//! The engine link: external vLLM engines that dial the handshake address, or mock
//! engines embedded in the process (the default, for trying the server without a GPU).

use std::time::Duration;

use anyhow::{Context, Result};
use vllm_client::mock::{MockConfig, MockEngine, MockEngineHandle, OutputMode};
use vllm_client::{ClientConfig, EngineCoreClient};

use super::model::Model;

/// What the embedded mock engines answer.
#[derive(Debug, Clone, PartialEq)]
pub struct MockSettings {
    /// The text every answer consists of (tokenized with the model's tokenizer).
    pub text: String,
    /// Output tokens per second per request (0: as fast as possible).
    pub tokens_per_second: f64,
}

impl Default for MockSettings {
    fn default() -> Self {
        Self {
            text: DEFAULT_MOCK_TEXT.into(),
            tokens_per_second: 20.0,
        }
    }
}

/// The embedded mock engine's default answer.
pub const DEFAULT_MOCK_TEXT: &str = "Hello! I am a mock engine running inside the server, \
so every answer is this same text, streamed token by token. Start the server with \
--data-parallel-rpc-port and point real vLLM engines at it to get real answers.";

/// Where the engines come from.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineSource {
    /// Mock engines in this process (`--data-parallel-size` of them).
    Embedded(MockSettings),
    /// Headless vLLM engines (`vllm serve MODEL --headless --data-parallel-address H
    /// --data-parallel-rpc-port P`) dial `tcp://address:rpc_port`.
    External {
        /// `--data-parallel-address`.
        address: String,
        /// `--data-parallel-rpc-port`.
        rpc_port: u16,
    },
}

/// The connected engines: the client, and the embedded mocks when there are any.
pub struct Engines {
    /// The engine link.
    pub client: EngineCoreClient,
    /// The embedded mock engines, by rank (empty for external engines).
    pub mocks: Vec<MockEngineHandle>,
}

/// A free local TCP port (bound then released).
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Binds the handshake socket and waits for `engine_count` engines; starts them first
/// when they are embedded (emulating the KV connector `kv_connector`, if any).
pub async fn connect(
    source: &EngineSource,
    engine_count: u16,
    ready_timeout: Duration,
    model: &Model,
    stats: Option<std::sync::Arc<dyn vllm_client::client::stats::StatsObserver>>,
    lora: Option<vllm_client::mock::MockLora>,
    kv_connector: Option<String>,
) -> Result<Engines> {
    let (host, port) = match source {
        EngineSource::Embedded(_) => ("127.0.0.1".to_owned(), free_port()?),
        EngineSource::External { address, rpc_port } => (address.clone(), *rpc_port),
    };
    let mut config =
        ClientConfig::handshake(&host, port, engine_count).with_ready_timeout(ready_timeout);
    if let Some(observer) = stats {
        config = config.with_stats(observer);
    }
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let mocks = match source {
        EngineSource::Embedded(settings) => {
            let mock = MockConfig {
                output: OutputMode::FixedText(model.encode(&settings.text)?),
                eos_token_id: model.eos_token_id,
                tokens_per_second: settings.tokens_per_second,
                data_parallel_size: usize::from(engine_count),
                lora,
                kv_connector,
                ..MockConfig::default()
            };
            (0..engine_count)
                .map(|rank| MockEngine::spawn(format!("tcp://{host}:{port}"), rank, mock.clone()))
                .collect()
        }
        EngineSource::External { .. } => {
            tracing::info!(
                "waiting for {engine_count} engine(s): start them with `vllm serve MODEL --headless \
                 --data-parallel-address {host} --data-parallel-rpc-port {port} --data-parallel-size {engine_count}`"
            );
            Vec::new()
        }
    };
    let client = connecting
        .await
        .context("engine connection task failed")?
        .context("connecting to the engines")?;
    Ok(Engines { client, mocks })
}
