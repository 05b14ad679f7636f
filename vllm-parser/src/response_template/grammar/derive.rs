//! The structural tag derived from a template's fields: reasoning, then tool
//! calls in the template's own call format and/or the answer
//! (`tool_call_structural_tag`, `answer_rest_structural_tag` and their
//! helpers in `vllm/parser/response_template_grammar.py`).

use serde_json::{Value, json};

use super::format::{
    any_text, any_text_excluding, const_strings, json_schema, one_of, optional, regex, sequence,
    star, structural_tag, tag,
};
use super::literals::{class_escape, continuing, escape, literals, other_names, split_group};
use super::{Function, GrammarError};
use crate::response_template::{Delimiter, Field, Pattern, ResponseTemplate};

/// Characters JSON writes outside strings (`_JSON_SYNTAX`).
const JSON_SYNTAX: &str = " \t\n\r{}[],:\"-+.0123456789eEtrufalsn";

/// The longest tool name whose negation (`_other_names`) is derived.
const MAX_NAME_CHARS: usize = 512;

type Derived<T> = Result<Option<T>, GrammarError>;

/// The elements of the output after reasoning, from a message start (its
/// anchors) or not (`None`).
type Output<'a> = dyn Fn(Option<&[String]>) -> Derived<Vec<Value>> + 'a;

fn unsupported(error: String) -> GrammarError {
    GrammarError::Unsupported(error)
}

/// The regex vLLM compiled for a delimiter (`open_re.pattern`).
fn source(delimiter: &Delimiter) -> String {
    match (&delimiter.source, &delimiter.literals) {
        (Some(source), _) => source.clone(),
        (None, Some(literals)) => {
            let mut ordered = literals.clone();
            ordered.sort_by_key(|s| std::cmp::Reverse(s.chars().count()));
            let escaped: Vec<String> = ordered.iter().map(|l| regex_syntax::escape(l)).collect();
            escaped.join("|")
        }
        (None, None) => String::new(),
    }
}

/// `message_start_anchors`: the strings the assistant message starts after,
/// if literal.
pub(crate) fn message_start_anchors(template: &ResponseTemplate) -> Vec<String> {
    if !template.start_anchor_literals.is_empty() {
        return template.start_anchor_literals.clone();
    }
    template
        .start_anchor_source
        .as_deref()
        .and_then(|s| literals(s, false, false))
        .unwrap_or_default()
}

/// `_openers`: a field's openers, with continuations of message-start anchors.
pub(crate) fn openers(field: &Field, message_start: Option<&[String]>) -> Derived<Vec<String>> {
    let Some(open) = &field.open else {
        return Ok(None);
    };
    let openers = match &open.literals {
        Some(l) if !l.is_empty() => Some(l.clone()),
        _ => literals(&source(open), message_start.is_some(), false),
    };
    continuing(openers, message_start, &source(open)).map_err(unsupported)
}

/// `_closers`: literal closers, empty without a closer, `None` if underivable.
pub(crate) fn closers(field: &Field) -> Option<Vec<String>> {
    let Some(close) = &field.close else {
        return Some(Vec::new());
    };
    match &close.literals {
        Some(l) if !l.is_empty() => Some(l.clone()),
        _ => literals(&source(close), false, false),
    }
}

/// `_thinking_format`: the reasoning, holding at least a character if
/// `nonempty`.
fn thinking_format(
    thinking: &Field,
    message_start: Option<&[String]>,
    nonempty: bool,
) -> Derived<Value> {
    let (Some(openers), Some(closers)) = (openers(thinking, message_start)?, closers(thinking))
    else {
        return Ok(None);
    };
    if openers.is_empty() || closers.is_empty() {
        return Ok(None);
    }
    let text = if nonempty {
        sequence(vec![nonempty_start(&closers), any_text()])
    } else {
        any_text()
    };
    Ok(Some(one_of(
        openers
            .iter()
            .map(|opener| tag(opener, text.clone(), &closers))
            .collect(),
    )))
}

