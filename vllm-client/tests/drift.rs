//! Drift check: reads the field lists of the protocol structs straight from vLLM's Python
//! source and fails if our declared order differs. Runs when `VLLM_SOURCE_DIR` points at
//! a vLLM source tree (the `vllm/` package directory); `scripts/interop.sh` sets it to the
//! reference environment's copy. The next vLLM release: point it at the new source.

use std::path::Path;

use vllm_client::kv_events::{
    AllBlocksCleared, BlockRemoved, BlockStored, KVEventBatch, KVEventsConfig,
};
use vllm_client::protocol::*;

/// Field names of `class NAME` in a Python file: the annotated assignments at the class
/// body's indentation, in order (`name: type` or `name: type = default`).
fn python_fields(source: &str, class: &str) -> Vec<String> {
    let header = format!("class {class}");
    let mut lines = source
        .lines()
        .skip_while(|l| !(l.starts_with(&header) && l[header.len()..].starts_with(['(', ':'])));
    assert!(lines.next().is_some(), "class {class} not found");
    let mut fields = Vec::new();
    let mut in_docstring = false;
    for line in lines {
        // Docstrings may hold `word:` lines; skip everything between triple quotes.
        let quotes = line.matches("\"\"\"").count();
        if in_docstring || quotes > 0 {
            in_docstring ^= quotes % 2 == 1;
            continue;
        }
        if !line.is_empty() && !line.starts_with(' ') && !line.starts_with(')') {
            break; // The next top-level statement ends the class.
        }
        let Some(body) = line.strip_prefix("    ") else {
            continue;
        };
        if body.starts_with(' ') || body.starts_with('#') {
            continue;
        }
        if let Some((name, _)) = body.split_once(':') {
            let name = name.trim();
            if !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                && !body.starts_with("def ")
            {
                fields.push(name.to_owned());
            }
        }
    }
    fields
}

#[test]
fn field_orders_match_vllm_python_source() {
    let Ok(dir) = std::env::var("VLLM_SOURCE_DIR") else {
        eprintln!("VLLM_SOURCE_DIR not set: drift check skipped");
        return;
    };
    let read = |rel: &str| {
        std::fs::read_to_string(Path::new(&dir).join(rel))
            .unwrap_or_else(|e| panic!("read {rel}: {e}"))
    };
    let engine = read("v1/engine/__init__.py");
    let sampling = read("sampling_params.py");
    let kv_events = read("distributed/kv_events.py");
    let kv_events_config = read("config/kv_events.py");
    let checks: &[(&str, &str, &[&str])] = &[
        ("EngineCoreRequest", &engine, EngineCoreRequest::FIELDS),
        ("EngineCoreOutput", &engine, EngineCoreOutput::FIELDS),
        ("EngineCoreOutputs", &engine, EngineCoreOutputs::FIELDS),
        ("UtilityOutput", &engine, UtilityOutput::FIELDS),
        ("EngineCoreEvent", &engine, EngineCoreEvent::FIELDS),
        (
            "EngineCoreReadyResponse",
            &engine,
            EngineCoreReadyResponse::FIELDS,
        ),
        ("SamplingParams", &sampling, SamplingParams::FIELDS),
        (
            "StructuredOutputsParams",
            &sampling,
            StructuredOutputsParams::FIELDS,
        ),
        (
            "RepetitionDetectionParams",
            &sampling,
            RepetitionDetectionParams::FIELDS,
        ),
        // KVEventBatch(EventBatch) only narrows `events`: the fields are EventBatch's.
        ("EventBatch", &kv_events, KVEventBatch::FIELDS),
        ("BlockStored", &kv_events, BlockStored::FIELDS),
        ("BlockRemoved", &kv_events, BlockRemoved::FIELDS),
        ("AllBlocksCleared", &kv_events, AllBlocksCleared::FIELDS),
        ("KVEventsConfig", &kv_events_config, KVEventsConfig::FIELDS),
    ];
    let mut drift = Vec::new();
    for (class, source, ours) in checks {
        let theirs = python_fields(source, class);
        if theirs != *ours {
            drift.push(format!("{class}:\n  vLLM: {theirs:?}\n  ours: {ours:?}"));
        }
    }
    // KVEventBatch itself may only re-declare fields of EventBatch.
    let narrowed = python_fields(&kv_events, "KVEventBatch");
    if narrowed
        .iter()
        .any(|f| !KVEventBatch::FIELDS.contains(&f.as_str()))
    {
        drift.push(format!("KVEventBatch declares new fields: {narrowed:?}"));
    }
    // The event tags are the class names (msgspec `tag=True`), and the classes are
    // declared with it.
    for (class, tag) in [
        ("BlockStored", BlockStored::TAG),
        ("BlockRemoved", BlockRemoved::TAG),
        ("AllBlocksCleared", AllBlocksCleared::TAG),
    ] {
        if tag != Some(class) || !kv_events.contains(&format!("class {class}(KVCacheEvent)")) {
            drift.push(format!("{class}: not a KVCacheEvent tagged {tag:?}"));
        }
    }
    if !kv_events.contains("tag=True") {
        drift.push("KVCacheEvent is no longer declared tag=True".to_owned());
    }
    assert!(drift.is_empty(), "protocol drift:\n{}", drift.join("\n"));
}

#[test]
fn the_source_reader_reads_class_bodies() {
    let src = "class A(\n    base,\n):\n    x: int\n    \"\"\"Doc\n    NOTE: no\"\"\"\n    # c\n    y: str = \"a:b\"\n\n    def f(self) -> int:\n        z: int = 1\n\nclass B:\n    w: int\n";
    assert_eq!(python_fields(src, "A"), vec!["x", "y"]);
    assert_eq!(python_fields(src, "B"), vec!["w"]);
}
