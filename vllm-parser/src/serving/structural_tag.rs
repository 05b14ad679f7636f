//! The JSON vLLM 0.33.0 puts in `structured_outputs.structural_tag` for a
//! tool parser's `structural_tag_model` (`DelegatingParser._apply_structural_tag`
//! with `get_model_structural_tag`, xgrammar's builtin tags and vLLM's own in
//! `structural_tag_registry.py`), byte-exact to
//! `json.dumps(structural_tag.model_dump())`.

use serde_json::{Map, Value, json};

use crate::json::{PyJson, dumps_ascii};
use crate::tools::Tool;

/// `SimplifiedToolChoice` after xgrammar's `normalize_tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    Auto,
    Required,
    Forced,
}

/// One function tool as a builder sees it: its name and the `json_schema` of
/// its arguments (`get_function_parameters`: `true` unless strict).
struct TagTool<'a> {
    name: &'a str,
    schema: Value,
    /// The resolved strictness.
    strict: bool,
    /// The request's `parameters` (`Value::Null` when absent).
    parameters: &'a Value,
}

/// The structural tag's JSON text, or `None` where this crate does not build
/// the model's tag (or `forced` names no tool of the request).
///
/// `strict[i]` is the resolved strictness of `tools[i]` (`resolve_tool_strictness`);
/// `output` is the request's output format (`structured_outputs_to_format`)
/// for `auto` with structured outputs, which builds the `required` tag and
/// `or`s it with the output format.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    model: &str,
    token_suffix: Option<&str>,
    tools: &[Tool],
    strict: &[bool],
    choice: Choice,
    forced_name: Option<&str>,
    single_call: bool,
    output: Option<Value>,
) -> Option<String> {
    let mut tag_tools: Vec<TagTool> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let strict = strict.get(i).copied().unwrap_or(false);
            TagTool {
                name: &t.name,
                schema: if strict && !t.parameters.is_null() {
                    t.parameters.clone()
                } else {
                    Value::Bool(true)
                },
                strict,
                parameters: &t.parameters,
            }
        })
        .collect();
    let choice = if output.is_some() {
        Choice::Required
    } else {
        choice
    };
    if choice == Choice::Forced {
        let name = forced_name?;
        tag_tools.retain(|t| t.name == name);
        if tag_tools.len() != 1 {
            return None;
        }
    }
    if tag_tools.is_empty() {
        return None;
    }
    let mut format = match model {
        "hy_v4" => hy_v4(&tag_tools, choice, token_suffix?),
        _ => model_format(model, &tag_tools, choice)?,
    };
    if single_call {
        limit_to_single_tool_call(&mut format);
    }
    if let Some(output) = output {
        format = json!({"type": "or", "elements": [format, output]});
    }
    Some(dump_tag(format))
}

/// `structured_outputs_to_format` for an OpenAI `response_format`
/// (`json_schema` and `json_object`); `None` for any other.
pub(crate) fn response_format_output(response_format: &Value) -> Option<Value> {
    match response_format.get("type")?.as_str()? {
        "json_object" => Some(json_schema_format(json!({"type": "object"}), "json")),
        "json_schema" => {
            let schema = response_format.get("json_schema")?.get("schema")?;
            (!schema.is_null()).then(|| json_schema_format(schema.clone(), "json"))
        }
        _ => None,
    }
}

