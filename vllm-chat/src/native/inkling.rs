//! Inkling's renderer: a port of vLLM 0.33.0's `vllm/renderers/inkling.py` and
//! `vllm/renderers/inkling_encoding.py`.
//!
//! Inkling has no chat template and no faithful text form: vLLM renders the
//! request's messages straight to token ids, each message part framed by special
//! tokens (`<|message_user|>`, `<|content_text|>`, …, `<|end_message|>`) whose ids are
//! looked up in the vocabulary once, and user text tokenized without special
//! tokens. Tools are declared in one leading system block as canonical JSON (sorted
//! keys, no spaces); a `Thinking effort level:` system block precedes the first
//! non-system message (`reasoning_effort` from the request or
//! `chat_template_kwargs`, default 0.9).

use serde_json::{Value, json};

use super::py::{self, get, truthy, type_name};
use crate::RenderError;
use crate::kwargs::Kwargs;
use crate::openai::{ChatMessage, ContentPart, MessageContent};
use crate::python;
use crate::tokenizer::Tokenizer;

const MESSAGE_USER: usize = 0;
const MESSAGE_MODEL: usize = 1;
const MESSAGE_SYSTEM: usize = 2;
const MESSAGE_TOOL: usize = 3;
const CONTENT_TEXT: usize = 4;
const CONTENT_IMAGE: usize = 5;
const CONTENT_MODEL_END_SAMPLING: usize = 6;
const CONTENT_THINKING: usize = 7;
const CONTENT_AUDIO_INPUT: usize = 8;
const CONTENT_XML: usize = 9;
const CONTENT_INVOKE_TOOL_JSON: usize = 10;
const END_MESSAGE: usize = 11;
const AUDIO_END: usize = 12;

/// `SPECIAL_TOKEN_SPELLINGS`, in its order (indexed by the constants above).
const SPELLINGS: [&[&str]; 13] = [
    &["<|message_user|>"],
    &["<|message_model|>"],
    &["<|message_system|>"],
    &["<|message_tool|>"],
    &["<|content_text|>"],
    &["<|content_image|>"],
    &["<|content_model_end_sampling|>"],
    &["<|content_thinking|>"],
    &["<|content_audio_input|>"],
    &["<|content_xml|>", "<|unused_200024|>"],
    &["<|content_invoke_tool_json|>"],
    &["<|end_message|>"],
    &["<|audio_end|>"],
];

/// `_NAMED_REASONING_EFFORT`.
const NAMED_EFFORTS: [(&str, f64); 7] = [
    ("none", 0.0),
    ("minimal", 0.1),
    ("low", 0.2),
    ("medium", 0.7),
    ("high", 0.9),
    ("xhigh", 0.99),
    ("max", 0.99),
];

/// The ids of Inkling's special tokens (`_HfBackedTmlTokenizer`), resolved when the
/// renderer is built.
#[derive(Debug, Clone)]
pub(crate) struct Specials([u32; 13]);

impl Specials {
    /// Looks every token up (first spelling found wins); vLLM refuses a tokenizer
    /// that lacks any of them.
    pub(crate) fn new(tokenizer: &Tokenizer) -> Result<Self, RenderError> {
        let mut ids = [0; 13];
        let mut missing = Vec::new();
        for (slot, spellings) in ids.iter_mut().zip(SPELLINGS) {
            match spellings.iter().find_map(|s| tokenizer.token_to_id(s)) {
                Some(id) => *slot = id,
                None => missing.push(format!("'{}'", spellings[0])),
            }
        }
        if !missing.is_empty() {
            return Err(RenderError::Tokenizer(format!(
                "Inkling tokenizer is missing special tokens: [{}]",
                missing.join(", ")
            )));
        }
        Ok(Specials(ids))
    }
}

/// What a message part renders as.
enum Part {
    Text(String),
    Image,
    Audio,
}

struct Encoder<'a> {
    specials: &'a Specials,
    encode: &'a dyn Fn(&str) -> Result<Vec<u32>, RenderError>,
    ids: Vec<u32>,
}

impl Encoder<'_> {
    fn special(&mut self, which: usize) {
        self.ids.push(self.specials.0[which]);
    }

    fn text(&mut self, text: &str) -> Result<(), RenderError> {
        let ids = (self.encode)(text)?;
        self.ids.extend(ids);
        Ok(())
    }

    /// `_append_message`.
    fn message(
        &mut self,
        role: usize,
        content: usize,
        text: &str,
        author: Option<&str>,
    ) -> Result<(), RenderError> {
        self.special(role);
        if let Some(author) = author.filter(|a| !a.is_empty()) {
            self.text(author)?;
        }
        self.special(content);
        match content {
            CONTENT_IMAGE => {}
            CONTENT_AUDIO_INPUT => self.special(AUDIO_END),
            _ => self.text(text)?,
        }
        self.special(END_MESSAGE);
        Ok(())
    }

    fn part(&mut self, role: usize, part: &Part) -> Result<(), RenderError> {
        match part {
            Part::Text(text) => self.message(role, CONTENT_TEXT, text, None),
            Part::Image => self.message(role, CONTENT_IMAGE, "", None),
            Part::Audio => self.message(role, CONTENT_AUDIO_INPUT, "", None),
        }
    }

    fn effort(&mut self, effort: &Value) -> Result<(), RenderError> {
        let text = thinking_effort_text(effort)?;
        self.message(MESSAGE_SYSTEM, CONTENT_TEXT, &text, None)
    }
}

