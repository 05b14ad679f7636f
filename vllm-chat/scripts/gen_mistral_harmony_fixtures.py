#!/usr/bin/env python3
"""Generate the parity fixtures of vLLM 0.33.0's native Mistral and Harmony renderers.

Pinned reference: vLLM 0.33.0, mistral-common 1.13.1, transformers 5.x
(`MistralCommonBackend`), oss-harmony 0.0.11 (`openai_harmony`), as installed in
`$REF/venv` by `../shared/peers/setup.sh`.

* Harmony (gpt-oss): each case is a `ChatCompletionRequest` validated by vLLM's own
  pydantic model and rendered by `OnlineRenderer._make_request_with_harmony` itself
  (called on a stub holding only what the method reads: no model, no engine), with
  `should_include_tools` computed as `OnlineRenderer.render_chat` does. Environment
  variables (`VLLM_SYSTEM_START_DATE`, `VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS`) are set
  per case; vLLM reads them on every access. A case with no start date records the
  instant it was rendered (`now`), which the Rust test gives its clock.
* Mistral: each case goes through `MistralRenderer.render_messages` (vLLM's
  `safe_apply_chat_template`, `MistralTokenizer.apply_chat_template`, transformers'
  `MistralCommonBackend`, mistral-common's validator, normalizer and instruct
  tokenizer) after the request-level steps of `OnlineRenderer.render_chat` for Mistral
  tokenizers (`maybe_serialize_tool_calls`, `truncate_tool_call_ids`,
  `validate_request_params`) and `build_chat_params`; completion prompts through
  `MistralTokenizer.encode`. Errors record `str(exc)` as vLLM's error body carries it.
* Tokenizer property data: random and adversarial strings with the ids of
  mistral-common's `Tekkenizer.encode` / `SentencePieceTokenizer.encode` and of
  Harmony's `o200k_harmony` (`encode` with special tokens as text).

The SentencePiece cases need the `sentencepiece` package (mistral-common's optional
dependency, not in the reference venv): `pip install --target DIR sentencepiece==0.2.3`
and put DIR on PYTHONPATH; without it those cases are skipped with a warning.

Usage: HF_HUB_OFFLINE=1 $REF/venv/bin/python vllm-chat/scripts/gen_mistral_harmony_fixtures.py
Writes vllm-chat/tests/fixtures/{harmony,mistral,native_tokenize}.json.gz.
"""
import copy
import datetime
import gzip
import json
import os
import random
import shutil
import sys
import time
import types
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures")
TESTDATA = os.path.join(HERE, "..", "..", "testdata", "models")

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.renderers.online_renderer import OnlineRenderer  # noqa: E402
from vllm.entrypoints.openai.parser.harmony_utils import get_encoding  # noqa: E402


def error_text(exc):
    return str(exc)


# ---------------------------------------------------------------------------------
# Harmony
# ---------------------------------------------------------------------------------

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            },
            "required": ["city"],
        },
    },
}
COMPLEX = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.\nReturns a list of results.",
        "parameters": {
            "type": "object",
            "description": "Search options",
            "properties": {
                "query": {"type": "string", "title": "Query", "examples": ["rust", "vllm"]},
                "limit": {"type": "integer", "default": 10},
                "ratio": {"type": "number", "nullable": True},
                "safe": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "any": {},
                "multi": {"type": ["string", "integer"]},
                "mode": {
                    "description": "How to search",
                    "oneOf": [
                        {"type": "string", "enum": ["fast", "slow"], "description": "Named mode"},
                        {"type": "integer", "description": "Depth", "default": 2},
                    ],
                },
                "filter": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "after": {"type": "string", "default": "2020"}},
                    "required": ["site"],
                },
                "list": {"type": "array"},
            },
            "required": ["query"],
        },
    },
}
NO_PARAMS = {"type": "function", "function": {"name": "now"}}
EMPTY_PARAMS = {"type": "function", "function": {"name": "ping", "description": "Ping", "parameters": {}}}


def call(id_, name, args):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}


