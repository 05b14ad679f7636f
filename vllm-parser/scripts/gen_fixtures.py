#!/usr/bin/env python3
"""Generate vllm-parser's golden fixtures from vLLM 0.33.0's own Python parsers.

For every corpus file ``scripts/corpus/<family>.json`` this runs vLLM's composed
``Parser`` (``vllm.parser.parser_manager.ParserManager.get_parser``, the object the
OpenAI server holds per request) over every case under every configuration:

* whole text: ``parser.parse(output, request, enable_auto_tools=True)`` then the
  server's ``assemble_chat_message_fields`` (what a non-streaming response holds);
* streaming: a fresh parser driven with ``parse_delta`` one token at a time, the way
  ``ChatStreamProcessor.step`` drives it (token-aligned deltas from an incremental
  decode of the output's token ids, ``finished=True`` on the last one), deltas merged
  into one message (content and reasoning concatenated, tool calls merged by index).

Both results, normalised the way a client compares messages (``""`` and ``None`` are
the same; whitespace-only content next to tool calls is ``None``), are written to
``tests/fixtures/<family>.json`` together with the token-aligned chunks, so
``cargo test`` can replay them with nothing but cargo. ``expected`` is the whole-text
result; when vLLM's own streaming and whole-text results disagree, the case must say
which one we follow (``"follow": "whole"`` or ``"follow": "streaming"``) or the
generator stops: the choice is recorded in the corpus, never made silently.

Corpus file format (JSON)::

    {
      "configs": [ {"tool": "hermes", "reasoning": null, "model": "qwen3",
                    "chat_template_kwargs": {}, "prompt": "<|im_start|>assistant\\n"} ],
      "tools":   [ <OpenAI tool objects: {"type": "function", "function": {...}}> ],
      "cases":   [ {"name": "normal", "output": "...", "follow": "whole"} ]
    }

``model`` names a tokenizer directory under ``$REF/models`` (default qwen3);
``prompt`` is the end of the rendered prompt (vLLM decides from it whether reasoning
is already over, e.g. Qwen3's ``enable_thinking=False`` template ends with an empty
think block). ``model_type`` (e.g. ``"kimi_k2"``) gives the parser a model config
of that type, which switches vLLM to deterministic tool-call ids; ids that are not
random are then part of the expected result; ``"gpt_oss"`` selects vLLM's
``HarmonyParser``, as the server does for gpt-oss models. ``rename_tokens`` (``{"<|reserved_special_token_5|>":
"<|python_tag|>"}``) gives a model's unused reserved tokens a format's marker
text, for markers no tokenizer in the reference env has. ``response_template`` (a
checkpoint's ``response_template`` dict, which the ``hf`` and ``beam`` parsers read
from ``tokenizer_config.json``) gives a copy of the tokenizer carrying it. ``"tokenizer_mode":
"mistral"`` loads the model directory with vLLM's mistral-common ``MistralTokenizer``
(as ``--tokenizer-mode mistral`` does); its control tokens (``[TOOL_CALLS]``, …) in an
output are encoded as those tokens. A config with a ``mistral`` parser records the
format vLLM's ``MistralParser`` picked from the tokenizer as ``mistral_format``
(``pre_v11_calls``, ``reasoning``: ``special_token`` / ``text`` / ``none``). A config may carry ``"follow"`` too, overriding the cases' choice when
the config itself is why vLLM's modes disagree. A case may override ``tools`` and
restrict itself to some configs with ``"configs": [i, ...]``; ``"serving": true``
also replays it through the serving layer (``gen_serving_corpus.py`` takes a
corpus' first three cases and these).

Pinned to the reference environment built by ``../shared/peers/setup.sh``
(vLLM 0.33.0). vLLM's ``cohere_command3`` / ``cohere_command4`` parsers run the
``cohere_melody`` package (``pip install 'cohere-melody>=0.14.0'``), which that
environment lacks: the first corpus that selects them installs the pinned
``cohere-melody==0.15.3`` into the reference venv (once; it says so). Run from
the crate directory::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_fixtures.py [family ...]

With no family, every corpus file is regenerated.
"""

