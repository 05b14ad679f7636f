//! Tool calls in a Cohere Command action block
//! (`<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "f", "parameters": {…}}]`):
//! melody's `parse_actions` state machine with raw parameters.
//!
//! melody does not parse the block as JSON: it searches for the
//! `"tool_call_id": "` key, then the `"tool_name": "` key after it, then
//! `"parameters": {"` *anywhere after that* (and if found, the raw value
//! from the first `"parameters":` on, up to its first prefix that is valid
//! JSON, with up to 8 spaces of indentation removed per line); a call whose
//! keys come in another order or whose parameters are empty or not an object
//! has an empty name or arguments. These are its results.

use std::sync::LazyLock;

use crate::response_template::Pattern;

/// One call as melody accumulates it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ActionCall {
    pub index: usize,
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    BeforeTool,
    CallId,
    CallIdEnd,
    Name,
    NameEnd,
    RawParam,
}

fn pattern(regex: &str) -> Pattern {
    Pattern::new(regex).unwrap_or_else(|e| unreachable!("{e}"))
}

static CALL_ID: LazyLock<Pattern> = LazyLock::new(|| pattern(r#""tool_call(_id)?":\s*""#));
static NAME: LazyLock<Pattern> = LazyLock::new(|| pattern(r#""tool_name":\s*""#));
static PARAMS_OBJECT: LazyLock<Pattern> = LazyLock::new(|| pattern(r#""parameters":\s*\{\s*""#));
static PARAMS: LazyLock<Pattern> = LazyLock::new(|| pattern(r#""parameters":\s*"#));

/// Indentation melody removes from each line of raw parameters.
const INDENT_REMOVED: usize = 8;

/// The action state of one filter (it persists across action blocks).
#[derive(Debug)]
pub(crate) struct ActionParser {
    mode: Mode,
    index: usize,
    param_buffer: String,
    indent_removed: usize,
    line_has_text: bool,
    /// Deltas in order, merged by call index at the end.
    calls: Vec<ActionCall>,
}

impl ActionParser {
    pub(crate) fn new() -> Self {
        Self {
            mode: Mode::BeforeTool,
            index: 0,
            param_buffer: String::new(),
            indent_removed: 0,
            line_has_text: false,
            calls: Vec::new(),
        }
    }

    /// `parse_actions(s)`: returns how many bytes were consumed.
    pub(crate) fn parse(&mut self, s: &str) -> usize {
        if s.is_empty() || s.ends_with('\\') {
            return 0;
        }
        let mut at = 0;
        loop {
            let rest = &s[at..];
            let step = match self.mode {
                Mode::BeforeTool => self.find_key(rest, &CALL_ID, Mode::CallId),
                Mode::CallIdEnd => self.find_key(rest, &NAME, Mode::Name),
                Mode::CallId => self.string_value(rest, Mode::CallIdEnd, |call, v| call.id = v),
                Mode::Name => self.string_value(rest, Mode::NameEnd, |call, v| call.name = v),
                Mode::NameEnd => self.after_name(rest),
                Mode::RawParam => self.raw_param(rest),
            };
            match step {
                Some(used) => at += used,
                None => return at,
            }
            if at >= s.len() {
                return at;
            }
        }
    }

    /// The calls so far, by index (`aggregate`).
    pub(crate) fn calls(&self) -> Vec<ActionCall> {
        let mut merged: Vec<ActionCall> = Vec::new();
        for delta in &self.calls {
            let call = match merged.iter_mut().find(|c| c.index == delta.index) {
                Some(call) => call,
                None => {
                    merged.push(ActionCall {
                        index: delta.index,
                        ..ActionCall::default()
                    });
                    merged.last_mut().unwrap_or_else(|| unreachable!())
                }
            };
            if !delta.id.is_empty() {
                call.id.clone_from(&delta.id);
            }
            if !delta.name.is_empty() {
                call.name.clone_from(&delta.name);
            }
            call.arguments.push_str(&delta.arguments);
        }
        merged.sort_by_key(|c| c.index);
        merged
    }

    fn delta(&mut self, fill: impl FnOnce(&mut ActionCall)) {
        let mut call = ActionCall {
            index: self.index,
            ..ActionCall::default()
        };
        fill(&mut call);
        self.calls.push(call);
    }

    fn find_key(&mut self, s: &str, key: &Pattern, next: Mode) -> Option<usize> {
        let found = key.search(s, 0, false)?;
        self.mode = next;
        Some(found.end)
    }

    fn string_value(
        &mut self,
        s: &str,
        next: Mode,
        set: fn(&mut ActionCall, String),
    ) -> Option<usize> {
        let end = find_unescaped_quote(s)?;
        if end > 0 {
            let value = s[..end].to_owned();
            self.delta(|call| set(call, value));
        }
        self.mode = next;
        Some(end + 1)
    }

    fn after_name(&mut self, s: &str) -> Option<usize> {
        if PARAMS_OBJECT.search(s, 0, false).is_some() {
            self.mode = Mode::RawParam;
            if let Some(found) = PARAMS.search(s, 0, false) {
                return Some(found.end);
            }
        }
        // No (non-empty object) parameters: the call ends at the next `}`,
        // from which melody looks for the next call.
        let close = s.find('}')?;
        self.end_tool();
        Some(close)
    }

    fn raw_param(&mut self, s: &str) -> Option<usize> {
        match first_valid_json(&self.param_buffer, s) {
            None => {
                self.send_raw(s);
                self.param_buffer.push_str(s);
                Some(s.len())
            }
            Some(end) => {
                self.send_raw(&s[..end]);
                self.param_buffer.clear();
                self.end_tool();
                Some(end)
            }
        }
    }

    fn end_tool(&mut self) {
        self.mode = Mode::BeforeTool;
        self.index += 1;
    }

    /// `send_raw_param_chunk_without_indentation`.
    fn send_raw(&mut self, s: &str) {
        let mut kept = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '\n' => {
                    self.indent_removed = 0;
                    self.line_has_text = false;
                    kept.push(c);
                }
                c if c.is_whitespace() => {
                    if self.indent_removed < INDENT_REMOVED && !self.line_has_text {
                        self.indent_removed += 1;
                    } else {
                        kept.push(c);
                    }
                }
                c => {
                    self.line_has_text = true;
                    kept.push(c);
                }
            }
        }
        if !kept.is_empty() {
            self.delta(|call| call.arguments = kept);
        }
    }
}

/// `find_non_escaped_char(s, '"')`.
fn find_unescaped_quote(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    (0..bytes.len()).find(|&i| {
        bytes[i] == b'"' && bytes[..i].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
    })
}

/// `find_valid_json_value(buffer, s)`: the end in `s` of the shortest prefix
/// of `buffer + s` that serde_json accepts as a whole document.
fn first_valid_json(buffer: &str, s: &str) -> Option<usize> {
    let whole = format!("{buffer}{s}");
    let start = whole.len() - whole.trim_start().len();
    let bytes = whole.as_bytes();
    let candidate = match *bytes.get(start)? {
        b'0'..=b'9' => start + 1,
        b'-' => match bytes.get(start + 1) {
            Some(b'0'..=b'9') => start + 2,
            _ => return None,
        },
        b't' | b'f' | b'n' => {
            let word = ["true", "false", "null"]
                .into_iter()
                .find(|w| whole[start..].starts_with(w))?;
            start + word.len()
        }
        b'"' => start + 1 + find_unescaped_quote(&whole[start + 1..])? + 1,
        b'{' | b'[' => balanced_end(&whole, start)?,
        _ => return None,
    };
    serde_json::from_str::<serde_json::Value>(&whole[..candidate]).ok()?;
    candidate.checked_sub(buffer.len()).filter(|&end| end > 0)
}

/// Where the object or array starting at `start` closes (string-aware).
fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (i, b) in text.bytes().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}
