#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/*.json.gz``: whole requests replayed through
vLLM 0.33.0's own serving code, for ``tests/serving.rs``.

For every parser configuration of the parser corpora (``scripts/corpus/*.json``,
the tokenizers and options ``gen_fixtures.py`` uses; one entry per distinct
reasoning/tool/model), its first ``MAX_OUTPUTS`` outputs and every case marked
``"serving": true``, every request variant (tools with ``tool_choice``
absent / ``none`` / ``required`` / named, no tools, ``parallel_tool_calls:
false``, ``include_reasoning: false``) and every prompt scenario (the
corpus' prompt end; a chat rendered with the tokenizer's template; a user
message and an earlier turn quoting the reasoning markers; thinking turned off
by ``enable_thinking=False``; ``continue_final_message``), this records what
vLLM's serving layer does:

* the request after ``Parser.adjust_request`` as ``OnlineRenderer`` calls it
  (``set_prompt_token_ids`` first; ``should_adjust_request``):
  ``skip_special_tokens``, ``spaces_between_special_tokens``, the structured
  outputs kind (``json`` with its schema, or ``structural_tag``), or the error;
  and the engine request's ``reasoning_ended``
  (``ChatCompletionRequest.resolve_reasoning_ended`` with a fresh parser, as
  ``OpenAIServingChat`` and the render endpoint call it after rendering,
  whether or not the request was adjusted);
* the message of the non-streaming path (``set_prompt_token_ids``, ``parse``,
  ``assemble_chat_message_fields``, ``resolve_finish_reason``);
* the message of the streaming path (``ChatStreamProcessor.step`` token by
  token with the prompt's token ids, deltas merged as a client merges them).

Entries whose config has a ``response_template`` (the ``hf`` / ``beam``
parsers) also record the prompt as those parsers decode it (``prompt_text``,
``vllm.parser.response_template._decode``): they read the text, not the
token ids. So do entries of a Muse reasoning parser, whose ``is_reasoning_end``
decodes the prompt with the tokenizer's plain ``decode``.

A corpus may add prompt scenarios of its own (``"scenarios"``, in the form of
``SCENARIOS`` below), e.g. an assistant message continued inside a tool call.

Entries of a ``mistral`` parser also record what ``MistralParser`` reads from
the tokenizer: the Mistral tokens its vocabulary lacks (``absent_tokens``) and,
for a mistral-common tokenizer (``"tokenizer_mode": "mistral"``), its version
and ``supports_grammar`` (``mistral_tokenizer``). A corpus with ``"serving":
false`` is skipped (its note says why).

When vLLM's whole and streaming messages differ, ``expected`` follows the
parser corpus' decision for that output (its ``follow``, as ``gen_fixtures.py``
records it); where the corpus has none (the request variants and prompt
scenarios added here, e.g. a legacy reasoning parser whose whole-text ``parse``
ignores the prompt that streaming reads with ``is_reasoning_end``), ``follow``
is ``"either"`` and both of vLLM's answers are accepted. Both are recorded.

Run from the crate directory with the reference environment
(``../shared/peers/setup.sh``); the synthetic tokenizers
(``scripts/synth_tokenizers.py``) are built into it when missing::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_serving_corpus.py [family ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0, offline tokenizers)

from vllm.entrypoints.openai.chat_completion.message_assembly import (  # noqa: E402
    assemble_chat_message_fields,
)
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionRequest,
)
from vllm.entrypoints.openai.chat_completion.stream_processor import (  # noqa: E402
    ChatStreamProcessor,
)
from vllm.entrypoints.serve.utils.tool_calls_utils import (  # noqa: E402
    resolve_finish_reason,
)
from vllm.parser.parser_manager import ParserManager  # noqa: E402
from vllm.parser.response_template import _decode  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving"
MAX_OUTPUTS = 3
# The reasoning parsers that read the prompt decoded (``MuseReasoningParser``).
MUSE_REASONING = ("muse", "musespark1x", "muse_glimmer")

VARIANTS = {
    "auto": {},
    "none": {"tool_choice": "none"},
    "required": {"tool_choice": "required"},
    "named": {"tool_choice": "NAMED"},
    "no_tools": {"tools": None},
    "single_call": {"parallel_tool_calls": False},
    "hide_reasoning": {"include_reasoning": False},
}

SCENARIOS = {
    "config": None,
    "chat": {"messages": [{"role": "user", "content": "hi"}]},
    "quoted": {
        "messages": [
            {"role": "user", "content": "What does </think> mean? <think>x</think>"},
            {"role": "assistant", "content": "A tag </think> that ends reasoning."},
            {"role": "user", "content": "And </think> here?"},
        ]
    },
    "thinking_off": {
        "messages": [{"role": "user", "content": "hi"}],
        "kwargs": {"enable_thinking": False, "thinking": False},
    },
    "continue": {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "<think>partial"},
        ],
        "continue": True,
    },
}


def render(tokenizer, config, scenario, tools):
    """Prompt token ids and the kwargs the request carries."""
    kwargs = dict(config["chat_template_kwargs"])
    if scenario is None:
        return gf.encode(tokenizer, config["prompt"]), kwargs
    kwargs.update(scenario.get("kwargs", {}))
    try:
        ids = tokenizer.apply_chat_template(
            scenario["messages"],
            tools=tools or None,
            add_generation_prompt=not scenario.get("continue"),
            continue_final_message=bool(scenario.get("continue")),
            tokenize=True,
            **kwargs,
        )
        if hasattr(ids, "keys"):  # a BatchEncoding
            ids = ids["input_ids"]
        return list(ids), kwargs
    except Exception:
        return None, kwargs


def request_body(tools, variant, kwargs):
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "chat_template_kwargs": kwargs,
    }
    spec = dict(VARIANTS[variant])
    if spec.get("tools", True) is not None and tools:
        body["tools"] = tools
    spec.pop("tools", None)
    if spec.get("tool_choice") == "NAMED":
        spec["tool_choice"] = {"type": "function",
                               "function": {"name": tools[0]["function"]["name"]}}
    body.update(spec)
    return body


def with_kwargs(config, body):
    """The config with the request's chat_template_kwargs: the server builds
    each parser with the request's effective kwargs (``_make_parser``)."""
    return {**config, "chat_template_kwargs": body.get("chat_template_kwargs") or {}}


def adjusted(parser_cls, tokenizer, config, body, prompt_ids):
    """OnlineRenderer's adjust_request call on a fresh request."""
    config = with_kwargs(config, body)
    try:
        request = ChatCompletionRequest.model_validate(body)
    except Exception as e:  # noqa: BLE001
        return None, {"invalid": str(e).splitlines()[0]}
    if (parser_cls.tool_parser_cls is None and request.tool_choice not in (None, "none")
            and not gf.is_mistral_tokenizer(tokenizer) and config["model_type"] != "gpt_oss"):
        # OnlineRenderer: tool_choice without a tool parser (vLLM's messages;
        # not checked with a mistral-common tokenizer, nor under Harmony).
        if request.tool_choice == "auto":
            return None, {"error": '"auto" tool choice requires '
                          "--enable-auto-tool-choice and --tool-call-parser to be set"}
        if isinstance(request.tool_choice, str):
            desc = f'"{request.tool_choice}"'
        else:
            desc = f'function "{request.tool_choice.function.name}"'
        return None, {"error": f"tool_choice={desc} requires --tool-call-parser to be set"}
    parser = gf.make_parser(parser_cls, tokenizer, config, request)
    should = (
        parser_cls.always_adjust_request
        or parser_cls.reasoning_parser_cls is not None
        or request.tool_choice != "none"
    )
    try:
        if should:
            parser.set_prompt_token_ids(prompt_ids)
            request = parser.adjust_request(request)
    except Exception as e:  # noqa: BLE001
        # create_error_response: str(exc) and the exception's parameter.
        return None, {"error": str(e), "param": getattr(e, "parameter", None)}
    # The engine request's reasoning_ended (OpenAIServingChat's
    # _engine_reasoning_kwargs, the render endpoint alike): resolved after
    # adjust_request, adjusted or not, with a fresh parser (_make_parser).
    reasoning_ended = request.resolve_reasoning_ended(
        gf.make_parser(parser_cls, tokenizer, config, request), prompt_ids)
    so = request.structured_outputs
    kind = None
    if so is not None:
        if so.structural_tag is not None:
            kind = {"structural_tag": True}
        elif so.json is not None:
            kind = {"json": so.json if not isinstance(so.json, str) else json.loads(so.json)}
    return request, {
        "skip_special_tokens": request.skip_special_tokens,
        "spaces_between_special_tokens": request.spaces_between_special_tokens,
        "structured_outputs": kind,
        "reasoning_ended": reasoning_ended,
    }


def whole_message(parser_cls, parser, request, tokenizer, output, auto):
    """The non-streaming message (``parse``, ``assemble_chat_message_fields``,
    ``resolve_finish_reason``) of a parser whose prompt is set; ``auto``:
    ``--enable-auto-tool-choice``."""
    output_ids = gf.encode(tokenizer, output)
    reasoning, content, calls = parser.parse(
        output, request, enable_auto_tools=auto, model_output_token_ids=output_ids)
    fields = assemble_chat_message_fields(
        request, reasoning, content, calls, enable_auto_tools=auto, parser_cls=parser_cls)
    calls = [{"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
             for tc in fields.tool_calls]
    message = gf.normalise(fields.content, fields.reasoning, calls)
    message["finish_reason"] = resolve_finish_reason("stop", request, bool(fields.tool_calls))
    return message


def streamed_message(parser_cls, parser, request, chunks, prompt_ids, auto):
    """The streamed message (``ChatStreamProcessor.step`` per chunk, deltas
    merged as a client merges them)."""
    processor = ChatStreamProcessor(request, parser, enable_auto_tools=auto,
                                    parser_cls=parser_cls)
    content, reasoning, calls, finish = "", "", {}, None
    for i, chunk in enumerate(chunks):
        last = i + 1 == len(chunks)
        step = processor.step(chunk["text"], list(chunk["ids"]), "stop" if last else None,
                              prompt_ids)
        finish = step.finish_reason or finish
        delta = step.delta
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
    message = gf.normalise(content, reasoning, [calls[k] for k in sorted(calls)])
    message["finish_reason"] = finish
    return message


def run_whole(parser_cls, tokenizer, config, body, prompt_ids, output):
    config = with_kwargs(config, body)
    request = ChatCompletionRequest.model_validate(body)
    parser = gf.make_parser(parser_cls, tokenizer, config, request)
    parser.set_prompt_token_ids(prompt_ids)
    # --enable-auto-tool-choice with a tool parser
    return whole_message(parser_cls, parser, request, tokenizer, output, config["tool"] is not None)


def run_streaming(parser_cls, tokenizer, config, body, prompt_ids, chunks):
    config = with_kwargs(config, body)
    request = ChatCompletionRequest.model_validate(body)
    parser = gf.make_parser(parser_cls, tokenizer, config, request)
    return streamed_message(parser_cls, parser, request, chunks, prompt_ids,
                            config["tool"] is not None)


# Ordinary tokens a reasoning parser's ``is_reasoning_end`` matches as part of
# a marker: Olmo3's ``</think>`` (``Ġ</`` or ``</``, then ``think``, ``>``);
# Kimi K3's think channel name (``<|open|>think<|sep|>``).
SPELLED_PIECES = {"olmo3": ("Ġ</", "</", "think", ">"), "kimi_k3": ("think",)}


def marker_vocab(tokenizer, config) -> dict:
    """The tokenizer's added tokens (every special marker), text → id, and the
    ordinary tokens a parser of ``config`` matches as a marker."""
    vocab = {t: i for t, i in tokenizer.get_added_vocab().items() if len(t) <= 64}
    pieces = SPELLED_PIECES.get(config["reasoning"], ())
    if pieces:
        full = tokenizer.get_vocab()
        vocab.update({t: full[t] for t in pieces if t in full})
    return vocab


def mistral_tokenizer_facts(tokenizer, config) -> dict | None:
    """For a config with a ``mistral`` parser, what vLLM's ``MistralParser``
    reads from the tokenizer besides the prompt's markers: the Mistral tokens
    the vocabulary lacks (``absent_tokens``) and, for a mistral-common
    tokenizer, its ``version`` and ``supports_grammar``."""
    if "mistral" not in (config["tool"], config["reasoning"]):
        return None
    vocab = tokenizer.get_vocab()
    facts = {"absent_tokens": [t for t in ("[ARGS]", "[THINK]") if t not in vocab]}
    if gf.is_mistral_tokenizer(tokenizer):
        facts["mistral_tokenizer"] = {"version": int(tokenizer.version),
                                      "supports_grammar": bool(tokenizer.supports_grammar)}
    return facts


def generate(family: str) -> int:
    corpus = json.loads((gf.CORPUS / f"{family}.json").read_text())
    if corpus.get("serving") is False:
        # The corpus says why vLLM's serving path cannot replay it.
        print(f"{family}: not replayed through the serving layer", file=sys.stderr)
        return 0
    seen, results = set(), []
    for index, raw in enumerate(corpus["configs"]):
        config = gf.config_defaults(raw)
        key = (config["tool"], config["reasoning"], config["model"], config["model_type"],
               json.dumps(config["chat_template_kwargs"], sort_keys=True))
        if key in seen or not gf.model_dir(config["model"]).exists():
            continue
        seen.add(key)
        if any(str(config[k] or "").startswith("cohere_command") for k in ("tool", "reasoning")):
            gf.ensure_cohere_melody()
        tokenizer = gf.tokenizer_for(config["model"], config["rename_tokens"],
                                     config["response_template"],
                                     config.get("tokenizer_mode", "auto"))
        mistral = mistral_tokenizer_facts(tokenizer, config)
        try:
            parser_cls = ParserManager.get_parser(
                tool_parser_name=config["tool"], reasoning_parser_name=config["reasoning"],
                enable_auto_tools=config["tool"] is not None, model_name=config["model"],
                # The server's rule: gpt-oss models get vLLM's HarmonyParser.
                is_harmony=config["model_type"] == "gpt_oss", tokenizer=tokenizer)
        except Exception as e:  # noqa: BLE001
            print(f"{family}: {key}: {e}", file=sys.stderr)
            continue
        tools = corpus.get("tools", [])
        # The first MAX_OUTPUTS cases, and every case marked ``"serving": true``.
        cases = [c for i, c in enumerate(corpus["cases"])
                 if i < MAX_OUTPUTS or c.get("serving")]
        outputs = [c["output"] for c in cases]
        # The parser corpus' decision where vLLM's modes disagree: a case's own
        # ``follow`` only for the configs it runs under (``"configs"``); the
        # outputs are replayed under every config.
        decided = {c["output"]: config["follow"] or
                   (c.get("follow") if index in c.get("configs", [index]) else None)
                   for c in cases}
        if tools:
            name = tools[0]["function"]["name"]
            outputs.append(f'[{{"name": "{name}", "parameters": {{"a": 1}}}}]')
            outputs.append('{"a": 1}')
        vocab = marker_vocab(tokenizer, config)
        for scenario_name, scenario in {**SCENARIOS, **corpus.get("scenarios", {})}.items():
            prompt_ids, kwargs = render(tokenizer, config, scenario, tools)
            if prompt_ids is None:
                continue
            variants = VARIANTS if scenario_name == "config" else ["auto"]
            for variant in variants:
                if not tools and variant not in ("auto", "hide_reasoning"):
                    continue
                body = request_body(tools, variant, kwargs)
                request, adjustment = adjusted(parser_cls, tokenizer, config, body, prompt_ids)
                case_outputs = outputs if request is not None else []
                entry = {
                    "config": config, "scenario": scenario_name, "variant": variant,
                    "request": body, "prompt_token_ids": prompt_ids,
                    "adjusted": adjustment, "cases": [],
                }
                for output in case_outputs:
                    chunks = gf.token_chunks(tokenizer, output)
                    if not chunks and output:
                        continue
                    try:
                        whole = run_whole(parser_cls, tokenizer, config, body, prompt_ids, output)
                        streaming = run_streaming(parser_cls, tokenizer, config, body,
                                                  prompt_ids, chunks)
                    except Exception as e:  # noqa: BLE001
                        entry["cases"].append({"output": output, "raises": str(e)[:200]})
                        continue
                    follow = "whole"
                    if whole != streaming:
                        # The corpus decided for its own prompt only.
                        follow = (decided.get(output) if scenario_name == "config"
                                  and variant in ("auto", "hide_reasoning") else None) or "either"
                    entry["cases"].append({
                        "output": output, "chunks": chunks,
                        "expected": streaming if follow == "streaming" else whole,
                        "vllm_whole": whole, "vllm_streaming": streaming, "follow": follow,
                    })
                if config["response_template"]:
                    # The prompt as the response-template parsers read it
                    # (``is_reasoning_end``, ``set_prompt_token_ids``).
                    entry["prompt_text"] = _decode(tokenizer, prompt_ids)
                elif config["reasoning"] in MUSE_REASONING:
                    # ``MuseReasoningParser.is_reasoning_end`` decodes it so.
                    entry["prompt_text"] = tokenizer.decode(prompt_ids)
                # The marker tokens the prompt holds; any other
                # token a parser asks about at start-up exists (vLLM's
                # start-up check passed), under an id no prompt holds.
                in_prompt = set(prompt_ids)
                entry["vocab"] = {t: i for t, i in vocab.items() if i in in_prompt}
                if mistral is not None:
                    entry.update(mistral)
                results.append(entry)
    if not results:
        # Every config skipped: its model directories are missing from $REF
        # (e.g. the synthetic tokenizers) or its parsers failed to build.
        # Writing would replace the committed fixture with an empty one.
        print(f"{family}: no requests replayed, fixture left as it was (are the synthetic "
              "tokenizers built? scripts/synth_tokenizers.py)", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    header = {"generated_by": "scripts/gen_serving_corpus.py",
              "vllm_version": gf.VLLM_VERSION, "family": family}
    old = OUT / f"{family}.json"
    if old.exists():
        old.unlink()
    gf.write_jsonl_gz(OUT / f"{family}.json.gz", header, results)
    print(f"{family}: {len(results)} requests, "
          f"{sum(len(r['cases']) for r in results)} outputs", file=sys.stderr)
    return 0


def main() -> int:
    families = sys.argv[1:] or sorted(p.stem for p in gf.CORPUS.glob("*.json"))
    return max((generate(f) for f in families), default=0)


if __name__ == "__main__":
    sys.exit(main())
