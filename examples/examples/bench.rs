//! A load generator for any OpenAI-compatible server (`serve`, vLLM, vllm-rs, …).
//!
//! ```text
//! cargo run --release --example bench -- --url http://127.0.0.1:8000 \
//!     --endpoint chat --concurrency 64 --num-requests 1000 --input-len 256 --output-len 128
//! cargo run --release --example bench -- --endpoint completions --request-rate 50 \
//!     --duration 30 --random-range-ratio 0.5 --output-json result.json
//! ```
//!
//! Requests stream by default (`--no-stream` to turn it off; TTFT and inter-token
//! latency need streaming). Prompt lengths: completions send random token ids of exactly
//! `--input-len` tokens; chat sends `--input-len` random words (about one token each),
//! or `--prompt`. Output lengths are forced with `max_tokens` and `ignore_eos`.
//! Arrivals: `--concurrency N` closed-loop clients, or `--request-rate R` Poisson
//! arrivals (at most `--concurrency` in flight). It stops after `--num-requests` or
//! `--duration` seconds and prints requests/s, output tokens/s, TTFT, inter-token
//! latency (ITL) and end-to-end latency percentiles.
//!
//! `--n N` asks for `N` samples per request (parallel sampling, at temperature 1 since
//! vLLM refuses `n > 1` with greedy sampling): output tokens count every sample, TTFT
//! is the first content of any sample and ITL the gaps within each sample.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Endpoint {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
}

#[derive(Debug, Parser)]
#[command(about = "Load generator for OpenAI-compatible servers")]
struct Args {
    /// Server base URL (`http://host:port`).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    url: String,
    /// API to call.
    #[arg(long, value_enum, default_value_t = Endpoint::Chat)]
    endpoint: Endpoint,
    /// Model name (default: the first of `/v1/models`).
    #[arg(long)]
    model: Option<String>,
    /// Send non-streaming requests (no TTFT / ITL).
    #[arg(long)]
    no_stream: bool,
    /// Clients in flight at once (closed loop), or the cap with `--request-rate`.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Poisson arrivals at this many requests per second (open loop).
    #[arg(long)]
    request_rate: Option<f64>,
    /// Stop after this many requests.
    #[arg(long)]
    num_requests: Option<usize>,
    /// Stop sending after this many seconds.
    #[arg(long)]
    duration: Option<f64>,
    /// Prompt length (tokens for completions, words for chat).
    #[arg(long, default_value_t = 128)]
    input_len: usize,
    /// Output length (`max_tokens`, with `ignore_eos`).
    #[arg(long, default_value_t = 128)]
    output_len: usize,
    /// Lengths are drawn uniformly from `[len·(1−r), len·(1+r)]`; 0 = fixed lengths.
    #[arg(long, default_value_t = 0.0)]
    random_range_ratio: f64,
    /// Samples per request (`n`); above 1, requests sample at temperature 1.
    #[arg(long, default_value_t = 1)]
    n: u32,
    /// A fixed prompt text instead of random ones.
    #[arg(long)]
    prompt: Option<String>,
    /// Seed of prompts, lengths and arrivals.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write the results as JSON to this file.
    #[arg(long)]
    output_json: Option<String>,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
}

/// splitmix64: small, seeded, good enough for prompts and arrivals.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, low: usize, high: usize) -> usize {
        low + (self.next_u64() % (high - low + 1) as u64) as usize
    }

    fn length(&mut self, len: usize, ratio: f64) -> usize {
        let low = ((len as f64) * (1.0 - ratio)).round().max(1.0) as usize;
        let high = ((len as f64) * (1.0 + ratio)).round().max(low as f64) as usize;
        self.range(low, high)
    }
}

const WORDS: &[&str] = &[
    "time", "river", "blue", "table", "quick", "garden", "music", "light", "stone", "paper",
    "window", "dream", "silver", "forest", "cloud", "honey", "market", "engine", "planet",
    "letter", "winter", "coffee", "bridge", "mountain", "yellow", "animal", "number", "question",
    "simple", "orange",
];

