//! `kimi_k3`: Kimi K3's XTML think channel, vLLM's `KimiK3ReasoningParser`:
//! `<|open|>think<|sep|>REASONING<|close|>think<|sep|>` (the template opens the
//! channel in the prompt, so the output usually starts inside it).
//!
//! vLLM's rules, reproduced here:
//!
//! - Thinking is on unless `chat_template_kwargs.thinking` (or, when that is
//!   absent or null, `enable_thinking`) is falsy; off, the output is content.
//! - Reasoning runs to the first `<|close|>think<|sep|>`; an
//!   `<|open|>think<|sep|>` before it is dropped. Never closed, all of it is
//!   reasoning.
//! - The content after it goes to the tool parser as it is when the request
//!   has tools and a `tool_choice` other than `none`
//!   (`_should_preserve_tool_channels`); otherwise the `response` channel is
//!   unwrapped here (`tool::kimi_k3::xtml::ResponseChannel`, closers of
//!   `message` dropped), and a tool parser after it sees the unwrapped text.
//!
//! Where vLLM's modes disagree the `kimi_k3` fixture records the choice: text
//! before an `<|open|>think<|sep|>` in the output stays reasoning, and a
//! `response` channel inside unclosed reasoning is reasoning (vLLM's
//! streaming; its whole text drops the text, or re-reads the whole output as
//! content, which no streaming parser can do).

use crate::event::Event;
use crate::parser::{ParserOptions, ReasoningParser, py_truthy};
use crate::serving::ToolChoice;
use crate::tool::kimi_k3::xtml::{Lexer, Name, ResponseChannel, Token};

/// The `kimi_k3` reasoning parser.
#[derive(Debug)]
pub struct KimiK3ReasoningParser {
    lexer: Lexer,
    in_reasoning: bool,
    open_seen: bool,
    /// Without tools, the content is unwrapped here; with tools it passes
    /// through for the tool parser.
    unwrap: Option<ResponseChannel>,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
}

impl KimiK3ReasoningParser {
    /// A parser for the request's `options`.
    pub fn new(options: &ParserOptions) -> Self {
        let kwargs = &options.chat_template_kwargs;
        let thinking = match kwargs.get("thinking").filter(|v| !v.is_null()) {
            Some(value) => py_truthy(value),
            None => kwargs.get("enable_thinking").is_none_or(py_truthy),
        };
        // `is_reasoning_end`: thinking off, or the prompt's newest think
        // channel marker closes it (the three-token sequences
        // `ServingParsers` spells out for this check; neither in the prompt:
        // not ended).
        let prompt = &options.prompt;
        let newest = |marker: &str| prompt.rfind(marker);
        let prompt_ends_reasoning =
            !thinking || newest("<|close|>think<|sep|>") > newest("<|open|>think<|sep|>");
        Self {
            prompt_ends_reasoning,
            lexer: Lexer::default(),
            in_reasoning: thinking,
            open_seen: false,
            unwrap: (options.tools.is_empty() || options.tool_choice == Some(ToolChoice::None))
                .then(ResponseChannel::dropping_message_close),
        }
    }

    /// A boxed constructor for the registry.
    pub fn boxed(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(options))
    }

    fn token(&mut self, token: Token, out: &mut Vec<Event>) {
        if self.in_reasoning {
            match token {
                Token::Text(text) if !text.is_empty() => out.push(Event::Reasoning(text)),
                Token::Text(_) => {}
                Token::Tag(tag) if tag.name() == Name::Think => {
                    if !tag.open {
                        self.in_reasoning = false;
                    } else if self.open_seen {
                        out.push(Event::Reasoning(tag.raw()));
                    }
                    self.open_seen = true;
                }
                Token::Tag(tag) => out.push(Event::Reasoning(tag.raw())),
            }
            return;
        }
        match (&mut self.unwrap, token) {
            (Some(channel), Token::Text(text)) => channel.text(text, out),
            (Some(channel), Token::Tag(tag)) => channel.tag(&tag, out),
            (None, Token::Text(text)) if !text.is_empty() => out.push(Event::Content(text)),
            (None, Token::Text(_)) => {}
            (None, Token::Tag(tag)) => out.push(Event::Content(tag.raw())),
        }
    }
}

impl ReasoningParser for KimiK3ReasoningParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.lexer.push(text);
        while let Some(token) = self.lexer.next() {
            self.token(token, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        let rest = self.lexer.finish();
        self.token(Token::Text(rest), out);
    }
}
