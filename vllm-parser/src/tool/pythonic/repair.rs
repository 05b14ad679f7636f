//! vLLM's source rewrites for pythonic calls that do not parse as written
//! (`vllm/tool_parsers/utils.py`, used by `lfm2`): raw control characters in
//! strings, zero-padded integers, unescaped nested quotes and parameters
//! named after Python keywords. Each is a character-level pass over the text,
//! like vLLM's; Python's `str.isalpha` / `isalnum` / `isspace` are Rust's
//! Unicode `is_alphabetic` / `is_alphanumeric` and [`py_is_space`].

use crate::json::{self, PyJson};
use crate::text::py_is_space;

use super::ast::{KEYWORDS, first_expression};
use super::lexer::tokenize;

/// `rename_reserved_kwargs`' suffix for a keyword-named parameter.
const RESERVED_SUFFIX: &str = "_pyreservedkw_";
/// Characters after which a quote can close a string (`_QUOTE_FOLLOWERS`).
const QUOTE_FOLLOWERS: &[char] = &[',', ')', ']', '}', ':'];
/// Closing-quote candidates `escape_nested_quotes_in_strings` tries at most;
/// each costs a parse of the whole text, so more are treated as ambiguous.
const MAX_QUOTE_CANDIDATES: usize = 64;

fn is_quote(c: char) -> bool {
    c == '\'' || c == '"'
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `source` parses (`ast.parse`, within the expression subset).
pub(crate) fn parses(source: &str) -> bool {
    tokenize(source).is_some_and(|tokens| first_expression(&tokens).is_some())
}

/// `escape_ctrl_chars_in_strings`: `\n`, `\r`, `\t` and NUL inside string
/// literals written as escapes.
pub(crate) fn escape_ctrl_chars_in_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            None => {
                if is_quote(c) {
                    quote = Some(c);
                }
                out.push(c);
            }
            Some(_) if c == '\\' && i + 1 < chars.len() => {
                out.push(c);
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\0' => out.push_str("\\x00"),
                _ => out.push(c),
            },
        }
        i += 1;
    }
    out
}

