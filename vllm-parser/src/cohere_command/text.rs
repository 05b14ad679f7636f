//! Reasoning and answer text of a Cohere Command segment: melody's
//! `process_grounded_text` — whitespace trimming and Command 3 citations
//! (`<co>cited text</co: 0:[1]>` becomes `cited text`).

/// The opener of a Command 3 citation.
const CITATION_OPEN: &str = "<co>";
/// The closer's start; the closer runs to the next `>`.
const CITATION_CLOSE: &str = "</co: ";

/// melody's per-filter text state.
#[derive(Debug)]
pub(crate) struct TextFilter {
    /// Trim leading whitespace until some text is emitted (set when
    /// reasoning starts).
    pub left_trimmed: bool,
    /// Where a partial citation's text resumes in the next call, relative to
    /// that call's text (`cur_citation_byte_index`).
    citation_resume: Option<usize>,
}

impl TextFilter {
    pub(crate) fn new() -> Self {
        Self {
            left_trimmed: false,
            citation_resume: None,
        }
    }

    /// A new reasoning or answer region (`apply_special_token_match`).
    pub(crate) fn restart(&mut self, reasoning: bool) {
        self.citation_resume = None;
        if reasoning {
            self.left_trimmed = true;
        }
    }

    /// `process_grounded_text(text, after_last_token)`: the text to emit and
    /// how many bytes of `text` were consumed.
    pub(crate) fn process(&mut self, text: &str, after_last_token: bool) -> (String, usize) {
        let trimmed_end = text.trim_end();
        let right = text.len() - trimmed_end.len();
        let send = if self.left_trimmed {
            let send = trimmed_end.trim_start();
            if !send.is_empty() {
                self.left_trimmed = false;
            }
            send
        } else {
            trimmed_end
        };
        let removed_left = text.len() - send.len() - right;
        let (parsed, consumed) = self.citations(send);
        match parsed {
            Some(Parsed { text, cited }) if !text.is_empty() || cited => {
                (text, removed_left + consumed)
            }
            _ if send.is_empty() || !after_last_token => (String::new(), removed_left + consumed),
            _ => {
                // Flush an unsent partial citation.
                let unsent = match self.citation_resume.take() {
                    Some(at) if at < send.len() && send.is_char_boundary(at) => &send[at..],
                    Some(_) => "",
                    None => send,
                };
                (unsent.to_owned(), removed_left + consumed)
            }
        }
    }

    /// `parse_citations`: the text with complete citations unwrapped, or
    /// `None` to wait for more; and the bytes consumed.
    fn citations(&mut self, s: &str) -> (Option<Parsed>, usize) {
        let mut text = String::new();
        let mut cited = false;
        let mut consumed = 0;
        let mut rest = s;
        // What an unfinished or invalid citation leaves: the citations so far.
        let so_far = |text: String, cited: bool| cited.then_some(Parsed { text, cited });
        loop {
            if !rest.contains('<') {
                text.push_str(rest);
                return (Some(Parsed { text, cited }), consumed + rest.len());
            }
            let (open_start, open_end) = match find_partial(rest, CITATION_OPEN) {
                Match::None => {
                    text.push_str(rest);
                    return (Some(Parsed { text, cited }), consumed + rest.len());
                }
                Match::Partial(_) => return (so_far(text, cited), consumed),
                Match::Full(at) => (at, at + CITATION_OPEN.len() - 1),
            };
            let close = find_close(rest);
            let (close_start, close_end) = match close {
                Some((start, Some(end))) => (start, end),
                other => {
                    let close_start = other.map(|(start, _)| start);
                    let partial = self.partial_citation(open_start, open_end, close_start, rest);
                    return match partial {
                        (piece, removed) if !piece.is_empty() => {
                            text.push_str(&piece);
                            (Some(Parsed { text, cited }), consumed + removed)
                        }
                        _ => (so_far(text, cited), consumed),
                    };
                }
            };
            if open_end > close_start {
                return (so_far(text, cited), consumed);
            }
            let inner = &rest[open_end + 1..close_start];
            let mut piece = format!("{}{inner}", &rest[..open_start]);
            if let Some(resume) = self.citation_resume.take() {
                piece = rest.get(resume..close_start).unwrap_or_default().to_owned();
            }
            text.push_str(&piece);
            cited = true;
            consumed += close_end + 1;
            rest = &rest[close_end + 1..];
        }
    }

    /// `get_partial_citation_text`: the text before an unfinished citation
    /// and what of the citation has come so far.
    fn partial_citation(
        &mut self,
        open_start: usize,
        open_end: usize,
        close_start: Option<usize>,
        s: &str,
    ) -> (String, usize) {
        let before = &s[..open_start];
        let start = match self.citation_resume {
            Some(at) if at >= s.len() => return (before.to_owned(), before.len()),
            Some(at) => at,
            None => open_end + 1,
        };
        self.citation_resume = Some(s.len().saturating_sub(before.len()));
        let end = match close_start {
            Some(at) if at > 0 => at,
            _ => s.len(),
        };
        if start >= end || !s.is_char_boundary(start) || !s.is_char_boundary(end) {
            return (before.to_owned(), before.len());
        }
        (format!("{before}{}", &s[start..end]), before.len())
    }
}

/// Text out of `parse_citations`, and whether it unwrapped a citation.
struct Parsed {
    text: String,
    cited: bool,
}

/// `find_an_element(s, "</co: ", ">")`: the closer's start (full or partial
/// match) and its `>`.
fn find_close(s: &str) -> Option<(usize, Option<usize>)> {
    match find_partial(s, CITATION_CLOSE) {
        Match::None => None,
        Match::Partial(at) => Some((at, None)),
        Match::Full(at) => Some((at, s[at + 1..].find('>').map(|end| at + 1 + end))),
    }
}

/// A marker found in text: complete, or a prefix of it ending the text.
pub(crate) enum Match {
    None,
    Partial(usize),
    Full(usize),
}

/// melody's `find_partial` for one marker.
pub(crate) fn find_partial(s: &str, marker: &str) -> Match {
    if let Some(at) = s.find(marker) {
        return Match::Full(at);
    }
    (1..marker.len())
        .rev()
        .filter(|&len| marker.is_char_boundary(len))
        .find(|&len| s.ends_with(&marker[..len]))
        .map_or(Match::None, |len| Match::Partial(s.len() - len))
}
