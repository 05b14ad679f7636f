//! Which message-content format a template expects, detected as vLLM detects it.
//!
//! vLLM (`_detect_content_format` in `vllm/renderers/hf.py`) walks the Jinja AST: if
//! some loop iterates over a message's `content` (`{% for part in message['content'] %}`,
//! directly, through a macro parameter, or as a bare `content` variable), the template
//! takes OpenAI content parts and text parts stay a list; otherwise it takes strings
//! and text parts are joined with `"\n"`. This module reproduces that walk over the
//! template's tags: the statement forms it needs (`for`, `set`, `namespace(...)`,
//! `macro` and macro calls) are simple enough to read without a full parser.

/// The content format of a chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentFormat {
    /// Message content is a string; text parts are joined with `"\n"`.
    String,
    /// Message content is a list of `{"type": "text", "text": …}` parts.
    OpenAi,
}

impl ContentFormat {
    /// vLLM's name of the format (`string` or `openai`).
    pub fn as_str(self) -> &'static str {
        match self {
            ContentFormat::String => "string",
            ContentFormat::OpenAi => "openai",
        }
    }
}

/// One `{% … %}` statement of interest.
#[derive(Debug)]
enum Stmt<'a> {
    For {
        target: &'a str,
        iter: &'a str,
        macro_idx: Option<usize>,
    },
    Set {
        target: &'a str,
        expr: &'a str,
    },
}

struct Macro<'a> {
    name: &'a str,
    params: Vec<&'a str>,
}

/// Detects the content format of `source` (vLLM's `_detect_content_format`).
pub fn detect(source: &str) -> ContentFormat {
    let (stmts, macros) = scan(source);
    // Variables that hold `messages` or a slice/filter of it (BFS over assignments).
    let mut message_lists: Vec<String> = vec!["messages".to_owned()];
    let mut i = 0;
    while i < message_lists.len() {
        let related = message_lists[i].clone();
        for stmt in &stmts {
            let Stmt::Set { target, expr } = stmt else {
                continue;
            };
            let mut aliases: Vec<String> = Vec::new();
            if is_ident(target) {
                if is_access(expr, &related, None) {
                    aliases.push((*target).to_owned());
                } else if let Some(args) = expr
                    .trim()
                    .strip_prefix("namespace(")
                    .and_then(|r| r.strip_suffix(')'))
                {
                    for arg in split_top(args, ',') {
                        if let Some((key, value)) = split_kwarg(arg)
                            && is_access(value, &related, None)
                        {
                            aliases.push(format!("{target}.{key}"));
                        }
                    }
                }
            } else if is_dotted(target) && is_access(expr, &related, None) {
                aliases.push((*target).to_owned());
            }
            for alias in aliases {
                if !message_lists.contains(&alias) {
                    message_lists.push(alias);
                }
            }
        }
        i += 1;
    }
    // Loop variables that are single messages.
    let message_vars: Vec<&str> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::For { target, iter, .. }
                if message_lists.iter().any(|v| is_access(iter, v, None)) =>
            {
                Some(*target)
            }
            _ => None,
        })
        .collect();
    // Macro parameters that receive a message's content.
    let content_params: Vec<Vec<&str>> = macros
        .iter()
        .map(|m| {
            let mut params = Vec::new();
            for args in macro_calls(source, m.name) {
                for (pos, arg) in split_top(args, ',').into_iter().enumerate() {
                    let (param, value) = match split_kwarg(arg) {
                        Some((k, v)) if m.params.contains(&k) => (Some(k), v),
                        Some(_) => (None, arg),
                        None => (m.params.get(pos).copied(), arg),
                    };
                    if let Some(param) = param
                        && message_vars
                            .iter()
                            .any(|v| is_access(value, v, Some("content")))
                    {
                        params.push(param);
                    }
                }
            }
            params
        })
        .collect();
    let openai = stmts.iter().any(|s| match s {
        Stmt::For {
            iter, macro_idx, ..
        } => {
            let iter = iter.trim();
            message_vars
                .iter()
                .any(|v| is_access(iter, v, Some("content")))
                || match macro_idx {
                    Some(m) => is_ident(iter) && content_params[*m].contains(&iter),
                    None => iter == "content",
                }
        }
        Stmt::Set { .. } => false,
    });
    if openai {
        ContentFormat::OpenAi
    } else {
        ContentFormat::String
    }
}

