//! vLLM's `partial_json_loads(text, Allow.ALL)`: the `partial_json_parser`
//! package (0.2.1.1.post7, `loads` with its default `fix_fast`) completes
//! truncated JSON by appending closing quotes and brackets, then `json.loads`
//! reads the result; on "Extra data" vLLM falls back to `raw_decode`.
//!
//! A faithful port, including the library's quirks (Python's negative
//! indexing in its number completion, a key without a value completed as
//! `{"k"}` and refused), because vLLM's whole-text results depend on them.
//! Every exception the library or `json` raises is an `Err`.

use super::PyJson;
use super::load::{loads, loads_prefix};

/// Why the port gave up (the Python exception kinds it distinguishes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    /// `IndexError`, which the array and object completions catch.
    Index,
    /// `AssertionError` or `MalformedJSON` / `PartialJSON`.
    Malformed,
}

/// The rest of a value: complete (`True`) or to be completed with a suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rest {
    Complete,
    Suffix(String),
}

/// `CompleteResult`: `None` is the library's `False`.
type Completion = Result<Option<(isize, Rest)>, Fail>;

const NUMBER_CHARS: &str = "1234567890.-+eE";
const NUMBER_TAIL: &str = ".-+eE";

/// Python's `s[k]` (negative `k` counts from the end).
fn at(s: &[char], k: isize) -> Result<char, Fail> {
    let len = s.len() as isize;
    let k = if k < 0 { k + len } else { k };
    if (0..len).contains(&k) {
        Ok(s[k as usize])
    } else {
        Err(Fail::Index)
    }
}

/// Python's `s[..k]` bound for a possibly negative `k`.
fn slice_end(len: usize, k: isize) -> usize {
    if k < 0 {
        (len as isize + k).max(0) as usize
    } else {
        (k as usize).min(len)
    }
}

fn skip_blank(s: &[char], mut i: usize) -> usize {
    while s.get(i).is_some_and(|c| crate::text::py_is_space(*c)) {
        i += 1;
    }
    i
}

fn starts(s: &[char], word: &str) -> bool {
    s.len() >= word.chars().count() && word.chars().zip(s).all(|(a, b)| a == *b)
}

/// `word.startswith(s)`.
fn is_prefix_of(s: &[char], word: &str) -> bool {
    s.len() <= word.chars().count() && s.iter().zip(word.chars()).all(|(a, b)| *a == b)
}

/// `not_escaped` / `is_escaped`: the number of backslashes right before `i`.
fn backslashes_before(s: &[char], i: usize) -> usize {
    s[..i.min(s.len())]
        .iter()
        .rev()
        .take_while(|c| **c == '\\')
        .count()
}

/// `s.rfind(needle, start, end)` for a two-character needle.
fn rfind2(s: &[char], needle: [char; 2], start: usize, end: usize) -> Option<usize> {
    let end = end.min(s.len());
    (start..end.saturating_sub(1))
        .rev()
        .find(|&k| s[k] == needle[0] && s[k + 1] == needle[1])
}

fn complete_any(s: &[char], top_level: bool) -> Completion {
    let i = skip_blank(s, 0);
    let c = *s.get(i).ok_or(Fail::Index)?;
    match c {
        '"' => return complete_str(s),
        '0'..='9' => return complete_num(s, top_level),
        '[' => return complete_container(s, '[', ']'),
        '{' => return complete_container(s, '{', '}'),
        _ => {}
    }
    let word = |word: &'static str| -> Option<Completion> {
        if starts(s, word) {
            Some(Ok(Some((word.chars().count() as isize, Rest::Complete))))
        } else if is_prefix_of(s, word) {
            Some(Ok(Some((0, Rest::Suffix(word.to_owned())))))
        } else {
            None
        }
    };
    for literal in ["null", "true", "false", "Infinity"] {
        if let Some(result) = word(literal) {
            return result;
        }
    }
    if c == '-' {
        if s.len() == 1 {
            return Ok(None);
        } else if s[1] != 'I' {
            return complete_num(s, top_level);
        }
    }
    for literal in ["-Infinity", "NaN"] {
        if let Some(result) = word(literal) {
            return result;
        }
    }
    Err(Fail::Malformed)
}

