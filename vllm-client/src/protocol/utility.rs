//! Utility calls: remote method calls on the engine (`sleep`, `add_lora`, …).

use crate::wire::{Decode, DecodeError, Encode, Reader, Value, Writer};

/// UTILITY payload `(client_index, call_id, method_name, args)`.
///
/// With serde, a struct with those names (`method` for `method_name`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct UtilityCall {
    /// The calling frontend's index (where the result is sent).
    pub client_index: i64,
    /// Identifies the call in the [`UtilityOutput`].
    pub call_id: u64,
    /// The engine method.
    pub method: String,
    /// Positional arguments (a Python tuple).
    pub args: Vec<Value>,
}

impl Encode for UtilityCall {
    fn encode(&self, w: &mut Writer) {
        w.array_len(4);
        w.int(self.client_index);
        w.uint(self.call_id);
        w.str(&self.method);
        self.args.encode(w);
    }
}

impl Decode for UtilityCall {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array()?;
        if n != 4 {
            return Err(DecodeError::Invalid {
                what: "UtilityCall",
                detail: format!("expected 4 elements, found {n}"),
            });
        }
        let call = UtilityCall {
            client_index: r.int()?,
            call_id: r.int()?,
            method: String::decode(r)?,
            args: Vec::decode(r)?,
        };
        r.leave();
        Ok(call)
    }
}

/// A utility call's return value. On the wire `[type_info, result]`; vLLM only sends
/// type information (for pickled custom types) when insecure serialization is enabled,
/// and such results are refused here.
///
/// With serde it is `{"value": …}`: a bare value would make a call that returned `None`
/// (`Some(UtilityResult(Value::Nil))`) read back as no result at all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UtilityResult(pub Value);

/// [`UtilityResult`]'s serde form.
#[derive(serde::Serialize, serde::Deserialize)]
struct UtilityResultRepr<V> {
    value: V,
}

impl serde::Serialize for UtilityResult {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        UtilityResultRepr { value: &self.0 }.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for UtilityResult {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        UtilityResultRepr::<Value>::deserialize(d).map(|r| UtilityResult(r.value))
    }
}

impl Encode for UtilityResult {
    fn encode(&self, w: &mut Writer) {
        w.array_len(2);
        w.nil();
        self.0.encode(w);
    }
}

impl Decode for UtilityResult {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.array()?;
        if n != 2 {
            return Err(DecodeError::Invalid {
                what: "UtilityResult",
                detail: format!("expected [type_info, result], found {n} elements"),
            });
        }
        if !r.nil()? {
            return Err(DecodeError::Invalid {
                what: "UtilityResult",
                detail: "typed results need VLLM_ALLOW_INSECURE_SERIALIZATION (pickle)".into(),
            });
        }
        let value = Value::decode(r)?;
        r.leave();
        Ok(UtilityResult(value))
    }
}

wire_array! {
    /// The outcome of a utility call.
    pub struct UtilityOutput {
        /// The call this answers.
        pub call_id: u64 = 0,
        /// Set when the call failed.
        pub failure_message: Option<String> = None,
        /// The return value when it succeeded.
        pub result: Option<UtilityResult> = None,
    }
}
