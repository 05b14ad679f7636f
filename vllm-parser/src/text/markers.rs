//! Incremental search for marker strings (`<tool_call>`, `</think>`, …) in streamed
//! text, holding back a suffix that may be the start of a marker.

use memchr::memmem;

/// What [`MarkerScanner::next`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text that is certainly not part of any of the markers searched for.
    Text(&'a str),
    /// The marker with this index in the searched list; its text is consumed.
    Marker(usize),
}

/// A buffer of not-yet-classified text, scanned for markers incrementally.
///
/// Push each delta with [`push`](Self::push), then call [`next`](Self::next) with
/// the markers that matter in the caller's current state until it returns `None`.
/// Text up to the earliest marker (or up to a suffix that could still become a
/// marker) is released; the held-back suffix is at most the longest marker minus
/// one byte, so the cost per delta does not grow with what came before.
/// [`finish`](Self::finish) releases the rest at the end of the output.
///
/// ```
/// use vllm_parser::text::{MarkerScanner, Piece};
/// let mut scanner = MarkerScanner::default();
/// let markers = ["</think>"];
/// scanner.push("plan</th");
/// assert_eq!(scanner.next(&markers), Some(Piece::Text("plan")));
/// assert_eq!(scanner.next(&markers), None); // "</th" is held back
/// scanner.push("ink>answer");
/// assert_eq!(scanner.next(&markers), Some(Piece::Marker(0)));
/// assert_eq!(scanner.next(&markers), Some(Piece::Text("answer")));
/// ```
#[derive(Debug, Default, Clone)]
pub struct MarkerScanner {
    buffer: String,
    /// Start of the unconsumed text in `buffer`.
    start: usize,
}

impl MarkerScanner {
    /// An empty scanner.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append streamed text.
    pub fn push(&mut self, text: &str) {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.push_str(text);
    }

    /// The unconsumed text (held back or not yet scanned).
    pub fn pending(&self) -> &str {
        &self.buffer[self.start..]
    }

    /// The next piece of the pending text when searching for `markers`.
    ///
    /// At equal positions the longest marker wins; empty markers never match.
    /// Returns `None` when nothing can be released until more text arrives.
    pub fn next<'s>(&'s mut self, markers: &[&str]) -> Option<Piece<'s>> {
        let pending = &self.buffer[self.start..];
        if pending.is_empty() {
            return None;
        }
        let end = match earliest_marker(pending.as_bytes(), markers) {
            Some((0, index)) => {
                self.start += markers[index].len();
                return Some(Piece::Marker(index));
            }
            Some((pos, _)) => pos,
            None => pending.len() - partial_marker_suffix(pending, markers),
        };
        if end == 0 {
            return None;
        }
        let text = &self.buffer[self.start..self.start + end];
        self.start += end;
        Some(Piece::Text(text))
    }

    /// Release everything pending (end of output) and reset.
    pub fn finish(&mut self) -> String {
        let rest = self.buffer.split_off(self.start);
        self.buffer.clear();
        self.start = 0;
        rest
    }
}

/// The earliest (then longest) marker in `text`: `(position, marker index)`.
///
/// Searches windows of doubling size, so the cost is proportional to the position
/// of the match (or to the text when there is none), not to the text each time:
/// the caller consumes what precedes the match, so a long stretch with many matches
/// of one marker and none of another is not re-scanned for the absent one.
fn earliest_marker(text: &[u8], markers: &[&str]) -> Option<(usize, usize)> {
    let longest = markers.iter().map(|m| m.len()).max().unwrap_or(0);
    let mut window = text.len().min(256);
    loop {
        let mut found: Option<(usize, usize)> = None;
        for (index, marker) in markers.iter().enumerate() {
            if marker.is_empty() {
                continue;
            }
            let Some(pos) = memmem::find(&text[..window], marker.as_bytes()) else {
                continue;
            };
            let better = match found {
                None => true,
                Some((best, best_index)) => {
                    pos < best || (pos == best && marker.len() > markers[best_index].len())
                }
            };
            if better {
                found = Some((pos, index));
            }
        }
        // A marker starting before `pos` but crossing the window's end would be missed.
        match found {
            Some((pos, _)) if pos + longest <= window || window == text.len() => return found,
            None if window == text.len() => return None,
            _ => window = (window * 2).min(text.len()),
        }
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of a marker.
fn partial_marker_suffix(text: &str, markers: &[&str]) -> usize {
    let bytes = text.as_bytes();
    let mut longest = 0;
    for marker in markers {
        let max = (marker.len().saturating_sub(1)).min(bytes.len());
        for k in (longest + 1..=max).rev() {
            if bytes.ends_with(&marker.as_bytes()[..k]) {
                longest = k;
                break;
            }
        }
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(scanner: &mut MarkerScanner, markers: &[&str], out: &mut Vec<String>) {
        while let Some(piece) = scanner.next(markers) {
            match piece {
                Piece::Text(text) => out.push(text.to_owned()),
                Piece::Marker(i) => out.push(format!("[{i}]")),
            }
        }
    }

    #[test]
    fn every_split_gives_the_same_pieces_once_merged() {
        let text = "a<b>c<bb>d<b";
        let markers = ["<b>", "<bb>"];
        let mut whole = MarkerScanner::new();
        let mut expected = Vec::new();
        whole.push(text);
        drain(&mut whole, &markers, &mut expected);
        expected.push(whole.finish());
        assert_eq!(expected, ["a", "[0]", "c", "[1]", "d", "<b"]);
        for split in 0..=text.len() {
            let mut scanner = MarkerScanner::new();
            let mut got = Vec::new();
            scanner.push(&text[..split]);
            drain(&mut scanner, &markers, &mut got);
            scanner.push(&text[split..]);
            drain(&mut scanner, &markers, &mut got);
            got.push(scanner.finish());
            let merge = |pieces: &[String]| pieces.concat();
            assert_eq!(merge(&got), merge(&expected), "split at {split}");
        }
    }

    #[test]
    fn markers_crossing_a_search_window_are_found_first() {
        for pad in 240..270 {
            let text = format!("{}<think>{}</think>", "x".repeat(pad), "y".repeat(300));
            assert_eq!(
                earliest_marker(text.as_bytes(), &["</think>", "<think>"]),
                Some((pad, 1))
            );
        }
    }

    #[test]
    fn longest_marker_wins_at_equal_positions() {
        let mut scanner = MarkerScanner::new();
        scanner.push("<tool_call_begin>");
        let markers = ["<tool_call", "<tool_call_begin>"];
        assert_eq!(scanner.next(&markers), Some(Piece::Marker(1)));
    }

    #[test]
    fn multibyte_markers_hold_back_on_char_boundaries() {
        let mut scanner = MarkerScanner::new();
        scanner.push("é<｜tool");
        let markers = ["<｜tool▁calls▁begin｜>"];
        assert_eq!(scanner.next(&markers), Some(Piece::Text("é")));
        assert_eq!(scanner.next(&markers), None);
        assert_eq!(scanner.finish(), "<｜tool");
    }
}