fn complete_str(s: &[char]) -> Completion {
    if s.first() != Some(&'"') {
        return Err(Fail::Malformed);
    }
    let mut i = 1;
    while let Some(&c) = s.get(i) {
        if c == '\\' {
            if i + 1 == s.len() {
                break;
            }
            i += 2;
            continue;
        }
        if c == '"' {
            return Ok(Some(((i + 1) as isize, Rest::Complete)));
        }
        i += 1;
    }
    // Truncated inside the string: cut an unfinished escape, close the quote.
    for (escape, width) in [('u', 5), ('U', 9), ('x', 3)] {
        if let Some(at) = rfind2(s, ['\\', escape], i.saturating_sub(width), i)
            && backslashes_before(s, at).is_multiple_of(2)
        {
            return Ok(Some((at as isize, Rest::Suffix("\"".into()))));
        }
    }
    Ok(Some((i as isize, Rest::Suffix("\"".into()))))
}

fn complete_num(s: &[char], top_level: bool) -> Completion {
    let mut i: isize = 1;
    let len = s.len() as isize;
    while i < len && NUMBER_CHARS.contains(s[i as usize]) {
        i += 1;
    }
    let mut modified = false;
    while NUMBER_TAIL.contains(at(s, i - 1)?) {
        modified = true;
        i -= 1;
    }
    if modified || i == len && !top_level {
        Ok(Some((i, Rest::Suffix(String::new()))))
    } else {
        Ok(Some((i, Rest::Complete)))
    }
}

/// `complete_arr` / `complete_obj` (`open` is `[` or `{`): values (after a
/// key and `:` in an object) separated by commas. An `IndexError` anywhere
/// inside completes the container after its last complete value.
fn complete_container(s: &[char], open: char, close: char) -> Completion {
    if s.first() != Some(&open) {
        return Err(Fail::Malformed);
    }
    let closed = |tail: String| Rest::Suffix(tail + &close.to_string());
    let (mut i, mut j) = (1usize, 1usize);
    let result = (|| -> Completion {
        loop {
            j = skip_blank(s, j);
            if at(s, j as isize)? == close {
                return Ok(Some(((j + 1) as isize, Rest::Complete)));
            }
            if open == '{' {
                match complete_str(&s[j..])? {
                    Some((n, Rest::Complete)) => j = (j as isize + n) as usize,
                    _ => return Ok(Some((i as isize, closed(String::new())))),
                }
                j = skip_blank(s, j);
                if at(s, j as isize)? != ':' {
                    return Err(Fail::Malformed);
                }
                j = skip_blank(s, j + 1);
            }
            match complete_any(&s[j.min(s.len())..], false)? {
                None => return Ok(Some((i as isize, closed(String::new())))),
                // A complete value is at least one character long.
                Some((n, Rest::Complete)) => {
                    i = (j as isize + n) as usize;
                    j = i;
                }
                Some((n, Rest::Suffix(tail))) => return Ok(Some((j as isize + n, closed(tail)))),
            }
            j = skip_blank(s, j);
            match at(s, j as isize)? {
                ',' => j += 1,
                c if c == close => return Ok(Some(((j + 1) as isize, Rest::Complete))),
                _ => return Err(Fail::Malformed),
            }
        }
    })();
    match result {
        Err(Fail::Index) => Ok(Some((i as isize, closed(String::new())))),
        other => other,
    }
}

/// `_fix`: the kept prefix of `s` and the completion suffix.
fn fix(s: &[char], top_level: bool) -> Result<(String, String), Fail> {
    let start = s
        .iter()
        .take_while(|c| crate::text::py_is_space(**c))
        .count();
    let end = s.len()
        - s[start..]
            .iter()
            .rev()
            .take_while(|c| crate::text::py_is_space(**c))
            .count();
    let (index, rest) = complete_any(&s[start..end], top_level)
        .map_err(|_| Fail::Malformed)?
        .ok_or(Fail::Malformed)?;
    let head: String = s[..slice_end(s.len(), index)].iter().collect();
    let tail = match rest {
        Rest::Complete => String::new(),
        Rest::Suffix(tail) => tail,
    };
    Ok((head, tail))
}

