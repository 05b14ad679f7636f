//! vLLM 0.33.0's `_may_write(pattern, chars)`
//! (`vllm/parser/response_template_grammar.py`): whether a match of a regex
//! may hold one of `chars`, read from Python 3.11's own regex parser
//! (`re._parser.parse`, formerly `sre_parse`), as any pattern may that Python
//! cannot parse (`error`, `OverflowError`, `RecursionError`) or that sets
//! `IGNORECASE`.
//!
//! vLLM walks the parsed items: a literal may write itself; a class, each of
//! `chars` it holds (`_in_class`: literals, ranges, and `\d \D \s \S \w \W`
//! as the third-party `regex` module matches them, Unicode-wide); a repeat
//! with a maximum above 0, a group or a branch, `chars` if its contents may;
//! anchors nothing; anything else (`.`, `[^x]` — which Python's parser
//! writes as one negated literal —, lookaround, atomic groups, back
//! references, conditionals, `(?i:…)`) may. Python's parser is reproduced
//! here item by item, errors included (`a**`, `[z-a]`, `\q`, `(?<n>a)`,
//! `a{2,1}`, repeats past 2³² − 2, unknown or misplaced groups and
//! flags), though without the tree: with at least one char to look for the
//! walk is an `or` over the items, so each item only says whether it may.
//!
//! Undecided (`None`): no chars to look for (vLLM's walk then depends on
//! how Python's parser regroups branches), `\N{…}` (Unicode names),
//! verbose mode (`(?x)`), group names that are not ASCII, conditional group
//! numbers Python's `int()` reads loosely, `(?a)` with `(?u)` (a
//! `ValueError` vLLM does not catch), a class category tested on a
//! non-ASCII char for which Unicode versions may differ (see
//! [`category_matches`]), patterns longer than [`MAX_PATTERN_CHARS`] or
//! nested deeper than [`MAX_NESTING`] (where Python's recursion limit, which
//! depends on the caller's stack, may be reached).

/// The longest pattern (in chars) decided on.
pub const MAX_PATTERN_CHARS: usize = 8192;
/// The deepest group nesting decided on.
pub const MAX_NESTING: usize = 100;

/// `_sre.MAXREPEAT`.
const MAXREPEAT: u64 = 4_294_967_295;

/// What stopped Python's parse, or this one.
enum Stop {
    /// Python raises `error` or `OverflowError`: vLLM's `_may_write` says
    /// the pattern may write anything.
    PyError,
    Undecided,
}

type Step<T> = Result<T, Stop>;

/// `_may_write(pattern, set(chars))`: `Some(true)` a match may hold one of
/// `chars`, `Some(false)` none can, `None` undecided (see the module docs).
pub fn may_write(pattern: &str, chars: &[char]) -> Option<bool> {
    if chars.is_empty() || pattern.chars().count() > MAX_PATTERN_CHARS {
        return None;
    }
    let mut parser = Parser {
        text: pattern.chars().collect(),
        index: 0,
        next: None,
        chars,
        groups: 1,
        closed: vec![true],
        names: Vec::new(),
        lookbehind_groups: None,
        conditional_refs: Vec::new(),
        flags: 0,
        depth: 0,
    };
    let result = parser.advance().and_then(|()| parser.parse());
    match result {
        Ok(may) => Some(may),
        Err(Stop::PyError) => Some(true),
        Err(Stop::Undecided) => None,
    }
}

/// Unicode categories a class may name.
#[derive(Clone, Copy)]
enum Category {
    Digit,
    Space,
    Word,
}

/// `bool(regex.fullmatch(r"\d" / r"\s" / r"\w", char))` with the `regex`
/// module vLLM imports as `re`: exact for ASCII; past it, Unicode's
/// `Nd`, `White_Space` and the UTS #18 word class as `regex_syntax` has
/// them (checked against the `regex` module over every codepoint by
/// `tests/xgrammar_regexes.rs`), `None` where the two tables may disagree.
pub fn category_matches(category_digit_space_word: char, c: char) -> Option<bool> {
    let category = match category_digit_space_word {
        'd' => Category::Digit,
        's' => Category::Space,
        'w' => Category::Word,
        _ => return None,
    };
    in_category(category, c)
}

