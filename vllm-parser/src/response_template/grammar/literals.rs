//! Delimiter regexes read as the literal strings they match.
//!
//! A structural tag needs the exact strings that open and close each region,
//! while a template may write its delimiters as regexes. vLLM expands the
//! simple ones (`_literals` in `vllm/parser/response_template_grammar.py`):
//! plain characters, the escapes `\n` `\r` `\t` and escaped punctuation,
//! `(?:…)` groups with `|` alternatives, `?` after any piece, `^` only where
//! the message starts, and one final `(?=…)` lookahead where the caller
//! allows it — at most [`MAX_LITERALS`] strings, else nothing. Anything else
//! (classes, `\s`, `*`, `+`, `{…}`) makes the delimiter underivable. Indexes
//! are in characters, as Python's are.

use super::super::Pattern;

/// Stands for `^` while expanding (vLLM's `_START`).
const START: char = '\0';
/// Precedes the text of a final lookahead (vLLM's `_AHEAD`).
pub(crate) const AHEAD: char = '\u{1}';
/// vLLM's bound on the strings expanded from one pattern.
const MAX_LITERALS: usize = 16;
/// Python's `_REGEX_META`.
const META: &str = ".^$*+?{}[]\\|()";

/// `_literals(pattern, message_start=…, lookahead=…)`.
pub(crate) fn literals(pattern: &str, message_start: bool, lookahead: bool) -> Option<Vec<String>> {
    let chars: Vec<char> = pattern.chars().collect();
    let (literals, index) = alternatives(&chars, 0, 0);
    let literals = literals?;
    if index != chars.len() {
        return None;
    }
    let allowed = usize::from(lookahead);
    if literals
        .iter()
        .any(|l| l.chars().filter(|&c| c == AHEAD).count() > allowed)
    {
        return None;
    }
    if !message_start {
        return (!literals.iter().any(|l| l.contains(START))).then_some(literals);
    }
    Some(
        literals
            .iter()
            .filter(|l| !l.chars().skip(1).any(|c| c == START) && l.as_str() != "\0")
            .map(|l| l.strip_prefix(START).unwrap_or(l).to_owned())
            .collect(),
    )
}

/// Nesting is bounded so that a hostile pattern cannot exhaust the stack
/// (deeper groups are underivable here; Python's recursion limit stops vLLM
/// near 500 levels).
const MAX_DEPTH: usize = 256;

fn alternatives(p: &[char], mut index: usize, depth: usize) -> (Option<Vec<String>>, usize) {
    if depth > MAX_DEPTH {
        return (None, index);
    }
    let mut out: Vec<String> = Vec::new();
    loop {
        let (branch, next) = concatenation(p, index, depth);
        index = next;
        let Some(branch) = branch else {
            return (None, index);
        };
        out.extend(branch);
        if p.get(index) != Some(&'|') {
            break;
        }
        index += 1;
    }
    let mut unique: Vec<String> = Vec::with_capacity(out.len());
    for literal in out {
        if !unique.contains(&literal) {
            unique.push(literal);
        }
    }
    ((unique.len() <= MAX_LITERALS).then_some(unique), index)
}

fn starts_with(p: &[char], index: usize, text: &str) -> bool {
    (index..)
        .zip(text.chars())
        .all(|(at, c)| p.get(at) == Some(&c))
}

