"""Our mock engine against vLLM 0.33.0's real frontend-side code.

Binds the sockets as vLLM's MPClient does, starts the `mock-engine` example as a headless
engine, runs vLLM's own `wait_for_engine_startup` against it, then sends requests
encoded by vLLM's MsgpackEncoder and decodes the outputs with vLLM's
MsgpackDecoder(EngineCoreOutputs): tokens, finish and stop reasons, logprobs, abort,
utility calls, and a clean shutdown.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        scripts/interop_vllm_frontend.py --mock-engine PATH/TO/mock-engine --model MODEL_DIR

Prints PASS/FAIL per check; exits non-zero on any failure.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

import msgspec
import zmq

from vllm import SamplingParams
from vllm.config import ParallelConfig
from vllm.utils.network_utils import get_open_port, make_zmq_socket
from vllm.v1.engine import (
    EngineCoreEventType,
    EngineCoreOutputs,
    EngineCoreReadyResponse,
    EngineCoreRequest,
    EngineCoreRequestType,
    FinishReason,
)
from vllm.v1.engine.utils import (
    CoreEngine,
    CoreEngineLaunch,
    EngineZmqAddresses,
    wait_for_engine_startup,
)
from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder

TEXT = [9707, 0, 358, 1079, 264, 7860]  # any token ids: the mock's fixed text
EOS = 151645
DP_SIZE = 2  # two engine ranks in one mock-engine process, as `--data-parallel-size 2`
failures: list[str] = []


def check(name: str, ok: bool, detail: object = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {name}" + ("" if ok else f" -- {detail}"))
    if not ok:
        failures.append(name)


def params(**kwargs) -> SamplingParams:
    """Sampling parameters as vLLM's input processor hands them to the engine."""
    sp = SamplingParams(**kwargs)
    sp.update_from_generation_config({}, EOS)
    return sp


