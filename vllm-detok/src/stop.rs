//! Stop-string matching over streamed text.
//!
//! vLLM (`check_stop_strings`) searches the text for every stop string from just before the
//! new characters and picks the match that *ends* earliest, ties going to the earlier stop
//! string in the request's list. Byte positions stand in for vLLM's character positions:
//! both orders agree because matches of valid UTF-8 strings in valid UTF-8 text start and
//! end on character boundaries.
//!
//! Two matchers find that match:
//!
//! - Lists of up to [`MAX_AUTOMATON_BYTES`] bytes: an Aho-Corasick automaton fed the text
//!   once, byte by byte (O(new bytes) per push); at each position it knows every stop string
//!   that ends there. Automata are shared between requests with the same list ([`shared`]).
//! - Longer lists (they come from requests: one client can send megabytes of stop strings):
//!   [`Window`], which keeps the last `longest - 1` bytes of text and searches them plus the
//!   new bytes for each stop string, as vLLM does, with `memchr::memmem`. Its memory is the
//!   stop strings themselves (shared with the decoder, not copied), 4 bytes per stop string
//!   and at most twice the longest stop string of text; an automaton costs about 30 bytes per
//!   stop-string byte and ~145 ms of CPU per megabyte to build.

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

/// Up to this many bytes of stop strings, an automaton (at most ~130 KiB, ~0.6 ms to build,
/// shared through [`shared`]); beyond, a [`Window`] search, whose memory is linear in the
/// stop strings with a small constant and which builds nothing.
pub(crate) const MAX_AUTOMATON_BYTES: usize = 4096;

/// The most memory the automata shared between requests may hold (see [`shared`]); the
/// cache is emptied when a new one would exceed it.
const MAX_CACHE_BYTES: usize = 8 << 20;

/// A streaming matcher for one request's stop strings.
pub(crate) enum StopMatcher {
    /// A shared automaton and this request's position in it.
    Automaton {
        automaton: Arc<Compiled>,
        state: StateID,
    },
    /// Lists longer than [`MAX_AUTOMATON_BYTES`].
    Window(Window),
}

/// The automaton for one list of stop strings, built once and shared by every request with
/// the same list (see [`shared`]).
pub(crate) struct Compiled {
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
    /// The matcher for `stops` (none may be empty): an automaton for lists of up to
    /// [`MAX_AUTOMATON_BYTES`] bytes, a [`Window`] search beyond.
    pub(crate) fn new(stops: &Arc<[String]>) -> Result<Self> {
        if stops.iter().any(String::is_empty) {
            return Err(Error::EmptyStopString);
        }
        if stops.iter().map(String::len).sum::<usize>() > MAX_AUTOMATON_BYTES {
            return Ok(Self::Window(Window::new(stops.clone())));
        }
        let automaton = shared(stops)?;
        Ok(Self::Automaton {
            state: automaton.start,
            automaton,
        })
    }

    /// Feeds `text`, which starts at absolute byte offset `offset`, and, when `report` is
    /// set, returns the first match ending in it (the state advances over `text` either way,
    /// up to the end of the match when there is one).
    /// Also returns the number of characters in `text`, counted in the same pass, where it
    /// costs nothing next to the automaton's table lookups.
    #[inline]
    pub(crate) fn feed(
        &mut self,
        text: &[u8],
        offset: usize,
        report: bool,
    ) -> (usize, Option<Found>) {
        match self {
            Self::Automaton { automaton, state } => {
                let compiled = &**automaton;
                let (chars, found) = match &compiled.matcher {
                    Matcher::Dfa(a) => feed(a, state, text, report),
                    Matcher::Nfa(a) => feed(a, state, text, report),
                };
                let found = found.map(|(index, end)| Found {
                    index,
                    end: offset + end,
                    len: compiled.lens[index],
                });
                (chars, found)
            }
            Self::Window(window) => {
                let found = window.feed(text, report).map(|(index, end)| Found {
                    index,
                    end: offset + end,
                    len: window.stops[index].len(),
                });
                (count_chars(text), found)
            }
        }
    }
}

/// Stop-string search over a window of the text: the bytes that a stop string ending in new
/// text can start in (the last `longest - 1` bytes fed), then the new bytes.
///
/// Each push costs O(new bytes) to note which bytes occur in the new text, then, for each
/// stop string whose last byte occurs there (found through a table by last byte), a
/// comparison of up to 16 bytes at each position where that byte occurs. Only a stop
/// string whose last 16 bytes (or all, if shorter) end in the new text is searched for in
/// full, once per push, with `memchr::memmem` (Two-Way, linear): O(its length + new bytes),
/// which is the cost vLLM pays for every stop string on every push (`str.find` over the
/// same window). Memory: the stop strings (shared), 4 bytes per stop string, a 256-entry
/// table and at most `2 × (longest - 1)` bytes of held text plus the newest push.
pub(crate) struct Window {
    stops: Arc<[String]>,
    /// Indexes of the stop strings by their last byte, ascending.
    by_last: Vec<Vec<u32>>,
    /// Bytes of text to keep: `longest - 1`.
    keep: usize,
    /// The end of the text fed so far, at least its last `keep` bytes (shifted out in bulk
    /// once it holds twice that, so the cost per push stays O(new bytes) amortized).
    text: Vec<u8>,
}

