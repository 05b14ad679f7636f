"""Generate vllm-client's KV-cache event and block-hash golden data from vLLM's own code.

Everything here comes out of vLLM 0.33.0: the event batches are built with the classes of
`vllm/distributed/kv_events.py` and encoded with the encoder `ZmqEventPublisher` uses
(`msgspec.msgpack.Encoder()`); the endpoint offsets are `ZmqEventPublisher.
offset_endpoint_port`; NONE_HASH is `init_none_hash` with PYTHONHASHSEED set, and the
block hashes are what `get_request_block_hasher` computes for real `Request`s with every
`--prefix-caching-hash-algo` (sha256, sha256_cbor, xxhash, xxhash_cbor). Nothing is
typed by hand. The xxhash algorithms need the `xxhash` package (vLLM keeps it optional):

    $REF/venv/bin/python -m pip install xxhash==3.6.0
    HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-client/scripts/gen_kv_golden.py \
        > vllm-client/tests/golden/kv_events.json

with REF=$HOME/.cache/vllm-reference (built by ../shared/peers/setup.sh). Output: JSON
{"vllm_version", "fields", "tags", "vectors", "offsets", "none_hashes", "block_hashes"};
tests/golden.rs reads it.
"""

import json
import os
import sys

import msgspec

import vllm
import vllm.v1.core.kv_cache_utils as kcu
from vllm.distributed.kv_events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    KVEventBatch,
    ZmqEventPublisher,
)
from vllm.lora.request import LoRARequest
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import get_hash_fn_by_name
from vllm.v1.request import Request

ENC = msgspec.msgpack.Encoder()  # what ZmqEventPublisher._publisher_thread uses
VECTORS = []


def add(name, batch):
    payload = ENC.encode(batch)
    # The decoder vLLM's own subscribers use must read it back (nested tuples come back
    # as lists, so compare the re-encoded bytes).
    decoded = msgspec.msgpack.Decoder(KVEventBatch).decode(payload)
    assert ENC.encode(decoded) == payload, name
    # What a Python consumer renders: msgspec.to_builtins (tagged events with their
    # `type`, defaults omitted), bytes as hex. The kv-events example prints the same.
    builtins = hexify(msgspec.to_builtins(decoded, builtin_types=(bytes,)))
    VECTORS.append({"name": name, "kind": "KVEventBatch", "hex": payload.hex(), "builtins": builtins})


def hexify(value):
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: hexify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [hexify(v) for v in value]
    return value


def stored(**kw):
    base = dict(
        block_hashes=[1],
        parent_block_hash=None,
        token_ids=[1, 2, 3, 4],
        block_size=4,
        lora_id=None,
        medium="GPU",
        lora_name=None,
    )
    base.update(kw)
    return BlockStored(**base)


add("batch_empty_rank_none", KVEventBatch(ts=0.0, events=[]))
add("batch_cleared_rank_0", KVEventBatch(ts=1764614400.123456, events=[AllBlocksCleared()], data_parallel_rank=0))
add(
    "batch_stored_int_hashes",
    KVEventBatch(
        ts=1764614400.5,
        events=[
            stored(
                block_hashes=[2**64 - 1, 0, 127, 128, 2**32],
                parent_block_hash=12345678901234567890,
                token_ids=list(range(20)),
                block_size=4,
                group_idx=0,
            )
        ],
        data_parallel_rank=3,
    ),
)
add(
    "batch_stored_bytes_hashes",
    KVEventBatch(
        ts=2.25,
        events=[
            stored(
                block_hashes=[bytes(range(32)), b"\xff" * 16],
                parent_block_hash=b"\x01" * 32,
                token_ids=[151644, 872, 198, 9707, 151645, 0, 1, 65535],
                block_size=4,
                medium=None,
            )
        ],
        data_parallel_rank=1,
    ),
)
add(
    "batch_stored_every_field",
    KVEventBatch(
        ts=3.5,
        events=[
            stored(
                block_hashes=[7, 8],
                parent_block_hash=6,
                token_ids=list(range(100, 116)),
                block_size=8,
                lora_id=2,
                medium="CPU",
                lora_name="sql-adapter",
                extra_keys=[("sql-adapter", ("mm-hash", 3), "salt", b"\x00\x01"), None],
                group_idx=1,
                kv_cache_spec_kind="sliding_window",
                kv_cache_spec_sliding_window=4096,
                locality="LOCAL",
                ownership="tier-2",
                session_id="session-1",
                lookahead_token_ids=[[116], [117]],
            )
        ],
        data_parallel_rank=0,
    ),
)
add(
    "batch_removed_and_cleared",
    KVEventBatch(
        ts=4.75,
        events=[
            BlockRemoved(block_hashes=[1, 2, 3], medium="GPU"),
            BlockRemoved(block_hashes=[b"\xaa" * 32], medium=None, group_idx=2, locality="REMOTE", ownership="x"),
            AllBlocksCleared(),
            stored(),
        ],
        data_parallel_rank=7,
    ),
)
add(
    "batch_many_events",
    KVEventBatch(
        ts=5.0,
        events=[BlockRemoved(block_hashes=[i], medium="GPU", group_idx=0) for i in range(20)],
        data_parallel_rank=0,
    ),
)


def struct_fields(cls):
    return list(cls.__struct_fields__)


def tag_info(cls):
    cfg = cls.__struct_config__
    return {"tag_field": cfg.tag_field, "tag": cfg.tag, "omit_defaults": cfg.omit_defaults, "array_like": cfg.array_like}


FIELDS = {cls.__name__: struct_fields(cls) for cls in [KVEventBatch, BlockStored, BlockRemoved, AllBlocksCleared]}
TAGS = {cls.__name__: tag_info(cls) for cls in [KVEventBatch, BlockStored, BlockRemoved, AllBlocksCleared]}

