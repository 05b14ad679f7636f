"""Our mock engine behind vLLM 0.33.0's whole Python frontend: `AsyncLLM`.

`AsyncLLM` configured for one remote headless engine (`data_parallel_size_local=0`)
binds the handshake socket and waits, like `vllm serve --data-parallel-size-local 0`;
the `mock-engine` example dials it as `vllm serve --headless` would. Then vLLM's real
input processor, engine client, output processor and detokenizer run against the mock:
text, streaming, stop strings, logprobs, prompt logprobs, parallel sampling, abort, utility calls
(sleep, LoRA, pause), and the engine's death (SIGUSR1 -> ENGINE_CORE_DEAD ->
EngineDeadError).

    VLLM_TARGET_DEVICE=cpu HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        scripts/interop_vllm_asyncllm.py --mock-engine PATH/TO/mock-engine [--model DIR]

Prints PASS/FAIL per check; exits non-zero on any failure.
"""

import argparse
import asyncio
import os
import signal
import subprocess
import sys

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # no GPU needed: the engine is the mock

from vllm import SamplingParams  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.lora.request import LoRARequest  # noqa: E402
from vllm.sampling_params import RequestOutputKind  # noqa: E402
from vllm.utils.network_utils import get_open_port  # noqa: E402
from vllm.v1.engine.async_llm import AsyncLLM  # noqa: E402
from vllm.v1.engine.exceptions import EngineDeadError  # noqa: E402

TEXT = "Hello from the mock engine. It has no GPU, and it does not need one."
failures: list[str] = []