def harmony_cases():
    u = lambda t: {"role": "user", "content": t}  # noqa: E731
    a = lambda t, **k: {"role": "assistant", "content": t, **k}  # noqa: E731
    cases = [
        ("user_only", {"messages": [u("Hello")]}),
        ("system_user", {"messages": [{"role": "system", "content": "You are terse."}, u("Hi")]}),
        ("developer_user", {"messages": [{"role": "developer", "content": "Answer in French."}, u("Hi")]}),
        ("system_parts", {"messages": [{"role": "system", "content": [{"type": "text", "text": "Be "}, {"type": "text", "text": "kind."}]}, u("Hi")]}),
        ("empty_system", {"messages": [{"role": "system", "content": ""}, u("Hi")]}),
        ("multi_turn", {"messages": [u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")]}),
        ("reasoning_dropped_before_final", {"messages": [u("2+2?"), a("4", reasoning="Simple sum."), u("And 3+3?")]}),
        ("reasoning_kept_after_final", {"messages": [u("Hi"), a("Hello"), u("Weather in Paris?"), a(None, reasoning="Need the tool.", tool_calls=[call("call_1", "get_weather", '{"city": "Paris"}')]), {"role": "tool", "tool_call_id": "call_1", "content": "18C"}], "tools": [WEATHER]}),
        ("tools_tool_call_result", {"messages": [{"role": "system", "content": "Use tools."}, u("Weather?"), a(None, tool_calls=[call("c1", "get_weather", '{"city": "Paris"}')]), {"role": "tool", "tool_call_id": "c1", "content": "sunny"}], "tools": [WEATHER], "reasoning_effort": "high"}),
        ("complex_schema", {"messages": [u("Find rust")], "tools": [COMPLEX, NO_PARAMS, EMPTY_PARAMS]}),
        ("effort_low", {"messages": [u("Hi")], "reasoning_effort": "low"}),
        ("effort_medium", {"messages": [u("Hi")], "reasoning_effort": "medium"}),
        ("effort_none_rejected", {"messages": [u("Hi")], "reasoning_effort": "none"}),
        ("effort_minimal_rejected", {"messages": [u("Hi")], "reasoning_effort": "minimal"}),
        ("effort_map", {"messages": [u("Hi")], "reasoning_effort": "minimal"}, {"reasoning_effort_map": {"minimal": "low"}}),
        ("tool_choice_none_excluded", {"messages": [u("Hi")], "tools": [WEATHER], "tool_choice": "none"}, {"exclude_tools_when_tool_choice_none": True}),
        ("tool_choice_none_kept", {"messages": [u("Hi")], "tools": [WEATHER], "tool_choice": "none"}),
        ("tools_empty_list", {"messages": [u("Hi")], "tools": []}),
        ("system_instructions_env", {"messages": [{"role": "system", "content": "Be brief."}, u("Hi")]}, {"system_instructions": True}),
        ("system_instructions_env_mid", {"messages": [u("Hi"), {"role": "system", "content": "Now be verbose."}, u("Again")]}, {"system_instructions": True}),
        ("developer_mid_conversation", {"messages": [u("Hi"), a("Hey"), {"role": "developer", "content": "Switch to English."}, u("Bonjour")]}),
        ("system_mid_conversation", {"messages": [u("Hi"), {"role": "system", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]}, u("Go")]}),
        ("user_parts", {"messages": [{"role": "user", "content": [{"type": "text", "text": "Part one. "}, {"type": "text", "text": "Part two."}]}]}),
        ("unicode", {"messages": [{"role": "system", "content": "Réponds en 日本語 🙂"}, u("naïve café — ½ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 مرحبا\u200d👩‍👩‍👧")]}),
        ("special_token_text", {"messages": [u("<|start|>assistant<|channel|>final<|message|>hi<|end|>")]}),
        ("continue_final_message", {"messages": [u("Write a poem"), a("Roses are")], "continue_final_message": True, "add_generation_prompt": False}),
        ("empty_assistant_dropped", {"messages": [u("Hi"), a(""), u("Hello?")]}),
        ("unknown_tool_call_id", {"messages": [u("x"), a(None, tool_calls=[call("c1", "get_weather", "{}")]), {"role": "tool", "tool_call_id": "zzz", "content": "?"}], "tools": [WEATHER]}),
        ("tool_call_with_preamble_and_reasoning", {"messages": [u("Weather in Rome and Oslo?"), a("Let me check.", reasoning="Two calls.", tool_calls=[call("a", "get_weather", '{"city": "Rome"}'), call("b", "get_weather", '{"city": "Oslo"}')]), {"role": "tool", "tool_call_id": "a", "content": "warm"}, {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "cold"}]}], "tools": [WEATHER]}),
        ("tool_call_empty_arguments", {"messages": [u("time?"), a(None, tool_calls=[call("t", "now", "")])], "tools": [NO_PARAMS]}),
        ("assistant_last_final", {"messages": [u("Hi"), a("Hello", reasoning="greet")]}),
        ("whitespace_and_newlines", {"messages": [u("  leading\n\n\ttabs  \r\n trailing   ")]}),
        ("date_from_clock", {"messages": [u("What day is it?")]}, {"start_date": None}),
        ("developer_parts_with_image", {"messages": [{"role": "developer", "content": [{"type": "text", "text": "Look "}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}, {"type": "text", "text": "closely"}]}, u("ok")]}),
        ("long_text", {"messages": [u(" ".join(f"word{i}" for i in range(400)))]}),
    ]
    out = []
    for case in cases:
        name, body = case[0], case[1]
        opts = {"start_date": "2025-06-28", "system_instructions": False, "reasoning_effort_map": {}, "exclude_tools_when_tool_choice_none": False}
        if len(case) > 2:
            opts.update(case[2])
        out.append(render_harmony(name, body, opts))
    return out


