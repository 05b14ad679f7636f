//! Replays every fixture in `tests/fixtures/` (generated from vLLM 0.33.0 by
//! `scripts/gen_fixtures.py`) through our parsers, whole text and at every chunking:
//! 1, 2, 3 and 7 characters, seeded random splits, vLLM's token-aligned deltas
//! (with their token ids) and the whole text in one chunk. Every result must equal
//! vLLM's. Adding a parser needs no change here: a new fixture file is picked up.

mod common;

use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::{
    MistralFormat, MistralReasoning, ParsedMessage, ParsedToolCall, ParserOptions, Tool,
};

#[derive(Deserialize)]
struct Fixture {
    family: String,
    results: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    config: Config,
    case: String,
    tools: Vec<Value>,
    output: String,
    chunks: Vec<Chunk>,
    expected: Expected,
}

#[derive(Deserialize)]
struct Config {
    tool: Option<String>,
    reasoning: Option<String>,
    chat_template_kwargs: Map<String, Value>,
    prompt: String,
    #[serde(default)]
    response_template: Option<Value>,
    /// The Mistral format vLLM's `MistralParser` picked from the tokenizer
    /// (configs with a `mistral` parser; the default when absent).
    #[serde(default)]
    mistral_format: Option<MistralFormatSpec>,
}

#[derive(Deserialize)]
struct MistralFormatSpec {
    pre_v11_calls: bool,
    reasoning: String,
}

impl MistralFormatSpec {
    fn format(&self) -> MistralFormat {
        MistralFormat {
            pre_v11_calls: self.pre_v11_calls,
            reasoning: match self.reasoning.as_str() {
                "special_token" => MistralReasoning::SpecialToken,
                "text" => MistralReasoning::Text,
                "none" => MistralReasoning::None,
                other => panic!("unknown Mistral reasoning encoding {other:?}"),
            },
        }
    }
}

#[derive(Deserialize)]
struct Chunk {
    text: String,
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Expected {
    content: Option<String>,
    reasoning: Option<String>,
    tool_calls: Vec<ExpectedCall>,
}

#[derive(Deserialize)]
struct ExpectedCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

impl Expected {
    fn message(&self) -> ParsedMessage {
        ParsedMessage {
            content: self.content.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|call| ParsedToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .collect(),
        }
    }
}

/// Text deltas with their token ids (empty when the split is not token-aligned).
type Deltas = Vec<(String, Vec<u32>)>;

/// The ways a case's output is cut into deltas, each with a name for reports.
fn chunkings(case: &Case, seed: u64) -> Vec<(String, Deltas)> {
    let chars: Vec<char> = case.output.chars().collect();
    let by_sizes = |sizes: &mut dyn FnMut() -> usize| {
        let mut deltas = Vec::new();
        let mut at = 0;
        while at < chars.len() {
            let end = (at + sizes().max(1)).min(chars.len());
            deltas.push((chars[at..end].iter().collect::<String>(), Vec::new()));
            at = end;
        }
        deltas
    };
    let mut all = vec![("whole".to_owned(), vec![(case.output.clone(), Vec::new())])];
    for size in [1, 2, 3, 7] {
        all.push((format!("{size}-char"), by_sizes(&mut || size)));
    }
    for round in 0..4u64 {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (round + 1);
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % 12) as usize
        };
        all.push((
            format!("random(seed {seed}, round {round})"),
            by_sizes(&mut next),
        ));
    }
    if !case.chunks.is_empty() {
        let tokens = case
            .chunks
            .iter()
            .map(|c| (c.text.clone(), c.ids.clone()))
            .collect();
        all.push(("token-aligned".to_owned(), tokens));
    }
    all
}

fn options(case: &Case) -> ParserOptions {
    ParserOptions {
        tools: case.tools.iter().filter_map(Tool::from_openai).collect(),
        chat_template_kwargs: case.config.chat_template_kwargs.clone(),
        prompt: case.config.prompt.clone(),
        response_template: case.config.response_template.as_ref().map(|spec| {
            Arc::new(ResponseTemplate::from_json(spec).unwrap_or_else(|e| panic!("{e}")))
        }),
        tool_choice: None,
        mistral: case
            .config
            .mistral_format
            .as_ref()
            .map_or_else(MistralFormat::default, MistralFormatSpec::format),
    }
}

fn run(case: &Case, deltas: &Deltas) -> ParsedMessage {
    let deltas: Vec<(&str, &[u32])> = deltas
        .iter()
        .map(|(text, ids)| (text.as_str(), ids.as_slice()))
        .collect();
    let config = &case.config;
    common::parse(
        config.reasoning.as_deref(),
        config.tool.as_deref(),
        &options(case),
        &deltas,
    )
}

fn first_difference(expected: &ParsedMessage, got: &ParsedMessage) -> String {
    if expected.content != got.content {
        return format!(
            "content: expected {:?}, got {:?}",
            expected.content, got.content
        );
    }
    if expected.reasoning != got.reasoning {
        return format!(
            "reasoning: expected {:?}, got {:?}",
            expected.reasoning, got.reasoning
        );
    }
    if expected.tool_calls.len() != got.tool_calls.len() {
        return format!(
            "tool call count: expected {}, got {} ({:?})",
            expected.tool_calls.len(),
            got.tool_calls.len(),
            got.tool_calls
        );
    }
    for (i, (e, g)) in expected.tool_calls.iter().zip(&got.tool_calls).enumerate() {
        if e != g {
            return format!("tool call {i}: expected {e:?}, got {g:?}");
        }
    }
    "no difference".to_owned()
}

#[test]
fn every_fixture_matches_vllm_at_every_chunking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures")
        .map(|entry| entry.expect("fixture entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        // FIXTURE=name1,name2 replays only those files (while working on one family).
        .filter(|path| {
            std::env::var("FIXTURE").map_or(true, |only| {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
                only.split(',').any(|name| name == stem)
            })
        })
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", dir.display());
    let (mut checked, mut failures) = (0, Vec::new());
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("readable fixture");
        let fixture: Fixture =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (seed, case) in fixture.results.iter().enumerate() {
            let expected = case.expected.message();
            for (chunking, deltas) in chunkings(case, seed as u64) {
                checked += 1;
                let got = run(case, &deltas);
                if got != expected {
                    failures.push(format!(
                        "{}/{} [tool {:?}, reasoning {:?}, kwargs {:?}] at {chunking}: {}",
                        fixture.family,
                        case.case,
                        case.config.tool,
                        case.config.reasoning,
                        case.config.chat_template_kwargs,
                        first_difference(&expected, &got)
                    ));
                }
            }
        }
    }
    if !failures.is_empty() {
        let mut report = format!("{} of {checked} runs differ from vLLM:\n", failures.len());
        for failure in failures.iter().take(30) {
            let _ = writeln!(report, "  {failure}");
        }
        panic!("{report}");
    }
    eprintln!(
        "{checked} parser runs over {} fixture files match vLLM",
        paths.len()
    );
}