/// `_nonempty_start`: the start of text that is not empty and does not begin
/// with one of the `closers`.
fn nonempty_start(closers: &[String]) -> Value {
    let closers: Vec<Vec<char>> = closers
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| c.chars().collect())
        .collect();
    let starts: Vec<char> = closers.iter().map(|c| c[0]).collect();
    let mut prefixes: Vec<&[char]> = vec![&[]];
    for closer in &closers {
        for end in 1..closer.len() {
            let prefix = &closer[..end];
            if !prefixes.contains(&prefix) {
                prefixes.push(prefix);
            }
        }
    }
    let mut branches = Vec::new();
    for prefix in prefixes {
        // A prefix holding a whole closer has already closed the text.
        if closers
            .iter()
            .any(|c| prefix.windows(c.len()).any(|w| w == c.as_slice()))
        {
            continue;
        }
        let mut excluded: Vec<char> = starts.clone();
        excluded.extend(
            closers
                .iter()
                .filter(|c| c.len() > prefix.len() && c.starts_with(prefix))
                .map(|c| c[prefix.len()]),
        );
        excluded.sort_unstable();
        excluded.dedup();
        let excluded: String = excluded.into_iter().map(class_escape).collect();
        let prefix: String = prefix.iter().collect();
        branches.push(format!("{}[^{excluded}]", escape(&prefix)));
    }
    regex(&branches.join("|"))
}

/// `_reply_format`: the answer field holding `content` (free text if none).
fn reply_format(
    answer: &Field,
    message_start: Option<&[String]>,
    content: Option<&Value>,
) -> Derived<Value> {
    let (Some(openers), Some(closers)) = (openers(answer, message_start)?, closers(answer)) else {
        return Ok(None);
    };
    if openers.is_empty() {
        return Ok(None);
    }
    let mut elements = vec![const_strings(&openers)];
    elements.extend(answer_text(&closers, content));
    Ok(Some(sequence(elements)))
}

/// `_answer_text`: text that cannot close the answer early, then its
/// optional closer (a stop token may end it instead).
fn answer_text(closers: &[String], content: Option<&Value>) -> Vec<Value> {
    let mut elements = vec![match content {
        Some(content) => content.clone(),
        None => any_text_excluding(closers),
    }];
    if !closers.is_empty() {
        elements.push(optional(const_strings(closers)));
    }
    elements
}

/// `answer_rest_structural_tag`: the rest of an answer that is already open.
pub(crate) fn answer_rest_structural_tag(answer: &Field) -> Option<Value> {
    let closers = closers(answer)?;
    Some(structural_tag(sequence(answer_text(&closers, None))))
}

/// `_spells_closer` for JSON arguments: whether text ending in a character
/// JSON writes outside strings, followed by the start of a closer, could
/// spell a closer across the two.
fn json_spells_closer(closers: &[String]) -> bool {
    closers.iter().any(|closer| {
        let chars: Vec<char> = closer.chars().collect();
        (1..chars.len()).any(|split| {
            let rest: String = chars[split..].iter().collect();
            JSON_SYNTAX.contains(chars[split - 1])
                && closers
                    .iter()
                    .any(|c| c.starts_with(rest.as_str()) || rest.starts_with(c.as_str()))
        })
    })
}

/// `_json_format`: JSON unless a closer is ambiguous with its syntax or
/// xgrammar cannot compile the schema.
pub(super) fn json_format(schema: &Value, closers: &[String]) -> Derived<Value> {
    if !closers.is_empty()
        && (closers
            .iter()
            .any(|c| c.chars().all(|ch| JSON_SYNTAX.contains(ch)))
            || !super::json_compiles(schema)?)
    {
        return Ok(None);
    }
    Ok(Some(json_schema(schema, closers)))
}

/// `_arguments_format` for the argument formats this crate derives.
fn arguments_format(field: &Field, parameters: &Value, strict: bool) -> Derived<Value> {
    let closers = closers(field).unwrap_or_default();
    match field.content_name.as_str() {
        "json" if field.content_args.is_empty() => {
            if json_spells_closer(&closers) {
                return Ok(None);
            }
            let loose = json!({"type": "object"});
            json_format(if strict { parameters } else { &loose }, &closers)
        }
        "xml-inline" => super::xml::arguments_format(field, parameters, strict),
        _ => Ok(None),
    }
}

