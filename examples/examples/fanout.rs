//! Fan-out benchmark of `EngineCoreClient`: N concurrent request streams fed by a mock
//! engine in another process, measuring the client process's CPU time per delivered
//! token, beside vLLM's Python fan-out (`vllm-client/scripts/bench_fanout.py`) when the
//! reference environment is available.
//!
//! ```sh
//! cargo run --release --example fanout -- --streams 2000 --tokens 100
//! ```
//!
//! At an unlimited token rate the engine outruns the client, and outputs that queue up
//! for a stream are merged (as vLLM's `RequestOutputCollector` merges them): the table's
//! "tokens / output" column says how much. `--rate` paces the engine so that the
//! consumers keep up and every engine step is delivered as its own output.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::StreamExt;
use vllm_client::mock::{MockConfig, MockEngine, OutputMode};
use vllm_client::protocol::{EngineCoreRequest, SamplingParams};
use vllm_client::{ClientConfig, EngineCoreClient};

#[derive(Parser)]
struct Args {
    /// Concurrent request streams.
    #[arg(long, default_value_t = 2000)]
    streams: usize,
    /// Tokens per stream.
    #[arg(long, default_value_t = 100)]
    tokens: usize,
    /// Run the client on a single-threaded tokio runtime (no cross-thread wake-ups).
    #[arg(long)]
    current_thread: bool,
    /// Tokens per second per stream from the engine; 0 is as fast as it can.
    #[arg(long, default_value_t = 0.0)]
    rate: f64,
    /// Python of the vLLM reference environment, for the side-by-side figure.
    #[arg(long, env = "VLLM_REFERENCE_PYTHON")]
    python: Option<String>,
    /// Internal: run the mock engine side, dialing this handshake address.
    #[arg(long, hide = true)]
    engine_child: Option<String>,
}

/// CPU time (user + system) of this process, all threads, from /proc (Linux): the sum
/// of every thread's nanosecond run time (`/proc/self/task/*/schedstat`), and the
/// process's tick count (`/proc/self/stat`, 10 ms resolution, which also counts threads
/// that exited).
fn process_cpu() -> Result<(Duration, Duration)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after_comm = stat
        .rsplit_once(')')
        .context("malformed /proc/self/stat")?
        .1;
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat; after the comm they are 11 and 12.
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    let mut nanos = 0u64;
    for task in std::fs::read_dir("/proc/self/task")? {
        let schedstat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        nanos += schedstat
            .split_whitespace()
            .next()
            .context("empty schedstat")?
            .parse::<u64>()?;
    }
    Ok((
        Duration::from_nanos(nanos),
        Duration::from_secs_f64(ticks as f64 / 100.0),
    ))
}

/// CPU time between two readings of [`process_cpu`]: the nanosecond sum, unless threads
/// exited in between (their time is then only in the tick count).
fn cpu_between(start: (Duration, Duration), end: (Duration, Duration)) -> Duration {
    let (fine, ticks) = (end.0.saturating_sub(start.0), end.1.saturating_sub(start.1));
    if fine + Duration::from_millis(20) < ticks {
        ticks
    } else {
        fine
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

struct KillOnDrop(Child);
impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let runtime = if args.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()?;
    runtime.block_on(run(args))
}

async fn run(args: Args) -> Result<()> {
    if let Some(address) = args.engine_child {
        let config = MockConfig {
            output: OutputMode::Random { seed: 1 },
            tokens_per_second: args.rate,
            max_num_seqs: args.streams,
            ..MockConfig::default()
        };
        MockEngine::spawn(address, 0, config).wait().await?;
        return Ok(());
    }

    let port = free_port()?;
    let connecting = tokio::spawn(EngineCoreClient::connect(
        ClientConfig::handshake("127.0.0.1", port, 1).with_ready_timeout(Duration::from_secs(60)),
    ));
    let _engine = KillOnDrop(
        Command::new(std::env::current_exe()?)
            .args([
                "--streams",
                &args.streams.to_string(),
                "--rate",
                &args.rate.to_string(),
                "--engine-child",
                &format!("tcp://127.0.0.1:{port}"),
            ])
            .stdin(Stdio::null())
            .spawn()?,
    );
    let client = connecting.await??;

    let mut params = SamplingParams {
        max_tokens: Some(args.tokens as i64),
        ignore_eos: true,
        ..SamplingParams::default()
    };
    params.apply_post_init();
    let cpu0 = process_cpu()?;
    let wall0 = Instant::now();
    let mut consumers = Vec::with_capacity(args.streams);
    for i in 0..args.streams {
        let request = EngineCoreRequest::new(format!("req-{i:05}"), vec![1, 2, 3], params.clone());
        let mut stream = client.generate(request).await?;
        consumers.push(tokio::spawn(async move {
            let (mut tokens, mut outputs) = (0usize, 0usize);
            while let Some(output) = stream.next().await {
                tokens += output?.new_token_ids.len();
                outputs += 1;
            }
            Ok::<_, vllm_client::ClientError>((tokens, outputs))
        }));
    }
    let (mut delivered, mut outputs) = (0, 0);
    for consumer in consumers {
        let (tokens, n) = consumer.await??;
        delivered += tokens;
        outputs += n;
    }
    let wall = wall0.elapsed();
    let cpu = cpu_between(cpu0, process_cpu()?);
    if delivered != args.streams * args.tokens {
        bail!(
            "delivered {delivered} tokens, expected {}",
            args.streams * args.tokens
        );
    }
    let ours = cpu.as_secs_f64() / delivered as f64 * 1e6;
    println!(
        "| implementation | streams | tokens | tokens / output | CPU s | wall s | CPU µs / token |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| vllm-client (ZMQ recv + decode + fan-out + stream consumers; {} runtime{}) | {} | {delivered} | {:.2} | {:.3} | {:.2} | {ours:.3} |",
        if args.current_thread {
            "current-thread"
        } else {
            "multi-thread"
        },
        if args.rate > 0.0 {
            format!(", engine at {} tokens/s per stream", args.rate)
        } else {
            String::new()
        },
        args.streams,
        delivered as f64 / outputs as f64,
        cpu.as_secs_f64(),
        wall.as_secs_f64()
    );
    if let Some(python) = args.python {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../vllm-client/scripts/bench_fanout.py"
        );
        let out = Command::new(python)
            .args([
                script,
                "--streams",
                &args.streams.to_string(),
                "--tokens",
                &args.tokens.to_string(),
            ])
            .env("HF_HUB_OFFLINE", "1")
            .stderr(Stdio::null())
            .output()?;
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("python output: {}", String::from_utf8_lossy(&out.stdout)))?;
        let theirs = json["cpu_us_per_token"].as_f64().context("no figure")?;
        println!(
            "| vLLM Python (msgspec decode + RequestOutputCollector fan-out) | {} | {} | {:.2} | {:.3} | {:.2} | {theirs:.3} |",
            json["streams"],
            json["tokens"],
            json["tokens"].as_f64().unwrap_or(0.0) / json["outputs"].as_f64().unwrap_or(1.0),
            json["cpu_s"].as_f64().unwrap_or(0.0),
            json["wall_s"].as_f64().unwrap_or(0.0)
        );
        println!("\nspeed-up: {:.1}x less CPU per token", theirs / ours);
    }
    Ok(())
}