/// Collects `for` and `set` statements (with the macro they are in) and macro signatures.
fn scan(source: &str) -> (Vec<Stmt<'_>>, Vec<Macro<'_>>) {
    let mut stmts = Vec::new();
    let mut macros = Vec::new();
    let mut current_macro: Option<usize> = None;
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("%}") else { break };
        let body = after[..end]
            .trim_start_matches(['-', '+'])
            .trim_end_matches(['-', '+'])
            .trim();
        rest = &after[end + 2..];
        let (keyword, tail) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
        let tail = tail.trim();
        match keyword {
            "for" => {
                if let Some((target, iter)) = split_keyword(tail, "in") {
                    let iter = strip_loop_suffix(iter);
                    stmts.push(Stmt::For {
                        target: target.trim(),
                        iter,
                        macro_idx: current_macro,
                    });
                }
            }
            "set" => {
                if let Some((target, expr)) = split_top_assign(tail) {
                    stmts.push(Stmt::Set {
                        target: target.trim(),
                        expr: expr.trim(),
                    });
                }
            }
            "macro" => {
                if let Some((name, args)) = tail.split_once('(') {
                    let args = args.rsplit_once(')').map(|(a, _)| a).unwrap_or(args);
                    let params = split_top(args, ',')
                        .into_iter()
                        .map(|a| split_kwarg(a).map(|(k, _)| k).unwrap_or(a.trim()))
                        .filter(|a| !a.is_empty())
                        .collect();
                    macros.push(Macro {
                        name: name.trim(),
                        params,
                    });
                    current_macro = Some(macros.len() - 1);
                }
            }
            "endmacro" => current_macro = None,
            _ => {}
        }
    }
    (stmts, macros)
}

/// The argument lists of every call `name(...)` in the source.
fn macro_calls<'a>(source: &'a str, name: &str) -> Vec<&'a str> {
    let mut calls = Vec::new();
    let pattern = format!("{name}(");
    let mut from = 0;
    while let Some(pos) = source[from..].find(&pattern) {
        let at = from + pos;
        from = at + pattern.len();
        let prev = source[..at].chars().next_back();
        if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            continue;
        }
        let args_start = from;
        if let Some(len) = matching_close(&source[args_start..]) {
            calls.push(&source[args_start..args_start + len]);
        }
    }
    calls
}

/// Length up to the `)` that closes an already opened `(`.
fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 1usize;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits at top-level occurrences of `sep` (outside brackets and strings).
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// `key=value` (not `==`) at top level.
fn split_kwarg(arg: &str) -> Option<(&str, &str)> {
    let (k, v) = split_top_assign(arg)?;
    let k = k.trim();
    is_ident(k).then_some((k, v.trim()))
}

