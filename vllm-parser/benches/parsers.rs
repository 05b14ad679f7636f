//! Parser throughput, side by side with vLLM's Python parsers, and the linear-time
//! check: per-character cost at 1-character chunks for 1 KB vs 64 KB outputs.
//!
//! `cargo bench -p vllm-parser --bench parsers` runs criterion on our parsers, then
//! (when `$HOME/.cache/vllm-reference` exists) times vLLM's parsers on the same
//! outputs with `scripts/bench_vllm.py` and prints a table of ratios (both sides in
//! thread CPU time, module `common`).

use criterion::{Criterion, Throughput};
use vllm_parser::{Event, MessageParser, ParserOptions, registry};

mod common;

/// A benchmarked configuration: a parser pair and a model output made to size.
struct Family {
    name: &'static str,
    reasoning: Option<&'static str>,
    tool: Option<&'static str>,
    output: fn(usize) -> String,
}

const PROSE: &str = "The weather in Paris is mild, with light rain expected later today. ";

const FAMILIES: &[Family] = &[
    Family {
        name: "think (deepseek_r1)",
        reasoning: Some("deepseek_r1"),
        tool: None,
        output: |size| {
            let half = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!("<think>{half}</think>{half}")
        },
    },
    Family {
        name: "hermes (+qwen3)",
        reasoning: Some("qwen3"),
        tool: Some("hermes"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<think>{prose}</think>\n\n<tool_call>\n{{\"name\": \"f\", \"arguments\": {{\"text\": \"{prose}\"}}}}\n</tool_call>"
            )
        },
    },
    Family {
        name: "qwen3_coder (+qwen3), engine",
        reasoning: Some("qwen3"),
        tool: Some("qwen3_coder"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<think>{prose}</think>\n\n<tool_call>\n<function=f>\n<parameter=text>\n{prose}\n</parameter>\n</function>\n</tool_call>"
            )
        },
    },
    Family {
        name: "kimi_k2, engine",
        reasoning: Some("kimi_k2"),
        tool: Some("kimi_k2"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<think>{prose}</think><|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{{\"text\": \"{prose}\"}}<|tool_call_end|><|tool_calls_section_end|>"
            )
        },
    },
    Family {
        name: "openai (+openai_gptoss), harmony",
        reasoning: Some("openai_gptoss"),
        tool: Some("openai"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<|channel|>analysis<|message|>{prose}<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{{\"text\": \"{prose}\"}}<|call|>"
            )
        },
    },
    Family {
        name: "pythonic, settle",
        reasoning: None,
        tool: Some("pythonic"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!("[f(text='{prose}'), g(n=1, flags=[true, None])]")
        },
    },
    Family {
        name: "poolside_v1, settle",
        reasoning: None,
        tool: Some("poolside_v1"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "{prose}<tool_call>f\n<arg_key>text</arg_key>\n<arg_value>{prose}</arg_value>\n<arg_key>n</arg_key>\n<arg_value>{{'a': (1, 2), 'b': None}}</arg_value>\n</tool_call>"
            )
        },
    },
    Family {
        name: "minicpm5, settle",
        reasoning: None,
        tool: Some("minicpm5"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "{prose}<function name=\"f\"><param name=\"text\">{prose}</param><param name=\"n\">[1, 2]</param></function>"
            )
        },
    },
    Family {
        name: "granite4 (+qwen3), settle",
        reasoning: Some("qwen3"),
        tool: Some("granite4"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<think>{prose}</think>\n\n<tool_call>{{\"name\": \"f\", \"arguments\": {{\"text\": \"{prose}\"}}}}</tool_call>"
            )
        },
    },
    Family {
        name: "muse (+muse), channels",
        reasoning: Some("muse"),
        tool: Some("muse"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                " to=self<|message|>{prose}<|eom|><|start|>assistant to=f<|message|><atem:function_calls>\n<atem:invoke name=\"f\">\n<atem:parameter name=\"text\">{prose}</atem:parameter>\n</atem:invoke>\n</atem:function_calls><|eom|>"
            )
        },
    },
    Family {
        name: "apertus, stripped head",
        reasoning: None,
        tool: Some("apertus"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!("{prose}<|tools_prefix|>[{{\"f\": {{\"text\": \"{prose}\"}}}}]<|tools_suffix|>")
        },
    },
    Family {
        name: "kimi_k3, XTML",
        reasoning: Some("kimi_k3"),
        tool: Some("kimi_k3"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "{prose}<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>argument key=\"text\" type=\"string\"<|sep|>{prose}<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
            )
        },
    },
    Family {
        name: "inkling, engine",
        reasoning: Some("inkling"),
        tool: Some("inkling"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<|content_thinking|>{prose}<|end_message|><|message_model|><|content_invoke_tool_json|>{{\"name\": \"f\", \"args\": {{\"text\": \"{prose}\"}}}}<|end_message|>"
            )
        },
    },
    Family {
        name: "cohere_command3 (+cohere_command3), melody",
        reasoning: Some("cohere_command3"),
        tool: Some("cohere_command3"),
        output: |size| {
            let prose = PROSE.repeat(size / PROSE.len() / 2 + 1);
            format!(
                "<|START_THINKING|>{prose}<|END_THINKING|><|START_ACTION|>[{{\"tool_call_id\": \"0\", \"tool_name\": \"f\", \"parameters\": {{\"text\": \"{prose}\"}}}}]<|END_ACTION|>"
            )
        },
    },
];