def request(request_id: str, sp: SamplingParams) -> EngineCoreRequest:
    return EngineCoreRequest(
        request_id=request_id,
        prompt_token_ids=[1, 2, 3],
        mm_features=None,
        sampling_params=sp,
        pooling_params=None,
        arrival_time=time.time(),
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


class Frontend:
    def __init__(self, input_socket, output_socket):
        self.input = input_socket
        self.output = output_socket
        self.encoder = MsgpackEncoder()
        self.decoder = MsgpackDecoder(EngineCoreOutputs)

    def send(self, kind: EngineCoreRequestType, obj, rank: int = 0) -> None:
        identity = rank.to_bytes(2, "little")
        self.input.send_multipart((identity, kind.value, *self.encoder.encode(obj)), copy=False)

    def recv(self, timeout_ms: int = 10_000) -> EngineCoreOutputs | None:
        if not self.output.poll(timeout_ms):
            return None
        frames = self.output.recv_multipart(copy=False)
        return self.decoder.decode(frames)

    def run(self, ids: set[str]) -> dict[str, tuple[list[int], object]]:
        tokens: dict[str, list[int]] = {}
        done: dict[str, tuple[list[int], object]] = {}
        self.events: dict[str, list] = {}
        while len(done) < len(ids):
            outs = self.recv()
            if outs is None:
                raise TimeoutError(f"no output; finished so far: {sorted(done)}")
            for out in outs.outputs:
                tokens.setdefault(out.request_id, []).extend(out.new_token_ids)
                self.events.setdefault(out.request_id, []).extend(out.events or [])
                if out.finish_reason is not None:
                    done[out.request_id] = (tokens[out.request_id], out)
        return done

    def call(self, call_id: int, method: str, *args):
        self.send(EngineCoreRequestType.UTILITY, (0, call_id, method, args))
        while (outs := self.recv()) is not None:
            if outs.utility_output is not None:
                return outs.utility_output
        raise TimeoutError(f"no answer to {method}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mock-engine", default=os.environ.get("MOCK_ENGINE"))
    parser.add_argument("--model", default=os.path.expanduser("~/.cache/vllm-reference/models/qwen3"))
    args = parser.parse_args()
    if not args.mock_engine:
        parser.error("--mock-engine (or MOCK_ENGINE) is required")

    ctx = zmq.Context()
    port = get_open_port()
    handshake = make_zmq_socket(ctx, f"tcp://127.0.0.1:{port}", zmq.ROUTER, bind=True)
    input_address = f"tcp://127.0.0.1:{get_open_port()}"
    output_address = f"tcp://127.0.0.1:{get_open_port()}"
    input_socket = make_zmq_socket(ctx, input_address, zmq.ROUTER, bind=True)
    output_socket = make_zmq_socket(ctx, output_address, zmq.PULL)

    engine = subprocess.Popen(
        [args.mock_engine, args.model, "--headless",
         "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(port),
         "--data-parallel-size", str(DP_SIZE), "--data-parallel-start-rank", "0",
         "--enforce-eager", "--gpu-memory-utilization", "0.5",  # ignored with a warning
         "--mock-token-ids", ",".join(map(str, TEXT)), "--mock-eos-token-id", str(EOS)],
    )
    try:
        # vLLM's own startup barrier, for remote headless engines.
        parallel_config = ParallelConfig(data_parallel_size=DP_SIZE, data_parallel_size_local=0)
        launch = CoreEngineLaunch(
            engine_manager=None,
            coordinator=None,
            addresses=EngineZmqAddresses(inputs=[input_address], outputs=[output_address]),
            tensor_queue=None,
        )
        engines = [CoreEngine(index=rank, local=False) for rank in range(DP_SIZE)]
        wait_for_engine_startup(handshake, engines, parallel_config, False, None, launch)
        check(f"wait_for_engine_startup: {DP_SIZE} engines (HELLO, metadata, READY)", True)

        # MPClient: the first message from each engine on the input socket is its ready
        # response.
        ranks = set()
        for _ in range(DP_SIZE):
            if not input_socket.poll(10_000):
                raise TimeoutError("no ready response")
            identity, payload = input_socket.recv_multipart()
            ready = msgspec.msgpack.decode(payload, type=EngineCoreReadyResponse)
            if identity == ready.data_parallel_rank.to_bytes(2, "little"):
                ranks.add(ready.data_parallel_rank)
        check("ready responses decode as EngineCoreReadyResponse, identity = rank",
              ranks == set(range(DP_SIZE)) and ready.vllm_version == "0.33.0", (ranks, ready))

        fe = Frontend(input_socket, output_socket)
        fe.send(EngineCoreRequestType.ADD, request("eos", params(max_tokens=50, logprobs=3)))
        fe.send(EngineCoreRequestType.ADD, request("length", params(max_tokens=4)))
        fe.send(EngineCoreRequestType.ADD, request("stop", params(stop_token_ids=[358])))
        fe.send(EngineCoreRequestType.ADD, request("min", params(min_tokens=8, max_tokens=50)))
        fe.send(EngineCoreRequestType.ADD, request("ignore", params(ignore_eos=True, max_tokens=9)))
        done = fe.run({"eos", "length", "stop", "min", "ignore"})

        kinds = [e.type for e in fe.events["eos"]]
        check("events decode as EngineCoreEvent: QUEUED then SCHEDULED",
              kinds == [EngineCoreEventType.QUEUED, EngineCoreEventType.SCHEDULED], fe.events["eos"])
        tokens, last = done["eos"]
        check("text then EOS: finish STOP", tokens == TEXT + [EOS]
              and last.finish_reason == FinishReason.STOP and last.stop_reason is None, (tokens, last))
        lp = last.new_logprobs
        check("logprobs decode as LogprobsLists with k+1 columns",
              lp is not None and lp.logprob_token_ids.shape[1] == 4
              and int(lp.logprob_token_ids[0][0]) == EOS and int(lp.sampled_token_ranks[0]) == 1,
              lp)
        tokens, last = done["length"]
        check("max_tokens: finish LENGTH", tokens == TEXT[:4]
              and last.finish_reason == FinishReason.LENGTH, (tokens, last))
        tokens, last = done["stop"]
        check("stop_token_ids: stop reason is the token", tokens == TEXT[:3]
              and last.finish_reason == FinishReason.STOP and last.stop_reason == 358, (tokens, last))
        tokens, last = done["min"]
        # EOS suppressed at position 6: the text restarts, EOS follows its second end.
        check("min_tokens suppresses EOS", tokens == TEXT + TEXT + [EOS], tokens)
        tokens, last = done["ignore"]
        check("ignore_eos generates past EOS", tokens == TEXT + [EOS] + TEXT[:2]
              and last.finish_reason == FinishReason.LENGTH, tokens)

        # ABORT: the request just ends (a vLLM engine sends nothing for it), so the
        # stream goes quiet without ever reaching max_model_len.
        fe.send(EngineCoreRequestType.ADD, request("aborted", params(max_tokens=None, ignore_eos=True)))
        first = fe.recv()
        fe.send(EngineCoreRequestType.ABORT, ["aborted"])
        late = []
        while (outs := fe.recv(500)) is not None:
            late.extend(o for o in outs.outputs if o.request_id == "aborted")
        check("abort stops generation without a finish output",
              first is not None and all(o.finish_reason is None for o in late), late[-1:])
        stats = fe.call(1, "is_sleeping")
        check("utility is_sleeping -> False",
              stats.failure_message is None and stats.result.result is False, stats)

        tasks = fe.call(2, "get_supported_tasks")
        check("utility get_supported_tasks", list(tasks.result.result) == ["generate"], tasks)
        bad = fe.call(3, "no_such_method")
        check("unknown utility fails like vLLM",
              bad.result is None and bad.failure_message.startswith("Call to no_such_method method failed:"),
              bad)
        fe.send(EngineCoreRequestType.ADD, request("on-rank-1", params(max_tokens=2)), rank=1)
        outs = fe.recv()
        check("a request sent to identity 1 is answered by engine 1",
              outs is not None and outs.engine_index == 1
              and outs.outputs[0].request_id == "on-rank-1", outs)
        if outs is not None and outs.outputs[0].finish_reason is None:
            fe.run({"on-rank-1"})

        fe.send(EngineCoreRequestType.ADD, request("stats", params(max_tokens=3)))
        seen_stats = None
        while (outs := fe.recv(1000)) is not None:
            seen_stats = outs.scheduler_stats or seen_stats
        check("scheduler stats decode", seen_stats is not None and seen_stats.num_waiting_reqs == 0,
              seen_stats)
    except Exception as e:  # noqa: BLE001 - report and fail
        check("interop run", False, repr(e))
    finally:
        engine.send_signal(signal.SIGTERM)
        try:
            code = engine.wait(10)
        except subprocess.TimeoutExpired:
            engine.kill()
            code = "killed"
        check("mock engine exits cleanly on SIGTERM", code == 0, code)
        ctx.destroy(linger=0)

    print(f"interop_vllm_frontend: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