/// Splits `target = expr` at the first top-level single `=`.
fn split_top_assign(s: &str) -> Option<(&str, &str)> {
    let bytes = s.as_bytes();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    for (i, &b) in bytes.iter().enumerate() {
        match (quote, b) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"') => quote = Some(b),
            (None, b'(' | b'[' | b'{') => depth += 1,
            (None, b')' | b']' | b'}') => depth -= 1,
            (None, b'=') if depth == 0 => {
                let prev = if i > 0 { bytes[i - 1] } else { b' ' };
                let next = bytes.get(i + 1).copied().unwrap_or(b' ');
                if next != b'=' && !matches!(prev, b'=' | b'!' | b'<' | b'>') {
                    return Some((&s[..i], &s[i + 1..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits `a KEYWORD b` at the first top-level standalone keyword.
fn split_keyword<'a>(s: &'a str, keyword: &str) -> Option<(&'a str, &'a str)> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, _) if depth == 0 && s[i..].starts_with(keyword) => {
                let before = s[..i].chars().next_back();
                let after = s[i + keyword.len()..].chars().next();
                if before.is_some_and(char::is_whitespace) && after.is_some_and(char::is_whitespace)
                {
                    return Some((&s[..i], &s[i + keyword.len()..]));
                }
            }
            _ => {}
        }
    }
    None
}

/// Drops a loop's `if` filter and `recursive` flag: only the iterable matters.
fn strip_loop_suffix(iter: &str) -> &str {
    let iter = iter.trim();
    let iter = iter
        .strip_suffix("recursive")
        .map(str::trim_end)
        .unwrap_or(iter);
    split_keyword(iter, "if")
        .map(|(i, _)| i.trim())
        .unwrap_or(iter)
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn is_dotted(s: &str) -> bool {
    s.split('.').all(is_ident)
}

/// vLLM's `_is_var_or_elems_access`: `expr` is `var` (or `var.key` / `var['key']`),
/// possibly filtered (`|f`), tested (`is t`) or sliced (`[a:b]`).
fn is_access(expr: &str, var: &str, key: Option<&str>) -> bool {
    let mut e = expr.trim();
    loop {
        let stripped = e.strip_prefix('(').and_then(|x| x.strip_suffix(')'));
        match stripped {
            Some(inner) if matching_close(&e[1..]) == Some(e.len() - 2) => e = inner.trim(),
            _ => break,
        }
    }
    if let Some((node, _)) = split_keyword(e, "is") {
        return is_access(node, var, key);
    }
    let filtered = split_top(e, '|');
    if filtered.len() > 1 {
        return is_access(filtered[0], var, key);
    }
    if e.ends_with(']')
        && let Some(open) = last_top_bracket(e)
        && split_top(&e[open + 1..e.len() - 1], ':').len() > 1
    {
        return is_access(&e[..open], var, key);
    }
    match key {
        None => e == var,
        Some(key) => {
            if let Some(base) = e.strip_suffix(key).and_then(|b| b.strip_suffix('.')) {
                return base.trim() == var;
            }
            for q in ['\'', '"'] {
                let suffix = format!("[{q}{key}{q}]");
                if let Some(base) = e.strip_suffix(suffix.as_str()) {
                    return base.trim() == var;
                }
            }
            false
        }
    }
}

/// Index of the `[` that opens the final `[...]` of `e`.
fn last_top_bracket(e: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in e.char_indices().rev() {
        match c {
            ']' | ')' | '}' => depth += 1,
            '[' | '(' | '{' => {
                depth -= 1;
                if depth == 0 {
                    return (c == '[').then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{ContentFormat, detect};

    #[test]
    fn loops_over_content_mean_openai() {
        assert_eq!(
            detect("{% for m in messages %}{{ m.content }}{% endfor %}"),
            ContentFormat::String
        );
        assert_eq!(
            detect(
                "{% for m in messages %}{% for c in m['content'] %}{{ c.text }}{% endfor %}{% endfor %}"
            ),
            ContentFormat::OpenAi
        );
        assert_eq!(
            detect(
                "{%- set msgs = messages[1:] %}{% for m in msgs if m.role %}{% for c in m.content | list %}{% endfor %}{% endfor %}"
            ),
            ContentFormat::OpenAi
        );
        assert_eq!(
            detect(
                "{% macro r(c) %}{% for p in c %}{% endfor %}{% endmacro %}{% for m in messages %}{{ r(m.content) }}{% endfor %}"
            ),
            ContentFormat::OpenAi
        );
        assert_eq!(
            detect("{% for p in content %}{% endfor %}"),
            ContentFormat::OpenAi
        );
    }
}
