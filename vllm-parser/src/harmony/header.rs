//! A Harmony message header (the text between `<|start|>` and `<|message|>`),
//! parsed the way `openai_harmony`'s `StreamableParser` (oss-harmony 0.0.11, the
//! package vLLM 0.33.0 uses) parses it, then classified the way vLLM's
//! `HarmonyParser` routes the message.
//!
//! The header grammar is loose: `<|channel|>NAME` anywhere (the first one names the
//! channel, later ones are dropped), then ASCII-whitespace separated parts — an
//! optional role, an optional `to=RECIPIENT` (or a bare recipient) and an optional
//! content type (`json`, `<|constrain|>json`). Leftover parts make the header
//! invalid; the library then reports an error and vLLM skips the message.

use crate::text::py_is_space;

const CHANNEL: &str = "<|channel|>";
const CONSTRAIN: &str = "<|constrain|>";
/// Roles `openai_harmony` knows (`Role::try_from`).
const ROLES: &[&str] = &["user", "assistant", "system", "developer", "tool"];
/// vLLM's built-in tool namespaces: messages to them are not function calls.
const BUILTIN_TOOLS: &[&str] = &["python", "browser", "container"];

/// A parsed header: who speaks, to whom, on which channel, in what format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Header {
    /// Whether the author role is `assistant` (vLLM only keeps assistant messages).
    pub assistant: bool,
    /// `to=…`, after vLLM's `_normalize_recipient`.
    pub recipient: Option<String>,
    /// The channel (`analysis`, `commentary`, `final`, …).
    pub channel: Option<String>,
    /// The content type (`json`, `<|constrain|>json`, …).
    pub content_type: Option<String>,
}

/// Where a message's text goes (vLLM's `_SegmentType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    /// A function call: `name`, and whether the body is JSON to normalise.
    Tool { name: String, json: bool },
    /// The `analysis` channel.
    Reasoning,
    /// The `final` channel, or `commentary` with no recipient (a preamble).
    Content,
    /// Anything else (built-in tools, other channels, other roles).
    Ignore,
}

impl Header {
    /// Parse `text`, the decoded header. `role_given` is true for the first
    /// message of the output, whose `<|start|>assistant` the prompt already holds.
    /// `None` where `openai_harmony` raises an error.
    pub fn parse(text: &str, role_given: bool) -> Option<Header> {
        let mut header = text.to_owned();
        let mut channel = None;
        if let Some((value, rest)) = remove_channel(&header) {
            if value.is_empty() {
                return None;
            }
            channel = Some(value);
            header = rest;
            // oss-harmony drops every later `<|channel|>VALUE` as well.
            while let Some((_, rest)) = remove_channel(&header) {
                header = rest;
            }
        }
        let mut header = header.trim().to_owned();
        if header.contains(CONSTRAIN) {
            header = header
                .replace(CONSTRAIN, &format!(" {CONSTRAIN}"))
                .trim()
                .to_owned();
        }
        let mut parts: Vec<&str> = header.split_ascii_whitespace().collect();
        let role = if role_given {
            "assistant"
        } else {
            let first = *parts.first()?;
            match ROLES.iter().find(|role| **role == first) {
                Some(role) => role,
                None if parts.len() > 1 || first.starts_with("to=") => {
                    parts.remove(0);
                    "tool"
                }
                None => return None,
            }
        };
        if parts.first() == Some(&role) {
            parts.remove(0);
        }
        let (mut recipient, mut content_type) = (None, None);
        if let Some(last) = parts.pop() {
            if let Some(stripped) = last.strip_prefix("to=") {
                recipient = Some(stripped);
            } else if parts.is_empty() {
                recipient = Some(last);
            } else {
                content_type = Some(last.to_owned());
                recipient = parts
                    .pop()
                    .map(|raw| raw.strip_prefix("to=").unwrap_or(raw));
            }
        }
        if !parts.is_empty() {
            return None;
        }
        Some(Header {
            assistant: role == "assistant",
            recipient: recipient.and_then(normalize_recipient),
            channel,
            content_type,
        })
    }