from __future__ import annotations

import datetime
import gzip
import io
import json
import logging
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

REF = Path(os.environ.get("VLLM_REFERENCE", Path.home() / ".cache/vllm-reference"))
CRATE = Path(__file__).resolve().parent.parent
CORPUS = CRATE / "scripts" / "corpus"
FIXTURES = CRATE / "tests" / "fixtures"
VLLM_VERSION = "0.33.0"

import vllm  # noqa: E402
import transformers.utils.chat_template_utils as hf_chat  # noqa: E402

# Chat templates that print the date (`strftime_now`, e.g. gpt-oss's "Current date:")
# render one pinned instant, so that a re-run writes the same prompts.
PINNED_NOW = datetime.datetime(2026, 1, 15, 10, 30, 45)


class _PinnedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return PINNED_NOW


hf_chat.datetime = _PinnedDatetime
from vllm.entrypoints.openai.chat_completion.message_assembly import (  # noqa: E402
    assemble_chat_message_fields,
)
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionRequest,
)
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.parser.mistral import MistralParser  # noqa: E402
from vllm.tokenizers import get_tokenizer  # noqa: E402
from vllm.utils.mistral import is_mistral_tokenizer  # noqa: E402

# vLLM's parsers log every malformed call with a traceback; the fixtures record
# the outcome, so keep the generator's output to its own report.
logging.disable(logging.CRITICAL)

if vllm.__version__ != VLLM_VERSION:
    sys.exit(f"reference env has vLLM {vllm.__version__}, fixtures pin {VLLM_VERSION}")

# vLLM 0.33.0 asks for ``cohere-melody>=0.14.0`` (vllm/parser/cohere_command.py);
# pinned to the release the fixtures were generated with.
COHERE_MELODY = "cohere-melody==0.15.3"

_TOKENIZERS: dict[tuple, object] = {}


def write_jsonl_gz(path: Path, header: dict, records: list[dict]) -> None:
    """A fixture as gzip JSON lines (the header, then one record per line), written
    reproducibly (no timestamp in the gzip header) for the Rust tests."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = gzip.GzipFile(path, "wb", compresslevel=9, mtime=0)
    with io.TextIOWrapper(raw, encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def ensure_cohere_melody() -> None:
    """Install the pinned ``cohere_melody`` into this (reference) interpreter's
    environment if it is missing; vLLM's Cohere Command parsers import it."""
    import importlib.metadata
    import importlib.util
    import subprocess

    if importlib.util.find_spec("cohere_melody") is not None:
        installed = importlib.metadata.version("cohere-melody")
        if f"cohere-melody=={installed}" != COHERE_MELODY:
            sys.exit(f"reference env has cohere-melody {installed}, fixtures pin {COHERE_MELODY}")
        return
    print(f"installing {COHERE_MELODY} into {sys.prefix} (vLLM's Cohere parsers need it)",
          file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", COHERE_MELODY],
                   check=True)
    importlib.invalidate_caches()
_RENAMED_DIRS: list[tempfile.TemporaryDirectory] = []


def model_dir(model: str) -> Path:
    """``$REF/models/<model>``; the synthetic tokenizers (``*_synth``) are built
    there first if missing (``synth_tokenizers.py``), so that a fresh reference
    environment regenerates every fixture with one command."""
    path = REF / "models" / model
    if model.endswith("_synth") and not path.exists():
        import synth_tokenizers

        synth_tokenizers.main()
    return path


