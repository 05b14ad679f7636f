//! gpt-oss output decoded with `skip_special_tokens` (the OpenAI API default) has no
//! Harmony markers in its text; vLLM parses the token ids instead. Replays the
//! `harmony` fixture's token-aligned deltas with the special tokens' text removed
//! and their ids kept: the result must still be vLLM's.

mod common;

use serde::Deserialize;
use serde_json::{Map, Value};
use vllm_parser::{ParsedMessage, ParsedToolCall, ParserOptions, Tool};

#[derive(Deserialize)]
struct Fixture {
    results: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    config: Config,
    case: String,
    tools: Vec<Value>,
    chunks: Vec<Chunk>,
    expected: Expected,
}

#[derive(Deserialize)]
struct Config {
    tool: Option<String>,
    reasoning: Option<String>,
    chat_template_kwargs: Map<String, Value>,
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
    name: String,
    arguments: String,
}

/// The gpt-oss vocabulary's special tokens are ids 199998..=200018.
fn is_special(id: u32) -> bool {
    (199_998..=200_018).contains(&id)
}

/// `text` without `<|name|>` markers, as a `skip_special_tokens` decode gives it.
fn strip_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("<|") {
        let after = &rest[at + 2..];
        match after.find("|>") {
            Some(end)
                if after[..end]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push_str(&rest[..at]);
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn harmony_parses_token_ids_when_the_text_skips_special_tokens() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/harmony.json");
    let fixture: Fixture =
        serde_json::from_str(&std::fs::read_to_string(path).expect("harmony fixture"))
            .expect("valid fixture");
    let mut checked = 0;
    for case in fixture
        .results
        .iter()
        .filter(|case| !case.chunks.is_empty())
    {
        let deltas: Vec<(String, Vec<u32>)> = case
            .chunks
            .iter()
            .map(|chunk| {
                let text = if chunk.ids.iter().any(|&id| is_special(id)) {
                    strip_markers(&chunk.text)
                } else {
                    chunk.text.clone()
                };
                (text, chunk.ids.clone())
            })
            .collect();
        let deltas: Vec<(&str, &[u32])> = deltas
            .iter()
            .map(|(text, ids)| (text.as_str(), ids.as_slice()))
            .collect();
        let options = ParserOptions {
            tools: case.tools.iter().filter_map(Tool::from_openai).collect(),
            chat_template_kwargs: case.config.chat_template_kwargs.clone(),
            prompt: String::new(),
            response_template: None,
            tool_choice: None,
            mistral: Default::default(),
        };
        let got = common::parse(
            case.config.reasoning.as_deref(),
            case.config.tool.as_deref(),
            &options,
            &deltas,
        );
        let expected = ParsedMessage {
            content: case.expected.content.clone(),
            reasoning: case.expected.reasoning.clone(),
            tool_calls: case
                .expected
                .tool_calls
                .iter()
                .map(|call| ParsedToolCall {
                    id: None,
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .collect(),
        };
        assert_eq!(
            got, expected,
            "{} [{:?}/{:?}]",
            case.case, case.config.tool, case.config.reasoning
        );
        checked += 1;
    }
    assert!(
        checked > 100,
        "only {checked} cases had token-aligned chunks"
    );
}
