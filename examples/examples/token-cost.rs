//! The frontend's cost per streamed token: incremental detokenization with stop-string
//! checks, then one OpenAI chat stream chunk serialized as an SSE frame, as `serve` does
//! it; with and without top-5 logprobs.
//!
//! ```text
//! cargo run --release --example token-cost
//! VLLM_REFERENCE_PYTHON=$HOME/.cache/vllm-reference/venv/bin/python \
//!     cargo run --release --example token-cost
//! ```
//!
//! With a Python (`--python` or `VLLM_REFERENCE_PYTHON`, a venv with vLLM 0.33.0) it
//! also runs `examples/scripts/token_cost.py` on the same token ids and stop strings,
//! which does the same work with vLLM's own detokenizer, logprobs processor and pydantic
//! chunk objects, and prints both sides and the ratios as a markdown table.
//!
//! Both sides time their loop in CPU time of the running thread, not wall-clock time:
//! on a busy machine, wall-clock time also counts the slices other processes take.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::{Value, json};
use vllm_chat::RendererOptions;
use vllm_chat::openai::{ChatChunkChoice, ChatLogprobs, DeltaMessage, Emit};
use vllm_chat::pipeline::ChatDeltaFrames;
use vllm_chat::pipeline::generation;
use vllm_chat::pipeline::logprobs;
use vllm_client::protocol::LogprobsLists;
use vllm_detok::{DecodeOptions, IncrementalDecoder, LogprobText, Tokenizer};
use vllm_examples::serve::model::{Model, default_model_dir};

/// The allocator `serve` runs with (see `examples/examples/serve.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How many tokens each run streams.
const TOKENS: usize = 4000;
/// Runs per case; the best is reported.
const RUNS: usize = 5;
/// `top_logprobs` of the logprobs case.
const TOP: usize = 5;
/// Two stop strings that never match, so every token goes through the stop check.
const STOP: [&str; 2] = ["<<never stop>>", "@@@@"];
/// Mixed English, CJK and emoji (multi-byte characters held back mid-token).
const PARAGRAPH: &str = "The quick brown fox jumps over the lazy dog while the \
    server streams tokens to 1,024 clients. 快速的棕色狐狸跳过了懒狗，服务器正在流式传输。\
    素早い茶色の狐が怠け者の犬を飛び越える。 Emoji too: 🚀🦀✨ naïve café — done! ";
const SAMPLED_LOGPROB: f64 = -0.25;
/// The chunks' `id` (also in `examples/scripts/token_cost.py`), `created` and `model`.
const CHUNK_ID: &str = "chatcmpl-bench";
const CREATED: u64 = 1_700_000_000;
const MODEL: &str = "qwen3";
const ALTERNATIVE_LOGPROBS: [f64; TOP] = [-1.0, -1.5, -2.0, -2.5, -3.0];

#[derive(Debug, Parser)]
#[command(about = "Per-token frontend cost (detokenize + stop check + SSE chunk)")]
struct Args {
    /// A Python with vLLM 0.33.0, to run the reference side in the same run.
    #[arg(long, env = "VLLM_REFERENCE_PYTHON")]
    python: Option<PathBuf>,
    /// The tokenizer directory the Python side loads (the same Qwen3 tokenizer).
    #[arg(long)]
    python_tokenizer: Option<PathBuf>,
}

/// The token stream both sides replay.
struct Workload {
    ids: Vec<u32>,
    /// Five alternative ids per position (the next tokens of the text).
    alternatives: Vec<[u32; TOP]>,
}

impl Workload {
    fn new(model: &Model) -> Result<Self> {
        let per_paragraph = model.encode(PARAGRAPH)?.len().max(1);
        let mut ids = model.encode(&PARAGRAPH.repeat(TOKENS / per_paragraph + 2))?;
        ids.truncate(TOKENS);
        let alternatives = (0..ids.len())
            .map(|i| std::array::from_fn(|k| ids[(i + k + 1) % ids.len()]))
            .collect();
        Ok(Self { ids, alternatives })
    }