/// Bytes of a stop string's end compared at each candidate position before a full search.
const SUFFIX_CHECK: usize = 16;

impl Window {
    pub(crate) fn new(stops: Arc<[String]>) -> Self {
        let mut by_last = vec![Vec::new(); 256];
        for (i, stop) in stops.iter().enumerate() {
            if let Some(&last) = stop.as_bytes().last() {
                // Indexes fit in u32: a list of more than 4 G strings cannot be in memory.
                by_last[usize::from(last)].push(i as u32);
            }
        }
        let keep = stops
            .iter()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .saturating_sub(1);
        Self {
            stops,
            by_last,
            keep,
            text: Vec::new(),
        }
    }

    /// Appends `new` to the window and, when `report` is set, returns the (stop index, end
    /// offset in `new`) of the match ending earliest in `new`, ties to the lower index; the
    /// window then ends at the match, as the automaton's state does.
    fn feed(&mut self, new: &[u8], report: bool) -> Option<(usize, usize)> {
        let tail = self.text.len();
        self.text.extend_from_slice(new);
        let found = if report && !new.is_empty() {
            self.search(tail)
        } else {
            None
        };
        if let Some((_, end)) = found {
            self.text.truncate(tail + end);
        }
        if self.text.len() > 2 * self.keep.max(SUFFIX_CHECK * 4) {
            let drop = self.text.len() - self.keep;
            self.text.drain(..drop);
        }
        found
    }

    /// The earliest-ending match ending after byte `tail` of the window.
    fn search(&self, tail: usize) -> Option<(usize, usize)> {
        let text = &self.text[..];
        let mut present = [false; 256];
        let mut bytes = Vec::new();
        for &b in &text[tail..] {
            if !present[usize::from(b)] {
                present[usize::from(b)] = true;
                bytes.push(b);
            }
        }
        // (end in the window, stop index)
        let mut best: Option<(usize, usize)> = None;
        for last in bytes {
            for &index in &self.by_last[usize::from(last)] {
                let index = index as usize;
                let stop = self.stops[index].as_bytes();
                let len = stop.len();
                // Ends after `tail`, within the text, and no later than the best so far.
                let low = (tail + 1).max(len);
                let high = best.map_or(text.len(), |(end, _)| end);
                if low > high {
                    continue;
                }
                if let Some(end) = first_end(text, stop, low, high)
                    && best.is_none_or(|b| (end, index) < b)
                {
                    best = Some((end, index));
                }
            }
        }
        best.map(|(end, index)| (index, end - tail))
    }
}

