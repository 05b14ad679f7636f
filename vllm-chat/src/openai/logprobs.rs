//! Log probabilities in the two OpenAI shapes vLLM 0.33.0 returns, as typed values.
//!
//! Chat responses carry `{"content": [{"token", "logprob", "bytes", "top_logprobs"}]}`;
//! completions carry parallel lists (`text_offset`, `token_logprobs`, `tokens`,
//! `top_logprobs`), the last one a list of `{token: logprob}` dicts. Typed values
//! serialize straight to JSON without building a `serde_json::Value` tree per token,
//! which matters when every streamed token carries top-20 alternatives.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// vLLM's `ChatCompletionLogProb`: one token with its log probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatTopLogprob {
    /// The token's text (or `token_id:N` with `return_tokens_as_token_ids`).
    pub token: String,
    /// Log probability (vLLM clamps at -9999.0).
    pub logprob: f64,
    /// The UTF-8 bytes of `token`.
    pub bytes: Option<Vec<u8>>,
}

impl ChatTopLogprob {
    /// A token with its text's bytes, as vLLM builds every entry.
    pub fn new(token: impl Into<String>, logprob: f64) -> Self {
        let token = token.into();
        let bytes = Some(token.as_bytes().to_vec());
        Self {
            token,
            logprob,
            bytes,
        }
    }
}

/// vLLM's `ChatCompletionLogProbsContent`: a sampled token and its best alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatLogprobEntry {
    /// The sampled token's text.
    pub token: String,
    /// Its log probability.
    pub logprob: f64,
    /// The UTF-8 bytes of `token`.
    pub bytes: Option<Vec<u8>>,
    /// The request's `top_logprobs` best candidates at this position.
    #[serde(default)]
    pub top_logprobs: Vec<ChatTopLogprob>,
}

impl ChatLogprobEntry {
    /// The sampled token (with its bytes) and its alternatives.
    pub fn new(sampled: ChatTopLogprob, top_logprobs: Vec<ChatTopLogprob>) -> Self {
        let ChatTopLogprob {
            token,
            logprob,
            bytes,
        } = sampled;
        Self {
            token,
            logprob,
            bytes,
            top_logprobs,
        }
    }
}

/// vLLM's `ChatCompletionLogProbs`: `{"content": [...]}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatLogprobs {
    /// One entry per output token.
    pub content: Option<Vec<ChatLogprobEntry>>,
}

/// A completion position's `{token: logprob}` dict, in insertion order.
///
/// A Python dict keeps a key's first position and its last value; two candidates that
/// decode to the same text therefore collapse into one entry. [`TopLogprobMap::insert`]
/// does the same, so the JSON equals vLLM's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopLogprobMap(Vec<(String, f64)>);

impl TopLogprobMap {
    /// An empty dict with room for `n` entries.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// `dict[token] = logprob`: a new key goes last, an existing one keeps its place.
    pub fn insert(&mut self, token: String, logprob: f64) {
        match self.0.iter_mut().find(|(t, _)| *t == token) {
            Some(entry) => entry.1 = logprob,
            None => self.0.push((token, logprob)),
        }
    }

    /// The entries in order.
    pub fn entries(&self) -> &[(String, f64)] {
        &self.0
    }
}

impl Serialize for TopLogprobMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (token, logprob) in &self.0 {
            map.serialize_entry(token, logprob)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for TopLogprobMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let entries = ordered_entries(deserializer)?;
        let mut map = Self::with_capacity(entries.len());
        for (token, logprob) in entries {
            map.insert(token, logprob);
        }
        Ok(map)
    }
}

/// Reads a JSON object's entries in document order.
fn ordered_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, f64)>, D::Error> {
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<(String, f64)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of token to logprob")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut a: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(a.size_hint().unwrap_or(0).min(64));
            while let Some(entry) = a.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Entries)
}

/// vLLM's `CompletionLogProbs`: parallel per-token lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionLogprobs {
    /// Where each token's text starts, in characters from the start of the choice's text.
    pub text_offset: Vec<usize>,
    /// Each sampled token's log probability (`null` for an echoed first prompt token).
    pub token_logprobs: Vec<Option<f64>>,
    /// Each sampled token's text.
    pub tokens: Vec<String>,
    /// Each position's best `logprobs + 1` candidates.
    pub top_logprobs: Vec<Option<TopLogprobMap>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_entries_serialize_in_vllm_field_order() {
        let entry = ChatLogprobEntry::new(
            ChatTopLogprob::new("é", -0.25),
            vec![ChatTopLogprob::new("a", -9999.0)],
        );
        let json = serde_json::to_string(&ChatLogprobs {
            content: Some(vec![entry]),
        })
        .unwrap();
        assert_eq!(
            json,
            r#"{"content":[{"token":"é","logprob":-0.25,"bytes":[195,169],"top_logprobs":[{"token":"a","logprob":-9999.0,"bytes":[97]}]}]}"#
        );
        let back: ChatLogprobs = serde_json::from_str(&json).unwrap();
        assert_eq!(back.content.unwrap()[0].top_logprobs[0].token, "a");
    }

    #[test]
    fn top_logprob_map_collapses_equal_texts_like_a_python_dict() {
        let mut map = TopLogprobMap::default();
        map.insert("a".into(), -1.0);
        map.insert("b".into(), -2.0);
        map.insert("a".into(), -3.0);
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"a":-3.0,"b":-2.0}"#
        );
        let back: TopLogprobMap = serde_json::from_str(r#"{"x":-1.5,"y":-0.5}"#).unwrap();
        assert_eq!(back.entries()[1], ("y".to_owned(), -0.5));
    }
}
