"""Generate the wire-protocol golden vectors of vllm-client from vLLM's own classes.

Every vector is produced by vLLM 0.33.0's msgspec classes and its `MsgpackEncoder`
(the encoder engines and frontends use), never typed by hand. Run with the reference
environment built by ../shared/peers/setup.sh:

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-client/scripts/gen_golden.py > vllm-client/tests/golden/vectors.json

Output: JSON {"vllm_version", "fields": {struct: [field names in wire order]},
"vectors": [{"name", "kind", "frames": [hex, ...]}]}. `frames[0]` is the msgpack
payload; further frames are the out-of-band buffers that `MsgpackEncoder` splits off
(arrays of 256 bytes or more). Tests decode each vector with our types, re-encode it and
require identical bytes, and compare our declared field orders with `fields`.
"""

import dataclasses
import json
import sys

import msgspec
import numpy as np

import vllm
from vllm.lora.request import LoRARequest
from vllm.outputs import RequestError
from vllm.sampling_params import (
    RepetitionDetectionParams,
    RequestOutputKind,
    SamplingParams,
    StructuredOutputsParams,
)
from vllm.v1.engine import (
    EngineCoreEvent,
    EngineCoreEventType,
    EngineCoreOutput,
    EngineCoreOutputs,
    EngineCoreReadyResponse,
    EngineCoreRequest,
    FinishReason,
    UtilityOutput,
)
from vllm.v1.engine.utils import EngineHandshakeMetadata, EngineZmqAddresses
from vllm.v1.metrics.stats import PrefillStats, SchedulerStats
import torch

from vllm.v1.outputs import LogprobsLists, LogprobsTensors
from vllm.v1.serial_utils import MsgpackEncoder, UtilityResult

ENC = MsgpackEncoder()
VECTORS = []


def add(name, kind, obj, plain=False):
    """Encode `obj` as vLLM puts it on the wire and record the frames."""
    if plain:
        frames = [msgspec.msgpack.encode(obj)]
    else:
        frames = [bytes(f) for f in ENC.encode(obj)]
    VECTORS.append({"name": name, "kind": kind, "frames": [f.hex() for f in frames]})


def struct_fields(cls):
    if hasattr(cls, "__struct_fields__"):
        return list(cls.__struct_fields__)
    return [f.name for f in dataclasses.fields(cls)]


def sampling(**kw):
    eos = kw.pop("eos", None)
    p = SamplingParams.from_optional(**kw) if kw.pop("optional", False) else SamplingParams(**kw)
    if eos is not None:
        # What InputProcessor does with the tokenizer's EOS (update_from_tokenizer).
        p._eos_token_id = eos
        p._all_stop_token_ids.add(eos)
    return p


def request(rid, sp, **kw):
    base = dict(
        request_id=rid,
        prompt_token_ids=[151644, 872, 198, 9707, 151645],
        mm_features=None,
        sampling_params=sp,
        pooling_params=None,
        arrival_time=1764480000.25,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )
    base.update(kw)
    return EngineCoreRequest(**base)