def render_harmony(name, body, opts):
    if opts["start_date"] is None:
        os.environ.pop("VLLM_SYSTEM_START_DATE", None)
    else:
        os.environ["VLLM_SYSTEM_START_DATE"] = opts["start_date"]
    os.environ["VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS"] = "1" if opts["system_instructions"] else "0"
    stub = types.SimpleNamespace(
        renderer=None,
        reasoning_effort_map=opts["reasoning_effort_map"],
        supports_browsing=False,
        supports_code_interpreter=False,
    )
    case = {"name": name, "request": body, "options": opts}
    now = time.time()
    try:
        request = ChatCompletionRequest.model_validate(copy.deepcopy(body))
        include = not (request.tools is None or (request.tool_choice == "none" and opts["exclude_tools_when_tool_choice_none"]))
        _, inputs = OnlineRenderer._make_request_with_harmony(stub, request, include)
        case["token_ids"] = list(inputs[0]["prompt_token_ids"])
    except Exception as exc:  # noqa: BLE001
        case["error"] = error_text(exc)
        case["error_type"] = type(exc).__name__
    if opts["start_date"] is None:
        case["now"] = int(now)
    return case


# ---------------------------------------------------------------------------------
# Tokenizer property strings
# ---------------------------------------------------------------------------------

ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
    " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000", "\u2009", "\u200b",
    ".,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@~`", "éèêëàâäôöùûüçñßøåæœ", "ÀÉÎÕÜ",
    "日本語中文한국어", "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "ΑΒΓαβγδεζ",
    "مرحباשלוםनमस्ते", "🙂👍🏽👩‍👩‍👧🇫🇷", "\u0301\u0308\u0327", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "½²³¼⅓", "١٢٣۴۵",
    "'s't're've'm'll'd", "[INST][/INST]<s></s>[TOOL_CALLS][THINK]<|start|><|end|>",
]
ADVERSARIAL = [
    "", " ", "\n", "  \n  ", " " * 50, "\n" * 20, "\t \t \n", "a" * 300, "1234567890" * 10,
    "Hello, world!", " Hello", "Hello ", "hello\n\nworld", "don't you'll we've I'm",
    "DON'T YOU'LL", "<s>[INST] hi [/INST]", "[TOOL_CALLS][{\"name\": \"f\"}]", "<|start|>assistant<|message|>",
    "\u0000\u0001\u007f", "\ufeffBOM", "e\u0301e\u0301", "ﬁﬂ", "İstanbul", "ǅungla", "ᾼ",
    "𝟘𝟙𝟚", "x\u2028y\u2029z", "\u00a0\u00a0x", " \u3000 ", "tab\tsep\tvalues", "a/b/c\n/d",
    "http://example.com/a?b=c&d=e#f", "def f(x):\n    return x ** 2\n", "{\"a\": [1, 2.5e-3, null]}",
    "🙂" * 30, "👩‍👩‍👧‍👦", "한국어 텍스트", "中文文本测试", "עברית ועוד", "ترجمة عربية",
    "\r\r\n\n\r", "...!!!???", "' '", "''''", "   a   b   ", "\n \n \n", "A\u030a\u0327",
]


