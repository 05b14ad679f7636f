#!/usr/bin/env python3
"""Generate tests/fixtures/jinja_features.json: small templates rendered by
transformers' own chat-template environment (`_compile_jinja_template`: jinja2
sandbox, trim/lstrip blocks, loopcontrols, generation tag, tojson, raise_exception,
strftime_now pinned to 2026-01-15T10:30:45).

Usage: HF_HUB_OFFLINE=1 $REF/venv-light/bin/python vllm-chat/scripts/gen_jinja_fixtures.py
"""
import datetime as _dt
import json
import os

import transformers.utils.chat_template_utils as hf_chat


class _Pinned(_dt.datetime):
    @classmethod
    def now(cls, tz=None):
        return _dt.datetime(2026, 1, 15, 10, 30, 45)


hf_chat.datetime = _Pinned

CTX = {
    "d": {"b": 1, "a": [1, 2.5, None, True, "x\u00e9\u4e16\U0001f680\"\\\n"], "c": {"z": {}, "y": []}},
    "s": "  Hello, World  ",
    "n": None,
    "items": [3, 1, 2],
    "f": 1e16,
}
CASES = [
    "{{ d | tojson }}",
    "{{ d | tojson(indent=2) }}",
    "{{ d | tojson(indent='\\t') }}",
    "{{ d | tojson(separators=(',', ':')) }}",
    "{{ d | tojson(sort_keys=true) }}",
    "{{ d | tojson(ensure_ascii=true) }}",
    "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(ensure_ascii=true) }}|{{ d | tojson(indent=2) }}",
    "{{ f | tojson }} {{ 0.1 | tojson }} {{ 3 | tojson }}",
    "{{ true }} {{ false }} {{ none }} {{ n }} {{ items }} {{ d.c }}",
    "{{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.split(',') }}|{{ s.strip().startswith('Hello') }}|{{ s.upper() }}|{{ s.replace('l', 'L') }}",
    "{% for k, v in d.items() %}{{ k }}={{ v | tojson }};{% endfor %}",
    "{{ items[1:] }}{{ items[::-1] }}{{ items[-1] }}{{ 'abcdef'[1:4] }}",
    "{% set ns = namespace(total=0) %}{% for i in items %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }}",
    "{% for i in items %}{% if i == 1 %}{% continue %}{% endif %}{% if i == 2 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "a\n  {% if true %}\n  b\n  {% endif %}\nc\n",
    "x{% generation %}gen{% endgeneration %}y\n{%- generation -%}\n  z\n{%- endgeneration %}",
    "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}",
    "{{ raise_exception('bad role: ' + 'tool') }}",
    "{% for x in n %}{% endfor %}",
    "{{ n | length }}",
    "{{ items | map('string') | join(',') }}|{{ n | selectattr('x') | list }}|{{ items | select('odd') | list }}",
    "{{ items | map('string') | tojson }}",
    "{{ 'x' ~ none ~ true }}|{{ none | string }}|{{ [1, 'a', none] | string }}",
    "{{ d.missing is defined }}|{{ d.missing.deeper is defined }}",
    "{{ n is none }}|{{ n is not none }}|{{ d is mapping }}|{{ items is iterable }}|{{ n is iterable }}|{{ 's' is string }}",
    "{{ items | length }}{{ items | first }}{{ items | last }}{{ items | sort | list }}{{ items | max }}",
    "{% macro m(x, y='d') %}[{{ x }}{{ y }}]{% endmacro %}{{ m(1) }}{{ m(2, y='e') }}",
    "{{ '%s-%d' | format('a', 3) }}|{{ 'a b c' | wordcount }}|{{ 'Hello' | lower }}|{{ 'x' * 3 }}",
    "{{ d.keys() | list }}|{{ d.get('b') }}|{{ d.get('q', 'dflt') }}|{{ d['c'].values() | list }}",
]


def main():
    out = []
    for src in CASES:
        try:
            text = hf_chat._compile_jinja_template(src).render(**CTX)
            out.append({"template": src, "output": text})
        except Exception as e:  # rejected by jinja2
            out.append({"template": src, "error": f"{type(e).__name__}: {e}"})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "jinja_features.json")
    with open(path, "w") as f:
        json.dump({"context": CTX, "cases": out}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
