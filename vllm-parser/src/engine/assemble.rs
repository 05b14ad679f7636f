//! From engine [`Signal`]s to the crate's [`Event`]s, with the result rules of
//! vLLM's `ParserEngine` for whole text (`_events_to_delta(finished=True)`,
//! `_build_extracted_result`, `DelegatingParser._extract_tool_calls`):
//!
//! - content is the text before the first tool event; text after it is dropped
//!   once some call has a name, and kept (after the text before) when none has;
//! - with calls, content is `.strip()`ped (or only dropped when blank, per
//!   config); without calls, whitespace-only content is dropped if a call was
//!   started at all;
//! - a call's name is its name text (or `"name": "…"` found in its argument
//!   text); nameless calls, and with `validate_tool_names` calls to functions
//!   the request does not offer, are dropped;
//! - arguments are the config's converter applied to the raw argument text, or
//!   that text read as JSON (`arguments` / `parameters` of a `{"name", …}`
//!   object, or the object without `name`, or the text itself), then
//!   coerced to the tool's schema types;
//! - reasoning loses its trailing whitespace when the config says so;
//! - after a legacy (non-engine) reasoning parser, an output without calls is
//!   the content exactly as given; a request without tools gets no calls;
//! - `tool_choice: none` on a request with tools suppresses calls
//!   (`_suppress_tool_calls`): tool events are ignored, so no slot exists and
//!   none of the rules above apply; every text chunk, around and between the
//!   call markup, is content as is (whitespace included).
//!
//! Content is streamed as it comes except what these rules may still remove:
//! trailing whitespace (and, when content starts with whitespace, everything)
//! is held until a call or the end of the output decides.

use crate::engine::config::{ArgsText, EngineConfig};
use crate::engine::driver::Signal;
use crate::engine::schema::fix_arg_types;
use crate::event::Event;
use crate::json::{self, PyJson};
use crate::text::{py_is_blank, py_is_space, py_strip};
use crate::tools::{Tool, find_tool};

/// The tool-parser half: content and calls.
#[derive(Debug)]
pub struct ToolAssembler {
    tools: Vec<Tool>,
    converter: Option<crate::engine::config::Converter>,
    schema_converter: Option<crate::engine::config::SchemaConverter>,
    post_convert: Option<crate::engine::config::PostConvert>,
    strip_content: bool,
    drop_blank_content: bool,
    validate_names: bool,
    strip_names: bool,
    call_header: Option<crate::engine::config::CallHeader>,
    args_text: ArgsText,
    names_in_arguments: bool,
    accept_empty_names: bool,
    args_keys: &'static [&'static str],
    /// Text after an emitted call is content (Inkling).
    keep_text_after_calls: bool,
    /// Tool events are ignored and text is content as is
    /// (see [`suppress_calls`](Self::suppress_calls)).
    suppress: bool,
    /// Content was emitted (it then held non-whitespace).
    emitted_content: bool,
    /// Content started with whitespace: all of it is held until decided.
    hold_all: bool,
    /// Content held back (see the module doc).
    held: String,
    /// A tool event was seen: later text is "after calls".
    after_tool_event: bool,
    /// Text after the first tool event, kept while no call has a name.
    after: String,
    /// Some call has a name: text after tool events is dropped.
    named_call: bool,
    slot: Option<Slot>,
    calls: usize,
    /// The text as given, while no call was emitted, when a call-less result
    /// is that text (see [`keep_raw_content`](Self::keep_raw_content)).
    raw: Option<String>,
}

#[derive(Debug, Default)]
struct Slot {
    name: String,
    args: String,
}

