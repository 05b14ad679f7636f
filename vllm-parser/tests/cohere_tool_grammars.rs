//! The structural tag vLLM 0.33.0's Cohere Command parser class puts on a
//! request with tools (`scripts/gen_cohere_tool_grammars.py`,
//! `tests/fixtures/serving/cohere_tool_grammars.json.gz`): its grammar embeds
//! xgrammar 0.2.8's JSON-schema conversion of every tool. For each case the
//! crate either gives vLLM's string byte for byte, or says the tools are
//! outside the subset it converts ([`ToolGrammarError::Unsupported`]) and
//! leaves the tag unbuilt; a supported case that differs fails.

use serde_json::{Map, Value};
use vllm_parser::Tool;
use vllm_parser::serving::{
    ServingErrorKind, ServingParsers, ServingRequest, StructuredOutputs, ToolGrammarError,
    cohere_tools_grammar,
};

mod jsonl_fixture;

fn entries() -> Vec<Value> {
    jsonl_fixture::read("serving/cohere_tool_grammars.json.gz").1
}

/// The first line where the two tags' grammars differ.
fn first_difference(label: &str, ours: &str, vllm: &str) -> String {
    let grammar = |tag: &str| -> String {
        let tag: Value = serde_json::from_str(tag).unwrap();
        tag["format"]["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["content"]["grammar"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let (ours, vllm) = (grammar(ours), grammar(vllm));
    for (i, (a, b)) in ours.lines().zip(vllm.lines()).enumerate() {
        if a != b {
            return format!("{label}: line {i}\n  ours {a}\n  vLLM {b}");
        }
    }
    format!(
        "{label}: {} lines, vLLM {}",
        ours.lines().count(),
        vllm.lines().count()
    )
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    exact: usize,
    unsupported: usize,
    refused: usize,
}

#[test]
fn cohere_tool_grammars_are_vllms_or_declared_unsupported() {
    let kwargs = Map::new();
    let mut failures = Vec::new();
    let mut realistic = Tally::default();
    let mut sweep = Tally::default();
    let mut features = Tally::default();
    let mut bounds = Tally::default();
    let mut reading = Tally::default();
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for entry in entries() {
        let label = entry["case"].as_str().unwrap().to_owned();
        let tally = if entry["realistic"] == true {
            &mut realistic
        } else if label.starts_with("features/") {
            &mut features
        } else if label.starts_with("bounds/") {
            &mut bounds
        } else if label.starts_with("reading/") {
            &mut reading
        } else {
            &mut sweep
        };
        tally.cases += 1;
        let tools: Vec<Tool> = entry["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Tool::from_openai)
            .collect();
        let parsers = ServingParsers::new(
            Some("cohere_command3"),
            Some("cohere_command3"),
            true,
            None,
            |_| Some(u32::MAX),
        )
        .unwrap()
        .with_model_architecture(entry["architecture"].as_str().unwrap());
        let response_format = entry.get("response_format").filter(|f| !f.is_null());
        let request = ServingRequest {
            tools: Some(&tools),
            response_format_set: response_format.is_some(),
            response_format,
            ..ServingRequest::new(&kwargs)
        };
        let converted = cohere_tools_grammar(&tools);
        let ours = parsers.adjust_request(&request);
        let expected = entry["structural_tag"].as_str();
        let vllm_error = entry["error"].as_str();
        match (&converted, vllm_error) {
            (Err(ToolGrammarError::Refused(message)), Some(error)) => {
                match &ours {
                    Err(e) if &e.message == message && error.ends_with(message.as_str()) => {
                        tally.refused += 1;
                    }
                    other => failures.push(format!("{label}: ours {other:?}, vLLM {error}")),
                }
                continue;
            }
            // xgrammar refuses a tool's schema: vLLM fails with its RuntimeError (a 500).
            (Err(ToolGrammarError::XgrammarRefused { .. }), Some(error))
                if error.starts_with("RuntimeError") =>
            {
                match &ours {
                    Err(e) if e.kind == ServingErrorKind::Internal => tally.refused += 1,
                    other => failures.push(format!("{label}: ours {other:?}, vLLM {error}")),
                }
                continue;
            }
            (Err(ToolGrammarError::XgrammarRefused { tool }), _) => {
                failures.push(format!("{label}: tool {tool} refused, vLLM {vllm_error:?}"));
                continue;
            }
            (Err(ToolGrammarError::Unsupported { reason, .. }), _) => {
                let kind = format!("{reason}");
                let kind = kind.split(':').take(2).collect::<Vec<_>>().join(":");
                let realistic = if entry["realistic"] == true {
                    "realistic"
                } else if label.starts_with("features/") {
                    "features"
                } else if label.starts_with("bounds/") {
                    "bounds"
                } else if label.starts_with("reading/") {
                    "reading"
                } else {
                    "sweep"
                };
                *reasons.entry(format!("{realistic} {kind}")).or_default() += 1;
                match ours.as_ref().map(|a| &a.structured_outputs) {
                    Ok(Some(StructuredOutputs::StructuralTag { json: None, .. })) => {
                        tally.unsupported += 1;
                    }
                    other => failures.push(format!("{label}: unsupported but {other:?}")),
                }
                continue;
            }
            (_, Some(error)) => {
                failures.push(format!("{label}: converted, vLLM refused: {error}"));
                continue;
            }
            (Ok(_), None) | (Err(ToolGrammarError::Refused(_)), None) => {}
        }
        match (ours.as_ref().map(|a| &a.structured_outputs), expected) {
            (
                Ok(Some(StructuredOutputs::StructuralTag {
                    json: Some(json), ..
                })),
                Some(tag),
            ) if json == tag => tally.exact += 1,
            (
                Ok(Some(StructuredOutputs::StructuralTag {
                    json: Some(json), ..
                })),
                Some(tag),
            ) => failures.push(first_difference(&label, json, tag)),
            (other, _) => failures.push(format!("{label}: ours {other:?}, vLLM {expected:?}")),
        }
    }
    eprintln!("realistic tools: {realistic:?}");
    eprintln!("generated sweep: {sweep:?}");
    eprintln!("generated features sweep: {features:?}");
    eprintln!("generated bounds sweep: {bounds:?}");
    eprintln!("generated reading sweep: {reading:?}");
    eprintln!("unsupported: {reasons:#?}");
    assert!(
        failures.is_empty(),
        "{} Cohere tool grammars differ from vLLM:\n{}",
        failures.len(),
        failures[..failures.len().min(8)].join("\n")
    );
    // Floors, so that a converter change that loses cases is noticed.
    assert!(realistic.exact >= 354, "{realistic:?}");
    assert!(sweep.exact >= 791, "{sweep:?}");
    assert!(features.exact >= 232, "{features:?}");
    assert!(bounds.exact >= 311, "{bounds:?}");
    assert!(reading.exact >= 277, "{reading:?}");
}
