#!/usr/bin/env python3
"""Generate ``tests/fixtures/mistral_grammars.json.gz``: what vLLM 0.33.0's
``MistralParser.adjust_request`` makes of chat requests when the model is served
with ``--tokenizer-mode mistral`` (a mistral-common tokenizer), for
``tests/mistral_grammars.rs``.

With a tekken tokenizer of version 11 or later, vLLM asks mistral-common's
``GrammarFactory`` for a Lark grammar covering the whole reply (reasoning, text,
``[TOOL_CALLS]`` calls, a JSON answer) and sends it as
``structured_outputs.grammar``; older tokenizers take the legacy branch (a JSON
schema for forced calls). The recorded request is the adjusted one: the
grammar or schema, ``skip_special_tokens``, whether ``response_format`` was
cleared and whether the grammar covers reasoning (``_grammar_from_parser``, so
``reasoning_ended`` is true), or vLLM's error.

mistral-common pin: vLLM 0.33.0 accepts ``mistral_common>=1.11.6`` and calls
``GrammarFactory.get_lark_from_jinja`` without ``force_tool_names``, which
mistral-common 1.13 made a required argument (every such request then fails
with a TypeError). The grammars are therefore those of mistral-common 1.12.0,
the newest release vLLM 0.33.0's call works with, installed by this script
into ``$REF/overlays/mistral_common-1.12.0`` and put ahead of the reference
env's own copy.

Tokenizers: mistral-common's vendored ``tekken_240911.json`` under instruct
versions v7/v11/v13 (``vllm-chat/scripts/gen_mistral_harmony_fixtures.py``'s
``synthetic_tekken``: the same 24 special tokens), v13 also without
``[THINK]``/``[/THINK]``.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_mistral_grammars.py
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MISTRAL_COMMON = "1.12.0"
REF = Path(os.environ.get("REF", Path.home() / ".cache" / "vllm-reference"))
OVERLAY = REF / "overlays" / f"mistral_common-{MISTRAL_COMMON}"
if not (OVERLAY / "mistral_common").is_dir():
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(OVERLAY), f"mistral-common=={MISTRAL_COMMON}"], check=True)
sys.path.insert(0, str(OVERLAY))

CRATE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CRATE.parent / "vllm-chat" / "scripts"))
sys.path.insert(0, str(CRATE / "scripts"))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0, quiet logging)
import mistral_common  # noqa: E402
from gen_mistral_harmony_fixtures import SYNTHETIC_SPECIALS, synthetic_tekken  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.tokenizers.mistral import MistralTokenizer  # noqa: E402
from vllm.utils.mistral import is_mistral_tokenizer, is_mistral_tool_parser  # noqa: E402

if mistral_common.__version__ != MISTRAL_COMMON:
    sys.exit(f"mistral_common {mistral_common.__version__} imported, fixtures pin {MISTRAL_COMMON}")

OUT = CRATE / "tests" / "fixtures" / "mistral_grammars.json.gz"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "Ünïcode city"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}
PING = {"type": "function", "function": {"name": "ping"}}
STRICT = {"type": "function", "function": {
    "name": "book", "strict": True,
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}},
                   "required": ["n"], "additionalProperties": False}}}
STRICT_EMPTY = {"type": "function", "function": {"name": "noop", "strict": True}}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def named(name):
    return {"type": "function", "function": {"name": name}}


REQUESTS = [
    ("plain", {}),
    ("tools", {"tools": [WEATHER, PING]}),
    ("tools_auto", {"tools": [WEATHER, PING], "tool_choice": "auto"}),
    ("tools_none", {"tools": [WEATHER, PING], "tool_choice": "none"}),
    ("tools_required", {"tools": [WEATHER, PING], "tool_choice": "required"}),
    ("tools_named", {"tools": [WEATHER, PING], "tool_choice": named("get_weather")}),
    ("tools_single_call", {"tools": [WEATHER], "parallel_tool_calls": False}),
    ("required_single_call", {"tools": [WEATHER, PING], "tool_choice": "required",
                              "parallel_tool_calls": False}),
    ("strict_tools", {"tools": [WEATHER, STRICT, STRICT_EMPTY]}),
    ("strict_required", {"tools": [STRICT, WEATHER], "tool_choice": "required"}),
    ("strict_named", {"tools": [WEATHER, STRICT], "tool_choice": named("book")}),
    ("strict_named_loose", {"tools": [WEATHER, STRICT], "tool_choice": named("get_weather")}),
    ("json_object", {"response_format": {"type": "json_object"}}),
    ("json_schema", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "a", "schema": SCHEMA}}}),
    ("json_schema_strict", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "a", "schema": SCHEMA, "strict": True}}}),
    ("text_format", {"response_format": {"type": "text"}}),
    ("text_format_tools", {"tools": [WEATHER], "response_format": {"type": "text"}}),
    ("json_object_tools", {"tools": [WEATHER], "response_format": {"type": "json_object"}}),
    ("json_schema_tools", {"tools": [WEATHER, STRICT], "response_format": {
        "type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}}),
    ("json_schema_tools_none", {"tools": [WEATHER], "tool_choice": "none", "response_format": {
        "type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}}),
    ("json_schema_required", {"tools": [WEATHER], "tool_choice": "required", "response_format": {
        "type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA}}}),
    ("json_object_named", {"tools": [WEATHER], "tool_choice": named("get_weather"),
                           "response_format": {"type": "json_object"}}),
    ("structured_json", {"structured_outputs": {"json": SCHEMA}}),
    ("structured_json_text", {"structured_outputs": {"json": json.dumps(SCHEMA)}}),
    ("structured_json_object", {"structured_outputs": {"json_object": True}}),
    ("structured_json_tools", {"tools": [WEATHER], "structured_outputs": {"json": SCHEMA}}),
    ("structured_regex", {"structured_outputs": {"regex": "[a-z]+"}}),
    ("structured_choice_tools", {"tools": [WEATHER], "tool_choice": "required",
                                 "structured_outputs": {"choice": ["a", "b"]}}),
    ("structured_grammar", {"structured_outputs": {"grammar": "start: \"x\""}}),
    ("structural_tag_format", {"response_format": {"type": "structural_tag", "format": {
        "type": "const_string", "value": "x"}}}),
    ("odd_names", {"tools": [{"type": "function", "function": {"name": 'say "hi" now'}},
                             {"type": "function", "function": {"name": "x", "strict": True,
                                                               "parameters": {}}}],
                   "tool_choice": "required", "parallel_tool_calls": False}),
    ("float_schema", {"tools": [WEATHER], "tool_choice": "none", "response_format": {
        "type": "json_schema", "json_schema": {"name": "a", "schema": {
            "type": "number", "minimum": 1.0, "maximum": 1e20, "multipleOf": 0.5}}}}),
    ("empty_schema", {"structured_outputs": {"json": {}}}),
    ("unicode_tool", {"tools": [{"type": "function", "function": {
        "name": "météo", "strict": True, "parameters": {"type": "object", "properties": {
            "ville": {"type": "string", "description": "城市 \"quoted\" \\ back"}}}}}],
        "tool_choice": "required"}),
]

# (name, instruct version, special tokens)
TOKENIZERS = [
    ("tekken_v7", "v7", SYNTHETIC_SPECIALS),
    ("tekken_v11", "v11", SYNTHETIC_SPECIALS),
    ("tekken_v13", "v13", SYNTHETIC_SPECIALS),
    ("tekken_v13_no_think", "v13", [t for t in SYNTHETIC_SPECIALS if "THINK" not in t]),
]
PARSERS = [("mistral", None), ("mistral", "mistral"), (None, "mistral")]


def tokenizer(version, specials, tmp):
    out = synthetic_tekken(version, tmp)
    path = Path(out) / "tekken.json"
    data = json.loads(path.read_text())
    data["special_tokens"] = [
        {"rank": i, "token_str": t, "is_control": True} for i, t in enumerate(specials)]
    path.write_text(json.dumps(data))
    return MistralTokenizer.from_pretrained(out)


def adjusted(parser_cls, tok, body):
    """OnlineRenderer's adjust_request on a fresh request (its ``should_adjust_request``)."""
    try:
        request = ChatCompletionRequest.model_validate(copy.deepcopy(body))
    except Exception as e:  # noqa: BLE001
        return {"invalid": str(e).splitlines()[0]}
    # OnlineRenderer refuses a tool_choice without a tool parser, but not with a
    # mistral-common tokenizer (every tokenizer here).
    assert is_mistral_tokenizer(tok)
    parser = parser_cls(tok, request.tools, chat_template_kwargs={})
    # OnlineRenderer: grammar-capable Mistral tokenizers always adjust with the
    # Mistral tool parser, even for tool_choice "none".
    grammar_eligible = (is_mistral_tool_parser(parser_cls.tool_parser_cls)
                        and is_mistral_tokenizer(tok) and tok.supports_grammar)
    should = (parser_cls.always_adjust_request or parser_cls.reasoning_parser_cls is not None
              or request.tool_choice != "none" or grammar_eligible)
    if not should:
        return {"not_adjusted": True}
    original = copy.deepcopy(request.structured_outputs)
    try:
        parser.set_prompt_token_ids([1, 3, 1000, 4])
        request = parser.adjust_request(request)
    except Exception as e:  # noqa: BLE001
        return {"error": str(e), "error_type": type(e).__name__,
                "param": getattr(e, "parameter", None)}
    so = request.structured_outputs
    kind = None
    if so is not None and (original is None or vars(so) != vars(original)):
        if so.grammar is not None:
            kind = {"grammar": so.grammar}
        elif so.json is not None:
            kind = {"json": so.json if not isinstance(so.json, str) else json.loads(so.json)}
        else:
            kind = {"other": {k: v for k, v in vars(so).items()
                               if v is not None and not k.startswith("_") and v is not False}}
    # The constraint adjust_request set (`None`: the request's own, if any, stays).
    return {
        "skip_special_tokens": request.skip_special_tokens,
        "structured_outputs": kind,
        "response_format_cleared": body.get("response_format") is not None
        and request.response_format is None,
        "grammar_from_parser": request._grammar_from_parser,
    }


