//! The `kv-events` example's JSON equals what a Python consumer of vLLM renders: for
//! every golden batch of `vllm-client/tests/golden/kv_events.json`, our rendering of the
//! decoded batch equals `msgspec.to_builtins` of vLLM's (made by
//! `vllm-client/scripts/gen_kv_golden.py`).

use vllm_client::kv_events::KVEventBatch;
use vllm_examples::kv_json::batch_json;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn batches_render_as_vllm_s_builtins() {
    let golden: serde_json::Value = serde_json::from_str(include_str!(
        "../../vllm-client/tests/golden/kv_events.json"
    ))
    .unwrap();
    let vectors = golden["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 7);
    for (seq, v) in vectors.iter().enumerate() {
        let name = v["name"].as_str().unwrap();
        let batch: KVEventBatch =
            vllm_client::wire::from_slice(&hex(v["hex"].as_str().unwrap())).unwrap();
        let line = batch_json(seq as u64, &batch);
        let ours: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{name}: {e}: {line}"));
        let theirs = &v["builtins"];
        assert_eq!(ours["seq"], seq, "{name}");
        assert_eq!(ours["ts"], theirs[0], "{name}");
        assert_eq!(ours["events"], theirs[1], "{name}");
        assert_eq!(ours["data_parallel_rank"], theirs[2], "{name}");
        // The tag comes first, as msgspec writes it (serde_json sorts keys: check the text).
        if let Some(first) = theirs[1].as_array().unwrap().first() {
            assert!(
                line.contains(&format!("{{\"type\": {}", first["type"])),
                "{name}: {line}"
            );
        }
    }
}
