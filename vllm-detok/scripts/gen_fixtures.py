"""Golden fixtures for vllm-detok, produced by vLLM 0.33.0's own detokenizer.

Run from the repository root with the reference environment (see ../shared/peers):

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python \
        vllm-detok/scripts/gen_fixtures.py

It writes `vllm-detok/tests/fixtures/<model>.json.gz` for every tokenizer in MODELS. Each file
holds random requests (prompt ids, sampling options, engine outputs split into pushes, finish
kind) and, for every push, the exact text delta, stop string and number of kept output tokens
that vLLM's `FastIncrementalDetokenizer` produces when driven the way
`vllm/v1/engine/output_processor.py` drives it (`update(new_ids, finish == STOP)` then
`get_next_output_text(finished, delta=True)`). It also holds logprob token strings produced by
vLLM's `LogprobsProcessor`, and the 4,000-token benchmark streams.

One deliberate difference from vLLM is recorded in the data rather than hidden: when the
prompt ends in the middle of a UTF-8 character, vLLM's `DecodeStream` is never primed and the
whole prompt text leaks into the first delta. vllm-detok does not leak. For those cases
(`"leak"` in the file) the generator removes the leaked prompt text `decode(prompt[:j])`, where
`j` is the largest prompt length whose decoding does not end in U+FFFD, from the front of
vLLM's concatenated deltas; cases where vLLM's text does not start with it are dropped. For
byte-level BPE tokenizers the leaked text is the prompt's decoding without its final U+FFFD
(the incomplete character), which can end inside a token.

Mistral's tekken (`mistral_tekken`, loaded with `tokenizer_mode="mistral"`) goes through
vLLM's `SlowIncrementalDetokenizer` instead. Two of its behaviours are vLLM bugs that
vllm-detok does not reproduce, and the generator handles them in the data:
- A prompt ending mid-character: the slow path drops the character that the first output
  tokens complete. Such cases are dropped (counted as "dropped").
- `skip_special_tokens=False`: `MistralTokenizer.convert_ids_to_tokens` then returns each
  token's own lossy decoding, so a character split across tokens streams as U+FFFD
  characters. For Mistral tokenizers `skip_special_tokens` changes nothing else (special
  tokens are left out either way, `[TOOL_CALLS]` kept), so each such case is also run with
  `skip_special_tokens=True`; where the two differ, the generator checks that a token of the
  stream decodes to U+FFFD on its own, records the `skip_special_tokens=True` deltas and marks
  the case `"vllm_bug": "split_char_fffd"`.

mistral-common's SentencePiece v7 model (`mistral_spm_v7`, `SPM_MODELS`: the newest
SentencePiece version mistral-common ships and vLLM 0.33.0 serves) takes the same slow path,
where `MistralTokenizer.convert_tokens_to_string` is SentencePiece's own decoding. vLLM's
reference env lacks the `sentencepiece` package that mistral-common needs for it; the script
installs the pinned `SENTENCEPIECE` into the running interpreter's environment when missing.
Prompts ending mid-character are dropped as for tekken (vLLM drops the completed character).
The `split_char_fffd` bug does not exist there (pieces are never decoded one by one), so the
`skip_special_tokens=False` deltas are recorded as they are. `decodes` holds
`MistralTokenizer.decode`, which without `skip_special_tokens` joins the raw pieces.
"""

import argparse
import atexit
import gzip
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import numpy as np

# vLLM's reference env lacks SentencePiece, which mistral-common needs for the SPM models.
# Installed before vLLM loads: mistral-common looks for it once, when it is imported.
SENTENCEPIECE = "sentencepiece==0.2.3"


def ensure_sentencepiece():
    """Installs the pinned SentencePiece into this interpreter's environment if it is missing
    (idempotent: pip does nothing when the pinned version is there)."""
    try:
        import sentencepiece

        if sentencepiece.__version__ == SENTENCEPIECE.split("==")[1]:
            return
    except ImportError:
        pass
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", SENTENCEPIECE], check=True)


ensure_sentencepiece()

from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402
from vllm.v1.engine import EngineCoreRequest  # noqa: E402
from vllm.v1.engine.detokenizer import IncrementalDetokenizer  # noqa: E402
from vllm.v1.engine.logprobs import LogprobsProcessor  # noqa: E402
from vllm.v1.outputs import LogprobsLists  # noqa: E402

