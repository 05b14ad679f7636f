#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/schema_compiles.json.gz``: whether
xgrammar 0.2.8's ``Grammar.from_json_schema`` (as vLLM 0.33.0's beam parser
calls it in ``_json_compiles``) accepts a JSON schema, for ``tests/schema_compiles.rs``.

Cases: hand-picked schemas at xgrammar's checks (``HAND``) and ``SWEEP``
generated ones (seeded, deterministic) that combine every keyword xgrammar's
schema parser reads with valid, invalid and edge values: types and type lists,
integer and number bounds (whole, fractional, at the ``int64`` edge),
``multipleOf``, string lengths, formats and patterns, array items, prefix
items and counts, object properties, ``required``, ``patternProperties``,
``propertyNames``, ``additionalProperties`` / ``unevaluatedProperties`` and
counts, ``const`` / ``enum``, unions, ``allOf`` and ``$ref`` into ``$defs``
(present, missing, malformed). Then the patterns of
``gen_xgrammar_regexes.py``'s corpus (imported) and ``JSON_PATTERNS`` inside
schemas (``pattern_schemas``): a string's ``pattern``, a
``patternProperties`` key and a ``propertyNames`` pattern, and for a share of
them a pattern beside ``minLength`` / ``maxLength`` or a ``format``, as
xgrammar's JSON-schema converter reads a pattern otherwise than
``Grammar.from_regex``. Each records ``compiles`` and, when not, xgrammar's
error message.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_schema_compiles.py
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0)
import gen_xgrammar_regexes as gx  # noqa: E402  (the regex corpus)

from xgrammar import Grammar  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "schema_compiles.json.gz"
SWEEP = 3000

HAND = [
    {"type": "object", "properties": {"x": {"type": "number", "minimum": 0.5}},
     "patternProperties": {"^y": {"type": "string"}}},
    {"type": "foo"}, {"type": 5}, {"type": [5]}, {"type": []}, {"type": ["string", "foo"]},
    True, False, {}, 5, "x", [],
    {"$ref": "#"}, {"$ref": "#/"}, {"$ref": "#a"}, {"$ref": "http://x/y"}, {"$ref": 5},
    {"$ref": "#/$defs/missing"}, {"$ref": "#/a/0", "a": [{}]},
    {"$ref": "#//$defs//x", "$defs": {"x": {}}},
    {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
    {"allOf": [{"$ref": "#/$defs/missing"}, {"type": "string"}]},
    {"allOf": [{"$ref": "#/$defs/missing"}]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}},
     "additionalProperties": False, "maxProperties": 0},
    {"type": "integer", "minimum": 9223372036854775807},
    {"type": "integer", "minimum": -9223372036854775808},
    {"type": "integer", "minimum": 9.3e18}, {"type": "integer", "maximum": -9.3e18},
    {"type": "integer", "minimum": 9223372036854775808},
    {"type": "integer", "exclusiveMinimum": 9223372036854775807},
    {"type": "integer", "exclusiveMaximum": -9223372036854775808},
    {"type": "object", "minProperties": 4294967297},
    {"type": "string", "minLength": -1}, {"type": "string", "maxLength": -1, "minLength": 3},
    {"type": "string", "format": "email", "pattern": "[a-"},
    {"type": "string", "format": "nonsense", "pattern": "[a-"},
    # Which parts of an object xgrammar writes (and so resolves and compiles).
    {"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": {"$ref": "#/$defs/missing"}},
    {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": {"$ref": "#/$defs/missing"}},
    {"type": "object", "patternProperties": {}, "propertyNames": {"$ref": "#/$defs/missing"}},
    {"type": "object", "patternProperties": {"^a": {}}, "propertyNames": {"$ref": "#/$defs/missing"}},
    {"type": "object", "propertyNames": {"type": "string"}, "additionalProperties": {"$ref": "#/$defs/missing"}},
    {"type": "object", "properties": {"a": {}}, "patternProperties": {"^b": {}},
     "additionalProperties": {"$ref": "#/$defs/missing"}},
    {"type": "object", "properties": {"a": {}}, "propertyNames": {"$ref": "#/$defs/missing"}},
    {"type": "object", "patternProperties": {"^a": {"$ref": "#/$defs/missing"}}, "maxProperties": 0},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}, "maxProperties": 0},
    {"type": "object", "patternProperties": {"[a-": {}}, "maxProperties": 0},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "[a-"}}, "maxProperties": 0},
    {"allOf": [{"type": "string", "pattern": "[a-"}, {}]},
]

TYPES = ["integer", "number", "string", "boolean", "null", "array", "object", "foo"]
NUMBERS = [0, 1, -1, 2, 3, 5, 7, 10, 100, 0.5, 1.0, 2.5, -0.5, 1e3, 1e20, -1e20,
           9223372036854775807, -9223372036854775808, 4.5e18, 2000, 1024, 1025, "3", None]
