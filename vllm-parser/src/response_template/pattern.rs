//! Delimiter regexes with the Python `regex` module's partial matching.
//!
//! vLLM's response-template parser searches every delimiter with
//! `pattern.search(buffer, pos, partial=True)`: the leftmost complete match if
//! there is one, otherwise the leftmost *partial* match — a start from which the
//! rest of the buffer is a prefix of some match, so more text could complete
//! it. Neither `regex` nor `regex-automata` reports partial matches, so this is
//! a small Pike VM over `regex-automata`'s Thompson NFA (which parses the
//! syntax): threads run in priority order (leftmost-first, like Python's
//! backtracking), one per NFA state, so a search is linear in the text.
//!
//! One deliberate difference: Python reports a complete match even while a
//! thread that outranks it is still alive at the end of the text (for
//! `<\|end\|><\|assistant\|>|<\|end\|>` on `…<|end|><`, the short
//! alternative), so vLLM's streaming commits a delimiter that its whole-text
//! parse would not. Here such a match is partial: streaming waits and gives
//! the whole-text result at every chunking.

use regex_automata::nfa::thompson::{NFA, State, WhichCaptures};
use regex_automata::util::primitives::{PatternID, StateID};
use regex_automata::util::syntax;

/// A compiled delimiter or content pattern (Python's `re.DOTALL` on).
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    nfa: NFA,
    slot_len: usize,
    /// For an alternation of literals, the literals in priority order
    /// (searched with `memmem` instead of the VM).
    literals: Option<Vec<String>>,
}

/// One search result: a span of the haystack and its capture slots.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Byte offset where the match (or partial match) starts.
    pub start: usize,
    /// Byte offset where it ends (the haystack's end for a partial match).
    pub end: usize,
    /// Whether more text could complete it (it reached the haystack's end
    /// without matching).
    pub partial: bool,
    slots: Vec<Option<usize>>,
}

