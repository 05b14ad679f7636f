//! Kimi K3's XTML markup: `<|open|>HEAD<|sep|>` / `<|close|>HEAD<|sep|>` tags
//! around raw text, lexed from streamed text; and the `response` channel rule
//! that turns the text around them into content.
//!
//! vLLM matches each tag with a regex like `<\|open\|>\s*response\s*<\|sep\|>`
//! (whitespace tolerated inside the tag); here a tag is lexed once and its head
//! classified, so the text is scanned once whatever the number of tag kinds.

use crate::event::Event;
use crate::text::{MarkerScanner, Piece, py_is_space, py_strip};

const OPEN: &str = "<|open|>";
const CLOSE: &str = "<|close|>";
const SEP: &str = "<|sep|>";
/// A tag head longer than this is not a tag (vLLM's heads are a name and a few
/// attributes); it comes out as text, so a missing `<|sep|>` buffers little.
const MAX_HEAD: usize = 4096;

/// An opening or a closing tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tag {
    /// `<|open|>` (else `<|close|>`).
    pub open: bool,
    /// The text between the marker and `<|sep|>`.
    pub head: String,
}

/// What a tag is, by its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Name<'a> {
    /// `think`.
    Think,
    /// `response`.
    Response,
    /// `tools`.
    Tools,
    /// `message`.
    Message,
    /// `call ATTRS` (opening) or `call` (closing).
    Call(&'a str),
    /// `argument ATTRS` (opening) or `argument` (closing).
    Argument(&'a str),
    /// Anything else: text to the parsers.
    Other,
}

impl Tag {
    /// The tag's meaning: a plain name with surrounding whitespace, or for an
    /// opening `call` / `argument`, the name, whitespace and attributes
    /// (vLLM's `<\|open\|>\s*call\s+(?P<attrs>…)<\|sep\|>`).
    pub fn name(&self) -> Name<'_> {
        let head = py_strip(&self.head);
        let plain = match head {
            "think" => Name::Think,
            "response" => Name::Response,
            "tools" => Name::Tools,
            "message" => Name::Message,
            "call" if !self.open => Name::Call(""),
            "argument" if !self.open => Name::Argument(""),
            _ => Name::Other,
        };
        if plain != Name::Other || !self.open {
            return plain;
        }
        let head = self.head.trim_start_matches(py_is_space);
        let attributes = |word: &str| {
            head.strip_prefix(word)
                .filter(|rest| rest.starts_with(py_is_space))
                .map(|rest| rest.trim_start_matches(py_is_space))
        };
        if let Some(attrs) = attributes("call") {
            Name::Call(attrs)
        } else if let Some(attrs) = attributes("argument") {
            Name::Argument(attrs)
        } else {
            Name::Other
        }
    }

    /// The tag as it was written.
    pub fn raw(&self) -> String {
        let marker = if self.open { OPEN } else { CLOSE };
        [marker, &self.head, SEP].concat()
    }
}

/// One lexed piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// Text outside tags.
    Text(String),
    /// A complete tag.
    Tag(Tag),
}

/// Streamed text to [`Token`]s.
#[derive(Debug, Default)]
pub(crate) struct Lexer {
    scanner: MarkerScanner,
    /// The tag being read: its kind and the head so far.
    head: Option<Tag>,
}

impl Lexer {
    /// Append streamed text.
    pub fn push(&mut self, text: &str) {
        self.scanner.push(text);
    }

    /// The next token, or `None` until more text arrives.
    pub fn next(&mut self) -> Option<Token> {
        loop {
            let Some(tag) = &mut self.head else {
                return match self.scanner.next(&[OPEN, CLOSE])? {
                    Piece::Text(text) => Some(Token::Text(text.to_owned())),
                    Piece::Marker(i) => {
                        self.head = Some(Tag {
                            open: i == 0,
                            head: String::new(),
                        });
                        continue;
                    }
                };
            };
            match self.scanner.next(&[SEP, OPEN, CLOSE])? {
                Piece::Text(text) => {
                    tag.head.push_str(text);
                    if tag.head.len() > MAX_HEAD {
                        let raw = tag.raw();
                        self.head = None;
                        return Some(Token::Text(raw[..raw.len() - SEP.len()].to_owned()));
                    }
                }
                Piece::Marker(0) => return self.head.take().map(Token::Tag),
                // A new tag starts before this one ended: this one was text.
                Piece::Marker(i) => {
                    let unfinished = std::mem::replace(
                        tag,
                        Tag {
                            open: i == 1,
                            head: String::new(),
                        },
                    );
                    let raw = unfinished.raw();
                    return Some(Token::Text(raw[..raw.len() - SEP.len()].to_owned()));
                }
            }
        }
    }

    /// End of output: what is left, as text.
    pub fn finish(&mut self) -> String {
        let mut rest = match self.head.take() {
            Some(tag) => {
                let raw = tag.raw();
                raw[..raw.len() - SEP.len()].to_owned()
            }
            None => String::new(),
        };
        rest.push_str(&self.scanner.finish());
        rest
    }
}

/// Where the content is relative to the `response` channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Channel {
    /// No `<|open|>response<|sep|>` yet (the template may have put it in the
    /// prompt): text is content, stray `response` / `message` closers dropped.
    #[default]
    Lead,
    /// Inside the opened channel.
    Body,
    /// After the opened channel's closer: nothing more is content.
    After,
    /// After the opened channel's closer when text before the channel was
    /// already content (the reasoning parser's unwrapping): text stays
    /// content, `response` / `message` closers are dropped.
    AfterStreamed,
}

