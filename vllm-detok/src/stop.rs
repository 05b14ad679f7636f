//! Stop-string matching over streamed text, O(new bytes) per push.
//!
//! vLLM (`check_stop_strings`) searches the text for every stop string from just before the
//! new characters and picks the match that *ends* earliest, ties going to the earlier stop
//! string in the request's list. An Aho-Corasick automaton fed the text once, byte by byte,
//! finds the same match: at each position it knows every stop string that ends there. Byte
//! positions stand in for vLLM's character positions: both orders agree because matches of
//! valid UTF-8 strings in valid UTF-8 text start and end on character boundaries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use aho_corasick::automaton::{Automaton, StateID};
use aho_corasick::dfa::DFA;
use aho_corasick::nfa::contiguous::NFA;
use aho_corasick::{Anchored, MatchKind};

use crate::chars::{count_chars, is_char_start};
use crate::error::{Error, Result};

/// Up to this many bytes of stop strings, a DFA (one table lookup per byte); beyond, a
/// contiguous NFA, whose memory stays linear in the stop strings (they come from requests).
const MAX_DFA_PATTERN_BYTES: usize = 1024;

/// The most memory the automata shared between requests may hold (see [`shared`]); the
/// cache is emptied when a new one would exceed it.
const MAX_CACHE_BYTES: usize = 8 << 20;

/// A streaming matcher for one request's stop strings: a shared automaton and this
/// request's position in it.
pub(crate) struct StopMatcher {
    automaton: Arc<Compiled>,
    state: StateID,
}

/// The automaton for one list of stop strings, built once and shared by every request with
/// the same list (see [`shared`]).
struct Compiled {
    matcher: Matcher,
    start: StateID,
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

impl Compiled {
    fn new(stops: &[String]) -> Result<Self> {
        let error = |e: aho_corasick::BuildError| Error::StopMatcher(e.to_string());
        let matcher = if stops.iter().map(String::len).sum::<usize>() <= MAX_DFA_PATTERN_BYTES {
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
        let start = match &matcher {
            Matcher::Dfa(a) => a.start_state(Anchored::No),
            Matcher::Nfa(a) => a.start_state(Anchored::No),
        };
        Ok(Self {
            matcher,
            start: start.map_err(|e| Error::StopMatcher(e.to_string()))?,
            lens: stops.iter().map(String::len).collect(),
        })
    }

    fn memory_usage(&self) -> usize {
        match &self.matcher {
            Matcher::Dfa(a) => a.memory_usage(),
            Matcher::Nfa(a) => a.memory_usage(),
        }
    }
}

/// The automaton for `stops`, from a process-wide cache keyed by the list.
///
/// Servers see the same few stop lists on request after request (a model's or an
/// application's defaults), and building a DFA costs as much as matching a few hundred
/// tokens of text, so it is built once per distinct list. The lists come from requests, so
/// the cache is bounded by the automata's memory ([`MAX_CACHE_BYTES`]): when a new automaton
/// would not fit, the cache is emptied (automata in use live on in their requests).
fn shared(stops: &[String]) -> Result<Arc<Compiled>> {
    type Cache = Mutex<(HashMap<Vec<String>, Arc<Compiled>>, usize)>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Cache::default);
    // A poisoned lock only means another thread panicked mid-insert: the map is still valid.
    let lookup = |cache: &Cache| {
        let guard = cache.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(stops).cloned()
    };
    if let Some(compiled) = lookup(cache) {
        return Ok(compiled);
    }
    // Built outside the lock: other requests keep matching meanwhile.
    let compiled = Arc::new(Compiled::new(stops)?);
    let size = compiled.memory_usage() + stops.iter().map(String::len).sum::<usize>();
    if size <= MAX_CACHE_BYTES {
        let mut guard = cache.lock().unwrap_or_else(|e| e.into_inner());
        let (map, bytes) = &mut *guard;
        if *bytes + size > MAX_CACHE_BYTES {
            map.clear();
            *bytes = 0;
        }
        if map.insert(stops.to_vec(), compiled.clone()).is_none() {
            *bytes += size;
        }
    }
    Ok(compiled)
}

impl StopMatcher {
    pub(crate) fn new(stops: &[String]) -> Result<Self> {
        if stops.iter().any(String::is_empty) {
            return Err(Error::EmptyStopString);
        }
        let automaton = shared(stops)?;
        Ok(Self {
            state: automaton.start,
            automaton,
        })
    }

    /// Feeds `text`, which starts at absolute byte offset `offset`, and, when `report` is
    /// set, returns the first match ending in it (the state advances over `text` either way).
    /// Also returns the number of characters in `text`, counted in the same pass, where it
    /// costs nothing next to the automaton's table lookups.
    #[inline]
    pub(crate) fn feed(
        &mut self,
        text: &[u8],
        offset: usize,
        report: bool,
    ) -> (usize, Option<Found>) {
        let compiled = &*self.automaton;
        let (chars, found) = match &compiled.matcher {
            Matcher::Dfa(a) => feed(a, &mut self.state, text, report),
            Matcher::Nfa(a) => feed(a, &mut self.state, text, report),
        };
        let found = found.map(|(index, end)| Found {
            index,
            end: offset + end,
            len: compiled.lens[index],
        });
        (chars, found)
    }
}

/// Runs `automaton` over `text`; returns the characters in `text` and, when `report` is
/// set, the (stop index, end offset in `text`) of the first match, the lowest stop index
/// among those ending there.
#[inline]
fn feed(
    automaton: &impl Automaton,
    state: &mut StateID,
    text: &[u8],
    report: bool,
) -> (usize, Option<(usize, usize)>) {
    let mut current = *state;
    let mut chars = 0;
    for (i, &byte) in text.iter().enumerate() {
        chars += usize::from(is_char_start(byte));
        current = automaton.next_state(Anchored::No, current, byte);
        if report && automaton.is_match(current) {
            *state = current;
            let index = (0..automaton.match_len(current))
                .map(|k| automaton.match_pattern(current, k).as_usize())
                .min();
            let chars = chars + count_chars(&text[i + 1..]);
            return (chars, index.map(|index| (index, i + 1)));
        }
    }
    *state = current;
    (chars, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(stops: &[&str], text: &str, after: usize) -> Option<(usize, usize)> {
        let stops: Vec<String> = stops.iter().map(|s| s.to_string()).collect();
        let mut m = StopMatcher::new(&stops).unwrap();
        // The bytes up to `after` advance the state without reporting.
        m.feed(&text.as_bytes()[..after], 0, false);
        let (chars, found) = m.feed(&text.as_bytes()[after..], after, true);
        assert_eq!(chars, text[after..].chars().count());
        found.map(|f| (f.index, f.end))
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
    fn one_automaton_per_stop_list() {
        let stops = vec!["ab".to_string(), "cd".to_string()];
        let a = StopMatcher::new(&stops).unwrap();
        let b = StopMatcher::new(&stops).unwrap();
        let other = StopMatcher::new(&["ab".to_string()]).unwrap();
        assert!(Arc::ptr_eq(&a.automaton, &b.automaton));
        assert!(!Arc::ptr_eq(&a.automaton, &other.automaton));
    }

    #[test]
    fn empty_stop_string_is_rejected() {
        assert!(matches!(
            StopMatcher::new(&["".into()]),
            Err(Error::EmptyStopString)
        ));
    }
}