    /// Where vLLM's whole-text `HarmonyParser.parse` puts this message's text.
    pub fn route(&self) -> Route {
        if !self.assistant {
            return Route::Ignore;
        }
        if let Some(recipient) = self.recipient.as_deref().filter(|r| is_function(r)) {
            let json = self
                .content_type
                .as_deref()
                .is_none_or(|kind| kind.contains("json"));
            let name = recipient.strip_prefix("functions.").unwrap_or(recipient);
            return Route::Tool {
                name: name.to_owned(),
                json,
            };
        }
        match self.channel.as_deref() {
            Some("analysis") => Route::Reasoning,
            Some("final") => Route::Content,
            Some("commentary") if self.recipient.is_none() => Route::Content,
            _ => Route::Ignore,
        }
    }
}

/// The first `<|channel|>VALUE` in `header`: the value (up to whitespace or `<`)
/// and the header without marker and value.
fn remove_channel(header: &str) -> Option<(String, String)> {
    let at = header.find(CHANNEL)?;
    let after = &header[at + CHANNEL.len()..];
    let end = after
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(after.len());
    let rest = format!("{}{}", &header[..at], &after[end..]);
    Some((after[..end].to_owned(), rest))
}

/// vLLM's `_normalize_recipient`: drop a `<|constrain|>…` that older Harmony
/// versions left in the recipient.
fn normalize_recipient(recipient: &str) -> Option<String> {
    match recipient.find(CONSTRAIN) {
        None => Some(recipient.to_owned()),
        Some(at) => {
            let kept = recipient[..at].trim_end_matches(py_is_space);
            (!kept.is_empty()).then(|| kept.to_owned())
        }
    }
}

/// vLLM's `is_function_recipient` for chat completions.
fn is_function(recipient: &str) -> bool {
    if recipient.is_empty() || recipient.starts_with("<|") {
        return false;
    }
    if let Some(name) = recipient.strip_prefix("functions.") {
        return !name.is_empty();
    }
    let first = recipient.split('.').next().unwrap_or(recipient);
    recipient != "assistant"
        && !BUILTIN_TOOLS.contains(&recipient)
        && !BUILTIN_TOOLS.contains(&first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(text: &str, role_given: bool) -> Option<Route> {
        Header::parse(text, role_given).map(|h| h.route())
    }

    #[test]
    fn headers_route_like_vllm() {
        let tool = |name: &str, json| Route::Tool {
            name: name.into(),
            json,
        };
        assert_eq!(route("<|channel|>analysis", true), Some(Route::Reasoning));
        assert_eq!(
            route(
                "assistant<|channel|>commentary to=functions.f <|constrain|>json",
                false
            ),
            Some(tool("f", true))
        );
        assert_eq!(
            route("assistant to=functions.f<|channel|>commentary code", false),
            Some(tool("f", false))
        );
        assert_eq!(
            route("<|channel|>commentary to=python", true),
            Some(Route::Ignore)
        );
        assert_eq!(route("user<|channel|>final", false), Some(Route::Ignore));
        assert_eq!(
            route("<|channel|>final<|channel|>analysis", true),
            Some(Route::Content)
        );
        // Errors in openai_harmony: empty channel, leftover parts, unknown role.
        assert_eq!(route("<|channel|> final", true), None);
        assert_eq!(route("a b c<|channel|>final", true), None);
        assert_eq!(route("Assistant<|channel|>final", false), None);
    }

    #[test]
    fn constrained_formats_leave_the_recipient() {
        assert_eq!(
            normalize_recipient(" f\u{1f}<|constrain|>json"),
            Some(" f".into())
        );
        assert_eq!(normalize_recipient("f <|constrain|>json"), Some("f".into()));
        assert_eq!(normalize_recipient(" <|constrain|>json"), None);
    }
}
