//! Logprobs in the two OpenAI shapes vLLM returns.
//!
//! Chat: `{"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}` with the
//! first `top_logprobs` candidates of each position. Completions: parallel lists
//! `text_offset`, `token_logprobs`, `tokens`, `top_logprobs` (dicts of the first
//! `logprobs + 1` candidates), offsets counted in characters from the start of the
//! choice's text.

use serde_json::{Map, Value, json};

use super::generation::{Candidate, PositionLogprobs};

fn chat_entry(c: &Candidate) -> Value {
    json!({"token": c.text, "logprob": c.logprob, "bytes": c.text.as_bytes()})
}

/// vLLM's `chat_top_logprobs_limit`: all for -1, else the first `top_logprobs` (0 when unset).
fn chat_limit(top_logprobs: Option<i64>) -> usize {
    match top_logprobs {
        Some(-1) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(0),
        None => 0,
    }
}

/// The `content` entries of chat logprobs for some positions.
pub fn chat_content(positions: &[PositionLogprobs], top_logprobs: Option<i64>) -> Vec<Value> {
    let limit = chat_limit(top_logprobs);
    positions
        .iter()
        .map(|p| {
            let mut entry = chat_entry(&p.sampled);
            entry["top_logprobs"] =
                Value::Array(p.candidates.iter().take(limit).map(chat_entry).collect());
            entry
        })
        .collect()
}

/// Chat logprobs: `{"content": [...]}`.
pub fn chat(positions: &[PositionLogprobs], top_logprobs: Option<i64>) -> Value {
    json!({ "content": chat_content(positions, top_logprobs) })
}

/// The positions with vLLM's `token_id:N` placeholders as token strings
/// (`return_tokens_as_token_ids`).
pub fn with_token_id_texts(positions: &[PositionLogprobs]) -> Vec<PositionLogprobs> {
    let rename = |c: &Candidate| Candidate {
        text: format!("token_id:{}", c.id),
        ..c.clone()
    };
    positions
        .iter()
        .map(|p| PositionLogprobs {
            sampled: rename(&p.sampled),
            candidates: p.candidates.iter().map(rename).collect(),
        })
        .collect()
}

/// Completion logprobs accumulated over a choice's steps.
#[derive(Debug, Clone, Default)]
pub struct CompletionLogprobs {
    text_offset: Vec<usize>,
    token_logprobs: Vec<f64>,
    tokens: Vec<String>,
    top_logprobs: Vec<Map<String, Value>>,
    /// Where the next token's text starts (characters).
    next_offset: usize,
}

impl CompletionLogprobs {
    /// Starts at `offset` characters into the choice's text (after an echoed prompt).
    pub fn starting_at(offset: usize) -> Self {
        Self {
            next_offset: offset,
            ..Self::default()
        }
    }

    /// Appends positions; `logprobs` is the request's `logprobs` (first `logprobs + 1`
    /// candidates, all for -1).
    pub fn extend(&mut self, positions: &[PositionLogprobs], logprobs: i64) {
        let limit = if logprobs == -1 {
            usize::MAX
        } else {
            usize::try_from(logprobs + 1).unwrap_or(0)
        };
        for p in positions {
            self.text_offset.push(self.next_offset);
            self.next_offset += p.sampled.text.chars().count();
            self.token_logprobs.push(p.sampled.logprob);
            self.tokens.push(p.sampled.text.clone());
            self.top_logprobs.push(
                p.candidates
                    .iter()
                    .take(limit)
                    .map(|c| (c.text.clone(), Value::from(c.logprob)))
                    .collect(),
            );
        }
    }

    /// Takes what was accumulated since the last call, as JSON (the offset carries on).
    pub fn take(&mut self) -> Value {
        let out = json!({
            "text_offset": std::mem::take(&mut self.text_offset),
            "token_logprobs": std::mem::take(&mut self.token_logprobs),
            "tokens": std::mem::take(&mut self.tokens),
            "top_logprobs": std::mem::take(&mut self.top_logprobs),
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: u32, text: &str, logprob: f64) -> Candidate {
        Candidate {
            id,
            logprob,
            text: text.into(),
            rank: 1,
        }
    }

    #[test]
    fn completion_offsets_count_characters_across_steps() {
        let position = |text: &str| PositionLogprobs {
            sampled: candidate(1, text, -0.5),
            candidates: vec![candidate(1, text, -0.5), candidate(2, "x", -1.5)],
        };
        let mut lp = CompletionLogprobs::starting_at(0);
        lp.extend(&[position("hé"), position(" a")], 0);
        let first = lp.take();
        assert_eq!(first["text_offset"], json!([0, 2]));
        assert_eq!(first["top_logprobs"][0], json!({"hé": -0.5}));
        lp.extend(&[position("b")], 1);
        let second = lp.take();
        assert_eq!(second["text_offset"], json!([4]));
        assert_eq!(second["top_logprobs"][0], json!({"b": -0.5, "x": -1.5}));
    }

    #[test]
    fn chat_top_logprobs_are_limited_and_carry_bytes() {
        let p = PositionLogprobs {
            sampled: candidate(1, "é", -0.25),
            candidates: vec![
                candidate(1, "é", -0.25),
                candidate(2, "a", -2.0),
                candidate(3, "b", -3.0),
            ],
        };
        let content = chat_content(&[p], Some(2));
        assert_eq!(content[0]["bytes"], json!([195, 169]));
        assert_eq!(content[0]["top_logprobs"].as_array().unwrap().len(), 2);
        assert_eq!(chat_content(&[], None), Vec::<Value>::new());
    }
}
