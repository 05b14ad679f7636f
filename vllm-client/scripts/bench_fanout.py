"""vLLM's Python fan-out of engine outputs to request streams, timed for comparison with
`cargo run --release --example fanout`.

What vLLM's AsyncLLM does per engine message, minus detokenization: decode the
EngineCoreOutputs with vLLM's MsgpackDecoder, turn each output into a RequestOutput and
put it into the request's RequestOutputCollector (merging deltas when the consumer lags),
while one asyncio task per request awaits its collector. The loop yields to the consumers
after every message, as the output handler does, so they keep up and nothing merges.
Prints JSON with CPU µs per delivered token and the outputs the consumers took.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-client/scripts/bench_fanout.py --streams 2000 --tokens 100
"""

import argparse
import asyncio
import json
import time

from vllm.outputs import CompletionOutput, RequestOutput
from vllm.sampling_params import RequestOutputKind
from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs, FinishReason
from vllm.v1.engine.output_processor import RequestOutputCollector
from vllm.v1.serial_utils import MsgpackDecoder, MsgpackEncoder

ap = argparse.ArgumentParser()
ap.add_argument("--streams", type=int, default=2000)
ap.add_argument("--tokens", type=int, default=100)
args = ap.parse_args()

ids = [f"req-{i:05}" for i in range(args.streams)]
enc = MsgpackEncoder()
steps = []
for step in range(args.tokens):
    last = step == args.tokens - 1
    outs = [
        EngineCoreOutput(rid, [100 + (i + step) % 1000],
                         finish_reason=FinishReason.LENGTH if last else None)
        for i, rid in enumerate(ids)
    ]
    steps.append(bytes(enc.encode(EngineCoreOutputs(outputs=outs, timestamp=1.0))[0]))


async def main():
    dec = MsgpackDecoder(EngineCoreOutputs)
    collectors = {rid: RequestOutputCollector(RequestOutputKind.DELTA, rid) for rid in ids}
    delivered = 0
    outputs_taken = 0

    async def consume(rid):
        nonlocal delivered, outputs_taken
        q = collectors[rid]
        while True:
            out = await q.get()
            delivered += len(out.outputs[0].token_ids)
            outputs_taken += 1
            if out.finished:
                return

    consumers = [asyncio.create_task(consume(rid)) for rid in ids]
    await asyncio.sleep(0)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for payload in steps:
        outputs = dec.decode(payload)
        for o in outputs.outputs:
            finished = o.finish_reason is not None
            ro = RequestOutput(
                request_id=o.request_id,
                prompt=None,
                prompt_token_ids=None,
                prompt_logprobs=None,
                outputs=[CompletionOutput(index=0, text="", token_ids=o.new_token_ids,
                                          cumulative_logprob=None, logprobs=None,
                                          finish_reason=str(o.finish_reason) if finished else None)],
                finished=finished,
            )
            collectors[o.request_id].put(ro)
        # Yield to the consumers, as the output handler task does between messages.
        await asyncio.sleep(0)
    await asyncio.gather(*consumers)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(json.dumps({"streams": args.streams, "tokens": delivered, "outputs": outputs_taken,
                      "cpu_s": cpu,
                      "wall_s": wall, "cpu_us_per_token": cpu / delivered * 1e6}))


asyncio.run(main())