    fn to_json(&self) -> Value {
        json!({
            "ids": self.ids,
            "prompt_ids": [],
            "stop": STOP,
            "alternatives": self.alternatives,
            "alternative_logprobs": ALTERNATIVE_LOGPROBS,
            "sampled_logprob": SAMPLED_LOGPROB,
            "created": CREATED,
            "model": MODEL,
        })
    }
}

/// Each position's engine logprob row (sampled token first, rank 1, then the
/// alternatives), as the engine client hands them to `serve`: built before timing.
fn engine_rows(work: &Workload) -> Vec<LogprobsLists> {
    let logprobs = std::iter::once(SAMPLED_LOGPROB).chain(ALTERNATIVE_LOGPROBS);
    work.ids
        .iter()
        .zip(&work.alternatives)
        .map(|(&id, alternatives)| {
            let row: Vec<(i32, f32)> = std::iter::once(id)
                .chain(alternatives.iter().copied())
                .zip(logprobs.clone())
                .map(|(id, lp)| (id as i32, lp as f32))
                .collect();
            LogprobsLists::from_rows(&[row], &[1])
        })
        .collect()
}

/// The SSE frame of one mid-stream chat chunk, built as `serve`'s chat stream builds it
/// (the typed choice serialized behind the stream's constant head by [`ChatDeltaFrames`]).
fn frame(frames: &ChatDeltaFrames, text: String, logprobs: Option<ChatLogprobs>) -> String {
    let delta = DeltaMessage {
        content: Emit::value(text),
        ..DeltaMessage::default()
    };
    let mut choice = ChatChunkChoice::new(0, delta);
    choice.logprobs = Emit::Set(logprobs);
    choice.token_ids = Emit::Set(None);
    frames.frame(&choice, None)
}

/// CPU time used by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`, nanosecond
/// resolution on Linux), the clock the Python side reads with `time.thread_time()`.
fn thread_cpu_time() -> Duration {
    cpu_time::ThreadTime::try_now().map_or(Duration::ZERO, |t| t.as_duration())
}

/// What each token costs in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Only detokenization and the stop check (no chunk): the breakdown.
    Decode,
    /// Text chunks.
    Text,
    /// Text chunks with top-5 logprobs.
    Logprobs,
}

/// Streams the workload once; returns µs per token and the bytes produced (kept so the
/// work is not optimized away). The frames are appended to `sink` when there is one.
fn run(
    tokenizer: &Arc<dyn Tokenizer>,
    work: &Workload,
    case: Case,
    mut sink: Option<&mut String>,
) -> Result<(f64, usize)> {
    let options = DecodeOptions {
        stop: STOP.iter().map(|s| (*s).to_owned()).collect(),
        ..DecodeOptions::default()
    };
    let mut decoder = IncrementalDecoder::new(tokenizer.clone(), &[], options)?;
    let mut texts = LogprobText::new(tokenizer.clone());
    let frames = ChatDeltaFrames::new(CHUNK_ID, CREATED, MODEL);
    let mut sent = 0;
    let rows = engine_rows(work);
    let start = thread_cpu_time();
    for (id, row) in work.ids.iter().zip(&rows) {
        let delta = decoder.push(&[*id])?;
        if delta.finished {
            bail!("a stop string matched");
        }
        if case == Case::Decode {
            sent += delta.text.len();
            continue;
        }
        let chat_logprobs = if case == Case::Logprobs {
            let positions = generation::positions(&mut texts, row, 1)?;
            Some(logprobs::chat(positions, Some(TOP as i64)))
        } else {
            None
        };
        let frame = frame(&frames, delta.text, chat_logprobs);
        sent += frame.len();
        if let Some(sink) = sink.as_deref_mut() {
            sink.push_str(&frame);
        }
    }
    let elapsed = thread_cpu_time().saturating_sub(start);
    Ok((elapsed.as_secs_f64() * 1e6 / work.ids.len() as f64, sent))
}

fn best(tokenizer: &Arc<dyn Tokenizer>, work: &Workload, case: Case) -> Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..RUNS {
        let (us, sent) = run(tokenizer, work, case, None)?;
        std::hint::black_box(sent);
        best = best.min(us);
    }
    Ok(best)
}

