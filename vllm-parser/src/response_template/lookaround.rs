//! Lookaround groups cut out of a Python regex, so that the rest compiles
//! with `regex-automata` (whose syntax has none) and module `pattern` can
//! evaluate each group's body as a sub-pattern.
//!
//! Each `(?=…)`, `(?!…)`, `(?<=…)` and `(?<!…)` group is replaced by an empty
//! named group with a reserved name ([`marker_name`]): its `Capture` state in
//! the NFA marks where the lookaround is evaluated. Bodies keep their own
//! lookarounds (cut out when the body itself is compiled), up to
//! [`MAX_NESTING`] levels deep. A global inline-flag group at the pattern's
//! start (`(?i)…`) is carried into each body, as Python applies it to the
//! whole pattern; the flags in force where a lookaround stands — those of
//! the scoped-flag groups around it (`(?i:…(?=…)…)`) and of the inline-flag
//! groups before it in the same or an enclosing group (`a(?i)b(?=c)`, which
//! the `regex` module applies to the end of their group) — wrap its body as
//! scoped-flag groups, so the body matches as it does in place. A named group
//! inside a lookbehind gives an error naming it (the `regex` module matches
//! lookbehinds backwards, which decides what such a group captures).

/// How deep lookarounds may nest (Python has no such bound; templates nest
/// at most a level or two).
pub(crate) const MAX_NESTING: usize = 8;
/// How many lookarounds one pattern level may hold.
pub(crate) const MAX_LOOKAROUNDS: usize = 64;

/// Reserved group-name prefix of the markers.
const MARKER_PREFIX: &str = "__vllm_lookaround_";

/// The marker group name of lookaround `index`.
pub(crate) fn marker_name(index: usize) -> String {
    format!("{MARKER_PREFIX}{index}")
}

/// Whether `name` is a marker group's.
pub(crate) fn is_marker(name: &str) -> bool {
    name.starts_with(MARKER_PREFIX)
}

/// The lookaround a marker group's `name` stands for.
pub(crate) fn marker_index(name: &str) -> Option<usize> {
    name.strip_prefix(MARKER_PREFIX)?.parse().ok()
}

/// Which way a lookaround looks, and whether it is negated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `(?=…)`
    Ahead,
    /// `(?!…)`
    NotAhead,
    /// `(?<=…)`
    Behind,
    /// `(?<!…)`
    NotBehind,
}

impl Kind {
    /// Whether the body must match for the lookaround to hold.
    pub(crate) fn positive(self) -> bool {
        matches!(self, Kind::Ahead | Kind::Behind)
    }

    /// Whether the body is matched before the current position.
    pub(crate) fn behind(self) -> bool {
        matches!(self, Kind::Behind | Kind::NotBehind)
    }
}

/// One lookaround cut out of a pattern.
#[derive(Debug, Clone)]
pub(crate) struct Cut {
    pub kind: Kind,
    /// The body as written, with the pattern's leading global flags.
    pub body: String,
}

/// A pattern with its lookarounds replaced by markers.
#[derive(Debug, Clone)]
pub(crate) struct Split {
    pub source: String,
    pub cuts: Vec<Cut>,
}

