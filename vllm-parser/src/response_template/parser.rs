//! vLLM's `_ResponseStream`: the scanner's regions routed to reasoning,
//! content and tool calls.

use std::sync::Arc;

use super::scanner::{Region, Scanner};
use super::{FieldKind, ResponseTemplate};
use crate::event::Event;
use crate::json::{self, PyJson};
use crate::parser::{ParserOptions, ReasoningParser, ToolParser};
use crate::tool::{Call, emit_calls};

/// The `hf` / `beam` parser of one request, as a reasoning parser, a tool
/// parser, or both (the reasoning half steps aside for the tool half, which
/// then parses reasoning too, as vLLM's single `ResponseTemplateParser` does).
///
/// It reads [`ParserOptions::prompt`] as the prompt's text (vLLM's decoded
/// `_prefix`): its start state and its `is_reasoning_end` come from the
/// regions the prompt leaves open after its last start anchor.
///
/// Without a [`ResponseTemplate`] in the options (vLLM would refuse to start)
/// all output is content.
pub struct TemplateParser {
    scanner: Option<Scanner>,
    template: Option<Arc<ResponseTemplate>>,
    parse_reasoning: bool,
    parse_tools: bool,
    /// Where the prompt ends in the scanner's input text.
    prefix_end: usize,
    /// The field and end of the last region opened and not closed.
    open_region: Option<(usize, usize)>,
    next_index: usize,
    finished: bool,
    /// Reused for each delta's regions.
    regions: Vec<Region>,
    /// vLLM's `is_reasoning_end` for the prompt the parser was built with.
    prompt_ends_reasoning: bool,
}

impl TemplateParser {
    fn new(options: &ParserOptions, parse_reasoning: bool, parse_tools: bool) -> Self {
        let template = options.response_template.clone();
        let mut initial = Vec::new();
        let scanner = template.as_ref().map(|template| {
            Scanner::new(
                template.clone(),
                options.tools.clone(),
                &options.prompt,
                &mut initial,
            )
        });
        let thinking_disabled = options
            .chat_template_kwargs
            .get("enable_thinking")
            .is_some_and(|v| !crate::parser::py_truthy(v));
        let mut parser = Self {
            prompt_ends_reasoning: match &template {
                Some(template) if parse_reasoning => {
                    reasoning_has_ended(template, &options.prompt, thinking_disabled)
                }
                _ => true,
            },
            prefix_end: scanner.as_ref().map_or(0, |s| s.input_text().len()),
            scanner,
            template,
            parse_reasoning,
            parse_tools,
            open_region: None,
            next_index: 0,
            finished: false,
            regions: Vec::new(),
        };
        parser.track(&initial);
        parser
    }