COUNTS = [0, 1, 2, 3, -1, -2, 5, 1.0, "2", 2147483647, 2147483648, 3000000000, None]
PATTERNS = ["^a", "^[a-z]+$", "[0-9]{2,3}", "a|b", "", "[a-", "(?=x)", "(a)\\1", "a{2,1}",
            "\\p{L}", "[[:alpha:]]", "é", "^\\d+$", ".*", "\\w+@\\w+"]
FORMATS = ["email", "date", "uuid", "nonsense", 5]


def pick(rng, values):
    return rng.choice(values)


def maybe(rng, schema, key, values, p=0.35):
    if rng.random() < p:
        value = pick(rng, values)
        if value is not None:
            schema[key] = value


def schema(rng, depth=0):
    """A random schema; deeper ones are smaller."""
    roll = rng.random()
    if depth > 2 or roll < 0.1:
        return pick(rng, [True, False, {}, {"type": "string"}, {"type": "integer"},
                          {"$ref": "#/$defs/A"}, {"$ref": "#/$defs/missing"}, 3])
    s: dict = {}
    if roll < 0.18:
        s["$ref"] = pick(rng, ["#/$defs/A", "#/$defs/B", "#/$defs/missing", "#", "#x", 5])
    elif roll < 0.24:
        s["enum"] = pick(rng, [[], [1, "a"], ["x"], "x", [None]])
    elif roll < 0.28:
        s["const"] = pick(rng, [1, "a", None, {"a": [1]}])
    elif roll < 0.40:
        key = pick(rng, ["anyOf", "oneOf", "allOf"])
        s[key] = (pick(rng, [5, {}]) if rng.random() < 0.1 else
                  [schema(rng, depth + 1) for _ in range(rng.randint(0, 3))])
    if rng.random() < 0.8:
        t = pick(rng, TYPES) if rng.random() < 0.85 else pick(
            rng, [[], ["string", "integer"], ["null", "foo"], [5], 5])
        s["type"] = t
    declared = s.get("type", [])
    declared = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    kinds = [t for t in declared if isinstance(t, str)] or [pick(rng, TYPES)]
    for kind in kinds:
        if kind == "integer" or kind == "number":
            for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"]:
                maybe(rng, s, key, NUMBERS, 0.3)
        elif kind == "string":
            maybe(rng, s, "minLength", COUNTS)
            maybe(rng, s, "maxLength", COUNTS)
            maybe(rng, s, "pattern", PATTERNS + [5])
            maybe(rng, s, "format", FORMATS, 0.2)
        elif kind == "array":
            if rng.random() < 0.5:
                s["items"] = pick(rng, [True, False, 5]) if rng.random() < 0.3 else schema(rng, depth + 1)
            if rng.random() < 0.3:
                s["prefixItems"] = pick(rng, [5, [True], [False]]) if rng.random() < 0.2 else [
                    schema(rng, depth + 1) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.15:
                s["unevaluatedItems"] = pick(rng, [True, False, {"type": "integer"}, 5])
            maybe(rng, s, "minItems", COUNTS)
            maybe(rng, s, "maxItems", COUNTS)
            maybe(rng, s, "minContains", COUNTS, 0.1)
        elif kind == "object":
            if rng.random() < 0.6:
                s["properties"] = pick(rng, [[], 5]) if rng.random() < 0.05 else {
                    name: schema(rng, depth + 1) for name in rng.sample("abcd", rng.randint(0, 3))}
            if rng.random() < 0.4:
                s["required"] = pick(rng, [["a"], ["a", "b"], ["a", "a"], [1], "a", []])
            if rng.random() < 0.2:
                s["patternProperties"] = pick(rng, [5]) if rng.random() < 0.1 else {
                    pick(rng, PATTERNS): schema(rng, depth + 1)}
            if rng.random() < 0.15:
                s["propertyNames"] = pick(rng, [
                    True, 5, {}, {"type": "integer"}, {"type": ["integer"]}, {"pattern": "^a"},
                    {"pattern": "[a-"}, {"maxLength": 3, "minLength": 5}, {"enum": ["a", 1]},
                    {"$ref": "#/$defs/missing"}])
            if rng.random() < 0.35:
                s["additionalProperties"] = pick(rng, [True, False, 5]) if rng.random() < 0.5 \
                    else schema(rng, depth + 1)
            if rng.random() < 0.15:
                s["unevaluatedProperties"] = pick(rng, [True, False, {"type": "string"}])
            maybe(rng, s, "minProperties", COUNTS)
            maybe(rng, s, "maxProperties", COUNTS)
    return s


def document(rng):
    root = schema(rng)
    if isinstance(root, dict) and rng.random() < 0.6:
        root["$defs"] = {"A": schema(rng, 2), "B": pick(rng, [{"type": "string"}, 5, False])}
    return root


# Patterns at the JSON-schema converter's own regex engine: the characters it
# removes (a JSON string's escapes), its unrolling limit, its `(?` forms.
JSON_PATTERNS = [
    "\\x7f(?=a)", "\\x1f(?=a)", "\\x20(?=a)", "\\x22(?=a)", "\\x5c(?=a)", "\\u0080(?=a)",
    "[\\x00-\\x1f\"\\\\](?=a)", "[\\x00-\\x1f\"\\\\\\x7f](?=a)", "[^ -~](?=a)", "\\s(?=a)",
    "(?=x)a{50001}", "(?=x)a{50001,}", "(?=x)a{129}", "(?=x)(ab){300}", "(?=x)[a-c]{3000}",
    "(?=x).{900}", "(?=x)a{ 2 , 3 }", "(?=x)a{2 }", "(?=x)a{1234567890}", "a(?i)b", "(?i)a",
    "(?i)(?=x)[A-Z]", "(?i:a)", "(?=x(?=y))a", "(?=[)])a", "(?=\\))a", "(?=a", "(?!\"$)b",
    "(?<n_1>a)(?=x)", "(?P<n>a)(?=x)", "(?<>a)", "(?P>a)", "\"", "\"*(?=x)", "\"?", "a\"",
    "(?=x)\\b", "(?=x)[\\b]", "(?=x)\\u{10FFFF}", "(?=x)\\u{110000}", "(?=x)\\u{}",
    "(?=x)\\ud800", "(?=x)\\cZ", "(?=x)\\c1", "(?=x)[\\d-z]", "(?=x)[a-\\d]", "(?=x)[\\x4]",
    "(?=x)[]a]", "(?=x)[^]a]", "(?=x)a{,}", "(?=x)a{3}{2}", "(?=x)(|)", "(?=x)a||b", "$^(?=x)",
]


# Pieces of the engine's syntax for seeded random patterns.
JSON_PIECES = [
    "(", ")", "[", "]", "[^", "\\", "{", "}", "{2}", "{ 1 , 2 }", "{2,}", ",", "?", "*", "+",
    "|", "^", "$", ".", "-", "a", "Z", "0", "_", " ", '"', "'", "<", ">", "=", "!", ":", "P",
    "(?", "(?:", "(?=", "(?!", "(?<", "(?<n>", "(?P<n>", "(?i)", "\\d", "\\W", "\\s",
    "\\b", "\\x4", "\\x41", "\\x0a", "\\u0022", "\\u{5c}", "\\u{", "\\c", "\\ca",
    "\\n", "\\q", "\\-", "\\]", "\\\\", "\\1", "x",
]


def random_json_patterns(count: int) -> list:
    """Seeded random strings of ``JSON_PIECES``."""
    rng = random.Random(20261203)
    return ["".join(rng.choice(JSON_PIECES) for _ in range(rng.randint(1, 10)))
            for _ in range(count)]


def pattern_schemas() -> list:
    """Schemas holding each corpus pattern where xgrammar compiles it."""
    schemas = []
    patterns = [p for p in gx.corpus() + JSON_PATTERNS + random_json_patterns(2500)
                if "\0" not in p]
    for index, p in enumerate(dict.fromkeys(patterns)):
        schemas.append({"type": "string", "pattern": p})
        schemas.append({"type": "object", "patternProperties": {p: {"type": "integer"}}})
        schemas.append({"type": "object", "propertyNames": {"pattern": p}})
        if index % 7 == 0:
            schemas.append({"type": "string", "pattern": p, "minLength": 2, "maxLength": 5})
            schemas.append({"type": "string", "format": "date", "pattern": p})
            schemas.append({"type": "string", "format": "nonsense", "pattern": p})
    return schemas


def verdict(s) -> dict:
    # xgrammar logs warnings on stderr; keep the run quiet.
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            Grammar.from_json_schema(json.dumps(s))
            return {"compiles": True}
        except Exception as e:  # noqa: BLE001
            # Without the time xgrammar's log prefix puts first ("[23:28:56] "), so
            # that a re-run writes the same bytes.
            message = re.sub(r"^\[\d\d:\d\d:\d\d\] ", "", str(e).split("\n")[0])
            return {"compiles": False, "error": message[-160:]}
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main() -> int:
    rng = random.Random(20261202)
    schemas = HAND + [document(rng) for _ in range(SWEEP)] + pattern_schemas()
    records = [{"schema": s, **verdict(s)} for s in schemas]
    header = {"generated_by": "scripts/gen_schema_compiles.py", "vllm_version": "0.33.0",
              "xgrammar_version": importlib.metadata.version("xgrammar")}
    gf.write_jsonl_gz(OUT, header, records)
    refused = sum(not r["compiles"] for r in records)
    print(f"{OUT.relative_to(gf.CRATE)}: {len(records)} schemas, {refused} refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