impl ToolAssembler {
    /// The assembler for `config` and the request's tools.
    pub fn new(config: &EngineConfig, tools: &[Tool]) -> Self {
        Self {
            tools: tools.to_vec(),
            converter: config.converter,
            schema_converter: config.schema_converter,
            post_convert: config.post_convert,
            strip_content: config.strip_content_whitespace_with_tools,
            drop_blank_content: config.drop_whitespace_only_content_before_tools,
            validate_names: config.validate_tool_names,
            strip_names: config.strip_tool_names,
            call_header: config.call_header,
            args_text: config.args_text,
            names_in_arguments: config.names_in_arguments,
            accept_empty_names: config.accept_empty_names,
            args_keys: config.args_keys,
            keep_text_after_calls: config.keep_text_after_calls,
            suppress: false,
            emitted_content: false,
            hold_all: false,
            held: String::new(),
            after_tool_event: false,
            after: String::new(),
            named_call: false,
            slot: None,
            calls: 0,
            raw: None,
        }
    }

    /// Make the result without calls the text as given (vLLM's
    /// `DelegatingParser` after a legacy reasoning parser): all content is then
    /// held until a call or the end decides.
    pub fn keep_raw_content(&mut self) {
        self.raw = Some(String::new());
    }

    /// Ignore calls (vLLM's `ParserEngine` with `tool_choice: "none"` on a
    /// request with tools): its `_events_to_delta` skips tool events, so no
    /// call slot exists, text after calls is never "after a call", and the
    /// whitespace rules that need a call never fire. Whitespace-only content
    /// vLLM defers until non-whitespace or the end, where it is flushed; the
    /// result is every text chunk as is.
    pub fn suppress_calls(&mut self) {
        self.suppress = true;
    }

    /// The text the tool parser is given (kept only while it may become the
    /// content).
    pub fn raw_text(&mut self, text: &str) {
        if let Some(raw) = &mut self.raw {
            raw.push_str(text);
        }
    }

    /// Turn engine signals into events.
    pub fn signals(&mut self, signals: &mut Vec<Signal>, out: &mut Vec<Event>) {
        for signal in signals.drain(..) {
            match signal {
                Signal::Text(text) => self.text(&text, out),
                Signal::CallStart | Signal::Name(_) | Signal::Args(_) | Signal::CallEnd
                    if self.suppress => {}
                // The tool parser's result has no reasoning field: vLLM drops
                // reasoning the grammar finds inside content.
                Signal::Reasoning(_) | Signal::ReasoningEnd => {}
                Signal::CallStart => {
                    self.after_tool_event = true;
                    self.end_call(out);
                    self.slot = Some(Slot::default());
                }
                Signal::Name(text) => {
                    self.after_tool_event = true;
                    if let Some(slot) = &mut self.slot {
                        slot.name.push_str(&text);
                    }
                }
                Signal::Args(text) => {
                    self.after_tool_event = true;
                    if let Some(slot) = &mut self.slot {
                        slot.args.push_str(&text);
                    }
                }
                Signal::CallEnd => {
                    self.after_tool_event = true;
                    self.end_call(out);
                }
            }
        }
    }