fn concatenation(p: &[char], mut index: usize, depth: usize) -> (Option<Vec<String>>, usize) {
    let mut literals = vec![String::new()];
    while index < p.len() && !matches!(p[index], '|' | ')') {
        let mut atom: Vec<String>;
        if starts_with(p, index, "(?:") || starts_with(p, index, "(?=") {
            let ahead = p[index + 2] == '=';
            let (inner, next) = alternatives(p, index + 3, depth + 1);
            index = next;
            let Some(inner) = inner else {
                return (None, index);
            };
            if p.get(index) != Some(&')') {
                return (None, index);
            }
            index += 1;
            atom = if ahead {
                inner.into_iter().map(|l| format!("{AHEAD}{l}")).collect()
            } else {
                inner
            };
        } else if p[index] == '\\' && index + 1 < p.len() {
            let escaped = p[index + 1];
            let literal = match escaped {
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                c if c.is_alphanumeric() => return (None, index),
                c => c,
            };
            atom = vec![literal.to_string()];
            index += 2;
        } else if p[index] == '^' {
            atom = vec![START.to_string()];
            index += 1;
        } else if META.contains(p[index]) {
            return (None, index);
        } else {
            atom = vec![p[index].to_string()];
            index += 1;
        }
        if p.get(index) == Some(&'?') {
            atom.insert(0, String::new());
            index += 1;
        }
        // A lookahead reads as a literal only at the end of the pattern.
        if literals.iter().any(|prefix| prefix.contains(AHEAD)) {
            return (None, index);
        }
        literals = literals
            .iter()
            .flat_map(|prefix| atom.iter().map(move |suffix| format!("{prefix}{suffix}")))
            .collect();
        if literals.len() > MAX_LITERALS {
            return (None, index);
        }
    }
    (Some(literals), index)
}

/// `_split_group`: a pattern cut around its named group `name` into the
/// text before it, the group's body and the text after it.
pub(crate) fn split_group<'p>(pattern: &'p str, name: &str) -> Option<(&'p str, &'p str, &'p str)> {
    let opener = format!("(?P<{name}>");
    let start = pattern.find(&opener)?;
    let bytes = pattern.as_bytes();
    let (mut depth, mut in_class, mut index) = (0i64, false, start);
    // Delimiter syntax is ASCII: a byte scan never cuts inside a character
    // where it slices.
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'\\' {
            index += 2;
            continue;
        }
        if in_class {
            in_class = byte != b']';
        } else if byte == b'[' {
            in_class = true;
        } else if byte == b'(' {
            depth += 1;
        } else if byte == b')' {
            depth -= 1;
            if depth == 0 {
                let body = pattern.get(start + opener.len()..index)?;
                return Some((&pattern[..start], body, &pattern[index + 1..]));
            }
        }
        index += 1;
    }
    None
}

/// `_escape`: a backslash before every regex metacharacter.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if META.contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `_class_escape`: a character inside an XGrammar character class.
pub(crate) fn class_escape(c: char) -> String {
    match c {
        '\t' => "\\t".into(),
        '\n' => "\\n".into(),
        '\r' => "\\r".into(),
        '\\' | ']' | '^' | '-' | '[' => format!("\\{c}"),
        c => c.to_string(),
    }
}

/// `_continuing`: `literals` plus, for each that starts with a message-start
/// anchor, the rest after the anchor where the `opener` (a regex source)
/// matches it from some index on. `None` when a regex cannot be compiled
/// here (vLLM compiled it).
pub(crate) fn continuing(
    literals: Option<Vec<String>>,
    anchors: Option<&[String]>,
    opener: &str,
) -> Result<Option<Vec<String>>, String> {
    let (Some(literals), Some(anchors)) = (literals.as_ref(), anchors) else {
        return Ok(literals);
    };
    if literals.is_empty() || anchors.is_empty() {
        return Ok(Some(literals.clone()));
    }
    let whole = Pattern::to_end(opener)?;
    let mut out = literals.clone();
    for literal in literals {
        for anchor in anchors {
            let Some(rest) = literal.strip_prefix(anchor.as_str()) else {
                continue;
            };
            if rest.is_empty() {
                continue;
            }
            let found = rest
                .char_indices()
                .any(|(at, _)| whole.matches_from(rest, at));
            if found && !out.iter().any(|l| l == rest) {
                out.push(rest.to_owned());
            }
        }
    }
    Ok(Some(out))
}

/// `_other_names`: a regex for the names `pattern` (a tool opener's name
/// group) matches besides `names`, or `None` if `pattern` is no repeated
/// character class this can negate (`\w+`, `\S+`, `[^…]+`).
pub(crate) fn other_names(pattern: &str, names: &[&str]) -> Option<String> {
    if names.is_empty() {
        return Some(pattern.to_owned());
    }
    let negated = match pattern {
        "\\w+" => "\\W",
        "\\S+" => "\\s",
        _ => {
            let inner = pattern.strip_prefix("[^")?.strip_suffix("]+")?;
            negatable_class(inner).then_some(inner)?
        }
    };
    let mut trie = Trie::default();
    for name in names {
        trie.insert(name);
    }
    Some(trie.rest(0, true, negated))
}