def tokenizer_for(model: str, rename_tokens: dict | None = None,
                  response_template: dict | None = None, tokenizer_mode: str = "auto"):
    """The tokenizer of ``$REF/models/<model>``; ``rename_tokens`` (old -> new
    special-token text) gives a copy whose unused reserved tokens carry a format's
    markers, for formats whose model tokenizer is not in the reference env (e.g.
    Llama 3.1's ``<|python_tag|>`` is ``<|reserved_special_token_5|>`` there);
    ``response_template`` is written into the copy's ``tokenizer_config.json``."""
    key = (model, tuple(sorted((rename_tokens or {}).items())),
           json.dumps(response_template, sort_keys=True), tokenizer_mode)
    if key not in _TOKENIZERS:
        path = model_dir(model)
        if rename_tokens or response_template:
            tmp = tempfile.TemporaryDirectory(prefix=f"tok-{model}-")
            _RENAMED_DIRS.append(tmp)
            for file in path.iterdir():
                text = file.read_text()
                for old, new in (rename_tokens or {}).items():
                    for ascii_only in (True, False):
                        text = text.replace(
                            json.dumps(old, ensure_ascii=ascii_only),
                            json.dumps(new, ensure_ascii=ascii_only),
                        )
                (Path(tmp.name) / file.name).write_text(text)
            path = Path(tmp.name)
            if response_template:
                config_file = path / "tokenizer_config.json"
                tokenizer_config = json.loads(config_file.read_text())
                tokenizer_config["response_template"] = response_template
                config_file.write_text(json.dumps(tokenizer_config))
        _TOKENIZERS[key] = get_tokenizer(str(path), tokenizer_mode=tokenizer_mode)
    return _TOKENIZERS[key]


# Mistral's control tokens, which a MistralTokenizer encodes as text when given
# as text: an output's markers are encoded as the tokens the model emits.
MISTRAL_CONTROL = ("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]")


def encode(tokenizer, text: str) -> list[int]:
    """The token ids of ``text`` as the model emits it."""
    if not is_mistral_tokenizer(tokenizer):
        return tokenizer.encode(text, add_special_tokens=False)
    vocab = tokenizer.get_vocab()
    controls = [t for t in MISTRAL_CONTROL if t in vocab]
    ids: list[int] = []
    for piece in re.split("(" + "|".join(map(re.escape, controls)) + ")", text):
        if piece in controls:
            ids.append(vocab[piece])
        elif piece:
            ids.extend(tokenizer.encode(piece, add_special_tokens=False))
    return ids


def mistral_format(tokenizer, config) -> dict | None:
    """What vLLM's MistralParser picked from the tokenizer, for a config that
    uses it."""
    if "mistral" not in (config.get("tool"), config.get("reasoning")):
        return None
    parser = MistralParser(tokenizer, [])
    return {"pre_v11_calls": parser._is_pre_v11, "reasoning": parser._reasoning_encoding}


def token_chunks(tokenizer, text: str) -> list[dict]:
    """Token-aligned deltas as an incremental detokenizer produces them.

    A delta that would end in an incomplete UTF-8 character (U+FFFD) is held back
    and merged into the next one, like vLLM's detokenizer does.
    """
    ids = encode(tokenizer, text)
    chunks: list[dict] = []
    sent, pending = "", []
    for i, tid in enumerate(ids):
        pending.append(tid)
        decoded = tokenizer.decode(ids[: i + 1], skip_special_tokens=False)
        if decoded.endswith("\ufffd") and i + 1 < len(ids):
            continue
        chunks.append({"text": decoded[len(sent):], "ids": pending})
        sent, pending = decoded, []
    if "".join(c["text"] for c in chunks) != text:
        return []  # the tokenizer does not round-trip this text exactly
    return chunks


def make_request(tools: list[dict], chat_template_kwargs: dict) -> ChatCompletionRequest:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "chat_template_kwargs": chat_template_kwargs,
    }
    if tools:
        body["tools"] = tools
        body["tool_choice"] = "auto"
    return ChatCompletionRequest.model_validate(body)