fn model_format(model: &str, tools: &[TagTool], choice: Choice) -> Option<Value> {
    const THINK: &[&str] = &["<think>", "</think>"];
    Some(match model {
        "hermes" => hermes_style(tools, choice, "<tool_call>", "</tool_call>"),
        "longcat" => hermes_style(tools, choice, "<longcat_tool_call>", "</longcat_tool_call>"),
        "llama" => flat(
            tools,
            choice,
            FlatSpec {
                begin: ("{\"name\": \"", "\", \"parameters\": "),
                end: "}",
                style: "json",
                trigger: "{\"name\": ",
                excludes: THINK,
            },
        ),
        "qwen_3_coder" => flat(
            tools,
            choice,
            FlatSpec {
                begin: ("<tool_call>\n<function=", ">\n"),
                end: "\n</function>\n</tool_call>",
                style: "qwen_xml",
                trigger: "<tool_call>\n<function=",
                excludes: THINK,
            },
        ),
        "mimo" => flat(
            tools,
            choice,
            FlatSpec {
                begin: ("<tool_call><function=", ">"),
                end: "</function></tool_call>",
                style: "qwen_xml",
                trigger: "<tool_call>",
                excludes: &["<think>", "</think>", "</tool_call>", "<function="],
            },
        ),
        "deepseek_r1" => sectioned(
            tools,
            choice,
            &SectionSpec {
                section: ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
                call_begin: ("<｜tool▁call▁begin｜>function<｜tool▁sep｜>", "\n```json\n"),
                call_end: "\n```<｜tool▁call▁end｜>",
                style: "json",
                separator: "\n",
                auto_section_begin: "<｜tool▁calls▁begin｜>",
                forced_prefix: None,
                excludes: THINK,
                kimi_index: false,
            },
        ),
        "deepseek_v3_1" => sectioned(
            tools,
            choice,
            &SectionSpec {
                section: ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"),
                call_begin: ("<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"),
                call_end: "<｜tool▁call▁end｜>",
                style: "json",
                separator: "",
                auto_section_begin: "<｜tool▁calls▁begin｜>",
                forced_prefix: None,
                excludes: THINK,
                kimi_index: false,
            },
        ),
        "deepseek_v3_2" => dsml(tools, choice, "function_calls", "invoke", "deepseek_xml"),
        "deepseek_v4" => dsml(tools, choice, "tool_calls", "invoke", "deepseek_xml"),
        "deepseek_v4_1" => dsml(tools, choice, " calls", " invoke", "deepseek_v4_1_xml"),
        "kimi" => sectioned(
            tools,
            choice,
            &SectionSpec {
                section: ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"),
                call_begin: ("<|tool_call_begin|>functions.", ":"),
                call_end: "<|tool_call_end|>",
                style: "json",
                separator: "",
                auto_section_begin: "<|tool_calls_section_begin|>",
                forced_prefix: Some(""),
                excludes: &["<think>", "</think>", "<|tool_call_begin|>"],
                kimi_index: true,
            },
        ),
        "minimax" => minimax(tools, choice),
        "plamo3" => plamo3(tools, choice),
        "glm_4_7" => glm_4_7(tools, choice)?,
        "kimi_k3" => kimi_k3(tools, choice),
        "harmony" => harmony(tools, choice),
        _ => return None,
    })
}

// --- xgrammar's formats, as `model_dump()` writes them (every field) ---

fn json_schema_format(schema: Value, style: &str) -> Value {
    json!({
        "type": "json_schema",
        "json_schema": schema,
        "style": style,
        "any_order": false,
        "max_whitespace_cnt": null,
        "excludes": [],
    })
}

fn tag(begin: impl Into<Value>, content: Value, end: impl Into<Value>) -> Value {
    json!({"type": "tag", "begin": begin.into(), "content": content, "end": end.into()})
}

fn const_string(value: impl Into<String>) -> Value {
    json!({"type": "const_string", "value": value.into()})
}

fn sequence(elements: Vec<Value>) -> Value {
    json!({"type": "sequence", "elements": elements})
}

fn any_text(excludes: &[&str]) -> Value {
    json!({"type": "any_text", "excludes": excludes, "max_tokens": null, "max_chars": null})
}

fn triggered_tags(
    triggers: &[&str],
    tags: Vec<Value>,
    at_least_one: bool,
    excludes: &[&str],
) -> Value {
    json!({
        "type": "triggered_tags",
        "triggers": triggers,
        "tags": tags,
        "at_least_one": at_least_one,
        "stop_after_first": false,
        "excludes": excludes,
    })
}

fn tags_with_separator(tags: Vec<Value>, separator: &str, stop_after_first: bool) -> Value {
    json!({
        "type": "tags_with_separator",
        "tags": tags,
        "separator": separator,
        "at_least_one": true,
        "stop_after_first": stop_after_first,
    })
}