/// The index after a string literal's contents from `i` (inside the string):
/// pushes the characters, stopping after the closing `quote`.
fn copy_string(chars: &[char], mut i: usize, quote: char, out: &mut String) -> usize {
    while i < chars.len() {
        let c = chars[i];
        out.push(c);
        if c == '\\' && i + 1 < chars.len() {
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        i += 1;
        if c == quote {
            break;
        }
    }
    i
}

/// `normalize_leading_zero_ints`: `07` → `7` outside strings (not `00`,
/// fractions, exponents or after a `.`).
pub(crate) fn normalize_leading_zero_ints(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_quote(c) {
            out.push(c);
            i = copy_string(&chars, i + 1, c, &mut out);
        } else if c.is_alphabetic() || c == '_' {
            let end = i + chars[i..].iter().take_while(|&&c| is_name_char(c)).count();
            out.extend(&chars[i..end]);
            i = end;
        } else if c.is_ascii_digit() {
            let end = i + chars[i..]
                .iter()
                .take_while(|&&c| c.is_ascii_digit() || c == '_')
                .count();
            let digits: String = chars[i..end].iter().filter(|&&c| c != '_').collect();
            let follower = chars.get(end).copied();
            let after_dot = i > 0 && chars[i - 1] == '.';
            let significant = digits.trim_start_matches('0');
            if digits.starts_with('0')
                && !significant.is_empty()
                && !after_dot
                && !matches!(follower, Some('.' | 'e' | 'E' | 'j' | 'J'))
            {
                out.push_str(significant);
            } else {
                out.extend(&chars[i..end]);
            }
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `rename_reserved_kwargs`: `from=` → `from_pyreservedkw_=` where a keyword
/// names a keyword argument (after `(` or `,`, before a single `=`); `None`
/// when nothing changed.
pub(crate) fn rename_reserved_kwargs(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut last_significant = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_quote(c) {
            out.push(c);
            last_significant = Some(c);
            i = copy_string(&chars, i + 1, c, &mut out);
        } else if c.is_alphabetic() || c == '_' {
            let end = i + chars[i..].iter().take_while(|&&c| is_name_char(c)).count();
            let name: String = chars[i..end].iter().collect();
            let look = end + chars[end..].iter().take_while(|&&c| py_is_space(c)).count();
            let is_keyword_argument = KEYWORDS.contains(&name.as_str())
                && chars.get(look) == Some(&'=')
                && chars.get(look + 1) != Some(&'=')
                && matches!(last_significant, Some('(' | ','));
            out.push_str(&name);
            if is_keyword_argument {
                out.push_str(RESERVED_SUFFIX);
                changed = true;
            }
            last_significant = chars.get(end - 1).copied();
            i = end;
        } else {
            out.push(c);
            if !py_is_space(c) {
                last_significant = Some(c);
            }
            i += 1;
        }
    }
    changed.then_some(out)
}

/// `restore_reserved_kwarg_names` on a call's arguments JSON: the text with
/// renamed keys restored (`json.dumps` again only when a key changed).
pub(crate) fn restore_reserved_kwarg_names(arguments: String) -> String {
    let Ok(PyJson::Dict(items)) = json::loads(&arguments) else {
        return arguments;
    };
    let restore = |key: &str| {
        key.strip_suffix(RESERVED_SUFFIX)
            .filter(|stem| KEYWORDS.contains(stem))
            .map(str::to_owned)
    };
    if !items.iter().any(|(key, _)| restore(key).is_some()) {
        return arguments;
    }
    let mut restored: Vec<(String, PyJson)> = Vec::with_capacity(items.len());
    for (key, value) in items {
        let key = restore(&key).unwrap_or(key);
        match restored.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => restored.push((key, value)),
        }
    }
    json::dumps(&PyJson::Dict(restored))
}

/// `_is_escaped`: preceded by an odd number of backslashes.
fn is_escaped(chars: &[char], i: usize) -> bool {
    chars[..i].iter().rev().take_while(|&&c| c == '\\').count() % 2 == 1
}

/// `escape_nested_quotes_in_strings`: the first string literal whose first
/// closing quote cannot close it (no `,` `)` `]` `}` `:` follows) is closed
/// at the one later quote that makes the text parse, its inner quotes
/// escaped. `None` when no string is broken, or zero or several quotes work.
pub(crate) fn escape_nested_quotes_in_strings(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let unescaped_quotes = |start: usize, quote: char| {
        let mut positions = Vec::new();
        let mut j = start;
        while j < chars.len() {
            if chars[j] == '\\' {
                j += 2;
                continue;
            }
            if chars[j] == quote {
                positions.push(j);
            }
            j += 1;
        }
        positions
    };
    let is_closer = |at: usize| {
        chars[at + 1..]
            .iter()
            .find(|&&c| !py_is_space(c))
            .is_some_and(|c| QUOTE_FOLLOWERS.contains(c))
    };
    let mut index = 0;
    while index < chars.len() {
        let quote = chars[index];
        if !is_quote(quote) {
            index += 1;
            continue;
        }
        let quotes = unescaped_quotes(index + 1, quote);
        let first = *quotes.first()?;
        if is_closer(first) {
            index = first + 1;
            continue;
        }
        let prefix: String = chars[..index].iter().collect();
        let mut winners = Vec::new();
        for (tried, close) in quotes.into_iter().filter(|&j| is_closer(j)).enumerate() {
            if tried == MAX_QUOTE_CANDIDATES || winners.len() > 1 {
                return None;
            }
            let mut candidate = prefix.clone();
            candidate.push(quote);
            for j in index + 1..close {
                if chars[j] == quote && !is_escaped(&chars, j) {
                    candidate.push('\\');
                }
                candidate.push(chars[j]);
            }
            candidate.push(quote);
            candidate.extend(&chars[close + 1..]);
            if parses(&escape_ctrl_chars_in_strings(&candidate)) {
                winners.push(candidate);
            }
        }
        return match winners.len() {
            1 => winners.pop(),
            _ => None,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_follow_vllm() {
        assert_eq!(
            escape_ctrl_chars_in_strings("f(a='x\ny', b=\"\\\"\t\")\n"),
            "f(a='x\\ny', b=\"\\\"\\t\")\n"
        );
        assert_eq!(
            normalize_leading_zero_ints("f(m=07, a=00, b=1.07, c=07.5, d=1e07, e='07', g=0_7)"),
            "f(m=7, a=00, b=1.07, c=07.5, d=1e07, e='07', g=7)"
        );
        assert_eq!(
            rename_reserved_kwargs("f(from=1, x=from_, in ='a', if==1, s='from=')").as_deref(),
            Some("f(from_pyreservedkw_=1, x=from_, in_pyreservedkw_ ='a', if==1, s='from=')")
        );
        assert_eq!(rename_reserved_kwargs("f(x=1)"), None);
        assert_eq!(
            restore_reserved_kwarg_names(
                r#"{"from_pyreservedkw_": 1, "x_pyreservedkw_": 2}"#.into()
            ),
            r#"{"from": 1, "x_pyreservedkw_": 2}"#
        );
        assert_eq!(
            escape_nested_quotes_in_strings("[run(c='sed -n '1,9p' f.py')]").as_deref(),
            Some(r"[run(c='sed -n \'1,9p\' f.py')]")
        );
        assert_eq!(escape_nested_quotes_in_strings("[f(a='x')]"), None);
    }
}
