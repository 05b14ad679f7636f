//! Whether xgrammar 0.2.8 compiles a JSON schema's string `pattern` (also
//! a `patternProperties` key and a `propertyNames` pattern): the question
//! `Grammar.from_json_schema` answers for each pattern it writes, which
//! vLLM 0.33.0's `_json_compiles` asks of a tool's JSON arguments.
//!
//! xgrammar's JSON-schema converter (`RegexExpression` in
//! `cpp/json_schema_converter.cc`) does not read a pattern as
//! `Grammar.from_regex` does. It first tries its finite-state regex engine
//! (`RegexFSMBuilder` in `cpp/fsm_builder.cc`) with the characters a JSON
//! string must escape (`"`, `\`, U+0000–U+001F) removed from every character
//! match; the pattern is kept as a `Regex(…, json_string=true)` rule when
//! the pattern is printable ASCII, that engine reads it and its language is
//! not empty once those characters are removed. Otherwise the pattern goes
//! through `from_regex`'s converter ([`super::xgrammar_regex`]), whose
//! refusal is the schema's. So `(?=x)` (a lookahead the engine ignores),
//! `a**` or `(?P<n>a)` compile in a schema although `from_regex` refuses
//! them, while `"`, `é` or `[[:alpha:]]` take `from_regex`'s road.
//!
//! The engine, as 0.2.8 has it: a leading `(?i)`; `^` / `$` anywhere are
//! ignored; classes with escapes and ranges (no empty class, no range out
//! of order or ending in a class escape); `\d \D \w \W \s \S`, `\n \t \r \f
//! \v \a \e \0`, `\xHH`, `\uHHHH`, `\u{H…}` (up to U+10FFFF), `\cX`, any
//! other escaped character literally, but not `\b` (outside a class), `\B`,
//! `\p`, `\P`, `\k` or `\1`–`\9`; groups `(…)`, `(?:…)`, named `(?<n>…)` /
//! `(?P<n>…)` (names of ASCII letters, digits and `_`), lookaheads
//! `(?=…)` / `(?!…)` skipped, no other `(?`; quantifiers `* + ?` (one lazy
//! `?` dropped, others stacked) and `{n}` / `{n,}` / `{n,m}` (spaces allowed
//! around the numbers, at most nine digits, `n ≤ m`); a repetition unrolled
//! past 100 000 automaton states is refused. Written from xgrammar's source
//! and checked against the installed 0.2.8
//! (`scripts/gen_schema_compiles.py`, `tests/schema_compiles.rs`).
//!
//! Undecided (`None`): where [`super::xgrammar_regex`] is, patterns longer
//! than [`MAX_PATTERN_BYTES`] or nested deeper than [`MAX_NESTING`], and a
//! repetition whose automaton size this module only bounds (the unrolling
//! limit) when the two roads disagree.

use super::xgrammar_regex::{MAX_NESTING, MAX_PATTERN_BYTES, from_regex_compiles};

/// xgrammar's `kMaxUnrolledRepeatStates`.
const MAX_UNROLLED_STATES: u64 = 100_000;
const MAX_CODEPOINT: u32 = 0x10_FFFF;

/// Whether xgrammar 0.2.8 compiles `pattern` as a JSON schema's string
/// `pattern` (`{"type": "string", "pattern": pattern}`,
/// `patternProperties` keys, `propertyNames` patterns): `Some(true)` it
/// compiles, `Some(false)` `Grammar.from_json_schema` raises, `None`
/// undecided (see the module docs).
///
/// ```
/// use vllm_parser::serving::xgrammar_fsm_regex::json_pattern_compiles;
///
/// assert_eq!(json_pattern_compiles("(?=x)"), Some(true));
/// assert_eq!(json_pattern_compiles("[a-"), Some(false));
/// assert_eq!(json_pattern_compiles("a{2,1}"), Some(false));
/// assert_eq!(json_pattern_compiles("[[:alpha:]]"), Some(true));
/// ```
pub fn json_pattern_compiles(pattern: &str) -> Option<bool> {
    let fallback = from_regex_compiles(pattern);
    if fallback == Some(true) {
        // Whichever road xgrammar takes, the pattern compiles.
        return Some(true);
    }
    if pattern.len() > MAX_PATTERN_BYTES {
        return None;
    }
    if !pattern.bytes().all(|b| (0x20..=0x7E).contains(&b)) {
        return fallback;
    }
    match fsm_keeps(pattern.as_bytes()) {
        Some(true) => Some(true),
        Some(false) => fallback,
        None => None,
    }
}

