"""Run vLLM 0.33.0's real EngineCore processes, with a scripted model executor, for interop tests.

The engines are what `vllm serve MODEL --headless --data-parallel-address H
--data-parallel-rpc-port P --data-parallel-size N [--data-parallel-start-rank R]` starts:
vLLM's own `EngineCoreProc.run_engine_core` (real handshake, real ZMQ input/output
threads, real scheduler, KV cache manager, request lifecycle, aborts, utility calls,
ENGINE_CORE_DEAD on a fatal error). Only the model executor is replaced, so that they run
on a CPU-only machine without weights: `ScriptedExecutor` reports a small KV cache and
"samples" deterministic tokens. The scheduler decides everything else (max_tokens, stop
token ids, EOS, min_tokens, aborts, chunked prefill).

Sampled tokens: output token k of a request whose first prompt token is p, on the engine
with data-parallel rank r, is `100 + 2000 * r + (p + k) % 1000`, so a test can predict
every token, place stop tokens / EOS, and see which engine served a request (with
`--output-token-ids`, every request samples those tokens first). Like vLLM's
min_tokens logits processor, the sampler never emits one of the request's stop tokens
(`_all_stop_token_ids`) before `min_tokens` outputs: it emits `1100 + 2000 * r` instead.
A request whose first prompt token is `CRASH_TOKEN` (4242) makes the executor raise in
`execute_model`, which kills the engine the way a model failure does in vLLM.

Prompt logprobs (`prompt_logprobs = k`): with its first sampled token, a request's
`prompt_logprobs_dict` entry is a `LogprobsTensors` as the GPU model runner builds it
(int32 ids and ranks, float32 logprobs, `prompt_len - 1` rows of `k + 1`): row i scores
prompt token `t = prompt[i + 1]` with logprob `-(i + 1) / 8` and rank `1 + i % 3`, then
the top-k `(t + j) % 1000` with logprob `-(i + 1) / 8 - j`, j = 1..k.

Usage (reference environment built by ../shared/peers/setup.sh):

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-client/scripts/interop_engine_core.py \
        --handshake-address tcp://127.0.0.1:PORT --dp-size 2 [--start-rank 0] \
        [--local-count N] [--model $HOME/.cache/vllm-reference/models/qwen3] \
        [--step-delay-ms 20] [--log-file engine.log] \
        [--enable-prefix-caching] [--block-size 16] [--num-gpu-blocks-override N] \
        [--prefix-caching-hash-algo sha256] [--kv-events-config JSON]

Block hashes are reproducible outside the engine when it runs with PYTHONHASHSEED set
(vLLM derives NONE_HASH from it).

With `--local-count 1` the engine runs in this process (its pid is the engine's pid, so
killing it kills the engine); with more, this process is a launcher like
`run_headless`: vLLM's `CoreEngineProcManager` forks one process per rank and watches
them.
"""

import argparse
import os
import sys
import time
from concurrent.futures import Future

CRASH_TOKEN = 4242


def parse_args():
    ref = os.environ.get("VLLM_REFERENCE", os.path.expanduser("~/.cache/vllm-reference"))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--handshake-address", required=True, help="tcp://HOST:PORT the engines dial")
    p.add_argument("--dp-size", type=int, default=1, help="--data-parallel-size")
    p.add_argument("--start-rank", type=int, default=0, help="--data-parallel-start-rank")
    p.add_argument(
        "--local-count",
        type=int,
        default=None,
        help="engines started here (--data-parallel-size-local); default dp-size - start-rank",
    )
    p.add_argument("--model", default=os.path.join(ref, "models", "qwen3"), help="model dir (config.json, no weights)")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--step-delay-ms", type=float, default=20.0, help="scripted time per model step")
    p.add_argument("--log-file", default=None, help="where stderr goes (default: inherited)")
    p.add_argument(
        "--max-loras",
        type=int,
        default=0,
        help="--enable-lora --max-loras N: LoRA adapter slots (adapters are validated, not loaded)",
    )
    # vLLM's own cache flags (`vllm serve --help`), for the KV-cache event tests.
    p.add_argument(
        "--enable-prefix-caching",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="vLLM's --enable-prefix-caching (default: vLLM's default, on)",
    )
    p.add_argument("--block-size", type=int, default=16, help="vLLM's --block-size")
    p.add_argument("--num-gpu-blocks-override", type=int, default=None, help="vLLM's --num-gpu-blocks-override")
    p.add_argument("--prefix-caching-hash-algo", default=None, help="vLLM's --prefix-caching-hash-algo")
    p.add_argument(
        "--output-token-ids",
        default=None,
        help="comma-separated token ids every request samples, in order, instead of the "
        "formula (then the formula again); e.g. a reasoning section, special tokens and "
        "the EOS, to test what a frontend makes of them",
    )
    p.add_argument(
        "--kv-events-config",
        default=None,
        help='vLLM\'s --kv-events-config JSON, e.g. {"enable_kv_cache_events": true, '
        '"publisher": "zmq", "endpoint": "tcp://*:5557", "replay_endpoint": "tcp://*:5558"}',
    )
    return p.parse_args()


