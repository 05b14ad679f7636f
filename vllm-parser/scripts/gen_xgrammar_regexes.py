#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/xgrammar_regexes.json.gz``: for a corpus of
regex patterns, whether xgrammar 0.2.8's ``Grammar.from_regex`` accepts each
(vLLM 0.33.0's ``_regex_compiles`` and the regex branch of
``validate_xgrammar_grammar``), and what vLLM's ``_may_write`` (Python 3.11's
``re._parser``) says for a few char sets; plus the codepoints the ``regex``
module's ``\\d``, ``\\s``, ``\\w`` match (``_in_class``).

The corpus: hand-picked quirks, then syntax atoms (escapes, classes, POSIX
classes, groups of every ``(?`` kind, anchors, non-ASCII, broken syntax) alone,
quantified (greedy, lazy, possessive, ``{m,n}`` variants, doubled) and paired,
and 2000 seeded random strings of syntax pieces.
``tests/xgrammar_regexes.rs`` requires ``vllm_parser::serving::xgrammar_regex``
and ``vllm_parser::serving::python_re`` never to disagree where they decide.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_xgrammar_regexes.py
"""

from __future__ import annotations

import os
import random
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0)
import regex  # noqa: E402
import xgrammar  # noqa: E402
from vllm.parser.response_template_grammar import _may_write  # noqa: E402

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "xgrammar_regexes.json.gz"

CHAR_SETS = [["<"], ["\n"], ["a"], ["<", "\n", '"'], ["]", "}"], ["é", "٣", "\u2028"]]

QUIRKS = [
    "(?=a)b", "(?!a)", "(?<=a)b", "(?<!a)b", "\\1", "(a)\\1", "\\p{L}", "\\P{L}", "\\b", "\\B",
    "(?P<x>a)", "(?P=x)", "(?P<x>a)(?P=x)", "(?i)", "(?i)a", "(?#c)", "a(?#c)*", "a++", "a{,3}",
    "a{2,1}", "(?:a)", "^a$", "a*?", "[[:alpha:]]", "\\u00e9", "\\x41", "\\Z", "\\A", "a|", "|a",
    "()", "", "[\\w-z]", "[\\w-+]", "[z-a]", "*", "+a", "a**", "(*)", "a{99999999999}",
    "a{2147483648}", "a{4294967295}", "a{4294967294}", "\\x41B", "[\\x41B]", "[\\x01a]",
    "[\\x01f-a]", "[\\x01f-\\x05]", "\\Ů", "\\é", "[\\^a]", "[\\[]", "\\cA", "\\c1", "\\c",
    "\\u{41}", "\\u{}", "\\u{110000}", "\\U0001F600", "\\U00110000", "\\N{EM DASH}", "[^]",
    "[^]a]", "[]a]", "(?<name>a)", "(?<n1>a)", "(?a)(?u)", "(?x) a", "(?x:a b)", "(?L)a",
    "(?au)a", "(?-i:a)", "(?i-i:a)", "(?t:a)", "(?(1)a|b)", "(a)(?(1)b|c)", "(?(x)a)",
    "(?P<x>a)(?(x)b)", "(a)(?( 1)b)", "(?(0)a)", "(?(1)a|b|c)", "(?>a)", "[a-\\d]", "[\\d-z]",
    "[\\s-a]", "x{", "x{1", "x{1,", "x{1,2", "x{a}", "{", "}", "{}", "a{}", "]", ")", "(", "[",
    "[a", "\\", "a\\", "[\\", "(?", "(?P", "(?<", "(?<=", "\\0", "\\01", "\\012", "\\0123",
    "\\400", "[\\400]", "[\\8]", "\\8", "(a)\\8", "[a\n]", "a\nb", "\t", "é", "😀", "[😀-😂]",
    "[é-a]", "\\ud800", "$a", "a^", "a^*", "^*", "$*", "\\b*", "(?=a)*", "(?:)*", "(?i)*",
    "a|*", "a|?", "(|)", "a||b", "(a|b)*c", "(a|){0,5}", "(){3}", "a{0}", "[^a]{0}", ".{0}",
    "(?:<){0}", "<{0,0}", "<{0,1}", "a{0,4294967294}", "[\\b]", "[\\B]", "[\\A]", "[\\Z]",
]

ATOMS = [
    "a", "<", "é", ".", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", "\\b", "\\A", "\\Z", "\\z",
    "\\1", "\\0", "\\x3c", "\\x4", "\\u003c", "\\u{3c}", "\\U0000003c", "\\q", "\\-", "\\]",
    "\\\\", "\\n", "\\t", "\\e", "\\cA", "\\p{L}", "\\/", "\\\"", "[a-z]", "[^a]", "[^<]",
    "[<>]", "[^<>]", "[\\d<]", "[\\D]", "[^\\W]", "[\\s]", "[\\S\\n]", "[[:alpha:]]",
    "[[:space:]]", "[]<]", "[\\]<]", "[\\^<]", "[<^]", "[a-]", "[-<]", "[\\--<]", "[!-~]",
    "[\\x00-\\x7f]", "[\\u0000-\\uffff]", "[^\\x00-\\x7f]", "[é]", "[^é]", "(a)", "(<)",
    "(?:a)", "(?:<)", "(?P<n>a)", "(?<n>a)", "(?=<)", "(?!a)", "(?<=a)", "(?i:a)", "(?-i:a)",
    "(?#c)", "(?>a)", "()", "(|a)", "(a|<)", "(?:a|[^a])", "^", "$", '"', "}", "]", "{",
    "a{2", "\n", "\u2028",
]

QUANTIFIERS = [
    "", "*", "+", "?", "*?", "+?", "??", "*+", "++", "?+", "{2}", "{2,}", "{2,3}", "{,3}",
    "{3,2}", "{0}", "{0,0}", "{2}?", "{2}+", "{2,3}?", "{x}", "**", "{2}{3}", "{1234567890}",
]

PIECES = [
    "(", ")", "[", "]", "\\", "{", "}", ",", "?", "*", "+", "|", "^", "$", ".", "-", "<", ">",
    "=", "!", ":", "P", "x", "u", "U", "c", "1", "2", "0", "a", "z", "é", "\n", "#", "'", '"',
    "İ", "\\d", "\\w", "\\s", "\\W", "\\S", "\\D", "\\x41", "\\x0", "\\u0041", "(?",
    "(?:", "(?<", "[^", "[:alpha:]", "{2,3}", "{3}", "{2,}", "i", "-9", "f", "F", "\\b", "\\Z",
    "\\-", "\\]", "\\^", "\\[", "\\\\", "A", "_", "~", "\t",
]


def corpus() -> list[str]:
    patterns = list(QUIRKS)
    for atom in ATOMS:
        for quantifier in QUANTIFIERS:
            patterns.append(atom + quantifier)
        patterns.append(f"^{atom}$")
        patterns.append(f"({atom})*")
        patterns.append(f"x|{atom}")
    pairs = ["a", "<", "\\d", "[^<]", "(a)", "(?:a)", "^", "$", "|", ".", "\\1", "{2}", "*", ")"]
    for first in pairs:
        for second in pairs:
            patterns.append(first + second)
    # Seeded random strings of syntax pieces, for what the lists miss.
    rng = random.Random(20260)
    for _ in range(2000):
        patterns.append("".join(rng.choice(PIECES) for _ in range(rng.randint(1, 16))))
    seen = set()
    return [p for p in patterns if not (p in seen or seen.add(p))]


def compiles(pattern: str) -> bool | str:
    # xgrammar logs warnings on stderr; keep the run quiet.
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            xgrammar.Grammar.from_regex(pattern)
            return True
        except RuntimeError:
            return False
        except Exception as e:  # noqa: BLE001
            return type(e).__name__
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def may_write(pattern: str, chars: list[str]) -> bool | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _may_write(pattern, set(chars))
        except Exception as e:  # noqa: BLE001
            return type(e).__name__


def category_ranges(name: str) -> list[list[int]]:
    compiled = regex.compile(name)
    ranges: list[list[int]] = []
    for cp in range(0x110000):
        if compiled.fullmatch(chr(cp)) is not None:
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return ranges


def main() -> int:
    records = []
    for pattern in corpus():
        if "\0" in pattern:
            continue
        records.append({
            "pattern": pattern,
            "compiles": compiles(pattern),
            "may_write": [may_write(pattern, chars) for chars in CHAR_SETS],
        })
    header = {
        "generated_by": "scripts/gen_xgrammar_regexes.py",
        "vllm_version": gf.VLLM_VERSION,
        "xgrammar_version": xgrammar.__version__ if hasattr(xgrammar, "__version__") else "0.2.8",
        "python_version": sys.version.split()[0],
        "regex_version": regex.__version__,
        "char_sets": CHAR_SETS,
        "categories": {name: category_ranges(name) for name in ("\\d", "\\s", "\\w")},
    }
    gf.write_jsonl_gz(OUT, header, records)
    print(f"{len(records)} patterns", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
