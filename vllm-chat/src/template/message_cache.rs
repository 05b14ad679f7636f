//! Converted messages as template values, kept across requests.
//!
//! A chat client resends the whole history every turn, so all but the newest
//! messages of a request were converted (vLLM's preprocessing, then template values)
//! for an earlier one. Messages are looked up by a hash of their content and
//! compared in full before a cached value is used.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use minijinja::Value;

use super::value::from_json;
use super::{ContentFormat, identical};
use crate::RenderError;
use crate::openai::{ChatMessage, ContentPart, MessageContent};
use crate::preprocess::convert_message;

/// Largest number of cached messages before the cache is cleared.
const CACHED_MESSAGES: usize = 4096;

/// Cached messages by key, and the bytes they hold.
type Entries = (HashMap<u64, (ContentFormat, ChatMessage, Value)>, usize);

/// Recently converted messages, per content format, and the bytes they hold.
#[derive(Debug)]
pub(crate) struct MessageCache {
    messages: Mutex<Entries>,
    /// The bytes the cache may hold ([`Limits::message_cache_bytes`](super::Limits)); it
    /// is cleared when a new entry would exceed them.
    budget: usize,
    /// Larger entries are not cached ([`Limits::cache_entry_bytes`](super::Limits)).
    max_entry: usize,
}

impl Default for MessageCache {
    fn default() -> Self {
        let limits = super::Limits::default();
        Self::new(limits.message_cache_bytes, limits.cache_entry_bytes)
    }
}

/// An estimate of the memory a converted JSON value takes once as JSON and once as a
/// template value: its strings, plus 64 bytes per node.
pub(crate) fn json_bytes(value: &serde_json::Value) -> usize {
    use serde_json::Value as J;
    64 + match value {
        J::String(s) => 2 * s.len(),
        J::Array(items) => items.iter().map(json_bytes).sum(),
        J::Object(map) => map.iter().map(|(k, v)| 2 * k.len() + json_bytes(v)).sum(),
        _ => 0,
    }
}

impl MessageCache {
    pub(crate) fn new(budget: usize, max_entry: usize) -> Self {
        MessageCache {
            messages: Mutex::default(),
            budget,
            max_entry: max_entry.min(budget),
        }
    }

    /// The messages as the template's `messages` list. Only for conversations whose
    /// messages are converted one by one (see `preprocess::converts_developer_messages`).
    pub(crate) fn values(
        &self,
        messages: &[ChatMessage],
        format: ContentFormat,
    ) -> Result<Value, RenderError> {
        let keys: Vec<u64> = messages.iter().map(|m| key(m, format)).collect();
        // One lock for every lookup; misses are converted outside it.
        let cached: Vec<Option<Value>> = match self.messages.lock() {
            Ok(cache) => messages
                .iter()
                .zip(&keys)
                .map(|(message, key)| {
                    cache
                        .0
                        .get(key)
                        .filter(|(f, m, _)| *f == format && identical::message(m, message))
                        .map(|(_, _, v)| v.clone())
                })
                .collect(),
            Err(_) => vec![None; messages.len()],
        };
        let mut out = Vec::with_capacity(messages.len());
        for (i, ((message, key), cached)) in messages.iter().zip(keys).zip(cached).enumerate() {
            let value = match cached {
                Some(value) => value,
                None => {
                    let json = convert_message(i, message, format)?;
                    let value = from_json(&json);
                    // The message is kept too (compared in full on a hit): count it twice.
                    let size = 2 * json_bytes(&json);
                    if size <= self.max_entry
                        && let Ok(mut guard) = self.messages.lock()
                    {
                        let (cache, bytes) = &mut *guard;
                        if cache.len() >= CACHED_MESSAGES || *bytes + size > self.budget {
                            cache.clear();
                            *bytes = 0;
                        }
                        if cache
                            .insert(key, (format, message.clone(), value.clone()))
                            .is_none()
                        {
                            *bytes += size;
                        }
                    }
                    value
                }
            };
            out.push(value);
        }
        Ok(Value::from(out))
    }
}

