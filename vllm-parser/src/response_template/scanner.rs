//! transformers' streaming `ResponseParser` (vLLM's
//! `vllm/parser/chat_parsing/response_parser.py`): the text is split into
//! regions by the template's delimiters and each region's body is parsed into
//! its value when the region closes.
//!
//! Outside explicit regions the parser is in the implicit field (the one
//! without an `open`, usually `content`), which opens lazily on its first
//! character. Each step commits the earliest delimiter that can no longer
//! change; text before a delimiter that is still pending (partial, or a
//! regex match at the end that could grow) is held back.

use std::sync::Arc;

use super::coerce::coerce_tool_calls;
use super::content::{Malformed, apply_transform};
use super::pattern::{Found, SearchCache};
use super::{Delimiter, Field, ResponseTemplate};
use crate::json::PyJson;
use crate::tools::Tool;

/// What the scanner reports, with byte spans of its input text.
#[derive(Debug)]
pub(crate) enum Region {
    /// A region opened; `start..end` is its opening delimiter (empty for the
    /// implicit field).
    Open {
        field: usize,
        start: usize,
        end: usize,
    },
    /// Text of the open region.
    Chunk { field: usize, text: String },
    /// A region closed with its parsed value.
    Close {
        field: usize,
        start: usize,
        end: usize,
        value: PyJson,
    },
    /// A region closed but its body did not parse.
    Malformed {
        field: usize,
        start: usize,
        end: usize,
    },
}

