#!/usr/bin/env python3
"""Generate ``tests/fixtures/template_patterns.jsonl.gz``: how the Python ``regex``
module, which vLLM 0.33.0's response-template parser compiles every delimiter,
content and name pattern with (``vllm/parser/chat_parsing/response_templates.py``:
``regex.compile(pattern, regex.DOTALL)``), answers the searches that parser and
vLLM's ``beam`` grammar make:

* ``pattern.search(text, pos, partial=True)`` and ``partial=False``: the span, the
  ``partial`` flag and the named groups that took part;
* ``pattern.fullmatch(text, pos)``;
* ``pattern.finditer(text)``: each match's span and named groups.

The patterns are lookaround patterns (``(?=…)``, ``(?!…)``, ``(?<=…)``, ``(?<!…)``,
nested, in repeats and alternations, with captures) and, to guard the whole VM,
the delimiter and content patterns of the response-template corpus plus a few
partial-matching edge cases. Texts are built deterministically (a seeded random
mix of the pattern's own literal pieces and characters) and every prefix of some
of them, so partial matches at the end are well covered. Spans are in
characters, as Python's are. ``tests/template_patterns.rs`` replays the file.

Pinned to the reference environment built by ``../shared/peers/setup.sh``
(vLLM 0.33.0 and its ``regex``). Run from the crate directory::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_template_patterns.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import FIXTURES, VLLM_VERSION, write_jsonl_gz  # noqa: E402

REGEX_VERSION = "2026.11.19"
if regex.__version__ != REGEX_VERSION:
    sys.exit(f"reference env has regex {regex.__version__}, the fixture pins {REGEX_VERSION}")

LOOKAROUND = [
    r"a(?=bc)",
    r"a(?!bc)",
    r"a(?=bc)d",
    r"a(?!bc)d",
    r"a(?!bc)\w*z",
    r"</call>(?!\n)",
    r"\n?</call>(?!\n)",
    r"(?=<\|tool_call\|>)",
    r"\s*(?=<\|tool_call\|>)",
    r"(?<=\n)<think>",
    r"(?<!\n)<think>",
    r"(?<=^|\n)<t>",
    r"(?<=ab|c)d",
    r"(?<=a\w*)d",
    r"(?<!a)b",
    r"(?<![\w<])end",
    r"(?<=é)x",
    r"é(?=ü)",
    r"x(?=(?P<n>\d+))",
    r"x(?=(?P<n>\d\d)|(?P<m>\d))",
    r"x(?=(?P<n>\d)|(?P<m>\d\d))",
    r"(?P<a>a)(?=(?P<b>b))(?P<c>\w)",
    r"(?:a(?=b))+",
    r"(?:a(?=b)|ac)",
    r"(?:a(?!bc)|a)b",
    r"a(?=b(?!c))",
    r"a(?=b*c)",
    r"\d+(?=x)",
    r"\d+(?!x)",
    r"a(?=)",
    r"a(?!)|b",
    r"(?=ab)",
    r"(?!ab)",
    r"(?!x)",
    r"(?<=(?=ab)a)b",
    r"(?<=a(?!b))c",
    r"<t>(?=\n|$)",
    r"<t>(?=\n|\Z)",
    r"(?i)<T>(?=x)",
    r"(?i:<t>(?=x))",
    r"<t>(?i:(?=x))",
    r"(?i:a(?-i:b(?!c)))",
    r"a(?i)b(?=c)",
    r"a(?i)b(?-i)c(?=d)",
    r"(a(?i)b)(?=c)",
    r"(?:(?i)a)(?=b)",
    r"(?s)(?-s:a(?=.))",
    r"(?i:x(?<=X))",
    r"<call name=\"(?P<name>\w+)\">(?=\n)",
    r"</function>\s*</tool_call>(?!\s*<tool_call>)",
    r"(?=[^<]*</t>)",
    r"(?:(?<=a)b|(?<!a)c)+",
    r"<(?P<key>\w+)>(?P<value>(?:(?!</).)*)</\w+>",
    r"(?<=<\|channel\|>)final(?=<\|message\|>)",
]

PLAIN = [
    r"\s*<tool_call>",
    r"\s*(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>)",
    r"\s*<tool_call>\s*<function=(?P<name>[^>\n]+)>",
    r"</function>\s*</tool_call>",
    r"<parameter=(?P<key>[^>\n]+)>\s*(?P<value>.*?)\s*</parameter>",
    r"<\|tool_call>call:(?P<name>\w+)",
    r"<reasoning( effort=\w+)?>",
    r"<call name=\"(?P<name>[\w.]+)\">\n?",
    r"\n?</call>",
    r"<invoke name=(?P<name>\w+)>",
    r"<(?P<key>\w+)>(?P<value>.*?)</\w+>",
    r"<\|assistant\|>\n?",
    r"\d+",
    r"<e><a>|<e>",
    r"a|ab",
    r"ab|a",
    r"b|abc",
    r"a\Z",
    r"^<a>",
    r"x*",
    r"a$",
]

META = set(".^$*+?{}[]\\|()")


def pieces(pattern: str) -> list[str]:
    """The pattern's literal runs and characters, and stand-ins for its escapes."""
    out, run, index = [], "", 0
    stand_in = {"s": " \n", "w": "a_", "d": "1", "n": "\n", "S": "x", "W": "<"}
    while index < len(pattern):
        c = pattern[index]
        if c == "\\" and index + 1 < len(pattern):
            e = pattern[index + 1]
            run += stand_in.get(e, e if not e.isalnum() else "")[:1]
            index += 2
            continue
        if c in META:
            if run:
                out.append(run)
            run = ""
        else:
            run += c
        index += 1
    if run:
        out.append(run)
    return out


