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
markers; ``kimi_k3_synth`` adds Kimi K3's XTML ``<|open|>`` / ``<|close|>`` /
``<|sep|>``; ``inkling_synth`` adds Inkling's block markers; ``minimax_m3_synth`` adds MiniMax M3's ``<mm:think>`` /
``</mm:think>`` (as plain tokens). ``mistral_pre_v11_synth`` (``[TOOL_CALLS]`` alone)
and ``mistral_pre_v11_think_synth`` (with ``[THINK]``) lack ``[ARGS]``: vLLM's
pre-v11 JSON-array calls. ``mistral_tekken_v11_synth`` is ``mistral_tekken``'s
``tekken.json`` declared v11, with v11's control tokens and no ``[THINK]``: a
mistral-common tokenizer that supports grammars, so vLLM reads ``<think>`` text
reasoning.

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/synth_tokenizers.py
"""

import json
import os
from pathlib import Path

from transformers import AutoTokenizer

REF = Path(os.environ.get("VLLM_REFERENCE", Path.home() / ".cache/vllm-reference"))

SYNTH = {
    "mistral_v13_synth": ("qwen3", ["[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"]),
    # Mistral's calls token without [ARGS]: vLLM's pre-v11 JSON-array tool
    # calls, with no reasoning (no [THINK]) or [THINK] reasoning.
    "mistral_pre_v11_synth": ("qwen3", ["[TOOL_CALLS]"]),
    "mistral_pre_v11_think_synth": ("qwen3", ["[TOOL_CALLS]", "[THINK]", "[/THINK]"]),
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
    # Kimi K3's XTML control tokens (kimi_k3 parsers).
    "kimi_k3_synth": ("qwen3", ["<|open|>", "<|close|>", "<|sep|>", "<|end_of_msg|>"]),
    # Inkling's block markers (inkling parsers, which read the prompt's last
    # marker by token id).
    "inkling_synth": (
        "qwen3",
        [
            "<|message_model|>", "<|content_text|>", "<|content_thinking|>",
            "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>",
            "<|content_tool_error|>", "<|content_model_end_sampling|>", "<|end_message|>",
        ],
    ),
    # Cohere Command A's control tokens (cohere_command3 / cohere_command4).
    "cohere_command_synth": (
        "qwen3",
        [
            "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>",
            "<|USER_TOKEN|>", "<|SYSTEM_TOKEN|>", "<|START_THINKING|>", "<|END_THINKING|>",
            "<|START_RESPONSE|>", "<|END_RESPONSE|>", "<|START_ACTION|>", "<|END_ACTION|>",
            "<|START_TOOL_RESULT|>", "<|END_TOOL_RESULT|>", "<|START_TEXT|>", "<|END_TEXT|>",
        ],
    ),
}

# Added as plain (non-special) vocabulary entries: they survive a decode that
# skips special tokens, and vLLM's engines do not drop them as special tokens.
SYNTH_PLAIN = {
    # MiniMax M3's think markers (the minimax_m3 reasoning parser refuses a
    # vocabulary without them, and reads them as text: no request asks to keep
    # special tokens, so M3's markers are not special).
    "minimax_m3_synth": ("qwen3", ["<mm:think>", "</mm:think>"]),
}


# mistral-common v11's control tokens (ranks 0..21), without [THINK] / [/THINK].
TEKKEN_V11_SPECIALS = [
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]",
]


def tekken_v11() -> None:
    tekken = json.loads((REF / "models" / "mistral_tekken" / "tekken.json").read_text())
    tekken["config"]["version"] = "v11"
    tekken["special_tokens"] = [
        {"rank": rank, "token_str": token, "is_control": True}
        for rank, token in enumerate(TEKKEN_V11_SPECIALS)
    ]
    tekken.pop("image", None)
    out = REF / "models" / "mistral_tekken_v11_synth"
    out.mkdir(parents=True, exist_ok=True)
    (out / "tekken.json").write_text(json.dumps(tekken))
    print(f"{out}: mistral_tekken as v11 without [THINK]")


def main() -> None:
    for name, (base, tokens) in [*SYNTH.items(), *SYNTH_PLAIN.items()]:
        out = REF / "models" / name
        tokenizer = AutoTokenizer.from_pretrained(REF / "models" / base)
        if name in SYNTH_PLAIN:
            tokenizer.add_tokens(tokens)
        else:
            tokenizer.add_special_tokens({"additional_special_tokens": tokens})
        tokenizer.save_pretrained(out)
        (out / "config.json").write_text((REF / "models" / base / "config.json").read_text())
        print(f"{out}: {base} + {tokens}")
    tekken_v11()


if __name__ == "__main__":
    main()