/// `_names_function_by_opener`: the tool opener's `name` group names the
/// function, whose arguments are the region's content.
fn names_function_by_opener(field: &Field) -> bool {
    let function = field
        .transform
        .as_ref()
        .and_then(|t| t.as_object())
        .and_then(|t| t.get("function"))
        .and_then(Value::as_object);
    field
        .open
        .as_ref()
        .is_some_and(|o| o.source.is_some() && o.pattern.group_names().any(|n| n == "name"))
        && !field.transform_each
        && function.is_some_and(|f| {
            f.get("name").and_then(Value::as_str) == Some("{name}")
                && f.get("arguments").and_then(Value::as_str) == Some("{content}")
        })
}

/// `_call_opener`: the regex of a call's opener naming `name`.
fn call_opener(
    before: &str,
    name: &str,
    after: &str,
    message_start: Option<&[String]>,
) -> Result<String, GrammarError> {
    let mut before = before.to_owned();
    if message_start.is_some() && !before.is_empty() {
        // Text before a name inside a group is no pattern of its own.
        if let Some(found) = literals(&before, true, false).filter(|l| !l.is_empty()) {
            let found = continuing(Some(found), message_start, &before)
                .map_err(unsupported)?
                .unwrap_or_default();
            let escaped: Vec<String> = found.iter().map(|l| escape(l)).collect();
            before = format!("(?:{})", escaped.join("|"));
        }
    }
    Ok(format!("{before}{name}{after}"))
}

/// What a request asks of [`tool_call_structural_tag`].
pub(crate) struct CallTag<'a> {
    pub field: Option<&'a Field>,
    pub functions: &'a [Function<'a>],
    pub parallel_tool_calls: bool,
    pub thinking: Option<&'a Field>,
    pub answer: Option<&'a Field>,
    pub answer_format: Option<&'a Value>,
    pub message_start: Option<&'a [String]>,
    pub requires_reasoning: bool,
}

/// `tool_call_structural_tag` with `sorted_arguments` and `strict_arguments`
/// on, as `beam` calls it.
pub(crate) fn tool_call_structural_tag(spec: &CallTag) -> Derived<Value> {
    if spec.functions.is_empty()
        && let Some(answer) = spec.answer
    {
        let reply = |start: Option<&[String]>| {
            Ok(reply_format(answer, start, spec.answer_format)?.map(|f| vec![f]))
        };
        return frame(
            &reply,
            spec.thinking,
            spec.message_start,
            spec.requires_reasoning,
        );
    }
    let Some(field) = spec.field.filter(|f| names_function_by_opener(f)) else {
        return Ok(None);
    };
    if spec.functions.is_empty() {
        return Ok(None);
    }
    let opener_source = field
        .open
        .as_ref()
        .and_then(|o| o.source.clone())
        .unwrap_or_default();
    let (Some((before, name_pattern, after)), Some(closer_literals)) =
        (split_group(&opener_source, "name"), closers(field))
    else {
        return Ok(None);
    };
    let default_parameters = json!({"type": "object", "properties": {}});
    let mut arguments = Vec::new();
    let mut enforced = Vec::new();
    for function in spec.functions {
        // Like the generic JSON schema, a function without parameters takes none.
        let parameters = if crate::py_truthy(function.parameters) {
            function.parameters
        } else {
            &default_parameters
        };
        // strict_arguments: the schema is enforced where the template can.
        let mut function_arguments = match arguments_format(field, parameters, true) {
            // A name the template cannot spell fails only a strict function.
            Err(GrammarError::Unencodable(_)) if !function.strict => None,
            other => other?,
        };
        enforced.push(function_arguments.is_some());
        if function_arguments.is_none() && !function.strict {
            function_arguments = arguments_format(field, parameters, false)?;
        }
        let Some(function_arguments) = function_arguments else {
            return Ok(None);
        };
        arguments.push(function_arguments);
    }
    let name_matcher = Pattern::to_end(name_pattern).map_err(unsupported)?;
    let mut names = Vec::new();
    for function in spec.functions {
        if !name_matcher.matches_from(function.name, 0) {
            return Err(GrammarError::Unencodable(format!(
                "tool name {} cannot be encoded in tool calls",
                crate::serving::py_str_repr(function.name)
            )));
        }
        names.push(escape(function.name));
    }
    if spec.answer.is_some() {
        let enforced_names: Vec<&str> = spec
            .functions
            .iter()
            .zip(&enforced)
            .filter(|(_, e)| **e)
            .map(|(f, _)| f.name)
            .collect();
        // vLLM recurses once per character of a name here (a name near
        // Python's recursion limit fails the request); so bounded here.
        if enforced_names
            .iter()
            .any(|n| n.chars().count() > MAX_NAME_CHARS)
        {
            return Err(unsupported(format!(
                "a tool name longer than {MAX_NAME_CHARS} characters"
            )));
        }
        let others = other_names(name_pattern, &enforced_names);
        let loose = arguments_format(field, &json!({}), false)?;
        if let (Some(others), Some(loose)) = (others, loose) {
            // Calls to any function whose schema is not enforced take any arguments.
            names = keep_enforced(names, &enforced);
            names.push(format!("(?:{others})"));
            arguments = keep_enforced(arguments, &enforced);
            arguments.push(loose);
        }
    }
    let closers = (!closer_literals.is_empty()).then(|| const_strings(&closer_literals));
    let call = |start: Option<&[String]>| -> Result<Value, GrammarError> {
        let calls = names
            .iter()
            .zip(&arguments)
            .map(|(name, args)| {
                Ok(sequence(vec![
                    regex(&call_opener(before, name, after, start)?),
                    args.clone(),
                ]))
            })
            .collect::<Result<Vec<_>, GrammarError>>()?;
        Ok(one_of(calls))
    };
    let output = |start: Option<&[String]>| -> Derived<Vec<Value>> {
        let mut elements = vec![call(start)?];
        if spec.parallel_tool_calls && field.repeats {
            let repeated = match &closers {
                Some(closers) => sequence(vec![closers.clone(), call(None)?]),
                None => call(None)?,
            };
            elements.push(star(repeated));
        }
        if let Some(closers) = &closers {
            // EOS can terminate a call without writing its closer.
            elements.push(optional(closers.clone()));
        }
        if let Some(answer) = spec.answer {
            let Some(reply) = reply_format(answer, start, spec.answer_format)? else {
                return Ok(None);
            };
            elements = vec![one_of(vec![sequence(elements), reply])];
        }
        Ok(Some(elements))
    };
    frame(
        &output,
        spec.thinking,
        spec.message_start,
        spec.requires_reasoning,
    )
}

