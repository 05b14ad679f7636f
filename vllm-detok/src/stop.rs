//! Stop-string matching over streamed text, O(new bytes) per push.
//!
//! vLLM (`check_stop_strings`) searches the text for every stop string from just before the
//! new characters and picks the match that *ends* earliest, ties going to the earlier stop
//! string in the request's list. An Aho-Corasick automaton fed the text once, byte by byte,
//! finds the same match: at each position it knows every stop string that ends there. Byte
//! positions stand in for vLLM's character positions: both orders agree because matches of
//! valid UTF-8 strings in valid UTF-8 text start and end on character boundaries.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

use crate::error::{Error, Result};

/// A streaming matcher for one request's stop strings.
pub(crate) struct StopMatcher {
    automaton: NFA,
    state: StateID,
    /// Byte length of each stop string.
    lens: Vec<usize>,
}

/// A stop string found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    /// Index into the request's stop list.
    pub(crate) index: usize,
    /// Absolute byte offset of the end of the match.
    pub(crate) end: usize,
    /// Byte length of the stop string.
    pub(crate) len: usize,
}

impl StopMatcher {
    pub(crate) fn new(stops: &[String]) -> Result<Self> {
        if stops.iter().any(String::is_empty) {
            return Err(Error::EmptyStopString);
        }
        // A contiguous NFA rather than a DFA: memory stays linear in the total length of the
        // stop strings, which come from the request.
        let automaton = NFA::builder()
            .match_kind(MatchKind::Standard)
            .build(stops)
            .map_err(|e| Error::StopMatcher(e.to_string()))?;
        let state = automaton
            .start_state(Anchored::No)
            .map_err(|e| Error::StopMatcher(e.to_string()))?;
        Ok(Self {
            automaton,
            state,
            lens: stops.iter().map(String::len).collect(),
        })
    }

    /// Feeds `text`, which starts at absolute byte offset `offset`, and returns the first
    /// match ending after absolute offset `after`, if `check` allows looking for one.
    pub(crate) fn feed(
        &mut self,
        text: &[u8],
        offset: usize,
        after: Option<usize>,
    ) -> Option<Found> {
        for (i, &byte) in text.iter().enumerate() {
            self.state = self.automaton.next_state(Anchored::No, self.state, byte);
            let end = offset + i + 1;
            if self.automaton.is_match(self.state) && after.is_some_and(|after| end > after) {
                let index = (0..self.automaton.match_len(self.state))
                    .map(|k| self.automaton.match_pattern(self.state, k).as_usize())
                    .min()?;
                return Some(Found {
                    index,
                    end,
                    len: self.lens[index],
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(stops: &[&str], text: &str, after: usize) -> Option<(usize, usize)> {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopMatcher::new(&stops).unwrap();
        m.feed(text.as_bytes(), 0, Some(after))
            .map(|f| (f.index, f.end))
    }

    #[test]
    fn earliest_end_then_list_order() {
        // "bc" ends at byte 4, "abcd" at 5: the earliest end wins although listed later.
        assert_eq!(first(&["abcd", "bc"], "xabcd", 0), Some((1, 4)));
        // Same end: list order.
        assert_eq!(first(&["c", "bc"], "xabcd", 0), Some((0, 4)));
        assert_eq!(first(&["bc", "c"], "xabcd", 0), Some((0, 4)));
        // Matches ending at or before `after` are ignored.
        assert_eq!(first(&["ab"], "abxab", 2), Some((0, 5)));
        assert_eq!(first(&["zz"], "abc", 0), None);
    }

    #[test]
    fn empty_stop_string_is_rejected() {
        assert!(matches!(
            StopMatcher::new(&["".into()]),
            Err(Error::EmptyStopString)
        ));
    }
}
