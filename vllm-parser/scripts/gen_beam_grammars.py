#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/beam_grammars.json.gz``: what vLLM 0.33.0's
``BeamParser.adjust_request`` (``vllm/parser/beam.py``, grammar from
``vllm/parser/response_template_grammar.py``) does to a chat request, for
synthetic response templates (no Beam checkpoint exists in the reference
environment) × requests × decoded prompts.

Templates (``TEMPLATES``): Gemma-4-like ones (literal anchors, thinking field,
``(?P<name>\\w+)`` tool opener, JSON arguments) with and without an answer
field that opens explicitly; one whose delimiters are regexes with
alternations and optional pieces that the grammar expands into several
literals (``^`` and a message-start opener included); XML-inline arguments;
XML-inline arguments whose values may end where the next parameter opens (a
final ``(?=…)`` lookahead); lookaround delimiters (not derivable); and a
Qwen3-Coder-like one whose closers are not literal (not derivable).

Tool sets cover, among others, ``xml-inline`` string parameters with a
``pattern`` (compiling, refused by xgrammar, possibly writing a value end's
first character, beside a ``format`` or length bounds, undecided by this crate)
and requests whose own constraint is ``structured_outputs.regex`` (compiling,
refused, holding a NUL).

Each template is served with ``beam`` as both parsers, as tool parser only and
as reasoning parser only (``PARSERS``); each request of ``requests()`` is
adjusted after the parser's prefix is set to each prompt of the template's
``prompts`` (the decoded prompt vLLM keeps in ``_prefix`` after
``set_prompt_token_ids``: set directly, so the record is independent of any
tokenizer's decoding). The record is the tag string vLLM puts in
``structured_outputs.structural_tag`` (or ``null``), whether the request's
``response_format`` was cleared, ``_grammar_from_parser``, or the error
message and parameter. Environment defaults are vLLM's
(``VLLM_BEAM_ALWAYS_CONSTRAIN_OUTPUT`` and
``VLLM_ENFORCE_STRICT_TOOL_CALLING`` on). ``tests/beam_grammars.rs``
requires byte equality.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_beam_grammars.py
"""

from __future__ import annotations

import copy
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0, offline tokenizers)
from vllm import envs  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionRequest,
)
from vllm.parser.parser_manager import ParserManager  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "beam_grammars.json.gz"

CALL_TRANSFORM = {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}
GEMMA_TOOLS = {
    "open_pattern": "<\\|tool_call>call:(?P<name>\\w+)",
    "close": "<tool_call|>",
    "repeats": True,
    "content": "json",
    "transform": CALL_TRANSFORM,
}
GEMMA_THINKING = {"open": "<|channel>thought\n", "close": "<channel|>"}
GEMMA_ANCHORS = ["<|turn>model\n", "<tool_response|>"]

TEMPLATES = {
    # Gemma 4's format: the answer opens implicitly, so only forced calls are
    # derivable.
    "gemma": {
        "template": {
            "start_anchor": GEMMA_ANCHORS,
            "fields": {
                "thinking": GEMMA_THINKING,
                "tool_calls": GEMMA_TOOLS,
                "content": {"close": ["<turn|>", "<eos>"]},
            },
        },
        "prompts": {
            "start": "<|turn>user\nhi<turn|>\n<|turn>model\n",
            "after_tool": "<|turn>model\n<|tool_call>call:f{}<tool_call|><tool_response|>",
            "thinking": "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\n",
            "answer": "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\nok<channel|>Sure",
            "empty": "",
        },
    },
    # Gemma-4-like with an answer that opens explicitly: every request is held
    # to the template.
    "gemma_answer": {
        "template": {
            "start_anchor": GEMMA_ANCHORS,
            "fields": {
                "thinking": GEMMA_THINKING,
                "tool_calls": GEMMA_TOOLS,
                "content": {"open": "<|channel>final\n", "close": ["<turn|>", "<eos>"]},
            },
        },
        "prompts": {
            "start": "<|turn>user\nhi<turn|>\n<|turn>model\n",
            "after_tool": "<|turn>model\n<|tool_call>call:f{}<tool_call|><tool_response|>",
            "thinking": "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>thought\nhm",
            "answer": "<|turn>user\nhi<turn|>\n<|turn>model\n<|channel>final\nSure",
            "closed_answer": "<|turn>model\n<|channel>final\nSure<turn|>",
            "mid": "<|turn>user\nhi<turn|>\n<|turn>model\nsome text",
        },
    },
    # Regex delimiters: alternations and optional pieces expand into several
    # literals; `^` opens the answer only at the message start.
    "regex": {
        "template": {
            "start_anchor_pattern": "<\\|assistant\\|>\\n?",
            "fields": {
                "thinking": {"open_pattern": "<think>\\n?|<reason>", "close": "</think>"},
                "tool_calls": {
                    "open_pattern": "\\n?<call name=\"(?P<name>[^\"\\n]+)\">",
                    "close_pattern": "</call>\\n?",
                    "repeats": True,
                    "content": "json",
                    "transform": CALL_TRANSFORM,
                },
                "content": {"open_pattern": "^|<answer>", "close_pattern": "</answer>|<\\|end\\|>"},
            },
        },
        "prompts": {
            "start": "<|user|>hi<|end|><|assistant|>\n",
            "start_no_newline": "<|user|>hi<|end|><|assistant|>",
            "thinking": "<|user|>hi<|end|><|assistant|><think>\n",
            "answer": "<|user|>hi<|end|><|assistant|><answer>partial",
            "mid": "<|assistant|>\nhello",
        },
    },
    # Literal answer opener list and a `(?:…)` group before the name.
    "alternation": {
        "template": {
            "start_anchor": "<|im_start|>assistant\n",
            "fields": {
                "thinking": {"open": ["<think>", "<think>\n"], "close": ["</think>", "</think>\n"]},
                "tool_calls": {
                    "open_pattern": "(?:\\n|<sep>)?<tool_call>(?P<name>[A-Za-z_][A-Za-z0-9_]*)",
                    "close": "</tool_call>",
                    "repeats": False,
                    "content": "json",
                    "transform": CALL_TRANSFORM,
                },
                "content": {"open": ["<reply>", "<reply>\n"], "close": "<|im_end|>"},
            },
        },
        "prompts": {
            "start": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            "thinking": "<|im_start|>assistant\n<think>\n",
            "answer": "<|im_start|>assistant\n<reply>\n",
        },
    },
    # XML-inline arguments with literal delimiters.
    "xml": {
        "template": {
            "start_anchor": "<|assistant|>",
            "fields": {
                "thinking": {"open": "<think>", "close": "</think>"},
                "tool_calls": {
                    "open_pattern": "<invoke name=(?P<name>\\w+)>",
                    "close": "</invoke>",
                    "repeats": True,
                    "content": "xml-inline",
                    "content_args": {"tag_pattern": "<arg=(?P<key>\\w+)>(?P<value>.*?)</arg>"},
                    "transform": CALL_TRANSFORM,
                },
                "content": {"open": "<text>", "close": "</text>"},
            },
        },
        "prompts": {
            "start": "<|user|>hi<|end|><|assistant|>",
            "thinking": "<|user|>hi<|end|><|assistant|><think>",
        },
    },
    # XML-inline arguments with JSON values, a `[^"]+` name group, and no
    # thinking field.
    "xml_json": {
        "template": {
            "start_anchor": "<|assistant|>",
            "fields": {
                "tool_calls": {
                    "open_pattern": "<tool name=\"(?P<name>[^\"]+)\">\\n?",
                    "close": "</tool>",
                    "repeats": True,
                    "content": "xml-inline",
                    "content_args": {
                        "tag_pattern": "<param name=\"(?P<key>[^\"]+)\">(?P<value>.*?)</param>",
                        "value_parser": {"name": "json"},
                    },
                    "transform": CALL_TRANSFORM,
                },
                "content": {"open": ["<reply>", "<reply>\n"], "close": "</reply>"},
            },
        },
        "prompts": {
            "start": "<|user|>hi<|end|><|assistant|>",
            "answer": "<|user|>hi<|end|><|assistant|><reply>",
        },
    },
    # XML-inline arguments whose values may also end where the next one opens
    # (a final `(?=…)` lookahead in the tag pattern, which the grammar reads).
    "xml_lookahead": {
        "template": {
            "start_anchor": "<|assistant|>",
            "fields": {
                "thinking": {"open": "<think>", "close": "</think>"},
                "tool_calls": {
                    "open_pattern": "<invoke name=(?P<name>\\w+)>",
                    "close": "</invoke>",
                    "repeats": True,
                    "content": "xml-inline",
                    "content_args": {
                        "tag_pattern": "<arg=(?P<key>\\w+)>(?P<value>.*?)(?:</arg>|(?=<arg=))"
                    },
                    "transform": CALL_TRANSFORM,
                },
                "content": {"open": "<text>", "close": "</text>"},
            },
        },
        "prompts": {
            "start": "<|user|>hi<|end|><|assistant|>",
            "thinking": "<|user|>hi<|end|><|assistant|><think>",
        },
    },
    # Lookaround delimiters (a lookbehind opener, a negative-lookahead closer,
    # a lookahead answer closer): not expandable into literals.
    "lookaround": {
        "template": {
            "start_anchor": "<|assistant|>",
            "fields": {
                "thinking": {"open_pattern": "(?<=^|\\n)<think>", "close": "</think>"},
                "tool_calls": {
                    "open_pattern": "<call name=\"(?P<name>[^\"\\n]+)\">",
                    "close_pattern": "</call>(?!\\n)",
                    "repeats": True,
                    "content": "json",
                    "transform": CALL_TRANSFORM,
                },
                "content": {"close_pattern": "(?=<\\|tool_call\\|>)|<\\|end\\|>"},
            },
        },
        "prompts": {
            "start": "<|user|>hi<|end|><|assistant|>",
            "thinking": "<|user|>hi<|end|><|assistant|><think>",
        },
    },
    # Qwen3-Coder's format: `\s*` in the closers, so no grammar is derived.
    "qwen_xml": {
        "template": {
            "start_anchor": "<|im_start|>assistant\n",
            "fields": {
                "thinking": {"open": "<think>", "close": "</think>"},
                "tool_calls": {
                    "open_pattern": "\\s*<tool_call>\\s*<function=(?P<name>[^>\\n]+)>",
                    "close_pattern": "</function>\\s*</tool_call>",
                    "repeats": True,
                    "content": "xml-inline",
                    "content_args": {
                        "tag_pattern": "<parameter=(?P<key>[^>\\n]+)>\\s*(?P<value>.*?)\\s*</parameter>"
                    },
                    "transform": CALL_TRANSFORM,
                },
                "content": {"close_pattern": "\\s*(?:<\\|im_end\\|>|<\\|endoftext\\|>)"},
            },
        },
        "prompts": {
            "start": "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        },
    },
}

# (reasoning parser, tool parser) as the server's flags name them.
PARSERS = [("beam", "beam"), (None, "beam"), ("beam", None)]


def tool(name, parameters=None, strict=None, description=None):
    function = {"name": name}
    if description is not None:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = parameters
    if strict is not None:
        function["strict"] = strict
    return {"type": "function", "function": function}


WEATHER = tool("get_weather", {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer", "minimum": 1},
    },
    "required": ["city"],
}, description="Weather — 天気")
SEARCH = tool("search", {
    "type": "object",
    "properties": {
        "query": {"type": "string", "maxLength": 64},
        "filter": {"$ref": "#/$defs/Filter"},
        "limit": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
    "$defs": {"Filter": {"type": "object", "properties": {"lang": {"type": "string"}}}},
})
PING = tool("ping")
EMPTY = tool("noop", {})
# Outside the JSON schemas this crate converts like xgrammar.
ODD = tool("odd", {
    "type": "object",
    "properties": {"x": {"type": "number", "minimum": 0.5}},
    "patternProperties": {"^y": {"type": "string"}},
})
# Value shapes the XML-inline derivation treats apart: padded enum strings the
# text parser strips, typed and nullable values, unions, untyped values, and a
# parameter name no `\w+` key group spells.
SHAPES = tool("shapes", {
    "type": "object",
    "properties": {
        "mode": {"type": "string", "enum": [" padded", "plain"]},
        "n": {"type": "integer"},
        "flag": {"type": "boolean", "nullable": True},
        "obj": {"type": "object", "properties": {"k": {"type": "string"}}},
        "anything": {},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "choice": {"const": "only"},
    },
    "required": ["mode", "n"],
})
BAD_KEY = tool("bad_key", {"type": "object", "properties": {"bad key": {"type": "string"}}})
# A string `format`: the JSON converter knows `date`; XML-inline text values
# with a format are not decided here.
FORMATS_OF_STRINGS = ["date", "time", "date-time", "email", "hostname", "ipv4", "uuid", "uri"]
DATED = tool("dated", {"type": "object", "properties": {
    f"p{i}": {"type": "string", "format": name} for i, name in enumerate(FORMATS_OF_STRINGS)},
    "required": ["p0"]})
UNKNOWN_FORMAT = tool("unknown_format", {"type": "object", "properties": {
    "u": {"type": "string", "format": "unknown-format"}}})
# XML-inline string values with a `pattern`: held to it when vLLM's
# `_may_write` (Python's regex parser) says no match writes a value end's first
# character and xgrammar compiles it (`_regex_compiles`); a `format` overrides
# the pattern and length bounds are dropped.
PATTERNED = tool("patterned", {"type": "object", "properties": {
    "code": {"type": "string", "pattern": "[0-9]{3}-[0-9]{4}"},
    "word": {"type": "string", "pattern": "[a-z]+", "minLength": 2, "maxLength": 5},
    "day": {"type": "string", "format": "date", "pattern": "[a-z]+"},
    "alpha": {"type": "string", "pattern": "[[:alpha:]]+"},
    "end": {"type": "string", "pattern": "\\d{2}\\Z"},
    "lazy": {"type": "string", "pattern": "^(?:ab)*?$"}},
    "required": ["code"]})


def patterned(name, pattern):
    return tool(name, {"type": "object", "properties": {
        "p": {"type": "string", "pattern": pattern}}, "required": ["p"]})


# Python reads it (no `<`), xgrammar refuses it.
PATTERN_REFUSED = patterned("pattern_refused", "a{,3}")
PATTERN_POSSESSIVE = patterned("pattern_possessive", "[a-z]++")
# A match may write `<`, the first character of `</arg>`.
PATTERN_CLOSER = patterned("pattern_closer", "[<a-z]+")
# `[^>]` is one negated literal to Python's parser: vLLM says it may write.
PATTERN_NOT = patterned("pattern_not", "[^>]+")
# Unicode names: not decided by this crate.
PATTERN_UNDECIDED = patterned("pattern_undecided", "\\N{DIGIT ONE}+")
DOTTED = tool("get.weather", {"type": "object", "properties": {}})
DASHED = tool("get-weather", {"type": "object", "properties": {}})


def strict(t, value=True):
    t = copy.deepcopy(t)
    t["function"]["strict"] = value
    return t


TOOL_SETS = {
    "one": [WEATHER],
    "several": [WEATHER, SEARCH, PING, EMPTY],
    "strict_some": [strict(WEATHER), SEARCH, strict(PING, False)],
    "odd": [ODD, PING],
    "strict_odd": [strict(ODD)],
    "shapes": [SHAPES, BAD_KEY],
    "strict_shapes": [strict(SHAPES), strict(BAD_KEY)],
    "dated": [strict(DATED)],
    "dated_unknown": [strict(UNKNOWN_FORMAT)],
    "patterned": [strict(PATTERNED)],
    "pattern_refused": [strict(PATTERN_REFUSED)],
    "pattern_possessive": [strict(PATTERN_POSSESSIVE)],
    "pattern_closer": [strict(PATTERN_CLOSER)],
    "pattern_not": [strict(PATTERN_NOT)],
    "pattern_undecided": [strict(PATTERN_UNDECIDED)],
    "dotted": [WEATHER, DOTTED],
    "dashed": [DASHED],
}
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"type": "string"}},
        "required": ["answer"]}},
}
FORMATS = {
    "json_schema": JSON_SCHEMA_FORMAT,
    "json_object": {"type": "json_object"},
    "text": {"type": "text"},
    "structural_tag": {"type": "structural_tag", "format": {"type": "const_string", "value": "x"}},
    "odd_schema": {"type": "json_schema", "json_schema": {"name": "o", "schema": {
        "type": "object", "patternProperties": {"^a": {"type": "integer"}}}}},
    # Schemas vLLM's xgrammar validation refuses (`_xgrammar_supports`): a feature it
    # rejects, an allOf of two, xgrammar's own refusal, objects nested past 64 levels.
    "multiple_of_schema": {"type": "json_schema", "json_schema": {"name": "m", "schema": {
        "type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}}},
    "all_of_schema": {"type": "json_schema", "json_schema": {"name": "a", "schema": {
        "allOf": [{"type": "object"}, {"required": ["a"]}]}}},
    "empty_range_schema": {"type": "json_schema", "json_schema": {"name": "r", "schema": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1}}}}},
    "deep_schema": {"type": "json_schema", "json_schema": {"name": "d", "schema": functools.reduce(
        lambda inner, _: {"type": "object", "properties": {"x": inner}}, range(33),
        {"type": "string"})}},
}


SO_REGEXES = {
    "so_regex_quirks": "^[[:alpha:]]+\\Z|\\u00e9{2,}?",
    "so_regex_refused": "(?=a)b",
    "so_regex_refused_range": "a{2,1}",
    "so_regex_nul": "a\0b",
    # Repetition counts past 32 bits: not decided by this crate.
    "so_regex_undecided": "a{1234567890}",
}


# `structured_outputs.choice`: xgrammar compiles every list of strings (`choice_as_grammar`).
SO_CHOICES = {
    "so_choice": ["yes", "no"],
    "so_choice_escapes": ['q"x', "new\nline", "\x00", "é", "\x7f", "\\", "", "yes"],
    "so_choice_empty": [],
}


# vLLM's docs (structured outputs): a simplified SQL grammar.
SQL_GRAMMAR = """root ::= select_statement
select_statement ::= "SELECT " column " from " table " where " condition
column ::= "col_1 " | "col_2 "
table ::= "table_1 " | "table_2 "
condition ::= column "= " number
number ::= "1 " | "2 "
"""

# `structured_outputs.grammar`: `Grammar.from_ebnf` must accept it (`_xgrammar_supports`);
# an empty one is refused as no constraint; a Lark one (`grammar_is_likely_lark`) is not
# decided here.
SO_GRAMMARS = {
    "so_grammar": 'root ::= "a"',
    "so_grammar_sql": SQL_GRAMMAR,
    "so_grammar_escapes": 'root ::= "\\u00e9\\n" [^"\\\\]* "\\/" (= "x")\0 after a NUL',
    "so_grammar_refused": 'root ::= answer',
    "so_grammar_lookahead_refused": 'root ::= "a" (= "b" | "c")',
    "so_grammar_empty": "",
    "so_grammar_lark": 'start: "a" | "b"',
    # Nested deeper than this crate decides.
    "so_grammar_undecided": "root ::= " + "(" * 300 + '"a"' + ")" * 300,
}


def named(tools, index=0):
    return {"type": "function", "function": {"name": tools[index]["function"]["name"]}}


def body(**fields):
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}


def requests():
    """(name, body) of every request."""
    yield "no_tools", body()
    for fmt_name, fmt in FORMATS.items():
        yield f"no_tools/{fmt_name}", body(response_format=fmt)
    yield "no_tools/so_json", body(structured_outputs={"json": JSON_SCHEMA_FORMAT["json_schema"]["schema"]})
    yield "no_tools/so_json_text", body(structured_outputs={"json": json.dumps({"type": "array"})})
    yield "no_tools/so_json_object", body(structured_outputs={"json_object": True})
    yield "no_tools/so_structural_tag", body(structured_outputs={"structural_tag": json.dumps(
        {"type": "structural_tag", "format": {"type": "const_string", "value": "x"}})})
    yield "no_tools/so_regex", body(structured_outputs={"regex": "a+"})
    # `_xgrammar_supports`: a NUL is refused first, then xgrammar compiles it.
    for so_name, regex in SO_REGEXES.items():
        yield f"no_tools/{so_name}", body(structured_outputs={"regex": regex})
    for so_name, choice in SO_CHOICES.items():
        yield f"no_tools/{so_name}", body(structured_outputs={"choice": choice})
    for so_name, grammar in SO_GRAMMARS.items():
        yield f"no_tools/{so_name}", body(structured_outputs={"grammar": grammar})
    yield "no_tools/no_thinking", body(chat_template_kwargs={"enable_thinking": False})
    yield "no_tools/no_reasoning", body(include_reasoning=False)
    for set_name, tools in TOOL_SETS.items():
        choices = {"auto": "auto", "none": "none", "required": "required",
                   "named": named(tools), "default": None}
        if len(tools) > 1:
            choices["named_second"] = named(tools, 1)
        for choice_name, choice in choices.items():
            fields = {"tools": tools}
            if choice is not None:
                fields["tool_choice"] = choice
            name = f"{set_name}/{choice_name}"
            yield name, body(**fields)
            if set_name in ("one", "several"):
                yield f"{name}/single", body(**fields, parallel_tool_calls=False)
                yield f"{name}/no_thinking", body(
                    **fields, chat_template_kwargs={"enable_thinking": False})
                if choice_name in ("auto", "required", "none"):
                    for fmt_name in ("json_schema", "json_object", "structural_tag"):
                        yield f"{name}/{fmt_name}", body(
                            **fields, response_format=FORMATS[fmt_name])
                    yield f"{name}/so_regex", body(
                        **fields, structured_outputs={"regex": "[a-z]+ [0-9]{2}"})
                    yield f"{name}/so_regex_refused", body(
                        **fields, structured_outputs={"regex": "(?i)[a-z]+"})
                    yield f"{name}/so_grammar", body(
                        **fields, structured_outputs={"grammar": SQL_GRAMMAR})
                if choice_name == "auto":
                    yield f"{name}/no_reasoning", body(**fields, include_reasoning=False)


def tokenizer():
    # Only the parser's construction needs a tokenizer; the prefix is set
    # directly and the template is passed as an argument.
    return gf.tokenizer_for("qwen3")


def adjust(parser_cls, tok, template, request_body, prefix):
    request = ChatCompletionRequest.model_validate(request_body)
    if parser_cls.tool_parser_cls is None and request.tool_choice not in (None, "none"):
        # OnlineRenderer refuses a tool_choice without a tool parser first.
        return {"skipped": "tool_choice without a tool parser"}
    parser = parser_cls(
        tok, request.tools, response_template=template,
        chat_template_kwargs=request_body.get("chat_template_kwargs") or {},
    )
    parser._prompt_token_ids = [0]
    parser._prefix = prefix
    had_format = request.response_format is not None
    try:
        request = parser.adjust_request(request)
    except Exception as e:  # noqa: BLE001
        # create_error_response: str(exc) and the exception's parameter.
        return {"error": str(e), "param": getattr(e, "parameter", None),
                "exception": type(e).__name__}
    so = request.structured_outputs
    return {
        "structural_tag": None if so is None else so.structural_tag,
        "other_structured_outputs": None if so is None or so.structural_tag else repr(so),
        "response_format_cleared": had_format and request.response_format is None,
        "grammar_from_parser": bool(request._grammar_from_parser),
    }


def main() -> int:
    assert envs.VLLM_BEAM_ALWAYS_CONSTRAIN_OUTPUT and envs.VLLM_ENFORCE_STRICT_TOOL_CALLING
    tok = tokenizer()
    results = []
    for template_name, spec in TEMPLATES.items():
        count = 0
        for reasoning, tool_parser in PARSERS:
            if reasoning and "thinking" not in spec["template"]["fields"]:
                # vLLM refuses a reasoning parser without a thinking field.
                continue
            parser_cls = ParserManager.get_parser(
                tool_parser_name=tool_parser, reasoning_parser_name=reasoning,
                enable_auto_tools=tool_parser is not None)
            for prompt_name, prefix in spec["prompts"].items():
                for name, request_body in requests():
                    result = adjust(parser_cls, tok, spec["template"], request_body, prefix)
                    if "skipped" in result:
                        continue
                    results.append({
                        "template": template_name, "reasoning": reasoning,
                        "tool": tool_parser, "prompt": prompt_name, "prefix": prefix,
                        "case": name, "request": request_body, "result": result,
                    })
                    count += 1
        print(f"{template_name}: {count} cases", file=sys.stderr)
    header = {"generated_by": "scripts/gen_beam_grammars.py", "vllm_version": gf.VLLM_VERSION,
              "templates": {name: spec["template"] for name, spec in TEMPLATES.items()}}
    gf.write_jsonl_gz(OUT, header, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