# ---------------------------------------------------------------- requests (frontend -> engine)
add("request_minimal", "EngineCoreRequest", request("req-0", sampling(eos=151645)))
add(
    "request_every_sampling_option",
    "EngineCoreRequest",
    request(
        "req-1",
        sampling(
            n=1,
            presence_penalty=0.5,
            frequency_penalty=-0.25,
            repetition_penalty=1.1,
            temperature=0.7,
            top_p=0.9,
            top_k=40,
            min_p=0.05,
            seed=1234,
            stop=["</s>", "\n\nUser:"],
            stop_token_ids=[151643, 7],
            ignore_eos=True,
            max_tokens=512,
            min_tokens=4,
            logprobs=5,
            prompt_logprobs=2,
            logprob_token_ids=[11, 12],
            flat_logprobs=True,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            include_stop_str_in_output=True,
            output_kind=RequestOutputKind.DELTA,
            stream_interval=4,
            logit_bias={100: -5.5, 200: 3.0},
            allowed_token_ids=[1, 2, 3, 100, 200],
            extra_args={"kv": 1, "nested": {"a": [1, 2.5, "x", None, True]}},
            bad_words=["badword"],
            skip_reading_prefix_cache=True,
            thinking_token_budget=256,
            repetition_detection=RepetitionDetectionParams(
                max_pattern_size=8, min_pattern_size=2, min_count=3
            ),
            routed_experts_prompt_start=3,
            trace_decode_token_ids=[5, 6, 7],
            eos=151645,
        ),
        cache_salt="salt",
        data_parallel_rank=1,
        client_index=2,
        current_wave=3,
        priority=-1,
        trace_headers={"traceparent": "00-abc-def-01"},
        resumable=True,
        external_req_id="ext-1",
        reasoning_ended=False,
        reasoning_parser_kwargs={"enable_thinking": True},
        abort_immediately=True,
        session_id="sess-1",
    ),
)
so = StructuredOutputsParams(
    json={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    disable_any_whitespace=True,
)
add(
    "request_structured_outputs_lora",
    "EngineCoreRequest",
    request(
        "req-2",
        sampling(temperature=0.0, max_tokens=64, structured_outputs=so, eos=2),
        lora_request=LoRARequest("sql-lora", 1, "/loras/sql", base_model_name="base"),
    ),
)
for kind, val in [
    ("regex", dict(regex=r"[a-z]+\d")),
    ("choice", dict(choice=["yes", "no"])),
    ("grammar", dict(grammar='root ::= "a"')),
    ("json_object", dict(json_object=True)),
]:
    add(
        f"request_structured_{kind}",
        "EngineCoreRequest",
        request(f"req-so-{kind}", sampling(structured_outputs=StructuredOutputsParams(**val))),
    )
add(
    "request_stop_string_and_none_max_tokens",
    "EngineCoreRequest",
    request("req-3", sampling(stop="END", max_tokens=None, temperature=1.5)),
)


def kv_transfer_rejected(request_id, kv_transfer_params, data_parallel_rank):
    """The request `AsyncLLM.notify_kv_transfer_request_rejected` sends, captured from
    vLLM's own method (its engine client replaced by a recorder, its clock fixed), with
    the `client_index` that `add_request_async` sets."""
    import asyncio
    import types
    from unittest import mock

    from vllm.v1.engine.async_llm import AsyncLLM

    sent = []

    async def add_request_async(request):
        request.client_index = 0
        sent.append(request)

    owner = types.SimpleNamespace(
        engine_core=types.SimpleNamespace(add_request_async=add_request_async))
    with mock.patch("time.time", return_value=1764480000.25):
        asyncio.run(AsyncLLM.notify_kv_transfer_request_rejected(
            owner, request_id, kv_transfer_params, data_parallel_rank=data_parallel_rank))
    return sent[0]


# A decode instance's request as a NIXL prefill instance answered it, rejected by the
# decode frontend (pinned to rank 1, and not pinned).
NIXL_DECODE_PARAMS = {
    "do_remote_prefill": True, "do_remote_decode": False, "remote_block_ids": [[0, 1]],
    "remote_engine_id": "mock-engine", "remote_request_id": "cmpl-p-0",
    "remote_host": "localhost", "remote_port": 5600, "tp_size": 1,
}
add("request_kv_transfer_rejected", "EngineCoreRequest",
    kv_transfer_rejected("rejected-1", NIXL_DECODE_PARAMS, 1))
add("request_kv_transfer_rejected_unpinned", "EngineCoreRequest",
    kv_transfer_rejected("rejected-2", {"do_remote_prefill": True}, None))
add("abort", "Abort", ["req-0", "req-1", "cmpl-abc-0"])
add("abort_one", "Abort", ["req-0"])
add("utility_call_no_args", "UtilityCall", (0, 1234567890123456789, "is_sleeping", ()))
add(
    "utility_call_args",
    "UtilityCall",
    (1, 42, "add_lora", (LoRARequest("adapter", 7, "/loras/a"),)),
)
add("utility_call_sleep", "UtilityCall", (0, 18446744073709551615 >> 1, "sleep", (1, "abort")))
add("start_dp_wave", "StartDpWave", (3, 1))

# ---------------------------------------------------------------- outputs (engine -> frontend)
def outputs(outs=(), **kw):
    kw.setdefault("timestamp", 12345.678)
    return EngineCoreOutputs(outputs=list(outs), **kw)


add(
    "outputs_tokens",
    "EngineCoreOutputs",
    outputs(
        [
            EngineCoreOutput("req-0", [9707]),
            EngineCoreOutput("req-1", [11, 22, 33, 151643]),
            EngineCoreOutput("req-empty", []),
        ]
    ),
)
for fr in FinishReason:
    add(
        f"outputs_finish_{str(fr)}",
        "EngineCoreOutputs",
        outputs([EngineCoreOutput("req-f", [1], finish_reason=fr)], finished_requests={"req-f"}),
    )
add(
    "outputs_stop_reason_int",
    "EngineCoreOutputs",
    outputs([EngineCoreOutput("req-s", [151645], finish_reason=FinishReason.STOP, stop_reason=151645)]),
)
add(
    "outputs_stop_reason_str",
    "EngineCoreOutputs",
    outputs([EngineCoreOutput("req-s", [5], finish_reason=FinishReason.STOP, stop_reason="</s>")]),
)


def logprobs(rows, k, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 150000, size=(rows, k + 1), dtype=np.int32)
    lps = -rng.random((rows, k + 1), dtype=np.float32) * 10
    ranks = rng.integers(1, 50, size=(rows,), dtype=np.int32)
    return LogprobsLists(ids, lps, ranks, None)


add(
    "outputs_logprobs_inline",
    "EngineCoreOutputs",
    outputs([EngineCoreOutput("req-l", [42, 43], new_logprobs=logprobs(2, 5, 1))]),
)
add(
    "outputs_logprobs_multiframe",
    "EngineCoreOutputs",
    outputs([EngineCoreOutput("req-l", list(range(8)), new_logprobs=logprobs(8, 20, 2))]),
)
def prompt_logprobs(rows, k, seed):
    """Prompt logprobs as the model runner builds them (`LogprobsTensors.empty_cpu`:
    int32 ids and ranks, float32 logprobs, torch tensors)."""
    lists = logprobs(rows, k, seed)
    return LogprobsTensors(
        torch.from_numpy(lists.logprob_token_ids),
        torch.from_numpy(lists.logprobs),
        torch.from_numpy(lists.sampled_token_ranks),
    )


add(
    "outputs_prompt_logprobs_inline",
    "EngineCoreOutputs",
    outputs([EngineCoreOutput("req-p", [7], new_prompt_logprobs_tensors=prompt_logprobs(4, 2, 3))]),
)
add(
    "outputs_prompt_logprobs_multiframe",
    "EngineCoreOutputs",
    outputs(
        [
            EngineCoreOutput(
                "req-p",
                [7],
                new_logprobs=logprobs(1, 2, 5),
                new_prompt_logprobs_tensors=prompt_logprobs(30, 5, 4),
            )
        ]
    ),
)
add(
    "outputs_events",
    "EngineCoreOutputs",
    outputs(
        [
            EngineCoreOutput(
                "req-e",
                [7],
                events=[
                    EngineCoreEvent(EngineCoreEventType.QUEUED, 100.5),
                    EngineCoreEvent(EngineCoreEventType.SCHEDULED, 100.75),
                    EngineCoreEvent(EngineCoreEventType.PREEMPTED, 101.0),
                ],
                prefill_stats=PrefillStats(num_prompt_tokens=5, num_computed_tokens=5, num_cached_tokens=2),
                kv_transfer_params={"remote_host": "h", "remote_port": 5555},
                num_nans_in_logits=1,
                error=RequestError("validation_error", "bad request", False),
            )
        ]
    ),
)
stats = SchedulerStats(num_running_reqs=3, num_waiting_reqs=1, kv_cache_usage=0.25, step_counter=9, current_wave=2)
add("outputs_scheduler_stats", "EngineCoreOutputs", outputs(scheduler_stats=stats, engine_index=1))
add(
    "outputs_utility_result",
    "EngineCoreOutputs",
    outputs(utility_output=UtilityOutput(call_id=42, result=UtilityResult(["generate", "render"]))),
)
add(
    "outputs_utility_result_none",
    "EngineCoreOutputs",
    outputs(utility_output=UtilityOutput(call_id=43, result=UtilityResult(None))),
)
add(
    "outputs_utility_failure",
    "EngineCoreOutputs",
    outputs(utility_output=UtilityOutput(call_id=44, failure_message="Call to add_lora method failed: boom")),
)
add("outputs_wave_complete", "EngineCoreOutputs", outputs(wave_complete=4, engine_index=1))
add("outputs_start_wave", "EngineCoreOutputs", outputs(start_wave=5))
add("outputs_weight_version", "EngineCoreOutputs", outputs(weight_version="v7"))
add("outputs_default", "EngineCoreOutputs", outputs(timestamp=0.5))

# ---------------------------------------------------------------- handshake and startup
add("handshake_hello", "HandshakeStatus", {"status": "HELLO", "local": False, "headless": True}, plain=True)
add("handshake_ready", "HandshakeStatus", {"status": "READY", "local": False, "headless": True}, plain=True)
add(
    "handshake_ready_dp",
    "HandshakeStatus",
    {"status": "READY", "local": False, "headless": True, "parallel_config_hash": "abc123"},
    plain=True,
)
add(
    "handshake_init",
    "EngineHandshakeMetadata",
    EngineHandshakeMetadata(
        addresses=EngineZmqAddresses(
            inputs=["tcp://10.0.0.1:40001"],
            outputs=["tcp://10.0.0.1:40002"],
        ),
        parallel_config={},
    ),
    plain=True,
)
add(
    "handshake_init_dp",
    "EngineHandshakeMetadata",
    EngineHandshakeMetadata(
        addresses=EngineZmqAddresses(
            inputs=["ipc:///tmp/in"],
            outputs=["ipc:///tmp/out"],
            coordinator_input="tcp://h:1",
            coordinator_output="tcp://h:2",
            frontend_stats_publish_address="tcp://h:3",
        ),
        parallel_config={
            "data_parallel_master_ip": "10.0.0.1",
            "data_parallel_master_port": 29500,
            "_data_parallel_master_port_list": [29501, 29502],
            "_coord_store_port": 0,
            "data_parallel_size": 2,
        },
    ),
    plain=True,
)
add(
    "ready_response",
    "EngineCoreReadyResponse",
    EngineCoreReadyResponse(
        max_model_len=4096,
        num_gpu_blocks=1024,
        block_size=16,
        dp_stats_address=None,
        dtype="bfloat16",
        vllm_version=vllm.__version__,
        world_size=1,
        data_parallel_size=2,
        tensor_parallel_size=1,
        pipeline_parallel_size=1,
        decode_context_parallel_size=1,
        data_parallel_rank=1,
        max_num_seqs=256,
        max_num_batched_tokens=8192,
        instance_id="inst-1",
        supports_lora=False,
        max_loras=0,
        kv_cache_size_tokens=16384,
        kv_cache_max_concurrency=4.0,
    ),
    plain=True,
)

FIELDS = {
    cls.__name__: struct_fields(cls)
    for cls in [
        EngineCoreRequest,
        SamplingParams,
        StructuredOutputsParams,
        RepetitionDetectionParams,
        LoRARequest,
        EngineCoreOutputs,
        EngineCoreOutput,
        UtilityOutput,
        EngineCoreEvent,
        SchedulerStats,
        PrefillStats,
        RequestError,
        EngineCoreReadyResponse,
        EngineZmqAddresses,
        EngineHandshakeMetadata,
    ]
}
FIELDS["LogprobsLists"] = list(LogprobsLists._fields)
FIELDS["LogprobsTensors"] = list(LogprobsTensors._fields)

json.dump(
    {"vllm_version": vllm.__version__, "fields": FIELDS, "vectors": VECTORS},
    sys.stdout,
    indent=1,
)
sys.stdout.write("\n")
