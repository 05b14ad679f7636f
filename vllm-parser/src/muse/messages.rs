//! Muse's message framing: `[<|start|>assistant] to=RECIPIENT<|message|>BODY<|eom|>`.
//!
//! vLLM segments the output with two slightly different header regexes, and
//! the results differ at the edges, so both are reproduced:
//!
//! - the tool parser's (`_MSG_HEADER_RE`):
//!   `(?:<\|start\|>\s*assistant)?[^\S\n]*(?:to=(?P<rcpt>[A-Za-z0-9_.\-]+))?<\|message\|>`;
//! - the reasoning parser's (`_MUSE_HEADER_RE`):
//!   `(?:<\|start\|>assistant\s*)?(?:to=(?P<recipient>[^\s<]+))?<\|message\|>`.
//!
//! Every `<|message|>` ends exactly one header (nothing else in a header can
//! span one), so a header is found by finding `<|message|>` and then the
//! leftmost start from which the regex matches up to it: the longest suffix of
//! the text before it that fits the header's prefix. Regex `\s` is Unicode
//! `White_Space`, which is Rust's [`char::is_whitespace`].

use memchr::memmem;

pub(super) const START: &str = "<|start|>";
pub(super) const MESSAGE: &str = "<|message|>";
pub(super) const EOM: &str = "<|eom|>";
pub(super) const EOT: &str = "<|eot|>";
const ASSISTANT: &str = "assistant";
/// An assistant message's opening (`_ASSISTANT_TURN_OPEN`).
pub(super) const ASSISTANT_OPEN: &str = "<|start|>assistant";

/// Which of vLLM's two header regexes finds the headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grammar {
    /// `MuseToolParser`'s `_MSG_HEADER_RE`.
    Tool,
    /// `MuseReasoningParser`'s `_MUSE_HEADER_RE`.
    Reasoning,
}

/// A message header: where its match starts and ends, and its recipient
/// (`None` for a bare `<|message|>`).
struct Header<'a> {
    start: usize,
    end: usize,
    recipient: Option<&'a str>,
}

/// A message as the tool parser's `_iter_messages` yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Message<'a> {
    /// `to=…`, `None` for a bare `<|message|>` header.
    pub recipient: Option<&'a str>,
    /// The text after the header, up to `<|eom|>` / `<|eot|>`, the next
    /// header or the first `<|start|>`.
    pub body: &'a str,
}

/// A message as the reasoning parser's `_muse_messages` yields it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FramedMessage<'a> {
    /// `to=…`, `None` for a bare `<|message|>` header.
    pub recipient: Option<&'a str>,
    /// The text after the header up to the first `<|eom|>`, `<|eot|>` or
    /// `<|start|>` before the next header (or up to that header).
    pub body: &'a str,
    /// The text from the header's start to the next header's start.
    pub framed: &'a str,
}

/// The position of `needle` at or after `from`.
pub(super) fn find_from(text: &str, from: usize, needle: &str) -> Option<usize> {
    memmem::find(&text.as_bytes()[from..], needle.as_bytes()).map(|at| from + at)
}

/// The earliest of `needles` at or after `from` (start and length).
fn first_of(text: &str, from: usize, needles: &[&str]) -> Option<(usize, usize)> {
    needles
        .iter()
        .filter_map(|needle| find_from(text, from, needle).map(|at| (at, needle.len())))
        .min()
}

/// The next of some needles, for searches whose start only grows: the last
/// answer is reused while it lies ahead, so all searches together are linear.
pub(super) struct NextOf<'n> {
    needles: &'n [&'n str],
    cached: Option<Option<(usize, usize)>>,
}