impl Region {
    pub(crate) fn field(&self) -> usize {
        match self {
            Region::Open { field, .. }
            | Region::Chunk { field, .. }
            | Region::Close { field, .. }
            | Region::Malformed { field, .. } => *field,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Open,
    Close,
}

pub(crate) struct Scanner {
    template: Arc<ResponseTemplate>,
    tools: Vec<Tool>,
    buffer: String,
    pos: usize,
    current: Option<usize>,
    captures: Vec<(String, PyJson)>,
    body: String,
    opened: bool,
    prefix_len: usize,
    cache: SearchCache,
}

impl Scanner {
    /// A scanner that has read `prefix` (the prompt) from its last start
    /// anchor on; the events of that prefix go to `initial`.
    pub(crate) fn new(
        template: Arc<ResponseTemplate>,
        tools: Vec<Tool>,
        prefix: &str,
        initial: &mut Vec<Region>,
    ) -> Self {
        let truncated = match template.start_anchor.find_iter(prefix).last() {
            Some(anchor) => &prefix[anchor.end..],
            None => prefix,
        }
        .to_owned();
        let implicit = template.implicit;
        let mut scanner = Self {
            template,
            tools,
            buffer: String::new(),
            pos: 0,
            current: implicit,
            captures: Vec::new(),
            body: String::new(),
            opened: false,
            prefix_len: 0,
            cache: SearchCache::default(),
        };
        if !truncated.is_empty() {
            scanner.buffer = truncated;
            scanner.process(initial, false);
            scanner.prefix_len = scanner.buffer.len();
        }
        scanner
    }

    /// The prompt part and everything fed so far.
    pub(crate) fn input_text(&self) -> &str {
        &self.buffer
    }

    pub(crate) fn feed(&mut self, text: &str, out: &mut Vec<Region>) {
        self.buffer.push_str(text);
        self.process(out, false);
    }

    pub(crate) fn finalize(&mut self, out: &mut Vec<Region>) {
        self.process(out, true);
    }

    fn process(&mut self, out: &mut Vec<Region>, eos: bool) {
        loop {
            let (best, hold_start) = self.scan(eos);
            if let Some((kind, field, found)) = best {
                if found.start > self.pos {
                    self.accumulate(out, found.start);
                }
                self.pos = found.end;
                if kind == Kind::Open {
                    self.close_current(out, found.start, found.start);
                    self.open_explicit(out, field, &found);
                } else {
                    let had_content = self.opened;
                    self.close_current(out, found.start, found.end);
                    // A zero-width close of an empty region would fire again.
                    if !had_content && found.start == found.end {
                        break;
                    }
                }
                continue;
            }
            if eos {
                if self.pos < self.buffer.len() {
                    self.accumulate(out, self.buffer.len());
                    self.pos = self.buffer.len();
                }
                self.close_current(out, self.pos, self.pos);
                break;
            }
            if hold_start > self.pos {
                self.accumulate(out, hold_start);
                self.pos = hold_start;
            }
            break;
        }
    }

    /// The delimiters that matter now: the open region's close, or (in the
    /// implicit field) every open and the implicit field's close.
    fn watchlist(&self) -> impl Iterator<Item = (Kind, usize)> + '_ {
        let fields = &self.template.fields;
        let implicit = self.template.implicit;
        let explicit = self.current.filter(|&c| Some(c) != implicit);
        let opens = (0..fields.len())
            .filter(move |&i| explicit.is_none() && fields[i].open.is_some())
            .map(|i| (Kind::Open, i));
        let close = explicit
            .or(implicit)
            .filter(|&c| fields[c].close.is_some())
            .map(|c| (Kind::Close, c));
        opens.chain(close)
    }

    /// `_scan`: the earliest delimiter that can be committed (longest on ties,
    /// opens before closes, then by field name), and where held text starts.
    fn scan(&mut self, eos: bool) -> (Option<(Kind, usize, Found)>, usize) {
        let mut cache = std::mem::take(&mut self.cache);
        let fields = &self.template.fields;
        let mut best: Option<(Kind, usize, Found)> = None;
        let mut hold_start = self.buffer.len();
        for (kind, index) in self.watchlist() {
            let field = &fields[index];
            let Some(delimiter) = delimiter_of(field, kind) else {
                continue;
            };
            let found = delimiter
                .pattern
                .search_with(&mut cache, &self.buffer, self.pos, !eos);
            let Some(found) = found else {
                continue;
            };
            if !eos && (found.partial || self.can_grow(delimiter, &found)) {
                hold_start = hold_start.min(found.start);
                continue;
            }
            let key = |kind: Kind, index: usize, found: &Found| {
                (
                    found.start,
                    std::cmp::Reverse(found.end - found.start),
                    kind == Kind::Close,
                    fields[index].name.as_str(),
                )
            };
            let better = best
                .as_ref()
                .is_none_or(|(k, i, f)| key(kind, index, &found) < key(*k, *i, f));
            if better {
                best = Some((kind, index, found));
            }
        }
        let best = best.filter(|(_, _, found)| found.start < hold_start);
        self.cache = cache;
        (best, hold_start)
    }

    /// `_can_grow`: a complete match at the end of the text that more text
    /// could still change.
    fn can_grow(&self, delimiter: &Delimiter, found: &Found) -> bool {
        if found.end != self.buffer.len() {
            return false;
        }
        if found.start == found.end {
            return true;
        }
        delimiter.literals.is_none() || delimiter.can_extend
    }

    /// `_accumulate`: `buffer[pos..end]` into the current region (nowhere if
    /// there is none); the implicit field opens on its first text.
    fn accumulate(&mut self, out: &mut Vec<Region>, end: usize) {
        let Some(field) = self.current else {
            return;
        };
        let text = &self.buffer[self.pos..end];
        if text.is_empty() {
            return;
        }
        if !self.opened {
            out.push(Region::Open {
                field,
                start: self.pos,
                end: self.pos,
            });
            self.opened = true;
        }
        self.body.push_str(text);
        // Prompt text held back as a possible delimiter is not output.
        let skip = self.prefix_len.saturating_sub(self.pos).min(text.len());
        if skip < text.len() {
            out.push(Region::Chunk {
                field,
                text: text[skip..].to_owned(),
            });
        }
    }

    fn open_explicit(&mut self, out: &mut Vec<Region>, field: usize, found: &Found) {
        let pattern = &self.template.fields[field]
            .open
            .as_ref()
            .map(|d| &d.pattern);
        self.captures = pattern
            .map(|p| p.named_groups(found, &self.buffer))
            .unwrap_or_default()
            .into_iter()
            .map(|(name, text)| (name, PyJson::Str(text)))
            .collect();
        self.current = Some(field);
        self.body.clear();
        self.opened = true;
        out.push(Region::Open {
            field,
            start: found.start,
            end: found.end,
        });
    }

    /// `_close_current`: parse the body into the region's value (or mark it
    /// malformed) and return to the implicit field.
    fn close_current(&mut self, out: &mut Vec<Region>, start: usize, end: usize) {
        if let Some(field) = self.current.filter(|_| self.opened) {
            let value = self.value(&self.template.fields[field]);
            out.push(match value {
                Ok(value) => Region::Close {
                    field,
                    start,
                    end,
                    value,
                },
                Err(Malformed) => Region::Malformed { field, start, end },
            });
        }
        self.current = self.template.implicit;
        self.captures.clear();
        self.body.clear();
        self.opened = false;
    }

    /// `process_field` plus the schema casts and the `join` check.
    fn value(&self, field: &Field) -> Result<PyJson, Malformed> {
        let parsed = field.content.parse(&self.body)?;
        let mut value = match &field.transform {
            None => parsed,
            Some(transform) if field.transform_each => {
                let PyJson::List(items) = parsed else {
                    return Err(Malformed);
                };
                let mut each = Vec::with_capacity(items.len());
                for item in items {
                    let PyJson::Dict(keys) = item else {
                        return Err(Malformed);
                    };
                    let mut scope = self.captures.clone();
                    scope.extend(keys);
                    each.push(apply_transform(transform, &scope)?);
                }
                PyJson::List(each)
            }
            Some(transform) => {
                let mut scope = self.captures.clone();
                scope.push(("content".to_owned(), parsed));
                apply_transform(transform, &scope)?
            }
        };
        if !self.tools.is_empty() {
            coerce_tool_calls(&mut value, &self.tools);
        }
        if field.join && !matches!(value, PyJson::Str(_)) {
            return Err(Malformed);
        }
        Ok(value)
    }
}

fn delimiter_of(field: &Field, kind: Kind) -> Option<&Delimiter> {
    match kind {
        Kind::Open => field.open.as_ref(),
        Kind::Close => field.close.as_ref(),
    }
}
