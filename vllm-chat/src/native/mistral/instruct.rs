//! mistral-common 1.13.1's request validator (test mode, as vLLM builds it), request
//! normalizer and instruct tokenizers V3, V7, V11 and V13, for tekken vocabularies.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::RenderError;

use super::encoder::TextEncoder;
use super::json::{dumps, dumps_tools, loads};
use super::messages::{Chunk, Content, Message, Role, ToolCall, error};

/// The instruct tokenizer version of a vocabulary (`config.version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InstructVersion {
    /// v1: `[INST] … [/INST]` as text, no tools (SentencePiece v1).
    V1,
    /// v2: control tokens, tools and results only after the last user message.
    V2,
    /// v3: system prompt prepended to the last user message, tools and calls as JSON.
    V3,
    /// v7: `[SYSTEM_PROMPT]` messages in place, tool results with `[TOOL_CONTENT]`.
    V7,
    /// v11: tool calls as `[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`.
    V11,
    /// v13: tools before the first user message, `[THINK]` chunks, no call ids.
    V13,
}

impl InstructVersion {
    /// The version of a tekken file's `config.version` number.
    pub fn from_number(version: u32) -> Option<Self> {
        Some(match version {
            1 => InstructVersion::V1,
            2 => InstructVersion::V2,
            3 => InstructVersion::V3,
            7 => InstructVersion::V7,
            11 => InstructVersion::V11,
            13 => InstructVersion::V13,
            _ => return None,
        })
    }

    /// The version's number (`config.version` of a tekken file; `V11` is 11).
    pub fn number(self) -> u32 {
        match self {
            InstructVersion::V1 => 1,
            InstructVersion::V2 => 2,
            InstructVersion::V3 => 3,
            InstructVersion::V7 => 7,
            InstructVersion::V11 => 11,
            InstructVersion::V13 => 13,
        }
    }
}

/// The special token ids an instruct tokenizer uses.
#[derive(Debug, Clone)]
pub(crate) struct Specials {
    pub bos: u32,
    pub eos: u32,
    pub inst: u32,
    pub end_inst: u32,
    pub tools: u32,
    pub end_tools: u32,
    pub results: u32,
    pub end_results: u32,
    pub calls: u32,
    pub system: Option<u32>,
    pub end_system: Option<u32>,
    pub tool_content: Option<u32>,
    pub args: Option<u32>,
    pub call_id: Option<u32>,
    pub think: Option<u32>,
    pub end_think: Option<u32>,
}

/// A tool as mistral-common dumps it into `[AVAILABLE_TOOLS]`
/// (`Tool.from_openai(tool.model_dump())` without `strict`), borrowed from the
/// request: `{"type": "function", "function": {"name", "description", "parameters"}}`.
pub(crate) struct ToolJson<'a> {
    pub name: &'a str,
    /// `""` when the request has none.
    pub description: &'a str,
    /// `None`: missing or `null`, dumped as `{}`.
    pub parameters: Option<&'a Value>,
}

pub(crate) struct Instruct<'a> {
    pub version: InstructVersion,
    pub specials: &'a Specials,
    pub encoder: &'a TextEncoder,
    pub has_image_encoder: bool,
}