fn in_category(category: Category, c: char) -> Option<bool> {
    use regex_syntax::hir::{Class, ClassUnicode, HirKind};
    use std::sync::OnceLock;
    if c.is_ascii() {
        return Some(match category {
            Category::Digit => c.is_ascii_digit(),
            Category::Space => matches!(c, '\t'..='\r' | ' '),
            Category::Word => c.is_ascii_alphanumeric() || c == '_',
        });
    }
    /// `\d`, `\s`, `\w` and the unassigned codepoints, as `regex_syntax`
    /// has them.
    static TABLES: OnceLock<Vec<ClassUnicode>> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        [r"\d", r"\s", r"\w", r"\p{Cn}"]
            .iter()
            .map(|name| {
                match regex_syntax::ParserBuilder::new()
                    .build()
                    .parse(name)
                    .map(|hir| hir.into_kind())
                {
                    Ok(HirKind::Class(Class::Unicode(class))) => class,
                    _ => ClassUnicode::empty(),
                }
            })
            .collect()
    });
    let holds = |index: usize| {
        tables.get(index).is_some_and(|class| {
            class
                .ranges()
                .iter()
                .any(|r| r.start() <= c && c <= r.end())
        })
    };
    let index = match category {
        Category::Digit => 0,
        Category::Space => 1,
        Category::Word => 2,
    };
    if holds(index) {
        return Some(true);
    }
    // The `regex` module's Unicode may be newer: a codepoint unassigned
    // here may be a digit or a letter there.
    (!holds(3)).then_some(false)
}

/// An item of a class (`_in_class`).
#[derive(Clone, Copy, PartialEq)]
enum ClassItem {
    Literal(u32),
    Range(u32, u32),
    Category(Category, bool),
}

impl PartialEq for Category {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// What the repeat that may follow needs to know of the last item.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    At,
    Repeat,
    Other,
}

const IGNORECASE: u32 = 2;
const LOCALE: u32 = 4;
const VERBOSE: u32 = 64;
const UNICODE: u32 = 32;
const ASCII: u32 = 256;
const TEMPLATE: u32 = 1;
const TYPE_FLAGS: u32 = ASCII | LOCALE | UNICODE;
const GLOBAL_FLAGS: u32 = TEMPLATE;

fn flag(c: char) -> Option<u32> {
    Some(match c {
        'i' => IGNORECASE,
        'L' => LOCALE,
        'm' => 8,
        's' => 16,
        'x' => VERBOSE,
        'a' => ASCII,
        't' => TEMPLATE,
        'u' => UNICODE,
        _ => return None,
    })
}

/// A token of Python's `Tokenizer`: a char, or a backslash and the char
/// after it.
#[derive(Clone, Copy, PartialEq)]
struct Token {
    escaped: bool,
    c: char,
}

impl Token {
    fn is(self, c: char) -> bool {
        !self.escaped && self.c == c
    }
}

struct Parser<'a> {
    text: Vec<char>,
    index: usize,
    next: Option<Token>,
    chars: &'a [char],
    /// `state.groups`, which groups are closed, and the named ones.
    groups: usize,
    closed: Vec<bool>,
    names: Vec<(String, usize)>,
    lookbehind_groups: Option<usize>,
    conditional_refs: Vec<usize>,
    flags: u32,
    depth: usize,
}

fn error<T>() -> Step<T> {
    Err(Stop::PyError)
}

fn undecided<T>() -> Step<T> {
    Err(Stop::Undecided)
}