/// Cut the lookarounds (outermost ones; bodies keep theirs) out of `pattern`.
pub(crate) fn split(pattern: &str, depth: usize) -> Result<Split, String> {
    let chars: Vec<(usize, char)> = pattern.char_indices().collect();
    let flags = leading_flags(pattern);
    let multiline = sets_multiline(pattern);
    let mut source = String::with_capacity(pattern.len());
    let mut cuts = Vec::new();
    // The flags each open group (the pattern itself first) sets for what
    // follows in it, as scoped-flag openers (`(?i:`): its own scoped flags,
    // then those of the inline-flag groups seen in it so far.
    let mut levels: Vec<Vec<&str>> = vec![Vec::new()];
    let mut index = 0;
    while index < chars.len() {
        let (at, c) = chars[index];
        match c {
            '\\' => {
                let end = chars.get(index + 2).map_or(pattern.len(), |&(at, _)| at);
                source.push_str(&pattern[at..end]);
                index += 2;
            }
            '[' => {
                let end = class_end(&chars, index);
                let stop = chars.get(end).map_or(pattern.len(), |&(at, _)| at);
                source.push_str(&pattern[at..stop]);
                index = end;
            }
            '(' => {
                let rest = &pattern[at..];
                let kind = [
                    ("(?=", Kind::Ahead),
                    ("(?!", Kind::NotAhead),
                    ("(?<=", Kind::Behind),
                    ("(?<!", Kind::NotBehind),
                ]
                .into_iter()
                .find(|(opener, _)| rest.starts_with(opener));
                let Some((opener, kind)) = kind else {
                    let scoped = flag_spec(rest, ':');
                    if let Some(spec) = flag_spec(rest, ')').filter(|_| at >= flags.len())
                        && let Some(level) = levels.last_mut()
                    {
                        level.push(spec);
                    }
                    levels.push(scoped.into_iter().collect());
                    source.push(c);
                    index += 1;
                    continue;
                };
                if depth >= MAX_NESTING {
                    return Err(format!(
                        "lookarounds nested more than {MAX_NESTING} deep are not supported"
                    ));
                }
                let body_start = index + opener.chars().count();
                let close =
                    group_end(&chars, body_start).ok_or("missing ), unterminated lookaround")?;
                let body_from = chars.get(body_start).map_or(pattern.len(), |&(at, _)| at);
                let body = &pattern[body_from..chars[close].0];
                if kind.behind() && has_named_group(body) {
                    return Err("a named group inside a lookbehind is not supported".into());
                }
                if cuts.len() >= MAX_LOOKAROUNDS {
                    return Err(format!(
                        "more than {MAX_LOOKAROUNDS} lookarounds in one pattern are not supported"
                    ));
                }
                source.push_str(&format!("(?P<{}>)", marker_name(cuts.len())));
                let specs: Vec<&str> = levels.iter().flatten().copied().collect();
                let opened: String = specs.iter().map(|spec| format!("(?{spec}:")).collect();
                cuts.push(Cut {
                    kind,
                    body: format!("{flags}{opened}{body}{}", ")".repeat(specs.len())),
                });
                index = close + 1;
            }
            ')' => {
                if levels.len() > 1 {
                    levels.pop();
                }
                source.push(c);
                index += 1;
            }
            // Python's `$` (without MULTILINE): the end, or before a final
            // newline; the NFA's `$` is only the end.
            '$' if !multiline => {
                if cuts.len() >= MAX_LOOKAROUNDS {
                    return Err(format!(
                        "more than {MAX_LOOKAROUNDS} lookarounds in one pattern are not supported"
                    ));
                }
                source.push_str(&format!("(?P<{}>)", marker_name(cuts.len())));
                cuts.push(Cut {
                    kind: Kind::Ahead,
                    body: "\\n?\\z".into(),
                });
                index += 1;
            }
            c => {
                source.push(c);
                index += 1;
            }
        }
    }
    Ok(Split { source, cuts })
}

/// Whether an inline-flag group of `pattern` sets MULTILINE (`(?m)`,
/// `(?im:…)`), which keeps `$` the NFA's.
fn sets_multiline(pattern: &str) -> bool {
    pattern.match_indices("(?").any(|(at, _)| {
        let flags = &pattern[at + 2..];
        let len = flags
            .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
            .unwrap_or(flags.len());
        let on = flags[..len].split('-').next().unwrap_or_default();
        on.contains('m') && flags[len..].starts_with([')', ':'])
    })
}

/// The flags of a group opening `rest` with `(?flags` then `end`: `)` for
/// an inline-flag group (`(?i)`), `:` for a scoped-flag group (`(?-s:`).
fn flag_spec(rest: &str, end: char) -> Option<&str> {
    let flags = rest.strip_prefix("(?")?;
    let len = flags
        .find(|c: char| !(c.is_ascii_alphabetic() || c == '-'))
        .unwrap_or(flags.len());
    (len > 0 && flags[len..].starts_with(end)).then(|| &flags[..len])
}

/// A global inline-flag group at the very start (`(?i)`, `(?sx)`).
pub(crate) fn leading_flags(pattern: &str) -> &str {
    let Some(rest) = pattern.strip_prefix("(?") else {
        return "";
    };
    let len = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    if len > 0 && rest[len..].starts_with(')') {
        &pattern[..len + 3]
    } else {
        ""
    }
}