def random_strings(rng, count):
    out = []
    for _ in range(count):
        n = rng.randint(1, 60)
        parts = []
        for _ in range(n):
            alphabet = rng.choice(ALPHABETS)
            k = rng.randint(1, 6)
            parts.append("".join(rng.choice(alphabet) for _ in range(k)) if len(alphabet) > 4 else alphabet)
        out.append("".join(parts))
    return out


def tokenize_fixture():
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer as MC

    rng = random.Random(15)
    strings = ADVERSARIAL + random_strings(rng, 400)
    tekken = MC.from_file(os.path.join(SRC_TEKKEN)).instruct_tokenizer.tokenizer
    out = {"strings": strings, "tekken": [tekken.encode(s, bos=False, eos=False) for s in strings]}
    enc = get_encoding()
    out["o200k_harmony"] = [enc.encode(s, allowed_special=set(), disallowed_special=()) for s in strings]
    for key, name in (("spm_v7", "mistral_instruct_tokenizer_241114.model.v7"), ("spm_v1", "tokenizer.model.v1")):
        try:
            spm = MC.from_file(os.path.join(MC_DATA, name)).instruct_tokenizer.tokenizer
        except ImportError as exc:  # mistral-common needs the `sentencepiece` package
            print(f"no SentencePiece data: {exc}", file=sys.stderr)
            break
        out[key] = [spm.encode(s, bos=False, eos=False) for s in strings]
    return out


REF = os.environ.get("REF", os.path.expanduser("~/.cache/vllm-reference"))
MC_DATA = os.path.join(REF, "venv/lib/python3.11/site-packages/mistral_common/data")
SRC_TEKKEN = os.path.join(MC_DATA, "tekken_240911.json")
SRC_SPM = os.path.join(MC_DATA, "mistral_instruct_tokenizer_241114.model.v7")


def write(name, data):
    path = os.path.join(OUT, name)
    raw = json.dumps(data, ensure_ascii=False, indent=None, separators=(",", ":")).encode()
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(raw)
    print(f"wrote {path} ({len(raw)} bytes raw)")


def main():
    header = {"generator": "vllm-chat/scripts/gen_mistral_harmony_fixtures.py", "vllm": "0.33.0", "mistral_common": "1.13.1", "oss_harmony": "0.0.11"}
    which = sys.argv[1:] or ["harmony", "tokenize", "mistral"]
    if "harmony" in which:
        cases = harmony_cases()
        write("harmony.json.gz", {**header, "cases": cases})
    if "tokenize" in which:
        write("native_tokenize.json.gz", {**header, **tokenize_fixture()})
    if "mistral" in which:
        write("mistral.json.gz", {**header, "cases": mistral_cases()})


# ---------------------------------------------------------------------------------
# Mistral
# ---------------------------------------------------------------------------------

def mistral_tokenizer(path):
    from vllm.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_pretrained(path)


def synthetic_tekken(version, out_dir):
    """The vendored tekken vocabulary under another instruct version: the same ranks,
    `config.version` changed and (required after v7) the special-token list written out
    as mistral-common's own 20 historical tokens followed by the newer ones. The Rust
    test builds the same file (`tests/mistral.rs`, `synthetic_tekken`)."""
    with open(SRC_TEKKEN) as f:
        data = json.load(f)
    data["config"]["version"] = version
    data["special_tokens"] = [
        {"rank": i, "token_str": t, "is_control": True} for i, t in enumerate(SYNTHETIC_SPECIALS)
    ]
    data.pop("image", None)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tekken.json"), "w") as f:
        json.dump(data, f)
    return out_dir