    /// The reasoning half (`--reasoning-parser hf`): tool regions are content.
    pub fn reasoning(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(options, true, false))
    }

    /// Neither half: vLLM's template parser when it parses neither reasoning
    /// nor calls (a `tool_choice: none` request to a server with only the
    /// tool half): every field's text is content without its delimiters, a
    /// tool region's text as it stands.
    pub fn content(options: &ParserOptions) -> Box<dyn ReasoningParser> {
        Box::new(Self::new(options, false, false))
    }

    /// The tool half (`--tool-call-parser hf`): thinking is content unless a
    /// reasoning parser is selected too.
    pub fn tool(options: &ParserOptions) -> Box<dyn ToolParser> {
        Box::new(Self::new(options, false, true))
    }

    fn push_text(&mut self, text: &str, out: &mut Vec<Event>) {
        let Some(scanner) = &mut self.scanner else {
            if !text.is_empty() {
                out.push(Event::Content(text.to_owned()));
            }
            return;
        };
        let mut regions = std::mem::take(&mut self.regions);
        scanner.feed(text, &mut regions);
        self.track(&regions);
        self.route(&mut regions, out);
        self.regions = regions;
    }

    fn finish_text(&mut self, out: &mut Vec<Event>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let rest = self.closer_rest();
        let Some(scanner) = &mut self.scanner else {
            return;
        };
        if scanner.input_text().len() <= self.prefix_end {
            return;
        }
        let mut regions = Vec::new();
        scanner.feed(&rest, &mut regions);
        scanner.finalize(&mut regions);
        self.route(&mut regions, out);
    }

    fn track(&mut self, regions: &[Region]) {
        for region in regions {
            match region {
                Region::Open { field, end, .. } => self.open_region = Some((*field, *end)),
                Region::Close { .. } | Region::Malformed { .. } => self.open_region = None,
                Region::Chunk { .. } => {}
            }
        }
    }

    /// `_closer_rest`: the rest of a closer the output stopped in, when the
    /// closer ends with the next message's start anchor and only (part of)
    /// that anchor is missing.
    fn closer_rest(&self) -> String {
        let (Some((field, end)), Some(scanner), Some(template)) =
            (self.open_region, &self.scanner, &self.template)
        else {
            return String::new();
        };
        let text = &scanner.input_text()[end..];
        let closers = template.fields[field]
            .close
            .as_ref()
            .and_then(|d| d.literals.as_deref())
            .unwrap_or_default();
        for closer in closers {
            for anchor in &template.start_anchor_literals {
                if anchor.is_empty() || !closer.ends_with(anchor.as_str()) || closer == anchor {
                    continue;
                }
                let cuts: Vec<usize> = closer.char_indices().map(|(i, _)| i).collect();
                let anchor_chars = anchor.chars().count();
                let lowest = cuts.len().saturating_sub(anchor_chars);
                for &cut in cuts[lowest..].iter().rev() {
                    if cut > 0 && text.ends_with(&closer[..cut]) {
                        return closer[cut..].to_owned();
                    }
                }
            }
        }
        String::new()
    }

    /// Route (and drain) one delta's regions.
    fn route(&mut self, regions: &mut Vec<Region>, out: &mut Vec<Event>) {
        let Some(template) = self.template.clone() else {
            regions.clear();
            return;
        };
        for region in regions.drain(..) {
            match template.fields[region.field()].kind {
                FieldKind::ToolCalls => self.route_tool_region(region, out),
                FieldKind::Thinking | FieldKind::Content => {
                    if let Region::Chunk { field, text } = region {
                        let thinking = template.fields[field].kind == FieldKind::Thinking;
                        out.push(if thinking && self.parse_reasoning {
                            Event::Reasoning(text)
                        } else {
                            Event::Content(text)
                        });
                    }
                }
            }
        }
    }

    /// `_route_tool_event`: calls when a tool region closes and parses; the
    /// region's text as content when tools are not parsed.
    fn route_tool_region(&mut self, region: Region, out: &mut Vec<Event>) {
        if !self.parse_tools {
            let text = match region {
                Region::Chunk { text, .. } => text,
                Region::Open { start, end, .. }
                | Region::Close { start, end, .. }
                | Region::Malformed { start, end, .. } => {
                    let input = self.scanner.as_ref().map_or("", |s| s.input_text());
                    input
                        .get(start.max(self.prefix_end)..end)
                        .unwrap_or_default()
                        .to_owned()
                }
            };
            if !text.is_empty() {
                out.push(Event::Content(text));
            }
            return;
        }
        if let Region::Close { value, .. } = region {
            let calls = tool_calls(&value);
            let count = calls.len();
            emit_calls(calls, self.next_index, out);
            self.next_index += count;
        }
    }
}

/// `_to_tool_calls`: `(name, arguments)` of each call in a tool region's value,
/// or none at all if any call is incomplete.
fn tool_calls(value: &PyJson) -> Vec<Call> {
    let items = match value {
        PyJson::List(items) => items.as_slice(),
        single => std::slice::from_ref(single),
    };
    let mut calls = Vec::with_capacity(items.len());
    for item in items {
        let Some(function @ PyJson::Dict(_)) = item.get("function") else {
            return Vec::new();
        };
        let Some(name) = function.get("name").and_then(PyJson::as_str) else {
            return Vec::new();
        };
        let arguments = match function.get("arguments") {
            None | Some(PyJson::Null) => return Vec::new(),
            Some(PyJson::Str(text)) => text.clone(),
            Some(other) => json::dumps(other),
        };
        if name.is_empty() {
            return Vec::new();
        }
        calls.push(Call {
            name: name.to_owned(),
            arguments,
        });
    }
    calls
}

/// The thinking field whose end a prompt decides, or the answer when the
/// template leaves nothing to decide: ended without a thinking field, never
/// ended with a repeating one.
fn thinking_to_decide(template: &ResponseTemplate) -> Result<usize, bool> {
    let thinking = template
        .fields
        .iter()
        .position(|f| f.kind == FieldKind::Thinking)
        .ok_or(true)?;
    if template.fields[thinking].repeats {
        return Err(false);
    }
    Ok(thinking)
}