/// `InklingRenderer._render`: the prompt's token ids.
pub(crate) fn render(
    messages: &[ChatMessage],
    tools: Option<&Value>,
    kwargs: &Kwargs,
    specials: &Specials,
    encode: &dyn Fn(&str) -> Result<Vec<u32>, RenderError>,
) -> Result<Vec<u32>, RenderError> {
    if truthy(kwargs.get("continue_final_message")) {
        return Err(py::error(
            "Inkling renderer does not support continue_final_message",
        ));
    }
    let mut effort = resolve_effort(kwargs.get("reasoning_effort"));
    let add_generation_prompt = kwargs
        .get("add_generation_prompt")
        .is_none_or(|v| truthy(Some(v)));
    let mut out = Encoder {
        specials,
        encode,
        ids: Vec::new(),
    };
    let mut all_tools: Vec<Value> = match tools.filter(|t| truthy(Some(t))) {
        Some(Value::Array(list)) => list.clone(),
        Some(other) => vec![other.clone()],
        None => Vec::new(),
    };
    for message in messages {
        if message.role == "developer"
            && let Some(Value::Array(list)) = &message.tools
        {
            all_tools.extend(list.iter().cloned());
        }
    }
    if !all_tools.is_empty() {
        out.message(
            MESSAGE_SYSTEM,
            CONTENT_XML,
            &tool_declare_json(&all_tools)?,
            Some("tool_declare"),
        )?;
    }
    let mut call_names: Vec<(String, String)> = Vec::new();
    for message in messages {
        let role = match message.role.as_str() {
            "user" => MESSAGE_USER,
            "assistant" => MESSAGE_MODEL,
            "system" | "developer" => MESSAGE_SYSTEM,
            "tool" => MESSAGE_TOOL,
            other => {
                return Err(py::error(format!(
                    "unsupported Inkling message role {}; expected one of ['assistant', 'developer', 'system', 'tool', 'user']",
                    python::repr(&Value::String(other.into()))
                )));
            }
        };
        if role != MESSAGE_SYSTEM
            && let Some(value) = effort.take()
        {
            out.effort(&value)?;
        }
        if role == MESSAGE_TOOL {
            let name = message
                .name
                .clone()
                .filter(|n| !n.is_empty())
                .or_else(|| {
                    let id = message.tool_call_id.clone().unwrap_or_default();
                    call_names
                        .iter()
                        .find(|(k, _)| *k == id)
                        .map(|(_, n)| n.clone())
                })
                .unwrap_or_default();
            let text = match &message.content {
                None => String::new(),
                Some(MessageContent::Text(text)) => text.clone(),
                Some(content) => {
                    let mut texts = String::new();
                    for part in parts(Some(content))? {
                        match part {
                            Part::Text(t) => texts += &t,
                            Part::Image | Part::Audio => {
                                let kind = if matches!(part, Part::Image) {
                                    "image"
                                } else {
                                    "audio"
                                };
                                return Err(py::error(format!(
                                    "Inkling tool response content must be text, got a part of kind '{kind}'"
                                )));
                            }
                        }
                    }
                    texts
                }
            };
            out.message(MESSAGE_TOOL, CONTENT_TEXT, &text, Some(&name))?;
            continue;
        }
        if role == MESSAGE_MODEL
            && let Some(reasoning) = message.reasoning.as_deref().filter(|r| !r.is_empty())
        {
            out.message(MESSAGE_MODEL, CONTENT_THINKING, reasoning, None)?;
        }
        for part in parts(message.content.as_ref())? {
            out.part(role, &part)?;
        }
        if role == MESSAGE_MODEL {
            for call in message.tool_calls.iter().flatten() {
                let (name, arguments) = tool_call_name_and_args(call)?;
                if let Some(id) = call.get("id").filter(|v| truthy(Some(v))) {
                    let id = python::str_of(id);
                    match call_names.iter_mut().find(|(k, _)| *k == id) {
                        Some(slot) => slot.1 = name.clone(),
                        None => call_names.push((id, name.clone())),
                    }
                }
                let json = format!(
                    "{{\"name\":{},\"args\":{}}}",
                    python::json_dumps_unicode(&Value::String(name.clone())),
                    python::json_dumps_canonical(&arguments)
                );
                out.message(MESSAGE_MODEL, CONTENT_INVOKE_TOOL_JSON, &json, Some(&name))?;
            }
            out.special(CONTENT_MODEL_END_SAMPLING);
        }
    }
    if let Some(value) = effort.take() {
        out.effort(&value)?;
    }
    if add_generation_prompt {
        out.special(MESSAGE_MODEL);
    }
    Ok(out.ids)
}

