"""Subscribe to a vLLM engine's KV-cache events with vLLM's own classes; print JSON lines.

The reference side of vllm-client's KV-event interop tests: what a Python consumer using
vLLM 0.33.0's `KVEventBatch` and msgspec decoder sees. It subscribes (SUB, topic
prefix), replays from `--from-seq` through the replay endpoint with the protocol of
`ZmqEventPublisher._service_replay` (DEALER: `["", start_seq]`, answers
`["", topic, seq, payload]` until `END_SEQ`), fills any hole in the live numbering the
same way, and prints, in sequence order:

    {"ready": true}                                    once subscribed
    {"seq": N, "payload": "<hex>", "batch": {...}}     per batch

`batch` is `msgspec.to_builtins` of the decoded `KVEventBatch` (tagged events with their
`type`, defaults omitted) with bytes as hex. Stops after an `AllBlocksCleared` event when
`--until-cleared`, or after `--max-seconds`.

    HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-client/scripts/kv_events_subscriber.py \
        --endpoint tcp://127.0.0.1:5557 --replay-endpoint tcp://127.0.0.1:5558 --topic kv
"""

import argparse
import json
import sys
import time

import msgspec
import zmq

from vllm.distributed.kv_events import AllBlocksCleared, KVEventBatch, ZmqEventPublisher

END_SEQ = ZmqEventPublisher.END_SEQ


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", required=True)
    p.add_argument("--replay-endpoint", default=None)
    p.add_argument("--topic", default="")
    p.add_argument("--from-seq", type=int, default=None, help="replay from this sequence first")
    p.add_argument("--until-cleared", action="store_true")
    p.add_argument("--max-seconds", type=float, default=120.0)
    return p.parse_args()


def hexify(value):
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        return {k: hexify(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [hexify(v) for v in value]
    return value


def main():
    args = parse_args()
    ctx = zmq.Context.instance()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt_string(zmq.SUBSCRIBE, args.topic)
    sub.connect(args.endpoint)
    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    state = {"next": args.from_seq, "cleared": False}

    def emit(seq, payload):
        batch = decoder.decode(payload)
        if any(isinstance(e, AllBlocksCleared) for e in batch.events):
            state["cleared"] = True
        builtins = hexify(msgspec.to_builtins(batch, builtin_types=(bytes,)))
        print(json.dumps({"seq": seq, "payload": payload.hex(), "batch": builtins}), flush=True)
        state["next"] = seq + 1

    def replay(start, until=None):
        if args.replay_endpoint is None:
            return
        dealer = ctx.socket(zmq.DEALER)
        dealer.connect(args.replay_endpoint)
        dealer.send_multipart((b"", start.to_bytes(8, "big")))
        while dealer.poll(10_000):
            _, _, seq_bytes, payload = dealer.recv_multipart()
            if seq_bytes == END_SEQ:
                break
            seq = int.from_bytes(seq_bytes, "big")
            if seq >= state["next"] and (until is None or seq < until):
                emit(seq, payload)
        dealer.close(linger=0)

    time.sleep(0.5)  # let the subscription reach the publisher
    print(json.dumps({"ready": True}), flush=True)
    if args.from_seq is not None:
        replay(args.from_seq)
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline and not (args.until_cleared and state["cleared"]):
        if not sub.poll(100):
            continue
        topic, seq_bytes, payload = sub.recv_multipart()
        seq = int.from_bytes(seq_bytes, "big")
        if state["next"] is not None and seq < state["next"]:
            continue  # already replayed
        if state["next"] is not None and seq > state["next"]:
            replay(state["next"], until=seq)
        emit(seq, payload)
    sub.close(linger=0)


if __name__ == "__main__":
    sys.exit(main())
