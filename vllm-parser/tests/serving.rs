//! Whole requests replayed through `vllm_parser::serving` against what vLLM
//! 0.33.0's serving code did with them (`scripts/gen_serving_corpus.py`,
//! `tests/fixtures/serving/*.json.gz`): the adjusted request, the engine
//! request's `reasoning_ended`, and the message and finish reason, whole and
//! streamed at several chunkings.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};
use vllm_parser::response_template::ResponseTemplate;
use vllm_parser::serving::{
    ServingError, ServingParsers, ServingRequest, StructuredOutputs, ToolChoice,
};
use vllm_parser::{MistralTokenizerInfo, Tool};

mod jsonl_fixture;

fn entries() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/serving");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/serving exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let family = name.trim_end_matches(".json.gz").to_owned();
        let (header, entries) = jsonl_fixture::read(&format!("serving/{name}"));
        // The other fixtures here (structural tags, beam grammars and messages,
        // xgrammar's answers) have tests of their own.
        if header["generated_by"] == "scripts/gen_serving_corpus.py" {
            out.extend(entries.into_iter().map(|e| (family.clone(), e)));
        }
    }
    out
}

/// A message as the corpus normalises it: `""` is `None`, blank content beside
/// calls is `None`, ids only when the format makes them.
fn normalise(message: &vllm_parser::ParsedMessage, finish_reason: &str) -> Value {
    let calls: Vec<Value> = message
        .tool_calls
        .iter()
        .map(|c| {
            let mut call = serde_json::json!({"name": c.name, "arguments": c.arguments});
            if let Some(id) = &c.id
                && !is_random_id(id)
            {
                call["id"] = Value::from(id.clone());
            }
            call
        })
        .collect();
    let mut content = message.content.clone().filter(|c| !c.is_empty());
    if !calls.is_empty()
        && content
            .as_deref()
            .is_some_and(vllm_parser::text::py_is_blank)
    {
        content = None;
    }
    serde_json::json!({
        "content": content,
        "reasoning": message.reasoning.clone().filter(|r| !r.is_empty()),
        "tool_calls": calls,
        "finish_reason": finish_reason,
    })
}

/// Without random ids, for comparison.
fn strip_random_ids(mut v: Value) -> Value {
    if let Some(calls) = v.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            if let Some(obj) = call.as_object_mut()
                && obj
                    .get("id")
                    .and_then(Value::as_str)
                    .is_some_and(is_random_id)
            {
                obj.remove("id");
            }
        }
    }
    v
}

