#!/usr/bin/env python3
"""Python's answers for `tests/differential_values.rs`: what the reference does
with argument values and MiniCPM5 call blocks.

Reads JSON lines ``{"kind": "literal" | "xml", "text": ...}`` from stdin and
prints one JSON line per input:

* ``literal``: ``ast.literal_eval(text)`` then ``json.dumps(ensure_ascii=False)``,
  as vLLM's tag-argument parsers use them: ``{"json": dumped}``, or
  ``{"outcome": "unwritable" | "malformed" | "unhashable"}`` (``json.dumps``
  raises; ``literal_eval`` raises ``ValueError``/``SyntaxError``; it raises
  ``TypeError``);
* ``xml``: ``xml.etree.ElementTree.fromstring(text)`` (what vLLM's ``minicpm5``
  uses without ``lxml``) as ``{"tag", "attributes": [[k, v]...], "text",
  "children"}``, or ``null`` where it raises.

Run by the ignored test (needs the reference environment)::

    cargo test -p vllm-parser --test differential_values -- --ignored
"""

import ast
import json
import sys
import warnings
import xml.etree.ElementTree as ET

warnings.simplefilter("ignore")


def literal(text: str) -> dict:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {"outcome": "malformed"}
    except TypeError:
        return {"outcome": "unhashable"}
    try:
        return {"json": json.dumps(value, ensure_ascii=False)}
    except (TypeError, ValueError):
        return {"outcome": "unwritable"}


def element(node) -> dict:
    return {
        "tag": node.tag,
        "attributes": [[k, v] for k, v in node.attrib.items()],
        "text": node.text or "",
        "children": [element(child) for child in node],
    }


def xml(text: str):
    try:
        return element(ET.fromstring(text))
    except ET.ParseError:
        return None


for line in sys.stdin:
    job = json.loads(line)
    answer = literal(job["text"]) if job["kind"] == "literal" else xml(job["text"])
    print(json.dumps(answer, ensure_ascii=False), flush=True)