MODELS = [
    "qwen3",
    "llama3",
    "llama3_1",
    "deepseek_v3",
    "gemma3",
    "gptoss",
    "mistral_tekken",
    "mistral_spm_v7",
]
# SentencePiece models shipped inside the mistral-common wheel (its `data/` directory).
SPM_MODELS = {"mistral_spm_v7": "mistral_instruct_tokenizer_241114.model.v7"}
CASES_PER_MODEL = 300
LOGPROB_POSITIONS = 300
BENCH_TOKENS = 4000
SEED = 20260330

TEXTS = [
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "def main():\n    return [x * 2 for x in range(10)]  # comment\n",
    "Emoji: 😀👍🏽🇫🇷👨‍👩‍👧 and ❤️ done.",
    "中文字符测试，日本語のテキスト、한국어 문장。",
    "café naïve résumé Ørsted Straße ĳ ﬁ",
    "مرحبا بالعالم שלום עולם Привет мир",
    "  \n\n\t  spaces   and\ttabs\r\n",
    "<think>reasoning</think> {\"name\": \"f\", \"arguments\": {}}",
    "STOP stop Stop sto p. end. END",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚 ∑∫√∞ ≠ ≤ ≥",
]
MULTIBYTE_CHARS = "é中😀👍🏽€𝔘ñ한ا"


def request(prompt_ids, sp):
    return EngineCoreRequest(
        request_id="r",
        prompt_token_ids=prompt_ids,
        mm_features=None,
        sampling_params=sp,
        pooling_params=None,
        arrival_time=0.0,
        lora_request=None,
        cache_salt=None,
        data_parallel_rank=None,
    )


class Model:
    # vLLM streams this tokenizer through its slow detokenizer (see the module doc).
    slow = False

    def __init__(self, name, path):
        self.name = name
        self.tok = get_tokenizer(path)
        self.raw = self.tok._tokenizer
        self.vocab_size = self.raw.get_vocab_size(with_added_tokens=True)
        self.added = sorted(self.raw.get_added_tokens_decoder().keys())
        self.eos = self.tok.eos_token_id
        self.byte_fallback = self.raw.token_to_id("<0x41>") is not None
        if self.byte_fallback:
            self.byte_ids = [self.raw.token_to_id("<0x%02X>" % b) for b in range(256)]
        else:
            # GPT-2 byte-level alphabet: the token for each single byte.
            bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
            bs += list(range(ord("®"), ord("ÿ") + 1))
            cs = bs[:]
            n = 0
            for b in range(256):
                if b not in bs:
                    bs.append(b)
                    cs.append(256 + n)
                    n += 1
            table = dict(zip(bs, cs))
            self.byte_ids = [self.raw.token_to_id(chr(table[b])) for b in range(256)]
        assert all(i is not None for i in self.byte_ids), name

    def encode(self, text):
        return self.raw.encode(text, add_special_tokens=False).ids

    def decode(self, ids, skip):
        return self.raw.decode(ids, skip_special_tokens=skip)

    def tokenizer_file(self, path):
        return os.path.join(path, "tokenizer.json")

    def split_char(self, rng):
        data = rng.choice(MULTIBYTE_CHARS).encode()
        return [self.byte_ids[b] for b in data]

    def random_piece(self, rng):
        r = rng.random()
        if r < 0.35:
            ids = self.encode(rng.choice(TEXTS))
            start = rng.randrange(len(ids))
            return ids[start : start + rng.randint(1, 8)]
        if r < 0.55:
            return [rng.randrange(self.vocab_size)]
        if r < 0.68:
            return [rng.choice(self.added)]
        if r < 0.85:
            return self.split_char(rng)
        if r < 0.92:
            return [self.byte_ids[rng.randrange(0x80, 0x100)]]
        if r < 0.96:
            return [self.eos]
        return self.encode(rng.choice(["😀", "中", "\n", " the", "!", "..."]))

    def stream(self, rng, n):
        out = []
        while len(out) < n:
            out.extend(self.random_piece(rng))
        return out[:n]


