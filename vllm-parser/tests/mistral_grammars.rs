//! What vLLM 0.33.0's Mistral parser makes of a request when the model is
//! served with a mistral-common tekken tokenizer (`scripts/gen_mistral_grammars.py`,
//! `tests/fixtures/mistral_grammars.json.gz`, mistral-common 1.12.0): from
//! version 11 on, mistral-common's Lark grammar for the whole reply, byte for
//! byte; before, the `tokenizers`-vocabulary rules (a JSON schema for forced
//! calls). Every case must give vLLM's adjusted request.

use std::path::Path;

use serde_json::{Map, Value};
use vllm_parser::serving::{
    RequestAdjustments, ServingParsers, ServingRequest, StructuredOutputs, ToolChoice,
};
use vllm_parser::{MistralTokenizerInfo, Tool};

fn cases() -> Vec<Value> {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mistral_grammars.json.gz");
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap()),
        &mut text,
    )
    .unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    fixture["cases"].as_array().unwrap().clone()
}

fn parsers(case: &Value) -> ServingParsers {
    let specials = case["specials"].as_object().unwrap();
    let name = |key: &str| case[key].as_str();
    ServingParsers::new(
        name("reasoning_parser"),
        name("tool_parser"),
        name("tool_parser").is_some(),
        None,
        |token| {
            specials
                .get(token)
                .and_then(Value::as_u64)
                .map(|id| id as u32)
        },
    )
    .unwrap()
    .with_mistral_tokenizer({
        let version = case["version"].as_u64().unwrap() as u32;
        MistralTokenizerInfo {
            version,
            supports_grammar: version >= 11,
        }
    })
}

/// Our adjustments in the fixture's terms.
fn observed(adjusted: Result<RequestAdjustments, String>) -> Value {
    let adjusted = match adjusted {
        Ok(adjusted) => adjusted,
        Err(message) => return serde_json::json!({ "error": message }),
    };
    let structured = match adjusted.structured_outputs {
        Some(StructuredOutputs::Grammar(grammar)) => serde_json::json!({ "grammar": grammar }),
        Some(StructuredOutputs::Json(schema)) => serde_json::json!({ "json": schema }),
        Some(other) => serde_json::json!({ "unexpected": format!("{other:?}") }),
        None => Value::Null,
    };
    serde_json::json!({
        "skip_special_tokens": adjusted.skip_special_tokens,
        "structured_outputs": structured,
        "grammar_from_parser": adjusted.grammar_from_parser,
    })
}

/// vLLM's record in the same terms: the request's own constraint (a regex,
/// a `json_object`) stays where it was, which is no adjustment here.
fn expected(adjusted: &Value) -> Option<Value> {
    if adjusted.get("invalid").is_some() {
        return None;
    }
    if adjusted.get("skipped").is_some() {
        return Some(serde_json::json!({ "error": true }));
    }
    if adjusted.get("not_adjusted").is_some() {
        return Some(serde_json::json!({
            "skip_special_tokens": null, "structured_outputs": null, "grammar_from_parser": false,
        }));
    }
    let structured = match &adjusted["structured_outputs"] {
        Value::Object(so) if so.contains_key("other") => Value::Null,
        other => other.clone(),
    };
    Some(serde_json::json!({
        "skip_special_tokens": adjusted["skip_special_tokens"],
        "structured_outputs": structured,
        "grammar_from_parser": adjusted["grammar_from_parser"],
    }))
}

#[test]
fn mistral_parser_adjusts_requests_as_vllm_does() {
    let cases = cases();
    let (mut checked, mut grammars, mut failures) = (0, 0, Vec::new());
    for case in &cases {
        let Some(mut want) = expected(&case["adjusted"]) else {
            continue;
        };
        let body = &case["request"];
        let functions: Vec<&Value> = body["tools"]
            .as_array()
            .map(|tools| tools.iter().map(|t| &t["function"]).collect())
            .unwrap_or_default();
        let tools: Vec<Tool> = functions
            .iter()
            .map(|f| Tool {
                name: f["name"].as_str().unwrap().to_owned(),
                description: f["description"].as_str().map(str::to_owned),
                parameters: f.get("parameters").cloned().unwrap_or(Value::Null),
            })
            .collect();
        let strict: Vec<bool> = functions.iter().map(|f| f["strict"] == true).collect();
        let kwargs = Map::new();
        let response_format = body.get("response_format");
        let request = ServingRequest {
            tools: body.get("tools").map(|_| tools.as_slice()),
            tool_choice: body.get("tool_choice").and_then(ToolChoice::from_openai),
            parallel_tool_calls: body.get("parallel_tool_calls").and_then(Value::as_bool),
            response_format_set: response_format.is_some_and(|f| f["type"] != "text")
                || body.get("structured_outputs").is_some(),
            tools_strict: &strict,
            response_format,
            structured_outputs: body.get("structured_outputs"),
            ..ServingRequest::new(&kwargs)
        };
        let ours = observed(
            parsers(case)
                .adjust_request(&request)
                .map_err(|e| e.message),
        );
        if want.get("error").is_some() && ours.get("error").is_some() {
            want = ours.clone();
        }
        checked += 1;
        grammars += usize::from(want["structured_outputs"].get("grammar").is_some());
        if ours != want {
            failures.push(format!(
                "{} {} tool={} reasoning={}\n  ours {ours}\n  vLLM {want}",
                case["tokenizer"], case["name"], case["tool_parser"], case["reasoning_parser"]
            ));
        }
    }
    assert!(
        checked > 300 && grammars > 150,
        "{checked} cases, {grammars} grammars"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} differ:\n{}",
        failures.len(),
        failures[..failures.len().min(8)].join("\n")
    );
}