/// `limit_to_single_tool_call`: every tool-call list stops after its first
/// call (the formats only, never a `json_schema`'s schema).
fn limit_to_single_tool_call(format: &mut Value) {
    match format {
        Value::Object(o) => {
            if matches!(
                o.get("type").and_then(Value::as_str),
                Some("triggered_tags" | "token_triggered_tags" | "tags_with_separator")
            ) {
                o.insert("stop_after_first".into(), Value::Bool(true));
            }
            if o.get("type").and_then(Value::as_str) == Some("json_schema") {
                return;
            }
            for value in o.values_mut() {
                limit_to_single_tool_call(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(limit_to_single_tool_call),
        _ => {}
    }
}

// --- the models ---

/// vLLM's `_hermes_style_structural_tag` (hermes, longcat).
fn hermes_style(tools: &[TagTool], choice: Choice, start: &str, end: &str) -> Value {
    let tags: Vec<Value> = tools
        .iter()
        .flat_map(|t| {
            [
                (format!("{start}\n{{\"name\": \""), format!("}}\n{end}")),
                (format!("{start}{{\"name\": \""), format!("}}{end}")),
            ]
            .map(|(begin, close)| {
                tag(
                    format!("{begin}{}\", \"arguments\": ", t.name),
                    json_schema_format(t.schema.clone(), "json"),
                    close,
                )
            })
        })
        .collect();
    match choice {
        Choice::Auto => triggered_tags(&[start], tags, false, &[]),
        Choice::Forced => tags_with_separator(tags, "", true),
        Choice::Required => tags_with_separator(tags, "", false),
    }
}

struct FlatSpec<'s> {
    begin: (&'s str, &'s str),
    end: &'s str,
    style: &'s str,
    trigger: &'s str,
    excludes: &'s [&'s str],
}

/// xgrammar's one-tag-per-call builtins (llama, qwen_3_coder, mimo).
fn flat(tools: &[TagTool], choice: Choice, spec: FlatSpec) -> Value {
    let call = |t: &TagTool| {
        tag(
            format!("{}{}{}", spec.begin.0, t.name, spec.begin.1),
            json_schema_format(t.schema.clone(), spec.style),
            spec.end,
        )
    };
    match choice {
        Choice::Forced => call(&tools[0]),
        _ => triggered_tags(
            &[spec.trigger],
            tools.iter().map(call).collect(),
            choice == Choice::Required,
            spec.excludes,
        ),
    }
}

struct SectionSpec<'s> {
    section: (&'s str, &'s str),
    call_begin: (&'s str, &'s str),
    call_end: &'s str,
    style: &'s str,
    separator: &'s str,
    /// The section's begin inside the `auto` trigger's tag.
    auto_section_begin: &'s str,
    /// `Some(prefix)`: `required` / `forced` are a sequence `prefix + begin`,
    /// calls, end; `None`: one tag around the calls.
    forced_prefix: Option<&'s str>,
    excludes: &'s [&'s str],
    /// Kimi's `functions.NAME:IDX` call ids before the arguments.
    kimi_index: bool,
}

/// xgrammar's section-of-calls builtins (DeepSeek, Kimi K2).
fn sectioned(tools: &[TagTool], choice: Choice, spec: &SectionSpec) -> Value {
    let call = |t: &TagTool| {
        let schema = json_schema_format(t.schema.clone(), spec.style);
        let content = if spec.kimi_index {
            sequence(vec![
                json!({"type": "regex", "pattern": "\\d+"}),
                const_string("<|tool_call_argument_begin|>"),
                schema,
            ])
        } else {
            schema
        };
        tag(
            format!("{}{}{}", spec.call_begin.0, t.name, spec.call_begin.1),
            content,
            spec.call_end,
        )
    };
    let calls = || tools.iter().map(call).collect::<Vec<_>>();
    let (begin, end) = spec.section;
    match (choice, spec.forced_prefix) {
        (Choice::Auto, _) => triggered_tags(
            &[begin],
            vec![tag(
                spec.auto_section_begin,
                tags_with_separator(calls(), spec.separator, false),
                end,
            )],
            false,
            spec.excludes,
        ),
        (Choice::Required, None) => tag(
            begin,
            tags_with_separator(calls(), spec.separator, false),
            end,
        ),
        (Choice::Forced, None) => {
            let t = &tools[0];
            tag(
                format!(
                    "{begin}{}{}{}",
                    spec.call_begin.0, t.name, spec.call_begin.1
                ),
                json_schema_format(t.schema.clone(), spec.style),
                format!("{}{end}", spec.call_end),
            )
        }
        (Choice::Required, Some(prefix)) => sequence(vec![
            const_string(format!("{prefix}{begin}")),
            tags_with_separator(calls(), spec.separator, false),
            const_string(end),
        ]),
        (Choice::Forced, Some(prefix)) => sequence(vec![
            const_string(format!("{prefix}{begin}")),
            call(&tools[0]),
            const_string(end),
        ]),
    }
}