def is_random_id(call_id: str) -> bool:
    """vLLM's random ids: ``chatcmpl-tool-<hex>`` (``make_tool_call_id``),
    xLAM's ``call_<index>_<random_uuid()>``, Hunyuan's ``call_<random_uuid()>`` and Mistral's 9 alphanumerics
    (``MistralToolCall.generate_random_id``)."""
    return (
        call_id.startswith("chatcmpl-tool-")
        or bool(re.fullmatch(r"call_\d+_[0-9a-f]{16}", call_id))
        or bool(re.fullmatch(r"call_[0-9a-f]{16}", call_id))  # Hunyuan A13B
        or bool(re.fullmatch(r"[A-Za-z0-9]{9}", call_id))
    )


def normalise(content, reasoning, tool_calls) -> dict:
    """A message as clients compare it: "" == None; ids only when deterministic."""
    calls = []
    for tc in tool_calls:
        call = {"name": tc["name"], "arguments": tc["arguments"] or ""}
        if tc.get("id") and not is_random_id(tc["id"]):
            call["id"] = tc["id"]
        calls.append(call)
    if calls and content is not None and content.strip() == "":
        content = None
    return {"content": content or None, "reasoning": reasoning or None, "tool_calls": calls}


def make_parser(parser_cls, tokenizer, config, request):
    """One per-request parser, built the way the server's ``_make_parser`` does."""
    kwargs = {"chat_template_kwargs": config["chat_template_kwargs"]}
    if config.get("architecture"):
        # What Cohere's parser class reads: ``model_config.architecture``.
        hf_config = SimpleNamespace(model_type=config["model_type"])
        kwargs["model_config"] = SimpleNamespace(
            hf_config=hf_config, hf_text_config=hf_config, hf_overrides=None,
            architecture=config["architecture"],
        )
    elif config["model_type"]:
        # Only what vLLM reads from the model config for parsing: the model type,
        # which selects Kimi-style tool-call ids (functions.NAME:IDX).
        hf_config = SimpleNamespace(model_type=config["model_type"])
        kwargs["model_config"] = SimpleNamespace(
            hf_config=hf_config, hf_text_config=hf_config, hf_overrides=None
        )
    return parser_cls(tokenizer, request.tools, **kwargs)


