//! vLLM 0.33.0's `--tool-strict-level` (`vllm/tool_parsers/tool_strict_level.py`):
//! a server-side floor for structural-tag based tool calling.
//!
//! When the server does not set it, each tool parser's own
//! `default_tool_strict_level` applies (`function` for GLM-4.5/4.7, `auto` for
//! the others). `DelegatingParser._apply_structural_tag` then raises the level
//! to at least `function` for `parallel_tool_calls: false` (except `auto` with
//! structured outputs), and `resolve_tool_strictness` reads it: at `auto` an
//! `auto` request without strict tools gets no structural tag; at `parameter`
//! every tool is treated as `strict: true`.

use std::fmt;
use std::str::FromStr;

/// vLLM's `ToolStrictLevel`, ordered like its `IntEnum` (`Auto < Function <
/// Parameter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ToolStrictLevel {
    /// `auto` (0): call constraints follow `tool_choice`, argument schemas
    /// each tool's explicit `strict` field.
    Auto,
    /// `function` (1): the tool-call envelope (markup and function name) is
    /// constrained for every request with tools.
    Function,
    /// `parameter` (2): argument schemas are pinned too, as if every tool were
    /// `strict: true`.
    Parameter,
}

impl ToolStrictLevel {
    /// Every level, in vLLM's order.
    pub const ALL: [Self; 3] = [Self::Auto, Self::Function, Self::Parameter];

    /// The name vLLM's flag takes (`auto`, `function`, `parameter`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Function => "function",
            Self::Parameter => "parameter",
        }
    }

    /// `ToolStrictLevel.from_name`: the name with surrounding whitespace
    /// removed, in any case (`cls[name.strip().upper()]`).
    pub fn from_name(name: &str) -> Result<Self, UnknownToolStrictLevel> {
        // Python's `str.strip()` also strips U+001C..U+001F.
        let trimmed =
            name.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c));
        let upper = trimmed.to_uppercase();
        Self::ALL
            .into_iter()
            .find(|level| upper == level.name().to_ascii_uppercase())
            .ok_or_else(|| UnknownToolStrictLevel {
                name: name.to_owned(),
            })
    }
}

impl fmt::Display for ToolStrictLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ToolStrictLevel {
    type Err = UnknownToolStrictLevel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s)
    }
}

/// A `--tool-strict-level` value vLLM does not know, with vLLM's message
/// (`Unknown tool strict level 'x'; expected one of auto, function,
/// parameter.`): pass one of the names it lists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "Unknown tool strict level {}; expected one of auto, function, parameter.",
    py_str_repr(name)
)]
pub struct UnknownToolStrictLevel {
    /// The name as given.
    pub name: String,
}

/// Python's `repr` of a `str`: single quotes unless the text holds a single
/// quote and no double quote; backslashes, the quote and non-printable
/// characters escaped.
pub(crate) fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..=0xa0).contains(&(c as u32)) || c == '\u{ad}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            // Unicode separators and common format characters Python does
            // not print.
            c if matches!(c as u32, 0x1680 | 0x2000..=0x200f | 0x2028..=0x202f
                | 0x205f..=0x2064 | 0x3000 | 0xfeff) =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_vllms_from_name() {
        assert_eq!("auto".parse(), Ok(ToolStrictLevel::Auto));
        assert_eq!(" Function\n".parse(), Ok(ToolStrictLevel::Function));
        assert_eq!("PARAMETER".parse(), Ok(ToolStrictLevel::Parameter));
        assert!(ToolStrictLevel::Auto < ToolStrictLevel::Function);
        assert!(ToolStrictLevel::Function < ToolStrictLevel::Parameter);
        for level in ToolStrictLevel::ALL {
            assert_eq!(level.name().parse(), Ok(level));
        }
    }

    #[test]
    fn unknown_names_give_vllms_message() {
        assert_eq!(
            "strict".parse::<ToolStrictLevel>().unwrap_err().to_string(),
            "Unknown tool strict level 'strict'; expected one of auto, function, parameter."
        );
        assert_eq!(
            "it's".parse::<ToolStrictLevel>().unwrap_err().to_string(),
            "Unknown tool strict level \"it's\"; expected one of auto, function, parameter."
        );
        assert!("".parse::<ToolStrictLevel>().is_err());
        assert_eq!(
            "a\u{1}b\u{200b}"
                .parse::<ToolStrictLevel>()
                .unwrap_err()
                .to_string(),
            "Unknown tool strict level 'a\\x01b\\u200b'; expected one of auto, function, parameter."
        );
        // `str.upper()` and `str.strip()` as Python applies them.
        assert_eq!("funct\u{131}on".parse(), Ok(ToolStrictLevel::Function));
        assert_eq!("\u{1c}auto".parse(), Ok(ToolStrictLevel::Auto));
    }
}
