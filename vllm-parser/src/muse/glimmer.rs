//! `MuseGlimmerReasoningParser.extract_reasoning`: Muse Glimmer's original
//! reasoning rules, regex substitutions over the complete output, each here a
//! forward pass (`SELF` is `to=self<|message|>`, a header is
//! `to=[^\s<]+<|message|>`):
//!
//! 1. reasoning: each `<|eom|>` up to the next `SELF` is collapsed to `"\n"`,
//!    then the `SELF … <|eom|>` bodies are joined with `"\n"`; the first `SELF`
//!    body that runs into a header or the end without an `<|eom|>` is appended;
//! 2. closed, then open, `SELF` spans (with a `<|start|>assistant` prefix) are
//!    removed; if the rest holds ATEM markup it is the content (the tool parser
//!    reads it);
//! 3. otherwise the content is the first `to=user<|message|>` body (up to
//!    `<|eot|>`, `<|eom|>` or the end); without one it is nothing when a `SELF`
//!    occurs, else the whole output, which is then not reasoning.

use super::messages::{
    ASSISTANT_OPEN, EOM, EOT, MESSAGE, NextOf, find_from, has_atem, reasoning_messages,
};

const SELF_OPEN: &str = "to=self<|message|>";
const USER_OPEN: &str = "to=user<|message|>";

/// Start positions of every `to=[^\s<]+<\|message\|>` match (overlapping ones
/// included, as a lookahead sees them), in order.
fn header_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(marker) = find_from(text, from, MESSAGE) {
        let seg = &text[from..marker];
        let mut at = seg
            .trim_end_matches(|c: char| !c.is_whitespace() && c != '<')
            .len();
        while let Some(found) = seg[at..].find("to=") {
            let start = at + found;
            if start + 3 < seg.len() {
                starts.push(from + start);
            }
            at = start + 1;
        }
        from = marker + MESSAGE.len();
    }
    starts
}

/// The first header start at or after `from`.
fn next_header(starts: &[usize], from: usize) -> Option<usize> {
    starts.get(starts.partition_point(|&s| s < from)).copied()
}

/// The open-span regexes over one text: where a `SELF` body ends.
struct OpenBodies<'t> {
    text: &'t str,
    /// Every header start, in order.
    starts: Vec<usize>,
    /// `<|eom|>` searches (their starts only grow).
    eoms: NextOf<'static>,
}

impl<'t> OpenBodies<'t> {
    fn new(text: &'t str) -> Self {
        Self {
            text,
            starts: header_starts(text),
            eoms: NextOf::new(&[EOM]),
        }
    }

    /// Where a `SELF` body starting at `body` ends: `Some` at a header or the
    /// end, `None` at an `<|eom|>` (the regexes fail there).
    fn end(&mut self, body: usize) -> Option<usize> {
        let header = next_header(&self.starts, body).unwrap_or(self.text.len());
        match self.eoms.find(self.text, body) {
            Some((eom, _)) if eom < header => None,
            _ => Some(header),
        }
    }
}

/// Where a match of `(?:<\|start\|>assistant\s*)?SELF` at `at` starts, not
/// before `floor`.
fn with_prefix(text: &str, floor: usize, at: usize) -> usize {
    text[floor..at]
        .trim_end_matches(char::is_whitespace)
        .strip_suffix(ASSISTANT_OPEN)
        .map_or(at, |before| floor + before.len())
}

/// `_COLLAPSE_RE.sub("\n", text)`.
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(eom) = find_from(text, pos, EOM) {
        let Some(open) = find_from(text, eom + EOM.len(), SELF_OPEN) else {
            break;
        };
        out.push_str(&text[pos..eom]);
        out.push('\n');
        pos = open + SELF_OPEN.len();
    }
    out.push_str(&text[pos..]);
    out
}

/// `_REASONING_RE.findall(text)`.
fn closed_bodies(text: &str) -> Vec<&str> {
    let mut bodies = Vec::new();
    let mut pos = 0;
    while let Some(open) = find_from(text, pos, SELF_OPEN) {
        let body = open + SELF_OPEN.len();
        let Some(eom) = find_from(text, body, EOM) else {
            break;
        };
        bodies.push(&text[body..eom]);
        pos = eom + EOM.len();
    }
    bodies
}

