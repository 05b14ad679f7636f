//! An RL rollout: tokens in, `n` seeded samples with logprobs out, through
//! `EngineCoreClient::generate_n` (vLLM's parallel sampling), against two embedded mock
//! engines, or real headless vLLM engines dialling `--port`.
//!
//! ```text
//! cargo run --release --example rollout                      # 2 mock engines, 4 prompts × 8 samples
//! cargo run --release --example rollout -- --port 13345 --engines 2 --external
//! ```
//!
//! Prints one JSON line per sample: prompt, index, tokens, the sampled tokens' logprobs.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use futures::StreamExt;
use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
use vllm_client::protocol::{EngineCoreRequest, RequestOutputKind, SamplingParams};
use vllm_client::{ClientConfig, EngineCoreClient};

#[derive(Debug, Parser)]
#[command(about = "RL rollout: n seeded samples per prompt, with logprobs")]
struct Args {
    /// Handshake port the engines dial (0: any free port, with embedded mock engines).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Data-parallel engines.
    #[arg(long, default_value_t = 2)]
    engines: u16,
    /// Wait for real engines (`vllm serve MODEL --headless --data-parallel-rpc-port
    /// PORT …`) instead of starting mock engines.
    #[arg(long)]
    external: bool,
    /// Samples per prompt.
    #[arg(long, default_value_t = 8)]
    n: usize,
    /// Tokens per sample.
    #[arg(long, default_value_t = 16)]
    max_tokens: i64,
    /// The rollout's seed (sample i uses seed + i, as vLLM does).
    #[arg(long, default_value_t = 1234)]
    seed: i64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let port = match args.port {
        0 => std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port(),
        port => port,
    };
    let config = ClientConfig::handshake("127.0.0.1", port, args.engines)
        .with_ready_timeout(Duration::from_secs(if args.external { 600 } else { 30 }));
    let connecting = tokio::spawn(EngineCoreClient::connect(config));
    let _mocks: Vec<_> = if args.external {
        eprintln!("waiting for {} engine(s) on port {port}", args.engines);
        Vec::new()
    } else {
        let mock = MockConfig {
            output: OutputMode::Random { seed: 7 },
            data_parallel_size: args.engines.into(),
            ..MockConfig::default()
        };
        (0..args.engines)
            .map(|rank| MockEngine::spawn(format!("tcp://127.0.0.1:{port}"), rank, mock.clone()))
            .collect()
    };
    let client = connecting.await?.context("connecting to the engines")?;

    let prompts: Vec<Vec<u32>> = (0..4).map(|p| vec![100 + p, 200, 300]).collect();
    for (p, prompt) in prompts.into_iter().enumerate() {
        let mut params = SamplingParams {
            n: args.n as i64,
            seed: Some(args.seed),
            temperature: 1.0,
            max_tokens: Some(args.max_tokens),
            logprobs: Some(0), // the sampled token's logprob
            output_kind: RequestOutputKind::FinalOnly, // one whole output per sample
            ..SamplingParams::default()
        };
        params.apply_post_init();
        let request = EngineCoreRequest::new(format!("rollout-{p}"), prompt, params);
        let mut stream = client.generate_n(request).await?;
        while let Some((index, output)) = stream.next().await {
            let output = output?;
            let logprobs: Vec<f32> = output.new_logprobs.as_ref().map_or(Vec::new(), |lists| {
                (0..lists.rows())
                    .filter_map(|row| Some(lists.entry(row, 0)?.1))
                    .collect()
            });
            let line = serde_json::json!({
                "prompt": p,
                "index": index,
                "tokens": output.new_token_ids,
                "logprobs": logprobs,
                "finish_reason": output.finish_reason.map(|r| r.as_str()),
            });
            println!("{line}");
        }
    }
    client.shutdown();
    Ok(())
}