/// Whether the regex engine builds `pattern` with a non-empty language once
/// the JSON-escaped characters are removed: `None` when this module cannot
/// tell.
fn fsm_keeps(pattern: &[u8]) -> Option<bool> {
    let mut parser = Parser {
        text: pattern,
        insensitive: false,
    };
    if pattern.starts_with(b"(?i)") {
        parser.insensitive = true;
        parser.text = &pattern[4..];
    }
    let nodes = match parser.parse() {
        Ok(nodes) => nodes,
        Err(Stop::Refused) => return Some(false),
        Err(Stop::Undecided) => return None,
    };
    let mut verdict = Some(true);
    let mut satisfiable = true;
    for node in &nodes {
        match parser.measure(node) {
            Ok(size) => satisfiable &= size.satisfiable,
            Err(Stop::Refused) => return Some(false),
            // A refusal elsewhere still decides.
            Err(Stop::Undecided) => verdict = None,
        }
    }
    verdict.map(|_| satisfiable)
}

enum Stop {
    /// The engine refuses the pattern.
    Refused,
    /// This module cannot tell.
    Undecided,
}

type Step<T> = Result<T, Stop>;

/// `RegexIR`'s nodes.
enum Node {
    /// A leaf: the empty string, a class `[…]`, `.`, one escape or one
    /// character (its text).
    Leaf(Vec<u8>),
    /// `*` or `?` (`false`), `+` (`true`: at least one).
    Symbol(bool, Box<Node>),
    Union(Vec<Vec<Node>>),
    Bracket(Vec<Node>),
    /// `{lower, upper}`, `None`: no upper bound.
    Repeat(Box<Node>, u32, Option<u32>),
}

/// What the parsing stack holds: a node with its nesting height, or a
/// marker.
enum Entry {
    Node(Node, usize),
    Open,
    Bar,
}

/// What building a node's automaton gives: whether its language holds a
/// string free of the JSON-escaped characters, and bounds on its states.
struct Size {
    satisfiable: bool,
    low: u64,
    high: u64,
}

struct Parser<'a> {
    text: &'a [u8],
    insensitive: bool,
}

/// One escape read: a codepoint, or a set of ranges.
enum Escape {
    Single(u32),
    Ranges(Vec<(u32, u32)>),
}