def main() -> int:
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, version, specials in TOKENIZERS:
            tok = tokenizer(version, specials, os.path.join(tmp, name))
            vocab = {t: i for i, t in enumerate(specials)}
            for tool, reasoning in PARSERS:
                parser_cls = ParserManager.get_parser(
                    tool_parser_name=tool, reasoning_parser_name=reasoning,
                    enable_auto_tools=tool is not None, model_name=name, tokenizer=tok)
                for request_name, extra in REQUESTS:
                    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                            **extra}
                    cases.append({
                        "tokenizer": name, "version": int(version[1:]), "specials": vocab,
                        "tool_parser": tool, "reasoning_parser": reasoning,
                        "name": request_name, "request": body,
                        "adjusted": adjusted(parser_cls, tok, body),
                    })
    header = {"generated_by": "scripts/gen_mistral_grammars.py", "vllm_version": gf.VLLM_VERSION,
              "mistral_common": MISTRAL_COMMON}
    with gzip.GzipFile(OUT, "wb", compresslevel=9, mtime=0) as f:
        f.write(json.dumps({**header, "cases": cases}, ensure_ascii=False).encode())
    errors = sum("error" in c["adjusted"] for c in cases)
    print(f"{OUT.name}: {len(cases)} cases ({errors} errors)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