def build_executor_class(step_delay_s, script=()):
    """The scripted executor (imports vLLM lazily so that --help is fast)."""
    import torch

    from vllm.exceptions import LoRAAdapterNotFoundError
    from vllm.lora.peft_helper import PEFTHelper
    from vllm.lora.utils import get_adapter_absolute_path
    from vllm.utils.cache import LRUCache

    from vllm.v1.executor.abstract import Executor
    from vllm.v1.kv_cache_interface import FullAttentionSpec
    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput

    class ScriptedExecutor(Executor):
        """An executor without a model: a small KV cache and deterministic tokens."""

        uses_ray = False
        supports_pp = False

        def _init_executor(self):
            hf = self.model_config.hf_config
            self._spec = FullAttentionSpec(
                block_size=self.cache_config.block_size,
                num_kv_heads=getattr(hf, "num_key_value_heads", 8),
                head_size=getattr(hf, "head_dim", 128),
                dtype=torch.float32,
            )
            # req_id -> (first prompt token, prompt length, min_tokens, stop token ids);
            # dropped when the scheduler finishes the request.
            self._requests = {}
            # req_id -> (prompt, k) of requests that asked for prompt logprobs.
            self._prompt_logprobs = {}
            self._pending = None
            # The worker methods called through collective_rpc, for tests to read back.
            self._worker_calls = []
            # LoRA slots like LRUCacheWorkerLoRAManager's (None: LoRA disabled).
            lora = self.vllm_config.lora_config
            self._lora_config = lora
            self._loras = LRUCache(lora.max_cpu_loras or lora.max_loras) if lora else None
            # The data-parallel rank (run_engine_core sets it before building the engine).
            self._token_base = 100 + 2000 * (self.parallel_config.data_parallel_index or 0)

        # --- start-up: what the KV cache manager asks of the workers -------------------
        def determine_available_memory(self):
            # Room for 1024 blocks of the single layer below.
            return [1024 * self._spec.page_size_bytes]

        def get_kv_cache_specs(self):
            return [{"model.layers.0.self_attn.attn": self._spec}]

        def get_supported_kv_cache_layouts(self):
            return [["NHD"]]

        def set_kv_cache_layout(self, layout_name, cp_kv_cache_interleave_size):
            self._layout = layout_name

        def initialize_from_config(self, kv_cache_configs):
            self._kv_cache_configs = kv_cache_configs

        def compile_or_warm_up_model(self):
            pass

        @property
        def supported_tasks(self):
            return ("generate",)

        def supports_draft_weight_updates(self):
            return False

        # Worker methods a CPU-only worker can stand in for: the engine core's own calls
        # (device synchronisation on a pause, the sleep-mode allocator's sleep / wake_up /
        # discard) and the weight-transfer sequence of RL training. They are recorded, and
        # `scripted_worker_calls` returns the record, so that a test sees exactly what
        # vLLM's EngineCore passed to the workers.
        WORKER_METHODS = {
            "synchronize_device",
            "sleep",
            "wake_up",
            "discard",
            "init_weight_transfer_engine",
            "shutdown_weight_transfer_engine",
            "start_weight_update",
            "start_draft_weight_update",
            "update_weights",
            "finish_weight_update",
        }

        def collective_rpc(self, method, timeout=None, args=(), kwargs=None, non_block=False):
            """The worker RPCs (one scripted worker)."""
            if method == "scripted_worker_calls":
                result = [list(self._worker_calls)]
            elif method in self.WORKER_METHODS:
                if method != "synchronize_device":
                    self._worker_calls.append([method, list(args), dict(kwargs or {})])
                result = [None]
            else:
                raise NotImplementedError(f"scripted executor has no worker method {method!r}")
            if non_block:
                future = Future()
                future.set_result(result)
                return future
            return result

        def check_health(self):
            pass

        def shutdown(self):
            pass

        # --- LoRA: LRUCacheWorkerLoRAManager's bookkeeping, with vLLM's own LRU cache
        # and adapter-config validation (the weights are not loaded) ---------------------
        def _lora_slots(self):
            if self._loras is None:
                raise RuntimeError("LoRA is not enabled. Use --enable-lora to enable LoRA.")
            return self._loras

        def add_lora(self, lora_request):
            slots = self._lora_slots()
            lora_id = lora_request.lora_int_id
            if lora_id not in slots or lora_request.load_inplace:
                try:
                    path = get_adapter_absolute_path(lora_request.lora_path)
                    peft_helper = PEFTHelper.from_local_dir(path, None)
                except FileNotFoundError as e:
                    raise LoRAAdapterNotFoundError(
                        lora_request.lora_name, lora_request.lora_path
                    ) from e
                peft_helper.validate_legal(self._lora_config)
                slots.pop(lora_id, None)
                if len(slots) + 1 > slots.capacity:
                    slots.remove_oldest()
                slots[lora_id] = lora_request.lora_name
            else:
                slots.touch(lora_id)
            return True

        def remove_lora(self, lora_id):
            return self._lora_slots().pop(lora_id, None) is not None

        def pin_lora(self, lora_id):
            try:
                self._lora_slots().pin(lora_id)
            except ValueError as err:
                raise ValueError(f"Pinning failed. LoRA {lora_id} is not registered.") from err
            return True

        def list_loras(self):
            return set(self._lora_slots().keys())

        def reset_mm_cache(self):
            pass

        def reset_encoder_cache(self):
            pass

        # --- the model -----------------------------------------------------------------
        def execute_model(self, scheduler_output, non_block=False):
            for req_id in scheduler_output.finished_req_ids:
                self._requests.pop(req_id, None)
                self._prompt_logprobs.pop(req_id, None)
            result = None
            if scheduler_output.total_num_scheduled_tokens == 0:
                result = EMPTY_MODEL_RUNNER_OUTPUT
            else:
                for new in scheduler_output.scheduled_new_reqs:
                    prompt = new.prompt_token_ids or [0]
                    if prompt[0] == CRASH_TOKEN:
                        raise RuntimeError("scripted executor: crash requested by the prompt")
                    if new.lora_request is not None:
                        # The GPU worker loads a scheduled request's adapter.
                        self.add_lora(new.lora_request)
                    sp = new.sampling_params
                    min_tokens = sp.min_tokens if sp is not None else 0
                    stops = set(sp.all_stop_token_ids) if sp is not None else set()
                    self._requests[new.req_id] = (prompt[0], len(prompt), min_tokens, stops)
                    if sp is not None and sp.prompt_logprobs is not None:
                        self._prompt_logprobs[new.req_id] = (list(prompt), sp.prompt_logprobs)
                self._pending = scheduler_output
                if step_delay_s > 0:
                    time.sleep(step_delay_s)
            if non_block:
                future = Future()
                future.set_result(result)
                return future
            return result

        def sample_tokens(self, grammar_output, non_block=False):
            out = self._sample(self._pending)
            self._pending = None
            if non_block:
                future = Future()
                future.set_result(out)
                return future
            return out

        def _sample(self, so):
            """One token per scheduled request whose whole sequence is computed after this
            step, like the GPU model runner (partial prefills sample nothing)."""
            # req_id -> (tokens computed before this step, outputs so far)
            # A preempted request comes back as a new one (vLLM's V2 model runner) whose
            # `prefill_token_ids` hold its outputs so far: it goes on from there.
            progress = {
                new.req_id: (
                    new.num_computed_tokens,
                    max(0, len(new.prefill_token_ids or ()) - len(new.prompt_token_ids or ())),
                )
                for new in so.scheduled_new_reqs
            }
            cached = so.scheduled_cached_reqs
            for i, req_id in enumerate(cached.req_ids):
                progress[req_id] = (cached.num_computed_tokens[i], cached.num_output_tokens[i])
            req_ids = list(so.num_scheduled_tokens.keys())
            sampled = []
            prompt_logprobs = {}
            for req_id in req_ids:
                computed, outputs = progress[req_id]
                first, prompt_len, min_tokens, stops = self._requests[req_id]
                if computed + so.num_scheduled_tokens[req_id] < prompt_len + outputs:
                    sampled.append([])  # a chunk of a long prefill
                    continue
                if outputs < len(script):
                    token = script[outputs]
                else:
                    token = self._token_base + (first + outputs) % 1000
                if outputs < min_tokens and token in stops:
                    # vLLM's min_tokens logits processor: no stop token (EOS included)
                    # may be sampled before min_tokens; the scheduler relies on it.
                    token = self._token_base + 1000
                sampled.append([token])
                if req_id in self._prompt_logprobs:
                    prompt_logprobs[req_id] = scripted_prompt_logprobs(
                        *self._prompt_logprobs.pop(req_id)
                    )
            return ModelRunnerOutput(
                req_ids=req_ids,
                req_id_to_index={r: i for i, r in enumerate(req_ids)},
                sampled_token_ids=sampled,
                prompt_logprobs_dict=prompt_logprobs,
            )

    def scripted_prompt_logprobs(prompt, k):
        """The prompt logprobs of the module docstring, as the model runner's tensors."""
        from vllm.v1.outputs import LogprobsTensors

        k = max(k, 0)
        ids, logprobs = [], []
        for i, t in enumerate(prompt[1:]):
            ids.append([t] + [(t + j) % 1000 for j in range(1, k + 1)])
            logprobs.append([-(i + 1) / 8] + [-(i + 1) / 8 - j for j in range(1, k + 1)])
        rows = len(ids)
        return LogprobsTensors(
            torch.tensor(ids, dtype=torch.int32).reshape(rows, k + 1),
            torch.tensor(logprobs, dtype=torch.float32).reshape(rows, k + 1),
            torch.tensor([1 + i % 3 for i in range(rows)], dtype=torch.int32),
        )

    ScriptedExecutor.__module__ = __name__
    ScriptedExecutor.__qualname__ = "ScriptedExecutor"
    return ScriptedExecutor