fn name_ok(name: &str) -> bool {
    let n = name.chars().count();
    (1..=64).contains(&n)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn id9_ok(id: &str) -> bool {
    id.len() == 9 && id.chars().all(|c| c.is_ascii_alphanumeric())
}

fn bad_name(name: &str) -> String {
    format!(
        "Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64."
    )
}

impl Instruct<'_> {
    // ---- validator (ValidationMode.test) -------------------------------------------

    pub(crate) fn validate(
        &self,
        messages: &[Message],
        tools: &[ToolJson],
    ) -> Result<(), RenderError> {
        let v = self.version;
        if messages.is_empty() {
            return Err(error("Conversation must have at least one message"));
        }
        if messages.len() == 1 && !matches!(messages[0].role(), Role::User | Role::System) {
            return Err(error(
                "Conversation must start with a user message or system message",
            ));
        }
        if messages.len() > 1
            && let Some(Message::Assistant { prefix: false, .. }) = messages.last()
        {
            return Err(error(
                "Expected last role User or Tool (or Assistant with prefix) for serving but got assistant",
            ));
        }
        let mut previous: Option<Role> = None;
        for message in messages {
            let current = message.role();
            if let Some(previous) = previous {
                let allowed = match previous {
                    Role::System => [Role::User, Role::Assistant, Role::System],
                    Role::User => [Role::Assistant, Role::System, Role::User],
                    Role::Assistant => [Role::Assistant, Role::User, Role::Tool],
                    Role::Tool => [Role::Assistant, Role::Tool, Role::User],
                };
                if !allowed.contains(&current) {
                    return Err(error(format!(
                        "Unexpected role '{}' after role '{}'",
                        current.as_str(),
                        previous.as_str()
                    )));
                }
            }
            previous = Some(current);
        }
        self.validate_tool_call_answers(messages)?;
        let last = messages.len() - 1;
        for (idx, message) in messages.iter().enumerate() {
            match message {
                Message::User { content } => {
                    let allowed: &[&str] = match v {
                        InstructVersion::V1 | InstructVersion::V2 => &["TextChunk"],
                        InstructVersion::V3 => &["TextChunk", "ImageURLChunk"],
                        _ => &["TextChunk", "ImageURLChunk", "AudioChunk"],
                    };
                    chunk_types(Some(content), allowed, "user")?;
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    prefix,
                } => {
                    let allowed: &[&str] = if v >= InstructVersion::V11 {
                        &["TextChunk", "ThinkChunk"]
                    } else {
                        &["TextChunk"]
                    };
                    chunk_types(content.as_ref(), allowed, "assistant")?;
                    if v <= InstructVersion::V3
                        && content.as_ref().is_some_and(Content::truthy) != tool_calls.is_empty()
                    {
                        return Err(error(
                            "Assistant message must have either content or tool_calls, but not both.",
                        ));
                    }
                    for call in tool_calls {
                        self.validate_call_id(&call.id)?;
                        if !name_ok(&call.name) {
                            return Err(error(bad_name(&call.name)));
                        }
                    }
                    if *prefix && idx != last {
                        return Err(error(
                            "Assistant message with prefix True must be last message",
                        ));
                    }
                }
                Message::Tool {
                    content,
                    tool_call_id,
                    name,
                } => {
                    chunk_types(Some(content), &["TextChunk"], "tool")?;
                    if let Some(name) = name
                        && !name_ok(name)
                    {
                        return Err(error(bad_name(name)));
                    }
                    match (v, tool_call_id.as_deref()) {
                        (InstructVersion::V1 | InstructVersion::V2, _) => {}
                        (InstructVersion::V13, Some(id)) if !id.is_empty() && id != "null" => {}
                        (InstructVersion::V13, _) => return Err(error(INVALID_ID_V13)),
                        (_, None) => return Err(error("Tool call id has to be defined.")),
                        (_, Some(id)) if !id9_ok(id) => {
                            return Err(error(format!(
                                "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
                            )));
                        }
                        _ => {}
                    }
                }
                Message::System { content } => {
                    let allowed: &[&str] = if v <= InstructVersion::V3 {
                        &["TextChunk"]
                    } else {
                        &["TextChunk", "AudioChunk", "ThinkChunk"]
                    };
                    chunk_types(Some(content), allowed, "system")?;
                }
            }
        }
        for tool in tools {
            if !name_ok(tool.name) {
                return Err(error(bad_name(tool.name)));
            }
        }
        Ok(())
    }

    fn validate_call_id(&self, id: &str) -> Result<(), RenderError> {
        if self.version <= InstructVersion::V2 {
            return Ok(());
        }
        if self.version == InstructVersion::V13 {
            if id.is_empty() || id == "null" {
                return Err(error(INVALID_ID_V13));
            }
            return Ok(());
        }
        if id == "null" {
            return Err(error(
                "Tool call id 'null' is only allowed for the last assistant message in finetuning mode.",
            ));
        }
        if !id9_ok(id) {
            return Err(error(format!(
                "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
            )));
        }
        Ok(())
    }

    fn validate_tool_call_answers(&self, messages: &[Message]) -> Result<(), RenderError> {
        let mismatch = || error("Not the same number of function calls and responses");
        if self.version < InstructVersion::V11 {
            let mut expected: i64 = 0;
            for message in &messages[1..] {
                match message {
                    Message::Tool { .. } => expected -= 1,
                    Message::Assistant { tool_calls, .. } => {
                        if expected != 0 {
                            return Err(mismatch());
                        }
                        expected = tool_calls.len() as i64;
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
        let mut expected: HashSet<&str> = HashSet::new();
        let mut observed: HashSet<&str> = HashSet::new();
        for message in &messages[1..] {
            match message {
                Message::Tool { tool_call_id, .. } => {
                    let id = tool_call_id.as_deref().unwrap_or("None");
                    if observed.contains(id) {
                        return Err(error(format!(
                            "Duplicate tool call id {id} in tool results"
                        )));
                    }
                    if !expected.contains(id) {
                        return Err(error(format!(
                            "Unexpected tool call id {id} in tool results"
                        )));
                    }
                    observed.insert(id);
                }
                Message::Assistant { tool_calls, .. } => {
                    if expected.len() != observed.len() {
                        return Err(mismatch());
                    }
                    expected.clear();
                    observed.clear();
                    for call in tool_calls {
                        if !expected.insert(call.id.as_str()) {
                            return Err(error(format!(
                                "Duplicate tool call id {} in assistant message",
                                call.id
                            )));
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    // ---- normalizer -----------------------------------------------------------------

    /// `InstructRequestNormalizer(V7|V13).from_chat_completion_request`: the aggregated
    /// messages and (v3) the system prompt.
    pub(crate) fn normalize(
        &self,
        messages: Vec<Message>,
    ) -> Result<(Vec<Message>, Option<String>), RenderError> {
        let v3 = self.version <= InstructVersion::V3;
        let system_prompt = if v3 {
            let mut prompts = Vec::new();
            for message in &messages {
                if let Message::System { content } = message
                    && content.truthy()
                {
                    match aggregate(&[Some(content)], self.chunk_join()) {
                        Content::Str(s) => prompts.push(s),
                        Content::Chunks(_) => {
                            return Err(error("System prompt content must be text"));
                        }
                    }
                }
            }
            (!prompts.is_empty()).then(|| prompts.join("\n\n"))
        } else {
            None
        };

        let mut out: Vec<Message> = Vec::new();
        let mut latest_call_ids: Vec<String> = Vec::new();
        let mut group: Vec<Message> = Vec::new();
        let mut current: Option<Role> = None;
        for message in messages {
            if current != Some(message.role()) {
                self.flush(current, &mut group, &mut out, &mut latest_call_ids)?;
            }
            current = Some(message.role());
            group.push(message);
        }
        self.flush(current, &mut group, &mut out, &mut latest_call_ids)?;
        if out.is_empty() || (v3 && out[0].role() != Role::User) {
            out.insert(
                0,
                Message::User {
                    content: Content::Str(String::new()),
                },
            );
        }
        Ok((out, system_prompt))
    }

    fn chunk_join(&self) -> &'static str {
        "\n\n"
    }

    fn flush(
        &self,
        role: Option<Role>,
        group: &mut Vec<Message>,
        out: &mut Vec<Message>,
        latest_call_ids: &mut Vec<String>,
    ) -> Result<(), RenderError> {
        let messages = std::mem::take(group);
        match role {
            None => {}
            Some(Role::User) => {
                let contents: Vec<Option<&Content>> =
                    messages.iter().map(Message::content).collect();
                out.push(Message::User {
                    content: aggregate(&contents, self.chunk_join()),
                });
            }
            // v3 keeps system messages out of the list (they are the system prompt).
            Some(Role::System) if self.version <= InstructVersion::V3 => {}
            Some(Role::System) => {
                for message in &messages {
                    out.push(Message::System {
                        content: aggregate(&[message.content()], self.chunk_join()),
                    });
                }
            }
            Some(Role::Assistant) => {
                let contents: Vec<Option<&Content>> =
                    messages.iter().map(Message::content).collect();
                let content = aggregate(&contents, self.chunk_join());
                let mut tool_calls = Vec::new();
                let mut prefix = false;
                for message in &messages {
                    if let Message::Assistant {
                        content,
                        tool_calls: calls,
                        prefix: p,
                    } = message
                    {
                        if self.version <= InstructVersion::V3
                            && !calls.is_empty()
                            && content.as_ref().is_some_and(Content::truthy)
                        {
                            return Err(error(
                                "Tool calls and content cannot be used together in the same message.",
                            ));
                        }
                        for call in calls {
                            tool_calls.push(ToolCall {
                                id: call.id.clone(),
                                name: call.name.clone(),
                                arguments: normalize_json(&call.arguments),
                            });
                        }
                        prefix |= *p;
                    }
                }
                for call in &tool_calls {
                    latest_call_ids.push(call.id.clone());
                }
                out.push(Message::Assistant {
                    content: Some(content),
                    tool_calls,
                    prefix,
                });
            }
            Some(Role::Tool) => {
                let mut results = Vec::new();
                for message in messages {
                    if let Message::Tool {
                        content,
                        tool_call_id,
                        name,
                    } = message
                    {
                        let content = match aggregate(&[Some(&content)], self.chunk_join()) {
                            Content::Str(s) => s,
                            Content::Chunks(chunks) => {
                                let names: Vec<String> = chunks
                                    .iter()
                                    .map(|c| format!("'{}'", c.type_name()))
                                    .collect();
                                return Err(error(format!(
                                    "Unexpected content chunk types in tool message: [{}]",
                                    names.join(", ")
                                )));
                            }
                        };
                        let content = if self.version <= InstructVersion::V3 {
                            normalize_json(&content)
                        } else {
                            content
                        };
                        results.push((content, tool_call_id, name));
                    }
                }
                if self.version >= InstructVersion::V11 {
                    let call_index: HashMap<&str, usize> = latest_call_ids
                        .iter()
                        .enumerate()
                        .map(|(i, id)| (id.as_str(), i))
                        .collect();
                    let mut result_index: HashMap<Option<String>, usize> = HashMap::new();
                    for (i, (_, id, _)) in results.iter().enumerate() {
                        result_index.insert(id.clone(), i);
                    }
                    results.sort_by_key(|(_, id, _)| {
                        (
                            call_index
                                .get(id.as_deref().unwrap_or("null"))
                                .copied()
                                .unwrap_or(usize::MAX),
                            result_index.get(id).copied().unwrap_or(usize::MAX),
                        )
                    });
                }
                for (content, tool_call_id, name) in results {
                    out.push(Message::Tool {
                        content: Content::Str(content),
                        tool_call_id,
                        name,
                    });
                }
                latest_call_ids.clear();
            }
        }
        Ok(())
    }

    // ---- instruct tokenizer ---------------------------------------------------------

    pub(crate) fn encode(
        &self,
        messages: &[Message],
        system_prompt: Option<&str>,
        tools: &[ToolJson],
    ) -> Result<Vec<u32>, RenderError> {
        let s = self.specials;
        let first_user = messages.iter().position(|m| m.role() == Role::User);
        let last_user = messages.iter().rposition(|m| m.role() == Role::User);
        if self.version == InstructVersion::V2 {
            self.check_v2_tool_results(messages, last_user)?;
        }
        let mut out = vec![s.bos];
        for (idx, message) in messages.iter().enumerate() {
            let before_last_user = last_user.is_some_and(|last| idx < last);
            match message {
                Message::User { content } if self.version == InstructVersion::V1 => {
                    let Content::Str(text) = content else {
                        return Err(error("Message content must be normalized"));
                    };
                    let text = match system_prompt.filter(|p| !p.is_empty()) {
                        Some(prompt) if first_user == Some(idx) => format!("{prompt}\n\n{text}"),
                        _ => text.clone(),
                    };
                    self.text(&format!("[INST] {text} [/INST]"), &mut out)?;
                }
                Message::Tool { .. } if self.version == InstructVersion::V1 => {
                    return Err(error("Tools not implemented for tokenizer V1"));
                }
                Message::Tool { .. } if self.version == InstructVersion::V2 && before_last_user => {
                }
                Message::Assistant { tool_calls, .. }
                    if self.version == InstructVersion::V2
                        && before_last_user
                        && !tool_calls.is_empty() => {}
                Message::User { content } => {
                    let at_tools = if self.version == InstructVersion::V13 {
                        first_user == Some(idx)
                    } else {
                        last_user == Some(idx)
                    };
                    if at_tools && !tools.is_empty() {
                        out.push(s.tools);
                        self.text(&dumps_tools(tools), &mut out)?;
                        out.push(s.end_tools);
                    }
                    out.push(s.inst);
                    let prompt = if self.version <= InstructVersion::V3 && last_user == Some(idx) {
                        system_prompt.filter(|p| !p.is_empty())
                    } else {
                        None
                    };
                    match content {
                        Content::Str(text) => match prompt {
                            Some(prompt) => self.text(&format!("{prompt}\n\n{text}"), &mut out)?,
                            None => self.text(text, &mut out)?,
                        },
                        Content::Chunks(chunks) => {
                            if let Some(prompt) = prompt
                                && !chunks.is_empty()
                            {
                                self.text(&format!("{prompt}\n\n"), &mut out)?;
                            }
                            self.chunks(chunks, &mut out)?;
                        }
                    }
                    out.push(s.end_inst);
                }
                Message::Tool {
                    content,
                    tool_call_id,
                    name,
                } => {
                    self.tool_message(content, tool_call_id.as_deref(), name.as_deref(), &mut out)?
                }
                Message::Assistant {
                    content,
                    tool_calls,
                    prefix,
                } => {
                    self.assistant_message(content.as_ref(), tool_calls, *prefix, &mut out)?;
                    if !prefix {
                        out.push(s.eos);
                    }
                }
                Message::System { content } => {
                    let (Some(begin), Some(end)) = (s.system, s.end_system) else {
                        return Err(error("System message encoding not implemented"));
                    };
                    out.push(begin);
                    match content {
                        Content::Str(text) => self.text(text, &mut out)?,
                        Content::Chunks(chunks) => self.chunks(chunks, &mut out)?,
                    }
                    out.push(end);
                }
            }
        }
        Ok(out)
    }

    /// `InstructTokenizerV2._validate_tool_results`.
    fn check_v2_tool_results(
        &self,
        messages: &[Message],
        last_user: Option<usize>,
    ) -> Result<(), RenderError> {
        let Some(last_user) = last_user else {
            return Ok(());
        };
        let mut has_call_turn = false;
        let mut results = 0;
        for message in &messages[last_user..] {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    has_call_turn = !tool_calls.is_empty();
                    results = 0;
                }
                Message::Tool { .. } => {
                    if has_call_turn {
                        results += 1;
                        if results > 1 {
                            return Err(error(
                                "Tokenizer v2 does not support multiple tool results for one assistant turn.",
                            ));
                        }
                    }
                }
                _ => {
                    has_call_turn = false;
                    results = 0;
                }
            }
        }
        Ok(())
    }

    fn text(&self, text: &str, out: &mut Vec<u32>) -> Result<(), RenderError> {
        self.encoder.encode(text, out)
    }

    fn chunks(&self, chunks: &[Chunk], out: &mut Vec<u32>) -> Result<(), RenderError> {
        for chunk in chunks {
            match chunk {
                Chunk::Text(text) => self.text(text, out)?,
                Chunk::Think { thinking, closed } => {
                    if self.version < InstructVersion::V13 {
                        return Err(error("Think not implemented for tokenizer < V13."));
                    }
                    let (Some(begin), Some(end)) = (self.specials.think, self.specials.end_think)
                    else {
                        return Err(error("think tokens are not available for this tokenizer."));
                    };
                    out.push(begin);
                    self.text(thinking, out)?;
                    if *closed {
                        out.push(end);
                    }
                }
                Chunk::Media(kind) => {
                    return Err(if self.has_image_encoder || *kind == "audio" {
                        error(format!(
                            "{kind} content is not supported by this renderer (text-only Mistral rendering)"
                        ))
                    } else {
                        error("Make sure to define a image encoder at init")
                    });
                }
            }
        }
        Ok(())
    }

    fn tool_message(
        &self,
        content: &Content,
        id: Option<&str>,
        name: Option<&str>,
        out: &mut Vec<u32>,
    ) -> Result<(), RenderError> {
        let s = self.specials;
        let text = match content {
            Content::Str(text) => text.as_str(),
            Content::Chunks(_) => return Err(error("Message content must be normalized")),
        };
        match self.version {
            InstructVersion::V1 => return Err(error("Tools not implemented for tokenizer V1")),
            InstructVersion::V2 => {
                let mut result = Map::new();
                result.insert(
                    "name".into(),
                    name.map_or(Value::Null, |n| Value::String(n.to_owned())),
                );
                result.insert("content".into(), parse_json(text));
                out.push(s.results);
                self.text(
                    &dumps(&Value::Array(vec![Value::Object(result)]), false),
                    out,
                )?;
                out.push(s.end_results);
            }
            InstructVersion::V3 => {
                let Some(id) = id else {
                    return Err(error(
                        "Tool message has to have the tool call id defined in v3",
                    ));
                };
                let mut result = Map::new();
                result.insert(
                    "content".into(),
                    loads(text).unwrap_or_else(|| Value::String(text.to_owned())),
                );
                result.insert("call_id".into(), Value::String(id.to_owned()));
                out.push(s.results);
                self.text(&dumps(&Value::Object(result), false), out)?;
                out.push(s.end_results);
            }
            InstructVersion::V7 | InstructVersion::V11 => {
                let (Some(id), Some(tool_content)) = (id, s.tool_content) else {
                    return Err(error("Tool call id must be provided"));
                };
                out.push(s.results);
                self.text(id, out)?;
                out.push(tool_content);
                self.text(text, out)?;
                out.push(s.end_results);
            }
            InstructVersion::V13 => {
                out.push(s.results);
                self.text(text, out)?;
                out.push(s.end_results);
            }
        }
        Ok(())
    }

    fn assistant_message(
        &self,
        content: Option<&Content>,
        tool_calls: &[ToolCall],
        prefix: bool,
        out: &mut Vec<u32>,
    ) -> Result<(), RenderError> {
        let s = self.specials;
        let has_content = content.is_some_and(Content::truthy);
        if self.version == InstructVersion::V1 {
            if !tool_calls.is_empty() {
                return Err(error("Tools not implemented for tokenizer V1"));
            }
            return match content {
                Some(Content::Str(text)) if !text.is_empty() => self.text(text, out),
                Some(Content::Chunks(_)) => Err(error(
                    "Message content must be a string for tokenizer < V13",
                )),
                _ => Err(error("Invalid assistant message")),
            };
        }
        if self.version <= InstructVersion::V3 {
            if has_content && !tool_calls.is_empty() {
                return Err(error(
                    "Cannot have tool calls and content defined in the same assistant message",
                ));
            }
            if tool_calls.is_empty() && !has_content {
                return Err(error("Invalid assistant message: None"));
            }
        } else if !has_content && tool_calls.is_empty() {
            // The aggregated message's pydantic repr (its content can only be '' here).
            return Err(error(format!(
                "Invalid assistant message: role='assistant' content='' tool_calls=None prefix={}",
                if prefix { "True" } else { "False" }
            )));
        }
        if has_content {
            match content {
                Some(Content::Str(text)) => self.text(text.trim_end_matches(' '), out)?,
                Some(Content::Chunks(chunks)) => {
                    if self.version <= InstructVersion::V3 {
                        return Err(error("Message content must be a string for tokenizer < V7"));
                    }
                    self.chunks(chunks, out)?;
                }
                None => {}
            }
        }
        if tool_calls.is_empty() {
            return Ok(());
        }
        match self.version {
            InstructVersion::V1
            | InstructVersion::V2
            | InstructVersion::V3
            | InstructVersion::V7 => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        let mut prepared = Map::new();
                        prepared.insert("name".into(), Value::String(call.name.clone()));
                        prepared.insert("arguments".into(), parse_json(&call.arguments));
                        if self.version >= InstructVersion::V3
                            && !call.id.is_empty()
                            && call.id != "null"
                        {
                            prepared.insert("id".into(), Value::String(call.id.clone()));
                        }
                        Value::Object(prepared)
                    })
                    .collect();
                out.push(s.calls);
                self.text(&dumps(&Value::Array(calls), false), out)?;
            }
            InstructVersion::V11 | InstructVersion::V13 => {
                let (Some(args), call_id) = (s.args, s.call_id) else {
                    return Err(error("the vocabulary has no [ARGS] token"));
                };
                for call in tool_calls {
                    out.push(s.calls);
                    self.text(&call.name, out)?;
                    if self.version == InstructVersion::V11
                        && !call.id.is_empty()
                        && call.id != "null"
                    {
                        let Some(call_id) = call_id else {
                            return Err(error("the vocabulary has no [CALL_ID] token"));
                        };
                        out.push(call_id);
                        self.text(&call.id, out)?;
                    }
                    out.push(args);
                    self.text(&dumps(&parse_json(&call.arguments), false), out)?;
                }
            }
        }
        Ok(())
    }
}

const INVALID_ID_V13: &str =
    "Tool call id must be a non-empty string other than 'null' for tokenizer version 13 or newer.";

/// `_validate_content_chunk_types`.
fn chunk_types(content: Option<&Content>, allowed: &[&str], role: &str) -> Result<(), RenderError> {
    let Some(Content::Chunks(chunks)) = content else {
        return Ok(());
    };
    let mut invalid: Vec<&str> = chunks
        .iter()
        .map(Chunk::type_name)
        .filter(|name| !allowed.contains(name))
        .collect();
    invalid.sort_unstable();
    invalid.dedup();
    if invalid.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = invalid.iter().map(|n| format!("'{n}'")).collect();
    Err(error(format!(
        "Unexpected content chunk types in {role} message: [{}]",
        names.join(", ")
    )))
}

/// `_parse_json_content`: the parsed JSON, or the text itself.
fn parse_json(text: &str) -> Value {
    loads(text).unwrap_or_else(|| Value::String(text.to_owned()))
}

/// `_normalize_json_content`: `{}` for empty text, re-dumped JSON, or the text.
fn normalize_json(text: &str) -> String {
    if text.is_empty() {
        return "{}".to_owned();
    }
    match loads(text) {
        Some(value) => dumps(&value, false),
        None => text.to_owned(),
    }
}

/// `_aggregate_content_chunks_impl` with `msg_join_str = chunk_join_str = "\n\n"`.
pub(crate) fn aggregate(contents: &[Option<&Content>], join: &str) -> Content {
    let mut all: Vec<Chunk> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let flush = |parts: &mut Vec<String>, all: &mut Vec<Chunk>| {
        if !parts.is_empty() {
            all.push(Chunk::Text(parts.concat()));
            parts.clear();
        }
    };
    for content in contents {
        match content {
            None => continue,
            Some(c) if !c.truthy() => continue,
            Some(Content::Str(text)) => {
                let sep = if parts.is_empty() { "" } else { join };
                parts.push(format!("{sep}{text}"));
            }
            Some(Content::Chunks(chunks)) => {
                for chunk in chunks {
                    match chunk {
                        Chunk::Text(text) => {
                            if text.is_empty() {
                                continue;
                            }
                            let sep = if parts.is_empty() { "" } else { join };
                            parts.push(format!("{sep}{text}"));
                        }
                        other => {
                            flush(&mut parts, &mut all);
                            all.push(other.clone());
                        }
                    }
                }
            }
        }
    }
    if all.is_empty() {
        return Content::Str(parts.concat());
    }
    flush(&mut parts, &mut all);
    Content::Chunks(all)
}