class TekkenModel(Model):
    """Mistral's tekken through vLLM's `MistralTokenizer` (mistral-common)."""

    slow = True
    # `skip_special_tokens=False` streams split characters as U+FFFD (see the module doc).
    fffd_bug = True

    def __init__(self, name, path):
        self.name = name
        self.tok = get_tokenizer(path, tokenizer_mode="mistral")
        self.tekken = self.tok.tokenizer
        self.vocab_size = len(self.tok)
        n = self.tekken.num_special_tokens
        # The named special tokens and a few `<SPECIAL_n>` fillers (1,000 in all: picking
        # among all of them would almost never pick a named one).
        named = [i for i in range(n) if not self.tekken.id_to_piece(i).startswith("<SPECIAL_")]
        self.added = named + [len(named) + k for k in range(5)]
        self.eos = self.tok.eos_token_id
        self.byte_fallback = False
        # Tekken ranks 0..255 are the single bytes.
        self.byte_ids = [n + b for b in range(256)]

    def encode(self, text):
        return self.tok.encode(text, add_special_tokens=False)

    def decode(self, ids, skip):
        return self.tok.decode(ids, skip_special_tokens=skip)

    def lossy_piece(self, ids):
        """Whether a token of `ids` decodes to U+FFFD on its own."""
        return any("\ufffd" in self.tekken.id_to_piece(i) for i in ids if 0 <= i < self.vocab_size)

    def tokenizer_file(self, path):
        return os.path.join(path, "tekken.json")


class SentencePieceModel(TekkenModel):
    """A mistral-common SentencePiece model through vLLM's `MistralTokenizer`.

    `path` is the model file itself (`SPM_MODELS`); vLLM loads it from a directory holding it
    under mistral-common's file name."""

    fffd_bug = False

    def __init__(self, name, path):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="vllm-detok-spm-")
        atexit.register(shutil.rmtree, self.dir, True)
        version = path.rsplit(".", 1)[-1]
        os.symlink(path, os.path.join(self.dir, f"tokenizer.model.{version}"))
        self.tok = get_tokenizer(self.dir, tokenizer_mode="mistral")
        self.sp = self.tok.tokenizer._model
        self.vocab_size = len(self.tok)
        controls = sorted(self.tok.all_special_ids)
        # The named control tokens and a few `[control_n]` fillers.
        named = [i for i in controls if not self.sp.id_to_piece(i).startswith("[control_")]
        # `<unk>` (decoded as " ⁇ ") is not a control token; picked as often as they are.
        self.added = named + [i for i in controls if i not in named][:5] + [self.sp.unk_id()]
        self.eos = self.tok.eos_token_id
        self.byte_fallback = True
        self.byte_ids = [self.sp.piece_to_id("<0x%02X>" % b) for b in range(256)]
        self.path = path

    def decode(self, ids, skip):
        """The text vLLM streams (`convert_ids_to_tokens` + `convert_tokens_to_string`);
        `MistralTokenizer.decode` without `skip_special_tokens` joins raw pieces instead."""
        return self.tok.convert_tokens_to_string(self.tok.convert_ids_to_tokens(ids, skip))

    def tokenizer_file(self, path):
        return path

    def edge_decodes(self):
        """Id sequences for `decodes` that random streams rarely produce: `<unk>`, leading
        `▁` pieces after control tokens, byte runs cut by other pieces, `[TOOL_CALLS]`."""
        b = self.byte_ids
        hello, space, tool_calls = self.encode("Hello")[0], self.sp.piece_to_id("▁"), 5
        return [
            [self.sp.unk_id()],
            [self.tok.bos_token_id, self.sp.unk_id(), hello],
            [self.tok.bos_token_id, space, space, hello],
            [b[0xE4], b[0xB8], hello, b[0xAD]],
            [b[0xE4], b[0xB8], b[0xAD], b[0xFF], b[0x41], b[0xC3]],
            [tool_calls, hello, tool_calls, space, hello],
        ]


def run_vllm(model, prompt, opts, pushes, finish):
    """Drive vLLM's detokenizer as output_processor.py does; one record per push."""
    sp = SamplingParams(
        stop=opts["stop"],
        include_stop_str_in_output=opts["include_stop_str_in_output"],
        min_tokens=opts["min_tokens"],
        skip_special_tokens=opts["skip_special_tokens"],
        spaces_between_special_tokens=opts["spaces_between_special_tokens"],
        max_tokens=10_000,
    )
    detok = IncrementalDetokenizer.from_new_request(model.tok, request(prompt, sp))
    steps = []
    for i, ids in enumerate(pushes):
        last = i == len(pushes) - 1
        before = detok.num_output_tokens()
        stop = detok.update(list(ids), last and finish == "stop_token")
        finished = last or stop is not None
        text = detok.get_next_output_text(finished, True)
        steps.append(
            {
                "ids": ids,
                "finish": finish if last else None,
                "text": text,
                "stop": stop,
                "kept": detok.num_output_tokens() - before,
            }
        )
        if stop is not None:
            break
    return steps


