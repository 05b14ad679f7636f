//! Template parity against transformers + vLLM's preprocessing.
//!
//! `tests/fixtures/parity.json.gz` holds, for every template of the corpus and every
//! case of `tests/fixtures/cases.json`, what vLLM 0.33.0 renders (or the error it
//! raises), produced by `scripts/gen_parity_fixtures.py`. This test renders the same
//! requests and reports, per template, `identical` or the first difference.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use vllm_chat::openai::ChatCompletionRequest;
use vllm_chat::{ChatRenderer, ChatTemplates, Clock, FastPathStats, ModelFiles, RendererOptions};

/// Differences where transformers' output is wrong: (template, a text that the
/// reference side of the difference shows, reason). See README.md.
const REFERENCE_BUGS: &[(&str, &str, &str)] = &[(
    "meetkai-functionary-medium-v3.1.jinja",
    "&#34;",
    // The template writes `"'\n"|safe + t["function"] | tojson()`: in jinja2, adding a
    // plain string to a `Markup` HTML-escapes it, so the tool JSON reaches the model as
    // `{&#34;name&#34;: …}`. That escaping is an accident of jinja2's autoescape
    // machinery (the model was trained on plain JSON); we render the JSON unescaped.
    "jinja2 Markup + str HTML-escapes the tool JSON",
)];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

mod common;

use common::{ModelDir, gunzip};

fn fixture() -> Value {
    serde_json::from_slice(&gunzip(&root().join("tests/fixtures/parity.json.gz")))
        .expect("fixture json")
}

fn cases() -> Map<String, Value> {
    let text = std::fs::read_to_string(root().join("tests/fixtures/cases.json")).expect("cases");
    serde_json::from_str(&text).expect("cases json")
}

/// The pinned `strftime_now` instant of the fixtures (2026-01-15T10:30:45).
fn pinned_clock(fixture: &Value) -> Clock {
    assert_eq!(fixture["pinned_now"], "2026-01-15T10:30:45");
    Clock::Fixed(1_768_473_045)
}

