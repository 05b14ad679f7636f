"""Golden data for vllm-detok's tiktoken backend, produced by the `tiktoken` package.

Run from the repository root with the reference environment (tiktoken 0.14.0, pinned below):

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-detok/scripts/gen_tiktoken_fixture.py

No real tiktoken rank file can be fetched (no hub access) or vendored without its licence, so
the script trains a small synthetic one with tiktoken's own `_educational.bpe_train` (GPT-4's
split pattern, 600 ranks) on the same texts as `gen_fixtures.py`, and writes:

- `vllm-detok/tests/data/synthetic.tiktoken`: the rank file, in `load_tiktoken_bpe`'s format;
- `vllm-detok/tests/fixtures/tiktoken.json.gz`: the special tokens, and random token streams
  (encoded text, random ids, special tokens, single bytes: split and invalid UTF-8) with
  `Encoding.decode` of each, with and without the special tokens (`skip_special_tokens`, as
  the Python wrappers do it: leaving their ids out). Every stream ends in plain text, so its
  decoding is also what a streaming decoder must have released by the end.
"""

import base64
import gzip
import json
import os
import random
import sys

import tiktoken
from tiktoken._educational import bpe_train

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import MULTIBYTE_CHARS, TEXTS  # noqa: E402

TIKTOKEN_VERSION = "0.14.0"
SEED = 20261130
VOCAB = 600
STREAMS = 300
PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
    r"""|\s*[\r\n]|\s+(?!\S)|\s+"""
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "[EOS]"]
HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    assert tiktoken.__version__ == TIKTOKEN_VERSION, tiktoken.__version__
    ranks = bpe_train("\n".join(TEXTS * 3), VOCAB, PAT_STR, visualise=None)
    specials = {text: VOCAB + 2 + i for i, text in enumerate(SPECIALS)}
    enc = tiktoken.Encoding("synthetic", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens=specials)

    rank_path = os.path.join(HERE, "..", "tests", "data", "synthetic.tiktoken")
    with open(rank_path, "w") as f:
        for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
            f.write(f"{base64.b64encode(token).decode()} {rank}\n")

    rng = random.Random(SEED)
    special_ids = list(specials.values())

    def piece():
        r = rng.random()
        if r < 0.35:
            ids = enc.encode(rng.choice(TEXTS))
            start = rng.randrange(len(ids))
            return ids[start : start + rng.randint(1, 8)]
        if r < 0.55:
            return [rng.randrange(VOCAB)]
        if r < 0.68:
            return [rng.choice(special_ids)]
        if r < 0.85:
            return list(rng.choice(MULTIBYTE_CHARS).encode())  # ranks 0..255 are the bytes
        return [rng.randrange(0x80, 0x100)]

    streams = []
    for _ in range(STREAMS):
        ids = []
        for _ in range(rng.randint(1, 12)):
            ids += piece()
        ids += enc.encode(" end.")
        kept = [i for i in ids if i not in special_ids]
        streams.append({
            "ids": ids,
            "text": enc.decode(ids),
            "text_skipping_special_tokens": enc.decode(kept),
        })

    data = {
        "generator": "vllm-detok/scripts/gen_tiktoken_fixture.py",
        "tiktoken": TIKTOKEN_VERSION,
        "special_tokens": specials,
        "streams": streams,
    }
    out = os.path.join(HERE, "..", "tests", "fixtures", "tiktoken.json.gz")
    with gzip.GzipFile(out, "wb", mtime=0) as f:
        f.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
    print(f"{len(ranks)} ranks -> {rank_path}; {len(streams)} streams -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