/// vLLM's random ids: `chatcmpl-tool-…`, and Mistral's 9 alphanumerics.
fn is_random_id(id: &str) -> bool {
    id.starts_with("chatcmpl-tool-")
        || (id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Deltas: text and token ids.
type Pieces = Vec<(String, Vec<u32>)>;

/// The chunkings a case is streamed at: the engine's tokens, 1, 3 and 7
/// characters, and the whole text in one delta.
fn chunkings(output: &str, chunks: &[Value]) -> Vec<(String, Pieces)> {
    let token: Pieces = chunks
        .iter()
        .map(|c| {
            let ids = c["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap() as u32);
            (c["text"].as_str().unwrap().to_owned(), ids.collect())
        })
        .collect();
    let mut out = vec![("tokens".to_owned(), token)];
    let chars: Vec<char> = output.chars().collect();
    for size in [1, 3, 7] {
        let pieces = chars
            .chunks(size)
            .map(|p| (p.iter().collect::<String>(), Vec::new()))
            .collect();
        out.push((format!("{size} chars"), pieces));
    }
    out.push(("whole stream".into(), vec![(output.to_owned(), Vec::new())]));
    out
}

#[test]
fn serving_corpus_matches_vllm() {
    let entries = entries();
    assert!(!entries.is_empty(), "no serving fixtures");
    let mut failures: Vec<String> = Vec::new();
    let mut checked = 0;
    for (family, entry) in &entries {
        let config = &entry["config"];
        let label = format!(
            "{family} [{}/{}] {} {}",
            config["reasoning"].as_str().unwrap_or("-"),
            config["tool"].as_str().unwrap_or("-"),
            entry["scenario"].as_str().unwrap(),
            entry["variant"].as_str().unwrap(),
        );
        let adjusted = &entry["adjusted"];
        if adjusted.get("invalid").is_some() {
            continue;
        }
        let vocab: HashMap<String, u32> = entry["vocab"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap() as u32))
            .collect();
        let template = config["response_template"]
            .as_object()
            .map(|_| Arc::new(ResponseTemplate::from_json(&config["response_template"]).unwrap()));
        // Mistral's tokens the vocabulary lacks (recorded for `mistral` parsers).
        let absent: Vec<&str> = entry["absent_tokens"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let parsers = match ServingParsers::new(
            config["reasoning"].as_str(),
            config["tool"].as_str(),
            // `--enable-auto-tool-choice` with every tool parser.
            config["tool"].is_string(),
            template,
            // Tokens the prompt does not hold exist under ids it does not hold.
            |t| {
                if absent.contains(&t) {
                    return None;
                }
                Some(vocab.get(t).copied().unwrap_or(u32::MAX))
            },
        ) {
            // A mistral-common tokenizer (`--tokenizer-mode mistral`).
            Ok(p) => match entry.get("mistral_tokenizer") {
                Some(info) => p.with_mistral_tokenizer(MistralTokenizerInfo {
                    version: info["version"].as_u64().unwrap() as u32,
                    supports_grammar: info["supports_grammar"].as_bool().unwrap(),
                }),
                None => p,
            },
            Err(e) => {
                failures.push(format!("{label}: start-up refused: {e}"));
                continue;
            }
        };
        // A gpt-oss model renders Harmony (vLLM's `use_harmony`).
        let parsers = if config["model_type"] == "gpt_oss" {
            parsers.with_model_architecture("GptOssForCausalLM")
        } else {
            parsers
        };
        let prompt: Vec<u32> = entry["prompt_token_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect();
        let body = &entry["request"];
        let tools: Option<Vec<Tool>> = body["tools"]
            .as_array()
            .map(|t| t.iter().filter_map(Tool::from_openai).collect());
        let kwargs: Map<String, Value> = body["chat_template_kwargs"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let request = ServingRequest {
            tools: tools.as_deref(),
            tool_choice: body.get("tool_choice").and_then(ToolChoice::from_openai),
            parallel_tool_calls: body["parallel_tool_calls"].as_bool(),
            include_reasoning: body["include_reasoning"].as_bool().unwrap_or(true),
            ..ServingRequest::new(&kwargs)
        };
        // The prompt as the response-template parsers read it (vLLM's `_decode`).
        let prompt_text = entry["prompt_text"].as_str();
        assert_eq!(
            prompt_text.is_some(),
            parsers.reads_prompt(),
            "{label}: prompt_text recorded exactly for the parsers that read it"
        );
        let got = parsers.adjust_request_for_prompt(&request, prompt_text.unwrap_or_default());
        match (adjusted.get("error"), &got) {
            (
                Some(message),
                Err(ServingError {
                    message: ours,
                    param,
                    ..
                }),
            ) => {
                if message.as_str() != Some(ours) || adjusted["param"].as_str() != param.as_deref()
                {
                    failures.push(format!("{label}: error {ours:?}, vLLM {message}"));
                }
                continue;
            }
            (Some(message), Ok(_)) => {
                failures.push(format!("{label}: accepted, vLLM refused: {message}"));
                continue;
            }
            (None, Err(e)) => {
                failures.push(format!("{label}: refused ({e}), vLLM accepted"));
                continue;
            }
            (None, Ok(ours)) => {
                let skip = match adjusted["skip_special_tokens"].as_bool() {
                    Some(false) => Some(false),
                    _ => None,
                };
                let spaces = match adjusted["spaces_between_special_tokens"].as_bool() {
                    Some(false) => Some(false),
                    _ => None,
                };
                let so = &adjusted["structured_outputs"];
                let so_ok = match (&ours.structured_outputs, so) {
                    (None, Value::Null) => true,
                    (Some(StructuredOutputs::Json(a)), b) => b.get("json") == Some(a),
                    (Some(StructuredOutputs::StructuralTag { .. }), b) => {
                        b.get("structural_tag").is_some()
                    }
                    _ => false,
                };
                if ours.skip_special_tokens != skip
                    || ours.spaces_between_special_tokens != spaces
                    || !so_ok
                {
                    failures.push(format!("{label}: adjusted {ours:?}, vLLM {adjusted}",));
                }
                // The engine request's `reasoning_ended` (vLLM's
                // `resolve_reasoning_ended` after `adjust_request`).
                let ended = parsers.resolve_reasoning_ended(&request, ours, &prompt, prompt_text);
                if Value::from(ended) != adjusted["reasoning_ended"] {
                    failures.push(format!(
                        "{label}: reasoning_ended {ended:?}, vLLM {}",
                        adjusted["reasoning_ended"]
                    ));
                }
            }
        }
        for case in entry["cases"].as_array().unwrap() {
            let Some(expected) = case.get("expected") else {
                continue;
            };
            let expected = strip_random_ids(expected.clone());
            // Where vLLM's own modes disagree and no corpus decided, either answer.
            let alternative = (case["follow"] == "either")
                .then(|| strip_random_ids(case["vllm_streaming"].clone()));
            let matches = |ours: &Value| *ours == expected || alternative.as_ref() == Some(ours);
            let output = case["output"].as_str().unwrap();
            checked += 1;
            // Whole.
            let mut parser = parsers
                .choice_parser(&request, &prompt, prompt_text, false)
                .unwrap();
            let events = parser.push(output, &[], true);
            let whole = normalise(&parser.message(&events), parser.finish_reason("stop"));
            if !matches(&whole) {
                failures.push(format!(
                    "{label} whole {output:?}:\n  ours  {whole}\n  vLLM  {expected} (follow {})",
                    case["follow"]
                ));
                continue;
            }
            for (name, pieces) in chunkings(output, case["chunks"].as_array().unwrap()) {
                let mut parser = parsers
                    .choice_parser(&request, &prompt, prompt_text, true)
                    .unwrap();
                let mut events = Vec::new();
                let n = pieces.len();
                for (i, (text, ids)) in pieces.iter().enumerate() {
                    events.extend(parser.push(text, ids, i + 1 == n));
                }
                if n == 0 {
                    events.extend(parser.push("", &[], true));
                }
                let streamed = normalise(&parser.message(&events), parser.finish_reason("stop"));
                if !matches(&streamed) {
                    failures.push(format!(
                        "{label} streamed ({name}) {output:?}:\n  ours  {streamed}\n  vLLM  {expected}"
                    ));
                    break;
                }
            }
        }
    }
    if !failures.is_empty() {
        // SERVING_SHOW=N shows N differences (default 60).
        let show = std::env::var("SERVING_SHOW")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(60);
        let shown: Vec<&String> = failures.iter().take(show).collect();
        panic!(
            "{} of the serving corpus differ from vLLM ({checked} outputs checked):\n{}",
            failures.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// vLLM's `ResponseTemplateParser` parses every `tool_choice` with the
/// template (`required` and named choices like `auto`), whole and streamed
/// (`scripts/gen_beam_messages.py`: `beam` on `gen_beam_grammars.py`'s
/// templates, at the message start).
#[test]
fn beam_parses_every_tool_choice_as_vllm() {
    let (header, entries) = jsonl_fixture::read("serving/beam_messages.json.gz");
    assert!(!entries.is_empty(), "no beam messages");
    let kwargs = Map::new();
    let mut failures = Vec::new();
    for entry in &entries {
        let template_name = entry["template"].as_str().unwrap();
        let template = ResponseTemplate::from_json(&header["templates"][template_name]).unwrap();
        let parsers = ServingParsers::new(
            entry["reasoning"].as_str(),
            Some("beam"),
            true,
            Some(Arc::new(template)),
            |_| Some(u32::MAX),
        )
        .unwrap();
        let body = &entry["request"];
        let tools: Vec<Tool> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Tool::from_openai)
            .collect();
        let request = ServingRequest {
            tools: Some(&tools),
            tool_choice: ToolChoice::from_openai(&body["tool_choice"]),
            ..ServingRequest::new(&kwargs)
        };
        let output = entry["output"].as_str().unwrap();
        let label = format!(
            "{template_name} [{} / beam] {} {output:?}",
            entry["reasoning"], entry["choice"]
        );
        let prefix = entry["prefix"].as_str();
        let mut parser = parsers.choice_parser(&request, &[], prefix, false).unwrap();
        let events = parser.push(output, &[], true);
        let whole = normalise(&parser.message(&events), parser.finish_reason("stop"));
        if whole != strip_random_ids(entry["whole"].clone()) {
            failures.push(format!(
                "{label} whole:\n  ours  {whole}\n  vLLM  {}",
                entry["whole"]
            ));
            continue;
        }
        let expected = strip_random_ids(entry["streamed"].clone());
        for (name, pieces) in chunkings(output, entry["chunks"].as_array().unwrap()) {
            let mut parser = parsers.choice_parser(&request, &[], prefix, true).unwrap();
            let mut events = Vec::new();
            let n = pieces.len();
            for (i, (text, ids)) in pieces.iter().enumerate() {
                events.extend(parser.push(text, ids, i + 1 == n));
            }
            let streamed = normalise(&parser.message(&events), parser.finish_reason("stop"));
            if streamed != expected {
                failures.push(format!(
                    "{label} streamed ({name}):\n  ours  {streamed}\n  vLLM  {expected}"
                ));
                break;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} beam messages differ from vLLM:\n{}",
        failures.len(),
        entries.len(),
        failures.join("\n")
    );
}