/// `ParseRegexEscape` on `text` at `*pos` (a backslash).
fn parse_escape(text: &[u8], pos: &mut usize, in_class: bool) -> Step<Escape> {
    let at = |i: usize| text.get(i).copied();
    let Some(escaped) = at(*pos + 1) else {
        return Err(Stop::Refused);
    };
    *pos += 2;
    let negate = |ranges: Vec<(u32, u32)>| complement(normalize(ranges));
    let single = |cp: u32| Ok(Escape::Single(cp));
    let word = vec![(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
    let space = vec![(0x09, 0x0D), (0x20, 0x20)];
    match escaped {
        b'n' => single(0x0A),
        b't' => single(0x09),
        b'r' => single(0x0D),
        b'f' => single(0x0C),
        b'v' => single(0x0B),
        b'a' => single(0x07),
        b'e' => single(0x1B),
        b'0' => single(0),
        b'b' if in_class => single(0x08),
        b'b' | b'B' | b'p' | b'P' | b'k' | b'1'..=b'9' => Err(Stop::Refused),
        b'd' => Ok(Escape::Ranges(vec![(0x30, 0x39)])),
        b'D' => Ok(Escape::Ranges(negate(vec![(0x30, 0x39)]))),
        b'w' => Ok(Escape::Ranges(word)),
        b'W' => Ok(Escape::Ranges(negate(word))),
        b's' => Ok(Escape::Ranges(space)),
        b'S' => Ok(Escape::Ranges(negate(space))),
        b'x' => {
            let hex = |i: usize| at(i).and_then(|b| char::from(b).to_digit(16));
            match (hex(*pos), hex(*pos + 1)) {
                (Some(high), Some(low)) if *pos + 1 < text.len() => {
                    *pos += 2;
                    single(high * 16 + low)
                }
                _ => Err(Stop::Refused),
            }
        }
        b'u' => {
            let hex = |i: usize| at(i).and_then(|b| char::from(b).to_digit(16));
            if at(*pos) == Some(b'{') {
                // Past six digits xgrammar refuses: no need to look further.
                let window = &text[*pos + 1..text.len().min(*pos + 8)];
                let close = window
                    .iter()
                    .position(|&b| b == b'}')
                    .map(|c| c + *pos + 1)
                    .ok_or(Stop::Refused)?;
                if close == *pos + 1 || close > *pos + 7 {
                    return Err(Stop::Refused);
                }
                let mut cp = 0;
                for i in *pos + 1..close {
                    cp = cp * 16 + hex(i).ok_or(Stop::Refused)?;
                }
                if cp > MAX_CODEPOINT {
                    return Err(Stop::Refused);
                }
                *pos = close + 1;
                return single(cp);
            }
            if *pos + 3 >= text.len() {
                return Err(Stop::Refused);
            }
            let mut cp = 0;
            for i in *pos..*pos + 4 {
                cp = cp * 16 + hex(i).ok_or(Stop::Refused)?;
            }
            *pos += 4;
            single(cp)
        }
        b'c' => match at(*pos) {
            Some(letter) if letter.is_ascii_alphabetic() => {
                *pos += 1;
                single(u32::from(letter) & 0x1F)
            }
            _ => Err(Stop::Refused),
        },
        // Printable ASCII only reaches here: the character itself.
        other => single(u32::from(other)),
    }
}

/// `NormalizeRanges`: sorted, overlapping and adjacent ranges merged.
fn normalize(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (low, high) in ranges {
        match merged.last_mut() {
            Some(last) if low <= last.1.saturating_add(1) => last.1 = last.1.max(high),
            _ => merged.push((low, high)),
        }
    }
    merged
}

/// `ComplementRanges` of normalized ranges over U+0000–U+10FFFF.
fn complement(ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    let mut result = Vec::new();
    let mut next = 0;
    for (low, high) in ranges {
        if low > next {
            result.push((next, low - 1));
        }
        if high >= MAX_CODEPOINT {
            return result;
        }
        next = next.max(high + 1);
    }
    result.push((next, MAX_CODEPOINT));
    result
}

/// `FoldAsciiCaseRanges`.
fn fold_case(ranges: &mut Vec<(u32, u32)>) {
    for index in 0..ranges.len() {
        let (low, high) = ranges[index];
        for (from, to, shift_up) in [(0x61, 0x7A, false), (0x41, 0x5A, true)] {
            let (fold_low, fold_high) = (low.max(from), high.min(to));
            if fold_low <= fold_high {
                ranges.push(if shift_up {
                    (fold_low + 32, fold_high + 32)
                } else {
                    (fold_low - 32, fold_high - 32)
                });
            }
        }
    }
}

/// Whether a codepoint survives the JSON exclusion (`"`, `\` and the
/// control characters; bytes of multi-byte characters are never removed).
fn allowed(cp: u32) -> bool {
    cp >= 0x20 && cp != 0x22 && cp != 0x5C
}

/// A character match: whether a character survives, and its states beyond
/// the start and end (bounded above for multi-byte ranges).
fn ranges_size(ranges: &[(u32, u32)]) -> Size {
    let satisfiable = ranges
        .iter()
        .any(|&(low, high)| high >= 0x80 || (low..=high).any(allowed));
    let wide = ranges.iter().filter(|r| r.1 >= 0x80).count() as u64;
    Size {
        satisfiable,
        low: 2,
        high: 2 + 64 * wide,
    }
}

/// `SkipCharacterClass`: the index after the class's `]`.
fn skip_class(text: &[u8], mut pos: usize) -> Option<usize> {
    pos += 1;
    if text.get(pos) == Some(&b'^') {
        pos += 1;
    }
    while pos < text.len() {
        match text[pos] {
            b'\\' => pos += 2,
            b']' => return Some(pos + 1),
            _ => pos += 1,
        }
    }
    None
}

/// `CheckRepeat` from the `{` at `*at`; `*at` ends on the `}`.
fn repeat_bounds(text: &[u8], at: &mut usize) -> Step<(u32, Option<u32>)> {
    let byte = |i: usize| text.get(i).copied().unwrap_or(0);
    let spaces = |at: &mut usize| {
        while byte(*at) == b' ' {
            *at += 1;
        }
    };
    let number = |at: &mut usize| -> Step<u32> {
        let start = *at;
        while byte(*at).is_ascii_digit() {
            *at += 1;
        }
        let digits = &text[start..*at];
        if digits.is_empty() || digits.len() > 9 {
            return Err(Stop::Refused);
        }
        std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok())
            .ok_or(Stop::Refused)
    };
    *at += 1;
    spaces(at);
    let lower = number(at)?;
    spaces(at);
    match byte(*at) {
        b'}' => return Ok((lower, Some(lower))),
        b',' => *at += 1,
        _ => return Err(Stop::Refused),
    }
    spaces(at);
    if byte(*at) == b'}' {
        return Ok((lower, None));
    }
    let upper = number(at)?;
    if upper < lower {
        return Err(Stop::Refused);
    }
    spaces(at);
    if byte(*at) != b'}' {
        return Err(Stop::Refused);
    }
    Ok((lower, Some(upper)))
}

impl Parser<'_> {
    /// `ParseRegexToIR`: the top-level sequence.
    fn parse(&self) -> Step<Vec<Node>> {
        let text = self.text;
        let size = text.len();
        let mut stack: Vec<Entry> = Vec::new();
        let mut depth = 0;
        let mut i = 0;
        while i < size {
            let c = text[i];
            match c {
                b'^' | b'$' => {}
                b'[' => {
                    let end = skip_class(text, i).ok_or(Stop::Refused)?;
                    let content = if text.get(i + 1) == Some(&b'^') {
                        i + 2
                    } else {
                        i + 1
                    };
                    if content + 1 == end {
                        return Err(Stop::Refused);
                    }
                    stack.push(Entry::Node(Node::Leaf(text[i..end].to_vec()), 0));
                    i = end - 1;
                }
                b']' => return Err(Stop::Refused),
                b'+' | b'*' | b'?' => {
                    let Some(Entry::Node(atom, height)) = stack.pop() else {
                        return Err(Stop::Refused);
                    };
                    let node = Node::Symbol(c == b'+', Box::new(atom));
                    stack.push(Entry::Node(node, height + 1));
                    if text.get(i + 1) == Some(&b'?') {
                        i += 1;
                    }
                }
                b'(' if text.get(i + 1) == Some(&b'?') => {
                    let Some(&modifier) = text.get(i + 2) else {
                        return Err(Stop::Refused);
                    };
                    match modifier {
                        b':' => {
                            depth += 1;
                            stack.push(Entry::Open);
                            i += 2;
                        }
                        b'=' | b'!' => {
                            // A lookahead, skipped: the empty string.
                            let mut level = 1;
                            let mut j = i + 3;
                            while j < size && level > 0 {
                                match text[j] {
                                    b'\\' => {
                                        j += 2;
                                        continue;
                                    }
                                    b'[' => {
                                        j = skip_class(text, j).ok_or(Stop::Refused)?;
                                        continue;
                                    }
                                    b'(' => level += 1,
                                    b')' => level -= 1,
                                    _ => {}
                                }
                                j += 1;
                            }
                            if level != 0 {
                                return Err(Stop::Refused);
                            }
                            stack.push(Entry::Node(Node::Leaf(Vec::new()), 0));
                            i = j - 1;
                        }
                        b'<' | b'P' if modifier == b'<' || text.get(i + 3) == Some(&b'<') => {
                            let name = if modifier == b'<' { i + 3 } else { i + 4 };
                            if matches!(text.get(name), Some(b'=' | b'!')) {
                                return Err(Stop::Refused);
                            }
                            let mut j = name;
                            while j < size && (text[j].is_ascii_alphanumeric() || text[j] == b'_') {
                                j += 1;
                            }
                            if j == name || text.get(j) != Some(&b'>') {
                                return Err(Stop::Refused);
                            }
                            depth += 1;
                            stack.push(Entry::Open);
                            i = j;
                        }
                        _ => return Err(Stop::Refused),
                    }
                }
                b'(' => {
                    depth += 1;
                    stack.push(Entry::Open);
                }
                b'|' => stack.push(Entry::Bar),
                b')' => {
                    let mut branches: Vec<Vec<Node>> = vec![Vec::new()];
                    let mut height = 0;
                    loop {
                        match stack.pop() {
                            None => return Err(Stop::Refused),
                            Some(Entry::Open) => break,
                            Some(Entry::Bar) => branches.push(Vec::new()),
                            Some(Entry::Node(node, inner)) => {
                                height = height.max(inner);
                                if let Some(branch) = branches.last_mut() {
                                    branch.push(node);
                                }
                            }
                        }
                    }
                    depth -= 1;
                    for branch in &mut branches {
                        branch.reverse();
                    }
                    branches.reverse();
                    let node = if branches.len() == 1 {
                        Node::Bracket(branches.pop().unwrap_or_default())
                    } else {
                        Node::Union(branches)
                    };
                    stack.push(Entry::Node(node, height + 1));
                }
                b'{' => {
                    let Some(Entry::Node(atom, height)) = stack.pop() else {
                        return Err(Stop::Refused);
                    };
                    let (lower, upper) = repeat_bounds(text, &mut i)?;
                    if text.get(i + 1) == Some(&b'?') {
                        i += 1;
                    }
                    let node = Node::Repeat(Box::new(atom), lower, upper);
                    stack.push(Entry::Node(node, height + 1));
                }
                b'\\' => {
                    let mut end = i;
                    parse_escape(text, &mut end, false)?;
                    stack.push(Entry::Node(Node::Leaf(text[i..end].to_vec()), 0));
                    i = end - 1;
                }
                _ => stack.push(Entry::Node(Node::Leaf(vec![c]), 0)),
            }
            let too_high = matches!(stack.last(), Some(Entry::Node(_, h)) if *h > MAX_NESTING);
            if depth > MAX_NESTING || too_high {
                return Err(Stop::Undecided);
            }
            i += 1;
        }
        let mut branches: Vec<Vec<Node>> = vec![Vec::new()];
        for entry in stack {
            match entry {
                Entry::Open => return Err(Stop::Refused),
                Entry::Bar => branches.push(Vec::new()),
                Entry::Node(node, _) => {
                    if let Some(branch) = branches.last_mut() {
                        branch.push(node);
                    }
                }
            }
        }
        Ok(if branches.len() == 1 {
            branches.pop().unwrap_or_default()
        } else {
            vec![Node::Union(branches)]
        })
    }

    /// Builds a node's automaton as far as this module follows it.
    fn measure(&self, node: &Node) -> Step<Size> {
        match node {
            Node::Leaf(text) => self.leaf(text),
            Node::Symbol(plus, child) => {
                let child = self.measure(child)?;
                Ok(Size {
                    satisfiable: !plus || child.satisfiable,
                    low: child.low,
                    high: child.high + 2,
                })
            }
            Node::Bracket(children) => self.sequence(children),
            Node::Union(branches) => {
                let mut size = Size {
                    satisfiable: false,
                    low: 1,
                    high: 2,
                };
                for branch in branches {
                    let branch = self.sequence(branch)?;
                    size.satisfiable |= branch.satisfiable;
                    size.low = size.low.max(branch.low);
                    size.high = size.high.saturating_add(branch.high + 2);
                }
                Ok(size)
            }
            Node::Repeat(child, lower, upper) => {
                if *upper == Some(0) {
                    return Ok(Size {
                        satisfiable: true,
                        low: 1,
                        high: 1,
                    });
                }
                let child = self.measure(child)?;
                let copies = u64::from(upper.unwrap_or((*lower).max(1)));
                if child.low.saturating_mul(copies) > MAX_UNROLLED_STATES {
                    return Err(Stop::Refused);
                }
                if child.high.saturating_mul(copies) > MAX_UNROLLED_STATES {
                    return Err(Stop::Undecided);
                }
                Ok(Size {
                    satisfiable: *lower == 0 || child.satisfiable,
                    low: child.low * copies,
                    high: child.high * (copies + 1) + 2,
                })
            }
        }
    }

    fn sequence(&self, nodes: &[Node]) -> Step<Size> {
        let mut size = Size {
            satisfiable: true,
            low: 1,
            high: 2,
        };
        for node in nodes {
            let node = self.measure(node)?;
            size.satisfiable &= node.satisfiable;
            size.low = size.low.max(node.low);
            size.high = size.high.saturating_add(node.high + 2);
        }
        Ok(size)
    }

    /// `BuildLeafFSMFromRegex`.
    fn leaf(&self, text: &[u8]) -> Step<Size> {
        match text.first() {
            None => Ok(Size {
                satisfiable: true,
                low: 1,
                high: 1,
            }),
            Some(b'[') => Ok(ranges_size(&self.class(text)?)),
            Some(b'.') => Ok(ranges_size(&[(0, MAX_CODEPOINT)])),
            Some(b'\\') => {
                let mut pos = 0;
                match parse_escape(text, &mut pos, false)? {
                    Escape::Single(cp) => Ok(single_size(cp)),
                    Escape::Ranges(mut ranges) => {
                        if self.insensitive {
                            fold_case(&mut ranges);
                        }
                        Ok(ranges_size(&normalize(ranges)))
                    }
                }
            }
            Some(&c) => Ok(single_size(u32::from(c))),
        }
    }

    /// `ParseCharacterClassLeaf`: the class's codepoint ranges.
    fn class(&self, text: &[u8]) -> Step<Vec<(u32, u32)>> {
        let end = text.len() - 1;
        let mut pos = 1;
        let negated = text.get(1) == Some(&b'^');
        if negated {
            pos += 1;
        }
        if pos == end {
            return Err(Stop::Refused);
        }
        let unit = |pos: &mut usize| -> Step<Escape> {
            if text[*pos] == b'\\' {
                parse_escape(text, pos, true)
            } else {
                *pos += 1;
                Ok(Escape::Single(u32::from(text[*pos - 1])))
            }
        };
        let mut ranges = Vec::new();
        while pos < end {
            let low = match unit(&mut pos)? {
                Escape::Ranges(set) => {
                    ranges.extend(set);
                    continue;
                }
                Escape::Single(cp) => cp,
            };
            if pos < end && text[pos] == b'-' && pos + 1 < end {
                pos += 1;
                let Escape::Single(high) = unit(&mut pos)? else {
                    return Err(Stop::Refused);
                };
                if high < low {
                    return Err(Stop::Refused);
                }
                ranges.push((low, high));
            } else {
                ranges.push((low, low));
            }
        }
        if self.insensitive {
            fold_case(&mut ranges);
        }
        let ranges = normalize(ranges);
        Ok(if negated { complement(ranges) } else { ranges })
    }
}