fn run(family: &Family, output: &str, chunk_chars: usize) -> usize {
    let options = ParserOptions::default();
    let mut parser = MessageParser::new(
        family
            .reasoning
            .map(|n| registry::reasoning_parser(n, &options).unwrap()),
        family
            .tool
            .map(|n| registry::tool_parser(n, &options).unwrap()),
    );
    let mut events: Vec<Event> = Vec::new();
    let mut count = 0;
    let (mut from, mut chars) = (0, 0);
    for (at, _) in output.char_indices() {
        if chars == chunk_chars {
            parser.push(&output[from..at], &[], &mut events);
            count += events.len();
            events.clear();
            (from, chars) = (at, 0);
        }
        chars += 1;
    }
    parser.push(&output[from..], &[], &mut events);
    parser.finish(&mut events);
    count + events.len()
}

fn criterion_benches(c: &mut Criterion) {
    for family in FAMILIES {
        let mut group = c.benchmark_group(family.name);
        let output = (family.output)(16 * 1024);
        group.throughput(Throughput::Bytes(output.len() as u64));
        group.bench_function("16KB, 4-char chunks", |b| {
            b.iter(|| run(family, &output, 4))
        });
        for size in [1024, 64 * 1024] {
            let output = (family.output)(size);
            group.throughput(Throughput::Bytes(output.len() as u64));
            group.bench_function(format!("{}KB, 1-char chunks", size / 1024), |b| {
                b.iter(|| run(family, &output, 1))
            });
        }
        group.finish();
    }
}

fn job_line(family: &Family) -> String {
    let quote = |s: Option<&str>| s.map_or("null".to_owned(), |s| format!("{s:?}"));
    let mut output = String::new();
    vllm_parser::json::write_string(&mut output, &(family.output)(16 * 1024), false);
    format!(
        "{{\"tool\": {}, \"reasoning\": {}, \"output\": {output}, \"repeat\": 3}}",
        quote(family.tool),
        quote(family.reasoning)
    )
}

fn comparison_table() {
    common::print_header();
    let jobs: Vec<String> = FAMILIES.iter().map(job_line).collect();
    let vllm = common::vllm_seconds(&jobs);
    for (i, family) in FAMILIES.iter().enumerate() {
        let output = (family.output)(16 * 1024);
        let ours = common::seconds_per_run(output.len(), || run(family, &output, 4));
        let per_char = |size: usize| {
            let output = (family.output)(size);
            common::seconds_per_run(output.len(), || run(family, &output, 1))
                / output.chars().count() as f64
        };
        let growth = per_char(64 * 1024) / per_char(1024);
        let theirs = vllm.as_ref().and_then(|v| v.get(i)).copied();
        common::print_row(family.name, output.len(), ours, theirs, growth);
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    criterion_benches(&mut criterion);
    criterion.final_summary();
    comparison_table();
}