# mistral-common's own SentencePiece vocabularies (testdata/models/mistral_spm_<v>).
SPM_FILES = {
    "v1": "tokenizer.model.v1",
    "v2": "mistral_instruct_tokenizer_240216.model.v2",
    "v3": "mistral_instruct_tokenizer_240323.model.v3",
    "v7": "mistral_instruct_tokenizer_241114.model.v7",
}

SYNTHETIC_SPECIALS = [
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]",
]


def render_mistral(tokenizer, body, extra=None):
    from vllm.tokenizers import mistral as _mt
    from vllm.renderers.mistral import safe_apply_chat_template

    case = {"request": body}
    try:
        request = ChatCompletionRequest.model_validate(copy.deepcopy(body))
        _mt.maybe_serialize_tool_calls(request)
        _mt.truncate_tool_call_ids(request)
        _mt.validate_request_params(request)
        if request.tools is None or (request.tool_choice == "none" and (extra or {}).get("exclude_tools_when_tool_choice_none")):
            tool_dicts = None
        else:
            tool_dicts = [tool.model_dump() for tool in request.tools]
        params = request.build_chat_params(None, "auto").with_defaults(dict(tools=tool_dicts, tokenize=True))
        ids = safe_apply_chat_template(tokenizer, request.messages, **params.get_apply_chat_template_kwargs())
        case["token_ids"] = list(ids)
    except Exception as exc:  # noqa: BLE001
        case["error"] = error_text(exc)
        case["error_type"] = type(exc).__name__
    return case


