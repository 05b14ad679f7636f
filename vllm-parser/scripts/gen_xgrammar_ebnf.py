#!/usr/bin/env python3
"""Generate ``tests/fixtures/serving/xgrammar_ebnf.json.gz``: for a corpus of
grammar texts, whether xgrammar 0.2.8's ``Grammar.from_ebnf`` accepts each (the
EBNF branch of vLLM 0.33.0's ``validate_xgrammar_grammar`` for a
``structured_outputs.grammar``, and the last step of ``Grammar.from_regex``),
and what vLLM's ``grammar_is_likely_lark`` says of it.

The corpus: hand-picked quirks (lexer, attributes, macros, quantifier helper
rules, lookahead assertions, escapes, classes, repetition ranges, line rules),
realistic grammars (vLLM's docs SQL example, llama.cpp-style JSON, arithmetic
and list grammars, xgrammar's own printed JSON, JSON-schema and regex grammars,
grammars with every macro), vLLM's ``choice_as_grammar`` of some choice lists,
a few Lark grammars (for the heuristic), then seeded mutations of the realistic
grammars (a character dropped, doubled or replaced, a piece inserted, a line
dropped or doubled, a cut) and seeded random strings of EBNF pieces.
``tests/xgrammar_ebnf.rs`` requires ``vllm_parser::serving::xgrammar_ebnf``
never to disagree where it decides.

Run from the crate directory with the reference environment::

    HF_HUB_OFFLINE=1 $HOME/.cache/vllm-reference/venv/bin/python scripts/gen_xgrammar_ebnf.py
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures as gf  # noqa: E402  (pins vLLM 0.33.0)
import xgrammar  # noqa: E402
from vllm.v1.structured_output.utils import (  # noqa: E402
    choice_as_grammar,
    grammar_is_likely_lark,
)

OUT = gf.CRATE / "tests" / "fixtures" / "serving" / "xgrammar_ebnf.json.gz"
XGRAMMAR_VERSION = "0.2.8"

QUIRKS = [
    "", 'root ::= "a"', 'x ::= "a"', "root ::= x", 'root ::= "a"\nroot ::= "b"', 'Root ::= "a"',
    # Lexer: blanks, comments, line breaks, a NUL ends the text.
    'root ::= "a"\r\nx ::= "b"', 'root ::= "a"\rx ::= "b"', 'root ::= "a" x\r::= "b"',
    'root ::= "a"\x00 junk', 'root ::= "a\x00"', "root ::= [a\x00]", 'root ::= "a\\\x00"',
    'root ::= "a" #c\rx ::= "b"', 'root ::= "a" #c\r\nx ::= "b"', 'root ::= "a" # c\n# d\nx ::= "b"',
    'root ::= "a"# c', '# only\nroot ::= "a" # end', 'root ::= "a"\t\t', '  root ::= "a"',
    '\n\nroot ::= "a"\n\n', 'root\t::=\t"a"', 'root::="a"', 'root ::= "a"\x0b', 'root ::= "a"\x0c',
    'root ::="a"x ::="b"', 'root ::= "a" x\n ::= "b"', 'root ::= "a"\nx ::= "b" root',
    'root ::= "a" x ::= "b"', "root ::= é", 'root ::= "é"', "root ::= 'a'", 'root ::= "a" ;',
    'root ::= "a" =', 'root ::= "a" ,', 'root ::= "a" :', 'root ::= "a" ::=', '::= "a"', "root ::=",
    "root ::= ", "root ::= |", 'root ::= "a" |', 'root ::= | "a"', 'root ::= "a" | | "b"',
    'true ::= "a"\nroot ::= "b"', 'root ::= "a"\n-x ::= "b"', 'root ::= "a"\n.x ::= "b"\n',
    'root ::= "a"\n_1 ::= "b"', 'root ::= "a"\n1x ::= "b"', "root ::= true", "root ::= 12",
    'root ::= "a" ]', 'root ::= "a" }', 'root ::= "a" )', 'root ::= ("a"', 'root ::= ("a"\nx ::= "b")',
    # Rule references and the parser's helper rules.
    'root ::= x\nx ::= root', 'root ::= "a" root', 'root ::= "" root', 'root ::= a\na ::= a',
    'root ::= "a"* root_1', "root ::= root_1 \"a\"*", 'root ::= "a"* "b"* root_2',
    'root ::= "a"* "b"* root_3', 'root_1 ::= "x"\nroot ::= "a"* root_2',
    'root_1 ::= "x"\nroot ::= "a"* root_3', 'root_2 ::= "x"\nroot ::= "a"* "b"* root_3',
    'root_2 ::= "x"\nroot ::= "a"* "b"* root_4', "root ::= [a]* root_1", 'root ::= "a"+ root_1',
    'root ::= "a"? root_1', 'root ::= "a"{2} root_1', 'root ::= "a"{2} root_2',
    'root ::= "a"{0} root_1', 'root ::= "a"{2,} root_2', 'root ::= ("a"*)* root_1_1',
    'root ::= ("a"*)* root_2', 'root ::= "a"*\nx ::= root_1', 'root ::= x\nx ::= "a"* root_1',
    'root ::= x\nx ::= "a"* x_1', 'root ::= x{2} root_1\nx ::= "a"', 'root ::= x* root_1\nx ::= "a"',
    'root ::= ("a"*){2} root_2', 'root ::= ("a"*){2} root_3', "root ::= [a]{2} root_1",
    'root ::= ""{2} root_1', "root ::= (){2} root_1", "root ::= Token(1){2} root_1",
    "root ::= Token(1)* root_2", "root ::= TokenTagDispatch() root_1", "root ::= TagDispatch()* root_1",
    'root ::= "a" (= "b"*) \nx ::= root_1', 'root ::= TagDispatch(("a", root_1)) "b"*',
    'root ::= "b"* TagDispatch(("a", root_1))', 'root ::= "a"+ "b"+ "c"+ root_3',
    'root ::= "a"+ "b"+ "c"+ root_4', 'root ::= "a"? root_1 "b"? root_2',
    'root ::= "a" (root)', 'root ::= "a" ( root | "b" ) +',
    # Quantifiers and repetition ranges.
    'root ::= "a"**', 'root ::= "a"*?', 'root ::= "a"{2}{3}', 'root ::= "a"{2}*', 'root ::= "a"{ 2 , 3 }',
    'root ::= "a"{2,3,4}', 'root ::= "a"{,3}', 'root ::= "a"{}', 'root ::= "a"{a}', 'root ::= "a"{2',
    "root ::= *", 'root ::= ("a")*', "root ::= ()*", 'root ::= ""*', 'root ::= ""+', 'root ::= ""?',
    'root ::= "a"{2,1}', 'root ::= "a"{-1}', 'root ::= "a"{1,-1}', 'root ::= "a"{1, -1 }',
    'root ::= "a"{+3}', 'root ::= "a"{0}', 'root ::= "a"{0,0}', 'root ::= "a"{0,}',
    'root ::= "a"{1000000000000000}', 'root ::= "a"{1000000000000001}',
    'root ::= "a"{10000000000000000}', 'root ::= "a"{3000000000}', 'root ::= "a"{2147483647,2147483648}',
    'root ::= "a"{4294967295}', 'root ::= "a"{4294967296,4294967297}', 'root ::= "a"{2147483648,}',
    'root ::= "a"{1,4294967296}', 'root ::= "a"{5,3000000000}', 'root ::= "a"{007}',
    "root ::= [a-z]*", "root ::= [a-z]{0,3}", "root ::= [a-z]+?",
    # Lookahead assertions and the normalizer.
    'root ::= "a" (= "b")', 'root ::= (= "a") "b"', 'root ::= "a"(="b")(="c")', 'root ::= "a" (= "b" | "c")',
    'root ::= "a" (= ("b" | "c"))', 'root ::= "a" (= "")', 'root ::= "a" (= "" "")', 'root ::= "a" (= ())',
    'root ::= "a" (= [a-a])', 'root ::= "a" (= "b"*)', 'root ::= "a" (= "b"{2})', 'root ::= "a" (= Token(1))',
    'root ::= "a" (= ExcludeToken(1))', 'root ::= "a" (= Regex("a"))', 'root ::= "a" (= TagDispatch())',
    'root ::= "a" (= TokenTagDispatch())', 'root ::= "a" (= x)\nx ::= "b"', 'root ::= "a" (= "b") "c"',
    'root ::= "a" (= "b") | "c"', 'root ::= "a"\n(= "b")', 'root ::= "a" (="b"', 'root ::= "a" (= "b" (= "c"))',
    'root ::= "a" (= ("b"))', 'root ::= "a" (= "b" | "")', 'root ::= "a" (= [^a-a])', 'root ::= "a" (= "b"?)',
    'root ::= "a" (= ("b" "c"))', 'root ::= "a" (= ("b" "c") | "d")', 'root ::= "a" (= "b" ("c" | "d"))',
    'root ::= "a" (= ( ) "b")', 'root ::= "a" (= "" | "")', 'root ::= "a" (= (("")))', 'root ::= "a" (= ((("b"))))',
    'root ::= "a" (= "a" TagDispatch())', 'root ::= "a" (= "a" Regex("x"))', 'root ::= "a" (= Substring("a"))',
    'root ::= "a" (= "b" Substring("a"))', 'root ::= "a" (= (TagDispatch()))', 'root ::= "a" (= Regex("a")*)',
    'root ::= "a" (=)', 'root ::= "a" (= )', 'root ::= "a" (= [])', 'root ::= "a" (= "b")\nx ::= "c" (= "" | "d")',
    # Attributes.
    'root[max_tokens=3] ::= "a"', 'root[capture] ::= "a"', 'root[capture="x"] ::= "a"',
    'root[max_tokens=3, capture] ::= "a"', 'root[max_tokens=0] ::= "a"', 'root[max_tokens=9999999999] ::= "a"',
    'root[max_tokens=99999999999] ::= "a"', 'root[capture=""] ::= "a"', 'root[capture, capture] ::= "a"',
    'root [capture] ::= "a"', 'root[ capture = "x" , max_tokens = 2 ] ::= "a"', 'root[capture="a\\b"] ::= "a"',
    'root[capture="é"] ::= "a"', 'root[max_tokens=1]  ::= "a"', 'root[max_tokens=1]\n::= "a"',
    'root ::= x[capture] ::= "a"', 'root[max_tokens=1,] ::= "a"', 'root[max_tokens] ::= "a"',
    'root[max_tokens=-1] ::= "a"', 'root[capturex] ::= "a"', 'root[max_tokensx=1] ::= "a"',
    'root ::= x\nx[capture="y"] ::= "a"', 'root ::= x[capture] "a"', 'root ::= x[ab]\nx ::= "a"',
    'root[capture=x] ::= "a"', 'root[capture="a"b] ::= "a"', 'root[capture="a\tb"] ::= "a"',
    # Strings, escapes and classes.
    'root ::= "\\q"', 'root ::= "\\x41"', 'root ::= "\\xZZ"', 'root ::= "\\u00e9"', 'root ::= "\\u00e"',
    'root ::= "\\U0001F600"', 'root ::= "\\U00110000"', 'root ::= "\\-"', 'root ::= "\\/"',
    'root ::= "\\a\\b\\f\\n\\r\\t\\v\\0\\e\\?\\\'\\"\\\\"', 'root ::= "\\UFFFFFFF5"', 'root ::= "\\UFFFFFFF6"',
    'root ::= "\\UFFFFFFF7"', 'root ::= "\\UFFFFFFFF"', 'root ::= "\\xFFFFFFFFF5"', 'root ::= "\\xFFFFFFFFF6"',
    'root ::= "\\x1FFFFFFFFF"', 'root ::= "\\x110000"', 'root ::= "\\é"', 'root ::= "a\nb"', 'root ::= "a\rb"',
    'root ::= "a\tb"', 'root ::= "a', 'root ::= "', 'root ::= ""', "root ::= ()", 'root ::= "\\u{41}"',
    "root ::= [\\d]", "root ::= [\\s]", "root ::= [a-\\d]", "root ::= [é-a]", "root ::= [a-é]", "root ::= [\\-]",
    'root ::= [\\"]', "root ::= [\\']", "root ::= [\\e\\0]", "root ::= [a-]", "root ::= [-a]", "root ::= [a--]",
    "root ::= [--a]", "root ::= [---]", "root ::= [^]", "root ::= []", "root ::= [\\U00110000]",
    "root ::= [\\U00110000-\\U00120000]", "root ::= [\\UFFFFFFFF]", "root ::= [\\UFFFFFFFF-a]",
    "root ::= [a-\\UFFFFFFFF]", "root ::= [\\UFFFFFFF5]", "root ::= [\\x10-\\x1]", "root ::= [\\x10-\\x9]",
    "root ::= [\\/\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$]", "root ::= [\\q]", "root ::= [\\é]", "root ::= [\\\x80]",
    "root ::= [a\nb]", "root ::= [a\rb]", "root ::= [\t]", "root ::= [a", "root ::= [", "root ::= [[]",
    "root ::= []]", "root ::= [\\]]", "root ::= [^^]", "root ::= [^-]", "root ::= [a-z-A]", "root ::= [z-a-b]",
    "root ::= [#]", "root ::= [ ]", "root ::= [\\x41-\\x5A\\x61-\\x7a]", "root ::= [\\u0000-\\uFFFF]",
    "root ::= [^\\x00-\\x1F\"\\\\]", "root ::= [😀-😂]", "root ::= [😂-😀]",
    # Macros.
    'root ::= TagDispatch(("a", x))\nx ::= "b"', "root ::= Token(1)", 'root ::= Regex("a+")',
    'root ::= Regex("(?=a)")', 'root ::= Regex("a", json_string=true)', 'root ::= TokenTagDispatch((1, x))\nx ::= "a"',
    "root ::= ExcludeToken(1)", "root ::= Token()", "root ::= Token(-1)",
    'root ::= TagDispatch(("a", x), excludes=("a",))\nx ::= "b"', 'root ::= TagDispatch(("a", x), excludes=("ab",))\nx ::= "b"',
    'root ::= TagDispatch(("", x))\nx ::= "b"', "root ::= TagDispatch()", "root ::= TagDispatch",
    'root ::= "a" TagDispatch(("a", root))', 'root ::= TagDispatch(("a", root))*', 'root ::= Regex("a")*',
    "root ::= Token(1,2)+", 'root ::= "a" | Regex("b")', 'root ::= "a" Regex("b")', 'root ::= "a" | Token(1)',
    'root ::= "a" | TagDispatch()', 'root ::= ("a" | TagDispatch())', "root ::= TagDispatch(){2}",
    'root ::= Regex("a"){2}', "root ::= TokenTagDispatch()", 'root ::= Regex("(")',
    'root ::= Regex("a", json_string=1)', 'root ::= Regex("a", foo=true)', "root ::= Regex()",
    'root ::= Regex("a", "b")', "root ::= Regex(a)", 'root ::= TagDispatch(("a", x, y))\nx ::= "b"\ny ::= "c"',
    'root ::= TagDispatch(("a"))', 'root ::= TagDispatch("a")', "root ::= TagDispatch((1, root))",
    'root ::= TagDispatch(("a", z))', 'root ::= TagDispatch(("a", "b"))',
    'root ::= TagDispatch(("a", root), loop_after_dispatch=false)', 'root ::= TagDispatch(("a", root), loop_after_dispatch=1)',
    'root ::= TagDispatch(("a", root), stop_eos=true)', 'root ::= TagDispatch(("a", root), excludes="b")',
    'root ::= TagDispatch(("a", root), excludes=("",))', 'root ::= TagDispatch(("a", root), excludes=(1,))',
    'root ::= TagDispatch(("a", root), excludes=())', 'root ::= TagDispatch(("a", root),)',
    'root ::= TagDispatch(("a", root),,)', 'root ::= TagDispatch(("a", root) ("b", root))',
    'root ::= TagDispatch((("a"), root))', 'root ::= TagDispatch(("a", root,))',
    'root ::= TagDispatch(("a", root), ("a", root))', 'root ::= TagDispatch(loop_after_dispatch=true, ("a", root))',
    'root ::= TagDispatch(("a", root), excludes=("b", "c",))', 'root ::= TagDispatch(("ab", root), excludes=("a",))',
    "root ::= TagDispatch(x=y)", 'root ::= TagDispatch(("a", TagDispatch))\nTagDispatch ::= "x"',
    'TagDispatch ::= "x"\nroot ::= TagDispatch', 'root ::= TagDispatch(("a", root)) "b"',
    'root ::= TagDispatch(("a", root)) | "b"', 'root ::= TagDispatch(("a", root)) (= "x")',
    'root ::= TagDispatch(("\\x00", root))', 'root ::= TagDispatch(("é", root), excludes=("\\xc3",))',
    'root ::= TagDispatch(("a", root), excludes=((),))', 'root ::= TagDispatch(("a", root), excludes=("a", "b"), excludes=("c",))',
    'root ::= TagDispatch(("a", root), loop_after_dispatch=true, loop_after_dispatch=2)',
    "root ::= Token(1, 2, 3)", "root ::= Token(1, x=2)", 'root ::= Token("a")', "root ::= Token((1,))",
    "root ::= Token(true)", "root ::= Token(3000000000)", "root ::= ExcludeToken()", "root ::= ExcludeToken(0)",
    "root ::= Token(1000000000000000)", "root ::= Token (1)", "root ::= Token(1,)",
    "root ::= TokenTagDispatch((1, root), excludes=(1,))", "root ::= TokenTagDispatch((1, root), excludes=(2,))",
    "root ::= TokenTagDispatch((4294967297, root), excludes=(1,))", "root ::= TokenTagDispatch((1, root), excludes=(4294967297,))",
    "root ::= TokenTagDispatch((-1, root))", 'root ::= TokenTagDispatch(("a", root))', "root ::= TokenTagDispatch((1, root, 2))",
    "root ::= TokenTagDispatch(1)", "root ::= TokenTagDispatch((1, z))", "root ::= TokenTagDispatch((1, root), foo=true)",
    "root ::= TokenTagDispatch((1, root), loop_after_dispatch=false)", "root ::= TokenTagDispatch((1, root), loop_after_dispatch=2)",
    "root ::= TokenTagDispatch((1, root), excludes=(-1,))", "root ::= TokenTagDispatch((1, root), excludes=2)",
    "root ::= Substring()", 'root ::= Substring("")', 'root ::= Substring("a", "b")', "root ::= Substring(a)",
    'root ::= Substring("a", x=true)', 'root ::= Substring("a")*', 'root ::= "x" Substring("a")', 'root ::= Substring(1)',
    'root ::= Regex("")', 'root ::= Regex("a", json_string=false)', 'root ::= Regex("a", json_string=true, json_string=false)',
    "root ::= Regex(json_string=true)", 'root ::= "a" Token', "root ::= Token", "root ::= Token(", "root ::= Token(1",
    "root ::= Token((1)", "root ::= TagDispatch(((((((1)))))))", 'root ::= Regex("a" "b")', "root ::= Regex(=1)",
    'root ::= Token(1) (= Token(2))', "root ::= tagdispatch()", 'root ::= "a"\nRegex ::= "b"', 'root ::= Regex\nRegex ::= "b"',
]

# vLLM's docs (structured outputs, "grammar"): a simplified SQL grammar.
SQL = """root ::= select_statement

