//! Logprobs in the two OpenAI shapes vLLM returns.
//!
//! Chat: `{"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}` with the
//! first `top_logprobs` candidates of each position. Completions: parallel lists
//! `text_offset`, `token_logprobs`, `tokens`, `top_logprobs` (dicts of the first
//! `logprobs + 1` candidates), offsets counted in characters from the start of the
//! choice's text.

use crate::openai::{
    ChatLogprobEntry, ChatLogprobs, ChatTopLogprob, CompletionLogprobs as CompletionLists,
    TopLogprobMap,
};

use serde_json::{Map, Value, json};

use super::generation::{Candidate, PositionLogprobs, Samples};

fn chat_entry(c: Candidate) -> ChatTopLogprob {
    ChatTopLogprob::new(c.text, c.logprob)
}

/// vLLM's `chat_top_logprobs_limit`: all for -1, else the first `top_logprobs` (0 when unset).
fn chat_limit(top_logprobs: Option<i64>) -> usize {
    match top_logprobs {
        Some(-1) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(0),
        None => 0,
    }
}

/// Chat logprobs, `{"content": [...]}`, made from the positions (their texts move into
/// the response: no copies per token).
pub fn chat(positions: Vec<PositionLogprobs>, top_logprobs: Option<i64>) -> ChatLogprobs {
    let limit = chat_limit(top_logprobs);
    let content = positions
        .into_iter()
        .map(|p| {
            ChatLogprobEntry::new(
                chat_entry(p.sampled),
                p.candidates
                    .into_iter()
                    .take(limit)
                    .map(chat_entry)
                    .collect(),
            )
        })
        .collect();
    ChatLogprobs {
        content: Some(content),
    }
}

/// The positions with vLLM's `token_id:N` placeholders as token strings
/// (`return_tokens_as_token_ids`).
pub fn with_token_id_texts(mut positions: Vec<PositionLogprobs>) -> Vec<PositionLogprobs> {
    for p in &mut positions {
        for c in std::iter::once(&mut p.sampled).chain(&mut p.candidates) {
            c.text = format!("token_id:{}", c.id);
        }
    }
    positions
}

/// Completion logprobs accumulated over a choice's steps.
#[derive(Debug, Clone, Default)]
pub struct CompletionLogprobs {
    lists: CompletionLists,
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
        let lists = &mut self.lists;
        for p in positions {
            lists.text_offset.push(self.next_offset);
            self.next_offset += p.sampled.text.chars().count();
            lists.token_logprobs.push(Some(p.sampled.logprob));
            lists.tokens.push(p.sampled.text.clone());
            let mut top = TopLogprobMap::with_capacity(limit.min(p.candidates.len()));
            for c in p.candidates.iter().take(limit) {
                top.insert(c.text.clone(), c.logprob);
            }
            lists.top_logprobs.push(Some(top));
        }
    }

    /// Appends a position nothing scored (the first prompt token, echoed): its text,
    /// `null` logprob and candidates, as vLLM writes a `None` prompt logprob.
    pub fn push_unscored(&mut self, text: String) {
        self.lists.text_offset.push(self.next_offset);
        self.next_offset += text.chars().count();
        self.lists.token_logprobs.push(None);
        self.lists.tokens.push(text);
        self.lists.top_logprobs.push(None);
    }

    /// Appends the prompt's logprobs (vLLM's list: `None` first), as `echo` puts them
    /// before the output's. `first_token` is the first prompt token's text.
    pub fn extend_prompt(
        &mut self,
        prompt: &[Option<PositionLogprobs>],
        first_token: impl FnOnce() -> String,
        logprobs: i64,
    ) {
        let mut first_token = Some(first_token);
        for position in prompt {
            match position {
                Some(p) => self.extend(std::slice::from_ref(p), logprobs),
                None => {
                    let text = first_token.take().map(|f| f()).unwrap_or_default();
                    self.push_unscored(text);
                }
            }
        }
    }

    /// Takes what was accumulated since the last call (the offset carries on).
    pub fn take(&mut self) -> CompletionLists {
        std::mem::take(&mut self.lists)
    }
}

/// vLLM's `PromptLogprobs` as its responses write them: a list whose first entry is
/// `null`, then per prompt token a dict from token id to
/// `{"logprob", "rank", "decoded_token"}` (the prompt token first, then the top-k).
pub fn prompt_logprobs_json(positions: &[Option<PositionLogprobs>]) -> Value {
    let position = |p: &PositionLogprobs| {
        let entries: Map<String, Value> = p
            .candidates
            .iter()
            .map(|c| {
                let entry = json!({"logprob": c.logprob, "rank": c.rank, "decoded_token": c.text});
                (c.id.to_string(), entry)
            })
            .collect();
        Value::Object(entries)
    };
    Value::Array(
        positions
            .iter()
            .map(|p| p.as_ref().map_or(Value::Null, position))
            .collect(),
    )
}

/// The prompt logprobs of an answer's choices (every choice scores the same prompt;
/// vLLM reports those of the request whose output completed the answer): `None`
/// unless `prompt_logprobs` was asked for.
pub fn prompt_logprobs(samples: &Samples) -> Option<Value> {
    (0..samples.len())
        .rev()
        .find_map(|i| samples.get(i)?.prompt_logprobs.as_deref())
        .map(prompt_logprobs_json)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
        let first = serde_json::to_value(lp.take()).unwrap();
        assert_eq!(first["text_offset"], json!([0, 2]));
        assert_eq!(first["top_logprobs"][0], json!({"hé": -0.5}));
        lp.extend(&[position("b")], 1);
        let second = serde_json::to_value(lp.take()).unwrap();
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
        let logprobs = serde_json::to_value(chat(vec![p], Some(2))).unwrap();
        let content = &logprobs["content"];
        assert_eq!(content[0]["bytes"], json!([195, 169]));
        assert_eq!(content[0]["top_logprobs"].as_array().unwrap().len(), 2);
        assert_eq!(chat(Vec::new(), None).content, Some(Vec::new()));
    }
}