def build_config(args, executor_class):
    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        LoRAConfig,
        ModelConfig,
        ParallelConfig,
        SchedulerConfig,
        VllmConfig,
    )

    model = ModelConfig(
        model=args.model,
        tokenizer=args.model,
        enforce_eager=True,
        max_model_len=args.max_model_len,
        dtype="float32",
        skip_tokenizer_init=True,
    )
    host, port = args.handshake_address.removeprefix("tcp://").rsplit(":", 1)
    parallel = ParallelConfig(
        data_parallel_size=args.dp_size,
        data_parallel_size_local=args.local_count,
        data_parallel_rank=args.start_rank,
        data_parallel_master_ip=host,
        data_parallel_rpc_port=int(port),
        distributed_executor_backend=executor_class,
    )
    scheduler = SchedulerConfig(
        max_model_len=args.max_model_len,
        is_encoder_decoder=False,
        # A scripted executor returns its output synchronously.
        async_scheduling=False,
    )
    cache = dict(block_size=args.block_size)
    if args.enable_prefix_caching is not None:
        cache["enable_prefix_caching"] = args.enable_prefix_caching
    if args.num_gpu_blocks_override is not None:
        cache["num_gpu_blocks_override"] = args.num_gpu_blocks_override
    if args.prefix_caching_hash_algo is not None:
        cache["prefix_caching_hash_algo"] = args.prefix_caching_hash_algo
    extra = {}
    if args.kv_events_config is not None:
        import json

        from vllm.config import KVEventsConfig

        extra["kv_events_config"] = KVEventsConfig(**json.loads(args.kv_events_config))
    return VllmConfig(
        model_config=model,
        device_config=DeviceConfig("cpu"),
        parallel_config=parallel,
        scheduler_config=scheduler,
        cache_config=CacheConfig(**cache),
        lora_config=LoRAConfig(max_loras=args.max_loras) if args.max_loras > 0 else None,
        **extra,
    )