select_statement ::= "SELECT " column " from " table " where " condition

column ::= "col_1 " | "col_2 "

table ::= "table_1 " | "table_2 "

condition ::= column "= " number

number ::= "1 " | "2 "
"""

JSON_LIKE = r"""# A JSON grammar in llama.cpp's style.
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4,4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
"""

ARITHMETIC = """root  ::= (expr "=" ws term "\\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \\t\\n]*
"""

LIST = """root ::= item+

# Excludes various line break characters
item ::= "- " [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ "\\n"
"""

LOOKAHEAD = """root ::= "<" name ">" body "</" name ">"
name ::= [a-z]+ (= [>])
body ::= ([^<] | "<" [^/])* (= "</")
"""

MACROS = """root ::= TagDispatch(
  ("<tool>", tool),
  ("<answer>", answer),
  loop_after_dispatch=false,
  excludes=("</s>",)
)
tool ::= Regex("[a-z_]+", json_string=false) "</tool>"
answer[max_tokens=64, capture="answer"] ::= [^<]* "</answer>"
tokens ::= Token(1, 2) | ExcludeToken(3) | TokenTagDispatch((7, tool), excludes=(8,))
"""

EMPTY_RULES = """root ::= a b c
a ::= "" | "a"
b ::= ()
c ::= ("c" | "")? (= "d" "e")
d ::= "x"{0,} "y"{1,} "z"{2,5} [q]{3}
"""

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
     "required": ["name"]},
    {"type": "array", "items": {"type": "number", "minimum": 0}, "maxItems": 3},
    {"type": "string", "pattern": "^[a-z]+@[a-z]+\\.com$"},
    {"enum": ["a", "b\n", 1, None]},
]

REGEXES = ["[a-z]+ [0-9]{2}", "(\\d{3})-\\d{4}", "[^\\]]*\\]", "a|b|", ".*?x"]

CHOICES = [
    ["yes", "no"],
    ['q"x', "new\nline", "\x00", "é", "\x7f", "\\", "", "yes"],
    ["\t\r", "😀", "#", "::=", "a\x1bb", "\\u0041"],
    ["x" * 200],
    ["".join(chr(c) for c in range(128)), "\U0010ffff\ud7ff\ue000", " ", "[a-z]*", "(= x)"],
]

LARK = [
    'start: "a" | "b"',
    "?start: sum\n?sum: product | sum \"+\" product\n%import common.NUMBER",
    'start: x\nx: /[a-z]+/ // root ::= x',
    '# root ::= "a"\nstart: "a"',
]

PIECES = [
    "root", " ::= ", "::=", "\n", " ", "x", "x_1", "root_1", '"a"', '""', '"\\n"', '"\\x41"', "[a-z]",
    "[^a]", "[a-]", "[\\d]", "(", ")", "(=", "|", "*", "+", "?", "{2}", "{2,}", "{1,3}", "{3,1}",
    "#", "\t", "\r", "é", "Token(1)", "TagDispatch(", "Regex(", '("a", x)', ",", "=", "true", "-1",
    "[capture]", "[max_tokens=2]", "\\", "'", "1",
]


def random_grammar(rng: random.Random) -> str:
    """A grammar built from EBNF's own structure: mostly well formed, with
    references to helper rules, lookaheads and macros that may be refused."""
    names = ["root"] + rng.sample(["a", "b", "root_1", "x.y", "-z"], rng.randint(0, 2))
    atoms = ['"s"', '""', '"\\n"', "[a-z]", "[^\\]]", "()", "Token(1)", 'Regex("a+")',
             'TagDispatch(("t", root))', "Substring(\"ab\")", "ExcludeToken(2)"]

    def element(depth: int) -> str:
        roll = rng.random()
        if roll < 0.5:
            item = rng.choice(atoms)
        elif roll < 0.75:
            item = rng.choice(names + ["root_2", "b_1"] if rng.random() < 0.1 else names)
        elif depth < 2:
            item = f"({choices(depth + 1)})"
        else:
            item = '"d"'
        return item + rng.choice(["", "", "", "", "", "*", "+", "?", "{2}", "{0,3}", "{1,}"])

    def choices(depth: int) -> str:
        return " | ".join(
            " ".join(element(depth) for _ in range(rng.randint(1, 3)))
            for _ in range(rng.randint(1, 2)))

    rules = []
    for name in names:
        rule = f"{name} ::= {choices(0)}"
        if rng.random() < 0.2:
            rule += f" (= {' '.join(element(2) for _ in range(rng.randint(1, 2)))})"
        rules.append(rule)
    rng.shuffle(rules)
    return "\n".join(rules)


def mutations(rng: random.Random, text: str, count: int) -> list[str]:
    out = []
    pieces = ['"', "[", "]", "(", ")", "(=", "|", "*", "{", "}", "::=", "\n", "\\", "#", "x", "-", "é", "\x00"]
    for _ in range(count):
        kind = rng.randrange(7)
        at = rng.randrange(len(text) + 1)
        lines = text.split("\n")
        line = rng.randrange(len(lines))
        if kind == 0 and text:
            out.append(text[:at] + text[at + 1:])
        elif kind == 1:
            out.append(text[:at] + text[at:at + 1] + text[at:])
        elif kind == 2:
            out.append(text[:at] + rng.choice(pieces) + text[at:])
        elif kind == 3 and text:
            out.append(text[:at] + rng.choice(pieces) + text[at + 1:])
        elif kind == 4:
            out.append("\n".join(lines[:line] + lines[line + 1:]))
        elif kind == 5:
            out.append("\n".join(lines[:line] + [lines[line]] + lines[line:]))
        else:
            out.append(text[:at])
    return out


def corpus() -> list[dict]:
    entries = [{"text": t, "kind": "quirk"} for t in QUIRKS]
    printed = [str(xgrammar.Grammar.builtin_json_grammar())]
    printed += [str(xgrammar.Grammar.from_json_schema(s)) for s in SCHEMAS]
    printed += [str(xgrammar.Grammar.from_regex(r)) for r in REGEXES]
    printed += [str(xgrammar.Grammar.from_ebnf(MACROS))]
    # xgrammar has no empty alternative: llama.cpp's `ws ::= | " "` is refused.
    json_fixed = JSON_LIKE.replace("ws ::= |", 'ws ::= "" |')
    realistic = [SQL, JSON_LIKE, json_fixed, ARITHMETIC, LIST, LOOKAHEAD, MACROS, EMPTY_RULES] + printed
    entries += [{"text": t, "kind": "realistic"} for t in realistic]
    entries += [{"text": choice_as_grammar(c), "kind": "choice"} for c in CHOICES]
    entries += [{"text": t, "kind": "lark"} for t in LARK]
    rng = random.Random(20261)
    for text in realistic:
        entries += [{"text": t, "kind": "mutation"} for t in mutations(rng, text, 40)]
    for i in range(1500):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14)))
        # Half of them a root rule's body, which parses more often.
        entries.append({"text": f"root ::= {text}" if i % 2 else text, "kind": "random"})
    for _ in range(800):
        entries.append({"text": random_grammar(rng), "kind": "structured"})
    seen = set()
    return [e for e in entries if not (e["text"] in seen or seen.add(e["text"]))]


def compiles(text: str) -> bool:
    # xgrammar logs on stderr; keep the run quiet. Any exception is a refusal to
    # vLLM (`validate_xgrammar_grammar` catches them all).
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            xgrammar.Grammar.from_ebnf(text)
            return True
        except Exception:  # noqa: BLE001
            return False
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def main() -> int:
    import importlib.metadata

    assert importlib.metadata.version("xgrammar") == XGRAMMAR_VERSION
    records = [{**e, "compiles": compiles(e["text"]), "lark": grammar_is_likely_lark(e["text"])}
               for e in corpus()]
    header = {
        "generated_by": "scripts/gen_xgrammar_ebnf.py",
        "vllm_version": gf.VLLM_VERSION,
        "xgrammar_version": XGRAMMAR_VERSION,
    }
    gf.write_jsonl_gz(OUT, header, records)
    accepted = sum(r["compiles"] for r in records)
    print(f"{len(records)} grammars, {accepted} accepted", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