    /// End of output.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        self.end_call(out);
        // A request without tools has `tool_choice="none"`: after a legacy
        // reasoning parser vLLM then returns the text as given.
        if let Some(raw) = self
            .raw
            .take()
            .filter(|_| self.calls == 0 || self.tools.is_empty())
        {
            if !raw.is_empty() {
                out.push(Event::Content(raw));
            }
            return;
        }
        if self.calls > 0 {
            return;
        }
        let mut rest = std::mem::take(&mut self.held);
        if !self.named_call {
            rest.push_str(&self.after);
        }
        let dropped = self.after_tool_event
            && self.drop_blank_content
            && !self.emitted_content
            && py_is_blank(&rest);
        if !rest.is_empty() && !dropped {
            out.push(Event::Content(rest));
        }
    }

    fn text(&mut self, text: &str, out: &mut Vec<Event>) {
        // Suppressed calls leave plain content (after a legacy reasoning
        // parser the raw text still wins: no call is ever emitted).
        if self.suppress && self.raw.is_none() {
            if !text.is_empty() {
                out.push(Event::Content(text.to_owned()));
            }
            return;
        }
        if self.after_tool_event && self.keep_text_after_calls && self.calls > 0 {
            if !text.is_empty() {
                out.push(Event::Content(text.to_owned()));
            }
            return;
        }
        if self.after_tool_event {
            if !self.named_call {
                self.after.push_str(text);
            }
            return;
        }
        if !self.emitted_content && self.held.is_empty() && text.starts_with(py_is_space) {
            self.hold_all = true;
        }
        self.held.push_str(text);
        // Only `text` is looked at: what was held before is all whitespace
        // (or all held anyway), so the cost stays proportional to the delta.
        let blank = py_is_blank(text);
        if self.raw.is_some() || self.hold_all && (self.strip_content || blank) {
            return;
        }
        self.hold_all = false;
        let cut = if self.strip_content {
            if blank {
                return;
            }
            self.held.len() - (text.len() - trim_end_len(text))
        } else {
            self.held.len()
        };
        let rest = self.held.split_off(cut);
        let emit = std::mem::replace(&mut self.held, rest);
        if !emit.is_empty() {
            self.emitted_content = true;
            out.push(Event::Content(emit));
        }
    }

    /// `_extract_args_json` of stripped, non-empty text.
    fn arguments_text(&self, body: &str) -> String {
        match self.args_text {
            ArgsText::Json => name_and_arguments(body, self.args_keys).1,
            ArgsText::Stripped => body.to_owned(),
            ArgsText::FirstJsonValue => match json::loads_prefix(body) {
                Ok((_, end)) => body[..end].to_owned(),
                Err(_) => body.to_owned(),
            },
        }
    }

    fn accept(&self, name: &str) -> bool {
        (self.accept_empty_names || !name.is_empty())
            && (!self.validate_names
                || self.tools.is_empty()
                || find_tool(&self.tools, name).is_some())
    }

    fn end_call(&mut self, out: &mut Vec<Event>) {
        let Some(slot) = self.slot.take() else {
            return;
        };
        // The name vLLM sends while streaming decides whether later text is
        // dropped; the name it builds the call with is decided below.
        let mut name = slot.name.clone();
        let mut id = None;
        if let Some(header) = self.call_header {
            let candidate = if name.is_empty() {
                name_in_arguments(&slot.args).unwrap_or_default()
            } else {
                name.as_str()
            };
            match header(candidate) {
                Some((call_id, function)) => {
                    id = Some(call_id);
                    name = function;
                }
                None => name.clear(),
            }
        } else if name.is_empty() && self.names_in_arguments {
            name = name_in_arguments(&slot.args).unwrap_or_default().to_owned();
        }
        if self.strip_names {
            name = py_strip(&name).to_owned();
        }
        if self.accept(&name) {
            self.named_call = true;
            self.after.clear();
        } else if self.call_header.is_none() {
            name.clone_from(&slot.name);
        }
        if name.is_empty() && slot.args.is_empty() {
            return;
        }
        let mut name = py_strip(&name).to_owned();
        let body = py_strip(&slot.args);
        let arguments = if name.is_empty() && !body.is_empty() && self.names_in_arguments {
            let (found, arguments) = name_and_arguments(body, self.args_keys);
            name = found;
            id = None;
            arguments
        } else if body.is_empty() {
            "{}".to_owned()
        } else {
            let converted = match self.schema_converter {
                Some(convert) => convert(&slot.args, &slot.name, &self.tools),
                None => self.converter.and_then(|convert| convert(&slot.args)),
            };
            match converted {
                Some(json) => match self.post_convert {
                    Some(post) if !self.tools.is_empty() => post(json, &slot.name, &self.tools),
                    _ => json,
                },
                None => self.arguments_text(body),
            }
        };
        if !self.accept(&name) {
            return;
        }
        let arguments = fix_arg_types(&arguments, &name, &self.tools);
        self.emit_call(id, name, arguments, out);
    }

    fn emit_call(
        &mut self,
        id: Option<String>,
        name: String,
        arguments: String,
        out: &mut Vec<Event>,
    ) {
        if self.calls == 0 && !(self.raw.is_some() && self.tools.is_empty()) {
            let held = std::mem::take(&mut self.held);
            self.raw = None;
            let held = if self.strip_content {
                py_strip(&held)
            } else if py_is_blank(&held) {
                ""
            } else {
                held.as_str()
            };
            if !held.is_empty() {
                out.push(Event::Content(held.to_owned()));
            }
        }
        let index = self.calls;
        self.calls += 1;
        if self.tools.is_empty() {
            // vLLM returns no calls to a request without tools (content stays
            // what parsing the calls left).
            return;
        }
        out.push(Event::ToolCallBegin { index, id, name });
        out.push(Event::ToolCallArguments {
            index,
            delta: arguments,
        });
        out.push(Event::ToolCallEnd { index });
    }
}

