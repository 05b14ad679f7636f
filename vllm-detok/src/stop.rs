//! Stop-string matching over streamed text, O(new bytes) per push.
//!
//! vLLM (`check_stop_strings`) searches the text for every stop string from just before the
//! new characters and picks the match that *ends* earliest, ties going to the earlier stop
//! string in the request's list. An Aho-Corasick automaton fed the text once, byte by byte,
//! finds the same match: at each position it knows every stop string that ends there. Byte
//! positions stand in for vLLM's character positions: both orders agree because matches of
//! valid UTF-8 strings in valid UTF-8 text start and end on character boundaries.

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

use crate::error::{Error, Result};

/// Up to this many bytes of stop strings, a DFA (one table lookup per byte); beyond, a
/// contiguous NFA, whose memory stays linear in the stop strings (they come from requests).
const MAX_DFA_PATTERN_BYTES: usize = 1024;

/// A streaming matcher for one request's stop strings.
pub(crate) struct StopMatcher {
    automaton: Matcher,
    state: StateID,
    /// Byte length of each stop string.
    lens: Vec<usize>,
}

enum Matcher {
    Dfa(DFA),
    Nfa(NFA),
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
        let error = |e: aho_corasick::BuildError| Error::StopMatcher(e.to_string());
        let automaton = if stops.iter().map(String::len).sum::<usize>() <= MAX_DFA_PATTERN_BYTES {
            Matcher::Dfa(
                DFA::builder()
                    .match_kind(MatchKind::Standard)
                    .build(stops)
                    .map_err(error)?,
            )
        } else {
            Matcher::Nfa(
                NFA::builder()
                    .match_kind(MatchKind::Standard)
                    .build(stops)
                    .map_err(error)?,
            )
        };
        let start = match &automaton {
            Matcher::Dfa(a) => a.start_state(Anchored::No),
            Matcher::Nfa(a) => a.start_state(Anchored::No),
        };
        let state = start.map_err(|e| Error::StopMatcher(e.to_string()))?;
        Ok(Self {
            automaton,
            state,
            lens: stops.iter().map(String::len).collect(),
        })
    }

    /// Feeds `text`, which starts at absolute byte offset `offset`, and returns the first
    /// match ending after absolute offset `after` (none when `after` is `None`).
    pub(crate) fn feed(
        &mut self,
        text: &[u8],
        offset: usize,
        after: Option<usize>,
    ) -> Option<Found> {
        let found = match &self.automaton {
            Matcher::Dfa(a) => feed(a, &mut self.state, text, offset, after),
            Matcher::Nfa(a) => feed(a, &mut self.state, text, offset, after),
        }?;
        Some(Found {
            index: found.0,
            end: found.1,
            len: self.lens[found.0],
        })
    }
}

/// Runs `automaton` over `text`; returns the (stop index, end offset) of the first match
/// ending after `after`, the lowest stop index among those ending there.
#[inline]
fn feed(
    automaton: &impl Automaton,
    state: &mut StateID,
    text: &[u8],
    offset: usize,
    after: Option<usize>,
) -> Option<(usize, usize)> {
    for (i, &byte) in text.iter().enumerate() {
        *state = automaton.next_state(Anchored::No, *state, byte);
        let end = offset + i + 1;
        if automaton.is_match(*state) && after.is_some_and(|after| end > after) {
            let index = (0..automaton.match_len(*state))
                .map(|k| automaton.match_pattern(*state, k).as_usize())
                .min()?;
            return Some((index, end));
        }
    }
    None
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
    fn nfa_and_dfa_agree() {
        // Long stop strings take the NFA.
        let long = "x".repeat(MAX_DFA_PATTERN_BYTES);
        let text = format!("{long}abcd");
        assert_eq!(
            first(&[&long, "bc"], &text, 0),
            Some((0, MAX_DFA_PATTERN_BYTES))
        );
        assert_eq!(
            first(&[&long, "zz", "bc"], &format!("a{}", &text[1..]), 0),
            Some((2, MAX_DFA_PATTERN_BYTES + 3))
        );
    }

    #[test]
    fn empty_stop_string_is_rejected() {
        assert!(matches!(
            StopMatcher::new(&["".into()]),
            Err(Error::EmptyStopString)
        ));
    }
}