OFFSETS = []
for endpoint in [
    "tcp://*:5557",
    "tcp://127.0.0.1:5557",
    "tcp://[::1]:6000",
    "tcp://*:0",
    "inproc://cache",
    "ipc:///tmp/kv",
    "",
]:
    for rank in [0, 1, 3]:
        try:
            result = {"ok": ZmqEventPublisher.offset_endpoint_port(endpoint, rank)}
        except ValueError as e:
            result = {"error": str(e)}
        OFFSETS.append({"endpoint": endpoint, "rank": rank, **result})

ALGOS = ["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"]


def with_seed(seed, algo):
    """Set NONE_HASH as an engine started with PYTHONHASHSEED=seed (or without) does."""
    if seed is None:
        os.environ.pop("PYTHONHASHSEED", None)
    else:
        os.environ["PYTHONHASHSEED"] = seed
    fn = get_hash_fn_by_name(algo)
    kcu.init_none_hash(fn)
    return fn


NONE_HASHES = []
for algo in ALGOS:
    for seed in ["0", "1234", "vllm-none-hash", "é-seed"] + ([None] if "xxhash" not in algo else []):
        with_seed(seed, algo)
        NONE_HASHES.append({"algo": algo, "seed": seed, "hex": bytes(kcu.NONE_HASH).hex()})

SAMPLING = SamplingParams(max_tokens=1)
BLOCK_HASHES = []


def case(name, algo, seed, block_size, tokens, cache_salt=None, lora=None, lookahead=0):
    fn = with_seed(seed, algo)
    hasher = kcu.get_request_block_hasher(block_size, fn, num_hash_lookahead_tokens=lookahead)
    req = Request(
        request_id=name,
        prompt_token_ids=list(tokens),
        sampling_params=SAMPLING,
        pooling_params=None,
        lora_request=LoRARequest(lora[0], 1, lora[1]) if lora else None,
        cache_salt=cache_salt,
        block_hasher=hasher,
    )
    hashes = [bytes(h) for h in req.block_hashes]

    def compact(value):
        # Long token ranges and repeated strings are stored as their recipe, to keep the
        # file small; tests/golden.rs expands them.
        if isinstance(value, range) and len(value) > 100:
            return {"range": [value.start, value.stop]}
        if isinstance(value, str) and len(value) > 1000:
            assert value == value[0] * len(value)
            return {"repeat": value[0], "count": len(value)}
        return list(value) if isinstance(value, range) else value

    BLOCK_HASHES.append(
        {
            "name": name,
            "algo": algo,
            "seed": seed,
            "block_size": block_size,
            "tokens": compact(tokens),
            "cache_salt": compact(cache_salt),
            "lora": [compact(x) for x in lora] if lora else None,
            "lookahead": lookahead,
            "hashes": [h.hex() for h in hashes],
            # What BlockStored carries with VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1 (default).
            "external": [kcu.maybe_convert_block_hash(h) for h in hashes],
        }
    )


QWEN_PROMPT = [151644, 872, 198, 9707, 11, 1246, 525, 498, 30, 151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271]
for algo in ALGOS:
    case(f"{algo}_short", algo, "0", 16, range(40))
    case(f"{algo}_exact_blocks", algo, "0", 4, range(12))
    case(f"{algo}_qwen_prompt", algo, "1234", 4, QWEN_PROMPT)
    case(f"{algo}_under_one_block", algo, "0", 16, range(10))
    case(f"{algo}_salt", algo, "0", 4, QWEN_PROMPT, cache_salt="tenant-a")
    case(f"{algo}_lora", algo, "0", 4, QWEN_PROMPT, lora=("sql-adapter", "/adapters/sql"))
    case(f"{algo}_lora_salt", algo, "42", 4, QWEN_PROMPT, cache_salt="s", lora=("a", "/p/a"))
    case(f"{algo}_lookahead_1", algo, "0", 4, QWEN_PROMPT, lookahead=1)
    case(f"{algo}_lookahead_3_salt", algo, "0", 4, QWEN_PROMPT, cache_salt="x", lookahead=3)
    # Every integer width pickle and CBOR have (BININT1/2/4, LONG1; CBOR 1/2/4 bytes; token ids are u32).
    case(f"{algo}_wide_ints", algo, "0", 3, [0, 23, 24, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 1, 2])
    # Long strings: SHORT_BINUNICODE vs BINUNICODE, CBOR length widths.
    case(f"{algo}_long_salt", algo, "0", 2, range(4), cache_salt="s" * 300, lora=("n" * 255, "p" * 256))
for algo in ["sha256", "sha256_cbor"]:
    case(f"{algo}_default_seed", algo, None, 16, range(64))
# Pickle frames: a frame is committed once it holds 64 KiB, at the next object; large
# strings bypass frames. These blocks cross both rules.
case("sha256_big_block_frames", "sha256", "0", 13100, range(100000, 100000 + 13100 * 2))
case("sha256_huge_block", "sha256", "0", 40000, range(100000, 140000))
case("sha256_huge_salt", "sha256", "0", 2, range(4), cache_salt="z" * 70000)
case("xxhash_huge_salt", "xxhash", "0", 2, range(4), cache_salt="z" * 70000)
case("sha256_cbor_big_block", "sha256_cbor", "0", 20000, range(100000, 140000))

json.dump(
    {
        "vllm_version": vllm.__version__,
        "fields": FIELDS,
        "tags": TAGS,
        "vectors": VECTORS,
        "offsets": OFFSETS,
        "none_hashes": NONE_HASHES,
        "block_hashes": BLOCK_HASHES,
    },
    sys.stdout,
    indent=1,
)
sys.stdout.write("\n")
