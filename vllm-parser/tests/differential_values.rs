//! Differential check of the value readers behind the tag-argument and MiniCPM5
//! parsers against Python itself: `ast.literal_eval` + `json.dumps`
//! (`tool::arg_tags::literal`) and `xml.etree.ElementTree.fromstring`
//! (`tool::minicpm5::xml`), on randomly assembled inputs.
//!
//! Needs the reference environment, so it is ignored by default:
//! `cargo test -p vllm-parser --test differential_values -- --ignored`
//! (`DIFF_ROUNDS=N` for more inputs). Namespaced XML is left out: it is a
//! documented gap of `xml`.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use vllm_parser::json::dumps;
use vllm_parser::tool::arg_tags::literal::{Literal, literal_eval};
use vllm_parser::tool::minicpm5::xml::{Element, parse};

const LITERAL_FRAGMENTS: &[&str] = &[
    "1", "-", "+", "2.5", "1e999", "'a'", "\"b\"", "True", "None", "False", "(", ")", "[", "]",
    "{", "}", ",", ":", " ", "\n", "x", "1j", "b'x'", "...", "set()", "#c\n", ";", "f'x'", "'\\n'",
    "0x1F", "1_000", "*", "'é'", "\t", "0", "-0.0", "nan", "'''t'''", "\\\n",
];

const XML_FRAGMENTS: &[&str] = &[
    "<function",
    " name=\"f\"",
    " name='g'",
    ">",
    "</function>",
    "<param",
    " name=\"a\"",
    ">",
    "</param>",
    "<![CDATA[",
    "]]>",
    "<!--",
    "-->",
    "<?p ",
    "?>",
    "<?xml ?>",
    "&lt;",
    "&amp;",
    "&#65;",
    "&#x1F600;",
    "&#0;",
    "&bad;",
    "&",
    "<",
    "/>",
    " ",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "text",
    "é",
    "\u{1}",
    "=",
    "\"",
    "'",
    "<b>",
    "</b>",
    "]]",
    "--",
    "<arguments>",
    "</arguments>",
    "<!DOCTYPE x>",
    "-",
    ".5",
    "\u{B7}",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn soup(&mut self, fragments: &[&str], max: usize) -> String {
        (0..1 + self.below(max))
            .map(|_| fragments[self.below(fragments.len())])
            .collect()
    }
}

fn ours_literal(text: &str) -> Value {
    match literal_eval(text) {
        Literal::Json(value) => json!({ "json": dumps(&value) }),
        Literal::Unwritable => json!({ "outcome": "unwritable" }),
        Literal::Malformed => json!({ "outcome": "malformed" }),
        Literal::Unhashable => json!({ "outcome": "unhashable" }),
    }
}

fn element(node: &Element) -> Value {
    json!({
        "tag": node.name,
        "attributes": node.attributes.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
        "text": node.text,
        "children": node.children.iter().map(element).collect::<Vec<_>>(),
    })
}

#[test]
#[ignore = "needs the Python reference environment"]
fn values_read_like_python() {
    let home = std::env::var("HOME").unwrap_or_default();
    let reference = std::env::var("VLLM_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(home).join(".cache/vllm-reference"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eval_values.py");
    let mut python = Command::new(reference.join("venv/bin/python"))
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference environment's python");
    let rounds: usize = std::env::var("DIFF_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut jobs = Vec::with_capacity(rounds * 2);
    for _ in 0..rounds {
        jobs.push(("literal", rng.soup(LITERAL_FRAGMENTS, 8)));
        let body = rng.soup(XML_FRAGMENTS, 12);
        let doc = match rng.below(3) {
            0 => body,
            1 => format!("<function name=\"f\">{body}</function>"),
            _ => format!("<function name=\"f\"><param name=\"a\">{body}</param></function>"),
        };
        jobs.push(("xml", doc));
    }
    let mut stdin = python.stdin.take().unwrap();
    let input: String = jobs
        .iter()
        .map(|(kind, text)| format!("{}\n", json!({ "kind": kind, "text": text })))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let answers = BufReader::new(python.stdout.take().unwrap()).lines();
    let mut differences = Vec::new();
    let mut valid = [0usize; 2];
    for ((kind, text), answer) in jobs.iter().zip(answers) {
        let expected: Value = serde_json::from_str(&answer.unwrap()).unwrap();
        if expected.is_object() && expected.get("outcome").is_none() {
            valid[usize::from(*kind == "xml")] += 1;
        }
        let ours = match *kind {
            "literal" => ours_literal(text),
            _ => parse(text).as_ref().map_or(Value::Null, element),
        };
        // Known gap (see `literal`): complex sums are read as malformed.
        let complex_sum = *kind == "literal"
            && text.contains('j')
            && ours == json!({ "outcome": "malformed" })
            && expected == json!({ "outcome": "unwritable" });
        if ours != expected && !complex_sum {
            differences.push(format!("{kind} {text:?}: ours {ours}, Python {expected}"));
        }
    }
    writer.join().unwrap().unwrap();
    python.wait().unwrap();
    eprintln!(
        "{rounds} literals ({} valid JSON), {rounds} XML blocks ({} well-formed)",
        valid[0], valid[1]
    );
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        jobs.len(),
        differences[..differences.len().min(30)].join("\n")
    );
}
