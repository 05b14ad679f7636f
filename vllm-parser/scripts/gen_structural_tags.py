#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/structural_tags.json.gz``: the exact
``structured_outputs.structural_tag`` string vLLM 0.33.0's ``adjust_request``
puts on a request, for every tool parser with a ``structural_tag_model``.

Each tool parser is built with the tokenizer and options of its first config in
the parser corpora (``scripts/corpus/*.json``, as ``gen_serving_corpus.py``
builds it, with no reasoning parser but gpt-oss's), then every request of ``REQUESTS`` (tool
sets × ``tool_choice`` × ``parallel_tool_calls`` × ``strict`` × ``response_format``)
goes through ``OnlineRenderer``'s ``adjust_request`` call, once for each
server ``--tool-strict-level`` of ``STRICT_LEVELS`` (unset: the tool parser's
default level; ``auto``, ``function``, ``parameter``); the record is the
request body and the resulting ``structured_outputs`` (``structural_tag`` string,
``json`` schema or ``null``), whether ``response_format`` was cleared, or the
error. The Cohere Command parsers (``COHERE_PARSERS``), whose parser class
builds its own tag from the model's architecture, are recorded on every
architecture of ``COHERE_ARCHITECTURES``. ``tests/structural_tags.rs`` requires
byte equality.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_structural_tags.py
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0, offline tokenizers)
import gen_serving_corpus as sc  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "structural_tags.json.gz"

# Every tool parser of vLLM 0.33.0 with a structural_tag_model.
TOOL_PARSERS = [
    "deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "deepseek_v41",
    "glm45", "glm47", "hermes", "hy_v4", "kimi_k2", "kimi_k3", "ling3",
    "llama3_json", "llama4_json", "longcat", "mimo", "minimax_m2", "openai",
    "plamo3", "qwen3_coder", "qwen3_json", "qwen3_xml", "step3p5", "step5",
]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer"},
            },
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Recherche — 検索 \"quoted\" \\ \U0001f600",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "maxLength": 64},
                "filter": {"$ref": "#/$defs/Filter"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ünï": {"type": ["string", "null"]},
            },
            "required": ["query"],
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {"lang": {"type": "string"}},
                }
            },
        },
    },
}
PING = {"type": "function", "function": {"name": "ping"}}
EMPTY = {"type": "function", "function": {"name": "noop", "description": "No args.",
                                          "parameters": {}}}

# Schemas that reach the per-model value rules (GLM's value formats, Kimi K3's
# argument tags, HY V4's argument keys).
EDGE = {
    "type": "function",
    "function": {
        "name": "edge",
        "description": "Edge cases: \u00e9\u00e8 <tag> & \"q\"",
        "parameters": {
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["a", "b<c", "d"]},
                "one": {"type": "string", "enum": ["only"]},
                "bad": {"type": "string", "enum": ["x<|y"], "maxLength": 10},
                "konst": {"type": "string", "const": "k"},
                "bounded": {"type": "string", "minLength": 2, "maxLength": 8},
                "huge": {"type": "string", "maxLength": 5000},
                "badmin": {"type": "string", "minLength": 9, "maxLength": 3},
                "level": {"enum": [1, 2.5, True, None, "x"]},
                "count": {"type": "integer", "minimum": 0},
                "ratio": {"type": "number"},
                "flag": {"type": "boolean"},
                "nil": {"type": "null"},
                "obj": {"type": "object", "properties": {"k": {"$ref": "#/definitions/K"}}},
                "arr": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "union": {"type": ["integer", "string", "null"]},
                "only_str": {"type": ["string"]},
                "untyped": {"description": "anything"},
                "key \"quoted\" & amp": {"type": "string"},
            },
            "required": ["mode", "missing_key"],
            "$defs": {"Item": {"type": "string"}},
            "definitions": {"K": {"type": "integer"}},
        },
    },
}
LOOSE = {
    "type": "function",
    "function": {
        "name": "loose",
        "parameters": {"type": "object", "properties": {"a": {"type": "string"}},
                       "additionalProperties": True},
    },
}
ANY_OF = {
    "type": "function",
    "function": {
        "name": "any_of",
        "parameters": {"anyOf": [{"type": "object"}], "properties": {"a": {"type": "integer"}},
                       "required": []},
    },
}


def strict(tool, value=True):
    tool = copy.deepcopy(tool)
    tool["function"]["strict"] = value
    return tool


TOOL_SETS = {
    "one": [WEATHER],
    "several": [WEATHER, SEARCH, PING, EMPTY],
    "no_params": [PING],
    "strict_one": [strict(WEATHER)],
    "strict_some": [strict(WEATHER), SEARCH, strict(PING, False), EMPTY],
    "strict_all": [strict(WEATHER), strict(SEARCH), strict(PING), strict(EMPTY)],
    "edge": [EDGE, LOOSE, ANY_OF],
    "strict_edge": [strict(EDGE), strict(LOOSE), strict(ANY_OF)],
}
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "answer", "schema": {
        "type": "object", "properties": {"answer": {"type": "string"}},
        "required": ["answer"]}},
}
JSON_OBJECT_FORMAT = {"type": "json_object"}


def named(tools, index=0):
    return {"type": "function", "function": {"name": tools[index]["function"]["name"]}}


def requests():
    for set_name, tools in TOOL_SETS.items():
        choices = {"auto": "auto", "required": "required", "named": named(tools)}
        if len(tools) > 1:
            choices["named_second"] = named(tools, 1)
        for choice_name, choice in choices.items():
            for parallel in (None, False):
                for fmt_name, fmt in (("", None), ("json_schema", JSON_SCHEMA_FORMAT),
                                      ("json_object", JSON_OBJECT_FORMAT)):
                    if fmt is not None and choice_name not in ("auto", "required"):
                        continue
                    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            "tools": tools, "tool_choice": choice}
                    if parallel is not None:
                        body["parallel_tool_calls"] = parallel
                    if fmt is not None:
                        body["response_format"] = fmt
                    name = f"{set_name}/{choice_name}"
                    if parallel is False:
                        name += "/single"
                    if fmt_name:
                        name += f"/{fmt_name}"
                    yield name, body


    for fmt_name, fmt in (("json_schema", JSON_SCHEMA_FORMAT), ("json_object", JSON_OBJECT_FORMAT),
                          ("text", {"type": "text"})):
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                "response_format": fmt}
        yield f"no_tools/{fmt_name}", body
        yield f"one/none/{fmt_name}", {**body, "tools": TOOL_SETS["one"], "tool_choice": "none"}


def parser_configs():
    found = {}
    for path in sorted(gf.CORPUS.glob("*.json")):
        corpus = json.loads(path.read_text())
        for raw in corpus["configs"]:
            config = gf.config_defaults(raw)
            tool = config["tool"]
            if tool in TOOL_PARSERS and tool not in found and \
                    gf.model_dir(config["model"]).exists():
                # No reasoning parser, but gpt-oss's own (its HarmonyParser then
                # adjusts every request, tool_choice none included).
                reasoning = config["reasoning"] if tool == "openai" else None
                found[tool] = {**config, "reasoning": reasoning, "chat_template_kwargs": {}}
    return found


# The server's --tool-strict-level: unset, then each of vLLM's names.
STRICT_LEVELS = [None, "auto", "function", "parameter"]

# vLLM's Cohere Command parser class builds its own structural tag from the
# model's architecture (``CohereCommandParser._apply_structural_tags``): each
# name as both reasoning and tool parser (so every request is adjusted), on
# every architecture of ``MODEL_TO_TAG_STYLE`` and one it lacks.
COHERE_PARSERS = ["cohere_command3", "cohere_command4"]
COHERE_ARCHITECTURES = ["Cohere2ForCausalLM", "Cohere2VisionForConditionalGeneration",
                        "Cohere2MoeForCausalLM", "LlamaForCausalLM"]
COHERE_TOOL_SETS = ("one", "several", "no_tools")


def record(entry, request, adjustment):
    """The request's structured outputs after adjust_request, or the error."""
    if request is None:
        entry["error"] = adjustment
        return entry
    so = request.structured_outputs
    if so is None:
        entry["structured_outputs"] = None
    elif so.structural_tag is not None:
        entry["structured_outputs"] = {"structural_tag": so.structural_tag}
    elif so.json is not None:
        entry["structured_outputs"] = {"json": so.json}
    elif so.json_object:
        entry["structured_outputs"] = {"json_object": True}
    else:
        entry["structured_outputs"] = {"other": repr(so)}
    entry["response_format_kept"] = request.response_format is not None
    return entry


def cohere_entries():
    gf.ensure_cohere_melody()
    configs = {}
    for raw in json.loads((gf.CORPUS / "cohere_command.json").read_text())["configs"]:
        config = gf.config_defaults(raw)
        configs.setdefault(config["tool"], config)
    for tool in COHERE_PARSERS:
        config = configs[tool]
        tokenizer = gf.tokenizer_for(config["model"], config["rename_tokens"],
                                     config["response_template"])
        parser_cls = ParserManager.get_parser(
            tool_parser_name=tool, reasoning_parser_name=tool, enable_auto_tools=True,
            model_name=config["model"], tokenizer=tokenizer)
        count = 0
        for architecture in COHERE_ARCHITECTURES:
            arch_config = {**config, "reasoning": tool, "chat_template_kwargs": {},
                           "architecture": architecture}
            for name, body in requests():
                if name.split("/")[0] not in COHERE_TOOL_SETS:
                    continue
                request, adjustment = sc.adjusted(parser_cls, tokenizer, arch_config, body, [])
                entry = {"tool": tool, "reasoning": tool, "case": name, "strict_level": None,
                         "architecture": architecture, "request": body}
                yield record(entry, request, adjustment)
                count += 1
        print(f"{tool}: {count} requests", file=sys.stderr)


def main() -> int:
    configs = parser_configs()
    results = []
    for tool in TOOL_PARSERS:
        config = configs.get(tool)
        if config is None:
            print(f"{tool}: no config", file=sys.stderr)
            continue
        tokenizer = gf.tokenizer_for(config["model"], config["rename_tokens"],
                                     config["response_template"])
        count = 0
        for level in STRICT_LEVELS:
            # get_parser per level: HarmonyParser keeps the level as a class
            # attribute, so each level's requests run before the next is set.
            parser_cls = ParserManager.get_parser(
                tool_parser_name=tool, reasoning_parser_name=config["reasoning"],
                enable_auto_tools=True,
                model_name=config["model"], is_harmony=config["model_type"] == "gpt_oss",
                tool_strict_level=level, tokenizer=tokenizer)
            for name, body in requests():
                request, adjustment = sc.adjusted(parser_cls, tokenizer, config, body, [])
                entry = {"tool": tool, "reasoning": config["reasoning"], "case": name,
                         "strict_level": level, "request": body}
                results.append(record(entry, request, adjustment))
                count += 1
        print(f"{tool}: {count} requests", file=sys.stderr)
    results.extend(cohere_entries())
    header = {"generated_by": "scripts/gen_structural_tags.py",
              "vllm_version": gf.VLLM_VERSION}
    gf.write_jsonl_gz(OUT, header, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