impl Pattern {
    /// Compile a Python regex. `\Z` (Python's end of string) is `\z` here.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let pattern = python_end_anchor(pattern);
        let nfa = NFA::compiler()
            .syntax(syntax::Config::new().dot_matches_new_line(true))
            .configure(NFA::config().which_captures(WhichCaptures::All))
            .build(&pattern)
            .map_err(|e| e.to_string())?;
        let slot_len = nfa.group_info().slot_len();
        Ok(Self {
            nfa,
            slot_len,
            literals: None,
        })
    }

    /// The alternation of `literals`, tried in the order given (Python's
    /// `|`.join of their escapes).
    pub(crate) fn literals(literals: &[String]) -> Result<Self, String> {
        let alternation: Vec<String> = literals.iter().map(|s| regex_syntax::escape(s)).collect();
        let mut pattern = Self::new(&alternation.join("|"))?;
        pattern.literals = Some(literals.to_vec());
        Ok(pattern)
    }

    /// `source` that must also end at the end of the text, for Python's
    /// `fullmatch` ([`matches_from`](Self::matches_from)).
    pub(crate) fn to_end(source: &str) -> Result<Self, String> {
        Self::new(&format!("(?:{source})\\z"))
    }

    /// Python's `fullmatch(text, at)` for a pattern made by
    /// [`to_end`](Self::to_end): whether a match starts at byte `at` (`^`
    /// still means the start of `text`).
    pub(crate) fn matches_from(&self, text: &str, at: usize) -> bool {
        text.is_char_boundary(at)
            && self
                .search(text, at, false)
                .is_some_and(|found| found.start == at)
    }

    /// The names of the pattern's named groups.
    pub(crate) fn group_names(&self) -> impl Iterator<Item = &str> {
        self.nfa
            .group_info()
            .pattern_names(PatternID::ZERO)
            .flatten()
    }

    /// The text of group `name` in `found`, when the group took part in it.
    pub(crate) fn group<'h>(
        &self,
        found: &Found,
        haystack: &'h str,
        name: &str,
    ) -> Option<&'h str> {
        let index = self.nfa.group_info().to_index(PatternID::ZERO, name)?;
        let start = (*found.slots.get(index * 2)?)?;
        let end = (*found.slots.get(index * 2 + 1)?)?;
        haystack.get(start..end)
    }

    /// Every named group of `found` that took part in it, as Python's
    /// `{k: v for k, v in m.groupdict().items() if v is not None}`.
    pub(crate) fn named_groups(&self, found: &Found, haystack: &str) -> Vec<(String, String)> {
        self.group_names()
            .filter_map(|name| {
                self.group(found, haystack, name)
                    .map(|text| (name.to_owned(), text.to_owned()))
            })
            .collect()
    }

    /// Python's `pattern.search(haystack, from, partial=partial)`: the leftmost
    /// complete match at or after `from`; failing that, with `partial`, the
    /// leftmost start whose rest of the haystack could still grow into a match.
    /// (A partial match that starts at the very end is reported as `None`: it
    /// holds nothing back.)
    pub(crate) fn search(&self, haystack: &str, from: usize, partial: bool) -> Option<Found> {
        self.search_with(&mut SearchCache::default(), haystack, from, partial)
    }

    /// [`search`](Self::search) with reusable thread buffers.
    pub(crate) fn search_with(
        &self,
        cache: &mut SearchCache,
        haystack: &str,
        from: usize,
        partial: bool,
    ) -> Option<Found> {
        if let Some(literals) = &self.literals {
            return self.search_literals(literals, haystack, from, partial);
        }
        let bytes = haystack.as_bytes();
        let mut vm = Vm::new(&self.nfa, self.slot_len, cache);
        let mut matched: Option<Vec<Option<usize>>> = None;
        let mut alive_start: Option<usize> = None;
        let mut at = from;
        loop {
            if matched.is_none() && haystack.is_char_boundary(at) {
                vm.start_thread(self.nfa.start_anchored(), bytes, at);
            }
            if vm.current.is_empty() && matched.is_some() {
                break;
            }
            for index in 0..vm.current.len() {
                let sid = vm.current.states[index];
                match self.nfa.state(sid) {
                    State::Match { .. } => {
                        matched = Some(vm.current.slots_of(index).to_vec());
                        break; // lower-priority threads lose to this match
                    }
                    state if at == bytes.len() => {
                        if consumes(state) {
                            let start = vm.current.slots_of(index)[0];
                            alive_start = min_option(alive_start, start);
                        }
                    }
                    state => {
                        if let Some(next) = step(state, bytes[at]) {
                            vm.follow(index, next, bytes, at + 1);
                        }
                    }
                }
            }
            if at == bytes.len() {
                break;
            }
            vm.advance();
            at += 1;
        }
        if let Some(slots) = matched {
            let (start, end) = (slots[0]?, slots[1]?);
            // A thread that outranks the match is still alive: more text could
            // still give the match Python finds in the whole text.
            if let Some(alive) = alive_start.filter(|_| partial) {
                return Some(Found {
                    start: alive.min(start),
                    end: bytes.len(),
                    partial: true,
                    slots: vec![None; self.slot_len],
                });
            }
            return Some(Found {
                start,
                end,
                partial: false,
                slots,
            });
        }
        let start = alive_start.filter(|&start| partial && start < bytes.len())?;
        Some(Found {
            start,
            end: bytes.len(),
            partial: true,
            slots: vec![None; self.slot_len],
        })
    }

    /// [`search_with`](Self::search_with) for an alternation of literals:
    /// the earliest complete match (the first literal in order at equal
    /// starts), unless a literal that outranks it may still complete at the
    /// end of the text; then the earliest such partial start.
    fn search_literals(
        &self,
        literals: &[String],
        haystack: &str,
        from: usize,
        partial: bool,
    ) -> Option<Found> {
        let rest = &haystack[from..];
        let complete = literals
            .iter()
            .enumerate()
            .filter_map(|(rank, literal)| {
                memchr::memmem::find(rest.as_bytes(), literal.as_bytes())
                    .map(|at| (from + at, rank, literal.len()))
            })
            .min_by_key(|&(at, rank, _)| (at, rank));
        let longest = literals.iter().map(String::len).max().unwrap_or(0);
        let window = haystack.len().saturating_sub(longest).max(from);
        let pending = partial
            .then(|| {
                (window..haystack.len())
                    .filter(|&at| haystack.is_char_boundary(at))
                    .find(|&at| {
                        let tail = &haystack[at..];
                        literals
                            .iter()
                            .any(|l| l.len() > tail.len() && l.starts_with(tail))
                    })
            })
            .flatten();
        // Literals have no named groups: no slots to fill.
        let found = |start: usize, end: usize, partial: bool| Found {
            start,
            end,
            partial,
            slots: Vec::new(),
        };
        match (complete, pending) {
            (Some((at, _, _)), Some(start)) if start <= at => {
                Some(found(start, haystack.len(), true))
            }
            (Some((at, _, len)), _) => Some(found(at, at + len, false)),
            (None, Some(start)) => Some(found(start, haystack.len(), true)),
            (None, None) => None,
        }
    }

    /// Python's `finditer` (complete matches, left to right, not overlapping).
    pub(crate) fn find_iter<'a>(&'a self, haystack: &'a str) -> impl Iterator<Item = Found> + 'a {
        let mut at = Some(0);
        std::iter::from_fn(move || {
            let found = self.search(haystack, at?, false)?;
            at = if found.end > found.start {
                Some(found.end)
            } else {
                haystack[found.end..]
                    .chars()
                    .next()
                    .map(|c| found.end + c.len_utf8())
            };
            Some(found)
        })
    }
}