def texts(pattern: str, rng: random.Random) -> list[str]:
    parts = pieces(pattern)
    alphabet = sorted({c for p in parts for c in p} | set("x\n <é"))
    out: list[str] = ["", "x"]
    whole = [
        "".join(rng.choice(parts) for _ in range(rng.randint(1, 3))) if parts else "x"
        for _ in range(6)
    ]
    for text in whole:
        out.extend(text[:cut] for cut in range(len(text) + 1))
    for _ in range(50):
        text = ""
        for _ in range(rng.randint(0, 4)):
            if parts and rng.random() < 0.5:
                piece = rng.choice(parts)
                text += piece[: rng.randint(1, len(piece))] if rng.random() < 0.3 else piece
            else:
                text += rng.choice(alphabet)
        out.append(text)
    return list(dict.fromkeys(out))


def found(m) -> list | None:
    if m is None:
        return None
    groups = {k: v for k, v in m.groupdict().items() if v is not None}
    return [m.start(), m.end(), bool(m.partial), groups]


def main() -> None:
    rng = random.Random(20260330)
    records = []
    for pattern in LOOKAROUND + PLAIN:
        compiled = regex.compile(pattern, regex.DOTALL)
        for text in texts(pattern, rng):
            positions = sorted({0, min(1, len(text)), len(text) // 2, len(text)})
            records.append({
                "pattern": pattern,
                "text": text,
                "searches": [
                    {
                        "pos": pos,
                        "partial": found(compiled.search(text, pos, partial=True)),
                        "complete": found(compiled.search(text, pos)),
                        "fullmatch": compiled.fullmatch(text, pos) is not None,
                    }
                    for pos in positions
                ],
                "finditer": [found(m) for m in compiled.finditer(text)],
            })
    header = {
        "generator": "scripts/gen_template_patterns.py",
        "vllm": VLLM_VERSION,
        "regex": REGEX_VERSION,
        "patterns": len(LOOKAROUND + PLAIN),
    }
    path = FIXTURES / "template_patterns.jsonl.gz"
    write_jsonl_gz(path, header, records)
    print(f"{path}: {len(records)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
