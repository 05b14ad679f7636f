#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/beam_messages.json.gz``: the assistant
message vLLM 0.33.0 makes of model outputs in ``beam`` response templates, for
every ``tool_choice``, whole (``Parser.parse`` + ``assemble_chat_message_fields``)
and streamed (``ChatStreamProcessor.step`` token by token).

vLLM's ``ResponseTemplateParser`` parses a forced choice (``required`` or a
named function) with the template itself, like ``auto``
(``_tool_parsing_enabled``), not with the JSON-list / whole-content rules of
the serving layer's other parsers. The templates and tools are
``gen_beam_grammars.py``'s; the parser's prefix is the template's ``start``
prompt, set directly as there (the message start); outputs are tokenized with
the Qwen3 tokenizer for streaming. ``tests/beam_messages.rs`` replays them.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_beam_messages.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_beam_grammars as gb  # noqa: E402  (templates, tools; pins vLLM 0.33.0)
import gen_fixtures as gf  # noqa: E402
import gen_serving_corpus as gsc  # noqa: E402  (the whole and streamed messages)
from vllm.entrypoints.openai.chat_completion.protocol import (  # noqa: E402
    ChatCompletionRequest,
)
from vllm.parser.parser_manager import ParserManager  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "beam_messages.json.gz"

CALL = '{"city": "Paris"}'
# Per template: plain text, reasoning then an answer, one call, two calls, in
# the template's own delimiters (`get_weather` and `search` are the tools).
OUTPUTS = {
    "gemma": [
        "hello",
        "<|channel>thought\nhm<channel|>Sure<turn|>",
        f"<|tool_call>call:get_weather{CALL}<tool_call|>",
        f'<|tool_call>call:get_weather{CALL}<tool_call|><|tool_call>call:search{{"query": "q"}}<tool_call|>',
    ],
    "gemma_answer": [
        "hello",
        "<|channel>thought\nhm<channel|><|channel>final\nSure<turn|>",
        f"<|tool_call>call:get_weather{CALL}<tool_call|>",
        f'<|tool_call>call:get_weather{CALL}<tool_call|><|tool_call>call:search{{"query": "q"}}<tool_call|>',
    ],
    "regex": [
        "hello",
        "<think>\nhm</think><answer>Sure</answer>",
        f'<call name="get_weather">{CALL}</call>',
        f'<call name="get_weather">{CALL}</call>\n<call name="search">{{"query": "q"}}</call>',
    ],
    "alternation": [
        "hello",
        "<think>hm</think><reply>Sure<|im_end|>",
        f"<tool_call>get_weather{CALL}</tool_call>",
        f'<think>hm</think><tool_call>get_weather{CALL}</tool_call>',
    ],
    "xml": [
        "hello",
        "<think>hm</think><text>Sure</text>",
        "<invoke name=get_weather><arg=city>Paris</arg></invoke>",
        "<invoke name=get_weather><arg=city>Paris</arg></invoke><invoke name=search><arg=query>q</arg></invoke>",
    ],
    "xml_json": [
        "hello",
        "<reply>Sure</reply>",
        '<tool name="get_weather"><param name="city">"Paris"</param></tool>',
        '<tool name="get_weather"><param name="city">"Paris"</param></tool><tool name="search"><param name="query">"q"</param></tool>',
    ],
    "xml_lookahead": [
        "hello",
        "<think>hm</think><text>Sure</text>",
        "<invoke name=get_weather><arg=city>Paris</arg></invoke>",
        "<invoke name=get_weather><arg=city>Paris<arg=city>Rome</arg></invoke><invoke name=search><arg=query>q</invoke>",
    ],
    "lookaround": [
        "hello",
        "<think>hm</think>Sure<|end|>",
        f'<call name="get_weather">{CALL}</call>',
        f'<call name="get_weather">{CALL}</call>\n</call>x<call name="search">{{"query": "q"}}</call>',
    ],
    "qwen_xml": [
        "hello",
        "<think>hm</think>Sure<|im_end|>",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
    ],
}
TOOLS = [gb.WEATHER, gb.SEARCH]
CHOICES = {
    "auto": "auto",
    "none": "none",
    "required": "required",
    "named": gb.named(TOOLS),
    "named_second": gb.named(TOOLS, 1),
}


def parser_for(parser_cls, tok, template, body, prefix):
    """A fresh parser whose prompt decodes to ``prefix`` (set directly), and
    the request."""
    request = ChatCompletionRequest.model_validate(body)
    parser = parser_cls(tok, request.tools, response_template=template,
                        chat_template_kwargs={})
    parser._prompt_token_ids = [0]
    parser._prefix = prefix
    return parser, request


def main() -> int:
    tok = gb.tokenizer()
    results = []
    for template_name, outputs in OUTPUTS.items():
        spec = gb.TEMPLATES[template_name]
        template, prefix = spec["template"], spec["prompts"]["start"]
        for reasoning in ("beam", None):
            if reasoning and "thinking" not in template["fields"]:
                continue
            parser_cls = ParserManager.get_parser(
                tool_parser_name="beam", reasoning_parser_name=reasoning, enable_auto_tools=True)
            for choice_name, choice in CHOICES.items():
                body = gb.body(tools=TOOLS, tool_choice=choice)
                for output in outputs:
                    chunks = gf.token_chunks(tok, output)
                    assert chunks, output
                    results.append({
                        "template": template_name, "reasoning": reasoning, "choice": choice_name,
                        "prefix": prefix, "request": body, "output": output,
                        "chunks": chunks,
                        "whole": gsc.whole_message(
                            parser_cls, *parser_for(parser_cls, tok, template, body, prefix),
                            tok, output, True),
                        "streamed": gsc.streamed_message(
                            parser_cls, *parser_for(parser_cls, tok, template, body, prefix),
                            chunks, [0], True),
                    })
        print(f"{template_name}: {len(results)} messages so far", file=sys.stderr)
    header = {"generated_by": "scripts/gen_beam_messages.py", "vllm_version": gf.VLLM_VERSION,
              "templates": {name: gb.TEMPLATES[name]["template"] for name in OUTPUTS}}
    gf.write_jsonl_gz(OUT, header, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
