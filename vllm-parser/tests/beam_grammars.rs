//! vLLM 0.33.0's `BeamParser.adjust_request` on synthetic response templates
//! (`scripts/gen_beam_grammars.py`, `tests/fixtures/serving/beam_grammars.json.gz`):
//! every case's structural tag must be vLLM's byte for byte, with the same
//! `_grammar_from_parser` and cleared `response_format`, or the same 400.
//! Cases this crate does not decide (a tag left unbuilt: regexes its
//! xgrammar and Python-parser predicates leave undecided, Lark grammars, EBNF
//! grammars its xgrammar predicate leaves undecided) are counted, and must be
//! exactly those.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use vllm_parser::Tool;
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::serving::{ServingParsers, ServingRequest, StructuredOutputs, ToolChoice};

mod jsonl_fixture;

fn fixture() -> (Value, Vec<Value>) {
    jsonl_fixture::read("serving/beam_grammars.json.gz")
}

/// Whether this crate may leave the case's tag unbuilt: a regex (an
/// `xml-inline` string parameter's `pattern`, a `regex` constraint) that
/// `serving::xgrammar_regex` or `serving::python_re` leaves undecided, a
/// Lark `grammar` constraint, or an EBNF one `serving::xgrammar_ebnf` leaves
/// undecided. Every schema of the fixture is decided, string `pattern`s in
/// JSON arguments included (`serving::xgrammar_fsm_regex`).
fn may_be_unbuilt(entry: &Value) -> bool {
    let case = entry["case"].as_str().unwrap();
    // The `xml-inline` templates with text values read the pattern with `_may_write`.
    let text_values = ["xml", "xml_lookahead"].contains(&entry["template"].as_str().unwrap());
    (case.starts_with("pattern_undecided") && text_values)
        || case.ends_with("so_regex_undecided")
        || case.ends_with("so_grammar_lark")
        || case.ends_with("so_grammar_undecided")
}

#[test]
fn beam_tags_are_vllms_byte_for_byte() {
    let (header, entries) = fixture();
    let templates: BTreeMap<String, Arc<ResponseTemplate>> = header["templates"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, spec)| {
            let template = ResponseTemplate::from_json(spec)
                .unwrap_or_else(|e| panic!("template {name}: {e}"));
            (name.clone(), Arc::new(template))
        })
        .collect();
    let mut failures = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unbuilt: BTreeMap<String, usize> = BTreeMap::new();
    let empty = Map::new();
    for entry in &entries {
        let label = format!(
            "{} [{} / {}] prompt {} case {}",
            entry["template"], entry["reasoning"], entry["tool"], entry["prompt"], entry["case"]
        );
        let template = templates[entry["template"].as_str().unwrap()].clone();
        let tool_parser = entry["tool"].as_str();
        let parsers = ServingParsers::new(
            entry["reasoning"].as_str(),
            tool_parser,
            tool_parser.is_some(),
            Some(template),
            |_| Some(u32::MAX),
        )
        .expect("beam starts");
        let body = &entry["request"];
        let raw_tools = body["tools"].as_array().cloned().unwrap_or_default();
        let tools: Vec<Tool> = raw_tools.iter().filter_map(Tool::from_openai).collect();
        let strict: Vec<bool> = raw_tools
            .iter()
            .map(|t| t["function"]["strict"] == Value::Bool(true))
            .collect();
        let kwargs = body["chat_template_kwargs"].as_object().unwrap_or(&empty);
        let response_format = body.get("response_format");
        let request = ServingRequest {
            tools: body.get("tools").map(|_| tools.as_slice()),
            tool_choice: body.get("tool_choice").and_then(ToolChoice::from_openai),
            parallel_tool_calls: body["parallel_tool_calls"].as_bool(),
            include_reasoning: body["include_reasoning"].as_bool().unwrap_or(true),
            response_format_set: response_format.is_some_and(|f| f["type"] != "text"),
            tools_strict: &strict,
            response_format,
            structured_outputs: body.get("structured_outputs"),
            ..ServingRequest::new(kwargs)
        };
        let result = &entry["result"];
        // The request's own structural tag, kept by vLLM.
        let own_tag = body["structured_outputs"]["structural_tag"].as_str();
        let prefix = entry["prefix"].as_str().unwrap();
        let ours = parsers.adjust_request_for_prompt(&request, prefix);
        if let Ok(adjusted) = &ours
            && let Some(StructuredOutputs::StructuralTag { json: None, .. }) =
                adjusted.structured_outputs
        {
            // Not decided here, whatever vLLM did.
            if may_be_unbuilt(entry) {
                *counts.entry("unbuilt").or_default() += 1;
                let set = entry["case"].as_str().unwrap().split('/').next().unwrap();
                *unbuilt
                    .entry(format!("{}: {set}", entry["template"].as_str().unwrap()))
                    .or_default() += 1;
            } else {
                failures.push(format!("{label}: not built, vLLM {result}"));
            }
            continue;
        }
        match (ours, result["error"].as_str()) {
            (Err(e), Some(message)) => {
                if e.message != message || e.param.as_deref() != result["param"].as_str() {
                    failures.push(format!("{label}: refused {e:?}, vLLM {result}"));
                } else {
                    *counts.entry("refusals").or_default() += 1;
                }
            }
            (Err(e), None) => failures.push(format!("{label}: refused {e:?}, vLLM {result}")),
            (Ok(_), Some(message)) => {
                failures.push(format!("{label}: accepted, vLLM refused: {message}"));
            }
            (Ok(adjusted), None) => {
                let expected = result["structural_tag"].as_str();
                match (&adjusted.structured_outputs, expected) {
                    (
                        Some(StructuredOutputs::StructuralTag {
                            json: Some(json), ..
                        }),
                        Some(tag),
                    ) if json == tag => {
                        let cleared = result["response_format_cleared"].as_bool().unwrap();
                        let grammar = result["grammar_from_parser"].as_bool().unwrap();
                        // A tag replaces any response_format (RequestAdjustments).
                        if adjusted.grammar_from_parser != grammar
                            || cleared != body.get("response_format").is_some()
                        {
                            failures.push(format!(
                                "{label}: grammar_from_parser {} (vLLM {grammar})",
                                adjusted.grammar_from_parser
                            ));
                        } else {
                            *counts.entry("tags").or_default() += 1;
                        }
                    }
                    (None, tag) if !adjusted.grammar_from_parser && tag == own_tag => {
                        *counts.entry("untouched").or_default() += 1;
                    }
                    (ours, _) => failures.push(format!(
                        "{label}:\n  ours {ours:?}\n  vLLM {}",
                        expected.unwrap_or("no tag")
                    )),
                }
            }
        }
    }
    eprintln!("beam cases: {counts:?} of {}", entries.len());
    eprintln!("not decided here (template: tool set): {unbuilt:?}");
    assert!(
        failures.is_empty(),
        "{} of {} beam cases differ from vLLM:\n{}",
        failures.len(),
        entries.len(),
        failures[..failures.len().min(40)].join("\n")
    );
    assert!(counts["tags"] > 1000, "{counts:?}");
}

