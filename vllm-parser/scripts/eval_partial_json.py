#!/usr/bin/env python3
"""Python's answers for `tests/differential_partial_json.rs`: vLLM 0.33.0's
`partial_json_loads(text, Allow.ALL)` (the `partial_json_parser` package), which
`apertus` falls back to for truncated tool-call JSON.

Reads JSON lines ``{"text": ...}`` from stdin and prints one JSON line per
input: ``{"json": json.dumps(value, ensure_ascii=False)}``, or ``{"json": null}``
where it raises. Run by the ignored test (needs the reference environment)::

    cargo test -p vllm-parser --test differential_partial_json -- --ignored
"""

import json
import os
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.simplefilter("ignore")

from partial_json_parser.core.options import Allow  # noqa: E402
from vllm.tool_parsers.utils import partial_json_loads  # noqa: E402


def main() -> None:
    for line in sys.stdin:
        text = json.loads(line)["text"]
        try:
            answer = json.dumps(partial_json_loads(text, Allow.ALL)[0], ensure_ascii=False)
            answer.encode()  # lone surrogates (a cut `\ud83d`) have no Rust form
        except Exception:
            answer = None
        print(json.dumps({"json": answer}), flush=True)


if __name__ == "__main__":
    main()
