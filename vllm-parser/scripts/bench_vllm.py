#!/usr/bin/env python3
"""Time vLLM 0.33.0's own parsers on the outputs `benches/parsers.rs` measures.

Reads JSON lines from stdin: {"tool": NAME|null, "reasoning": NAME|null, "model":
DIR, "output": TEXT, "repeat": N, "response_template": {...} (optional)}; for each, drives a fresh composed parser
(`ParserManager.get_parser`) over token-aligned deltas (about 4 characters each) with
`parse_delta`, as the server does, and prints {"seconds_per_run": S} per line: the
best of N runs in this thread's CPU time (`time.thread_time()`).
Run by the bench itself when the reference environment exists:

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/bench_vllm.py
"""

import json
import sys
import time

from gen_fixtures import make_request, token_chunks, tokenizer_for  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402


def main() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        # gpt-oss's Harmony parsers run as vLLM's HarmonyParser, on its tokenizer.
        harmony = job["tool"] == "openai" or job["reasoning"] == "openai_gptoss"
        tokenizer = tokenizer_for(
            job.get("model", "gptoss" if harmony else "qwen3"),
            None,
            job.get("response_template"),  # the hf / beam parsers' template
        )
        parser_cls = ParserManager.get_parser(
            tool_parser_name=job["tool"],
            reasoning_parser_name=job["reasoning"],
            enable_auto_tools=True,
            model_name="bench",
            is_harmony=harmony,
            tokenizer=tokenizer,
        )
        if harmony:
            # Load the Harmony encoding once, outside the timing, as a server does.
            from vllm.entrypoints.openai.parser.harmony_utils import get_encoding

            get_encoding()
        chunks = token_chunks(tokenizer, job["output"])
        tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
        request = make_request(tools if job["tool"] else [], {})
        # Best of `repeat` runs in this thread's CPU time (as the Rust side).
        best = float("inf")
        for _ in range(job["repeat"]):
            start = time.thread_time()
            parser = parser_cls(tokenizer, request.tools, chat_template_kwargs={})
            for i, chunk in enumerate(chunks):
                parser.parse_delta(
                    delta_text=chunk["text"],
                    delta_token_ids=chunk["ids"],
                    request=request,
                    prompt_token_ids=[],
                    finished=i + 1 == len(chunks),
                )
            best = min(best, time.thread_time() - start)
        print(json.dumps({"seconds_per_run": best}), flush=True)


if __name__ == "__main__":
    main()
