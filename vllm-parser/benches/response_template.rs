//! The `hf` response-template parser (reasoning + tools, Qwen 3's template):
//! throughput at 4-character chunks side by side with vLLM's
//! `ResponseTemplateParser` (driven by `scripts/bench_vllm.py` on token deltas),
//! and the linear-time check (per-character cost at 1-character chunks, 64 KB
//! vs 1 KB). `benches/parsers.rs` covers the parsers that need no template.
//!
//! ```sh
//! cargo bench -p vllm-parser --bench response_template
//! ```

use std::hint::black_box;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::{Event, MessageParser, ParserOptions, registry};

const PROSE: &str = "The weather in Paris is mild, with light rain expected later today. ";

/// transformers' fallback template for Qwen 3.
fn template() -> Value {
    json!({
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "thinking": {"open": "<think>", "close": "</think>", "content": "text"},
            "tool_calls": {"open_pattern": "\\s*<tool_call>", "close": "</tool_call>",
                           "repeats": true, "content": "json",
                           "transform": {"type": "function", "function": "{content}"}},
            "content": {"close_pattern": "\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>|<\\|eot_id\\|>)",
                        "content": "text"}
        }
    })
}

fn output(size: usize) -> String {
    let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
    format!(
        "<think>{prose}</think>\n\n<tool_call>\n{{\"name\": \"f\", \"arguments\": {{\"text\": \"{prose}\"}}}}\n</tool_call>"
    )
}

fn run(options: &ParserOptions, output: &str, chunk_chars: usize) -> usize {
    let mut parser = MessageParser::new(
        Some(registry::reasoning_parser("hf", options).unwrap()),
        Some(registry::tool_parser("hf", options).unwrap()),
    );
    let mut events: Vec<Event> = Vec::new();
    let chars: Vec<(usize, char)> = output.char_indices().collect();
    for window in chars.chunks(chunk_chars) {
        let from = window[0].0;
        let to = window.last().map_or(from, |(at, c)| at + c.len_utf8());
        parser.push(&output[from..to], &[], &mut events);
    }
    parser.finish(&mut events);
    events.len()
}

fn seconds_per_run(options: &ParserOptions, output: &str, chunk_chars: usize) -> f64 {
    let runs = (2_000_000 / output.len()).clamp(3, 500);
    let start = Instant::now();
    for _ in 0..runs {
        black_box(run(options, output, chunk_chars));
    }
    start.elapsed().as_secs_f64() / runs as f64
}

/// Seconds per run of vLLM's parser on `output`, if the reference env is there.
fn vllm_seconds(output: &str) -> Option<f64> {
    let home = std::env::var("HOME").ok()?;
    let python = format!("{home}/.cache/vllm-reference/venv/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/bench_vllm.py");
    let mut child = Command::new(python)
        .arg(script)
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let job = json!({"tool": "hf", "reasoning": "hf", "output": output, "repeat": 3,
                     "response_template": template()});
    writeln!(child.stdin.take()?, "{job}").ok()?;
    let out = child.wait_with_output().ok()?;
    let line: Value = serde_json::from_slice(&out.stdout).ok()?;
    line.get("seconds_per_run")?.as_f64()
}

fn main() {
    let options = ParserOptions {
        response_template: Some(Arc::new(ResponseTemplate::from_json(&template()).unwrap())),
        ..ParserOptions::default()
    };
    let text = output(16 * 1024);
    let ours = seconds_per_run(&options, &text, 4);
    let mb = text.len() as f64 / 1e6;
    let per_char = |size: usize| {
        let text = output(size);
        seconds_per_run(&options, &text, 1) / text.chars().count() as f64
    };
    let growth = per_char(64 * 1024) / per_char(1024);
    let (theirs, ratio) = match vllm_seconds(&text) {
        Some(seconds) => (
            format!("{:.2}", mb / seconds),
            format!("{:.0}x", seconds / ours),
        ),
        None => ("n/a".to_owned(), "n/a".to_owned()),
    };
    println!(
        "| family | ours MB/s (4-char chunks, 16 KB) | vLLM MB/s (token deltas) | ratio | 64 KB vs 1 KB per char (1-char chunks) |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| hf (+hf), Qwen 3 template | {:.1} | {theirs} | {ratio} | {growth:.2}x |",
        mb / ours
    );
}
