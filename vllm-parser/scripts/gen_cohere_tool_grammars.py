#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/cohere_tool_grammars.json.gz``: the
structural tag vLLM 0.33.0's Cohere Command parser class puts on a chat
request with tools (``convert_schema_to_structural_tags`` in
``vllm/parser/cohere_command.py``, whose tools grammar embeds
``str(xgr.Grammar.from_json_schema(...))`` of xgrammar 0.2.8 per tool), or
the error it raises.

Cases:

* ``corpus/…``: every distinct tool of the parser corpora
  (``scripts/corpus/*.json``) and of ``gen_structural_tags.TOOL_SETS``, alone,
  plus a few hand-written realistic tools (``REALISTIC``), and each tool set of
  ``TOOL_SETS`` together; each on every architecture of
  ``MODEL_TO_TAG_STYLE``, with and without a JSON ``response_format``.
* ``sweep/N``: ``SWEEP`` generated tools (seeded, deterministic) covering the
  JSON Schema features xgrammar converts, on one architecture.
* ``features/N``: ``FEATURES`` generated tools (seeded apart, so that the
  ``sweep`` cases stay as they were) aimed at the keywords converted later:
  integer and number bounds, ``additionalProperties`` beside ``properties``,
  property names that are annotation keywords (``title``, ``description``…)
  and the same properties in another order (schemas xgrammar takes for one
  another), ``allOf``, ``pattern``, ``format``, floats in ``enum``, and some
  still outside the subset (``multipleOf``, fractional bounds, rarer regexes).
* ``bounds/N``: ``BOUNDS`` generated tools (seeded apart again) aimed at
  numeric bounds: ``number`` with fractional bounds, bounds past 10^12 and
  rounding past six decimals, ``integer`` with ``multipleOf`` (beside
  both bounds, one, or none; fractional, up to and past 1024), and objects
  with ``minProperties`` / ``maxProperties``, ``patternProperties``,
  ``propertyNames``; and other keywords beside ``$ref`` / ``allOf``.
* ``reading/N``: ``READING`` generated tools (seeded apart again) aimed at
  how xgrammar reads a schema: ``minProperties`` / ``maxProperties`` beside
  ``properties`` (required or not, other keys or not), schemas without
  ``type`` and keywords another type reads, schemas xgrammar takes for one
  another (properties named ``title`` / ``description`` / …, or in another
  order, in the tool and in ``$defs``), non-ASCII patterns,
  ``propertyNames`` without ``type``, integer bounds past 2^53,
  ``allOf`` of several schemas with a ``$ref``, ``prefixItems``,
  ``format`` beside ``pattern``, ``patternProperties`` /
  ``propertyNames`` beside ``properties``, ``unevaluatedProperties``, and
  references to definitions named with digits, into a definition, to
  ``#``, and elsewhere.

``tests/cohere_tool_grammars.rs`` replays every case through
``ServingParsers::adjust_request``: the tag must be vLLM's byte for byte, or,
for a tool outside the subset the crate converts, the typed unsupported error
(``cohere_tools_grammar``) with the tag left unbuilt.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_cohere_tool_grammars.py
"""

from __future__ import annotations

import copy
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0, offline tokenizers)
import gen_structural_tags as st  # noqa: E402

gf.ensure_cohere_melody()
from vllm.parser import cohere_command as cc  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "cohere_tool_grammars.json.gz"
ARCHITECTURES = list(cc.MODEL_TO_TAG_STYLE)
SWEEP = 800
SEED = 20260512
FEATURES = 400
FEATURES_SEED = 20261202
BOUNDS = 400
BOUNDS_SEED = 20261203
READING = 400
READING_SEED = 20261204
JSON_FORMAT = st.JSON_SCHEMA_FORMAT


def fn(name, parameters=None, description=None):
    function = {"name": name}
    if description is not None:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}


NULLABLE = lambda t, **kw: {"anyOf": [{"type": t, **kw}, {"type": "null"}], "default": None}  # noqa: E731

REALISTIC = [
    # Pydantic v2 style: titles, defaults, Optional fields, enums in $defs.
    fn("create_event", {
        "$defs": {"Priority": {"enum": ["low", "normal", "high"], "title": "Priority",
                               "type": "string"},
                  "Attendee": {"properties": {"email": {"title": "Email", "type": "string"},
                                              "optional": {"default": False, "title": "Optional",
                                                           "type": "boolean"}},
                               "required": ["email"], "title": "Attendee", "type": "object"}},
        "properties": {
            "title": {"title": "Title", "type": "string"},
            "start": {"title": "Start", "type": "string"},
            "duration_minutes": {"default": 30, "title": "Duration Minutes", "type": "integer"},
            "priority": {"$ref": "#/$defs/Priority", "default": "normal"},
            "attendees": {"items": {"$ref": "#/$defs/Attendee"}, "title": "Attendees",
                          "type": "array"},
            "location": {**NULLABLE("string"), "title": "Location"},
        },
        "required": ["title", "start"], "title": "CreateEvent", "type": "object"},
       "Create a calendar event."),
    # OpenAI strict style.
    fn("lookup_order", {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order id"},
                       "include_items": {"type": ["boolean", "null"]}},
        "required": ["order_id", "include_items"], "additionalProperties": False}),
    # MCP style: nested objects and arrays of objects.
    fn("fs_write", {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Absolute path"},
            "edits": {"type": "array", "minItems": 1, "items": {
                "type": "object",
                "properties": {"old": {"type": "string"}, "new": {"type": "string"}},
                "required": ["old", "new"], "additionalProperties": False}},
            "dry_run": {"type": "boolean", "default": False},
        },
        "required": ["path", "edits"], "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#"}),
    fn("sql_query", {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1},
                       "params": {"type": "array", "items": {
                           "anyOf": [{"type": "string"}, {"type": "number"},
                                     {"type": "null"}]}},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 1000}},
        "required": ["query"]}),
    fn("send_email", {
        "type": "object",
        "properties": {"to": {"type": "array", "items": {"type": "string", "format": "email"}},
                       "subject": {"type": "string", "maxLength": 200},
                       "body": {"type": "string"},
                       "cc": {"type": "array", "items": {"type": "string"}, "maxItems": 10}},
        "required": ["to", "subject", "body"]}),
    fn("set_thermostat", {
        "type": "object",
        "properties": {"mode": {"type": "string", "enum": ["heat", "cool", "auto", "off"]},
                       "target": {"type": "number"},
                       "zones": {"type": "array", "items": {"type": "integer"},
                                 "uniqueItems": True}},
        "required": ["mode"]}),
    fn("tree_op", {
        "type": "object",
        "properties": {"node": {"$ref": "#/definitions/Node"}},
        "definitions": {"Node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
            "required": ["name"]}}}),
    fn("tag_resources", {
        "properties": {
            "resource_ids": {"items": {"type": "string"}, "title": "Resource Ids", "type": "array"},
            "tags": {"additionalProperties": {"type": "string"}, "title": "Tags", "type": "object"},
            "overwrite": {"default": False, "title": "Overwrite", "type": "boolean"}},
        "required": ["resource_ids", "tags"], "title": "TagResources", "type": "object"}),
    fn("no_params_tool"),
    fn("empty_object", {"type": "object", "properties": {}}),
    fn("any_args", {"type": "object"}),
]


def corpus_tools():
    seen = {}
    for path in sorted(gf.CORPUS.glob("*.json")):
        tools = json.loads(path.read_text()).get("tools") or []
        for tool in tools:
            seen.setdefault(json.dumps(tool, sort_keys=True), tool)
    for tools in st.TOOL_SETS.values():
        for tool in tools:
            seen.setdefault(json.dumps(tool, sort_keys=True), tool)
    for tool in REALISTIC:
        seen.setdefault(json.dumps(tool, sort_keys=True), tool)
    return list(seen.values())


# ---------------------------------------------------------------- the sweep

NAMES = ["a", "b", "city", "root", "basic_string", "x y", "q\"k", "é", "count", "items",
         "root_prop_0", "tool_name", "parameters", "n1", "_", "k\\z", "a?b", "☃"]
STRINGS = ["x", "y z", "a\"b", "c\\d", "e\nf", "é", "☃", "\u0001", "it's", "a?", "😀", "/"]
TOOL_NAMES = ["f", "get_weather", "search-web", "a.b", "tool-", "root", "basic", "x1"]
ANNOTATIONS = [("description", "d"), ("title", "T"), ("default", None), ("examples", ["e"])]


def scalar(rng):
    kind = rng.choice(["string", "integer", "number", "boolean", "null"])
    schema = {"type": kind}
    roll = rng.random()
    if kind == "string":
        if roll < 0.15:
            schema["minLength"] = rng.choice([0, 1, 3])
        elif roll < 0.3:
            schema["maxLength"] = rng.choice([1, 5, 64])
        elif roll < 0.38:
            schema["pattern"] = rng.choice(["^[a-z]+$", "^[0-9]+$", "[A-Z]{2}"])
        elif roll < 0.45:
            schema["format"] = rng.choice(["date", "email", "uri", "uuid", "date-time"])
        elif roll < 0.5:
            schema.update(minLength=1, maxLength=rng.choice([1, 10]))
    elif kind in ("integer", "number"):
        if roll < 0.2:
            schema["minimum"] = rng.choice([0, 1, -5])
        elif roll < 0.3:
            schema.update(minimum=rng.choice([0, 1]), maximum=rng.choice([10, 100]))
        elif roll < 0.35:
            schema["exclusiveMinimum"] = 0
    if rng.random() < 0.1:
        schema["nullable"] = True
    return schema


def enum_values(rng):
    pool = STRINGS + [1, 0, -7, 2**40, True, False, None, 1.5, [1, "a"], {"k": "v"}]
    return [rng.choice(pool) for _ in range(rng.randint(1, 4))]


def schema(rng, depth, defs):
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        out = scalar(rng)
    elif roll < 0.45:
        out = {"enum": enum_values(rng)}
        if rng.random() < 0.3:
            out["type"] = "string"
    elif roll < 0.5:
        out = {"const": rng.choice(STRINGS + [3, True, None])}
    elif roll < 0.65:
        out = obj(rng, depth - 1, defs)
    elif roll < 0.77:
        out = {"type": "array"}
        if rng.random() < 0.9:
            out["items"] = schema(rng, depth - 1, defs)
        if rng.random() < 0.3:
            out["minItems"] = rng.choice([0, 1, 2])
        if rng.random() < 0.3:
            out["maxItems"] = rng.choice([1, 3, 5])
        if rng.random() < 0.05:
            out["uniqueItems"] = True
    elif roll < 0.84:
        key = rng.choice(["anyOf", "anyOf", "oneOf", "allOf"])
        out = {key: [schema(rng, depth - 1, defs) for _ in range(rng.randint(1, 3))]}
    elif roll < 0.9:
        kinds = rng.sample(["string", "integer", "number", "boolean", "null", "array", "object"],
                           rng.randint(1, 3))
        out = {"type": kinds}
        if "string" in kinds and rng.random() < 0.3:
            out["maxLength"] = 8
    elif roll < 0.96:
        name = rng.choice(["A", "B", "Node", "my-def.x", "x"])
        section = rng.choice(["$defs", "$defs", "definitions"])
        if name not in defs.setdefault(section, {}):
            defs[section][name] = None  # placeholder: recursion allowed
            defs[section][name] = schema(rng, depth - 1, defs)
        out = {"$ref": f"#/{section}/{name}"}
    elif roll < 0.97:
        out = rng.choice([{}, True, {"nullable": True}, {"type": "object"}, {"type": "array"}])
    elif rng.random() < 0.5:
        out = {"type": "object", "properties": {"a": {"type": "string"}},
               "additionalProperties": rng.choice([True, {"type": "integer"}])}
    else:
        # A map (pydantic's ``dict[str, V]``).
        out = {"type": "object",
               "additionalProperties": rng.choice([True, {}, schema(rng, depth - 1, defs)])}
    if isinstance(out, dict) and rng.random() < 0.3:
        key, value = rng.choice(ANNOTATIONS)
        out[key] = value
    return out


def obj(rng, depth, defs):
    count = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5])
    names = rng.sample(NAMES, count) if rng.random() < 0.3 else [f"p{i}" for i in range(count)]
    properties = {name: schema(rng, depth, defs) for name in names}
    out = {"type": "object", "properties": properties}
    if rng.random() < 0.1:
        del out["type"]
    if names and rng.random() < 0.7:
        out["required"] = [n for n in names if rng.random() < 0.5]
        if rng.random() < 0.1:
            out["required"].append("missing")
    if rng.random() < 0.3:
        out["additionalProperties"] = False
    return out


def sweep_tools(rng):
    tools = []
    for _ in range(SWEEP):
        defs = {}
        params = obj(rng, rng.randint(0, 3), defs)
        for section, entries in defs.items():
            params[section] = {k: (v if v is not None else {"type": "string"})
                               for k, v in entries.items()}
        name = rng.choice(TOOL_NAMES) if rng.random() < 0.3 else "tool"
        tools.append(fn(name, params))
    return tools


# ---------------------------------------------------------------- the features sweep

FEATURE_NAMES = ["a", "ab", "abc", "b", "city", "ci", "cat", "x y", "", "a.b$", "q@", "title",
                 "description", "default", "examples", "root", "é", "k-z", "q\"k", "a?]"]


def bound(rng):
    roll = rng.random()
    if roll < 0.5:
        value = rng.randint(-12, 12)
    elif roll < 0.8:
        value = rng.choice([0, 1, 10, 100, 255, 1000, 65535, -1, -100, 3600, 86400])
    elif roll < 0.9:
        value = rng.randint(-10**6, 10**6)
    else:
        value = rng.choice([2**31 - 1, -2**31, 2**53, 2**63 - 1, -2**63, 10**12, 10**13])
    roll = rng.random()
    if roll < 0.15:
        return float(value)
    if roll < 0.22:
        return value + rng.choice([0.5, 0.25, 0.001])
    return value


def numeric(rng):
    out = {"type": rng.choice(["integer", "integer", "number"])}
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if rng.random() < 0.4:
            out[key] = bound(rng)
    if rng.random() < 0.05:
        out["multipleOf"] = rng.choice([2, 5, 0.5])
    if rng.random() < 0.1:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def feature_value(rng, depth):
    roll = rng.random()
    if roll < 0.45:
        return numeric(rng)
    if roll < 0.75 and depth > 0:
        return feature_object(rng, depth - 1)
    if roll < 0.8:
        return {"type": "array", "items": numeric(rng)}
    if roll < 0.85:
        return {"allOf": [{"type": "integer"}, {"minimum": 0}]}
    if roll < 0.9:
        if rng.random() < 0.5:
            return {"type": "string", "pattern": rng.choice(
                ["^[a-z]+$", r"^\d{3}-\d{4}$", "^[A-Z]{2}[0-9]*$", r"^\w+@\w+\.com$", "^é$", r"(a)\1"])}
        out = {"type": "string", "format": rng.choice(
            ["email", "date", "date-time", "time", "uri", "uuid", "ipv4", "ipv6", "hostname",
             "duration", "uri-reference", "int64", "binary"])}
        if rng.random() < 0.2:
            out["maxLength"] = 64
        return out
    if roll < 0.95:
        return {"enum": rng.sample([1.5, 3.0, -0.0, 1e20, 2, "x", None], rng.randint(1, 3))}
    return rng.choice([{"type": "string"}, {"type": "integer"}, {}, True])


def feature_object(rng, depth):
    names = rng.sample(FEATURE_NAMES, rng.randint(0, 4))
    out = {"type": "object", "properties": {n: feature_value(rng, depth) for n in names}}
    if names and rng.random() < 0.6:
        out["required"] = [n for n in names if rng.random() < 0.5]
        if rng.random() < 0.05:
            out["required"].append("missing")
    roll = rng.random()
    if roll < 0.5:
        out["additionalProperties"] = rng.choice(
            [True, {}, {"type": "integer"}, {"type": "string", "maxLength": 3},
             numeric(rng), False])
    if rng.random() < 0.2:
        out["description"] = "d"
    return out


def feature_tools(rng):
    tools = []
    for _ in range(FEATURES):
        params = feature_object(rng, rng.randint(0, 2))
        if rng.random() < 0.3:
            # A definition and a copy of it, its properties renamed or reordered.
            target = feature_object(rng, 0)
            copy_ = copy.deepcopy(target)
            items = list(copy_["properties"].items())
            if rng.random() < 0.5:
                items.reverse()
            else:
                items.append((rng.choice(["title", "description", "default"]), {"type": "string"}))
            copy_["properties"] = dict(items)
            params["$defs"] = {"D": target}
            params["properties"]["ref"] = {"$ref": "#/$defs/D"}
            params["properties"]["copy"] = copy_
        tools.append(fn("tool", params))
    return tools


# ---------------------------------------------------------------- the bounds sweep

def number_bound(rng):
    roll = rng.random()
    if roll < 0.3:
        return rng.randint(-400, 400) / rng.choice([2, 4, 8, 10, 100, 1000])
    if roll < 0.45:
        return rng.randint(-10**7, 10**7) / 10**rng.randint(0, 9)
    if roll < 0.55:
        return rng.choice([1, -1]) * rng.randint(1, 10**rng.randint(12, 20))
    if roll < 0.65:
        return rng.choice([1, -1]) * 10**rng.uniform(-8, 30)
    if roll < 0.75:
        return rng.choice([0, 0.0, -0.0, 1e-7, 5e-7, 0.9999999, 9.9999995, 0.0078125,
                           1e300, -1e300, 2.0**63, -2.0**63, 2**53 + 1, 4e15 + 0.5])
    if roll < 0.85:
        return rng.randint(-20, 20) + rng.randint(0, 999999) / 1e6
    return rng.randint(-1000, 1000)


def bounded_number(rng):
    out = {"type": "number"}
    keys = rng.sample(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
                      rng.randint(1, 3))
    for key in keys:
        out[key] = number_bound(rng)
    low = [k for k in keys if "inimum" in k]
    high = [k for k in keys if "aximum" in k]
    if low and high and rng.random() < 0.95:
        # Mostly non-empty ranges.
        a, b = out[low[0]], out[high[0]]
        if a > b:
            out[low[0]], out[high[0]] = b, a
    if rng.random() < 0.05:
        out["multipleOf"] = rng.choice([0.5, 2])
    return out


def multiple_integer(rng):
    out = {"type": "integer"}
    roll = rng.random()
    if roll < 0.55:
        m = rng.choice([1, 2, 3, 5, 7, 10, 25, 50, 100, 250, 1000, 1024])
    elif roll < 0.75:
        m = rng.randint(1, 40)
    elif roll < 0.85:
        m = rng.choice([2.5, 0.5, 3.0, 1025, 2000, 1e30])
    else:
        m = rng.randint(101, 300)
    out["multipleOf"] = m
    roll = rng.random()
    if roll < 0.6:
        low = rng.randint(-200, 200) if rng.random() < 0.8 else rng.randint(-10**6, 10**6)
        width = rng.choice([0, 1, 5, 20, 100, 1000, 9999, 10000, 10001, 50000])
        out[rng.choice(["minimum", "exclusiveMinimum"])] = low
        out[rng.choice(["maximum", "exclusiveMaximum"])] = low + width
    elif roll < 0.75:
        out[rng.choice(["minimum", "exclusiveMaximum"])] = rng.randint(-50, 50)
    elif roll < 0.8:
        out["minimum"], out["maximum"] = -2**63, 2**63 - 1
    elif isinstance(m, int) and m > 300:
        # Unbounded: one rule per remainder; keep the large ones rare.
        out["multipleOf"] = rng.randint(2, 30)
    return out


def counted_object(rng):
    out = {"type": "object"}
    roll = rng.random()
    if roll < 0.35:
        out["additionalProperties"] = rng.choice(
            [True, {}, {"type": "integer"}, {"type": "string"}, bounded_number(rng)])
    elif roll < 0.6:
        out["patternProperties"] = {
            p: rng.choice([{"type": "integer"}, {"type": "string", "maxLength": 3},
                           {"type": "string", "pattern": p}, multiple_integer(rng), {}])
            for p in rng.sample(["^a", "^[a-z]+$", r"^\d{2}$", "^x_", "title", "^é"],
                                rng.randint(1, 2))}
        if rng.random() < 0.3:
            out["additionalProperties"] = rng.choice([False, {"type": "string"}])
    elif roll < 0.85:
        out["propertyNames"] = rng.choice([
            {"type": "string", "pattern": "^[a-z]+$"}, {"pattern": "^a"},
            {"type": "string", "maxLength": 3}, {"enum": ["x", "y"]}, {"type": "string"}])
        if rng.random() < 0.6:
            out["additionalProperties"] = rng.choice(
                [True, False, {"type": "integer"}, {"type": "string", "maxLength": 3}])
    elif roll < 0.95:
        out["properties"] = {"a": {"type": "integer"}, "b": {"type": "string"}}
        if rng.random() < 0.5:
            out["additionalProperties"] = True
    low = rng.choice([None, None, 0, 1, 2, 3, 5])
    high = rng.choice([None, None, 0, 1, 2, 3, 4, 10])
    if low is not None and high is not None and high < low and rng.random() < 0.8:
        high = low + rng.choice([0, 1, 2, 5])
    if low is not None:
        out["minProperties"] = low
    if high is not None:
        out["maxProperties"] = high
    return out


BESIDE = [{"type": "object"}, {"type": "integer", "minimum": 3}, {"required": ["x"]},
          {"properties": {"y": {"type": "string"}}}, {"items": {"type": "string"}},
          {"nullable": True}, {"maxLength": 2, "pattern": "^a"}, {"description": "d"},
          {"anyOf": [{"type": "null"}]}, {"additionalProperties": False}]


def beside_ref(rng):
    """A ``$ref`` (to a definition of the tool's) or an ``allOf`` with other
    keywords beside it."""
    target = rng.choice([{"$ref": "#/$defs/A"}, {"allOf": [{"$ref": "#/$defs/A"}]},
                         {"allOf": [{"type": "integer"}]},
                         {"allOf": [{"type": "integer"}, {"minimum": 0}]}])
    out = dict(target)
    for extra in rng.sample(BESIDE, rng.randint(1, 2)):
        out.update(extra)
    return out


def bounds_tools(rng):
    tools = []
    for _ in range(BOUNDS):
        names = rng.sample(["a", "b", "c", "price", "count"], rng.randint(1, 3))
        props = {}
        for n in names:
            roll = rng.random()
            props[n] = (bounded_number(rng) if roll < 0.4 else multiple_integer(rng)
                        if roll < 0.65 else counted_object(rng) if roll < 0.9
                        else beside_ref(rng))
        params = {"type": "object", "properties": props}
        if "#/$defs/A" in json.dumps(props):
            params["$defs"] = {"A": {"type": "object", "properties": {"x": {"type": "integer"}},
                                     "required": ["x"]}}
        if rng.random() < 0.5:
            params["required"] = [n for n in names if rng.random() < 0.6]
        tools.append(fn("tool", params))
    return tools


READ_NAMES = ["x", "y", "title", "description", "default", "examples"]
UNTYPED = [{"minimum": 0}, {"maxLength": 3}, {"required": ["a"]}, {"pattern": "^a"},
           {"items": {"type": "integer"}}, {"properties": {"a": {"type": "integer"}}},
           {"additionalProperties": {"type": "string"}}, {"minItems": 2}, {"format": "email"}]
OTHER_TYPES_KEYWORDS = [
    {"type": "integer", "maxLength": 2}, {"type": "boolean", "minLength": 1},
    {"type": "array", "maxLength": 3}, {"type": "null", "minimum": 1},
    {"type": "string", "minimum": 0, "maxLength": 4}, {"type": "object", "items": {"type": "string"}}]


def small_object(rng):
    """An object whose properties may be named like annotations (xgrammar's
    key drops them) and come in any order."""
    names = rng.sample(READ_NAMES, rng.randint(1, 3))
    out = {"type": "object", "properties": {
        n: rng.choice([{"type": "integer"}, {"type": "string"}, {"type": "string", "title": "T"},
                       {"minimum": 1}]) for n in names}}
    if rng.random() < 0.3:
        out["required"] = [names[0]]
    if rng.random() < 0.2:
        out["additionalProperties"] = rng.choice([True, {"type": "integer"}])
    return out


def counted_properties(rng):
    # A control character in a name: a byte of the other keys' trie.
    names = rng.sample(["a", "b", "c", "d\te"], rng.randint(1, 4))
    out = {"type": "object", "properties": {
        n: rng.choice([{"type": "integer"}, {"type": "string"}]) for n in names}}
    if rng.random() < 0.6:
        out["required"] = [n for n in names if rng.random() < 0.5]
    if rng.random() < 0.5:
        other = rng.choice(["additionalProperties", "additionalProperties", "unevaluatedProperties"])
        out[other] = rng.choice([True, {"type": "integer"}, False])
    low = rng.choice([None, 0, 1, 2, 3])
    high = rng.choice([None, 0, 1, 2, 3, 5])
    if low is not None:
        out["minProperties"] = low
    if high is not None:
        out["maxProperties"] = high
    if low is None and high is None:
        out["minProperties"] = 1
    return out


def reading_value(rng):
    roll = rng.random()
    if roll < 0.3:
        return counted_properties(rng)
    if roll < 0.5:
        return small_object(rng)
    if roll < 0.6:
        # Digits drop out of xgrammar's rule names; `#` is the root; other
        # references are any value.
        return {"$ref": rng.choice(["#/$defs/S", "#/$defs/T", "#/$defs/S1", "#/$defs/S1",
                                    "#/$defs/T/properties/w", "#", "other.json"])}
    if roll < 0.7:
        return copy.deepcopy(rng.choice(UNTYPED))
    if roll < 0.8:
        return copy.deepcopy(rng.choice(OTHER_TYPES_KEYWORDS))
    if roll < 0.85:
        return {"type": "string", "pattern": rng.choice(["^é$", "^日本$", "é", "^aé$"])}
    if roll < 0.9:
        out = {"type": "object", "propertyNames": rng.choice(
            [{"pattern": "^a"}, {"maxLength": 3}, {"enum": ["x"]}])}
        if rng.random() < 0.5:
            out["additionalProperties"] = {"type": "integer"}
        return out
    if roll < 0.95:
        key = rng.choice(["minimum", "maximum", "exclusiveMinimum"])
        return {"type": "integer",
                key: rng.choice([2.0**53, 2.0**53 + 2, 1e18, -1e18, 2.0**63])}
    return {"allOf": [{"$ref": "#/$defs/S"}, small_object(rng)]}


def tuple_or_format(rng):
    """An array with ``prefixItems`` (and ``items`` or not, counts or not),
    or a string with both ``format`` and ``pattern``."""
    if rng.random() < 0.3:
        out = {"type": "string", "format": rng.choice(["date", "uuid", "foo"]),
               "pattern": "^[a-z]+$"}
        return out
    out = {"type": "array", "prefixItems": [
        rng.choice([{"type": "integer"}, {"type": "string"}, {"minimum": 1}])
        for _ in range(rng.randint(0, 3))]}
    items = rng.choice([None, False, True, {"type": "boolean"}])
    if items is not None:
        out["items"] = items
    if rng.random() < 0.5:
        out["minItems"] = rng.randint(0, 4)
    if rng.random() < 0.4:
        out["maxItems"] = rng.randint(1, 5)
    return out


def keyed_beside_properties(rng):
    """``patternProperties`` / ``propertyNames`` beside ``properties``
    (``additionalProperties``, ``required``, counts or not)."""
    names = rng.sample(["a", "b", "c"], rng.randint(1, 3))
    out = {"type": "object", "properties": {
        n: rng.choice([{"type": "integer"}, {"type": "string"}]) for n in names}}
    if rng.random() < 0.6:
        out["patternProperties"] = {p: rng.choice([{"type": "integer"}, {}, {"type": "string"}])
                                    for p in rng.sample(["^x", "^[a-z]+$", "^é", "title"],
                                                        rng.randint(1, 2))}
    else:
        out["propertyNames"] = rng.choice([{"pattern": "^a"}, {"type": "string", "maxLength": 3},
                                           {"enum": ["x", "y"]}])
    if rng.random() < 0.6:
        out["additionalProperties"] = rng.choice([True, False, {"type": "boolean"}])
    if rng.random() < 0.4:
        out["required"] = rng.sample(names + ["zz"], rng.randint(0, len(names)))
    if rng.random() < 0.3:
        out["minProperties"] = rng.randint(0, 3)
    if rng.random() < 0.3:
        out["maxProperties"] = rng.randint(1, 4)
    return out


def reading_tools(rng):
    tools = []
    for _ in range(READING):
        names = rng.sample(["p", "q", "r", "s"], rng.randint(2, 4))
        props = {n: reading_value(rng) for n in names}
        if rng.random() < 0.2:
            props[names[0]] = {"anyOf": [props[names[0]], {"type": "null"}], "type": "object"}
        if rng.random() < 0.3:
            props["t"] = tuple_or_format(rng)
        if rng.random() < 0.3:
            props["k"] = keyed_beside_properties(rng)
        params = {"type": "object", "properties": props, "$defs": {
            "S": small_object(rng), "S1": small_object(rng),
            "T": {"type": "object", "properties": {"z": {"$ref": "#/$defs/S"},
                                                   "w": small_object(rng)}}}}
        tools.append(fn("tool", params))
    return tools


# ---------------------------------------------------------------- recording

def vllm_tag(tools, architecture, schema):
    try:
        tag = cc.convert_schema_to_structural_tags(
            schema=schema, tools=copy.deepcopy(tools), model_architecture=architecture)
    except Exception as e:  # noqa: BLE001  (xgrammar's and vLLM's errors alike)
        # xgrammar's messages carry the time of day: dropped, for a fixture
        # that regenerates byte for byte.
        message = re.sub(r"\[\d\d:\d\d:\d\d\] ", "", str(e))
        return {"error": f"{type(e).__name__}: {message}"}
    return {"structural_tag": tag}


def main() -> int:
    results = []
    response_schema = JSON_FORMAT["json_schema"]["schema"]
    groups = [(f"corpus/{t['function']['name']}", [t]) for t in corpus_tools()]
    groups += [(f"set/{name}", tools) for name, tools in st.TOOL_SETS.items()]
    for case, tools in groups:
        for architecture in ARCHITECTURES:
            for with_format in (False, True):
                results.append({
                    "case": case, "realistic": True, "architecture": architecture,
                    "tools": tools, "response_format": JSON_FORMAT if with_format else None,
                    **vllm_tag(tools, architecture,
                               copy.deepcopy(response_schema) if with_format else None)})
    rng = random.Random(SEED)
    for i, tool in enumerate(sweep_tools(rng)):
        architecture = ARCHITECTURES[i % len(ARCHITECTURES)]
        results.append({"case": f"sweep/{i}", "realistic": False,
                        "architecture": architecture, "tools": [tool],
                        "response_format": None, **vllm_tag([tool], architecture, None)})
    rng = random.Random(FEATURES_SEED)
    for i, tool in enumerate(feature_tools(rng)):
        architecture = ARCHITECTURES[i % len(ARCHITECTURES)]
        results.append({"case": f"features/{i}", "realistic": False,
                         "architecture": architecture, "tools": [tool],
                         "response_format": None, **vllm_tag([tool], architecture, None)})
    rng = random.Random(BOUNDS_SEED)
    for i, tool in enumerate(bounds_tools(rng)):
        architecture = ARCHITECTURES[i % len(ARCHITECTURES)]
        results.append({"case": f"bounds/{i}", "realistic": False,
                         "architecture": architecture, "tools": [tool],
                         "response_format": None, **vllm_tag([tool], architecture, None)})
    rng = random.Random(READING_SEED)
    for i, tool in enumerate(reading_tools(rng)):
        architecture = ARCHITECTURES[i % len(ARCHITECTURES)]
        results.append({"case": f"reading/{i}", "realistic": False,
                        "architecture": architecture, "tools": [tool],
                        "response_format": None, **vllm_tag([tool], architecture, None)})
    header = {"generated_by": "scripts/gen_cohere_tool_grammars.py",
              "vllm_version": gf.VLLM_VERSION}
    gf.write_jsonl_gz(OUT, header, results)
    errors = sum(1 for r in results if "error" in r)
    print(f"{len(results)} cases ({errors} errors)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
