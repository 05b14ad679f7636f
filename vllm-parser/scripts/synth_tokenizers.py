#!/usr/bin/env python3
"""Tokenizer directories for formats whose special tokens no stock tokenizer
in the reference environment has.

vLLM decides some parser behaviour from the vocabulary: Mistral's parser takes
its v11+ path (``name[ARGS]{…}`` calls, ``[THINK]`` reasoning) only when the
tokenizer has ``[ARGS]`` and ``[THINK]``. The reference environment's
``mistral_tekken`` loads without them, so this script writes
``$REF/models/mistral_v13_synth``: the ``qwen3`` tokenizer plus Mistral's
control tokens as special tokens. Corpus configs name it with ``"model"``.
``k2_horizon_synth`` is the ``qwen3`` tokenizer plus K2 Horizon's ``<ifm|…>``
markers.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/synth_tokenizers.py
"""

import os
from pathlib import Path

from transformers import AutoTokenizer

REF = Path(os.environ.get("VLLM_REFERENCE", Path.home() / ".cache/vllm-reference"))

SYNTH = {
    "mistral_v13_synth": ("qwen3", ["[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"]),
    # K2 Horizon's reasoning and tool-call markers (k2_horizon parsers).
    "k2_horizon_synth": (
        "qwen3",
        [
            "<ifm|think>", "</ifm|think>", "<ifm|think_fast>", "</ifm|think_fast>",
            "<ifm|think_faster>", "</ifm|think_faster>", "<ifm|tool_calls>",
            "</ifm|tool_calls>", "<ifm|tool_call>", "</ifm|tool_call>",
            "<ifm|arg_key>", "</ifm|arg_key>", "<ifm|arg_type>", "</ifm|arg_type>",
            "<ifm|arg_value>", "</ifm|arg_value>",
        ],
    ),
}


def main() -> None:
    for name, (base, tokens) in SYNTH.items():
        out = REF / "models" / name
        tokenizer = AutoTokenizer.from_pretrained(REF / "models" / base)
        tokenizer.add_special_tokens({"additional_special_tokens": tokens})
        tokenizer.save_pretrained(out)
        (out / "config.json").write_text((REF / "models" / base / "config.json").read_text())
        print(f"{out}: {base} + {tokens}")


if __name__ == "__main__":
    main()
