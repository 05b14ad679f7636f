//! Where a streamed JSON object or array ends, found in O(delta).

/// Tracks the nesting of a JSON object or array arriving in pieces, to find where
/// it closes without re-reading what came before.
///
/// It follows brackets and strings only (no validation): feed text starting at the
/// opening `{` or `[`; [`feed`](Self::feed) returns the byte offset within that
/// piece just past the matching close. Then validate the whole value once with
/// [`loads`](crate::json::loads). Parsers for formats like `[{…}, {…}]` or
/// `{…}; {…}` use it to know when a call is complete.
///
/// ```
/// use vllm_parser::json::Extent;
/// let mut extent = Extent::new();
/// assert_eq!(extent.feed(r#"{"a": "}"#), None); // the `}` is inside a string
/// assert_eq!(extent.feed(r#"", "b": [1]} tail"#), Some(12));
/// ```
#[derive(Debug, Default, Clone)]
pub struct Extent {
    depth: usize,
    in_string: bool,
    escaped: bool,
    done: bool,
}

impl Extent {
    /// A tracker expecting the opening bracket.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the value has closed.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Nesting depth so far (0 before the opening bracket and after the close).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Feed the next piece; `Some(offset)` past the closing bracket once it appears
    /// in this piece. Text before the opening bracket is skipped; after the value
    /// closed, further pieces return `None`.
    pub fn feed(&mut self, text: &str) -> Option<usize> {
        if self.done {
            return None;
        }
        for (at, byte) in text.bytes().enumerate() {
            if self.in_string {
                match byte {
                    _ if self.escaped => self.escaped = false,
                    b'\\' => self.escaped = true,
                    b'"' => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' if self.depth > 0 => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' if self.depth > 0 => {
                    self.depth -= 1;
                    if self.depth == 0 {
                        self.done = true;
                        return Some(at + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_split_finds_the_same_end() {
        let text = r#"[{"a": "x\"]}", "b": {"c": []}}, "\\"] rest"#;
        let end = text.find(" rest").unwrap();
        for split in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut extent = Extent::new();
            let found = match extent.feed(&text[..split]) {
                Some(at) => at,
                None => split + extent.feed(&text[split..]).expect("closes"),
            };
            assert_eq!(found, end, "split at {split}");
        }
    }
}
