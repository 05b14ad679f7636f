//! The protocol types with serde: JSON with vLLM's field names, beside the field-order
//! msgpack that the same declarations produce.
//!
//! Every golden vector from vLLM (`golden/vectors.json`, `golden/kv_events.json`) is
//! decoded from msgpack, written as JSON, read back, and must be equal to what was decoded
//! and still re-encode to vLLM's bytes.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use vllm_client::kv_events::*;
use vllm_client::protocol::*;
use vllm_client::{decode, encode};

/// The keys of a JSON object in the order they were written (`serde_json::Value` sorts
/// them).
struct Keys(Vec<String>);

impl<'de> Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(k);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(V)
    }
}

fn keys_in_order(text: &str) -> Vec<String> {
    serde_json::from_str::<Keys>(text).unwrap().0
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Vectors with raw bytes inside an untyped field (`Value::Bin` in `extra_keys`): JSON has
/// no bytes, so they read back as an array of integers. Their JSON is still stable.
const BYTES_IN_UNTYPED_FIELDS: &[&str] = &["batch_stored_every_field"];

/// msgpack → Rust → JSON → Rust: equal, and still vLLM's bytes. Returns the JSON text.
fn json_round_trip<T>(name: &str, frames: &[Bytes]) -> String
where
    T: vllm_client::wire::Encode
        + vllm_client::wire::Decode
        + Serialize
        + for<'de> Deserialize<'de>
        + PartialEq
        + std::fmt::Debug,
{
    let value: T = decode(&frames[0], &frames[1..]).unwrap();
    let text = serde_json::to_string(&value).unwrap();
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{name}: JSON does not read back: {e}\n{text}"));
    assert_eq!(
        serde_json::to_string(&back).unwrap(),
        text,
        "{name}: JSON not stable"
    );
    if BYTES_IN_UNTYPED_FIELDS.contains(&name) {
        return text;
    }
    assert_eq!(back, value, "{name}: JSON round trip changed the value");
    let (payload, extra) = encode(&back);
    assert_eq!(payload, frames[0], "{name}: re-encoded payload differs");
    assert_eq!(extra, frames[1..], "{name}: extra frames differ");
    text
}

#[test]
fn every_golden_vector_round_trips_through_json() {
    let golden: Json = serde_json::from_str(include_str!("golden/vectors.json")).unwrap();
    let mut checked = 0;
    for v in golden["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let frames: Vec<Bytes> = v["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| Bytes::from(hex(h.as_str().unwrap())))
            .collect();
        let json = match v["kind"].as_str().unwrap() {
            "EngineCoreRequest" => json_round_trip::<EngineCoreRequest>(name, &frames),
            "EngineCoreOutputs" => json_round_trip::<EngineCoreOutputs>(name, &frames),
            "Abort" => json_round_trip::<Abort>(name, &frames),
            "UtilityCall" => json_round_trip::<UtilityCall>(name, &frames),
            "StartDpWave" => json_round_trip::<StartDpWave>(name, &frames),
            "HandshakeStatus" => json_round_trip::<HandshakeStatus>(name, &frames),
            "EngineHandshakeMetadata" => json_round_trip::<EngineHandshakeMetadata>(name, &frames),
            "EngineCoreReadyResponse" => json_round_trip::<EngineCoreReadyResponse>(name, &frames),
            other => panic!("{name}: unknown kind {other}"),
        };
        assert!(
            json.starts_with('{') || json.starts_with('['),
            "{name}: {json}"
        );
        checked += 1;
    }
    assert!(checked >= 40, "{checked}");
}

