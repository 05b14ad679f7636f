"""Time vLLM 0.33.0's Python detokenizer on the benchmark streams of the fixtures.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-detok/scripts/bench_python.py [--json out.json]

For each model (Qwen3, Llama 3, and mistral-common's SentencePiece v7, which vLLM streams
through its slow path) it decodes the same 4,000-token stream as `benches/decode.rs`, one token per
engine output, the way `output_processor.py` does (`update` then `get_next_output_text`):
plain, with the same 8 stop strings, and with top-5 logprob token text (`LogprobsProcessor`).
Prints µs per token (best of 5 runs); with `--cpu-time`, thread CPU time
(`time.thread_time()`) instead of wall time.
"""

import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the crate (gen_fixtures is imported)
import gen_fixtures  # noqa: E402

from vllm.sampling_params import SamplingParams
from vllm.tokenizers import get_tokenizer
from vllm.v1.engine import EngineCoreRequest
from vllm.v1.engine.detokenizer import IncrementalDetokenizer
from vllm.v1.engine.logprobs import LogprobsProcessor
from vllm.v1.outputs import LogprobsLists

STOPS = ["<|user|>", "\n\nHuman:", "STOP!", "Observation:", "</answer>", "@@@", "zzz", "END OF INPUT"]
HERE = os.path.dirname(os.path.abspath(__file__))


def request(prompt, sp):
    return EngineCoreRequest(
        request_id="r", prompt_token_ids=prompt, mm_features=None, sampling_params=sp,
        pooling_params=None, arrival_time=0.0, lora_request=None, cache_salt=None,
        data_parallel_rank=None,
    )


def alternatives(sampled, vocab):
    return [sampled] + [(sampled * 31 + 7919 * k) % vocab for k in range(1, 6)]


def run(tok, stream, stops, logprobs, clock=time.perf_counter):
    sp = SamplingParams(stop=stops, max_tokens=100_000, logprobs=5 if logprobs else None)
    req = request(stream["prompt"], sp)
    vocab = len(tok)
    if logprobs:
        # The alternatives are prepared outside the timed loop, as the engine sends them.
        rows = [
            LogprobsLists(
                np.array([alternatives(t, vocab)], dtype=np.int64),
                np.zeros((1, 6), dtype=np.float32),
                np.array([1], dtype=np.int64),
                None,
            )
            for t in stream["ids"]
        ]
    start = clock()
    detok = IncrementalDetokenizer.from_new_request(tok, req)
    proc = LogprobsProcessor.from_new_request(tok, req) if logprobs else None
    for i, tid in enumerate(stream["ids"]):
        detok.update([tid], False)
        detok.get_next_output_text(False, True)
        if proc is not None:
            proc._update_sample_logprobs(rows[i])
    return (clock() - start) / len(stream["ids"]) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", default=os.path.expanduser("~/.cache/vllm-reference/models"))
    ap.add_argument("--json")
    ap.add_argument("--cpu-time", action="store_true")
    args = ap.parse_args()
    clock = time.thread_time if args.cpu_time else time.perf_counter
    results = {}
    for name in ["qwen3", "llama3", "mistral_spm_v7"]:
        with gzip.open(os.path.join(HERE, "..", "tests", "fixtures", f"{name}.json.gz")) as f:
            stream = json.load(f)["bench"]
        if name in gen_fixtures.SPM_MODELS:
            tok = gen_fixtures.spm_model(name).tok
        else:
            tok = get_tokenizer(os.path.join(args.models_dir, name))
        for label, stops, lp in [("plain", [], False), ("8_stops", STOPS, False), ("top5_logprobs", [], True)]:
            best = min(run(tok, stream, stops, lp, clock) for _ in range(5))
            results[f"{name}/{label}"] = best
            print(f"{name:8} {label:14} {best:8.2f} us/token")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
