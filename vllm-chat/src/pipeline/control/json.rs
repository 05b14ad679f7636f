//! JSON values to the msgpack values the engine receives, and back: what Python's
//! `json.loads` then `msgspec` encoding do to a request body's `init_info`,
//! `update_info` or `collective_rpc` arguments.

use serde_json::{Number, Value as Json};
use vllm_client::Value;

/// A JSON value as msgpack: integers stay integers, other numbers become floats, objects
/// keep their member order.
pub fn json_to_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::F64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(items) => Value::Array(items.iter().map(json_to_value).collect()),
        Json::Object(members) => Value::Map(
            members
                .iter()
                .map(|(k, v)| (Value::Str(k.clone()), json_to_value(v)))
                .collect(),
        ),
    }
}

/// A msgpack value as JSON: bytes become arrays of numbers, non-string map keys their
/// JSON text, non-finite floats `null` (JSON has none of them).
pub fn value_to_json(value: &Value) -> Json {
    match value {
        Value::Nil => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::F64(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::F32(f) => Number::from_f64(f64::from(*f)).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.clone()),
        Value::Bin(bytes) | Value::Ext(_, bytes) => {
            Json::Array(bytes.iter().map(|b| Json::from(*b)).collect())
        }
        Value::Array(items) => Json::Array(items.iter().map(value_to_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => s.clone(),
                        other => value_to_json(other).to_string(),
                    };
                    (key, value_to_json(v))
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_through_msgpack_values() {
        let json: Json = serde_json::from_str(
            r#"{"names": ["w"], "shapes": [[2, 3]], "scale": 0.5, "neg": -1, "big": 18446744073709551615, "none": null, "ok": true}"#,
        )
        .unwrap();
        let value = json_to_value(&json);
        assert_eq!(value.get("neg"), Some(&Value::Int(-1)));
        assert_eq!(value.get("big"), Some(&Value::UInt(u64::MAX)));
        assert_eq!(value_to_json(&value), json);
    }
}