/// The first end `e` in `low..=high` (with `low >= stop.len()`) of an occurrence of `stop`
/// in `text` (`text[e - len..e] == stop`).
fn first_end(text: &[u8], stop: &[u8], low: usize, high: usize) -> Option<usize> {
    let len = stop.len();
    let check = len.min(SUFFIX_CHECK);
    let suffix = &stop[len - check..];
    let last = stop[len - 1];
    // Candidate ends: positions of the last byte.
    for at in memchr::memchr_iter(last, &text[low - 1..high]) {
        let end = low + at;
        if text[end - check..end] == *suffix {
            if check == len {
                return Some(end);
            }
            // The end matches: one linear search of the whole range decides.
            return memchr::memmem::find(&text[low - len..high], stop)
                .map(|start| low - len + start + len);
        }
    }
    None
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
        let stops: Arc<[String]> = stops.iter().map(|s| s.to_string()).collect();
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

    fn automaton(m: &StopMatcher) -> &Arc<Compiled> {
        match m {
            StopMatcher::Automaton { automaton, .. } => automaton,
            StopMatcher::Window(_) => panic!("a window matcher"),
        }
    }

    #[test]
    fn one_automaton_per_stop_list() {
        let stops: Arc<[String]> = vec!["ab".to_string(), "cd".to_string()].into();
        let a = StopMatcher::new(&stops).unwrap();
        let b = StopMatcher::new(&stops.to_vec().into()).unwrap();
        let other = StopMatcher::new(&vec!["ab".to_string()].into()).unwrap();
        assert!(Arc::ptr_eq(automaton(&a), automaton(&b)));
        assert!(!Arc::ptr_eq(automaton(&a), automaton(&other)));
    }

    #[test]
    fn empty_stop_string_is_rejected() {
        assert!(matches!(
            StopMatcher::new(&vec!["".to_string()].into()),
            Err(Error::EmptyStopString)
        ));
    }

    #[test]
    fn long_lists_build_no_automaton() {
        let long = "x".repeat(MAX_AUTOMATON_BYTES + 1);
        let m = StopMatcher::new(&vec![long].into()).unwrap();
        assert!(matches!(m, StopMatcher::Window(_)));
        let text = format!("{}ab{}", "x".repeat(MAX_AUTOMATON_BYTES), "x".repeat(10));
        assert_eq!(
            first(&[&"x".repeat(MAX_AUTOMATON_BYTES + 1), "ab"], &text, 0),
            Some((1, MAX_AUTOMATON_BYTES + 2))
        );
    }

    /// A tiny deterministic generator (xorshift), so the test needs no dev-dependency here.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        fn string(&mut self, alphabet: &[&str], len: usize) -> String {
            (0..len)
                .map(|_| alphabet[self.below(alphabet.len())])
                .collect()
        }
    }

    /// The window search finds exactly what the automata (DFA and NFA) find, over random stop
    /// lists (overlapping, repeated, prefixes of each other, long and short, multi-byte
    /// characters), random texts, chunkings and `report` flags, continuing after matches.
    #[test]
    fn window_search_equals_the_automata() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let alphabets: [&[&str]; 3] = [&["a", "b"], &["a", "b", "c", "é"], &["a", "ab", "€", "x"]];
        let cases = if cfg!(debug_assertions) {
            3_000
        } else {
            20_000
        };
        let mut matches = 0;
        for case in 0..cases {
            let alphabet = alphabets[case % alphabets.len()];
            let count = 1 + rng.below(6);
            let stops: Vec<String> = (0..count)
                .map(|_| {
                    // Mostly short, sometimes longer than SUFFIX_CHECK.
                    let len = if rng.below(4) == 0 {
                        SUFFIX_CHECK + rng.below(2 * SUFFIX_CHECK)
                    } else {
                        1 + rng.below(5)
                    };
                    rng.string(alphabet, len)
                })
                .collect();
            let stops: Arc<[String]> = stops.into();
            let nfa = case % 2 == 0;
            let compiled = if nfa {
                let nfa = NFA::builder().build(&*stops).unwrap();
                let start = nfa.start_state(Anchored::No).unwrap();
                Compiled {
                    matcher: Matcher::Nfa(nfa),
                    start,
                    lens: stops.iter().map(String::len).collect(),
                }
            } else {
                Compiled::new(&stops).unwrap()
            };
            let compiled = Arc::new(compiled);
            let mut automaton = StopMatcher::Automaton {
                state: compiled.start,
                automaton: compiled,
            };
            let mut window = StopMatcher::Window(Window::new(stops.clone()));
            let len = rng.below(200);
            let text = rng.string(alphabet, len);
            let mut offset = 0;
            let mut rest = &text[..];
            while !rest.is_empty() {
                // A chunk on a character boundary.
                let mut cut = 1 + rng.below(rest.len().min(40));
                while !rest.is_char_boundary(cut) {
                    cut += 1;
                }
                let (chunk, next) = rest.split_at(cut);
                let report = rng.below(5) != 0;
                let a = automaton.feed(chunk.as_bytes(), offset, report);
                let w = window.feed(chunk.as_bytes(), offset, report);
                assert_eq!(a, w, "stops {stops:?} text {text:?} chunk at {offset}");
                matches += usize::from(a.1.is_some());
                offset += chunk.len();
                rest = next;
            }
        }
        assert!(matches > cases, "{matches} matches");
    }

    /// A megabyte stop string costs the request about its own size, not ~30 times it.
    #[test]
    fn a_long_stop_string_costs_about_its_size() {
        let stop = "ab".repeat(1 << 19);
        let stops: Arc<[String]> = vec![stop.clone(), "zz".into()].into();
        let mut m = StopMatcher::new(&stops).unwrap();
        let mut offset = 0;
        let chunk = "ab".repeat(4);
        let mut found = None;
        while found.is_none() && offset < 3 << 20 {
            found = m.feed(chunk.as_bytes(), offset, true).1;
            offset += chunk.len();
        }
        assert_eq!(found.map(|f| (f.index, f.end)), Some((0, 1 << 20)));
        let StopMatcher::Window(window) = &m else {
            panic!("an automaton for 1 MB of stop strings")
        };
        assert!(
            window.text.capacity() <= 3 << 20,
            "{}",
            window.text.capacity()
        );
        // What the request costs beyond the stop strings it already holds, against the
        // automaton this list used to get.
        let own = window.text.capacity() + 256 * std::mem::size_of::<Vec<u32>>() + 4 * 2;
        let nfa = NFA::builder().build(&*stops).unwrap().memory_usage();
        eprintln!("1 MiB stop string: window {own} bytes, contiguous NFA {nfa} bytes");
        assert!(nfa > 10 * own, "window {own}, nfa {nfa}");
    }
}
