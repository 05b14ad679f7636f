//! The EBNF grammar of a Cohere Command tool-call list, as vLLM 0.33.0's
//! `collect_tool_schema` (`vllm/parser/cohere_command.py`) builds it: each
//! tool's call object (`tool_call_id`, `tool_name`, `parameters`) through
//! xgrammar's JSON-schema conversion ([`super::json_schema_grammar`]), its
//! rule names prefixed with the tool's name by a textual word-boundary
//! replace, then one grammar for a JSON array of calls.
//!
//! The replace is vLLM's, quirks included: every `NAME ::=` found in the
//! converted text (string literals too) has each whole-word `NAME` in the text
//! (string literals too: a property named `root` becomes `"<tool>root"`)
//! replaced by `<tool>NAME`, one name after the other.

use serde_json::{Map, Value, json};

use super::json_schema_grammar::{
    MAX_JSON_NESTING, Unsupported, compiles, exceeds_json_nesting, from_json_schema,
};
use crate::tools::Tool;

/// Why [`cohere_tools_grammar`] gives no grammar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolGrammarError {
    /// vLLM refuses the request (`check_json_nesting`, a 400) with this message.
    #[error("{0}")]
    Refused(String),
    /// xgrammar refuses a tool's schema (an unknown `type`, `minLength`
    /// above `maxLength`, …): vLLM fails the request with xgrammar's
    /// `RuntimeError`, a 500. Fix the tool's JSON schema.
    #[error(
        "xgrammar cannot compile the JSON schema of tool {tool:?}; vLLM fails the request \
         (fix the tool's parameters schema)"
    )]
    XgrammarRefused {
        /// The tool's name.
        tool: String,
    },
    /// A tool's schema is outside the subset converted exactly: vLLM builds a
    /// grammar this crate does not reproduce.
    #[error("tool {tool:?}: {reason}")]
    Unsupported {
        /// The tool's name.
        tool: String,
        /// What is outside the subset.
        reason: Unsupported,
    },
}

/// vLLM 0.33.0's `collect_tool_schema(tools)`: the grammar string of the
/// Cohere Command tools structural tag, byte for byte, or why there is none.
pub fn cohere_tools_grammar(tools: &[Tool]) -> Result<String, ToolGrammarError> {
    // vLLM checks each tool's nesting just before converting it; conversion
    // errors aside, a too-deep tool anywhere refuses the request.
    for tool in tools {
        if exceeds_json_nesting(&tool.parameters, MAX_JSON_NESTING) {
            return Err(ToolGrammarError::Refused(format!(
                "The JSON schema is nested too deeply: objects and arrays may nest at most \
                 {MAX_JSON_NESTING} levels"
            )));
        }
    }
    // vLLM converts the tools in order and fails at the first schema xgrammar
    // refuses, whatever the others are.
    let schemas: Vec<Value> = tools.iter().map(tool_schema).collect();
    if let Some(tool) = tools
        .iter()
        .zip(&schemas)
        .find_map(|(tool, schema)| (compiles(schema) == Ok(false)).then_some(tool))
    {
        return Err(ToolGrammarError::XgrammarRefused {
            tool: tool.name.clone(),
        });
    }
    let mut entries: Vec<(&str, String)> = Vec::new();
    for (tool, schema) in tools.iter().zip(&schemas) {
        let unsupported = |reason| ToolGrammarError::Unsupported {
            tool: tool.name.clone(),
            reason,
        };
        let grammar = tool_grammar(&tool.name, schema).map_err(unsupported)?;
        let entry = format!("{name} ::= {name}root\n{grammar}", name = tool.name);
        // A dict keyed by name: a repeated name keeps its place, the last wins.
        match entries.iter_mut().find(|(name, _)| *name == tool.name) {
            Some(slot) => slot.1 = entry,
            None => entries.push((&tool.name, entry)),
        }
    }
    let alternatives: Vec<&str> = entries.iter().map(|(name, _)| *name).collect();
    let rules: Vec<&str> = entries.iter().map(|(_, rule)| rule.as_str()).collect();
    Ok(format!(
        "root ::= tools\n    tools ::= ws \"[\" ws tool (ws \",\" ws tool)* ws \"]\" ws\n    \
         ws    ::= (\" \" | \"\\t\" | \"\\n\")*\n    tool ::= {}\n    {}\n    ",
        alternatives.join(" | "),
        rules.join("\n    ")
    ))
}

