"""Per-token cost of vLLM 0.33.0's Python frontend: detokenize + stop check + one SSE chunk.

The Python half of `cargo run --release --example token-cost`: the example writes the
token ids and stop strings to a JSON file and runs

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        examples/scripts/token_cost.py INPUT.json TOKENIZER_DIR [FRAMES_BASE]

Per token it does what vLLM does for one streamed chat token:
- `IncrementalDetokenizer.from_new_request` (a `FastIncrementalDetokenizer`, i.e.
  tokenizers' `DecodeStream`) driven with `update([id], False)` (stop strings checked)
  and `get_next_output_text(False, True)`;
- with logprobs: `LogprobsProcessor._update_sample_logprobs` over one row (the sampled
  id then five alternatives), then the body of `OpenAIServingChat._create_chat_logprobs`
  for one position (`chat_logprobs` below: `serving.py` itself cannot be imported here,
  the reference venv lacks its `orjson` dependency);
- `ChatCompletionStreamResponse` / `ChatCompletionResponseStreamChoice` / `DeltaMessage`,
  serialized with `model_dump_json(exclude_unset=True, exclude_none=False)` and framed
  as `data: ...\\n\\n`, as `chat_completion_stream_generator` does.

Prints `{"text_us_per_token": ..., "logprobs_us_per_token": ...}` (best of 3 runs).
With FRAMES_BASE, one more (untimed) run of each case writes its SSE frames to
FRAMES_BASE.text and FRAMES_BASE.logprobs, which the example compares with its own.
"""

import itertools
import json
import sys
import time

import numpy as np
from vllm.entrypoints.openai.chat_completion.protocol import (
    ChatCompletionLogProb,
    ChatCompletionLogProbs,
    ChatCompletionLogProbsContent,
    ChatCompletionResponseStreamChoice,
    ChatCompletionStreamResponse,
    DeltaMessage,
)
from vllm.sampling_params import SamplingParams
from vllm.tokenizers import get_tokenizer
from vllm.v1.engine import EngineCoreRequest
from vllm.v1.engine.detokenizer import IncrementalDetokenizer
from vllm.v1.engine.logprobs import LogprobsProcessor
from vllm.v1.outputs import LogprobsLists

RUNS = 3
TOP = 5


def request(prompt_ids, stop, logprobs):
    params = SamplingParams(
        max_tokens=1 << 20, stop=stop, logprobs=TOP if logprobs else None
    )
    return EngineCoreRequest(
        request_id="chatcmpl-bench",
        prompt_token_ids=prompt_ids,
        mm_features=None,
        sampling_params=params,
        pooling_params=None,
        arrival_time=0.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


def chat_logprobs(token_id, position):
    """`OpenAIServingChat._create_chat_logprobs` for one position that has its sampled
    token (`_get_decoded_token` returns `decoded_token`; `chat_top_logprobs_limit(5)`)."""
    step_token = position[token_id]
    step_decoded = step_token.decoded_token
    top = []
    for _, alt in itertools.islice(position.items(), TOP):
        token = alt.decoded_token
        top.append(
            ChatCompletionLogProb(
                token=token,
                logprob=max(alt.logprob, -9999.0),
                bytes=list(token.encode("utf-8", errors="replace")),
            )
        )
    content = ChatCompletionLogProbsContent(
        token=step_decoded,
        logprob=max(step_token.logprob, -9999.0),
        bytes=list(step_decoded.encode("utf-8", errors="replace")),
        top_logprobs=top,
    )
    return ChatCompletionLogProbs(content=[content])


def run(tokenizer, data, logprobs):
    ids = data["ids"]
    alternatives = data["alternatives"]
    alt_logprobs = data["alternative_logprobs"]
    req = request(data["prompt_ids"], data["stop"], logprobs)
    detok = IncrementalDetokenizer.from_new_request(tokenizer, req)
    processor = LogprobsProcessor.from_new_request(tokenizer, req) if logprobs else None
    out = []
    start = time.thread_time()
    for i, token in enumerate(ids):
        stop = detok.update([token], False)
        text = detok.get_next_output_text(False, True)
        assert stop is None
        position_logprobs = None
        if processor is not None:
            row_ids = [token, *alternatives[i]]
            rows = LogprobsLists(
                np.array([row_ids], dtype=np.int64),
                np.array([[data["sampled_logprob"], *alt_logprobs]], dtype=np.float32),
                np.array([1], dtype=np.int64),
            )
            processor._update_sample_logprobs(rows)
            position_logprobs = chat_logprobs(token, processor.logprobs[-1])
        choice = ChatCompletionResponseStreamChoice(
            index=0,
            delta=DeltaMessage(content=text),
            logprobs=position_logprobs,
            finish_reason=None,
            token_ids=None,
        )
        chunk = ChatCompletionStreamResponse(
            id="chatcmpl-bench",
            object="chat.completion.chunk",
            created=data["created"],
            choices=[choice],
            model=data["model"],
            kv_transfer_params=None,
        )
        payload = chunk.model_dump_json(exclude_unset=True, exclude_none=False)
        out.append(f"data: {payload}\n\n")
    elapsed = time.thread_time() - start
    return elapsed * 1e6 / len(ids), out


def best(tokenizer, data, logprobs):
    return min(run(tokenizer, data, logprobs)[0] for _ in range(RUNS))


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    tokenizer = get_tokenizer(sys.argv[2])
    if len(sys.argv) > 3:
        for kind, logprobs in (("text", False), ("logprobs", True)):
            with open(f"{sys.argv[3]}.{kind}", "w") as f:
                f.write("".join(run(tokenizer, data, logprobs)[1]))
    print(
        json.dumps(
            {
                "text_us_per_token": best(tokenizer, data, False),
                "logprobs_us_per_token": best(tokenizer, data, True),
            }
        )
    )


if __name__ == "__main__":
    main()