def leak_prefix(model, prompt, skip):
    """The prompt text vLLM leaks when the prompt ends mid-character, else None."""
    text = model.decode(prompt, skip)
    if not text.endswith("\ufffd"):
        return None
    if not model.byte_fallback:
        # Byte-level BPE decodes the concatenated bytes lossily: the incomplete character at
        # the end is exactly the last U+FFFD (generated prompts end in a valid UTF-8 prefix).
        return text[:-1]
    j = len(prompt)
    while j > 0 and model.decode(prompt[:j], skip).endswith("\ufffd"):
        j -= 1
    return model.decode(prompt[:j], skip)


def strip_leak(steps, leak):
    remaining = len(leak)
    full = "".join(s["text"] for s in steps)
    if not full.startswith(leak):
        return False
    for s in steps:
        cut = min(remaining, len(s["text"]))
        s["text"] = s["text"][cut:]
        remaining -= cut
    return True


def make_case(model, rng):
    # Prompt: clean text, optionally ending in the first bytes of a multi-byte character.
    prompt = []
    if rng.random() < 0.5 and model.tok.bos_token_id is not None:
        prompt.append(model.tok.bos_token_id)
    prompt += model.encode(rng.choice(TEXTS))[: rng.randint(0, 12)]
    output = []
    if rng.random() < 0.25:
        char = model.split_char(rng)
        cut = rng.randint(1, len(char) - 1) if len(char) > 1 else 1
        prompt += char[:cut]
        output += char[cut:]
    output += model.stream(rng, rng.randint(4, 40))

    opts = {
        "skip_special_tokens": rng.random() < 0.5,
        "spaces_between_special_tokens": rng.random() < 0.5,
        "include_stop_str_in_output": rng.random() < 0.4,
        "min_tokens": rng.choice([0, 0, 0, 1, 3, 6]),
        "stop": [],
    }
    finish = rng.choice(["length", "stop_token", "abort"])
    if finish == "stop_token":
        output.append(model.eos)
    if rng.random() < 0.65:
        text = model.decode(output, opts["skip_special_tokens"]).replace("\ufffd", "")
        for _ in range(rng.randint(1, 8)):
            if text and rng.random() < 0.8:
                a = rng.randrange(len(text))
                s = text[a : a + rng.randint(1, 6)]
                opts["stop"].append(s)
                if len(s) > 1 and rng.random() < 0.3:
                    opts["stop"].append(s[1:] if rng.random() < 0.5 else s[:-1])
            else:
                opts["stop"].append(rng.choice(["zq", "\n\n", "END", "é", "😀x"]))
    pushes = []
    i = 0
    multi = rng.random() < 0.5
    while i < len(output):
        n = rng.randint(1, 5) if multi else 1
        pushes.append(output[i : i + n])
        i += n
    if finish == "abort" or not pushes:
        pushes.append([])

    leak = leak_prefix(model, prompt, opts["skip_special_tokens"])
    if leak is not None and model.slow:
        return None
    if leak is not None and opts["stop"]:
        # A stop string found inside the leaked prompt text has no counterpart without the leak.
        plain = run_vllm(model, prompt, dict(opts, stop=[]), pushes, finish)
        full = "".join(s["text"] for s in plain)
        if any(0 <= full.find(s) < len(leak) for s in opts["stop"]):
            opts["stop"] = []
    steps = run_vllm(model, prompt, opts, pushes, finish)
    if leak is not None and not strip_leak(steps, leak):
        return None
    case = {
        "prompt": prompt,
        "options": opts,
        "finish": finish,
        "leak": leak is not None,
        "steps": steps,
    }
    if model.slow and model.fffd_bug and not opts["skip_special_tokens"]:
        skipping = run_vllm(model, prompt, dict(opts, skip_special_tokens=True), pushes, finish)
        if skipping != steps:
            assert model.lossy_piece(prompt[-7:] + output), (prompt, output, steps, skipping)
            case["steps"] = skipping
            case["vllm_bug"] = "split_char_fffd"
    return case


