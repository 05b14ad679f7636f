//! Muse's channel format: vLLM's `muse` / `musespark1x` (Muse Spark) and
//! `muse_glimmer` tool and reasoning parsers (`MuseToolParser`,
//! `MuseReasoningParser` and their Glimmer subclasses).
//!
//! The output is a sequence of messages addressed to recipients; the first
//! header follows the prompt's `<|start|>assistant`:
//!
//! ```text
//!  to=self<|message|>REASONING<|eom|>
//! <|start|>assistant to=commentary<|message|>PROGRESS NOTE<|eom|>
//! <|start|>assistant to=get_weather<|message|><atem:function_calls>
//! <atem:invoke name="get_weather">
//! <atem:parameter name="city">Paris</atem:parameter>
//! </atem:invoke>
//! </atem:function_calls><|eom|>
//! <|start|>assistant to=user<|message|>ANSWER<|eot|>
//! ```
//!
//! vLLM's whole-text results, which these parsers reproduce (`messages.rs`
//! has the two header grammars, `atem.rs` the calls, `glimmer.rs` Glimmer's
//! reasoning rules):
//!
//! - tool parser: calls come from the bodies of messages to a tool (any
//!   recipient but `self`, `user`, `commentary`, `developer`; Glimmer: but
//!   `self`, `user`), joined with `"\n"`; when the output has no header at all,
//!   from the whole output. With calls, the content is the `user` /
//!   `commentary` bodies (Glimmer: `user` and bare `<|message|>` bodies), or
//!   the whole output when it has no header; without calls vLLM keeps the
//!   output unchanged as content;
//! - Spark reasoning parser: the reasoning is the `self` and bare-header
//!   bodies; the content is the `user` / `commentary` bodies, or, when a tool
//!   message holds ATEM markup, the framed text of every message but
//!   reasoning and `developer` ones (which the tool parser then reads); an
//!   output without headers is all content;
//! - Glimmer reasoning parser: the regex rules in `glimmer.rs`.
//!
//! vLLM's streaming differs from its whole text in many ways (it streams
//! channel bodies as they grow, drops unframed text, keeps reasoning the
//! whole text drops); the fixtures follow the whole text. Spark's reasoning
//! streams as it settles (`stream.rs`). Content, calls and Glimmer's
//! reasoning are decided at `finish`, in one linear pass over the kept
//! output, since a later message can change what earlier text was (a tool
//! message makes the reasoning parser frame its content; a header makes the
//! text before it vanish).

mod atem;
mod glimmer;
mod messages;
mod stream;

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::tool::emit_calls;
use crate::tools::Tool;

use atem::CallRules;
use messages::{current_turn, has_atem, reasoning_messages, tool_messages};
use stream::ReasoningStream;

/// Which Muse checkpoint family's rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Muse Spark (`muse`, `musespark1x`): `commentary` is content,
    /// `developer` is dropped, string parameters stay text.
    Spark,
    /// Muse Glimmer (`muse_glimmer`): only `self` is reasoning, bare
    /// `<|message|>` bodies are content, every parameter value is JSON-decoded.
    Glimmer,
}

impl Profile {
    /// `_content_recipients` of the tool parser.
    fn is_content(self, recipient: Option<&str>) -> bool {
        match self {
            Profile::Spark => matches!(recipient, Some("user" | "commentary")),
            Profile::Glimmer => matches!(recipient, None | Some("user")),
        }
    }

    /// A recipient the tool parser reads calls from (not `_non_tool_recipients`).
    fn is_tool(self, recipient: Option<&str>) -> bool {
        match (self, recipient) {
            (_, None) => false,
            (Profile::Spark, Some(r)) => !matches!(r, "self" | "user" | "commentary" | "developer"),
            (Profile::Glimmer, Some(r)) => !matches!(r, "self" | "user"),
        }
    }
}

/// A Muse tool parser (`muse`, `musespark1x`, `muse_glimmer`).
pub struct MuseToolParser {
    profile: Profile,
    tools: Vec<Tool>,
    text: String,
}

