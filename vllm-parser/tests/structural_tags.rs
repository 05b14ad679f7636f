//! The `structured_outputs.structural_tag` string vLLM 0.33.0's
//! `adjust_request` sends, byte for byte, for every tool parser with a
//! `structural_tag_model` (`scripts/gen_structural_tags.py`,
//! `tests/fixtures/serving/structural_tags.json.gz`), with the server's
//! `--tool-strict-level` unset and set to each of vLLM's levels; and the tag
//! vLLM's Cohere Command parser class builds per model architecture.

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use vllm_parser::Tool;
use vllm_parser::serving::{
    ServingParsers, ServingRequest, StructuredOutputs, ToolChoice, ToolGrammarError,
    ToolStrictLevel, cohere_tools_grammar,
};

/// Tool parsers whose `structural_tag_model` this crate does not build yet:
/// their requests go unconstrained (`json: None`).
const NOT_BUILT: &[&str] = &[];

mod jsonl_fixture;

fn entries() -> Vec<Value> {
    jsonl_fixture::read("serving/structural_tags.json.gz").1
}

#[test]
fn structural_tags_are_vllms_byte_for_byte() {
    let kwargs = Map::new();
    let mut failures = Vec::new();
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    let mut levels: BTreeMap<String, usize> = BTreeMap::new();
    let mut xgrammar_grammars: BTreeMap<String, usize> = BTreeMap::new();
    let mut cohere_exact: BTreeMap<String, usize> = BTreeMap::new();
    for entry in entries() {
        let tool = entry["tool"].as_str().unwrap();
        let level = entry["strict_level"].as_str();
        let label = format!(
            "{tool} {} (--tool-strict-level {})",
            entry["case"].as_str().unwrap(),
            level.unwrap_or("unset")
        );
        let body = &entry["request"];
        let mut parsers =
            ServingParsers::new(entry["reasoning"].as_str(), Some(tool), true, None, |_| {
                Some(u32::MAX)
            })
            .expect("every tool parser starts");
        let architecture = entry["architecture"].as_str();
        if let Some(architecture) = architecture {
            parsers = parsers.with_model_architecture(architecture);
        }
        if let Some(level) = level {
            parsers = parsers.with_tool_strict_level(
                level
                    .parse::<ToolStrictLevel>()
                    .expect("vLLM's level names"),
            );
        }
        *levels
            .entry(level.unwrap_or("unset").to_owned())
            .or_default() += 1;
        let raw_tools = body["tools"].as_array().cloned().unwrap_or_default();
        let tools: Vec<Tool> = raw_tools.iter().filter_map(Tool::from_openai).collect();
        let strict: Vec<bool> = raw_tools
            .iter()
            .map(|t| t["function"]["strict"] == Value::Bool(true))
            .collect();
        let response_format = body.get("response_format");
        let request = ServingRequest {
            tools: body.get("tools").map(|_| tools.as_slice()),
            tool_choice: body.get("tool_choice").and_then(ToolChoice::from_openai),
            parallel_tool_calls: body["parallel_tool_calls"].as_bool(),
            response_format_set: response_format.is_some_and(|f| f["type"] != "text"),
            tools_strict: &strict,
            response_format,
            ..ServingRequest::new(&kwargs)
        };
        let ours = match (
            parsers.adjust_request(&request),
            entry["error"]["error"].as_str(),
        ) {
            (Ok(adjusted), None) => adjusted.structured_outputs,
            (Err(e), Some(message)) if e.message == message => {
                *checked.entry(tool.to_owned()).or_default() += 1;
                continue;
            }
            (Err(e), _) => {
                failures.push(format!("{label}: refused: {e}, vLLM {}", entry["error"]));
                continue;
            }
            (Ok(_), Some(message)) => {
                failures.push(format!("{label}: accepted, vLLM refused: {message}"));
                continue;
            }
        };
        let expected = entry["structured_outputs"]["structural_tag"].as_str();
        // Cohere's tag for tools holds xgrammar's own JSON-schema-to-EBNF
        // output: exact, or (tools outside the converted subset) not built.
        if architecture.is_some()
            && expected.is_some_and(|tag| tag.contains("\"type\": \"grammar\""))
        {
            match &ours {
                Some(StructuredOutputs::StructuralTag {
                    json: Some(json), ..
                }) if Some(json.as_str()) == expected => {
                    *checked.entry(tool.to_owned()).or_default() += 1;
                    *cohere_exact.entry(tool.to_owned()).or_default() += 1;
                }
                Some(StructuredOutputs::StructuralTag { json: None, .. })
                    if matches!(
                        cohere_tools_grammar(&tools),
                        Err(ToolGrammarError::Unsupported { .. })
                    ) =>
                {
                    *xgrammar_grammars.entry(tool.to_owned()).or_default() += 1;
                }
                other => failures.push(format!("{label}: ours {other:?}, vLLM {expected:?}")),
            }
            continue;
        }
        match (&ours, expected) {
            (
                Some(StructuredOutputs::StructuralTag {
                    json: Some(json), ..
                }),
                Some(tag),
            ) => {
                if json != tag {
                    failures.push(format!("{label}:\n  ours {json}\n  vLLM {tag}"));
                } else {
                    *checked.entry(tool.to_owned()).or_default() += 1;
                    if architecture.is_some() {
                        *cohere_exact.entry(tool.to_owned()).or_default() += 1;
                    }
                }
            }
            (Some(StructuredOutputs::StructuralTag { json: None, .. }), Some(_))
                if NOT_BUILT.contains(&tool) => {}
            (Some(StructuredOutputs::StructuralTag { json: None, .. }), Some(_)) => {
                failures.push(format!("{label}: not built"));
            }
            (None, None) => {}
            (Some(StructuredOutputs::Json(_)), None)
                if entry["structured_outputs"].get("json").is_some() => {}
            _ if NOT_BUILT.contains(&tool) => {}
            (ours, _) => failures.push(format!(
                "{label}: ours {ours:?}, vLLM {}",
                entry["structured_outputs"]
            )),
        }
    }
    eprintln!("byte-equal structural tags (or refusals) per tool parser: {checked:?}");
    eprintln!("Cohere tool grammars outside the converted subset: {xgrammar_grammars:?}");
    eprintln!("Cohere tags byte-equal: {cohere_exact:?}");
    let built = checked
        .keys()
        .filter(|t| !t.starts_with("cohere_command"))
        .count();
    assert!(
        failures.is_empty(),
        "{} of the structural-tag cases differ from vLLM:\n{}",
        failures.len(),
        failures[..failures.len().min(15)].join("\n")
    );
    assert_eq!(built, 24 - NOT_BUILT.len(), "{checked:?}");
    // Every server level was recorded.
    assert_eq!(levels.len(), 4, "{levels:?}");
    // Cohere's exact tags (tools, a JSON output format) and refusals.
    for cohere in ["cohere_command3", "cohere_command4"] {
        assert!(checked.get(cohere).is_some_and(|n| *n > 0), "{checked:?}");
        assert!(
            cohere_exact.get(cohere).is_some_and(|n| *n > 0),
            "{cohere_exact:?}"
        );
    }
}