impl Parser<'_> {
    /// `Tokenizer.__next`.
    fn advance(&mut self) -> Step<()> {
        let Some(&c) = self.text.get(self.index) else {
            self.next = None;
            return Ok(());
        };
        if c == '\\' {
            let Some(&d) = self.text.get(self.index + 1) else {
                return error();
            };
            self.index += 2;
            self.next = Some(Token {
                escaped: true,
                c: d,
            });
        } else {
            self.index += 1;
            self.next = Some(Token { escaped: false, c });
        }
        Ok(())
    }

    fn get(&mut self) -> Step<Option<Token>> {
        let this = self.next;
        self.advance()?;
        Ok(this)
    }

    fn matches(&mut self, c: char) -> Step<bool> {
        if self.next.is_some_and(|t| t.is(c)) {
            self.advance()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn next_is(&self, c: char) -> bool {
        self.next.is_some_and(|t| t.is(c))
    }

    /// `getwhile(n, charset)`.
    fn get_while(&mut self, n: usize, set: fn(char) -> bool) -> Step<String> {
        let mut result = String::new();
        for _ in 0..n {
            match self.next {
                Some(t) if !t.escaped && set(t.c) => {
                    result.push(t.c);
                    self.advance()?;
                }
                _ => break,
            }
        }
        Ok(result)
    }

    /// `getuntil(terminator)`: the name before it (tokens as text).
    fn get_until(&mut self, terminator: char) -> Step<String> {
        let mut result = String::new();
        loop {
            let Some(t) = self.get()? else {
                return error();
            };
            if t.is(terminator) {
                if result.is_empty() {
                    return error();
                }
                return Ok(result);
            }
            if t.escaped {
                result.push('\\');
            }
            result.push(t.c);
        }
    }

    /// `checkgroupname`: `str.isidentifier()`, decided for ASCII names.
    fn check_group_name(name: &str) -> Step<()> {
        if !name.is_ascii() {
            return undecided();
        }
        let mut chars = name.chars();
        let first = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if first && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(())
        } else {
            error()
        }
    }

    fn check_group(&self, gid: usize) -> bool {
        gid < self.groups && self.closed.get(gid).copied().unwrap_or(false)
    }

    fn check_lookbehind_group(&self, gid: usize) -> Step<()> {
        if let Some(first) = self.lookbehind_groups
            && (!self.check_group(gid) || gid >= first)
        {
            return error();
        }
        Ok(())
    }

    fn parse(&mut self) -> Step<bool> {
        let may = self.parse_sub(0)?;
        if self.flags & ASCII != 0 && self.flags & UNICODE != 0 {
            // fix_flags raises ValueError, which vLLM does not catch.
            return undecided();
        }
        if self.next.is_some() {
            // Unbalanced parenthesis.
            return error();
        }
        if self.conditional_refs.iter().any(|&g| g >= self.groups) {
            return error();
        }
        Ok(may || self.flags & IGNORECASE != 0)
    }

    /// `_parse_sub`: alternatives; whether any may.
    fn parse_sub(&mut self, nested: usize) -> Step<bool> {
        let mut may = false;
        let mut first_item = true;
        loop {
            may |= self.parse_seq(nested + 1, nested == 0 && first_item)?;
            first_item = false;
            if !self.matches('|')? {
                return Ok(may);
            }
        }
    }

    fn enter(&mut self) -> Step<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return undecided();
        }
        Ok(())
    }

    /// `_parse`: one alternative; whether it may (an `or` over its items,
    /// anchors writing nothing).
    fn parse_seq(&mut self, nested: usize, first: bool) -> Step<bool> {
        let mut items: Vec<(Kind, bool)> = Vec::new();
        while let Some(this) = self.next {
            if this.is('|') || this.is(')') {
                break;
            }
            self.advance()?;
            let item: (Kind, bool) = if this.escaped {
                self.escape(this.c)?
            } else {
                match this.c {
                    '[' => (Kind::Other, self.class()?),
                    '*' | '+' | '?' | '{' => {
                        let max = match this.c {
                            '?' => 1,
                            '*' | '+' => MAXREPEAT,
                            _ => match self.braces()? {
                                Some(max) => max,
                                None => {
                                    // A literal `{`.
                                    items.push((Kind::Other, self.chars.contains(&'{')));
                                    continue;
                                }
                            },
                        };
                        let Some(&(kind, inner)) = items.last() else {
                            return error();
                        };
                        if kind == Kind::At || kind == Kind::Repeat {
                            return error();
                        }
                        if !self.matches('?')? {
                            self.matches('+')?;
                        }
                        // The repeat replaces the item it repeats; with a
                        // maximum of 0 vLLM does not look inside.
                        items.pop();
                        items.push((Kind::Repeat, max != 0 && inner));
                        continue;
                    }
                    '.' => (Kind::Other, true),
                    '(' => match self.group(nested, first && items.is_empty())? {
                        Some(item) => item,
                        None => continue,
                    },
                    '^' | '$' => (Kind::At, false),
                    c => (Kind::Other, self.chars.contains(&c)),
                }
            };
            items.push(item);
        }
        Ok(items.iter().any(|&(_, may)| may))
    }

    /// After `{`: `Some(max)` of a repeat, `None` for a literal `{`.
    fn braces(&mut self) -> Step<Option<u64>> {
        if self.next_is('}') {
            return Ok(None);
        }
        let here = self.index;
        let here_next = self.next;
        let lo = self.get_while(usize::MAX, |c| c.is_ascii_digit())?;
        let hi = if self.matches(',')? {
            self.get_while(usize::MAX, |c| c.is_ascii_digit())?
        } else {
            lo.clone()
        };
        if !self.matches('}')? {
            self.index = here;
            self.next = here_next;
            return Ok(None);
        }
        let number = |digits: &str| -> u64 {
            if digits.len() > 19 {
                u64::MAX
            } else {
                digits.parse().unwrap_or(u64::MAX)
            }
        };
        let min = if lo.is_empty() { 0 } else { number(&lo) };
        if min >= MAXREPEAT {
            return error();
        }
        let mut max = MAXREPEAT;
        if !hi.is_empty() {
            max = number(&hi);
            if max >= MAXREPEAT || max < min {
                return error();
            }
        }
        Ok(Some(max))
    }

    /// `_escape` outside a class.
    fn escape(&mut self, c: char) -> Step<(Kind, bool)> {
        let literal = |this: &Self, cp: u32| {
            (
                Kind::Other,
                char::from_u32(cp).is_some_and(|c| this.chars.contains(&c)),
            )
        };
        match c {
            'A' | 'b' | 'B' | 'Z' => return Ok((Kind::At, false)),
            'd' | 'D' | 's' | 'S' | 'w' | 'W' => {
                let item = category_item(c);
                return Ok((Kind::Other, self.class_may(&[item], false)?));
            }
            'a' => return Ok(literal(self, 7)),
            'f' => return Ok(literal(self, 12)),
            'n' => return Ok(literal(self, 10)),
            'r' => return Ok(literal(self, 13)),
            't' => return Ok(literal(self, 9)),
            'v' => return Ok(literal(self, 11)),
            '\\' => return Ok(literal(self, 92)),
            _ => {}
        }
        if let Some(cp) = self.hex_escape(c)? {
            return Ok(literal(self, cp));
        }
        match c {
            '0' => {
                let digits = self.get_while(2, |c| ('0'..='7').contains(&c))?;
                let cp = u32::from_str_radix(&format!("0{digits}"), 8).unwrap_or(0);
                Ok(literal(self, cp))
            }
            '1'..='9' => {
                let mut escape = String::from(c);
                if let Some(t) = self.next.filter(|t| !t.escaped && t.c.is_ascii_digit()) {
                    self.advance()?;
                    escape.push(t.c);
                    let octal = |c: char| ('0'..='7').contains(&c);
                    if let Some(t) = self
                        .next
                        .filter(|t| !t.escaped && octal(t.c) && escape.chars().all(octal))
                    {
                        self.advance()?;
                        escape.push(t.c);
                        let cp = u32::from_str_radix(&escape, 8).unwrap_or(u32::MAX);
                        if cp > 0o377 {
                            return error();
                        }
                        return Ok(literal(self, cp));
                    }
                }
                let group: usize = escape.parse().unwrap_or(usize::MAX);
                if group < self.groups {
                    if !self.check_group(group) {
                        return error();
                    }
                    self.check_lookbehind_group(group)?;
                    // A back reference may write anything.
                    return Ok((Kind::Other, true));
                }
                error()
            }
            c if c.is_ascii_alphabetic() => error(),
            c => Ok(literal(self, u32::from(c))),
        }
    }

    /// `\x..`, `\u....`, `\U........` and `\N{…}` (both contexts): the
    /// codepoint, or `None` for another escape.
    fn hex_escape(&mut self, c: char) -> Step<Option<u32>> {
        let width = match c {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            'N' => return undecided(),
            _ => return Ok(None),
        };
        let digits = self.get_while(width, |c| c.is_ascii_hexdigit())?;
        if digits.len() != width {
            return error();
        }
        let cp = u32::from_str_radix(&digits, 16).unwrap_or(u32::MAX);
        if cp > 0x10FFFF {
            // chr() raises ValueError: "bad escape".
            return error();
        }
        Ok(Some(cp))
    }

    /// `_class_escape`: a class item, or `None` for a category (which
    /// cannot end a range).
    fn class_escape(&mut self, c: char) -> Step<ClassItem> {
        let simple = match c {
            'a' => Some(7),
            'b' => Some(8),
            'f' => Some(12),
            'n' => Some(10),
            'r' => Some(13),
            't' => Some(9),
            'v' => Some(11),
            '\\' => Some(92),
            _ => None,
        };
        if let Some(cp) = simple {
            return Ok(ClassItem::Literal(cp));
        }
        if matches!(c, 'd' | 'D' | 's' | 'S' | 'w' | 'W') {
            return Ok(category_item(c));
        }
        if let Some(cp) = self.hex_escape(c)? {
            return Ok(ClassItem::Literal(cp));
        }
        if ('0'..='7').contains(&c) {
            let digits = self.get_while(2, |c| ('0'..='7').contains(&c))?;
            let cp = u32::from_str_radix(&format!("{c}{digits}"), 8).unwrap_or(u32::MAX);
            if cp > 0o377 {
                return error();
            }
            return Ok(ClassItem::Literal(cp));
        }
        if c.is_ascii_alphanumeric() {
            return error();
        }
        Ok(ClassItem::Literal(u32::from(c)))
    }

    /// A class after its `[`: whether it may.
    fn class(&mut self) -> Step<bool> {
        let negate = self.matches('^')?;
        let mut set: Vec<ClassItem> = Vec::new();
        loop {
            let Some(this) = self.get()? else {
                return error();
            };
            if this.is(']') && !set.is_empty() {
                break;
            }
            let code1 = if this.escaped {
                self.class_escape(this.c)?
            } else {
                ClassItem::Literal(u32::from(this.c))
            };
            if self.matches('-')? {
                let Some(that) = self.get()? else {
                    return error();
                };
                if that.is(']') {
                    set.push(code1);
                    set.push(ClassItem::Literal(u32::from('-')));
                    break;
                }
                let code2 = if that.escaped {
                    self.class_escape(that.c)?
                } else {
                    ClassItem::Literal(u32::from(that.c))
                };
                let (ClassItem::Literal(lo), ClassItem::Literal(hi)) = (code1, code2) else {
                    return error();
                };
                if hi < lo {
                    return error();
                }
                set.push(ClassItem::Range(lo, hi));
            } else {
                set.push(code1);
            }
        }
        // `_uniq`.
        let mut unique: Vec<ClassItem> = Vec::new();
        for item in set {
            if !unique.contains(&item) {
                unique.push(item);
            }
        }
        if let [ClassItem::Literal(cp)] = unique.as_slice() {
            if negate {
                // NOT_LITERAL: vLLM says it may.
                return Ok(true);
            }
            return Ok(char::from_u32(*cp).is_some_and(|c| self.chars.contains(&c)));
        }
        self.class_may(&unique, negate)
    }

    /// `_in_class` for each of `chars`: whether any is in the class.
    fn class_may(&self, items: &[ClassItem], negated: bool) -> Step<bool> {
        for &c in self.chars {
            let cp = u32::from(c);
            let mut matched = false;
            for item in items {
                matched |= match *item {
                    ClassItem::Literal(x) => cp == x,
                    ClassItem::Range(lo, hi) => lo <= cp && cp <= hi,
                    ClassItem::Category(category, negative) => {
                        in_category(category, c).ok_or(Stop::Undecided)? != negative
                    }
                };
            }
            if matched != negated {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// A group after its `(`: its item, or `None` for a comment or global
    /// flags.
    fn group(&mut self, nested: usize, first: bool) -> Step<Option<(Kind, bool)>> {
        let mut capture = true;
        let mut name = None;
        let mut add_flags = 0;
        let mut del_flags = 0;
        let mut atomic = false;
        if self.matches('?')? {
            let Some(char) = self.get()? else {
                return error();
            };
            if char.escaped {
                return error();
            }
            match char.c {
                'P' => {
                    if self.matches('<')? {
                        let group_name = self.get_until('>')?;
                        Self::check_group_name(&group_name)?;
                        name = Some(group_name);
                    } else if self.matches('=')? {
                        let group_name = self.get_until(')')?;
                        Self::check_group_name(&group_name)?;
                        let Some(&(_, gid)) = self.names.iter().find(|(n, _)| *n == group_name)
                        else {
                            return error();
                        };
                        if !self.check_group(gid) {
                            return error();
                        }
                        self.check_lookbehind_group(gid)?;
                        return Ok(Some((Kind::Other, true)));
                    } else {
                        return error();
                    }
                }
                ':' => capture = false,
                '#' => loop {
                    match self.get()? {
                        None => return error(),
                        Some(t) if t.is(')') => return Ok(None),
                        Some(_) => {}
                    }
                },
                '=' | '!' | '<' => {
                    let mut lookbehind = false;
                    if char.c == '<' {
                        match self.get()? {
                            Some(t) if t.is('=') || t.is('!') => {}
                            _ => return error(),
                        }
                        lookbehind = true;
                    }
                    let saved = self.lookbehind_groups;
                    if lookbehind && saved.is_none() {
                        self.lookbehind_groups = Some(self.groups);
                    }
                    self.enter()?;
                    self.parse_sub(nested + 1)?;
                    self.depth -= 1;
                    if lookbehind && saved.is_none() {
                        self.lookbehind_groups = None;
                    }
                    if !self.matches(')')? {
                        return error();
                    }
                    return Ok(Some((Kind::Other, true)));
                }
                '(' => return self.conditional(nested).map(Some),
                '>' => {
                    capture = false;
                    atomic = true;
                }
                c if flag(c).is_some() || c == '-' => {
                    match self.flags_group(c)? {
                        None => {
                            if !first {
                                return error();
                            }
                            if self.flags & VERBOSE != 0 {
                                return undecided();
                            }
                            return Ok(None);
                        }
                        Some((add, del)) => {
                            add_flags = add;
                            del_flags = del;
                        }
                    }
                    capture = false;
                }
                _ => return error(),
            }
        }
        let group = if capture {
            if let Some(name) = &name {
                if self.names.iter().any(|(n, _)| n == name) {
                    return error();
                }
                self.names.push((name.clone(), self.groups));
            }
            let gid = self.groups;
            self.groups += 1;
            self.closed.push(false);
            Some(gid)
        } else {
            None
        };
        if add_flags & VERBOSE != 0 && del_flags & VERBOSE == 0 {
            return undecided();
        }
        self.enter()?;
        let may = self.parse_sub(nested + 1)?;
        self.depth -= 1;
        if !self.matches(')')? {
            return error();
        }
        if let Some(gid) = group
            && let Some(closed) = self.closed.get_mut(gid)
        {
            *closed = true;
        }
        let may = atomic || add_flags & IGNORECASE != 0 || may;
        Ok(Some((Kind::Other, may)))
    }

    /// `(?(group)yes|no)`: it may (vLLM's walk stops at it).
    fn conditional(&mut self, nested: usize) -> Step<(Kind, bool)> {
        let condname = self.get_until(')')?;
        let identifier = Self::check_group_name(&condname);
        let condgroup = match identifier {
            Ok(()) => {
                let Some(&(_, gid)) = self.names.iter().find(|(n, _)| *n == condname) else {
                    return error();
                };
                gid
            }
            Err(Stop::Undecided) => return undecided(),
            Err(Stop::PyError) => {
                if condname.bytes().all(|b| b.is_ascii_digit()) {
                    if condname.len() > 9 {
                        return undecided();
                    }
                    let group: usize = condname.parse().unwrap_or(0);
                    if group == 0 {
                        return error();
                    }
                    self.conditional_refs.push(group);
                    group
                } else if condname
                    .chars()
                    .any(|c| c.is_whitespace() || "+-_".contains(c))
                {
                    // int() reads signs, spaces and underscores.
                    return undecided();
                } else {
                    return error();
                }
            }
        };
        self.check_lookbehind_group(condgroup)?;
        self.enter()?;
        self.parse_seq(nested + 1, false)?;
        if self.matches('|')? {
            self.parse_seq(nested + 1, false)?;
            if self.next_is('|') {
                return error();
            }
        }
        self.depth -= 1;
        if !self.matches(')')? {
            return error();
        }
        Ok((Kind::Other, true))
    }

    /// `_parse_flags`: `None` for global flags, or the group's added and
    /// removed flags.
    fn flags_group(&mut self, mut char: char) -> Step<Option<(u32, u32)>> {
        let mut add_flags = 0;
        let mut del_flags = 0;
        let next_char = |this: &mut Self| -> Step<Option<char>> {
            Ok(this
                .get()?
                .map(|t| if t.escaped { '\u{FFFF}' } else { t.c }))
        };
        if char != '-' {
            loop {
                let Some(f) = flag(char) else {
                    return error();
                };
                if char == 'L' {
                    return error();
                }
                add_flags |= f;
                if f & TYPE_FLAGS != 0 && add_flags & TYPE_FLAGS != f {
                    return error();
                }
                let Some(c) = next_char(self)? else {
                    return error();
                };
                char = c;
                if ")-:".contains(char) {
                    break;
                }
                if flag(char).is_none() {
                    return error();
                }
            }
        }
        if char == ')' {
            self.flags |= add_flags;
            return Ok(None);
        }
        if add_flags & GLOBAL_FLAGS != 0 {
            return error();
        }
        if char == '-' {
            let Some(c) = next_char(self)? else {
                return error();
            };
            char = c;
            if flag(char).is_none() {
                return error();
            }
            loop {
                let Some(f) = flag(char) else {
                    return error();
                };
                if f & TYPE_FLAGS != 0 {
                    return error();
                }
                del_flags |= f;
                let Some(c) = next_char(self)? else {
                    return error();
                };
                char = c;
                if char == ':' {
                    break;
                }
                if flag(char).is_none() {
                    return error();
                }
            }
        }
        if del_flags & GLOBAL_FLAGS != 0 || add_flags & del_flags != 0 {
            return error();
        }
        Ok(Some((add_flags, del_flags)))
    }
}

fn category_item(c: char) -> ClassItem {
    let category = match c.to_ascii_lowercase() {
        'd' => Category::Digit,
        's' => Category::Space,
        _ => Category::Word,
    };
    ClassItem::Category(category, c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_patterns_as_python_does() {
        let lt = ['<'];
        for (pattern, expected) in [
            ("[a-z]+", Some(false)),
            ("<", Some(true)),
            (".", Some(true)),
            ("[^a]", Some(true)),
            ("[^<]", Some(true)),
            ("[^<a]", Some(false)),
            ("[^ab]", Some(true)),
            ("(?i)a", Some(true)),
            ("a**", Some(true)),
            ("\\q", Some(true)),
            ("<{0}", Some(false)),
            ("(?:<){0}x", Some(false)),
            ("a{,3}", Some(false)),
            ("a{x}", Some(false)),
            ("[\\W]", Some(true)),
            ("\\d+", Some(false)),
            ("(a)\\1", Some(true)),
            ("(?=x)", Some(true)),
            ("\\N{LESS-THAN SIGN}", None),
            ("(?x)a", None),
        ] {
            assert_eq!(may_write(pattern, &lt), expected, "{pattern:?}");
        }
    }

    /// Hostile patterns: an answer, never a panic.
    #[test]
    fn any_pattern_is_answered_without_panic() {
        for pattern in crate::serving::hostile_patterns() {
            let _ = may_write(&pattern, &['<', 'a', 'é']);
        }
    }
}