impl<'n> NextOf<'n> {
    pub(super) fn new(needles: &'n [&'n str]) -> Self {
        Self {
            needles,
            cached: None,
        }
    }

    pub(super) fn find(&mut self, text: &str, from: usize) -> Option<(usize, usize)> {
        match self.cached {
            Some(None) => return None,
            Some(Some((at, len))) if at >= from => return Some((at, len)),
            _ => {}
        }
        let found = first_of(text, from, self.needles);
        self.cached = Some(found);
        found
    }
}

fn is_tool_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

fn is_horizontal_space(c: char) -> bool {
    c.is_whitespace() && c != '\n'
}

/// The header whose `<|message|>` is at `marker`, matched from no earlier
/// than `lo`.
fn header_at(text: &str, lo: usize, marker: usize, grammar: Grammar) -> Header<'_> {
    let seg = &text[lo..marker];
    let (mut start, recipient) = match grammar {
        Grammar::Tool => {
            // `[^\S\n]*(?:to=NAME)?` right before the marker.
            let name_start = seg.trim_end_matches(is_tool_name_char).len();
            let (start, recipient) = if name_start < seg.len() && seg[..name_start].ends_with("to=")
            {
                (name_start - 3, Some(&seg[name_start..]))
            } else {
                (seg.len(), None)
            };
            let start = seg[..start].trim_end_matches(is_horizontal_space).len();
            // `<|start|>\s*assistant` before that.
            let start = seg[..start]
                .strip_suffix(ASSISTANT)
                .map(|before| before.trim_end_matches(char::is_whitespace))
                .and_then(|before| before.strip_suffix(START))
                .map_or(start, str::len);
            (start, recipient)
        }
        Grammar::Reasoning => {
            // `to=[^\s<]+`: the earliest `to=` in the run of such characters.
            let run_start = seg
                .trim_end_matches(|c: char| !c.is_whitespace() && c != '<')
                .len();
            let (start, recipient) = match seg[run_start..].find("to=") {
                Some(at) if run_start + at + 3 < seg.len() => {
                    (run_start + at, Some(&seg[run_start + at + 3..]))
                }
                _ => (seg.len(), None),
            };
            // `<|start|>assistant\s*` before that.
            let before = seg[..start].trim_end_matches(char::is_whitespace);
            let start = before.strip_suffix(ASSISTANT_OPEN).map_or(start, str::len);
            (start, recipient)
        }
    };
    start += lo;
    Header {
        start,
        end: marker + MESSAGE.len(),
        recipient,
    }
}

/// The first header that starts at or after `from`.
fn next_header(text: &str, from: usize, grammar: Grammar) -> Option<Header<'_>> {
    let marker = find_from(text, from, MESSAGE)?;
    Some(header_at(text, from, marker, grammar))
}

/// `MuseToolParser._iter_messages`: each message ends at `<|eom|>` / `<|eot|>`
/// or where the next header starts, and its body is cut at a `<|start|>`; text
/// between messages belongs to none.
pub(super) fn tool_messages(text: &str) -> Vec<Message<'_>> {
    let mut messages = Vec::new();
    let mut pos = 0;
    let mut end_markers = NextOf::new(&[EOM, EOT]);
    while pos < text.len() {
        let Some(header) = next_header(text, pos, Grammar::Tool) else {
            break;
        };
        let body_start = header.end;
        let end = end_markers.find(text, body_start);
        let (mut body_end, mut next_pos) = match end {
            Some((at, len)) => (at, at + len),
            None => (text.len(), text.len()),
        };
        if let Some(next) = next_header(text, body_start, Grammar::Tool)
            && next.start < body_end
        {
            body_end = next.start;
            next_pos = next.start;
        }
        let mut body = &text[body_start..body_end];
        if let Some(cut) = body.find(START) {
            body = &body[..cut];
        }
        messages.push(Message {
            recipient: header.recipient,
            body,
        });
        pos = next_pos;
    }
    messages
}