/// One tool's converted call object (its [`tool_schema`]), its rules renamed.
fn tool_grammar(name: &str, schema: &Value) -> Result<String, Unsupported> {
    // The replacement is a `re.sub` template: a backslash would be an escape.
    // Non-ASCII names would need Python's Unicode `\b`.
    if !name.is_ascii() || name.contains('\\') {
        return Err(Unsupported::Keyword(format!("tool name {name:?}")));
    }
    let grammar = from_json_schema(schema)?;
    Ok(rename_rules(&grammar, name))
}

/// The call object vLLM converts for a tool: its id, its name, its
/// parameters (their `$defs` / `definitions` moved to the top).
fn tool_schema(tool: &Tool) -> Value {
    let name = &tool.name;
    let mut parameters = match &tool.parameters {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut schema = json!({
        "type": "object",
        "properties": {
            "tool_call_id": {"type": "string", "pattern": "^[0-9]+$"},
            "tool_name": {"type": "string", "const": name},
        },
    });
    let defs: Vec<(&str, Value)> = ["$defs", "definitions"]
        .into_iter()
        .filter_map(|key| parameters.remove(key).map(|defs| (key, defs)))
        .collect();
    schema["properties"]["parameters"] = Value::Object(parameters);
    for (key, defs) in defs {
        schema[key] = defs;
    }
    schema
}

/// Python's `\w` on ASCII text.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `re.findall(r"\b(\w+)\s*::=", text)`, then for each name in turn
/// `re.sub(rf"\b{name}\b", prefix + name, text)`.
fn rename_rules(text: &str, prefix: &str) -> String {
    let names = defined_names(text);
    let mut text = text.to_owned();
    for name in names {
        text = replace_word(&text, &name, &format!("{prefix}{name}"));
    }
    text
}

/// Every maximal word followed by optional whitespace and `::=`.
fn defined_names(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_word(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
        let mut j = i;
        while j < bytes.len() && matches!(bytes[j], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            j += 1;
        }
        if bytes[j..].starts_with(b"::=") {
            names.push(text[start..i].to_owned());
            i = j + 3;
        }
    }
    names
}

/// Every occurrence of `word` with no word character on either side,
/// replaced by `replacement`.
fn replace_word(text: &str, word: &str, replacement: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find(word) {
        let at = from + found;
        let end = at + word.len();
        let before = at == 0 || !is_word(bytes[at - 1]);
        let after = end == bytes.len() || !is_word(bytes[end]);
        if before && after {
            out.push_str(&text[last..at]);
            out.push_str(replacement);
            last = end;
            from = end;
        } else {
            from = at + text[at..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_is_a_whole_word_replace_over_the_text() {
        let text = "root ::= ((root_1) | (\"\\\"root\\\"\"))\nroot_1 ::= ((basic_root))\n";
        assert_eq!(
            rename_rules(text, "f"),
            "froot ::= ((froot_1) | (\"\\\"froot\\\"\"))\nfroot_1 ::= ((basic_root))\n"
        );
        // A name ending in a non-word character lets later names match again.
        assert_eq!(
            rename_rules("a ::= b\nb ::= a\n", "t-"),
            "t-a ::= t-b\nt-b ::= t-a\n"
        );
    }

    #[test]
    fn nesting_is_counted_as_vllm_counts_it() {
        let mut deep = json!({});
        for _ in 0..63 {
            deep = json!({ "a": deep });
        }
        assert!(!exceeds_json_nesting(&deep, MAX_JSON_NESTING));
        let deeper = json!({ "a": deep });
        assert!(exceeds_json_nesting(&deeper, MAX_JSON_NESTING));
    }
}
