//! Streaming `tool_choice: "required"`: the calls of the JSON array
//! `[{"name": …, "parameters": …}, …]` the engine is held to, emitted as they appear.
//!
//! A port of vLLM's `_scan_required_tool_calls` / `extract_required_tool_call_streaming`
//! made incremental: one string- and nesting-aware pass over the text that records, for
//! each element of the top-level array, its `name` (once its string is complete) and the
//! span of its `parameters` value. A call is announced (id, name, arguments so far) as
//! soon as its name is known and its parameters have started; later deltas carry the
//! new argument text, which is the model's own text for the `parameters` value.
//! Only the element level is interpreted, so braces and quotes inside values cannot
//! confuse it; text after the array is ignored.

use vllm_parser::Event;

/// What the scanner expects next inside an element object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Key,
    Colon,
    Value,
    InString,
    InContainer,
    InScalar,
    AfterValue,
}

/// Where one element of the array sits in the text (byte offsets).
#[derive(Debug, Clone, Default)]
struct Span {
    name: Option<String>,
    args_start: Option<usize>,
    args_end: Option<usize>,
    /// Whether the call was announced, and how far its arguments were sent.
    announced: bool,
    args_sent: usize,
}

/// The incremental scanner of one choice.
#[derive(Debug, Clone)]
pub struct RequiredCalls {
    text: String,
    /// Next byte of `text` to scan.
    scanned: usize,
    depth: i64,
    in_string: bool,
    escaped: bool,
    string_start: usize,
    expect: Expect,
    key: Option<String>,
    value_start: usize,
    current: Option<usize>,
    done: bool,
    spans: Vec<Span>,
}

impl Default for RequiredCalls {
    fn default() -> Self {
        Self {
            text: String::new(),
            scanned: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            string_start: 0,
            expect: Expect::Key,
            key: None,
            value_start: 0,
            current: None,
            done: false,
            spans: Vec::new(),
        }
    }
}

impl RequiredCalls {
    /// Appends a delta of the output and returns the tool-call events it makes
    /// streamable; `new_id` makes the id of each announced call.
    pub fn push(&mut self, delta: &str, mut new_id: impl FnMut() -> String) -> Vec<Event> {
        self.text.push_str(delta);
        self.scan();
        let mut out = Vec::new();
        for (index, span) in self.spans.iter_mut().enumerate() {
            let (Some(name), Some(start)) = (&span.name, span.args_start) else {
                // Elements come in order: nothing later can be ready.
                break;
            };
            let end = span.args_end.unwrap_or(self.text.len());
            if !span.announced {
                span.announced = true;
                out.push(Event::ToolCallBegin {
                    index,
                    id: Some(new_id()),
                    name: name.clone(),
                });
                out.push(Event::ToolCallArguments {
                    index,
                    delta: self.text[start..end].to_owned(),
                });
                span.args_sent = end;
            } else if end > span.args_sent {
                out.push(Event::ToolCallArguments {
                    index,
                    delta: self.text[span.args_sent..end].to_owned(),
                });
                span.args_sent = end;
            }
        }
        out
    }

    fn end_value(&mut self, pos: usize) {
        let Some(current) = self.current else { return };
        match self.key.as_deref() {
            Some("parameters") => self.spans[current].args_end = Some(pos),
            Some("name") if self.expect == Expect::InString => {
                // A name that is not a valid JSON string never becomes ready, as the
                // whole-text path rejects the array.
                self.spans[current].name =
                    serde_json::from_str(&self.text[self.value_start..pos]).ok();
            }
            _ => {}
        }
        self.expect = Expect::AfterValue;
    }

    fn start_value(&mut self, pos: usize, state: Expect) {
        let Some(current) = self.current else { return };
        self.value_start = pos;
        if self.key.as_deref() == Some("parameters") {
            self.spans[current].args_start = Some(pos);
        }
        self.expect = state;
    }

