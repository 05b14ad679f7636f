//! An `EngineCoreOutputs` message read for delivery rather than into owned structs.
//!
//! Decoding a step of 2,000 requests into `EngineCoreOutputs` allocates a request-id
//! `String` and a token `Vec` per output, and a vector of ~250-byte outputs that is then
//! moved, output by output, into the mailboxes. Almost every output carries nothing but
//! its request id and new tokens (plus a finish reason at the end), so this reader keeps
//! those as ranges of the frame and of one shared token buffer, reused from message to
//! message; the output task looks the ids up and appends the tokens straight to their
//! mailboxes. Any other output (logprobs, events, a stop reason, …) is read by the full
//! decoder, so what a stream receives is exactly what `EngineCoreOutputs::decode` would
//! have produced.
//!
//! The whole message is read before anything is delivered: a malformed message still
//! fails only the requests it names, none of them half-delivered.

use std::ops::Range;

use crate::protocol::{EngineCoreOutput, EngineCoreOutputs, FinishReason};
use crate::wire::{Decode, DecodeError, Reader, field_index};

const OUTPUTS: usize = field_index(EngineCoreOutputs::FIELDS, "outputs");
const REQUEST_ID: usize = field_index(EngineCoreOutput::FIELDS, "request_id");
const NEW_TOKEN_IDS: usize = field_index(EngineCoreOutput::FIELDS, "new_token_ids");
const FINISH_REASON: usize = field_index(EngineCoreOutput::FIELDS, "finish_reason");
const NUM_NANS: usize = field_index(EngineCoreOutput::FIELDS, "num_nans_in_logits");
const FIELD_COUNT: usize = EngineCoreOutput::FIELDS.len();

// The token-only reader below relies on the id and the tokens coming first.
const _: () = assert!(REQUEST_ID == 0 && NEW_TOKEN_IDS == 1);

/// One output of the message, in message order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Staged {
    /// Only an id, tokens and maybe a finish reason.
    Tokens {
        /// The request id's bytes in the payload (valid UTF-8, checked when read).
        request_id: Range<usize>,
        /// The tokens in [`OutputBatch::tokens`].
        tokens: Range<usize>,
        finish_reason: Option<FinishReason>,
    },
    /// The next of [`OutputBatch::full`].
    Full,
}

/// A decoded `EngineCoreOutputs` message; its buffers are reused for the next one.
#[derive(Default)]
pub(crate) struct OutputBatch {
    /// The outputs in message order.
    pub staged: Vec<Staged>,
    /// The tokens of all `Staged::Tokens` outputs, back to back.
    pub tokens: Vec<u32>,
    /// The outputs that carry more than tokens, in message order.
    pub full: Vec<EngineCoreOutput>,
    /// The message's other fields; its `outputs` stays empty.
    pub rest: EngineCoreOutputs,
}

impl OutputBatch {
    /// Reads a whole message (the reader must hold its payload and frames).
    pub fn read(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        self.staged.clear();
        self.tokens.clear();
        self.full.clear();
        self.rest = EngineCoreOutputs::default();
        let len = r.array()?;
        self.rest.decode_fields(r, 0..OUTPUTS.min(len))?;
        if len > OUTPUTS {
            let n = r.array()?;
            self.staged.reserve(n);
            for _ in 0..n {
                self.read_output(r)?;
            }
            r.leave();
            self.rest.decode_fields(r, OUTPUTS + 1..len)?;
        }
        r.leave();
        r.finish()
    }

    /// The request id of a staged output.
    pub fn request_id(payload: &[u8], range: Range<usize>) -> &str {
        // Checked as UTF-8 when read; `from_utf8` again costs a few nanoseconds and no
        // unsafe code.
        payload
            .get(range)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or_default()
    }

    fn read_output(&mut self, r: &mut Reader<'_>) -> Result<(), DecodeError> {
        let start = r.checkpoint();
        let token_count = self.tokens.len();
        if let Some(staged) = self.read_tokens_only(r) {
            self.staged.push(staged);
            return Ok(());
        }
        // Something the token-only reader does not handle, or an error that the full
        // decoder will report as it always does.
        r.rewind(start);
        self.tokens.truncate(token_count);
        self.full.push(EngineCoreOutput::decode(r)?);
        self.staged.push(Staged::Full);
        Ok(())
    }