/// DeepSeek V3.2 / V4 / V4.1's DSML tags.
fn dsml(tools: &[TagTool], choice: Choice, calls: &str, invoke: &str, style: &str) -> Value {
    let begin = format!("<｜DSML｜{calls}>");
    let end = format!("</｜DSML｜{calls}>");
    let call = |t: &TagTool| {
        tag(
            format!("<｜DSML｜{invoke} name=\"{}\">\n", t.name),
            json_schema_format(t.schema.clone(), style),
            format!("</｜DSML｜{invoke}>\n"),
        )
    };
    let all = || tools.iter().map(call).collect::<Vec<_>>();
    match choice {
        Choice::Auto => triggered_tags(
            &[&begin],
            vec![tag(
                format!("{begin}\n"),
                tags_with_separator(all(), "", false),
                end,
            )],
            false,
            &["<think>", "</think>"],
        ),
        Choice::Required => sequence(vec![
            const_string(format!("\n\n{begin}\n")),
            tags_with_separator(all(), "", false),
            const_string(end),
        ]),
        Choice::Forced => sequence(vec![
            const_string(format!("\n\n{begin}\n")),
            call(&tools[0]),
            const_string(end),
        ]),
    }
}

/// vLLM's `get_minimax_structural_tag`.
fn minimax(tools: &[TagTool], choice: Choice) -> Value {
    let tags = || {
        tools
            .iter()
            .map(|t| {
                tag(
                    format!("<invoke name=\"{}\">\n", t.name),
                    json_schema_format(t.schema.clone(), "minimax_xml"),
                    "</invoke>\n",
                )
            })
            .collect::<Vec<_>>()
    };
    let think = ["<think>", "</think>"];
    match choice {
        Choice::Auto => triggered_tags(
            &["<minimax:tool_call>"],
            vec![tag(
                "<minimax:tool_call>\n",
                tags_with_separator(tags(), "", false),
                "</minimax:tool_call>",
            )],
            false,
            &think,
        ),
        _ => sequence(vec![
            const_string("\n<minimax:tool_call>\n"),
            tags_with_separator(tags(), "", choice == Choice::Forced),
            const_string("</minimax:tool_call>"),
        ]),
    }
}

/// vLLM's `get_plamo3_structural_tag`.
fn plamo3(tools: &[TagTool], choice: Choice) -> Value {
    const REQUESTS_BEGIN: &str = "<|plamo:begin_tool_requests:plamo|>";
    const REQUESTS_END: &str = "<|plamo:end_tool_requests:plamo|>";
    let request_tags = tools
        .iter()
        .map(|t| {
            tag(
                format!(
                    "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{}\
                     <|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>\
                     <|plamo:constrain|>json<|plamo:msg|>",
                    t.name
                ),
                json_schema_format(t.schema.clone(), "json"),
                "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>",
            )
        })
        .collect();
    let requests = tag(
        REQUESTS_BEGIN,
        tags_with_separator(request_tags, "", choice == Choice::Forced),
        json!([REQUESTS_END, format!("{REQUESTS_END}<|plamo:tag|>")]),
    );
    match choice {
        Choice::Auto => triggered_tags(&[REQUESTS_BEGIN], vec![requests], false, &[]),
        _ => requests,
    }
}

const GLM_VALUE_EXCLUDES: &[&str] = &[
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
];

