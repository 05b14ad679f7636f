//! KV-cache event batches as JSON lines, the way a Python consumer of vLLM renders them.
//!
//! `msgspec.to_builtins` of a decoded `KVEventBatch` (the `kv-events` example prints the
//! same, as an object): every event with its `type` tag first and vLLM's field names; the
//! fields without a Python default always present (`null` when unset), the others left out
//! at their default, as msgspec's `omit_defaults` leaves them out; bytes as lowercase hex.
//! Checked against vLLM's own rendering of the golden vectors
//! (`vllm-client/tests/golden/kv_events.json`, `tests/kv_json.rs`).

use vllm_client::kv_events::{
    BlockRemoved, BlockStored, ExternalBlockHash, KVCacheEvent, KVEventBatch,
};
use vllm_client::protocol::Value;

/// A JSON object with its keys in the given order.
fn object(entries: &[(&str, String)]) -> String {
    let body: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}: {v}", json_str(k)))
        .collect();
    format!("{{{}}}", body.join(", "))
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

fn json_opt<T>(v: &Option<T>, f: impl Fn(&T) -> String) -> String {
    v.as_ref().map_or_else(|| "null".to_owned(), f)
}

fn json_list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(", "))
}

fn hash_json(h: &ExternalBlockHash) -> String {
    match h {
        ExternalBlockHash::Bytes(_) => json_str(&h.to_string()),
        _ => h.to_string(),
    }
}

fn value_json(v: &Value) -> String {
    match v {
        Value::Nil => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::F64(f) => serde_json::to_string(f).unwrap_or_else(|_| "null".into()),
        Value::F32(f) => serde_json::to_string(f).unwrap_or_else(|_| "null".into()),
        Value::Str(s) => json_str(s),
        Value::Bin(b) => json_str(&b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
        Value::Array(items) => json_list(items, value_json),
        Value::Map(entries) => {
            let body: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => s.clone(),
                        other => value_json(other),
                    };
                    format!("{}: {}", json_str(&key), value_json(v))
                })
                .collect();
            format!("{{{}}}", body.join(", "))
        }
        Value::Ext(ty, data) => object(&[
            ("ext", ty.to_string()),
            ("data", value_json(&Value::Bin(data.clone()))),
        ]),
    }
}

fn stored_json(e: &BlockStored) -> String {
    let mut entries = vec![
        ("type", json_str("BlockStored")),
        ("block_hashes", json_list(&e.block_hashes, hash_json)),
        (
            "parent_block_hash",
            json_opt(&e.parent_block_hash, hash_json),
        ),
        ("token_ids", json_list(&e.token_ids, u32::to_string)),
        ("block_size", e.block_size.to_string()),
        ("lora_id", json_opt(&e.lora_id, i64::to_string)),
        ("medium", json_opt(&e.medium, |s| json_str(s))),
        ("lora_name", json_opt(&e.lora_name, |s| json_str(s))),
    ];
    // Fields with a default are left out at it, as msgspec leaves them out.
    if let Some(keys) = &e.extra_keys {
        let keys = json_list(keys, |k| json_opt(k, |k| json_list(k, value_json)));
        entries.push(("extra_keys", keys));
    }
    let optional: [(&str, Option<String>); 6] = [
        ("group_idx", e.group_idx.map(|v| v.to_string())),
        (
            "kv_cache_spec_kind",
            e.kv_cache_spec_kind.as_deref().map(json_str),
        ),
        (
            "kv_cache_spec_sliding_window",
            e.kv_cache_spec_sliding_window.map(|v| v.to_string()),
        ),
        ("locality", e.locality.as_deref().map(json_str)),
        ("ownership", e.ownership.as_deref().map(json_str)),
        ("session_id", e.session_id.as_deref().map(json_str)),
    ];
    entries.extend(optional.into_iter().filter_map(|(k, v)| Some((k, v?))));
    if let Some(tokens) = &e.lookahead_token_ids {
        let tokens = json_list(tokens, |t| json_list(t, u32::to_string));
        entries.push(("lookahead_token_ids", tokens));
    }
    object(&entries)
}

fn removed_json(e: &BlockRemoved) -> String {
    let mut entries = vec![
        ("type", json_str("BlockRemoved")),
        ("block_hashes", json_list(&e.block_hashes, hash_json)),
        ("medium", json_opt(&e.medium, |s| json_str(s))),
    ];
    let optional: [(&str, Option<String>); 3] = [
        ("group_idx", e.group_idx.map(|v| v.to_string())),
        ("locality", e.locality.as_deref().map(json_str)),
        ("ownership", e.ownership.as_deref().map(json_str)),
    ];
    entries.extend(optional.into_iter().filter_map(|(k, v)| Some((k, v?))));
    object(&entries)
}

/// One event as `msgspec.to_builtins` renders it.
pub fn event_json(e: &KVCacheEvent) -> String {
    match e {
        KVCacheEvent::BlockStored(e) => stored_json(e),
        KVCacheEvent::BlockRemoved(e) => removed_json(e),
        KVCacheEvent::AllBlocksCleared(_) => object(&[("type", json_str("AllBlocksCleared"))]),
        KVCacheEvent::Unknown(v) => value_json(v),
    }
}

/// One batch as a JSON line: `{"seq", "ts", "data_parallel_rank", "events"}`.
pub fn batch_json(seq: u64, batch: &KVEventBatch) -> String {
    object(&[
        ("seq", seq.to_string()),
        (
            "ts",
            serde_json::to_string(&batch.ts).unwrap_or_else(|_| "null".into()),
        ),
        (
            "data_parallel_rank",
            json_opt(&batch.data_parallel_rank, i64::to_string),
        ),
        ("events", json_list(&batch.events, event_json)),
    ])
}