/// The index just past the character class opening at `start`.
fn class_end(chars: &[(usize, char)], start: usize) -> usize {
    let mut index = start + 1;
    if chars.get(index).is_some_and(|&(_, c)| c == '^') {
        index += 1;
    }
    // A `]` first in the class is a literal.
    if chars.get(index).is_some_and(|&(_, c)| c == ']') {
        index += 1;
    }
    while let Some(&(_, c)) = chars.get(index) {
        match c {
            '\\' => index += 2,
            ']' => return index + 1,
            _ => index += 1,
        }
    }
    chars.len()
}

/// The index of the `)` closing the group whose body starts at `start`.
fn group_end(chars: &[(usize, char)], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut index = start;
    while let Some(&(_, c)) = chars.get(index) {
        match c {
            '\\' => index += 2,
            '[' => index = class_end(chars, index),
            '(' => {
                depth += 1;
                index += 1;
            }
            ')' if depth == 0 => return Some(index),
            ')' => {
                depth -= 1;
                index += 1;
            }
            _ => index += 1,
        }
    }
    None
}

/// Whether `pattern` opens a named group (`(?P<name>` or `(?<name>`).
fn has_named_group(pattern: &str) -> bool {
    named_groups(pattern).next().is_some()
}

/// The names of `pattern`'s named groups in the order they open (Python's
/// group numbering), lookaround bodies included.
pub(crate) fn named_groups(pattern: &str) -> impl Iterator<Item = &str> {
    let chars: Vec<(usize, char)> = pattern.char_indices().collect();
    let mut names = Vec::new();
    let mut index = 0;
    while let Some(&(at, c)) = chars.get(index) {
        match c {
            '\\' => index += 2,
            '[' => index = class_end(&chars, index),
            '(' => {
                let rest = &pattern[at..];
                let opener = ["(?P<", "(?<"]
                    .into_iter()
                    .find(|opener| rest.starts_with(opener));
                if let Some(opener) = opener {
                    let name = &rest[opener.len()..];
                    if let Some(len) = name.find('>')
                        && !name.starts_with(['=', '!'])
                    {
                        names.push(&name[..len]);
                    }
                }
                index += 1;
            }
            _ => index += 1,
        }
    }
    names.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_outermost_lookarounds() {
        let split = split(r"a(?=b(?!c))[(?=]\(?<!x)(?<=d|e)", 0).unwrap();
        assert_eq!(
            split.source,
            format!(
                r"a(?P<{}>)[(?=]\(?<!x)(?P<{}>)",
                marker_name(0),
                marker_name(1)
            )
        );
        assert_eq!(split.cuts[0].kind, Kind::Ahead);
        assert_eq!(split.cuts[0].body, "b(?!c)");
        assert_eq!(split.cuts[1].kind, Kind::Behind);
        assert_eq!(split.cuts[1].body, "d|e");
    }

    #[test]
    fn carries_flags_in_force_and_refuses_the_rest() {
        assert_eq!(split("(?i)a(?=b)", 0).unwrap().cuts[0].body, "(?i)b");
        let body = |pattern| split(pattern, 0).unwrap().cuts[0].body.clone();
        assert_eq!(body("(?i:a(?=b))"), "(?i:b)");
        assert_eq!(body("(?s)(?i:x(?-s:a(?!b)))"), "(?s)(?i:(?-s:b))");
        assert_eq!(body("a(?i)b(?-i)c(?=d)"), "(?i:(?-i:d))");
        assert_eq!(body("(a(?i)b)(?=c)"), "c");
        assert_eq!(body("(?:(?x)a)(?=b)"), "b");
        assert!(
            split("(?<=(?P<x>a))b", 0)
                .unwrap_err()
                .contains("lookbehind")
        );
        assert!(split("a(?=b", 0).unwrap_err().contains("unterminated"));
        assert!(split("(?=a)", MAX_NESTING).unwrap_err().contains("nested"));
    }

    #[test]
    fn lists_named_groups_in_order() {
        let names: Vec<&str> = named_groups(r"(?P<a>x)(?=(?<b>y))[(?P<c>]\(?P<d>").collect();
        assert_eq!(names, ["a", "b"]);
    }
}