/// The multiply-rotate hash of rustc's `FxHasher`: a cache key needs speed, not
/// SipHash's resistance to chosen collisions (a collision costs a cache miss, as
/// entries are compared in full).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut tail = [0u8; 8];
        let rest = chunks.remainder();
        tail[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(tail) ^ rest.len() as u64);
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

fn key(message: &ChatMessage, format: ContentFormat) -> u64 {
    let mut h = KeyHasher::default();
    (format == ContentFormat::String).hash(&mut h);
    message.role.hash(&mut h);
    match &message.content {
        None => 0u8.hash(&mut h),
        Some(MessageContent::Text(text)) => {
            1u8.hash(&mut h);
            text.hash(&mut h);
        }
        Some(MessageContent::Parts(parts)) => {
            2u8.hash(&mut h);
            for part in parts {
                match part {
                    ContentPart::Str(s) => s.hash(&mut h),
                    ContentPart::Typed { kind, text, rest } => {
                        kind.hash(&mut h);
                        text.hash(&mut h);
                        rest.len().hash(&mut h);
                    }
                }
            }
        }
    }
    message.name.hash(&mut h);
    message.tool_call_id.hash(&mut h);
    message.reasoning.hash(&mut h);
    message.task.hash(&mut h);
    message.tool_calls.as_ref().map(Vec::len).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::MessageCache;
    use crate::openai::ChatMessage;

    /// Entries count in bytes: the cache stays within its budget, and an entry above the
    /// per-entry size is not kept at all.
    #[test]
    fn the_cache_is_bounded_in_bytes() {
        let cache = MessageCache::new(1 << 20, 64 << 10);
        for i in 0..200 {
            let text = format!("{i} {}", "x".repeat(20_000));
            cache
                .values(&[message("system", text.into())], ContentFormat::String)
                .unwrap();
            let (map, bytes) = &*cache.messages.lock().unwrap();
            assert!(*bytes <= 1 << 20, "{bytes}");
            assert!(map.len() <= (1 << 20) / 40_000, "{}", map.len());
        }
        let big = "y".repeat(100 << 10);
        cache
            .values(&[message("system", big.into())], ContentFormat::String)
            .unwrap();
        let (map, _) = &*cache.messages.lock().unwrap();
        assert!(map.values().all(|(_, m, _)| m.role != "system"
            || !matches!(&m.content, Some(crate::openai::MessageContent::Text(t)) if t.starts_with('y'))));
    }
    use crate::template::ContentFormat;

    fn message(role: &str, content: serde_json::Value) -> ChatMessage {
        serde_json::from_value(serde_json::json!({"role": role, "content": content})).unwrap()
    }

    /// Messages that hash alike (tool-call bodies are not hashed) still get their own
    /// values, in both content formats, hit or miss.
    #[test]
    fn a_cached_message_is_used_only_for_an_equal_message() {
        let cache = MessageCache::default();
        let call = |args: &str| {
            let mut m = message("assistant", serde_json::Value::Null);
            m.tool_calls = Some(vec![serde_json::json!(
                {"id": "1", "type": "function", "function": {"name": "f", "arguments": args}}
            )]);
            m
        };
        let messages = vec![
            message("user", "hi".into()),
            call("{\"a\": 1}"),
            call("{\"a\": 2}"),
            message(
                "user",
                serde_json::json!([{"type": "text", "text": "x"}, {"type": "text", "text": "y"}]),
            ),
        ];
        for _ in 0..2 {
            for format in [ContentFormat::String, ContentFormat::OpenAi] {
                let got = cache.values(&messages, format).unwrap();
                let direct: Vec<_> = messages
                    .iter()
                    .enumerate()
                    .map(|(i, m)| crate::preprocess::convert_message(i, m, format).unwrap())
                    .collect();
                let got: serde_json::Value = serde_json::to_value(&got).unwrap();
                assert_eq!(got, serde_json::Value::Array(direct));
            }
        }
    }
}