/// The reference side's figures, and whether its frames equal ours byte for byte.
struct Reference {
    text_us: f64,
    logprobs_us: f64,
    text_frames_equal: bool,
    logprobs_frames_equal: bool,
}

/// Runs `examples/scripts/token_cost.py` and compares its frames with ours.
fn python(
    python: &PathBuf,
    tokenizer_dir: &PathBuf,
    tokenizer: &Arc<dyn Tokenizer>,
    work: &Workload,
) -> Result<Reference> {
    let base = std::env::temp_dir().join(format!("token-cost-{}", std::process::id()));
    let input = base.with_extension("json");
    let frames_of = |kind: &str| base.with_extension(kind);
    std::fs::write(&input, work.to_json().to_string())?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/token_cost.py");
    let output = Command::new(python)
        .arg(script)
        .arg(&input)
        .arg(tokenizer_dir)
        .arg(&base)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .with_context(|| format!("running {}", python.display()))?;
    let _ = std::fs::remove_file(&input);
    let equal = |kind: &str, case: Case| -> Result<bool> {
        let path = frames_of(kind);
        let theirs =
            std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()));
        let _ = std::fs::remove_file(&path);
        let mut ours = String::new();
        run(tokenizer, work, case, Some(&mut ours))?;
        Ok(theirs? == ours)
    };
    let text_frames_equal = equal("text", Case::Text);
    let logprobs_frames_equal = equal("logprobs", Case::Logprobs);
    if !output.status.success() {
        bail!(
            "token_cost.py failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .last()
        .context("token_cost.py printed nothing")?;
    let result: Value = serde_json::from_str(line)?;
    let field = |name: &str| {
        result[name]
            .as_f64()
            .with_context(|| format!("no {name} in {line}"))
    };
    Ok(Reference {
        text_us: field("text_us_per_token")?,
        logprobs_us: field("logprobs_us_per_token")?,
        text_frames_equal: text_frames_equal?,
        logprobs_frames_equal: logprobs_frames_equal?,
    })
}

fn main() -> Result<()> {
    let args = Args::parse();
    let model = Model::load(&default_model_dir(), RendererOptions::default())?;
    let tokenizer = model.tokenizer.clone();
    // Built once per tokenizer at server start, not per request.
    tokenizer.token_texts();
    let work = Workload::new(&model)?;
    let decode = best(&tokenizer, &work, Case::Decode)?;
    let text = best(&tokenizer, &work, Case::Text)?;
    let with_logprobs = best(&tokenizer, &work, Case::Logprobs)?;
    println!(
        "{} tokens, stop strings {STOP:?}, best of {RUNS} runs",
        work.ids.len()
    );
    println!("detokenize + stop check only:   {decode:.3} µs/token");
    println!("text only:                      {text:.3} µs/token");
    println!("top-5 logprobs:                 {with_logprobs:.3} µs/token");
    let Some(python_bin) = args.python else {
        return Ok(());
    };
    let tokenizer_dir = match args.python_tokenizer {
        Some(dir) => dir,
        None => PathBuf::from(std::env::var("HOME").context("HOME is not set")?)
            .join(".cache/vllm-reference/models/qwen3"),
    };
    let reference = python(&python_bin, &tokenizer_dir, &tokenizer, &work)?;
    println!();
    println!("| case | Rust µs/token | vLLM Python µs/token | ratio | same frames |");
    println!("|---|---:|---:|---:|---|");
    for (case, rust, py, same) in [
        (
            "text only",
            text,
            reference.text_us,
            reference.text_frames_equal,
        ),
        (
            "top-5 logprobs",
            with_logprobs,
            reference.logprobs_us,
            reference.logprobs_frames_equal,
        ),
    ] {
        let same = if same { "byte-identical" } else { "DIFFER" };
        println!(
            "| {case} | {rust:.3} | {py:.2} | {:.0}x | {same} |",
            py / rust
        );
    }
    Ok(())
}
