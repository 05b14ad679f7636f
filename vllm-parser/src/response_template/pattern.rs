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
//!
//! # Lookaround
//!
//! `(?=…)`, `(?!…)`, `(?<=…)` and `(?<!…)` (which the NFA's syntax lacks) are
//! cut out of the pattern (module `lookaround`) and left as markers the VM
//! evaluates when a thread's epsilon closure reaches them, each body a
//! sub-pattern of its own, answers memoized per position for the search:
//! - a lookahead matches its body anchored at the position against the whole
//!   text (a positive one keeps the body's named groups, as Python does);
//! - a lookbehind holds where a match of its body ends exactly at the
//!   position, of any width (the `regex` module allows variable-width
//!   lookbehinds); it reads text before the search's start, as Python does.
//!   Named groups inside a lookbehind are refused at start-up;
//! - with `partial`, a lookaround whose body runs into the end of the text
//!   (positive or negative) makes the thread pending: alive until the end,
//!   so a match it outranks, or the search itself, is partial from the
//!   thread's start. This is what the `regex` module's partial search does
//!   when no complete match exists (`a(?!bc)d` on `xab` is a partial match at
//!   1); where Python has a complete match it answers that instead, and here
//!   the policy above holds it back (`a(?!bc)` on `xab`: Python commits `a`,
//!   which `xabc` would not match);
//! - Python's `$` (the end, or before a final newline) is the lookahead
//!   `(?=\n?\z)` here, unless MULTILINE is set.
//!
//! Nesting is bounded (8 levels), so is the number (64) of
//! lookarounds per pattern. A lookahead costs at most the length of its
//! body's longest match per position, so bounded bodies keep searches linear;
//! an unbounded one (`(?=[^<]*</t>)`) may read to the end of the text from
//! every position, quadratic like Python's backtracking on the same text. A
//! lookbehind costs one pass per search over the text from the search's
//! start (less its body's longest match), or from the start of the text for
//! an unbounded body. A lookaround's body keeps the flags in force where it
//! stands (module `lookaround`).

use std::collections::HashMap;

use regex_automata::nfa::thompson::{NFA, State, WhichCaptures};
use regex_automata::util::primitives::{PatternID, StateID};
use regex_automata::util::syntax;

use super::lookaround::{self, Kind};

/// A compiled delimiter or content pattern (Python's `re.DOTALL` on).
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    nfa: NFA,
    /// Capture slots of every thread: the NFA's own groups', then those of
    /// each positive lookahead's body.
    slot_len: usize,
    /// For an alternation of literals, the literals in priority order
    /// (searched with `memmem` instead of the VM).
    literals: Option<Vec<String>>,
    /// The lookarounds cut out of the pattern (module `lookaround`).
    looks: Vec<Look>,
    /// The lookaround each NFA group marks, by group index.
    markers: Vec<Option<usize>>,
    /// The named groups in Python's order, each with the slot its start is
    /// recorded in (`None` for a group inside a negative lookaround, which
    /// never captures).
    names: Vec<(String, Option<usize>)>,
    /// The longest match in bytes, if bounded (how far back a lookbehind
    /// with this body reads).
    max_len: Option<usize>,
}

/// A lookaround: its kind, its body and where the body's slots start in
/// the thread's slots (positive lookaheads keep their captures).
#[derive(Debug, Clone)]
struct Look {
    kind: Kind,
    body: Pattern,
    offset: usize,
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

/// What a search run found.
enum Outcome {
    /// A match (partial when an outranking thread is still alive).
    Match(Found),
    /// No match, but a thread starting here was alive at the end.
    Pending(usize),
    None,
}

/// Whether a lookaround holds at a position.
#[derive(Debug, Clone)]
enum Holds {
    /// Yes, with the body's slots (for a positive lookahead).
    Yes(Vec<Option<usize>>),
    No,
    /// More text could change the answer.
    Pending,
}

impl Pattern {
    /// Compile a Python regex. `\Z` (Python's end of string) is `\z` here.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        Self::build(pattern, 0)
    }