/// Templates and requests are untrusted: odd ones give a tag, a refusal or an
/// unbuilt tag, never a panic.
#[test]
fn hostile_inputs_do_not_panic() {
    let (header, _) = fixture();
    let mut templates: Vec<Value> = header["templates"]
        .as_object()
        .unwrap()
        .values()
        .cloned()
        .collect();
    let nested = format!("{}x{}", "(?:".repeat(300), ")".repeat(300));
    let mut deep = serde_json::json!({"type": "string"});
    for _ in 0..100 {
        deep = serde_json::json!({"type": "object", "properties": {"a": deep}});
    }
    for (open, close) in [
        (nested.as_str(), r"</c>"),
        (r"(?P<name>\w+)", r"^|$"),
        (
            r"é(?P<name>[^\]]+)\n?",
            r"(?:a|b)?(?:c|d)?(?:e|f)?(?:g|h)?(?:i|j)?",
        ),
        (r"<(?P<name>.*)>", r"\\"),
    ] {
        templates.push(serde_json::json!({
            "start_anchor_pattern": "^|<s>",
            "fields": {
                "thinking": {"open_pattern": "<t>\\n?", "close": "</t>"},
                "tool_calls": {"open_pattern": open, "close_pattern": close, "content": "json",
                    "transform": {"function": {"name": "{name}", "arguments": "{content}"}}},
                "content": {"open": ["<a>", "<a>\n"], "close": "</a>"},
            },
        }));
    }
    let names = [
        "x".repeat(5000),
        "é".into(),
        String::new(),
        "a\u{0}b".into(),
    ];
    let parameters = [
        Value::String("p".into()),
        serde_json::json!([1]),
        deep,
        serde_json::json!({"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}),
    ];
    let tools: Vec<Tool> = names
        .iter()
        .zip(&parameters)
        .map(|(name, parameters)| Tool {
            name: name.clone(),
            description: None,
            parameters: parameters.clone(),
        })
        .collect();
    let strict = [true, false, true, false];
    let kwargs = Map::new();
    let formats = [
        serde_json::json!({"type": "json_schema", "json_schema": {"schema": "nope"}}),
        serde_json::json!({"type": "json_schema"}),
        serde_json::json!({"type": 7}),
    ];
    // `structured_outputs.grammar`s: deep, past the size limit, cut by a NUL,
    // Lark, broken.
    let grammars = [
        serde_json::json!({"grammar": format!("root ::= {}\"a\"{}", "(".repeat(5000), ")".repeat(5000))}),
        serde_json::json!({"grammar": format!("root ::= \"{}\"", "a".repeat(300_000))}),
        serde_json::json!({"grammar": "root ::= \"a\"\u{0}\n(((("}),
        serde_json::json!({"grammar": "start: \"a\""}),
        serde_json::json!({"grammar": "root ::= TagDispatch(((((\"a\""}),
    ];
    let mut served = 0;
    for spec in &templates {
        let Ok(template) = ResponseTemplate::from_json(spec) else {
            continue;
        };
        served += 1;
        let parsers = ServingParsers::new(
            Some("beam"),
            Some("beam"),
            true,
            Some(Arc::new(template)),
            |_| Some(0),
        )
        .unwrap();
        for choice in [
            None,
            Some(ToolChoice::Required),
            Some(ToolChoice::Named("é".into())),
        ] {
            let constraints = formats
                .iter()
                .map(|format| (Some(format), None))
                .chain([(None, None)])
                .chain(grammars.iter().map(|grammar| (None, Some(grammar))));
            for (format, structured_outputs) in constraints {
                let request = ServingRequest {
                    tools: Some(&tools),
                    tool_choice: choice.clone(),
                    parallel_tool_calls: Some(false),
                    response_format_set: format.is_some(),
                    tools_strict: &strict,
                    response_format: format,
                    structured_outputs,
                    ..ServingRequest::new(&kwargs)
                };
                for prefix in [
                    "",
                    "<s>",
                    "<s>é<a>",
                    "<s><a",
                    "\u{0}<s>(?:",
                    "<|turn>model\n<|channel>thought\n",
                ] {
                    let _ = parsers.adjust_request_for_prompt(&request, prefix);
                }
            }
        }
    }
    // The fixture's templates and the odd ones this crate compiles.
    assert!(served >= 9, "{served}");
}