    fn scan(&mut self) {
        while !self.done && self.scanned < self.text.len() {
            let i = self.scanned;
            let Some(ch) = self.text[i..].chars().next() else {
                break;
            };
            self.scanned += ch.len_utf8();
            let element = self.depth == 2 && self.current.is_some();
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if ch == '\\' {
                    self.escaped = true;
                } else if ch == '"' {
                    self.in_string = false;
                    if element {
                        match self.expect {
                            Expect::Key => {
                                self.key = Some(self.text[self.string_start + 1..i].to_owned());
                                self.expect = Expect::Colon;
                            }
                            Expect::InString => self.end_value(i + 1),
                            _ => {}
                        }
                    }
                }
                continue;
            }
            match ch {
                '"' => {
                    self.in_string = true;
                    self.string_start = i;
                    if element && self.expect == Expect::Value {
                        self.start_value(i, Expect::InString);
                    }
                }
                '{' | '[' => {
                    match self.depth {
                        0 if ch != '[' => {
                            self.done = true;
                            return;
                        }
                        1 if ch != '{' => {
                            self.done = true;
                            return;
                        }
                        1 => {
                            self.spans.push(Span::default());
                            self.current = Some(self.spans.len() - 1);
                            self.expect = Expect::Key;
                            self.key = None;
                        }
                        2 if element && self.expect == Expect::Value => {
                            self.start_value(i, Expect::InContainer);
                        }
                        _ => {}
                    }
                    self.depth += 1;
                }
                '}' | ']' => {
                    if element && self.expect == Expect::InScalar {
                        self.end_value(i);
                    }
                    self.depth -= 1;
                    if self.depth == 2
                        && self.current.is_some()
                        && self.expect == Expect::InContainer
                    {
                        self.end_value(i + 1);
                    } else if self.depth == 1 {
                        self.current = None;
                    } else if self.depth <= 0 {
                        self.done = true;
                        return;
                    }
                }
                _ if !element => {}
                ':' if self.expect == Expect::Colon => self.expect = Expect::Value,
                ':' => {}
                ',' => {
                    if self.expect == Expect::InScalar {
                        self.end_value(i);
                    }
                    self.expect = Expect::Key;
                    self.key = None;
                }
                c if c.is_whitespace() && self.expect == Expect::InScalar => self.end_value(i),
                c if c.is_whitespace() => {}
                _ if self.expect == Expect::Value => self.start_value(i, Expect::InScalar),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"[{"name": "get_weather", "parameters": {"city": "Pa\"ris", "n": [1, {"x": "}"}]}}, {"name": "f", "parameters": 3}] trailing"#;

    // The expected arguments are what vLLM 0.33.0's `extract_required_tool_call_streaming`
    // streams for TEXT at chunk sizes 1, 3 and whole (checked with the reference env).

    /// Feeds `text` in pieces of `size` characters; returns (names, arguments per call).
    fn run(size: usize) -> (Vec<String>, Vec<String>) {
        let mut scanner = RequiredCalls::default();
        let chars: Vec<char> = TEXT.chars().collect();
        let (mut names, mut args) = (Vec::new(), Vec::new());
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            for event in scanner.push(&piece, || "id".into()) {
                match event {
                    Event::ToolCallBegin { name, .. } => {
                        names.push(name);
                        args.push(String::new());
                    }
                    Event::ToolCallArguments { index, delta } => args[index].push_str(&delta),
                    _ => {}
                }
            }
        }
        (names, args)
    }

    #[test]
    fn every_chunking_gives_the_parameters_text() {
        for size in [1, 2, 3, 7, TEXT.len()] {
            let (names, args) = run(size);
            assert_eq!(names, ["get_weather", "f"], "chunk size {size}");
            assert_eq!(
                args,
                [r#"{"city": "Pa\"ris", "n": [1, {"x": "}"}]}"#, "3"],
                "chunk size {size}"
            );
        }
    }

    #[test]
    fn text_that_is_not_an_array_has_no_calls() {
        let mut scanner = RequiredCalls::default();
        assert!(
            scanner
                .push(r#"{"name": "f", "parameters": {}}"#, || "id".into())
                .is_empty()
        );
    }
}