impl MuseToolParser {
    /// A tool parser for one request.
    pub fn new(profile: Profile, options: &ParserOptions) -> Self {
        Self {
            profile,
            tools: options.tools.clone(),
            text: String::new(),
        }
    }

    /// The parser, boxed for the registry.
    pub fn boxed(profile: Profile, options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(profile, options))
    }
}

impl ToolParser for MuseToolParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], _out: &mut Vec<Event>) {
        self.text.push_str(text);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let text = std::mem::take(&mut self.text);
        let messages = tool_messages(&text);
        let bodies: Vec<&str> = messages
            .iter()
            .filter(|m| self.profile.is_tool(m.recipient))
            .map(|m| m.body)
            .collect();
        let scoped = if !bodies.is_empty() {
            bodies.join("\n")
        } else if messages.is_empty() && has_atem(&text) {
            text.clone()
        } else {
            String::new()
        };
        let rules = CallRules {
            tools: &self.tools,
            preserve_strings: self.profile == Profile::Spark,
        };
        let calls = rules.calls(&scoped);
        let content = if calls.is_empty() || messages.is_empty() {
            text
        } else {
            messages
                .iter()
                .filter(|m| self.profile.is_content(m.recipient))
                .map(|m| m.body)
                .collect()
        };
        if !content.is_empty() {
            out.push(Event::Content(content));
        }
        emit_calls(calls, 0, out);
    }
}

/// A Muse reasoning parser (`muse`, `musespark1x`, `muse_glimmer`).
pub struct MuseReasoningParser {
    text: String,
    /// Spark's reasoning, streamed as it settles (`None` for Glimmer).
    stream: Option<ReasoningStream>,
    /// Whether the prompt's current turn already opened a tool channel.
    prompt_ends_reasoning: bool,
}

impl MuseReasoningParser {
    /// A reasoning parser for one request whose decoded prompt is `prompt`
    /// (vLLM's `tokenizer.decode(prompt_token_ids)`; only
    /// [`ReasoningParser::prompt_ends_reasoning`] reads it).
    pub fn new(profile: Profile, prompt: &str) -> Self {
        Self {
            text: String::new(),
            stream: (profile == Profile::Spark).then(ReasoningStream::new),
            prompt_ends_reasoning: opens_tool_channel(profile, prompt),
        }
    }

    /// The parser, boxed for the registry.
    pub fn boxed(profile: Profile, options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(profile, &options.prompt))
    }
}

/// `MuseReasoningParser.is_reasoning_end` on decoded text: whether its
/// `_tool_channel_remainder` holds ATEM markup. Spark looks in the current
/// turn (`_muse_current_turn`) for a message to a tool whose body holds it;
/// Glimmer's rules are in `glimmer.rs`.
fn opens_tool_channel(profile: Profile, text: &str) -> bool {
    match profile {
        Profile::Spark => reasoning_messages(current_turn(text))
            .iter()
            .any(|m| profile.is_tool(m.recipient) && has_atem(m.body)),
        Profile::Glimmer => glimmer::opens_tool_channel(text),
    }
}

/// The content of `MuseReasoningParser.extract_reasoning` (Spark); the
/// reasoning is what [`ReasoningStream`] streams.
fn spark_content(text: &str) -> String {
    let messages = reasoning_messages(text);
    if messages.is_empty() {
        return text.to_owned();
    }
    let has_tool_call = messages.iter().any(|m| {
        !matches!(
            m.recipient,
            None | Some("self" | "user" | "commentary" | "developer")
        ) && has_atem(m.body)
    });
    if has_tool_call {
        messages
            .iter()
            .filter(|m| !matches!(m.recipient, None | Some("self" | "developer")))
            .map(|m| m.framed)
            .collect()
    } else {
        messages
            .iter()
            .filter(|m| matches!(m.recipient, Some("user" | "commentary")))
            .map(|m| m.body)
            .collect()
    }
}