/// vLLM's `ResponseTemplateReasoningParser.is_reasoning_end` on the decoded
/// prompt (`_reasoning_has_ended` on `ResponseParser(template,
/// prefix=prompt)`): ended without a thinking field, never with a repeating
/// one; ended when the prompt (from its last start anchor on) closed the
/// thinking region or left a content or tool region open. Otherwise a NUL,
/// which the model's output cannot hold, resolves the delimiters held at the
/// prompt's end: an explicit content or tool opener, or thinking's closer,
/// ends reasoning; thinking's opener does not. Otherwise reasoning has ended
/// unless thinking is open, or when the request turned thinking off
/// (`enable_thinking` falsy).
pub(crate) fn reasoning_has_ended(
    template: &Arc<ResponseTemplate>,
    prompt: &str,
    thinking_disabled: bool,
) -> bool {
    let thinking = match thinking_to_decide(template) {
        Ok(field) => field,
        Err(ended) => return ended,
    };
    let mut initial = Vec::new();
    let mut scanner = Scanner::new(template.clone(), Vec::new(), prompt, &mut initial);
    let mut active = None;
    let mut thinking_closed = false;
    for region in &initial {
        match region {
            Region::Open { field, .. } => active = Some(*field),
            Region::Close { field, .. } | Region::Malformed { field, .. } => {
                thinking_closed |= *field == thinking;
                active = None;
            }
            Region::Chunk { .. } => {}
        }
    }
    if thinking_closed || active.is_some_and(|field| field != thinking) {
        return true;
    }
    let mut probe = Vec::new();
    scanner.feed("\0", &mut probe);
    for region in &probe {
        match region {
            Region::Open { field, start, end } if *field != thinking && end > start => {
                return true;
            }
            Region::Open { field, .. } if *field == thinking => return false,
            Region::Close { field, .. } | Region::Malformed { field, .. } if *field == thinking => {
                return true;
            }
            _ => {}
        }
    }
    active != Some(thinking) && thinking_disabled
}

/// [`reasoning_has_ended`] read from the prompt's marker tokens (every other
/// token U+0001), for a server that did not decode the prompt: the regions
/// after the last start anchor [`after_last_anchor`] finds. The implicit
/// field opens there on ordinary tokens (the anchor's own text among them),
/// which is no evidence that content has started; a prompt that ends inside a
/// delimiter is taken as it stands (no NUL probe).
pub(crate) fn markers_end_reasoning(
    template: &Arc<ResponseTemplate>,
    markers: &str,
    thinking_disabled: bool,
) -> bool {
    let thinking = match thinking_to_decide(template) {
        Ok(field) => field,
        Err(ended) => return ended,
    };
    let mut initial = Vec::new();
    Scanner::new(
        template.clone(),
        Vec::new(),
        after_last_anchor(template, markers),
        &mut initial,
    );
    let mut active = None;
    for region in &initial {
        match region {
            Region::Open { field, start, end } => active = (end > start).then_some(*field),
            Region::Close { field, .. } | Region::Malformed { field, .. } => {
                if *field == thinking {
                    return true;
                }
                active = None;
            }
            Region::Chunk { .. } => {}
        }
    }
    match active {
        Some(field) => field != thinking,
        None => thinking_disabled,
    }
}

/// The prompt's markers after its last start anchor. The anchor's text
/// (`<|im_start|>assistant\n`) is a marker token followed by ordinary tokens,
/// U+0001 in the prompt's markers: its longest prefix found in the prompt at
/// a token boundary stands for it. Without one the whole prompt is read.
fn after_last_anchor<'p>(template: &ResponseTemplate, prompt: &'p str) -> &'p str {
    let mut cut = None;
    for literal in &template.start_anchor_literals {
        let ends = literal
            .char_indices()
            .map(|(at, _)| at)
            .skip(1)
            .chain([literal.len()]);
        let ends: Vec<usize> = ends.collect();
        for &len in ends.iter().rev() {
            let prefix = &literal[..len];
            let found = prompt
                .match_indices(prefix)
                .map(|(at, _)| at + len)
                .filter(|&end| {
                    len == literal.len()
                        || matches!(prompt[end..].chars().next(), None | Some('\u{1}'))
                })
                .last();
            if found.is_some() {
                cut = cut.max(found);
                break;
            }
        }
    }
    cut.map_or(prompt, |end| &prompt[end..])
}

impl ReasoningParser for TemplateParser {
    fn prompt_ends_reasoning(&self) -> Option<bool> {
        Some(self.prompt_ends_reasoning)
    }

    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_text(out);
    }

    /// vLLM runs one template parser for both halves.
    fn yields_to_tool_parser(&self) -> bool {
        true
    }
}

impl ToolParser for TemplateParser {
    fn push(&mut self, text: &str, _token_ids: &[u32], out: &mut Vec<Event>) {
        self.push_text(text, out);
    }

    fn finish(&mut self, out: &mut Vec<Event>) {
        self.finish_text(out);
    }

    /// The reasoning half stepped aside: thinking is reasoning now.
    fn follows_reasoning_parser(&mut self) {
        self.parse_reasoning = true;
    }
}