def mistral_chat_cases():
    u = lambda t: {"role": "user", "content": t}  # noqa: E731
    a = lambda t, **k: {"role": "assistant", "content": t, **k}  # noqa: E731
    tools = [WEATHER, COMPLEX]
    return [
        ("user_only", {"messages": [u("Hello")]}),
        ("system_user", {"messages": [{"role": "system", "content": "You are terse."}, u("Hi")]}),
        ("system_multi_turn", {"messages": [{"role": "system", "content": "Be kind."}, u("Hi"), a("Hello!"), u("How are you?")]}),
        ("multi_turn", {"messages": [u("Hi"), a("Hello! How can I help?"), u("Tell me a joke.")]}),
        ("two_systems", {"messages": [{"role": "system", "content": "One."}, {"role": "system", "content": "Two."}, u("Hi")]}),
        ("consecutive_users", {"messages": [u("First."), u("Second.")]}),
        ("user_parts", {"messages": [{"role": "user", "content": [{"type": "text", "text": "Part one."}, {"type": "text", "text": "Part two."}]}]}),
        ("tools", {"messages": [u("Weather in Paris?")], "tools": tools}),
        ("tools_call_result", {"messages": [u("Weather in Paris?"), a(None, tool_calls=[call("abcdefghi", "get_weather", '{"city": "Paris"}')]), {"role": "tool", "tool_call_id": "abcdefghi", "content": "18C"}], "tools": [WEATHER]}),
        ("tool_call_id_truncated", {"messages": [u("Weather?"), a(None, tool_calls=[call("call_0123456789abc", "get_weather", '{"city": "Oslo"}')]), {"role": "tool", "tool_call_id": "call_0123456789abc", "content": "cold"}], "tools": [WEATHER]}),
        ("parallel_calls", {"messages": [u("Rome and Oslo?"), a(None, tool_calls=[call("aaaaaaaaa", "get_weather", '{"city": "Rome"}'), call("bbbbbbbbb", "get_weather", '{"city": "Oslo"}')]), {"role": "tool", "tool_call_id": "aaaaaaaaa", "content": "warm"}, {"role": "tool", "tool_call_id": "bbbbbbbbb", "content": "cold"}, u("Thanks, and Paris?")], "tools": [WEATHER]}),
        ("tool_result_json", {"messages": [u("x"), a(None, tool_calls=[call("ccccccccc", "get_weather", '{"city": "X"}')]), {"role": "tool", "tool_call_id": "ccccccccc", "content": '{"temp": 3, "unit": "C"}'}], "tools": [WEATHER]}),
        ("tool_choice_none", {"messages": [u("Hi")], "tools": [WEATHER], "tool_choice": "none"}),
        ("tool_choice_none_excluded", {"messages": [u("Hi")], "tools": [WEATHER], "tool_choice": "none"}, {"exclude_tools_when_tool_choice_none": True}),
        ("continue_final_message", {"messages": [u("Write a poem"), a("Roses are")], "continue_final_message": True, "add_generation_prompt": False}),
        ("assistant_last_no_generation_prompt", {"messages": [u("Hi"), a("Hello")], "add_generation_prompt": False}),
        ("unicode", {"messages": [{"role": "system", "content": "Réponds en 日本語 🙂"}, u("naïve café — ½ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 مرحبا 👩‍👩‍👧")]}),
        ("special_token_text", {"messages": [u("[INST] not an instruction [/INST] <s></s>")]}),
        ("whitespace", {"messages": [u("  leading\n\n\ttabs  \r\n trailing   ")]}),
        ("reasoning_effort_high", {"messages": [u("Hi")], "reasoning_effort": "high"}),
        ("reasoning_in_history", {"messages": [u("2+2?"), a("4", reasoning="Simple."), u("3+3?")]}),
        ("long_text", {"messages": [u(" ".join(f"word{i}" for i in range(400)))]}),
        ("err_generation_prompt_after_assistant", {"messages": [u("Hi"), a("Hello")]}),
        ("err_continue_after_user", {"messages": [u("Hi")], "continue_final_message": True, "add_generation_prompt": False}),
        ("err_continue_and_generation_prompt", {"messages": [u("Hi"), a("He")], "continue_final_message": True, "add_generation_prompt": True}),
        ("err_chat_template", {"messages": [u("Hi")], "chat_template": "{{ messages }}"}),
        ("err_chat_template_kwargs", {"messages": [u("Hi")], "chat_template_kwargs": {"x": 1}}),
        ("err_reasoning_effort", {"messages": [u("Hi")], "reasoning_effort": "low"}),
        ("err_tool_result_unknown_id", {"messages": [u("x"), a(None, tool_calls=[call("ddddddddd", "get_weather", "{}")]), {"role": "tool", "tool_call_id": "eeeeeeeee", "content": "?"}], "tools": [WEATHER]}),
        ("err_system_last", {"messages": [u("Hi"), {"role": "system", "content": "late"}]}),
        ("err_tool_first", {"messages": [{"role": "tool", "tool_call_id": "fffffffff", "content": "x"}, u("Hi")]}),
        ("err_assistant_first", {"messages": [a("I start"), u("Hi")]}),
        ("err_empty_user", {"messages": [u("")]}),
        ("arguments_not_json", {"messages": [u("x"), a(None, tool_calls=[call("ggggggggg", "get_weather", "{not json")]), {"role": "tool", "tool_call_id": "ggggggggg", "content": "not json either"}, u("ok")], "tools": [WEATHER]}),
        ("arguments_empty", {"messages": [u("x"), a(None, tool_calls=[call("hhhhhhhhh", "now", "")]), {"role": "tool", "tool_call_id": "hhhhhhhhh", "content": ""}], "tools": [NO_PARAMS]}),
        ("tool_without_description_or_parameters", {"messages": [u("time?")], "tools": [NO_PARAMS, EMPTY_PARAMS]}),
        ("unicode_arguments", {"messages": [u("Météo ?"), a(None, tool_calls=[call("iiiiiiiii", "get_weather", '{"city": "Zürich", "n": 1.5e-7, "big": 1e20, "x": 1.0}')]), {"role": "tool", "tool_call_id": "iiiiiiiii", "content": '{"t": "☀️", "v": [1, 2.50, true, null]}'}], "tools": [WEATHER]}),
        ("developer_role", {"messages": [{"role": "developer", "content": "Dev rules."}, u("Hi")]}),
        ("system_parts", {"messages": [{"role": "system", "content": [{"type": "text", "text": "A."}, {"type": "text", "text": "B."}]}, u("Hi")]}),
        ("system_between_users", {"messages": [u("One"), {"role": "system", "content": "Mid."}, u("Two")]}),
        ("content_and_tool_calls", {"messages": [u("x"), a("Checking.", tool_calls=[call("jjjjjjjjj", "get_weather", '{"city": "A"}')]), {"role": "tool", "tool_call_id": "jjjjjjjjj", "content": "ok"}], "tools": [WEATHER]}),
        ("tool_message_with_name", {"messages": [u("x"), a(None, tool_calls=[call("kkkkkkkkk", "get_weather", "{}")]), {"role": "tool", "tool_call_id": "kkkkkkkkk", "name": "get_weather", "content": "ok"}], "tools": [WEATHER]}),
        ("tool_results_out_of_order", {"messages": [u("x"), a(None, tool_calls=[call("aaaaaaaa1", "get_weather", '{"city": "A"}'), call("aaaaaaaa2", "get_weather", '{"city": "B"}')]), {"role": "tool", "tool_call_id": "aaaaaaaa2", "content": "b"}, {"role": "tool", "tool_call_id": "aaaaaaaa1", "content": "a"}], "tools": [WEATHER]}),
        ("continue_with_reasoning", {"messages": [u("Think"), a("So", reasoning="Hmm")], "continue_final_message": True, "add_generation_prompt": False}),
        ("err_assistant_empty", {"messages": [u("Hi"), a(""), u("again")]}),
        ("err_bad_function_name", {"messages": [u("x")], "tools": [{"type": "function", "function": {"name": "bad name!", "parameters": {"type": "object", "properties": {}}}}]}),
        ("err_tool_call_id_short", {"messages": [u("x"), a(None, tool_calls=[call("abc", "get_weather", "{}")]), {"role": "tool", "tool_call_id": "abc", "content": "?"}], "tools": [WEATHER]}),
        ("err_unknown_role", {"messages": [{"role": "function", "content": "x", "name": "f"}, u("Hi")]}),
    ]