/// One codepoint's states: a start, the bytes' intermediate states, an end.
fn single_size(cp: u32) -> Size {
    let bytes = char::from_u32(cp).map_or(3, char::len_utf8) as u64;
    Size {
        satisfiable: cp >= 0x80 || allowed(cp),
        low: 1 + bytes,
        high: 1 + bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_of_xgrammar_0_2_8() {
        for (pattern, expected) in [
            ("(?=x)", true),
            ("(?=x)a", true),
            ("a++", true),
            ("a**", true),
            ("(?P<n>a)", true),
            ("(?i)a", true),
            ("\"**", true),
            ("\\\\{0}", true),
            ("[[:alpha:]]", true),
            ("é", true),
            ("", true),
            ("[a-", false),
            ("(a)\\1", false),
            ("a{2,1}", false),
            ("\\p{L}", false),
            ("x(?<=a)", false),
            ("a{,3}", false),
            ("\\x22(?=a)", false),
            ("\\x1f(?=a)", false),
            ("\\x7f(?=a)", true),
            ("\\u0080(?=a)", true),
            ("(?=x)a{50001}", false),
            ("(?=x)a{129}", true),
            ("a(?i)b", false),
            ("(?i:a)", false),
        ] {
            assert_eq!(
                json_pattern_compiles(pattern),
                Some(expected),
                "{pattern:?}"
            );
        }
    }

    /// Hostile patterns: an answer, never a panic.
    #[test]
    fn any_pattern_is_answered_without_panic() {
        for pattern in crate::serving::hostile_patterns() {
            let _ = json_pattern_compiles(&pattern);
        }
        let _ = json_pattern_compiles(&"(?=a)(a|[b-c]{2,3}?)*".repeat(400));
        let _ = json_pattern_compiles(&format!("{}{}", "(?:".repeat(5000), ")".repeat(5000)));
        let _ = json_pattern_compiles(&"((a{300}){300}){300}(?=x)".repeat(10));
        let stacked = format!("(?=x)a{}", "*".repeat(8000));
        assert_eq!(json_pattern_compiles(&stacked), None);
        let _ = json_pattern_compiles(&"\\u{".repeat(2000));
    }
}