/// The special tokens the fixtures rendered the corpus templates with.
fn special_tokens(fixture: &Value) -> Vec<(String, String)> {
    fixture["special_tokens"]
        .as_object()
        .expect("special tokens")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// A renderer for one corpus template, as the fixtures rendered it.
fn corpus_renderer(
    source: &str,
    special: &[(String, String)],
    fixture: &Value,
    interpreter_only: bool,
) -> Result<ChatRenderer, vllm_chat::RenderError> {
    let files = ModelFiles {
        chat_templates: Some(ChatTemplates::Single(source.to_owned())),
        special_tokens: special.to_vec(),
        ..Default::default()
    };
    let options = RendererOptions {
        clock: pinned_clock(fixture),
        interpreter_only,
        ..Default::default()
    };
    ChatRenderer::new(files, options)
}

/// The vendored template corpus.
fn templates_dir() -> PathBuf {
    root().join("../testdata/templates")
}

/// Compares one render with the reference; returns a description of the difference.
fn compare(
    renderer: &ChatRenderer,
    case: &Value,
    expected: &Value,
    with_ids: bool,
) -> Option<String> {
    let request: ChatCompletionRequest = match serde_json::from_value(case.clone()) {
        Ok(r) => r,
        Err(e) => return Some(format!("request does not parse: {e}")),
    };
    let got = if with_ids {
        renderer
            .render(&request)
            .map(|p| (p.text, Some(p.token_ids)))
    } else {
        renderer.render_text(&request).map(|t| (t, None))
    };
    match (got, expected.get("error")) {
        (Err(_), Some(_)) => None,
        (Ok((text, _)), Some(err)) => Some(format!(
            "reference rejects ({err}) but we render {:?}",
            snippet(&text, 0)
        )),
        (Err(e), None) => Some(format!("we reject ({e}) but the reference renders")),
        (Ok((text, ids)), None) => {
            let want = expected["text"].as_str().unwrap_or_default();
            if text != want {
                let pos = text
                    .chars()
                    .zip(want.chars())
                    .take_while(|(a, b)| a == b)
                    .count();
                return Some(format!(
                    "text differs at char {pos}: ours {:?} vs reference {:?}",
                    snippet(&text, pos),
                    snippet(want, pos)
                ));
            }
            if let Some(ids) = ids {
                let want: Vec<u32> =
                    serde_json::from_value(expected["ids"].clone()).unwrap_or_default();
                if ids != want {
                    let pos = ids.iter().zip(&want).take_while(|(a, b)| a == b).count();
                    return Some(format!(
                        "token ids differ at {pos}: ours {:?} vs reference {:?}",
                        &ids[pos..ids.len().min(pos + 5)],
                        &want[pos..want.len().min(pos + 5)]
                    ));
                }
            }
            None
        }
    }
}

fn snippet(s: &str, pos: usize) -> String {
    s.chars().skip(pos.saturating_sub(20)).take(60).collect()
}

fn report(results: &BTreeMap<String, Vec<(String, String)>>) -> usize {
    let mut failures = 0;
    for (name, diffs) in results {
        let unexplained: Vec<_> = diffs
            .iter()
            .filter(|(_, diff)| {
                !REFERENCE_BUGS
                    .iter()
                    .any(|(t, marker, _)| t == name && diff.contains(marker))
            })
            .collect();
        if diffs.is_empty() {
            println!("{name}: identical");
        } else {
            for (case, diff) in diffs {
                let known = if unexplained.iter().any(|(c, _)| c == case) {
                    ""
                } else {
                    " [known reference bug]"
                };
                println!("{name} / {case}: {diff}{known}");
            }
        }
        failures += unexplained.len();
    }
    failures
}

#[test]
fn template_corpus_matches_transformers() {
    let dir = templates_dir();
    let fixture = fixture();
    let cases = cases();
    let special = special_tokens(&fixture);
    let mut results = BTreeMap::new();
    let mut fast = FastPathStats::default();
    for (name, expected) in fixture["templates"].as_object().expect("templates") {
        let source = std::fs::read_to_string(dir.join(name)).expect("template file");
        let diffs = match corpus_renderer(&source, &special, &fixture, false) {
            Ok(renderer) => {
                let renderer = &renderer;
                let mut diffs: Vec<(String, String)> = cases
                    .iter()
                    .filter_map(|(case, body)| {
                        compare(renderer, body, &expected[case], false).map(|d| (case.clone(), d))
                    })
                    .collect();
                let stats = renderer.fast_path_stats();
                fast.finished += stats.finished;
                fast.fell_back += stats.fell_back;
                fast.templates += stats.templates;
                // vLLM's content-format detection, as recorded with the user case.
                let want = expected["user"]["format"].as_str();
                let got = renderer.content_format().map(|f| f.as_str());
                if want.is_some() && got != want {
                    diffs.push((
                        "content_format".into(),
                        format!("detected {got:?}, vLLM detects {want:?}"),
                    ));
                }
                diffs
            }
            Err(e) => vec![("compile".to_owned(), e.to_string())],
        };
        results.insert(name.clone(), diffs);
    }
    let failures = report(&results);
    let identical = results.values().filter(|d| d.is_empty()).count();
    println!(
        "{identical}/{} templates identical on every case",
        results.len()
    );
    // Every case above ran on the compiled fast path where it could (the default),
    // so the comparison covers it; this shows how much of the corpus it served.
    println!(
        "fast path: {} of {} templates compiled; {} renders finished there, {} fell back",
        fast.templates,
        results.len(),
        fast.finished,
        fast.fell_back
    );
    assert_eq!(
        failures, 0,
        "{failures} unexplained differences (see output above)"
    );
}

#[test]
fn model_directories_match_vllm_text_and_tokens() {
    let fixture = fixture();
    let cases = cases();
    let mut results = BTreeMap::new();
    for (name, expected) in fixture["models"].as_object().expect("models") {
        let Some(dir) = ModelDir::new(name) else {
            println!("{name}: not vendored in testdata/models, skipped");
            continue;
        };
        let files = ModelFiles::from_dir(&dir.0).expect("model dir");
        let options = RendererOptions {
            clock: pinned_clock(&fixture),
            ..Default::default()
        };
        let renderer = ChatRenderer::new(files, options).expect("renderer");
        let diffs = cases
            .iter()
            .filter_map(|(case, body)| {
                compare(&renderer, body, &expected[case], true).map(|d| (case.clone(), d))
            })
            .collect();
        let stats = renderer.fast_path_stats();
        println!(
            "{name}: fast path finished {} renders, {} fell back",
            stats.finished, stats.fell_back
        );
        results.insert(name.clone(), diffs);
    }
    assert!(!results.is_empty(), "no model directory vendored");
    let failures = report(&results);
    assert_eq!(
        failures, 0,
        "{failures} unexplained differences (see output above)"
    );
}

/// The compiled fast path and minijinja's interpreter give the same text or the same
/// error on every corpus template and case (the comparison above checks texts
/// against transformers; this one also checks error messages, which must be the
/// interpreter's whichever path started the render).
#[test]
fn fast_path_and_interpreter_agree() {
    let dir = templates_dir();
    let fixture = fixture();
    let cases = cases();
    let special = special_tokens(&fixture);
    let mut compared = 0;
    for name in fixture["templates"].as_object().expect("templates").keys() {
        let source = std::fs::read_to_string(dir.join(name)).expect("template file");
        let renderer = |interpreter_only| {
            corpus_renderer(&source, &special, &fixture, interpreter_only)
                .map_err(|e| e.to_string())
        };
        // A renderer of another template that accepts templates with requests.
        let trusting = {
            let files = ModelFiles {
                chat_templates: Some(ChatTemplates::Single("{{ messages }}".to_owned())),
                special_tokens: special.clone(),
                ..Default::default()
            };
            let options = RendererOptions {
                clock: pinned_clock(&fixture),
                trust_request_chat_template: true,
                ..Default::default()
            };
            ChatRenderer::new(files, options).expect("renderer")
        };
        let (fast, slow) = match (renderer(false), renderer(true)) {
            (Ok(fast), Ok(slow)) => (fast, slow),
            (fast, slow) => {
                assert_eq!(fast.err(), slow.err(), "{name}: compile");
                continue;
            }
        };
        for (case, body) in &cases {
            let Ok(mut request) = serde_json::from_value::<ChatCompletionRequest>(body.clone())
            else {
                continue;
            };
            let got = fast.render_text(&request).map_err(|e| e.to_string());
            let want = slow.render_text(&request).map_err(|e| e.to_string());
            assert_eq!(got, want, "{name} / {case}");
            // The same template sent with the request renders through the interpreter
            // with size checks on its operators and writes: same text, same error.
            request.chat_template = Some(source.clone());
            let got = trusting.render_text(&request).map_err(|e| e.to_string());
            assert_eq!(got, want, "{name} / {case} as a request template");
            compared += 1;
        }
        assert_eq!(
            slow.fast_path_stats().finished,
            0,
            "{name}: interpreter only"
        );
    }
    assert!(compared > 1000, "only {compared} renders compared");
}