/// `(?:\\.|[^\]\\])+` in full.
fn negatable_class(inner: &str) -> bool {
    let mut chars = inner.chars();
    let mut any = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => return false,
            '\\' => {}
            ']' => return false,
            _ => {}
        }
        any = true;
    }
    any
}

/// The tool names as a trie, children in insertion order (a Python dict's).
#[derive(Default)]
struct Trie {
    nodes: Vec<TrieNode>,
}

#[derive(Default)]
struct TrieNode {
    children: Vec<(char, usize)>,
    terminal: bool,
}

impl Trie {
    fn insert(&mut self, name: &str) {
        if self.nodes.is_empty() {
            self.nodes.push(TrieNode::default());
        }
        let mut node = 0;
        for c in name.chars() {
            node = match self.nodes[node].children.iter().find(|(k, _)| *k == c) {
                Some(&(_, child)) => child,
                None => {
                    self.nodes.push(TrieNode::default());
                    let child = self.nodes.len() - 1;
                    self.nodes[node].children.push((c, child));
                    child
                }
            };
        }
        self.nodes[node].terminal = true;
    }

    /// `rest(node, first)`: the rest of a name past `node` that ends on none
    /// of the names.
    fn rest(&self, node: usize, first: bool, negated: &str) -> String {
        let other = |chars: &[char]| {
            let mut sorted = chars.to_vec();
            sorted.sort_unstable();
            let escaped: String = sorted.into_iter().map(class_escape).collect();
            format!("[^{negated}{escaped}]")
        };
        let this = &self.nodes[node];
        let next: Vec<char> = this.children.iter().map(|(c, _)| *c).collect();
        let mut branches = vec![format!("{}{}*", other(&next), other(&[]))];
        for &(c, child) in &this.children {
            branches.push(format!(
                "{}{}",
                escape(&c.to_string()),
                self.rest(child, false, negated)
            ));
        }
        let optional = if first || this.terminal { "" } else { "?" };
        format!("(?:{}){optional}", branches.join("|"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_like_vllm() {
        assert_eq!(
            literals(r"\n?<call>", false, false).unwrap(),
            ["<call>", "\n<call>"]
        );
        assert_eq!(
            literals(r"(?:a|b)c?", false, false).unwrap(),
            ["a", "ac", "b", "bc"]
        );
        assert_eq!(literals(r"\s*x", false, false), None);
        assert_eq!(literals(r"^|<a>", false, false), None);
        assert_eq!(literals(r"^|<a>", true, false).unwrap(), ["<a>"]);
        assert_eq!(literals(r"^<a>", true, false).unwrap(), ["<a>"]);
        assert_eq!(
            literals(r"</v>(?=<k>)", false, true).unwrap(),
            ["</v>\u{1}<k>"]
        );
        assert_eq!(literals(r"(?=<k>)x", false, true), None);
        assert_eq!(literals("a)", false, false), None);
        assert_eq!(literals("\\", false, false), None);
    }

    #[test]
    fn splits_a_named_group() {
        assert_eq!(
            split_group(r"<\|call>(?P<name>[^)(]+)(x)", "name"),
            Some((r"<\|call>", "[^)(]+", "(x)"))
        );
        assert_eq!(split_group("(?P<name>a", "name"), None);
        assert_eq!(split_group("(?P<name>\\", "name"), None);
    }

    #[test]
    fn other_names_exclude_the_given_ones() {
        assert_eq!(other_names(r"\w+", &[]).unwrap(), r"\w+");
        assert_eq!(other_names("[a-z]+", &["f"]), None);
        assert_eq!(
            other_names(r"\w+", &["ab"]).unwrap(),
            r"(?:[^\Wa][^\W]*|a(?:[^\Wb][^\W]*|b(?:[^\W][^\W]*))?)"
        );
        assert_eq!(
            other_names("[^\"\\n]+", &["a", "ab", "b"]).unwrap(),
            r#"(?:[^"\nab][^"\n]*|a(?:[^"\nb][^"\n]*|b(?:[^"\n][^"\n]*))|b(?:[^"\n][^"\n]*))"#
        );
    }
}