fn min_option(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether a state waits for a byte (a thread there could still continue).
fn consumes(state: &State) -> bool {
    matches!(
        state,
        State::ByteRange { .. } | State::Sparse(_) | State::Dense(_)
    )
}

/// The state a byte leads to from a consuming state.
fn step(state: &State, byte: u8) -> Option<StateID> {
    match state {
        State::ByteRange { trans } => trans.matches_byte(byte).then_some(trans.next),
        State::Sparse(sparse) => sparse.matches_byte(byte),
        State::Dense(dense) => dense.matches_byte(byte),
        _ => None,
    }
}

/// `\Z` → `\z`, outside character classes and escapes.
fn python_end_anchor(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '\\' {
            match chars.next() {
                Some('Z') => {
                    out.pop();
                    out.push_str("\\z");
                }
                Some(next) => out.push(next),
                None => {}
            }
        }
    }
    out
}

/// Buffers a search needs, kept between searches so that a streaming scanner
/// does not allocate per delta.
#[derive(Debug, Default)]
pub(crate) struct SearchCache {
    current: Threads,
    next: Threads,
    stack: Vec<Frame>,
    scratch: Vec<Option<usize>>,
}

/// The threads at one position: NFA states in priority order, each with its
/// capture slots, at most one thread per state.
#[derive(Debug, Default)]
struct Threads {
    states: Vec<StateID>,
    member: Vec<bool>,
    slots: Vec<Option<usize>>,
    slot_len: usize,
}

impl Threads {
    fn reset(&mut self, state_len: usize, slot_len: usize) {
        self.clear();
        if self.member.len() != state_len {
            self.member.clear();
            self.member.resize(state_len, false);
        }
        self.slot_len = slot_len;
    }

    fn len(&self) -> usize {
        self.states.len()
    }

    fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    fn slots_of(&self, index: usize) -> &[Option<usize>] {
        &self.slots[index * self.slot_len..(index + 1) * self.slot_len]
    }

    fn insert(&mut self, sid: StateID) -> bool {
        let seen = std::mem::replace(&mut self.member[sid.as_usize()], true);
        if !seen {
            self.states.push(sid);
        }
        !seen
    }

    fn clear(&mut self) {
        for sid in self.states.drain(..) {
            self.member[sid.as_usize()] = false;
        }
        self.slots.clear();
    }
}

#[derive(Debug)]
enum Frame {
    Explore(StateID),
    Restore(usize, Option<usize>),
}

struct Vm<'n, 'c> {
    nfa: &'n NFA,
    current: &'c mut Threads,
    next: &'c mut Threads,
    stack: &'c mut Vec<Frame>,
    scratch: &'c mut Vec<Option<usize>>,
}

impl<'n, 'c> Vm<'n, 'c> {
    fn new(nfa: &'n NFA, slot_len: usize, cache: &'c mut SearchCache) -> Self {
        cache.current.reset(nfa.states().len(), slot_len);
        cache.next.reset(nfa.states().len(), slot_len);
        cache.stack.clear();
        cache.scratch.clear();
        cache.scratch.resize(slot_len, None);
        Self {
            nfa,
            current: &mut cache.current,
            next: &mut cache.next,
            stack: &mut cache.stack,
            scratch: &mut cache.scratch,
        }
    }

    /// A new lowest-priority thread starting at `at`.
    fn start_thread(&mut self, start: StateID, haystack: &[u8], at: usize) {
        self.scratch.iter_mut().for_each(|slot| *slot = None);
        let set = std::mem::take(self.current);
        *self.current = self.closure(set, start, haystack, at);
    }

    /// Thread `index` of the current set moves to `next` at `at`.
    fn follow(&mut self, index: usize, next: StateID, haystack: &[u8], at: usize) {
        self.scratch.copy_from_slice(self.current.slots_of(index));
        let set = std::mem::take(self.next);
        *self.next = self.closure(set, next, haystack, at);
    }

    fn advance(&mut self) {
        std::mem::swap(self.current, self.next);
        self.next.clear();
    }