fn emit(event: fn(String) -> Event, text: String, out: &mut Vec<Event>) {
    if !text.is_empty() {
        out.push(event(text));
    }
}

impl ReasoningParser for MuseReasoningParser {
    /// vLLM's `MuseReasoningParser.is_reasoning_end` is whether the decoded
    /// prompt's current turn opened a tool channel (`<atem:function_calls>` /
    /// `<atem:invoke` after a tool recipient): an ordinary prompt ends with
    /// the assistant's header, whose turn holds no message yet; a continued
    /// assistant message may already call a tool. It reads the prompt text
    /// ([`ParserOptions::prompt`]), which a server passes decoded
    /// ([`ServingParsers::reads_prompt`](crate::serving::ServingParsers::reads_prompt)).
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.text.push_str(text);
        if let Some(stream) = &mut self.stream {
            let mut reasoning = String::new();
            stream.push(text, &mut reasoning);
            emit(Event::Reasoning, reasoning, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let text = std::mem::take(&mut self.text);
        let content = match &mut self.stream {
            Some(stream) => {
                let mut reasoning = String::new();
                stream.finish(&mut reasoning);
                emit(Event::Reasoning, reasoning, out);
                spark_content(&text)
            }
            None => {
                let (reasoning, content) = glimmer::extract_reasoning(&text);
                emit(Event::Reasoning, reasoning, out);
                content
            }
        };
        emit(Event::Content, content, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continued_turn_that_called_a_tool_ends_reasoning() {
        let call = "to=f<|message|><atem:invoke name=\"f\">";
        let ends = |profile, prompt: &str| {
            MuseReasoningParser::new(profile, prompt)
                .prompt_ends_reasoning()
                .unwrap()
        };
        for profile in [Profile::Spark, Profile::Glimmer] {
            // A fresh turn, and a call in an earlier one.
            assert!(!ends(
                profile,
                "<|start|>user<|message|>hi<|eot|><|start|>assistant"
            ));
            let earlier = format!(
                "<|start|>assistant {call}<|eom|><|start|>tool<|message|>x<|eot|><|start|>assistant"
            );
            assert!(!ends(profile, &earlier));
            // The current turn calls a tool; markup in reasoning does not count.
            let current = format!("<|start|>user<|message|>hi<|eot|><|start|>assistant {call}");
            assert!(ends(profile, &current));
            let echoed = "<|start|>assistant to=self<|message|><atem:invoke name=\"f\">";
            assert!(!ends(profile, echoed));
        }
        // `assistantx` is another role; `assistant<` is not.
        let roles = format!("<|start|>assistant {call}<|eom|><|start|>assistantx<|message|>y");
        assert!(!ends(Profile::Spark, &roles));
        let same = format!("<|start|>user<|message|>q<|eot|><|start|>assistant<|channel|>{call}");
        assert!(ends(Profile::Spark, &same));
        // Spark reads the whole turn, Glimmer only its last assistant message.
        let answered = format!(
            "<|start|>user<|message|>q<|eot|><|start|>assistant {call}<|eom|><|start|>assistant to=user<|message|>ok"
        );
        assert!(ends(Profile::Spark, &answered));
        assert!(!ends(Profile::Glimmer, &answered));
    }

    #[test]
    fn spark_reasoning_streams_before_the_output_ends() {
        let mut parser = MuseReasoningParser::new(Profile::Spark, "");
        let mut out = Vec::new();
        parser.push(" to=self<|message|>Let me th", &[], &mut out);
        assert_eq!(out, [Event::Reasoning("Let me th".into())]);
        out.clear();
        // A header in the making is held until it is one.
        parser.push("ink. to=us", &[], &mut out);
        assert_eq!(out, [Event::Reasoning("ink. ".into())]);
        out.clear();
        parser.push("er<|message|>Hi<|eot|>", &[], &mut out);
        assert!(out.is_empty());
        parser.finish(&mut out);
        assert_eq!(out, [Event::Content("Hi".into())]);
    }
}
