//! A tool region that is one JSON array of call objects (vLLM's
//! `tool_call_body_array`, Granite): `[{"name": …, "arguments": {…}}, …]`.
//!
//! Each `{…}` element is one call whose raw argument text is the element;
//! the array's `]` ends the region. Anything but whitespace, `,` and elements
//! where the array expects them turns the rest back into content.

use crate::engine::driver::Signal;

/// Where the array reader is.
#[derive(Debug, Clone, Default)]
pub struct ArrayBody {
    started: bool,
    in_element: bool,
    depth: usize,
    in_string: bool,
    escape: bool,
}

/// What [`ArrayBody::feed`] found.
pub enum ArrayEnd {
    /// The region goes on.
    Open,
    /// The region ended; the text from this byte offset on is content.
    Closed(usize),
}

impl ArrayBody {
    /// Whether an element (a call) is open.
    pub fn in_element(&self) -> bool {
        self.in_element
    }

    /// Read `text`, pushing call signals to `out`.
    pub fn feed(&mut self, text: &str, out: &mut Vec<Signal>) -> ArrayEnd {
        let mut run_start = None::<usize>;
        for (at, c) in text.char_indices() {
            if self.in_element {
                let start = *run_start.get_or_insert(at);
                if self.element_char(c) {
                    let end = at + c.len_utf8();
                    out.push(Signal::Args(text[start..end].to_owned()));
                    out.push(Signal::CallEnd);
                    run_start = None;
                    self.in_element = false;
                }
                continue;
            }
            match c {
                ' ' | '\t' | '\r' | '\n' => {}
                '[' if !self.started => self.started = true,
                ',' if self.started => {}
                '{' if self.started => {
                    out.push(Signal::CallStart);
                    self.in_element = true;
                    self.depth = 0;
                    self.in_string = false;
                    self.escape = false;
                    self.element_char(c);
                    run_start = Some(at);
                }
                ']' if self.started => {
                    *self = Self::default();
                    return ArrayEnd::Closed(at + 1);
                }
                _ => {
                    *self = Self::default();
                    return ArrayEnd::Closed(at);
                }
            }
        }
        if let Some(start) = run_start {
            out.push(Signal::Args(text[start..].to_owned()));
        }
        ArrayEnd::Open
    }

    /// One character of an element; whether it closed the element.
    fn element_char(&mut self, c: char) -> bool {
        if self.escape {
            self.escape = false;
        } else if self.in_string {
            match c {
                '\\' => self.escape = true,
                '"' => self.in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => self.in_string = true,
                '{' | '[' => self.depth += 1,
                '}' | ']' => {
                    self.depth = self.depth.saturating_sub(1);
                    return c == '}' && self.depth == 0;
                }
                _ => {}
            }
        }
        false
    }
}