    /// Add `sid` and every state reachable from it without input, in priority
    /// order, each with the slots of the path that reached it first.
    fn closure(&mut self, mut set: Threads, sid: StateID, haystack: &[u8], at: usize) -> Threads {
        self.stack.push(Frame::Explore(sid));
        while let Some(frame) = self.stack.pop() {
            let sid = match frame {
                Frame::Restore(slot, value) => {
                    self.scratch[slot] = value;
                    continue;
                }
                Frame::Explore(sid) => sid,
            };
            let mut sid = sid;
            loop {
                if !set.insert(sid) {
                    break;
                }
                set.slots.extend_from_slice(self.scratch);
                match self.nfa.state(sid) {
                    State::Union { alternates } => {
                        let Some((&first, rest)) = alternates.split_first() else {
                            break;
                        };
                        self.stack
                            .extend(rest.iter().rev().map(|&alt| Frame::Explore(alt)));
                        sid = first;
                    }
                    State::BinaryUnion { alt1, alt2 } => {
                        self.stack.push(Frame::Explore(*alt2));
                        sid = *alt1;
                    }
                    State::Look { look, next } => {
                        if !self.nfa.look_matcher().matches(*look, haystack, at) {
                            break;
                        }
                        sid = *next;
                    }
                    State::Capture { next, slot, .. } => {
                        let slot = slot.as_usize();
                        if slot < self.scratch.len() {
                            self.stack.push(Frame::Restore(slot, self.scratch[slot]));
                            self.scratch[slot] = Some(at);
                        }
                        sid = *next;
                    }
                    _ => break,
                }
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(start, end, partial)` of Python's `regex.search(p, s, partial=True)`,
    /// checked against the `regex` module (spans in characters = bytes here),
    /// except where a higher-priority thread is still alive (see the module doc).
    fn partial(pattern: &str, haystack: &str) -> Option<(usize, usize, bool)> {
        let found = Pattern::new(pattern).unwrap().search(haystack, 0, true)?;
        Some((found.start, found.end, found.partial))
    }

    #[test]
    fn partial_matches_like_the_regex_module() {
        // Python: (2, 4, complete); the greedy loop could still go on.
        assert_eq!(partial(r"\d+", "ab12"), Some((2, 4, true)));
        assert_eq!(partial(r"\d+", "ab12c"), Some((2, 4, false)));
        assert_eq!(partial(r"<e><a>|<e>", "x<e><"), Some((1, 5, true)));
        assert_eq!(partial(r"<e><a>|<e>", "x<e>y"), Some((1, 4, false)));
        assert_eq!(partial(r"a|ab", "xa"), Some((1, 2, false)));
        assert_eq!(partial(r"<tool_call>", "hello <tool"), Some((6, 11, true)));
        assert_eq!(partial(r"\s*<tool_call>", "hi  \n"), Some((2, 5, true)));
        assert_eq!(partial(r"x|<tool_call>", "ab<tool x"), Some((8, 9, false)));
        assert_eq!(
            partial(r"<tool_call>", "ab<tool x<tool_c"),
            Some((9, 16, true))
        );
        assert_eq!(partial(r"\s*<tool_call>", "a  b  "), Some((4, 6, true)));
        assert_eq!(
            partial(r"</function>\s*</tool_call>", "</function>  "),
            Some((0, 13, true))
        );
        assert_eq!(partial(r"ab|b", "xab"), Some((1, 3, false)));
        // Python: (1, 2, complete), though `abc` from 0 outranks it.
        assert_eq!(partial(r"b|abc", "ab"), Some((0, 2, true)));
        assert_eq!(partial(r"abc", "ab"), Some((0, 2, true)));
        assert_eq!(partial(r"a\Z", "a"), Some((0, 1, false)));
        assert_eq!(partial(r"</t>", "é </t>"), Some((3, 7, false)));
        assert_eq!(partial(r"</t>", "é </"), Some((3, 5, true)));
    }

    #[test]
    fn literal_search_agrees_with_the_vm() {
        let literals = [
            "<|end|><|assistant|>".to_owned(),
            "<|end|>".to_owned(),
            "<eos>".to_owned(),
        ];
        let fast = Pattern::literals(&literals).unwrap();
        let mut slow = fast.clone();
        slow.literals = None;
        for haystack in [
            "done<|end|><",
            "done<|end|>x",
            "done<|end|><|assistant|>",
            "a<eo",
            "a<eos>b<|e",
            "é<|end|>",
            "<|",
            "plain",
            "<eos><|end|><|assistant",
        ] {
            for partial in [false, true] {
                let f = fast
                    .search(haystack, 0, partial)
                    .map(|f| (f.start, f.end, f.partial));
                let s = slow
                    .search(haystack, 0, partial)
                    .map(|f| (f.start, f.end, f.partial));
                assert_eq!(f, s, "{haystack:?} partial={partial}");
            }
        }
    }

    #[test]
    fn captures_follow_leftmost_first() {
        let pattern =
            Pattern::new(r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>").unwrap();
        let text = "<parameter=a>\n1\n</parameter><parameter=b>x y</parameter>";
        let found: Vec<_> = pattern
            .find_iter(text)
            .map(|f| {
                (
                    pattern.group(&f, text, "key").unwrap().to_owned(),
                    pattern.group(&f, text, "value").unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            found,
            [("a".into(), "1".into()), ("b".into(), "x y".into())]
        );
    }
}
