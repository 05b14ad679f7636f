//! Content that vLLM returns Python-`strip()`ped when it finds calls and
//! verbatim when it does not (`functiongemma`, `step3`).
//!
//! [`StrippedContent`] streams such content as far as it cannot change: a
//! whitespace run at its end is held until more text follows, and content that
//! *starts* with whitespace is held to the end (its leading whitespace survives
//! only if no call comes).

use crate::event::Event;
use crate::text::{py_is_space, py_strip};

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
}