    fn build(pattern: &str, depth: usize) -> Result<Self, String> {
        let split = lookaround::split(pattern, depth)?;
        let source = python_end_anchor(&split.source);
        let syntax = syntax::Config::new().dot_matches_new_line(true);
        let nfa = NFA::compiler()
            .syntax(syntax)
            .configure(NFA::config().which_captures(WhichCaptures::All))
            .build(&source)
            .map_err(|e| e.to_string())?;
        let info = nfa.group_info();
        let mut slot_len = info.slot_len();
        let mut looks = Vec::with_capacity(split.cuts.len());
        for cut in split.cuts {
            let body = Self::build(&cut.body, depth + 1)?;
            let offset = slot_len;
            if cut.kind == Kind::Ahead {
                slot_len += body.slot_len;
            }
            looks.push(Look {
                kind: cut.kind,
                body,
                offset,
            });
        }
        let markers = (0..info.group_len(PatternID::ZERO))
            .map(|group| lookaround::marker_index(info.to_name(PatternID::ZERO, group)?))
            .collect();
        let mut names: Vec<(String, Option<usize>)> = Vec::new();
        for name in lookaround::named_groups(pattern) {
            if lookaround::is_marker(name) {
                return Err(format!("group name {name:?} is reserved"));
            }
            if names.iter().any(|(n, _)| n == name) {
                return Err(format!("duplicate group name {name:?}"));
            }
            let slot = match info.to_index(PatternID::ZERO, name) {
                Some(group) => Some(group * 2),
                None => looks
                    .iter()
                    .find_map(|look| {
                        let (_, slot) = look.body.names.iter().find(|(n, _)| n == name)?;
                        Some(
                            slot.filter(|_| look.kind == Kind::Ahead)
                                .map(|s| look.offset + s),
                        )
                    })
                    .flatten(),
            };
            names.push((name.to_owned(), slot));
        }
        let max_len = regex_syntax::ParserBuilder::new()
            .dot_matches_new_line(true)
            .build()
            .parse(&source)
            .ok()
            .and_then(|hir| hir.properties().maximum_len());
        Ok(Self {
            nfa,
            slot_len,
            literals: None,
            looks,
            markers,
            names,
            max_len,
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
        let flags = lookaround::leading_flags(source);
        Self::new(&format!("{flags}(?:{})\\z", &source[flags.len()..]))
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
        self.names.iter().map(|(name, _)| name.as_str())
    }

    /// The text of group `name` in `found`, when the group took part in it.
    pub(crate) fn group<'h>(
        &self,
        found: &Found,
        haystack: &'h str,
        name: &str,
    ) -> Option<&'h str> {
        let (_, slot) = self.names.iter().find(|(n, _)| n == name)?;
        let slot = (*slot)?;
        let start = (*found.slots.get(slot)?)?;
        let end = (*found.slots.get(slot + 1)?)?;
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
        match self.run(cache, haystack, from, partial, false) {
            Outcome::Match(found) => Some(found),
            Outcome::Pending(start) if start < haystack.len() => Some(Found {
                start,
                end: haystack.len(),
                partial: true,
                slots: vec![None; self.slot_len],
            }),
            Outcome::Pending(_) | Outcome::None => None,
        }
    }

