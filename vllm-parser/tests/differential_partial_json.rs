//! Differential check of `json::loads_partial` (the port of `partial_json_parser`
//! behind `apertus`) against vLLM's `partial_json_loads(text, Allow.ALL)`: every
//! prefix of some tool-call documents, then random cuts and edits of them.
//!
//! Needs the reference environment, so it is ignored by default:
//! `cargo test -p vllm-parser --test differential_partial_json -- --ignored`
//! (`DIFF_ROUNDS=N` for more edited inputs).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use vllm_parser::json::{dumps, loads_partial};

const DOCUMENTS: &[&str] = &[
    r#"[{"get_weather": {"city": "Paris", "days": 3}}, {"get_time": {}}]"#,
    r#"[{"f": {"a": [1, 2.5e-3, -4, true, false, null], "b": {"c": "x\"y\\z\u00e9"}}}]"#,
    r#"{"f": {"a": 1}}"#,
    r#"[{"f": "str"}, {"g": null}, {"h": [{"x": -1.5E+10}]}]"#,
    r#""just a string""#,
    "[NaN, Infinity, -Infinity, 12, 0]",
    r#"  [ { "k" : "v" , "n" : 1 } ]  "#,
];

const EDITS: &[char] = &[
    '[', ']', '{', '}', '"', ',', ':', '-', '+', '.', 'e', 'E', '0', '1', '9', ' ', '\\', 'n', 't',
    'r', 'u', 'f', 'a', 'l', 's', 'N', 'I', 'y',
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A random prefix of a document with up to six characters deleted, inserted
/// or replaced.
fn edited(rng: &mut Rng) -> String {
    let document: Vec<char> = DOCUMENTS[rng.below(DOCUMENTS.len())].chars().collect();
    let mut text = document[..rng.below(document.len() + 1)].to_vec();
    for _ in 0..rng.below(7) {
        let edit = EDITS[rng.below(EDITS.len())];
        match rng.below(3) {
            0 if !text.is_empty() => {
                text.remove(rng.below(text.len()));
            }
            1 if !text.is_empty() => {
                let at = rng.below(text.len());
                text[at] = edit;
            }
            _ => text.insert(rng.below(text.len() + 1), edit),
        }
    }
    text.into_iter().collect()
}

#[test]
#[ignore = "needs the Python reference environment"]
fn truncated_json_completes_like_partial_json_parser() {
    let home = std::env::var("HOME").unwrap_or_default();
    let reference = std::env::var("VLLM_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(home).join(".cache/vllm-reference"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eval_partial_json.py");
    let mut python = Command::new(reference.join("venv/bin/python"))
        .arg(script)
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the reference environment's python");
    let rounds: usize = std::env::var("DIFF_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(30_000);
    let mut texts: Vec<String> = DOCUMENTS
        .iter()
        .flat_map(|d| {
            d.char_indices()
                .map(|(i, _)| d[..i].to_owned())
                .chain([d.to_string()])
        })
        .collect();
    let mut rng = Rng(0x5eed_0bad_cafe_f00d);
    texts.extend((0..rounds).map(|_| edited(&mut rng)));
    let mut stdin = python.stdin.take().unwrap();
    let input: String = texts
        .iter()
        .map(|text| format!("{}\n", json!({ "text": text })))
        .collect();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let answers = BufReader::new(python.stdout.take().unwrap()).lines();
    let mut differences = Vec::new();
    let mut parsed = 0;
    for (text, answer) in texts.iter().zip(answers) {
        let expected: Value = serde_json::from_str(&answer.unwrap()).unwrap();
        let expected = expected["json"].as_str();
        parsed += usize::from(expected.is_some());
        let ours = loads_partial(text).map(|value| dumps(&value));
        if ours.as_deref() != expected {
            differences.push(format!("{text:?}: ours {ours:?}, Python {expected:?}"));
        }
    }
    writer.join().unwrap().unwrap();
    python.wait().unwrap();
    eprintln!("{} inputs ({parsed} parsed by Python)", texts.len());
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        texts.len(),
        differences[..differences.len().min(20)].join("\n")
    );
}