/// One request body.
fn body(args: &Args, model: &str, rng: &mut Rng) -> Value {
    let output = rng.length(args.output_len, args.random_range_ratio);
    let input = rng.length(args.input_len, args.random_range_ratio);
    let mut body = match args.endpoint {
        Endpoint::Chat => {
            let text = args.prompt.clone().unwrap_or_else(|| {
                (0..input)
                    .map(|_| WORDS[rng.range(0, WORDS.len() - 1)])
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            json!({"model": model, "messages": [{"role": "user", "content": text}]})
        }
        Endpoint::Completions => {
            let prompt = match &args.prompt {
                Some(text) => json!(text),
                None => json!(
                    (0..input)
                        .map(|_| rng.range(1000, 20000))
                        .collect::<Vec<_>>()
                ),
            };
            json!({"model": model, "prompt": prompt})
        }
    };
    body["max_tokens"] = json!(output);
    body["ignore_eos"] = json!(true);
    if args.n > 1 {
        body["n"] = json!(args.n);
        body["temperature"] = json!(1.0);
    } else {
        body["temperature"] = json!(0.0);
    }
    if !args.no_stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

/// What one request measured.
#[derive(Debug, Default, Clone)]
struct Sample {
    ok: bool,
    error: Option<String>,
    output_tokens: u64,
    ttft: Option<f64>,
    /// Gaps between content chunks.
    itl: Vec<f64>,
    latency: f64,
}

/// Keep-alive connections to the server.
struct Pool {
    authority: String,
    idle: Mutex<VecDeque<SendRequest<Full<Bytes>>>>,
}

impl Pool {
    async fn connection(&self) -> Result<SendRequest<Full<Bytes>>> {
        if let Some(sender) = self.idle.lock().expect("pool lock").pop_front()
            && !sender.is_closed()
        {
            return Ok(sender);
        }
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .with_context(|| format!("connecting to {}", self.authority))?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }

    fn give_back(&self, sender: SendRequest<Full<Bytes>>) {
        self.idle.lock().expect("pool lock").push_back(sender);
    }

    async fn get(&self, path: &str) -> Result<Value> {
        let mut sender = self.connection().await?;
        sender.ready().await?;
        let request = hyper::Request::get(path)
            .header("host", &self.authority)
            .body(Full::new(Bytes::new()))?;
        let response = sender.send_request(request).await?;
        let bytes = response.into_body().collect().await?.to_bytes();
        self.give_back(sender);
        Ok(serde_json::from_slice(&bytes)?)
    }
}

/// Content of one streamed chunk (chat delta or completion text, reasoning included).
fn chunk_text(chunk: &Value) -> usize {
    let Some(choice) = chunk["choices"].get(0) else {
        return 0;
    };
    let delta = &choice["delta"];
    [&delta["content"], &delta["reasoning"], &choice["text"]]
        .iter()
        .filter_map(|v| v.as_str())
        .map(str::len)
        .sum::<usize>()
        + delta["tool_calls"].as_array().map_or(0, Vec::len)
}

async fn one(pool: &Pool, path: &str, body: Value, stream: bool) -> Sample {
    let start = Instant::now();
    let mut sample = Sample::default();
    let result: Result<()> = async {
        let mut sender = pool.connection().await?;
        sender.ready().await?;
        let request = hyper::Request::post(path)
            .header("host", &pool.authority)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            let bytes = body.collect().await?.to_bytes();
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&bytes));
        }
        if !stream {
            let bytes = body.collect().await?.to_bytes();
            let value: Value = serde_json::from_slice(&bytes)?;
            sample.output_tokens = value["usage"]["completion_tokens"].as_u64().unwrap_or(0);
        } else {
            let mut buffer = String::new();
            // The last content time of each choice (samples interleave with `n > 1`).
            let mut last: std::collections::HashMap<u64, f64> = Default::default();
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame?.into_data() else {
                    continue;
                };
                buffer.push_str(&String::from_utf8_lossy(&data));
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    let Some(data) = event.trim().strip_prefix("data: ") else {
                        continue;
                    };
                    if data == "[DONE]" {
                        continue;
                    }
                    let chunk: Value = serde_json::from_str(data)?;
                    if let Some(error) = chunk.get("error") {
                        bail!("stream error: {error}");
                    }
                    if let Some(tokens) = chunk["usage"]["completion_tokens"].as_u64() {
                        sample.output_tokens = tokens;
                    }
                    if chunk_text(&chunk) > 0 {
                        let now = start.elapsed().as_secs_f64();
                        let index = chunk["choices"][0]["index"].as_u64().unwrap_or(0);
                        sample.ttft.get_or_insert(now);
                        if let Some(previous) = last.insert(index, now) {
                            sample.itl.push(now - previous);
                        }
                    }
                }
            }
        }
        pool.give_back(sender);
        Ok(())
    }
    .await;
    sample.latency = start.elapsed().as_secs_f64();
    match result {
        Ok(()) => sample.ok = true,
        Err(e) => sample.error = Some(format!("{e:#}")),
    }
    sample
}

