#!/usr/bin/env python3
"""Generate the chat-template parity fixtures from the reference (vLLM 0.33.0 + transformers).

Every case in tests/fixtures/cases.json is rendered through vLLM's own request
model (`ChatCompletionRequest`), its own preprocessing (`build_chat_params`,
`resolve_chat_template_content_format`, `parse_chat_messages`) and
`safe_apply_chat_template` (which calls transformers' `apply_chat_template`),
for each template of templates/ (text only, with the special tokens of
SPECIAL_TOKENS below) and each model directory of models/ (text and token ids).
`strftime_now` is pinned to PINNED_NOW so the output does not depend on the date.

Usage (from the repository root):
    HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/gen_parity_fixtures.py $REF
where REF=$HOME/.cache/vllm-reference. Writes vllm-chat/tests/fixtures/parity.json.gz.
"""
import gzip
import io
import json
import os
import sys
import types

REF = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/vllm-reference")
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "tests", "fixtures")
MODELS = ["qwen3", "llama3", "llama3_1", "deepseek_v3", "gemma3", "gptoss"]
# Special tokens given to the bare templates of templates/ (they have no tokenizer).
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
# vllm-parser's generators hold what every generator shares: the pinned clock of chat
# templates (`strftime_now`, patched when gen_fixtures is imported) and, for
# gen_native_fixtures, the pinned cohere-melody and the synthetic tokenizers. Appended to
# the path, so that this directory's modules come first, and told the same reference
# directory.
os.environ["VLLM_REFERENCE"] = REF
sys.path.append(os.path.join(HERE, "..", "..", "vllm-parser", "scripts"))
from gen_fixtures import PINNED_NOW  # noqa: E402

from transformers import AutoTokenizer  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.renderers.chat_utils.chat_message import parse_chat_messages  # noqa: E402
from vllm.renderers.hf import (  # noqa: E402
    resolve_chat_template_content_format,
    safe_apply_chat_template,
)

MODEL_CONFIG = types.SimpleNamespace(
    multimodal_config=None,
    enable_prompt_embeds=False,
    revision=None,
    code_revision=None,
    tokenizer_revision=None,
    trust_remote_code=False,
    tokenizer=None,
    model=None,
    hf_config=types.SimpleNamespace(model_type="none"),
    allowed_local_media_path="",
    allowed_media_domains=None,
)


def render(tokenizer, template, case, with_ids):
    """Render one case as vLLM's OnlineRenderer.preprocess_chat does."""
    try:
        req = ChatCompletionRequest(**{"model": "m", **case})
        tool_dicts = None if req.tools is None else [t.model_dump() for t in req.tools]
        params = req.build_chat_params(template, "auto").with_defaults(
            {"tools": tool_dicts, "tokenize": False}
        )
        fmt = resolve_chat_template_content_format(
            params.chat_template,
            params.chat_template_kwargs.get("tools"),
            "auto",
            tokenizer,
            model_config=MODEL_CONFIG,
        )
        conversation, _, _ = parse_chat_messages(req.messages, MODEL_CONFIG, content_format=fmt)
        text = safe_apply_chat_template(
            MODEL_CONFIG, tokenizer, conversation, **params.get_apply_chat_template_kwargs()
        )
    except Exception as e:  # the reference rejects the case
        return {"error": f"{type(e).__name__}: {e}"}
    out = {"format": fmt, "text": text}
    if with_ids:
        out["ids"] = tokenizer.encode(text, add_special_tokens=False)
    return out


def main():
    cases = json.load(open(os.path.join(FIXTURES, "cases.json")))
    base_tok = AutoTokenizer.from_pretrained(os.path.join(REF, "models", "qwen3"))
    # Bare templates: the tokenizer only supplies special tokens; pin them.
    base_tok.bos_token, base_tok.eos_token = SPECIAL_TOKENS["bos_token"], SPECIAL_TOKENS["eos_token"]
    base_tok.unk_token, base_tok.pad_token = SPECIAL_TOKENS["unk_token"], SPECIAL_TOKENS["pad_token"]
    special = dict(base_tok.special_tokens_map)
    result = {"pinned_now": PINNED_NOW.isoformat(), "special_tokens": special, "templates": {}, "models": {}}
    tdir = os.path.join(REF, "templates")
    for name in sorted(os.listdir(tdir)):
        if not name.endswith(".jinja"):
            continue
        template = open(os.path.join(tdir, name), encoding="utf-8").read()
        result["templates"][name] = {c: render(base_tok, template, case, False) for c, case in cases.items()}
        print(name, file=sys.stderr)
    for model in MODELS:
        tok = AutoTokenizer.from_pretrained(os.path.join(REF, "models", model))
        result["models"][model] = {c: render(tok, None, case, True) for c, case in cases.items()}
        print(model, file=sys.stderr)
    # No timestamp or file name in the gzip header: a re-run writes the same bytes.
    with open(os.path.join(FIXTURES, "parity.json.gz"), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
            io.TextIOWrapper(gz, encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