/// `_resolve_reasoning_effort`: a name, a number, or nothing (0.9).
fn resolve_effort(value: Option<&Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => Some(json!(0.9)),
        Some(Value::String(name)) => NAMED_EFFORTS
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| json!(v)),
        Some(Value::Number(n)) => Some(Value::Number(n.clone())),
        Some(_) => None,
    }
}

/// `_thinking_effort_text`.
fn thinking_effort_text(effort: &Value) -> Result<String, RenderError> {
    let value = effort.as_f64().unwrap_or(f64::NAN);
    if !(0.0..=0.99).contains(&value) {
        return Err(py::error(format!(
            "Inkling reasoning_effort must be in [0.0, 0.99], got {}",
            python::float(value)
        )));
    }
    let fixed = format!("{value:.2}");
    let mut text = fixed.trim_end_matches('0').trim_end_matches('.').to_owned();
    if text == "0" || text == "-0" {
        text = "0.0".into();
    }
    Ok(format!("Thinking effort level: {text}"))
}

/// `_iter_render_parts`: a string (when not empty) or each part.
fn parts(content: Option<&MessageContent>) -> Result<Vec<Part>, RenderError> {
    match content {
        None => Ok(Vec::new()),
        Some(MessageContent::Text(text)) if text.is_empty() => Ok(Vec::new()),
        Some(MessageContent::Text(text)) => Ok(vec![Part::Text(text.clone())]),
        Some(MessageContent::Parts(list)) => list
            .iter()
            .map(|part| match part {
                ContentPart::Str(s) => Ok(Part::Text(s.clone())),
                ContentPart::Typed { kind, text, .. } => match kind.as_str() {
                    "text" | "input_text" => Ok(Part::Text(text.clone().unwrap_or_default())),
                    "image" | "input_image" | "image_url" => Ok(Part::Image),
                    "audio" | "input_audio" | "audio_url" => Ok(Part::Audio),
                    other => Err(py::error(format!(
                        "unsupported content part type: {}",
                        python::repr(&Value::String(other.into()))
                    ))),
                },
            })
            .collect(),
    }
}

/// `_tool_declare_json`.
fn tool_declare_json(tools: &[Value]) -> Result<String, RenderError> {
    let mut specs = Vec::with_capacity(tools.len());
    for tool in tools {
        if !tool.is_object() {
            return Err(py::error(format!(
                "expected mapping, got {}",
                type_name(tool)
            )));
        }
        let function = tool.get("function").cloned().unwrap_or_else(|| json!({}));
        if !function.is_object() {
            return Err(py::error(format!(
                "expected mapping, got {}",
                type_name(&function)
            )));
        }
        let description = get(&function, "description")
            .filter(|d| truthy(Some(d)))
            .cloned()
            .unwrap_or_else(|| json!(""));
        let name = function
            .get("name")
            .cloned()
            .ok_or_else(|| py::key_error("name"))?;
        let parameters = get(&function, "parameters")
            .filter(|p| truthy(Some(p)))
            .cloned()
            .unwrap_or_else(|| json!({}));
        let kind = tool
            .get("type")
            .cloned()
            .unwrap_or_else(|| json!("function"));
        specs.push(json!({
            "description": description,
            "name": name,
            "parameters": parameters,
            "type": kind,
        }));
    }
    Ok(python::json_dumps_canonical(&Value::Array(specs)))
}

/// `_tool_call_name_and_args`.
fn tool_call_name_and_args(call: &Value) -> Result<(String, Value), RenderError> {
    if !call.is_object() {
        return Err(py::error(format!(
            "expected mapping, got {}",
            type_name(call)
        )));
    }
    let function = call.get("function").cloned().unwrap_or_else(|| json!({}));
    if !function.is_object() {
        return Err(py::error(format!(
            "expected mapping, got {}",
            type_name(&function)
        )));
    }
    let Some(Value::String(name)) = function.get("name") else {
        return Err(py::error("tool call function name must be a string"));
    };
    let raw = get(&function, "arguments")
        .filter(|a| truthy(Some(a)))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let args = match raw {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => {
            serde_json::from_str::<Value>(&text).map_err(|e| py::error(e.to_string()))?
        }
        other => other,
    };
    if !args.is_object() {
        return Err(py::error(
            "tool call function arguments must decode to an object",
        ));
    }
    Ok((name.clone(), args))
}