def check(name: str, ok: bool, detail: object = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {name}" + ("" if ok else f" -- {detail}"))
    if not ok:
        failures.append(name)


async def final(llm: AsyncLLM, prompt: str, sp: SamplingParams, request_id: str):
    last = None
    async for out in llm.generate(prompt, sp, request_id=request_id):
        last = out
    return last


async def run(llm: AsyncLLM, engine: subprocess.Popen) -> None:
    out = await final(llm, "Hi there", SamplingParams(max_tokens=100), "whole")
    choice = out.outputs[0]
    check("generate: the mock's text, finish stop",
          choice.text == TEXT and choice.finish_reason == "stop", (choice.text, choice.finish_reason))

    deltas = []
    async for out in llm.generate(
        "Hi", SamplingParams(max_tokens=100, output_kind=RequestOutputKind.DELTA), request_id="stream"
    ):
        deltas.append(out.outputs[0].text)
    check("streamed deltas join to the text", "".join(deltas) == TEXT and len(deltas) > 3, deltas)

    out = await final(llm, "Hi", SamplingParams(max_tokens=100, stop=["GPU"]), "stop-string")
    choice = out.outputs[0]
    check("stop string (matched by vLLM's frontend) cuts the text",
          choice.text == TEXT.split("GPU")[0] and choice.stop_reason == "GPU", (choice.text, choice.stop_reason))

    out = await final(llm, "Hi", SamplingParams(max_tokens=4, logprobs=2), "logprobs")
    choice = out.outputs[0]
    ok = choice.finish_reason == "length" and len(choice.token_ids) == 4 and choice.logprobs is not None
    check("max_tokens with logprobs: length, top-2 logprobs per token",
          ok and all(len(lp) >= 2 and lp[t].rank == 1 for lp, t in zip(choice.logprobs, choice.token_ids)),
          choice)

    children = {}
    async for out in llm.generate("Hi", SamplingParams(n=3, max_tokens=5), request_id="parallel"):
        children.update({c.index: c for c in out.outputs})
    check("parallel sampling (n=3)",
          sorted(children) == [0, 1, 2] and all(len(c.token_ids) == 5 for c in children.values()),
          children)

    # Seeded parallel sampling: vLLM's children (seed + i) get what single requests with
    # those seeds get (the mock's text is fixed: the check is on ids, seeds and counts).
    children = {}
    async for out in llm.generate(
        "Hi", SamplingParams(n=4, seed=7, max_tokens=3, output_kind=RequestOutputKind.DELTA),
        request_id="seeded",
    ):
        for c in out.outputs:
            children.setdefault(c.index, []).extend(c.token_ids)
    check("seeded parallel sampling streams n=4 deltas",
          sorted(children) == [0, 1, 2, 3] and all(len(t) == 3 for t in children.values()),
          children)

    # Prompt logprobs: the mock's LogprobsTensors decode in vLLM's output processor.
    prompt = "Hello there, engine"
    out = await final(llm, prompt, SamplingParams(max_tokens=2, prompt_logprobs=2), "prompt-lp")
    ids = out.prompt_token_ids
    plp = out.prompt_logprobs
    ok = (plp is not None and len(plp) == len(ids) and plp[0] is None
          and all(ids[i] in plp[i] and len(plp[i]) <= 3 for i in range(1, len(ids)))
          and all(plp[i][ids[i]].decoded_token is not None for i in range(1, len(ids))))
    check("prompt logprobs: one dict per prompt token after the first, token included", ok, plp)

    # Abort from the frontend while the engine generates (slowly, with ignore_eos).
    gen = llm.generate("Hi", SamplingParams(max_tokens=None, ignore_eos=True), request_id="aborted")
    first = await gen.__anext__()
    await llm.abort("aborted")
    rest = [o async for o in gen]
    check("abort finishes the request", first is not None and rest[-1:] and rest[-1].finished, rest[-1:])

    check("is_sleeping() -> False", await llm.is_sleeping() is False)
    await llm.sleep(1)
    check("sleep(1), is_sleeping() -> True", await llm.is_sleeping() is True)
    await llm.wake_up()
    check("wake_up(), is_sleeping() -> False", await llm.is_sleeping() is False)
    added = await llm.add_lora(LoRARequest("adapter", 3, "/nonexistent/adapter"))
    # A Python set travels as a msgpack array: a real engine's answer arrives as a list too.
    check("add_lora / list_loras", added is True and set(await llm.list_loras()) == {3},
          await llm.list_loras())
    check("get_supported_tasks", tuple(await llm.get_supported_tasks()) == ("generate",))
    await llm.pause_generation(mode="keep")
    check("pause_generation -> is_paused", await llm.is_paused() is True)
    await llm.resume_generation()
    out = await final(llm, "Hi", SamplingParams(max_tokens=2), "after-resume")
    check("generate after resume_generation", len(out.outputs[0].token_ids) == 2, out)

    # The engine dies: vLLM's client must turn ENGINE_CORE_DEAD into EngineDeadError.
    gen = llm.generate("Hi", SamplingParams(max_tokens=None, ignore_eos=True), request_id="dying")
    await gen.__anext__()
    engine.send_signal(signal.SIGUSR1)
    try:
        async for _ in gen:
            pass
        died = False
    except EngineDeadError:
        died = True
    check("engine death (SIGUSR1) surfaces as EngineDeadError", died)


async def main_async(args) -> None:
    port = get_open_port()
    engine = subprocess.Popen(
        [args.mock_engine, args.model, "--headless", "--data-parallel-address", "127.0.0.1",
         "--data-parallel-rpc-port", str(port), "--data-parallel-size", "1",
         "--mock-text", TEXT, "--mock-tokens-per-second", "200",
         # The frontend runs with enable_lora=True; the engine takes the flag too.
         "--enable-lora"],
    )
    llm = None
    try:
        engine_args = AsyncEngineArgs(
            model=args.model, data_parallel_size=1, data_parallel_size_local=0,
            data_parallel_address="127.0.0.1", data_parallel_rpc_port=port, max_model_len=4096,
            enable_lora=True,
        )
        llm = AsyncLLM.from_vllm_config(engine_args.create_engine_config())
        check("AsyncLLM starts against the mock engine", True)
        await run(llm, engine)
    except Exception as e:  # noqa: BLE001 - report and fail
        check("interop run", False, repr(e))
    finally:
        if llm is not None:
            llm.shutdown()
        if engine.poll() is None:
            engine.send_signal(signal.SIGTERM)
        try:
            code = engine.wait(10)
        except subprocess.TimeoutExpired:
            engine.kill()
            code = "killed"
        check("mock engine exited after dying (status 1)", code == 1, code)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mock-engine", default=os.environ.get("MOCK_ENGINE"))
    parser.add_argument("--model", default=os.path.expanduser("~/.cache/vllm-reference/models/qwen3"))
    args = parser.parse_args()
    if not args.mock_engine:
        parser.error("--mock-engine (or MOCK_ENGINE) is required")
    asyncio.run(main_async(args))
    print(f"interop_vllm_asyncllm: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
