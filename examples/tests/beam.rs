//! `--reasoning-parser beam --tool-call-parser beam` through the pipeline: the
//! engine request carries the structural tag vLLM's `BeamParser` derives from the
//! checkpoint's `response_template` for the rendered prompt
//! (`vllm-parser/tests/fixtures/serving/beam_grammars.json.gz`, made by
//! `vllm-parser/scripts/gen_beam_grammars.py`), with `reasoning_ended: true`: the
//! prompt ends at the message start, so the tag covers the reasoning.

mod common;

use std::io::Read;
use std::path::PathBuf;

use common::engine_request;
use serde_json::Value;
use vllm_chat::RendererOptions;
use vllm_chat::pipeline::Model;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture() -> (Value, Vec<Value>) {
    let path = repo().join("vllm-parser/tests/fixtures/serving/beam_grammars.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("fixture"))
        .read_to_string(&mut text)
        .expect("gzip");
    let mut lines = text.lines().map(|l| serde_json::from_str(l).expect("json"));
    let header = lines.next().expect("header");
    (header, lines.collect())
}

#[tokio::test]
async fn beam_sends_vllms_structural_tag_for_the_rendered_prompt() {
    let (header, entries) = fixture();
    // Qwen 3's chat template ends the prompt with `<|im_start|>assistant\n`, the
    // `alternation` template's start anchor.
    let case = entries
        .iter()
        .find(|e| {
            e["template"] == "alternation"
                && e["reasoning"] == "beam"
                && e["tool"] == "beam"
                && e["prompt"] == "start"
                && e["case"] == "several/auto"
        })
        .expect("case");
    let dir = std::env::temp_dir().join(format!("beam-grammar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = repo().join("testdata/models/qwen3");
    for entry in std::fs::read_dir(&source).expect("qwen3") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).expect("copy");
    }
    let config_path = dir.join("tokenizer_config.json");
    let mut config: Value =
        serde_json::from_slice(&std::fs::read(&config_path).unwrap()).expect("config");
    config["response_template"] = header["templates"]["alternation"].clone();
    std::fs::write(&config_path, serde_json::to_vec(&config).unwrap()).unwrap();
    let model = Model::load(&dir, RendererOptions::default()).expect("model loads");
    std::fs::remove_dir_all(&dir).ok();
    let parsers = model
        .serving_parsers(Some("beam"), Some("beam"), true)
        .expect("parsers");

    let sent = engine_request(model, parsers, &case["request"]).await;
    let tag = sent
        .sampling_params
        .as_ref()
        .and_then(|p| p.structured_outputs.as_ref())
        .and_then(|s| s.structural_tag.clone());
    assert_eq!(
        tag.as_deref(),
        case["result"]["structural_tag"].as_str(),
        "vLLM's tag"
    );
    assert_eq!(sent.reasoning_ended, Some(true));
}
