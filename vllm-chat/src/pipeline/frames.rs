//! The SSE frames of a chat stream's content chunks, with the fields every chunk
//! repeats serialized once per stream.
//!
//! Every mid-stream `chat.completion.chunk` starts with the same `id`, `object`,
//! `created` and `model` and ends with `"kv_transfer_params":null`; only the choice (and,
//! with continuous usage stats, the usage) changes. Serializing the constant head once
//! saves copying the id and model into every chunk and writing them again, which is a
//! large share of a one-token chunk's cost. The bytes equal those of
//! [`ChatCompletionChunk::delta`] serialized by [`sse::frame`](super::sse::frame) (tested).

use crate::openai::{ChatChunkChoice, Emit, Usage};
use serde::Serialize;

#[cfg(doc)]
use crate::openai::ChatCompletionChunk;

/// Writes one stream's content-chunk frames.
#[derive(Debug, Clone)]
pub struct ChatDeltaFrames {
    /// `data: {"id":…,"object":…,"created":…,"model":…,"choices":[`.
    head: Vec<u8>,
}

/// The leading fields of [`ChatCompletionChunk`], in its field order.
#[derive(Serialize)]
struct Head<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
}

/// Room for the choice of a chunk with a few tokens of text, without regrowth.
const CHOICE_CAPACITY: usize = 384;
/// Room for one token's logprobs (token, bytes, a few alternatives).
const LOGPROB_CAPACITY: usize = 768;

impl ChatDeltaFrames {
    /// The frames of the stream `id`, created at `created`, answered by `model`.
    pub fn new(id: &str, created: u64, model: &str) -> Self {
        let mut head = b"data: ".to_vec();
        let fields = Head {
            id,
            object: "chat.completion.chunk",
            created,
            model,
        };
        // Serializing strings and an integer into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut head, &fields);
        head.pop(); // the object's closing brace: more fields follow
        head.extend_from_slice(br#","choices":["#);
        Self { head }
    }

    /// The frame of `ChatCompletionChunk::delta(id, created, model, choice)`, with `usage`
    /// set when given (continuous usage stats).
    pub fn frame(&self, choice: &ChatChunkChoice, usage: Option<&Usage>) -> String {
        let logprobs = match &choice.logprobs {
            Emit::Set(Some(logprobs)) => logprobs.content.as_ref().map_or(0, Vec::len),
            _ => 0,
        };
        let capacity = self.head.len() + CHOICE_CAPACITY + logprobs * LOGPROB_CAPACITY;
        let mut out = Vec::with_capacity(capacity);
        out.extend_from_slice(&self.head);
        let written = serde_json::to_writer(&mut out, choice).and_then(|()| {
            out.push(b']');
            match usage {
                Some(usage) => {
                    out.extend_from_slice(br#","usage":"#);
                    serde_json::to_writer(&mut out, usage)
                }
                None => Ok(()),
            }
        });
        if written.is_err() {
            // Only a failing `Serialize` impl gets here; send an empty frame, as
            // `sse::frame` does.
            return "data: \n\n".to_owned();
        }
        out.extend_from_slice(b",\"kv_transfer_params\":null}\n\n");
        // serde_json writes UTF-8; the head and the suffix are UTF-8 too.
        String::from_utf8(out).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use crate::openai::{
        ChatCompletionChunk, ChatLogprobEntry, ChatLogprobs, ChatTopLogprob, DeltaMessage,
    };

    use super::*;
    use crate::pipeline::sse;

    fn choices() -> Vec<ChatChunkChoice> {
        let text = |t: &str| DeltaMessage {
            content: Emit::value(t.to_owned()),
            ..DeltaMessage::default()
        };
        let mut with_logprobs = ChatChunkChoice::new(0, text("é\"\n"));
        with_logprobs.logprobs = Emit::value(ChatLogprobs {
            content: Some(vec![ChatLogprobEntry::new(
                ChatTopLogprob::new("é", -0.5),
                vec![ChatTopLogprob::new("x", -9999.0)],
            )]),
        });
        let mut last = ChatChunkChoice::new(0, DeltaMessage::default());
        last.finish_reason = Emit::value("stop".into());
        last.stop_reason = Emit::Set(None);
        last.weight_versions = Emit::null();
        vec![ChatChunkChoice::new(0, text("hi")), with_logprobs, last]
    }

    #[test]
    fn frames_equal_the_typed_chunk_serialized() {
        let (id, created, model) = ("chatcmpl-\u{7}q\"", 1_700_000_000, "qwen/ü");
        let frames = ChatDeltaFrames::new(id, created, model);
        for choice in choices() {
            for usage in [None, Some(Usage::new(12, 3))] {
                let mut chunk = ChatCompletionChunk::delta(id, created, model, choice.clone());
                if let Some(usage) = &usage {
                    chunk.usage = Emit::value(usage.clone());
                }
                assert_eq!(frames.frame(&choice, usage.as_ref()), sse::frame(&chunk));
            }
        }
    }
}
