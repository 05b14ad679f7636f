"""vLLM's own msgspec encoder/decoder on the payloads of vllm-client's codec benchmark.

Builds, with vLLM 0.33.0's classes, (1) an EngineCoreRequest with a 1,000-token prompt
and (2) an EngineCoreOutputs batch of 256 requests with one new token each (the shapes
`benches/codec.rs` builds in Rust), times MsgpackEncoder.encode and MsgpackDecoder.decode,
and prints JSON {case: {"encode_ns", "decode_ns", "hex"}}. `bench_codec.sh` runs this and
the criterion bench in one go and prints the ratios; `hex` lets it check that both sides
encode the very same bytes.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python vllm-client/scripts/bench_codec.py
"""

import json
import sys
import time

from vllm.sampling_params import SamplingParams
from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs, EngineCoreRequest
from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder


def request():
    sp = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=256, stop=["</s>"])
    sp._eos_token_id = 151645
    sp._all_stop_token_ids.add(151645)
    return EngineCoreRequest(
        request_id="bench-request-0000",
        prompt_token_ids=[(i * 7919) % 151000 for i in range(1000)],
        mm_features=None,
        sampling_params=sp,
        pooling_params=None,
        arrival_time=1764480000.25,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


def outputs():
    return EngineCoreOutputs(
        engine_index=0,
        outputs=[EngineCoreOutput(f"req-{i:04}", [(i * 31) % 151000]) for i in range(256)],
        timestamp=12345.678,
    )


def timeit(fn, min_seconds=1.0):
    n, elapsed = 1, 0.0
    while elapsed < min_seconds:
        n *= 2
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
    return elapsed / n * 1e9


results = {}
for name, obj, typ in [("request_1000_tokens", request(), EngineCoreRequest),
                       ("outputs_256_requests", outputs(), EngineCoreOutputs)]:
    enc = MsgpackEncoder()
    dec = MsgpackDecoder(typ)
    frames = enc.encode(obj)
    payload = bytes(frames[0])
    results[name] = {
        "encode_ns": timeit(lambda: enc.encode(obj)),
        "decode_ns": timeit(lambda: dec.decode(payload)),
        "hex": payload.hex(),
    }
json.dump(results, sys.stdout)