    /// The Pike VM: the leftmost-first match from `from` (only a match
    /// starting at `from` when `anchored`).
    fn run(
        &self,
        cache: &mut SearchCache,
        haystack: &str,
        from: usize,
        partial: bool,
        anchored: bool,
    ) -> Outcome {
        let bytes = haystack.as_bytes();
        if from > bytes.len() {
            return Outcome::None;
        }
        let mut vm = Vm::new(self, haystack, from, partial, cache);
        let mut matched: Option<Vec<Option<usize>>> = None;
        let mut alive_start: Option<usize> = None;
        let mut at = from;
        loop {
            if matched.is_none() && (!anchored || at == from) && haystack.is_char_boundary(at) {
                vm.start_thread(self.nfa.start_anchored(), at);
            }
            if vm.current.is_empty() && (matched.is_some() || anchored) {
                break;
            }
            for index in 0..vm.current.len() {
                let sid = vm.current.states[index];
                if sid == PENDING {
                    if at == bytes.len() {
                        alive_start = min_option(alive_start, vm.current.slots_of(index)[0]);
                    } else {
                        vm.next.insert_pending(vm.current.slots_of(index));
                    }
                    continue;
                }
                match self.nfa.state(sid) {
                    State::Match { .. } => {
                        matched = Some(vm.current.slots_of(index)[..self.slot_len].to_vec());
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
                            vm.follow(index, next, at + 1);
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
            let (Some(start), Some(end)) = (slots[0], slots[1]) else {
                return Outcome::None;
            };
            // A thread that outranks the match is still alive: more text could
            // still give the match Python finds in the whole text.
            if let Some(alive) = alive_start.filter(|_| partial) {
                return Outcome::Match(Found {
                    start: alive.min(start),
                    end: bytes.len(),
                    partial: true,
                    slots: vec![None; self.slot_len],
                });
            }
            return Outcome::Match(Found {
                start,
                end,
                partial: false,
                slots,
            });
        }
        match alive_start.filter(|_| partial) {
            Some(start) => Outcome::Pending(start),
            None => Outcome::None,
        }
    }

    /// Whether a match of this pattern starts exactly at `at`: `Yes` with its
    /// slots, or `Pending` when more text could still decide.
    fn holds_at(&self, haystack: &str, at: usize, partial: bool) -> Holds {
        let mut cache = SearchCache::default();
        match self.run(&mut cache, haystack, at, partial, true) {
            Outcome::Match(found) if found.partial => Holds::Pending,
            Outcome::Match(found) => Holds::Yes(found.slots),
            Outcome::Pending(_) => Holds::Pending,
            Outcome::None => Holds::No,
        }
    }

    /// For each position from `lo` to the end, whether a match of this
    /// pattern ends there (lookbehind bodies): all threads run, none cut.
    fn ends(&self, haystack: &str, lo: usize, partial: bool) -> Vec<Holds> {
        let bytes = haystack.as_bytes();
        let mut cache = SearchCache::default();
        let mut vm = Vm::new(self, haystack, lo, partial, &mut cache);
        vm.taint = true;
        let mut out = Vec::with_capacity(bytes.len() + 1 - lo);
        let mut at = lo;
        loop {
            if haystack.is_char_boundary(at) {
                vm.start_thread(self.nfa.start_anchored(), at);
            }
            let mut holds = Holds::No;
            for index in 0..vm.current.len() {
                let sid = vm.current.states[index];
                // (Tainting threads, this VM holds no pending thread.)
                if sid == PENDING {
                    continue;
                }
                match self.nfa.state(sid) {
                    State::Match { .. } => {
                        let slots = vm.current.slots_of(index);
                        let tainted = slots.get(self.slot_len).is_some_and(Option::is_some);
                        if !tainted {
                            holds = Holds::Yes(Vec::new());
                        } else if !matches!(holds, Holds::Yes(_)) {
                            holds = Holds::Pending;
                        }
                    }
                    state if at < bytes.len() => {
                        if let Some(next) = step(state, bytes[at]) {
                            vm.follow(index, next, at + 1);
                        }
                    }
                    _ => {}
                }
            }
            out.push(holds);
            if at == bytes.len() {
                break;
            }
            vm.advance();
            at += 1;
        }
        out
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
    /// Lookaround answers of the current search, by lookaround and position.
    memo: HashMap<(usize, usize), Holds>,
}

/// Stands in a thread list for a thread whose lookaround waits for more
/// text: alive until the end, wherever it is.
const PENDING: StateID = StateID::MAX;

/// The threads at one position: NFA states in priority order, each with its
/// capture slots, at most one thread per state, and at most one pending
/// thread (later ones start no earlier and rank lower, so never decide).
#[derive(Debug, Default)]
struct Threads {
    states: Vec<StateID>,
    member: Vec<bool>,
    slots: Vec<Option<usize>>,
    slot_len: usize,
    has_pending: bool,
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
        let Some(member) = self.member.get_mut(sid.as_usize()) else {
            return false;
        };
        let seen = std::mem::replace(member, true);
        if !seen {
            self.states.push(sid);
        }
        !seen
    }

    fn insert_pending(&mut self, slots: &[Option<usize>]) {
        if !std::mem::replace(&mut self.has_pending, true) {
            self.states.push(PENDING);
            self.slots.extend_from_slice(slots);
        }
    }

    fn clear(&mut self) {
        for sid in self.states.drain(..) {
            if let Some(member) = self.member.get_mut(sid.as_usize()) {
                *member = false;
            }
        }
        self.slots.clear();
        self.has_pending = false;
    }
}

#[derive(Debug)]
enum Frame {
    Explore(StateID),
    Restore(usize, Option<usize>),
}

struct Vm<'n, 'c> {
    pattern: &'n Pattern,
    haystack: &'n str,
    /// Where the search started (how far back lookbehinds read).
    from: usize,
    partial: bool,
    /// Whether a thread goes on past a pending lookaround, tainted, instead
    /// of standing pending where it is (lookbehind bodies, module `ends`).
    taint: bool,
    current: &'c mut Threads,
    next: &'c mut Threads,
    stack: &'c mut Vec<Frame>,
    scratch: &'c mut Vec<Option<usize>>,
    memo: &'c mut HashMap<(usize, usize), Holds>,
}

impl<'n, 'c> Vm<'n, 'c> {
    fn new(
        pattern: &'n Pattern,
        haystack: &'n str,
        from: usize,
        partial: bool,
        cache: &'c mut SearchCache,
    ) -> Self {
        let state_len = pattern.nfa.states().len();
        // With lookarounds, one more slot than the pattern's: the taint of a
        // thread that went past a pending lookaround (`Pattern::ends`).
        let width = pattern.slot_len + usize::from(!pattern.looks.is_empty());
        cache.current.reset(state_len, width);
        cache.next.reset(state_len, width);
        cache.stack.clear();
        cache.scratch.clear();
        cache.scratch.resize(width, None);
        cache.memo.clear();
        Self {
            pattern,
            haystack,
            from,
            partial,
            taint: false,
            current: &mut cache.current,
            next: &mut cache.next,
            stack: &mut cache.stack,
            scratch: &mut cache.scratch,
            memo: &mut cache.memo,
        }
    }

    /// A new lowest-priority thread starting at `at`.
    fn start_thread(&mut self, start: StateID, at: usize) {
        self.scratch.iter_mut().for_each(|slot| *slot = None);
        let set = std::mem::take(self.current);
        *self.current = self.closure(set, start, at);
    }

    /// Thread `index` of the current set moves to `next` at `at`.
    fn follow(&mut self, index: usize, next: StateID, at: usize) {
        self.scratch.copy_from_slice(self.current.slots_of(index));
        let set = std::mem::take(self.next);
        *self.next = self.closure(set, next, at);
    }

    fn advance(&mut self) {
        std::mem::swap(self.current, self.next);
        self.next.clear();
    }

    /// Whether lookaround `index` holds at `at` (memoized per search). Kept
    /// out of line: patterns without lookarounds never call it.
    #[cold]
    #[inline(never)]
    fn holds(&mut self, index: usize, at: usize) -> Holds {
        if let Some(holds) = self.memo.get(&(index, at)) {
            return holds.clone();
        }
        let Some(look) = self.pattern.looks.get(index) else {
            return Holds::No;
        };
        let answer = if look.kind.behind() {
            // One pass answers every position: a match of the body ending
            // there, starting no earlier than the body's longest match allows.
            let lo = look
                .body
                .max_len
                .map_or(0, |len| self.from.min(at).saturating_sub(len));
            let ends = look.body.ends(self.haystack, lo, self.partial);
            let mut answer = Holds::No;
            for (offset, holds) in ends.into_iter().enumerate() {
                let holds = negate(look.kind, holds);
                if lo + offset == at {
                    answer = holds.clone();
                }
                self.memo.insert((index, lo + offset), holds);
            }
            answer
        } else {
            negate(
                look.kind,
                look.body.holds_at(self.haystack, at, self.partial),
            )
        };
        self.memo.insert((index, at), answer.clone());
        answer
    }

    /// Add `sid` and every state reachable from it without input, in priority
    /// order, each with the slots of the path that reached it first.
    fn closure(&mut self, mut set: Threads, sid: StateID, at: usize) -> Threads {
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
                let nfa = &self.pattern.nfa;
                match nfa.state(sid) {
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
                        if !nfa
                            .look_matcher()
                            .matches(*look, self.haystack.as_bytes(), at)
                        {
                            break;
                        }
                        sid = *next;
                    }
                    State::Capture {
                        next,
                        slot,
                        group_index,
                        ..
                    } => {
                        let (next, slot) = (*next, slot.as_usize());
                        let marker = if self.pattern.looks.is_empty() {
                            None
                        } else {
                            let markers = &self.pattern.markers;
                            markers.get(group_index.as_usize()).copied().flatten()
                        };
                        match marker {
                            // The marker's opening slot: evaluate the lookaround.
                            Some(index) if slot % 2 == 0 => match self.holds(index, at) {
                                Holds::Yes(slots) => {
                                    let offset =
                                        self.pattern.looks.get(index).map_or(0, |l| l.offset);
                                    for (i, value) in slots.into_iter().enumerate() {
                                        if let Some(cell) = self.scratch.get_mut(offset + i) {
                                            let old = std::mem::replace(cell, value);
                                            self.stack.push(Frame::Restore(offset + i, old));
                                        }
                                    }
                                }
                                Holds::No => break,
                                Holds::Pending if self.taint => {
                                    let taint = self.pattern.slot_len;
                                    if let Some(cell) = self.scratch.get_mut(taint) {
                                        let old = cell.replace(at);
                                        self.stack.push(Frame::Restore(taint, old));
                                    }
                                }
                                Holds::Pending => {
                                    set.insert_pending(self.scratch);
                                    break;
                                }
                            },
                            Some(_) => {}
                            None if slot < self.scratch.len() => {
                                self.stack.push(Frame::Restore(slot, self.scratch[slot]));
                                self.scratch[slot] = Some(at);
                            }
                            None => {}
                        }
                        sid = next;
                    }
                    _ => break,
                }
            }
        }
        set
    }
}