def logprob_cases(model, rng):
    sp = SamplingParams(logprobs=5, max_tokens=10_000)
    proc = LogprobsProcessor.from_new_request(model.tok, request([1], sp))
    sampled = model.stream(rng, LOGPROB_POSITIONS)
    positions = []
    for tid in sampled:
        alts = []
        while len(alts) < 5:
            cand = model.random_piece(rng)[0] if rng.random() < 0.6 else rng.choice(model.byte_ids)
            if cand != tid and cand not in alts:
                alts.append(cand)
        ids = [tid] + alts
        lists = LogprobsLists(
            np.array([ids], dtype=np.int64),
            np.array([[-0.5 - k for k in range(len(ids))]], dtype=np.float32),
            np.array([1], dtype=np.int64),
            None,
        )
        proc._update_sample_logprobs(lists)
        entry = proc.logprobs[-1]
        positions.append({"ids": ids, "tokens": [entry[i].decoded_token for i in ids]})
    return positions


def whole_decodes(model, rng):
    """`decode(ids, skip_special_tokens)` of random streams (tekken's own decode is not
    `tokenizers`', so it gets golden data too)."""
    out = []
    for k in range(100):
        ids = model.stream(rng, rng.randint(1, 30))
        skip = k % 2 == 0
        text = model.tok.decode(ids, skip_special_tokens=skip)
        out.append({"ids": ids, "skip_special_tokens": skip, "text": text})
    for ids in getattr(model, "edge_decodes", list)():
        for skip in (False, True):
            text = model.tok.decode(ids, skip_special_tokens=skip)
            out.append({"ids": ids, "skip_special_tokens": skip, "text": text})
    return out


def bench_stream(model, rng):
    text = open(os.path.join(os.path.dirname(__file__), "..", "LICENSE")).read()
    ids = []
    k = 0
    while len(ids) < BENCH_TOKENS:
        ids += model.encode(text[k * 2000 : (k + 1) * 2000] + rng.choice(TEXTS))
        k = (k + 1) % 5
    return {"prompt": model.encode("Write the licence:"), "ids": ids[:BENCH_TOKENS]}


def spm_model(name):
    """The mistral-common SentencePiece model `name` of `SPM_MODELS`."""
    import mistral_common

    data_dir = os.path.join(os.path.dirname(mistral_common.__file__), "data")
    return SentencePieceModel(name, os.path.join(data_dir, SPM_MODELS[name]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", default=os.path.expanduser("~/.cache/vllm-reference/models"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--models", nargs="*", default=MODELS)
    args = ap.parse_args()
    for name in args.models:
        if name in SPM_MODELS:
            model = spm_model(name)
            path = model.path
        else:
            path = os.path.join(args.models_dir, name)
            model = (TekkenModel if name == "mistral_tekken" else Model)(name, path)
        rng = random.Random(f"{SEED}-{name}")
        cases = []
        dropped = 0
        while len(cases) < CASES_PER_MODEL:
            case = make_case(model, rng)
            if case is None:
                dropped += 1
            else:
                cases.append(case)
        with open(model.tokenizer_file(path), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        data = {
            "generator": "vllm-detok/scripts/gen_fixtures.py",
            "vllm": "0.33.0",
            "model": name,
            "tokenizer_sha256": digest,
            "cases": cases,
            "logprobs": logprob_cases(model, rng),
            "bench": bench_stream(model, rng),
        }
        if model.slow:
            import mistral_common

            data["mistral_common"] = mistral_common.__version__
            if name in SPM_MODELS:
                import sentencepiece

                data["sentencepiece"] = sentencepiece.__version__
            data["decodes"] = whole_decodes(model, rng)
        out = os.path.join(args.out, f"{name}.json.gz")
        with gzip.GzipFile(out, "wb", mtime=0) as f:
            f.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode())
        leaks = sum(c["leak"] for c in cases)
        stops = sum(1 for c in cases for s in c["steps"] if s["stop"])
        bugs = sum("vllm_bug" in c for c in cases)
        print(f"{name}: {len(cases)} cases ({leaks} mid-char prompts, {stops} stop-string hits,"
              f" {bugs} vLLM split-character bugs, {dropped} dropped) -> {out}"
              f" ({os.path.getsize(out)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