def run_whole(parser_cls, tokenizer, config, tools, output):
    request = make_request(tools, config["chat_template_kwargs"])
    parser = make_parser(parser_cls, tokenizer, config, request)
    prompt_ids = encode(tokenizer, config["prompt"])
    parser.set_prompt_token_ids(prompt_ids)
    output_ids = encode(tokenizer, output)
    reasoning, content, tool_calls = parser.parse(
        output, request, enable_auto_tools=True, model_output_token_ids=output_ids
    )
    fields = assemble_chat_message_fields(
        request, reasoning, content, tool_calls,
        enable_auto_tools=True, parser_cls=parser_cls,
    )
    calls = [
        {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
        for tc in fields.tool_calls
    ]
    return normalise(fields.content, fields.reasoning, calls)


def run_streaming(parser_cls, tokenizer, config, tools, chunks):
    request = make_request(tools, config["chat_template_kwargs"])
    parser = make_parser(parser_cls, tokenizer, config, request)
    prompt_ids = encode(tokenizer, config["prompt"])
    content, reasoning, calls = "", "", {}
    for i, chunk in enumerate(chunks):
        delta = parser.parse_delta(
            delta_text=chunk["text"],
            delta_token_ids=list(chunk["ids"]),
            request=request,
            prompt_token_ids=prompt_ids,
            finished=i + 1 == len(chunks),
        )
        if delta is None:
            continue
        content += delta.content or ""
        reasoning += delta.reasoning or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = call["id"] or tc.id
            if tc.function is not None:
                call["name"] += tc.function.name or ""
                call["arguments"] += tc.function.arguments or ""
    ordered = [calls[k] for k in sorted(calls)] if tools else []
    return normalise(content, reasoning, ordered)


def config_defaults(config: dict) -> dict:
    return {
        "tool": config.get("tool"),
        "reasoning": config.get("reasoning"),
        "model": config.get("model", "qwen3"),
        "chat_template_kwargs": config.get("chat_template_kwargs", {}),
        "prompt": config.get("prompt", ""),
        "follow": config.get("follow"),
        "model_type": config.get("model_type"),
        "rename_tokens": config.get("rename_tokens", {}),
        "response_template": config.get("response_template"),
        # Only where set, so that other fixtures keep their bytes.
        **({"tokenizer_mode": config["tokenizer_mode"]} if "tokenizer_mode" in config else {}),
    }


def generate(family: str) -> int:
    corpus = json.loads((CORPUS / f"{family}.json").read_text())
    configs = [config_defaults(c) for c in corpus["configs"]]
    results, disagreements = [], []
    if any(str(c[k] or "").startswith("cohere_command")
           for c in configs for k in ("tool", "reasoning")):
        ensure_cohere_melody()
    for config in configs:
        tokenizer = tokenizer_for(
            config["model"], config["rename_tokens"], config["response_template"],
            config.get("tokenizer_mode", "auto"),
        )
        if (found := mistral_format(tokenizer, config)) is not None:
            config["mistral_format"] = found
        parser_cls = ParserManager.get_parser(
            tool_parser_name=config["tool"],
            reasoning_parser_name=config["reasoning"],
            enable_auto_tools=True,
            model_name=config["model"],
            # The server's rule: gpt-oss models get vLLM's HarmonyParser.
            is_harmony=config["model_type"] == "gpt_oss",
            tokenizer=tokenizer,
        )
        for case in corpus["cases"]:
            if "configs" in case and configs.index(config) not in case["configs"]:
                continue
            tools = case.get("tools", corpus.get("tools", []))
            output = case["output"]
            chunks = token_chunks(tokenizer, output)
            if not chunks and output:
                sys.exit(f"{family}/{case['name']}: {config['model']} does not round-trip")
            whole = run_whole(parser_cls, tokenizer, config, tools, output)
            streaming = run_streaming(parser_cls, tokenizer, config, tools, chunks)
            follow = config["follow"] or case.get("follow")
            if whole != streaming and follow not in ("whole", "streaming"):
                disagreements.append((config, case["name"], whole, streaming))
            expected = streaming if follow == "streaming" else whole
            results.append({
                "config": config,
                "case": case["name"],
                "tools": tools,
                "output": output,
                "chunks": chunks,
                "expected": expected,
                "vllm_whole": whole,
                "vllm_streaming": streaming,
                "follow": follow or "whole",
            })
    for config, name, whole, streaming in disagreements:
        print(f"{family}/{name} [{config['tool']}/{config['reasoning']}]: vLLM streaming "
              f"and whole text disagree; add \"follow\" to the case\n"
              f"  whole:     {json.dumps(whole, ensure_ascii=False)}\n"
              f"  streaming: {json.dumps(streaming, ensure_ascii=False)}", file=sys.stderr)
    if disagreements:
        return 1
    header = {
        "generated_by": "scripts/gen_fixtures.py",
        "vllm_version": VLLM_VERSION,
        "family": family,
    }
    # One result per line keeps the files small and their diffs readable.
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in results]
    text = json.dumps(header, ensure_ascii=False)[:-1]
    text += ', "results": [\n' + ",\n".join(lines) + "\n]}\n"
    FIXTURES.mkdir(parents=True, exist_ok=True)
    out = FIXTURES / f"{family}.json"
    out.write_text(text)
    print(f"{out.relative_to(CRATE)}: {len(results)} results")
    return 0


def main() -> None:
    families = sys.argv[1:] or sorted(p.stem for p in CORPUS.glob("*.json"))
    sys.exit(max((generate(f) for f in families), default=0))


if __name__ == "__main__":
    main()