fn percentiles(mut values: Vec<f64>) -> Value {
    if values.is_empty() {
        return Value::Null;
    }
    values.sort_by(f64::total_cmp);
    let at = |p: f64| values[((p / 100.0) * (values.len() - 1) as f64).round() as usize] * 1000.0;
    let mean = values.iter().sum::<f64>() / values.len() as f64 * 1000.0;
    let max = values[values.len() - 1] * 1000.0;
    json!({"mean_ms": mean, "p50_ms": at(50.0), "p90_ms": at(90.0), "p99_ms": at(99.0), "max_ms": max})
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.num_requests.is_none() && args.duration.is_none() {
        bail!("give --num-requests or --duration");
    }
    let authority = args
        .url
        .strip_prefix("http://")
        .context("--url must start with http://")?
        .trim_end_matches('/')
        .to_owned();
    let pool = Arc::new(Pool {
        authority,
        idle: Mutex::new(VecDeque::new()),
    });
    let model = match &args.model {
        Some(m) => m.clone(),
        None => pool.get("/v1/models").await?["data"][0]["id"]
            .as_str()
            .context("/v1/models lists no model")?
            .to_owned(),
    };
    let path = match args.endpoint {
        Endpoint::Chat => "/v1/chat/completions",
        Endpoint::Completions => "/v1/completions",
    };
    let stream = !args.no_stream;
    let limit = Arc::new(Semaphore::new(args.concurrency.max(1)));
    let done = Arc::new(AtomicUsize::new(0));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let mut rng = Rng(args.seed);
    let start = Instant::now();
    let deadline = args.duration.map(|d| start + Duration::from_secs_f64(d));
    let total = args.num_requests;

    let progress = (!args.quiet).then(|| {
        let done = done.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(250)).await;
                let n = done.load(Ordering::Relaxed);
                let elapsed = start.elapsed().as_secs_f64();
                let bar = match total {
                    Some(t) if t > 0 => {
                        let filled = (n * 30 / t).min(30);
                        format!(
                            "[{}{}] {n}/{t}",
                            "#".repeat(filled),
                            " ".repeat(30 - filled)
                        )
                    }
                    _ => format!("{n} done"),
                };
                eprint!(
                    "\r{bar} {elapsed:.1}s {:.1} req/s   ",
                    n as f64 / elapsed.max(1e-9)
                );
                let _ = std::io::stderr().flush();
            }
        })
    });

    let mut tasks = Vec::new();
    let mut next_arrival = Instant::now();
    for sent in 0.. {
        if total.is_some_and(|t| sent >= t) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let Some(rate) = args.request_rate {
            next_arrival += Duration::from_secs_f64(-(1.0 - rng.unit()).ln() / rate);
            tokio::time::sleep_until(next_arrival.into()).await;
        }
        let permit = limit.clone().acquire_owned().await?;
        let body = body(&args, &model, &mut rng);
        let (pool, samples, done) = (pool.clone(), samples.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let sample = one(&pool, path, body, stream).await;
            drop(permit);
            samples.lock().expect("samples lock").push(sample);
            done.fetch_add(1, Ordering::Relaxed);
        }));
    }
    for task in tasks {
        task.await?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    if let Some(progress) = progress {
        progress.abort();
        eprintln!();
    }

    let samples = std::mem::take(&mut *samples.lock().expect("samples lock"));
    let ok: Vec<&Sample> = samples.iter().filter(|s| s.ok).collect();
    let errors: Vec<&String> = samples.iter().filter_map(|s| s.error.as_ref()).collect();
    let output_tokens: u64 = ok.iter().map(|s| s.output_tokens).sum();
    let result = json!({
        "endpoint": path,
        "model": model,
        "stream": stream,
        "concurrency": args.concurrency,
        "request_rate": args.request_rate,
        "input_len": args.input_len,
        "output_len": args.output_len,
        "random_range_ratio": args.random_range_ratio,
        "duration_s": elapsed,
        "completed": ok.len(),
        "failed": errors.len(),
        "request_throughput": ok.len() as f64 / elapsed,
        "output_throughput": output_tokens as f64 / elapsed,
        "total_output_tokens": output_tokens,
        "ttft": percentiles(ok.iter().filter_map(|s| s.ttft).collect()),
        "itl": percentiles(ok.iter().flat_map(|s| s.itl.iter().copied()).collect()),
        "e2e_latency": percentiles(ok.iter().map(|s| s.latency).collect()),
        "first_error": errors.first(),
    });

    println!("{:<28} {}", "endpoint", path);
    println!(
        "{:<28} {} ok, {} failed in {elapsed:.2} s",
        "requests",
        ok.len(),
        errors.len()
    );
    println!(
        "{:<28} {:.2}",
        "requests/s",
        result["request_throughput"].as_f64().unwrap_or(0.0)
    );
    println!(
        "{:<28} {:.1}",
        "output tokens/s",
        result["output_throughput"].as_f64().unwrap_or(0.0)
    );
    for (name, key) in [
        ("TTFT", "ttft"),
        ("inter-token latency", "itl"),
        ("end-to-end latency", "e2e_latency"),
    ] {
        let p = &result[key];
        if p.is_null() {
            continue;
        }
        println!(
            "{:<28} mean {:.2}  p50 {:.2}  p90 {:.2}  p99 {:.2} ms",
            name,
            p["mean_ms"].as_f64().unwrap_or(0.0),
            p["p50_ms"].as_f64().unwrap_or(0.0),
            p["p90_ms"].as_f64().unwrap_or(0.0),
            p["p99_ms"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(error) = errors.first() {
        println!("{:<28} {error}", "first error");
    }
    if let Some(path) = &args.output_json {
        std::fs::write(path, serde_json::to_string_pretty(&result)?)
            .with_context(|| format!("writing {path}"))?;
    }
    Ok(())
}