/// Python's `head[1:]` (the first character is an ASCII bracket or absent).
fn after_first(head: &str) -> &str {
    head.get(1..).unwrap_or("")
}

fn closers(stack: &[(usize, char)]) -> String {
    stack
        .iter()
        .rev()
        .map(|(_, c)| if *c == '{' { '}' } else { ']' })
        .collect()
}

fn text(s: &[char]) -> String {
    s.iter().collect()
}

/// `s.rfind(c, start, end)`.
fn rfind(s: &[char], c: char, start: usize, end: usize) -> Option<usize> {
    let end = end.min(s.len());
    (start.min(end)..end).rev().find(|&k| s[k] == c)
}

/// `fix_fast(text, Allow.ALL)`: the completed JSON text.
fn fix_fast(s: &[char]) -> Result<String, Fail> {
    let tokens: Vec<(usize, char)> = s
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, '"' | '[' | ']' | '{' | '}'))
        .map(|(i, c)| (i, *c))
        .collect();
    if tokens.first().is_none_or(|t| t.1 == '"') {
        let (head, tail) = fix(s, true)?;
        return Ok(head + &tail);
    }
    let mut stack: Vec<(usize, char)> = Vec::new();
    let (mut in_string, mut string_start, mut string_end) = (false, -1isize, -1isize);
    for &(i, c) in &tokens {
        if c == '"' {
            if !in_string {
                in_string = true;
                string_start = i as isize;
            } else if backslashes_before(s, i).is_multiple_of(2) {
                in_string = false;
                string_end = i as isize;
            }
        } else if !in_string {
            match c {
                '}' | ']' => {
                    let (_, open) = stack.pop().ok_or(Fail::Index)?;
                    if (open == '{') != (c == '}') {
                        return Err(Fail::Malformed);
                    }
                }
                _ => stack.push((i, c)),
            }
        }
    }
    let Some(&(top_at, top)) = stack.last() else {
        return Ok(text(s));
    };
    let join = |head: String, tail: &str, stack: &[(usize, char)]| head + tail + &closers(stack);
    let inner = &stack[..stack.len() - 1];
    if in_string {
        let start = string_start as usize;
        if top == '[' {
            let (head, tail) = fix(&s[start..], false)?;
            return Ok(join(text(&s[..start]) + &head, &tail, &stack));
        }
        let from = (string_end.max(top_at as isize) + 1) as usize;
        let between = if from <= start {
            &s[from..start]
        } else {
            &[][..]
        };
        if between.contains(&',') {
            let comma = rfind(s, ',', from - 1, start).ok_or(Fail::Malformed)?;
            let mut wrapped = vec![top];
            wrapped.extend_from_slice(&s[comma + 1..]);
            let (head, tail) = fix(&wrapped, false)?;
            return Ok(join(text(&s[..comma]) + after_first(&head), &tail, inner));
        }
        if between.contains(&':') {
            let (head, tail) = fix(&s[start..], false)?;
            return Ok(join(text(&s[..start]) + &head, &tail, &stack));
        }
        return Ok(join(text(&s[..start]), "", &stack));
    }
    let (last_at, last) = *tokens.last().ok_or(Fail::Index)?;
    let comma_from = (string_end.max(last_at as isize) + 1) as usize;
    // `head[1:] + tail[:-1]` blank: the completed element is empty.
    let empty = |head: &str, tail: &str| {
        let mut tail: Vec<char> = tail.chars().collect();
        tail.pop();
        after_first(head).is_empty() && crate::text::py_is_blank(&text(&tail))
    };
    if let Some(comma) = rfind(s, ',', comma_from, s.len()) {
        if crate::text::py_is_blank(&text(&s[comma + 1..])) {
            return Ok(join(text(&s[..comma]), "", &stack));
        }
        if top != '[' {
            return Err(Fail::Malformed);
        }
        let mut wrapped = vec![top];
        wrapped.extend_from_slice(&s[comma + 1..]);
        let (head, tail) = fix(&wrapped, false)?;
        let keep = if empty(&head, &tail) {
            comma
        } else {
            comma + 1
        };
        return Ok(join(text(&s[..keep]) + after_first(&head), &tail, inner));
    }
    match last {
        ']' | '}' => {
            if !crate::text::py_is_blank(&text(&s[last_at + 1..])) {
                return Err(Fail::Malformed);
            }
            Ok(join(text(s), "", &stack))
        }
        '[' | '{' => {
            let (head, tail) = fix(&s[last_at..], false)?;
            Ok(join(text(&s[..last_at]) + &head, &tail, inner))
        }
        _ if top == '[' => Ok(join(text(s), "", &stack)),
        _ => {
            let start = string_start as usize;
            let colon = rfind(s, ':', slice_end(s.len(), string_end), s.len());
            let Some(comma) = rfind(s, ',', top_at + 1, start) else {
                let (head, tail) = fix(&s[top_at..], false)?;
                return Ok(join(text(&s[..top_at]) + &head, &tail, inner));
            };
            let mut wrapped = vec!['{'];
            wrapped.extend_from_slice(&s[comma + 1..]);
            if colon.is_none() {
                if rfind(s, ':', top_at.max(comma) + 1, start).is_some() {
                    return Ok(join(text(s), "", &stack));
                }
                let (head, tail) = fix(&wrapped, false)?;
                return Ok(if empty(&head, &tail) {
                    join(text(&s[..comma]) + after_first(&head), &tail, inner)
                } else {
                    join(text(&s[..comma + 1]) + after_first(&head), &tail, &stack)
                });
            }
            if colon.is_some_and(|colon| colon <= comma) {
                return Err(Fail::Malformed);
            }
            let (head, tail) = fix(&wrapped, false)?;
            let keep = if empty(&head, &tail) {
                comma
            } else {
                comma + 1
            };
            Ok(join(text(&s[..keep]) + after_first(&head), &tail, inner))
        }
    }
}