/// `_OPEN_REASONING_RE.search(text)`: the first open `SELF` body.
fn open_body(text: &str) -> Option<&str> {
    let mut bodies = OpenBodies::new(text);
    let mut pos = 0;
    while let Some(open) = find_from(text, pos, SELF_OPEN) {
        let body = open + SELF_OPEN.len();
        if let Some(end) = bodies.end(body) {
            return Some(&text[body..end]);
        }
        pos = open + 1;
    }
    None
}

/// `_STRIP_REASONING_RE.sub("", text)`.
fn strip_closed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(open) = find_from(text, pos, SELF_OPEN) {
        let Some(eom) = find_from(text, open + SELF_OPEN.len(), EOM) else {
            break;
        };
        out.push_str(&text[pos..with_prefix(text, pos, open)]);
        pos = eom + EOM.len();
    }
    out.push_str(&text[pos..]);
    out
}

/// `_STRIP_OPEN_REASONING_RE.sub("", text)`.
fn strip_open(text: &str) -> String {
    let mut bodies = OpenBodies::new(text);
    let mut out = String::with_capacity(text.len());
    let (mut copied, mut search) = (0, 0);
    while let Some(open) = find_from(text, search, SELF_OPEN) {
        match bodies.end(open + SELF_OPEN.len()) {
            Some(end) => {
                out.push_str(&text[copied..with_prefix(text, copied, open)]);
                copied = end;
                search = end;
            }
            None => search = open + 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// `_CONTENT_RE.search(text)`'s body.
fn user_body(text: &str) -> Option<&str> {
    let body = find_from(text, 0, USER_OPEN)? + USER_OPEN.len();
    let end = [EOT, EOM]
        .iter()
        .filter_map(|marker| find_from(text, body, marker))
        .min()
        .unwrap_or(text.len());
    Some(&text[body..end])
}

/// `(reasoning, content)` as `MuseGlimmerReasoningParser.extract_reasoning`
/// returns them (empty strings stand for `None`).
pub(super) fn extract_reasoning(text: &str) -> (String, String) {
    let mut reasoning = closed_bodies(&collapse(text)).join("\n");
    if let Some(partial) = open_body(text).filter(|p| !p.is_empty()) {
        if !reasoning.is_empty() {
            reasoning.push('\n');
        }
        reasoning.push_str(partial);
    }
    let remainder = strip_open(&strip_closed(text));
    if has_atem(&remainder) {
        return (reasoning, remainder);
    }
    match user_body(text) {
        Some(content) => (reasoning, content.to_owned()),
        None if text.contains(SELF_OPEN) => (reasoning, String::new()),
        None => (String::new(), text.to_owned()),
    }
}

/// `_tool_channel_remainder` (Glimmer) holds ATEM markup: in the text after
/// the last `<|start|>assistant`, with reasoning spans removed, from the
/// first `to=RECIPIENT<|message|>` header to neither `self` nor `user` on.
pub(super) fn opens_tool_channel(text: &str) -> bool {
    let turn = text
        .rfind(ASSISTANT_OPEN)
        .map_or(text, |at| &text[at + ASSISTANT_OPEN.len()..]);
    let scoped = strip_open(&strip_closed(turn));
    let messages = reasoning_messages(&scoped);
    messages
        .iter()
        .position(|m| m.recipient.is_some_and(|r| r != "self" && r != "user"))
        .is_some_and(|first| messages[first..].iter().any(|m| has_atem(m.framed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glimmer_rules_reproduce_vllm_quirks() {
        // An `<|eom|>` of a tool message collapses into the next reasoning block.
        let text = "to=f<|message|>X<|eom|>to=self<|message|>B<|eom|>";
        assert_eq!(extract_reasoning(text).0, "");
        let text = "to=self<|message|>A<|eom|>to=f<|message|>X<|eom|>to=self<|message|>B<|eom|>";
        assert_eq!(extract_reasoning(text).0, "A\nB");
        // An open block ends at the next header; a block closed by <|eom|> is not open.
        let text = "to=self<|message|>think to=f<|message|><atem:invoke";
        let (reasoning, content) = extract_reasoning(text);
        assert_eq!(reasoning, "think ");
        assert_eq!(content, "to=f<|message|><atem:invoke");
        assert_eq!(header_starts("to=ato=b<|message|>"), [0, 4]);
        assert_eq!(extract_reasoning("plain").1, "plain");
    }
}