/// A body's answer read through the lookaround's negation (a negated body
/// keeps no captures).
fn negate(kind: Kind, holds: Holds) -> Holds {
    match holds {
        Holds::Pending => Holds::Pending,
        holds if kind.positive() => holds,
        Holds::Yes(_) => Holds::No,
        Holds::No => Holds::Yes(Vec::new()),
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
    fn lookarounds_match_like_the_regex_module() {
        // Python's `regex` gives these (partial=True), spans in characters.
        assert_eq!(partial(r"a(?=bc)", "xa"), Some((1, 2, true)));
        assert_eq!(partial(r"a(?=bc)", "xab"), Some((1, 3, true)));
        assert_eq!(partial(r"a(?=bc)", "xabc"), Some((1, 2, false)));
        assert_eq!(partial(r"a(?=bc)", "xabd"), None);
        assert_eq!(partial(r"a(?!bc)", "xabd"), Some((1, 2, false)));
        assert_eq!(partial(r"a(?!bc)", "xabc"), None);
        assert_eq!(partial(r"a(?!bc)d", "xab"), Some((1, 3, true)));
        assert_eq!(partial(r"</call>(?!\n)", "x</call>y"), Some((1, 8, false)));
        assert_eq!(
            partial(r"(?=<\|tool_call\|>)", "abc<|tool"),
            Some((3, 9, true))
        );
        assert_eq!(
            partial(r"(?<=\n)<think>", "a\n<think>"),
            Some((2, 9, false))
        );
        assert_eq!(partial(r"(?<=\n)<think>", "a\n<thi"), Some((2, 6, true)));
        assert_eq!(partial(r"(?<=\n)<think>", "a<thi"), None);
        assert_eq!(partial(r"(?<=a\w*)d", "a12d"), Some((3, 4, false)));
        assert_eq!(partial(r"(?<!a)b", "ab"), None);
        assert_eq!(partial(r"(?<=(?=ab)a)b", "ab"), Some((1, 2, false)));
        assert_eq!(partial(r"a(?=b(?!c))", "abd"), Some((0, 1, false)));
        // Held back by the policy: Python commits `a`, which `xabc` would not match.
        assert_eq!(partial(r"a(?!bc)", "xab"), Some((1, 3, true)));
        // The lookbehind reads before the search's start.
        let behind = Pattern::new(r"(?<=a)b").unwrap();
        assert_eq!(behind.search("ab", 1, false).map(|f| f.start), Some(1));
    }

    #[test]
    fn positive_lookaheads_keep_their_captures() {
        let pattern = Pattern::new(r"x(?=(?P<n>\d\d)|(?P<m>\d))(?P<d>\d)").unwrap();
        assert_eq!(pattern.group_names().collect::<Vec<_>>(), ["n", "m", "d"]);
        let text = "x12";
        let found = pattern.search(text, 0, false).unwrap();
        assert_eq!(
            pattern.named_groups(&found, text),
            [
                ("n".to_owned(), "12".to_owned()),
                ("d".to_owned(), "1".to_owned())
            ]
        );
        let negated = Pattern::new(r"x(?!(?P<n>y))").unwrap();
        assert_eq!(negated.group_names().collect::<Vec<_>>(), ["n"]);
        let found = negated.search("xz", 0, false).unwrap();
        assert!(negated.named_groups(&found, "xz").is_empty());
    }

    #[test]
    fn python_dollar_allows_a_final_newline() {
        assert_eq!(
            Pattern::new("a$")
                .unwrap()
                .search("xa\n", 0, false)
                .map(|f| (f.start, f.end)),
            Some((1, 2))
        );
        assert!(
            Pattern::new("a$")
                .unwrap()
                .search("a\nb", 0, false)
                .is_none()
        );
        assert!(Pattern::to_end("a$").unwrap().matches_from("a", 0));
    }

    #[test]
    fn unsupported_lookaround_syntax_is_named() {
        for (pattern, what) in [
            (r"(?<=(?P<x>a))b", "named group inside a lookbehind"),
            (r"(?P<__vllm_lookaround_0>a)", "reserved"),
            (r"a(?=b", "unterminated"),
        ] {
            let error = Pattern::new(pattern).unwrap_err();
            assert!(error.contains(what), "{pattern}: {error}");
        }
        let deep = format!("{}a{}", "(?=".repeat(20), ")".repeat(20));
        assert!(Pattern::new(&deep).unwrap_err().contains("nested"));
    }

    #[test]
    fn hostile_patterns_do_not_panic() {
        const PIECES: &[&str] = &[
            "(?=", "(?!", "(?<=", "(?<!", "(?:", "(?P<g>", "(?P<h>", "(?i)", "(?s:", ")", "a", "b",
            "é", "\\", "\\n", "\\w", "[", "]", "[^a]", "$", "^", "|", "*", "+?", "?", "{2}", ".",
            "\\Z", "\\b",
        ];
        let texts = ["", "a", "ab", "ba\n", "aé b", "\nabab", "é"];
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..4000 {
            let pattern: String = (0..1 + next(8))
                .map(|_| PIECES[next(PIECES.len())])
                .collect();
            let Ok(compiled) = Pattern::new(&pattern) else {
                continue;
            };
            for text in texts {
                for from in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
                    for partial in [false, true] {
                        if let Some(found) = compiled.search(text, from, partial) {
                            compiled.named_groups(&found, text);
                        }
                    }
                }
                compiled.find_iter(text).for_each(drop);
                if let Ok(whole) = Pattern::to_end(&pattern) {
                    whole.matches_from(text, 0);
                }
            }
        }
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

/// The replay of `tests/fixtures/template_patterns.jsonl.gz`
/// (`scripts/gen_template_patterns.py`): the Python `regex` module's answers
/// for lookaround and plain patterns.
#[cfg(test)]
mod differential {
    use serde_json::Value;

    use super::*;

    fn fixture() -> Vec<Value> {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/template_patterns.jsonl.gz");
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap()),
            &mut text,
        )
        .unwrap();
        text.lines()
            .skip(1)
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    /// `[start, end, partial, groups]` with character offsets.
    type Expected = Option<(usize, usize, bool, Vec<(String, String)>)>;

    /// (Groups of a partial match are not compared: nothing reads them.)
    fn expected(value: &Value) -> Expected {
        let items = value.as_array()?;
        let partial = items[2].as_bool().unwrap();
        let groups = items[3]
            .as_object()
            .unwrap()
            .iter()
            .filter(|_| !partial)
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        Some((
            items[0].as_u64().unwrap() as usize,
            items[1].as_u64().unwrap() as usize,
            partial,
            groups,
        ))
    }

    /// Our answer in characters, groups in Python's order.
    fn ours(pattern: &Pattern, text: &str, found: Option<Found>) -> Expected {
        let chars = |byte: usize| text[..byte].chars().count();
        let found = found?;
        let groups = if found.partial {
            Vec::new()
        } else {
            pattern.named_groups(&found, text)
        };
        Some((chars(found.start), chars(found.end), found.partial, groups))
    }

    #[test]
    fn searches_like_the_regex_module() {
        let mut deviations = 0;
        let mut checked = 0;
        let mut compiled: HashMap<String, (Pattern, Pattern)> = HashMap::new();
        for record in fixture() {
            let source = record["pattern"].as_str().unwrap();
            let (pattern, whole) = compiled.entry(source.to_owned()).or_insert_with(|| {
                (
                    Pattern::new(source).unwrap_or_else(|e| panic!("{source:?}: {e}")),
                    Pattern::to_end(source).unwrap(),
                )
            });
            let text = record["text"].as_str().unwrap();
            let byte = |chars: usize| {
                text.char_indices()
                    .nth(chars)
                    .map_or(text.len(), |(at, _)| at)
            };
            let context =
                |what: &str, pos: usize| format!("{source:?} on {text:?} from {pos} ({what})");
            for search in record["searches"].as_array().unwrap() {
                let pos = search["pos"].as_u64().unwrap() as usize;
                let from = byte(pos);
                checked += 1;
                // Whole-text searches: exactly Python's.
                let complete = ours(pattern, text, pattern.search(text, from, false));
                assert_eq!(
                    complete,
                    expected(&search["complete"]),
                    "{}",
                    context("complete", pos)
                );
                assert_eq!(
                    whole.matches_from(text, from),
                    search["fullmatch"].as_bool().unwrap(),
                    "{}",
                    context("fullmatch", pos)
                );
                // Partial searches: Python's, except where the module doc's policy
                // holds a complete match back as partial (a thread that outranks
                // it is still alive at the end). A partial match starting at the
                // very end is no match here.
                let got = ours(pattern, text, pattern.search(text, from, true));
                let len = text.chars().count();
                let python = expected(&search["partial"])
                    .filter(|&(start, _, partial, _)| !(partial && start == len));
                if got == python {
                    continue;
                }
                let held = match (&got, &python) {
                    (Some((start, end, true, _)), Some((py_start, _, false, _))) => {
                        start <= py_start && *end == len
                    }
                    (None, Some((py_start, py_end, false, _))) => {
                        *py_start == len && *py_end == len
                    }
                    _ => false,
                };
                assert!(
                    held,
                    "{}: ours {got:?}, Python {python:?}",
                    context("partial", pos)
                );
                deviations += 1;
            }
            let found: Vec<Expected> = pattern
                .find_iter(text)
                .map(|found| ours(pattern, text, Some(found)))
                .collect();
            let python: Vec<Expected> = record["finditer"]
                .as_array()
                .unwrap()
                .iter()
                .map(expected)
                .collect();
            assert_eq!(found, python, "{source:?} on {text:?} (finditer)");
        }
        assert!(checked > 5000, "{checked} searches");
        eprintln!("{checked} searches, {deviations} held back by the partial policy");
    }
}
