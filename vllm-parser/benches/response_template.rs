//! The `hf` response-template parser (reasoning + tools, Qwen 3's template):
//! throughput at 4-character chunks side by side with vLLM's
//! `ResponseTemplateParser` (driven by `scripts/bench_vllm.py` on token deltas),
//! and the linear-time check (per-character cost at 1-character chunks, 64 KB
//! vs 1 KB), both sides in thread CPU time (module `common`).
//! `benches/parsers.rs` covers the parsers that need no template.
//!
//! ```sh
//! cargo bench -p vllm-parser --bench response_template
//! ```

use std::sync::Arc;

use serde_json::{Value, json};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::{Event, MessageParser, ParserOptions, registry};

mod common;

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

fn main() {
    let options = ParserOptions {
        response_template: Some(Arc::new(ResponseTemplate::from_json(&template()).unwrap())),
        ..ParserOptions::default()
    };
    let text = output(16 * 1024);
    let ours = common::seconds_per_run(text.len(), || run(&options, &text, 4));
    let per_char = |size: usize| {
        let text = output(size);
        common::seconds_per_run(text.len(), || run(&options, &text, 1))
            / text.chars().count() as f64
    };
    let growth = per_char(64 * 1024) / per_char(1024);
    let job = json!({"tool": "hf", "reasoning": "hf", "output": text, "repeat": 3,
                     "response_template": template()});
    let theirs = common::vllm_seconds(&[job.to_string()]).and_then(|s| s.first().copied());
    common::print_header();
    let name = "hf (+hf), Qwen 3 template";
    common::print_row(name, text.len(), ours, theirs, growth);
}