fn keep_enforced<T>(items: Vec<T>, enforced: &[bool]) -> Vec<T> {
    items
        .into_iter()
        .zip(enforced)
        .filter(|(_, e)| **e)
        .map(|(item, _)| item)
        .collect()
}

/// `_structural_tag`: the output after optional reasoning, or from the first
/// token at the message start (opening with non-empty reasoning if
/// `requires_reasoning`).
fn frame(
    output: &Output,
    thinking: Option<&Field>,
    message_start: Option<&[String]>,
    requires_reasoning: bool,
) -> Derived<Value> {
    let Some(mut rest) = output(None)? else {
        return Ok(None);
    };
    let think = match thinking {
        None => None,
        Some(thinking) => match thinking_format(thinking, message_start, requires_reasoning)? {
            None => return Ok(None),
            some => some,
        },
    };
    let Some(start_anchors) = message_start else {
        if let Some(think) = think {
            rest.insert(0, optional(think));
        }
        return Ok(Some(structural_tag(sequence(rest))));
    };
    if let Some(think) = &think
        && requires_reasoning
    {
        let mut elements = vec![think.clone()];
        elements.extend(rest);
        return Ok(Some(structural_tag(sequence(elements))));
    }
    let Some(start) = output(Some(start_anchors))? else {
        return Ok(None);
    };
    let mut format = sequence(start);
    if let Some(think) = think {
        let mut elements = vec![think];
        elements.extend(rest);
        format = one_of(vec![sequence(elements), format]);
    }
    Ok(Some(structural_tag(format)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_closers_that_json_could_spell() {
        assert!(!json_spells_closer(&["<tool_call|>".into()]));
        // Checked against vLLM's `_spells_closer(closers, (_JSON_PIECE,))`.
        assert!(!json_spells_closer(&["}}<end>".into()]));
        assert!(json_spells_closer(&["a}b".into(), "b".into()]));
        // JSON may end in `]` and the text after it may be the closer `<e>`.
        assert!(json_spells_closer(&["]<e>".into(), "<e>".into()]));
    }

    #[test]
    fn nonempty_start_leaves_every_closer_prefix() {
        assert_eq!(
            nonempty_start(&["</t>".into()]),
            regex("[^<]|<[^/<]|</[^<t]|</t[^<>]")
        );
    }
}