/// vLLM's unwrapping of the `response` channel into content (its whole-text
/// `_strip_content_wrapper` / `_content`), one token at a time: the channel's
/// body when it was opened, else the text with `response` / `message` closers
/// removed. Text before an opened channel stays content (vLLM's streaming; its
/// whole text drops it once the channel opens, which a streaming parser cannot
/// take back).
///
/// The reasoning parser's unwrapping then stays with vLLM's streaming answer
/// (`strip_content_streaming`) to the end, so the message is one of vLLM's
/// two answers rather than a mix of both: the text after the channel's closer
/// stays content too, with `response` / `message` closers removed. The tool
/// parser's streaming sends nothing after the closer, so its unwrapping drops
/// that text either way.
#[derive(Debug, Default)]
pub(crate) struct ResponseChannel {
    channel: Channel,
    /// Whether a `<|close|>message<|sep|>` inside an opened channel is dropped
    /// and text before the channel keeps the text after it (the reasoning
    /// parser's unwrapping), or neither (the tool parser's).
    reasoning_side: bool,
    /// Content was emitted before the channel opened.
    lead_emitted: bool,
}

impl ResponseChannel {
    /// The reasoning parser's unwrapping (`_strip_content_wrapper`), which
    /// drops `message` closers inside the channel too.
    pub fn dropping_message_close() -> Self {
        Self {
            reasoning_side: true,
            ..Self::default()
        }
    }

    /// Text outside tags.
    pub fn text(&mut self, text: String, out: &mut Vec<Event>) {
        if self.channel != Channel::After && !text.is_empty() {
            self.emit(text, out);
        }
    }

    /// A tag in the content.
    pub fn tag(&mut self, tag: &Tag, out: &mut Vec<Event>) {
        match (self.channel, tag.open, tag.name()) {
            (Channel::Lead, true, Name::Response) => self.channel = Channel::Body,
            (Channel::Lead | Channel::AfterStreamed, false, Name::Response | Name::Message) => {}
            (Channel::Body, false, Name::Response) => {
                self.channel = if self.reasoning_side && self.lead_emitted {
                    Channel::AfterStreamed
                } else {
                    Channel::After
                };
            }
            (Channel::Body, false, Name::Message) if self.reasoning_side => {}
            (Channel::After, ..) => {}
            _ => self.emit(tag.raw(), out),
        }
    }

    fn emit(&mut self, text: String, out: &mut Vec<Event>) {
        if self.channel == Channel::Lead {
            self.lead_emitted = true;
        }
        out.push(Event::Content(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(deltas: &[&str]) -> Vec<Token> {
        let mut lexer = Lexer::default();
        let mut tokens = Vec::new();
        for delta in deltas {
            lexer.push(delta);
            while let Some(token) = lexer.next() {
                tokens.push(token);
            }
        }
        let rest = lexer.finish();
        if !rest.is_empty() {
            tokens.push(Token::Text(rest));
        }
        tokens
    }

    #[test]
    fn tags_split_across_deltas() {
        let tag = |open, head: &str| {
            Token::Tag(Tag {
                open,
                head: head.to_owned(),
            })
        };
        assert_eq!(
            lex(&[
                "a<|op",
                "en|> call tool=\"f\"<|s",
                "ep|>b<|close|>call<|sep|>"
            ]),
            [
                Token::Text("a".into()),
                tag(true, " call tool=\"f\""),
                Token::Text("b".into()),
                tag(false, "call"),
            ]
        );
        assert_eq!(
            lex(&["<|open|>x<|close|>think<|sep|><|open|>y"]),
            [
                Token::Text("<|open|>x".into()),
                tag(false, "think"),
                Token::Text("<|open|>y".into()),
            ]
        );
    }

    /// The reasoning parser's unwrapping of whole text.
    fn unwrap(text: &str) -> String {
        let mut channel = ResponseChannel::dropping_message_close();
        let mut out = Vec::new();
        for token in lex(&[text]) {
            match token {
                Token::Text(text) => channel.text(text, &mut out),
                Token::Tag(tag) => channel.tag(&tag, &mut out),
            }
        }
        out.iter()
            .map(|e| match e {
                Event::Content(c) => c.as_str(),
                _ => "",
            })
            .collect()
    }

    #[test]
    fn reasoning_unwrapping_is_one_of_vllms_answers() {
        let tail = "<|close|>response<|sep|><|open|>tools<|sep|>t<|close|>tools<|sep|>";
        // No text before the channel: vLLM's whole text, the channel's body.
        assert_eq!(
            unwrap(&format!("<|open|>response<|sep|>body{tail}")),
            "body"
        );
        // Text before it was streamed: vLLM's streaming, closers removed.
        assert_eq!(
            unwrap(&format!(
                "lead<|open|>response<|sep|>body{tail}<|close|>message<|sep|>"
            )),
            "leadbody<|open|>tools<|sep|>t<|close|>tools<|sep|>"
        );
    }

    #[test]
    fn heads_are_classified_like_vllm_regexes() {
        let name = |open, head: &str| {
            let tag = Tag {
                open,
                head: head.to_owned(),
            };
            format!("{:?}", tag.name())
        };
        assert_eq!(name(true, " response "), "Response");
        assert_eq!(name(true, "call tool=\"f\""), "Call(\"tool=\\\"f\\\"\")");
        assert_eq!(name(true, "call"), "Other");
        assert_eq!(name(true, "calls x"), "Other");
        assert_eq!(name(false, " call "), "Call(\"\")");
        assert_eq!(name(false, "call x"), "Other");
    }
}