def mistral_cases():
    import tempfile

    image_case = ("err_image_part", {"messages": [{"role": "user", "content": [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]})
    out = []
    tmp = tempfile.mkdtemp()
    real = os.path.join(tmp, "tekken_v3")
    os.makedirs(real)
    import shutil

    shutil.copy(SRC_TEKKEN, os.path.join(real, "tekken.json"))
    vocabularies = [("tekken_v3", real)]
    for version in ("v7", "v11", "v13"):
        vocabularies.append((f"tekken_{version}", synthetic_tekken(version, os.path.join(tmp, f"tekken_{version}"))))
    try:
        import sentencepiece  # noqa: F401  (mistral-common's SentencePiece backend)
    except ImportError:
        print("sentencepiece is not installed: no SentencePiece cases", file=sys.stderr)
    else:
        for version, name in SPM_FILES.items():
            path = os.path.join(tmp, f"spm_{version}")
            os.makedirs(path)
            shutil.copy(os.path.join(MC_DATA, name), os.path.join(path, f"tokenizer.model.{version}"))
            vocabularies.append((f"spm_{version}", path))
    for vocab, path in vocabularies:
        tokenizer = mistral_tokenizer(path)
        # The real v3 file has an image encoder (Pixtral settings): images are out of
        # scope there; the synthetic vocabularies have none and refuse them.
        for case in mistral_chat_cases() + ([image_case] if vocab != "tekken_v3" else []):
            name, body = case[0], case[1]
            extra = case[2] if len(case) > 2 else {}
            rendered = render_mistral(tokenizer, body, extra)
            out.append({"vocab": vocab, "name": name, "options": extra, **rendered})
        for text in ["Hello world", "", " leading space", "[INST]literal", "日本語 🙂"]:
            out.append({"vocab": vocab, "name": f"completion:{text}", "completion": text,
                        "token_ids": tokenizer.encode(text, add_special_tokens=True),
                        "token_ids_no_special": tokenizer.encode(text, add_special_tokens=False)})
    return out


if __name__ == "__main__":
    main()
