#!/usr/bin/env python3
"""Time vLLM 0.33.0's native renderers on the cases of tests/fixtures/native.json.gz
that they render (the same cases as benches/native.rs): per request, the steps of
gen_native_fixtures.render (ChatCompletionRequest, build_chat_params, the renderer's
render_messages, tokenization). Prints one JSON object {mode: microseconds per request}.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/bench_native.py $REF
"""
import gzip
import json
import os
import sys
import time

from gen_native_fixtures import FIXTURES, build, render

ROUNDS = int(os.environ.get("NATIVE_BENCH_ROUNDS_PY", "20"))


def main():
    fixtures = json.load(gzip.open(os.path.join(FIXTURES, "native.json.gz"), "rt", encoding="utf-8"))
    out = {}
    for mode, data in fixtures["modes"].items():
        renderer, tok = build(mode)
        bodies = [c["request"] for c in data["cases"].values() if "error" not in c]
        for body in bodies:  # warm-up
            render(renderer, tok, body)
        start = time.perf_counter()
        for _ in range(ROUNDS):
            for body in bodies:
                result = render(renderer, tok, body)
                assert "ids" in result, result
        out[mode] = (time.perf_counter() - start) * 1e6 / (ROUNDS * len(bodies))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