    /// Reads an output made only of id, tokens, finish reason, no NaN count and nils;
    /// `None` for anything else (the reader is then somewhere inside the output).
    fn read_tokens_only(&mut self, r: &mut Reader<'_>) -> Option<Staged> {
        let len = r.array().ok()?;
        if !(NEW_TOKEN_IDS + 1..=FIELD_COUNT).contains(&len) {
            return None;
        }
        let id = r.str().ok()?;
        let id_end = r.position();
        let request_id = id_end - id.len()..id_end;
        let first_token = self.tokens.len();
        let n = r.array().ok()?;
        for _ in 0..n {
            self.tokens.push(r.int_of().ok()?);
        }
        r.leave();
        let mut finish_reason = None;
        for field in NEW_TOKEN_IDS + 1..len {
            match field {
                FINISH_REASON => finish_reason = Option::<FinishReason>::decode(r).ok()?,
                NUM_NANS => {
                    if r.int_of::<i64>().ok()? != 0 {
                        return None;
                    }
                }
                // Every other field is optional: only its absence is a token-only output.
                _ => {
                    if !r.nil().ok()? {
                        return None;
                    }
                }
            }
        }
        r.leave();
        Some(Staged::Tokens {
            request_id,
            tokens: first_token..self.tokens.len(),
            finish_reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::StopReason;
    use bytes::Bytes;

    /// The message as `EngineCoreOutputs::decode` reads it, rebuilt from a batch.
    fn reassemble(batch: &OutputBatch, payload: &[u8]) -> EngineCoreOutputs {
        let mut full = batch.full.iter().cloned();
        let outputs = batch
            .staged
            .iter()
            .map(|staged| match staged {
                Staged::Full => full.next().expect("a full output per Staged::Full"),
                Staged::Tokens {
                    request_id,
                    tokens,
                    finish_reason,
                } => EngineCoreOutput {
                    request_id: OutputBatch::request_id(payload, request_id.clone()).to_owned(),
                    new_token_ids: batch.tokens[tokens.clone()].to_vec(),
                    finish_reason: *finish_reason,
                    ..Default::default()
                },
            })
            .collect();
        EngineCoreOutputs {
            outputs,
            ..batch.rest.clone()
        }
    }

    fn read(batch: &mut OutputBatch, frames: &[Bytes]) -> Result<(), DecodeError> {
        batch.read(&mut Reader::with_frames(&frames[0], &frames[1..]))
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn golden_messages_read_as_the_full_decoder_reads_them() {
        let json: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/golden/vectors.json")).unwrap();
        let mut batch = OutputBatch::default();
        let mut checked = 0;
        for vector in json["vectors"].as_array().unwrap() {
            if vector["kind"] != "EngineCoreOutputs" {
                continue;
            }
            let frames: Vec<Bytes> = vector["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| Bytes::from(hex(h.as_str().unwrap())))
                .collect();
            let expected: EngineCoreOutputs = crate::decode(&frames[0], &frames[1..]).unwrap();
            // The same batch is reused, as the output task reuses it.
            read(&mut batch, &frames).unwrap();
            assert_eq!(
                reassemble(&batch, &frames[0]),
                expected,
                "{}",
                vector["name"]
            );
            checked += 1;
        }
        assert_eq!(checked, 21);
    }

    #[test]
    fn token_only_outputs_are_staged_and_the_rest_decoded_in_full() {
        let output = |id: &str, tokens: Vec<u32>| EngineCoreOutput {
            request_id: id.into(),
            new_token_ids: tokens,
            ..Default::default()
        };
        let message = EngineCoreOutputs {
            engine_index: 3,
            outputs: vec![
                output("a", vec![1, 2]),
                EngineCoreOutput {
                    stop_reason: Some(StopReason::Text("\n".into())),
                    finish_reason: Some(FinishReason::Stop),
                    ..output("b", vec![3])
                },
                EngineCoreOutput {
                    finish_reason: Some(FinishReason::Length),
                    ..output("c", vec![4, 5, 6])
                },
                EngineCoreOutput {
                    num_nans_in_logits: 2,
                    ..output("d", vec![])
                },
            ],
            wave_complete: Some(7),
            ..Default::default()
        };
        let (payload, extra) = crate::encode(&message);
        let mut frames = vec![Bytes::from(payload)];
        frames.extend(extra);
        let mut batch = OutputBatch::default();
        read(&mut batch, &frames).unwrap();
        assert!(matches!(batch.staged[0], Staged::Tokens { .. }));
        assert_eq!(batch.staged[1], Staged::Full);
        assert!(matches!(
            batch.staged[2],
            Staged::Tokens {
                finish_reason: Some(FinishReason::Length),
                ..
            }
        ));
        assert_eq!(batch.staged[3], Staged::Full);
        assert_eq!(batch.tokens, [1, 2, 4, 5, 6]);
        assert_eq!(reassemble(&batch, &frames[0]), message);
    }

    #[test]
    fn a_broken_output_fails_as_the_full_decoder_fails() {
        let message = EngineCoreOutputs {
            outputs: vec![EngineCoreOutput {
                request_id: "a".into(),
                new_token_ids: vec![1],
                ..Default::default()
            }],
            ..Default::default()
        };
        let (payload, _) = crate::encode(&message);
        let mut batch = OutputBatch::default();
        // Every truncation and every single-byte corruption: same verdict, same error.
        for cut in 0..payload.len() {
            let broken = [Bytes::copy_from_slice(&payload[..cut])];
            let expected = crate::decode::<EngineCoreOutputs>(&broken[0], &[]);
            assert_eq!(read(&mut batch, &broken).err(), expected.err(), "cut {cut}");
        }
        for at in 0..payload.len() {
            for byte in [0x00, 0x7f, 0x93, 0xa1, 0xc0, 0xc1, 0xcc, 0xff] {
                let mut changed = payload.clone();
                changed[at] = byte;
                let broken = [Bytes::from(changed)];
                let expected = crate::decode::<EngineCoreOutputs>(&broken[0], &[]);
                match (read(&mut batch, &broken), expected) {
                    (Ok(()), Ok(expected)) => {
                        assert_eq!(reassemble(&batch, &broken[0]), expected, "{at} {byte:x}")
                    }
                    (got, expected) => assert_eq!(got.err(), expected.err(), "{at} {byte:x}"),
                }
            }
        }
    }
}