#[test]
fn every_kv_event_batch_round_trips_through_json() {
    let golden: Json = serde_json::from_str(include_str!("golden/kv_events.json")).unwrap();
    let mut checked = 0;
    for v in golden["vectors"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let frames = [Bytes::from(hex(v["hex"].as_str().unwrap()))];
        let text = json_round_trip::<KVEventBatch>(name, &frames);
        #[derive(Deserialize)]
        struct EventKeys {
            events: Vec<Keys>,
        }
        let batch: EventKeys = serde_json::from_str(&text).unwrap();
        for keys in batch.events {
            // The tag comes first, as msgspec writes it.
            assert_eq!(keys.0[0], "type", "{name}: {text}");
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
}

#[test]
fn a_request_is_json_with_vllm_s_field_names() {
    let mut sp = SamplingParams {
        temperature: 0.7,
        max_tokens: Some(8),
        stop: vec!["</s>".into()],
        output_kind: RequestOutputKind::Delta,
        ..SamplingParams::default()
    };
    sp.set_eos_token_id(2);
    sp.apply_post_init();
    let mut request = EngineCoreRequest::new("req-1", vec![1, 2, 3], sp);
    request.arrival_time = 1.5;
    request.lora_request = Some(LoRARequest::new("adapter", 1, "/loras/a"));
    let json = serde_json::to_value(&request).unwrap();

    assert_eq!(json["request_id"], "req-1");
    assert_eq!(json["prompt_token_ids"], json!([1, 2, 3]));
    assert_eq!(json["arrival_time"], 1.5);
    assert_eq!(json["lora_request"]["lora_name"], "adapter");
    let sp = &json["sampling_params"];
    // f64 end to end: 0.7 stays 0.7.
    assert_eq!(sp["temperature"], 0.7);
    assert_eq!(sp["max_tokens"], 8);
    // Private fields under their Python names, enums as vLLM's integers.
    assert_eq!(sp["_eos_token_id"], 2);
    assert_eq!(sp["_all_stop_token_ids"], json!([2]));
    assert_eq!(sp["output_kind"], 1);
    assert_eq!(sp["output_text_buffer_length"], 3);
    assert!(sp.get("eos_token_id").is_none());
    // Every field of the struct is named, in declaration order.
    let text = serde_json::to_string(&request).unwrap();
    assert_eq!(keys_in_order(&text), EngineCoreRequest::FIELDS);
    let sp_text = serde_json::to_string(&request.sampling_params).unwrap();
    assert_eq!(keys_in_order(&sp_text), SamplingParams::FIELDS);

    let back: EngineCoreRequest = serde_json::from_str(&text).unwrap();
    assert_eq!(back, request);
    // The msgpack of the value read from JSON is the msgpack of the original.
    assert_eq!(encode(&back), encode(&request));
}

#[test]
fn outputs_are_json_with_names_and_integers() {
    let outputs = EngineCoreOutputs {
        engine_index: 1,
        outputs: vec![EngineCoreOutput {
            request_id: "r".into(),
            new_token_ids: vec![7, 8],
            new_logprobs: Some(Box::new(LogprobsLists::from_rows(
                &[vec![(7, -0.5), (9, -1.5)], vec![(8, -0.25), (3, -2.0)]],
                &[1, 1],
            ))),
            finish_reason: Some(FinishReason::Stop),
            stop_reason: Some(StopReason::Text("\n".into())),
            events: Some(vec![EngineCoreEvent {
                event_type: EngineCoreEventType::Scheduled,
                timestamp: 2.0,
            }]),
            ..Default::default()
        }],
        utility_output: Some(UtilityOutput {
            call_id: 4,
            failure_message: None,
            result: Some(UtilityResult(Value::from(vec!["a", "b"]))),
        }),
        timestamp: 3.25,
        ..Default::default()
    };
    let json = serde_json::to_value(&outputs).unwrap();
    let out = &json["outputs"][0];
    assert_eq!(out["finish_reason"], 0);
    assert_eq!(out["stop_reason"], "\n");
    // `EngineCoreEvent.type` in vLLM, `event_type` in Rust.
    assert_eq!(out["events"][0], json!({"type": 2, "timestamp": 2.0}));
    let lists = &out["new_logprobs"];
    assert_eq!(lists["logprob_token_ids"]["dtype"], "<i4");
    assert_eq!(lists["logprob_token_ids"]["shape"], json!([2, 2]));
    assert_eq!(
        lists["sampled_token_ranks"]["data"],
        json!([1, 0, 0, 0, 1, 0, 0, 0])
    );
    assert_eq!(
        json["utility_output"]["result"],
        json!({"value": ["a", "b"]})
    );
    let back: EngineCoreOutputs =
        serde_json::from_str(&serde_json::to_string(&outputs).unwrap()).unwrap();
    assert_eq!(back, outputs);
    assert_eq!(encode(&back), encode(&outputs));
}

#[test]
fn kv_events_carry_their_tag_and_unknown_events_survive() {
    let batch = KVEventBatch {
        ts: 1.0,
        events: vec![
            BlockStored {
                block_hashes: vec![ExternalBlockHash::Int(u64::MAX)],
                parent_block_hash: Some(ExternalBlockHash::Bytes(vec![1, 2])),
                token_ids: vec![5, 6],
                block_size: 2,
                medium: Some(MEDIUM_GPU.into()),
                ..BlockStored::default()
            }
            .into(),
            BlockRemoved {
                block_hashes: vec![ExternalBlockHash::NegativeInt(-3)],
                ..BlockRemoved::default()
            }
            .into(),
            AllBlocksCleared {}.into(),
            KVCacheEvent::Unknown(Value::Map(vec![
                (Value::from("type"), Value::from("BlockReused")),
                (Value::from("n"), Value::UInt(3)),
            ])),
        ],
        data_parallel_rank: Some(0),
    };
    let json = serde_json::to_value(&batch).unwrap();
    let events = json["events"].as_array().unwrap();
    assert_eq!(events[0]["type"], "BlockStored");
    assert_eq!(events[0]["block_hashes"], json!([u64::MAX]));
    assert_eq!(events[0]["parent_block_hash"], json!([1, 2]));
    assert_eq!(events[1]["type"], "BlockRemoved");
    assert_eq!(events[1]["block_hashes"], json!([-3]));
    assert_eq!(events[2], json!({"type": "AllBlocksCleared"}));
    assert_eq!(events[3], json!({"type": "BlockReused", "n": 3}));
    // Read from text: `serde_json::Value` would sort the unknown event's keys.
    let back: KVEventBatch = serde_json::from_str(&serde_json::to_string(&batch).unwrap()).unwrap();
    assert_eq!(back, batch);
    assert_eq!(encode(&back), encode(&batch));
    // A standalone event is tagged too.
    assert_eq!(
        serde_json::to_value(AllBlocksCleared {}).unwrap(),
        json!({"type": "AllBlocksCleared"})
    );
}

#[test]
fn json_reading_is_tolerant_like_the_wire() {
    // Missing fields take vLLM's defaults; unknown fields are ignored.
    let sp: SamplingParams =
        serde_json::from_str(r#"{"temperature": 0.5, "a_future_field": [1]}"#).unwrap();
    assert_eq!(sp.temperature, 0.5);
    assert_eq!(sp.max_tokens, Some(16));
    assert_eq!(
        sp,
        SamplingParams {
            temperature: 0.5,
            ..SamplingParams::default()
        }
    );
    let status: HandshakeStatus = serde_json::from_str(r#"{"status": "HELLO"}"#).unwrap();
    assert_eq!(status.status, "HELLO");
    // Values the protocol does not allow are refused, not guessed.
    assert!(serde_json::from_str::<FinishReason>("9").is_err());
    assert!(serde_json::from_str::<PauseMode>(r#""sideways""#).is_err());
    assert_eq!(
        serde_json::from_str::<PauseMode>(r#""keep""#).unwrap(),
        PauseMode::Keep
    );
    assert_eq!(
        serde_json::to_value(SleepLevel::DiscardAll).unwrap(),
        json!(2)
    );
    assert_eq!(
        serde_json::to_value(WakeTag::KvCache).unwrap(),
        json!("kv_cache")
    );
}

#[test]
fn protocol_types_nest_in_an_application_s_own_serde_types() {
    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Logged {
        at: String,
        request: EngineCoreRequest,
        outputs: Vec<EngineCoreOutput>,
        config: KVEventsConfig,
    }
    let logged = Logged {
        at: "2026-12-01T00:00:00Z".into(),
        request: EngineCoreRequest::new("x", vec![1], SamplingParams::default()),
        outputs: vec![EngineCoreOutput {
            request_id: "x".into(),
            new_token_ids: vec![2],
            finish_reason: Some(FinishReason::Length),
            ..Default::default()
        }],
        config: KVEventsConfig::default(),
    };
    let text = serde_json::to_string_pretty(&logged).unwrap();
    assert!(text.contains(r#""request_id": "x""#), "{text}");
    assert!(text.contains(r#""buffer_steps": 10000"#), "{text}");
    let back: Logged = serde_json::from_str(&text).unwrap();
    assert_eq!(back, logged);
}