/// vLLM's `get_glm_4_7_structural_tag` (GLM-4.5/4.7, Ling 3): xgrammar's
/// builtin when every tool is strict, else a tag per tool by strictness.
fn glm_4_7(tools: &[TagTool], choice: Choice) -> Option<Value> {
    let text_excludes: Vec<&str> = GLM_VALUE_EXCLUDES
        .iter()
        .copied()
        .filter(|e| *e != "<tool_call>")
        .collect();
    let strict_tag = |t: &TagTool| {
        let schema = if t.parameters.is_null() {
            Value::Bool(true)
        } else {
            t.parameters.clone()
        };
        tag(
            format!("<tool_call>{}", t.name),
            json_schema_format(schema, "glm_xml"),
            "</tool_call>",
        )
    };
    if tools.iter().all(|t| t.strict) {
        // xgrammar's builtin `glm_4_7`.
        return Some(match choice {
            Choice::Forced => strict_tag(&tools[0]),
            _ => triggered_tags(
                &["<tool_call>"],
                tools.iter().map(strict_tag).collect(),
                choice == Choice::Required,
                &text_excludes,
            ),
        });
    }
    let tags = tools
        .iter()
        .map(|t| {
            if t.strict {
                Some(strict_tag(t))
            } else {
                glm_4_7_tool_tag(t)
            }
        })
        .collect::<Option<Vec<_>>>()?;
    Some(match choice {
        Choice::Auto => triggered_tags(&["<tool_call>"], tags, false, &text_excludes),
        _ => tags_with_separator(tags, "", choice == Choice::Forced),
    })
}

/// `_glm_4_7_tool_tag`: a non-strict tool's keys and basic value types.
fn glm_4_7_tool_tag(tool: &TagTool) -> Option<Value> {
    let begin = format!("<tool_call>{}", tool.name);
    let params = match tool.parameters {
        Value::Null => None,
        Value::Object(o) => Some(o),
        // `tool.function.parameters or {}` of a non-dict: not built.
        _ => return None,
    };
    let plain = params.and_then(|p| {
        let properties = p.get("properties")?.as_object().filter(|o| !o.is_empty())?;
        let loose = p.get("additionalProperties") == Some(&Value::Bool(true))
            || ["$ref", "allOf", "anyOf", "oneOf", "patternProperties"]
                .iter()
                .any(|k| p.contains_key(*k));
        (!loose).then_some(properties)
    });
    let Some(properties) = plain else {
        return Some(tag(
            begin,
            json_schema_format(Value::Bool(true), "glm_xml"),
            "</tool_call>",
        ));
    };
    let pairs = properties
        .iter()
        .map(|(key, prop)| {
            Some(sequence(vec![
                const_string(format!("<arg_key>{key}</arg_key><arg_value>")),
                glm_4_7_value_format(prop)?,
                const_string("</arg_value>"),
            ]))
        })
        .collect::<Option<Vec<_>>>()?;
    let inner = one_or_or(pairs)?;
    Some(tag(
        begin,
        json!({"type": "star", "content": inner}),
        "</tool_call>",
    ))
}

/// `x[0] if len(x) == 1 else OrFormat(elements=x)` (`None` when empty: vLLM
/// raises there).
fn one_or_or(mut formats: Vec<Value>) -> Option<Value> {
    match formats.len() {
        0 => None,
        1 => formats.pop(),
        _ => Some(json!({"type": "or", "elements": formats})),
    }
}

/// `_glm_4_7_value_format`.
fn glm_4_7_value_format(prop: &Value) -> Option<Value> {
    let prop = prop.as_object()?;
    if let Some(values) = prop.get("enum") {
        let values = values
            .as_array()?
            .iter()
            .map(|v| match v {
                Value::String(s) => const_string(s.clone()),
                other => const_string(dumps_ascii(&to_py(other))),
            })
            .collect();
        return one_or_or(values);
    }
    match prop.get("type") {
        Some(Value::Array(types)) => {
            let mut formats = types
                .iter()
                .filter(|t| t.as_str() != Some("string"))
                .map(|t| glm_4_7_value_format(&json!({"type": t})))
                .collect::<Option<Vec<_>>>()?;
            if types.iter().any(|t| t.as_str() == Some("string")) {
                formats.push(any_text(GLM_VALUE_EXCLUDES));
            }
            one_or_or(formats)
        }
        None | Some(Value::Null) => Some(any_text(GLM_VALUE_EXCLUDES)),
        Some(Value::String(s)) if s == "string" => Some(any_text(GLM_VALUE_EXCLUDES)),
        Some(other) => Some(json_schema_format(json!({"type": other}), "json")),
    }
}

const K3_CLOSE: &str = "<|close|>";
const K3_ARG_CLOSE: &str = "<|close|>argument<|sep|>";

