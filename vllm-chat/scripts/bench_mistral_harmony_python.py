#!/usr/bin/env python3
"""Renders per second of vLLM 0.33.0's own Mistral and Harmony request paths on the
scenarios of benches/mistral_harmony_scenarios.json: from a validated `ChatCompletionRequest` to
prompt ids, the same span `benches/mistral_harmony.rs` measures (the steps replayed as in
gen_mistral_harmony_fixtures.py: vLLM's request steps, `safe_apply_chat_template`
through transformers' `MistralCommonBackend` and mistral-common for Mistral on
testdata's tekken v3; `OnlineRenderer._make_request_with_harmony` for gpt-oss).
Prints one JSON object {"mistral/<scenario>": renders_per_s, "harmony/<scenario>": ...}.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/bench_mistral_harmony_python.py
"""
import copy
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import types

os.environ.setdefault("VLLM_SYSTEM_START_DATE", "2025-06-28")
HERE = os.path.dirname(os.path.abspath(__file__))

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.renderers.mistral import safe_apply_chat_template  # noqa: E402
from vllm.renderers.online_renderer import OnlineRenderer  # noqa: E402
from vllm.tokenizers import mistral as _mt  # noqa: E402
from vllm.tokenizers.mistral import MistralTokenizer  # noqa: E402


# Thread CPU time (what the Rust side reads with BENCH_CPU_TIME), or wall time.
CLOCK = time.thread_time if os.environ.get("BENCH_CPU_TIME") else time.perf_counter


def measure(fn, seconds=1.0):
    for _ in range(20):
        fn()
    n, start = 0, CLOCK()
    while CLOCK() - start < seconds:
        fn()
        n += 1
    return n / (CLOCK() - start)


def main():
    scenarios = json.load(open(os.path.join(HERE, "..", "benches", "mistral_harmony_scenarios.json")))
    tmp = tempfile.mkdtemp()
    with gzip.open(os.path.join(HERE, "..", "..", "testdata", "models", "mistral_tekken", "tekken.json.gz")) as src, open(os.path.join(tmp, "tekken.json"), "wb") as dst:
        shutil.copyfileobj(src, dst)
    tokenizer = MistralTokenizer.from_pretrained(tmp)
    stub = types.SimpleNamespace(renderer=None, reasoning_effort_map={}, supports_browsing=False, supports_code_interpreter=False)
    out = {}
    for name, body in scenarios.items():
        mistral_request = ChatCompletionRequest.model_validate(copy.deepcopy(body))
        harmony_request = ChatCompletionRequest.model_validate(copy.deepcopy(body))

        def mistral():
            request = mistral_request
            _mt.maybe_serialize_tool_calls(request)
            _mt.truncate_tool_call_ids(request)
            _mt.validate_request_params(request)
            tools = None if request.tools is None else [t.model_dump() for t in request.tools]
            params = request.build_chat_params(None, "auto").with_defaults(dict(tools=tools, tokenize=True))
            return safe_apply_chat_template(tokenizer, request.messages, **params.get_apply_chat_template_kwargs())

        def harmony():
            return OnlineRenderer._make_request_with_harmony(stub, harmony_request, harmony_request.tools is not None)

        out[f"mistral/{name}"] = measure(mistral)
        out[f"harmony/{name}"] = measure(harmony)
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