/// Length of `text` without its trailing Python whitespace.
fn trim_end_len(text: &str) -> usize {
    text.trim_end_matches(py_is_space).len()
}

/// vLLM's `_NAME_RE` (`"name"\s*:\s*"([^"]*)"`): the first non-empty match.
fn name_in_arguments(args: &str) -> Option<&str> {
    const KEY: &str = "\"name\"";
    let mut from = 0;
    while let Some(at) = args[from..].find(KEY) {
        let start = from + at;
        from = start + KEY.len();
        let rest = args[from..].trim_start_matches(py_is_space);
        let Some(rest) = rest.strip_prefix(':') else {
            continue;
        };
        let rest = rest.trim_start_matches(py_is_space);
        let Some(rest) = rest.strip_prefix('"') else {
            continue;
        };
        let Some(end) = rest.find('"') else {
            continue;
        };
        return Some(&rest[..end]).filter(|name| !name.is_empty());
    }
    None
}

/// vLLM's `_extract_name_and_args` on stripped text; `keys` hold the
/// arguments, first found wins.
fn name_and_arguments(body: &str, keys: &[&str]) -> (String, String) {
    let Ok(PyJson::Dict(items)) = json::loads(body) else {
        return (String::new(), body.to_owned());
    };
    let name = items
        .iter()
        .find(|(k, _)| k == "name")
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_default()
        .to_owned();
    for key in keys {
        if let Some((_, value)) = items.iter().find(|(k, _)| k == key) {
            return match value {
                PyJson::Str(text) => (name, text.clone()),
                other => (name, json::dumps(other)),
            };
        }
    }
    let rest: Vec<(String, PyJson)> = items.into_iter().filter(|(k, _)| k != "name").collect();
    (name, json::dumps(&PyJson::Dict(rest)))
}

/// The reasoning-parser half: reasoning and content.
#[derive(Debug)]
pub struct ReasoningAssembler {
    strip_trailing: bool,
    held: String,
}

impl ReasoningAssembler {
    /// The assembler for `config`.
    pub fn new(config: &EngineConfig) -> Self {
        Self {
            strip_trailing: config.strip_trailing_reasoning_whitespace,
            held: String::new(),
        }
    }

    /// Turn engine signals into events.
    pub fn signals(&mut self, signals: &mut Vec<Signal>, out: &mut Vec<Event>) {
        for signal in signals.drain(..) {
            match signal {
                Signal::Reasoning(text) if self.strip_trailing => {
                    self.held.push_str(&text);
                    if !py_is_blank(&text) {
                        let cut = self.held.len() - (text.len() - trim_end_len(&text));
                        let rest = self.held.split_off(cut);
                        out.push(Event::Reasoning(std::mem::replace(&mut self.held, rest)));
                    }
                }
                Signal::Reasoning(text) => out.push(Event::Reasoning(text)),
                Signal::Text(text) => out.push(Event::Content(text)),
                Signal::ReasoningEnd
                | Signal::CallStart
                | Signal::Name(_)
                | Signal::Args(_)
                | Signal::CallEnd => {}
            }
        }
    }
}