fn optional(content: Value) -> Value {
    json!({"type": "optional", "content": content})
}

fn regex(pattern: &str) -> Value {
    json!({"type": "regex", "pattern": pattern})
}

/// `_k3_escape_attr`.
fn k3_escape_attr(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

/// Python's `isinstance(value, int)` for a JSON value (bools included).
fn py_int(value: Option<&Value>) -> Option<i64> {
    match value? {
        Value::Number(n) => n.as_i64(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `_k3_bounded_string_regex`.
fn k3_bounded_string_regex(prop: &Map<String, Value>) -> Option<String> {
    // A bool bound formats as `True` / `False`: not built.
    if matches!(prop.get("maxLength"), Some(Value::Bool(_)))
        || matches!(prop.get("minLength"), Some(Value::Bool(_)))
    {
        return None;
    }
    let max = py_int(prop.get("maxLength")).filter(|m| (0..=4096).contains(m))?;
    let min = match prop.get("minLength") {
        None => 0,
        Some(v) => py_int(Some(v))
            .filter(|m| (0..=max).contains(m))
            .unwrap_or(0),
    };
    Some(format!("(?:[^<]|<[^|]){{{min},{max}}}"))
}

/// `_k3_argument_tag` (`None`: the permissive tag).
fn k3_argument_tag(key: &str, schema: &Value, root_defs: &Map<String, Value>) -> Option<Value> {
    let empty = Map::new();
    let prop = schema.as_object().unwrap_or(&empty);
    let xtml = match prop.get("type")?.as_str()? {
        "string" => "string",
        "integer" | "number" => "number",
        "boolean" => "boolean",
        "null" => "null",
        "object" => "object",
        "array" => "array",
        _ => return None,
    };
    let begin = format!(
        "<|open|>argument key=\"{}\" type=\"{xtml}\"<|sep|>",
        k3_escape_attr(key)
    );
    let content = if xtml == "string" {
        let enum_values = match prop.get("enum") {
            None | Some(Value::Null) => match prop.get("const") {
                Some(Value::String(c)) => Some(vec![Value::String(c.clone())]),
                _ => None,
            },
            Some(Value::Array(values)) => Some(values.clone()),
            Some(_) => None,
        };
        let finite = enum_values.filter(|values| {
            !values.is_empty()
                && values.len() <= 256
                && values
                    .iter()
                    .all(|v| v.as_str().is_some_and(|s| !s.contains("<|")))
        });
        if let Some(values) = finite {
            one_or_or(
                values
                    .iter()
                    .map(|v| const_string(v.as_str().unwrap_or_default()))
                    .collect(),
            )?
        } else if let Some(bounded) = k3_bounded_string_regex(prop) {
            regex(&bounded)
        } else {
            any_text(&[K3_CLOSE])
        }
    } else {
        let mut embedded = prop.clone();
        for (k, v) in root_defs {
            embedded.entry(k.clone()).or_insert_with(|| v.clone());
        }
        json_schema_format(Value::Object(embedded), "json")
    };
    Some(tag(begin, content, K3_ARG_CLOSE))
}

/// `_k3_permissive_argument_tag`.
fn k3_permissive_argument_tag() -> Value {
    tag(
        "<|open|>argument ",
        sequence(vec![regex("[^<]*<\\|sep\\|>"), any_text(&[K3_CLOSE])]),
        K3_ARG_CLOSE,
    )
}

/// `_k3_arguments_block`.
fn k3_arguments_block(parameters: &Value) -> Value {
    let star = |content| json!({"type": "star", "content": content});
    let Some(params) = parameters.as_object() else {
        return star(k3_permissive_argument_tag());
    };
    let Some(props) = params
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
    else {
        return star(k3_permissive_argument_tag());
    };
    let root_defs: Map<String, Value> = ["$defs", "definitions"]
        .iter()
        .filter_map(|k| {
            params
                .get(*k)
                .filter(|v| v.is_object())
                .map(|v| ((*k).to_owned(), v.clone()))
        })
        .collect();
    let tags: Vec<Value> = props
        .iter()
        .map(|(key, prop)| {
            k3_argument_tag(key, prop, &root_defs).unwrap_or_else(k3_permissive_argument_tag)
        })
        .collect();
    let inner = one_or_or(tags).unwrap_or(Value::Null);
    match params.get("required") {
        Some(Value::Array(r)) if !r.is_empty() => json!({"type": "plus", "content": inner}),
        _ => star(inner),
    }
}

/// vLLM's `get_kimi_k3_structural_tag` (XTML channels).
fn kimi_k3(tools: &[TagTool], choice: Choice) -> Value {
    let call = |t: &TagTool| {
        tag(
            format!("<|open|>call tool=\"{}\" index=\"", k3_escape_attr(t.name)),
            sequence(vec![
                regex("[0-9]+"),
                const_string("\"<|sep|>"),
                k3_arguments_block(&t.schema),
            ]),
            "<|close|>call<|sep|>",
        )
    };
    let channel = |tools: &[TagTool]| {
        tag(
            "<|open|>tools<|sep|>",
            tags_with_separator(tools.iter().map(call).collect(), "", false),
            "<|close|>tools<|sep|>",
        )
    };
    let tools_part = match choice {
        Choice::Auto => optional(channel(tools)),
        Choice::Forced => channel(&tools[..1]),
        Choice::Required => channel(tools),
    };
    sequence(vec![
        optional(const_string("<|open|>response<|sep|>")),
        tag(
            "",
            any_text(&["<|open|>", K3_CLOSE, "<|end_of_msg|>"]),
            "<|close|>response<|sep|>",
        ),
        tools_part,
        optional(const_string("<|close|>message<|sep|>")),
    ])
}

/// `_hy_v4_argument_keys`: `(required, optional)` in declaration order.
fn hy_v4_argument_keys(parameters: &Map<String, Value>) -> (Vec<String>, Vec<String>) {
    let empty = Map::new();
    let properties = parameters
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<String> = parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut required_keys: Vec<String> = properties
        .keys()
        .filter(|k| required.contains(k))
        .cloned()
        .collect();
    required_keys.extend(
        required
            .iter()
            .filter(|k| !properties.contains_key(*k))
            .cloned(),
    );
    let optional_keys = properties
        .keys()
        .filter(|k| !required.contains(k))
        .cloned()
        .collect();
    (required_keys, optional_keys)
}

/// vLLM's `get_hy_v4_structural_tag` (`reasoning=False`), for `required` and
/// `forced` (HY V4 leaves `auto` free).
fn hy_v4(tools: &[TagTool], choice: Choice, suffix: &str) -> Value {
    let arg_pair = |key: &str| {
        sequence(vec![
            const_string(format!("<arg_key{suffix}>")),
            const_string(key),
            const_string(format!("</arg_key{suffix}>")),
            const_string(format!("<arg_value{suffix}>")),
            any_text(&[]),
            const_string(format!("</arg_value{suffix}>")),
        ])
    };
    let empty = Map::new();
    let single = |t: &TagTool| {
        let parameters = t.parameters.as_object().unwrap_or(&empty);
        let (required, optional_keys) = hy_v4_argument_keys(parameters);
        let mut elements: Vec<Value> = required.iter().map(|k| arg_pair(k)).collect();
        if !optional_keys.is_empty() {
            let pairs: Vec<Value> = optional_keys.iter().map(|k| arg_pair(k)).collect();
            let inner = one_or_or(pairs).unwrap_or(Value::Null);
            elements.push(json!({"type": "star", "content": inner}));
        }
        let content = if elements.is_empty() {
            any_text(&[])
        } else {
            sequence(elements)
        };
        tag(
            format!("<tool_call{suffix}>{}", t.name),
            content,
            format!("</tool_call{suffix}>"),
        )
    };
    let tags: Vec<Value> = tools.iter().map(single).collect();
    let calls_begin = format!("<tool_calls{suffix}>");
    let calls_end = format!("</tool_calls{suffix}>");
    match choice {
        Choice::Auto => triggered_tags(
            &[&calls_begin],
            vec![tag(
                calls_begin.clone(),
                tags_with_separator(tags, "", false),
                calls_end,
            )],
            false,
            &[],
        ),
        _ => sequence(vec![
            const_string(calls_begin),
            tags_with_separator(tags, "", choice == Choice::Forced),
            const_string(calls_end),
        ]),
    }
}

const HARMONY_FINAL_BEGIN: &str = "<|channel|>final";
const HARMONY_JSON_CONSTRAINS: [&str; 2] = [" json", " <|constrain|>json"];
const HARMONY_CHANNELS: [&str; 3] = [
    "<|channel|>commentary",
    "<|channel|>analysis",
    "<|channel|>final",
];

fn harmony_end() -> Value {
    json!(["<|end|>", ""])
}

fn harmony_final_begin(constrain: &str) -> String {
    format!("{HARMONY_FINAL_BEGIN}{constrain}<|message|>")
}

/// Harmony's `_assemble_tag`.
fn harmony_assemble(allow_analysis: bool, allow_commentary: bool, content: Value) -> Value {
    let channel = |name: &str| {
        optional(sequence(vec![
            tag(
                format!("<|channel|>{name}<|message|>"),
                any_text(&[]),
                "<|end|>",
            ),
            const_string("<|start|>assistant"),
        ]))
    };
    let mut elements = Vec::new();
    if allow_analysis {
        elements.push(channel("analysis"));
    }
    if allow_commentary {
        elements.push(channel("commentary"));
    }
    elements.push(content);
    sequence(elements)
}

/// Harmony's `_adjust_output_format`: the request's output format (from
/// [`response_format_output`]) in the final channel, after optional analysis.
pub(crate) fn harmony_output_format(final_content: Value) -> Value {
    let content = if final_content.get("type").and_then(Value::as_str) == Some("json_schema") {
        json!({
            "type": "or",
            "elements": HARMONY_JSON_CONSTRAINS
                .iter()
                .map(|c| tag(harmony_final_begin(c), final_content.clone(), harmony_end()))
                .collect::<Vec<_>>(),
        })
    } else {
        tag(harmony_final_begin(""), final_content, harmony_end())
    };
    harmony_assemble(true, false, content)
}

/// The structural tag's JSON text for `format` alone.
/// `json.dumps(value)` (Python's default separators, ASCII escapes).
pub(crate) fn dumps_python(value: &Value) -> String {
    dumps_ascii(&to_py(value))
}

/// `json.dumps(value, ensure_ascii=False)`.
pub(crate) fn dumps_unicode(value: &Value) -> String {
    crate::json::dumps(&to_py(value))
}

pub(crate) fn dump_tag(format: Value) -> String {
    dumps_ascii(&to_py(&json!({"type": "structural_tag", "format": format})))
}

/// vLLM's `get_harmony_structural_tag` for function tools.
fn harmony(tools: &[TagTool], choice: Choice) -> Value {
    let mut tags = Vec::new();
    for t in tools {
        for pattern in 0..2 {
            for constrain in HARMONY_JSON_CONSTRAINS {
                for channel in HARMONY_CHANNELS {
                    let begin = if pattern == 0 {
                        format!(" to=functions.{}{channel}{constrain}<|message|>", t.name)
                    } else {
                        format!("{channel} to=functions.{}{constrain}<|message|>", t.name)
                    };
                    tags.push(tag(
                        begin,
                        json_schema_format(t.schema.clone(), "json"),
                        harmony_end(),
                    ));
                }
            }
        }
    }
    if choice == Choice::Auto {
        for constrain in HARMONY_JSON_CONSTRAINS.iter().chain([&""]) {
            tags.push(tag(
                harmony_final_begin(constrain),
                any_text(&[]),
                harmony_end(),
            ));
        }
    }
    harmony_assemble(true, true, json!({"type": "or", "elements": tags}))
}

/// A `serde_json` value as Python's `json.loads` would hold it.
fn to_py(value: &Value) -> PyJson {
    match value {
        Value::Null => PyJson::Null,
        Value::Bool(b) => PyJson::Bool(*b),
        Value::Number(n) if n.is_i64() || n.is_u64() => PyJson::Int(n.to_string()),
        Value::Number(n) => PyJson::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => PyJson::Str(s.clone()),
        Value::Array(items) => PyJson::List(items.iter().map(to_py).collect()),
        Value::Object(o) => PyJson::Dict(dict(o)),
    }
}

fn dict(o: &Map<String, Value>) -> Vec<(String, PyJson)> {
    o.iter().map(|(k, v)| (k.clone(), to_py(v))).collect()
}