def main():
    args = parse_args()
    if args.local_count is None:
        args.local_count = args.dp_size - args.start_rank
    if args.log_file:
        fd = os.open(args.log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stderr = os.fdopen(2, "w", buffering=1)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    script = [int(t) for t in args.output_token_ids.split(",")] if args.output_token_ids else []
    executor_class = build_executor_class(args.step_delay_ms / 1000.0, script)
    vllm_config = build_config(args, executor_class)

    from vllm.v1.engine.core import EngineCoreProc

    common = dict(
        vllm_config=vllm_config,
        local_client=False,  # headless: the frontend is elsewhere
        handshake_address=args.handshake_address,
        executor_class=executor_class,
        log_stats=True,
    )
    if args.local_count == 1:
        # One engine in this process, as CoreEngineProcManager's child would run it.
        EngineCoreProc.run_engine_core(dp_rank=args.start_rank, local_dp_rank=0, **common)
        return

    # Several engines: what `run_headless` does, with vLLM's own process manager.
    import signal

    from vllm.v1.engine.utils import CoreEngineProcManager

    def on_signal(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    manager = CoreEngineProcManager(
        local_engine_count=args.local_count,
        start_index=args.start_rank,
        local_start_index=0,
        vllm_config=vllm_config,
        local_client=False,
        handshake_address=args.handshake_address,
        executor_class=executor_class,
        log_stats=True,
    )
    try:
        manager.monitor_engine_liveness()
    finally:
        manager.shutdown(timeout=5)


if __name__ == "__main__":
    main()
