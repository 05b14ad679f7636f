"""Publish scripted KV-event batches through vLLM 0.33.0's own `ZmqEventPublisher`.

The reference publisher for vllm-client's subscriber tests: the real PUB socket, replay
ROUTER, sequence numbering, replay buffer (`--buffer-steps`) and per-rank endpoint
offsets (`--data-parallel-rank`), with batches whose content the test chooses. Commands
on stdin, one per line; each answers one JSON line once its batches are out:

    publish N   publish N batches
    lose N      publish N batches that enter the replay buffer but never reach the PUB
                socket (a lossy link: the subscriber sees a hole in the numbering)
    quit

Answer: {"done": "<command>", "published": [{"seq": S, "payload": "<hex>"}, ...]}. Batch
`seq` holds one BlockStored with block hash `1000 + seq` and tokens `[seq] * 4`.

    HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-client/scripts/kv_events_publisher.py \
        --endpoint 'tcp://*:5557' --replay-endpoint 'tcp://*:5558' --topic kv
"""

import argparse
import json
import sys
import threading
import time

from vllm.distributed.kv_events import BlockStored, KVEventBatch, ZmqEventPublisher


class Tap:
    """Stands in for the publisher's PUB socket: records every message and forwards it
    unless the link is 'lossy'."""

    def __init__(self, socket):
        self._socket = socket
        self.lossy = False
        self.sent = []
        self.cond = threading.Condition()

    def send_multipart(self, frames):
        _, seq, payload = frames
        if not self.lossy:
            self._socket.send_multipart(frames)
        with self.cond:
            self.sent.append({"seq": int.from_bytes(seq, "big"), "payload": bytes(payload).hex()})
            self.cond.notify_all()

    def __getattr__(self, name):
        return getattr(self._socket, name)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", required=True)
    p.add_argument("--replay-endpoint", default=None)
    p.add_argument("--topic", default="")
    p.add_argument("--buffer-steps", type=int, default=10_000)
    p.add_argument("--data-parallel-rank", type=int, default=0)
    args = p.parse_args()

    publisher = ZmqEventPublisher(
        data_parallel_rank=args.data_parallel_rank,
        endpoint=args.endpoint,
        replay_endpoint=args.replay_endpoint,
        buffer_steps=args.buffer_steps,
        topic=args.topic,
    )
    tap = Tap(publisher._pub)
    publisher._pub = tap
    count = 0
    print(json.dumps({"ready": publisher.get_publisher_config().endpoint}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        command, n = words[0], int(words[1])
        tap.lossy = command == "lose"
        before = len(tap.sent)
        for _ in range(n):
            publisher.publish(
                KVEventBatch(
                    ts=time.time(),
                    events=[
                        BlockStored(
                            block_hashes=[1000 + count],
                            parent_block_hash=None,
                            token_ids=[count] * 4,
                            block_size=4,
                            lora_id=None,
                            medium="GPU",
                            lora_name=None,
                        )
                    ],
                )
            )
            count += 1
        with tap.cond:
            tap.cond.wait_for(lambda: len(tap.sent) == before + n, timeout=30)
            out = tap.sent[before:]
        tap.lossy = False
        print(json.dumps({"done": line.strip(), "published": out}), flush=True)
    publisher.shutdown()


if __name__ == "__main__":
    main()
