//! Content that vLLM returns Python-`strip()`ped when it finds calls and
//! verbatim when it does not (`functiongemma`, `step3`).
//!
//! [`StrippedContent`] streams such content as far as it cannot change: a
//! whitespace run at its end is held until more text follows, and content that
//! *starts* with whitespace is held to the end (its leading whitespace survives
//! only if no call comes).
//!
//! [`StrippedHead`] is the whole streaming shell of such formats (`dots`,
//! `functiongemma`, `step3`): content streams until the format's start marker,
//! and the text from the marker on is kept for the format to settle at `finish`.

use crate::event::Event;
use crate::text::{MarkerScanner, Piece, py_is_space, py_strip};

/// Content before a format's calls, released as far as `strip()` cannot touch it.
#[derive(Debug, Default)]
pub struct StrippedContent {
    /// Not yet released: a whitespace run at the end, or all of it when the
    /// content started with whitespace.
    held: String,
    /// Whether content was released (so it did not start with whitespace).
    released: bool,
}

impl StrippedContent {
    /// More content.
    pub fn push(&mut self, text: &str, out: &mut Vec<Event>) {
        self.held.push_str(text);
        if !self.released && self.held.starts_with(py_is_space) {
            return;
        }
        let keep = self.held.trim_end_matches(py_is_space).len();
        if keep > 0 {
            let rest = self.held.split_off(keep);
            out.push(Event::Content(std::mem::replace(&mut self.held, rest)));
            self.released = true;
        }
    }

    /// No calls: the held text as it was.
    pub fn verbatim(self) -> String {
        self.held
    }

    /// Calls were found and vLLM's content is `(content + more).strip()`: what
    /// is left to emit of it.
    pub fn stripped(self, more: &str) -> String {
        let rest = self.held + more;
        if self.released {
            rest.trim_end_matches(py_is_space).to_owned()
        } else {
            py_strip(&rest).to_owned()
        }
    }

    /// Calls were found and vLLM's content is the non-empty ones of
    /// `content.strip()` and `parts` joined by `"\n"` (`lfm2`, `apertus`):
    /// what is left to emit of it.
    pub fn joined(self, parts: &[&str]) -> String {
        let mut spoke = self.released;
        let mut text = self.stripped("");
        for part in parts.iter().filter(|part| !part.is_empty()) {
            if spoke || !text.is_empty() {
                text.push('\n');
            }
            text.push_str(part);
            spoke = true;
        }
        text
    }
}

/// Streams [`StrippedContent`] until `marker`, then keeps the tail (from the marker
/// on, marker included) for the format to settle once the output ends; O(delta) per
/// push.
#[derive(Debug)]
pub struct StrippedHead {
    marker: &'static str,
    scanner: MarkerScanner,
    content: StrippedContent,
    tail: Option<String>,
}

/// A [`StrippedHead`] at the end of the output.
#[derive(Debug)]
pub struct Ended {
    /// The content before the marker not yet released.
    pub content: StrippedContent,
    /// Text held back as a possible start of the marker (only when it never came).
    pub rest: String,
    /// From the marker on, marker included; `None` when the marker never came.
    pub tail: Option<String>,
}

impl Ended {
    /// No calls: vLLM returns everything as content, as it was.
    pub fn verbatim(self) -> String {
        self.content.verbatim() + &self.rest + self.tail.as_deref().unwrap_or("")
    }
}

impl StrippedHead {
    /// A shell for a format whose calls start at `marker`.
    pub fn new(marker: &'static str) -> Self {
        Self {
            marker,
            scanner: MarkerScanner::new(),
            content: StrippedContent::default(),
            tail: None,
        }
    }

    /// More output.
    pub fn push(&mut self, text: &str, out: &mut Vec<Event>) {
        if let Some(tail) = &mut self.tail {
            tail.push_str(text);
            return;
        }
        self.scanner.push(text);
        while let Some(piece) = self.scanner.next(&[self.marker]) {
            match piece {
                Piece::Text(text) => self.content.push(text, out),
                Piece::Marker(_) => {
                    self.tail = Some(format!("{}{}", self.marker, self.scanner.finish()));
                    return;
                }
            }
        }
    }

    /// The end of the output.
    pub fn finish(&mut self) -> Ended {
        Ended {
            rest: self.scanner.finish(),
            content: std::mem::take(&mut self.content),
            tail: self.tail.take(),
        }
    }
}