/// `_muse_messages` of the reasoning parser: every header, its body up to the
/// first boundary (`<|eom|>`, `<|eot|>`, `<|start|>`) before the next header,
/// and its framed text up to the next header.
pub(super) fn reasoning_messages(text: &str) -> Vec<FramedMessage<'_>> {
    let mut headers = Vec::new();
    let mut pos = 0;
    while let Some(header) = next_header(text, pos, Grammar::Reasoning) {
        pos = header.end;
        headers.push(header);
    }
    let mut messages = Vec::with_capacity(headers.len());
    for (i, header) in headers.iter().enumerate() {
        let end = headers.get(i + 1).map_or(text.len(), |next| next.start);
        let region = &text[header.end..end];
        let body_end = first_of(region, 0, &[EOM, EOT, START]).map_or(region.len(), |(at, _)| at);
        messages.push(FramedMessage {
            recipient: header.recipient,
            body: &region[..body_end],
            framed: &text[header.start..end],
        });
    }
    messages
}

/// `_muse_current_turn`: the text from the assistant's turn that follows the
/// last message of another role (`<|start|>ROLE` where ROLE, a run of
/// characters other than whitespace and `<`, is not `assistant` ending there),
/// empty when no assistant turn follows it; the whole text without such a
/// role.
pub(super) fn current_turn(text: &str) -> &str {
    let mut last_role_end = None;
    let mut pos = 0;
    while let Some(at) = find_from(text, pos, START) {
        let after = at + START.len();
        let rest = &text[after..];
        let run = rest.len()
            - rest
                .trim_start_matches(|c: char| !c.is_whitespace() && c != '<')
                .len();
        let assistant = rest.strip_prefix(ASSISTANT).is_some_and(|tail| {
            tail.chars()
                .next()
                .is_none_or(|c| c.is_whitespace() || c == '<')
        });
        pos = after;
        if run > 0 && !assistant {
            pos += run;
            last_role_end = Some(pos);
        }
    }
    match last_role_end {
        Some(end) => find_from(text, end, ASSISTANT_OPEN).map_or("", |start| &text[start..]),
        None => text,
    }
}

/// Whether `text` holds ATEM tool-call markup (vLLM's hand-off test).
pub(super) fn has_atem(text: &str) -> bool {
    text.contains("<atem:function_calls>") || text.contains("<atem:invoke")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool_recipients(text: &str) -> Vec<(Option<&str>, &str)> {
        tool_messages(text)
            .into_iter()
            .map(|m| (m.recipient, m.body))
            .collect()
    }

    #[test]
    fn the_two_grammars_split_headers_like_vllm() {
        // The tool grammar takes the blanks before a header; the reasoning one does not.
        let text = " to=user<|message|>hi  to=f<|message|>x";
        assert_eq!(
            tool_recipients(text),
            [(Some("user"), "hi"), (Some("f"), "x")]
        );
        let framed = reasoning_messages(text);
        assert_eq!(framed[0].body, "hi  ");
        assert_eq!(framed[0].framed, "to=user<|message|>hi  ");
        // `[^\s<]+` recipients vs `[A-Za-z0-9_.\-]+`.
        assert_eq!(tool_recipients("to=a:b<|message|>x"), [(None, "x")]);
        assert_eq!(
            reasoning_messages("to=a:b<|message|>x")[0].recipient,
            Some("a:b")
        );
        assert_eq!(
            reasoning_messages("to=xto=y<|message|>")[0].recipient,
            Some("xto=y")
        );
        assert_eq!(tool_recipients("to=xto=y<|message|>"), [(Some("y"), "")]);
        // `<|start|>` cuts a body; text between messages is dropped.
        assert_eq!(
            tool_recipients("<|message|>a<|start|>b<|eom|>junk<|start|>assistant to=u<|message|>c"),
            [(None, "a"), (Some("u"), "c")]
        );
        assert_eq!(
            reasoning_messages("<|start|>assistant\nto=u<|message|>c")[0].framed,
            "<|start|>assistant\nto=u<|message|>c"
        );
    }
}