/// vLLM's `partial_json_loads(text, Allow.ALL)[0]`: the value of possibly
/// truncated JSON, or `None` where Python raises.
///
/// ```
/// use vllm_parser::json::{dumps, loads_partial};
/// let value = loads_partial(r#"[{"f": {"city": "Par"#).unwrap();
/// assert_eq!(dumps(&value), r#"[{"f": {"city": "Par"}}]"#);
/// ```
pub fn loads_partial(text: &str) -> Option<PyJson> {
    let chars: Vec<char> = text.chars().collect();
    let completed = fix_fast(&chars).ok()?;
    match loads(&completed) {
        Ok(value) => Some(value),
        // `JSONDecoder().raw_decode(text)`: no leading whitespace allowed.
        Err(err) if err.reason == "Extra data" => {
            if text.starts_with([' ', '\t', '\n', '\r']) {
                return None;
            }
            loads_prefix(text).ok().map(|(value, _)| value)
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> Option<String> {
        fix_fast(&text.chars().collect::<Vec<_>>()).ok()
    }

    #[test]
    fn completes_like_partial_json_parser() {
        assert_eq!(
            fixed(r#"[{"f": {"a": "Par"#).as_deref(),
            Some(r#"[{"f": {"a": "Par"}}]"#)
        );
        assert_eq!(
            fixed(r#"[{"f": {"a": 1, "b"#).as_deref(),
            Some(r#"[{"f": {"a": 1}}]"#)
        );
        assert_eq!(
            fixed(r#"[{"f": {"a": 12"#).as_deref(),
            Some(r#"[{"f": {"a": 12}}]"#)
        );
        assert_eq!(
            fixed(r#"[{"f": {"a": tr"#).as_deref(),
            Some(r#"[{"f": {"a": true}}]"#)
        );
        assert_eq!(fixed(r#"[1, 2,"#).as_deref(), Some("[1, 2]"));
        assert_eq!(fixed(r#""ab\u00"#).as_deref(), Some(r#""ab""#));
        assert_eq!(fixed("[1]]"), None);
        assert_eq!(
            loads_partial("[1, 2"),
            Some(PyJson::List(vec![
                PyJson::Int("1".into()),
                PyJson::Int("2".into())
            ]))
        );
        assert_eq!(loads_partial("garbage"), None);
    }
}
